/* The ONNX importer's local normalisations and shrinkage, lowered onto existing kernel families
 * (issue 38): Shrink onto TC_OP_BINARY's comparisons, TAKE and LEAVE (the kept branch exact, as
 * Where's); MeanVarianceNormalization onto TC_OP_REDUCE means over its axes, in the order ONNX's
 * function body computes them; LRN onto a channel-window sum, a constant 0/1 band matrix times the
 * squares (TC_OP_MATMUL), then a pow and a division; GridSample onto TC_OP_GATHER: per tap a row
 * of the channels-last input at an index computed from the grid by element-wise math, weighted and
 * summed (no kernel of its own: each tap is one gather of [N, Ho * Wo, C]). */
#include <stdio.h>
#include <string.h>

#include "onnx_int.h"
#include "workload.h"

/* A constant [1] holding v, named <node>.<tag>. */
static th_status tc__ox_scalar_const(tc__ox *x, const Onnx__NodeProto *n, const char *tag, float v,
                                     int *id) {
  int64_t one = 1;
  float *p;
  th_status rc = tc__ox_mask_const(x, n, tag, 1, &one, id, &p);
  if (rc == TH_OK && *id >= 0) p[0] = v;
  return rc;
}

/* Shrink (opset 9): x < -lambd ? x + bias : x > lambd ? x - bias : 0, as
 * TAKE(lt, x + bias) + LEAVE(lt, TAKE(gt, x - bias)): exactly one term is not -0. */
th_status tc__ox_c_shrink(tc__ox *x, const Onnx__NodeProto *n) {
  float bias, lambd;
  int a, lo = -1, hi = -1;
  th_status rc = tc__ox_attr_f(x, n, "bias", 0.0f, &bias);
  if (rc == TH_OK) rc = tc__ox_attr_f(x, n, "lambd", 0.5f, &lambd);
  if (rc != TH_OK) return rc;
  if (!isfinite(bias) || !isfinite(lambd))
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "bias %g and lambd %g must be finite", bias, lambd);
  rc = tc__ox_float_in(x, n, 0, &a);
  if (rc == TH_OK && a >= 0) rc = tc__ox_scalar_const(x, n, "lo", -lambd, &lo);
  if (rc == TH_OK && lo >= 0) rc = tc__ox_scalar_const(x, n, "hi", lambd, &hi);
  if (rc != TH_OK || a < 0 || lo < 0 || hi < 0) return rc;
  tc_graph *g = x->g;
  int lt = tc_graph_binary(g, a, lo, TC_BINARY_LT), gt = tc_graph_binary(g, a, hi, TC_BINARY_GT);
  int up = lt < 0 || gt < 0 ? -1 : tc_graph_affine(g, a, 1.0f, bias);
  int down = up < 0 ? -1 : tc_graph_affine(g, a, 1.0f, -bias);
  int t = down < 0 ? -1 : tc_graph_binary(g, lt, up, TC_BINARY_TAKE);
  int u = t < 0 ? -1 : tc_graph_binary(g, gt, down, TC_BINARY_TAKE);
  int l = u < 0 ? -1 : tc_graph_binary(g, lt, u, TC_BINARY_LEAVE);
  int id = l < 0 ? -1 : tc_graph_add(g, t, l);
  if (id < 0) return tc__ox_nfail(x, n, TH_ERR_INVALID, "%s", tc_graph_error(g));
  return tc__ox_set_node(x, n, 0, id);
}

/* MeanVarianceNormalization (opsets 9, 13): with means over axes (default [0, 2, 3]),
 * (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9), ONNX's function body step by step. */
th_status tc__ox_c_mvn(tc__ox *x, const Onnx__NodeProto *n) {
  int64_t axes[TC__OX_RANK], dims[TC__OX_RANK];
  int cnt, a, mask = 0, mean, msq;
  th_status rc = tc__ox_attr_ints(x, n, "axes", axes, TC__OX_RANK, &cnt);
  if (rc == TH_OK) rc = tc__ox_float_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  if (cnt < 0) {
    axes[0] = 0, axes[1] = 2, axes[2] = 3;
    cnt = 3;
  }
  int r = tc__ox_tdims(x, a, dims);
  for (int k = 0; k < cnt && rc == TH_OK; k++) {
    int ax;
    rc = tc__ox_axis(x, n, axes[k], r, &ax);
    if (rc == TH_OK && (mask >> ax & 1))
      rc = tc__ox_nfail(x, n, TH_ERR_INVALID, "axis %lld is listed twice", (long long)axes[k]);
    mask |= 1 << ax;
  }
  if (rc != TH_OK) return rc;
  if (cnt == 0) return tc__ox_nfail(x, n, TH_ERR_INVALID, "axes is empty (at least one axis)");
  tc_graph *g = x->g;
  rc = tc__ox_reduce_axes(x, n, a, mask, TC_REDUCE_MEAN, 1, &mean);
  if (rc == TH_OK && mean >= 0) {
    int sq = tc_graph_mul(g, a, a);
    rc = tc__ox_bind_node(x, n, NULL, sq);
    if (rc == TH_OK) rc = tc__ox_reduce_axes(x, n, sq, mask, TC_REDUCE_MEAN, 1, &msq);
  }
  if (rc != TH_OK || mean < 0 || msq < 0) return rc;
  int var = tc_graph_sub(g, msq, tc_graph_mul(g, mean, mean));
  int sd = tc_graph_affine(g, tc_graph_math(g, var, TC_UNARY_SQRT, 0, 0), 1.0f, 1e-9f);
  int id = tc_graph_div(g, tc_graph_sub(g, a, mean), sd);
  if (id < 0) return tc__ox_nfail(x, n, TH_ERR_INVALID, "%s", tc_graph_error(g));
  return tc__ox_set_node(x, n, 0, id);
}

/* LRN (opsets 1, 13) over the channels of [N, C, ...]: x / (bias + alpha / size * S)^beta, S the
 * sum of x^2 over channels [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)] within [0, C).
 * S is band [1, C, C] (expanded to N) times the squares as [N, C, spatial]. */
th_status tc__ox_c_lrn(tc__ox *x, const Onnx__NodeProto *n) {
  int64_t size, dims[TC__OX_RANK];
  float alpha, beta, bias;
  int a, band, pw;
  float *m;
  th_status rc = tc__ox_attr_i(x, n, "size", 0, &size);
  if (rc == TH_OK) rc = tc__ox_attr_f(x, n, "alpha", 1e-4f, &alpha);
  if (rc == TH_OK) rc = tc__ox_attr_f(x, n, "beta", 0.75f, &beta);
  if (rc == TH_OK) rc = tc__ox_attr_f(x, n, "bias", 1.0f, &bias);
  if (rc != TH_OK) return rc;
  if (size < 1)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "size %lld must be at least 1 (a required attribute)",
                        (long long)size);
  if (!isfinite(alpha) || !isfinite(beta) || !isfinite(bias))
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "alpha %g, beta %g and bias %g must be finite", alpha,
                        beta, bias);
  rc = tc__ox_float_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  int r = tc__ox_tdims(x, a, dims);
  if (r < 3)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "the input has %d dimensions (at least 3)", r);
  int64_t C = dims[1], bd[3] = {1, C, C}, flat[3] = {dims[0], C, 1};
  for (int d = 2; d < r; d++) flat[2] *= dims[d];
  if (C > 4096)
    return tc__ox_unsupported(x, n, "it has %lld channels (at most 4096)", (long long)C);
  rc = tc__ox_mask_const(x, n, "band", 3, bd, &band, &m);
  if (rc == TH_OK && band >= 0) rc = tc__ox_scalar_const(x, n, "beta", beta, &pw);
  if (rc != TH_OK || band < 0 || pw < 0) return rc;
  int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
  for (int64_t c = 0; c < C; c++) /* row c: the window of output channel c */
    for (int64_t i = c - lo < 0 ? 0 : c - lo; i <= c + hi && i < C; i++) m[c * C + i] = 1.0f;
  tc_graph *g = x->g;
  int sq = tc_graph_mul(g, a, a), id;
  rc = tc__ox_bind_node(x, n, NULL, sq);
  if (rc == TH_OK) rc = tc__ox_reshape_node(x, n, sq, flat, 3, &sq);
  if (rc != TH_OK || sq < 0) return rc;
  int ed[3] = {(int)dims[0], (int)C, (int)C};
  int s = tc_graph_matmul(g, tc_graph_expand(g, band, 3, ed), sq, 0, 0, 1.0f);
  s = tc_graph_affine(g, s, alpha / (float)size, bias);
  s = tc_graph_binary(g, s, pw, TC_BINARY_POW);
  rc = tc__ox_bind_node(x, n, NULL, s);
  if (rc == TH_OK) rc = tc__ox_reshape_node(x, n, s, dims, r, &id);
  if (rc != TH_OK || id < 0) return rc;
  id = tc_graph_div(g, a, id);
  if (id < 0) return tc__ox_nfail(x, n, TH_ERR_INVALID, "%s", tc_graph_error(g));
  return tc__ox_set_node(x, n, 0, id);
}

/* ---- GridSample ---------------------------------------------------------------------------- */

enum { TC__GS_NEAREST, TC__GS_LINEAR, TC__GS_CUBIC };
enum { TC__GS_ZEROS, TC__GS_BORDER, TC__GS_REFLECTION };

/* The taps of one spatial axis: per tap, its integer index (a float node [N, P]), its weight (-1:
 * one) and whether it lies inside (zeros padding; -1: always). */
typedef struct tc__gs_taps {
  int n;
  int idx[4], w[4], in[4];
} tc__gs_taps;

/* A node computing ONNX's reflection of v into [lo, hi] (the identity inside), period a constant
 * [1] holding 2 (hi - lo): lo + rng - | fmod(|v - lo|, 2 rng) - rng |, a triangle wave; 0 when rng
 * is 0. */
static int tc__gs_reflect(tc_graph *g, int v, int period, double lo, double hi) {
  float rng = (float)(hi - lo);
  if (rng == 0.0f) return tc_graph_affine(g, v, 0.0f, 0.0f);
  int d = tc_graph_math(g, tc_graph_affine(g, v, 1.0f, (float)-lo), TC_UNARY_ABS, 0, 0);
  d = tc_graph_affine(g, tc_graph_binary(g, d, period, TC_BINARY_FMOD), 1.0f, -rng);
  return tc_graph_affine(g, tc_graph_math(g, d, TC_UNARY_ABS, 0, 0), -1.0f, (float)lo + rng);
}

/* Keys' cubic convolution weight (A = -0.75) of a tap at distance s (a node) in [1, 2]: ((A s - 5A)
 * s + 8A) s - 4A; in [0, 1]: ((A + 2) s - (A + 3)) s s + 1. */
static int tc__gs_cubic_w(tc_graph *g, int s, int far) {
  const float A = -0.75f;
  if (far) {
    int p = tc_graph_mul(g, tc_graph_affine(g, s, A, -5.0f * A), s);
    return tc_graph_affine(g, tc_graph_mul(g, tc_graph_affine(g, p, 1.0f, 8.0f * A), s), 1.0f,
                           -4.0f * A);
  }
  int p = tc_graph_mul(g, tc_graph_affine(g, s, A + 2.0f, -(A + 3.0f)), s);
  return tc_graph_affine(g, tc_graph_mul(g, p, s), 1.0f, 1.0f);
}

/* The taps along one axis of length L for the normalised coordinates c [N, P], as ONNX's
 * reference: denormalised (align_corners: -1 and 1 are the centres of the end pixels, else their
 * outer edges), rounded half to even (nearest), brought inside [lo, hi] by the padding when outside
 * it (border: clamped to [0, L - 1], which moves cubic's taps; reflection: reflected), then the
 * taps at floor and around it, each index again clamped (border), reflected (reflection) or checked
 * (zeros). */
static th_status tc__gs_axis(tc__ox *x, const Onnx__NodeProto *n, int c, int64_t L, int align,
                             int mode, int pad, char axis, tc__gs_taps *t) {
  tc_graph *g = x->g;
  double lo = align ? 0.0 : -0.5, hi = align ? (double)L - 1 : (double)L - 0.5;
  float top = (float)(L - 1);
  int period = -1;
  if (pad == TC__GS_REFLECTION) {
    char tag[16];
    snprintf(tag, sizeof tag, "period_%c", axis);
    th_status rc = tc__ox_scalar_const(x, n, tag, (float)(2.0 * (hi - lo)), &period);
    if (rc != TH_OK || period < 0) return rc;
  }
  int v = tc_graph_affine(g, c, align ? top / 2.0f : (float)L / 2.0f, top / 2.0f);
  if (mode == TC__GS_NEAREST) v = tc_graph_math(g, v, TC_UNARY_ROUND, 0, 0);
  if (pad == TC__GS_BORDER && !align) { /* clamped only from outside [-0.5, L - 0.5] */
    int in = tc_graph_binary(g, v, tc_graph_clip(g, v, (float)lo, (float)hi), TC_BINARY_EQ);
    v = tc_graph_add(g, tc_graph_binary(g, in, v, TC_BINARY_TAKE),
                     tc_graph_binary(g, in, tc_graph_clip(g, v, 0.0f, top), TC_BINARY_LEAVE));
  } else if (pad == TC__GS_BORDER) {
    v = tc_graph_clip(g, v, 0.0f, top);
  }
  if (pad == TC__GS_REFLECTION) v = tc__gs_reflect(g, v, period, lo, hi);
  int f = mode == TC__GS_NEAREST ? v : tc_graph_math(g, v, TC_UNARY_FLOOR, 0, 0);
  int s = mode == TC__GS_NEAREST ? -1 : tc_graph_sub(g, v, f); /* in [0, 1) */
  t->n = mode == TC__GS_NEAREST ? 1 : mode == TC__GS_LINEAR ? 2 : 4;
  int first = mode == TC__GS_CUBIC ? -1 : 0;
  for (int k = 0; k < t->n; k++) {
    int i = k + first == 0 ? f : tc_graph_affine(g, f, 1.0f, (float)(k + first));
    int in = -1;
    if (pad == TC__GS_REFLECTION) i = tc__gs_reflect(g, i, period, lo, hi); /* still integral */
    if (pad != TC__GS_BORDER) { /* inside exactly when clamping leaves it */
      int cl = tc_graph_clip(g, i, 0.0f, top);
      if (pad == TC__GS_ZEROS) in = tc_graph_binary(g, i, cl, TC_BINARY_EQ);
      i = cl;
    } else {
      i = tc_graph_clip(g, i, 0.0f, top);
    }
    int w = -1;
    if (mode == TC__GS_LINEAR) w = k == 0 ? tc_graph_affine(g, s, -1.0f, 1.0f) : s;
    if (mode == TC__GS_CUBIC) /* distances 1 + s, s, 1 - s, 2 - s */
      w = tc__gs_cubic_w(g,
                         k == 1 ? s : tc_graph_affine(g, s, k ? -1.0f : 1.0f, k ? k - 1.0f : 1.0f),
                         k == 0 || k == 3);
    t->idx[k] = i, t->w[k] = w, t->in[k] = in;
    if (i < 0 || (mode != TC__GS_NEAREST && w < 0) || (pad == TC__GS_ZEROS && in < 0))
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "%s", tc_graph_error(g));
  }
  return TH_OK;
}

/* GridSample (opsets 16 and 20) of X [N, C, H, W] at grid [N, Ho, Wo, 2] ((x, y) in [-1, 1]):
 * every tap of the (1, 2 x 2 or 4 x 4) neighbourhood is a row of the channels-last data
 * [N * H * W + 1, C], whose extra row of zeros is what a tap outside reads (zeros padding), fetched
 * by TC_OP_GATHER at the index n * H * W + y * W + x computed in float32 (exact: below 2^24), then
 * weighted and summed as [N, P, C]. 5-D inputs (opset 20's volumetric form) are refused. */
th_status tc__ox_c_grid_sample(tc__ox *x, const Onnx__NodeProto *n) {
  char mode_s[16], pad_s[16];
  int64_t align;
  int a, gr, mode, pad;
  int v20 = x->opset >= 20;
  th_status rc = tc__ox_attr_s(x, n, "mode", v20 ? "linear" : "bilinear", mode_s, sizeof mode_s);
  if (rc == TH_OK) rc = tc__ox_attr_s(x, n, "padding_mode", "zeros", pad_s, sizeof pad_s);
  if (rc == TH_OK) rc = tc__ox_attr_i(x, n, "align_corners", 0, &align);
  if (rc != TH_OK) return rc;
  if (strcmp(mode_s, "nearest") == 0)
    mode = TC__GS_NEAREST;
  else if (strcmp(mode_s, v20 ? "linear" : "bilinear") == 0)
    mode = TC__GS_LINEAR;
  else if (strcmp(mode_s, v20 ? "cubic" : "bicubic") == 0)
    mode = TC__GS_CUBIC;
  else
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "mode '%s' is not one of %s at opset %lld", mode_s,
                        v20 ? "nearest, linear, cubic" : "nearest, bilinear, bicubic",
                        (long long)x->opset);
  if (strcmp(pad_s, "zeros") == 0)
    pad = TC__GS_ZEROS;
  else if (strcmp(pad_s, "border") == 0)
    pad = TC__GS_BORDER;
  else if (strcmp(pad_s, "reflection") == 0)
    pad = TC__GS_REFLECTION;
  else
    return tc__ox_nfail(x, n, TH_ERR_INVALID,
                        "padding_mode '%s' is not one of zeros, border, reflection", pad_s);
  if (align != 0 && align != 1)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "align_corners %lld must be 0 or 1",
                        (long long)align);
  rc = tc__ox_float_in(x, n, 0, &a);
  if (rc == TH_OK && a >= 0) rc = tc__ox_float_in(x, n, 1, &gr);
  if (rc != TH_OK || a < 0 || gr < 0) return rc;
  int64_t xd[TC__OX_RANK], gd[TC__OX_RANK];
  int r = tc__ox_tdims(x, a, xd), rg = tc__ox_tdims(x, gr, gd);
  if (r == 5)
    return tc__ox_unsupported(x, n, "a volumetric (5-D) input is not supported (4-D only)");
  if (r != 4 || rg != 4 || gd[0] != xd[0] || gd[3] != 2)
    return tc__ox_nfail(x, n, TH_ERR_INVALID,
                        "X must be [N, C, H, W] and grid [N, Ho, Wo, 2] (ranks %d and %d, N %lld "
                        "and %lld, grid's last dimension %lld)",
                        r, rg, (long long)xd[0], (long long)(rg > 0 ? gd[0] : 0),
                        (long long)(rg > 0 ? gd[rg - 1] : 0));
  int64_t N = xd[0], C = xd[1], H = xd[2], W = xd[3], P = gd[1] * gd[2], Z = N * H * W;
  if (Z + 1 > ((int64_t)1 << 24))
    return tc__ox_unsupported(x, n, "N * H * W = %lld pixels (at most 2^24 - 1)", (long long)Z);
  tc_graph *g = x->g;
  /* data: channels last, one zero row appended */
  int64_t rows[2] = {Z, C}, zd[2] = {1, C}, bd[2] = {N, 1}, gp[3] = {N, P, 2}, w3[3] = {N, P, 1};
  int data, zero, boff, gflat, perm[4] = {0, 2, 3, 1};
  float *zp, *bp;
  data = tc_graph_transpose(g, a, perm);
  rc = tc__ox_bind_node(x, n, NULL, data);
  if (rc == TH_OK) rc = tc__ox_reshape_node(x, n, data, rows, 2, &data);
  if (rc == TH_OK && data >= 0) rc = tc__ox_mask_const(x, n, "zero_row", 2, zd, &zero, &zp);
  if (rc == TH_OK && zero >= 0) rc = tc__ox_mask_const(x, n, "batch_offset", 2, bd, &boff, &bp);
  if (rc == TH_OK && boff >= 0) rc = tc__ox_reshape_node(x, n, gr, gp, 3, &gflat);
  if (rc != TH_OK || data < 0 || zero < 0 || boff < 0 || gflat < 0) return rc;
  for (int64_t i = 0; i < N; i++) bp[i] = (float)(i * H * W);
  int cat[2] = {data, zero};
  data = tc_graph_concat_axis(g, 2, cat, 0);
  tc__gs_taps ty, tx;
  rc = tc__ox_bind_node(x, n, NULL, data);
  if (rc == TH_OK)
    rc = tc__gs_axis(x, n, tc_graph_select(g, gflat, 2, 0), W, (int)align, mode, pad, 'x', &tx);
  if (rc == TH_OK)
    rc = tc__gs_axis(x, n, tc_graph_select(g, gflat, 2, 1), H, (int)align, mode, pad, 'y', &ty);
  int acc = -1;
  for (int i = 0; rc == TH_OK && i < ty.n; i++) {
    int row = tc_graph_add(g, tc_graph_affine(g, ty.idx[i], (float)W, 0.0f), boff);
    for (int j = 0; rc == TH_OK && j < tx.n; j++) {
      int at = tc_graph_add(g, row, tx.idx[j]), in = -1, w = -1;
      if (pad == TC__GS_ZEROS) { /* outside: the zero row Z */
        in = tc_graph_mul(g, ty.in[i], tx.in[j]);
        at = tc_graph_affine(g, tc_graph_mul(g, in, tc_graph_affine(g, at, 1.0f, (float)-Z)), 1.0f,
                             (float)Z);
      }
      int val = tc_graph_gather(g, data, tc_graph_cast(g, at, TC_DTYPE_I64), 0, 0, 0, 0);
      if (mode != TC__GS_NEAREST) {
        w = tc_graph_mul(g, ty.w[i], tx.w[j]);
        rc = tc__ox_bind_node(x, n, NULL, w);
        if (rc == TH_OK) rc = tc__ox_reshape_node(x, n, w, w3, 3, &w);
        if (rc != TH_OK || w < 0) return rc;
        val = tc_graph_mul(g, val, w);
      }
      acc = acc < 0 ? val : tc_graph_add(g, acc, val);
      rc = tc__ox_bind_node(x, n, NULL, acc);
    }
  }
  if (rc != TH_OK) return rc;
  int64_t od[4] = {N, C, gd[1], gd[2]};
  int back[3] = {0, 2, 1}, id = tc_graph_transpose(g, acc, back);
  rc = tc__ox_bind_node(x, n, NULL, id);
  if (rc == TH_OK) rc = tc__ox_reshape_node(x, n, id, od, 4, &id);
  if (rc != TH_OK || id < 0) return rc;
  return tc__ox_set_node(x, n, 0, id);
}
