/* The tf32 GEMM check on a device (test_compiler_cuda_gpu.c's tf32_gemm_vs_reference) as a function that
 * a test of the fake driver runs too (test_compiler_cuda_emu.c's tf32_gemm_device_path): the kernel
 * compiled by NVRTC, launched through the driver table on seeded inputs, and compared with the fp32
 * reference within the tf32 tolerance. */
#ifndef TEST_CUDA_TF32_CHECK_H
#define TEST_CUDA_TF32_CHECK_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cu_driver.h"
#include "tc_cuda.h"
#include "test_cuda_tensor_wl.h"
#include "th_test.h"
#include "th_buf.h"
#include "th_util.h"

/* Seeded floats in [-4, 4) for argument slot i (int64 slots: tc_cuda_fill_i64), as the emulator's
 * check fills them. */
static void tf32_fill(const tc_workload *wl, int slot, void *buf, int64_t n, uint64_t *s) {
  if (tc_cuda_arg_elem_bytes(wl, slot) == 8) {
    tc_cuda_fill_i64(wl, buf, n, s);
    return;
  }
  tw_fill_floats(buf, n, s);
}

/* Config c of wl compiled by NVRTC for the device, run once on seeded inputs and compared with
 * tc_cuda_ref_kernel by compiler_cuda.emulated_tf32_gemm's rule: within 1e-3 of the largest output
 * or pre-activation output (an activation scales the error, a clip bounds the output, not it) plus
 * 1e-3 relative. tc_cuda_measure's check cannot say this: it scales by the output alone. prepare
 * (NULL: none) gets the kernel's CUDA C before NVRTC compiles it: the fake driver's twin of this check
 * builds its emulation there. The launch is the one a model makes: with the config's dynamic shared
 * memory (opted in above 48 KiB) and, for a split-k config, the partial sums' scratch after the
 * arguments and the second kernel th_tf32_r (the H200 run of 2026-11-28 launched neither, and a
 * split-k fallback wrote through a null scratch: an illegal address). Returns the largest error
 * relative to that scale. */
static double tf32_on_device(const tc_workload *wl, const tc_config *c, const tc_cuda_target *t,
                             uint64_t seed, void (*prepare)(const th_buf *src, void *arg),
                             void *arg) {
  const tc_cu *cu = NULL;
  char err[4096] = "";
  CHECK(tc__cu_get(&cu, err, sizeof err) == TH_OK);
  int dev = 0;
  tc_cu_handle cuctx = NULL, mod = NULL, fn = NULL;
  CHECK(cu->DeviceGet(&dev, 0) == 0 && cu->DevicePrimaryCtxRetain(&cuctx, dev) == 0 &&
        cu->CtxSetCurrent(cuctx) == 0);
  th_buf src;
  th_buf_init(&src, (size_t)64 << 20);
  tc_cuda_launch l;
  CHECK(tc_cuda_prelude(&src) == TH_OK);
  CHECK(tc_cuda_kernel_source(wl, c, t, "th_tf32", &src, &l, err, sizeof err) == TH_OK);
  if (prepare) prepare(&src, arg);
  char *cubin = NULL;
  size_t cubin_len = 0;
  th_status rc =
      tc_nvrtc_compile(src.data, "tf32.cu", t, &cubin, &cubin_len, NULL, NULL, err, sizeof err);
  if (rc != TH_OK) fprintf(stderr, "NVRTC: %s\n", err);
  CHECK(rc == TH_OK);
  CHECK(cu->ModuleLoadData(&mod, cubin) == 0 && cu->ModuleGetFunction(&fn, mod, "th_tf32") == 0);
  tc_cu_handle post = NULL;
  if (l.scratch_floats > 0) CHECK(cu->ModuleGetFunction(&post, mod, "th_tf32_r") == 0);
  if (l.dyn_shared > 48 * 1024)
    CHECK(cu->FuncSetAttribute(fn, TC_CU_FUNC_ATTR_MAX_DYNAMIC_SHARED, l.dyn_shared) == 0);
  int64_t sizes[5];
  tc_cuda_arg_sizes(wl, sizes);
  int nargs = tc_op_nargs(wl->kernel), out = nargs - 1;
  float *host[5] = {0};
  tc_cu_ptr d[6] = {0};
  void *params[7] = {0};
  for (int i = 0; i < nargs; i++) {
    params[i] = &d[i];
    if (!sizes[i]) continue;
    size_t bytes = (size_t)sizes[i] * (size_t)tc_cuda_arg_elem_bytes(wl, i);
    host[i] = calloc(1, bytes);
    CHECK(host[i] != NULL);
    if (i == out)
      for (int64_t e = 0; e < sizes[i]; e++) host[i][e] = NAN; /* an element never written fails */
    else
      tf32_fill(wl, i, host[i], sizes[i], &seed);
    CHECK(cu->MemAlloc(&d[i], bytes) == 0 && cu->MemcpyHtoD(d[i], host[i], bytes) == 0);
  }
  if (l.scratch_floats > 0) {
    CHECK(cu->MemAlloc(&d[nargs], (size_t)l.scratch_floats * sizeof(float)) == 0);
    params[nargs] = &d[nargs];
  }
  tc_cu_result cr = cu->LaunchKernel(
      fn, (unsigned)l.grid[0], (unsigned)l.grid[1], (unsigned)l.grid[2], (unsigned)l.block[0],
      (unsigned)l.block[1], (unsigned)l.block[2], (unsigned)l.dyn_shared, NULL, params, NULL);
  if (cr == 0 && post)
    cr = cu->LaunchKernel(post, (unsigned)l.post_grid[0], (unsigned)l.post_grid[1],
                          (unsigned)l.post_grid[2], (unsigned)l.post_block[0],
                          (unsigned)l.post_block[1], (unsigned)l.post_block[2], 0, NULL, params,
                          NULL);
  if (cr != 0) fprintf(stderr, "cuLaunchKernel: %s\n", tc__cu_errstr(cu, cr));
  CHECK(cr == 0);
  float *got = malloc((size_t)sizes[out] * 4), *lin = calloc((size_t)sizes[out], 4);
  CHECK(got && lin);
  cr = cu->MemcpyDtoH(got, d[out], (size_t)sizes[out] * 4); /* waits for the kernel */
  if (cr != 0) fprintf(stderr, "the kernel or its copy failed: %s\n", tc__cu_errstr(cu, cr));
  CHECK(cr == 0);
  CHECK(tc_cuda_ref_kernel(wl, host) == TH_OK);
  tc_workload lw = *wl; /* the scale is the product's before the activation */
  lw.epilogue &= TC_EPI_BIAS | TC_EPI_RESIDUAL;
  float *la[5];
  memcpy(la, host, sizeof la);
  la[out] = lin;
  CHECK(tc_cuda_ref_kernel(&lw, la) == TH_OK);
  double scale = 0, maxerr = 0;
  for (int64_t e = 0; e < sizes[out]; e++)
    scale = fmax(scale, fmax(fabs(host[out][e]), fabs(lin[e])));
  for (int64_t e = 0; e < sizes[out]; e++) {
    double diff = fabs((double)got[e] - host[out][e]);
    maxerr = fmax(maxerr, diff);
    if (!(diff <= 1e-3 * scale + 1e-3 * fabs(host[out][e]))) {
      char key[256];
      tc_workload_key(wl, key, sizeof key);
      fprintf(stderr, "%s: element %lld: %.8g vs reference %.8g (scale %.3g)\n", key, (long long)e,
              got[e], host[out][e], scale);
      CHECK(0);
    }
  }
  for (int i = 0; i <= nargs; i++) {
    if (d[i]) cu->MemFree(d[i]);
    if (i < nargs) free(host[i]);
  }
  free(got);
  free(lin);
  free(cubin);
  cu->ModuleUnload(mod);
  th_buf_free(&src);
  return scale > 0 ? maxerr / scale : 0;
}

#endif
