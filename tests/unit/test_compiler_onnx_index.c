/* Tests of the ONNX importer's softmax family, runtime gathers and losses
 * (compiler/import/onnx_ops_index.c): small models built in C (onnx_build.h), imported and run by
 * the reference interpreter, compared with naive loops in double over the same inputs; and the
 * refusal of a reduction ONNX does not define. */
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

/* Imports the packed model of b at batch 3 with its weights; NULL (and err) on failure. */
static tc_graph *ti_import(tb *b, th_status *rc, char *err, size_t errlen) {
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

static void ti_close(const float *got, const double *want, int64_t n, double tol) {
  for (int64_t i = 0; i < n; i++)
    if (!(fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i])))) {
      fprintf(stderr, "element %lld: got %.9g want %.9g\n", (long long)i, got[i], want[i]);
      CHECK(0);
    }
}

/* log-softmax over C of x [N, C, D] at (n, c, d), in double */
static double ti_logp(const float *x, int C, int D, int n, int c, int d) {
  double mx = -INFINITY, s = 0;
  for (int k = 0; k < C; k++) mx = fmax(mx, x[(n * C + k) * D + d]);
  for (int k = 0; k < C; k++) s += exp(x[(n * C + k) * D + d] - mx);
  return x[(n * C + c) * D + d] - mx - log(s);
}

/* SoftmaxCrossEntropyLoss, mean, with weights and ignore_index 1, and its log_prob output; the
 * targets include the ignored class. */
TH_TEST(sce_mean_weight_ignore) {
  enum { N = 3, C = 5, D = 2 };
  tb *b = tb_new(13);
  tb_input(b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 3, (int64_t[]){N, C, D});
  tb_input(b, "y", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 2, (int64_t[]){N, D});
  float w[C] = {0.5f, 2.0f, 1.0f, 0.25f, 3.0f};
  tb_init_f(b, "w", 1, (int64_t[]){C}, w);
  Onnx__NodeProto *n = tb_node(b, "SoftmaxCrossEntropyLoss", "sce", "x,y,w", "z,lp");
  tb_attr_s(b, n, "reduction", "mean");
  tb_attr_i(b, n, "ignore_index", 1);
  tb_output(b, "z");
  tb_output(b, "lp");
  th_status rc;
  char err[512];
  tc_graph *g = ti_import(b, &rc, err, sizeof err);
  if (rc != TH_OK) fprintf(stderr, "import: %s\n", err);
  CHECK_EQ_INT(rc, TH_OK);
  float x[N * C * D];
  tb_fill(x, N * C * D, 7);
  for (int i = 0; i < N * C * D; i++) x[i] *= 4.0f;
  int64_t y[N * D] = {0, 1, 4, 2, 1, 3};
  float z[1], lp[N * C * D];
  const void *ins[2] = {x, y};
  void *outs[2] = {z, lp};
  CHECK_EQ_INT(tc_ref_run_io(g, ins, outs, err, sizeof err), TH_OK);
  double wl[N * C * D], num = 0, den = 0;
  for (int i = 0; i < N; i++)
    for (int c = 0; c < C; c++)
      for (int d = 0; d < D; d++) wl[(i * C + c) * D + d] = ti_logp(x, C, D, i, c, d);
  for (int i = 0; i < N; i++)
    for (int d = 0; d < D; d++) {
      int64_t t = y[i * D + d];
      if (t == 1) continue;
      num -= wl[(i * C + t) * D + d] * w[t];
      den += w[t];
    }
  double want = num / den;
  ti_close(lp, wl, N * C * D, 1e-5);
  ti_close(z, &want, 1, 1e-5);
  tc_graph_free(g);
  return 0;
}

/* NegativeLogLikelihoodLoss without weights, reduction none (the loss per target, [N]), and sum. */
TH_TEST(nll_none_and_sum) {
  enum { N = 3, C = 5 };
  for (int sum = 0; sum < 2; sum++) {
    tb *b = tb_new(13);
    tb_input(b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, (int64_t[]){N, C});
    tb_input(b, "t", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 1, (int64_t[]){N});
    tb_attr_s(b, tb_node(b, "NegativeLogLikelihoodLoss", "nll", "x,t", "z"), "reduction",
              sum ? "sum" : "none");
    tb_output(b, "z");
    th_status rc;
    char err[512];
    tc_graph *g = ti_import(b, &rc, err, sizeof err);
    if (rc != TH_OK) fprintf(stderr, "import: %s\n", err);
    CHECK_EQ_INT(rc, TH_OK);
    float x[N * C], z[N];
    tb_fill(x, N * C, 11);
    int64_t t[N] = {4, 0, 2};
    const void *ins[2] = {x, t};
    void *outs[1] = {z};
    CHECK_EQ_INT(tc_ref_run_io(g, ins, outs, err, sizeof err), TH_OK);
    double want[N], total = 0;
    for (int i = 0; i < N; i++) total += want[i] = -x[i * C + t[i]];
    CHECK_EQ_INT((int)tc_tensor_numel(&g->nodes[g->outputs[0]].out), sum ? 1 : N);
    ti_close(z, sum ? &total : want, sum ? 1 : N, 1e-6);
    tc_graph_free(g);
  }
  return 0;
}

/* Gather along axis 1 by runtime int64 indices [4] (negative ones count from the end; the indices'
 * fixed first dim 4 is not the batch 3), GatherElements along the last axis, LogSoftmax over axis
 * 1 at opset 13. */
TH_TEST(gathers_and_log_softmax) {
  enum { N = 3, C = 5, D = 2, K = 4 };
  tb *b = tb_new(13);
  tb_input(b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 3, (int64_t[]){N, C, D});
  tb_input(b, "i", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 1, (int64_t[]){K});
  tb_input(b, "e", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 3, (int64_t[]){N, C, 1});
  tb_attr_i(b, tb_node(b, "Gather", "g", "x,i", "gy"), "axis", 1);
  tb_attr_i(b, tb_node(b, "GatherElements", "ge", "x,e", "ey"), "axis", -1);
  tb_attr_i(b, tb_node(b, "LogSoftmax", "ls", "x", "ly"), "axis", 1);
  tb_output(b, "gy");
  tb_output(b, "ey");
  tb_output(b, "ly");
  th_status rc;
  char err[512];
  tc_graph *g = ti_import(b, &rc, err, sizeof err);
  if (rc != TH_OK) fprintf(stderr, "import: %s\n", err);
  CHECK_EQ_INT(rc, TH_OK);
  float x[N * C * D], gy[N * K * D], ey[N * C], ly[N * C * D];
  tb_fill(x, N * C * D, 3);
  int64_t ix[K] = {4, -1, 0, 2}, ex[N * C];
  for (int k = 0; k < N * C; k++) ex[k] = k % 3 == 0 ? -1 : k % 2;
  const void *ins[3] = {x, ix, ex};
  void *outs[3] = {gy, ey, ly};
  CHECK_EQ_INT(tc_ref_run_io(g, ins, outs, err, sizeof err), TH_OK);
  double wg[N * K * D], we[N * C], wl[N * C * D];
  for (int n = 0; n < N; n++)
    for (int k = 0; k < K; k++)
      for (int d = 0; d < D; d++)
        wg[(n * K + k) * D + d] = x[(n * C + (ix[k] + C) % C) * D + d];
  for (int k = 0; k < N * C; k++) we[k] = x[k * D + (ex[k] + D) % D];
  for (int n = 0; n < N; n++)
    for (int c = 0; c < C; c++)
      for (int d = 0; d < D; d++) wl[(n * C + c) * D + d] = ti_logp(x, C, D, n, c, d);
  ti_close(gy, wg, N * K * D, 0);
  ti_close(ey, we, N * C, 0);
  ti_close(ly, wl, N * C * D, 1e-5);
  tc_graph_free(g);
  return 0;
}

/* A reduction ONNX does not define is refused by name, nothing imported. */
TH_TEST(loss_bad_reduction) {
  tb *b = tb_new(13);
  tb_input(b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, (int64_t[]){3, 5});
  tb_input(b, "t", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 1, (int64_t[]){3});
  tb_attr_s(b, tb_node(b, "NegativeLogLikelihoodLoss", "nll", "x,t", "z"), "reduction", "avg");
  tb_output(b, "z");
  th_status rc;
  char err[512];
  tc_graph *g = ti_import(b, &rc, err, sizeof err);
  CHECK(g == NULL);
  CHECK_EQ_INT(rc, TH_ERR_INVALID);
  CHECK(strstr(err, "reduction 'avg' is not none, sum or mean") != NULL);
  return 0;
}
