/* Host target detection through LLVM: the triple, the CPU name and feature string that the backend
 * passes to its TargetMachine, and the vector width / register count that templates size tiles by. */
#include "target.h"

#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <stdio.h>
#include <string.h>

static int has_feature(const char *features, const char *name) {
  size_t n = strlen(name);
  const char *p = features;
  while (p && *p) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == n + 1 && p[0] == '+' && strncmp(p + 1, name, n) == 0) return 1;
    p = end ? end + 1 : NULL;
  }
  return 0;
}

static void derive(tc_target *t) {
  if (has_feature(t->features, "avx512f")) {
    t->simd_lanes = 16;
    t->nregs = 32;
  } else if (has_feature(t->features, "avx2") || has_feature(t->features, "avx")) {
    t->simd_lanes = 8;
    t->nregs = 16;
  } else {
    t->simd_lanes = 4;
    t->nregs = 16;
  }
}

th_status tc_target_init(tc_target *t, const char *cpu, const char *features) {
  if (!t || !cpu || !features) return TH_ERR_INVALID;
  if (strlen(cpu) >= sizeof t->cpu || strlen(features) >= sizeof t->features) return TH_ERR_TOO_LARGE;
  char *triple = LLVMGetDefaultTargetTriple();
  if (!triple) return TH_ERR_COMPILE;
  int w = snprintf(t->triple, sizeof t->triple, "%s", triple);
  LLVMDisposeMessage(triple);
  if (w < 0 || (size_t)w >= sizeof t->triple) return TH_ERR_TOO_LARGE;
  snprintf(t->cpu, sizeof t->cpu, "%s", cpu);
  snprintf(t->features, sizeof t->features, "%s", features);
  derive(t);
  return TH_OK;
}

th_status tc_target_host(tc_target *t) {
  if (!t) return TH_ERR_INVALID;
  char *cpu = LLVMGetHostCPUName();
  char *features = LLVMGetHostCPUFeatures();
  th_status rc = (cpu && features) ? tc_target_init(t, cpu, features) : TH_ERR_COMPILE;
  if (cpu) LLVMDisposeMessage(cpu);
  if (features) LLVMDisposeMessage(features);
  return rc;
}
