/* Unit tests of ?target=auto's choice, made by the backends (tc_backend_target_auto; llvm's is
 * tc_target_auto in compiler/target.c): a client's /proc/cpuinfo flags and LLVM's spellings of
 * them, a CPU name, the x86-64 levels from v4 down to the baseline, native for a client with every
 * feature of the host's target, unknown names listed (cpuinfo's system flags not), and cuda's
 * archs. */
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "target.h"
#include "th_test.h"

/* llvm's choice for a client with these features (and CPU name); TH_OK expected. */
static const char *choose(const char *features, const char *cpu, char *reason, size_t rn) {
  static char name[32];
  tc_client_machine m = {features, cpu, NULL};
  char err[512] = "";
  th_status rc = tc_backend_target_auto(tc_backend_find("llvm", NULL, 0), &m, name, sizeof name,
                                        reason, rn, err, sizeof err);
  if (rc != TH_OK) fprintf(stderr, "tc_backend_target_auto: %s\n", err);
  CHECK_EQ_INT(rc, TH_OK);
  return name;
  return 0;
}

TH_TEST(cpuinfo_and_llvm_spellings) {
  char reason[1024];
  /* pni, sse4_1, sse4_2 (which also gives LLVM's crc32), lahf_lm: cpuinfo's names of the v2
   * features */
  CHECK(!strcmp(
      choose("fpu cx8 cmov mmx fxsr sse sse2 lm pni ssse3 cx16 sse4_1 sse4_2 popcnt lahf_lm", NULL,
             reason, sizeof reason),
      "x86-64-v2"));
  CHECK(strstr(reason, "x86-64-v2 covered") != NULL);
  /* the same machine in LLVM's names, any case, with stray separators */
  CHECK(!strcmp(
      choose(", SSE3,ssse3,,cx16, sse4.1,Sse4.2,popcnt,sahf ,", NULL, reason, sizeof reason),
      "x86-64-v2"));
  /* one v2 feature short: the baseline */
  CHECK(!strcmp(choose("pni,ssse3,cx16,sse4_1,sse4_2,popcnt", NULL, reason, sizeof reason),
                "x86-64"));
  CHECK(strstr(reason, "x86-64 covered") != NULL);
  return 0;
}

TH_TEST(levels_and_cpu_names) {
  char reason[1024];
  /* a Haswell: AVX2, FMA, BMI2, abm (lzcnt), no AVX-512 */
  const char *haswell =
      "lm pni pclmulqdq ssse3 fma cx16 sse4_1 sse4_2 movbe popcnt aes xsave avx f16c rdrand "
      "lahf_lm abm fsgsbase bmi1 avx2 bmi2 invpcid xsaveopt";
  CHECK(!strcmp(choose(haswell, NULL, reason, sizeof reason), "x86-64-v3"));
  CHECK(strstr(reason, "x86-64-v3 covered") != NULL);
  CHECK(!strcmp(choose(NULL, "haswell", reason, sizeof reason), "x86-64-v3"));
  /* a named AVX-512 CPU: v4, or native on a host that has no more than it */
  const char *c = choose(NULL, "skylake-avx512", reason, sizeof reason);
  CHECK(!strcmp(c, "x86-64-v4") || !strcmp(c, "native"));
  /* the CPU name and the features add up: haswell's and AVX-512's */
  c = choose("avx512f,avx512dq,avx512cd,avx512bw,avx512vl", "haswell", reason, sizeof reason);
  CHECK(!strcmp(c, "x86-64-v4") || !strcmp(c, "native"));
  return 0;
}

TH_TEST(native_for_the_host_features) {
  /* a client with every feature the host's native target is compiled with, in LLVM's names */
  tc_target host;
  CHECK_EQ_INT(tc_target_named(&host, NULL, NULL, 0), TH_OK);
  char need[2048], reason[1024];
  tc_target_required(&host, need, sizeof need);
  CHECK(!strcmp(choose(need, NULL, reason, sizeof reason), "native"));
  CHECK(strstr(reason, host.cpu) != NULL);
  /* without the last of them it is not native (when the host needs more than the baseline) */
  char *last = strrchr(need, ',');
  if (last) {
    *last = '\0';
    CHECK(strcmp(choose(need, NULL, reason, sizeof reason), "native") != 0);
    CHECK(strstr(reason, "client lacks ") != NULL);
  }
  return 0;
}

TH_TEST(unknown_names_listed_system_flags_not) {
  char reason[1024];
  choose("vme de pse tsc msr pae frobnicate hypervisor md_clear avx2 x9000", NULL, reason,
         sizeof reason);
  CHECK(strstr(reason, "ignored unknown features: frobnicate, x9000") != NULL);
  CHECK(strstr(reason, "vme") == NULL && strstr(reason, "hypervisor") == NULL);
  /* a client's bytes become a header line: control and non-ASCII bytes are shown as '?' */
  choose("avx2,bad\x01name,caf\xc3\xa9", NULL, reason, sizeof reason);
  CHECK(strstr(reason, "ignored unknown features: bad?name, caf??") != NULL);
  return 0;
}

TH_TEST(refusals) {
  char name[32], reason[256], err[4096];
  tc_client_machine none = {NULL, NULL, NULL}, bad_cpu = {NULL, "pentium-9000", NULL};
  const tc_backend *llvm = tc_backend_find("llvm", NULL, 0),
                   *cuda = tc_backend_find("cuda", NULL, 0);
  CHECK_EQ_INT(tc_backend_target_auto(llvm, &none, name, sizeof name, reason, sizeof reason, err,
                                      sizeof err),
               TH_ERR_NOT_FOUND);
  CHECK(strstr(err, "X-Tunehub-CPU-Features") && strstr(err, "X-Tunehub-CPU"));
  CHECK_EQ_INT(tc_backend_target_auto(llvm, &bad_cpu, name, sizeof name, reason, sizeof reason, err,
                                      sizeof err),
               TH_ERR_INVALID);
  CHECK(strstr(err, "'pentium-9000'") && strstr(err, "haswell") && strstr(err, "x86-64-v3"));
  /* cuda reads the arch only */
  tc_client_machine feats = {"avx2", NULL, NULL}, sm86 = {NULL, NULL, "sm_86"},
                    sm50 = {NULL, NULL, "sm_50"};
  CHECK_EQ_INT(tc_backend_target_auto(cuda, &feats, name, sizeof name, reason, sizeof reason, err,
                                      sizeof err),
               TH_ERR_NOT_FOUND);
  CHECK(strstr(err, "X-Tunehub-CUDA-Arch") != NULL);
  CHECK_EQ_INT(tc_backend_target_auto(cuda, &sm86, name, sizeof name, reason, sizeof reason, err,
                                      sizeof err),
               TH_OK);
  CHECK(!strcmp(name, "sm_86"));
  CHECK_EQ_INT(tc_backend_target_auto(cuda, &sm50, name, sizeof name, reason, sizeof reason, err,
                                      sizeof err),
               TH_ERR_INVALID);
  CHECK(strstr(err, "sm_50") && strstr(err, "sm_70"));
  return 0;
}
