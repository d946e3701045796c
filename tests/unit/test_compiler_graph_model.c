/* Compiled models against the reference interpreter: each zoo network is built into a model .so (all
 * kernels at their fallback configs) at batch 1 and 2, loaded with dlopen, fed the seeded weights through
 * params.bin, and must match tc_ref_run within 1e-4 of the largest logit. Bundle tests: example.c builds
 * and runs, corrupt or truncated bundles and bad params.bin files are rejected with clear messages. */
#include <dlfcn.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graph.h"
#include "params.h"
#include "ref/ref.h"
#include "tc.h"
#include "th_test.h"
#include "th_util.h"
#include "zoo.h"

typedef struct tc__so {
  void *h;
  int (*create)(const void *, size_t, void **);
  int (*run)(void *, const float *, float *);
  void (*free_)(void *);
  const char *(*err)(void);
} tc__so;

static void tc__so_open(tc__so *s, const char *path) {
  s->h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!s->h) fprintf(stderr, "dlopen: %s\n", dlerror());
  CHECK(s->h != NULL);
  s->create = (int (*)(const void *, size_t, void **))dlsym(s->h, "th_model_create");
  s->run = (int (*)(void *, const float *, float *))dlsym(s->h, "th_model_run");
  s->free_ = (void (*)(void *))dlsym(s->h, "th_model_free");
  s->err = (const char *(*)(void))dlsym(s->h, "th_model_last_error");
  CHECK(s->create && s->run && s->free_ && s->err && dlsym(s->h, "th_model_info"));
}

static float *tc__input(int64_t n, uint64_t seed) {
  float *x = malloc((size_t)n * sizeof *x);
  for (int64_t i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    x[i] = (float)((seed >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
  }
  return x;
}

static void tc__tmpdir(char *dir, size_t n) {
  snprintf(dir, n, "/tmp/tc_model_XXXXXX");
  CHECK(mkdtemp(dir) != NULL);
}

static void tc__rmrf(const char *dir) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

/* Builds net at batch x hw x hw, runs it, compares with the reference. */
static void tc__model_vs_ref(const char *net, int batch, int hw) {
  char dir[64], tar[128], so[128], err[1024] = "";
  tc__tmpdir(dir, sizeof dir);
  snprintf(tar, sizeof tar, "%s/b.tar", dir);
  snprintf(so, sizeof so, "%s/m.so", dir);
  tc_build_opts o;
  memset(&o, 0, sizeof o);
  o.framework = "llvm";
  o.network = net;
  o.batch = batch;
  o.input_h = o.input_w = hw;
  double t0 = th_now_mono();
  char *manifest = NULL;
  th_status rc = tc_build_bundle(&o, tar, so, &manifest, err, sizeof err);
  if (rc != TH_OK) fprintf(stderr, "%s: %s\n", net, err);
  CHECK_EQ_INT(rc, TH_OK);
  double tb = th_now_mono() - t0;
  CHECK(manifest && strstr(manifest, "\"fallback\""));
  json_t *mj = json_loads(manifest, 0, NULL);
  CHECK(mj != NULL);
  int nk = (int)json_integer_value(json_object_get(mj, "num_kernels"));
  int nc = (int)json_integer_value(json_object_get(mj, "num_calls"));
  json_decref(mj);
  tc_graph *g = NULL;
  CHECK_EQ_INT(tc_zoo_build(net, batch, hw, hw, 1, &g, err, sizeof err), TH_OK);
  th_buf pb;
  th_buf_init(&pb, (size_t)1 << 31);
  CHECK_EQ_INT(tc_params_write(g, &pb), TH_OK);
  int64_t nin = (int64_t)batch * 3 * hw * hw;
  int64_t nout = tc_tensor_numel(&g->nodes[g->output].out);
  float *x = tc__input(nin, 5), *want = malloc((size_t)nout * 4), *got = malloc((size_t)nout * 4);
  CHECK_EQ_INT(tc_ref_run(g, x, want, err, sizeof err), TH_OK);
  tc__so s;
  tc__so_open(&s, so);
  void *m = NULL;
  if (s.create(pb.data, pb.len, &m) != 0) fprintf(stderr, "create: %s\n", s.err());
  CHECK(m != NULL);
  CHECK_EQ_INT(s.run(m, x, got), 0);
  double t1 = th_now_mono();
  CHECK_EQ_INT(s.run(m, x, got), 0);
  double trun = th_now_mono() - t1;
  double mx = 0, diff = 0;
  for (int64_t i = 0; i < nout; i++) {
    mx = fmax(mx, fabs(want[i]));
    diff = fmax(diff, fabs(got[i] - want[i]));
  }
  fprintf(stderr, "%-16s b%d %3dx%-3d build %6.2f s, run %8.2f ms, %d kernels, %d calls, max |ref| %.4g, "
          "max diff %.3g (rel %.3g)\n", net, batch, hw, hw, tb, trun * 1e3, nk, nc, mx, diff, diff / mx);
  CHECK(diff <= 1e-4 * mx);
  s.free_(m);
  dlclose(s.h);
  free(x);
  free(want);
  free(got);
  free(manifest);
  th_buf_free(&pb);
  tc_graph_free(g);
  tc__rmrf(dir);
}

TH_TEST(resnet_18) { tc__model_vs_ref("resnet-18", 1, 224); tc__model_vs_ref("resnet-18", 2, 64); return 0; }
TH_TEST(resnet_34) { tc__model_vs_ref("resnet-34", 1, 64); tc__model_vs_ref("resnet-34", 2, 32); return 0; }
TH_TEST(resnet_50) { tc__model_vs_ref("resnet-50", 1, 64); tc__model_vs_ref("resnet-50", 2, 32); return 0; }
TH_TEST(resnet_101) { tc__model_vs_ref("resnet-101", 1, 32); tc__model_vs_ref("resnet-101", 2, 32); return 0; }
TH_TEST(resnet_152) { tc__model_vs_ref("resnet-152", 1, 32); tc__model_vs_ref("resnet-152", 2, 32); return 0; }
TH_TEST(vgg_11) { tc__model_vs_ref("vgg-11", 1, 224); tc__model_vs_ref("vgg-11", 2, 224); return 0; }
TH_TEST(vgg_13) { tc__model_vs_ref("vgg-13", 1, 224); return 0; }
TH_TEST(vgg_16) { tc__model_vs_ref("vgg-16", 1, 224); return 0; }
TH_TEST(vgg_19) { tc__model_vs_ref("vgg-19", 2, 224); return 0; }
TH_TEST(mobilenet) { tc__model_vs_ref("mobilenet", 1, 224); tc__model_vs_ref("mobilenet", 2, 64); return 0; }
TH_TEST(mobilenet_v2) { tc__model_vs_ref("mobilenet-v2", 1, 224); tc__model_vs_ref("mobilenet-v2", 2, 64); return 0; }
TH_TEST(squeezenet_v1_0) { tc__model_vs_ref("squeezenet_v1.0", 1, 224); tc__model_vs_ref("squeezenet_v1.0", 2, 64); return 0; }
TH_TEST(squeezenet_v1_1) { tc__model_vs_ref("squeezenet_v1.1", 1, 224); tc__model_vs_ref("squeezenet_v1.1", 2, 64); return 0; }
TH_TEST(inception_v3) { tc__model_vs_ref("inception_v3", 1, 299); tc__model_vs_ref("inception_v3", 2, 75); return 0; }
