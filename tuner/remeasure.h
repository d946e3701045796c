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
 * 0 means neither store holds a record of the network's tasks at this batch. */
th_status tune_remeasure(const tune_remeasure_opts *o, FILE *out, int *rows, char *err, size_t n);

#endif
