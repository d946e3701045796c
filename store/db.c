/* The db layer's engine-neutral half: opening by spec, translating the SQL markers once per
 * statement, keeping parameters, and dispatching to the SQLite or PostgreSQL engine. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_int.h"
#include "th_alloc.h"

int db_is_postgres_url(const char *spec) {
  return spec && (strncmp(spec, "postgresql://", 13) == 0 || strncmp(spec, "postgres://", 11) == 0);
}

void db_display_spec(const char *spec, char *out, size_t n) {
  const char *scheme = strstr(spec, "://");
  const char *at = scheme ? strchr(scheme + 3, '@') : NULL;
  const char *colon = at ? memchr(scheme + 3, ':', (size_t)(at - scheme - 3)) : NULL;
  if (!colon) {
    snprintf(out, n, "%s", spec);
    return;
  }
  snprintf(out, n, "%.*s:***%s", (int)(colon - spec), spec, at);
}

th_status db_open(const char *spec, db_t **out, char *err, size_t n) {
  *out = NULL;
  db_t *db = th_calloc(1, sizeof *db);
  if (!db) {
    snprintf(err, n, "out of memory");
    return TH_ERR_NOMEM;
  }
  db->engine = db_is_postgres_url(spec) ? DB_POSTGRES : DB_SQLITE;
  db_display_spec(spec, db->display, sizeof db->display);
  th_status rc = db->engine == DB_POSTGRES ? db__pg_open(db, spec) : db__sq_open(db, spec);
  if (rc != TH_OK) {
    snprintf(err, n, "%s", db->err);
    db_close(db);
    return rc;
  }
  *out = db;
  return TH_OK;
}

th_status db_open_again(const db_t *db, db_t **out, char *err, size_t n) {
  if (db->engine != DB_POSTGRES) {
    snprintf(err, n, "a second connection is made only to PostgreSQL");
    return TH_ERR_UNSUPPORTED;
  }
  return db_open(db->conninfo, out, err, n);
}

void db_close(db_t *db) {
  if (!db) return;
  if (db->engine == DB_POSTGRES)
    db__pg_close(db);
  else
    db__sq_close(db);
  free(db->conninfo);
  free(db);
}

db_engine db_engine_of(const db_t *db) {
  return db->engine;
}

const char *db_display(const db_t *db) {
  return db->display;
}

const char *db_errmsg(const db_t *db) {
  return db->err;
}

th_status db_errclass(const db_t *db) {
  return db->errclass ? db->errclass : TH_ERR_DB;
}

/* The engine's text for a marker name, or NULL when name is none of them. */
static const char *db__marker(db_engine e, const char *name, size_t len) {
  static const struct {
    const char *name, *sqlite, *pg;
  } m[] = {
      {"now", "((julianday('now') - 2440587.5) * 86400.0)",
       "extract(epoch from clock_timestamp())::float8"},
      {"skip_locked", "", "FOR UPDATE SKIP LOCKED"},
      {"for_share", "", "FOR SHARE"},
      {"id", "INTEGER PRIMARY KEY", "BIGSERIAL PRIMARY KEY"},
      {"real", "REAL", "DOUBLE PRECISION"},
      {"blob", "BLOB", "BYTEA"},
      {"binary", "", "COLLATE \"C\""},
      {"postgresql", "--", ""},
  };
  for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
    if (strlen(m[i].name) == len && memcmp(m[i].name, name, len) == 0)
      return e == DB_POSTGRES ? m[i].pg : m[i].sqlite;
  return NULL;
}

/* Translates sql for the engine: markers, and for PostgreSQL the parameters ? and ?N into $k.
 * Quoted strings
 * ('...', "...") and comments (-- to the end of the line) pass unchanged. NULL when out of memory.
 * The output is sized up front: a parameter grows from one character to at most four ($999), a
 * marker of at least three characters ({id}) to at most 64. */
static char *db__translate(db_engine e, const char *sql, int *nref) {
  size_t len = strlen(sql), braces = 0;
  for (const char *p = sql; *p; p++) braces += *p == '{';
  size_t cap = len * 4 + braces * 64 + 1;
  char *out = th_malloc(cap);
  if (!out) return NULL;
  size_t n = 0;
  int next = 0;
  for (const char *p = sql; *p;) {
    if (*p == '\'' || *p == '"') {
      char q = *p;
      out[n++] = *p++;
      while (*p) {
        out[n++] = *p;
        if (*p++ == q) break;
      }
      continue;
    }
    if (p[0] == '-' && p[1] == '-') {
      while (*p && *p != '\n') out[n++] = *p++;
      continue;
    }
    if (*p == '{') {
      const char *end = strchr(p, '}');
      const char *t = end ? db__marker(e, p + 1, (size_t)(end - p - 1)) : NULL;
      if (t) {
        size_t tl = strlen(t);
        memcpy(out + n, t, tl);
        n += tl;
        p = end + 1;
        continue;
      }
    }
    if (*p == '?' && e == DB_POSTGRES) {
      p++;
      int k;
      if (*p >= '0' && *p <= '9') {
        char *after;
        k = (int)strtol(p, &after, 10);
        p = after;
      } else {
        k = ++next;
      }
      n += (size_t)snprintf(out + n, cap - n, "$%d", k);
      if (nref && k > *nref) *nref = k;
      continue;
    }
    out[n++] = *p++;
  }
  out[n] = '\0';
  return out;
}

th_status db_exec(db_t *db, const char *sql) {
  char *t = db__translate(db->engine, sql, NULL);
  if (!t) return db__fail(db, TH_ERR_NOMEM, "out of memory");
  th_status rc = db->engine == DB_POSTGRES ? db__pg_exec(db, t) : db__sq_exec(db, t);
  free(t);
  return rc;
}

th_status db_prepare(db_t *db, const char *sql, db_stmt **out) {
  *out = NULL;
  db_stmt *s = th_calloc(1, sizeof *s);
  if (!s) return db__fail(db, TH_ERR_NOMEM, "out of memory");
  s->db = db;
  s->sql = db__translate(db->engine, sql, &s->nref);
  if (s->nref > DB__MAX_PARAMS) {
    free(s->sql);
    free(s);
    return db__fail(db, TH_ERR_INVALID, "a statement takes at most %d parameters", DB__MAX_PARAMS);
  }
  if (!s->sql) {
    free(s);
    return db__fail(db, TH_ERR_NOMEM, "out of memory");
  }
  if (db->engine == DB_SQLITE) {
    th_status rc = db__sq_prepare(s);
    if (rc != TH_OK) {
      free(s->sql);
      free(s);
      return rc;
    }
  }
  *out = s;
  return TH_OK;
}

static db__param *db__param_at(db_stmt *s, int i) {
  if (i < 1 || i > DB__MAX_PARAMS) return NULL;
  db__param *p = &s->params[i - 1];
  free(p->text);
  memset(p, 0, sizeof *p);
  p->bound = 1;
  if (i > s->nparams) s->nparams = i;
  return p;
}

void db_bind_text(db_stmt *s, int i, const char *v) {
  db__param *p = db__param_at(s, i);
  if (!p) return;
  if (!v) {
    p->null_text = 1;
    return;
  }
  p->text = th_strdup(v);
  if (p->text)
    p->type = DB__P_TEXT;
  else
    p->oom = 1;
}

/* A number's text for PostgreSQL, in p->text (NULL when out of memory). */
static void db__param_format(db__param *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void db__param_format(db__param *p, const char *fmt, ...) {
  char t[32]; /* "%lld" and "%.17g" need at most 24 */
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t, sizeof t, fmt, ap);
  va_end(ap);
  p->text = th_strdup(t);
  if (!p->text) p->oom = 1;
}

void db_bind_int64(db_stmt *s, int i, int64_t v) {
  db__param *p = db__param_at(s, i);
  if (!p) return;
  p->type = DB__P_INT64;
  p->i = v;
  if (s->db->engine == DB_POSTGRES) db__param_format(p, "%lld", (long long)v);
}

void db_bind_int(db_stmt *s, int i, int v) {
  db_bind_int64(s, i, v);
}

void db_bind_double(db_stmt *s, int i, double v) {
  db__param *p = db__param_at(s, i);
  if (!p) return;
  p->type = DB__P_DOUBLE;
  p->d = v;
  if (s->db->engine == DB_POSTGRES) db__param_format(p, "%.17g", v);
}

void db_bind_null(db_stmt *s, int i) {
  db__param_at(s, i);
}

int db_step(db_stmt *s) {
  for (int i = 0; i < s->nparams; i++)
    if (s->params[i].oom) {
      db__fail(s->db, TH_ERR_NOMEM, "out of memory binding parameter %d", i + 1);
      return DB_ERROR;
    }
  return s->db->engine == DB_POSTGRES ? db__pg_step(s) : db__sq_step(s);
}

void db_reset(db_stmt *s) {
  if (s->db->engine == DB_POSTGRES)
    db__pg_reset(s);
  else
    db__sq_reset(s);
}

void db_finalize(db_stmt *s) {
  if (!s) return;
  if (s->db->engine == DB_POSTGRES)
    db__pg_reset(s);
  else
    db__sq_finalize(s);
  for (int i = 0; i < DB__MAX_PARAMS; i++) free(s->params[i].text);
  free(s->sql);
  free(s);
}

int db_col_is_null(db_stmt *s, int col) {
  return s->db->engine == DB_POSTGRES ? db__pg_is_null(s, col) : db__sq_is_null(s, col);
}

const char *db_col_text(db_stmt *s, int col) {
  return s->db->engine == DB_POSTGRES ? db__pg_text(s, col) : db__sq_text(s, col);
}

int64_t db_col_int64(db_stmt *s, int col) {
  if (s->db->engine == DB_SQLITE) return db__sq_int64(s, col);
  const char *t = db__pg_text(s, col);
  if (!t) return 0;
  if (t[0] == 't' && t[1] == '\0') return 1; /* a boolean */
  return strtoll(t, NULL, 10);
}

int db_col_int(db_stmt *s, int col) {
  return (int)db_col_int64(s, col);
}

double db_col_double(db_stmt *s, int col) {
  if (s->db->engine == DB_SQLITE) return db__sq_double(s, col);
  const char *t = db__pg_text(s, col);
  return t ? strtod(t, NULL) : 0.0;
}

int64_t db_changes(db_t *db) {
  return db->changes;
}

th_status db_begin_write(db_t *db) {
  return db->engine == DB_POSTGRES ? db__pg_begin_write(db) : db__sq_begin_write(db);
}

th_status db_begin(db_t *db) {
  return db->engine == DB_POSTGRES ? db_exec(db, "BEGIN") : db__sq_begin_write(db);
}

/* The large-object calls exist on PostgreSQL only. */
static th_status db__lo_unsupported(db_t *db) {
  return db__fail(db, TH_ERR_UNSUPPORTED,
                  "large objects need PostgreSQL; the SQLite store keeps bytes in files");
}

th_status db_lo_import(db_t *db, const char *path, int64_t *oid) {
  return db->engine == DB_POSTGRES ? db__pg_lo_import(db, path, oid) : db__lo_unsupported(db);
}

th_status db_lo_export(db_t *db, int64_t oid, int fd) {
  return db->engine == DB_POSTGRES ? db__pg_lo_export(db, oid, fd) : db__lo_unsupported(db);
}

th_status db_lo_unlink(db_t *db, int64_t oid) {
  return db->engine == DB_POSTGRES ? db__pg_lo_unlink(db, oid) : db__lo_unsupported(db);
}

th_status db_commit(db_t *db) {
  th_status rc = db_exec(db, "COMMIT");
  db->in_tx = 0;
  return rc;
}

void db_rollback(db_t *db) {
  char keep[sizeof db->err];
  th_status cls = db->errclass;
  memcpy(keep, db->err, sizeof keep);
  /* straight to the engine: db_exec's translation allocates, and a rollback that out-of-memory skipped
   * would leave the transaction open for the next caller's writes to join and commit */
  if (db->engine == DB_POSTGRES)
    db__pg_exec(db, "ROLLBACK");
  else
    db__sq_exec(db, "ROLLBACK");
  db->in_tx = 0;
  memcpy(db->err, keep, sizeof keep);
  db->errclass = cls;
}

th_status db_durable(db_t *db, int full) {
  return db->engine == DB_POSTGRES ? TH_OK : db__sq_durable(db, full);
}

th_status db_listen(db_t *db, const char *channel) {
  if (db->engine != DB_POSTGRES) return db__fail(db, TH_ERR_UNSUPPORTED, "SQLite has no notifications");
  char sql[160];
  snprintf(sql, sizeof sql, "LISTEN %.100s", channel);
  return db__pg_exec(db, sql);
}

th_status db_notify(db_t *db, const char *channel, const char *payload) {
  if (db->engine != DB_POSTGRES) return db__fail(db, TH_ERR_UNSUPPORTED, "SQLite has no notifications");
  db_stmt *s = NULL;
  th_status rc = db_prepare(db, "SELECT pg_notify(?, ?)", &s);
  if (rc != TH_OK) return rc;
  db_bind_text(s, 1, channel);
  db_bind_text(s, 2, payload);
  rc = db_step(s) == DB_ROW ? TH_OK : db_errclass(db);
  db_finalize(s);
  return rc;
}

/* Runs "SELECT fn(key)" (one boolean row) for db_try_lock and db_unlock. */
static th_status db__lock_call(db_t *db, const char *fn, int64_t key, int *out) {
  if (db->engine != DB_POSTGRES)
    return db__fail(db, TH_ERR_UNSUPPORTED, "SQLite has no advisory locks; a lock file serves its one data directory");
  char sql[96];
  snprintf(sql, sizeof sql, "SELECT %s(?)", fn);
  db_stmt *s = NULL;
  th_status rc = db_prepare(db, sql, &s);
  if (rc != TH_OK) return rc;
  db_bind_int64(s, 1, key);
  if (db_step(s) == DB_ROW)
    *out = db_col_int(s, 0);
  else
    rc = db_errclass(db);
  db_finalize(s);
  return rc;
}

th_status db_try_lock(db_t *db, int64_t key, int *got) {
  int g = 0;
  th_status rc = db__lock_call(db, "pg_try_advisory_lock", key, &g);
  if (rc == TH_OK) *got = g;
  return rc;
}

th_status db_unlock(db_t *db, int64_t key) {
  int released = 0;
  return db__lock_call(db, "pg_advisory_unlock", key, &released);
}

th_status db_wait_notification(db_t *db, int timeout_ms, char *payload, size_t n) {
  if (db->engine != DB_POSTGRES) return db__fail(db, TH_ERR_UNSUPPORTED, "SQLite has no notifications");
  return db__pg_wait(db, timeout_ms, payload, n);
}

th_status db_schema_version(db_t *db, int *version) {
  return db->engine == DB_POSTGRES ? db__pg_schema_version(db, version)
                                   : db__sq_schema_version(db, version);
}

th_status db_set_schema_version(db_t *db, int version) {
  return db->engine == DB_POSTGRES ? db__pg_set_schema_version(db, version)
                                   : db__sq_set_schema_version(db, version);
}
