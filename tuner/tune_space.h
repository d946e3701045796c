/* Search-space helpers the strategies share: a seeded RNG, random configs, SA neighbours, GA crossover and
 * mutation, a visited set keyed by flat index, and knob features. They sit on top of compiler/include/tc/space.h and
 * never look inside a template; a template's own validity test is passed in as a callback, so the same code
 * serves real conv2d spaces and the synthetic spaces of the tests. */
#ifndef TUNE_SPACE_H
#define TUNE_SPACE_H

#include <stddef.h>
#include <stdint.h>

#include "tc/space.h"
#include "th_status.h"

/* ---- RNG (splitmix64 seeded xoshiro256**): reproducible for a given seed on every platform ---- */
typedef struct tune_rng {
  uint64_t s[4];
} tune_rng;

void tune_rng_seed(tune_rng *r, uint64_t seed);
uint64_t tune_rng_next(tune_rng *r);
/* Uniform integer in [0, n); n must be > 0. */
uint64_t tune_rng_below(tune_rng *r, uint64_t n);
/* Uniform double in [0, 1). */
double tune_rng_unit(tune_rng *r);

/* Template validity beyond the declared knob lists (tc_backend_valid for a real task). NULL means every config of
 * the space is valid. Must be thread-safe for concurrent readers. */
typedef int (*tune_valid_fn)(void *ctx, const tc_space *s, const tc_config *c);

/* A uniformly random config of the space. */
void tune_space_random(const tc_space *s, tune_rng *r, tc_config *out);
/* One SA move: sets one random knob (with more than one value) to a different random value. */
void tune_space_neighbour(const tc_space *s, tune_rng *r, const tc_config *in, tc_config *out);
/* Single-point crossover: knobs [0, point) from a, the rest from b, with the point drawn uniformly. */
void tune_space_crossover(const tc_space *s, tune_rng *r, const tc_config *a, const tc_config *b,
                          tc_config *out);
/* Mutation: each knob is redrawn with probability prob. */
void tune_space_mutate(const tc_space *s, tune_rng *r, double prob, tc_config *c);

/* Knob features: for every knob value int, log2(1 + v); the count is tune_knob_feature_count(s). */
int tune_knob_feature_count(const tc_space *s);
void tune_knob_features(const tc_space *s, const tc_config *c, float *out);

/* Parses tc_config_str() text back into per-knob value tuples. names/values/widths are filled for up to
 * max knobs; returns the number of knobs, or -1 on malformed text. */
int tune_config_parse(const char *text, char names[][24], int values[][TC_KNOB_WIDTH], int *widths, int max);
/* Maps parsed knob values onto a config of space s (matching knob names and exact value tuples).
 * TH_ERR_NOT_FOUND when a knob or value of s has no match; a knob of s marked `added` (gained after the
 * record was stored) that the text lacks takes its first value. */
th_status tune_config_from_text(const tc_space *s, const char *text, tc_config *out);

/* Like tune_config_from_text, but for a knob whose recorded value is not in s (another shape's split), picks
 * the value closest in log scale, the innermost factor (the tile size) weighing most. A knob name missing
 * from the text still fails (TH_ERR_NOT_FOUND), unless the knob is marked `added` (its first value). *exact says whether every knob matched exactly. */
th_status tune_config_from_text_nearest(const tc_space *s, const char *text, tc_config *out, int *exact);

/* ---- visited set: an open-addressing hash set of flat indices ---- */
typedef struct tune_visited {
  int64_t *slots; /* owned; -1 = empty */
  size_t cap, n;
} tune_visited;

void tune_visited_init(tune_visited *v);
void tune_visited_free(tune_visited *v);
/* 1 when idx was present; 0 when it was added; -1 on OOM. */
int tune_visited_add(tune_visited *v, int64_t idx);
int tune_visited_has(const tune_visited *v, int64_t idx);

#endif
