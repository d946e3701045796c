/* The ONNX importer's converters of linear layers: Gemm and MatMul onto the graph's dense (a
 * constant second operand, packed at load) or batch_matmul (two runtime operands), with their
 * transposes and scales folded in. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "onnx_int.h"
#include "workload.h"

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

th_status tc__ox_c_gemm(tc__ox *x, const Onnx__NodeProto *n) {
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

th_status tc__ox_c_matmul(tc__ox *x, const Onnx__NodeProto *n) {
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
