/* GPU dense (in [n, k] x torch weights [m, k] -> out [n, m]; n is the rows of an input of any
 * rank), two schedules chosen by the rows: n < 32: K split over tile_k threads per output row
 * (rows_per_block rows per block), optional float4 loads, tree reduction in shared memory; n >= 32:
 * the shared-memory tiled GEMM of gemm.c (tile_y over the rows, tile_x over the outputs, tile_k the
 * staged depth). At precision tf32 every row count takes the tensor-core GEMM of gemm_tc.c.
 * Epilogues (bias, residual, relu, clip, gelu, tanh) are fused into the store. */
#include "templates_int.h"

static th_status space(const tc_workload *wl, const tc_cuda_target *t, tc_space *s) {
  if (wl->precision == TC_PRECISION_TF32) return tc__cuda_tcgemm_space(wl, t, s);
  th_status rc;
  if (wl->n < 32) {
    static const int tk[] = {32, 64, 128, 256, 512}, rows[] = {1, 2, 4, 8}, vec[] = {1, 4};
    rc = tc__cuda_add_list(s, "tile_k", TC_KNOB_SPLIT, 5, tk);
    if (rc == TH_OK) rc = tc__cuda_add_list(s, "rows_per_block", TC_KNOB_OTHER, 4, rows);
    if (rc == TH_OK) rc = tc__cuda_add_list(s, "vec", TC_KNOB_ANNOTATE, 2, vec);
  } else {
    rc = tc__cuda_gemm_space(s);
  }
  return rc;
}

static th_status shape(const tc_workload *wl, const tc_space *s, const tc_config *cfg,
                       tc__cuda_shape *sh, char *why, size_t whylen) {
  if (wl->precision == TC_PRECISION_TF32)
    return tc__cuda_tcgemm_shape(wl, s, cfg, sh, why, whylen);
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
  return tc__cuda_gemm_shape(wl, s, cfg, sh, why, whylen);
}

static th_status fallback(const tc_workload *wl, const tc_cuda_target *t, const tc_space *s,
                          tc_config *out) {
  if (wl->precision == TC_PRECISION_TF32) return tc__cuda_tcgemm_fallback(wl, t, s, out);
  if (wl->n >= 32) return tc__cuda_gemm_fallback(wl, t, s, out);
  int tk = wl->c >= 2048 ? 256 : wl->c >= 512 ? 128 : wl->c >= 128 ? 64 : 32;
  int rows = wl->n * wl->oc >= 4096 ? 4 : 1, vec = wl->c % 4 == 0 ? 4 : 1;
  tc__cuda_pick(s, out, "tile_k", &tk, 1);
  tc__cuda_pick(s, out, "rows_per_block", &rows, 1);
  tc__cuda_pick(s, out, "vec", &vec, 1);
  return TH_OK;
}

/* n < 32: tk threads per output row split K, rows rows per block, tree reduction. */
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

static const tc_stmt *lower(tc__cuda_lc *L, const tc_space *s, const tc_config *cfg) {
  if (L->wl->precision == TC_PRECISION_TF32) return tc__cuda_tcgemm_lower(L, s, cfg);
  if (L->wl->n < 32)
    return lower_small(L, tc_config_int(s, cfg, "tile_k", 32),
                       tc_config_int(s, cfg, "rows_per_block", 1), tc_config_int(s, cfg, "vec", 1));
  return tc__cuda_gemm_lower(L, s, cfg);
}

const tc__cuda_op tc__cuda_op_dense = {TC_KERNEL_DENSE, space, fallback, shape, lower};
