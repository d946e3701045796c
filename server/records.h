/* records: tuning records as JSON Lines (a header line {"tunehub_records":1, ..., "count":N}, then
 * one record a line), shared by `tunehub records export|import` (cli_records.c) and GET/POST
 * /records (records_http.c): the same filters, the same format and the same all-or-nothing checks
 * either way. */
#ifndef SRV_RECORDS_H
#define SRV_RECORDS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "store.h"
#include "th_buf.h"
#include "th_status.h"

/* The format version this tunehub writes and the newest it reads. */
#define RECORDS_FORMAT 1
/* The longest record line an import reads (a record's config is at most 1 KiB). */
#define RECORDS_LINE_MAX 65536

/* What an export keeps; every field may be NULL / 0 (no filter). */
typedef struct records_filter {
  const char *framework; /* build's name: "llvm", "cuda" */
  const char *target;    /* build's name: "sm_90", "x86-64-v3", "native" */
  const char *network;   /* with batch: the records of the network's tasks at that batch */
  int64_t batch;         /* 1..4096 with network, else 0 */
  int best;              /* 1: per workload and target the record a build applies */
} records_filter;

/* Checks f's names as build names them, before a store is read: TH_OK, or TH_ERR_INVALID with why
 * (the valid names) in err. */
th_status records_filter_check(const records_filter *f, char *err, size_t n);
/* Appends the header and then every record f selects in st to out, one line each (out's max bounds
 * it: TH_ERR_TOO_LARGE past it). *count (may be NULL) gets the records written. Errors, with why
 * in err: TH_ERR_INVALID (f's names), TH_ERR_NOT_FOUND (no such network: the valid ones named),
 * TH_ERR_TOO_LARGE, the store's errors. */
th_status records_export(store_t *st, const records_filter *f, th_buf *out, size_t *count,
                         char *err, size_t n);

/* An import's checked lines. */
typedef struct records_parsed {
  store_record *recs;
  size_t n;
  const char **targets; /* the distinct targets, pointing into recs */
  int ntargets;
  int64_t line; /* the line at fault, on TH_ERR_INVALID (0: the file is empty) */
} records_parsed;

/* Reads and checks every line of f before anything is stored: TH_OK with the records in *p (free
 * them with records_parsed_free), or TH_ERR_INVALID with p->line and why in err (not JSON, a field
 * missing or mistyped, an unknown template or target, a newer format version, a count that differs
 * from the header's), TH_ERR_IO, TH_ERR_NOMEM. */
th_status records_parse(FILE *f, records_parsed *p, char *err, size_t n);
void records_parsed_free(records_parsed *p);

#endif
