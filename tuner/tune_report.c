/* Tuning curves for the catalog: for each tunable task of a network, the best GFLOPS reached after each trial
 * stored for (workload, target), read back from the tuning records. Records are shared across networks and
 * jobs, so the curve is the whole history of that workload on that target, in the order it was measured. */
#include "tune_report.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend.h"
#include "ops.h"

/* A curve keeps the points where the best improved, plus the last trial, thinned to at most max points. */
static json_t *tune__curve(const double *g, int64_t n, int max) {
  json_t *pts = json_array();
  double best = 0;
  int64_t kept = 0;
  for (int64_t i = 0; i < n; i++) {
    int improved = g[i] > best;
    if (improved) best = g[i];
    if ((improved || i == n - 1) && best > 0) kept++;
  }
  /* keep every k-th improvement when there are too many, always the last point */
  int64_t every = kept > max ? (kept + max - 1) / max : 1;
  best = 0;
  int64_t seen = 0;
  for (int64_t i = 0; i < n; i++) {
    int improved = g[i] > best;
    if (improved) best = g[i];
    if (!((improved || i == n - 1) && best > 0)) continue;
    if (seen++ % every == 0 || i == n - 1)
      json_array_append_new(pts, json_pack("[I,f]", (json_int_t)(i + 1), best));
  }
  return pts;
}

th_status tune_curve_json(store_t *st, const tc_backend_target *target, const char *target_str, const char *network,
                          int batch, int max_points, char **json, char *err, size_t n) {
  tc_task *tasks = NULL;
  int ntasks = 0;
  *json = NULL;
  th_status rc = tc_network_tasks(target, network, batch, &tasks, &ntasks);
  if (rc != TH_OK) {
    snprintf(err, n, "cannot list the tasks of %s at batch %d: %s", network, batch, th_status_str(rc));
    return rc;
  }
  json_t *arr = json_array();
  int64_t total = 0;
  for (int i = 0; rc == TH_OK && i < ntasks; i++) {
    tc_space sp;
    if (tc_backend_space(target, &tasks[i].wl, &sp) != TH_OK || tc_space_size(&sp) < 2) continue;
    double *g = NULL;
    int64_t cnt = 0;
    rc = store_record_gflops(st, tasks[i].key, target_str, &g, &cnt);
    if (rc != TH_OK) {
      snprintf(err, n, "cannot read the records: %s", store_errmsg(st));
      break;
    }
    double best = 0;
    int64_t valid = 0;
    for (int64_t k = 0; k < cnt; k++) {
      if (g[k] > best) best = g[k];
      if (g[k] > 0) valid++;
    }
    total += cnt;
    json_t *o = json_pack("{s:i,s:s,s:s,s:i,s:f,s:I,s:I,s:f,s:o}", "task", i + 1, "workload", tasks[i].key,
                          "template", tc_kernel_name(tasks[i].wl.kernel), "count", tasks[i].count, "gflop",
                          tasks[i].flops / 1e9, "trials", (json_int_t)cnt, "valid", (json_int_t)valid,
                          "best_gflops", best, "curve", tune__curve(g, cnt, max_points));
    free(g);
    if (o) json_array_append_new(arr, o);
  }
  free(tasks);
  if (rc == TH_OK) {
    json_t *root = json_pack("{s:s,s:i,s:s,s:I,s:o}", "network", network, "batch", batch, "target", target_str,
                             "trials", (json_int_t)total, "tasks", arr);
    *json = root ? json_dumps(root, JSON_COMPACT) : NULL;
    json_decref(root);
    if (!*json) {
      snprintf(err, n, "out of memory");
      rc = TH_ERR_NOMEM;
    }
  } else {
    json_decref(arr);
  }
  return rc;
}
