/* Tests of the measurement worker: a correct candidate is timed, a wrong one is class 5, a crashing one
 * (segfault) is class 4, a hanging one (infinite loop) is class 7, one that writes past its buffer is class 4,
 * and after each failure the worker is restarted and measures the next candidate normally. Candidates are
 * small .so files compiled here with cc. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "measure.h"
#include "ops.h"
#include "th_test.h"
#include "tune_task.h"

static const char *kernels_src =
    "#include <signal.h>\n#include <stddef.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
    "#include <unistd.h>\n"
    "#define N 4096\n"
    "void ref(void *const *a) { const float *x = a[0]; float *y = a[1];\n"
    "  for (int i = 0; i < N; i++) y[i] = 2.0f * x[i] + 1.0f; }\n"
    "void good(void *const *a) { const float *x = a[0]; float *y = a[1];\n"
    "  for (int i = N - 1; i >= 0; i--) y[i] = x[i] + x[i] + 1.0f; }\n"
    "void slow(void *const *a) { const float *x = a[0]; float *y = a[1];\n"
    "  for (int r = 0; r < 50; r++) for (int i = 0; i < N; i++) { volatile float t = 2.0f * x[i] + "
    "1.0f; y[i] = t; } }\n"
    "void wrong(void *const *a) { const float *x = a[0]; float *y = a[1];\n"
    "  for (int i = 0; i < N; i++) y[i] = 2.0f * x[i] + (i == 777 ? 1.5f : 1.0f); }\n"
    "void partial(void *const *a) { const float *x = a[0]; float *y = a[1];\n"
    "  for (int i = 0; i < N - 1; i++) y[i] = 2.0f * x[i] + 1.0f; }\n"
    "void crash(void *const *a) { (void)a; *(volatile int *)(size_t)8 = 1; }\n"
    "void hang(void *const *a) { (void)a; for (;;) { __asm__ volatile(\"\"); } }\n"
    "void overflow(void *const *a) { const float *x = a[0]; float *y = a[1];\n"
    "  for (int i = 0; i < N + 4; i++) y[i] = 2.0f * x[i % N] + 1.0f; }\n"
    "int th_rt_pack_weights(const int *p, const float *src, float *dst) {\n"
    "  if (p[0] != 9) return -1; for (int i = 0; i < N; i++) dst[i] = p[1] ? src[N - 1 - i] : "
    "src[i];\n"
    "  return 0; }\n"
    "void wplain(void *const *a) { const float *x = a[0], *w = a[1]; float *y = a[3];\n"
    "  if (a[2]) return; for (int i = 0; i < N; i++) y[i] = x[i] * w[i]; }\n"
    "void wrev(void *const *a) { const float *x = a[0], *w = a[1]; float *y = a[3];\n"
    "  if (a[2]) return; for (int i = 0; i < N; i++) y[i] = x[i] * w[N - 1 - i]; }\n"
    "void prints(void *const *a) { extern int puts(const char *); puts(\"noise on stdout\");\n"
    "  ref(a); }\n"
    /* an embedding: 4096 int64 indices into a [7, 4] table; an index outside [0, 7) poisons the
       output */
    "void gather(void *const *a) { const long long *ix = a[0]; const float *t = a[1]; float *y = "
    "a[2];\n"
    "  for (int i = 0; i < N; i++) for (int j = 0; j < 4; j++)\n"
    "    y[i * 4 + j] = ix[i] >= 0 && ix[i] < 7 ? t[ix[i] * 4 + j] : 0.0f / 0.0f; }\n"
    "void gather_rev(void *const *a) { const long long *ix = a[0]; const float *t = a[1]; float *y "
    "= a[2];\n"
    "  for (int i = N - 1; i >= 0; i--) for (int j = 3; j >= 0; j--) y[i * 4 + j] = t[ix[i] * 4 + "
    "j]; }\n"
    "void gather_f32(void *const *a) { const float *ix = a[0]; const float *t = a[1]; float *y = "
    "a[2];\n"
    "  for (int i = 0; i < N; i++) for (int j = 0; j < 4; j++) y[i * 4 + j] = t[((int)ix[i] & 3) * "
    "4 + j]; }\n"
    /* one part of a concat: the second half of an output of 2N */
    "void half(void *const *a) { const float *x = a[0]; float *y = a[1];\n"
    "  for (int i = 0; i < N; i++) y[N + i] = x[i]; }\n"
    "void half_short(void *const *a) { const float *x = a[0]; float *y = a[1];\n"
    "  for (int i = 0; i < N - 1; i++) y[N + i] = x[i]; }\n"
    /* ref, but each call that finds a file death<i> in $TH_TEST_REF_DEATHS removes it and kills its worker */
    "void ref_dies(void *const *a) { const char *d = getenv(\"TH_TEST_REF_DEATHS\"); char p[600];\n"
    "  for (int i = 0; d && i < 8; i++) { snprintf(p, sizeof p, \"%s/death%d\", d, i);\n"
    "    if (unlink(p) == 0) raise(SIGKILL); }\n"
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

/* n files death<i> in dir: the next n calls of ref_dies kill their worker. */
static int make_deaths(const char *dir, int n) {
  for (int i = 0; i < n; i++) {
    char p[600];
    snprintf(p, sizeof p, "%s/death%d", dir, i);
    FILE *f = fopen(p, "w");
    if (!f) return -1;
    fclose(f);
  }
  return 0;
}

/* A worker that dies while it makes the task's reference (killed from outside just as it starts, as an
 * operator or the OOM killer may) is replaced by a fresh one: the task survives two such deaths in a row,
 * at the first start and at a restart; after three, the error says how the workers died. */
TH_TEST(measure_worker_killed_during_reference) {
  char dir[256], so[512];
  CHECK(build_so(dir, sizeof dir, so, sizeof so) == 0);
  CHECK(setenv("TH_TEST_REF_DEATHS", dir, 1) == 0);
  tune_measure_opts o;
  tune_measure_opts_default(&o);
  o.repeat = 3;
  o.timeout_s = 1.5;
  tune_measurer_t *m = NULL;
  CHECK(tune_measurer_new(&o, &m) == TH_OK);
  tune_layout lay = {.nbufs = 2, .nelems = {4096, 4096}, .is_output = {0, 1}};
  CHECK(make_deaths(dir, 1) == 0);
  CHECK(tune_measurer_set_task(m, &lay, so, "ref_dies", NULL) == TH_OK);
  tune_result r;
  CHECK(tune_measurer_run(m, so, "good", NULL, &r) == TH_OK);
  CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_NONE);

  CHECK(tune_measurer_run(m, so, "crash", NULL, &r) == TH_OK);
  CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_RUNTIME_DEVICE);
  CHECK(make_deaths(dir, 2) == 0);
  CHECK(tune_measurer_run(m, so, "good", NULL, &r) == TH_OK); /* the third fresh worker takes the task */
  CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_NONE);
  const char *why = NULL;
  CHECK_EQ_INT(tune_measurer_deaths(m, &why), 4); /* at the first start, the crash, and two at the restart */
  CHECK(strstr(why, "killed by signal 9") && strstr(why, "making the task's reference"));
  char p[600];
  snprintf(p, sizeof p, "%s/death1", dir);
  CHECK(access(p, F_OK) != 0); /* both deaths happened */

  CHECK(tune_measurer_run(m, so, "crash", NULL, &r) == TH_OK);
  CHECK(make_deaths(dir, 3) == 0);
  CHECK(tune_measurer_run(m, so, "good", NULL, &r) == TH_ERR_IO);
  CHECK(strstr(r.msg, "reference kernel: the worker died running it (worker killed by signal 9") != NULL);
  CHECK(strstr(r.msg, "3 workers in a row") != NULL);
  CHECK(unsetenv("TH_TEST_REF_DEATHS") == 0);
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

/* int64 buffers (8 bytes an element) get values in [0, index_limit): an embedding's reference runs
 * on valid indices (its output would be NaN otherwise) and a candidate that reads them as floats is
 * wrong. A partial output (a concat's part) is zeroed rather than poisoned, and a candidate that
 * misses one of its elements is still caught. */
TH_TEST(measure_int64_indices_and_partial_outputs) {
  char dir[256], so[512];
  CHECK(build_so(dir, sizeof dir, so, sizeof so) == 0);
  tune_measure_opts o;
  tune_measure_opts_default(&o);
  o.repeat = 3;
  tune_measurer_t *m = NULL;
  CHECK(tune_measurer_new(&o, &m) == TH_OK);
  tune_layout lay = {.nbufs = 3,
                     .nelems = {4096, 28, 4096 * 4},
                     .is_output = {0, 0, 1},
                     .elem_bytes = {8, 0, 0},
                     .index_limit = {7, 0, 0}};
  CHECK(tune_measurer_set_task(m, &lay, so, "gather", NULL) == TH_OK);
  tune_result r;
  CHECK(tune_measurer_run(m, so, "gather_rev", NULL, &r) == TH_OK);
  CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_NONE);
  CHECK(tune_measurer_run(m, so, "gather_f32", NULL, &r) == TH_OK);
  CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_WRONG_ANSWER);
  /* indices beyond the table poison the reference's output */
  lay.index_limit[0] = 9;
  CHECK(tune_measurer_set_task(m, &lay, so, "gather", NULL) == TH_ERR_RUNTIME);
  /* int64 outputs are refused */
  tune_layout bad = lay;
  bad.elem_bytes[2] = 8;
  CHECK(tune_measurer_set_task(m, &bad, so, "gather", NULL) == TH_ERR_RUNTIME);

  tune_layout part = {.nbufs = 2, .nelems = {4096, 8192}, .is_output = {0, 1}, .partial = {0, 1}};
  CHECK(tune_measurer_set_task(m, &part, so, "half", NULL) == TH_OK);
  CHECK(tune_measurer_run(m, so, "half", NULL, &r) == TH_OK);
  CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_NONE);
  CHECK(tune_measurer_run(m, so, "half_short", NULL, &r) == TH_OK);
  CHECK_EQ_INT(r.error_class, TC_ERROR_CLASS_WRONG_ANSWER);
  part.partial[1] = 0; /* poisoned with NaN, the unwritten half fails the reference */
  CHECK(tune_measurer_set_task(m, &part, so, "half", NULL) == TH_ERR_RUNTIME);
  tune_measurer_free(m);
  cleanup(dir);
  return 0;
}

static tune_layout layout_of(const tc_workload *wl) {
  tune_task t;
  memset(&t, 0, sizeof t);
  t.wl = *wl;
  tune_layout l;
  CHECK_EQ_INT(tune_task_layout(&t, &l), TH_OK);
  CHECK_EQ_INT(l.nbufs, tc_op_nargs(wl->kernel));
  return l;
}

#define CHECK_SIZES(l, ...)                                                                      \
  do {                                                                                           \
    const int64_t want__[] = {__VA_ARGS__};                                                      \
    for (size_t i__ = 0; i__ < sizeof want__ / sizeof want__[0]; i__++) {                        \
      if ((l).nelems[i__] != want__[i__])                                                        \
        fprintf(stderr, "slot %zu: %lld elements, want %lld\n", i__, (long long)(l).nelems[i__], \
                (long long)want__[i__]);                                                         \
      CHECK((l).nelems[i__] == want__[i__]);                                                     \
    }                                                                                            \
  } while (0)

/* tune_task_layout follows each family's argument list in compiler/include/tc/ops.h. */
TH_TEST(task_layout_sizes) {
  tc_workload w;
  tune_layout l;
  /* batch_matmul {a [n, M, K], b [n, K, N], out [n, M, N]}: bert's scores, 12 heads, 128 x 64 x 128
   */
  memset(&w, 0, sizeof w);
  w.kernel = TC_KERNEL_BATCH_MATMUL;
  w.n = 12, w.h = w.oh = 128, w.c = 64, w.oc = 128, w.w = w.ow = 1, w.trans_b = 1, w.alpha = 0.125f;
  l = layout_of(&w);
  CHECK_SIZES(l, 12 * 128 * 64, 12 * 64 * 128, 12 * 128 * 128);
  CHECK(!l.is_output[0] && !l.is_output[1] && l.is_output[2] && !l.packed[1] &&
        l.elem_bytes[0] != 8);
  /* layer_norm {in, gamma, beta, residual, out}: 256 rows of 768, with and without the residual */
  memset(&w, 0, sizeof w);
  w.kernel = TC_KERNEL_LAYER_NORM;
  w.n = 256, w.c = w.oc = 768, w.h = w.w = w.oh = w.ow = 1, w.alpha = 1e-12f;
  l = layout_of(&w);
  CHECK_SIZES(l, 256 * 768, 768, 768, 0, 256 * 768);
  CHECK(l.is_output[4] && !l.is_output[0] && !l.packed[1] && !l.packed[2]);
  w.epilogue = TC_EPI_RESIDUAL;
  l = layout_of(&w);
  CHECK_SIZES(l, 256 * 768, 768, 768, 256 * 768, 256 * 768);
  /* softmax_rows {in, mask [n, w], out}: rows [2, 12, 128] of 128 */
  memset(&w, 0, sizeof w);
  w.kernel = TC_KERNEL_SOFTMAX_ROWS;
  w.n = 2, w.c = w.oc = 12, w.h = w.oh = 128, w.w = w.ow = 128, w.alpha = 1;
  l = layout_of(&w);
  CHECK_SIZES(l, 2 * 12 * 128 * 128, 0, 2 * 12 * 128 * 128);
  w.epilogue = TC_EPI_MASK;
  l = layout_of(&w);
  CHECK_SIZES(l, 2 * 12 * 128 * 128, 2 * 128, 2 * 12 * 128 * 128);
  CHECK(l.is_output[2] && !l.is_output[1]);
  /* conv2d {in, weights, bias, residual, out} on padded channel blocks: the maps and the bias as stored
   * (58 -> 64 channels in blocks of 16, 20 -> 24 in blocks of 8), the weights in torch's layout */
  memset(&w, 0, sizeof w);
  w.kernel = TC_KERNEL_CONV2D;
  w.n = 2, w.c = 20, w.h = w.w = w.oh = w.ow = 7, w.oc = 58, w.kh = w.kw = 3, w.sh = w.sw = 1;
  w.pt = w.pl = w.pb = w.pr = 1, w.in_cb = 8, w.out_cb = 16, w.epilogue = TC_EPI_BIAS | TC_EPI_RESIDUAL;
  l = layout_of(&w);
  CHECK_SIZES(l, 2 * 24 * 49, 58 * 20 * 9, 64, 2 * 64 * 49, 2 * 64 * 49);
  CHECK(l.packed[1] && l.is_output[4]);
  /* unary {in, out}: gelu reads floats, a cast int64 small integers */
  memset(&w, 0, sizeof w);
  w.kernel = TC_KERNEL_UNARY;
  w.n = 1000, w.c = w.h = w.w = w.oc = w.oh = w.ow = 1, w.op = TC_UNARY_GELU;
  l = layout_of(&w);
  CHECK_SIZES(l, 1000, 1000);
  CHECK(l.elem_bytes[0] != 8 && l.is_output[1]);
  w.op = TC_UNARY_CAST_I64;
  l = layout_of(&w);
  CHECK_SIZES(l, 1000, 1000);
  CHECK(l.elem_bytes[0] == 8 && l.elem_bytes[1] != 8 && l.index_limit[0] >= 0);
  /* embedding {indices [n] int64 in [0, c), table [c, oc], out [n, oc]}: bert's word embeddings */
  memset(&w, 0, sizeof w);
  w.kernel = TC_KERNEL_EMBEDDING;
  w.n = 256, w.c = 30522, w.oc = 768, w.h = w.w = w.oh = w.ow = 1;
  l = layout_of(&w);
  CHECK_SIZES(l, 256, 30522LL * 768, 256 * 768);
  CHECK(l.elem_bytes[0] == 8 && l.index_limit[0] == 30522 && l.is_output[2] &&
        l.elem_bytes[1] != 8);
  /* copy {in, out}: a transpose [2, 3, 4] -> [4, 3, 2] covers its output; a concat part does not */
  memset(&w, 0, sizeof w);
  w.kernel = TC_KERNEL_COPY;
  w.n = w.c = w.h = w.w = w.oc = w.oh = w.ow = 1;
  w.ndim = 3;
  w.shape[0] = 2, w.shape[1] = 3, w.shape[2] = 4;
  w.astride[0] = 12, w.astride[1] = 4, w.astride[2] = 1;
  w.bstride[0] = 1, w.bstride[1] = 2, w.bstride[2] = 6;
  l = layout_of(&w);
  CHECK_SIZES(l, 24, 24);
  CHECK(l.is_output[1] && !l.partial[1]);
  /* vit's class token and patches: the patches [2, 196, 768] go to rows 1.. of [2, 197, 768] */
  memset(&w, 0, sizeof w);
  w.kernel = TC_KERNEL_COPY;
  w.n = w.c = w.h = w.w = w.oc = w.oh = w.ow = 1;
  w.ndim = 3;
  w.shape[0] = 2, w.shape[1] = 196, w.shape[2] = 768;
  w.astride[0] = 196 * 768, w.astride[1] = 768, w.astride[2] = 1;
  w.bstride[0] = 197 * 768, w.bstride[1] = 768, w.bstride[2] = 1;
  w.boff = 768;
  l = layout_of(&w);
  CHECK_SIZES(l, 2 * 196 * 768, 2 * 197 * 768);
  CHECK(l.partial[1]);
  /* an expand reads one row (stride 0): [1, 768] -> [4, 768] */
  memset(&w, 0, sizeof w);
  w.kernel = TC_KERNEL_COPY;
  w.n = w.c = w.h = w.w = w.oc = w.oh = w.ow = 1;
  w.ndim = 2;
  w.shape[0] = 4, w.shape[1] = 768;
  w.astride[0] = 0, w.astride[1] = 1;
  w.bstride[0] = 768, w.bstride[1] = 1;
  l = layout_of(&w);
  CHECK_SIZES(l, 768, 4 * 768);
  CHECK(!l.partial[1]);
  /* binary {a, b, out}: [2, 128, 768] + [128, 768] (b broadcast over the batch) */
  memset(&w, 0, sizeof w);
  w.kernel = TC_KERNEL_BINARY;
  w.n = w.c = w.h = w.w = w.oc = w.oh = w.ow = 1;
  w.op = TC_BINARY_ADD;
  w.ndim = 3;
  w.shape[0] = 2, w.shape[1] = 128, w.shape[2] = 768;
  w.astride[0] = 128 * 768, w.astride[1] = 768, w.astride[2] = 1;
  w.bstride[0] = 0, w.bstride[1] = 768, w.bstride[2] = 1;
  l = layout_of(&w);
  CHECK_SIZES(l, 2 * 128 * 768, 128 * 768, 2 * 128 * 768);
  CHECK(l.is_output[2] && !l.is_output[0] && !l.is_output[1]);
  /* dense on rows of any rank with a gelu epilogue: {in, weights (packed), bias, residual, out} */
  memset(&w, 0, sizeof w);
  w.kernel = TC_KERNEL_DENSE;
  w.n = 256, w.c = 768, w.oc = 3072, w.h = w.w = w.oh = w.ow = 1, w.in_cb = w.out_cb = 1;
  w.kh = w.kw = w.sh = w.sw = 1;
  w.epilogue = TC_EPI_BIAS | TC_EPI_GELU;
  l = layout_of(&w);
  CHECK_SIZES(l, 256 * 768, 3072 * 768, 3072, 0, 256 * 3072);
  CHECK(l.packed[1] && l.is_output[4]);
  /* every family has a layout */
  for (int k = 0; k < TC_KERNEL_COUNT; k++) {
    tune_task t;
    memset(&t, 0, sizeof t);
    t.wl.kernel = (tc_kernel)k;
    t.wl.n = t.wl.c = t.wl.h = t.wl.w = t.wl.oc = t.wl.oh = t.wl.ow = 1;
    t.wl.ndim = 1;
    t.wl.shape[0] = 1;
    CHECK_EQ_INT(tune_task_layout(&t, &l), TH_OK);
  }
  return 0;
}
