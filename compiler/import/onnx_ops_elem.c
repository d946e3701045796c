/* The ONNX importer's element-wise converters: unary activations and math (Relu, Sigmoid, Exp,
 * Erf, ... onto TC_OP_MATH, the unary kernel family), Identity, Clip, the broadcasting binaries
 * (Add, Mul, comparisons ... onto TC_OP_BINARY), IsNaN and IsInf (their bool results held as
 * float32 1.0 / 0.0 as the comparisons' are, onnx_ops_binary.c), and Where (float32 or int64 x and
 * y) onto TC_OP_BINARY's TAKE and LEAVE and an add. */
#include <float.h>
#include <string.h>

#include "onnx_int.h"
#include "workload.h"

th_status tc__ox_c_is_special(tc__ox *x, const Onnx__NodeProto *n) {
  int a;
  th_status rc = tc__ox_float_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  if (strcmp(n->op_type, "IsNaN") == 0)
    return tc__ox_set_node(x, n, 0, tc_graph_math(x->g, a, TC_UNARY_ISNAN, 0.0f, 0.0f));
  int64_t pos, neg;
  rc = tc__ox_attr_i(x, n, "detect_positive", 1, &pos);
  if (rc == TH_OK) rc = tc__ox_attr_i(x, n, "detect_negative", 1, &neg);
  if (rc != TH_OK) return rc;
  if ((pos != 0 && pos != 1) || (neg != 0 && neg != 1))
    return tc__ox_nfail(x, n, TH_ERR_INVALID,
                        "detect_positive %lld and detect_negative %lld must be 0 or 1",
                        (long long)pos, (long long)neg);
  return tc__ox_set_node(x, n, 0, tc_graph_math(x->g, a, TC_UNARY_ISINF, (float)pos, (float)neg));
}

th_status tc__ox_c_where(tc__ox *x, const Onnx__NodeProto *n) {
  int c, a, b;
  if (n->n_input != 3)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "has %d inputs (3)", (int)n->n_input);
  th_status rc = tc__ox_float_in(x, n, 0, &c);
  if (rc == TH_OK && c >= 0) rc = tc__ox_num_ins(x, n, 1, 2, &a, &b);
  if (rc != TH_OK || c < 0 || a < 0 || b < 0) return rc;
  int t = tc_graph_binary(x->g, c, a, TC_BINARY_TAKE);
  int l = t < 0 ? -1 : tc_graph_binary(x->g, c, b, TC_BINARY_LEAVE);
  int id = l < 0 ? -1 : tc_graph_add(x->g, t, l); /* int64 too: TAKE and LEAVE give 0 for -0 */
  if (id < 0) return tc__ox_nfail(x, n, TH_ERR_INVALID, "%s", tc_graph_error(x->g));
  return tc__ox_set_node(x, n, 0, id);
}

/* ---- element-wise
 * ------------------------------------------------------------------------------------------ */

th_status tc__ox_c_unary(tc__ox *x, const Onnx__NodeProto *n) {
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

th_status tc__ox_c_identity(tc__ox *x, const Onnx__NodeProto *n) {
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

th_status tc__ox_c_clip(tc__ox *x, const Onnx__NodeProto *n) {
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

th_status tc__ox_c_binary(tc__ox *x, const Onnx__NodeProto *n) {
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

th_status tc__ox_c_math(tc__ox *x, const Onnx__NodeProto *n) {
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
