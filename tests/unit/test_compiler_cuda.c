/* CUDA backend without a GPU: every GPU template, over its fallback and 8 random valid configs on edge
 * shapes (odd sizes, stride 2, 1x1, 7x7, depthwise, small and large batch), generates CUDA C that NVRTC
 * compiles for sm_80 and sm_90 (one program per template per arch); invalid configs are rejected by the
 * validity check before any NVRTC call; the printer emits the GPU constructs; the device query and a
 * CUDA bundle's model.so report "no CUDA device" cleanly on a machine without one. */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ops.h"
#include "tc.h"
#include "tc_cuda.h"
#include "test_cuda_emu_tc.h"
#include "test_cuda_tensor_wl.h"
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

/* Every CNN family has a GPU template in plain NCHW, and tc_cuda_supports_op agrees with tc_cuda_space
 * (the tensor families have their own shapes; their tests build their own workloads). */
TH_TEST(supports_op_matches_space) {
  tc_cuda_target t;
  CHECK(tc_cuda_target_init(&t, "sm_90") == TH_OK);
  for (int k = 0; k <= TC_KERNEL_LAYOUT; k++) {
    tc_workload wl = wl_simple((tc_kernel)k, 2, 8, 9, 9, 8, 3, 1, 1);
    if (k == TC_KERNEL_CONCAT) wl.oc = 16, wl.c_offset = 8, wl.oh = wl.h, wl.ow = wl.w;
    if (k == TC_KERNEL_LAYOUT || k == TC_KERNEL_CONCAT) wl.kh = wl.kw = 1, wl.pt = wl.pl = wl.pb = wl.pr = 0;
    tc_space s;
    th_status rc = tc_cuda_space(&wl, &t, &s);
    if (rc != TH_OK) fprintf(stderr, "%s: %s\n", tc_kernel_name(wl.kernel), th_status_str(rc));
    CHECK(rc == TH_OK && tc_cuda_supports_op(&wl) == 1);
    wl.in_cb = wl.out_cb = 4; /* channel-blocked: no GPU template */
    CHECK(tc_cuda_supports_op(&wl) == 0 && tc_cuda_space(&wl, &t, &s) != TH_OK);
  }
  tc_workload bad = wl_conv(1, 8, 9, 9, 8, 3, 1, 1, 0);
  bad.oh = 99; /* inconsistent shapes */
  CHECK(tc_cuda_supports_op(&bad) == 0 && tc_cuda_supports_op(NULL) == 0);
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
  int kstep = tc_space_knob(&s, "auto_unroll_max_step");
  CHECK(kstep >= 0);
  c.idx[kstep] = 1; /* 512: the inner tile loops get #pragma unroll */
  CHECK(tc_config_int(&s, &c, "auto_unroll_max_step", 0) == 512);
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

/* What the environment says, asked of the driver directly (not through compiler/cuda/): how many
 * devices libcuda.so.1 reports, 0 when it is missing, lacks the entry points or fails cuInit. The
 * fake libcuda of compiler_cuda_emu reports one. */
static int driver_device_count(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) return 0;
  int (*init)(unsigned) = NULL;
  int (*count)(int *) = NULL;
  *(void **)&init = dlsym(h, "cuInit");
  *(void **)&count = dlsym(h, "cuDeviceGetCount");
  int n = 0;
  if (!init || !count || init(0) != 0 || count(&n) != 0) n = 0;
  dlclose(h);
  return n;
}

/* The query must match the environment: a device where the driver reports one (its name and sm_XY
 * arch filled in), else TH_ERR_UNSUPPORTED with a "no CUDA device" message; either wrong status
 * fails. */
TH_TEST(device_query) {
  int expect = driver_device_count();
  tc_cuda_device d;
  char err[512] = "";
  th_status rc = tc_cuda_device_query(&d, err, sizeof err);
  fprintf(stderr, "driver reports %d device(s); query: %s %s\n", expect, th_status_str(rc), err);
  if (expect > 0) {
    CHECK(rc == TH_OK);
    fprintf(stderr, "device: %s %s, %lld MiB\n", d.name, d.arch, (long long)(d.total_mem >> 20));
    CHECK(d.name[0] != '\0');
    CHECK(strncmp(d.arch, "sm_", 3) == 0 && d.arch[3] >= '1' && d.arch[3] <= '9');
    CHECK(d.major > 0 && d.total_mem > 0 && d.multiprocessors > 0);
    /* its limits, which a target for its arch takes over */
    fprintf(stderr,
            "limits: %d threads, %d bytes of shared memory per block (%d opt-in, %d per SM)\n",
            d.max_threads, d.max_shared_bytes, d.max_shared_optin, d.max_shared_per_sm);
    CHECK(d.max_threads >= 1024 && d.max_shared_bytes >= 48 * 1024 &&
          d.max_regs_per_block >= 65536);
    tc_cuda_target t;
    CHECK(tc_cuda_target_init(&t, d.arch) == TH_OK);
    tc_cuda_target_use_device(&t, &d);
    CHECK(t.max_shared_bytes == d.max_shared_bytes && strncmp(t.limits_from, "device ", 7) == 0);
    return 0;
  }
  CHECK(rc == TH_ERR_UNSUPPORTED);
  CHECK(strstr(err, "no CUDA device") != NULL);
  return 0;
}

/* ---- the generated CUDA C run on the CPU -------------------------------------------------------------- */

/* A host emulation of the CUDA subset the codegen prints: blocks run one after another, the threads of a
 * block are pthreads meeting at a barrier for __syncthreads, __shared__ arrays are function statics
 * (shared by the block's threads), blockIdx is global and threadIdx thread-local. It lets this machine,
 * which has no GPU, run every template's actual CUDA C against tc_cuda_ref_kernel. */
static const char emu_header[] =
    "#include <cmath>\n#include <cstring>\n#include <pthread.h>\n"
    "struct th_dim3 { unsigned x, y, z; };\n"
    "static th_dim3 blockIdx;\nstatic thread_local th_dim3 threadIdx;\nstatic pthread_barrier_t th_bar;\n"
    "struct float4 { float x, y, z, w; };\n"
    "static inline float4 make_float4(float a, float b, float c, float d) { float4 v = {a, b, c, d}; return v; }\n"
    "static inline float __int_as_float(unsigned i) { float f; std::memcpy(&f, &i, 4); return f; }\n"
    "#define __global__\n#define __device__\n#define __forceinline__ inline\n#define __launch_bounds__(x)\n"
    "#define __shared__ static\n#define __align__(n) __attribute__((aligned(n)))\n"
    "#define __syncthreads() pthread_barrier_wait(&th_bar)\n"
    "#include <math.h>\n"
    "static th_dim3 blockDim;\nstatic pthread_barrier_t th_wbar[32];\n"
    "#define TH_EMU_TID() ((int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)))\n"
    "#define TH_EMU_WARP_SYNC() pthread_barrier_wait(&th_wbar[TH_EMU_TID() / 32])\n" TH_EMU_TC_SRC;

typedef struct emu_kernel {
  tc_workload wl;
  tc_cuda_launch l;
} emu_kernel;

/* The launcher: th_call<k> passes the argument array to kernel k (an integer buffer's parameter is
 * a `long long *`, so each pointer converts to what the kernel takes); a split-k kernel takes the
 * scratch buffer after them, and th_post<k> runs its second kernel (th_emu_run_post). */
static void emu_launcher(th_buf *b, int nk, const emu_kernel *ks) {
  th_buf_appendf(
      b,
      "typedef void (*th_fn)(float **);\nstruct th_targ { th_fn fn; float **a; unsigned x, y, z; "
      "};\n"
      "struct th_arg { void *p; template <class T> operator T *() const { return (T *)p; } };\n"
      "static void *th_thread(void *p) { th_targ *t = (th_targ *)p; threadIdx.x = t->x; "
      "threadIdx.y = t->y; threadIdx.z = t->z; t->fn(t->a); return 0; }\n");
  for (int k = 0; k < nk; k++) {
    int n = tc_op_nargs(ks[k].wl.kernel) + (ks[k].l.scratch_floats > 0);
    for (int post = 0; post <= (ks[k].l.scratch_floats > 0); post++) {
      th_buf_appendf(b, "static void th_%s%d(float **a) { k%d%s(", post ? "post" : "call", k, k,
                     post ? "_r" : "");
      for (int i = 0; i < n; i++) th_buf_appendf(b, "%sth_arg{a[%d]}", i ? ", " : "", i);
      th_buf_appendf(b, "); }\n");
    }
  }
  th_buf_appendf(b, "static th_fn th_fns[] = {");
  for (int k = 0; k < nk; k++) th_buf_appendf(b, "%sth_call%d", k ? ", " : "", k);
  th_buf_appendf(b, "};\nstatic th_fn th_posts[] = {");
  for (int k = 0; k < nk; k++)
    if (ks[k].l.scratch_floats > 0) th_buf_appendf(b, "%sth_post%d", k ? ", " : "", k);
    else th_buf_appendf(b, "%s0", k ? ", " : "");
  th_buf_appendf(b, "};\n"
                    "static int th_run(th_fn fn, float **a, const long long *grid, const int *block) {\n"
                    "  int T = block[0] * block[1] * block[2];\n"
                    "  pthread_t *ts = new pthread_t[T]; th_targ *args = new th_targ[T];\n"
                    "  pthread_attr_t at; pthread_attr_init(&at); pthread_attr_setstacksize(&at, 1 << 18);\n"
                    "  pthread_barrier_init(&th_bar, 0, (unsigned)T);\n"
                    "  blockDim.x = block[0]; blockDim.y = block[1]; blockDim.z = block[2];\n"
                    "  for (int w = 0; w * 32 < T && w < 32; w++)\n"
                    "    pthread_barrier_init(&th_wbar[w], 0, (unsigned)(T - 32 * w < 32 ? T - 32 * w : 32));\n"
                    "  for (long long z = 0; z < grid[2]; z++) for (long long y = 0; y < grid[1]; y++)\n"
                    "    for (long long x = 0; x < grid[0]; x++) {\n"
                    "      blockIdx.x = (unsigned)x; blockIdx.y = (unsigned)y; blockIdx.z = (unsigned)z;\n"
                    "      int i = 0; th_emu_tc_reset();\n"
                    "      for (int tz = 0; tz < block[2]; tz++) for (int ty = 0; ty < block[1]; ty++)\n"
                    "        for (int tx = 0; tx < block[0]; tx++, i++) {\n"
                    "          args[i].fn = fn; args[i].a = a; args[i].x = tx; args[i].y = ty; args[i].z = tz;\n"
                    "          if (pthread_create(&ts[i], &at, th_thread, &args[i]) != 0) return -1;\n"
                    "        }\n"
                    "      for (int j = 0; j < T; j++) pthread_join(ts[j], 0);\n"
                    "    }\n"
                    "  for (int w = 0; w * 32 < T && w < 32; w++) pthread_barrier_destroy(&th_wbar[w]);\n"
                    "  pthread_barrier_destroy(&th_bar); pthread_attr_destroy(&at); delete[] ts; delete[] args;\n"
                    "  return 0;\n}\n"
                    "extern \"C\" int th_emu_run(int k, float **a, const long long *grid, const int *block) {\n"
                    "  return th_run(th_fns[k], a, grid, block);\n}\n"
                    "extern \"C\" int th_emu_run_post(int k, float **a, const long long *grid, const int *block) {\n"
                    "  return th_posts[k] ? th_run(th_posts[k], a, grid, block) : -1;\n}\n");
}

/* Seeded inputs of slot i: floats in [-4, 4), int64 indices or cast values (tc_cuda_fill_i64);
 * softmax masks pad the second half of batch element 0's positions (-10000, the last one -inf) and
 * mask all of element 1's (-3.4e38, torch's finfo.min: the row comes out uniform). */
static void emu_fill(const tc_workload *wl, int slot, void *buf, int64_t n, uint64_t *s) {
  if (tc_cuda_arg_elem_bytes(wl, slot) == 8) {
    tc_cuda_fill_i64(wl, buf, n, s);
    return;
  }
  float *f = buf;
  tw_fill_floats(f, n, s);
  /* pow: negative bases with integral exponents (the CPU differential takes fractional ones over
   * positive bases); fmod: divisors away from 0; comparisons: halves, so that equal pairs occur */
  for (int64_t j = 0; wl->kernel == TC_KERNEL_BINARY && wl->op == TC_BINARY_POW && j < n; j++)
    f[j] = slot == 0 ? (j % 2 ? -1.0f : 1.0f) * (0.5f + 0.25f * fabsf(f[j])) : roundf(f[j]);
  for (int64_t j = 0; wl->kernel == TC_KERNEL_BINARY && wl->op == TC_BINARY_FMOD && j < n; j++)
    if (slot == 1) f[j] += f[j] < 0 ? -0.5f : 0.5f;
  for (int64_t j = 0; wl->kernel == TC_KERNEL_BINARY && wl->op >= TC_BINARY_EQ && j < n; j++)
    f[j] = roundf(f[j]) * 0.5f;
  if (wl->kernel == TC_KERNEL_SOFTMAX_ROWS && slot == 1) {
    for (int j = wl->w / 2; j < wl->w; j++) f[j] = j == wl->w - 1 && j > 0 ? -INFINITY : -10000.0f;
    for (int j = 0; wl->n > 1 && j < wl->w; j++) f[wl->w + j] = -3.4028235e38f;
  }
}

/* A library of emulated kernels: every workload at its fallback and per - 1 random valid configs,
 * printed as CUDA C into one translation unit and compiled for the CPU with the emulation header. */
typedef struct emu_lib {
  emu_kernel *ks;
  int nk;
  void *h;
  int (*run)(int, float **, const long long *, const int *);
  int (*run_post)(int, float **, const long long *, const int *);
  char dir[64], cpp[128], so[128];
} emu_lib;

/* The library of the given (workload, config) pairs, in order. */
static void emu_build_cfgs(emu_lib *e, const tc_workload *ws, const tc_config *cs, int n) {
  memset(e, 0, sizeof *e);
  tc_cuda_target t;
  CHECK(tc_cuda_target_init(&t, "sm_90") == TH_OK);
  e->ks = calloc((size_t)(n ? n : 1), sizeof *e->ks);
  CHECK(e->ks != NULL);
  th_buf src;
  th_buf_init(&src, (size_t)64 << 20);
  th_buf_appendf(&src, "%s", emu_header);
  CHECK(tc_cuda_prelude(&src) == TH_OK);
  for (int i = 0; i < n; i++) {
    char fn[16], err[512] = "";
    snprintf(fn, sizeof fn, "k%d", e->nk);
    e->ks[e->nk].wl = ws[i];
    th_status rc = tc_cuda_kernel_source(&ws[i], &cs[i], &t, fn, &src, &e->ks[e->nk].l, err, sizeof err);
    if (rc != TH_OK) fprintf(stderr, "%s\n", err);
    CHECK(rc == TH_OK);
    e->nk++;
  }
  emu_launcher(&src, e->nk, e->ks);
  snprintf(e->dir, sizeof e->dir, "/tmp/tc-cuda-emu-XXXXXX");
  CHECK(mkdtemp(e->dir) != NULL);
  char cmd[512];
  snprintf(e->cpp, sizeof e->cpp, "%s/k.cpp", e->dir);
  snprintf(e->so, sizeof e->so, "%s/k.so", e->dir);
  CHECK(th_write_file_atomic(e->cpp, src.data, src.len) == TH_OK);
  snprintf(cmd, sizeof cmd, "c++ -std=c++17 -O1 -w -fPIC -shared -o %s %s -lpthread", e->so,
           e->cpp);
  CHECK(system(cmd) == 0);
  e->h = dlopen(e->so, RTLD_NOW | RTLD_LOCAL);
  CHECK(e->h != NULL);
  *(void **)&e->run = dlsym(e->h, "th_emu_run");
  *(void **)&e->run_post = dlsym(e->h, "th_emu_run_post");
  CHECK(e->run != NULL && e->run_post != NULL);
  th_buf_free(&src);
}

/* Every workload at its fallback and per - 1 random valid configs. */
static void emu_build(emu_lib *e, const tc_workload *ws, int nw, int per, uint64_t seed) {
  tc_cuda_target t;
  CHECK(tc_cuda_target_init(&t, "sm_90") == TH_OK);
  tc_workload *wl = calloc((size_t)(nw * per), sizeof *wl);
  tc_config *cs = calloc((size_t)(nw * per), sizeof *cs);
  CHECK(wl && cs);
  int n = 0;
  for (int i = 0; i < nw; i++) {
    tc_space s;
    tc_config c;
    CHECK(tc_cuda_space(&ws[i], &t, &s) == TH_OK);
    CHECK(tc_cuda_fallback(&ws[i], &t, &s, &c) == TH_OK);
    int64_t size = tc_space_size(&s);
    for (int done = 0, tries = 0; done < per && tries < 5000; tries++) {
      if (done > 0) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        tc_space_get(&s, (int64_t)((seed >> 17) % (uint64_t)size), &c);
        if (tc_cuda_valid(&ws[i], &t, &s, &c, NULL, 0) != TH_OK) continue;
      }
      wl[n] = ws[i];
      cs[n++] = c;
      done++;
    }
  }
  emu_build_cfgs(e, wl, cs, n);
  free(wl);
  free(cs);
}

static void emu_free(emu_lib *e) {
  dlclose(e->h);
  unlink(e->cpp);
  unlink(e->so);
  rmdir(e->dir);
  free(e->ks);
}

/* Runs kernel k of e on the argument buffers a (its launch shape); a split-k kernel gets a scratch
 * buffer full of NaN (a partial the first kernel leaves unwritten poisons the sum) and its second
 * kernel. */
static void emu_launch(const emu_lib *e, int k, float **a) {
  const tc_cuda_launch *l = &e->ks[k].l;
  long long grid[3] = {l->grid[0], l->grid[1], l->grid[2]};
  float *args[6] = {0};
  int nargs = tc_op_nargs(e->ks[k].wl.kernel);
  memcpy(args, a, (size_t)nargs * sizeof *args);
  if (l->scratch_floats > 0) {
    args[nargs] = malloc((size_t)l->scratch_floats * 4);
    CHECK(args[nargs] != NULL);
    for (int64_t i = 0; i < l->scratch_floats; i++) args[nargs][i] = NAN;
  }
  CHECK(e->run(k, args, grid, l->block) == 0);
  if (l->scratch_floats > 0) {
    long long pgrid[3] = {l->post_grid[0], l->post_grid[1], l->post_grid[2]};
    CHECK(e->run_post(k, args, pgrid, l->post_block) == 0);
    free(args[nargs]);
  }
}

/* Every kernel of e (nw workloads) on seeded inputs (emu_fill) against tc_cuda_ref_kernel: every
 * output within 1e-4 relative plus 1e-5 of the largest output at fp32; at tf32 (inputs rounded to
 * 10 mantissa bits, errors growing like sqrt(K) times the operands) within 1e-3 of the largest
 * output or pre-activation output (an activation of slope up to 1.5 scales the error, a clip
 * bounds the output, not it) plus 1e-3 relative; seen: up to 4e-4. Returns the number of
 * kernels. */
static int emu_verify(const char *label, emu_lib *ep, int nw) {
  emu_lib e = *ep;
  for (int k = 0; k < e.nk; k++) {
    const tc_workload *wl = &e.ks[k].wl;
    int64_t sizes[5];
    tc_cuda_arg_sizes(wl, sizes);
    int nargs = tc_op_nargs(wl->kernel), out = nargs - 1;
    float *a[5] = {0}, *ref[5] = {0};
    uint64_t s2 = 99 + (uint64_t)k;
    for (int i = 0; i < nargs; i++) {
      if (!sizes[i]) continue;
      size_t bytes = (size_t)(sizes[i] + 4) * (size_t)tc_cuda_arg_elem_bytes(wl, i);
      a[i] = calloc(1, bytes);
      ref[i] = calloc(1, bytes);
      CHECK(a[i] && ref[i]);
      if (i == out) continue;
      emu_fill(wl, i, a[i], sizes[i], &s2);
      memcpy(ref[i], a[i], bytes);
    }
    emu_launch(&e, k, a);
    CHECK(tc_cuda_ref_kernel(wl, ref) == TH_OK);
    double maxref = 0, maxerr = 0;
    int tf32 = wl->precision == TC_PRECISION_TF32;
    double atol = tf32 ? 1e-3 : 1e-5, rtol = tf32 ? 1e-3 : 1e-4;
    for (int64_t i = 0; i < sizes[out]; i++) maxref = fmax(maxref, fabs(ref[out][i]));
    if (tf32) { /* the scale is the product's before the activation (a clip hides it) */
      tc_workload lin = *wl;
      lin.epilogue &= TC_EPI_BIAS | TC_EPI_RESIDUAL;
      float *la[5];
      memcpy(la, ref, sizeof la);
      la[out] = calloc((size_t)sizes[out], 4);
      CHECK(la[out] && tc_cuda_ref_kernel(&lin, la) == TH_OK);
      for (int64_t i = 0; i < sizes[out]; i++) maxref = fmax(maxref, fabs(la[out][i]));
      free(la[out]);
    }
    if (tc_cuda_arg_elem_bytes(wl, out) == 8) /* int64 results (ArgMax, ArgMin): exactly */
      for (int64_t i = 0; i < sizes[out]; i++)
        if (((int64_t *)a[out])[i] != ((int64_t *)ref[out])[i]) {
          fprintf(stderr, "%s: kernel k%d: element %lld: %lld vs reference %lld\n", label, k,
                  (long long)i, (long long)((int64_t *)a[out])[i],
                  (long long)((int64_t *)ref[out])[i]);
          CHECK(0);
        }
    for (int64_t i = 0; i < sizes[out] && tc_cuda_arg_elem_bytes(wl, out) == 4; i++) {
      double d = fabs((double)a[out][i] - ref[out][i]);
      maxerr = fmax(maxerr, d);
      if (!(d <= atol * maxref + rtol * fabs(ref[out][i]))) {
        char key[256];
        tc_workload_key(wl, key, sizeof key);
        fprintf(stderr, "%s: kernel k%d (%s): element %lld: %.8g vs reference %.8g\n", label, k,
                key, (long long)i, a[out][i], ref[out][i]);
        CHECK(0);
      }
    }
    if (tf32)
      fprintf(stderr, "%s: kernel k%d: max |error| %.3g of max |ref| %.3g (%.2g)\n", label, k,
              maxerr, maxref, maxref > 0 ? maxerr / maxref : 0.0);
    for (int i = 0; i < 5; i++) {
      free(a[i]);
      free(ref[i]);
    }
  }
  fprintf(stderr, "%s: %d kernels of %d workloads ran emulated and matched the reference\n", label,
          e.nk, nw);
  int nk = e.nk;
  emu_free(&e);
  return nk;
}

static int emu_check(const char *label, const tc_workload *ws, int nw, int per, uint64_t seed) {
  emu_lib e;
  emu_build(&e, ws, nw, per, seed);
  return emu_verify(label, &e, nw);
}

TH_TEST(emulated_templates) {
  tc_workload ws[] = {
      wl_conv(1, 3, 15, 15, 8, 7, 2, 3, TC_EPI_BIAS | TC_EPI_RELU),
      wl_conv(2, 5, 9, 7, 6, 3, 2, 1, TC_EPI_BIAS | TC_EPI_RESIDUAL),
      wl_conv(1, 12, 6, 6, 16, 1, 1, 0, TC_EPI_CLIP),
      wl_conv(1, 16, 8, 8, 16, 3, 1, 1, TC_EPI_BIAS | TC_EPI_RESIDUAL | TC_EPI_RELU),
      wl_simple(TC_KERNEL_DEPTHWISE, 2, 7, 9, 9, 7, 3, 2, 1),
      wl_simple(TC_KERNEL_DEPTHWISE, 1, 4, 8, 8, 4, 5, 1, 2),
      wl_simple(TC_KERNEL_DENSE, 1, 64, 1, 1, 10, 1, 1, 0),
      wl_simple(TC_KERNEL_DENSE, 3, 25, 1, 1, 7, 1, 1, 0),
      wl_simple(TC_KERNEL_DENSE, 33, 40, 1, 1, 21, 1, 1, 0),
      wl_simple(TC_KERNEL_MAXPOOL, 1, 3, 9, 9, 3, 3, 2, 1),
      wl_simple(TC_KERNEL_AVGPOOL, 2, 3, 7, 7, 3, 3, 1, 1),
      wl_simple(TC_KERNEL_AVGPOOL, 1, 2, 8, 8, 2, 3, 2, 1),
      wl_simple(TC_KERNEL_GLOBAL_AVGPOOL, 2, 5, 5, 3, 5, 5, 1, 0),
      wl_simple(TC_KERNEL_ELTWISE, 2, 3, 5, 5, 3, 1, 1, 0),
      wl_simple(TC_KERNEL_ELTWISE, 1, 4, 4, 4, 4, 1, 1, 0),
      wl_simple(TC_KERNEL_SOFTMAX, 2, 100, 1, 1, 100, 1, 1, 0),
      wl_simple(TC_KERNEL_SOFTMAX, 3, 7, 1, 1, 7, 1, 1, 0),
      wl_simple(TC_KERNEL_CONCAT, 2, 3, 4, 5, 8, 1, 1, 0),
  };
  ws[4].epilogue = TC_EPI_BIAS | TC_EPI_CLIP;
  ws[6].epilogue = TC_EPI_BIAS;
  ws[7].epilogue = TC_EPI_RELU;
  ws[8].epilogue = TC_EPI_BIAS | TC_EPI_RELU;
  ws[11].count_include_pad = 1;
  ws[13].epilogue = TC_EPI_RELU;
  ws[14].epilogue = TC_EPI_CLIP;
  ws[17].c_offset = 3;
  int nw = (int)(sizeof ws / sizeof ws[0]);
  CHECK(emu_check("cnn", ws, nw, 4, 777) == nw * 4);
  return 0;
}

/* ---- the activations of imported CNNs (issue 21) ---- */

/* conv2d (3x3, 1x1 with a residual, stride 2), depthwise (3x3, 5x5 stride 2) and dense (one row, 33 rows)
 * with each of sigmoid, hard sigmoid (ONNX's 0.2, 0.5), hard swish and silu fused, with bias. */
static int cnn_act_set(tc_workload *w) {
  static const int acts[4] = {TC_EPI_SIGMOID, TC_EPI_HARD_SIGMOID, TC_EPI_HARD_SWISH, TC_EPI_SILU};
  int n = 0;
  for (int a = 0; a < 4; a++) {
    int e = acts[a] | TC_EPI_BIAS;
    w[n++] = wl_conv(1, 8, 9, 9, 16, 3, 1, 1, e);
    w[n++] = wl_conv(2, 16, 6, 7, 24, 1, 1, 0, e | TC_EPI_RESIDUAL);
    w[n++] = wl_conv(1, 3, 15, 15, 8, 3, 2, 1, e);
    w[n++] = wl_simple(TC_KERNEL_DEPTHWISE, 1, 24, 10, 10, 24, 3, 1, 1);
    w[n++] = wl_simple(TC_KERNEL_DEPTHWISE, 2, 7, 11, 9, 7, 5, 2, 2);
    w[n++] = wl_simple(TC_KERNEL_DENSE, 1, 40, 1, 1, 21, 1, 1, 0);
    w[n++] = wl_simple(TC_KERNEL_DENSE, 33, 64, 1, 1, 10, 1, 1, 0);
    for (int k = n - 4; k < n; k++) w[k].epilogue = e;
    for (int k = n - 7; k < n; k++) w[k].alpha = 0.2f, w[k].beta = 0.5f;
  }
  return n;
}

TH_TEST(nvrtc_cnn_activations) {
  tc_workload w[28];
  int n = cnn_act_set(w);
  CHECK(compile_family("cnn_activations", w, n, 2) >= n * 3);
  return 0;
}

/* The same kernels' CUDA C run on the CPU against tc_cuda_ref_kernel: inputs in [-4, 4) reach both
 * clamps of hard sigmoid and hard swish. */
TH_TEST(emulated_cnn_activations) {
  tc_workload w[28];
  int n = cnn_act_set(w);
  CHECK(emu_check("cnn_activations", w, n, 3, 2121) == n * 3);
  return 0;
}

/* ---- ONNX element-wise math (issue 38) ---- */

/* Each TC_UNARY_* from EXP on at an odd size, alpha 0.5 and beta -2; without log, sqrt, acosh,
 * atanh, asin, acos when `real` (inputs in [-4, 4) make NaN of them; the CPU differential feeds
 * them values in their domains). */
static int math_set(tc_workload *w, int real) {
  int n = 0;
  for (int op = TC_UNARY_EXP; op < TC_UNARY_COUNT; op++)
    if (!real || (op != TC_UNARY_LOG && op != TC_UNARY_SQRT && op != TC_UNARY_ACOSH &&
                  op != TC_UNARY_ATANH && op != TC_UNARY_ASIN && op != TC_UNARY_ACOS))
      w[n++] = tw_unary(301, op, 0.5f, -2.0f);
  return n;
}

TH_TEST(nvrtc_math) {
  tc_workload w[TC_UNARY_COUNT];
  int n = math_set(w, 0);
  CHECK(compile_family("math", w, n, 2) >= n * 3);
  return 0;
}

TH_TEST(emulated_math) {
  tc_workload w[TC_UNARY_COUNT];
  int n = math_set(w, 1);
  CHECK(emu_check("math", w, n, 3, 3838) == n * 3);
  return 0;
}

/* ---- ONNX element-wise binary ops (issue 38) ---- */

/* Each TC_BINARY_* from MAX on: b broadcast over the rows of a float4-able [4, 8] space, and an odd
 * same-shape run (scalar code). */
static int binary_math_set(tc_workload *w) {
  int n = 0;
  for (int op = TC_BINARY_MAX; op <= TC_BINARY_LEAVE; op++) { /* MOD is int64's alone */
    w[n++] = tw_binary(op, 2, (int[]){4, 8}, (int[]){8, 1}, (int[]){0, 1});
    w[n++] = tw_binary(op, 1, (int[]){37}, (int[]){1}, (int[]){1});
  }
  return n;
}

/* Each TC_BINARY_* on int64 (TC_WL_I64; `long long` buffers, one element a thread): b
 * broadcast over the rows and from a scalar, and an odd same-shape run; operands in [-1000, 1000]
 * (0 and -1 divisors among them) and +-2^40 (tc_cuda_fill_i64), results compared exactly. */
static int binary_i64_set(tc_workload *w) {
  int n = 0;
  for (int op = 0; op < TC_BINARY_COUNT; op++) {
    w[n++] = tw_binary(op, 2, (int[]){4, 8}, (int[]){8, 1}, (int[]){0, 1});
    w[n++] = tw_binary(op, 2, (int[]){3, 5}, (int[]){5, 1}, (int[]){0, 0});
    w[n++] = tw_binary(op, 1, (int[]){37}, (int[]){1}, (int[]){1});
    for (int k = n - 3; k < n; k++) w[k].dtype = TC_WL_I64;
  }
  return n;
}

TH_TEST(nvrtc_binary_i64) {
  tc_workload w[3 * TC_BINARY_COUNT];
  int n = binary_i64_set(w);
  CHECK(compile_family("binary_i64", w, n, 2) >= n * 2);
  return 0;
}

TH_TEST(emulated_binary_i64) {
  tc_workload w[3 * TC_BINARY_COUNT];
  int n = binary_i64_set(w);
  CHECK(emu_check("binary_i64", w, n, 3, 6464) == n * 3);
  return 0;
}

TH_TEST(nvrtc_binary_math) {
  tc_workload w[2 * TC_BINARY_COUNT];
  int n = binary_math_set(w);
  CHECK(compile_family("binary_math", w, n, 2) >= n * 3);
  return 0;
}

TH_TEST(emulated_binary_math) {
  tc_workload w[2 * TC_BINARY_COUNT];
  int n = binary_math_set(w);
  CHECK(emu_check("binary_math", w, n, 3, 3939) == n * 3);
  return 0;
}

/* ---- ONNX reductions (issue 38) ---- */

/* Each TC_REDUCE_* over rows of 1, 3, 37 and 300 (without log-sum when `real`: inputs in [-4, 4)
 * give it a negative sum; the CPU differential feeds it positive values). */
static int reduce_set(tc_workload *w, int real) {
  static const int lens[4] = {1, 3, 37, 300};
  int n = 0;
  for (int op = 0; op < TC_REDUCE_COUNT; op++)
    for (int l = 0; l < 4; l++)
      if (!real || op != TC_REDUCE_LOG_SUM) {
        w[n] = tw_base(TC_KERNEL_REDUCE);
        w[n].n = 5, w[n].c = op == TC_REDUCE_PROD && lens[l] > 37 ? 37 : lens[l], w[n].op = op;
        n++;
      }
  return n;
}

TH_TEST(nvrtc_reduce) {
  tc_workload w[4 * TC_REDUCE_COUNT];
  int n = reduce_set(w, 0);
  CHECK(compile_family("reduce", w, n, 2) >= n * 3);
  return 0;
}

TH_TEST(emulated_reduce) {
  tc_workload w[4 * TC_REDUCE_COUNT];
  int n = reduce_set(w, 1);
  CHECK(emu_check("reduce", w, n, 3, 3939) == n * 3);
  return 0;
}

/* ---- the tensor families (issue 20) ---- */

static int nvrtc_tensor(tc_kernel k) {
  tc_workload w[TW_EDGE_MAX];
  int n = tw_edge_set(k, w);
  CHECK(compile_family(tc_kernel_name(k), w, n, 8) >= n * 9);
  return 0;
}

static int emulated_tensor(tc_kernel k) {
  tc_workload w[TW_EDGE_MAX];
  int n = tw_edge_set(k, w);
  CHECK(emu_check(tc_kernel_name(k), w, n, 5, 4242 + (uint64_t)k) == n * 5);
  return 0;
}

TH_TEST(nvrtc_batch_matmul) {
  return nvrtc_tensor(TC_KERNEL_BATCH_MATMUL);
}
TH_TEST(nvrtc_dense_tensor) {
  return nvrtc_tensor(TC_KERNEL_DENSE);
}
TH_TEST(nvrtc_layer_norm) {
  return nvrtc_tensor(TC_KERNEL_LAYER_NORM);
}
TH_TEST(nvrtc_softmax_rows) {
  return nvrtc_tensor(TC_KERNEL_SOFTMAX_ROWS);
}
TH_TEST(nvrtc_unary) {
  return nvrtc_tensor(TC_KERNEL_UNARY);
}
TH_TEST(nvrtc_embedding) {
  return nvrtc_tensor(TC_KERNEL_EMBEDDING);
}
TH_TEST(nvrtc_copy) {
  return nvrtc_tensor(TC_KERNEL_COPY);
}
TH_TEST(nvrtc_binary) {
  return nvrtc_tensor(TC_KERNEL_BINARY);
}
TH_TEST(emulated_batch_matmul) {
  return emulated_tensor(TC_KERNEL_BATCH_MATMUL);
}
TH_TEST(emulated_dense_tensor) {
  return emulated_tensor(TC_KERNEL_DENSE);
}
TH_TEST(emulated_layer_norm) {
  return emulated_tensor(TC_KERNEL_LAYER_NORM);
}
TH_TEST(emulated_softmax_rows) {
  return emulated_tensor(TC_KERNEL_SOFTMAX_ROWS);
}
TH_TEST(emulated_unary) {
  return emulated_tensor(TC_KERNEL_UNARY);
}
TH_TEST(emulated_embedding) {
  return emulated_tensor(TC_KERNEL_EMBEDDING);
}
TH_TEST(emulated_copy) {
  return emulated_tensor(TC_KERNEL_COPY);
}
TH_TEST(emulated_binary) {
  return emulated_tensor(TC_KERNEL_BINARY);
}

TH_TEST(nvrtc_gather) {
  return nvrtc_tensor(TC_KERNEL_GATHER);
}
TH_TEST(emulated_gather) {
  return emulated_tensor(TC_KERNEL_GATHER);
}

TH_TEST(nvrtc_scatter) {
  return nvrtc_tensor(TC_KERNEL_SCATTER);
}
TH_TEST(emulated_scatter) {
  return emulated_tensor(TC_KERNEL_SCATTER);
}

/* Rows masked with -inf everywhere (where torch's softmax gives NaN) come out uniform, never NaN;
 * rows with some -inf positions give them 0 and match the reference. */
TH_TEST(emulated_softmax_rows_inf_mask) {
  tc_workload w[2] = {tw_smr(2, 2, 3, 7, 1, 0.5f), tw_smr(2, 1, 2, 100, 1, 1.0f)};
  emu_lib e;
  emu_build(&e, w, 2, 4, 31337);
  for (int k = 0; k < e.nk; k++) {
    const tc_workload *wl = &e.ks[k].wl;
    int64_t sizes[5], W = wl->w, per_n = (int64_t)wl->c * wl->h * W;
    tc_cuda_arg_sizes(wl, sizes);
    float *in = calloc((size_t)sizes[0], 4), *mask = calloc((size_t)sizes[1], 4),
          *out = calloc((size_t)sizes[2], 4);
    float *ref = calloc((size_t)sizes[2], 4);
    CHECK(in && mask && out && ref);
    uint64_t s = 5;
    emu_fill(wl, 0, in, sizes[0], &s);
    for (int64_t j = 0; j < W; j++) mask[j] = -INFINITY; /* element 0: all masked */
    for (int64_t j = 0; j < W; j++) mask[W + j] = j % 3 ? 0.0f : -INFINITY; /* element 1: some */
    float *a[3] = {in, mask, out}, *r[3] = {in, mask, ref};
    emu_launch(&e, k, a);
    CHECK(tc_cuda_ref_kernel(wl, r) == TH_OK);
    for (int64_t i = 0; i < sizes[2]; i++) {
      double want = i < per_n ? 1.0 / (double)W : ref[i];
      if (!(fabs(out[i] - want) <= 1e-6 + 1e-4 * fabs(want))) {
        fprintf(stderr, "kernel k%d: element %lld: %.8g, want %.8g\n", k, (long long)i, out[i],
                want);
        CHECK(0);
      }
    }
    free(in);
    free(mask);
    free(out);
    free(ref);
  }
  emu_free(&e);
  return 0;
}

/* ---- device limits before NVRTC ---- */

/* Sets the GEMM knobs of c to a BM x BN tile of 16 x 16 threads (BM / 16 rows, BN / 16 columns each)
 * staging tk at a time. */
static void gemm_tiles(const tc_space *s, tc_config *c, int bm, int bn, int tk) {
  const char *names[3] = {"tile_y", "tile_x", "tile_k"};
  int want[3][2] = {{16, bm / 16}, {16, bn / 16}, {tk, 0}};
  for (int n = 0; n < 3; n++) {
    int k = tc_space_knob(s, names[n]), w = s->knobs[k].width;
    c->idx[k] = -1;
    for (int v = 0; v < s->knobs[k].nvalues; v++)
      if (memcmp(s->knobs[k].values[v], want[n], (size_t)w * sizeof(int)) == 0) c->idx[k] = v;
    CHECK(c->idx[k] >= 0);
  }
}

/* The seed thesis's ViT failed on an RTX 2080 Ti (sm_75) in ptxas: "function uses too much shared
 * data". The naive choice for ViT's MLP GEMM, the largest tiles at the deepest k (128 x 128 x 64),
 * stages 66048 bytes: tc_cuda_valid rejects it for sm_75 naming the bytes and the limit, the
 * lowering refuses it so no source reaches NVRTC, and tc_cuda_fallback picks a config that fits.
 * With the limit lifted by hand the same config reaches NVRTC, and ptxas refuses it as it refused
 * the thesis's kernel. */
TH_TEST(limits_shared_over_sm75) {
  tc_cuda_target t;
  CHECK(tc_cuda_target_init(&t, "sm_75") == TH_OK);
  CHECK(t.max_shared_bytes == 48 * 1024 && t.max_shared_optin == 64 * 1024 &&
        t.max_shared_per_sm == 64 * 1024);
  CHECK(t.max_threads_per_sm == 1024 && t.max_regs_per_thread == 255 &&
        t.max_regs_per_block == 65536);
  CHECK(strcmp(t.limits_from, "sm_75 table") == 0);
  tc_workload wl = tw_dense(10 * 197, 768, 3072, TC_EPI_BIAS | TC_EPI_GELU);
  tc_space s;
  tc_config c;
  CHECK(tc_cuda_space(&wl, &t, &s) == TH_OK);
  CHECK(tc_cuda_fallback(&wl, &t, &s, &c) == TH_OK); /* all knobs set; then the naive tiles */
  gemm_tiles(&s, &c, 128, 128, 64);
  char why[256] = "";
  CHECK(tc_cuda_valid(&wl, &t, &s, &c, why, sizeof why) == TH_ERR_INVALID);
  fprintf(stderr, "naive config: %s\n", why);
  CHECK(strstr(
      why,
      "static shared memory of 66048 bytes per block over the limit of 49152 bytes (sm_75 table)"));
  th_buf src;
  th_buf_init(&src, (size_t)64 << 20);
  tc_cuda_launch l;
  char err[512] = "";
  CHECK(tc_cuda_kernel_source(&wl, &c, &t, "naive", &src, &l, err, sizeof err) == TH_ERR_INVALID);
  CHECK(strstr(err, "66048") && strstr(err, "49152") && src.len == 0); /* nothing for NVRTC */
  /* the fallback fits sm_75 and NVRTC (ptxas) takes it */
  tc_config fb;
  CHECK(tc_cuda_fallback(&wl, &t, &s, &fb) == TH_OK);
  CHECK(tc_cuda_valid(&wl, &t, &s, &fb, NULL, 0) == TH_OK);
  CHECK(tc_cuda_prelude(&src) == TH_OK);
  CHECK(tc_cuda_kernel_source(&wl, &fb, &t, "fallback", &src, &l, err, sizeof err) == TH_OK);
  CHECK(l.shared_bytes <= t.max_shared_bytes);
  char cs[512];
  tc_config_str(&s, &fb, cs, sizeof cs);
  fprintf(stderr, "fallback %s: %d bytes of shared memory, %d threads\n", cs, l.shared_bytes,
          l.block[0] * l.block[1] * l.block[2]);
  char log[8192] = "";
  CHECK(tc_nvrtc_compile(src.data, "fallback.cu", &t, NULL, NULL, NULL, NULL, log, sizeof log) ==
        TH_OK);
  /* the rejected config, printed past a lifted limit, is what ptxas refuses */
  tc_cuda_target lifted = t;
  lifted.max_shared_bytes = lifted.max_shared_per_sm = 1 << 20;
  src.len = 0;
  CHECK(tc_cuda_prelude(&src) == TH_OK);
  CHECK(tc_cuda_kernel_source(&wl, &c, &lifted, "naive", &src, &l, err, sizeof err) == TH_OK);
  CHECK(l.shared_bytes == 66048);
  CHECK(tc_nvrtc_compile(src.data, "naive.cu", &t, NULL, NULL, NULL, NULL, log, sizeof log) ==
        TH_ERR_COMPILE);
  fprintf(stderr, "NVRTC on the naive config: %.300s\n", log);
  CHECK(strstr(log, "too much shared data") != NULL);
  th_buf_free(&src);
  return 0;
}

/* Limits come from the device when the target is its arch (values the driver reports replace the
 * table's, 0 keeps them), not for another arch; an arch without a table row gets the smallest
 * values. */
TH_TEST(limits_from_device) {
  tc_cuda_target t;
  CHECK(tc_cuda_target_init(&t, "sm_86") == TH_OK);
  CHECK(t.max_shared_optin == 99 * 1024 && t.max_shared_per_sm == 100 * 1024 &&
        t.max_threads_per_sm == 1536);
  tc_workload wl = tw_dense(256, 512, 512, TC_EPI_BIAS);
  tc_space s;
  tc_config c;
  CHECK(tc_cuda_space(&wl, &t, &s) == TH_OK);
  CHECK(tc_cuda_fallback(&wl, &t, &s, &c) == TH_OK);
  gemm_tiles(&s, &c, 128, 128, 32); /* 33024 bytes, 256 threads */
  CHECK(tc_cuda_valid(&wl, &t, &s, &c, NULL, 0) == TH_OK);
  tc_cuda_device d;
  memset(&d, 0, sizeof d);
  snprintf(d.name, sizeof d.name, "a smaller GPU");
  snprintf(d.arch, sizeof d.arch, "sm_90");
  d.max_shared_bytes = 32 * 1024;
  d.max_threads = 128;
  tc_cuda_target_use_device(&t, &d); /* another arch: nothing changes */
  CHECK(t.max_shared_bytes == 48 * 1024 && strcmp(t.limits_from, "sm_86 table") == 0);
  snprintf(d.arch, sizeof d.arch, "sm_86");
  tc_cuda_target_use_device(&t, &d);
  CHECK(t.max_shared_bytes == 32 * 1024 && t.max_threads == 128 &&
        t.max_shared_per_sm == 100 * 1024);
  CHECK(strcmp(t.limits_from, "device a smaller GPU") == 0);
  char why[256] = "";
  CHECK(tc_cuda_valid(&wl, &t, &s, &c, why, sizeof why) == TH_ERR_INVALID);
  CHECK(strstr(why, "256 threads per block over the limit of 128 (device a smaller GPU)") != NULL);
  d.max_threads = 1024;
  tc_cuda_target_use_device(&t, &d);
  CHECK(tc_cuda_valid(&wl, &t, &s, &c, why, sizeof why) == TH_ERR_INVALID);
  CHECK(strstr(why, "33024 bytes per block over the limit of 32768 bytes (device a smaller GPU)") !=
        NULL);
  CHECK(tc_cuda_fallback(&wl, &t, &s, &c) == TH_OK &&
        tc_cuda_valid(&wl, &t, &s, &c, NULL, 0) == TH_OK);
  /* no table row: the smallest documented limits */
  CHECK(tc_cuda_target_init(&t, "sm_87") == TH_OK);
  CHECK(t.max_shared_optin == 64 * 1024 && t.max_shared_per_sm == 64 * 1024 &&
        t.max_threads_per_sm == 1024);
  CHECK(strcmp(t.limits_from, "sm_87: smallest of the table") == 0);
  return 0;
}

/* Blocks in the grid of wl's fallback config for t. */
static int64_t fallback_blocks(const tc_workload *wl, const tc_cuda_target *t) {
  tc_space s;
  tc_config c;
  CHECK(tc_cuda_space(wl, t, &s) == TH_OK);
  CHECK(tc_cuda_fallback(wl, t, &s, &c) == TH_OK);
  th_buf src;
  th_buf_init(&src, 1 << 24);
  tc_cuda_launch l;
  char err[512] = "";
  CHECK(tc_cuda_kernel_source(wl, &c, t, "k", &src, &l, err, sizeof err) == TH_OK);
  th_buf_free(&src);
  return l.grid[0] * l.grid[1] * l.grid[2];
}

/* Issue 25, defect 4: the fallback configs size their grids by the target's SM count (two waves of
 * blocks), the device's when the target is its arch, else the arch table's part (132 for sm_90),
 * not a constant 264: with few SMs a conv2d and a GEMM take fewer, larger blocks, with many SMs
 * more. */
TH_TEST(fallback_follows_sm_count) {
  tc_cuda_target t;
  CHECK(tc_cuda_target_init(&t, "sm_90") == TH_OK && t.multiprocessors == 132);
  CHECK(tc_cuda_target_init(&t, "sm_80") == TH_OK && t.multiprocessors == 108);
  CHECK(tc_cuda_target_init(&t, "sm_87") == TH_OK &&
        t.multiprocessors == 40); /* no row: the smallest */
  tc_workload wls[2] = {wl_conv(1, 64, 56, 56, 64, 3, 1, 1, TC_EPI_BIAS | TC_EPI_RELU),
                        tw_dense(256, 512, 512, TC_EPI_BIAS)};
  for (int i = 0; i < 2; i++) {
    CHECK(tc_cuda_target_init(&t, "sm_90") == TH_OK);
    int64_t table = fallback_blocks(&wls[i], &t);
    t.multiprocessors = 4;
    int64_t few = fallback_blocks(&wls[i], &t);
    t.multiprocessors = 1024;
    int64_t many = fallback_blocks(&wls[i], &t);
    /* a device of the target's arch: its SM count */
    tc_cuda_device d;
    memset(&d, 0, sizeof d);
    snprintf(d.name, sizeof d.name, "a 4-SM GPU");
    snprintf(d.arch, sizeof d.arch, "sm_90");
    d.multiprocessors = 4;
    CHECK(tc_cuda_target_init(&t, "sm_90") == TH_OK);
    tc_cuda_target_use_device(&t, &d);
    CHECK_EQ_INT(t.multiprocessors, 4);
    int64_t device = fallback_blocks(&wls[i], &t);
    fprintf(stderr,
            "%s: fallback blocks %lld with 4 SMs, %lld with 132 (sm_90 table), %lld with 1024\n",
            tc_kernel_name(wls[i].kernel), (long long)few, (long long)table, (long long)many);
    CHECK(few < table && table < many);
    CHECK_EQ_INT(device, few);
  }
  return 0;
}

/* Every kernel of ViT-B/16 (batch 1, 10, 256) and BERT-base (batch 1, 5, 10, 15) gets a fallback
 * that fits sm_75 and sm_90 and prints; those of the smallest and largest batch compile with NVRTC
 * for both (ptxas applies the real limits there). */
TH_TEST(limits_transformer_fallbacks) {
  static const int vit[] = {1, 10, 256}, bert[] = {1, 5, 10, 15};
  const char *archs[2] = {"sm_75", "sm_90"};
  for (int a = 0; a < 2; a++) {
    tc_cuda_target t;
    CHECK(tc_cuda_target_init(&t, archs[a]) == TH_OK);
    th_buf src;
    th_buf_init(&src, (size_t)256 << 20);
    CHECK(tc_cuda_prelude(&src) == TH_OK);
    int nk = 0, compiled = 0, max_shared = 0;
    for (int net = 0; net < 2; net++)
      for (int bi = 0; bi < (net ? 4 : 3); bi++) {
        int b = net ? bert[bi] : vit[bi], last = bi == (net ? 3 : 2);
        tc_workload w[TW_MAX];
        int n = net ? tw_bert(b, w) : tw_vit(b, w);
        CHECK(n <= TW_MAX);
        for (int i = 0; i < n; i++) {
          tc_space s;
          tc_config c;
          char why[256] = "", key[256], fn[32], err[512] = "";
          tc_workload_key(&w[i], key, sizeof key);
          th_status rc = tc_cuda_space(&w[i], &t, &s);
          if (rc == TH_OK) rc = tc_cuda_fallback(&w[i], &t, &s, &c);
          if (rc == TH_OK) rc = tc_cuda_valid(&w[i], &t, &s, &c, why, sizeof why);
          if (rc != TH_OK) fprintf(stderr, "%s %s: %s %s\n", archs[a], key, th_status_str(rc), why);
          CHECK(rc == TH_OK);
          th_buf one;
          th_buf_init(&one, (size_t)64 << 20);
          tc_cuda_launch l;
          snprintf(fn, sizeof fn, "k%d", nk++);
          CHECK(tc_cuda_kernel_source(&w[i], &c, &t, fn, &one, &l, err, sizeof err) == TH_OK);
          CHECK(l.shared_bytes <= t.max_shared_bytes &&
                l.block[0] * l.block[1] * l.block[2] <= t.max_threads);
          if (l.shared_bytes > max_shared) max_shared = l.shared_bytes;
          if (bi == 0 || last) {
            CHECK(th_buf_append(&src, one.data, one.len) == TH_OK);
            compiled++;
          }
          th_buf_free(&one);
        }
      }
    char log[8192] = "";
    double t0 = th_now_mono();
    th_status rc =
        tc_nvrtc_compile(src.data, "transformers.cu", &t, NULL, NULL, NULL, NULL, log, sizeof log);
    if (rc != TH_OK) fprintf(stderr, "%s\n", log);
    CHECK(rc == TH_OK);
    fprintf(stderr,
            "%s: %d fallbacks fit (at most %d bytes of shared memory); %d compiled in %.1f s\n",
            archs[a], nk, max_shared, compiled, th_now_mono() - t0);
    th_buf_free(&src);
  }
  return 0;
}

/* ---- TF32 tensor cores (issue 25) ---- */

TH_TEST(nvrtc_tf32_gemm) {
  tc_workload w[TW_TF32_GEMM_MAX];
  int n = tw_tf32_gemm_set(w);
  CHECK(compile_family("tf32_gemm", w, n, 4) >= n * 5);
  return 0;
}

TH_TEST(emulated_tf32_gemm) {
  tc_workload w[TW_TF32_GEMM_MAX];
  int n = tw_tf32_gemm_set(w);
  CHECK(emu_check("tf32_gemm", w, n, 2, 2525) == n * 2);
  return 0;
}

/* A tf32 workload has its own key and the fp32 one keeps its old bytes; sm_75 has no TF32 tensor
 * cores (the space is unsupported, tc_cuda_valid says why); the CPU templates and the other
 * families refuse tf32; fp32 dense and batch_matmul keep the FMA GEMM. */
TH_TEST(tf32_rules_and_keys) {
  tc_workload d = tw_dense(197, 768, 3072, TC_EPI_BIAS | TC_EPI_GELU), t = d;
  t.precision = TC_PRECISION_TF32;
  char kd[256], kt[256];
  CHECK(tc_workload_key(&d, kd, sizeof kd) == TH_OK && tc_workload_key(&t, kt, sizeof kt) == TH_OK);
  CHECK(strcmp(kd, "dense_pack n197 c768 h1 w1 oc3072 oh1 ow1 k1x1 s1x1 p0,0,0,0 cb1,1 e17") == 0);
  CHECK(strcmp(kt, "dense_pack n197 c768 h1 w1 oc3072 oh1 ow1 k1x1 s1x1 p0,0,0,0 cb1,1 e17 tf32") ==
        0);
  tc_precision p;
  CHECK(tc_precision_parse("tf32", &p) == TH_OK && p == TC_PRECISION_TF32);
  CHECK(tc_precision_parse(NULL, &p) == TH_OK && p == TC_PRECISION_FP32);
  CHECK(tc_precision_parse("fp16", &p) == TH_ERR_INVALID);
  tc_cuda_target t75, t90;
  CHECK(tc_cuda_target_init(&t75, "sm_75") == TH_OK && tc_cuda_target_init(&t90, "sm_90") == TH_OK);
  tc_space s;
  tc_config c;
  CHECK(tc_cuda_space(&t, &t75, &s) == TH_ERR_UNSUPPORTED);
  CHECK(tc_cuda_space(&t, &t90, &s) == TH_OK && tc_space_knob(&s, "warp_tile") >= 0);
  CHECK(tc_cuda_fallback(&t, &t90, &s, &c) == TH_OK);
  char why[256] = "";
  CHECK(tc_cuda_valid(&t, &t75, &s, &c, why, sizeof why) == TH_ERR_INVALID);
  CHECK(strstr(why, "tf32 needs tensor cores of sm_80 or newer, not sm_75") != NULL);
  CHECK(tc_cuda_space(&d, &t90, &s) == TH_OK && tc_space_knob(&s, "warp_tile") < 0);
  tc_workload conv = tw_base(TC_KERNEL_LAYER_NORM);
  conv.precision = TC_PRECISION_TF32;
  CHECK(tc_workload_check(&conv) == TH_ERR_INVALID);
  tc_target cpu;
  memset(&cpu, 0, sizeof cpu);
  CHECK(tc_op_space(&t, &cpu, &s) == TH_ERR_UNSUPPORTED);
  /* the kernel prints mma.sync through the prelude's helper and cp.async copies */
  th_buf b;
  th_buf_init(&b, 1 << 24);
  tc_cuda_launch l;
  CHECK(tc_cuda_kernel_source(&t, &c, &t90, "tf32", &b, &l, NULL, 0) == TH_OK);
  CHECK(strstr(b.data, "th_mma_tf32(") && strstr(b.data, "th_cp_async4(") &&
        strstr(b.data, "th_cp_wait("));
  th_buf_free(&b);
  return 0;
}

/* tc_build_bundle refuses a precision other than fp32 and tf32, tf32 outside cuda and tf32 on an
 * arch without TF32 tensor cores, each naming what is valid, before any graph is built. */
TH_TEST(build_precision_refused) {
  tc_build_opts o;
  memset(&o, 0, sizeof o);
  o.framework = "llvm";
  o.network = "resnet-18";
  o.batch = 1;
  o.precision = "tf32";
  char err[512] = "";
  CHECK(tc_build_bundle(&o, NULL, NULL, NULL, err, sizeof err) == TH_ERR_INVALID);
  CHECK(strstr(err, "tf32 needs the cuda framework") && strstr(err, "fp32"));
  o.precision = "fp16";
  CHECK(tc_build_bundle(&o, NULL, NULL, NULL, err, sizeof err) == TH_ERR_INVALID);
  CHECK(strstr(err, "'fp16' is not one of fp32, tf32") != NULL);
  o.framework = "cuda";
  o.arch = "sm_75";
  o.precision = "tf32";
  th_status rc = tc_build_bundle(&o, NULL, NULL, NULL, err, sizeof err);
  if (rc == TH_ERR_UNSUPPORTED) return 77; /* built without CUDA */
  CHECK(rc == TH_ERR_INVALID);
  CHECK(strstr(err, "sm_80 or newer") && strstr(err, "sm_75"));
  return 0;
}

/* ---- conv2d on TF32 tensor cores: the implicit GEMM (issue 25) ---- */

/* 1x1 (the image read as a matrix), 3x3 pad 1 at batch 2, a stem (7x7 stride 2 pad 3, 3 input
 * channels, 37 outputs), stride 2 on odd sizes at batch 2, 1x1 stride 2 (gathered), and 64
 * channels at 7x7 (K 576: many k tiles to split); every conv epilogue (bias, residual, relu,
 * clip, sigmoid, hard sigmoid, hard swish, silu) over the ten. */
static int tf32_conv_set(tc_workload *w) {
  static const int epis[10] = {TC_EPI_BIAS,         TC_EPI_BIAS | TC_EPI_RESIDUAL,
                               TC_EPI_BIAS | TC_EPI_RELU, TC_EPI_CLIP,
                               TC_EPI_BIAS | TC_EPI_RESIDUAL | TC_EPI_RELU, TC_EPI_RELU,
                               TC_EPI_SIGMOID,      TC_EPI_BIAS | TC_EPI_HARD_SIGMOID,
                               TC_EPI_HARD_SWISH,   TC_EPI_BIAS | TC_EPI_SILU | TC_EPI_RESIDUAL};
  static const int sh[6][8] = {{1, 16, 8, 8, 24, 1, 1, 0},  {2, 16, 9, 9, 20, 3, 1, 1},
                               {1, 3, 23, 23, 37, 7, 2, 3}, {2, 5, 13, 11, 37, 3, 2, 1},
                               {1, 24, 9, 9, 16, 1, 2, 0},  {1, 64, 7, 7, 40, 3, 1, 1}};
  for (int i = 0; i < 10; i++) {
    const int *d = sh[i % 6];
    w[i] = wl_conv(d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], epis[i]);
    w[i].clip_min = -1, w[i].clip_max = 6, w[i].alpha = 0.2f, w[i].beta = 0.5f;
    w[i].precision = TC_PRECISION_TF32;
  }
  return 10;
}

/* Sets knob `name` of c to the value vals[0..width) (0 if the space has no such value). */
static int knob_set(const tc_space *s, tc_config *c, const char *name, const int *vals, int width) {
  int k = tc_space_knob(s, name);
  CHECK(k >= 0);
  for (int i = 0; i < s->knobs[k].nvalues; i++)
    if (memcmp(s->knobs[k].values[i], vals, (size_t)width * sizeof(int)) == 0) {
      c->idx[k] = i;
      return 1;
    }
  return 0;
}

/* For each workload of w: a config of 32 x 32 blocks of 16 x 16 warp tiles, tile_k 8 and 2 stages
 * without split_k and with the largest split of 8, 4, 2 that is valid; then, for the first `ndyn`
 * workloads, 128 x 128 blocks of 64 x 64 warp tiles, tile_k 32 and 3 stages (107 KiB of
 * staging: dynamic shared memory). Returns the number of configs written to wl / cs. */
static int tf32_explicit_cfgs(const tc_workload *w, int n, int ndyn, const tc_cuda_target *t,
                              tc_workload *wl, tc_config *cs) {
  int m = 0;
  for (int i = 0; i < n; i++) {
    tc_space s;
    tc_config c;
    CHECK(tc_cuda_space(&w[i], t, &s) == TH_OK);
    CHECK(tc_cuda_fallback(&w[i], t, &s, &c) == TH_OK);
    static const int bt[2] = {32, 32}, wt[2] = {16, 16}, bk = 8, st = 2, one = 1;
    CHECK(knob_set(&s, &c, "block_tile", bt, 2) && knob_set(&s, &c, "warp_tile", wt, 2));
    CHECK(knob_set(&s, &c, "tile_k", &bk, 1) && knob_set(&s, &c, "stages", &st, 1));
    CHECK(knob_set(&s, &c, "split_k", &one, 1));
    CHECK(tc_cuda_valid(&w[i], t, &s, &c, NULL, 0) == TH_OK);
    wl[m] = w[i], cs[m++] = c;
    int split = 0;
    for (int z = 8; z >= 2 && !split; z /= 2) {
      CHECK(knob_set(&s, &c, "split_k", &z, 1));
      if (tc_cuda_valid(&w[i], t, &s, &c, NULL, 0) == TH_OK) split = z;
    }
    CHECK(split >= 2);
    wl[m] = w[i], cs[m++] = c;
    if (i >= ndyn) continue;
    static const int bt2[2] = {128, 128}, wt2[2] = {64, 64}, bk2 = 32, st2 = 3;
    CHECK(knob_set(&s, &c, "block_tile", bt2, 2) && knob_set(&s, &c, "warp_tile", wt2, 2));
    CHECK(knob_set(&s, &c, "tile_k", &bk2, 1) && knob_set(&s, &c, "stages", &st2, 1));
    CHECK(knob_set(&s, &c, "split_k", &one, 1));
    char why[256] = "";
    th_status rc = tc_cuda_valid(&w[i], t, &s, &c, why, sizeof why);
    if (rc != TH_OK) fprintf(stderr, "%s\n", why);
    CHECK(rc == TH_OK);
    wl[m] = w[i], cs[m++] = c;
  }
  return m;
}

/* The fallback and 2 random valid configs of each conv, then the explicit split-k and dynamic
 * shared memory configs, in one translation unit through NVRTC for sm_80 and sm_90: the split-k
 * configs print a second kernel, the 107 KiB ones `extern __shared__` with no static staging. */
TH_TEST(nvrtc_tf32_conv2d) {
  tc_workload w[10];
  int n = tf32_conv_set(w);
  CHECK(compile_family("tf32_conv2d", w, n, 2) >= n * 3);
  tc_cuda_target t80, t90;
  CHECK(tc_cuda_target_init(&t80, "sm_80") == TH_OK && tc_cuda_target_init(&t90, "sm_90") == TH_OK);
  tc_workload wl[40];
  tc_config cs[40];
  int m = tf32_explicit_cfgs(w, n, 3, &t80, wl, cs);
  th_buf src;
  th_buf_init(&src, (size_t)64 << 20);
  CHECK(tc_cuda_prelude(&src) == TH_OK);
  int splits = 0, dyns = 0;
  for (int i = 0; i < m; i++) {
    char fn[16], err[512] = "";
    snprintf(fn, sizeof fn, "x%d", i);
    tc_cuda_launch l;
    th_status rc = tc_cuda_kernel_source(&wl[i], &cs[i], &t80, fn, &src, &l, err, sizeof err);
    if (rc != TH_OK) fprintf(stderr, "%s\n", err);
    CHECK(rc == TH_OK);
    if (l.scratch_floats > 0) {
      splits++;
      CHECK(l.grid[2] >= 2 && l.post_block[0] == 256 && l.post_grid[0] >= 1);
    }
    if (l.dyn_shared > 48 * 1024) {
      dyns++;
      CHECK(l.shared_bytes == 0 && l.dyn_shared >= 100 * 1024 && l.dyn_shared <= 163 * 1024);
    }
  }
  CHECK(splits == n && dyns == 3);
  CHECK(strstr(src.data, "TH_DYN_SHARED(th_dyn_smem);") && strstr(src.data, "x1_r("));
  CHECK(th_buf_append(&src, "", 1) == TH_OK);
  const tc_cuda_target *ts[2] = {&t80, &t90};
  for (int a = 0; a < 2; a++) {
    char *cubin = NULL;
    size_t cl = 0;
    char err[8192] = "";
    th_status rc = tc_nvrtc_compile(src.data, "tf32_conv2d_cfgs", ts[a], &cubin, &cl, NULL, NULL, err,
                                    sizeof err);
    if (rc != TH_OK) fprintf(stderr, "%s\n", err);
    CHECK(rc == TH_OK && cl > 0);
    free(cubin);
  }
  th_buf_free(&src);
  return 0;
}

/* The same convs emulated against the naive reference (emu_verify's tf32 tolerance, relative to
 * the pre-activation output): fallback and a random config each, then each without and with
 * split_k, and three with 107 KiB of dynamic shared memory. */
/* tf32_explicit_cfgs(w, n, ndyn) for sm_90, emulated against the reference: every workload has a
 * split-k kernel and ndyn have dynamic shared memory. */
static void emu_explicit(const char *label, const tc_workload *w, int n, int ndyn) {
  tc_cuda_target t90;
  CHECK(tc_cuda_target_init(&t90, "sm_90") == TH_OK);
  tc_workload wl[48];
  tc_config cs[48];
  CHECK(n * 3 <= 48);
  int m = tf32_explicit_cfgs(w, n, ndyn, &t90, wl, cs);
  emu_lib e;
  emu_build_cfgs(&e, wl, cs, m);
  int splits = 0, dyns = 0;
  for (int k = 0; k < e.nk; k++) splits += e.ks[k].l.scratch_floats > 0, dyns += e.ks[k].l.dyn_shared > 0;
  CHECK(splits == n && dyns == ndyn);
  CHECK(emu_verify(label, &e, n) == m);
}

TH_TEST(emulated_tf32_conv2d) {
  tc_workload w[10];
  int n = tf32_conv_set(w);
  CHECK(emu_check("tf32_conv2d", w, n, 2, 4711) == n * 2);
  emu_explicit("tf32_conv2d_split_dyn", w, n, 3);
  return 0;
}

/* tf32 conv2d: its own key, the tensor-core space on sm_80+, refused on sm_75 by name (no space,
 * and tc_cuda_valid says why); depthwise keeps fp32 only; a 107 KiB config is valid on sm_80 and
 * sm_90 but over sm_86's opt-in maximum, said so. */
TH_TEST(tf32_conv2d_rules) {
  tc_workload c = wl_conv(1, 64, 56, 56, 64, 3, 1, 1, TC_EPI_BIAS | TC_EPI_RELU), t = c;
  t.precision = TC_PRECISION_TF32;
  char kc[256], kt[256];
  CHECK(tc_workload_key(&c, kc, sizeof kc) == TH_OK && tc_workload_key(&t, kt, sizeof kt) == TH_OK);
  CHECK(strlen(kt) == strlen(kc) + 5 && strncmp(kc, kt, strlen(kc)) == 0 &&
        strcmp(kt + strlen(kc), " tf32") == 0);
  CHECK(tc_workload_check(&t) == TH_OK);
  tc_workload dw = wl_simple(TC_KERNEL_DEPTHWISE, 1, 32, 16, 16, 32, 3, 1, 1);
  dw.precision = TC_PRECISION_TF32;
  CHECK(tc_workload_check(&dw) == TH_ERR_INVALID);
  tc_cuda_target t75, t80, t86, t90;
  CHECK(tc_cuda_target_init(&t75, "sm_75") == TH_OK && tc_cuda_target_init(&t80, "sm_80") == TH_OK);
  CHECK(tc_cuda_target_init(&t86, "sm_86") == TH_OK && tc_cuda_target_init(&t90, "sm_90") == TH_OK);
  tc_space s;
  tc_config cfg;
  CHECK(tc_cuda_space(&t, &t75, &s) == TH_ERR_UNSUPPORTED);
  CHECK(tc_cuda_space(&t, &t90, &s) == TH_OK && tc_space_knob(&s, "split_k") >= 0);
  CHECK(tc_cuda_fallback(&t, &t90, &s, &cfg) == TH_OK);
  char why[256] = "";
  CHECK(tc_cuda_valid(&t, &t75, &s, &cfg, why, sizeof why) == TH_ERR_INVALID);
  CHECK(strstr(why, "tf32 needs tensor cores of sm_80 or newer, not sm_75") != NULL);
  CHECK(tc_cuda_space(&c, &t90, &s) == TH_OK && tc_space_knob(&s, "tile_f") >= 0);
  tc_workload wl[3];
  tc_config cs[3];
  CHECK(tc_cuda_space(&t, &t90, &s) == TH_OK);
  CHECK(tf32_explicit_cfgs(&t, 1, 1, &t80, wl, cs) == 3);
  CHECK(tc_cuda_valid(&t, &t90, &s, &cs[2], NULL, 0) == TH_OK);
  CHECK(tc_cuda_valid(&t, &t86, &s, &cs[2], why, sizeof why) == TH_ERR_INVALID);
  fprintf(stderr, "sm_86: %s\n", why);
  CHECK(strstr(why, "dynamic shared memory of") && strstr(why, "opt-in limit of 101376 bytes"));
  return 0;
}

/* Dense and batch_matmul on tensor cores with split_k (small workloads of tw_tf32_gemm_set: dense of
 * 1, 3 and 129 rows, K 67 and 768, with and without a residual, and batch_matmul with B or both operands
 * transposed and alpha, each without and with the largest valid split: the second kernel applies
 * alpha and the dense epilogue once, per column) and two with 107 KiB of dynamic shared memory,
 * emulated against the reference. The larger ones are left out: an emulated block is 128 threads. */
TH_TEST(emulated_tf32_gemm_split_dyn) {
  tc_workload all[TW_TF32_GEMM_MAX], w[TW_TF32_GEMM_MAX];
  int n = tw_tf32_gemm_set(all), m = 0;
  static const int pick[] = {0, 1, 6, 10, 12};
  for (size_t i = 0; i < sizeof pick / sizeof pick[0]; i++) {
    CHECK(pick[i] < n && all[pick[i]].oc < 1000);
    w[m++] = all[pick[i]];
  }
  emu_explicit("tf32_gemm_split_dyn", w, m, 2);
  return 0;
}

/* The reference split over the batch (tc_cuda_ref_kernel_threads, what tc_cuda_measure checks a GPU
 * trial against) gives the bytes of one thread, with 2, 3 (an uneven split) and 8 threads (more than
 * some batches), for every family it splits and for one it must not (softmax rows over a mask). */
TH_TEST(ref_kernel_threads_same_bytes) {
  tc_workload w[8];
  int n = 0;
  w[n++] = wl_conv(5, 3, 9, 9, 6, 3, 2, 1, TC_EPI_BIAS | TC_EPI_RESIDUAL | TC_EPI_RELU);
  w[n] = wl_conv(4, 6, 7, 7, 6, 3, 1, 1, TC_EPI_BIAS | TC_EPI_CLIP);
  w[n++].kernel = TC_KERNEL_DEPTHWISE;
  w[n++] = wl_simple(TC_KERNEL_MAXPOOL, 3, 4, 9, 9, 4, 3, 2, 1);
  w[n++] = wl_simple(TC_KERNEL_AVGPOOL, 7, 4, 8, 8, 4, 3, 2, 1);
  w[n++] = wl_simple(TC_KERNEL_GLOBAL_AVGPOOL, 6, 5, 4, 4, 5, 1, 1, 0);
  w[n++] = tw_dense(7, 33, 10, TC_EPI_BIAS | TC_EPI_RESIDUAL | TC_EPI_GELU);
  w[n++] = tw_bmm(3, 5, 9, 4, 1, 0, 0.5f);
  w[n++] = tw_smr(4, 2, 3, 8, 1, 0.125f);
  for (int i = 0; i < n; i++) {
    CHECK(tc_workload_check(&w[i]) == TH_OK);
    int64_t sizes[5];
    tc_cuda_arg_sizes(&w[i], sizes);
    int nargs = tc_op_nargs(w[i].kernel), out = nargs - 1;
    float *args[5] = {0}, *got = malloc((size_t)sizes[out] * 4);
    CHECK(got != NULL);
    uint64_t seed = 77 + (uint64_t)i;
    for (int a = 0; a < nargs; a++) {
      if (!sizes[a]) continue;
      args[a] = calloc((size_t)sizes[a], (size_t)tc_cuda_arg_elem_bytes(&w[i], a));
      CHECK(args[a] != NULL);
      if (a != out) emu_fill(&w[i], a, args[a], sizes[a], &seed);
    }
    CHECK(tc_cuda_ref_kernel(&w[i], args) == TH_OK);
    memcpy(got, args[out], (size_t)sizes[out] * 4);
    const int threads[3] = {2, 3, 8};
    for (int t = 0; t < 3; t++) {
      for (int64_t e = 0; e < sizes[out]; e++) args[out][e] = NAN;
      CHECK(tc_cuda_ref_kernel_threads(&w[i], args, threads[t]) == TH_OK);
      if (memcmp(got, args[out], (size_t)sizes[out] * 4) != 0) {
        fprintf(stderr, "workload %d (kernel %d), %d threads: not the bytes of one thread\n", i,
                (int)w[i].kernel, threads[t]);
        CHECK(0);
      }
    }
    for (int a = 0; a < nargs; a++) free(args[a]);
    free(got);
  }
  return 0;
}
