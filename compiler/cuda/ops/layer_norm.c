/* GPU layer norm over the last axis (c) of n rows, x = in (+ residual): a row kernel (templates.c),
 * the mean and then the biased variance of x - mean each reduced in shared memory by the row's
 * threads (two passes, as exact as the reference's), then out = (x - mean) / sqrt(var + eps) *
 * gamma + beta. */
#include "templates_int.h"

typedef struct ln {
  tc_var *acc, *mean, *rstd;
} ln;

static const tc_expr *value(tc__cuda_lc *L, const tc__cuda_row *R, const tc_expr *pos) {
  const tc_expr *idx = ADD(MUL(V(R->row), I(R->len)), pos);
  const tc_expr *x = LD(L->arg[TC_ARG_IN], idx);
  if (L->arg[TC_ARG_RESIDUAL]) x = ADD(x, LD(L->arg[TC_ARG_RESIDUAL], idx));
  return x;
}

static const tc_stmt *sum(tc__cuda_lc *L, const tc__cuda_row *R, const tc_expr *pos,
                          const tc_expr *q, const tc_expr *x) {
  (void)R, (void)pos, (void)q;
  const ln *c = L->ctx;
  return ST(c->acc, I(0), ADD(LD(c->acc, I(0)), x));
}

static const tc_stmt *sum_sq(tc__cuda_lc *L, const tc__cuda_row *R, const tc_expr *pos,
                             const tc_expr *q, const tc_expr *x) {
  (void)R, (void)pos, (void)q;
  const ln *c = L->ctx;
  const tc_expr *d = SUB(x, V(c->mean));
  return ST(c->acc, I(0), tc_e_fma(L->ir, d, d, LD(c->acc, I(0))));
}

static const tc_stmt *write(tc__cuda_lc *L, const tc__cuda_row *R, const tc_expr *pos,
                            const tc_expr *q, const tc_expr *x) {
  (void)q;
  const ln *c = L->ctx;
  const tc_expr *y = MUL(MUL(SUB(x, V(c->mean)), V(c->rstd)), LD(L->arg[TC_ARG_WEIGHTS], pos));
  return ST(L->arg[TC_ARG_OUT], ADD(MUL(V(R->row), I(R->len)), pos),
            ADD(y, LD(L->arg[TC_ARG_BIAS], pos)));
}

static const tc_stmt *lower(tc__cuda_lc *L, const tc_space *s, const tc_config *cfg) {
  const tc_workload *wl = L->wl;
  tc__cuda_row R;
  tc__cuda_row_init(L, &R, s, cfg, value);
  ln c = {tc__cuda_local(L, "acc"), tc_var_new(L->ir, "mean", tc_type_f32(1)),
          tc_var_new(L->ir, "rstd", tc_type_f32(1))};
  L->ctx = &c;
  tc_var *s1 = tc_var_new(L->ir, "s1", tc_type_f32(1)),
         *s2 = tc_var_new(L->ir, "s2", tc_type_f32(1));
  const tc_expr *inv = FLT(1.0 / (double)wl->c);
  const tc_expr *rstd =
      DIV(FLT(1.0), tc_e_sqrt(L->ir, tc_e_fma(L->ir, V(s2), inv, FLT(wl->alpha))));
  const tc_stmt *third = tc_s_let(L->ir, c.rstd, rstd, tc__cuda_row_pass(L, &R, 0, write));
  const tc_stmt *second[3] = {ST(c.acc, I(0), FLT(0.0)), tc__cuda_row_pass(L, &R, 0, sum_sq),
                              tc__cuda_row_allreduce(L, &R, c.acc, 0, s2, third)};
  const tc_stmt *with_mean = tc_s_let(L->ir, c.mean, MUL(V(s1), inv), tc_s_seq(L->ir, 3, second));
  const tc_stmt *first[3] = {ST(c.acc, I(0), FLT(0.0)), tc__cuda_row_pass(L, &R, 1, sum),
                             tc__cuda_row_allreduce(L, &R, c.acc, 0, s1, with_mean)};
  return tc__cuda_row_kernel(L, &R, c.acc, tc_s_seq(L->ir, 3, first));
}

const tc__cuda_op tc__cuda_op_layer_norm = {TC_KERNEL_LAYER_NORM, tc__cuda_row_space,
                                            tc__cuda_row_fallback, tc__cuda_row_shape, lower};
