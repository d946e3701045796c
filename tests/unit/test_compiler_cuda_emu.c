/* CUDA bundles end to end without a GPU: a network's cuda bundle (model.so with its launch plan,
 * weight folding and upload, the driver runtime) runs against a fake libcuda.so.1
 * (test_compiler_cuda_fakecu.c, found through LD_LIBRARY_PATH set by ctest) whose cuLaunchKernel
 * executes the bundle's own kernels/kernels.cu compiled for the CPU with an emulation header
 * (blocks in turn, CUDA threads as coroutines switching at __syncthreads, statics for __shared__).
 * The output must match the reference interpreter within 1e-4 of the largest output, through
 * th_model_run, th_model_run_io and th_model_run_device. Small inputs keep the emulation fast.
 * Skips (77) when the fake driver is not the one dlopen finds. */
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
#include "tc_cuda.h"
#include "tc_cuda_measure.h"
#include "th_test.h"
#include "th_util.h"
#include "zoo.h"

static const char emu_header[] =
    "#include <cmath>\n#include <cstring>\n#include <cstdlib>\n#include <ucontext.h>\n#include <math.h>\n"
    "struct th_dim3 { unsigned x, y, z; };\n"
    "static th_dim3 blockIdx, threadIdx;\n"
    "static ucontext_t th_main, *th_ctx;\nstatic th_dim3 *th_tid;\nstatic int th_cur, th_T;\n"
    "static inline void th_barrier() { if (th_T == 1) return; int me = th_cur; th_cur = (me + 1) % th_T;\n"
    "  threadIdx = th_tid[th_cur]; swapcontext(&th_ctx[me], &th_ctx[th_cur]); }\n"
    "struct float4 { float x, y, z, w; };\n"
    "static inline float4 make_float4(float a, float b, float c, float d) { float4 v = {a, b, c, d}; return v; }\n"
    "static inline float __int_as_float(unsigned i) { float f; std::memcpy(&f, &i, 4); return f; }\n"
    "#define __global__\n#define __device__\n#define __forceinline__ inline\n#define __launch_bounds__(x)\n"
    "#define __shared__ static\n#define __align__(n) __attribute__((aligned(n)))\n"
    "#define __syncthreads() th_barrier()\n";

/* Per block, the CUDA threads are coroutines (ucontext) on one OS thread: __syncthreads passes control
 * round-robin to the next thread, so when the last one reaches the barrier the first one resumes past
 * it (kernels reach their barriers uniformly); a finished thread hands over to the next, the last back to
 * the launcher. */
static const char emu_launcher[] =
    "static th_fn th_kfn; static float **th_kargs;\n"
    "static void th_entry() {\n"
    "  th_kfn(th_kargs);\n"
    "  if (th_cur + 1 < th_T) { th_cur++; threadIdx = th_tid[th_cur]; setcontext(&th_ctx[th_cur]); }\n"
    "  setcontext(&th_main);\n}\n"
    "extern \"C\" int th_emu_launch(const char *name, void **params, const unsigned *g, const unsigned *b) {\n"
    "  th_fn fn = 0;\n"
    "  for (int i = 0; th_names[i]; i++) if (std::strcmp(th_names[i], name) == 0) fn = th_calls[i];\n"
    "  if (!fn) return -1;\n"
    "  float *a[5] = {0, 0, 0, 0, 0};\n"
    "  for (int i = 0; i < 5 && params[i]; i++) a[i] = (float *)(uintptr_t)*(const unsigned long long *)params[i];\n"
    "  int T = (int)(b[0] * b[1] * b[2]);\n"
    "  const size_t stack = 1 << 16;\n"
    "  th_ctx = new ucontext_t[T]; th_tid = new th_dim3[T]; char *stacks = (char *)std::malloc(stack * T);\n"
    "  if (!stacks) return -1;\n"
    "  int i = 0;\n"
    "  for (unsigned z = 0; z < b[2]; z++) for (unsigned y = 0; y < b[1]; y++) for (unsigned x = 0; x < b[0]; x++, i++)\n"
    "    th_tid[i].x = x, th_tid[i].y = y, th_tid[i].z = z;\n"
    "  th_kfn = fn; th_kargs = a; th_T = T;\n"
    "  for (unsigned z = 0; z < g[2]; z++) for (unsigned y = 0; y < g[1]; y++) for (unsigned x = 0; x < g[0]; x++) {\n"
    "    blockIdx.x = x; blockIdx.y = y; blockIdx.z = z;\n"
    "    for (int t = 0; t < T; t++) {\n"
    "      getcontext(&th_ctx[t]); th_ctx[t].uc_stack.ss_sp = stacks + stack * t; th_ctx[t].uc_stack.ss_size = stack;\n"
    "      th_ctx[t].uc_link = 0; makecontext(&th_ctx[t], th_entry, 0);\n"
    "    }\n"
    "    th_cur = 0; threadIdx = th_tid[0];\n"
    "    swapcontext(&th_main, &th_ctx[0]);\n"
    "  }\n"
    "  delete[] th_ctx; delete[] th_tid; std::free(stacks);\n"
    "  return 0;\n}\n";

/* Builds the kernels of kernels.cu into a CPU library: wrappers th_call_<fn>(float **) per kernel. */
static void build_emu(const char *dir, char *so, size_t solen) {
  char path[512];
  snprintf(path, sizeof path, "%s/kernels.cu", dir);
  char *cu = NULL;
  size_t len = 0;
  CHECK(th_read_file(path, (size_t)1 << 28, &cu, &len) == TH_OK);
  th_buf b;
  th_buf_init(&b, (size_t)1 << 28);
  th_buf_appendf(&b, "#include <stdint.h>\n%s", emu_header);
  CHECK(th_buf_append(&b, cu, len) == TH_OK);
  th_buf names, calls;
  th_buf_init(&names, 1 << 20);
  th_buf_init(&calls, 1 << 20);
  th_buf_appendf(&names, "static const char *th_names[] = {");
  th_buf_appendf(&calls, "static th_fn th_calls[] = {");
  th_buf_appendf(
      &b,
      "typedef void (*th_fn)(float **);\n"
      "struct th_arg { void *p; template <class T> operator T *() const { return (T *)p; } };\n");
  for (const char *p = cu; (p = strstr(p, "__launch_bounds__(")) != NULL; p++) {
    const char *q = strchr(p, ')') + 2, *e = strchr(q, '(');
    char fn[64];
    snprintf(fn, sizeof fn, "%.*s", (int)(e - q), q);
    int nargs = 0;
    for (const char *r = e; *r && *r != ')'; r++) nargs += *r == '*';
    th_buf_appendf(&b, "static void th_call_%s(float **a) { %s(", fn, fn);
    for (int i = 0; i < nargs; i++)
      th_buf_appendf(&b, "%sth_arg{a[%d]}", i ? ", " : "", i); /* long long * too */
    th_buf_appendf(&b, "); }\n");
    th_buf_appendf(&names, "\"%s\", ", fn);
    th_buf_appendf(&calls, "th_call_%s, ", fn);
  }
  th_buf_appendf(&names, "0};\n");
  th_buf_appendf(&calls, "0};\n");
  th_buf_append(&b, names.data, names.len);
  th_buf_append(&b, calls.data, calls.len);
  th_buf_appendf(&b, "%s", emu_launcher);
  snprintf(path, sizeof path, "%s/emu.cpp", dir);
  CHECK(th_write_file_atomic(path, b.data, b.len) == TH_OK);
  snprintf(so, solen, "%s/emu.so", dir);
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "c++ -std=c++17 -O1 -w -fPIC -shared -o %s %s", so, path);
  CHECK(system(cmd) == 0);
  free(cu);
  th_buf_free(&b);
  th_buf_free(&names);
  th_buf_free(&calls);
}

/* The cuda build of net at input h x w into the new folder dir (a mkdtemp template; model.so,
 * model.c, kernels.cu there), and the fake driver pointed at the emulation library of its
 * kernels. */
static void emu_bundle(const char *net, int batch, int h, int w, char *dir) {
  char err[4096] = "";
  CHECK(mkdtemp(dir) != NULL);
  tc_build_opts o;
  memset(&o, 0, sizeof o);
  o.framework = "cuda";
  o.network = net;
  o.batch = batch;
  o.input_h = h;
  o.input_w = w;
  o.work_dir = dir;
  th_status rc = tc_build_bundle(&o, NULL, NULL, NULL, err, sizeof err);
  if (rc != TH_OK) fprintf(stderr, "%s: %s\n", net, err);
  CHECK(rc == TH_OK);
  char emu[512];
  build_emu(dir, emu, sizeof emu);
  CHECK(setenv("TH_FAKECU_KERNELS", emu, 1) == 0);
}

static void emu_bundle_cleanup(const char *dir) {
  const char *files[] = {"model.so",    "model.c",         "kernels.cu", "kernels.cubin",
                         "kernels.ptx", "tunehub_model.h", "emu.cpp",    "emu.so"};
  char p[600];
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, files[i]);
    unlink(p);
  }
  rmdir(dir);
}

static int emu_net(const char *net, int batch, int hw) {
  tc_cuda_device d;
  char err[4096] = "";
  if (tc_cuda_device_query(&d, err, sizeof err) != TH_OK ||
      strcmp(d.name, "tunehub CPU emulator") != 0) {
    fprintf(stderr, "skipped: the fake CUDA driver is not on LD_LIBRARY_PATH (%s)\n",
            err[0] ? err : d.name);
    return 77;
  }
  char dir[] = "/tmp/tc-cuda-emu-net-XXXXXX";
  emu_bundle(net, batch, hw, hw, dir);
  char so[512];
  snprintf(so, sizeof so, "%s/model.so", dir);
  tc_graph *g = NULL;
  CHECK(tc_zoo_build(net, batch, hw, hw, 1, &g, err, sizeof err) == TH_OK);
  th_buf params;
  th_buf_init(&params, (size_t)4 << 30);
  CHECK(tc_params_write(g, &params) == TH_OK);
  int64_t nin = tc_tensor_numel(&g->nodes[0].out), nout = tc_tensor_numel(&g->nodes[g->outputs[0]].out);
  float *x = malloc((size_t)nin * 4), *ref = malloc((size_t)nout * 4), *y = calloc((size_t)nout, 4),
        *y2 = calloc((size_t)nout, 4);
  CHECK(x && ref && y && y2);
  for (int64_t i = 0; i < nin; i++) x[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
  CHECK(tc_ref_run(g, x, ref, err, sizeof err) == TH_OK);
  void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  CHECK(h != NULL);
  int (*create)(const void *, size_t, void **) = (int (*)(const void *, size_t, void **))dlsym(h, "th_model_create");
  int (*run)(void *, const float *, float *) = (int (*)(void *, const float *, float *))dlsym(h, "th_model_run");
  int (*rund)(void *, const void *, void *, void *) = (int (*)(void *, const void *, void *, void *))dlsym(h, "th_model_run_device");
  int (*runio)(void *, const void *const *, void *const *) =
      (int (*)(void *, const void *const *, void *const *))dlsym(h, "th_model_run_io");
  void (*fr)(void *) = (void (*)(void *))dlsym(h, "th_model_free");
  const char *(*lasterr)(void) = (const char *(*)(void))dlsym(h, "th_model_last_error");
  CHECK(create && run && rund && runio && fr && lasterr);
  void *m = NULL;
  if (create(params.data, params.len, &m) != 0) fprintf(stderr, "create: %s\n", lasterr());
  CHECK(m != NULL);
  double t0 = th_now_mono();
  if (run(m, x, y) != 0) fprintf(stderr, "run: %s\n", lasterr());
  double secs = th_now_mono() - t0;
  double maxref = 0, maxdiff = 0;
  for (int64_t i = 0; i < nout; i++) maxref = fmax(maxref, fabs(ref[i]));
  for (int64_t i = 0; i < nout; i++) maxdiff = fmax(maxdiff, fabs((double)y[i] - ref[i]));
  fprintf(stderr, "%s batch %d at %dx%d: emulated run %.1f s, max |cuda - ref| = %.3g of max |ref| %.3g\n", net,
          batch, hw, hw, secs, maxdiff, maxref);
  CHECK(maxref > 0);
  CHECK(maxdiff <= 1e-4 * maxref);
  /* device pointers: with the fake driver device memory is host memory */
  CHECK(rund(m, x, y2, NULL) == 0);
  CHECK(memcmp(y, y2, (size_t)nout * 4) == 0);
  /* th_model_run_io: the same host copies, per tensor */
  memset(y2, 0, (size_t)nout * 4);
  const void *ins[1] = {x};
  void *outs[1] = {y2};
  if (runio(m, ins, outs) != 0) fprintf(stderr, "run_io: %s\n", lasterr());
  CHECK(memcmp(y, y2, (size_t)nout * 4) == 0);
  const void *nulls[1] = {NULL};
  CHECK(runio(m, nulls, outs) == -1);
  CHECK(strstr(lasterr(), "inputs[0] (input) is NULL") != NULL);
  fr(m);
  dlclose(h);
  free(x);
  free(ref);
  free(y);
  free(y2);
  th_buf_free(&params);
  tc_graph_free(g);
  emu_bundle_cleanup(dir);
  return 0;
}

TH_TEST(resnet_18) { return emu_net("resnet-18", 2, 32); }
TH_TEST(mobilenet_v2) { return emu_net("mobilenet-v2", 1, 32); }
TH_TEST(squeezenet_v1_1) { return emu_net("squeezenet_v1.1", 1, 48); }
TH_TEST(mobilenet) { return emu_net("mobilenet", 1, 32); }

/* The fake driver's device, or 0 (the case skips) when another libcuda is the one found. */
static int fake_device(tc_cuda_device *d) {
  char err[4096] = "";
  if (tc_cuda_device_query(d, err, sizeof err) != TH_OK ||
      strcmp(d->name, "tunehub CPU emulator") != 0) {
    fprintf(stderr, "skipped: the fake CUDA driver is not on LD_LIBRARY_PATH\n");
    return 0;
  }
  return 1;
}

/* bert at sequence 2, its q, k and v projections joined into one dense (TC_FUSE_QKV) whose
 * weight and bias the CUDA model concatenates at load from params.bin's own q, k and v tensors
 * (th__cats in its model.c): th_model_run_io gives both outputs within 1e-4 of the reference
 * interpreter's on the unfused graph, with a padded mask. */
TH_TEST(bert) {
  tc_cuda_device d;
  if (!fake_device(&d)) return 77;
  enum { S = 2 };
  char dir[] = "/tmp/tc-cuda-emu-bert-XXXXXX", path[600], err[4096] = "";
  emu_bundle("bert", 1, S, 1, dir);
  snprintf(path, sizeof path, "%s/model.c", dir);
  char *src = NULL;
  size_t len = 0;
  CHECK(th_read_file(path, (size_t)1 << 28, &src, &len) == TH_OK);
  CHECK(strstr(src,
               "{\"encoder.layer.11.attention.self.query+key+value.weight\", 3, "
               "{\"encoder.layer.11.attention.self.query.weight\", "
               "\"encoder.layer.11.attention.self.key.weight\", "
               "\"encoder.layer.11.attention.self.value.weight\"}}") != NULL);
  free(src);
  tc_graph *g = NULL;
  CHECK(tc_zoo_build("bert", 1, S, 1, 1, &g, err, sizeof err) == TH_OK);
  th_buf params;
  th_buf_init(&params, (size_t)4 << 30);
  CHECK(tc_params_write(g, &params) == TH_OK);
  int64_t ids[S], types[S], mask[S];
  for (int i = 0; i < S; i++) {
    ids[i] = (i * 7919 + 101) % 30522;
    types[i] = i >= S / 2;
    mask[i] = i < S - 1; /* the last position is padding */
  }
  const void *ins[3] = {ids, types, mask};
  float *ref[2], *y[2];
  int64_t n[2];
  for (int k = 0; k < 2; k++) {
    n[k] = tc_tensor_numel(&g->nodes[g->outputs[k]].out);
    ref[k] = malloc((size_t)n[k] * 4);
    y[k] = calloc((size_t)n[k], 4);
    CHECK(ref[k] && y[k]);
  }
  CHECK(tc_ref_run_io(g, ins, (void *const *)ref, err, sizeof err) == TH_OK);
  snprintf(path, sizeof path, "%s/model.so", dir);
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  CHECK(h != NULL);
  int (*create)(const void *, size_t, void **) =
      (int (*)(const void *, size_t, void **))dlsym(h, "th_model_create");
  int (*runio)(void *, const void *const *, void *const *) =
      (int (*)(void *, const void *const *, void *const *))dlsym(h, "th_model_run_io");
  void (*fr)(void *) = (void (*)(void *))dlsym(h, "th_model_free");
  const char *(*lasterr)(void) = (const char *(*)(void))dlsym(h, "th_model_last_error");
  CHECK(create && runio && fr && lasterr);
  void *m = NULL;
  if (create(params.data, params.len, &m) != 0) fprintf(stderr, "create: %s\n", lasterr());
  CHECK(m != NULL);
  double t0 = th_now_mono();
  if (runio(m, ins, (void *const *)y) != 0) fprintf(stderr, "run_io: %s\n", lasterr());
  double secs = th_now_mono() - t0;
  for (int k = 0; k < 2; k++) {
    double maxref = 0, maxdiff = 0;
    for (int64_t i = 0; i < n[k]; i++) maxref = fmax(maxref, fabs(ref[k][i]));
    for (int64_t i = 0; i < n[k]; i++) maxdiff = fmax(maxdiff, fabs((double)y[k][i] - ref[k][i]));
    fprintf(stderr, "bert output %d: emulated run %.1f s, max |cuda - ref| %.3g, max |ref| %.3g\n",
            k, secs, maxdiff, maxref);
    CHECK(maxref > 0);
    CHECK(maxdiff <= 1e-4 * maxref);
    free(ref[k]);
    free(y[k]);
  }
  fr(m);
  dlclose(h);
  th_buf_free(&params);
  tc_graph_free(g);
  emu_bundle_cleanup(dir);
  return 0;
}

/* wl's space and fallback config into s and c, written as the kernel th_candidate into a new folder
 * dir (a mkdtemp template), and the fake driver pointed at its emulation library (path in emu). */
static void emu_candidate(const tc_workload *wl, const tc_cuda_target *t, tc_space *s, tc_config *c,
                          char *dir, char *emu, size_t emulen) {
  CHECK(tc_cuda_space(wl, t, s) == TH_OK);
  CHECK(tc_cuda_fallback(wl, t, s, c) == TH_OK);
  CHECK(mkdtemp(dir) != NULL);
  th_buf src;
  th_buf_init(&src, 1 << 24);
  tc_cuda_launch l;
  char err[1024] = "", path[512];
  CHECK(tc_cuda_prelude(&src) == TH_OK);
  CHECK(tc_cuda_kernel_source(wl, c, t, "th_candidate", &src, &l, err, sizeof err) == TH_OK);
  snprintf(path, sizeof path, "%s/kernels.cu", dir);
  CHECK(th_write_file_atomic(path, src.data, src.len) == TH_OK);
  build_emu(dir, emu, emulen);
  CHECK(setenv("TH_FAKECU_KERNELS", emu, 1) == 0);
  th_buf_free(&src);
}

static void emu_cleanup(const char *dir) {
  static const char *files[] = {"kernels.cu", "emu.cpp", "emu.so"};
  char p[600];
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, files[i]);
    unlink(p);
  }
  rmdir(dir);
}

/* tc_cuda_measure through the fake driver: the candidate's CUDA C runs emulated and is checked against the
 * CPU reference (class 0); an impossible tolerance gives class 5; a config over the device limits gives
 * class 1 without compiling. The fake's events report 1 ms per launch, so the timing arithmetic (number
 * grown until a repeat lasts min_repeat_ms, cost per launch) is checked exactly. */
TH_TEST(measure_emulated) {
  tc_cuda_device d;
  if (!fake_device(&d)) return 77;
  tc_cuda_target t;
  CHECK(tc_cuda_target_init(&t, d.arch) == TH_OK);
  tc_workload wl;
  memset(&wl, 0, sizeof wl);
  wl.kernel = TC_KERNEL_CONV2D;
  wl.n = 2, wl.c = 5, wl.h = wl.w = 9, wl.oc = 6, wl.kh = wl.kw = 3, wl.sh = wl.sw = 2;
  wl.pt = wl.pl = wl.pb = wl.pr = 1;
  wl.oh = wl.ow = 5;
  wl.in_cb = wl.out_cb = 1;
  wl.epilogue = TC_EPI_BIAS | TC_EPI_RESIDUAL | TC_EPI_RELU;
  tc_space s;
  tc_config c;
  char dir[] = "/tmp/tc-cuda-emu-meas-XXXXXX", emu[512];
  emu_candidate(&wl, &t, &s, &c, dir, emu, sizeof emu);
  tc_measure_opts o;
  tc_measure_opts_default(&o);
  o.repeat = 5;
  o.min_repeat_ms = 4;
  tc_measure_result r;
  CHECK(tc_cuda_measure(&wl, &c, &t, &o, &r) == TH_OK);
  if (r.error_class != TC_ERROR_CLASS_NONE) fprintf(stderr, "class %d: %s\n", r.error_class, r.msg);
  CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_NONE);
  fprintf(stderr, "measured: %.3g s per launch (number %d), NVRTC %.2f s, max rel err %.2g\n", r.cost_mean_s,
          r.number, r.compile_s, r.max_rel_err);
  CHECK(r.number >= 4 && fabs(r.cost_mean_s - 1e-3) < 1e-9 && r.cost_std_s < 1e-9);
  o.rtol = -1;
  o.atol = -1;
  CHECK(tc_cuda_measure(&wl, &c, &t, &o, &r) == TH_OK);
  CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_WRONG_ANSWER);
  CHECK(r.cost_mean_s >= 1e9);
  /* over the limits: instantiation error, before NVRTC */
  int kf = tc_space_knob(&s, "tile_f"), ky = tc_space_knob(&s, "tile_y"), kx = tc_space_knob(&s, "tile_x");
  tc_workload big = wl;
  big.c = 64, big.h = big.w = 64, big.oc = 256, big.sh = big.sw = 1, big.oh = big.ow = 64;
  CHECK(tc_cuda_space(&big, &t, &s) == TH_OK);
  CHECK(tc_cuda_fallback(&big, &t, &s, &c) == TH_OK);
  for (int v = 0; v < s.knobs[kf].nvalues; v++)
    if (s.knobs[kf].values[v][2] == 64) c.idx[kf] = v;
  for (int v = 0; v < s.knobs[ky].nvalues; v++)
    if (s.knobs[ky].values[v][2] == 32) c.idx[ky] = v;
  for (int v = 0; v < s.knobs[kx].nvalues; v++)
    if (s.knobs[kx].values[v][2] == 32) c.idx[kx] = v;
  CHECK(tc_cuda_measure(&big, &c, &t, &o, &r) == TH_OK);
  CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_INSTANTIATION);
  CHECK(r.compile_s == 0);
  emu_cleanup(dir);
  return 0;
}

/* An embedding through tc_cuda_measure and the fake driver: the int64 index buffer (seeded rows and
 * indices just outside the table) goes to the kernel's `long long *` and the check against
 * tc_ref_kernel passes; the target carries the limits the (fake) device reports. */
TH_TEST(measure_emulated_embedding) {
  tc_cuda_device d;
  if (!fake_device(&d)) return 77;
  CHECK(d.max_shared_bytes == 48 * 1024 && d.max_threads == 1024);
  tc_cuda_target t;
  CHECK(tc_cuda_target_init(&t, d.arch) == TH_OK);
  tc_workload wl;
  memset(&wl, 0, sizeof wl);
  wl.kernel = TC_KERNEL_EMBEDDING;
  wl.n = 300, wl.c = 50, wl.oc = 12, wl.h = wl.w = wl.oh = wl.ow = 1;
  wl.in_cb = wl.out_cb = 1;
  tc_space s;
  tc_config c;
  char dir[] = "/tmp/tc-cuda-emu-emb-XXXXXX", emu[512];
  emu_candidate(&wl, &t, &s, &c, dir, emu, sizeof emu);
  tc_measure_result r;
  CHECK(tc_cuda_measure(&wl, &c, &t, NULL, &r) == TH_OK);
  if (r.error_class != TC_ERROR_CLASS_NONE) fprintf(stderr, "class %d: %s\n", r.error_class, r.msg);
  CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_NONE);
  emu_cleanup(dir);
  return 0;
}
