/* Max, average and global-average pooling on NCHW[cb]c tensors, vectorised over VL channel lanes. Taps
 * outside the input are skipped by a branch (max ignores them; avg divides by the taps counted under
 * count_include_pad, like PyTorch without ceil_mode). Pools are cheap next to the convs around them, so
 * their spaces hold one point. */
#include <math.h>
#include <string.h>

#include "ops_int.h"

static int vec_lanes(const tc_workload *wl, const tc_target *t) {
  return tc__pow2_div(t->simd_lanes, wl->in_cb, wl->out_cb, 0);
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

static th_status lower_pool(const tc_workload *wl, const tc_target *t, const tc_space *s,
                            const tc_config *c, tc_ir *ir, const tc_stmt **out) {
  (void)s;
  (void)c;
  int vl = vec_lanes(wl, t), ncv = wl->c / vl, is_max = wl->kernel == TC_KERNEL_MAXPOOL;
  tc_type vt = tc_type_f32(vl);
  const tc_var *in = tc_var_buffer(ir, "in", tc_type_f32(1), TC_ARG_SIMPLE_IN);
  const tc_var *o = tc_var_buffer(ir, "out", tc_type_f32(1), TC_ARG_SIMPLE_OUT);
  tc_var *acc = tc_var_buffer(ir, "acc", vt, -1);
  tc_var *task = tc_var_new(ir, "task", tc_type_int()), *n = tc_var_new(ir, "n", tc_type_int());
  tc_var *cv = tc_var_new(ir, "cv", tc_type_int()), *oh = tc_var_new(ir, "oh", tc_type_int());
  tc_var *ow = tc_var_new(ir, "ow", tc_type_int()), *kh = tc_var_new(ir, "kh", tc_type_int());
  tc_var *kw = tc_var_new(ir, "kw", tc_type_int());
  tc_var *iy0 = tc_var_new(ir, "iy0", tc_type_int()), *ix0 = tc_var_new(ir, "ix0", tc_type_int());
  const tc_expr *c0 = tc_e_mul(ir, tc__v(ir, cv), tc__c(ir, vl));
  const tc_expr *iy = tc_e_add(ir, tc__v(ir, iy0), tc__v(ir, kh));
  const tc_expr *ix = tc_e_add(ir, tc__v(ir, ix0), tc__v(ir, kw));
  const tc_expr *x = tc_e_load(ir, in, tc__idx_c(ir, tc__v(ir, n), c0, iy, ix, wl->c, wl->h, wl->w, wl->in_cb),
                               vl, 4);
  const tc_expr *cur = tc_e_load(ir, acc, tc__c(ir, 0), 1, 64);
  const tc_stmt *upd = tc_s_store(ir, acc, tc__c(ir, 0), is_max ? tc_e_max(ir, cur, x) : tc_e_add(ir, cur, x), 64);
  upd = tc_s_if(ir, tc__and(ir, tc__in_range(ir, iy, 0, wl->h), tc__in_range(ir, ix, 0, wl->w)), upd, NULL);
  const tc_stmt *taps = tc_s_for(ir, kh, tc__c(ir, 0), tc__c(ir, wl->kh), TC_FOR_SERIAL,
                                 tc_s_for(ir, kw, tc__c(ir, 0), tc__c(ir, wl->kw), TC_FOR_SERIAL, upd));
  const tc_stmt *init = tc_s_store(
      ir, acc, tc__c(ir, 0), tc_e_broadcast(ir, tc_e_float(ir, is_max ? -INFINITY : 0.0), vl), 64);
  const tc_expr *res = tc_e_load(ir, acc, tc__c(ir, 0), 1, 64);
  if (!is_max) {
    /* Divisor: taps inside the (padded, if count_include_pad) input. */
    int lo_y = wl->count_include_pad ? -wl->pt : 0, hi_y = wl->count_include_pad ? wl->h + wl->pb : wl->h;
    int lo_x = wl->count_include_pad ? -wl->pl : 0, hi_x = wl->count_include_pad ? wl->w + wl->pr : wl->w;
    const tc_expr *y0 = tc__v(ir, iy0), *x0 = tc__v(ir, ix0);
    const tc_expr *ch = tc_e_sub(ir, tc_e_min(ir, tc_e_add(ir, y0, tc__c(ir, wl->kh)), tc__c(ir, hi_y)),
                                 tc_e_max(ir, y0, tc__c(ir, lo_y)));
    const tc_expr *cw = tc_e_sub(ir, tc_e_min(ir, tc_e_add(ir, x0, tc__c(ir, wl->kw)), tc__c(ir, hi_x)),
                                 tc_e_max(ir, x0, tc__c(ir, lo_x)));
    const tc_expr *cnt = tc_e_max(ir, tc_e_mul(ir, ch, cw), tc__c(ir, 1));
    res = tc_e_div(ir, res, tc_e_broadcast(ir, tc_e_cast(ir, tc_type_f32(1), cnt), vl));
  }
  res = tc__epilogue(ir, wl, res, NULL, NULL, NULL, NULL);
  const tc_expr *oidx = tc__idx_c(ir, tc__v(ir, n), c0, tc__v(ir, oh), tc__v(ir, ow), wl->oc, wl->oh, wl->ow,
                                  wl->out_cb);
  const tc_stmt *pix[3] = {init, taps, tc_s_store(ir, o, oidx, res, 4)};
  const tc_stmt *pixel = tc_s_let(
      ir, ix0, tc_e_sub(ir, tc_e_mul(ir, tc__v(ir, ow), tc__c(ir, wl->sw)), tc__c(ir, wl->pl)),
      tc_s_seq(ir, 3, pix));
  const tc_stmt *row = tc_s_let(
      ir, iy0, tc_e_sub(ir, tc_e_mul(ir, tc__v(ir, oh), tc__c(ir, wl->sh)), tc__c(ir, wl->pt)),
      tc_s_for(ir, ow, tc__c(ir, 0), tc__c(ir, wl->ow), TC_FOR_SERIAL, pixel));
  const tc_expr *tk = tc__v(ir, task);
  const tc_stmt *body = tc_s_let(
      ir, n, tc_e_div(ir, tk, tc__c(ir, (int64_t)ncv * wl->oh)),
      tc_s_let(ir, cv, tc_e_mod(ir, tc_e_div(ir, tk, tc__c(ir, wl->oh)), tc__c(ir, ncv)),
               tc_s_let(ir, oh, tc_e_mod(ir, tk, tc__c(ir, wl->oh)), row)));
  /* The accumulator is per thread: it is allocated inside the parallel body. */
  *out = tc__parallel(ir, task, (int64_t)wl->n * ncv * wl->oh, tc_s_allocate(ir, acc, 1, TC_SCOPE_LOCAL, body));
  return ir->err;
}

static th_status lower_global(const tc_workload *wl, const tc_target *t, const tc_space *s,
                              const tc_config *c, tc_ir *ir, const tc_stmt **out) {
  (void)s;
  (void)c;
  int vl = vec_lanes(wl, t), ncv = wl->c / vl;
  tc_type vt = tc_type_f32(vl);
  const tc_var *in = tc_var_buffer(ir, "in", tc_type_f32(1), TC_ARG_SIMPLE_IN);
  const tc_var *o = tc_var_buffer(ir, "out", tc_type_f32(1), TC_ARG_SIMPLE_OUT);
  tc_var *acc = tc_var_buffer(ir, "acc", vt, -1);
  tc_var *task = tc_var_new(ir, "task", tc_type_int()), *n = tc_var_new(ir, "n", tc_type_int());
  tc_var *cv = tc_var_new(ir, "cv", tc_type_int()), *y = tc_var_new(ir, "y", tc_type_int());
  tc_var *x = tc_var_new(ir, "x", tc_type_int());
  const tc_expr *c0 = tc_e_mul(ir, tc__v(ir, cv), tc__c(ir, vl));
  const tc_expr *ld = tc_e_load(
      ir, in, tc__idx_c(ir, tc__v(ir, n), c0, tc__v(ir, y), tc__v(ir, x), wl->c, wl->h, wl->w, wl->in_cb), vl, 4);
  const tc_stmt *sum = tc_s_for(
      ir, y, tc__c(ir, 0), tc__c(ir, wl->h), TC_FOR_SERIAL,
      tc_s_for(ir, x, tc__c(ir, 0), tc__c(ir, wl->w), TC_FOR_SERIAL,
               tc_s_store(ir, acc, tc__c(ir, 0), tc_e_add(ir, tc_e_load(ir, acc, tc__c(ir, 0), 1, 64), ld), 64)));
  const tc_expr *mean = tc_e_mul(ir, tc_e_load(ir, acc, tc__c(ir, 0), 1, 64),
                                 tc_e_broadcast(ir, tc_e_float(ir, 1.0 / ((double)wl->h * wl->w)), vl));
  mean = tc__epilogue(ir, wl, mean, NULL, NULL, NULL, NULL);
  const tc_stmt *st = tc_s_store(
      ir, o, tc__idx_c(ir, tc__v(ir, n), c0, tc__c(ir, 0), tc__c(ir, 0), wl->oc, 1, 1, wl->out_cb), mean, 4);
  const tc_stmt *items[3] = {
      tc_s_store(ir, acc, tc__c(ir, 0), tc_e_broadcast(ir, tc_e_float(ir, 0.0), vl), 64), sum, st};
  const tc_expr *tk = tc__v(ir, task);
  const tc_stmt *body =
      tc_s_let(ir, n, tc_e_div(ir, tk, tc__c(ir, ncv)),
               tc_s_let(ir, cv, tc_e_mod(ir, tk, tc__c(ir, ncv)),
                        tc_s_allocate(ir, acc, 1, TC_SCOPE_LOCAL, tc_s_seq(ir, 3, items))));
  *out = tc__parallel(ir, task, (int64_t)wl->n * ncv, body);
  return ir->err;
}

const tc__op tc__op_maxpool = {TC_KERNEL_MAXPOOL, space, fallback, NULL, lower_pool, NULL};
const tc__op tc__op_avgpool = {TC_KERNEL_AVGPOOL, space, fallback, NULL, lower_pool, NULL};
const tc__op tc__op_global_avgpool = {TC_KERNEL_GLOBAL_AVGPOOL, space, fallback, NULL, lower_global, NULL};
