/* GPU tests (label gpu). Every GPU template, at its fallback and random valid configs on edge
 * shapes, runs through tc_cuda_measure, which checks it against the CPU reference
 * (tc_cuda_ref_kernel) at relative 1e-4; the tf32 GEMMs (dense, batch_matmul on tensor cores) run
 * on the device against the fp32 reference within the tf32 tolerance of
 * compiler_cuda.emulated_tf32_gemm; every zoo network's cuda bundle runs (th_model_run_io, and
 * th_model_run_device for one-input networks) and matches the reference interpreter (compiler/ref/)
 * within 1e-4 of the largest output: at batch 1 at its real input size (224, 299; vit at 224, bert
 * at sequence 128) and at batch 2 at a reduced one where the network allows it. A case exits 77
 * only without a device; a device that errors fails it (test_cuda_gpu_gate.h). */
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
#include "test_cuda_gpu_gate.h"
#include "test_cuda_tf32_check.h"
#include "test_cuda_tensor_wl.h"
#include "th_test.h"
#include "th_util.h"
#include "zoo.h"

/* The gate of every case (test_cuda_gpu_gate.h): GPU_GATE_RUN only when the driver counts a device
 * and tunehub's own query of it succeeds; a skip only without a device; a device that errors fails.
 */
static int gpu_device(void) {
  char why[512] = "";
  int v = gpu_gate(why, sizeof why);
  if (v != GPU_GATE_RUN) {
    fprintf(stderr, "%s: %s\n", v == GPU_GATE_SKIP ? "skipped" : "FAILED", why);
    return v;
  }
  tc_cuda_device d;
  if (tc_cuda_device_query(&d, why, sizeof why) != TH_OK) {
    fprintf(stderr, "FAILED: the driver counts a device but tunehub's query of it fails: %s\n",
            why);
    return GPU_GATE_FAIL;
  }
  fprintf(stderr, "device: %s (%s)\n", d.name, d.arch);
  return GPU_GATE_RUN;
}

#define GPU_REQUIRE()                          \
  do {                                         \
    int gpu__v = gpu_device();                 \
    if (gpu__v != GPU_GATE_RUN) return gpu__v; \
  } while (0)

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
  GPU_REQUIRE();
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
  GPU_REQUIRE();
  tc_cuda_target t;
  device_target(&t);
  static const tc_kernel ks[] = {TC_KERNEL_BATCH_MATMUL, TC_KERNEL_DENSE, TC_KERNEL_LAYER_NORM,
                                 TC_KERNEL_SOFTMAX_ROWS, TC_KERNEL_UNARY, TC_KERNEL_EMBEDDING,
                                 TC_KERNEL_COPY,         TC_KERNEL_BINARY,      TC_KERNEL_GATHER,
                                 TC_KERNEL_SCATTER};
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

/* Dense and batch_matmul at precision tf32 through the tensor-core template (mma.sync) on the
 * device: compiler_cuda.emulated_tf32_gemm's workloads, each at its fallback and 4 random valid
 * configs, against the fp32 reference within the tf32 tolerance. Needs sm_80 or newer (an older
 * device fails: the space is unsupported there). */
TH_TEST(tf32_gemm_vs_reference) {
  GPU_REQUIRE();
  tc_cuda_target t;
  device_target(&t);
  tc_workload w[TW_TF32_GEMM_MAX];
  int n = tw_tf32_gemm_set(w), total = 0;
  uint64_t seed = 2525;
  double worst = 0;
  for (int i = 0; i < n; i++) {
    tc_space s;
    tc_config c;
    CHECK(tc_cuda_space(&w[i], &t, &s) == TH_OK);
    CHECK(tc_space_knob(&s, "warp_tile") >= 0); /* the tensor-core template, not the FMA GEMM */
    CHECK(tc_cuda_fallback(&w[i], &t, &s, &c) == TH_OK);
    int64_t size = tc_space_size(&s);
    for (int done = 0, tries = 0; done < 5 && tries < 5000; tries++) {
      if (done > 0) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        tc_space_get(&s, (int64_t)((seed >> 17) % (uint64_t)size), &c);
        if (tc_cuda_valid(&w[i], &t, &s, &c, NULL, 0) != TH_OK) continue;
      }
      worst = fmax(worst, tf32_on_device(&w[i], &c, &t, 99 + (uint64_t)total, NULL, NULL));
      done++;
      total++;
    }
  }
  fprintf(stderr,
          "%d tf32 candidates matched the fp32 reference; largest error %.3g of the scale\n", total,
          worst);
  CHECK(total == n * 5);
  return 0;
}

/* Every kernel of ViT-B/16 and BERT-base at batch 1 at its fallback, on the device's own limits. */
TH_TEST(transformer_fallbacks_vs_reference) {
  GPU_REQUIRE();
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
  GPU_REQUIRE();
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

/* Seeded values for input k of g: images in [-1, 1); bert's int64 inputs as the emulator's bert
 * case feeds them (ids across the vocabulary, two token types, odd rows padding their last
 * quarter). */
static void net_fill(const tc_graph *g, int k, void *buf) {
  const tc_node *in = &g->nodes[g->inputs[k]];
  int64_t n = tc_tensor_numel(&in->out);
  if (in->out.dtype != TC_DTYPE_I64) {
    float *x = buf;
    for (int64_t i = 0; i < n; i++) x[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
    return;
  }
  int64_t *v = buf, seq = in->out.shape[in->out.ndim - 1];
  for (int64_t i = 0; i < n; i++) {
    int64_t row = i / seq, pos = i % seq;
    if (strcmp(in->name, "input_ids") == 0)
      v[i] = (i * 7919 + 101) % 30522;
    else if (strcmp(in->name, "token_type_ids") == 0)
      v[i] = pos >= seq / 2;
    else
      v[i] = !(row % 2 == 1 && pos >= seq - seq / 4); /* attention_mask */
  }
}

/* net's cuda bundle at batch and input h x w (0: the zoo's size) built, run with th_model_run_io on
 * the device and compared, output by output, with the reference interpreter within 1e-4 of the
 * largest reference value (a reference that is all zeros fails too); for a one-input network the
 * device-pointer entry point must give the same bytes. */
static void net_vs_ref(const char *net, int batch, int hw) {
  const tc_zoo_entry *z = tc_zoo_find(net);
  CHECK(z != NULL);
  int h = hw ? hw : z->h, w = hw ? hw : z->w;
  char dir[] = "/tmp/tc-cuda-gpu-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char so[256];
  snprintf(so, sizeof so, "%s/model.so", dir);
  tc_build_opts o;
  memset(&o, 0, sizeof o);
  o.framework = "cuda";
  o.network = net;
  o.batch = batch;
  o.input_h = h;
  o.input_w = w;
  char err[4096] = "";
  double t0 = th_now_mono();
  th_status rc = tc_build_bundle(&o, NULL, so, NULL, err, sizeof err);
  if (rc != TH_OK) fprintf(stderr, "%s: %s\n", net, err);
  CHECK(rc == TH_OK);
  double t_build = th_now_mono() - t0;
  tc_graph *g = NULL;
  CHECK(tc_zoo_build(net, batch, h, w, 1, &g, err, sizeof err) == TH_OK);
  th_buf params;
  th_buf_init(&params, (size_t)4 << 30);
  CHECK(tc_params_write(g, &params) == TH_OK);
  int nin = g->ninputs, nout = g->noutputs;
  void *ins[TC_MAX_IO] = {0};
  float *ref[TC_MAX_IO] = {0}, *y[TC_MAX_IO] = {0};
  int64_t nel[TC_MAX_IO];
  for (int k = 0; k < nin; k++) {
    const tc_node *in = &g->nodes[g->inputs[k]];
    ins[k] = malloc((size_t)tc_tensor_numel(&in->out) * tc_dtype_size(in->out.dtype));
    CHECK(ins[k] != NULL);
    net_fill(g, k, ins[k]);
  }
  for (int k = 0; k < nout; k++) {
    nel[k] = tc_tensor_numel(&g->nodes[g->outputs[k]].out);
    ref[k] = malloc((size_t)nel[k] * 4);
    y[k] = calloc((size_t)nel[k], 4);
    CHECK(ref[k] && y[k]);
  }
  t0 = th_now_mono();
  CHECK(tc_ref_run_io(g, (const void *const *)ins, (void *const *)ref, err, sizeof err) == TH_OK);
  double t_ref = th_now_mono() - t0;
  void *h_so = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  CHECK(h_so != NULL);
  int (*create)(const void *, size_t, void **) =
      (int (*)(const void *, size_t, void **))dlsym(h_so, "th_model_create");
  int (*runio)(void *, const void *const *, void *const *) =
      (int (*)(void *, const void *const *, void *const *))dlsym(h_so, "th_model_run_io");
  int (*rund)(void *, const void *, void *, void *) =
      (int (*)(void *, const void *, void *, void *))dlsym(h_so, "th_model_run_device");
  void (*fr)(void *) = (void (*)(void *))dlsym(h_so, "th_model_free");
  const char *(*lasterr)(void) = (const char *(*)(void))dlsym(h_so, "th_model_last_error");
  CHECK(create && runio && rund && fr && lasterr);
  void *m = NULL;
  if (create(params.data, params.len, &m) != 0) fprintf(stderr, "create: %s\n", lasterr());
  CHECK(m != NULL);
  int rr = runio(m, (const void *const *)ins, (void *const *)y);
  if (rr != 0) fprintf(stderr, "run_io: %s\n", lasterr());
  CHECK(rr == 0);
  for (int k = 0; k < nout; k++) {
    double maxref = 0, maxdiff = 0;
    for (int64_t i = 0; i < nel[k]; i++) maxref = fmax(maxref, fabs(ref[k][i]));
    for (int64_t i = 0; i < nel[k]; i++) maxdiff = fmax(maxdiff, fabs((double)y[k][i] - ref[k][i]));
    fprintf(
        stderr,
        "%s batch %d at %dx%d, output %d: max |gpu - ref| = %.3g of max |ref| %.3g (build %.1f s, "
        "reference %.1f s)\n",
        net, batch, h, w, k, maxdiff, maxref, t_build, t_ref);
    CHECK(maxref > 0);
    CHECK(maxdiff <= 1e-4 * maxref);
  }
  if (nin == 1 && nout == 1) { /* the device-pointer entry point gives the same bytes */
    const tc_cu *cu = NULL;
    CHECK(tc__cu_get(&cu, err, sizeof err) == TH_OK);
    size_t in_bytes = (size_t)tc_tensor_numel(&g->nodes[g->inputs[0]].out) * 4,
           out_bytes = (size_t)nel[0] * 4;
    float *y2 = malloc(out_bytes);
    CHECK(y2 != NULL);
    tc_cu_ptr din = 0, dout = 0;
    CHECK(cu->MemAlloc(&din, in_bytes) == 0 && cu->MemAlloc(&dout, out_bytes) == 0);
    CHECK(cu->MemcpyHtoD(din, ins[0], in_bytes) == 0);
    CHECK(rund(m, (const void *)(uintptr_t)din, (void *)(uintptr_t)dout, NULL) == 0);
    CHECK(runio(m, (const void *const *)ins, (void *const *)y) ==
          0); /* same stream: after the device run */
    CHECK(cu->MemcpyDtoH(y2, dout, out_bytes) == 0);
    CHECK(memcmp(y[0], y2, out_bytes) == 0);
    cu->MemFree(din);
    cu->MemFree(dout);
    free(y2);
  }
  fr(m);
  dlclose(h_so);
  unlink(so);
  rmdir(dir);
  for (int k = 0; k < nin; k++) free(ins[k]);
  for (int k = 0; k < nout; k++) {
    free(ref[k]);
    free(y[k]);
  }
  th_buf_free(&params);
  tc_graph_free(g);
}

/* Batch 1 at the network's real input size (224, 299; bert's sequence 128), and batch 2 at a
 * reduced size where the architecture allows one (the batch index of every kernel; vgg's adaptive
 * pool keeps 224). */
static int gpu_net(const char *net) {
  GPU_REQUIRE();
  const tc_zoo_entry *z = tc_zoo_find(net);
  CHECK(z != NULL);
  int small = z->min_hw > 64 ? z->min_hw : 64;
  if (strncmp(net, "vgg", 3) == 0) small = z->h;
  net_vs_ref(net, 1, 0);
  net_vs_ref(net, 2, small);
  return 0;
}

/* The transformers at their real sizes only (ViT-B/16 at 224 has no smaller form here; bert at
 * sequence 128), batch 1 and 2: bert's second row pads, so the attention mask matters. */
static int gpu_transformer(const char *net) {
  GPU_REQUIRE();
  net_vs_ref(net, 1, 0);
  net_vs_ref(net, 2, 0);
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
TH_TEST(vit) {
  return gpu_transformer("vit");
}
TH_TEST(bert) {
  return gpu_transformer("bert");
}

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
 * reference at the tf32 tolerance (TC_CUDA_TF32_ATOL: 1e-3 of the scale plus 1e-3 relative). */
TH_TEST(tf32_conv2d_vs_reference) {
  GPU_REQUIRE();
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
