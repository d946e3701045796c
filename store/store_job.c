/* The persistent job queue. Single-flight: an enqueue looks up the key's live (queued or running) job and inserts
 * only when there is none, in one write transaction that also counts the queue against its limit; the partial
 * unique index jobs_live_key backs this up in the schema. A claim selects its row FOR UPDATE SKIP LOCKED and
 * marks it running with a lease and the next attempt number in one transaction, so two workers never claim the
 * same job; the attempt is the fencing token that every later write of the job is checked against
 * (store__fence), and an expired lease sends the job back to the queue (store_job_reap). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"
#include "th_util.h"

static const char *const store__job_states[] = {"queued", "running", "succeeded", "failed",
                                                "cancelled"};

const char *store_job_state_str(store_job_state s) {
  return (unsigned)s < 5 ? store__job_states[s] : "unknown";
}

store_job_state store_job_state_parse(const char *s) {
  for (int i = 0; i < 5; i++)
    if (s && strcmp(s, store__job_states[i]) == 0) return (store_job_state)i;
  return STORE_JOB_FAILED;
}

void store_job_clear(store_job *j) {
  if (!j) return;
  free(j->options);
  free(j->progress);
  free(j->error);
  j->options = j->progress = j->error = NULL;
}

#define STORE__JOB_COLS                                                                          \
  "id, framework, network, batch, target, compiler_version, precision, kind, options, priority, state, stage, " \
  "progress, error, cancel_requested, attempts, created_at, started_at, finished_at, net_digest, "          \
  "coalesce(worker, ''), needs_target, lease_until"

/* store__col_dup into *out: 0 when the column holds a text that could not be copied (out of memory), which
 * a NULL in *out alone would pass off as an SQL NULL. */
static int store__job_text(db_stmt *s, int col, char **out) {
  *out = store__col_dup(s, col);
  return *out != NULL || db_col_is_null(s, col);
}

/* Reads the row into *j. TH_ERR_NOMEM (on st's handle, *j cleared) when a text could not be copied: a job
 * whose options went missing would run with the defaults instead of what was asked. */
static th_status store__job_row(store_t *st, db_stmt *s, store_job *j) {
  memset(j, 0, sizeof *j);
  j->id = db_col_int64(s, 0);
  store__col_key(s, 1, &j->key);
  store__col_copy(s, 7, j->kind, sizeof j->kind);
  int copied = store__job_text(s, 8, &j->options);
  j->priority = db_col_int(s, 9);
  j->state = store_job_state_parse(db_col_text(s, 10));
  store__col_copy(s, 11, j->stage, sizeof j->stage);
  copied = store__job_text(s, 12, &j->progress) && copied;
  copied = store__job_text(s, 13, &j->error) && copied;
  j->cancel_requested = db_col_int(s, 14);
  j->attempts = db_col_int(s, 15);
  j->created_at = db_col_double(s, 16);
  j->started_at = db_col_double(s, 17);
  j->finished_at = db_col_double(s, 18);
  store__col_copy(s, 19, j->key.net_digest, sizeof j->key.net_digest);
  store__col_copy(s, 20, j->worker, sizeof j->worker);
  store__col_copy(s, 21, j->needs_target, sizeof j->needs_target);
  j->lease_until = db_col_double(s, 22);
  if (copied) return TH_OK;
  store_job_clear(j);
  return store__fail(st, TH_ERR_NOMEM, "out of memory reading job %lld", (long long)j->id);
}

static th_status store__job_select(store_t *st, const char *where, int64_t id, const store_key *k,
                                   store_job *out) {
  char sql[1024];
  snprintf(sql, sizeof sql, "SELECT " STORE__JOB_COLS " FROM jobs WHERE %s", where);
  db_stmt *s = NULL;
  th_status rc = store__prepare(st, sql, &s);
  if (rc == TH_OK) {
    if (k) {
      store__bind_key(s, 1, k, 1);
    } else {
      db_bind_int64(s, 1, id);
    }
    int r = db_step(s);
    if (r == DB_ROW)
      rc = store__job_row(st, s, out);
    else if (r == DB_DONE)
      rc = store__fail(st, TH_ERR_NOT_FOUND, "no such job");
    else
      rc = store__db_fail(st, "select job");
  }
  db_finalize(s);
  return rc;
}

#define STORE__KEY_WHERE \
  "framework = ?1 AND network = ?2 AND batch = ?3 AND target = ?4 AND compiler_version = ?5 AND precision = ?6 " \
  "AND net_digest = ?7"

/* The INSERT of a new queued job, inside the caller's transaction; when max_queued > 0 it first counts the queued
 * jobs in the same transaction, so the count and the insert see the same queue. */
static th_status store__job_insert(store_t *st, const store_key *key, const char *kind, const char *options,
                                   int priority, int64_t max_queued, int64_t *id) {
  db_stmt *s = NULL;
  th_status rc = TH_OK;
  if (max_queued > 0) {
    rc = store__prepare(st, "SELECT count(*) FROM jobs WHERE state = 'queued'", &s);
    if (rc == TH_OK) {
      if (db_step(s) != DB_ROW) {
        rc = store__db_fail(st, "count queued jobs");
      } else {
        int64_t queued = db_col_int64(s, 0);
        if (queued >= max_queued)
          rc = store__fail(st, TH_ERR_BUSY, "%lld jobs are queued (the limit is %lld); retry later",
                           (long long)queued, (long long)max_queued);
      }
    }
    db_finalize(s);
    s = NULL;
  }
  if (rc == TH_OK)
    rc = store__prepare(st,
                        "INSERT INTO jobs (framework, network, batch, target, compiler_version, precision, "
                        "net_digest, kind, options, priority, state, created_at) VALUES "
                        "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?) RETURNING id",
                        &s);
  if (rc == TH_OK) {
    store__bind_key(s, 1, key, 1);
    db_bind_text(s, 8, kind ? kind : "build");
    db_bind_text(s, 9, options ? options : "{}");
    db_bind_int(s, 10, priority);
    db_bind_double(s, 11, th_now_wall());
    if (db_step(s) == DB_ROW)
      *id = db_col_int64(s, 0);
    else
      rc = store__db_fail(st, "enqueue job");
  }
  db_finalize(s);
  return rc;
}

/* Makes queued build job id a tune job with options and at least priority. */
static th_status store__job_make_tune(store_t *st, int64_t id, const char *options, int priority) {
  db_stmt *s = NULL;
  th_status rc = store__prepare(st,
                                "UPDATE jobs SET kind = 'tune', options = ?1, "
                                "priority = CASE WHEN priority < ?2 THEN ?2 ELSE priority END "
                                "WHERE id = ?3 AND state = 'queued'",
                                &s);
  if (rc == TH_OK) {
    db_bind_text(s, 1, options ? options : "{}");
    db_bind_int(s, 2, priority);
    db_bind_int64(s, 3, id);
    if (db_step(s) != DB_DONE) rc = store__db_fail(st, "make job a tune job");
  }
  db_finalize(s);
  return rc;
}

th_status store_job_enqueue_limited(store_t *st, const store_key *key, const char *kind, const char *options,
                                    int priority, int64_t max_queued, int64_t *job_id, int *created) {
  pthread_mutex_lock(&st->mu);
  /* One IMMEDIATE transaction holds the write lock from the look-up of the live job through the count to the
   * insert: neither another thread nor another process can queue in between, so the limit and single-flight
   * hold together. */
  th_status rc = store__begin(st);
  int made = 0;
  int64_t id = 0;
  if (rc == TH_OK) {
    store_job live;
    rc = store__job_select(st, STORE__KEY_WHERE " AND state IN ('queued', 'running')", 0, key, &live);
    if (rc == TH_OK) {
      id = live.id;
      /* a build job publishes its quick build and ends without tuning: a tune request makes a queued one a tune
       * job, and is refused while one runs (one live job per key), rather than joining it and being lost */
      if (kind && !strcmp(kind, "tune") && strcmp(live.kind, "tune") != 0) {
        if (live.state == STORE_JOB_QUEUED)
          rc = store__job_make_tune(st, id, options, priority);
        else
          rc = store__fail(st, TH_ERR_CONFLICT,
                           "job %lld is building this model and will not tune it; ask again when it ends",
                           (long long)id);
      }
      store_job_clear(&live);
    } else if (rc == TH_ERR_NOT_FOUND) {
      rc = store__job_insert(st, key, kind, options, priority, max_queued, &id);
      made = rc == TH_OK;
      if (made) rc = store__announce(st, id, STORE_EV_QUEUED, 0, 0, NULL);
    }
    rc = store__tx_end(st, rc);
  }
  pthread_mutex_unlock(&st->mu);
  if (rc == TH_OK) {
    *job_id = id;
    if (created) *created = made;
  }
  return rc;
}

th_status store_job_enqueue(store_t *st, const store_key *key, const char *kind, const char *options,
                            int priority, int64_t *job_id, int *created) {
  return store_job_enqueue_limited(st, key, kind, options, priority, 0, job_id, created);
}

th_status store_job_count_queued(store_t *st, int64_t *n) {
  int64_t counts[5];
  th_status rc = store_job_counts(st, counts);
  if (rc == TH_OK) *n = counts[STORE_JOB_QUEUED];
  return rc;
}

th_status store_job_counts(store_t *st, int64_t counts[5]) {
  int64_t c[5] = {0};
  pthread_mutex_lock(&st->mu);
  db_stmt *s = NULL;
  th_status rc = store__prepare(st, "SELECT state, count(*) FROM jobs GROUP BY state", &s);
  if (rc == TH_OK) {
    int r;
    while ((r = db_step(s)) == DB_ROW)
      c[store_job_state_parse(db_col_text(s, 0))] = db_col_int64(s, 1);
    /* a step that fails part-way must not pass for "no more jobs": /readyz would call a failing store ready */
    if (r != DB_DONE) rc = store__db_fail(st, "count jobs");
  }
  db_finalize(s);
  pthread_mutex_unlock(&st->mu);
  if (rc == TH_OK) memcpy(counts, c, sizeof c);
  return rc;
}

th_status store_job_claim(store_t *st, const char *worker, double lease_s, store_job *out) {
  pthread_mutex_lock(&st->mu);
  th_status rc = TH_OK;
  if (!st->shared) {
    /* SQLite: look before taking the write lock. The scheduler polls every second, and an idle poll that waited
     * for another process's write lock would hold the store's one connection, and every request behind it;
     * a read never waits (WAL). */
    db_stmt *s = NULL;
    rc = store__prepare(st, "SELECT 1 FROM jobs WHERE state = 'queued' LIMIT 1", &s);
    if (rc == TH_OK) {
      int r = db_step(s);
      if (r == DB_DONE) rc = store__fail(st, TH_ERR_NOT_FOUND, "no queued job");
      else if (r != DB_ROW) rc = store__db_fail(st, "look for a queued job");
    }
    db_finalize(s);
  }
  if (rc == TH_OK) rc = store__begin_rows(st);
  store_job j;
  int have = 0;
  if (rc == TH_OK) {
    db_stmt *s = NULL;
    rc = store__prepare(st,
                        "SELECT " STORE__JOB_COLS " FROM jobs WHERE state = 'queued' AND (needs_target = '' OR "
                        "needs_target IN (SELECT target FROM worker_targets WHERE worker = ?1)) "
                        "ORDER BY priority DESC, id LIMIT 1 {skip_locked}",
                        &s);
    if (rc == TH_OK) {
      db_bind_text(s, 1, worker);
      int r = db_step(s);
      if (r == DB_ROW) {
        rc = store__job_row(st, s, &j);
        have = rc == TH_OK;
      } else if (r == DB_DONE) {
        rc = TH_ERR_NOT_FOUND;
      } else {
        rc = store__db_fail(st, "select a job to claim");
      }
    }
    db_finalize(s);
  }
  if (rc == TH_OK) {
    db_stmt *s = NULL;
    rc = store__prepare(st,
                        "UPDATE jobs SET state = 'running', worker = ?1, attempts = attempts + 1, "
                        "started_at = coalesce(started_at, ?2), "
                        "lease_until = CASE WHEN ?3 > 0 THEN {now} + ?3 ELSE NULL END "
                        "WHERE id = ?4 AND state = 'queued' RETURNING attempts, coalesce(lease_until, 0)",
                        &s);
    if (rc == TH_OK) {
      db_bind_text(s, 1, worker);
      db_bind_double(s, 2, th_now_wall());
      db_bind_double(s, 3, lease_s);
      db_bind_int64(s, 4, j.id);
      int r = db_step(s);
      if (r == DB_ROW) {
        j.attempts = db_col_int(s, 0);
        j.lease_until = db_col_double(s, 1);
        rc = store__announce(st, j.id, STORE_EV_CLAIMED, 0, 0, NULL);
      } else {
        rc = r == DB_DONE ? TH_ERR_NOT_FOUND : store__db_fail(st, "claim job");
      }
    }
    db_finalize(s);
  }
  if (rc == TH_ERR_NOT_FOUND) {
    db_rollback(st->db);
    store__fail(st, rc, "no queued job that worker %s may claim", worker ? worker : "?");
  } else {
    rc = store__tx_end(st, rc);
  }
  pthread_mutex_unlock(&st->mu);
  if (rc == TH_OK) {
    j.state = STORE_JOB_RUNNING;
    snprintf(j.worker, sizeof j.worker, "%s", worker ? worker : "");
    if (j.started_at <= 0) j.started_at = th_now_wall();
    *out = j;
  } else if (have) {
    store_job_clear(&j);
  }
  return rc;
}

th_status store__fence(store_t *st, int64_t job_id, int attempt) {
  if (attempt <= 0) return TH_OK;
  db_stmt *s = NULL;
  th_status rc = store__prepare(st, "SELECT attempts, state, coalesce(worker, '') FROM jobs WHERE id = ? {for_share}",
                                &s);
  if (rc == TH_OK) {
    db_bind_int64(s, 1, job_id);
    int r = db_step(s);
    if (r == DB_ROW) {
      int cur = db_col_int(s, 0);
      const char *state = db_col_text(s, 1);
      const char *worker = db_col_text(s, 2);
      if (cur == attempt && state && !strcmp(state, "running")) {
        rc = TH_OK;
      } else if (state && !strcmp(state, "running")) {
        rc = store__fail(st, TH_ERR_CONFLICT, "job %lld: attempt %d is stale; attempt %d holds it (worker %s)",
                         (long long)job_id, attempt, cur, worker ? worker : "?");
      } else if (state && !strcmp(state, "queued")) {
        rc = store__fail(st, TH_ERR_CONFLICT,
                         "job %lld: attempt %d is stale; the job was requeued after attempt %d and waits for "
                         "attempt %d",
                         (long long)job_id, attempt, cur, cur + 1);
      } else {
        rc = store__fail(st, TH_ERR_CONFLICT, "job %lld: attempt %d is stale; the job has %s under attempt %d",
                         (long long)job_id, attempt, state ? state : "ended", cur);
      }
    } else if (r == DB_DONE) {
      rc = store__fail(st, TH_ERR_NOT_FOUND, "no job %lld", (long long)job_id);
    } else {
      rc = store__db_fail(st, "fencing check");
    }
  }
  db_finalize(s);
  return rc;
}

th_status store__fenced_begin(store_t *st, int64_t job_id, int attempt) {
  if (attempt <= 0) return TH_OK;
  th_status rc = store__begin(st);
  if (rc == TH_OK) rc = store__fence(st, job_id, attempt);
  return rc;
}

th_status store__fenced_end(store_t *st, int attempt, th_status rc) {
  return attempt > 0 ? store__tx_end(st, rc) : rc;
}

th_status store_job_fence(store_t *st, int64_t id, int attempt) {
  if (attempt <= 0) return TH_OK;
  pthread_mutex_lock(&st->mu);
  th_status rc = store__begin_rows(st);
  if (rc == TH_OK) rc = store__tx_end(st, store__fence(st, id, attempt));
  pthread_mutex_unlock(&st->mu);
  return rc;
}

th_status store_job_reap(store_t *st, int *requeued) {
  pthread_mutex_lock(&st->mu);
  /* Two single statements, each atomic on its own rows: a heartbeat that extends a lease at the same moment
   * either commits first (and the job stays) or waits and finds the job requeued. */
  th_status rc = store__exec(st,
                             "UPDATE jobs SET state = 'cancelled', error = 'cancelled by request', "
                             "finished_at = {now}, stage = 'done', worker = NULL, lease_until = NULL "
                             "WHERE state = 'running' AND cancel_requested = 1 AND lease_until < {now}");
  int n = 0;
  db_stmt *s = NULL;
  if (rc == TH_OK)
    rc = store__prepare(st,
                        "UPDATE jobs SET state = 'queued', stage = 'requeued: the lease of worker ' || "
                        "coalesce(worker, '?') || ' expired', worker = NULL, lease_until = NULL "
                        "WHERE state = 'running' AND lease_until < {now} RETURNING id",
                        &s);
  int r = DB_DONE;
  /* each requeued job is announced, so that an idle worker claims it at once */
  while (rc == TH_OK && (r = db_step(s)) == DB_ROW) {
    n++;
    rc = store__announce(st, db_col_int64(s, 0), STORE_EV_QUEUED, 0, 0, NULL);
  }
  if (rc == TH_OK && r != DB_DONE) rc = store__db_fail(st, "requeue expired leases");
  db_finalize(s);
  pthread_mutex_unlock(&st->mu);
  if (rc == TH_OK && requeued) *requeued = n;
  return rc;
}

th_status store_job_handoff(store_t *st, int64_t id, int attempt, const char *target, const char *progress) {
  if (!target || !*target) return store__fail(st, TH_ERR_INVALID, "a handoff names the target a worker needs");
  pthread_mutex_lock(&st->mu);
  th_status rc = store__begin(st);
  if (rc == TH_OK) rc = store__fence(st, id, attempt);
  if (rc == TH_OK) {
    db_stmt *s = NULL;
    rc = store__prepare(st,
                        "UPDATE jobs SET state = 'queued', worker = NULL, lease_until = NULL, needs_target = ?, "
                        "stage = 'waiting_for_target', progress = coalesce(?, progress) "
                        "WHERE id = ? AND state = 'running'",
                        &s);
    if (rc == TH_OK) {
      db_bind_text(s, 1, target);
      db_bind_text(s, 2, progress);
      db_bind_int64(s, 3, id);
      if (db_step(s) != DB_DONE)
        rc = store__db_fail(st, "hand off job");
      else if (db_changes(st->db) == 0)
        rc = store__fail(st, TH_ERR_CONFLICT, "job %lld is not running", (long long)id);
      else
        rc = store__announce(st, id, STORE_EV_QUEUED, 0, 0, NULL);
    }
    db_finalize(s);
  }
  rc = store__tx_end(st, rc);
  pthread_mutex_unlock(&st->mu);
  return rc;
}

th_status store_job_get(store_t *st, int64_t id, store_job *out) {
  pthread_mutex_lock(&st->mu);
  th_status rc = store__job_select(st, "id = ?1", id, NULL, out);
  pthread_mutex_unlock(&st->mu);
  return rc;
}

th_status store_job_latest(store_t *st, const store_key *key, store_job *out) {
  pthread_mutex_lock(&st->mu);
  th_status rc = store__job_select(st, STORE__KEY_WHERE " ORDER BY id DESC LIMIT 1", 0, key, out);
  pthread_mutex_unlock(&st->mu);
  return rc;
}

th_status store_job_requeue(store_t *st, int64_t id, const char *worker) {
  pthread_mutex_lock(&st->mu);
  db_stmt *s = NULL;
  th_status rc =
      store__prepare(st,
                     "UPDATE jobs SET state = 'queued', stage = 'requeued', worker = NULL, lease_until = NULL "
                     "WHERE id = ? AND state = 'running' AND worker = ?",
                     &s);
  if (rc == TH_OK) {
    db_bind_int64(s, 1, id);
    db_bind_text(s, 2, worker);
    if (db_step(s) != DB_DONE)
      rc = store__db_fail(st, "requeue job");
    else if (db_changes(st->db) == 0)
      rc = store__fail(st, TH_ERR_CONFLICT, "job %lld is not running under %s", (long long)id,
                       worker);
    else
      rc = store__announce(st, id, STORE_EV_QUEUED, 0, 0, NULL);
  }
  db_finalize(s);
  pthread_mutex_unlock(&st->mu);
  return rc;
}

th_status store_job_progress(store_t *st, int64_t id, int attempt, const char *stage, const char *progress) {
  pthread_mutex_lock(&st->mu);
  th_status rc = store__fenced_begin(st, id, attempt);
  db_stmt *s = NULL;
  if (rc == TH_OK)
    rc = store__prepare(st,
                        "UPDATE jobs SET stage = coalesce(?, stage), progress = coalesce(?, "
                        "progress) WHERE id = ? AND state = 'running'",
                        &s);
  if (rc == TH_OK) {
    db_bind_text(s, 1, stage);
    db_bind_text(s, 2, progress);
    db_bind_int64(s, 3, id);
    if (db_step(s) != DB_DONE)
      rc = store__db_fail(st, "job progress");
    else if (db_changes(st->db) > 0)
      rc = store__announce(st, id, STORE_EV_PROGRESS, 0, 0, NULL);
  }
  db_finalize(s);
  rc = store__fenced_end(st, attempt, rc);
  pthread_mutex_unlock(&st->mu);
  return rc;
}

th_status store_job_finish(store_t *st, int64_t id, int attempt, store_job_state state, const char *error) {
  if (state != STORE_JOB_SUCCEEDED && state != STORE_JOB_FAILED && state != STORE_JOB_CANCELLED)
    return store__fail(st, TH_ERR_INVALID, "a job ends as succeeded, failed or cancelled");
  pthread_mutex_lock(&st->mu);
  th_status rc = store__fenced_begin(st, id, attempt);
  db_stmt *s = NULL;
  if (rc == TH_OK)
    rc = store__prepare(st,
                        "UPDATE jobs SET state = ?, error = ?, finished_at = ?, stage = ?, lease_until = NULL "
                        "WHERE id = ? AND state IN ('queued', 'running')",
                        &s);
  if (rc == TH_OK) {
    db_bind_text(s, 1, store_job_state_str(state));
    db_bind_text(s, 2, error);
    db_bind_double(s, 3, th_now_wall());
    db_bind_text(s, 4, "done");
    db_bind_int64(s, 5, id);
    if (db_step(s) != DB_DONE)
      rc = store__db_fail(st, "finish job");
    else if (db_changes(st->db) == 0)
      rc = store__fail(st, TH_ERR_CONFLICT, "job %lld has already ended", (long long)id);
    else
      rc = store__announce(st, id, STORE_EV_DONE, 0, 0, NULL);
  }
  db_finalize(s);
  rc = store__fenced_end(st, attempt, rc);
  pthread_mutex_unlock(&st->mu);
  return rc;
}

th_status store_job_cancel(store_t *st, int64_t id) {
  pthread_mutex_lock(&st->mu);
  store_job j;
  th_status rc = store__job_select(st, "id = ?1", id, NULL, &j);
  if (rc == TH_OK) {
    db_stmt *s = NULL;
    if (j.state == STORE_JOB_QUEUED) {
      rc = store__prepare(st,
                          "UPDATE jobs SET state = 'cancelled', cancel_requested = 1, error = "
                          "'cancelled by request', finished_at = ?, stage = 'done' WHERE id = ?",
                          &s);
    } else if (j.state == STORE_JOB_RUNNING) {
      rc = store__prepare(st, "UPDATE jobs SET cancel_requested = 1 WHERE ?1 = ?1 AND id = ?2", &s);
    } else {
      rc = store__fail(st, TH_ERR_CONFLICT, "job %lld has already %s", (long long)id,
                       store_job_state_str(j.state));
    }
    if (rc == TH_OK) {
      db_bind_double(s, 1, th_now_wall());
      db_bind_int64(s, 2, id);
      if (db_step(s) != DB_DONE)
        rc = store__db_fail(st, "cancel job");
      else
        rc = store__announce(st, id, j.state == STORE_JOB_QUEUED ? STORE_EV_DONE : STORE_EV_PROGRESS, 0, 0, NULL);
    }
    db_finalize(s);
    store_job_clear(&j);
  }
  pthread_mutex_unlock(&st->mu);
  return rc;
}

int store_job_cancel_requested(store_t *st, int64_t id) {
  store_job j;
  if (store_job_get(st, id, &j) != TH_OK) return 0;
  int c = j.cancel_requested;
  store_job_clear(&j);
  return c;
}

void store_job_list_free(store_job *jobs, size_t n) {
  if (!jobs) return;
  for (size_t i = 0; i < n; i++) store_job_clear(&jobs[i]);
  free(jobs);
}

th_status store_job_list(store_t *st, const char *state, int limit, store_job **out, size_t *count) {
  store_job *jobs = NULL;
  size_t n = 0, cap = 0;
  pthread_mutex_lock(&st->mu);
  db_stmt *s = NULL;
  th_status rc = store__prepare(st,
                                "SELECT " STORE__JOB_COLS " FROM jobs WHERE (?1 IS NULL OR state = ?1) "
                                "ORDER BY CASE state WHEN 'running' THEN 0 WHEN 'queued' THEN 1 ELSE 2 "
                                "END, id DESC LIMIT ?2",
                                &s);
  if (rc == TH_OK) {
    if (state) db_bind_text(s, 1, state);
    db_bind_int(s, 2, limit > 0 ? limit : 100);
    int r;
    while ((r = db_step(s)) == DB_ROW) {
      void *grown = store__grow(st, jobs, &cap, n, sizeof *jobs);
      if (!grown) {
        rc = TH_ERR_NOMEM;
        break;
      }
      jobs = grown;
      rc = store__job_row(st, s, &jobs[n]);
      if (rc != TH_OK) break;
      n++;
    }
    if (rc == TH_OK && r != DB_DONE) rc = store__db_fail(st, "list jobs");
  }
  db_finalize(s);
  pthread_mutex_unlock(&st->mu);
  if (rc != TH_OK) {
    store_job_list_free(jobs, n);
    return rc;
  }
  *out = jobs;
  *count = n;
  return TH_OK;
}
