/* CUDA backend without a GPU: every GPU template, over its fallback and 8 random valid configs on edge
 * shapes (odd sizes, stride 2, 1x1, 7x7, depthwise, small and large batch), generates CUDA C that NVRTC
 * compiles for sm_80 and sm_90 (one program per template per arch); invalid configs are rejected by the
 * validity check before any NVRTC call; the printer emits the GPU constructs; the device query and a
 * CUDA bundle's model.so report "no CUDA device" cleanly on a machine without one. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "tc_cuda.h"
#include "th_test.h"
#include "th_util.h"

static tc_workload wl_conv(int n, int c, int h, int w, int oc, int k, int s, int p, int epi) {
  tc_workload wl;
  memset(&wl, 0, sizeof wl);
  wl.kernel = TC_KERNEL_CONV2D;
  wl.n = n, wl.c = c, wl.h = h, wl.w = w, wl.oc = oc, wl.kh = wl.kw = k, wl.sh = wl.sw = s;
  wl.pt = wl.pl = wl.pb = wl.pr = p;
  wl.oh = (h + 2 * p - k) / s + 1, wl.ow = (w + 2 * p - k) / s + 1;
  wl.in_cb = wl.out_cb = 1;
  wl.epilogue = epi;
  wl.clip_min = 0, wl.clip_max = 6;
  return wl;
}

static tc_workload wl_simple(tc_kernel kern, int n, int c, int h, int w, int oc, int k, int s, int p) {
  tc_workload wl = wl_conv(n, c, h, w, oc, k, s, p, 0);
  wl.kernel = kern;
  if (kern == TC_KERNEL_GLOBAL_AVGPOOL) wl.kh = h, wl.kw = w, wl.oh = wl.ow = 1, wl.pt = wl.pl = wl.pb = wl.pr = 0;
  if (kern == TC_KERNEL_DENSE || kern == TC_KERNEL_SOFTMAX) {
    wl.h = wl.w = wl.oh = wl.ow = wl.kh = wl.kw = wl.sh = wl.sw = 1;
    wl.pt = wl.pl = wl.pb = wl.pr = 0;
  }
  if (kern == TC_KERNEL_SOFTMAX || kern == TC_KERNEL_ELTWISE) wl.oc = c, wl.oh = wl.h, wl.ow = wl.w;
  return wl;
}

/* Fallback + up to `nrand` random valid configs of each workload into one translation unit, compiled for
 * sm_80 and sm_90. Returns the number of kernels. */
static int compile_family(const char *name, const tc_workload *wls, int nwl, int nrand) {
  tc_cuda_target t80, t90;
  CHECK(tc_cuda_target_init(&t80, "sm_80") == TH_OK);
  CHECK(tc_cuda_target_init(&t90, "sm_90") == TH_OK);
  th_buf src;
  th_buf_init(&src, (size_t)256 << 20);
  CHECK(tc_cuda_prelude(&src) == TH_OK);
  int nk = 0;
  uint64_t seed = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < nwl; i++) {
    tc_space s;
    th_status rc = tc_cuda_space(&wls[i], &t90, &s);
    if (rc != TH_OK) fprintf(stderr, "%s: workload %d: space %s\n", name, i, th_status_str(rc));
    CHECK(rc == TH_OK);
    int64_t size = tc_space_size(&s);
    CHECK(size >= 1);
    tc_config cfg;
    CHECK(tc_cuda_fallback(&wls[i], &t90, &s, &cfg) == TH_OK);
    CHECK(tc_cuda_valid(&wls[i], &t90, &s, &cfg, NULL, 0) == TH_OK);
    int done = 0;
    for (int tries = 0; done <= nrand && tries < 4000; tries++) {
      if (done > 0) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        tc_space_get(&s, (int64_t)((seed >> 17) % (uint64_t)size), &cfg);
        if (tc_cuda_valid(&wls[i], &t90, &s, &cfg, NULL, 0) != TH_OK) continue;
      }
      char fn[32], err[1024] = "";
      snprintf(fn, sizeof fn, "k%d", nk);
      tc_cuda_launch l;
      rc = tc_cuda_kernel_source(&wls[i], &cfg, &t90, fn, &src, &l, err, sizeof err);
      if (rc != TH_OK) fprintf(stderr, "%s: %s\n", name, err);
      CHECK(rc == TH_OK);
      CHECK(l.block[0] * l.block[1] * l.block[2] <= 1024);
      CHECK(l.shared_bytes <= 48 * 1024);
      nk++;
      done++;
    }
  }
  const char *dump = getenv("TC_CUDA_DUMP");
  if (dump) th_write_file_atomic(dump, src.data, src.len);
  if (getenv("TC_CUDA_NO_NVRTC")) {
    th_buf_free(&src);
    return nk;
  }
  const tc_cuda_target *ts[2] = {&t80, &t90};
  for (int a = 0; a < 2; a++) {
    char *cubin = NULL, *ptx = NULL;
    size_t cl = 0, pl = 0;
    char err[8192] = "";
    double t0 = th_now_mono();
    th_status rc = tc_nvrtc_compile(src.data, name, ts[a], &cubin, &cl, &ptx, &pl, err, sizeof err);
    if (rc != TH_OK) fprintf(stderr, "%s\n", err);
    CHECK(rc == TH_OK);
    CHECK(cl > 0 && pl > 0);
    CHECK(strstr(ptx, ts[a]->arch) != NULL);
    fprintf(stderr, "%s: %d kernels, %zu bytes of CUDA C, %s: %.2f s (%.1f ms/kernel), cubin %zu bytes\n", name, nk,
            src.len, ts[a]->arch, th_now_mono() - t0, 1e3 * (th_now_mono() - t0) / nk, cl);
    free(cubin);
    free(ptx);
  }
  th_buf_free(&src);
  return nk;
}

TH_TEST(nvrtc_conv2d) {
  tc_workload w[] = {
      wl_conv(1, 3, 224, 224, 64, 7, 2, 3, TC_EPI_BIAS | TC_EPI_RELU), /* resnet stem, 7x7 stride 2 */
      wl_conv(1, 64, 56, 56, 64, 3, 1, 1, TC_EPI_BIAS | TC_EPI_RESIDUAL | TC_EPI_RELU),
      wl_conv(2, 17, 13, 11, 5, 3, 2, 1, TC_EPI_BIAS), /* odd sizes, stride 2 */
      wl_conv(100, 256, 14, 14, 512, 1, 2, 0, TC_EPI_BIAS), /* 1x1 stride 2, batch 100 */
      wl_conv(1, 32, 7, 7, 96, 1, 1, 0, TC_EPI_CLIP),
  };
  CHECK(compile_family("conv2d", w, 5, 8) >= 5 * 9);
  return 0;
}

TH_TEST(nvrtc_depthwise) {
  tc_workload w[] = {wl_simple(TC_KERNEL_DEPTHWISE, 1, 32, 112, 112, 32, 3, 1, 1),
                     wl_simple(TC_KERNEL_DEPTHWISE, 3, 7, 15, 9, 7, 3, 2, 1),
                     wl_simple(TC_KERNEL_DEPTHWISE, 100, 960, 7, 7, 960, 5, 1, 2)};
  w[0].epilogue = TC_EPI_BIAS | TC_EPI_CLIP;
  w[2].epilogue = TC_EPI_BIAS | TC_EPI_RELU;
  CHECK(compile_family("depthwise", w, 3, 8) >= 27);
  return 0;
}

TH_TEST(nvrtc_dense) {
  tc_workload w[] = {wl_simple(TC_KERNEL_DENSE, 1, 512, 1, 1, 1000, 1, 1, 0),
                     wl_simple(TC_KERNEL_DENSE, 3, 25, 1, 1, 7, 1, 1, 0), /* K % 4 != 0 */
                     wl_simple(TC_KERNEL_DENSE, 100, 4096, 1, 1, 1000, 1, 1, 0), /* large batch */
                     wl_simple(TC_KERNEL_DENSE, 33, 9, 1, 1, 13, 1, 1, 0)};
  w[0].epilogue = TC_EPI_BIAS;
  w[2].epilogue = TC_EPI_BIAS | TC_EPI_RELU;
  CHECK(compile_family("dense", w, 4, 8) >= 36);
  return 0;
}

TH_TEST(nvrtc_pool) {
  tc_workload w[] = {wl_simple(TC_KERNEL_MAXPOOL, 1, 64, 112, 112, 64, 3, 2, 1),
                     wl_simple(TC_KERNEL_AVGPOOL, 2, 5, 9, 9, 5, 3, 1, 1),
                     wl_simple(TC_KERNEL_AVGPOOL, 100, 512, 14, 14, 512, 2, 2, 0),
                     wl_simple(TC_KERNEL_GLOBAL_AVGPOOL, 100, 2048, 7, 7, 2048, 7, 1, 0),
                     wl_simple(TC_KERNEL_GLOBAL_AVGPOOL, 1, 13, 5, 3, 13, 5, 1, 0)};
  w[1].count_include_pad = 1;
  CHECK(compile_family("pool", w, 5, 8) >= 45);
  return 0;
}

TH_TEST(nvrtc_eltwise_softmax_concat) {
  tc_workload w[] = {wl_simple(TC_KERNEL_ELTWISE, 1, 64, 56, 56, 64, 1, 1, 0),
                     wl_simple(TC_KERNEL_ELTWISE, 3, 5, 7, 3, 5, 1, 1, 0),
                     wl_simple(TC_KERNEL_SOFTMAX, 1, 1000, 1, 1, 1000, 1, 1, 0),
                     wl_simple(TC_KERNEL_SOFTMAX, 100, 1000, 1, 1, 1000, 1, 1, 0),
                     wl_simple(TC_KERNEL_SOFTMAX, 2, 7, 1, 1, 7, 1, 1, 0),
                     wl_simple(TC_KERNEL_CONCAT, 2, 48, 13, 13, 48, 1, 1, 0)};
  w[0].epilogue = TC_EPI_RELU;
  w[1].epilogue = TC_EPI_CLIP;
  w[5].oc = 128;
  w[5].c_offset = 64;
  CHECK(compile_family("eltwise_softmax_concat", w, 6, 8) >= 54);
  return 0;
}

/* Configs that break a device limit fail tc_cuda_valid with a reason, and the lowering refuses them, so
 * NVRTC never sees them. */
TH_TEST(invalid_configs_rejected) {
  tc_cuda_target t;
  CHECK(tc_cuda_target_init(&t, "sm_90") == TH_OK);
  CHECK(tc_cuda_target_init(&t, "sm_52") == TH_ERR_INVALID);
  CHECK(tc_cuda_target_init(&t, "gfx90a") == TH_ERR_INVALID);
  CHECK(tc_cuda_target_init(&t, NULL) == TH_OK && strcmp(t.arch, "sm_90") == 0);
  tc_workload wl = wl_conv(1, 512, 56, 56, 512, 3, 1, 1, TC_EPI_BIAS);
  tc_space s;
  CHECK(tc_cuda_space(&wl, &t, &s) == TH_OK);
  int64_t size = tc_space_size(&s);
  int invalid = 0, valid = 0, why_threads = 0, why_shared = 0;
  for (int64_t i = 0; i < size && i < 2000000; i += 7919) {
    tc_config c;
    tc_space_get(&s, i, &c);
    char why[256];
    th_status rc = tc_cuda_valid(&wl, &t, &s, &c, why, sizeof why);
    if (rc == TH_OK) {
      valid++;
      continue;
    }
    CHECK(rc == TH_ERR_INVALID && why[0]);
    invalid++;
    why_threads += strstr(why, "threads") != NULL;
    why_shared += strstr(why, "shared") != NULL;
    th_arena *a = th_arena_new(4096);
    tc_cuda_lowered k;
    CHECK(tc_cuda_lower(&wl, &c, &t, a, &k) == TH_ERR_INVALID);
    th_buf b;
    th_buf_init(&b, 1 << 20);
    tc_cuda_launch l;
    char err[512] = "";
    CHECK(tc_cuda_kernel_source(&wl, &c, &t, "k", &b, &l, err, sizeof err) == TH_ERR_INVALID);
    CHECK(strstr(err, "conv2d") != NULL);
    CHECK(b.len == 0);
    th_buf_free(&b);
    th_arena_free(a);
  }
  fprintf(stderr, "conv2d 512x56x56 3x3: %lld configs, sampled %d valid, %d invalid (%d threads, %d shared)\n",
          (long long)size, valid, invalid, why_threads, why_shared);
  CHECK(invalid > 0 && valid > 0 && why_threads > 0 && why_shared > 0);
  /* a hand-made config over the per-dimension limit: thread z (tile_f[2]) of 64 with 32 y threads */
  tc_config c;
  CHECK(tc_cuda_fallback(&wl, &t, &s, &c) == TH_OK);
  int kf = tc_space_knob(&s, "tile_f");
  for (int v = 0; v < s.knobs[kf].nvalues; v++)
    if (s.knobs[kf].values[v][2] == 64) c.idx[kf] = v;
  int ky = tc_space_knob(&s, "tile_y");
  for (int v = 0; v < s.knobs[ky].nvalues; v++)
    if (s.knobs[ky].values[v][2] >= 28) c.idx[ky] = v;
  CHECK(tc_cuda_valid(&wl, &t, &s, &c, NULL, 0) == TH_ERR_INVALID);
  /* float4 on a K that is not a multiple of 4 */
  tc_workload d = wl_simple(TC_KERNEL_DENSE, 1, 25, 1, 1, 7, 1, 1, 0);
  CHECK(tc_cuda_space(&d, &t, &s) == TH_OK);
  CHECK(tc_cuda_fallback(&d, &t, &s, &c) == TH_OK);
  c.idx[tc_space_knob(&s, "vec")] = 1;
  char why[256];
  CHECK(tc_cuda_valid(&d, &t, &s, &c, why, sizeof why) == TH_ERR_INVALID);
  CHECK(strstr(why, "float4") != NULL);
  /* channel-blocked workloads have no GPU template */
  wl.in_cb = 16;
  CHECK(tc_cuda_space(&wl, &t, &s) != TH_OK);
  return 0;
}

/* The printed CUDA C carries the GPU constructs the templates asked for. */
TH_TEST(codegen_constructs) {
  tc_cuda_target t;
  CHECK(tc_cuda_target_init(&t, "sm_90") == TH_OK);
  tc_workload wl = wl_conv(1, 64, 56, 56, 64, 3, 1, 1, TC_EPI_BIAS | TC_EPI_RELU);
  tc_space s;
  tc_config c;
  CHECK(tc_cuda_space(&wl, &t, &s) == TH_OK);
  CHECK(tc_cuda_fallback(&wl, &t, &s, &c) == TH_OK);
  th_buf b;
  th_buf_init(&b, 1 << 24);
  tc_cuda_launch l;
  CHECK(tc_cuda_kernel_source(&wl, &c, &t, "conv", &b, &l, NULL, 0) == TH_OK);
  CHECK(strstr(b.data, "extern \"C\" __global__ void __launch_bounds__") != NULL);
  CHECK(strstr(b.data, "blockIdx.z") && strstr(b.data, "threadIdx.x") && strstr(b.data, "__shared__"));
  CHECK(strstr(b.data, "__syncthreads();") != NULL);
  CHECK(strstr(b.data, "#pragma unroll") != NULL);
  CHECK(l.grid[2] >= 1 && l.block[0] >= 1 && l.shared_bytes > 0);
  /* explicit unrolling replicates the bodies instead of a pragma */
  int ku = tc_space_knob(&s, "unroll_explicit");
  c.idx[ku] = 1;
  th_buf e;
  th_buf_init(&e, 1 << 24);
  CHECK(tc_cuda_kernel_source(&wl, &c, &t, "conv", &e, &l, NULL, 0) == TH_OK);
  CHECK(e.len > b.len);
  th_buf_free(&e);
  /* element-wise with float4 */
  tc_workload el = wl_simple(TC_KERNEL_ELTWISE, 1, 64, 56, 56, 64, 1, 1, 0);
  el.epilogue = TC_EPI_RELU;
  CHECK(tc_cuda_space(&el, &t, &s) == TH_OK);
  CHECK(tc_cuda_fallback(&el, &t, &s, &c) == TH_OK);
  CHECK(tc_config_int(&s, &c, "vec", 0) == 4);
  b.len = 0;
  CHECK(tc_cuda_kernel_source(&el, &c, &t, "add", &b, &l, NULL, 0) == TH_OK);
  CHECK(strstr(b.data, "*(const float4 *)(") != NULL && strstr(b.data, "*(float4 *)(") != NULL);
  th_buf_free(&b);
  return 0;
}

TH_TEST(device_query) {
  tc_cuda_device d;
  char err[512] = "";
  th_status rc = tc_cuda_device_query(&d, err, sizeof err);
  if (rc == TH_OK) {
    fprintf(stderr, "device: %s %s, %lld MiB\n", d.name, d.arch, (long long)(d.total_mem >> 20));
    CHECK(strncmp(d.arch, "sm_", 3) == 0 && d.total_mem > 0);
    return 0;
  }
  fprintf(stderr, "%s\n", err);
  CHECK(rc == TH_ERR_UNSUPPORTED);
  CHECK(strstr(err, "no CUDA device") != NULL);
  return 0;
}
