/* Networks from their source (compiler/import/network.h): a zoo name goes to the zoo's builder, an uploaded
 * ONNX file to the importer, and the build and the task list take either. An ONNX network's bundle ships the
 * file's initializers (never the zoo's seeded weights) and its manifest names the file by its sha256. The ONNX
 * file is a small CNN built with the importer tests' builder (onnx_build.h), written to a temp file. */
#include <archive.h>
#include <archive_entry.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "network.h"
#include "onnx_build.h"
#include "params.h"
#include "tc.h"
#include "th_sha256.h"
#include "th_test.h"
#include "th_util.h"
#include "zoo.h"

/* input [N, 3, 8, 8] -> Conv 3x3 p1 (bias) -> Relu -> AveragePool 2 -> Conv 1x1 (no bias) -> Relu ->
 * GlobalAveragePool -> Flatten -> Gemm transB (bias) -> "scores" [N, 4], at opset 13: a CNN every backend has
 * kernels for, whose weights the graph passes keep as the file has them. */
static uint8_t *netsrc_model(size_t *len) {
  tb *b = tb_new(13);
  int64_t in[4] = {-1, 3, 8, 8}, cw[4] = {6, 3, 3, 3}, cb[1] = {6}, pw[4] = {12, 6, 1, 1}, hw[2] = {4, 12};
  int64_t hb[1] = {4}, pad1[4] = {1, 1, 1, 1}, k3[2] = {3, 3}, k2[2] = {2, 2};
  tb_input(b, "input", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, in);
  const struct {
    const char *name;
    int ndim;
    const int64_t *dims;
  } ps[] = {{"conv.weight", 4, cw}, {"conv.bias", 1, cb}, {"point.weight", 4, pw}, {"head.weight", 2, hw},
            {"head.bias", 1, hb}};
  for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) tb_param(b, ps[i].name, ps[i].ndim, ps[i].dims, 0);
  Onnx__NodeProto *n = tb_node(b, "Conv", "conv", "input,conv.weight,conv.bias", "x1");
  tb_attr_ints(b, n, "pads", 4, pad1);
  tb_attr_ints(b, n, "kernel_shape", 2, k3);
  tb_node(b, "Relu", "act1", "x1", "x2");
  n = tb_node(b, "AveragePool", "down", "x2", "x3");
  tb_attr_ints(b, n, "kernel_shape", 2, k2);
  tb_attr_ints(b, n, "strides", 2, k2);
  tb_node(b, "Conv", "point", "x3,point.weight", "x4");
  tb_node(b, "Relu", "act2", "x4", "x5");
  tb_node(b, "GlobalAveragePool", "gap", "x5", "x6");
  tb_node(b, "Flatten", "flat", "x6", "x7");
  n = tb_node(b, "Gemm", "head", "x7,head.weight,head.bias", "scores");
  tb_attr_i(b, n, "transB", 1);
  tb_output(b, "scores");
  uint8_t *p = tb_pack(b, len);
  tb_free(b);
  return p;
}

/* netsrc_model() in a fresh temp dir: its path into path, its sha256 into hex. */
static void cnn_file(char *dir, size_t dn, char *path, size_t pn, char hex[65]) {
  CHECK(th_mkdtemp("th_netsrc", dir, dn) == TH_OK);
  size_t len = 0;
  uint8_t *bytes = netsrc_model(&len);
  CHECK(bytes != NULL);
  snprintf(path, pn, "%s/cnn.onnx", dir);
  CHECK(th_write_file_atomic(path, bytes, len) == TH_OK);
  free(bytes);
  int64_t sz = 0;
  CHECK(th_sha256_file(path, hex, &sz) == TH_OK);
}

TH_TEST(network_build_zoo_and_onnx) {
  char dir[512], path[600], hex[65], err[1024];
  cnn_file(dir, sizeof dir, path, sizeof path, hex);
  tc_netsrc zoo = tc_netsrc_zoo("resnet-18");
  CHECK(zoo.onnx_path == NULL && zoo.shapes == NULL);
  tc_graph *g = NULL;
  CHECK_EQ_INT(tc_network_build(&zoo, 1, 64, 64, 0, &g, err, sizeof err), TH_OK);
  CHECK_STR(g->network, "resnet-18");
  tc_graph_free(g);
  tc_netsrc none = tc_netsrc_zoo("resnet-9000");
  CHECK_EQ_INT(tc_network_build(&none, 1, 0, 0, 0, &g, err, sizeof err), TH_ERR_NOT_FOUND);
  tc_netsrc onnx = {"mine", path, NULL};
  CHECK_EQ_INT(tc_network_build(&onnx, 3, 0, 0, 1, &g, err, sizeof err), TH_OK);
  CHECK_STR(g->network, "mine");
  CHECK_EQ_INT(g->batch, 3);
  CHECK_EQ_INT(g->nodes[g->inputs[0]].out.shape[0], 3);
  tc_graph_free(g);
  /* the file fixes the input size */
  CHECK_EQ_INT(tc_network_build(&onnx, 1, 32, 32, 0, &g, err, sizeof err), TH_ERR_INVALID);
  CHECK(strstr(err, "input size") != NULL);
  tc_netsrc gone = {"mine", "/nonexistent/cnn.onnx", NULL};
  CHECK(tc_network_build(&gone, 1, 0, 0, 0, &g, err, sizeof err) != TH_OK);
  /* the tasks of an uploaded network, as of a zoo one */
  tc_backend_target t;
  CHECK_EQ_INT(tc_backend_target_init(tc_backend_default(), NULL, &t, NULL, 0), TH_OK);
  tc_task *tasks = NULL;
  int n = 0;
  CHECK_EQ_INT(tc_network_tasks(&t, &onnx, 1, &tasks, &n), TH_OK);
  int convs = 0;
  for (int i = 0; i < n; i++) convs += tasks[i].wl.kernel == TC_KERNEL_CONV2D;
  CHECK(convs >= 2);
  free(tasks);
  (void)th_rm_rf(dir);
  return 0;
}

/* params.bin of a bundle (malloc'd into *data). */
static void bundle_params(const char *tar, char **data, size_t *len) {
  struct archive *a = archive_read_new();
  archive_read_support_format_tar(a);
  CHECK(archive_read_open_filename(a, tar, 1 << 16) == ARCHIVE_OK);
  struct archive_entry *e;
  *data = NULL;
  while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
    if (strcmp(archive_entry_pathname(e), "params.bin") != 0) continue;
    *len = (size_t)archive_entry_size(e);
    *data = malloc(*len);
    CHECK(*data && archive_read_data(a, *data, *len) == (la_ssize_t)*len);
  }
  archive_read_free(a);
  CHECK(*data != NULL);
}

TH_TEST(bundle_from_onnx_ships_initializers) {
  char dir[512], path[600], hex[65], err[2048] = "";
  cnn_file(dir, sizeof dir, path, sizeof path, hex);
  char tar[700];
  snprintf(tar, sizeof tar, "%s/cnn.tar", dir);
  tc_build_opts o;
  memset(&o, 0, sizeof o);
  o.framework = "llvm";
  o.network = "mine"; /* not a zoo name: the file is the network */
  o.onnx_path = path;
  o.onnx_shapes = "input:Nx3x8x8";
  o.batch = 2;
  char *manifest = NULL;
  th_status rc = tc_build_bundle(&o, tar, NULL, &manifest, err, sizeof err);
  if (rc != TH_OK) fprintf(stderr, "build: %s\n", err);
  CHECK_EQ_INT(rc, TH_OK);
  json_t *m = json_loads(manifest, 0, NULL);
  CHECK(m != NULL);
  json_t *src = json_object_get(m, "network_source");
  CHECK_STR(json_string_value(json_object_get(src, "kind")), "onnx");
  CHECK_STR(json_string_value(json_object_get(src, "sha256")), hex);
  CHECK_STR(json_string_value(json_object_get(src, "shapes")), "input:Nx3x8x8");
  CHECK_STR(json_string_value(json_object_get(json_object_get(m, "key"), "network")), "mine");
  json_decref(m);
  free(manifest);
  /* the weights are the file's initializers, never the zoo's seeded generator */
  char *pb = NULL;
  size_t plen = 0;
  bundle_params(tar, &pb, &plen);
  tc_params_entry es[64];
  int ne = 0;
  CHECK_EQ_INT(tc_params_parse(pb, plen, es, 64, &ne, err, sizeof err), TH_OK);
  const char *names[3] = {"conv.weight", "point.weight", "head.weight"};
  for (int k = 0; k < 3; k++) {
    const tc_params_entry *e = NULL;
    for (int i = 0; i < ne; i++)
      if (es[i].name_len == strlen(names[k]) && !memcmp(es[i].name, names[k], es[i].name_len)) e = &es[i];
    CHECK(e != NULL);
    float *want = malloc(sizeof(float) * (size_t)e->numel);
    CHECK(want != NULL);
    tb_data(names[k], e->numel, 0, want);
    CHECK(memcmp(want, e->data, sizeof(float) * (size_t)e->numel) == 0);
    free(want);
  }
  free(pb);
  /* the zoo's build keeps its own source */
  tc_build_opts z;
  memset(&z, 0, sizeof z);
  z.framework = "llvm";
  z.network = "mine";
  z.batch = 1;
  CHECK_EQ_INT(tc_build_bundle(&z, NULL, NULL, NULL, err, sizeof err), TH_ERR_NOT_FOUND);
  (void)th_rm_rf(dir);
  return 0;
}
