/* Dense (fully connected) with packed weights: out[n, m] = in[n, k] . W[m, k]^T. W is packed into
 * panels [ceil(m/bn)][k][bn] (bn = MV vectors), so each k step loads MV contiguous weight vectors and
 * FMAs them with NR broadcast input scalars into NR*MV accumulators. Panels x row tiles run in parallel;
 * the last, partial panel stores lane by lane. */
#include <string.h>

#include "ops_int.h"
#include "th_rt.h"

static th_status space(const tc_workload *wl, const tc_target *t, tc_space *s) {
  int vals[TC_MAX_KNOB_VALUES * 2], k = 0;
  int nvec = (wl->oc + t->simd_lanes - 1) / t->simd_lanes;
  for (int mv = 1; mv <= 6 && mv <= nvec; mv++, k++) {
    vals[2 * k] = (nvec + mv - 1) / mv;
    vals[2 * k + 1] = mv;
  }
  th_status rc = tc_space_add(s, "tile_x", TC_KNOB_SPLIT, 2, k, vals);
  k = 0;
  for (int nr = 1; nr <= wl->n && nr <= 8; nr++)
    if (wl->n % nr == 0) {
      vals[2 * k] = wl->n / nr;
      vals[2 * k + 1] = nr;
      k++;
    }
  if (rc == TH_OK) rc = tc_space_add(s, "tile_y", TC_KNOB_SPLIT, 2, k, vals);
  return rc;
}

static th_status valid(const tc_workload *wl, const tc_target *t, const tc_space *s, const tc_config *c) {
  (void)wl;
  const int *x = tc__knob(s, c, "tile_x"), *y = tc__knob(s, c, "tile_y");
  if (!x || !y) return TH_ERR_INVALID;
  return x[1] * y[1] + x[1] + 1 <= t->nregs ? TH_OK : TH_ERR_INVALID;
}

static th_status fallback(const tc_workload *wl, const tc_target *t, const tc_space *s, tc_config *c) {
  (void)wl;
  int kx = tc_space_knob(s, "tile_x"), ky = tc_space_knob(s, "tile_y");
  double best = -1;
  for (int i = 0; i < s->knobs[kx].nvalues; i++)
    for (int j = 0; j < s->knobs[ky].nvalues; j++) {
      int mv = s->knobs[kx].values[i][1], nr = s->knobs[ky].values[j][1];
      if (mv > 4 || mv * nr + mv + 1 > t->nregs) continue;
      double score = mv * nr - 0.1 * mv;
      if (score > best) {
        best = score;
        c->idx[kx] = i;
        c->idx[ky] = j;
      }
    }
  return best < 0 ? TH_ERR_INTERNAL : TH_OK;
}

static th_status lower(const tc_workload *wl, const tc_target *t, const tc_space *s, const tc_config *c,
                       tc_ir *ir, const tc_stmt **out) {
  int vl = t->simd_lanes, mv = tc__knob(s, c, "tile_x")[1], nr = tc__knob(s, c, "tile_y")[1];
  int bn = vl * mv, m = wl->oc, k = wl->c;
  int np = (m + bn - 1) / bn, nrt = wl->n / nr;
  tc_type vt = tc_type_f32(vl);
  const tc_var *in = tc_var_buffer(ir, "in", tc_type_f32(1), TC_ARG_IN);
  const tc_var *wt = tc_var_buffer(ir, "w", tc_type_f32(1), TC_ARG_WEIGHTS);
  const tc_var *bias = tc_var_buffer(ir, "bias", tc_type_f32(1), TC_ARG_BIAS);
  const tc_var *res = tc_var_buffer(ir, "res", tc_type_f32(1), TC_ARG_RESIDUAL);
  const tc_var *o = tc_var_buffer(ir, "out", tc_type_f32(1), TC_ARG_OUT);
  tc_var *acc = tc_var_buffer(ir, "acc", vt, -1), *wreg = tc_var_buffer(ir, "wreg", vt, -1);
  tc_var *task = tc_var_new(ir, "task", tc_type_int()), *p = tc_var_new(ir, "p", tc_type_int());
  tc_var *r0 = tc_var_new(ir, "r0", tc_type_int());
  const tc_expr *pe = tc__v(ir, p), *r0e = tc__v(ir, r0);
  /* init */
  tc_var *i = tc_var_new(ir, "i", tc_type_int());
  const tc_stmt *init = tc_s_for(ir, i, tc__c(ir, 0), tc__c(ir, nr * mv), TC_FOR_UNROLLED,
                                 tc_s_store(ir, acc, tc__v(ir, i),
                                            tc_e_broadcast(ir, tc_e_float(ir, 0.0), vl), 64));
  /* k loop */
  tc_var *kk = tc_var_new(ir, "k", tc_type_int()), *v = tc_var_new(ir, "v", tc_type_int());
  tc_var *r = tc_var_new(ir, "r", tc_type_int()), *v2 = tc_var_new(ir, "v", tc_type_int());
  tc_var *xb = tc_var_new(ir, "xb", vt);
  const tc_expr *wb = tc_e_mul(ir, tc_e_add(ir, tc_e_mul(ir, pe, tc__c(ir, k)), tc__v(ir, kk)),
                               tc__c(ir, bn));
  const tc_stmt *ldw = tc_s_for(
      ir, v, tc__c(ir, 0), tc__c(ir, mv), TC_FOR_UNROLLED,
      tc_s_store(ir, wreg, tc__v(ir, v),
                 tc_e_load(ir, wt, tc_e_add(ir, wb, tc_e_mul(ir, tc__v(ir, v), tc__c(ir, vl))), vl, 4),
                 64));
  const tc_expr *ai = tc_e_add(ir, tc_e_mul(ir, tc__v(ir, r), tc__c(ir, mv)), tc__v(ir, v2));
  const tc_expr *xs = tc_e_load(
      ir, in, tc_e_add(ir, tc_e_mul(ir, tc_e_add(ir, r0e, tc__v(ir, r)), tc__c(ir, k)), tc__v(ir, kk)), 1,
      4);
  const tc_stmt *fmas = tc_s_for(
      ir, r, tc__c(ir, 0), tc__c(ir, nr), TC_FOR_UNROLLED,
      tc_s_let(ir, xb, tc_e_broadcast(ir, xs, vl),
               tc_s_for(ir, v2, tc__c(ir, 0), tc__c(ir, mv), TC_FOR_UNROLLED,
                        tc_s_store(ir, acc, ai,
                                   tc_e_fma(ir, tc_e_var(ir, xb), tc_e_load(ir, wreg, tc__v(ir, v2), 1, 64),
                                            tc_e_load(ir, acc, ai, 1, 64)),
                                   64))));
  const tc_stmt *kb[2] = {ldw, fmas};
  const tc_stmt *kloop = tc_s_allocate(
      ir, wreg, mv, TC_SCOPE_LOCAL,
      tc_s_for(ir, kk, tc__c(ir, 0), tc__c(ir, k), TC_FOR_SERIAL, tc_s_seq(ir, 2, kb)));
  /* vector epilogue */
  tc_var *r3 = tc_var_new(ir, "r", tc_type_int()), *v3 = tc_var_new(ir, "v", tc_type_int());
  const tc_expr *col = tc_e_add(ir, tc_e_mul(ir, pe, tc__c(ir, bn)), tc_e_mul(ir, tc__v(ir, v3), tc__c(ir, vl)));
  const tc_expr *oidx = tc_e_add(ir, tc_e_mul(ir, tc_e_add(ir, r0e, tc__v(ir, r3)), tc__c(ir, m)), col);
  const tc_expr *ai3 = tc_e_add(ir, tc_e_mul(ir, tc__v(ir, r3), tc__c(ir, mv)), tc__v(ir, v3));
  const tc_stmt *vepi = tc_s_for(
      ir, r3, tc__c(ir, 0), tc__c(ir, nr), TC_FOR_UNROLLED,
      tc_s_for(ir, v3, tc__c(ir, 0), tc__c(ir, mv), TC_FOR_UNROLLED,
               tc_s_store(ir, o, oidx,
                          tc__epilogue(ir, wl, tc_e_load(ir, acc, ai3, 1, 64), bias, col, res, oidx), 4)));
  const tc_stmt *epi = vepi;
  if (m % bn) {
    /* The last panel: spill the accumulators and store the columns that exist. */
    tc_var *tmp = tc_var_buffer(ir, "tmp", tc_type_f32(1), -1);
    tc_var *q = tc_var_new(ir, "q", tc_type_int()), *l = tc_var_new(ir, "l", tc_type_int());
    tc_var *rr = tc_var_new(ir, "r", tc_type_int());
    const tc_stmt *spill = tc_s_for(
        ir, q, tc__c(ir, 0), tc__c(ir, nr * mv), TC_FOR_UNROLLED,
        tc_s_store(ir, tmp, tc_e_mul(ir, tc__v(ir, q), tc__c(ir, vl)), tc_e_load(ir, acc, tc__v(ir, q), 1, 64),
                   64));
    const tc_expr *c2 = tc_e_add(ir, tc__c(ir, (int64_t)(np - 1) * bn), tc__v(ir, l));
    const tc_expr *oi2 = tc_e_add(ir, tc_e_mul(ir, tc_e_add(ir, r0e, tc__v(ir, rr)), tc__c(ir, m)), c2);
    /* acc element (r, v) lane j sits at tmp[(r*mv + v)*vl + j] = tmp[r*mv*vl + l]. */
    const tc_expr *ti = tc_e_add(ir, tc_e_mul(ir, tc__v(ir, rr), tc__c(ir, mv * vl)), tc__v(ir, l));
    const tc_stmt *lanes = tc_s_for(
        ir, rr, tc__c(ir, 0), tc__c(ir, nr), TC_FOR_SERIAL,
        tc_s_for(ir, l, tc__c(ir, 0), tc__c(ir, m - (np - 1) * bn), TC_FOR_SERIAL,
                 tc_s_store(ir, o, oi2, tc__epilogue(ir, wl, tc_e_load(ir, tmp, ti, 1, 4), bias, c2, res, oi2),
                            4)));
    const tc_stmt *tail[2] = {spill, lanes};
    const tc_stmt *tail_s = tc_s_allocate(ir, tmp, (int64_t)nr * mv * vl, TC_SCOPE_LOCAL, tc_s_seq(ir, 2, tail));
    epi = tc_s_if(ir, tc_e_bin(ir, TC_EXPR_LT, pe, tc__c(ir, np - 1)), vepi, tail_s);
  }
  const tc_stmt *all[3] = {init, kloop, epi};
  const tc_stmt *panel = tc_s_allocate(ir, acc, (int64_t)nr * mv, TC_SCOPE_LOCAL, tc_s_seq(ir, 3, all));
  const tc_expr *tk = tc__v(ir, task);
  const tc_stmt *body =
      tc_s_let(ir, p, tc_e_mod(ir, tk, tc__c(ir, np)),
               tc_s_let(ir, r0, tc_e_mul(ir, tc_e_div(ir, tk, tc__c(ir, np)), tc__c(ir, nr)), panel));
  *out = tc__parallel(ir, task, (int64_t)np * nrt, body);
  return ir->err;
}

static th_status pack(const tc_workload *wl, const tc_target *t, const tc_space *s, const tc_config *c,
                      int p[TC_PACK_NPARAMS]) {
  p[0] = TH_RT_PACK_DENSE;
  p[1] = wl->oc;
  p[2] = wl->c;
  p[3] = tc__knob(s, c, "tile_x")[1] * t->simd_lanes;
  return TH_OK;
}

const tc__op tc__op_dense = {TC_KERNEL_DENSE, space, fallback, valid, lower, pack};
