/* Internals shared by the store's files: the handle, the statement helpers and error recording. The files speak
 * SQL through db.h, so each runs on SQLite and on PostgreSQL. */
#ifndef STORE_INT_H
#define STORE_INT_H

#include <pthread.h>

#include "blob.h"
#include "db.h"
#include "store.h"

struct store {
  db_t *db;
  pthread_mutex_t mu; /* serialises every call: one connection, many threads */
  int shared;         /* 1: PostgreSQL, which other daemons and workers share; 0: the embedded SQLite file */
  const store_blob_ops *blob; /* where artifacts' bytes live beside the local files (blob.h) */
  db_t *fetch_db; /* a connection of its own for filling the local cache from large objects, so that
                     a big fetch never holds mu; opened at the first miss */
  pthread_mutex_t fetch_mu; /* serialises fetch_db */
  char origin[17];    /* this handle's random token in the notifications it sends (store_events.c) */
  char data_dir[TH_DIR_MAX];
  char owner[TH_NAME_MAX + TH_DIR_MAX]; /* store_owner: "<host>:<data directory>" */
  char artifacts_dir[TH_SUBDIR_MAX];
  char tmp_dir[TH_SUBDIR_MAX];
  int64_t
      min_free; /* store_set_min_free: bytes a new artifact must leave free on the data directory */
};

/* Records an error message for the calling thread and returns rc. */
th_status store__fail(store_t *st, th_status rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* When the calling thread's last error belongs to handle src, it becomes dst's (for a call that works on two
 * stores and reports through one); returns rc. */
th_status store__error_moves(store_t *src, store_t *dst, th_status rc);
/* Sets st->origin to a fresh random token. */
void store__origin_init(store_t *st);
/* On a shared store, sends the notification of a job change (store_events.c), delivered when the caller's
 * transaction commits; nothing on the embedded store. version, tuned and digest say what a PUBLISHED event
 * published (0, 0, NULL otherwise). */
th_status store__announce(store_t *st, int64_t job_id, store_event_kind kind, int version, int tuned,
                          const char *digest);
/* Records the database error of st->db and returns its class (TH_ERR_DB; TH_ERR_BUSY for a locked database;
 * TH_ERR_UNAVAILABLE when PostgreSQL went away; TH_ERR_CONFLICT for a constraint). */
th_status store__db_fail(store_t *st, const char *what);
/* Prepares sql; on failure records the error. */
th_status store__prepare(store_t *st, const char *sql, db_stmt **out);
/* Executes one or more statements without results. */
th_status store__exec(store_t *st, const char *sql);
/* Begins a write transaction that excludes every other writer (db_begin_write). */
th_status store__begin(store_t *st);
/* Begins a transaction that takes row locks only (PostgreSQL: BEGIN, so claimers on other machines skip each
 * other's rows with SKIP LOCKED instead of waiting for the write lock; SQLite, which has no row locks: BEGIN
 * IMMEDIATE, as store__begin). */
th_status store__begin_rows(store_t *st);
/* Runs sql with its one text parameter ?1 = arg (inside the caller's transaction; what names it in an error);
 * *changes (may be NULL) gets the rows it changed. */
th_status store__run1(store_t *st, const char *sql, const char *arg, const char *what, int *changes);
/* Ends the transaction a write began: COMMIT when rc is TH_OK, else (or when the commit fails) ROLLBACK, keeping
 * the first error's message. Returns the outcome. */
th_status store__tx_end(store_t *st, th_status rc);
/* The fencing check, inside the caller's write transaction: TH_OK when attempt is 0 or job job_id is running
 * under attempt, else TH_ERR_CONFLICT (or TH_ERR_NOT_FOUND) with the message store_job_fence documents. The row
 * is read FOR SHARE, so that on PostgreSQL no claim or requeue of the job can commit until the caller's
 * transaction ends. */
th_status store__fence(store_t *st, int64_t job_id, int attempt);
/* The transaction of a single write that attempt fences: with attempt > 0, store__begin and the fencing check of
 * job job_id (a failure of either is returned, and store__fenced_end still ends the transaction); with attempt 0
 * (unfenced) nothing. */
th_status store__fenced_begin(store_t *st, int64_t job_id, int attempt);
/* Ends what store__fenced_begin began (store__tx_end with attempt > 0); returns the outcome. */
th_status store__fenced_end(store_t *st, int attempt, th_status rc);
/* Room for one more element in a growable array (arr: *cap elements of size elem, n used; NULL when empty):
 * arr itself, or arr reallocated with *cap doubled from 16. NULL when out of memory: arr is then still valid and
 * owned by the caller, and the error is recorded. */
void *store__grow(store_t *st, void *arr, size_t *cap, size_t n, size_t elem);
/* Puts the file at src at artifacts/<ab>/<hex> (hex its sha256, sz its size), durably, without its row: nothing
 * when a file that hashes to hex is already there; else src is copied (take 0; src stays) or, after an fsync,
 * renamed (take 1: src lies in data/tmp, and is gone after TH_OK). Takes no lock. */
th_status store__artifact_place(store_t *st, const char *src, int take, const char *hex, int64_t sz);
/* The row of the artifact hex (size sz) inside the caller's transaction (the caller holds st->mu):
 * when it is missing, the blob engine keeps the bytes of the local file at path and the row is
 * inserted with the engine's reference; a row a concurrent writer inserted first stands (and the
 * bytes this call kept are dropped); a row without its engine copy (put before the store had one)
 * gets it. */
th_status store__artifact_row(store_t *st, const char *hex, int64_t sz, const char *media_type,
                              const char *path);
/* Deletes the row of the artifact hex when the condition `where` (SQL over the artifacts row, ?1 =
 * hex) holds, with its engine copy, inside the caller's transaction; *gone = 1 when it went (the
 * caller then removes the local file after the commit). */
th_status store__artifact_delete(store_t *st, const char *hex, const char *where, int *gone);
/* The path of the artifact file named hex. */
void store__artifact_file(store_t *st, const char *hex, char *path, size_t n);
/* Binds the key's six name columns (framework, network, batch, target, compiler version, precision) from
 * parameter first on (first .. first + 5), and its network revision (net_digest, first + 6) after them when
 * with_digest is set. */
void store__bind_key(db_stmt *s, int first, const store_key *k, int with_digest);
/* Reads the key's six name columns (framework, network, batch, target, compiler version, precision) from column
 * first on; the counterpart of store__bind_key (net_digest is left to the caller). */
void store__col_key(db_stmt *s, int first, store_key *k);
/* A copy of a column as malloc'd text (NULL for SQL NULL). */
char *store__col_dup(db_stmt *s, int col);
/* Copies a text column into a fixed buffer (truncating safely). */
void store__col_copy(db_stmt *s, int col, char *out, size_t n);

#endif
