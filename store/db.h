/* db: the one SQL interface the store is written against, with a driver per engine: SQLite (the
 * embedded default, a file) and PostgreSQL (libpq, a postgresql:// URL). The store's SQL is written
 * once, in the subset both engines speak, with a few markers that each driver translates:
 *
 *   ?  ?N          parameters (SQLite's spelling; PostgreSQL gets $k). Use either only ? or only ?N
 * in one statement. Parameters are typed by the bind call (text, int64, double, NULL). {now} the
 * database's clock, in seconds since the epoch (a double): leases and heartbeats use the server's
 * one clock, never the clocks of the machines around it. {skip_locked}  "FOR UPDATE SKIP LOCKED" on
 * PostgreSQL, nothing on SQLite (whose writers are serialised). {for_share}    "FOR SHARE" on
 * PostgreSQL, nothing on SQLite. {id}           the type of an auto-numbered key: "INTEGER PRIMARY
 * KEY" or "BIGSERIAL PRIMARY KEY". {real}         a double column: "REAL" or "DOUBLE PRECISION"
 * (PostgreSQL's REAL is 4 bytes). {blob}         a byte column: "BLOB" or "BYTEA". {binary}
 * after a text ORDER BY key: byte order on both engines (SQLite's BINARY default; PostgreSQL's "C"
 * collation, where the database's locale, en_US say, would otherwise order names another way).
 * {postgresql}  at the start of a line: the rest of the line runs on PostgreSQL only ("--" on SQLite,
 * which reads it as a comment); for the rare migration step one engine needs and the other cannot run.
 *
 * Markers are replaced outside quoted strings only. RETURNING, ON CONFLICT ... DO NOTHING / DO
 * UPDATE, partial indexes, window functions and coalesce work on both engines; INSERT OR IGNORE,
 * julianday() and PRAGMA do not (PRAGMAs belong to the SQLite driver).
 *
 * A db_t is one connection and is not thread-safe: the store serialises calls on it with its mutex.
 */
#ifndef STORE_DB_H
#define STORE_DB_H

#include <stddef.h>
#include <stdint.h>

#include "th_status.h"

typedef struct db db_t;
typedef struct db_stmt db_stmt;

typedef enum db_engine { DB_SQLITE = 0, DB_POSTGRES = 1 } db_engine;

/* db_step's answers. */
enum { DB_ERROR = -1, DB_DONE = 0, DB_ROW = 1 };

/* 1 when spec names a PostgreSQL database (postgresql:// or postgres://). */
int db_is_postgres_url(const char *spec);
/* Opens a connection: a PostgreSQL URL, or the path of an SQLite file (created when missing). On
 * failure *out is NULL and err names the cause (the URL with its password hidden).
 * TH_ERR_UNAVAILABLE when a PostgreSQL server cannot be reached, TH_ERR_DB otherwise. */
th_status db_open(const char *spec, db_t **out, char *err, size_t n);
/* Closes; accepts NULL. */
void db_close(db_t *db);
/* A second connection to the database db is connected to (a listener needs its own). */
th_status db_open_again(const db_t *db, db_t **out, char *err, size_t n);
db_engine db_engine_of(const db_t *db);
/* The spec the connection was opened with, password hidden (for messages and logs). */
const char *db_display(const db_t *db);
/* spec as db_display shows it (a URL's password as ***), into out (n bytes), without connecting. */
void db_display_spec(const char *spec, char *out, size_t n);

/* The last error's message on this connection (never NULL) and its class: TH_ERR_BUSY (SQLite busy
 * or locked; PostgreSQL serialisation failure, deadlock, lock not available), TH_ERR_UNAVAILABLE
 * (the PostgreSQL server went away or cannot be reached), TH_ERR_CONFLICT (a unique or foreign-key
 * constraint), TH_ERR_DB (anything else). */
const char *db_errmsg(const db_t *db);
/* How long the process's SQLite statements wait for another process's lock before failing busy: ms (0: not at
 * all), or the default 15 s when ms < 0. Process-wide, any thread; no effect on PostgreSQL. */
void db_busy_limit(int ms);
th_status db_errclass(const db_t *db);

/* Runs one or more statements without parameters or results (markers are translated). */
th_status db_exec(db_t *db, const char *sql);
/* Prepares one statement (markers translated). */
th_status db_prepare(db_t *db, const char *sql, db_stmt **out);
/* Binds parameter i (1-based). Text is copied; a NULL text binds an SQL NULL of type text (so "? IS NULL"
 * works on PostgreSQL), db_bind_null one whose type the statement decides (a number column's, say). */
void db_bind_text(db_stmt *s, int i, const char *v);
void db_bind_int64(db_stmt *s, int i, int64_t v);
void db_bind_int(db_stmt *s, int i, int v);
void db_bind_double(db_stmt *s, int i, double v);
void db_bind_null(db_stmt *s, int i);
/* Runs the statement (on the first call after prepare or reset) and moves to its next row: DB_ROW,
 * DB_DONE, or DB_ERROR (message and class on the connection). */
int db_step(db_stmt *s);
/* Makes the statement runnable again; bindings are kept until rebound. */
void db_reset(db_stmt *s);
/* Frees; accepts NULL. */
void db_finalize(db_stmt *s);

/* Columns of the current row (0-based). Text is valid until the next step, reset or finalize; NULL
 * for SQL NULL. Numbers read from NULL are 0; PostgreSQL's booleans read as 1 and 0. */
int db_col_is_null(db_stmt *s, int col);
const char *db_col_text(db_stmt *s, int col);
int64_t db_col_int64(db_stmt *s, int col);
int db_col_int(db_stmt *s, int col);
double db_col_double(db_stmt *s, int col);

/* Rows changed by the last INSERT, UPDATE or DELETE run on the connection. */
int64_t db_changes(db_t *db);

/* A write transaction that excludes every other writer of the database until it ends, as SQLite's
 * BEGIN IMMEDIATE does (PostgreSQL: BEGIN and a transaction-level advisory lock that every such
 * transaction takes), so look-up-then-insert sequences stay atomic across processes and machines.
 */
th_status db_begin_write(db_t *db);
/* A transaction that does not exclude other writers on PostgreSQL (plain BEGIN), for writes that
 * are safe side by side (an insert that ON CONFLICT leaves a row as another writer put it) and must
 * not hold every other writer back for long (a large object being written). SQLite: BEGIN
 * IMMEDIATE, as db_begin_write: its writers are serialised anyway, and a deferred transaction that
 * upgrades to a write lock cannot wait for it. */
th_status db_begin(db_t *db);
th_status db_commit(db_t *db);
/* Rolls back; harmless outside a transaction, and keeps the connection's last error message. */
void db_rollback(db_t *db);

/* Commit durability for what follows: 1 full (a commit survives a power loss), 0 the engine's
 * normal setting. SQLite: PRAGMA synchronous FULL / NORMAL. PostgreSQL commits are always durable:
 * nothing to do. */
th_status db_durable(db_t *db, int full);

/* Large objects: the bytes of a shared store's artifacts (PostgreSQL's pg_largeobject, written and
 * read in chunks of 1 MiB). SQLite answers TH_ERR_UNSUPPORTED: its store keeps the bytes in files.
 * A lost connection is TH_ERR_UNAVAILABLE, as for statements. db_lo_import: inside a transaction,
 * creates a large object with the bytes of the file at path and writes its oid; it is gone again if
 * the transaction rolls back. TH_ERR_IO when the file cannot be read. */
th_status db_lo_import(db_t *db, const char *path, int64_t *oid);
/* Writes the whole large object oid to fd (from its current offset on), in a transaction of its own
 * when none is open. TH_ERR_NOT_FOUND when no large object has that oid, TH_ERR_IO when fd cannot
 * be written. */
th_status db_lo_export(db_t *db, int64_t oid, int fd);
/* Inside a transaction: removes large object oid (from the database when the transaction commits).
 */
th_status db_lo_unlink(db_t *db, int64_t oid);

/* The schema version the store's migrations have reached (0 for a new database), and setting it
 * inside the migration's transaction. SQLite: PRAGMA user_version; PostgreSQL: the one-row table
 * tunehub_schema. */
th_status db_schema_version(db_t *db, int *version);
th_status db_set_schema_version(db_t *db, int version);

/* Notifications (PostgreSQL's LISTEN/NOTIFY; SQLite answers TH_ERR_UNSUPPORTED). db_listen subscribes this
 * connection to channel; db_notify sends payload (at most 7999 bytes) on channel, delivered when the current
 * transaction commits (at once outside one); db_wait_notification waits up to timeout_ms for one and copies its
 * payload into payload (n bytes): TH_OK, TH_ERR_TIMEOUT, or TH_ERR_UNAVAILABLE when the connection went away
 * (the listener must then listen again once db_listen succeeds: notifications sent meanwhile are lost, so a
 * listener re-reads what it watches after reconnecting). */
th_status db_listen(db_t *db, const char *channel);
/* A named lock held by this connection (not a transaction) until db_unlock or the connection's end, so that one
 * process at a time, on any machine, does a job of the whole database (the garbage collector). PostgreSQL: a
 * session-level advisory lock on key (pg_try_advisory_lock), never waited for: *got 1 when this call took it, 0
 * when another connection holds it. SQLite answers TH_ERR_UNSUPPORTED: its store belongs to one data directory,
 * where a lock file does the same. */
th_status db_try_lock(db_t *db, int64_t key, int *got);
/* Releases db_try_lock's key; harmless when not held. */
th_status db_unlock(db_t *db, int64_t key);
th_status db_notify(db_t *db, const char *channel, const char *payload);
th_status db_wait_notification(db_t *db, int timeout_ms, char *payload, size_t n);

#endif
