/* Internal interface between build.c (graph -> kernels -> model.so) and bundle.c (manifest and .tar,
 * and loading a bundle back). Not part of the public API (tc.h). */
#ifndef TC_BUILD_INT_H
#define TC_BUILD_INT_H

#include <stddef.h>
#include <stdint.h>

#include "graph.h"
#include "passes/passes.h"
#include "space.h"
#include "target.h"
#include "tc.h"

/* One distinct kernel of a build and where its config came from. */
typedef struct tc__kernel {
  tc_workload wl;
  tc_config cfg;
  tc_space space;
  char key[192];
  char source[16]; /* "tuned", "transferred" or "fallback" */
  char fn[32];     /* symbol in model.so */
} tc__kernel;

typedef struct tc__bundle_in {
  const char *dir; /* holds model.so */
  const char *network;
  int batch;
  const tc_target *target;
  const tc_graph *graph;
  const tc__kernel *kernels;
  int nkernels;
  const tc_call *calls;
  int ncalls;
  const int *call_kernel;
  int measured;
  tc_run_stats stats;
  double build_seconds;
  int64_t workspace_bytes, weights_bytes;
  const char *params;
  size_t params_len;
  const char *graph_json;
  size_t graph_json_len;
} tc__bundle_in;

void tc__seterr(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Writes the bundle .tar (atomically) when out_tar != NULL and returns the manifest text when
 * manifest_json != NULL (malloc'd). */
th_status tc__bundle_write(const tc__bundle_in *bi, const char *out_tar, char **manifest_json, char *err,
                           size_t errlen);
/* dlopens a model .so, creates it from params, warms up and times `repeat` runs. With profile set, the
 * runs go through th_model_run_profiled and st->call_ms gets each call's median (st->ncalls of them). */
th_status tc__time_so(const char *so_path, const void *params, size_t params_len, int repeat, int profile,
                      tc_run_stats *st, char *err, size_t errlen);

#endif
