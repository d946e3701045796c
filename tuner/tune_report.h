/* tune_report: read-only views of the tuning records for the catalog (server/ presents them; nothing here writes
 * to the store or builds a response). */
#ifndef TUNE_REPORT_H
#define TUNE_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"
#include "tc/backend.h"
#include "th_status.h"

/* One point of a curve: the best GFLOPS reached after `trial` trials. */
typedef struct tune_curve_point {
  int64_t trial;
  double best_gflops;
} tune_curve_point;

typedef struct tune_curve_task {
  int task;               /* 1-based index among the network's tasks (untunable ones count too) */
  char workload[192];     /* the workload key */
  char template_name[64];
  int count;              /* calls of the workload in the network */
  double gflop;           /* of one call */
  int64_t trials, valid;  /* stored trials, and the valid ones */
  double best_gflops;     /* 0 when none is valid */
  tune_curve_point *points; /* owned; npoints of them (none when no trial is valid) */
  int64_t npoints;
} tune_curve_task;

typedef struct tune_curve {
  char network[64];
  int batch;
  char target[256];       /* the records' target string */
  int64_t trials;         /* of every task */
  tune_curve_task *tasks; /* owned; ntasks of them, one per tunable task */
  int ntasks;
} tune_curve;

/* The tuning curves of network net (tune_net_resolve) at batch on a target into *out (the caller's struct; free its contents with
 * tune_curve_free): for each tunable task, the best GFLOPS against trials, from every record stored for
 * (workload, target). target is the compiler target (for the config spaces), target_str the records' target
 * string. A curve keeps the trials where the best improved and the last one, at most about max_points.
 * TH_ERR_NOT_FOUND / TH_ERR_INVALID for an unknown network or a bad batch; err gets a message. *out is written
 * only on success. */
th_status tune_curve_get(store_t *st, const tc_backend_target *target, const char *target_str, const tc_netsrc *net,
                         int batch, int max_points, tune_curve *out, char *err, size_t n);
/* Frees what tune_curve_get put in c (not c itself); accepts NULL. */
void tune_curve_free(tune_curve *c);

#endif
