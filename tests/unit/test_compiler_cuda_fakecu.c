/* A fake libcuda.so.1 for tests on machines without a GPU: the driver API subset tunehub uses, on
 * the CPU. Device memory is mapped so that each allocation ends at an inaccessible guard page and
 * starts after one (an emulated kernel that reads or writes past either end of a buffer faults here
 * as it would on a device, instead of reading its neighbour), copies are memcpy, streams and events are synchronous (an event pair
 * reports 1 ms per launch between them; an event reads not ready once after each record), and
 * cuLaunchKernel runs the kernel through the CPU emulation library named by $TH_FAKECU_KERNELS (the
 * bundle's kernels.cu compiled with the test's emulation header; loaded again when the variable
 * names another), which exports th_emu_launch(name, params, grid, block), and may export
 * th_emu_module(image), told of every image cuModuleLoadData loads (a test that emulates a tuner's
 * cubins maps them back to their source there). It lets a CUDA model .so run end to end (create,
 * upload, plan, launches, copies) against the reference.
 * A synchronous cuMemcpyHtoD from pageable memory returns, as the driver's does, once the bytes are
 * staged, before they reach the device: they land at the next operation on the legacy (NULL) stream
 * or a blocking stream, or the next synchronous call, and work on a non-blocking stream does not wait
 * for them (CUDA's "API synchronization behavior"; a model run on its own non-blocking stream read a
 * half-copied input so on an H200, 2026-11-28).
 * Stream capture is honest: while a stream captures, its launches and copies are recorded (kernel
 * arguments by value, as the driver does) and nothing runs; cuGraphLaunch replays the instantiated
 * list in order, and a synchronize or a synchronous call during a capture invalidates it, as on a
 * device. Built a second time with TH_FAKECU_NO_GRAPHS, the library has no graph entry points at
 * all (an old driver); $TH_FAKECU_CAPTURE_FAIL makes cuStreamBeginCapture fail; $TH_FAKECU_INIT and
 * $TH_FAKECU_COUNT set cuInit's result and the device count. Counters (th_fakecu_*) let a test tell
 * a replay from plain launches. */
#include <dlfcn.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
static void *emu;
static long ticks; /* kernels run, launched or replayed: events record this count, each "takes" 1 ms */
/* Counters a test reads with dlsym: kernels run by cuLaunchKernel, launches recorded by a capture,
 * cuGraphLaunch calls, and async copies whose host side was not allocated by cuMemHostAlloc (a real driver
 * stages those through its own buffers, and they are not asynchronous). */
long th_fakecu_launches, th_fakecu_captured, th_fakecu_replays, th_fakecu_pageable_copies;
/* cuFuncSetAttribute calls, and kernels run with dynamic shared memory (the largest amount in the other) */
long th_fakecu_opt_ins, th_fakecu_dyn_launches, th_fakecu_dyn_max;

/* One recorded stream operation: a launch (f set) or a copy of n bytes from src to dst. */
typedef struct op {
  void *f;
  unsigned g[3], b[3], shm;
  uint64_t args[6];
  int nargs;
  void *dst;
  const void *src;
  size_t n;
} op;
typedef struct oplist {
  op *ops;
  int nops;
} oplist;
typedef struct fstream {
  int capturing, invalid, nonblocking;
  oplist rec;
} fstream;

/* Pageable host-to-device copies staged and not yet on the device, in order. */
static struct staged {
  void *dst, *bytes;
  size_t n;
} *staged;
static int nstaged;
/* They land: at anything ordered after the legacy stream's earlier work. */
static void land_staged(void) {
  for (int i = 0; i < nstaged; i++) {
    memcpy(staged[i].dst, staged[i].bytes, staged[i].n);
    free(staged[i].bytes);
  }
  free(staged);
  staged = NULL, nstaged = 0;
}
/* An operation on stream st: on the legacy stream (NULL) or a blocking one, the staged copies land
 * first. */
static void on_stream(void *st) {
  const fstream *fs = st;
  if (!fs || !fs->nonblocking) land_staged();
}
static int capturing; /* streams capturing now: synchronous calls are illegal meanwhile */

static CUresult record(void *st, const op *o) {
  fstream *s = st;
  op *n = realloc(s->rec.ops, (size_t)(s->rec.nops + 1) * sizeof *n);
  if (!n) return 2;
  s->rec.ops = n;
  n[s->rec.nops++] = *o;
  return 0;
}

/* A call that would run synchronously while a capture is open: the capture becomes invalid. */
static int capture_violated(void) {
  return capturing > 0;
}
static struct {
  char *p;
  size_t n;
} pinned[64]; /* cuMemHostAlloc'd ranges */
static int (*emu_launch)(const char *, void **, const unsigned *, const unsigned *);

/* $TH_FAKECU_INIT (a CUresult) makes cuInit fail so, and $TH_FAKECU_COUNT sets the device count:
 * the GPU tests' gate (test_cuda_gpu_gate.h) tells "no device" from "a device that errors" by them.
 */
static int env_int(const char *name, int dflt) {
  const char *v = getenv(name);
  return v && *v ? (int)strtol(v, NULL, 10) : dflt;
}
CUresult cuInit(unsigned f) {
  (void)f;
  return env_int("TH_FAKECU_INIT", 0);
}
CUresult cuDriverGetVersion(int *v) { *v = 13000; return 0; }
CUresult cuDeviceGetCount(int *n) {
  *n = env_int("TH_FAKECU_COUNT", 1);
  return 0;
}
CUresult cuDeviceGet(int *d, int i) { *d = i; return i == 0 ? 0 : 101; }
CUresult cuDeviceGetName(char *s, int n, int d) { (void)d; snprintf(s, (size_t)n, "tunehub CPU emulator"); return 0; }
CUresult cuDeviceGetAttribute(int *v, int a, int d) {
  /* an sm_90 part with 1 SM, and the limits tunehub queries (cuda.h's attribute numbers) */
  static const int attrs[][2] = {
      {75, 9}, {76, 0}, {16, 1},                    /* compute capability, SMs */
      {1, 1024}, {2, 1024}, {3, 1024}, {4, 64},     /* threads per block, block x, y, z */
      {5, 2147483647}, {6, 65535}, {7, 65535},      /* grid x, y, z */
      {8, 48 * 1024}, {97, 227 * 1024}, {81, 228 * 1024}, /* shared: static, opt-in, per SM */
      {12, 65536}, {82, 65536}, {39, 2048},         /* registers per block, per SM; threads per SM */
      {38, 1 << 20}};                               /* L2: 1 MiB */
  (void)d;
  *v = 0;
  for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++)
    if (attrs[i][0] == a) *v = attrs[i][1];
  /* $TH_FAKECU_SM ("75") makes the part another compute capability, for the runtime's arch check */
  const char *sm = getenv("TH_FAKECU_SM");
  if (sm && (a == 75 || a == 76)) {
    long n = strtol(sm, NULL, 10);
    *v = (int)(a == 75 ? n / 10 : n % 10);
  }
  /* $TH_FAKECU_SMS ("132") gives it that many SMs, so that fallbacks size their grids for a real part */
  const char *sms = getenv("TH_FAKECU_SMS");
  if (sms && a == 16) *v = (int)strtol(sms, NULL, 10);
  return 0;
}
CUresult cuDeviceTotalMem_v2(size_t *m, int d) { (void)d; *m = (size_t)1 << 32; return 0; }
CUresult cuDevicePrimaryCtxRetain(void **c, int d) { (void)d; *c = (void *)&emu; return 0; }
CUresult cuDevicePrimaryCtxRelease_v2(int d) { (void)d; return 0; }
CUresult cuCtxSetCurrent(void *c) { (void)c; return 0; }
CUresult cuModuleLoadData(void **m, const void *image) {
  static char emu_path[4096];
  const char *p = getenv("TH_FAKECU_KERNELS");
  if (emu && p && strcmp(p, emu_path) != 0) emu = NULL; /* a test pointed it at another library */
  if (!emu) {
    snprintf(emu_path, sizeof emu_path, "%s", p ? p : "");
    emu = p ? dlopen(p, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (emu) emu_launch = (int (*)(const char *, void **, const unsigned *, const unsigned *))dlsym(emu, "th_emu_launch");
    if (!emu || !emu_launch) return 200; /* CUDA_ERROR_INVALID_IMAGE */
  }
  int (*on_module)(const void *) = (int (*)(const void *))dlsym(emu, "th_emu_module");
  if (on_module && on_module(image) != 0) return 200;
  *m = emu;
  return 0;
}
CUresult cuModuleUnload(void *m) { (void)m; return 0; }
/* A function: its name for the emulator, and the dynamic shared memory it opted in to. */
typedef struct ffunc {
  char *name;
  int max_dyn;
} ffunc;
CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
  (void)m;
  ffunc *fn = calloc(1, sizeof *fn);
  if (!fn || !(fn->name = strdup(name))) {
    free(fn);
    return 2;
  }
  *f = fn;
  return 0;
}
/* Dynamic shared memory opt-in (attribute 8) only, up to the 227 KiB the fake device reports. */
CUresult cuFuncSetAttribute(void *f, int attr, int value) {
  ffunc *fn = f;
  if (!fn || attr != 8 || value < 0 || value > 227 * 1024) return 1; /* CUDA_ERROR_INVALID_VALUE */
  fn->max_dyn = value;
  th_fakecu_opt_ins++;
  return 0;
}
/* A mapping of [guard page][header page][data pages][guard page]: the data (n rounded up to 256
 * bytes, the driver's alignment) ends where the last guard page starts, and the header page holds the
 * mapping's size for cuMemFree. An access past the end faults at once; one before the start lands in
 * the header page only if it is less than a page early, else in the first guard. */
CUresult cuMemAlloc_v2(uint64_t *p, size_t n) {
  if (capture_violated()) return 900; /* CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED */
  size_t pg = (size_t)sysconf(_SC_PAGESIZE), data = ((n ? n : 1) + 255) / 256 * 256;
  size_t dpages = (data + pg - 1) / pg * pg, total = pg + pg + dpages + pg;
  char *m = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
  if (mprotect(m + pg, pg + dpages, PROT_READ | PROT_WRITE) != 0) {
    munmap(m, total);
    return 2;
  }
  memcpy(m + pg, &total, sizeof total);
  *p = (uint64_t)(uintptr_t)(m + pg + pg + dpages - data);
  return 0;
}
CUresult cuMemFree_v2(uint64_t p) {
  if (!p) return 0;
  land_staged(); /* cuMemFree waits for the device */
  size_t pg = (size_t)sysconf(_SC_PAGESIZE), total;
  /* the data starts less than a page into its first page (the data pages hold it rounded up to
   * whole pages), and the header page is the one before */
  char *hdr = (char *)(uintptr_t)(p / pg * pg) - pg;
  memcpy(&total, hdr, sizeof total);
  char *m = hdr - pg;
  munmap(m, total);
  return 0;
}
static int is_pinned(const void *h, size_t n);
CUresult cuMemcpyHtoD_v2(uint64_t d, const void *s, size_t n) {
  if (capture_violated()) return 906; /* CUDA_ERROR_STREAM_CAPTURE_IMPLICIT */
  land_staged();
  if (is_pinned(s, n)) {
    memcpy((void *)(uintptr_t)d, s, n);
    return 0;
  }
  struct staged *g = realloc(staged, (size_t)(nstaged + 1) * sizeof *g);
  if (!g) return 2;
  staged = g;
  if (!(g[nstaged].bytes = malloc(n ? n : 1))) return 2;
  memcpy(g[nstaged].bytes, s, n);
  g[nstaged].dst = (void *)(uintptr_t)d, g[nstaged].n = n;
  nstaged++;
  return 0;
}
CUresult cuMemcpyDtoH_v2(void *d, uint64_t s, size_t n) {
  if (capture_violated()) return 906;
  land_staged();
  memcpy(d, (const void *)(uintptr_t)s, n);
  return 0;
}
/* An async copy: recorded on a capturing stream, else done now. */
static CUresult copy_async(void *d, const void *s, size_t n, void *st) {
  fstream *fs = st;
  if (fs && fs->capturing) {
    op o;
    memset(&o, 0, sizeof o);
    o.dst = d, o.src = s, o.n = n;
    return record(fs, &o);
  }
  on_stream(st);
  memmove(d, s, n);
  return 0;
}
CUresult cuMemHostAlloc(void **p, size_t n, unsigned flags) {
  (void)flags;
  for (size_t i = 0; i < sizeof pinned / sizeof pinned[0]; i++)
    if (!pinned[i].p) {
      if (!(pinned[i].p = malloc(n ? n : 1))) return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
      pinned[i].n = n;
      *p = pinned[i].p;
      return 0;
    }
  return 2;
}
CUresult cuMemFreeHost(void *p) {
  for (size_t i = 0; i < sizeof pinned / sizeof pinned[0]; i++)
    if (pinned[i].p == p) {
      free(p);
      pinned[i].p = NULL;
      return 0;
    }
  return 1; /* CUDA_ERROR_INVALID_VALUE */
}
static int is_pinned(const void *h, size_t n) {
  for (size_t i = 0; i < sizeof pinned / sizeof pinned[0]; i++)
    if (pinned[i].p && (const char *)h >= pinned[i].p && (const char *)h + n <= pinned[i].p + pinned[i].n) return 1;
  return 0;
}
static void count_pageable(const void *h, size_t n) {
  if (!is_pinned(h, n)) th_fakecu_pageable_copies++;
}
CUresult cuMemcpyHtoDAsync_v2(uint64_t d, const void *s, size_t n, void *st) {
  count_pageable(s, n);
  return copy_async((void *)(uintptr_t)d, s, n, st);
}
CUresult cuMemcpyDtoHAsync_v2(void *d, uint64_t s, size_t n, void *st) {
  count_pageable(d, n);
  return copy_async(d, (const void *)(uintptr_t)s, n, st);
}
CUresult cuMemcpyDtoDAsync_v2(uint64_t d, uint64_t s, size_t n, void *st) {
  return copy_async((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n, st);
}
CUresult cuMemsetD8_v2(uint64_t d, unsigned char v, size_t n) {
  land_staged();
  memset((void *)(uintptr_t)d, v, n);
  return 0;
}
static long long memset_async_bytes; /* what cuMemsetD8Async wrote (the measurement's L2 flushes) */
CUresult cuMemsetD8Async(uint64_t d, unsigned char v, size_t n, void *st) {
  on_stream(st);
  memset_async_bytes += (long long)n;
  memset((void *)(uintptr_t)d, v, n);
  return 0;
}
/* Not the driver's: tests find it with dlsym on this library. */
long long th_fakecu_memset_async_bytes(void);
long long th_fakecu_memset_async_bytes(void) { return memset_async_bytes; }
static CUresult run_op(const op *o) {
  if (!o->f) {
    memmove(o->dst, o->src, o->n);
    return 0;
  }
  void *params[7] = {0, 0, 0, 0, 0, 0, 0};
  for (int i = 0; i < o->nargs; i++) params[i] = (void *)&o->args[i];
  const ffunc *fn = o->f;
  /* above 48 KiB a launch needs the kernel's opt-in, as on a device */
  if (o->shm > 48 * 1024 && o->shm > (unsigned)fn->max_dyn) return 1; /* CUDA_ERROR_INVALID_VALUE */
  if (o->shm > 0) th_fakecu_dyn_launches++;
  if (o->shm > (unsigned)th_fakecu_dyn_max) th_fakecu_dyn_max = o->shm;
  ticks++;
  return emu_launch && emu_launch(fn->name, params, o->g, o->b) == 0 ? 0 : 719; /* LAUNCH_FAILED */
}
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shm, void *st, void **params, void **extra) {
  (void)extra;
  op o;
  memset(&o, 0, sizeof o);
  o.f = f, o.g[0] = gx, o.g[1] = gy, o.g[2] = gz, o.b[0] = bx, o.b[1] = by, o.b[2] = bz, o.shm = shm;
  /* every tunehub kernel takes up to 6 pointers (5 arguments and a split-k scratch; the emulator's
   * limit too); the values are copied now */
  for (; o.nargs < 6 && params[o.nargs]; o.nargs++) memcpy(&o.args[o.nargs], params[o.nargs], sizeof o.args[0]);
  fstream *s = st;
  if (s && s->capturing) {
    th_fakecu_captured++;
    return record(s, &o);
  }
  th_fakecu_launches++;
  on_stream(st);
  return run_op(&o);
}
CUresult cuStreamCreate(void **s, unsigned f) {
  fstream *fs = calloc(1, sizeof(fstream));
  if (!fs) return 2;
  fs->nonblocking = (f & 1) != 0; /* CU_STREAM_NON_BLOCKING */
  *s = fs;
  return 0;
}
CUresult cuStreamDestroy_v2(void *s) {
  fstream *fs = s;
  if (fs && fs->capturing) capturing--;
  if (fs) free(fs->rec.ops);
  free(fs);
  return 0;
}
CUresult cuStreamQuery(void *s) { (void)s; return 0; }
CUresult cuStreamSynchronize(void *s) {
  fstream *fs = s;
  if (fs && fs->capturing) {
    fs->invalid = 1;
    return 900; /* CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED */
  }
  on_stream(s);
  return 0;
}
#ifndef TH_FAKECU_NO_GRAPHS
CUresult cuStreamBeginCapture_v2(void *s, int mode) {
  fstream *fs = s;
  if (!fs || mode < 0 || mode > 2) return 1; /* CUDA_ERROR_INVALID_VALUE (the legacy stream cannot capture) */
  if (fs->capturing) return 401;            /* CUDA_ERROR_ILLEGAL_STATE */
  if (getenv("TH_FAKECU_CAPTURE_FAIL")) return 900;
  fs->capturing = 1, fs->invalid = 0;
  fs->rec.nops = 0;
  capturing++;
  return 0;
}
CUresult cuStreamEndCapture(void *s, void **g) {
  fstream *fs = s;
  if (!fs || !fs->capturing) return 401;
  fs->capturing = 0;
  capturing--;
  oplist *l = NULL;
  if (!fs->invalid && (l = calloc(1, sizeof *l))) *l = fs->rec;
  else free(fs->rec.ops);
  fs->rec.ops = NULL, fs->rec.nops = 0;
  *g = l;
  return l ? 0 : fs->invalid ? 901 : 2; /* CUDA_ERROR_STREAM_CAPTURE_INVALIDATED */
}
CUresult cuGraphInstantiateWithFlags(void **exec, void *g, unsigned long long flags) {
  const oplist *src = g;
  oplist *l = calloc(1, sizeof *l);
  if (!g || flags != 0) return 1;
  if (!l || !(l->ops = malloc((size_t)src->nops * sizeof *l->ops + 1))) {
    free(l);
    return 2;
  }
  memcpy(l->ops, src->ops, (size_t)src->nops * sizeof *l->ops);
  l->nops = src->nops;
  *exec = l;
  return 0;
}
CUresult cuGraphLaunch(void *exec, void *st) {
  const oplist *l = exec;
  fstream *s = st;
  if (!l) return 400; /* CUDA_ERROR_INVALID_HANDLE */
  if (s && s->capturing) return 900;
  th_fakecu_replays++;
  on_stream(st);
  for (int i = 0; i < l->nops; i++) {
    CUresult r = run_op(&l->ops[i]);
    if (r != 0) return r;
  }
  return 0;
}
static CUresult free_list(void *g) {
  oplist *l = g;
  if (l) free(l->ops);
  free(l);
  return 0;
}
CUresult cuGraphExecDestroy(void *exec) { return free_list(exec); }
CUresult cuGraphDestroy(void *g) { return free_list(g); }
#endif
/* An event holds the kernels run (ticks) when it was recorded; like a real device's, it is not complete
 * yet when first asked (CUDA_ERROR_NOT_READY once), so a caller's deadline is checked after every
 * launch. */
typedef struct fake_event {
  long ticks;
  int pending;
} fake_event;
CUresult cuEventCreate(void **e, unsigned f) {
  (void)f;
  *e = calloc(1, sizeof(fake_event));
  return *e ? 0 : 2;
}
CUresult cuEventDestroy_v2(void *e) { free(e); return 0; }
CUresult cuEventRecord(void *e, void *s) {
  on_stream(s);
  ((fake_event *)e)->ticks = ticks;
  ((fake_event *)e)->pending = 1;
  return 0;
}
CUresult cuEventQuery(void *e) {
  if (!((fake_event *)e)->pending) return 0;
  ((fake_event *)e)->pending = 0;
  return 600; /* CUDA_ERROR_NOT_READY */
}
CUresult cuEventElapsedTime(float *ms, void *a, void *b) {
  *ms = (float)(((fake_event *)b)->ticks - ((fake_event *)a)->ticks);
  return 0;
}
CUresult cuGetErrorString(CUresult r, const char **s) {
  *s = r == 200 ? "CUDA_ERROR_INVALID_IMAGE (fake driver: TH_FAKECU_KERNELS not loadable)"
                : r == 719 ? "CUDA_ERROR_LAUNCH_FAILED (fake driver)"
                : r == 900 ? "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (fake driver)"
                : r == 901 ? "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED (fake driver)" : "fake driver error";
  return 0;
}
/* NVRTC opens libcuda.so.1 itself and asks for the driver's private export tables: none here. */
CUresult cuGetExportTable(const void **table, const void *id) {
  (void)id;
  *table = NULL;
  return 801; /* CUDA_ERROR_NOT_SUPPORTED */
}
