/* Differential tests of every operator template: each family is compiled through the LLVM backend into a
 * shared library (fallback config + random valid configs, fixed seed) on edge shapes (odd sizes, stride 2,
 * padding, 1x1, the 7x7/2 stem, 3-channel NCHW input, channel blocks 16/8/4/1, every epilogue) and
 * compared against naive NCHW C loops written here. Also: space round trips, invalid configs, features. */
#include "ref/ref_kernel.h"
#include "test_ops_util.h"
#include "th_rt.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- helpers ---- */

/* plain NCHW <-> NCHW[cb]c; a block that does not divide c pads the channels (tc_channels_stored), and
 * to_blocked fills the padding with PAD_FILL, a finite value a kernel must not let through */
#define PAD_FILL 7.0f
static size_t stored_size(int n, int c, int h, int w, int cb) {
  return (size_t)n * tc_channels_stored(c, cb) * h * w;
}
static size_t blocked_at(int b, int ch, int y, int x, int c, int h, int w, int cb) {
  return ((((size_t)b * (tc_channels_stored(c, cb) / cb) + ch / cb) * h + y) * w + x) * cb + ch % cb;
}
static void to_blocked(const float *src, float *dst, int n, int c, int h, int w, int cb) {
  for (size_t i = 0; i < stored_size(n, c, h, w, cb); i++) dst[i] = PAD_FILL;
  for (int b = 0; b < n; b++)
    for (int ch = 0; ch < c; ch++)
      for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
          dst[blocked_at(b, ch, y, x, c, h, w, cb)] = src[(((size_t)b * c + ch) * h + y) * w + x];
}
static void from_blocked(const float *src, float *dst, int n, int c, int h, int w, int cb) {
  for (int b = 0; b < n; b++)
    for (int ch = 0; ch < c; ch++)
      for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
          dst[(((size_t)b * c + ch) * h + y) * w + x] = src[blocked_at(b, ch, y, x, c, h, w, cb)];
}
/* Whether every padding lane of a blocked map is finite (want < 0) or equal to want. */
static int padding_is(const float *blk, int n, int c, int h, int w, int cb, float want) {
  for (int b = 0; b < n; b++)
    for (int ch = c; ch < tc_channels_stored(c, cb); ch++)
      for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
          float v = blk[blocked_at(b, ch, y, x, c, h, w, cb)];
          if (want < 0 ? !isfinite(v) : v != want) return 0;
        }
  return 1;
}

static float epi(const tc_workload *wl, float v, const float *bias, int oc, const float *res, size_t i) {
  if (wl->epilogue & TC_EPI_BIAS) v += bias[oc];
  if (wl->epilogue & TC_EPI_RESIDUAL) v += res[i];
  if (wl->epilogue & TC_EPI_RELU) v = v > 0 ? v : 0;
  if (wl->epilogue & TC_EPI_CLIP) v = v < wl->clip_min ? wl->clip_min : v > wl->clip_max ? wl->clip_max : v;
  if (wl->epilogue & TC_EPI_GELU) v = (float)(0.5 * v * (1.0 + erf(v / sqrt(2.0))));
  if (wl->epilogue & TC_EPI_TANH) v = tanhf(v);
  if (wl->epilogue & TC_EPI_SIGMOID) v = (float)(1 / (1 + exp(-(double)v)));
  if (wl->epilogue & TC_EPI_HARD_SIGMOID) v = (float)fmin(1, fmax(0, (double)wl->alpha * v + wl->beta));
  if (wl->epilogue & TC_EPI_HARD_SWISH) v = (float)(v * fmin(1, fmax(0, v / 6.0 + 0.5)));
  if (wl->epilogue & TC_EPI_SILU) v = (float)(v / (1 + exp(-(double)v)));
  return v;
}

static tc_workload conv_wl(tc_kernel k, int n, int c, int h, int w, int oc, int kh, int kw, int s, int p,
                           int in_cb, int out_cb, int epilogue) {
  tc_workload wl;
  memset(&wl, 0, sizeof wl);
  wl.kernel = k;
  wl.n = n;
  wl.c = c;
  wl.h = h;
  wl.w = w;
  wl.oc = oc;
  wl.kh = kh;
  wl.kw = kw;
  wl.sh = wl.sw = s;
  wl.pt = wl.pl = wl.pb = wl.pr = p;
  wl.oh = (h + 2 * p - kh) / s + 1;
  wl.ow = (w + 2 * p - kw) / s + 1;
  wl.in_cb = in_cb;
  wl.out_cb = out_cb;
  wl.epilogue = epilogue;
  wl.clip_min = -0.25f;
  wl.clip_max = 0.5f;
  return wl;
}

/* ---- conv2d / depthwise ---- */

static void ref_conv(const tc_workload *wl, const float *in, const float *wt, const float *bias,
                     const float *res, float *out, int depthwise) {
  for (int b = 0; b < wl->n; b++)
    for (int o = 0; o < wl->oc; o++)
      for (int y = 0; y < wl->oh; y++)
        for (int x = 0; x < wl->ow; x++) {
          double acc = 0;
          /* groups: output o reads the cg input channels of its group, weights [oc][cg][kh][kw] */
          int G = wl->groups > 1 ? wl->groups : 1, cg = wl->c / G;
          int c0 = depthwise ? o : o / (wl->oc / G) * cg, c1 = depthwise ? o + 1 : c0 + cg;
          for (int c = c0; c < c1; c++)
            for (int i = 0; i < wl->kh; i++)
              for (int j = 0; j < wl->kw; j++) {
                int iy = y * wl->sh - wl->pt + i * (wl->dil_h > 1 ? wl->dil_h : 1),
                    ix = x * wl->sw - wl->pl + j * (wl->dil_w > 1 ? wl->dil_w : 1);
                if (iy < 0 || iy >= wl->h || ix < 0 || ix >= wl->w) continue;
                float wv = depthwise ? wt[((size_t)o * wl->kh + i) * wl->kw + j]
                                     : wt[(((size_t)o * cg + c - c0) * wl->kh + i) * wl->kw + j];
                acc += (double)in[(((size_t)b * wl->c + c) * wl->h + iy) * wl->w + ix] * wv;
              }
          size_t oi = (((size_t)b * wl->oc + o) * wl->oh + y) * wl->ow + x;
          out[oi] = epi(wl, (float)acc, bias, o, res, oi);
        }
}


static void check_list(const tc_workload *all_wl, const tc_config *all_cfg, const int *owner, int n,
                       int depthwise);

/* Runs n workloads x their configs through one library and the reference. */
static void check_weighted(const tc_workload *wls, int nwl, int per, int depthwise) {
  tc_workload all_wl[256];
  tc_config all_cfg[256];
  int owner[256], n = 0;
  for (int i = 0; i < nwl; i++) {
    tc_config cfgs[16];
    int k = sample_configs(&wls[i], cfgs, per);
    for (int j = 0; j < k; j++) {
      CHECK(n < 256);
      all_wl[n] = wls[i];
      all_cfg[n] = cfgs[j];
      owner[n++] = i;
    }
  }
  check_list(all_wl, all_cfg, owner, n, depthwise);
}

static void check_list(const tc_workload *all_wl, const tc_config *all_cfg, const int *owner, int n,
                       int depthwise) {
  lib L;
  build(&L, n, all_wl, all_cfg);
  for (int q = 0; q < n; q++) {
    const tc_workload *wl = &all_wl[q];
    size_t isz = (size_t)wl->n * wl->c * wl->h * wl->w, osz = (size_t)wl->n * wl->oc * wl->oh * wl->ow;
    size_t isb = stored_size(wl->n, wl->c, wl->h, wl->w, wl->in_cb);
    size_t osb = stored_size(wl->n, wl->oc, wl->oh, wl->ow, wl->out_cb);
    size_t wsz = depthwise ? (size_t)wl->c * wl->kh * wl->kw
                           : (size_t)wl->oc * (wl->c / tc_workload_groups(wl)) * wl->kh * wl->kw;
    /* the bias as the model holds it: the stored channels, zero past oc */
    int ocs = tc_channels_stored(wl->oc, wl->out_cb);
    float *in = rand_buf(isz), *wt = rand_buf(wsz), *bias = rand_buf((size_t)ocs), *res = rand_buf(osz),
          *ref = rand_buf(osz);
    for (int c = wl->oc; c < ocs; c++) bias[c] = 0;
    float *inb = rand_buf(isb), *resb = rand_buf(osb), *outb = rand_buf(osb), *out = rand_buf(osz);
    size_t psz = tc_op_packed_size(wl, &all_cfg[q], &target);
    CHECK(psz > 0);
    float *packed = rand_buf(psz);
    CHECK_EQ_INT(tc_op_pack(wl, &all_cfg[q], &target, wt, packed), TH_OK);
    ref_conv(wl, in, wt, bias, res, ref, depthwise);
    to_blocked(in, inb, wl->n, wl->c, wl->h, wl->w, wl->in_cb);
    to_blocked(res, resb, wl->n, wl->oc, wl->oh, wl->ow, wl->out_cb);
    void *args[5] = {inb, packed, (wl->epilogue & TC_EPI_BIAS) ? bias : NULL,
                     (wl->epilogue & TC_EPI_RESIDUAL) ? resb : NULL, outb};
    sym(&L, q)((void *const *)args);
    from_blocked(outb, out, wl->n, wl->oc, wl->oh, wl->ow, wl->out_cb);
    /* padding lanes: zero weights and bias keep them finite (the input's padding is PAD_FILL) */
    CHECK(padding_is(outb, wl->n, wl->oc, wl->oh, wl->ow, wl->out_cb, -1));
    tc_space s;
    char key[512], cfg[1024];
    CHECK_EQ_INT(tc_op_space(wl, &target, &s), TH_OK);
    tc_workload_key(wl, key, sizeof key);
    tc_config_str(&s, &all_cfg[q], cfg, sizeof cfg);
    if (!compare(key, out, ref, osz)) {
      fprintf(stderr, "workload %d config %s\n", owner[q], cfg);
      CHECK(0);
    }
    free(in), free(wt), free(bias), free(res), free(ref), free(inb), free(resb), free(outb), free(out),
        free(packed);
  }
  unload(&L);
}

TH_TEST(conv2d_differential) {
  init_target();
  tc_workload wls[] = {
      conv_wl(TC_KERNEL_CONV2D, 1, 3, 23, 23, 16, 7, 7, 2, 3, 1, 16, TC_EPI_BIAS | TC_EPI_RELU), /* stem */
      conv_wl(TC_KERNEL_CONV2D, 1, 16, 9, 9, 24, 3, 3, 1, 1, 16, 8,
              TC_EPI_BIAS | TC_EPI_RESIDUAL | TC_EPI_RELU),
      conv_wl(TC_KERNEL_CONV2D, 1, 8, 10, 10, 12, 1, 1, 2, 0, 8, 4, 0),            /* 1x1 / 2 */
      conv_wl(TC_KERNEL_CONV2D, 2, 4, 11, 7, 8, 3, 3, 2, 1, 4, 8, TC_EPI_CLIP),      /* batch 2 */
      conv_wl(TC_KERNEL_CONV2D, 1, 16, 6, 13, 5, 3, 3, 1, 1, 16, 1, TC_EPI_BIAS),     /* plain out */
      conv_wl(TC_KERNEL_CONV2D, 1, 32, 7, 7, 32, 3, 3, 1, 1, 16, 16, TC_EPI_RESIDUAL | TC_EPI_RELU),
      /* padded channel blocks (shufflenet's 58 channels in blocks of 16; 20 in blocks of 8) */
      conv_wl(TC_KERNEL_CONV2D, 2, 58, 9, 9, 58, 1, 1, 1, 0, 16, 16, TC_EPI_BIAS | TC_EPI_RELU),
      conv_wl(TC_KERNEL_CONV2D, 1, 20, 8, 8, 29, 3, 3, 1, 1, 8, 16, TC_EPI_BIAS | TC_EPI_RESIDUAL),
      conv_wl(TC_KERNEL_CONV2D, 1, 24, 10, 10, 58, 1, 1, 2, 0, 1, 16, TC_EPI_BIAS),
  };
  /* Asymmetric padding. */
  tc_workload a = conv_wl(TC_KERNEL_CONV2D, 1, 16, 12, 12, 16, 5, 5, 1, 2, 16, 16,
                          TC_EPI_BIAS | TC_EPI_CLIP | TC_EPI_RESIDUAL);
  a.pb = a.pr = 1;
  a.oh = (a.h + a.pt + a.pb - a.kh) / a.sh + 1;
  a.ow = (a.w + a.pl + a.pr - a.kw) / a.sw + 1;
  int nwl = (int)(sizeof wls / sizeof wls[0]);
  tc_workload all[16];
  memcpy(all, wls, sizeof wls);
  all[nwl] = a;
  check_weighted(all, nwl + 1, 4, 0);
  return 0;
}

/* Grouped convs (ResNeXt's and RegNet's 3x3s) as conv2d workloads of groups: G in {2, 4, 8, 10, 32}
 * with groups of whole input blocks, of lanes of one block (c/G below the block: 4 of 16) and of a
 * plain input, oc/G narrower than the output block (vectors of 4 or 2 lanes), stride 2, 1x1, 5x5,
 * batch 2 and the epilogues, each through the fallback and random configs against the naive loops;
 * then the workload rules (keys, flops, what is refused). */
TH_TEST(conv2d_grouped) {
  init_target();
  struct {
    int g, n, c, h, w, oc, k, s, p, in_cb, out_cb, epi;
  } cs[] = {
      {2, 1, 32, 9, 9, 32, 3, 1, 1, 16, 16, TC_EPI_BIAS | TC_EPI_RELU},
      {4, 1, 32, 11, 10, 64, 3, 2, 1, 8, 16, TC_EPI_BIAS | TC_EPI_RESIDUAL},
      {8, 1, 32, 7, 7, 32, 3, 1, 1, 16, 16, 0},              /* 4 lanes of a block per group */
      {32, 1, 128, 8, 8, 128, 3, 2, 1, 16, 16, TC_EPI_RELU},       /* resnext50's first stage */
      {2, 2, 8, 5, 6, 12, 1, 1, 0, 4, 4, TC_EPI_CLIP},             /* oc/G 6: vectors of 2 */
      {4, 1, 16, 6, 7, 16, 5, 1, 2, 1, 8, TC_EPI_BIAS},            /* plain input */
      {10, 1, 160, 7, 7, 160, 3, 1, 1, 16, 16, TC_EPI_BIAS | TC_EPI_RELU}, /* regnet_x_400mf */
      {32, 1, 64, 6, 6, 32, 3, 1, 1, 8, 8, TC_EPI_RESIDUAL | TC_EPI_RELU}, /* oc/G 1 */
  };
  int nc = (int)(sizeof cs / sizeof cs[0]);
  tc_workload wls[16];
  for (int i = 0; i < nc; i++) {
    wls[i] = conv_wl(TC_KERNEL_CONV2D, cs[i].n, cs[i].c, cs[i].h, cs[i].w, cs[i].oc, cs[i].k,
                     cs[i].k, cs[i].s, cs[i].p, cs[i].in_cb, cs[i].out_cb, cs[i].epi);
    wls[i].groups = cs[i].g;
    CHECK_EQ_INT(tc_workload_check(&wls[i]), TH_OK);
  }
  check_weighted(wls, nc, 6, 0);
  /* the key names the groups only above 1; flops count one group's channels */
  char key[512];
  tc_workload w = wls[1];
  CHECK_EQ_INT(tc_workload_key(&w, key, sizeof key), TH_OK);
  CHECK(strstr(key, " g4") != NULL);
  double f4 = tc_workload_flops(&w);
  w.groups = 1;
  CHECK_EQ_INT(tc_workload_key(&w, key, sizeof key), TH_OK);
  CHECK(strstr(key, " g") == NULL);
  CHECK(fabs(tc_workload_flops(&w) - 4 * f4) < 1);
  /* refused: groups that do not divide the channels, a block that splits a group (12 channels in
   * blocks of 8), padded channels, another family; tf32 is not taken */
  w = wls[0];
  w.groups = 3;
  CHECK_EQ_INT(tc_workload_check(&w), TH_ERR_INVALID);
  w = conv_wl(TC_KERNEL_CONV2D, 1, 24, 6, 6, 24, 3, 3, 1, 1, 8, 8, 0);
  w.groups = 2;
  CHECK_EQ_INT(tc_workload_check(&w), TH_ERR_INVALID);
  w = conv_wl(TC_KERNEL_CONV2D, 1, 20, 6, 6, 20, 3, 3, 1, 1, 16, 4, 0);
  w.groups = 2;
  CHECK_EQ_INT(tc_workload_check(&w), TH_ERR_INVALID);
  w = conv_wl(TC_KERNEL_DEPTHWISE, 1, 16, 6, 6, 16, 3, 3, 1, 1, 16, 16, 0);
  w.groups = 2;
  CHECK_EQ_INT(tc_workload_check(&w), TH_ERR_INVALID);
  w = wls[0];
  CHECK_EQ_INT(tc_workload_take_precision(&w, TC_PRECISION_TF32), 0);
  CHECK_EQ_INT(w.precision, TC_PRECISION_FP32);
  return 0;
}

/* Dilated convs (DeepLab's and LR-ASPP's atrous 3x3s) as conv2d workloads of their dilation:
 * random shapes with dilations 2..4 (each axis its own), stride 1 and 2, padded (the band) and
 * unpadded, with and without groups, then dilated depthwise convs, each through the fallback and
 * random configs against the naive loops; then the workload rules (keys, flops, what is refused).
 */
TH_TEST(conv2d_dilated) {
  init_target();
  uint64_t seed = 0x9e3779b97f4a7c15ULL;
  tc_workload wls[12];
  int nc = 0;
  static const int blocks[3] = {1, 8, 16};
  while (nc < 10) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    uint32_t r = (uint32_t)(seed >> 33);
    int g = (r & 1) ? 2 << (r >> 1 & 1) : 1;               /* 1, 2 or 4 groups */
    int k = 1 + 2 * (int)(r >> 2 & 1) + (int)(r >> 3 & 1); /* 1..4 */
    if (k == 1) k = 3;
    int dh = 2 + (int)(r >> 4 & 1) + (int)(r >> 5 & 1), dw = 2 + (int)(r >> 6 & 1) * 2;
    int st = 1 + (int)(r >> 7 & 1), cg = 4 << (r >> 8 & 1), ocg = 4 << (r >> 9 & 1);
    int pad = (r >> 10 & 1) ? (k - 1) * dh / 2 : 0, h = 9 + (int)(r >> 11 & 7),
        w = 8 + (int)(r >> 14 & 7);
    int in_cb = blocks[r >> 17 & 1 ? 1 : 0], out_cb = blocks[1 + (r >> 18 & 1)];
    if ((cg * g) % in_cb || (ocg * g) % out_cb) in_cb = out_cb = 4;
    tc_workload wl =
        conv_wl(TC_KERNEL_CONV2D, 1 + (int)(r >> 19 & 1), cg * g, h, w, ocg * g, k, k, st, pad,
                in_cb, out_cb, (r >> 20 & 1) ? TC_EPI_BIAS | TC_EPI_RELU : TC_EPI_RESIDUAL);
    wl.groups = g;
    wl.dil_h = dh;
    wl.dil_w = dw;
    wl.pl = wl.pr = (k - 1) * dw / 2 * (pad > 0);
    wl.oh = (h + wl.pt + wl.pb - ((k - 1) * dh + 1)) / st + 1;
    wl.ow = (w + wl.pl + wl.pr - ((k - 1) * dw + 1)) / st + 1;
    if (wl.oh < 1 || wl.ow < 1 || tc_workload_check(&wl) != TH_OK) continue;
    wls[nc++] = wl;
  }
  /* DeepLab's rate-2 3x3 of 16 channels, padded by its dilation */
  wls[nc] = conv_wl(TC_KERNEL_CONV2D, 1, 16, 12, 12, 16, 3, 3, 1, 2, 16, 16, TC_EPI_BIAS);
  wls[nc].dil_h = wls[nc].dil_w = 2;
  wls[nc].oh = wls[nc].ow = 12;
  CHECK_EQ_INT(tc_workload_check(&wls[nc]), TH_OK);
  nc++;
  check_weighted(wls, nc, 5, 0);
  /* depthwise (LR-ASPP's and DeepLab's atrous depthwise convs): dilations 2..4, stride 1 and 2 */
  tc_workload dws[4];
  for (int i = 0; i < 4; i++) {
    int d = 2 + i % 3, st = 1 + i / 2, k = i == 3 ? 5 : 3, p = i % 2 ? (k - 1) * d / 2 : 0;
    dws[i] = conv_wl(TC_KERNEL_DEPTHWISE, 1 + i % 2, 32, 13 + i, 11 + 2 * i, 32, k, k, st, p,
                     i == 2 ? 8 : 16, i == 2 ? 8 : 16, i % 2 ? TC_EPI_BIAS | TC_EPI_RELU : 0);
    dws[i].dil_h = d;
    dws[i].dil_w = 2 + (i + 1) % 3;
    dws[i].pl = dws[i].pr = p ? (k - 1) * dws[i].dil_w / 2 : 0;
    dws[i].oh = (dws[i].h + 2 * p - ((k - 1) * d + 1)) / st + 1;
    dws[i].ow = (dws[i].w + 2 * dws[i].pl - ((k - 1) * dws[i].dil_w + 1)) / st + 1;
    CHECK_EQ_INT(tc_workload_check(&dws[i]), TH_OK);
  }
  check_weighted(dws, 4, 4, 1);
  /* the key names the dilation only above 1; flops count the same taps */
  char key[512];
  tc_workload w = wls[nc - 1];
  CHECK_EQ_INT(tc_workload_key(&w, key, sizeof key), TH_OK);
  CHECK(strstr(key, " d2x2") != NULL);
  double f2 = tc_workload_flops(&w);
  w.dil_h = w.dil_w = 1;
  w.pt = w.pl = w.pb = w.pr = 1;
  CHECK_EQ_INT(tc_workload_check(&w), TH_OK);
  CHECK_EQ_INT(tc_workload_key(&w, key, sizeof key), TH_OK);
  CHECK(strstr(key, " d") == NULL);
  CHECK(fabs(tc_workload_flops(&w) - f2) < 1);
  /* refused: an output size of the undilated window, a dilated depthwise or pool, a negative one;
   * no Winograd for a dilated 3x3 stride 1 */
  w = wls[nc - 1];
  w.oh = w.ow = 14;
  CHECK_EQ_INT(tc_workload_check(&w), TH_ERR_INVALID);
  w = conv_wl(TC_KERNEL_MAXPOOL, 1, 16, 12, 12, 16, 3, 3, 1, 1, 16, 16, 0);
  w.dil_h = w.dil_w = 2;
  w.oh = w.ow = 10;
  CHECK_EQ_INT(tc_workload_check(&w), TH_ERR_INVALID);
  w = wls[nc - 1];
  w.dil_w = -1;
  CHECK_EQ_INT(tc_workload_check(&w), TH_ERR_INVALID);
  tc_space s;
  CHECK_EQ_INT(tc_op_space(&wls[nc - 1], &target, &s), TH_OK);
  int kwino = tc_space_knob(&s, "winograd");
  CHECK(kwino < 0 || s.knobs[kwino].nvalues == 1);
  return 0;
}

/* Every value of every conv knob (row tiles with and without the padded band, flat tiles, oc groups,
 * unrolled kw, all tile widths) on shapes with odd remainders, plus a conv whose band is too big for the stack (the
 * bounds-checked border path). */
TH_TEST(conv2d_knob_sweep) {
  init_target();
  tc_workload wls[] = {
      conv_wl(TC_KERNEL_CONV2D, 1, 32, 7, 7, 64, 3, 3, 1, 1, 16, 16, TC_EPI_BIAS | TC_EPI_RESIDUAL | TC_EPI_RELU),
      conv_wl(TC_KERNEL_CONV2D, 2, 16, 11, 9, 32, 3, 3, 2, 1, 16, 16, TC_EPI_BIAS | TC_EPI_RELU),
      conv_wl(TC_KERNEL_CONV2D, 1, 3, 19, 17, 16, 7, 7, 2, 3, 1, 16, TC_EPI_BIAS | TC_EPI_RELU),
      conv_wl(TC_KERNEL_CONV2D, 1, 16, 5, 14, 32, 1, 1, 1, 0, 16, 16, TC_EPI_BIAS),
      conv_wl(TC_KERNEL_CONV2D, 1, 256, 3, 66, 16, 3, 3, 1, 1, 16, 16, TC_EPI_RELU), /* band > stack */
  };
  int nwl = (int)(sizeof wls / sizeof wls[0]);
  enum { MAXN = 420 };
  tc_workload *all_wl = calloc(MAXN, sizeof *all_wl);
  tc_config *all_cfg = calloc(MAXN, sizeof *all_cfg);
  int *owner = calloc(MAXN, sizeof *owner), n = 0;
  CHECK(all_wl && all_cfg && owner);
  for (int i = 0; i < nwl; i++) {
    tc_config cfgs[128];
    int k = axis_configs(&wls[i], cfgs, i == nwl - 1 ? 6 : 80);
    CHECK(k >= 3);
    /* Multi-row register tiles need narrow tiles: rh x rw (1..3) with the fallback's other knobs, and
     * with one ic chunk more, over every row-tile height. */
    tc_space s;
    CHECK_EQ_INT(tc_op_space(&wls[i], &target, &s), TH_OK);
    int krh = tc_space_knob(&s, "tile_rh"), kow = tc_space_knob(&s, "tile_ow");
    int koh = tc_space_knob(&s, "tile_oh"), kch = tc_space_knob(&s, "ic_chunks");
    int kfl = tc_space_knob(&s, "tile_flat"), kg = tc_space_knob(&s, "oc_groups");
    int kwi = tc_space_knob(&s, "winograd");
    CHECK(krh >= 0 && kow >= 0 && koh >= 0 && kch >= 0 && kfl >= 0 && kg >= 0 && kwi >= 0);
    tc_config base = cfgs[0]; /* the direct path's knobs around the fallback (which may be Winograd) */
    base.idx[kwi] = 0;
    int multi = 0;
    for (int rh = 1; rh < s.knobs[krh].nvalues; rh++)
      for (int rw = 0; rw < 3 && rw < s.knobs[kow].nvalues; rw++)
        for (int th = 0; th < s.knobs[koh].nvalues && k < 128; th++) {
          tc_config c = base;
          c.idx[kfl] = 0;
          c.idx[krh] = rh;
          c.idx[kow] = rw;
          c.idx[koh] = th;
          c.idx[kch] = (rh + rw + th) % s.knobs[kch].nvalues;
          if (tc_op_valid(&wls[i], &target, &s, &c) != TH_OK) continue;
          cfgs[k++] = c;
          multi++;
        }
    if (i < 3) CHECK(multi > 0); /* the padded convs reach the multi-row path */
    /* Flat tiles (runs wrapping from row to row): tile lengths 1, 3, 5 and 6, over each row tile they
     * allow, with chunks and groups varied; at most 6 per conv (each is a fully unrolled kernel). */
    int flat = 0;
    static const int lens[] = {0, 2, 4, 5};
    for (int li = 0; li < 4 && lens[li] < s.knobs[kow].nvalues && s.knobs[kfl].nvalues > 1; li++)
      for (int th = 0, rw = lens[li]; th < s.knobs[koh].nvalues && k < 128 && flat < 6; th++) {
        tc_config c = base;
        c.idx[kfl] = 1;
        c.idx[krh] = 0;
        c.idx[kow] = rw;
        c.idx[koh] = th;
        c.idx[kch] = (rw + th) % s.knobs[kch].nvalues;
        c.idx[kg] = (rw * 3 + th) % s.knobs[kg].nvalues;
        if (tc_op_valid(&wls[i], &target, &s, &c) != TH_OK) continue;
        cfgs[k++] = c;
        flat++;
      }
    if (i < 3) CHECK(flat > 0); /* the padded convs reach the flat path */
    for (int j = 0; j < k && n < MAXN; j++) {
      all_wl[n] = wls[i];
      all_cfg[n] = cfgs[j];
      owner[n++] = i;
    }
  }
  check_list(all_wl, all_cfg, owner, n, 0);
  free(all_wl), free(all_cfg), free(owner);
  return 0;
}

/* The Winograd configs of wls[i] not yet covered, under the current target, against the direct reference:
 * for each m, every step-th valid config, up to 4. A workload whose channel blocks are not whole vectors of
 * this target is offered the direct path only (nvalues 1) and is left uncovered. */
static void winograd_cases(const tc_workload *wls, int nwl, int *covered) {
  enum { MAXN = 96 };
  tc_workload all_wl[MAXN];
  tc_config all_cfg[MAXN];
  int owner[MAXN], n = 0;
  for (int i = 0; i < nwl; i++) {
    if (covered[i]) continue;
    tc_space s;
    CHECK_EQ_INT(tc_op_space(&wls[i], &target, &s), TH_OK);
    int kw = tc_space_knob(&s, "winograd");
    CHECK(kw >= 0);
    if (wls[i].in_cb % target.simd_lanes || wls[i].out_cb % target.simd_lanes) {
      CHECK_EQ_INT(s.knobs[kw].nvalues, 1);
      continue;
    }
    CHECK_EQ_INT(s.knobs[kw].nvalues, 3);
    covered[i] = 1;
    tc_config fb;
    CHECK_EQ_INT(tc_op_fallback(&wls[i], &target, &s, &fb), TH_OK);
    for (int m = 1; m <= 2; m++) {
      int64_t size = tc_space_size(&s), nvalid = 0;
      for (int pass = 0; pass < 2; pass++) {
        int64_t step = nvalid > 4 ? nvalid / 4 : 1, seen = 0;
        for (int64_t idx = 0; idx < size; idx++) {
          tc_config c;
          tc_space_get(&s, idx, &c);
          if (c.idx[kw] != m || tc_op_valid(&wls[i], &target, &s, &c) != TH_OK) continue;
          if (pass == 0) {
            nvalid++;
          } else if (seen++ % step == 0 && n < MAXN) {
            all_wl[n] = wls[i];
            all_cfg[n] = c;
            owner[n++] = i;
          }
        }
      }
      CHECK(nvalid > 0);
    }
  }
  if (n > 0) check_list(all_wl, all_cfg, owner, n, 0);
}

/* The Winograd path (3x3, stride 1), m = 2 and 4, against the direct reference: maps whose sizes are not
 * multiples of m (partial tiles), unpadded and asymmetrically padded convs, batch 2, every epilogue input,
 * and a spread of register tiles, runs per task and oc groups. Channel blocks of 8 need 8-lane vectors: on
 * an AVX-512 machine those workloads run a second pass with AVX2-width kernels (as TC_TEST_LANES=8). */
TH_TEST(conv2d_winograd) {
  init_target();
  tc_workload wls[] = {
      conv_wl(TC_KERNEL_CONV2D, 1, 32, 7, 7, 64, 3, 3, 1, 1, 16, 16, TC_EPI_BIAS | TC_EPI_RESIDUAL | TC_EPI_RELU),
      conv_wl(TC_KERNEL_CONV2D, 2, 16, 9, 11, 32, 3, 3, 1, 1, 16, 16, TC_EPI_BIAS | TC_EPI_RELU),
      conv_wl(TC_KERNEL_CONV2D, 1, 16, 10, 14, 16, 3, 3, 1, 0, 8, 8, TC_EPI_CLIP),
      conv_wl(TC_KERNEL_CONV2D, 1, 64, 16, 16, 32, 3, 3, 1, 1, 16, 16, TC_EPI_RESIDUAL),
      conv_wl(TC_KERNEL_CONV2D, 1, 16, 5, 6, 24, 3, 3, 1, 1, 16, 8, 0),
  };
  wls[4].pb = wls[4].pr = 2; /* asymmetric */
  wls[4].oh = wls[4].h + wls[4].pt + wls[4].pb - 2;
  wls[4].ow = wls[4].w + wls[4].pl + wls[4].pr - 2;
  enum { NWL = sizeof wls / sizeof wls[0] };
  int covered[NWL] = {0};
  winograd_cases(wls, NWL, covered);
  if (target.simd_lanes == 16) {
    target.simd_lanes = 8;
    target.nregs = 16;
    winograd_cases(wls, NWL, covered);
    init_target();
  }
  for (int i = 0; i < NWL; i++) CHECK(covered[i]);
  /* F(4,3) only while U = 36 x c x oc floats stays within 4 MiB, F(2,3) within 6 MiB */
  static const int cs[3][2] = {{128, 128}, {256, 256}, {512, 512}};
  for (int i = 0; i < 3; i++) {
    tc_workload w = conv_wl(TC_KERNEL_CONV2D, 1, cs[i][0], 14, 14, cs[i][1], 3, 3, 1, 1, 16, 16, 0);
    tc_space s;
    CHECK_EQ_INT(tc_op_space(&w, &target, &s), TH_OK);
    CHECK_EQ_INT(s.knobs[tc_space_knob(&s, "winograd")].nvalues, 3 - i);
  }
  /* not offered where it does not apply: stride 2, 1x1 */
  tc_workload no[2] = {conv_wl(TC_KERNEL_CONV2D, 1, 16, 9, 9, 16, 3, 3, 2, 1, 16, 16, 0),
                       conv_wl(TC_KERNEL_CONV2D, 1, 16, 9, 9, 16, 1, 1, 1, 0, 16, 16, 0)};
  for (int i = 0; i < 2; i++) {
    tc_space s;
    CHECK_EQ_INT(tc_op_space(&no[i], &target, &s), TH_OK);
    int kw = tc_space_knob(&s, "winograd");
    CHECK(kw >= 0 && s.knobs[kw].nvalues == 1);
  }
  return 0;
}

TH_TEST(conv2d_epilogues) {
  init_target();
  tc_workload wls[16];
  for (int e = 0; e < 16; e++) wls[e] = conv_wl(TC_KERNEL_CONV2D, 1, 8, 5, 6, 16, 3, 3, 1, 1, 8, 16, e);
  check_weighted(wls, 16, 1, 0);
  return 0;
}

TH_TEST(depthwise_differential) {
  init_target();
  tc_workload wls[] = {
      conv_wl(TC_KERNEL_DEPTHWISE, 1, 32, 13, 13, 32, 3, 3, 1, 1, 16, 16, TC_EPI_BIAS | TC_EPI_CLIP),
      conv_wl(TC_KERNEL_DEPTHWISE, 1, 24, 14, 14, 24, 3, 3, 2, 1, 8, 8, TC_EPI_RESIDUAL | TC_EPI_RELU),
      conv_wl(TC_KERNEL_DEPTHWISE, 2, 8, 9, 11, 8, 5, 5, 1, 2, 4, 8, TC_EPI_BIAS),
      conv_wl(TC_KERNEL_DEPTHWISE, 1, 3, 7, 7, 3, 3, 3, 1, 0, 1, 1, 0),
      conv_wl(TC_KERNEL_DEPTHWISE, 2, 58, 9, 9, 58, 3, 3, 2, 1, 16, 16, TC_EPI_BIAS | TC_EPI_RELU), /* padded */
      conv_wl(TC_KERNEL_DEPTHWISE, 1, 116, 7, 7, 116, 3, 3, 1, 1, 8, 8, TC_EPI_BIAS),
  };
  check_weighted(wls, 6, 4, 1);
  /* a padded output block whose padding the input has not (it would read past the input's channels) */
  tc_workload bad = conv_wl(TC_KERNEL_DEPTHWISE, 1, 116, 7, 7, 116, 3, 3, 1, 1, 1, 16, 0);
  tc_space s;
  CHECK_EQ_INT(tc_op_space(&bad, &target, &s), TH_ERR_INVALID);
  bad = conv_wl(TC_KERNEL_MAXPOOL, 1, 58, 7, 7, 58, 3, 3, 1, 1, 16, 2, 0);
  CHECK_EQ_INT(tc_op_space(&bad, &target, &s), TH_ERR_INVALID);
  return 0;
}

/* ---- dense ---- */

static void ref_dense(const tc_workload *wl, const float *in, const float *wt, const float *bias,
                      const float *res, float *out) {
  int N = wl->n, K = wl->c, M = wl->oc;
  for (int b = 0; b < N; b++)
    for (int m = 0; m < M; m++) {
      double acc = 0;
      for (int k = 0; k < K; k++) acc += (double)in[(size_t)b * K + k] * wt[(size_t)m * K + k];
      out[(size_t)b * M + m] = epi(wl, (float)acc, bias, m, res, (size_t)b * M + m);
    }
}

/* Sets knob `name` of c to its value index v (negative: from the end) when the space has it. */
static void set_idx(const tc_space *s, tc_config *c, const char *name, int v) {
  int k = tc_space_knob(s, name);
  if (k < 0) return;
  int nv = s->knobs[k].nvalues;
  c->idx[k] = v >= 0 ? (v < nv ? v : nv - 1) : nv + v;
}

/* The GEMM templates' corners beside the fallback: the smallest k block (partial sums through the output,
 * a short last block) with the most row and column blocks in the other order, with and without the copy
 * of A (dense), and a one-row register tile. Added when valid. */
static int gemm_corners(const tc_workload *wl, tc_config *cfgs, int n, int max) {
  tc_space s;
  CHECK_EQ_INT(tc_op_space(wl, &target, &s), TH_OK);
  for (int variant = 0; variant < 3 && n < max; variant++) {
    tc_config c = cfgs[0];
    set_idx(&s, &c, "tile_k", variant == 2 ? 0 : 1);
    set_idx(&s, &c, "order", 1);
    set_idx(&s, &c, "pack_a", variant == 0);
    if (variant == 2) set_idx(&s, &c, "tile_m", 0);
    /* the most blocks that are valid */
    int krb = tc_space_knob(&s, "row_blocks"), kcb = tc_space_knob(&s, "col_blocks");
    for (int i = s.knobs[krb].nvalues - 1; i >= 0; i--) {
      c.idx[krb] = i;
      if (tc_op_valid(wl, &target, &s, &c) == TH_OK) break;
    }
    for (int i = s.knobs[kcb].nvalues - 1; i >= 0; i--) {
      c.idx[kcb] = i;
      if (tc_op_valid(wl, &target, &s, &c) == TH_OK) break;
    }
    if (tc_op_valid(wl, &target, &s, &c) == TH_OK) cfgs[n++] = c;
  }
  return n;
}

/* Runs kernel f of (wl, cfg) on random data against its reference; 1 when they match. */
typedef int (*gemm_run_fn)(const tc_workload *wl, const tc_config *cfg, kfn f);

/* GEMM workloads x (fallback, corners, `per` random valid configs), built into one library and run. */
static void check_gemm(const tc_workload *wls, int nwl, int per, gemm_run_fn run) {
  enum { MAXN = 160, PER = 32 };
  tc_workload *all_wl = calloc(MAXN, sizeof *all_wl);
  tc_config *all_cfg = calloc(MAXN, sizeof *all_cfg), cfgs[PER];
  int n = 0;
  CHECK(all_wl && all_cfg);
  for (int i = 0; i < nwl; i++)
    for (int j = 0, k = gemm_corners(&wls[i], cfgs, sample_configs(&wls[i], cfgs, 1 + per), PER);
         j < k; j++) {
      CHECK(n < MAXN);
      all_wl[n] = wls[i];
      all_cfg[n++] = cfgs[j];
    }
  lib L;
  build(&L, n, all_wl, all_cfg);
  for (int q = 0; q < n; q++)
    if (!run(&all_wl[q], &all_cfg[q], sym(&L, q))) {
      tc_space s;
      char key[512], cfg[1024];
      CHECK_EQ_INT(tc_op_space(&all_wl[q], &target, &s), TH_OK);
      tc_workload_key(&all_wl[q], key, sizeof key);
      tc_config_str(&s, &all_cfg[q], cfg, sizeof cfg);
      fprintf(stderr, "%s (%d lanes) config %s\n", key, target.simd_lanes, cfg);
      CHECK(0);
    }
  unload(&L);
  free(all_wl), free(all_cfg);
}

static int run_dense(const tc_workload *wl, const tc_config *cfg, kfn f) {
  size_t isz = (size_t)wl->n * wl->c, osz = (size_t)wl->n * wl->oc;
  float *in = rand_buf(isz), *wt = rand_buf((size_t)wl->oc * wl->c), *bias = rand_buf((size_t)wl->oc);
  float *res = rand_buf(osz), *ref = rand_buf(osz), *out = rand_buf(osz);
  float *packed = rand_buf(tc_op_packed_size(wl, cfg, &target));
  CHECK_EQ_INT(tc_op_pack(wl, cfg, &target, wt, packed), TH_OK);
  ref_dense(wl, in, wt, bias, res, ref);
  void *args[5] = {in, packed, (wl->epilogue & TC_EPI_BIAS) ? bias : NULL,
                   (wl->epilogue & TC_EPI_RESIDUAL) ? res : NULL, out};
  f((void *const *)args);
  int ok = compare("dense", out, ref, osz);
  /* and against the shared oracle, which takes torch's unpacked weights */
  void *rargs[5] = {in, wt, args[2], args[3], ref};
  CHECK_EQ_INT(tc_ref_kernel(wl, rargs), TH_OK);
  ok = ok && compare("dense vs tc_ref_kernel", out, ref, osz);
  free(in), free(wt), free(bias), free(res), free(ref), free(out), free(packed);
  return ok;
}

static void check_dense(const tc_workload *wls, int nwl, int per) {
  check_gemm(wls, nwl, per, run_dense);
}

/* check(wls, nwl, per) with 4 random configs per workload on this target, then with 2 on AVX2-width
 * kernels (8 lanes, 16 registers) when this is an AVX-512 machine. */
static void both_widths(void (*check)(const tc_workload *, int, int), const tc_workload *wls, int nwl) {
  check(wls, nwl, 4);
  if (target.simd_lanes == 16) {
    target.simd_lanes = 8;
    target.nregs = 16;
    check(wls, nwl, 2);
    init_target();
  }
}

static tc_workload dense_wl(int rows, int k, int n, int epilogue) {
  return conv_wl(TC_KERNEL_DENSE, rows, k, 1, 1, n, 1, 1, 1, 0, 1, 1, epilogue);
}

/* Rows 1, 2, 3, 10, 128, 129, 197 (one row tile, balanced tiles of two heights); k not a multiple of the
 * vector (67, 130) and long (3072, in k blocks); n not a multiple of the vector (37, 40, 1000) or of the
 * panel; the transformers' epilogues. On an AVX-512 machine a second pass runs AVX2-width kernels. */
TH_TEST(dense_differential) {
  init_target();
  tc_workload wls[] = {
      dense_wl(1, 67, 37, TC_EPI_BIAS | TC_EPI_GELU),
      dense_wl(3, 3072, 1000, TC_EPI_BIAS | TC_EPI_RELU),
      dense_wl(2, 16, 16, TC_EPI_RESIDUAL),
      dense_wl(10, 512, 200, TC_EPI_BIAS),
      dense_wl(128, 130, 1000, TC_EPI_BIAS | TC_EPI_CLIP | TC_EPI_RESIDUAL),
      dense_wl(129, 3072, 40, TC_EPI_BIAS | TC_EPI_TANH),
      dense_wl(197, 768, 96, TC_EPI_BIAS | TC_EPI_RESIDUAL),
      dense_wl(197, 67, 37, TC_EPI_RESIDUAL | TC_EPI_TANH),
  };
  wls[4].clip_min = -0.5f, wls[4].clip_max = 0.7f;
  both_widths(check_dense, wls, (int)(sizeof wls / sizeof wls[0]));
  return 0;
}

/* Every dense epilogue: bias x residual x (none, relu, clip, relu + clip, gelu, tanh), fallback configs,
 * on a shape with a partial panel and a partial vector. */
TH_TEST(dense_epilogues) {
  init_target();
  static const int act[6] = {0,           TC_EPI_RELU, TC_EPI_CLIP, TC_EPI_RELU | TC_EPI_CLIP,
                             TC_EPI_GELU, TC_EPI_TANH};
  tc_workload wls[24];
  for (int i = 0; i < 24; i++) {
    wls[i] = dense_wl(5, 45, 77, (i & 1 ? TC_EPI_BIAS : 0) | (i & 2 ? TC_EPI_RESIDUAL : 0) | act[i / 4]);
    wls[i].clip_min = -0.25f, wls[i].clip_max = 0.5f;
  }
  check_dense(wls, 24, 0);
  return 0;
}

/* ---- the activations of imported CNNs (issue 21) ---- */

static const int cnn_acts[4] = {TC_EPI_SIGMOID, TC_EPI_HARD_SIGMOID, TC_EPI_HARD_SWISH, TC_EPI_SILU};

/* Each of them fused into conv2d (3x3 stride 1 on the Winograd path and direct, 1x1, 3x3 stride 2 with a
 * 3-channel input), depthwise (3x3, 5x5 stride 2) and dense (one row and five, a partial vector), with
 * bias and bias + residual: fallback and random configs against the naive loops. Sums of up to 144
 * products of [-1, 1] values reach both clamps of hard sigmoid (0.2 x + 0.5) and hard swish. */
TH_TEST(cnn_activation_epilogues) {
  init_target();
  enum { NC = 4 * 2 * 4, ND = 4 * 2 * 2, NF = 4 * 2 * 2 };
  tc_workload conv[NC], dw[ND], fc[NF];
  int nc = 0, nd = 0, nf = 0;
  for (int a = 0; a < 4; a++)
    for (int r = 0; r < 2; r++) {
      int e = cnn_acts[a] | TC_EPI_BIAS | (r ? TC_EPI_RESIDUAL : 0);
      conv[nc++] = conv_wl(TC_KERNEL_CONV2D, 1, 16, 12, 12, 16, 3, 3, 1, 1, 16, 16, e);
      conv[nc++] = conv_wl(TC_KERNEL_CONV2D, 2, 16, 7, 9, 24, 1, 1, 1, 0, 16, 8, e);
      conv[nc++] = conv_wl(TC_KERNEL_CONV2D, 1, 3, 15, 15, 16, 3, 3, 2, 1, 1, 16, e);
      conv[nc++] = conv_wl(TC_KERNEL_CONV2D, 1, 8, 6, 5, 12, 3, 3, 1, 1, 8, 4, e);
      dw[nd++] = conv_wl(TC_KERNEL_DEPTHWISE, 1, 32, 13, 13, 32, 3, 3, 1, 1, 16, 16, e);
      dw[nd++] = conv_wl(TC_KERNEL_DEPTHWISE, 2, 24, 14, 14, 24, 5, 5, 2, 2, 8, 8, e);
      fc[nf++] = dense_wl(1, 130, 37, e);
      fc[nf++] = dense_wl(5, 45, 77, e);
    }
  tc_workload *all[3] = {conv, dw, fc};
  int counts[3] = {NC, ND, NF};
  for (int f = 0; f < 3; f++)
    for (int i = 0; i < counts[f]; i++) {
      all[f][i].alpha = 0.2f; /* ONNX HardSigmoid's defaults */
      all[f][i].beta = 0.5f;
    }
  check_weighted(conv, NC, 2, 0);
  check_weighted(dw, ND, 2, 1);
  check_dense(fc, NF, 1);
  return 0;
}

/* The workload rules and keys of those epilogues: one activation, on conv2d, depthwise or dense only,
 * finite alpha and beta for hard sigmoid, which alone puts them in the key; other keys do not change. */
TH_TEST(cnn_activation_rules_and_keys) {
  tc_workload c =
      conv_wl(TC_KERNEL_CONV2D, 1, 16, 12, 12, 16, 3, 3, 1, 1, 16, 16, TC_EPI_BIAS | TC_EPI_RELU);
  char key[512];
  CHECK_EQ_INT(tc_workload_key(&c, key, sizeof key), TH_OK);
  CHECK(strcmp(key, "conv2d_nchwc n1 c16 h12 w12 oc16 oh12 ow12 k3x3 s1x1 p1,1,1,1 cb16,16 e5") == 0);
  c.alpha = 0.2f, c.beta = 0.5f; /* not read without a hard sigmoid */
  CHECK_EQ_INT(tc_workload_key(&c, key, sizeof key), TH_OK);
  CHECK(strcmp(key, "conv2d_nchwc n1 c16 h12 w12 oc16 oh12 ow12 k3x3 s1x1 p1,1,1,1 cb16,16 e5") == 0);
  c.epilogue = TC_EPI_BIAS | TC_EPI_HARD_SIGMOID;
  CHECK_EQ_INT(tc_workload_check(&c), TH_OK);
  CHECK_EQ_INT(tc_workload_key(&c, key, sizeof key), TH_OK);
  CHECK(strcmp(key, "conv2d_nchwc n1 c16 h12 w12 oc16 oh12 ow12 k3x3 s1x1 p1,1,1,1 cb16,16 e257 "
                    "hs0.200000003,0.5") == 0);
  c.epilogue = TC_EPI_BIAS | TC_EPI_SILU;
  CHECK_EQ_INT(tc_workload_key(&c, key, sizeof key), TH_OK);
  CHECK(strstr(key, " e1025") && !strstr(key, "hs"));
  c.alpha = NAN;
  CHECK_EQ_INT(tc_workload_check(&c), TH_OK); /* silu reads no alpha */
  c.epilogue = TC_EPI_HARD_SIGMOID;
  CHECK_EQ_INT(tc_workload_check(&c), TH_ERR_INVALID);
  c.alpha = 0.2f;
  for (int a = 0; a < 4; a++) {
    int others[5] = {TC_EPI_RELU, TC_EPI_CLIP, TC_EPI_GELU, TC_EPI_TANH, cnn_acts[(a + 1) % 4]};
    for (int o = 0; o < 5; o++) {
      c.epilogue = cnn_acts[a] | others[o];
      CHECK_EQ_INT(tc_workload_check(&c), TH_ERR_INVALID);
    }
    tc_workload e = conv_wl(TC_KERNEL_ELTWISE, 1, 16, 4, 4, 16, 1, 1, 1, 0, 16, 16, cnn_acts[a]);
    e.alpha = 0.2f, e.beta = 0.5f;
    CHECK_EQ_INT(tc_workload_check(&e), TH_ERR_INVALID);
    e = conv_wl(TC_KERNEL_MAXPOOL, 1, 16, 4, 4, 16, 2, 2, 2, 0, 16, 16, cnn_acts[a]);
    CHECK_EQ_INT(tc_workload_check(&e), TH_ERR_INVALID);
    e = dense_wl(3, 8, 8, cnn_acts[a] | TC_EPI_RESIDUAL);
    e.alpha = 0.2f, e.beta = 0.5f;
    CHECK_EQ_INT(tc_workload_check(&e), TH_OK);
    e = conv_wl(TC_KERNEL_DEPTHWISE, 1, 16, 4, 4, 16, 3, 3, 1, 1, 16, 16, cnn_acts[a]);
    e.alpha = 0.2f, e.beta = 0.5f;
    CHECK_EQ_INT(tc_workload_check(&e), TH_OK);
  }
  return 0;
}

/* ---- batch_matmul ---- */

static tc_workload bmm_wl(int n, int m, int k, int nn, int trans_a, int trans_b, float alpha) {
  tc_workload wl;
  memset(&wl, 0, sizeof wl);
  wl.kernel = TC_KERNEL_BATCH_MATMUL;
  wl.n = n, wl.h = wl.oh = m, wl.c = k, wl.oc = nn, wl.w = wl.ow = 1;
  wl.in_cb = wl.out_cb = 1;
  wl.trans_a = trans_a, wl.trans_b = trans_b, wl.alpha = alpha;
  return wl;
}

static void ref_bmm(const tc_workload *wl, const float *a, const float *b, float *out) {
  int M = wl->h, K = wl->c, N = wl->oc;
  for (int i = 0; i < wl->n; i++)
    for (int r = 0; r < M; r++)
      for (int j = 0; j < N; j++) {
        double acc = 0;
        for (int k = 0; k < K; k++) {
          float x = wl->trans_a ? a[((size_t)i * K + k) * M + r] : a[((size_t)i * M + r) * K + k];
          float y = wl->trans_b ? b[((size_t)i * N + j) * K + k] : b[((size_t)i * K + k) * N + j];
          acc += (double)x * y;
        }
        out[((size_t)i * M + r) * N + j] = (float)(wl->alpha * acc);
      }
}

static int run_bmm(const tc_workload *wl, const tc_config *cfg, kfn f) {
  (void)cfg;
  size_t asz = (size_t)wl->n * wl->h * wl->c, bsz = (size_t)wl->n * wl->c * wl->oc;
  size_t osz = (size_t)wl->n * wl->h * wl->oc;
  float *a = rand_buf(asz), *b = rand_buf(bsz), *ref = rand_buf(osz), *out = rand_buf(osz);
  ref_bmm(wl, a, b, ref);
  void *args[3] = {a, b, out};
  f((void *const *)args);
  int ok = compare("batch_matmul", out, ref, osz);
  void *rargs[3] = {a, b, ref};
  CHECK_EQ_INT(tc_ref_kernel(wl, rargs), TH_OK);
  ok = ok && compare("batch_matmul vs tc_ref_kernel", out, ref, osz);
  free(a), free(b), free(ref), free(out);
  return ok;
}

static void check_bmm(const tc_workload *wls, int nwl, int per) {
  check_gemm(wls, nwl, per, run_bmm);
}

/* Attention's products (Q.K^T with trans_b at 197 and 128 tokens, attn.V) and edge shapes: both trans
 * flags, rows 1, 3, 129, k not a multiple of the vector, n ragged (a copied, zero-padded B) or long k (B
 * copied in k blocks), alpha != 1; then AVX2-width kernels on an AVX-512 machine. */
TH_TEST(batch_matmul_differential) {
  init_target();
  tc_workload wls[] = {
      bmm_wl(2, 197, 64, 197, 0, 1, 0.125f), bmm_wl(3, 128, 64, 128, 0, 1, 0.125f),
      bmm_wl(2, 197, 197, 64, 0, 0, 1.0f),   bmm_wl(2, 129, 67, 37, 1, 1, -0.5f),
      bmm_wl(1, 1, 3, 16, 1, 0, 2.0f),       bmm_wl(2, 3, 3072, 40, 0, 0, 1.0f),
      bmm_wl(3, 37, 130, 1000, 0, 0, 0.25f), bmm_wl(1, 128, 128, 64, 1, 0, 1.0f),
  };
  both_widths(check_bmm, wls, (int)(sizeof wls / sizeof wls[0]));
  return 0;
}

/* ---- the simple families: pools, softmax, eltwise, concat, layout ---- */

static void ref_pool(const tc_workload *wl, const float *in, float *out) {
  for (int b = 0; b < wl->n; b++)
    for (int c = 0; c < wl->c; c++)
      for (int y = 0; y < wl->oh; y++)
        for (int x = 0; x < wl->ow; x++) {
          double acc = wl->kernel == TC_KERNEL_MAXPOOL ? -INFINITY : 0;
          int cnt = 0;
          for (int i = 0; i < wl->kh; i++)
            for (int j = 0; j < wl->kw; j++) {
              int iy = y * wl->sh - wl->pt + i, ix = x * wl->sw - wl->pl + j;
              int inpad = iy >= -wl->pt && iy < wl->h + wl->pb && ix >= -wl->pl && ix < wl->w + wl->pr;
              int inside = iy >= 0 && iy < wl->h && ix >= 0 && ix < wl->w;
              if (wl->count_include_pad ? inpad : inside) cnt++;
              if (!inside) continue;
              float v = in[(((size_t)b * wl->c + c) * wl->h + iy) * wl->w + ix];
              if (wl->kernel == TC_KERNEL_MAXPOOL)
                acc = v > acc ? v : acc;
              else
                acc += v;
            }
          if (wl->kernel == TC_KERNEL_AVGPOOL) acc /= cnt;
          size_t oi = (((size_t)b * wl->oc + c) * wl->oh + y) * wl->ow + x;
          out[oi] = epi(wl, (float)acc, NULL, 0, NULL, 0);
        }
}

static void ref_simple(const tc_workload *wl, const float *a, const float *b, float *out) {
  size_t total = (size_t)wl->n * wl->c * wl->h * wl->w;
  switch (wl->kernel) {
    case TC_KERNEL_MAXPOOL:
    case TC_KERNEL_AVGPOOL: ref_pool(wl, a, out); break;
    case TC_KERNEL_GLOBAL_AVGPOOL:
      for (int n = 0; n < wl->n; n++)
        for (int c = 0; c < wl->c; c++) {
          double s = 0;
          for (int i = 0; i < wl->h * wl->w; i++) s += a[((size_t)n * wl->c + c) * wl->h * wl->w + i];
          out[n * wl->c + c] = epi(wl, (float)(s / (wl->h * wl->w)), NULL, 0, NULL, 0);
        }
      break;
    case TC_KERNEL_SOFTMAX: {
      size_t len = wl->w > 1 ? (size_t)wl->w : wl->h > 1 ? (size_t)wl->h : (size_t)wl->c;
      for (size_t r = 0; r < total / len; r++) {
        double mx = -INFINITY, s = 0;
        for (size_t i = 0; i < len; i++) mx = a[r * len + i] > mx ? a[r * len + i] : mx;
        for (size_t i = 0; i < len; i++) s += exp(a[r * len + i] - mx);
        for (size_t i = 0; i < len; i++) out[r * len + i] = (float)(exp(a[r * len + i] - mx) / s);
      }
      break;
    }
    case TC_KERNEL_ELTWISE:
      for (size_t i = 0; i < total; i++) out[i] = epi(wl, a[i] + b[i], NULL, 0, NULL, 0);
      break;
    case TC_KERNEL_CONCAT:
    case TC_KERNEL_LAYOUT: {
      int off = wl->kernel == TC_KERNEL_CONCAT ? wl->c_offset : 0;
      for (int n = 0; n < wl->n; n++)
        for (int c = 0; c < wl->c; c++)
          for (int i = 0; i < wl->h * wl->w; i++)
            out[((size_t)n * wl->oc + c + off) * wl->h * wl->w + i] =
                a[((size_t)n * wl->c + c) * wl->h * wl->w + i];
      break;
    }
    default: CHECK(0);
  }
}

static void check_simple(const tc_workload *wls, int nwl) {
  tc_workload all_wl[64];
  tc_config all_cfg[64];
  int n = 0;
  for (int i = 0; i < nwl; i++) {
    tc_config cfgs[4];
    int k = sample_configs(&wls[i], cfgs, 3);
    for (int j = 0; j < k; j++) {
      all_wl[n] = wls[i];
      all_cfg[n++] = cfgs[j];
    }
  }
  lib L;
  build(&L, n, all_wl, all_cfg);
  for (int q = 0; q < n; q++) {
    const tc_workload *wl = &all_wl[q];
    size_t isz = (size_t)wl->n * wl->c * wl->h * wl->w, osz = (size_t)wl->n * wl->oc * wl->oh * wl->ow;
    size_t isb = stored_size(wl->n, wl->c, wl->h, wl->w, wl->in_cb);
    size_t osb = stored_size(wl->n, wl->oc, wl->oh, wl->ow, wl->out_cb);
    float *a = rand_buf(isz), *b = rand_buf(isz), *ab = rand_buf(isb), *bb = rand_buf(isb), *ref = rand_buf(osz);
    float *outb = rand_buf(osb), *out = rand_buf(osz);
    if (wl->kernel == TC_KERNEL_CONCAT) { /* untouched channels keep their values */
      for (size_t i = 0; i < osz; i++) ref[i] = 0.125f;
    }
    ref_simple(wl, a, b, ref);
    /* eltwise on a blocked map adds the two as stored, padding included */
    int blocked = wl->kernel != TC_KERNEL_SOFTMAX && (wl->kernel != TC_KERNEL_ELTWISE || wl->in_cb > 1);
    if (blocked) {
      to_blocked(a, ab, wl->n, wl->c, wl->h, wl->w, wl->in_cb);
      to_blocked(b, bb, wl->n, wl->c, wl->h, wl->w, wl->in_cb);
      for (size_t i = 0; i < osb; i++) outb[i] = wl->kernel == TC_KERNEL_CONCAT ? 0.125f : NAN;
    } else {
      memcpy(ab, a, isz * sizeof *a);
      memcpy(bb, b, isz * sizeof *b);
    }
    void *args2[2] = {ab, outb}, *args3[3] = {ab, bb, outb};
    sym(&L, q)(wl->kernel == TC_KERNEL_ELTWISE ? (void *const *)args3 : (void *const *)args2);
    if (blocked)
      from_blocked(outb, out, wl->n, wl->oc, wl->oh, wl->ow, wl->out_cb);
    else
      memcpy(out, outb, osz * sizeof *out);
    char key[512];
    tc_workload_key(wl, key, sizeof key);
    CHECK(compare(key, out, ref, osz));
    if (blocked && tc_channels_stored(wl->oc, wl->out_cb) > wl->oc) {
      /* padding: the copy of the last channels zeroes it; the computing kernels keep it finite */
      int copy = wl->kernel == TC_KERNEL_CONCAT || wl->kernel == TC_KERNEL_LAYOUT;
      int last = copy && (wl->kernel == TC_KERNEL_LAYOUT || wl->c_offset + wl->c == wl->oc);
      float want = last ? 0.0f : copy ? 0.125f : -1;
      if (!padding_is(outb, wl->n, wl->oc, wl->oh, wl->ow, wl->out_cb, want)) {
        fprintf(stderr, "%s: padding lanes are not %g\n", key, (double)want);
        CHECK(0);
      }
    }
    free(a), free(b), free(ab), free(bb), free(ref), free(outb), free(out);
  }
  unload(&L);
}

TH_TEST(pool_differential) {
  init_target();
  tc_workload w[8];
  w[0] = conv_wl(TC_KERNEL_MAXPOOL, 1, 16, 15, 15, 16, 3, 3, 2, 1, 16, 16, 0); /* resnet */
  w[1] = conv_wl(TC_KERNEL_AVGPOOL, 1, 8, 9, 10, 8, 3, 3, 1, 1, 4, 4, 0);
  w[2] = w[1];
  w[2].count_include_pad = 1;
  w[3] = conv_wl(TC_KERNEL_AVGPOOL, 2, 12, 8, 8, 12, 2, 2, 2, 0, 4, 4, TC_EPI_RELU);
  w[4] = conv_wl(TC_KERNEL_MAXPOOL, 1, 3, 13, 13, 3, 3, 3, 2, 0, 1, 1, TC_EPI_CLIP); /* squeezenet-like */
  w[5] = conv_wl(TC_KERNEL_MAXPOOL, 1, 16, 7, 7, 16, 3, 3, 1, 1, 16, 8, 0);
  w[6] = conv_wl(TC_KERNEL_MAXPOOL, 2, 58, 9, 9, 58, 3, 3, 2, 1, 16, 16, 0); /* padded blocks */
  w[7] = conv_wl(TC_KERNEL_AVGPOOL, 1, 20, 6, 6, 20, 3, 3, 1, 1, 8, 8, 0);
  check_simple(w, 8);
  return 0;
}

TH_TEST(global_avgpool_differential) {
  init_target();
  tc_workload w[4];
  w[0] = conv_wl(TC_KERNEL_GLOBAL_AVGPOOL, 1, 24, 7, 7, 24, 7, 7, 1, 0, 8, 8, 0);
  w[1] = conv_wl(TC_KERNEL_GLOBAL_AVGPOOL, 2, 32, 5, 3, 32, 5, 3, 1, 0, 16, 1, TC_EPI_RELU);
  w[2] = conv_wl(TC_KERNEL_GLOBAL_AVGPOOL, 1, 6, 13, 13, 6, 13, 13, 1, 0, 2, 2, 0);
  w[3] = conv_wl(TC_KERNEL_GLOBAL_AVGPOOL, 2, 58, 7, 7, 58, 7, 7, 1, 0, 16, 16, 0); /* padded */
  for (int i = 0; i < 4; i++) w[i].oh = w[i].ow = 1;
  check_simple(w, 4);
  return 0;
}

TH_TEST(softmax_differential) {
  init_target();
  tc_workload w[2];
  w[0] = conv_wl(TC_KERNEL_SOFTMAX, 2, 1000, 1, 1, 1000, 1, 1, 1, 0, 1, 1, 0);
  w[1] = conv_wl(TC_KERNEL_SOFTMAX, 1, 3, 4, 5, 3, 1, 1, 1, 0, 1, 1, 0);
  check_simple(w, 2);
  return 0;
}

TH_TEST(eltwise_differential) {
  init_target();
  tc_workload w[4];
  w[0] = conv_wl(TC_KERNEL_ELTWISE, 1, 16, 7, 7, 16, 1, 1, 1, 0, 16, 16, TC_EPI_RELU);
  w[1] = conv_wl(TC_KERNEL_ELTWISE, 1, 5, 31, 33, 5, 1, 1, 1, 0, 1, 1, TC_EPI_CLIP);
  w[2] = conv_wl(TC_KERNEL_ELTWISE, 2, 64, 9, 9, 64, 1, 1, 1, 0, 16, 16, 0);
  w[3] = conv_wl(TC_KERNEL_ELTWISE, 2, 58, 5, 5, 58, 1, 1, 1, 0, 16, 16, TC_EPI_RELU); /* padded */
  check_simple(w, 4);
  return 0;
}

TH_TEST(concat_differential) {
  init_target();
  tc_workload w[7];
  w[0] = conv_wl(TC_KERNEL_CONCAT, 1, 8, 5, 6, 24, 1, 1, 1, 0, 8, 8, 0);
  w[0].c_offset = 16;
  w[1] = conv_wl(TC_KERNEL_CONCAT, 2, 3, 4, 5, 7, 1, 1, 1, 0, 1, 1, 0);
  w[1].c_offset = 4;
  w[2] = conv_wl(TC_KERNEL_CONCAT, 1, 16, 3, 3, 48, 1, 1, 1, 0, 16, 16, 0);
  w[2].c_offset = 16;
  /* shufflenet's 58 + 58 -> 116 in padded blocks of 16 (and 16 -> 8): the second zeroes the padding */
  w[3] = conv_wl(TC_KERNEL_CONCAT, 2, 58, 3, 4, 116, 1, 1, 1, 0, 16, 16, 0);
  w[4] = w[3];
  w[4].c_offset = 58;
  w[5] = conv_wl(TC_KERNEL_CONCAT, 1, 116, 3, 3, 232, 1, 1, 1, 0, 16, 8, 0);
  w[5].c_offset = 116;
  w[6] = conv_wl(TC_KERNEL_CONCAT, 1, 20, 3, 3, 58, 1, 1, 1, 0, 8, 16, 0);
  w[6].c_offset = 38;
  check_simple(w, 7);
  return 0;
}

TH_TEST(layout_differential) {
  init_target();
  int blocks[][2] = {{1, 16}, {16, 1}, {16, 8}, {8, 16}, {4, 16}, {16, 4}};
  tc_workload w[10];
  for (int i = 0; i < 6; i++)
    w[i] = conv_wl(TC_KERNEL_LAYOUT, 1, 16, 7, 9, 16, 1, 1, 1, 0, blocks[i][0], blocks[i][1], 0);
  w[6] = conv_wl(TC_KERNEL_LAYOUT, 2, 3, 5, 5, 3, 1, 1, 1, 0, 1, 1, 0);
  /* padded blocks: to them (the padding zeroed), from them, and between two */
  w[7] = conv_wl(TC_KERNEL_LAYOUT, 2, 58, 5, 3, 58, 1, 1, 1, 0, 1, 16, 0);
  w[8] = conv_wl(TC_KERNEL_LAYOUT, 2, 58, 5, 3, 58, 1, 1, 1, 0, 16, 1, 0);
  w[9] = conv_wl(TC_KERNEL_LAYOUT, 1, 20, 4, 4, 20, 1, 1, 1, 0, 8, 16, 0);
  check_simple(w, 10);
  return 0;
}

/* ---- spaces, validity, features, runtime ---- */

TH_TEST(space_round_trip) {
  init_target();
  tc_workload wls[] = {conv_wl(TC_KERNEL_CONV2D, 1, 64, 56, 56, 64, 3, 3, 1, 1, 16, 16, 0),
                       conv_wl(TC_KERNEL_DEPTHWISE, 1, 32, 13, 13, 32, 3, 3, 1, 1, 16, 16, 0),
                       conv_wl(TC_KERNEL_DENSE, 1, 512, 1, 1, 1000, 1, 1, 1, 0, 1, 1, 0),
                       conv_wl(TC_KERNEL_ELTWISE, 1, 16, 7, 7, 16, 1, 1, 1, 0, 16, 16, 0)};
  for (int i = 0; i < 4; i++) {
    tc_space s;
    CHECK_EQ_INT(tc_op_space(&wls[i], &target, &s), TH_OK);
    int64_t size = tc_space_size(&s);
    CHECK(size >= 1);
    for (int64_t j = 0; j < size; j += (size / 97) + 1) {
      tc_config c;
      tc_space_get(&s, j, &c);
      CHECK_EQ_INT(tc_space_index(&s, &c), j);
    }
  }
  /* The conv space is of AutoTVM's order of size for a 64->64 3x3 at 56x56. */
  tc_space s;
  CHECK_EQ_INT(tc_op_space(&wls[0], &target, &s), TH_OK);
  CHECK(tc_space_size(&s) > 100);
  return 0;
}

TH_TEST(invalid_config_rejected) {
  init_target();
  tc_workload wl = conv_wl(TC_KERNEL_CONV2D, 1, 64, 56, 56, 64, 3, 3, 1, 1, 16, 16, 0);
  tc_space s;
  CHECK_EQ_INT(tc_op_space(&wl, &target, &s), TH_OK);
  tc_config c;
  memset(&c, 0, sizeof c);
  c.nknobs = s.nknobs;
  int koc = tc_space_knob(&s, "tile_oc"), kow = tc_space_knob(&s, "tile_ow");
  CHECK(koc >= 0 && kow >= 0);
  c.idx[koc] = s.knobs[koc].nvalues - 1; /* most oc vectors */
  c.idx[kow] = s.knobs[kow].nvalues - 1; /* widest tile: far more accumulators than registers */
  CHECK_EQ_INT(tc_op_valid(&wl, &target, &s, &c), TH_ERR_INVALID);
  th_arena *a = th_arena_new(4096);
  const tc_stmt *body = NULL;
  CHECK_EQ_INT(tc_op_lower(&wl, &c, &target, a, &body), TH_ERR_INVALID);
  c.idx[0] = 999; /* out of range */
  CHECK_EQ_INT(tc_op_valid(&wl, &target, &s, &c), TH_ERR_INVALID);
  /* A malformed workload is rejected, not crashed on. */
  tc_workload bad = wl;
  bad.oh = 57;
  CHECK_EQ_INT(tc_op_space(&bad, &target, &s), TH_ERR_INVALID);
  bad = wl;
  bad.in_cb = 3;
  CHECK_EQ_INT(tc_op_space(&bad, &target, &s), TH_ERR_INVALID);
  th_arena_free(a);
  return 0;
}

TH_TEST(features_fixed_length) {
  init_target();
  tc_workload wl = conv_wl(TC_KERNEL_CONV2D, 1, 64, 56, 56, 64, 3, 3, 1, 1, 16, 16, TC_EPI_RELU);
  tc_space s;
  CHECK_EQ_INT(tc_op_space(&wl, &target, &s), TH_OK);
  tc_config cfgs[4];
  int n = sample_configs(&wl, cfgs, 4);
  CHECK(n >= 2);
  float f[2][TC_IR_FEATURE_LEN];
  for (int i = 0; i < 2; i++) {
    th_arena *a = th_arena_new(1 << 16);
    const tc_stmt *body = NULL;
    CHECK_EQ_INT(tc_op_lower(&wl, &cfgs[i], &target, a, &body), TH_OK);
    int len = 0;
    CHECK_EQ_INT(tc_ir_features(body, f[i], TC_IR_FEATURE_LEN, &len), TH_OK);
    CHECK_EQ_INT(len, TC_IR_FEATURE_LEN);
    CHECK_EQ_INT(tc_ir_features(body, f[i], TC_IR_FEATURE_LEN - 1, &len), TH_ERR_INVALID);
    /* The FMA count is the conv's MACs / lanes whatever the direct tiling; Winograd does under half. */
    float *g = f[i] + TC_IR_FEATURE_LOOPS * TC_IR_FEATURE_PER_LOOP;
    double macs = tc_workload_flops(&wl) / 2;
    if (tc_config_int(&s, &cfgs[i], "winograd", -1) == 0)
      CHECK(fabs(g[0] - log2(1 + macs)) < 0.01);
    else
      CHECK(g[0] < log2(1 + macs) - 1);
    th_arena_free(a);
  }
  CHECK(memcmp(f[0], f[1], sizeof f[0]) != 0);
  return 0;
}

TH_TEST(channel_block_rule) {
  CHECK_EQ_INT(tc_channel_block(3, 16), 1);
  CHECK_EQ_INT(tc_channel_block(64, 16), 16);
  CHECK_EQ_INT(tc_channel_block(24, 8), 8);
  CHECK_EQ_INT(tc_channel_block(12, 16), 4);
  CHECK_EQ_INT(tc_channel_block(6, 16), 2);
  /* a padded block of one vector where the exact one is narrower than 8 lanes and padding adds <= 1/4 */
  CHECK_EQ_INT(tc_channel_block(58, 16), 16);
  CHECK_EQ_INT(tc_channel_block(116, 16), 16);
  CHECK_EQ_INT(tc_channel_block(232, 16), 8); /* 8 x 29: an exact block of 8 is kept */
  CHECK_EQ_INT(tc_channel_block(58, 8), 8);
  CHECK_EQ_INT(tc_channel_block(20, 16), 4); /* 32 / 20 wastes too much */
  CHECK_EQ_INT(tc_channel_block(28, 16), 16);
  CHECK_EQ_INT(tc_channel_block(10, 16), 2); /* fewer channels than lanes */
  CHECK_EQ_INT(tc_channel_block(58, 4), 4);
  CHECK_EQ_INT(tc_channels_stored(58, 16), 64);
  CHECK_EQ_INT(tc_channels_stored(58, 2), 58);
  CHECK_EQ_INT(tc_channels_stored(3, 1), 3);
  return 0;
}

TH_TEST(print_and_key) {
  init_target();
  tc_workload wl = conv_wl(TC_KERNEL_CONV2D, 1, 64, 56, 56, 64, 3, 3, 1, 1, 16, 16, TC_EPI_RELU);
  char key[256];
  CHECK_EQ_INT(tc_workload_key(&wl, key, sizeof key), TH_OK);
  CHECK(strstr(key, "conv2d_nchwc") == key);
  CHECK_EQ_INT(tc_workload_key(&wl, key, 8), TH_ERR_TOO_LARGE);
  tc_space s;
  tc_config c;
  CHECK_EQ_INT(tc_op_space(&wl, &target, &s), TH_OK);
  CHECK_EQ_INT(tc_op_fallback(&wl, &target, &s, &c), TH_OK);
  th_buf b;
  th_buf_init(&b, 1 << 24);
  CHECK_EQ_INT(tc_op_print(&wl, &c, &target, &b), TH_OK);
  CHECK(strstr(b.data, "parallel") && strstr(b.data, "fma(") && strstr(b.data, "unrolled"));
  th_buf_free(&b);
  return 0;
}

static void count_range(void *ctx, int64_t b, int64_t e) {
  int *hits = ctx;
  for (int64_t i = b; i < e; i++) __atomic_add_fetch(&hits[i], 1, __ATOMIC_RELAXED);
}

static void chunk_lengths(void *ctx, int64_t b, int64_t e) {
  int64_t *len_at = ctx;
  for (int64_t i = b; i < e; i++) len_at[i] = e - b;
}

TH_TEST(runtime_parallel_for) {
  static int hits[1001];
  for (int rep = 0; rep < 200; rep++) {
    int n = 1 + rep * 5;
    memset(hits, 0, sizeof hits);
    th_rt_parallel_for(count_range, hits, n);
    for (int i = 0; i < n; i++) CHECK_EQ_INT(hits[i], 1);
    CHECK_EQ_INT(hits[n], 0);
  }
  CHECK(th_rt_num_threads() >= 1);
  /* Guided chunks: none longer than n / (4 x threads), and the chunk holding the last index is a single
   * index whenever there are more indices than 2 x threads (no thread waits on a long final chunk). */
  static int64_t len_at[1000];
  int nt = th_rt_num_threads();
  for (int n = 2 * nt + 1; nt > 1 && n <= 1000; n += 37) {
    memset(len_at, 0, sizeof len_at);
    th_rt_parallel_for(chunk_lengths, len_at, n);
    int64_t cmax = (n + 4 * nt - 1) / (4 * nt);
    for (int i = 0; i < n; i++) CHECK(len_at[i] >= 1 && len_at[i] <= cmax);
    CHECK_EQ_INT((int)len_at[n - 1], 1);
  }
  int p[TH_RT_PACK_NPARAMS] = {99};
  float x = 0;
  CHECK_EQ_INT(th_rt_pack_weights(p, &x, &x), -1);
  return 0;
}

/* A worker that is late for a parallel-for (descheduled by another tenant, or slow to wake) must not hold
 * the loop up: the caller takes every chunk itself and returns. The test holds the pool's one worker inside
 * a signal handler (blocked on a pipe) while the caller runs loops, then lets it go and checks that it
 * takes part in later loops without running any chunk twice. */
static int late_pipe[2];
static atomic_int late_held;

static void late_hold(int sig) {
  (void)sig;
  atomic_store(&late_held, 1);
  char c;
  while (read(late_pipe[0], &c, 1) < 0 && errno == EINTR) {
  }
  atomic_store(&late_held, 0);
}

static int late_tids(pid_t *tids, int max) {
  DIR *d = opendir("/proc/self/task");
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) && n < max)
    if (e->d_name[0] != '.') tids[n++] = (pid_t)atoi(e->d_name);
  closedir(d);
  return n;
}

static int late_loops(int reps) {
  static int hits[1001];
  for (int rep = 0; rep < reps; rep++) {
    int n = 2 + rep * 7 % 999;
    memset(hits, 0, sizeof hits);
    th_rt_parallel_for(count_range, hits, n);
    for (int i = 0; i < n; i++)
      if (hits[i] != 1) return 1;
  }
  return 0;
}

static atomic_int late_done, late_bad;

static void *late_caller(void *arg) {
  (void)arg;
  atomic_store(&late_bad, late_loops(100));
  atomic_store(&late_done, 1);
  return NULL;
}

TH_TEST(runtime_late_worker) {
  setenv("TH_NUM_THREADS", "2", 1);
  pid_t before[256], after[256], worker = 0;
  int nb = late_tids(before, 256);
  CHECK(nb > 0);
  CHECK_EQ_INT(th_rt_num_threads(), 2); /* the pool starts here, with one worker */
  int na = late_tids(after, 256);
  for (int i = 0; i < na; i++) {
    int old = 0;
    for (int j = 0; j < nb; j++) old |= after[i] == before[j];
    if (!old) worker = after[i];
  }
  CHECK(worker > 0 && na == nb + 1);
  CHECK_EQ_INT(late_loops(50), 0); /* the worker has taken part in loops before it is held */
  CHECK_EQ_INT(pipe(late_pipe), 0);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = late_hold;
  CHECK_EQ_INT(sigaction(SIGUSR1, &sa, NULL), 0);
  CHECK_EQ_INT((int)syscall(SYS_tgkill, getpid(), worker, SIGUSR1), 0);
  for (int ms = 0; !atomic_load(&late_held) && ms < 5000; ms++) usleep(1000);
  CHECK(atomic_load(&late_held));
  /* 100 loops while the worker is held: they must all finish without it */
  pthread_t t;
  CHECK_EQ_INT(pthread_create(&t, NULL, late_caller, NULL), 0);
  for (int ms = 0; !atomic_load(&late_done) && ms < 10000; ms++) usleep(1000);
  int finished_alone = atomic_load(&late_done);
  CHECK_EQ_INT((int)write(late_pipe[1], "x", 1), 1); /* let it go (also after a failure, so the loop ends) */
  pthread_join(t, NULL);
  CHECK(finished_alone);
  CHECK_EQ_INT(atomic_load(&late_bad), 0);
  /* the late worker comes back and takes part again; no chunk runs twice */
  CHECK_EQ_INT(late_loops(300), 0);
  for (int ms = 0; atomic_load(&late_held) && ms < 5000; ms++) usleep(1000);
  CHECK(!atomic_load(&late_held));
  CHECK_EQ_INT(late_loops(300), 0);
  close(late_pipe[0]);
  close(late_pipe[1]);
  return 0;
}

TH_TEST(llvm_errors_are_returned) {
  init_target();
  tc_llvm_module_t *m = NULL;
  CHECK_EQ_INT(tc_llvm_module_new(&target, "t", &m), TH_OK);
  tc_workload wl = conv_wl(TC_KERNEL_CONV2D, 1, 64, 56, 56, 64, 3, 3, 1, 1, 16, 16, 0);
  tc_config c;
  memset(&c, 0, sizeof c);
  c.nknobs = 1;
  CHECK_EQ_INT(tc_llvm_add_kernel(m, "bad", &wl, &c), TH_ERR_INVALID);
  /* A GPU-bound loop is not something the CPU backend can lower. */
  th_arena *a = th_arena_new(4096);
  tc_ir ir;
  tc_ir_init(&ir, a);
  tc_var *i = tc_var_new(&ir, "i", tc_type_int());
  tc_var *buf = tc_var_buffer(&ir, "out", tc_type_f32(1), 0);
  const tc_stmt *s = tc_s_for(&ir, i, tc_e_int(&ir, 0), tc_e_int(&ir, 4), TC_FOR_GPU_THREAD_X,
                              tc_s_store(&ir, buf, tc_e_var(&ir, i), tc_e_float(&ir, 1.0), 4));
  CHECK(s);
  CHECK_EQ_INT(tc_llvm_add_stmt(m, "gpu", s), TH_ERR_UNSUPPORTED);
  CHECK(strlen(tc_llvm_errmsg(m)) > 0);
  tc_llvm_module_free(m);
  th_arena_free(a);
  char err[256];
  CHECK_EQ_INT(tc_kernels_build_so(&target, 1, &wl, &c, (const char *const[]){"k"}, "/nonexistent/x.so", err,
                                   sizeof err),
               TH_ERR_INVALID);
  return 0;
}
