/* Tuning records and workloads. Every trial the tuner runs is one row; a build asks for the
 * best valid row per (workload, target), and transfer learning walks the rows of one template. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"
#include "th_alloc.h"
#include "th_util.h"

th_status store_workload_upsert(store_t *st, const char *key, const char *template_name, double flops) {
  pthread_mutex_lock(&st->mu);
  db_stmt *s = NULL;
  th_status rc = store__prepare(st,
                                "INSERT INTO workloads (key, template_name, flops, created_at) "
                                "VALUES (?, ?, ?, ?) ON CONFLICT (key) DO NOTHING",
                                &s);
  if (rc == TH_OK) {
    db_bind_text(s, 1, key);
    db_bind_text(s, 2, template_name);
    db_bind_double(s, 3, flops);
    db_bind_double(s, 4, th_now_wall());
    if (db_step(s) != DB_DONE) rc = store__db_fail(st, "upsert workload");
  }
  db_finalize(s);
  pthread_mutex_unlock(&st->mu);
  return rc;
}

/* Binds parameters 1..10 of an insert to what the record measured: workload_key, template_name, target,
 * config, config_index, cost_mean_s, cost_std_s, error_class, gflops, tuner (the columns' order). */
static void store__bind_record(db_stmt *s, const store_record *r) {
  db_bind_text(s, 1, r->workload_key);
  db_bind_text(s, 2, r->template_name);
  db_bind_text(s, 3, r->target);
  db_bind_text(s, 4, r->config);
  db_bind_int64(s, 5, r->config_index);
  db_bind_double(s, 6, r->cost_mean_s);
  db_bind_double(s, 7, r->cost_std_s);
  db_bind_int(s, 8, r->error_class);
  db_bind_double(s, 9, r->gflops);
  db_bind_text(s, 10, r->tuner);
}

th_status store_record_add(store_t *st, const store_record *r) {
  /* A record of a leased job is fenced: a worker that lost its claim must not add trials that the new claim
   * did not see when it loaded the records (it would measure them again). */
  int attempt = r->job_id > 0 ? r->attempt : 0;
  pthread_mutex_lock(&st->mu);
  db_stmt *s = NULL;
  th_status rc = store__fenced_begin(st, r->job_id, attempt);
  if (rc == TH_OK)
    rc = store__prepare(st,
                        "INSERT INTO tuning_records (workload_key, template_name, target, config, "
                        "config_index, cost_mean_s, cost_std_s, error_class, gflops, tuner, job_id, "
                        "created_at, attempt) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        &s);
  if (rc == TH_OK) {
    store__bind_record(s, r);
    if (r->job_id > 0)
      db_bind_int64(s, 11, r->job_id);
    else
      db_bind_null(s, 11);
    db_bind_double(s, 12, r->created_at > 0 ? r->created_at : th_now_wall());
    db_bind_int(s, 13, r->attempt > 0 ? r->attempt : 0);
    if (db_step(s) != DB_DONE) rc = store__db_fail(st, "insert record");
  }
  db_finalize(s);
  rc = store__fenced_end(st, attempt, rc);
  pthread_mutex_unlock(&st->mu);
  return rc;
}

#define STORE__REC_COLS                                                                      \
  "id, workload_key, template_name, target, config, config_index, cost_mean_s, cost_std_s, " \
  "error_class, gflops, tuner, job_id, created_at, attempt"

static void store__record_row(db_stmt *s, store_record *r) {
  memset(r, 0, sizeof *r);
  r->id = db_col_int64(s, 0);
  store__col_copy(s, 1, r->workload_key, sizeof r->workload_key);
  store__col_copy(s, 2, r->template_name, sizeof r->template_name);
  store__col_copy(s, 3, r->target, sizeof r->target);
  store__col_copy(s, 4, r->config, sizeof r->config);
  r->config_index = db_col_int64(s, 5);
  r->cost_mean_s = db_col_double(s, 6);
  r->cost_std_s = db_col_double(s, 7);
  r->error_class = db_col_int(s, 8);
  r->gflops = db_col_double(s, 9);
  store__col_copy(s, 10, r->tuner, sizeof r->tuner);
  r->job_id = db_col_int64(s, 11);
  r->created_at = db_col_double(s, 12);
  r->attempt = db_col_int(s, 13);
}

th_status store_record_best(store_t *st, const char *workload_key, const char *target, store_record *out) {
  pthread_mutex_lock(&st->mu);
  db_stmt *s = NULL;
  th_status rc = store__prepare(st,
                                "SELECT " STORE__REC_COLS " FROM tuning_records r WHERE workload_key = ?1 "
                                "AND target = ?2 AND error_class = 0 ORDER BY (tuner = ?3 AND created_at >= "
                                "(SELECT max(created_at) FROM tuning_records WHERE workload_key = ?1 AND "
                                "target = ?2 AND tuner = ?3)) DESC, cost_mean_s, id LIMIT 1",
                                &s);
  if (rc == TH_OK) {
    db_bind_text(s, 1, workload_key);
    db_bind_text(s, 2, target);
    db_bind_text(s, 3, STORE_TUNER_VERIFY);
    int r = db_step(s);
    if (r == DB_ROW)
      store__record_row(s, out);
    else if (r == DB_DONE)
      rc = store__fail(st, TH_ERR_NOT_FOUND, "no valid record for %s", workload_key);
    else
      rc = store__db_fail(st, "best record");
  }
  db_finalize(s);
  pthread_mutex_unlock(&st->mu);
  return rc;
}

/* The records sql selects, in pages of 256 by id: sql binds ?1 a1, ?2 a2 and ?3 the last id of the page before,
 * and ends "id > ?3 ORDER BY id LIMIT 256". Rows are copied out under the lock, and cb runs without it, so a
 * callback may call the store. */
static th_status store__record_pages(store_t *st, const char *sql, const char *a1, const char *a2,
                                     int (*cb)(void *ctx, const store_record *r), void *ctx) {
  int64_t after = 0;
  th_status rc = TH_OK;
  enum { PAGE = 256 };
  store_record *page = th_malloc(PAGE * sizeof *page);
  if (!page) return store__fail(st, TH_ERR_NOMEM, "out of memory");
  for (;;) {
    int n = 0;
    pthread_mutex_lock(&st->mu);
    db_stmt *s = NULL;
    rc = store__prepare(st, sql, &s);
    if (rc == TH_OK) {
      db_bind_text(s, 1, a1);
      db_bind_text(s, 2, a2);
      db_bind_int64(s, 3, after);
      int r = DB_DONE;
      while (n < PAGE && (r = db_step(s)) == DB_ROW) store__record_row(s, &page[n++]);
      if (r == DB_ERROR) rc = store__db_fail(st, "select records");
    }
    db_finalize(s);
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

th_status store_record_each(store_t *st, const char *template_name, const char *target,
                            int (*cb)(void *ctx, const store_record *r), void *ctx) {
  return store__record_pages(st,
                             "SELECT " STORE__REC_COLS " FROM tuning_records WHERE template_name = ?1 AND "
                             "target = ?2 AND id > ?3 ORDER BY id LIMIT 256",
                             template_name, target, cb, ctx);
}

th_status store_record_count(store_t *st, const char *workload_key, const char *target, int64_t *n) {
  pthread_mutex_lock(&st->mu);
  db_stmt *s = NULL;
  th_status rc = store__prepare(st,
                                "SELECT count(*) FROM tuning_records WHERE workload_key = ? AND "
                                "target = ? AND tuner != ?",
                                &s);
  if (rc == TH_OK) {
    db_bind_text(s, 1, workload_key);
    db_bind_text(s, 2, target);
    db_bind_text(s, 3, STORE_TUNER_VERIFY);
    if (db_step(s) == DB_ROW)
      *n = db_col_int64(s, 0);
    else
      rc = store__db_fail(st, "count records");
  }
  db_finalize(s);
  pthread_mutex_unlock(&st->mu);
  return rc;
}

th_status store_record_gflops(store_t *st, const char *workload_key, const char *target, double **gflops,
                              int64_t *n) {
  *gflops = NULL;
  *n = 0;
  size_t cap = 0;
  pthread_mutex_lock(&st->mu);
  db_stmt *s = NULL;
  th_status rc = store__prepare(st,
                                "SELECT CASE WHEN error_class = 0 THEN gflops ELSE 0 END FROM "
                                "tuning_records WHERE workload_key = ? AND target = ? AND tuner != ? ORDER BY id",
                                &s);
  if (rc == TH_OK) {
    db_bind_text(s, 1, workload_key);
    db_bind_text(s, 2, target);
    db_bind_text(s, 3, STORE_TUNER_VERIFY);
    int r = DB_DONE;
    while (rc == TH_OK && (r = db_step(s)) == DB_ROW) {
      if ((size_t)*n == cap) {
        cap = cap ? cap * 2 : 64;
        double *g = th_realloc(*gflops, cap * sizeof *g);
        if (!g) {
          rc = store__fail(st, TH_ERR_NOMEM, "out of memory");
          break;
        }
        *gflops = g;
      }
      (*gflops)[(*n)++] = db_col_double(s, 0);
    }
    if (rc == TH_OK && r != DB_DONE) rc = store__db_fail(st, "record gflops");
  }
  db_finalize(s);
  pthread_mutex_unlock(&st->mu);
  if (rc != TH_OK) {
    free(*gflops);
    *gflops = NULL;
    *n = 0;
  }
  return rc;
}

/* The records a query selects, paged as store_record_each's. The best record of a (workload, template, target) is store_record_best's choice, spelled as a window over all
 * of them at once: the records of the latest verification first, then the fastest, then the oldest. */
th_status store_record_select(store_t *st, const store_record_query *q,
                              int (*cb)(void *ctx, const store_record *r), void *ctx) {
  const char *target = q && q->target && q->target[0] ? q->target : NULL;
  const char *prefix = q && q->target_prefix && q->target_prefix[0] ? q->target_prefix : NULL;
  int best = q && q->best;
  /* the filters are fixed fragments; their values are bound (?1 target, ?2 prefix, ?3 after) */
  char sql[1536];
  snprintf(sql, sizeof sql,
           "SELECT " STORE__REC_COLS " FROM (SELECT r.*, %s AS rn FROM tuning_records r WHERE %s AND %s AND %s) b "
           "WHERE rn = 1 AND id > ?3 ORDER BY id LIMIT 256",
           best ? "row_number() OVER (PARTITION BY r.workload_key, r.template_name, r.target ORDER BY "
                  "(r.tuner = '" STORE_TUNER_VERIFY "' AND r.created_at >= (SELECT max(v.created_at) FROM "
                  "tuning_records v WHERE v.workload_key = r.workload_key AND v.target = r.target AND "
                  "v.tuner = '" STORE_TUNER_VERIFY "')) DESC, r.cost_mean_s, r.id)"
                : "1",
           best ? "r.error_class = 0" : "1 = 1", target ? "r.target = ?1" : "?1 = ?1",
           prefix ? "substr(r.target, 1, length(?2)) = ?2" : "?2 = ?2");
  return store__record_pages(st, sql, target ? target : "", prefix ? prefix : "", cb, ctx);
}

th_status store_record_import(store_t *st, const store_record *recs, size_t n, int64_t *added) {
  int64_t count = 0;
  pthread_mutex_lock(&st->mu);
  db_stmt *s = NULL;
  th_status rc = store__begin(st);
  int began = rc == TH_OK;
  /* the row goes in unless a record with the same workload, template, target, config index, tuner and cost
   * (?1 ?2 ?3 ?5 ?10 ?6) is there */
  if (rc == TH_OK)
    rc = store__prepare(st,
                        "INSERT INTO tuning_records (workload_key, template_name, target, config, "
                        "config_index, cost_mean_s, cost_std_s, error_class, gflops, tuner, job_id, "
                        "created_at, attempt) SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, NULL, ?11, 0 "
                        "WHERE NOT EXISTS (SELECT 1 FROM tuning_records WHERE workload_key = ?1 AND "
                        "template_name = ?2 AND target = ?3 AND config_index = ?5 AND tuner = ?10 AND "
                        "cost_mean_s = ?6)",
                        &s);
  for (size_t i = 0; rc == TH_OK && i < n; i++) {
    const store_record *r = &recs[i];
    db_reset(s);
    store__bind_record(s, r);
    db_bind_double(s, 11, r->created_at > 0 ? r->created_at : th_now_wall());
    if (db_step(s) != DB_DONE)
      rc = store__db_fail(st, "insert record");
    else
      count += db_changes(st->db);
  }
  db_finalize(s);
  if (began) rc = store__tx_end(st, rc); /* all or nothing: an error rolls back every insert */
  pthread_mutex_unlock(&st->mu);
  if (rc == TH_OK && added) *added = count;
  return rc;
}
