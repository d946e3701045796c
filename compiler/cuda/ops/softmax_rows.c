/* GPU softmax_rows, softmax over w of alpha * x (+ mask[row / (c*h), :]) for the rows [n, c, h]
 * (attention scores): a row kernel (templates.c), the row's max and then its sum of exponentials
 * reduced in shared memory by its threads. A row whose every value is -inf (fully masked) comes out
 * uniform, as in torch with its finite masks, never NaN. */
#include <math.h>

#include "templates_int.h"

typedef struct sm {
  tc_var *acc, *m, *inv;
} sm;

static const tc_expr *value(tc__cuda_lc *L, const tc__cuda_row *R, const tc_expr *pos) {
  const tc_workload *wl = L->wl;
  const tc_expr *x = LD(L->arg[0], ADD(MUL(V(R->row), I(R->len)), pos));
  if (wl->alpha != 1.0f) x = MUL(x, FLT(wl->alpha));
  if (L->arg[1]) { /* the mask row of the batch element: [n, w] */
    const tc_expr *b = DIV(V(R->row), I((int64_t)wl->c * wl->h));
    x = ADD(x, LD(L->arg[1], ADD(MUL(b, I(R->len)), pos)));
  }
  return x;
}

static const tc_stmt *max(tc__cuda_lc *L, const tc__cuda_row *R, const tc_expr *pos,
                          const tc_expr *q, const tc_expr *x) {
  (void)R, (void)pos, (void)q;
  const sm *c = L->ctx;
  return ST(c->acc, I(0), tc_e_max(L->ir, LD(c->acc, I(0)), x));
}

/* e^(x - max), or 1 everywhere when the max is -inf (every value masked) */
static const tc_expr *expo(tc__cuda_lc *L, const tc_expr *x) {
  const sm *c = L->ctx;
  return tc_e_select(L->ir, BIN(TC_EXPR_EQ, V(c->m), FLT(-INFINITY)), FLT(1.0),
                     tc_e_exp(L->ir, SUB(x, V(c->m))));
}

static const tc_stmt *sum(tc__cuda_lc *L, const tc__cuda_row *R, const tc_expr *pos,
                          const tc_expr *q, const tc_expr *x) {
  (void)pos;
  const sm *c = L->ctx;
  tc_var *e = tc_var_new(L->ir, "e", tc_type_f32(1));
  const tc_stmt *add = ST(c->acc, I(0), ADD(LD(c->acc, I(0)), V(e)));
  if (R->stash) add = tc_s_seq(L->ir, 2, (const tc_stmt *const[]){ST(R->vals, q, V(e)), add});
  return tc_s_let(L->ir, e, expo(L, x), add);
}

static const tc_stmt *write(tc__cuda_lc *L, const tc__cuda_row *R, const tc_expr *pos,
                            const tc_expr *q, const tc_expr *x) {
  (void)q;
  const sm *c = L->ctx;
  const tc_expr *e = R->stash ? x : expo(L, x); /* the sum pass stashed the exponentials */
  return ST(L->arg[2], ADD(MUL(V(R->row), I(R->len)), pos), MUL(e, V(c->inv)));
}

static const tc_stmt *lower(tc__cuda_lc *L, const tc_space *s, const tc_config *cfg) {
  tc__cuda_row R;
  tc__cuda_row_init(L, &R, s, cfg, value);
  sm c = {tc__cuda_local(L, "acc"), tc_var_new(L->ir, "m", tc_type_f32(1)),
          tc_var_new(L->ir, "inv", tc_type_f32(1))};
  L->ctx = &c;
  tc_var *total = tc_var_new(L->ir, "total", tc_type_f32(1));
  const tc_stmt *third =
      tc_s_let(L->ir, c.inv, DIV(FLT(1.0), V(total)), tc__cuda_row_pass(L, &R, 0, write));
  const tc_stmt *second[3] = {ST(c.acc, I(0), FLT(0.0)), tc__cuda_row_pass(L, &R, 0, sum),
                              tc__cuda_row_allreduce(L, &R, c.acc, 0, total, third)};
  const tc_stmt *first[3] = {
      ST(c.acc, I(0), FLT(-INFINITY)), tc__cuda_row_pass(L, &R, 1, max),
      tc__cuda_row_allreduce(L, &R, c.acc, 1, c.m, tc_s_seq(L->ir, 3, second))};
  return tc__cuda_row_kernel(L, &R, c.acc, tc_s_seq(L->ir, 3, first));
}

const tc__cuda_op tc__cuda_op_softmax_rows = {TC_KERNEL_SOFTMAX_ROWS, tc__cuda_row_space,
                                              tc__cuda_row_fallback, tc__cuda_row_shape, lower};
