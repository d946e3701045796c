/* The TF32 tensor-core GEMM behind dense, batch_matmul and conv2d at precision tf32 (sm_80 and
 * newer): out[b, m, n] = alpha * sum_k A(b, m, k) B(b, k, n), then the fused epilogue. A block of
 * warps computes a BM x BN tile; each warp a WM x WN tile as (WM / 16) x (WN / 8) mma.sync m16n8k8
 * products (TC_INTRIN_MMA_TF32), its fragments read from shared memory in PTX's lane layout. The K
 * axis is staged BK at a time through `stages` shared buffers filled by cp.async (16-byte copies
 * where the operand's contiguous axis is a multiple of 4, else 4-byte ones; out-of-range elements
 * zero-filled), so with 2 or 3 stages the next tiles load while the current one multiplies. Each
 * operand keeps its global layout in shared memory (k-major or m/n-major rows, padded by 4 or 8
 * floats so that a warp's fragment reads hit 32 banks), which the fragment reads follow; the
 * epilogue is applied from the accumulators, guarded at the M and N edges.
 *
 * conv2d is an implicit GEMM per image (tc__cuda_gemm_of): A is the OIHW weights as [oc, c*kh*kw]
 * (16-byte copies when c*kh*kw % 4 == 0), B the im2col matrix [c*kh*kw, oh*ow] gathered on the fly
 * by 4-byte cp.async from the NCHW image (zero-filled in the padding and past the edges; a 1x1
 * stride-1 unpadded conv reads the image as a plain [c, h*w] matrix), and C [oc, oh*ow] is the
 * output's NCHW layout, so the write-back is the GEMM's with the bias indexed by the row.
 *
 * split_k > 1 cuts the K tiles into that many ranges over gridDim.z: each block writes its partial
 * tile to a scratch buffer [split][batch][M][N] and a second kernel sums the partials in order (the
 * result does not depend on scheduling) and applies alpha and the epilogue once. Staging above the
 * 48 KiB of static shared memory goes to dynamic shared memory, up to the target's opt-in maximum. */
#include <math.h>

#include "templates_int.h"

typedef tc__cuda_gemm tcg;

static int64_t cdiv(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

static const int block_vals[] = {16, 64,  32, 32,  32, 64,  64,  32, 64,  64,
                                 16, 128, 32, 128, 64, 128, 128, 64, 128, 128};
static const int warp_vals[] = {16, 16, 16, 32, 32, 16, 32, 32, 16, 64, 32, 64, 64, 32, 64, 64};
static const int tk_vals[] = {8, 16, 32}, stage_vals[] = {1, 2, 3}, split_vals[] = {1, 2, 4, 8, 16};

th_status tc__cuda_tcgemm_space(const tc_workload *wl, const tc_cuda_target *t, tc_space *s) {
  (void)wl;
  if (t->sm < 80) return TH_ERR_UNSUPPORTED; /* no TF32 tensor cores */
  th_status rc = tc_space_add(s, "block_tile", TC_KNOB_SPLIT, 2, 10, block_vals);
  if (rc == TH_OK) rc = tc_space_add(s, "warp_tile", TC_KNOB_SPLIT, 2, 8, warp_vals);
  if (rc == TH_OK) rc = tc__cuda_add_list(s, "tile_k", TC_KNOB_SPLIT, 3, tk_vals);
  if (rc == TH_OK) rc = tc__cuda_add_list(s, "stages", TC_KNOB_OTHER, 3, stage_vals);
  if (rc == TH_OK) rc = tc__cuda_add_list(s, "split_k", TC_KNOB_SPLIT, 5, split_vals);
  return rc;
}

/* The tile geometry of a config. */
typedef struct tcg_tiles {
  int BM, BN, WM, WN, BK, S, FM, FN, warps;
  int SK;                   /* K ranges over gridDim.z */
  int64_t KT, KTS;          /* K tiles, and per range */
  int64_t SA, SB, ASZ, BSZ; /* row strides and per-stage sizes of the shared tiles */
} tcg_tiles;

static th_status tiles_of(const tcg *g, const tc_space *s, const tc_config *c, tcg_tiles *T,
                          char *why, size_t whylen) {
  const int *bt = tc__cuda_val(s, c, "block_tile"), *wt = tc__cuda_val(s, c, "warp_tile");
  const int *bk = tc__cuda_val(s, c, "tile_k"), *st = tc__cuda_val(s, c, "stages");
  const int *sk = tc__cuda_val(s, c, "split_k");
  if (!bt || !wt || !bk || !st || !sk) return tc__cuda_why(why, whylen, "missing knob");
  T->BM = bt[0], T->BN = bt[1], T->WM = wt[0], T->WN = wt[1], T->BK = bk[0], T->S = st[0];
  T->SK = sk[0];
  if (T->BM % T->WM || T->BN % T->WN)
    return tc__cuda_why(why, whylen, "the warp tile does not divide the block tile");
  T->KT = cdiv(g->K, T->BK), T->KTS = cdiv(T->KT, T->SK);
  if ((T->SK - 1) * T->KTS >= T->KT)
    return tc__cuda_whyf(why, whylen, "split_k %d leaves a range of the %lld k tiles empty", T->SK,
                         (long long)T->KT);
  T->FM = T->WM / 16, T->FN = T->WN / 8;
  T->warps = (T->BM / T->WM) * (T->BN / T->WN);
  /* k-major rows are padded by 4 floats, m/n-major ones by 8: fragment reads cover 32 banks */
  T->SA = g->trans_a ? T->BM + 8 : T->BK + 4;
  T->SB = g->trans_b ? T->BK + 4 : T->BN + 8;
  T->ASZ = (g->trans_a ? T->BK : T->BM) * T->SA;
  T->BSZ = (g->trans_b ? T->BN : T->BK) * T->SB;
  return TH_OK;
}

th_status tc__cuda_tcgemm_shape(const tc_workload *wl, const tc_space *s, const tc_config *c,
                                tc__cuda_shape *sh, char *why, size_t whylen) {
  tcg g = tc__cuda_gemm_of(wl);
  tcg_tiles T;
  th_status rc = tiles_of(&g, s, c, &T, why, whylen);
  if (rc != TH_OK) return rc;
  if (T.warps > 32) return tc__cuda_why(why, whylen, "more than 32 warps per block");
  sh->block[0] = 32 * T.warps;
  sh->grid[0] = g.batch * cdiv(g.M, T.BM) * cdiv(g.N, T.BN);
  sh->grid[2] = T.SK;
  sh->shared_bytes = 4LL * T.S * (T.ASZ + T.BSZ);
  sh->dyn_shared_ok = 1;
  sh->local_floats = (int64_t)T.FM * T.FN * 4 + T.FM * 4 + T.FN * 2;
  return TH_OK;
}

th_status tc__cuda_tcgemm_fallback(const tc_workload *wl, const tc_cuda_target *t,
                                   const tc_space *s, tc_config *out) {
  tcg g = tc__cuda_gemm_of(wl);
  int kb = tc_space_knob(s, "block_tile"), kw = tc_space_knob(s, "warp_tile");
  int kk = tc_space_knob(s, "tile_k"), ks = tc_space_knob(s, "stages");
  int kz = tc_space_knob(s, "split_k");
  double best = -1e30, wave = t->multiprocessors > 0 ? t->multiprocessors : 1;
  tc_config bestc = *out;
  for (int a = 0; a < s->knobs[kb].nvalues; a++)
    for (int b = 0; b < s->knobs[kw].nvalues; b++)
      for (int k = 0; k < s->knobs[kk].nvalues; k++)
        for (int st = 0; st < s->knobs[ks].nvalues; st++)
          for (int z = 0; z < s->knobs[kz].nvalues; z++) {
            out->idx[kb] = a, out->idx[kw] = b, out->idx[kk] = k, out->idx[ks] = st;
            out->idx[kz] = z;
            if (tc_cuda_valid(wl, t, s, out, NULL, 0) != TH_OK) continue;
            const int *bt = s->knobs[kb].values[a], *wt = s->knobs[kw].values[b];
            int bk = s->knobs[kk].values[k][0], stages = s->knobs[ks].values[st][0];
            int split = s->knobs[kz].values[z][0];
            int warps = (bt[0] / wt[0]) * (bt[1] / wt[1]);
            double tiles = (double)g.batch * cdiv(g.M, bt[0]) * cdiv(g.N, bt[1]);
            double pad =
                (double)cdiv(g.M, bt[0]) * bt[0] * cdiv(g.N, bt[1]) * bt[1] / ((double)g.M * g.N);
            double ktiles = (double)cdiv(cdiv(g.K, bk), split); /* per block */
            /* larger warp tiles reuse each fragment more; 4 to 8 warps; little padding; a deep k
             * step and a pipeline (2-3 stages) when K allows; a wave of blocks on the target's
             * multiprocessors, reached by splitting K only where the tiles alone are too few and
             * each range keeps several k tiles (the partial sums cost a pass through memory) */
            double score = 0.5 * log2((double)wt[0] * wt[1]) - fabs(log2((double)warps) - 2.5) -
                           2.0 * log2(pad) + (stages >= 2 ? 0.5 : 0) +
                           (bk <= g.K ? 0.25 * log2((double)bk) : -1.0);
            double blocks = tiles * split;
            if (blocks < wave) score -= log2(wave / blocks);
            if (split > 1) {
              score -= 0.5 * log2((double)split);
              if (tiles >= wave || ktiles < 8) score -= 4.0;
            }
            if (score > best) {
              best = score;
              bestc = *out;
            }
          }
  *out = bestc;
  return TH_OK;
}

/* The state of one lowering. */
typedef struct tcg_lc {
  tcg g;
  tcg_tiles T;
  int conv;   /* conv2d: A is shared by the images, the bias follows the row */
  int gather; /* conv2d whose B is an im2col gather (not a 1x1 stride-1 unpadded one) */
  tc_var *A, *B, *C, *As, *Bs, *lt, *bb, *m0, *n0;
} tcg_lc;

/* `count` copies of v floats by the block's threads: dst and src offsets and the in-range
 * condition of copy e, given as functions of e through rows of `per_row` copies. */
static const tc_stmt *stage_copies(tc__cuda_lc *L, const tcg_lc *X, tc_var *dst, tc_var *src,
                                   int64_t rows, int64_t per_row, int v, const tc_expr *dst_base,
                                   const tc_expr *src_base, int64_t dst_stride, int64_t src_stride,
                                   const tc_expr *row0, int64_t row_lim, const tc_expr *col0,
                                   int64_t col_lim) {
  tc_var *e = tc__cuda_iv(L, "e");
  const tc_expr *r = DIV(V(e), I(per_row)), *cc = MUL(MOD(V(e), I(per_row)), I(v));
  const tc_expr *gr = ADD(row0, r), *gc = ADD(col0, cc);
  const tc_expr *didx = ADD(dst_base, ADD(MUL(r, I(dst_stride)), cc));
  const tc_expr *sidx = ADD(src_base, ADD(MUL(gr, I(src_stride)), gc));
  const tc_expr *ok =
      BIN(TC_EXPR_AND, BIN(TC_EXPR_LT, gr, I(row_lim)), BIN(TC_EXPR_LT, gc, I(col_lim)));
  const tc_var *bufs[2] = {dst, src};
  const tc_expr *idx[2] = {didx, sidx};
  const tc_stmt *cp = tc_s_intrin(L->ir, TC_INTRIN_CP_ASYNC, 2, bufs, idx, ok, v);
  return tc__cuda_coop(L, rows * per_row, 32LL * X->T.warps, X->lt, e, cp);
}

/* conv2d's B tile [BK][BN] of stage base dst_base: element (r, c) is im2col row k = k0 + r
 * (channel, ky, kx) at output pixel p = n0 + c, read from the image by 4-byte copies and zero in the
 * padding, past the edges and past K or oh*ow. */
static const tc_stmt *gather_copies(tc__cuda_lc *L, const tcg_lc *X, const tc_expr *dst_base,
                                    const tc_expr *k0) {
  const tc_workload *wl = L->wl;
  const tcg_tiles *T = &X->T;
  tc_var *e = tc__cuda_iv(L, "e");
  const tc_expr *r = DIV(V(e), I(T->BN)), *cc = MOD(V(e), I(T->BN));
  const tc_expr *k = ADD(k0, r), *p = ADD(V(X->n0), cc);
  int64_t taps = (int64_t)wl->kh * wl->kw;
  const tc_expr *ch = DIV(k, I(taps)), *tap = MOD(k, I(taps));
  const tc_expr *iy = ADD(SUB(MUL(DIV(p, I(wl->ow)), I(wl->sh)), I(wl->pt)),
                          MUL(DIV(tap, I(wl->kw)), I(tc_workload_dil(wl, 0))));
  const tc_expr *ix = ADD(SUB(MUL(MOD(p, I(wl->ow)), I(wl->sw)), I(wl->pl)),
                          MUL(MOD(tap, I(wl->kw)), I(tc_workload_dil(wl, 1))));
  const tc_expr *ok = BIN(TC_EXPR_AND, BIN(TC_EXPR_LT, k, I(X->g.K)), BIN(TC_EXPR_LT, p, I(X->g.N)));
  ok = BIN(TC_EXPR_AND, ok,
           BIN(TC_EXPR_AND, BIN(TC_EXPR_GE, iy, I(0)), BIN(TC_EXPR_LT, iy, I(wl->h))));
  ok = BIN(TC_EXPR_AND, ok,
           BIN(TC_EXPR_AND, BIN(TC_EXPR_GE, ix, I(0)), BIN(TC_EXPR_LT, ix, I(wl->w))));
  const tc_expr *img = X->g.batch > 1 ? MUL(V(X->bb), I((int64_t)wl->c * wl->h * wl->w)) : I(0);
  const tc_expr *sidx = ADD(img, ADD(MUL(ADD(MUL(ch, I(wl->h)), iy), I(wl->w)), ix));
  const tc_expr *didx = ADD(dst_base, ADD(MUL(r, I(T->SB)), cc));
  const tc_var *bufs[2] = {X->Bs, X->B};
  const tc_expr *idx[2] = {didx, sidx};
  const tc_stmt *cp = tc_s_intrin(L->ir, TC_INTRIN_CP_ASYNC, 2, bufs, idx, ok, 1);
  return tc__cuda_coop(L, (int64_t)T->BK * T->BN, 32LL * T->warps, X->lt, e, cp);
}

/* The copies of k tile kt into stage st: A as [BM][BK] (or [BK][BM] when stored transposed), B as
 * [BN][BK] (or [BK][BN]), each along its contiguous global axis. */
static const tc_stmt *load_tile(tc__cuda_lc *L, const tcg_lc *X, const tc_expr *kt,
                                const tc_expr *st) {
  const tcg *g = &X->g;
  const tcg_tiles *T = &X->T;
  const tc_expr *k0 = MUL(kt, I(T->BK));
  const tc_expr *abase = g->batch > 1 && !X->conv ? MUL(V(X->bb), I(g->M * g->K)) : I(0);
  const tc_expr *bbase = g->batch > 1 ? MUL(V(X->bb), I(g->K * g->N)) : I(0);
  const tc_expr *as = MUL(st, I(T->ASZ)), *bs = MUL(st, I(T->BSZ));
  const tc_stmt *la, *lb;
  if (!g->trans_a) { /* [M, K]: rows m, k contiguous */
    int v = g->K % 4 == 0 && T->BK % 4 == 0 ? 4 : 1;
    la = stage_copies(L, X, X->As, X->A, T->BM, T->BK / v, v, as, abase, T->SA, g->K, V(X->m0),
                      g->M, k0, g->K);
  } else { /* [K, M]: rows k, m contiguous */
    int v = g->M % 4 == 0 ? 4 : 1;
    la = stage_copies(L, X, X->As, X->A, T->BK, T->BM / v, v, as, abase, T->SA, g->M, k0, g->K,
                      V(X->m0), g->M);
  }
  if (X->gather) {
    lb = gather_copies(L, X, bs, k0);
  } else if (g->trans_b) { /* [N, K]: rows n, k contiguous */
    int v = g->K % 4 == 0 && T->BK % 4 == 0 ? 4 : 1;
    lb = stage_copies(L, X, X->Bs, X->B, T->BN, T->BK / v, v, bs, bbase, T->SB, g->K, V(X->n0),
                      g->N, k0, g->K);
  } else { /* [K, N]: rows k, n contiguous */
    int v = g->N % 4 == 0 ? 4 : 1;
    lb = stage_copies(L, X, X->Bs, X->B, T->BK, T->BN / v, v, bs, bbase, T->SB, g->N, k0, g->K,
                      V(X->n0), g->N);
  }
  return tc_s_seq(L->ir, 2, (const tc_stmt *const[]){la, lb});
}

/* Offsets of A(m, k) and B(k, n) in stage st of the shared tiles. */
static const tc_expr *a_at(tc__cuda_lc *L, const tcg_lc *X, const tc_expr *st, const tc_expr *m,
                           const tc_expr *k) {
  const tc_expr *o = X->g.trans_a ? ADD(MUL(k, I(X->T.SA)), m) : ADD(MUL(m, I(X->T.SA)), k);
  return ADD(MUL(st, I(X->T.ASZ)), o);
}

static const tc_expr *b_at(tc__cuda_lc *L, const tcg_lc *X, const tc_expr *st, const tc_expr *k,
                           const tc_expr *n) {
  const tc_expr *o = X->g.trans_b ? ADD(MUL(n, I(X->T.SB)), k) : ADD(MUL(k, I(X->T.SB)), n);
  return ADD(MUL(st, I(X->T.BSZ)), o);
}

/* The warp's products over the BK columns of stage st: per 8-wide k step, the A fragments of its
 * FM row blocks and the B fragments of its FN column blocks, then FM x FN mma. */
static const tc_stmt *compute_tile(tc__cuda_lc *L, const tcg_lc *X, const tc_expr *st, tc_var *acc,
                                   tc_var *fa, tc_var *fb, const tc_expr *wm, const tc_expr *wn,
                                   const tc_expr *gq, const tc_expr *tq) {
  const tcg_tiles *T = &X->T;
  tc_var *ks = tc__cuda_iv(L, "ks"), *i = tc__cuda_iv(L, "i"), *j = tc__cuda_iv(L, "j");
  tc_var *i2 = tc__cuda_iv(L, "i"), *j2 = tc__cuda_iv(L, "j");
  const tc_expr *k0 = ADD(MUL(V(ks), I(8)), tq), *k1 = ADD(k0, I(4));
  const tc_expr *r0 = ADD(ADD(wm, MUL(V(i), I(16))), gq), *r1 = ADD(r0, I(8));
  const tc_expr *fi = MUL(V(i), I(4));
  const tc_stmt *lda[4] = {ST(fa, fi, LD(X->As, a_at(L, X, st, r0, k0))),
                           ST(fa, ADD(fi, I(1)), LD(X->As, a_at(L, X, st, r1, k0))),
                           ST(fa, ADD(fi, I(2)), LD(X->As, a_at(L, X, st, r0, k1))),
                           ST(fa, ADD(fi, I(3)), LD(X->As, a_at(L, X, st, r1, k1)))};
  const tc_expr *nc = ADD(ADD(wn, MUL(V(j), I(8))), gq), *fj = MUL(V(j), I(2));
  const tc_stmt *ldb[2] = {ST(fb, fj, LD(X->Bs, b_at(L, X, st, k0, nc))),
                           ST(fb, ADD(fj, I(1)), LD(X->Bs, b_at(L, X, st, k1, nc)))};
  const tc_var *bufs[3] = {acc, fa, fb};
  const tc_expr *idx[3] = {MUL(ADD(MUL(V(i2), I(T->FN)), V(j2)), I(4)), MUL(V(i2), I(4)),
                           MUL(V(j2), I(2))};
  const tc_stmt *mma = tc_s_intrin(L->ir, TC_INTRIN_MMA_TF32, 3, bufs, idx, NULL, 0);
  const tc_stmt *step[3] = {tc__cuda_for(L, i, T->FM, TC_FOR_UNROLLED, tc_s_seq(L->ir, 4, lda)),
                            tc__cuda_for(L, j, T->FN, TC_FOR_UNROLLED, tc_s_seq(L->ir, 2, ldb)),
                            tc__cuda_for(L, i2, T->FM, TC_FOR_UNROLLED,
                                         tc__cuda_for(L, j2, T->FN, TC_FOR_UNROLLED, mma))};
  return tc__cuda_for(L, ks, T->BK / 8, TC_FOR_UNROLLED, tc_s_seq(L->ir, 3, step));
}

/* The second kernel of split_k: output element idx is the sum of its SK partials in range order,
 * times alpha, through the epilogue (the channel is the row for conv2d, the column otherwise). */
static const tc_stmt *split_elem(tc__cuda_lc *L, const tc_expr *idx) {
  const tcg_lc *X = L->ctx;
  const tcg *g = &X->g;
  int64_t total = g->batch * g->M * g->N;
  const tc_expr *v = LD(L->scratch, idx);
  for (int z = 1; z < X->T.SK; z++) v = ADD(v, LD(L->scratch, ADD(I(z * total), idx)));
  if (g->alpha != 1.0) v = MUL(v, FLT(g->alpha));
  const tc_expr *ch = X->conv ? MOD(DIV(idx, I(g->N)), I(g->M)) : MOD(idx, I(g->N));
  return ST(X->C, idx, tc__cuda_epi(L, v, ch, idx));
}

static const tc_stmt *split_reduce(tc__cuda_lc *L, const tcg_lc *X) {
  const void *ctx = L->ctx;
  L->ctx = X;
  const tc_stmt *body = tc__cuda_map(L, X->g.batch * X->g.M * X->g.N, 256, 1, split_elem);
  L->ctx = ctx;
  return body;
}

static const tc_stmt *intrin0(tc__cuda_lc *L, tc_intrin_kind k, int64_t imm) {
  return tc_s_intrin(L->ir, k, 0, NULL, NULL, NULL, imm);
}

const tc_stmt *tc__cuda_tcgemm_lower(tc__cuda_lc *L, const tc_space *s, const tc_config *cfg) {
  const tc_workload *wl = L->wl;
  tcg_lc Xs, *X = &Xs;
  X->g = tc__cuda_gemm_of(wl);
  if (tiles_of(&X->g, s, cfg, &X->T, NULL, 0) != TH_OK) {
    L->ir->err = TH_ERR_INTERNAL;
    return NULL;
  }
  const tcg *g = &X->g;
  const tcg_tiles *T = &X->T;
  int dense = wl->kernel == TC_KERNEL_DENSE;
  X->conv = wl->kernel == TC_KERNEL_CONV2D;
  X->gather = X->conv && (wl->kh != 1 || wl->kw != 1 || wl->sh != 1 || wl->sw != 1 || wl->pt ||
                          wl->pl || wl->pb || wl->pr);
  if (X->conv) /* the weights [oc, c*kh*kw] times the image's im2col matrix */
    X->A = L->arg[TC_ARG_WEIGHTS], X->B = L->arg[TC_ARG_IN], X->C = L->arg[TC_ARG_OUT];
  else
    X->A = L->arg[dense ? TC_ARG_IN : 0], X->B = L->arg[dense ? TC_ARG_WEIGHTS : 1],
    X->C = L->arg[dense ? TC_ARG_OUT : 2];
  X->As = tc_var_buffer(L->ir, "As", tc_type_f32(1), -1);
  X->Bs = tc_var_buffer(L->ir, "Bs", tc_type_f32(1), -1);
  X->lt = tc__cuda_iv(L, "lt"), X->bb = tc__cuda_iv(L, "b");
  X->m0 = tc__cuda_iv(L, "m0"), X->n0 = tc__cuda_iv(L, "n0");
  int64_t mt = cdiv(g->M, T->BM), nt = cdiv(g->N, T->BN), KT = T->KTS;
  tc_var *bx = tc__cuda_iv(L, "bx"), *kt = tc__cuda_iv(L, "kt"), *kz = tc__cuda_iv(L, "kz");
  /* the block's k tiles: kz's range of KTS (the last one may run past K: zero-filled copies) */
  const tc_expr *kg0 = T->SK > 1 ? MUL(V(kz), I(T->KTS)) : I(0);
  tc_var *wm = tc__cuda_iv(L, "wm"), *wn = tc__cuda_iv(L, "wn"), *gq = tc__cuda_iv(L, "g");
  tc_var *tq = tc__cuda_iv(L, "t");
  tc_var *acc = tc__cuda_local(L, "acc"), *fa = tc__cuda_local(L, "fa"),
         *fb = tc__cuda_local(L, "fb");
  /* the k loop: S == 1 loads and waits for each tile in turn; S >= 2 keeps S - 1 tiles in flight
   * (a group is committed every iteration, empty past the end, so that wait_group(S - 2) always
   * means "tile kt has landed") */
  tc_stmt_list l = {0};
  const tc_stmt *kloop;
  if (T->S == 1) {
    const tc_stmt *it[6] = {tc_s_sync(L->ir),
                            load_tile(L, X, ADD(kg0, V(kt)), I(0)),
                            intrin0(L, TC_INTRIN_CP_COMMIT, 0),
                            intrin0(L, TC_INTRIN_CP_WAIT, 0),
                            tc_s_sync(L->ir),
                            compute_tile(L, X, I(0), acc, fa, fb, V(wm), V(wn), V(gq), V(tq))};
    kloop = tc__cuda_for(L, kt, KT, TC_FOR_SERIAL, tc_s_seq(L->ir, 6, it));
  } else {
    for (int st = 0; st < T->S - 1; st++) {
      if (st < KT) tc_list_push(L->ir, &l, load_tile(L, X, ADD(kg0, I(st)), I(st)));
      tc_list_push(L->ir, &l, intrin0(L, TC_INTRIN_CP_COMMIT, 0));
    }
    const tc_expr *next = ADD(V(kt), I(T->S - 1));
    const tc_stmt *it[5] = {
        intrin0(L, TC_INTRIN_CP_WAIT, T->S - 2), tc_s_sync(L->ir),
        tc_s_if(L->ir, BIN(TC_EXPR_LT, next, I(KT)),
                load_tile(L, X, ADD(kg0, next), MOD(next, I(T->S))), NULL),
        intrin0(L, TC_INTRIN_CP_COMMIT, 0),
        compute_tile(L, X, MOD(V(kt), I(T->S)), acc, fa, fb, V(wm), V(wn), V(gq), V(tq))};
    kloop = tc__cuda_for(L, kt, KT, TC_FOR_SERIAL, tc_s_seq(L->ir, 5, it));
  }
  /* write-back from the accumulators: element r of fragment (i, j) is C(g + 8 (r / 2), 2t + r % 2)
   */
  tc_var *i = tc__cuda_iv(L, "i"), *j = tc__cuda_iv(L, "j"), *r = tc__cuda_iv(L, "r");
  const tc_expr *gm =
      ADD(ADD(V(X->m0), V(wm)), ADD(ADD(MUL(V(i), I(16)), V(gq)), MUL(DIV(V(r), I(2)), I(8))));
  const tc_expr *gn =
      ADD(ADD(V(X->n0), V(wn)), ADD(ADD(MUL(V(j), I(8)), MUL(V(tq), I(2))), MOD(V(r), I(2))));
  const tc_expr *oidx = ADD(MUL(gm, I(g->N)), gn);
  if (g->batch > 1) oidx = ADD(MUL(V(X->bb), I(g->M * g->N)), oidx);
  const tc_expr *v = LD(acc, ADD(MUL(ADD(MUL(V(i), I(T->FN)), V(j)), I(4)), V(r)));
  const tc_stmt *wr;
  if (T->SK > 1) { /* the partial sum of range kz; the second kernel finishes */
    int64_t total = g->batch * g->M * g->N;
    tc_var *ws = tc__cuda_scratch(L, T->SK * total);
    wr = ST(ws, ADD(MUL(V(kz), I(total)), oidx), v);
    L->post = split_reduce(L, X);
  } else {
    if (g->alpha != 1.0) v = MUL(v, FLT(g->alpha));
    wr = ST(X->C, oidx, tc__cuda_epi(L, v, X->conv ? gm : gn, oidx));
  }
  const tc_expr *wok = NULL;
  if (g->M % T->BM) wok = BIN(TC_EXPR_LT, gm, I(g->M));
  if (g->N % T->BN)
    wok = wok ? BIN(TC_EXPR_AND, wok, BIN(TC_EXPR_LT, gn, I(g->N))) : BIN(TC_EXPR_LT, gn, I(g->N));
  if (wok) wr = tc_s_if(L->ir, wok, wr, NULL);
  wr = tc__cuda_for(
      L, i, T->FM, TC_FOR_UNROLLED,
      tc__cuda_for(L, j, T->FN, TC_FOR_UNROLLED, tc__cuda_for(L, r, 4, TC_FOR_UNROLLED, wr)));
  tc_var *z = tc__cuda_iv(L, "z");
  tc_list_push(L->ir, &l, kloop);
  tc_list_push(L->ir, &l, wr);
  const tc_stmt *body = tc_list_seq(L->ir, &l);
  body = tc_s_seq(L->ir, 2,
                  (const tc_stmt *const[]){tc__cuda_for(L, z, (int64_t)T->FM * T->FN * 4,
                                                        TC_FOR_UNROLLED, ST(acc, V(z), FLT(0.0))),
                                           body});
  body = tc_s_allocate(
      L->ir, acc, (int64_t)T->FM * T->FN * 4, TC_SCOPE_LOCAL,
      tc_s_allocate(L->ir, fa, (int64_t)T->FM * 4, TC_SCOPE_LOCAL,
                    tc_s_allocate(L->ir, fb, (int64_t)T->FN * 2, TC_SCOPE_LOCAL, body)));
  /* warp w takes warp tile (w / (BN / WN), w % (BN / WN)); lane = g * 4 + t */
  int wcols = T->BN / T->WN;
  body = tc_s_let(L->ir, tq, MOD(V(X->lt), I(4)), body);
  body = tc_s_let(L->ir, gq, DIV(MOD(V(X->lt), I(32)), I(4)), body);
  body = tc_s_let(L->ir, wn, MUL(MOD(DIV(V(X->lt), I(32)), I(wcols)), I(T->WN)), body);
  body = tc_s_let(L->ir, wm, MUL(DIV(DIV(V(X->lt), I(32)), I(wcols)), I(T->WM)), body);
  /* block bx: column tile fastest, so consecutive blocks share their A tile in L2 */
  body = tc_s_let(L->ir, X->n0, MUL(MOD(V(bx), I(nt)), I(T->BN)), body);
  body = tc_s_let(L->ir, X->m0, MUL(MOD(DIV(V(bx), I(nt)), I(mt)), I(T->BM)), body);
  if (g->batch > 1) body = tc_s_let(L->ir, X->bb, DIV(V(bx), I(nt * mt)), body);
  body = tc_s_allocate(L->ir, X->As, T->S * T->ASZ, TC_SCOPE_SHARED,
                       tc_s_allocate(L->ir, X->Bs, T->S * T->BSZ, TC_SCOPE_SHARED, body));
  body = tc__cuda_for(L, X->lt, 32LL * T->warps, TC_FOR_GPU_THREAD_X, body);
  body = tc__cuda_for(L, bx, g->batch * mt * nt, TC_FOR_GPU_BLOCK_X, body);
  return T->SK > 1 ? tc__cuda_for(L, kz, T->SK, TC_FOR_GPU_BLOCK_Z, body) : body;
}
