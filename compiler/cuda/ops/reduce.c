/* GPU reduce (n rows of c floats, TC_REDUCE_*): a row kernel (templates.c) whose threads fold their
 * elements, mapped by the CPU's expression (tc__reduce_map: x, x^2, |x|), with the CPU's fold (add,
 * multiply, max or min), combine the row in shared memory, and store the CPU's finish of it (mean,
 * square root, logarithms) from thread 0. Log-sum-exp reduces the row's max first and then sums
 * e^(x - max), as the CPU template does. */
#include <math.h>

#include "../../ops/ops_int.h"
#include "templates_int.h"

typedef struct rd {
  tc_var *acc, *m;
  int op; /* the map's TC_REDUCE_* in this pass */
  tc_expr_kind k;
} rd;

static const tc_expr *value(tc__cuda_lc *L, const tc__cuda_row *R, const tc_expr *pos) {
  return LD(L->arg[0], ADD(MUL(V(R->row), I(R->len)), pos));
}

static const tc_stmt *fold(tc__cuda_lc *L, const tc__cuda_row *R, const tc_expr *pos,
                           const tc_expr *q, const tc_expr *x) {
  (void)R, (void)pos, (void)q;
  const rd *c = L->ctx;
  const tc_expr *y = tc__reduce_map(L->ir, c->op, x, c->m ? V(c->m) : NULL);
  return ST(c->acc, I(0), BIN(c->k, LD(c->acc, I(0)), y));
}

/* ArgMax / ArgMin's second pass: the least (last: the greatest) position holding the row's m */
static const tc_stmt *locate(tc__cuda_lc *L, const tc__cuda_row *R, const tc_expr *pos,
                             const tc_expr *q, const tc_expr *x) {
  (void)R, (void)q;
  const rd *c = L->ctx;
  const tc_expr *a = LD(c->acc, I(0));
  return ST(c->acc, I(0),
            tc_e_select(L->ir, BIN(TC_EXPR_EQ, x, V(c->m)),
                        BIN(c->k, a, tc_e_cast(L->ir, tc_type_f32(1), pos)), a));
}

/* ArgMax / ArgMin: the row's max (min), then the position of its first (last) occurrence, as
 * int64 (positions are exact in float up to 2^24). */
static const tc_stmt *arg_body(tc__cuda_lc *L, tc__cuda_row *R, tc_var *acc, const tc_expr *mine) {
  const tc_workload *wl = L->wl;
  int mx = wl->op == TC_REDUCE_ARGMAX || wl->op == TC_REDUCE_ARGMAX_LAST,
      last = wl->op >= TC_REDUCE_ARGMAX_LAST;
  tc_var *m = tc_var_new(L->ir, "m", tc_type_f32(1)), *at = tc_var_new(L->ir, "at", tc_type_f32(1));
  rd find = {acc, m, TC_REDUCE_MAX, last ? TC_EXPR_MAX : TC_EXPR_MIN};
  L->ctx = &find;
  const tc_stmt *store =
      tc_s_if(L->ir, mine, ST(L->arg[1], V(R->row), tc_e_cast(L->ir, tc_type_int(), V(at))), NULL);
  const tc_stmt *second[3] = {ST(acc, I(0), FLT(last ? -1.0 : (double)wl->c)),
                              tc__cuda_row_pass(L, R, 0, locate),
                              tc__cuda_row_allreduce(L, R, acc, find.k, at, store)};
  rd ext = {acc, NULL, TC_REDUCE_MAX, mx ? TC_EXPR_MAX : TC_EXPR_MIN};
  L->ctx = &ext;
  const tc_stmt *first[3] = {
      ST(acc, I(0), FLT(mx ? -INFINITY : INFINITY)), tc__cuda_row_pass(L, R, 1, fold),
      tc__cuda_row_allreduce(L, R, acc, ext.k, m, tc_s_seq(L->ir, 3, second))};
  return tc_s_seq(L->ir, 3, first);
}

static const tc_stmt *lower(tc__cuda_lc *L, const tc_space *s, const tc_config *cfg) {
  const tc_workload *wl = L->wl;
  int lse = wl->op == TC_REDUCE_LOG_SUM_EXP;
  tc__cuda_row R;
  tc__cuda_row_init(L, &R, s, cfg, value);
  double init;
  rd c = {tc__cuda_local(L, "acc"), lse ? tc_var_new(L->ir, "m", tc_type_f32(1)) : NULL, wl->op,
          TC_EXPR_ADD};
  tc__reduce_fold(wl->op, &c.k, &init);
  L->ctx = &c;
  tc_var *total = tc_var_new(L->ir, "total", tc_type_f32(1));
  const tc_expr *mine = BIN(TC_EXPR_EQ, V(R.tx_v), I(0));
  if (R.rows % R.ty) mine = BIN(TC_EXPR_AND, mine, BIN(TC_EXPR_LT, V(R.row), I(R.rows)));
  if (wl->op >= TC_REDUCE_ARGMAX)
    return tc__cuda_row_kernel(L, &R, c.acc, arg_body(L, &R, c.acc, mine));
  const tc_stmt *store =
      tc_s_if(L->ir, mine,
              ST(L->arg[1], V(R.row),
                 tc__reduce_finish(L->ir, wl->op, V(total), c.m ? V(c.m) : NULL, wl->c)),
              NULL);
  const tc_stmt *main[3] = {ST(c.acc, I(0), FLT(init)), tc__cuda_row_pass(L, &R, !lse, fold),
                            tc__cuda_row_allreduce(L, &R, c.acc, c.k, total, store)};
  const tc_stmt *body = tc_s_seq(L->ir, 3, main);
  if (lse) { /* the row's max first: a pass with MAX's identity map and fold */
    rd mx = {c.acc, NULL, TC_REDUCE_MAX, TC_EXPR_MAX};
    L->ctx = &mx;
    const tc_stmt *first[3] = {ST(c.acc, I(0), FLT(-INFINITY)), tc__cuda_row_pass(L, &R, 1, fold),
                               tc__cuda_row_allreduce(L, &R, c.acc, TC_EXPR_MAX, c.m, body)};
    body = tc_s_seq(L->ir, 3, first);
    L->ctx = &c;
  }
  return tc__cuda_row_kernel(L, &R, c.acc, body);
}

const tc__cuda_op tc__cuda_op_reduce = {TC_KERNEL_REDUCE, tc__cuda_row_space, tc__cuda_row_fallback,
                                        tc__cuda_row_shape, lower};
