/* The ONNX importer's top level: it scans the wire format first (onnx_wire.c: depth, counts,
 * allocation), parses the file with protoc-c's code under a byte budget, validates what a malicious
 * or broken file could get wrong (opsets, domains, sizes, names, dangling inputs, cycles) before
 * anything is built, orders the nodes (ONNX does not require a sorted graph; constants go
 * first so that patterns see them), runs every node through folding, the pattern matchers and the
 * converters, lists every unsupported op in one error, and finishes the graph: dead nodes and
 * unused parameters dropped, outputs named as in the file, info filled. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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

static void tc__ox_poison(tc__ox *x, const Onnx__NodeProto *n) {
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

static uint32_t tc__ox_hash(const char *s) {
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
static int tc__ox_add(tc__ox *x, const char *s) {
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

/* ---- validation
 * -------------------------------------------------------------------------------------- */

static int tc__ox_default_domain(const char *d) {
  return !d || !d[0] || strcmp(d, "ai.onnx") == 0;
}

static th_status tc__ox_check_model(tc__ox *x) {
  const Onnx__ModelProto *m = x->m;
  if (!m->has_ir_version || m->ir_version < 3)
    return tc__ox_fail(x, TH_ERR_INVALID,
                       "ir_version %lld is below 3 (or missing): not a supported ONNX model",
                       (long long)(m->has_ir_version ? m->ir_version : 0));
  if (!m->graph) return tc__ox_fail(x, TH_ERR_INVALID, "the model has no graph");
  int64_t opset = -1;
  for (size_t i = 0; i < m->n_opset_import; i++) {
    const Onnx__OperatorSetIdProto *o = m->opset_import[i];
    if (!tc__ox_default_domain(o->domain)) continue;
    if (opset >= 0 && opset != o->version)
      return tc__ox_fail(x, TH_ERR_INVALID,
                         "the model imports two opsets of the default domain (%lld, %lld)",
                         (long long)opset, (long long)o->version);
    opset = o->version;
  }
  if (opset < 0)
    return tc__ox_fail(x, TH_ERR_INVALID,
                       "the model imports no opset of the default domain (ai.onnx)");
  if (opset < TC_ONNX_OPSET_MIN || opset > TC_ONNX_OPSET_MAX)
    return tc__ox_fail(x, TH_ERR_INVALID,
                       "opset %lld of the default domain is outside the supported %d..%d",
                       (long long)opset, TC_ONNX_OPSET_MIN, TC_ONNX_OPSET_MAX);
  x->opset = opset;
  const Onnx__GraphProto *gp = m->graph;
  if (gp->n_node > TC_ONNX_MAX_NODES)
    return tc__ox_fail(x, TH_ERR_INVALID, "the graph has %zu nodes (the limit is %d)", gp->n_node,
                       TC_ONNX_MAX_NODES);
  if (gp->n_sparse_initializer > 0)
    return tc__ox_fail(x, TH_ERR_UNSUPPORTED, "sparse initializers are not supported");
  tc_onnx_info *in = &x->info;
  for (size_t k = 0; k < gp->n_node; k++) {
    const Onnx__NodeProto *n = gp->node[k];
    if (!n->op_type || !n->op_type[0])
      return tc__ox_fail(x, TH_ERR_INVALID, "node %zu has no op_type", k);
    if (!tc__ox_default_domain(n->domain))
      return tc__ox_nfail(x, n, TH_ERR_INVALID,
                          "domain '%.60s' is not supported (only ai.onnx opsets %d..%d)", n->domain,
                          TC_ONNX_OPSET_MIN, TC_ONNX_OPSET_MAX);
    int t = 0;
    while (t < in->nop_types && strcmp(in->op_types[t].name, n->op_type) != 0) t++;
    if (t == in->nop_types && t < TC_ONNX_MAX_OP_TYPES) {
      snprintf(in->op_types[t].name, sizeof in->op_types[t].name, "%s", n->op_type);
      in->nop_types++;
    }
    if (t < in->nop_types) in->op_types[t].count++;
  }
  in->ir_version = m->ir_version;
  in->opset = opset;
  snprintf(in->producer, sizeof in->producer, "%s%s%s", tc__ox_s(m->producer_name),
           m->producer_version && m->producer_version[0] ? " " : "", tc__ox_s(m->producer_version));
  in->nnodes = (int)gp->n_node;
  in->ninitializers = (int)gp->n_initializer;
  return TH_OK;
}

/* ---- the value table
 * --------------------------------------------------------------------------------- */

/* Whether s names an initializer (they enter the name table first). */
static int tc__ox_is_init(tc__ox *x, const char *s) {
  const tc__oxv *v = tc__ox_find(x, s);
  return v && v->init >= 0;
}

static th_status tc__ox_values(tc__ox *x) {
  const Onnx__GraphProto *gp = x->gp;
  size_t total = gp->n_input + gp->n_initializer;
  for (size_t k = 0; k < gp->n_node; k++) total += gp->node[k]->n_output;
  if (total > (size_t)1 << 21)
    return tc__ox_fail(x, TH_ERR_INVALID, "the graph names more than 2^21 tensors");
  uint32_t ns = 16;
  while (ns < 2 * total + 1) ns *= 2;
  x->vals = th_arena_alloc(x->arena, (total ? total : 1) * sizeof *x->vals);
  x->slots = th_arena_alloc(x->arena, ns * sizeof *x->slots);
  if (!x->vals || !x->slots) return tc__ox_fail(x, TH_ERR_NOMEM, "out of memory");
  x->nslots = ns;
  memset(x->slots, 0xff, ns * sizeof *x->slots);
  int64_t elements = 0;
  for (size_t i = 0; i < gp->n_initializer; i++) {
    const Onnx__TensorProto *t = gp->initializer[i];
    const char *nm = tc__ox_s(t->name);
    if (!nm[0] || strlen(nm) > 1024)
      return tc__ox_fail(x, TH_ERR_INVALID,
                         "initializer %zu has no name or one longer than 1024 bytes", i);
    int vi = tc__ox_add(x, nm);
    if (vi < 0) return tc__ox_fail(x, TH_ERR_INVALID, "initializer '%.100s' appears twice", nm);
    tc__oxv *v = &x->vals[vi];
    v->init = (int)i;
    th_status rc = tc__ox_decode(x, t, nm, &v->c);
    if (rc != TH_OK) return rc;
    v->c.src = vi;
    v->kind = TC__OX_CONST;
    elements += v->c.n;
  }
  x->info.param_elements = elements;
  for (size_t i = 0; i < gp->n_input; i++) {
    const char *nm = tc__ox_s(gp->input[i]->name);
    if (!nm[0]) return tc__ox_fail(x, TH_ERR_INVALID, "graph input %zu has no name", i);
    if (tc__ox_is_init(x, nm)) continue; /* old exporters list initializers as inputs too */
    if (tc__ox_add(x, nm) < 0)
      return tc__ox_fail(x, TH_ERR_INVALID, "graph input '%.100s' appears twice", nm);
  }
  for (size_t k = 0; k < gp->n_node; k++) {
    const Onnx__NodeProto *n = gp->node[k];
    for (size_t o = 0; o < n->n_output; o++) {
      const char *nm = tc__ox_s(n->output[o]);
      if (!nm[0]) continue;
      int vi = tc__ox_add(x, nm);
      if (vi < 0)
        return tc__ox_nfail(
            x, n, TH_ERR_INVALID,
            "output '%.100s' has the name of another tensor (duplicate output name)", nm);
      x->vals[vi].producer = (int)k;
    }
  }
  /* consumers: every input must name a tensor; each node appears once per value it reads */
  size_t ncons = 0;
  for (size_t k = 0; k < gp->n_node; k++) {
    const Onnx__NodeProto *n = gp->node[k];
    for (size_t i = 0; i < n->n_input; i++) {
      const char *nm = tc__ox_s(n->input[i]);
      if (!nm[0]) continue;
      tc__oxv *v = tc__ox_find(x, nm);
      if (!v)
        return tc__ox_nfail(
            x, n, TH_ERR_INVALID,
            "input '%.100s' is dangling: no node, graph input or initializer produces it", nm);
      v->uses++;
      if (v->mark != (int)k + 1) { /* each node once per value it reads */
        v->mark = (int)k + 1;
        v->ncons++;
        ncons++;
      }
    }
  }
  x->cons = th_arena_alloc(x->arena, (ncons ? ncons : 1) * sizeof *x->cons);
  if (!x->cons) return tc__ox_fail(x, TH_ERR_NOMEM, "out of memory");
  int off = 0;
  for (int i = 0; i < x->nvals; i++) {
    x->vals[i].cons0 = off;
    off += x->vals[i].ncons;
    x->vals[i].ncons = 0;
  }
  for (size_t k = 0; k < gp->n_node; k++) {
    const Onnx__NodeProto *n = gp->node[k];
    for (size_t i = 0; i < n->n_input; i++) {
      tc__oxv *v = tc__ox_find(x, n->input[i]);
      if (!v) continue;
      if (v->ncons > 0 && x->cons[v->cons0 + v->ncons - 1] == (int)k) continue;
      x->cons[v->cons0 + v->ncons++] = (int)k;
    }
  }
  if (gp->n_output == 0) return tc__ox_fail(x, TH_ERR_INVALID, "the graph has no outputs");
  if (gp->n_output > TC_MAX_IO)
    return tc__ox_fail(x, TH_ERR_INVALID, "the graph has %zu outputs (at most %d)", gp->n_output,
                       TC_MAX_IO);
  for (size_t i = 0; i < gp->n_output; i++) {
    const char *nm = tc__ox_s(gp->output[i]->name);
    tc__oxv *v = tc__ox_find(x, nm);
    if (!v)
      return tc__ox_fail(x, TH_ERR_INVALID, "graph output '%.100s' is not produced by any node",
                         nm);
    for (size_t j = 0; j < i; j++)
      if (strcmp(tc__ox_s(gp->output[j]->name), nm) == 0)
        return tc__ox_fail(x, TH_ERR_INVALID, "graph output '%.100s' is listed twice", nm);
    v->is_output = 1;
    v->uses++;
  }
  return TH_OK;
}

/* ---- evaluation order
 * -------------------------------------------------------------------------------- */

/* Kahn's algorithm; among ready nodes those whose inputs are all constants go first, so that every
 * constant the patterns look at is known before the activations around it are converted. */
static th_status tc__ox_sort(tc__ox *x) {
  const Onnx__GraphProto *gp = x->gp;
  size_t nn = gp->n_node ? gp->n_node : 1;
  int *indeg = th_arena_alloc(x->arena, nn * sizeof *indeg);
  int *qc = th_arena_alloc(x->arena, nn * sizeof *qc),
      *qr = th_arena_alloc(x->arena, nn * sizeof *qr);
  unsigned char *cst = th_arena_alloc(x->arena, (size_t)(x->nvals ? x->nvals : 1));
  x->order = th_arena_alloc(x->arena, nn * sizeof *x->order);
  x->done = th_arena_alloc(x->arena, nn);
  if (!indeg || !qc || !qr || !cst || !x->order || !x->done)
    return tc__ox_fail(x, TH_ERR_NOMEM, "out of memory");
  for (int i = 0; i < x->nvals; i++) {
    cst[i] = x->vals[i].init >= 0;
    if (x->vals[i].producer < 0) continue;
    for (int c = 0; c < x->vals[i].ncons; c++) indeg[x->cons[x->vals[i].cons0 + c]]++;
  }
  int hc = 0, tcn = 0, hr = 0, tr = 0, cnt = 0;
  for (size_t k = 0; k < gp->n_node; k++)
    if (indeg[k] == 0) {
      int all = 1;
      for (size_t i = 0; i < gp->node[k]->n_input; i++) {
        tc__oxv *v = tc__ox_find(x, gp->node[k]->input[i]);
        if (v && !cst[v - x->vals]) all = 0;
      }
      if (all)
        qc[tcn++] = (int)k;
      else
        qr[tr++] = (int)k;
    }
  while (hc < tcn || hr < tr) {
    int k = hc < tcn ? qc[hc++] : qr[hr++];
    const Onnx__NodeProto *n = gp->node[k];
    x->order[cnt++] = k;
    int all = 1;
    for (size_t i = 0; i < n->n_input; i++) {
      tc__oxv *v = tc__ox_find(x, n->input[i]);
      if (v && !cst[v - x->vals]) all = 0;
    }
    if (strcmp(n->op_type, "Shape") == 0 || strcmp(n->op_type, "Size") == 0) all = 1;
    for (size_t o = 0; o < n->n_output; o++) {
      tc__oxv *v = tc__ox_out(x, n, (int)o);
      if (!v) continue;
      cst[v - x->vals] = (unsigned char)all;
      for (int c = 0; c < v->ncons; c++) {
        int j = x->cons[v->cons0 + c];
        if (--indeg[j] != 0) continue;
        int jall = 1;
        for (size_t i = 0; i < gp->node[j]->n_input; i++) {
          tc__oxv *w = tc__ox_find(x, gp->node[j]->input[i]);
          if (w && !cst[w - x->vals]) jall = 0;
        }
        if (jall)
          qc[tcn++] = j;
        else
          qr[tr++] = j;
      }
    }
  }
  if ((size_t)cnt == gp->n_node) return TH_OK;
  /* a node left over is in a cycle or downstream of one: walk back through unsorted producers until
   * the walk must have entered the cycle */
  unsigned char *sorted = x->done;
  for (int i = 0; i < cnt; i++) sorted[x->order[i]] = 1;
  int u = 0;
  while (sorted[u]) u++;
  for (size_t step = 0; step < gp->n_node; step++) {
    const Onnx__NodeProto *n = gp->node[u];
    for (size_t i = 0; i < n->n_input; i++) {
      tc__oxv *v = tc__ox_find(x, n->input[i]);
      if (v && v->producer >= 0 && !sorted[v->producer]) {
        u = v->producer;
        break;
      }
    }
  }
  return tc__ox_nfail(x, gp->node[u], TH_ERR_INVALID, "the graph has a cycle through this node");
}

/* ---- inputs
 * ------------------------------------------------------------------------------------------ */

/* Parses one entry [s, end) of opts->shapes, "NAME:DxDxD" (names run to the last ':'; the first D
 * may be N, returned as 0): its rank, or -1 for a malformed entry (message in x). */
static int tc__ox_shape_entry(tc__ox *x, const char *s, const char *end, size_t *namelen,
                              int64_t *dims) {
  const char *colon = NULL;
  for (const char *p = s; p < end; p++)
    if (*p == ':') colon = p;
  int rank = 0;
  const char *p = colon ? colon + 1 : end;
  if (!colon || colon == s || p == end) goto bad;
  while (p < end) {
    int64_t v = 0;
    if (*p == 'N' && rank == 0) {
      p++;
    } else {
      if (*p < '0' || *p > '9') goto bad;
      while (p < end && *p >= '0' && *p <= '9') {
        v = v * 10 + (*p++ - '0');
        if (v > TC_ONNX_MAX_DIM) goto bad;
      }
      if (v < 1) goto bad;
    }
    if (rank == TC__OX_RANK) goto bad;
    dims[rank++] = v;
    if (p < end && (*p != 'x' || p + 1 == end)) goto bad;
    if (p < end) p++;
  }
  *namelen = (size_t)(colon - s);
  return rank;
bad:
  tc__ox_fail(x, TH_ERR_INVALID,
              "bad shapes string '%.200s': entries are NAME:DxDxD, positive dimensions up to %lld "
              "(the first may be "
              "N), separated by commas",
              x->opts->shapes, (long long)TC_ONNX_MAX_DIM);
  return -1;
}

/* The dims opts->shapes gives input `name`: the rank, 0 when it gives none, -1 for a malformed
 * string. */
static int tc__ox_shape_of(tc__ox *x, const char *name, int64_t *dims) {
  for (const char *s = x->opts->shapes; s && *s;) {
    const char *end = strchr(s, ',');
    if (!end) end = s + strlen(s);
    size_t nl;
    int rank = tc__ox_shape_entry(x, s, end, &nl, dims);
    if (rank < 0) return -1;
    if (nl == strlen(name) && memcmp(s, name, nl) == 0) return rank;
    s = *end ? end + 1 : end;
  }
  return 0;
}

/* opts->shapes is well formed and names only graph inputs. */
static th_status tc__ox_check_shapes(tc__ox *x) {
  for (const char *s = x->opts->shapes; s && *s;) {
    const char *end = strchr(s, ',');
    if (!end) end = s + strlen(s);
    size_t nl;
    int64_t dims[TC__OX_RANK];
    if (tc__ox_shape_entry(x, s, end, &nl, dims) < 0) return TH_ERR_INVALID;
    int found = 0;
    for (size_t i = 0; i < x->gp->n_input && !found; i++) {
      const char *nm = tc__ox_s(x->gp->input[i]->name);
      found = strlen(nm) == nl && memcmp(nm, s, nl) == 0 && !tc__ox_is_init(x, nm);
    }
    if (!found)
      return tc__ox_fail(x, TH_ERR_INVALID,
                         "shapes names '%.*s', which is not an input of the graph",
                         (int)(nl > 100 ? 100 : nl), s);
    s = *end ? end + 1 : end;
  }
  return TH_OK;
}

static th_status tc__ox_inputs(tc__ox *x) {
  th_status rc = tc__ox_check_shapes(x);
  if (rc != TH_OK) return rc;
  for (size_t i = 0; i < x->gp->n_input; i++) {
    const Onnx__ValueInfoProto *vi = x->gp->input[i];
    const char *nm = tc__ox_s(vi->name);
    if (tc__ox_is_init(x, nm)) continue;
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
      return tc__ox_fail(x, TH_ERR_INVALID, "input '%.100s' is not a tensor", nm);
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    int dtype = tt->elem_type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT   ? TC_DTYPE_F32
                : tt->elem_type == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 ? TC_DTYPE_I64
                                                                        : -1;
    if (dtype < 0)
      return tc__ox_fail(x, TH_ERR_INVALID,
                         "input '%.100s' has element type %d (float32 and int64 are supported)", nm,
                         (int)tt->elem_type);
    int64_t given[TC__OX_RANK];
    int grank = tc__ox_shape_of(x, nm, given);
    if (grank < 0) return TH_ERR_INVALID;
    int rank = tt->shape ? (int)(tt->shape->n_dim > 64 ? 64 : tt->shape->n_dim) : -1;
    if (rank < 0 && grank == 0)
      return tc__ox_fail(x, TH_ERR_INVALID,
                         "input '%.100s' has no shape in the file; give it in shapes (NAME:Nx...)",
                         nm);
    if (grank > 0 && rank >= 0 && grank != rank)
      return tc__ox_fail(x, TH_ERR_INVALID,
                         "shapes gives input '%.100s' %d dimensions, the file %d", nm, grank, rank);
    if (rank < 0) rank = grank;
    if (rank < 1 || rank > TC_MAX_DIMS)
      return tc__ox_fail(x, TH_ERR_INVALID,
                         "input '%.100s' has %d dimensions (1..%d, the first is the batch)", nm,
                         rank, TC_MAX_DIMS);
    int shape[TC_MAX_DIMS];
    shape[0] = x->opts->batch;
    for (int d = 0; d < rank; d++) {
      const Onnx__TensorShapeProto__Dimension *dim =
          tt->shape && (size_t)d < tt->shape->n_dim ? tt->shape->dim[d] : NULL;
      int64_t v = dim && dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE
                      ? dim->dim_value
                      : 0;
      if (v < 0 || v > TC_ONNX_MAX_DIM)
        return tc__ox_fail(x, TH_ERR_INVALID, "input '%.100s': dimension %d is %lld (0..%lld)", nm,
                           d, (long long)v, (long long)TC_ONNX_MAX_DIM);
      if (d == 0) {
        if (x->g->ninputs == 0) x->file_batch = (int)v;
        continue;
      }
      if (grank > 0) v = given[d];
      if (v == 0) {
        const char *param =
            dim && dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM
                ? tc__ox_s(dim->dim_param)
                : "";
        return tc__ox_fail(x, TH_ERR_INVALID,
                           "input '%.100s': dimension %d%s%.60s%s is symbolic; fix it with shapes "
                           "(\"%.100s:Nx...\")",
                           nm, d, param[0] ? " ('" : "", param, param[0] ? "')" : "", nm);
      }
      shape[d] = (int)v;
    }
    int id = tc_graph_input_tensor(x->g, nm, dtype, rank, shape);
    if (id < 0) return tc__ox_fail(x, TH_ERR_INVALID, "%s", tc_graph_error(x->g));
    if (x->g->ninputs == 1 && rank == 4 && dtype == TC_DTYPE_F32) {
      x->g->in_c = shape[1];
      x->g->in_h = shape[2];
      x->g->in_w = shape[3];
    }
    tc__oxv *v = tc__ox_find(x, nm);
    v->kind = TC__OX_NODE;
    v->node = id;
  }
  if (x->g->ninputs == 0)
    return tc__ox_fail(x, TH_ERR_INVALID, "the graph has no inputs (besides initializers)");
  return TH_OK;
}

/* ---- the import loop
 * ----------------------------------------------------------------------------------- */

static int tc__ox_known(const char *op) {
  return tc__ox_converter(op) || tc__ox_foldable(op);
}

/* The opsets whose semantics each known op's converter and folding rule implement: from the version
 * that introduced the op (or TC_ONNX_OPSET_MIN) to the last one checked against the standard's
 * changelog (shared/reference/onnx-semantics-facts.md). The version switches inside a range (an
 * attribute that became an input, opset 6's broadcast attribute, ...) are the converters'. An op
 * outside its range, or a known op missing here, is refused naming the range. */
static const struct tc__ox_opset_range {
  const char *op;
  int64_t lo, hi;
} tc__ox_opsets[] = {
    {"Conv", 6, 21},
    {"BatchNormalization", 6, 21},
    {"Relu", 6, 21},
    {"Tanh", 6, 21},
    {"Sigmoid", 6, 21},
    {"HardSigmoid", 6, 21},
    {"HardSwish", 14, 21},
    {"Clip", 6, 21},
    {"Add", 6, 21},
    {"Sub", 6, 21},
    {"Mul", 6, 21},
    {"Div", 6, 21},
    {"Pow", 6, 21},
    {"Sqrt", 6, 21},
    {"Erf", 9, 21},
    {"MaxPool", 6, 21},
    {"AveragePool", 6, 21},
    {"GlobalAveragePool", 6, 21},
    {"Pad", 6, 21},
    {"Gemm", 6, 21},
    {"MatMul", 6, 21},
    {"Flatten", 6, 21},
    {"Reshape", 6, 21},
    {"Squeeze", 6, 21},
    {"Unsqueeze", 6, 21},
    {"Transpose", 6, 21},
    {"Concat", 6, 21},
    {"Split", 6, 21},
    {"Slice", 6, 21},
    {"Gather", 6, 21},
    {"Cast", 6, 21},
    {"Expand", 8, 21},
    {"ReduceMean", 6, 21},
    {"ReduceSum", 6, 21},
    {"ReduceMax", 6, 21},
    {"ReduceMin", 6, 21},
    {"ReduceProd", 6, 21},
    {"ReduceSumSquare", 6, 21},
    {"ReduceL1", 6, 21},
    {"ReduceL2", 6, 21},
    {"ReduceLogSum", 6, 21},
    {"ReduceLogSumExp", 6, 21},
    {"ArgMax", 6, 21},
    {"ArgMin", 6, 21},
    {"InstanceNormalization", 6, 21},
    {"Softmax", 6, 21},
    {"LayerNormalization", 17, 21},
    {"Dropout", 6, 21},
    {"Identity", 6, 21},
    {"Shape", 6, 21},
    {"Size", 6, 21},
    {"Constant", 6, 21},
    {"ConstantOfShape", 9, 21},
    {"Range", 11, 21},
    {"Where", 9, 21},
    {"Mod", 10, 21},
    {"Min", 6, 21},
    {"Max", 6, 21},
    {"Equal", 6, 21},
    {"Less", 6, 21},
    {"Greater", 6, 21},
    {"LessOrEqual", 12, 21},
    {"GreaterOrEqual", 12, 21},
    {"And", 6, 21},
    {"Or", 6, 21},
    {"Xor", 6, 21},
    {"Not", 6, 21},
    {"Neg", 6, 21},
    {"Abs", 6, 21},
    {"Floor", 6, 21},
    {"Ceil", 6, 21},
    {"Reciprocal", 6, 21},
    {"Exp", 6, 21},
    {"Log", 6, 21},
    {"Round", 11, 21},
    {"Sign", 9, 21},
    {"Softplus", 6, 21},
    {"Softsign", 6, 21},
    {"Elu", 6, 21},
    {"Selu", 6, 21},
    {"LeakyRelu", 6, 21},
    {"Celu", 12, 21},
    {"ThresholdedRelu", 10, 21},
};

int tc__ox_opset_range(const char *op, int64_t *lo, int64_t *hi) {
  for (size_t i = 0; i < sizeof tc__ox_opsets / sizeof tc__ox_opsets[0]; i++)
    if (strcmp(tc__ox_opsets[i].op, op) == 0) {
      *lo = tc__ox_opsets[i].lo;
      *hi = tc__ox_opsets[i].hi;
      return 1;
    }
  return 0;
}

static th_status tc__ox_node(tc__ox *x, int k) {
  const Onnx__NodeProto *n = x->gp->node[k];
  if (!tc__ox_known(n->op_type)) return tc__ox_unsupported(x, n, "%s", "");
  int64_t lo, hi;
  if (!tc__ox_opset_range(n->op_type, &lo, &hi))
    return tc__ox_unsupported(x, n, "the importer declares no opset range for it");
  if (x->opset < lo || x->opset > hi)
    return tc__ox_unsupported(x, n, "its semantics are implemented for opsets %lld..%lld only",
                              (long long)lo, (long long)hi);
  for (size_t i = 0; i < n->n_input; i++) {
    tc__oxv *v = tc__ox_find(x, n->input[i]);
    if (!v) continue;
    if (v->kind == TC__OX_BAD) {
      tc__ox_poison(x, n); /* downstream of an unsupported node: it is listed already */
      return TH_OK;
    }
    if (v->kind == TC__OX_PAD && strcmp(n->op_type, "Conv") != 0 &&
        strcmp(n->op_type, "AveragePool") != 0)
      return tc__ox_nfail(x, n, TH_ERR_INTERNAL, "a pending Pad reached this node");
    if (v->kind == TC__OX_UNSET)
      return tc__ox_nfail(x, n, TH_ERR_INVALID,
                          "input '%.100s' is an output its producer does not define", v->name);
  }
  int done = 0;
  th_status rc = tc__ox_match(x, k, &done);
  if (rc != TH_OK || done) return rc;
  if (tc__ox_foldable(n->op_type)) {
    int before = x->nunsup;
    rc = tc__ox_fold(x, n, &done);
    if (rc != TH_OK || TC__OX_REPORTED(x, before)) return rc;
    if (done) {
      x->info.folded++;
      return TH_OK;
    }
  }
  tc__ox_conv_fn fn = tc__ox_converter(n->op_type);
  if (fn) return fn(x, n);
  for (size_t i = 0; i < n->n_input; i++) {
    tc__oxv *v = tc__ox_find(x, n->input[i]);
    if (v && v->kind != TC__OX_CONST)
      return tc__ox_unsupported(
          x, n, "only folded at import, and it depends on the runtime tensor '%.60s'", v->name);
  }
  return tc__ox_unsupported(x, n, "its constant result is too large to fold");
}

/* "unsupported ONNX operators: Resize (node 'up1', opset 13), ..." into err. */
static void tc__ox_list_unsupported(tc__ox *x) {
  if (!x->err || x->errlen == 0) return;
  char also[512] = "";
  if (x->failed) snprintf(also, sizeof also, "; the import also failed: %s", x->err);
  char *e = x->err;
  size_t len = x->errlen, k = (size_t)snprintf(e, len, "unsupported ONNX operators: ");
  int i = 0;
  for (; i < x->nunsup && k < len; i++) {
    const tc__ox_unsup *u = &x->unsup[i];
    const Onnx__NodeProto *n = u->node;
    char item[400];
    int w =
        snprintf(item, sizeof item, "%s%.48s (node '%.100s', opset %lld%s%s)", i ? ", " : "",
                 n->op_type, tc__ox_nname(n), (long long)x->opset, u->why[0] ? ": " : "", u->why);
    if (w < 0) break;
    if (k + (size_t)w + 32 >= len && i + 1 < x->nunsup)
      break; /* keep room for the count of the rest */
    k += (size_t)snprintf(e + k, len - k, "%s", item);
  }
  if (i < x->nunsup && k < len)
    k += (size_t)snprintf(e + k, len - k, " and %d more", x->nunsup - i);
  if (k < len) snprintf(e + k, len - k, "%s", also);
}

/* ---- finishing
 * ----------------------------------------------------------------------------------------- */

/* Drops graph nodes no output needs (ops that patterns and peepholes bypassed) and parameters no
 * node uses, renumbering both; names parameters that share a name (one initializer in two layouts)
 * apart. */
static th_status tc__ox_compact(tc__ox *x) {
  tc_graph *g = x->g;
  size_t nn = g->nnodes ? (size_t)g->nnodes : 1, np = g->nparams ? (size_t)g->nparams : 1;
  int *map = th_arena_alloc(x->arena, nn * sizeof *map),
      *pmap = th_arena_alloc(x->arena, np * sizeof *pmap);
  unsigned char *live = th_arena_alloc(x->arena, nn);
  if (!map || !pmap || !live) return tc__ox_fail(x, TH_ERR_NOMEM, "out of memory");
  for (int i = 0; i < g->noutputs; i++) live[g->outputs[i]] = 1;
  for (int i = 0; i < g->ninputs; i++) live[g->inputs[i]] = 1;
  for (int i = g->nnodes - 1; i >= 0; i--)
    if (live[i])
      for (int k = 0; k < g->nodes[i].ninputs; k++) live[g->nodes[i].inputs[k]] = 1;
  int m = 0;
  for (int i = 0; i < g->nnodes; i++) {
    map[i] = live[i] ? m : -1;
    if (!live[i]) continue;
    tc_node *nd = &g->nodes[m];
    *nd = g->nodes[i];
    for (int k = 0; k < nd->ninputs; k++) nd->inputs[k] = map[nd->inputs[k]];
    m++;
  }
  g->nnodes = m;
  for (int i = 0; i < g->ninputs; i++) g->inputs[i] = map[g->inputs[i]];
  for (int i = 0; i < g->noutputs; i++) g->outputs[i] = map[g->outputs[i]];
  for (int p = 0; p < g->nparams; p++) pmap[p] = -1;
  for (int i = 0; i < g->nnodes; i++) {
    tc_node *nd = &g->nodes[i];
    int *ids[6] = {&nd->weight, &nd->bias, &nd->gamma, &nd->beta, &nd->mean, &nd->var};
    for (int k = 0; k < 6; k++)
      if (*ids[k] >= 0) pmap[*ids[k]] = 1;
  }
  int q = 0;
  for (int p = 0; p < g->nparams; p++) {
    if (pmap[p] < 0) continue;
    pmap[p] = q;
    g->params[q] = g->params[p];
    q++;
  }
  g->nparams = q;
  for (int i = 0; i < g->nnodes; i++) {
    tc_node *nd = &g->nodes[i];
    int *ids[6] = {&nd->weight, &nd->bias, &nd->gamma, &nd->beta, &nd->mean, &nd->var};
    for (int k = 0; k < 6; k++)
      if (*ids[k] >= 0) *ids[k] = pmap[*ids[k]];
  }
  /* parameter names must be unique in params.bin: a later parameter with an earlier one's name gets
   * a suffix (hash table over names, linear probing) */
  uint32_t ns = 16;
  while (ns < 2 * (uint32_t)q + 1) ns *= 2;
  int *slot = th_arena_alloc(x->arena, ns * sizeof *slot);
  if (!slot) return tc__ox_fail(x, TH_ERR_NOMEM, "out of memory");
  memset(slot, 0xff, ns * sizeof *slot);
  for (int p = 0; p < q; p++) {
    for (int attempt = 1;; attempt++) {
      uint32_t h = tc__ox_hash(g->params[p].name) & (ns - 1);
      int clash = 0;
      for (; slot[h] >= 0; h = (h + 1) & (ns - 1))
        if (strcmp(g->params[slot[h]].name, g->params[p].name) == 0) clash = 1;
      if (!clash) {
        slot[h] = p;
        break;
      }
      char buf[1100];
      snprintf(buf, sizeof buf, "%s#%d", g->params[p].name, attempt);
      const char *nm = th_arena_strdup(g->arena, buf);
      if (!nm) return tc__ox_fail(x, TH_ERR_NOMEM, "out of memory");
      g->params[p].name = nm;
    }
    if (x->opts->weights && !g->params[p].data && g->params[p].numel > 0)
      return tc__ox_fail(x, TH_ERR_INTERNAL, "parameter '%.100s' got no data", g->params[p].name);
  }
  g->has_data = x->opts->weights != 0;
  return TH_OK;
}

static th_status tc__ox_outputs(tc__ox *x) {
  for (size_t i = 0; i < x->gp->n_output; i++) {
    const char *nm = tc__ox_s(x->gp->output[i]->name);
    tc__oxv *v = tc__ox_find(x, nm);
    if (v->kind == TC__OX_BAD) continue;
    int id = -1;
    th_status rc;
    if (v->kind == TC__OX_CONST && !v->c.fl)
      return tc__ox_fail(x, TH_ERR_UNSUPPORTED,
                         "graph output '%.100s' is an integer constant (outputs are float)", nm);
    if (v->kind == TC__OX_CONST) {
      const Onnx__NodeProto *pn = v->producer >= 0 ? x->gp->node[v->producer] : NULL;
      static const Onnx__NodeProto fake = {.name = (char *)"(graph output)",
                                           .op_type = (char *)"Constant"};
      rc = tc__ox_tensor(x, pn ? pn : &fake, v, &id);
      if (rc != TH_OK) return rc;
      if (id < 0) continue; /* listed as unsupported */
    } else if (v->kind == TC__OX_NODE) {
      id = v->node;
    } else {
      return tc__ox_fail(x, TH_ERR_INVALID,
                         "graph output '%.100s' is an output its producer does not define", nm);
    }
    if (tc_graph_output(x->g, nm, id) < 0)
      return tc__ox_fail(x, TH_ERR_INVALID, "%s", tc_graph_error(x->g));
  }
  return TH_OK;
}

static th_status tc__ox_run(tc__ox *x) {
  th_status rc = tc__ox_check_model(x);
  if (rc == TH_OK) {
    x->gp = x->m->graph;
    rc = tc__ox_values(x);
  }
  if (rc == TH_OK) rc = tc__ox_sort(x);
  if (rc != TH_OK) return rc;
  x->g = tc_graph_new(x->opts->network, x->opts->batch);
  if (!x->g) return tc__ox_fail(x, TH_ERR_NOMEM, "out of memory");
  memset(x->done, 0, x->gp->n_node ? x->gp->n_node : 1);
  rc = tc__ox_inputs(x);
  size_t i = 0;
  for (; rc == TH_OK && i < x->gp->n_node; i++) {
    int k = x->order[i];
    if (x->done[k]) continue;
    rc = tc__ox_node(x, k);
    x->done[k] = 1;
  }
  if (rc == TH_OK) rc = tc__ox_outputs(x);
  if (x->nunsup > 0) {
    /* list the unknown op types of the nodes the loop did not reach, then every unsupported node */
    for (; i < x->gp->n_node && rc != TH_ERR_NOMEM; i++) {
      const Onnx__NodeProto *n = x->gp->node[x->order[i]];
      if (!x->done[x->order[i]] && !tc__ox_known(n->op_type)) tc__ox_unsupported(x, n, "%s", "");
    }
    if (rc == TH_ERR_NOMEM) return rc;
    tc__ox_list_unsupported(x);
    return TH_ERR_UNSUPPORTED;
  }
  if (rc == TH_OK) rc = tc__ox_compact(x);
  if (rc == TH_OK && tc_graph_finish(x->g) != TH_OK)
    rc = tc__ox_fail(x, TH_ERR_INVALID, "%s", tc_graph_error(x->g));
  return rc;
}

th_status tc_onnx_import(const void *data, size_t len, const tc_onnx_opts *opts, tc_graph **out,
                         tc_onnx_info *info, char *err, size_t errlen) {
  if (err && errlen) err[0] = '\0';
  if (!opts || !out || (!data && len > 0)) {
    if (err) snprintf(err, errlen, "tc_onnx_import: NULL argument");
    return TH_ERR_INVALID;
  }
  if (opts->batch < 1 || opts->batch > 4096) {
    if (err) snprintf(err, errlen, "batch %d is outside 1..4096", opts->batch);
    return TH_ERR_INVALID;
  }
  /* the scan refuses what would overflow protobuf-c's recursion or its allocations; the budget
   * holds protobuf-c to the same bound should the scan miss something */
  char why[512];
  if (tc__ox_wire_scan(data, len, NULL, why, sizeof why) != TH_OK) {
    static const char mal[] = "malformed protobuf: ";
    if (err && strncmp(why, mal, sizeof mal - 1) == 0)
      snprintf(err, errlen, "not an ONNX model (protobuf parse failed): %s", why + sizeof mal - 1);
    else if (err)
      snprintf(err, errlen, "the ONNX file is refused before parsing: %s", why);
    return TH_ERR_INVALID;
  }
  tc__ox_budget budget;
  tc__ox_budget_init(&budget, tc__ox_wire_budget(len));
  Onnx__ModelProto *m = onnx__model_proto__unpack(&budget.pa, len, data ? data : (const void *)"");
  if (!m) {
    if (err && budget.over)
      snprintf(err, errlen,
               "the ONNX file is refused while parsing: protobuf would allocate more "
               "than %zu bytes (the file's %zu bytes plus %zu MiB)",
               budget.limit, len, TC_ONNX_PARSE_OVERHEAD >> 20);
    else if (err)
      snprintf(err, errlen, "not an ONNX model (protobuf parse failed)");
    return TH_ERR_INVALID;
  }
  tc__ox *x = calloc(1, sizeof *x);
  th_arena *arena = th_arena_new(1 << 16);
  th_status rc = TH_ERR_NOMEM;
  if (x && arena) {
    x->m = m;
    x->opts = opts;
    x->arena = arena;
    x->err = err;
    x->errlen = err ? errlen : 0;
    rc = tc__ox_run(x);
  } else if (err) {
    snprintf(err, errlen, "out of memory");
  }
  if (rc == TH_OK) {
    *out = x->g;
    if (info) *info = x->info;
  } else if (x) {
    tc_graph_free(x->g);
  }
  if (x) {
    free(x->unsup);
    free(x->pinfo);
  }
  free(x);
  th_arena_free(arena);
  onnx__model_proto__free_unpacked(m, &budget.pa);
  return rc;
}

th_status tc_onnx_import_file(const char *path, const tc_onnx_opts *opts, tc_graph **out,
                              tc_onnx_info *info, char *err, size_t errlen) {
  if (!path) {
    if (err) snprintf(err, errlen, "tc_onnx_import_file: NULL path");
    return TH_ERR_INVALID;
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (err) snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return TH_ERR_IO;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    if (err) snprintf(err, errlen, "%s: not a regular file", path);
    close(fd);
    return TH_ERR_IO;
  }
  size_t len = (size_t)st.st_size;
  void *p = len ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
  close(fd);
  if (len && p == MAP_FAILED) {
    if (err) snprintf(err, errlen, "%s: mmap: %s", path, strerror(errno));
    return TH_ERR_IO;
  }
  th_status rc = tc_onnx_import(p, len, opts, out, info, err, errlen);
  if (len) munmap(p, len);
  return rc;
}
