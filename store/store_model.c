/* Published models and the catalog. A key (framework, network, batch, target, compiler version, precision) has
 * versions
 * 1, 2, ...; each version points at two immutable artifacts (the .tar bundle and the .so alone). Versions are
 * never rewritten: a delete marks rows deleted and the bytes stay addressable by digest until the garbage
 * collector (store_gc.c) sweeps them, with the deleted rows that name them; numbers are never reused. */
#include <stdlib.h>
#include <string.h>

#include "store_int.h"
#include "th_util.h"

void store_model_clear(store_model *m) {
  if (!m) return;
  free(m->manifest);
  m->manifest = NULL;
}

th_status store_model_publish(store_t *st, const store_key *key, int tuned, const char *tar_digest,
                              const char *so_digest, const char *manifest, double latency_ms,
                              int64_t job_id, int attempt, int *version) {
  return store_model_publish_signed(st, key, tuned, tar_digest, so_digest, NULL, manifest,
                                    latency_ms, job_id, attempt, version);
}

th_status store_model_publish_signed(store_t *st, const store_key *key, int tuned,
                                     const char *tar_digest, const char *so_digest,
                                     const char *prov_digest, const char *manifest,
                                     double latency_ms, int64_t job_id, int attempt, int *version) {
  pthread_mutex_lock(&st->mu);
  /* A publish is the one write a client is told is done (the version is served from then on), so its commit
   * is made durable: synchronous FULL syncs the WAL at COMMIT, and with it every earlier frame, the rows of
   * its artifacts included. The connection goes back to NORMAL for the frequent writes (progress, records).
   * PostgreSQL's commits are durable as they are. */
  th_status rc = db_durable(st->db, 1);
  if (rc == TH_OK) rc = store__begin(st);
  /* fenced: a worker that lost its claim publishes nothing (the check holds the job row until COMMIT).
   * The artifacts' rows were put (or touched) before this transaction, by store_artifact_put: a garbage
   * collector, which sweeps only rows untouched for its grace period, cannot take them in between, and its
   * sweep of a row re-checks the references in a write transaction that this one excludes. The next number
   * counts the versions the collector removed (model_version_floor), so that none is ever reused. */
  if (rc == TH_OK) rc = store__fence(st, job_id, attempt);
  db_stmt *s = NULL;
  int next = 1;
  if (rc == TH_OK)
    rc = store__prepare(st,
                        "SELECT coalesce(max(v), 0) + 1 FROM (SELECT version AS v FROM models WHERE "
                        "framework = ?1 AND network = ?2 AND batch = ?3 AND target = ?4 AND compiler_version = ?5 "
                        "AND precision = ?6 UNION ALL SELECT version FROM model_version_floor WHERE framework = ?1 "
                        "AND network = ?2 AND batch = ?3 AND target = ?4 AND compiler_version = ?5 "
                        "AND precision = ?6) AS numbered",
                        &s);
  if (rc == TH_OK) {
    store__bind_key(s, 1, key, 0);
    if (db_step(s) == DB_ROW)
      next = db_col_int(s, 0);
    else
      rc = store__db_fail(st, "select version");
  }
  db_finalize(s);
  s = NULL;
  if (rc == TH_OK)
    rc = store__prepare(
        st,
        "INSERT INTO models (framework, network, batch, target, compiler_version, precision, "
        "net_digest, version, state, tuned, tar_digest, so_digest, manifest, latency_ms, "
        "job_id, created_at, provenance_digest) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'ready', ?, ?, ?, "
        "?, ?, ?, ?, ?)",
        &s);
  if (rc == TH_OK) {
    store__bind_key(s, 1, key, 1);
    db_bind_int(s, 8, next);
    db_bind_int(s, 9, tuned ? 1 : 0);
    db_bind_text(s, 10, tar_digest);
    db_bind_text(s, 11, so_digest);
    db_bind_text(s, 12, manifest);
    if (latency_ms >= 0)
      db_bind_double(s, 13, latency_ms);
    else
      db_bind_null(s, 13);
    if (job_id > 0)
      db_bind_int64(s, 14, job_id);
    else
      db_bind_null(s, 14);
    db_bind_double(s, 15, th_now_wall());
    if (prov_digest && prov_digest[0])
      db_bind_text(s, 16, prov_digest);
    else
      db_bind_null(s, 16);
    if (db_step(s) != DB_DONE)
      rc = store__db_fail(st, "insert model");
    else
      rc = store__announce(st, job_id, STORE_EV_PUBLISHED, next, tuned, tar_digest);
  }
  db_finalize(s);
  if (rc == TH_OK)
    rc = store__exec(st, "COMMIT");
  if (rc != TH_OK) db_rollback(st->db);
  /* a failure here leaves the connection at FULL: slower, never less safe */
  db_durable(st->db, 0);
  pthread_mutex_unlock(&st->mu);
  if (rc == TH_OK && version) *version = next;
  return rc;
}

th_status store_model_get(store_t *st, const store_key *key, int tuned_only, store_model *out) {
  pthread_mutex_lock(&st->mu);
  db_stmt *s = NULL;
  th_status rc = store__prepare(
      st,
      "SELECT m.id, m.version, m.tuned, m.tar_digest, m.so_digest, m.manifest, m.latency_ms, m.job_id, "
      "m.created_at, a.size, b.size FROM models m JOIN artifacts a ON a.digest = m.tar_digest "
      "JOIN artifacts b ON b.digest = m.so_digest WHERE m.framework = ? AND m.network = ? AND "
      "m.batch = ? AND m.target = ? AND m.compiler_version = ? AND m.precision = ? AND m.net_digest = ? AND "
      "m.state = 'ready' AND (? = 0 OR m.tuned = 1) ORDER BY m.version DESC LIMIT 1",
      &s);
  if (rc == TH_OK) {
    store__bind_key(s, 1, key, 1);
    db_bind_int(s, 8, tuned_only);
    int r = db_step(s);
    if (r == DB_ROW) {
      store_model m;
      memset(&m, 0, sizeof m);
      m.id = db_col_int64(s, 0);
      m.key = *key;
      m.version = db_col_int(s, 1);
      m.tuned = db_col_int(s, 2);
      store__col_copy(s, 3, m.tar_digest, sizeof m.tar_digest);
      store__col_copy(s, 4, m.so_digest, sizeof m.so_digest);
      m.manifest = store__col_dup(s, 5);
      m.latency_ms = db_col_is_null(s, 6) ? -1 : db_col_double(s, 6);
      m.job_id = db_col_int64(s, 7);
      m.created_at = db_col_double(s, 8);
      m.tar_size = db_col_int64(s, 9);
      m.so_size = db_col_int64(s, 10);
      if (!m.manifest) {
        rc = store__fail(st, TH_ERR_NOMEM, "out of memory");
      } else {
        *out = m;
      }
    } else if (r == DB_DONE) {
      rc = store__fail(st, TH_ERR_NOT_FOUND, "no published model for %s/%s/%d", key->framework,
                       key->network, key->batch);
    } else {
      rc = store__db_fail(st, "select model");
    }
  }
  db_finalize(s);
  pthread_mutex_unlock(&st->mu);
  return rc;
}

th_status store_model_provenance(store_t *st, const store_key *key, int version,
                                 char digest[TH_HEX_MAX]) {
  pthread_mutex_lock(&st->mu);
  db_stmt *s = NULL;
  th_status rc =
      store__prepare(st,
                     "SELECT provenance_digest FROM models WHERE framework = ? AND network = ? AND "
                     "batch = ? AND target = ? AND compiler_version = ? AND precision = ? AND "
                     "net_digest = ? AND version = ? AND state = 'ready'",
                     &s);
  char d[TH_HEX_MAX] = "";
  if (rc == TH_OK) {
    store__bind_key(s, 1, key, 1);
    db_bind_int(s, 8, version);
    int r = db_step(s);
    if (r == DB_ROW && !db_col_is_null(s, 0))
      store__col_copy(s, 0, d, sizeof d);
    else if (r == DB_ROW || r == DB_DONE)
      rc = store__fail(st, TH_ERR_NOT_FOUND, "version %d of %s/%s/%d %s", version, key->framework,
                       key->network, key->batch,
                       r == DB_ROW ? "was published unsigned" : "is not published");
    else
      rc = store__db_fail(st, "select provenance");
  }
  db_finalize(s);
  pthread_mutex_unlock(&st->mu);
  if (rc == TH_OK) memcpy(digest, d, sizeof d);
  return rc;
}

th_status store_model_delete(store_t *st, const store_key *key, int *deleted) {
  pthread_mutex_lock(&st->mu);
  db_stmt *s = NULL;
  th_status rc = store__prepare(st,
                                "UPDATE models SET state = 'deleted' WHERE framework = ? AND "
                                "network = ? AND batch = ? AND target = ? AND compiler_version = ? "
                                "AND precision = ? AND net_digest = ? AND state = 'ready'",
                                &s);
  int n = 0;
  if (rc == TH_OK) {
    store__bind_key(s, 1, key, 1);
    if (db_step(s) != DB_DONE)
      rc = store__db_fail(st, "delete model");
    else
      n = db_changes(st->db);
  }
  db_finalize(s);
  if (rc == TH_OK && n > 0) rc = store__announce(st, 0, STORE_EV_CATALOG, 0, 0, NULL);
  pthread_mutex_unlock(&st->mu);
  if (rc == TH_OK && n == 0)
    rc = store__fail(st, TH_ERR_NOT_FOUND, "no published model for %s/%s/%d", key->framework,
                     key->network, key->batch);
  if (rc == TH_OK && deleted) *deleted = n;
  return rc;
}

const char *store_catalog_state_str(store_catalog_state s) {
  static const char *const names[] = {"ready", "building", "failed"};
  return (unsigned)s < 3 ? names[s] : "unknown";
}

void store_catalog_free(store_catalog_row *rows, size_t n) {
  if (!rows) return;
  for (size_t i = 0; i < n; i++) free(rows[i].job_error);
  free(rows);
}

void store_model_list_free(store_model *models, size_t n) {
  if (!models) return;
  for (size_t i = 0; i < n; i++) store_model_clear(&models[i]);
  free(models);
}

/* The columns store__model_row reads, in order (m: models, a/b: the tar's and the .so's artifacts). */
#define STORE__MODEL_COLS \
  "m.id, m.version, m.tuned, m.tar_digest, m.so_digest, m.latency_ms, m.job_id, m.created_at, a.size, b.size"

/* A model row from STORE__MODEL_COLS at column c (manifest left NULL). */
static void store__model_row(db_stmt *s, int c, const store_key *key, store_model *m) {
  memset(m, 0, sizeof *m);
  m->id = db_col_int64(s, c);
  m->key = *key;
  m->version = db_col_int(s, c + 1);
  m->tuned = db_col_int(s, c + 2);
  store__col_copy(s, c + 3, m->tar_digest, sizeof m->tar_digest);
  store__col_copy(s, c + 4, m->so_digest, sizeof m->so_digest);
  m->latency_ms = db_col_is_null(s, c + 5) ? -1 : db_col_double(s, c + 5);
  m->job_id = db_col_int64(s, c + 6);
  m->created_at = db_col_double(s, c + 7);
  m->tar_size = db_col_int64(s, c + 8);
  m->so_size = db_col_int64(s, c + 9);
}

th_status store_catalog(store_t *st, const char *framework, const char *network, const char *state,
                        store_catalog_row **out, size_t *count) {
  /* One row per key: the newest ready model, else the newest job. A key whose network revision is not the
   * network's current one (an uploaded network replaced or deleted since) is left out. */
  static const char *const sql =
      "WITH keys AS ("
      "  SELECT framework, network, batch, target, compiler_version, precision, net_digest FROM models "
      "    WHERE state = 'ready' "
      "  UNION SELECT framework, network, batch, target, compiler_version, precision, net_digest FROM jobs "
      "    WHERE kind IN ('build', 'tune')), "
      "current AS ("
      "  SELECT k.* FROM keys k WHERE k.net_digest = coalesce((SELECT n.digest FROM networks n "
      "    WHERE n.name = k.network AND n.source = 'onnx'), '')), "
      "latest AS ("
      "  SELECT k.*, (SELECT id FROM models m WHERE m.framework = k.framework AND m.network = k.network "
      "     AND m.batch = k.batch AND m.target = k.target AND m.compiler_version = k.compiler_version "
      "     AND m.precision = k.precision AND m.net_digest = k.net_digest AND m.state = 'ready' "
      "     ORDER BY version DESC LIMIT 1) AS model_id, "
      "   (SELECT id FROM jobs j WHERE j.framework = k.framework AND j.network = k.network "
      "     AND j.batch = k.batch AND j.target = k.target AND j.compiler_version = k.compiler_version "
      "     AND j.precision = k.precision AND j.net_digest = k.net_digest ORDER BY id DESC LIMIT 1) AS job_id "
      "  FROM current k) "
      "SELECT l.framework, l.network, l.batch, l.target, l.compiler_version, l.precision, " STORE__MODEL_COLS ", "
      " j.id, j.state, j.stage, j.error, (SELECT count(*) FROM models v WHERE v.framework = l.framework "
      "   AND v.network = l.network AND v.batch = l.batch AND v.target = l.target "
      "   AND v.compiler_version = l.compiler_version AND v.precision = l.precision "
      "   AND v.net_digest = l.net_digest AND v.state = 'ready'), l.net_digest "
      "FROM latest l LEFT JOIN models m ON m.id = l.model_id "
      "LEFT JOIN artifacts a ON a.digest = m.tar_digest LEFT JOIN artifacts b ON b.digest = m.so_digest "
      "LEFT JOIN jobs j ON j.id = l.job_id "
      "WHERE (?1 IS NULL OR l.framework = ?1) AND (?2 IS NULL OR l.network = ?2) "
      "ORDER BY l.network {binary}, l.framework {binary}, l.batch, l.target {binary}, l.precision {binary}";
  store_catalog_row *rows = NULL;
  size_t n = 0, cap = 0;
  pthread_mutex_lock(&st->mu);
  db_stmt *s = NULL;
  th_status rc = store__prepare(st, sql, &s);
  if (rc == TH_OK) {
    if (framework) db_bind_text(s, 1, framework);
    if (network) db_bind_text(s, 2, network);
    int r;
    while (rc == TH_OK && (r = db_step(s)) == DB_ROW) {
      int has_model = !db_col_is_null(s, 6);
      const char *jstate = db_col_text(s, 17);
      store_catalog_state row_state;
      if (has_model)
        row_state = STORE_CATALOG_READY;
      else if (jstate && (!strcmp(jstate, "queued") || !strcmp(jstate, "running")))
        row_state = STORE_CATALOG_BUILDING;
      else if (jstate && !strcmp(jstate, "failed"))
        row_state = STORE_CATALOG_FAILED;
      else
        continue; /* cancelled before anything was published, or deleted */
      if (state && strcmp(state, store_catalog_state_str(row_state)) != 0) continue;
      void *grown = store__grow(st, rows, &cap, n, sizeof *rows);
      if (!grown) {
        rc = TH_ERR_NOMEM;
        break;
      }
      rows = grown;
      store_catalog_row *o = &rows[n++];
      memset(o, 0, sizeof *o);
      store__col_key(s, 0, &o->key);
      store__col_copy(s, 21, o->key.net_digest, sizeof o->key.net_digest);
      o->state = row_state;
      o->has_model = has_model;
      if (has_model) {
        store__model_row(s, 6, &o->key, &o->model);
        o->versions = db_col_int(s, 20);
      }
      if (!db_col_is_null(s, 16)) {
        o->has_job = 1;
        o->job_id = db_col_int64(s, 16);
        o->job_state = store_job_state_parse(jstate);
        store__col_copy(s, 18, o->job_stage, sizeof o->job_stage);
        if (!db_col_is_null(s, 19) && !(o->job_error = store__col_dup(s, 19)))
          rc = store__fail(st, TH_ERR_NOMEM, "out of memory");
      }
    }
    if (rc == TH_OK && r != DB_DONE) rc = store__db_fail(st, "catalog");
  }
  db_finalize(s);
  pthread_mutex_unlock(&st->mu);
  if (rc != TH_OK) {
    store_catalog_free(rows, n);
    return rc;
  }
  *out = rows;
  *count = n;
  return TH_OK;
}

th_status store_model_versions(store_t *st, const store_key *key, store_model **out, size_t *count) {
  store_model *vs = NULL;
  size_t n = 0, cap = 0;
  pthread_mutex_lock(&st->mu);
  db_stmt *s = NULL;
  th_status rc = store__prepare(
      st,
      "SELECT " STORE__MODEL_COLS " FROM models m JOIN artifacts a ON a.digest = m.tar_digest "
      "JOIN artifacts b ON b.digest = m.so_digest WHERE m.framework = ? AND m.network = ? AND "
      "m.batch = ? AND m.target = ? AND m.compiler_version = ? AND m.precision = ? AND m.net_digest = ? AND "
      "m.state = 'ready' ORDER BY m.version",
      &s);
  if (rc == TH_OK) {
    store__bind_key(s, 1, key, 1);
    int r;
    while ((r = db_step(s)) == DB_ROW) {
      void *grown = store__grow(st, vs, &cap, n, sizeof *vs);
      if (!grown) {
        rc = TH_ERR_NOMEM;
        break;
      }
      vs = grown;
      store__model_row(s, 0, key, &vs[n++]);
    }
    if (rc == TH_OK && r != DB_DONE) rc = store__db_fail(st, "versions");
  }
  db_finalize(s);
  pthread_mutex_unlock(&st->mu);
  if (rc == TH_OK && n == 0)
    rc = store__fail(st, TH_ERR_NOT_FOUND, "no published model for %s/%s/%d", key->framework,
                     key->network, key->batch);
  if (rc != TH_OK) {
    store_model_list_free(vs, n);
    return rc;
  }
  *out = vs;
  *count = n;
  return TH_OK;
}

th_status store_model_version(store_t *st, const store_key *key, int version, store_model *out) {
  pthread_mutex_lock(&st->mu);
  db_stmt *s = NULL;
  th_status rc = store__prepare(
      st,
      "SELECT " STORE__MODEL_COLS ", m.manifest FROM models m JOIN artifacts a ON a.digest = m.tar_digest "
      "JOIN artifacts b ON b.digest = m.so_digest WHERE m.framework = ? AND m.network = ? AND m.batch = ? AND "
      "m.target = ? AND m.compiler_version = ? AND m.precision = ? AND m.net_digest = ? AND m.state = 'ready' AND "
      "m.version = ?",
      &s);
  if (rc == TH_OK) {
    store__bind_key(s, 1, key, 1);
    db_bind_int(s, 8, version);
    int r = db_step(s);
    if (r == DB_ROW) {
      store_model m;
      store__model_row(s, 0, key, &m);
      m.manifest = store__col_dup(s, 10);
      if (!m.manifest)
        rc = store__fail(st, TH_ERR_NOMEM, "out of memory");
      else
        *out = m;
    } else if (r == DB_DONE) {
      rc = store__fail(st, TH_ERR_NOT_FOUND, "%s/%s/%d has no published version %d", key->framework, key->network,
                       key->batch, version);
    } else {
      rc = store__db_fail(st, "select model version");
    }
  }
  db_finalize(s);
  pthread_mutex_unlock(&st->mu);
  return rc;
}

th_status store_model_retain(store_t *st, const store_key *key, int keep, int *retired) {
  if (keep < 1) {
    if (retired) *retired = 0;
    return TH_OK;
  }
  /* one statement: the newest keep ready versions and every aliased one stay, whatever races with it */
  static const char *const sql =
      "UPDATE models SET state = 'deleted' WHERE framework = ?1 AND network = ?2 AND batch = ?3 AND target = ?4 "
      "AND compiler_version = ?5 AND precision = ?6 AND net_digest = ?7 AND state = 'ready' "
      "AND version NOT IN (SELECT version FROM models WHERE framework = ?1 AND network = ?2 AND batch = ?3 "
      "  AND target = ?4 AND compiler_version = ?5 AND precision = ?6 AND net_digest = ?7 AND state = 'ready' "
      "  ORDER BY version DESC LIMIT ?8) "
      "AND version NOT IN (SELECT version FROM aliases WHERE framework = ?1 AND network = ?2 AND batch = ?3 "
      "  AND target = ?4 AND compiler_version = ?5 AND precision = ?6)";
  pthread_mutex_lock(&st->mu);
  db_stmt *s = NULL;
  int n = 0;
  th_status rc = store__prepare(st, sql, &s);
  if (rc == TH_OK) {
    store__bind_key(s, 1, key, 1);
    db_bind_int(s, 8, keep);
    if (db_step(s) != DB_DONE)
      rc = store__db_fail(st, "retention");
    else
      n = db_changes(st->db);
  }
  db_finalize(s);
  if (rc == TH_OK && n > 0) rc = store__announce(st, 0, STORE_EV_CATALOG, 0, 0, NULL);
  pthread_mutex_unlock(&st->mu);
  if (rc == TH_OK && retired) *retired = n;
  return rc;
}
