/* The build's config lookup (tune_lookup_config, tune_build_lookup in tune_job.h): the record a build
 * applies to one workload, the fastest valid verified config of the latest round for its target, checked
 * against the template's space before it is used. */
#include "tune_job_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tc/ops.h"
#include "th_alloc.h"
#include "tune_space.h"
#include "tune_task.h"

typedef struct tune_lookup_ctx {
  const tc_workload *wl;
  const tc_space *space;
  const tc_backend_target *tgt;
  float shape[TUNE_SHAPE_FEATURES];
  const char *key;
  tune_wl_best best[TUNE_MAX_OTHERS]; /* the other workloads of the template */
  int nbest;
} tune_lookup_ctx;

static th_status tune__lookup_valid(const tc_workload *wl, const tc_backend_target *tgt, const tc_space *space,
                                    const tc_config *cfg) {
  return tc_backend_valid(tgt, wl, space, cfg, NULL, 0);
}

static int tune__lookup_cb(void *ctx, const store_record *r) {
  tune_lookup_ctx *c = ctx;
  if (strcmp(r->workload_key, c->key) == 0) return 0;
  int was = c->nbest;
  tune_wl_best *e = tune__best_fold(c->best, &c->nbest, TUNE_MAX_OTHERS, r);
  if (e && c->nbest > was) {
    float sh[TUNE_SHAPE_FEATURES];
    tune_shape_features(r->workload_key, sh);
    e->dist = tune__shape_dist(sh, c->shape);
  }
  return 0;
}

th_status tune_lookup_config(store_t *st, const char *target, const tc_workload *wl, const tc_space *space,
                             tc_config *cfg, char source[16]) {
  if (!st || !target || !wl || !space || !cfg || !source) return TH_ERR_INVALID;
  char key[512];
  th_status rc = tc_workload_key(wl, key, sizeof key);
  if (rc != TH_OK) return rc;
  /* Records of a target only ever serve that target: "cuda -arch=sm_XX" validates with the GPU templates
   * for that arch, "llvm -mcpu=NAME" with that CPU's, anything else (a CPU this LLVM does not know) with the
   * host CPU's, which finds no records of that target and so gives the fallback. */
  tc_backend_target tgt;
  rc = tc_backend_target_parse(target, &tgt);
  if (rc == TH_ERR_INVALID || rc == TH_ERR_NOT_FOUND)
    rc = tc_backend_target_init(tc_backend_default(), NULL, &tgt, NULL, 0);
  if (rc != TH_OK) return rc;
  store_record best;
  rc = store_record_best(st, key, target, &best);
  if (rc == TH_OK) {
    tc_config c;
    if (tune_config_from_text(space, best.config, &c) == TH_OK &&
        tune__lookup_valid(wl, &tgt, space, &c) == TH_OK) {
      *cfg = c;
      snprintf(source, 16, "tuned");
      return TH_OK;
    }
  } else if (rc != TH_ERR_NOT_FOUND) {
    return rc;
  }
  tune_lookup_ctx *c = th_calloc(1, sizeof *c);
  if (!c) return TH_ERR_NOMEM;
  c->wl = wl;
  c->space = space;
  c->tgt = &tgt;
  c->key = key;
  tune_shape_features(key, c->shape);
  rc = store_record_each(st, tc_kernel_name(wl->kernel), target, tune__lookup_cb, c);
  tc_config fb;
  th_status frc = tc_backend_fallback(&tgt, wl, space, &fb);
  /* the nearest workload (then the fastest) whose applied config is valid here and uses the algorithm the
   * fallback picks for this workload (a Winograd config that won on a 56x56 map loses to the direct path
   * on a 7x7 one with large weights, and the other knobs mean different things per algorithm) */
  int found = 0;
  tune__best_sort(c->best, c->nbest);
  for (int i = 0; rc == TH_OK && frc == TH_OK && !found && i < c->nbest; i++) {
    tc_config x;
    found = c->best[i].cost < 1e18 && tune_config_from_text_nearest(space, c->best[i].config, &x, NULL) == TH_OK &&
            tune__lookup_valid(wl, &tgt, space, &x) == TH_OK;
    for (int k = 0; found && k < space->nknobs; k++)
      if (space->knobs[k].algo && x.idx[k] != fb.idx[k]) found = 0;
    if (found) *cfg = x;
  }
  free(c);
  if (rc != TH_OK) return rc;
  if (found) {
    snprintf(source, 16, "transferred");
    return TH_OK;
  }
  if (frc == TH_OK) {
    *cfg = fb;
    snprintf(source, 16, "fallback");
  }
  return frc;
}

th_status tune_build_lookup(void *ctx, const tc_workload *wl, const char *workload_key, const tc_space *space,
                            tc_config *cfg, char source[16]) {
  const tune_build_lookup_ctx *c = ctx;
  (void)workload_key;
  tc_config out;
  char src[16];
  th_status rc = tune_lookup_config(c->st, c->target, wl, space, &out, src);
  if (rc != TH_OK) return rc;
  if (strcmp(src, "fallback") == 0) return TH_ERR_NOT_FOUND;
  *cfg = out;
  memcpy(source, src, 16);
  return TH_OK;
}
