/* GPU conv2d, TVM's conv2d_nchw direct schedule: output tiles split 4 ways (block, vthread, thread,
 * inner) over f, y, x; the reduction split 2 ways over rc, ry, rx; the input patch and the weight
 * slice of one reduction step staged in __shared__ memory by the whole block; auto_unroll_max_step
 * / unroll_explicit for the inner loops. Exact splits, so no tile needs a bounds guard. At
 * precision tf32 (sm_80 and newer) the conv is an implicit GEMM on tensor cores (gemm_tc.c). A
 * grouped conv (fp32 only) keeps a block's output channels inside one group (tile_f's block extent
 * divides oc/groups) and reduces over that group's c/groups input channels. A dilated conv's patch
 * spans (ry - 1) * dil + 1 rows per reduction step (columns alike), its taps dil apart. */
#include <math.h>

#include "templates_int.h"

static th_status space(const tc_workload *wl, const tc_cuda_target *t, tc_space *s) {
  if (wl->precision == TC_PRECISION_TF32) return tc__cuda_tcgemm_space(wl, t, s);
  int capf[4] = {0, 2, 64, 8}, capyx[4] = {0, 2, 32, 4}, cap2c[2] = {0, 16}, cap2k[2] = {0, 11};
  th_status rc = tc__cuda_add_split(s, "tile_f", wl->oc, 4, capf);
  if (rc == TH_OK) rc = tc__cuda_add_split(s, "tile_y", wl->oh, 4, capyx);
  if (rc == TH_OK) rc = tc__cuda_add_split(s, "tile_x", wl->ow, 4, capyx);
  if (rc == TH_OK) rc = tc__cuda_add_split(s, "tile_rc", wl->c / tc_workload_groups(wl), 2, cap2c);
  if (rc == TH_OK) rc = tc__cuda_add_split(s, "tile_ry", wl->kh, 2, cap2k);
  if (rc == TH_OK) rc = tc__cuda_add_split(s, "tile_rx", wl->kw, 2, cap2k);
  if (rc == TH_OK) rc = tc__cuda_add_unroll(s, 1);
  return rc;
}

static th_status shape(const tc_workload *wl, const tc_space *s, const tc_config *cfg,
                       tc__cuda_shape *sh, char *why, size_t whylen) {
  if (wl->precision == TC_PRECISION_TF32)
    return tc__cuda_tcgemm_shape(wl, s, cfg, sh, why, whylen);
  const int *f = tc__cuda_val(s, cfg, "tile_f"), *y = tc__cuda_val(s, cfg, "tile_y");
  const int *x = tc__cuda_val(s, cfg, "tile_x"), *rc = tc__cuda_val(s, cfg, "tile_rc");
  const int *ry = tc__cuda_val(s, cfg, "tile_ry"), *rx = tc__cuda_val(s, cfg, "tile_rx");
  if (!f || !y || !x || !rc || !ry || !rx) return tc__cuda_why(why, whylen, "missing knob");
  if ((wl->oc / tc_workload_groups(wl)) % ((int64_t)f[1] * f[2] * f[3]))
    return tc__cuda_why(why, whylen, "a block's output channels span two groups");
  sh->grid[2] = (int64_t)wl->n * f[0];
  sh->grid[1] = y[0];
  sh->grid[0] = x[0];
  sh->block[2] = f[2];
  sh->block[1] = y[2];
  sh->block[0] = x[2];
  int64_t yb = (int64_t)y[1] * y[2] * y[3], xb = (int64_t)x[1] * x[2] * x[3];
  int64_t ih = (yb - 1) * wl->sh + (ry[1] - 1) * tc_workload_dil(wl, 0) + 1,
          iw = (xb - 1) * wl->sw + (rx[1] - 1) * tc_workload_dil(wl, 1) + 1;
  sh->shared_bytes =
      4 * ((int64_t)rc[1] * ih * iw + (int64_t)f[1] * f[2] * f[3] * rc[1] * ry[1] * rx[1]);
  sh->local_floats = (int64_t)f[1] * f[3] * y[1] * y[3] * x[1] * x[3];
  return TH_OK;
}

static int largest_div(int n, int cap) {
  for (int d = cap; d > 1; d--)
    if (n % d == 0) return d;
  return 1;
}

/* The reduction split at its widest and the output tiles scored for occupancy, per-thread work,
 * coalescing along x and no vthreads, over every valid (tile_f, tile_y, tile_x). */
static th_status fallback(const tc_workload *wl, const tc_cuda_target *t, const tc_space *s,
                          tc_config *out) {
  if (wl->precision == TC_PRECISION_TF32) return tc__cuda_tcgemm_fallback(wl, t, s, out);
  int cg = wl->c / tc_workload_groups(wl), rc2[2] = {0, largest_div(cg, 8)};
  rc2[0] = cg / rc2[1];
  int ry[2] = {1, wl->kh}, rx[2] = {1, wl->kw};
  if (wl->kh > 11) ry[0] = wl->kh, ry[1] = 1;
  if (wl->kw > 11) rx[0] = wl->kw, rx[1] = 1;
  tc__cuda_pick(s, out, "tile_rc", rc2, 2);
  tc__cuda_pick(s, out, "tile_ry", ry, 2);
  tc__cuda_pick(s, out, "tile_rx", rx, 2);
  int one = 0; /* nvcc unrolls the small constant loops itself; explicit steps cost NVRTC time */
  tc__cuda_pick(s, out, "auto_unroll_max_step", &one, 1);
  int kf = tc_space_knob(s, "tile_f"), ky = tc_space_knob(s, "tile_y"),
      kx = tc_space_knob(s, "tile_x");
  double best = -1e30, waves = 2.0 * t->multiprocessors; /* blocks for two waves on the device */
  tc_config bestc = *out;
  for (int a = 0; a < s->knobs[kf].nvalues; a++)
    for (int b = 0; b < s->knobs[ky].nvalues; b++)
      for (int c = 0; c < s->knobs[kx].nvalues; c++) {
        out->idx[kf] = a;
        out->idx[ky] = b;
        out->idx[kx] = c;
        const int *f = s->knobs[kf].values[a], *y = s->knobs[ky].values[b],
                  *x = s->knobs[kx].values[c];
        if (tc_cuda_valid(wl, t, s, out, NULL, 0) != TH_OK) continue;
        double th = (double)f[2] * y[2] * x[2],
               per = (double)f[1] * f[3] * y[1] * y[3] * x[1] * x[3];
        double blocks = (double)wl->n * f[0] * y[0] * x[0];
        double score = -fabs(log2(th) - 7.5) - 0.6 * fabs(log2(per) - 3.5);
        if (blocks < waves) score -= 0.8 * log2(waves / blocks);
        if (x[2] < 4 && wl->ow >= 4) score -= 0.5; /* coalescing along x */
        score -= 0.05 * (f[1] + y[1] + x[1]);      /* prefer no vthreads */
        if (score > best) {
          best = score;
          bestc = *out;
        }
      }
  *out = bestc;
  return TH_OK;
}

/* A thread's register tile: vthread loops vf, vy, vx around inner loops fi, yi, xi. */
typedef struct tile {
  tc_var *vf, *fi, *vy, *yi, *vx, *xi;
} tile;

static tile tile_vars(tc__cuda_lc *L) {
  tile t;
  t.vf = tc__cuda_iv(L, "vf"), t.fi = tc__cuda_iv(L, "fi"), t.vy = tc__cuda_iv(L, "vy");
  t.yi = tc__cuda_iv(L, "yi"), t.vx = tc__cuda_iv(L, "vx"), t.xi = tc__cuda_iv(L, "xi");
  return t;
}

/* The tile's loops around body, vf, vy, vx outermost. */
static const tc_stmt *tile_loops(tc__cuda_lc *L, const tile *t, const int *f, const int *y,
                                 const int *x, const tc_stmt *body) {
  body = tc__cuda_for(L, t->xi, x[3], TC_FOR_SERIAL, body);
  body = tc__cuda_for(L, t->yi, y[3], TC_FOR_SERIAL, body);
  body = tc__cuda_for(L, t->fi, f[3], TC_FOR_SERIAL, body);
  body = tc__cuda_for(L, t->vx, x[1], TC_FOR_SERIAL, body);
  body = tc__cuda_for(L, t->vy, y[1], TC_FOR_SERIAL, body);
  return tc__cuda_for(L, t->vf, f[1], TC_FOR_SERIAL, body);
}

/* The accumulator of the tile's current element. */
static const tc_expr *tile_acc(tc__cuda_lc *L, const tile *t, const int *f, const int *y,
                               const int *x) {
  const tc_expr *e = ADD(MUL(V(t->vf), I(f[3])), V(t->fi));
  e = ADD(MUL(ADD(MUL(e, I(y[1])), V(t->vy)), I(y[3])), V(t->yi));
  return ADD(MUL(ADD(MUL(e, I(x[1])), V(t->vx)), I(x[3])), V(t->xi));
}

static const tc_stmt *lower(tc__cuda_lc *L, const tc_space *s, const tc_config *cfg) {
  if (L->wl->precision == TC_PRECISION_TF32) return tc__cuda_tcgemm_lower(L, s, cfg);
  const int *f = tc__cuda_val(s, cfg, "tile_f"), *y = tc__cuda_val(s, cfg, "tile_y");
  const int *x = tc__cuda_val(s, cfg, "tile_x"), *rc = tc__cuda_val(s, cfg, "tile_rc");
  const int *ry = tc__cuda_val(s, cfg, "tile_ry"), *rx = tc__cuda_val(s, cfg, "tile_rx");
  const tc_workload *wl = L->wl;
  int64_t C = wl->c, H = wl->h, W = wl->w, F = wl->oc, OH = wl->oh, OW = wl->ow, KH = wl->kh,
          KW = wl->kw, CG = C / tc_workload_groups(wl), FG = F / tc_workload_groups(wl);
  int64_t Fb = (int64_t)f[1] * f[2] * f[3], Yb = (int64_t)y[1] * y[2] * y[3],
          Xb = (int64_t)x[1] * x[2] * x[3];
  /* dilation: a step's ry[1] x rx[1] taps lie DH rows / DW columns apart in the patch */
  int64_t DH = tc_workload_dil(wl, 0), DW = tc_workload_dil(wl, 1);
  int64_t IHt = (Yb - 1) * wl->sh + (ry[1] - 1) * DH + 1,
          IWt = (Xb - 1) * wl->sw + (rx[1] - 1) * DW + 1;
  int64_t T = (int64_t)f[2] * y[2] * x[2], nacc = (int64_t)f[1] * f[3] * y[1] * y[3] * x[1] * x[3];
  int64_t S1 = rc[1] * IHt * IWt, S2 = Fb * rc[1] * ry[1] * rx[1];
  tc_var *bz = tc__cuda_iv(L, "bz"), *by = tc__cuda_iv(L, "by"), *bx = tc__cuda_iv(L, "bx");
  tc_var *tz = tc__cuda_iv(L, "tz"), *ty = tc__cuda_iv(L, "ty"), *tx = tc__cuda_iv(L, "tx"),
         *lt = tc__cuda_iv(L, "lt");
  tc_var *nn = tc__cuda_iv(L, "n"), *f0 = tc__cuda_iv(L, "f0"), *y0 = tc__cuda_iv(L, "y0"),
         *x0 = tc__cuda_iv(L, "x0");
  tc_var *rco = tc__cuda_iv(L, "rco"), *ryo = tc__cuda_iv(L, "ryo"), *rxo = tc__cuda_iv(L, "rxo");
  tc_var *cc = tc__cuda_iv(L, "rci"), *ky = tc__cuda_iv(L, "ryi"), *kx = tc__cuda_iv(L, "rxi");
  tc_var *e1 = tc__cuda_iv(L, "e"), *e2 = tc__cuda_iv(L, "e");
  tc_var *sin = tc_var_buffer(L->ir, "pad_shared", tc_type_f32(1), -1);
  tc_var *sw = tc_var_buffer(L->ir, "kernel_shared", tc_type_f32(1), -1);
  tc_var *acc = tc__cuda_local(L, "acc");
  tc_var *in = L->arg[TC_ARG_IN], *w = L->arg[TC_ARG_WEIGHTS];
  /* input patch */
  const tc_expr *c1 = DIV(V(e1), I(IHt * IWt)), *r1 = MOD(V(e1), I(IHt * IWt));
  const tc_expr *gy =
      ADD(ADD(SUB(MUL(V(y0), I(wl->sh)), I(wl->pt)), MUL(V(ryo), I(ry[1] * DH))), DIV(r1, I(IWt)));
  const tc_expr *gx =
      ADD(ADD(SUB(MUL(V(x0), I(wl->sw)), I(wl->pl)), MUL(V(rxo), I(rx[1] * DW))), MOD(r1, I(IWt)));
  /* the block's group starts at input channel (f0 / FG) * CG */
  const tc_expr *gc = ADD(MUL(V(rco), I(rc[1])), c1);
  if (CG != C) gc = ADD(MUL(DIV(V(f0), I(FG)), I(CG)), gc);
  const tc_expr *ok =
      BIN(TC_EXPR_AND, BIN(TC_EXPR_AND, BIN(TC_EXPR_GE, gy, I(0)), BIN(TC_EXPR_LT, gy, I(H))),
          BIN(TC_EXPR_AND, BIN(TC_EXPR_GE, gx, I(0)), BIN(TC_EXPR_LT, gx, I(W))));
  const tc_stmt *ld1 =
      ST(sin, V(e1),
         tc_e_select(L->ir, ok,
                     LD(in, ADD(MUL(ADD(MUL(ADD(MUL(V(nn), I(C)), gc), I(H)), gy), I(W)), gx)),
                     FLT(0.0)));
  /* weight slice [Fb][rci][ryi][rxi] */
  int64_t per = (int64_t)rc[1] * ry[1] * rx[1];
  const tc_expr *ff = DIV(V(e2), I(per)), *r2 = MOD(V(e2), I(per));
  const tc_expr *wc = ADD(MUL(V(rco), I(rc[1])), DIV(r2, I((int64_t)ry[1] * rx[1])));
  const tc_expr *wy = ADD(MUL(V(ryo), I(ry[1])), MOD(DIV(r2, I(rx[1])), I(ry[1])));
  const tc_expr *wx = ADD(MUL(V(rxo), I(rx[1])), MOD(r2, I(rx[1])));
  const tc_expr *widx =
      ADD(MUL(ADD(MUL(ADD(MUL(ADD(V(f0), ff), I(CG)), wc), I(KH)), wy), I(KW)), wx);
  const tc_stmt *ld2 = ST(sw, V(e2), LD(w, widx));
  /* compute: the tile's loops inside rci, ryi, rxi */
  tile c = tile_vars(L);
  const tc_expr *fl = ADD(MUL(ADD(MUL(V(c.vf), I(f[2])), V(tz)), I(f[3])), V(c.fi));
  const tc_expr *yl = ADD(MUL(ADD(MUL(V(c.vy), I(y[2])), V(ty)), I(y[3])), V(c.yi));
  const tc_expr *xl = ADD(MUL(ADD(MUL(V(c.vx), I(x[2])), V(tx)), I(x[3])), V(c.xi));
  const tc_expr *ai = tile_acc(L, &c, f, y, x);
  const tc_expr *kyd = DH > 1 ? MUL(V(ky), I(DH)) : V(ky);
  const tc_expr *kxd = DW > 1 ? MUL(V(kx), I(DW)) : V(kx);
  const tc_expr *sidx = ADD(MUL(ADD(MUL(V(cc), I(IHt)), ADD(MUL(yl, I(wl->sh)), kyd)), I(IWt)),
                            ADD(MUL(xl, I(wl->sw)), kxd));
  const tc_expr *kidx =
      ADD(MUL(ADD(MUL(ADD(MUL(fl, I(rc[1])), V(cc)), I(ry[1])), V(ky)), I(rx[1])), V(kx));
  const tc_stmt *fm = ST(acc, ai, tc_e_fma(L->ir, LD(sin, sidx), LD(sw, kidx), LD(acc, ai)));
  const tc_stmt *tiles = tile_loops(L, &c, f, y, x, fm);
  const tc_stmt *comp = tc__cuda_for(
      L, cc, rc[1], TC_FOR_SERIAL,
      tc__cuda_for(L, ky, ry[1], TC_FOR_SERIAL, tc__cuda_for(L, kx, rx[1], TC_FOR_SERIAL, tiles)));
  const tc_stmt *step[5] = {tc_s_sync(L->ir), tc__cuda_coop(L, S1, T, lt, e1, ld1),
                            tc__cuda_coop(L, S2, T, lt, e2, ld2), tc_s_sync(L->ir), comp};
  const tc_stmt *red = tc__cuda_for(
      L, rco, rc[0], TC_FOR_SERIAL,
      tc__cuda_for(L, ryo, ry[0], TC_FOR_SERIAL,
                   tc__cuda_for(L, rxo, rx[0], TC_FOR_SERIAL, tc_s_seq(L->ir, 5, step))));
  tc_var *q = tc__cuda_iv(L, "q");
  const tc_stmt *init = tc__cuda_for(L, q, nacc, TC_FOR_SERIAL, ST(acc, V(q), FLT(0.0)));
  /* write-back with the epilogue */
  tile o = tile_vars(L);
  const tc_expr *of = ADD(V(f0), ADD(MUL(ADD(MUL(V(o.vf), I(f[2])), V(tz)), I(f[3])), V(o.fi)));
  const tc_expr *oy = ADD(V(y0), ADD(MUL(ADD(MUL(V(o.vy), I(y[2])), V(ty)), I(y[3])), V(o.yi)));
  const tc_expr *ox = ADD(V(x0), ADD(MUL(ADD(MUL(V(o.vx), I(x[2])), V(tx)), I(x[3])), V(o.xi)));
  const tc_expr *ai2 = tile_acc(L, &o, f, y, x);
  const tc_expr *oidx = ADD(MUL(ADD(MUL(ADD(MUL(V(nn), I(F)), of), I(OH)), oy), I(OW)), ox);
  const tc_stmt *wr = ST(L->arg[TC_ARG_OUT], oidx, tc__cuda_epi(L, LD(acc, ai2), of, oidx));
  wr = tile_loops(L, &o, f, y, x, wr);
  const tc_stmt *items[3] = {init, red, wr};
  const tc_stmt *body = tc_s_allocate(L->ir, acc, nacc, TC_SCOPE_LOCAL, tc_s_seq(L->ir, 3, items));
  body = tc_s_let(L->ir, lt, ADD(MUL(ADD(MUL(V(tz), I(y[2])), V(ty)), I(x[2])), V(tx)), body);
  body = tc_s_let(L->ir, nn, DIV(V(bz), I(f[0])), body);
  body = tc_s_let(L->ir, f0, MUL(MOD(V(bz), I(f[0])), I(Fb)), body);
  body = tc_s_let(L->ir, y0, MUL(V(by), I(Yb)), body);
  body = tc_s_let(L->ir, x0, MUL(V(bx), I(Xb)), body);
  body = tc_s_allocate(L->ir, sin, S1, TC_SCOPE_SHARED,
                       tc_s_allocate(L->ir, sw, S2, TC_SCOPE_SHARED, body));
  body = tc__cuda_for(L, tx, x[2], TC_FOR_GPU_THREAD_X, body);
  body = tc__cuda_for(L, ty, y[2], TC_FOR_GPU_THREAD_Y, body);
  body = tc__cuda_for(L, tz, f[2], TC_FOR_GPU_THREAD_Z, body);
  body = tc__cuda_for(L, bx, x[0], TC_FOR_GPU_BLOCK_X, body);
  body = tc__cuda_for(L, by, y[0], TC_FOR_GPU_BLOCK_Y, body);
  return tc__cuda_for(L, bz, (int64_t)wl->n * f[0], TC_FOR_GPU_BLOCK_Z, body);
}

const tc__cuda_op tc__cuda_op_conv2d = {TC_KERNEL_CONV2D, space, fallback, shape, lower};
