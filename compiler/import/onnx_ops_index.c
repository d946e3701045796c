/* The ONNX importer's converters of the softmax family and of indexing by runtime indices:
 * Softmax and LogSoftmax over any axis (a log after the softmax), Gather (a slice for evenly
 * stepped constant indices, an embedding for rows of a constant table, else the gather family)
 * and GatherElements (the gather family, TC_OP_GATHER). Int64 index tensors are graph inputs or
 * computed int64 nodes; integer constants stay in the importer. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "onnx_int.h"
#include "workload.h"

/* ---- softmax family
 * ------------------------------------------------------------------------------------ */

/* softmax over the last axis of node a, with a mask added before it and a scalar scale folded in */
static int tc__ox_softmax_last(tc__ox *x, int a) {
  const tc_node *nd = &x->g->nodes[a];
  int mask = -1;
  float alpha = 1.0f;
  if (nd->op == TC_OP_ADD) {
    for (int side = 0; side < 2; side++) {
      const tc_tensor *p = tc__ox_t(x, nd->inputs[side]);
      if (p->ndim == nd->out.ndim && memcmp(p->shape, nd->out.shape, sizeof p->shape) == 0) {
        mask = nd->inputs[!side];
        a = nd->inputs[side];
        break;
      }
    }
  }
  a = tc__ox_unscale(x, a, &alpha);
  return tc_graph_softmax_ex(x->g, a, alpha, mask);
}

/* softmax of node a over one axis: between two transposes that swap it with the last */
static int tc__ox_softmax_axis(tc__ox *x, int a, int axis) {
  int r = tc__ox_t(x, a)->ndim, perm[TC_MAX_DIMS];
  if (axis == r - 1) return tc_graph_softmax_ex(x->g, a, 1.0f, -1);
  for (int d = 0; d < r; d++) perm[d] = d;
  perm[axis] = r - 1;
  perm[r - 1] = axis; /* a swap is its own inverse */
  int id = tc_graph_transpose(x->g, a, perm);
  id = tc_graph_softmax_ex(x->g, id, 1.0f, -1);
  return tc_graph_transpose(x->g, id, perm);
}

static th_status tc__ox_softmax(tc__ox *x, const Onnx__NodeProto *n) {
  int64_t ax;
  int a, axis;
  th_status rc = tc__ox_attr_i(x, n, "axis", x->opset < 13 ? 1 : -1, &ax);
  if (rc == TH_OK) rc = tc__ox_float_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  int64_t dims[TC__OX_RANK];
  int r = tc__ox_tdims(x, a, dims);
  rc = tc__ox_axis(x, n, ax, r, &axis);
  if (rc != TH_OK) return rc;
  if (axis == r - 1) return tc__ox_set_node(x, n, 0, tc__ox_softmax_last(x, a));
  int id;
  if (x->opset <
      13) { /* softmax of the input flattened to [prod(dims[:axis]), prod(dims[axis:])] */
    int64_t two[2] = {1, 1};
    for (int d = 0; d < r; d++) two[d >= axis] *= dims[d];
    rc = tc__ox_reshape_node(x, n, a, two, 2, &id);
    if (rc != TH_OK || id < 0) return rc;
    id = tc_graph_softmax_ex(x->g, id, 1.0f, -1);
    rc = tc__ox_bind_node(x, n, NULL, id);
    if (rc == TH_OK) rc = tc__ox_reshape_node(x, n, id, dims, r, &id);
    if (rc != TH_OK || id < 0) return rc;
    return tc__ox_set_node(x, n, 0, id);
  }
  return tc__ox_set_node(x, n, 0, tc__ox_softmax_axis(x, a, axis));
}

th_status tc__ox_c_softmax(tc__ox *x, const Onnx__NodeProto *n) {
  th_status rc = tc__ox_softmax(x, n);
  if (rc != TH_OK || strcmp(n->op_type, "LogSoftmax") != 0) return rc;
  tc__oxv *o = tc__ox_out(x, n, 0);
  if (!o || o->kind != TC__OX_NODE) return rc;
  /* log(softmax): exact to float rounding but -inf below e^-87 of the row's largest value */
  return tc__ox_bind_node(x, n, o, tc_graph_math(x->g, o->node, TC_UNARY_LOG, 0.0f, 0.0f));
}

/* ---- gathers
 * ------------------------------------------------------------------------------------------ */

static th_status tc__ox_gather_const(tc__ox *x, const Onnx__NodeProto *n) {
  tc__oxv *vd = tc__ox_in(x, n, 0), *vi = tc__ox_in(x, n, 1);
  int64_t ax;
  th_status rc = tc__ox_attr_i(x, n, "axis", 0, &ax);
  if (rc != TH_OK) return rc;
  if (!vd || !vi) return tc__ox_nfail(x, n, TH_ERR_INVALID, "needs data and indices");
  char nm[256];
  tc__ox_gname(x, n, nm, sizeof nm);
  if (vi->kind ==
      TC__OX_NODE) { /* an embedding: rows of a constant table by runtime int64 indices */
    const tc_tensor *ti = tc__ox_t(x, vi->node);
    if (vd->kind != TC__OX_CONST || !vd->c.fl || vd->c.ndim != 2 || (ax != 0 && ax != -2))
      return tc__ox_unsupported(
          x, n, "gathers by runtime indices only rows of a constant 2-D table (an embedding)");
    if (ti->dtype != TC_DTYPE_I64) return tc__ox_unsupported(x, n, "the indices must be int64");
    if (vd->c.dims[0] > INT_MAX || vd->c.dims[1] > INT_MAX || vd->c.n == 0)
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "the table is too large or empty");
    int id = tc_graph_embedding(x->g, nm, vi->node, (int)vd->c.dims[0], (int)vd->c.dims[1]);
    rc = tc__ox_set_node(x, n, 0, id);
    if (rc == TH_OK) rc = tc__ox_bind_param(x, n, &x->g->nodes[id].weight, vd, 0, 1.0f);
    return rc;
  }
  if (vi->c.fl) return tc__ox_nfail(x, n, TH_ERR_INVALID, "indices must be integers");
  /* constant indices into a tensor: a slice when they run in even steps */
  int a;
  rc = tc__ox_float_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  int64_t dims[TC__OX_RANK], od[TC__OX_RANK];
  int r = tc__ox_tdims(x, a, dims), axis;
  rc = tc__ox_axis(x, n, ax, r, &axis);
  if (rc != TH_OK) return rc;
  int64_t len = dims[axis], cnt = vi->c.n, first = 0, step = 1;
  if (cnt == 0) return tc__ox_unsupported(x, n, "no indices");
  for (int64_t j = 0; j < cnt; j++) {
    int64_t v = vi->c.i[j];
    if (v < -len || v >= len)
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "index %lld is out of range for length %lld",
                          (long long)v, (long long)len);
    v = v < 0 ? v + len : v;
    if (j == 0)
      first = v;
    else if (j == 1)
      step = v - first;
    if (j > 0 && (step < 1 || v != first + j * step))
      return tc__ox_unsupported(x, n, "constant indices that do not run in even increasing steps");
  }
  int ro = 0;
  for (int d = 0; d < axis; d++) od[ro++] = dims[d];
  for (int d = 0; d < vi->c.ndim && ro < TC__OX_RANK; d++) od[ro++] = vi->c.dims[d];
  for (int d = axis + 1; d < r && ro < TC__OX_RANK; d++) od[ro++] = dims[d];
  if (ro != r - 1 + vi->c.ndim)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "the result has too many dimensions");
  int id =
      tc_graph_slice(x->g, a, axis, (int)first, (int)(first + (cnt - 1) * step + 1), (int)step);
  rc = tc__ox_bind_node(x, n, NULL, id);
  if (rc == TH_OK) rc = tc__ox_reshape_node(x, n, id, od, ro, &id);
  if (rc != TH_OK || id < 0) return rc;
  return tc__ox_set_node(x, n, 0, id);
}

/* Gather by runtime int64 indices, or GatherElements: TC_OP_GATHER on float data (a constant one
 * materialised). */
th_status tc__ox_c_gather(tc__ox *x, const Onnx__NodeProto *n) {
  int elements = strcmp(n->op_type, "GatherElements") == 0;
  tc__oxv *vd = tc__ox_in(x, n, 0), *vi = tc__ox_in(x, n, 1);
  if (!vd || !vi) return tc__ox_nfail(x, n, TH_ERR_INVALID, "needs data and indices");
  int embedding = vd->kind == TC__OX_CONST && vd->c.fl && vd->c.ndim == 2;
  if (!elements && (vi->kind != TC__OX_NODE || embedding)) return tc__ox_gather_const(x, n);
  if (vi->kind != TC__OX_NODE)
    return tc__ox_unsupported(x, n,
                              "constant indices on a runtime tensor (only runtime int64 ones)");
  int64_t ax;
  int a, i, axis;
  th_status rc = tc__ox_attr_i(x, n, "axis", 0, &ax);
  if (rc == TH_OK) rc = tc__ox_float_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  rc = tc__ox_node_in(x, n, 1, &i);
  if (rc != TH_OK || i < 0) return rc;
  const tc_tensor *td = tc__ox_t(x, a), *ti = tc__ox_t(x, i);
  if (ti->dtype != TC_DTYPE_I64) return tc__ox_unsupported(x, n, "the indices must be int64");
  rc = tc__ox_axis(x, n, ax, td->ndim, &axis);
  if (rc != TH_OK) return rc;
  if (!elements && td->ndim - 1 + ti->ndim > TC_MAX_DIMS)
    return tc__ox_unsupported(x, n, "the result has %d dimensions (the graph holds 1..%d)",
                              td->ndim - 1 + ti->ndim, TC_MAX_DIMS);
  return tc__ox_set_node(x, n, 0, tc_graph_gather(x->g, a, i, axis, elements, 0, 0));
}

/* ---- losses
 * ------------------------------------------------------------------------------------------- */

/* The sum of every element of node id as a [1, 1] node: [1, K] times a [K, 1] parameter of ones
 * (named after the node plus tag). -1 with the graph's error. */
static int tc__ox_sum_all(tc__ox *x, const Onnx__NodeProto *n, int id, const char *tag) {
  char nm[256], pn[300];
  int64_t k = tc_tensor_numel(tc__ox_t(x, id)), ks[2] = {k, 1};
  if (k > INT_MAX) return -1;
  snprintf(pn, sizeof pn, "%s.%s", tc__ox_gname(x, n, nm, sizeof nm), tag);
  int row = tc_graph_reshape(x->g, id, 2, (int[]){1, (int)k});
  int ones = tc_graph_const(x->g, pn, 2, ks, TC_INIT_WEIGHT, 1);
  if (row < 0 || ones < 0 || tc__ox_fill_param(x, x->g->nodes[ones].weight, 1.0f) != TH_OK)
    return -1;
  return tc_graph_matmul(x->g, row, ones, 0, 0, 1.0f);
}

/* NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (opsets 12..21): input [N, C, d...]
 * (SCE: scores, whose log-softmax over C is the input and the optional log_prob output), int64
 * target [N, d...], optional weight [C]. loss = -input[n, target, d...] * weight[target] (0 where
 * the target is ignore_index); reduction none keeps [N, d...], sum and mean give one value (a
 * [1] tensor), mean divided by the sum of the picked weights (the count without weights). */
th_status tc__ox_c_loss(tc__ox *x, const Onnx__NodeProto *n) {
  int sce = strcmp(n->op_type, "SoftmaxCrossEntropyLoss") == 0;
  char red[16];
  int64_t ii = 0;
  int a, t, w = -1;
  th_status rc = tc__ox_attr_s(x, n, "reduction", "mean", red, sizeof red);
  int has_ii = tc__ox_attr(n, "ignore_index") != NULL;
  if (rc == TH_OK && has_ii) rc = tc__ox_attr_i(x, n, "ignore_index", 0, &ii);
  if (rc != TH_OK) return rc;
  int mode = strcmp(red, "none") == 0 ? 0 : strcmp(red, "sum") == 0 ? 1 : 2;
  if (mode == 2 && strcmp(red, "mean") != 0)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "reduction '%s' is not none, sum or mean", red);
  /* an ignore_index beyond 32 bits matches no index the gather reads: it needs no test */
  if (has_ii && (ii < INT_MIN || ii > INT_MAX)) has_ii = 0;
  rc = tc__ox_float_in(x, n, 0, &a);
  if (rc == TH_OK && a >= 0) rc = tc__ox_node_in(x, n, 1, &t);
  if (rc == TH_OK && a >= 0 && t >= 0 && tc__ox_in(x, n, 2)) rc = tc__ox_float_in(x, n, 2, &w);
  if (rc != TH_OK || a < 0 || t < 0 || (tc__ox_in(x, n, 2) && w < 0)) return rc;
  const tc_tensor *ta = tc__ox_t(x, a), *tt = tc__ox_t(x, t);
  int r = ta->ndim, C = r >= 2 ? ta->shape[1] : 0;
  int ok = r >= 2 && tt->dtype == TC_DTYPE_I64 && tt->ndim == r - 1 && tt->shape[0] == ta->shape[0];
  for (int d = 2; ok && d < r; d++) ok = tt->shape[d - 1] == ta->shape[d];
  if (!ok)
    return tc__ox_nfail(x, n, TH_ERR_INVALID,
                        "needs input [N, C, d...] and an int64 target [N, d...] of its dims");
  if (w >= 0 && (tc__ox_t(x, w)->ndim != 1 || tc__ox_t(x, w)->shape[0] != C))
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "the weight must have C = %d elements", C);
  if (sce) { /* log_prob: log(softmax) over the classes */
    a = tc_graph_math(x->g, tc__ox_softmax_axis(x, a, 1), TC_UNARY_LOG, 0.0f, 0.0f);
    if (n->n_output > 1 && tc__ox_out(x, n, 1))
      rc = tc__ox_set_node(x, n, 1, a);
    else
      rc = tc__ox_bind_node(x, n, NULL, a);
    if (rc != TH_OK) return rc;
  }
  int64_t kd[TC__OX_RANK], td[TC__OX_RANK];
  int rt = tc__ox_tdims(x, t, td);
  kd[0] = td[0];
  kd[1] = 1;
  for (int d = 1; d < rt; d++) kd[d + 1] = td[d];
  int t1;
  rc = tc__ox_reshape_node(x, n, t, kd, r, &t1); /* target [N, 1, d...] picks along C */
  if (rc != TH_OK || t1 < 0) return rc;
  int pick = tc_graph_gather(x->g, a, t1, 1, 1, has_ii, (int)ii), wt = -1;
  if (w < 0 && mode == 2 && has_ii) { /* the mean's count: 1 or 0 (ignored) per target */
    char nm[256], pn[300];
    snprintf(pn, sizeof pn, "%s.ones", tc__ox_gname(x, n, nm, sizeof nm));
    w = tc_graph_const(x->g, pn, 1, (int64_t[]){C}, TC_INIT_WEIGHT, 1);
    if (w >= 0 && (rc = tc__ox_fill_param(x, x->g->nodes[w].weight, 1.0f)) != TH_OK) return rc;
  }
  if (w >= 0) {
    wt = tc_graph_gather(x->g, w, t1, 0, 0, has_ii, (int)ii); /* [N, 1, d...] as the pick */
    pick = tc_graph_mul(x->g, pick, wt);
  }
  int loss = tc_graph_affine(x->g, pick, -1.0f, 0.0f), id;
  rc = tc__ox_bind_node(x, n, NULL, loss);
  if (rc != TH_OK) return rc;
  if (mode == 0) {
    rc = tc__ox_reshape_node(x, n, loss, td, rt, &id);
    if (rc != TH_OK || id < 0) return rc;
    return tc__ox_set_node(x, n, 0, id);
  }
  int64_t one = 1;
  id = tc__ox_sum_all(x, n, loss, "ones_loss");
  if (mode == 2) {
    if (wt >= 0)
      id = tc_graph_div(x->g, id, tc__ox_sum_all(x, n, wt, "ones_weight"));
    else
      id = tc_graph_affine(x->g, id, 1.0f / (float)tc_tensor_numel(tc__ox_t(x, t)), 0.0f);
  }
  rc = tc__ox_bind_node(x, n, NULL, id);
  if (rc == TH_OK) rc = tc__ox_reshape_node(x, n, id, &one, 1, &id);
  if (rc != TH_OK || id < 0) return rc;
  return tc__ox_set_node(x, n, 0, id);
}
