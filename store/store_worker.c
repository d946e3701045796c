/* Workers and their leases: the processes that claim jobs (`tunehub worker` on each machine with
 * hardware to tune for, and each daemon's own scheduler) register their concrete targets, heartbeat
 * on the database's clock, and hand their jobs back when they stop. The fleet view (GET /workers,
 * /metrics) reads from here. Every time is the database's ({now}), never a worker's own clock, so
 * machines with skewed clocks agree on who is alive. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"
#include "th_alloc.h"

/* targets as a JSON array of strings into a new buffer (NULL when out of memory). */
static char *store__targets_json(const char *const *targets, int n) {
  size_t cap = 3;
  for (int i = 0; i < n; i++) cap += strlen(targets[i]) * 6 + 3;
  char *out = th_malloc(cap), *p = out;
  if (!out) return NULL;
  *p++ = '[';
  for (int i = 0; i < n; i++) {
    if (i) *p++ = ',';
    *p++ = '"';
    for (const unsigned char *c = (const unsigned char *)targets[i]; *c; c++) {
      if (*c == '"' || *c == '\\') {
        *p++ = '\\';
        *p++ = (char)*c;
      } else if (*c < 0x20) {
        p += snprintf(p, 7, "\\u%04x", *c);
      } else {
        *p++ = (char)*c;
      }
    }
    *p++ = '"';
  }
  *p++ = ']';
  *p = '\0';
  return out;
}

/* Runs sql with worker name bound to ?1 (and nothing else); *changed (may be NULL) gets the rows it
 * changed. */
static th_status store__worker_exec(store_t *st, const char *sql, const char *name,
                                    const char *what, int *changed) {
  db_stmt *s = NULL;
  th_status rc = store__prepare(st, sql, &s);
  if (rc == TH_OK) {
    db_bind_text(s, 1, name);
    if (db_step(s) != DB_DONE)
      rc = store__db_fail(st, what);
    else if (changed)
      *changed = (int)db_changes(st->db);
  }
  db_finalize(s);
  return rc;
}

/* Sends the running jobs worker ?1 holds back to the queue (a cancel that was requested ends them
 * instead), with the stage "requeued: worker W <why>"; the caller holds the write transaction. */
static th_status store__worker_release(store_t *st, const char *name, const char *why,
                                       int *requeued) {
  th_status rc =
      store__worker_exec(st,
                         "UPDATE jobs SET state = 'cancelled', error = 'cancelled by request', "
                         "finished_at = {now}, stage = 'done', lease_until = NULL "
                         "WHERE state = 'running' AND worker = ?1 AND cancel_requested = 1",
                         name, "cancel the jobs of a worker", NULL);
  db_stmt *s = NULL;
  if (rc == TH_OK)
    rc = store__prepare(
        st,
        "UPDATE jobs SET state = 'queued', worker = NULL, lease_until = NULL, "
        "stage = 'requeued: worker ' || ?1 || ' ' || ?2 WHERE state = 'running' AND worker = ?1",
        &s);
  if (rc == TH_OK) {
    db_bind_text(s, 1, name);
    db_bind_text(s, 2, why);
    if (db_step(s) != DB_DONE)
      rc = store__db_fail(st, "requeue the jobs of a worker");
    else if (requeued)
      *requeued = (int)db_changes(st->db);
  }
  db_finalize(s);
  return rc;
}

th_status store_worker_register(store_t *st, const char *name, const char *host,
                                const char *const *targets, int ntargets, int slots, double lease_s,
                                int *requeued) {
  if (!name || !*name || !host || ntargets < 0 || (ntargets > 0 && !targets) || slots < 0 ||
      lease_s <= 0)
    return store__fail(st, TH_ERR_INVALID,
                       "a worker registers a name, a host, its targets and a lease > 0");
  char *json = store__targets_json(targets, ntargets);
  if (!json) return store__fail(st, TH_ERR_NOMEM, "out of memory");
  int req = 0;
  pthread_mutex_lock(&st->mu);
  th_status rc = store__begin(st);
  /* an earlier process under this name is gone (this one has claimed nothing yet): its jobs go back
   */
  if (rc == TH_OK) rc = store__worker_release(st, name, "restarted", &req);
  if (rc == TH_OK)
    rc = store__worker_exec(
        st,
        "DELETE FROM worker_targets WHERE worker IN (SELECT name FROM workers WHERE name <> ?1 "
        "AND coalesce(stopped_at, heartbeat_at) < {now} - 86400)",
        name, "forget old workers", NULL);
  if (rc == TH_OK)
    rc = store__worker_exec(
        st,
        "DELETE FROM workers WHERE name <> ?1 AND coalesce(stopped_at, heartbeat_at) < {now} - "
        "86400",
        name, "forget old workers", NULL);
  db_stmt *s = NULL;
  if (rc == TH_OK)
    rc = store__prepare(
        st,
        "INSERT INTO workers (name, host, targets, slots, lease_s, started_at, heartbeat_at) "
        "VALUES (?1, ?2, ?3, ?4, ?5, {now}, {now}) ON CONFLICT (name) DO UPDATE SET "
        "host = excluded.host, targets = excluded.targets, slots = excluded.slots, "
        "lease_s = excluded.lease_s, started_at = excluded.started_at, "
        "heartbeat_at = excluded.heartbeat_at, stopped_at = NULL",
        &s);
  if (rc == TH_OK) {
    db_bind_text(s, 1, name);
    db_bind_text(s, 2, host);
    db_bind_text(s, 3, json);
    db_bind_int(s, 4, slots);
    db_bind_double(s, 5, lease_s);
    if (db_step(s) != DB_DONE) rc = store__db_fail(st, "register worker");
  }
  db_finalize(s);
  s = NULL;
  if (rc == TH_OK)
    rc = store__worker_exec(st, "DELETE FROM worker_targets WHERE worker = ?1", name,
                            "register worker", NULL);
  if (rc == TH_OK)
    rc = store__prepare(
        st, "INSERT INTO worker_targets (worker, target) VALUES (?, ?) ON CONFLICT DO NOTHING", &s);
  for (int i = 0; rc == TH_OK && i < ntargets; i++) {
    db_reset(s);
    db_bind_text(s, 1, name);
    db_bind_text(s, 2, targets[i]);
    if (db_step(s) != DB_DONE) rc = store__db_fail(st, "register a worker's target");
  }
  db_finalize(s);
  rc = store__tx_end(st, rc);
  pthread_mutex_unlock(&st->mu);
  free(json);
  if (rc == TH_OK && requeued) *requeued = req;
  return rc;
}

th_status store_worker_heartbeat(store_t *st, const char *name, double lease_s, int *extended) {
  pthread_mutex_lock(&st->mu);
  int seen = 0, n = 0;
  th_status rc = store__worker_exec(st, "UPDATE workers SET heartbeat_at = {now} WHERE name = ?1",
                                    name, "heartbeat", &seen);
  if (rc == TH_OK && seen == 0)
    rc = store__fail(st, TH_ERR_NOT_FOUND, "worker %s is not registered", name);
  /* one statement per job set: a reap that runs at the same moment either sees the extended lease
   * or has requeued the job first, in which case worker is no longer this one and the row is left
   * alone */
  db_stmt *s = NULL;
  if (rc == TH_OK)
    rc = store__prepare(
        st, "UPDATE jobs SET lease_until = {now} + ? WHERE state = 'running' AND worker = ?", &s);
  if (rc == TH_OK) {
    db_bind_double(s, 1, lease_s);
    db_bind_text(s, 2, name);
    if (db_step(s) != DB_DONE)
      rc = store__db_fail(st, "extend leases");
    else
      n = (int)db_changes(st->db);
  }
  db_finalize(s);
  pthread_mutex_unlock(&st->mu);
  if (rc == TH_OK && extended) *extended = n;
  return rc;
}

th_status store_worker_stop(store_t *st, const char *name, int *requeued) {
  int req = 0;
  pthread_mutex_lock(&st->mu);
  th_status rc = store__begin(st);
  if (rc == TH_OK) rc = store__worker_release(st, name, "stopped", &req);
  if (rc == TH_OK)
    rc = store__worker_exec(st, "UPDATE workers SET stopped_at = {now} WHERE name = ?1", name,
                            "stop worker", NULL);
  rc = store__tx_end(st, rc);
  pthread_mutex_unlock(&st->mu);
  if (rc == TH_OK && requeued) *requeued = req;
  return rc;
}

void store_worker_list_free(store_worker *workers, size_t n) {
  if (!workers) return;
  for (size_t i = 0; i < n; i++) {
    free(workers[i].targets);
    free(workers[i].jobs);
  }
  free(workers);
}

/* "alive": not stopped, and heartbeating within its own lease (its jobs would be reaped after that
 * anyway) */
#define STORE__WORKER_ALIVE "(w.stopped_at IS NULL AND w.heartbeat_at >= {now} - w.lease_s)"

/* Appends the running jobs to the workers that hold them (ws sorted by nothing in particular: a
 * linear match). */
static th_status store__worker_jobs(store_t *st, store_worker *ws, size_t n) {
  db_stmt *s = NULL;
  th_status rc = store__prepare(
      st,
      "SELECT id, framework, network, batch, target, compiler_version, precision, net_digest, kind, "
      "attempts, stage, coalesce(lease_until - {now}, 0), worker FROM jobs "
      "WHERE state = 'running' AND worker IS NOT NULL ORDER BY id",
      &s);
  int r = DB_DONE;
  while (rc == TH_OK && (r = db_step(s)) == DB_ROW) {
    const char *worker = db_col_text(s, 12);
    store_worker *w = NULL;
    for (size_t i = 0; worker && i < n && !w; i++)
      if (!strcmp(ws[i].name, worker)) w = &ws[i];
    if (!w) continue; /* a worker forgotten meanwhile */
    store_worker_job *grown = th_realloc(w->jobs, (w->njobs + 1) * sizeof *grown);
    if (!grown) {
      rc = store__fail(st, TH_ERR_NOMEM, "out of memory");
      break;
    }
    w->jobs = grown;
    store_worker_job *j = &w->jobs[w->njobs++];
    memset(j, 0, sizeof *j);
    j->id = db_col_int64(s, 0);
    store__col_key(s, 1, &j->key);
    store__col_copy(s, 7, j->key.net_digest, sizeof j->key.net_digest);
    store__col_copy(s, 8, j->kind, sizeof j->kind);
    j->attempt = db_col_int(s, 9);
    store__col_copy(s, 10, j->stage, sizeof j->stage);
    j->lease_left_s = db_col_double(s, 11);
  }
  if (rc == TH_OK && r != DB_DONE) rc = store__db_fail(st, "list the jobs of workers");
  db_finalize(s);
  return rc;
}

th_status store_worker_list(store_t *st, store_worker **out, size_t *count) {
  store_worker *ws = NULL;
  size_t n = 0, cap = 0;
  pthread_mutex_lock(&st->mu);
  db_stmt *s = NULL;
  th_status rc = store__prepare(
      st,
      "SELECT w.name, w.host, w.targets, w.slots, w.lease_s, w.started_at, w.heartbeat_at, "
      "coalesce(w.stopped_at, 0), {now} - w.heartbeat_at, "
      "CASE WHEN " STORE__WORKER_ALIVE
      " THEN 1 ELSE 0 END AS alive "
      "FROM workers w ORDER BY alive DESC, w.name",
      &s);
  int r = DB_DONE;
  while (rc == TH_OK && (r = db_step(s)) == DB_ROW) {
    void *grown = store__grow(st, ws, &cap, n, sizeof *ws);
    if (!grown) {
      rc = TH_ERR_NOMEM;
      break;
    }
    ws = grown;
    store_worker *w = &ws[n++];
    memset(w, 0, sizeof *w);
    store__col_copy(s, 0, w->name, sizeof w->name);
    store__col_copy(s, 1, w->host, sizeof w->host);
    w->targets = store__col_dup(s, 2);
    w->slots = db_col_int(s, 3);
    w->lease_s = db_col_double(s, 4);
    w->started_at = db_col_double(s, 5);
    w->heartbeat_at = db_col_double(s, 6);
    w->stopped_at = db_col_double(s, 7);
    w->heartbeat_age_s = db_col_double(s, 8);
    w->alive = db_col_int(s, 9);
    if (!w->targets) rc = store__fail(st, TH_ERR_NOMEM, "out of memory");
  }
  if (rc == TH_OK && r != DB_DONE) rc = store__db_fail(st, "list workers");
  db_finalize(s);
  if (rc == TH_OK) rc = store__worker_jobs(st, ws, n);
  pthread_mutex_unlock(&st->mu);
  if (rc != TH_OK) {
    store_worker_list_free(ws, n);
    return rc;
  }
  *out = ws;
  *count = n;
  return TH_OK;
}

th_status store_worker_live(store_t *st, const char *target, int *n) {
  pthread_mutex_lock(&st->mu);
  db_stmt *s = NULL;
  th_status rc =
      store__prepare(st,
                     "SELECT count(*) FROM workers w JOIN worker_targets t ON t.worker = w.name "
                     "WHERE t.target = ? AND " STORE__WORKER_ALIVE,
                     &s);
  if (rc == TH_OK) {
    db_bind_text(s, 1, target);
    if (db_step(s) == DB_ROW)
      *n = db_col_int(s, 0);
    else
      rc = store__db_fail(st, "count live workers");
  }
  db_finalize(s);
  pthread_mutex_unlock(&st->mu);
  return rc;
}

th_status store_target_stats(store_t *st, store_target_stat **out, size_t *count) {
  static const char *const sql =
      "WITH q AS (SELECT target, count(*) AS queued, "
      "    sum(CASE WHEN needs_target <> '' THEN 1 ELSE 0 END) AS waiting "
      "  FROM jobs WHERE state = 'queued' GROUP BY target), "
      "live AS (SELECT t.target, sum(CASE WHEN " STORE__WORKER_ALIVE " THEN 1 ELSE 0 END) AS alive "
      "  FROM worker_targets t JOIN workers w ON w.name = t.worker GROUP BY t.target), "
      "ts AS (SELECT target FROM q UNION SELECT target FROM live) "
      "SELECT ts.target, coalesce(q.queued, 0), coalesce(q.waiting, 0), coalesce(live.alive, 0) "
      "FROM ts LEFT JOIN q ON q.target = ts.target LEFT JOIN live ON live.target = ts.target "
      "ORDER BY ts.target";
  store_target_stat *rows = NULL;
  size_t n = 0, cap = 0;
  pthread_mutex_lock(&st->mu);
  db_stmt *s = NULL;
  th_status rc = store__prepare(st, sql, &s);
  int r = DB_DONE;
  while (rc == TH_OK && (r = db_step(s)) == DB_ROW) {
    void *grown = store__grow(st, rows, &cap, n, sizeof *rows);
    if (!grown) {
      rc = TH_ERR_NOMEM;
      break;
    }
    rows = grown;
    store_target_stat *t = &rows[n++];
    memset(t, 0, sizeof *t);
    store__col_copy(s, 0, t->target, sizeof t->target);
    t->queued = db_col_int64(s, 1);
    t->waiting = db_col_int64(s, 2);
    t->workers_alive = db_col_int64(s, 3);
  }
  if (rc == TH_OK && r != DB_DONE) rc = store__db_fail(st, "per-target counts");
  db_finalize(s);
  pthread_mutex_unlock(&st->mu);
  if (rc != TH_OK) {
    free(rows);
    return rc;
  }
  *out = rows;
  *count = n;
  return TH_OK;
}
