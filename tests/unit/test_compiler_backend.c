/* Unit tests of the backend hooks that answer for the backends, so that the tuner, the server and the web page
 * name no framework, arch or CPU flag themselves (issue 37): the registry's count and order, the target names
 * each backend lists (every one parses, and its canonical string parses back to the same arch), which backend
 * a client's target name belongs to, the precision rule per target with the error texts the API and the CLI
 * print, and the tuner's target resolution built on them (tune_target_measurable). */
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "builder.h"
#include "tc.h"
#include "th_test.h"

/* The backend named fw (the registry has it). */
static const tc_backend *backend(const char *fw) {
  const tc_backend *b = tc_backend_find(fw, NULL, 0);
  CHECK(b != NULL);
  return b;
}

TH_TEST(registry_count_and_index) {
  for (int i = 0; i < TC_BACKEND_COUNT; i++) {
    CHECK(tc_backend_at(i) != NULL);
    CHECK_EQ_INT(tc_backend_index(tc_backend_at(i)), i);
  }
  CHECK(tc_backend_at(TC_BACKEND_COUNT) == NULL);
  CHECK_EQ_INT(tc_backend_index(NULL), -1);
  /* the message list names every backend, in registry order */
  char names[128] = "";
  for (int i = 0; i < TC_BACKEND_COUNT; i++)
    snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
             tc_backend_name(tc_backend_at(i)));
  CHECK_STR(tc_backend_names(), names);
  return 0;
}

/* Every listed name of every backend is a valid target whose canonical string names the same arch,
 * parses back to the same target and belongs to the same backend. */
TH_TEST(target_names_round_trip) {
  for (int i = 0; i < TC_BACKEND_COUNT; i++) {
    const tc_backend *b = tc_backend_at(i);
    CHECK(tc_backend_target_hint(b)[0] != '\0');
    int k = 0;
    for (; tc_backend_target_name_at(b, k); k++) {
      const char *name = tc_backend_target_name_at(b, k);
      tc_backend_target t, back;
      char err[2048] = "", arch[64], arch2[64];
      if (tc_backend_target_init(b, name, &t, err, sizeof err) != TH_OK) {
        fprintf(stderr, "%s lists %s, which it refuses: %s\n", tc_backend_name(b), name, err);
        CHECK(0);
      }
      CHECK(t.backend == b);
      CHECK_STR(tc_backend_target_arch(t.str, arch, sizeof arch), name);
      CHECK(tc_backend_target_parse(t.str, &back) == TH_OK);
      CHECK_STR(back.str, t.str);
      CHECK(tc_backend_of_target_name(t.str, arch2, sizeof arch2) == b);
      CHECK_STR(arch2, name);
      CHECK(tc_backend_of_target_name(name, arch2, sizeof arch2) == b); /* the bare name too */
      CHECK_STR(arch2, name);
    }
    fprintf(stderr, "%s: %d target names\n", tc_backend_name(b), k);
    CHECK(k > 0);
  }
  CHECK(tc_backend_target_name_at(tc_backend_at(0), -1) == NULL);
  return 0;
}

TH_TEST(target_names_listed) {
  /* what GET /targets lists as valid_targets (the API and the web page rely on these) */
  const char *want[][2] = {{"llvm", "x86-64-v2"}, {"llvm", "x86-64-v3"}, {"llvm", "x86-64-v4"},
                           {"llvm", "znver4"},    {"cuda", "sm_70"},     {"cuda", "sm_80"},
                           {"cuda", "sm_90"}};
  for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
    const tc_backend *b = backend(want[w][0]);
    int found = 0;
    for (int k = 0; tc_backend_target_name_at(b, k); k++)
      found |= !strcmp(tc_backend_target_name_at(b, k), want[w][1]);
    if (!found) fprintf(stderr, "%s does not list %s\n", want[w][0], want[w][1]);
    CHECK(found);
  }
  CHECK_STR(tc_backend_target_hint(backend("llvm")), "an x86-64 CPU or level");
  CHECK_STR(tc_backend_target_hint(backend("cuda")), "sm_XX");
  return 0;
}

TH_TEST(target_arch_parse) {
  char a[64];
  CHECK_STR(tc_backend_target_arch("llvm -mcpu=znver4", a, sizeof a), "znver4");
  CHECK_STR(tc_backend_target_arch("cuda -arch=sm_90", a, sizeof a), "sm_90");
  CHECK_STR(tc_backend_target_arch("cuda -arch=sm_86 -extra", a, sizeof a), "sm_86");
  /* the flag is the backend's own: another backend's flag, another framework, no arch: none */
  CHECK(tc_backend_target_arch("llvm -arch=sm_90", a, sizeof a) == NULL && a[0] == '\0');
  CHECK(tc_backend_target_arch("tpu -mcpu=v4", a, sizeof a) == NULL);
  CHECK(tc_backend_target_arch("llvmx -mcpu=znver4", a, sizeof a) == NULL);
  CHECK(tc_backend_target_arch("cuda", a, sizeof a) == NULL);
  CHECK(tc_backend_target_arch("", a, sizeof a) == NULL);
  CHECK(tc_backend_target_arch(NULL, a, sizeof a) == NULL);
  return 0;
}

TH_TEST(target_name_owner) {
  char a[64];
  CHECK(tc_backend_of_target_name("sm_75", a, sizeof a) == backend("cuda"));
  CHECK_STR(a, "sm_75");
  CHECK(tc_backend_of_target_name("cuda", a, sizeof a) == backend("cuda"));
  CHECK_STR(a, ""); /* the backend's default: the device's arch */
  CHECK(tc_backend_of_target_name("cuda -arch=sm_86", a, sizeof a) == backend("cuda"));
  CHECK_STR(a, "sm_86");
  CHECK(tc_backend_of_target_name("haswell", a, sizeof a) == backend("llvm"));
  CHECK_STR(a, "haswell");
  CHECK(tc_backend_of_target_name("llvm -mcpu=x86-64-v3", a, sizeof a) == backend("llvm"));
  CHECK_STR(a, "x86-64-v3");
  /* a name no backend claims is the default backend's, to be refused by its target_init with the
   * valid names */
  CHECK(tc_backend_of_target_name("pentium9", a, sizeof a) == tc_backend_default());
  CHECK_STR(a, "pentium9");
  CHECK(tc_backend_of_target_name(NULL, a, sizeof a) == NULL);
  return 0;
}

TH_TEST(precisions) {
  const tc_backend *cpu = backend("llvm"), *gpu = backend("cuda");
  CHECK(tc_backend_has_precision(cpu, TC_PRECISION_FP32));
  CHECK(!tc_backend_has_precision(cpu, TC_PRECISION_TF32));
  CHECK(tc_backend_has_precision(gpu, TC_PRECISION_FP32));
  CHECK(tc_backend_has_precision(gpu, TC_PRECISION_TF32));
  CHECK(!tc_backend_has_precision(gpu, TC_PRECISION_COUNT));
  char err[256] = "";
  CHECK(tc_backend_precision_check(cpu, "llvm -mcpu=znver4", TC_PRECISION_FP32, err, sizeof err) ==
        TH_OK);
  CHECK(tc_backend_precision_check(cpu, NULL, TC_PRECISION_TF32, err, sizeof err) ==
        TH_ERR_INVALID);
  CHECK_STR(err, "precision tf32 needs the cuda framework; llvm takes fp32");
  CHECK(tc_backend_precision_check(gpu, NULL, TC_PRECISION_TF32, err, sizeof err) == TH_OK);
  CHECK(tc_backend_precision_check(gpu, "cuda -arch=sm_80", TC_PRECISION_TF32, err, sizeof err) ==
        TH_OK);
  CHECK(tc_backend_precision_check(gpu, "cuda -arch=sm_90", TC_PRECISION_TF32, err, sizeof err) ==
        TH_OK);
  CHECK(tc_backend_precision_check(gpu, "cuda -arch=sm_75", TC_PRECISION_TF32, err, sizeof err) ==
        TH_ERR_INVALID);
  CHECK_STR(err,
            "precision tf32 needs tensor cores of sm_80 or newer; target cuda -arch=sm_75 takes "
            "fp32 only");
  CHECK(tc_backend_precision_check(gpu, "cuda -arch=sm_75", TC_PRECISION_FP32, err, sizeof err) ==
        TH_OK);
  /* tc_precision_check, what the server and the CLI call, answers the same by framework name */
  tc_precision p = TC_PRECISION_COUNT;
  CHECK(tc_precision_check("cuda", "cuda -arch=sm_86", "tf32", &p, err, sizeof err) == TH_OK);
  CHECK_EQ_INT(p, TC_PRECISION_TF32);
  CHECK(tc_precision_check("llvm", NULL, "tf32", NULL, err, sizeof err) == TH_ERR_INVALID);
  CHECK_STR(err, "precision tf32 needs the cuda framework; llvm takes fp32");
  CHECK(tc_precision_check("cuda", "cuda -arch=sm_70", "tf32", NULL, err, sizeof err) ==
        TH_ERR_INVALID);
  CHECK_STR(err,
            "precision tf32 needs tensor cores of sm_80 or newer; target cuda -arch=sm_70 takes "
            "fp32 only");
  CHECK(tc_precision_check("llvm", "llvm -mcpu=znver4", NULL, &p, err, sizeof err) == TH_OK);
  CHECK_EQ_INT(p, TC_PRECISION_FP32);
  return 0;
}

/* The tuner's resolution of a worker's --target names, built on the hooks above. */
TH_TEST(tuner_target_names) {
  char out[256] = "", err[4096] = "";
  CHECK(tune_target_measurable("", out, sizeof out, err, sizeof err) == TH_ERR_INVALID);
  CHECK_STR(err, "an empty target name; name native, an x86-64 CPU or level, or sm_XX");
  char own[256];
  CHECK(tune_target_for(tc_backend_name(tc_backend_default()), own, sizeof own) == TH_OK);
  CHECK(tune_target_measurable("native", out, sizeof out, err, sizeof err) == TH_OK);
  CHECK_STR(out, own);
  CHECK(tune_target_measurable(own, out, sizeof out, err, sizeof err) ==
        TH_OK); /* a concrete string */
  CHECK_STR(out, own);
  CHECK(tune_target_measurable("pentium9", out, sizeof out, err, sizeof err) != TH_OK);
  CHECK(strstr(err, "unknown target 'pentium9'") && strstr(err, "x86-64-v3"));
  /* a cuda name goes to cuda: measured only on a device of that very arch */
  const tc_backend *gpu = backend("cuda");
  char devarch[32] = "", why[256] = "";
  int dev = tune_device(gpu, NULL, 0, devarch, sizeof devarch, why, sizeof why);
  const char *other = strcmp(devarch, "sm_75") ? "sm_75" : "sm_80";
  CHECK(tune_target_measurable(other, out, sizeof out, err, sizeof err) == TH_ERR_UNSUPPORTED);
  if (!dev) {
    CHECK_STR(devarch, "sm_90"); /* the default build target's arch without a device */
    CHECK(strstr(err, "this machine cannot measure cuda code: ") != NULL);
  } else {
    CHECK(strstr(err, "so of cuda targets it measures only") != NULL);
    char want[64];
    snprintf(want, sizeof want, "cuda -arch=%s", devarch);
    CHECK(tune_target_measurable(devarch, out, sizeof out, err, sizeof err) == TH_OK);
    CHECK_STR(out, want);
  }
  return 0;
}
