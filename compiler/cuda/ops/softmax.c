/* GPU softmax over the innermost axis of extent > 1 (see include/tc/ops.h): one block per row; the row's
 * max and then its sum of exponentials reduced in shared memory, each thread striding over the row.
 */
#include <math.h>

#include "templates_int.h"

static int row_len(const tc_workload *wl) {
  return wl->w > 1 ? wl->w : wl->h > 1 ? wl->h : wl->c;
}

static th_status space(const tc_workload *wl, const tc_cuda_target *t, tc_space *s) {
  (void)wl;
  (void)t;
  static const int st[] = {32, 64, 128, 256, 512, 1024};
  return tc__cuda_add_list(s, "threads", TC_KNOB_SPLIT, 6, st);
}

static th_status shape(const tc_workload *wl, const tc_space *s, const tc_config *cfg,
                       tc__cuda_shape *sh, char *why, size_t whylen) {
  const int *th = tc__cuda_val(s, cfg, "threads");
  if (!th) return tc__cuda_why(why, whylen, "missing knob");
  int64_t len = row_len(wl);
  sh->block[0] = th[0];
  sh->grid[0] = tc__cuda_out_total(wl) / len;
  sh->shared_bytes = 4LL * th[0];
  if (th[0] > 32 && th[0] / 2 >= len)
    return tc__cuda_why(why, whylen, "more than twice as many threads as the row has elements");
  return TH_OK;
}

static th_status fallback(const tc_workload *wl, const tc_cuda_target *t, const tc_space *s,
                          tc_config *out) {
  (void)t;
  int len = row_len(wl), th = len >= 1024 ? 256 : len >= 256 ? 128 : 32;
  tc__cuda_pick(s, out, "threads", &th, 1);
  return TH_OK;
}

static const tc_stmt *lower(tc__cuda_lc *L, const tc_space *s, const tc_config *cfg) {
  const tc_workload *wl = L->wl;
  int threads = tc_config_int(s, cfg, "threads", 128);
  int64_t len = row_len(wl), rows = tc__cuda_out_total(wl) / len;
  tc_var *bx = tc__cuda_iv(L, "row"), *tx = tc__cuda_iv(L, "tx"), *k = tc__cuda_iv(L, "k");
  tc_var *k2 = tc__cuda_iv(L, "k"), *k3 = tc__cuda_iv(L, "k");
  tc_var *red = tc_var_buffer(L->ir, "red", tc_type_f32(1), -1), *acc = tc__cuda_local(L, "acc");
  tc_var *m = tc_var_new(L->ir, "m", tc_type_f32(1)), *sum = tc_var_new(L->ir, "s", tc_type_f32(1));
  tc_var *in = L->arg[TC_ARG_SIMPLE_IN], *out = L->arg[TC_ARG_SIMPLE_OUT];
  int64_t iters = (len + threads - 1) / threads;
  const tc_expr *pos = ADD(MUL(V(k), I(threads)), V(tx)),
                *pos2 = ADD(MUL(V(k2), I(threads)), V(tx));
  const tc_expr *pos3 = ADD(MUL(V(k3), I(threads)), V(tx));
  const tc_expr *row0 = MUL(V(bx), I(len));
  const tc_stmt *mx = tc__cuda_for(
      L, k, iters, TC_FOR_SERIAL,
      tc_s_if(L->ir, BIN(TC_EXPR_LT, pos, I(len)),
              ST(acc, I(0), tc_e_max(L->ir, LD(acc, I(0)), LD(in, ADD(row0, pos)))), NULL));
  const tc_stmt *sm = tc__cuda_for(
      L, k2, iters, TC_FOR_SERIAL,
      tc_s_if(
          L->ir, BIN(TC_EXPR_LT, pos2, I(len)),
          ST(acc, I(0), ADD(LD(acc, I(0)), tc_e_exp(L->ir, SUB(LD(in, ADD(row0, pos2)), V(m))))),
          NULL));
  const tc_stmt *wr =
      tc__cuda_for(L, k3, iters, TC_FOR_SERIAL,
                   tc_s_if(L->ir, BIN(TC_EXPR_LT, pos3, I(len)),
                           ST(out, ADD(row0, pos3),
                              DIV(tc_e_exp(L->ir, SUB(LD(in, ADD(row0, pos3)), V(m))), V(sum))),
                           NULL));
  /* after m is read by every thread a barrier protects red before the sum pass overwrites it */
  const tc_stmt *after_sum[2] = {tc_s_sync(L->ir), wr};
  const tc_stmt *sum_part[5] = {ST(acc, I(0), FLT(0.0)), sm, ST(red, V(tx), LD(acc, I(0))),
                                tc_s_sync(L->ir), tc__cuda_tree(L, red, I(0), tx, threads, 0)};
  const tc_stmt *with_m[3] = {tc_s_sync(L->ir), tc_s_seq(L->ir, 5, sum_part),
                              tc_s_let(L->ir, sum, LD(red, I(0)), tc_s_seq(L->ir, 2, after_sum))};
  const tc_stmt *items[6] = {ST(acc, I(0), FLT(-INFINITY)),
                             mx,
                             ST(red, V(tx), LD(acc, I(0))),
                             tc_s_sync(L->ir),
                             tc__cuda_tree(L, red, I(0), tx, threads, 1),
                             tc_s_let(L->ir, m, LD(red, I(0)), tc_s_seq(L->ir, 3, with_m))};
  const tc_stmt *body = tc_s_allocate(L->ir, acc, 1, TC_SCOPE_LOCAL, tc_s_seq(L->ir, 6, items));
  body = tc_s_allocate(L->ir, red, threads, TC_SCOPE_SHARED, body);
  body = tc__cuda_for(L, tx, threads, TC_FOR_GPU_THREAD_X, body);
  return tc__cuda_for(L, bx, rows, TC_FOR_GPU_BLOCK_X, body);
}

const tc__cuda_op tc__cuda_op_softmax = {TC_KERNEL_SOFTMAX, space, fallback, shape, lower};
