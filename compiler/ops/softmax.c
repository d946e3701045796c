/* Softmax over the innermost axis of extent > 1 (see ops.h), numerically stable: max, then exp and sum
 * (the exps are written to the output), then one scaling pass. Rows run in parallel. Only classifier
 * heads use it, so the space holds one point. */
#include "ops_int.h"

static void row_shape(const tc_workload *wl, int64_t *rows, int64_t *len) {
  int64_t total = (int64_t)wl->n * wl->c * wl->h * wl->w;
  *len = wl->w > 1 ? wl->w : wl->h > 1 ? wl->h : wl->c;
  *rows = total / *len;
}

static th_status space(const tc_workload *wl, const tc_target *t, tc_space *s) {
  (void)wl;
  (void)t;
  int one = 1;
  return tc_space_add(s, "vec", TC_KNOB_ANNOTATE, 1, 1, &one);
}

static th_status fallback(const tc_workload *wl, const tc_target *t, const tc_space *s, tc_config *c) {
  (void)wl;
  (void)t;
  (void)s;
  c->idx[0] = 0;
  return TH_OK;
}

static th_status lower(const tc_workload *wl, const tc_target *t, const tc_space *s, const tc_config *c,
                       tc_ir *ir, const tc_stmt **out) {
  (void)t;
  (void)s;
  (void)c;
  int64_t rows, len;
  row_shape(wl, &rows, &len);
  const tc_var *in = tc_var_buffer(ir, "in", tc_type_f32(1), TC_ARG_SIMPLE_IN);
  const tc_var *o = tc_var_buffer(ir, "out", tc_type_f32(1), TC_ARG_SIMPLE_OUT);
  tc_var *acc = tc_var_buffer(ir, "acc", tc_type_f32(1), -1);
  tc_var *row = tc_var_new(ir, "row", tc_type_int()), *base = tc_var_new(ir, "base", tc_type_int());
  tc_var *i1 = tc_var_new(ir, "i", tc_type_int()), *i2 = tc_var_new(ir, "i", tc_type_int());
  tc_var *i3 = tc_var_new(ir, "i", tc_type_int());
  tc_var *mx = tc_var_new(ir, "mx", tc_type_f32(1)), *inv = tc_var_new(ir, "inv", tc_type_f32(1));
  const tc_expr *b = tc__v(ir, base);
  const tc_expr *a0 = tc__c(ir, 0), *a1 = tc__c(ir, 1);
  const tc_stmt *find_max = tc_s_for(
      ir, i1, tc__c(ir, 1), tc__c(ir, len - 1), TC_FOR_SERIAL,
      tc_s_store(ir, acc, a0,
                 tc_e_max(ir, tc_e_load(ir, acc, a0, 1, 4), tc_e_load(ir, in, tc_e_add(ir, b, tc__v(ir, i1)), 1, 4)),
                 4));
  const tc_expr *ex = tc_e_exp(ir, tc_e_sub(ir, tc_e_load(ir, in, tc_e_add(ir, b, tc__v(ir, i2)), 1, 4),
                                            tc__v(ir, mx)));
  const tc_stmt *exps_body[2] = {
      tc_s_store(ir, o, tc_e_add(ir, b, tc__v(ir, i2)), ex, 4),
      tc_s_store(ir, acc, a1,
                 tc_e_add(ir, tc_e_load(ir, acc, a1, 1, 4), tc_e_load(ir, o, tc_e_add(ir, b, tc__v(ir, i2)), 1, 4)),
                 4)};
  const tc_stmt *exps = tc_s_for(ir, i2, tc__c(ir, 0), tc__c(ir, len), TC_FOR_SERIAL, tc_s_seq(ir, 2, exps_body));
  const tc_stmt *scale = tc_s_for(
      ir, i3, tc__c(ir, 0), tc__c(ir, len), TC_FOR_VECTORIZED,
      tc_s_store(ir, o, tc_e_add(ir, b, tc__v(ir, i3)),
                 tc_e_mul(ir, tc_e_load(ir, o, tc_e_add(ir, b, tc__v(ir, i3)), 1, 4), tc__v(ir, inv)), 4));
  const tc_stmt *tail[3] = {tc_s_store(ir, acc, a1, tc_e_float(ir, 0.0), 4), exps,
                            tc_s_let(ir, inv, tc_e_div(ir, tc_e_float(ir, 1.0), tc_e_load(ir, acc, a1, 1, 4)),
                                     scale)};
  const tc_stmt *items[3] = {tc_s_store(ir, acc, a0, tc_e_load(ir, in, b, 1, 4), 4), find_max,
                             tc_s_let(ir, mx, tc_e_load(ir, acc, a0, 1, 4), tc_s_seq(ir, 3, tail))};
  const tc_stmt *body = tc_s_let(ir, base, tc_e_mul(ir, tc__v(ir, row), tc__c(ir, len)),
                                 tc_s_allocate(ir, acc, 2, TC_SCOPE_LOCAL, tc_s_seq(ir, 3, items)));
  *out = tc__parallel(ir, row, rows, body);
  return ir->err;
}

const tc__op tc__op_softmax = {TC_KERNEL_SOFTMAX, space, fallback, NULL, lower, NULL};
