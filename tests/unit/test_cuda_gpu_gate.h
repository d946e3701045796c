/* Whether a GPU test runs, skips or fails (test_compiler_cuda_gpu.c; its logic is checked against
 * the fake driver by compiler_cuda_emu.gpu_gate_verdicts and gpu_gate_no_driver). A test may skip
 * (77) only where there is no device: no libcuda.so.1 to load, a cuInit that answers
 * CUDA_ERROR_NO_DEVICE (or the toolkit's stub library's CUDA_ERROR_STUB_LIBRARY), or a driver that
 * counts no device. Any other failure is a device that errors, and that must fail the test rather
 * than hide behind a skip. With TH_TEST_GPU_REQUIRED=1 in the environment (scripts/bench/gpu.sh
 * sets it where nvidia-smi saw a GPU) no device is a failure too. */
#ifndef TEST_CUDA_GPU_GATE_H
#define TEST_CUDA_GPU_GATE_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { GPU_GATE_RUN = 0, GPU_GATE_FAIL = 1, GPU_GATE_SKIP = 77 };

#define GPU_GATE_CUDA_ERROR_STUB_LIBRARY 34
#define GPU_GATE_CUDA_ERROR_NO_DEVICE 100

/* GPU_GATE_RUN, GPU_GATE_SKIP or GPU_GATE_FAIL, with the reason in why. Loads libcuda.so.1 (the
 * handle stays open: the compiler's own driver table shares it) and asks cuInit and
 * cuDeviceGetCount. */
static int gpu_gate(char *why, size_t whylen) {
  const char *req = getenv("TH_TEST_GPU_REQUIRED");
  int required = req && strcmp(req, "1") == 0, verdict = GPU_GATE_RUN;
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  int (*init)(unsigned) = NULL, (*count)(int *) = NULL;
  if (!h) {
    snprintf(why, whylen, "no CUDA device: libcuda.so.1 does not load (%s)", dlerror());
    verdict = GPU_GATE_SKIP;
  } else {
    *(void **)&init = dlsym(h, "cuInit");
    *(void **)&count = dlsym(h, "cuDeviceGetCount");
  }
  if (verdict == GPU_GATE_RUN && (!init || !count)) {
    snprintf(why, whylen, "libcuda.so.1 lacks cuInit or cuDeviceGetCount: a broken driver");
    verdict = GPU_GATE_FAIL;
  }
  int r = verdict == GPU_GATE_RUN ? init(0) : 0, n = 0;
  if (verdict == GPU_GATE_RUN &&
      (r == GPU_GATE_CUDA_ERROR_NO_DEVICE || r == GPU_GATE_CUDA_ERROR_STUB_LIBRARY)) {
    snprintf(
        why, whylen, "no CUDA device: cuInit answered %d (%s)", r,
        r == GPU_GATE_CUDA_ERROR_NO_DEVICE ? "CUDA_ERROR_NO_DEVICE" : "CUDA_ERROR_STUB_LIBRARY");
    verdict = GPU_GATE_SKIP;
  } else if (verdict == GPU_GATE_RUN && r != 0) {
    snprintf(why, whylen, "cuInit failed with CUresult %d: a device that errors fails the test", r);
    verdict = GPU_GATE_FAIL;
  }
  if (verdict == GPU_GATE_RUN && (r = count(&n)) != 0) {
    snprintf(why, whylen, "cuDeviceGetCount failed with CUresult %d", r);
    verdict = GPU_GATE_FAIL;
  } else if (verdict == GPU_GATE_RUN && n < 1) {
    snprintf(why, whylen, "no CUDA device: the driver counts none");
    verdict = GPU_GATE_SKIP;
  }
  if (verdict == GPU_GATE_SKIP && required) {
    size_t len = strlen(why);
    snprintf(why + len, whylen - len, ", and TH_TEST_GPU_REQUIRED=1 says there is one");
    verdict = GPU_GATE_FAIL;
  }
  if (verdict == GPU_GATE_RUN) snprintf(why, whylen, "%d CUDA device(s)", n);
  return verdict;
}

#endif
