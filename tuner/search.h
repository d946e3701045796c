/* Search strategies behind one small vtable: a strategy proposes the next batch of configs (next_batch) and
 * learns from their measured costs (update). The shared part (this header) keeps the trial count, the best
 * cost, the trial budget and AutoTVM's early stopping (stop when trial > best_trial + early_stopping), the
 * visited set, and a queue of seed configs (from transfer) that are proposed before anything else.
 *
 * Strategies: "random", "grid" (index order), "ga" (AutoTVM's GATuner: roulette selection, single-point
 * crossover, mutation, elites), "xgb" (an XGBoost rank:pairwise cost model searched by simulated annealing
 * with chains that persist between plans, plan_size 64 and epsilon-greedy exploration).
 *
 * A tune_search_t belongs to one thread at a time. Every config it proposes is valid (by the space's
 * validity callback) and has not been proposed before. */
#ifndef TUNE_SEARCH_H
#define TUNE_SEARCH_H

#include <stddef.h>
#include <stdint.h>

#include "tc/space.h"
#include "th_status.h"
#include "tune_space.h"

/* Extra features for the cost model beyond the knob features (shape, loop IR). Writes exactly nextra floats
 * (NAN for a missing value); returns 0, or nonzero when the config cannot be featurised. */
typedef int (*tune_feature_fn)(void *ctx, const tc_space *s, const tc_config *c, float *out);

typedef struct tune_search_space {
  const tc_space *space; /* borrowed; must outlive the strategy */
  tune_valid_fn valid;   /* NULL: every config is valid */
  void *valid_ctx;
  tune_feature_fn extra; /* NULL: knob features only */
  void *extra_ctx;
  int nextra;
} tune_search_space;

typedef struct tune_search_opts {
  char kind[16];       /* "xgb", "ga", "random", "grid" */
  uint64_t seed;
  int64_t budget;      /* trial budget; <= 0: the whole space */
  int64_t early_stopping; /* <= 0: off */
  /* ga */
  int pop_size;        /* 100 */
  int elites;          /* 3 */
  double mutation_prob; /* 0.1 */
  /* xgb */
  int plan_size;       /* 64 */
  double epsilon;      /* 0.05: the last 5% of a plan is random */
  int sa_iters;        /* 500 */
  int sa_chains;       /* 128 (capped by the space size) */
  int sa_early_stop;   /* 50 steps without a top-k change */
  int num_rounds;      /* boosting rounds per fit; 80 */
  int min_fit;         /* first fit once this many own samples exist; 16 */
  int refit_every;     /* refit (and replan) after this many new samples; 16 */
} tune_search_opts;

void tune_search_opts_default(tune_search_opts *o, const char *kind);

typedef struct tune_search tune_search_t;

/* TH_ERR_INVALID for an unknown kind; TH_ERR_RUNTIME when XGBoost fails. ss is copied (space stays
 * borrowed). */
th_status tune_search_new(const tune_search_opts *o, const tune_search_space *ss, tune_search_t **out);
void tune_search_free(tune_search_t *s);
const char *tune_search_kind(const tune_search_t *s);
const char *tune_search_errmsg(const tune_search_t *s);

/* Queues configs to propose first (transfer seeds). Invalid or already visited ones are dropped. */
void tune_search_seed(tune_search_t *s, const tc_config *cfgs, int n);
/* Marks configs as already measured (resume): they count as trials and feed the model. */
th_status tune_search_history(tune_search_t *s, const tc_config *cfgs, const double *costs, int n);

/* Proposes up to n new configs into out; returns how many (0: budget reached, early stop, or space
 * exhausted). */
int tune_search_next(tune_search_t *s, tc_config *out, int n);
/* Feeds measured costs (seconds; >= 1e9 or <= 0 means failed) for configs returned by tune_search_next. */
th_status tune_search_update(tune_search_t *s, const tc_config *cfgs, const double *costs, int n);
/* 1 when the budget is used, early stopping fired or the space is exhausted. */
int tune_search_done(const tune_search_t *s);

int64_t tune_search_trials(const tune_search_t *s);
double tune_search_best_cost(const tune_search_t *s); /* 1e9 before any valid result */
int64_t tune_search_best_trial(const tune_search_t *s); /* -1 when none */
int tune_search_best_config(const tune_search_t *s, tc_config *out); /* 0 when none */

/* Features of a config as the cost model sees them (knob features then extras). */
int tune_search_feature_count(const tune_search_t *s);
int tune_search_features(const tune_search_t *s, const tc_config *c, float *out);
/* Cost-model prior from other workloads of the same template (xgb only; ignored by others): one row of
 * tune_search_feature_count() floats, its score (throughput; 0 for failures) and a group id (one per
 * workload; scores are only compared within a group). */
th_status tune_search_add_prior(tune_search_t *s, const float *features, double score, int group);

#endif
