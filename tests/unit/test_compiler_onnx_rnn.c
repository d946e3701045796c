/* Tests of the ONNX importer's recurrent layers (compiler/import/onnx_ops_rnn.c, issue 38): a
 * bidirectional LSTM with peepholes and initial states (layout 0) and a GRU with
 * linear_before_reset = 1 (layout 1) of a realistic size, built as ONNX models here, unrolled by
 * the importer and run by the reference interpreter against naive loops in double; an RNN with the
 * activations attribute, a subset of outputs, and the refusals (sequence_lens, an unknown
 * activation, the unroll limit). */
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

enum { S = 20, B = 3, I = 16, H = 32 };

static const int FL = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;

static double sig(double v) {
  return 1.0 / (1.0 + exp(-v));
}

/* Imports p with the batch `batch`; NULL (and err filled) on failure. */
static tc_graph *import(const uint8_t *p, size_t len, int batch, char *err, size_t errlen,
                        th_status *rc) {
  tc_onnx_opts o = {"test", batch, NULL, 1};
  tc_graph *g = NULL;
  err[0] = 0;
  *rc = tc_onnx_import(p, len, &o, &g, NULL, err, errlen);
  return g;
}

/* Runs g on ins; outs[i] get g's outputs (malloc'd). */
static void run(const tc_graph *g, const void *const *ins, float **outs) {
  void *o[4];
  for (int i = 0; i < g->noutputs; i++) {
    outs[i] = malloc((size_t)tc_tensor_numel(&g->nodes[g->outputs[i]].out) * sizeof(float));
    o[i] = outs[i];
  }
  char err[256];
  th_status rc = tc_ref_run_io(g, ins, o, err, sizeof err);
  if (rc != TH_OK) fprintf(stderr, "reference: %s\n", err);
  CHECK(rc == TH_OK);
}

static double maxdiff(const float *a, const double *b, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < n; i++) m = fmax(m, fabs((double)a[i] - b[i]));
  return m;
}

/* The naive bidirectional LSTM (layout 0): x [S, B, I], W [2, 4H, I], R [2, 4H, H], Bv [2, 8H],
 * P [2, 3H], h0, c0 [2, B, H], input_forget inf; y [S, 2, B, H], yh, yc [2, B, H]. */
static void naive_lstm(const float *x, const float *W, const float *R, const float *Bv,
                       const float *P, const float *h0, const float *c0, int inf, double *y,
                       double *yh, double *yc) {
  for (int d = 0; d < 2; d++) {
    double h[B][H], c[B][H], g[4 * H];
    for (int b = 0; b < B; b++)
      for (int j = 0; j < H; j++)
        h[b][j] = h0[(d * B + b) * H + j], c[b][j] = c0[(d * B + b) * H + j];
    for (int s = 0; s < S; s++) {
      int t = d ? S - 1 - s : s;
      for (int b = 0; b < B; b++) {
        for (int j = 0; j < 4 * H; j++) {
          double acc = (double)Bv[d * 8 * H + j] + Bv[d * 8 * H + 4 * H + j];
          for (int k = 0; k < I; k++)
            acc += (double)x[(t * B + b) * I + k] * W[(d * 4 * H + j) * I + k];
          for (int k = 0; k < H; k++) acc += h[b][k] * R[(d * 4 * H + j) * H + k];
          g[j] = acc;
        }
        for (int j = 0; j < H; j++) {
          const float *p = P + d * 3 * H;
          double i = sig(g[j] + p[j] * c[b][j]),
                 f = inf ? 1 - i : sig(g[2 * H + j] + p[2 * H + j] * c[b][j]);
          double cn = f * c[b][j] + i * tanh(g[3 * H + j]);
          double o = sig(g[H + j] + p[H + j] * cn);
          c[b][j] = cn;
          h[b][j] = o * tanh(cn);
          y[((t * 2 + d) * B + b) * H + j] = h[b][j];
        }
      }
    }
    for (int b = 0; b < B; b++)
      for (int j = 0; j < H; j++)
        yh[(d * B + b) * H + j] = h[b][j], yc[(d * B + b) * H + j] = c[b][j];
  }
}

/* The naive reverse GRU with linear_before_reset = 1 (layout 1): x [B, S, I], W [1, 3H, I],
 * R [1, 3H, H], Bv [1, 6H], zero initial state; y [B, S, 1, H], yh [B, 1, H]. */
static void naive_gru(const float *x, const float *W, const float *R, const float *Bv, double *y,
                      double *yh) {
  for (int b = 0; b < B; b++) {
    double h[H] = {0}, gx[3 * H], gh[3 * H];
    for (int s = 0; s < S; s++) {
      int t = S - 1 - s;
      for (int j = 0; j < 3 * H; j++) {
        double ax = Bv[j], ah = Bv[3 * H + j];
        for (int k = 0; k < I; k++) ax += (double)x[(b * S + t) * I + k] * W[j * I + k];
        for (int k = 0; k < H; k++) ah += h[k] * R[j * H + k];
        gx[j] = ax;
        gh[j] = ah;
      }
      for (int j = 0; j < H; j++) {
        double z = sig(gx[j] + gh[j]), r = sig(gx[H + j] + gh[H + j]);
        double hh = tanh(gx[2 * H + j] + r * gh[2 * H + j]);
        h[j] = (1 - z) * hh + z * h[j];
        y[(b * S + t) * H + j] = h[j];
      }
    }
    for (int j = 0; j < H; j++) yh[b * H + j] = h[j];
  }
}

/* Fills a tensor of n elements with tb_fill(seed) scaled by scale. */
static float *vals(int64_t n, uint64_t seed, float scale) {
  float *v = malloc((size_t)n * sizeof *v);
  tb_fill(v, n, seed);
  for (int64_t i = 0; i < n; i++) v[i] *= scale;
  return v;
}

TH_TEST(lstm_bidirectional_peepholes_input_forget_against_naive) {
  float *x = vals(S * B * I, 1, 1.0f), *W = vals(2 * 4 * H * I, 2, 0.3f);
  float *R = vals(2 * 4 * H * H, 3, 0.2f), *Bv = vals(2 * 8 * H, 4, 0.5f);
  float *P = vals(2 * 3 * H, 5, 0.5f), *h0 = vals(2 * B * H, 6, 1.0f),
        *c0 = vals(2 * B * H, 7, 1.0f);
  for (int inf = 0; inf < 2; inf++) { /* input_forget 0 and 1 */
    tb *b = tb_new(14);
    int64_t dx[3] = {S, B, I}, dh[3] = {2, B, H}, dw[3] = {2, 4 * H, I}, dr[3] = {2, 4 * H, H};
    int64_t db[2] = {2, 8 * H}, dp[2] = {2, 3 * H};
    tb_input(b, "x", FL, 3, dx);
    tb_input(b, "h0", FL, 3, dh);
    tb_init_f(b, "W", 3, dw, W);
    tb_init_f(b, "R", 3, dr, R);
    tb_init_f(b, "B", 2, db, Bv);
    tb_init_f(b, "c0", 3, dh, c0);
    tb_init_f(b, "P", 2, dp, P);
    Onnx__NodeProto *n = tb_node(b, "LSTM", "lstm", "x,W,R,B,,h0,c0,P", "y,yh,yc");
    tb_attr_s(b, n, "direction", "bidirectional");
    tb_attr_i(b, n, "hidden_size", H);
    if (inf) tb_attr_i(b, n, "input_forget", 1);
    tb_output(b, "y");
    tb_output(b, "yh");
    tb_output(b, "yc");
    size_t len;
    uint8_t *p = tb_pack(b, &len);
    char err[2048];
    th_status rc;
    tc_graph *g = import(p, len, S, err, sizeof err, &rc);
    if (rc != TH_OK) fprintf(stderr, "import: %s\n", err);
    CHECK(rc == TH_OK);
    CHECK(g->noutputs == 3);
    const tc_tensor *ty = &g->nodes[g->outputs[0]].out;
    CHECK(ty->ndim == 4 && ty->shape[0] == S && ty->shape[1] == 2 && ty->shape[2] == B &&
          ty->shape[3] == H);
    double *y = malloc(S * 2 * B * H * sizeof *y), yh[2 * B * H], yc[2 * B * H];
    naive_lstm(x, W, R, Bv, P, h0, c0, inf, y, yh, yc);
    const void *ins[2] = {x, h0};
    float *outs[3];
    run(g, ins, outs);
    double e0 = maxdiff(outs[0], y, S * 2 * B * H), e1 = maxdiff(outs[1], yh, 2 * B * H);
    double e2 = maxdiff(outs[2], yc, 2 * B * H);
    fprintf(stderr, "LSTM (input_forget %d) max error: Y %.3g, Y_h %.3g, Y_c %.3g\n", inf, e0, e1,
            e2);
    CHECK(e0 < 1e-4 && e1 < 1e-4 && e2 < 1e-4);
    for (int i = 0; i < 3; i++) free(outs[i]);
    free(y);
    tc_graph_free(g);
    free(p);
    tb_free(b);
  }
  free(x), free(W), free(R), free(Bv), free(P), free(h0), free(c0);
  return 0;
}

TH_TEST(gru_linear_before_reset_batchwise_against_naive) {
  float *x = vals(B * S * I, 11, 1.0f), *W = vals(3 * H * I, 12, 0.3f);
  float *R = vals(3 * H * H, 13, 0.2f), *Bv = vals(6 * H, 14, 0.5f);
  tb *b = tb_new(14);
  int64_t dx[3] = {B, S, I}, dw[3] = {1, 3 * H, I}, dr[3] = {1, 3 * H, H}, db[2] = {1, 6 * H};
  tb_input(b, "x", FL, 3, dx);
  tb_init_f(b, "W", 3, dw, W);
  tb_init_f(b, "R", 3, dr, R);
  tb_init_f(b, "B", 2, db, Bv);
  Onnx__NodeProto *n = tb_node(b, "GRU", "gru", "x,W,R,B", "y,yh");
  tb_attr_s(b, n, "direction", "reverse");
  tb_attr_i(b, n, "linear_before_reset", 1);
  tb_attr_i(b, n, "layout", 1);
  tb_output(b, "y");
  tb_output(b, "yh");
  size_t len;
  uint8_t *p = tb_pack(b, &len);
  char err[2048];
  th_status rc;
  tc_graph *g = import(p, len, B, err, sizeof err, &rc);
  if (rc != TH_OK) fprintf(stderr, "import: %s\n", err);
  CHECK(rc == TH_OK);
  const tc_tensor *ty = &g->nodes[g->outputs[0]].out, *th = &g->nodes[g->outputs[1]].out;
  CHECK(ty->ndim == 4 && ty->shape[0] == B && ty->shape[1] == S && ty->shape[2] == 1 &&
        ty->shape[3] == H);
  CHECK(th->ndim == 3 && th->shape[0] == B && th->shape[1] == 1 && th->shape[2] == H);
  double *y = malloc(B * S * H * sizeof *y), yh[B * H];
  naive_gru(x, W, R, Bv, y, yh);
  const void *ins[1] = {x};
  float *outs[2];
  run(g, ins, outs);
  double e0 = maxdiff(outs[0], y, B * S * H), e1 = maxdiff(outs[1], yh, B * H);
  fprintf(stderr, "GRU max error: Y %.3g, Y_h %.3g\n", e0, e1);
  CHECK(e0 < 1e-4 && e1 < 1e-4);
  for (int i = 0; i < 2; i++) free(outs[i]);
  free(y);
  tc_graph_free(g);
  free(p);
  tb_free(b);
  free(x), free(W), free(R), free(Bv);
  return 0;
}

/* A forward RNN [seq, 2, 3] -> H = 4 with the given attributes: activation act ("" none),
 * sequence_lens lens (NULL none), only Y_h when only_h. */
static uint8_t *rnn_model(int64_t seq, const char *act, const int64_t *lens, int only_h,
                          size_t *len) {
  tb *b = tb_new(14);
  int64_t dx[3] = {seq, 2, 3}, dw[3] = {1, 4, 3}, dr[3] = {1, 4, 4}, dl[1] = {2};
  tb_input(b, "x", FL, 3, dx);
  tb_param(b, "W", 3, dw, 0);
  tb_param(b, "R", 3, dr, 0);
  if (lens) tb_init_i(b, "lens", 1, dl, lens);
  Onnx__NodeProto *n =
      tb_node(b, "RNN", "rnn", lens ? "x,W,R,,lens" : "x,W,R", only_h ? ",yh" : "y,yh");
  ProtobufCBinaryData name = {strlen(act), (uint8_t *)act};
  float alpha = 0.1f;
  if (act[0]) { /* a STRING attribute made a STRINGS one of one name (tb_free frees neither) */
    tb_attr_s(b, n, "activations", act);
    Onnx__AttributeProto *at = n->attribute[n->n_attribute - 1];
    at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
    at->has_s = 0;
    at->n_strings = 1;
    at->strings = &name;
    tb_attr_f(b, n, "activation_alpha", 0.1f); /* FLOAT made FLOATS the same way */
    at = n->attribute[n->n_attribute - 1];
    at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
    at->has_f = 0;
    at->n_floats = 1;
    at->floats = &alpha;
  }
  tb_output(b, "yh");
  uint8_t *p = tb_pack(b, len);
  tb_free(b);
  return p;
}

TH_TEST(rnn_activation_outputs_and_refusals) {
  size_t len;
  char err[2048];
  th_status rc;
  /* LeakyRelu with alpha 0.1, only Y_h asked for, sequence_lens all equal to seq: against naive */
  int64_t lens[2] = {5, 5};
  uint8_t *p = rnn_model(5, "LeakyRelu", lens, 1, &len);
  tc_graph *g = import(p, len, 5, err, sizeof err, &rc);
  if (rc != TH_OK) fprintf(stderr, "import: %s\n", err);
  CHECK(rc == TH_OK && g->noutputs == 1);
  float x[5 * 2 * 3], W[12], R[16];
  tb_fill(x, 30, 21);
  tb_data("W", 12, 0, W);
  tb_data("R", 16, 0, R);
  double h[2][4] = {{0}}, want[8];
  for (int t = 0; t < 5; t++)
    for (int b = 0; b < 2; b++) {
      double nh[4];
      for (int j = 0; j < 4; j++) {
        double a = 0;
        for (int k = 0; k < 3; k++) a += (double)x[(t * 2 + b) * 3 + k] * W[j * 3 + k];
        for (int k = 0; k < 4; k++) a += h[b][k] * R[j * 4 + k];
        nh[j] = a >= 0 ? a : 0.1 * a;
      }
      memcpy(h[b], nh, sizeof nh);
    }
  memcpy(want, h, sizeof want);
  const void *ins[1] = {x};
  float *outs[1];
  run(g, ins, outs);
  CHECK(maxdiff(outs[0], want, 8) < 1e-5);
  free(outs[0]);
  tc_graph_free(g);
  free(p);
  /* refusals, each naming what it refuses */
  static const struct {
    int64_t seq;
    const char *act;
    int64_t len0;
    const char *want;
  } bad[] = {
      {5, "", 4, "sequence_lens[0] is 4 (only all equal to seq_length 5)"},
      {5, "Gelu", 5, "activation 'Gelu' (supported: Sigmoid, Tanh"},
      {1025, "", 1025,
       "a sequence of 1025 steps in 1 directions (unrolled at import: the limit "
       "is 1024 steps in all)"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int64_t l[2] = {bad[i].len0, bad[i].seq};
    p = rnn_model(bad[i].seq, bad[i].act, l, 0, &len);
    g = import(p, len, (int)bad[i].seq, err, sizeof err, &rc);
    fprintf(stderr, "%s: %s\n", th_status_name(rc), err);
    CHECK(rc == TH_ERR_UNSUPPORTED && g == NULL);
    CHECK(strstr(err, "RNN (node 'rnn'") != NULL);
    CHECK(strstr(err, bad[i].want) != NULL);
    free(p);
  }
  return 0;
}
