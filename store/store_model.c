/* Published models and the catalog. A key (framework, network, batch, target, compiler version) has versions
 * 1, 2, ...; each version points at two immutable artifacts (the .tar bundle and the .so alone). Versions are
 * never rewritten: a delete marks rows deleted and the bytes stay addressable by digest. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"
#include "th_util.h"

void store_model_clear(store_model *m) {
  if (!m) return;
  free(m->manifest);
  m->manifest = NULL;
}

static void store__bind_key(sqlite3_stmt *s, int first, const store_key *k) {
  sqlite3_bind_text(s, first, k->framework, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(s, first + 1, k->network, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int(s, first + 2, k->batch);
  sqlite3_bind_text(s, first + 3, k->target, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(s, first + 4, k->compiler_version, -1, SQLITE_TRANSIENT);
}

th_status store_model_publish(store_t *st, const store_key *key, int tuned, const char *tar_digest,
                              const char *so_digest, const char *manifest, double latency_ms,
                              int64_t job_id, int *version) {
  pthread_mutex_lock(&st->mu);
  th_status rc = store__exec(st, "BEGIN IMMEDIATE");
  sqlite3_stmt *s = NULL;
  int next = 1;
  if (rc == TH_OK)
    rc = store__prepare(st,
                        "SELECT coalesce(max(version), 0) + 1 FROM models WHERE framework = ? AND "
                        "network = ? AND batch = ? AND target = ? AND compiler_version = ?",
                        &s);
  if (rc == TH_OK) {
    store__bind_key(s, 1, key);
    if (sqlite3_step(s) == SQLITE_ROW)
      next = sqlite3_column_int(s, 0);
    else
      rc = store__db_fail(st, "select version");
  }
  sqlite3_finalize(s);
  s = NULL;
  if (rc == TH_OK)
    rc = store__prepare(st,
                        "INSERT INTO models (framework, network, batch, target, compiler_version, "
                        "version, state, tuned, tar_digest, so_digest, manifest, latency_ms, job_id, "
                        "created_at) VALUES (?, ?, ?, ?, ?, ?, 'ready', ?, ?, ?, ?, ?, ?, ?)",
                        &s);
  if (rc == TH_OK) {
    store__bind_key(s, 1, key);
    sqlite3_bind_int(s, 6, next);
    sqlite3_bind_int(s, 7, tuned ? 1 : 0);
    sqlite3_bind_text(s, 8, tar_digest, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 9, so_digest, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 10, manifest, -1, SQLITE_TRANSIENT);
    if (latency_ms >= 0)
      sqlite3_bind_double(s, 11, latency_ms);
    else
      sqlite3_bind_null(s, 11);
    if (job_id > 0)
      sqlite3_bind_int64(s, 12, job_id);
    else
      sqlite3_bind_null(s, 12);
    sqlite3_bind_double(s, 13, th_now_wall());
    if (sqlite3_step(s) != SQLITE_DONE) rc = store__db_fail(st, "insert model");
  }
  sqlite3_finalize(s);
  if (rc == TH_OK)
    rc = store__exec(st, "COMMIT");
  else
    sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
  pthread_mutex_unlock(&st->mu);
  if (rc == TH_OK && version) *version = next;
  return rc;
}

th_status store_model_get(store_t *st, const store_key *key, int tuned_only, store_model *out) {
  pthread_mutex_lock(&st->mu);
  sqlite3_stmt *s = NULL;
  th_status rc = store__prepare(
      st,
      "SELECT m.id, m.version, m.tuned, m.tar_digest, m.so_digest, m.manifest, m.latency_ms, m.job_id, "
      "m.created_at, a.size, b.size FROM models m JOIN artifacts a ON a.digest = m.tar_digest "
      "JOIN artifacts b ON b.digest = m.so_digest WHERE m.framework = ? AND m.network = ? AND "
      "m.batch = ? AND m.target = ? AND m.compiler_version = ? AND m.state = 'ready' AND "
      "(? = 0 OR m.tuned = 1) ORDER BY m.version DESC LIMIT 1",
      &s);
  if (rc == TH_OK) {
    store__bind_key(s, 1, key);
    sqlite3_bind_int(s, 6, tuned_only);
    int r = sqlite3_step(s);
    if (r == SQLITE_ROW) {
      store_model m;
      memset(&m, 0, sizeof m);
      m.id = sqlite3_column_int64(s, 0);
      m.key = *key;
      m.version = sqlite3_column_int(s, 1);
      m.tuned = sqlite3_column_int(s, 2);
      store__col_copy(s, 3, m.tar_digest, sizeof m.tar_digest);
      store__col_copy(s, 4, m.so_digest, sizeof m.so_digest);
      m.manifest = store__col_dup(s, 5);
      m.latency_ms = sqlite3_column_type(s, 6) == SQLITE_NULL ? -1 : sqlite3_column_double(s, 6);
      m.job_id = sqlite3_column_int64(s, 7);
      m.created_at = sqlite3_column_double(s, 8);
      m.tar_size = sqlite3_column_int64(s, 9);
      m.so_size = sqlite3_column_int64(s, 10);
      if (!m.manifest) {
        rc = store__fail(st, TH_ERR_NOMEM, "out of memory");
      } else {
        *out = m;
      }
    } else if (r == SQLITE_DONE) {
      rc = store__fail(st, TH_ERR_NOT_FOUND, "no published model for %s/%s/%d", key->framework,
                       key->network, key->batch);
    } else {
      rc = store__db_fail(st, "select model");
    }
  }
  sqlite3_finalize(s);
  pthread_mutex_unlock(&st->mu);
  return rc;
}

th_status store_model_delete(store_t *st, const store_key *key, int *deleted) {
  pthread_mutex_lock(&st->mu);
  sqlite3_stmt *s = NULL;
  th_status rc = store__prepare(st,
                                "UPDATE models SET state = 'deleted' WHERE framework = ? AND "
                                "network = ? AND batch = ? AND target = ? AND compiler_version = ? "
                                "AND state = 'ready'",
                                &s);
  int n = 0;
  if (rc == TH_OK) {
    store__bind_key(s, 1, key);
    if (sqlite3_step(s) != SQLITE_DONE)
      rc = store__db_fail(st, "delete model");
    else
      n = sqlite3_changes(st->db);
  }
  sqlite3_finalize(s);
  pthread_mutex_unlock(&st->mu);
  if (rc == TH_OK && n == 0)
    rc = store__fail(st, TH_ERR_NOT_FOUND, "no published model for %s/%s/%d", key->framework,
                     key->network, key->batch);
  if (rc == TH_OK && deleted) *deleted = n;
  return rc;
}

static json_t *store__json_time(double t) {
  if (t <= 0) return json_null();
  char iso[32];
  th_time_iso(t, iso, sizeof iso);
  return json_string(iso);
}

th_status store_catalog_json(store_t *st, const char *framework, const char *network, const char *state,
                             char **json) {
  /* One row per key: the newest ready model, else the newest job. */
  static const char *const sql =
      "WITH keys AS ("
      "  SELECT framework, network, batch, target, compiler_version FROM models WHERE state = 'ready' "
      "  UNION SELECT framework, network, batch, target, compiler_version FROM jobs "
      "    WHERE kind IN ('build', 'tune')), "
      "latest AS ("
      "  SELECT k.*, (SELECT id FROM models m WHERE m.framework = k.framework AND m.network = k.network "
      "     AND m.batch = k.batch AND m.target = k.target AND m.compiler_version = k.compiler_version "
      "     AND m.state = 'ready' ORDER BY version DESC LIMIT 1) AS model_id, "
      "   (SELECT id FROM jobs j WHERE j.framework = k.framework AND j.network = k.network "
      "     AND j.batch = k.batch AND j.target = k.target AND j.compiler_version = k.compiler_version "
      "     ORDER BY id DESC LIMIT 1) AS job_id FROM keys k) "
      "SELECT l.framework, l.network, l.batch, l.target, l.compiler_version, m.version, m.tuned, "
      " m.tar_digest, m.so_digest, m.latency_ms, m.created_at, a.size, b.size, j.id, j.state, j.stage, "
      " j.error, (SELECT count(*) FROM models v WHERE v.framework = l.framework AND v.network = "
      "   l.network AND v.batch = l.batch AND v.target = l.target AND v.compiler_version = "
      "   l.compiler_version AND v.state = 'ready') "
      "FROM latest l LEFT JOIN models m ON m.id = l.model_id "
      "LEFT JOIN artifacts a ON a.digest = m.tar_digest LEFT JOIN artifacts b ON b.digest = m.so_digest "
      "LEFT JOIN jobs j ON j.id = l.job_id "
      "WHERE (?1 IS NULL OR l.framework = ?1) AND (?2 IS NULL OR l.network = ?2) "
      "ORDER BY l.network, l.framework, l.batch";
  json_t *arr = json_array();
  pthread_mutex_lock(&st->mu);
  sqlite3_stmt *s = NULL;
  th_status rc = store__prepare(st, sql, &s);
  if (rc == TH_OK) {
    if (framework) sqlite3_bind_text(s, 1, framework, -1, SQLITE_TRANSIENT);
    if (network) sqlite3_bind_text(s, 2, network, -1, SQLITE_TRANSIENT);
    int r;
    while ((r = sqlite3_step(s)) == SQLITE_ROW) {
      int has_model = sqlite3_column_type(s, 5) != SQLITE_NULL;
      const char *jstate = (const char *)sqlite3_column_text(s, 14);
      const char *row_state;
      if (has_model)
        row_state = "ready";
      else if (jstate && (!strcmp(jstate, "queued") || !strcmp(jstate, "running")))
        row_state = "building";
      else if (jstate && !strcmp(jstate, "failed"))
        row_state = "failed";
      else
        continue; /* cancelled before anything was published, or deleted */
      if (state && strcmp(state, row_state) != 0) continue;
      json_t *o = json_object();
      json_object_set_new(o, "framework", json_string((const char *)sqlite3_column_text(s, 0)));
      json_object_set_new(o, "network", json_string((const char *)sqlite3_column_text(s, 1)));
      json_object_set_new(o, "batch", json_integer(sqlite3_column_int(s, 2)));
      json_object_set_new(o, "target", json_string((const char *)sqlite3_column_text(s, 3)));
      json_object_set_new(o, "compiler_version",
                          json_string((const char *)sqlite3_column_text(s, 4)));
      json_object_set_new(o, "state", json_string(row_state));
      if (has_model) {
        char d[80];
        json_object_set_new(o, "version", json_integer(sqlite3_column_int(s, 5)));
        json_object_set_new(o, "versions", json_integer(sqlite3_column_int(s, 17)));
        json_object_set_new(o, "tuned", json_boolean(sqlite3_column_int(s, 6)));
        snprintf(d, sizeof d, "sha256:%s", (const char *)sqlite3_column_text(s, 7));
        json_object_set_new(o, "digest", json_string(d));
        snprintf(d, sizeof d, "sha256:%s", (const char *)sqlite3_column_text(s, 8));
        json_object_set_new(o, "so_digest", json_string(d));
        json_object_set_new(o, "latency_ms", sqlite3_column_type(s, 9) == SQLITE_NULL
                                                 ? json_null()
                                                 : json_real(sqlite3_column_double(s, 9)));
        json_object_set_new(o, "published_at", store__json_time(sqlite3_column_double(s, 10)));
        json_object_set_new(o, "size", json_integer(sqlite3_column_int64(s, 11)));
        json_object_set_new(o, "so_size", json_integer(sqlite3_column_int64(s, 12)));
      }
      if (sqlite3_column_type(s, 13) != SQLITE_NULL) {
        json_t *job = json_object();
        json_object_set_new(job, "id", json_integer(sqlite3_column_int64(s, 13)));
        json_object_set_new(job, "state", json_string(jstate));
        json_object_set_new(job, "stage", json_string((const char *)sqlite3_column_text(s, 15)));
        const char *err = (const char *)sqlite3_column_text(s, 16);
        json_object_set_new(job, "error", err ? json_string(err) : json_null());
        json_object_set_new(o, "job", job);
      } else {
        json_object_set_new(o, "job", json_null());
      }
      json_array_append_new(arr, o);
    }
    if (r != SQLITE_DONE) rc = store__db_fail(st, "catalog");
  }
  sqlite3_finalize(s);
  pthread_mutex_unlock(&st->mu);
  if (rc == TH_OK) {
    json_t *root = json_object();
    json_object_set_new(root, "count", json_integer((json_int_t)json_array_size(arr)));
    json_object_set_new(root, "models", arr);
    *json = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    if (!*json) rc = store__fail(st, TH_ERR_NOMEM, "out of memory");
  } else {
    json_decref(arr);
  }
  return rc;
}

th_status store_model_versions_json(store_t *st, const store_key *key, char **json) {
  json_t *arr = json_array();
  pthread_mutex_lock(&st->mu);
  sqlite3_stmt *s = NULL;
  th_status rc = store__prepare(
      st,
      "SELECT m.version, m.tuned, m.tar_digest, m.so_digest, m.latency_ms, m.job_id, m.created_at, "
      "a.size, b.size FROM models m JOIN artifacts a ON a.digest = m.tar_digest "
      "JOIN artifacts b ON b.digest = m.so_digest WHERE m.framework = ? AND m.network = ? AND "
      "m.batch = ? AND m.target = ? AND m.compiler_version = ? AND m.state = 'ready' "
      "ORDER BY m.version",
      &s);
  if (rc == TH_OK) {
    store__bind_key(s, 1, key);
    int r;
    while ((r = sqlite3_step(s)) == SQLITE_ROW) {
      char d[80];
      json_t *o = json_object();
      json_object_set_new(o, "version", json_integer(sqlite3_column_int(s, 0)));
      json_object_set_new(o, "tuned", json_boolean(sqlite3_column_int(s, 1)));
      snprintf(d, sizeof d, "sha256:%s", (const char *)sqlite3_column_text(s, 2));
      json_object_set_new(o, "digest", json_string(d));
      snprintf(d, sizeof d, "sha256:%s", (const char *)sqlite3_column_text(s, 3));
      json_object_set_new(o, "so_digest", json_string(d));
      json_object_set_new(o, "latency_ms", sqlite3_column_type(s, 4) == SQLITE_NULL
                                               ? json_null()
                                               : json_real(sqlite3_column_double(s, 4)));
      json_object_set_new(o, "job", sqlite3_column_type(s, 5) == SQLITE_NULL
                                        ? json_null()
                                        : json_integer(sqlite3_column_int64(s, 5)));
      json_object_set_new(o, "published_at", store__json_time(sqlite3_column_double(s, 6)));
      json_object_set_new(o, "size", json_integer(sqlite3_column_int64(s, 7)));
      json_object_set_new(o, "so_size", json_integer(sqlite3_column_int64(s, 8)));
      json_array_append_new(arr, o);
    }
    if (r != SQLITE_DONE) rc = store__db_fail(st, "versions");
  }
  sqlite3_finalize(s);
  pthread_mutex_unlock(&st->mu);
  if (rc == TH_OK && json_array_size(arr) == 0)
    rc = store__fail(st, TH_ERR_NOT_FOUND, "no published model for %s/%s/%d", key->framework,
                     key->network, key->batch);
  if (rc == TH_OK) {
    json_t *root = json_pack("{s:s,s:s,s:i,s:s,s:I,s:o}", "framework", key->framework, "network",
                             key->network, "batch", key->batch, "target", key->target, "count",
                             (json_int_t)json_array_size(arr), "versions", arr);
    *json = root ? json_dumps(root, JSON_COMPACT) : NULL;
    json_decref(root);
    if (!*json) rc = store__fail(st, TH_ERR_NOMEM, "out of memory");
  } else {
    json_decref(arr);
  }
  return rc;
}
