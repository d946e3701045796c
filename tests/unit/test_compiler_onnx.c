/* Tests of the ONNX importer (compiler/include/tc/onnx.h). Models are built in C (onnx_build.h); an
 * imported graph is run by the reference interpreter and compared with the same network built
 * directly with the graph builders, or with naive loops, on seeded weights and inputs. Every
 * malformed or unsupported input the contract names is checked for its status and the words of its
 * message. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graph.h"
#include "onnx.h"
#include "onnx_build.h"
#include "ops.h"
#include "passes.h"
#include "ref/ref.h"
#include "th_test.h"
#include "th_util.h"

/* ---- helpers
 * ------------------------------------------------------------------------------------------ */

/* Imports p at batch with shapes, checking the status; on failure err must contain every string of
 * `want` (NULL-terminated). Returns the graph on success. */
static tc_graph *tt_import(const uint8_t *p, size_t len, int batch, const char *shapes, int weights,
                           tc_onnx_info *info, th_status want_rc, const char *const *want) {
  tc_onnx_opts o = {"test", batch, shapes, weights};
  tc_graph *g = NULL;
  char err[2048] = "";
  th_status rc = tc_onnx_import(p, len, &o, &g, info, err, sizeof err);
  if (rc != want_rc)
    fprintf(stderr, "import: %s (%s), expected %s\n", th_status_name(rc), err,
            th_status_name(want_rc));
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

#define TT_FAIL(p, len, rc, ...)                                           \
  do {                                                                     \
    static const char *const tt_want[] = {__VA_ARGS__, NULL};              \
    CHECK(tt_import((p), (len), 1, NULL, 1, NULL, (rc), tt_want) == NULL); \
  } while (0)

/* Sets the data of parameter `gname` of a builder-made graph to the test models' initializer
 * `tname`. */
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

/* The imported graph g and the reference r have the same outputs (names, shapes) and values a[k] ~
 * b[k] within tol relative to the largest magnitude; frees a[k] and b[k]. */
static void tt_same_outputs(const tc_graph *g, const tc_graph *r, void **a, void **b, double tol) {
  CHECK_EQ_INT(g->noutputs, r->noutputs);
  for (int k = 0; k < g->noutputs; k++) {
    const tc_tensor *t = &g->nodes[g->outputs[k]].out, *tr = &r->nodes[r->outputs[k]].out;
    CHECK_STR(g->output_names[k], r->output_names[k]);
    CHECK_EQ_INT(t->ndim, tr->ndim);
    for (int d = 0; d < t->ndim; d++) CHECK_EQ_INT(t->shape[d], tr->shape[d]);
    double rel = tt_rel(a[k], b[k], tc_tensor_numel(t));
    fprintf(stderr, "  %s: max rel diff %.3g\n", g->output_names[k], rel);
    CHECK(rel <= tol);
    free(a[k]);
    free(b[k]);
  }
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

/* ---- a CNN against the builders
 * -------------------------------------------------------------------------- */

static tc_graph *tt_cnn_reference(int batch) {
  tc_graph *g = tc_graph_new("ref", batch);
  int x = tc_graph_input(g, 3, 8, 8);
  x = tc_graph_conv(g, "conv1", x, 8, 3, 3, 1, 1, 1, 1, 1, 1);
  x = tc_graph_relu(g, tc_graph_bn(g, "bn1", x, 1e-5f));
  int p = tc_graph_max_pool(g, x, 3, 2, 1, 0);
  x = tc_graph_conv(g, "conv2", p, 8, 3, 3, 1, 1, 1, 1, 1, 0);
  x = tc_graph_relu(g, tc_graph_add(g, x, p));
  x = tc_graph_conv(g, "conv3", x, 8, 3, 3, 2, 2, 1, 1, 8, 0);
  x = tc_graph_clip(g, x, 0.0f, 6.0f);
  x = tc_graph_flatten(g, tc_graph_global_avg_pool(g, x));
  x = tc_graph_dense(g, "fc", x, 10, 1);
  CHECK(x >= 0 && tc_graph_output(g, "logits", x) >= 0 && tc_graph_finish(g) == TH_OK);
  static const char *const names[] = {
      "conv1.weight",    "conv1.bias",   "bn1.weight",   "bn1.bias",  "bn1.running_mean",
      "bn1.running_var", "conv2.weight", "conv3.weight", "fc.weight", "fc.bias"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    tt_param(g, names[i], names[i],
             strcmp(names[i], "bn1.weight") == 0 || strcmp(names[i], "bn1.running_var") == 0);
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
    CHECK_STR(info.op_types[0].name, "Conv");           /* first-seen order */
    CHECK_EQ_INT(info.folded, opsets[i] >= 11 ? 2 : 0); /* the Clip bounds' Constant nodes */
    CHECK_EQ_INT(g->batch, 3);
    CHECK_EQ_INT(g->noutputs, 1);
    CHECK_STR(g->output_names[0], "logits");
    CHECK_STR(g->nodes[g->inputs[0]].name, "input");
    CHECK(g->has_data);
    CHECK_EQ_INT(g->nparams, 10);
    CHECK(tc_graph_find_param(g, "bn1.running_var") >= 0 &&
          tc_graph_find_param(g, "fc.weight") >= 0);
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

/* With weights or without, an import builds the same graph (graph.json and the parameter table
 * agree), so tasks extracted without weights are those of the model built with them. */
TH_TEST(same_graph_with_and_without_weights) {
  uint8_t *(*const models[])(int64_t, size_t *) = {tb_model_cnn, tb_model_transformer,
                                                   tb_model_views};
  for (size_t m = 0; m < 3; m++) {
    size_t len;
    uint8_t *p = models[m](13, &len);
    tc_graph *a = tt_import(p, len, 2, NULL, 1, NULL, TH_OK, NULL),
             *b = tt_import(p, len, 2, NULL, 0, NULL, TH_OK, NULL);
    th_buf ja, jb;
    th_buf_init(&ja, 1 << 24);
    th_buf_init(&jb, 1 << 24);
    CHECK(tc_graph_to_json(a, &ja) == TH_OK && tc_graph_to_json(b, &jb) == TH_OK);
    CHECK(ja.len == jb.len && memcmp(ja.data, jb.data, ja.len) == 0);
    CHECK_EQ_INT(a->nparams, b->nparams);
    for (int i = 0; i < a->nparams; i++) {
      CHECK_STR(a->params[i].name, b->params[i].name);
      CHECK_EQ_INT(a->params[i].numel, b->params[i].numel);
      CHECK(a->params[i].data != NULL && b->params[i].data == NULL);
    }
    th_buf_free(&ja);
    th_buf_free(&jb);
    tc_graph_free(a);
    tc_graph_free(b);
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

TH_TEST(import_file_maps_the_file) {
  size_t len;
  uint8_t *p = tb_model_cnn(13, &len);
  char path[] = "/tmp/tc_onnx_test_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  FILE *f = fdopen(fd, "wb");
  CHECK(f && fwrite(p, 1, len, f) == len && fclose(f) == 0);
  tc_onnx_opts o = {"cnn", 2, NULL, 1};
  tc_graph *g = NULL;
  tc_onnx_info info;
  char err[512];
  CHECK(tc_onnx_import_file(path, &o, &g, &info, err, sizeof err) == TH_OK);
  CHECK_EQ_INT(g->batch, 2);
  CHECK_STR(g->network, "cnn");
  CHECK_EQ_INT(info.ninitializers, 10);
  CHECK_EQ_INT(info.param_elements, 8 * 27 + 8 + 4 * 8 + 8 * 72 + 8 * 9 + 80 + 10);
  tc_graph_free(g);
  g = NULL;
  CHECK(truncate(path, (off_t)len / 2) == 0);
  CHECK(tc_onnx_import_file(path, &o, &g, &info, err, sizeof err) == TH_ERR_INVALID && g == NULL);
  CHECK(strstr(err, "protobuf parse failed") != NULL);
  CHECK(unlink(path) == 0);
  CHECK(tc_onnx_import_file(path, &o, &g, &info, err, sizeof err) == TH_ERR_IO && g == NULL);
  CHECK(strstr(err, path) != NULL && strstr(err, "No such file") != NULL);
  CHECK(tc_onnx_import_file("/tmp", &o, &g, &info, err, sizeof err) == TH_ERR_IO);
  CHECK(tc_onnx_import(p, len, NULL, &g, NULL, err, sizeof err) == TH_ERR_INVALID);
  CHECK(tc_onnx_import(p, len, &o, NULL, NULL, err, sizeof err) == TH_ERR_INVALID);
  free(p);
  return 0;
}

/* ---- malformed files
 * ---------------------------------------------------------------------------------- */

TH_TEST(rejects_truncated_and_garbage) {
  size_t len;
  uint8_t *p = tb_model_cnn(13, &len);
  for (size_t cut = 1; cut < len; cut += len / 7 + 1) {
    tc_onnx_opts o = {"t", 1, NULL, 1};
    tc_graph *g = NULL;
    char err[512];
    th_status rc = tc_onnx_import(p, len - cut, &o, &g, NULL, err, sizeof err);
    CHECK(rc != TH_OK &&
          g == NULL); /* cut anywhere: a parse error or an inconsistent model, never a crash */
  }
  TT_FAIL(p, len / 2, TH_ERR_INVALID, "not an ONNX model (protobuf parse failed)");
  static const uint8_t garbage[] = "\xff\xff\xff\xff this is not protobuf";
  TT_FAIL(garbage, sizeof garbage, TH_ERR_INVALID, "protobuf parse failed");
  TT_FAIL((const uint8_t *)"", 0, TH_ERR_INVALID, "ir_version");
  free(p);
  return 0;
}

/* x [N, 4, 6] -> Relu -> y, to be broken by each test. */
static tb *tt_tiny(int64_t opset) {
  tb *b = tb_new(opset);
  int64_t d[3] = {-1, 4, 6};
  tb_input(b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 3, d);
  tb_node(b, "Relu", "relu", "x", "y");
  tb_output(b, "y");
  return b;
}

/* Packs builder b (evaluated once), expects the import to fail so, frees both. */
#define TT_PACK_FAIL(b, rc, ...)              \
  do {                                        \
    tb *tt_b = (b);                           \
    size_t tt_len;                            \
    uint8_t *tt_p = tb_pack(tt_b, &tt_len);   \
    TT_FAIL(tt_p, tt_len, (rc), __VA_ARGS__); \
    free(tt_p);                               \
    tb_free(tt_b);                            \
  } while (0)

TH_TEST(rejects_opsets_and_domains) {
  TT_PACK_FAIL(tt_tiny(22), TH_ERR_INVALID,
               "opset 22 of the default domain is outside the supported 1..21");
  /* opsets 1..5: each op by its own range; Relu's legacy consumed_inputs form is refused by name,
   * Softsign has had one semantics since opset 1 */
  TT_PACK_FAIL(tt_tiny(5), TH_ERR_UNSUPPORTED, "Relu (node 'relu', opset 5",
               "implemented for opsets 6..21 only");
  {
    size_t len;
    tb *e = tb_new(1);
    tb_input(e, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, (const int64_t[]){-1, 4});
    tb_node(e, "Softsign", "ss", "x", "y");
    tb_output(e, "y");
    uint8_t *p = tb_pack(e, &len);
    tc_graph_free(tt_ok(p, len, 1, NULL));
    free(p);
    tb_free(e);
  }
  static const int64_t edges[] = {6, 18, 21}; /* the ends of the range, and the Reduce* move */
  for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
    size_t len;
    tb *e = tt_tiny(edges[i]);
    uint8_t *p = tb_pack(e, &len);
    tc_graph_free(tt_ok(p, len, 1, NULL));
    free(p);
    tb_free(e);
  }
  TT_PACK_FAIL(tt_tiny(0), TH_ERR_INVALID, "no opset of the default domain");
  tb *b = tt_tiny(13);
  Onnx__NodeProto *n = tb_node(b, "FusedGemm", "fg", "y", "z");
  n->domain = (char *)"com.microsoft";
  TT_PACK_FAIL(b, TH_ERR_INVALID, "domain 'com.microsoft'", "fg");
  /* ai.onnx spelled out is the default domain */
  b = tt_tiny(13);
  tb_model(b)->opset_import[0]->domain = (char *)"ai.onnx";
  size_t len;
  uint8_t *p = tb_pack(b, &len);
  tc_graph_free(tt_ok(p, len, 1, NULL));
  free(p);
  tb_free(b);
  b = tt_tiny(13);
  tb_model(b)->ir_version = 2;
  TT_PACK_FAIL(b, TH_ERR_INVALID, "ir_version 2 is below 3");
  b = tt_tiny(13);
  tb_model(b)->graph = NULL;
  TT_PACK_FAIL(b, TH_ERR_INVALID, "no graph");
  return 0;
}

TH_TEST(rejects_bad_structure) {
  /* a cycle: y = Relu(w), w = Relu(y) feeding the output; nodes may come in any order, the cycle
   * never sorts */
  tb *b = tt_tiny(13);
  tb_node(b, "Add", "a1", "y,w", "v");
  tb_node(b, "Relu", "cyc", "v", "w");
  tb_output(b, "w");
  TT_PACK_FAIL(b, TH_ERR_INVALID, "cycle through", "node '");
  b = tt_tiny(13);
  tb_node(b, "Add", "adder", "y,nowhere", "z");
  tb_output(b, "z");
  TT_PACK_FAIL(b, TH_ERR_INVALID, "node 'adder'", "'nowhere' is dangling");
  b = tt_tiny(13);
  tb_node(b, "Relu", "again", "x", "y");
  TT_PACK_FAIL(b, TH_ERR_INVALID, "duplicate output name", "'y'");
  b = tt_tiny(13);
  tb_node(b, "Relu", "two", "y", "p,q"); /* Relu defines one output */
  tb_node(b, "Relu", "use", "q", "z");
  tb_output(b, "z");
  TT_PACK_FAIL(b, TH_ERR_INVALID,
               "node 'use' (Relu): input 'q' is an output its producer does not define");
  b = tt_tiny(13);
  static const int64_t huge[4] = {100000, 100000, 4, 6};
  tb_const_ints(b, "huge", 4, huge);
  tb_node(b, "Expand", "bomb", "y,huge", "z");
  tb_output(b, "z");
  TT_PACK_FAIL(b, TH_ERR_INVALID,
               "node 'bomb' (Expand): the result has more than 2147483648 elements");
  /* a negative-step Slice of an empty constant is empty (it once read the first element: found by
   * the fuzzer's grammar mode) */
  b = tt_tiny(13);
  int64_t zero = 0;
  float none[1];
  tb_init_f(b, "empty", 1, &zero, none);
  static const int64_t st = -1, en = -100, ax = 0, sp = -1;
  tb_const_ints(b, "st", 1, &st);
  tb_const_ints(b, "en", 1, &en);
  tb_const_ints(b, "ax", 1, &ax);
  tb_const_ints(b, "sp", 1, &sp);
  tb_node(b, "Slice", "back", "empty,st,en,ax,sp", "e2");
  tb_output(b, "e2");
  TT_PACK_FAIL(b, TH_ERR_UNSUPPORTED, "Slice (node 'back', opset 13: constant 'e2' is empty)");
  b = tt_tiny(13);
  tb_output(b, "missing");
  TT_PACK_FAIL(b, TH_ERR_INVALID, "graph output 'missing' is not produced");
  /* unsorted nodes are fine */
  b = tb_new(13);
  int64_t d[2] = {-1, 5};
  tb_input(b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, d);
  tb_node(b, "Relu", "second", "h", "y");
  tb_node(b, "Tanh", "first", "x", "h");
  tb_output(b, "y");
  size_t len;
  uint8_t *p = tb_pack(b, &len);
  tc_graph *g = tt_ok(p, len, 2, NULL);
  CHECK_EQ_INT(g->nnodes, 3);
  CHECK(g->nodes[1].op == TC_OP_TANH && g->nodes[2].op == TC_OP_RELU);
  tc_graph_free(g);
  free(p);
  tb_free(b);
  return 0;
}

TH_TEST(rejects_bad_initializers) {
  tb *b = tt_tiny(13);
  int64_t dims[1] = {6};
  float v[6] = {0};
  Onnx__TensorProto *t = tb_init_f(b, "bias6", 1, dims, v);
  t->raw_data.len = 20; /* 5 floats for 6 */
  tb_node(b, "Add", "add", "y,bias6", "z");
  TT_PACK_FAIL(b, TH_ERR_INVALID, "'bias6' holds 20 bytes of data, its dims need 24");
  b = tt_tiny(13);
  t = tb_init_f(b, "long6", 1, dims, v);
  t->dims[0] = 5; /* 24 bytes for 5 floats */
  TT_PACK_FAIL(b, TH_ERR_INVALID, "'long6' holds 24 bytes of data, its dims need 20");
  b = tt_tiny(13);
  t = tb_init_f(b, "typed", 1, dims, v);
  t->has_raw_data = 0;
  t->raw_data.len = 0;
  t->n_float_data = 5;
  t->float_data = v;
  TT_PACK_FAIL(b, TH_ERR_INVALID, "'typed' holds 5 values, its dims need 6");
  b = tt_tiny(13);
  t = tb_init_f(b, "huge", 1, dims, v);
  t->dims[0] = (int64_t)1 << 40;
  TT_PACK_FAIL(b, TH_ERR_INVALID, "huge", "dimension 0 is 1099511627776");
  b = tt_tiny(13);
  t = tb_init_f(b, "neg", 1, dims, v);
  t->dims[0] = -3;
  TT_PACK_FAIL(b, TH_ERR_INVALID, "neg", "dimension 0 is -3");
  b = tt_tiny(13);
  t = tb_init_f(b, "ext", 1, dims, v);
  t->has_data_location = 1;
  t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  TT_PACK_FAIL(b, TH_ERR_UNSUPPORTED, "'ext' uses external data");
  b = tt_tiny(13);
  t = tb_init_f(b, "strings", 1, dims, v);
  t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__STRING;
  TT_PACK_FAIL(b, TH_ERR_UNSUPPORTED, "'strings' has element type 8");
  return 0;
}

TH_TEST(inputs_batch_and_shapes) {
  tb *b = tt_tiny(13);
  int64_t d[4] = {-1, 3, -1, 8};
  tb_input(b, "img", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, d);
  tb_node(b, "Relu", "r2", "img", "y2");
  tb_output(b, "y2");
  size_t len;
  uint8_t *p = tb_pack(b, &len);
  static const char *const sym[] = {"input 'img': dimension 2 ('d2') is symbolic", "shapes", NULL};
  CHECK(tt_import(p, len, 2, NULL, 1, NULL, TH_ERR_INVALID, sym) == NULL);
  tc_graph *g = tt_import(p, len, 2, "img:Nx3x5x8", 1, NULL, TH_OK, NULL);
  CHECK_EQ_INT(g->ninputs, 2);
  const tc_tensor *t = &g->nodes[g->inputs[1]].out;
  CHECK(t->ndim == 4 && t->shape[0] == 2 && t->shape[1] == 3 && t->shape[2] == 5 &&
        t->shape[3] == 8);
  CHECK_STR(g->output_names[0], "y");
  CHECK_STR(g->output_names[1], "y2");
  tc_graph_free(g);
  g = tt_import(p, len, 4, "x:7x4x6,img:1x3x9x8", 1, NULL, TH_OK,
                NULL); /* the batch replaces any first D */
  CHECK_EQ_INT(g->nodes[g->inputs[0]].out.shape[0], 4);
  CHECK_EQ_INT(g->nodes[g->inputs[1]].out.shape[2], 9);
  tc_graph_free(g);
  static const char *const bad[] = {"bad shapes string", NULL};
  static const char *const shapes[] = {"img:Nx3xx8",   "img", "img:0x3x5x8",
                                       "img:Nx3x5x8x", ":3",  "img:Nx3x5xN"};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    CHECK(tt_import(p, len, 1, shapes[i], 1, NULL, TH_ERR_INVALID, bad) == NULL);
  static const char *const notin[] = {"'nope', which is not an input", NULL};
  CHECK(tt_import(p, len, 1, "img:Nx3x5x8,nope:1x2", 1, NULL, TH_ERR_INVALID, notin) == NULL);
  static const char *const rank[] = {"gives input 'img' 3 dimensions, the file 4", NULL};
  CHECK(tt_import(p, len, 1, "img:Nx3x5", 1, NULL, TH_ERR_INVALID, rank) == NULL);
  static const char *const batch[] = {"batch 0 is outside 1..4096", NULL};
  CHECK(tt_import(p, len, 0, "img:Nx3x5x8", 1, NULL, TH_ERR_INVALID, batch) == NULL);
  free(p);
  tb_free(b);
  /* a huge fixed dimension, an int32 input, an input that is also an initializer (not an input) */
  b = tb_new(13);
  int64_t h[2] = {-1, (int64_t)1 << 40};
  tb_input(b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, h);
  tb_node(b, "Relu", "r", "x", "y");
  tb_output(b, "y");
  TT_PACK_FAIL(b, TH_ERR_INVALID, "input 'x': dimension 1 is 1099511627776");
  b = tb_new(13);
  int64_t s[2] = {-1, 5};
  tb_input(b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__INT32, 2, s);
  tb_node(b, "Relu", "r", "x", "y");
  tb_output(b, "y");
  TT_PACK_FAIL(b, TH_ERR_INVALID, "input 'x' has element type 6");
  b = tb_new(13);
  tb_input(b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, s);
  tb_input(b, "w", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, s + 1);
  tb_param(b, "w", 1, s + 1, 0);
  tb_node(b, "Add", "add", "x,w", "y");
  tb_output(b, "y");
  p = tb_pack(b, &len);
  g = tt_ok(p, len, 3, NULL);
  CHECK_EQ_INT(g->ninputs, 1);
  CHECK(tc_graph_find_param(g, "w") >= 0);
  tc_graph_free(g);
  free(p);
  tb_free(b);
  return 0;
}

TH_TEST(reshape_that_fixes_the_batch) {
  tb *b = tt_tiny(13);
  static const int64_t shape[2] = {1, 24};
  tb_const_ints(b, "shape", 2, shape);
  tb_node(b, "Reshape", "flat", "y,shape", "z");
  tb_output(b, "z");
  size_t len;
  uint8_t *p = tb_pack(b, &len);
  tc_graph_free(tt_ok(p, len, 1, NULL)); /* the file's batch */
  static const char *const want[] = {"node 'flat' (Reshape)", "cannot reshape [3, 4, 6] to [1, 24]",
                                     "the model fixes its batch to 1", "dynamic batch axis", NULL};
  CHECK(tt_import(p, len, 3, NULL, 1, NULL, TH_ERR_INVALID, want) == NULL);
  free(p);
  tb_free(b);
  return 0;
}

TH_TEST(lists_every_unsupported_op) {
  tb *b = tt_tiny(13);
  tb_node(b, "RoiAlign", "up1", "y", "r");
  tb_node(b, "Loop", "loop", "r", "l");
  tb_node(b, "Relu", "after", "l", "a"); /* downstream of unsupported nodes: not listed */
  tb_const_f(b, "three", 3.0f);
  tb_node(b, "Mod", "cube", "y,three", "c"); /* fmod = 0: integer Mod */
  int64_t d[1] = {2};
  int64_t w[5] = {4, 4, 1, 1, 1};
  tb_param(b, "cw", 5, w, 0);
  tb_const_ints(b, "ax", 1, d);
  tb_node(b, "Unsqueeze", "u2", "y,ax", "y4b");
  Onnx__NodeProto *n = tb_node(b, "Conv", "dil", "y4b,y4b", "cv"); /* 3-D, runtime weights */
  tb_node(b, "NonZero", "nz", "y", "nzo");
  n = tb_node(b, "Cast", "to_str", "ax",
              "strs"); /* a constant: the fold reports it (no output needs it) */
  tb_attr_i(b, n, "to", ONNX__TENSOR_PROTO__DATA_TYPE__STRING);
  tb_output(b, "a");
  tb_output(b, "c");
  tb_output(b, "cv");
  tb_output(b, "nzo");
  size_t len;
  uint8_t *p = tb_pack(b, &len);
  static const char *const want[] = {
      "unsupported ONNX operators: ",
      "RoiAlign (node 'up1', opset 13)",
      "Loop (node 'loop', opset 13)",
      "Mod (node 'cube', opset 13: fmod = 0 on float32 (integer Mod: int64 only))",
      "Conv (node 'dil', opset 13: weights must be a constant 3-D, 4-D or 5-D float tensor",
      "NonZero (node 'nz', opset 13)",
      "Cast (node 'to_str', opset 13: a cast to element type 8)",
      NULL};
  tc_onnx_opts o = {"t", 1, NULL, 1};
  tc_graph *g = NULL;
  char err[2048];
  th_status rc = tc_onnx_import(p, len, &o, &g, NULL, err, sizeof err);
  fprintf(stderr, "%s: %s\n", th_status_name(rc), err);
  CHECK(rc == TH_ERR_UNSUPPORTED);
  for (int i = 0; want[i]; i++) CHECK(strstr(err, want[i]) != NULL);
  CHECK(strstr(err, "after") == NULL);
  /* after a fatal error the rest of the file is still searched for unknown op types */
  tb *b2 = tt_tiny(13);
  tb_node(b2, "RoiAlign", "first", "y", "r1");
  static const int64_t bad_shape[2] = {7, 7};
  tb_const_ints(b2, "bs", 2, bad_shape);
  tb_node(b2, "Reshape", "broken", "y,bs", "r2");
  tb_node(b2, "Relu", "later", "r2", "r3");
  tb_node(b2, "Loop", "last", "r3", "r4");
  tb_output(b2, "r1");
  tb_output(b2, "r4");
  size_t len2;
  uint8_t *p2 = tb_pack(b2, &len2);
  CHECK(tc_onnx_import(p2, len2, &o, &g, NULL, err, sizeof err) == TH_ERR_UNSUPPORTED);
  fprintf(stderr, "%s\n", err);
  CHECK(strstr(err, "RoiAlign (node 'first'") && strstr(err, "Loop (node 'last'"));
  CHECK(strstr(err,
               "the import also failed: node 'broken' (Reshape): cannot reshape [1, 4, 6] (24 "
               "elements) to [7, 7]"));
  free(p2);
  tb_free(b2);
  /* a short buffer keeps the list whole as far as it goes and says how many it left out */
  char small[120];
  CHECK(tc_onnx_import(p, len, &o, &g, NULL, small, sizeof small) == TH_ERR_UNSUPPORTED);
  fprintf(stderr, "%s\n", small);
  CHECK(strstr(small, "unsupported ONNX operators: Cast (node 'to_str', opset 13") ==
        small); /* constants first */
  CHECK(strstr(small, "more") != NULL);
  free(p);
  tb_free(b);
  return 0;
}

/* ---- a transformer block against the builders
 * ------------------------------------------------------------- */

/* Parameter gname [N, K] of a builder-made graph from the test models' initializer tname [K, N]. */
static void tt_param_t(tc_graph *g, const char *gname, const char *tname) {
  int p = tc_graph_find_param(g, gname);
  CHECK(p >= 0 && g->params[p].ndim == 2);
  int64_t N = g->params[p].shape[0], K = g->params[p].shape[1];
  float *kn = malloc((size_t)(K * N) * sizeof *kn), *nk = malloc((size_t)(K * N) * sizeof *nk);
  tb_data(tname, K * N, 0, kn);
  for (int64_t k = 0; k < K; k++)
    for (int64_t n = 0; n < N; n++) nk[n * K + k] = kn[k * N + n];
  free(kn);
  g->params[p].data = nk;
}

/* The network of tb_model_transformer as the zoo builds bert/vit. */
static tc_graph *tt_transformer_reference(int B) {
  enum { S = 5, D = 8, H = 2, DH = 4, FF = 16, PMAX = 10 };
  tc_graph *g = tc_graph_new("ref", B);
  int xs[3] = {B, S, D}, ms[2] = {B, S};
  int x = tc_graph_input_tensor(g, "x", TC_DTYPE_F32, 3, xs);
  int mask = tc_graph_input_tensor(g, "mask", TC_DTYPE_I64, 2, ms);
  int64_t pd[2] = {PMAX, D}, cd[3] = {1, 1, D};
  int pos = tc_graph_slice(g, tc_graph_const(g, "pos_table", 2, pd, TC_INIT_EMBED, D), 0, 0, S, 1);
  int x0 = tc_graph_add(g, x, pos);
  int h = tc_graph_layer_norm(g, "ln1", x0, 1e-5f);
  int qkv[3];
  const char *nm[3] = {"q", "k", "v"};
  for (int i = 0; i < 3; i++) {
    qkv[i] = tc_graph_dense(g, nm[i], h, D, 1);
    int hs[4] = {B, S, H, DH};
    static const int perm[4] = {0, 2, 1, 3};
    qkv[i] = tc_graph_transpose(g, tc_graph_reshape(g, qkv[i], 4, hs), perm);
  }
  int m4[4] = {B, 1, 1, S};
  int madd = tc_graph_reshape(
      g, tc_graph_affine(g, tc_graph_cast(g, mask, TC_DTYPE_F32), 10000.0f, -10000.0f), 4, m4);
  int att = tc_graph_softmax_ex(g, tc_graph_matmul(g, qkv[0], qkv[1], 0, 1, 1.0f), 0.5f, madd);
  int ctx = tc_graph_matmul(g, att, qkv[2], 0, 0, 1.0f);
  static const int merge[4] = {0, 2, 1, 3};
  int flat[3] = {B, S, D};
  ctx = tc_graph_reshape(g, tc_graph_transpose(g, ctx, merge), 3, flat);
  int r1 = tc_graph_add(g, x0, tc_graph_dense(g, "o", ctx, D, 1));
  int f =
      tc_graph_gelu(g, tc_graph_dense(g, "fc1", tc_graph_layer_norm(g, "ln2", r1, 1e-5f), FF, 1));
  int y = tc_graph_add(g, r1, tc_graph_dense(g, "fc2", f, D, 1));
  int cb[3] = {B, 1, D};
  int parts[2] = {tc_graph_expand(g, tc_graph_const(g, "cls", 3, cd, TC_INIT_EMBED, D), 3, cb), y};
  int cls = tc_graph_concat_axis(g, 2, parts, 1);
  CHECK(tc_graph_output(g, "y", y) >= 0 && tc_graph_output(g, "cls_out", cls) >= 0 &&
        tc_graph_finish(g) == TH_OK);
  tt_param(g, "pos_table", "pos_table", 0);
  tt_param(g, "cls", "cls", 0);
  static const char *const lin[6] = {"q", "k", "v", "o", "fc1", "fc2"};
  for (int i = 0; i < 6; i++) {
    char a[64], b[64];
    snprintf(a, sizeof a, "%s.weight", lin[i]);
    snprintf(b, sizeof b, "%s.weightT", lin[i]);
    tt_param_t(g, a, b);
    snprintf(a, sizeof a, "%s.bias", lin[i]);
    tt_param(g, a, a, 0);
  }
  tt_param(g, "ln1.weight", "ln1.weight", 1);
  tt_param(g, "ln1.bias", "ln1.bias", 0);
  tt_param(g, "ln2.weight", "ln2.weight", 1);
  tt_param(g, "ln2.bias", "ln2.bias", 0);
  g->has_data = 1;
  return g;
}

/* Runs g on x (seeded) and a mask with the last `masked` positions of each row 0; outputs malloc'd.
 */
static void tt_run_xm(const tc_graph *g, void **outs) {
  const tc_tensor *tx = &g->nodes[g->inputs[0]].out, *tm = &g->nodes[g->inputs[1]].out;
  float *x = malloc((size_t)tc_tensor_bytes(tx));
  int64_t *m = malloc((size_t)tc_tensor_bytes(tm));
  tb_fill(x, tc_tensor_numel(tx), 11);
  int S = tm->shape[1];
  for (int64_t i = 0; i < tc_tensor_numel(tm); i++) m[i] = (i % S) < S - 1 - (i / S) % 2;
  for (int k = 0; k < g->noutputs; k++)
    outs[k] = malloc((size_t)tc_tensor_bytes(&g->nodes[g->outputs[k]].out));
  const void *ins[2] = {x, m};
  char err[256];
  th_status rc = tc_ref_run_io(g, ins, outs, err, sizeof err);
  if (rc != TH_OK) fprintf(stderr, "reference: %s\n", err);
  CHECK(rc == TH_OK);
  free(x);
  free(m);
}

TH_TEST(transformer_matches_builders) {
  static const int64_t opsets[] = {11, 13, 16};
  for (size_t i = 0; i < sizeof opsets / sizeof opsets[0]; i++) {
    size_t len;
    uint8_t *p = tb_model_transformer(opsets[i], &len);
    tc_onnx_info info;
    tc_graph *g = tt_ok(p, len, 2, &info);
    fprintf(stderr, "opset %lld: %d nodes, %d folded, %d layer norms, %d gelus -> %d graph nodes\n",
            (long long)opsets[i], info.nnodes, info.folded, info.fused_layer_norm, info.fused_gelu,
            g->nnodes);
    CHECK_EQ_INT(info.fused_layer_norm, 2);
    CHECK_EQ_INT(info.fused_gelu, 1);
    CHECK(info.folded >= 30);
    /* the graph has the zoo's shape: fused ops, no stray arithmetic */
    CHECK_EQ_INT(tt_count_op(g, TC_OP_LAYER_NORM), 2);
    CHECK_EQ_INT(tt_count_op(g, TC_OP_GELU), 1);
    CHECK_EQ_INT(tt_count_op(g, TC_OP_DENSE), 6);
    CHECK_EQ_INT(tt_count_op(g, TC_OP_MATMUL), 2);
    CHECK_EQ_INT(tt_count_op(g, TC_OP_AFFINE), 1);
    CHECK_EQ_INT(tt_count_op(g, TC_OP_SOFTMAX), 1);
    CHECK_EQ_INT(tt_count_op(g, TC_OP_ADD),
                 3); /* positions and two residuals; biases are in the denses */
    CHECK_EQ_INT(tt_count_op(g, TC_OP_MUL) + tt_count_op(g, TC_OP_DIV) + tt_count_op(g, TC_OP_SUB),
                 0);
    for (int k = 0; k < g->nnodes; k++) {
      const tc_node *nd = &g->nodes[k];
      if (nd->op == TC_OP_SOFTMAX) CHECK(nd->alpha == 0.5f && nd->ninputs == 2);
      if (nd->op == TC_OP_MATMUL && nd->trans_b)
        CHECK(g->nodes[nd->inputs[1]].op == TC_OP_TRANSPOSE);
    }
    CHECK(tc_graph_find_param(g, "q.weightT") >= 0 && tc_graph_find_param(g, "ln2.bias") >= 0);
    CHECK(tc_graph_find_param(g, "pos_table") >= 0 && tc_graph_find_param(g, "cls") >= 0);
    int qw = tc_graph_find_param(g, "fc1.weightT");
    CHECK(qw >= 0 && g->params[qw].shape[0] == 16 &&
          g->params[qw].shape[1] == 8); /* transposed to [N, K] */
    tc_graph *r = tt_transformer_reference(2);
    CHECK_EQ_INT(tc_graph_param_count(g), tc_graph_param_count(r));
    void *a[2], *b[2];
    tt_run_xm(g, a);
    tt_run_xm(r, b);
    for (int k = 0; k < 2; k++) {
      const tc_tensor *t = &g->nodes[g->outputs[k]].out;
      CHECK(t->ndim == 3 && t->shape[0] == 2 && t->shape[1] == 5 + k && t->shape[2] == 8);
    }
    tt_same_outputs(g, r, a, b, 1e-5);
    tt_free_params(r);
    tc_graph_free(r);
    tc_graph_free(g);
    free(p);
  }
  return 0;
}

/* ---- CNN variants against naive loops
 * -------------------------------------------------------------------- */

/* x [C, H, W] at (c, y, x) with zeros outside. */
static float tt_at(const float *x, int H, int W, int c, int y, int xx) {
  return y < 0 || y >= H || xx < 0 || xx >= W ? 0.0f : x[((size_t)c * H + y) * W + xx];
}

TH_TEST(cnn_variants_match_naive_loops) {
  enum { N = 2, C = 2, H = 5, W = 6 };
  size_t len;
  uint8_t *p = tb_model_cnn_variants(&len);
  tc_graph *g = tt_ok(p, len, N, NULL);
  CHECK_EQ_INT(g->noutputs, 6);
  CHECK_EQ_INT(tt_count_op(g, TC_OP_CONV2D), 1); /* the pads became the conv's and the pool's */
  CHECK_EQ_INT(tt_count_op(g, TC_OP_GLOBAL_AVG_POOL), 1);
  for (int i = 0; i < g->nnodes; i++) { /* the windows as the kernels (ops.c) will check them */
    const tc_node *nd = &g->nodes[i];
    if (nd->op == TC_OP_CONV2D) CHECK(nd->pt == 0 && nd->pl == 1 && nd->pb == 1 && nd->pr == 0);
    if (nd->op == TC_OP_MAX_POOL)
      CHECK(nd->pt == 0 && nd->pl == 0 && nd->pb == 1 && nd->pr == 0); /* ceil */
    if (nd->op == TC_OP_AVG_POOL) CHECK(nd->count_include_pad && nd->pt == 1 && nd->pb == 1);
  }
  float x[N * C * H * W], w[3 * C * 9], gw[60 * 4], gb[4], s[4], bb[4], m[4], v[4];
  tb_fill(x, N * C * H * W, 3);
  tb_data("w3", 3 * C * 9, 0, w);
  tb_data("gw", 240, 0, gw);
  tb_data("gb", 4, 0, gb);
  tb_data("bn_s", 4, 1, s);
  tb_data("bn_b", 4, 0, bb);
  tb_data("bn_m", 4, 0, m);
  tb_data("bn_v", 4, 1, v);
  void *outs[6];
  for (int k = 0; k < 6; k++)
    outs[k] = malloc((size_t)tc_tensor_bytes(&g->nodes[g->outputs[k]].out));
  const void *ins[1] = {x};
  char err[256];
  CHECK(tc_ref_run_io(g, ins, outs, err, sizeof err) == TH_OK);
  static const int shapes[6][4] = {{N, 3, 4, 5}, {N, C, 3, 3}, {N, C, 3, 3},
                                   {N, C, 5, 6}, {N, 4, 0, 0}, {N, C, 0, 0}};
  for (int k = 0; k < 6; k++) {
    const tc_tensor *t = &g->nodes[g->outputs[k]].out;
    CHECK_EQ_INT(t->ndim, k >= 4 ? 2 : 4);
    for (int d = 0; d < t->ndim; d++) CHECK_EQ_INT(t->shape[d], shapes[k][d]);
  }
  double worst = 0;
  for (int n = 0; n < N; n++) {
    const float *xn = x + (size_t)n * C * H * W;
    for (int oc = 0; oc < 3; oc++) /* y1: pads top 0, left 1, bottom 1, right 0 */
      for (int oy = 0; oy < 4; oy++)
        for (int ox = 0; ox < 5; ox++) {
          double acc = 0;
          for (int c = 0; c < C; c++)
            for (int ky = 0; ky < 3; ky++)
              for (int kx = 0; kx < 3; kx++)
                acc += (double)w[((oc * C + c) * 3 + ky) * 3 + kx] *
                       tt_at(xn, H, W, c, oy + ky, ox + kx - 1);
          worst = fmax(worst, fabs(acc - ((float *)outs[0])[((n * 3 + oc) * 4 + oy) * 5 + ox]));
        }
    for (int c = 0; c < C; c++) {
      for (int oy = 0; oy < 3; oy++)
        for (int ox = 0; ox < 3; ox++) {
          double sum = 0, mx = -1e30;
          for (int ky = 0; ky < 3;
               ky++) /* y2: 3x3 stride 2 over the 1-padded map, nine values each */
            for (int kx = 0; kx < 3; kx++)
              sum += tt_at(xn, H, W, c, oy * 2 + ky - 1, ox * 2 + kx - 1);
          for (int ky = 0; ky < 2; ky++) /* y3: 2x2 stride 2, the last window cut by the edge */
            for (int kx = 0; kx < 2; kx++)
              if (oy * 2 + ky < H && ox * 2 + kx < W)
                mx = fmax(mx, tt_at(xn, H, W, c, oy * 2 + ky, ox * 2 + kx));
          worst = fmax(worst, fabs(sum / 9 - ((float *)outs[1])[((n * C + c) * 3 + oy) * 3 + ox]));
          worst = fmax(worst, fabs(mx - ((float *)outs[2])[((n * C + c) * 3 + oy) * 3 + ox]));
        }
      double mean = 0; /* y6: the mean over H and W */
      for (int k = 0; k < H * W; k++) mean += xn[c * H * W + k];
      worst = fmax(worst, fabs(mean / (H * W) - ((float *)outs[5])[n * C + c]));
      for (int oy = 0; oy < H; oy++) /* y4: 3x3 stride 1 pads 1, the padding counted */
        for (int ox = 0; ox < W; ox++) {
          double sum = 0;
          for (int ky = 0; ky < 3; ky++)
            for (int kx = 0; kx < 3; kx++) sum += tt_at(xn, H, W, c, oy + ky - 1, ox + kx - 1);
          worst = fmax(worst, fabs(sum / 9 - ((float *)outs[3])[((n * C + c) * H + oy) * W + ox]));
        }
    }
    for (int j = 0; j < 4; j++) { /* y5: bn(0.5 * x . gw + 2 * gb) */
      double acc = 0;
      for (int k = 0; k < 60; k++) acc += (double)xn[k] * gw[k * 4 + j];
      acc = 0.5 * acc + 2.0 * gb[j];
      acc = (acc - m[j]) / sqrt(v[j] + 1e-5) * s[j] + bb[j];
      worst = fmax(worst, fabs(acc - ((float *)outs[4])[n * 4 + j]));
    }
  }
  fprintf(stderr, "max abs diff %.3g\n", worst);
  CHECK(worst <= 1e-5);
  for (int k = 0; k < 6; k++) free(outs[k]);
  tc_graph_free(g);
  free(p);
  return 0;
}

/* ---- tensor variants against the builders
 * ---------------------------------------------------------------- */

static tc_graph *tt_tensor_variants_reference(int N) {
  tc_graph *g = tc_graph_new("ref", N);
  int ad[4] = {N, 2, 3, 4}, bd[4] = {N, 1, 4, 5};
  int a = tc_graph_input_tensor(g, "a", TC_DTYPE_F32, 4, ad),
      b = tc_graph_input_tensor(g, "b", TC_DTYPE_F32, 4, bd);
  int be[4] = {N, 2, 4, 5}, ex[4] = {N, 3, 4, 5}, flat[2] = {N, 24};
  static const int swap13[4] = {0, 3, 2, 1};
  int cat8[8] = {a, a, a, a, a, a, a, a};
  int c8 = tc_graph_concat_axis(g, 8, cat8, 3);
  int cat3[3] = {c8, a, a};
  int outs[8] = {
      tc_graph_matmul(g, a, tc_graph_expand(g, b, 4, be), 0, 0, 1.0f),
      tc_graph_slice(g, tc_graph_slice(g, a, 2, 0, 3, 2), 3, 1, 2, 1),
      tc_graph_concat_axis(g, 3, cat3, 3),
      tc_graph_transpose(g, tc_graph_softmax_ex(g, tc_graph_transpose(g, a, swap13), 1.0f, -1),
                         swap13),
      tc_graph_layer_norm(g, "ln", a, 1e-3f),
      tc_graph_expand(g, b, 4, ex),
      tc_graph_affine(g, a, -0.25f, 0.5f),
      tc_graph_dense_named(g, "lin", tc_graph_reshape(g, a, 2, flat), 6, "Wt", NULL),
  };
  static const char *const names[] = {"o_mm", "o_gs", "o_cat", "o_sm",
                                      "o_ln", "o_ex", "o_af",  "o_lin"};
  for (int i = 0; i < 8; i++) CHECK(tc_graph_output(g, names[i], outs[i]) >= 0);
  CHECK(tc_graph_finish(g) == TH_OK);
  tt_param(g, "ln.weight", "ln_s", 1);
  int pb = tc_graph_find_param(g, "ln.bias");
  g->params[pb].data = calloc(4, sizeof(float));
  tt_param(g, "Wt", "Wt", 0);
  g->has_data = 1;
  return g;
}

/* Runs g on inputs a, b filled by seeds 21, 22; outputs malloc'd. */
static void tt_run2(const tc_graph *g, void **outs) {
  void *in[2];
  for (int k = 0; k < 2; k++) {
    const tc_tensor *t = &g->nodes[g->inputs[k]].out;
    in[k] = malloc((size_t)tc_tensor_bytes(t));
    tb_fill(in[k], tc_tensor_numel(t), 21 + (uint64_t)k);
  }
  for (int k = 0; k < g->noutputs; k++)
    outs[k] = malloc((size_t)tc_tensor_bytes(&g->nodes[g->outputs[k]].out));
  const void *ins[2] = {in[0], in[1]};
  char err[256];
  th_status rc = tc_ref_run_io(g, ins, outs, err, sizeof err);
  if (rc != TH_OK) fprintf(stderr, "reference: %s\n", err);
  CHECK(rc == TH_OK);
  free(in[0]);
  free(in[1]);
}

TH_TEST(tensor_variants_match_builders) {
  size_t len;
  uint8_t *p = tb_model_tensor_variants(&len);
  tc_graph *g = tt_ok(p, len, 3, NULL), *r = tt_tensor_variants_reference(3);
  CHECK_EQ_INT(g->noutputs, 8);
  CHECK_EQ_INT(tt_count_op(g, TC_OP_AFFINE), 1); /* (2 - a) / 4 is one affine */
  int w = tc_graph_find_param(g, "Wt");
  CHECK(w >= 0 && g->params[w].shape[0] == 6 &&
        g->params[w].shape[1] == 24); /* the dense reads Wt as it is */
  CHECK_EQ_INT(tt_count_op(g, TC_OP_DENSE), 1);
  void *a[8], *b[8];
  tt_run2(g, a);
  tt_run2(r, b);
  tt_same_outputs(g, r, a, b, 1e-6);
  tt_free_params(r);
  tc_graph_free(r);
  tc_graph_free(g);
  free(p);
  return 0;
}

/* ---- activations
 * --------------------------------------------------------------------------------------------- */

static double tt_hsig(double v, double a, double b) {
  v = a * v + b;
  return v < 0 ? 0 : v > 1 ? 1 : v;
}

TH_TEST(activations_match_formulas) {
  static const int64_t opsets[] = {13, 14};
  for (size_t i = 0; i < 2; i++) {
    size_t len;
    uint8_t *p = tb_model_activations(opsets[i], &len);
    tc_graph *g = tt_ok(p, len, 3, NULL);
    CHECK_EQ_INT(g->noutputs, opsets[i] >= 14 ? 5 : 4);
    CHECK_EQ_INT(tt_count_op(g, TC_OP_SILU), 1);
    CHECK_EQ_INT(tt_count_op(g, TC_OP_HARD_SWISH), opsets[i] >= 14 ? 2 : 1);
    CHECK_EQ_INT(tt_count_op(g, TC_OP_MUL), 0);
    float x[12];
    tb_fill(x, 12, 9);
    for (int k = 0; k < 12; k++) x[k] *= 5; /* past hard sigmoid's corners */
    void *outs[5];
    for (int k = 0; k < g->noutputs; k++) outs[k] = malloc(12 * sizeof(float));
    const void *ins[1] = {x};
    CHECK(tc_ref_run_io(g, ins, outs, NULL, 0) == TH_OK);
    double worst = 0;
    for (int k = 0; k < 12; k++) {
      double v = x[k], sg = 1 / (1 + exp(-v));
      double want[5] = {sg, tt_hsig(v, 0.3, 0.4), v * sg, v * tt_hsig(v, 1.0 / 6, 0.5),
                        v * tt_hsig(v, 1.0 / 6, 0.5)};
      for (int o = 0; o < g->noutputs; o++)
        worst = fmax(worst, fabs(want[o] - ((float *)outs[o])[k]));
    }
    fprintf(stderr, "opset %lld: max abs diff %.3g\n", (long long)opsets[i], worst);
    CHECK(worst <= 1e-5);
    for (int k = 0; k < g->noutputs; k++) free(outs[k]);
    tc_graph_free(g);
    free(p);
  }
  /* HardSwish is not an op before opset 14 */
  tb *b = tt_tiny(13);
  tb_node(b, "HardSwish", "hsw", "y", "z");
  tb_output(b, "z");
  TT_PACK_FAIL(
      b, TH_ERR_UNSUPPORTED,
      "HardSwish (node 'hsw', opset 13: its semantics are implemented for opsets 14..21 only)");
  return 0;
}

/* Element-wise math: Elu and Selu with their attributes (Selu's gamma is the node's shift), Neg as
 * an affine -x, and the refusals: Round before opset 11 and a Celu whose alpha is 0. */
TH_TEST(math_ops_import) {
  tb *b = tt_tiny(13);
  tb_attr_f(b, tb_node(b, "Elu", "elu", "y", "e"), "alpha", 0.25f);
  Onnx__NodeProto *n = tb_node(b, "Selu", "selu", "e", "s");
  tb_attr_f(b, n, "gamma", 2.0f);
  tb_node(b, "Neg", "neg", "s", "z");
  tb_output(b, "z");
  size_t len;
  uint8_t *p = tb_pack(b, &len);
  tc_graph *g = tt_ok(p, len, 1, NULL);
  CHECK_EQ_INT(tt_count_op(g, TC_OP_MATH), 2);
  CHECK_EQ_INT(tt_count_op(g, TC_OP_AFFINE), 1);
  int seen = 0;
  for (int i = 0; i < g->nnodes; i++) {
    const tc_node *nd = &g->nodes[i];
    if (nd->op == TC_OP_MATH && nd->math == TC_UNARY_ELU) seen += nd->alpha == 0.25f;
    if (nd->op == TC_OP_MATH && nd->math == TC_UNARY_SELU)
      seen += fabsf(nd->alpha - 1.6732632f) < 1e-6f && nd->shift == 2.0f;
    if (nd->op == TC_OP_AFFINE) seen += nd->alpha == -1.0f && nd->shift == 0.0f;
  }
  CHECK_EQ_INT(seen, 3);
  tc_graph_free(g);
  free(p);
  tb_free(b);
  b = tt_tiny(10);
  tb_node(b, "Round", "r", "y", "z");
  tb_output(b, "z");
  TT_PACK_FAIL(b, TH_ERR_UNSUPPORTED,
               "Round (node 'r', opset 10: its semantics are implemented for opsets 11..21 only)");
  b = tt_tiny(13);
  tb_attr_f(b, tb_node(b, "Celu", "c", "y", "z"), "alpha", 0.0f);
  tb_output(b, "z");
  TT_PACK_FAIL(b, TH_ERR_INVALID, "'c'", "alpha nonzero for Celu");
  return 0;
}

/* Sin ... Atan (opset 7 on) each become their TC_UNARY op; before opset 7 they are refused. */
TH_TEST(trig_ops_import) {
  static const char *const names[] = {"Sin", "Cos", "Tan", "Asin", "Acos", "Atan"};
  static const int ops[] = {TC_UNARY_SIN,  TC_UNARY_COS,  TC_UNARY_TAN,
                            TC_UNARY_ASIN, TC_UNARY_ACOS, TC_UNARY_ATAN};
  for (int k = 0; k < 6; k++) {
    tb *b = tt_tiny(7);
    tb_node(b, names[k], "t", "y", "z");
    tb_output(b, "z");
    size_t len;
    uint8_t *p = tb_pack(b, &len);
    tc_graph *g = tt_ok(p, len, 1, NULL);
    CHECK_EQ_INT(tt_count_op(g, TC_OP_MATH), 1);
    for (int i = 0; i < g->nnodes; i++)
      if (g->nodes[i].op == TC_OP_MATH) CHECK_EQ_INT(g->nodes[i].math, ops[k]);
    tc_graph_free(g);
    free(p);
    tb_free(b);
  }
  tb *b = tt_tiny(6);
  tb_node(b, "Acos", "a", "y", "z");
  tb_output(b, "z");
  TT_PACK_FAIL(b, TH_ERR_UNSUPPORTED,
               "Acos (node 'a', opset 6: its semantics are implemented for opsets 7..21 only)");
  return 0;
}

/* IsNaN (opset 9) and IsInf (opset 10, detect_positive / detect_negative as alpha / beta) become
 * their TC_UNARY tests; a detect flag other than 0 or 1 is named. */
TH_TEST(is_special_import) {
  tb *b = tt_tiny(10);
  tb_attr_i(b, tb_node(b, "IsInf", "i", "y", "f"), "detect_negative", 0);
  tb_node(b, "IsNaN", "n", "f", "z");
  tb_output(b, "z");
  size_t len;
  uint8_t *p = tb_pack(b, &len);
  tc_graph *g = tt_ok(p, len, 1, NULL);
  int seen = 0;
  for (int i = 0; i < g->nnodes; i++) {
    const tc_node *nd = &g->nodes[i];
    if (nd->op == TC_OP_MATH && nd->math == TC_UNARY_ISINF)
      seen += nd->alpha == 1.0f && nd->shift == 0.0f;
    if (nd->op == TC_OP_MATH && nd->math == TC_UNARY_ISNAN) seen++;
  }
  CHECK_EQ_INT(seen, 2);
  tc_graph_free(g);
  free(p);
  tb_free(b);
  b = tt_tiny(10);
  tb_attr_i(b, tb_node(b, "IsInf", "i", "y", "z"), "detect_positive", 2);
  tb_output(b, "z");
  TT_PACK_FAIL(b, TH_ERR_INVALID, "'i'", "detect_positive 2 and detect_negative 1 must be 0 or 1");
  b = tt_tiny(9);
  tb_node(b, "IsInf", "i", "y", "z");
  tb_output(b, "z");
  TT_PACK_FAIL(b, TH_ERR_UNSUPPORTED, "IsInf (node 'i', opset 9");
  return 0;
}

/* Where(c, x, y) broadcast ([N, 4, 6] against [1, 6]) is TAKE(c, x) + LEAVE(c, y); not 3 inputs is
 * named. */
TH_TEST(where_import) {
  tb *b = tt_tiny(16);
  tb_input(b, "w", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, (int64_t[]){1, 6});
  tb_node(b, "Greater", "g", "y,w", "c");
  tb_node(b, "Where", "s", "c,w,y", "z");
  tb_output(b, "z");
  size_t len;
  uint8_t *p = tb_pack(b, &len);
  tc_graph *g = tt_ok(p, len, 1, NULL);
  int take = 0, leave = 0, sum = -1;
  for (int i = 0; i < g->nnodes; i++) {
    const tc_node *nd = &g->nodes[i];
    take += nd->op == TC_OP_BINARY && nd->math == TC_BINARY_TAKE;
    leave += nd->op == TC_OP_BINARY && nd->math == TC_BINARY_LEAVE;
    if (nd->op == TC_OP_ADD) sum = i;
  }
  CHECK_EQ_INT(take, 1);
  CHECK_EQ_INT(leave, 1);
  CHECK(sum >= 0);
  CHECK_EQ_INT(g->nodes[sum].out.ndim, 3);
  CHECK_EQ_INT((int)g->nodes[sum].out.shape[2], 6);
  tc_graph_free(g);
  free(p);
  tb_free(b);
  b = tt_tiny(16);
  tb_node(b, "Where", "s", "y,y", "z");
  tb_output(b, "z");
  TT_PACK_FAIL(b, TH_ERR_INVALID, "'s'", "has 2 inputs (3)");
  return 0;
}

/* ---- opset switches
 * ------------------------------------------------------------------------------------------ */

/* x [N, 3, 4] (+, opset 6) b [3] with broadcast = 1 and axis = 1: b runs along axis 1, which opset
 * 7's numpy rule would refuse (3 against the trailing 4). Without broadcast the shapes must agree.
 */
static tb *tt_legacy_add(int64_t opset, int bcast, int axis) {
  tb *b = tb_new(opset);
  int64_t d[3] = {-1, 3, 4}, c[1] = {3};
  static const float bv[3] = {10, 20, 30};
  tb_input(b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 3, d);
  tb_init_f(b, "b", 1, c, bv);
  Onnx__NodeProto *n = tb_node(b, "Add", "add", "x,b", "y");
  if (bcast >= 0) tb_attr_i(b, n, "broadcast", bcast);
  if (axis >= 0) tb_attr_i(b, n, "axis", axis);
  tb_output(b, "y");
  return b;
}

TH_TEST(opset6_binary_broadcast_axis) {
  tb *b = tt_legacy_add(6, 1, 1);
  size_t len;
  uint8_t *p = tb_pack(b, &len);
  tc_graph *g = tt_ok(p, len, 2, NULL);
  tt_param(g, "b", "b", 0);
  const float bv[3] = {10, 20, 30};
  g->params[tc_graph_find_param(g, "b")].data[0] = bv[0]; /* the initializer's own values */
  g->params[tc_graph_find_param(g, "b")].data[1] = bv[1];
  g->params[tc_graph_find_param(g, "b")].data[2] = bv[2];
  float *y = tt_run(g, 7), x[24];
  tb_fill(x, 24, 7);
  double worst = 0;
  for (int i = 0; i < 24; i++) worst = fmax(worst, fabs(y[i] - (x[i] + bv[(i / 4) % 3])));
  fprintf(stderr, "opset 6 Add broadcast axis 1: max abs diff %.3g\n", worst);
  CHECK(worst <= 1e-6);
  free(y);
  tt_free_params(g);
  tc_graph_free(g);
  free(p);
  tb_free(b);
  TT_PACK_FAIL(tt_legacy_add(6, 0, -1), TH_ERR_INVALID,
               "without broadcast = 1 needs inputs of one shape");
  TT_PACK_FAIL(tt_legacy_add(6, 1, 2), TH_ERR_INVALID,
               "B's dimension 0 (3) does not match A's dimension 2 (4)");
  /* opset 7 broadcasts as numpy does: [N, 3, 4] + [3] does not */
  TT_PACK_FAIL(tt_legacy_add(7, -1, -1), TH_ERR_INVALID, "add");
  return 0;
}

/* Opset 6's BatchNormalization and Dropout train unless is_test = 1 (its default is 0). */
TH_TEST(opset6_is_test) {
  for (int drop = 0; drop < 2; drop++) {
    for (int is_test = -1; is_test <= 1; is_test++) {
      tb *b = tb_new(6);
      int64_t d[4] = {-1, 2, 3, 3}, c[1] = {2};
      static const float one[2] = {1, 1}, zero[2] = {0, 0};
      tb_input(b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, d);
      tb_init_f(b, "s", 1, c, one);
      tb_init_f(b, "o", 1, c, zero);
      tb_init_f(b, "m", 1, c, zero);
      tb_init_f(b, "v", 1, c, one);
      Onnx__NodeProto *n = drop ? tb_node(b, "Dropout", "nd", "x", "y")
                                : tb_node(b, "BatchNormalization", "nd", "x,s,o,m,v", "y");
      if (is_test >= 0) tb_attr_i(b, n, "is_test", is_test);
      tb_output(b, "y");
      if (is_test == 1) {
        size_t len;
        uint8_t *p = tb_pack(b, &len);
        tc_graph_free(tt_ok(p, len, 1, NULL));
        free(p);
        tb_free(b);
      } else {
        TT_PACK_FAIL(b, TH_ERR_UNSUPPORTED, "is_test = 0");
      }
    }
  }
  return 0;
}

/* Split at opset 18: num_outputs chunks of ceil(len / n), the last one smaller (an error before).
 */
TH_TEST(opset18_split_num_outputs) {
  for (int64_t opset = 17; opset <= 18; opset++) {
    tb *b = tb_new(opset);
    int64_t d[3] = {-1, 4, 5};
    tb_input(b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 3, d);
    Onnx__NodeProto *n = tb_node(b, "Split", "sp", "x", "y0,y1");
    tb_attr_i(b, n, "axis", 2);
    if (opset >= 18) tb_attr_i(b, n, "num_outputs", 2);
    tb_output(b, "y0");
    tb_output(b, "y1");
    if (opset < 18) {
      TT_PACK_FAIL(b, TH_ERR_INVALID, "length 5 does not split in 2");
      continue;
    }
    size_t len;
    uint8_t *p = tb_pack(b, &len);
    tc_graph *g = tt_ok(p, len, 1, NULL);
    CHECK_EQ_INT(g->noutputs, 2);
    CHECK_EQ_INT(g->nodes[g->outputs[0]].out.shape[2], 3);
    CHECK_EQ_INT(g->nodes[g->outputs[1]].out.shape[2], 2);
    tc_graph_free(g);
    free(p);
    tb_free(b);
  }
  return 0;
}

/* ---- embeddings
 * ------------------------------------------------------------------------------------------ */

TH_TEST(embedding_matches_builders) {
  size_t len;
  uint8_t *p = tb_model_embedding(&len);
  tc_graph *g = tt_ok(p, len, 2, NULL);
  CHECK_EQ_INT(tt_count_op(g, TC_OP_EMBEDDING), 1);
  CHECK(tc_graph_find_param(g, "emb") >= 0 && tc_graph_find_param(g, "fc") >= 0);
  tc_graph *r = tc_graph_new("ref", 2);
  int is[2] = {2, 4};
  int ids = tc_graph_input_tensor(r, "ids", TC_DTYPE_I64, 2, is);
  int e = tc_graph_embedding(r, "emb", ids, 10, 6);
  int y =
      tc_graph_tanh(r, tc_graph_dense_named(r, "pool", tc_graph_select(r, e, 1, 0), 3, "fc", NULL));
  CHECK(tc_graph_output(r, "e", e) >= 0 && tc_graph_output(r, "y", y) >= 0 &&
        tc_graph_finish(r) == TH_OK);
  tt_param(r, "emb.weight", "emb", 0);
  tt_param(r, "fc", "fc", 0);
  r->has_data = 1;
  int64_t in[8] = {3, 0, 9, 4, 1, 1, 7, 2};
  void *a[2], *b[2];
  for (int k = 0; k < 2; k++) {
    a[k] = malloc((size_t)tc_tensor_bytes(&g->nodes[g->outputs[k]].out));
    b[k] = malloc((size_t)tc_tensor_bytes(&r->nodes[r->outputs[k]].out));
  }
  const void *ins[1] = {in};
  CHECK(tc_ref_run_io(g, ins, a, NULL, 0) == TH_OK);
  CHECK(tc_ref_run_io(r, ins, b, NULL, 0) == TH_OK);
  tt_same_outputs(g, r, a, b, 0);
  tt_free_params(r);
  tc_graph_free(r);
  tc_graph_free(g);
  free(p);
  return 0;
}

/* ---- views across opsets
 * ----------------------------------------------------------------------------------- */

/* tb_model_views as builder calls, with every ONNX index resolved by hand. */
static tc_graph *tt_views_reference(int B, int64_t opset) {
  tc_graph *g = tc_graph_new("ref", B);
  int xs[4] = {B, 6, 4, 5};
  int x = tc_graph_input_tensor(g, "x", TC_DTYPE_F32, 4, xs);
  int a = tc_graph_slice(g, x, 1, 0, 2, 1), b = tc_graph_slice(g, x, 1, 2, 6, 1);
  int s = tc_graph_slice(g, tc_graph_slice(g, b, 1, 1, 4, opset < 10 ? 1 : 2), 3, 1, 4, 1);
  int parts[2] = {tc_graph_slice(g, a, 3, 0, 3, 1), s};
  int c = tc_graph_concat_axis(g, 2, parts, 1);
  int C = g->nodes[c].out.shape[1];
  static const int p021[3] = {0, 2, 1};
  int t = tc_graph_transpose(g, tc_graph_select(g, c, 2, 2), p021);
  int y;
  if (opset < 13) {
    int flat[2] = {B, 3 * C}, back[3] = {B, 3, C};
    y = tc_graph_reshape(g, tc_graph_softmax_ex(g, tc_graph_reshape(g, t, 2, flat), 1.0f, -1), 3,
                         back);
  } else {
    y = tc_graph_transpose(g, tc_graph_softmax_ex(g, tc_graph_transpose(g, t, p021), 1.0f, -1),
                           p021);
  }
  CHECK(tc_graph_output(g, "y", y) >= 0 && tc_graph_finish(g) == TH_OK);
  g->has_data = 1;
  return g;
}

TH_TEST(views_across_opsets) {
  static const int64_t opsets[] = {9, 10, 11, 13, 17};
  for (size_t i = 0; i < sizeof opsets / sizeof opsets[0]; i++) {
    size_t len;
    uint8_t *p = tb_model_views(opsets[i], &len);
    tc_onnx_info info;
    tc_graph *g = tt_ok(p, len, 2, &info), *r = tt_views_reference(2, opsets[i]);
    const tc_tensor *to = &g->nodes[g->outputs[0]].out, *tr = &r->nodes[r->outputs[0]].out;
    fprintf(stderr, "opset %lld: y [%d, %d, %d]\n", (long long)opsets[i], to->shape[0],
            to->shape[1], to->shape[2]);
    CHECK(to->ndim == 3 && tr->ndim == 3);
    for (int d = 0; d < 3; d++) CHECK_EQ_INT(to->shape[d], tr->shape[d]);
    CHECK_EQ_INT(to->shape[2], opsets[i] < 10 ? 5 : 4);
    float *a = tt_run(g, 5), *b = tt_run(r, 5);
    double rel = tt_rel(a, b, tc_tensor_numel(to));
    fprintf(stderr, "  max rel diff %.3g\n", rel);
    CHECK(rel <= 1e-6);
    free(a);
    free(b);
    tc_graph_free(r);
    tc_graph_free(g);
    free(p);
  }
  return 0;
}

/* ---- the passes on imported graphs
 * ------------------------------------------------------------------------- */

/* Runs g's reference on seeded inputs (float: tb_fill; int64: i % 2, a valid mask) into outs
 * (malloc'd). */
static void tt_run_any(const tc_graph *g, void **outs) {
  void *in[TC_MAX_IO];
  for (int k = 0; k < g->ninputs; k++) {
    const tc_tensor *t = &g->nodes[g->inputs[k]].out;
    in[k] = malloc((size_t)tc_tensor_bytes(t));
    if (t->dtype == TC_DTYPE_F32)
      tb_fill(in[k], tc_tensor_numel(t), 40 + (uint64_t)k);
    else
      for (int64_t i = 0; i < tc_tensor_numel(t); i++) ((int64_t *)in[k])[i] = i % 2;
  }
  for (int k = 0; k < g->noutputs; k++)
    outs[k] = malloc((size_t)tc_tensor_bytes(&g->nodes[g->outputs[k]].out));
  char err[256];
  th_status rc = tc_ref_run_io(g, (const void *const *)in, outs, err, sizeof err);
  if (rc != TH_OK) fprintf(stderr, "reference: %s\n", err);
  CHECK(rc == TH_OK);
  for (int k = 0; k < g->ninputs; k++) free(in[k]);
}

/* Every test model imports into a graph that the passes take (fold_bn, fuse, layout, plan) without
 * changing its outputs and that lowers to valid kernel calls; the transformer to the zoo's fused
 * families. */
TH_TEST(passes_lower_imported_graphs) {
  struct {
    const char *name;
    uint8_t *(*opset_model)(int64_t, size_t *);
    uint8_t *(*model)(size_t *);
    int64_t opset;
  } ms[] = {{"cnn", tb_model_cnn, NULL, 13},
            {"transformer", tb_model_transformer, NULL, 13},
            {"views", tb_model_views, NULL, 13},
            {"activations", tb_model_activations, NULL, 14},
            {"cnn_variants", NULL, tb_model_cnn_variants, 13},
            {"tensor_variants", NULL, tb_model_tensor_variants, 17}};
  for (size_t m = 0; m < sizeof ms / sizeof ms[0]; m++) {
    size_t len;
    uint8_t *p = ms[m].model ? ms[m].model(&len) : ms[m].opset_model(ms[m].opset, &len);
    tc_graph *g = tt_ok(p, len, 2, NULL);
    void *y0[TC_MAX_IO], *y1[TC_MAX_IO];
    tt_run_any(g, y0);
    int64_t ws = 0;
    th_status rc = tc_passes_run(g, 16, &ws);
    if (rc != TH_OK) fprintf(stderr, "%s: passes: %s\n", ms[m].name, g->err);
    CHECK(rc == TH_OK);
    tt_run_any(g, y1);
    fprintf(stderr, "%s: workspace %lld floats\n", ms[m].name, (long long)ws);
    for (int k = 0; k < g->noutputs; k++) {
      double rel = tt_rel(y1[k], y0[k], tc_tensor_numel(&g->nodes[g->outputs[k]].out));
      fprintf(stderr, "  %s: max rel diff after the passes %.3g\n", g->output_names[k], rel);
      CHECK(rel <= 1e-5);
      free(y0[k]);
      free(y1[k]);
    }
    tc_call *calls = NULL;
    int ncalls = 0, fam[TC_KERNEL_COUNT] = {0};
    rc = tc_lower(g, &calls, &ncalls);
    if (rc != TH_OK) fprintf(stderr, "%s: lower: %s\n", ms[m].name, g->err);
    CHECK(rc == TH_OK && ncalls > 0);
    for (int i = 0; i < ncalls; i++) {
      CHECK(calls[i].wl.kernel >= 0 && calls[i].wl.kernel < TC_KERNEL_COUNT);
      CHECK_EQ_INT(tc_workload_check(&calls[i].wl), TH_OK);
      fam[calls[i].wl.kernel]++;
    }
    if (strcmp(ms[m].name, "transformer") == 0) { /* q, k and v joined into one dense */
      CHECK_EQ_INT(fam[TC_KERNEL_DENSE], 4);
      CHECK_EQ_INT(fam[TC_KERNEL_BATCH_MATMUL], 2);
      CHECK_EQ_INT(fam[TC_KERNEL_LAYER_NORM], 2);
      CHECK_EQ_INT(fam[TC_KERNEL_SOFTMAX_ROWS], 1);
    }
    if (strcmp(ms[m].name, "cnn") == 0)
      CHECK(fam[TC_KERNEL_CONV2D] == 2 && fam[TC_KERNEL_DEPTHWISE] == 1);
    free(calls);
    tc_graph_free(g);
    free(p);
  }
  return 0;
}

/* A batch norm that no conv precedes, on an NCHW map (densenet's pre-activation), imports as a depthwise
 * 1x1 conv with the computed scale and shift ("<node>.scale", "<node>.shift"): the relu after it folds
 * in, and the lowered network has no multiply, add, unary pass or layout transform around it. */
TH_TEST(batch_norm_without_conv_is_depthwise) {
  enum { N = 2, C = 4, H = 5, W = 6 };
  size_t len;
  uint8_t *p = tb_model_preact(&len);
  tc_graph *g = tt_ok(p, len, N, NULL);
  CHECK_EQ_INT(tt_count_op(g, TC_OP_MUL), 0);
  CHECK_EQ_INT(tt_count_op(g, TC_OP_ADD), 0);
  int dw = -1;
  for (int i = 0; i < g->nnodes; i++)
    if (g->nodes[i].op == TC_OP_CONV2D && g->nodes[i].groups == 2 * C) dw = i;
  CHECK(dw >= 0 && g->nodes[dw].kh == 1 && g->nodes[dw].kw == 1 && g->nodes[dw].bias >= 0);
  CHECK(strcmp(g->params[g->nodes[dw].weight].name, "norm.scale") == 0);
  CHECK(strcmp(g->params[g->nodes[dw].bias].name, "norm.shift") == 0);
  float x[N * C * H * W], s[8], bb[8], m[8], v[8], w[24];
  tb_fill(x, N * C * H * W, 40); /* tt_run_any's input */
  tb_data("pa_s", 8, 1, s);
  tb_data("pa_b", 8, 0, bb);
  tb_data("pa_m", 8, 0, m);
  tb_data("pa_v", 8, 1, v);
  tb_data("pw", 24, 0, w);
  void *y0[TC_MAX_IO], *y1[TC_MAX_IO];
  tt_run_any(g, y0);
  double worst = 0;
  for (int n = 0; n < N; n++)
    for (int o = 0; o < 3; o++)
      for (int k = 0; k < H * W; k++) {
        double acc = 0;
        for (int c = 0; c < 2 * C; c++) {
          double xv = x[(n * C + c % C) * H * W + k];
          double r = (xv - m[c]) / sqrt(v[c] + 1e-5) * s[c] + bb[c];
          acc += w[o * 8 + c] * (r > 0 ? r : 0);
        }
        worst = fmax(worst, fabs(acc - ((float *)y0[0])[(n * 3 + o) * H * W + k]));
      }
  fprintf(stderr, "max abs diff %.3g\n", worst);
  CHECK(worst <= 1e-5);
  int64_t ws = 0;
  CHECK_EQ_INT(tc_passes_run(g, 16, &ws), TH_OK);
  tt_run_any(g, y1);
  CHECK(tt_rel(y1[0], y0[0], N * 3 * H * W) <= 1e-5);
  tc_call *calls = NULL;
  int ncalls = 0, fam[TC_KERNEL_COUNT] = {0}, dw_epi = 0;
  CHECK_EQ_INT(tc_lower(g, &calls, &ncalls), TH_OK);
  for (int i = 0; i < ncalls; i++) {
    fam[calls[i].wl.kernel]++;
    if (calls[i].wl.kernel == TC_KERNEL_DEPTHWISE) dw_epi = calls[i].wl.epilogue;
  }
  CHECK_EQ_INT(fam[TC_KERNEL_DEPTHWISE], 1);
  CHECK(dw_epi & TC_EPI_RELU);
  CHECK_EQ_INT(fam[TC_KERNEL_UNARY] + fam[TC_KERNEL_BINARY] + fam[TC_KERNEL_ELTWISE], 0);
  CHECK_EQ_INT(fam[TC_KERNEL_CONV2D], 1);
  free(calls);
  free(y0[0]);
  free(y1[0]);
  tc_graph_free(g);
  free(p);
  return 0;
}

/* ---- the fuzzer's seed corpus
 * ------------------------------------------------------------------------------- */

/* Writes the test models, fuzz.onnx's seeds, to $TC_ONNX_CORPUS (tests/fuzz/seeds_onnx.sh), or without it to a
 * directory of its own, and reads every file back through tc_onnx_import_file at batch 2 with its weights: a
 * seed that no longer imports (a model builder or the importer broken) fails here, instead of handing the
 * fuzzer a corpus of files it refuses at the first byte. One seed is refused on purpose, and must be, as
 * the contract says: the transformer at opset 9 uses Range, which came with opset 11. */
TH_TEST(write_corpus) {
  const char *env = getenv("TC_ONNX_CORPUS");
  char own[1024] = "";
  if (!env) CHECK_EQ_INT(th_mkdtemp("tc-onnx-corpus", own, sizeof own), TH_OK);
  const char *dir = env ? env : own;
  static const int64_t opsets[] = {9, 11, 13, 17};
  uint8_t *(*const models[])(int64_t, size_t *) = {tb_model_cnn, tb_model_transformer,
                                                   tb_model_views};
  const char *names[] = {"cnn", "transformer", "views"};
  uint8_t *(*const fixed[])(size_t *) = {tb_model_cnn_variants, tb_model_tensor_variants,
                                         tb_model_embedding, tb_model_preact};
  enum { NFIXED = sizeof fixed / sizeof fixed[0], NMODELS = sizeof models / sizeof models[0] };
  char paths[NFIXED + NMODELS * 4][1100];
  const char *refused[NFIXED + NMODELS * 4] = {NULL}; /* the words its refusal must say, or NULL */
  int n = 0;
  for (size_t m = 0; m < NFIXED; m++) {
    size_t len;
    uint8_t *p = fixed[m](&len);
    snprintf(paths[n], sizeof paths[n], "%s/variants%zu.onnx", dir, m);
    FILE *f = fopen(paths[n++], "wb");
    CHECK(f && fwrite(p, 1, len, f) == len && fclose(f) == 0);
    free(p);
  }
  for (size_t m = 0; m < NMODELS; m++)
    for (size_t i = 0; i < sizeof opsets / sizeof opsets[0]; i++) {
      size_t len;
      uint8_t *p = models[m](opsets[i], &len);
      snprintf(paths[n], sizeof paths[n], "%s/%s_opset%lld.onnx", dir, names[m], (long long)opsets[i]);
      if (models[m] == tb_model_transformer && opsets[i] < 11) refused[n] = "Range (node 'pos', opset 9";
      FILE *f = fopen(paths[n++], "wb");
      CHECK(f && fwrite(p, 1, len, f) == len && fclose(f) == 0);
      free(p);
    }
  for (int i = 0; i < n; i++) {
    tc_onnx_opts o = {"seed", 2, NULL, 1};
    tc_graph *g = NULL;
    char err[2048] = "";
    th_status rc = tc_onnx_import_file(paths[i], &o, &g, NULL, err, sizeof err);
    if (rc != (refused[i] ? TH_ERR_UNSUPPORTED : TH_OK))
      fprintf(stderr, "%s: %s (%s)\n", paths[i], th_status_name(rc), err);
    if (refused[i])
      CHECK(rc == TH_ERR_UNSUPPORTED && g == NULL && strstr(err, refused[i]) != NULL);
    else
      CHECK(rc == TH_OK && g != NULL);
    tc_graph_free(g);
  }
  fprintf(stderr, "%d seeds written to %s, each imports (one refused as it must be)\n", n, dir);
  if (own[0]) (void)th_rm_rf(own);
  return 0;
}
