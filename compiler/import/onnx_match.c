/* Pattern matching of the ONNX importer: exporters decompose layer norm (ReduceMean, Sub, Pow,
 * ReduceMean, Add eps, Sqrt, Div, Mul gamma, Add beta: torch.onnx below opset 17) and erf gelu (Div
 * sqrt2, Erf, Add 1, Mul x, Mul 0.5), which the graph has as single fused ops with fast templates.
 * A pattern is anchored at its first node, which every other node of it follows in the evaluation
 * order, and matches only when its intermediate tensors are read by nothing outside it, so no value
 * is lost by fusing. Constants it needs are known by then: the evaluation order runs constant nodes
 * first. */
#include <math.h>
#include <string.h>

#include "onnx_int.h"

/* The node (index) that is v's sole consumer, when it is of type op; -1 otherwise. */
static int tc__ox_next(tc__ox *x, const tc__oxv *v, const char *op) {
  int c = tc__ox_sole_consumer(x, v);
  if (c < 0 || x->done[c] || strcmp(x->gp->node[c]->op_type, op) != 0) return -1;
  return c;
}

/* The other input of the two-input node k, given one of them (NULL unless exactly two and
 * distinct). */
static tc__oxv *tc__ox_other(tc__ox *x, int k, const tc__oxv *v) {
  const Onnx__NodeProto *n = x->gp->node[k];
  if (n->n_input != 2) return NULL;
  tc__oxv *a = tc__ox_in(x, n, 0), *b = tc__ox_in(x, n, 1);
  if (a == v && b != v) return b;
  if (b == v && a != v) return a;
  return NULL;
}

static int tc__ox_is(const tc__oxv *v, double want, double tol) {
  double d;
  return v && v->c.fl && tc__ox_scalar(v, &d) && fabs(d - want) <= tol;
}

/* A constant of C floats that broadcasts along the last axis only: gamma, beta. */
static int tc__ox_vec(const tc__oxv *v, int64_t C, int rank) {
  if (!v || v->kind != TC__OX_CONST || !v->c.fl || v->c.n != C || v->c.ndim < 1 || v->c.ndim > rank)
    return 0;
  return v->c.dims[v->c.ndim - 1] == C;
}

/* ReduceMean over the last axis with keepdims of node k (of rank r). */
static int tc__ox_mean_last(tc__ox *x, int k, int r) {
  const Onnx__NodeProto *n = x->gp->node[k];
  const Onnx__AttributeProto *kd = tc__ox_attr(n, "keepdims");
  int64_t ax;
  if (x->opset < 18) {
    const Onnx__AttributeProto *a = tc__ox_attr(n, "axes");
    if (n->n_input != 1 || !a || a->n_ints != 1) return 0;
    ax = a->ints[0];
  } else { /* opset 18: the axes are input 1 */
    const tc__oxv *v = tc__ox_in(x, n, 1);
    if (n->n_input != 2 || !v || v->kind != TC__OX_CONST || v->c.fl || v->c.n != 1) return 0;
    ax = v->c.i[0];
  }
  if (ax != -1 && ax != r - 1) return 0;
  return !kd || kd->i == 1;
}

static tc__oxv *tc__ox_out0(tc__ox *x, int k) {
  return tc__ox_out(x, x->gp->node[k], 0);
}

/* mean = ReduceMean(x); d = Sub(x, mean) (once, or twice); Pow(d, 2) or Mul(d, d); ReduceMean; Add
 * eps; Sqrt; Div(d, s); optionally Mul gamma and Add beta. */
static th_status tc__ox_layer_norm(tc__ox *x, int k, int *matched) {
  const Onnx__NodeProto *n = x->gp->node[k];
  tc__oxv *vx = tc__ox_in(x, n, 0), *mean = tc__ox_out0(x, k);
  if (!vx || vx->kind != TC__OX_NODE || !mean || mean->is_output) return TH_OK;
  const tc_tensor *t = &x->g->nodes[vx->node].out;
  if (t->dtype != TC_DTYPE_F32 || !tc__ox_mean_last(x, k, t->ndim)) return TH_OK;
  int subs[2], nsub = 0, sq = -1, rm2 = -1, ae = -1, sr = -1, dv = -1, m = -1, ad = -1;
  if (mean->ncons < 1 || mean->ncons > 2 || mean->uses != mean->ncons) return TH_OK;
  for (int i = 0; i < mean->ncons; i++) {
    int s = x->cons[mean->cons0 + i];
    const Onnx__NodeProto *sn = x->gp->node[s];
    if (strcmp(sn->op_type, "Sub") != 0 || sn->n_input != 2 || tc__ox_in(x, sn, 0) != vx ||
        tc__ox_in(x, sn, 1) != mean || x->done[s])
      return TH_OK;
    if (!tc__ox_out0(x, s) || tc__ox_out0(x, s)->is_output) return TH_OK;
    subs[nsub++] = s;
  }
  /* the square: Pow(d, 2) or Mul(d, d) of one sub; the Div of the same or the other */
  for (int i = 0; i < nsub && sq < 0; i++) {
    tc__oxv *d = tc__ox_out0(x, subs[i]);
    if (!d || d->is_output) return TH_OK;
    for (int c = 0; c < d->ncons; c++) {
      int j = x->cons[d->cons0 + c];
      const Onnx__NodeProto *jn = x->gp->node[j];
      int is_pow = strcmp(jn->op_type, "Pow") == 0 && jn->n_input == 2 &&
                   tc__ox_in(x, jn, 0) == d && tc__ox_is(tc__ox_in(x, jn, 1), 2.0, 0);
      int is_sq = strcmp(jn->op_type, "Mul") == 0 && jn->n_input == 2 && tc__ox_in(x, jn, 0) == d &&
                  tc__ox_in(x, jn, 1) == d;
      if (is_pow || is_sq) sq = j;
    }
  }
  if (sq < 0) return TH_OK;
  rm2 = tc__ox_next(x, tc__ox_out0(x, sq), "ReduceMean");
  if (rm2 < 0 || !tc__ox_mean_last(x, rm2, t->ndim)) return TH_OK;
  ae = tc__ox_next(x, tc__ox_out0(x, rm2), "Add");
  tc__oxv *eps = ae >= 0 ? tc__ox_other(x, ae, tc__ox_out0(x, rm2)) : NULL;
  double e;
  if (!eps || !eps->c.fl || !tc__ox_scalar(eps, &e) || !(e > 0) || e > 1) return TH_OK;
  sr = tc__ox_next(x, tc__ox_out0(x, ae), "Sqrt");
  if (sr < 0) return TH_OK;
  dv = tc__ox_next(x, tc__ox_out0(x, sr), "Div");
  if (dv < 0 || x->gp->node[dv]->n_input != 2 ||
      tc__ox_in(x, x->gp->node[dv], 1) != tc__ox_out0(x, sr))
    return TH_OK;
  /* every use of the differences is the square or the division */
  tc__oxv *num = tc__ox_in(x, x->gp->node[dv], 0), *sqin = tc__ox_in(x, x->gp->node[sq], 0);
  int sq_uses = strcmp(x->gp->node[sq]->op_type, "Mul") == 0 ? 2 : 1, found_num = 0;
  for (int i = 0; i < nsub; i++) {
    tc__oxv *d = tc__ox_out0(x, subs[i]);
    int is_sq = d == sqin, is_num = d == num;
    found_num |= is_num;
    if (!(is_sq || is_num) || d->ncons != is_sq + is_num || d->uses != is_sq * sq_uses + is_num)
      return TH_OK;
  }
  if (!found_num) return TH_OK;
  /* the affine: Mul(gamma) then Add(beta), in either operand order */
  int64_t C = t->shape[t->ndim - 1];
  tc__oxv *gamma = NULL, *beta = NULL, *last = tc__ox_out0(x, dv);
  m = tc__ox_next(x, last, "Mul");
  if (m >= 0 && tc__ox_vec(tc__ox_other(x, m, last), C, t->ndim)) {
    gamma = tc__ox_other(x, m, last);
    last = tc__ox_out0(x, m);
    ad = tc__ox_next(x, last, "Add");
    if (ad >= 0 && tc__ox_vec(tc__ox_other(x, ad, last), C, t->ndim)) {
      beta = tc__ox_other(x, ad, last);
      last = tc__ox_out0(x, ad);
    } else {
      ad = -1;
    }
  } else {
    m = -1;
  }
  if (!last) return TH_OK;
  char nm[256];
  int id = tc_graph_layer_norm(x->g, tc__ox_gname(x, n, nm, sizeof nm), vx->node, (float)e);
  th_status rc = tc__ox_bind_node(x, n, NULL, id);
  if (rc != TH_OK) return rc;
  tc_node *nd = &x->g->nodes[id];
  rc = gamma ? tc__ox_bind_param(x, n, &nd->gamma, gamma, 0, 1.0f)
             : tc__ox_fill_param(x, nd->gamma, 1.0f);
  nd = &x->g->nodes[id];
  if (rc == TH_OK)
    rc = beta ? tc__ox_bind_param(x, n, &nd->beta, beta, 0, 1.0f)
              : tc__ox_fill_param(x, nd->beta, 0.0f);
  if (rc != TH_OK) return rc;
  int all[10] = {k,  subs[0],        nsub > 1 ? subs[1] : k, sq, rm2, ae, sr,
                 dv, m >= 0 ? m : k, ad >= 0 ? ad : k};
  for (int i = 0; i < 10; i++) x->done[all[i]] = 1;
  last->kind = TC__OX_NODE;
  last->node = id;
  x->info.fused_layer_norm++;
  *matched = 1;
  return TH_OK;
}

/* Whether value h is x * 0.5 (a Mul node's output, operands in either order). */
static int tc__ox_half_of(tc__ox *x, const tc__oxv *h, const tc__oxv *vx) {
  if (!h || h->producer < 0) return 0;
  const Onnx__NodeProto *p = x->gp->node[h->producer];
  if (strcmp(p->op_type, "Mul") != 0 || p->n_input != 2) return 0;
  tc__oxv *a = tc__ox_in(x, p, 0), *b = tc__ox_in(x, p, 1);
  return (a == vx && tc__ox_is(b, 0.5, 1e-6)) || (b == vx && tc__ox_is(a, 0.5, 1e-6));
}

/* Div(x, sqrt 2) or Mul(x, 1/sqrt 2); Erf; Add 1; then 0.5 * x * that in any of torch's three
 * orders. */
static th_status tc__ox_gelu(tc__ox *x, int k, int *matched) {
  const Onnx__NodeProto *n = x->gp->node[k];
  int is_div = strcmp(n->op_type, "Div") == 0;
  if (n->n_input != 2) return TH_OK;
  tc__oxv *vx = tc__ox_in(x, n, 0), *c = tc__ox_in(x, n, 1), *s = tc__ox_out0(x, k);
  if (!is_div && c && c->kind == TC__OX_NODE && vx &&
      vx->kind == TC__OX_CONST) { /* Mul(1/sqrt2, x) */
    tc__oxv *tmp = vx;
    vx = c;
    c = tmp;
  }
  if (!vx || vx->kind != TC__OX_NODE || x->g->nodes[vx->node].out.dtype != TC_DTYPE_F32)
    return TH_OK;
  if (!tc__ox_is(c, is_div ? 1.4142135623730951 : 0.7071067811865476, 1e-4)) return TH_OK;
  int e = tc__ox_next(x, s, "Erf");
  int a = e >= 0 ? tc__ox_next(x, tc__ox_out0(x, e), "Add") : -1;
  if (a < 0 || !tc__ox_is(tc__ox_other(x, a, tc__ox_out0(x, e)), 1.0, 1e-6)) return TH_OK;
  tc__oxv *p1 = tc__ox_out0(x, a);
  int m1 = tc__ox_next(x, p1, "Mul"), m2 = -1, half = -1;
  if (m1 < 0) return TH_OK;
  tc__oxv *o1 = tc__ox_other(x, m1, p1), *last = NULL;
  if (o1 == vx || tc__ox_is(o1, 0.5, 1e-6)) { /* (x * p1) * 0.5, or (p1 * 0.5) * x */
    tc__oxv *want_x = o1 == vx ? NULL : vx;
    m2 = tc__ox_next(x, tc__ox_out0(x, m1), "Mul");
    tc__oxv *o2 = m2 >= 0 ? tc__ox_other(x, m2, tc__ox_out0(x, m1)) : NULL;
    if (!o2 || (want_x ? o2 != want_x : !tc__ox_is(o2, 0.5, 1e-6))) return TH_OK;
    last = tc__ox_out0(x, m2);
  } else if (tc__ox_half_of(x, o1, vx)) { /* (x * 0.5) * p1 */
    last = tc__ox_out0(x, m1);
    if (tc__ox_sole_consumer(x, o1) == m1) half = o1->producer;
  } else {
    return TH_OK;
  }
  if (!last) return TH_OK;
  int id = tc_graph_gelu(x->g, vx->node);
  th_status rc = tc__ox_bind_node(x, n, NULL, id);
  if (rc != TH_OK) return rc;
  int all[6] = {k, e, a, m1, m2 >= 0 ? m2 : k, half >= 0 ? half : k};
  for (int i = 0; i < 6; i++) x->done[all[i]] = 1;
  last->kind = TC__OX_NODE;
  last->node = id;
  x->info.fused_gelu++;
  *matched = 1;
  return TH_OK;
}

th_status tc__ox_match(tc__ox *x, int k, int *matched) {
  const char *op = x->gp->node[k]->op_type;
  *matched = 0;
  if (strcmp(op, "ReduceMean") == 0) return tc__ox_layer_norm(x, k, matched);
  if (strcmp(op, "Div") == 0 || strcmp(op, "Mul") == 0) return tc__ox_gelu(x, k, matched);
  return TH_OK;
}

int tc__ox_unscale(tc__ox *x, int id, float *alpha) {
  for (;;) {
    const tc_node *nd = &x->g->nodes[id];
    if (nd->op != TC_OP_AFFINE || nd->shift != 0.0f) return id;
    *alpha *= nd->alpha;
    id = nd->inputs[0];
  }
}
