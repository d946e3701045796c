/* The Winograd path of the conv2d template: 3x3 stride-1 convs as F(m x m, 3 x 3), m = 2 or 4
 * (Lavin and Gray). A task takes a run of `nt` output tiles (m x m positions each, numbered
 * row-major over the map) of one image and a group of oc tiles:
 *   1. input transform: each tile's (m+2)^2 input patch (zero outside the map), vectorised over
 * input channels, becomes V = B^T d B in a stack scratch [(m+2)^2][nt][ic];
 *   2. per oc tile and transformed position xi: a register-tiled GEMM M[xi][tile][oc] = sum over ic
 * of V[xi][tile][ic] U[xi][ic][oc], rt tiles x VO oc vectors of accumulators, each V scalar
 * broadcast once;
 *   3. output transform Y = A^T M A per tile and oc vector, then the fused epilogue and the store
 * of the positions inside the map. U = G g G^T is made once at model load (th_rt_pack_winograd).
 * The GEMM does (m+2)^2 / m^2 multiply-adds per output and input channel instead of 9: 4 for m =
 * 2, 2.25 for m = 4. */
#include "conv2d_int.h"
#include "th_rt.h"

/* B^T (rows: transformed index, columns: patch index) and A^T (rows: output index) of F(2,3) and
 * F(4,3). */
static const double bt2[4][4] = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
static const double at2[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};
static const double bt4[6][6] = {{4, 0, -5, 0, 1, 0},  {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0},
                                 {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}};
static const double at4[4][6] = {
    {1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}};

static double bt(int m, int i, int k) {
  return m == 2 ? bt2[i][k] : bt4[i][k];
}
static double at(int m, int i, int k) {
  return m == 2 ? at2[i][k] : at4[i][k];
}

int tc__wino_eligible(const tc_workload *wl, const tc_target *t) {
  int vl = t->simd_lanes;
  return wl->kernel == TC_KERNEL_CONV2D && wl->kh == 3 && wl->kw == 3 && wl->sh == 1 &&
         wl->sw == 1 && vl > 1 && wl->in_cb % vl == 0 && wl->out_cb % vl == 0 &&
         wl->c % wl->in_cb == 0 && wl->groups <= 1 && tc_workload_dil(wl, 0) == 1 &&
         tc_workload_dil(wl, 1) == 1;
}

int tc__wino_tiles(const tc_workload *wl, int m, int *th, int *tw) {
  *th = (wl->oh + m - 1) / m;
  *tw = (wl->ow + m - 1) / m;
  return *th * *tw;
}

int64_t tc__wino_scratch_floats(const tc_workload *wl, int m, int nt, int ot) {
  int a2 = (m + 2) * (m + 2);
  return (int64_t)a2 * nt * wl->c + (int64_t)a2 * nt * ot;
}

/* sum_k coef[k] * x[k] over vectors (zero coefficients skipped, +-1 as adds). */
static const tc_expr *lincomb(tc_ir *ir, const double *coef, const tc_expr *const *x, int n,
                              int lanes) {
  int s = -1; /* start from a +1 term when there is one */
  for (int k = 0; k < n && s < 0; k++)
    if (coef[k] == 1.0) s = k;
  const tc_expr *acc = s >= 0 ? x[s] : NULL;
  for (int k = 0; k < n; k++) {
    double c = coef[k];
    if (c == 0.0 || k == s) continue;
    const tc_expr *cv = tc_e_broadcast(ir, tc_e_float(ir, c), lanes);
    if (!acc)
      acc = tc_e_mul(ir, cv, x[k]);
    else if (c == 1.0)
      acc = tc_e_add(ir, acc, x[k]);
    else if (c == -1.0)
      acc = tc_e_sub(ir, acc, x[k]);
    else
      acc = tc_e_fma(ir, cv, x[k], acc);
  }
  return acc ? acc : tc_e_broadcast(ir, tc_e_float(ir, 0.0), lanes);
}

typedef struct wino_ctx {
  const tc_workload *wl;
  int m, a, a2, vl, vo, ot, rt, nt, tw, ttot;
  const tc_var *in, *wt, *bias, *res, *out, *vbuf, *mbuf;
  const tc_expr *n, *tb; /* image, task's tile run */
} wino_ctx;

/* Tile run position tl -> tile row / column (runs past the map's last tile give rows past the map,
 * whose patches read as zeros and whose outputs are not stored). */
static void tile_rc(tc_ir *ir, const wino_ctx *x, const tc_expr *tl, const tc_expr **ty,
                    const tc_expr **tx) {
  const tc_expr *tau = tc_e_add(ir, tc_e_mul(ir, x->tb, tc__c(ir, x->nt)), tl);
  *ty = tc_e_div(ir, tau, tc__c(ir, x->tw));
  *tx = tc_e_mod(ir, tau, tc__c(ir, x->tw));
}

/* Step 1: V[xi][tl][ic] for all the run's tiles and input channels. */
static const tc_stmt *input_transform(tc_ir *ir, const wino_ctx *x) {
  const tc_workload *wl = x->wl;
  int a = x->a, vl = x->vl, cb = wl->in_cb, icb_n = wl->c / cb;
  tc_type vt = tc_type_f32(vl);
  tc_var *tl = tc_var_new(ir, "tl", tc_type_int()), *icb = tc_var_new(ir, "icb", tc_type_int());
  tc_var *j = tc_var_new(ir, "j", tc_type_int());
  tc_var *d = tc_var_buffer(ir, "d", vt, -1), *tmp = tc_var_buffer(ir, "tmp", vt, -1);
  const tc_expr *ty, *tx;
  tile_rc(ir, x, tc__v(ir, tl), &ty, &tx);
  const tc_expr *y0 = tc_e_sub(ir, tc_e_mul(ir, ty, tc__c(ir, x->m)), tc__c(ir, wl->pt));
  const tc_expr *x0 = tc_e_sub(ir, tc_e_mul(ir, tx, tc__c(ir, x->m)), tc__c(ir, wl->pl));
  tc_var *y0v = tc_var_new(ir, "y0", tc_type_int()), *x0v = tc_var_new(ir, "x0", tc_type_int());
  tc_stmt_list l = {0};
  const tc_expr *zero = tc_e_broadcast(ir, tc_e_float(ir, 0.0), vl);
  for (int k = 0; k < a; k++)
    for (int c = 0; c < a; c++) {
      const tc_expr *iy = tc_e_add(ir, tc__v(ir, y0v), tc__c(ir, k));
      const tc_expr *ix = tc_e_add(ir, tc__v(ir, x0v), tc__c(ir, c));
      const tc_expr *cy = tc_e_max(ir, tc_e_min(ir, iy, tc__c(ir, wl->h - 1)), tc__c(ir, 0));
      const tc_expr *cx = tc_e_max(ir, tc_e_min(ir, ix, tc__c(ir, wl->w - 1)), tc__c(ir, 0));
      const tc_expr *idx =
          tc__idx(ir, x->n, tc__v(ir, icb), cy, cx, tc_e_mul(ir, tc__v(ir, j), tc__c(ir, vl)),
                  icb_n, wl->h, wl->w, cb);
      const tc_expr *ok =
          tc__and(ir, tc__in_range(ir, iy, 0, wl->h), tc__in_range(ir, ix, 0, wl->w));
      const tc_expr *v =
          tc_e_select(ir, tc_e_broadcast(ir, ok, vl), tc_e_load(ir, x->in, idx, vl, 4), zero);
      tc_list_push(ir, &l, tc_s_store(ir, d, tc__c(ir, k * a + c), v, 64));
    }
  const tc_expr *col[6];
  for (int i = 0; i < a; i++) /* tmp = B^T d */
    for (int c = 0; c < a; c++) {
      double coef[6];
      for (int k = 0; k < a; k++) {
        coef[k] = bt(x->m, i, k);
        col[k] = tc_e_load(ir, d, tc__c(ir, k * a + c), 1, 64);
      }
      tc_list_push(ir, &l,
                   tc_s_store(ir, tmp, tc__c(ir, i * a + c), lincomb(ir, coef, col, a, vl), 64));
    }
  const tc_expr *ic0 = tc_e_add(ir, tc_e_mul(ir, tc__v(ir, icb), tc__c(ir, cb)),
                                tc_e_mul(ir, tc__v(ir, j), tc__c(ir, vl)));
  for (int i = 0; i < a; i++) /* V = tmp B */
    for (int c = 0; c < a; c++) {
      double coef[6];
      for (int k = 0; k < a; k++) {
        coef[k] = bt(x->m, c, k);
        col[k] = tc_e_load(ir, tmp, tc__c(ir, i * a + k), 1, 64);
      }
      const tc_expr *vi = tc_e_add(
          ir,
          tc_e_mul(ir, tc_e_add(ir, tc__c(ir, (int64_t)(i * a + c) * x->nt), tc__v(ir, tl)),
                   tc__c(ir, wl->c)),
          ic0);
      tc_list_push(ir, &l, tc_s_store(ir, x->vbuf, vi, lincomb(ir, coef, col, a, vl), 4));
    }
  const tc_stmt *body =
      tc_s_allocate(ir, d, x->a2, TC_SCOPE_LOCAL,
                    tc_s_allocate(ir, tmp, x->a2, TC_SCOPE_LOCAL, tc_list_seq(ir, &l)));
  body = tc_s_let(ir, y0v, y0, tc_s_let(ir, x0v, x0, body));
  body = tc_s_for(ir, j, tc__c(ir, 0), tc__c(ir, cb / vl), TC_FOR_SERIAL, body);
  body = tc_s_for(ir, icb, tc__c(ir, 0), tc__c(ir, icb_n), TC_FOR_SERIAL, body);
  return tc_s_for(ir, tl, tc__c(ir, 0), tc__c(ir, x->nt), TC_FOR_SERIAL, body);
}

/* Step 2 for one register tile: tiles [t0, t0 + w) of the run, oc tile ob, position xi. */
static const tc_stmt *gemm_tile(tc_ir *ir, const wino_ctx *x, const tc_expr *ob, const tc_expr *xi,
                                const tc_expr *t0, int w) {
  const tc_workload *wl = x->wl;
  int vl = x->vl, vo = x->vo, cb = wl->in_cb;
  tc_type vt = tc_type_f32(vl);
  tc_var *acc = tc_var_buffer(ir, "acc", vt, -1), *wreg = tc_var_buffer(ir, "wreg", vt, -1);
  tc_var *v = tc_var_new(ir, "v", tc_type_int()), *r = tc_var_new(ir, "r", tc_type_int());
  const tc_expr *ai = tc_e_add(ir, tc_e_mul(ir, tc__v(ir, v), tc__c(ir, w)), tc__v(ir, r));
  const tc_stmt *init =
      tc_s_for(ir, v, tc__c(ir, 0), tc__c(ir, vo), TC_FOR_UNROLLED,
               tc_s_for(ir, r, tc__c(ir, 0), tc__c(ir, w), TC_FOR_UNROLLED,
                        tc_s_store(ir, acc, ai, tc_e_broadcast(ir, tc_e_float(ir, 0.0), vl), 64)));
  tc_var *icb = tc_var_new(ir, "icb", tc_type_int()), *ci = tc_var_new(ir, "ci", tc_type_int());
  tc_var *v2 = tc_var_new(ir, "v", tc_type_int()), *r2 = tc_var_new(ir, "r", tc_type_int());
  tc_var *v3 = tc_var_new(ir, "v", tc_type_int()), *xb = tc_var_new(ir, "xb", vt);
  const tc_expr *ic = tc_e_add(ir, tc_e_mul(ir, tc__v(ir, icb), tc__c(ir, cb)), tc__v(ir, ci));
  /* U[((ob * a2 + xi) * ic + c) * ot + v * vl] */
  const tc_expr *ubase = tc_e_mul(
      ir,
      tc_e_add(ir,
               tc_e_mul(ir, tc_e_add(ir, tc_e_mul(ir, ob, tc__c(ir, x->a2)), xi), tc__c(ir, wl->c)),
               ic),
      tc__c(ir, x->ot));
  const tc_stmt *ldw = tc_s_for(
      ir, v2, tc__c(ir, 0), tc__c(ir, vo), TC_FOR_UNROLLED,
      tc_s_store(ir, wreg, tc__v(ir, v2),
                 tc_e_load(ir, x->wt,
                           tc_e_add(ir, ubase, tc_e_mul(ir, tc__v(ir, v2), tc__c(ir, vl))), vl, 4),
                 64));
  /* V[(xi * nt + t0 + r) * ic + c] */
  const tc_expr *vi = tc_e_add(
      ir,
      tc_e_mul(ir,
               tc_e_add(ir, tc_e_add(ir, tc_e_mul(ir, xi, tc__c(ir, x->nt)), t0), tc__v(ir, r2)),
               tc__c(ir, wl->c)),
      ic);
  const tc_expr *ai3 = tc_e_add(ir, tc_e_mul(ir, tc__v(ir, v3), tc__c(ir, w)), tc__v(ir, r2));
  const tc_stmt *fmas =
      tc_s_for(ir, v3, tc__c(ir, 0), tc__c(ir, vo), TC_FOR_UNROLLED,
               tc_s_store(ir, acc, ai3,
                          tc_e_fma(ir, tc_e_var(ir, xb), tc_e_load(ir, wreg, tc__v(ir, v3), 1, 64),
                                   tc_e_load(ir, acc, ai3, 1, 64)),
                          64));
  const tc_stmt *cols =
      tc_s_for(ir, r2, tc__c(ir, 0), tc__c(ir, w), TC_FOR_UNROLLED,
               tc_s_let(ir, xb, tc_e_broadcast(ir, tc_e_load(ir, x->vbuf, vi, 1, 4), vl), fmas));
  const tc_stmt *lane_body[2] = {ldw, cols};
  const tc_stmt *red = tc_s_for(
      ir, icb, tc__c(ir, 0), tc__c(ir, wl->c / cb), TC_FOR_ROLLED,
      tc_s_for(ir, ci, tc__c(ir, 0), tc__c(ir, cb), TC_FOR_UNROLLED, tc_s_seq(ir, 2, lane_body)));
  red = tc_s_allocate(ir, wreg, vo, TC_SCOPE_LOCAL, red);
  /* M[(xi * nt + t0 + r) * ot + v * vl] = acc */
  tc_var *v4 = tc_var_new(ir, "v", tc_type_int()), *r4 = tc_var_new(ir, "r", tc_type_int());
  const tc_expr *mi = tc_e_add(
      ir,
      tc_e_mul(ir,
               tc_e_add(ir, tc_e_add(ir, tc_e_mul(ir, xi, tc__c(ir, x->nt)), t0), tc__v(ir, r4)),
               tc__c(ir, x->ot)),
      tc_e_mul(ir, tc__v(ir, v4), tc__c(ir, vl)));
  const tc_expr *ai4 = tc_e_add(ir, tc_e_mul(ir, tc__v(ir, v4), tc__c(ir, w)), tc__v(ir, r4));
  const tc_stmt *st =
      tc_s_for(ir, v4, tc__c(ir, 0), tc__c(ir, vo), TC_FOR_UNROLLED,
               tc_s_for(ir, r4, tc__c(ir, 0), tc__c(ir, w), TC_FOR_UNROLLED,
                        tc_s_store(ir, x->mbuf, mi, tc_e_load(ir, acc, ai4, 1, 64), 4)));
  const tc_stmt *all[3] = {init, red, st};
  return tc_s_allocate(ir, acc, (int64_t)vo * w, TC_SCOPE_LOCAL, tc_s_seq(ir, 3, all));
}

/* Step 2 for one oc tile: every position xi, the run cut into balanced register tiles. */
static const tc_stmt *gemm(tc_ir *ir, const wino_ctx *x, const tc_expr *ob) {
  int ntl = (x->nt + x->rt - 1) / x->rt, q = x->nt / ntl, big = x->nt % ntl;
  tc_var *xi = tc_var_new(ir, "xi", tc_type_int());
  tc_var *j1 = tc_var_new(ir, "tt", tc_type_int()), *j2 = tc_var_new(ir, "tt", tc_type_int());
  tc_stmt_list l = {0};
  if (big > 0)
    tc_list_push(ir, &l,
                 tc_s_for(ir, j1, tc__c(ir, 0), tc__c(ir, big), TC_FOR_SERIAL,
                          gemm_tile(ir, x, ob, tc__v(ir, xi),
                                    tc_e_mul(ir, tc__v(ir, j1), tc__c(ir, q + 1)), q + 1)));
  if (ntl > big)
    tc_list_push(ir, &l,
                 tc_s_for(ir, j2, tc__c(ir, 0), tc__c(ir, ntl - big), TC_FOR_SERIAL,
                          gemm_tile(ir, x, ob, tc__v(ir, xi),
                                    tc_e_add(ir, tc_e_mul(ir, tc__v(ir, j2), tc__c(ir, q)),
                                             tc__c(ir, (int64_t)big * (q + 1))),
                                    q)));
  return tc_s_for(ir, xi, tc__c(ir, 0), tc__c(ir, x->a2), TC_FOR_SERIAL, tc_list_seq(ir, &l));
}

/* Step 3 for oc tile ob: Y = A^T M A per tile and oc vector, epilogue, stores inside the map. */
static const tc_stmt *output_transform(tc_ir *ir, const wino_ctx *x, const tc_expr *ob) {
  const tc_workload *wl = x->wl;
  int a = x->a, m = x->m, vl = x->vl;
  tc_type vt = tc_type_f32(vl);
  tc_var *tl = tc_var_new(ir, "tl", tc_type_int()), *v = tc_var_new(ir, "v", tc_type_int());
  tc_var *tmp = tc_var_buffer(ir, "otmp", vt, -1);
  const tc_expr *ty, *tx;
  tile_rc(ir, x, tc__v(ir, tl), &ty, &tx);
  tc_var *tyv = tc_var_new(ir, "ty", tc_type_int()), *txv = tc_var_new(ir, "tx", tc_type_int());
  const tc_expr *oc0 =
      tc_e_add(ir, tc_e_mul(ir, ob, tc__c(ir, x->ot)), tc_e_mul(ir, tc__v(ir, v), tc__c(ir, vl)));
  tc_stmt_list l = {0};
  const tc_expr *col[6];
  for (int i = 0; i < m; i++) /* tmp = A^T M: m x a */
    for (int c = 0; c < a; c++) {
      double coef[6];
      for (int k = 0; k < a; k++) {
        coef[k] = at(m, i, k);
        const tc_expr *mi = tc_e_add(
            ir,
            tc_e_mul(ir, tc_e_add(ir, tc__c(ir, (int64_t)(k * a + c) * x->nt), tc__v(ir, tl)),
                     tc__c(ir, x->ot)),
            tc_e_mul(ir, tc__v(ir, v), tc__c(ir, vl)));
        col[k] = coef[k] != 0.0 ? tc_e_load(ir, x->mbuf, mi, vl, 4) : NULL;
      }
      tc_list_push(ir, &l,
                   tc_s_store(ir, tmp, tc__c(ir, i * a + c), lincomb(ir, coef, col, a, vl), 64));
    }
  for (int i = 0; i < m; i++) /* Y = tmp A, then the epilogue and the store */
    for (int c = 0; c < m; c++) {
      double coef[6];
      for (int k = 0; k < a; k++) {
        coef[k] = at(m, c, k);
        col[k] = tc_e_load(ir, tmp, tc__c(ir, i * a + k), 1, 64);
      }
      const tc_expr *oy = tc_e_add(ir, tc_e_mul(ir, tc__v(ir, tyv), tc__c(ir, m)), tc__c(ir, i));
      const tc_expr *ox = tc_e_add(ir, tc_e_mul(ir, tc__v(ir, txv), tc__c(ir, m)), tc__c(ir, c));
      const tc_expr *oidx = tc__idx_c(ir, x->n, oc0, oy, ox, wl->oc, wl->oh, wl->ow, wl->out_cb);
      const tc_expr *val =
          tc__epilogue(ir, wl, lincomb(ir, coef, col, a, vl), x->bias, oc0, x->res, oidx);
      const tc_stmt *st = tc_s_store(ir, x->out, oidx, val, 4);
      const tc_expr *cond = NULL;
      if (wl->oh % m && i >= wl->oh % m) cond = tc_e_bin(ir, TC_EXPR_LT, oy, tc__c(ir, wl->oh));
      if (wl->ow % m && c >= wl->ow % m) {
        const tc_expr *cx = tc_e_bin(ir, TC_EXPR_LT, ox, tc__c(ir, wl->ow));
        cond = cond ? tc__and(ir, cond, cx) : cx;
      }
      tc_list_push(ir, &l, cond ? tc_s_if(ir, cond, st, NULL) : st);
    }
  const tc_stmt *body = tc_s_allocate(ir, tmp, (int64_t)m * a, TC_SCOPE_LOCAL, tc_list_seq(ir, &l));
  body = tc_s_for(ir, v, tc__c(ir, 0), tc__c(ir, x->vo), TC_FOR_SERIAL, body);
  /* runs past the map's last tile (row th and on) hold no outputs */
  if (x->ttot % x->nt)
    body = tc_s_if(ir, tc_e_bin(ir, TC_EXPR_LT, tc__v(ir, tyv), tc__c(ir, x->ttot / x->tw)), body,
                   NULL);
  body = tc_s_let(ir, tyv, ty, tc_s_let(ir, txv, tx, body));
  return tc_s_for(ir, tl, tc__c(ir, 0), tc__c(ir, x->nt), TC_FOR_SERIAL, body);
}

th_status tc__wino_lower(const tc_workload *wl, const tc_target *t, int m, int vo, int rt, int nt,
                         int ng, tc_ir *ir, const tc_stmt **out) {
  wino_ctx x;
  memset(&x, 0, sizeof x);
  x.wl = wl;
  x.m = m;
  x.a = m + 2;
  x.a2 = x.a * x.a;
  x.vl = t->simd_lanes;
  x.vo = vo;
  x.ot = vo * x.vl;
  x.rt = rt;
  x.nt = nt;
  int th;
  x.ttot = tc__wino_tiles(wl, m, &th, &x.tw);
  int ntiles = wl->oc / x.ot;
  if (!tc__wino_eligible(wl, t) || (m != 2 && m != 4) || ntiles * x.ot != wl->oc || ntiles % ng ||
      rt > nt || tc__wino_scratch_floats(wl, m, nt, x.ot) > TC__WINO_SCRATCH_MAX)
    return TH_ERR_INVALID;
  x.in = tc_var_buffer(ir, "in", tc_type_f32(1), TC_ARG_IN);
  x.wt = tc_var_buffer(ir, "w", tc_type_f32(1), TC_ARG_WEIGHTS);
  x.bias = tc_var_buffer(ir, "bias", tc_type_f32(1), TC_ARG_BIAS);
  x.res = tc_var_buffer(ir, "res", tc_type_f32(1), TC_ARG_RESIDUAL);
  x.out = tc_var_buffer(ir, "out", tc_type_f32(1), TC_ARG_OUT);
  tc_var *vbuf = tc_var_buffer(ir, "V", tc_type_f32(1), -1),
         *mbuf = tc_var_buffer(ir, "M", tc_type_f32(1), -1);
  x.vbuf = vbuf;
  x.mbuf = mbuf;
  int nruns = (x.ttot + nt - 1) / nt, tpg = ntiles / ng;
  tc_var *task = tc_var_new(ir, "task", tc_type_int()), *nv = tc_var_new(ir, "n", tc_type_int());
  tc_var *gv = tc_var_new(ir, "g", tc_type_int()), *tbv = tc_var_new(ir, "tb", tc_type_int());
  tc_var *ti = tc_var_new(ir, "ti", tc_type_int()), *obv = tc_var_new(ir, "ob", tc_type_int());
  x.n = tc__v(ir, nv);
  x.tb = tc__v(ir, tbv);
  const tc_stmt *per_ob[2] = {gemm(ir, &x, tc__v(ir, obv)),
                              output_transform(ir, &x, tc__v(ir, obv))};
  const tc_stmt *obs = tc_s_for(
      ir, ti, tc__c(ir, 0), tc__c(ir, tpg), TC_FOR_SERIAL,
      tc_s_let(ir, obv, tc_e_add(ir, tc_e_mul(ir, tc__v(ir, gv), tc__c(ir, tpg)), tc__v(ir, ti)),
               tc_s_seq(ir, 2, per_ob)));
  obs = tc_s_allocate(ir, mbuf, (int64_t)x.a2 * nt * x.ot, TC_SCOPE_LOCAL, obs);
  const tc_stmt *both[2] = {input_transform(ir, &x), obs};
  const tc_stmt *body =
      tc_s_allocate(ir, vbuf, (int64_t)x.a2 * nt * wl->c, TC_SCOPE_LOCAL, tc_s_seq(ir, 2, both));
  const tc_expr *tk = tc__v(ir, task);
  body = tc_s_let(ir, nv, tc_e_div(ir, tk, tc__c(ir, (int64_t)ng * nruns)),
                  tc_s_let(ir, gv, tc_e_mod(ir, tc_e_div(ir, tk, tc__c(ir, nruns)), tc__c(ir, ng)),
                           tc_s_let(ir, tbv, tc_e_mod(ir, tk, tc__c(ir, nruns)), body)));
  *out = tc__parallel(ir, task, (int64_t)wl->n * ng * nruns, body);
  return ir->err;
}

void tc__wino_pack(const tc_workload *wl, int m, int ot, int p[TC_PACK_NPARAMS]) {
  p[0] = TH_RT_PACK_WINOGRAD;
  p[1] = wl->oc;
  p[2] = wl->c;
  p[3] = m;
  p[4] = ot;
}
