/* The graph IR: builders with shape inference, parameter declarations, FLOP and parameter counts, and a
 * JSON dump for the bundle's graph.json. Builders validate shapes and record the first error on the graph
 * instead of aborting, so a bad zoo definition or a too-small input size is reported as a status. */
#include "graph.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workload.h"

static const char *const tc__op_names[] = {
    "input",  "conv2d",  "batch_norm",          "relu",    "clip",    "add",     "max_pool",
    "avg_pool", "global_avg_pool", "adaptive_avg_pool", "concat", "flatten", "dense", "dropout",
    "softmax", "layout_transform",
};
_Static_assert(TC_OP_COUNT == 16, "update tc__op_names when adding ops");
_Static_assert(sizeof tc__op_names / sizeof tc__op_names[0] == TC_OP_COUNT, "op name table size");

const char *tc_op_name(tc_op op) {
  if ((int)op < 0 || op >= TC_OP_COUNT) return "unknown";
  return tc__op_names[op];
}

static void tc__err(tc_graph *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tc__err(tc_graph *g, const char *fmt, ...) {
  if (g->err[0]) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g->err, sizeof g->err, fmt, ap);
  va_end(ap);
}

const char *tc_graph_error(const tc_graph *g) {
  return g->err;
}

tc_graph *tc_graph_new(const char *network, int batch) {
  tc_graph *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  g->arena = th_arena_new(1 << 20);
  if (!g->arena) goto fail_arena;
  g->network = th_arena_strdup(g->arena, network ? network : "graph");
  if (!g->network) goto fail_name;
  g->batch = batch;
  g->output = -1;
  return g;
fail_name:
  th_arena_free(g->arena);
fail_arena:
  free(g);
  return NULL;
}

void tc_graph_free(tc_graph *g) {
  if (!g) return;
  th_arena_free(g->arena);
  free(g->nodes);
  free(g->params);
  free(g);
}

int64_t tc_tensor_numel(const tc_tensor *t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
  return n;
}

static int tc__node(tc_graph *g, tc_op op, const char *name, int n, const int *inputs) {
  if (g->err[0]) return -1;
  if (n > TC_MAX_INPUTS) {
    tc__err(g, "%s: too many inputs (%d)", tc_op_name(op), n);
    return -1;
  }
  for (int i = 0; i < n; i++) {
    if (inputs[i] < 0 || inputs[i] >= g->nnodes) {
      tc__err(g, "%s: bad input node %d", tc_op_name(op), inputs[i]);
      return -1;
    }
  }
  if (g->nnodes == g->node_cap) {
    int cap = g->node_cap ? g->node_cap * 2 : 64;
    tc_node *nn = realloc(g->nodes, (size_t)cap * sizeof *nn);
    if (!nn) {
      tc__err(g, "out of memory");
      return -1;
    }
    g->nodes = nn;
    g->node_cap = cap;
  }
  int id = g->nnodes++;
  tc_node *nd = &g->nodes[id];
  memset(nd, 0, sizeof *nd);
  nd->op = op;
  nd->name = name ? th_arena_strdup(g->arena, name) : NULL;
  nd->ninputs = n;
  for (int i = 0; i < n; i++) nd->inputs[i] = inputs[i];
  nd->weight = nd->bias = nd->gamma = nd->beta = nd->mean = nd->var = -1;
  nd->out.cb = 1;
  nd->out.offset = -1;
  nd->groups = 1;
  g->output = id;
  return id;
}

int tc_graph_param(tc_graph *g, const char *name, int ndim, const int64_t *shape, int init, int fan_in) {
  if (g->err[0]) return -1;
  if (g->nparams == g->param_cap) {
    int cap = g->param_cap ? g->param_cap * 2 : 64;
    tc_param *np = realloc(g->params, (size_t)cap * sizeof *np);
    if (!np) {
      tc__err(g, "out of memory");
      return -1;
    }
    g->params = np;
    g->param_cap = cap;
  }
  int id = g->nparams++;
  tc_param *p = &g->params[id];
  memset(p, 0, sizeof *p);
  p->name = th_arena_strdup(g->arena, name);
  if (!p->name) {
    tc__err(g, "out of memory");
    return -1;
  }
  p->ndim = ndim;
  p->numel = 1;
  for (int i = 0; i < ndim; i++) {
    p->shape[i] = shape[i];
    p->numel *= shape[i];
  }
  p->init = init;
  p->is_buffer = init == TC_INIT_MEAN || init == TC_INIT_VAR;
  p->scale = 1.0f;
  p->fan_in = fan_in;
  p->used = 1;
  return id;
}

int tc_graph_find_param(const tc_graph *g, const char *name) {
  for (int i = 0; i < g->nparams; i++)
    if (strcmp(g->params[i].name, name) == 0) return i;
  return -1;
}

static int tc__named_param(tc_graph *g, const char *prefix, const char *suffix, int ndim,
                           const int64_t *shape, int init, int fan_in) {
  char nm[256];
  int k = snprintf(nm, sizeof nm, "%s%s%s", prefix, prefix[0] ? "." : "", suffix);
  if (k < 0 || (size_t)k >= sizeof nm) {
    tc__err(g, "parameter name too long: %s", prefix);
    return -1;
  }
  return tc_graph_param(g, nm, ndim, shape, init, fan_in);
}

static const tc_tensor *tc__in(tc_graph *g, int x) {
  if (x < 0 || x >= g->nnodes) return NULL;
  return &g->nodes[x].out;
}

int tc_graph_input(tc_graph *g, int c, int h, int w) {
  int id = tc__node(g, TC_OP_INPUT, "input", 0, NULL);
  if (id < 0) return -1;
  if (c <= 0 || h <= 0 || w <= 0 || g->batch <= 0) {
    tc__err(g, "input: bad shape %dx%dx%dx%d", g->batch, c, h, w);
    return -1;
  }
  tc_tensor *t = &g->nodes[id].out;
  t->ndim = 4;
  t->shape[0] = g->batch;
  t->shape[1] = c;
  t->shape[2] = h;
  t->shape[3] = w;
  g->in_c = c;
  g->in_h = h;
  g->in_w = w;
  return id;
}

static int tc__need4(tc_graph *g, int x, const char *what) {
  const tc_tensor *t = tc__in(g, x);
  if (!t || t->ndim != 4) {
    tc__err(g, "%s: input must be a 4-D tensor", what);
    return 0;
  }
  return 1;
}

int tc_graph_conv(tc_graph *g, const char *name, int x, int oc, int kh, int kw, int sh, int sw, int ph,
                  int pw, int groups, int bias) {
  if (g->err[0] || !tc__need4(g, x, name)) return -1;
  tc_tensor in = g->nodes[x].out;
  int c = in.shape[1];
  if (groups <= 0 || c % groups || oc % groups || oc <= 0 || kh <= 0 || kw <= 0 || sh <= 0 || sw <= 0) {
    tc__err(g, "%s: bad conv attributes (c %d oc %d groups %d)", name, c, oc, groups);
    return -1;
  }
  int oh = (in.shape[2] + 2 * ph - kh) / sh + 1;
  int ow = (in.shape[3] + 2 * pw - kw) / sw + 1;
  if (in.shape[2] + 2 * ph < kh || in.shape[3] + 2 * pw < kw || oh <= 0 || ow <= 0) {
    tc__err(g, "%s: input %dx%d too small for a %dx%d kernel", name, in.shape[2], in.shape[3], kh, kw);
    return -1;
  }
  int id = tc__node(g, TC_OP_CONV2D, name, 1, &x);
  if (id < 0) return -1;
  int64_t ws[4] = {oc, c / groups, kh, kw};
  int fan_in = c / groups * kh * kw;
  int w = tc__named_param(g, name, "weight", 4, ws, TC_INIT_WEIGHT, fan_in);
  int b = -1;
  if (bias) {
    int64_t bs[1] = {oc};
    b = tc__named_param(g, name, "bias", 1, bs, TC_INIT_BIAS, fan_in);
  }
  if (w < 0 || (bias && b < 0)) return -1;
  tc_node *nd = &g->nodes[id];
  nd->oc = oc;
  nd->kh = kh;
  nd->kw = kw;
  nd->sh = sh;
  nd->sw = sw;
  nd->pt = nd->pb = ph;
  nd->pl = nd->pr = pw;
  nd->groups = groups;
  nd->weight = w;
  nd->bias = b;
  nd->out.ndim = 4;
  nd->out.shape[0] = in.shape[0];
  nd->out.shape[1] = oc;
  nd->out.shape[2] = oh;
  nd->out.shape[3] = ow;
  return id;
}

int tc_graph_bn(tc_graph *g, const char *name, int x, float eps) {
  if (g->err[0] || !tc__need4(g, x, name)) return -1;
  int id = tc__node(g, TC_OP_BATCH_NORM, name, 1, &x);
  if (id < 0) return -1;
  int64_t s[1] = {g->nodes[x].out.shape[1]};
  int ga = tc__named_param(g, name, "weight", 1, s, TC_INIT_GAMMA, 0);
  int be = tc__named_param(g, name, "bias", 1, s, TC_INIT_BETA, 0);
  int me = tc__named_param(g, name, "running_mean", 1, s, TC_INIT_MEAN, 0);
  int va = tc__named_param(g, name, "running_var", 1, s, TC_INIT_VAR, 0);
  if (ga < 0 || be < 0 || me < 0 || va < 0) return -1;
  tc_node *nd = &g->nodes[id];
  nd->gamma = ga;
  nd->beta = be;
  nd->mean = me;
  nd->var = va;
  nd->eps = eps;
  nd->out = g->nodes[x].out;
  return id;
}

static int tc__unary(tc_graph *g, tc_op op, int x) {
  if (g->err[0] || !tc__in(g, x)) {
    tc__err(g, "%s: bad input", tc_op_name(op));
    return -1;
  }
  int id = tc__node(g, op, NULL, 1, &x);
  if (id < 0) return -1;
  g->nodes[id].out = g->nodes[x].out;
  return id;
}

int tc_graph_relu(tc_graph *g, int x) {
  return tc__unary(g, TC_OP_RELU, x);
}

int tc_graph_clip(tc_graph *g, int x, float lo, float hi) {
  int id = tc__unary(g, TC_OP_CLIP, x);
  if (id < 0) return -1;
  g->nodes[id].clip_min = lo;
  g->nodes[id].clip_max = hi;
  return id;
}

int tc_graph_dropout(tc_graph *g, int x) {
  return tc__unary(g, TC_OP_DROPOUT, x);
}

int tc_graph_softmax(tc_graph *g, int x) {
  return tc__unary(g, TC_OP_SOFTMAX, x);
}

int tc_graph_add(tc_graph *g, int a, int b) {
  const tc_tensor *ta = tc__in(g, a), *tb = tc__in(g, b);
  if (g->err[0] || !ta || !tb) return -1;
  if (ta->ndim != tb->ndim || memcmp(ta->shape, tb->shape, sizeof ta->shape) != 0) {
    tc__err(g, "add: shapes of nodes %d and %d differ", a, b);
    return -1;
  }
  int xs[2] = {a, b};
  int id = tc__node(g, TC_OP_ADD, NULL, 2, xs);
  if (id < 0) return -1;
  g->nodes[id].out = g->nodes[a].out;
  return id;
}

static int tc__pool(tc_graph *g, tc_op op, int x, int k, int s, int p, int ceil_mode) {
  if (g->err[0] || !tc__need4(g, x, tc_op_name(op))) return -1;
  tc_tensor in = g->nodes[x].out;
  if (k <= 0 || s <= 0 || p < 0 || 2 * p > k) {
    tc__err(g, "%s: bad window k%d s%d p%d", tc_op_name(op), k, s, p);
    return -1;
  }
  int dims[2], pad_end[2];
  for (int d = 0; d < 2; d++) {
    int size = in.shape[2 + d];
    int span = size + 2 * p - k;
    if (span < 0) {
      tc__err(g, "%s: input %d too small for a %d window", tc_op_name(op), size, k);
      return -1;
    }
    int o = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    if (ceil_mode && (o - 1) * s >= size + p) o--; /* torch: the last window must start inside */
    dims[d] = o;
    pad_end[d] = (o - 1) * s + k - size - p; /* may exceed p in ceil mode */
    if (pad_end[d] < 0) pad_end[d] = p; /* floor mode leaves some rows unread; keep the nominal pad */
  }
  int id = tc__node(g, op, NULL, 1, &x);
  if (id < 0) return -1;
  tc_node *nd = &g->nodes[id];
  nd->kh = nd->kw = k;
  nd->sh = nd->sw = s;
  nd->pt = nd->pl = p;
  nd->pb = pad_end[0] > p ? pad_end[0] : p;
  nd->pr = pad_end[1] > p ? pad_end[1] : p;
  nd->out = in;
  nd->out.shape[2] = dims[0];
  nd->out.shape[3] = dims[1];
  return id;
}

int tc_graph_max_pool(tc_graph *g, int x, int k, int s, int p, int ceil_mode) {
  return tc__pool(g, TC_OP_MAX_POOL, x, k, s, p, ceil_mode);
}

int tc_graph_avg_pool(tc_graph *g, int x, int k, int s, int p, int count_include_pad) {
  int id = tc__pool(g, TC_OP_AVG_POOL, x, k, s, p, 0);
  if (id >= 0) g->nodes[id].count_include_pad = count_include_pad;
  return id;
}

int tc_graph_global_avg_pool(tc_graph *g, int x) {
  if (g->err[0] || !tc__need4(g, x, "global_avg_pool")) return -1;
  int id = tc__node(g, TC_OP_GLOBAL_AVG_POOL, NULL, 1, &x);
  if (id < 0) return -1;
  tc_node *nd = &g->nodes[id];
  nd->out = g->nodes[x].out;
  nd->out.shape[2] = nd->out.shape[3] = 1;
  return id;
}

int tc_graph_adaptive_avg_pool(tc_graph *g, int x, int oh, int ow) {
  if (g->err[0] || !tc__need4(g, x, "adaptive_avg_pool")) return -1;
  if (oh <= 0 || ow <= 0) {
    tc__err(g, "adaptive_avg_pool: bad output size %dx%d", oh, ow);
    return -1;
  }
  if (oh == 1 && ow == 1) return tc_graph_global_avg_pool(g, x);
  int id = tc__node(g, TC_OP_ADAPTIVE_AVG_POOL, NULL, 1, &x);
  if (id < 0) return -1;
  tc_node *nd = &g->nodes[id];
  nd->oh_target = oh;
  nd->ow_target = ow;
  nd->out = g->nodes[x].out;
  nd->out.shape[2] = oh;
  nd->out.shape[3] = ow;
  return id;
}

int tc_graph_concat(tc_graph *g, int n, const int *xs) {
  if (g->err[0]) return -1;
  if (n < 1 || n > TC_MAX_INPUTS) {
    tc__err(g, "concat: %d inputs", n);
    return -1;
  }
  int c = 0;
  for (int i = 0; i < n; i++) {
    if (!tc__need4(g, xs[i], "concat")) return -1;
    const tc_tensor *t = &g->nodes[xs[i]].out, *t0 = &g->nodes[xs[0]].out;
    if (t->shape[0] != t0->shape[0] || t->shape[2] != t0->shape[2] || t->shape[3] != t0->shape[3]) {
      tc__err(g, "concat: input %d has shape %dx%dx%d, expected %dx?x%dx%d", i, t->shape[0],
              t->shape[2], t->shape[3], t0->shape[0], t0->shape[2], t0->shape[3]);
      return -1;
    }
    c += t->shape[1];
  }
  int id = tc__node(g, TC_OP_CONCAT, NULL, n, xs);
  if (id < 0) return -1;
  g->nodes[id].out = g->nodes[xs[0]].out;
  g->nodes[id].out.shape[1] = c;
  return id;
}

int tc_graph_flatten(tc_graph *g, int x) {
  const tc_tensor *t = tc__in(g, x);
  if (g->err[0] || !t) return -1;
  int64_t k = 1;
  for (int i = 1; i < t->ndim; i++) k *= t->shape[i];
  int id = tc__node(g, TC_OP_FLATTEN, NULL, 1, &x);
  if (id < 0) return -1;
  tc_node *nd = &g->nodes[id];
  nd->out.ndim = 2;
  nd->out.shape[0] = g->nodes[x].out.shape[0];
  nd->out.shape[1] = (int)k;
  return id;
}

int tc_graph_dense(tc_graph *g, const char *name, int x, int units, int bias) {
  const tc_tensor *t = tc__in(g, x);
  if (g->err[0] || !t) return -1;
  if (t->ndim != 2 || units <= 0) {
    tc__err(g, "%s: dense needs a 2-D input (flatten first)", name);
    return -1;
  }
  int k = t->shape[1];
  int id = tc__node(g, TC_OP_DENSE, name, 1, &x);
  if (id < 0) return -1;
  int64_t ws[2] = {units, k};
  int w = tc__named_param(g, name, "weight", 2, ws, TC_INIT_DENSE_WEIGHT, k);
  int b = -1;
  if (bias) {
    int64_t bs[1] = {units};
    b = tc__named_param(g, name, "bias", 1, bs, TC_INIT_BIAS, k);
  }
  if (w < 0 || (bias && b < 0)) return -1;
  tc_node *nd = &g->nodes[id];
  nd->oc = units;
  nd->weight = w;
  nd->bias = b;
  nd->out.ndim = 2;
  nd->out.shape[0] = g->nodes[x].out.shape[0];
  nd->out.shape[1] = units;
  return id;
}

int64_t tc_graph_param_count(const tc_graph *g) {
  int64_t n = 0;
  for (int i = 0; i < g->nparams; i++)
    if (!g->params[i].is_buffer && g->params[i].used) n += g->params[i].numel;
  return n;
}

double tc_graph_flops(const tc_graph *g) {
  double f = 0;
  for (int i = 0; i < g->nnodes; i++) {
    const tc_node *nd = &g->nodes[i];
    if (nd->dead) continue;
    if (nd->op == TC_OP_CONV2D) {
      int c = g->nodes[nd->inputs[0]].out.shape[1];
      f += 2.0 * (double)tc_tensor_numel(&nd->out) * (c / nd->groups) * nd->kh * nd->kw;
    } else if (nd->op == TC_OP_DENSE) {
      f += 2.0 * (double)tc_tensor_numel(&nd->out) * g->nodes[nd->inputs[0]].out.shape[1];
    }
  }
  return f;
}

th_status tc_graph_alloc_params(tc_graph *g) {
  for (int i = 0; i < g->nparams; i++) {
    tc_param *p = &g->params[i];
    if (p->data) continue;
    p->data = th_arena_alloc(g->arena, (size_t)p->numel * sizeof(float));
    if (!p->data) return TH_ERR_NOMEM;
  }
  g->has_data = 1;
  return TH_OK;
}

th_status tc_graph_to_json(const tc_graph *g, th_buf *b) {
  json_t *root = json_object();
  json_t *nodes = json_array();
  if (!root || !nodes) {
    json_decref(root);
    json_decref(nodes);
    return TH_ERR_NOMEM;
  }
  json_object_set_new(root, "network", json_string(g->network));
  json_object_set_new(root, "batch", json_integer(g->batch));
  json_object_set_new(root, "output", json_integer(g->output));
  for (int i = 0; i < g->nnodes; i++) {
    const tc_node *nd = &g->nodes[i];
    if (nd->dead) continue;
    json_t *o = json_object();
    json_object_set_new(o, "id", json_integer(i));
    json_object_set_new(o, "op", json_string(tc_op_name(nd->op)));
    if (nd->name) json_object_set_new(o, "name", json_string(nd->name));
    json_t *in = json_array(), *sh = json_array();
    for (int k = 0; k < nd->ninputs; k++) json_array_append_new(in, json_integer(nd->inputs[k]));
    for (int k = 0; k < nd->out.ndim; k++) json_array_append_new(sh, json_integer(nd->out.shape[k]));
    json_object_set_new(o, "inputs", in);
    json_object_set_new(o, "shape", sh);
    json_object_set_new(o, "channel_block", json_integer(nd->out.cb));
    if (nd->out.offset >= 0) json_object_set_new(o, "offset", json_integer(nd->out.offset));
    if (nd->op == TC_OP_CONV2D || nd->op == TC_OP_MAX_POOL || nd->op == TC_OP_AVG_POOL) {
      json_object_set_new(o, "kernel", json_pack("[i,i]", nd->kh, nd->kw));
      json_object_set_new(o, "stride", json_pack("[i,i]", nd->sh, nd->sw));
      json_object_set_new(o, "pad", json_pack("[i,i,i,i]", nd->pt, nd->pl, nd->pb, nd->pr));
    }
    if (nd->op == TC_OP_CONV2D) json_object_set_new(o, "groups", json_integer(nd->groups));
    if (nd->op == TC_OP_CONV2D || nd->op == TC_OP_DENSE || nd->op == TC_OP_ADD) {
      json_t *epi = json_array();
      if (nd->bias >= 0) json_array_append_new(epi, json_string("bias"));
      if (nd->epilogue & TC_EPI_RESIDUAL) json_array_append_new(epi, json_string("residual"));
      if (nd->epilogue & TC_EPI_RELU) json_array_append_new(epi, json_string("relu"));
      if (nd->epilogue & TC_EPI_CLIP) json_array_append_new(epi, json_string("clip"));
      json_object_set_new(o, "epilogue", epi);
    }
    if (nd->weight >= 0) json_object_set_new(o, "weight", json_string(g->params[nd->weight].name));
    json_array_append_new(nodes, o);
  }
  json_object_set_new(root, "nodes", nodes);
  char *s = json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
  json_decref(root);
  if (!s) return TH_ERR_NOMEM;
  th_status rc = th_buf_append(b, s, strlen(s));
  free(s);
  return rc;
}
