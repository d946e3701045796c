/* The model routes: GET /models/{fw}/{net}/{batch} (the bundle, or the miss path that queues its build and
 * answers 202 / 503 while it runs), .../manifest (cached per key), .../tune, .../versions, .../tuning, DELETE of a
 * key's versions, the catalog (GET /models) and blobs by digest. The key is validated by the router
 * (model_key.c) before any of them runs. */
#include "models.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aliases.h"
#include "authorize.h"
#include "builder.h"
#include "events.h"
#include "guard.h"
#include "longpoll.h"
#include "model_key.h"
#include "present.h"
#include "request.h"
#include "response.h"
#include "srv_limits.h"
#include "tc/backend.h"
#include "tc/tc.h"
#include "tc/zoo.h"
#include "th_log.h"
#include "th_sha256.h"
#include "th_util.h"
#include "tune_net.h"
#include "tune_report.h"

/* The job document of id (owned), or NULL when the store cannot read it. */
static json_t *srv__job_doc(srv_t *s, int64_t id) {
  store_job j;
  if (store_job_get(s->st, id, &j) != TH_OK) return NULL;
  json_t *o = srv_present_job(&j);
  store_job_clear(&j);
  return o;
}

static enum MHD_Result srv__job_pending(srv_t *s, srv_request *r, const store_key *key, int64_t job_id,
                                        int created) {
  json_t *job = srv__job_doc(s, job_id);
  char loc[64];
  srv_job_url(job_id, loc, sizeof loc);
  const char *prefer = MHD_lookup_connection_value(r->con, MHD_HEADER_KIND, "Prefer");
  enum MHD_Result ret;
  if (prefer && strstr(prefer, "respond-async")) {
    json_t *o = json_object();
    json_object_set_new(o, "job", job ? job : json_null());
    job = NULL;
    json_object_set_new(o, "queued", json_boolean(created));
    json_object_set_new(o, "message", json_string("the model is being built; poll the job URL"));
    struct MHD_Response *resp = srv_json_response(o);
    if (!resp) return srv_error(s, r, TH_ERR_NOMEM, "out_of_memory", NULL, "out of memory");
    MHD_add_response_header(resp, "Location", loc);
    MHD_add_response_header(resp, "Preference-Applied", "respond-async");
    ret = srv_queue(s, r, 202, resp);
  } else {
    char link[96];
    snprintf(link, sizeof link, "<%s>; rel=\"monitor\"", loc);
    char msg[512];
    snprintf(msg, sizeof msg,
             "%s/%s/%d is not built yet; job %lld is %s. Retry later (curl -f --retry 100 "
             "--retry-max-time 3600 waits for it), or follow the Link header",
             key->framework, key->network, key->batch, (long long)job_id,
             created ? "now queued" : "already in progress");
    /* a 503 that is no error of a th_status: the model is on its way; Retry-After paces curl --retry */
    json_t *extra = json_pack("{s:o}", "job", job ? job : json_null());
    struct MHD_Response *resp = srv_error_response(503, "building", extra, msg);
    job = NULL;
    if (resp) {
      MHD_add_response_header(resp, "Retry-After", "5");
      MHD_add_response_header(resp, "Link", link);
    }
    ret = srv_queue(s, r, 503, resp);
  }
  return ret;
}

th_status srv_model_miss(srv_t *s, const store_key *key, int tuned_only, int waiting, int64_t *job_id,
                         int *created, char *why, size_t n) {
  *created = 0;
  if (!s->builder->supports(s->builder->self, key->framework, why, n)) return TH_ERR_UNSUPPORTED;
  /* a tuned version of another machine's target cannot be made here: say so instead of queueing */
  if (tuned_only && !srv_target_tunable(s, key, why, n)) return TH_ERR_NO_DEVICE;
  /* a tuned cuda version needs a device to tune on: say so instead of queueing builds that cannot tune */
  char dwhy[256];
  if (tuned_only && srv__lacks_device(key->framework, dwhy, sizeof dwhy) && !srv__fleet_measures(s, key)) {
    snprintf(why, n,
             "no tuned version of %s/%s/%d: tuning cuda needs a worker with a CUDA device, and this server has "
             "none (%s); GET it without tuned=1 for the untuned build",
             key->framework, key->network, key->batch, dwhy);
    return TH_ERR_NO_DEVICE;
  }
  store_job latest;
  int have_latest = store_job_latest(s->st, key, &latest) == TH_OK;
  th_status rc = TH_OK;
  if (have_latest && (latest.state == STORE_JOB_QUEUED || latest.state == STORE_JOB_RUNNING)) {
    *job_id = latest.id;
  } else if (have_latest && (latest.state == STORE_JOB_FAILED || (latest.state == STORE_JOB_CANCELLED && waiting))) {
    /* a failed build is not retried by a GET (that would loop on a broken network); a cancel seen by a
     * waiting request ends the wait */
    int failed = latest.state == STORE_JOB_FAILED;
    snprintf(why, n, "the last build of %s/%s/%d %s: %s. Queue it again with POST /models/%s/%s/%d/tune",
             key->framework, key->network, key->batch, failed ? "failed" : "was cancelled",
             latest.error ? latest.error : "unknown error", key->framework, key->network, key->batch);
    *job_id = latest.id;
    rc = failed ? TH_ERR_COMPILE : TH_ERR_CANCELLED;
  } else {
    int tune = tuned_only || s->cfg.miss_tunes;
    char opts[64] = "{}";
    if (tune && s->cfg.miss_trials > 0) snprintf(opts, sizeof opts, "{\"trials\":%d}", s->cfg.miss_trials);
    /* a build the disk or the memory budget cannot hold is refused here, with nothing queued
     * (guard.c) */
    rc = srv_guard_space(s, 0, "a build", why, n);
    if (rc == TH_OK) rc = srv_guard_footprint(s, key, why, n);
    if (rc != TH_OK) {
      if (have_latest) store_job_clear(&latest);
      return rc;
    }
    /* the store counts and queues in one transaction: a full queue is TH_ERR_BUSY (429) */
    rc = store_job_enqueue_limited(s->st, key, tune ? "tune" : "build", opts, 0, s->cfg.max_queued, job_id,
                                   created);
    if (rc != TH_OK) {
      snprintf(why, n, "%s", store_errmsg(s->st));
    } else if (*created) {
      TH_LOG(TH_LOG_INFO, "miss on %s/%s/%d: queued job %lld", key->framework, key->network, key->batch,
             (long long)*job_id);
      tune_workers_notify(s->workers);
    }
  }
  if (have_latest) store_job_clear(&latest);
  return rc;
}

/* Sends version m of key: the bundle (fmt "tar") or its .so ("so"), with the version's headers; alias names the
 * alias it was asked by (X-Tunehub-Alias), or NULL. */
static enum MHD_Result srv__send_model(srv_t *s, srv_request *r, const store_key *key, const store_model *m,
                                       const char *fmt, const char *alias) {
  char filename[200], version[16];
  char tname[80]; /* a client-chosen target is in the name: resnet-18_llvm-x86-64-v3_b1_v2.tar */
  srv_target_suffix(s, key, tname, sizeof tname);
  snprintf(filename, sizeof filename, "%s_%s%s_b%d_v%d.%s", key->network, key->framework, tname, key->batch,
           m->version, fmt);
  snprintf(version, sizeof version, "%d", m->version);
  const char *hdrs[][2] = {{"X-Tunehub-Version", version},
                           {"X-Tunehub-Tuned", m->tuned ? "true" : "false"},
                           {alias ? "X-Tunehub-Alias" : NULL, alias},
                           {NULL, NULL}};
  int so = strcmp(fmt, "so") == 0;
  const char *digest = so ? m->so_digest : m->tar_digest;
  char path[1400];
  int64_t size = 0;
  th_status rc = store_artifact_path(s->st, digest, path, sizeof path, &size, NULL, 0);
  if (rc !=
      TH_OK) /* a database that went away is a 503, whatever else keeps the bytes from here a 500 */
    return srv_error(s, r, rc == TH_ERR_UNAVAILABLE ? rc : TH_ERR_IO, "artifact_missing", NULL,
                     "%s", store_errmsg(s->st));
  return srv_send_file(s, r, path, size, digest, so ? "application/x-sharedlib" : "application/x-tar", filename, 0,
                       hdrs);
}

static enum MHD_Result srv__model_get(srv_t *s, srv_request *r, const store_key *key) {
  int head = strcmp(r->method, "HEAD") == 0;
  char fmt[16] = "tar", tuned_s[8] = "", wait_s[16] = "";
  if (srv_query(r, "format", fmt, sizeof fmt) < 0 || (strcmp(fmt, "tar") && strcmp(fmt, "so")))
    return srv_error(s, r, TH_ERR_INVALID, "invalid_format", "{\"valid\":[\"tar\",\"so\"]}",
                     "invalid format '%s'; valid formats: tar (the bundle), so (the model .so alone)",
                     fmt);
  int tuned_only = 0;
  if (srv_query(r, "tuned", tuned_s, sizeof tuned_s) != 0) {
    if (!strcmp(tuned_s, "1") || !strcmp(tuned_s, "true"))
      tuned_only = 1;
    else if (strcmp(tuned_s, "0") && strcmp(tuned_s, "false"))
      return srv_error(s, r, TH_ERR_INVALID, "invalid_tuned", "{\"valid\":[\"0\",\"1\"]}",
                       "invalid tuned '%s'; valid values: 0, 1", tuned_s);
  }
  int64_t wait = 0;
  if (srv_query(r, "wait", wait_s, sizeof wait_s) != 0 &&
      (th_parse_i64(wait_s, &wait) != TH_OK || wait < 0 || wait > SRV_MAX_WAIT_S))
    return srv_error(s, r, TH_ERR_INVALID, "invalid_wait", NULL,
                     "invalid wait '%s'; wait is a whole number of seconds from 0 to %d", wait_s,
                     SRV_MAX_WAIT_S);
  /* ?alias=NAME: the version the alias pins, never a miss (nothing is queued) */
  char alias[80];
  int has_alias = srv_query(r, "alias", alias, sizeof alias);
  if (has_alias < 0) return srv_error(s, r, TH_ERR_INVALID, "invalid_alias", NULL, "%s", srv_alias_rule);
  store_model m;
  enum MHD_Result ret;
  if (has_alias > 0) {
    if (tuned_only)
      return srv_error(s, r, TH_ERR_INVALID, "invalid_query", NULL,
                       "alias and tuned=1 do not go together: an alias pins one version, tuned or not");
    if (!srv_alias_resolve(s, r, key, alias, &m, &ret)) return ret;
    ret = srv__send_model(s, r, key, &m, fmt, alias);
    store_model_clear(&m);
    return ret;
  }

  th_status rc = store_model_get(s->st, key, tuned_only, &m);
  if (rc == TH_OK) {
    ret = srv__send_model(s, r, key, &m, fmt, NULL);
    store_model_clear(&m);
    return ret;
  }
  if (rc != TH_ERR_NOT_FOUND)
    return srv_error(s, r, rc, "store_error", NULL, "%s", store_errmsg(s->st));

  /* a miss */
  if (head) {
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (!resp) return MHD_NO;
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    return srv_queue(s, r, (unsigned int)th_status_http(TH_ERR_NOT_FOUND), resp);
  }
  char why[1024], retry[16];
  int64_t job_id = 0;
  int created = 0;
  if (wait > 0 && !srv_wait_admit(s, r, why, sizeof why)) {
    struct MHD_Response *resp = srv_error_response(429, "too_many_waits", NULL, why);
    if (resp) MHD_add_response_header(resp, "Retry-After", "5");
    return srv_queue(s, r, 429, resp);
  }
  if (!srv_miss_admit(s, r, key, why, sizeof why, retry)) {
    struct MHD_Response *resp = srv_error_response(429, "rate_limited", NULL, why);
    if (resp) MHD_add_response_header(resp, "Retry-After", retry);
    return srv_queue(s, r, 429, resp);
  }
  rc = srv_model_miss(s, key, tuned_only, r->wait_deadline != 0, &job_id, &created, why, sizeof why);
  srv_miss_done(s, r, job_id, rc == TH_OK && created);
  if (rc == TH_ERR_COMPILE || rc == TH_ERR_CANCELLED) {
    char extra[256], loc[64];
    srv_job_url(job_id, loc, sizeof loc);
    snprintf(extra, sizeof extra, "{\"job\":\"%s\"}", loc);
    return srv_error(s, r, rc, rc == TH_ERR_COMPILE ? "build_failed" : "build_cancelled", extra, "%s", why);
  }
  if (rc == TH_ERR_TOO_LARGE || rc == TH_ERR_NO_SPACE) return srv_guard_error(s, r, rc, NULL, why);
  if (rc != TH_OK)
    return srv_error(s, r, rc,
                     rc == TH_ERR_UNSUPPORTED ? "framework_unavailable"
                     : rc == TH_ERR_NO_DEVICE ? "no_device"
                     : rc == TH_ERR_BUSY      ? "queue_full"
                                              : "store_error",
                     NULL, "%s", why);

  if (wait > 0) {
    double now = th_now_mono();
    if (!r->wait_deadline)
      srv_suspend(s, r, (double)wait, job_id);
    else if (now < r->wait_deadline)
      srv_suspend(s, r, r->wait_deadline - now, job_id);
    if (r->suspended) return MHD_YES;
  }
  return srv__job_pending(s, r, key, job_id, created);
}

/* the cache key holds the key's fields as text: each within its array, the batch in 11 characters */
_Static_assert(sizeof(store_key) + 16 < sizeof(((srv_t *)0)->cache[0].key),
               "manifest cache key too short");

/* The cache slot of a key (a direct-mapped table keyed by a string hash). */
static struct srv_manifest_entry *srv__cache_slot(srv_t *s, const char *ck) {
  uint64_t h = 1469598103934665603ULL;
  for (const char *p = ck; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ULL;
  return &s->cache[h % (sizeof s->cache / sizeof s->cache[0])];
}

static enum MHD_Result srv__manifest_send(srv_t *s, srv_request *r, const char *etag,
                                          const char *manifest, size_t len) {
  const char *inm = MHD_lookup_connection_value(r->con, MHD_HEADER_KIND, "If-None-Match");
  struct MHD_Response *resp;
  unsigned int status = 200;
  if (srv_etag_matches(inm, etag)) {
    resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    status = 304;
  } else {
    resp = MHD_create_response_from_buffer(len, (void *)manifest, MHD_RESPMEM_MUST_COPY);
    if (resp) MHD_add_response_header(resp, "Content-Type", "application/json");
  }
  if (!resp) return MHD_NO;
  MHD_add_response_header(resp, "ETag", etag);
  MHD_add_response_header(resp, "Cache-Control", "no-cache");
  return srv_queue(s, r, status, resp);
}

static enum MHD_Result srv__manifest(srv_t *s, srv_request *r, const store_key *key) {
  char alias[80];
  int has_alias = srv_query(r, "alias", alias, sizeof alias);
  if (has_alias < 0) return srv_error(s, r, TH_ERR_INVALID, "invalid_alias", NULL, "%s", srv_alias_rule);
  if (has_alias > 0) { /* the pinned version's manifest; the cache holds only the newest version's */
    store_model am;
    enum MHD_Result ret;
    if (!srv_alias_resolve(s, r, key, alias, &am, &ret)) return ret;
    char etag[80];
    snprintf(etag, sizeof etag, "\"sha256:%s\"", am.tar_digest);
    ret = srv__manifest_send(s, r, etag, am.manifest, strlen(am.manifest));
    store_model_clear(&am);
    return ret;
  }
  /* every field of the key: two keys that differ only in target, compiler or precision have their
   * own manifests and ETags */
  char ck[sizeof s->cache[0].key];
  snprintf(ck, sizeof ck, "%s/%s/%d/%s/%s/%s/%s", key->framework, key->network, key->batch,
           key->target, key->compiler_version, store_key_precision(key), key->net_digest);
  pthread_mutex_lock(&s->cache_mu);
  struct srv_manifest_entry *e = srv__cache_slot(s, ck);
  if (e->manifest && e->gen == s->cache_gen && strcmp(e->key, ck) == 0) {
    enum MHD_Result ret = srv__manifest_send(s, r, e->etag, e->manifest, e->len);
    pthread_mutex_unlock(&s->cache_mu);
    return ret;
  }
  uint64_t gen = s->cache_gen;
  pthread_mutex_unlock(&s->cache_mu);

  store_model m;
  th_status rc = store_model_get(s->st, key, 0, &m);
  if (rc == TH_ERR_NOT_FOUND)
    return srv_error(s, r, TH_ERR_NOT_FOUND, "not_built", NULL,
                     "%s/%s/%d has no published version yet; GET /models/%s/%s/%d builds it",
                     key->framework, key->network, key->batch, key->framework, key->network,
                     key->batch);
  if (rc != TH_OK) return srv_error(s, r, rc, "store_error", NULL, "%s", store_errmsg(s->st));
  char etag[80];
  snprintf(etag, sizeof etag, "\"sha256:%s\"", m.tar_digest);
  size_t len = strlen(m.manifest);
  enum MHD_Result ret = srv__manifest_send(s, r, etag, m.manifest, len);
  pthread_mutex_lock(&s->cache_mu);
  if (gen == s->cache_gen) { /* nothing was published meanwhile: keep it */
    e = srv__cache_slot(s, ck);
    free(e->manifest);
    e->manifest = m.manifest;
    m.manifest = NULL;
    e->len = len;
    e->gen = gen;
    snprintf(e->key, sizeof e->key, "%s", ck);
    snprintf(e->etag, sizeof e->etag, "%s", etag);
  }
  pthread_mutex_unlock(&s->cache_mu);
  store_model_clear(&m);
  return ret;
}

static enum MHD_Result srv__tune(srv_t *s, srv_request *r, const store_key *key) {
  char dwhy[512];
  if (!srv_target_tunable(s, key, dwhy, sizeof dwhy))
    return srv_error(s, r, TH_ERR_NO_DEVICE, "target_not_tunable", NULL, "%s; nothing was queued", dwhy);
  if (srv__lacks_device(key->framework, dwhy, sizeof dwhy) && !srv__fleet_measures(s, key))
    return srv_error(s, r, TH_ERR_NO_DEVICE, "no_device", NULL,
                     "tuning cuda needs a worker with a CUDA device, and this server has none (%s); nothing "
                     "was queued", dwhy);
  json_t *body = NULL;
  const char *bad = NULL;
  char msg[256];
  if (srv_tune_body_check(r->body.data, r->body.len, &body, &bad, msg, sizeof msg) < 0)
    return srv_error(s, r, TH_ERR_INVALID, "invalid_body", NULL,
                     "the body must be a JSON object such as {\"trials\": 64, \"tuner\": \"xgb\"}");
  if (bad) {
    enum MHD_Result e = srv_error(s, r, TH_ERR_INVALID, "invalid_option", NULL, "invalid option '%s': %s", bad, msg);
    json_decref(body);
    return e;
  }
  char why[1024];
  if (!s->builder->supports(s->builder->self, key->framework, why, sizeof why)) {
    json_decref(body);
    return srv_error(s, r, TH_ERR_UNSUPPORTED, "framework_unavailable", NULL, "%s", why);
  }
  th_status grc = srv_guard_space(s, 0, "a tuning job", why, sizeof why);
  if (grc == TH_OK) grc = srv_guard_footprint(s, key, why, sizeof why);
  if (grc != TH_OK) {
    json_decref(body);
    return srv_guard_error(s, r, grc, "store_error", why);
  }
  int priority = (int)json_integer_value(json_object_get(body, "priority"));
  char *options = json_dumps(body, JSON_COMPACT);
  json_decref(body);
  if (!options) return srv_error(s, r, TH_ERR_NOMEM, "out_of_memory", NULL, "out of memory");
  int64_t job_id = 0;
  int created = 0;
  th_status rc = store_job_enqueue_limited(s->st, key, "tune", options, priority, s->cfg.max_queued, &job_id,
                                           &created);
  /* a build job of this key still running (typically one that has just published, and `?wait=` has just
   * answered the client) is waited for a moment, so that "fetch, then tune" does not race its end */
  for (double t0 = th_now_mono(); rc == TH_ERR_CONFLICT && th_now_mono() - t0 < 1.0;) {
    usleep(25000);
    rc = store_job_enqueue_limited(s->st, key, "tune", options, priority, s->cfg.max_queued, &job_id, &created);
  }
  free(options);
  if (rc != TH_OK)
    return srv_error(s, r, rc,
                     rc == TH_ERR_BUSY ? "queue_full" : rc == TH_ERR_CONFLICT ? "build_running" : "store_error",
                     NULL, "%s", store_errmsg(s->st));
  if (created) tune_workers_notify(s->workers);
  json_t *job = srv__job_doc(s, job_id);
  json_t *doc = json_object();
  json_object_set_new(doc, "queued", json_boolean(created));
  json_object_set_new(doc, "job", job ? job : json_null());
  struct MHD_Response *resp = srv_json_response(doc);
  if (!resp) return srv_error(s, r, TH_ERR_NOMEM, "out_of_memory", NULL, "out of memory");
  char loc[64];
  srv_job_url(job_id, loc, sizeof loc);
  MHD_add_response_header(resp, "Location", loc);
  return srv_queue(s, r, 202, resp);
}

static enum MHD_Result srv__model_delete(srv_t *s, srv_request *r, const store_key *key) {
  int n = 0;
  th_status rc = store_model_delete(s->st, key, &n);
  pthread_mutex_lock(&s->cache_mu);
  s->cache_gen++;
  pthread_mutex_unlock(&s->cache_mu);
  if (rc == TH_ERR_NOT_FOUND)
    return srv_error(s, r, TH_ERR_NOT_FOUND, "not_found", NULL, "%s/%s/%d has no published version",
                     key->framework, key->network, key->batch);
  if (rc != TH_OK) return srv_error(s, r, rc, "store_error", NULL, "%s", store_errmsg(s->st));
  char body[128];
  snprintf(body, sizeof body, "{\"deleted_versions\":%d}", n);
  return srv_json(s, r, 200, body);
}

static enum MHD_Result srv__blob(srv_t *s, srv_request *r, const char *ref) {
  if (strncmp(ref, "sha256:", 7) != 0 || !th_is_sha256_hex(ref + 7))
    return srv_error(s, r, TH_ERR_INVALID, "invalid_digest", NULL,
                     "a blob reference is sha256: followed by 64 lowercase hex digits");
  char path[1400], media[64];
  int64_t size = 0;
  th_status rc = store_artifact_path(s->st, ref + 7, path, sizeof path, &size, media, sizeof media);
  if (rc == TH_ERR_NOT_FOUND)
    return srv_error(s, r, TH_ERR_NOT_FOUND, "blob_unknown", NULL, "no blob %s", ref);
  if (rc != TH_OK) return srv_error(s, r, rc, "store_error", NULL, "%s", store_errmsg(s->st));
  /* an uploaded network's ONNX file holds its owner's weights: a daemon with tokens serves it to a
   * read token only, open or --private (a daemon without tokens has no one to tell apart, and took
   * no upload) */
  enum MHD_Result ret;
  if (s->have_token && strstr(media, "onnx") && !srv_authorized(s, r, SRV_SCOPE_READ, &ret))
    return ret;
  char filename[96];
  snprintf(filename, sizeof filename, "%.19s%s", ref + 7,
           strstr(media, "tar") ? ".tar" : strstr(media, "sharedlib") ? ".so" : strstr(media, "onnx") ? ".onnx" : "");
  return srv_send_file(s, r, path, size, ref + 7, media, filename, 1, NULL);
}

static enum MHD_Result srv__catalog(srv_t *s, srv_request *r) {
  char fw[32] = "", net[80] = "", state[32] = "";
  int hf = srv_query(r, "framework", fw, sizeof fw), hn = srv_query(r, "network", net, sizeof net),
      hs = srv_query(r, "state", state, sizeof state);
  if (hf < 0 || hn < 0 || hs < 0)
    return srv_error(s, r, TH_ERR_INVALID, "invalid_query", NULL, "malformed query string");
  char fwhy[160], valid[128];
  if (hf > 0 && fw[0] && !tc_backend_find(fw, fwhy, sizeof fwhy))
    return srv_error(s, r, TH_ERR_INVALID, "unknown_framework",
                     srv_frameworks_valid(valid, sizeof valid), "%s", fwhy);
  if (hs > 0 && state[0] && strcmp(state, "ready") && strcmp(state, "building") &&
      strcmp(state, "failed"))
    return srv_error(s, r, TH_ERR_INVALID, "invalid_state", "{\"valid\":[\"ready\",\"building\",\"failed\"]}",
                     "invalid state '%s'; valid states: ready, building, failed", state);
  char pq[16] = "";
  tc_precision want_prec = TC_PRECISION_FP32;
  int hp = srv_query(r, "precision", pq, sizeof pq);
  if (hp < 0 || (hp > 0 && pq[0] && tc_precision_parse(pq, &want_prec) != TH_OK))
    return srv_error(s, r, TH_ERR_INVALID, "invalid_precision", SRV__PRECISIONS,
                     "invalid precision '%s'; valid precisions: fp32, tf32", hp < 0 ? "" : pq);
  char digest[65];
  th_status nrc;
  if (hn > 0 && net[0] && !srv__network_known(s, net, digest, &nrc))
    return srv__unknown_network(s, r, net, nrc, TH_ERR_INVALID);
  store_catalog_row *rows = NULL;
  size_t n = 0;
  th_status rc = store_catalog(s->st, fw[0] ? fw : NULL, net[0] ? net : NULL, state[0] ? state : NULL, &rows, &n);
  if (rc != TH_OK) return srv_error(s, r, rc, "store_error", NULL, "%s", store_errmsg(s->st));
  json_t *doc = srv_present_catalog(rows, n);
  store_catalog_free(rows, n);
  /* ?target=NAME: the models built for that target (a CPU name, x86-64-vN, sm_XX; native: this server's);
   * ?precision=P: the models of that precision */
  char tq[96] = "";
  int ht = srv_query(r, "target", tq, sizeof tq) > 0 && tq[0];
  if (doc && (ht || (hp > 0 && pq[0]))) {
    json_t *models = json_object_get(doc, "models");
    for (size_t i = json_array_size(models); i-- > 0;) {
      const char *t = json_string_value(json_object_get(json_array_get(models, i), "target"));
      const char *fwm = json_string_value(json_object_get(json_array_get(models, i), "framework"));
      const char *pm = json_string_value(json_object_get(json_array_get(models, i), "precision"));
      int fi = fwm ? srv__backend_index(fwm) : -1;
      char abuf[96];
      const char *arch = t ? tc_backend_target_arch(t, abuf, sizeof abuf) : NULL;
      int keep = !ht || (t && (!strcmp(tq, "native") ? fi >= 0 && !strcmp(t, s->targets[fi])
                                                      : arch && !strcmp(arch, tq)));
      if (hp > 0 && pq[0]) keep = keep && pm && !strcmp(pm, tc_precision_name(want_prec));
      if (!keep) json_array_remove(models, i);
    }
    json_object_set_new(doc, "count", json_integer((json_int_t)json_array_size(models)));
  }
  return srv_json_doc(s, r, 200, doc);
}

/* GET .../versions: every published version of a key, for the page's latency-per-version chart. */
static enum MHD_Result srv__versions(srv_t *s, srv_request *r, const store_key *key) {
  store_model *vs = NULL;
  size_t n = 0;
  th_status rc = store_model_versions(s->st, key, &vs, &n);
  if (rc == TH_ERR_NOT_FOUND)
    return srv_error(s, r, TH_ERR_NOT_FOUND, "not_found", NULL, "no published version of %s/%s/%d; GET /models/%s/%s/%d "
                     "builds it", key->framework, key->network, key->batch, key->framework, key->network,
                     key->batch);
  if (rc != TH_OK) return srv_error(s, r, rc, "store_error", NULL, "%s", store_errmsg(s->st));
  /* each version's manifest, for the spread of its timing rounds (a key has a handful of versions: retention) */
  for (size_t i = 0; rc == TH_OK && i < n; i++) {
    store_model full;
    rc = store_model_version(s->st, key, vs[i].version, &full);
    if (rc == TH_ERR_NOT_FOUND) { /* deleted since the list was read: shown without its spread */
      rc = TH_OK;
      continue;
    }
    if (rc == TH_OK) {
      vs[i].manifest = full.manifest;
      full.manifest = NULL;
      store_model_clear(&full);
    }
  }
  if (rc != TH_OK) {
    store_model_list_free(vs, n);
    return srv_error(s, r, rc, "store_error", NULL, "%s", store_errmsg(s->st));
  }
  store_alias *as = NULL;
  size_t na = 0;
  rc = store_alias_list(s->st, key, &as, &na);
  if (rc != TH_OK) {
    store_model_list_free(vs, n);
    return srv_error(s, r, rc, "store_error", NULL, "%s", store_errmsg(s->st));
  }
  json_t *doc = srv_present_versions(key, vs, n, as, na);
  store_model_list_free(vs, n);
  free(as);
  return srv_json_doc(s, r, 200, doc);
}

/* GET .../tuning: best GFLOPS against trials for each tunable task of the network, from the stored records
 * (shared by every job and network that tuned the same workload on this target). */
static enum MHD_Result srv__tuning(srv_t *s, srv_request *r, const store_key *key) {
  if (tc_backend_find(key->framework, NULL, 0) != tc_backend_default())
    return srv_error(
        s, r, TH_ERR_UNSUPPORTED, "not_supported", NULL,
        "tuning curves are kept for framework %s; %s has no tuning records on this server",
        tc_backend_name(tc_backend_default()), key->framework);
  char pts[16] = "";
  int64_t max_points = 200;
  if (srv_query(r, "points", pts, sizeof pts) > 0 &&
      (th_parse_i64(pts, &max_points) != TH_OK || max_points < 2 || max_points > 5000))
    return srv_error(s, r, TH_ERR_INVALID, "invalid_points", NULL, "points takes a whole number from 2 to 5000, got '%s'",
                     pts);
  tc_backend_target t;
  if (tc_backend_target_init(tc_backend_default(), NULL, &t, NULL, 0) != TH_OK)
    return srv_error(s, r, TH_ERR_INTERNAL, "target_error", NULL, "cannot read the host CPU target");
  char err[2048] = "";
  tune_net net;
  th_status rc = tune_net_resolve(s->st, key->network, key->net_digest, &net, err, sizeof err);
  if (rc != TH_OK) return srv_error(s, r, rc, rc == TH_ERR_NOT_FOUND ? "unknown_network" : "store_error", NULL, "%s", err);
  tune_curve c;
  rc = tune_curve_get(s->st, &t, key->target, &net.src, key->batch, (int)max_points, &c, err, sizeof err);
  tune_net_free(&net);
  if (rc != TH_OK) return srv_error(s, r, rc, "store_error", NULL, "%s", err);
  json_t *doc = srv_present_curve(&c);
  tune_curve_free(&c);
  return srv_json_doc(s, r, 200, doc);
}

/* ---- the table's handlers (route_table.h) ---- */

enum MHD_Result srv_route_model(srv_t *s, srv_request *r, const srv_route_args *a) {
  return srv__model_get(s, r, a->key);
}

enum MHD_Result srv_route_manifest(srv_t *s, srv_request *r, const srv_route_args *a) {
  return srv__manifest(s, r, a->key);
}

enum MHD_Result srv_route_tune(srv_t *s, srv_request *r, const srv_route_args *a) {
  return srv__tune(s, r, a->key);
}

enum MHD_Result srv_route_model_delete(srv_t *s, srv_request *r, const srv_route_args *a) {
  return srv__model_delete(s, r, a->key);
}

enum MHD_Result srv_route_versions(srv_t *s, srv_request *r, const srv_route_args *a) {
  return srv__versions(s, r, a->key);
}

enum MHD_Result srv_route_tuning(srv_t *s, srv_request *r, const srv_route_args *a) {
  return srv__tuning(s, r, a->key);
}

enum MHD_Result srv_route_catalog(srv_t *s, srv_request *r, const srv_route_args *a) {
  (void)a;
  return srv__catalog(s, r);
}

enum MHD_Result srv_route_blob(srv_t *s, srv_request *r, const srv_route_args *a) {
  return srv__blob(s, r, a->seg[1]);
}
