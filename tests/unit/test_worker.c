/* Unit tests of the registry's job runner (tuner/worker.c) with an injected test builder that writes a small
 * but real tar with libarchive: claim → build → publish → succeed, failures keep their message, a cancel
 * stops the job between stages, and an unsupported framework fails with the builder's reason. */
#include <archive.h>
#include <archive_entry.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scheduler.h"
#include "store.h"
#include "th_test.h"
#include "th_test_store.h"
#include "th_util.h"
#include "worker.h"

typedef struct test_builder {
  int fail;       /* return an error */
  int slow_steps; /* stages of 50 ms each, checking cancel between them */
} test_builder;

static int tb_supports(void *self, const char *fw, char *why, size_t n) {
  (void)self;
  if (!strcmp(fw, "llvm")) return 1;
  snprintf(why, n, "framework %s is not available in the test builder", fw);
  return 0;
}

static th_status write_tar(const char *path, const char *name, const char *text) {
  struct archive *a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  if (archive_write_open_filename(a, path) != ARCHIVE_OK) return TH_ERR_IO;
  struct archive_entry *e = archive_entry_new();
  archive_entry_set_pathname(e, name);
  archive_entry_set_size(e, (la_int64_t)strlen(text));
  archive_entry_set_filetype(e, AE_IFREG);
  archive_entry_set_perm(e, 0644);
  archive_write_header(a, e);
  archive_write_data(a, text, strlen(text));
  archive_entry_free(e);
  archive_write_close(a);
  archive_write_free(a);
  return TH_OK;
}

static th_status tb_run(void *self, const tune_build_env *env, char *err, size_t n) {
  test_builder *tb = self;
  for (int i = 0; i < tb->slow_steps; i++) {
    tune_job_progress prog = {.phase = "build", .has_build = 1};
    prog.build.stage = "step";
    prog.build.done = i;
    prog.build.total = tb->slow_steps;
    env->progress(env->ctx, "build", &prog);
    if (env->cancelled(env->ctx)) return TH_ERR_CANCELLED;
    usleep(50000);
  }
  if (tb->fail) {
    snprintf(err, n, "test builder: %s has no kernels", env->key->network);
    return TH_ERR_COMPILE;
  }
  char tar[1200], so[1200];
  snprintf(tar, sizeof tar, "%s/model.tar", env->work_dir);
  snprintf(so, sizeof so, "%s/model.so", env->work_dir);
  if (write_tar(tar, "manifest.json", "{\"test\":true}") != TH_OK) return TH_ERR_IO;
  if (th_write_file_atomic(so, "\177ELF", 4) != TH_OK) return TH_ERR_IO;
  tune_build_output out = {tar, so, "{\"test\":true}", 1.5, 0};
  int version = 0;
  return env->publish(env->ctx, &out, &version);
}

static store_key key_of(const char *fw, const char *net) {
  store_key k;
  memset(&k, 0, sizeof k);
  snprintf(k.framework, sizeof k.framework, "%s", fw);
  snprintf(k.network, sizeof k.network, "%s", net);
  k.batch = 1;
  snprintf(k.target, sizeof k.target, "test");
  snprintf(k.compiler_version, sizeof k.compiler_version, "0");
  return k;
}

static store_job wait_done(store_t *st, int64_t id) {
  store_job j;
  for (int i = 0; i < 200; i++) {
    CHECK(store_job_get(st, id, &j) == TH_OK);
    if (j.state != STORE_JOB_QUEUED && j.state != STORE_JOB_RUNNING) return j;
    store_job_clear(&j);
    usleep(50000);
  }
  CHECK(!"job did not finish in 10 s");
  return j;
}

static store_t *open_tmp(void) {
  char d[] = "/tmp/th_worker_XXXXXX"; /* the store keeps its own copy of the path */
  CHECK(mkdtemp(d) != NULL);
  store_t *st = NULL;
  CHECK(th_test_store_open(d, &st) == TH_OK);
  return st;
}

static void on_event(void *ctx, int64_t id) {
  (void)id;
  (*(int *)ctx)++;
}

/* The progress document the runner persists: the server's encoder in the daemon, a small one here. */
static char *encode_step(void *ctx, const tune_job_progress *p) {
  (void)ctx;
  char doc[64];
  snprintf(doc, sizeof doc, "{\"step\":%d}", p->build.done);
  return strdup(doc);
}

TH_TEST(build_publishes_a_real_tar) {
  store_t *st = open_tmp();
  test_builder tb = {0, 2};
  tune_builder b = {"test", tb_supports, tb_run, &tb, NULL, NULL, NULL, NULL};
  int events = 0;
  tune_workers *w = NULL;
  char root[1200];
  snprintf(root, sizeof root, "%s/work", store_data_dir(st));
  tune_sched_opts o;
  tune_sched_opts_default(&o);
  o.max_jobs = 2;
  o.work_root = root;
  o.listener = on_event;
  o.listener_ctx = &events;
  o.encode_progress = encode_step;
  CHECK(tune_workers_start_opts(st, &b, &o, &w) == TH_OK);
  store_key k = key_of("llvm", "resnet-18");
  int64_t id;
  int created;
  CHECK(store_job_enqueue(st, &k, "build", "{}", 0, &id, &created) == TH_OK);
  tune_workers_notify(w);
  store_job j = wait_done(st, id);
  CHECK(j.state == STORE_JOB_SUCCEEDED);
  CHECK_STR(j.progress, "{\"step\":1}");
  store_job_clear(&j);
  store_model m;
  CHECK(store_model_get(st, &k, 0, &m) == TH_OK);
  CHECK_EQ_INT(m.version, 1);
  char path[1400];
  CHECK(store_artifact_path(st, m.tar_digest, path, sizeof path, NULL, NULL, 0) == TH_OK);
  char cmd[1600];
  snprintf(cmd, sizeof cmd, "tar -tf %s | grep -qx manifest.json", path);
  CHECK(system(cmd) == 0);
  store_model_clear(&m);
  tune_workers_stop(w);
  CHECK(events >= 3); /* progress, publish, finish */
  /* the scratch directory is gone */
  snprintf(path, sizeof path, "%s/job-%lld", root, (long long)id);
  CHECK(access(path, F_OK) != 0);
  store_close(st);
  return 0;
}

TH_TEST(failure_keeps_message) {
  store_t *st = open_tmp();
  test_builder tb = {1, 0};
  tune_builder b = {"test", tb_supports, tb_run, &tb, NULL, NULL, NULL, NULL};
  tune_workers *w = NULL;
  char root[1200];
  snprintf(root, sizeof root, "%s/work", store_data_dir(st));
  CHECK(tune_workers_start(st, &b, 1, root, NULL, NULL, &w) == TH_OK);
  store_key k = key_of("llvm", "vgg-11");
  int64_t id;
  int created;
  CHECK(store_job_enqueue(st, &k, "build", "{}", 0, &id, &created) == TH_OK);
  tune_workers_notify(w);
  store_job j = wait_done(st, id);
  CHECK(j.state == STORE_JOB_FAILED);
  CHECK_STR(j.error, "test builder: vgg-11 has no kernels");
  store_job_clear(&j);
  /* an unsupported framework fails with the builder's reason */
  store_key kc = key_of("cuda", "vgg-11");
  CHECK(store_job_enqueue(st, &kc, "build", "{}", 0, &id, &created) == TH_OK);
  tune_workers_notify(w);
  j = wait_done(st, id);
  CHECK(j.state == STORE_JOB_FAILED);
  CHECK(strstr(j.error, "not available") != NULL);
  store_job_clear(&j);
  tune_workers_stop(w);
  store_close(st);
  return 0;
}

TH_TEST(cancel_between_stages) {
  store_t *st = open_tmp();
  test_builder tb = {0, 100}; /* 5 s unless cancelled */
  tune_builder b = {"test", tb_supports, tb_run, &tb, NULL, NULL, NULL, NULL};
  tune_workers *w = NULL;
  char root[1200];
  snprintf(root, sizeof root, "%s/work", store_data_dir(st));
  CHECK(tune_workers_start(st, &b, 1, root, NULL, NULL, &w) == TH_OK);
  store_key k = key_of("llvm", "mobilenet");
  int64_t id;
  int created;
  CHECK(store_job_enqueue(st, &k, "build", "{}", 0, &id, &created) == TH_OK);
  tune_workers_notify(w);
  store_job j;
  for (int i = 0; i < 100; i++) {
    CHECK(store_job_get(st, id, &j) == TH_OK);
    int running = j.state == STORE_JOB_RUNNING;
    store_job_clear(&j);
    if (running) break;
    usleep(20000);
  }
  double t0 = th_now_mono();
  CHECK(store_job_cancel(st, id) == TH_OK);
  j = wait_done(st, id);
  CHECK(j.state == STORE_JOB_CANCELLED);
  CHECK(th_now_mono() - t0 < 2.0);
  store_job_clear(&j);
  store_model m;
  CHECK(store_model_get(st, &k, 0, &m) == TH_ERR_NOT_FOUND);
  tune_workers_stop(w);
  store_close(st);
  return 0;
}

TH_TEST(shutdown_leaves_job_for_restart) {
  store_t *st = open_tmp();
  test_builder tb = {0, 100};
  tune_builder b = {"test", tb_supports, tb_run, &tb, NULL, NULL, NULL, NULL};
  tune_workers *w = NULL;
  char root[1200];
  snprintf(root, sizeof root, "%s/work", store_data_dir(st));
  CHECK(tune_workers_start(st, &b, 1, root, NULL, NULL, &w) == TH_OK);
  store_key k = key_of("llvm", "squeezenet_v1.1");
  int64_t id;
  int created;
  CHECK(store_job_enqueue(st, &k, "build", "{}", 0, &id, &created) == TH_OK);
  tune_workers_notify(w);
  usleep(300000);
  tune_workers_stop(w); /* interrupts the job: it goes back to the queue, for the next start */
  store_job j;
  CHECK(store_job_get(st, id, &j) == TH_OK);
  CHECK(j.state == STORE_JOB_QUEUED);
  CHECK_EQ_INT(j.attempts, 1);
  store_job_clear(&j);
  int requeued = 0;
  CHECK(store_recover(st, &requeued, NULL) == TH_OK);
  CHECK_EQ_INT(requeued, 0);
  store_close(st);
  return 0;
}
