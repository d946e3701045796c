/* tune_report: read-only views of the tuning records for the catalog (server/ calls these; nothing here
 * writes to the store). */
#ifndef TUNE_REPORT_H
#define TUNE_REPORT_H

#include <stddef.h>

#include "store.h"
#include "backend.h"
#include "th_status.h"

/* The tuning curve of network at batch on a target, as JSON text (malloc'd; caller frees):
 * {"network","batch","target","trials","tasks":[{"task","workload","template","count","gflop","trials","valid",
 *  "best_gflops","curve":[[trial, best_gflops_so_far], ...]}]}, one entry per tunable task (tasks without records
 * have an empty curve). target is the compiler target (for the config spaces), target_str the records' target
 * string. A curve keeps the trials where the best improved and the last one, at most about max_points.
 * TH_ERR_NOT_FOUND / TH_ERR_INVALID for an unknown network or a bad batch; err gets a message. */
th_status tune_curve_json(store_t *st, const tc_backend_target *target, const char *target_str, const char *network,
                          int batch, int max_points, char **json, char *err, size_t n);

#endif
