/* The store: opening (an SQLite file, the embedded default, or a PostgreSQL URL), versioned
 * migrations, error handling and start-up recovery. One connection serves the whole process,
 * guarded by a mutex; metadata calls are short, so the lock is never held across slow work
 * (artifact copies happen before the lock is taken).
 *
 * What survives a power loss: the connection runs synchronous = NORMAL, under which WAL mode stays
 * consistent but may lose the last commits (jobs queued, progress, tuning records, deletes) to a
 * power loss or an OS crash, never to a crash of the process. A publish (store_model_publish)
 * commits with synchronous = FULL, so a version that was reported published survives a power loss,
 * together with everything committed before it. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "schema_sql.h"
#include "store_int.h"
#include "th_alloc.h"
#include "th_sha256.h"
#include "th_util.h"

static _Thread_local char store__errbuf[TH_ERR_MAX];
static _Thread_local const store_t *store__errowner;

th_status store__fail(store_t *st, th_status rc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(store__errbuf, sizeof store__errbuf, fmt, ap);
  va_end(ap);
  store__errowner = st;
  return rc;
}

th_status store__error_moves(store_t *src, store_t *dst, th_status rc) {
  if (store__errowner == src) store__errowner = dst;
  return rc;
}

th_status store__db_fail(store_t *st, const char *what) {
  th_status rc = db_errclass(st->db);
  /* SQLite busy past the wait: another process holds the write lock. Like a PostgreSQL server that went away,
   * a retry will succeed, so the server answers 503 with Retry-After (not 429 "queue full", not 500) and the
   * scheduler requeues a job instead of failing it. */
  if (rc == TH_ERR_BUSY && db_engine_of(st->db) != DB_POSTGRES) {
    store__fail(st, TH_ERR_UNAVAILABLE, "%s: %s (another process holds the database's write lock)", what,
                db_errmsg(st->db));
    return TH_ERR_UNAVAILABLE;
  }
  store__fail(st, rc == TH_ERR_CONFLICT ? TH_ERR_DB : rc, "%s: %s", what, db_errmsg(st->db));
  /* a constraint a statement broke is a database error to the callers, who check their conflicts
   * first */
  return rc == TH_ERR_CONFLICT ? TH_ERR_DB : rc;
}

void *store__grow(store_t *st, void *arr, size_t *cap, size_t n, size_t elem) {
  if (n < *cap) return arr;
  size_t ncap = *cap ? *cap * 2 : 16;
  void *grown = th_realloc(arr, ncap * elem);
  if (!grown) {
    store__fail(st, TH_ERR_NOMEM, "out of memory");
    return NULL;
  }
  *cap = ncap;
  return grown;
}

th_status store__prepare(store_t *st, const char *sql, db_stmt **out) {
  if (db_prepare(st->db, sql, out) != TH_OK) return store__db_fail(st, "prepare");
  return TH_OK;
}

th_status store__exec(store_t *st, const char *sql) {
  if (db_exec(st->db, sql) != TH_OK) return store__db_fail(st, "exec");
  return TH_OK;
}

th_status store__begin(store_t *st) {
  if (db_begin_write(st->db) != TH_OK) return store__db_fail(st, "begin a write transaction");
  return TH_OK;
}

th_status store__begin_rows(store_t *st) {
  if (db_engine_of(st->db) != DB_POSTGRES) return store__begin(st);
  return store__exec(st, "BEGIN");
}

th_status store__run1(store_t *st, const char *sql, const char *arg, const char *what, int *changes) {
  db_stmt *s = NULL;
  th_status rc = store__prepare(st, sql, &s);
  if (rc == TH_OK) {
    db_bind_text(s, 1, arg);
    if (db_step(s) != DB_DONE)
      rc = store__db_fail(st, what);
    else if (changes)
      *changes = (int)db_changes(st->db);
  }
  db_finalize(s);
  return rc;
}

th_status store__tx_end(store_t *st, th_status rc) {
  if (rc == TH_OK) rc = store__exec(st, "COMMIT");
  if (rc != TH_OK) db_rollback(st->db);
  return rc;
}

char *store__col_dup(db_stmt *s, int col) {
  const char *t = db_col_text(s, col);
  return t ? th_strdup(t) : NULL;
}

void store__col_copy(db_stmt *s, int col, char *out, size_t n) {
  const char *t = db_col_text(s, col);
  snprintf(out, n, "%s", t ? t : "");
}

const char *store_errmsg(store_t *st) {
  if (store__errowner != st) return ""; /* NULL asks for the last failed store_open's message */
  return store__errbuf;
}

const char *store_data_dir(store_t *st) {
  return st->data_dir;
}

void store_set_min_free(store_t *st, int64_t bytes) {
  st->min_free = bytes > 0 ? bytes : 0;
}

int64_t store_min_free(const store_t *st) {
  return st->min_free;
}

th_status store_free_space(store_t *st, int64_t *free_bytes) {
  struct statvfs v;
  if (statvfs(st->data_dir, &v) != 0)
    return store__fail(st, TH_ERR_IO, "cannot read the free space of %s: %s", st->data_dir,
                       strerror(errno));
  /* f_bavail: what an unprivileged writer may still use (the daemon should not eat root's reserve)
   */
  *free_bytes = (int64_t)v.f_bavail * (int64_t)v.f_frsize;
  return TH_OK;
}

th_status store_space_check(store_t *st, int64_t need, const char *what) {
  int64_t avail = 0;
  th_status rc = store_free_space(st, &avail);
  if (rc != TH_OK) return rc;
  if (need < 0) need = 0;
  if (avail - need >= st->min_free) return TH_OK;
  if (!what) what = "new work";
  if (need == 0)
    return store__fail(
        st, TH_ERR_NO_SPACE,
        "the disk is nearly full: %lld bytes free on %s, below the free-space floor of %lld bytes "
        "(--min-free); %s is refused",
        (long long)avail, st->data_dir, (long long)st->min_free, what);
  return store__fail(
      st, TH_ERR_NO_SPACE,
      "the disk is nearly full: %lld bytes free on %s; %s of %lld bytes would leave less than the "
      "free-space floor of %lld bytes (--min-free)",
      (long long)avail, st->data_dir, what, (long long)need, (long long)st->min_free);
}

/* Splits schema.sql at "-- migration N" markers and applies those above the schema version
 * (SQLite's user_version, PostgreSQL's tunehub_schema row). */
static th_status store__migrate(store_t *st) {
  /* One write transaction around the read of the version and the migrations, so that processes
   * opening a new database at the same moment apply each migration exactly once. */
  th_status rc = store__begin(st);
  if (rc != TH_OK) return rc;
  int current = 0;
  if (db_schema_version(st->db, &current) != TH_OK) {
    rc = store__db_fail(st, "read the schema version");
    db_rollback(st->db);
    return rc;
  }

  const char *p = store__schema_sql;
  const char *marker = "-- migration ";
  int latest = 0;
  while ((p = strstr(p, marker)) != NULL) {
    int n = (int)strtol(p + strlen(marker), NULL, 10);
    const char *body = strchr(p, '\n');
    if (!body) break;
    const char *next = strstr(body, marker);
    size_t len = next ? (size_t)(next - body) : strlen(body);
    if (n > latest) latest = n;
    if (n > current) {
      char *sql = th_strndup(body, len);
      if (!sql) {
        rc = store__fail(st, TH_ERR_NOMEM, "out of memory");
        break;
      }
      rc = store__exec(st, sql);
      if (rc == TH_OK && db_set_schema_version(st->db, n) != TH_OK)
        rc = store__db_fail(st, "set the schema version");
      free(sql);
      if (rc != TH_OK) {
        char keep[sizeof store__errbuf];
        snprintf(keep, sizeof keep, "%s", store__errbuf);
        store__fail(st, rc, "migration %d failed: %s", n, keep);
        break;
      }
      current = n;
    }
    p = body;
  }
  if (rc == TH_OK && current > latest)
    rc = store__fail(st, TH_ERR_CONFLICT,
                     "database schema version %d is newer than this tunehub (%d); upgrade tunehub",
                     current, latest);
  if (rc == TH_OK)
    rc = store__exec(st, "COMMIT");
  else
    db_rollback(st->db);
  return rc;
}

static void store__db_path(const char *data_dir, char *out, size_t n) {
  snprintf(out, n, "%s/tunehub.db", data_dir);
}

int store_exists(const char *data_dir) {
  char dbpath[TH_SUBDIR_MAX];
  store__db_path(data_dir, dbpath, sizeof dbpath);
  return access(dbpath, R_OK) == 0;
}

/* st->owner: "<host>:<data directory's absolute path>" (see store_owner). */
static void store__owner_init(store_t *st) {
  char host[TH_NAME_MAX] = "localhost", dir[PATH_MAX];
  if (gethostname(host, sizeof host - 1) != 0) snprintf(host, sizeof host, "localhost");
  host[sizeof host - 1] = '\0';
  if (!realpath(st->data_dir, dir)) snprintf(dir, sizeof dir, "%s", st->data_dir);
  snprintf(st->owner, sizeof st->owner, "%s:%.*s", host, TH_DIR_MAX - 1, dir);
}

const char *store_owner(const store_t *st) {
  return st->owner;
}

/* Frees the handle and what it owns. */
static void store__free(store_t *st) {
  db_close(st->fetch_db);
  db_close(st->db);
  pthread_mutex_destroy(&st->fetch_mu);
  pthread_mutex_destroy(&st->mu);
  free(st);
}

#define STORE__URL_FORM \
  "a PostgreSQL URL (postgresql://USER[:PASSWORD]@HOST[:PORT]/DBNAME, or ?host=SOCKETDIR)"

th_status store_db_resolve(const char *flag, const char **spec, char *err, size_t n) {
  const char *env = getenv("TUNEHUB_DB");
  const char *v = flag ? flag : env && env[0] ? env : NULL;
  if (v && !db_is_postgres_url(v)) {
    snprintf(err, n,
             "%s takes " STORE__URL_FORM
             ", not '%.200s'; without --db and TUNEHUB_DB the store is the SQLite "
             "file in the data directory",
             flag ? "--db" : "the environment variable TUNEHUB_DB", v);
    return TH_ERR_INVALID;
  }
  *spec = v;
  return TH_OK;
}

int store_is_db_url(const char *spec) {
  return db_is_postgres_url(spec);
}

void store_describe(const char *db_spec, const char *data_dir, char *out, size_t n) {
  if (db_spec)
    db_display_spec(db_spec, out, n);
  else
    snprintf(out, n, "%s", data_dir);
}

th_status store_exists_db(const char *db_spec, const char *data_dir, int *exists) {
  if (!db_spec) {
    *exists = store_exists(data_dir);
    return TH_OK;
  }
  if (!db_is_postgres_url(db_spec))
    return store__fail(NULL, TH_ERR_INVALID, "the store's database must be " STORE__URL_FORM);
  db_t *db = NULL;
  char err[TH_ERR_MAX];
  th_status rc = db_open(db_spec, &db, err, sizeof err);
  if (rc != TH_OK) return store__fail(NULL, rc, "%s", err);
  db_stmt *s = NULL;
  rc = db_prepare(db, "SELECT to_regclass('tunehub_schema') IS NOT NULL", &s);
  int r = rc == TH_OK ? db_step(s) : DB_ERROR;
  if (r == DB_ROW)
    *exists = db_col_int(s, 0);
  else
    rc = store__fail(NULL, db_errclass(db), "%s", db_errmsg(db));
  db_finalize(s);
  db_close(db);
  return rc;
}

th_status store_open(const char *data_dir, store_t **out) {
  return store_open_db(NULL, data_dir, out);
}

th_status store_open_db(const char *db_spec, const char *data_dir, store_t **out) {
  store_t *st = th_calloc(1, sizeof *st);
  if (!st) return TH_ERR_NOMEM;
  pthread_mutex_init(&st->mu, NULL);
  pthread_mutex_init(&st->fetch_mu, NULL);
  th_status rc = TH_OK;
  if (snprintf(st->data_dir, sizeof st->data_dir, "%s", data_dir) >= (int)sizeof st->data_dir) {
    rc = store__fail(st, TH_ERR_INVALID, "data directory path too long");
    goto fail;
  }
  snprintf(st->artifacts_dir, sizeof st->artifacts_dir, "%s/artifacts", data_dir);
  snprintf(st->tmp_dir, sizeof st->tmp_dir, "%s/tmp", data_dir);
  if (th_mkdir_p(st->artifacts_dir) != TH_OK || th_mkdir_p(st->tmp_dir) != TH_OK) {
    rc = store__fail(st, TH_ERR_IO, "cannot create %s: %s", st->artifacts_dir, strerror(errno));
    goto fail;
  }
  st->shared = db_spec && db_is_postgres_url(db_spec);
  store__origin_init(st);
  if (db_spec && !st->shared) {
    rc = store__fail(
        st, TH_ERR_INVALID,
        "the store's database must be " STORE__URL_FORM
        ", not '%.200s'; without one the store is the SQLite file in the data directory",
        db_spec);
    goto fail;
  }
  char dbpath[TH_SUBDIR_MAX], err[TH_ERR_MAX];
  store__db_path(data_dir, dbpath, sizeof dbpath);
  rc = db_open(st->shared ? db_spec : dbpath, &st->db, err, sizeof err);
  if (rc != TH_OK) {
    store__fail(st, rc, "%s", err);
    goto fail;
  }
  st->blob = store_blob_engine(db_engine_of(st->db));
  store__owner_init(st);
  /* Switching a new SQLite database to WAL and migrating it can report "database is locked" without
   * waiting when several processes open it at once (SQLite skips the busy handler to avoid deadlock
   * there), so those steps are retried for up to about 15 s; PostgreSQL's migrations wait on the
   * write lock instead. synchronous = NORMAL: see the note at the top of this file for what a power
   * loss takes away. */
  for (int attempt = 0;; attempt++) {
    rc = st->shared ? TH_OK
                    : store__exec(st,
                                  "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; "
                                  "PRAGMA foreign_keys = ON;");
    if (rc == TH_OK) rc = store__migrate(st);
    /* (a locked SQLite file is TH_ERR_UNAVAILABLE: store__db_fail) */
    if ((rc != TH_ERR_BUSY && (rc != TH_ERR_UNAVAILABLE || st->shared)) || attempt >= 300) break;
    usleep(50000);
  }
  if (rc != TH_OK) goto fail;
  *out = st;
  return TH_OK;

fail:
  /* the message stays readable as store_errmsg(NULL) once the handle is gone */
  store__errowner = NULL;
  store__free(st);
  return rc;
}

void store_close(store_t *st) {
  if (st) store__free(st);
}

void store_wait_limit(int ms) {
  db_busy_limit(ms);
}

int store_shared(const store_t *st) {
  return st->shared;
}

const char *store_db_display(const store_t *st) {
  return db_display(st->db);
}

/* Removes files in dir that are not known artifacts and adds their number to *swept; dir is tmp/
 * (check_rows 0: everything goes) or artifacts/<ab>. On a shared store (PostgreSQL) other processes
 * may be writing into the same directory, so only files untouched for an hour go. Only DB_DONE, "no
 * row", lets an artifact file go: any other answer of the database (busy, I/O error, corruption)
 * stops the sweep with that error, because deleting a published artifact on a failing lookup would
 * break every version that references it. */
static th_status store__sweep_dir(store_t *st, const char *dir, int check_rows, int *swept) {
  DIR *d = opendir(dir);
  if (!d) return TH_OK; /* nothing to sweep (a shard can be removed by hand) */
  db_stmt *s = NULL;
  th_status rc = TH_OK;
  if (check_rows) rc = store__prepare(st, "SELECT 1 FROM artifacts WHERE digest = ?", &s);
  struct dirent *e;
  while (rc == TH_OK && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char path[TH_PATH_MAX + TH_NAME_MAX]; /* dir (at most a store file's path) and a name in it */
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat sb;
    if (st->shared && (stat(path, &sb) != 0 || sb.st_mtime > time(NULL) - 3600)) continue;
    if (check_rows && th_is_sha256_hex(e->d_name)) {
      db_reset(s);
      db_bind_text(s, 1, e->d_name);
      int r = db_step(s);
      if (r == DB_ROW) continue;
      if (r != DB_DONE) {
        rc = store__db_fail(st, "orphan sweep: look up an artifact");
        break;
      }
    }
    if (unlink(path) == 0) (*swept)++;
  }
  db_finalize(s);
  closedir(d);
  return rc;
}

/* Runs sql (UPDATE jobs ... RETURNING id) with ?1 bound to owner (NULL: left unbound, an SQL NULL);
 * *changed gets the rows it changed, each announced as kind (so that other processes hear of it).
 */
static th_status store__jobs_of(store_t *st, const char *sql, const char *owner,
                                store_event_kind kind, int *changed) {
  db_stmt *s = NULL;
  th_status rc = store__prepare(st, sql, &s);
  int n = 0, r = DB_DONE;
  if (rc == TH_OK) {
    if (owner) db_bind_text(s, 1, owner);
    while (rc == TH_OK && (r = db_step(s)) == DB_ROW) {
      n++;
      rc = store__announce(st, db_col_int64(s, 0), kind, 0, 0, NULL);
    }
    if (rc == TH_OK && r != DB_DONE) rc = store__db_fail(st, "recover jobs");
  }
  db_finalize(s);
  if (rc == TH_OK) *changed = n;
  return rc;
}

th_status store_recover(store_t *st, int *requeued, int *swept) {
  pthread_mutex_lock(&st->mu);
  /* The embedded store belongs to this one process: every running job is an orphan of its last run.
   * A shared store's running jobs belong to live workers elsewhere, but the ones claimed under this
   * data directory's owner name were left by this directory's previous daemon (one daemon holds a
   * data directory at a time). */
  const char *owner = st->shared ? st->owner : NULL;
  int req = 0, cancelled = 0;
  th_status rc = store__jobs_of(
      st,
      "UPDATE jobs SET state = 'cancelled', error = 'cancelled', finished_at = {now} "
      "WHERE state = 'running' AND cancel_requested = 1 AND (?1 IS NULL OR worker = ?1) "
      "RETURNING id",
      owner, STORE_EV_DONE, &cancelled);
  if (rc == TH_OK)
    rc = store__jobs_of(
        st,
        "UPDATE jobs SET state = 'queued', stage = 'requeued after restart', worker = NULL "
        "WHERE state = 'running' AND (?1 IS NULL OR worker = ?1) RETURNING id",
        owner, STORE_EV_QUEUED, &req);
  int sw = 0;
  if (rc == TH_OK) rc = store__sweep_dir(st, st->tmp_dir, 0, &sw);
  if (rc == TH_OK) {
    DIR *d = opendir(st->artifacts_dir);
    if (d) {
      struct dirent *e;
      while (rc == TH_OK && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char sub[TH_PATH_MAX];
        snprintf(sub, sizeof sub, "%s/%s", st->artifacts_dir, e->d_name);
        rc = store__sweep_dir(st, sub, 1, &sw);
      }
      closedir(d);
    }
  }
  pthread_mutex_unlock(&st->mu);
  if (rc != TH_OK) return rc;
  if (requeued) *requeued = req;
  if (swept) *swept = sw;
  return TH_OK;
}
