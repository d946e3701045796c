/* The ONNX importer's converters of scatters by runtime indices: ScatterElements (opsets 11..21,
 * reduction none, add, mul, max, min) and the old Scatter (opsets 9, 10: ScatterElements without
 * a reduction) onto the scatter family (TC_OP_SCATTER). Data and updates are float tensors (a
 * constant one materialised); the indices are int64 graph inputs or computed int64 nodes. And Tile
 * (opsets 6..21) by constant repeats: concats of copies along each repeated axis. OneHot (opsets
 * 9..21) with constant depth and values: a broadcast comparison of the indices with 0..depth-1.
 * TopK (opsets 1..21) by ranks: every element's rank along the axis from broadcast comparisons,
 * then the k ranks picked by a comparison with 0..k-1 (values: a sum, indices: an ArgMax). */
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

/* A constant [rows, cols] named after n plus tag, element (i, j) = f(i, j) (a parameter). */
static int tc__ox_table(tc__ox *x, const Onnx__NodeProto *n, const char *tag, int64_t rows,
                        int64_t cols, int tri) {
  char nm[256], pn[300];
  snprintf(pn, sizeof pn, "%s.%s", tc__ox_gname(x, n, nm, sizeof nm), tag);
  int id = tc_graph_const(x->g, pn, 2, (int64_t[]){rows, cols}, TC_INIT_WEIGHT, 1);
  if (id < 0 || tc__ox_fill_param(x, x->g->nodes[id].weight, 0.0f) != TH_OK) return -1;
  tc_param *p = &x->g->params[x->g->nodes[id].weight];
  for (int64_t e = 0; p->data && e < p->numel; e++)
    p->data[e] = tri ? (float)(e % cols < e / cols) : (float)(e / cols);
  return id;
}

/* TopK: with the axis moved last (L long), rank_i = #{j: x_j beats x_i} + #{j < i: x_j == x_i}
 * (larger beats for largest, smaller for smallest; ties: the lower index first, as ONNX's
 * reference), sel[r, i] = (rank_i == r) for r < k; values = sum_i sel * x, indices = ArgMax_i sel
 * (int64), each moved back to the axis. L * L comparisons per row: refused past 2^26 elements. */
th_status tc__ox_c_topk(tc__ox *x, const Onnx__NodeProto *n) {
  int64_t ax, largest, k = 0, dims[TC__OX_RANK];
  int a, cnt = 1, before = x->nunsup;
  th_status rc = tc__ox_attr_i(x, n, "axis", -1, &ax);
  if (rc == TH_OK) rc = tc__ox_attr_i(x, n, "largest", 1, &largest);
  if (rc == TH_OK && x->opset < 10) rc = tc__ox_attr_i(x, n, "k", 0, &k);
  if (rc == TH_OK && x->opset >= 10) rc = tc__ox_const_ints(x, n, 1, &k, 1, &cnt);
  if (rc != TH_OK || TC__OX_REPORTED(x, before)) return rc;
  if (cnt != 1) return tc__ox_nfail(x, n, TH_ERR_INVALID, "k must be one value");
  rc = tc__ox_float_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  int r = tc__ox_tdims(x, a, dims), axis;
  rc = tc__ox_axis(x, n, ax, r, &axis);
  if (rc != TH_OK) return rc;
  int64_t len = dims[axis], rows = tc_tensor_numel(tc__ox_t(x, a)) / len;
  if (k < 1 || k > len)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "k %lld is outside [1, %lld]", (long long)k,
                        (long long)len);
  if (r + 1 > TC_MAX_DIMS || rows * len * len > ((int64_t)1 << 26))
    return tc__ox_unsupported(x, n, "rank %d, %lld rows of %lld (at most rank %d, 2^26 pairs)", r,
                              (long long)rows, (long long)len, TC_MAX_DIMS - 1);
  int perm[TC_MAX_DIMS], back[TC_MAX_DIMS], o[TC_MAX_DIMS], col[TC_MAX_DIMS], row[TC_MAX_DIMS];
  for (int d = 0, q = 0; d < r; d++)
    if (d != axis) o[q++] = (int)dims[d];
  for (int d = 0; d < r; d++) perm[d] = d < axis ? d : d < r - 1 ? d + 1 : axis;
  /* sel's dims [o.., k, L] to [o[:axis], k, o[axis:], L] */
  for (int d = 0; d <= r; d++) back[d] = d < axis ? d : d == axis ? r - 1 : d < r ? d - 1 : r;
  memcpy(col, o, sizeof o);
  memcpy(row, o, sizeof o);
  col[r - 1] = (int)len, col[r] = 1, row[r - 1] = 1, row[r] = (int)len;
  int xt = axis == r - 1 ? a : tc_graph_transpose(x->g, a, perm);
  int xs = largest ? xt : tc_graph_affine(x->g, xt, -1.0f, 0.0f);
  int xi = tc_graph_reshape(x->g, xs, r + 1, col), xj = tc_graph_reshape(x->g, xs, r + 1, row);
  int tri = tc__ox_table(x, n, "tri", len, len, 1), iota = tc__ox_table(x, n, "iota", k, 1, 0);
  int beats = tc_graph_binary(x->g, xj, xi, TC_BINARY_GT);
  int ties = tc_graph_mul(x->g, tc_graph_binary(x->g, xj, xi, TC_BINARY_EQ), tri);
  int rank = tc_graph_reduce(x->g, tc_graph_add(x->g, beats, ties), TC_REDUCE_SUM);
  rank = tc_graph_reshape(x->g, rank, r + 1, row);
  int sel = tc_graph_binary(x->g, rank, iota, TC_BINARY_EQ); /* [o.., k, L] */
  int val = tc_graph_mul(x->g, sel, tc_graph_reshape(x->g, xt, r + 1, row));
  if (axis != r - 1) {
    sel = tc_graph_transpose(x->g, sel, back);
    val = tc_graph_transpose(x->g, val, back);
  }
  rc = tc__ox_bind_node(x, n, NULL, val);
  if (rc != TH_OK) return rc;
  int64_t od[TC__OX_RANK];
  memcpy(od, dims, sizeof od);
  od[axis] = k;
  int vid, iid;
  rc = tc__ox_reshape_node(x, n, tc_graph_reduce(x->g, val, TC_REDUCE_SUM), od, r, &vid);
  if (rc == TH_OK && vid >= 0) rc = tc__ox_set_node(x, n, 0, vid);
  if (rc != TH_OK || vid < 0 || n->n_output < 2 || !tc__ox_out(x, n, 1)) return rc;
  rc = tc__ox_reshape_node(x, n, tc_graph_reduce(x->g, sel, TC_REDUCE_ARGMAX), od, r, &iid);
  if (rc != TH_OK || iid < 0) return rc;
  return tc__ox_set_node(x, n, 1, iid);
}
