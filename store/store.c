/* The SQLite store: opening, migrations by PRAGMA user_version, error handling and start-up recovery. One
 * connection in WAL mode serves the whole process, guarded by a mutex; metadata calls are short, so the lock is
 * never held across slow work (artifact copies happen before the lock is taken).
 *
 * What survives a power loss: the connection runs synchronous = NORMAL, under which WAL mode stays consistent
 * but may lose the last commits (jobs queued, progress, tuning records, deletes) to a power loss or an OS crash,
 * never to a crash of the process. A publish (store_model_publish) commits with synchronous = FULL, so a version
 * that was reported published survives a power loss, together with everything committed before it. */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "schema_sql.h"
#include "store_int.h"
#include "th_sha256.h"
#include "th_util.h"

static _Thread_local char store__errbuf[1024];
static _Thread_local const store_t *store__errowner;

th_status store__fail(store_t *st, th_status rc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(store__errbuf, sizeof store__errbuf, fmt, ap);
  va_end(ap);
  store__errowner = st;
  return rc;
}

th_status store__db_fail(store_t *st, const char *what) {
  int code = sqlite3_errcode(st->db);
  store__fail(st, TH_ERR_DB, "%s: %s", what, sqlite3_errmsg(st->db));
  return code == SQLITE_BUSY || code == SQLITE_LOCKED ? TH_ERR_BUSY : TH_ERR_DB;
}

void *store__grow(store_t *st, void *arr, size_t *cap, size_t n, size_t elem) {
  if (n < *cap) return arr;
  size_t ncap = *cap ? *cap * 2 : 16;
  void *grown = realloc(arr, ncap * elem);
  if (!grown) {
    store__fail(st, TH_ERR_NOMEM, "out of memory");
    return NULL;
  }
  *cap = ncap;
  return grown;
}

th_status store__prepare(store_t *st, const char *sql, sqlite3_stmt **out) {
  if (sqlite3_prepare_v2(st->db, sql, -1, out, NULL) != SQLITE_OK) return store__db_fail(st, "prepare");
  return TH_OK;
}

th_status store__exec(store_t *st, const char *sql) {
  char *msg = NULL;
  int r = sqlite3_exec(st->db, sql, NULL, NULL, &msg);
  if (r != SQLITE_OK) {
    th_status rc = (r & 0xff) == SQLITE_BUSY || (r & 0xff) == SQLITE_LOCKED ? TH_ERR_BUSY : TH_ERR_DB;
    store__fail(st, rc, "%s", msg ? msg : sqlite3_errmsg(st->db));
    sqlite3_free(msg);
    return rc;
  }
  return TH_OK;
}

char *store__col_dup(sqlite3_stmt *s, int col) {
  const unsigned char *t = sqlite3_column_text(s, col);
  return t ? strdup((const char *)t) : NULL;
}

void store__col_copy(sqlite3_stmt *s, int col, char *out, size_t n) {
  const unsigned char *t = sqlite3_column_text(s, col);
  snprintf(out, n, "%s", t ? (const char *)t : "");
}

const char *store_errmsg(store_t *st) {
  if (store__errowner != st) return "";  /* NULL asks for the last failed store_open's message */
  return store__errbuf;
}

const char *store_data_dir(store_t *st) {
  return st->data_dir;
}

/* Splits schema.sql at "-- migration N" markers and applies those above the current user_version. */
static th_status store__migrate(store_t *st) {
  /* One IMMEDIATE transaction around the read of user_version and the migrations, so that processes
   * opening a new database at the same moment apply each migration exactly once. */
  th_status rc = store__exec(st, "BEGIN IMMEDIATE");
  if (rc != TH_OK) return rc;
  sqlite3_stmt *s = NULL;
  rc = store__prepare(st, "PRAGMA user_version", &s);
  int current = 0;
  if (rc == TH_OK && sqlite3_step(s) == SQLITE_ROW) current = sqlite3_column_int(s, 0);
  sqlite3_finalize(s);
  if (rc != TH_OK) {
    sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
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
      char *sql = strndup(body, len);
      if (!sql) {
        rc = store__fail(st, TH_ERR_NOMEM, "out of memory");
        break;
      }
      rc = store__exec(st, sql);
      if (rc == TH_OK) {
        char pragma[64];
        snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d", n);
        rc = store__exec(st, pragma);
      }
      free(sql);
      if (rc != TH_OK) {
        char keep[1024];
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
    sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
  return rc;
}

static void store__db_path(const char *data_dir, char *out, size_t n) {
  snprintf(out, n, "%s/tunehub.db", data_dir);
}

int store_exists(const char *data_dir) {
  char dbpath[1200];
  store__db_path(data_dir, dbpath, sizeof dbpath);
  return access(dbpath, R_OK) == 0;
}

th_status store_open(const char *data_dir, store_t **out) {
  store_t *st = calloc(1, sizeof *st);
  if (!st) return TH_ERR_NOMEM;
  pthread_mutex_init(&st->mu, NULL);
  th_status rc = TH_OK;
  if (snprintf(st->data_dir, sizeof st->data_dir, "%s", data_dir) >= (int)sizeof st->data_dir) {
    rc = store__fail(st, TH_ERR_INVALID, "data directory path too long");
    goto fail_alloc;
  }
  snprintf(st->artifacts_dir, sizeof st->artifacts_dir, "%s/artifacts", data_dir);
  snprintf(st->tmp_dir, sizeof st->tmp_dir, "%s/tmp", data_dir);
  if (th_mkdir_p(st->artifacts_dir) != TH_OK || th_mkdir_p(st->tmp_dir) != TH_OK) {
    rc = store__fail(st, TH_ERR_IO, "cannot create %s: %s", st->artifacts_dir, strerror(errno));
    goto fail_alloc;
  }
  char dbpath[1200];
  store__db_path(data_dir, dbpath, sizeof dbpath);
  if (sqlite3_open_v2(dbpath, &st->db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, NULL) !=
      SQLITE_OK) {
    rc = store__fail(st, TH_ERR_DB, "cannot open %s: %s", dbpath,
                     st->db ? sqlite3_errmsg(st->db) : "out of memory");
    goto fail_db;
  }
  sqlite3_busy_timeout(st->db, 15000);
  /* synchronous = NORMAL: see the note at the top of this file for what a power loss takes away */
  /* Switching a new database to WAL and migrating it can report "database is locked" without waiting
   * when several processes open it at once (SQLite skips the busy handler to avoid deadlock there), so
   * those steps are retried for up to about 15 s. */
  for (int attempt = 0;; attempt++) {
    rc = store__exec(st,
                     "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;");
    if (rc == TH_OK) rc = store__migrate(st);
    if (rc != TH_ERR_BUSY || attempt >= 300) break;
    usleep(50000);
  }
  if (rc != TH_OK) goto fail_db;
  *out = st;
  return TH_OK;

fail_db:
  /* keep the message for the caller: it reads it through a NULL-safe path below */
  sqlite3_close(st->db);
fail_alloc:
  pthread_mutex_destroy(&st->mu);
  store__errowner = NULL; /* the handle dies here: the message stays readable as store_errmsg(NULL) */
  free(st);
  return rc;
}

void store_close(store_t *st) {
  if (!st) return;
  sqlite3_close(st->db);
  pthread_mutex_destroy(&st->mu);
  free(st);
}

/* Removes files in dir that are not known artifacts and adds their number to *swept; dir is tmp/ (check_rows 0:
 * everything goes) or artifacts/<ab>. Only SQLITE_DONE, "no row", lets an artifact file go: any other answer of
 * the database (busy, I/O error, corruption) stops the sweep with that error, because deleting a published
 * artifact on a failing lookup would break every version that references it. */
static th_status store__sweep_dir(store_t *st, const char *dir, int check_rows, int *swept) {
  DIR *d = opendir(dir);
  if (!d) return TH_OK; /* nothing to sweep (a shard can be removed by hand) */
  sqlite3_stmt *s = NULL;
  th_status rc = TH_OK;
  if (check_rows) rc = store__prepare(st, "SELECT 1 FROM artifacts WHERE digest = ?", &s);
  struct dirent *e;
  while (rc == TH_OK && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char path[2400];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (check_rows && th_is_sha256_hex(e->d_name)) {
      sqlite3_reset(s);
      sqlite3_bind_text(s, 1, e->d_name, -1, SQLITE_TRANSIENT);
      int r = sqlite3_step(s);
      if (r == SQLITE_ROW) continue;
      if (r != SQLITE_DONE) {
        rc = store__db_fail(st, "orphan sweep: look up an artifact");
        break;
      }
    }
    if (unlink(path) == 0) (*swept)++;
  }
  sqlite3_finalize(s);
  closedir(d);
  return rc;
}

th_status store_recover(store_t *st, int *requeued, int *swept) {
  pthread_mutex_lock(&st->mu);
  th_status rc = store__exec(st,
                             "UPDATE jobs SET state = 'cancelled', error = 'cancelled', "
                             "finished_at = (julianday('now') - 2440587.5) * 86400.0 "
                             "WHERE state = 'running' AND cancel_requested = 1");
  if (rc == TH_OK)
    rc = store__exec(st,
                     "UPDATE jobs SET state = 'queued', stage = 'requeued after restart', "
                     "worker = NULL WHERE state = 'running'");
  int req = rc == TH_OK ? sqlite3_changes(st->db) : 0;
  int sw = 0;
  if (rc == TH_OK) rc = store__sweep_dir(st, st->tmp_dir, 0, &sw);
  if (rc == TH_OK) {
    DIR *d = opendir(st->artifacts_dir);
    if (d) {
      struct dirent *e;
      while (rc == TH_OK && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char sub[1400];
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
