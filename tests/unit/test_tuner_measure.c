/* Tests of the measurement worker: a correct candidate is timed, a wrong one is class 5, a crashing one
 * (segfault) is class 4, a hanging one (infinite loop) is class 7, one that writes past its buffer is class 4,
 * and after each failure the worker is restarted and measures the next candidate normally. Candidates are
 * small .so files compiled here with cc. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "measure.h"
#include "th_test.h"

static const char *kernels_src =
    "#include <stddef.h>\n"
    "#define N 4096\n"
    "void ref(void *const *a) { const float *x = a[0]; float *y = a[1];\n"
    "  for (int i = 0; i < N; i++) y[i] = 2.0f * x[i] + 1.0f; }\n"
    "void good(void *const *a) { const float *x = a[0]; float *y = a[1];\n"
    "  for (int i = N - 1; i >= 0; i--) y[i] = x[i] + x[i] + 1.0f; }\n"
    "void slow(void *const *a) { const float *x = a[0]; float *y = a[1];\n"
    "  for (int r = 0; r < 50; r++) for (int i = 0; i < N; i++) { volatile float t = 2.0f * x[i] + 1.0f; y[i] = t; } }\n"
    "void wrong(void *const *a) { const float *x = a[0]; float *y = a[1];\n"
    "  for (int i = 0; i < N; i++) y[i] = 2.0f * x[i] + (i == 777 ? 1.5f : 1.0f); }\n"
    "void partial(void *const *a) { const float *x = a[0]; float *y = a[1];\n"
    "  for (int i = 0; i < N - 1; i++) y[i] = 2.0f * x[i] + 1.0f; }\n"
    "void crash(void *const *a) { (void)a; *(volatile int *)(size_t)8 = 1; }\n"
    "void hang(void *const *a) { (void)a; for (;;) { __asm__ volatile(\"\"); } }\n"
    "void overflow(void *const *a) { const float *x = a[0]; float *y = a[1];\n"
    "  for (int i = 0; i < N + 4; i++) y[i] = 2.0f * x[i % N] + 1.0f; }\n"
    "int th_rt_pack_weights(const int *p, const float *src, float *dst) {\n"
    "  if (p[0] != 9) return -1; for (int i = 0; i < N; i++) dst[i] = p[1] ? src[N - 1 - i] : src[i];\n"
    "  return 0; }\n"
    "void wplain(void *const *a) { const float *x = a[0], *w = a[1]; float *y = a[3];\n"
    "  if (a[2]) return; for (int i = 0; i < N; i++) y[i] = x[i] * w[i]; }\n"
    "void wrev(void *const *a) { const float *x = a[0], *w = a[1]; float *y = a[3];\n"
    "  if (a[2]) return; for (int i = 0; i < N; i++) y[i] = x[i] * w[N - 1 - i]; }\n"
    "void prints(void *const *a) { extern int puts(const char *); puts(\"noise on stdout\");\n"
    "  ref(a); }\n";

static int build_so(char *dir, size_t dn, char *so, size_t sn) {
  snprintf(dir, dn, "/tmp/tuner_measure_XXXXXX");
  if (!mkdtemp(dir)) return -1;
  char src[512], cmd[1200];
  snprintf(src, sizeof src, "%s/k.c", dir);
  snprintf(so, sn, "%s/k.so", dir);
  FILE *f = fopen(src, "w");
  if (!f) return -1;
  fputs(kernels_src, f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "cc -O1 -shared -fPIC -o %s %s", so, src);
  return system(cmd) == 0 ? 0 : -1;
}

static void cleanup(const char *dir) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) fprintf(stderr, "cleanup of %s failed\n", dir);
}

static int run_worker_suite(char *const *argv) {
  char dir[256], so[512];
  CHECK(build_so(dir, sizeof dir, so, sizeof so) == 0);
  tune_measure_opts o;
  tune_measure_opts_default(&o);
  o.repeat = 5;
  o.min_repeat_ms = 2;
  o.timeout_s = 1.5;
  o.worker_argv = argv;
  tune_measurer_t *m = NULL;
  CHECK(tune_measurer_new(&o, &m) == TH_OK);
  tune_layout lay = {.nbufs = 2, .nelems = {4096, 4096}, .is_output = {0, 1}};
  CHECK(tune_measurer_set_task(m, &lay, so, "ref", NULL) == TH_OK);
  tune_result r;

  CHECK(tune_measurer_run(m, so, "good", NULL, &r) == TH_OK);
  CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_NONE);
  CHECK(r.cost_mean_s > 0 && r.cost_mean_s < 1e-2);
  CHECK(r.number >= 1);
  double good = r.cost_mean_s;

  CHECK(tune_measurer_run(m, so, "slow", NULL, &r) == TH_OK);
  CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_NONE);
  CHECK(r.cost_mean_s > good * 3); /* the timing tells kernels apart */

  CHECK(tune_measurer_run(m, so, "wrong", NULL, &r) == TH_OK);
  CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_WRONG_ANSWER);
  CHECK(r.cost_mean_s >= 1e9);
  CHECK(strstr(r.msg, "777") != NULL);

  CHECK(tune_measurer_run(m, so, "partial", NULL, &r) == TH_OK);
  CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_WRONG_ANSWER);

  CHECK(tune_measurer_run(m, so, "missing_symbol", NULL, &r) == TH_OK);
  CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_COMPILE_HOST);
  CHECK_EQ_INT(tune_measurer_restarts(m), 0);

  CHECK(tune_measurer_run(m, so, "crash", NULL, &r) == TH_OK);
  CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_RUNTIME_DEVICE);
  CHECK(strstr(r.msg, "signal") != NULL);
  CHECK_EQ_INT(tune_measurer_restarts(m), 1);

  CHECK(tune_measurer_run(m, so, "good", NULL, &r) == TH_OK); /* a fresh worker, with the task resent */
  CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_NONE);

  CHECK(tune_measurer_run(m, so, "hang", NULL, &r) == TH_OK);
  CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_RUN_TIMEOUT);
  CHECK_EQ_INT(tune_measurer_restarts(m), 2);

  CHECK(tune_measurer_run(m, so, "overflow", NULL, &r) == TH_OK);
  CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_RUNTIME_DEVICE);

  CHECK(tune_measurer_run(m, so, "prints", NULL, &r) == TH_OK);
  CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_NONE);

  CHECK(tune_measurer_run(m, so, "good", NULL, &r) == TH_OK);
  CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_NONE);
  tune_measurer_free(m);
  cleanup(dir);
  return 0;
}

TH_TEST(measure_worker_fork) {
  return run_worker_suite(NULL);
}

TH_TEST(measure_worker_exec) {
  char *argv[] = {(char *)TUNER_WORKER_EXE, NULL};
  return run_worker_suite(argv);
}

TH_TEST(measure_bad_reference) {
  char dir[256], so[512];
  CHECK(build_so(dir, sizeof dir, so, sizeof so) == 0);
  tune_measure_opts o;
  tune_measure_opts_default(&o);
  o.timeout_s = 1.0;
  tune_measurer_t *m = NULL;
  CHECK(tune_measurer_new(&o, &m) == TH_OK);
  tune_layout lay = {.nbufs = 2, .nelems = {4096, 4096}, .is_output = {0, 1}};
  tune_result r;
  CHECK(tune_measurer_run(m, so, "good", NULL, &r) == TH_ERR_INVALID); /* no task yet */
  CHECK(tune_measurer_set_task(m, &lay, so, "crash", NULL) == TH_ERR_RUNTIME);
  CHECK(strstr(tune_measurer_errmsg(m), "reference") != NULL);
  CHECK(tune_measurer_set_task(m, &lay, so, "partial", NULL) == TH_ERR_RUNTIME); /* NaN left in the output */
  CHECK(tune_measurer_set_task(m, &lay, "/nonexistent.so", "ref", NULL) == TH_ERR_RUNTIME);
  CHECK(tune_measurer_set_task(m, &lay, so, "ref", NULL) == TH_OK);
  CHECK(tune_measurer_run(m, so, "good", NULL, &r) == TH_OK);
  CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_NONE);
  tune_measurer_free(m);
  cleanup(dir);
  return 0;
}

/* Packed weights: each candidate's weights are packed by the th_rt_pack_weights its own .so exports, with
 * the candidate's pack parameters; a NULL argument slot stays NULL. */
TH_TEST(measure_packed_weights) {
  char dir[256], so[512];
  CHECK(build_so(dir, sizeof dir, so, sizeof so) == 0);
  tune_measure_opts o;
  tune_measure_opts_default(&o);
  o.repeat = 3;
  tune_measurer_t *m = NULL;
  CHECK(tune_measurer_new(&o, &m) == TH_OK);
  tune_layout lay = {.nbufs = 4, .nelems = {4096, 4096, 0, 4096}, .is_output = {0, 0, 0, 1},
                     .packed = {0, 1, 0, 0}};
  tune_pack plain = {.params = {{0}, {9, 0}}, .packed_n = {0, 4096}};
  tune_pack rev = {.params = {{0}, {9, 1}}, .packed_n = {0, 4096}};
  tune_pack bad = {.params = {{0}, {5, 1}}, .packed_n = {0, 4096}};
  CHECK(tune_measurer_set_task(m, &lay, so, "wplain", &plain) == TH_OK);
  tune_result r;
  CHECK(tune_measurer_run(m, so, "wrev", &rev, &r) == TH_OK);
  CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_NONE);
  CHECK(tune_measurer_run(m, so, "wrev", &plain, &r) == TH_OK);
  CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_WRONG_ANSWER);
  CHECK(tune_measurer_run(m, so, "wplain", &plain, &r) == TH_OK);
  CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_NONE);
  CHECK(tune_measurer_run(m, so, "wplain", &bad, &r) == TH_OK);
  CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_RUNTIME_DEVICE);
  tune_measurer_free(m);
  cleanup(dir);
  return 0;
}

/* The error classes are stored in tuning_records.error_class: their numbers never change. */
TH_TEST(measure_error_class_numbers) {
  static const char *const text[] = {"ok",           "instantiation", "compile host",
                                     "compile device", "runtime device", "wrong answer",
                                     "build timeout",  "run timeout",   "unknown"};
  CHECK_EQ_INT(TC_ERROR_CLASS_NONE, 0);
  CHECK_EQ_INT(TC_ERROR_CLASS_INSTANTIATION, 1);
  CHECK_EQ_INT(TC_ERROR_CLASS_COMPILE_HOST, 2);
  CHECK_EQ_INT(TC_ERROR_CLASS_COMPILE_DEVICE, 3);
  CHECK_EQ_INT(TC_ERROR_CLASS_RUNTIME_DEVICE, 4);
  CHECK_EQ_INT(TC_ERROR_CLASS_WRONG_ANSWER, 5);
  CHECK_EQ_INT(TC_ERROR_CLASS_BUILD_TIMEOUT, 6);
  CHECK_EQ_INT(TC_ERROR_CLASS_RUN_TIMEOUT, 7);
  CHECK_EQ_INT(TC_ERROR_CLASS_UNKNOWN, 8);
  for (int e = 0; e <= 8; e++) CHECK(strcmp(tc_error_class_str(e), text[e]) == 0);
  CHECK(strcmp(tc_error_class_str(-1), "unknown") == 0 && strcmp(tc_error_class_str(9), "unknown") == 0);
  return 0;
}
