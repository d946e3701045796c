/* The ONNX importer's converters: one function per op type, mapping a node onto the graph builders
 * (graph.h) so that an imported network looks like the zoo's (conv/bn/relu/pool/dense for CNNs;
 * dense, matmul, softmax_ex, layer_norm, gelu, views for transformers) and the same passes and
 * templates apply. Each converter picks the behaviour of the model's opset where ONNX changed an
 * op, and reports what it cannot map as unsupported with the reason (the import goes on and lists
 * every such node). Nodes whose inputs are all constants never get here: onnx_fold.c evaluates
 * them. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "onnx_int.h"
#include "workload.h"

/* ---- helpers
 * ------------------------------------------------------------------------------------------ */

const tc_tensor *tc__ox_t(tc__ox *x, int id) {
  return &x->g->nodes[id].out;
}

/* Input k as a graph node (constants materialised): *id = -1 when it was reported unsupported. */
th_status tc__ox_node_in(tc__ox *x, const Onnx__NodeProto *n, int k, int *id) {
  tc__oxv *v = tc__ox_in(x, n, k);
  *id = -1;
  if (!v) return tc__ox_nfail(x, n, TH_ERR_INVALID, "input %d is missing", k);
  return tc__ox_tensor(x, n, v, id);
}

/* A float input node: reports int64 ones (the graph's arithmetic is float32). */
th_status tc__ox_float_in(tc__ox *x, const Onnx__NodeProto *n, int k, int *id) {
  th_status rc = tc__ox_node_in(x, n, k, id);
  if (rc != TH_OK || *id < 0) return rc;
  if (tc__ox_t(x, *id)->dtype != TC_DTYPE_F32) {
    *id = -1;
    return tc__ox_unsupported(
        x, n, "input %d is an int64 tensor at run time (only float32 arithmetic)", k);
  }
  return TH_OK;
}

/* Input k as a float32 or int64 node (an int64 constant materialised as tc__ox_int_tensor's). */
static th_status tc__ox_num_in(tc__ox *x, const Onnx__NodeProto *n, int k, int *id) {
  tc__oxv *v = tc__ox_in(x, n, k);
  *id = -1;
  if (v && v->kind == TC__OX_CONST && !v->c.fl && v->node < 0)
    return tc__ox_int_tensor(x, n, v, id);
  return tc__ox_node_in(x, n, k, id);
}

th_status tc__ox_num_ins(tc__ox *x, const Onnx__NodeProto *n, int k0, int k1, int *a, int *b) {
  *b = -1;
  th_status rc = tc__ox_num_in(x, n, k0, a);
  if (rc == TH_OK && *a >= 0) rc = tc__ox_num_in(x, n, k1, b);
  if (rc != TH_OK || *a < 0 || *b < 0) {
    *a = *b = -1;
    return rc;
  }
  int da = tc__ox_t(x, *a)->dtype, db = tc__ox_t(x, *b)->dtype;
  if (da != db) {
    *a = *b = -1;
    return tc__ox_unsupported(x, n, "inputs %d and %d are %s and %s (one dtype)", k0, k1,
                              tc_dtype_name(da), tc_dtype_name(db));
  }
  return TH_OK;
}

/* x * alpha + shift, merged into a producing affine (bert's mask: (1 - m) * min is one affine). */
static int tc__ox_affine(tc__ox *x, int id, float alpha, float shift) {
  const tc_node *nd = &x->g->nodes[id];
  if (alpha == 1.0f && shift == 0.0f) return id;
  if (nd->op == TC_OP_AFFINE)
    return tc_graph_affine(x->g, nd->inputs[0], nd->alpha * alpha, nd->shift * alpha + shift);
  return tc_graph_affine(x->g, id, alpha, shift);
}

/* Dims of a graph tensor as int64. */
int tc__ox_tdims(tc__ox *x, int id, int64_t *dims) {
  const tc_tensor *t = tc__ox_t(x, id);
  for (int d = 0; d < t->ndim; d++) dims[d] = t->shape[d];
  return t->ndim;
}

/* Reshapes node id to dims (no node when they are its own); reports a rank or size the graph cannot
 * hold. */
th_status tc__ox_reshape_node(tc__ox *x, const Onnx__NodeProto *n, int id, const int64_t *dims,
                              int r, int *out) {
  const tc_tensor *t = tc__ox_t(x, id);
  *out = -1;
  if (r < 1 || r > TC_MAX_DIMS)
    return tc__ox_unsupported(x, n, "the result has %d dimensions (the graph holds 1..%d)", r,
                              TC_MAX_DIMS);
  int shape[TC_MAX_DIMS], same = r == t->ndim;
  for (int d = 0; d < r; d++) {
    if (dims[d] < 1 || dims[d] > INT_MAX)
      return tc__ox_unsupported(x, n, "dimension %d is %lld", d, (long long)dims[d]);
    shape[d] = (int)dims[d];
    same = same && shape[d] == t->shape[d];
  }
  *out = same ? id : tc_graph_reshape(x->g, id, r, shape);
  return tc__ox_bind_node(x, n, NULL, *out);
}

/* A float weight behind value v: a constant (leading dims of 1 dropped to make it 2-D when want2d),
 * or the 2-D transpose of a materialised constant (*trans toggled). Copies the view into *w. */
static int tc__ox_weight(tc__ox *x, const tc__oxv *v, tc__oxv *w, int *trans) {
  if (v->kind == TC__OX_CONST && v->c.fl && v->c.ndim >= 2) {
    for (int d = 0; d < v->c.ndim - 2; d++)
      if (v->c.dims[d] != 1) return 0;
    *w = *v;
    w->c.ndim = 2;
    w->c.dims[0] = v->c.dims[v->c.ndim - 2];
    w->c.dims[1] = v->c.dims[v->c.ndim - 1];
    return 1;
  }
  if (v->kind != TC__OX_NODE) return 0;
  const tc_node *nd = &x->g->nodes[v->node];
  if (nd->op != TC_OP_TRANSPOSE || nd->out.ndim != 2 || nd->perm[0] != 1) return 0;
  const tc_node *c = &x->g->nodes[nd->inputs[0]];
  if (c->op != TC_OP_CONST || c->weight < 0 || c->weight >= x->pcap || x->pinfo[c->weight].mat < 0)
    return 0;
  const tc__oxv *m = &x->vals[x->pinfo[c->weight].mat];
  if (m->c.ndim != 2) return 0;
  *w = *m;
  *trans = !*trans;
  return 1;
}

/* ---- element-wise
 * ------------------------------------------------------------------------------------------ */

static th_status tc__ox_c_unary(tc__ox *x, const Onnx__NodeProto *n) {
  const char *op = n->op_type;
  float alpha = 0.2f, beta = 0.5f;
  int a;
  th_status rc = TH_OK;
  if (strcmp(op, "HardSigmoid") == 0) {
    rc = tc__ox_attr_f(x, n, "alpha", 0.2f, &alpha);
    if (rc == TH_OK) rc = tc__ox_attr_f(x, n, "beta", 0.5f, &beta);
  }
  if (rc == TH_OK) rc = tc__ox_float_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  int id = strcmp(op, "Relu") == 0        ? tc_graph_relu(x->g, a)
           : strcmp(op, "Tanh") == 0      ? tc_graph_tanh(x->g, a)
           : strcmp(op, "Sigmoid") == 0   ? tc_graph_sigmoid(x->g, a)
           : strcmp(op, "HardSwish") == 0 ? tc_graph_hard_swish(x->g, a)
                                          : tc_graph_hard_sigmoid(x->g, a, alpha, beta);
  return tc__ox_set_node(x, n, 0, id);
}

/* x * sigmoid(x) is silu; x * hard_sigmoid(x) with torch's 1/6 and 0.5 is hard swish (torch exports
 * hardswish so below opset 14). -1 when a * b is neither. */
static int tc__ox_gated(tc__ox *x, int a, int b) {
  for (int side = 0; side < 2; side++) {
    const tc_node *gate = &x->g->nodes[side ? a : b];
    int other = side ? b : a;
    if (gate->ninputs != 1 || gate->inputs[0] != other) continue;
    if (gate->op == TC_OP_SIGMOID) return tc_graph_silu(x->g, other);
    if (gate->op == TC_OP_HARD_SIGMOID && fabsf(gate->alpha - 1.0f / 6) < 1e-6f &&
        gate->shift == 0.5f)
      return tc_graph_hard_swish(x->g, other);
  }
  return -1;
}

static th_status tc__ox_c_identity(tc__ox *x, const Onnx__NodeProto *n) {
  int a;
  th_status rc = TH_OK;
  if (strcmp(n->op_type, "Dropout") == 0) {
    tc__oxv *mask = tc__ox_out(x, n, 1), *train = tc__ox_in(x, n, 2);
    double t = 0;
    if (mask && mask->uses > 0) return tc__ox_unsupported(x, n, "its mask output is used");
    if (train && (!tc__ox_scalar(train, &t) || t != 0))
      return tc__ox_unsupported(x, n, "training_mode is on");
    int64_t is_test = 1; /* opset 6: is_test = 0 (the default) drops at random */
    if (x->opset < 7) rc = tc__ox_attr_i(x, n, "is_test", 0, &is_test);
    if (rc != TH_OK) return rc;
    if (!is_test) return tc__ox_unsupported(x, n, "is_test = 0 (opset 6's training mode)");
  }
  rc = tc__ox_node_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  return tc__ox_set_node(x, n, 0, a);
}

static th_status tc__ox_c_clip(tc__ox *x, const Onnx__NodeProto *n) {
  float lo = -FLT_MAX, hi = FLT_MAX;
  th_status rc = TH_OK;
  if (x->opset < 11) {
    rc = tc__ox_attr_f(x, n, "min", -FLT_MAX, &lo);
    if (rc == TH_OK) rc = tc__ox_attr_f(x, n, "max", FLT_MAX, &hi);
  } else {
    for (int k = 1; k <= 2; k++) {
      tc__oxv *v = tc__ox_in(x, n, k);
      double d;
      if (!v) continue;
      if (!tc__ox_scalar(v, &d))
        return tc__ox_unsupported(x, n, "%s is not a constant scalar", k == 1 ? "min" : "max");
      if (k == 1)
        lo = tc__ox_f32(d);
      else
        hi = tc__ox_f32(d);
    }
  }
  int a;
  if (rc == TH_OK) rc = tc__ox_float_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  int id = lo == 0.0f && hi >= FLT_MAX ? tc_graph_relu(x->g, a) : tc_graph_clip(x->g, a, lo, hi);
  return tc__ox_set_node(x, n, 0, id);
}

static th_status tc__ox_c_binary(tc__ox *x, const Onnx__NodeProto *n) {
  tc__oxv *va = tc__ox_in(x, n, 0), *vb = tc__ox_in(x, n, 1);
  if (!va || !vb || n->n_input != 2) return tc__ox_nfail(x, n, TH_ERR_INVALID, "needs two inputs");
  char op = n->op_type[0]; /* A(dd), S(ub), M(ul), D(iv) */
  double s;
  int id;
  th_status rc;
  for (int side = 0; side < 2; side++) {
    tc__oxv *c = side ? va : vb, *o = side ? vb : va; /* c: a scalar constant, o: the tensor */
    if (c->kind != TC__OX_CONST || !c->c.fl || !tc__ox_scalar(c, &s) || o->kind != TC__OX_NODE)
      continue;
    if (c->c.ndim > tc__ox_t(x, o->node)->ndim) continue; /* it would add dimensions */
    if (tc__ox_t(x, o->node)->dtype != TC_DTYPE_F32) break;
    float f = tc__ox_f32(s);
    if (op == 'A')
      id = tc__ox_affine(x, o->node, 1.0f, f);
    else if (op == 'M')
      id = tc__ox_affine(x, o->node, f, 0.0f);
    else if (op == 'S')
      id = side ? tc__ox_affine(x, o->node, -1.0f, f) : tc__ox_affine(x, o->node, 1.0f, -f);
    else if (side == 0 && s != 0)
      id = tc__ox_affine(x, o->node, tc__ox_f32(1.0 / s), 0.0f);
    else
      continue; /* c / x: a real division */
    return tc__ox_set_node(x, n, 0, id);
  }
  int a, b;
  rc = tc__ox_num_ins(x, n, 0, 1, &a, &b); /* float32, or int64 (graph.h: the binary family) */
  if (rc != TH_OK || a < 0) return rc;
  int64_t ad[TC__OX_RANK], bd[TC__OX_RANK], nb[TC__OX_RANK];
  int ra = tc__ox_tdims(x, a, ad), rb = tc__ox_tdims(x, b, bd), rnb;
  rc = tc__ox_legacy_bcast(x, n, ad, ra, bd, rb, nb, &rnb); /* opset 6's broadcast/axis */
  if (rc == TH_OK && rnb != rb) rc = tc__ox_reshape_node(x, n, b, nb, rnb, &b);
  if (rc != TH_OK || b < 0) return rc;
  if (op == 'M' && (id = tc__ox_gated(x, a, b)) >= 0) return tc__ox_set_node(x, n, 0, id);
  id = op == 'A'   ? tc_graph_add(x->g, a, b)
       : op == 'S' ? tc_graph_sub(x->g, a, b)
       : op == 'M' ? tc_graph_mul(x->g, a, b)
                   : tc_graph_div(x->g, a, b);
  return tc__ox_set_node(x, n, 0, id);
}

/* The element-wise math ops of one input: the TC_UNARY_* each becomes and its attributes' ONNX
 * defaults (alpha, and Selu's gamma as beta). Neg is an affine -x. */
static const struct {
  const char *op;
  int math;
  float alpha, beta;
} tc__ox_maths[] = {
    {"Exp", TC_UNARY_EXP, 0, 0},
    {"Log", TC_UNARY_LOG, 0, 0},
    {"Abs", TC_UNARY_ABS, 0, 0},
    {"Sqrt", TC_UNARY_SQRT, 0, 0},
    {"Reciprocal", TC_UNARY_RECIPROCAL, 0, 0},
    {"Floor", TC_UNARY_FLOOR, 0, 0},
    {"Ceil", TC_UNARY_CEIL, 0, 0},
    {"Round", TC_UNARY_ROUND, 0, 0},
    {"Sign", TC_UNARY_SIGN, 0, 0},
    {"Erf", TC_UNARY_ERF, 0, 0},
    {"Softplus", TC_UNARY_SOFTPLUS, 0, 0},
    {"Softsign", TC_UNARY_SOFTSIGN, 0, 0},
    {"Elu", TC_UNARY_ELU, 1.0f, 0},
    {"Selu", TC_UNARY_SELU, 1.67326319217681884765625f, 1.05070102214813232421875f},
    {"LeakyRelu", TC_UNARY_LEAKY_RELU, 0.01f, 0},
    {"Celu", TC_UNARY_CELU, 1.0f, 0},
    {"ThresholdedRelu", TC_UNARY_THRESHOLDED_RELU, 1.0f, 0},
    {"Sinh", TC_UNARY_SINH, 0, 0},
    {"Cosh", TC_UNARY_COSH, 0, 0},
    {"Asinh", TC_UNARY_ASINH, 0, 0},
    {"Acosh", TC_UNARY_ACOSH, 0, 0},
    {"Atanh", TC_UNARY_ATANH, 0, 0},
    {"Sin", TC_UNARY_SIN, 0, 0},
    {"Cos", TC_UNARY_COS, 0, 0},
    {"Tan", TC_UNARY_TAN, 0, 0},
    {"Asin", TC_UNARY_ASIN, 0, 0},
    {"Acos", TC_UNARY_ACOS, 0, 0},
    {"Atan", TC_UNARY_ATAN, 0, 0},
};

static th_status tc__ox_c_math(tc__ox *x, const Onnx__NodeProto *n) {
  const char *op = n->op_type;
  int a;
  th_status rc = tc__ox_float_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  if (strcmp(op, "Neg") == 0)
    return tc__ox_set_node(x, n, 0, tc_graph_affine(x->g, a, -1.0f, 0.0f));
  for (size_t i = 0; i < sizeof tc__ox_maths / sizeof tc__ox_maths[0]; i++) {
    if (strcmp(tc__ox_maths[i].op, op) != 0) continue;
    float alpha = tc__ox_maths[i].alpha, beta = tc__ox_maths[i].beta;
    if (alpha != 0) rc = tc__ox_attr_f(x, n, "alpha", alpha, &alpha);
    if (rc == TH_OK && beta != 0) rc = tc__ox_attr_f(x, n, "gamma", beta, &beta);
    if (rc != TH_OK) return rc;
    if (!isfinite(alpha) || !isfinite(beta) ||
        (tc__ox_maths[i].math == TC_UNARY_CELU && alpha == 0))
      return tc__ox_nfail(x, n, TH_ERR_INVALID,
                          "alpha %g and gamma %g must be finite (alpha nonzero for Celu)",
                          (double)alpha, (double)beta);
    return tc__ox_set_node(x, n, 0, tc_graph_math(x->g, a, tc__ox_maths[i].math, alpha, beta));
  }
  return tc__ox_nfail(x, n, TH_ERR_INTERNAL, "no element-wise math op");
}

/* ---- CNN ops
 * -----------------------------------------------------------------------------------------------
 */

/* A 2-value window attribute (kernel_shape, strides) into out, which keeps its preset values when
 * the attribute is absent; both must end up in 1..1024. A 1-D window (one) has 1 value, the
 * width's (its height is 1). */
static th_status tc__ox_pair(tc__ox *x, const Onnx__NodeProto *n, const char *name, int one,
                             int64_t *out) {
  int64_t a[8];
  int cnt;
  th_status rc = tc__ox_attr_ints(x, n, name, a, 8, &cnt);
  if (rc != TH_OK) return rc;
  if (cnt >= 0 && cnt != 2 - one)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "%s must have %d values (%d-D)", name, 2 - one,
                        2 - one);
  if (cnt == 1 && one) {
    out[0] = 1;
    out[1] = a[0];
  } else if (cnt == 2) {
    out[0] = a[0];
    out[1] = a[1];
  }
  if (out[0] < 1 || out[1] < 1 || out[0] > 1024 || out[1] > 1024)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "%s %lldx%lld (1..1024)", name, (long long)out[0],
                        (long long)out[1]);
  return TH_OK;
}

/* The window attributes of Conv and the pools: kernel (given, or from the attribute), strides,
 * dilations and pads; pads of a pending zero Pad on the input are added. With dil (Conv), dil gets
 * the dilations and k the dilated kernel's extent, (k - 1) * d + 1; without, dilations must be 1.
 * *in = the input node; a 1-D window's [N, C, L] input is viewed as [N, C, 1, L] (the caller views
 * its result back). */
static th_status tc__ox_window(tc__ox *x, const Onnx__NodeProto *n, int64_t *k, int64_t *s,
                               int64_t *dil, int64_t *pads, int *in, int *padded) {
  tc__oxv *v = tc__ox_in(x, n, 0);
  *in = -1;
  *padded = 0;
  if (!v) return tc__ox_nfail(x, n, TH_ERR_INVALID, "input 0 is missing");
  int id = -1;
  if (v->kind == TC__OX_PAD) {
    id = v->node;
    *padded = 1;
  } else {
    th_status rc = tc__ox_float_in(x, n, 0, &id);
    if (rc != TH_OK || id < 0) return rc;
  }
  const tc_tensor *t = tc__ox_t(x, id);
  int one = t->ndim == 3;
  if (one && *padded) return tc__ox_unsupported(x, n, "a Pad before a 1-D window");
  if (one) {
    int s4[4] = {t->shape[0], t->shape[1], 1, t->shape[2]};
    id = tc_graph_reshape(x->g, id, 4, s4);
    th_status rc = tc__ox_bind_node(x, n, NULL, id);
    if (rc != TH_OK) return rc;
    t = tc__ox_t(x, id);
  } else if (t->ndim != 4) {
    return tc__ox_unsupported(
        x, n, "only 1-D and 2-D windows over NCL/NCHW maps (the input has %d dimensions)", t->ndim);
  }
  int64_t a[8], hw[2] = {t->shape[2], t->shape[3]};
  int cnt;
  th_status rc = tc__ox_attr_ints(x, n, "kernel_shape", a, 8, &cnt);
  if (rc != TH_OK) return rc;
  if (cnt >= 0 && k[0] > 0 && cnt == 2 - one &&
      (one ? a[0] != k[1] : (a[0] != k[0] || a[1] != k[1])))
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "kernel_shape does not fit the weights");
  s[0] = s[1] = 1;
  rc = tc__ox_pair(x, n, "kernel_shape", one, k);
  if (rc == TH_OK) rc = tc__ox_pair(x, n, "strides", one, s);
  if (rc != TH_OK) return rc;
  rc = tc__ox_attr_ints(x, n, "dilations", a, 8, &cnt);
  if (rc != TH_OK) return rc;
  if (cnt >= 0 && cnt != 2 - one)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "dilations must have %d values", 2 - one);
  if (one && cnt == 1) {
    a[1] = a[0];
    a[0] = 1;
    cnt = 2;
  }
  for (int i = 0; i < cnt; i++) {
    if (a[i] < 1 || a[i] > 64)
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "dilations %lld (1..64)", (long long)a[i]);
    if (a[i] != 1 && !dil)
      return tc__ox_unsupported(x, n, "attribute dilations = %lld (only 1)", (long long)a[i]);
  }
  for (int i = 0; dil && i < 2; i++) {
    dil[i] = cnt == 2 ? a[i] : 1;
    k[i] = (k[i] - 1) * dil[i] + 1;
  }
  char ap[32];
  rc = tc__ox_attr_s(x, n, "auto_pad", "NOTSET", ap, sizeof ap);
  if (rc == TH_OK && one && strcmp(ap, "NOTSET") == 0) { /* pads [begin, end] of the width */
    rc = tc__ox_attr_ints(x, n, "pads", a, 8, &cnt);
    if (rc == TH_OK && cnt >= 0 && cnt != 2)
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "pads has %d values (2 for 1-D)", cnt);
    for (int i = 0; i < 4; i++) pads[i] = cnt == 2 && i % 2 ? a[i / 2] : 0;
    for (int i = 0; rc == TH_OK && i < 4; i++)
      if (pads[i] < 0 || pads[i] > TC_ONNX_MAX_DIM)
        return tc__ox_nfail(x, n, TH_ERR_INVALID, "pads value %lld", (long long)pads[i]);
  } else if (rc == TH_OK) {
    rc = tc__ox_window_pads(x, n, hw, k, s, pads);
  }
  if (rc != TH_OK) return rc;
  if (*padded)
    for (int i = 0; i < 4; i++) pads[i] += v->pads[i];
  for (int i = 0; i < 4; i++)
    if (pads[i] >= k[i % 2])
      return tc__ox_unsupported(x, n, "padding %lld is not smaller than the kernel",
                                (long long)pads[i]);
  *in = id;
  return TH_OK;
}

/* Output size of a window: floor, or torch's ceil mode (the last window starts inside the input).
 */
static int64_t tc__ox_out_dim(int64_t size, int64_t k, int64_t s, int64_t p0, int64_t p1,
                              int ceil_mode) {
  int64_t span = size + p0 + p1 - k;
  if (span < 0) return 0;
  int64_t o = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (o - 1) * s >= size + p0) o--;
  return o;
}

void tc__ox_set_window(tc_node *nd, const int64_t *k, const int64_t *s, const int64_t *pads,
                       int64_t oh, int64_t ow) {
  nd->kh = (int)k[0];
  nd->kw = (int)k[1];
  nd->sh = (int)s[0];
  nd->sw = (int)s[1];
  nd->pt = (int)pads[0];
  nd->pl = (int)pads[1];
  nd->pb = (int)pads[2];
  nd->pr = (int)pads[3];
  nd->out.shape[2] = (int)oh;
  nd->out.shape[3] = (int)ow;
}

/* A 1-D window's [N, C, 1, L] result (node id) viewed back as n's [N, C, L] output. */
static th_status tc__ox_flat_window(tc__ox *x, const Onnx__NodeProto *n, int id) {
  const tc_tensor *t = tc__ox_t(x, id);
  int s3[3] = {t->shape[0], t->shape[1], t->shape[3]};
  return tc__ox_set_node(x, n, 0, tc_graph_reshape(x->g, id, 3, s3));
}

static th_status tc__ox_c_conv(tc__ox *x, const Onnx__NodeProto *n) {
  tc__oxv *w = tc__ox_in(x, n, 1), *b = tc__ox_in(x, n, 2);
  if (!w) return tc__ox_nfail(x, n, TH_ERR_INVALID, "the weights are missing");
  if (w->kind == TC__OX_CONST && w->c.fl && w->c.ndim == 5) return tc__ox_conv3d(x, n);
  if (w->kind != TC__OX_CONST || !w->c.fl || w->c.ndim < 3 || w->c.ndim > 4)
    return tc__ox_unsupported(x, n, "weights must be a constant 3-D, 4-D or 5-D float tensor");
  int64_t xd[TC__OX_RANK];
  tc__oxv *xv = tc__ox_in(x, n, 0);
  int one = xv && xv->kind != TC__OX_BAD && tc__ox_dims(x, xv, xd) == 3;
  if (one != (w->c.ndim == 3))
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "%d-D weights for a %s input", w->c.ndim,
                        one ? "1-D" : "2-D");
  if (b && (b->kind != TC__OX_CONST || !b->c.fl || b->c.n != w->c.dims[0]))
    return tc__ox_unsupported(x, n, "the bias must be a constant of %lld floats",
                              (long long)w->c.dims[0]);
  int64_t k[2] = {one ? 1 : w->c.dims[2], w->c.dims[one ? 2 : 3]}, s[2], dil[2], pads[4], group;
  int in, padded;
  th_status rc = tc__ox_window(x, n, k, s, dil, pads, &in, &padded);
  if (rc != TH_OK || in < 0) return rc;
  rc = tc__ox_attr_i(x, n, "group", 1, &group);
  if (rc != TH_OK) return rc;
  const tc_tensor *t = tc__ox_t(x, in);
  int64_t oc = w->c.dims[0];
  if (group < 1 || group > t->shape[1] || w->c.dims[1] * group != t->shape[1] || oc % group != 0 ||
      oc > INT_MAX)
    return tc__ox_nfail(x, n, TH_ERR_INVALID,
                        "weights [%lld, %lld, ...] with group %lld do not fit %d channels",
                        (long long)oc, (long long)w->c.dims[1], (long long)group, t->shape[1]);
  /* grouped convs run as conv2d workloads of groups (per-group GEMMs); dilated ones as the conv of
   * expanded weights (zeros between the taps, and block-diagonal over the groups but depthwise) */
  int dw = group == oc && group == t->shape[1];
  int expand = dil[0] != 1 || dil[1] != 1;
  int64_t kg = dw ? group : 1;
  if (expand &&
      (double)oc * (double)(t->shape[1] / kg) * (double)(k[0] * k[1]) > TC__OX_CONV_EXPAND_MAX)
    return tc__ox_unsupported(x, n,
                              "group %lld, dilations %lldx%lld: the expanded weights "
                              "[%lld, %lld, %lld, %lld] pass %d elements",
                              (long long)group, (long long)dil[0], (long long)dil[1], (long long)oc,
                              (long long)(t->shape[1] / kg), (long long)k[0], (long long)k[1],
                              TC__OX_CONV_EXPAND_MAX);
  int64_t oh = tc__ox_out_dim(t->shape[2], k[0], s[0], pads[0], pads[2], 0);
  int64_t ow = tc__ox_out_dim(t->shape[3], k[1], s[1], pads[1], pads[3], 0);
  if (oh < 1 || ow < 1)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "the input %dx%d is too small for the kernel",
                        t->shape[2], t->shape[3]);
  char nm[256];
  int64_t ph = pads[0] > pads[2] ? pads[0] : pads[2], pw = pads[1] > pads[3] ? pads[1] : pads[3];
  int id = tc_graph_conv(x->g, tc__ox_gname(x, n, nm, sizeof nm), in, (int)oc, (int)k[0], (int)k[1],
                         (int)s[0], (int)s[1], (int)ph, (int)pw, expand ? (int)kg : (int)group,
                         b != NULL);
  rc = tc__ox_set_node(x, n, 0, id);
  if (rc != TH_OK) return rc;
  tc__ox_set_window(&x->g->nodes[id], k, s, pads, oh, ow);
  if (expand)
    rc = tc__ox_conv_expand(x, &x->g->params[x->g->nodes[id].weight], w, (int)group, dil);
  else
    rc = tc__ox_bind_param(x, n, &x->g->nodes[id].weight, w, 0, 1.0f);
  if (rc == TH_OK && b) rc = tc__ox_bind_param(x, n, &x->g->nodes[id].bias, b, 0, 1.0f);
  return rc == TH_OK && one ? tc__ox_flat_window(x, n, id) : rc;
}

/* Whether tc_pass_fold_bn will fold a batch norm on node a into it: a plain conv (4-D) used by
 * nothing else. Only such a batch norm stays one (the parameters keep their names for params.bin).
 */
static int tc__ox_bn_folds(tc__ox *x, int a) {
  const tc_node *c = &x->g->nodes[a];
  if (c->op != TC_OP_CONV2D || c->gamma >= 0 || c->epilogue) return 0;
  for (int i = a + 1; i < x->g->nnodes; i++)
    for (int k = 0; k < x->g->nodes[i].ninputs; k++)
      if (x->g->nodes[i].inputs[k] == a) return 0;
  return 1;
}

/* Channel c's scale (shift = 0) or shift (shift = 1) of a batch norm with parameters p (scale,
 * bias, mean, var). */
static float tc__ox_bn_coef(tc__oxv **p, float eps, int c, int shift) {
  double sc = p[0]->c.f[c] / sqrt((double)p[3]->c.f[c] + eps);
  return tc__ox_f32(shift ? p[1]->c.f[c] - p[2]->c.f[c] * sc : sc);
}

/* A batch norm that no conv takes in (after a dense, a concat, an add): x * s + t over the channel
 * axis, with s = gamma / sqrt(var + eps) and t = beta - mean * s computed here as parameters
 * "<node>.scale" and "<node>.shift" (there is no batch-norm kernel of its own). p: scale, bias,
 * mean, var. On an NCHW map it is a depthwise 1x1 convolution with weights s [C, 1, 1, 1] and bias
 * t: one pass in the channel-blocked layout, into which a following relu or clip folds (densenet's
 * pre-activation norm before every conv). Before, it was a multiply and an add in the plain layout:
 * a layout transform and three passes per layer, 26% of densenet121's layer time at batch 1. Other
 * ranks keep the multiply and add of constants [C, 1, ...].
 */
static th_status tc__ox_bn_affine(tc__ox *x, const Onnx__NodeProto *n, int a, tc__oxv **p,
                                  float eps) {
  const tc_tensor *t = tc__ox_t(x, a);
  int r = t->ndim, C = t->shape[1], ids[2];
  int64_t shape[TC_MAX_DIMS];
  shape[0] = C;
  for (int d = 1; d < r - 1; d++) shape[d] = 1;
  char nm[256], pn[300];
  tc__ox_gname(x, n, nm, sizeof nm);
  if (r == 4) {
    int id = tc_graph_conv(x->g, nm, a, C, 1, 1, 1, 1, 0, 0, C, 1);
    th_status rc = tc__ox_set_node(x, n, 0, id);
    for (int k = 0; rc == TH_OK && k < 2; k++) {
      tc_param *q = &x->g->params[k ? x->g->nodes[id].bias : x->g->nodes[id].weight];
      snprintf(pn, sizeof pn, "%s.%s", nm, k ? "shift" : "scale");
      q->name = th_arena_strdup(x->g->arena, pn);
      q->data = x->opts->weights ? th_arena_alloc(x->g->arena, (size_t)C * sizeof(float)) : NULL;
      if (!q->name || (x->opts->weights && !q->data))
        return tc__ox_fail(x, TH_ERR_NOMEM, "out of memory");
      for (int c = 0; q->data && c < C; c++) q->data[c] = tc__ox_bn_coef(p, eps, c, k);
    }
    return rc;
  }
  for (int k = 0; k < 2; k++) {
    snprintf(pn, sizeof pn, "%s.%s", nm, k ? "shift" : "scale");
    ids[k] = tc_graph_const(x->g, pn, r - 1, shape, TC_INIT_EMBED, 1);
    th_status rc = tc__ox_bind_node(x, n, NULL, ids[k]);
    if (rc != TH_OK) return rc;
    if (!x->opts->weights) continue;
    tc_param *q = &x->g->params[x->g->nodes[ids[k]].weight];
    q->data = th_arena_alloc(x->g->arena, (size_t)C * sizeof(float));
    if (!q->data) return tc__ox_fail(x, TH_ERR_NOMEM, "out of memory");
    for (int c = 0; c < C; c++) q->data[c] = tc__ox_bn_coef(p, eps, c, k);
  }
  int id = tc_graph_mul(x->g, a, ids[0]);
  th_status rc = tc__ox_bind_node(x, n, NULL, id);
  if (rc != TH_OK) return rc;
  return tc__ox_set_node(x, n, 0, tc_graph_add(x->g, id, ids[1]));
}

static th_status tc__ox_c_bn(tc__ox *x, const Onnx__NodeProto *n) {
  int a;
  float eps;
  int64_t spatial = 1, training = 0, is_test = 1;
  th_status rc = tc__ox_attr_f(x, n, "epsilon", 1e-5f, &eps);
  if (rc == TH_OK && x->opset < 9) rc = tc__ox_attr_i(x, n, "spatial", 1, &spatial);
  if (rc == TH_OK && x->opset >= 14) rc = tc__ox_attr_i(x, n, "training_mode", 0, &training);
  /* opset 6: is_test = 0 (the default) normalises by the batch's own statistics */
  if (rc == TH_OK && x->opset < 7) rc = tc__ox_attr_i(x, n, "is_test", 0, &is_test);
  if (rc != TH_OK) return rc;
  if (spatial != 1 || training != 0 || is_test == 0)
    return tc__ox_unsupported(x, n, "spatial = 0, training_mode = 1 or (opset 6) is_test = 0");
  for (int k = 1; k < (int)n->n_output; k++) {
    tc__oxv *o = tc__ox_out(x, n, k);
    if (o && o->uses > 0) return tc__ox_unsupported(x, n, "its training outputs are used");
  }
  rc = tc__ox_float_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  const tc_tensor *t = tc__ox_t(x, a);
  if (t->ndim < 2)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "the input has %d dimensions", t->ndim);
  tc__oxv *p[4];
  for (int k = 0; k < 4; k++) {
    p[k] = tc__ox_in(x, n, k + 1);
    if (!p[k] || p[k]->kind != TC__OX_CONST || !p[k]->c.fl || p[k]->c.n != t->shape[1])
      return tc__ox_unsupported(x, n, "scale, bias, mean and var must be constants of %d floats",
                                t->shape[1]);
  }
  int sole =
      tc__ox_sole_consumer(x, tc__ox_in(x, n, 0)); /* later readers of the conv would keep it too */
  if (sole < 0 || x->gp->node[sole] != n || !tc__ox_bn_folds(x, a))
    return tc__ox_bn_affine(x, n, a, p, eps);
  char nm[256];
  int id = tc_graph_bn(x->g, tc__ox_gname(x, n, nm, sizeof nm), a, eps);
  rc = tc__ox_set_node(x, n, 0, id);
  tc_node *nd = rc == TH_OK ? &x->g->nodes[id] : NULL;
  int *slots[4] = {nd ? &nd->gamma : NULL, nd ? &nd->beta : NULL, nd ? &nd->mean : NULL,
                   nd ? &nd->var : NULL};
  for (int k = 0; rc == TH_OK && k < 4; k++) rc = tc__ox_bind_param(x, n, slots[k], p[k], 0, 1.0f);
  return rc;
}

th_status tc__ox_pool_node(tc__ox *x, const Onnx__NodeProto *n, int in, int is_max,
                           const int64_t *k, const int64_t *s, int64_t *pads, int ceil_mode,
                           int cip, int *out) {
  const tc_tensor *t = tc__ox_t(x, in);
  *out = -1;
  int64_t oh = tc__ox_out_dim(t->shape[2], k[0], s[0], pads[0], pads[2], ceil_mode);
  int64_t ow = tc__ox_out_dim(t->shape[3], k[1], s[1], pads[1], pads[3], ceil_mode);
  if (oh < 1 || ow < 1)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "the input %dx%d is too small for the window",
                        t->shape[2], t->shape[3]);
  if (ceil_mode) { /* the last window may run past the padding: extend it at the end (never read) */
    int64_t eb = (oh - 1) * s[0] + k[0] - t->shape[2] - pads[0],
            er = (ow - 1) * s[1] + k[1] - t->shape[3] - pads[1];
    int grows = eb > pads[2] || er > pads[3];
    if (grows && !is_max && cip)
      return tc__ox_unsupported(
          x, n, "ceil_mode with count_include_pad changes the divisor of the last window");
    if (eb > pads[2]) pads[2] = eb;
    if (er > pads[3]) pads[3] = er;
  }
  int id =
      is_max ? tc_graph_max_pool(x->g, in, 1, 1, 0, 0) : tc_graph_avg_pool(x->g, in, 1, 1, 0, cip);
  th_status rc = tc__ox_bind_node(x, n, NULL, id);
  if (rc != TH_OK) return rc;
  tc__ox_set_window(&x->g->nodes[id], k, s, pads, oh, ow);
  *out = id;
  return TH_OK;
}

static th_status tc__ox_c_pool(tc__ox *x, const Onnx__NodeProto *n) {
  int is_max = strcmp(n->op_type, "MaxPool") == 0;
  int64_t k[2] = {0, 0}, s[2], pads[4], ceil_mode = 0, cip = 0, own[4] = {0};
  int in, padded;
  tc__oxv *idx = tc__ox_out(x, n, 1);
  if (idx && idx->uses > 0) return tc__ox_unsupported(x, n, "its Indices output is used");
  if (!tc__ox_attr(n, "kernel_shape"))
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "kernel_shape is missing");
  int64_t xd5[TC__OX_RANK];
  tc__oxv *xv = tc__ox_in(x, n, 0);
  if (xv && xv->kind != TC__OX_BAD && xv->kind != TC__OX_PAD && tc__ox_dims(x, xv, xd5) == 5)
    return tc__ox_pool3d(x, n, is_max);
  int64_t dil[2] = {1, 1};
  th_status rc = tc__ox_window(x, n, k, s, is_max ? dil : NULL, pads, &in, &padded);
  if (rc != TH_OK || in < 0) return rc;
  if (x->opset >= 10) rc = tc__ox_attr_i(x, n, "ceil_mode", 0, &ceil_mode);
  if (rc == TH_OK && !is_max) rc = tc__ox_attr_i(x, n, "count_include_pad", 0, &cip);
  if (rc != TH_OK) return rc;
  if (padded) {
    if (is_max) return tc__ox_nfail(x, n, TH_ERR_INTERNAL, "a Pad reached a MaxPool");
    const tc__oxv *v = tc__ox_in(x, n, 0);
    for (int i = 0; i < 4; i++) own[i] = pads[i] - v->pads[i];
    if (!cip && (own[0] || own[1] || own[2] || own[3]))
      return tc__ox_unsupported(
          x, n, "a zero Pad before an AveragePool that pads without counting the padding");
    cip = 1; /* the Pad's zeros are elements of the input */
  }
  int id;
  if (dil[0] != 1 || dil[1] != 1) {
    const tc_tensor *t = tc__ox_t(x, in);
    int64_t o[2];
    for (int i = 0; i < 2; i++)
      o[i] = tc__ox_out_dim(t->shape[2 + i], k[i], s[i], pads[i], pads[i + 2], (int)ceil_mode);
    if (o[0] < 1 || o[1] < 1)
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "the input %dx%d is too small for the window",
                          t->shape[2], t->shape[3]);
    rc = tc__ox_dilated_max_pool(x, n, in, k, s, dil, pads, o, &id);
  } else {
    rc = tc__ox_pool_node(x, n, in, is_max, k, s, pads, (int)ceil_mode, (int)cip, &id);
  }
  if (rc != TH_OK || id < 0) return rc;
  rc = tc__ox_set_node(x, n, 0, id);
  int64_t xd[TC__OX_RANK];
  if (rc == TH_OK && tc__ox_dims(x, tc__ox_in(x, n, 0), xd) == 3) rc = tc__ox_flat_window(x, n, id);
  return rc;
}

static th_status tc__ox_c_global_pool(tc__ox *x, const Onnx__NodeProto *n) {
  int a;
  th_status rc = tc__ox_float_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  if (tc__ox_t(x, a)->ndim != 4)
    return tc__ox_unsupported(x, n, "only over NCHW maps (the input has %d dimensions)",
                              tc__ox_t(x, a)->ndim);
  return tc__ox_set_node(x, n, 0, tc_graph_global_avg_pool(x->g, a));
}

static th_status tc__ox_c_pad(tc__ox *x, const Onnx__NodeProto *n) {
  char mode[32];
  int64_t p[2 * TC__OX_RANK];
  int cnt;
  float val = 0.0f;
  th_status rc = tc__ox_attr_s(x, n, "mode", "constant", mode, sizeof mode);
  if (rc != TH_OK) return rc;
  int cst = strcmp(mode, "constant") == 0, crop = 0;
  if (!cst && strcmp(mode, "reflect") != 0 && strcmp(mode, "edge") != 0 &&
      strcmp(mode, "wrap") != 0)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "mode '%s' is not constant, reflect, edge or wrap",
                        mode);
  if (x->opset >= 18 && tc__ox_in(x, n, 3))
    return tc__ox_unsupported(x, n, "an axes input (opset 18; pads over every axis only)");
  int before = x->nunsup;
  if (x->opset < 11) {
    rc = tc__ox_attr_ints(x, n, "pads", p, 2 * TC__OX_RANK, &cnt);
    if (rc == TH_OK) rc = tc__ox_attr_f(x, n, "value", 0.0f, &val);
  } else {
    double d = 0;
    rc = tc__ox_const_ints(x, n, 1, p, 2 * TC__OX_RANK, &cnt);
    tc__oxv *cv = tc__ox_in(x, n, 2);
    if (rc == TH_OK && cv && !tc__ox_scalar(cv, &d))
      return tc__ox_unsupported(x, n, "the pad value is not a constant");
    val = tc__ox_f32(d);
  }
  if (rc != TH_OK || TC__OX_REPORTED(x, before)) return rc;
  int a;
  rc = tc__ox_float_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  const tc_tensor *t = tc__ox_t(x, a);
  if (cnt != 2 * t->ndim)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "pads has %d values for %d dimensions", cnt, t->ndim);
  int zero = 1, spatial = t->ndim == 4;
  for (int i = 0; i < cnt; i++) {
    crop |= p[i] < 0;
    if (p[i] > TC_ONNX_MAX_DIM || p[i] < -TC_ONNX_MAX_DIM)
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "pads value %lld", (long long)p[i]);
    zero = zero && p[i] == 0;
    if (i % t->ndim < 2 && p[i] != 0) spatial = 0;
  }
  if (zero) return tc__ox_set_node(x, n, 0, a);
  tc__oxv *o = tc__ox_out(x, n, 0);
  int c = tc__ox_sole_consumer(x, o);
  const Onnx__NodeProto *cn = c >= 0 ? x->gp->node[c] : NULL;
  int fits = cn && (strcmp(cn->op_type, "Conv") == 0 || strcmp(cn->op_type, "AveragePool") == 0) &&
             tc__ox_in(x, cn, 0) == o && val == 0.0f && spatial;
  if (!fits || crop || !cst) return tc__ox_pad_maps(x, n, a, p, mode, val);
  o->kind = TC__OX_PAD;
  o->node = a;
  o->pads[0] = (int)p[2];
  o->pads[1] = (int)p[3];
  o->pads[2] = (int)p[6];
  o->pads[3] = (int)p[7];
  return TH_OK;
}

/* ---- linear layers
 * -------------------------------------------------------------------------------------- */

/* A dense layer on node a with weight w ([N, K] after trans) scaled by alpha, and bias b (n == N)
 * scaled by beta; the parameters keep the initializers' names. */
static th_status tc__ox_dense(tc__ox *x, const Onnx__NodeProto *n, int a, const tc__oxv *w,
                              int trans, float alpha, const tc__oxv *b, float beta, int *out) {
  int64_t N = trans ? w->c.dims[1] : w->c.dims[0], K = trans ? w->c.dims[0] : w->c.dims[1];
  const tc_tensor *t = tc__ox_t(x, a);
  *out = -1;
  if (t->ndim < 2)
    return tc__ox_unsupported(x, n, "a 1-D input (the graph's dense takes [..., K])");
  if (K != t->shape[t->ndim - 1] || N > INT_MAX)
    return tc__ox_nfail(x, n, TH_ERR_INVALID,
                        "weights [%lld, %lld] do not fit an input of width %d",
                        (long long)w->c.dims[0], (long long)w->c.dims[1], t->shape[t->ndim - 1]);
  char nm[256], wn[300], bn[300];
  tc__ox_gname(x, n, nm, sizeof nm);
  snprintf(wn, sizeof wn, "%s.weight", nm);
  snprintf(bn, sizeof bn, "%s.bias", nm);
  int id = tc_graph_dense_named(x->g, nm, a, (int)N, wn, b ? bn : NULL);
  th_status rc = tc__ox_bind_node(x, n, NULL, id);
  if (rc == TH_OK) rc = tc__ox_bind_param(x, n, &x->g->nodes[id].weight, w, trans, alpha);
  if (rc == TH_OK && b) rc = tc__ox_bind_param(x, n, &x->g->nodes[id].bias, b, 0, beta);
  if (rc == TH_OK) *out = id;
  return rc;
}

/* Gemm whose B is a runtime tensor, or whose C is more than a bias of the dense: alpha * A' B' (a
 * matmul, the transposes its flags) plus beta * C broadcast to [M, N] (unidirectionally, as ONNX
 * says: a scalar, [N], [1, N], [M, 1] or [M, N]). */
static th_status tc__ox_gemm_matmul(tc__ox *x, const Onnx__NodeProto *n, int ta, int tb,
                                    float alpha, float beta) {
  int ab[2], c = -1;
  int64_t d[2][TC__OX_RANK], dc[TC__OX_RANK];
  for (int k = 0; k < 2; k++) {
    th_status rc = tc__ox_float_in(x, n, k, &ab[k]);
    if (rc != TH_OK || ab[k] < 0) return rc;
    if (tc__ox_tdims(x, ab[k], d[k]) != 2)
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "%c must be 2-D", k ? 'B' : 'A');
  }
  int64_t M = d[0][ta ? 1 : 0], K = d[0][ta ? 0 : 1], KB = d[1][tb ? 1 : 0], N = d[1][tb ? 0 : 1];
  if (K != KB && ta && K == x->opts->batch && x->file_batch == KB)
    return tc__ox_nfail(x, n, TH_ERR_INVALID,
                        "transA contracts A's first dimension, the batch, with B's %lld rows: the "
                        "model fixes its batch to %lld",
                        (long long)KB, (long long)KB);
  if (K != KB)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "A has K = %lld, B has K = %lld", (long long)K,
                        (long long)KB);
  if (tc__ox_in(x, n, 2)) {
    th_status rc = tc__ox_float_in(x, n, 2, &c);
    if (rc != TH_OK || c < 0) return rc;
    int cr = tc__ox_tdims(x, c, dc);
    int fits = cr <= 2;
    for (int i = 0; fits && i < cr; i++) {
      int64_t want = i == cr - 1 ? N : M, v = dc[i];
      fits = v == 1 || v == want;
    }
    if (!fits)
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "C does not broadcast to [%lld, %lld]",
                          (long long)M, (long long)N);
  }
  int id = tc_graph_matmul(x->g, ab[0], ab[1], ta, tb, alpha);
  if (c >= 0) {
    th_status rc = tc__ox_bind_node(x, n, NULL, id);
    if (rc == TH_OK && beta != 1.0f) {
      c = tc_graph_affine(x->g, c, beta, 0.0f);
      rc = tc__ox_bind_node(x, n, NULL, c);
    }
    if (rc != TH_OK) return rc;
    id = tc_graph_add(x->g, id, c);
  }
  return tc__ox_set_node(x, n, 0, id);
}

static th_status tc__ox_c_gemm(tc__ox *x, const Onnx__NodeProto *n) {
  int64_t ta, tb;
  float alpha, beta;
  th_status rc = tc__ox_attr_i(x, n, "transA", 0, &ta);
  if (rc == TH_OK) rc = tc__ox_attr_i(x, n, "transB", 0, &tb);
  if (rc == TH_OK) rc = tc__ox_attr_f(x, n, "alpha", 1.0f, &alpha);
  if (rc == TH_OK) rc = tc__ox_attr_f(x, n, "beta", 1.0f, &beta);
  if (rc != TH_OK) return rc;
  tc__oxv *vb = tc__ox_in(x, n, 1), *vc = tc__ox_in(x, n, 2), w;
  int trans = tb == 0, a;
  if (!vb) return tc__ox_nfail(x, n, TH_ERR_INVALID, "B is missing");
  if (!tc__ox_weight(x, vb, &w, &trans) || (vb->kind == TC__OX_CONST && vb->c.ndim != 2))
    return tc__ox_gemm_matmul(x, n, ta != 0, tb != 0, alpha, beta);
  int64_t N = trans ? w.c.dims[1] : w.c.dims[0];
  if (vc && (vc->kind != TC__OX_CONST || !vc->c.fl || vc->c.n != N ||
             (vc->c.ndim == 2 && vc->c.dims[0] != 1) || vc->c.ndim > 2))
    return tc__ox_gemm_matmul(x, n, ta != 0, tb != 0, alpha, beta);
  rc = tc__ox_float_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  if (tc__ox_t(x, a)->ndim != 2) return tc__ox_nfail(x, n, TH_ERR_INVALID, "A must be 2-D");
  if (ta) {
    static const int swap[2] = {1, 0};
    a = tc_graph_transpose(x->g, a, swap);
    rc = tc__ox_bind_node(x, n, NULL, a);
    if (rc != TH_OK) return rc;
  }
  int id;
  rc = tc__ox_dense(x, n, a, &w, trans, alpha, vc, beta, &id);
  if (rc != TH_OK || id < 0) return rc;
  return tc__ox_set_node(x, n, 0, id);
}

/* The operand under a transpose of its last two dims (*t toggled) and scalar scales (*alpha). */
static int tc__ox_operand(tc__ox *x, int id, int *t, float *alpha) {
  for (int step = 0; step < 4; step++) {
    id = tc__ox_unscale(x, id, alpha);
    const tc_node *nd = &x->g->nodes[id];
    int r = nd->out.ndim, swap = nd->op == TC_OP_TRANSPOSE && r >= 2;
    for (int d = 0; swap && d < r; d++)
      swap = nd->perm[d] == (d == r - 2 ? r - 1 : d == r - 1 ? r - 2 : d);
    if (!swap) break;
    *t = !*t;
    id = nd->inputs[0];
  }
  return id;
}

/* Activation x activation: leading dims broadcast (reshape + expand), transposes and scales
 * absorbed. */
static th_status tc__ox_matmul2(tc__ox *x, const Onnx__NodeProto *n) {
  int ab[2], tr[2] = {0, 0};
  float alpha = 1.0f;
  for (int k = 0; k < 2; k++) {
    th_status rc = tc__ox_float_in(x, n, k, &ab[k]);
    if (rc != TH_OK || ab[k] < 0) return rc;
    if (tc__ox_t(x, ab[k])->ndim < 2) return tc__ox_unsupported(x, n, "a 1-D operand");
  }
  int64_t da[TC__OX_RANK], db[TC__OX_RANK], lead[TC__OX_RANK];
  int ra = tc__ox_tdims(x, ab[0], da), rb = tc__ox_tdims(x, ab[1], db), rl;
  if (!tc__ox_bcast(da, ra - 2, db, rb - 2, lead, &rl))
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "the operands' batch dimensions do not broadcast");
  for (int k = 0; k < 2; k++) {
    int64_t *d = k ? db : da, want[TC__OX_RANK];
    int r = k ? rb : ra, same = r == rl + 2;
    for (int i = 0; i < rl; i++) {
      int j = i - (rl + 2 - r);
      want[i] = lead[i];
      same = same && j >= 0 && d[j] == lead[i];
    }
    want[rl] = d[r - 2];
    want[rl + 1] = d[r - 1];
    if (same) {
      ab[k] = tc__ox_operand(x, ab[k], &tr[k], &alpha);
      continue;
    }
    int shape[TC_MAX_DIMS];
    for (int i = 0; i < rl + 2; i++) shape[i] = (int)want[i];
    int64_t ones[TC__OX_RANK];
    for (int i = 0; i < rl + 2; i++) ones[i] = i < rl + 2 - r ? 1 : d[i - (rl + 2 - r)];
    th_status rc = tc__ox_reshape_node(x, n, ab[k], ones, rl + 2, &ab[k]);
    if (rc != TH_OK || ab[k] < 0) return rc;
    ab[k] = tc_graph_expand(x->g, ab[k], rl + 2, shape);
    rc = tc__ox_bind_node(x, n, NULL, ab[k]);
    if (rc != TH_OK) return rc;
  }
  return tc__ox_set_node(x, n, 0, tc_graph_matmul(x->g, ab[0], ab[1], tr[0], tr[1], alpha));
}

static th_status tc__ox_c_matmul(tc__ox *x, const Onnx__NodeProto *n) {
  tc__oxv *va = tc__ox_in(x, n, 0), *vb = tc__ox_in(x, n, 1), w;
  int trans = 1, a;
  if (!va || !vb) return tc__ox_nfail(x, n, TH_ERR_INVALID, "needs two inputs");
  if (!tc__ox_weight(x, vb, &w, &trans)) return tc__ox_matmul2(x, n);
  th_status rc = tc__ox_float_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  /* MatMul + Add of a constant [N] (torch's Linear on 3-D inputs): the bias of the dense */
  int64_t N = trans ? w.c.dims[1] : w.c.dims[0];
  tc__oxv *out = tc__ox_out(x, n, 0), *bias = NULL;
  int c = tc__ox_sole_consumer(x, out);
  const Onnx__NodeProto *an = c >= 0 ? x->gp->node[c] : NULL;
  if (an && strcmp(an->op_type, "Add") == 0 && an->n_input == 2) {
    tc__oxv *o = tc__ox_in(x, an, 0) == out ? tc__ox_in(x, an, 1) : tc__ox_in(x, an, 0);
    int ok = o && o != out && o->kind == TC__OX_CONST && o->c.fl && o->c.n == N && o->c.ndim >= 1 &&
             o->c.ndim <= tc__ox_t(x, a)->ndim && o->c.dims[o->c.ndim - 1] == N;
    if (ok) bias = o;
  }
  int id;
  rc = tc__ox_dense(x, n, a, &w, trans, 1.0f, bias, 1.0f, &id);
  if (rc != TH_OK || id < 0) return rc;
  rc = tc__ox_set_node(x, n, 0, id);
  if (rc == TH_OK && bias) {
    x->done[c] = 1;
    rc = tc__ox_bind_node(x, an, tc__ox_out(x, an, 0), id);
  }
  return rc;
}

/* ---- views
 * ------------------------------------------------------------------------------------------------
 */

static th_status tc__ox_c_reshape(tc__ox *x, const Onnx__NodeProto *n) {
  int a, before = x->nunsup;
  th_status rc = tc__ox_node_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  int64_t in[TC__OX_RANK], out[TC__OX_RANK];
  int rin = tc__ox_tdims(x, a, in), rout;
  rc = tc__ox_reshape_dims(x, n, in, rin, out, &rout);
  if (rc != TH_OK || TC__OX_REPORTED(x, before)) return rc;
  const tc_tensor *t = tc__ox_t(x, a);
  if (strcmp(n->op_type, "Flatten") == 0 && rout == 2 && rin >= 2 && out[0] == in[0] &&
      t->dtype == TC_DTYPE_F32 && rin == 4)
    return tc__ox_set_node(x, n, 0, tc_graph_flatten(x->g, a));
  int id;
  rc = tc__ox_reshape_node(x, n, a, out, rout, &id);
  if (rc != TH_OK || id < 0) return rc;
  return tc__ox_set_node(x, n, 0, id);
}

static th_status tc__ox_c_transpose(tc__ox *x, const Onnx__NodeProto *n) {
  int a, perm[TC__OX_RANK];
  th_status rc = tc__ox_float_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  int r = tc__ox_t(x, a)->ndim, same = 1;
  rc = tc__ox_perm(x, n, r, perm);
  if (rc != TH_OK) return rc;
  for (int d = 0; d < r; d++) same = same && perm[d] == d;
  return tc__ox_set_node(x, n, 0, same ? a : tc_graph_transpose(x->g, a, perm));
}

static th_status tc__ox_c_concat(tc__ox *x, const Onnx__NodeProto *n) {
  int64_t ax;
  th_status rc = tc__ox_attr_i(x, n, "axis", INT64_MAX, &ax);
  if (rc != TH_OK) return rc;
  if (ax == INT64_MAX) return tc__ox_nfail(x, n, TH_ERR_INVALID, "axis is missing");
  int *ids = th_arena_alloc(x->arena, (n->n_input + 1) * sizeof *ids), m = 0, axis = 0;
  if (!ids) return tc__ox_fail(x, TH_ERR_NOMEM, "out of memory");
  for (int k = 0; k < (int)n->n_input; k++) {
    tc__oxv *v = tc__ox_in(x, n, k);
    if (!v || (v->kind == TC__OX_CONST && v->c.n == 0)) continue; /* empty pieces add nothing */
    rc = tc__ox_float_in(x, n, k, &ids[m]);
    if (rc != TH_OK || ids[m] < 0) return rc;
    m++;
  }
  if (m == 0) return tc__ox_unsupported(x, n, "every input is empty");
  const tc_tensor *t0 = tc__ox_t(x, ids[0]);
  rc = tc__ox_axis(x, n, ax, t0->ndim, &axis);
  if (rc != TH_OK) return rc;
  int64_t along = 0;
  for (int i = 0; i < m; i++)
    along += tc__ox_t(x, ids[i])->shape[axis] * (tc__ox_t(x, ids[i])->ndim == t0->ndim);
  if (along > INT_MAX)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "the result is %lld long along axis %d",
                        (long long)along, axis);
  int cnn = axis == 1 && t0->ndim == 4, acc = ids[0];
  for (int i = 1; i < m;) { /* groups of at most TC_MAX_INPUTS, chained */
    int grp[TC_MAX_INPUTS], c = 0;
    grp[c++] = acc;
    while (c < TC_MAX_INPUTS && i < m) grp[c++] = ids[i++];
    acc = cnn ? tc_graph_concat(x->g, c, grp) : tc_graph_concat_axis(x->g, c, grp, axis);
    rc = tc__ox_bind_node(x, n, NULL, acc);
    if (rc != TH_OK) return rc;
  }
  return tc__ox_set_node(x, n, 0, acc);
}

static th_status tc__ox_c_split(tc__ox *x, const Onnx__NodeProto *n) {
  int a, axis, before = x->nunsup, nout = (int)n->n_output;
  th_status rc = tc__ox_float_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  int64_t dims[TC__OX_RANK], sizes[TC__OX_RANK * 8], off = 0;
  int r = tc__ox_tdims(x, a, dims);
  rc = tc__ox_split_args(x, n, dims, r, &axis, sizes, nout);
  if (rc != TH_OK || TC__OX_REPORTED(x, before)) return rc;
  for (int k = 0; k < nout; k++) {
    if (sizes[k] == 0) return tc__ox_unsupported(x, n, "an empty output");
    int id = sizes[k] == dims[axis]
                 ? a
                 : tc_graph_slice(x->g, a, axis, (int)off, (int)(off + sizes[k]), 1);
    off += sizes[k];
    rc = tc__ox_set_node(x, n, k, id);
    if (rc != TH_OK) return rc;
  }
  return TH_OK;
}

static th_status tc__ox_c_slice(tc__ox *x, const Onnx__NodeProto *n) {
  int a, before = x->nunsup;
  th_status rc = tc__ox_float_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  int64_t dims[TC__OX_RANK];
  int r = tc__ox_tdims(x, a, dims);
  tc__ox_range rg[TC__OX_RANK];
  rc = tc__ox_slice_args(x, n, dims, r, rg);
  if (rc != TH_OK || TC__OX_REPORTED(x, before)) return rc;
  int id = a;
  for (int d = 0; d < r; d++) {
    if (rg[d].begin == 0 && rg[d].end == dims[d] && rg[d].step == 1) continue;
    if (rg[d].step < 0) return tc__ox_unsupported(x, n, "negative steps");
    if (tc__ox_range_len(&rg[d]) == 0) return tc__ox_unsupported(x, n, "an empty slice");
    if (rg[d].step > dims[d])
      rg[d].step = dims[d]; /* one element either way; keeps the builder's sums small */
    id = tc_graph_slice(x->g, id, d, (int)rg[d].begin, (int)rg[d].end, (int)rg[d].step);
    rc = tc__ox_bind_node(x, n, NULL, id);
    if (rc != TH_OK) return rc;
  }
  return tc__ox_set_node(x, n, 0, id);
}

static th_status tc__ox_c_cast(tc__ox *x, const Onnx__NodeProto *n) {
  int64_t to;
  int a;
  th_status rc = tc__ox_attr_i(x, n, "to", 0, &to);
  if (rc == TH_OK) rc = tc__ox_node_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  int dt = tc__ox_t(x, a)->dtype;
  int f = to == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT ||
          to == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE ||
          to == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16;
  if ((f && dt == TC_DTYPE_F32) ||
      (to == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 && dt == TC_DTYPE_I64))
    return tc__ox_set_node(x, n, 0, a);
  if (f && dt == TC_DTYPE_I64)
    return tc__ox_set_node(x, n, 0, tc_graph_cast(x->g, a, TC_DTYPE_F32));
  if (to == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 && dt == TC_DTYPE_F32) /* truncated toward zero */
    return tc__ox_set_node(x, n, 0, tc_graph_cast(x->g, a, TC_DTYPE_I64));
  return tc__ox_unsupported(x, n, "a cast of a runtime %s tensor to element type %lld",
                            tc_dtype_name(dt), (long long)to);
}

static th_status tc__ox_c_expand(tc__ox *x, const Onnx__NodeProto *n) {
  int64_t shape[TC__OX_RANK], dims[TC__OX_RANK], od[TC__OX_RANK];
  int cnt, a, r, before = x->nunsup;
  th_status rc = tc__ox_const_ints(x, n, 1, shape, TC__OX_RANK, &cnt);
  if (rc != TH_OK || TC__OX_REPORTED(x, before)) return rc;
  if (cnt < 0) return tc__ox_nfail(x, n, TH_ERR_INVALID, "the shape is missing");
  rc = tc__ox_float_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  int ra = tc__ox_tdims(x, a, dims);
  if (!tc__ox_bcast(dims, ra, shape, cnt, od, &r))
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "the input does not broadcast to the shape");
  if (r > TC_MAX_DIMS) return tc__ox_unsupported(x, n, "%d dimensions", r);
  int same = r == ra, s[TC_MAX_DIMS];
  int64_t numel = 1;
  for (int d = 0; d < r; d++) {
    same = same && od[d] == dims[d];
    if (od[d] < 1 || od[d] > INT_MAX)
      return tc__ox_unsupported(x, n, "dimension %d is %lld", d, (long long)od[d]);
    s[d] = (int)od[d];
    numel *= od[d];
    if (numel > TC_ONNX_MAX_ELEMENTS)
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "the result has more than %lld elements",
                          (long long)TC_ONNX_MAX_ELEMENTS);
  }
  return tc__ox_set_node(x, n, 0, same ? a : tc_graph_expand(x->g, a, r, s));
}

/* ---- the table
 * ------------------------------------------------------------------------------------------ */

static const struct {
  const char *op;
  tc__ox_conv_fn fn;
} tc__ox_convs[] = {
    {"Conv", tc__ox_c_conv},
    {"BatchNormalization", tc__ox_c_bn},
    {"Relu", tc__ox_c_unary},
    {"Tanh", tc__ox_c_unary},
    {"Sigmoid", tc__ox_c_unary},
    {"HardSigmoid", tc__ox_c_unary},
    {"HardSwish", tc__ox_c_unary},
    {"Clip", tc__ox_c_clip},
    {"Add", tc__ox_c_binary},
    {"Sub", tc__ox_c_binary},
    {"Mul", tc__ox_c_binary},
    {"Div", tc__ox_c_binary},
    {"Pow", tc__ox_c_binary_math},
    {"Sqrt", tc__ox_c_math},
    {"Erf", tc__ox_c_math},
    {"Exp", tc__ox_c_math},
    {"Log", tc__ox_c_math},
    {"Abs", tc__ox_c_math},
    {"Neg", tc__ox_c_math},
    {"Reciprocal", tc__ox_c_math},
    {"Floor", tc__ox_c_math},
    {"Ceil", tc__ox_c_math},
    {"Round", tc__ox_c_math},
    {"Sign", tc__ox_c_math},
    {"Softplus", tc__ox_c_math},
    {"Softsign", tc__ox_c_math},
    {"Elu", tc__ox_c_math},
    {"Selu", tc__ox_c_math},
    {"LeakyRelu", tc__ox_c_math},
    {"Celu", tc__ox_c_math},
    {"ThresholdedRelu", tc__ox_c_math},
    {"Sinh", tc__ox_c_math},
    {"Cosh", tc__ox_c_math},
    {"Asinh", tc__ox_c_math},
    {"Acosh", tc__ox_c_math},
    {"Atanh", tc__ox_c_math},
    {"Sin", tc__ox_c_math},
    {"Cos", tc__ox_c_math},
    {"Tan", tc__ox_c_math},
    {"Asin", tc__ox_c_math},
    {"Acos", tc__ox_c_math},
    {"Atan", tc__ox_c_math},
    {"IsNaN", tc__ox_c_is_special},
    {"IsInf", tc__ox_c_is_special},
    {"Where", tc__ox_c_where},
    {"Trilu", tc__ox_c_trilu},
    {"Hardmax", tc__ox_c_hardmax},
    {"MaxPool", tc__ox_c_pool},
    {"AveragePool", tc__ox_c_pool},
    {"GlobalAveragePool", tc__ox_c_global_pool},
    {"Pad", tc__ox_c_pad},
    {"ConvTranspose", tc__ox_c_conv_transpose},
    {"Resize", tc__ox_c_resize},
    {"Upsample", tc__ox_c_resize},
    {"DepthToSpace", tc__ox_c_depth_to_space},
    {"SpaceToDepth", tc__ox_c_depth_to_space},
    {"PRelu", tc__ox_c_prelu},
    {"GlobalMaxPool", tc__ox_c_global_max_pool},
    {"Gemm", tc__ox_c_gemm},
    {"MatMul", tc__ox_c_matmul},
    {"Flatten", tc__ox_c_reshape},
    {"Reshape", tc__ox_c_reshape},
    {"Squeeze", tc__ox_c_reshape},
    {"Unsqueeze", tc__ox_c_reshape},
    {"Transpose", tc__ox_c_transpose},
    {"Concat", tc__ox_c_concat},
    {"Split", tc__ox_c_split},
    {"Slice", tc__ox_c_slice},
    {"Gather", tc__ox_c_gather},
    {"GatherElements", tc__ox_c_gather},
    {"ScatterElements", tc__ox_c_scatter},
    {"Scatter", tc__ox_c_scatter},
    {"Tile", tc__ox_c_tile},
    {"OneHot", tc__ox_c_onehot},
    {"TopK", tc__ox_c_topk},
    {"Cast", tc__ox_c_cast},
    {"Expand", tc__ox_c_expand},
    {"ReduceMean", tc__ox_c_reduce},
    {"ReduceSum", tc__ox_c_reduce},
    {"ReduceMax", tc__ox_c_reduce},
    {"ReduceMin", tc__ox_c_reduce},
    {"ReduceProd", tc__ox_c_reduce},
    {"ReduceSumSquare", tc__ox_c_reduce},
    {"ReduceL1", tc__ox_c_reduce},
    {"ReduceL2", tc__ox_c_reduce},
    {"ReduceLogSum", tc__ox_c_reduce},
    {"ReduceLogSumExp", tc__ox_c_reduce},
    {"ArgMax", tc__ox_c_arg},
    {"ArgMin", tc__ox_c_arg},
    {"InstanceNormalization", tc__ox_c_instance_norm},
    {"Softmax", tc__ox_c_softmax},
    {"LogSoftmax", tc__ox_c_softmax},
    {"NegativeLogLikelihoodLoss", tc__ox_c_loss},
    {"SoftmaxCrossEntropyLoss", tc__ox_c_loss},
    {"LayerNormalization", tc__ox_c_layer_norm},
    {"Dropout", tc__ox_c_identity},
    {"Identity", tc__ox_c_identity},
    {"Max", tc__ox_c_binary_math},
    {"Min", tc__ox_c_binary_math},
    {"Sum", tc__ox_c_binary_math},
    {"Mean", tc__ox_c_binary_math},
    {"Mod", tc__ox_c_binary_math},
    {"Equal", tc__ox_c_binary_math},
    {"Less", tc__ox_c_binary_math},
    {"Greater", tc__ox_c_binary_math},
    {"LessOrEqual", tc__ox_c_binary_math},
    {"GreaterOrEqual", tc__ox_c_binary_math},
    {"And", tc__ox_c_binary_math},
    {"Or", tc__ox_c_binary_math},
    {"Xor", tc__ox_c_binary_math},
    {"Not", tc__ox_c_binary_math},
    {"LSTM", tc__ox_c_rnn},
    {"GRU", tc__ox_c_rnn},
    {"RNN", tc__ox_c_rnn},
    {"Shrink", tc__ox_c_shrink},
    {"MeanVarianceNormalization", tc__ox_c_mvn},
    {"LRN", tc__ox_c_lrn},
    {"GridSample", tc__ox_c_grid_sample},
};

tc__ox_conv_fn tc__ox_converter(const char *op_type) {
  for (size_t i = 0; i < sizeof tc__ox_convs / sizeof tc__ox_convs[0]; i++)
    if (strcmp(tc__ox_convs[i].op, op_type) == 0) return tc__ox_convs[i].fn;
  return NULL;
}
