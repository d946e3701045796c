/* tc_target: the CPU a kernel is compiled for. The operator templates read simd_lanes and nregs to size
 * their register tiles; the LLVM backend reads the triple, CPU name and feature string. tc_target_host()
 * asks LLVM about the machine it runs on, so kernels built during tuning match the deployed ones. */
#ifndef TC_TARGET_H
#define TC_TARGET_H

#include <stddef.h>

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

/* The target a client names (cross-compilation): "native" (or NULL, "", or the host's own CPU name, so that
 * one machine asked two ways is one target) is tc_target_host (or, for a host CPU LLVM does not know by
 * name, the CPU of tc_target_known_cpu); an x86-64 CPU name LLVM 16 knows
 * ("skylake-avx512", "znver3", ...) or a micro-architecture level ("x86-64-v2", "x86-64-v3", "x86-64-v4")
 * gets the features that CPU implies. TH_ERR_NOT_FOUND with the valid names in err for another name. */
th_status tc_target_named(tc_target *t, const char *name, char *err, size_t errlen);
/* ?target=auto for a CPU client: the best target name (for tc_target_named) whose code the client
 * can run, into name: "native" when the client has every feature the host's native target is built
 * with, else the most capable of x86-64-v4, -v3, -v2 whose features it has (the baseline "x86-64"
 * last). The client is described by features (comma- or space-separated, any case: /proc/cpuinfo
 * flag names such as sse4_2, pni, lahf_lm, avx512_vnni, or LLVM's sse4.2, sse3, sahf, avx512vnni;
 * the x86-64 baseline is assumed) or by cpu (an LLVM CPU name: its features), or both (the union).
 * reason gets one line saying why ("client lacks avx512f, ... (needed by native cascadelake);
 * x86-64-v4 needs ...; x86-64-v3 covered"), with the feature names neither spelling knows ("ignored
 * unknown features: ..."). TH_ERR_INVALID for a CPU name LLVM does not know (err lists the valid
 * ones). */
th_status tc_target_auto(const char *features, const char *cpu, char *name, size_t n, char *reason,
                         size_t rn, char *err, size_t errlen);
/* The index (tc_target_cpu_at) of the most capable CPU tc_target_named knows whose checked features host has
 * every one of (ties go to the host's vendor: AMD when host has sse4a); -1 when none fits. "native" resolves
 * to it when LLVM does not know the host's CPU by name (it says "generic" for a CPU newer than itself). */
int tc_target_known_cpu(const tc_target *host);
/* The CPU names tc_target_named knows besides "native", in LLVM's order: count, and the i-th (NULL past the
 * end). */
size_t tc_target_cpu_count(void);
const char *tc_target_cpu_at(size_t i);
/* The features of t that a model .so checks on the CPU it is loaded on (CPUID): every feature LLVM
 * compiles its code with, comma-separated in a fixed order ("cx16,sahf,sse3,...,avx2,..."; "" for a
 * baseline x86-64 target), into out. */
void tc_target_required(const tc_target *t, char *out, size_t n);
/* The features of t that the CPU `have` lacks, ", "-separated in the same order, into out ("" when have runs
 * everything t's kernels use). */
void tc_target_missing(const tc_target *t, const tc_target *have, char *out, size_t n);
/* Appends to b the model.c tables of the .so's CPUID guard (model/model_rt.c): th__cpu_target, and
 * th__cpu_needs, each feature of t with the CPUID leaf, subleaf, register and bit that say a CPU
 * has it and the register state the OS must save for it. TH_ERR_UNSUPPORTED (err names them) when t
 * enables a feature the guard does not know how to test: such code is never built. th_buf's errors
 * otherwise. */
struct th_buf;
th_status tc_target_guard(const tc_target *t, struct th_buf *b, char *err, size_t errlen);

#endif
