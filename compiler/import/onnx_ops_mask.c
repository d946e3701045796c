/* The ONNX importer's masks and one-hots, lowered onto existing kernel families (issue 38): Trilu
 * keeps a triangle of the last two dims, whose pattern is known at import, so it is a constant 0/1
 * mask read by TC_OP_BINARY's TAKE and LEAVE (as Where does: kept elements exact, inf and NaN
 * included, +0 elsewhere; x * mask would turn inf into NaN); Hardmax is the one-hot of the first
 * maximum along its axis: ArgMax (TC_OP_REDUCE, keepdims) compared with a constant iota along that
 * axis (TC_BINARY_EQ). Opsets 1..12 coerce Hardmax's input to 2-D at axis, 13 on take one axis. */
#include <stdio.h>
#include <string.h>

#include "onnx_int.h"
#include "workload.h"

/* The most elements of one constant mask or iota made here (a [4096, 4096] triangle is 2^24). */
#define TC__OX_MASK_MAX ((int64_t)1 << 26)

th_status tc__ox_mask_const(tc__ox *x, const Onnx__NodeProto *n, const char *tag, int r,
                            const int64_t *dims, int *id, float **data) {
  int64_t cnt = 1;
  for (int d = 0; d < r; d++) cnt *= dims[d];
  *id = -1;
  *data = NULL;
  if (cnt > TC__OX_MASK_MAX)
    return tc__ox_unsupported(x, n, "its %s would hold %lld elements (at most %lld)", tag,
                              (long long)cnt, (long long)TC__OX_MASK_MAX);
  char nm[256], pn[300];
  tc__ox_gname(x, n, nm, sizeof nm);
  snprintf(pn, sizeof pn, "%s.%s", nm, tag);
  int k = tc_graph_const(x->g, pn, r, dims, TC_INIT_EMBED, 1);
  th_status rc = tc__ox_bind_node(x, n, NULL, k);
  if (rc != TH_OK) return rc;
  float *p = th_arena_alloc(x->g->arena, (size_t)(cnt > 0 ? cnt : 1) * sizeof(float));
  if (!p) return tc__ox_fail(x, TH_ERR_NOMEM, "out of memory making %s", pn);
  memset(p, 0, (size_t)(cnt > 0 ? cnt : 1) * sizeof(float));
  if (x->opts->weights) x->g->params[x->g->nodes[k].weight].data = p;
  *id = k;
  *data = p;
  return TH_OK;
}

/* Trilu (opset 14): upper = 1 keeps j >= i + k of each [.., i, j], upper = 0 keeps j <= i + k; k
 * (default 0) a constant. out = TAKE(mask, x) + LEAVE(mask, 0): x where kept (v + -0 is v for
 * every v), +0 elsewhere; an int64 x's is TAKE(mask, x) alone. */
th_status tc__ox_c_trilu(tc__ox *x, const Onnx__NodeProto *n) {
  int64_t upper, k = 0, kv[1];
  int a, cnt = -1, before = x->nunsup;
  th_status rc = tc__ox_attr_i(x, n, "upper", 1, &upper);
  if (rc != TH_OK) return rc;
  if (upper != 0 && upper != 1)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "upper %lld must be 0 or 1", (long long)upper);
  if (tc__ox_in(x, n, 1)) rc = tc__ox_const_ints(x, n, 1, kv, 1, &cnt);
  if (rc != TH_OK || TC__OX_REPORTED(x, before)) return rc;
  if (cnt == 0) return tc__ox_nfail(x, n, TH_ERR_INVALID, "k is empty (one value)");
  if (cnt == 1) k = kv[0];
  rc = tc__ox_node_in(x, n, 0, &a); /* float32 or int64 */
  if (rc != TH_OK || a < 0) return rc;
  int64_t dims[TC__OX_RANK];
  int r = tc__ox_tdims(x, a, dims);
  if (r < 2)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "the input has %d dimensions (at least 2)", r);
  int64_t R = dims[r - 2], C = dims[r - 1], one = 1;
  int m, z = 0, int64 = tc__ox_t(x, a)->dtype == TC_DTYPE_I64;
  float *mask, *zero;
  rc = tc__ox_mask_const(x, n, "mask", 2, dims + r - 2, &m, &mask);
  if (rc == TH_OK && m >= 0 && !int64) rc = tc__ox_mask_const(x, n, "zero", 1, &one, &z, &zero);
  if (rc != TH_OK || m < 0 || z < 0) return rc;
  for (int64_t i = 0; i < R; i++)
    for (int64_t j = 0; j < C; j++) /* j - i against k in 64 bits: k may be any int64 */
      mask[i * C + j] = (upper ? (j - i >= k) : (j - i <= k)) ? 1.0f : 0.0f;
  int t = tc_graph_binary(x->g, m, a, TC_BINARY_TAKE); /* int64: 0 where dropped, already */
  int l = t < 0 || int64 ? -1 : tc_graph_binary(x->g, m, z, TC_BINARY_LEAVE);
  int id = int64 ? t : l < 0 ? -1 : tc_graph_add(x->g, t, l);
  if (id < 0) return tc__ox_nfail(x, n, TH_ERR_INVALID, "%s", tc_graph_error(x->g));
  return tc__ox_set_node(x, n, 0, id);
}

/* Hardmax: 1.0 at the first maximum along the axis, 0.0 elsewhere. Opsets 1..12 (axis default 1)
 * take the input as the 2-D [d0 * .. * d(axis-1), d(axis) * .. * d(r-1)]; 13 on (axis default -1)
 * one axis. The index of ArgMax (kept as an axis of 1) cast to float is compared with the iota
 * 0 .. L-1 laid along the axis: exact, as L is at most 2^24. */
th_status tc__ox_c_hardmax(tc__ox *x, const Onnx__NodeProto *n) {
  int legacy = x->opset < 13, a, axis;
  int64_t ax;
  th_status rc = tc__ox_attr_i(x, n, "axis", legacy ? 1 : -1, &ax);
  if (rc == TH_OK) rc = tc__ox_float_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  int64_t dims[TC__OX_RANK], sd[TC__OX_RANK];
  int r = tc__ox_tdims(x, a, dims), rs = r, src = a;
  rc = tc__ox_axis(x, n, ax, r, &axis);
  if (rc != TH_OK) return rc;
  for (int d = 0; d < r; d++) sd[d] = dims[d];
  if (legacy) {
    sd[0] = sd[1] = 1;
    for (int d = 0; d < r; d++) sd[d >= axis] *= dims[d];
    rs = 2;
    axis = 1;
    rc = tc__ox_reshape_node(x, n, a, sd, 2, &src);
    if (rc != TH_OK || src < 0) return rc;
  }
  int64_t L = sd[axis], iod[TC__OX_RANK];
  if (L > ((int64_t)1 << 24))
    return tc__ox_unsupported(x, n, "the axis holds %lld elements (at most 2^24)", (long long)L);
  for (int d = 0; d < rs; d++) iod[d] = d == axis ? L : 1;
  int idx, io;
  float *iota;
  rc = tc__ox_reduce_axes(x, n, src, 1 << axis, TC_REDUCE_ARGMAX, 1, &idx);
  if (rc == TH_OK && idx >= 0) rc = tc__ox_mask_const(x, n, "iota", rs, iod, &io, &iota);
  if (rc != TH_OK || idx < 0 || io < 0) return rc;
  for (int64_t i = 0; i < L; i++) iota[i] = (float)i;
  int f = tc_graph_cast(x->g, idx, TC_DTYPE_F32);
  int id = f < 0 ? -1 : tc_graph_binary(x->g, f, io, TC_BINARY_EQ);
  if (id < 0) return tc__ox_nfail(x, n, TH_ERR_INVALID, "%s", tc_graph_error(x->g));
  if (legacy) {
    rc = tc__ox_bind_node(x, n, NULL, id);
    if (rc == TH_OK) rc = tc__ox_reshape_node(x, n, id, dims, r, &id);
    if (rc != TH_OK || id < 0) return rc;
  }
  return tc__ox_set_node(x, n, 0, id);
}
