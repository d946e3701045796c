/* tc_target: the CPU a kernel is compiled for. The operator templates read simd_lanes and nregs to size
 * their register tiles; the LLVM backend reads the triple, CPU name and feature string. tc_target_host()
 * asks LLVM about the machine it runs on, so kernels built during tuning match the deployed ones. */
#ifndef TC_TARGET_H
#define TC_TARGET_H

#include "th_status.h"

typedef struct tc_target {
  char triple[128];   /* e.g. "x86_64-pc-linux-gnu" */
  char cpu[64];       /* LLVM CPU name, e.g. "znver3", "skylake-avx512" */
  char features[4096]; /* LLVM feature string "+avx2,+fma,..." */
  int simd_lanes;     /* float lanes of one vector register: 16 (AVX-512), 8 (AVX/AVX2), 4 (SSE) */
  int nregs;          /* vector registers: 32 with AVX-512, else 16 */
} tc_target;

/* Fills *t with the host CPU (triple, name, features, lanes, registers). TH_ERR_COMPILE if LLVM has no
 * native target. Thread-safe. */
th_status tc_target_host(tc_target *t);
/* A target with the host's triple but the given CPU name and features; simd_lanes/nregs are derived from
 * the features. Used by tests to force AVX2 code on an AVX-512 machine. */
th_status tc_target_init(tc_target *t, const char *cpu, const char *features);

#endif
