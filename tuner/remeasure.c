/* The best stored configs of each task, built again and timed alone (see remeasure.h). Uses the tuner's own
 * pieces: tune_task_build for the library (llvm) or the device image (cuda), and tune_measurer (fork worker,
 * default options: the same repeat, cache flush and output check as a tuning run) for the timing. */
#include "remeasure.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "measure.h"
#include "tc/backend.h"
#include "th_alloc.h"
#include "th_util.h"
#include "tune_net.h"
#include "tune_space.h"
#include "tune_task.h"

typedef struct tune__rm {
  int on_device; /* candidates timed by the backend in the worker */
  tc_backend_target tgt;
  tune_measurer_t *m;
  char dir[512];
} tune__rm;

static int tune__rm_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Times cfgs[0..k) (k <= 2) of task t in `rounds` rounds; round r starts with config r % k, so a drift of the
 * machine's speed hits both alike. med[j]: the median over rounds, or 0 when config j does not build or run.
 * TH_OK unless the worker or the store fails. */
static th_status tune__rm_time(tune__rm *x, const tune_task *t, const tc_config *cfgs, int k, int rounds, int i,
                               double *med) {
  /* the fallback config first: the reference whose outputs every candidate is checked against */
  tc_config all[3] = {t->fallback, cfgs[0], k > 1 ? cfgs[1] : cfgs[0]};
  char so[3][TUNE_PATH_MAX], fn[3][TUNE_FN_MAX], msg[3][160], tag[32];
  int ec[3];
  snprintf(tag, sizeof tag, "r%d", i);
  th_status rc = tune_task_build(t, all, k + 1, 1, TUNE_BUILD_TIMEOUT_S, x->dir, tag, so, fn, ec, msg);
  if (rc != TH_OK) return rc;
  for (int j = 0; j < k; j++) med[j] = 0;
  tune_layout lay;
  tune_pack ref;
  if (!x->on_device && (ec[0] || tune_task_layout(t, &lay) != TH_OK || tune_task_pack(t, &all[0], &ref) != TH_OK ||
                   tune_measurer_set_task(x->m, &lay, so[0], fn[0], &ref) != TH_OK)) {
    fprintf(stderr, "remeasure: %s: reference: %s\n", t->key, ec[0] ? msg[0] : tune_measurer_errmsg(x->m));
    return TH_OK;
  }
  double *cost = th_calloc((size_t)(k * rounds), sizeof *cost);
  if (!cost) return TH_ERR_NOMEM;
  int bad[2] = {ec[1] != 0, k > 1 && ec[2] != 0};
  for (int j = 0; j < k; j++)
    if (bad[j]) fprintf(stderr, "remeasure: %s: does not build: %s\n", t->key, msg[j + 1]);
  for (int r = 0; rc == TH_OK && r < rounds; r++) {
    for (int jj = 0; rc == TH_OK && jj < k; jj++) {
      int j = (jj + r) % k;
      if (bad[j]) continue;
      tune_result res;
      tune_pack p;
      if (x->on_device) {
        rc = tune_measurer_run_device(x->m, &x->tgt, &t->wl, &all[j + 1], so[j + 1][0] ? so[j + 1] : NULL, &res);
        if (rc == TH_ERR_RUNTIME) { /* no reference for the workload: the task is left out */
          fprintf(stderr, "remeasure: %s: reference: %s\n", t->key, res.msg);
          rc = TH_OK;
          bad[0] = bad[1] = 1;
          continue;
        }
      } else if (tune_task_pack(t, &all[j + 1], &p) != TH_OK) {
        res.error_class = TC_ERROR_CLASS_INSTANTIATION;
        snprintf(res.msg, sizeof res.msg, "no weight packing for this config");
      } else {
        rc = tune_measurer_run(x->m, so[j + 1], fn[j + 1], &p, &res);
      }
      if (rc == TH_OK && res.error_class != 0) {
        fprintf(stderr, "remeasure: %s: %s\n", t->key, res.msg);
        bad[j] = 1;
      }
      cost[j * rounds + r] = res.cost_mean_s;
    }
  }
  for (int j = 0; rc == TH_OK && j < k; j++) {
    if (bad[j]) continue;
    qsort(cost + j * rounds, (size_t)rounds, sizeof *cost, tune__rm_cmp);
    med[j] = rounds % 2 ? cost[j * rounds + rounds / 2]
                        : (cost[j * rounds + rounds / 2 - 1] + cost[j * rounds + rounds / 2]) / 2;
  }
  free(cost);
  for (int j = 0; j < k + 1; j++)
    if (so[j][0] && (j == 0 || strcmp(so[j], so[j - 1]) != 0)) unlink(so[j]);
  return rc;
}

/* The target whose records are timed, the measurer and the scratch folder for the framework; cuda
 * asks the worker for device 0. The configs run here, so the target must be one this machine runs:
 * a CPU with every feature the target's code uses (tc_target_missing, as the bundle's CPUID check),
 * or device 0's arch. */
static th_status tune__rm_open(tune__rm *x, const char *framework, const char *target, char *err,
                               size_t n) {
  memset(x, 0, sizeof *x);
  const tc_backend *b = tc_backend_find(framework, err, n);
  if (!b) return TH_ERR_INVALID;
  x->on_device = tc_backend_measure_kind(b) == TC_MEASURE_DEVICE;
  const char *named = target && *target && strcmp(target, "native") ? target : NULL;
  tc_backend_target want;
  char why[512] = "";
  th_status rc = named ? tc_backend_target_init(b, named, &want, err, n) : TH_OK;
  /* a device target is checked against the worker's device below: this process must not open the
   * driver (the worker is a fork of it) */
  if (rc == TH_OK && named && !x->on_device &&
      !tc_backend_target_runs_here(&want, why, sizeof why)) {
    snprintf(err, n, "cannot time the records of %s here: %s", want.str, why);
    rc = TH_ERR_UNSUPPORTED;
  }
  tune_measure_opts mo;
  tune_measure_opts_default(&mo);
  if (rc == TH_OK) rc = tune_measurer_new(&mo, &x->m);
  tc_device dev;
  memset(&dev, 0, sizeof dev);
  if (rc == TH_OK && x->on_device) rc = tune_measurer_device(x->m, b, &dev, err, n); /* worker's */
  if (rc == TH_OK) rc = tc_backend_target_init(b, x->on_device ? dev.arch : NULL, &x->tgt, err, n);
  if (rc == TH_OK && named && x->on_device && strcmp(want.str, x->tgt.str) != 0) {
    snprintf(err, n, "cannot time the records of %s here: device 0 (%s) is %s, not that arch",
             want.str, dev.name, x->tgt.str);
    rc = TH_ERR_UNSUPPORTED;
  }
  if (rc == TH_OK && named) x->tgt = want; /* a CPU this one runs: its records, built for it */
  if (rc == TH_OK) rc = th_mkdtemp("tunehub-remeasure", x->dir, sizeof x->dir);
  if (rc != TH_OK) x->dir[0] = 0;
  if (rc == TH_OK) tune_measurer_set_ref_dir(x->m, x->dir);
  return rc;
}

static void tune__rm_close(tune__rm *x) {
  tune_measurer_free(x->m);
  if (x->dir[0]) (void)th_rm_rf(x->dir);
}

/* Task i's workload as a tuning task (0 when it has nothing to tune on this framework). */
static int tune__rm_task(const tune__rm *x, const tc_task *task, tune_task *t) {
  tc_space sp;
  return tc_backend_space(&x->tgt, &task->wl, &sp) == TH_OK && tc_space_size(&sp) >= 2 &&
         tune_task_init(t, &task->wl, &x->tgt, task->count) == TH_OK;
}

th_status tune_remeasure(const tune_remeasure_opts *o, FILE *out, int *rows, char *err, size_t n) {
  if (rows) *rows = 0;
  if (!o || !o->st || !o->framework || !o->network || !out) return TH_ERR_INVALID;
  int rounds = o->rounds > 0 ? o->rounds : 1;
  tune__rm x;
  th_status rc = tune__rm_open(&x, o->framework, o->target, err, n);
  tc_task *tasks = NULL;
  int nt = 0;
  tune_net net;
  int have_net = 0;
  if (rc == TH_OK) rc = tune_net_resolve(o->st, o->network, NULL, &net, err, n); /* a zoo or uploaded network */
  have_net = rc == TH_OK;
  if (rc == TH_OK) {
    rc = tc_network_tasks(&x.tgt, &net.src, o->batch, &tasks, &nt);
    if (rc != TH_OK) snprintf(err, n, "cannot list the tasks of %s at batch %d", o->network, o->batch);
  }
  tune_task *t = rc == TH_OK ? th_malloc(sizeof *t) : NULL;
  if (rc == TH_OK && !t) rc = TH_ERR_NOMEM;
  for (int i = 0; rc == TH_OK && i < nt; i++) {
    if (!tune__rm_task(&x, &tasks[i], t)) continue;
    store_record best[2];
    tc_config cfgs[2];
    int k = o->against ? 2 : 1;
    if (store_record_best(o->st, t->key, t->target_str, &best[0]) != TH_OK ||
        (o->against && store_record_best(o->against, t->key, t->target_str, &best[1]) != TH_OK))
      continue;
    int parsed = 1;
    for (int j = 0; j < k; j++) parsed &= tune_config_from_text(&t->space, best[j].config, &cfgs[j]) == TH_OK;
    if (!parsed) continue;
    double med[2];
    rc = tune__rm_time(&x, t, cfgs, k, rounds, i, med);
    if (rc != TH_OK) break;
    int wrote = 0;
    if (o->against) {
      if ((wrote = med[0] > 0 && med[1] > 0))
        fprintf(out, "%s,\"%s\",%d,%.9g,%.9g,%d\n", o->network, t->key, t->weight, med[0], med[1],
                strcmp(best[0].config, best[1].config) == 0);
    } else if ((wrote = med[0] > 0)) {
      fprintf(out, "%s,\"%s\",%.9g,%.9g\n", o->network, t->key, best[0].cost_mean_s, med[0]);
    }
    fflush(out);
    if (wrote) {
      if (rows) (*rows)++;
      if (o->against)
        fprintf(stderr, "remeasure: [%d/%d] %s: %.4f ms against %.4f ms\n", i + 1, nt, t->key, med[0] * 1e3,
                med[1] * 1e3);
      else
        fprintf(stderr, "remeasure: [%d/%d] %s: %.4f ms (recorded %.4f ms)\n", i + 1, nt, t->key,
                med[0] * 1e3, best[0].cost_mean_s * 1e3);
    }
  }
  if (rc != TH_OK && err[0] == '\0') snprintf(err, n, "remeasure failed: %s", th_status_str(rc));
  free(t);
  free(tasks);
  if (have_net) tune_net_free(&net);
  tune__rm_close(&x);
  return rc;
}
