/* NVRTC wrapper and GPU target limits (the arch table, or the device's own): one translation unit
 * (all kernels of a network, or one template's sample) -> one nvrtcCompileProgram call for sm_XX,
 * which yields both the cubin and the PTX (the PTX is kept as the JIT fallback for newer GPUs).
 * Compile errors carry the NVRTC log. Without CUDA at build time (TH_HAVE_CUDA undefined) the
 * compiler reports TH_ERR_UNSUPPORTED "built without CUDA". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tc_cuda.h"

#ifdef TH_HAVE_CUDA
#include <nvrtc.h>
#endif

/* The documented limits per compute capability (CUDA C++ Programming Guide, "Technical
 * Specifications per Compute Capability"; opt-in shared memory also in each architecture's tuning
 * guide). Static __shared__ is capped at 48 KiB per block on every one of them; more needs dynamic
 * shared memory and the opt-in attribute. Registers: 64K 32-bit registers per block and per
 * multiprocessor, 255 per thread. SMs and L2: those of the part named first (its data sheet), for a
 * build for an arch whose device this process has not queried. */
#define TC__MIB (1024 * 1024)
static const struct tc__arch_limits {
  int sm;
  int shared_optin, shared_per_sm, threads_per_sm, sms, l2;
} tc__arch_table[] = {
    {70, 96 * 1024, 96 * 1024, 2048, 80, 6 * TC__MIB},     /* V100 (SXM2), Titan V */
    {75, 64 * 1024, 64 * 1024, 1024, 40, 4 * TC__MIB},     /* T4, RTX 20xx */
    {80, 163 * 1024, 164 * 1024, 2048, 108, 40 * TC__MIB}, /* A100 */
    {86, 99 * 1024, 100 * 1024, 1536, 84, 6 * TC__MIB},    /* A40, RTX 30xx */
    {89, 99 * 1024, 100 * 1024, 1536, 142, 96 * TC__MIB},  /* L40S, L4, RTX 40xx */
    {90, 227 * 1024, 228 * 1024, 2048, 132, 50 * TC__MIB}, /* H100 (SXM5), H200 */
};

th_status tc_cuda_target_init(tc_cuda_target *t, const char *arch) {
  if (!t) return TH_ERR_INVALID;
  if (!arch || !*arch) arch = "sm_90";
  if (strncmp(arch, "sm_", 3) != 0) return TH_ERR_INVALID;
  int64_t sm = 0;
  const char *p = arch + 3;
  if (!*p) return TH_ERR_INVALID;
  for (; *p; p++) {
    if (*p < '0' || *p > '9' || sm > 1000) return TH_ERR_INVALID;
    sm = sm * 10 + (*p - '0');
  }
  if (sm < 70 || sm > 121) return TH_ERR_INVALID;
  memset(t, 0, sizeof *t);
  snprintf(t->arch, sizeof t->arch, "sm_%d", (int)sm);
  t->sm = (int)sm;
  t->max_threads = 1024;
  t->max_block[0] = 1024;
  t->max_block[1] = 1024;
  t->max_block[2] = 64;
  t->max_grid[0] = 2147483647;
  t->max_grid[1] = 65535;
  t->max_grid[2] = 65535;
  t->max_shared_bytes = 48 * 1024;
  t->max_regs_per_block = 65536;
  t->max_regs_per_thread = 255;
  t->max_regs_per_sm = 65536;
  /* an arch without a row (sm_72, sm_87, sm_100, sm_120, ...): the smallest documented values */
  int n = (int)(sizeof tc__arch_table / sizeof tc__arch_table[0]), row = -1;
  t->max_shared_optin = t->max_shared_per_sm = t->max_threads_per_sm = t->multiprocessors =
      INT32_MAX;
  for (int i = 0; i < n; i++) {
    const struct tc__arch_limits *a = &tc__arch_table[i];
    if (a->sm == sm) row = i;
    if (a->shared_optin < t->max_shared_optin) t->max_shared_optin = a->shared_optin;
    if (a->shared_per_sm < t->max_shared_per_sm) t->max_shared_per_sm = a->shared_per_sm;
    if (a->threads_per_sm < t->max_threads_per_sm) t->max_threads_per_sm = a->threads_per_sm;
    if (a->sms < t->multiprocessors) t->multiprocessors = a->sms;
    if (a->l2 > t->l2_bytes) t->l2_bytes = a->l2; /* the largest: it sizes an L2 flush */
  }
  if (row >= 0) {
    t->max_shared_optin = tc__arch_table[row].shared_optin;
    t->max_shared_per_sm = tc__arch_table[row].shared_per_sm;
    t->max_threads_per_sm = tc__arch_table[row].threads_per_sm;
    t->multiprocessors = tc__arch_table[row].sms;
    t->l2_bytes = tc__arch_table[row].l2;
  }
  snprintf(t->limits_from, sizeof t->limits_from,
           row >= 0 ? "%s table" : "%s: smallest of the table", t->arch);
  return TH_OK;
}

/* v replaces *dst when the driver reported it */
static void tc__limit(int *dst, int v) {
  if (v > 0) *dst = v;
}

void tc_cuda_target_use_device(tc_cuda_target *t, const tc_cuda_device *d) {
  if (!t || !d || strcmp(t->arch, d->arch) != 0) return;
  tc__limit(&t->max_threads, d->max_threads);
  for (int a = 0; a < 3; a++) {
    tc__limit(&t->max_block[a], d->max_block[a]);
    if (d->max_grid[a] > 0) t->max_grid[a] = d->max_grid[a];
  }
  tc__limit(&t->max_shared_bytes, d->max_shared_bytes);
  tc__limit(&t->max_shared_optin, d->max_shared_optin);
  tc__limit(&t->max_shared_per_sm, d->max_shared_per_sm);
  tc__limit(&t->max_regs_per_block, d->max_regs_per_block);
  tc__limit(&t->max_regs_per_sm, d->max_regs_per_sm);
  tc__limit(&t->max_threads_per_sm, d->max_threads_per_sm);
  tc__limit(&t->multiprocessors, d->multiprocessors);
  tc__limit(&t->l2_bytes, d->l2_bytes);
  snprintf(t->limits_from, sizeof t->limits_from, "device %.60s", d->name);
}

#ifdef TH_HAVE_CUDA

const char *tc_nvrtc_version(void) {
  static _Thread_local char v[16];
  int ma = 0, mi = 0;
  if (nvrtcVersion(&ma, &mi) != NVRTC_SUCCESS) return "none";
  snprintf(v, sizeof v, "%d.%d", ma, mi);
  return v;
}

th_status tc_nvrtc_compile(const char *src, const char *name, const tc_cuda_target *t, char **cubin,
                           size_t *cubin_len, char **ptx, size_t *ptx_len, char *err, size_t errlen) {
  if (err && errlen) err[0] = '\0';
  if (cubin) *cubin = NULL;
  if (ptx) *ptx = NULL;
  if (!src || !t) return TH_ERR_INVALID;
  nvrtcProgram prog;
  nvrtcResult r = nvrtcCreateProgram(&prog, src, name ? name : "kernels.cu", 0, NULL, NULL);
  if (r != NVRTC_SUCCESS) {
    if (err && errlen) snprintf(err, errlen, "nvrtcCreateProgram: %s", nvrtcGetErrorString(r));
    return r == NVRTC_ERROR_OUT_OF_MEMORY ? TH_ERR_NOMEM : TH_ERR_COMPILE;
  }
  char archopt[64];
  snprintf(archopt, sizeof archopt, "--gpu-architecture=%s", t->arch);
  const char *opts[] = {archopt, "--std=c++17", "-default-device", "--fmad=true"};
  r = nvrtcCompileProgram(prog, (int)(sizeof opts / sizeof opts[0]), opts);
  th_status rc = TH_OK;
  if (r != NVRTC_SUCCESS) {
    size_t n = 0;
    char *log = NULL;
    if (nvrtcGetProgramLogSize(prog, &n) == NVRTC_SUCCESS && n > 0 && (log = malloc(n + 1))) {
      if (nvrtcGetProgramLog(prog, log) != NVRTC_SUCCESS) log[0] = '\0';
      log[n] = '\0';
    }
    if (err && errlen)
      snprintf(err, errlen, "NVRTC failed for %s (%s): %s", t->arch, nvrtcGetErrorString(r),
               log ? log : "(no log)");
    free(log);
    rc = TH_ERR_COMPILE;
  }
  size_t n = 0;
  if (rc == TH_OK && cubin) {
    if (nvrtcGetCUBINSize(prog, &n) != NVRTC_SUCCESS || n == 0 || !(*cubin = malloc(n)) ||
        nvrtcGetCUBIN(prog, *cubin) != NVRTC_SUCCESS) {
      if (err && errlen) snprintf(err, errlen, "NVRTC produced no cubin for %s", t->arch);
      rc = TH_ERR_COMPILE;
    } else if (cubin_len) {
      *cubin_len = n;
    }
  }
  if (rc == TH_OK && ptx) {
    if (nvrtcGetPTXSize(prog, &n) != NVRTC_SUCCESS || n == 0 || !(*ptx = malloc(n)) ||
        nvrtcGetPTX(prog, *ptx) != NVRTC_SUCCESS) {
      if (err && errlen) snprintf(err, errlen, "NVRTC produced no PTX for %s", t->arch);
      rc = TH_ERR_COMPILE;
    } else if (ptx_len) {
      *ptx_len = n; /* includes the terminating NUL */
    }
  }
  nvrtcDestroyProgram(&prog);
  if (rc != TH_OK) {
    if (cubin) {
      free(*cubin);
      *cubin = NULL;
    }
    if (ptx) {
      free(*ptx);
      *ptx = NULL;
    }
  }
  return rc;
}

#else

const char *tc_nvrtc_version(void) {
  return "none";
}

th_status tc_nvrtc_compile(const char *src, const char *name, const tc_cuda_target *t, char **cubin,
                           size_t *cubin_len, char **ptx, size_t *ptx_len, char *err, size_t errlen) {
  (void)src, (void)name, (void)t, (void)cubin_len, (void)ptx_len;
  if (cubin) *cubin = NULL;
  if (ptx) *ptx = NULL;
  if (err && errlen) snprintf(err, errlen, "tunehub was built without CUDA (NVRTC not found at build time)");
  return TH_ERR_UNSUPPORTED;
}

#endif
