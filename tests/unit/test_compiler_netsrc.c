/* Networks from their source (compiler/include/tc/network.h): a zoo name goes to the zoo's builder, an uploaded
 * ONNX file to the importer, and the build and the task list take either. An ONNX network's bundle ships the
 * file's initializers (never the zoo's seeded weights) and its manifest names the file by its sha256. The ONNX
 * file is a small CNN built with the importer tests' builder (onnx_build.h), written to a temp file. */
#include <archive.h>
#include <dlfcn.h>
#include <math.h>
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
#include "ops.h"
#include "passes.h"
#include "ref/ref.h"
#include "model/tunehub_model.h"
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

/* input [N, 3, 8, 8] -> Conv 3x3 p1 -> 30 channels, Relu -> {Conv 1x1 -> 30, Conv 1x1 -> 28} -> Concat -> 58
 * -> MaxPool 2 -> Conv 3x3 p1 (bias) 58 -> 58, Relu -> Add (the concat pooled) -> channel shuffle
 * (Reshape, Transpose, Reshape) -> depthwise Conv 3x3 -> Relu -> GlobalAveragePool -> Flatten -> Gemm ->
 * [N, 5]. 30, 28 and 58 channels take padded channel blocks (tc_channel_block) on AVX2 and AVX-512 alike,
 * so convs, concat, pool, the residual add, the depthwise conv of a plain map and the flatten of a
 * padded 1x1 map all read and write padding lanes. */
static uint8_t *padded_model(size_t *len) {
  tb *b = tb_new(13);
  int64_t in[4] = {-1, 3, 8, 8}, w0[4] = {30, 3, 3, 3}, wa[4] = {30, 30, 1, 1}, wb[4] = {28, 30, 1, 1};
  int64_t w1[4] = {58, 58, 3, 3}, b1[1] = {58}, hw[2] = {5, 58}, hb[1] = {5}, pad1[4] = {1, 1, 1, 1};
  int64_t k3[2] = {3, 3}, k2[2] = {2, 2};
  tb_input(b, "input", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, in);
  tb_param(b, "stem.weight", 4, w0, 0);
  tb_param(b, "a.weight", 4, wa, 0);
  tb_param(b, "b.weight", 4, wb, 0);
  tb_param(b, "mix.weight", 4, w1, 0);
  tb_param(b, "mix.bias", 1, b1, 0);
  int64_t wd[4] = {58, 1, 3, 3};
  tb_param(b, "dw.weight", 4, wd, 0);
  tb_param(b, "head.weight", 2, hw, 0);
  tb_param(b, "head.bias", 1, hb, 0);
  Onnx__NodeProto *n = tb_node(b, "Conv", "stem", "input,stem.weight", "s0");
  tb_attr_ints(b, n, "pads", 4, pad1);
  tb_node(b, "Relu", "act0", "s0", "s1");
  tb_node(b, "Conv", "a", "s1,a.weight", "ya");
  tb_node(b, "Conv", "b", "s1,b.weight", "yb");
  n = tb_node(b, "Concat", "cat", "ya,yb", "c0");
  tb_attr_i(b, n, "axis", 1);
  n = tb_node(b, "MaxPool", "pool", "c0", "p0");
  tb_attr_ints(b, n, "kernel_shape", 2, k2);
  tb_attr_ints(b, n, "strides", 2, k2);
  n = tb_node(b, "Conv", "mix", "p0,mix.weight,mix.bias", "m0");
  tb_attr_ints(b, n, "pads", 4, pad1);
  tb_attr_ints(b, n, "kernel_shape", 2, k3);
  tb_node(b, "Relu", "act1", "m0", "m1");
  tb_node(b, "Add", "res", "m1,p0", "r0");
  /* shufflenet's channel shuffle (a plain map after the tensor ops), then a depthwise conv of it */
  int64_t sh5[5] = {-1, 2, 29, 4, 4}, sh4[4] = {-1, 58, 4, 4}, perm[5] = {0, 2, 1, 3, 4};
  tb_const_ints(b, "shape5", 5, sh5);
  tb_const_ints(b, "shape4", 4, sh4);
  tb_node(b, "Reshape", "split", "r0,shape5", "q0");
  n = tb_node(b, "Transpose", "swap", "q0", "q1");
  tb_attr_ints(b, n, "perm", 5, perm);
  tb_node(b, "Reshape", "join", "q1,shape4", "q2");
  n = tb_node(b, "Conv", "dw", "q2,dw.weight", "d0");
  tb_attr_ints(b, n, "pads", 4, pad1);
  tb_attr_i(b, n, "group", 58);
  tb_node(b, "Relu", "act2", "d0", "d1");
  tb_node(b, "GlobalAveragePool", "gap", "d1", "g0");
  tb_node(b, "Flatten", "flat", "g0", "f0");
  n = tb_node(b, "Gemm", "head", "f0,head.weight,head.bias", "scores");
  tb_attr_i(b, n, "transB", 1);
  tb_output(b, "scores");
  uint8_t *p = tb_pack(b, len);
  tb_free(b);
  return p;
}

/* The bundle's .so at batch 2 against the reference interpreter on the same graph and weights. */
TH_TEST(padded_channel_blocks_match_reference) {
  enum { N = 2, OUT = 5 };
  CHECK_EQ_INT(tc_channel_block(58, 16), 16); /* the rule the model is made for */
  CHECK_EQ_INT(tc_channel_block(58, 8), 8);
  char dir[512], path[600], tar[700], so[700], err[2048] = "";
  CHECK(th_mkdtemp("th_netsrc_pad", dir, sizeof dir) == TH_OK);
  size_t len = 0;
  uint8_t *bytes = padded_model(&len);
  CHECK(bytes != NULL);
  snprintf(path, sizeof path, "%s/pad.onnx", dir);
  CHECK(th_write_file_atomic(path, bytes, len) == TH_OK);
  free(bytes);
  snprintf(tar, sizeof tar, "%s/pad.tar", dir);
  snprintf(so, sizeof so, "%s/pad.so", dir);
  tc_build_opts o;
  memset(&o, 0, sizeof o);
  o.framework = "llvm";
  o.network = "padded";
  o.onnx_path = path;
  o.batch = N;
  th_status rc = tc_build_bundle(&o, tar, so, NULL, err, sizeof err);
  if (rc != TH_OK) fprintf(stderr, "build: %s\n", err);
  CHECK_EQ_INT(rc, TH_OK);
  /* the reference: the same file's graph with its initializers */
  tc_netsrc src = {"padded", path, NULL};
  tc_graph *g = NULL;
  CHECK_EQ_INT(tc_network_build(&src, N, 0, 0, 1, &g, err, sizeof err), TH_OK);
  float x[N * 3 * 8 * 8], want[N * OUT], got[N * OUT];
  tb_fill(x, N * 3 * 8 * 8, 11);
  const void *ins[1] = {x};
  void *outs[1] = {want};
  CHECK_EQ_INT(tc_ref_run_io(g, ins, outs, err, sizeof err), TH_OK);
  char *pb = NULL;
  size_t plen = 0;
  bundle_params(tar, &pb, &plen);
  void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  CHECK(h != NULL);
  int (*create)(const void *, size_t, struct th_model **) = NULL;
  int (*run_io)(struct th_model *, const void *const *, void *const *) = NULL;
  void (*free_)(struct th_model *) = NULL;
  *(void **)&create = dlsym(h, "th_model_create");
  *(void **)&run_io = dlsym(h, "th_model_run_io");
  *(void **)&free_ = dlsym(h, "th_model_free");
  CHECK(create && run_io && free_);
  struct th_model *m = NULL;
  CHECK_EQ_INT(create(pb, plen, &m), 0);
  void *gots[1] = {got};
  CHECK_EQ_INT(run_io(m, ins, gots), 0);
  double worst = 0, big = 0;
  for (int i = 0; i < N * OUT; i++) {
    worst = fmax(worst, fabs((double)got[i] - want[i]));
    big = fmax(big, fabs((double)want[i]));
  }
  fprintf(stderr, "max abs diff %.3g (largest output %.3g)\n", worst, big);
  CHECK(big > 0 && worst <= 1e-4 * big);
  free_(m);
  dlclose(h);
  free(pb);
  /* a depthwise conv or pool computes its padding lanes from its input's, so it reads a padded block
   * (never the plain map the shuffle leaves, past whose channels the padding lanes would read) */
  int64_t ws = 0;
  CHECK_EQ_INT(tc_passes_run(g, 16, &ws), TH_OK);
  tc_call *calls = NULL;
  int ncalls = 0, padded_dw = 0;
  CHECK_EQ_INT(tc_lower(g, &calls, &ncalls), TH_OK);
  for (int i = 0; i < ncalls; i++) {
    const tc_workload *w = &calls[i].wl;
    int same = w->kernel == TC_KERNEL_DEPTHWISE || w->kernel == TC_KERNEL_MAXPOOL ||
               w->kernel == TC_KERNEL_AVGPOOL || w->kernel == TC_KERNEL_GLOBAL_AVGPOOL;
    if (!same || tc_channels_stored(w->oc, w->out_cb) == w->oc) continue;
    CHECK_EQ_INT(w->in_cb, w->out_cb);
    padded_dw += w->kernel == TC_KERNEL_DEPTHWISE;
  }
  CHECK_EQ_INT(padded_dw, 1);
  free(calls);
  tc_graph_free(g);
  (void)th_rm_rf(dir);
  return 0;
}
