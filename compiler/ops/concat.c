/* Channel copy between NCHW[cb]c tensors, the one kernel behind concat (copy an input into channels
 * [c_offset, c_offset + c) of the output) and layout transforms (c_offset 0, different blocks). Vectors
 * of VL channels are contiguous on both sides when VL divides both blocks and the offset, so each pixel
 * moves as one vector load/store; VL = 1 (e.g. from plain NCHW) copies scalars. */
#include "ops_int.h"

static int vec_lanes(const tc_workload *wl, const tc_target *t) {
  return tc__pow2_div(t->simd_lanes, wl->in_cb, wl->out_cb, wl->c_offset);
}

static th_status space(const tc_workload *wl, const tc_target *t, tc_space *s) {
  int vl = vec_lanes(wl, t);
  return tc_space_add(s, "vec", TC_KNOB_ANNOTATE, 1, 1, &vl);
}

static th_status fallback(const tc_workload *wl, const tc_target *t, const tc_space *s, tc_config *c) {
  (void)wl;
  (void)t;
  (void)s;
  c->idx[0] = 0;
  return TH_OK;
}

th_status tc__lower_copy(const tc_workload *wl, const tc_target *t, const tc_space *s, const tc_config *c,
                         tc_ir *ir, const tc_stmt **out);

th_status tc__lower_copy(const tc_workload *wl, const tc_target *t, const tc_space *s, const tc_config *c,
                         tc_ir *ir, const tc_stmt **out) {
  (void)s;
  (void)c;
  int off = wl->kernel == TC_KERNEL_CONCAT ? wl->c_offset : 0;
  int vl = tc__pow2_div(t->simd_lanes, wl->in_cb, wl->out_cb, off);
  int ncv = wl->c / vl;
  const tc_var *in = tc_var_buffer(ir, "in", tc_type_f32(1), TC_ARG_SIMPLE_IN);
  const tc_var *o = tc_var_buffer(ir, "out", tc_type_f32(1), TC_ARG_SIMPLE_OUT);
  tc_var *task = tc_var_new(ir, "task", tc_type_int()), *n = tc_var_new(ir, "n", tc_type_int());
  tc_var *cv = tc_var_new(ir, "cv", tc_type_int()), *y = tc_var_new(ir, "y", tc_type_int());
  tc_var *x = tc_var_new(ir, "x", tc_type_int());
  const tc_expr *c0 = tc_e_mul(ir, tc__v(ir, cv), tc__c(ir, vl));
  const tc_expr *co = tc_e_add(ir, c0, tc__c(ir, off));
  const tc_expr *src = tc__idx_c(ir, tc__v(ir, n), c0, tc__v(ir, y), tc__v(ir, x), wl->c, wl->h, wl->w,
                                 wl->in_cb);
  const tc_expr *dst = tc__idx_c(ir, tc__v(ir, n), co, tc__v(ir, y), tc__v(ir, x), wl->oc, wl->h, wl->w,
                                 wl->out_cb);
  const tc_stmt *copy = tc_s_for(ir, x, tc__c(ir, 0), tc__c(ir, wl->w), TC_FOR_SERIAL,
                                 tc_s_store(ir, o, dst, tc_e_load(ir, in, src, vl, 4), 4));
  const tc_expr *tk = tc__v(ir, task);
  const tc_stmt *body = tc_s_let(
      ir, n, tc_e_div(ir, tk, tc__c(ir, (int64_t)ncv * wl->h)),
      tc_s_let(ir, cv, tc_e_mod(ir, tc_e_div(ir, tk, tc__c(ir, wl->h)), tc__c(ir, ncv)),
               tc_s_let(ir, y, tc_e_mod(ir, tk, tc__c(ir, wl->h)), copy)));
  *out = tc__parallel(ir, task, (int64_t)wl->n * ncv * wl->h, body);
  return ir->err;
}

const tc__op tc__op_concat = {TC_KERNEL_CONCAT, space, fallback, NULL, tc__lower_copy, NULL};
