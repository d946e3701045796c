/* A fake libcuda.so.1 for tests on machines without a GPU: the driver API subset tunehub uses, on
 * the CPU. Memory is malloc, copies are memcpy, streams and events are synchronous (an event pair
 * reports 1 ms per launch between them; an event reads not ready once after each record), and
 * cuLaunchKernel runs the kernel through the CPU emulation library named by $TH_FAKECU_KERNELS (the
 * bundle's kernels.cu compiled with the test's emulation header; loaded again when the variable
 * names another), which exports th_emu_launch(name, params, grid, block), and may export
 * th_emu_module(image), told of every image cuModuleLoadData loads (a test that emulates a tuner's
 * cubins maps them back to their source there). It lets a CUDA model .so run end to end (create,
 * upload, plan, launches, copies) against the reference. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
static void *emu;
static long launches; /* events record this count: each launch "takes" 1 ms */
static int (*emu_launch)(const char *, void **, const unsigned *, const unsigned *);

CUresult cuInit(unsigned f) { (void)f; return 0; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return 0; }
CUresult cuDeviceGetCount(int *n) { *n = 1; return 0; }
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
CUresult cuModuleGetFunction(void **f, void *m, const char *name) { (void)m; *f = strdup(name); return *f ? 0 : 2; }
CUresult cuMemAlloc_v2(uint64_t *p, size_t n) {
  void *q = NULL;
  if (posix_memalign(&q, 256, n ? n : 1) != 0) return 2;
  *p = (uint64_t)(uintptr_t)q;
  return 0;
}
CUresult cuMemFree_v2(uint64_t p) { free((void *)(uintptr_t)p); return 0; }
CUresult cuMemcpyHtoD_v2(uint64_t d, const void *s, size_t n) { memcpy((void *)(uintptr_t)d, s, n); return 0; }
CUresult cuMemcpyDtoH_v2(void *d, uint64_t s, size_t n) { memcpy(d, (const void *)(uintptr_t)s, n); return 0; }
CUresult cuMemcpyHtoDAsync_v2(uint64_t d, const void *s, size_t n, void *st) { (void)st; return cuMemcpyHtoD_v2(d, s, n); }
CUresult cuMemcpyDtoHAsync_v2(void *d, uint64_t s, size_t n, void *st) { (void)st; return cuMemcpyDtoH_v2(d, s, n); }
CUresult cuMemcpyDtoDAsync_v2(uint64_t d, uint64_t s, size_t n, void *st) {
  (void)st;
  memmove((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n);
  return 0;
}
CUresult cuMemsetD8_v2(uint64_t d, unsigned char v, size_t n) { memset((void *)(uintptr_t)d, v, n); return 0; }
static long long memset_async_bytes; /* what cuMemsetD8Async wrote (the measurement's L2 flushes) */
CUresult cuMemsetD8Async(uint64_t d, unsigned char v, size_t n, void *st) {
  (void)st;
  memset_async_bytes += (long long)n;
  return cuMemsetD8_v2(d, v, n);
}
/* Not the driver's: tests find it with dlsym on this library. */
long long th_fakecu_memset_async_bytes(void);
long long th_fakecu_memset_async_bytes(void) { return memset_async_bytes; }
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shm, void *st, void **params, void **extra) {
  (void)shm, (void)st, (void)extra;
  unsigned g[3] = {gx, gy, gz}, b[3] = {bx, by, bz};
  launches++;
  return emu_launch && emu_launch((const char *)f, params, g, b) == 0 ? 0 : 719; /* LAUNCH_FAILED */
}
CUresult cuStreamCreate(void **s, unsigned f) { (void)f; *s = (void *)&emu_launch; return 0; }
CUresult cuStreamDestroy_v2(void *s) { (void)s; return 0; }
CUresult cuStreamQuery(void *s) { (void)s; return 0; }
CUresult cuStreamSynchronize(void *s) { (void)s; return 0; }
/* An event holds the launch count when it was recorded; like a real device's, it is not complete
 * yet when first asked (CUDA_ERROR_NOT_READY once), so a caller's deadline is checked after every
 * launch. */
typedef struct fake_event {
  long launches;
  int pending;
} fake_event;
CUresult cuEventCreate(void **e, unsigned f) {
  (void)f;
  *e = calloc(1, sizeof(fake_event));
  return *e ? 0 : 2;
}
CUresult cuEventDestroy_v2(void *e) { free(e); return 0; }
CUresult cuEventRecord(void *e, void *s) {
  (void)s;
  ((fake_event *)e)->launches = launches;
  ((fake_event *)e)->pending = 1;
  return 0;
}
CUresult cuEventQuery(void *e) {
  if (!((fake_event *)e)->pending) return 0;
  ((fake_event *)e)->pending = 0;
  return 600; /* CUDA_ERROR_NOT_READY */
}
CUresult cuEventElapsedTime(float *ms, void *a, void *b) {
  *ms = (float)(((fake_event *)b)->launches - ((fake_event *)a)->launches);
  return 0;
}
CUresult cuGetErrorString(CUresult r, const char **s) {
  *s = r == 200 ? "CUDA_ERROR_INVALID_IMAGE (fake driver: TH_FAKECU_KERNELS not loadable)"
                : r == 719 ? "CUDA_ERROR_LAUNCH_FAILED (fake driver)" : "fake driver error";
  return 0;
}
/* NVRTC opens libcuda.so.1 itself and asks for the driver's private export tables: none here. */
CUresult cuGetExportTable(const void **table, const void *id) {
  (void)id;
  *table = NULL;
  return 801; /* CUDA_ERROR_NOT_SUPPORTED */
}
