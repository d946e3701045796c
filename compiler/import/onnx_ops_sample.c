/* The ONNX importer's local normalisations and shrinkage, lowered onto existing kernel families
 * (issue 38): Shrink onto TC_OP_BINARY's comparisons, TAKE and LEAVE (the kept branch exact, as
 * Where's); MeanVarianceNormalization onto TC_OP_REDUCE means over its axes, in the order ONNX's
 * function body computes them; LRN onto a channel-window sum, a constant 0/1 band matrix times the
 * squares (TC_OP_MATMUL), then a pow and a division. */
#include <string.h>

#include "onnx_int.h"
#include "workload.h"

/* A constant [1] holding v, named <node>.<tag>. */
static th_status tc__ox_scalar_const(tc__ox *x, const Onnx__NodeProto *n, const char *tag, float v,
                                     int *id) {
  int64_t one = 1;
  float *p;
  th_status rc = tc__ox_mask_const(x, n, tag, 1, &one, id, &p);
  if (rc == TH_OK && *id >= 0) p[0] = v;
  return rc;
}

/* Shrink (opset 9): x < -lambd ? x + bias : x > lambd ? x - bias : 0, as
 * TAKE(lt, x + bias) + LEAVE(lt, TAKE(gt, x - bias)): exactly one term is not -0. */
th_status tc__ox_c_shrink(tc__ox *x, const Onnx__NodeProto *n) {
  float bias, lambd;
  int a, lo = -1, hi = -1;
  th_status rc = tc__ox_attr_f(x, n, "bias", 0.0f, &bias);
  if (rc == TH_OK) rc = tc__ox_attr_f(x, n, "lambd", 0.5f, &lambd);
  if (rc != TH_OK) return rc;
  if (!isfinite(bias) || !isfinite(lambd))
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "bias %g and lambd %g must be finite", bias, lambd);
  rc = tc__ox_float_in(x, n, 0, &a);
  if (rc == TH_OK && a >= 0) rc = tc__ox_scalar_const(x, n, "lo", -lambd, &lo);
  if (rc == TH_OK && lo >= 0) rc = tc__ox_scalar_const(x, n, "hi", lambd, &hi);
  if (rc != TH_OK || a < 0 || lo < 0 || hi < 0) return rc;
  tc_graph *g = x->g;
  int lt = tc_graph_binary(g, a, lo, TC_BINARY_LT), gt = tc_graph_binary(g, a, hi, TC_BINARY_GT);
  int up = lt < 0 || gt < 0 ? -1 : tc_graph_affine(g, a, 1.0f, bias);
  int down = up < 0 ? -1 : tc_graph_affine(g, a, 1.0f, -bias);
  int t = down < 0 ? -1 : tc_graph_binary(g, lt, up, TC_BINARY_TAKE);
  int u = t < 0 ? -1 : tc_graph_binary(g, gt, down, TC_BINARY_TAKE);
  int l = u < 0 ? -1 : tc_graph_binary(g, lt, u, TC_BINARY_LEAVE);
  int id = l < 0 ? -1 : tc_graph_add(g, t, l);
  if (id < 0) return tc__ox_nfail(x, n, TH_ERR_INVALID, "%s", tc_graph_error(g));
  return tc__ox_set_node(x, n, 0, id);
}

/* MeanVarianceNormalization (opsets 9, 13): with means over axes (default [0, 2, 3]),
 * (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9), ONNX's function body step by step. */
th_status tc__ox_c_mvn(tc__ox *x, const Onnx__NodeProto *n) {
  int64_t axes[TC__OX_RANK], dims[TC__OX_RANK];
  int cnt, a, mask = 0, mean, msq;
  th_status rc = tc__ox_attr_ints(x, n, "axes", axes, TC__OX_RANK, &cnt);
  if (rc == TH_OK) rc = tc__ox_float_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  if (cnt < 0) {
    axes[0] = 0, axes[1] = 2, axes[2] = 3;
    cnt = 3;
  }
  int r = tc__ox_tdims(x, a, dims);
  for (int k = 0; k < cnt && rc == TH_OK; k++) {
    int ax;
    rc = tc__ox_axis(x, n, axes[k], r, &ax);
    if (rc == TH_OK && (mask >> ax & 1))
      rc = tc__ox_nfail(x, n, TH_ERR_INVALID, "axis %lld is listed twice", (long long)axes[k]);
    mask |= 1 << ax;
  }
  if (rc != TH_OK) return rc;
  if (cnt == 0) return tc__ox_nfail(x, n, TH_ERR_INVALID, "axes is empty (at least one axis)");
  tc_graph *g = x->g;
  rc = tc__ox_reduce_axes(x, n, a, mask, TC_REDUCE_MEAN, 1, &mean);
  if (rc == TH_OK && mean >= 0) {
    int sq = tc_graph_mul(g, a, a);
    rc = tc__ox_bind_node(x, n, NULL, sq);
    if (rc == TH_OK) rc = tc__ox_reduce_axes(x, n, sq, mask, TC_REDUCE_MEAN, 1, &msq);
  }
  if (rc != TH_OK || mean < 0 || msq < 0) return rc;
  int var = tc_graph_sub(g, msq, tc_graph_mul(g, mean, mean));
  int sd = tc_graph_affine(g, tc_graph_math(g, var, TC_UNARY_SQRT, 0, 0), 1.0f, 1e-9f);
  int id = tc_graph_div(g, tc_graph_sub(g, a, mean), sd);
  if (id < 0) return tc__ox_nfail(x, n, TH_ERR_INVALID, "%s", tc_graph_error(g));
  return tc__ox_set_node(x, n, 0, id);
}

/* LRN (opsets 1, 13) over the channels of [N, C, ...]: x / (bias + alpha / size * S)^beta, S the
 * sum of x^2 over channels [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)] within [0, C).
 * S is band [1, C, C] (expanded to N) times the squares as [N, C, spatial]. */
th_status tc__ox_c_lrn(tc__ox *x, const Onnx__NodeProto *n) {
  int64_t size, dims[TC__OX_RANK];
  float alpha, beta, bias;
  int a, band, pw;
  float *m;
  th_status rc = tc__ox_attr_i(x, n, "size", 0, &size);
  if (rc == TH_OK) rc = tc__ox_attr_f(x, n, "alpha", 1e-4f, &alpha);
  if (rc == TH_OK) rc = tc__ox_attr_f(x, n, "beta", 0.75f, &beta);
  if (rc == TH_OK) rc = tc__ox_attr_f(x, n, "bias", 1.0f, &bias);
  if (rc != TH_OK) return rc;
  if (size < 1)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "size %lld must be at least 1 (a required attribute)",
                        (long long)size);
  if (!isfinite(alpha) || !isfinite(beta) || !isfinite(bias))
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "alpha %g, beta %g and bias %g must be finite",
                        alpha, beta, bias);
  rc = tc__ox_float_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  int r = tc__ox_tdims(x, a, dims);
  if (r < 3)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "the input has %d dimensions (at least 3)", r);
  int64_t C = dims[1], bd[3] = {1, C, C}, flat[3] = {dims[0], C, 1};
  for (int d = 2; d < r; d++) flat[2] *= dims[d];
  if (C > 4096)
    return tc__ox_unsupported(x, n, "it has %lld channels (at most 4096)", (long long)C);
  rc = tc__ox_mask_const(x, n, "band", 3, bd, &band, &m);
  if (rc == TH_OK && band >= 0) rc = tc__ox_scalar_const(x, n, "beta", beta, &pw);
  if (rc != TH_OK || band < 0 || pw < 0) return rc;
  int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
  for (int64_t c = 0; c < C; c++) /* row c: the window of output channel c */
    for (int64_t i = c - lo < 0 ? 0 : c - lo; i <= c + hi && i < C; i++) m[c * C + i] = 1.0f;
  tc_graph *g = x->g;
  int sq = tc_graph_mul(g, a, a), id;
  rc = tc__ox_bind_node(x, n, NULL, sq);
  if (rc == TH_OK) rc = tc__ox_reshape_node(x, n, sq, flat, 3, &sq);
  if (rc != TH_OK || sq < 0) return rc;
  int ed[3] = {(int)dims[0], (int)C, (int)C};
  int s = tc_graph_matmul(g, tc_graph_expand(g, band, 3, ed), sq, 0, 0, 1.0f);
  s = tc_graph_affine(g, s, alpha / (float)size, bias);
  s = tc_graph_binary(g, s, pw, TC_BINARY_POW);
  rc = tc__ox_bind_node(x, n, NULL, s);
  if (rc == TH_OK) rc = tc__ox_reshape_node(x, n, s, dims, r, &id);
  if (rc != TH_OK || id < 0) return rc;
  id = tc_graph_div(g, a, id);
  if (id < 0) return tc__ox_nfail(x, n, TH_ERR_INVALID, "%s", tc_graph_error(g));
  return tc__ox_set_node(x, n, 0, id);
}
