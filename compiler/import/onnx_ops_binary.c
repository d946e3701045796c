/* The ONNX importer's converters of element-wise binary math and comparisons onto the graph's
 * TC_OP_BINARY (one kernel family, TC_KERNEL_BINARY, for all of them): Max, Min, Sum and Mean
 * (variadic: a chain of broadcast binary nodes, Mean scaled by 1/n), Pow with a tensor exponent,
 * Mod (fmod = 1) and Equal, Less, Greater, LessOrEqual, GreaterOrEqual, whose bool results the
 * graph holds as float32 1.0 / 0.0, so that And, Or and Xor of them are Min, Max and not-equal and
 * Not is 1 - x. Add, Sub, Mul and Div stay in onnx_ops.c (their affine and gating peepholes). Opset
 * 6's broadcast attribute is honoured (tc__ox_legacy_bcast). Max, Min, Sum, Mod (fmod 0 or 1) and
 * the comparisons also take int64 operands, computed exactly in int64 (the comparisons' results
 * float32 0/1 as ever). */
#include <string.h>

#include "onnx_int.h"
#include "workload.h"

/* b broadcast against a as opset 6's attributes say (a reshape of b where they align it), then
 * a op b: the graph node, or -1 when a step was reported. */
static th_status tc__ox_binary_node(tc__ox *x, const Onnx__NodeProto *n, int a, int b, int op,
                                    int *out) {
  int64_t ad[TC__OX_RANK], bd[TC__OX_RANK], nb[TC__OX_RANK];
  const tc_tensor *ta = &x->g->nodes[a].out, *tb = &x->g->nodes[b].out;
  int ra = ta->ndim, rb = tb->ndim, rnb;
  for (int d = 0; d < ra; d++) ad[d] = ta->shape[d];
  for (int d = 0; d < rb; d++) bd[d] = tb->shape[d];
  *out = -1;
  th_status rc = tc__ox_legacy_bcast(x, n, ad, ra, bd, rb, nb, &rnb);
  if (rc == TH_OK && rnb != rb) rc = tc__ox_reshape_node(x, n, b, nb, rnb, &b);
  if (rc != TH_OK || b < 0) return rc;
  int id = op == TC_BINARY_ADD ? tc_graph_add(x->g, a, b) : tc_graph_binary(x->g, a, b, op);
  if (id < 0) return tc__ox_nfail(x, n, TH_ERR_INVALID, "%s", tc_graph_error(x->g));
  *out = id;
  return TH_OK;
}

/* Op type -> TC_BINARY_* and its inputs: 2, or 0 for 1 or more (Max, Min, Sum, Mean: a chain). Not
 * (one input) is an affine. */
static const struct {
  const char *op;
  int bin, arity;
} tc__ox_binaries[] = {
    {"Max", TC_BINARY_MAX, 0},
    {"Min", TC_BINARY_MIN, 0},
    {"Sum", TC_BINARY_ADD, 0},
    {"Mean", TC_BINARY_ADD, 0},
    {"Pow", TC_BINARY_POW, 2},
    {"Mod", TC_BINARY_FMOD, 2},
    {"Equal", TC_BINARY_EQ, 2},
    {"Less", TC_BINARY_LT, 2},
    {"Greater", TC_BINARY_GT, 2},
    {"LessOrEqual", TC_BINARY_LE, 2},
    {"GreaterOrEqual", TC_BINARY_GE, 2},
    {"And", TC_BINARY_MIN, 2},
    {"Or", TC_BINARY_MAX, 2},
    {"Xor", TC_BINARY_NE, 2},
    {"Not", TC_BINARY_NE, 1},
};

th_status tc__ox_c_binary_math(tc__ox *x, const Onnx__NodeProto *n) {
  int bin = -1, arity = 0, nin = (int)n->n_input;
  for (size_t i = 0; i < sizeof tc__ox_binaries / sizeof tc__ox_binaries[0]; i++)
    if (strcmp(n->op_type, tc__ox_binaries[i].op) == 0) {
      bin = tc__ox_binaries[i].bin;
      arity = tc__ox_binaries[i].arity;
    }
  if (bin < 0) return tc__ox_nfail(x, n, TH_ERR_INTERNAL, "no binary op");
  if (nin < 1 || (arity && nin != arity))
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "has %d inputs (%s)", nin,
                        arity == 2   ? "2"
                        : arity == 1 ? "1"
                                     : "1 or more");
  th_status rc = TH_OK;
  int64_t fmod = 1;
  if (bin == TC_BINARY_FMOD) {
    rc = tc__ox_attr_i(x, n, "fmod", 0, &fmod);
    if (rc != TH_OK) return rc;
    if (fmod != 0 && fmod != 1)
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "fmod %lld must be 0 or 1", (long long)fmod);
    if (fmod == 0) bin = TC_BINARY_MOD; /* the divisor's sign, as Python's % */
  }
  int acc, b = -1;
  /* int64 operands where the op has an int64 form (not Mean, the bool ops); Pow's only with an
     int64 base (a float32 base takes an int64 exponent as a float, below) */
  tc__oxv *v0 = tc__ox_in(x, n, 0);
  int base64 = v0 && (v0->kind == TC__OX_NODE ? tc__ox_t(x, v0->node)->dtype == TC_DTYPE_I64
                                              : v0->kind == TC__OX_CONST && !v0->c.fl);
  int ints = (bin != TC_BINARY_POW || base64) && strcmp(n->op_type, "Mean") != 0 && arity != 1 &&
             bin != TC_BINARY_NE && strcmp(n->op_type, "And") != 0 && strcmp(n->op_type, "Or") != 0;
  if (ints && nin > 1)
    rc = tc__ox_num_ins(x, n, 0, 1, &acc, &b);
  else
    rc = tc__ox_float_in(x, n, 0, &acc);
  if (rc != TH_OK || acc < 0) return rc;
  int i64 = tc__ox_t(x, acc)->dtype == TC_DTYPE_I64;
  if (bin == TC_BINARY_MOD && !i64) /* the standard allows fmod = 0 on integers only */
    return tc__ox_unsupported(x, n, "fmod = 0 on float32 (integer Mod: int64 only)");
  if (arity == 1) return tc__ox_set_node(x, n, 0, tc_graph_affine(x->g, acc, -1.0f, 1.0f));
  if (bin == TC_BINARY_POW) { /* an exponent of 2 or 1 is exact as a product or a copy */
    double e;
    tc__oxv *vb = tc__ox_in(x, n, 1);
    if (vb && vb->kind == TC__OX_CONST && tc__ox_scalar(vb, &e) &&
        vb->c.ndim <= x->g->nodes[acc].out.ndim && (e == 1 || e == 2))
      return tc__ox_set_node(x, n, 0, e == 1 ? acc : tc_graph_mul(x->g, acc, acc));
  }
  for (int k = 1; k < nin; k++) {
    if (k == 1 && ints) {
      rc = TH_OK; /* b is input 1, of acc's dtype */
    } else if (i64) {
      int a0;
      rc = tc__ox_num_ins(x, n, 0, k, &a0, &b);
    } else if (bin == TC_BINARY_POW) { /* an int64 exponent (Pow-12 allows one) is exact as a float
                                   below 2^24, far past any power that stays finite */
      rc = tc__ox_node_in(x, n, k, &b);
      if (rc == TH_OK && b >= 0 && x->g->nodes[b].out.dtype == TC_DTYPE_I64)
        b = tc_graph_cast(x->g, b, TC_DTYPE_F32);
    } else {
      rc = tc__ox_float_in(x, n, k, &b);
    }
    if (rc == TH_OK && b >= 0) rc = tc__ox_binary_node(x, n, acc, b, bin, &acc);
    if (rc != TH_OK || b < 0 || acc < 0) return rc;
  }
  if (strcmp(n->op_type, "Mean") == 0 && nin > 1)
    acc = tc_graph_affine(x->g, acc, (float)(1.0 / nin), 0.0f);
  return tc__ox_set_node(x, n, 0, acc);
}
