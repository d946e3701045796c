/* The start of a task: its records in the store (resume: the trials already run count, the best seeds the
 * search), and transfer learning from the records of other workloads of the same template, nearest
 * shapes first, as the cost model's first training data. */
#include "tune_job_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"
#include "tune_space.h"
#include "tune_task.h"
#include "th_alloc.h"

#define TUNE_MAX_SEEDS 8

/* Folds r (records come oldest first) into the best of its workload among b[0..*n), adding the workload when
 * there is room; returns its entry, or NULL. */
tune_wl_best *tune__best_fold(tune_wl_best *b, int *n, int cap, const store_record *r) {
  int i = 0;
  while (i < *n && strcmp(b[i].key, r->workload_key) != 0) i++;
  if (i == *n) {
    if (*n == cap) return NULL;
    memset(&b[i], 0, sizeof b[i]);
    snprintf(b[i].key, sizeof b[i].key, "%s", r->workload_key);
    b[i].cost = 1e18;
    (*n)++;
  }
  tune_wl_best *e = &b[i];
  if (r->error_class != 0) return e;
  int take;
  if (strcmp(r->tuner, STORE_TUNER_VERIFY) == 0)
    take = r->created_at > e->verify_at || (r->created_at == e->verify_at && r->cost_mean_s < e->cost);
  else
    take = e->verify_at == 0 && r->cost_mean_s < e->cost;
  if (take) {
    e->cost = r->cost_mean_s;
    if (strcmp(r->tuner, STORE_TUNER_VERIFY) == 0) e->verify_at = r->created_at;
    snprintf(e->config, sizeof e->config, "%s", r->config);
  }
  return e;
}

/* Orders b by shape distance, then cost. */
/* A valid trial of a task: the fastest time and the best GFLOPS (the same trial, except for a task with no
 * FLOPs, whose GFLOPS stay 0). */
void tune__note_valid(tune_task_progress *p, double gflops, double cost_s) {
  p->best_gflops = fmax(p->best_gflops, gflops);
  if (cost_s > 0 && (p->best_s == 0 || cost_s < p->best_s)) p->best_s = cost_s;
}

void tune__best_sort(tune_wl_best *b, int n) {
  for (int i = 1; i < n; i++) {
    int j = i;
    while (j > 0 && (b[j - 1].dist > b[j].dist || (b[j - 1].dist == b[j].dist && b[j - 1].cost > b[j].cost))) {
      tune_wl_best tmp = b[j];
      b[j] = b[j - 1];
      b[j - 1] = tmp;
      j--;
    }
  }
}

typedef struct tune_load_ctx {
  tune_session_t *s;
  tune_task *t;
  int verified; /* the task has verification records */
  tc_config *hist;
  double *hist_cost;
  int nhist, hist_cap;
  tune_wl_best best[TUNE_MAX_OTHERS]; /* other workloads: the record a build would apply */
  int nbest;
  char groups[64][512];
  int ngroups;
  float *row;
  th_status rc;
} tune_load_ctx;

float tune__shape_dist(const float *a, const float *b) {
  float d = 0;
  for (int i = 0; i < TUNE_SHAPE_FEATURES; i++) {
    if (isnan(a[i]) && isnan(b[i])) continue;
    float x = (isnan(a[i]) ? 0 : a[i]) - (isnan(b[i]) ? 0 : b[i]);
    d += x * x + (isnan(a[i]) != isnan(b[i]) ? 100.f : 0.f);
  }
  return d;
}

static int tune__load_cb(void *ctx, const store_record *r) {
  tune_load_ctx *c = ctx;
  tune_task *t = c->t;
  if (strcmp(r->workload_key, t->key) == 0) { /* own history: resume */
    if (strcmp(r->tuner, STORE_TUNER_VERIFY) == 0) { /* a re-timing, not a trial */
      c->verified = 1;
      return 0;
    }
    tc_config cfg;
    if (tune_config_from_text(&t->space, r->config, &cfg) != TH_OK) return 0;
    if (c->nhist == c->hist_cap) {
      int ncap = c->hist_cap ? c->hist_cap * 2 : 256;
      tc_config *nh = th_realloc(c->hist, sizeof *nh * (size_t)ncap);
      double *nc = nh ? th_realloc(c->hist_cost, sizeof *nc * (size_t)ncap) : NULL;
      if (nh) c->hist = nh;
      if (!nh || !nc) {
        c->rc = TH_ERR_NOMEM;
        return 1;
      }
      c->hist_cost = nc;
      c->hist_cap = ncap;
    }
    c->hist[c->nhist] = cfg;
    c->hist_cost[c->nhist++] = r->error_class == 0 ? r->cost_mean_s : 1e9;
    return 0;
  }
  if (!c->s->o.transfer) return 0;
  /* Another workload of the same template: a prior row for the model, and maybe a seed. */
  int g = 0;
  while (g < c->ngroups && strcmp(c->groups[g], r->workload_key) != 0) g++;
  if (g == c->ngroups && c->ngroups < 64) snprintf(c->groups[c->ngroups++], 512, "%s", r->workload_key);
  if (g >= 64) return 0;
  if (c->s->search && c->row) {
    float *row = c->row;
    int nk = tune_knob_feature_count(&t->space);
    tune_text_knob_features(&t->space, r->config, row);
    tune_shape_features(r->workload_key, row + nk);
    for (int i = 0; i < TC_IR_FEATURE_LEN; i++) row[nk + TUNE_SHAPE_FEATURES + i] = NAN;
    double score = r->error_class == 0 && r->cost_mean_s > 0 && r->cost_mean_s < 1e9 ? r->gflops : 0;
    tune_search_add_prior(c->s->search, row, score, g);
  }
  int was = c->nbest;
  tune_wl_best *e = tune__best_fold(c->best, &c->nbest, TUNE_MAX_OTHERS, r);
  if (e && c->nbest > was) {
    float sh[TUNE_SHAPE_FEATURES];
    tune_shape_features(r->workload_key, sh);
    e->dist = tune__shape_dist(sh, t->shape);
  }
  return 0;
}

th_status tune__task_start(tune_session_t *s) {
  tune__kept_clear(s); /* the previous task's libraries */
  if (s->cur >= s->ntasks) {
    s->stage = TUNE_STAGE_DONE;
    return TH_OK;
  }
  tune_task *t = &s->tasks[s->cur];
  tune_task_progress *p = &s->prog[s->cur];
  tune_search_free(s->search);
  s->search = NULL;
  th_status rc = store_workload_upsert(s->st, t->key, t->template_name, t->flops);
  if (rc != TH_OK) return tune__fail(s, rc, "store: %s%s", store_errmsg(s->st), NULL);
  tune_search_opts so;
  tune_search_opts_default(&so, s->o.tuner);
  so.seed = s->o.seed + (uint64_t)s->cur * 7919;
  so.budget = s->o.trials;
  so.early_stopping = s->o.early_stopping;
  tune_search_space ss = {.space = &t->space, .valid = tune_task_valid, .valid_ctx = t,
                          .extra = tune_task_features, .extra_ctx = t, .nextra = tune_task_feature_count()};
  rc = tune_search_new(&so, &ss, &s->search);
  if (rc != TH_OK) return tune__fail(s, rc, "cannot create the %s strategy%s", s->o.tuner, NULL);
  tune_load_ctx *c = th_calloc(1, sizeof *c);
  if (!c) return TH_ERR_NOMEM;
  c->s = s;
  c->t = t;
  c->row = th_malloc(sizeof(float) * (size_t)tune_search_feature_count(s->search));
  rc = c->row ? store_record_each(s->st, t->template_name, t->target_str, tune__load_cb, c) : TH_ERR_NOMEM;
  if (rc == TH_OK) rc = c->rc;
  if (rc == TH_OK && c->nhist > 0) {
    /* Resume: the stored trials count against the budget and feed the model. */
    int n = c->nhist;
    if ((int64_t)n > s->o.trials) n = (int)s->o.trials;
    rc = tune_search_history(s->search, c->hist, c->hist_cost, n);
    for (int i = 0; i < n; i++) {
      if (c->hist_cost[i] >= 1e9) p->errors++;
      else tune__note_valid(p, t->flops / c->hist_cost[i] * 1e-9, c->hist_cost[i]);
    }
  }
  if (rc == TH_OK && c->nbest > 0) {
    /* Seeds: the configs builds apply to the nearest workloads, when they are valid here. */
    tune__best_sort(c->best, c->nbest);
    tc_config seeds[TUNE_MAX_SEEDS];
    int ns = 0;
    for (int i = 0; i < c->nbest && ns < TUNE_MAX_SEEDS; i++)
      if (c->best[i].cost < 1e18 &&
          tune_config_from_text_nearest(&t->space, c->best[i].config, &seeds[ns], NULL) == TH_OK &&
          tune_task_valid(t, &t->space, &seeds[ns]))
        ns++;
    tune_search_seed(s->search, seeds, ns);
  }
  /* The fallback config is a trial too, right after the transfer seeds (skipped when already measured): the
   * tuned choice is then measured against it under the same conditions, not only against the search's
   * candidates. */
  if (rc == TH_OK) tune_search_seed(s->search, &t->fallback, 1);
  p->trials = tune_search_trials(s->search);
  int verified = c->verified;
  if (verified) {
    store_record vr;
    if (store_record_best(s->st, t->key, t->target_str, &vr) == TH_OK &&
        strcmp(vr.tuner, STORE_TUNER_VERIFY) == 0) {
      p->verified_gflops = vr.gflops;
      p->verified_s = vr.cost_mean_s;
    }
  }
  free(c->row);
  free(c->hist);
  free(c->hist_cost);
  free(c);
  if (rc != TH_OK) return tune__fail(s, rc, "loading records: %s%s", store_errmsg(s->st), NULL);
  /* Already at its budget (or stopped early) in an earlier run: skipped, unless that run ended before the
   * verification (the reference stages, then select finds the budget spent and verifies). */
  if (tune_search_done(s->search) && (verified || !tune__verifies(s))) {
    p->state = "skipped";
    s->cur++;
    return TH_OK;
  }
  p->state = "tuning";
  /* A device candidate is checked against the CPU reference by its backend (tc_backend_measure): no reference
   * stage. */
  s->stage = s->on_device ? TUNE_STAGE_SELECT : TUNE_STAGE_REF_BUILD;
  return TH_OK;
}
