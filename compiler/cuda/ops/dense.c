/* GPU dense (in [n, k] x torch weights [m, k] -> out [n, m]), two schedules chosen by the batch:
 *   batch < 32:  K split over tile_k threads per output row (rows_per_block rows per block),
 * optional float4 loads, tree reduction in shared memory; batch >= 32: a shared-memory tiled GEMM
 * (tile_y over the batch, tile_x over the outputs, tile_k the staged depth). */
#include "templates_int.h"

static th_status space(const tc_workload *wl, const tc_cuda_target *t, tc_space *s) {
  (void)t;
  th_status rc;
  if (wl->n < 32) {
    static const int tk[] = {32, 64, 128, 256, 512}, rows[] = {1, 2, 4, 8}, vec[] = {1, 4};
    rc = tc__cuda_add_list(s, "tile_k", TC_KNOB_SPLIT, 5, tk);
    if (rc == TH_OK) rc = tc__cuda_add_list(s, "rows_per_block", TC_KNOB_OTHER, 4, rows);
    if (rc == TH_OK) rc = tc__cuda_add_list(s, "vec", TC_KNOB_ANNOTATE, 2, vec);
  } else {
    static const int ty[] = {8, 1, 8, 2, 8, 4, 16, 1, 16, 2, 16, 4, 8, 8, 32, 2};
    static const int tx[] = {8, 1, 8, 2, 8, 4, 16, 1, 16, 2, 16, 4, 32, 1, 32, 2, 8, 8};
    static const int tk[] = {8, 16, 32};
    rc = tc_space_add(s, "tile_y", TC_KNOB_SPLIT, 2, 8, ty);
    if (rc == TH_OK) rc = tc_space_add(s, "tile_x", TC_KNOB_SPLIT, 2, 9, tx);
    if (rc == TH_OK) rc = tc__cuda_add_list(s, "tile_k", TC_KNOB_SPLIT, 3, tk);
    if (rc == TH_OK) rc = tc__cuda_add_unroll(s, 1);
  }
  return rc;
}

static th_status shape(const tc_workload *wl, const tc_space *s, const tc_config *cfg,
                       tc__cuda_shape *sh, char *why, size_t whylen) {
  if (wl->n < 32) {
    const int *tk = tc__cuda_val(s, cfg, "tile_k"), *rows = tc__cuda_val(s, cfg, "rows_per_block");
    const int *vec = tc__cuda_val(s, cfg, "vec");
    if (!tk || !rows || !vec) return tc__cuda_why(why, whylen, "missing knob");
    if (vec[0] == 4 && wl->c % 4) return tc__cuda_why(why, whylen, "float4 loads need K % 4 == 0");
    sh->block[0] = tk[0];
    sh->block[1] = rows[0];
    sh->grid[0] = ((int64_t)wl->n * wl->oc + rows[0] - 1) / rows[0];
    sh->shared_bytes = 4LL * tk[0] * rows[0];
    sh->local_floats = 4;
    return TH_OK;
  }
  const int *ty = tc__cuda_val(s, cfg, "tile_y"), *tx = tc__cuda_val(s, cfg, "tile_x");
  const int *tk = tc__cuda_val(s, cfg, "tile_k");
  if (!ty || !tx || !tk) return tc__cuda_why(why, whylen, "missing knob");
  int64_t bn = (int64_t)ty[0] * ty[1], bm = (int64_t)tx[0] * tx[1];
  sh->block[0] = tx[0];
  sh->block[1] = ty[0];
  sh->grid[0] = (wl->oc + bm - 1) / bm;
  sh->grid[1] = (wl->n + bn - 1) / bn;
  sh->shared_bytes = 4LL * tk[0] * (bn + bm);
  sh->local_floats = (int64_t)ty[1] * tx[1];
  return TH_OK;
}

static th_status fallback(const tc_workload *wl, const tc_cuda_target *t, const tc_space *s,
                          tc_config *out) {
  (void)t;
  if (wl->n < 32) {
    int tk = wl->c >= 2048 ? 256 : wl->c >= 512 ? 128 : wl->c >= 128 ? 64 : 32;
    int rows = wl->n * wl->oc >= 4096 ? 4 : 1, vec = wl->c % 4 == 0 ? 4 : 1;
    tc__cuda_pick(s, out, "tile_k", &tk, 1);
    tc__cuda_pick(s, out, "rows_per_block", &rows, 1);
    tc__cuda_pick(s, out, "vec", &vec, 1);
  } else {
    int ty[2] = {16, 4}, tx[2] = {16, 4}, tk = 16, un = 512;
    tc__cuda_pick(s, out, "tile_y", ty, 2);
    tc__cuda_pick(s, out, "tile_x", tx, 2);
    tc__cuda_pick(s, out, "tile_k", &tk, 1);
    tc__cuda_pick(s, out, "auto_unroll_max_step", &un, 1);
  }
  return TH_OK;
}

/* batch < 32: tk threads per output row split K, rows rows per block, tree reduction. */
static const tc_stmt *lower_small(tc__cuda_lc *L, int tk, int rows, int vec) {
  const tc_workload *wl = L->wl;
  int64_t K = wl->c, M = wl->oc, R = (int64_t)wl->n * M;
  tc_var *bx = tc__cuda_iv(L, "bx"), *tx = tc__cuda_iv(L, "tx"), *ty = tc__cuda_iv(L, "ty");
  tc_var *row = tc__cuda_iv(L, "row"), *k = tc__cuda_iv(L, "k");
  tc_var *red = tc_var_buffer(L->ir, "red", tc_type_f32(1), -1), *acc = tc__cuda_local(L, "acc");
  tc_var *in = L->arg[TC_ARG_IN], *w = L->arg[TC_ARG_WEIGHTS];
  const tc_expr *nn = DIV(V(row), I(M)), *mm = MOD(V(row), I(M));
  const tc_stmt *loop, *init, *fin;
  if (vec == 4) {
    int64_t iters = (K / 4 + tk - 1) / tk;
    const tc_expr *kk = MUL(ADD(MUL(V(k), I(tk)), V(tx)), I(4));
    const tc_expr *f = tc_e_fma(L->ir, tc_e_load(L->ir, in, ADD(MUL(nn, I(K)), kk), 4, 16),
                                tc_e_load(L->ir, w, ADD(MUL(mm, I(K)), kk), 4, 16),
                                tc_e_load(L->ir, acc, I(0), 4, 4));
    loop = tc__cuda_for(
        L, k, iters, TC_FOR_SERIAL,
        tc_s_if(L->ir, BIN(TC_EXPR_LT, kk, I(K)), tc_s_store(L->ir, acc, I(0), f, 4), NULL));
    init = tc_s_store(L->ir, acc, I(0), tc_e_broadcast(L->ir, FLT(0.0), 4), 4);
    fin = ST(acc, I(0), ADD(ADD(LD(acc, I(0)), LD(acc, I(1))), ADD(LD(acc, I(2)), LD(acc, I(3)))));
  } else {
    int64_t iters = (K + tk - 1) / tk;
    const tc_expr *kk = ADD(MUL(V(k), I(tk)), V(tx));
    loop = tc__cuda_for(L, k, iters, TC_FOR_SERIAL,
                        tc_s_if(L->ir, BIN(TC_EXPR_LT, kk, I(K)),
                                ST(acc, I(0),
                                   tc_e_fma(L->ir, LD(in, ADD(MUL(nn, I(K)), kk)),
                                            LD(w, ADD(MUL(mm, I(K)), kk)), LD(acc, I(0)))),
                                NULL));
    init = ST(acc, I(0), FLT(0.0));
    fin = tc_s_seq(L->ir, 0, NULL);
  }
  const tc_stmt *compute[2] = {loop, fin};
  const tc_expr *base = MUL(V(ty), I(tk));
  const tc_stmt *store =
      tc_s_if(L->ir, BIN(TC_EXPR_AND, BIN(TC_EXPR_EQ, V(tx), I(0)), BIN(TC_EXPR_LT, V(row), I(R))),
              ST(L->arg[TC_ARG_OUT], V(row), tc__cuda_epi(L, LD(red, base), mm, V(row))), NULL);
  const tc_stmt *items[5] = {
      init, tc_s_if(L->ir, BIN(TC_EXPR_LT, V(row), I(R)), tc_s_seq(L->ir, 2, compute), NULL),
      ST(red, ADD(base, V(tx)), LD(acc, I(0))), tc_s_sync(L->ir),
      tc_s_seq(L->ir, 2, (const tc_stmt *const[]){tc__cuda_tree(L, red, base, tx, tk, 0), store})};
  const tc_stmt *body = tc_s_allocate(L->ir, acc, 4, TC_SCOPE_LOCAL, tc_s_seq(L->ir, 5, items));
  body = tc_s_let(L->ir, row, ADD(MUL(V(bx), I(rows)), V(ty)), body);
  body = tc_s_allocate(L->ir, red, (int64_t)tk * rows, TC_SCOPE_SHARED, body);
  body = tc__cuda_for(L, tx, tk, TC_FOR_GPU_THREAD_X, body);
  body = tc__cuda_for(L, ty, rows, TC_FOR_GPU_THREAD_Y, body);
  return tc__cuda_for(L, bx, (R + rows - 1) / rows, TC_FOR_GPU_BLOCK_X, body);
}

/* batch >= 32: C[n, m] = sum_k A[n, k] W[m, k], a BN x BM tile per block staged through shared. */
static const tc_stmt *lower_large(tc__cuda_lc *L, int ty, int tn, int tx, int tm, int bk) {
  const tc_workload *wl = L->wl;
  int64_t N = wl->n, M = wl->oc, K = wl->c, BN = (int64_t)ty * tn, BM = (int64_t)tx * tm,
          T = (int64_t)tx * ty;
  tc_var *bxm = tc__cuda_iv(L, "bm"), *byn = tc__cuda_iv(L, "bn"), *vx = tc__cuda_iv(L, "tx"),
         *vy = tc__cuda_iv(L, "ty");
  tc_var *lt = tc__cuda_iv(L, "lt");
  tc_var *k0 = tc__cuda_iv(L, "k0"), *kk = tc__cuda_iv(L, "kk"), *i = tc__cuda_iv(L, "i"),
         *j = tc__cuda_iv(L, "j");
  tc_var *e = tc__cuda_iv(L, "e"), *e2 = tc__cuda_iv(L, "e");
  tc_var *As = tc_var_buffer(L->ir, "As", tc_type_f32(1), -1),
         *Ws = tc_var_buffer(L->ir, "Ws", tc_type_f32(1), -1);
  tc_var *acc = tc__cuda_local(L, "acc");
  tc_var *A = L->arg[TC_ARG_IN], *W = L->arg[TC_ARG_WEIGHTS];
  /* As[kk*BN + nl] = A[bn*BN + nl, k0*bk + kk] (consecutive threads read consecutive k) */
  const tc_expr *akk = MOD(V(e), I(bk)), *anl = DIV(V(e), I(bk));
  const tc_expr *agk = ADD(MUL(V(k0), I(bk)), akk), *agn = ADD(MUL(V(byn), I(BN)), anl);
  const tc_expr *aok = BIN(TC_EXPR_AND, BIN(TC_EXPR_LT, agk, I(K)), BIN(TC_EXPR_LT, agn, I(N)));
  const tc_stmt *lda = ST(As, ADD(MUL(akk, I(BN)), anl),
                          tc_e_select(L->ir, aok, LD(A, ADD(MUL(agn, I(K)), agk)), FLT(0.0)));
  const tc_expr *wkk = MOD(V(e2), I(bk)), *wml = DIV(V(e2), I(bk));
  const tc_expr *wgk = ADD(MUL(V(k0), I(bk)), wkk), *wgm = ADD(MUL(V(bxm), I(BM)), wml);
  const tc_expr *wok = BIN(TC_EXPR_AND, BIN(TC_EXPR_LT, wgk, I(K)), BIN(TC_EXPR_LT, wgm, I(M)));
  const tc_stmt *ldw = ST(Ws, ADD(MUL(wkk, I(BM)), wml),
                          tc_e_select(L->ir, wok, LD(W, ADD(MUL(wgm, I(K)), wgk)), FLT(0.0)));
  const tc_expr *nl = ADD(MUL(V(i), I(ty)), V(vy)), *ml = ADD(MUL(V(j), I(tx)), V(vx));
  const tc_expr *ai = ADD(MUL(V(i), I(tm)), V(j));
  const tc_stmt *fma = ST(acc, ai,
                          tc_e_fma(L->ir, LD(As, ADD(MUL(V(kk), I(BN)), nl)),
                                   LD(Ws, ADD(MUL(V(kk), I(BM)), ml)), LD(acc, ai)));
  const tc_stmt *comp = tc__cuda_for(
      L, kk, bk, TC_FOR_SERIAL,
      tc__cuda_for(L, i, tn, TC_FOR_SERIAL, tc__cuda_for(L, j, tm, TC_FOR_SERIAL, fma)));
  const tc_stmt *step[5] = {tc_s_sync(L->ir), tc__cuda_coop(L, bk * BN, T, lt, e, lda),
                            tc__cuda_coop(L, bk * BM, T, lt, e2, ldw), tc_s_sync(L->ir), comp};
  const tc_stmt *kloop =
      tc__cuda_for(L, k0, (K + bk - 1) / bk, TC_FOR_SERIAL, tc_s_seq(L->ir, 5, step));
  tc_var *i2 = tc__cuda_iv(L, "i"), *j2 = tc__cuda_iv(L, "j"), *i3 = tc__cuda_iv(L, "i"),
         *j3 = tc__cuda_iv(L, "j");
  const tc_stmt *init = tc__cuda_for(
      L, i3, tn, TC_FOR_SERIAL,
      tc__cuda_for(L, j3, tm, TC_FOR_SERIAL, ST(acc, ADD(MUL(V(i3), I(tm)), V(j3)), FLT(0.0))));
  const tc_expr *gn = ADD(MUL(V(byn), I(BN)), ADD(MUL(V(i2), I(ty)), V(vy)));
  const tc_expr *gm = ADD(MUL(V(bxm), I(BM)), ADD(MUL(V(j2), I(tx)), V(vx)));
  const tc_expr *oidx = ADD(MUL(gn, I(M)), gm);
  const tc_stmt *wr =
      tc_s_if(L->ir, BIN(TC_EXPR_AND, BIN(TC_EXPR_LT, gn, I(N)), BIN(TC_EXPR_LT, gm, I(M))),
              ST(L->arg[TC_ARG_OUT], oidx,
                 tc__cuda_epi(L, LD(acc, ADD(MUL(V(i2), I(tm)), V(j2))), gm, oidx)),
              NULL);
  wr = tc__cuda_for(L, i2, tn, TC_FOR_SERIAL, tc__cuda_for(L, j2, tm, TC_FOR_SERIAL, wr));
  const tc_stmt *items[3] = {init, kloop, wr};
  const tc_stmt *body =
      tc_s_allocate(L->ir, acc, BN / ty * tm, TC_SCOPE_LOCAL, tc_s_seq(L->ir, 3, items));
  body = tc_s_let(L->ir, lt, ADD(MUL(V(vy), I(tx)), V(vx)), body);
  body = tc_s_allocate(L->ir, As, bk * BN, TC_SCOPE_SHARED,
                       tc_s_allocate(L->ir, Ws, bk * BM, TC_SCOPE_SHARED, body));
  body = tc__cuda_for(L, vx, tx, TC_FOR_GPU_THREAD_X, body);
  body = tc__cuda_for(L, vy, ty, TC_FOR_GPU_THREAD_Y, body);
  body = tc__cuda_for(L, bxm, (M + BM - 1) / BM, TC_FOR_GPU_BLOCK_X, body);
  return tc__cuda_for(L, byn, (N + BN - 1) / BN, TC_FOR_GPU_BLOCK_Y, body);
}

static const tc_stmt *lower(tc__cuda_lc *L, const tc_space *s, const tc_config *cfg) {
  if (L->wl->n < 32)
    return lower_small(L, tc_config_int(s, cfg, "tile_k", 32),
                       tc_config_int(s, cfg, "rows_per_block", 1), tc_config_int(s, cfg, "vec", 1));
  const int *ty = tc__cuda_val(s, cfg, "tile_y"), *tx = tc__cuda_val(s, cfg, "tile_x");
  return lower_large(L, ty[0], ty[1], tx[0], tx[1], tc_config_int(s, cfg, "tile_k", 16));
}

const tc__cuda_op tc__cuda_op_dense = {TC_KERNEL_DENSE, space, fallback, shape, lower};
