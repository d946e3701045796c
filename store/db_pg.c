/* The db layer's PostgreSQL engine (libpq). Statements run with PQexecParams and typed text
 * parameters; results come back as text and are parsed by db.c. A connection that went away is
 * reset on the next call outside a transaction, at most once per backoff period (0.25 s doubling to
 * 5 s), and every call until then fails at once with TH_ERR_UNAVAILABLE, which the server answers
 * with 503 and Retry-After. A transaction the loss cut short is gone: its caller gets
 * TH_ERR_UNAVAILABLE and nothing of it was committed. */
#include <errno.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <libpq/libpq-fs.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "db_int.h"
#include "th_alloc.h"
#include "th_util.h"

/* The key of the advisory lock every write transaction takes (db_begin_write): "tunehub" on a phone
 * keypad. */
#define DB__PG_WRITE_LOCK 8864824

enum { DB__OID_INT8 = 20, DB__OID_TEXT = 25, DB__OID_FLOAT8 = 701 };

static void db__pg_quiet(void *arg, const char *message) {
  (void)arg;
  (void)message; /* NOTICEs ("relation already exists, skipping") are not errors */
}

/* The class of a failed result (or of a lost connection when res is NULL). */
static th_status db__pg_class(db_t *db, const PGresult *res) {
  if (PQstatus(db->h) == CONNECTION_BAD) return TH_ERR_UNAVAILABLE;
  const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
  if (!state) return TH_ERR_DB;
  if (!strcmp(state, "40001") || !strcmp(state, "40P01") || !strcmp(state, "55P03"))
    return TH_ERR_BUSY;
  if (!strcmp(state, "23505") || !strcmp(state, "23503")) return TH_ERR_CONFLICT;
  if (!strncmp(state, "08", 2) || !strncmp(state, "57P", 3)) return TH_ERR_UNAVAILABLE;
  return TH_ERR_DB;
}

/* Copies libpq's message into out on one line: its newlines and tabs become single spaces. */
static void db__pg_oneline(const char *msg, char *out, size_t n) {
  size_t o = 0;
  int space = 0;
  for (const char *p = msg ? msg : "unknown error"; *p && o + 1 < n; p++) {
    if (*p == '\n' || *p == '\t' || *p == ' ') {
      space = o > 0;
      continue;
    }
    if (space && o + 2 < n) out[o++] = ' ';
    space = 0;
    out[o++] = *p;
  }
  out[o] = '\0';
}

static th_status db__pg_fail(db_t *db, const PGresult *res, const char *what) {
  th_status cls = db__pg_class(db, res);
  const char *msg = res ? PQresultErrorMessage(res) : "";
  if (!msg || !*msg) msg = PQerrorMessage(db->h);
  char clean[TH_ERR_MAX];
  db__pg_oneline(msg, clean, sizeof clean);
  if (cls == TH_ERR_UNAVAILABLE) {
    db->in_tx = 0; /* the server ended the transaction with the connection */
    return db__fail(db, cls, "%s: the database %s is unavailable: %s", what, db->display, clean);
  }
  return db__fail(db, cls, "%s: %s", what, clean);
}

static th_status db__pg_connect(db_t *db) {
  PGconn *c = PQconnectdb(db->conninfo);
  if (!c) return db__fail(db, TH_ERR_NOMEM, "out of memory");
  if (PQstatus(c) != CONNECTION_OK) {
    char msg[TH_ERR_MAX];
    db__pg_oneline(PQerrorMessage(c), msg, sizeof msg);
    PQfinish(c);
    return db__fail(db, TH_ERR_UNAVAILABLE, "cannot connect to %s: %s", db->display, msg);
  }
  PQsetNoticeProcessor(c, db__pg_quiet, NULL);
  /* A client paused or cut off inside a transaction (SIGSTOP, a partition) must not hold its locks (the write
   * lock, a job row read FOR SHARE by a fenced write) for ever, or no lease of its jobs could be reaped: the
   * server ends a session idle inside a transaction for 10 s. tunehub does no slow work between the statements
   * of a transaction. */
  PQclear(PQexec(c, "SET idle_in_transaction_session_timeout = '10s'"));
  if (db->h) PQfinish(db->h);
  db->h = c;
  return TH_OK;
}

th_status db__pg_open(db_t *db, const char *url) {
  db->conninfo = th_strdup(url);
  if (!db->conninfo) return db__fail(db, TH_ERR_NOMEM, "out of memory");
  return db__pg_connect(db);
}

void db__pg_close(db_t *db) {
  if (db->h) PQfinish(db->h);
  db->h = NULL;
}

/* A usable connection before a call: reconnects a lost one outside a transaction, with backoff. */
static th_status db__pg_ready(db_t *db) {
  if (db->h && PQstatus(db->h) == CONNECTION_OK) return TH_OK;
  if (db->in_tx) {
    db->in_tx = 0;
    return db__fail(db, TH_ERR_UNAVAILABLE, "the connection to %s was lost inside a transaction",
                    db->display);
  }
  double now = th_now_mono();
  if (now < db->retry_after)
    return db__fail(db, TH_ERR_UNAVAILABLE, "the database %s is unavailable; reconnecting",
                    db->display);
  th_status rc = db__pg_connect(db);
  if (rc == TH_OK) {
    db->retry_after = db->backoff = 0;
    return TH_OK;
  }
  db->backoff = db->backoff > 0 ? db->backoff * 2 : 0.25;
  if (db->backoff > 5.0) db->backoff = 5.0;
  db->retry_after = now + db->backoff;
  return rc;
}

th_status db__pg_exec(db_t *db, const char *sql) {
  th_status rc = db__pg_ready(db);
  if (rc != TH_OK) return rc;
  PGresult *res = PQexec(db->h, sql);
  ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    rc = db__pg_fail(db, res, "exec");
    PQclear(res);
    return rc;
  }
  db->changes = strtoll(PQcmdTuples(res), NULL, 10);
  if (strncasecmp(sql, "BEGIN", 5) == 0) db->in_tx = 1;
  if (strncasecmp(sql, "COMMIT", 6) == 0 || strncasecmp(sql, "ROLLBACK", 8) == 0) db->in_tx = 0;
  PQclear(res);
  return TH_OK;
}

int db__pg_step(db_stmt *s) {
  db_t *db = s->db;
  if (!s->ran) {
    if (db__pg_ready(db) != TH_OK) return DB_ERROR;
    Oid types[DB__MAX_PARAMS];
    const char *values[DB__MAX_PARAMS];
    int np = s->nparams > s->nref ? s->nparams : s->nref;
    for (int i = 0; i < np; i++) {
      const db__param *p = &s->params[i];
      types[i] = p->type == DB__P_TEXT       ? DB__OID_TEXT
                 : p->type == DB__P_INT64    ? DB__OID_INT8
                 : p->type == DB__P_DOUBLE   ? DB__OID_FLOAT8
                 : p->null_text || !p->bound ? DB__OID_TEXT
                                             : 0;
      values[i] = p->type == DB__P_NULL ? NULL : p->text;
      if (p->type != DB__P_NULL && !p->text) {
        db__fail(db, TH_ERR_NOMEM, "out of memory");
        return DB_ERROR;
      }
    }
    PGresult *res = PQexecParams(db->h, s->sql, np, types, values, NULL, NULL, 0);
    ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
      db__pg_fail(db, res, "step");
      PQclear(res);
      return DB_ERROR;
    }
    s->h = res;
    s->ran = 1;
    s->row = -1;
    s->nrows = st == PGRES_TUPLES_OK ? PQntuples(res) : 0;
    db->changes = strtoll(PQcmdTuples(res), NULL, 10);
  }
  if (++s->row < s->nrows) return DB_ROW;
  s->row = s->nrows;
  return DB_DONE;
}

void db__pg_reset(db_stmt *s) {
  if (s->h) PQclear(s->h);
  s->h = NULL;
  s->ran = 0;
  s->row = s->nrows = 0;
}

int db__pg_is_null(db_stmt *s, int col) {
  if (!s->h || s->row < 0 || s->row >= s->nrows || col >= PQnfields(s->h)) return 1;
  return PQgetisnull(s->h, s->row, col);
}

const char *db__pg_text(db_stmt *s, int col) {
  if (db__pg_is_null(s, col)) return NULL;
  return PQgetvalue(s->h, s->row, col);
}

th_status db__pg_begin_write(db_t *db) {
  th_status rc = db__pg_exec(db, "BEGIN");
  if (rc == TH_OK) {
    char sql[64];
    snprintf(sql, sizeof sql, "SELECT pg_advisory_xact_lock(%d)", DB__PG_WRITE_LOCK);
    rc = db__pg_exec(db, sql);
    if (rc != TH_OK && db->in_tx) {
      PGresult *r = PQexec(db->h, "ROLLBACK");
      PQclear(r);
      db->in_tx = 0;
    }
  }
  return rc;
}

/* The one-row table that holds the schema version, created when missing. */
static th_status db__pg_schema_table(db_t *db) {
  return db__pg_exec(
      db,
      "CREATE TABLE IF NOT EXISTS tunehub_schema (one INTEGER PRIMARY KEY CHECK (one = 1), "
      "version INTEGER NOT NULL)");
}

th_status db__pg_schema_version(db_t *db, int *v) {
  th_status rc = db__pg_schema_table(db);
  if (rc != TH_OK) return rc;
  PGresult *res = PQexec(db->h, "SELECT version FROM tunehub_schema");
  if (!res || PQresultStatus(res) != PGRES_TUPLES_OK) {
    rc = db__pg_fail(db, res, "read the schema version");
    PQclear(res);
    return rc;
  }
  *v = PQntuples(res) > 0 ? (int)strtol(PQgetvalue(res, 0, 0), NULL, 10) : 0;
  PQclear(res);
  return TH_OK;
}

th_status db__pg_set_schema_version(db_t *db, int v) {
  char sql[160];
  snprintf(sql, sizeof sql,
           "INSERT INTO tunehub_schema (one, version) VALUES (1, %d) ON CONFLICT (one) DO UPDATE "
           "SET version = %d",
           v, v);
  th_status rc = db__pg_schema_table(db);
  return rc == TH_OK ? db__pg_exec(db, sql) : rc;
}

/* ---- large objects ---- */

enum { DB__PG_LO_CHUNK = 1 << 20 };

/* A large-object call failed: its message is the connection's. */
static th_status db__pg_lo_fail(db_t *db, const char *what) {
  return db__pg_fail(db, NULL, what);
}

th_status db__pg_lo_import(db_t *db, const char *path, int64_t *oid) {
  if (!db->in_tx) return db__fail(db, TH_ERR_INTERNAL, "db_lo_import needs a transaction");
  th_status rc = db__pg_ready(db);
  if (rc != TH_OK) return rc;
  int in = open(path, O_RDONLY | O_CLOEXEC);
  if (in < 0) return db__fail(db, TH_ERR_IO, "cannot read %s: %s", path, strerror(errno));
  char *buf = th_malloc(DB__PG_LO_CHUNK);
  Oid id = buf ? lo_creat(db->h, INV_READ | INV_WRITE) : InvalidOid;
  int lo = id != InvalidOid ? lo_open(db->h, id, INV_WRITE) : -1;
  if (!buf)
    rc = db__fail(db, TH_ERR_NOMEM, "out of memory");
  else if (lo < 0)
    rc = db__pg_lo_fail(db, "create a large object");
  while (rc == TH_OK) {
    ssize_t n = read(in, buf, DB__PG_LO_CHUNK);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) rc = db__fail(db, TH_ERR_IO, "cannot read %s: %s", path, strerror(errno));
    if (n <= 0) break;
    if (lo_write(db->h, lo, buf, (size_t)n) != (int)n)
      rc = db__pg_lo_fail(db, "write a large object");
  }
  if (lo >= 0 && lo_close(db->h, lo) != 0 && rc == TH_OK)
    rc = db__pg_lo_fail(db, "close a large object");
  free(buf);
  close(in);
  if (rc == TH_OK) *oid = (int64_t)id;
  return rc;
}

th_status db__pg_lo_export(db_t *db, int64_t oid, int fd) {
  int own = !db->in_tx;
  th_status rc = own ? db__pg_exec(db, "BEGIN READ ONLY") : db__pg_ready(db);
  if (rc != TH_OK) return rc;
  char *buf = th_malloc(DB__PG_LO_CHUNK);
  int lo = buf ? lo_open(db->h, (Oid)oid, INV_READ) : -1;
  if (!buf)
    rc = db__fail(db, TH_ERR_NOMEM, "out of memory");
  else if (lo < 0)
    rc = PQstatus(db->h) == CONNECTION_OK && strstr(PQerrorMessage(db->h), "does not exist")
             ? db__fail(db, TH_ERR_NOT_FOUND, "large object %lld does not exist", (long long)oid)
             : db__pg_lo_fail(db, "open a large object");
  while (rc == TH_OK) {
    int n = lo_read(db->h, lo, buf, DB__PG_LO_CHUNK);
    if (n < 0) rc = db__pg_lo_fail(db, "read a large object");
    if (n <= 0) break;
    if (th_write_full(fd, buf, (size_t)n, 0) != 0)
      rc = db__fail(db, TH_ERR_IO, "cannot write large object %lld out: %s", (long long)oid,
                    strerror(errno));
  }
  if (lo >= 0 && rc != TH_ERR_UNAVAILABLE) lo_close(db->h, lo);
  free(buf);
  if (own && db->in_tx) {
    if (rc == TH_OK) return db__pg_exec(db, "COMMIT");
    PGresult *r = PQexec(db->h, "ROLLBACK");
    PQclear(r);
    db->in_tx = 0;
  }
  return rc;
}

th_status db__pg_lo_unlink(db_t *db, int64_t oid) {
  if (!db->in_tx) return db__fail(db, TH_ERR_INTERNAL, "db_lo_unlink needs a transaction");
  th_status rc = db__pg_ready(db);
  if (rc != TH_OK) return rc;
  if (lo_unlink(db->h, (Oid)oid) < 0) return db__pg_lo_fail(db, "remove a large object");
  return TH_OK;
}

th_status db__pg_wait(db_t *db, int timeout_ms, char *payload, size_t n) {
  if (!db->h || PQstatus(db->h) != CONNECTION_OK)
    return db__fail(db, TH_ERR_UNAVAILABLE, "the listening connection to %s is gone", db->display);
  double deadline = th_now_mono() + timeout_ms / 1000.0;
  for (;;) {
    if (!PQconsumeInput(db->h)) return db__pg_fail(db, NULL, "wait for a notification");
    PGnotify *note = PQnotifies(db->h);
    if (note) {
      snprintf(payload, n, "%s", note->extra ? note->extra : "");
      PQfreemem(note);
      return TH_OK;
    }
    double left = deadline - th_now_mono();
    if (left <= 0) return TH_ERR_TIMEOUT;
    struct pollfd p = {.fd = PQsocket(db->h), .events = POLLIN};
    if (p.fd < 0)
      return db__fail(db, TH_ERR_UNAVAILABLE, "the listening connection to %s is gone",
                      db->display);
    if (poll(&p, 1, (int)(left * 1000) + 1) < 0 && errno != EINTR)
      return db__fail(db, TH_ERR_IO, "poll: %s", strerror(errno));
  }
}
