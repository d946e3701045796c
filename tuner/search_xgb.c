/* The model-based strategy, after AutoTVM's XGBTuner: an XGBoost cost model (C API, rank:pairwise, max_depth 3,
 * eta 0.3, gamma 1e-4, min_child_weight 1) over knob features plus the caller's extra features (shape and
 * loop-IR features for real templates), searched by simulated annealing. The SA chains (min(128, |space|))
 * persist between plans; the temperature cools linearly from 1 to 0, a move sets one knob to a new value, a
 * move is accepted with probability exp((new - old) / t), and the search stops after 50 steps without a change
 * to the top plan_size. Each plan is the top plan_size unvisited configs, its last 5% replaced by random ones.
 *
 * Departures from TVM, on purpose: the model is refit every refit_every (16) new samples instead of every 64,
 * which finds good configs in fewer trials on small budgets; the number of boosting rounds is fixed (80)
 * rather than early-stopped on a held-out top-k recall; transfer data enters as extra rank groups (one per
 * workload) of the same model instead of a separate base model. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <xgboost/c_api.h>

#include "search_int.h"
#include "th_alloc.h"

typedef struct tune_fcache { /* features per flat index */
  int64_t *keys;             /* -1 empty */
  float *rows;
  size_t cap, n;
} tune_fcache;

typedef struct tune_xgb {
  int nf;
  /* own samples */
  float *x;
  float *y;
  int n, cap;
  /* prior samples (transfer) */
  float *px;
  float *py;
  int *pg;
  int pn, pcap;
  BoosterHandle booster;
  int fitted_n; /* own samples at the last fit */
  int fits;
  /* plan */
  tc_config *plan;
  int plan_n, plan_pos;
  /* SA chains, persisted between plans */
  tc_config *chains;
  int nchains;
  tune_fcache cache;
} tune_xgb;

/* ---- feature cache ---- */
static size_t tune__fc_hash(int64_t k, size_t cap) {
  return (size_t)(((uint64_t)k * 0x9e3779b97f4a7c15ULL) >> 13) & (cap - 1);
}

static int tune__fc_grow(tune_fcache *c, int nf) {
  size_t ncap = c->cap ? c->cap * 2 : 1024;
  int64_t *nk = th_malloc(ncap * sizeof *nk);
  float *nr = th_malloc(ncap * (size_t)nf * sizeof *nr);
  if (!nk || !nr) {
    free(nk);
    free(nr);
    return -1;
  }
  for (size_t i = 0; i < ncap; i++) nk[i] = -1;
  for (size_t i = 0; i < c->cap; i++) {
    if (c->keys[i] < 0) continue;
    size_t h = tune__fc_hash(c->keys[i], ncap);
    while (nk[h] >= 0) h = (h + 1) & (ncap - 1);
    nk[h] = c->keys[i];
    memcpy(nr + h * (size_t)nf, c->rows + i * (size_t)nf, sizeof(float) * (size_t)nf);
  }
  free(c->keys);
  free(c->rows);
  c->keys = nk;
  c->rows = nr;
  c->cap = ncap;
  return 0;
}

/* Writes the features of c into out, computing them once per config. */
static int tune__xgb_features(tune_search_t *s, const tc_config *cfg, float *out) {
  tune_xgb *x = s->impl;
  tune_fcache *c = &x->cache;
  int64_t key = tc_space_index(s->ss.space, cfg);
  if (c->cap) {
    size_t h = tune__fc_hash(key, c->cap);
    while (c->keys[h] >= 0) {
      if (c->keys[h] == key) {
        memcpy(out, c->rows + h * (size_t)x->nf, sizeof(float) * (size_t)x->nf);
        return 0;
      }
      h = (h + 1) & (c->cap - 1);
    }
  }
  tune_search_features(s, cfg, out);
  /* Bound the cache for huge spaces: past 1M entries features are recomputed. */
  if (c->n >= ((size_t)1 << 20)) return 0;
  if ((c->n + 1) * 2 > c->cap && tune__fc_grow(c, x->nf) != 0) return 0;
  size_t h = tune__fc_hash(key, c->cap);
  while (c->keys[h] >= 0) h = (h + 1) & (c->cap - 1);
  c->keys[h] = key;
  memcpy(c->rows + h * (size_t)x->nf, out, sizeof(float) * (size_t)x->nf);
  c->n++;
  return 0;
}

static th_status tune__xgb_init(tune_search_t *s) {
  tune_xgb *x = th_calloc(1, sizeof *x);
  if (!x) return TH_ERR_NOMEM;
  x->nf = tune_search_feature_count(s);
  if (x->nf < 1) x->nf = 1;
  if (s->o.plan_size < 1) s->o.plan_size = 64;
  if (s->o.sa_chains < 1) s->o.sa_chains = 128;
  if (s->o.min_fit < 2) s->o.min_fit = 2;
  if (s->o.refit_every < 1) s->o.refit_every = 1;
  if (s->o.num_rounds < 1) s->o.num_rounds = 80;
  x->plan = th_calloc((size_t)s->o.plan_size, sizeof *x->plan);
  if (!x->plan) {
    free(x);
    return TH_ERR_NOMEM;
  }
  s->impl = x;
  return TH_OK;
}

static void tune__xgb_free(tune_search_t *s) {
  tune_xgb *x = s->impl;
  if (!x) return;
  if (x->booster) XGBoosterFree(x->booster);
  free(x->x);
  free(x->y);
  free(x->px);
  free(x->py);
  free(x->pg);
  free(x->plan);
  free(x->chains);
  free(x->cache.keys);
  free(x->cache.rows);
  free(x);
  s->impl = NULL;
}

static th_status tune__xgb_fail(tune_search_t *s, const char *what) {
  snprintf(s->err, sizeof s->err, "%s: %s", what, XGBGetLastError());
  return TH_ERR_RUNTIME;
}

/* Fits a fresh booster on prior groups (sorted by group id) followed by the own samples as one group. Labels
 * are throughput normalised to the group's best, so groups of very different speed rank alike. */
static th_status tune__xgb_fit(tune_search_t *s) {
  tune_xgb *x = s->impl;
  int rows = x->n + x->pn;
  if (rows < 2) return TH_OK;
  float *mat = th_malloc(sizeof *mat * (size_t)rows * (size_t)x->nf);
  float *lab = th_malloc(sizeof *lab * (size_t)rows);
  unsigned *groups = th_malloc(sizeof *groups * (size_t)(rows + 1));
  int *order = th_malloc(sizeof *order * (size_t)(x->pn + 1));
  th_status rc = TH_OK;
  DMatrixHandle d = NULL;
  BoosterHandle b = NULL;
  if (!mat || !lab || !groups || !order) rc = TH_ERR_NOMEM;
  int ng = 0, r = 0;
  if (rc == TH_OK) {
    for (int i = 0; i < x->pn; i++) order[i] = i;
    for (int i = 1; i < x->pn; i++) { /* stable insertion sort by group */
      int v = order[i], j = i - 1;
      while (j >= 0 && x->pg[order[j]] > x->pg[v]) {
        order[j + 1] = order[j];
        j--;
      }
      order[j + 1] = v;
    }
    for (int i = 0; i < x->pn;) {
      int j = i;
      float best = 0;
      while (j < x->pn && x->pg[order[j]] == x->pg[order[i]]) best = fmaxf(best, x->py[order[j++]]);
      for (int k = i; k < j; k++, r++) {
        memcpy(mat + (size_t)r * (size_t)x->nf, x->px + (size_t)order[k] * (size_t)x->nf,
               sizeof(float) * (size_t)x->nf);
        lab[r] = best > 0 ? x->py[order[k]] / best : 0;
      }
      groups[ng++] = (unsigned)(j - i);
      i = j;
    }
    float best = 0;
    for (int i = 0; i < x->n; i++) best = fmaxf(best, x->y[i]);
    for (int i = 0; i < x->n; i++, r++) {
      memcpy(mat + (size_t)r * (size_t)x->nf, x->x + (size_t)i * (size_t)x->nf, sizeof(float) * (size_t)x->nf);
      lab[r] = best > 0 ? x->y[i] / best : 0;
    }
    if (x->n > 0) groups[ng++] = (unsigned)x->n;
  }
  if (rc == TH_OK && XGDMatrixCreateFromMat(mat, (bst_ulong)rows, (bst_ulong)x->nf, NAN, &d) != 0)
    rc = tune__xgb_fail(s, "XGDMatrixCreateFromMat");
  if (rc == TH_OK && XGDMatrixSetFloatInfo(d, "label", lab, (bst_ulong)rows) != 0)
    rc = tune__xgb_fail(s, "XGDMatrixSetFloatInfo");
  if (rc == TH_OK && XGDMatrixSetUIntInfo(d, "group", groups, (bst_ulong)ng) != 0)
    rc = tune__xgb_fail(s, "XGDMatrixSetUIntInfo");
  if (rc == TH_OK && XGBoosterCreate(&d, 1, &b) != 0) rc = tune__xgb_fail(s, "XGBoosterCreate");
  if (rc == TH_OK) {
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)(s->o.seed & 0x7fffffff));
    const char *params[][2] = {{"objective", "rank:pairwise"}, {"max_depth", "3"}, {"eta", "0.3"},
                               {"gamma", "0.0001"},            {"min_child_weight", "1"},
                               {"lambda", "1"},                {"alpha", "0"},
                               {"nthread", "1"},               {"verbosity", "0"},
                               {"seed", seed}};
    for (size_t i = 0; i < sizeof params / sizeof params[0] && rc == TH_OK; i++)
      if (XGBoosterSetParam(b, params[i][0], params[i][1]) != 0) rc = tune__xgb_fail(s, "XGBoosterSetParam");
  }
  for (int it = 0; rc == TH_OK && it < s->o.num_rounds; it++)
    if (XGBoosterUpdateOneIter(b, it, d) != 0) rc = tune__xgb_fail(s, "XGBoosterUpdateOneIter");
  if (rc == TH_OK) {
    if (x->booster) XGBoosterFree(x->booster);
    x->booster = b;
    b = NULL;
    x->fitted_n = x->n;
    x->fits++;
    x->plan_n = x->plan_pos = 0; /* the old plan came from the old model */
  }
  if (b) XGBoosterFree(b);
  if (d) XGDMatrixFree(d);
  free(mat);
  free(lab);
  free(groups);
  free(order);
  return rc;
}

/* Predicted scores (higher is better) of n configs. */
static th_status tune__xgb_predict(tune_search_t *s, const tc_config *cfgs, int n, float *feat, double *out) {
  tune_xgb *x = s->impl;
  for (int i = 0; i < n; i++) tune__xgb_features(s, &cfgs[i], feat + (size_t)i * (size_t)x->nf);
  DMatrixHandle d = NULL;
  bst_ulong len = 0;
  const float *res = NULL;
  if (XGDMatrixCreateFromMat(feat, (bst_ulong)n, (bst_ulong)x->nf, NAN, &d) != 0)
    return tune__xgb_fail(s, "XGDMatrixCreateFromMat");
  int e = XGBoosterPredict(x->booster, d, 0, 0, 0, &len, &res);
  if (e == 0 && len == (bst_ulong)n)
    for (int i = 0; i < n; i++) out[i] = res[i];
  XGDMatrixFree(d);
  if (e != 0 || len != (bst_ulong)n) return tune__xgb_fail(s, "XGBoosterPredict");
  return TH_OK;
}

typedef struct tune_topk {
  int64_t *idx;
  double *score;
  int n, k;
} tune_topk;

/* Offers a candidate; returns 1 when the top-k changed. */
static int tune__topk_offer(tune_topk *t, int64_t idx, double score) {
  int min = -1;
  for (int i = 0; i < t->n; i++) {
    if (t->idx[i] == idx) return 0;
    if (min < 0 || t->score[i] < t->score[min]) min = i;
  }
  if (t->n < t->k) {
    t->idx[t->n] = idx;
    t->score[t->n++] = score;
    return 1;
  }
  if (score <= t->score[min]) return 0;
  t->idx[min] = idx;
  t->score[min] = score;
  return 1;
}

/* Simulated annealing over the model; fills the plan with the best unvisited configs it saw. */
static th_status tune__xgb_plan(tune_search_t *s) {
  tune_xgb *x = s->impl;
  const tc_space *sp = s->ss.space;
  int k = s->o.plan_size;
  int nchains = s->o.sa_chains;
  if ((int64_t)nchains > s->size) nchains = (int)s->size;
  th_status rc = TH_OK;
  if (x->nchains == 0) {
    x->chains = th_calloc((size_t)nchains, sizeof *x->chains);
    if (!x->chains) return TH_ERR_NOMEM;
    for (int i = 0; i < nchains; i++) {
      int tries = 0;
      do tune_space_random(sp, &s->rng, &x->chains[i]);
      while (!tune__search_valid(s, &x->chains[i]) && ++tries < 100);
    }
    x->nchains = nchains;
  }
  nchains = x->nchains;
  tc_config *prop = th_malloc(sizeof *prop * (size_t)nchains);
  double *cur = th_malloc(sizeof *cur * (size_t)nchains);
  double *nxt = th_malloc(sizeof *nxt * (size_t)nchains);
  float *feat = th_malloc(sizeof *feat * (size_t)nchains * (size_t)x->nf);
  tune_topk top = {th_malloc(sizeof(int64_t) * (size_t)k), th_malloc(sizeof(double) * (size_t)k), 0, k};
  if (!prop || !cur || !nxt || !feat || !top.idx || !top.score) rc = TH_ERR_NOMEM;
  if (rc == TH_OK) rc = tune__xgb_predict(s, x->chains, nchains, feat, cur);
  if (rc == TH_OK)
    for (int i = 0; i < nchains; i++) {
      int64_t idx = tc_space_index(sp, &x->chains[i]);
      if (!tune_visited_has(&s->visited, idx) && tune__search_valid(s, &x->chains[i]))
        tune__topk_offer(&top, idx, cur[i]);
    }
  int iters = s->o.sa_iters > 0 ? s->o.sa_iters : 500;
  int last_change = 0;
  for (int it = 0; rc == TH_OK && it < iters; it++) {
    double temp = 1.0 - (double)it / iters;
    for (int i = 0; i < nchains; i++) {
      int tries = 0;
      do tune_space_neighbour(sp, &s->rng, &x->chains[i], &prop[i]);
      while (!tune__search_valid(s, &prop[i]) && ++tries < 8);
      if (tries >= 8) prop[i] = x->chains[i];
    }
    rc = tune__xgb_predict(s, prop, nchains, feat, nxt);
    if (rc != TH_OK) break;
    int changed = 0;
    for (int i = 0; i < nchains; i++) {
      int64_t idx = tc_space_index(sp, &prop[i]);
      if (!tune_visited_has(&s->visited, idx)) changed |= tune__topk_offer(&top, idx, nxt[i]);
      double p = temp > 0 ? exp((nxt[i] - cur[i]) / temp) : 0;
      if (nxt[i] > cur[i] || tune_rng_unit(&s->rng) < p) {
        x->chains[i] = prop[i];
        cur[i] = nxt[i];
      }
    }
    if (changed) last_change = it;
    if (it - last_change > (s->o.sa_early_stop > 0 ? s->o.sa_early_stop : 50)) break;
  }
  if (rc == TH_OK) {
    /* Best first. */
    for (int i = 1; i < top.n; i++) {
      int64_t ix = top.idx[i];
      double sc = top.score[i];
      int j = i - 1;
      while (j >= 0 && top.score[j] < sc) {
        top.idx[j + 1] = top.idx[j];
        top.score[j + 1] = top.score[j];
        j--;
      }
      top.idx[j + 1] = ix;
      top.score[j + 1] = sc;
    }
    int neps = (int)(k * s->o.epsilon + 0.5);
    int ntop = k - neps;
    x->plan_n = 0;
    x->plan_pos = 0;
    for (int i = 0; i < top.n && x->plan_n < ntop; i++) tc_space_get(sp, top.idx[i], &x->plan[x->plan_n++]);
    tune_visited in_plan;
    tune_visited_init(&in_plan);
    for (int i = 0; i < x->plan_n; i++) tune_visited_add(&in_plan, tc_space_index(sp, &x->plan[i]));
    while (x->plan_n < k && tune__search_random_unvisited(s, &x->plan[x->plan_n], &in_plan))
      tune_visited_add(&in_plan, tc_space_index(sp, &x->plan[x->plan_n++]));
    tune_visited_free(&in_plan);
  }
  free(prop);
  free(cur);
  free(nxt);
  free(feat);
  free(top.idx);
  free(top.score);
  return rc;
}

static int tune__xgb_next(tune_search_t *s, tc_config *out, int n) {
  tune_xgb *x = s->impl;
  if (!x->booster && x->pn > 0 && tune__xgb_fit(s) != TH_OK) x->pn = 0; /* transfer model seeds plan 1 */
  int got = 0, replanned = 0;
  tune_visited batch;
  tune_visited_init(&batch);
  while (got < n) {
    if (!x->booster) { /* no model yet: random */
      if (!tune__search_random_unvisited(s, &out[got], &batch)) break;
      tune_visited_add(&batch, tc_space_index(s->ss.space, &out[got++]));
      continue;
    }
    if (x->plan_pos >= x->plan_n) {
      if (replanned++ || tune__xgb_plan(s) != TH_OK || x->plan_n == 0) {
        /* the model gave nothing new: fall back to random for the rest of this batch */
        while (got < n && tune__search_random_unvisited(s, &out[got], &batch))
          tune_visited_add(&batch, tc_space_index(s->ss.space, &out[got++]));
        break;
      }
    }
    tc_config *c = &x->plan[x->plan_pos++];
    int64_t idx = tc_space_index(s->ss.space, c);
    if (tune_visited_has(&s->visited, idx) || tune_visited_has(&batch, idx)) continue;
    tune_visited_add(&batch, idx);
    out[got++] = *c;
  }
  tune_visited_free(&batch);
  return got;
}

static th_status tune__xgb_update(tune_search_t *s, const tc_config *cfgs, const double *scores, int n) {
  tune_xgb *x = s->impl;
  if (x->n + n > x->cap) {
    int ncap = x->cap ? x->cap : 256;
    while (ncap < x->n + n) ncap *= 2;
    float *nx = th_realloc(x->x, sizeof *nx * (size_t)ncap * (size_t)x->nf);
    if (!nx) return TH_ERR_NOMEM;
    x->x = nx;
    float *ny = th_realloc(x->y, sizeof *ny * (size_t)ncap);
    if (!ny) return TH_ERR_NOMEM;
    x->y = ny;
    x->cap = ncap;
  }
  for (int i = 0; i < n; i++) {
    tune__xgb_features(s, &cfgs[i], x->x + (size_t)x->n * (size_t)x->nf);
    x->y[x->n++] = (float)scores[i];
  }
  if (x->n >= s->o.min_fit && x->n - x->fitted_n >= s->o.refit_every) return tune__xgb_fit(s);
  return TH_OK;
}

static th_status tune__xgb_add_prior(tune_search_t *s, const float *f, double score, int group) {
  tune_xgb *x = s->impl;
  if (x->pn == x->pcap) {
    int ncap = x->pcap ? x->pcap * 2 : 256;
    float *nx = th_realloc(x->px, sizeof *nx * (size_t)ncap * (size_t)x->nf);
    if (!nx) return TH_ERR_NOMEM;
    x->px = nx;
    float *ny = th_realloc(x->py, sizeof *ny * (size_t)ncap);
    if (!ny) return TH_ERR_NOMEM;
    x->py = ny;
    int *ng = th_realloc(x->pg, sizeof *ng * (size_t)ncap);
    if (!ng) return TH_ERR_NOMEM;
    x->pg = ng;
    x->pcap = ncap;
  }
  memcpy(x->px + (size_t)x->pn * (size_t)x->nf, f, sizeof(float) * (size_t)x->nf);
  x->py[x->pn] = (float)score;
  x->pg[x->pn++] = group;
  return TH_OK;
}

const tune_search_ops tune__search_xgb_ops = {.name = "xgb",
                                              .init = tune__xgb_init,
                                              .next_batch = tune__xgb_next,
                                              .update = tune__xgb_update,
                                              .add_prior = tune__xgb_add_prior,
                                              .free = tune__xgb_free};
