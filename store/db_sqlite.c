/* The db layer's SQLite engine: one file in WAL mode, foreign keys on, and a busy handler that waits for
 * another process's write lock up to 15 s, or up to what the process set (db_busy_limit). */
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "db_int.h"
#include "th_util.h"

/* The wait for another process's lock. The default (15 s) rides out a long transaction of a command line tool.
 * The daemon sets a short one: its store is one connection under one mutex, so a statement waiting for the
 * lock holds up every request behind it, reads of published models included (a hit waited the whole 10 s that
 * another process held the write lock). */
#define DB__BUSY_DEFAULT_MS 15000
static _Atomic int db__busy_limit_ms = DB__BUSY_DEFAULT_MS;
static _Thread_local double db__busy_since; /* when the calling thread's current wait began */

void db_busy_limit(int ms) {
  db__busy_limit_ms = ms < 0 ? DB__BUSY_DEFAULT_MS : ms;
}

static int db__sq_busy(void *arg, int count) {
  (void)arg;
  double now = th_now_mono();
  if (count == 0) db__busy_since = now;
  if ((now - db__busy_since) * 1000 >= db__busy_limit_ms) return 0; /* give up: the step fails with SQLITE_BUSY */
  usleep(count < 10 ? 1000u + 2000u * (unsigned)count : 25000u);
  return 1;
}

static th_status db__sq_class(int code) {
  code &= 0xff;
  if (code == SQLITE_BUSY || code == SQLITE_LOCKED) return TH_ERR_BUSY;
  if (code == SQLITE_CONSTRAINT) return TH_ERR_CONFLICT;
  if (code == SQLITE_NOMEM) return TH_ERR_NOMEM;
  return TH_ERR_DB;
}

static th_status db__sq_fail(db_t *db, const char *what) {
  sqlite3 *h = db->h;
  return db__fail(db, db__sq_class(sqlite3_extended_errcode(h)), "%s: %s", what, sqlite3_errmsg(h));
}

th_status db__sq_open(db_t *db, const char *path) {
  sqlite3 *h = NULL;
  int r = sqlite3_open_v2(path, &h,
                          SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, NULL);
  db->h = h;
  if (r != SQLITE_OK)
    return db__fail(db, TH_ERR_DB, "cannot open %s: %s", path,
                    h ? sqlite3_errmsg(h) : "out of memory");
  sqlite3_busy_handler(h, db__sq_busy, NULL);
  return TH_OK;
}

void db__sq_close(db_t *db) {
  sqlite3_close(db->h);
  db->h = NULL;
}

th_status db__sq_exec(db_t *db, const char *sql) {
  char *msg = NULL;
  int r = sqlite3_exec(db->h, sql, NULL, NULL, &msg);
  if (r != SQLITE_OK) {
    db__fail(db, db__sq_class(r), "%s", msg ? msg : sqlite3_errmsg(db->h));
    sqlite3_free(msg);
    return db->errclass;
  }
  db->changes = sqlite3_changes(db->h);
  return TH_OK;
}

th_status db__sq_prepare(db_stmt *s) {
  sqlite3_stmt *h = NULL;
  if (sqlite3_prepare_v2(s->db->h, s->sql, -1, &h, NULL) != SQLITE_OK)
    return db__sq_fail(s->db, "prepare");
  s->h = h;
  return TH_OK;
}

/* Binds the kept parameters (on the first step after prepare or reset). */
static void db__sq_bind(db_stmt *s) {
  sqlite3_stmt *h = s->h;
  sqlite3_clear_bindings(h);
  for (int i = 0; i < s->nparams; i++) {
    const db__param *p = &s->params[i];
    if (p->type == DB__P_TEXT)
      sqlite3_bind_text(h, i + 1, p->text, -1, SQLITE_STATIC);
    else if (p->type == DB__P_INT64)
      sqlite3_bind_int64(h, i + 1, p->i);
    else if (p->type == DB__P_DOUBLE)
      sqlite3_bind_double(h, i + 1, p->d);
    else
      sqlite3_bind_null(h, i + 1);
  }
}

int db__sq_step(db_stmt *s) {
  if (!s->ran) {
    db__sq_bind(s);
    s->ran = 1;
  }
  int r = sqlite3_step(s->h);
  if (r == SQLITE_ROW) return DB_ROW;
  if (r == SQLITE_DONE) {
    s->db->changes = sqlite3_changes(s->db->h);
    return DB_DONE;
  }
  db__sq_fail(s->db, "step");
  return DB_ERROR;
}

void db__sq_reset(db_stmt *s) {
  sqlite3_reset(s->h);
  s->ran = 0;
}

void db__sq_finalize(db_stmt *s) {
  sqlite3_finalize(s->h);
  s->h = NULL;
}

int db__sq_is_null(db_stmt *s, int col) {
  return sqlite3_column_type(s->h, col) == SQLITE_NULL;
}

const char *db__sq_text(db_stmt *s, int col) {
  return (const char *)sqlite3_column_text(s->h, col);
}

int64_t db__sq_int64(db_stmt *s, int col) {
  return sqlite3_column_int64(s->h, col);
}

double db__sq_double(db_stmt *s, int col) {
  return sqlite3_column_double(s->h, col);
}

th_status db__sq_begin_write(db_t *db) {
  return db__sq_exec(db, "BEGIN IMMEDIATE");
}

th_status db__sq_durable(db_t *db, int full) {
  return db__sq_exec(db, full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL");
}

th_status db__sq_schema_version(db_t *db, int *v) {
  sqlite3_stmt *h = NULL;
  if (sqlite3_prepare_v2(db->h, "PRAGMA user_version", -1, &h, NULL) != SQLITE_OK)
    return db__sq_fail(db, "read the schema version");
  int r = sqlite3_step(h);
  if (r == SQLITE_ROW) *v = sqlite3_column_int(h, 0);
  sqlite3_finalize(h);
  return r == SQLITE_ROW ? TH_OK : db__sq_fail(db, "read the schema version");
}

th_status db__sq_set_schema_version(db_t *db, int v) {
  char sql[64];
  snprintf(sql, sizeof sql, "PRAGMA user_version = %d", v);
  return db__sq_exec(db, sql);
}
