/* The /networks routes (see networks.h): the network list, and users' own networks, uploaded as ONNX files.
 * An upload streams to a file in the store's scratch directory as it arrives (never into memory), so its size
 * is bounded by --max-upload and not by the daemon's memory; whatever goes wrong, that file is removed when the
 * request ends, so bad input leaves nothing behind: no row, no file, no job. */
#include "networks.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "authorize.h"
#include "guard.h"
#include "longpoll.h"
#include "present.h"
#include "request.h"
#include "response.h"
#include "tc/zoo.h"
#include "th_alloc.h"
#include "th_log.h"
#include "th_sha256.h"
#include "th_util.h"
#include "upload.h"

/* Bytes read and dropped after an upload passed --max-upload, so that the client gets its 413, before the
 * connection is closed instead. */
#define SRV_UPLOAD_DRAIN ((int64_t)64 << 20)

struct srv_upload {
  int fd; /* -1 once closed */
  char path[TH_PATH_MAX];
  th_sha256 sha;
  int64_t size, dropped;
  int too_large, io_error;
  char no_space[768]; /* why the body crossed the free-space floor; "" while it has not */
  char shapes[2048];
  int has_shapes;
};

void srv_upload_free(srv_upload *u) {
  if (!u) return;
  if (u->fd >= 0) close(u->fd);
  if (u->path[0]) unlink(u->path); /* the store renamed it away when it took it */
  free(u);
}

/* The network name of a "/networks/{name}" path (percent-decoded into name), or 0 for another path. */
static int srv__network_path(const char *path, char *name, size_t n) {
  static const char prefix[] = "/networks/";
  size_t pl = sizeof prefix - 1;
  if (strncmp(path, prefix, pl) != 0) return 0;
  const char *seg = path + pl;
  size_t len = strlen(seg);
  if (len && seg[len - 1] == '/') len--;
  if (!len || memchr(seg, '/', len)) return 0;
  return srv_pct_decode(seg, len, name, n) >= 0;
}

/* The shapes query parameter into u (has_shapes 0 when absent); -1 when malformed. */
static int srv__shapes_param(srv_request *r, srv_upload *u) {
  int q = srv_query(r, "shapes", u->shapes, sizeof u->shapes);
  if (q < 0) return -1;
  u->has_shapes = q > 0 && u->shapes[0];
  return 0;
}

int srv_networks_put_begin(srv_t *s, srv_request *r, enum MHD_Result *ret) {
  char name[SRV_MAX_SEGMENT + 1];
  if (r->uri_too_long || !srv__network_path(r->path, name, sizeof name)) return 0;
  r->route = SRV_ROUTE_NETWORK_PUT;
  r->answered = 1; /* until the upload is set up below */
  if (!srv_authorized(s, r, SRV_SCOPE_TUNE, ret)) return 1;
  if (!srv_network_name_ok(name)) {
    *ret = srv_error(s, r, TH_ERR_INVALID, "invalid_name", NULL, "invalid network name '%s'; a name is %s", name,
                     SRV_NETWORK_NAME_RULE);
    return 1;
  }
  if (tc_zoo_find(name)) {
    *ret = srv_error(s, r, TH_ERR_CONFLICT, "zoo_name", NULL,
                     "'%s' is a zoo network, which an upload cannot replace; choose another name", name);
    return 1;
  }
  /* a declared size past the limit is refused before a byte of the body is read */
  const char *cl = MHD_lookup_connection_value(r->con, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
  int64_t declared = -1;
  if (cl && (th_parse_i64(cl, &declared) != TH_OK || declared < 0)) declared = -1;
  if (declared > s->cfg.max_upload) {
    *ret = srv_error(s, r, TH_ERR_TOO_LARGE, "upload_too_large", NULL,
                     "the upload is %" PRId64 " bytes; this server takes ONNX files of up to %" PRId64
                     " bytes (--max-upload)",
                     declared, s->cfg.max_upload);
    return 1;
  }
  char why[1536];
  th_status grc = srv_guard_space(s, declared > 0 ? declared : 0, "the upload", why, sizeof why);
  if (grc != TH_OK) { /* below the free-space floor: refused before a byte is written (guard.c) */
    *ret = srv_guard_error(s, r, grc, "store_error", why);
    return 1;
  }
  srv_upload *u = th_calloc(1, sizeof *u);
  if (!u) {
    *ret = MHD_NO;
    return 1;
  }
  u->fd = -1;
  if (srv__shapes_param(r, u) != 0) {
    free(u);
    *ret = srv_error(s, r, TH_ERR_INVALID, "invalid_query", NULL, "malformed shapes parameter in the query");
    return 1;
  }
  if (store_tmp_file(s->st, "upload", u->path, sizeof u->path, &u->fd) != TH_OK) {
    u->path[0] = '\0';
    srv_upload_free(u);
    *ret = srv_error(s, r, TH_ERR_IO, "store_error", NULL, "%s", store_errmsg(s->st));
    return 1;
  }
  th_sha256_init(&u->sha);
  r->upload = u;
  r->answered = 0;
  *ret = MHD_YES;
  return 1;
}

/* Refuses the rest of an upload that is being refused: its file goes now, and the n bytes just received start
 * the count that is drained (SRV_UPLOAD_DRAIN) before the answer. */
static enum MHD_Result srv__upload_drop(srv_upload *u, size_t n) {
  u->dropped = (int64_t)n;
  close(u->fd);
  u->fd = -1;
  unlink(u->path);
  u->path[0] = '\0';
  return MHD_YES;
}

enum MHD_Result srv_networks_put_data(srv_t *s, srv_request *r, const char *data, size_t n) {
  srv_upload *u = r->upload;
  if (u->too_large || u->io_error || u->no_space[0]) {
    u->dropped += (int64_t)n;
    return u->dropped > SRV_UPLOAD_DRAIN ? MHD_NO : MHD_YES;
  }
  if (u->size + (int64_t)n > s->cfg.max_upload) {
    /* a body without Content-Length (chunked) that grows past the limit: its file goes now */
    u->too_large = 1;
    return srv__upload_drop(u, n);
  }
  /* the free-space floor, again every 16 MiB the body grows (a chunked body declared no length) */
  if ((u->size >> 24) != ((u->size + (int64_t)n) >> 24) &&
      srv_guard_space(s, (int64_t)n, "the upload", u->no_space, sizeof u->no_space) != TH_OK) {
    if (!u->no_space[0])
      snprintf(u->no_space, sizeof u->no_space, "cannot read the free space of the disk");
    return srv__upload_drop(u, n);
  }
  th_sha256_update(&u->sha, data, n);
  u->size += (int64_t)n;
  for (size_t off = 0; off < n;) {
    ssize_t w = write(u->fd, data + off, n - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      TH_LOG(TH_LOG_ERROR, "upload to %s: %s", u->path, strerror(errno));
      u->io_error = 1;
      break;
    }
    off += (size_t)w;
  }
  return MHD_YES;
}

/* ---- the list, one network ---- */

/* The batch parameter of GET /networks (0 when absent); -1 after queueing the 400. */
static int srv__batch_param(srv_t *s, srv_request *r, enum MHD_Result *ret) {
  char b[32] = "";
  int q = srv_query(r, "batch", b, sizeof b);
  if (q == 0) return 0;
  int64_t batch = 0;
  if (q < 0 || th_parse_i64(b, &batch) != TH_OK || batch < 1 || batch > s->cfg.max_batch) {
    char extra[96];
    snprintf(extra, sizeof extra, "{\"valid\":{\"min\":1,\"max\":%d}}", s->cfg.max_batch);
    *ret = srv_error(s, r, TH_ERR_INVALID, "invalid_batch", extra,
                     "invalid batch '%s'; the batch is a whole number from 1 to %d", b, s->cfg.max_batch);
    return -1;
  }
  return (int)batch;
}

enum MHD_Result srv_networks_list(srv_t *s, srv_request *r) {
  enum MHD_Result ret;
  int batch = srv__batch_param(s, r, &ret);
  if (batch < 0) return ret;
  store_network *nets = NULL;
  size_t n = 0;
  th_status rc = store_network_list(s->st, "onnx", &nets, &n);
  if (rc != TH_OK) return srv_error(s, r, rc, "store_error", NULL, "%s", store_errmsg(s->st));
  if (n == 0 && batch == 0) return srv_json(s, r, 200, s->networks_json); /* the zoo alone, as cached */
  json_t *doc = json_loads(s->networks_json, 0, NULL);
  json_t *arr = json_object_get(doc, "networks");
  for (size_t i = 0; arr && i < n; i++) json_array_append_new(arr, srv_present_uploaded(&nets[i]));
  store_network_list_free(nets, n);
  if (doc) json_object_set_new(doc, "count", json_integer((json_int_t)json_array_size(arr)));
  if (doc && batch > 0) srv_present_networks_at(doc, batch);
  return srv_json_doc(s, r, 200, doc);
}

static enum MHD_Result srv__network_get(srv_t *s, srv_request *r, const char *name) {
  enum MHD_Result ret;
  int batch = srv__batch_param(s, r, &ret);
  if (batch < 0) return ret;
  json_t *doc = NULL;
  if (tc_zoo_find(name)) {
    if (srv_present_network(name, &doc) != TH_OK)
      return srv_error(s, r, TH_ERR_INTERNAL, "internal_error", NULL, "cannot describe %s", name);
  } else {
    store_network net;
    th_status rc = store_network_get(s->st, name, &net);
    if (rc == TH_ERR_NOT_FOUND || (rc == TH_OK && !net.onnx)) {
      if (rc == TH_OK) store_network_clear(&net);
      return srv_error(s, r, TH_ERR_NOT_FOUND, "unknown_network", NULL,
                       "no network named '%s'; GET /networks lists them", name);
    }
    if (rc != TH_OK) return srv_error(s, r, rc, "store_error", NULL, "%s", store_errmsg(s->st));
    doc = srv_present_uploaded(&net);
    store_network_clear(&net);
  }
  if (doc && batch > 0) srv_present_networks_at(doc, batch);
  return srv_json_doc(s, r, 200, doc);
}

/* Drops the manifest cache (a network's models changed), wakes whatever waits on the jobs a change cancelled
 * (long polls) and frees their list. */
static void srv__cancelled_jobs(srv_t *s, store_network_change *ch) {
  pthread_mutex_lock(&s->cache_mu);
  s->cache_gen++;
  pthread_mutex_unlock(&s->cache_mu);
  for (size_t i = 0; i < ch->njobs; i++) srv_job_event(s, ch->jobs[i]);
  free(ch->jobs);
  ch->jobs = NULL;
}

/* {"id": ...} of the cancelled jobs, as an array. */
static json_t *srv__job_ids(const store_network_change *ch) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < ch->njobs; i++) json_array_append_new(a, json_integer(ch->jobs[i]));
  return a;
}

/* The complete PUT: the body is in r->upload's file. */
static enum MHD_Result srv__network_put(srv_t *s, srv_request *r, const char *name) {
  srv_upload *u = r->upload;
  if (!u) /* a PUT whose headers srv_networks_put_begin did not see: never happens, but never reads r->body */
    return srv_error(s, r, TH_ERR_INTERNAL, "internal_error", NULL, "the upload was not set up");
  if (u->too_large)
    return srv_error(s, r, TH_ERR_TOO_LARGE, "upload_too_large", NULL,
                     "the upload grew past %" PRId64 " bytes, the largest ONNX file this server takes (--max-upload)",
                     s->cfg.max_upload);
  if (u->no_space[0]) return srv_guard_error(s, r, TH_ERR_NO_SPACE, "store_error", u->no_space);
  if (u->io_error)
    return srv_error(s, r, TH_ERR_IO, "store_error", NULL, "cannot write the upload to the store's disk");
  if (u->size == 0)
    return srv_error(s, r, TH_ERR_INVALID, "invalid_onnx", NULL,
                     "the body is empty; send the ONNX file as the body of the PUT");
  int closed = close(u->fd) == 0;
  u->fd = -1;
  if (!closed) return srv_error(s, r, TH_ERR_IO, "store_error", NULL, "cannot write the upload to the store's disk");
  unsigned char sha[32];
  char hex[TH_HEX_MAX];
  th_sha256_final(&u->sha, sha);
  th_hex(sha, 32, hex);
  const char *cd = MHD_lookup_connection_value(r->con, MHD_HEADER_KIND, "Content-Digest");
  if (cd) {
    int ok = srv_content_digest_check(cd, sha);
    char b64[48];
    th_base64(sha, 32, b64);
    if (ok == -1)
      return srv_error(s, r, TH_ERR_INVALID, "invalid_digest", NULL,
                       "malformed Content-Digest '%s'; send it as RFC 9530 does: sha-256=:<base64>:", cd);
    if (ok == -2)
      return srv_error(s, r, TH_ERR_INVALID, "invalid_digest", NULL,
                       "the Content-Digest has no sha-256 member, the only algorithm this server checks");
    if (ok == 0)
      return srv_error(s, r, TH_ERR_INVALID, "digest_mismatch", NULL,
                       "the body's sha-256 is :%s: (%" PRId64 " bytes), not the one the Content-Digest names: the "
                       "upload was damaged or truncated; nothing was stored",
                       b64, u->size);
  }
  char err[TH_MSG_MAX] = "";
  json_t *doc = NULL;
  store_network_change ch;
  srv_upload_in in = {name, u->path, 1, hex, u->has_shapes ? u->shapes : NULL};
  double t0 = th_now_mono();
  th_status rc = srv_upload_network(s->st, &in, &doc, &ch, err, sizeof err);
  if (rc != TH_OK) {
    const char *code = rc == TH_ERR_INVALID ? "invalid_onnx" : rc == TH_ERR_CONFLICT ? "zoo_name" : "store_error";
    if (rc == TH_ERR_UNSUPPORTED) /* a file that is valid ONNX but uses what the compiler lacks */
      return srv_error_http(s, r, 422, "unsupported_operator", NULL, "%s", err);
    return srv_error(s, r, rc, code, NULL, "%s", err);
  }
  u->path[0] = '\0'; /* the store took the file */
  TH_LOG(TH_LOG_INFO, "network %s: %s (version %lld, %" PRId64 " bytes, imported in %.2f s)", name,
         ch.changed == 0 ? "unchanged" : ch.changed == 1 ? "uploaded" : "new version",
         (long long)json_integer_value(json_object_get(doc, "version")), u->size, th_now_mono() - t0);
  json_object_set_new(doc, "created", json_boolean(ch.changed != 0));
  json_object_set_new(doc, "cancelled_jobs", srv__job_ids(&ch));
  json_object_set_new(doc, "stale_versions", json_integer(ch.models));
  int changed = ch.changed;
  srv__cancelled_jobs(s, &ch);
  struct MHD_Response *resp = srv_json_response(doc);
  if (!resp) return srv_error(s, r, TH_ERR_NOMEM, "out_of_memory", NULL, "out of memory");
  char loc[SRV_MAX_SEGMENT + 16];
  snprintf(loc, sizeof loc, "/networks/%s", name);
  MHD_add_response_header(resp, "Location", loc);
  return srv_queue(s, r, changed ? 201 : 200, resp);
}

static enum MHD_Result srv__network_delete(srv_t *s, srv_request *r, const char *name) {
  if (tc_zoo_find(name))
    return srv_error(s, r, TH_ERR_CONFLICT, "zoo_name", NULL, "'%s' is a zoo network, which cannot be deleted", name);
  store_network_change ch;
  th_status rc = store_network_delete(s->st, name, &ch);
  if (rc == TH_ERR_NOT_FOUND)
    return srv_error(s, r, rc, "unknown_network", NULL, "no uploaded network named '%s'", name);
  if (rc != TH_OK) return srv_error(s, r, rc, "store_error", NULL, "%s", store_errmsg(s->st));
  TH_LOG(TH_LOG_INFO, "network %s deleted (%d model version(s), %zu live job(s) cancelled)", name, ch.models,
         ch.njobs);
  json_t *doc = json_pack("{s:s,s:i,s:o}", "deleted", name, "deleted_versions", ch.models, "cancelled_jobs",
                          srv__job_ids(&ch));
  srv__cancelled_jobs(s, &ch);
  return srv_json_doc(s, r, 200, doc);
}

enum MHD_Result srv_networks_route(srv_t *s, srv_request *r, const char *name) {
  const char *m = r->method;
  if (!strcmp(m, "GET") || !strcmp(m, "HEAD")) {
    r->route = SRV_ROUTE_NETWORK;
    return srv__network_get(s, r, name);
  }
  if (!strcmp(m, "PUT")) {
    r->route = SRV_ROUTE_NETWORK_PUT;
    enum MHD_Result ret = srv__network_put(s, r, name);
    /* the temp file goes now, while the answer is only queued: MHD sends it from this thread after this
     * returns, and calls srv__completed (which would free it) only after the client has read it, so a
     * client that lists the store's tmp/ as soon as it has its 400 would still find the file */
    srv_upload_free(r->upload);
    r->upload = NULL;
    return ret;
  }
  r->route = SRV_ROUTE_NETWORK_DELETE; /* the router's 405 answered any other method */
  return srv__network_delete(s, r, name);
}
