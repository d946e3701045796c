/* Tuning curves for the catalog: for each tunable task of a network, the best GFLOPS reached after each trial
 * stored for (workload, target), read back from the tuning records. Records are shared across networks and
 * jobs, so the curve is the whole history of that workload on that target, in the order it was measured. */
#include "tune_report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tc/backend.h"
#include "tc/ops.h"
#include "th_alloc.h"

/* The points of a curve: where the best improved, plus the last trial, thinned to at most about max points.
 * Writes a malloc'd array (NULL when empty). */
static th_status tune__curve(const double *g, int64_t n, int max, tune_curve_point **out, int64_t *npoints) {
  *out = NULL;
  *npoints = 0;
  double best = 0;
  int64_t kept = 0;
  for (int64_t i = 0; i < n; i++) {
    int improved = g[i] > best;
    if (improved) best = g[i];
    if ((improved || i == n - 1) && best > 0) kept++;
  }
  if (kept == 0) return TH_OK;
  tune_curve_point *pts = th_malloc((size_t)kept * sizeof *pts);
  if (!pts) return TH_ERR_NOMEM;
  /* keep every k-th improvement when there are too many, always the last point */
  int64_t every = kept > max ? (kept + max - 1) / max : 1;
  best = 0;
  int64_t seen = 0, m = 0;
  for (int64_t i = 0; i < n; i++) {
    int improved = g[i] > best;
    if (improved) best = g[i];
    if (!((improved || i == n - 1) && best > 0)) continue;
    if (seen++ % every == 0 || i == n - 1) pts[m++] = (tune_curve_point){i + 1, best};
  }
  *out = pts;
  *npoints = m;
  return TH_OK;
}

void tune_curve_free(tune_curve *c) {
  if (!c) return;
  for (int i = 0; i < c->ntasks; i++) free(c->tasks[i].points);
  free(c->tasks);
  c->tasks = NULL;
  c->ntasks = 0;
}

th_status tune_curve_get(store_t *st, const tc_backend_target *target, const char *target_str, const tc_netsrc *net,
                         int batch, int max_points, tune_curve *out, char *err, size_t n) {
  tc_task *tasks = NULL;
  int ntasks = 0;
  th_status rc = tc_network_tasks(target, net, batch, &tasks, &ntasks);
  if (rc != TH_OK) {
    snprintf(err, n, "cannot list the tasks of %s at batch %d: %s", net->name, batch, th_status_str(rc));
    return rc;
  }
  tune_curve c;
  memset(&c, 0, sizeof c);
  snprintf(c.network, sizeof c.network, "%s", net->name);
  c.batch = batch;
  snprintf(c.target, sizeof c.target, "%s", target_str);
  c.tasks = th_calloc((size_t)(ntasks > 0 ? ntasks : 1), sizeof *c.tasks);
  if (!c.tasks) {
    snprintf(err, n, "out of memory");
    rc = TH_ERR_NOMEM;
  }
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
    tune_curve_task *t = &c.tasks[c.ntasks++];
    t->task = i + 1;
    snprintf(t->workload, sizeof t->workload, "%s", tasks[i].key);
    snprintf(t->template_name, sizeof t->template_name, "%s", tc_kernel_name(tasks[i].wl.kernel));
    t->count = tasks[i].count;
    t->gflop = tasks[i].flops / 1e9;
    t->trials = cnt;
    for (int64_t k = 0; k < cnt; k++) {
      if (g[k] > t->best_gflops) t->best_gflops = g[k];
      if (g[k] > 0) t->valid++;
    }
    c.trials += cnt;
    rc = tune__curve(g, cnt, max_points, &t->points, &t->npoints);
    if (rc != TH_OK) snprintf(err, n, "out of memory");
    free(g);
  }
  free(tasks);
  if (rc != TH_OK) {
    tune_curve_free(&c);
    return rc;
  }
  *out = c;
  return TH_OK;
}
