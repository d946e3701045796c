/* Unit tests of store/: migrations, single-flight under 8 threads, the queue limit under 16 threads, atomic and
 * durable artifact writes and orphan sweeping, requeue on restart, claims, cancel, models and records. Faults
 * are injected below SQLite (a corrupted b-tree page) and fsync calls are observed by interposing on fsync and
 * fdatasync. Each case makes its own temporary data directory. */
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "db.h"
#include "store.h"
#include "th_sha256.h"
#include "th_test.h"
#include "th_test_store.h"
#include "th_util.h"

/* A fresh temp dir; its name lives until the test process ends (each test runs in a process of its own), in a
 * static pool rather than on the heap, so that LeakSanitizer sees no leak. */
static char *tmpdir(void) {
  static char pool[8][32];
  static int used;
  CHECK(used < 8);
  char *d = pool[used++];
  snprintf(d, sizeof pool[0], "/tmp/th_store_XXXXXX");
  CHECK(mkdtemp(d) != NULL);
  return d;
}

static store_key key_of(const char *net, int batch) {
  store_key k;
  memset(&k, 0, sizeof k);
  snprintf(k.framework, sizeof k.framework, "llvm");
  snprintf(k.network, sizeof k.network, "%s", net);
  k.batch = batch;
  snprintf(k.target, sizeof k.target, "llvm -mcpu=test");
  snprintf(k.compiler_version, sizeof k.compiler_version, "0.1.0");
  return k;
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  fputs(text, f);
  fclose(f);
}

/* The schema version of the case's database, read through the db layer (either engine). */
static int schema_version(const char *dir) {
  char path[400], err[512];
  snprintf(path, sizeof path, "%s/tunehub.db", dir);
  db_t *h = NULL;
  CHECK(db_open(th_test_db() ? th_test_db() : path, &h, err, sizeof err) == TH_OK);
  int v = -1;
  CHECK(db_schema_version(h, &v) == TH_OK);
  db_close(h);
  return v;
}

/* The newest migration in schema.sql. */
static int schema_latest(void) {
  char *text = NULL;
  CHECK(th_read_file(TH_SCHEMA_PATH, 1 << 20, &text, NULL) == TH_OK);
  int latest = 0;
  for (char *p = text; (p = strstr(p, "-- migration ")) != NULL; p++) {
    int n = atoi(p + 13);
    if (n > latest) latest = n;
  }
  free(text);
  return latest;
}

TH_TEST(migrations_apply_once) {
  char *d = tmpdir();
  store_t *st = NULL;
  CHECK(th_test_store_open(d, &st) == TH_OK);
  store_close(st);
  /* reopening applies nothing twice */
  CHECK(th_test_store_open(d, &st) == TH_OK);
  store_close(st);
  CHECK(schema_latest() >= 4);
  CHECK_EQ_INT(schema_version(d), schema_latest());
  if (th_test_db()) return 0;
  /* the embedded store runs in WAL mode */
  char cmd[512];
  snprintf(cmd, sizeof cmd, "sqlite3 %s/tunehub.db 'PRAGMA journal_mode;' > %s/v.txt", d, d);
  CHECK(system(cmd) == 0);
  char path[300], *text = NULL;
  snprintf(path, sizeof path, "%s/v.txt", d);
  CHECK(th_read_file(path, 1024, &text, NULL) == TH_OK);
  CHECK(strncmp(text, "wal", 3) == 0);
  free(text);
  return 0;
}

TH_TEST(newer_schema_is_refused) {
  char *d = tmpdir();
  store_t *st = NULL;
  CHECK(th_test_store_open(d, &st) == TH_OK);
  store_close(st);
  char path[400], err[512];
  snprintf(path, sizeof path, "%s/tunehub.db", d);
  db_t *h = NULL;
  CHECK(db_open(th_test_db() ? th_test_db() : path, &h, err, sizeof err) == TH_OK);
  CHECK(db_set_schema_version(h, 99) == TH_OK);
  db_close(h);
  CHECK(th_test_store_open(d, &st) == TH_ERR_CONFLICT);
  CHECK(strstr(store_errmsg(NULL), "schema version 99 is newer") != NULL);
  return 0;
}

typedef struct {
  store_t *st;
  int64_t id;
  int created;
} enq_arg;

static void *enqueue_thread(void *p) {
  enq_arg *a = p;
  store_key k = key_of("resnet-18", 1);
  CHECK(store_job_enqueue(a->st, &k, "build", "{}", 0, &a->id, &a->created) == TH_OK);
  return NULL;
}

TH_TEST(single_flight_8_threads) {
  char *d = tmpdir();
  store_t *st = NULL;
  CHECK(th_test_store_open(d, &st) == TH_OK);
  pthread_t t[8];
  enq_arg a[8];
  for (int i = 0; i < 8; i++) {
    a[i].st = st;
    a[i].id = 0;
    a[i].created = 0;
    CHECK(pthread_create(&t[i], NULL, enqueue_thread, &a[i]) == 0);
  }
  int created = 0;
  for (int i = 0; i < 8; i++) {
    pthread_join(t[i], NULL);
    created += a[i].created;
    CHECK(a[i].id == a[0].id);
  }
  CHECK_EQ_INT(created, 1);
  int64_t counts[5];
  CHECK(store_job_counts(st, counts) == TH_OK);
  CHECK_EQ_INT(counts[STORE_JOB_QUEUED], 1);
  /* after the job ends, a new miss makes a new job */
  store_job j;
  CHECK(store_job_claim(st, "w", 0, &j) == TH_OK);
  CHECK(store_job_finish(st, j.id, 0, STORE_JOB_SUCCEEDED, NULL) == TH_OK);
  store_job_clear(&j);
  int64_t id2;
  int c2;
  store_key k = key_of("resnet-18", 1);
  CHECK(store_job_enqueue(st, &k, "build", "{}", 0, &id2, &c2) == TH_OK);
  CHECK(c2 == 1 && id2 != a[0].id);
  store_close(st);
  return 0;
}

/* A tune request never joins a live build job, which would publish its quick build and end untuned: a queued
 * build becomes a tune job, a running one refuses the request (one live job per key); a miss joins either. */
TH_TEST(single_flight_tune_never_joins_a_build) {
  char *d = tmpdir();
  store_t *st = NULL;
  CHECK(th_test_store_open(d, &st) == TH_OK);
  store_key k = key_of("resnet-18", 1);
  int64_t build, tune, miss;
  int c1 = 0, c2 = 1, c3 = 1;
  CHECK(store_job_enqueue(st, &k, "build", "{}", 0, &build, &c1) == TH_OK);
  CHECK(store_job_enqueue(st, &k, "tune", "{\"trials\":3}", 5, &tune, &c2) == TH_OK);
  CHECK(c1 == 1 && c2 == 0 && tune == build);
  store_job j;
  CHECK(store_job_get(st, build, &j) == TH_OK);
  CHECK(!strcmp(j.kind, "tune") && strstr(j.options, "\"trials\":3") && j.priority == 5);
  store_job_clear(&j);
  CHECK(store_job_enqueue(st, &k, "build", "{}", 0, &miss, &c3) == TH_OK); /* a miss joins the tune job */
  CHECK(c3 == 0 && miss == tune);
  /* a build that already runs cannot become a tune job: the request is refused, and nothing is queued */
  store_key k2 = key_of("resnet-18", 2);
  CHECK(store_job_enqueue(st, &k2, "build", "{}", 0, &build, &c1) == TH_OK);
  CHECK(store_job_claim(st, "w", 0, &j) == TH_OK); /* the oldest: the tune job of batch 1 */
  store_job_clear(&j);
  CHECK(store_job_claim(st, "w", 0, &j) == TH_OK);
  CHECK(j.id == build);
  store_job_clear(&j);
  int64_t queued = -1;
  CHECK(store_job_enqueue(st, &k2, "tune", "{}", 0, &tune, &c2) == TH_ERR_CONFLICT);
  CHECK(strstr(store_errmsg(st), "is building this model") != NULL);
  CHECK(store_job_count_queued(st, &queued) == TH_OK && queued == 0);
  CHECK(store_job_get(st, build, &j) == TH_OK);
  CHECK(!strcmp(j.kind, "build"));
  store_job_clear(&j);
  store_close(st);
  return 0;
}

TH_TEST(single_flight_across_processes) {
  char *d = tmpdir();
  pid_t kids[4];
  for (int i = 0; i < 4; i++) {
    kids[i] = fork();
    if (kids[i] == 0) {
      store_t *st = NULL;
      if (th_test_store_open(d, &st) != TH_OK) _exit(3);
      store_key k = key_of("vgg-11", 2);
      int64_t id;
      int created;
      th_status rc = store_job_enqueue(st, &k, "build", "{}", 0, &id, &created);
      store_close(st);
      _exit(rc == TH_OK ? (created ? 10 : 11) : 4);
    }
  }
  int made = 0;
  for (int i = 0; i < 4; i++) {
    int status;
    waitpid(kids[i], &status, 0);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 10 || WEXITSTATUS(status) == 11);
    made += WEXITSTATUS(status) == 10;
  }
  CHECK_EQ_INT(made, 1);
  return 0;
}

TH_TEST(artifact_put_is_content_addressed) {
  char *d = tmpdir();
  store_t *st = NULL;
  CHECK(th_test_store_open(d, &st) == TH_OK);
  char src[300];
  snprintf(src, sizeof src, "%s/src.bin", d);
  write_file(src, "abc");
  char digest[65];
  int64_t size = 0;
  CHECK(store_artifact_put(st, src, "application/octet-stream", digest, &size) == TH_OK);
  CHECK_STR(digest, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK_EQ_INT(size, 3);
  char path[1400];
  int64_t sz2;
  char media[64];
  CHECK(store_artifact_path(st, digest, path, sizeof path, &sz2, media, sizeof media) == TH_OK);
  char *text = NULL;
  CHECK(th_read_file(path, 100, &text, NULL) == TH_OK);
  CHECK_STR(text, "abc");
  free(text);
  CHECK_STR(media, "application/octet-stream");
  /* the same bytes again: same digest, no error */
  char digest2[65];
  CHECK(store_artifact_put(st, src, "application/octet-stream", digest2, NULL) == TH_OK);
  CHECK_STR(digest, digest2);
  CHECK(store_artifact_path(st, "00", path, sizeof path, NULL, NULL, 0) == TH_ERR_INVALID);
  store_close(st);
  return 0;
}

/* The free-space floor (store_set_min_free): an artifact that would leave less free is refused
 * before a byte is copied (no file under artifacts/, none left in tmp/), with a message naming the
 * free space and the floor; bytes already stored are still a no-op put, and a floor of 0 takes the
 * artifact. */
TH_TEST(artifact_put_refused_below_min_free) {
  char *d = tmpdir();
  store_t *st = NULL;
  CHECK(th_test_store_open(d, &st) == TH_OK);
  char src[300];
  snprintf(src, sizeof src, "%s/src.bin", d);
  write_file(src, "abc");
  int64_t avail = 0;
  CHECK(store_free_space(st, &avail) == TH_OK);
  CHECK(avail > 0);
  store_set_min_free(st, (int64_t)1 << 60);
  CHECK(store_min_free(st) == (int64_t)1 << 60);
  char digest[65];
  CHECK(store_artifact_put(st, src, "application/octet-stream", digest, NULL) == TH_ERR_NO_SPACE);
  CHECK(strstr(store_errmsg(st), "bytes free on") != NULL);
  CHECK(strstr(store_errmsg(st), "1152921504606846976") != NULL); /* the floor */
  CHECK(strstr(store_errmsg(st), "--min-free") != NULL);
  char path[1400];
  CHECK(store_artifact_path(st, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
                            path, sizeof path, NULL, NULL, 0) == TH_ERR_NOT_FOUND);
  snprintf(path, sizeof path,
           "%s/artifacts/ba/ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", d);
  CHECK(access(path, F_OK) != 0);
  CHECK(store_space_check(st, 0, "a build") == TH_ERR_NO_SPACE);
  store_set_min_free(st, 0);
  CHECK(store_space_check(st, 0, "a build") == TH_OK);
  CHECK(store_artifact_put(st, src, "application/octet-stream", digest, NULL) == TH_OK);
  store_close(st);
  return 0;
}

TH_TEST(recover_sweeps_orphans_and_requeues) {
  char *d = tmpdir();
  store_t *st = NULL;
  CHECK(th_test_store_open(d, &st) == TH_OK);
  char src[300];
  snprintf(src, sizeof src, "%s/src.bin", d);
  write_file(src, "kept");
  char digest[65];
  CHECK(store_artifact_put(st, src, "application/x-tar", digest, NULL) == TH_OK);
  /* a crash after the rename but before the row: a file with no row */
  char orphan_dir[400], orphan[500], tmpfile[400];
  snprintf(orphan_dir, sizeof orphan_dir, "%s/artifacts/ab", d);
  CHECK(th_mkdir_p(orphan_dir) == TH_OK);
  snprintf(orphan, sizeof orphan, "%s/ab%062d", orphan_dir, 0);
  write_file(orphan, "partial");
  /* a crash mid-copy: a temp file */
  snprintf(tmpfile, sizeof tmpfile, "%s/tmp/deadbeef.123", d);
  write_file(tmpfile, "part");
  /* a shared store's data directory may have other writers (a CLI import beside the daemon): its
   * sweep takes only files untouched for an hour, so these two are made older */
  struct timeval old[2] = {{time(NULL) - 7200, 0}, {time(NULL) - 7200, 0}};
  CHECK(utimes(orphan, old) == 0 && utimes(tmpfile, old) == 0);
  store_key k = key_of("resnet-50", 4);
  int64_t id;
  int created;
  CHECK(store_job_enqueue(st, &k, "build", "{}", 0, &id, &created) == TH_OK);
  store_job j;
  CHECK(store_job_claim(st, store_owner(st), 0, &j) == TH_OK);
  store_job_clear(&j);
  /* and a job some other process claimed (a worker elsewhere, in a shared store) */
  store_key k2 = key_of("resnet-50", 8);
  int64_t other;
  CHECK(store_job_enqueue(st, &k2, "build", "{}", 0, &other, &created) == TH_OK);
  CHECK(store_job_claim(st, "elsewhere:/data", 0, &j) == TH_OK && j.id == other);
  store_job_clear(&j);
  store_close(st); /* the process "dies" with the job running */

  CHECK(th_test_store_open(d, &st) == TH_OK);
  int requeued = -1, swept = -1;
  CHECK(store_recover(st, &requeued, &swept) == TH_OK);
  CHECK_EQ_INT(swept, 2);
  CHECK(access(orphan, F_OK) != 0);
  CHECK(access(tmpfile, F_OK) != 0);
  char path[1400];
  CHECK(store_artifact_path(st, digest, path, sizeof path, NULL, NULL, 0) == TH_OK);
  CHECK(access(path, R_OK) == 0);
  /* the embedded store is this process's alone: every running job is an orphan. A shared store's
   * running jobs belong to workers elsewhere, except those claimed under this data directory's
   * owner name */
  CHECK_EQ_INT(requeued, th_test_db() ? 1 : 2);
  CHECK(store_job_get(st, other, &j) == TH_OK);
  CHECK(j.state == (th_test_db() ? STORE_JOB_RUNNING : STORE_JOB_QUEUED));
  store_job_clear(&j);
  CHECK(store_job_get(st, id, &j) == TH_OK);
  CHECK(j.state == STORE_JOB_QUEUED);
  CHECK_EQ_INT(j.attempts, 1);
  store_job_clear(&j);
  /* the requeued job is claimable again */
  CHECK(store_job_claim(st, "w2", 0, &j) == TH_OK);
  CHECK(j.id == id);
  CHECK_EQ_INT(j.attempts, 2);
  store_job_clear(&j);
  store_close(st);
  return 0;
}

TH_TEST(claim_order_and_cancel) {
  char *d = tmpdir();
  store_t *st = NULL;
  CHECK(th_test_store_open(d, &st) == TH_OK);
  store_key a = key_of("vgg-11", 1), b = key_of("vgg-13", 1), c = key_of("vgg-16", 1);
  int64_t ia, ib, ic;
  int cr;
  CHECK(store_job_enqueue(st, &a, "build", "{}", 0, &ia, &cr) == TH_OK);
  CHECK(store_job_enqueue(st, &b, "build", "{}", 5, &ib, &cr) == TH_OK);
  CHECK(store_job_enqueue(st, &c, "build", "{}", 0, &ic, &cr) == TH_OK);
  CHECK(store_job_cancel(st, ic) == TH_OK); /* queued: ends at once */
  store_job j;
  CHECK(store_job_get(st, ic, &j) == TH_OK);
  CHECK(j.state == STORE_JOB_CANCELLED);
  store_job_clear(&j);
  CHECK(store_job_cancel(st, ic) == TH_ERR_CONFLICT);
  CHECK(store_job_claim(st, "w", 0, &j) == TH_OK); /* priority first */
  CHECK(j.id == ib);
  store_job_clear(&j);
  CHECK(store_job_cancel(st, ib) == TH_OK); /* running: a request */
  CHECK(store_job_cancel_requested(st, ib) == 1);
  CHECK(store_job_claim(st, "w", 0, &j) == TH_OK);
  CHECK(j.id == ia);
  store_job_clear(&j);
  CHECK(store_job_claim(st, "w", 0, &j) == TH_ERR_NOT_FOUND);
  CHECK(store_job_progress(st, ia, 0, "build", "{\"fraction\":0.5}") == TH_OK);
  CHECK(store_job_finish(st, ia, 0, STORE_JOB_FAILED, "boom: the network did not compile") == TH_OK);
  CHECK(store_job_get(st, ia, &j) == TH_OK);
  CHECK(j.state == STORE_JOB_FAILED);
  CHECK_STR(j.error, "boom: the network did not compile");
  CHECK_STR(j.progress, "{\"fraction\":0.5}");
  store_job_clear(&j);
  store_job *jobs = NULL;
  size_t njobs = 0;
  CHECK(store_job_list(st, NULL, 10, &jobs, &njobs) == TH_OK);
  CHECK_EQ_INT(njobs, 3);
  store_job_list_free(jobs, njobs);
  store_close(st);
  return 0;
}

TH_TEST(models_versions_and_catalog) {
  char *d = tmpdir();
  store_t *st = NULL;
  CHECK(th_test_store_open(d, &st) == TH_OK);
  char src[300], so[300];
  snprintf(src, sizeof src, "%s/a.tar", d);
  snprintf(so, sizeof so, "%s/a.so", d);
  write_file(src, "tar-bytes");
  write_file(so, "so-bytes");
  char td[65], sd[65];
  CHECK(store_artifact_put(st, src, "application/x-tar", td, NULL) == TH_OK);
  CHECK(store_artifact_put(st, so, "application/x-sharedlib", sd, NULL) == TH_OK);
  store_key k = key_of("resnet-18", 1);
  store_model m;
  CHECK(store_model_get(st, &k, 0, &m) == TH_ERR_NOT_FOUND);
  int v = 0;
  CHECK(store_model_publish(st, &k, 0, td, sd, "{\"v\":1}", 12.5, 0, 0, &v) == TH_OK);
  CHECK_EQ_INT(v, 1);
  CHECK(store_model_get(st, &k, 1, &m) == TH_ERR_NOT_FOUND); /* no tuned version yet */
  CHECK(store_model_publish(st, &k, 1, td, sd, "{\"v\":2}", 10.0, 0, 0, &v) == TH_OK);
  CHECK_EQ_INT(v, 2);
  CHECK(store_model_get(st, &k, 0, &m) == TH_OK);
  CHECK_EQ_INT(m.version, 2);
  CHECK_EQ_INT(m.tar_size, 9);
  CHECK_STR(m.manifest, "{\"v\":2}");
  store_model_clear(&m);
  store_catalog_row *rows = NULL;
  size_t n = 0;
  CHECK(store_catalog(st, NULL, NULL, NULL, &rows, &n) == TH_OK);
  CHECK_EQ_INT(n, 1);
  CHECK(rows[0].state == STORE_CATALOG_READY && rows[0].has_model && rows[0].model.version == 2);
  CHECK_EQ_INT(rows[0].versions, 2);
  store_catalog_free(rows, n);
  /* every version, oldest first, for the latency-per-version chart */
  store_model *vs = NULL;
  CHECK(store_model_versions(st, &k, &vs, &n) == TH_OK);
  CHECK_EQ_INT(n, 2);
  CHECK(vs[0].version == 1 && vs[1].version == 2);
  CHECK(vs[0].latency_ms == 12.5 && !vs[0].tuned && vs[1].tuned);
  CHECK(vs[0].manifest == NULL && vs[0].tar_size == 9);
  store_model_list_free(vs, n);
  store_key none = key_of("vgg-19", 3);
  CHECK(store_model_versions(st, &none, &vs, &n) == TH_ERR_NOT_FOUND);
  /* a building key shows up as building */
  store_key k2 = key_of("vgg-11", 1);
  int64_t id;
  int cr;
  CHECK(store_job_enqueue(st, &k2, "build", "{}", 0, &id, &cr) == TH_OK);
  CHECK(store_catalog(st, NULL, NULL, "building", &rows, &n) == TH_OK);
  CHECK_EQ_INT(n, 1);
  CHECK(!strcmp(rows[0].key.network, "vgg-11") && rows[0].state == STORE_CATALOG_BUILDING);
  CHECK(rows[0].has_job && rows[0].job_id == id && rows[0].job_state == STORE_JOB_QUEUED && !rows[0].has_model);
  store_catalog_free(rows, n);
  int deleted = 0;
  CHECK(store_model_delete(st, &k, &deleted) == TH_OK);
  CHECK_EQ_INT(deleted, 2);
  CHECK(store_model_get(st, &k, 0, &m) == TH_ERR_NOT_FOUND);
  store_close(st);
  return 0;
}

static int count_cb(void *ctx, const store_record *r) {
  (void)r;
  (*(int *)ctx)++;
  return 0;
}

TH_TEST(records_best_and_persist) {
  char *d = tmpdir();
  store_t *st = NULL;
  CHECK(th_test_store_open(d, &st) == TH_OK);
  store_record r;
  memset(&r, 0, sizeof r);
  snprintf(r.workload_key, sizeof r.workload_key, "conv2d_nchwc n1 c64");
  snprintf(r.template_name, sizeof r.template_name, "conv2d_nchwc");
  snprintf(r.target, sizeof r.target, "llvm -mcpu=test");
  snprintf(r.tuner, sizeof r.tuner, "xgb");
  double costs[] = {3e-3, 1e-3, 2e-3, 1e9};
  int errs[] = {0, 0, 0, 4};
  for (int i = 0; i < 4; i++) {
    snprintf(r.config, sizeof r.config, "[[\"tile\",\"sp\",[%d]]]", i);
    r.config_index = i;
    r.cost_mean_s = costs[i];
    r.error_class = errs[i];
    CHECK(store_record_add(st, &r) == TH_OK);
  }
  store_close(st);
  CHECK(th_test_store_open(d, &st) == TH_OK);
  store_record best;
  CHECK(store_record_best(st, "conv2d_nchwc n1 c64", "llvm -mcpu=test", &best) == TH_OK);
  CHECK_EQ_INT(best.config_index, 1);
  CHECK(store_record_best(st, "conv2d_nchwc n1 c64", "other", &best) == TH_ERR_NOT_FOUND);
  int n = 0;
  CHECK(store_record_each(st, "conv2d_nchwc", "llvm -mcpu=test", count_cb, &n) == TH_OK);
  CHECK_EQ_INT(n, 4);
  int64_t cnt = 0;
  CHECK(store_record_count(st, "conv2d_nchwc n1 c64", "llvm -mcpu=test", &cnt) == TH_OK);
  CHECK_EQ_INT(cnt, 4);
  /* the trial history behind the tuning curve: in order, failed trials as 0 */
  for (int i = 0; i < 4; i++) {
    r.config_index = 10 + i;
    r.cost_mean_s = costs[i];
    r.error_class = errs[i];
    r.gflops = errs[i] ? 99.0 : 1e-9 / costs[i];
    snprintf(r.config, sizeof r.config, "[[\"tile\",\"sp\",[%d]]]", 10 + i);
    CHECK(store_record_add(st, &r) == TH_OK);
  }
  double *g = NULL;
  CHECK(store_record_gflops(st, "conv2d_nchwc n1 c64", "llvm -mcpu=test", &g, &cnt) == TH_OK);
  CHECK_EQ_INT(cnt, 8);
  CHECK(g[4] > 0 && g[5] > g[4] && g[7] == 0.0);
  free(g);
  CHECK(store_record_gflops(st, "conv2d_nchwc n1 c64", "other", &g, &cnt) == TH_OK);
  CHECK(cnt == 0 && g == NULL);
  store_close(st);
  return 0;
}

/* store_record_select and store_record_import, the two halves of `tunehub records export / import`. */
typedef struct rec_list {
  store_record r[32];
  int n;
} rec_list;

static int rec_list_cb(void *ctx, const store_record *r) {
  rec_list *l = ctx;
  CHECK(l->n < 32);
  l->r[l->n++] = *r;
  return 0;
}

static store_record rec_of(const char *wl, const char *target, const char *tuner, int index, double cost,
                           int error_class, double created_at) {
  store_record r;
  memset(&r, 0, sizeof r);
  snprintf(r.workload_key, sizeof r.workload_key, "conv2d_nchwc %s", wl);
  snprintf(r.template_name, sizeof r.template_name, "conv2d_nchwc");
  snprintf(r.target, sizeof r.target, "%s", target);
  snprintf(r.tuner, sizeof r.tuner, "%s", tuner);
  snprintf(r.config, sizeof r.config, "[[\"tile\",\"sp\",[%d]]]", index);
  r.config_index = index;
  r.cost_mean_s = cost;
  r.error_class = error_class;
  r.gflops = error_class ? 0 : 1e-3 / cost;
  r.created_at = created_at;
  return r;
}

TH_TEST(records_select_best_and_import) {
  char *d = tmpdir(), *d2 = tmpdir();
  store_t *st = NULL, *st2 = NULL;
  CHECK(th_test_store_open(d, &st) == TH_OK);
  const char *gpu = "cuda -arch=sm_90", *cpu = "llvm -mcpu=test";
  /* workload a on the GPU: the fastest trial (1 ms) loses to the latest verification's fastest (3 ms), as in
   * store_record_best; an older verification (0.5 ms) and a failed trial (0 s) lose too */
  store_record in[] = {
      rec_of("a", gpu, "xgb", 1, 1e-3, 0, 100), rec_of("a", gpu, "xgb", 2, 0, 4, 101),
      rec_of("a", gpu, STORE_TUNER_VERIFY, 3, 0.5e-3, 0, 150), rec_of("a", gpu, STORE_TUNER_VERIFY, 4, 4e-3, 0, 200),
      rec_of("a", gpu, STORE_TUNER_VERIFY, 5, 3e-3, 0, 200),
      /* workload b on the GPU: trials only; on the CPU: one trial, and one that failed only */
      rec_of("b", gpu, "xgb", 6, 2e-3, 0, 100), rec_of("b", gpu, "ga", 7, 1.5e-3, 0, 110),
      rec_of("b", cpu, "xgb", 8, 9e-3, 0, 100), rec_of("c", cpu, "xgb", 9, 1e9, 4, 100)};
  int nin = (int)(sizeof in / sizeof in[0]);
  for (int i = 0; i < nin; i++) CHECK(store_record_add(st, &in[i]) == TH_OK);

  rec_list all = {.n = 0};
  CHECK(store_record_select(st, NULL, rec_list_cb, &all) == TH_OK);
  CHECK_EQ_INT(all.n, nin);
  for (int i = 0; i < nin; i++) CHECK_EQ_INT(all.r[i].config_index, i + 1); /* oldest first */
  /* --best: one record per (workload, target) with a valid one, the one a build applies */
  rec_list best = {.n = 0};
  store_record_query q = {NULL, NULL, 1};
  CHECK(store_record_select(st, &q, rec_list_cb, &best) == TH_OK);
  CHECK_EQ_INT(best.n, 3);
  for (int i = 0; i < best.n; i++) {
    store_record b;
    CHECK(store_record_best(st, best.r[i].workload_key, best.r[i].target, &b) == TH_OK);
    CHECK_EQ_INT(best.r[i].config_index, b.config_index);
  }
  CHECK_EQ_INT(best.r[0].config_index, 5);
  CHECK_EQ_INT(best.r[1].config_index, 7);
  CHECK_EQ_INT(best.r[2].config_index, 8);
  /* one target; a framework's targets */
  rec_list some = {.n = 0};
  store_record_query qt = {gpu, NULL, 0}, qp = {NULL, "llvm ", 0};
  CHECK(store_record_select(st, &qt, rec_list_cb, &some) == TH_OK);
  CHECK_EQ_INT(some.n, 7);
  some.n = 0;
  CHECK(store_record_select(st, &qp, rec_list_cb, &some) == TH_OK);
  CHECK_EQ_INT(some.n, 2);
  CHECK(!strcmp(some.r[0].target, cpu));

  /* importing what the store holds adds nothing; a record that differs in its cost only is another
   * measurement, added once */
  int64_t added = -1;
  CHECK(store_record_import(st, all.r, (size_t)all.n, &added) == TH_OK);
  CHECK_EQ_INT(added, 0);
  store_record again[2] = {all.r[0], all.r[0]};
  again[0].cost_mean_s *= 2;
  again[1].cost_mean_s *= 2; /* the same twice in one import: once */
  CHECK(store_record_import(st, again, 2, &added) == TH_OK);
  CHECK_EQ_INT(added, 1);
  CHECK(store_record_import(st, again, 2, &added) == TH_OK);
  CHECK_EQ_INT(added, 0);
  /* into an empty store (on SQLite: a PostgreSQL twin has one database per case): everything once, nothing
   * the second time, and the same best records, times kept */
  if (!th_test_db()) {
    CHECK(th_test_store_open(d2, &st2) == TH_OK);
    CHECK(store_record_import(st2, all.r, (size_t)all.n, &added) == TH_OK);
    CHECK_EQ_INT(added, nin);
    CHECK(store_record_import(st2, all.r, (size_t)all.n, &added) == TH_OK);
    CHECK_EQ_INT(added, 0);
    rec_list best2 = {.n = 0};
    CHECK(store_record_select(st2, &q, rec_list_cb, &best2) == TH_OK);
    CHECK_EQ_INT(best2.n, best.n);
    for (int i = 0; i < best.n; i++) {
      CHECK(!strcmp(best2.r[i].config, best.r[i].config));
      CHECK(best2.r[i].cost_mean_s == best.r[i].cost_mean_s && best2.r[i].created_at == best.r[i].created_at);
      CHECK(best2.r[i].job_id == 0);
    }
  }
  store_close(st2);
  store_close(st);
  return 0;
}

/* ---- fault injection and observation ---- */

/* A store in a new temporary directory (*dir) holding one artifact with the bytes text (*digest). */
static store_t *store_with_artifact(char **dir, const char *text, char digest[65]) {
  *dir = tmpdir();
  store_t *st = NULL;
  CHECK(th_test_store_open(*dir, &st) == TH_OK);
  char src[300];
  snprintf(src, sizeof src, "%s/src.bin", *dir);
  write_file(src, text);
  CHECK(store_artifact_put(st, src, "application/x-tar", digest, NULL) == TH_OK);
  return st;
}

/* fsync and fdatasync as seen by the store and by SQLite: this executable's definitions interpose on libc's for
 * every caller in the process (libsqlite3 included), and while sync_recording is set they note the path of each
 * file or directory synced. */
static pthread_mutex_t sync_mu = PTHREAD_MUTEX_INITIALIZER;
static int sync_recording;
static char sync_paths[64][PATH_MAX];
static int sync_n;

static void sync_note(int fd) {
  pthread_mutex_lock(&sync_mu);
  if (sync_recording && sync_n < 64) {
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, sync_paths[sync_n], PATH_MAX - 1);
    sync_paths[sync_n][n > 0 ? n : 0] = '\0';
    sync_n++;
  }
  pthread_mutex_unlock(&sync_mu);
}

int fsync(int fd) {
  sync_note(fd);
  return (int)syscall(SYS_fsync, fd);
}

int fdatasync(int fd) {
  sync_note(fd);
  return (int)syscall(SYS_fdatasync, fd);
}

static void sync_record(int on) {
  pthread_mutex_lock(&sync_mu);
  sync_recording = on;
  if (on) sync_n = 0;
  pthread_mutex_unlock(&sync_mu);
}

/* 1 when a recorded sync was of exactly path (a path with symlinks resolved, as /proc shows it). */
static int synced(const char *path) {
  char real[PATH_MAX];
  if (!realpath(path, real)) return 0;
  for (int i = 0; i < sync_n; i++)
    if (!strcmp(sync_paths[i], real)) return 1;
  return 0;
}

/* Corrupts the b-tree named name (a table or an index) in the database of a closed store: its root page gets an
 * invalid page type, so every later statement that reads it fails with SQLITE_CORRUPT, as a bad disk block
 * would make it. The page is found with a connection of its own, which checkpoints the WAL into the file. */
static void corrupt_btree(const char *dir, const char *name) {
  char db[400];
  snprintf(db, sizeof db, "%s/tunehub.db", dir);
  sqlite3 *h = NULL;
  CHECK(sqlite3_open_v2(db, &h, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK);
  CHECK(sqlite3_exec(h, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL) == SQLITE_OK);
  sqlite3_stmt *s = NULL;
  CHECK(sqlite3_prepare_v2(h,
                           "SELECT rootpage, (SELECT page_size FROM pragma_page_size) FROM sqlite_master "
                           "WHERE name = ?",
                           -1, &s, NULL) == SQLITE_OK);
  sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
  CHECK(sqlite3_step(s) == SQLITE_ROW);
  int64_t root = sqlite3_column_int64(s, 0), page = sqlite3_column_int64(s, 1);
  sqlite3_finalize(s);
  CHECK(sqlite3_close(h) == SQLITE_OK);
  CHECK(root > 1 && page >= 512);
  int fd = open(db, O_WRONLY);
  CHECK(fd >= 0);
  CHECK(pwrite(fd, "\xff", 1, (off_t)((root - 1) * page)) == 1);
  close(fd);
}

/* ---- issue 22, defect 4: the orphan sweep never deletes on a database error ---- */

TH_TEST(recover_keeps_artifacts_when_db_fails) {
  TH_SQLITE_ONLY("it corrupts a b-tree page of the SQLite file");
  char *d, digest[65];
  store_t *st = store_with_artifact(&d, "published bytes", digest);
  char published[1400];
  CHECK(store_artifact_path(st, digest, published, sizeof published, NULL, NULL, 0) == TH_OK);
  store_close(st);
  /* the artifacts' digest index now fails every look-up, as a bad block under it would */
  corrupt_btree(d, "sqlite_autoindex_artifacts_1");
  CHECK(th_test_store_open(d, &st) == TH_OK);
  int requeued = -1, swept = -1;
  th_status rc = store_recover(st, &requeued, &swept);
  CHECK(rc == TH_ERR_DB);
  CHECK(strstr(store_errmsg(st), "orphan sweep") != NULL);
  CHECK(requeued == -1 && swept == -1); /* nothing written on an error */
  CHECK(access(published, R_OK) == 0); /* the published artifact is still there */
  char *text = NULL;
  CHECK(th_read_file(published, 100, &text, NULL) == TH_OK);
  CHECK_STR(text, "published bytes");
  free(text);
  store_close(st);
  return 0;
}

/* ---- issue 22, defect 6: job counts (behind /readyz) report a failing store ---- */

TH_TEST(job_counts_report_db_errors) {
  TH_SQLITE_ONLY("it corrupts a b-tree page of the SQLite file");
  char *d = tmpdir();
  store_t *st = NULL;
  CHECK(th_test_store_open(d, &st) == TH_OK);
  store_key k = key_of("resnet-18", 1);
  int64_t id;
  int created;
  CHECK(store_job_enqueue(st, &k, "build", "{}", 0, &id, &created) == TH_OK);
  int64_t counts[5];
  CHECK(store_job_counts(st, counts) == TH_OK);
  CHECK_EQ_INT(counts[STORE_JOB_QUEUED], 1);
  store_close(st);
  corrupt_btree(d, "jobs_state"); /* the index the count reads */
  CHECK(th_test_store_open(d, &st) == TH_OK);
  int64_t before[5] = {7, 7, 7, 7, 7};
  memcpy(counts, before, sizeof counts);
  CHECK(store_job_counts(st, counts) == TH_ERR_DB);
  CHECK(strstr(store_errmsg(st), "count jobs") != NULL);
  CHECK(memcmp(counts, before, sizeof counts) == 0); /* not zeros passed off as an answer */
  int64_t queued = -1;
  CHECK(store_job_count_queued(st, &queued) == TH_ERR_DB);
  CHECK_EQ_INT(queued, -1);
  store_close(st);
  return 0;
}

/* ---- issue 22, defect 5: the queue limit is one atomic step ---- */

#define LIMIT_THREADS 16
#define LIMIT_MAX 4

typedef struct {
  store_t *st;
  pthread_barrier_t *go;
  int round, index;
  th_status rc;
  int created;
} limit_arg;

static void *limit_thread(void *p) {
  limit_arg *a = p;
  char net[64];
  snprintf(net, sizeof net, "net-%d-%d", a->round, a->index);
  store_key k = key_of(net, 1);
  int64_t id = 0;
  pthread_barrier_wait(a->go);
  a->rc = store_job_enqueue_limited(a->st, &k, "build", "{}", 0, LIMIT_MAX, &id, &a->created);
  return NULL;
}

TH_TEST(queue_limit_holds_under_16_threads) {
  char *d = tmpdir();
  store_t *st = NULL;
  CHECK(th_test_store_open(d, &st) == TH_OK);
  for (int round = 0; round < 20; round++) {
    pthread_barrier_t go;
    CHECK(pthread_barrier_init(&go, NULL, LIMIT_THREADS) == 0);
    pthread_t t[LIMIT_THREADS];
    limit_arg a[LIMIT_THREADS];
    for (int i = 0; i < LIMIT_THREADS; i++) {
      a[i] = (limit_arg){.st = st, .go = &go, .round = round, .index = i, .rc = TH_ERR_INTERNAL};
      CHECK(pthread_create(&t[i], NULL, limit_thread, &a[i]) == 0);
    }
    int created = 0, full = 0;
    for (int i = 0; i < LIMIT_THREADS; i++) {
      pthread_join(t[i], NULL);
      CHECK(a[i].rc == TH_OK || a[i].rc == TH_ERR_BUSY);
      created += a[i].rc == TH_OK && a[i].created;
      full += a[i].rc == TH_ERR_BUSY;
    }
    pthread_barrier_destroy(&go);
    int64_t queued = 0;
    CHECK(store_job_count_queued(st, &queued) == TH_OK);
    if (queued != LIMIT_MAX) fprintf(stderr, "round %d: %lld queued\n", round, (long long)queued);
    CHECK_EQ_INT(queued, LIMIT_MAX); /* never more than the limit, and the limit is reached */
    CHECK_EQ_INT(created, LIMIT_MAX);
    CHECK_EQ_INT(full, LIMIT_THREADS - LIMIT_MAX);
    /* empty the queue for the next round */
    store_job *jobs = NULL;
    size_t n = 0;
    CHECK(store_job_list(st, "queued", 100, &jobs, &n) == TH_OK);
    for (size_t i = 0; i < n; i++) CHECK(store_job_cancel(st, jobs[i].id) == TH_OK);
    store_job_list_free(jobs, n);
  }
  /* a full queue still answers a key that has a live job with that job */
  store_key k = key_of("live", 1), other = key_of("other", 1);
  int64_t live = 0, id = 0;
  int created = 0;
  CHECK(store_job_enqueue_limited(st, &k, "build", "{}", 0, 1, &live, &created) == TH_OK && created == 1);
  CHECK(store_job_enqueue_limited(st, &other, "build", "{}", 0, 1, &id, &created) == TH_ERR_BUSY);
  CHECK(strstr(store_errmsg(st), "1 jobs are queued (the limit is 1)") != NULL);
  CHECK(store_job_enqueue_limited(st, &k, "build", "{}", 0, 1, &id, &created) == TH_OK);
  CHECK(id == live && created == 0);
  store_close(st);
  return 0;
}

TH_TEST(queue_limit_count_error_is_an_error) {
  TH_SQLITE_ONLY("it corrupts a b-tree page of the SQLite file");
  char *d = tmpdir();
  store_t *st = NULL;
  CHECK(th_test_store_open(d, &st) == TH_OK);
  store_close(st);
  corrupt_btree(d, "jobs_state"); /* the count fails; the live-job look-up (jobs_live_key) still works */
  CHECK(th_test_store_open(d, &st) == TH_OK);
  store_key k = key_of("resnet-18", 1);
  int64_t id = -1;
  int created = -1;
  CHECK(store_job_enqueue_limited(st, &k, "build", "{}", 0, 8, &id, &created) == TH_ERR_DB);
  CHECK(strstr(store_errmsg(st), "count queued jobs") != NULL);
  CHECK(id == -1 && created == -1);
  store_close(st);
  /* nothing was queued: the look-up by key reads jobs_live_key, which is intact */
  CHECK(th_test_store_open(d, &st) == TH_OK);
  store_job j;
  CHECK(store_job_latest(st, &k, &j) == TH_ERR_NOT_FOUND);
  store_close(st);
  return 0;
}

/* ---- issue 22, defect 8: durability of publish ---- */

TH_TEST(artifact_put_replaces_corrupt_same_size_file) {
  char *d, digest[65];
  store_t *st = store_with_artifact(&d, "the right bytes", digest);
  char src[300];
  snprintf(src, sizeof src, "%s/src.bin", d);
  char path[1400];
  CHECK(store_artifact_path(st, digest, path, sizeof path, NULL, NULL, 0) == TH_OK);
  /* a torn or corrupted file of the same size at the artifact's path */
  CHECK(chmod(path, 0644) == 0);
  write_file(path, "the wrong bytes");
  CHECK(store_artifact_put(st, src, "application/x-tar", digest, NULL) == TH_OK);
  char *text = NULL;
  CHECK(th_read_file(path, 100, &text, NULL) == TH_OK);
  CHECK_STR(text, "the right bytes");
  free(text);
  store_close(st);
  return 0;
}

TH_TEST(artifact_put_syncs_new_shard_dir) {
  char *d = tmpdir();
  store_t *st = NULL;
  CHECK(th_test_store_open(d, &st) == TH_OK);
  char src[300];
  snprintf(src, sizeof src, "%s/src.bin", d);
  write_file(src, "abc"); /* sha256 ba7816bf...: shard artifacts/ba/, new */
  char digest[65];
  sync_record(1);
  CHECK(store_artifact_put(st, src, "application/octet-stream", digest, NULL) == TH_OK);
  sync_record(0);
  char shard[400], artifacts[400];
  snprintf(artifacts, sizeof artifacts, "%s/artifacts", d);
  snprintf(shard, sizeof shard, "%s/artifacts/ba", d);
  CHECK(synced(shard));     /* the rename's entry */
  CHECK(synced(artifacts)); /* the new shard's entry */
  store_close(st);
  return 0;
}

TH_TEST(publish_commit_is_synced) {
  TH_SQLITE_ONLY("it observes the fsync of SQLite's WAL file (synchronous = FULL)");
  char *d, td[65];
  store_t *st = store_with_artifact(&d, "tar-bytes", td);
  store_key k = key_of("resnet-18", 1);
  int v = 0;
  char wal[400];
  snprintf(wal, sizeof wal, "%s/tunehub.db-wal", d);
  sync_record(1);
  CHECK(store_model_publish(st, &k, 0, td, td, "{}", 1.0, 0, 0, &v) == TH_OK);
  sync_record(0);
  CHECK(synced(wal)); /* synchronous = FULL: the commit is on disk when the publish returns */
  /* the frequent writes stay at NORMAL: no sync of the WAL at their commit */
  sync_record(1);
  int64_t id;
  int created;
  CHECK(store_job_enqueue(st, &k, "build", "{}", 0, &id, &created) == TH_OK);
  sync_record(0);
  CHECK(!synced(wal));
  store_close(st);
  return 0;
}

/* ---- networks (uploaded ONNX files) ---- */

/* The first migration's text from schema.sql (what a tunehub before the networks migration created). */
/* schema.sql up to (not including) migration `next`: the schema as version next - 1 left it (malloc'd). */
static char *schema_before(int next) {
  char *text = NULL, marker[32];
  CHECK(th_read_file(TH_SCHEMA_PATH, 1 << 20, &text, NULL) == TH_OK);
  snprintf(marker, sizeof marker, "-- migration %d\n", next);
  char *m = strstr(text, marker);
  CHECK(m != NULL);
  *m = '\0';
  return text;
}

/* The case's database in d as schema version `version` left it, written through the db layer (which reads the
 * schema's markers); the caller adds rows and closes the handle. */
static db_t *db_at_version(const char *d, int version) {
  char db[300], err[512];
  snprintf(db, sizeof db, "%s/tunehub.db", d);
  db_t *h = NULL;
  CHECK(db_open(th_test_db() ? th_test_db() : db, &h, err, sizeof err) == TH_OK);
  char *old = schema_before(version + 1);
  CHECK(db_exec(h, old) == TH_OK);
  free(old);
  CHECK(db_set_schema_version(h, version) == TH_OK);
  return h;
}

TH_TEST(migration_from_v1_keeps_rows) {
  char *d = tmpdir();
  db_t *h = db_at_version(d, 1);
  CHECK(db_exec(h,
                "INSERT INTO networks VALUES ('resnet-18', '[1,3,224,224]', 1.8e9, 11689512, 1.0);"
                "INSERT INTO artifacts VALUES ('aa', 3, 'application/x-tar', 1.0);"
                "INSERT INTO models (framework, network, batch, target, compiler_version, version, state, "
                "tar_digest, so_digest, manifest, created_at) VALUES ('llvm', 'resnet-18', 1, "
                "'llvm -mcpu=test', '0.1.0', 1, 'ready', 'aa', 'aa', '{}', 1.0);"
                "INSERT INTO jobs (framework, network, batch, target, compiler_version, state, created_at) "
                "VALUES ('llvm', 'vgg-11', 1, 'llvm -mcpu=test', '0.1.0', 'queued', 1.0);") == TH_OK);
  db_close(h);
  store_t *st = NULL;
  CHECK(th_test_store_open(d, &st) == TH_OK);
  /* the old rows are zoo rows of revision '' */
  store_key k = key_of("resnet-18", 1);
  store_model m;
  CHECK(store_model_get(st, &k, 0, &m) == TH_OK);
  CHECK_EQ_INT(m.version, 1);
  store_model_clear(&m);
  store_network n;
  CHECK(store_network_get(st, "resnet-18", &n) == TH_OK);
  CHECK(!n.onnx && n.digest[0] == '\0' && n.version == 1 && n.params == 11689512);
  store_network_clear(&n);
  /* single-flight still holds on the queued job, under the new index */
  store_key kj = key_of("vgg-11", 1);
  int64_t id = 0;
  int created = 1;
  CHECK(store_job_enqueue(st, &kj, "build", "{}", 0, &id, &created) == TH_OK);
  CHECK(id == 1 && created == 0);
  store_job j;
  CHECK(store_job_get(st, 1, &j) == TH_OK);
  CHECK(j.key.net_digest[0] == '\0');
  store_job_clear(&j);
  store_close(st);
  CHECK_EQ_INT(schema_version(d), schema_latest());
  return 0;
}

static int file_exists(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0;
}

/* sha256 hex of a file's bytes. */
static void sha_of(const char *path, char hex[65]) {
  int64_t sz;
  CHECK(th_sha256_file(path, hex, &sz) == TH_OK);
}

static store_network_upload upload_of(const char *name, const char *path, const char *shapes) {
  store_network_upload up;
  memset(&up, 0, sizeof up);
  up.name = name;
  up.path = path;
  up.shapes = shapes;
  up.description = "{\"ops\":[\"Conv\"]}";
  up.input_shape = "[1,3,8,8]";
  up.flops = 1000;
  up.params = 42;
  return up;
}

/* A tar artifact in st for models to point at (its digest into td); d is the store's directory. */
static void tar_artifact(store_t *st, const char *d, char td[65]) {
  char tar[300];
  snprintf(tar, sizeof tar, "%s/x.tar", d);
  write_file(tar, "tar");
  CHECK(store_artifact_put(st, tar, "application/x-tar", td, NULL) == TH_OK);
}

TH_TEST(network_put_versions_and_delete) {
  char *d = tmpdir();
  store_t *st = NULL;
  CHECK(th_test_store_open(d, &st) == TH_OK);
  CHECK(store_network_upsert(st, "resnet-18", "[1,3,224,224]", 1.8e9, 11689512) == TH_OK);
  char a[300], b[300];
  snprintf(a, sizeof a, "%s/a.onnx", d);
  snprintf(b, sizeof b, "%s/b.onnx", d);
  write_file(a, "onnx-bytes-A");
  write_file(b, "onnx-bytes-B");
  char ha[65], hb[65];
  sha_of(a, ha);
  sha_of(b, hb);
  store_network_upload up = upload_of("tiny", a, NULL);
  store_network n;
  store_network_change ch;
  CHECK(store_network_put(st, &up, &n, &ch) == TH_OK);
  CHECK_EQ_INT(ch.changed, 1);
  CHECK(ch.njobs == 0 && ch.jobs == NULL);
  CHECK(n.onnx && n.version == 1 && n.onnx_size == 12 && n.params == 42);
  CHECK_STR(n.digest, ha); /* no shapes: the revision is the file's digest */
  CHECK_STR(n.onnx_digest, ha);
  CHECK_STR(n.description, "{\"ops\":[\"Conv\"]}");
  CHECK(n.shapes == NULL);
  char want[1300];
  snprintf(want, sizeof want, "%s/artifacts/%.2s/%s", d, ha, ha);
  CHECK_STR(n.onnx_path, want);
  CHECK(file_exists(want) && file_exists(a)); /* copied, the source stays */
  store_network_clear(&n);
  /* the same bytes again change nothing */
  CHECK(store_network_put(st, &up, &n, &ch) == TH_OK);
  CHECK(ch.changed == 0 && n.version == 1);
  store_network_clear(&n);
  /* a zoo name is refused */
  store_network_upload zoo = upload_of("resnet-18", a, NULL);
  CHECK(store_network_put(st, &zoo, NULL, NULL) == TH_ERR_CONFLICT);
  CHECK(strstr(store_errmsg(st), "zoo") != NULL);
  /* a job for the first revision, then other bytes: a new version, the job cancelled, the old file gone */
  store_key k = key_of("tiny", 1);
  snprintf(k.net_digest, sizeof k.net_digest, "%s", ha);
  int64_t job = 0;
  int created = 0;
  CHECK(store_job_enqueue(st, &k, "build", "{}", 0, &job, &created) == TH_OK);
  /* the upload is a file the caller streamed into the store's scratch directory: it is taken, not copied */
  char tmp[1400];
  int fd = -1;
  CHECK(store_tmp_file(st, "upload", tmp, sizeof tmp, &fd) == TH_OK);
  CHECK(write(fd, "onnx-bytes-B", 12) == 12);
  close(fd);
  store_network_upload up2 = upload_of("tiny", tmp, NULL);
  up2.take = 1;
  up2.sha256 = hb;
  CHECK(store_network_put(st, &up2, &n, &ch) == TH_OK);
  CHECK(ch.changed == 2 && n.version == 2);
  CHECK_STR(n.digest, hb);
  CHECK(ch.njobs == 1 && ch.jobs[0] == job);
  free(ch.jobs);
  CHECK(!file_exists(tmp) && file_exists(n.onnx_path));
  CHECK(!file_exists(want)); /* no network has the old bytes */
  char path[1400];
  CHECK(store_artifact_path(st, ha, path, sizeof path, NULL, NULL, 0) == TH_ERR_NOT_FOUND);
  store_network_clear(&n);
  store_job j;
  CHECK(store_job_get(st, job, &j) == TH_OK);
  CHECK(j.state == STORE_JOB_CANCELLED && strstr(j.error, "replaced by version 2"));
  store_job_clear(&j);
  /* the list holds both sources, or one */
  store_network *list = NULL;
  size_t cnt = 0;
  CHECK(store_network_list(st, "onnx", &list, &cnt) == TH_OK);
  CHECK(cnt == 1 && !strcmp(list[0].name, "tiny"));
  store_network_list_free(list, cnt);
  CHECK(store_network_list(st, NULL, &list, &cnt) == TH_OK);
  CHECK(cnt == 2 && !strcmp(list[0].name, "resnet-18") && !list[0].onnx && list[1].onnx);
  store_network_list_free(list, cnt);
  /* the zoo refresh never overwrites an upload of the same name */
  CHECK(store_network_upsert(st, "tiny", "[1]", 1, 1) == TH_OK);
  CHECK(store_network_get(st, "tiny", &n) == TH_OK);
  CHECK(n.onnx && n.params == 42);
  char file_b[sizeof n.onnx_path];
  snprintf(file_b, sizeof file_b, "%s", n.onnx_path);
  store_network_clear(&n);
  /* delete: its models marked deleted, a running job asked to stop, the row and the file gone */
  char td[65];
  tar_artifact(st, d, td);
  store_key kb = key_of("tiny", 1);
  snprintf(kb.net_digest, sizeof kb.net_digest, "%s", hb);
  int v = 0;
  CHECK(store_model_publish(st, &kb, 0, td, td, "{}", 1.0, 0, 0, &v) == TH_OK);
  CHECK(store_job_enqueue(st, &kb, "tune", "{}", 0, &job, &created) == TH_OK && created);
  store_job running;
  CHECK(store_job_claim(st, "w", 0, &running) == TH_OK && running.id == job);
  store_job_clear(&running);
  CHECK(store_network_delete(st, "resnet-18", NULL) == TH_ERR_CONFLICT);
  CHECK(store_network_delete(st, "tiny", &ch) == TH_OK);
  CHECK(ch.models == 1 && ch.njobs == 1 && ch.jobs[0] == job);
  free(ch.jobs);
  CHECK(store_job_cancel_requested(st, job));
  store_model m;
  CHECK(store_model_get(st, &kb, 0, &m) == TH_ERR_NOT_FOUND);
  CHECK(store_network_get(st, "tiny", &n) == TH_ERR_NOT_FOUND);
  CHECK(!file_exists(file_b));
  CHECK(store_network_delete(st, "tiny", NULL) == TH_ERR_NOT_FOUND);
  store_close(st);
  return 0;
}

TH_TEST(network_revision_keys_models) {
  char *d = tmpdir();
  store_t *st = NULL;
  CHECK(th_test_store_open(d, &st) == TH_OK);
  char a[300];
  snprintf(a, sizeof a, "%s/a.onnx", d);
  write_file(a, "onnx-A");
  char td[65];
  tar_artifact(st, d, td);
  store_network_upload up = upload_of("net1", a, NULL);
  store_network n1, n2;
  CHECK(store_network_put(st, &up, &n1, NULL) == TH_OK);
  store_key k1 = key_of("net1", 1);
  snprintf(k1.net_digest, sizeof k1.net_digest, "%s", n1.digest);
  int v = 0;
  CHECK(store_model_publish(st, &k1, 0, td, td, "{}", 1.0, 0, 0, &v) == TH_OK && v == 1);
  /* the same bytes with a shapes string are another revision */
  store_network_upload up2 = upload_of("net1", a, "input:Nx3x8x8");
  store_network_change ch;
  CHECK(store_network_put(st, &up2, &n2, &ch) == TH_OK);
  CHECK(ch.changed == 2 && n2.version == 2 && strcmp(n2.digest, n1.digest) != 0);
  CHECK_EQ_INT(ch.models, 1); /* the old revision's version, retired */
  store_model m;
  CHECK(store_model_get(st, &k1, 0, &m) == TH_ERR_NOT_FOUND);
  CHECK_STR(n2.onnx_digest, n1.onnx_digest);
  CHECK_STR(n2.shapes, "input:Nx3x8x8");
  CHECK(file_exists(n2.onnx_path)); /* the bytes are still the network's */
  store_key k2 = k1;
  snprintf(k2.net_digest, sizeof k2.net_digest, "%s", n2.digest);
  CHECK(store_model_get(st, &k2, 0, &m) == TH_ERR_NOT_FOUND);
  /* a job of the old revision that publishes afterwards is never the current one, nor in the catalog */
  CHECK(store_model_publish(st, &k1, 0, td, td, "{}", 1.0, 0, 0, &v) == TH_OK && v == 2);
  CHECK(store_model_get(st, &k2, 0, &m) == TH_ERR_NOT_FOUND);
  store_catalog_row *rows = NULL;
  size_t n = 0;
  CHECK(store_catalog(st, NULL, NULL, NULL, &rows, &n) == TH_OK);
  CHECK_EQ_INT(n, 0);
  store_catalog_free(rows, n);
  /* the current revision's build: versions keep counting over the name */
  CHECK(store_model_publish(st, &k2, 0, td, td, "{}", 1.0, 0, 0, &v) == TH_OK && v == 3);
  CHECK(store_model_get(st, &k2, 0, &m) == TH_OK && m.version == 3);
  store_model_clear(&m);
  CHECK(store_catalog(st, NULL, "net1", NULL, &rows, &n) == TH_OK);
  CHECK(n == 1 && rows[0].versions == 1 && !strcmp(rows[0].key.net_digest, n2.digest));
  store_catalog_free(rows, n);
  store_model *vs = NULL;
  CHECK(store_model_versions(st, &k2, &vs, &n) == TH_OK);
  CHECK(n == 1 && vs[0].version == 3);
  store_model_list_free(vs, n);
  /* single-flight per revision: a job of each revision may be live at once */
  int64_t j1 = 0, j2 = 0;
  int c1 = 0, c2 = 0;
  CHECK(store_job_enqueue(st, &k1, "build", "{}", 0, &j1, &c1) == TH_OK && c1);
  CHECK(store_job_enqueue(st, &k2, "build", "{}", 0, &j2, &c2) == TH_OK && c2 && j2 != j1);
  store_job j;
  CHECK(store_job_latest(st, &k2, &j) == TH_OK && j.id == j2);
  CHECK_STR(j.key.net_digest, n2.digest);
  store_job_clear(&j);
  store_network_clear(&n1);
  store_network_clear(&n2);
  /* two names with the same bytes share the file: deleting one keeps it */
  store_network_upload up3 = upload_of("net2", a, NULL);
  CHECK(store_network_put(st, &up3, &n1, NULL) == TH_OK);
  CHECK(store_network_delete(st, "net1", NULL) == TH_OK);
  CHECK(file_exists(n1.onnx_path));
  CHECK(store_network_delete(st, "net2", NULL) == TH_OK);
  CHECK(!file_exists(n1.onnx_path));
  store_network_clear(&n1);
  store_close(st);
  return 0;
}

/* Publishes version after version of key, each with its own bundle bytes ("bundle-<i>"); digests into td[i]. */
static void publish_n(store_t *st, const char *d, const store_key *k, int n, char td[][65]) {
  for (int i = 0; i < n; i++) {
    char path[300], text[128];
    snprintf(path, sizeof path, "%s/b%d.tar", d, i);
    snprintf(text, sizeof text, "bundle-%s-%d-%s-%d", k->network, k->batch, store_key_precision(k), i);
    write_file(path, text);
    CHECK(store_artifact_put(st, path, "application/x-tar", td[i], NULL) == TH_OK);
    int v = 0;
    CHECK(store_model_publish(st, k, 0, td[i], td[i], "{}", 1.0, 0, 0, &v) == TH_OK);
  }
}

/* key_of on cuda sm_80 at precision p ("" reads as fp32) */
static store_key cuda_key_of(const char *net, int batch, const char *p) {
  store_key k = key_of(net, batch);
  snprintf(k.framework, sizeof k.framework, "cuda");
  snprintf(k.target, sizeof k.target, "cuda -arch=sm_80");
  snprintf(k.precision, sizeof k.precision, "%s", p);
  return k;
}

/* Issue 25: fp32 and tf32 of one network, batch and target are two keys: versions, jobs, aliases, retention and
 * the catalog each keep them apart. */
TH_TEST(precision_keys_are_separate) {
  char *d = tmpdir();
  store_t *st = NULL;
  CHECK(th_test_store_open(d, &st) == TH_OK);
  store_key f = cuda_key_of("resnet-18", 1, ""), t = cuda_key_of("resnet-18", 1, "tf32");
  CHECK_STR(store_key_precision(&f), "fp32");
  char tdf[2][65], tdt[1][65];
  publish_n(st, d, &f, 2, tdf);
  publish_n(st, d, &t, 1, tdt);
  store_model m;
  CHECK(store_model_get(st, &t, 0, &m) == TH_OK);
  CHECK(m.version == 1 && !strcmp(m.tar_digest, tdt[0]));
  store_model_clear(&m);
  CHECK(store_model_get(st, &f, 0, &m) == TH_OK);
  CHECK(m.version == 2 && !strcmp(m.tar_digest, tdf[1]));
  store_model_clear(&m);
  store_model *vs = NULL;
  size_t nv = 0;
  CHECK(store_model_versions(st, &t, &vs, &nv) == TH_OK && nv == 1);
  store_model_list_free(vs, nv);
  CHECK(store_model_version(st, &t, 2, &m) == TH_ERR_NOT_FOUND);
  /* one live job per key: the two precisions do not join each other's */
  int64_t jf = 0, jt = 0, again = 0;
  int created = 0;
  CHECK(store_job_enqueue(st, &f, "build", "{}", 0, &jf, &created) == TH_OK && created == 1);
  CHECK(store_job_enqueue(st, &t, "build", "{}", 0, &jt, &created) == TH_OK && created == 1 && jt != jf);
  CHECK(store_job_enqueue(st, &t, "build", "{}", 0, &again, &created) == TH_OK && created == 0 && again == jt);
  store_job j;
  CHECK(store_job_get(st, jt, &j) == TH_OK);
  CHECK_STR(j.key.precision, "tf32");
  store_job_clear(&j);
  CHECK(store_job_latest(st, &f, &j) == TH_OK && j.id == jf);
  CHECK_STR(j.key.precision, "fp32");
  store_job_clear(&j);
  /* the catalog: two rows, each with its precision and its own count of versions */
  store_catalog_row *rows = NULL;
  size_t n = 0;
  CHECK(store_catalog(st, "cuda", "resnet-18", NULL, &rows, &n) == TH_OK);
  CHECK_EQ_INT((int)n, 2);
  CHECK(!strcmp(rows[0].key.precision, "fp32") && rows[0].versions == 2 && rows[0].job_id == jf);
  CHECK(!strcmp(rows[1].key.precision, "tf32") && rows[1].versions == 1 && rows[1].job_id == jt);
  store_catalog_free(rows, n);
  /* aliases: the same name on each precision's repository, each pinning its own version */
  store_alias a;
  CHECK(store_alias_set(st, &f, "prod", 2, NULL, NULL, NULL) == TH_OK);
  CHECK(store_alias_set(st, &t, "prod", 1, NULL, NULL, NULL) == TH_OK);
  CHECK(store_alias_get(st, &t, "prod", &a) == TH_OK && a.version == 1 && !strcmp(a.tar_digest, tdt[0]));
  CHECK_STR(a.key.precision, "tf32");
  CHECK(store_alias_get(st, &f, "prod", &a) == TH_OK && a.version == 2 && !strcmp(a.tar_digest, tdf[1]));
  /* retention and delete touch one precision only */
  int retired = -1, deleted = 0;
  CHECK(store_model_retain(st, &f, 1, &retired) == TH_OK && retired == 1);
  CHECK(store_model_delete(st, &t, &deleted) == TH_OK && deleted == 1);
  CHECK(store_model_get(st, &t, 0, &m) == TH_ERR_NOT_FOUND);
  CHECK(store_model_get(st, &f, 0, &m) == TH_OK && m.version == 2);
  store_model_clear(&m);
  CHECK(store_alias_get(st, &t, "prod", &a) == TH_OK && a.retired);
  CHECK(store_alias_get(st, &f, "prod", &a) == TH_OK && !a.retired);
  store_close(st);
  return 0;
}

/* Migration 7 on a store the schema before it made (version 6): every row reads as fp32, the single-flight index
 * and the version floor hold under the key with its precision, and new rows get ids past the copied ones. */
TH_TEST(migration_from_v6_reads_fp32) {
  char *d = tmpdir();
  db_t *h = db_at_version(d, 6);
  CHECK(db_exec(h,
                "INSERT INTO artifacts (digest, size, media_type, created_at) VALUES "
                "('aa', 3, 'application/x-tar', 1.0), ('bb', 3, 'application/x-tar', 1.0);"
                "INSERT INTO models (id, framework, network, batch, target, compiler_version, version, state, "
                "tar_digest, so_digest, manifest, created_at) VALUES "
                "(7, 'cuda', 'resnet-18', 1, 'cuda -arch=sm_80', '0.1.0', 4, 'ready', 'aa', 'aa', '{\"v\":4}', 1.0),"
                "(9, 'cuda', 'resnet-18', 1, 'cuda -arch=sm_80', '0.1.0', 5, 'ready', 'bb', 'bb', '{\"v\":5}', 2.0);"
                "INSERT INTO model_version_floor VALUES ('cuda', 'resnet-18', 1, 'cuda -arch=sm_80', '0.1.0', 3);"
                "INSERT INTO aliases (framework, network, batch, target, compiler_version, name, version, "
                "updated_at) VALUES ('cuda', 'resnet-18', 1, 'cuda -arch=sm_80', '0.1.0', 'prod', 4, 1.0);"
                "INSERT INTO jobs (framework, network, batch, target, compiler_version, state, created_at) "
                "VALUES ('cuda', 'vgg-11', 1, 'cuda -arch=sm_80', '0.1.0', 'queued', 1.0);") == TH_OK);
  db_close(h);
  store_t *st = NULL;
  CHECK(th_test_store_open(d, &st) == TH_OK);
  CHECK_EQ_INT(schema_version(d), schema_latest());
  store_key f = cuda_key_of("resnet-18", 1, "fp32"), t = cuda_key_of("resnet-18", 1, "tf32");
  store_model m;
  CHECK(store_model_get(st, &f, 0, &m) == TH_OK);
  CHECK(m.id == 9 && m.version == 5 && !strcmp(m.manifest, "{\"v\":5}"));
  store_model_clear(&m);
  CHECK(store_model_get(st, &t, 0, &m) == TH_ERR_NOT_FOUND);
  store_alias a;
  CHECK(store_alias_get(st, &f, "prod", &a) == TH_OK && a.version == 4 && !a.retired && !strcmp(a.tar_digest, "aa"));
  CHECK_STR(a.key.precision, "fp32");
  CHECK(store_alias_get(st, &t, "prod", &a) == TH_ERR_NOT_FOUND);
  store_catalog_row *rows = NULL;
  size_t n = 0;
  CHECK(store_catalog(st, "cuda", NULL, NULL, &rows, &n) == TH_OK);
  CHECK_EQ_INT((int)n, 2); /* resnet-18 (ready) and vgg-11 (building) */
  for (size_t i = 0; i < n; i++) CHECK_STR(rows[i].key.precision, "fp32");
  store_catalog_free(rows, n);
  /* the old queued job is the fp32 key's live job; tf32 queues its own */
  store_key jf = cuda_key_of("vgg-11", 1, ""), jt = cuda_key_of("vgg-11", 1, "tf32");
  int64_t id = 0;
  int created = 1;
  CHECK(store_job_enqueue(st, &jf, "build", "{}", 0, &id, &created) == TH_OK && id == 1 && created == 0);
  CHECK(store_job_enqueue(st, &jt, "build", "{}", 0, &id, &created) == TH_OK && id > 1 && created == 1);
  /* new versions: fp32 numbers on from 5, tf32 from 1; the new row's id is past the copied ones */
  char td[2][65];
  publish_n(st, d, &f, 1, td);
  CHECK(store_model_get(st, &f, 0, &m) == TH_OK && m.version == 6 && m.id > 9);
  store_model_clear(&m);
  publish_n(st, d, &t, 1, td + 1);
  CHECK(store_model_get(st, &t, 0, &m) == TH_OK && m.version == 1);
  store_model_clear(&m);
  store_close(st);
  return 0;
}

TH_TEST(aliases_pin_move_delete) {
  char *d = tmpdir();
  store_t *st = NULL;
  CHECK(th_test_store_open(d, &st) == TH_OK);
  store_key k = key_of("resnet-18", 1);
  char td[3][65];
  publish_n(st, d, &k, 3, td);
  store_alias a;
  int prev = -1;
  /* pin by number, then move by digest */
  CHECK(store_alias_set(st, &k, "prod", 1, NULL, &a, &prev) == TH_OK);
  CHECK(a.version == 1 && prev == 0 && !a.retired && a.key.batch == 1);
  CHECK_STR(a.tar_digest, td[0]);
  CHECK(store_alias_set(st, &k, "prod", 0, td[1], &a, &prev) == TH_OK);
  CHECK(a.version == 2 && prev == 1);
  CHECK(store_alias_set(st, &k, "staging", 3, NULL, NULL, NULL) == TH_OK);
  /* unknown version or digest: nothing changes */
  CHECK(store_alias_set(st, &k, "prod", 7, NULL, &a, &prev) == TH_ERR_NOT_FOUND);
  CHECK(strstr(store_errmsg(st), "no published version 7") != NULL);
  CHECK(store_alias_set(st, &k, "prod", 0, "00", &a, &prev) == TH_ERR_NOT_FOUND);
  CHECK(store_alias_get(st, &k, "prod", &a) == TH_OK && a.version == 2);
  /* the name is the repository's: another batch cannot take it, but has names of its own */
  store_key k8 = key_of("resnet-18", 8);
  char td8[1][65];
  publish_n(st, d, &k8, 1, td8);
  CHECK(store_alias_set(st, &k8, "prod", 1, NULL, NULL, NULL) == TH_ERR_CONFLICT);
  CHECK(strstr(store_errmsg(st), "batch 1") != NULL);
  CHECK(store_alias_set(st, &k8, "canary", 1, NULL, NULL, NULL) == TH_OK);
  store_alias *as = NULL;
  size_t n = 0;
  CHECK(store_alias_list(st, &k, &as, &n) == TH_OK);
  CHECK(n == 2 && !strcmp(as[0].name, "prod") && !strcmp(as[1].name, "staging") && as[1].version == 3);
  free(as);
  /* batch 0: the whole repository, for OCI's tags and look-ups */
  store_key repo = k;
  repo.batch = 0;
  CHECK(store_alias_list(st, &repo, &as, &n) == TH_OK);
  CHECK(n == 3 && as[2].key.batch == 8 && !strcmp(as[2].name, "canary"));
  free(as);
  CHECK(store_alias_get(st, &repo, "canary", &a) == TH_OK && a.key.batch == 8);
  /* a garbage collector keeps pinned blobs only */
  int pinned = -1;
  CHECK(store_artifact_pinned(st, td[1], &pinned) == TH_OK && pinned == 1);
  CHECK(store_artifact_pinned(st, td[0], &pinned) == TH_OK && pinned == 0);
  /* an unpublished version keeps its alias, which reads as retired */
  int deleted = 0;
  CHECK(store_model_delete(st, &k, &deleted) == TH_OK && deleted == 3);
  CHECK(store_alias_get(st, &k, "prod", &a) == TH_OK && a.retired && a.version == 2);
  CHECK(store_artifact_pinned(st, td[1], &pinned) == TH_OK && pinned == 1);
  CHECK(store_alias_set(st, &k, "prod", 3, NULL, NULL, NULL) == TH_ERR_NOT_FOUND);
  /* delete */
  int was = 0;
  CHECK(store_alias_delete(st, &k, "prod", &was) == TH_OK && was == 2);
  CHECK(store_alias_get(st, &k, "prod", &a) == TH_ERR_NOT_FOUND);
  CHECK(store_alias_delete(st, &k, "prod", &was) == TH_ERR_NOT_FOUND);
  CHECK(store_artifact_pinned(st, td[1], &pinned) == TH_OK && pinned == 0);
  /* deleted there, the name is free for batch 8 */
  CHECK(store_alias_delete(st, &k, "staging", NULL) == TH_OK);
  CHECK(store_alias_list(st, &k, &as, &n) == TH_OK && n == 0 && as == NULL);
  CHECK(store_alias_set(st, &k8, "prod", 1, NULL, &a, NULL) == TH_OK && a.key.batch == 8);
  store_close(st);
  return 0;
}

TH_TEST(aliases_of_a_replaced_revision_are_retired) {
  char *d = tmpdir();
  store_t *st = NULL;
  CHECK(th_test_store_open(d, &st) == TH_OK);
  char a1[300];
  snprintf(a1, sizeof a1, "%s/a.onnx", d);
  write_file(a1, "onnx-A");
  store_network_upload up = upload_of("net1", a1, NULL);
  store_network n1, n2;
  CHECK(store_network_put(st, &up, &n1, NULL) == TH_OK);
  store_key k1 = key_of("net1", 1);
  snprintf(k1.net_digest, sizeof k1.net_digest, "%s", n1.digest);
  char td[2][65];
  publish_n(st, d, &k1, 2, td);
  CHECK(store_alias_set(st, &k1, "prod", 1, NULL, NULL, NULL) == TH_OK);
  store_network_upload up2 = upload_of("net1", a1, "input:Nx3x8x8");
  CHECK(store_network_put(st, &up2, &n2, NULL) == TH_OK);
  store_key k2 = k1;
  snprintf(k2.net_digest, sizeof k2.net_digest, "%s", n2.digest);
  /* found under the current revision's key, retired, still naming the old revision */
  store_alias a;
  CHECK(store_alias_get(st, &k2, "prod", &a) == TH_OK && a.retired && a.version == 1);
  CHECK_STR(a.key.net_digest, n1.digest);
  /* moved to the new revision's first version (3): live again */
  char td2[1][65];
  publish_n(st, d, &k2, 1, td2);
  CHECK(store_alias_set(st, &k2, "prod", 3, NULL, &a, NULL) == TH_OK && !a.retired && a.version == 3);
  CHECK_STR(a.key.net_digest, n2.digest);
  store_network_clear(&n1);
  store_network_clear(&n2);
  store_close(st);
  return 0;
}

TH_TEST(retention_keeps_newest_and_aliased) {
  char *d = tmpdir();
  store_t *st = NULL;
  CHECK(th_test_store_open(d, &st) == TH_OK);
  store_key k = key_of("resnet-18", 1), other = key_of("resnet-18", 2);
  char td[5][65], to[3][65];
  publish_n(st, d, &k, 5, td);
  publish_n(st, d, &other, 3, to);
  CHECK(store_alias_set(st, &k, "prod", 2, NULL, NULL, NULL) == TH_OK);
  int retired = -1;
  CHECK(store_model_retain(st, &k, 0, &retired) == TH_OK && retired == 0); /* 0: keep all */
  CHECK(store_model_retain(st, &k, 2, &retired) == TH_OK);
  CHECK_EQ_INT(retired, 2); /* v1 and v3 go; v2 (prod), v4 and v5 stay */
  store_model *vs = NULL;
  size_t n = 0;
  CHECK(store_model_versions(st, &k, &vs, &n) == TH_OK);
  CHECK(n == 3 && vs[0].version == 2 && vs[1].version == 4 && vs[2].version == 5);
  store_model_list_free(vs, n);
  store_model m;
  CHECK(store_model_version(st, &k, 3, &m) == TH_ERR_NOT_FOUND);
  CHECK(store_model_version(st, &k, 2, &m) == TH_OK && m.version == 2 && m.manifest && !strcmp(m.manifest, "{}"));
  CHECK_STR(m.tar_digest, td[1]);
  store_model_clear(&m);
  /* the blobs stay: a garbage collector removes them */
  char path[1400];
  CHECK(store_artifact_path(st, td[0], path, sizeof path, NULL, NULL, 0) == TH_OK && file_exists(path));
  /* the next publish with keep 1: only the newest and the aliased one */
  publish_n(st, d, &k, 1, td);
  CHECK(store_model_retain(st, &k, 1, &retired) == TH_OK && retired == 2);
  CHECK(store_model_versions(st, &k, &vs, &n) == TH_OK);
  CHECK(n == 2 && vs[0].version == 2 && vs[1].version == 6);
  store_model_list_free(vs, n);
  /* the other key is untouched */
  CHECK(store_model_versions(st, &other, &vs, &n) == TH_OK && n == 3);
  store_model_list_free(vs, n);
  store_close(st);
  return 0;
}

/* ---- issue 24: workers, leases and fencing tokens ---- */

/* A record of job job_id under attempt (config i of one workload). */
static store_record record_of(int64_t job_id, int attempt, int i) {
  store_record r;
  memset(&r, 0, sizeof r);
  snprintf(r.workload_key, sizeof r.workload_key, "dense n1 k64");
  snprintf(r.template_name, sizeof r.template_name, "dense");
  snprintf(r.target, sizeof r.target, "llvm -mcpu=test");
  snprintf(r.tuner, sizeof r.tuner, "xgb");
  snprintf(r.config, sizeof r.config, "[[\"tile\",\"sp\",[%d]]]", i);
  r.config_index = i;
  r.cost_mean_s = 1e-3;
  r.job_id = job_id;
  r.attempt = attempt;
  return r;
}

TH_TEST(claim_matches_needs_target_in_order) {
  char *d = tmpdir();
  store_t *st = NULL;
  CHECK(store_open(d, &st) == TH_OK);
  const char *targets_a[] = {"llvm -mcpu=x86-64-v2", "cuda -arch=sm_90"};
  CHECK(store_worker_register(st, "a", "host-a", targets_a, 2, 1, 30, NULL) == TH_OK);
  CHECK(store_worker_register(st, "b", "host-b", NULL, 0, 1, 30, NULL) == TH_OK);
  store_key k1 = key_of("vgg-11", 1), k2 = key_of("vgg-13", 1), k3 = key_of("vgg-16", 1);
  snprintf(k3.target, sizeof k3.target, "llvm -mcpu=x86-64-v2");
  int64_t i1, i2, i3;
  int cr;
  CHECK(store_job_enqueue(st, &k1, "build", "{}", 0, &i1, &cr) == TH_OK);
  CHECK(store_job_enqueue(st, &k2, "build", "{}", 0, &i2, &cr) == TH_OK);
  CHECK(store_job_enqueue(st, &k3, "tune", "{}", 5, &i3, &cr) == TH_OK);
  /* any worker takes a job that needs no target: the highest priority first */
  store_job j;
  CHECK(store_job_claim(st, "b", 30, &j) == TH_OK);
  CHECK(j.id == i3 && j.attempts == 1 && j.lease_until > 0);
  CHECK_STR(j.worker, "b");
  store_job_clear(&j);
  /* b cannot measure x86-64-v2: it hands the job back for a worker that can */
  CHECK(store_job_handoff(st, i3, 1, "llvm -mcpu=x86-64-v2", "{\"tuning\":\"waits\"}") == TH_OK);
  CHECK(store_job_get(st, i3, &j) == TH_OK);
  CHECK(j.state == STORE_JOB_QUEUED && j.worker[0] == '\0' && j.lease_until == 0);
  CHECK_STR(j.needs_target, "llvm -mcpu=x86-64-v2");
  CHECK_STR(j.stage, "waiting_for_target");
  CHECK_STR(j.progress, "{\"tuning\":\"waits\"}");
  store_job_clear(&j);
  /* b now takes the oldest of the rest and never the job that needs a target it lacks */
  CHECK(store_job_claim(st, "b", 30, &j) == TH_OK && j.id == i1);
  store_job_clear(&j);
  CHECK(store_job_claim(st, "b", 30, &j) == TH_OK && j.id == i2);
  store_job_clear(&j);
  CHECK(store_job_claim(st, "b", 30, &j) == TH_ERR_NOT_FOUND);
  CHECK(store_job_claim(st, "unregistered", 30, &j) == TH_ERR_NOT_FOUND);
  /* a, which registered the target, does: the next attempt */
  CHECK(store_job_claim(st, "a", 30, &j) == TH_OK);
  CHECK(j.id == i3 && j.attempts == 2);
  CHECK_STR(j.worker, "a");
  store_job_clear(&j);
  /* the fleet view: a holds i3, b holds i1 and i2 */
  store_worker *ws = NULL;
  size_t nw = 0;
  CHECK(store_worker_list(st, &ws, &nw) == TH_OK);
  CHECK_EQ_INT(nw, 2);
  CHECK_STR(ws[0].name, "a");
  CHECK(ws[0].alive && ws[0].njobs == 1 && ws[0].jobs[0].id == i3 && ws[0].jobs[0].attempt == 2);
  CHECK(ws[0].jobs[0].lease_left_s > 25 && ws[0].jobs[0].lease_left_s <= 30.5);
  CHECK_STR(ws[0].targets, "[\"llvm -mcpu=x86-64-v2\",\"cuda -arch=sm_90\"]");
  CHECK_STR(ws[0].host, "host-a");
  CHECK(ws[1].njobs == 2 && ws[1].jobs[0].id == i1 && ws[1].jobs[1].id == i2);
  store_worker_list_free(ws, nw);
  int live = -1;
  CHECK(store_worker_live(st, "cuda -arch=sm_90", &live) == TH_OK);
  CHECK_EQ_INT(live, 1);
  CHECK(store_worker_live(st, "cuda -arch=sm_80", &live) == TH_OK);
  CHECK_EQ_INT(live, 0);
  store_close(st);
  return 0;
}

TH_TEST(fencing_refuses_a_stale_attempt) {
  char *d = tmpdir();
  store_t *st = NULL;
  CHECK(store_open(d, &st) == TH_OK);
  char td[65];
  tar_artifact(st, d, td);
  CHECK(store_worker_register(st, "w1", "h", NULL, 0, 1, 30, NULL) == TH_OK);
  CHECK(store_worker_register(st, "w2", "h", NULL, 0, 1, 30, NULL) == TH_OK);
  store_key k = key_of("resnet-18", 1);
  int64_t id;
  int cr, v = 0;
  CHECK(store_job_enqueue(st, &k, "tune", "{}", 0, &id, &cr) == TH_OK);
  store_job j;
  CHECK(store_job_claim(st, "w1", 0.05, &j) == TH_OK && j.attempts == 1);
  store_job_clear(&j);
  /* attempt 1 holds the job: its writes go through */
  CHECK(store_model_publish(st, &k, 0, td, td, "{}", 1.0, id, 1, &v) == TH_OK && v == 1);
  store_record r = record_of(id, 1, 0);
  CHECK(store_record_add(st, &r) == TH_OK);
  CHECK(store_job_progress(st, id, 1, "tune", "{\"p\":1}") == TH_OK);
  /* its lease passes (w1 paused, say) and w2 takes the job */
  usleep(150000);
  int requeued = 0;
  CHECK(store_job_reap(st, &requeued) == TH_OK);
  CHECK_EQ_INT(requeued, 1);
  CHECK(store_job_get(st, id, &j) == TH_OK);
  CHECK(j.state == STORE_JOB_QUEUED && j.worker[0] == '\0');
  CHECK_STR(j.stage, "requeued: the lease of worker w1 expired");
  store_job_clear(&j);
  /* requeued but not yet claimed: attempt 1 is already stale */
  CHECK(store_job_progress(st, id, 1, "tune", "{\"p\":2}") == TH_ERR_CONFLICT);
  CHECK(strstr(store_errmsg(st), "requeued") != NULL);
  CHECK(store_job_claim(st, "w2", 30, &j) == TH_OK && j.id == id && j.attempts == 2);
  store_job_clear(&j);
  /* every write of attempt 1 is refused, naming the job and both attempts, and leaves nothing behind */
  char want[128];
  snprintf(want, sizeof want, "job %lld: attempt 1 is stale; attempt 2 holds it (worker w2)", (long long)id);
  CHECK(store_model_publish(st, &k, 1, td, td, "{}", 1.0, id, 1, &v) == TH_ERR_CONFLICT);
  CHECK_STR(store_errmsg(st), want);
  r = record_of(id, 1, 1);
  CHECK(store_record_add(st, &r) == TH_ERR_CONFLICT);
  CHECK_STR(store_errmsg(st), want);
  CHECK(store_job_progress(st, id, 1, "tune", "{\"p\":3}") == TH_ERR_CONFLICT);
  CHECK(store_job_handoff(st, id, 1, "llvm -mcpu=x86-64-v2", NULL) == TH_ERR_CONFLICT);
  CHECK(store_job_finish(st, id, 1, STORE_JOB_SUCCEEDED, NULL) == TH_ERR_CONFLICT);
  CHECK(store_job_fence(st, id, 1) == TH_ERR_CONFLICT);
  CHECK(store_job_fence(st, id, 2) == TH_OK);
  store_model *vs = NULL;
  size_t nv = 0;
  CHECK(store_model_versions(st, &k, &vs, &nv) == TH_OK);
  CHECK_EQ_INT(nv, 1);
  store_model_list_free(vs, nv);
  int64_t nrec = 0;
  CHECK(store_record_count(st, r.workload_key, r.target, &nrec) == TH_OK);
  CHECK_EQ_INT(nrec, 1);
  CHECK(store_job_get(st, id, &j) == TH_OK);
  CHECK(j.state == STORE_JOB_RUNNING && j.attempts == 2);
  CHECK_STR(j.progress, "{\"p\":1}");
  CHECK_STR(j.worker, "w2");
  store_job_clear(&j);
  /* attempt 2's writes go through, and unfenced writes (attempt 0: tools) as before */
  r = record_of(id, 2, 2);
  CHECK(store_record_add(st, &r) == TH_OK);
  r = record_of(0, 0, 3);
  CHECK(store_record_add(st, &r) == TH_OK);
  CHECK(store_model_publish(st, &k, 1, td, td, "{}", 1.0, id, 2, &v) == TH_OK && v == 2);
  CHECK(store_job_finish(st, id, 2, STORE_JOB_SUCCEEDED, NULL) == TH_OK);
  /* once the job ended, even its last attempt writes nothing more */
  CHECK(store_job_progress(st, id, 2, "tune", "{}") == TH_ERR_CONFLICT);
  CHECK(strstr(store_errmsg(st), "has succeeded under attempt 2") != NULL);
  CHECK(store_model_publish(st, &k, 1, td, td, "{}", 1.0, id, 2, &v) == TH_ERR_CONFLICT);
  CHECK(store_record_count(st, r.workload_key, r.target, &nrec) == TH_OK);
  CHECK_EQ_INT(nrec, 3);
  /* the records carry the attempt they were written under */
  char cmd[512], path[300], *text = NULL;
  snprintf(cmd, sizeof cmd, "sqlite3 %s/tunehub.db 'SELECT group_concat(attempt) FROM tuning_records' > %s/a.txt",
           d, d);
  CHECK(system(cmd) == 0);
  snprintf(path, sizeof path, "%s/a.txt", d);
  CHECK(th_read_file(path, 1024, &text, NULL) == TH_OK);
  CHECK(strncmp(text, "1,2,0\n", 6) == 0);
  free(text);
  store_close(st);
  return 0;
}

TH_TEST(heartbeat_keeps_leases_reap_takes_expired) {
  char *d = tmpdir();
  store_t *st = NULL;
  CHECK(store_open(d, &st) == TH_OK);
  const char *t[] = {"llvm -mcpu=test"};
  CHECK(store_worker_register(st, "w", "h", t, 1, 2, 0.3, NULL) == TH_OK);
  store_key k1 = key_of("vgg-11", 1), k2 = key_of("vgg-13", 1), k3 = key_of("vgg-16", 1);
  int64_t i1, i2, i3;
  int cr, n = -1;
  CHECK(store_job_enqueue(st, &k1, "build", "{}", 0, &i1, &cr) == TH_OK);
  CHECK(store_job_enqueue(st, &k2, "build", "{}", 0, &i2, &cr) == TH_OK);
  CHECK(store_job_enqueue(st, &k3, "build", "{}", 0, &i3, &cr) == TH_OK);
  store_job j;
  CHECK(store_job_claim(st, "w", 0.3, &j) == TH_OK && j.id == i1);
  store_job_clear(&j);
  CHECK(store_job_claim(st, "w", 0.3, &j) == TH_OK && j.id == i2);
  store_job_clear(&j);
  CHECK(store_job_cancel(st, i2) == TH_OK); /* a cancel the worker never saw */
  /* heartbeats every 0.1 s keep both leases past their first end */
  for (int i = 0; i < 6; i++) {
    usleep(100000);
    CHECK(store_worker_heartbeat(st, "w", 0.3, &n) == TH_OK);
    CHECK_EQ_INT(n, 2);
    CHECK(store_job_reap(st, &n) == TH_OK);
    CHECK_EQ_INT(n, 0);
  }
  store_target_stat *ts = NULL;
  size_t nts = 0;
  CHECK(store_target_stats(st, &ts, &nts) == TH_OK);
  CHECK(nts == 1 && ts[0].queued == 1 && ts[0].waiting == 0 && ts[0].workers_alive == 1);
  free(ts);
  /* the worker falls silent: its leases end, and so does it */
  usleep(400000);
  CHECK(store_job_reap(st, &n) == TH_OK);
  CHECK_EQ_INT(n, 1); /* i1 requeued; i2, whose cancel was asked, ends cancelled */
  CHECK(store_job_get(st, i2, &j) == TH_OK);
  CHECK(j.state == STORE_JOB_CANCELLED);
  store_job_clear(&j);
  int live = -1;
  CHECK(store_worker_live(st, "llvm -mcpu=test", &live) == TH_OK);
  CHECK_EQ_INT(live, 0);
  store_worker *ws = NULL;
  size_t nw = 0;
  CHECK(store_worker_list(st, &ws, &nw) == TH_OK);
  CHECK(nw == 1 && !ws[0].alive && ws[0].heartbeat_age_s > 0.3 && ws[0].njobs == 0);
  store_worker_list_free(ws, nw);
  CHECK(store_target_stats(st, &ts, &nts) == TH_OK);
  CHECK(nts == 1 && ts[0].queued == 2 && ts[0].workers_alive == 0);
  free(ts);
  /* a worker that comes back under the same name (--name, restarted) takes none of its old jobs with it */
  CHECK(store_worker_register(st, "w", "h", t, 1, 2, 30, NULL) == TH_OK);
  CHECK(store_job_claim(st, "w", 30, &j) == TH_OK && j.id == i1 && j.attempts == 2);
  store_job_clear(&j);
  CHECK(store_worker_register(st, "w", "h", t, 1, 2, 30, &n) == TH_OK);
  CHECK_EQ_INT(n, 1);
  CHECK(store_job_get(st, i1, &j) == TH_OK);
  CHECK(j.state == STORE_JOB_QUEUED);
  CHECK_STR(j.stage, "requeued: worker w restarted");
  store_job_clear(&j);
  /* a clean stop hands the jobs back at once and marks the worker stopped */
  CHECK(store_job_claim(st, "w", 30, &j) == TH_OK && j.id == i1);
  store_job_clear(&j);
  CHECK(store_worker_stop(st, "w", &n) == TH_OK);
  CHECK_EQ_INT(n, 1);
  CHECK(store_worker_list(st, &ws, &nw) == TH_OK);
  CHECK(nw == 1 && !ws[0].alive && ws[0].stopped_at > 0);
  store_worker_list_free(ws, nw);
  CHECK(store_worker_heartbeat(st, "nobody", 30, NULL) == TH_ERR_NOT_FOUND);
  store_close(st);
  return 0;
}

/* ---- a shared store: blobs in large objects, a verified local cache per data directory ---- */

/* One value of a query against the case's PostgreSQL database (run outside any store). */
static int64_t pg_scalar(const char *sql) {
  db_t *h = NULL;
  char err[512];
  CHECK(db_open(th_test_db(), &h, err, sizeof err) == TH_OK);
  db_stmt *s = NULL;
  CHECK(db_prepare(h, sql, &s) == TH_OK);
  CHECK(db_step(s) == DB_ROW);
  int64_t v = db_col_int64(s, 0);
  db_finalize(s);
  db_close(h);
  return v;
}

/* The number of entries in a directory (the scratch directory data/tmp, say). */
static int dir_entries(const char *dir) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "test -z \"$(ls -A %s)\"", dir);
  return system(cmd) == 0 ? 0 : 1;
}

/* Two stores on the case's database, each with a data directory (its local cache) of its own. */
static void two_stores(char **da, store_t **a, char **db, store_t **b) {
  *da = tmpdir();
  *db = tmpdir();
  *a = *b = NULL;
  CHECK(th_test_store_open(*da, a) == TH_OK);
  CHECK(th_test_store_open(*db, b) == TH_OK);
}

TH_TEST(blob_shared_between_data_dirs) {
  TH_POSTGRES_ONLY("two data directories share one database only on PostgreSQL");
  char *da, *db;
  store_t *a, *b;
  two_stores(&da, &a, &db, &b);
  char src[300];
  snprintf(src, sizeof src, "%s/src.bin", da);
  write_file(src, "shared bytes");
  char digest[65];
  CHECK(store_artifact_put(a, src, "application/x-tar", digest, NULL) == TH_OK);
  CHECK_EQ_INT(pg_scalar("SELECT count(*) FROM pg_largeobject_metadata"), 1);
  CHECK_EQ_INT(pg_scalar("SELECT count(*) FROM artifacts WHERE lo_oid IS NOT NULL"), 1);
  /* b has never seen the bytes: its cache is filled from the large object */
  char path[1400], want[1400], media[64];
  int64_t size = 0;
  CHECK(store_artifact_path(b, digest, path, sizeof path, &size, media, sizeof media) == TH_OK);
  snprintf(want, sizeof want, "%s/artifacts/%.2s/%s", db, digest, digest);
  CHECK_STR(path, want);
  CHECK(size == 12 && !strcmp(media, "application/x-tar"));
  char *text = NULL;
  CHECK(th_read_file(path, 100, &text, NULL) == TH_OK);
  CHECK_STR(text, "shared bytes");
  free(text);
  char tmp[400];
  snprintf(tmp, sizeof tmp, "%s/tmp", db);
  CHECK(dir_entries(tmp) == 0);
  /* the same bytes put by b: no second copy in the database */
  snprintf(src, sizeof src, "%s/src.bin", db);
  write_file(src, "shared bytes");
  CHECK(store_artifact_put(b, src, "application/x-tar", digest, NULL) == TH_OK);
  CHECK_EQ_INT(pg_scalar("SELECT count(*) FROM pg_largeobject_metadata"), 1);
  /* bytes that do not match the digest are an error, never served, never cached */
  pg_scalar("SELECT lo_put(lo_oid::oid, 0, 'X') IS NULL FROM artifacts");
  CHECK(unlink(path) == 0);
  CHECK(store_artifact_path(b, digest, path, sizeof path, NULL, NULL, 0) == TH_ERR_CORRUPT);
  CHECK(strstr(store_errmsg(b), "other bytes") != NULL);
  CHECK(!file_exists(want) && dir_entries(tmp) == 0);
  pg_scalar("SELECT lo_put(lo_oid::oid, 0, 's') IS NULL FROM artifacts");
  CHECK(store_artifact_path(b, digest, path, sizeof path, NULL, NULL, 0) == TH_OK &&
        file_exists(want));
  /* a row without a database copy (put before there was one) says so, and the next put gives it one
   */
  pg_scalar("SELECT lo_unlink(lo_oid::oid) FROM artifacts");
  pg_scalar("UPDATE artifacts SET lo_oid = NULL RETURNING 1");
  CHECK(unlink(want) == 0);
  CHECK(store_artifact_path(b, digest, path, sizeof path, NULL, NULL, 0) == TH_ERR_NOT_FOUND);
  CHECK(strstr(store_errmsg(b), "has no copy in postgresql://") != NULL);
  CHECK(store_artifact_put(a, src, "application/x-tar", digest, NULL) == TH_OK);
  CHECK_EQ_INT(pg_scalar("SELECT count(*) FROM artifacts WHERE lo_oid IS NOT NULL"), 1);
  CHECK(store_artifact_path(b, digest, path, sizeof path, NULL, NULL, 0) == TH_OK &&
        file_exists(want));
  store_close(a);
  store_close(b);
  return 0;
}

TH_TEST(blob_network_delete_and_sweep_across_data_dirs) {
  TH_POSTGRES_ONLY("two data directories share one database only on PostgreSQL");
  char *da, *db;
  store_t *a, *b;
  two_stores(&da, &a, &db, &b);
  char td[65];
  tar_artifact(a, da, td); /* a bundle that nothing deletes */
  char onnx[300];
  snprintf(onnx, sizeof onnx, "%s/a.onnx", da);
  write_file(onnx, "onnx-bytes");
  store_network_upload up = upload_of("tiny", onnx, NULL);
  store_network na, nb;
  CHECK(store_network_put(a, &up, &na, NULL) == TH_OK);
  /* b reads the network, whose file its cache fetches */
  CHECK(store_network_get(b, "tiny", &nb) == TH_OK);
  CHECK(strncmp(nb.onnx_path, db, strlen(db)) == 0 && file_exists(nb.onnx_path));
  CHECK_EQ_INT(pg_scalar("SELECT count(*) FROM pg_largeobject_metadata"), 2);
  /* a deletes it: the row and the large object go together; b's stale copy is never served again */
  CHECK(store_network_delete(a, "tiny", NULL) == TH_OK);
  CHECK(!file_exists(na.onnx_path));
  CHECK_EQ_INT(pg_scalar("SELECT count(*) FROM pg_largeobject_metadata"), 1);
  char path[1400];
  CHECK(store_artifact_path(b, na.onnx_digest, path, sizeof path, NULL, NULL, 0) ==
        TH_ERR_NOT_FOUND);
  store_network n;
  CHECK(store_network_get(b, "tiny", &n) == TH_ERR_NOT_FOUND);
  /* b's sweep removes its stale copy (old enough that no writer of b's directory can still be
   * placing it) and nothing of the database: the bundle's row and large object stay for every other
   * process */
  struct timeval old[2] = {{time(NULL) - 7200, 0}, {time(NULL) - 7200, 0}};
  CHECK(utimes(nb.onnx_path, old) == 0);
  CHECK(store_artifact_path(b, td, path, sizeof path, NULL, NULL, 0) == TH_OK);
  CHECK(utimes(path, old) == 0);
  int requeued = -1, swept = -1;
  CHECK(store_recover(b, &requeued, &swept) == TH_OK);
  CHECK_EQ_INT(swept, 1);
  CHECK(!file_exists(nb.onnx_path) && file_exists(path));
  CHECK_EQ_INT(pg_scalar("SELECT count(*) FROM pg_largeobject_metadata"), 1);
  CHECK(store_artifact_path(a, td, path, sizeof path, NULL, NULL, 0) == TH_OK);
  store_network_clear(&na);
  store_network_clear(&nb);
  store_close(a);
  store_close(b);
  return 0;
}

TH_TEST(blob_put_race_keeps_one_copy) {
  TH_POSTGRES_ONLY(
      "processes with their own data directories share one database only on PostgreSQL");
  /* four processes, each with its own data directory, put the same bytes at the same moment */
  int go[2];
  CHECK(pipe(go) == 0);
  pid_t kids[4];
  for (int i = 0; i < 4; i++) {
    kids[i] = fork();
    if (kids[i] == 0) {
      close(go[1]);
      char *d = tmpdir(), src[300], digest[65], c;
      store_t *st = NULL;
      if (th_test_store_open(d, &st) != TH_OK) _exit(3);
      snprintf(src, sizeof src, "%s/src.bin", d);
      write_file(src, "raced bytes");
      if (read(go[0], &c, 1) != 0) _exit(4); /* released when the parent closes its end */
      th_status rc = store_artifact_put(st, src, "application/x-tar", digest, NULL);
      store_close(st);
      _exit(rc == TH_OK ? 0 : 5);
    }
  }
  close(go[0]);
  usleep(300000);
  close(go[1]);
  for (int i = 0; i < 4; i++) {
    int status;
    waitpid(kids[i], &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  CHECK_EQ_INT(pg_scalar("SELECT count(*) FROM artifacts"), 1);
  CHECK_EQ_INT(pg_scalar("SELECT count(*) FROM pg_largeobject_metadata"), 1);
  CHECK_EQ_INT(
      pg_scalar(
          "SELECT count(*) FROM artifacts a JOIN pg_largeobject_metadata m ON m.oid = a.lo_oid"),
      1);
  return 0;
}

/* ---- text order: bytes on both engines, whatever the database's locale ---- */

TH_TEST(names_order_bytewise) {
  /* on PostgreSQL, in a database whose collation orders text otherwise (ICU en-US: a_1 < a-1 < a.1
   * < a1) */
  char url[1200] = "";
  if (th_test_db()) {
    const char *q = strchr(th_test_db(), '?');
    CHECK(q != NULL);
    snprintf(url, sizeof url, "%.*s_icu%s", (int)(q - th_test_db()), th_test_db(), q);
    const char *end = strchr(url, '?'), *slash = end;
    while (slash > url && slash[-1] != '/') slash--;
    char sql[300], name[128];
    snprintf(name, sizeof name, "%.*s", (int)(end - slash), slash);
    db_t *h = NULL;
    char err[512];
    CHECK(db_open(th_test_db(), &h, err, sizeof err) == TH_OK);
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s", name);
    CHECK(db_exec(h, sql) == TH_OK);
    snprintf(
        sql, sizeof sql,
        "CREATE DATABASE %s TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C'",
        name);
    CHECK(db_exec(h, sql) == TH_OK);
    db_close(h);
  }
  char *d = tmpdir();
  store_t *st = NULL;
  CHECK(store_open_db(url[0] ? url : NULL, d, &st) == TH_OK);
  const char *names[] = {"a1", "a_1", "a.1", "a-1"}, *want[] = {"a-1", "a.1", "a1", "a_1"};
  for (int i = 0; i < 4; i++) {
    CHECK(store_network_upsert(st, names[i], "[1]", 1, 1) == TH_OK);
    store_key k = key_of(names[i], 1);
    int64_t id;
    int created;
    CHECK(store_job_enqueue(st, &k, "build", "{}", 0, &id, &created) == TH_OK);
  }
  store_network *nets = NULL;
  size_t n = 0;
  CHECK(store_network_list(st, NULL, &nets, &n) == TH_OK && n == 4);
  for (int i = 0; i < 4; i++) CHECK_STR(nets[i].name, want[i]);
  store_network_list_free(nets, n);
  store_catalog_row *rows = NULL;
  CHECK(store_catalog(st, NULL, NULL, NULL, &rows, &n) == TH_OK && n == 4);
  for (int i = 0; i < 4; i++) CHECK_STR(rows[i].key.network, want[i]);
  store_catalog_free(rows, n);
  store_close(st);
  return 0;
}
