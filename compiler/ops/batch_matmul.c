/* batch_matmul (attention's Q.K^T and attn.V): out[i] = alpha * a[i] . b[i] for i < n, on the
 * register-tiled micro-kernel of gemm.c without pre-packed operands (both are activations). A is
 * read in place ([M, K] rows, or [K, M] with trans_a, where a tile's rows are contiguous). B must
 * give whole contiguous vectors along N: a [K, N] B whose N is a multiple of the vector is read in
 * place; otherwise (trans_b, i.e. Q.K^T's [N, K] keys, or a ragged N) each task first copies its
 * block of B panels, one k block at a time, into a zero-padded stack buffer [panels][kc][bn] (the
 * transposing copy costs about vl / M of the FMAs). A task is one matrix i x one block of row tiles
 * x one block of panels; alpha scales the final sums. */
#include <string.h>

#include "gemm_int.h"

/* Stack bytes of one task's copied B block (kc x its panels' columns). */
#define PACK_B_MAX_BYTES (96 * 1024)

typedef struct bmm_ctx {
  const tc_workload *wl;
  const tc_var *a, *b, *bbuf; /* bbuf: the copied B block, NULL when B is read in place */
  int kc;
} bmm_ctx;

/* B is copied unless it is [K, N] with N a multiple of the vector. */
static int pack_b(const tc_workload *wl, const tc_target *t) {
  return wl->trans_b || wl->oc % t->simd_lanes != 0;
}

static th_status space(const tc_workload *wl, const tc_target *t, tc_space *s) {
  return tc__gemm_space(s, t, wl->h, wl->oc, wl->c);
}

static th_status valid(const tc_workload *wl, const tc_target *t, const tc_space *s,
                       const tc_config *c) {
  int mr, nv, kc, ncb;
  th_status rc = tc__gemm_valid(s, c, t, wl->h, wl->oc, wl->c, &mr, &nv, &kc, NULL, &ncb, NULL);
  if (rc != TH_OK) return rc;
  tc__gemm g;
  tc__gemm_shape(&g, wl->h, wl->oc, t->simd_lanes, mr, nv);
  int ppb = (g.np + ncb - 1) / ncb; /* the most panels a block has */
  if (pack_b(wl, t) && (double)kc * ppb * nv * t->simd_lanes * 4 > PACK_B_MAX_BYTES)
    return TH_ERR_INVALID;
  return TH_OK;
}

static th_status fallback(const tc_workload *wl, const tc_target *t, const tc_space *s,
                          tc_config *c) {
  th_status rc = tc__gemm_fallback(s, c, t, wl->h, wl->oc, wl->c, 0);
  if (rc != TH_OK) return rc;
  /* n matrices already make tasks: one row block each unless there are too few of them; then a
   * copied B block too big for the stack takes more column blocks, then smaller k blocks */
  int krb = tc_space_knob(s, "row_blocks"), kcb = tc_space_knob(s, "col_blocks"),
      kk = tc_space_knob(s, "tile_k");
  if (wl->n >= 4) c->idx[krb] = 0;
  int fits = 0;
  for (int i = 0; i < s->knobs[kcb].nvalues; i++) {
    tc_config d = *c;
    d.idx[kcb] = i;
    if (tc__gemm_valid(s, &d, t, wl->h, wl->oc, wl->c, NULL, NULL, NULL, NULL, NULL, NULL) != TH_OK)
      break;
    c->idx[kcb] = i;
    if ((fits = valid(wl, t, s, c) == TH_OK)) break;
  }
  for (int i = s->knobs[kk].nvalues - 1; i >= 1 && !fits; i--) {
    c->idx[kk] = i;
    fits = valid(wl, t, s, c) == TH_OK;
  }
  return fits ? TH_OK : TH_ERR_INTERNAL;
}

static const tc_stmt *a_tile(tc_ir *ir, const tc__gemm *g, int rows, const tc_expr *r0,
                             const tc_expr *k0, const tc_expr *kext, tc__gemm_a *a) {
  (void)rows, (void)kext;
  const bmm_ctx *x = g->ctx;
  const tc_workload *wl = x->wl;
  int M = wl->h, K = wl->c;
  const tc_expr *base = tc_e_mul(ir, g->mat, tc__c(ir, (int64_t)M * K));
  a->buf = x->a;
  if (wl->trans_a) { /* [K, M]: (r, k) at (k0 + k) * M + r0 + r */
    a->a0 = tc_e_add(ir, base, tc_e_add(ir, tc_e_mul(ir, k0, tc__c(ir, M)), r0));
    a->rs = 1;
    a->ks = M;
  } else {
    a->a0 = tc_e_add(ir, base, tc_e_add(ir, tc_e_mul(ir, r0, tc__c(ir, K)), k0));
    a->rs = K;
    a->ks = 1;
  }
  return NULL;
}

static const tc_expr *b_at(tc_ir *ir, const tc__gemm *g, const tc_expr *p, const tc_expr *k0) {
  const bmm_ctx *x = g->ctx;
  int bn = g->nv * g->vl;
  if (x->bbuf) return tc_e_mul(ir, tc_e_sub(ir, p, g->p_lo), tc__c(ir, (int64_t)x->kc * bn));
  int64_t kn = (int64_t)x->wl->c * x->wl->oc;
  return tc_e_add(
      ir, tc_e_mul(ir, g->mat, tc__c(ir, kn)),
      tc_e_add(ir, tc_e_mul(ir, k0, tc__c(ir, x->wl->oc)), tc_e_mul(ir, p, tc__c(ir, bn))));
}

/* Copies panels [p_lo, p_hi) x k rows [k0, k0 + kext) of B into bbuf [panel][kc][bn], zeros past N.
 */
static const tc_stmt *k_prologue(tc_ir *ir, const tc__gemm *g, const tc_expr *k0,
                                 const tc_expr *kext) {
  const bmm_ctx *x = g->ctx;
  if (!x->bbuf) return NULL;
  const tc_workload *wl = x->wl;
  int bn = g->nv * g->vl, K = wl->c, N = wl->oc;
  tc_var *p = tc_var_new(ir, "bp", tc_type_int()), *j = tc_var_new(ir, "bj", tc_type_int());
  tc_var *k = tc_var_new(ir, "bk", tc_type_int());
  const tc_expr *pe = tc__v(ir, p), *je = tc__v(ir, j), *ke = tc__v(ir, k);
  const tc_expr *col = tc_e_add(ir, tc_e_mul(ir, pe, tc__c(ir, bn)), je);
  const tc_expr *kk = tc_e_add(ir, k0, ke);
  const tc_expr *colc = tc_e_min(ir, col, tc__c(ir, N - 1)); /* an address inside b even past N */
  const tc_expr *src = wl->trans_b ? tc_e_add(ir, tc_e_mul(ir, colc, tc__c(ir, K)), kk)
                                   : tc_e_add(ir, tc_e_mul(ir, kk, tc__c(ir, N)), colc);
  src = tc_e_add(ir, tc_e_mul(ir, g->mat, tc__c(ir, (int64_t)K * N)), src);
  const tc_expr *v = tc_e_select(ir, tc_e_bin(ir, TC_EXPR_LT, col, tc__c(ir, N)),
                                 tc_e_load(ir, x->b, src, 1, 4), tc_e_float(ir, 0.0));
  const tc_expr *dst = tc_e_add(
      ir,
      tc_e_mul(ir, tc_e_add(ir, tc_e_mul(ir, tc_e_sub(ir, pe, g->p_lo), tc__c(ir, x->kc)), ke),
               tc__c(ir, bn)),
      je);
  const tc_stmt *st = tc_s_store(ir, x->bbuf, dst, v, 4);
  /* read along b's contiguous axis: k for [N, K], columns for [K, N] */
  const tc_stmt *inner = wl->trans_b
                             ? tc_s_for(ir, k, tc__c(ir, 0), kext, TC_FOR_SERIAL, st)
                             : tc_s_for(ir, j, tc__c(ir, 0), tc__c(ir, bn), TC_FOR_SERIAL, st);
  const tc_stmt *outer = wl->trans_b
                             ? tc_s_for(ir, j, tc__c(ir, 0), tc__c(ir, bn), TC_FOR_SERIAL, inner)
                             : tc_s_for(ir, k, tc__c(ir, 0), kext, TC_FOR_SERIAL, inner);
  return tc_s_for(ir, p, g->p_lo, tc_e_sub(ir, g->p_hi, g->p_lo), TC_FOR_SERIAL, outer);
}

static const tc_expr *c_at(tc_ir *ir, const tc__gemm *g, const tc_expr *r0) {
  return tc_e_add(ir, tc_e_mul(ir, g->mat, tc__c(ir, (int64_t)g->m * g->n)),
                  tc_e_mul(ir, r0, tc__c(ir, g->n)));
}

static const tc_expr *epi(tc_ir *ir, const tc__gemm *g, const tc_expr *v, const tc_expr *col,
                          const tc_expr *cidx) {
  (void)col, (void)cidx;
  const bmm_ctx *x = g->ctx;
  if (x->wl->alpha == 1.0f) return v;
  const tc_expr *al = tc_e_float(ir, x->wl->alpha);
  return tc_e_mul(ir, v, v->type.lanes > 1 ? tc_e_broadcast(ir, al, v->type.lanes) : al);
}

static th_status lower(const tc_workload *wl, const tc_target *t, const tc_space *s,
                       const tc_config *c, tc_ir *ir, const tc_stmt **out) {
  int mr, nv, kc, nrb, ncb, order;
  if (valid(wl, t, s, c) != TH_OK ||
      tc__gemm_valid(s, c, t, wl->h, wl->oc, wl->c, &mr, &nv, &kc, &nrb, &ncb, &order) != TH_OK)
    return TH_ERR_INVALID;
  if (kc > wl->c) kc = wl->c;
  bmm_ctx x;
  memset(&x, 0, sizeof x);
  x.wl = wl;
  x.kc = kc;
  x.a = tc_var_buffer(ir, "a", tc_type_f32(1), 0);
  x.b = tc_var_buffer(ir, "b", tc_type_f32(1), 1);
  int bn = nv * t->simd_lanes;
  tc_var *bbuf = NULL;
  if (pack_b(wl, t)) x.bbuf = bbuf = tc_var_buffer(ir, "bpack", tc_type_f32(1), -1);
  static const tc__gemm_ops ops = {k_prologue, a_tile, b_at, c_at, epi};
  tc__gemm g;
  tc__gemm_init(&g, wl->h, wl->oc, t->simd_lanes, mr, nv, bbuf ? bbuf : x.b, bbuf ? bn : wl->oc,
                tc_var_buffer(ir, "out", tc_type_f32(1), 2), &ops, &x);
  int ppb = (g.np + ncb - 1) / ncb; /* the most panels a block has */
  *out = tc__gemm_parallel(ir, &g, wl->n, nrb, ncb, order, wl->c, kc, bbuf, (int64_t)kc * ppb * bn);
  return ir->err;
}

const tc__op tc__op_batch_matmul = {TC_KERNEL_BATCH_MATMUL, space, fallback, valid, lower, NULL};
