/* Tests of the ONNX importer's 3-D windows and dilated max pools
 * (compiler/import/onnx_ops_conv3d.c, issue 38): Conv over [N, C, D, H, W] with groups, strides,
 * dilations and uneven pads, MaxPool and AveragePool in 3-D with ceil_mode and count_include_pad
 * both ways, and MaxPool with dilations in 1-D and 2-D (windows longer than the kernels' 64 taps
 * among them). Shapes and attributes are drawn from a few seeds; each model is imported at batch 1
 * and 3, run by the reference interpreter and compared with naive loops written from the ONNX
 * definitions. */
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

static uint64_t rng_state;

static int rnd(int lo, int hi) { /* in [lo, hi] */
  rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
  return lo + (int)((rng_state >> 33) % (uint64_t)(hi - lo + 1));
}

/* One window: r spatial axes (1..3) of sizes in, kernel taps k, strides s, dilations d, pads p0
 * (begin) and p1 (end). */
typedef struct {
  int r, in[3], k[3], s[3], d[3], p0[3], p1[3], ceil_mode;
} win;

/* ONNX's output size (ceil_mode: PyTorch's rule that the last window starts inside the input or
 * its begin padding, which ONNX's tests follow). */
static int out_dim(const win *w, int a) {
  int ext = (w->k[a] - 1) * w->d[a] + 1, span = w->in[a] + w->p0[a] + w->p1[a] - ext;
  if (span < 0) return 0;
  int o = (w->ceil_mode ? (span + w->s[a] - 1) / w->s[a] : span / w->s[a]) + 1;
  if (w->ceil_mode && (o - 1) * w->s[a] >= w->in[a] + w->p0[a]) o--;
  return o;
}

static int64_t prod(const int *v, int r) {
  int64_t p = 1;
  for (int i = 0; i < r; i++) p *= v[i];
  return p;
}

/* Output position idx (flat over the r output dims o) as coordinates. */
static void coords(int64_t idx, const int *o, int r, int *c) {
  for (int a = r - 1; a >= 0; a--) {
    c[a] = (int)(idx % o[a]);
    idx /= o[a];
  }
}

/* b's model with output "y", packed (malloc'd); b is freed. */
static uint8_t *pack(tb *b, size_t *len) {
  tb_output(b, "y");
  uint8_t *p = tb_pack(b, len);
  tb_free(b);
  return p;
}

/* Imports p at batch; returns the graph or NULL with err holding the reason. */
static tc_graph *import(const uint8_t *p, size_t len, int batch, char *err, size_t n) {
  tc_onnx_opts o = {"test", batch, NULL, 1};
  tc_graph *g = NULL;
  err[0] = 0;
  if (tc_onnx_import(p, len, &o, &g, NULL, err, n) != TH_OK) return NULL;
  return g;
}

/* Runs g (one input) on x; the output (malloc'd) must have the dims want[0 .. r). */
static float *run(const tc_graph *g, const float *x, const int64_t *want, int r) {
  const tc_tensor *t = &g->nodes[g->outputs[0]].out;
  CHECK_EQ_INT(t->ndim, r);
  for (int i = 0; i < r && i < t->ndim; i++) CHECK_EQ_INT(t->shape[i], (int)want[i]);
  float *out = malloc((size_t)tc_tensor_bytes(t));
  const void *ins[1] = {x};
  void *outs[1] = {out};
  char err[256] = "";
  th_status rc = tc_ref_run_io(g, ins, outs, err, sizeof err);
  if (rc != TH_OK) fprintf(stderr, "reference: %s\n", err);
  CHECK(rc == TH_OK);
  return out;
}

/* Sets the window attributes of node n (kernel_shape only for pools). */
static void attrs(tb *b, Onnx__NodeProto *n, const win *w, int kernel, int dil) {
  int64_t k[3], s[3], d[3], p[6];
  for (int a = 0; a < w->r; a++) {
    k[a] = w->k[a];
    s[a] = w->s[a];
    d[a] = w->d[a];
    p[a] = w->p0[a];
    p[a + w->r] = w->p1[a];
  }
  if (kernel) tb_attr_ints(b, n, "kernel_shape", w->r, k);
  tb_attr_ints(b, n, "strides", w->r, s);
  if (dil) tb_attr_ints(b, n, "dilations", w->r, d);
  tb_attr_ints(b, n, "pads", 2 * w->r, p);
  if (w->ceil_mode) tb_attr_i(b, n, "ceil_mode", 1);
}

/* Whether some output's window lies wholly in the padding along an axis (the importer refuses a
 * dilated one; ONNX leaves its value to the implementation). */
static int degenerate(const win *w) {
  for (int a = 0; a < w->r; a++)
    for (int o = 0; o < out_dim(w, a); o++) {
      int hit = 0;
      for (int t = 0; t < w->k[a]; t++) {
        int i = o * w->s[a] - w->p0[a] + t * w->d[a];
        hit = hit || (i >= 0 && i < w->in[a]);
      }
      if (!hit) return 1;
    }
  return 0;
}

/* Draws a window over r axes; pads below the dilated extent (the importer's rule). */
static void draw(win *w, int r, int kmax, int smax, int dmax) {
  memset(w, 0, sizeof *w);
  w->r = r;
  for (int a = 0; a < r; a++) {
    w->k[a] = rnd(1, kmax);
    w->s[a] = rnd(1, smax);
    w->d[a] = rnd(1, dmax);
    int ext = (w->k[a] - 1) * w->d[a] + 1;
    w->in[a] = rnd(ext > 2 ? ext - 1 : 1, ext + 6);
    w->p0[a] = rnd(0, (ext - 1) < 2 ? ext - 1 : 2);
    w->p1[a] = rnd(0, (ext - 1) < 2 ? ext - 1 : 2);
  }
}

/* Conv over [N, C, D, H, W]: groups, strides, dilations and uneven pads drawn from 8 seeds, bias or
 * none, at batch 1 and 3, against the ONNX definition; both lowerings (folded: output depth up to
 * the taps; stacked: past them) among the draws. */
TH_TEST(conv3d_matches_naive) {
  int paths[2] = {0, 0}; /* folded (one conv), stacked (a conv per depth slice and a dense) */
  for (int seed = 1; seed <= 8; seed++) {
    rng_state = (uint64_t)seed * 7919;
    win w;
    int o[3];
    do {
      draw(&w, 3, 3, 2, 2);
      for (int a = 0; a < 3; a++) o[a] = out_dim(&w, a);
    } while (o[0] < 1 || o[1] < 1 || o[2] < 1);
    int G = rnd(1, 2), C = G * rnd(1, 3), M = G * rnd(1, 3), bias = seed % 2;
    tb *b = tb_new(seed % 2 ? 11 : 17);
    int64_t xd[5] = {-1, C, w.in[0], w.in[1], w.in[2]};
    int64_t wd[5] = {M, C / G, w.k[0], w.k[1], w.k[2]}, bd[1] = {M};
    int64_t nw = prod((int[]){M, C / G, w.k[0], w.k[1], w.k[2]}, 5);
    float *wt = malloc((size_t)nw * sizeof *wt), bv[8];
    tb_fill(wt, nw, (uint64_t)seed + 100);
    tb_fill(bv, M, (uint64_t)seed + 200);
    tb_input(b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 5, xd);
    tb_init_f(b, "w", 5, wd, wt);
    if (bias) tb_init_f(b, "b", 1, bd, bv);
    Onnx__NodeProto *n = tb_node(b, "Conv", "c3", bias ? "x,w,b" : "x,w", "y");
    attrs(b, n, &w, seed % 3 == 0, 1);
    tb_attr_i(b, n, "group", G);
    size_t len;
    uint8_t *p = pack(b, &len);
    for (int N = 1; N <= 3; N += 2) {
      char err[1024];
      tc_graph *g = import(p, len, N, err, sizeof err);
      if (!g) fprintf(stderr, "seed %d: %s\n", seed, err);
      CHECK(g != NULL);
      if (!g) continue;
      int dense = 0;
      for (int i = 0; i < g->nnodes; i++) dense += g->nodes[i].op == TC_OP_DENSE;
      CHECK_EQ_INT(dense, o[0] > w.k[0]); /* stacked when the output depth passes the taps */
      paths[dense > 0]++;
      int64_t nx = (int64_t)N * C * prod(w.in, 3), no = prod(o, 3);
      float *x = malloc((size_t)nx * sizeof *x);
      tb_fill(x, nx, (uint64_t)seed + 300 + N);
      int64_t want[5] = {N, M, o[0], o[1], o[2]};
      float *y = run(g, x, want, 5);
      double worst = 0;
      for (int nn = 0; nn < N; nn++)
        for (int m = 0; m < M; m++)
          for (int64_t e = 0; e < no; e++) {
            int oc[3], gi = m / (M / G);
            coords(e, o, 3, oc);
            double acc = bias ? bv[m] : 0;
            for (int ci = 0; ci < C / G; ci++)
              for (int64_t t = 0; t < prod(w.k, 3); t++) {
                int kc[3], ic[3], in = 1;
                coords(t, w.k, 3, kc);
                for (int a = 0; a < 3; a++) {
                  ic[a] = oc[a] * w.s[a] - w.p0[a] + kc[a] * w.d[a];
                  in = in && ic[a] >= 0 && ic[a] < w.in[a];
                }
                if (!in) continue;
                int c = gi * (C / G) + ci;
                acc += (double)wt[(m * (C / G) + ci) * prod(w.k, 3) + t] *
                       x[(((int64_t)nn * C + c) * w.in[0] + ic[0]) * w.in[1] * w.in[2] +
                         ic[1] * w.in[2] + ic[2]];
              }
            worst = fmax(worst, fabs(acc - y[((int64_t)nn * M + m) * no + e]));
          }
      if (worst >= 1e-4)
        fprintf(stderr, "conv3d seed %d batch %d: max |diff| %.3g\n", seed, N, worst);
      CHECK(worst < 1e-4);
      free(x);
      free(y);
      tc_graph_free(g);
    }
    free(p);
    free(wt);
  }
  fprintf(stderr, "conv3d: %d folded, %d stacked imports\n", paths[0], paths[1]);
  CHECK(paths[0] > 0 && paths[1] > 0);
  return 0;
}

/* The naive max or average pool of x [N, C, in...] over window w (count_include_pad cip). */
static double naive_pool(const float *x, int nc, const win *w, int is_max, int cip, const int *oc) {
  double acc = is_max ? -INFINITY : 0;
  int64_t cnt = 0, cnt_pad = 0, plane = prod(w->in, w->r);
  for (int64_t t = 0; t < prod(w->k, w->r); t++) {
    int kc[3], in = 1, inpad = 1;
    int64_t off = 0;
    coords(t, w->k, w->r, kc);
    for (int a = 0; a < w->r; a++) {
      int i = oc[a] * w->s[a] - w->p0[a] + kc[a] * w->d[a];
      in = in && i >= 0 && i < w->in[a];
      inpad = inpad && i >= -w->p0[a] && i < w->in[a] + w->p1[a];
      off = off * w->in[a] + i;
    }
    cnt_pad += inpad;
    if (!in) continue;
    double v = x[(int64_t)nc * plane + off];
    acc = is_max ? fmax(acc, v) : acc + v;
    cnt++;
  }
  return is_max ? acc : acc / (double)(cip ? cnt_pad : cnt);
}

/* Runs one pool model over window w at batch 1 and 3 against naive_pool; refused: the reason must
 * name the limit (want_refusal: the words), and nothing else is accepted. */
static void check_pool(const win *w, int is_max, int cip, int C, int opset, const char *tag,
                       const char *want_refusal) {
  int o[3] = {1, 1, 1};
  for (int a = 0; a < w->r; a++) o[a] = out_dim(w, a);
  tb *b = tb_new(opset);
  int64_t xd[5] = {-1, C, 0, 0, 0};
  for (int a = 0; a < w->r; a++) xd[2 + a] = w->in[a];
  tb_input(b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2 + w->r, xd);
  Onnx__NodeProto *n = tb_node(b, is_max ? "MaxPool" : "AveragePool", "p", "x", "y");
  attrs(b, n, w, 1, is_max);
  if (!is_max) tb_attr_i(b, n, "count_include_pad", cip);
  size_t len;
  uint8_t *p = pack(b, &len);
  for (int N = 1; N <= 3; N += 2) {
    char err[1024];
    tc_graph *g = import(p, len, N, err, sizeof err);
    if (want_refusal) {
      if (g || !strstr(err, want_refusal)) fprintf(stderr, "%s: %s\n", tag, err);
      CHECK(g == NULL && strstr(err, want_refusal) != NULL);
      tc_graph_free(g);
      continue;
    }
    if (!g) fprintf(stderr, "%s: %s\n", tag, err);
    CHECK(g != NULL);
    if (!g) continue;
    int64_t nx = (int64_t)N * C * prod(w->in, w->r), no = prod(o, w->r);
    float *x = malloc((size_t)nx * sizeof *x);
    tb_fill(x, nx, (uint64_t)N + 17);
    int64_t want[5] = {N, C, o[0], o[1], o[2]};
    float *y = run(g, x, want, 2 + w->r);
    double worst = 0;
    for (int nc = 0; nc < N * C; nc++)
      for (int64_t e = 0; e < no; e++) {
        int oc[3];
        coords(e, o, w->r, oc);
        worst = fmax(worst, fabs(naive_pool(x, nc, w, is_max, cip, oc) - y[nc * no + e]));
      }
    if (worst >= 1e-5) fprintf(stderr, "%s batch %d: max |diff| %.3g\n", tag, N, worst);
    CHECK(worst < 1e-5);
    free(x);
    free(y);
    tc_graph_free(g);
  }
  free(p);
}

/* MaxPool and AveragePool over [N, C, D, H, W]: windows from 4 seeds, ceil_mode and
 * count_include_pad both ways; count_include_pad with a ceil_mode window that runs past the
 * padding is refused by name (its last divisor is not a product). */
TH_TEST(pool3d_matches_naive) {
  char tag[64];
  for (int seed = 1; seed <= 4; seed++)
    for (int mode = 0; mode < 6; mode++) {
      rng_state = (uint64_t)seed * 104729 + (uint64_t)mode;
      win w;
      int ok;
      do {
        draw(&w, 3, 3, 3, 1);
        w.ceil_mode = mode % 2;
        ok = 1;
        for (int a = 0; a < 3; a++) ok = ok && out_dim(&w, a) >= 1;
      } while (!ok);
      int is_max = mode < 2, cip = mode >= 4;
      int grows = 0;
      for (int a = 0; a < 3 && w.ceil_mode; a++)
        grows = grows || (out_dim(&w, a) - 1) * w.s[a] + w.k[a] - w.in[a] - w.p0[a] > w.p1[a];
      snprintf(tag, sizeof tag, "pool3d seed %d mode %d", seed, mode);
      check_pool(&w, is_max, cip, rnd(1, 3), 12, tag,
                 !is_max && cip && grows ? "ceil_mode with count_include_pad" : NULL);
    }
  return 0;
}

/* MaxPool with dilations: 2-D windows from 8 seeds (strides and dilations with and without common
 * factors, ceil_mode both ways), 1-D ones, torch's MaxPool1d(kernel 70, dilation 3) whose 70 taps
 * pass the kernels' 64, and the 2-D case of ONNX's test_maxpool_2d_dilations. */
TH_TEST(maxpool_dilated_matches_naive) {
  char tag[64];
  for (int seed = 1; seed <= 8; seed++) {
    rng_state = (uint64_t)seed * 15485863;
    win w;
    int ok;
    do {
      draw(&w, 2, 3, 3, 4);
      w.ceil_mode = seed % 2;
      ok = (w.d[0] > 1 || w.d[1] > 1) && !degenerate(&w);
      for (int a = 0; a < 2; a++) ok = ok && out_dim(&w, a) >= 1;
    } while (!ok);
    snprintf(tag, sizeof tag, "dilated 2-D seed %d", seed);
    check_pool(&w, 1, 0, 2, seed % 2 ? 12 : 10, tag, NULL);
  }
  for (int seed = 1; seed <= 4; seed++) {
    rng_state = (uint64_t)seed * 32452843;
    win w;
    do {
      draw(&w, 1, 4, 4, 5);
    } while (w.d[0] == 1 || out_dim(&w, 0) < 1 || degenerate(&w));
    snprintf(tag, sizeof tag, "dilated 1-D seed %d", seed);
    check_pool(&w, 1, 0, 3, 12, tag, NULL);
  }
  win l = {.r = 1, .in = {300}, .k = {70}, .s = {2}, .d = {3}, .p0 = {5}, .p1 = {9}};
  check_pool(&l, 1, 0, 1, 12, "1-D, 70 taps", NULL);
  win t = {.r = 2, .in = {4, 4}, .k = {2, 2}, .s = {1, 1}, .d = {2, 2}};
  check_pool(&t, 1, 0, 1, 12, "test_maxpool_2d_dilations", NULL);
  return 0;
}
