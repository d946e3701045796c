/* Tests of the ONNX importer's graph forms and element-wise binary operators (issue 38): the batch
 * rule (which inputs take the key's batch, which are taken as the file gives them: rank 0, another
 * fixed leading dimension, a vector beside batched tensors) and Max/Min/Sum/Mean/Pow/Mod, the
 * comparisons and the logical ops, imported from models built in C (onnx_build.h) and run by the
 * reference interpreter against naive loops. */
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

#define F32 ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT

static tc_graph *tg_import(tb *b, int batch, const char *shapes, char *err, size_t errlen,
                           th_status want) {
  size_t len;
  uint8_t *p = tb_pack(b, &len);
  tc_onnx_opts o = {"test", batch, shapes, 1};
  tc_graph *g = NULL;
  err[0] = '\0';
  th_status rc = tc_onnx_import(p, len, &o, &g, NULL, err, errlen);
  if (rc != want) fprintf(stderr, "import: %s (%s)\n", th_status_name(rc), err);
  CHECK(rc == want);
  free(p);
  return g;
}

/* Input k's shape is dims[0..ndim). */
static void tg_shape(const tc_graph *g, int k, int ndim, const int *dims) {
  const tc_tensor *t = &g->nodes[g->inputs[k]].out;
  fprintf(stderr, "  input %d: rank %d, first %d\n", k, t->ndim, t->ndim ? t->shape[0] : 0);
  CHECK_EQ_INT(t->ndim, ndim);
  for (int d = 0; d < ndim; d++) CHECK_EQ_INT(t->shape[d], dims[d]);
}

TH_TEST(batch_rule_symbolic_leading_dims) {
  /* x [N, 4] is batched; v [4] (a vector beside it), s [] and m [3, 4] (another fixed leading dim)
   * are taken as they are */
  tb *b = tb_new(13);
  int64_t dx[2] = {-1, 4}, dv[1] = {4}, dm[2] = {3, 4};
  tb_input(b, "x", F32, 2, dx);
  tb_input(b, "v", F32, 1, dv);
  tb_input(b, "s", F32, 0, NULL);
  tb_input(b, "m", F32, 2, dm);
  tb_node(b, "Add", "a", "x,v", "xv");
  tb_node(b, "Mul", "b", "xv,s", "y");
  tb_node(b, "Add", "c", "m,s", "z");
  tb_output(b, "y");
  tb_output(b, "z");
  char err[1024];
  tc_graph *g = tg_import(b, 2, NULL, err, sizeof err, TH_OK);
  CHECK(g != NULL);
  tg_shape(g, 0, 2, (const int[]){2, 4});
  tg_shape(g, 1, 1, (const int[]){4});
  tg_shape(g, 2, 0, NULL);
  tg_shape(g, 3, 2, (const int[]){3, 4});
  /* run: y = (x + v) * s, z = m + s */
  float x[8], v[4], s[1] = {-1.5f}, m[12], y[8], z[12];
  tb_fill(x, 8, 1);
  tb_fill(v, 4, 2);
  tb_fill(m, 12, 3);
  const void *ins[4] = {x, v, s, m};
  void *outs[2] = {y, z};
  CHECK(tc_ref_run_io(g, ins, outs, err, sizeof err) == TH_OK);
  for (int i = 0; i < 8; i++) CHECK(fabsf(y[i] - (x[i] + v[i % 4]) * s[0]) < 1e-6f);
  for (int i = 0; i < 12; i++) CHECK(fabsf(z[i] - (m[i] + s[0])) < 1e-6f);
  tc_graph_free(g);
  /* shapes may not give an unbatched input the batch */
  g = tg_import(b, 2, "m:Nx4", err, sizeof err, TH_ERR_INVALID);
  CHECK(g == NULL);
  CHECK(strstr(err, "input 'm'") && strstr(err, "give it as a number"));
  tb_free(b);
  return 0;
}

TH_TEST(batch_rule_fixed_leading_dims) {
  /* a [2, 3] fixes the batch dimension at 2: c [2, 3] shares it, w [3, 3] and the vector u [3]
   * do not; a 1-D input of fixed length is data, never batched (a symbolic one is) */
  tb *b = tb_new(13);
  int64_t da[2] = {2, 3}, dw[2] = {3, 3}, du[1] = {3};
  tb_input(b, "a", F32, 2, da);
  tb_input(b, "c", F32, 2, da);
  tb_input(b, "w", F32, 2, dw);
  tb_input(b, "u", F32, 1, du);
  tb_node(b, "MatMul", "mm", "a,w", "aw");
  tb_node(b, "Add", "p", "aw,c", "q");
  tb_node(b, "Add", "r", "q,u", "y");
  tb_output(b, "y");
  char err[1024];
  tc_graph *g = tg_import(b, 5, NULL, err, sizeof err, TH_OK);
  if (g) {
    tg_shape(g, 0, 2, (const int[]){5, 3});
    tg_shape(g, 1, 2, (const int[]){5, 3});
    tg_shape(g, 2, 2, (const int[]){3, 3});
    tg_shape(g, 3, 1, (const int[]){3});
  }
  tc_graph_free(g);
  tb_free(b);
  b = tb_new(13);
  int64_t d6[1] = {6};
  tb_input(b, "x", F32, 1, d6);
  tb_node(b, "Relu", "r", "x", "y");
  tb_output(b, "y");
  int64_t dn[1] = {-1};
  tb_input(b, "n", F32, 1, dn);
  tb_node(b, "Relu", "rn", "n", "yn");
  tb_output(b, "yn");
  g = tg_import(b, 4, NULL, err, sizeof err, TH_OK);
  if (g) tg_shape(g, 0, 1, (const int[]){6});
  if (g) tg_shape(g, 1, 1, (const int[]){4});
  tc_graph_free(g);
  tb_free(b);
  /* a vector as long as a fixed batch of 2 or more holds one value per sample (an NLL target [N]
   * beside scores [N, C]): batched; a file fixed at batch 1 keeps its [1] vector as data */
  for (int lead = 3; lead >= 1; lead -= 2) {
    b = tb_new(13);
    int64_t dp[2] = {lead, 5}, dt[1] = {lead};
    tb_input(b, "p", F32, 2, dp);
    tb_input(b, "t", F32, 1, dt);
    tb_node(b, "Relu", "rp", "p", "yp");
    tb_node(b, "Relu", "rt", "t", "yt");
    tb_output(b, "yp");
    tb_output(b, "yt");
    g = tg_import(b, 4, NULL, err, sizeof err, TH_OK);
    if (g) tg_shape(g, 0, 2, (const int[]){4, 5});
    if (g) tg_shape(g, 1, 1, (const int[]){lead == 1 ? 1 : 4});
    tc_graph_free(g);
    tb_free(b);
  }
  return 0;
}

/* Cast of a runtime float32 tensor to int64 (truncated toward zero), and an int64 graph output that
 * the import computes (Shape of x, at the batch of the import): both int64 outputs of the graph. */
TH_TEST(cast_to_int64_and_shape_output) {
  tb *b = tb_new(15);
  int64_t dx[2] = {-1, 4};
  tb_input(b, "x", F32, 2, dx);
  Onnx__NodeProto *n = tb_node(b, "Cast", "c", "x", "y");
  tb_attr_i(b, n, "to", ONNX__TENSOR_PROTO__DATA_TYPE__INT64);
  tb_node(b, "Shape", "s", "x", "shape");
  tb_output(b, "y");
  tb_output(b, "shape");
  char err[1024];
  tc_graph *g = tg_import(b, 3, NULL, err, sizeof err, TH_OK);
  CHECK(g && g->noutputs == 2);
  CHECK(g->nodes[g->outputs[0]].out.dtype == TC_DTYPE_I64);
  CHECK(g->nodes[g->outputs[1]].out.dtype == TC_DTYPE_I64);
  float x[12] = {0.5f, -0.5f, 1.99f, -1.99f, 7.0f, -7.0f, 3e9f, -3e9f, 0.0f, -0.0f, 123.75f, -2.25f};
  int64_t y[12], shape[2];
  const void *ins[1] = {x};
  void *outs[2] = {y, shape};
  CHECK(tc_ref_run_io(g, ins, outs, err, sizeof err) == TH_OK);
  for (int i = 0; i < 12; i++) CHECK(y[i] == (int64_t)x[i]);
  CHECK(y[6] == 3000000000LL && y[3] == -1);
  CHECK(shape[0] == 3 && shape[1] == 4);
  tc_graph_free(g);
  tb_free(b);
  return 0;
}

/* The naive value of each output of the binary model below. */
static float tg_want(int k, float a, float c, float e) {
  switch (k) {
    case 0: return fmaxf(fmaxf(a, c), e);
    case 1: return fminf(a, c);
    case 2: return a + c + e;
    case 3: return (a + c) / 2;
    case 4: return (float)pow(fabsf(a) + 0.5, e);
    case 5: return (float)fmod(a, c);
    case 6: return a == c;
    case 7: return a < c;
    case 8: return a > c;
    case 9: return a <= c;
    case 10: return a >= c;
    case 11: return a < c && a > e;
    case 12: return a < c || a > e;
    case 13: return (a < c) != (a > e);
    case 14: return !(a < c);
    case 15: return (float)pow(a, 3.0);
    default: return NAN;
  }
}

TH_TEST(binary_math_and_comparisons) {
  static const char *const nodes[][3] = {
      {"Max", "a,c,e", "o0"},          {"Min", "a,c", "o1"},
      {"Sum", "a,c,e", "o2"},          {"Mean", "a,c", "o3"},
      {"Pow", "pa,e", "o4"},           {"Mod", "a,c", "o5"},
      {"Equal", "a,c", "o6"},          {"Less", "a,c", "o7"},
      {"Greater", "a,c", "o8"},        {"LessOrEqual", "a,c", "o9"},
      {"GreaterOrEqual", "a,c", "o10"}, {"And", "lt,gt", "o11"},
      {"Or", "lt,gt", "o12"},          {"Xor", "lt,gt", "o13"},
      {"Not", "lt", "o14"},            {"Pow", "a,three", "o15"},
  };
  enum { NOUT = 16, N = 2 * 3 * 4, HALF = 8 /* outputs per model: TC_MAX_IO */ };
  for (int first = 0; first < NOUT; first += HALF) {
    tb *b = tb_new(13);
    int64_t d[3] = {-1, 3, 4}, de[1] = {4};
    tb_input(b, "a", F32, 3, d);
    tb_input(b, "c", F32, 3, d);
    tb_input(b, "e", F32, 1, de); /* broadcast along the last dim */
    tb_const_f(b, "half", 0.5f);
    tb_const_f(b, "three", 3.0f);
    tb_node(b, "Abs", "abs", "a", "aa");
    tb_node(b, "Add", "pa_", "aa,half", "pa"); /* a positive base */
    tb_node(b, "Less", "lt_", "a,c", "lt");
    tb_node(b, "Greater", "gt_", "a,e", "gt");
    for (int k = first; k < first + HALF; k++) {
      Onnx__NodeProto *n = tb_node(b, nodes[k][0], nodes[k][2], nodes[k][1], nodes[k][2]);
      if (strcmp(nodes[k][0], "Mod") == 0) tb_attr_i(b, n, "fmod", 1);
    }
    for (int k = first; k < first + HALF; k++) tb_output(b, nodes[k][2]);
    char err[1024];
    tc_graph *g = tg_import(b, 2, NULL, err, sizeof err, TH_OK);
    CHECK(g != NULL && g->noutputs == HALF);
    float a[N], c[N], e[4], out[HALF][N];
    tb_fill(a, N, 11);
    tb_fill(c, N, 12);
    tb_fill(e, 4, 13);
    for (int i = 0; i < N; i += 5) c[i] = a[i]; /* some equal pairs */
    const void *ins[3] = {a, c, e};
    void *outs[HALF];
    for (int k = 0; k < HALF; k++) outs[k] = out[k];
    th_status rc = tc_ref_run_io(g, ins, outs, err, sizeof err);
    if (rc != TH_OK) fprintf(stderr, "reference: %s\n", err);
    CHECK(rc == TH_OK);
    for (int k = 0; k < HALF; k++) {
      double worst = 0;
      for (int i = 0; i < N; i++) {
        double w = tg_want(first + k, a[i], c[i], e[i % 4]);
        worst = fmax(worst, fabs(out[k][i] - w) / fmax(1.0, fabs(w)));
      }
      fprintf(stderr, "  %s (%s): %.3g\n", nodes[first + k][0], g->output_names[k], worst);
      CHECK(worst < 1e-5);
    }
    tc_graph_free(g);
    tb_free(b);
  }
  return 0;
}

#define I64 ONNX__TENSOR_PROTO__DATA_TYPE__INT64

/* The naive int64 value of output k of the model below (b is never 0 there; -1 is). */
static int64_t tg_want_i64(int k, int64_t a, int64_t b) {
  int64_t r = b == -1 ? 0 : a % b;
  switch (k) {
    case 0: return (int64_t)((uint64_t)a + (uint64_t)b);
    case 1: return (int64_t)((uint64_t)a - (uint64_t)b);
    case 2: return (int64_t)((uint64_t)a * (uint64_t)b);
    case 3: return b == -1 ? (int64_t)(0 - (uint64_t)a) : a / b; /* toward zero */
    case 4: return a > b ? a : b;
    case 5: return a < b ? a : b;
    case 6: return r != 0 && (r < 0) != (b < 0) ? r + b : r; /* fmod 0: the divisor's sign */
    case 7: return r;                                         /* fmod 1: the dividend's */
    default: return 0;
  }
}

/* int64 arithmetic at run time (issue 38): Add, Sub, Mul, Div, Max, Min and Mod (fmod 0 and 1) of
 * an int64 [N, 4] and an int64 [4] broadcast along the rows, with values past 2^53 (no float round
 * trip), the int64 limits and negative divisors; then Where of int64 tensors on an int64 Equal,
 * Sub of an int64 constant and Trilu of an int64 tensor: every output int64 and exact. */
TH_TEST(int64_arithmetic) {
  static const char *const ops[8] = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Mod", "Mod"};
  tb *b = tb_new(14);
  int64_t da[2] = {-1, 4}, db[1] = {4};
  tb_input(b, "a", I64, 2, da);
  tb_input(b, "b", I64, 1, db);
  char names[8][4];
  for (int k = 0; k < 8; k++) {
    snprintf(names[k], sizeof names[k], "o%d", k);
    Onnx__NodeProto *n = tb_node(b, ops[k], names[k], "a,b", names[k]);
    if (k >= 6) tb_attr_i(b, n, "fmod", k - 6);
  }
  for (int k = 0; k < 8; k++) tb_output(b, names[k]);
  char err[1024];
  tc_graph *g = tg_import(b, 2, NULL, err, sizeof err, TH_OK);
  CHECK(g != NULL && g->noutputs == 8);
  for (int k = 0; g && k < 8; k++) CHECK(g->nodes[g->outputs[k]].out.dtype == TC_DTYPE_I64);
  const int64_t big = ((int64_t)1 << 53) + 1;
  int64_t a[8] = {big, -7, 7, INT64_MIN + 5, 9, -big * 3, 0, INT64_MAX - 2}, bv[4] = {2, -3, -1, 5};
  int64_t out[8][8];
  const void *ins[2] = {a, bv};
  void *outs[8];
  for (int k = 0; k < 8; k++) outs[k] = out[k];
  th_status rc = g ? tc_ref_run_io(g, ins, outs, err, sizeof err) : TH_ERR_INVALID;
  if (rc != TH_OK) fprintf(stderr, "reference: %s\n", err);
  CHECK(rc == TH_OK);
  for (int k = 0; k < 8; k++)
    for (int i = 0; i < 8; i++) {
      int64_t w = tg_want_i64(k, a[i], bv[i % 4]);
      if (out[k][i] != w)
        fprintf(stderr, "  %s #%d: %lld, want %lld\n", ops[k], i, (long long)out[k][i],
                (long long)w);
      CHECK(out[k][i] == w);
    }
  CHECK(out[0][0] == big + 2 && out[6][1] == -1 && out[7][1] == -1 && out[6][5] == 0);
  tc_graph_free(g);
  tb_free(b);

  b = tb_new(14);
  int64_t d2[2] = {3, 3}, kc[3] = {-5, 0, 5};
  tb_input(b, "a", I64, 2, d2);
  tb_input(b, "c", I64, 2, d2);
  tb_const_ints(b, "k", 3, kc);
  tb_node(b, "Equal", "eq", "a,c", "eq");
  tb_node(b, "Where", "w", "eq,a,c", "w");
  tb_node(b, "Sub", "s", "a,k", "s");
  tb_node(b, "Trilu", "t", "a", "t");
  tb_output(b, "w");
  tb_output(b, "s");
  tb_output(b, "t");
  g = tg_import(b, 3, NULL, err, sizeof err, TH_OK);
  CHECK(g != NULL && g->noutputs == 3);
  int64_t x[9] = {big, -1, 2, 3, INT64_MIN, 5, 6, 7, -big}, y[9] = {big, 0, 2, -3, 4, 5, 0, 7, 8};
  int64_t w[9], s[9], t[9];
  const void *ins2[2] = {x, y};
  void *outs2[3] = {w, s, t};
  rc = g ? tc_ref_run_io(g, ins2, outs2, err, sizeof err) : TH_ERR_INVALID;
  if (rc != TH_OK) fprintf(stderr, "reference: %s\n", err);
  CHECK(rc == TH_OK);
  for (int i = 0; i < 9; i++) {
    CHECK(w[i] == (x[i] == y[i] ? x[i] : y[i]));
    CHECK(s[i] == x[i] - kc[i % 3]);
    CHECK(t[i] == (i % 3 >= i / 3 ? x[i] : 0)); /* upper = 1, k = 0 */
  }
  tc_graph_free(g);
  tb_free(b);
  return 0;
}
