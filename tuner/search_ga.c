/* The genetic strategy, after AutoTVM's GATuner: a population (pop 100) is measured generation by
 * generation; the next generation keeps the elites (3, never re-measured) and fills the rest with children of
 * roulette-selected parents (probability proportional to throughput), single-point crossover and per-knob
 * mutation (0.1). Children already measured are redrawn; when few unvisited configs remain, the rest are
 * taken at random from what is left, as GATuner enumerates them. */
#include <stdlib.h>
#include <string.h>

#include "search_int.h"
#include "th_alloc.h"

typedef struct tune_ga {
  tc_config *gen;    /* current generation: elites first, then children */
  double *score;     /* per member; < 0 while unmeasured */
  int n, cap;
  int propose_pos;   /* members before this index have been proposed (or are elites) */
} tune_ga;

static th_status tune__ga_init(tune_search_t *s) {
  tune_ga *g = th_calloc(1, sizeof *g);
  if (!g) return TH_ERR_NOMEM;
  if (s->o.pop_size < 2) s->o.pop_size = 2;
  if (s->o.elites < 0) s->o.elites = 0;
  if (s->o.elites >= s->o.pop_size) s->o.elites = s->o.pop_size - 1;
  g->cap = s->o.pop_size;
  g->gen = th_calloc((size_t)g->cap, sizeof *g->gen);
  g->score = th_calloc((size_t)g->cap, sizeof *g->score);
  if (!g->gen || !g->score) {
    free(g->gen);
    free(g->score);
    free(g);
    return TH_ERR_NOMEM;
  }
  s->impl = g;
  return TH_OK;
}

static void tune__ga_free(tune_search_t *s) {
  tune_ga *g = s->impl;
  if (!g) return;
  free(g->gen);
  free(g->score);
  free(g);
  s->impl = NULL;
}

static int tune__ga_pick(tune_search_t *s, const tune_ga *g, double total) {
  if (total <= 0) return (int)tune_rng_below(&s->rng, (uint64_t)g->n);
  double x = tune_rng_unit(&s->rng) * total;
  for (int i = 0; i < g->n; i++) {
    double sc = g->score[i] > 0 ? g->score[i] : 0;
    if (x < sc) return i;
    x -= sc;
  }
  return g->n - 1;
}

/* Builds the next generation from the measured one. */
static void tune__ga_breed(tune_search_t *s, tune_ga *g) {
  int pop = s->o.pop_size;
  if (g->n == 0) { /* first generation: random */
    tune_visited batch;
    tune_visited_init(&batch);
    while (g->n < pop && tune__search_random_unvisited(s, &g->gen[g->n], &batch)) {
      tune_visited_add(&batch, tc_space_index(s->ss.space, &g->gen[g->n]));
      g->score[g->n++] = -1;
    }
    tune_visited_free(&batch);
    g->propose_pos = 0;
    return;
  }
  /* Sort members by score, best first (insertion sort: pop is small). */
  for (int i = 1; i < g->n; i++) {
    tc_config c = g->gen[i];
    double sc = g->score[i];
    int j = i - 1;
    while (j >= 0 && g->score[j] < sc) {
      g->gen[j + 1] = g->gen[j];
      g->score[j + 1] = g->score[j];
      j--;
    }
    g->gen[j + 1] = c;
    g->score[j + 1] = sc;
  }
  double total = 0;
  for (int i = 0; i < g->n; i++) total += g->score[i] > 0 ? g->score[i] : 0;
  tc_config *parents = th_malloc(sizeof *parents * (size_t)g->n);
  double *pscore = th_malloc(sizeof *pscore * (size_t)g->n);
  if (!parents || !pscore) {
    free(parents);
    free(pscore);
    g->n = 0;
    return;
  }
  memcpy(parents, g->gen, sizeof *parents * (size_t)g->n);
  memcpy(pscore, g->score, sizeof *pscore * (size_t)g->n);
  tune_ga old = {.gen = parents, .score = pscore, .n = g->n};
  int elites = s->o.elites < g->n ? s->o.elites : g->n;
  g->n = elites; /* elites stay, with their scores, and are not proposed again */
  tune_visited batch;
  tune_visited_init(&batch);
  int attempts = 0, max_attempts = pop * 20;
  while (g->n < pop && attempts < max_attempts) {
    attempts++;
    int a = tune__ga_pick(s, &old, total), b = tune__ga_pick(s, &old, total);
    tc_config child;
    tune_space_crossover(s->ss.space, &s->rng, &old.gen[a], &old.gen[b], &child);
    tune_space_mutate(s->ss.space, &s->rng, s->o.mutation_prob, &child);
    int64_t idx = tc_space_index(s->ss.space, &child);
    if (tune_visited_has(&s->visited, idx) || tune_visited_has(&batch, idx)) continue;
    if (!tune__search_valid(s, &child)) continue;
    tune_visited_add(&batch, idx);
    g->gen[g->n] = child;
    g->score[g->n++] = -1;
  }
  /* Few unvisited configs reachable by breeding: take the rest at random. */
  while (g->n < pop && tune__search_random_unvisited(s, &g->gen[g->n], &batch)) {
    tune_visited_add(&batch, tc_space_index(s->ss.space, &g->gen[g->n]));
    g->score[g->n++] = -1;
  }
  tune_visited_free(&batch);
  free(parents);
  free(pscore);
  g->propose_pos = elites;
}

static int tune__ga_next(tune_search_t *s, tc_config *out, int n) {
  tune_ga *g = s->impl;
  int got = 0;
  int bred = 0;
  while (got < n) {
    if (g->propose_pos >= g->n) {
      if (bred++ > 1) break; /* nothing new could be bred */
      tune__ga_breed(s, g);
      continue;
    }
    tc_config *c = &g->gen[g->propose_pos++];
    if (tune_visited_has(&s->visited, tc_space_index(s->ss.space, c))) continue; /* seeded meanwhile */
    out[got++] = *c;
  }
  return got;
}

static th_status tune__ga_update(tune_search_t *s, const tc_config *cfgs, const double *scores, int n) {
  tune_ga *g = s->impl;
  for (int i = 0; i < n; i++) {
    int64_t idx = tc_space_index(s->ss.space, &cfgs[i]);
    for (int j = 0; j < g->n; j++)
      if (tc_space_index(s->ss.space, &g->gen[j]) == idx) {
        g->score[j] = scores[i];
        break;
      }
  }
  return TH_OK;
}

const tune_search_ops tune__search_ga_ops = {.name = "ga",
                                             .init = tune__ga_init,
                                             .next_batch = tune__ga_next,
                                             .update = tune__ga_update,
                                             .free = tune__ga_free};
