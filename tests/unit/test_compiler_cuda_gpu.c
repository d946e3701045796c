/* GPU tests (label gpu; exit 77 without a CUDA device). Every GPU template, at its fallback and random valid
 * configs on edge shapes, runs through tc_cuda_measure, which checks it against the CPU reference
 * (tc_cuda_ref_kernel) at relative 1e-4; every zoo network's cuda bundle runs (th_model_run and
 * th_model_run_device) and matches the reference interpreter (compiler/ref/) within 1e-4 of the largest
 * output, at batch 1 and 2, at a reduced input size where the network allows it. */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cu_driver.h"
#include "graph.h"
#include "ops.h"
#include "params.h"
#include "ref/ref.h"
#include "tc.h"
#include "tc_cuda.h"
#include "tc_cuda_measure.h"
#include "test_cuda_tensor_wl.h"
#include "th_test.h"
#include "th_util.h"
#include "zoo.h"

static int have_device(void) {
  tc_cuda_device d;
  char err[512];
  if (tc_cuda_device_query(&d, err, sizeof err) != TH_OK) {
    fprintf(stderr, "skipped: %s\n", err);
    return 0;
  }
  fprintf(stderr, "device: %s (%s)\n", d.name, d.arch);
  return 1;
}

static tc_workload wl_make(tc_kernel k, int n, int c, int h, int w, int oc, int ks, int s, int p, int epi) {
  tc_workload wl;
  memset(&wl, 0, sizeof wl);
  wl.kernel = k;
  wl.n = n, wl.c = c, wl.h = h, wl.w = w, wl.oc = oc, wl.kh = wl.kw = ks, wl.sh = wl.sw = s;
  wl.pt = wl.pl = wl.pb = wl.pr = p;
  wl.oh = (h + 2 * p - ks) / s + 1, wl.ow = (w + 2 * p - ks) / s + 1;
  wl.in_cb = wl.out_cb = 1;
  wl.epilogue = epi;
  wl.clip_min = 0, wl.clip_max = 6;
  if (k == TC_KERNEL_GLOBAL_AVGPOOL) wl.kh = h, wl.kw = w, wl.oh = wl.ow = 1, wl.pt = wl.pl = wl.pb = wl.pr = 0, wl.sh = wl.sw = 1;
  if (k == TC_KERNEL_DENSE || k == TC_KERNEL_SOFTMAX) {
    wl.h = wl.w = wl.oh = wl.ow = wl.kh = wl.kw = wl.sh = wl.sw = 1;
    wl.pt = wl.pl = wl.pb = wl.pr = 0;
  }
  if (k == TC_KERNEL_SOFTMAX || k == TC_KERNEL_ELTWISE) wl.oc = c, wl.oh = wl.h, wl.ow = wl.w;
  return wl;
}

TH_TEST(templates_vs_reference) {
  if (!have_device()) return 77;
  tc_cuda_device d;
  CHECK(tc_cuda_device_query(&d, NULL, 0) == TH_OK);
  tc_cuda_target t;
  CHECK(tc_cuda_target_init(&t, d.arch) == TH_OK);
  tc_workload ws[] = {
      wl_make(TC_KERNEL_CONV2D, 1, 3, 32, 32, 16, 7, 2, 3, TC_EPI_BIAS | TC_EPI_RELU),
      wl_make(TC_KERNEL_CONV2D, 2, 17, 13, 11, 5, 3, 2, 1, TC_EPI_BIAS | TC_EPI_RESIDUAL),
      wl_make(TC_KERNEL_CONV2D, 3, 32, 7, 7, 24, 1, 1, 0, TC_EPI_CLIP),
      wl_make(TC_KERNEL_CONV2D, 1, 64, 14, 14, 64, 3, 1, 1, TC_EPI_BIAS | TC_EPI_RESIDUAL | TC_EPI_RELU),
      wl_make(TC_KERNEL_DEPTHWISE, 2, 7, 15, 9, 7, 3, 2, 1, TC_EPI_BIAS | TC_EPI_CLIP),
      wl_make(TC_KERNEL_DEPTHWISE, 1, 32, 16, 16, 32, 5, 1, 2, TC_EPI_BIAS | TC_EPI_RELU),
      wl_make(TC_KERNEL_DENSE, 1, 512, 1, 1, 100, 1, 1, 0, TC_EPI_BIAS),
      wl_make(TC_KERNEL_DENSE, 3, 25, 1, 1, 7, 1, 1, 0, TC_EPI_RELU),
      wl_make(TC_KERNEL_DENSE, 40, 300, 1, 1, 77, 1, 1, 0, TC_EPI_BIAS | TC_EPI_RELU),
      wl_make(TC_KERNEL_MAXPOOL, 2, 8, 17, 17, 8, 3, 2, 1, 0),
      wl_make(TC_KERNEL_AVGPOOL, 2, 5, 9, 9, 5, 3, 1, 1, 0),
      wl_make(TC_KERNEL_GLOBAL_AVGPOOL, 3, 13, 5, 3, 13, 5, 1, 0, 0),
      wl_make(TC_KERNEL_ELTWISE, 2, 6, 7, 5, 6, 1, 1, 0, TC_EPI_RELU),
      wl_make(TC_KERNEL_ELTWISE, 1, 8, 4, 4, 8, 1, 1, 0, TC_EPI_CLIP),
      wl_make(TC_KERNEL_SOFTMAX, 3, 1000, 1, 1, 1000, 1, 1, 0, 0),
      wl_make(TC_KERNEL_SOFTMAX, 2, 7, 1, 1, 7, 1, 1, 0, 0),
      wl_make(TC_KERNEL_CONCAT, 2, 5, 6, 7, 12, 1, 1, 0, 0),
      /* the activations of imported CNNs (issue 21) */
      wl_make(TC_KERNEL_CONV2D, 1, 16, 14, 14, 32, 3, 1, 1, TC_EPI_BIAS | TC_EPI_SILU),
      wl_make(TC_KERNEL_CONV2D, 2, 24, 1, 1, 96, 1, 1, 0, TC_EPI_BIAS | TC_EPI_HARD_SIGMOID),
      wl_make(TC_KERNEL_DEPTHWISE, 1, 40, 15, 15, 40, 5, 2, 2, TC_EPI_BIAS | TC_EPI_HARD_SWISH),
      wl_make(TC_KERNEL_DENSE, 2, 128, 1, 1, 40, 1, 1, 0, TC_EPI_BIAS | TC_EPI_SIGMOID),
  };
  ws[10].count_include_pad = 1;
  ws[16].oh = 6, ws[16].ow = 7, ws[16].c_offset = 4;
  ws[18].alpha = 1.0f / 6.0f, ws[18].beta = 0.5f;
  uint64_t seed = 12345;
  int total = 0;
  for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++) {
    tc_space s;
    CHECK(tc_cuda_space(&ws[i], &t, &s) == TH_OK);
    int64_t size = tc_space_size(&s);
    tc_config c;
    CHECK(tc_cuda_fallback(&ws[i], &t, &s, &c) == TH_OK);
    for (int done = 0, tries = 0; done < 5 && tries < 2000; tries++) {
      if (done > 0) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        tc_space_get(&s, (int64_t)((seed >> 17) % (uint64_t)size), &c);
        if (tc_cuda_valid(&ws[i], &t, &s, &c, NULL, 0) != TH_OK) continue;
      }
      tc_measure_opts o;
      tc_measure_opts_default(&o);
      o.repeat = 3;
      tc_measure_result r;
      CHECK(tc_cuda_measure(&ws[i], &c, &t, &o, &r) == TH_OK);
      if (r.error_class != TC_ERROR_CLASS_NONE) {
        char key[192], cs[1024];
        tc_workload_key(&ws[i], key, sizeof key);
        tc_config_str(&s, &c, cs, sizeof cs);
        fprintf(stderr, "%s config %s: class %d: %s\n", key, cs, r.error_class, r.msg);
      }
      CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_NONE);
      CHECK(r.cost_mean_s > 0 && r.cost_mean_s < 1);
      done++;
      total++;
    }
  }
  fprintf(stderr, "%d candidates matched the CPU reference\n", total);
  return 0;
}

/* One candidate through tc_cuda_measure (NVRTC, the device, the check against tc_cuda_ref_kernel at
 * relative 1e-4); any error class fails with the workload, the config and the message. */
static void measure_ok(const tc_workload *wl, const tc_cuda_target *t, const tc_space *s,
                       const tc_config *c) {
  tc_measure_opts o;
  tc_measure_opts_default(&o);
  o.repeat = 3;
  tc_measure_result r;
  CHECK(tc_cuda_measure(wl, c, t, &o, &r) == TH_OK);
  if (r.error_class != TC_ERROR_CLASS_NONE) {
    char key[256], cs[1024];
    tc_workload_key(wl, key, sizeof key);
    tc_config_str(s, c, cs, sizeof cs);
    fprintf(stderr, "%s config %s: class %d: %s\n", key, cs, r.error_class, r.msg);
  }
  CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_NONE);
  CHECK(r.cost_mean_s > 0 && r.cost_mean_s < 1);
}

/* The target of the device, with the device's own limits. */
static void device_target(tc_cuda_target *t) {
  tc_cuda_device d;
  CHECK(tc_cuda_device_query(&d, NULL, 0) == TH_OK);
  CHECK(tc_cuda_target_init(t, d.arch) == TH_OK);
  tc_cuda_target_use_device(t, &d);
}

/* The tensor families' templates on their edge shapes (test_cuda_tensor_wl.h), at the fallback and 4
 * random valid configs each. */
TH_TEST(tensor_templates_vs_reference) {
  if (!have_device()) return 77;
  tc_cuda_target t;
  device_target(&t);
  static const tc_kernel ks[] = {TC_KERNEL_BATCH_MATMUL, TC_KERNEL_DENSE, TC_KERNEL_LAYER_NORM,
                                 TC_KERNEL_SOFTMAX_ROWS, TC_KERNEL_UNARY, TC_KERNEL_EMBEDDING,
                                 TC_KERNEL_COPY,         TC_KERNEL_BINARY};
  uint64_t seed = 2024;
  int total = 0;
  for (size_t f = 0; f < sizeof ks / sizeof ks[0]; f++) {
    tc_workload w[TW_EDGE_MAX];
    int n = tw_edge_set(ks[f], w);
    for (int i = 0; i < n; i++) {
      tc_space s;
      tc_config c;
      CHECK(tc_cuda_space(&w[i], &t, &s) == TH_OK);
      CHECK(tc_cuda_fallback(&w[i], &t, &s, &c) == TH_OK);
      int64_t size = tc_space_size(&s);
      for (int done = 0, tries = 0; done < 5 && tries < 2000; tries++) {
        if (done > 0) {
          seed = seed * 6364136223846793005ull + 1442695040888963407ull;
          tc_space_get(&s, (int64_t)((seed >> 17) % (uint64_t)size), &c);
          if (tc_cuda_valid(&w[i], &t, &s, &c, NULL, 0) != TH_OK) continue;
        }
        measure_ok(&w[i], &t, &s, &c);
        done++;
        total++;
      }
    }
  }
  fprintf(stderr, "%d tensor candidates matched the CPU reference\n", total);
  return 0;
}

/* Every kernel of ViT-B/16 and BERT-base at batch 1 at its fallback, on the device's own limits. */
TH_TEST(transformer_fallbacks_vs_reference) {
  if (!have_device()) return 77;
  tc_cuda_target t;
  device_target(&t);
  fprintf(stderr, "limits from %s: %d bytes of static shared memory per block\n", t.limits_from,
          t.max_shared_bytes);
  for (int net = 0; net < 2; net++) {
    tc_workload w[TW_MAX];
    int n = net ? tw_bert(1, w) : tw_vit(1, w);
    for (int i = 0; i < n; i++) {
      tc_space s;
      tc_config c;
      CHECK(tc_cuda_space(&w[i], &t, &s) == TH_OK);
      CHECK(tc_cuda_fallback(&w[i], &t, &s, &c) == TH_OK);
      measure_ok(&w[i], &t, &s, &c);
    }
    fprintf(stderr, "%s: %d kernels matched the CPU reference\n", net ? "bert" : "vit", n);
  }
  return 0;
}

/* A wrong candidate is reported as such: the measurement's check is live. */
TH_TEST(measure_classes) {
  if (!have_device()) return 77;
  tc_cuda_device d;
  CHECK(tc_cuda_device_query(&d, NULL, 0) == TH_OK);
  tc_cuda_target t;
  CHECK(tc_cuda_target_init(&t, d.arch) == TH_OK);
  tc_workload wl = wl_make(TC_KERNEL_CONV2D, 1, 512, 56, 56, 512, 3, 1, 1, TC_EPI_BIAS);
  tc_space s;
  CHECK(tc_cuda_space(&wl, &t, &s) == TH_OK);
  tc_config c;
  int64_t size = tc_space_size(&s);
  int found = 0;
  for (int64_t i = 0; i < size && !found; i += 7919) {
    tc_space_get(&s, i, &c);
    found = tc_cuda_valid(&wl, &t, &s, &c, NULL, 0) != TH_OK;
  }
  CHECK(found);
  tc_measure_result r;
  CHECK(tc_cuda_measure(&wl, &c, &t, NULL, &r) == TH_OK);
  CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_INSTANTIATION);
  /* an impossible tolerance turns a right answer into class 5 */
  tc_workload sm = wl_make(TC_KERNEL_SOFTMAX, 2, 1000, 1, 1, 1000, 1, 1, 0, 0);
  CHECK(tc_cuda_space(&sm, &t, &s) == TH_OK);
  CHECK(tc_cuda_fallback(&sm, &t, &s, &c) == TH_OK);
  tc_measure_opts o;
  tc_measure_opts_default(&o);
  o.rtol = -1;
  o.atol = -1;
  CHECK(tc_cuda_measure(&sm, &c, &t, &o, &r) == TH_OK);
  CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_WRONG_ANSWER);
  return 0;
}

static void net_vs_ref(const char *net, int batch) {
  const tc_zoo_entry *z = tc_zoo_find(net);
  CHECK(z != NULL);
  int hw = z->min_hw > 64 ? z->min_hw : 64;
  if (strncmp(net, "vgg", 3) == 0) hw = z->h; /* vgg's adaptive pool needs a multiple of 7: keep 224 */
  char dir[] = "/tmp/tc-cuda-gpu-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char so[256];
  snprintf(so, sizeof so, "%s/model.so", dir);
  tc_build_opts o;
  memset(&o, 0, sizeof o);
  o.framework = "cuda";
  o.network = net;
  o.batch = batch;
  o.input_h = o.input_w = hw;
  char err[4096] = "";
  th_status rc = tc_build_bundle(&o, NULL, so, NULL, err, sizeof err);
  if (rc != TH_OK) fprintf(stderr, "%s: %s\n", net, err);
  CHECK(rc == TH_OK);
  tc_graph *g = NULL;
  CHECK(tc_zoo_build(net, batch, hw, hw, 1, &g, err, sizeof err) == TH_OK);
  th_buf params;
  th_buf_init(&params, (size_t)4 << 30);
  CHECK(tc_params_write(g, &params) == TH_OK);
  int64_t nin = tc_tensor_numel(&g->nodes[0].out), nout = tc_tensor_numel(&g->nodes[g->outputs[0]].out);
  float *x = malloc((size_t)nin * 4), *ref = malloc((size_t)nout * 4), *y = malloc((size_t)nout * 4),
        *y2 = malloc((size_t)nout * 4);
  CHECK(x && ref && y && y2);
  for (int64_t i = 0; i < nin; i++) x[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
  CHECK(tc_ref_run(g, x, ref, err, sizeof err) == TH_OK);
  void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  CHECK(h != NULL);
  int (*create)(const void *, size_t, void **) = (int (*)(const void *, size_t, void **))dlsym(h, "th_model_create");
  int (*run)(void *, const float *, float *) = (int (*)(void *, const float *, float *))dlsym(h, "th_model_run");
  int (*rund)(void *, const void *, void *, void *) = (int (*)(void *, const void *, void *, void *))dlsym(h, "th_model_run_device");
  void (*fr)(void *) = (void (*)(void *))dlsym(h, "th_model_free");
  const char *(*lasterr)(void) = (const char *(*)(void))dlsym(h, "th_model_last_error");
  CHECK(create && run && rund && fr && lasterr);
  void *m = NULL;
  if (create(params.data, params.len, &m) != 0) fprintf(stderr, "create: %s\n", lasterr());
  CHECK(m != NULL);
  if (run(m, x, y) != 0) fprintf(stderr, "run: %s\n", lasterr());
  double maxref = 0, maxdiff = 0;
  for (int64_t i = 0; i < nout; i++) maxref = fmax(maxref, fabs(ref[i]));
  for (int64_t i = 0; i < nout; i++) maxdiff = fmax(maxdiff, fabs((double)y[i] - ref[i]));
  fprintf(stderr, "%s batch %d at %d: max |gpu - ref| = %.3g of max |ref| %.3g\n", net, batch, hw, maxdiff, maxref);
  CHECK(maxdiff <= 1e-4 * maxref);
  /* the device-pointer entry point gives the same bytes */
  const tc_cu *cu = NULL;
  CHECK(tc__cu_get(&cu, err, sizeof err) == TH_OK);
  tc_cu_ptr din = 0, dout = 0;
  CHECK(cu->MemAlloc(&din, (size_t)nin * 4) == 0 && cu->MemAlloc(&dout, (size_t)nout * 4) == 0);
  CHECK(cu->MemcpyHtoD(din, x, (size_t)nin * 4) == 0);
  CHECK(rund(m, (const void *)(uintptr_t)din, (void *)(uintptr_t)dout, NULL) == 0);
  CHECK(run(m, x, y) == 0); /* same stream: ordered after the device run */
  CHECK(cu->MemcpyDtoH(y2, dout, (size_t)nout * 4) == 0);
  CHECK(memcmp(y, y2, (size_t)nout * 4) == 0);
  cu->MemFree(din);
  cu->MemFree(dout);
  fr(m);
  dlclose(h);
  unlink(so);
  rmdir(dir);
  free(x);
  free(ref);
  free(y);
  free(y2);
  th_buf_free(&params);
  tc_graph_free(g);
}

static int gpu_net(const char *net) {
  if (!have_device()) return 77;
  net_vs_ref(net, 1);
  net_vs_ref(net, 2);
  return 0;
}

TH_TEST(resnet_18) { return gpu_net("resnet-18"); }
TH_TEST(resnet_34) { return gpu_net("resnet-34"); }
TH_TEST(resnet_50) { return gpu_net("resnet-50"); }
TH_TEST(resnet_101) { return gpu_net("resnet-101"); }
TH_TEST(resnet_152) { return gpu_net("resnet-152"); }
TH_TEST(vgg_11) { return gpu_net("vgg-11"); }
TH_TEST(vgg_13) { return gpu_net("vgg-13"); }
TH_TEST(vgg_16) { return gpu_net("vgg-16"); }
TH_TEST(vgg_19) { return gpu_net("vgg-19"); }
TH_TEST(mobilenet) { return gpu_net("mobilenet"); }
TH_TEST(mobilenet_v2) { return gpu_net("mobilenet-v2"); }
TH_TEST(squeezenet_v1_0) { return gpu_net("squeezenet_v1.0"); }
TH_TEST(squeezenet_v1_1) { return gpu_net("squeezenet_v1.1"); }
TH_TEST(inception_v3) { return gpu_net("inception_v3"); }

/* Sets knob `name` of c to the value vals[0..width); 0 when the space has no such value. */
static int knob_to(const tc_space *s, tc_config *c, const char *name, const int *vals, int width) {
  int k = tc_space_knob(s, name);
  if (k < 0) return 0;
  for (int i = 0; i < s->knobs[k].nvalues; i++)
    if (memcmp(s->knobs[k].values[i], vals, (size_t)width * sizeof(int)) == 0) {
      c->idx[k] = i;
      return 1;
    }
  return 0;
}

/* conv2d at precision tf32 (issue 25: the implicit GEMM on tensor cores), sm_80 and newer: a
 * stem (7x7 stride 2, 3 channels), resnet's 3x3 at 56x56, 1x1 and stride-2 odd shapes with every
 * kind of epilogue, each at its fallback, 3 random valid configs, a split-k config (the largest
 * split of 8, 4, 2 that is valid) and a 128 x 128 tile with 3 stages of tile_k 32 (107 KiB of
 * dynamic shared memory, where the device allows it), through tc_cuda_measure against the CPU
 * reference at the tf32 tolerance (2e-3 of the largest output). */
TH_TEST(tf32_conv2d_vs_reference) {
  if (!have_device()) return 77;
  tc_cuda_target t;
  device_target(&t);
  if (t.sm < 80) {
    fprintf(stderr, "skipped: %s has no TF32 tensor cores\n", t.arch);
    return 77;
  }
  tc_workload ws[] = {
      wl_make(TC_KERNEL_CONV2D, 1, 3, 64, 64, 37, 7, 2, 3, TC_EPI_BIAS | TC_EPI_RELU),
      wl_make(TC_KERNEL_CONV2D, 1, 64, 56, 56, 64, 3, 1, 1, TC_EPI_BIAS | TC_EPI_RESIDUAL | TC_EPI_RELU),
      wl_make(TC_KERNEL_CONV2D, 2, 17, 13, 11, 20, 3, 2, 1, TC_EPI_BIAS | TC_EPI_SILU),
      wl_make(TC_KERNEL_CONV2D, 2, 32, 7, 7, 24, 1, 1, 0, TC_EPI_BIAS | TC_EPI_HARD_SIGMOID),
      wl_make(TC_KERNEL_CONV2D, 1, 256, 14, 14, 512, 1, 2, 0, TC_EPI_BIAS),
      wl_make(TC_KERNEL_CONV2D, 1, 512, 7, 7, 512, 3, 1, 1, TC_EPI_BIAS | TC_EPI_RELU),
  };
  ws[3].alpha = 1.0f / 6.0f, ws[3].beta = 0.5f;
  uint64_t seed = 4242;
  int total = 0, splits = 0, dyns = 0;
  for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++) {
    ws[i].precision = TC_PRECISION_TF32;
    tc_space s;
    tc_config c;
    CHECK(tc_cuda_space(&ws[i], &t, &s) == TH_OK);
    CHECK(tc_cuda_fallback(&ws[i], &t, &s, &c) == TH_OK);
    measure_ok(&ws[i], &t, &s, &c);
    int64_t size = tc_space_size(&s);
    for (int done = 0, tries = 0; done < 3 && tries < 2000; tries++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      tc_space_get(&s, (int64_t)((seed >> 17) % (uint64_t)size), &c);
      if (tc_cuda_valid(&ws[i], &t, &s, &c, NULL, 0) != TH_OK) continue;
      measure_ok(&ws[i], &t, &s, &c);
      done++;
    }
    static const int bt[2] = {32, 32}, wt[2] = {16, 16}, bk = 8, st = 2, one = 1;
    CHECK(knob_to(&s, &c, "block_tile", bt, 2) && knob_to(&s, &c, "warp_tile", wt, 2));
    CHECK(knob_to(&s, &c, "tile_k", &bk, 1) && knob_to(&s, &c, "stages", &st, 1));
    for (int z = 8; z >= 2; z /= 2) {
      CHECK(knob_to(&s, &c, "split_k", &z, 1));
      if (tc_cuda_valid(&ws[i], &t, &s, &c, NULL, 0) != TH_OK) continue;
      measure_ok(&ws[i], &t, &s, &c);
      splits++;
      break;
    }
    static const int bt2[2] = {128, 128}, wt2[2] = {64, 64}, bk2 = 32, st2 = 3;
    CHECK(knob_to(&s, &c, "block_tile", bt2, 2) && knob_to(&s, &c, "warp_tile", wt2, 2));
    CHECK(knob_to(&s, &c, "tile_k", &bk2, 1) && knob_to(&s, &c, "stages", &st2, 1));
    CHECK(knob_to(&s, &c, "split_k", &one, 1));
    if (tc_cuda_valid(&ws[i], &t, &s, &c, NULL, 0) == TH_OK) {
      measure_ok(&ws[i], &t, &s, &c);
      dyns++;
    }
    total += 5;
  }
  fprintf(stderr, "%d tf32 conv candidates (%d split-k, %d with dynamic shared memory) matched\n",
          total + dyns, splits, dyns);
  CHECK(splits == (int)(sizeof ws / sizeof ws[0]) && dyns > 0);
  return 0;
}
