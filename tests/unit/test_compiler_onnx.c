/* Tests of the ONNX importer (compiler/import/onnx.h). Models are built in C (onnx_build.h); an imported
 * graph is run by the reference interpreter and compared with the same network built directly with the
 * graph builders, or with naive loops, on seeded weights and inputs. Every malformed or unsupported input
 * the contract names is checked for its status and the words of its message. */
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

/* ---- helpers ------------------------------------------------------------------------------------------ */

/* Imports p at batch with shapes, checking the status; on failure err must contain every string of
 * `want` (NULL-terminated). Returns the graph on success. */
static tc_graph *tt_import(const uint8_t *p, size_t len, int batch, const char *shapes, int weights,
                           tc_onnx_info *info, th_status want_rc, const char *const *want) {
  tc_onnx_opts o = {"test", batch, shapes, weights};
  tc_graph *g = NULL;
  char err[2048] = "";
  th_status rc = tc_onnx_import(p, len, &o, &g, info, err, sizeof err);
  if (rc != want_rc) fprintf(stderr, "import: %s (%s), expected %s\n", th_status_name(rc), err, th_status_name(want_rc));
  CHECK(rc == want_rc);
  if (rc != TH_OK) {
    fprintf(stderr, "  error: %s\n", err);
    CHECK(g == NULL);
    for (int i = 0; want && want[i]; i++) {
      if (!strstr(err, want[i])) fprintf(stderr, "  missing '%s'\n", want[i]);
      CHECK(strstr(err, want[i]) != NULL);
    }
  }
  return g;
}

static tc_graph *tt_ok(const uint8_t *p, size_t len, int batch, tc_onnx_info *info) {
  return tt_import(p, len, batch, NULL, 1, info, TH_OK, NULL);
}

#define TT_FAIL(p, len, rc, ...)                                                   \
  do {                                                                             \
    static const char *const tt_want[] = {__VA_ARGS__, NULL};                      \
    CHECK(tt_import((p), (len), 1, NULL, 1, NULL, (rc), tt_want) == NULL);         \
  } while (0)

/* Sets the data of parameter `gname` of a builder-made graph to the test models' initializer `tname`. */
static void tt_param(tc_graph *g, const char *gname, const char *tname, int positive) {
  int p = tc_graph_find_param(g, gname);
  if (p < 0) fprintf(stderr, "no parameter %s\n", gname);
  CHECK(p >= 0);
  g->params[p].data = malloc((size_t)g->params[p].numel * sizeof(float));
  tb_data(tname, g->params[p].numel, positive, g->params[p].data);
}

static void tt_free_params(tc_graph *g) {
  for (int i = 0; i < g->nparams; i++) free(g->params[i].data);
}

/* Runs g on one float input of n elements filled by seed; returns the first output (malloc'd). */
static float *tt_run(const tc_graph *g, uint64_t seed) {
  const tc_tensor *ti = &g->nodes[g->inputs[0]].out;
  float *in = malloc((size_t)tc_tensor_numel(ti) * sizeof *in);
  float *out = malloc((size_t)tc_tensor_bytes(&g->nodes[g->outputs[0]].out));
  tb_fill(in, tc_tensor_numel(ti), seed);
  const void *ins[1] = {in};
  void *outs[1] = {out};
  char err[256];
  th_status rc = tc_ref_run_io(g, ins, outs, err, sizeof err);
  if (rc != TH_OK) fprintf(stderr, "reference: %s\n", err);
  CHECK(rc == TH_OK);
  free(in);
  return out;
}

/* max |a - b| / max |b| */
static double tt_rel(const float *a, const float *b, int64_t n) {
  double mx = 0, d = 0;
  for (int64_t i = 0; i < n; i++) {
    if (!isfinite(a[i])) return INFINITY;
    mx = fmax(mx, fabs(b[i]));
    d = fmax(d, fabs((double)a[i] - b[i]));
  }
  return d / (mx > 0 ? mx : 1);
}

static int tt_count_op(const tc_graph *g, tc_op op) {
  int c = 0;
  for (int i = 0; i < g->nnodes; i++) c += g->nodes[i].op == op;
  return c;
}

static int tt_optype_count(const tc_onnx_info *in, const char *name) {
  for (int i = 0; i < in->nop_types; i++)
    if (strcmp(in->op_types[i].name, name) == 0) return in->op_types[i].count;
  return -1;
}

/* ---- a CNN against the builders -------------------------------------------------------------------------- */

static tc_graph *tt_cnn_reference(int batch) {
  tc_graph *g = tc_graph_new("ref", batch);
  int x = tc_graph_input(g, 3, 8, 8);
  x = tc_graph_conv(g, "conv1", x, 8, 3, 3, 1, 1, 1, 1, 1, 1);
  x = tc_graph_relu(g, tc_graph_bn(g, "bn1", x, 1e-5f));
  int p = tc_graph_max_pool(g, x, 3, 2, 1, 0);
  x = tc_graph_conv(g, "conv2", p, 8, 3, 3, 1, 1, 1, 1, 1, 0);
  x = tc_graph_relu(g, tc_graph_add(g, x, p));
  x = tc_graph_conv(g, "conv3", x, 16, 1, 1, 2, 2, 0, 0, 2, 0);
  x = tc_graph_clip(g, x, 0.0f, 6.0f);
  x = tc_graph_flatten(g, tc_graph_global_avg_pool(g, x));
  x = tc_graph_dense(g, "fc", x, 10, 1);
  CHECK(x >= 0 && tc_graph_output(g, "logits", x) >= 0 && tc_graph_finish(g) == TH_OK);
  static const char *const names[] = {"conv1.weight", "conv1.bias", "bn1.weight", "bn1.bias", "bn1.running_mean",
                                      "bn1.running_var", "conv2.weight", "conv3.weight", "fc.weight", "fc.bias"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    tt_param(g, names[i], names[i], strcmp(names[i], "bn1.weight") == 0 || strcmp(names[i], "bn1.running_var") == 0);
  g->has_data = 1;
  return g;
}

TH_TEST(cnn_matches_builders) {
  static const int64_t opsets[] = {7, 9, 11, 13, 17};
  for (size_t i = 0; i < sizeof opsets / sizeof opsets[0]; i++) {
    size_t len;
    uint8_t *p = tb_model_cnn(opsets[i], &len);
    tc_onnx_info info;
    tc_graph *g = tt_ok(p, len, 3, &info);
    CHECK_EQ_INT(info.opset, opsets[i]);
    CHECK_EQ_INT(info.ir_version, 8);
    CHECK_STR(info.producer, "tunehub-test 1");
    CHECK_EQ_INT(info.ninitializers, 10);
    CHECK_EQ_INT(tt_optype_count(&info, "Conv"), 3);
    CHECK_EQ_INT(tt_optype_count(&info, "Relu"), 2);
    CHECK_STR(info.op_types[0].name, "Conv"); /* first-seen order */
    CHECK_EQ_INT(info.folded, opsets[i] >= 11 ? 2 : 0); /* the Clip bounds' Constant nodes */
    CHECK_EQ_INT(g->batch, 3);
    CHECK_EQ_INT(g->noutputs, 1);
    CHECK_STR(g->output_names[0], "logits");
    CHECK_STR(g->nodes[g->inputs[0]].name, "input");
    CHECK(g->has_data);
    CHECK_EQ_INT(g->nparams, 10);
    CHECK(tc_graph_find_param(g, "bn1.running_var") >= 0 && tc_graph_find_param(g, "fc.weight") >= 0);
    CHECK_EQ_INT(tt_count_op(g, TC_OP_CONV2D), 3);
    CHECK_EQ_INT(tt_count_op(g, TC_OP_DENSE), 1);
    CHECK_EQ_INT(tt_count_op(g, TC_OP_CLIP), 1);
    tc_graph *r = tt_cnn_reference(3);
    CHECK(fabs(tc_graph_flops(g) - tc_graph_flops(r)) < 1);
    CHECK_EQ_INT(tc_graph_param_count(g), tc_graph_param_count(r));
    float *a = tt_run(g, 7), *b = tt_run(r, 7);
    double rel = tt_rel(a, b, 30);
    fprintf(stderr, "opset %lld: max rel diff %.3g\n", (long long)opsets[i], rel);
    CHECK(rel <= 1e-6);
    free(a);
    free(b);
    tt_free_params(r);
    tc_graph_free(r);
    tc_graph_free(g);
    free(p);
  }
  return 0;
}

TH_TEST(shapes_only_without_weights) {
  size_t len;
  uint8_t *p = tb_model_cnn(13, &len);
  tc_graph *g = tt_import(p, len, 2, NULL, 0, NULL, TH_OK, NULL);
  CHECK(!g->has_data);
  for (int i = 0; i < g->nparams; i++) CHECK(g->params[i].data == NULL);
  CHECK_EQ_INT(g->nodes[g->outputs[0]].out.shape[0], 2);
  CHECK_EQ_INT(g->nodes[g->outputs[0]].out.shape[1], 10);
  tc_graph_free(g);
  free(p);
  return 0;
}

/* ---- malformed files ---------------------------------------------------------------------------------- */

TH_TEST(rejects_truncated_and_garbage) {
  size_t len;
  uint8_t *p = tb_model_cnn(13, &len);
  for (size_t cut = 1; cut < len; cut += len / 7 + 1) {
    tc_onnx_opts o = {"t", 1, NULL, 1};
    tc_graph *g = NULL;
    char err[512];
    th_status rc = tc_onnx_import(p, len - cut, &o, &g, NULL, err, sizeof err);
    CHECK(rc != TH_OK && g == NULL); /* cut anywhere: a parse error or an inconsistent model, never a crash */
  }
  TT_FAIL(p, len / 2, TH_ERR_INVALID, "not an ONNX model (protobuf parse failed)");
  static const uint8_t garbage[] = "\xff\xff\xff\xff this is not protobuf";
  TT_FAIL(garbage, sizeof garbage, TH_ERR_INVALID, "protobuf parse failed");
  TT_FAIL((const uint8_t *)"", 0, TH_ERR_INVALID, "ir_version");
  free(p);
  return 0;
}
