/* Garbage collection of blobs, as OCI registries do it: mark every artifact a live row references
 * (a ready version's bundle, .so and provenance envelope, any version an alias pins, an uploaded
 * network's ONNX file), then sweep the rest once they have been left alone for a grace period. The
 * grace period is what protects a blob on its way to being referenced: a publish puts (or touches)
 * its artifacts' rows first and inserts the model row after, so an artifact younger than the grace
 * period is never swept, and each sweep re-checks the references inside a write transaction that
 * excludes publishes. Deleting a file never hurts a download that has opened it: on Linux the inode
 * lives until its last descriptor closes. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store_int.h"
#include "th_sha256.h"
#include "th_util.h"

/* The advisory lock a shared store's collector holds for a run: "gc" after the write lock's key
 * (db_pg.c's 8864824, "tunehub" on a phone keypad). */
#define STORE__GC_LOCK 886482442

/* SQL: 1 when the artifact whose digest is the expression d is referenced by a live row. A deleted version
 * still counts while an alias pins it: the alias reads as retired, and may be moved back to it. */
#define STORE__GC_LIVE(d)                                                                         \
  "(EXISTS (SELECT 1 FROM models m WHERE (m.tar_digest = " d " OR m.so_digest = " d                \
  " OR m.provenance_digest = " d ") AND (m.state = 'ready' OR EXISTS (SELECT 1 FROM aliases al "   \
  "WHERE al.framework = m.framework AND al.network = m.network AND al.batch = m.batch AND "        \
  "al.target = m.target AND al.compiler_version = m.compiler_version AND "                         \
  "al.precision = m.precision AND al.version = m.version))) OR EXISTS (SELECT 1 FROM networks n "  \
  "WHERE n.onnx_digest = " d "))"

/* A deleted version that no alias pins, among the rows of models m (whose rows go with a swept blob). */
#define STORE__GC_DEAD_VERSION                                                                    \
  "m.state = 'deleted' AND (m.tar_digest = ?1 OR m.so_digest = ?1 OR m.provenance_digest = ?1) "  \
  "AND NOT EXISTS (SELECT 1 FROM aliases al WHERE al.framework = m.framework AND al.network = "    \
  "m.network AND al.batch = m.batch AND al.target = m.target AND al.compiler_version = "           \
  "m.compiler_version AND al.precision = m.precision AND al.version = m.version)"

/* An artifact row as the mark saw it. */
typedef struct store__gc_row {
  char digest[TH_HEX_MAX];
  char media[64];
  int64_t size;
  double touched;
  int live;
} store__gc_row;

void store_gc_report_free(store_gc_report *r) {
  if (!r) return;
  free(r->removed);
  r->removed = NULL;
  r->nremoved = 0;
}

/* Appends a removed (or, in a dry run, removable) blob to the report. */
static th_status store__gc_note(store_t *st, store_gc_report *rep, size_t *cap, const char *digest,
                                int64_t size, const char *media, int leftover) {
  store_gc_blob *grown = store__grow(st, rep->removed, cap, rep->nremoved, sizeof *grown);
  if (!grown) return TH_ERR_NOMEM;
  rep->removed = grown;
  store_gc_blob *b = &grown[rep->nremoved++];
  memset(b, 0, sizeof *b);
  snprintf(b->digest, sizeof b->digest, "%s", digest);
  snprintf(b->media_type, sizeof b->media_type, "%s", media ? media : "");
  b->size = size;
  b->leftover = leftover;
  return TH_OK;
}

/* The mark: every artifact row with its size, age and whether a live row references it, by digest (byte
 * order, for bsearch). The caller frees *out. */
static th_status store__gc_mark(store_t *st, store__gc_row **out, size_t *count) {
  static const char *const sql =
      "SELECT a.digest, a.media_type, a.size, coalesce(a.touched_at, a.created_at), " STORE__GC_LIVE(
          "a.digest") " FROM artifacts a ORDER BY a.digest {binary}";
  store__gc_row *rows = NULL;
  size_t n = 0, cap = 0;
  pthread_mutex_lock(&st->mu);
  db_stmt *s = NULL;
  th_status rc = store__prepare(st, sql, &s);
  int r = DB_DONE;
  while (rc == TH_OK && (r = db_step(s)) == DB_ROW) {
    store__gc_row *grown = store__grow(st, rows, &cap, n, sizeof *rows);
    if (!grown) {
      rc = TH_ERR_NOMEM;
      break;
    }
    rows = grown;
    store__gc_row *o = &rows[n++];
    store__col_copy(s, 0, o->digest, sizeof o->digest);
    store__col_copy(s, 1, o->media, sizeof o->media);
    o->size = db_col_int64(s, 2);
    o->touched = db_col_double(s, 3);
    o->live = db_col_int(s, 4);
  }
  if (rc == TH_OK && r != DB_DONE) rc = store__db_fail(st, "gc: mark the referenced artifacts");
  db_finalize(s);
  pthread_mutex_unlock(&st->mu);
  if (rc != TH_OK) {
    free(rows);
    return rc;
  }
  *out = rows;
  *count = n;
  return TH_OK;
}

/* Sweeps one unmarked artifact in a write transaction of its own, which excludes publishes and checks again
 * that it is unreferenced and older than cutoff (a publish or a put may have come since the mark): the rows
 * of the deleted versions that name it (each key's highest removed number kept in model_version_floor), its
 * row and engine copy, and its file. *gone = 1 when it went; *purged gets the version rows removed. */
static th_status store__gc_sweep_one(store_t *st, const char *hex, double cutoff, int *gone, int *purged) {
  char where[1400];
  /* the cutoff as a literal: %.17g reads back as the same double on both engines */
  snprintf(where, sizeof where, "coalesce(touched_at, created_at) < %.17g AND NOT " STORE__GC_LIVE("?1"),
           cutoff);
  char path[TH_PATH_MAX];
  store__artifact_file(st, hex, path, sizeof path);
  int went = 0, n = 0;
  pthread_mutex_lock(&st->mu);
  th_status rc = store__begin(st);
  if (rc == TH_OK)
    rc = store__run1(st,
                       "INSERT INTO model_version_floor (framework, network, batch, target, compiler_version, "
                       "precision, version) SELECT m.framework, m.network, m.batch, m.target, m.compiler_version, "
                       "m.precision, max(m.version) FROM models m WHERE " STORE__GC_DEAD_VERSION
                       " GROUP BY m.framework, m.network, m.batch, m.target, m.compiler_version, m.precision "
                       "ON CONFLICT (framework, network, batch, target, compiler_version, precision) DO UPDATE "
                       "SET version = "
                       "CASE WHEN excluded.version > model_version_floor.version THEN excluded.version "
                       "ELSE model_version_floor.version END",
                       hex, "gc: keep the numbers of removed versions", NULL);
  if (rc == TH_OK)
    rc = store__run1(st, "DELETE FROM models WHERE id IN (SELECT m.id FROM models m WHERE " STORE__GC_DEAD_VERSION ")",
                       hex, "gc: remove deleted versions", &n);
  /* the condition again, under the write lock: on PostgreSQL a put that touched the row meanwhile is seen
   * here (the delete re-reads a row updated since its snapshot), and one that touches it after waits for
   * this transaction and then inserts it anew */
  if (rc == TH_OK) rc = store__artifact_delete(st, hex, where, &went);
  /* The embedded store's file is the blob itself and goes before COMMIT, while the write lock holds off
   * every put: a put that placed these bytes beforehand finds its file gone once it has the lock, and
   * places it again (store_artifact_put). A commit that fails afterwards leaves an unreferenced row without
   * its file, which the next run removes. A shared store's file is a cache of the large object: it goes after
   * COMMIT, so that a put that re-inserts the row meanwhile still finds the bytes to copy. */
  if (rc == TH_OK && went && !st->blob->get && unlink(path) != 0 && errno != ENOENT)
    rc = store__fail(st, TH_ERR_IO, "gc: cannot remove %s: %s", path, strerror(errno));
  if (rc == TH_OK && !went) {
    db_rollback(st->db); /* kept after all: the version rows stay with it */
    n = 0;
  } else {
    rc = store__tx_end(st, rc);
  }
  pthread_mutex_unlock(&st->mu);
  if (rc != TH_OK) return rc;
  if (went && st->blob->get) unlink(path);
  *gone = went;
  *purged = n;
  return TH_OK;
}

static int store__gc_cmp(const void *key, const void *elem) {
  return strcmp(key, ((const store__gc_row *)elem)->digest);
}

/* Leftovers: files under artifacts/<ab>/ named by a digest that no row names, untouched since cutoff. rows
 * is the mark's view; a file it does not name is looked up again in a write transaction before it goes (a
 * put may have inserted its row since), and a put whose file went meanwhile places it again. */
static th_status store__gc_leftovers(store_t *st, const store__gc_row *rows, size_t nrows, double cutoff,
                                     int dry_run, store_gc_report *rep, size_t *cap) {
  DIR *top = opendir(st->artifacts_dir);
  if (!top) return TH_OK; /* nothing was ever stored */
  th_status rc = TH_OK;
  struct dirent *e;
  while (rc == TH_OK && (e = readdir(top)) != NULL) {
    if (strlen(e->d_name) != 2 || e->d_name[0] == '.') continue;
    char sub[TH_PATH_MAX];
    snprintf(sub, sizeof sub, "%s/%s", st->artifacts_dir, e->d_name);
    DIR *d = opendir(sub);
    if (!d) continue;
    struct dirent *f;
    while (rc == TH_OK && (f = readdir(d)) != NULL) {
      /* only names that are digests: anything else was put there by someone else */
      /* (rows is NULL when no artifact has a row: bsearch must not be handed it) */
      if (!th_is_sha256_hex(f->d_name) || (nrows > 0 && bsearch(f->d_name, rows, nrows, sizeof *rows, store__gc_cmp)))
        continue;
      char path[TH_PATH_MAX + TH_NAME_MAX]; /* sub and a name in it */
      snprintf(path, sizeof path, "%s/%s", sub, f->d_name);
      struct stat sb;
      if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode) || (double)sb.st_mtime >= cutoff) continue;
      int gone = dry_run;
      if (!dry_run) {
        pthread_mutex_lock(&st->mu);
        db_stmt *s = NULL;
        rc = store__begin(st);
        if (rc == TH_OK) rc = store__prepare(st, "SELECT 1 FROM artifacts WHERE digest = ?", &s);
        if (rc == TH_OK) {
          db_bind_text(s, 1, f->d_name);
          int r = db_step(s);
          /* only "no row" lets a file go; any other answer keeps it and stops the run */
          if (r == DB_DONE)
            gone = stat(path, &sb) == 0 && (double)sb.st_mtime < cutoff && unlink(path) == 0;
          else if (r != DB_ROW)
            rc = store__db_fail(st, "gc: look up a leftover file");
        }
        db_finalize(s);
        rc = store__tx_end(st, rc);
        pthread_mutex_unlock(&st->mu);
      }
      if (rc == TH_OK && gone) {
        rep->leftovers++;
        rep->leftover_bytes += (int64_t)sb.st_size;
        rc = store__gc_note(st, rep, cap, f->d_name, (int64_t)sb.st_size, NULL, 1);
      }
    }
    closedir(d);
  }
  closedir(top);
  return rc;
}

/* Takes the collector's lock: an advisory lock on a shared store, a lock file in the embedded store's data
 * directory (another command, or the daemon, may collect it at the same moment). *got 0: someone else
 * holds it. *fd gets the lock file's descriptor (-1 when none), closed by store__gc_unlock. */
static th_status store__gc_lock(store_t *st, int *got, int *fd) {
  *fd = -1;
  if (st->shared) {
    pthread_mutex_lock(&st->mu);
    th_status rc = db_try_lock(st->db, STORE__GC_LOCK, got);
    if (rc != TH_OK) rc = store__db_fail(st, "gc: take the collector's lock");
    pthread_mutex_unlock(&st->mu);
    return rc;
  }
  char path[TH_SUBDIR_MAX];
  snprintf(path, sizeof path, "%s/gc.lock", st->data_dir);
  int f = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (f < 0) return store__fail(st, TH_ERR_IO, "gc: cannot open %s: %s", path, strerror(errno));
  *got = flock(f, LOCK_EX | LOCK_NB) == 0;
  if (*got)
    *fd = f;
  else
    close(f);
  return TH_OK;
}

static void store__gc_unlock(store_t *st, int fd) {
  if (fd >= 0) {
    close(fd);
    return;
  }
  pthread_mutex_lock(&st->mu);
  (void)db_unlock(st->db, STORE__GC_LOCK); /* a lost connection released it already */
  pthread_mutex_unlock(&st->mu);
}

th_status store_gc(store_t *st, double grace_s, int dry_run, store_gc_report *out) {
  if (!(grace_s >= 0)) return store__fail(st, TH_ERR_INVALID, "the grace period is a number of seconds >= 0");
  store_gc_report rep;
  memset(&rep, 0, sizeof rep);
  rep.started_at = th_now_wall();
  double t0 = th_now_mono();
  /* the database's rows and the files are judged against one cutoff on this machine's clock, which also
   * stamped the rows it put (artifacts.created_at and touched_at are written by the putting process) */
  double cutoff = rep.started_at - grace_s;
  size_t cap = 0;
  int got = 0, fd = -1;
  th_status rc = store__gc_lock(st, &got, &fd);
  if (rc != TH_OK) return rc;
  rep.locked_out = !got;
  store__gc_row *rows = NULL;
  size_t nrows = 0;
  /* a shared store's process that is locked out still cleans its own cache of what the collector swept */
  if (got || st->shared) rc = store__gc_mark(st, &rows, &nrows);
  for (size_t i = 0; got && rc == TH_OK && i < nrows; i++) {
    store__gc_row *a = &rows[i];
    if (a->live) {
      rep.marked++;
      rep.marked_bytes += a->size;
      continue;
    }
    if (a->touched >= cutoff) {
      rep.young++;
      rep.young_bytes += a->size;
      continue;
    }
    int gone = 1;
    int purged = 0;
    if (!dry_run) rc = store__gc_sweep_one(st, a->digest, cutoff, &gone, &purged);
    if (rc != TH_OK) break;
    if (!gone) { /* referenced or touched since the mark */
      rep.young++;
      rep.young_bytes += a->size;
      continue;
    }
    rep.swept++;
    rep.swept_bytes += a->size;
    rep.versions_purged += purged;
    rc = store__gc_note(st, &rep, &cap, a->digest, a->size, a->media, 0);
  }
  /* a blob swept above is no leftover (its file is gone, or would be in a dry run): the mark's rows name it */
  if (rc == TH_OK && (got || st->shared)) rc = store__gc_leftovers(st, rows, nrows, cutoff, dry_run, &rep, &cap);
  free(rows);
  if (got) store__gc_unlock(st, fd);
  if (rc != TH_OK) {
    store_gc_report_free(&rep);
    return rc;
  }
  rep.seconds = th_now_mono() - t0;
  *out = rep;
  return TH_OK;
}
