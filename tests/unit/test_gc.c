/* Unit tests of the blob garbage collector (store/store_gc.c), on the embedded store and, as the gc_pg twins,
 * on PostgreSQL: what a live row references stays, what nothing references goes after the grace period and
 * not before, a dry run changes nothing, an alias keeps a deleted version's blobs, a blob two versions share
 * stays until both are gone, version numbers are never reused, leftovers go by mtime, a put restarts the grace
 * period, and a reader that opened a blob's file reads all of it after the sweep. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "db.h"
#include "store.h"
#include "th_sha256.h"
#include "th_test.h"
#include "th_test_store.h"
#include "th_util.h"

static char *tmpdir(void) {
  char *d = strdup("/tmp/th_gc_XXXXXX");
  CHECK(mkdtemp(d) != NULL);
  return d;
}

static store_t *open_store(const char *d) {
  store_t *st = NULL;
  CHECK(th_test_store_open(d, &st) == TH_OK);
  return st;
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

/* Puts an artifact holding text (its digest into hex). */
static void put_text(store_t *st, const char *d, const char *text, const char *media, char hex[65]) {
  char src[400];
  snprintf(src, sizeof src, "%s/src.bin", d);
  FILE *f = fopen(src, "w");
  CHECK(f != NULL);
  fputs(text, f);
  fclose(f);
  CHECK(store_artifact_put(st, src, media, hex, NULL) == TH_OK);
  unlink(src);
}

/* Publishes a version of key whose bundle and .so hold tar_text and so_text (digests into td, sd). */
static int publish(store_t *st, const char *d, const store_key *k, const char *tar_text, const char *so_text,
                   char td[65], char sd[65]) {
  put_text(st, d, tar_text, "application/x-tar", td);
  put_text(st, d, so_text, "application/x-sharedlib", sd);
  int v = 0;
  CHECK(store_model_publish(st, k, 0, td, sd, "{}", 1.0, 0, 0, &v) == TH_OK);
  return v;
}

static void blob_path(const char *d, const char *hex, char *path, size_t n) {
  snprintf(path, n, "%s/artifacts/%.2s/%s", d, hex, hex);
}

/* 1 when the artifact has its row and its file. */
static int have_blob(store_t *st, const char *d, const char *hex) {
  char path[400];
  blob_path(d, hex, path, sizeof path);
  int row = store_artifact_path(st, hex, path, sizeof path, NULL, NULL, 0) == TH_OK;
  blob_path(d, hex, path, sizeof path);
  int file = access(path, F_OK) == 0;
  CHECK(row == file); /* never a row without its file, nor the reverse */
  return row;
}

/* A collection with grace_s after the artifacts' timestamps are in the past (the clock's resolution). */
static store_gc_report gc(store_t *st, double grace_s, int dry_run) {
  usleep(20000);
  store_gc_report r;
  CHECK(store_gc(st, grace_s, dry_run, &r) == TH_OK);
  return r;
}

static int listed(const store_gc_report *r, const char *hex) {
  for (size_t i = 0; i < r->nremoved; i++)
    if (!strcmp(r->removed[i].digest, hex)) return 1;
  return 0;
}

TH_TEST(referenced_kept_unreferenced_swept) {
  char *d = tmpdir();
  store_t *st = open_store(d);
  store_key k = key_of("resnet-18", 1);
  char td[65], sd[65], loose[65];
  publish(st, d, &k, "bundle v1", "so v1", td, sd);
  put_text(st, d, "nobody's bytes", "application/x-tar", loose);
  store_gc_report r = gc(st, 0, 0);
  CHECK_EQ_INT(r.marked, 2);
  CHECK_EQ_INT(r.marked_bytes, (int64_t)(strlen("bundle v1") + strlen("so v1")));
  CHECK_EQ_INT(r.swept, 1);
  CHECK_EQ_INT(r.swept_bytes, (int64_t)strlen("nobody's bytes"));
  CHECK(r.nremoved == 1 && listed(&r, loose) && !r.removed[0].leftover);
  CHECK(!r.locked_out);
  store_gc_report_free(&r);
  CHECK(have_blob(st, d, td) && have_blob(st, d, sd));
  CHECK(!have_blob(st, d, loose));
  /* the version is still served */
  store_model m;
  CHECK(store_model_get(st, &k, 0, &m) == TH_OK && m.version == 1);
  store_model_clear(&m);
  store_close(st);
  free(d);
  return 0;
}

/* A signed version's provenance envelope is live while the version is (store_model_provenance finds
 * it), and goes with the version once it is deleted; an unsigned version has none. */
TH_TEST(provenance_kept_with_its_version) {
  char *d = tmpdir();
  store_t *st = open_store(d);
  store_key k = key_of("resnet-18", 1);
  char td[65], sd[65], pd[65], got[TH_HEX_MAX] = "";
  put_text(st, d, "bundle v1", "application/x-tar", td);
  put_text(st, d, "so v1", "application/x-sharedlib", sd);
  put_text(st, d, "{\"payload\":\"\"}", "application/vnd.dsse.envelope.v1+json", pd);
  int v = 0;
  CHECK(store_model_publish_signed(st, &k, 0, td, sd, pd, "{}", 1.0, 0, 0, &v) == TH_OK && v == 1);
  char td2[65], sd2[65];
  CHECK_EQ_INT(publish(st, d, &k, "bundle v2", "so v2", td2, sd2), 2);
  store_gc_report r = gc(st, 0, 0);
  CHECK_EQ_INT(r.marked, 5);
  CHECK_EQ_INT(r.swept, 0);
  store_gc_report_free(&r);
  CHECK(have_blob(st, d, pd));
  CHECK(store_model_provenance(st, &k, 1, got) == TH_OK);
  CHECK_STR(got, pd);
  CHECK(store_model_provenance(st, &k, 2, got) == TH_ERR_NOT_FOUND);
  CHECK(strstr(store_errmsg(st), "published unsigned") != NULL);
  CHECK(store_model_provenance(st, &k, 3, got) == TH_ERR_NOT_FOUND);
  CHECK(strstr(store_errmsg(st), "is not published") != NULL);
  int deleted = 0;
  CHECK(store_model_delete(st, &k, &deleted) == TH_OK && deleted == 2);
  r = gc(st, 0, 0);
  CHECK_EQ_INT(r.swept, 5);
  CHECK(listed(&r, pd));
  store_gc_report_free(&r);
  CHECK(!have_blob(st, d, pd));
  store_close(st);
  free(d);
  return 0;
}

TH_TEST(within_grace_kept) {
  char *d = tmpdir();
  store_t *st = open_store(d);
  store_key k = key_of("resnet-18", 1);
  char td[65], sd[65], loose[65];
  publish(st, d, &k, "bundle v1", "so v1", td, sd);
  put_text(st, d, "nobody's bytes", "application/x-tar", loose);
  int deleted = 0;
  CHECK(store_model_delete(st, &k, &deleted) == TH_OK && deleted == 1);
  store_gc_report r = gc(st, 3600, 0);
  CHECK_EQ_INT(r.marked, 0);
  CHECK_EQ_INT(r.young, 3);
  CHECK_EQ_INT(r.swept, 0);
  CHECK(r.nremoved == 0);
  store_gc_report_free(&r);
  CHECK(have_blob(st, d, td) && have_blob(st, d, sd) && have_blob(st, d, loose));
  store_close(st);
  free(d);
  return 0;
}

TH_TEST(dry_run_removes_nothing) {
  char *d = tmpdir();
  store_t *st = open_store(d);
  store_key k = key_of("resnet-18", 1);
  char td[65], sd[65];
  publish(st, d, &k, "bundle v1", "so v1", td, sd);
  CHECK(store_model_delete(st, &k, NULL) == TH_OK);
  store_gc_report r = gc(st, 0, 1);
  CHECK_EQ_INT(r.swept, 2);
  CHECK(listed(&r, td) && listed(&r, sd));
  store_gc_report_free(&r);
  CHECK(have_blob(st, d, td) && have_blob(st, d, sd));
  /* the real run removes what the dry run listed */
  r = gc(st, 0, 0);
  CHECK_EQ_INT(r.swept, 2);
  CHECK_EQ_INT(r.versions_purged, 1);
  store_gc_report_free(&r);
  CHECK(!have_blob(st, d, td) && !have_blob(st, d, sd));
  store_close(st);
  free(d);
  return 0;
}

TH_TEST(deleted_version_swept_and_number_not_reused) {
  char *d = tmpdir();
  store_t *st = open_store(d);
  store_key k = key_of("resnet-18", 1);
  char td[65], sd[65], td2[65], sd2[65];
  CHECK_EQ_INT(publish(st, d, &k, "bundle v1", "so v1", td, sd), 1);
  CHECK_EQ_INT(publish(st, d, &k, "bundle v2", "so v2", td2, sd2), 2);
  CHECK(store_model_delete(st, &k, NULL) == TH_OK);
  store_gc_report r = gc(st, 0, 0);
  CHECK_EQ_INT(r.swept, 4);
  CHECK_EQ_INT(r.versions_purged, 2);
  store_gc_report_free(&r);
  CHECK(!have_blob(st, d, td) && !have_blob(st, d, td2));
  /* the next publish is v3, not v1 again: a client that pinned "v1" must never get other bytes */
  CHECK_EQ_INT(publish(st, d, &k, "bundle v3", "so v3", td, sd), 3);
  store_close(st);
  free(d);
  return 0;
}

TH_TEST(alias_keeps_deleted_version) {
  char *d = tmpdir();
  store_t *st = open_store(d);
  store_key k = key_of("resnet-18", 1);
  char td1[65], sd1[65], td2[65], sd2[65];
  publish(st, d, &k, "bundle v1", "so v1", td1, sd1);
  publish(st, d, &k, "bundle v2", "so v2", td2, sd2);
  CHECK(store_alias_set(st, &k, "prod", 1, NULL, NULL, NULL) == TH_OK);
  CHECK(store_model_delete(st, &k, NULL) == TH_OK);
  store_gc_report r = gc(st, 0, 0);
  CHECK_EQ_INT(r.marked, 2);
  CHECK_EQ_INT(r.swept, 2);
  CHECK_EQ_INT(r.versions_purged, 1);
  store_gc_report_free(&r);
  CHECK(have_blob(st, d, td1) && have_blob(st, d, sd1));
  CHECK(!have_blob(st, d, td2) && !have_blob(st, d, sd2));
  /* the alias still reads (retired), naming the bytes that stayed */
  store_alias a;
  CHECK(store_alias_get(st, &k, "prod", &a) == TH_OK);
  CHECK(a.version == 1 && a.retired && !strcmp(a.tar_digest, td1));
  /* once the alias goes, so do its version's blobs */
  CHECK(store_alias_delete(st, &k, "prod", NULL) == TH_OK);
  r = gc(st, 0, 0);
  CHECK_EQ_INT(r.swept, 2);
  store_gc_report_free(&r);
  CHECK(!have_blob(st, d, td1) && !have_blob(st, d, sd1));
  store_close(st);
  free(d);
  return 0;
}

TH_TEST(shared_blob_kept_until_both_gone) {
  char *d = tmpdir();
  store_t *st = open_store(d);
  store_key ka = key_of("resnet-18", 1), kb = key_of("resnet-18", 2);
  char td[65], sd[65];
  publish(st, d, &ka, "the same bundle", "the same so", td, sd);
  publish(st, d, &kb, "the same bundle", "the same so", td, sd);
  CHECK(store_model_delete(st, &ka, NULL) == TH_OK);
  store_gc_report r = gc(st, 0, 0);
  CHECK_EQ_INT(r.marked, 2);
  CHECK_EQ_INT(r.swept, 0);
  store_gc_report_free(&r);
  CHECK(have_blob(st, d, td) && have_blob(st, d, sd));
  CHECK(store_model_delete(st, &kb, NULL) == TH_OK);
  r = gc(st, 0, 0);
  CHECK_EQ_INT(r.swept, 2);
  CHECK_EQ_INT(r.versions_purged, 2);
  store_gc_report_free(&r);
  CHECK(!have_blob(st, d, td) && !have_blob(st, d, sd));
  store_close(st);
  free(d);
  return 0;
}

TH_TEST(network_file_kept) {
  char *d = tmpdir();
  store_t *st = open_store(d);
  char src[400], hex[65];
  snprintf(src, sizeof src, "%s/net.onnx", d);
  FILE *f = fopen(src, "w");
  CHECK(f != NULL);
  fputs("not really onnx, but bytes", f);
  fclose(f);
  store_network_upload up;
  memset(&up, 0, sizeof up);
  up.name = "mynet";
  up.path = src;
  up.input_shape = "[1,3,8,8]";
  store_network n;
  CHECK(store_network_put(st, &up, &n, NULL) == TH_OK);
  snprintf(hex, sizeof hex, "%s", n.onnx_digest);
  store_network_clear(&n);
  store_gc_report r = gc(st, 0, 0);
  CHECK_EQ_INT(r.marked, 1);
  CHECK_EQ_INT(r.swept, 0);
  store_gc_report_free(&r);
  CHECK(have_blob(st, d, hex));
  store_close(st);
  free(d);
  return 0;
}

/* A file under artifacts/ that no row names: an old one goes, a new one (a put on its way to its row) stays. */
TH_TEST(leftovers_go_by_mtime) {
  char *d = tmpdir();
  store_t *st = open_store(d);
  const char *old_hex = "ab00000000000000000000000000000000000000000000000000000000000001";
  const char *new_hex = "ab00000000000000000000000000000000000000000000000000000000000002";
  char dir[400], p1[500], p2[500];
  snprintf(dir, sizeof dir, "%s/artifacts/ab", d);
  mkdir(dir, 0755);
  snprintf(p1, sizeof p1, "%s/%s", dir, old_hex);
  snprintf(p2, sizeof p2, "%s/%s", dir, new_hex);
  for (int i = 0; i < 2; i++) {
    FILE *f = fopen(i ? p2 : p1, "w");
    CHECK(f != NULL);
    fputs("left over", f);
    fclose(f);
  }
  struct timeval tv[2] = {{time(NULL) - 7200, 0}, {time(NULL) - 7200, 0}};
  CHECK(utimes(p1, tv) == 0);
  store_gc_report r = gc(st, 3600, 1);
  CHECK_EQ_INT(r.leftovers, 1);
  CHECK(listed(&r, old_hex) && r.removed[0].leftover);
  store_gc_report_free(&r);
  CHECK(access(p1, F_OK) == 0); /* the dry run left it */
  r = gc(st, 3600, 0);
  CHECK_EQ_INT(r.leftovers, 1);
  CHECK_EQ_INT(r.leftover_bytes, 9);
  store_gc_report_free(&r);
  CHECK(access(p1, F_OK) != 0 && access(p2, F_OK) == 0);
  store_close(st);
  free(d);
  return 0;
}

/* Putting bytes already stored (a rebuild that came out identical) restarts their grace period, so that they
 * are not swept before the publish that follows the put. */
TH_TEST(put_restarts_grace) {
  char *d = tmpdir();
  store_t *st = open_store(d);
  char hex[65], again[65];
  put_text(st, d, "rebuilt bytes", "application/x-tar", hex);
  usleep(1200000);
  put_text(st, d, "rebuilt bytes", "application/x-tar", again);
  CHECK_STR(hex, again);
  store_gc_report r = gc(st, 1.0, 0);
  CHECK_EQ_INT(r.young, 1);
  CHECK_EQ_INT(r.swept, 0);
  store_gc_report_free(&r);
  CHECK(have_blob(st, d, hex));
  /* swept later, a put brings row and file back */
  r = gc(st, 0, 0);
  CHECK_EQ_INT(r.swept, 1);
  store_gc_report_free(&r);
  CHECK(!have_blob(st, d, hex));
  put_text(st, d, "rebuilt bytes", "application/x-tar", again);
  CHECK(have_blob(st, d, hex));
  store_close(st);
  free(d);
  return 0;
}

/* A download that has opened the blob's file reads every byte after the sweep: the inode lives until the last
 * descriptor closes (Linux), though the name is gone at once. */
TH_TEST(open_reader_survives_gc) {
  char *d = tmpdir();
  store_t *st = open_store(d);
  char src[400], td[65], sd[65];
  snprintf(src, sizeof src, "%s/big.bin", d);
  FILE *f = fopen(src, "w");
  CHECK(f != NULL);
  uint32_t x = 12345;
  for (int i = 0; i < (4 << 20) / 4; i++) {
    x = x * 1664525u + 1013904223u;
    fwrite(&x, 4, 1, f);
  }
  fclose(f);
  int64_t size = 0;
  CHECK(store_artifact_put(st, src, "application/x-tar", td, &size) == TH_OK);
  CHECK_EQ_INT(size, 4 << 20);
  put_text(st, d, "its so", "application/x-sharedlib", sd);
  store_key k = key_of("resnet-18", 1);
  int v = 0;
  CHECK(store_model_publish(st, &k, 0, td, sd, "{}", 1.0, 0, 0, &v) == TH_OK);
  char path[1400];
  CHECK(store_artifact_path(st, td, path, sizeof path, NULL, NULL, 0) == TH_OK);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  CHECK(fd >= 0);
  char head[4096];
  CHECK(read(fd, head, sizeof head) == (ssize_t)sizeof head); /* the download has begun */
  CHECK(store_model_delete(st, &k, NULL) == TH_OK);
  store_gc_report r = gc(st, 0, 0);
  CHECK(listed(&r, td));
  store_gc_report_free(&r);
  CHECK(access(path, F_OK) != 0);
  th_sha256 h;
  th_sha256_init(&h);
  th_sha256_update(&h, head, sizeof head);
  int64_t total = sizeof head;
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) {
    th_sha256_update(&h, buf, (size_t)n);
    total += n;
  }
  close(fd);
  unsigned char bin[32];
  char got[65];
  th_sha256_final(&h, bin);
  th_hex(bin, 32, got);
  CHECK_EQ_INT(total, 4 << 20);
  CHECK_STR(got, td);
  store_close(st);
  free(d);
  return 0;
}

TH_TEST(negative_grace_is_invalid) {
  char *d = tmpdir();
  store_t *st = open_store(d);
  store_gc_report r;
  CHECK(store_gc(st, -1, 0, &r) == TH_ERR_INVALID);
  CHECK(strstr(store_errmsg(st), "grace") != NULL);
  store_close(st);
  free(d);
  return 0;
}

/* One collector at a time: while another process holds the collector's lock (PostgreSQL: its advisory lock,
 * taken here on a connection of the test's own; SQLite: the data directory's gc.lock), a run sweeps no row. */
TH_TEST(one_collector_at_a_time) {
  char *d = tmpdir();
  store_t *st = open_store(d);
  char loose[65];
  put_text(st, d, "nobody's bytes", "application/x-tar", loose);
  db_t *h = NULL;
  int fd = -1;
  if (th_test_db()) {
    char err[512];
    int got = 0;
    CHECK(db_open(th_test_db(), &h, err, sizeof err) == TH_OK);
    CHECK(db_try_lock(h, 886482442, &got) == TH_OK && got == 1);
  } else {
    char lock[400];
    snprintf(lock, sizeof lock, "%s/gc.lock", d);
    fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    CHECK(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0);
  }
  store_gc_report r = gc(st, 0, 0);
  CHECK(r.locked_out);
  CHECK_EQ_INT(r.swept, 0);
  store_gc_report_free(&r);
  CHECK(have_blob(st, d, loose));
  if (h) {
    CHECK(db_unlock(h, 886482442) == TH_OK);
    db_close(h);
  } else {
    close(fd);
  }
  r = gc(st, 0, 0);
  CHECK(!r.locked_out);
  CHECK_EQ_INT(r.swept, 1);
  store_gc_report_free(&r);
  CHECK(!have_blob(st, d, loose));
  store_close(st);
  free(d);
  return 0;
}
