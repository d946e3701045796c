/* The ONNX importer's reductions: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd,
 * ReduceSumSquare, ReduceL1, ReduceL2, ReduceLogSum and ReduceLogSumExp at every opset (axes an
 * attribute below 13 for ReduceSum and below 18 for the others, an input from then; keepdims;
 * noop_with_empty_axes; empty axes reducing all; negative axes) onto one graph op, TC_OP_REDUCE
 * over the last axis: the reduced axes are moved last (a transpose where they are not already) and
 * merged into one. ReduceMean over the spatial axes of a 4-D map stays a global average pool. */
#include <stdio.h>
#include <string.h>

#include "onnx_int.h"
#include "workload.h"

static const struct {
  const char *op;
  int reduce;
  int64_t input_since; /* the opset from which axes is an input */
} tc__ox_reductions[] = {
    {"ReduceSum", TC_REDUCE_SUM, 13},        {"ReduceMean", TC_REDUCE_MEAN, 18},
    {"ReduceMax", TC_REDUCE_MAX, 18},        {"ReduceMin", TC_REDUCE_MIN, 18},
    {"ReduceProd", TC_REDUCE_PROD, 18},      {"ReduceSumSquare", TC_REDUCE_SUM_SQUARE, 18},
    {"ReduceL1", TC_REDUCE_L1, 18},          {"ReduceL2", TC_REDUCE_L2, 18},
    {"ReduceLogSum", TC_REDUCE_LOG_SUM, 18}, {"ReduceLogSumExp", TC_REDUCE_LOG_SUM_EXP, 18},
};

th_status tc__ox_reduce_axes(tc__ox *x, const Onnx__NodeProto *n, int a, int mask, int op,
                                    int keep, int *out) {
  int64_t dims[TC__OX_RANK], od[TC__OX_RANK], rows[TC__OX_RANK];
  int r = tc__ox_tdims(x, a, dims), perm[TC_MAX_DIMS], np = 0, ro = 0, nk = 0, moved = 0;
  int64_t len = 1;
  *out = -1;
  for (int d = 0; d < r; d++)
    if (!(mask >> d & 1)) {
      moved = moved || np != d;
      perm[np++] = d;
      rows[nk++] = dims[d];
    }
  for (int d = 0; d < r; d++)
    if (mask >> d & 1) {
      moved = moved || np != d;
      perm[np++] = d;
      len *= dims[d];
    }
  for (int d = 0; d < r; d++)
    if (!(mask >> d & 1) || keep) od[ro++] = mask >> d & 1 ? 1 : dims[d];
  int id = moved ? tc_graph_transpose(x->g, a, perm) : a;
  th_status rc = tc__ox_bind_node(x, n, NULL, id);
  rows[nk++] = len;
  if (rc == TH_OK) rc = tc__ox_reshape_node(x, n, id, rows, nk, &id);
  if (rc != TH_OK || id < 0) return rc;
  id = tc_graph_reduce(x->g, id, op);
  rc = tc__ox_bind_node(x, n, NULL, id);
  if (ro == 0) od[ro++] = 1; /* a scalar: one value */
  if (rc == TH_OK) rc = tc__ox_reshape_node(x, n, id, od, ro, out);
  return rc;
}

th_status tc__ox_c_reduce(tc__ox *x, const Onnx__NodeProto *n) {
  size_t k = 0;
  while (strcmp(tc__ox_reductions[k].op, n->op_type) != 0) k++;
  int op = tc__ox_reductions[k].reduce;
  int64_t axes[TC__OX_RANK], keep, noop = 0;
  int cnt, a, before = x->nunsup;
  th_status rc =
      tc__ox_list(x, n, "axes", 1, tc__ox_reductions[k].input_since, axes, TC__OX_RANK, &cnt);
  if (rc == TH_OK) rc = tc__ox_attr_i(x, n, "keepdims", 1, &keep);
  if (rc == TH_OK && x->opset >= tc__ox_reductions[k].input_since)
    rc = tc__ox_attr_i(x, n, "noop_with_empty_axes", 0, &noop);
  if (rc != TH_OK || TC__OX_REPORTED(x, before)) return rc;
  rc = tc__ox_float_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  const tc_tensor *t = tc__ox_t(x, a);
  int mask = 0;
  for (int i = 0; i < cnt; i++) {
    int d;
    rc = tc__ox_axis(x, n, axes[i], t->ndim, &d);
    if (rc != TH_OK) return rc;
    if (mask >> d & 1) return tc__ox_nfail(x, n, TH_ERR_INVALID, "axis %d is named twice", d);
    mask |= 1 << d;
  }
  if (cnt <= 0 && !noop) mask = (1 << t->ndim) - 1; /* no axes: all of them */
  if (mask == 0) {
    if (op == TC_REDUCE_SUM || op == TC_REDUCE_MEAN || op == TC_REDUCE_MAX || op == TC_REDUCE_MIN ||
        op == TC_REDUCE_PROD || op == TC_REDUCE_LOG_SUM_EXP)
      return tc__ox_set_node(x, n, 0, a);
  }
  int id;
  if (op == TC_REDUCE_MEAN && t->ndim == 4 && mask == 12) { /* global pooling: its own kernel */
    id = tc_graph_global_avg_pool(x->g, a);
    if (!keep) {
      int64_t nc[2] = {t->shape[0], t->shape[1]};
      rc = tc__ox_bind_node(x, n, NULL, id);
      if (rc == TH_OK) rc = tc__ox_reshape_node(x, n, id, nc, 2, &id);
    }
  } else {
    rc = tc__ox_reduce_axes(x, n, a, mask, op, keep != 0, &id);
  }
  if (rc != TH_OK || id < 0) return rc;
  return tc__ox_set_node(x, n, 0, id);
}

/* ArgMax and ArgMin (axis, keepdims, select_last_index from opset 12): the int64 index along one
 * axis, the same reduction with the axis moved last. */
th_status tc__ox_c_arg(tc__ox *x, const Onnx__NodeProto *n) {
  int max = strcmp(n->op_type, "ArgMax") == 0;
  int64_t ax, keep, last = 0;
  int a, d;
  th_status rc = tc__ox_attr_i(x, n, "axis", 0, &ax);
  if (rc == TH_OK) rc = tc__ox_attr_i(x, n, "keepdims", 1, &keep);
  if (rc == TH_OK && x->opset >= 12) rc = tc__ox_attr_i(x, n, "select_last_index", 0, &last);
  if (rc == TH_OK) rc = tc__ox_float_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  rc = tc__ox_axis(x, n, ax, tc__ox_t(x, a)->ndim, &d);
  if (rc != TH_OK) return rc;
  int op = last ? (max ? TC_REDUCE_ARGMAX_LAST : TC_REDUCE_ARGMIN_LAST)
                : (max ? TC_REDUCE_ARGMAX : TC_REDUCE_ARGMIN);
  int id;
  rc = tc__ox_reduce_axes(x, n, a, 1 << d, op, keep != 0, &id);
  if (rc != TH_OK || id < 0) return rc;
  return tc__ox_set_node(x, n, 0, id);
}

/* LayerNormalization over axes [axis, rank): the input as rows of their product, normalised
 * over the last axis. */
/* LayerNormalization's Mean and InvStdDev outputs (where used) from x2, the input as [rows, C]:
 * the row means and 1 / sqrt(mean((x - mean)^2) + eps), in the shape sd[0 .. r). */
static th_status tc__ox_ln_stats(tc__ox *x, const Onnx__NodeProto *n, int x2, float eps,
                                 const int64_t *sd, int r) {
  int mean = tc_graph_reduce(x->g, x2, TC_REDUCE_MEAN), id;
  int d = tc_graph_sub(x->g, x2, mean);
  int var = tc_graph_reduce(x->g, tc_graph_mul(x->g, d, d), TC_REDUCE_MEAN);
  int inv = tc_graph_math(x->g, tc_graph_affine(x->g, var, 1.0f, eps), TC_UNARY_SQRT, 0, 0);
  inv = tc_graph_math(x->g, inv, TC_UNARY_RECIPROCAL, 0, 0);
  th_status rc = tc__ox_bind_node(x, n, NULL, inv);
  for (int k = 1; rc == TH_OK && k < 3 && k < (int)n->n_output; k++) {
    if (!tc__ox_out(x, n, k)) continue;
    rc = tc__ox_reshape_node(x, n, k == 1 ? mean : inv, sd, r, &id);
    if (rc == TH_OK && id >= 0) rc = tc__ox_set_node(x, n, k, id);
  }
  return rc;
}

th_status tc__ox_c_layer_norm(tc__ox *x, const Onnx__NodeProto *n) {
  int64_t ax;
  float eps;
  int a, axis;
  th_status rc = tc__ox_attr_i(x, n, "axis", -1, &ax);
  if (rc == TH_OK) rc = tc__ox_attr_f(x, n, "epsilon", 1e-5f, &eps);
  if (rc == TH_OK) rc = tc__ox_float_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  int64_t dims[TC__OX_RANK], two[2] = {1, 1}, sd[TC__OX_RANK];
  int r = tc__ox_tdims(x, a, dims);
  rc = tc__ox_axis(x, n, ax, r, &axis);
  if (rc != TH_OK) return rc;
  for (int d = 0; d < r; d++) {
    two[d >= axis] *= dims[d];
    sd[d] = d < axis ? dims[d] : 1;
  }
  tc__oxv *sc = tc__ox_in(x, n, 1), *b = tc__ox_in(x, n, 2);
  int64_t C = two[1];
  if (!sc) return tc__ox_nfail(x, n, TH_ERR_INVALID, "Scale is missing");
  if (!(eps > 0)) return tc__ox_nfail(x, n, TH_ERR_INVALID, "epsilon must be positive");
  /* Scale and B constants of C floats are the kernel's gamma and beta; any others (runtime, or
   * broadcast over the normalised dims) a multiply and an add after it */
  int affine = sc->kind == TC__OX_CONST && sc->c.fl && sc->c.n == C &&
               (!b || (b->kind == TC__OX_CONST && b->c.fl && b->c.n == C));
  int x2 = a, id;
  if (axis != r - 1) rc = tc__ox_reshape_node(x, n, a, two, 2, &x2);
  if (rc != TH_OK || x2 < 0) return rc;
  char nm[256];
  id = tc_graph_layer_norm(x->g, tc__ox_gname(x, n, nm, sizeof nm), x2, eps);
  rc = tc__ox_bind_node(x, n, NULL, id);
  if (rc == TH_OK)
    rc = affine ? tc__ox_bind_param(x, n, &x->g->nodes[id].gamma, sc, 0, 1.0f)
                : tc__ox_fill_param(x, x->g->nodes[id].gamma, 1.0f);
  if (rc == TH_OK)
    rc = affine && b ? tc__ox_bind_param(x, n, &x->g->nodes[id].beta, b, 0, 1.0f)
                     : tc__ox_fill_param(x, x->g->nodes[id].beta, 0.0f);
  if (rc == TH_OK && x2 != a) rc = tc__ox_reshape_node(x, n, id, dims, r, &id);
  for (int k = 1; !affine && rc == TH_OK && id >= 0 && k < 3; k++) {
    int p;
    int64_t pd[TC__OX_RANK], od[TC__OX_RANK];
    int ro = -1, same = 1;
    if (!tc__ox_in(x, n, k)) continue;
    rc = tc__ox_float_in(x, n, k, &p);
    if (rc != TH_OK || p < 0) return rc;
    int rp = tc__ox_tdims(x, p, pd);
    if (tc__ox_bcast(dims, r, pd, rp, od, &ro) && ro == r)
      for (int d = 0; d < r; d++) same = same && od[d] == dims[d];
    if (!same || ro != r)
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "%s does not broadcast to the input's shape",
                          k == 1 ? "Scale" : "B");
    id = k == 1 ? tc_graph_mul(x->g, id, p) : tc_graph_add(x->g, id, p);
    rc = tc__ox_bind_node(x, n, NULL, id);
  }
  if (rc == TH_OK && id >= 0) rc = tc__ox_set_node(x, n, 0, id);
  if (rc == TH_OK && id >= 0 && (tc__ox_out(x, n, 1) || tc__ox_out(x, n, 2))) {
    if (axis == r - 1) rc = tc__ox_reshape_node(x, n, a, two, 2, &x2);
    if (rc == TH_OK && x2 >= 0) rc = tc__ox_ln_stats(x, n, x2, eps, sd, r);
  }
  return rc;
}

/* InstanceNormalization: each (n, c) plane normalised over its spatial axes (a layer norm of the
 * rows [N * C, spatial]), then times scale[c] plus B[c] (constants [C, 1, ...] broadcast). */
th_status tc__ox_c_instance_norm(tc__ox *x, const Onnx__NodeProto *n) {
  float eps;
  int a, id;
  th_status rc = tc__ox_attr_f(x, n, "epsilon", 1e-5f, &eps);
  if (rc == TH_OK) rc = tc__ox_float_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  int64_t dims[TC__OX_RANK], two[2] = {1, 1}, cshape[TC_MAX_DIMS];
  int r = tc__ox_tdims(x, a, dims);
  if (r < 3)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "the input has %d dimensions (at least 3)", r);
  for (int d = 0; d < r; d++) two[d >= 2] *= dims[d];
  tc__oxv *p[2] = {tc__ox_in(x, n, 1), tc__ox_in(x, n, 2)};
  for (int k = 0; k < 2; k++)
    if (!p[k] || p[k]->kind != TC__OX_CONST || !p[k]->c.fl || p[k]->c.n != dims[1])
      return tc__ox_unsupported(x, n, "scale and B must be constants of %lld floats",
                                (long long)dims[1]);
  if (!(eps > 0)) return tc__ox_nfail(x, n, TH_ERR_INVALID, "epsilon must be positive");
  char nm[256], pn[300];
  tc__ox_gname(x, n, nm, sizeof nm);
  rc = tc__ox_reshape_node(x, n, a, two, 2, &id);
  if (rc != TH_OK || id < 0) return rc;
  id = tc_graph_layer_norm(x->g, nm, id, eps);
  rc = tc__ox_bind_node(x, n, NULL, id);
  if (rc == TH_OK) rc = tc__ox_fill_param(x, x->g->nodes[id].gamma, 1.0f);
  if (rc == TH_OK) rc = tc__ox_fill_param(x, x->g->nodes[id].beta, 0.0f);
  if (rc == TH_OK) rc = tc__ox_reshape_node(x, n, id, dims, r, &id);
  cshape[0] = dims[1];
  for (int d = 1; d < r - 1; d++) cshape[d] = 1;
  for (int k = 0; rc == TH_OK && id >= 0 && k < 2; k++) {
    snprintf(pn, sizeof pn, "%s.%s", nm, k ? "shift" : "scale");
    int c = tc_graph_const(x->g, pn, r - 1, cshape, TC_INIT_EMBED, 1);
    rc = tc__ox_bind_node(x, n, NULL, c);
    if (rc == TH_OK) rc = tc__ox_bind_param(x, n, &x->g->nodes[c].weight, p[k], 0, 1.0f);
    if (rc == TH_OK) id = k ? tc_graph_add(x->g, id, c) : tc_graph_mul(x->g, id, c);
    if (rc == TH_OK) rc = tc__ox_bind_node(x, n, NULL, id);
  }
  if (rc != TH_OK || id < 0) return rc;
  return tc__ox_set_node(x, n, 0, id);
}
