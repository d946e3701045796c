/* Reductions over rows of c floats (ops.h): every ONNX Reduce* as one template, a vectorised pass
 * that maps each element (x, x^2, |x|, or e^(x - max) after a max pass for log-sum-exp) and folds
 * it into vector accumulators (add, multiply, max or min), then the row's scalar is finished (the
 * mean's division, L2's square root, the logarithms) and stored. The graph lowers a reduction over
 * any axes to this one by moving the reduced axes last. Knobs: "rows" per parallel task and "accs",
 * the independent vector accumulators. */
#include <math.h>

#include "ops_int.h"

/* The fold of each TC_REDUCE_* (for log-sum-exp, of its second pass) and its starting value. */
void tc__reduce_fold(int op, tc_expr_kind *k, double *init) {
  *k = op == TC_REDUCE_MAX    ? TC_EXPR_MAX
       : op == TC_REDUCE_MIN  ? TC_EXPR_MIN
       : op == TC_REDUCE_PROD ? TC_EXPR_MUL
                              : TC_EXPR_ADD;
  *init = op == TC_REDUCE_MAX    ? -INFINITY
          : op == TC_REDUCE_MIN  ? INFINITY
          : op == TC_REDUCE_PROD ? 1.0
                                 : 0.0;
}

const tc_expr *tc__reduce_map(tc_ir *ir, int op, const tc_expr *x, const tc_expr *mx) {
  switch (op) {
    case TC_REDUCE_SUM_SQUARE:
    case TC_REDUCE_L2:
      return tc_e_mul(ir, x, x);
    case TC_REDUCE_L1: {
      const tc_expr *zero = tc_e_float(ir, 0.0);
      if (x->type.lanes > 1) zero = tc_e_broadcast(ir, zero, x->type.lanes);
      return tc_e_max(ir, x, tc_e_sub(ir, zero, x));
    }
    case TC_REDUCE_LOG_SUM_EXP:
      return tc_e_exp(ir, tc_e_sub(ir, x, mx));
    default:
      return x;
  }
}

const tc_expr *tc__reduce_finish(tc_ir *ir, int op, const tc_expr *s, const tc_expr *mx,
                                 int64_t c) {
  switch (op) {
    case TC_REDUCE_MEAN:
      return tc_e_div(ir, s, tc_e_float(ir, (double)c));
    case TC_REDUCE_L2:
      return tc_e_sqrt(ir, s);
    case TC_REDUCE_LOG_SUM:
      return tc_e_float_fn(ir, TC_EXPR_LOG, s);
    case TC_REDUCE_LOG_SUM_EXP:
      return tc_e_add(ir, mx, tc_e_float_fn(ir, TC_EXPR_LOG, s));
    default:
      return s;
  }
}

typedef struct rd_ctx {
  int op; /* the map's TC_REDUCE_* (MAX, an identity, for log-sum-exp's first pass) */
  const tc_var *in;
  const tc__red *red;
  const tc_expr *base, *mx; /* mx: the row's max (log-sum-exp's second pass), else NULL */
} rd_ctx;

static const tc_stmt *rd_step(tc_ir *ir, void *p, const tc_expr *i, int lanes, int slot) {
  const rd_ctx *c = p;
  const tc_expr *x = tc_e_load(ir, c->in, tc_e_add(ir, c->base, i), lanes, 4);
  const tc_expr *mx = c->mx && lanes > 1 ? tc_e_broadcast(ir, c->mx, lanes) : c->mx;
  return tc__red_step(ir, c->red, slot, tc__reduce_map(ir, c->op, x, mx));
}

/* ArgMax / ArgMin of one row: the vectorised max (min) m, then a scalar pass for the index of its
 * first (last) occurrence, stored as int64. */
static const tc_stmt *arg_row(tc_ir *ir, const tc_workload *wl, int vl, int accs, const tc_var *in,
                              const tc_var *o, const tc_expr *r, const tc_expr *base) {
  int mx = wl->op == TC_REDUCE_ARGMAX || wl->op == TC_REDUCE_ARGMAX_LAST,
      last = wl->op >= TC_REDUCE_ARGMAX_LAST;
  tc__red red;
  tc__red_new(ir, &red, accs, vl, mx ? TC_EXPR_MAX : TC_EXPR_MIN, mx ? -INFINITY : INFINITY);
  tc_var *m = tc_var_new(ir, "m", tc_type_f32(1)), *i = tc_var_new(ir, "i", tc_type_int()),
         *ix = tc_var_buffer(ir, "ix", tc_type_int(), -1);
  rd_ctx x = {TC_REDUCE_MAX, in, &red, base, NULL};
  const tc_expr *at = tc_e_load(ir, ix, tc__c(ir, 0), 1, 8);
  const tc_expr *hit = tc_e_bin(
      ir, TC_EXPR_EQ, tc_e_load(ir, in, tc_e_add(ir, base, tc__v(ir, i)), 1, 4), tc__v(ir, m));
  if (!last) hit = tc__and(ir, hit, tc_e_bin(ir, TC_EXPR_LT, tc__v(ir, i), at));
  const tc_stmt *scan =
      tc_s_for(ir, i, tc__c(ir, 0), tc__c(ir, wl->c), TC_FOR_SERIAL,
               tc_s_store(ir, ix, tc__c(ir, 0), tc_e_select(ir, hit, tc__v(ir, i), at), 8));
  const tc_stmt *second[3] = {tc_s_store(ir, ix, tc__c(ir, 0), tc__c(ir, last ? -1 : wl->c), 8),
                              scan, tc_s_store(ir, o, r, tc_e_load(ir, ix, tc__c(ir, 0), 1, 8), 8)};
  const tc_stmt *first[3] = {tc__red_init(ir, &red), tc__vec_loop(ir, wl->c, vl, accs, rd_step, &x),
                             tc__red_let(ir, &red, m, tc_s_seq(ir, 3, second))};
  return tc__red_alloc(ir, &red, tc_s_allocate(ir, ix, 1, TC_SCOPE_LOCAL, tc_s_seq(ir, 3, first)));
}

static th_status lower(const tc_workload *wl, const tc_target *t, const tc_space *s,
                       const tc_config *c, tc_ir *ir, const tc_stmt **out) {
  int vl = t->simd_lanes, accs = tc__knob(s, c, "accs")[0], lse = wl->op == TC_REDUCE_LOG_SUM_EXP;
  tc_expr_kind k;
  double init;
  tc__reduce_fold(wl->op, &k, &init);
  tc__red red, mxr;
  tc__red_new(ir, &red, accs, vl, k, init);
  tc__red_new(ir, &mxr, accs, vl, TC_EXPR_MAX, -INFINITY);
  tc_var *row = tc_var_new(ir, "row", tc_type_int()), *total = tc_var_new(ir, "s", tc_type_f32(1)),
         *mx = tc_var_new(ir, "mx", tc_type_f32(1));
  const tc_var *in = tc_var_buffer(ir, "in", tc_type_f32(1), 0),
               *o = tc_var_buffer(ir, "out",
                                  wl->op >= TC_REDUCE_ARGMAX ? tc_type_int() : tc_type_f32(1), 1);
  rd_ctx x = {wl->op, in, &red, tc_e_mul(ir, tc__v(ir, row), tc__c(ir, wl->c)),
              lse ? tc__v(ir, mx) : NULL};
  const tc_stmt *body;
  if (wl->op >= TC_REDUCE_ARGMAX) {
    body = arg_row(ir, wl, vl, accs, in, o, tc__v(ir, row), x.base);
  } else {
    const tc_stmt *store = tc_s_store(
        ir, o, tc__v(ir, row),
        tc__reduce_finish(ir, wl->op, tc__v(ir, total), lse ? tc__v(ir, mx) : NULL, wl->c), 4);
    const tc_stmt *items[3] = {tc__red_init(ir, &red),
                               tc__vec_loop(ir, wl->c, vl, accs, rd_step, &x),
                               tc__red_let(ir, &red, total, store)};
    body = tc__red_alloc(ir, &red, tc_s_seq(ir, 3, items));
  }
  if (lse) { /* the row's max first */
    rd_ctx m = {TC_REDUCE_MAX, in, &mxr, x.base, NULL};
    const tc_stmt *first[3] = {tc__red_init(ir, &mxr),
                               tc__vec_loop(ir, wl->c, vl, accs, rd_step, &m),
                               tc__red_let(ir, &mxr, mx, body)};
    body = tc__red_alloc(ir, &mxr, tc_s_seq(ir, 3, first));
  }
  *out = tc__row_tasks(ir, wl->n, tc__knob(s, c, "rows")[0], row, body);
  return ir->err;
}

const tc__op tc__op_reduce = {
    TC_KERNEL_REDUCE, tc__tensor_space, tc__tensor_fallback, NULL, lower, NULL};
