/* Internals shared by the strategy files: the common tune_search struct and each strategy's vtable. */
#ifndef TUNE_SEARCH_INT_H
#define TUNE_SEARCH_INT_H

#include "search.h"

typedef struct tune_search_ops {
  const char *name;
  th_status (*init)(tune_search_t *s);
  /* Proposes up to n valid, unvisited configs (the common layer marks them visited). */
  int (*next_batch)(tune_search_t *s, tc_config *out, int n);
  /* Learns from measured configs; scores are 1/cost (0 for failures). */
  th_status (*update)(tune_search_t *s, const tc_config *cfgs, const double *scores, int n);
  th_status (*add_prior)(tune_search_t *s, const float *features, double score, int group);
  void (*free)(tune_search_t *s);
} tune_search_ops;

struct tune_search {
  const tune_search_ops *ops;
  tune_search_opts o;
  tune_search_space ss;
  int64_t size;
  tune_rng rng;
  tune_visited visited; /* proposed configs */
  int64_t trials;
  double best_cost;
  int64_t best_trial;
  tc_config best;
  int have_best;
  tc_config *seeds;
  int nseeds, seed_pos;
  int exhausted;
  char err[256];
  void *impl; /* strategy state */
};

/* 1 when c passes the space's validity callback. */
int tune__search_valid(const tune_search_t *s, const tc_config *c);
/* A random valid unvisited config (tries random draws, then scans from a random index). 0 when none. */
int tune__search_random_unvisited(tune_search_t *s, tc_config *out, const tune_visited *extra_skip);

extern const tune_search_ops tune__search_random_ops;
extern const tune_search_ops tune__search_grid_ops;
extern const tune_search_ops tune__search_ga_ops;
extern const tune_search_ops tune__search_xgb_ops;

#endif
