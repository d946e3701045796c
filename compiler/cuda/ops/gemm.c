/* The shared-memory tiled GEMM behind dense (batch >= 32, any number of rows) and batch_matmul:
 * out[b, m, n] = alpha * sum_k A(b, m, k) B(b, k, n), then the dense epilogue. A block computes a
 * BM x BN tile with ty x tx threads, each holding tn x tm accumulators at rows vy + i*ty and
 * columns vx + j*tx (so a warp's loads from shared memory and its stores are contiguous); the K
 * axis goes through
 * __shared__ bk at a time, each operand fetched along its contiguous axis (k, or m / n when
 * transposed) and the k-major tiles padded by one float where that fetch would hit one bank. Blocks
 * are numbered along grid x only (batch, row tile, column tile), so no shape runs into the 65535
 * limit of grid y and z. */
#include <math.h>

#include "templates_int.h"

/* (threads, per thread) pairs; the values after the first eight (tile_y) and nine (tile_x) and
 * tile_k 64 came with the transformer shapes, appended so that stored configs keep their meaning */
static const int ty_vals[] = {8, 1, 8, 2, 8, 4, 16, 1, 16, 2, 16, 4, 8, 8, 32, 2, 16, 8, 32, 4};
static const int tx_vals[] = {8, 1,  8, 2,  8, 4, 16, 1,  16, 2,  16,
                              4, 32, 1, 32, 2, 8, 8,  16, 8,  32, 4};
static const int tk_vals[] = {8, 16, 32, 64};

th_status tc__cuda_gemm_space(tc_space *s) {
  th_status rc = tc_space_add(s, "tile_y", TC_KNOB_SPLIT, 2, 10, ty_vals);
  if (rc == TH_OK) rc = tc_space_add(s, "tile_x", TC_KNOB_SPLIT, 2, 11, tx_vals);
  if (rc == TH_OK) rc = tc__cuda_add_list(s, "tile_k", TC_KNOB_SPLIT, 4, tk_vals);
  if (rc == TH_OK) rc = tc__cuda_add_unroll(s, 1);
  return rc;
}

/* Row strides of the two shared tiles, [bk][BM + pad] and [bk][BN + pad]: one float of padding
 * where the fetch walks k (consecutive threads would store BM floats apart, into one bank). */
static int64_t stride_a(const tc__cuda_gemm *g, int64_t BM) {
  return BM + (g->trans_a ? 0 : 1);
}

static int64_t stride_b(const tc__cuda_gemm *g, int64_t BN) {
  return BN + (g->trans_b ? 1 : 0);
}

static int64_t cdiv(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

th_status tc__cuda_gemm_shape(const tc_workload *wl, const tc_space *s, const tc_config *c,
                              tc__cuda_shape *sh, char *why, size_t whylen) {
  const int *ty = tc__cuda_val(s, c, "tile_y"), *tx = tc__cuda_val(s, c, "tile_x");
  const int *tk = tc__cuda_val(s, c, "tile_k");
  if (!ty || !tx || !tk) return tc__cuda_why(why, whylen, "missing knob");
  tc__cuda_gemm g = tc__cuda_gemm_of(wl);
  int64_t BM = (int64_t)ty[0] * ty[1], BN = (int64_t)tx[0] * tx[1];
  sh->block[0] = tx[0];
  sh->block[1] = ty[0];
  sh->grid[0] = g.batch * cdiv(g.M, BM) * cdiv(g.N, BN);
  sh->shared_bytes = 4LL * tk[0] * (stride_a(&g, BM) + stride_b(&g, BN));
  sh->local_floats = (int64_t)ty[1] * tx[1] + ty[1] + tx[1];
  return TH_OK;
}

th_status tc__cuda_gemm_fallback(const tc_workload *wl, const tc_cuda_target *t, const tc_space *s,
                                 tc_config *out) {
  tc__cuda_gemm g = tc__cuda_gemm_of(wl);
  int tk = g.K >= 16 ? 16 : 8, un = 512, ex = 0;
  tc__cuda_pick(s, out, "tile_k", &tk, 1);
  tc__cuda_pick(s, out, "auto_unroll_max_step", &un, 1);
  tc__cuda_pick(s, out, "unroll_explicit", &ex, 1);
  int ky = tc_space_knob(s, "tile_y"), kx = tc_space_knob(s, "tile_x");
  double best = -1e30;
  tc_config bestc = *out;
  for (int a = 0; a < s->knobs[ky].nvalues; a++)
    for (int b = 0; b < s->knobs[kx].nvalues; b++) {
      out->idx[ky] = a;
      out->idx[kx] = b;
      if (tc_cuda_valid(wl, t, s, out, NULL, 0) != TH_OK) continue;
      const int *y = s->knobs[ky].values[a], *x = s->knobs[kx].values[b];
      int64_t BM = (int64_t)y[0] * y[1], BN = (int64_t)x[0] * x[1];
      double blocks = (double)g.batch * cdiv(g.M, BM) * cdiv(g.N, BN);
      double pad = (double)cdiv(g.M, BM) * BM * cdiv(g.N, BN) * BN / ((double)g.M * g.N);
      /* more accumulators per thread reuse each shared load more; 256 threads; tiles that fit the
       * shape; and at least two waves of blocks on the target's SMs */
      double score = 0.5 * log2((double)y[1] * x[1]) - 0.5 * fabs(log2((double)y[0] * x[0]) - 8) -
                     1.5 * log2(pad);
      if (blocks < 2.0 * t->multiprocessors) score -= log2(2.0 * t->multiprocessors / blocks);
      if (score > best) {
        best = score;
        bestc = *out;
      }
    }
  *out = bestc;
  return TH_OK;
}

const tc_stmt *tc__cuda_gemm_lower(tc__cuda_lc *L, const tc_space *s, const tc_config *cfg) {
  const int *tyv = tc__cuda_val(s, cfg, "tile_y"), *txv = tc__cuda_val(s, cfg, "tile_x");
  int ty = tyv[0], tn = tyv[1], tx = txv[0], tm = txv[1], bk = tc_config_int(s, cfg, "tile_k", 16);
  const tc_workload *wl = L->wl;
  tc__cuda_gemm g = tc__cuda_gemm_of(wl);
  int dense = wl->kernel == TC_KERNEL_DENSE;
  tc_var *A = L->arg[dense ? TC_ARG_IN : 0], *B = L->arg[dense ? TC_ARG_WEIGHTS : 1];
  tc_var *C = L->arg[dense ? TC_ARG_OUT : 2];
  int64_t M = g.M, N = g.N, K = g.K, BM = (int64_t)ty * tn, BN = (int64_t)tx * tm,
          T = (int64_t)tx * ty;
  int64_t SA = stride_a(&g, BM), SB = stride_b(&g, BN), mt = cdiv(M, BM), nt = cdiv(N, BN);
  tc_var *bx = tc__cuda_iv(L, "bx"), *vx = tc__cuda_iv(L, "tx"), *vy = tc__cuda_iv(L, "ty");
  tc_var *lt = tc__cuda_iv(L, "lt"), *bb = tc__cuda_iv(L, "b"), *m0 = tc__cuda_iv(L, "m0");
  tc_var *n0 = tc__cuda_iv(L, "n0"), *k0 = tc__cuda_iv(L, "k0"), *kk = tc__cuda_iv(L, "kk");
  tc_var *e = tc__cuda_iv(L, "e"), *e2 = tc__cuda_iv(L, "e");
  tc_var *As = tc_var_buffer(L->ir, "As", tc_type_f32(1), -1);
  tc_var *Bs = tc_var_buffer(L->ir, "Bs", tc_type_f32(1), -1);
  tc_var *acc = tc__cuda_local(L, "acc"), *ra = tc__cuda_local(L, "ra"),
         *rb = tc__cuda_local(L, "rb");
  /* the A tile: As[kk][ml] = A(b, m0 + ml, k0*bk + kk) */
  const tc_expr *akk = g.trans_a ? DIV(V(e), I(BM)) : MOD(V(e), I(bk));
  const tc_expr *aml = g.trans_a ? MOD(V(e), I(BM)) : DIV(V(e), I(bk));
  const tc_expr *agm = ADD(V(m0), aml), *agk = ADD(MUL(V(k0), I(bk)), akk);
  const tc_expr *aidx = g.trans_a ? ADD(MUL(agk, I(M)), agm) : ADD(MUL(agm, I(K)), agk);
  if (g.batch > 1) aidx = ADD(MUL(V(bb), I(M * K)), aidx);
  const tc_expr *aok = NULL, *bok = NULL;
  if (M % BM) aok = BIN(TC_EXPR_LT, agm, I(M));
  if (K % bk)
    aok = aok ? BIN(TC_EXPR_AND, aok, BIN(TC_EXPR_LT, agk, I(K))) : BIN(TC_EXPR_LT, agk, I(K));
  const tc_expr *aval = aok ? tc_e_select(L->ir, aok, LD(A, aidx), FLT(0.0)) : LD(A, aidx);
  const tc_stmt *lda = ST(As, ADD(MUL(akk, I(SA)), aml), aval);
  /* the B tile: Bs[kk][nl] = B(b, k0*bk + kk, n0 + nl) */
  const tc_expr *bkk = g.trans_b ? MOD(V(e2), I(bk)) : DIV(V(e2), I(BN));
  const tc_expr *bnl = g.trans_b ? DIV(V(e2), I(bk)) : MOD(V(e2), I(BN));
  const tc_expr *bgn = ADD(V(n0), bnl), *bgk = ADD(MUL(V(k0), I(bk)), bkk);
  const tc_expr *bidx = g.trans_b ? ADD(MUL(bgn, I(K)), bgk) : ADD(MUL(bgk, I(N)), bgn);
  if (g.batch > 1) bidx = ADD(MUL(V(bb), I(K * N)), bidx);
  if (N % BN) bok = BIN(TC_EXPR_LT, bgn, I(N));
  if (K % bk)
    bok = bok ? BIN(TC_EXPR_AND, bok, BIN(TC_EXPR_LT, bgk, I(K))) : BIN(TC_EXPR_LT, bgk, I(K));
  const tc_expr *bval = bok ? tc_e_select(L->ir, bok, LD(B, bidx), FLT(0.0)) : LD(B, bidx);
  const tc_stmt *ldb = ST(Bs, ADD(MUL(bkk, I(SB)), bnl), bval);
  /* one k step: the thread's column of A and row of B in registers, then tn x tm FMAs (unrolled, so
   * that ra, rb and acc are registers) */
  tc_var *i = tc__cuda_iv(L, "i"), *j = tc__cuda_iv(L, "j"), *i1 = tc__cuda_iv(L, "i"),
         *j1 = tc__cuda_iv(L, "j");
  const tc_expr *ai = ADD(MUL(V(i), I(tm)), V(j));
  const tc_stmt *step[3] = {
      tc__cuda_for(L, i1, tn, TC_FOR_UNROLLED,
                   ST(ra, V(i1), LD(As, ADD(MUL(V(kk), I(SA)), ADD(MUL(V(i1), I(ty)), V(vy)))))),
      tc__cuda_for(L, j1, tm, TC_FOR_UNROLLED,
                   ST(rb, V(j1), LD(Bs, ADD(MUL(V(kk), I(SB)), ADD(MUL(V(j1), I(tx)), V(vx)))))),
      tc__cuda_for(
          L, i, tn, TC_FOR_UNROLLED,
          tc__cuda_for(L, j, tm, TC_FOR_UNROLLED,
                       ST(acc, ai, tc_e_fma(L->ir, LD(ra, V(i)), LD(rb, V(j)), LD(acc, ai)))))};
  const tc_stmt *comp = tc__cuda_for(L, kk, bk, TC_FOR_SERIAL, tc_s_seq(L->ir, 3, step));
  const tc_stmt *kstep[5] = {tc_s_sync(L->ir), tc__cuda_coop(L, bk * BM, T, lt, e, lda),
                             tc__cuda_coop(L, bk * BN, T, lt, e2, ldb), tc_s_sync(L->ir), comp};
  const tc_stmt *kloop = tc__cuda_for(L, k0, cdiv(K, bk), TC_FOR_SERIAL, tc_s_seq(L->ir, 5, kstep));
  tc_var *i2 = tc__cuda_iv(L, "i"), *j2 = tc__cuda_iv(L, "j"), *i3 = tc__cuda_iv(L, "i"),
         *j3 = tc__cuda_iv(L, "j");
  const tc_stmt *init = tc__cuda_for(
      L, i3, tn, TC_FOR_UNROLLED,
      tc__cuda_for(L, j3, tm, TC_FOR_UNROLLED, ST(acc, ADD(MUL(V(i3), I(tm)), V(j3)), FLT(0.0))));
  /* write-back: alpha, then the epilogue (dense: bias by column, residual, activation) */
  const tc_expr *gm = ADD(V(m0), ADD(MUL(V(i2), I(ty)), V(vy)));
  const tc_expr *gn = ADD(V(n0), ADD(MUL(V(j2), I(tx)), V(vx)));
  const tc_expr *oidx = ADD(MUL(gm, I(N)), gn);
  if (g.batch > 1) oidx = ADD(MUL(V(bb), I(M * N)), oidx);
  const tc_expr *v = LD(acc, ADD(MUL(V(i2), I(tm)), V(j2)));
  if (g.alpha != 1.0) v = MUL(v, FLT(g.alpha));
  const tc_stmt *wr = ST(C, oidx, tc__cuda_epi(L, v, gn, oidx));
  const tc_expr *wok = NULL;
  if (M % BM) wok = BIN(TC_EXPR_LT, gm, I(M));
  if (N % BN)
    wok = wok ? BIN(TC_EXPR_AND, wok, BIN(TC_EXPR_LT, gn, I(N))) : BIN(TC_EXPR_LT, gn, I(N));
  if (wok) wr = tc_s_if(L->ir, wok, wr, NULL);
  wr = tc__cuda_for(L, i2, tn, TC_FOR_UNROLLED, tc__cuda_for(L, j2, tm, TC_FOR_UNROLLED, wr));
  const tc_stmt *items[3] = {init, kloop, wr};
  const tc_stmt *body = tc_s_seq(L->ir, 3, items);
  body = tc_s_allocate(L->ir, acc, (int64_t)tn * tm, TC_SCOPE_LOCAL,
                       tc_s_allocate(L->ir, ra, tn, TC_SCOPE_LOCAL,
                                     tc_s_allocate(L->ir, rb, tm, TC_SCOPE_LOCAL, body)));
  body = tc_s_let(L->ir, lt, ADD(MUL(V(vy), I(tx)), V(vx)), body);
  /* block bx: column tile fastest, so consecutive blocks share their A tile in L2 */
  body = tc_s_let(L->ir, n0, MUL(MOD(V(bx), I(nt)), I(BN)), body);
  body = tc_s_let(L->ir, m0, MUL(MOD(DIV(V(bx), I(nt)), I(mt)), I(BM)), body);
  if (g.batch > 1) body = tc_s_let(L->ir, bb, DIV(V(bx), I(nt * mt)), body);
  body = tc_s_allocate(L->ir, As, bk * SA, TC_SCOPE_SHARED,
                       tc_s_allocate(L->ir, Bs, bk * SB, TC_SCOPE_SHARED, body));
  body = tc__cuda_for(L, vx, tx, TC_FOR_GPU_THREAD_X, body);
  body = tc__cuda_for(L, vy, ty, TC_FOR_GPU_THREAD_Y, body);
  return tc__cuda_for(L, bx, g.batch * mt * nt, TC_FOR_GPU_BLOCK_X, body);
}
