/* Config-space helpers for the search strategies: RNG, moves (random, neighbour, crossover, mutation), knob
 * features, parsing of recorded config text, and a visited set. Pure functions over tc_space, so every
 * strategy explores a space the same way and tests can run them on synthetic spaces. */
#include "tune_space.h"
#include "th_alloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t tune__splitmix(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void tune_rng_seed(tune_rng *r, uint64_t seed) {
  uint64_t x = seed;
  for (int i = 0; i < 4; i++) r->s[i] = tune__splitmix(&x);
}

static uint64_t tune__rotl(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

uint64_t tune_rng_next(tune_rng *r) {
  uint64_t *s = r->s;
  uint64_t result = tune__rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = tune__rotl(s[3], 45);
  return result;
}

uint64_t tune_rng_below(tune_rng *r, uint64_t n) {
  /* Rejection keeps it unbiased; the loop almost never repeats. */
  uint64_t lim = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do x = tune_rng_next(r);
  while (x >= lim);
  return x % n;
}

double tune_rng_unit(tune_rng *r) {
  return (double)(tune_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

void tune_space_random(const tc_space *s, tune_rng *r, tc_config *out) {
  out->nknobs = s->nknobs;
  for (int i = 0; i < s->nknobs; i++) out->idx[i] = (int)tune_rng_below(r, (uint64_t)s->knobs[i].nvalues);
}

void tune_space_neighbour(const tc_space *s, tune_rng *r, const tc_config *in, tc_config *out) {
  *out = *in;
  int movable[TC_MAX_KNOBS], n = 0;
  for (int i = 0; i < s->nknobs; i++)
    if (s->knobs[i].nvalues > 1) movable[n++] = i;
  if (n == 0) return;
  int k = movable[tune_rng_below(r, (uint64_t)n)];
  int v = (int)tune_rng_below(r, (uint64_t)s->knobs[k].nvalues - 1);
  out->idx[k] = v >= in->idx[k] ? v + 1 : v; /* any value but the current one */
}

void tune_space_crossover(const tc_space *s, tune_rng *r, const tc_config *a, const tc_config *b,
                          tc_config *out) {
  int point = s->nknobs > 0 ? (int)tune_rng_below(r, (uint64_t)s->nknobs + 1) : 0;
  out->nknobs = s->nknobs;
  for (int i = 0; i < s->nknobs; i++) out->idx[i] = i < point ? a->idx[i] : b->idx[i];
}

void tune_space_mutate(const tc_space *s, tune_rng *r, double prob, tc_config *c) {
  for (int i = 0; i < s->nknobs; i++)
    if (tune_rng_unit(r) < prob) c->idx[i] = (int)tune_rng_below(r, (uint64_t)s->knobs[i].nvalues);
}

int tune_knob_feature_count(const tc_space *s) {
  int n = 0;
  for (int i = 0; i < s->nknobs; i++) n += s->knobs[i].width;
  return n;
}

void tune_knob_features(const tc_space *s, const tc_config *c, float *out) {
  int n = 0;
  for (int i = 0; i < s->nknobs; i++) {
    const tc_knob *k = &s->knobs[i];
    for (int j = 0; j < k->width; j++) out[n++] = (float)log2(1.0 + fabs((double)k->values[c->idx[i]][j]));
  }
}

/* ---- parsing [["name","sp",[1,2]],...] ---- */
static const char *tune__skip(const char *p) {
  while (*p == ' ' || *p == '\t' || *p == '\n') p++;
  return p;
}

int tune_config_parse(const char *text, char names[][24], int values[][TC_KNOB_WIDTH], int *widths,
                      int max) {
  const char *p = tune__skip(text);
  if (*p++ != '[') return -1;
  int n = 0;
  p = tune__skip(p);
  if (*p == ']') return 0;
  for (;;) {
    if (n >= max) return -1;
    p = tune__skip(p);
    if (*p++ != '[') return -1;
    p = tune__skip(p);
    if (*p++ != '"') return -1;
    size_t len = 0;
    while (*p && *p != '"') {
      if (len + 1 >= 24) return -1;
      names[n][len++] = *p++;
    }
    names[n][len] = 0;
    if (*p++ != '"') return -1;
    p = tune__skip(p);
    if (*p++ != ',') return -1;
    p = tune__skip(p);
    if (*p++ != '"') return -1;
    while (*p && *p != '"') p++;
    if (*p++ != '"') return -1;
    p = tune__skip(p);
    if (*p++ != ',') return -1;
    p = tune__skip(p);
    if (*p++ != '[') return -1;
    int w = 0;
    for (;;) {
      p = tune__skip(p);
      if (*p == ']') {
        p++;
        break;
      }
      char *end;
      long v = strtol(p, &end, 10);
      if (end == p || w >= TC_KNOB_WIDTH) return -1;
      values[n][w++] = (int)v;
      p = tune__skip(end);
      if (*p == ',') p++;
    }
    widths[n] = w;
    n++;
    p = tune__skip(p);
    if (*p++ != ']') return -1;
    p = tune__skip(p);
    if (*p == ',') {
      p++;
      continue;
    }
    if (*p == ']') return n;
    return -1;
  }
}

th_status tune_config_from_text(const tc_space *s, const char *text, tc_config *out) {
  char names[TC_MAX_KNOBS][24];
  int values[TC_MAX_KNOBS][TC_KNOB_WIDTH], widths[TC_MAX_KNOBS];
  int n = tune_config_parse(text, names, values, widths, TC_MAX_KNOBS);
  if (n < 0) return TH_ERR_CORRUPT;
  tc_config c;
  c.nknobs = s->nknobs;
  for (int i = 0; i < s->nknobs; i++) {
    const tc_knob *k = &s->knobs[i];
    int found = -1, named = 0;
    for (int j = 0; j < n && found < 0; j++) {
      if (strcmp(names[j], k->name) != 0 || widths[j] != k->width) continue;
      named = 1;
      for (int v = 0; v < k->nvalues; v++)
        if (memcmp(k->values[v], values[j], sizeof(int) * (size_t)k->width) == 0) {
          found = v;
          break;
        }
      if (found < 0) return TH_ERR_NOT_FOUND;
    }
    if (!named && k->added) found = 0;
    if (found < 0) return TH_ERR_NOT_FOUND;
    c.idx[i] = found;
  }
  *out = c;
  return TH_OK;
}

th_status tune_config_from_text_nearest(const tc_space *s, const char *text, tc_config *out, int *exact) {
  char names[TC_MAX_KNOBS][24];
  int values[TC_MAX_KNOBS][TC_KNOB_WIDTH], widths[TC_MAX_KNOBS];
  int n = tune_config_parse(text, names, values, widths, TC_MAX_KNOBS);
  if (n < 0) return TH_ERR_CORRUPT;
  tc_config c;
  int all = 1;
  c.nknobs = s->nknobs;
  for (int i = 0; i < s->nknobs; i++) {
    const tc_knob *k = &s->knobs[i];
    int j = 0;
    while (j < n && (strcmp(names[j], k->name) != 0 || widths[j] != k->width)) j++;
    if (j == n && k->added) {
      c.idx[i] = 0;
      continue;
    }
    if (j == n) return TH_ERR_NOT_FOUND;
    int best = -1;
    double bd = 0;
    for (int v = 0; v < k->nvalues; v++) {
      double d = 0;
      for (int w = 0; w < k->width; w++)
        d += fabs(log2(1.0 + fabs((double)k->values[v][w])) - log2(1.0 + fabs((double)values[j][w]))) *
             (w == k->width - 1 ? 4.0 : 1.0);
      if (best < 0 || d < bd) {
        best = v;
        bd = d;
      }
    }
    if (bd > 0) all = 0;
    c.idx[i] = best;
  }
  *out = c;
  if (exact) *exact = all;
  return TH_OK;
}

/* ---- visited set ---- */
void tune_visited_init(tune_visited *v) {
  v->slots = NULL;
  v->cap = v->n = 0;
}

void tune_visited_free(tune_visited *v) {
  if (!v) return;
  free(v->slots);
  tune_visited_init(v);
}

static size_t tune__hash(int64_t x, size_t cap) {
  uint64_t z = (uint64_t)x * 0x9e3779b97f4a7c15ULL;
  return (size_t)(z >> 17) & (cap - 1);
}

static int tune__visited_grow(tune_visited *v) {
  size_t ncap = v->cap ? v->cap * 2 : 256;
  int64_t *ns = th_malloc(ncap * sizeof *ns);
  if (!ns) return -1;
  for (size_t i = 0; i < ncap; i++) ns[i] = -1;
  for (size_t i = 0; i < v->cap; i++) {
    if (v->slots[i] < 0) continue;
    size_t h = tune__hash(v->slots[i], ncap);
    while (ns[h] >= 0) h = (h + 1) & (ncap - 1);
    ns[h] = v->slots[i];
  }
  free(v->slots);
  v->slots = ns;
  v->cap = ncap;
  return 0;
}

int tune_visited_has(const tune_visited *v, int64_t idx) {
  if (v->cap == 0) return 0;
  size_t h = tune__hash(idx, v->cap);
  while (v->slots[h] >= 0) {
    if (v->slots[h] == idx) return 1;
    h = (h + 1) & (v->cap - 1);
  }
  return 0;
}

int tune_visited_add(tune_visited *v, int64_t idx) {
  if (tune_visited_has(v, idx)) return 1;
  if ((v->n + 1) * 2 > v->cap && tune__visited_grow(v) != 0) return -1;
  size_t h = tune__hash(idx, v->cap);
  while (v->slots[h] >= 0) h = (h + 1) & (v->cap - 1);
  v->slots[h] = idx;
  v->n++;
  return 0;
}
