/* The ONNX importer's converters of scatters by runtime indices: ScatterElements (opsets 11..21,
 * reduction none, add, mul, max, min) and the old Scatter (opsets 9, 10: ScatterElements without
 * a reduction) onto the scatter family (TC_OP_SCATTER). Data and updates are float tensors (a
 * constant one materialised); the indices are int64 graph inputs or computed int64 nodes. And Tile
 * (opsets 6..21) by constant repeats: concats of copies along each repeated axis. OneHot (opsets
 * 9..21) with constant depth and values: a broadcast comparison of the indices with 0..depth-1. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "onnx_int.h"
#include "workload.h"

th_status tc__ox_c_scatter(tc__ox *x, const Onnx__NodeProto *n) {
  static const char *const reds[TC_SCATTER_COUNT] = {"none", "add", "mul", "max", "min"};
  char red[16];
  int64_t ax;
  int a, i, u, axis, op = -1;
  th_status rc = tc__ox_attr_i(x, n, "axis", 0, &ax);
  if (rc == TH_OK) rc = tc__ox_attr_s(x, n, "reduction", "none", red, sizeof red);
  if (rc != TH_OK) return rc;
  for (int k = 0; k < TC_SCATTER_COUNT; k++)
    if (strcmp(red, reds[k]) == 0) op = k;
  if (op < 0)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "reduction '%s' is not none, add, mul, max or min",
                        red);
  tc__oxv *vi = tc__ox_in(x, n, 1);
  if (!vi || !tc__ox_in(x, n, 0) || !tc__ox_in(x, n, 2))
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "needs data, indices and updates");
  if (vi->kind != TC__OX_NODE)
    return tc__ox_unsupported(x, n, "constant indices (only runtime int64 ones)");
  rc = tc__ox_float_in(x, n, 0, &a);
  if (rc == TH_OK && a >= 0) rc = tc__ox_node_in(x, n, 1, &i);
  if (rc == TH_OK && a >= 0 && i >= 0) rc = tc__ox_float_in(x, n, 2, &u);
  if (rc != TH_OK || a < 0 || i < 0 || u < 0) return rc;
  const tc_tensor *td = tc__ox_t(x, a), *ti = tc__ox_t(x, i), *tu = tc__ox_t(x, u);
  if (ti->dtype != TC_DTYPE_I64) return tc__ox_unsupported(x, n, "the indices must be int64");
  rc = tc__ox_axis(x, n, ax, td->ndim, &axis);
  if (rc != TH_OK) return rc;
  int ok = ti->ndim == td->ndim && tu->ndim == ti->ndim;
  for (int d = 0; ok && d < td->ndim; d++) ok = tu->shape[d] == ti->shape[d];
  if (!ok)
    return tc__ox_nfail(x, n, TH_ERR_INVALID,
                        "indices and updates must have data's rank %d and "
                        "one shape",
                        td->ndim);
  for (int d = 0; d < td->ndim; d++)
    if (d != axis && ti->shape[d] != td->shape[d])
      return tc__ox_unsupported(x, n,
                                "indices whose dim %d (%d) differs from data's (%d): only "
                                "the scattered axis %d may differ",
                                d, ti->shape[d], td->shape[d], axis);
  return tc__ox_set_node(x, n, 0, tc_graph_scatter(x->g, a, i, u, axis, op));
}

/* Tile: along each axis d with repeats r > 1, a concat of r copies (in groups of at most
 * TC_MAX_INPUTS, chained). The repeats must be constant: a runtime one makes the shape unknown. */
th_status tc__ox_c_tile(tc__ox *x, const Onnx__NodeProto *n) {
  int64_t reps[TC__OX_RANK], dims[TC__OX_RANK], numel = 1;
  int cnt, a, before = x->nunsup;
  th_status rc = tc__ox_const_ints(x, n, 1, reps, TC__OX_RANK, &cnt);
  if (rc != TH_OK || TC__OX_REPORTED(x, before)) return rc;
  rc = tc__ox_float_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  int r = tc__ox_tdims(x, a, dims);
  if (cnt != r)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "repeats has %d values for an input of rank %d", cnt,
                        r);
  for (int d = 0; d < r; d++) {
    if (reps[d] < 1)
      return tc__ox_unsupported(x, n, "repeats %lld on axis %d (an empty result)",
                                (long long)reps[d], d);
    if (reps[d] > INT_MAX / dims[d])
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "axis %d would be longer than %d", d, INT_MAX);
    numel *= dims[d] * reps[d];
    if (numel > TC_ONNX_MAX_ELEMENTS)
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "the result has more than %lld elements",
                          (long long)TC_ONNX_MAX_ELEMENTS);
  }
  int acc = a;
  for (int d = 0; d < r; d++) {
    int one = acc, cnn = d == 1 && r == 4;
    for (int64_t done = 1; done < reps[d];) {
      int grp[TC_MAX_INPUTS], c = 0;
      grp[c++] = acc;
      while (c < TC_MAX_INPUTS && done < reps[d]) grp[c++] = one, done++;
      acc = cnn ? tc_graph_concat(x->g, c, grp) : tc_graph_concat_axis(x->g, c, grp, d);
      rc = tc__ox_bind_node(x, n, NULL, acc);
      if (rc != TH_OK) return rc;
    }
  }
  return tc__ox_set_node(x, n, 0, acc);
}

/* OneHot: indices (runtime, float or int64; a negative one plus depth) compared, broadcast, with a
 * constant 0..depth-1 laid along the new axis; off + (on - off) * equal. An index outside
 * [-depth, depth) (or not integral) matches nothing: all off. */
th_status tc__ox_c_onehot(tc__ox *x, const Onnx__NodeProto *n) {
  tc__oxv *vd = tc__ox_in(x, n, 1), *vv = tc__ox_in(x, n, 2);
  double depth;
  int64_t ax;
  th_status rc = tc__ox_attr_i(x, n, "axis", -1, &ax);
  if (rc != TH_OK) return rc;
  if (!vd || !vv) return tc__ox_nfail(x, n, TH_ERR_INVALID, "needs indices, depth and values");
  if (vd->kind != TC__OX_CONST || vv->kind != TC__OX_CONST)
    return tc__ox_unsupported(x, n, "a runtime depth or values (only constant ones)");
  if (!tc__ox_scalar(vd, &depth) || vv->c.n != 2)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "depth must be one value and values two");
  depth = depth < 0 ? ceil(depth) : floor(depth);
  if (depth < 1 || depth > (1 << 24))
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "depth %g is outside [1, %d]", depth, 1 << 24);
  double off = vv->c.fl ? vv->c.f[0] : (double)vv->c.i[0];
  double on = vv->c.fl ? vv->c.f[1] : (double)vv->c.i[1];
  int i;
  rc = tc__ox_node_in(x, n, 0, &i);
  if (rc != TH_OK || i < 0) return rc;
  int64_t dims[TC__OX_RANK], numel = 1;
  int q = tc__ox_tdims(x, i, dims), axis;
  rc = tc__ox_axis(x, n, ax, q + 1, &axis);
  if (rc != TH_OK) return rc;
  if (q + 1 > TC_MAX_DIMS) return tc__ox_unsupported(x, n, "the result has %d dimensions", q + 1);
  int ws[TC_MAX_DIMS];
  int64_t is[TC_MAX_DIMS];
  for (int d = 0, k = 0; d <= q; d++) {
    ws[d] = d == axis ? 1 : (int)dims[k++];
    is[d] = d == axis ? (int64_t)depth : 1;
    numel *= d == axis ? (int64_t)depth : ws[d];
  }
  if (numel > TC_ONNX_MAX_ELEMENTS)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "the result has more than %lld elements",
                        (long long)TC_ONNX_MAX_ELEMENTS);
  if (tc__ox_t(x, i)->dtype == TC_DTYPE_I64) i = tc_graph_cast(x->g, i, TC_DTYPE_F32);
  /* w = i + depth * relu(-sign(i)): a negative index counts from the end */
  int neg = tc_graph_relu(
      x->g, tc_graph_affine(x->g, tc_graph_math(x->g, i, TC_UNARY_SIGN, 0.0f, 0.0f), -1.0f, 0.0f));
  int w = tc_graph_add(x->g, i, tc_graph_affine(x->g, neg, (float)depth, 0.0f));
  w = tc_graph_reshape(x->g, w, q + 1, ws);
  rc = tc__ox_bind_node(x, n, NULL, w);
  if (rc != TH_OK) return rc;
  char nm[256], pn[300];
  snprintf(pn, sizeof pn, "%s.iota", tc__ox_gname(x, n, nm, sizeof nm));
  int iota = tc_graph_const(x->g, pn, q + 1, is, TC_INIT_WEIGHT, 1);
  if (iota < 0) return tc__ox_bind_node(x, n, NULL, -1);
  rc = tc__ox_fill_param(x, x->g->nodes[iota].weight, 0.0f);
  if (rc != TH_OK) return rc;
  tc_param *p = &x->g->params[x->g->nodes[iota].weight];
  for (int64_t k = 0; p->data && k < p->numel; k++) p->data[k] = (float)k;
  int eq = tc_graph_binary(x->g, w, iota, TC_BINARY_EQ);
  return tc__ox_set_node(x, n, 0, tc_graph_affine(x->g, eq, (float)(on - off), (float)off));
}
