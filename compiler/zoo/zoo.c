/* The model zoo: C builders for torchvision's resnet, vgg, mobilenet_v2, squeezenet and inception_v3
 * (architectures and parameter names exactly as torchvision 0.14 defines them, inference mode: dropout is an
 * identity and inception's aux classifier is off) and TVM's testing-zoo mobilenet v1, plus a seeded weight
 * generator. Builders only declare shapes; tc_zoo_fill adds data, so FLOP and parameter counts are cheap. */
#include "zoo.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef int (*tc__builder)(tc_graph *g, int x, int variant);

typedef struct tc__zoo_def {
  tc_zoo_entry e;
  tc__builder build;
  int variant;
} tc__zoo_def;

/* ---- helpers ---------------------------------------------------------------------------------------- */

static const char *tc__nm(char *buf, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static const char *tc__nm(char *buf, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, n, fmt, ap);
  va_end(ap);
  return buf;
}

/* conv (no bias) + bn, names "<conv>" and "<bn>" */
static int tc__conv_bn(tc_graph *g, int x, const char *conv, const char *bn, int oc, int kh, int kw,
                       int s, int ph, int pw, int groups, float eps) {
  x = tc_graph_conv(g, conv, x, oc, kh, kw, s, s, ph, pw, groups, 0);
  return tc_graph_bn(g, bn, x, eps);
}

static void tc__scale_last_gamma(tc_graph *g, int bn_node, float scale) {
  if (bn_node < 0) return;
  int ga = g->nodes[bn_node].gamma;
  if (ga >= 0) g->params[ga].scale = scale;
}

/* ---- resnet ----------------------------------------------------------------------------------------- */

static const int tc__resnet_layers[5][4] = {
    {2, 2, 2, 2}, {3, 4, 6, 3}, {3, 4, 6, 3}, {3, 4, 23, 3}, {3, 8, 36, 3}};

static int tc__resnet(tc_graph *g, int x, int variant) {
  char a[128], b[128];
  int bottleneck = variant >= 2;
  int expansion = bottleneck ? 4 : 1;
  x = tc__conv_bn(g, x, "conv1", "bn1", 64, 7, 7, 2, 3, 3, 1, 1e-5f);
  x = tc_graph_relu(g, x);
  x = tc_graph_max_pool(g, x, 3, 2, 1, 0);
  int inplanes = 64;
  for (int l = 0; l < 4; l++) {
    int planes = 64 << l;
    for (int blk = 0; blk < tc__resnet_layers[variant][l]; blk++) {
      int stride = (blk == 0 && l > 0) ? 2 : 1;
      int identity = x, y;
      const char *p = tc__nm(b, sizeof b, "layer%d.%d", l + 1, blk);
      char pre[64];
      snprintf(pre, sizeof pre, "%s", p);
      if (!bottleneck) {
        y = tc__conv_bn(g, x, tc__nm(a, sizeof a, "%s.conv1", pre), tc__nm(b, sizeof b, "%s.bn1", pre),
                        planes, 3, 3, stride, 1, 1, 1, 1e-5f);
        y = tc_graph_relu(g, y);
        y = tc__conv_bn(g, y, tc__nm(a, sizeof a, "%s.conv2", pre), tc__nm(b, sizeof b, "%s.bn2", pre),
                        planes, 3, 3, 1, 1, 1, 1, 1e-5f);
      } else {
        y = tc__conv_bn(g, x, tc__nm(a, sizeof a, "%s.conv1", pre), tc__nm(b, sizeof b, "%s.bn1", pre),
                        planes, 1, 1, 1, 0, 0, 1, 1e-5f);
        y = tc_graph_relu(g, y);
        y = tc__conv_bn(g, y, tc__nm(a, sizeof a, "%s.conv2", pre), tc__nm(b, sizeof b, "%s.bn2", pre),
                        planes, 3, 3, stride, 1, 1, 1, 1e-5f);
        y = tc_graph_relu(g, y);
        y = tc__conv_bn(g, y, tc__nm(a, sizeof a, "%s.conv3", pre), tc__nm(b, sizeof b, "%s.bn3", pre),
                        planes * 4, 1, 1, 1, 0, 0, 1, 1e-5f);
      }
      tc__scale_last_gamma(g, y, 0.2f); /* keeps the residual stream's variance bounded */
      if (stride != 1 || inplanes != planes * expansion) {
        identity = tc__conv_bn(g, x, tc__nm(a, sizeof a, "%s.downsample.0", pre),
                               tc__nm(b, sizeof b, "%s.downsample.1", pre), planes * expansion, 1, 1,
                               stride, 0, 0, 1, 1e-5f);
      }
      x = tc_graph_relu(g, tc_graph_add(g, y, identity));
      inplanes = planes * expansion;
    }
  }
  x = tc_graph_adaptive_avg_pool(g, x, 1, 1);
  x = tc_graph_flatten(g, x);
  return tc_graph_dense(g, "fc", x, 1000, 1);
}

/* ---- vgg -------------------------------------------------------------------------------------------- */

static const int tc__vgg_cfg[4][22] = {
    {64, -1, 128, -1, 256, 256, -1, 512, 512, -1, 512, 512, -1, 0},
    {64, 64, -1, 128, 128, -1, 256, 256, -1, 512, 512, -1, 512, 512, -1, 0},
    {64, 64, -1, 128, 128, -1, 256, 256, 256, -1, 512, 512, 512, -1, 512, 512, 512, -1, 0},
    {64, 64, -1, 128, 128, -1, 256, 256, 256, 256, -1, 512, 512, 512, 512, -1, 512, 512, 512, 512, -1, 0}};

static int tc__vgg(tc_graph *g, int x, int variant) {
  char a[64];
  int idx = 0;
  for (int i = 0; tc__vgg_cfg[variant][i] != 0; i++) {
    int v = tc__vgg_cfg[variant][i];
    if (v < 0) {
      x = tc_graph_max_pool(g, x, 2, 2, 0, 0);
      idx += 1;
    } else {
      x = tc_graph_conv(g, tc__nm(a, sizeof a, "features.%d", idx), x, v, 3, 3, 1, 1, 1, 1, 1, 1);
      x = tc_graph_relu(g, x);
      idx += 2;
    }
  }
  x = tc_graph_adaptive_avg_pool(g, x, 7, 7);
  x = tc_graph_flatten(g, x);
  x = tc_graph_relu(g, tc_graph_dense(g, "classifier.0", x, 4096, 1));
  x = tc_graph_dropout(g, x);
  x = tc_graph_relu(g, tc_graph_dense(g, "classifier.3", x, 4096, 1));
  x = tc_graph_dropout(g, x);
  return tc_graph_dense(g, "classifier.6", x, 1000, 1);
}

/* ---- mobilenet v1 (TVM relay/testing/mobilenet.py, alpha 1.0) --------------------------------------- */

static int tc__mobilenet(tc_graph *g, int x, int variant) {
  (void)variant;
  char a[96], b[96];
  x = tc__conv_bn(g, x, "conv_block_1.conv", "conv_block_1.bn", 32, 3, 3, 2, 1, 1, 1, 1e-5f);
  x = tc_graph_relu(g, x);
  static const int spec[13][3] = {{32, 64, 0},    {64, 128, 1},   {128, 128, 0}, {128, 256, 1},
                                  {256, 256, 0},  {256, 512, 1},  {512, 512, 0}, {512, 512, 0},
                                  {512, 512, 0},  {512, 512, 0},  {512, 512, 0}, {512, 1024, 1},
                                  {1024, 1024, 0}};
  for (int i = 0; i < 13; i++) {
    int dw = spec[i][0], pw = spec[i][1], s = spec[i][2] ? 2 : 1;
    x = tc__conv_bn(g, x, tc__nm(a, sizeof a, "separable_conv_block_%d.depthwise", i + 1),
                    tc__nm(b, sizeof b, "separable_conv_block_%d.bn1", i + 1), dw, 3, 3, s, 1, 1, dw,
                    1e-5f);
    x = tc_graph_relu(g, x);
    x = tc__conv_bn(g, x, tc__nm(a, sizeof a, "separable_conv_block_%d.pointwise", i + 1),
                    tc__nm(b, sizeof b, "separable_conv_block_%d.bn2", i + 1), pw, 1, 1, 1, 0, 0, 1,
                    1e-5f);
    x = tc_graph_relu(g, x);
  }
  x = tc_graph_global_avg_pool(g, x);
  x = tc_graph_flatten(g, x);
  x = tc_graph_dense(g, "fc", x, 1000, 1);
  return tc_graph_softmax(g, x);
}

/* ---- mobilenet v2 (torchvision) --------------------------------------------------------------------- */

static int tc__cbr6(tc_graph *g, int x, const char *prefix, int oc, int k, int s, int groups) {
  char a[96], b[96];
  x = tc__conv_bn(g, x, tc__nm(a, sizeof a, "%s.0", prefix), tc__nm(b, sizeof b, "%s.1", prefix), oc, k,
                  k, s, (k - 1) / 2, (k - 1) / 2, groups, 1e-5f);
  return tc_graph_clip(g, x, 0.0f, 6.0f);
}

static int tc__mobilenet_v2(tc_graph *g, int x, int variant) {
  (void)variant;
  static const int setting[7][4] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                                    {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  char a[96], b[96];
  x = tc__cbr6(g, x, "features.0", 32, 3, 2, 1);
  int inp = 32, idx = 1;
  for (int i = 0; i < 7; i++) {
    int t = setting[i][0], c = setting[i][1];
    for (int r = 0; r < setting[i][2]; r++, idx++) {
      int s = r == 0 ? setting[i][3] : 1;
      int hidden = inp * t, y = x, li = 0;
      if (t != 1) y = tc__cbr6(g, y, tc__nm(a, sizeof a, "features.%d.conv.%d", idx, li++), hidden, 1, 1, 1);
      y = tc__cbr6(g, y, tc__nm(a, sizeof a, "features.%d.conv.%d", idx, li++), hidden, 3, s, hidden);
      y = tc__conv_bn(g, y, tc__nm(a, sizeof a, "features.%d.conv.%d", idx, li),
                      tc__nm(b, sizeof b, "features.%d.conv.%d", idx, li + 1), c, 1, 1, 1, 0, 0, 1, 1e-5f);
      if (s == 1 && inp == c) {
        tc__scale_last_gamma(g, y, 0.3f);
        y = tc_graph_add(g, x, y);
      }
      x = y;
      inp = c;
    }
  }
  x = tc__cbr6(g, x, "features.18", 1280, 1, 1, 1);
  x = tc_graph_adaptive_avg_pool(g, x, 1, 1);
  x = tc_graph_flatten(g, x);
  x = tc_graph_dropout(g, x);
  return tc_graph_dense(g, "classifier.1", x, 1000, 1);
}

/* ---- squeezenet ------------------------------------------------------------------------------------- */

static int tc__fire(tc_graph *g, int x, int idx, int sq, int e1, int e3) {
  char a[64];
  x = tc_graph_relu(g, tc_graph_conv(g, tc__nm(a, sizeof a, "features.%d.squeeze", idx), x, sq, 1, 1, 1,
                                     1, 0, 0, 1, 1));
  int xs[2];
  xs[0] = tc_graph_relu(g, tc_graph_conv(g, tc__nm(a, sizeof a, "features.%d.expand1x1", idx), x, e1, 1,
                                         1, 1, 1, 0, 0, 1, 1));
  xs[1] = tc_graph_relu(g, tc_graph_conv(g, tc__nm(a, sizeof a, "features.%d.expand3x3", idx), x, e3, 3,
                                         3, 1, 1, 1, 1, 1, 1));
  return tc_graph_concat(g, 2, xs);
}

static int tc__squeezenet(tc_graph *g, int x, int variant) {
  if (variant == 0) {
    x = tc_graph_relu(g, tc_graph_conv(g, "features.0", x, 96, 7, 7, 2, 2, 0, 0, 1, 1));
    x = tc_graph_max_pool(g, x, 3, 2, 0, 1);
    x = tc__fire(g, x, 3, 16, 64, 64);
    x = tc__fire(g, x, 4, 16, 64, 64);
    x = tc__fire(g, x, 5, 32, 128, 128);
    x = tc_graph_max_pool(g, x, 3, 2, 0, 1);
    x = tc__fire(g, x, 7, 32, 128, 128);
    x = tc__fire(g, x, 8, 48, 192, 192);
    x = tc__fire(g, x, 9, 48, 192, 192);
    x = tc__fire(g, x, 10, 64, 256, 256);
    x = tc_graph_max_pool(g, x, 3, 2, 0, 1);
    x = tc__fire(g, x, 12, 64, 256, 256);
  } else {
    x = tc_graph_relu(g, tc_graph_conv(g, "features.0", x, 64, 3, 3, 2, 2, 0, 0, 1, 1));
    x = tc_graph_max_pool(g, x, 3, 2, 0, 1);
    x = tc__fire(g, x, 3, 16, 64, 64);
    x = tc__fire(g, x, 4, 16, 64, 64);
    x = tc_graph_max_pool(g, x, 3, 2, 0, 1);
    x = tc__fire(g, x, 6, 32, 128, 128);
    x = tc__fire(g, x, 7, 32, 128, 128);
    x = tc_graph_max_pool(g, x, 3, 2, 0, 1);
    x = tc__fire(g, x, 9, 48, 192, 192);
    x = tc__fire(g, x, 10, 48, 192, 192);
    x = tc__fire(g, x, 11, 64, 256, 256);
    x = tc__fire(g, x, 12, 64, 256, 256);
  }
  x = tc_graph_dropout(g, x);
  x = tc_graph_relu(g, tc_graph_conv(g, "classifier.1", x, 1000, 1, 1, 1, 1, 0, 0, 1, 1));
  x = tc_graph_adaptive_avg_pool(g, x, 1, 1);
  return tc_graph_flatten(g, x);
}

/* ---- inception v3 (torchvision, transform_input=False, aux_logits off) ------------------------------ */

static int tc__bc(tc_graph *g, int x, const char *mod, const char *br, int oc, int kh, int kw, int s,
                  int ph, int pw) {
  char a[96], b[96];
  x = tc__conv_bn(g, x, tc__nm(a, sizeof a, "%s%s%s.conv", mod, mod[0] ? "." : "", br),
                  tc__nm(b, sizeof b, "%s%s%s.bn", mod, mod[0] ? "." : "", br), oc, kh, kw, s, ph, pw, 1,
                  1e-3f);
  return tc_graph_relu(g, x);
}

static int tc__inc_a(tc_graph *g, int x, const char *m, int pool_features) {
  int o[4];
  o[0] = tc__bc(g, x, m, "branch1x1", 64, 1, 1, 1, 0, 0);
  o[1] = tc__bc(g, x, m, "branch5x5_1", 48, 1, 1, 1, 0, 0);
  o[1] = tc__bc(g, o[1], m, "branch5x5_2", 64, 5, 5, 1, 2, 2);
  o[2] = tc__bc(g, x, m, "branch3x3dbl_1", 64, 1, 1, 1, 0, 0);
  o[2] = tc__bc(g, o[2], m, "branch3x3dbl_2", 96, 3, 3, 1, 1, 1);
  o[2] = tc__bc(g, o[2], m, "branch3x3dbl_3", 96, 3, 3, 1, 1, 1);
  o[3] = tc_graph_avg_pool(g, x, 3, 1, 1, 1);
  o[3] = tc__bc(g, o[3], m, "branch_pool", pool_features, 1, 1, 1, 0, 0);
  return tc_graph_concat(g, 4, o);
}

static int tc__inc_b(tc_graph *g, int x, const char *m) {
  int o[3];
  o[0] = tc__bc(g, x, m, "branch3x3", 384, 3, 3, 2, 0, 0);
  o[1] = tc__bc(g, x, m, "branch3x3dbl_1", 64, 1, 1, 1, 0, 0);
  o[1] = tc__bc(g, o[1], m, "branch3x3dbl_2", 96, 3, 3, 1, 1, 1);
  o[1] = tc__bc(g, o[1], m, "branch3x3dbl_3", 96, 3, 3, 2, 0, 0);
  o[2] = tc_graph_max_pool(g, x, 3, 2, 0, 0);
  return tc_graph_concat(g, 3, o);
}

static int tc__inc_c(tc_graph *g, int x, const char *m, int c7) {
  int o[4];
  o[0] = tc__bc(g, x, m, "branch1x1", 192, 1, 1, 1, 0, 0);
  o[1] = tc__bc(g, x, m, "branch7x7_1", c7, 1, 1, 1, 0, 0);
  o[1] = tc__bc(g, o[1], m, "branch7x7_2", c7, 1, 7, 1, 0, 3);
  o[1] = tc__bc(g, o[1], m, "branch7x7_3", 192, 7, 1, 1, 3, 0);
  o[2] = tc__bc(g, x, m, "branch7x7dbl_1", c7, 1, 1, 1, 0, 0);
  o[2] = tc__bc(g, o[2], m, "branch7x7dbl_2", c7, 7, 1, 1, 3, 0);
  o[2] = tc__bc(g, o[2], m, "branch7x7dbl_3", c7, 1, 7, 1, 0, 3);
  o[2] = tc__bc(g, o[2], m, "branch7x7dbl_4", c7, 7, 1, 1, 3, 0);
  o[2] = tc__bc(g, o[2], m, "branch7x7dbl_5", 192, 1, 7, 1, 0, 3);
  o[3] = tc_graph_avg_pool(g, x, 3, 1, 1, 1);
  o[3] = tc__bc(g, o[3], m, "branch_pool", 192, 1, 1, 1, 0, 0);
  return tc_graph_concat(g, 4, o);
}

static int tc__inc_d(tc_graph *g, int x, const char *m) {
  int o[3];
  o[0] = tc__bc(g, x, m, "branch3x3_1", 192, 1, 1, 1, 0, 0);
  o[0] = tc__bc(g, o[0], m, "branch3x3_2", 320, 3, 3, 2, 0, 0);
  o[1] = tc__bc(g, x, m, "branch7x7x3_1", 192, 1, 1, 1, 0, 0);
  o[1] = tc__bc(g, o[1], m, "branch7x7x3_2", 192, 1, 7, 1, 0, 3);
  o[1] = tc__bc(g, o[1], m, "branch7x7x3_3", 192, 7, 1, 1, 3, 0);
  o[1] = tc__bc(g, o[1], m, "branch7x7x3_4", 192, 3, 3, 2, 0, 0);
  o[2] = tc_graph_max_pool(g, x, 3, 2, 0, 0);
  return tc_graph_concat(g, 3, o);
}

/* torchvision concatenates [1x1, cat(3x3_2a, 3x3_2b), cat(3x3dbl_3a, 3x3dbl_3b), pool]; one flat
 * six-input concat is the same tensor. */
static int tc__inc_e(tc_graph *g, int x, const char *m) {
  int o[6];
  o[0] = tc__bc(g, x, m, "branch1x1", 320, 1, 1, 1, 0, 0);
  int t = tc__bc(g, x, m, "branch3x3_1", 384, 1, 1, 1, 0, 0);
  o[1] = tc__bc(g, t, m, "branch3x3_2a", 384, 1, 3, 1, 0, 1);
  o[2] = tc__bc(g, t, m, "branch3x3_2b", 384, 3, 1, 1, 1, 0);
  t = tc__bc(g, x, m, "branch3x3dbl_1", 448, 1, 1, 1, 0, 0);
  t = tc__bc(g, t, m, "branch3x3dbl_2", 384, 3, 3, 1, 1, 1);
  o[3] = tc__bc(g, t, m, "branch3x3dbl_3a", 384, 1, 3, 1, 0, 1);
  o[4] = tc__bc(g, t, m, "branch3x3dbl_3b", 384, 3, 1, 1, 1, 0);
  o[5] = tc_graph_avg_pool(g, x, 3, 1, 1, 1);
  o[5] = tc__bc(g, o[5], m, "branch_pool", 192, 1, 1, 1, 0, 0);
  return tc_graph_concat(g, 6, o);
}

static int tc__inception_v3(tc_graph *g, int x, int variant) {
  (void)variant;
  x = tc__bc(g, x, "", "Conv2d_1a_3x3", 32, 3, 3, 2, 0, 0);
  x = tc__bc(g, x, "", "Conv2d_2a_3x3", 32, 3, 3, 1, 0, 0);
  x = tc__bc(g, x, "", "Conv2d_2b_3x3", 64, 3, 3, 1, 1, 1);
  x = tc_graph_max_pool(g, x, 3, 2, 0, 0);
  x = tc__bc(g, x, "", "Conv2d_3b_1x1", 80, 1, 1, 1, 0, 0);
  x = tc__bc(g, x, "", "Conv2d_4a_3x3", 192, 3, 3, 1, 0, 0);
  x = tc_graph_max_pool(g, x, 3, 2, 0, 0);
  x = tc__inc_a(g, x, "Mixed_5b", 32);
  x = tc__inc_a(g, x, "Mixed_5c", 64);
  x = tc__inc_a(g, x, "Mixed_5d", 64);
  x = tc__inc_b(g, x, "Mixed_6a");
  x = tc__inc_c(g, x, "Mixed_6b", 128);
  x = tc__inc_c(g, x, "Mixed_6c", 160);
  x = tc__inc_c(g, x, "Mixed_6d", 160);
  x = tc__inc_c(g, x, "Mixed_6e", 192);
  x = tc__inc_d(g, x, "Mixed_7a");
  x = tc__inc_e(g, x, "Mixed_7b");
  x = tc__inc_e(g, x, "Mixed_7c");
  x = tc_graph_adaptive_avg_pool(g, x, 1, 1);
  x = tc_graph_dropout(g, x);
  x = tc_graph_flatten(g, x);
  return tc_graph_dense(g, "fc", x, 1000, 1);
}

/* ---- transformers ----------------------------------------------------------------------------------- */

/* Multi-head attention over q, k, v [B, heads, S, dh]: softmax(alpha * q.k^T + mask) . v, heads merged
 * back to [B, S, heads * dh]. mask is -1 or a float tensor that broadcasts to [B, heads, S, S]. */
static int tc__attention(tc_graph *g, int q, int k, int v, float alpha, int mask) {
  int B = g->batch, H = g->nodes[q].out.shape[1], S = g->nodes[q].out.shape[2], dh = g->nodes[q].out.shape[3];
  int att = tc_graph_matmul(g, q, k, 0, 1, 1.0f);
  att = tc_graph_softmax_ex(g, att, alpha, mask);
  att = tc_graph_dropout(g, att);
  int o = tc_graph_matmul(g, att, v, 0, 0, 1.0f);
  static const int merge[4] = {0, 2, 1, 3};
  o = tc_graph_transpose(g, o, merge);
  int shape[3] = {B, S, H * dh};
  return tc_graph_reshape(g, o, 3, shape);
}

/* [B, S, H * dh] -> [B, H, S, dh] */
static int tc__heads(tc_graph *g, int x, int heads) {
  const tc_tensor *t = &g->nodes[x].out;
  int shape[4] = {t->shape[0], t->shape[1], heads, t->shape[2] / heads};
  static const int split[4] = {0, 2, 1, 3};
  return tc_graph_transpose(g, tc_graph_reshape(g, x, 4, shape), split);
}

/* torchvision's vit_b_16 (ViT-B/16): 16x16 patches of a 224x224 image, a class token, learned positions,
 * 12 pre-norm encoder layers (nn.MultiheadAttention with one fused in_proj for q, k and v), the class
 * token's final layer norm into the head. */
static int tc__vit(tc_graph *g, int x, int variant) {
  (void)variant;
  enum { D = 768, HEADS = 12, LAYERS = 12, FFN = 3072, PATCH = 16 };
  char a[160], b[160], c[160], nm[192];
  int B = g->batch, n = g->in_h / PATCH, S = n * n + 1;
  if (g->in_h != 224 || g->in_w != 224) {
    snprintf(g->err, sizeof g->err, "vit: the input must be 224x224 (encoder.pos_embedding has 197 positions)");
    return -1;
  }
  x = tc_graph_conv(g, "conv_proj", x, D, PATCH, PATCH, PATCH, PATCH, 0, 0, 1, 1);
  int flat[3] = {B, D, n * n};
  static const int to_seq[3] = {0, 2, 1};
  x = tc_graph_transpose(g, tc_graph_reshape(g, x, 3, flat), to_seq); /* [B, 196, 768] */
  int64_t cls_shape[3] = {1, 1, D}, pos_shape[3] = {1, S, D};
  int cls_b[3] = {B, 1, D};
  int xs[2] = {tc_graph_expand(g, tc_graph_const(g, "class_token", 3, cls_shape, TC_INIT_EMBED, D), 3, cls_b), x};
  x = tc_graph_concat_axis(g, 2, xs, 1);
  x = tc_graph_add(g, x, tc_graph_const(g, "encoder.pos_embedding", 3, pos_shape, TC_INIT_EMBED, D));
  x = tc_graph_dropout(g, x);
  for (int l = 0; l < LAYERS; l++) {
    const char *p = tc__nm(a, sizeof a, "encoder.layers.encoder_layer_%d", l);
    int y = tc_graph_layer_norm(g, tc__nm(b, sizeof b, "%s.ln_1", p), x, 1e-6f);
    tc__nm(b, sizeof b, "%s.self_attention.in_proj_weight", p);
    tc__nm(c, sizeof c, "%s.self_attention.in_proj_bias", p);
    y = tc_graph_dense_named(g, tc__nm(nm, sizeof nm, "%s.self_attention.in_proj", p), y, 3 * D, b, c);
    int qkv_shape[5] = {B, S, 3, HEADS, D / HEADS};
    static const int qkv_perm[5] = {2, 0, 3, 1, 4}; /* [3, B, heads, S, 64] */
    y = tc_graph_transpose(g, tc_graph_reshape(g, y, 5, qkv_shape), qkv_perm);
    int q = tc_graph_select(g, y, 0, 0), k = tc_graph_select(g, y, 0, 1), v = tc_graph_select(g, y, 0, 2);
    y = tc__attention(g, q, k, v, 0.125f, -1);
    y = tc_graph_dense(g, tc__nm(b, sizeof b, "%s.self_attention.out_proj", p), y, D, 1);
    x = tc_graph_add(g, x, tc_graph_dropout(g, y));
    y = tc_graph_layer_norm(g, tc__nm(b, sizeof b, "%s.ln_2", p), x, 1e-6f);
    y = tc_graph_gelu(g, tc_graph_dense(g, tc__nm(b, sizeof b, "%s.mlp.0", p), y, FFN, 1));
    y = tc_graph_dense(g, tc__nm(b, sizeof b, "%s.mlp.3", p), tc_graph_dropout(g, y), D, 1);
    x = tc_graph_add(g, x, tc_graph_dropout(g, y));
  }
  x = tc_graph_layer_norm(g, "encoder.ln", x, 1e-6f);
  x = tc_graph_select(g, x, 1, 0); /* the class token */
  return tc_graph_dense(g, "heads.head", x, 1000, 1);
}

/* bert-base (Hugging Face BertModel): word + token type + position embeddings, 12 post-norm encoder
 * layers with the attention mask (1 - mask) * finfo(float32).min added to the scores, and the pooler
 * tanh(dense(first token)). The sequence length is g->in_h (128 by default). Declares its own inputs
 * input_ids, token_type_ids, attention_mask (int64 [batch, S]) and outputs last_hidden_state and
 * pooler_output. */
static int tc__bert(tc_graph *g, int x, int variant) {
  (void)x;
  (void)variant;
  enum { D = 768, HEADS = 12, LAYERS = 12, FFN = 3072, VOCAB = 30522, POSITIONS = 512, TYPES = 2 };
  char a[160], b[160];
  int B = g->batch, S = g->in_h;
  if (S < 1 || S > POSITIONS) {
    snprintf(g->err, sizeof g->err, "bert: the sequence length %d is outside 1..%d", S, POSITIONS);
    return -1;
  }
  int ishape[2] = {B, S};
  int ids = tc_graph_input_tensor(g, "input_ids", TC_DTYPE_I64, 2, ishape);
  int types = tc_graph_input_tensor(g, "token_type_ids", TC_DTYPE_I64, 2, ishape);
  int mask = tc_graph_input_tensor(g, "attention_mask", TC_DTYPE_I64, 2, ishape);
  x = tc_graph_embedding(g, "embeddings.word_embeddings", ids, VOCAB, D);
  x = tc_graph_add(g, x, tc_graph_embedding(g, "embeddings.token_type_embeddings", types, TYPES, D));
  int64_t pshape[2] = {POSITIONS, D};
  int pos = tc_graph_const(g, "embeddings.position_embeddings.weight", 2, pshape, TC_INIT_EMBED, D);
  x = tc_graph_add(g, x, tc_graph_slice(g, pos, 0, 0, S, 1));
  x = tc_graph_dropout(g, tc_graph_layer_norm(g, "embeddings.LayerNorm", x, 1e-12f));
  /* (1 - mask) * min as mask * -min + min: exactly 0 where the mask is 1 */
  int mshape[4] = {B, 1, 1, S};
  int madd = tc_graph_affine(g, tc_graph_cast(g, mask, TC_DTYPE_F32), 3.40282347e38f, -3.40282347e38f);
  madd = tc_graph_reshape(g, madd, 4, mshape);
  for (int l = 0; l < LAYERS; l++) {
    const char *p = tc__nm(a, sizeof a, "encoder.layer.%d", l);
    int q = tc__heads(g, tc_graph_dense(g, tc__nm(b, sizeof b, "%s.attention.self.query", p), x, D, 1), HEADS);
    int k = tc__heads(g, tc_graph_dense(g, tc__nm(b, sizeof b, "%s.attention.self.key", p), x, D, 1), HEADS);
    int v = tc__heads(g, tc_graph_dense(g, tc__nm(b, sizeof b, "%s.attention.self.value", p), x, D, 1), HEADS);
    int y = tc__attention(g, q, k, v, 0.125f, madd);
    y = tc_graph_dense(g, tc__nm(b, sizeof b, "%s.attention.output.dense", p), y, D, 1);
    int h = tc_graph_add(g, tc_graph_dropout(g, y), x);
    h = tc_graph_layer_norm(g, tc__nm(b, sizeof b, "%s.attention.output.LayerNorm", p), h, 1e-12f);
    y = tc_graph_gelu(g, tc_graph_dense(g, tc__nm(b, sizeof b, "%s.intermediate.dense", p), h, FFN, 1));
    y = tc_graph_dense(g, tc__nm(b, sizeof b, "%s.output.dense", p), y, D, 1);
    x = tc_graph_add(g, tc_graph_dropout(g, y), h);
    x = tc_graph_layer_norm(g, tc__nm(b, sizeof b, "%s.output.LayerNorm", p), x, 1e-12f);
  }
  if (tc_graph_output(g, "last_hidden_state", x) < 0) return -1;
  int pooled = tc_graph_tanh(g, tc_graph_dense(g, "pooler.dense", tc_graph_select(g, x, 1, 0), D, 1));
  return tc_graph_output(g, "pooler_output", pooled);
}

/* ---- registry --------------------------------------------------------------------------------------- */

static const tc__zoo_def tc__zoo[] = {
    {{"resnet-18", 3, 224, 224, 32, "ResNet-18 (torchvision), 11.7M params"}, tc__resnet, 0},
    {{"resnet-34", 3, 224, 224, 32, "ResNet-34 (torchvision), 21.8M params"}, tc__resnet, 1},
    {{"resnet-50", 3, 224, 224, 32, "ResNet-50 v1.5 (torchvision), 25.6M params"}, tc__resnet, 2},
    {{"resnet-101", 3, 224, 224, 32, "ResNet-101 v1.5 (torchvision), 44.5M params"}, tc__resnet, 3},
    {{"resnet-152", 3, 224, 224, 32, "ResNet-152 v1.5 (torchvision), 60.2M params"}, tc__resnet, 4},
    {{"vgg-11", 3, 224, 224, 32, "VGG-11 without batch norm (torchvision), 132.9M params"}, tc__vgg, 0},
    {{"vgg-13", 3, 224, 224, 32, "VGG-13 without batch norm (torchvision), 133.0M params"}, tc__vgg, 1},
    {{"vgg-16", 3, 224, 224, 32, "VGG-16 without batch norm (torchvision), 138.4M params"}, tc__vgg, 2},
    {{"vgg-19", 3, 224, 224, 32, "VGG-19 without batch norm (torchvision), 143.7M params"}, tc__vgg, 3},
    {{"mobilenet", 3, 224, 224, 32, "MobileNet v1 1.0 (TVM testing zoo, with softmax), 4.2M params"},
     tc__mobilenet, 0},
    {{"mobilenet-v2", 3, 224, 224, 32, "MobileNetV2 1.0 (torchvision), 3.5M params"}, tc__mobilenet_v2,
     0},
    {{"squeezenet_v1.0", 3, 224, 224, 64, "SqueezeNet 1.0 (torchvision), 1.25M params"}, tc__squeezenet,
     0},
    {{"squeezenet_v1.1", 3, 224, 224, 32, "SqueezeNet 1.1 (torchvision), 1.24M params"}, tc__squeezenet,
     1},
    {{"inception_v3", 3, 299, 299, 75, "Inception v3 (torchvision, no aux logits), 23.8M params"},
     tc__inception_v3, 0},
    {{"vit", 3, 224, 224, 224, "ViT-B/16 (torchvision vit_b_16), 224x224, 86.6M params"}, tc__vit, 0},
    /* c = 0: the builder declares its own inputs; h is the sequence length, w is unused (1) */
    {{"bert", 0, 128, 1, 1, "bert-base (Hugging Face BertModel), sequence 128, 109.5M params"}, tc__bert, 0},
};

size_t tc_zoo_count(void) {
  return sizeof tc__zoo / sizeof tc__zoo[0];
}

const tc_zoo_entry *tc_zoo_at(size_t i) {
  return i < tc_zoo_count() ? &tc__zoo[i].e : NULL;
}

static const tc__zoo_def *tc__zoo_def_find(const char *name) {
  if (!name) return NULL;
  for (size_t i = 0; i < tc_zoo_count(); i++)
    if (strcmp(tc__zoo[i].e.name, name) == 0) return &tc__zoo[i];
  return NULL;
}

const tc_zoo_entry *tc_zoo_find(const char *name) {
  const tc__zoo_def *d = tc__zoo_def_find(name);
  return d ? &d->e : NULL;
}

/* ---- seeded weights --------------------------------------------------------------------------------- */

static uint64_t tc__splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static uint64_t tc__fnv(uint64_t h, const char *s) {
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001B3ull;
  return h;
}

th_status tc_zoo_fill(tc_graph *g) {
  for (int i = 0; i < g->nparams; i++) {
    tc_param *p = &g->params[i];
    if (p->data || p->nparts) continue; /* a composite gets its parts' below */
    p->data = th_arena_alloc(g->arena, (size_t)p->numel * sizeof(float));
    if (!p->data) return TH_ERR_NOMEM;
    uint64_t st = tc__fnv(tc__fnv(tc__fnv(0xCBF29CE484222325ull, g->network), "/"), p->name);
    float lo, hi;
    double fan = p->fan_in > 0 ? p->fan_in : 1;
    switch (p->init) {
      case TC_INIT_WEIGHT: hi = (float)sqrt(6.0 / fan); lo = -hi; break; /* Kaiming, relu gain */
      case TC_INIT_DENSE_WEIGHT: hi = (float)sqrt(3.0 / fan); lo = -hi; break;
      case TC_INIT_BIAS: hi = (float)(0.5 / sqrt(fan)); lo = -hi; break;
      case TC_INIT_GAMMA: lo = 0.6f * p->scale; hi = 1.2f * p->scale; break;
      case TC_INIT_BETA: lo = -0.1f; hi = 0.1f; break;
      case TC_INIT_MEAN: lo = -0.1f; hi = 0.1f; break;
      case TC_INIT_VAR: lo = 0.6f; hi = 1.4f; break;
      default: lo = -0.1f; hi = 0.1f; break;
    }
    float span = hi - lo;
    for (int64_t k = 0; k < p->numel; k++) {
      uint64_t r = tc__splitmix(&st);
      p->data[k] = lo + span * (float)((r >> 40) * (1.0 / 16777216.0));
    }
  }
  g->has_data = 1;
  return tc_graph_concat_params(g);
}

th_status tc_zoo_build(const char *name, int batch, int h, int w, int weights, tc_graph **out,
                       char *err, size_t errlen) {
  const tc__zoo_def *d = tc__zoo_def_find(name);
  if (!d) {
    if (err) {
      char list[512] = "";
      size_t off = 0;
      for (size_t i = 0; i < tc_zoo_count() && off < sizeof list; i++) {
        int k = snprintf(list + off, sizeof list - off, "%s%s", i ? ", " : "", tc__zoo[i].e.name);
        if (k < 0) break;
        off += (size_t)k;
      }
      snprintf(err, errlen, "unknown network '%s' (valid: %s)", name ? name : "(null)", list);
    }
    return TH_ERR_NOT_FOUND;
  }
  if (h == 0 && w == 0) {
    h = d->e.h;
    w = d->e.w;
  }
  if (batch < 1 || batch > 4096 || h < d->e.min_hw || w < d->e.min_hw || h > 4096 || w > 4096) {
    if (err)
      snprintf(err, errlen, "%s: bad batch %d or input %dx%d (batch 1..4096, size >= %d)", name, batch,
               h, w, d->e.min_hw);
    return TH_ERR_INVALID;
  }
  tc_graph *g = tc_graph_new(name, batch);
  if (!g) return TH_ERR_NOMEM;
  int x = -1;
  if (d->e.c > 0) {
    x = tc_graph_input(g, d->e.c, h, w);
  } else {
    g->in_h = h; /* the builder's own inputs: h is its sequence length */
    g->in_w = w;
  }
  x = d->build(g, x, d->variant);
  if (x >= 0 && g->noutputs == 0) x = tc_graph_output(g, "output", x);
  if (x >= 0 && tc_graph_finish(g) != TH_OK) x = -1;
  th_status rc = TH_OK;
  if (x < 0) {
    if (err) snprintf(err, errlen, "%s: %s", name, g->err[0] ? g->err : "build failed");
    rc = strstr(g->err, "out of memory") ? TH_ERR_NOMEM : TH_ERR_INVALID;
  }
  if (rc == TH_OK && weights) {
    rc = tc_zoo_fill(g);
    if (rc != TH_OK && err) snprintf(err, errlen, "%s: out of memory generating weights", name);
  }
  if (rc != TH_OK) {
    tc_graph_free(g);
    return rc;
  }
  *out = g;
  return TH_OK;
}

th_status tc_zoo_info(const char *name, int batch, double *flops, int64_t *params) {
  tc_graph *g = NULL;
  th_status rc = tc_zoo_build(name, batch, 0, 0, 0, &g, NULL, 0);
  if (rc != TH_OK) return rc;
  if (flops) *flops = tc_graph_flops(g);
  if (params) *params = tc_graph_param_count(g);
  tc_graph_free(g);
  return TH_OK;
}
