/* The graph constructors (tc_graph_<op>): one function per operator that checks its inputs' shapes
 * and dtypes, infers the output tensor and appends the node, recording the first error on the graph
 * instead of aborting, so a bad zoo definition or a too-small input size is reported as a status.
 * The node table, the parameters and the checks they share are in graph.c (graph_int.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "graph_int.h"
#include "workload.h"

int tc_graph_input(tc_graph *g, int c, int h, int w) {
  int shape[4] = {g->batch, c, h, w};
  int id = tc_graph_input_tensor(g, "input", TC_DTYPE_F32, 4, shape);
  if (id < 0) return -1;
  g->in_c = c;
  g->in_h = h;
  g->in_w = w;
  return id;
}

int tc_graph_input_tensor(tc_graph *g, const char *name, int dtype, int ndim, const int *shape) {
  if (g->err[0]) return -1;
  if (!name || !name[0] || g->ninputs >= TC_MAX_IO || tc_dtype_size(dtype) == 0 || ndim < 0 ||
      ndim > TC_MAX_DIMS) {
    tc__err(g, "input %s: bad name, dtype, rank or too many inputs", name ? name : "(null)");
    return -1;
  }
  for (int i = 0; i < g->ninputs; i++)
    if (strcmp(g->nodes[g->inputs[i]].name, name) == 0) {
      tc__err(g, "input %s: declared twice", name);
      return -1;
    }
  int64_t numel = 1;
  for (int d = 0; d < ndim; d++) {
    numel *= shape[d] > 0 ? shape[d] : 0;
    if (shape[d] <= 0 || numel > (int64_t)1 << 31) {
      tc__err(g, "input %s: bad shape (dimension %d is %d)", name, d, shape[d]);
      return -1;
    }
  }
  int id = tc__node(g, TC_OP_INPUT, name, 0, NULL);
  if (id < 0) return -1;
  tc_tensor *t = &g->nodes[id].out;
  t->ndim = ndim;
  t->dtype = dtype;
  for (int d = 0; d < ndim; d++) t->shape[d] = shape[d];
  g->inputs[g->ninputs++] = id;
  return id;
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

static int tc__binary(tc_graph *g, tc_op op, int a, int b) {
  const tc_tensor *ta = tc__in(g, a), *tb = tc__in(g, b);
  if (g->err[0]) return -1;
  if (!ta || !tb) {
    tc__err(g, "%s: bad input node", tc_op_name(op));
    return -1;
  }
  if (ta->dtype == TC_DTYPE_I64 && tb->dtype == TC_DTYPE_I64) /* int64: the binary family's */
    return tc_graph_binary(g, a, b,
                           op == TC_OP_ADD   ? TC_BINARY_ADD
                           : op == TC_OP_MUL ? TC_BINARY_MUL
                           : op == TC_OP_SUB ? TC_BINARY_SUB
                                             : TC_BINARY_DIV);
  tc_tensor out;
  if (!tc__broadcast(g, tc_op_name(op), ta, tb, &out)) return -1;
  int xs[2] = {a, b};
  int id = tc__node(g, op, NULL, 2, xs);
  if (id < 0) return -1;
  g->nodes[id].out = out;
  return id;
}

int tc_graph_add(tc_graph *g, int a, int b) {
  return tc__binary(g, TC_OP_ADD, a, b);
}

int tc_graph_mul(tc_graph *g, int a, int b) {
  return tc__binary(g, TC_OP_MUL, a, b);
}

int tc_graph_sub(tc_graph *g, int a, int b) {
  return tc__binary(g, TC_OP_SUB, a, b);
}

int tc_graph_div(tc_graph *g, int a, int b) {
  return tc__binary(g, TC_OP_DIV, a, b);
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
  g->nodes[id].axis = 1;
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
  char wn[256], bn[256];
  int k1 = snprintf(wn, sizeof wn, "%s%sweight", name ? name : "", name && name[0] ? "." : "");
  int k2 = snprintf(bn, sizeof bn, "%s%sbias", name ? name : "", name && name[0] ? "." : "");
  if (k1 < 0 || (size_t)k1 >= sizeof wn || k2 < 0 || (size_t)k2 >= sizeof bn) {
    tc__err(g, "parameter name too long: %s", name);
    return -1;
  }
  return tc_graph_dense_named(g, name, x, units, wn, bias ? bn : NULL);
}

int tc_graph_dense_named(tc_graph *g, const char *name, int x, int units, const char *weight_name,
                         const char *bias_name) {
  const tc_tensor *t = tc__in(g, x);
  if (g->err[0] || !t) return -1;
  char s[96];
  if (t->ndim < 2 || t->cb != 1 || t->dtype != TC_DTYPE_F32 || units <= 0) {
    tc__err(g, "%s: dense needs a float32 input of rank >= 2 (flatten a map first), got %s %s", name,
            tc_dtype_name(t->dtype), tc__shape_str(t, s, sizeof s));
    return -1;
  }
  tc_tensor out = *t;
  int k = t->shape[t->ndim - 1];
  int id = tc__node(g, TC_OP_DENSE, name, 1, &x);
  if (id < 0) return -1;
  int64_t ws[2] = {units, k};
  int w = tc_graph_param(g, weight_name, 2, ws, TC_INIT_DENSE_WEIGHT, k);
  int b = -1;
  if (bias_name) {
    int64_t bs[1] = {units};
    b = tc_graph_param(g, bias_name, 1, bs, TC_INIT_BIAS, k);
  }
  if (w < 0 || (bias_name && b < 0)) return -1;
  tc_node *nd = &g->nodes[id];
  nd->oc = units;
  nd->weight = w;
  nd->bias = b;
  out.shape[out.ndim - 1] = units;
  out.offset = -1;
  nd->out = out;
  return id;
}

/* ---- tensor ops ---------------------------------------------------------------------------------------- */

int tc_graph_const(tc_graph *g, const char *name, int ndim, const int64_t *shape, int init, int fan_in) {
  if (g->err[0]) return -1;
  if (ndim < 1 || ndim > TC_MAX_DIMS) {
    tc__err(g, "const %s: rank %d is outside 1..%d", name, ndim, TC_MAX_DIMS);
    return -1;
  }
  tc_tensor out;
  memset(&out, 0, sizeof out);
  out.ndim = ndim;
  for (int d = 0; d < ndim; d++) {
    if (shape[d] < 1 || shape[d] > INT32_MAX) {
      tc__err(g, "const %s: bad dimension %d", name, d);
      return -1;
    }
    out.shape[d] = (int)shape[d];
  }
  int p = tc_graph_param(g, name, ndim, shape, init, fan_in);
  if (p < 0) return -1;
  int id = tc__tnode(g, TC_OP_CONST, name, 0, NULL, &out);
  if (id >= 0) g->nodes[id].weight = p;
  return id;
}

int tc_graph_matmul(tc_graph *g, int a, int b, int trans_a, int trans_b, float alpha) {
  const tc_tensor *ta = tc__tin(g, a, "matmul", 0), *tb = tc__tin(g, b, "matmul", 0);
  if (!ta || !tb) return -1;
  char sa[96], sb[96];
  int r = ta->ndim;
  int ok = r >= 2 && tb->ndim == r;
  for (int d = 0; ok && d < r - 2; d++) ok = ta->shape[d] == tb->shape[d];
  int m = ok ? ta->shape[r - (trans_a ? 1 : 2)] : 0, ka = ok ? ta->shape[r - (trans_a ? 2 : 1)] : 0;
  int kb = ok ? tb->shape[r - (trans_b ? 1 : 2)] : 0, n = ok ? tb->shape[r - (trans_b ? 2 : 1)] : 0;
  if (!ok || ka != kb) {
    tc__err(g, "matmul: shapes %s%s and %s%s do not fit (equal ranks >= 2, equal leading dims, equal K)",
            tc__shape_str(ta, sa, sizeof sa), trans_a ? "^T" : "", tc__shape_str(tb, sb, sizeof sb),
            trans_b ? "^T" : "");
    return -1;
  }
  tc_tensor out = *ta;
  out.shape[r - 2] = m;
  out.shape[r - 1] = n;
  int xs[2] = {a, b};
  int id = tc__tnode(g, TC_OP_MATMUL, NULL, 2, xs, &out);
  if (id < 0) return -1;
  g->nodes[id].trans_a = trans_a != 0;
  g->nodes[id].trans_b = trans_b != 0;
  g->nodes[id].alpha = alpha;
  return id;
}

int tc_graph_layer_norm(tc_graph *g, const char *name, int x, float eps) {
  const tc_tensor *t = tc__tin(g, x, "layer_norm", 0);
  if (!t) return -1;
  if (!(eps > 0)) {
    tc__err(g, "%s: eps must be positive", name);
    return -1;
  }
  tc_tensor out = *t;
  int64_t ps[1] = {t->shape[t->ndim - 1]};
  int id = tc__tnode(g, TC_OP_LAYER_NORM, name, 1, &x, &out);
  if (id < 0) return -1;
  int ga = tc__named_param(g, name, "weight", 1, ps, TC_INIT_GAMMA, 0);
  int be = tc__named_param(g, name, "bias", 1, ps, TC_INIT_BETA, 0);
  if (ga < 0 || be < 0) return -1;
  g->nodes[id].gamma = ga;
  g->nodes[id].beta = be;
  g->nodes[id].eps = eps;
  return id;
}

static int tc__tunary(tc_graph *g, tc_op op, int x) {
  const tc_tensor *t = tc__tin(g, x, tc_op_name(op), 0);
  if (!t) return -1;
  tc_tensor out = *t;
  return tc__tnode(g, op, NULL, 1, &x, &out);
}

int tc_graph_gelu(tc_graph *g, int x) {
  return tc__tunary(g, TC_OP_GELU, x);
}

int tc_graph_tanh(tc_graph *g, int x) {
  return tc__tunary(g, TC_OP_TANH, x);
}

int tc_graph_affine(tc_graph *g, int x, float alpha, float shift) {
  int id = tc__tunary(g, TC_OP_AFFINE, x);
  if (id < 0) return -1;
  g->nodes[id].alpha = alpha;
  g->nodes[id].shift = shift;
  return id;
}

int tc_graph_sigmoid(tc_graph *g, int x) {
  return tc__tunary(g, TC_OP_SIGMOID, x);
}

int tc_graph_hard_sigmoid(tc_graph *g, int x, float alpha, float beta) {
  if (!g->err[0] && !(isfinite(alpha) && isfinite(beta))) {
    tc__err(g, "hard_sigmoid: alpha %g and beta %g must be finite", (double)alpha, (double)beta);
    return -1;
  }
  int id = tc__tunary(g, TC_OP_HARD_SIGMOID, x);
  if (id < 0) return -1;
  g->nodes[id].alpha = alpha;
  g->nodes[id].shift = beta;
  return id;
}

int tc_graph_hard_swish(tc_graph *g, int x) {
  return tc__tunary(g, TC_OP_HARD_SWISH, x);
}

int tc_graph_silu(tc_graph *g, int x) {
  return tc__tunary(g, TC_OP_SILU, x);
}

int tc_graph_math(tc_graph *g, int x, int math, float alpha, float beta) {
  if (!g->err[0] && (math < TC_UNARY_EXP || math >= TC_UNARY_COUNT)) {
    tc__err(g, "math: op %d is not an element-wise math op", math);
    return -1;
  }
  if (!g->err[0] && !(isfinite(alpha) && isfinite(beta))) {
    tc__err(g, "math: alpha %g and beta %g must be finite", (double)alpha, (double)beta);
    return -1;
  }
  int id = tc__tunary(g, TC_OP_MATH, x);
  if (id < 0) return -1;
  g->nodes[id].math = math;
  g->nodes[id].alpha = alpha;
  g->nodes[id].shift = beta;
  return id;
}

int tc_graph_cast(tc_graph *g, int x, int dtype) {
  const tc_tensor *t = tc__tin(g, x, "cast", 1);
  if (!t) return -1;
  if (!((dtype == TC_DTYPE_F32 && t->dtype == TC_DTYPE_I64) ||
        (dtype == TC_DTYPE_I64 && t->dtype == TC_DTYPE_F32))) {
    tc__err(g, "cast: only int64 -> float32 and float32 -> int64 are supported (asked %s -> %s)",
            tc_dtype_name(t->dtype), tc_dtype_name(dtype));
    return -1;
  }
  tc_tensor out = *t;
  out.dtype = dtype;
  return tc__tnode(g, TC_OP_CAST, NULL, 1, &x, &out);
}

int tc_graph_embedding(tc_graph *g, const char *name, int idx, int num, int dim) {
  const tc_tensor *t = tc__tin(g, idx, name, 1);
  if (!t) return -1;
  if (t->dtype != TC_DTYPE_I64 || t->ndim >= TC_MAX_DIMS || num < 1 || dim < 1) {
    tc__err(g, "%s: embedding needs int64 indices of rank < %d and a positive table size (got %s)", name,
            TC_MAX_DIMS, tc_dtype_name(t->dtype));
    return -1;
  }
  tc_tensor out = *t;
  out.dtype = TC_DTYPE_F32;
  out.shape[out.ndim++] = dim;
  int id = tc__tnode(g, TC_OP_EMBEDDING, name, 1, &idx, &out);
  if (id < 0) return -1;
  int64_t ws[2] = {num, dim};
  int w = tc__named_param(g, name, "weight", 2, ws, TC_INIT_EMBED, dim);
  if (w < 0) return -1;
  g->nodes[id].weight = w;
  g->nodes[id].oc = dim;
  return id;
}

int tc_graph_reshape(tc_graph *g, int x, int ndim, const int *shape) {
  const tc_tensor *t = tc__tin(g, x, "reshape", 1);
  if (!t) return -1;
  char s[96];
  int64_t numel = tc_tensor_numel(t), known = 1;
  int infer = -1;
  tc_tensor out = *t;
  out.ndim = ndim;
  int ok = ndim >= 1 && ndim <= TC_MAX_DIMS;
  for (int d = 0; ok && d < ndim; d++) {
    if (shape[d] == -1 && infer < 0) infer = d;
    else if (shape[d] >= 1) known *= shape[d];
    else ok = 0;
    out.shape[d] = shape[d];
  }
  if (ok && infer >= 0) {
    ok = known > 0 && numel % known == 0;
    if (ok) out.shape[infer] = (int)(numel / known);
  }
  if (!ok || tc_tensor_numel(&out) != numel) {
    tc__err(g, "reshape: cannot view %s (%lld elements) as the asked %d-D shape", tc__shape_str(t, s, sizeof s),
            (long long)numel, ndim);
    return -1;
  }
  return tc__tnode(g, TC_OP_RESHAPE, NULL, 1, &x, &out);
}

int tc_graph_transpose(tc_graph *g, int x, const int *perm) {
  const tc_tensor *t = tc__tin(g, x, "transpose", 0);
  if (!t) return -1;
  int seen[TC_MAX_DIMS] = {0};
  tc_tensor out = *t;
  for (int d = 0; d < t->ndim; d++) {
    if (perm[d] < 0 || perm[d] >= t->ndim || seen[perm[d]]++) {
      tc__err(g, "transpose: perm is not a permutation of 0..%d", t->ndim - 1);
      return -1;
    }
    out.shape[d] = t->shape[perm[d]];
  }
  /* (not t->ndim: t points into g->nodes, which the new node may have moved) */
  int id = tc__tnode(g, TC_OP_TRANSPOSE, NULL, 1, &x, &out);
  if (id >= 0)
    for (int d = 0; d < out.ndim; d++) g->nodes[id].perm[d] = perm[d];
  return id;
}

int tc_graph_slice(tc_graph *g, int x, int axis, int begin, int end, int step) {
  const tc_tensor *t = tc__tin(g, x, "slice", 0);
  if (!t) return -1;
  if (axis < 0) axis += t->ndim;
  if (axis < 0 || axis >= t->ndim || step < 1) {
    tc__err(g, "slice: axis %d or step %d out of range for a %d-D tensor", axis, step, t->ndim);
    return -1;
  }
  int len = t->shape[axis];
  if (begin < 0) begin += len;
  if (end < 0) end += len;
  begin = begin < 0 ? 0 : begin > len ? len : begin;
  end = end < 0 ? 0 : end > len ? len : end;
  if (end <= begin) {
    tc__err(g, "slice: empty range [%d, %d) along axis %d of length %d", begin, end, axis, len);
    return -1;
  }
  tc_tensor out = *t;
  out.shape[axis] = (end - begin + step - 1) / step;
  int id = tc__tnode(g, TC_OP_SLICE, NULL, 1, &x, &out);
  if (id < 0) return -1;
  tc_node *nd = &g->nodes[id];
  nd->axis = axis;
  nd->begin = begin;
  nd->end = end;
  nd->step = step;
  return id;
}

int tc_graph_select(tc_graph *g, int x, int axis, int index) {
  const tc_tensor *t = tc__tin(g, x, "select", 0);
  if (!t) return -1;
  if (axis < 0) axis += t->ndim;
  if (t->ndim < 2 || axis < 0 || axis >= t->ndim || index < -t->shape[axis] || index >= t->shape[axis]) {
    tc__err(g, "select: index %d along axis %d is out of range", index, axis);
    return -1;
  }
  if (index < 0) index += t->shape[axis];
  int s = tc_graph_slice(g, x, axis, index, index + 1, 1);
  if (s < 0) return -1;
  int shape[TC_MAX_DIMS], k = 0;
  for (int d = 0; d < t->ndim; d++)
    if (d != axis) shape[k++] = g->nodes[x].out.shape[d];
  return tc_graph_reshape(g, s, k, shape);
}

int tc_graph_concat_axis(tc_graph *g, int n, const int *xs, int axis) {
  if (g->err[0]) return -1;
  if (n < 1 || n > TC_MAX_INPUTS) {
    tc__err(g, "concat: %d inputs (1..%d)", n, TC_MAX_INPUTS);
    return -1;
  }
  const tc_tensor *t0 = tc__tin(g, xs[0], "concat", 0);
  if (!t0) return -1;
  if (axis < 0) axis += t0->ndim;
  if (axis < 0 || axis >= t0->ndim) {
    tc__err(g, "concat: axis out of range for a %d-D tensor", t0->ndim);
    return -1;
  }
  tc_tensor out = *t0;
  out.shape[axis] = 0;
  for (int i = 0; i < n; i++) {
    const tc_tensor *t = tc__tin(g, xs[i], "concat", 0);
    if (!t) return -1;
    char s0[96], s1[96];
    int ok = t->ndim == t0->ndim;
    for (int d = 0; ok && d < t->ndim; d++) ok = d == axis || t->shape[d] == t0->shape[d];
    if (!ok) {
      tc__err(g, "concat: input %d has shape %s, which does not fit %s along axis %d", i,
              tc__shape_str(t, s1, sizeof s1), tc__shape_str(t0, s0, sizeof s0), axis);
      return -1;
    }
    out.shape[axis] += t->shape[axis];
  }
  int id = tc__tnode(g, TC_OP_CONCAT, NULL, n, xs, &out);
  if (id >= 0) g->nodes[id].axis = axis;
  return id;
}

int tc_graph_softmax_ex(tc_graph *g, int x, float alpha, int mask) {
  const tc_tensor *t = tc__tin(g, x, "softmax", 0);
  if (!t) return -1;
  int xs[2] = {x, mask};
  if (mask >= 0) {
    const tc_tensor *tm = tc__tin(g, mask, "softmax mask", 0);
    tc_tensor bc;
    if (!tm || !tc__broadcast(g, "softmax mask", t, tm, &bc)) return -1;
    char s0[96], s1[96];
    if (bc.ndim != t->ndim || memcmp(bc.shape, t->shape, sizeof bc.shape) != 0) {
      tc__err(g, "softmax: mask %s must broadcast to the input %s", tc__shape_str(tm, s1, sizeof s1),
              tc__shape_str(t, s0, sizeof s0));
      return -1;
    }
  }
  tc_tensor out = *t;
  int id = tc__tnode(g, TC_OP_SOFTMAX, NULL, mask >= 0 ? 2 : 1, xs, &out);
  if (id >= 0) g->nodes[id].alpha = alpha;
  return id;
}

int tc_graph_expand(tc_graph *g, int x, int ndim, const int *shape) {
  const tc_tensor *t = tc__tin(g, x, "expand", 0);
  if (!t) return -1;
  tc_tensor want, bc;
  memset(&want, 0, sizeof want);
  want.ndim = ndim;
  for (int d = 0; d < ndim && d < TC_MAX_DIMS; d++) want.shape[d] = shape[d];
  if (ndim < t->ndim || ndim > TC_MAX_DIMS || !tc__broadcast(g, "expand", t, &want, &bc)) {
    if (!g->err[0]) tc__err(g, "expand: rank %d is below the input's %d or above %d", ndim, t->ndim, TC_MAX_DIMS);
    return -1;
  }
  if (memcmp(bc.shape, want.shape, sizeof bc.shape) != 0) {
    tc__err(g, "expand: the input does not broadcast to the asked shape");
    return -1;
  }
  return tc__tnode(g, TC_OP_EXPAND, NULL, 1, &x, &bc);
}

int tc_graph_gather(tc_graph *g, int data, int idx, int axis, int elements, int has_ignore,
                    int ignore) {
  const tc_tensor *t = tc__tin(g, data, "gather", 0), *ti = tc__tin(g, idx, "gather indices", 1);
  if (!t || !ti) return -1;
  char s0[96], s1[96];
  tc__shape_str(t, s0, sizeof s0);
  tc__shape_str(ti, s1, sizeof s1);
  if (ti->dtype != TC_DTYPE_I64 || axis < 0 || axis >= t->ndim) {
    tc__err(g, "gather: needs int64 indices (got %s) and an axis in [0, %d) (got %d)",
            tc_dtype_name(ti->dtype), t->ndim, axis);
    return -1;
  }
  tc_tensor out = *t;
  if (elements) {
    int ok = ti->ndim == t->ndim;
    for (int d = 0; ok && d < t->ndim; d++) ok = d == axis || ti->shape[d] <= t->shape[d];
    if (!ok) {
      tc__err(g, "gather elements: indices %s must have the rank of data %s and no larger dims "
              "but on axis %d", s1, s0, axis);
      return -1;
    }
    out = *ti;
  } else {
    if (t->ndim - 1 + ti->ndim > TC_MAX_DIMS) {
      tc__err(g, "gather: data %s and indices %s give more than %d dims", s0, s1, TC_MAX_DIMS);
      return -1;
    }
    out.ndim = 0;
    for (int d = 0; d < axis; d++) out.shape[out.ndim++] = t->shape[d];
    for (int d = 0; d < ti->ndim; d++) out.shape[out.ndim++] = ti->shape[d];
    for (int d = axis + 1; d < t->ndim; d++) out.shape[out.ndim++] = t->shape[d];
  }
  out.dtype = TC_DTYPE_F32;
  int xs[2] = {data, idx};
  int id = tc__tnode(g, TC_OP_GATHER, NULL, 2, xs, &out);
  if (id < 0) return -1;
  g->nodes[id].axis = axis;
  g->nodes[id].gather_elements = elements != 0;
  g->nodes[id].has_ignore = has_ignore != 0;
  g->nodes[id].ignore = has_ignore ? ignore : 0;
  return id;
}

int tc_graph_scatter(tc_graph *g, int data, int idx, int upd, int axis, int red) {
  const tc_tensor *t = tc__tin(g, data, "scatter", 0), *ti = tc__tin(g, idx, "scatter indices", 1),
                  *tu = tc__tin(g, upd, "scatter updates", 0);
  if (!t || !ti || !tu) return -1;
  char s0[96], s1[96], s2[96];
  tc__shape_str(t, s0, sizeof s0);
  tc__shape_str(ti, s1, sizeof s1);
  tc__shape_str(tu, s2, sizeof s2);
  int ok = ti->dtype == TC_DTYPE_I64 && axis >= 0 && axis < t->ndim && red >= 0 &&
           red < TC_SCATTER_COUNT && ti->ndim == t->ndim && tu->ndim == ti->ndim &&
           ti->shape[axis] >= 1;
  for (int d = 0; ok && d < t->ndim; d++)
    ok = tu->shape[d] == ti->shape[d] && (d == axis || ti->shape[d] == t->shape[d]);
  if (!ok) {
    tc__err(g,
            "scatter: int64 indices %s (got %s) and updates %s must have data %s's dims but on "
            "axis %d (of %d), reduction %d in [0, %d)",
            s1, tc_dtype_name(ti->dtype), s2, s0, axis, t->ndim, red, TC_SCATTER_COUNT);
    return -1;
  }
  tc_tensor out = *t;
  out.dtype = TC_DTYPE_F32;
  int xs[3] = {data, idx, upd};
  int id = tc__tnode(g, TC_OP_SCATTER, NULL, 3, xs, &out);
  if (id < 0) return -1;
  g->nodes[id].axis = axis;
  g->nodes[id].math = red;
  return id;
}

int tc_graph_binary(tc_graph *g, int a, int b, int op) {
  const tc_tensor *ta = tc__in(g, a), *tb = tc__in(g, b);
  if (g->err[0]) return -1;
  if (!ta || !tb) {
    tc__err(g, "binary: bad input node");
    return -1;
  }
  int i64 = tb->dtype == TC_DTYPE_I64, mask = op == TC_BINARY_TAKE || op == TC_BINARY_LEAVE;
  if (op < (i64 ? 0 : TC_BINARY_MAX) || op >= TC_BINARY_COUNT || (op == TC_BINARY_MOD && !i64)) {
    tc__err(g, "binary: op %d is not an element-wise binary math op of %s", op,
            tc_dtype_name(tb->dtype));
    return -1;
  }
  if (ta->dtype != (i64 && !mask ? TC_DTYPE_I64 : TC_DTYPE_F32)) {
    tc__err(g,
            "binary: operands %s and %s (both float32 or both int64; a float32 mask for take "
            "and leave)",
            tc_dtype_name(ta->dtype), tc_dtype_name(tb->dtype));
    return -1;
  }
  tc_tensor fa = *ta, fb = *tb, out;
  fa.dtype = fb.dtype = TC_DTYPE_F32; /* the shapes alone broadcast: the dtypes are checked above */
  if (!tc__broadcast(g, "binary", &fa, &fb, &out)) return -1;
  out.dtype = i64 && (op < TC_BINARY_EQ || op > TC_BINARY_NE) ? TC_DTYPE_I64 : TC_DTYPE_F32;
  int xs[2] = {a, b};
  int id = tc__node(g, TC_OP_BINARY, NULL, 2, xs);
  if (id < 0) return -1;
  g->nodes[id].out = out;
  g->nodes[id].math = op;
  return id;
}

int tc_graph_reduce(tc_graph *g, int x, int op) {
  const tc_tensor *t = tc__tin(g, x, "reduce", 0);
  if (!t) return -1;
  if (op < 0 || op >= TC_REDUCE_COUNT) {
    tc__err(g, "reduce: op %d is not a reduction", op);
    return -1;
  }
  tc_tensor out = *t;
  out.shape[out.ndim - 1] = 1;
  if (op >= TC_REDUCE_ARGMAX) out.dtype = TC_DTYPE_I64;
  int id = tc__tnode(g, TC_OP_REDUCE, NULL, 1, &x, &out);
  if (id >= 0) g->nodes[id].math = op;
  return id;
}
