/* Content-addressed artifacts. A put hashes the source, copies it to data/tmp, fsyncs, renames it
 * to artifacts/<ab>/<sha256>, fsyncs the shard directory and artifacts/ (which holds a new shard's
 * entry) and only then inserts the row, so a crash or a power loss at any point leaves either no
 * row or a row with its complete file; files without rows are swept by store_recover(). A file
 * already at the path is trusted only when its bytes hash to its name. In a shared store the row's
 * transaction also writes the bytes to the database (blob.h), and the local files are a cache that
 * store_artifact_path refills, verified, from there. Unreferenced artifacts are removed by the garbage
 * collector (store_gc.c); a put touches an existing row so that the collector's grace period restarts. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store_int.h"
#include "th_sha256.h"
#include "th_util.h"

static th_status store__copy_fsync(const char *src, const char *dst) {
  int in = open(src, O_RDONLY | O_CLOEXEC);
  if (in < 0) return TH_ERR_IO;
  int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) {
    close(in);
    return TH_ERR_IO;
  }
  char buf[1 << 16];
  th_status rc = TH_OK;
  for (;;) {
    ssize_t n = read(in, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      rc = TH_ERR_IO;
      break;
    }
    if (n == 0) break;
    for (ssize_t off = 0; off < n;) {
      ssize_t w = write(out, buf + off, (size_t)(n - off));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        rc = TH_ERR_IO;
        break;
      }
      off += w;
    }
    if (rc != TH_OK) break;
  }
  if (rc == TH_OK && fsync(out) != 0) rc = TH_ERR_IO;
  if (close(out) != 0) rc = TH_ERR_IO;
  close(in);
  return rc;
}

/* fsyncs the file at path (a file written by another handle, before it is renamed into place). */
static th_status store__fsync_path(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return TH_ERR_IO;
  th_status rc = fsync(fd) == 0 ? TH_OK : TH_ERR_IO;
  close(fd);
  return rc;
}

th_status store__artifact_place(store_t *st, const char *src, int take, const char *hex, int64_t sz) {
  char dir[sizeof st->artifacts_dir + 3]; /* artifacts/ab */
  char final_path[TH_PATH_MAX], tmp[TH_PATH_MAX];
  snprintf(dir, sizeof dir, "%s/%.2s", st->artifacts_dir, hex);
  snprintf(final_path, sizeof final_path, "%s/%s", dir, hex);
  snprintf(tmp, sizeof tmp, "%s/%s.%ld", st->tmp_dir, hex, (long)getpid());
  struct stat sb;
  int have_file = 0;
  if (stat(final_path, &sb) == 0 && sb.st_size == sz) {
    /* the right size is not the right bytes: a torn write or a corrupted disk block would otherwise be served
     * under this digest forever. A file that does not hash to its name is replaced below. */
    char have_hex[TH_HEX_MAX];
    int64_t have_sz = 0;
    have_file = th_sha256_file(final_path, have_hex, &have_sz) == TH_OK && have_sz == sz &&
                strcmp(have_hex, hex) == 0;
  }
  if (have_file) {
    /* a new mtime: the garbage collector leaves a file without a row alone for its grace period after this
     * (the row follows) */
    (void)utimensat(AT_FDCWD, final_path, NULL, 0);
    if (take) unlink(src);
    return TH_OK;
  }
  /* a copy below the free-space floor is refused before a byte is written (a taken file is on this
   * disk already: its rename costs nothing) */
  if (!take && st->min_free > 0) {
    char what[96];
    snprintf(what, sizeof what, "artifact sha256:%.12s", hex);
    th_status rc = store_space_check(st, sz, what);
    if (rc != TH_OK) return rc;
  }
  if (mkdir(dir, 0755) != 0 && errno != EEXIST)
    return store__fail(st, TH_ERR_IO, "cannot create %s: %s", dir, strerror(errno));
  /* a taken file (store_tmp_file's, in data/tmp like the copy) is renamed as it is, after its bytes are synced */
  const char *from = take ? src : tmp;
  if (take ? store__fsync_path(src) != TH_OK : store__copy_fsync(src, tmp) != TH_OK) {
    if (!take) unlink(tmp);
    return store__fail(st, TH_ERR_IO, "cannot %s %s: %s", take ? "sync" : "copy", src, strerror(errno));
  }
  if (rename(from, final_path) != 0) {
    if (!take) unlink(tmp);
    return store__fail(st, TH_ERR_IO, "cannot rename into %s: %s", final_path, strerror(errno));
  }
  /* the rename lives in the shard directory, and a new shard's own entry in artifacts/: both are synced, every
   * time, since a shard made by a put that died before its sync looks the same as a durable one */
  if (th_fsync_parent(final_path) != TH_OK || th_fsync_parent(dir) != TH_OK)
    return store__fail(st, TH_ERR_IO, "cannot fsync %s or its parent: %s", dir, strerror(errno));
  return TH_OK;
}

th_status store__artifact_row(store_t *st, const char *hex, int64_t sz, const char *media_type,
                              const char *path) {
  db_stmt *s = NULL;
  th_status rc = store__prepare(st, "SELECT lo_oid IS NULL FROM artifacts WHERE digest = ?", &s);
  int have = 0, bare = 0;
  if (rc == TH_OK) {
    db_bind_text(s, 1, hex);
    int r = db_step(s);
    if (r == DB_ROW) {
      have = 1;
      bare = db_col_int(s, 0);
    } else if (r != DB_DONE) {
      rc = store__db_fail(st, "look up an artifact");
    }
  }
  db_finalize(s);
  s = NULL;
  if (rc == TH_OK && have && !(bare && st->blob->put)) {
    /* the bytes are stored already, and a publish of them follows: touching the row restarts the garbage
     * collector's grace period (store_gc.c), so that bytes an unreferenced old row holds are not swept between
     * this put and that publish. On PostgreSQL the update waits for a collector that is deleting the row, and
     * then finds nothing: the row is inserted again below. */
    rc = store__prepare(st, "UPDATE artifacts SET touched_at = ?2 WHERE digest = ?1", &s);
    if (rc == TH_OK) {
      db_bind_text(s, 1, hex);
      db_bind_double(s, 2, th_now_wall());
      if (db_step(s) != DB_DONE)
        rc = store__db_fail(st, "touch an artifact");
      else
        have = db_changes(st->db) > 0;
    }
    db_finalize(s);
    s = NULL;
    if (rc != TH_OK || have) return rc;
  }
  if (rc != TH_OK || (have && !(bare && st->blob->put))) return rc;
  int64_t ref = 0;
  if (st->blob->put && st->blob->put(st->db, path, &ref) != TH_OK)
    return store__db_fail(st, "store the bytes of an artifact");
  rc = store__prepare(st,
                      have ? "UPDATE artifacts SET lo_oid = ?5, touched_at = ?4 WHERE digest = ?1 AND lo_oid IS NULL"
                           : "INSERT INTO artifacts (digest, size, media_type, created_at, lo_oid) "
                             "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (digest) DO NOTHING",
                      &s);
  if (rc == TH_OK) {
    db_bind_text(s, 1, hex);
    db_bind_int64(s, 2, sz);
    db_bind_text(s, 3, media_type);
    db_bind_double(s, 4, th_now_wall());
    if (ref)
      db_bind_int64(s, 5, ref);
    else
      db_bind_null(s, 5);
    if (db_step(s) != DB_DONE)
      rc = store__db_fail(st, have ? "record an artifact's bytes" : "insert artifact");
  }
  db_finalize(s);
  /* a concurrent writer's row stands with its own copy of the same bytes: this one goes with the
   * transaction */
  if (rc == TH_OK && ref && db_changes(st->db) == 0 && st->blob->drop(st->db, ref) != TH_OK)
    rc = store__db_fail(st, "drop a duplicate copy of an artifact");
  return rc;
}

th_status store__artifact_delete(store_t *st, const char *hex, const char *where, int *gone) {
  char sql[2048];
  if (snprintf(sql, sizeof sql, "DELETE FROM artifacts WHERE digest = ?1 AND %s RETURNING lo_oid", where) >=
      (int)sizeof sql)
    return store__fail(st, TH_ERR_INTERNAL, "delete an artifact: the condition is too long");
  db_stmt *s = NULL;
  th_status rc = store__prepare(st, sql, &s);
  int64_t ref = 0;
  int went = 0;
  if (rc == TH_OK) {
    db_bind_text(s, 1, hex);
    int r = db_step(s);
    if (r == DB_ROW) {
      went = 1;
      ref = db_col_int64(s, 0);
      r = db_step(s);
    }
    if (r != DB_DONE) rc = store__db_fail(st, "delete an artifact");
  }
  db_finalize(s);
  if (rc == TH_OK && ref && st->blob->drop && st->blob->drop(st->db, ref) != TH_OK)
    rc = store__db_fail(st, "drop an artifact's bytes");
  if (rc == TH_OK) *gone = went;
  return rc;
}

void store__artifact_file(store_t *st, const char *hex, char *path, size_t n) {
  snprintf(path, n, "%s/%.2s/%s", st->artifacts_dir, hex, hex);
}

th_status store_artifact_put(store_t *st, const char *src, const char *media_type, char digest[TH_HEX_MAX],
                             int64_t *size) {
  char hex[TH_HEX_MAX];
  int64_t sz = 0;
  if (th_sha256_file(src, hex, &sz) != TH_OK)
    return store__fail(st, TH_ERR_IO, "cannot read %s: %s", src, strerror(errno));
  char path[TH_PATH_MAX];
  store__artifact_file(st, hex, path, sizeof path);
  th_status rc = TH_OK;
  /* The file is placed before the row, outside the lock; a garbage collector may remove a file that was
   * already there (an unreferenced blob past its grace period) in between. It removes files inside its write
   * transaction, so a file still present once this transaction holds the write lock stays; a missing one is
   * placed again. */
  for (int attempt = 0;; attempt++) {
    rc = store__artifact_place(st, src, 0, hex, sz);
    if (rc != TH_OK) return rc;
    int present = 0;
    pthread_mutex_lock(&st->mu);
    /* a plain transaction: writing a large object must not hold every other writer of a shared store
     * back, and two processes putting the same bytes settle it with the row's ON CONFLICT */
    if (db_begin(st->db) != TH_OK) {
      rc = store__db_fail(st, "begin a transaction");
    } else {
      present = access(path, F_OK) == 0;
      if (present) rc = store__artifact_row(st, hex, sz, media_type, path);
      if (rc == TH_OK && present) rc = store__exec(st, "COMMIT");
      if (rc != TH_OK || !present) db_rollback(st->db);
    }
    pthread_mutex_unlock(&st->mu);
    if (rc != TH_OK) return rc;
    if (present) break;
    if (attempt == 2)
      return store__fail(st, TH_ERR_BUSY, "artifact sha256:%s was removed three times while being put (garbage "
                         "collection); try again", hex);
  }
  memcpy(digest, hex, 65);
  if (size) *size = sz;
  return TH_OK;
}

th_status store_tmp_file(store_t *st, const char *prefix, char *path, size_t n, int *fd) {
  if (snprintf(path, n, "%s/%s.XXXXXX", st->tmp_dir, prefix ? prefix : "upload") >= (int)n)
    return store__fail(st, TH_ERR_INVALID, "the temporary file's path does not fit");
  int f = mkostemp(path, O_CLOEXEC);
  if (f < 0) return store__fail(st, TH_ERR_IO, "cannot create a file in %s: %s", st->tmp_dir, strerror(errno));
  (void)fchmod(f, 0644); /* as a copied artifact's: the file may become one (store_network_put's take) */
  *fd = f;
  return TH_OK;
}

/* Fills the local cache with artifact hex from its engine copy ref: the bytes go to a temp file in
 * data/tmp, are checked against the digest and size, and only then renamed into place; bytes that
 * do not match are an error and never land in the cache. Runs on the fetch connection, without
 * st->mu. */
static th_status store__artifact_fetch(store_t *st, const char *hex, int64_t ref, int64_t size) {
  if (!ref)
    return store__fail(
        st, TH_ERR_NOT_FOUND,
        "artifact sha256:%s has no copy in %s and is not in this data directory's cache (%s)", hex,
        db_display(st->db), st->artifacts_dir);
  char tmp[TH_PATH_MAX];
  int fd = -1;
  th_status rc = store_tmp_file(st, "fetch", tmp, sizeof tmp, &fd);
  if (rc != TH_OK) return rc;
  char err[TH_ERR_MAX] = "";
  pthread_mutex_lock(&st->fetch_mu);
  if (!st->fetch_db) {
    pthread_mutex_lock(&st->mu); /* db_open_again reads st->db */
    rc = db_open_again(st->db, &st->fetch_db, err, sizeof err);
    pthread_mutex_unlock(&st->mu);
  }
  if (rc == TH_OK && st->blob->get(st->fetch_db, ref, fd) != TH_OK) {
    rc = db_errclass(st->fetch_db);
    snprintf(err, sizeof err, "%s", db_errmsg(st->fetch_db));
  }
  pthread_mutex_unlock(&st->fetch_mu);
  if (close(fd) != 0 && rc == TH_OK) {
    rc = TH_ERR_IO;
    snprintf(err, sizeof err, "cannot write the fetched copy: %s", strerror(errno));
  }
  if (rc != TH_OK) {
    unlink(tmp);
    return store__fail(st, rc == TH_ERR_CONFLICT ? TH_ERR_DB : rc, "fetch artifact sha256:%s: %s",
                       hex, err);
  }
  char got[TH_HEX_MAX];
  int64_t got_size = -1;
  if (th_sha256_file(tmp, got, &got_size) != TH_OK || got_size != size || strcmp(got, hex) != 0) {
    unlink(tmp);
    return store__fail(
        st, TH_ERR_CORRUPT,
        "the copy of artifact sha256:%s in %s has other bytes (%lld bytes, sha256:%s; the row says "
        "%lld bytes): not served",
        hex, db_display(st->db), (long long)got_size, got_size >= 0 ? got : "?", (long long)size);
  }
  return store__artifact_place(st, tmp, 1, hex, size);
}

th_status store_artifact_path(store_t *st, const char *digest, char *path, size_t n, int64_t *size,
                              char *media_type, size_t media_n) {
  if (!th_is_sha256_hex(digest))
    return store__fail(st, TH_ERR_INVALID, "a digest is 64 lowercase hex digits");
  pthread_mutex_lock(&st->mu);
  db_stmt *s = NULL;
  int64_t sz = 0, ref = 0;
  char media[128] = "";
  th_status rc =
      store__prepare(st, "SELECT size, media_type, lo_oid FROM artifacts WHERE digest = ?", &s);
  if (rc == TH_OK) {
    db_bind_text(s, 1, digest);
    int r = db_step(s);
    if (r == DB_ROW) {
      sz = db_col_int64(s, 0);
      store__col_copy(s, 1, media, sizeof media);
      ref = db_col_int64(s, 2);
    } else if (r == DB_DONE) {
      rc = store__fail(st, TH_ERR_NOT_FOUND, "no artifact with digest sha256:%s", digest);
    } else {
      rc = store__db_fail(st, "select artifact");
    }
  }
  db_finalize(s);
  pthread_mutex_unlock(&st->mu);
  char file[TH_PATH_MAX];
  store__artifact_file(st, digest, file, sizeof file);
  /* the files engine's local file is the artifact itself: a missing one is reported by whoever
   * opens it */
  if (rc == TH_OK && st->blob->get && access(file, F_OK) != 0)
    rc = store__artifact_fetch(st, digest, ref, sz);
  if (rc != TH_OK) return rc;
  snprintf(path, n, "%s", file);
  if (size) *size = sz;
  if (media_type) snprintf(media_type, media_n, "%s", media);
  return TH_OK;
}
