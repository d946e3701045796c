/* Unit tests of the compiler builder (tuner/builder.c) that registry jobs run, driven through its staged form
 * (open/next/step/close) as the scheduler drives it, with a real store and real squeezenet builds: a version's
 * tuned flag is its manifest's (some layer has a tuned config) and a tuning job whose every trial failed does
 * not publish its fallback rebuild as tuned; a job resumed after a kill -9 decides what is left from what it
 * published itself, not from the sources of its quick build. */
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builder.h"
#include "measure.h"
#include "store.h"
#include "th_test.h"
#include "th_test_store.h"
#include "th_util.h"
#include "tune_task.h"
#include "worker.h"

/* The builder's tuning session execs "/proc/self/exe measure-worker" for its measurement worker, as the daemon
 * does: this executable answers that name with the worker's loop (and exits without the harness's PASS line).
 * Not a TH_TEST, so ctest does not list it. */
static int measure_worker_entry(void) {
  exit(tune_measure_worker_main(0, 1));
}
__attribute__((constructor)) static void register_measure_worker(void) {
  th_test_register("measure-worker", measure_worker_entry);
}

typedef struct test_env {
  store_t *st;
  store_key key;
  int64_t job_id;
  int published, last_tuned;
} test_env;

/* Whether any layer of the manifest says source "tuned": the definition the manifest's own "tuned" uses. */
static int manifest_has_tuned_layer(const char *manifest) {
  json_t *m = json_loads(manifest, 0, NULL);
  CHECK(m != NULL);
  int tuned = 0;
  size_t i;
  json_t *l;
  json_array_foreach(json_object_get(m, "layers"), i, l) {
    const char *src = json_string_value(json_object_get(l, "source"));
    if (src && !strcmp(src, "tuned")) tuned = 1;
  }
  json_t *flag = json_object_get(m, "tuned");
  if (flag) CHECK_EQ_INT(json_is_true(flag), tuned);
  json_decref(m);
  return tuned;
}

static void on_progress(void *ctx, const char *stage, const tune_job_progress *p) {
  (void)ctx, (void)stage, (void)p;
}

static int never_cancelled(void *ctx) {
  (void)ctx;
  return 0;
}

/* Publishes as the scheduler does (artifacts, then the version row with the builder's tuned flag), checking
 * first that the flag is the manifest's. */
static th_status on_publish(void *ctx, const tune_build_output *out, int *version) {
  test_env *t = ctx;
  CHECK_EQ_INT(out->tuned, manifest_has_tuned_layer(out->manifest));
  /* a published build is timed in the measurement worker, never in the builder's process, in rounds */
  json_t *m = json_loads(out->manifest, 0, NULL);
  json_t *lat = json_object_get(m, "latency_ms");
  CHECK(json_is_object(lat) && json_is_true(json_object_get(lat, "isolated")));
  CHECK(json_integer_value(json_object_get(lat, "n")) >= 3);
  CHECK(json_real_value(json_object_get(lat, "min")) <= json_real_value(json_object_get(lat, "max")));
  json_decref(m);
  char tar[65], so[65];
  th_status rc = store_artifact_put(t->st, out->tar_path, "application/x-tar", tar, NULL);
  if (rc == TH_OK) rc = store_artifact_put(t->st, out->so_path, "application/x-sharedlib", so, NULL);
  if (rc == TH_OK)
    rc = store_model_publish(t->st, &t->key, out->tuned, tar, so, out->manifest, out->latency_ms, t->job_id, 0,
                             version);
  if (rc == TH_OK) {
    t->published++;
    t->last_tuned = out->tuned;
  }
  return rc;
}

static store_t *open_tmp(char *dir, size_t n) {
  snprintf(dir, n, "/tmp/th_builder_XXXXXX");
  CHECK(mkdtemp(dir) != NULL);
  store_t *st = NULL;
  CHECK(th_test_store_open(dir, &st) == TH_OK);
  return st;
}

static store_key squeezenet_key(void) {
  store_key k;
  memset(&k, 0, sizeof k);
  snprintf(k.framework, sizeof k.framework, "llvm");
  snprintf(k.network, sizeof k.network, "squeezenet_v1.1");
  k.batch = 1;
  CHECK(tune_target_for("llvm", k.target, sizeof k.target) == TH_OK);
  snprintf(k.compiler_version, sizeof k.compiler_version, "test");
  return k;
}

/* Publishes a stand-in version of job_id (as if the job had published it before a kill -9), with one layer
 * whose source is tuned when tuned is set. */
static void publish_stand_in(store_t *st, const store_key *k, int tuned, int64_t job_id, const char *dir) {
  char path[1200], digest[65];
  snprintf(path, sizeof path, "%s/stand-in-%lld-%d", dir, (long long)job_id, tuned);
  CHECK(th_write_file_atomic(path, path, strlen(path)) == TH_OK);
  CHECK(store_artifact_put(st, path, "application/octet-stream", digest, NULL) == TH_OK);
  char manifest[200];
  snprintf(manifest, sizeof manifest, "{\"tuned\":%s,\"layers\":[{\"name\":\"conv1\",\"source\":\"%s\"}]}",
           tuned ? "true" : "false", tuned ? "tuned" : "fallback");
  int version = 0;
  CHECK(store_model_publish(st, k, tuned, digest, digest, manifest, 1.0, job_id, 0, &version) == TH_OK);
}

static void env_init(tune_build_env *env, test_env *t, const char *kind, const char *options, const char *wd) {
  memset(env, 0, sizeof *env);
  env->st = t->st;
  env->job_id = t->job_id;
  env->key = &t->key;
  env->kind = kind;
  env->options = options;
  env->work_dir = wd;
  env->progress = on_progress;
  env->cancelled = never_cancelled;
  env->publish = on_publish;
  env->ctx = t;
}

/* The kind of the job's first stage after open, or -1 when open finds nothing left to do. */
static int first_stage(const tune_build_env *env) {
  const tune_builder *b = tune_builder_compiler();
  void *job = NULL;
  char err[512] = "";
  CHECK(b->open(b->self, env, &job, err, sizeof err) == TH_OK);
  tune_stage_desc d;
  int kind = b->next(b->self, job, &d) ? d.kind : -1;
  b->close(b->self, job);
  return kind;
}

/* A tuning job killed after its quick build resumes with tuning, even when that quick build was tuned
 * throughout from records that older jobs stored; once it has published its tuned rebuild it is done. */
TH_TEST(builder_resume_finishes_tuning) {
  char dir[256];
  test_env t = {0};
  t.st = open_tmp(dir, sizeof dir);
  t.key = squeezenet_key();
  /* an older job's versions: they say nothing about the jobs that follow */
  publish_stand_in(t.st, &t.key, 0, 1, dir);
  publish_stand_in(t.st, &t.key, 1, 1, dir);
  tune_build_env env;
  t.job_id = 2;
  env_init(&env, &t, "tune", "{}", dir);
  /* nothing of its own yet: the quick build */
  CHECK_EQ_INT(first_stage(&env), TUNE_SK_QUICK);
  /* killed after its quick build, which the older records made tuned: the tuning session starts */
  publish_stand_in(t.st, &t.key, 1, 2, dir);
  CHECK_EQ_INT(first_stage(&env), TUNE_SK_SELECT);
  /* killed after its tuned rebuild: nothing is left */
  publish_stand_in(t.st, &t.key, 1, 2, dir);
  CHECK_EQ_INT(first_stage(&env), -1);
  /* a build job is done after its one version, tuned or not */
  t.job_id = 3;
  env_init(&env, &t, "build", "{}", dir);
  CHECK_EQ_INT(first_stage(&env), TUNE_SK_QUICK);
  publish_stand_in(t.st, &t.key, 0, 3, dir);
  CHECK_EQ_INT(first_stage(&env), -1);
  CHECK_EQ_INT(t.published, 0); /* open and next publish nothing */
  store_close(t.st);
  th_rm_rf(dir);
  return 0;
}

static void crash_every_build(const tc_config *c) {
  (void)c;
  raise(SIGSEGV);
}

/* A tuning job whose every trial fails (each candidate's build crashes) has no tuned layer in its rebuild:
 * that rebuild is not published (least of all as tuned) and the job fails saying why, so a GET ?tuned=1
 * answers that failure instead of a fallback build labelled tuned. The job resumes after its quick build (a
 * stand-in version), which spares the test one network build. */
TH_TEST(builder_all_trials_failed_publishes_no_tuned) {
  char dir[256];
  test_env t = {0};
  t.st = open_tmp(dir, sizeof dir);
  t.key = squeezenet_key();
  t.job_id = 1;
  publish_stand_in(t.st, &t.key, 0, 1, dir);
  char wd[300];
  snprintf(wd, sizeof wd, "%s/work", dir);
  CHECK(th_mkdir_p(wd) == TH_OK);
  tune_build_env env;
  env_init(&env, &t, "tune", "{\"trials\":1,\"tuner\":\"random\"}", wd);
  tune_build_fault_hook = crash_every_build;
  const tune_builder *b = tune_builder_compiler();
  void *job = NULL;
  char err[512] = "";
  CHECK(b->open(b->self, &env, &job, err, sizeof err) == TH_OK);
  tune_stage_desc d;
  th_status rc = TH_OK;
  int stages = 0, rebuilt = 0;
  while (rc == TH_OK && b->next(b->self, job, &d)) {
    rebuilt |= d.kind == TUNE_SK_REBUILD;
    rc = b->step(b->self, job, 1, err, sizeof err);
    stages++;
  }
  b->close(b->self, job);
  tune_build_fault_hook = NULL;
  fprintf(stderr, "%d stages, rc %s: %s\n", stages, th_status_name(rc), err);
  CHECK(rebuilt);
  CHECK_EQ_INT(t.published, 0);
  CHECK(rc != TH_OK && rc != TH_ERR_CANCELLED);
  CHECK(strstr(err, "no layer is tuned") != NULL);
  store_model m;
  CHECK(store_model_get(t.st, &t.key, 1, &m) == TH_ERR_NOT_FOUND);
  CHECK(store_model_get(t.st, &t.key, 0, &m) == TH_OK);
  CHECK_EQ_INT(m.version, 1);
  store_model_clear(&m);
  store_close(t.st);
  th_rm_rf(dir);
  return 0;
}

/* A model whose th_model_info crashes (or never returns), with the rest of the model ABI present: compiled
 * with cc into dir/NAME.so. */
static void fake_model(const char *dir, const char *name, const char *body, char *so, size_t n) {
  char src[512], cmd[1600];
  snprintf(src, sizeof src, "%s/%s.c", dir, name);
  snprintf(so, n, "%s/%s.so", dir, name);
  FILE *f = fopen(src, "w");
  CHECK(f != NULL);
  fprintf(f,
          "#include <signal.h>\n#include <stddef.h>\n"
          "const void *th_model_info(void) { %s return NULL; }\n"
          "int th_model_create(const void *p, size_t n, void **o) { (void)p; (void)n; (void)o; return 1; }\n"
          "int th_model_run_io(void *m, const void *const *i, void *const *o) { (void)m; (void)i; (void)o; "
          "return 1; }\n"
          "void th_model_free(void *m) { (void)m; }\n"
          "const char *th_model_last_error(void) { return \"\"; }\n",
          body);
  fclose(f);
  snprintf(cmd, sizeof cmd, "cc -shared -fPIC -o '%s' '%s'", so, src);
  CHECK(system(cmd) == 0);
}

/* Timing a published build happens in the measurement worker: a model that crashes or hangs there fails the
 * timing with the reason and costs the worker, never this process (the daemon's), which goes on to time a
 * good model with the same measurer. */
TH_TEST(model_timing_crash_and_hang_cost_the_worker) {
  char dir[] = "/tmp/th_model_time_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char crash[600], hang[600], pbin[600];
  fake_model(dir, "crash", "raise(SIGSEGV);", crash, sizeof crash);
  fake_model(dir, "hang", "for (;;) {}", hang, sizeof hang);
  snprintf(pbin, sizeof pbin, "%s/params.bin", dir);
  CHECK(th_write_file_atomic(pbin, "x", 1) == TH_OK);
  tune_measure_opts mo;
  tune_measure_opts_default(&mo);
  static char *const worker_argv[] = {"/proc/self/exe", "measure-worker", NULL};
  mo.worker_argv = worker_argv;
  tune_measurer_t *m = NULL;
  CHECK(tune_measurer_new(&mo, &m) == TH_OK);
  tc_time_opts t;
  tc_time_opts_default(&t);
  tc_run_stats st;
  char err[512] = "";
  th_status rc = tune_measurer_time_model(m, crash, pbin, &t, 30, &st, err, sizeof err);
  fprintf(stderr, "crash: %s: %s\n", th_status_name(rc), err);
  CHECK_EQ_INT(rc, TH_ERR_RUNTIME);
  CHECK(strstr(err, "crashed") != NULL && strstr(err, "signal 11") != NULL);
  double t0 = th_now_mono();
  rc = tune_measurer_time_model(m, hang, pbin, &t, 1.0, &st, err, sizeof err);
  fprintf(stderr, "hang: %s after %.1f s: %s\n", th_status_name(rc), th_now_mono() - t0, err);
  CHECK_EQ_INT(rc, TH_ERR_TIMEOUT);
  CHECK(th_now_mono() - t0 < 10);
  CHECK_EQ_INT(tune_measurer_restarts(m), 2);
  tune_measurer_free(m);
  th_rm_rf(dir);
  return 0;
}
