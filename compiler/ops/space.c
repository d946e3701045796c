/* Mixed-radix mapping between flat indices and knob-value tuples, plus knob lookups. Kept free of any
 * template knowledge so the tuner can treat every space alike. */
#include "space.h"

#include <stdio.h>
#include <string.h>

int64_t tc_space_size(const tc_space *s) {
  int64_t n = 1;
  for (int i = 0; i < s->nknobs; i++) n *= s->knobs[i].nvalues;
  return n;
}

void tc_space_get(const tc_space *s, int64_t index, tc_config *out) {
  out->nknobs = s->nknobs;
  for (int i = 0; i < s->nknobs; i++) {
    out->idx[i] = (int)(index % s->knobs[i].nvalues);
    index /= s->knobs[i].nvalues;
  }
}

int64_t tc_space_index(const tc_space *s, const tc_config *c) {
  if (c->nknobs != s->nknobs) return -1;
  int64_t index = 0, mul = 1;
  for (int i = 0; i < s->nknobs; i++) {
    if (c->idx[i] < 0 || c->idx[i] >= s->knobs[i].nvalues) return -1;
    index += mul * c->idx[i];
    mul *= s->knobs[i].nvalues;
  }
  return index;
}

int tc_space_knob(const tc_space *s, const char *name) {
  for (int i = 0; i < s->nknobs; i++)
    if (strcmp(s->knobs[i].name, name) == 0) return i;
  return -1;
}

th_status tc_space_add(tc_space *s, const char *name, tc_knob_kind kind, int width, int nvalues,
                       const int *values) {
  if (s->nknobs >= TC_MAX_KNOBS || width < 1 || width > TC_KNOB_WIDTH || nvalues < 1 ||
      nvalues > TC_MAX_KNOB_VALUES || strlen(name) >= sizeof s->knobs[0].name)
    return TH_ERR_INVALID;
  tc_knob *k = &s->knobs[s->nknobs++];
  memset(k, 0, sizeof *k);
  snprintf(k->name, sizeof k->name, "%s", name);
  k->kind = kind;
  k->width = width;
  k->nvalues = nvalues;
  for (int v = 0; v < nvalues; v++)
    for (int j = 0; j < width; j++) k->values[v][j] = values[v * width + j];
  return TH_OK;
}

void tc_space_mark_added(tc_space *s) {
  if (s->nknobs > 0) s->knobs[s->nknobs - 1].added = 1;
}

void tc_space_mark_algo(tc_space *s) {
  if (s->nknobs > 0) s->knobs[s->nknobs - 1].algo = 1;
}

int tc_config_int(const tc_space *s, const tc_config *c, const char *name, int dflt) {
  int k = tc_space_knob(s, name);
  if (k < 0 || k >= c->nknobs) return dflt;
  return s->knobs[k].values[c->idx[k]][0];
}

th_status tc_config_str(const tc_space *s, const tc_config *c, char *out, size_t n) {
  static const char *const kinds[] = {"sp", "re", "an", "ot"};
  size_t used = 0;
  int w = snprintf(out, n, "[");
  if (w < 0 || (size_t)w >= n) return TH_ERR_TOO_LARGE;
  used = (size_t)w;
  for (int i = 0; i < s->nknobs && i < c->nknobs; i++) {
    const tc_knob *k = &s->knobs[i];
    w = snprintf(out + used, n - used, "%s[\"%s\",\"%s\",[", i ? "," : "", k->name, kinds[k->kind]);
    if (w < 0 || (size_t)w >= n - used) return TH_ERR_TOO_LARGE;
    used += (size_t)w;
    for (int j = 0; j < k->width; j++) {
      w = snprintf(out + used, n - used, "%s%d", j ? "," : "", k->values[c->idx[i]][j]);
      if (w < 0 || (size_t)w >= n - used) return TH_ERR_TOO_LARGE;
      used += (size_t)w;
    }
    w = snprintf(out + used, n - used, "]]");
    if (w < 0 || (size_t)w >= n - used) return TH_ERR_TOO_LARGE;
    used += (size_t)w;
  }
  w = snprintf(out + used, n - used, "]");
  if (w < 0 || (size_t)w >= n - used) return TH_ERR_TOO_LARGE;
  return TH_OK;
}
