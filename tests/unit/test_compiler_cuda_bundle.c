/* CUDA bundles without a GPU: every zoo network builds a "cuda" bundle at batch 1 and batch 100 (fallback
 * configs, one NVRTC call per bundle). The manifest says framework cuda, the arch and every layer's config
 * source; the tar holds model.so, tunehub_model.h, params.bin, graph.json, example.c and
 * kernels/kernels.cu, each matching the manifest's sha256 and size; model.so dlopens, exports the model ABI
 * plus th_model_run_device, and th_model_create reports "no CUDA device" (skipped, with a message, only
 * when a device is present: the gpu tests cover that case). One case per network so ctest -j spreads them. */
#include <archive.h>
#include <archive_entry.h>
#include <dlfcn.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/tunehub_model.h"
#include "tc.h"
#include "tc_cuda.h"
#include "th_sha256.h"
#include "th_test.h"
#include "th_util.h"

#define NFILES 7
static const char *const names[NFILES] = {"manifest.json", "model.so", "tunehub_model.h", "params.bin",
                                          "graph.json", "example.c", "kernels/kernels.cu"};

/* Builds and checks one bundle. params (may be NULL: seeded weights) is a params.bin to ship; on return
 * *params_out (if not NULL) holds the bundle's params.bin (malloc'd). */
static void check_bundle(const char *net, int batch, const char *params, size_t params_len, char **params_out,
                         size_t *params_out_len) {
  char dir[] = "/tmp/tc-cuda-bundle-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char tar[256], so[256];
  snprintf(tar, sizeof tar, "%s/b.tar", dir);
  snprintf(so, sizeof so, "%s/model.so", dir);
  tc_build_opts o;
  memset(&o, 0, sizeof o);
  o.framework = "cuda";
  o.network = net;
  o.batch = batch;
  o.arch = "sm_90";
  o.params = params;
  o.params_len = params_len;
  char *manifest = NULL, err[4096] = "";
  double t0 = th_now_mono();
  th_status rc = tc_build_bundle(&o, tar, NULL, &manifest, err, sizeof err);
  double secs = th_now_mono() - t0;
  if (rc != TH_OK) fprintf(stderr, "%s batch %d: %s\n", net, batch, err);
  CHECK(rc == TH_OK);
  json_error_t je;
  json_t *m = json_loads(manifest, 0, &je);
  CHECK(m != NULL);
  json_t *key = json_object_get(m, "key");
  CHECK_STR(json_string_value(json_object_get(key, "framework")), "cuda");
  CHECK_STR(json_string_value(json_object_get(key, "network")), net);
  CHECK_EQ_INT(json_integer_value(json_object_get(key, "batch")), batch);
  CHECK_STR(json_string_value(json_object_get(key, "target")), "cuda -arch=sm_90");
  CHECK_STR(json_string_value(json_object_get(json_object_get(m, "target"), "arch")), "sm_90");
  int nk = (int)json_integer_value(json_object_get(m, "num_kernels"));
  int ncalls = (int)json_integer_value(json_object_get(m, "num_calls"));
  json_t *layers = json_object_get(m, "layers");
  CHECK(nk > 0 && ncalls >= nk && (int)json_array_size(layers) == ncalls);
  for (size_t i = 0; i < json_array_size(layers); i++) {
    json_t *l = json_array_get(layers, i);
    CHECK_STR(json_string_value(json_object_get(l, "source")), "fallback");
    CHECK(json_string_length(json_object_get(l, "config")) > 2);
    CHECK(json_array_size(json_object_get(l, "block")) == 3);
  }
  CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(m, "config_sources"), "fallback")), ncalls);
  CHECK(json_integer_value(json_object_get(m, "cubin_bytes")) > 0);
  json_t *files = json_object_get(m, "files");
  CHECK_EQ_INT(json_object_size(files), NFILES - 1);
  fprintf(stderr, "%s batch %d: %d kernels, %d calls, built in %.2f s (NVRTC %.2f s, %.0f ms/kernel)\n", net, batch,
          nk, ncalls, secs, json_real_value(json_object_get(m, "nvrtc_seconds")),
          1e3 * json_real_value(json_object_get(m, "nvrtc_seconds")) / nk);

  /* the tar: every file present once and matching the manifest */
  char *data[NFILES] = {0};
  size_t len[NFILES] = {0};
  struct archive *a = archive_read_new();
  archive_read_support_format_tar(a);
  CHECK(archive_read_open_filename(a, tar, 1 << 16) == ARCHIVE_OK);
  struct archive_entry *e;
  while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
    int idx = -1;
    for (int i = 0; i < NFILES; i++)
      if (strcmp(archive_entry_pathname(e), names[i]) == 0) idx = i;
    CHECK(idx >= 0 && data[idx] == NULL);
    size_t sz = (size_t)archive_entry_size(e);
    data[idx] = malloc(sz + 1);
    CHECK(data[idx] && archive_read_data(a, data[idx], sz) == (la_ssize_t)sz);
    data[idx][sz] = '\0';
    len[idx] = sz;
  }
  archive_read_free(a);
  /* the tar's manifest is the build's without this run's facts (reproducible bundles, tc.h) */
  json_t *want = json_loads(manifest, 0, NULL), *got = json_loads(data[0], 0, NULL);
  CHECK(want != NULL && got != NULL);
  static const char *const run_keys[] = {"build_seconds", "nvrtc_seconds", "latency_ms", "unmeasured"};
  for (size_t i = 0; i < sizeof run_keys / sizeof *run_keys; i++) {
    CHECK(json_object_get(got, run_keys[i]) == NULL);
    json_object_del(want, run_keys[i]);
  }
  CHECK(json_object_get(json_object_get(got, "target"), "built_on") == NULL);
  json_object_del(json_object_get(want, "target"), "built_on");
  CHECK(json_equal(want, got));
  json_decref(want);
  json_decref(got);
  for (int i = 1; i < NFILES; i++) {
    CHECK(data[i] != NULL);
    json_t *f = json_object_get(files, names[i]);
    CHECK(f != NULL);
    th_sha256 s;
    unsigned char d[32];
    char hex[65];
    th_sha256_init(&s);
    th_sha256_update(&s, data[i], len[i]);
    th_sha256_final(&s, d);
    th_hex(d, 32, hex);
    CHECK_STR(json_string_value(json_object_get(f, "sha256")), hex);
    CHECK_EQ_INT(json_integer_value(json_object_get(f, "size")), len[i]);
  }
  CHECK(strstr(data[6], "extern \"C\" __global__") != NULL);
  CHECK(strstr(data[2], "th_model_run_device") != NULL);

  /* model.so loads without a driver and says why it cannot create a model */
  CHECK(th_write_file_atomic(so, data[1], len[1]) == TH_OK);
  void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  if (!h) fprintf(stderr, "dlopen: %s\n", dlerror());
  CHECK(h != NULL);
  const struct th_model_info *(*info)(void) = (const struct th_model_info *(*)(void))dlsym(h, "th_model_info");
  int (*create)(const void *, size_t, void **) = (int (*)(const void *, size_t, void **))dlsym(h, "th_model_create");
  void (*fr)(void *) = (void (*)(void *))dlsym(h, "th_model_free");
  const char *(*lasterr)(void) = (const char *(*)(void))dlsym(h, "th_model_last_error");
  CHECK(info && create && fr && lasterr && dlsym(h, "th_model_run") && dlsym(h, "th_model_run_device"));
  CHECK(dlsym(h, "th_model_run_io") != NULL);
  CHECK(strncmp(info()->target, "cuda -arch=sm_90", 16) == 0);
  CHECK_EQ_INT(info()->batch, batch);
  /* the inputs and outputs tables repeat the legacy fields for a CNN (and the manifest lists them)
   */
  CHECK_EQ_INT(info()->num_inputs, 1);
  CHECK_EQ_INT(info()->num_outputs, 1);
  CHECK_STR(info()->inputs[0].name, "input");
  CHECK_EQ_INT(info()->inputs[0].dtype, TH_DTYPE_F32);
  CHECK_EQ_INT(info()->inputs[0].ndim, info()->input_ndim);
  for (int d = 0; d < info()->input_ndim; d++)
    CHECK_EQ_INT(info()->inputs[0].shape[d], info()->input_shape[d]);
  CHECK_EQ_INT(info()->inputs[0].count, info()->input_size);
  CHECK_EQ_INT(info()->outputs[0].count, info()->output_size);
  CHECK_STR(
      json_string_value(json_object_get(json_array_get(json_object_get(m, "inputs"), 0), "name")),
      "input");
  CHECK_EQ_INT(json_array_size(json_object_get(m, "outputs")), 1);
  CHECK_EQ_INT(info()->num_kernels, ncalls);
  tc_cuda_device dev;
  if (tc_cuda_device_query(&dev, NULL, 0) == TH_OK) {
    fprintf(stderr, "a CUDA device (%s) is present: the no-device check is skipped (gpu tests cover it)\n", dev.name);
  } else {
    void *mdl = NULL;
    CHECK(create(data[3], len[3], &mdl) != 0);
    CHECK(mdl == NULL);
    fprintf(stderr, "  th_model_create: %s\n", lasterr());
    CHECK(strstr(lasterr(), "no CUDA device") != NULL);
    /* a corrupt params.bin is still reported as such first */
    char *bad = malloc(len[3]);
    CHECK(bad != NULL);
    memcpy(bad, data[3], len[3]);
    bad[len[3] / 2] ^= 0x55;
    CHECK(create(bad, len[3], &mdl) != 0);
    CHECK(strstr(lasterr(), "checksum") != NULL);
    free(bad);
  }
  dlclose(h);
  if (params) CHECK(len[3] == params_len && memcmp(data[3], params, params_len) == 0);
  if (params_out) {
    *params_out = data[3];
    *params_out_len = len[3];
    data[3] = NULL;
  }
  for (int i = 0; i < NFILES; i++) free(data[i]);
  json_decref(m);
  free(manifest);
  unlink(tar);
  unlink(so);
  rmdir(dir);
}

/* Batch 1 with seeded weights; batch 100 ships batch 1's params.bin (the o.params path, and no second
 * generation of vgg's half a gigabyte of weights). */
static int net_case(const char *net) {
  char *params = NULL;
  size_t len = 0;
  check_bundle(net, 1, NULL, 0, &params, &len);
  check_bundle(net, 100, params, len, NULL, NULL);
  free(params);
  return 0;
}

TH_TEST(resnet_18) { return net_case("resnet-18"); }
TH_TEST(resnet_34) { return net_case("resnet-34"); }
TH_TEST(resnet_50) { return net_case("resnet-50"); }
TH_TEST(resnet_101) { return net_case("resnet-101"); }
TH_TEST(resnet_152) { return net_case("resnet-152"); }
TH_TEST(vgg_11) { return net_case("vgg-11"); }
TH_TEST(vgg_13) { return net_case("vgg-13"); }
TH_TEST(vgg_16) { return net_case("vgg-16"); }
TH_TEST(vgg_19) { return net_case("vgg-19"); }
TH_TEST(mobilenet) { return net_case("mobilenet"); }
TH_TEST(mobilenet_v2) { return net_case("mobilenet-v2"); }
TH_TEST(squeezenet_v1_0) { return net_case("squeezenet_v1.0"); }
TH_TEST(squeezenet_v1_1) { return net_case("squeezenet_v1.1"); }
TH_TEST(inception_v3) { return net_case("inception_v3"); }

/* The cuda framework's errors: a bad arch, an unknown network. */
TH_TEST(bad_options) {
  tc_build_opts o;
  memset(&o, 0, sizeof o);
  o.framework = "cuda";
  o.network = "resnet-18";
  o.batch = 1;
  o.arch = "sm_12";
  char err[512] = "";
  CHECK(tc_build_bundle(&o, NULL, NULL, NULL, err, sizeof err) == TH_ERR_INVALID);
  CHECK(strstr(err, "arch") != NULL);
  o.arch = NULL;
  o.network = "no-such-net";
  CHECK(tc_build_bundle(&o, NULL, NULL, NULL, err, sizeof err) == TH_ERR_NOT_FOUND);
  tc_task *tasks = NULL;
  int n = 0;
  tc_backend_target t;
  CHECK(tc_backend_target_init(tc_backend_find("cuda", NULL, 0), "sm_90", &t, NULL, 0) == TH_OK);
  CHECK(tc_network_tasks(&t, &(tc_netsrc){"resnet-18", NULL, NULL}, 1, &tasks, &n) == TH_OK);
  CHECK(n > 5);
  for (int i = 0; i < n; i++) CHECK(tasks[i].wl.in_cb == 1 && tasks[i].wl.out_cb == 1);
  free(tasks);
  return 0;
}
