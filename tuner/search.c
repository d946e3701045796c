/* The strategy-independent layer of the search (budget, early stopping, visited set, seeds, best tracking)
 * and the two model-free strategies, random and grid. */
#include "search_int.h"
#include "th_alloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tune_search_opts_default(tune_search_opts *o, const char *kind) {
  memset(o, 0, sizeof *o);
  snprintf(o->kind, sizeof o->kind, "%s", kind ? kind : "xgb");
  o->seed = 1;
  o->pop_size = 100;
  o->elites = 3;
  o->mutation_prob = 0.1;
  o->plan_size = 64;
  o->epsilon = 0.05;
  o->sa_iters = 500;
  o->sa_chains = 128;
  o->sa_early_stop = 50;
  o->num_rounds = 80;
  o->min_fit = 16;
  o->refit_every = 16;
}

int tune__search_valid(const tune_search_t *s, const tc_config *c) {
  return !s->ss.valid || s->ss.valid(s->ss.valid_ctx, s->ss.space, c);
}

int tune__search_random_unvisited(tune_search_t *s, tc_config *out, const tune_visited *extra_skip) {
  for (int attempt = 0; attempt < 64; attempt++) {
    tc_config c;
    tune_space_random(s->ss.space, &s->rng, &c);
    int64_t idx = tc_space_index(s->ss.space, &c);
    if (tune_visited_has(&s->visited, idx) || (extra_skip && tune_visited_has(extra_skip, idx))) continue;
    if (!tune__search_valid(s, &c)) continue;
    *out = c;
    return 1;
  }
  /* Dense region: scan the space from a random start so that the last unvisited configs are still found. */
  int64_t start = (int64_t)tune_rng_below(&s->rng, (uint64_t)s->size);
  for (int64_t k = 0; k < s->size; k++) {
    int64_t idx = (start + k) % s->size;
    if (tune_visited_has(&s->visited, idx) || (extra_skip && tune_visited_has(extra_skip, idx))) continue;
    tc_config c;
    tc_space_get(s->ss.space, idx, &c);
    if (!tune__search_valid(s, &c)) continue;
    *out = c;
    return 1;
  }
  return 0;
}

th_status tune_search_new(const tune_search_opts *o, const tune_search_space *ss, tune_search_t **out) {
  const tune_search_ops *ops = NULL;
  if (!o || !ss || !ss->space || ss->space->nknobs < 0) return TH_ERR_INVALID;
  if (strcmp(o->kind, "random") == 0)
    ops = &tune__search_random_ops;
  else if (strcmp(o->kind, "grid") == 0)
    ops = &tune__search_grid_ops;
  else if (strcmp(o->kind, "ga") == 0)
    ops = &tune__search_ga_ops;
  else if (strcmp(o->kind, "xgb") == 0)
    ops = &tune__search_xgb_ops;
  else
    return TH_ERR_INVALID;
  tune_search_t *s = th_calloc(1, sizeof *s);
  if (!s) return TH_ERR_NOMEM;
  s->ops = ops;
  s->o = *o;
  s->ss = *ss;
  s->size = tc_space_size(ss->space);
  tune_rng_seed(&s->rng, o->seed);
  tune_visited_init(&s->visited);
  s->best_cost = 1e9;
  s->best_trial = -1;
  th_status rc = ops->init ? ops->init(s) : TH_OK;
  if (rc != TH_OK) {
    tune_visited_free(&s->visited);
    free(s);
    return rc;
  }
  *out = s;
  return TH_OK;
}

void tune_search_free(tune_search_t *s) {
  if (!s) return;
  if (s->ops->free) s->ops->free(s);
  tune_visited_free(&s->visited);
  free(s->seeds);
  free(s);
}

const char *tune_search_kind(const tune_search_t *s) {
  return s->ops->name;
}

const char *tune_search_errmsg(const tune_search_t *s) {
  return s->err;
}

void tune_search_seed(tune_search_t *s, const tc_config *cfgs, int n) {
  if (n <= 0) return;
  tc_config *ns = th_realloc(s->seeds, sizeof *ns * (size_t)(s->nseeds + n));
  if (!ns) return;
  s->seeds = ns;
  for (int i = 0; i < n; i++) {
    int64_t idx = tc_space_index(s->ss.space, &cfgs[i]);
    if (idx < 0 || tune_visited_has(&s->visited, idx) || !tune__search_valid(s, &cfgs[i])) continue;
    int dup = 0;
    for (int j = s->seed_pos; j < s->nseeds && !dup; j++)
      dup = tc_space_index(s->ss.space, &s->seeds[j]) == idx;
    if (!dup) s->seeds[s->nseeds++] = cfgs[i];
  }
}

int tune_search_done(const tune_search_t *s) {
  int64_t budget = s->o.budget > 0 ? s->o.budget : s->size;
  if (s->trials >= budget || s->trials >= s->size) return 1;
  if (s->o.early_stopping > 0 && s->best_trial >= 0 && s->trials > s->best_trial + s->o.early_stopping)
    return 1;
  return s->exhausted;
}

int tune_search_next(tune_search_t *s, tc_config *out, int n) {
  if (tune_search_done(s)) return 0;
  int64_t budget = s->o.budget > 0 ? s->o.budget : s->size;
  /* Proposed but unmeasured configs are in the visited set and not yet in trials. */
  int64_t left = budget - (int64_t)s->visited.n;
  if (left <= 0) return 0;
  if (n > left) n = (int)left;
  int got = 0;
  while (got < n && s->seed_pos < s->nseeds) {
    tc_config *c = &s->seeds[s->seed_pos++];
    int64_t idx = tc_space_index(s->ss.space, c);
    if (tune_visited_add(&s->visited, idx) == 0) out[got++] = *c;
  }
  if (got < n) {
    int k = s->ops->next_batch(s, out + got, n - got);
    for (int i = 0; i < k; i++) {
      int64_t idx = tc_space_index(s->ss.space, &out[got + i]);
      if (tune_visited_add(&s->visited, idx) != 0) { /* a strategy bug or OOM: drop it rather than repeat */
        out[got + i] = out[got + k - 1];
        k--;
        i--;
      }
    }
    got += k;
  }
  if (got == 0) s->exhausted = 1;
  return got;
}

static void tune__search_note(tune_search_t *s, const tc_config *c, double cost) {
  if (cost > 0 && cost < 1e9 && cost < s->best_cost) {
    s->best_cost = cost;
    s->best_trial = s->trials;
    s->best = *c;
    s->have_best = 1;
  }
  s->trials++;
}

th_status tune_search_update(tune_search_t *s, const tc_config *cfgs, const double *costs, int n) {
  if (n <= 0) return TH_OK;
  double *scores = th_malloc(sizeof *scores * (size_t)n);
  if (!scores) return TH_ERR_NOMEM;
  for (int i = 0; i < n; i++) {
    tune__search_note(s, &cfgs[i], costs[i]);
    scores[i] = costs[i] > 0 && costs[i] < 1e9 ? 1.0 / costs[i] : 0.0;
  }
  th_status rc = s->ops->update ? s->ops->update(s, cfgs, scores, n) : TH_OK;
  free(scores);
  return rc;
}

th_status tune_search_history(tune_search_t *s, const tc_config *cfgs, const double *costs, int n) {
  for (int i = 0; i < n; i++) {
    int64_t idx = tc_space_index(s->ss.space, &cfgs[i]);
    if (idx < 0) return TH_ERR_INVALID;
    if (tune_visited_add(&s->visited, idx) < 0) return TH_ERR_NOMEM;
  }
  return tune_search_update(s, cfgs, costs, n);
}

int64_t tune_search_trials(const tune_search_t *s) {
  return s->trials;
}

double tune_search_best_cost(const tune_search_t *s) {
  return s->best_cost;
}

int64_t tune_search_best_trial(const tune_search_t *s) {
  return s->best_trial;
}

int tune_search_best_config(const tune_search_t *s, tc_config *out) {
  if (!s->have_best) return 0;
  *out = s->best;
  return 1;
}

int tune_search_feature_count(const tune_search_t *s) {
  return tune_knob_feature_count(s->ss.space) + (s->ss.extra ? s->ss.nextra : 0);
}

int tune_search_features(const tune_search_t *s, const tc_config *c, float *out) {
  int nk = tune_knob_feature_count(s->ss.space);
  tune_knob_features(s->ss.space, c, out);
  if (s->ss.extra && s->ss.nextra > 0) {
    if (s->ss.extra(s->ss.extra_ctx, s->ss.space, c, out + nk) != 0) {
      for (int i = 0; i < s->ss.nextra; i++) out[nk + i] = NAN;
      return -1;
    }
  }
  return 0;
}

th_status tune_search_add_prior(tune_search_t *s, const float *features, double score, int group) {
  return s->ops->add_prior ? s->ops->add_prior(s, features, score, group) : TH_OK;
}

/* ---- random ---- */
static int tune__random_next(tune_search_t *s, tc_config *out, int n) {
  int got = 0;
  tune_visited batch;
  tune_visited_init(&batch);
  while (got < n && tune__search_random_unvisited(s, &out[got], &batch)) {
    if (tune_visited_add(&batch, tc_space_index(s->ss.space, &out[got])) < 0) break;
    got++;
  }
  tune_visited_free(&batch);
  return got;
}

const tune_search_ops tune__search_random_ops = {
    .name = "random", .next_batch = tune__random_next};

/* ---- grid: index order ---- */
static int tune__grid_next(tune_search_t *s, tc_config *out, int n) {
  int64_t *pos = s->impl ? s->impl : NULL;
  if (!pos) {
    pos = th_calloc(1, sizeof *pos);
    if (!pos) return 0;
    s->impl = pos;
  }
  int got = 0;
  while (got < n && *pos < s->size) {
    int64_t idx = (*pos)++;
    if (tune_visited_has(&s->visited, idx)) continue;
    tc_space_get(s->ss.space, idx, &out[got]);
    if (tune__search_valid(s, &out[got])) got++;
  }
  return got;
}

static void tune__grid_free(tune_search_t *s) {
  free(s->impl);
  s->impl = NULL;
}

const tune_search_ops tune__search_grid_ops = {
    .name = "grid", .next_batch = tune__grid_next, .free = tune__grid_free};
