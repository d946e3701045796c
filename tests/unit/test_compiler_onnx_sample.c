/* Tests of the ONNX importer's local normalisations, shrinkage and sampling (issue 38;
 * onnx_ops_sample.c): Shrink (hard and soft, with bias; inf and NaN), MeanVarianceNormalization
 * over its default and other axes, LRN with odd and even window sizes, GridSample in every mode,
 * padding and align_corners at opsets 16 and 20 (grids with points outside [-1, 1], far ones and
 * ties of the nearest rounding), imported from models built in C (onnx_build.h) at batch 1 and 3
 * and run by the reference interpreter against naive loops in double written from ONNX's reference,
 * and the refusals of bad attributes. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "onnx.h"
#include "onnx_build.h"
#include "onnx_import_test.h"
#include "ref/ref.h"
#include "th_test.h"

#define F32 ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT

/* Runs g on the nin inputs (want[] elements of output 0 in y) and counts the elements of y farther
 * than tol (relative to max(1, |want|)) from want; NaN must meet NaN. */
static int ts_run(tc_graph *g, const void **ins, float *y, const double *want, int64_t cnt,
                  double tol, const char *what) {
  char err[512];
  void *outs[1] = {y};
  th_status rc = tc_ref_run_io(g, ins, outs, err, sizeof err);
  CHECK(rc == TH_OK);
  if (rc != TH_OK) {
    fprintf(stderr, "%s: %s\n", what, err);
    return 1;
  }
  int bad = 0;
  for (int64_t e = 0; e < cnt; e++) {
    double w = want[e], d = fabs((double)y[e] - w), s = fabs(w) > 1 ? fabs(w) : 1;
    int ok = isnan(w) ? isnan(y[e]) : isinf(w) ? y[e] == w : d <= tol * s;
    if (!ok && bad++ < 4) fprintf(stderr, "%s: [%lld] %g, want %g\n", what, (long long)e, y[e], w);
  }
  return bad;
}

/* Shrink of x [N, 3, 7] with bias and lambd (has: attributes given, else the defaults 0, 0.5). */
static void ts_shrink(int batch, int has, float bias, float lambd) {
  tb *b = tb_new(9);
  tb_input(b, "x", F32, 3, (int64_t[]){-1, 3, 7});
  Onnx__NodeProto *n = tb_node(b, "Shrink", "s", "x", "y");
  if (has) {
    tb_attr_f(b, n, "bias", bias);
    tb_attr_f(b, n, "lambd", lambd);
  } else {
    bias = 0.0f, lambd = 0.5f;
  }
  tb_output(b, "y");
  char err[512];
  tc_graph *g = tb_import(b, batch, err, sizeof err, TH_OK);
  CHECK(g != NULL);
  if (!g) return;
  int64_t cnt = (int64_t)batch * 21;
  float *x = malloc((size_t)cnt * sizeof *x), *y = malloc((size_t)cnt * sizeof *y);
  double *w = malloc((size_t)cnt * sizeof *w);
  tb_fill(x, cnt, 5);
  for (int64_t e = 0; e < cnt; e++) x[e] *= 3.0f;
  x[0] = INFINITY, x[1] = -INFINITY, x[2] = NAN, x[3] = lambd, x[4] = -lambd;
  for (int64_t e = 0; e < cnt; e++) /* ONNX: NaN compares false both ways: 0 */
    w[e] = x[e] < -lambd ? (double)(x[e] + bias) : x[e] > lambd ? (double)(x[e] - bias) : 0.0;
  const void *ins[1] = {x};
  char what[96];
  snprintf(what, sizeof what, "shrink batch %d bias %g lambd %g", batch, bias, lambd);
  CHECK_EQ_INT(ts_run(g, ins, y, w, cnt, 0.0, what), 0);
  free(x);
  free(y);
  free(w);
  tc_graph_free(g);
}

TH_TEST(shrink_hard_soft) {
  for (int batch = 1; batch <= 3; batch += 2) {
    ts_shrink(batch, 0, 0, 0);
    ts_shrink(batch, 1, 1.5f, 1.5f); /* soft */
    ts_shrink(batch, 1, 0.0f, 1.0f); /* hard */
    ts_shrink(batch, 1, 0.25f, 0.0f);
  }
  return 0;
}

/* MeanVarianceNormalization of x [N, 3, 4, 5] at opset over the axes of mask (has: given as an
 * attribute, else the default [0, 2, 3]). */
static void ts_mvn(int64_t opset, int batch, int has, int mask) {
  tb *b = tb_new(opset);
  tb_input(b, "x", F32, 4, (int64_t[]){-1, 3, 4, 5});
  Onnx__NodeProto *n = tb_node(b, "MeanVarianceNormalization", "m", "x", "y");
  int64_t axes[4];
  int na = 0;
  if (!has) mask = 1 | 4 | 8;
  for (int d = 0; d < 4; d++)
    if (mask >> d & 1) axes[na++] = d - (d & 1) * 4; /* odd axes given negative */
  if (has) tb_attr_ints(b, n, "axes", na, axes);
  tb_output(b, "y");
  char err[512];
  tc_graph *g = tb_import(b, batch, err, sizeof err, TH_OK);
  CHECK(g != NULL);
  if (!g) return;
  int dims[4] = {batch, 3, 4, 5};
  int64_t cnt = (int64_t)batch * 60;
  float *x = malloc((size_t)cnt * sizeof *x), *y = malloc((size_t)cnt * sizeof *y);
  double *w = malloc((size_t)cnt * sizeof *w);
  tb_fill(x, cnt, 9);
  for (int64_t e = 0; e < cnt; e++) x[e] = x[e] * 2.0f + (float)(e % 7) * 0.1f;
  for (int64_t e = 0; e < cnt; e++) { /* the mean and mean square of e's group */
    int ce[4], cf[4];
    for (int d = 3, r = (int)e; d >= 0; d--) ce[d] = r % dims[d], r /= dims[d];
    double s = 0, s2 = 0, k = 0;
    for (int64_t f = 0; f < cnt; f++) {
      int same = 1;
      for (int d = 3, r = (int)f; d >= 0; d--) cf[d] = r % dims[d], r /= dims[d];
      for (int d = 0; d < 4; d++) same = same && ((mask >> d & 1) || cf[d] == ce[d]);
      if (same) s += x[f], s2 += (double)x[f] * x[f], k++;
    }
    w[e] = (x[e] - s / k) / (sqrt(s2 / k - (s / k) * (s / k)) + 1e-9);
  }
  const void *ins[1] = {x};
  char what[96];
  snprintf(what, sizeof what, "mvn opset %lld batch %d mask %d", (long long)opset, batch, mask);
  CHECK_EQ_INT(ts_run(g, ins, y, w, cnt, 1e-4, what), 0);
  free(x);
  free(y);
  free(w);
  tc_graph_free(g);
}

TH_TEST(mvn_axes) {
  for (int batch = 1; batch <= 3; batch += 2) {
    ts_mvn(9, batch, 0, 0);
    ts_mvn(13, batch, 0, 0);
    ts_mvn(13, batch, 1, 4 | 8);
    ts_mvn(13, batch, 1, 2);
    ts_mvn(9, batch, 1, 1 | 2 | 4 | 8);
  }
  return 0;
}

/* LRN of x [N, C, 3, 4] with size, alpha, beta, bias (has: given, else the defaults). */
static void ts_lrn(int64_t opset, int batch, int C, int size, int has, float alpha, float beta,
                   float bias) {
  tb *b = tb_new(opset);
  tb_input(b, "x", F32, 4, (int64_t[]){-1, C, 3, 4});
  Onnx__NodeProto *n = tb_node(b, "LRN", "l", "x", "y");
  tb_attr_i(b, n, "size", size);
  if (has) {
    tb_attr_f(b, n, "alpha", alpha);
    tb_attr_f(b, n, "beta", beta);
    tb_attr_f(b, n, "bias", bias);
  } else {
    alpha = 1e-4f, beta = 0.75f, bias = 1.0f;
  }
  tb_output(b, "y");
  char err[512];
  tc_graph *g = tb_import(b, batch, err, sizeof err, TH_OK);
  CHECK(g != NULL);
  if (!g) return;
  int64_t S = 12, cnt = (int64_t)batch * C * S;
  float *x = malloc((size_t)cnt * sizeof *x), *y = malloc((size_t)cnt * sizeof *y);
  double *w = malloc((size_t)cnt * sizeof *w);
  tb_fill(x, cnt, 13);
  for (int64_t e = 0; e < cnt; e++) x[e] *= 4.0f;
  int lo = (size - 1) / 2, hi = size - 1 - lo;
  for (int64_t e = 0; e < cnt; e++) {
    int64_t s = e % S, c = e / S % C, bn = e / S / C;
    double sum = 0;
    for (int64_t i = c - lo; i <= c + hi; i++)
      if (i >= 0 && i < C) sum += (double)x[(bn * C + i) * S + s] * x[(bn * C + i) * S + s];
    w[e] = x[e] / pow(bias + alpha / size * sum, beta);
  }
  const void *ins[1] = {x};
  char what[96];
  snprintf(what, sizeof what, "lrn batch %d C %d size %d", batch, C, size);
  CHECK_EQ_INT(ts_run(g, ins, y, w, cnt, 1e-5, what), 0);
  free(x);
  free(y);
  free(w);
  tc_graph_free(g);
}

TH_TEST(lrn_windows) {
  for (int batch = 1; batch <= 3; batch += 2) {
    ts_lrn(13, batch, 5, 3, 0, 0, 0, 0);
    ts_lrn(1 + 12 * (batch == 1), batch, 5, 1, 1, 0.5f, 0.75f, 2.0f);
    ts_lrn(13, batch, 6, 2, 1, 0.3f, 1.0f, 1.0f); /* even: one more channel above than below */
    ts_lrn(13, batch, 6, 4, 1, 0.3f, 0.5f, 1.5f);
    ts_lrn(13, batch, 4, 9, 1, 0.2f, 0.75f, 1.0f); /* wider than C */
  }
  return 0;
}

/* One node of op_type on x [N, 4, 3, 3] with one attribute set: import fails with want and an
 * error holding both needles. */
static void ts_refuse(const char *op, const char *attr, int is_f, float v, th_status want,
                      const char *needle, const char *needle2) {
  tb *b = tb_new(13);
  tb_input(b, "x", F32, 4, (int64_t[]){-1, 4, 3, 3});
  Onnx__NodeProto *n = tb_node(b, op, "bad", "x", "y");
  if (attr && is_f) tb_attr_f(b, n, attr, v);
  if (attr && !is_f) tb_attr_ints(b, n, attr, 2, (int64_t[]){(int64_t)v, (int64_t)v});
  tb_output(b, "y");
  char err[512];
  CHECK(tb_import(b, 1, err, sizeof err, want) == NULL);
  int ok = strstr(err, "'bad'") && strstr(err, needle) && (!needle2 || strstr(err, needle2));
  if (!ok) fprintf(stderr, "%s %s: %s\n", op, attr ? attr : "", err);
  CHECK(ok);
}

TH_TEST(sample_refusals) {
  ts_refuse("LRN", NULL, 0, 0, TH_ERR_INVALID, "size 0", "at least 1");
  ts_refuse("Shrink", "lambd", 1, INFINITY, TH_ERR_INVALID, "lambd", "finite");
  ts_refuse("MeanVarianceNormalization", "axes", 0, 2, TH_ERR_INVALID, "axis 2", "twice");
  ts_refuse("MeanVarianceNormalization", "axes", 0, 4, TH_ERR_INVALID, "axis", "");
  return 0;
}

/* ---- GridSample: a naive reference of ONNX's, per output pixel ---- */

static double gs_reflect(double v, double lo, double hi) {
  double rng = hi - lo;
  if (rng == 0) return lo;
  if (v < lo || v > hi) {
    double dx = v < lo ? lo - v : v - hi;
    int64_t k = (int64_t)(dx / rng);
    double r = dx - (double)k * rng;
    int even = k % 2 == 0;
    return v < lo ? (even ? lo + r : hi - r) : (even ? hi - r : lo + r);
  }
  return v;
}

/* plane[i * W + j] with i, j resolved by the padding (0 outside for zeros). */
static double gs_pixel(const float *plane, int H, int W, int64_t i, int64_t j, int pad, int align) {
  int64_t L[2] = {H, W}, v[2] = {i, j};
  for (int d = 0; d < 2; d++) {
    if (pad == 0 && (v[d] < 0 || v[d] >= L[d])) return 0.0;
    if (pad == 1) v[d] = v[d] < 0 ? 0 : v[d] > L[d] - 1 ? L[d] - 1 : v[d];
    if (pad == 2)
      v[d] = (int64_t)gs_reflect((double)v[d], align ? 0.0 : -0.5,
                                 align ? (double)L[d] - 1 : (double)L[d] - 0.5);
  }
  return plane[v[0] * W + v[1]];
}

static void gs_cubic(double t, double *c) {
  const double A = -0.75;
  double u = t + 1, w = 1 - t, z = 2 - t;
  c[0] = ((A * u - 5 * A) * u + 8 * A) * u - 4 * A;
  c[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
  c[2] = ((A + 2) * w - (A + 3)) * w * w + 1;
  c[3] = ((A * z - 5 * A) * z + 8 * A) * z - 4 * A;
}

/* mode 0 nearest, 1 linear, 2 cubic; pad 0 zeros, 1 border, 2 reflection. */
static double gs_ref(const float *plane, int H, int W, double gx, double gy, int mode, int pad,
                     int align) {
  int L[2] = {H, W};
  double c[2] = {gy, gx};
  for (int d = 0; d < 2; d++) {
    double lo = align ? 0.0 : -0.5, hi = align ? L[d] - 1.0 : L[d] - 0.5;
    c[d] = align ? (c[d] + 1) / 2 * (L[d] - 1) : ((c[d] + 1) * L[d] - 1) / 2;
    if (mode == 0) c[d] = nearbyint(c[d]); /* ties to even */
    if (c[d] < lo || c[d] > hi) {
      if (pad == 1) c[d] = c[d] < 0 ? 0 : c[d] > L[d] - 1 ? L[d] - 1 : c[d];
      if (pad == 2) c[d] = gs_reflect(c[d], lo, hi);
    }
  }
  if (mode == 0) return gs_pixel(plane, H, W, (int64_t)c[0], (int64_t)c[1], pad, align);
  int64_t f[2] = {(int64_t)floor(c[0]), (int64_t)floor(c[1])};
  double wy[4], wx[4];
  int taps = mode == 1 ? 2 : 4, first = mode == 1 ? 0 : -1;
  if (mode == 1) {
    wy[0] = 1 - (c[0] - f[0]), wy[1] = c[0] - f[0];
    wx[0] = 1 - (c[1] - f[1]), wx[1] = c[1] - f[1];
  } else {
    gs_cubic(c[0] - f[0], wy);
    gs_cubic(c[1] - f[1], wx);
  }
  double sum = 0;
  for (int i = 0; i < taps; i++) {
    double row = 0;
    for (int j = 0; j < taps; j++)
      row += wx[j] * gs_pixel(plane, H, W, f[0] + first + i, f[1] + first + j, pad, align);
    sum += wy[i] * row;
  }
  return sum;
}

static const char *const gs_modes[2][3] = {{"nearest", "bilinear", "bicubic"},
                                           {"nearest", "linear", "cubic"}};
static const char *const gs_pads[3] = {"zeros", "border", "reflection"};

/* GridSample of X [N, C, H, W] at grid [N, Ho, Wo, 2] against gs_ref. */
static void ts_grid(int64_t opset, int batch, int mode, int pad, int align, int C, int H, int W,
                    int Ho, int Wo) {
  tb *b = tb_new(opset);
  tb_input(b, "x", F32, 4, (int64_t[]){-1, C, H, W});
  tb_input(b, "grid", F32, 4, (int64_t[]){-1, Ho, Wo, 2});
  Onnx__NodeProto *n = tb_node(b, "GridSample", "gs", "x,grid", "y");
  tb_attr_s(b, n, "mode", gs_modes[opset >= 20][mode]);
  tb_attr_s(b, n, "padding_mode", gs_pads[pad]);
  tb_attr_i(b, n, "align_corners", align);
  tb_output(b, "y");
  char err[512];
  tc_graph *g = tb_import(b, batch, err, sizeof err, TH_OK);
  CHECK(g != NULL);
  if (!g) return;
  int64_t cx = (int64_t)batch * C * H * W, cg = (int64_t)batch * Ho * Wo * 2;
  int64_t cy = (int64_t)batch * C * Ho * Wo;
  float *x = malloc((size_t)cx * sizeof *x), *gr = malloc((size_t)cg * sizeof *gr);
  float *y = malloc((size_t)cy * sizeof *y);
  double *w = malloc((size_t)cy * sizeof *w);
  tb_fill(x, cx, 17);
  tb_fill(gr, cg, 19 + (uint64_t)mode);
  for (int64_t e = 0; e < cg; e++) gr[e] *= 1.4f; /* some points outside [-1, 1] */
  static const float special[] = {-1.0f, 1.0f,  0.0f,  0.5f, -0.5f, 3.7f,
                                  -4.1f, 1.25f, -2.6f, 9.3f, -11.0f};
  for (int64_t e = 0; e < (int64_t)(sizeof special / sizeof special[0]) && e < cg; e++)
    gr[e * 3 % cg] = special[e];
  for (int64_t e = 0; e < cy; e++) {
    int64_t p = e % (Ho * Wo), bn = e / (Ho * Wo) / C, ch = e / (Ho * Wo) % C;
    const float *pt = gr + (bn * Ho * Wo + p) * 2;
    w[e] = gs_ref(x + (bn * C + ch) * H * W, H, W, pt[0], pt[1], mode, pad, align);
  }
  const void *ins[2] = {x, gr};
  char what[128];
  snprintf(what, sizeof what, "grid_sample opset %lld batch %d %s %s align %d", (long long)opset,
           batch, gs_modes[opset >= 20][mode], gs_pads[pad], align);
  CHECK_EQ_INT(ts_run(g, ins, y, w, cy, 1e-4, what), 0);
  free(x);
  free(gr);
  free(y);
  free(w);
  tc_graph_free(g);
}

TH_TEST(grid_sample_modes) {
  for (int batch = 1; batch <= 3; batch += 2)
    for (int mode = 0; mode < 3; mode++)
      for (int pad = 0; pad < 3; pad++)
        for (int align = 0; align < 2; align++)
          ts_grid(batch == 1 ? 16 : 20, batch, mode, pad, align, 2, 5, 4, 3, 6);
  ts_grid(16, 2, 2, 2, 0, 3, 1, 7, 2, 5); /* one row: reflection of a range of 1 */
  ts_grid(20, 1, 1, 1, 1, 1, 8, 8, 8, 8);
  return 0;
}

/* GridSample with a bad attribute or shape: import fails with want and an error holding needle. */
static void ts_grid_refuse(int64_t opset, const char *attr, const char *val, int rank,
                           th_status want, const char *needle) {
  tb *b = tb_new(opset);
  tb_input(b, "x", F32, rank, (int64_t[]){-1, 2, 4, 4, 4});
  tb_input(b, "grid", F32, rank, (int64_t[]){-1, 3, 3, 3, rank - 2});
  Onnx__NodeProto *n = tb_node(b, "GridSample", "bad", "x,grid", "y");
  if (attr) tb_attr_s(b, n, attr, val);
  tb_output(b, "y");
  char err[512];
  CHECK(tb_import(b, 1, err, sizeof err, want) == NULL);
  int ok = strstr(err, "bad") && strstr(err, needle);
  if (!ok) fprintf(stderr, "GridSample %s %s: %s\n", attr ? attr : "", val ? val : "", err);
  CHECK(ok);
}

TH_TEST(grid_sample_refusals) {
  ts_grid_refuse(16, "mode", "linear", 4, TH_ERR_INVALID, "nearest, bilinear, bicubic");
  ts_grid_refuse(20, "mode", "bicubic", 4, TH_ERR_INVALID, "nearest, linear, cubic");
  ts_grid_refuse(16, "padding_mode", "wrap", 4, TH_ERR_INVALID, "zeros, border, reflection");
  ts_grid_refuse(20, NULL, NULL, 5, TH_ERR_UNSUPPORTED, "volumetric");
  ts_grid_refuse(15, NULL, NULL, 4, TH_ERR_UNSUPPORTED, "16..21");
  ts_grid_refuse(16, NULL, NULL, 3, TH_ERR_INVALID, "ranks 3 and 3");
  return 0;
}
