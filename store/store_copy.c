/* Copying an embedded store into a shared one (`tunehub migrate --from DIR --to postgresql://...`). The
 * artifacts go first, each through store_artifact_put (so they land wherever the destination keeps blobs); then
 * the tables, each copied column by column as the source declares them, in one write transaction on the
 * destination so that a failure leaves it as empty as it was. Ids are kept (models, jobs and records refer to one
 * another by them) and PostgreSQL's sequences are moved past them. A running job of the source is copied as
 * queued: its runner belongs to the source's daemon, which must be stopped before a migration.
 *
 * Verification compares a digest of every table, read back from the destination, with the source's: each row's
 * columns in a canonical text (integers in decimal, doubles with 17 significant digits, NULL as \N), rows in
 * primary-key order. Blobs are verified by the caller, through a fresh handle that has nothing cached. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"
#include "th_sha256.h"

/* The tables a copy carries, in an order that satisfies their foreign keys, each with the columns that order its
 * rows. artifacts is copied through store_artifact_put and only compared; the fleet (workers) is not copied: it
 * is made of the processes that run against a database. */
static const struct {
  const char *name, *order;
} store__copy_tables[] = {
    {"artifacts", "digest"},
    {"networks", "name"},
    {"models", "id"},
    {"jobs", "id"},
    {"workloads", "key"},
    {"tuning_records", "id"},
    {"aliases", "framework, network, target, compiler_version, precision, name"},
    {"model_version_floor", "framework, network, batch, target, compiler_version, precision"},
};
/* store_copy_report.rows holds one count per table */
_Static_assert(sizeof store__copy_tables / sizeof store__copy_tables[0] <= 8, "store_copy_report.rows is too short");
#define STORE__NTABLES (sizeof store__copy_tables / sizeof store__copy_tables[0])

typedef enum { STORE__C_INT, STORE__C_REAL, STORE__C_TEXT } store__ctype;

typedef struct {
  char name[64];
  store__ctype type;
} store__col;

/* The columns of table as the source (SQLite) declares them, into cols (at most max); *n gets their number. */
static th_status store__columns(store_t *st, const char *table, store__col *cols, int max, int *n) {
  char sql[128];
  snprintf(sql, sizeof sql, "PRAGMA table_info(%s)", table);
  db_stmt *s = NULL;
  th_status rc = store__prepare(st, sql, &s);
  *n = 0;
  int r = DB_DONE;
  while (rc == TH_OK && (r = db_step(s)) == DB_ROW) {
    if (*n == max) {
      rc = store__fail(st, TH_ERR_INTERNAL, "table %s has more than %d columns", table, max);
      break;
    }
    store__col *c = &cols[(*n)++];
    store__col_copy(s, 1, c->name, sizeof c->name);
    const char *type = db_col_text(s, 2);
    c->type = !type                        ? STORE__C_TEXT
              : strstr(type, "INT")        ? STORE__C_INT
              : strstr(type, "REAL")       ? STORE__C_REAL
              : strstr(type, "DOUBLE")     ? STORE__C_REAL
                                           : STORE__C_TEXT;
  }
  if (rc == TH_OK && r != DB_DONE) rc = store__db_fail(st, "read the columns");
  db_finalize(s);
  if (rc == TH_OK && *n == 0) rc = store__fail(st, TH_ERR_INTERNAL, "the source has no table %s", table);
  return rc;
}

/* A text column's value as the copy writes it: the source's, except that a running job arrives queued (its
 * runner was the source's daemon). The verification reads the source through this too. */
static const char *store__copied_text(const char *table, const store__col *col, const char *v) {
  if (v && !strcmp(table, "jobs") && !strcmp(col->name, "state") && !strcmp(v, "running")) return "queued";
  return v;
}

/* "a, b, c" for the columns. */
static void store__col_list(const store__col *cols, int n, char *out, size_t cap) {
  size_t used = 0;
  out[0] = '\0';
  for (int i = 0; i < n && used < cap; i++)
    used += (size_t)snprintf(out + used, cap - used, "%s%s", i ? ", " : "", cols[i].name);
}

/* Copies the rows of one table from `from` into `to` (inside the caller's transaction on `to`). */
static th_status store__copy_table(store_t *from, store_t *to, const char *table, const store__col *cols, int n,
                                   int64_t *rows) {
  char list[2048], sql[4096];
  store__col_list(cols, n, list, sizeof list);
  snprintf(sql, sizeof sql, "SELECT %s FROM %s", list, table);
  db_stmt *s = NULL, *ins = NULL;
  th_status rc = store__prepare(from, sql, &s);
  if (rc == TH_OK) {
    size_t used = (size_t)snprintf(sql, sizeof sql, "INSERT INTO %s (%s) VALUES (", table, list);
    for (int i = 0; i < n; i++) used += (size_t)snprintf(sql + used, sizeof sql - used, "%s?", i ? ", " : "");
    snprintf(sql + used, sizeof sql - used, ")");
    rc = store__prepare(to, sql, &ins);
  }
  int r = DB_DONE;
  while (rc == TH_OK && (r = db_step(s)) == DB_ROW) {
    db_reset(ins);
    for (int i = 0; i < n; i++) {
      if (db_col_is_null(s, i))
        db_bind_null(ins, i + 1);
      else if (cols[i].type == STORE__C_INT)
        db_bind_int64(ins, i + 1, db_col_int64(s, i));
      else if (cols[i].type == STORE__C_REAL)
        db_bind_double(ins, i + 1, db_col_double(s, i));
      else
        db_bind_text(ins, i + 1, store__copied_text(table, &cols[i], db_col_text(s, i)));
    }
    if (db_step(ins) != DB_DONE) {
      rc = store__error_moves(to, from, store__db_fail(to, table));
      break;
    }
    (*rows)++;
  }
  if (rc == TH_OK && r != DB_DONE) rc = store__db_fail(from, table);
  db_finalize(s);
  db_finalize(ins);
  return rc;
}

/* The digest of a table's rows (see the top of this file) into hex, and their number. */
static th_status store__table_digest(store_t *st, const char *table, const char *order, const store__col *cols,
                                     int n, char hex[TH_HEX_MAX], int64_t *rows) {
  char list[2048], sql[4096];
  store__col_list(cols, n, list, sizeof list);
  snprintf(sql, sizeof sql, "SELECT %s FROM %s ORDER BY %s", list, table, order);
  db_stmt *s = NULL;
  th_status rc = store__prepare(st, sql, &s);
  th_sha256 h;
  th_sha256_init(&h);
  *rows = 0;
  int r = DB_DONE;
  while (rc == TH_OK && (r = db_step(s)) == DB_ROW) {
    for (int i = 0; i < n; i++) {
      char num[64];
      const char *v = num;
      if (db_col_is_null(s, i))
        v = "\\N";
      else if (cols[i].type == STORE__C_INT)
        snprintf(num, sizeof num, "%" PRId64, db_col_int64(s, i));
      else if (cols[i].type == STORE__C_REAL)
        snprintf(num, sizeof num, "%.17g", db_col_double(s, i));
      else
        v = store__copied_text(table, &cols[i], db_col_text(s, i));
      th_sha256_update(&h, v, strlen(v) + 1); /* the NUL separates the columns */
    }
    (*rows)++;
  }
  if (rc == TH_OK && r != DB_DONE) rc = store__db_fail(st, table);
  db_finalize(s);
  unsigned char bin[32];
  th_sha256_final(&h, bin);
  th_hex(bin, 32, hex);
  return rc;
}

/* Moves PostgreSQL's sequence of table.id past the copied ids. */
static th_status store__sequence_past(store_t *to, const char *table) {
  char sql[256];
  snprintf(sql, sizeof sql,
           "SELECT setval(pg_get_serial_sequence('%s', 'id'), (SELECT coalesce(max(id), 0) + 1 FROM %s), false)",
           table, table);
  return store__exec(to, sql);
}

th_status store_copy(store_t *from, store_t *to, store_copy_progress_fn progress, void *ctx,
                     store_copy_report *rep) {
  if (from->shared) return store__fail(from, TH_ERR_INVALID, "the source of a copy is an embedded (SQLite) store");
  memset(rep, 0, sizeof *rep);
  th_status rc = TH_OK;
  /* the destination must be new: a copy merged into live data could collide on ids and versions */
  for (size_t t = 0; t < STORE__NTABLES && rc == TH_OK; t++) {
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", store__copy_tables[t].name);
    db_stmt *s = NULL;
    pthread_mutex_lock(&to->mu);
    rc = store__prepare(to, sql, &s);
    if (rc == TH_OK && db_step(s) != DB_ROW) rc = store__db_fail(to, "count rows");
    int64_t have = rc == TH_OK ? db_col_int64(s, 0) : 0;
    db_finalize(s);
    pthread_mutex_unlock(&to->mu);
    if (rc == TH_OK && have > 0)
      rc = store__fail(to, TH_ERR_CONFLICT,
                       "the destination %s already holds %" PRId64
                       " rows in %s: migrate copies into a new, empty database (createdb one, and point no daemon "
                       "at it before the copy)",
                       db_display(to->db), have, store__copy_tables[t].name);
  }
  if (rc != TH_OK) return store__error_moves(to, from, rc);

  /* 1. the blobs, each verified by its digest as it is put */
  pthread_mutex_lock(&from->mu);
  db_stmt *s = NULL;
  rc = store__prepare(from, "SELECT digest, media_type, size FROM artifacts ORDER BY digest", &s);
  typedef struct {
    char digest[TH_HEX_MAX], media[128];
    int64_t size;
  } blob;
  blob *blobs = NULL;
  size_t nb = 0, cap = 0;
  int r = DB_DONE;
  while (rc == TH_OK && (r = db_step(s)) == DB_ROW) {
    blob *g = store__grow(from, blobs, &cap, nb, sizeof *blobs);
    if (!g) {
      rc = TH_ERR_NOMEM;
      break;
    }
    blobs = g;
    store__col_copy(s, 0, blobs[nb].digest, sizeof blobs[nb].digest);
    store__col_copy(s, 1, blobs[nb].media, sizeof blobs[nb].media);
    blobs[nb].size = db_col_int64(s, 2);
    nb++;
  }
  if (rc == TH_OK && r != DB_DONE) rc = store__db_fail(from, "list artifacts");
  db_finalize(s);
  pthread_mutex_unlock(&from->mu);
  for (size_t i = 0; i < nb && rc == TH_OK; i++) {
    char path[TH_PATH_MAX], media[128], got[TH_HEX_MAX];
    int64_t size = 0;
    rc = store_artifact_path(from, blobs[i].digest, path, sizeof path, &size, media, sizeof media);
    if (rc == TH_OK) rc = store_artifact_put(to, path, blobs[i].media, got, &size);
    if (rc != TH_OK) {
      store__error_moves(to, from, rc);
    } else if (strcmp(got, blobs[i].digest) != 0) {
      rc = store__fail(from, TH_ERR_CORRUPT, "blob %s hashes to %s in the source's files", blobs[i].digest, got);
    } else {
      rep->blobs++;
      rep->blob_bytes += size;
      if (progress) progress(ctx, "blobs", (int64_t)i + 1, (int64_t)nb);
    }
  }
  free(blobs);
  if (rc != TH_OK) return rc;

  /* 2. the tables, in one transaction on the destination */
  pthread_mutex_lock(&from->mu);
  pthread_mutex_lock(&to->mu);
  rc = store__begin(to);
  for (size_t t = 1; t < STORE__NTABLES && rc == TH_OK; t++) {
    store__col cols[40];
    int n = 0;
    rc = store__columns(from, store__copy_tables[t].name, cols, 40, &n);
    if (rc == TH_OK) rc = store__copy_table(from, to, store__copy_tables[t].name, cols, n, &rep->rows[t]);
    if (rc == TH_OK && progress) progress(ctx, store__copy_tables[t].name, rep->rows[t], rep->rows[t]);
  }
  rep->rows[0] = (int64_t)rep->blobs;
  if (rc == TH_OK && to->shared) {
    static const char *const with_ids[] = {"models", "jobs", "tuning_records"};
    for (size_t i = 0; i < 3 && rc == TH_OK; i++) rc = store__sequence_past(to, with_ids[i]);
  }
  if (rc == TH_OK)
    rc = store__exec(to, "COMMIT");
  else
    db_rollback(to->db);
  if (rc != TH_OK) store__error_moves(to, from, rc);
  pthread_mutex_unlock(&to->mu);
  pthread_mutex_unlock(&from->mu);
  return rc;
}

th_status store_copy_verify(store_t *from, store_t *to, store_copy_report *rep) {
  th_status rc = TH_OK;
  memset(rep, 0, sizeof *rep);
  for (size_t t = 0; t < STORE__NTABLES && rc == TH_OK; t++) {
    store__col cols[40];
    int n = 0;
    char a[TH_HEX_MAX], b[TH_HEX_MAX];
    int64_t ra = 0, rb = 0;
    pthread_mutex_lock(&from->mu);
    rc = store__columns(from, store__copy_tables[t].name, cols, 40, &n);
    if (rc == TH_OK && t == 0) n = 3; /* artifacts: digest, size, media type; the rest is the engine's own */
    if (rc == TH_OK)
      rc = store__table_digest(from, store__copy_tables[t].name, store__copy_tables[t].order, cols, n, a, &ra);
    pthread_mutex_unlock(&from->mu);
    if (rc != TH_OK) break;
    pthread_mutex_lock(&to->mu);
    rc = store__table_digest(to, store__copy_tables[t].name, store__copy_tables[t].order, cols, n, b, &rb);
    pthread_mutex_unlock(&to->mu);
    if (rc != TH_OK) {
      store__error_moves(to, from, rc);
      break;
    }
    rep->rows[t] = rb;
    if (ra != rb || strcmp(a, b) != 0)
      rc = store__fail(from, TH_ERR_CORRUPT,
                       "table %s differs: the source has %" PRId64 " rows (digest %.12s), the destination %" PRId64
                       " (digest %.12s)",
                       store__copy_tables[t].name, ra, a, rb, b);
  }
  return rc;
}

th_status store_artifact_digests(store_t *st, char **out, size_t *count) {
  char *d = NULL;
  size_t n = 0, cap = 0;
  pthread_mutex_lock(&st->mu);
  db_stmt *s = NULL;
  th_status rc = store__prepare(st, "SELECT digest FROM artifacts ORDER BY digest", &s);
  int r = DB_DONE;
  while (rc == TH_OK && (r = db_step(s)) == DB_ROW) {
    char *g = store__grow(st, d, &cap, n, 65);
    if (!g) {
      rc = TH_ERR_NOMEM;
      break;
    }
    d = g;
    store__col_copy(s, 0, d + n * 65, 65);
    n++;
  }
  if (rc == TH_OK && r != DB_DONE) rc = store__db_fail(st, "list artifacts");
  db_finalize(s);
  pthread_mutex_unlock(&st->mu);
  if (rc != TH_OK) {
    free(d);
    return rc;
  }
  *out = d;
  *count = n;
  return TH_OK;
}

const char *store_copy_table_name(int i) {
  return i >= 0 && (size_t)i < STORE__NTABLES ? store__copy_tables[i].name : NULL;
}
