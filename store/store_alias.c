/* Aliases: mutable names that pin one published version of a key (the aliases table, schema migrations 3 and 7).
 * A row names its version by the key's names (precision included) and the version number, which identify one models row whatever the
 * network's revision, so an alias outlives an unpublish of its version and then reads as retired. The name is
 * unique per repository (framework, network, target, compiler version, precision): the OCI tag of that name must name one
 * image. Retention (store_model_retain) and a garbage collector (store_artifact_pinned) ask this table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"
#include "th_util.h"

/* The alias columns and the pinned model's digests and liveness; ?1..?7 are the key (store__bind_key with its
 * revision), ?3 = 0 matches every batch; the caller appends its own conditions and binds from ?8. */
#define STORE__ALIAS_SELECT                                                                                    \
  "SELECT a.batch, a.net_digest, a.name, a.version, a.updated_at, m.tar_digest, m.so_digest, "                 \
  "  (m.state = 'ready' AND m.net_digest = ?7) FROM aliases a JOIN models m ON m.framework = a.framework "      \
  "  AND m.network = a.network AND m.batch = a.batch AND m.target = a.target "                                 \
  "  AND m.compiler_version = a.compiler_version AND m.precision = a.precision AND m.version = a.version "      \
  "WHERE a.framework = ?1 AND a.network = ?2 AND (?3 = 0 OR a.batch = ?3) AND a.target = ?4 "                  \
  "  AND a.compiler_version = ?5 AND a.precision = ?6 "

static void store__alias_row(db_stmt *s, const store_key *key, store_alias *a) {
  memset(a, 0, sizeof *a);
  a->key = *key;
  a->key.batch = db_col_int(s, 0);
  store__col_copy(s, 1, a->key.net_digest, sizeof a->key.net_digest);
  store__col_copy(s, 2, a->name, sizeof a->name);
  a->version = db_col_int(s, 3);
  a->updated_at = db_col_double(s, 4);
  store__col_copy(s, 5, a->tar_digest, sizeof a->tar_digest);
  store__col_copy(s, 6, a->so_digest, sizeof a->so_digest);
  a->retired = db_col_int(s, 7) == 0;
}

/* Reads the alias name of key into *out (the caller holds st->mu). TH_ERR_NOT_FOUND when none. */
static th_status store__alias_read(store_t *st, const store_key *key, const char *name, store_alias *out) {
  db_stmt *s = NULL;
  th_status rc = store__prepare(st, STORE__ALIAS_SELECT "AND a.name = ?8", &s);
  if (rc == TH_OK) {
    store__bind_key(s, 1, key, 1);
    db_bind_text(s, 8, name);
    int r = db_step(s);
    if (r == DB_ROW)
      store__alias_row(s, key, out);
    else if (r == DB_DONE)
      rc = store__fail(st, TH_ERR_NOT_FOUND, "%s/%s has no alias '%s'", key->framework, key->network, name);
    else
      rc = store__db_fail(st, "select alias");
  }
  db_finalize(s);
  return rc;
}

th_status store_alias_get(store_t *st, const store_key *key, const char *name, store_alias *out) {
  pthread_mutex_lock(&st->mu);
  store_alias a;
  th_status rc = store__alias_read(st, key, name, &a);
  pthread_mutex_unlock(&st->mu);
  if (rc == TH_OK) *out = a;
  return rc;
}

th_status store_alias_set(store_t *st, const store_key *key, const char *name, int version, const char *digest,
                          store_alias *out, int *previous) {
  pthread_mutex_lock(&st->mu);
  th_status rc = store__begin(st);
  db_stmt *s = NULL;
  int target = 0, prev = 0;
  /* the version: ready, of the key's current revision */
  if (rc == TH_OK)
    rc = store__prepare(st,
                        "SELECT version FROM models WHERE framework = ?1 AND network = ?2 AND batch = ?3 AND "
                        "target = ?4 AND compiler_version = ?5 AND precision = ?6 AND net_digest = ?7 AND "
                        "state = 'ready' AND ((?8 > 0 AND version = ?8) OR (?8 = 0 AND (tar_digest = ?9 OR "
                        "so_digest = ?9))) ORDER BY version DESC LIMIT 1",
                        &s);
  if (rc == TH_OK) {
    store__bind_key(s, 1, key, 1);
    db_bind_int(s, 8, version > 0 ? version : 0);
    db_bind_text(s, 9, digest ? digest : "");
    int r = db_step(s);
    if (r == DB_ROW)
      target = db_col_int(s, 0);
    else if (r != DB_DONE)
      rc = store__db_fail(st, "select the version to pin");
    else if (version > 0)
      rc = store__fail(st, TH_ERR_NOT_FOUND, "%s/%s/%d has no published version %d", key->framework,
                       key->network, key->batch, version);
    else
      rc = store__fail(st, TH_ERR_NOT_FOUND, "no published version of %s/%s/%d has digest sha256:%s",
                       key->framework, key->network, key->batch, digest ? digest : "");
  }
  db_finalize(s);
  s = NULL;
  /* the name in the repository: this batch's alias moves, another batch's is a conflict */
  if (rc == TH_OK) {
    store_key repo = *key;
    repo.batch = 0;
    store_alias cur;
    th_status gr = store__alias_read(st, &repo, name, &cur);
    if (gr == TH_OK && cur.key.batch != key->batch)
      rc = store__fail(st, TH_ERR_CONFLICT,
                       "alias '%s' already pins %s/%s batch %d (version %d); an alias name is unique per "
                       "repository, because the OCI tag %s/%s:%s names one image: delete it there first, or "
                       "choose another name",
                       name, key->framework, key->network, cur.key.batch, cur.version, key->framework,
                       key->network, name);
    else if (gr == TH_OK)
      prev = cur.version;
    else if (gr != TH_ERR_NOT_FOUND)
      rc = gr;
  }
  if (rc == TH_OK)
    rc = store__prepare(st,
                        "INSERT INTO aliases (framework, network, batch, target, compiler_version, precision, "
                        "net_digest, name, version, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) "
                        "ON CONFLICT (framework, network, target, compiler_version, precision, name) DO UPDATE "
                        "SET net_digest = excluded.net_digest, version = excluded.version, "
                        "updated_at = excluded.updated_at",
                        &s);
  if (rc == TH_OK) {
    store__bind_key(s, 1, key, 1);
    db_bind_text(s, 8, name);
    db_bind_int(s, 9, target);
    db_bind_double(s, 10, th_now_wall());
    if (db_step(s) != DB_DONE) rc = store__db_fail(st, "pin alias");
  }
  db_finalize(s);
  store_alias a;
  if (rc == TH_OK) rc = store__alias_read(st, key, name, &a);
  if (rc == TH_OK) rc = store__announce(st, 0, STORE_EV_CATALOG, 0, 0, NULL);
  if (rc == TH_OK) rc = store__exec(st, "COMMIT");
  if (rc != TH_OK) db_rollback(st->db);
  pthread_mutex_unlock(&st->mu);
  if (rc != TH_OK) return rc;
  if (out) *out = a;
  if (previous) *previous = prev;
  return TH_OK;
}

th_status store_alias_delete(store_t *st, const store_key *key, const char *name, int *version) {
  pthread_mutex_lock(&st->mu);
  th_status rc = store__begin(st);
  store_alias a;
  if (rc == TH_OK) rc = store__alias_read(st, key, name, &a);
  db_stmt *s = NULL;
  if (rc == TH_OK)
    rc = store__prepare(st,
                        "DELETE FROM aliases WHERE framework = ?1 AND network = ?2 AND batch = ?3 AND target = ?4 "
                        "AND compiler_version = ?5 AND precision = ?6 AND name = ?7",
                        &s);
  if (rc == TH_OK) {
    store__bind_key(s, 1, key, 0);
    db_bind_text(s, 7, name);
    if (db_step(s) != DB_DONE) rc = store__db_fail(st, "delete alias");
  }
  db_finalize(s);
  if (rc == TH_OK) rc = store__announce(st, 0, STORE_EV_CATALOG, 0, 0, NULL);
  if (rc == TH_OK) rc = store__exec(st, "COMMIT");
  if (rc != TH_OK) db_rollback(st->db);
  pthread_mutex_unlock(&st->mu);
  if (rc == TH_OK && version) *version = a.version;
  return rc;
}

th_status store_alias_list(store_t *st, const store_key *key, store_alias **out, size_t *count) {
  store_alias *as = NULL;
  size_t n = 0, cap = 0;
  pthread_mutex_lock(&st->mu);
  db_stmt *s = NULL;
  th_status rc = store__prepare(st, STORE__ALIAS_SELECT "ORDER BY a.batch, a.name {binary}", &s);
  if (rc == TH_OK) {
    store__bind_key(s, 1, key, 1);
    int r;
    while ((r = db_step(s)) == DB_ROW) {
      void *grown = store__grow(st, as, &cap, n, sizeof *as);
      if (!grown) {
        rc = TH_ERR_NOMEM;
        break;
      }
      as = grown;
      store__alias_row(s, key, &as[n++]);
    }
    if (rc == TH_OK && r != DB_DONE) rc = store__db_fail(st, "aliases");
  }
  db_finalize(s);
  pthread_mutex_unlock(&st->mu);
  if (rc != TH_OK) {
    free(as);
    return rc;
  }
  *out = as;
  *count = n;
  return TH_OK;
}

th_status store_artifact_pinned(store_t *st, const char *digest, int *pinned) {
  pthread_mutex_lock(&st->mu);
  db_stmt *s = NULL;
  th_status rc = store__prepare(st,
                                "SELECT EXISTS (SELECT 1 FROM aliases a JOIN models m ON m.framework = a.framework "
                                "AND m.network = a.network AND m.batch = a.batch AND m.target = a.target AND "
                                "m.compiler_version = a.compiler_version AND m.precision = a.precision AND "
                                "m.version = a.version WHERE m.tar_digest = ?1 OR m.so_digest = ?1)",
                                &s);
  int p = 0;
  if (rc == TH_OK) {
    db_bind_text(s, 1, digest);
    if (db_step(s) == DB_ROW)
      p = db_col_int(s, 0);
    else
      rc = store__db_fail(st, "pinned artifact");
  }
  db_finalize(s);
  pthread_mutex_unlock(&st->mu);
  if (rc == TH_OK) *pinned = p;
  return rc;
}
