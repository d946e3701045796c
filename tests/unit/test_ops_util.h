/* Helpers shared by the operator template tests (test_compiler_ops.c, test_compiler_ops_tensor.c): a seeded
 * random source, the 1e-4 relative comparison every template is held to, the target (TC_TEST_LANES=8 forces
 * AVX2-width kernels), config sampling, and building workloads into a shared library to dlopen. Inline, so
 * that a test file need not use them all. */
#ifndef TEST_OPS_UTIL_H
#define TEST_OPS_UTIL_H

#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "llvm/tc_llvm.h"
#include "ops.h"
#include "th_test.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static inline float frand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (float)((rng >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}
static inline int irand(int n) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (int)((rng >> 11) % (uint64_t)n);
}

static inline float *rand_buf(size_t n) {
  float *p = malloc(n * sizeof *p + 64);
  CHECK(p);
  for (size_t i = 0; i < n; i++) p[i] = frand();
  return p;
}

static inline int compare(const char *what, const float *got, const float *ref, size_t n) {
  double rms = 0;
  for (size_t i = 0; i < n; i++) rms += (double)ref[i] * ref[i];
  rms = sqrt(rms / (double)(n ? n : 1));
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)got[i] - ref[i]);
    if (!(d <= 1e-4 * (fabs(ref[i]) + rms) + 1e-7)) {
      fprintf(stderr, "%s: mismatch at %zu: got %.7g want %.7g\n", what, i, got[i], ref[i]);
      return 0;
    }
  }
  return 1;
}

static tc_target target;
static inline void init_target(void) {
  CHECK_EQ_INT(tc_target_host(&target), TH_OK);
  /* TC_TEST_LANES=8 forces AVX2-width kernels, to test both paths on an AVX-512 machine. */
  const char *l = getenv("TC_TEST_LANES");
  if (l && strcmp(l, "8") == 0 && target.simd_lanes == 16) {
    target.simd_lanes = 8;
    target.nregs = 16;
  }
}

/* Up to max configs: the fallback first, then random valid ones. */
static inline int sample_configs(const tc_workload *wl, tc_config *cfgs, int max) {
  tc_space s;
  CHECK_EQ_INT(tc_op_space(wl, &target, &s), TH_OK);
  CHECK_EQ_INT(tc_op_fallback(wl, &target, &s, &cfgs[0]), TH_OK);
  int n = 1;
  int64_t size = tc_space_size(&s);
  for (int tries = 0; tries < 200 && n < max && n < size; tries++) {
    tc_config c;
    tc_space_get(&s, (int64_t)irand((int)(size < 1000000 ? size : 1000000)), &c);
    if (tc_op_valid(wl, &target, &s, &c) != TH_OK) continue;
    int dup = 0;
    for (int i = 0; i < n; i++) dup |= tc_space_index(&s, &c) == tc_space_index(&s, &cfgs[i]);
    if (!dup) cfgs[n++] = c;
  }
  return n;
}

typedef void (*kfn)(void *const *);

typedef struct lib {
  void *h;
  char path[256];
} lib;

static inline void build(lib *L, int n, const tc_workload *wls, const tc_config *cfgs) {
  char **names = calloc((size_t)n, sizeof *names);
  CHECK(names);
  for (int i = 0; i < n; i++) {
    names[i] = malloc(32);
    snprintf(names[i], 32, "k%d", i);
  }
  snprintf(L->path, sizeof L->path, "/tmp/tc_ops_test_%ld.so", (long)getpid());
  char err[4096] = "";
  th_status rc = tc_kernels_build_so(&target, n, wls, cfgs, (const char *const *)names, L->path, err,
                                     sizeof err);
  if (rc != TH_OK) fprintf(stderr, "build: %s: %s\n", th_status_name(rc), err);
  CHECK_EQ_INT(rc, TH_OK);
  L->h = dlopen(L->path, RTLD_NOW | RTLD_LOCAL);
  if (!L->h) fprintf(stderr, "dlopen: %s\n", dlerror());
  CHECK(L->h);
  for (int i = 0; i < n; i++) free(names[i]);
  free(names);
}

static inline kfn sym(lib *L, int i) {
  char name[32];
  snprintf(name, sizeof name, "k%d", i);
  kfn f;
  *(void **)&f = dlsym(L->h, name);
  CHECK(f);
  return f;
}

static inline void unload(lib *L) {
  dlclose(L->h);
  unlink(L->path);
}

/* The fallback, then every valid config that differs from it in one knob (each knob's values in turn),
 * up to max: a deterministic sweep that reaches every code path a knob selects. */
static inline int axis_configs(const tc_workload *wl, tc_config *cfgs, int max) {
  tc_space s;
  CHECK_EQ_INT(tc_op_space(wl, &target, &s), TH_OK);
  CHECK_EQ_INT(tc_op_fallback(wl, &target, &s, &cfgs[0]), TH_OK);
  int n = 1;
  for (int k = 0; k < s.nknobs; k++)
    for (int v = 0; v < s.knobs[k].nvalues && n < max; v++) {
      tc_config c = cfgs[0];
      c.idx[k] = v;
      if (v == cfgs[0].idx[k] || tc_op_valid(wl, &target, &s, &c) != TH_OK) continue;
      cfgs[n++] = c;
    }
  return n;
}

#endif
