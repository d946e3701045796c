/* Isolated re-measurement of stored best configs, for the scheduler benchmark's interference figure: for each
 * tunable task of a network, the best stored record's config is built again and timed by the same measurement
 * worker, on an otherwise idle machine, and compared with the time the tuning run recorded for it. */
#ifndef TUNE_REMEASURE_H
#define TUNE_REMEASURE_H

#include <stdio.h>

#include "store.h"
#include "th_status.h"

/* Writes one CSV line per task with a stored record: network,workload,recorded_s,isolated_s (no header).
 * framework is "llvm" (the host CPU) or "cuda" (device 0; "no CUDA device: ..." in err without one).
 * st is borrowed. A task whose config no longer builds or runs is skipped with a note on stderr. */
th_status tune_remeasure(store_t *st, const char *framework, const char *network, int batch, FILE *out,
                         char *err, size_t n);

#endif
