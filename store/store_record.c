/* Tuning records and workloads. Every trial the tuner runs is one row; a build asks for the
 * best valid row per (workload, target), and transfer learning walks the rows of one template. */
#include <stdlib.h>
#include <string.h>

#include "store_int.h"
#include "th_util.h"

th_status store_workload_upsert(store_t *st, const char *key, const char *template_name, double flops) {
  pthread_mutex_lock(&st->mu);
  sqlite3_stmt *s = NULL;
  th_status rc = store__prepare(st,
                                "INSERT OR IGNORE INTO workloads (key, template_name, flops, created_at) "
                                "VALUES (?, ?, ?, ?)",
                                &s);
  if (rc == TH_OK) {
    sqlite3_bind_text(s, 1, key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, template_name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(s, 3, flops);
    sqlite3_bind_double(s, 4, th_now_wall());
    if (sqlite3_step(s) != SQLITE_DONE) rc = store__db_fail(st, "upsert workload");
  }
  sqlite3_finalize(s);
  pthread_mutex_unlock(&st->mu);
  return rc;
}

th_status store_record_add(store_t *st, const store_record *r) {
  pthread_mutex_lock(&st->mu);
  sqlite3_stmt *s = NULL;
  th_status rc = store__prepare(st,
                                "INSERT INTO tuning_records (workload_key, template_name, target, config, "
                                "config_index, cost_mean_s, cost_std_s, error_class, gflops, tuner, job_id, "
                                "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                &s);
  if (rc == TH_OK) {
    sqlite3_bind_text(s, 1, r->workload_key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, r->template_name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 3, r->target, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 4, r->config, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 5, r->config_index);
    sqlite3_bind_double(s, 6, r->cost_mean_s);
    sqlite3_bind_double(s, 7, r->cost_std_s);
    sqlite3_bind_int(s, 8, r->error_class);
    sqlite3_bind_double(s, 9, r->gflops);
    sqlite3_bind_text(s, 10, r->tuner, -1, SQLITE_TRANSIENT);
    if (r->job_id > 0)
      sqlite3_bind_int64(s, 11, r->job_id);
    else
      sqlite3_bind_null(s, 11);
    sqlite3_bind_double(s, 12, r->created_at > 0 ? r->created_at : th_now_wall());
    if (sqlite3_step(s) != SQLITE_DONE) rc = store__db_fail(st, "insert record");
  }
  sqlite3_finalize(s);
  pthread_mutex_unlock(&st->mu);
  return rc;
}

#define STORE__REC_COLS                                                                      \
  "id, workload_key, template_name, target, config, config_index, cost_mean_s, cost_std_s, " \
  "error_class, gflops, tuner, job_id, created_at"

static void store__record_row(sqlite3_stmt *s, store_record *r) {
  memset(r, 0, sizeof *r);
  r->id = sqlite3_column_int64(s, 0);
  store__col_copy(s, 1, r->workload_key, sizeof r->workload_key);
  store__col_copy(s, 2, r->template_name, sizeof r->template_name);
  store__col_copy(s, 3, r->target, sizeof r->target);
  store__col_copy(s, 4, r->config, sizeof r->config);
  r->config_index = sqlite3_column_int64(s, 5);
  r->cost_mean_s = sqlite3_column_double(s, 6);
  r->cost_std_s = sqlite3_column_double(s, 7);
  r->error_class = sqlite3_column_int(s, 8);
  r->gflops = sqlite3_column_double(s, 9);
  store__col_copy(s, 10, r->tuner, sizeof r->tuner);
  r->job_id = sqlite3_column_int64(s, 11);
  r->created_at = sqlite3_column_double(s, 12);
}

th_status store_record_best(store_t *st, const char *workload_key, const char *target, store_record *out) {
  pthread_mutex_lock(&st->mu);
  sqlite3_stmt *s = NULL;
  th_status rc = store__prepare(st,
                                "SELECT " STORE__REC_COLS " FROM tuning_records r WHERE workload_key = ?1 "
                                "AND target = ?2 AND error_class = 0 ORDER BY (tuner = ?3 AND created_at >= "
                                "(SELECT max(created_at) FROM tuning_records WHERE workload_key = ?1 AND "
                                "target = ?2 AND tuner = ?3)) DESC, cost_mean_s, id LIMIT 1",
                                &s);
  if (rc == TH_OK) {
    sqlite3_bind_text(s, 1, workload_key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, target, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 3, STORE_TUNER_VERIFY, -1, SQLITE_STATIC);
    int r = sqlite3_step(s);
    if (r == SQLITE_ROW)
      store__record_row(s, out);
    else if (r == SQLITE_DONE)
      rc = store__fail(st, TH_ERR_NOT_FOUND, "no valid record for %s", workload_key);
    else
      rc = store__db_fail(st, "best record");
  }
  sqlite3_finalize(s);
  pthread_mutex_unlock(&st->mu);
  return rc;
}

th_status store_record_each(store_t *st, const char *template_name, const char *target,
                            int (*cb)(void *ctx, const store_record *r), void *ctx) {
  /* Rows are copied out under the lock in pages, and cb runs without it, so a callback may call the store. */
  int64_t after = 0;
  th_status rc = TH_OK;
  enum { PAGE = 256 };
  store_record *page = malloc(PAGE * sizeof *page);
  if (!page) return store__fail(st, TH_ERR_NOMEM, "out of memory");
  for (;;) {
    int n = 0;
    pthread_mutex_lock(&st->mu);
    sqlite3_stmt *s = NULL;
    rc = store__prepare(st,
                        "SELECT " STORE__REC_COLS " FROM tuning_records WHERE template_name = ? AND "
                        "target = ? AND id > ? ORDER BY id LIMIT 256",
                        &s);
    if (rc == TH_OK) {
      sqlite3_bind_text(s, 1, template_name, -1, SQLITE_TRANSIENT);
      sqlite3_bind_text(s, 2, target, -1, SQLITE_TRANSIENT);
      sqlite3_bind_int64(s, 3, after);
      int r;
      while (n < PAGE && (r = sqlite3_step(s)) == SQLITE_ROW) store__record_row(s, &page[n++]);
    }
    sqlite3_finalize(s);
    pthread_mutex_unlock(&st->mu);
    if (rc != TH_OK) break;
    int stop = 0;
    for (int i = 0; i < n && !stop; i++) stop = cb(ctx, &page[i]);
    if (stop || n < PAGE) break;
    after = page[n - 1].id;
  }
  free(page);
  return rc;
}

th_status store_record_count(store_t *st, const char *workload_key, const char *target, int64_t *n) {
  pthread_mutex_lock(&st->mu);
  sqlite3_stmt *s = NULL;
  th_status rc = store__prepare(st,
                                "SELECT count(*) FROM tuning_records WHERE workload_key = ? AND "
                                "target = ? AND tuner != ?",
                                &s);
  if (rc == TH_OK) {
    sqlite3_bind_text(s, 1, workload_key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, target, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 3, STORE_TUNER_VERIFY, -1, SQLITE_STATIC);
    if (sqlite3_step(s) == SQLITE_ROW)
      *n = sqlite3_column_int64(s, 0);
    else
      rc = store__db_fail(st, "count records");
  }
  sqlite3_finalize(s);
  pthread_mutex_unlock(&st->mu);
  return rc;
}

th_status store_record_gflops(store_t *st, const char *workload_key, const char *target, double **gflops,
                              int64_t *n) {
  *gflops = NULL;
  *n = 0;
  size_t cap = 0;
  pthread_mutex_lock(&st->mu);
  sqlite3_stmt *s = NULL;
  th_status rc = store__prepare(st,
                                "SELECT CASE WHEN error_class = 0 THEN gflops ELSE 0 END FROM "
                                "tuning_records WHERE workload_key = ? AND target = ? AND tuner != ? ORDER BY id",
                                &s);
  if (rc == TH_OK) {
    sqlite3_bind_text(s, 1, workload_key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, target, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 3, STORE_TUNER_VERIFY, -1, SQLITE_STATIC);
    int r = SQLITE_DONE;
    while (rc == TH_OK && (r = sqlite3_step(s)) == SQLITE_ROW) {
      if ((size_t)*n == cap) {
        cap = cap ? cap * 2 : 64;
        double *g = realloc(*gflops, cap * sizeof *g);
        if (!g) {
          rc = store__fail(st, TH_ERR_NOMEM, "out of memory");
          break;
        }
        *gflops = g;
      }
      (*gflops)[(*n)++] = sqlite3_column_double(s, 0);
    }
    if (rc == TH_OK && r != SQLITE_DONE) rc = store__db_fail(st, "record gflops");
  }
  sqlite3_finalize(s);
  pthread_mutex_unlock(&st->mu);
  if (rc != TH_OK) {
    free(*gflops);
    *gflops = NULL;
    *n = 0;
  }
  return rc;
}
