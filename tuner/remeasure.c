/* The best stored config of each task, built again and timed alone (see remeasure.h). Uses the tuner's own
 * pieces: tune_task_build for the library, tune_measurer (fork worker, default options: the same repeat,
 * cache flush and output check as a tuning run) for the timing; for cuda, tune_measurer_run_cuda (NVRTC and
 * CUDA events in the worker, as a GPU tuning run). */
#include "remeasure.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "measure.h"
#include "ops.h"
#include "tc.h"
#include "tune_space.h"
#include "tune_task.h"

/* One task's CSV line, or its failure on stderr. */
static void tune__remeasure_line(FILE *out, const char *network, const char *key, const store_record *best,
                                 const tune_result *r) {
  if (r->error_class != 0) {
    fprintf(stderr, "remeasure: %s: %s\n", key, r->msg);
    return;
  }
  fprintf(out, "%s,\"%s\",%.9g,%.9g\n", network, key, best->cost_mean_s, r->cost_mean_s);
  fflush(out);
}

/* cuda: no library to build; the worker compiles and times each config on device 0. */
static th_status tune__remeasure_cuda(store_t *st, const char *network, int batch, FILE *out, char *err,
                                      size_t n) {
  tc_task *tasks = NULL;
  int nt = 0;
  if (tc_cuda_network_tasks(network, batch, &tasks, &nt) != TH_OK) {
    snprintf(err, n, "unknown network %s or batch %d", network, batch);
    return TH_ERR_INVALID;
  }
  tune_measure_opts mo;
  tune_measure_opts_default(&mo);
  tune_measurer_t *m = NULL;
  tc_cuda_device dev;
  tc_cuda_target ct;
  th_status rc = tune_measurer_new(&mo, &m);
  if (rc == TH_OK) rc = tune_measurer_cuda_device(m, &dev, err, n);
  if (rc == TH_OK) rc = tc_cuda_target_init(&ct, dev.arch);
  tune_task *t = rc == TH_OK ? malloc(sizeof *t) : NULL;
  if (rc == TH_OK && !t) rc = TH_ERR_NOMEM;
  for (int i = 0; rc == TH_OK && i < nt; i++) {
    tc_space sp;
    if (tc_cuda_space(&tasks[i].wl, &ct, &sp) != TH_OK || tc_space_size(&sp) < 2) continue;
    if (tune_task_init_cuda(t, &tasks[i].wl, &ct, tasks[i].count) != TH_OK) continue;
    store_record best;
    tc_config cfg;
    if (store_record_best(st, t->key, t->target_str, &best) != TH_OK ||
        tune_config_from_text(&t->space, best.config, &cfg) != TH_OK)
      continue;
    tune_result r;
    rc = tune_measurer_run_cuda(m, &t->wl, &cfg, ct.arch, NULL, &r);
    if (rc != TH_OK) break;
    tune__remeasure_line(out, network, t->key, &best, &r);
  }
  if (rc != TH_OK && err[0] == '\0') snprintf(err, n, "remeasure failed: %s", th_status_str(rc));
  free(t);
  tune_measurer_free(m);
  free(tasks);
  return rc;
}

th_status tune_remeasure(store_t *st, const char *framework, const char *network, int batch, FILE *out,
                         char *err, size_t n) {
  if (strcmp(framework, "cuda") == 0) return tune__remeasure_cuda(st, network, batch, out, err, n);
  if (strcmp(framework, "llvm") != 0) {
    snprintf(err, n, "unknown framework '%s'; valid frameworks: llvm, cuda", framework);
    return TH_ERR_INVALID;
  }
  tc_task *tasks = NULL;
  int nt = 0;
  th_status rc = tc_network_tasks(network, batch, &tasks, &nt);
  if (rc != TH_OK) {
    snprintf(err, n, "unknown network %s or batch %d", network, batch);
    return rc;
  }
  tc_target tgt;
  rc = tc_target_host(&tgt);
  tune_measure_opts mo;
  tune_measure_opts_default(&mo);
  tune_measurer_t *m = NULL;
  if (rc == TH_OK) rc = tune_measurer_new(&mo, &m);
  const char *tmp = getenv("TMPDIR");
  char dir[512];
  snprintf(dir, sizeof dir, "%s/tunehub-remeasure-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (rc == TH_OK && !mkdtemp(dir)) rc = TH_ERR_IO;
  tune_task *t = malloc(sizeof *t);
  if (!t) rc = TH_ERR_NOMEM;
  for (int i = 0; rc == TH_OK && i < nt; i++) {
    tc_space sp;
    if (tc_op_space(&tasks[i].wl, &tgt, &sp) != TH_OK || tc_space_size(&sp) < 2) continue;
    if (tune_task_init(t, &tasks[i].wl, &tgt, tasks[i].count) != TH_OK) continue;
    store_record best;
    if (store_record_best(st, t->key, t->target_str, &best) != TH_OK) continue;
    tc_config cfgs[2];
    cfgs[0] = t->fallback;
    if (tune_config_from_text(&t->space, best.config, &cfgs[1]) != TH_OK) continue;
    char so[2][TUNE_PATH_MAX], fn[2][TUNE_FN_MAX], msg[2][160], tag[32];
    int ec[2];
    snprintf(tag, sizeof tag, "r%d", i);
    rc = tune_task_build(t, cfgs, 2, 1, TUNE_BUILD_TIMEOUT_S, dir, tag, so, fn, ec, msg);
    if (rc != TH_OK) break;
    if (ec[0] || ec[1]) {
      fprintf(stderr, "remeasure: %s: does not build: %s\n", t->key, ec[0] ? msg[0] : msg[1]);
      continue;
    }
    tune_layout lay;
    tune_pack p0, p1;
    tune_result r;
    if (tune_task_layout(t, &lay) != TH_OK || tune_task_pack(t, &cfgs[0], &p0) != TH_OK ||
        tune_task_pack(t, &cfgs[1], &p1) != TH_OK ||
        tune_measurer_set_task(m, &lay, so[0], fn[0], &p0) != TH_OK) {
      fprintf(stderr, "remeasure: %s: reference: %s\n", t->key, tune_measurer_errmsg(m));
      continue;
    }
    rc = tune_measurer_run(m, so[1], fn[1], &p1, &r);
    if (rc != TH_OK) break;
    tune__remeasure_line(out, network, t->key, &best, &r);
  }
  if (rc != TH_OK && err[0] == '\0') snprintf(err, n, "remeasure failed: %s", th_status_str(rc));
  free(t);
  tune_measurer_free(m);
  char cmd[600];
  if (strchr(dir, '\'') == NULL) {
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "remeasure: cannot remove %s\n", dir);
  }
  free(tasks);
  return rc;
}
