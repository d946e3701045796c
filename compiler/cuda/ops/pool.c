/* GPU pooling: max and average pooling as element maps reducing each output's window in a register
 * (max ignores padded taps; average divides by PyTorch's count, see ref/ref.c), and global average
 * pooling, one thread per (n, c) summing its map. */
#include <math.h>

#include "templates_int.h"

/* ---- max ---- */

static const tc_expr *max_update(tc__cuda_lc *L, const tc__cuda_pos *p, const tc_expr *acc,
                                 const tc_expr *x) {
  (void)p;
  return tc_e_max(L->ir, acc, x);
}

/* a window entirely in the padding gives the lowest float, as PyTorch does */
static const tc_expr *max_finish(tc__cuda_lc *L, const tc__cuda_pos *p, const tc_expr *acc) {
  (void)p;
  return tc_e_select(L->ir, BIN(TC_EXPR_EQ, acc, FLT(-INFINITY)), FLT(-3.4028234663852886e38), acc);
}

static const tc__cuda_window max_window = {-INFINITY, TC_ARG_SIMPLE_OUT, max_update, max_finish};

static const tc_stmt *lower_max(tc__cuda_lc *L, const tc_space *s, const tc_config *c) {
  return tc__cuda_window_map(L, s, c, &max_window);
}

const tc__cuda_op tc__cuda_op_maxpool = TC__CUDA_WINDOW_OP(TC_KERNEL_MAXPOOL, lower_max);

/* ---- average ---- */

static const tc_expr *avg_update(tc__cuda_lc *L, const tc__cuda_pos *p, const tc_expr *acc,
                                 const tc_expr *x) {
  (void)p;
  return ADD(acc, x);
}

/* the divisor of PyTorch's avg_pool2d (see ref.c): the window clipped to the padded input, or to
 * the input without count_include_pad */
static const tc_expr *avg_finish(tc__cuda_lc *L, const tc__cuda_pos *p, const tc_expr *acc) {
  const tc_workload *wl = L->wl;
  const tc_expr *hs = SUB(MUL(V(p->y), I(wl->sh)), I(wl->pt)),
                *ws = SUB(MUL(V(p->x), I(wl->sw)), I(wl->pl));
  const tc_expr *he = ADD(hs, I(wl->kh)), *we = ADD(ws, I(wl->kw));
  const tc_expr *cnt;
  if (wl->count_include_pad) {
    cnt = MUL(SUB(tc_e_min(L->ir, he, I(wl->h + wl->pb)), hs),
              SUB(tc_e_min(L->ir, we, I(wl->w + wl->pr)), ws));
  } else {
    cnt = MUL(SUB(tc_e_min(L->ir, he, I(wl->h)), tc_e_max(L->ir, hs, I(0))),
              SUB(tc_e_min(L->ir, we, I(wl->w)), tc_e_max(L->ir, ws, I(0))));
  }
  return tc_e_select(L->ir, BIN(TC_EXPR_GT, cnt, I(0)),
                     DIV(acc, tc_e_cast(L->ir, tc_type_f32(1), cnt)), FLT(0.0));
}

static const tc__cuda_window avg_window = {0.0f, TC_ARG_SIMPLE_OUT, avg_update, avg_finish};

static const tc_stmt *lower_avg(tc__cuda_lc *L, const tc_space *s, const tc_config *c) {
  return tc__cuda_window_map(L, s, c, &avg_window);
}

const tc__cuda_op tc__cuda_op_avgpool = TC__CUDA_WINDOW_OP(TC_KERNEL_AVGPOOL, lower_avg);

/* ---- global average ---- */

static const tc_stmt *gap_elem(tc__cuda_lc *L, const tc_expr *idx) {
  const tc_workload *wl = L->wl;
  int64_t hw = (int64_t)wl->h * wl->w;
  tc_var *k = tc__cuda_iv(L, "k"), *acc = tc__cuda_local(L, "acc");
  const tc_stmt *items[3] = {
      ST(acc, I(0), FLT(0.0)),
      tc__cuda_for(
          L, k, hw, TC_FOR_SERIAL,
          ST(acc, I(0),
             ADD(LD(acc, I(0)), LD(L->arg[TC_ARG_SIMPLE_IN], ADD(MUL(idx, I(hw)), V(k)))))),
      ST(L->arg[TC_ARG_SIMPLE_OUT], idx,
         tc__cuda_epi(L, MUL(LD(acc, I(0)), FLT(1.0 / (double)hw)), NULL, NULL))};
  return tc_s_allocate(L->ir, acc, 1, TC_SCOPE_LOCAL, tc_s_seq(L->ir, 3, items));
}

static const tc_stmt *lower_global(tc__cuda_lc *L, const tc_space *s, const tc_config *c) {
  return tc__cuda_map_cfg(L, s, c, tc__cuda_out_total(L->wl), gap_elem);
}

const tc__cuda_op tc__cuda_op_global_avgpool =
    TC__CUDA_WINDOW_OP(TC_KERNEL_GLOBAL_AVGPOOL, lower_global);
