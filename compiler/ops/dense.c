/* Dense (fully connected, and the transformers' linear layers) as a packed GEMM: out[m, n] = in[m,
 * k] . W[n, k]^T (+ the fused epilogue), m rows of any leading shape. W is packed once at load into
 * panels [ceil(n/bn)][k][bn] (TH_RT_PACK_DENSE, bn = nv vectors, the last panel zero-padded), so
 * the micro-kernel of gemm.c reads nv contiguous weight vectors per k step. A task is one block of
 * row tiles x one block of panels (row_blocks x col_blocks, in `order`); within it the reduction
 * runs in k blocks of kc (partial sums through out), and each row tile's A rows may first be copied
 * into a stack buffer whose row stride is not a multiple of 4 KiB (pack_a), so the tile's rows do
 * not fight over one L1 set when k is a multiple of 1024 (bert's and vit's 3072 -> 768). */
#include <string.h>

#include "gemm_int.h"
#include "th_rt.h"

/* Stack bytes of a copied A tile (ld x mr floats), so a kernel runs on any thread's stack. */
#define PACK_A_MAX_BYTES (64 * 1024)

typedef struct dense_ctx {
  const tc_workload *wl;
  const tc_var *in, *bias, *res, *abuf;
  int ld; /* row stride of abuf, 0 without pack_a */
} dense_ctx;

static th_status space(const tc_workload *wl, const tc_target *t, tc_space *s) {
  th_status rc = tc__gemm_space(s, t, wl->n, wl->oc, wl->c);
  int pack[2] = {0, 1};
  if (rc == TH_OK) rc = tc_space_add(s, "pack_a", TC_KNOB_ANNOTATE, 1, 2, pack);
  return rc;
}

static th_status valid(const tc_workload *wl, const tc_target *t, const tc_space *s,
                       const tc_config *c) {
  int mr, kc;
  th_status rc = tc__gemm_valid(s, c, t, wl->n, wl->oc, wl->c, &mr, NULL, &kc, NULL, NULL, NULL);
  const int *pa = tc__knob(s, c, "pack_a");
  if (rc != TH_OK || !pa) return TH_ERR_INVALID;
  if (pa[0] && (double)tc__gemm_ld(kc) * mr * 4 > PACK_A_MAX_BYTES) return TH_ERR_INVALID;
  return TH_OK;
}

/* Nonzero when `rows` rows of k floats, read in place, would put more than 6 of the tile's rows in
 * one set of a 4 KiB-way L1 (the usual 32-48 KiB, 8-12 ways): the tile's A lines then evict each
 * other every k step. 14-row tiles of k = 3072 ran 0.7-0.85x of the copied rows. */
static int rows_conflict(int k, int rows) {
  int hits[64] = {0};
  for (int r = 0; r < rows; r++)
    if (++hits[(int)(((int64_t)r * k * 4 % 4096) / 64)] > 6) return 1;
  return 0;
}

static th_status fallback(const tc_workload *wl, const tc_target *t, const tc_space *s,
                          tc_config *c) {
  /* A few rows are read in place, in tiles small enough not to conflict in L1: 10 rows of k = 2048
   * ran 1.2x faster as 2 tiles of 5 than as one copied tile of 10 (2 threads). */
  int mr_max = 0;
  if (wl->n <= TC__GEMM_FEW_ROWS)
    for (mr_max = 24; mr_max > 1 && rows_conflict(wl->c, mr_max);) mr_max--;
  th_status rc = tc__gemm_fallback(s, c, t, wl->n, wl->oc, wl->c, mr_max);
  int kp = tc_space_knob(s, "pack_a"), kk = tc_space_knob(s, "tile_k");
  if (rc != TH_OK || kp < 0 || kk < 0) return TH_ERR_INTERNAL;
  /* more rows copy a tile's rows where they would conflict (elsewhere the copy only costs, 2-5% at
   * k = 768); a copy too big for the stack takes the largest k block that fits */
  int mr = tc__knob(s, c, "tile_m")[1];
  c->idx[kp] = wl->n > TC__GEMM_FEW_ROWS && rows_conflict(wl->c, mr);
  int kc0 = c->idx[kk];
  for (int i = s->knobs[kk].nvalues - 1; c->idx[kp] && i >= 1 && valid(wl, t, s, c) != TH_OK; i--)
    c->idx[kk] = i;
  if (valid(wl, t, s, c) != TH_OK) c->idx[kp] = 0, c->idx[kk] = kc0;
  return TH_OK;
}

static const tc_stmt *a_tile(tc_ir *ir, const tc__gemm *g, int rows, const tc_expr *r0,
                             const tc_expr *k0, const tc_expr *kext, tc__gemm_a *a) {
  const dense_ctx *x = g->ctx;
  int k = x->wl->c;
  const tc_expr *s0 = tc_e_add(ir, tc_e_mul(ir, r0, tc__c(ir, k)), k0);
  if (x->ld) return tc__gemm_copy_rows(ir, g->vl, x->in, s0, k, x->abuf, x->ld, rows, kext, a);
  a->buf = x->in;
  a->a0 = s0;
  a->rs = k;
  a->ks = 1;
  return NULL;
}

static const tc_expr *b_at(tc_ir *ir, const tc__gemm *g, const tc_expr *p, const tc_expr *k0) {
  const dense_ctx *x = g->ctx;
  return tc_e_mul(ir, tc_e_add(ir, tc_e_mul(ir, p, tc__c(ir, x->wl->c)), k0), tc__c(ir, g->b_ks));
}

static const tc_expr *c_at(tc_ir *ir, const tc__gemm *g, const tc_expr *r0) {
  return tc_e_mul(ir, r0, tc__c(ir, g->n));
}

static const tc_expr *epi(tc_ir *ir, const tc__gemm *g, const tc_expr *v, const tc_expr *col,
                          const tc_expr *cidx) {
  const dense_ctx *x = g->ctx;
  return tc__epilogue(ir, x->wl, v, x->bias, col, x->res, cidx);
}

static th_status lower(const tc_workload *wl, const tc_target *t, const tc_space *s,
                       const tc_config *c, tc_ir *ir, const tc_stmt **out) {
  int mr, nv, kc, nrb, ncb, order;
  if (tc__gemm_valid(s, c, t, wl->n, wl->oc, wl->c, &mr, &nv, &kc, &nrb, &ncb, &order) != TH_OK)
    return TH_ERR_INVALID;
  if (kc > wl->c) kc = wl->c;
  dense_ctx x;
  memset(&x, 0, sizeof x);
  x.wl = wl;
  x.in = tc_var_buffer(ir, "in", tc_type_f32(1), TC_ARG_IN);
  x.bias = tc_var_buffer(ir, "bias", tc_type_f32(1), TC_ARG_BIAS);
  x.res = tc_var_buffer(ir, "res", tc_type_f32(1), TC_ARG_RESIDUAL);
  tc_var *abuf = NULL;
  if (tc__knob(s, c, "pack_a")[0]) {
    x.abuf = abuf = tc_var_buffer(ir, "apack", tc_type_f32(1), -1);
    x.ld = tc__gemm_ld(kc);
  }
  static const tc__gemm_ops ops = {NULL, a_tile, b_at, c_at, epi};
  tc__gemm g;
  tc__gemm_init(&g, wl->n, wl->oc, t->simd_lanes, mr, nv,
                tc_var_buffer(ir, "w", tc_type_f32(1), TC_ARG_WEIGHTS), (int64_t)nv * t->simd_lanes,
                tc_var_buffer(ir, "out", tc_type_f32(1), TC_ARG_OUT), &ops, &x);
  *out = tc__gemm_parallel(ir, &g, 1, nrb, ncb, order, wl->c, kc, abuf, (int64_t)x.ld * mr);
  return ir->err;
}

static th_status pack(const tc_workload *wl, const tc_target *t, const tc_space *s,
                      const tc_config *c, int p[TC_PACK_NPARAMS]) {
  p[0] = TH_RT_PACK_DENSE;
  p[1] = wl->oc;
  p[2] = wl->c;
  p[3] = tc__knob(s, c, "tile_n")[1] * t->simd_lanes;
  return TH_OK;
}

const tc__op tc__op_dense = {TC_KERNEL_DENSE, space, fallback, valid, lower, pack};
