/* Channel copy between NCHW[cb]c tensors, the one kernel behind concat (copy an input into channels
 * [c_offset, c_offset + c) of the output) and layout transforms (c_offset 0, different blocks). Vectors
 * of VL channels are contiguous on both sides when VL divides both blocks and the offset, so each pixel
 * moves as one vector load/store; VL = 1 (e.g. from plain NCHW) copies scalars. */
#include "ops_int.h"

/* Lanes of one copy: whole vectors of real channels on both sides, so VL divides both blocks, the offset
 * and the channel count (a padded block's last vector would carry padding). Concat's and layout's "vec". */
int tc__copy_lanes(const tc_workload *wl, const tc_target *t) {
  int off = wl->kernel == TC_KERNEL_CONCAT ? wl->c_offset : 0;
  return tc__pow2_div(tc__pow2_div(t->simd_lanes, wl->in_cb, wl->out_cb, off), wl->c, 0, 0);
}

static th_status space(const tc_workload *wl, const tc_target *t, tc_space *s) {
  int vl = tc__copy_lanes(wl, t);
  return tc_space_add(s, "vec", TC_KNOB_ANNOTATE, 1, 1, &vl);
}

static th_status fallback(const tc_workload *wl, const tc_target *t, const tc_space *s, tc_config *c) {
  (void)wl;
  (void)t;
  (void)s;
  c->idx[0] = 0;
  return TH_OK;
}

/* Zero vectors into channels [oc, stored oc) of the output's last block (a padded channel block), per
 * (n, y, x): written by the copy of the output's last channels, so the padding holds zeros. */
static const tc_stmt *zero_padding(tc_ir *ir, const tc_workload *wl, const tc_var *o, const tc_var *n,
                                   const tc_var *y) {
  int pad = tc_channels_stored(wl->oc, wl->out_cb) - wl->oc;
  int zl = tc__pow2_div(wl->out_cb, wl->oc, pad, 0);
  tc_var *pv = tc_var_new(ir, "pv", tc_type_int()), *x = tc_var_new(ir, "zx", tc_type_int());
  const tc_expr *ch = tc_e_add(ir, tc__c(ir, wl->oc), tc_e_mul(ir, tc__v(ir, pv), tc__c(ir, zl)));
  const tc_expr *dst = tc__idx_c(ir, tc__v(ir, n), ch, tc__v(ir, y), tc__v(ir, x), wl->oc, wl->h, wl->w,
                                 wl->out_cb);
  const tc_expr *zero = zl > 1 ? tc_e_broadcast(ir, tc_e_float(ir, 0.0), zl) : tc_e_float(ir, 0.0);
  return tc_s_for(ir, x, tc__c(ir, 0), tc__c(ir, wl->w), TC_FOR_SERIAL,
                  tc_s_for(ir, pv, tc__c(ir, 0), tc__c(ir, pad / zl), TC_FOR_SERIAL,
                           tc_s_store(ir, o, dst, zero, 4)));
}

/* Plain NCHW -> NCHW[cb]c (a layout transform, cb > 1): a task per (n, block, row) writes the block's
 * row contiguously, lane by lane from cb input rows, zeros in a padded block's padding lanes. */
static th_status lower_to_blocked(const tc_workload *wl, tc_ir *ir, const tc_stmt **out) {
  int cb = wl->out_cb, nblk = tc_channels_stored(wl->c, cb) / cb;
  const tc_var *in = tc_var_buffer(ir, "in", tc_type_f32(1), TC_ARG_SIMPLE_IN);
  const tc_var *o = tc_var_buffer(ir, "out", tc_type_f32(1), TC_ARG_SIMPLE_OUT);
  tc_var *task = tc_var_new(ir, "task", tc_type_int()), *n = tc_var_new(ir, "n", tc_type_int());
  tc_var *blk = tc_var_new(ir, "blk", tc_type_int()), *y = tc_var_new(ir, "y", tc_type_int());
  tc_var *x = tc_var_new(ir, "x", tc_type_int()), *lane = tc_var_new(ir, "lane", tc_type_int());
  const tc_expr *ch = tc_e_add(ir, tc_e_mul(ir, tc__v(ir, blk), tc__c(ir, cb)), tc__v(ir, lane));
  const tc_expr *src = tc__idx(ir, tc__v(ir, n), tc_e_min(ir, ch, tc__c(ir, wl->c - 1)), tc__v(ir, y),
                               tc__v(ir, x), tc__c(ir, 0), wl->c, wl->h, wl->w, 1);
  const tc_expr *dst = tc__idx(ir, tc__v(ir, n), tc__v(ir, blk), tc__v(ir, y), tc__v(ir, x), tc__v(ir, lane),
                               nblk, wl->h, wl->w, cb);
  const tc_expr *v = tc_e_load(ir, in, src, 1, 4);
  if (nblk * cb > wl->c) v = tc_e_select(ir, tc_e_bin(ir, TC_EXPR_LT, ch, tc__c(ir, wl->c)), v, tc_e_float(ir, 0.0));
  const tc_stmt *row = tc_s_for(
      ir, x, tc__c(ir, 0), tc__c(ir, wl->w), TC_FOR_SERIAL,
      tc_s_for(ir, lane, tc__c(ir, 0), tc__c(ir, cb), TC_FOR_UNROLLED, tc_s_store(ir, o, dst, v, 4)));
  const tc_expr *tk = tc__v(ir, task);
  const tc_stmt *body = tc_s_let(
      ir, n, tc_e_div(ir, tk, tc__c(ir, (int64_t)nblk * wl->h)),
      tc_s_let(ir, blk, tc_e_mod(ir, tc_e_div(ir, tk, tc__c(ir, wl->h)), tc__c(ir, nblk)),
               tc_s_let(ir, y, tc_e_mod(ir, tk, tc__c(ir, wl->h)), row)));
  *out = tc__parallel(ir, task, (int64_t)wl->n * nblk * wl->h, body);
  return ir->err;
}

th_status tc__lower_copy(const tc_workload *wl, const tc_target *t, const tc_space *s, const tc_config *c,
                         tc_ir *ir, const tc_stmt **out) {
  (void)s;
  (void)c;
  if (wl->kernel == TC_KERNEL_LAYOUT && wl->in_cb == 1 && wl->out_cb > 1) return lower_to_blocked(wl, ir, out);
  int off = wl->kernel == TC_KERNEL_CONCAT ? wl->c_offset : 0;
  int vl = tc__copy_lanes(wl, t);
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
  if (off + wl->c == wl->oc && tc_channels_stored(wl->oc, wl->out_cb) > wl->oc) {
    /* the copy of the last vector of channels (one per (n, y)) also zeroes the padding */
    const tc_stmt *both[2] = {copy, tc_s_if(ir, tc_e_bin(ir, TC_EXPR_EQ, tc__v(ir, cv), tc__c(ir, ncv - 1)),
                                            zero_padding(ir, wl, o, n, y), NULL)};
    copy = tc_s_seq(ir, 2, both);
  }
  const tc_expr *tk = tc__v(ir, task);
  const tc_stmt *body = tc_s_let(
      ir, n, tc_e_div(ir, tk, tc__c(ir, (int64_t)ncv * wl->h)),
      tc_s_let(ir, cv, tc_e_mod(ir, tc_e_div(ir, tk, tc__c(ir, wl->h)), tc__c(ir, ncv)),
               tc_s_let(ir, y, tc_e_mod(ir, tk, tc__c(ir, wl->h)), copy)));
  *out = tc__parallel(ir, task, (int64_t)wl->n * ncv * wl->h, body);
  return ir->err;
}

const tc__op tc__op_concat = {TC_KERNEL_CONCAT, space, fallback, NULL, tc__lower_copy, NULL};
