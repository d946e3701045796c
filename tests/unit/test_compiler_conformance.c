/* Conformance with PyTorch: for torchvision networks, torch generates seeded weights (with random
 * batch-norm statistics), an input and the logits; scripts/torch2params.py converts the state_dict to
 * params.bin; tunehub loads it by torchvision names and must reproduce the logits (relative 1e-4 of the
 * largest logit, and the same top-5) with the reference interpreter and with the compiled model. */
#include <dlfcn.h>
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

typedef struct tc__case {
  char dir[256];
  char *params;
  size_t params_len;
  float *input, *logits;
  size_t n_in, n_out;
} tc__case;

static int tc__have_torch(void) {
  return system("/usr/bin/python3 -c 'import torch, torchvision' >/dev/null 2>&1") == 0;
}

/* Runs the torch side; returns 0, or 77 when torch is missing. */
static int tc__gen(const char *net, int batch, int size, tc__case *c) {
  if (!tc__have_torch()) {
    fprintf(stderr, "SKIP: /usr/bin/python3 cannot import torch/torchvision\n");
    return TH_SKIP;
  }
  snprintf(c->dir, sizeof c->dir, "/tmp/tc_conf_XXXXXX");
  CHECK(mkdtemp(c->dir) != NULL);
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "/usr/bin/python3 %s/tests/unit/conformance_torch.py %s %d %d %s && "
           "/usr/bin/python3 %s/scripts/torch2params.py %s/state.pt %s/params.bin",
           TH_SRC_DIR, net, batch, size, c->dir, TH_SRC_DIR, c->dir, c->dir);
  CHECK(system(cmd) == 0);
  char path[512];
  char *data;
  size_t len;
  snprintf(path, sizeof path, "%s/params.bin", c->dir);
  CHECK_EQ_INT(th_read_file(path, (size_t)1 << 31, &c->params, &c->params_len), TH_OK);
  snprintf(path, sizeof path, "%s/input.bin", c->dir);
  CHECK_EQ_INT(th_read_file(path, (size_t)1 << 30, &data, &len), TH_OK);
  c->input = (float *)(void *)data;
  c->n_in = len / 4;
  snprintf(path, sizeof path, "%s/logits.bin", c->dir);
  CHECK_EQ_INT(th_read_file(path, (size_t)1 << 30, &data, &len), TH_OK);
  c->logits = (float *)(void *)data;
  c->n_out = len / 4;
  return 0;
}

static void tc__case_free(tc__case *c) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf %s", c->dir);
  if (c->dir[0] && system(cmd) != 0) fprintf(stderr, "could not remove %s\n", c->dir);
  free(c->params);
  free(c->input);
  free(c->logits);
}

static void tc__top5(const float *x, int n, int top[5]) {
  for (int k = 0; k < 5; k++) {
    int best = -1;
    for (int i = 0; i < n; i++) {
      int taken = 0;
      for (int j = 0; j < k; j++) taken |= top[j] == i;
      if (!taken && (best < 0 || x[i] > x[best])) best = i;
    }
    top[k] = best;
  }
}

/* max |got - want| <= 1e-4 * max |want| per batch row, and the same top-5 per row. */
static void tc__compare(const char *what, const float *got, const float *want, int batch, int classes) {
  for (int b = 0; b < batch; b++) {
    const float *g = got + (size_t)b * classes, *w = want + (size_t)b * classes;
    double mx = 0, diff = 0;
    for (int i = 0; i < classes; i++) {
      mx = fmax(mx, fabs(w[i]));
      diff = fmax(diff, fabs(g[i] - w[i]));
    }
    int tg[5], tw[5];
    tc__top5(g, classes, tg);
    tc__top5(w, classes, tw);
    fprintf(stderr, "%s row %d: max |logit| %.4g, max diff %.3g (relative %.3g), top-5 %d %d %d %d %d\n",
            what, b, mx, diff, diff / mx, tw[0], tw[1], tw[2], tw[3], tw[4]);
    CHECK(diff <= 1e-4 * mx);
    for (int k = 0; k < 5; k++) CHECK_EQ_INT(tg[k], tw[k]);
  }
}

static int tc__ref_case(const char *net, int batch, int size) {
  tc__case c;
  memset(&c, 0, sizeof c);
  int rc = tc__gen(net, batch, size, &c);
  if (rc) return rc;
  tc_graph *g = NULL;
  char err[512];
  CHECK_EQ_INT(tc_zoo_build(net, batch, size, size, 0, &g, err, sizeof err), TH_OK);
  th_status st = tc_params_load(g, c.params, c.params_len, err, sizeof err);
  if (st != TH_OK) fprintf(stderr, "%s\n", err);
  CHECK_EQ_INT(st, TH_OK);
  CHECK_EQ_INT(c.n_in, (size_t)batch * 3 * size * size);
  CHECK_EQ_INT(c.n_out, (size_t)batch * 1000);
  float *out = malloc(c.n_out * sizeof *out);
  CHECK_EQ_INT(tc_ref_run(g, c.input, out, err, sizeof err), TH_OK);
  tc__compare("reference", out, c.logits, batch, 1000);
  free(out);
  tc_graph_free(g);
  tc__case_free(&c);
  return 0;
}

TH_TEST(ref_resnet_18) { return tc__ref_case("resnet-18", 1, 224); }
TH_TEST(ref_resnet_50) { return tc__ref_case("resnet-50", 2, 64); }
TH_TEST(ref_resnet_101) { return tc__ref_case("resnet-101", 1, 64); }
TH_TEST(ref_vgg_11) { return tc__ref_case("vgg-11", 1, 32); }
TH_TEST(ref_vgg_19) { return tc__ref_case("vgg-19", 1, 32); }
TH_TEST(ref_mobilenet_v2) { return tc__ref_case("mobilenet-v2", 2, 224); }
TH_TEST(ref_squeezenet_v1_0) { return tc__ref_case("squeezenet_v1.0", 1, 224); }
TH_TEST(ref_squeezenet_v1_1) { return tc__ref_case("squeezenet_v1.1", 2, 224); }
TH_TEST(ref_inception_v3) { return tc__ref_case("inception_v3", 1, 107); }

/* The compiled model: built with torch's params.bin shipped in the bundle, loaded with dlopen. */
static int tc__so_case(const char *net, int batch, int size) {
  tc__case c;
  memset(&c, 0, sizeof c);
  int rc = tc__gen(net, batch, size, &c);
  if (rc) return rc;
  char so[320], err[1024] = "";
  snprintf(so, sizeof so, "%s/model.so", c.dir);
  tc_build_opts o;
  memset(&o, 0, sizeof o);
  o.framework = "llvm";
  o.network = net;
  o.batch = batch;
  o.input_h = o.input_w = size;
  o.params = c.params;
  o.params_len = c.params_len;
  th_status st = tc_build_bundle(&o, NULL, so, NULL, err, sizeof err);
  if (st != TH_OK) fprintf(stderr, "%s\n", err);
  CHECK_EQ_INT(st, TH_OK);
  void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  CHECK(h != NULL);
  int (*create)(const void *, size_t, void **) =
      (int (*)(const void *, size_t, void **))dlsym(h, "th_model_create");
  int (*run)(void *, const float *, float *) = (int (*)(void *, const float *, float *))dlsym(h, "th_model_run");
  void (*fr)(void *) = (void (*)(void *))dlsym(h, "th_model_free");
  CHECK(create && run && fr);
  void *m = NULL;
  CHECK_EQ_INT(create(c.params, c.params_len, &m), 0);
  float *out = malloc(c.n_out * sizeof *out);
  CHECK_EQ_INT(run(m, c.input, out), 0);
  tc__compare("compiled", out, c.logits, batch, 1000);
  fr(m);
  dlclose(h);
  free(out);
  tc__case_free(&c);
  return 0;
}

TH_TEST(so_resnet_18) { return tc__so_case("resnet-18", 1, 224); }
TH_TEST(so_mobilenet_v2) { return tc__so_case("mobilenet-v2", 2, 224); }
TH_TEST(so_squeezenet_v1_1) { return tc__so_case("squeezenet_v1.1", 2, 224); }
