/* tc_space: a template's tunable knobs, shared by the operator templates (which declare spaces and read
 * configs) and the tuner (which searches them). A knob has a small list of candidate values; a value is a
 * tuple of up to TC_KNOB_WIDTH ints, so a 4-way split [block, vthread, thread, inner] is one value. A config
 * is one value index per knob, and configs map one-to-one onto flat indices 0..size-1 (mixed radix, first
 * knob least significant). Validity beyond the declared lists is the template's business. */
#ifndef TC_SPACE_H
#define TC_SPACE_H

#include <stddef.h>
#include <stdint.h>

#include "th_status.h"

#define TC_MAX_KNOBS 10
#define TC_MAX_KNOB_VALUES 64
#define TC_KNOB_WIDTH 4

typedef enum tc_knob_kind {
  TC_KNOB_SPLIT = 0, /* "sp": factors of a loop extent */
  TC_KNOB_REORDER,   /* "re" */
  TC_KNOB_ANNOTATE,  /* "an": unroll/vectorise choices */
  TC_KNOB_OTHER      /* "ot" */
} tc_knob_kind;

typedef struct tc_knob {
  char name[24];
  tc_knob_kind kind;
  int width;   /* ints per value, 1..TC_KNOB_WIDTH */
  int nvalues; /* 1..TC_MAX_KNOB_VALUES */
  int values[TC_MAX_KNOB_VALUES][TC_KNOB_WIDTH];
  int added;   /* 1: the template gained this knob after records were stored; its first value is the
                  schedule from before, so a stored config that lacks the knob means that value */
  int algo;    /* 1: the knob picks the algorithm (e.g. conv2d's winograd); the other knobs' meaning
                  depends on it, so a config moved to another workload keeps that workload's choice */
} tc_knob;

typedef struct tc_space {
  int nknobs;
  tc_knob knobs[TC_MAX_KNOBS];
} tc_space;

typedef struct tc_config {
  int nknobs;
  int idx[TC_MAX_KNOBS]; /* value index per knob */
} tc_config;

/* Number of configs (product of the knob sizes). */
int64_t tc_space_size(const tc_space *s);
/* Flat index -> config. index must be in [0, size). */
void tc_space_get(const tc_space *s, int64_t index, tc_config *out);
/* Config -> flat index, or -1 if any knob index is out of range. */
int64_t tc_space_index(const tc_space *s, const tc_config *c);
/* The knob's position by name, or -1. */
int tc_space_knob(const tc_space *s, const char *name);
/* Appends a knob; TH_ERR_INVALID when full or malformed. */
th_status tc_space_add(tc_space *s, const char *name, tc_knob_kind kind, int width, int nvalues,
                       const int *values /* nvalues*width ints */);
/* Marks the last knob added as one a template gained later (tc_knob.added). */
void tc_space_mark_added(tc_space *s);
/* Marks the last knob added as an algorithm choice (tc_knob.algo). */
void tc_space_mark_algo(tc_space *s);
/* The first int of the chosen value of knob `name`, or dflt if the space has no such knob. */
int tc_config_int(const tc_space *s, const tc_config *c, const char *name, int dflt);
/* JSON-ish text "[[\"tile_oc\",\"sp\",[4,16]],...]" of a config, for records and manifests. */
th_status tc_config_str(const tc_space *s, const tc_config *c, char *out, size_t n);

#endif
