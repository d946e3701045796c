/* Tests of the ONNX importer's scatters, Tile and OneHot (compiler/import/onnx_ops_scatter.c):
 * ScatterElements with each reduction and the old Scatter, Tile by constant repeats, OneHot with
 * negative and outside indices, built in C (onnx_build.h), imported and run by the reference
 * interpreter, compared with naive loops over the same inputs (duplicate and negative indices);
 * and the refusals: a reduction ONNX does not define, indices of another shape. */
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
#include "workload.h"

enum { N = 3, C = 5, K = 4 };

/* Imports a model of one scatter node `op` at `opset` (reduction red unless NULL, axis 1) over
 * data [N, C], indices and updates [N, k] at batch 3; NULL (and err) on failure. */
static tc_graph *ts_import(const char *op, int opset, const char *red, int k, th_status *rc,
                           char *err, size_t errlen) {
  tb *b = tb_new(opset);
  tb_input(b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, (int64_t[]){N, C});
  tb_input(b, "i", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 2, (int64_t[]){N, k});
  tb_input(b, "u", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, (int64_t[]){N, k});
  Onnx__NodeProto *n = tb_node(b, op, "s", "x,i,u", "y");
  tb_attr_i(b, n, "axis", 1);
  if (red) tb_attr_s(b, n, "reduction", red);
  tb_output(b, "y");
  size_t len;
  uint8_t *p = tb_pack(b, &len);
  tc_onnx_opts o = {"test", 3, NULL, 1};
  tc_graph *g = NULL;
  err[0] = 0;
  *rc = tc_onnx_import(p, len, &o, &g, NULL, err, errlen);
  free(p);
  tb_free(b);
  return g;
}

/* ScatterElements at opset 18 with each reduction, Scatter at opset 10: every row scatters K
 * updates along axis 1 with a duplicate (index 1 and -4) and a negative index. */
TH_TEST(scatter_reductions) {
  static const char *const reds[TC_SCATTER_COUNT] = {"none", "add", "mul", "max", "min"};
  for (int r = 0; r <= TC_SCATTER_COUNT; r++) {
    int old = r == TC_SCATTER_COUNT, op = old ? TC_SCATTER_NONE : r;
    th_status rc;
    char err[512];
    tc_graph *g = ts_import(old ? "Scatter" : "ScatterElements", old ? 10 : 18,
                            old ? NULL : reds[r], K, &rc, err, sizeof err);
    if (rc != TH_OK) fprintf(stderr, "import: %s\n", err);
    CHECK_EQ_INT(rc, TH_OK);
    float x[N * C], u[N * K], y[N * C], want[N * C];
    int64_t ix[N * K] = {1, -4, 3, 0, 4, -1, 2, 2, -5, 0, 1, 3};
    tb_fill(x, N * C, 5);
    tb_fill(u, N * K, 6);
    memcpy(want, x, sizeof want);
    for (int n = 0; n < N; n++)
      for (int k = 0; k < K; k++) {
        float *w = &want[n * C + (ix[n * K + k] + C) % C], v = u[n * K + k];
        *w = op == TC_SCATTER_ADD   ? *w + v
             : op == TC_SCATTER_MUL ? *w * v
             : op == TC_SCATTER_MAX ? fmaxf(*w, v)
             : op == TC_SCATTER_MIN ? fminf(*w, v)
                                    : v;
      }
    const void *ins[3] = {x, ix, u};
    void *outs[1] = {y};
    CHECK_EQ_INT(tc_ref_run_io(g, ins, outs, err, sizeof err), TH_OK);
    for (int e = 0; e < N * C; e++)
      if (y[e] != want[e]) {
        fprintf(stderr, "reduction %d element %d: got %.9g want %.9g\n", r, e, y[e], want[e]);
        CHECK(0);
      }
    tc_graph_free(g);
  }
  return 0;
}

/* A reduction ONNX does not define is refused by name; indices with fewer rows than the data are
 * refused as unsupported, naming the dim. Nothing is imported. */
TH_TEST(scatter_refusals) {
  th_status rc;
  char err[512];
  tc_graph *g = ts_import("ScatterElements", 18, "avg", K, &rc, err, sizeof err);
  CHECK(g == NULL);
  CHECK_EQ_INT(rc, TH_ERR_INVALID);
  CHECK(strstr(err, "reduction 'avg' is not none, add, mul, max or min") != NULL);
  tb *b = tb_new(13);
  tb_input(b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, (int64_t[]){N, C});
  tb_input(b, "i", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 2, (int64_t[]){N, 2});
  tb_input(b, "u", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, (int64_t[]){N, 2});
  tb_attr_i(b, tb_node(b, "ScatterElements", "s", "x,i,u", "y"), "axis", 0);
  tb_output(b, "y");
  size_t len;
  uint8_t *p = tb_pack(b, &len);
  tc_onnx_opts o = {"test", 3, NULL, 1};
  rc = tc_onnx_import(p, len, &o, &g, NULL, err, sizeof err);
  free(p);
  tb_free(b);
  CHECK(g == NULL);
  CHECK(rc != TH_OK);
  if (!strstr(err, "dim 1 (2) differs from data's (5)")) fprintf(stderr, "got: %s\n", err);
  CHECK(strstr(err, "dim 1 (2) differs from data's (5)") != NULL);
  return 0;
}

/* Tile [N, 2, 3] by constant repeats [1, 3, 2] (a middle and the last axis), and OneHot of int64
 * indices [N, 4] (negative ones, and 5 and -6 outside depth 5) along axis 1 with values [-1, 2]. */
TH_TEST(tile_and_onehot) {
  enum { D = 5 };
  tb *b = tb_new(13);
  tb_input(b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 3, (int64_t[]){N, 2, 3});
  tb_input(b, "i", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 2, (int64_t[]){N, K});
  tb_init_i(b, "reps", 1, (int64_t[]){3}, (int64_t[]){1, 3, 2});
  tb_init_i(b, "depth", 0, NULL, (int64_t[]){D});
  tb_init_f(b, "vals", 1, (int64_t[]){2}, (float[]){-1.0f, 2.0f});
  tb_node(b, "Tile", "t", "x,reps", "ty");
  tb_attr_i(b, tb_node(b, "OneHot", "o", "i,depth,vals", "oy"), "axis", 1);
  tb_output(b, "ty");
  tb_output(b, "oy");
  size_t len;
  uint8_t *p = tb_pack(b, &len);
  tc_onnx_opts o = {"test", 3, NULL, 1};
  tc_graph *g = NULL;
  char err[512] = "";
  th_status rc = tc_onnx_import(p, len, &o, &g, NULL, err, sizeof err);
  free(p);
  tb_free(b);
  if (rc != TH_OK) fprintf(stderr, "import: %s\n", err);
  CHECK_EQ_INT(rc, TH_OK);
  float x[N * 6], ty[N * 6 * 6], oy[N * D * K];
  int64_t ix[N * K] = {0, -1, 4, 5, -5, 2, -6, 1, 3, 3, -2, 0};
  tb_fill(x, N * 6, 7);
  const void *ins[2] = {x, ix};
  void *outs[2] = {ty, oy};
  CHECK_EQ_INT(tc_ref_run_io(g, ins, outs, err, sizeof err), TH_OK);
  for (int n = 0; n < N; n++)
    for (int r = 0; r < 6; r++)
      for (int c = 0; c < 6; c++)
        if (ty[(n * 6 + r) * 6 + c] != x[(n * 2 + r % 2) * 3 + c % 3]) {
          fprintf(stderr, "tile [%d, %d, %d]: got %g\n", n, r, c, ty[(n * 6 + r) * 6 + c]);
          CHECK(0);
        }
  for (int n = 0; n < N; n++)
    for (int d = 0; d < D; d++)
      for (int k = 0; k < K; k++) {
        int64_t v = ix[n * K + k], w = v < 0 ? v + D : v;
        float want = w == d ? 2.0f : -1.0f;
        if (oy[(n * D + d) * K + k] != want) {
          fprintf(stderr, "onehot [%d, %d, %d]: got %g want %g\n", n, d, k,
                  oy[(n * D + d) * K + k], want);
          CHECK(0);
        }
      }
  tc_graph_free(g);
  return 0;
}

/* TopK along axis 1 of [N, 6, 2] (not the last) at opset 11 with k 3 as a constant input, largest
 * and smallest, on values with ties (the lower index first), against a naive selection. */
TH_TEST(topk_axis_ties) {
  enum { L = 6, W = 2, KK = 3 };
  for (int largest = 0; largest < 2; largest++) {
    tb *b = tb_new(11);
    tb_input(b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 3, (int64_t[]){N, L, W});
    tb_init_i(b, "k", 1, (int64_t[]){1}, (int64_t[]){KK});
    Onnx__NodeProto *nd = tb_node(b, "TopK", "t", "x,k", "v,i");
    tb_attr_i(b, nd, "axis", 1);
    tb_attr_i(b, nd, "largest", largest);
    tb_output(b, "v");
    tb_output(b, "i");
    size_t len;
    uint8_t *p = tb_pack(b, &len);
    tc_onnx_opts o = {"test", 3, NULL, 1};
    tc_graph *g = NULL;
    char err[512] = "";
    th_status rc = tc_onnx_import(p, len, &o, &g, NULL, err, sizeof err);
    free(p);
    tb_free(b);
    if (rc != TH_OK) fprintf(stderr, "import: %s\n", err);
    CHECK_EQ_INT(rc, TH_OK);
    float x[N * L * W], v[N * KK * W];
    int64_t ix[N * KK * W];
    for (int e = 0; e < N * L * W; e++) x[e] = (float)((e * 7) % 5) - 2.0f; /* many ties */
    const void *ins[1] = {x};
    void *outs[2] = {v, ix};
    CHECK_EQ_INT(tc_ref_run_io(g, ins, outs, err, sizeof err), TH_OK);
    for (int n = 0; n < N; n++)
      for (int w = 0; w < W; w++) {
        int used[L] = {0};
        for (int r = 0; r < KK; r++) {
          int best = -1;
          for (int j = 0; j < L; j++) {
            float c = x[(n * L + j) * W + w], bv = best < 0 ? 0 : x[(n * L + best) * W + w];
            if (!used[j] && (best < 0 || (largest ? c > bv : c < bv))) best = j;
          }
          used[best] = 1;
          int at = (n * KK + r) * W + w;
          if (ix[at] != best || v[at] != x[(n * L + best) * W + w]) {
            fprintf(stderr, "largest %d [%d, %d, %d]: got %g at %lld, want %g at %d\n", largest, n,
                    r, w, v[at], (long long)ix[at], x[(n * L + best) * W + w], best);
            CHECK(0);
          }
        }
      }
    tc_graph_free(g);
  }
  return 0;
}
