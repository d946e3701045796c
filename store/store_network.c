/* Networks: a row per zoo network (refreshed by the daemon at start) and per uploaded ONNX network. An upload's
 * file is an artifact like a bundle (placed durably before its row) and its row carries a revision digest that
 * models and jobs record (store_key.net_digest), so a bundle built from an older upload is never the current
 * one. Replacing or deleting an upload cancels the live jobs of the revision that goes, in the same
 * transaction as the row, and removes the old file once no network references its bytes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store_int.h"
#include "th_sha256.h"
#include "th_util.h"

#define STORE__ONNX_MEDIA "application/onnx"

th_status store_network_upsert(store_t *st, const char *name, const char *input_shape_json, double flops,
                               int64_t params) {
  pthread_mutex_lock(&st->mu);
  db_stmt *s = NULL;
  th_status rc =
      store__prepare(st,
                     "INSERT INTO networks (name, input_shape, flops, params, updated_at) "
                     "VALUES (?, ?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET input_shape = "
                     "excluded.input_shape, flops = excluded.flops, params = excluded.params, "
                     "updated_at = excluded.updated_at WHERE networks.source = 'zoo'",
                     &s);
  if (rc == TH_OK) {
    db_bind_text(s, 1, name);
    db_bind_text(s, 2, input_shape_json);
    db_bind_double(s, 3, flops);
    db_bind_int64(s, 4, params);
    db_bind_double(s, 5, th_now_wall());
    if (db_step(s) != DB_DONE) rc = store__db_fail(st, "upsert network");
  }
  db_finalize(s);
  pthread_mutex_unlock(&st->mu);
  return rc;
}

void store_network_clear(store_network *n) {
  if (!n) return;
  free(n->shapes);
  free(n->description);
  n->shapes = n->description = NULL;
}

void store_network_list_free(store_network *nets, size_t n) {
  if (!nets) return;
  for (size_t i = 0; i < n; i++) store_network_clear(&nets[i]);
  free(nets);
}

#define STORE__NET_COLS                                                                                  \
  "n.name, n.source, n.digest, coalesce(n.onnx_digest, ''), coalesce(a.size, 0), n.shapes, n.description, " \
  "n.version, coalesce(n.created_at, n.updated_at), n.updated_at, n.flops, n.params"
#define STORE__NET_FROM " FROM networks n LEFT JOIN artifacts a ON a.digest = n.onnx_digest"

/* A network row from STORE__NET_COLS; TH_ERR_NOMEM when a text column cannot be copied. */
static th_status store__network_row(store_t *st, db_stmt *s, store_network *n) {
  memset(n, 0, sizeof *n);
  store__col_copy(s, 0, n->name, sizeof n->name);
  const char *src = db_col_text(s, 1);
  n->onnx = src && strcmp(src, "onnx") == 0;
  store__col_copy(s, 2, n->digest, sizeof n->digest);
  store__col_copy(s, 3, n->onnx_digest, sizeof n->onnx_digest);
  n->onnx_size = db_col_int64(s, 4);
  if (n->onnx) store__artifact_file(st, n->onnx_digest, n->onnx_path, sizeof n->onnx_path);
  n->version = db_col_int(s, 7);
  n->created_at = db_col_double(s, 8);
  n->updated_at = db_col_double(s, 9);
  n->flops = db_col_double(s, 10);
  n->params = db_col_int64(s, 11);
  int bad = (!db_col_is_null(s, 5) && !(n->shapes = store__col_dup(s, 5))) ||
            (!db_col_is_null(s, 6) && !(n->description = store__col_dup(s, 6)));
  if (bad) {
    store_network_clear(n);
    return store__fail(st, TH_ERR_NOMEM, "out of memory");
  }
  return TH_OK;
}

/* The row of name into *n (the caller holds st->mu); TH_ERR_NOT_FOUND when there is none. */
static th_status store__network_select(store_t *st, const char *name, store_network *n) {
  db_stmt *s = NULL;
  th_status rc = store__prepare(st, "SELECT " STORE__NET_COLS STORE__NET_FROM " WHERE n.name = ?", &s);
  if (rc == TH_OK) {
    db_bind_text(s, 1, name);
    int r = db_step(s);
    if (r == DB_ROW)
      rc = store__network_row(st, s, n);
    else if (r == DB_DONE)
      rc = store__fail(st, TH_ERR_NOT_FOUND, "no network named '%s'", name);
    else
      rc = store__db_fail(st, "select network");
  }
  db_finalize(s);
  return rc;
}

th_status store_network_get(store_t *st, const char *name, store_network *out) {
  if (!name) return store__fail(st, TH_ERR_INVALID, "a network name is required");
  pthread_mutex_lock(&st->mu);
  store_network n;
  th_status rc = store__network_select(st, name, &n);
  pthread_mutex_unlock(&st->mu);
  /* the caller reads the file: a shared store's local cache may not have it yet */
  if (rc == TH_OK && n.onnx && st->blob->get) {
    char path[sizeof n.onnx_path];
    rc = store_artifact_path(st, n.onnx_digest, path, sizeof path, NULL, NULL, 0);
    /* the network is there, its file is not: not an unknown network */
    if (rc == TH_ERR_NOT_FOUND) rc = TH_ERR_IO;
    if (rc != TH_OK) store_network_clear(&n);
  }
  if (rc == TH_OK) *out = n;
  return rc;
}

th_status store_network_list(store_t *st, const char *source, store_network **out, size_t *count) {
  store_network *nets = NULL;
  size_t n = 0, cap = 0;
  pthread_mutex_lock(&st->mu);
  db_stmt *s = NULL;
  th_status rc = store__prepare(st,
                                "SELECT " STORE__NET_COLS STORE__NET_FROM
                                " WHERE (?1 IS NULL OR n.source = ?1) ORDER BY n.name {binary}",
                                &s);
  if (rc == TH_OK) {
    if (source) db_bind_text(s, 1, source);
    int r;
    while (rc == TH_OK && (r = db_step(s)) == DB_ROW) {
      void *grown = store__grow(st, nets, &cap, n, sizeof *nets);
      if (!grown) {
        rc = TH_ERR_NOMEM;
        break;
      }
      nets = grown;
      rc = store__network_row(st, s, &nets[n]);
      if (rc == TH_OK) n++;
    }
    if (rc == TH_OK && r != DB_DONE) rc = store__db_fail(st, "list networks");
  }
  db_finalize(s);
  pthread_mutex_unlock(&st->mu);
  if (rc != TH_OK) {
    store_network_list_free(nets, n);
    return rc;
  }
  *out = nets;
  *count = n;
  return TH_OK;
}

/* Cancels the live jobs of network name (of revision digest only, when not NULL; else of every uploaded
 * revision) inside the caller's transaction: queued ones end now with reason, running ones get
 * cancel_requested. Their ids are appended to *ids (malloc'd, *n of them). */
static th_status store__network_cancel_jobs(store_t *st, const char *name, const char *digest, const char *reason,
                                            int64_t **ids, size_t *n) {
  static const char *const where =
      " WHERE network = ?1 AND (?2 IS NULL AND net_digest != '' OR net_digest = ?2) AND state ";
  size_t cap = 0;
  db_stmt *s = NULL;
  char sql[512];
  snprintf(sql, sizeof sql, "SELECT id FROM jobs%sIN ('queued', 'running') ORDER BY id", where);
  th_status rc = store__prepare(st, sql, &s);
  if (rc == TH_OK) {
    db_bind_text(s, 1, name);
    if (digest) db_bind_text(s, 2, digest);
    int r;
    while ((r = db_step(s)) == DB_ROW) {
      void *grown = store__grow(st, *ids, &cap, *n, sizeof **ids);
      if (!grown) {
        rc = TH_ERR_NOMEM;
        break;
      }
      *ids = grown;
      (*ids)[(*n)++] = db_col_int64(s, 0);
    }
    if (rc == TH_OK && r != DB_DONE) rc = store__db_fail(st, "select the network's jobs");
  }
  db_finalize(s);
  for (int k = 0; rc == TH_OK && k < 2; k++) {
    s = NULL;
    if (k == 0)
      snprintf(sql, sizeof sql,
               "UPDATE jobs SET state = 'cancelled', cancel_requested = 1, error = ?3, finished_at = ?4, "
               "stage = 'done'%s= 'queued'",
               where);
    else
      snprintf(sql, sizeof sql, "UPDATE jobs SET cancel_requested = 1%s= 'running'", where);
    rc = store__prepare(st, sql, &s);
    if (rc == TH_OK) {
      db_bind_text(s, 1, name);
      if (digest) db_bind_text(s, 2, digest);
      if (k == 0) {
        db_bind_text(s, 3, reason);
        db_bind_double(s, 4, th_now_wall());
      }
      if (db_step(s) != DB_DONE) rc = store__db_fail(st, "cancel the network's jobs");
    }
    db_finalize(s);
  }
  return rc;
}

/* Deletes the artifact row (and its engine copy) of an ONNX file that no network references any
 * more, inside the caller's transaction; *gone = 1 when it went, so that the caller removes the
 * local file after the commit. */
static th_status store__onnx_release(store_t *st, const char *hex, int *gone) {
  return store__artifact_delete(st, hex,
                                "media_type = '" STORE__ONNX_MEDIA
                                "' AND NOT EXISTS (SELECT 1 FROM networks WHERE onnx_digest = ?1)",
                                gone);
}

/* Ends the transaction (COMMIT when rc is TH_OK, else ROLLBACK, keeping the first error). */
static th_status store__network_tx_end(store_t *st, th_status rc) {
  if (rc == TH_OK) rc = store__announce(st, 0, STORE_EV_CATALOG, 0, 0, NULL);
  if (rc == TH_OK) rc = store__exec(st, "COMMIT");
  if (rc != TH_OK) db_rollback(st->db);
  return rc;
}

/* The revision digest of a file and its shapes (see store_network.digest). */
static void store__revision(const char *file_hex, const char *shapes, char digest[TH_HEX_MAX]) {
  if (!shapes || !shapes[0]) {
    memcpy(digest, file_hex, 65);
    return;
  }
  th_sha256 h;
  unsigned char bin[32];
  th_sha256_init(&h);
  th_sha256_update(&h, file_hex, 64);
  th_sha256_update(&h, "\n", 1);
  th_sha256_update(&h, shapes, strlen(shapes));
  th_sha256_final(&h, bin);
  th_hex(bin, 32, digest);
}

/* The INSERT of a new uploaded network's row or the UPDATE of an existing one to the next version, inside the
 * caller's transaction. */
static th_status store__network_write(store_t *st, const store_network_upload *up, const char *digest,
                                      const char *file_hex, int update) {
  db_stmt *s = NULL;
  th_status rc = store__prepare(
      st,
      update ? "UPDATE networks SET input_shape = ?2, flops = ?3, params = ?4, updated_at = ?5, onnx_digest = ?6, "
               "shapes = ?7, description = ?8, digest = ?9, version = version + 1 WHERE name = ?1"
             : "INSERT INTO networks (name, input_shape, flops, params, updated_at, onnx_digest, shapes, "
               "description, digest, source, version, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, "
               "'onnx', 1, ?5)",
      &s);
  if (rc == TH_OK) {
    db_bind_text(s, 1, up->name);
    db_bind_text(s, 2, up->input_shape ? up->input_shape : "[]");
    db_bind_double(s, 3, up->flops);
    db_bind_int64(s, 4, up->params);
    db_bind_double(s, 5, th_now_wall());
    db_bind_text(s, 6, file_hex);
    if (up->shapes && up->shapes[0]) db_bind_text(s, 7, up->shapes);
    if (up->description) db_bind_text(s, 8, up->description);
    db_bind_text(s, 9, digest);
    if (db_step(s) != DB_DONE) rc = store__db_fail(st, update ? "update network" : "insert network");
  }
  db_finalize(s);
  return rc;
}

th_status store_network_put(store_t *st, const store_network_upload *up, store_network *out,
                            store_network_change *change) {
  if (!up || !up->name || !up->path)
    return store__fail(st, TH_ERR_INVALID, "a network name and an ONNX file are required");
  size_t nl = strlen(up->name);
  if (nl < 1 || nl > 63) return store__fail(st, TH_ERR_INVALID, "a network name has 1 to 63 characters");
  char hex[TH_HEX_MAX];
  int64_t sz = 0;
  if (up->sha256) {
    struct stat sb;
    if (!th_is_sha256_hex(up->sha256)) return store__fail(st, TH_ERR_INVALID, "bad sha256 '%s'", up->sha256);
    if (stat(up->path, &sb) != 0) return store__fail(st, TH_ERR_IO, "cannot read %s: %s", up->path, strerror(errno));
    memcpy(hex, up->sha256, 65);
    sz = (int64_t)sb.st_size;
  } else if (th_sha256_file(up->path, hex, &sz) != TH_OK) {
    return store__fail(st, TH_ERR_IO, "cannot read %s: %s", up->path, strerror(errno));
  }
  char digest[TH_HEX_MAX];
  store__revision(hex, up->shapes, digest);
  /* the file first, outside the lock (a copy of hundreds of MB); a put that fails later leaves a file without a
   * row, which store_recover sweeps */
  th_status rc = store__artifact_place(st, up->path, up->take, hex, sz);
  if (rc != TH_OK) return rc;

  store_network_change ch;
  memset(&ch, 0, sizeof ch);
  char old_file[TH_HEX_MAX] = "";
  int old_gone = 0;
  pthread_mutex_lock(&st->mu);
  rc = store__begin(st);
  if (rc == TH_OK) {
    store_network cur;
    th_status g = store__network_select(st, up->name, &cur);
    if (g == TH_OK && !cur.onnx) {
      rc = store__fail(st, TH_ERR_CONFLICT, "'%s' is a zoo network; an upload needs another name", up->name);
    } else if (g == TH_OK && strcmp(cur.digest, digest) == 0) {
      ch.changed = 0; /* the same file and shapes: nothing to write */
    } else if (g == TH_OK || g == TH_ERR_NOT_FOUND) {
      ch.changed = g == TH_OK ? 2 : 1;
      char file[TH_PATH_MAX];
      store__artifact_file(st, hex, file, sizeof file);
      rc = store__artifact_row(st, hex, sz, STORE__ONNX_MEDIA, file);
      if (rc == TH_OK) rc = store__network_write(st, up, digest, hex, g == TH_OK);
      if (rc == TH_OK && g == TH_OK) {
        char reason[160];
        snprintf(reason, sizeof reason, "cancelled: network '%s' was replaced by version %d", up->name,
                 cur.version + 1);
        rc = store__network_cancel_jobs(st, up->name, cur.digest, reason, &ch.jobs, &ch.njobs);
        /* the old revision's bundles are stale: no longer served (deleted, as DELETE /models marks them; their
         * blobs stay addressable) */
        db_stmt *s = NULL;
        if (rc == TH_OK)
          rc = store__prepare(st, "UPDATE models SET state = 'deleted' WHERE network = ? AND net_digest = ? AND "
                                  "state = 'ready'", &s);
        if (rc == TH_OK) {
          db_bind_text(s, 1, up->name);
          db_bind_text(s, 2, cur.digest);
          if (db_step(s) != DB_DONE)
            rc = store__db_fail(st, "retire the old version's models");
          else
            ch.models = db_changes(st->db);
        }
        db_finalize(s);
        if (rc == TH_OK && strcmp(cur.onnx_digest, hex) != 0) {
          memcpy(old_file, cur.onnx_digest, sizeof old_file);
          rc = store__onnx_release(st, old_file, &old_gone);
        }
      }
    } else {
      rc = g;
    }
    if (g == TH_OK) store_network_clear(&cur);
    rc = store__network_tx_end(st, rc);
  }
  pthread_mutex_unlock(&st->mu);
  if (rc == TH_OK && old_gone) {
    char path[TH_PATH_MAX];
    store__artifact_file(st, old_file, path, sizeof path);
    unlink(path);
  }
  if (rc == TH_OK && out) rc = store_network_get(st, up->name, out);
  if (rc != TH_OK) {
    free(ch.jobs);
    return rc;
  }
  if (change)
    *change = ch;
  else
    free(ch.jobs);
  return TH_OK;
}

th_status store_network_delete(store_t *st, const char *name, store_network_change *change) {
  if (!name) return store__fail(st, TH_ERR_INVALID, "a network name is required");
  store_network_change ch;
  memset(&ch, 0, sizeof ch);
  char file[TH_HEX_MAX] = "";
  int gone = 0;
  pthread_mutex_lock(&st->mu);
  th_status rc = store__begin(st);
  if (rc == TH_OK) {
    store_network cur;
    rc = store__network_select(st, name, &cur);
    if (rc == TH_OK) {
      if (!cur.onnx)
        rc = store__fail(st, TH_ERR_CONFLICT, "'%s' is a zoo network, which cannot be deleted", name);
      memcpy(file, cur.onnx_digest, sizeof file);
      store_network_clear(&cur);
    }
    if (rc == TH_OK)
      rc = store__run1(st, "UPDATE models SET state = 'deleted' WHERE network = ?1 AND net_digest != '' AND "
                       "state = 'ready'", name, "delete the network's models", &ch.models);
    if (rc == TH_OK) {
      char reason[160];
      snprintf(reason, sizeof reason, "cancelled: network '%s' was deleted", name);
      rc = store__network_cancel_jobs(st, name, NULL, reason, &ch.jobs, &ch.njobs);
    }
    if (rc == TH_OK) rc = store__run1(st, "DELETE FROM networks WHERE name = ?1", name, "delete network", NULL);
    if (rc == TH_OK) rc = store__onnx_release(st, file, &gone);
    rc = store__network_tx_end(st, rc);
  }
  pthread_mutex_unlock(&st->mu);
  if (rc != TH_OK) {
    free(ch.jobs);
    return rc;
  }
  if (gone) {
    char path[TH_PATH_MAX];
    store__artifact_file(st, file, path, sizeof path);
    unlink(path);
  }
  ch.changed = 1;
  if (change)
    *change = ch;
  else
    free(ch.jobs);
  return TH_OK;
}
