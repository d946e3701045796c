/* The ONNX importer's shared services, used by every converter and pattern: its errors (the first
 * fatal one kept, unsupported nodes listed rather than fatal), the value table (each name in the
 * file to a constant, a graph node or nothing yet; lookups, inputs and outputs of a node, binding
 * to graph nodes), and the graph parameters made from initializers (shared between nodes that read
 * the same weight in the same form). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_int.h"

/* ---- errors
 * ------------------------------------------------------------------------------------------ */

const char *tc__ox_s(const char *s) {
  return s ? s : "";
}

const char *tc__ox_nname(const Onnx__NodeProto *n) {
  if (n->name && n->name[0]) return n->name;
  if (n->n_output > 0 && n->output[0] && n->output[0][0]) return n->output[0];
  return "?";
}

static void tc__ox_vfail(tc__ox *x, const char *prefix, const char *fmt, va_list ap) {
  if (x->failed) return;
  x->failed = 1;
  if (!x->err || x->errlen == 0) return;
  size_t k = (size_t)snprintf(x->err, x->errlen, "%s", prefix);
  if (k < x->errlen) vsnprintf(x->err + k, x->errlen - k, fmt, ap);
}

th_status tc__ox_fail(tc__ox *x, th_status rc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tc__ox_vfail(x, "", fmt, ap);
  va_end(ap);
  return rc;
}

th_status tc__ox_nfail(tc__ox *x, const Onnx__NodeProto *n, th_status rc, const char *fmt, ...) {
  char prefix[192];
  snprintf(prefix, sizeof prefix, "node '%.100s' (%.48s): ", tc__ox_nname(n), tc__ox_s(n->op_type));
  va_list ap;
  va_start(ap, fmt);
  tc__ox_vfail(x, prefix, fmt, ap);
  va_end(ap);
  return rc;
}

void tc__ox_poison(tc__ox *x, const Onnx__NodeProto *n) {
  for (size_t k = 0; k < n->n_output; k++) {
    tc__oxv *v = tc__ox_out(x, n, (int)k);
    if (v) v->kind = TC__OX_BAD;
  }
}

th_status tc__ox_unsupported(tc__ox *x, const Onnx__NodeProto *n, const char *fmt, ...) {
  if (x->nunsup == x->unsup_cap) {
    int cap = x->unsup_cap ? x->unsup_cap * 2 : 16;
    tc__ox_unsup *u = realloc(x->unsup, (size_t)cap * sizeof *u);
    if (!u) return tc__ox_fail(x, TH_ERR_NOMEM, "out of memory");
    x->unsup = u;
    x->unsup_cap = cap;
  }
  tc__ox_unsup *u = &x->unsup[x->nunsup++];
  u->node = n;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(u->why, sizeof u->why, fmt, ap);
  va_end(ap);
  tc__ox_poison(x, n);
  return TH_OK;
}

/* ---- values
 * ------------------------------------------------------------------------------------------ */

uint32_t tc__ox_hash(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
  return h;
}

tc__oxv *tc__ox_find(tc__ox *x, const char *s) {
  if (!s || !s[0] || !x->slots) return NULL;
  for (uint32_t h = tc__ox_hash(s) & (x->nslots - 1);; h = (h + 1) & (x->nslots - 1)) {
    int i = x->slots[h];
    if (i < 0) return NULL;
    if (strcmp(x->vals[i].name, s) == 0) return &x->vals[i];
  }
}

/* Adds a value named s; -1 when the name is taken (the caller decides whether that is an error). */
int tc__ox_add(tc__ox *x, const char *s) {
  uint32_t h = tc__ox_hash(s) & (x->nslots - 1);
  for (; x->slots[h] >= 0; h = (h + 1) & (x->nslots - 1))
    if (strcmp(x->vals[x->slots[h]].name, s) == 0) return -1;
  int i = x->nvals++;
  tc__oxv *v = &x->vals[i];
  memset(v, 0, sizeof *v);
  v->name = s;
  v->producer = v->init = -1;
  v->node = -1;
  v->c.src = i;
  v->param = -1;
  x->slots[h] = i;
  return i;
}

tc__oxv *tc__ox_in(tc__ox *x, const Onnx__NodeProto *n, int k) {
  if (k < 0 || (size_t)k >= n->n_input) return NULL;
  return tc__ox_find(x, n->input[k]);
}

tc__oxv *tc__ox_out(tc__ox *x, const Onnx__NodeProto *n, int k) {
  if (k < 0 || (size_t)k >= n->n_output) return NULL;
  tc__oxv *v = tc__ox_find(x, n->output[k]);
  return v && v->producer >= 0 && x->gp->node[v->producer] == n ? v : NULL;
}

int tc__ox_sole_consumer(tc__ox *x, const tc__oxv *v) {
  if (!v || v->is_output || v->ncons != 1 || v->uses != 1) return -1;
  return x->cons[v->cons0];
}

th_status tc__ox_bind_node(tc__ox *x, const Onnx__NodeProto *n, tc__oxv *v, int id) {
  if (id < 0) {
    const char *e = tc_graph_error(x->g);
    return tc__ox_nfail(x, n, strstr(e, "out of memory") ? TH_ERR_NOMEM : TH_ERR_INVALID, "%s",
                        e[0] ? e : "the graph refused it");
  }
  int64_t numel = tc_tensor_numel(&x->g->nodes[id].out); /* fits: every input is within the limit */
  if (numel > TC_ONNX_MAX_ELEMENTS)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "the result has %lld elements (the limit is %lld)",
                        (long long)numel, (long long)TC_ONNX_MAX_ELEMENTS);
  if (v) {
    v->kind = TC__OX_NODE;
    v->node = id;
  }
  return TH_OK;
}

th_status tc__ox_set_node(tc__ox *x, const Onnx__NodeProto *n, int k, int id) {
  return tc__ox_bind_node(x, n, tc__ox_out(x, n, k), id);
}

int tc__ox_dims(const tc__ox *x, const tc__oxv *v, int64_t *dims) {
  if (v->kind == TC__OX_CONST) {
    for (int d = 0; d < v->c.ndim; d++) dims[d] = v->c.dims[d];
    return v->c.ndim;
  }
  const tc_tensor *t = &x->g->nodes[v->node].out;
  for (int d = 0; d < t->ndim; d++) dims[d] = t->shape[d];
  return t->ndim;
}

const char *tc__ox_gname(tc__ox *x, const Onnx__NodeProto *n, char *buf, size_t len) {
  (void)x;
  const char *s = n->name && n->name[0] ? n->name : n->n_output > 0 ? tc__ox_s(n->output[0]) : "";
  snprintf(buf, len, "%.200s", s);
  return buf;
}

/* ---- parameters
 * -------------------------------------------------------------------------------------- */

static th_status tc__ox_ptrack(tc__ox *x) {
  int need = x->g->nparams;
  if (need <= x->pcap) return TH_OK;
  int cap = x->pcap ? x->pcap : 64;
  while (cap < need) cap *= 2;
  tc__ox_pinfo *pi = realloc(x->pinfo, (size_t)cap * sizeof *pi);
  if (!pi) return tc__ox_fail(x, TH_ERR_NOMEM, "out of memory");
  for (int i = x->pcap; i < cap; i++) pi[i] = (tc__ox_pinfo){-1, -1, -1, 0, 1.0f};
  x->pinfo = pi;
  x->pcap = cap;
  return TH_OK;
}

th_status tc__ox_bind_param(tc__ox *x, const Onnx__NodeProto *n, int *slot, const tc__oxv *v,
                            int trans, float scale) {
  tc_graph *g = x->g;
  int pid = *slot;
  th_status rc = tc__ox_ptrack(x);
  if (rc != TH_OK) return rc;
  const tc__oxc *c = &v->c;
  tc_param *p = &g->params[pid];
  if (v->kind != TC__OX_CONST || !c->fl)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "'%s' must be a float tensor", v->name);
  int ok = p->numel == c->n;
  if (trans)
    ok = ok && c->ndim == 2 && p->ndim == 2 && p->shape[0] == c->dims[1] &&
         p->shape[1] == c->dims[0];
  if (!ok)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "'%s' has %lld elements, the layer needs %lld",
                        v->name, (long long)c->n, (long long)p->numel);
  int src = c->src;
  tc__oxv *sv = &x->vals[src];
  for (int q = sv->param; q >= 0; q = x->pinfo[q].next) {
    const tc_param *o = &g->params[q];
    if (q == pid || x->pinfo[q].trans != trans || x->pinfo[q].scale != scale) continue;
    if (o->ndim == p->ndim &&
        memcmp(o->shape, p->shape, (size_t)o->ndim * sizeof o->shape[0]) == 0) {
      *slot = q; /* the builder's new parameter is left unused and dropped at the end */
      return TH_OK;
    }
  }
  const char *nm = th_arena_strdup(g->arena, sv->name);
  if (!nm) return tc__ox_fail(x, TH_ERR_NOMEM, "out of memory");
  p->name = nm;
  x->pinfo[pid].src = src;
  x->pinfo[pid].trans = trans != 0;
  x->pinfo[pid].scale = scale;
  x->pinfo[pid].next = sv->param;
  sv->param = pid;
  if (!x->opts->weights || c->n == 0) return TH_OK;
  float *d = th_arena_alloc(g->arena, (size_t)c->n * sizeof(float));
  if (!d) return tc__ox_fail(x, TH_ERR_NOMEM, "out of memory copying '%s'", v->name);
  if (trans) {
    int64_t r = c->dims[0], k = c->dims[1];
    for (int64_t i = 0; i < r; i++)
      for (int64_t j = 0; j < k; j++) d[j * r + i] = c->f[i * k + j] * scale;
  } else if (scale != 1.0f) {
    for (int64_t i = 0; i < c->n; i++) d[i] = c->f[i] * scale;
  } else {
    memcpy(d, c->f, (size_t)c->n * sizeof(float));
  }
  p->data = d;
  return TH_OK;
}

th_status tc__ox_fill_param(tc__ox *x, int pid, float fill) {
  th_status rc = tc__ox_ptrack(x);
  if (rc != TH_OK || !x->opts->weights) return rc;
  tc_param *p = &x->g->params[pid];
  p->data = th_arena_alloc(x->g->arena, (size_t)p->numel * sizeof(float));
  if (!p->data) return tc__ox_fail(x, TH_ERR_NOMEM, "out of memory");
  for (int64_t i = 0; i < p->numel; i++) p->data[i] = fill;
  return TH_OK;
}

th_status tc__ox_int_tensor(tc__ox *x, const Onnx__NodeProto *n, tc__oxv *v, int *id) {
  const tc__oxc *c = &v->c;
  *id = -1;
  if (v->kind != TC__OX_CONST || c->fl || c->type != ONNX__TENSOR_PROTO__DATA_TYPE__INT64)
    return tc__ox_unsupported(x, n, "'%.60s' is not an int64 constant", v->name);
  if (c->n == 0) return tc__ox_unsupported(x, n, "constant '%.60s' is empty", v->name);
  if (c->ndim > TC_MAX_DIMS)
    return tc__ox_unsupported(x, n, "constant '%.60s' has %d dimensions (at most %d)", v->name,
                              c->ndim, TC_MAX_DIMS);
  for (int64_t k = 0; k < c->n; k++)
    if (c->i[k] > (1 << 24) || c->i[k] < -(1 << 24))
      return tc__ox_unsupported(x, n, "int64 constant '%.60s' holds %lld, past the +-2^24 it carries",
                                v->name, (long long)c->i[k]);
  int64_t one = 1;
  int k = tc_graph_const(x->g, v->name, c->ndim ? c->ndim : 1, c->ndim ? c->dims : &one,
                         TC_INIT_EMBED, 1);
  th_status rc = tc__ox_bind_node(x, n, NULL, k);
  if (rc == TH_OK) rc = tc__ox_fill_param(x, x->g->nodes[k].weight, 0.0f);
  if (rc != TH_OK) return rc;
  float *data = x->g->params[x->g->nodes[k].weight].data; /* NULL without weights */
  for (int64_t e = 0; data && e < c->n; e++) data[e] = (float)c->i[e];
  *id = tc_graph_cast(x->g, k, TC_DTYPE_I64);
  return tc__ox_bind_node(x, n, NULL, *id);
}

th_status tc__ox_tensor(tc__ox *x, const Onnx__NodeProto *n, tc__oxv *v, int *id) {
  *id = -1;
  if (v->kind == TC__OX_NODE) {
    *id = v->node;
    return TH_OK;
  }
  if (v->kind != TC__OX_CONST)
    return tc__ox_nfail(x, n, TH_ERR_INTERNAL, "'%s' has no value", v->name);
  if (v->node >= 0) {
    *id = v->node;
    return TH_OK;
  }
  const tc__oxc *c = &v->c;
  if (!c->fl)
    return tc__ox_unsupported(x, n, "the integer constant '%.60s' would be a runtime tensor",
                              v->name);
  if (c->n == 0) return tc__ox_unsupported(x, n, "constant '%.60s' is empty", v->name);
  if (c->ndim > TC_MAX_DIMS)
    return tc__ox_unsupported(x, n, "constant '%.60s' has %d dimensions (at most %d)", v->name,
                              c->ndim, TC_MAX_DIMS);
  int64_t one = 1;
  int k = tc_graph_const(x->g, v->name, c->ndim ? c->ndim : 1, c->ndim ? c->dims : &one,
                         TC_INIT_EMBED, 1);
  th_status rc = tc__ox_bind_node(x, n, NULL, k);
  if (rc == TH_OK) rc = tc__ox_bind_param(x, n, &x->g->nodes[k].weight, v, 0, 1.0f);
  if (rc != TH_OK) return rc;
  x->pinfo[x->g->nodes[k].weight].mat = (int)(v - x->vals);
  v->node = k;
  *id = k;
  return TH_OK;
}
