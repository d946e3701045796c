/* bundle_read: reading a bundle .tar back (tunehub run, tc_bundle_infer) without trusting it: every file it
 * knows is read into memory, checked against the manifest's size and sha256, and nothing is extracted or
 * loaded. Kept apart from bundle.c, which dlopens what this returns, so that the reader alone can be fuzzed
 * (tests/fuzz/fuzz_bundle.c). Thread-safe for distinct calls. */
#ifndef TC_BUNDLE_READ_H
#define TC_BUNDLE_READ_H

#include <stddef.h>

#include "th_status.h"

/* The files of a bundle, in the order of tc_bundle_files.data. */
enum tc_bundle_file {
  TC_BUNDLE_MANIFEST = 0, /* manifest.json */
  TC_BUNDLE_SO,           /* model.so */
  TC_BUNDLE_HEADER,       /* tunehub_model.h */
  TC_BUNDLE_PARAMS,       /* params.bin */
  TC_BUNDLE_GRAPH,        /* graph.json */
  TC_BUNDLE_EXAMPLE,      /* example.c */
  TC_BUNDLE_NFILES
};

typedef struct tc_bundle_files {
  char *data[TC_BUNDLE_NFILES]; /* each file's bytes and a NUL after them (malloc'd) */
  size_t len[TC_BUNDLE_NFILES];
  char *manifest; /* manifest.json re-serialised compact (JSON_COMPACT), malloc'd */
} tc_bundle_files;

/* Reads the bundle at tar_path into *out (the caller frees it with tc_bundle_files_free): all six files must
 * be present, once each, as regular files, and every file but the manifest must match the manifest's "files"
 * entry (size and sha256). Other entries are skipped. TH_ERR_IO (cannot open), TH_ERR_CORRUPT (truncated,
 * not a tar, a file missing, twice, larger than the tar itself or not matching its digest), TH_ERR_NOMEM;
 * err says which. *out is written only on success. */
th_status tc_bundle_read(const char *tar_path, tc_bundle_files *out, char *err, size_t errlen);
/* Frees what tc_bundle_read filled and zeroes *f; accepts NULL. */
void tc_bundle_files_free(tc_bundle_files *f);

#endif
