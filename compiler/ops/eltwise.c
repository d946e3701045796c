/* Element-wise add of two same-layout tensors with an optional relu/clip, over the flat n*c*h*w floats:
 * blocks of `block` floats run in parallel, each as a vector loop plus a scalar tail. The block size is
 * the one knob (how much work one thread grabs at a time). */
#include "ops_int.h"

static const int blocks[] = {1024, 4096, 16384};

static th_status space(const tc_workload *wl, const tc_target *t, tc_space *s) {
  (void)wl;
  (void)t;
  return tc_space_add(s, "block", TC_KNOB_SPLIT, 1, 3, blocks);
}

static th_status fallback(const tc_workload *wl, const tc_target *t, const tc_space *s, tc_config *c) {
  (void)wl;
  (void)t;
  (void)s;
  c->idx[0] = 1;
  return TH_OK;
}

static th_status lower(const tc_workload *wl, const tc_target *t, const tc_space *s, const tc_config *c,
                       tc_ir *ir, const tc_stmt **out) {
  int vl = t->simd_lanes;
  int64_t total = (int64_t)wl->n * wl->c * wl->h * wl->w;
  int64_t blk = tc__knob(s, c, "block")[0];
  int64_t nb = (total + blk - 1) / blk;
  const tc_var *a = tc_var_buffer(ir, "a", tc_type_f32(1), TC_ARG_ELT_A);
  const tc_var *b = tc_var_buffer(ir, "b", tc_type_f32(1), TC_ARG_ELT_B);
  const tc_var *o = tc_var_buffer(ir, "out", tc_type_f32(1), TC_ARG_ELT_OUT);
  tc_var *bi = tc_var_new(ir, "blk", tc_type_int()), *st = tc_var_new(ir, "start", tc_type_int());
  tc_var *len = tc_var_new(ir, "len", tc_type_int()), *i = tc_var_new(ir, "i", tc_type_int());
  tc_var *j = tc_var_new(ir, "j", tc_type_int());
  const tc_expr *vi = tc_e_add(ir, tc__v(ir, st), tc_e_mul(ir, tc__v(ir, i), tc__c(ir, vl)));
  const tc_stmt *vloop = tc_s_for(
      ir, i, tc__c(ir, 0), tc_e_div(ir, tc__v(ir, len), tc__c(ir, vl)), TC_FOR_SERIAL,
      tc_s_store(ir, o, vi,
                 tc__epilogue(ir, wl, tc_e_add(ir, tc_e_load(ir, a, vi, vl, 4), tc_e_load(ir, b, vi, vl, 4)),
                              NULL, NULL, NULL, NULL),
                 4));
  const tc_expr *tail0 = tc_e_mul(ir, tc_e_div(ir, tc__v(ir, len), tc__c(ir, vl)), tc__c(ir, vl));
  const tc_expr *si = tc_e_add(ir, tc__v(ir, st), tc__v(ir, j));
  const tc_stmt *sloop = tc_s_for(
      ir, j, tail0, tc_e_sub(ir, tc__v(ir, len), tail0), TC_FOR_SERIAL,
      tc_s_store(ir, o, si,
                 tc__epilogue(ir, wl, tc_e_add(ir, tc_e_load(ir, a, si, 1, 4), tc_e_load(ir, b, si, 1, 4)), NULL,
                              NULL, NULL, NULL),
                 4));
  const tc_stmt *items[2] = {vloop, sloop};
  const tc_expr *start = tc_e_mul(ir, tc__v(ir, bi), tc__c(ir, blk));
  const tc_stmt *body = tc_s_let(
      ir, st, start,
      tc_s_let(ir, len, tc_e_min(ir, tc__c(ir, blk), tc_e_sub(ir, tc__c(ir, total), tc__v(ir, st))),
               tc_s_seq(ir, 2, items)));
  *out = tc__parallel(ir, bi, nb, body);
  return ir->err;
}

const tc__op tc__op_eltwise = {TC_KERNEL_ELTWISE, space, fallback, NULL, lower, NULL};
