/* Targets: the host through LLVM, or a CPU a client names (cross-compilation): the triple, the CPU name and
 * feature string that the backend passes to its TargetMachine, and the vector width / register count that
 * templates size tiles by. */
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

/* The features a model .so checks with CPUID before it runs (model/model_rt.c knows how to test each), in
 * this order. They are the ones that change the code LLVM emits for our kernels: vector width and FMA first,
 * and the bit-manipulation and conversion extensions LLVM may use in scalar code. */
static const char *const tc__checked[] = {"sse4.2",   "popcnt",   "avx",      "avx2",     "fma",
                                          "f16c",     "bmi",      "bmi2",     "lzcnt",    "movbe",
                                          "avx512f",  "avx512bw", "avx512dq", "avx512vl", "avx512cd",
                                          "avx512vnni", "avx512bf16", "avx512fp16", "avxvnni"};

/* LLVM 16's x86-64 CPU names (llc-16 -march=x86-64 -mcpu=help) with the checked features each implies, as
 * clang-16 -march=NAME defines them; scripts/gen_cpu_table.sh regenerates the table. */
static const struct {
  const char *name, *features;
} tc__cpus[] = {
    {"alderlake", "sse4.2,popcnt,avx,avx2,fma,f16c,bmi,bmi2,lzcnt,movbe,avxvnni"},
    {"amdfam10", "popcnt,lzcnt"},
    {"athlon-fx", ""},
    {"athlon64", ""},
    {"athlon64-sse3", ""},
    {"atom", "movbe"},
    {"barcelona", "popcnt,lzcnt"},
    {"bdver1", "sse4.2,popcnt,avx,lzcnt"},
    {"bdver2", "sse4.2,popcnt,avx,fma,f16c,bmi,lzcnt"},
    {"bdver3", "sse4.2,popcnt,avx,fma,f16c,bmi,lzcnt"},
    {"bdver4", "sse4.2,popcnt,avx,avx2,fma,f16c,bmi,bmi2,lzcnt,movbe"},
    {"bonnell", "movbe"},
    {"broadwell", "sse4.2,popcnt,avx,avx2,fma,f16c,bmi,bmi2,lzcnt,movbe"},
    {"btver1", "popcnt,lzcnt"},
    {"btver2", "sse4.2,popcnt,avx,f16c,bmi,lzcnt,movbe"},
    {"cannonlake", "sse4.2,popcnt,avx,avx2,fma,f16c,bmi,bmi2,lzcnt,movbe,avx512f,avx512bw,avx512dq,avx512vl,avx512cd"},
    {"cascadelake", "sse4.2,popcnt,avx,avx2,fma,f16c,bmi,bmi2,lzcnt,movbe,avx512f,avx512bw,avx512dq,avx512vl,avx512cd,avx512vnni"},
    {"cooperlake", "sse4.2,popcnt,avx,avx2,fma,f16c,bmi,bmi2,lzcnt,movbe,avx512f,avx512bw,avx512dq,avx512vl,avx512cd,avx512vnni,avx512bf16"},
    {"core-avx-i", "sse4.2,popcnt,avx,f16c"},
    {"core-avx2", "sse4.2,popcnt,avx,avx2,fma,f16c,bmi,bmi2,lzcnt,movbe"},
    {"core2", ""},
    {"corei7", "sse4.2,popcnt"},
    {"corei7-avx", "sse4.2,popcnt,avx"},
    {"emeraldrapids", "sse4.2,popcnt,avx,avx2,fma,f16c,bmi,bmi2,lzcnt,movbe,avx512f,avx512bw,avx512dq,avx512vl,avx512cd,avx512vnni,avx512bf16,avx512fp16,avxvnni"},
    {"goldmont", "sse4.2,popcnt,movbe"},
    {"goldmont-plus", "sse4.2,popcnt,movbe"},
    {"grandridge", "sse4.2,popcnt,avx,avx2,fma,f16c,bmi,bmi2,lzcnt,movbe,avxvnni"},
    {"graniterapids", "sse4.2,popcnt,avx,avx2,fma,f16c,bmi,bmi2,lzcnt,movbe,avx512f,avx512bw,avx512dq,avx512vl,avx512cd,avx512vnni,avx512bf16,avx512fp16,avxvnni"},
    {"haswell", "sse4.2,popcnt,avx,avx2,fma,f16c,bmi,bmi2,lzcnt,movbe"},
    {"icelake-client", "sse4.2,popcnt,avx,avx2,fma,f16c,bmi,bmi2,lzcnt,movbe,avx512f,avx512bw,avx512dq,avx512vl,avx512cd,avx512vnni"},
    {"icelake-server", "sse4.2,popcnt,avx,avx2,fma,f16c,bmi,bmi2,lzcnt,movbe,avx512f,avx512bw,avx512dq,avx512vl,avx512cd,avx512vnni"},
    {"ivybridge", "sse4.2,popcnt,avx,f16c"},
    {"k8", ""},
    {"k8-sse3", ""},
    {"knl", "sse4.2,popcnt,avx,avx2,fma,f16c,bmi,bmi2,lzcnt,movbe,avx512f,avx512cd"},
    {"knm", "sse4.2,popcnt,avx,avx2,fma,f16c,bmi,bmi2,lzcnt,movbe,avx512f,avx512cd"},
    {"meteorlake", "sse4.2,popcnt,avx,avx2,fma,f16c,bmi,bmi2,lzcnt,movbe,avxvnni"},
    {"nehalem", "sse4.2,popcnt"},
    {"nocona", ""},
    {"opteron", ""},
    {"opteron-sse3", ""},
    {"penryn", ""},
    {"raptorlake", "sse4.2,popcnt,avx,avx2,fma,f16c,bmi,bmi2,lzcnt,movbe,avxvnni"},
    {"rocketlake", "sse4.2,popcnt,avx,avx2,fma,f16c,bmi,bmi2,lzcnt,movbe,avx512f,avx512bw,avx512dq,avx512vl,avx512cd,avx512vnni"},
    {"sandybridge", "sse4.2,popcnt,avx"},
    {"sapphirerapids", "sse4.2,popcnt,avx,avx2,fma,f16c,bmi,bmi2,lzcnt,movbe,avx512f,avx512bw,avx512dq,avx512vl,avx512cd,avx512vnni,avx512bf16,avx512fp16,avxvnni"},
    {"sierraforest", "sse4.2,popcnt,avx,avx2,fma,f16c,bmi,bmi2,lzcnt,movbe,avxvnni"},
    {"silvermont", "sse4.2,popcnt,movbe"},
    {"skx", "sse4.2,popcnt,avx,avx2,fma,f16c,bmi,bmi2,lzcnt,movbe,avx512f,avx512bw,avx512dq,avx512vl,avx512cd"},
    {"skylake", "sse4.2,popcnt,avx,avx2,fma,f16c,bmi,bmi2,lzcnt,movbe"},
    {"skylake-avx512", "sse4.2,popcnt,avx,avx2,fma,f16c,bmi,bmi2,lzcnt,movbe,avx512f,avx512bw,avx512dq,avx512vl,avx512cd"},
    {"slm", "sse4.2,popcnt,movbe"},
    {"tigerlake", "sse4.2,popcnt,avx,avx2,fma,f16c,bmi,bmi2,lzcnt,movbe,avx512f,avx512bw,avx512dq,avx512vl,avx512cd,avx512vnni"},
    {"tremont", "sse4.2,popcnt,movbe"},
    {"westmere", "sse4.2,popcnt"},
    {"x86-64", ""},
    {"x86-64-v2", "sse4.2,popcnt"},
    {"x86-64-v3", "sse4.2,popcnt,avx,avx2,fma,f16c,bmi,bmi2,lzcnt,movbe"},
    {"x86-64-v4", "sse4.2,popcnt,avx,avx2,fma,f16c,bmi,bmi2,lzcnt,movbe,avx512f,avx512bw,avx512dq,avx512vl,avx512cd"},
    {"znver1", "sse4.2,popcnt,avx,avx2,fma,f16c,bmi,bmi2,lzcnt,movbe"},
    {"znver2", "sse4.2,popcnt,avx,avx2,fma,f16c,bmi,bmi2,lzcnt,movbe"},
    {"znver3", "sse4.2,popcnt,avx,avx2,fma,f16c,bmi,bmi2,lzcnt,movbe"},
    {"znver4", "sse4.2,popcnt,avx,avx2,fma,f16c,bmi,bmi2,lzcnt,movbe,avx512f,avx512bw,avx512dq,avx512vl,avx512cd,avx512vnni,avx512bf16"},
};

size_t tc_target_cpu_count(void) {
  return sizeof tc__cpus / sizeof tc__cpus[0];
}

const char *tc_target_cpu_at(size_t i) {
  return i < tc_target_cpu_count() ? tc__cpus[i].name : NULL;
}

/* The checked features of t that have lacks (have NULL: all of t's), joined by sep, into out. */
static void tc__features_lacking(const tc_target *t, const tc_target *have, const char *sep, char *out, size_t n) {
  size_t used = 0;
  if (n) out[0] = '\0';
  for (size_t i = 0; i < sizeof tc__checked / sizeof tc__checked[0]; i++) {
    if (!has_feature(t->features, tc__checked[i]) || (have && has_feature(have->features, tc__checked[i])))
      continue;
    int w = snprintf(out + used, n - used, "%s%s", used ? sep : "", tc__checked[i]);
    if (w < 0 || (size_t)w >= n - used) break;
    used += (size_t)w;
  }
}

void tc_target_required(const tc_target *t, char *out, size_t n) {
  tc__features_lacking(t, NULL, ",", out, n);
}

void tc_target_missing(const tc_target *t, const tc_target *have, char *out, size_t n) {
  tc__features_lacking(t, have, ", ", out, n);
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

static int tc__cpu_index(const char *name) {
  for (size_t i = 0; i < tc_target_cpu_count(); i++)
    if (strcmp(tc__cpus[i].name, name) == 0) return (int)i;
  return -1;
}

static int tc__amd_cpu(const char *name) {
  static const char *const prefixes[] = {"znver", "bdver", "btver", "amdfam", "barcelona", "athlon", "k8",
                                         "opteron"};
  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
    if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0) return 1;
  return 0;
}

int tc_target_known_cpu(const tc_target *host) {
  int best = -1, best_n = -1;
  int amd = has_feature(host->features, "sse4a"); /* AMD's own extension: a tie goes to an AMD name */
  for (size_t i = 0; i < tc_target_cpu_count(); i++) {
    int n = 0, all = 1;
    for (const char *p = tc__cpus[i].features; *p && all;) {
      const char *end = strchr(p, ',');
      size_t len = end ? (size_t)(end - p) : strlen(p);
      char f[32];
      snprintf(f, sizeof f, "%.*s", (int)len, p);
      if (has_feature(host->features, f)) n++;
      else all = 0;
      p = end ? end + 1 : p + len;
    }
    if (!all) continue;
    int vendor = tc__amd_cpu(tc__cpus[i].name) == amd;
    if (n > best_n || (n == best_n && vendor && tc__amd_cpu(tc__cpus[best].name) != amd)) best = (int)i, best_n = n;
  }
  return best;
}

th_status tc_target_named(tc_target *t, const char *name, char *err, size_t errlen) {
  if (!t) return TH_ERR_INVALID;
  if (err && errlen) err[0] = '\0';
  tc_target host;
  th_status rc = tc_target_host(&host);
  if (rc != TH_OK) {
    if (err && errlen) snprintf(err, errlen, "LLVM has no target for this machine");
    return rc;
  }
  if (!name || !*name || !strcmp(name, "native") || !strcmp(name, host.cpu)) {
    if (tc__cpu_index(host.cpu) >= 0) {
      *t = host;
      return TH_OK;
    }
    /* A CPU newer than LLVM 16 (a Zen 5) is "generic" to it, a name that keys AVX-512 and SSE2 machines
     * alike: native is then the most capable CPU LLVM knows whose checked features this one has, built
     * with exactly that CPU's features, so that the key names what the bundle needs. */
    int k = tc_target_known_cpu(&host);
    if (k < 0) {
      *t = host;
      return TH_OK;
    }
    name = tc__cpus[k].name;
  }
  for (size_t i = 0; i < tc_target_cpu_count(); i++) {
    if (strcmp(tc__cpus[i].name, name) != 0) continue;
    char features[512] = "";
    size_t used = 0;
    for (const char *p = tc__cpus[i].features; *p;) {
      const char *end = strchr(p, ',');
      size_t len = end ? (size_t)(end - p) : strlen(p);
      int w = snprintf(features + used, sizeof features - used, "%s+%.*s", used ? "," : "", (int)len, p);
      if (w > 0 && (size_t)w < sizeof features - used) used += (size_t)w;
      p = end ? end + 1 : p + len;
    }
    rc = tc_target_init(t, name, features);
    if (rc == TH_OK) snprintf(t->triple, sizeof t->triple, "%s", host.triple);
    return rc;
  }
  if (err && errlen) {
    size_t used = (size_t)snprintf(err, errlen, "unknown CPU target '%s'; valid: native", name);
    for (size_t i = 0; i < tc_target_cpu_count() && used < errlen; i++) {
      int w = snprintf(err + used, errlen - used, ", %s", tc__cpus[i].name);
      if (w < 0) break;
      used += (size_t)w;
    }
  }
  return TH_ERR_NOT_FOUND;
}
