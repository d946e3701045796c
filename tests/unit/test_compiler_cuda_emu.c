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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "graph.h"
#include "link.h"
#include "model/tunehub_model.h"
#include "onnx.h"
#include "params.h"
#include "ref/ref.h"
#include "tc.h"
#include "tc_cuda.h"
#include "tc_cuda_measure.h"
#include "test_cuda_emu_tc.h"
#include "test_cuda_gpu_gate.h"
#include "test_cuda_tf32_check.h"
#include "th_test.h"
#include "th_util.h"
#include "zoo.h"
/* after test_cuda_tensor_wl.h (via test_cuda_emu_tc.h), whose parameters named tb it would shadow */
#include "onnx.h"
#include "onnx_build.h"

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
    "#define __syncthreads() th_barrier()\n"
    /* coroutines run one at a time: a warp's rendezvous is the block's barrier, which holds for
     * kernels whose warps all issue their mma the same number of times (the tensor-core GEMM) */
    "#define TH_EMU_TID() th_cur\n#define TH_EMU_WARP_SYNC() th_barrier()\n" TH_EMU_TC_SRC;

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
    "  float *a[6] = {0, 0, 0, 0, 0, 0};\n"
    "  for (int i = 0; i < 6 && params[i]; i++) a[i] = (float *)(uintptr_t)*(const unsigned long long *)params[i];\n"
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
    "    th_cur = 0; threadIdx = th_tid[0]; th_emu_tc_reset();\n"
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

/* A network's cuda bundle built in a fresh folder, loaded, and the fake driver pointed at its
 * emulated kernels; with the graph, its params.bin, an input and the reference interpreter's output. */
typedef struct emu_bundle {
  char dir[64], so[512];
  void *h;
  tc_graph *g;
  th_buf params;
  float *x, *ref;
  int64_t nin, nout;
  int (*create)(const void *, size_t, void **);
  int (*run)(void *, const float *, float *);
  int (*rund)(void *, const void *, void *, void *);
  int (*runio)(void *, const void *const *, void *const *);
  void (*fr)(void *);
  const char *(*lasterr)(void);
  const char *(*mode)(const void *);
  int nkernels; /* kernel calls per run */
} emu_bundle;

/* 1 when the fake driver is the libcuda.so.1 that dlopen finds, else 0 (the case skips). */
static int fake_driver(void) {
  tc_cuda_device d;
  char err[4096] = "";
  if (tc_cuda_device_query(&d, err, sizeof err) != TH_OK || strcmp(d.name, "tunehub CPU emulator") != 0) {
    fprintf(stderr, "skipped: the fake CUDA driver is not on LD_LIBRARY_PATH (%s)\n", err[0] ? err : d.name);
    return 0;
  }
  return 1;
}

/* One of the fake driver's counters (test_compiler_cuda_fakecu.c), read through dlsym. */
static long fake_counter(const char *name) {
  void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  CHECK(cu != NULL);
  const long *c = (const long *)dlsym(cu, name);
  CHECK(c != NULL);
  long v = *c;
  dlclose(cu);
  return v;
}

static void emu_bundle_load(emu_bundle *e, const char *path);

/* The cuda build of net at input h x w for arch (NULL: the device's) into the new folder dir (a mkdtemp
 * template; model.so, model.c, kernels.cu there), and the fake driver pointed at the emulation library of
 * its kernels. */
/* The precision of the next emu_build (NULL: fp32) and the tolerance emu_check allows, relative to
 * the largest reference output. */
static const char *emu_precision;
static double emu_tolerance = 1e-4;
static int emu_want_split; /* 1: the tf32 build must have split-k kernels */

static void emu_build(const char *net, int batch, int h, int w, const char *arch, char *dir) {
  CHECK(mkdtemp(dir) != NULL);
  tc_build_opts o;
  memset(&o, 0, sizeof o);
  o.framework = "cuda";
  o.precision = emu_precision;
  o.network = net;
  o.batch = batch;
  o.input_h = h;
  o.input_w = w;
  o.work_dir = dir;
  o.arch = arch;
  char err[4096] = "";
  th_status rc = tc_build_bundle(&o, NULL, NULL, NULL, err, sizeof err);
  if (rc != TH_OK) fprintf(stderr, "%s: %s\n", net, err);
  CHECK(rc == TH_OK);
  char emu[512];
  build_emu(dir, emu, sizeof emu);
  CHECK(setenv("TH_FAKECU_KERNELS", emu, 1) == 0);
  if (emu_precision) { /* tf32: the convs run on tensor cores, as kernels.cu says */
    char path[600], *cu = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "%s/kernels.cu", dir);
    CHECK(th_read_file(path, (size_t)1 << 28, &cu, &len) == TH_OK);
    int mma = 0, split = 0;
    for (const char *p = cu; (p = strstr(p, "th_mma_tf32(&")) != NULL; p++) mma++;
    for (const char *p = cu; (p = strstr(p, "_r(float")) != NULL; p++) split++;
    fprintf(stderr, "%s at %s: %d mma calls, %d split-k kernels\n", net, emu_precision, mma, split);
    CHECK(mma > 0 && strstr(cu, "conv2d_nchwc") != NULL && strstr(cu, "tf32  config") != NULL);
    CHECK(split > 0 || !emu_want_split);
    free(cu);
  }
}

/* Removes what emu_build and the relinks leave in dir, and dir. */
static void emu_dir_cleanup(const char *dir) {
  const char *files[] = {"model.so", "model.c", "kernels.cu", "kernels.cubin", "kernels.ptx", "tunehub_model.h",
                         "emu.cpp", "emu.so", "model2.c", "model2.so"};
  char p[600];
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, files[i]);
    unlink(p);
  }
  rmdir(dir);
}

static void emu_bundle_open(emu_bundle *e, const char *net, int batch, int hw, const char *arch) {
  memset(e, 0, sizeof *e);
  snprintf(e->dir, sizeof e->dir, "/tmp/tc-cuda-emu-net-XXXXXX");
  emu_build(net, batch, hw, hw, arch, e->dir);
  char err[4096] = "";
  snprintf(e->so, sizeof e->so, "%s/model.so", e->dir);
  CHECK(tc_zoo_build(net, batch, hw, hw, 1, &e->g, err, sizeof err) == TH_OK);
  th_buf_init(&e->params, (size_t)4 << 30);
  CHECK(tc_params_write(e->g, &e->params) == TH_OK);
  e->nin = tc_tensor_numel(&e->g->nodes[0].out);
  e->nout = tc_tensor_numel(&e->g->nodes[e->g->outputs[0]].out);
  e->x = malloc((size_t)e->nin * 4);
  e->ref = malloc((size_t)e->nout * 4);
  CHECK(e->x && e->ref);
  for (int64_t i = 0; i < e->nin; i++) e->x[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
  CHECK(tc_ref_run(e->g, e->x, e->ref, err, sizeof err) == TH_OK);
  emu_bundle_load(e, e->so);
}

/* e's entry points from the model .so at path (e's own, or one relinked from an edited model.c). */
static void emu_bundle_load(emu_bundle *e, const char *path) {
  e->h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  CHECK(e->h != NULL);
  e->create = (int (*)(const void *, size_t, void **))dlsym(e->h, "th_model_create");
  e->run = (int (*)(void *, const float *, float *))dlsym(e->h, "th_model_run");
  e->rund = (int (*)(void *, const void *, void *, void *))dlsym(e->h, "th_model_run_device");
  e->runio = (int (*)(void *, const void *const *, void *const *))dlsym(e->h, "th_model_run_io");
  e->fr = (void (*)(void *))dlsym(e->h, "th_model_free");
  e->lasterr = (const char *(*)(void))dlsym(e->h, "th_model_last_error");
  e->mode = (const char *(*)(const void *))dlsym(e->h, "th_model_cuda_launch_mode");
  const struct th_model_info *(*info)(void) = (const struct th_model_info *(*)(void))dlsym(e->h, "th_model_info");
  CHECK(e->create && e->run && e->rund && e->runio && e->fr && e->lasterr && e->mode && info);
  e->nkernels = info()->num_kernels;
  CHECK(e->nkernels > 0);
}

/* A model of e's bundle; the test fails when th_model_create does. */
static void *emu_model(const emu_bundle *e) {
  void *m = NULL;
  if (e->create(e->params.data, e->params.len, &m) != 0) fprintf(stderr, "create: %s\n", e->lasterr());
  CHECK(m != NULL);
  return m;
}

/* y against e's reference: within emu_tolerance (1e-4 at fp32) of the largest reference value. */
static void emu_check(const emu_bundle *e, const float *y, const char *what) {
  double maxref = 0, maxdiff = 0;
  for (int64_t i = 0; i < e->nout; i++) maxref = fmax(maxref, fabs(e->ref[i]));
  for (int64_t i = 0; i < e->nout; i++) maxdiff = fmax(maxdiff, fabs((double)y[i] - e->ref[i]));
  fprintf(stderr, "%s: max |cuda - ref| = %.3g of max |ref| %.3g (%.2g)\n", what, maxdiff, maxref,
          maxref > 0 ? maxdiff / maxref : 0.0);
  CHECK(maxref > 0);
  CHECK(maxdiff <= emu_tolerance * maxref);
}

static void emu_bundle_close(emu_bundle *e) {
  dlclose(e->h);
  free(e->x);
  free(e->ref);
  th_buf_free(&e->params);
  tc_graph_free(e->g);
  emu_dir_cleanup(e->dir);
}

/* Builds NET for ARCH (NULL: the device's), runs the bundle on the fake driver and compares it with the
 * reference; with REFUSED set, th_model_create must fail and its message hold REFUSED instead. The host
 * copies of th_model_run and th_model_run_io go through pinned buffers (no pageable async copy). */
static int emu_net_arch(const char *net, int batch, int hw, const char *arch, const char *refused) {
  if (!fake_driver()) return 77;
  emu_bundle e;
  emu_bundle_open(&e, net, batch, hw, arch);
  void *m = NULL;
  if (e.create(e.params.data, e.params.len, &m) != 0) fprintf(stderr, "create: %s\n", e.lasterr());
  if (refused) {
    CHECK(m == NULL);
    CHECK(strstr(e.lasterr(), refused) != NULL);
  }
  CHECK(m != NULL || refused);
  if (m) {
    float *y = calloc((size_t)e.nout, 4), *y2 = calloc((size_t)e.nout, 4);
    CHECK(y && y2);
    long pageable = fake_counter("th_fakecu_pageable_copies");
    double t0 = th_now_mono();
    if (e.run(m, e.x, y) != 0) fprintf(stderr, "run: %s\n", e.lasterr());
    double secs = th_now_mono() - t0;
    char what[128];
    snprintf(what, sizeof what, "%s batch %d at %dx%d: emulated run %.1f s", net, batch, hw, hw, secs);
    emu_check(&e, y, what);
    /* device pointers: with the fake driver device memory is host memory */
    CHECK(e.rund(m, e.x, y2, NULL) == 0);
    CHECK(memcmp(y, y2, (size_t)e.nout * 4) == 0);
    /* device buffers filled by a synchronous copy from pageable memory, as a CUDA caller fills them
     * (and test_compiler_cuda_gpu's check): with stream NULL the run is ordered after that copy */
    const tc_cu *cu = NULL;
    char cuerr[512];
    CHECK(tc__cu_get(&cu, cuerr, sizeof cuerr) == TH_OK);
    tc_cu_ptr din = 0, dout = 0;
    CHECK(cu->MemAlloc(&din, (size_t)e.nin * 4) == 0 && cu->MemAlloc(&dout, (size_t)e.nout * 4) == 0);
    CHECK(cu->MemcpyHtoD(din, e.x, (size_t)e.nin * 4) == 0);
    memset(y2, 0, (size_t)e.nout * 4);
    CHECK(e.rund(m, (const void *)(uintptr_t)din, (void *)(uintptr_t)dout, NULL) == 0);
    CHECK(cu->MemcpyDtoH(y2, dout, (size_t)e.nout * 4) == 0);
    CHECK(memcmp(y, y2, (size_t)e.nout * 4) == 0);
    cu->MemFree(din);
    cu->MemFree(dout);
    /* th_model_run_io: the same host copies, per tensor */
    memset(y2, 0, (size_t)e.nout * 4);
    const void *ins[1] = {e.x};
    void *outs[1] = {y2};
    if (e.runio(m, ins, outs) != 0) fprintf(stderr, "run_io: %s\n", e.lasterr());
    CHECK(memcmp(y, y2, (size_t)e.nout * 4) == 0);
    CHECK(fake_counter("th_fakecu_pageable_copies") == pageable);
    const void *nulls[1] = {NULL};
    CHECK(e.runio(m, nulls, outs) == -1);
    CHECK(strstr(e.lasterr(), "inputs[0] (input) is NULL") != NULL);
    e.fr(m);
    free(y);
    free(y2);
  }
  emu_bundle_close(&e);
  return 0;
}

static int emu_net(const char *net, int batch, int hw) { return emu_net_arch(net, batch, hw, NULL, NULL); }

/* ---- ONNX 3-D windows and dilated max pools (issue 38) ---- */

/* The ONNX file at path built for cuda at batch into a new folder e->dir (bytes, when not NULL, are
 * written there first as model.onnx and path is ignored), the fake driver pointed at its emulated
 * kernels, and the file imported at that batch with its weights into e->g and e->params. */
static void emu_onnx_bundle(emu_bundle *e, const char *path, const uint8_t *bytes, size_t len,
                            const char *network, int batch) {
  char file[600], err[4096] = "", emu[512];
  snprintf(e->dir, sizeof e->dir, "/tmp/tc-cuda-emu-onnx-XXXXXX");
  CHECK(mkdtemp(e->dir) != NULL);
  snprintf(file, sizeof file, "%s", path ? path : "");
  if (bytes) {
    snprintf(file, sizeof file, "%s/model.onnx", e->dir);
    CHECK(th_write_file_atomic(file, bytes, len) == TH_OK);
  }
  tc_build_opts o;
  memset(&o, 0, sizeof o);
  o.framework = "cuda";
  o.network = network;
  o.onnx_path = file;
  o.batch = batch;
  o.work_dir = e->dir;
  th_status rc = tc_build_bundle(&o, NULL, NULL, NULL, err, sizeof err);
  if (rc != TH_OK) fprintf(stderr, "%s: build: %s\n", file, err);
  CHECK(rc == TH_OK);
  build_emu(e->dir, emu, sizeof emu);
  CHECK(setenv("TH_FAKECU_KERNELS", emu, 1) == 0);
  snprintf(e->so, sizeof e->so, "%s/model.so", e->dir);
  tc_onnx_opts io = {network, batch, NULL, 1};
  rc = tc_onnx_import_file(file, &io, &e->g, NULL, err, sizeof err);
  if (rc != TH_OK) fprintf(stderr, "%s: import: %s\n", file, err);
  CHECK(rc == TH_OK);
  th_buf_init(&e->params, (size_t)1 << 30);
  CHECK(tc_params_write(e->g, &e->params) == TH_OK);
}

/* pytorch-converted's TEST (Debian's libonnx-testdata; 77 without it) built for cuda at batch 1 and
 * run on the fake driver against the reference interpreter: 3-D Conv (folded and stacked over the
 * depth), 3-D pools and dilated max pools lower onto kernels every backend has (onnx_ops_conv3d.c).
 */
static int emu_onnx(const char *test, int want_dense) {
  if (!fake_driver()) return 77;
  char path[512], err[4096] = "";
  snprintf(path, sizeof path, "/usr/share/libonnx-testdata/data/pytorch-converted/%s/model.onnx",
           test);
  if (access(path, R_OK) != 0) {
    fprintf(stderr, "skipped: %s is missing (libonnx-testdata)\n", path);
    return 77;
  }
  emu_bundle e;
  memset(&e, 0, sizeof e);
  emu_onnx_bundle(&e, path, NULL, 0, "t", 1);
  int dense = 0;
  for (int i = 0; i < e.g->nnodes; i++) dense += e.g->nodes[i].op == TC_OP_DENSE;
  fprintf(stderr, "%s: %d nodes, %d dense\n", test, e.g->nnodes, dense);
  CHECK(want_dense < 0 || (dense > 0) == want_dense);
  e.nin = tc_tensor_numel(&e.g->nodes[0].out);
  e.nout = tc_tensor_numel(&e.g->nodes[e.g->outputs[0]].out);
  e.x = malloc((size_t)e.nin * 4);
  e.ref = malloc((size_t)e.nout * 4);
  CHECK(e.x && e.ref);
  for (int64_t i = 0; i < e.nin; i++) e.x[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
  CHECK(tc_ref_run(e.g, e.x, e.ref, err, sizeof err) == TH_OK);
  emu_bundle_load(&e, e.so);
  void *m = emu_model(&e);
  float *y = calloc((size_t)e.nout, 4);
  CHECK(y != NULL);
  if (e.run(m, e.x, y) != 0) fprintf(stderr, "run: %s\n", e.lasterr());
  emu_check(&e, y, test);
  free(y);
  e.fr(m);
  emu_bundle_close(&e);
  return 0;
}

TH_TEST(onnx_conv3d_stacked) { return emu_onnx("test_Conv3d_dilated", 1); }
TH_TEST(onnx_conv3d_folded_groups) { return emu_onnx("test_Conv3d_groups", 0); }
TH_TEST(onnx_avgpool3d) { return emu_onnx("test_AvgPool3d_stride1_pad0_gpu_input", -1); }
TH_TEST(onnx_maxpool3d) { return emu_onnx("test_MaxPool3d_stride_padding", -1); }
TH_TEST(onnx_maxpool2d_dilated) { return emu_onnx("test_MaxPool2d_stride_padding_dilation", -1); }
/* grouped 2-D and 1-D convs: conv2d workloads of groups (cuda/ops/conv2d.c), not expanded
 * weights */
TH_TEST(onnx_conv2d_groups) { return emu_onnx("test_Conv2d_groups", 0); }
TH_TEST(onnx_conv1d_groups) { return emu_onnx("test_Conv1d_groups", 0); }
/* dilated 2-D and 1-D convs: conv2d workloads of dilation (taps dil apart in the staged patch) */
TH_TEST(onnx_conv2d_dilated) { return emu_onnx("test_Conv2d_dilated", 0); }
TH_TEST(onnx_conv1d_dilated) { return emu_onnx("test_Conv1d_dilated", 0); }

/* ---- CUDA graphs (issue 25) ---------------------------------------------------------------------------- */

/* Runs e's model three times through th_model_run into y (3 x nout floats): each matches the reference
 * and the first bit for bit; the fake driver's cuLaunchKernel count grows by launches_per_run per run
 * (0 when a graph replays) and its replay count by replays_per_run. */
static void emu_runs(const emu_bundle *e, void *m, float *y, long launches_per_run, long replays_per_run) {
  for (int i = 0; i < 3; i++) {
    long l0 = fake_counter("th_fakecu_launches"), r0 = fake_counter("th_fakecu_replays");
    float *yi = y + (size_t)i * (size_t)e->nout;
    if (e->run(m, e->x, yi) != 0) fprintf(stderr, "run %d: %s\n", i, e->lasterr());
    char what[96];
    snprintf(what, sizeof what, "run %d, %s", i, e->mode(m));
    emu_check(e, yi, what);
    CHECK(memcmp(yi, y, (size_t)e->nout * 4) == 0);
    CHECK_EQ_INT((int)(fake_counter("th_fakecu_launches") - l0), (int)launches_per_run);
    CHECK_EQ_INT((int)(fake_counter("th_fakecu_replays") - r0), (int)replays_per_run);
  }
}

/* th_model_create records every kernel call into a graph (captured, not run); each th_model_run and
 * th_model_run_io replays it with no cuLaunchKernel; TH_CUDA_GRAPHS=0 gives plain launches (one per call)
 * with the same bits. */
TH_TEST(graph_replays) {
  if (!fake_driver()) return 77;
  emu_bundle e;
  emu_bundle_open(&e, "squeezenet_v1.1", 1, 48, NULL);
  CHECK(unsetenv("TH_CUDA_GRAPHS") == 0);
  long c0 = fake_counter("th_fakecu_captured"), l0 = fake_counter("th_fakecu_launches");
  void *m = emu_model(&e);
  CHECK_STR(e.mode(m), "graph");
  CHECK_EQ_INT((int)(fake_counter("th_fakecu_captured") - c0), e.nkernels);
  CHECK(fake_counter("th_fakecu_launches") == l0); /* captured, not run */
  float *y = calloc((size_t)e.nout * 3, 4), *yp = calloc((size_t)e.nout * 3, 4);
  CHECK(y && yp);
  emu_runs(&e, m, y, 0, 1);
  long r0 = fake_counter("th_fakecu_replays");
  const void *ins[1] = {e.x};
  void *outs[1] = {yp};
  CHECK(e.runio(m, ins, outs) == 0);
  CHECK(memcmp(yp, y, (size_t)e.nout * 4) == 0);
  CHECK(fake_counter("th_fakecu_replays") == r0 + 1);
  e.fr(m);
  CHECK(setenv("TH_CUDA_GRAPHS", "0", 1) == 0);
  m = emu_model(&e);
  CHECK(unsetenv("TH_CUDA_GRAPHS") == 0);
  CHECK_STR(e.mode(m), "launches (TH_CUDA_GRAPHS=0)");
  emu_runs(&e, m, yp, e.nkernels, 0);
  CHECK(memcmp(yp, y, (size_t)e.nout * 4) == 0);
  e.fr(m);
  free(y);
  free(yp);
  emu_bundle_close(&e);
  return 0;
}

/* The graph holds only the model's own memory: th_model_run_device with two input/output pairs (and a
 * caller's stream for the second) writes each pair's own result, and the first pair again after the
 * second. */
TH_TEST(graph_run_device_pointers) {
  if (!fake_driver()) return 77;
  emu_bundle e;
  emu_bundle_open(&e, "squeezenet_v1.1", 1, 48, NULL);
  void *m = emu_model(&e);
  CHECK_STR(e.mode(m), "graph");
  size_t nb = (size_t)e.nout * 4;
  float *x2 = malloc((size_t)e.nin * 4), *y1 = malloc(nb), *y2 = malloc(nb), *d1 = malloc(nb), *d2 = malloc(nb);
  CHECK(x2 && y1 && y2 && d1 && d2);
  for (int64_t i = 0; i < e.nin; i++) x2[i] = (float)((i * 40503u) % 777) / 300.0f - 1.2f;
  CHECK(e.run(m, e.x, y1) == 0);
  CHECK(e.run(m, x2, y2) == 0);
  CHECK(memcmp(y1, y2, nb) != 0);
  emu_check(&e, y1, "host run");
  /* with the fake driver device memory is host memory, and a stream is the fake's */
  void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  CHECK(cu != NULL);
  int (*stream_create)(void **, unsigned) = (int (*)(void **, unsigned))dlsym(cu, "cuStreamCreate");
  int (*stream_destroy)(void *) = (int (*)(void *))dlsym(cu, "cuStreamDestroy_v2");
  void *st = NULL;
  CHECK(stream_create && stream_destroy && stream_create(&st, 1) == 0);
  long r0 = fake_counter("th_fakecu_replays"), l0 = fake_counter("th_fakecu_launches");
  CHECK(e.rund(m, e.x, d1, NULL) == 0);
  CHECK(e.rund(m, x2, d2, st) == 0);
  CHECK(memcmp(d1, y1, nb) == 0);
  CHECK(memcmp(d2, y2, nb) == 0);
  memset(d1, 0, nb);
  CHECK(e.rund(m, e.x, d1, NULL) == 0);
  CHECK(memcmp(d1, y1, nb) == 0);
  CHECK(fake_counter("th_fakecu_replays") == r0 + 3 && fake_counter("th_fakecu_launches") == l0);
  stream_destroy(st);
  dlclose(cu);
  e.fr(m);
  free(x2);
  free(y1);
  free(y2);
  free(d1);
  free(d2);
  emu_bundle_close(&e);
  return 0;
}

/* Plain launches instead of a graph, with the reason `mode`: the model is created with the fake driver's
 * variable `env` set (NULL: none), and its runs launch every kernel and match the reference. */
static int emu_graph_fallback(const char *env, const char *mode) {
  if (!fake_driver()) return 77;
  emu_bundle e;
  emu_bundle_open(&e, "squeezenet_v1.1", 1, 48, NULL);
  CHECK(!env || setenv(env, "1", 1) == 0);
  void *m = emu_model(&e);
  CHECK(!env || unsetenv(env) == 0);
  CHECK_STR(e.mode(m), mode);
  CHECK_STR(e.lasterr(), ""); /* a fallback is no error */
  float *y = calloc((size_t)e.nout * 3, 4);
  CHECK(y);
  emu_runs(&e, m, y, e.nkernels, 0);
  e.fr(m);
  free(y);
  emu_bundle_close(&e);
  return 0;
}

/* A driver without the graph entry points: the fake built with TH_FAKECU_NO_GRAPHS, first on
 * LD_LIBRARY_PATH for this case. */
TH_TEST(graph_driver_without_graphs) {
  return emu_graph_fallback(NULL, "launches (the driver lacks cuStreamBeginCapture_v2)");
}

/* A capture the driver refuses ($TH_FAKECU_CAPTURE_FAIL). */
TH_TEST(graph_capture_fails_falls_back) {
  return emu_graph_fallback("TH_FAKECU_CAPTURE_FAIL",
                            "launches (cuStreamBeginCapture: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (fake driver))");
}

/* ---- dynamic shared memory (issue 25) --------------------------------------------------------------- */

/* e's model.c with the first kernel's dynamic shared bytes (0 in every generated table today) set to
 * bytes, linked into model2.so and loaded in place of model.so. */
static void emu_relink_dyn_shared(emu_bundle *e, unsigned bytes) {
  char path[600], so[600], err[4096] = "";
  snprintf(path, sizeof path, "%s/model.c", e->dir);
  char *c = NULL;
  size_t len = 0;
  CHECK(th_read_file(path, (size_t)1 << 30, &c, &len) == TH_OK);
  char *row = strstr(c, "}, 0u}, /* ");
  CHECK(row != NULL);
  th_buf b;
  th_buf_init(&b, (size_t)1 << 30);
  CHECK(th_buf_append(&b, c, (size_t)(row - c)) == TH_OK);
  CHECK(th_buf_appendf(&b, "}, %uu}, /* ", bytes) == TH_OK);
  CHECK(th_buf_append(&b, row + 11, len - (size_t)(row + 11 - c)) == TH_OK);
  snprintf(path, sizeof path, "%s/model2.c", e->dir);
  CHECK(th_write_file_atomic(path, b.data, b.len) == TH_OK);
  snprintf(so, sizeof so, "%s/model2.so", e->dir);
  const char *srcs[1] = {path};
  dlclose(e->h);
  unlink(so); /* a fresh file: the previous model2.so may still be mapped */
  th_status rc = tc_link_so(0, NULL, 1, srcs, so, err, sizeof err);
  if (rc != TH_OK) fprintf(stderr, "%s\n", err);
  CHECK(rc == TH_OK);
  emu_bundle_load(e, so);
  free(c);
  th_buf_free(&b);
}

/* A kernel with 64 KiB of dynamic shared memory opts in once at create (cuFuncSetAttribute) and every
 * replay passes the bytes (the fake driver refuses a launch over 48 KiB without the opt-in); one with
 * more than the device allows is refused at create, by name. */
TH_TEST(dynamic_shared_over_48k) {
  if (!fake_driver()) return 77;
  emu_bundle e;
  emu_bundle_open(&e, "squeezenet_v1.1", 1, 48, NULL);
  void *m = emu_model(&e);
  CHECK(fake_counter("th_fakecu_opt_ins") == 0);
  float *y = calloc((size_t)e.nout * 3, 4);
  CHECK(y);
  emu_runs(&e, m, y, 0, 1);
  CHECK(fake_counter("th_fakecu_dyn_launches") == 0);
  e.fr(m);
  emu_relink_dyn_shared(&e, 64 * 1024);
  m = emu_model(&e);
  CHECK_STR(e.mode(m), "graph");
  CHECK(fake_counter("th_fakecu_opt_ins") == 1);
  emu_runs(&e, m, y, 0, 1);
  CHECK(fake_counter("th_fakecu_dyn_launches") == 3 && fake_counter("th_fakecu_dyn_max") == 64 * 1024);
  e.fr(m);
  emu_relink_dyn_shared(&e, 300 * 1024);
  m = NULL;
  CHECK(e.create(e.params.data, e.params.len, &m) == -1 && m == NULL);
  fprintf(stderr, "%s\n", e.lasterr());
  CHECK(strstr(e.lasterr(), "needs 307200 bytes of dynamic shared memory per block; the device allows 232448"));
  free(y);
  emu_bundle_close(&e);
  return 0;
}

/* ---- the GPU tests' gate (test_cuda_gpu_gate.h)
 * --------------------------------------------------------- */

/* Against the fake driver, whose cuInit result and device count the environment sets: a device
 * runs, no device (CUDA_ERROR_NO_DEVICE, the stub library, a count of 0) skips, any other cuInit
 * error fails, and TH_TEST_GPU_REQUIRED=1 turns a skip into a failure. */
TH_TEST(gpu_gate_verdicts) {
  if (!fake_driver()) return 77;
  static const struct {
    const char *init, *count, *required;
    int verdict;
    const char *why;
  } cases[] = {
      {NULL, NULL, NULL, GPU_GATE_RUN, "1 CUDA device(s)"},
      {"100", NULL, NULL, GPU_GATE_SKIP, "CUDA_ERROR_NO_DEVICE"},
      {"34", NULL, NULL, GPU_GATE_SKIP, "CUDA_ERROR_STUB_LIBRARY"},
      {NULL, "0", NULL, GPU_GATE_SKIP, "the driver counts none"},
      {"999", NULL, NULL, GPU_GATE_FAIL, "CUresult 999: a device that errors"},
      {"35", NULL, NULL, GPU_GATE_FAIL, "CUresult 35"},
      {"100", NULL, "1", GPU_GATE_FAIL, "TH_TEST_GPU_REQUIRED=1"},
      {NULL, "0", "1", GPU_GATE_FAIL, "TH_TEST_GPU_REQUIRED=1"},
      {NULL, NULL, "1", GPU_GATE_RUN, "1 CUDA device(s)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *names[3] = {"TH_FAKECU_INIT", "TH_FAKECU_COUNT", "TH_TEST_GPU_REQUIRED"};
    const char *vals[3] = {cases[i].init, cases[i].count, cases[i].required};
    for (int k = 0; k < 3; k++)
      CHECK((vals[k] ? setenv(names[k], vals[k], 1) : unsetenv(names[k])) == 0);
    char why[512] = "";
    int v = gpu_gate(why, sizeof why);
    fprintf(stderr, "case %zu: %d (%s)\n", i, v, why);
    CHECK_EQ_INT(v, cases[i].verdict);
    CHECK(strstr(why, cases[i].why) != NULL);
  }
  return 0;
}

/* Without any libcuda.so.1 (this case runs without the fake driver on the path) the gate skips,
 * unless TH_TEST_GPU_REQUIRED=1 says a device is there. A host with a driver skips the case. */
TH_TEST(gpu_gate_no_driver) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h) {
    fprintf(stderr, "skipped: this host has a libcuda.so.1\n");
    return 77;
  }
  char why[512] = "";
  CHECK(unsetenv("TH_TEST_GPU_REQUIRED") == 0);
  CHECK_EQ_INT(gpu_gate(why, sizeof why), GPU_GATE_SKIP);
  CHECK(strstr(why, "no CUDA device: libcuda.so.1 does not load") != NULL);
  CHECK(setenv("TH_TEST_GPU_REQUIRED", "1", 1) == 0);
  CHECK_EQ_INT(gpu_gate(why, sizeof why), GPU_GATE_FAIL);
  return 0;
}

TH_TEST(resnet_18) { return emu_net("resnet-18", 2, 32); }

/* resnet-18 at precision tf32 (every conv and the dense head on tensor cores at their fallbacks)
 * against the fp32 reference: within 5e-3 of the largest output, the whole-network tf32 tolerance of
 * compiler/README.md (each layer's inputs rounded to 10 mantissa bits, errors of about 1e-3 of a
 * layer's output). The fake device has an H100's 132 SMs, so that the late layers (512 channels of
 * 1x1 maps at 32x32 input: a few tiles) split K: the model's launch plan runs their second
 * kernels with the scratch. */
TH_TEST(resnet_18_tf32) {
  emu_precision = "tf32";
  emu_tolerance = 5e-3;
  emu_want_split = 1;
  CHECK(setenv("TH_FAKECU_SMS", "132", 1) == 0);
  return emu_net("resnet-18", 1, 32);
}
TH_TEST(mobilenet_v2) { return emu_net("mobilenet-v2", 1, 32); }
TH_TEST(squeezenet_v1_1) { return emu_net("squeezenet_v1.1", 1, 48); }
TH_TEST(mobilenet) { return emu_net("mobilenet", 1, 32); }

/* Issue 23: a bundle for an arch the device is below is refused by name, before the driver sees an image
 * it can only call invalid; one for an older arch runs (the PTX JIT-compiles upwards). */
TH_TEST(arch_newer_than_device_refused) {
  if (setenv("TH_FAKECU_SM", "80", 1) != 0) return 1;
  return emu_net_arch("squeezenet_v1.1", 1, 48, "sm_90",
                      "built for sm_90 (cubin sm_90, PTX compute_90) and cannot run on tunehub CPU emulator, "
                      "an sm_80 device; fetch one built for it (?target=sm_80)");
}
TH_TEST(arch_older_than_device_runs) {
  if (setenv("TH_FAKECU_SM", "86", 1) != 0) return 1;
  return emu_net_arch("squeezenet_v1.1", 1, 48, "sm_75", NULL);
}

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
  emu_build("bert", 1, S, 1, NULL, dir);
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
  emu_dir_cleanup(dir);
  return 0;
}

/* The fake driver's device as a target for its arch, or 0 (the case skips). */
static int fake_target(tc_cuda_target *t) {
  tc_cuda_device d;
  if (!fake_device(&d)) return 0;
  CHECK(tc_cuda_target_init(t, d.arch) == TH_OK);
  return 1;
}

/* Config c of wl (its fallback when fallback is set, written to c) written as the kernel
 * th_candidate into a new folder dir (a mkdtemp template), passed through patch (NULL: none) to
 * break it on purpose, and the fake driver pointed at its emulation library (path in emu). What
 * NVRTC compiles in tc_cuda_measure is the real template; the fake driver runs this one. */
static void emu_candidate_patched(const tc_workload *wl, const tc_cuda_target *t, tc_space *s,
                                  tc_config *c, int fallback, void (*patch)(th_buf *src), char *dir,
                                  char *emu, size_t emulen) {
  CHECK(tc_cuda_space(wl, t, s) == TH_OK);
  if (fallback) CHECK(tc_cuda_fallback(wl, t, s, c) == TH_OK);
  CHECK(mkdtemp(dir) != NULL);
  th_buf src;
  th_buf_init(&src, 1 << 24);
  tc_cuda_launch l;
  char err[1024] = "", path[512];
  CHECK(tc_cuda_prelude(&src) == TH_OK);
  CHECK(tc_cuda_kernel_source(wl, c, t, "th_candidate", &src, &l, err, sizeof err) == TH_OK);
  if (patch) patch(&src);
  snprintf(path, sizeof path, "%s/kernels.cu", dir);
  CHECK(th_write_file_atomic(path, src.data, src.len) == TH_OK);
  build_emu(dir, emu, emulen);
  CHECK(setenv("TH_FAKECU_KERNELS", emu, 1) == 0);
  th_buf_free(&src);
}

/* wl's space and fallback config into s and c, emulated as written (emu_candidate_patched). */
static void emu_candidate(const tc_workload *wl, const tc_cuda_target *t, tc_space *s, tc_config *c,
                          char *dir, char *emu, size_t emulen) {
  emu_candidate_patched(wl, t, s, c, 1, NULL, dir, emu, emulen);
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

/* The tf32 GEMM device check (test_cuda_tf32_check.h, the gpu case tf32_gemm_vs_reference) through the
 * fake driver: NVRTC compiles the real kernel, the fake runs the same CUDA C emulated (mma per warp with
 * TF32 rounding), and the check's arguments, launch shape and tolerance hold for a split-k dense (its
 * scratch and second kernel), a dense with a clip, a dense with bias over 1000 columns, and a
 * batch_matmul with a transposed operand. */
static void tf32_emulate(const th_buf *src, void *ctx) {
  char *dir = ctx, path[600], emu[600];
  snprintf(path, sizeof path, "%s/kernels.cu", dir);
  CHECK(th_write_file_atomic(path, src->data, src->len) == TH_OK);
  build_emu(dir, emu, sizeof emu);
  CHECK(setenv("TH_FAKECU_KERNELS", emu, 1) == 0);
}

TH_TEST(tf32_gemm_device_path) {
  tc_cuda_target t;
  if (!fake_target(&t)) return 77;
  tc_workload w[TW_TF32_GEMM_MAX];
  int n = tw_tf32_gemm_set(w);
  /* K 768 at 3 rows, whose fallback splits K on a 132-SM part (the two-kernel launch with its scratch);
   * clip at 128 rows; tanh over 1000 columns; bmm 197x67x37 B^T */
  const int pick[4] = {1, 3, 5, 10};
  CHECK(n > 10);
  for (int i = 0; i < 4; i++) {
    tc_space s;
    tc_config c;
    CHECK(tc_cuda_space(&w[pick[i]], &t, &s) == TH_OK);
    CHECK(tc_cuda_fallback(&w[pick[i]], &t, &s, &c) == TH_OK);
    if (i == 0) CHECK(tc_config_int(&s, &c, "split_k", 1) > 1);
    char dir[] = "/tmp/tc-cuda-emu-tf32-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    double e = tf32_on_device(&w[pick[i]], &c, &t, 7 + (uint64_t)i, tf32_emulate, dir);
    fprintf(stderr, "workload %d: largest error %.3g of the scale\n", pick[i], e);
    CHECK(e > 0); /* TF32 rounding shows: the kernel ran at tf32, not fp32 */
    emu_dir_cleanup(dir);
  }
  return 0;
}

/* tc_cuda_measure through the fake driver: the candidate's CUDA C runs emulated and is checked against the
 * CPU reference (class 0); an impossible tolerance gives class 5; a config over the device limits gives
 * class 1 without compiling. The fake's events report 1 ms per launch, so the timing arithmetic (number
 * grown until a repeat lasts min_repeat_ms, cost per launch) is checked exactly. */
/* A small strided conv with every epilogue input: cheap to emulate. */
static tc_workload small_conv(void) {
  tc_workload wl;
  memset(&wl, 0, sizeof wl);
  wl.kernel = TC_KERNEL_CONV2D;
  wl.n = 2, wl.c = 5, wl.h = wl.w = 9, wl.oc = 6, wl.kh = wl.kw = 3, wl.sh = wl.sw = 2;
  wl.pt = wl.pl = wl.pb = wl.pr = 1;
  wl.oh = wl.ow = 5;
  wl.in_cb = wl.out_cb = 1;
  wl.epilogue = TC_EPI_BIAS | TC_EPI_RESIDUAL | TC_EPI_RELU;
  return wl;
}

/* tc_cuda_measure of tf32 GEMMs (emulated with TF32 rounding) at the tuner's tolerance (relative
 * 1e-3 plus 1e-4 of the largest output, tune_measure_opts_default): a right kernel is class 0, a
 * clip's bounded output included, where the fp32 rule called three of these five wrong; an
 * impossible tolerance still gives class 5. */
TH_TEST(measure_emulated_tf32) {
  tc_cuda_target t;
  if (!fake_target(&t)) return 77;
  tc_workload w[TW_TF32_GEMM_MAX];
  int n = tw_tf32_gemm_set(w);
  const int pick[5] = {0, 1, 3, 4, 10}; /* bias; K 768; clip over 1000 columns; gelu; bmm B^T */
  CHECK(n > 10);
  for (int i = 0; i < 5; i++) {
    tc_space s;
    tc_config c;
    char dir[] = "/tmp/tc-cuda-emu-meas-XXXXXX", emu[512], key[256];
    emu_candidate(&w[pick[i]], &t, &s, &c, dir, emu, sizeof emu);
    tc_workload_key(&w[pick[i]], key, sizeof key);
    tc_measure_opts o;
    tc_measure_opts_default(&o);
    o.rtol = 1e-3, o.atol = 1e-4;
    o.repeat = 1;
    tc_measure_result r;
    CHECK(tc_cuda_measure(&w[pick[i]], &c, &t, &o, &r) == TH_OK);
    fprintf(stderr, "%s: class %d, max error %.3g of the scale %s\n", key, r.error_class,
            r.max_rel_err, r.msg);
    CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_NONE);
    CHECK(r.max_rel_err > 0); /* TF32 rounding shows */
    o.rtol = o.atol = -1;
    CHECK(tc_cuda_measure(&w[pick[i]], &c, &t, &o, &r) == TH_OK);
    CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_WRONG_ANSWER);
    emu_cleanup(dir);
  }
  return 0;
}

/* wl at c through tc_cuda_measure with `repeat` repeats of at least 4 ms (o keeps the options): a
 * clean measurement (class 0), or the test fails with the message. */
static void measure_clean(const tc_workload *wl, const tc_config *c, const tc_cuda_target *t, int repeat,
                          tc_measure_opts *o, tc_measure_result *r) {
  tc_measure_opts_default(o);
  o->repeat = repeat;
  o->min_repeat_ms = 4;
  CHECK(tc_cuda_measure(wl, c, t, o, r) == TH_OK);
  if (r->error_class != TC_ERROR_CLASS_NONE) fprintf(stderr, "class %d: %s\n", r->error_class, r->msg);
  CHECK_EQ_INT(r->error_class, TC_ERROR_CLASS_NONE);
  fprintf(stderr, "measured: %.3g s per launch (number %d), NVRTC %.2f s, max rel err %.2g\n", r->cost_mean_s,
          r->number, r->compile_s, r->max_rel_err);
}

TH_TEST(measure_emulated) {
  tc_cuda_target t;
  if (!fake_target(&t)) return 77;
  tc_workload wl = small_conv();
  tc_space s;
  tc_config c;
  char dir[] = "/tmp/tc-cuda-emu-meas-XXXXXX", emu[512];
  emu_candidate(&wl, &t, &s, &c, dir, emu, sizeof emu);
  tc_measure_opts o;
  tc_measure_result r;
  measure_clean(&wl, &c, &t, 5, &o, &r);
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

/* A grouped conv (4 groups of 2 -> 3 channels, and 8 groups of 4 -> 4 as resnext's) through
 * tc_cuda_measure: the fallback and every tile_f whose block stays inside a group run emulated and
 * match the CPU reference (class 0); a block spanning two groups is refused before NVRTC. */
TH_TEST(measure_emulated_grouped) {
  tc_cuda_target t;
  if (!fake_target(&t)) return 77;
  for (int v = 0; v < 2; v++) {
    tc_workload wl = small_conv();
    wl.c = v ? 32 : 8, wl.oc = v ? 32 : 12, wl.groups = v ? 8 : 4;
    tc_space s;
    tc_config c;
    char dir[] = "/tmp/tc-cuda-emu-meas-XXXXXX", emu[512];
    emu_candidate(&wl, &t, &s, &c, dir, emu, sizeof emu);
    tc_measure_opts o;
    tc_measure_result r;
    measure_clean(&wl, &c, &t, 1, &o, &r);
    int kf = tc_space_knob(&s, "tile_f"), ran = 0, refused = 0;
    for (int i = 0; i < s.knobs[kf].nvalues; i++) {
      const int *f = s.knobs[kf].values[i];
      tc_config ci = c;
      ci.idx[kf] = i;
      char why[256];
      if ((wl.oc / wl.groups) % (f[1] * f[2] * f[3])) {
        CHECK(tc_cuda_valid(&wl, &t, &s, &ci, why, sizeof why) != TH_OK);
        refused++;
        continue;
      }
      if (tc_cuda_valid(&wl, &t, &s, &ci, why, sizeof why) != TH_OK || ran >= 3) continue;
      char d2[] = "/tmp/tc-cuda-emu-meas-XXXXXX";
      tc_space s2;
      emu_candidate_patched(&wl, &t, &s2, &ci, 0, NULL, d2, emu, sizeof emu);
      measure_clean(&wl, &ci, &t, 1, &o, &r);
      emu_cleanup(d2);
      ran++;
    }
    CHECK(refused > 0 && ran > 0);
    emu_cleanup(dir);
  }
  return 0;
}

/* A dilated conv (2 x 3, padded by its span, stride 2; grouped by 5 over 10 channels; depthwise)
 * through tc_cuda_measure: the fallback and the conv's tile_ry / tile_rx splits (one tap or several
 * per staged patch) run emulated and match the CPU reference (class 0). */
TH_TEST(measure_emulated_dilated) {
  tc_cuda_target t;
  if (!fake_target(&t)) return 77;
  for (int v = 0; v < 3; v++) {
    tc_workload wl = small_conv();
    wl.dil_h = 2, wl.dil_w = 3;
    wl.pt = wl.pb = 2, wl.pl = wl.pr = 3;
    if (v) wl.c = wl.oc = 10, wl.groups = v == 1 ? 5 : 0;
    if (v == 2) wl.kernel = TC_KERNEL_DEPTHWISE;
    CHECK_EQ_INT(tc_workload_check(&wl), TH_OK);
    tc_space s;
    tc_config c;
    char dir[] = "/tmp/tc-cuda-emu-meas-XXXXXX", emu[512];
    emu_candidate(&wl, &t, &s, &c, dir, emu, sizeof emu);
    tc_measure_opts o;
    tc_measure_result r;
    measure_clean(&wl, &c, &t, 1, &o, &r);
    int ky = tc_space_knob(&s, "tile_ry"), kx = tc_space_knob(&s, "tile_rx"), ran = 0;
    if (v == 2) { /* the depthwise window map has no reduction split */
      emu_cleanup(dir);
      continue;
    }
    for (int i = 0; i < s.knobs[ky].nvalues; i++)
      for (int j = 0; j < s.knobs[kx].nvalues; j++) {
        tc_config ci = c;
        ci.idx[ky] = i, ci.idx[kx] = j;
        char why[256], d2[] = "/tmp/tc-cuda-emu-meas-XXXXXX";
        if (tc_cuda_valid(&wl, &t, &s, &ci, why, sizeof why) != TH_OK) continue;
        tc_space s2;
        emu_candidate_patched(&wl, &t, &s2, &ci, 0, NULL, d2, emu, sizeof emu);
        measure_clean(&wl, &ci, &t, 1, &o, &r);
        emu_cleanup(d2);
        ran++;
      }
    CHECK(ran >= 2);
    emu_cleanup(dir);
  }
  return 0;
}

/* Knob `name` of c set to the value vals[0..width) of s; the test fails if s has no such value. */
static void knob_at(const tc_space *s, tc_config *c, const char *name, const int *vals, int width) {
  int k = tc_space_knob(s, name), found = 0;
  CHECK(k >= 0);
  for (int i = 0; i < s->knobs[k].nvalues && !found; i++)
    if (memcmp(s->knobs[k].values[i], vals, (size_t)width * sizeof(int)) == 0) c->idx[k] = i, found = 1;
  CHECK(found);
}

/* A tf32 conv through tc_cuda_measure and the fake driver (issue 25): a split_k 4 config runs both
 * of its kernels per timed launch (the fake's events say 2 ms, 1 per kernel) with the scratch, and
 * matches the reference at the tf32 tolerance; a 107 KiB config opts in to dynamic shared memory
 * (cuFuncSetAttribute) and every launch passes the bytes. */
TH_TEST(measure_emulated_tf32_split_dyn) {
  tc_cuda_target t;
  if (!fake_target(&t)) return 77;
  tc_workload wl = small_conv();
  wl.c = 16, wl.precision = TC_PRECISION_TF32;
  for (int dyn = 0; dyn < 2; dyn++) {
    tc_space s;
    tc_config c;
    CHECK(tc_cuda_space(&wl, &t, &s) == TH_OK);
    CHECK(tc_cuda_fallback(&wl, &t, &s, &c) == TH_OK);
    static const int bt[2][2] = {{32, 32}, {128, 128}}, wt[2][2] = {{16, 16}, {64, 64}};
    static const int bk[2] = {8, 32}, st[2] = {2, 3}, split[2] = {4, 1};
    knob_at(&s, &c, "block_tile", bt[dyn], 2);
    knob_at(&s, &c, "warp_tile", wt[dyn], 2);
    knob_at(&s, &c, "tile_k", &bk[dyn], 1);
    knob_at(&s, &c, "stages", &st[dyn], 1);
    knob_at(&s, &c, "split_k", &split[dyn], 1);
    CHECK(tc_cuda_valid(&wl, &t, &s, &c, NULL, 0) == TH_OK);
    char dir[] = "/tmp/tc-cuda-emu-meas-XXXXXX", emu[512];
    emu_candidate_patched(&wl, &t, &s, &c, 0, NULL, dir, emu, sizeof emu);
    long opt0 = fake_counter("th_fakecu_opt_ins"), dyn0 = fake_counter("th_fakecu_dyn_launches");
    tc_measure_opts o;
    tc_measure_result r;
    measure_clean(&wl, &c, &t, 3, &o, &r);
    if (dyn) {
      CHECK(fabs(r.cost_mean_s - 1e-3) < 1e-9);
      CHECK(fake_counter("th_fakecu_opt_ins") == opt0 + 1 && fake_counter("th_fakecu_dyn_launches") > dyn0);
      CHECK(fake_counter("th_fakecu_dyn_max") >= 100 * 1024);
    } else {
      CHECK(fabs(r.cost_mean_s - 2e-3) < 1e-9);
      CHECK(fake_counter("th_fakecu_opt_ins") == opt0);
    }
    emu_cleanup(dir);
  }
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

/* A deliberately broken kernel: every scalar store to the last argument (the output) is skipped
 * when the value is 0, so after a relu about half of the outputs are never written. */
static void skip_zero_stores(th_buf *src) {
  const char *sig = strstr(src->data, "th_candidate(");
  CHECK(sig != NULL);
  const char *close = strchr(sig, ')'), *last = NULL;
  for (const char *p = sig; p < close; p++)
    if (*p == '*') last = p + 1;
  CHECK(last != NULL);
  char out[64];
  snprintf(out, sizeof out, "%.*s[", (int)(close - last), last);
  th_buf b;
  th_buf_init(&b, 1 << 24);
  int patched = 0;
  for (const char *line = src->data; *line;) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    const char *p = line;
    while (*p == ' ') p++;
    const char *eq = strstr(p, "] = ");
    if (strncmp(p, out, strlen(out)) == 0 && eq && eq < line + len && line[len - 1] == ';') {
      /* NAME[i] = v;  ->  { float th_v = v; if (th_v != 0.0f) NAME[i] = th_v; } */
      th_buf_appendf(&b, "%.*s{ float th_v = %.*s; if (th_v != 0.0f) %.*s = th_v; }\n",
                     (int)(p - line), line, (int)(line + len - 1 - (eq + 4)), eq + 4,
                     (int)(eq + 1 - p), p);
      patched++;
    } else {
      th_buf_appendf(&b, "%.*s\n", (int)len, line);
    }
    line += len + (end ? 1 : 0);
  }
  CHECK(patched > 0);
  src->len = 0;
  CHECK(th_buf_append(src, b.data, b.len) == TH_OK);
  th_buf_free(&b);
}

/* Issue 25, defect 2: the output buffer is poisoned with NaN before a candidate runs (as the CPU
 * worker does), so a kernel that never writes the elements whose reference is 0 (after a relu, half
 * of them) is a wrong answer (class 5); with a zeroed output it passed. The same kernel as written
 * passes. */
TH_TEST(measure_emulated_skipped_elements) {
  tc_cuda_target t;
  if (!fake_target(&t)) return 77;
  tc_workload wl;
  memset(&wl, 0, sizeof wl);
  wl.kernel = TC_KERNEL_ELTWISE;
  wl.n = 2, wl.c = wl.oc = 4, wl.h = wl.w = wl.oh = wl.ow = 8;
  wl.kh = wl.kw = wl.sh = wl.sw = 1;
  wl.in_cb = wl.out_cb = 1;
  wl.epilogue = TC_EPI_RELU;
  tc_space s;
  tc_config c;
  CHECK(tc_cuda_space(&wl, &t, &s) == TH_OK);
  CHECK(tc_cuda_fallback(&wl, &t, &s, &c) == TH_OK);
  int kv = tc_space_knob(&s, "vec");
  CHECK(kv >= 0);
  for (int v = 0; v < s.knobs[kv].nvalues; v++)
    if (s.knobs[kv].values[v][0] == 1) c.idx[kv] = v; /* scalar stores */
  CHECK(tc_cuda_valid(&wl, &t, &s, &c, NULL, 0) == TH_OK);
  for (int broken = 0; broken < 2; broken++) {
    char dir[] = "/tmp/tc-cuda-emu-skip-XXXXXX", emu[512];
    emu_candidate_patched(&wl, &t, &s, &c, 0, broken ? skip_zero_stores : NULL, dir, emu,
                          sizeof emu);
    tc_measure_opts o;
    tc_measure_opts_default(&o);
    o.repeat = 2;
    tc_measure_result r;
    CHECK(tc_cuda_measure(&wl, &c, &t, &o, &r) == TH_OK);
    fprintf(stderr, "%s kernel: class %d %s\n", broken ? "broken" : "intact", r.error_class, r.msg);
    CHECK_EQ_INT(r.error_class, broken ? TC_ERROR_CLASS_WRONG_ANSWER : TC_ERROR_CLASS_NONE);
    emu_cleanup(dir);
  }
  return 0;
}

/* The reference's cost, as tc_cuda_ref_hook sees it: calls counted, each one made slow. */
static int ref_calls;
static void slow_reference(const tc_workload *wl) {
  (void)wl;
  ref_calls++;
  struct timespec ts = {1, 0}; /* twice the timeout below */
  nanosleep(&ts, NULL);
}

/* Measures c of wl in a child process as a restarted worker would, with nothing in memory (the
 * fork's copy of the cache, which holds the last workload only, is first given another seed's
 * reference): its exit status is 0 when the candidate was valid and the child computed wl's
 * reference `computes` times. */
static int measure_in_child(const tc_workload *wl, const tc_config *c, const tc_cuda_target *t,
                            const tc_measure_opts *o, int computes) {
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    tc_measure_opts other = {.seed = o->seed + 1000, .reference_only = 1};
    tc_measure_result r;
    th_status rc = tc_cuda_measure(wl, NULL, t, &other, &r);
    ref_calls = 0;
    if (rc == TH_OK) rc = tc_cuda_measure(wl, c, t, o, &r);
    fprintf(stderr, "child: class %d (%s), %d reference computations\n", r.error_class, r.msg,
            ref_calls);
    _exit(rc == TH_OK && r.error_class == TC_ERROR_CLASS_NONE && ref_calls == computes ? 0 : 1);
  }
  int st = 0;
  CHECK(waitpid(pid, &st, 0) == pid);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* Issue 25, defect 1: the deadline covers only the device work. The CPU reference (made to take
 * twice the timeout here) runs before it starts, so the candidate is valid rather than a run
 * timeout (class 7, which every candidate of vgg at batch 4 read as); it is computed once for the
 * workload's candidates, and a new process (the worker restarted after a hang) reads it back from
 * ref_dir instead of computing it again; without ref_dir it computes it again. reference_only makes
 * it with no device and no config. */
TH_TEST(measure_emulated_slow_reference) {
  tc_cuda_target t;
  if (!fake_target(&t)) return 77;
  tc_workload wl = small_conv();
  tc_space s;
  tc_config c;
  char dir[] = "/tmp/tc-cuda-emu-slowref-XXXXXX", emu[512],
       refdir[] = "/tmp/tc-cuda-emu-refs-XXXXXX";
  emu_candidate(&wl, &t, &s, &c, dir, emu, sizeof emu);
  CHECK(mkdtemp(refdir) != NULL);
  tc_measure_opts o;
  tc_measure_opts_default(&o);
  o.repeat = 3;
  o.timeout_s = 0.5;
  o.ref_dir = refdir;
  tc_cuda_ref_hook = slow_reference;
  tc_measure_result r;
  for (int k = 0; k < 2; k++) {
    double t0 = th_now_mono();
    CHECK(tc_cuda_measure(&wl, &c, &t, &o, &r) == TH_OK);
    fprintf(stderr, "candidate %d: class %d (%s) in %.2f s, %d reference computations\n", k,
            r.error_class, r.msg, th_now_mono() - t0, ref_calls);
    CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_NONE);
    CHECK_EQ_INT(ref_calls, 1);
  }
  CHECK_EQ_INT(measure_in_child(&wl, &c, &t, &o, 0), 0); /* read back from refdir */
  tc_measure_opts nodir = o;
  nodir.ref_dir = NULL;
  CHECK_EQ_INT(measure_in_child(&wl, &c, &t, &nodir, 1), 0);
  /* reference_only: another seed's reference, into the folder, with no config */
  tc_measure_opts ro = o;
  ro.reference_only = 1;
  ro.seed = 7;
  ref_calls = 0;
  CHECK(tc_cuda_measure(&wl, NULL, &t, &ro, &r) == TH_OK);
  CHECK_EQ_INT(ref_calls, 1);
  ro.reference_only = 0;
  CHECK_EQ_INT(measure_in_child(&wl, &c, &t, &ro, 0), 0);
  tc_cuda_ref_hook = NULL;
  CHECK(th_rm_rf(refdir) == TH_OK);
  emu_cleanup(dir);
  return 0;
}

/* Issue 25, defect 6: the L2 is flushed between repeats, as the CPU worker evicts its caches:
 * before each repeat a buffer twice the L2 is written on the measurement stream (cuMemsetD8Async,
 * which the fake driver counts), the L2 size the device's (1 MiB on the fake) or, for a target not
 * queried, the arch table's (50 MiB for sm_90; the largest for an arch without a row). cache_flush
 * 0 writes nothing. */
TH_TEST(measure_emulated_l2_flush) {
  tc_cuda_target t;
  if (!fake_target(&t)) return 77;
  CHECK_EQ_INT(t.l2_bytes, 50 << 20);
  tc_cuda_target other;
  CHECK(tc_cuda_target_init(&other, "sm_87") == TH_OK && other.l2_bytes == 96 << 20);
  tc_cuda_device d;
  CHECK(tc_cuda_device_query(&d, NULL, 0) == TH_OK && d.l2_bytes == 1 << 20);
  tc_cuda_target dt = t;
  tc_cuda_target_use_device(&dt, &d);
  CHECK_EQ_INT(dt.l2_bytes, 1 << 20);
  void *fake = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  CHECK(fake != NULL);
  long long (*flushed)(void) = NULL;
  void *sym = dlsym(fake, "th_fakecu_memset_async_bytes");
  CHECK(sym != NULL);
  memcpy(&flushed, &sym, sizeof flushed);
  tc_workload wl = small_conv();
  tc_space s;
  tc_config c;
  char dir[] = "/tmp/tc-cuda-emu-flush-XXXXXX", emu[512];
  emu_candidate(&wl, &t, &s, &c, dir, emu, sizeof emu);
  tc_measure_opts o;
  tc_measure_opts_default(&o);
  CHECK_EQ_INT(o.cache_flush, 1);
  o.repeat = 4;
  tc_measure_result r;
  for (int on = 1; on >= 0; on--) {
    o.cache_flush = on;
    long long before = flushed();
    CHECK(tc_cuda_measure(&wl, &c, &t, &o, &r) == TH_OK);
    CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_NONE);
    fprintf(stderr, "cache_flush %d: %lld bytes written between %d repeats\n", on,
            flushed() - before, o.repeat);
    CHECK(flushed() - before == (on ? (long long)o.repeat * 2 * (1 << 20) : 0));
  }
  dlclose(fake);
  emu_cleanup(dir);
  return 0;
}

/* ---- ONNX operators lowered onto existing families (issue 38, onnx_ops_sample.c) ------------------------- */

/* x [N, 4, 5, 6], grid [N, 3, 7, 2] -> GridSample bicubic/reflection/align 1 + nearest/zeros + bilinear/border
 * -> LRN (size 3) -> Shrink -> MeanVarianceNormalization -> y [N, 4, 3, 7]. */
static uint8_t *emu_sample_model(size_t *len) {
  const int F = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
  tb *b = tb_new(16);
  tb_input(b, "x", F, 4, (int64_t[]){-1, 4, 5, 6});
  tb_input(b, "grid", F, 4, (int64_t[]){-1, 3, 7, 2});
  Onnx__NodeProto *n = tb_node(b, "GridSample", "gs1", "x,grid", "g1");
  tb_attr_s(b, n, "mode", "bicubic");
  tb_attr_s(b, n, "padding_mode", "reflection");
  tb_attr_i(b, n, "align_corners", 1);
  tb_attr_s(b, tb_node(b, "GridSample", "gs2", "x,grid", "g2"), "mode", "nearest");
  tb_attr_s(b, tb_node(b, "GridSample", "gs3", "x,grid", "g3"), "padding_mode", "border");
  tb_node(b, "Add", "a1", "g1,g2", "s1");
  tb_node(b, "Add", "a2", "s1,g3", "s");
  n = tb_node(b, "LRN", "lrn", "s", "l");
  tb_attr_i(b, n, "size", 3);
  tb_attr_f(b, n, "alpha", 0.5f);
  n = tb_node(b, "Shrink", "shrink", "l", "k");
  tb_attr_f(b, n, "lambd", 0.2f);
  tb_attr_f(b, n, "bias", 0.1f);
  tb_node(b, "MeanVarianceNormalization", "mvn", "k", "y");
  tb_output(b, "y");
  uint8_t *p = tb_pack(b, len);
  tb_free(b);
  return p;
}

/* The model above built for CUDA from its ONNX file at batch 2: GridSample's gathers and index math, LRN's
 * batched band matmul, Shrink's selections and MVN's reductions run on the fake driver and match the
 * reference interpreter. */
TH_TEST(onnx_sample_ops) {
  if (!fake_driver()) return 77;
  size_t len;
  uint8_t *bytes = emu_sample_model(&len);
  emu_bundle e;
  memset(&e, 0, sizeof e);
  emu_onnx_bundle(&e, NULL, bytes, len, "sample", 2);
  char err[4096] = "";
  float x[2 * 4 * 5 * 6], grid[2 * 3 * 7 * 2];
  for (int i = 0; i < (int)(sizeof x / 4); i++) x[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
  for (int i = 0; i < (int)(sizeof grid / 4); i++) /* [-1.35, 1.35]; every 5th in [-12.4, 12.6]: folded */
    grid[i] = (float)((i * 40503u) % 1000) / (i % 5 ? 370.0f : 40.0f) - (i % 5 ? 1.35f : 12.4f);
  e.nout = 2 * 4 * 3 * 7;
  e.ref = malloc((size_t)e.nout * 4);
  float *y = calloc((size_t)e.nout, 4);
  CHECK(e.ref && y);
  const void *ins[2] = {x, grid};
  void *refs[1] = {e.ref}, *outs[1] = {y};
  CHECK(tc_ref_run_io(e.g, ins, refs, err, sizeof err) == TH_OK);
  emu_bundle_load(&e, e.so);
  void *m = emu_model(&e);
  if (e.runio(m, ins, outs) != 0) fprintf(stderr, "run_io: %s\n", e.lasterr());
  emu_check(&e, y, "GridSample x3, LRN, Shrink, MVN at batch 2");
  e.fr(m);
  free(y);
  free(bytes);
  emu_bundle_close(&e);
  return 0;
}
