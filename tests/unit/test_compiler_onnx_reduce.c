/* Tests of the ONNX importer's reductions (compiler/import/onnx_ops_reduce.c): every Reduce* over
 * several axes sets, with keepdims, at the opsets where axes is an attribute and where it is an
 * input, run by the reference interpreter against naive loops in double; noop_with_empty_axes,
 * empty axes, negative axes, the global-pool fast path and the refusals. */
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

static const struct {
  const char *op;
  int reduce;
} ops[] = {{"ReduceSum", TC_REDUCE_SUM},        {"ReduceMean", TC_REDUCE_MEAN},
           {"ReduceMax", TC_REDUCE_MAX},        {"ReduceMin", TC_REDUCE_MIN},
           {"ReduceProd", TC_REDUCE_PROD},      {"ReduceSumSquare", TC_REDUCE_SUM_SQUARE},
           {"ReduceL1", TC_REDUCE_L1},          {"ReduceL2", TC_REDUCE_L2},
           {"ReduceLogSum", TC_REDUCE_LOG_SUM}, {"ReduceLogSumExp", TC_REDUCE_LOG_SUM_EXP}};

enum { N = 2, C = 3, H = 4, W = 5 };

/* The naive reduction of x [N, C, H, W] over the axes in mask, into out in row-major order of the
 * kept axes. */
static void naive(const float *x, int mask, int op, double *out, int64_t *nout) {
  const int dims[4] = {N, C, H, W};
  int64_t kept = 1;
  for (int d = 0; d < 4; d++) kept *= mask >> d & 1 ? 1 : dims[d];
  *nout = kept;
  for (int64_t o = 0; o < kept; o++) {
    double acc = op == TC_REDUCE_PROD  ? 1
                 : op == TC_REDUCE_MAX ? -INFINITY
                 : op == TC_REDUCE_MIN ? INFINITY
                                       : 0,
           mx = -INFINITY, cnt = 0;
    for (int pass = 0; pass < 2; pass++)
      for (int64_t e = 0; e < (int64_t)N * C * H * W; e++) {
        int idx[4];
        int64_t r = e, ko = 0;
        for (int d = 3; d >= 0; d--) idx[d] = (int)(r % dims[d]), r /= dims[d];
        for (int d = 0; d < 4; d++)
          if (!(mask >> d & 1)) ko = ko * dims[d] + idx[d];
        if (ko != o) continue;
        double v = x[e];
        if (pass == 0) {
          mx = fmax(mx, v);
          continue;
        }
        cnt++;
        switch (op) {
          case TC_REDUCE_MAX:
            acc = fmax(acc, v);
            break;
          case TC_REDUCE_MIN:
            acc = fmin(acc, v);
            break;
          case TC_REDUCE_PROD:
            acc *= v;
            break;
          case TC_REDUCE_SUM_SQUARE:
          case TC_REDUCE_L2:
            acc += v * v;
            break;
          case TC_REDUCE_L1:
            acc += fabs(v);
            break;
          case TC_REDUCE_LOG_SUM_EXP:
            acc += exp(v - mx);
            break;
          default:
            acc += v;
        }
      }
    out[o] = op == TC_REDUCE_MEAN          ? acc / cnt
             : op == TC_REDUCE_L2          ? sqrt(acc)
             : op == TC_REDUCE_LOG_SUM     ? log(acc)
             : op == TC_REDUCE_LOG_SUM_EXP ? mx + log(acc)
                                           : acc;
  }
}

/* x [N, C, H, W] -> op over axes (naxes of them; -1: none given) -> z at opset; axes an input when
 * as_input. */
static uint8_t *model(const char *op, int64_t opset, const int64_t *axes, int naxes, int as_input,
                      int keep, int noop, size_t *len) {
  tb *b = tb_new(opset);
  int64_t d[4] = {-1, C, H, W};
  tb_input(b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, d);
  if (naxes >= 0 && as_input) tb_const_ints(b, "axes", naxes, axes);
  Onnx__NodeProto *n = tb_node(b, op, "r", naxes >= 0 && as_input ? "x,axes" : "x", "z");
  if (naxes >= 0 && !as_input) tb_attr_ints(b, n, "axes", naxes, axes);
  tb_attr_i(b, n, "keepdims", keep);
  if (noop) tb_attr_i(b, n, "noop_with_empty_axes", 1);
  tb_output(b, "z");
  uint8_t *p = tb_pack(b, len);
  tb_free(b);
  return p;
}

static tc_graph *import_ok(const uint8_t *p, size_t len) {
  tc_onnx_opts o = {"test", N, NULL, 1};
  tc_graph *g = NULL;
  char err[2048] = "";
  th_status rc = tc_onnx_import(p, len, &o, &g, NULL, err, sizeof err);
  if (rc != TH_OK) fprintf(stderr, "import: %s\n", err);
  CHECK(rc == TH_OK);
  return g;
}

/* Runs g on x; returns its output (malloc'd) and its element count. */
static float *run(const tc_graph *g, const float *x, int64_t *n) {
  const tc_tensor *t = &g->nodes[g->outputs[0]].out;
  *n = tc_tensor_numel(t);
  float *out = malloc((size_t)*n * sizeof *out);
  const void *ins[1] = {x};
  void *outs[1] = {out};
  char err[256];
  th_status rc = tc_ref_run_io(g, ins, outs, err, sizeof err);
  if (rc != TH_OK) fprintf(stderr, "reference: %s\n", err);
  CHECK(rc == TH_OK);
  return out;
}

/* Positive inputs for log-sum, values near +-1 for prod. */
static void fill(float *x, int op) {
  tb_fill(x, (int64_t)N * C * H * W, 77);
  for (int i = 0; i < N * C * H * W; i++) {
    if (op == TC_REDUCE_LOG_SUM) x[i] = fabsf(x[i]) + 0.01f;
    if (op == TC_REDUCE_PROD) x[i] = x[i] < 0 ? x[i] - 0.6f : x[i] + 0.6f;
  }
}

/* Every op over {1, 3}, {0, 2} (a transpose first), {-1} (the last axis), {2, 3} and none (all),
 * with and without keepdims, at opset 13 and 18 (ReduceSum's axes input at 13, the others' at 18),
 * against naive loops; the output shapes are ONNX's. */
TH_TEST(reduce_every_op_and_axes) {
  static const int64_t sets[5][2] = {{1, 3}, {0, 2}, {-1, 0}, {2, 3}, {0, 0}};
  static const int nset[5] = {2, 2, 1, 2, -1};
  float x[N * C * H * W];
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
    for (int opset = 13; opset <= 18; opset += 5)
      for (int s = 0; s < 5; s++)
        for (int keep = 0; keep < 2; keep++) {
          int input = opset >= (ops[k].reduce == TC_REDUCE_SUM ? 13 : 18);
          size_t len;
          uint8_t *p = model(ops[k].op, opset, sets[s], nset[s], input, keep, 0, &len);
          tc_graph *g = import_ok(p, len);
          fill(x, ops[k].reduce);
          int mask = 0;
          for (int i = 0; i < nset[s]; i++)
            mask |= 1 << (sets[s][i] < 0 ? sets[s][i] + 4 : sets[s][i]);
          if (nset[s] < 0) mask = 15;
          double want[N * C * H * W];
          int64_t nw, ng;
          naive(x, mask, ops[k].reduce, want, &nw);
          float *got = run(g, x, &ng);
          CHECK_EQ_INT((int)ng, (int)nw);
          const tc_tensor *t = &g->nodes[g->outputs[0]].out;
          int rank = 0;
          for (int d = 0; d < 4; d++) rank += keep || !(mask >> d & 1);
          CHECK_EQ_INT(t->ndim, rank ? rank : 1);
          for (int64_t i = 0; i < nw; i++)
            if (fabs(got[i] - want[i]) > 1e-4 * fmax(1.0, fabs(want[i]))) {
              fprintf(stderr, "%s opset %d axes set %d keep %d: [%lld] %.7g vs %.7g\n", ops[k].op,
                      opset, s, keep, (long long)i, (double)got[i], want[i]);
              CHECK(0);
            }
          free(got);
          tc_graph_free(g);
          free(p);
        }
  return 0;
}

/* noop_with_empty_axes: ReduceSum is the input itself, ReduceSumSquare still squares, ReduceL1
 * still takes |x|; ReduceMean over [2, 3] of a map stays a global average pool. */
TH_TEST(reduce_noop_and_pool) {
  float x[N * C * H * W];
  fill(x, TC_REDUCE_SUM);
  size_t len;
  uint8_t *p = model("ReduceSum", 13, NULL, -1, 1, 1, 1, &len);
  tc_graph *g = import_ok(p, len);
  CHECK_EQ_INT(g->nodes[g->outputs[0]].op, TC_OP_INPUT);
  tc_graph_free(g);
  free(p);
  const char *names[2] = {"ReduceSumSquare", "ReduceL1"};
  for (int k = 0; k < 2; k++) {
    p = model(names[k], 18, NULL, -1, 1, 1, 1, &len);
    g = import_ok(p, len);
    int64_t n;
    float *got = run(g, x, &n);
    CHECK_EQ_INT((int)n, N * C * H * W);
    for (int i = 0; i < N * C * H * W; i++)
      CHECK(fabsf(got[i] - (k ? fabsf(x[i]) : x[i] * x[i])) <= 1e-6f);
    free(got);
    tc_graph_free(g);
    free(p);
  }
  static const int64_t hw[2] = {2, 3};
  p = model("ReduceMean", 13, hw, 2, 0, 0, 0, &len);
  g = import_ok(p, len);
  int pools = 0, reduces = 0;
  for (int i = 0; i < g->nnodes; i++) {
    pools += g->nodes[i].op == TC_OP_GLOBAL_AVG_POOL;
    reduces += g->nodes[i].op == TC_OP_REDUCE;
  }
  CHECK_EQ_INT(pools, 1);
  CHECK_EQ_INT(reduces, 0);
  tc_graph_free(g);
  free(p);
  return 0;
}

static void import_fails(const uint8_t *p, size_t len, th_status want, const char *words) {
  tc_onnx_opts o = {"test", N, NULL, 1};
  tc_graph *g = NULL;
  char err[2048] = "";
  th_status rc = tc_onnx_import(p, len, &o, &g, NULL, err, sizeof err);
  if (rc != want || !strstr(err, words)) fprintf(stderr, "import: %s\n", err);
  CHECK(rc == want);
  CHECK(strstr(err, words) != NULL);
  CHECK(g == NULL);
}

/* An axis named twice, one out of range, and axes as a runtime input are refused naming why. */
TH_TEST(reduce_refusals) {
  static const int64_t twice[2] = {1, -3}, far[1] = {4};
  size_t len;
  uint8_t *p = model("ReduceMax", 13, twice, 2, 0, 1, 0, &len);
  import_fails(p, len, TH_ERR_INVALID, "axis 1 is named twice");
  free(p);
  p = model("ReduceL2", 18, far, 1, 1, 1, 0, &len);
  import_fails(p, len, TH_ERR_INVALID, "axis 4 is out of range for 4 dimensions");
  free(p);
  tb *b = tb_new(18);
  int64_t d[4] = {-1, C, H, W}, one[1] = {1};
  tb_input(b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, d);
  tb_input(b, "axes", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 1, one);
  tb_node(b, "ReduceMin", "r", "x,axes", "z");
  tb_output(b, "z");
  p = tb_pack(b, &len);
  tb_free(b);
  import_fails(p, len, TH_ERR_UNSUPPORTED, "must be a constant, it is computed at run time");
  free(p);
  return 0;
}

/* ArgMax and ArgMin along each axis (negative too), keepdims, select_last_index at opset 12 (and
 * ignored below it), on integers with ties: an int64 output, against a naive scan. */
TH_TEST(arg_every_axis) {
  float x[N * C * H * W];
  const int dims[4] = {N, C, H, W};
  for (int i = 0; i < N * C * H * W; i++) x[i] = (float)((i * 7 + i / 5) % 4);
  for (int max = 0; max < 2; max++)
    for (int ax = -1; ax < 4; ax++)
      for (int last = 0; last < 2; last++) {
        tb *b = tb_new(last ? 12 : 11);
        int64_t d[4] = {-1, C, H, W};
        tb_input(b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, d);
        Onnx__NodeProto *n = tb_node(b, max ? "ArgMax" : "ArgMin", "a", "x", "z");
        tb_attr_i(b, n, "axis", ax);
        tb_attr_i(b, n, "keepdims", ax & 1);
        if (last) tb_attr_i(b, n, "select_last_index", 1);
        tb_output(b, "z");
        size_t len;
        uint8_t *p = tb_pack(b, &len);
        tb_free(b);
        tc_graph *g = import_ok(p, len);
        const tc_tensor *t = &g->nodes[g->outputs[0]].out;
        CHECK_EQ_INT(t->dtype, TC_DTYPE_I64);
        CHECK_EQ_INT(t->ndim, ax & 1 ? 4 : 3);
        int a = ax < 0 ? 3 : ax;
        int64_t nout = tc_tensor_numel(t), *got = malloc((size_t)nout * sizeof *got);
        const void *ins[1] = {x};
        void *outs[1] = {got};
        char err[256];
        CHECK(tc_ref_run_io(g, ins, outs, err, sizeof err) == TH_OK);
        int64_t o = 0;
        for (int64_t e = 0; e < N * C * H * W; e++) {
          int idx[4];
          int64_t r = e;
          for (int k = 3; k >= 0; k--) idx[k] = (int)(r % dims[k]), r /= dims[k];
          if (idx[a] != 0) continue;
          int64_t stride = 1, best = 0;
          for (int k = a + 1; k < 4; k++) stride *= dims[k];
          for (int64_t i = 1; i < dims[a]; i++) {
            float v = x[e + i * stride], bv = x[e + best * stride];
            if (max ? v > bv || (last && v == bv) : v < bv || (last && v == bv)) best = i;
          }
          if (got[o] != best)
            fprintf(stderr, "%s axis %d last %d: [%lld] %lld vs %lld\n", max ? "max" : "min", ax,
                    last, (long long)o, (long long)got[o], (long long)best);
          CHECK(got[o] == best);
          o++;
        }
        CHECK_EQ_INT((int)o, (int)nout);
        free(got);
        tc_graph_free(g);
        free(p);
      }
  return 0;
}

/* LayerNormalization over axes [2, 4) and [3, 4) of [N, C, H, W] with Scale and B, and its Mean and
 * InvStdDev outputs (shape [N, C, 1, 1] or [N, C, H, 1]), against naive loops. */
TH_TEST(layer_norm_any_axis) {
  float x[N * C * H * W], sc[H * W], bi[H * W];
  tb_fill(x, N * C * H * W, 5);
  tb_fill(sc, H * W, 6);
  tb_fill(bi, H * W, 7);
  for (int axis = 2; axis < 4; axis++) {
    int64_t inner = axis == 2 ? H * W : W, rows = N * C * H * W / inner;
    tb *b = tb_new(17);
    int64_t d[4] = {-1, C, H, W}, pd[2] = {H, W};
    tb_input(b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, d);
    tb_init_f(b, "s", axis == 2 ? 2 : 1, axis == 2 ? pd : pd + 1, sc);
    tb_init_f(b, "b", axis == 2 ? 2 : 1, axis == 2 ? pd : pd + 1, bi);
    Onnx__NodeProto *n = tb_node(b, "LayerNormalization", "ln", "x,s,b", "y,mean,inv");
    tb_attr_i(b, n, "axis", axis);
    tb_attr_f(b, n, "epsilon", 0.01f);
    tb_output(b, "y");
    tb_output(b, "mean");
    tb_output(b, "inv");
    size_t len;
    uint8_t *p = tb_pack(b, &len);
    tb_free(b);
    tc_graph *g = import_ok(p, len);
    CHECK_EQ_INT(g->noutputs, 3);
    const tc_tensor *tm = &g->nodes[g->outputs[1]].out;
    CHECK_EQ_INT(tm->ndim, 4);
    CHECK_EQ_INT(tm->shape[2], axis == 2 ? 1 : H);
    CHECK_EQ_INT(tm->shape[3], 1);
    float y[N * C * H * W], mean[N * C * H], inv[N * C * H];
    const void *ins[1] = {x};
    void *outs[3] = {y, mean, inv};
    char err[256];
    CHECK(tc_ref_run_io(g, ins, outs, err, sizeof err) == TH_OK);
    for (int64_t r = 0; r < rows; r++) {
      double m = 0, v = 0;
      for (int64_t i = 0; i < inner; i++) m += x[r * inner + i];
      m /= (double)inner;
      for (int64_t i = 0; i < inner; i++) v += (x[r * inner + i] - m) * (x[r * inner + i] - m);
      double is = 1.0 / sqrt(v / (double)inner + 0.01);
      CHECK(fabs(mean[r] - m) <= 1e-5);
      CHECK(fabs(inv[r] - is) <= 1e-4 * is);
      for (int64_t i = 0; i < inner; i++) {
        double want = (x[r * inner + i] - m) * is * sc[i] + bi[i];
        if (fabs(y[r * inner + i] - want) > 1e-4) {
          fprintf(stderr, "axis %d row %lld [%lld]: %.7g vs %.7g\n", axis, (long long)r,
                  (long long)i, (double)y[r * inner + i], want);
          CHECK(0);
        }
      }
    }
    tc_graph_free(g);
    free(p);
  }
  return 0;
}

/* InstanceNormalization of [N, C, H, W]: each plane normalised, times scale[c] plus B[c]. */
TH_TEST(instance_norm) {
  float x[N * C * H * W], sc[C], bi[C], y[N * C * H * W];
  tb_fill(x, N * C * H * W, 8);
  tb_fill(sc, C, 9);
  tb_fill(bi, C, 10);
  tb *b = tb_new(6);
  int64_t d[4] = {-1, C, H, W}, pc[1] = {C};
  tb_input(b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, d);
  tb_init_f(b, "s", 1, pc, sc);
  tb_init_f(b, "b", 1, pc, bi);
  tb_attr_f(b, tb_node(b, "InstanceNormalization", "in", "x,s,b", "y"), "epsilon", 0.01f);
  tb_output(b, "y");
  size_t len;
  uint8_t *p = tb_pack(b, &len);
  tb_free(b);
  tc_graph *g = import_ok(p, len);
  const void *ins[1] = {x};
  void *outs[1] = {y};
  char err[256];
  CHECK(tc_ref_run_io(g, ins, outs, err, sizeof err) == TH_OK);
  for (int r = 0; r < N * C; r++) {
    double m = 0, v = 0;
    const float *xr = x + r * H * W;
    for (int i = 0; i < H * W; i++) m += xr[i];
    m /= H * W;
    for (int i = 0; i < H * W; i++) v += (xr[i] - m) * (xr[i] - m);
    double is = 1.0 / sqrt(v / (H * W) + 0.01);
    for (int i = 0; i < H * W; i++) {
      double want = (xr[i] - m) * is * sc[r % C] + bi[r % C];
      if (fabs(y[r * H * W + i] - want) > 1e-4) {
        fprintf(stderr, "plane %d [%d]: %.7g vs %.7g\n", r, i, (double)y[r * H * W + i], want);
        CHECK(0);
      }
    }
  }
  tc_graph_free(g);
  free(p);
  return 0;
}

/* A build's timing run accepts NaN or infinity from the log-sum and product reductions (a negative
 * sum's log, a product past FLT_MAX) and from no other reduction. */
TH_TEST(reduce_nonfinite_ops) {
  for (int op = 0; op < TC_REDUCE_COUNT; op++) {
    tc_graph *g = tc_graph_new("nonfinite", 1);
    int id = tc_graph_reduce(g, tc_graph_input(g, 3, 4, 5), op);
    CHECK(id >= 0);
    CHECK_EQ_INT(tc_graph_nonfinite(g), op == TC_REDUCE_LOG_SUM || op == TC_REDUCE_PROD);
    tc_graph_free(g);
  }
  return 0;
}
