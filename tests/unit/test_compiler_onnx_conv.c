/* Tests of the ONNX importer's convolution family and resampling (compiler/import/onnx_ops_conv.c,
 * issue 38): grouped and dilated Conv, ConvTranspose, Resize, DepthToSpace and SpaceToDepth are
 * lowered onto conv, dense and views; each model built here (onnx_build.h) is imported, run by the
 * reference interpreter, and compared with naive loops written from the ONNX definitions. The
 * refusals are checked for their status and words. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "onnx.h"
#include "onnx_build.h"
#include "ref/ref.h"
#include "th_test.h"

/* Imports p at batch (weights loaded); on failure err must hold `want`. */
static tc_graph *tv_import(const uint8_t *p, size_t len, int batch, th_status want_rc,
                           const char *want) {
  tc_onnx_opts o = {"test", batch, NULL, 1};
  tc_graph *g = NULL;
  char err[2048] = "";
  th_status rc = tc_onnx_import(p, len, &o, &g, NULL, err, sizeof err);
  if (rc != want_rc || (want && !strstr(err, want)))
    fprintf(stderr, "import: %s (%s), expected %s with '%s'\n", th_status_name(rc), err,
            th_status_name(want_rc), want ? want : "");
  CHECK(rc == want_rc);
  if (want) CHECK(strstr(err, want) != NULL);
  return g;
}

/* Runs g on x; returns output k (malloc'd), its shape checked against want (4-D). */
static float *tv_run(const tc_graph *g, const float *x, int k, const int *want) {
  const tc_tensor *t = &g->nodes[g->outputs[k]].out;
  CHECK_EQ_INT(t->ndim, 4);
  for (int d = 0; d < 4; d++) CHECK_EQ_INT(t->shape[d], want[d]);
  void *outs[4] = {NULL, NULL, NULL, NULL};
  for (int i = 0; i < g->noutputs; i++)
    outs[i] = malloc((size_t)tc_tensor_bytes(&g->nodes[g->outputs[i]].out));
  const void *ins[1] = {x};
  char err[256] = "";
  th_status rc = tc_ref_run_io(g, ins, outs, err, sizeof err);
  if (rc != TH_OK) fprintf(stderr, "ref: %s\n", err);
  CHECK(rc == TH_OK);
  for (int i = 0; i < g->noutputs; i++)
    if (i != k) free(outs[i]);
  return outs[k];
}

static int tv_count(const tc_graph *g, tc_op op) {
  int c = 0;
  for (int i = 0; i < g->nnodes; i++) c += g->nodes[i].op == op;
  return c;
}

/* x [N, C, H, W] at (n, c, y, xx), zero outside. */
static double tv_at(const float *x, int C, int H, int W, int n, int c, int y, int xx) {
  if (y < 0 || y >= H || xx < 0 || xx >= W) return 0;
  return x[(((size_t)n * C + c) * H + y) * W + xx];
}

/* A Conv of G groups (2 input and 3 output channels each) with a 3x3 kernel, dilations dil,
 * strides 1 x 2 and pads 2, 1, 1, 0 (top, left, bottom, right) over x [2, 4, 5, 6] imported: the
 * conv node's groups, kernel and dilations must be want_groups, want_kh x want_kw and dil (one conv
 * of its taps, not expanded weights), and the reference interpreter must compute the ONNX
 * definition. */
static void tv_grouped_conv(int G, const int64_t *dil, int want_groups, int want_kh, int want_kw) {
  enum { N = 2, C = 4, H = 5, W = 6, K = 3 };
  int M = 3 * G;
  tb *b = tb_new(13);
  int64_t xd[4] = {-1, C, H, W}, wd[4] = {M, C / G, K, K}, bd[1] = {M};
  tb_input(b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, xd);
  tb_param(b, "w", 4, wd, 0);
  tb_param(b, "bias", 1, bd, 0);
  Onnx__NodeProto *n = tb_node(b, "Conv", "gconv", "x,w,bias", "y");
  static const int64_t st[2] = {1, 2}, pads[4] = {2, 1, 1, 0};
  tb_attr_i(b, n, "group", G);
  tb_attr_ints(b, n, "dilations", 2, dil);
  tb_attr_ints(b, n, "strides", 2, st);
  tb_attr_ints(b, n, "pads", 4, pads);
  tb_output(b, "y");
  size_t len;
  uint8_t *p = tb_pack(b, &len);
  tc_graph *g = tv_import(p, len, N, TH_OK, NULL);
  CHECK(g != NULL);
  CHECK_EQ_INT(tv_count(g, TC_OP_CONV2D), 1);
  for (int i = 0; i < g->nnodes; i++)
    if (g->nodes[i].op == TC_OP_CONV2D)
      CHECK(g->nodes[i].groups == want_groups && g->nodes[i].kh == want_kh &&
            g->nodes[i].kw == want_kw &&
            (g->nodes[i].dil_h > 1 ? g->nodes[i].dil_h : 1) == dil[0] &&
            (g->nodes[i].dil_w > 1 ? g->nodes[i].dil_w : 1) == dil[1]);
  int kh = (K - 1) * (int)dil[0] + 1, kw = (K - 1) * (int)dil[1] + 1;
  int OH = H + 3 - kh + 1, OW = (W + 1 - kw) / 2 + 1;
  float x[N * C * H * W], w[12 * 4 * K * K], bias[12];
  tb_fill(x, N * C * H * W, 5);
  tb_data("w", M * (C / G) * K * K, 0, w);
  tb_data("bias", M, 0, bias);
  const int shape[4] = {N, M, OH, OW};
  float *y = tv_run(g, x, 0, shape);
  double worst = 0;
  for (int nn = 0; nn < N; nn++)
    for (int m = 0; m < M; m++)
      for (int oy = 0; oy < OH; oy++)
        for (int ox = 0; ox < OW; ox++) {
          int grp = m / (M / G);
          double acc = bias[m];
          for (int ci = 0; ci < C / G; ci++)
            for (int ky = 0; ky < K; ky++)
              for (int kx = 0; kx < K; kx++)
                acc += w[((m * (C / G) + ci) * K + ky) * K + kx] *
                       tv_at(x, C, H, W, nn, grp * (C / G) + ci, oy - 2 + ky * (int)dil[0],
                             ox * 2 - 1 + kx * (int)dil[1]);
          worst = fmax(worst, fabs(acc - y[((nn * M + m) * OH + oy) * OW + ox]));
        }
  fprintf(stderr, "conv of %d groups, dilations %dx%d: max |diff| %.3g\n", G, (int)dil[0],
          (int)dil[1], worst);
  CHECK(worst < 1e-4);
  free(y);
  tc_graph_free(g);
  free(p);
  tb_free(b);
}

/* Dilated, grouped or not (2 x 1, 3 x 2): one conv of its groups, 3x3 taps and dilations (a
 * conv2d workload of dilation, issue 38), not the conv of expanded 5x3 weights. */
TH_TEST(grouped_dilated_conv_matches_naive) {
  static const int64_t dil[2] = {2, 1}, dil32[2] = {3, 2};
  tv_grouped_conv(2, dil, 2, 3, 3);
  tv_grouped_conv(1, dil32, 1, 3, 3);
  tv_grouped_conv(4, dil32, 4, 3, 3);
  return 0;
}

/* Grouped alone (2 and 4 groups of the 4 channels; M = 3G, so not depthwise): the conv keeps its
 * groups and 3x3 kernel, a conv2d workload of groups (issue 38), not block-diagonal weights. */
TH_TEST(grouped_conv_stays_grouped) {
  static const int64_t one[2] = {1, 1};
  tv_grouped_conv(2, one, 2, 3, 3);
  tv_grouped_conv(4, one, 4, 3, 3);
  return 0;
}

/* ConvTranspose with 2 groups, strides 2 x 3, dilations 1 x 2, uneven pads and output_padding:
 * the scatter of the ONNX definition. */
TH_TEST(conv_transpose_matches_naive) {
  enum { N = 2, C = 4, H = 3, W = 4, G = 2, MG = 3, M = MG * G, KH = 3, KW = 2 };
  tb *b = tb_new(11);
  int64_t xd[4] = {-1, C, H, W}, wd[4] = {C, MG, KH, KW}, bd[1] = {M};
  tb_input(b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, xd);
  tb_param(b, "w", 4, wd, 0);
  tb_param(b, "bias", 1, bd, 0);
  Onnx__NodeProto *n = tb_node(b, "ConvTranspose", "up", "x,w,bias", "y");
  static const int64_t st[2] = {2, 3}, dil[2] = {1, 2}, pads[4] = {1, 0, 0, 1}, op[2] = {1, 0};
  tb_attr_i(b, n, "group", G);
  tb_attr_ints(b, n, "strides", 2, st);
  tb_attr_ints(b, n, "dilations", 2, dil);
  tb_attr_ints(b, n, "pads", 4, pads);
  tb_attr_ints(b, n, "output_padding", 2, op);
  tb_output(b, "y");
  size_t len;
  uint8_t *p = tb_pack(b, &len);
  tc_graph *g = tv_import(p, len, N, TH_OK, NULL);
  CHECK(g != NULL);
  CHECK_EQ_INT(tv_count(g, TC_OP_CONV2D), 1);
  /* out: H 2 * 2 + 1 + 3 - 1 - 0 = 7, W 3 * 3 + 0 + 3 - 0 - 1 = 11 */
  enum { OH = 7, OW = 11 };
  float x[N * C * H * W], w[C * MG * KH * KW], bias[M];
  tb_fill(x, N * C * H * W, 6);
  tb_data("w", C * MG * KH * KW, 0, w);
  tb_data("bias", M, 0, bias);
  static double want[N * M * OH * OW];
  for (int nn = 0; nn < N; nn++)
    for (int m = 0; m < M; m++)
      for (int i = 0; i < OH * OW; i++) want[(nn * M + m) * OH * OW + i] = bias[m];
  for (int nn = 0; nn < N; nn++)
    for (int c = 0; c < C; c++)
      for (int mi = 0; mi < MG; mi++)
        for (int i = 0; i < H; i++)
          for (int j = 0; j < W; j++)
            for (int ki = 0; ki < KH; ki++)
              for (int kj = 0; kj < KW; kj++) {
                int oy = i * 2 - 1 + ki, ox = j * 3 - 0 + kj * 2, m = (c / (C / G)) * MG + mi;
                if (oy < 0 || oy >= OH || ox < 0 || ox >= OW) continue;
                want[((nn * M + m) * OH + oy) * OW + ox] +=
                    (double)x[((nn * C + c) * H + i) * W + j] *
                    w[((c * MG + mi) * KH + ki) * KW + kj];
              }
  static const int shape[4] = {N, M, OH, OW};
  float *y = tv_run(g, x, 0, shape);
  double worst = 0;
  for (int i = 0; i < N * M * OH * OW; i++) worst = fmax(worst, fabs(want[i] - y[i]));
  fprintf(stderr, "conv transpose: max |diff| %.3g\n", worst);
  CHECK(worst < 1e-4);
  free(y);
  tc_graph_free(g);
  free(p);
  tb_free(b);
  return 0;
}

/* Resize (opset 13): linear half_pixel by sizes, and nearest asymmetric round_prefer_ceil by
 * scales (2.5 up, 0.5 down), against the formulas. */
TH_TEST(resize_matches_naive) {
  enum { N = 1, C = 2, H = 3, W = 4, LH = 5, LW = 7, NH = 7, NW = 2 };
  tb *b = tb_new(13);
  int64_t xd[4] = {-1, C, H, W}, four[1] = {4};
  tb_input(b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, xd);
  static const int64_t sizes[4] = {N, C, LH, LW};
  static const float scales[4] = {1, 1, 2.5f, 0.5f};
  tb_const_ints(b, "sizes", 4, sizes);
  tb_init_f(b, "scales", 1, four, scales);
  Onnx__NodeProto *n = tb_node(b, "Resize", "lin", "x,,,sizes", "yl");
  tb_attr_s(b, n, "mode", "linear");
  n = tb_node(b, "Resize", "near", "x,,scales", "yn");
  tb_attr_s(b, n, "coordinate_transformation_mode", "asymmetric");
  tb_attr_s(b, n, "nearest_mode", "round_prefer_ceil");
  tb_output(b, "yl");
  tb_output(b, "yn");
  size_t len;
  uint8_t *p = tb_pack(b, &len);
  tc_graph *g = tv_import(p, len, N, TH_OK, NULL);
  CHECK(g != NULL);
  float x[N * C * H * W];
  tb_fill(x, N * C * H * W, 7);
  static const int sl[4] = {N, C, LH, LW}, sn[4] = {N, C, NH, NW};
  float *yl = tv_run(g, x, 0, sl), *yn = tv_run(g, x, 1, sn);
  double worst = 0;
  for (int c = 0; c < C; c++)
    for (int oy = 0; oy < LH; oy++)
      for (int ox = 0; ox < LW; ox++) {
        double sy = fmin(fmax((oy + 0.5) * H / LH - 0.5, 0), H - 1);
        double sx = fmin(fmax((ox + 0.5) * W / LW - 0.5, 0), W - 1);
        int y0 = (int)sy, x0 = (int)sx, y1 = y0 + 1 < H ? y0 + 1 : y0,
            x1 = x0 + 1 < W ? x0 + 1 : x0;
        double fy = sy - y0, fx = sx - x0;
        double v = (1 - fy) * ((1 - fx) * tv_at(x, C, H, W, 0, c, y0, x0) +
                               fx * tv_at(x, C, H, W, 0, c, y0, x1)) +
                   fy * ((1 - fx) * tv_at(x, C, H, W, 0, c, y1, x0) +
                         fx * tv_at(x, C, H, W, 0, c, y1, x1));
        worst = fmax(worst, fabs(v - yl[(c * LH + oy) * LW + ox]));
      }
  for (int c = 0; c < C; c++)
    for (int oy = 0; oy < NH; oy++)
      for (int ox = 0; ox < NW; ox++) {
        int sy = (int)floor(oy / 2.5 + 0.5), sx = (int)floor(ox / 0.5 + 0.5);
        sy = sy > H - 1 ? H - 1 : sy;
        sx = sx > W - 1 ? W - 1 : sx;
        worst = fmax(worst, fabs(tv_at(x, C, H, W, 0, c, sy, sx) - yn[(c * NH + oy) * NW + ox]));
      }
  fprintf(stderr, "resize: max |diff| %.3g\n", worst);
  CHECK(worst < 1e-5);
  free(yl);
  free(yn);
  tc_graph_free(g);
  free(p);
  tb_free(b);
  return 0;
}

/* DepthToSpace in DCR and CRD order and SpaceToDepth, element by element as ONNX defines them. */
TH_TEST(depth_to_space_matches_definition) {
  enum { N = 2, C = 8, H = 2, W = 3, B = 2 };
  tb *b = tb_new(13);
  int64_t xd[4] = {-1, C, H, W};
  tb_input(b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, xd);
  Onnx__NodeProto *n = tb_node(b, "DepthToSpace", "dcr", "x", "d");
  tb_attr_i(b, n, "blocksize", B);
  n = tb_node(b, "DepthToSpace", "crd", "x", "r");
  tb_attr_i(b, n, "blocksize", B);
  tb_attr_s(b, n, "mode", "CRD");
  n = tb_node(b, "SpaceToDepth", "s2d", "d", "s");
  tb_attr_i(b, n, "blocksize", B);
  tb_output(b, "d");
  tb_output(b, "r");
  tb_output(b, "s");
  size_t len;
  uint8_t *p = tb_pack(b, &len);
  tc_graph *g = tv_import(p, len, N, TH_OK, NULL);
  CHECK(g != NULL);
  float x[N * C * H * W];
  tb_fill(x, N * C * H * W, 8);
  enum { C2 = C / (B * B), H2 = H * B, W2 = W * B };
  static const int sd[4] = {N, C2, H2, W2}, ss[4] = {N, C, H, W};
  float *d = tv_run(g, x, 0, sd), *r = tv_run(g, x, 1, sd), *s = tv_run(g, x, 2, ss);
  int bad = 0;
  for (int nn = 0; nn < N; nn++)
    for (int c = 0; c < C2; c++)
      for (int y = 0; y < H2; y++)
        for (int xx = 0; xx < W2; xx++) {
          int by = y % B, bx = xx % B, o = ((nn * C2 + c) * H2 + y) * W2 + xx;
          int dcr = (by * B + bx) * C2 + c, crd = (c * B + by) * B + bx;
          bad += d[o] != x[((nn * C + dcr) * H + y / B) * W + xx / B];
          bad += r[o] != x[((nn * C + crd) * H + y / B) * W + xx / B];
        }
  for (int i = 0; i < N * C * H * W; i++) bad += s[i] != x[i]; /* SpaceToDepth undoes DCR */
  CHECK_EQ_INT(bad, 0);
  free(d);
  free(r);
  free(s);
  tc_graph_free(g);
  free(p);
  tb_free(b);
  return 0;
}

/* Bad attributes and inputs are refused, naming the limit or the valid values. */
TH_TEST(conv_family_refusals_name_the_rule) {
  static const struct {
    const char *op, *attr, *sval;
    int64_t v[2];
    th_status rc;
    const char *want;
  } cases[] = {
      {"ConvTranspose",
       "output_padding",
       NULL,
       {2, 0},
       TH_ERR_INVALID,
       "output_padding 2 (0 .. below the stride or the dilation)"},
      {"Resize",
       "mode",
       "area",
       {0, 0},
       TH_ERR_INVALID,
       "mode 'area' is not nearest, linear or cubic"},
      {"Resize",
       "coordinate_transformation_mode",
       "corners",
       {0, 0},
       TH_ERR_INVALID,
       "'corners' is not half_pixel"},
      {"Resize", "both", NULL, {0, 0}, TH_ERR_INVALID, "give scales or sizes (not both)"},
      {"DepthToSpace",
       "blocksize",
       NULL,
       {3, 0},
       TH_ERR_INVALID,
       "blocksize 3 (1..1024) must divide"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tb *b = tb_new(13);
    int64_t xd[4] = {-1, 4, 4, 4}, wd[4] = {4, 1, 3, 3}, four[1] = {4};
    static const int64_t sizes[4] = {1, 4, 8, 8};
    static const float scales[4] = {1, 1, 2, 2};
    tb_input(b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, xd);
    tb_param(b, "w", 4, wd, 0);
    tb_const_ints(b, "sizes", 4, sizes);
    tb_init_f(b, "scales", 1, four, scales);
    const char *ins = strcmp(cases[i].op, "ConvTranspose") == 0 ? "x,w"
                      : strcmp(cases[i].op, "Resize") == 0
                          ? (strcmp(cases[i].attr, "both") == 0 ? "x,,scales,sizes" : "x,,scales")
                          : "x";
    Onnx__NodeProto *n = tb_node(b, cases[i].op, "bad", ins, "y");
    if (cases[i].sval)
      tb_attr_s(b, n, cases[i].attr, cases[i].sval);
    else if (strcmp(cases[i].attr, "blocksize") == 0)
      tb_attr_i(b, n, "blocksize", cases[i].v[0]);
    else if (strcmp(cases[i].attr, "both") != 0)
      tb_attr_ints(b, n, cases[i].attr, 2, cases[i].v);
    tb_output(b, "y");
    size_t len;
    uint8_t *p = tb_pack(b, &len);
    CHECK(tv_import(p, len, 1, cases[i].rc, cases[i].want) == NULL);
    free(p);
    tb_free(b);
  }
  return 0;
}

/* 1-D Conv (2 groups, dilation 2, pads 1 and 2) and MaxPool (3 wide, stride 2, pads 1) over
 * [N, C, L] run as 2-D windows of height 1 and come back as [N, C, L']. */
TH_TEST(conv_and_pool_1d_match_naive) {
  enum {
    N = 2,
    C = 4,
    L = 9,
    M = 6,
    G = 2,
    K = 3,
    OL = (L + 3 - 5) / 1 + 1,
    PL = (L + 2 - 3) / 2 + 1
  };
  tb *b = tb_new(13);
  int64_t xd[3] = {-1, C, L}, wd[3] = {M, C / G, K};
  tb_input(b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 3, xd);
  tb_param(b, "w", 3, wd, 0);
  Onnx__NodeProto *n = tb_node(b, "Conv", "c1", "x,w", "y");
  static const int64_t dil[1] = {2}, pads[2] = {1, 2}, k3[1] = {3}, s2[1] = {2}, p11[2] = {1, 1};
  tb_attr_i(b, n, "group", G);
  tb_attr_ints(b, n, "dilations", 1, dil);
  tb_attr_ints(b, n, "pads", 2, pads);
  n = tb_node(b, "MaxPool", "p1", "x", "z");
  tb_attr_ints(b, n, "kernel_shape", 1, k3);
  tb_attr_ints(b, n, "strides", 1, s2);
  tb_attr_ints(b, n, "pads", 2, p11);
  tb_output(b, "y");
  tb_output(b, "z");
  size_t len;
  uint8_t *p = tb_pack(b, &len);
  tc_graph *g = tv_import(p, len, N, TH_OK, NULL);
  CHECK(g != NULL);
  for (int i = 0; i < g->nnodes; i++) /* the 1-D conv: 1x3 taps, 2 columns apart */
    if (g->nodes[i].op == TC_OP_CONV2D)
      CHECK(g->nodes[i].kh == 1 && g->nodes[i].kw == K && g->nodes[i].dil_w == 2 &&
            g->nodes[i].dil_h <= 1);
  for (int k = 0; k < 2; k++) {
    const tc_tensor *t = &g->nodes[g->outputs[k]].out;
    CHECK(t->ndim == 3 && t->shape[0] == N && t->shape[1] == (k ? C : M) &&
          t->shape[2] == (k ? PL : OL));
  }
  float x[N * C * L], w[M * (C / G) * K], y[N * M * OL], z[N * C * PL];
  tb_fill(x, N * C * L, 9);
  tb_data("w", M * (C / G) * K, 0, w);
  void *outs[2] = {y, z};
  const void *ins[1] = {x};
  CHECK(tc_ref_run_io(g, ins, outs, NULL, 0) == TH_OK);
  double worst = 0;
  for (int nn = 0; nn < N; nn++)
    for (int m = 0; m < M; m++)
      for (int o = 0; o < OL; o++) {
        double acc = 0;
        for (int ci = 0; ci < C / G; ci++)
          for (int kk = 0; kk < K; kk++)
            acc += w[(m * (C / G) + ci) * K + kk] *
                   tv_at(x, C, 1, L, nn, (m / (M / G)) * (C / G) + ci, 0, o - 1 + 2 * kk);
        worst = fmax(worst, fabs(acc - y[(nn * M + m) * OL + o]));
      }
  for (int nn = 0; nn < N; nn++)
    for (int c = 0; c < C; c++)
      for (int o = 0; o < PL; o++) {
        double mx = -1e30;
        for (int kk = 0; kk < 3; kk++) {
          int i = o * 2 - 1 + kk;
          if (i >= 0 && i < L) mx = fmax(mx, x[(nn * C + c) * L + i]);
        }
        worst = fmax(worst, fabs(mx - z[(nn * C + c) * PL + o]));
      }
  fprintf(stderr, "1-D conv and pool: max |diff| %.3g\n", worst);
  CHECK(worst < 1e-4);
  tc_graph_free(g);
  free(p);
  tb_free(b);
  return 0;
}

/* PRelu with a slope per channel ([C, 1, 1], broadcast) and with one slope, and GlobalMaxPool. */
TH_TEST(prelu_and_global_max_pool_match_naive) {
  enum { N = 2, C = 3, H = 4, W = 5 };
  tb *b = tb_new(13);
  int64_t xd[4] = {-1, C, H, W}, sd[3] = {C, 1, 1}, one[1] = {1};
  static const float slopes[C] = {0.25f, -0.5f, 2.0f}, s1[1] = {0.1f};
  tb_input(b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, xd);
  tb_init_f(b, "slope", 3, sd, slopes);
  tb_init_f(b, "s1", 1, one, s1);
  tb_node(b, "PRelu", "pc", "x,slope", "y");
  tb_node(b, "PRelu", "p1", "x,s1", "z");
  tb_node(b, "GlobalMaxPool", "gmp", "x", "m");
  tb_output(b, "y");
  tb_output(b, "z");
  tb_output(b, "m");
  size_t len;
  uint8_t *p = tb_pack(b, &len);
  tc_graph *g = tv_import(p, len, N, TH_OK, NULL);
  CHECK(g != NULL);
  float x[N * C * H * W], y[N * C * H * W], z[N * C * H * W], m[N * C];
  tb_fill(x, N * C * H * W, 10);
  void *outs[3] = {y, z, m};
  const void *ins[1] = {x};
  CHECK(tc_ref_run_io(g, ins, outs, NULL, 0) == TH_OK);
  double worst = 0;
  for (int i = 0; i < N * C * H * W; i++) {
    int c = i / (H * W) % C;
    worst = fmax(worst, fabs((x[i] >= 0 ? x[i] : slopes[c] * x[i]) - y[i]));
    worst = fmax(worst, fabs((x[i] >= 0 ? x[i] : s1[0] * x[i]) - z[i]));
  }
  for (int i = 0; i < N * C; i++) {
    float mx = x[i * H * W];
    for (int k = 1; k < H * W; k++) mx = fmaxf(mx, x[i * H * W + k]);
    worst = fmax(worst, fabs(mx - m[i]));
  }
  fprintf(stderr, "prelu, global max pool: max |diff| %.3g\n", worst);
  CHECK(worst < 1e-6);
  tc_graph_free(g);
  free(p);
  tb_free(b);
  return 0;
}

/* A 1-D ConvTranspose (stride 2, pads 1 and 0, output_padding 1) over [N, C, L]. */
TH_TEST(conv_transpose_1d_matches_naive) {
  enum { N = 2, C = 2, L = 5, M = 3, K = 3, OL = 2 * (L - 1) + 1 + K - 1 };
  tb *b = tb_new(11);
  int64_t xd[3] = {-1, C, L}, wd[3] = {C, M, K};
  tb_input(b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 3, xd);
  tb_param(b, "w", 3, wd, 0);
  Onnx__NodeProto *n = tb_node(b, "ConvTranspose", "up1", "x,w", "y");
  static const int64_t st[1] = {2}, pads[2] = {1, 0}, op[1] = {1};
  tb_attr_ints(b, n, "strides", 1, st);
  tb_attr_ints(b, n, "pads", 2, pads);
  tb_attr_ints(b, n, "output_padding", 1, op);
  tb_output(b, "y");
  size_t len;
  uint8_t *p = tb_pack(b, &len);
  tc_graph *g = tv_import(p, len, N, TH_OK, NULL);
  CHECK(g != NULL);
  const tc_tensor *t = &g->nodes[g->outputs[0]].out;
  CHECK(t->ndim == 3 && t->shape[0] == N && t->shape[1] == M && t->shape[2] == OL);
  float x[N * C * L], w[C * M * K], y[N * M * OL];
  double want[N * M * OL];
  tb_fill(x, N * C * L, 11);
  tb_data("w", C * M * K, 0, w);
  memset(want, 0, sizeof want);
  for (int nn = 0; nn < N; nn++)
    for (int c = 0; c < C; c++)
      for (int m = 0; m < M; m++)
        for (int i = 0; i < L; i++)
          for (int k = 0; k < K; k++) {
            int o = i * 2 - 1 + k;
            if (o >= 0 && o < OL)
              want[(nn * M + m) * OL + o] +=
                  (double)x[(nn * C + c) * L + i] * w[(c * M + m) * K + k];
          }
  void *outs[1] = {y};
  const void *ins[1] = {x};
  CHECK(tc_ref_run_io(g, ins, outs, NULL, 0) == TH_OK);
  double worst = 0;
  for (int i = 0; i < N * M * OL; i++) worst = fmax(worst, fabs(want[i] - y[i]));
  fprintf(stderr, "1-D conv transpose: max |diff| %.3g\n", worst);
  CHECK(worst < 1e-4);
  tc_graph_free(g);
  free(p);
  tb_free(b);
  return 0;
}

/* Pad that no Conv takes: constant (value 1.5, cropping one column), reflect and edge. */
TH_TEST(pad_modes_match_naive) {
  enum { N = 2, C = 2, H = 3, W = 4 };
  static const char *const modes[3] = {"constant", "reflect", "edge"};
  /* [N, C, H, W] begins then ends: H 2 before 1 after, W 1 before, -1 (constant) or 2 after */
  static const int64_t pc[8] = {0, 0, 2, 1, 0, 0, 1, -1}, pr[8] = {0, 0, 2, 1, 0, 0, 1, 2};
  for (int md = 0; md < 3; md++) {
    tb *b = tb_new(13);
    int64_t xd[4] = {-1, C, H, W};
    const int64_t *pp = md == 0 ? pc : pr;
    tb_input(b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, xd);
    tb_const_ints(b, "pads", 8, pp);
    tb_const_f(b, "val", 1.5f);
    Onnx__NodeProto *n = tb_node(b, "Pad", "pad", md == 0 ? "x,pads,val" : "x,pads", "y");
    tb_attr_s(b, n, "mode", modes[md]);
    tb_output(b, "y");
    size_t len;
    uint8_t *p = tb_pack(b, &len);
    tc_graph *g = tv_import(p, len, N, TH_OK, NULL);
    CHECK(g != NULL);
    int OH = H + 3, OW = (int)(W + pp[3] + pp[7]);
    float x[N * C * H * W];
    tb_fill(x, N * C * H * W, 12);
    int shape[4] = {N, C, OH, OW};
    float *y = tv_run(g, x, 0, shape);
    double worst = 0;
    for (int i = 0; i < N * C; i++)
      for (int oy = 0; oy < OH; oy++)
        for (int ox = 0; ox < OW; ox++) {
          int sy = oy - 2, sx = ox - 1;
          double want;
          if (md == 0) {
            want = sy < 0 || sy >= H || sx < 0 || sx >= W ? 1.5 : x[(i * H + sy) * W + sx];
          } else {
            if (md == 1) {
              sy = sy < 0 ? -sy : sy >= H ? 2 * (H - 1) - sy : sy;
              sx = sx < 0 ? -sx : sx >= W ? 2 * (W - 1) - sx : sx;
            } else {
              sy = sy < 0 ? 0 : sy >= H ? H - 1 : sy;
              sx = sx < 0 ? 0 : sx >= W ? W - 1 : sx;
            }
            want = x[(i * H + sy) * W + sx];
          }
          worst = fmax(worst, fabs(want - y[(i * OH + oy) * OW + ox]));
        }
    fprintf(stderr, "pad %s: max |diff| %.3g\n", modes[md], worst);
    CHECK(worst < 1e-6);
    free(y);
    tc_graph_free(g);
    free(p);
    tb_free(b);
  }
  return 0;
}
