/* CUDA tuning sessions without a GPU. The fake libcuda.so.1 (test_compiler_cuda_fakecu.c, on
 * LD_LIBRARY_PATH through ctest) loads one kernel library per process ($TH_FAKECU_KERNELS); here that
 * library is a trampoline into this executable (exported tuner_cuda_emu_launch), which runs the exact
 * candidate the measure worker just compiled: this file interposes nvrtcCreateProgram to capture each
 * program's CUDA C, compiles it for the CPU with an emulation header (blocks in turn, CUDA threads as
 * coroutines switching at __syncthreads) and launches it. So the worker's tc_cuda_measure checks every
 * candidate's real output against the CPU reference; the fake events report 1 ms per launch.
 *
 * Cases: conv_random (a small conv2d, random tuner: stages, records with class 0, progress JSON, lookup,
 * never across targets), mobilenet_xgb_build (two mobilenet GPU tasks with xgb, then a cuda bundle built
 * through tune_build_lookup reports them "tuned"), no_device (no driver: TH_ERR_UNSUPPORTED, "no CUDA
 * device: ..."). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend.h"
#include "store.h"
#include "tc.h"
#include "tc_cuda.h"
#include "tc_cuda_measure.h"
#include "test_build_faults.h"
#include "test_cuda_emu_tc.h"
#include "th_buf.h"
#include "th_test.h"
#include "th_util.h"
#include "tune_job.h"
#include "tune_space.h"
#include "tune_task.h"

/* ---- NVRTC interposition: the last program's source, per thread ---- */
#define CUDA tc_backend_find("cuda", NULL, 0)

static _Thread_local char *last_src;

int nvrtcCreateProgram(void **prog, const char *src, const char *name, int nh, const char *const *headers,
                       const char *const *include_names);
int nvrtcCreateProgram(void **prog, const char *src, const char *name, int nh, const char *const *headers,
                       const char *const *include_names) {
  typedef int (*fn_t)(void **, const char *, const char *, int, const char *const *, const char *const *);
  static fn_t real;
  if (!real) {
    void *p = dlsym(RTLD_NEXT, "nvrtcCreateProgram");
    memcpy(&real, &p, sizeof real);
  }
  free(last_src);
  last_src = src ? strdup(src) : NULL;
  const char *log = getenv("TH_TEST_NVRTC_LOG"); /* which processes run NVRTC */
  FILE *l = log ? fopen(log, "a") : NULL;
  if (l) {
    fprintf(l, "%ld\n", (long)getpid());
    fclose(l);
  }
  return real ? real(prog, src, name, nh, headers, include_names) : 1;
}

/* ---- cubins back to their source ----
 * The build stage compiles each candidate (in this process's threads) and the worker loads the cubin. The
 * emulator needs the CUDA C, so every cubin NVRTC hands out is filed under its hash with the program's
 * source (emu_dir/src_HASH.cu), and the fake driver's cuModuleLoadData (through the trampoline's
 * th_emu_module) looks the loaded image up there. */
static char emu_dir[256];

/* The cubin's length from its ELF64 headers: the end of the furthest section or segment. */
static size_t elf_len(const unsigned char *p) {
  uint64_t shoff, phoff, end = 64;
  uint16_t shentsize, shnum, phentsize, phnum;
  memcpy(&phoff, p + 0x20, 8);
  memcpy(&shoff, p + 0x28, 8);
  memcpy(&phentsize, p + 0x36, 2);
  memcpy(&phnum, p + 0x38, 2);
  memcpy(&shentsize, p + 0x3a, 2);
  memcpy(&shnum, p + 0x3c, 2);
  if (shoff + (uint64_t)shnum * shentsize > end) end = shoff + (uint64_t)shnum * shentsize;
  if (phoff + (uint64_t)phnum * phentsize > end) end = phoff + (uint64_t)phnum * phentsize;
  for (unsigned i = 0; i < shnum; i++) {
    uint32_t type;
    uint64_t off, size;
    memcpy(&type, p + shoff + (uint64_t)i * shentsize + 4, 4);
    memcpy(&off, p + shoff + (uint64_t)i * shentsize + 0x18, 8);
    memcpy(&size, p + shoff + (uint64_t)i * shentsize + 0x20, 8);
    if (type != 8 /* SHT_NOBITS */ && off + size > end) end = off + size;
  }
  for (unsigned i = 0; i < phnum; i++) {
    uint64_t off, size;
    memcpy(&off, p + phoff + (uint64_t)i * phentsize + 8, 8);
    memcpy(&size, p + phoff + (uint64_t)i * phentsize + 0x20, 8);
    if (off + size > end) end = off + size;
  }
  return (size_t)end;
}

static void cubin_src_path(const void *cubin, char *path, size_t n) {
  const unsigned char *p = cubin;
  size_t len = elf_len(p);
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < len; i++) h = (h ^ p[i]) * 1099511628211ull;
  snprintf(path, n, "%s/src_%016llx.cu", emu_dir, (unsigned long long)h);
}

int nvrtcGetCUBIN(void *prog, char *cubin);
int nvrtcGetCUBIN(void *prog, char *cubin) {
  typedef int (*fn_t)(void *, char *);
  static fn_t real;
  if (!real) {
    void *p = dlsym(RTLD_NEXT, "nvrtcGetCUBIN");
    memcpy(&real, &p, sizeof real);
  }
  int r = real ? real(prog, cubin) : 1;
  if (r == 0 && last_src && emu_dir[0]) {
    char path[400];
    cubin_src_path(cubin, path, sizeof path);
    if (th_write_file_atomic(path, last_src, strlen(last_src)) != TH_OK) fprintf(stderr, "cannot write %s\n", path);
  }
  return r;
}

/* Called (through the trampoline) by the fake cuModuleLoadData in the measure worker. */
int tuner_cuda_emu_module(const void *image);
int tuner_cuda_emu_module(const void *image) {
  char path[400], *src = NULL;
  size_t n = 0;
  cubin_src_path(image, path, sizeof path);
  if (th_read_file(path, (size_t)1 << 26, &src, &n) != TH_OK) return -1;
  free(last_src);
  last_src = src;
  return 0;
}

/* ---- CPU emulation of one candidate (same scheme as test_compiler_cuda_emu.c) ---- */
static const char emu_header[] =
    "#include <cmath>\n#include <cstring>\n#include <cstdlib>\n#include <ucontext.h>\n#include <math.h>\n"
    "#include <stdint.h>\n"
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
    /* the tensor-core helpers of sm_80 and newer, for the tf32 GEMM (as test_compiler_cuda_emu.c) */
    "#define TH_EMU_TID() th_cur\n#define TH_EMU_WARP_SYNC() th_barrier()\n" TH_EMU_TC_SRC;

static const char emu_launcher[] =
    "static th_fn th_kfn; static float **th_kargs;\n"
    "static void th_entry() {\n"
    "  th_kfn(th_kargs);\n"
    "  if (th_cur + 1 < th_T) { th_cur++; threadIdx = th_tid[th_cur]; setcontext(&th_ctx[th_cur]); }\n"
    "  setcontext(&th_main);\n}\n"
    "extern \"C\" int th_emu_launch(const char *name, void **params, const unsigned *g, const unsigned *b) {\n"
    "  th_fn fn = !std::strcmp(name, \"th_candidate\") ? th_call : !std::strcmp(name, \"th_candidate_r\") ? th_call_r : 0;\n"
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
    "    th_cur = 0; threadIdx = th_tid[0];\n"
    "    swapcontext(&th_main, &th_ctx[0]);\n"
    "  }\n"
    "  delete[] th_ctx; delete[] th_tid; std::free(stacks);\n"
    "  return 0;\n}\n";

static char *emu_src;   /* source of the loaded candidate library */
static void *emu_dl;
static int (*emu_fn)(const char *, void **, const unsigned *, const unsigned *);
static int emu_builds;

/* Called by the trampoline library inside the measure worker for every launch. */
int tuner_cuda_emu_launch(const char *name, void **params, const unsigned *g, const unsigned *b);
int tuner_cuda_emu_launch(const char *name, void **params, const unsigned *g, const unsigned *b) {
  char crash[300];
  snprintf(crash, sizeof crash, "%s/crash", emu_dir);
  if (unlink(crash) == 0) abort(); /* a test asked for one crash of the measure worker */
  if (!last_src) return -1;
  if (!emu_src || strcmp(emu_src, last_src) != 0) {
    const char *sig = strstr(last_src, "th_candidate(");
    if (!sig) return -1;
    int nargs = 0;
    for (const char *r = sig; *r && *r != ')'; r++) nargs += *r == '*';
    th_buf s;
    th_buf_init(&s, (size_t)1 << 26);
    th_buf_appendf(&s, "#define TH_NARGS %d\n%s", nargs, emu_header);
    th_buf_append(&s, last_src, strlen(last_src));
    th_buf_appendf(&s, "\ntypedef void (*th_fn)(float **);\nstatic void th_call(float **a) { th_candidate(");
    for (int i = 0; i < nargs; i++) th_buf_appendf(&s, "%sa[%d]", i ? ", " : "", i);
    th_buf_appendf(&s, "); }\n");
    /* a split-k candidate's reduction kernel (the same arguments) */
    const char *post = strstr(last_src, "th_candidate_r(");
    int npost = 0;
    for (const char *r = post; r && *r && *r != ')'; r++) npost += *r == '*';
    th_buf_appendf(&s, "static void th_call_r(float **a) { %s", post ? "th_candidate_r(" : "(void)a;");
    for (int i = 0; i < npost; i++) th_buf_appendf(&s, "%sa[%d]", i ? ", " : "", i);
    th_buf_appendf(&s, "%s }\n", post ? ");" : "");
    th_buf_appendf(&s, "%s", emu_launcher);
    char cpp[512], so[512], cmd[1400];
    int id = emu_builds++;
    snprintf(cpp, sizeof cpp, "%s/emu_%d_%d.cpp", emu_dir, (int)getpid(), id);
    snprintf(so, sizeof so, "%s/emu_%d_%d.so", emu_dir, (int)getpid(), id);
    th_status rc = th_write_file_atomic(cpp, s.data, s.len);
    th_buf_free(&s);
    if (rc != TH_OK) return -1;
    snprintf(cmd, sizeof cmd, "c++ -std=c++17 -O1 -w -fPIC -shared -o %s %s", so, cpp);
    if (system(cmd) != 0) return -1;
    void *dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!dl) return -1;
    void *f = dlsym(dl, "th_emu_launch");
    if (!f) return -1;
    if (emu_dl) dlclose(emu_dl);
    emu_dl = dl;
    memcpy(&emu_fn, &f, sizeof emu_fn);
    free(emu_src);
    emu_src = strdup(last_src);
    unlink(cpp);
    unlink(so);
  }
  return emu_fn(name, params, g, b);
}

/* The library the fake driver loads: forwards every launch to this executable. */
static int setup_fake(void) {
  tc_cuda_device d;
  char err[1024] = "";
  if (tc_cuda_device_query(&d, err, sizeof err) != TH_OK || strcmp(d.name, "tunehub CPU emulator") != 0) {
    fprintf(stderr, "skipped: the fake CUDA driver is not on LD_LIBRARY_PATH (%s)\n", err);
    return 0;
  }
  snprintf(emu_dir, sizeof emu_dir, "/tmp/tuner_cuda_emu_XXXXXX");
  CHECK(mkdtemp(emu_dir) != NULL);
  static const char tramp[] =
      "#include <dlfcn.h>\n"
      "typedef int (*fn_t)(const char *, void **, const unsigned *, const unsigned *);\n"
      "extern \"C\" int th_emu_launch(const char *n, void **p, const unsigned *g, const unsigned *b) {\n"
      "  static fn_t f; if (!f) f = (fn_t)dlsym(RTLD_DEFAULT, \"tuner_cuda_emu_launch\");\n"
      "  return f ? f(n, p, g, b) : -1;\n}\n"
      "typedef int (*mod_t)(const void *);\n"
      "extern \"C\" int th_emu_module(const void *image) {\n"
      "  static mod_t f; if (!f) f = (mod_t)dlsym(RTLD_DEFAULT, \"tuner_cuda_emu_module\");\n"
      "  return f ? f(image) : -1;\n}\n";
  char cpp[512], so[512], cmd[1200];
  snprintf(cpp, sizeof cpp, "%s/tramp.cpp", emu_dir);
  snprintf(so, sizeof so, "%s/tramp.so", emu_dir);
  CHECK(th_write_file_atomic(cpp, tramp, sizeof tramp - 1) == TH_OK);
  snprintf(cmd, sizeof cmd, "c++ -O1 -w -fPIC -shared -o %s %s -ldl", so, cpp);
  CHECK(system(cmd) == 0);
  CHECK(setenv("TH_FAKECU_KERNELS", so, 1) == 0);
  return 1;
}

static void rm_r(const char *d) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", d);
  if (system(cmd) != 0) fprintf(stderr, "cleanup failed\n");
}

/* A store in a fresh temp dir (its name into dir, 256 bytes; rm_r it at the end). */
static store_t *temp_store(char *dir) {
  snprintf(dir, 256, "/tmp/tuner_cuda_XXXXXX");
  CHECK(mkdtemp(dir) != NULL);
  store_t *st = NULL;
  CHECK(store_open(dir, &st) == TH_OK);
  return st;
}

static void quick_opts(tune_options *o, const char *tuner, int trials, int batch) {
  tune_options_default(o);
  snprintf(o->tuner, sizeof o->tuner, "%s", tuner);
  o->trials = trials;
  o->batch = batch;
  o->build_threads = 2;
  o->measure.repeat = 3;
  o->measure.timeout_s = 30;
}

typedef struct rec_ctx {
  const char *key, *tuner;
  int n, ok, errs;
  int classes[16];
  int verified; /* records of the task's verification (tuner "verify"), not trials */
} rec_ctx;

static int rec_cb(void *ctx, const store_record *r) {
  rec_ctx *c = ctx;
  if (strcmp(r->workload_key, c->key) != 0) return 0;
  if (strcmp(r->tuner, STORE_TUNER_VERIFY) == 0) {
    c->verified++;
    CHECK(r->error_class == 0 && r->cost_mean_s > 0 && r->cost_mean_s < 1);
    return 0;
  }
  c->n++;
  CHECK_STR(r->tuner, c->tuner);
  CHECK(strncmp(r->target, "cuda -arch=sm_", 14) == 0);
  if (r->error_class == 0) {
    c->ok++;
    CHECK(r->cost_mean_s > 0 && r->cost_mean_s < 1 && r->gflops > 0);
  } else {
    c->errs++;
    CHECK(r->cost_mean_s >= 1e9);
    fprintf(stderr, "failed trial: class %d config %s\n", r->error_class, r->config);
    c->classes[r->error_class & 15]++;
  }
  return 0;
}

/* A small padded 3x3 conv2d with bias and relu: cheap to emulate. */
static tc_workload small_conv(int c, int hw, int oc) {
  tc_workload wl;
  memset(&wl, 0, sizeof wl);
  wl.kernel = TC_KERNEL_CONV2D;
  wl.n = 1, wl.c = c, wl.h = wl.w = hw, wl.oc = oc, wl.kh = wl.kw = 3, wl.sh = wl.sw = 1;
  wl.pt = wl.pl = wl.pb = wl.pr = 1;
  wl.oh = wl.ow = hw;
  wl.in_cb = wl.out_cb = 1;
  wl.epilogue = TC_EPI_BIAS | TC_EPI_RELU;
  return wl;
}

TH_TEST(conv_random) {
  if (!setup_fake()) return 77;
  double t0 = th_now_mono();
  char dir[256];
  store_t *st = temp_store(dir);
  tc_workload wl = small_conv(8, 8, 16);
  tune_options o;
  quick_opts(&o, "random", 6, 3);
  tune_session_t *s = NULL;
  th_status rc = tune_session_new_workloads(st, CUDA, "sm_80", &wl, NULL, 1, &o, &s);
  if (rc != TH_OK) fprintf(stderr, "new: %s\n", tune_session_new_errmsg());
  CHECK(rc == TH_OK);
  /* start task -> select (no reference stage) -> build (CPU: NVRTC) -> measure (device) -> update */
  CHECK_EQ_INT(tune_session_next_stage(s), TUNE_RES_NONE);
  CHECK(tune_session_run_stage(s) == TH_OK);
  CHECK_EQ_INT(tune_session_next_stage(s), TUNE_RES_NONE); /* select */
  CHECK(tune_session_run_stage(s) == TH_OK);
  CHECK_EQ_INT(tune_session_next_stage(s), TUNE_RES_CPU_BUILD);
  CHECK(tune_session_run_stage(s) == TH_OK);
  CHECK_EQ_INT(tune_session_next_stage(s), TUNE_RES_MEASURE);
  CHECK(tune_session_run_stage(s) == TH_OK);
  CHECK_EQ_INT(tune_session_next_stage(s), TUNE_RES_NONE); /* update */
  CHECK(tune_session_run_all(s, NULL, NULL) == TH_OK);
  CHECK_EQ_INT(tune_session_next_stage(s), TUNE_RES_DONE);
  tune_progress p;
  tune_session_progress(s, &p);
  CHECK_EQ_INT(p.ntasks, 1);
  CHECK_STR(p.tasks[0].state, "done");
  CHECK_EQ_INT(p.tasks[0].trials, 6);
  CHECK_STR(p.tasks[0].template_name, tc_kernel_name(TC_KERNEL_CONV2D));
  CHECK(p.tasks[0].best_gflops > 0);
  CHECK(p.tasks[0].best_s > 0 && p.tasks[0].best_s < 1);
  CHECK_STR(p.tuner, "random");
  CHECK(p.trials_done == 6 && p.trials_total == 6);
  CHECK_STR(p.tasks[0].template_name, "conv2d_nchwc");
  /* issue 25, defect 6: the task's fastest configs and its fallback were timed again, as a CPU
   * task's */
  CHECK(p.tasks[0].verified_s > 0 && p.tasks[0].verified_s < 1);
  tune_session_free(s);

  char key[512];
  CHECK(tc_workload_key(&wl, key, sizeof key) == TH_OK);
  rec_ctx rc1 = {.key = key, .tuner = "random"};
  CHECK(store_record_each(st, tc_kernel_name(TC_KERNEL_CONV2D), "cuda -arch=sm_80", rec_cb, &rc1) == TH_OK);
  CHECK_EQ_INT(rc1.n, 6);
  CHECK_EQ_INT(rc1.ok, 6); /* random draws only valid configs, and every one computes the right answer */
  fprintf(stderr, "conv_random: %d verification records\n", rc1.verified);
  CHECK(rc1.verified >= 2 && rc1.verified <= TUNE_VERIFY_TOP + 1);
  /* lookup: tuned for sm_80, fallback on sm_90 and on the CPU (never across targets) */
  tc_cuda_target t80, t90;
  CHECK(tc_cuda_target_init(&t80, "sm_80") == TH_OK && tc_cuda_target_init(&t90, "sm_90") == TH_OK);
  tc_space sp;
  tc_config cfg;
  char src[16];
  CHECK(tc_cuda_space(&wl, &t80, &sp) == TH_OK);
  store_record best;
  CHECK(store_record_best(st, key, "cuda -arch=sm_80", &best) == TH_OK);
  CHECK_STR(best.tuner, STORE_TUNER_VERIFY); /* a build applies the verified choice */
  CHECK(tune_lookup_config(st, "cuda -arch=sm_80", &wl, &sp, &cfg, src) == TH_OK);
  CHECK_STR(src, "tuned");
  char text[1024];
  tc_config_str(&sp, &cfg, text, sizeof text);
  CHECK_STR(text, best.config);
  CHECK(tune_lookup_config(st, "cuda -arch=sm_90", &wl, &sp, &cfg, src) == TH_OK);
  CHECK_STR(src, "fallback");
  /* transfer to another conv2d workload on the same target */
  tc_workload wl2 = wl;
  wl2.oc = 32;
  tc_space sp2;
  CHECK(tc_cuda_space(&wl2, &t80, &sp2) == TH_OK);
  CHECK(tune_lookup_config(st, "cuda -arch=sm_80", &wl2, &sp2, &cfg, src) == TH_OK);
  CHECK_STR(src, "transferred");
  CHECK(tc_cuda_valid(&wl2, &t80, &sp2, &cfg, NULL, 0) == TH_OK);
  tune_build_lookup_ctx lc = {.st = st, .target = "cuda -arch=sm_90"};
  CHECK(tune_build_lookup(&lc, &wl2, key, &sp2, &cfg, src) == TH_ERR_NOT_FOUND);
  /* The output check runs in the worker: an impossible tolerance makes every trial a wrong answer. */
  quick_opts(&o, "random", 2, 2);
  o.measure.rtol = o.measure.atol = -1;
  CHECK(tune_session_new_workloads(st, CUDA, "sm_80", &wl2, NULL, 1, &o, &s) == TH_OK);
  CHECK(tune_session_run_all(s, NULL, NULL) == TH_OK);
  tune_session_progress(s, &p);
  CHECK_EQ_INT(p.tasks[0].errors, 2);
  tune_session_free(s);
  char key2[512];
  CHECK(tc_workload_key(&wl2, key2, sizeof key2) == TH_OK);
  store_record worst;
  CHECK(store_record_best(st, key2, "cuda -arch=sm_80", &worst) == TH_ERR_NOT_FOUND);
  rec_ctx rc2 = {.key = key2, .tuner = "random"};
  CHECK(store_record_each(st, tc_kernel_name(TC_KERNEL_CONV2D), "cuda -arch=sm_80", rec_cb, &rc2) == TH_OK);
  CHECK_EQ_INT(rc2.n, 2);
  CHECK_EQ_INT(rc2.errs, 2);
  CHECK_EQ_INT(rc2.classes[5], 2); /* wrong answer */
  store_close(st);
  rm_r(dir);
  rm_r(emu_dir);
  fprintf(stderr, "conv_random: %.1f s\n", th_now_mono() - t0);
  return 0;
}

typedef struct man_ctx {
  const char *keys[2];
  int tuned[2];
} man_ctx;

/* A concat has no FLOPs: its trials are valid with 0 GFLOPS, and the progress says so by the time (best_s),
 * not "no valid config" (as squeezenet's concats read on an H100 before). */
TH_TEST(concat_zero_flops) {
  if (!setup_fake()) return 77;
  char dir[256];
  store_t *st = temp_store(dir);
  tc_workload wl;
  memset(&wl, 0, sizeof wl);
  wl.kernel = TC_KERNEL_CONCAT;
  wl.n = 1, wl.c = 8, wl.h = wl.w = 6, wl.oc = 16, wl.kh = wl.kw = wl.sh = wl.sw = 1;
  wl.oh = wl.ow = 6;
  wl.in_cb = wl.out_cb = 1;
  tc_cuda_target t80;
  tc_space sp;
  CHECK(tc_cuda_target_init(&t80, "sm_80") == TH_OK && tc_cuda_space(&wl, &t80, &sp) == TH_OK);
  CHECK(tc_space_size(&sp) >= 2);
  tune_options o;
  quick_opts(&o, "random", 3, 3);
  tune_session_t *s = NULL;
  th_status rc = tune_session_new_workloads(st, CUDA, "sm_80", &wl, NULL, 1, &o, &s);
  if (rc != TH_OK) fprintf(stderr, "new: %s\n", tune_session_new_errmsg());
  CHECK(rc == TH_OK);
  CHECK(tune_session_run_all(s, NULL, NULL) == TH_OK);
  tune_progress p;
  tune_session_progress(s, &p);
  CHECK_EQ_INT(p.tasks[0].errors, 0);
  CHECK(p.tasks[0].best_gflops == 0);
  CHECK(p.tasks[0].best_s > 0 && p.tasks[0].best_s < 1);
  CHECK(p.tasks[0].best_s * 1e3 > 0); /* the progress document's best_ms (server/present.c) is not 0 */
  tune_session_free(s);
  store_close(st);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0);
  return 0;
}

/* The manifest (malloc'd) of mobilenet at batch 1 for sm_90 at precision (NULL: fp32), built through the build
 * lookup of st's records, as the daemon builds (no output files). */
static char *build_mobilenet(store_t *st, const char *precision) {
  tune_build_lookup_ctx lc = {.st = st, .target = "cuda -arch=sm_90"};
  tc_build_opts bo;
  memset(&bo, 0, sizeof bo);
  bo.framework = "cuda";
  bo.network = "mobilenet";
  bo.batch = 1;
  bo.arch = "sm_90";
  bo.precision = precision;
  bo.lookup = tune_build_lookup;
  bo.lookup_ctx = &lc;
  char *man = NULL, err[1024] = "";
  th_status rc = tc_build_bundle(&bo, NULL, NULL, &man, err, sizeof err);
  if (rc != TH_OK) fprintf(stderr, "build %s: %s\n", precision ? precision : "fp32", err);
  CHECK(rc == TH_OK && man);
  return man;
}

TH_TEST(mobilenet_xgb_build) {
  if (!setup_fake()) return 77;
  double t0 = th_now_mono();
  char dir[256];
  store_t *st = temp_store(dir);
  /* Two mobilenet GPU tasks: the cheapest depthwise and the cheapest conv2d (emulation cost). */
  tc_task *tasks = NULL;
  int n = 0;
  tc_backend_target bt;
  CHECK(tc_backend_target_init(CUDA, "sm_90", &bt, NULL, 0) == TH_OK);
  CHECK(tc_network_tasks(&bt, &(tc_netsrc){"mobilenet", NULL, NULL}, 1, &tasks, &n) == TH_OK);
  tc_cuda_target t;
  CHECK(tc_cuda_target_init(&t, "sm_90") == TH_OK);
  tc_workload wls[2];
  int weights[2], picked = 0;
  for (int k = 0; k < 2; k++) {
    int best = -1;
    for (int i = 0; i < n; i++) {
      tc_space sp;
      if (tc_cuda_space(&tasks[i].wl, &t, &sp) != TH_OK || tc_space_size(&sp) < 2) continue;
      if (tasks[i].wl.kernel != (k == 0 ? TC_KERNEL_DEPTHWISE : TC_KERNEL_CONV2D)) continue;
      if (best < 0 || tasks[i].flops < tasks[best].flops) best = i;
    }
    CHECK(best >= 0);
    wls[k] = tasks[best].wl;
    weights[k] = tasks[best].count;
    picked++;
  }
  CHECK_EQ_INT(picked, 2);
  tune_options o;
  quick_opts(&o, "xgb", 4, 4);
  tune_session_t *s = NULL;
  th_status rc = tune_session_new_workloads(st, CUDA, "sm_90", wls, weights, 2, &o, &s);
  if (rc != TH_OK) fprintf(stderr, "new: %s\n", tune_session_new_errmsg());
  CHECK(rc == TH_OK);
  CHECK(tune_session_run_all(s, NULL, NULL) == TH_OK);
  tune_progress p;
  tune_session_progress(s, &p);
  CHECK_STR(p.tuner, "xgb");
  CHECK(p.ntasks == 2 && p.trials_done == 8 && p.trials_total == 8);
  char keys[2][512];
  for (int k = 0; k < 2; k++) {
    CHECK_STR(p.tasks[k].state, "done");
    CHECK_EQ_INT(p.tasks[k].trials, 4);
    CHECK(tc_workload_key(&wls[k], keys[k], sizeof keys[k]) == TH_OK);
    CHECK_STR(p.tasks[k].key, keys[k]);
    rec_ctx r = {.key = keys[k], .tuner = "xgb"};
    CHECK(store_record_each(st, tc_kernel_name(wls[k].kernel), "cuda -arch=sm_90", rec_cb, &r) == TH_OK);
    CHECK_EQ_INT(r.n, 4);
    CHECK(r.ok >= 1);
    CHECK_EQ_INT(p.tasks[k].errors, r.errs);
  }
  tune_session_free(s);
  free(tasks);
  double t1 = th_now_mono();

  /* A cuda build through the lookup: the tuned workloads say "tuned" in the manifest. */
  char *man = build_mobilenet(st, NULL);
  for (int k = 0; k < 2; k++) {
    char needle[1200];
    snprintf(needle, sizeof needle, "\"workload\": \"%s\"", keys[k]);
    const char *at = strstr(man, needle);
    if (!at) {
      snprintf(needle, sizeof needle, "\"workload\":\"%s\"", keys[k]);
      at = strstr(man, needle);
    }
    CHECK(at != NULL);
    const char *srcp = strstr(at, "\"source\"");
    CHECK(srcp != NULL);
    CHECK(strncmp(srcp, "\"source\": \"tuned\"", 17) == 0 || strncmp(srcp, "\"source\":\"tuned\"", 16) == 0);
  }
  CHECK(strstr(man, "\"config_sources\"") != NULL);
  free(man);
  store_close(st);
  rm_r(dir);
  rm_r(emu_dir);
  fprintf(stderr, "mobilenet_xgb_build: session %.1f s, build %.1f s\n", t1 - t0, th_now_mono() - t1);
  return 0;
}

/* The "source" of the manifest layer whose workload is key ("tuned", "fallback", ...) into out; 0 when no layer
 * has that workload. */
static int layer_source(const char *man, const char *key, char *out, size_t n) {
  json_t *m = json_loads(man, 0, NULL);
  json_t *layer;
  size_t i;
  int found = 0;
  json_array_foreach(json_object_get(m, "layers"), i, layer) {
    const char *w = json_string_value(json_object_get(layer, "workload"));
    if (!found && w && !strcmp(w, key)) {
      snprintf(out, n, "%s", json_string_value(json_object_get(layer, "source")) ?: "");
      found = 1;
    }
  }
  json_decref(m);
  return found;
}

/* Issue 25: a tf32 session tunes the workloads a tf32 build runs. tune_session_new at precision tf32 gives the
 * network's GEMM and conv tasks (mobilenet's dense and pointwise convs) the " tf32" key and leaves the
 * others (depthwise, pools) fp32; tuning that task stores
 * records under the tf32 key, a tf32 build applies them, and an fp32 build does not. */
TH_TEST(tf32_tune_and_build) {
  if (!setup_fake()) return 77;
  char dir[256];
  store_t *st = temp_store(dir);
  tune_options o;
  quick_opts(&o, "random", 3, 3);
  o.verify_top = 0;
  o.precision = TC_PRECISION_TF32;
  /* the session's tasks: the dense one keyed tf32, every other one fp32 */
  tune_session_t *s = NULL;
  th_status rc = tune_session_new(st, CUDA, "sm_90", &(tc_netsrc){"mobilenet", NULL, NULL}, 1, &o, &s);
  if (rc != TH_OK) fprintf(stderr, "new: %s\n", tune_session_new_errmsg());
  CHECK(rc == TH_OK);
  tune_progress p;
  tune_session_progress(s, &p);
  int dense = 0, conv = 0;
  for (int i = 0; i < p.ntasks; i++) {
    size_t len = strlen(p.tasks[i].key);
    int tf32 = len > 5 && !strcmp(p.tasks[i].key + len - 5, " tf32");
    int is_dense = !strcmp(p.tasks[i].template_name, tc_kernel_name(TC_KERNEL_DENSE));
    int is_conv = !strcmp(p.tasks[i].template_name, tc_kernel_name(TC_KERNEL_CONV2D));
    CHECK_EQ_INT(tf32, is_dense || is_conv); /* depthwise, pools and the rest stay fp32 */
    dense += tf32 && is_dense;
    conv += tf32 && is_conv;
  }
  CHECK_EQ_INT(dense, 1);
  CHECK(conv > 0);
  tune_session_free(s);
  /* below sm_80 a tf32 session is refused, naming why */
  CHECK(tune_session_new(st, CUDA, "sm_75", &(tc_netsrc){"mobilenet", NULL, NULL}, 1, &o, &s) == TH_ERR_INVALID);
  CHECK(strstr(tune_session_new_errmsg(), "sm_80 or newer") != NULL);
  /* tune the dense task alone (the whole network is minutes of emulation): the workload as the session has it */
  tc_backend_target bt;
  CHECK(tc_backend_target_init(CUDA, "sm_90", &bt, NULL, 0) == TH_OK);
  tc_task *tasks = NULL;
  int n = 0;
  CHECK(tc_network_tasks(&bt, &(tc_netsrc){"mobilenet", NULL, NULL}, 1, &tasks, &n) == TH_OK);
  CHECK(tc_tasks_take_precision(tasks, n, TC_PRECISION_TF32) == TH_OK);
  int di = -1;
  for (int i = 0; i < n; i++)
    if (tasks[i].wl.kernel == TC_KERNEL_DENSE) di = i;
  CHECK(di >= 0);
  char key[512], fp32_key[512];
  snprintf(key, sizeof key, "%s", tasks[di].key);
  tc_workload fwl = tasks[di].wl;
  fwl.precision = TC_PRECISION_FP32;
  CHECK(tc_workload_key(&fwl, fp32_key, sizeof fp32_key) == TH_OK);
  CHECK(strlen(key) == strlen(fp32_key) + 5 && !strcmp(key + strlen(fp32_key), " tf32"));
  rc = tune_session_new_workloads(st, CUDA, "sm_90", &tasks[di].wl, &tasks[di].count, 1, &o, &s);
  if (rc != TH_OK) fprintf(stderr, "new: %s\n", tune_session_new_errmsg());
  CHECK(rc == TH_OK);
  CHECK(tune_session_run_all(s, NULL, NULL) == TH_OK);
  tune_session_free(s);
  free(tasks);
  rec_ctx r = {.key = key, .tuner = "random"};
  CHECK(store_record_each(st, tc_kernel_name(TC_KERNEL_DENSE), "cuda -arch=sm_90", rec_cb, &r) == TH_OK);
  CHECK(r.n == 3 && r.ok >= 1);
  rec_ctx none = {.key = fp32_key, .tuner = "random"};
  CHECK(store_record_each(st, tc_kernel_name(TC_KERNEL_DENSE), "cuda -arch=sm_90", rec_cb, &none) == TH_OK);
  CHECK_EQ_INT(none.n, 0);
  /* the tf32 build applies them; the fp32 build's dense layer has no record of its own */
  const char *precisions[2] = {"tf32", "fp32"};
  for (int k = 0; k < 2; k++) {
    char *man = build_mobilenet(st, precisions[k]), src[32] = "";
    CHECK(layer_source(man, k == 0 ? key : fp32_key, src, sizeof src));
    CHECK_EQ_INT(strcmp(src, "tuned") == 0, k == 0);
    CHECK(!layer_source(man, k == 0 ? fp32_key : key, src, sizeof src));
    free(man);
  }
  store_close(st);
  rm_r(dir);
  rm_r(emu_dir);
  return 0;
}

/* tc_cuda_ref_hook in the measure worker: one byte appended to emu_dir/ref_calls per reference
 * computed. */
static void count_reference(const tc_workload *wl) {
  (void)wl;
  char path[300];
  snprintf(path, sizeof path, "%s/ref_calls", emu_dir);
  FILE *f = fopen(path, "ab");
  if (f) {
    fputc('x', f);
    fclose(f);
  }
}

static long reference_count(void) {
  char path[300], *data = NULL;
  size_t n = 0;
  snprintf(path, sizeof path, "%s/ref_calls", emu_dir);
  if (th_read_file(path, 1 << 20, &data, &n) != TH_OK) return 0;
  free(data);
  return (long)n;
}

/* Files named cuda-ref-* in dir. */
static int reference_files(const char *dir) {
  char cmd[400];
  snprintf(cmd, sizeof cmd, "exit $(ls %s | grep -c '^cuda-ref-')", dir);
  int st = system(cmd);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Issue 25, defect 1: a device task's CPU reference is made once, in a request of its own, and
 * survives the restart of the measure worker after a candidate crashed it (or hung): the new worker
 * reads it back from the measurer's ref_dir instead of computing it again (vgg's naive references
 * at batch 4 take longer than the timeout, so every candidate after a restart was a class 7 and the
 * next restart threw the reference away again). The folder keeps the last workload's reference
 * only. */
TH_TEST(reference_survives_restart) {
  if (!setup_fake()) return 77;
  tc_cuda_ref_hook = count_reference; /* inherited by the forked worker */
  tune_measure_opts mo;
  tune_measure_opts_default(&mo);
  mo.repeat = 2;
  mo.timeout_s = 30;
  tune_measurer_t *m = NULL;
  CHECK(tune_measurer_new(&mo, &m) == TH_OK);
  char refdir[] = "/tmp/tuner_cuda_refs_XXXXXX", err[512] = "";
  CHECK(mkdtemp(refdir) != NULL);
  tune_measurer_set_ref_dir(m, refdir);
  tc_backend_target bt;
  CHECK(tc_backend_target_init(CUDA, "sm_90", &bt, err, sizeof err) == TH_OK);
  tc_workload wl = small_conv(4, 6, 8);
  tune_task t;
  CHECK(tune_task_init(&t, &wl, &bt, 1) == TH_OK);
  tune_result r;
  CHECK(tune_measurer_run_device(m, &bt, &wl, &t.fallback, NULL, &r) == TH_OK);
  fprintf(stderr, "first: class %d %s; references computed: %ld\n", r.error_class, r.msg,
          reference_count());
  CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_NONE);
  CHECK_EQ_INT(reference_count(), 1);
  CHECK_EQ_INT(reference_files(refdir), 1);
  char crash[300];
  snprintf(crash, sizeof crash, "%s/crash", emu_dir);
  CHECK(th_write_file_atomic(crash, "", 0) == TH_OK);
  CHECK(tune_measurer_run_device(m, &bt, &wl, &t.fallback, NULL, &r) == TH_OK);
  fprintf(stderr, "crashed: class %d %s\n", r.error_class, r.msg);
  CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_RUNTIME_DEVICE);
  CHECK(tune_measurer_run_device(m, &bt, &wl, &t.fallback, NULL, &r) == TH_OK);
  fprintf(stderr, "after the restart: class %d %s; references computed: %ld\n", r.error_class,
          r.msg, reference_count());
  CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_NONE);
  CHECK_EQ_INT(tune_measurer_restarts(m), 1);
  CHECK_EQ_INT(reference_count(), 1);
  /* another workload replaces the file */
  wl.oc = 4;
  CHECK(tune_task_init(&t, &wl, &bt, 1) == TH_OK);
  CHECK(tune_measurer_run_device(m, &bt, &wl, &t.fallback, NULL, &r) == TH_OK);
  CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_NONE);
  CHECK_EQ_INT(reference_count(), 2);
  CHECK_EQ_INT(reference_files(refdir), 1);
  tune_measurer_free(m);
  tc_cuda_ref_hook = NULL;
  rm_r(refdir);
  rm_r(emu_dir);
  return 0;
}

/* ---- NVRTC in build children (issue 25, defect 3) ---- */
/* The build worker this executable becomes when a test sets tune_build_worker_argv to
 * {"/proc/self/exe", "build-worker"}, as tunehub's main does: the faults from TH_TEST_BUILD_FAULTS,
 * and the folder where the interposed nvrtcGetCUBIN files each cubin's source from TH_TEST_EMU_DIR.
 * Not a TH_TEST. */
static int build_worker_entry(void) {
  const char *dir = getenv("TH_TEST_EMU_DIR");
  faults_load();
  if (dir) snprintf(emu_dir, sizeof emu_dir, "%s", dir);
  exit(tune_build_worker_main(0));
}
__attribute__((constructor)) static void register_build_worker(void) {
  th_test_register("build-worker", build_worker_entry);
}

/* Lines (pids) in path that are not this process's, into *others; returns all lines. */
static int nvrtc_pids(const char *path, int *others) {
  int n = 0;
  *others = 0;
  FILE *l = fopen(path, "r");
  for (long pid; l && fscanf(l, "%ld", &pid) == 1; n++) *others += pid != (long)getpid();
  if (l) fclose(l);
  return n;
}

/* Four candidates of a cuda task, the second hanging NVRTC and the third crashing it: every NVRTC
 * compile runs in a build child (a fork, or with exec an exec'd `build-worker`, as in the daemon),
 * under the build deadline, never in this process: the hang is a build timeout (class 6), the crash
 * a device compile error (class 3), the others' images are written there and measure valid through
 * the fake driver. Before, NVRTC ran on the calling threads with no deadline (a hung one blocked
 * its thread forever, class 6 never came). */
static int nvrtc_isolation(int exec) {
  if (!setup_fake()) return 77;
  char log[300], faults[300], dir[300];
  snprintf(log, sizeof log, "%s/nvrtc.log", emu_dir);
  snprintf(faults, sizeof faults, "%s/faults.bin", emu_dir);
  snprintf(dir, sizeof dir, "%s/builds", emu_dir);
  CHECK(th_mkdir_p(dir) == TH_OK);
  CHECK(setenv("TH_TEST_NVRTC_LOG", log, 1) == 0 && setenv("TH_TEST_EMU_DIR", emu_dir, 1) == 0);
  tc_backend_target bt;
  CHECK(tc_backend_target_init(CUDA, "sm_90", &bt, NULL, 0) == TH_OK);
  tc_workload wl = small_conv(4, 6, 8);
  tune_task t;
  CHECK(tune_task_init(&t, &wl, &bt, 1) == TH_OK);
  tc_config cfgs[4];
  cfgs[0] = t.fallback;
  tune_rng rng;
  tune_rng_seed(&rng, 7);
  for (int i = 1; i < 4; i++) {
    int dup;
    do {
      tune_space_random(&t.space, &rng, &cfgs[i]);
      dup = 0;
      for (int k = 0; k < i; k++) dup |= same_cfg(&cfgs[i], &cfgs[k]);
    } while (dup || !tune_task_valid(&t, &t.space, &cfgs[i]));
  }
  g_hang_cfg = cfgs[1];
  g_crash_cfg = cfgs[2];
  static char *const worker_argv[] = {"/proc/self/exe", "build-worker", NULL};
  if (exec) {
    faults_write(faults);
    tune_build_worker_argv = worker_argv;
  } else {
    tune_build_fault_hook = fault_hook;
  }
  char so[4][TUNE_PATH_MAX], fn[4][TUNE_FN_MAX], msg[4][160];
  int ec[4];
  double t0 = th_now_mono();
  CHECK(tune_task_build(&t, cfgs, 4, 2, 3.0, dir, "iso", so, fn, ec, msg) == TH_OK);
  tune_build_fault_hook = NULL;
  fprintf(stderr, "%s: build classes %d %d %d %d in %.1f s: %s / %s\n", exec ? "exec" : "fork",
          ec[0], ec[1], ec[2], ec[3], th_now_mono() - t0, msg[1], msg[2]);
  CHECK_EQ_INT(ec[0], 0);
  CHECK_EQ_INT(ec[1], TC_ERROR_CLASS_BUILD_TIMEOUT);
  CHECK(strstr(msg[1], "timed out") != NULL);
  CHECK_EQ_INT(ec[2], TC_ERROR_CLASS_COMPILE_DEVICE);
  CHECK(strstr(msg[2], "crashed") != NULL);
  CHECK_EQ_INT(ec[3], 0);
  CHECK(so[1][0] == 0 && so[2][0] == 0);
  for (int i = 0; i < 4; i += 3)
    CHECK(access(so[i], R_OK) == 0 && strcmp(fn[i], "th_candidate") == 0);
  int others = 0, calls = nvrtc_pids(log, &others);
  fprintf(stderr, "NVRTC ran %d times, %d of them in another process than this one\n", calls,
          others);
  CHECK(calls >= 2);
  CHECK_EQ_INT(others, calls);
  /* the images the children wrote are the candidates: measured through the fake driver, they are
   * valid */
  tune_measure_opts mo;
  tune_measure_opts_default(&mo);
  mo.repeat = 2;
  tune_measurer_t *m = NULL;
  CHECK(tune_measurer_new(&mo, &m) == TH_OK);
  for (int i = 0; i < 4; i += 3) {
    tune_result r;
    CHECK(tune_measurer_run_device(m, &bt, &wl, &cfgs[i], so[i], &r) == TH_OK);
    CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_NONE);
  }
  tune_measurer_free(m);
  nvrtc_pids(log, &others);
  CHECK_EQ_INT(others, calls); /* the worker loaded the images: no NVRTC there either */
  tune_build_workers_stop();
  tune_build_worker_argv = NULL;
  unsetenv("TH_TEST_BUILD_FAULTS");
  unsetenv("TH_TEST_NVRTC_LOG");
  rm_r(emu_dir);
  return 0;
}

TH_TEST(nvrtc_build_isolates_hang_and_crash) {
  return nvrtc_isolation(0);
}

TH_TEST(nvrtc_build_worker_exec) {
  return nvrtc_isolation(1);
}

TH_TEST(no_device) {
  tc_cuda_device d;
  char err[1024] = "";
  if (tc_cuda_device_query(&d, err, sizeof err) == TH_OK) {
    fprintf(stderr, "skipped: a CUDA driver with a device is present (%s)\n", d.name);
    return 77;
  }
  char dir[256];
  store_t *st = temp_store(dir);
  tune_options o;
  quick_opts(&o, "xgb", 4, 4);
  tune_session_t *s = NULL;
  CHECK(tune_session_new(st, CUDA, NULL, &(tc_netsrc){"mobilenet", NULL, NULL}, 1, &o, &s) == TH_ERR_UNSUPPORTED);
  CHECK(s == NULL);
  fprintf(stderr, "%s\n", tune_session_new_errmsg());
  CHECK(strncmp(tune_session_new_errmsg(), "no CUDA device: ", 16) == 0);
  store_close(st);
  rm_r(dir);
  return 0;
}
