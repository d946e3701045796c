/* Tests of the ONNX importer's masks, one-hots and runtime Gemm (issue 38; onnx_ops_mask.c and
 * onnx_ops.c): Trilu (a constant triangle through TAKE and LEAVE: kept elements bit for bit, inf
 * and NaN included, +0 elsewhere), Hardmax at opset 11 (the input coerced to 2-D) and 13 (one
 * axis; ties go to the first maximum) and Gemm with a runtime B or a non-bias C, imported from
 * models built in C (onnx_build.h) and run by the reference interpreter against naive loops. */
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

/* Trilu of x [N, R, C] (N = 2) with upper and k (has_k 0: no k input): kept elements have x's bits
 * exactly, the others are +0. */
static void tm_trilu(int R, int C, int upper, int has_k, int64_t k) {
  tb *b = tb_new(14);
  tb_input(b, "x", F32, 3, (int64_t[]){-1, R, C});
  if (has_k) tb_init_i(b, "k", 0, NULL, &k);
  Onnx__NodeProto *n = tb_node(b, "Trilu", "t", has_k ? "x,k" : "x", "y");
  tb_attr_i(b, n, "upper", upper);
  tb_output(b, "y");
  char err[512];
  tc_graph *g = tb_import(b, 2, err, sizeof err, TH_OK);
  CHECK(g != NULL);
  if (!g) return;
  int64_t cnt = 2 * (int64_t)R * C;
  float *x = malloc((size_t)cnt * sizeof *x), *y = malloc((size_t)cnt * sizeof *y);
  tb_fill(x, cnt, 7);
  x[0] = INFINITY; /* specials on and off the diagonal: x * mask would make NaN of inf */
  x[cnt - 1] = -INFINITY;
  x[cnt / 2] = NAN;
  x[1] = -0.0f;
  const void *ins[1] = {x};
  void *outs[1] = {y};
  CHECK(tc_ref_run_io(g, ins, outs, err, sizeof err) == TH_OK);
  int bad = 0;
  for (int64_t e = 0; e < cnt; e++) {
    int64_t i = e / C % R, j = e % C;
    int keep = upper ? j - i >= k : j - i <= k;
    if (!has_k) keep = upper ? j >= i : j <= i;
    uint32_t bx, by;
    memcpy(&bx, &x[e], 4);
    memcpy(&by, &y[e], 4);
    if (keep ? bx != by : by != 0) bad++;
  }
  if (bad)
    fprintf(stderr, "trilu [%d, %d] upper %d k %lld: %d wrong\n", R, C, upper, (long long)k, bad);
  CHECK_EQ_INT(bad, 0);
  free(x);
  free(y);
  tc_graph_free(g);
}

TH_TEST(trilu_triangles) {
  static const int64_t ks[] = {0, 1, -1, 3, -2, 9, -9};
  for (int upper = 0; upper < 2; upper++) {
    tm_trilu(4, 5, upper, 0, 0);
    tm_trilu(1, 5, upper, 1, -1);
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) tm_trilu(3, 5, upper, 1, ks[i]);
  }
  return 0;
}

TH_TEST(trilu_refusals) {
  char err[512];
  tb *b = tb_new(14);
  tb_input(b, "x", F32, 1, (int64_t[]){-1});
  tb_node(b, "Trilu", "t", "x", "y");
  tb_output(b, "y");
  CHECK(tb_import(b, 2, err, sizeof err, TH_ERR_INVALID) == NULL);
  CHECK(strstr(err, "'t'") && strstr(err, "at least 2"));
  b = tb_new(14);
  tb_input(b, "x", F32, 2, (int64_t[]){-1, 4});
  tb_attr_i(b, tb_node(b, "Trilu", "t", "x", "y"), "upper", 2);
  tb_output(b, "y");
  CHECK(tb_import(b, 2, err, sizeof err, TH_ERR_INVALID) == NULL);
  CHECK(strstr(err, "upper 2 must be 0 or 1"));
  b = tb_new(14); /* k computed at run time */
  tb_input(b, "x", F32, 2, (int64_t[]){-1, 4});
  tb_input(b, "k", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 0, NULL);
  tb_node(b, "Trilu", "t", "x,k", "y");
  tb_output(b, "y");
  CHECK(tb_import(b, 2, err, sizeof err, TH_ERR_UNSUPPORTED) == NULL);
  CHECK(strstr(err, "Trilu") && strstr(err, "constant"));
  b = tb_new(13); /* Trilu is opset 14 */
  tb_input(b, "x", F32, 2, (int64_t[]){-1, 4});
  tb_node(b, "Trilu", "t", "x", "y");
  tb_output(b, "y");
  CHECK(tb_import(b, 2, err, sizeof err, TH_ERR_UNSUPPORTED) == NULL);
  CHECK(strstr(err, "14..21"));
  return 0;
}

/* Hardmax of x [N, A, B] (N = 2) at `opset` along `axis`: per group of `len` elements `stride`
 * apart, 1.0 at the first maximum. */
static void tm_hardmax(int64_t opset, int A, int Bd, int64_t axis, int has_axis) {
  tb *b = tb_new(opset);
  tb_input(b, "x", F32, 3, (int64_t[]){-1, A, Bd});
  Onnx__NodeProto *n = tb_node(b, "Hardmax", "h", "x", "y");
  if (has_axis) tb_attr_i(b, n, "axis", axis);
  tb_output(b, "y");
  char err[512];
  tc_graph *g = tb_import(b, 2, err, sizeof err, TH_OK);
  CHECK(g != NULL);
  if (!g) return;
  int dims[3] = {2, A, Bd};
  int64_t cnt = 2 * (int64_t)A * Bd;
  float *x = malloc((size_t)cnt * sizeof *x), *y = malloc((size_t)cnt * sizeof *y);
  tb_fill(x, cnt, 11);
  for (int64_t e = 0; e < cnt; e++) x[e] = roundf(x[e] * 2.0f); /* ties: -2 .. 2 */
  const void *ins[1] = {x};
  void *outs[1] = {y};
  CHECK(tc_ref_run_io(g, ins, outs, err, sizeof err) == TH_OK);
  if (!has_axis) axis = opset < 13 ? 1 : -1;
  if (axis < 0) axis += 3;
  /* opset < 13: groups are the rows of [d0 * .. * d(axis-1), the rest]; 13+: one axis */
  int64_t len = 1, stride = 1, outer = 1;
  for (int d = 0; d < 3; d++) {
    if (opset < 13 ? d >= axis : d == axis) len *= dims[d];
    if (d > axis && opset >= 13) stride *= dims[d];
    if (d < axis) outer *= dims[d];
  }
  int bad = 0;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t s = 0; s < stride; s++) {
      int64_t base = o * len * stride + s, best = 0;
      for (int64_t i = 1; i < len; i++)
        if (x[base + i * stride] > x[base + best * stride]) best = i;
      for (int64_t i = 0; i < len; i++) bad += y[base + i * stride] != (i == best ? 1.0f : 0.0f);
    }
  if (bad)
    fprintf(stderr, "hardmax opset %lld [2, %d, %d] axis %lld: %d wrong\n", (long long)opset, A, Bd,
            (long long)axis, bad);
  CHECK_EQ_INT(bad, 0);
  free(x);
  free(y);
  tc_graph_free(g);
}

TH_TEST(hardmax_axes) {
  for (int64_t axis = -3; axis < 3; axis++) {
    tm_hardmax(13, 4, 5, axis, 1);
    tm_hardmax(11, 4, 5, axis, 1);
  }
  tm_hardmax(13, 3, 6, 0, 0);
  tm_hardmax(11, 3, 6, 0, 0);
  tm_hardmax(9, 3, 6, 2, 1);
  return 0;
}

/* Gemm: y = alpha * A' B' + beta * C, A [M, K] (or [K, M] with transA) and B [K, Nn] (or [Nn, K])
 * runtime inputs, C `cshape` (rank cr) a runtime input or, const_b, B an initializer and C a
 * [M, Nn] one (not a bias of the dense). */
static void tm_gemm(int ta, int tb_, float alpha, float beta, int cr, const int64_t *cshape,
                    int const_b) {
  const int M = 2, K = 3, Nn = 4; /* A's first dim (M, or K with transA) is the batch */
  tb *b = tb_new(13);
  int64_t ad[2] = {-1, ta ? M : K}, bd[2] = {tb_ ? Nn : K, tb_ ? K : Nn};
  float B[12], C[8];
  tb_fill(B, 12, 5);
  tb_fill(C, 8, 6);
  tb_input(b, "a", F32, 2, ad);
  if (const_b)
    tb_init_f(b, "b", 2, bd, B);
  else
    tb_input(b, "b", F32, 2, bd);
  if (cr >= 0 && const_b) tb_init_f(b, "c", cr, cshape, C);
  if (cr >= 0 && !const_b) tb_input(b, "c", F32, cr, cshape);
  Onnx__NodeProto *n = tb_node(b, "Gemm", "g", cr >= 0 ? "a,b,c" : "a,b", "y");
  tb_attr_i(b, n, "transA", ta);
  tb_attr_i(b, n, "transB", tb_);
  tb_attr_f(b, n, "alpha", alpha);
  tb_attr_f(b, n, "beta", beta);
  tb_output(b, "y");
  char err[512];
  tc_graph *g = tb_import(b, ta ? K : M, err, sizeof err, TH_OK);
  CHECK(g != NULL);
  if (!g) return;
  float A[6], y[8];
  tb_fill(A, 6, 4);
  const void *ins[3] = {A, B, C}; /* with const_b only A is an input */
  void *outs[1] = {y};
  CHECK(tc_ref_run_io(g, ins, outs, err, sizeof err) == TH_OK);
  int bad = 0;
  for (int i = 0; i < M; i++)
    for (int j = 0; j < Nn; j++) {
      double s = 0;
      for (int q = 0; q < K; q++)
        s += (double)A[ta ? q * M + i : i * K + q] * B[tb_ ? j * K + q : q * Nn + j];
      s *= alpha;
      if (cr >= 0) {
        int64_t c0 = cr == 2 ? cshape[0] : 1, c1 = cr >= 1 ? cshape[cr - 1] : 1;
        s += beta * C[(c0 == 1 ? 0 : i) * c1 + (c1 == 1 ? 0 : j)];
      }
      bad += fabs(y[i * Nn + j] - s) > 1e-5;
    }
  if (bad)
    fprintf(stderr, "gemm transA %d transB %d C rank %d const_b %d: %d wrong\n", ta, tb_, cr,
            const_b, bad);
  CHECK_EQ_INT(bad, 0);
  tc_graph_free(g);
}

TH_TEST(gemm_runtime_b) {
  tm_gemm(0, 0, 1.0f, 1.0f, -1, NULL, 0);
  tm_gemm(0, 1, 0.5f, 2.0f, 1, (int64_t[]){4}, 0);
  tm_gemm(1, 0, 0.25f, 0.35f, 2, (int64_t[]){1, 4}, 0);
  tm_gemm(1, 1, -1.0f, 1.0f, 0, NULL, 0);
  tm_gemm(0, 0, 1.0f, -3.0f, 2, (int64_t[]){2, 1}, 1); /* constant B, C [M, 1]: not a bias */
  tm_gemm(0, 1, 2.0f, 0.5f, 2, (int64_t[]){2, 4}, 1);  /* constant B, C [M, N] */
  /* K of A and B differ; C that does not broadcast to [M, N] */
  char err[512];
  tb *b = tb_new(13);
  tb_input(b, "a", F32, 2, (int64_t[]){-1, 3});
  tb_input(b, "b", F32, 2, (int64_t[]){5, 4});
  tb_node(b, "Gemm", "g", "a,b", "y");
  tb_output(b, "y");
  CHECK(tb_import(b, 2, err, sizeof err, TH_ERR_INVALID) == NULL);
  CHECK(strstr(err, "'g'") && strstr(err, "A has K = 3, B has K = 5"));
  b = tb_new(13);
  tb_input(b, "a", F32, 2, (int64_t[]){-1, 3});
  tb_input(b, "b", F32, 2, (int64_t[]){3, 4});
  tb_input(b, "c", F32, 1, (int64_t[]){3});
  tb_node(b, "Gemm", "g", "a,b,c", "y");
  tb_output(b, "y");
  CHECK(tb_import(b, 2, err, sizeof err, TH_ERR_INVALID) == NULL);
  CHECK(strstr(err, "C does not broadcast to [2, 4]"));
  return 0;
}

/* LayerNormalization of x [N, 3, 4] (N = 2) over axis 1 with Scale [3, 1] (a runtime input,
 * broadcast over the normalised dims) and B a constant scalar: a multiply and an add after the
 * kernel; a Scale that does not broadcast to the input is named. */
TH_TEST(layer_norm_broadcast_scale) {
  tb *b = tb_new(17);
  float B0 = 0.25f;
  tb_input(b, "x", F32, 3, (int64_t[]){-1, 3, 4});
  tb_input(b, "s", F32, 2, (int64_t[]){3, 1});
  tb_init_f(b, "b", 0, NULL, &B0);
  tb_attr_i(b, tb_node(b, "LayerNormalization", "ln", "x,s,b", "y"), "axis", 1);
  tb_output(b, "y");
  char err[512];
  tc_graph *g = tb_import(b, 2, err, sizeof err, TH_OK);
  CHECK(g != NULL);
  if (!g) return 0;
  float x[24], s[3] = {0.5f, -2.0f, 3.0f}, y[24];
  tb_fill(x, 24, 9);
  const void *ins[2] = {x, s};
  void *outs[1] = {y};
  CHECK(tc_ref_run_io(g, ins, outs, err, sizeof err) == TH_OK);
  int bad = 0;
  for (int n = 0; n < 2; n++) {
    double m = 0, v = 0;
    for (int i = 0; i < 12; i++) m += x[n * 12 + i] / 12.0;
    for (int i = 0; i < 12; i++) v += (x[n * 12 + i] - m) * (x[n * 12 + i] - m) / 12.0;
    for (int i = 0; i < 12; i++) {
      double want = (x[n * 12 + i] - m) / sqrt(v + 1e-5) * s[i / 4] + B0;
      bad += fabs(y[n * 12 + i] - want) > 1e-4;
    }
  }
  CHECK_EQ_INT(bad, 0);
  tc_graph_free(g);
  b = tb_new(17);
  tb_input(b, "x", F32, 3, (int64_t[]){-1, 3, 4});
  tb_input(b, "s", F32, 1, (int64_t[]){5});
  tb_node(b, "LayerNormalization", "ln", "x,s", "y");
  tb_output(b, "y");
  CHECK(tb_import(b, 2, err, sizeof err, TH_ERR_INVALID) == NULL);
  CHECK(strstr(err, "'ln'") && strstr(err, "Scale does not broadcast"));
  return 0;
}

/* Gemm with transA on a batched A [4, 3] (the file fixes 4) and B [5, 4]: at another batch the
 * batch is the contraction, which the refusal names. */
TH_TEST(gemm_trans_a_batch) {
  char err[512];
  tb *b = tb_new(13);
  tb_input(b, "a", F32, 2, (int64_t[]){4, 3});
  tb_input(b, "b", F32, 2, (int64_t[]){5, 4});
  Onnx__NodeProto *n = tb_node(b, "Gemm", "g", "a,b", "y");
  tb_attr_i(b, n, "transA", 1);
  tb_attr_i(b, n, "transB", 1);
  tb_output(b, "y");
  CHECK(tb_import(b, 1, err, sizeof err, TH_ERR_INVALID) == NULL);
  CHECK(strstr(err, "'g'") && strstr(err, "the model fixes its batch to 4"));
  return 0;
}

/* LayerNormalization over axis 0 of x [N, 4] with Scale and B [N, 4] runtime inputs that take the
 * batch (N = 3): one normalisation over all 12 elements. */
TH_TEST(layer_norm_batch_axis) {
  tb *b = tb_new(17);
  tb_input(b, "x", F32, 2, (int64_t[]){-1, 4});
  tb_input(b, "s", F32, 2, (int64_t[]){-1, 4});
  tb_input(b, "b", F32, 2, (int64_t[]){-1, 4});
  tb_attr_i(b, tb_node(b, "LayerNormalization", "ln", "x,s,b", "y"), "axis", 0);
  tb_output(b, "y");
  char err[512];
  tc_graph *g = tb_import(b, 3, err, sizeof err, TH_OK);
  CHECK(g != NULL);
  if (!g) return 0;
  float x[12], s[12], sh[12], y[12];
  tb_fill(x, 12, 21);
  tb_fill(s, 12, 22);
  tb_fill(sh, 12, 23);
  const void *ins[3] = {x, s, sh};
  void *outs[1] = {y};
  CHECK(tc_ref_run_io(g, ins, outs, err, sizeof err) == TH_OK);
  double m = 0, v = 0;
  for (int i = 0; i < 12; i++) m += x[i] / 12.0;
  for (int i = 0; i < 12; i++) v += (x[i] - m) * (x[i] - m) / 12.0;
  int bad = 0;
  for (int i = 0; i < 12; i++)
    bad += fabs(y[i] - ((x[i] - m) / sqrt(v + 1e-5) * s[i] + sh[i])) > 1e-4;
  CHECK_EQ_INT(bad, 0);
  tc_graph_free(g);
  return 0;
}
