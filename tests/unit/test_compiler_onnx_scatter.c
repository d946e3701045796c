/* Tests of the ONNX importer's scatters (compiler/import/onnx_ops_scatter.c): ScatterElements with
 * each reduction and the old Scatter, built in C (onnx_build.h), imported and run by the reference
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
