/* Internals of the db layer: the connection and statement structs and the two engines' entry
 * points, which db.c dispatches to after translating the SQL markers. */
#ifndef STORE_DB_INT_H
#define STORE_DB_INT_H

#include "db.h"
#include "th_limits.h"

#define DB__MAX_PARAMS 32

/* A bound parameter, kept as the engine needs it: SQLite binds the typed value, PostgreSQL sends
 * text with a type. */
typedef enum db__ptype { DB__P_NULL = 0, DB__P_TEXT, DB__P_INT64, DB__P_DOUBLE } db__ptype;

typedef struct db__param {
  db__ptype type;
  int bound; /* 0: never bound, an SQL NULL (as SQLite reads an unbound parameter); PostgreSQL is
                told text */
  int null_text; /* a NULL bound by db_bind_text: PostgreSQL is told it is text ("? IS NULL" needs a type) */
  char *text; /* owned: the text (DB__P_TEXT), or the number formatted for PostgreSQL */
  int oom;    /* the copy of the bound value could not be made: db_step fails (TH_ERR_NOMEM) until the
                 parameter is bound again, instead of running the statement with a NULL in its place */
  int64_t i;
  double d;
} db__param;

struct db {
  db_engine engine;
  char display[TH_DIR_MAX]; /* the --db URL without its password */
  char err[TH_ERR_MAX];
  th_status errclass;
  int64_t changes;
  void *h;            /* sqlite3 * or PGconn * */
  char *conninfo;     /* PostgreSQL: the URL, for reconnecting */
  int in_tx;          /* PostgreSQL: inside BEGIN ... COMMIT */
  double retry_after; /* PostgreSQL: no reconnect attempt before this monotonic time */
  double
      backoff; /* PostgreSQL: the wait after the last failed reconnect (0.25 s doubling to 5 s) */
};

struct db_stmt {
  db_t *db;
  char *sql; /* translated */
  void *h;   /* sqlite3_stmt *, or the PGresult * of the last run */
  db__param params[DB__MAX_PARAMS];
  int nparams;        /* the highest bound index */
  int nref;           /* PostgreSQL: the highest parameter the SQL names; unbound ones are NULL text, as SQLite
                         reads an unbound parameter as NULL */
  int ran;        /* PostgreSQL: executed since the last reset */
  int row, nrows; /* PostgreSQL: the current row of the result */
};

/* Records an error on the connection and returns its class. */
th_status db__fail(db_t *db, th_status cls, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The SQLite engine (db_sqlite.c). */
th_status db__sq_open(db_t *db, const char *path);
void db__sq_close(db_t *db);
th_status db__sq_exec(db_t *db, const char *sql);
th_status db__sq_prepare(db_stmt *s);
int db__sq_step(db_stmt *s);
void db__sq_reset(db_stmt *s);
void db__sq_finalize(db_stmt *s);
int db__sq_is_null(db_stmt *s, int col);
const char *db__sq_text(db_stmt *s, int col);
int64_t db__sq_int64(db_stmt *s, int col);
double db__sq_double(db_stmt *s, int col);
th_status db__sq_begin_write(db_t *db);
th_status db__sq_durable(db_t *db, int full);
th_status db__sq_schema_version(db_t *db, int *v);
th_status db__sq_set_schema_version(db_t *db, int v);

/* The PostgreSQL engine (db_pg.c). */
th_status db__pg_open(db_t *db, const char *url);
void db__pg_close(db_t *db);
th_status db__pg_exec(db_t *db, const char *sql);
int db__pg_step(db_stmt *s);
void db__pg_reset(db_stmt *s);
int db__pg_is_null(db_stmt *s, int col);
const char *db__pg_text(db_stmt *s, int col);
th_status db__pg_begin_write(db_t *db);
th_status db__pg_lo_import(db_t *db, const char *path, int64_t *oid);
th_status db__pg_lo_export(db_t *db, int64_t oid, int fd);
th_status db__pg_lo_unlink(db_t *db, int64_t oid);
th_status db__pg_schema_version(db_t *db, int *v);
th_status db__pg_wait(db_t *db, int timeout_ms, char *payload, size_t n);
th_status db__pg_set_schema_version(db_t *db, int v);

#endif
