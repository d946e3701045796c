/* Depthwise conv2d (groups = channels) on NCHW[cb]c tensors: each output vector of VL channels is
 * an elementwise FMA of input vectors and per-channel weight vectors over the window. A tile of RW
 * output columns keeps RW accumulators and reuses each weight vector RW times; weights are packed
 * [c/VL][kh][kw][VL]. Borders use the same fast/safe width tiling as conv2d. A dilated one
 * (LR-ASPP's and DeepLab's atrous depthwise convs) reads tap (kh, kw) dil_h rows / dil_w columns
 * apart, its border tiles sized by the window's span. */
#include <string.h>

#include "ops_int.h"
#include "th_rt.h"

static int vec_lanes(const tc_workload *wl, const tc_target *t) {
  return tc__pow2_div(t->simd_lanes, wl->in_cb, wl->out_cb, 0);
}

static th_status space(const tc_workload *wl, const tc_target *t, tc_space *s) {
  (void)t;
  int vals[TC_MAX_KNOB_VALUES * 2], k = 0;
  for (int rw = 1; rw <= wl->ow && rw <= 16; rw++, k++) {
    vals[2 * k] = (wl->ow + rw - 1) / rw;
    vals[2 * k + 1] = rw;
  }
  th_status rc = tc_space_add(s, "tile_ow", TC_KNOB_SPLIT, 2, k, vals);
  int unroll[2] = {0, 1};
  if (rc == TH_OK) rc = tc_space_add(s, "unroll_kw", TC_KNOB_ANNOTATE, 1, 2, unroll);
  return rc;
}

static th_status valid(const tc_workload *wl, const tc_target *t, const tc_space *s, const tc_config *c) {
  (void)wl;
  const int *ow = tc__knob(s, c, "tile_ow");
  if (!ow || !tc__knob(s, c, "unroll_kw")) return TH_ERR_INVALID;
  return ow[1] + 2 <= t->nregs ? TH_OK : TH_ERR_INVALID;
}

static th_status fallback(const tc_workload *wl, const tc_target *t, const tc_space *s, tc_config *c) {
  int kow = tc_space_knob(s, "tile_ow"), kun = tc_space_knob(s, "unroll_kw");
  double best = -1;
  for (int j = 0; j < s->knobs[kow].nvalues; j++) {
    int rw = s->knobs[kow].values[j][1];
    if (rw + 4 > t->nregs) continue;
    int tiles = (wl->ow + rw - 1) / rw;
    double score = (double)wl->ow / (tiles * (rw > 5 ? rw : 5)) + 0.001 * rw;
    if (score > best) {
      best = score;
      c->idx[kow] = j;
    }
  }
  c->idx[kun] = wl->kw <= 5 ? 1 : 0;
  return best < 0 ? TH_ERR_INTERNAL : TH_OK;
}

typedef struct dw_ctx {
  const tc_workload *wl;
  int vl, unroll_kw;
  const tc_var *in, *wt, *bias, *res, *out;
  const tc_expr *n, *cv, *oh;
} dw_ctx;

static const tc_stmt *dw_tile(tc_ir *ir, void *vctx, const tc_expr *ow0, int rw, int safe) {
  dw_ctx *x = vctx;
  const tc_workload *wl = x->wl;
  int vl = x->vl;
  tc_type vt = tc_type_f32(vl);
  tc_var *acc = tc_var_buffer(ir, "acc", vt, -1);
  tc_var *r = tc_var_new(ir, "r", tc_type_int());
  const tc_stmt *init = tc_s_for(ir, r, tc__c(ir, 0), tc__c(ir, rw), TC_FOR_UNROLLED,
                                 tc_s_store(ir, acc, tc__v(ir, r),
                                            tc_e_broadcast(ir, tc_e_float(ir, 0.0), vl), 64));
  tc_var *kh = tc_var_new(ir, "kh", tc_type_int()), *kw = tc_var_new(ir, "kw", tc_type_int());
  tc_var *iy = tc_var_new(ir, "iy", tc_type_int()), *wv = tc_var_new(ir, "wv", vt);
  tc_var *r2 = tc_var_new(ir, "r", tc_type_int());
  const tc_expr *c0 = tc_e_mul(ir, x->cv, tc__c(ir, vl));
  /* the taps' input offsets: kh * dil_h rows, kw * dil_w columns */
  const tc_expr *khd = tc__v(ir, kh), *kwd = tc__v(ir, kw);
  if (tc_workload_dil(wl, 0) > 1) khd = tc_e_mul(ir, khd, tc__c(ir, tc_workload_dil(wl, 0)));
  if (tc_workload_dil(wl, 1) > 1) kwd = tc_e_mul(ir, kwd, tc__c(ir, tc_workload_dil(wl, 1)));
  const tc_expr *ix =
      tc_e_add(ir, tc_e_mul(ir, tc_e_add(ir, ow0, tc__v(ir, r2)), tc__c(ir, wl->sw)),
               tc_e_sub(ir, kwd, tc__c(ir, wl->pl)));
  const tc_expr *xv;
  if (!safe) {
    xv = tc_e_load(ir, x->in, tc__idx_c(ir, x->n, c0, tc__v(ir, iy), ix, wl->c, wl->h, wl->w, wl->in_cb),
                   vl, 4);
  } else {
    const tc_expr *cx = tc_e_max(ir, tc_e_min(ir, ix, tc__c(ir, wl->w - 1)), tc__c(ir, 0));
    xv = tc_e_select(
        ir, tc__in_range(ir, ix, 0, wl->w),
        tc_e_load(ir, x->in, tc__idx_c(ir, x->n, c0, tc__v(ir, iy), cx, wl->c, wl->h, wl->w, wl->in_cb),
                  vl, 4),
        tc_e_broadcast(ir, tc_e_float(ir, 0.0), vl));
  }
  const tc_stmt *fma = tc_s_for(
      ir, r2, tc__c(ir, 0), tc__c(ir, rw), TC_FOR_UNROLLED,
      tc_s_store(ir, acc, tc__v(ir, r2),
                 tc_e_fma(ir, xv, tc_e_var(ir, wv), tc_e_load(ir, acc, tc__v(ir, r2), 1, 64)), 64));
  const tc_expr *widx = tc_e_mul(
      ir,
      tc_e_add(ir, tc_e_mul(ir, tc_e_add(ir, tc_e_mul(ir, x->cv, tc__c(ir, wl->kh)), tc__v(ir, kh)),
                            tc__c(ir, wl->kw)),
               tc__v(ir, kw)),
      tc__c(ir, vl));
  const tc_stmt *kws = tc_s_for(ir, kw, tc__c(ir, 0), tc__c(ir, wl->kw),
                                (x->unroll_kw || (safe && ow0->kind == TC_EXPR_INT)) ? TC_FOR_UNROLLED : TC_FOR_SERIAL,
                                tc_s_let(ir, wv, tc_e_load(ir, x->wt, widx, vl, 4), fma));
  if (wl->pt > 0 || (wl->oh - 1) * wl->sh - wl->pt + tc_workload_span(wl, 0) > wl->h)
    kws = tc_s_if(ir, tc__in_range(ir, tc__v(ir, iy), 0, wl->h), kws, NULL);
  const tc_expr *iyv =
      tc_e_add(ir, tc_e_mul(ir, x->oh, tc__c(ir, wl->sh)), tc_e_sub(ir, khd, tc__c(ir, wl->pt)));
  const tc_stmt *red = tc_s_for(ir, kh, tc__c(ir, 0), tc__c(ir, wl->kh), TC_FOR_SERIAL,
                                tc_s_let(ir, iy, iyv, kws));
  tc_var *r4 = tc_var_new(ir, "r", tc_type_int());
  const tc_expr *oidx = tc__idx_c(ir, x->n, c0, x->oh, tc_e_add(ir, ow0, tc__v(ir, r4)), wl->oc, wl->oh,
                                  wl->ow, wl->out_cb);
  const tc_expr *val =
      tc__epilogue(ir, wl, tc_e_load(ir, acc, tc__v(ir, r4), 1, 64), x->bias, c0, x->res, oidx);
  const tc_stmt *epi = tc_s_for(ir, r4, tc__c(ir, 0), tc__c(ir, rw), TC_FOR_UNROLLED,
                                tc_s_store(ir, x->out, oidx, val, 4));
  const tc_stmt *all[3] = {init, red, epi};
  return tc_s_allocate(ir, acc, rw, TC_SCOPE_LOCAL, tc_s_seq(ir, 3, all));
}

static th_status lower(const tc_workload *wl, const tc_target *t, const tc_space *s, const tc_config *c,
                       tc_ir *ir, const tc_stmt **out) {
  dw_ctx x;
  memset(&x, 0, sizeof x);
  x.wl = wl;
  x.vl = vec_lanes(wl, t);
  int rw = tc__knob(s, c, "tile_ow")[1];
  x.unroll_kw = tc__knob(s, c, "unroll_kw")[0];
  x.in = tc_var_buffer(ir, "in", tc_type_f32(1), TC_ARG_IN);
  x.wt = tc_var_buffer(ir, "w", tc_type_f32(1), TC_ARG_WEIGHTS);
  x.bias = tc_var_buffer(ir, "bias", tc_type_f32(1), TC_ARG_BIAS);
  x.res = tc_var_buffer(ir, "res", tc_type_f32(1), TC_ARG_RESIDUAL);
  x.out = tc_var_buffer(ir, "out", tc_type_f32(1), TC_ARG_OUT);
  int ncv = wl->c / x.vl;
  tc_var *task = tc_var_new(ir, "task", tc_type_int());
  tc_var *nv = tc_var_new(ir, "n", tc_type_int()), *cv = tc_var_new(ir, "cv", tc_type_int());
  tc_var *oh = tc_var_new(ir, "oh", tc_type_int());
  x.n = tc__v(ir, nv);
  x.cv = tc__v(ir, cv);
  x.oh = tc__v(ir, oh);
  const tc_stmt *row =
      tc__ow_tiles(ir, wl->ow, rw, wl->sw, wl->pl, tc_workload_span(wl, 1), wl->w, dw_tile, &x);
  const tc_expr *tk = tc__v(ir, task);
  const tc_stmt *body = tc_s_let(
      ir, nv, tc_e_div(ir, tk, tc__c(ir, (int64_t)ncv * wl->oh)),
      tc_s_let(ir, cv, tc_e_mod(ir, tc_e_div(ir, tk, tc__c(ir, wl->oh)), tc__c(ir, ncv)),
               tc_s_let(ir, oh, tc_e_mod(ir, tk, tc__c(ir, wl->oh)), row)));
  *out = tc__parallel(ir, task, (int64_t)wl->n * ncv * wl->oh, body);
  return ir->err;
}

static th_status pack(const tc_workload *wl, const tc_target *t, const tc_space *s, const tc_config *c,
                      int p[TC_PACK_NPARAMS]) {
  (void)s;
  (void)c;
  p[0] = TH_RT_PACK_DEPTHWISE;
  p[1] = wl->c;
  p[2] = wl->kh;
  p[3] = wl->kw;
  p[4] = vec_lanes(wl, t);
  return TH_OK;
}

const tc__op tc__op_depthwise = {TC_KERNEL_DEPTHWISE, space, fallback, valid, lower, pack};
