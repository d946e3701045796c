/* Isolated re-measurement of stored best configs, for the scheduler benchmark's interference figure: for each
 * tunable task of a network, the best stored record's config is built again and timed by the same measurement
 * worker, on an otherwise idle machine, and compared with the time the tuning run recorded for it. */
#ifndef TUNE_REMEASURE_H
#define TUNE_REMEASURE_H

#include <stdio.h>

#include "store.h"
#include "th_status.h"

typedef struct tune_remeasure_opts {
  store_t *st;            /* the records whose best configs are timed (borrowed) */
  store_t *against;       /* NULL, or a second store: its best configs are timed beside st's (borrowed) */
  const char *framework;  /* a backend name (tc_backend_find): llvm, the host CPU; cuda, device 0 ("no CUDA
                             device: ..." without one) */
  const char *target;     /* NULL or "native": this machine's; else a name tc_backend_target_init
                             knows (an x86-64 CPU name or level, sm_XX) whose records are timed. The
                             code runs here: a CPU target needing features this CPU lacks is
                             refused, as is a cuda arch other than device 0's */
  const char *network;    /* a zoo network or one uploaded to st */
  int batch;
  int rounds;             /* interleaved rounds; each config's time is the median over them (default 1) */
} tune_remeasure_opts;

/* One CSV line per task with stored records (no header):
 *   without against: network,workload,recorded_s,isolated_s (the time st recorded, and the one measured now);
 *   with against:    network,workload,weight,st_s,against_s,same (both stores' best configs, measured now in
 *                    alternating order; same = 1 when the two configs are one).
 * A task whose config no longer builds or runs is skipped with a note on stderr, and each task timed prints a
 * progress line there ("remeasure: [i/n] workload: times"). *rows (may be NULL) receives the lines written;
 * 0 means neither store holds a record of the network's tasks at this batch for the target.
 * TH_ERR_NOT_FOUND / TH_ERR_INVALID: a target name the backend does not know (err lists the valid
 * ones); TH_ERR_UNSUPPORTED: a target this machine cannot run (err names the features its CPU
 * lacks, or the device's arch); err has a message on every error. */
th_status tune_remeasure(const tune_remeasure_opts *o, FILE *out, int *rows, char *err, size_t n);

#endif
