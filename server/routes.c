/* Routes of the registry API (see README.md, "HTTP API"; the /networks routes are networks.c's). Every path is
 * validated before anything is written to the store (an uploaded network's name is looked up in it): a bad
 * framework, network, batch or path gets a 4xx that lists the valid values, and nothing is queued.
 * Error statuses come from the th_status table (srv_error); the few that are no th_status's error (405, 414,
 * a 503 while the store does not answer) and the non-errors (202, 304, 503 while building) are explicit. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "routes.h"

#include "aliases.h"
#include "builder.h"
#include "events.h"
#include "gc.h"
#include "guard.h"
#include "srv_limits.h"
#include "longpoll.h"
#include "networks.h"
#include "oci.h"
#include "present.h"
#include "request.h"
#include "response.h"
#include "th_log.h"
#include "th_sha256.h"
#include "backend.h"
#include "target.h"
#include "tc.h"
#include "th_util.h"
#include "tune_net.h"
#include "tune_report.h"
#include "zoo.h"

/* The error detail of a refused precision: the values ?precision= takes. */
#define SRV__PRECISIONS "{\"valid\":[\"fp32\",\"tf32\"]}"

/* The index of a framework's backend in tc_backend_at order (s->targets), or -1. */
static int srv__backend_index(const char *fw) {
  const tc_backend *b = tc_backend_find(fw, NULL, 0);
  for (int i = 0; b && tc_backend_at(i); i++)
    if (tc_backend_at(i) == b) return i;
  return -1;
}

/* Whether work on this framework needs a device this server lacks (why gets the reason). */
static int srv__lacks_device(const char *fw, char *why, size_t n) {
  const tc_backend *b = tc_backend_find(fw, NULL, 0);
  return b && tc_backend_measure_kind(b) == TC_MEASURE_DEVICE && !tune_device(b, NULL, 0, NULL, 0, why, n);
}

/* ---- start-up: the network list ---- */

th_status srv_routes_init(srv_t *s, char *err, size_t n) {
  snprintf(s->compiler_version, sizeof s->compiler_version, "%s", TH_VERSION);
  for (int i = 0; i < 4 && tc_backend_at(i); i++)
    if (tune_target_for(tc_backend_name(tc_backend_at(i)), s->targets[i], sizeof s->targets[i]) != TH_OK) {
      snprintf(err, n, "cannot determine this machine's targets (LLVM has no native target?)");
      return TH_ERR_INTERNAL;
    }
  json_t *arr = json_array();
  for (size_t i = 0; i < tc_zoo_count(); i++) {
    const tc_zoo_entry *e = tc_zoo_at(i);
    json_t *o = NULL;
    if (srv_present_network(e->name, &o) != TH_OK) {
      snprintf(err, n, "cannot describe network %s", e->name);
      json_decref(arr);
      return TH_ERR_INTERNAL;
    }
    json_array_append_new(arr, o);
    char *shape_text = json_dumps(json_object_get(o, "input"), JSON_COMPACT);
    if (shape_text)
      store_network_upsert(s->st, e->name, shape_text,
                           json_number_value(json_object_get(o, "flops")),
                           (int64_t)json_integer_value(json_object_get(o, "params")));
    free(shape_text);
  }
  json_t *root = json_object();
  json_object_set_new(root, "count", json_integer((json_int_t)json_array_size(arr)));
  json_object_set_new(root, "networks", arr);
  s->networks_json = json_dumps(root, JSON_COMPACT);
  json_decref(root);
  return s->networks_json ? TH_OK : TH_ERR_NOMEM;
}

/* ---- validation ---- */

/* {"valid": [every network's name]}: the zoo's, then the uploaded ones. */
static char *srv__names_json(srv_t *s) {
  json_t *arr = json_array();
  for (size_t i = 0; i < tc_zoo_count(); i++) json_array_append_new(arr, json_string(tc_zoo_at(i)->name));
  store_network *nets = NULL;
  size_t n = 0;
  if (store_network_list(s->st, "onnx", &nets, &n) == TH_OK) {
    for (size_t i = 0; i < n; i++) json_array_append_new(arr, json_string(nets[i].name));
    store_network_list_free(nets, n);
  }
  json_t *o = json_object();
  json_object_set_new(o, "valid", arr);
  char *t = json_dumps(o, JSON_COMPACT);
  json_decref(o);
  return t;
}

/* The revision of network net into digest ("" for a zoo network): 1 when net is a zoo or uploaded network, else
 * 0 with *rc TH_ERR_NOT_FOUND, or the store's error when it cannot say (its message on the handle). */
static int srv__network_known(srv_t *s, const char *net, char digest[65], th_status *rc) {
  digest[0] = '\0';
  *rc = TH_OK;
  if (tc_zoo_find(net)) return 1;
  store_network row;
  *rc = store_network_get(s->st, net, &row);
  if (*rc != TH_OK) return 0;
  int onnx = row.onnx;
  if (onnx) memcpy(digest, row.digest, 65);
  store_network_clear(&row);
  if (!onnx) *rc = TH_ERR_NOT_FOUND;
  return onnx;
}

/* Queues the 404 (or the store's error) for a network that is neither in the zoo nor uploaded. */
static enum MHD_Result srv__unknown_network(srv_t *s, srv_request *r, const char *net, th_status rc,
                                            th_status status) {
  if (rc != TH_OK && rc != TH_ERR_NOT_FOUND)
    return srv_error(s, r, rc, "store_error", NULL, "%s", store_errmsg(s->st));
  char names[2048];
  tune_net_names(s->st, names, sizeof names);
  char *valid = srv__names_json(s);
  enum MHD_Result ret = srv_error(s, r, status, "unknown_network", valid, "unknown network '%s'; valid networks: %s",
                                  net, names);
  free(valid);
  return ret;
}

/* Resolves (framework, network, batch) text into a key; on bad input queues the 4xx and returns 0. */
static int srv__key(srv_t *s, srv_request *r, const char *fw, const char *net, const char *batch,
                    store_key *key, enum MHD_Result *ret) {
  int64_t b = 0;
  int batch_ok = th_parse_i64(batch, &b) == TH_OK && b >= 1 && b <= s->cfg.max_batch;
  char why[2400], target[96] = "", precision[16] = "";
  if (srv_query(r, "target", target, sizeof target) < 0) {
    *ret = srv_error(s, r, TH_ERR_INVALID, "invalid_target", NULL, "malformed target in the query string");
    return 0;
  }
  if (srv_query(r, "precision", precision, sizeof precision) < 0) {
    *ret = srv_error(s, r, TH_ERR_INVALID, "invalid_precision", SRV__PRECISIONS, "malformed precision in the query "
                     "string; valid precisions: fp32, tf32");
    return 0;
  }
  th_status rc = srv_model_key(s, fw, net, batch_ok ? (int)b : 1, target, precision, key, why, sizeof why);
  if (rc != TH_OK && srv__backend_index(fw) < 0) {
    *ret = srv_error(s, r, rc, "unknown_framework", "{\"valid\":[\"llvm\",\"cuda\"]}", "%s", why);
    return 0;
  }
  if (rc == TH_ERR_NOT_FOUND) {
    *ret = srv__unknown_network(s, r, net, rc, TH_ERR_NOT_FOUND);
    return 0;
  }
  if (rc == TH_ERR_UNSUPPORTED) { /* a 400 that lists the valid targets */
    *ret = srv_error(s, r, TH_ERR_INVALID, "invalid_target", NULL, "%s", why);
    return 0;
  }
  if (rc == TH_ERR_INVALID) { /* the batch was given as valid: the precision, with why it cannot be */
    *ret = srv_error(s, r, TH_ERR_INVALID, "invalid_precision", SRV__PRECISIONS, "%s", why);
    return 0;
  }
  if (rc != TH_OK) {
    *ret = srv_error(s, r, rc, "store_error", NULL, "%s", why);
    return 0;
  }
  if (!batch_ok) {
    char extra[128];
    snprintf(extra, sizeof extra, "{\"valid\":{\"min\":1,\"max\":%d}}", s->cfg.max_batch);
    *ret = srv_error(s, r, TH_ERR_INVALID, "invalid_batch", extra,
                     "invalid batch '%s'; the batch is a whole number from 1 to %d", batch, s->cfg.max_batch);
    return 0;
  }
  return 1;
}

th_status srv_model_key(srv_t *s, const char *fw, const char *net, int batch, const char *target,
                        const char *precision, store_key *key, char *why, size_t n) {
  int fw_index = srv__backend_index(fw);
  if (fw_index < 0 || fw_index >= 4) {
    snprintf(why, n, "unknown framework '%s'; valid frameworks: llvm (CPU), cuda (NVIDIA GPU)", fw);
    return TH_ERR_NOT_FOUND;
  }
  char digest[65];
  th_status nrc;
  if (!srv__network_known(s, net, digest, &nrc)) {
    if (nrc != TH_OK && nrc != TH_ERR_NOT_FOUND) {
      snprintf(why, n, "%s", store_errmsg(s->st));
      return nrc;
    }
    char names[2048];
    tune_net_names(s->st, names, sizeof names);
    snprintf(why, n, "unknown network '%s'; valid networks: %s", net, names);
    return TH_ERR_NOT_FOUND;
  }
  if (batch < 1 || batch > s->cfg.max_batch) {
    snprintf(why, n, "invalid batch %d; the batch is a whole number from 1 to %d", batch, s->cfg.max_batch);
    return TH_ERR_INVALID;
  }
  /* the concrete target: this server's own unless the client names another (normalised by the backend) */
  char concrete[256];
  snprintf(concrete, sizeof concrete, "%s", s->targets[fw_index]);
  if (target && *target && strcmp(target, "native") != 0) {
    tc_backend_target bt;
    char terr[2048] = "";
    if (tc_backend_target_init(tc_backend_at(fw_index), target, &bt, terr, sizeof terr) != TH_OK) {
      snprintf(why, n, "invalid target '%s' for %s: %s", target, fw, terr[0] ? terr : "unknown");
      return TH_ERR_UNSUPPORTED;
    }
    snprintf(concrete, sizeof concrete, "%s", bt.str);
  }
  tc_precision prec;
  if (tc_precision_check(fw, concrete, precision, &prec, why, n) != TH_OK) return TH_ERR_INVALID;
  memset(key, 0, sizeof *key);
  snprintf(key->precision, sizeof key->precision, "%s", tc_precision_name(prec));
  snprintf(key->framework, sizeof key->framework, "%.15s", fw);
  snprintf(key->network, sizeof key->network, "%.63s", net);
  memcpy(key->net_digest, digest, sizeof key->net_digest);
  key->batch = batch;
  snprintf(key->target, sizeof key->target, "%s", concrete);
  snprintf(key->compiler_version, sizeof key->compiler_version, "%s", s->compiler_version);
  return TH_OK;
}

void srv_target_suffix(srv_t *s, const store_key *key, char *out, size_t n) {
  int fw_index = srv__backend_index(key->framework);
  const char *eq = fw_index >= 0 && strcmp(key->target, s->targets[fw_index]) ? strchr(key->target, '=') : NULL;
  const char *p = store_key_precision(key);
  int fp32 = strcmp(p, "fp32") == 0;
  snprintf(out, n, "%s%.64s%s%s", eq ? "-" : "", eq ? eq + 1 : "", fp32 ? "" : "-", fp32 ? "" : p);
}

/* Whether a live worker of a shared store registered key's target (this daemon's own scheduler included, which
 * registers the targets this machine measures). */
static int srv__fleet_measures(srv_t *s, const store_key *key) {
  int live = 0;
  return store_shared(s->st) && store_worker_live(s->st, key->target, &live) == TH_OK && live > 0;
}

int srv_target_tunable(srv_t *s, const store_key *key, char *why, size_t n) {
  int fw_index = srv__backend_index(key->framework);
  if (fw_index < 0 || fw_index >= 4) return 0;
  if (srv__fleet_measures(s, key)) return 1;
  if (s->cfg.workers > 0 && strcmp(key->target, s->targets[fw_index]) == 0) return 1;
  if (store_shared(s->st))
    snprintf(why, n,
             "no live worker measures %s (a `tunehub worker --db ...` on a machine with that target registers it): "
             "the untuned cross-compiled build is served, and tuning waits for a worker with that target",
             key->target);
  else
    snprintf(why, n,
             "this server measures only its own %s target (%s), not %s: the untuned cross-compiled build is "
             "served, and tuning waits for a worker with that target",
             key->framework, s->targets[fw_index], key->target);
  return 0;
}

/* A 401 for a request without a usable token: WWW-Authenticate says the scheme and the scope (RFC
 * 6750). */
static enum MHD_Result srv__unauthorized(srv_t *s, srv_request *r, unsigned scope,
                                         const char *msg) {
  char www[96];
  snprintf(www, sizeof www, "Bearer realm=\"tunehub\", scope=\"%s\"", srv_scope_name(scope));
  json_t *extra = json_pack("{s:s}", "scope", srv_scope_name(scope));
  struct MHD_Response *resp = srv_error_response(401, "unauthorized", extra, msg);
  if (resp) MHD_add_response_header(resp, "WWW-Authenticate", www);
  return srv_queue(s, r, 401, resp);
}

int srv_authorized(srv_t *s, srv_request *r, unsigned scope, enum MHD_Result *ret) {
  char msg[512];
  if (!s->have_token) {
    snprintf(msg, sizeof msg,
             "this route changes the registry and needs a bearer token, but the daemon was started "
             "without --token-file, so it accepts no changes");
    *ret = srv__unauthorized(s, r, scope, msg);
    return 0;
  }
  int wait = 0;
  unsigned granted = srv_request_scopes(s, r, &wait);
  if (wait) {
    char ip[48], retry[16];
    srv_client_ip(r->con, ip, sizeof ip);
    snprintf(retry, sizeof retry, "%d", wait);
    snprintf(msg, sizeof msg,
             "%s presented more than %d wrong bearer tokens in a minute; its tokens are not "
             "checked for %d s (Retry-After)",
             ip, s->auth_fails.limit, wait);
    struct MHD_Response *resp =
        srv_error_response(429, "too_many_failed_authentications", NULL, msg);
    if (resp) MHD_add_response_header(resp, "Retry-After", retry);
    *ret = srv_queue(s, r, 429, resp);
    return 0;
  }
  if (!granted) {
    snprintf(
        msg, sizeof msg,
        "missing or wrong bearer token: %.16s %.200s needs a token with the scope %s (or one above "
        "it: read < tune < admin); send 'Authorization: Bearer <token>' with a token of the "
        "daemon's --token-file",
        r->method, r->path, srv_scope_name(scope));
    *ret = srv__unauthorized(s, r, scope, msg);
    return 0;
  }
  if ((granted & scope) != scope) {
    *ret = srv_error(s, r, TH_ERR_FORBIDDEN, "forbidden", NULL,
                     "this token has the scope %s; %s %s needs the scope %s (scopes are set per token in the "
                     "daemon's --token-file)",
                     srv_scope_name(granted), r->method, r->path, srv_scope_name(scope));
    return 0;
  }
  return 1;
}

/* ---- /models/{fw}/{net}/{batch} ---- */

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
  enum MHD_Result ret;
  if (!srv_authorized(s, r, SRV_SCOPE_TUNE, &ret)) return ret;
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
  enum MHD_Result ret;
  if (!srv_authorized(s, r, SRV_SCOPE_ADMIN, &ret)) return ret;
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

/* ---- other routes ---- */

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
  if (hf > 0 && fw[0] && !tc_backend_find(fw, NULL, 0))
    return srv_error(s, r, TH_ERR_INVALID, "unknown_framework", "{\"valid\":[\"llvm\",\"cuda\"]}",
                     "unknown framework '%s'; valid frameworks: llvm, cuda", fw);
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
      const char *eq = t ? strchr(t, '=') : NULL;
      int keep = !ht || (t && (!strcmp(tq, "native") ? fi >= 0 && !strcmp(t, s->targets[fi])
                                                      : eq && !strcmp(eq + 1, tq)));
      if (hp > 0 && pq[0]) keep = keep && pm && !strcmp(pm, tc_precision_name(want_prec));
      if (!keep) json_array_remove(models, i);
    }
    json_object_set_new(doc, "count", json_integer((json_int_t)json_array_size(models)));
  }
  return srv_json_doc(s, r, 200, doc);
}

static enum MHD_Result srv__jobs(srv_t *s, srv_request *r) {
  char state[32] = "", limit_s[16] = "";
  int hs = srv_query(r, "state", state, sizeof state);
  if (hs < 0) return srv_error(s, r, TH_ERR_INVALID, "invalid_query", NULL, "malformed query string");
  if (hs > 0 && state[0] && strcmp(state, "queued") && strcmp(state, "running") &&
      strcmp(state, "succeeded") && strcmp(state, "failed") && strcmp(state, "cancelled"))
    return srv_error(s, r, TH_ERR_INVALID, "invalid_state", NULL,
                     "invalid state '%s'; valid states: queued, running, succeeded, failed, cancelled",
                     state);
  int64_t limit = 100;
  if (srv_query(r, "limit", limit_s, sizeof limit_s) > 0 &&
      (th_parse_i64(limit_s, &limit) != TH_OK || limit < 1 || limit > 1000))
    return srv_error(s, r, TH_ERR_INVALID, "invalid_limit", NULL, "limit is a whole number from 1 to 1000");
  store_job *jobs = NULL;
  size_t n = 0;
  th_status rc = store_job_list(s->st, state[0] ? state : NULL, (int)limit, &jobs, &n);
  if (rc != TH_OK) return srv_error(s, r, rc, "store_error", NULL, "%s", store_errmsg(s->st));
  json_t *doc = srv_present_jobs(jobs, n);
  store_job_list_free(jobs, n);
  return srv_json_doc(s, r, 200, doc);
}

static enum MHD_Result srv__job(srv_t *s, srv_request *r, const char *id_s, int cancel) {
  int64_t id = 0;
  if (th_parse_i64(id_s, &id) != TH_OK || id < 1)
    return srv_error(s, r, TH_ERR_INVALID, "invalid_job_id", NULL, "a job id is a positive whole number");
  if (cancel) {
    enum MHD_Result ret;
    if (!srv_authorized(s, r, SRV_SCOPE_TUNE, &ret)) return ret;
    th_status rc = store_job_cancel(s->st, id);
    if (rc == TH_ERR_NOT_FOUND) return srv_error(s, r, TH_ERR_NOT_FOUND, "job_unknown", NULL, "no job %lld", (long long)id);
    if (rc == TH_ERR_CONFLICT) return srv_error(s, r, rc, "job_ended", NULL, "%s", store_errmsg(s->st));
    if (rc != TH_OK) return srv_error(s, r, rc, "store_error", NULL, "%s", store_errmsg(s->st));
    srv_job_event(s, id);
  }
  store_job j;
  th_status rc = store_job_get(s->st, id, &j);
  if (rc == TH_ERR_NOT_FOUND) return srv_error(s, r, TH_ERR_NOT_FOUND, "job_unknown", NULL, "no job %lld", (long long)id);
  if (rc != TH_OK) return srv_error(s, r, rc, "store_error", NULL, "%s", store_errmsg(s->st));
  json_t *doc = srv_present_job(&j);
  store_job_clear(&j);
  return srv_json_doc(s, r, cancel ? 202 : 200, doc);
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
    return srv_error(s, r, TH_ERR_UNSUPPORTED, "not_supported", NULL,
                     "tuning curves are kept for framework llvm; %s has no tuning records on this server",
                     key->framework);
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

/* The targets tuning can go ahead for, for framework fw: this daemon's own (when its scheduler runs jobs and it
 * can measure there), and on a shared store every target a live worker registered for fw. A new array. */
static json_t *srv__tunable_targets(srv_t *s, const char *fw, const char *own, int own_ok,
                                    const store_worker *ws, size_t nw) {
  json_t *out = json_array();
  if (own_ok && s->cfg.workers > 0) json_array_append_new(out, json_string(own));
  size_t fl = strlen(fw);
  for (size_t w = 0; w < nw; w++) {
    if (!ws[w].alive || !ws[w].targets) continue;
    json_t *ts = json_loads(ws[w].targets, 0, NULL);
    size_t k;
    json_t *v;
    json_array_foreach(ts, k, v) {
      const char *t = json_string_value(v);
      if (!t || strncmp(t, fw, fl) != 0 || t[fl] != ' ') continue;
      int seen = 0;
      size_t m;
      json_t *have;
      json_array_foreach(out, m, have) seen |= !strcmp(json_string_value(have), t);
      if (!seen) json_array_append_new(out, json_string(t));
    }
    json_decref(ts);
  }
  return out;
}

static enum MHD_Result srv__targets(srv_t *s, srv_request *r) {
  /* the fleet's live workers, whose targets tuning can go ahead for too (none on the embedded store) */
  store_worker *ws = NULL;
  size_t nw = 0;
  th_status wrc = store_shared(s->st) ? store_worker_list(s->st, &ws, &nw) : TH_OK;
  if (wrc != TH_OK) return srv_error(s, r, wrc, "store_error", NULL, "%s", store_errmsg(s->st));
  json_t *arr = json_array();
  for (int i = 0; i < 4 && tc_backend_at(i); i++) {
    const tc_backend *b = tc_backend_at(i);
    const char *fw = tc_backend_name(b);
    int on_device = tc_backend_measure_kind(b) == TC_MEASURE_DEVICE; /* a GPU, else the CPU timed in place */
    json_t *t = json_object();
    json_object_set_new(t, "framework", json_string(fw));
    json_object_set_new(t, "device", json_string(on_device ? "gpu" : "cpu"));
    json_object_set_new(t, "target", json_string(s->targets[i]));
    if (!on_device) json_object_set_new(t, "threads", json_integer(sysconf(_SC_NPROCESSORS_ONLN)));
    char why[512] = "";
    int ok = s->builder->supports(s->builder->self, fw, why, sizeof why);
    json_object_set_new(t, "available", json_boolean(ok));
    if (on_device) {
      char name[256], arch[16], dwhy[256];
      int present = tune_device(b, name, sizeof name, arch, sizeof arch, dwhy, sizeof dwhy);
      json_object_set_new(t, "device_present", json_boolean(present));
      if (present) {
        json_object_set_new(t, "device_name", json_string(name));
        json_object_set_new(t, "arch", json_string(arch));
      }
    }
    if (on_device ? why[0] != '\0' : !ok) json_object_set_new(t, "reason", json_string(why));
    /* the targets a client may name with ?target= (native is this one), and those this server can tune */
    json_t *valid = json_array();
    json_array_append_new(valid, json_string("native"));
    if (on_device) {
      static const char *const archs[] = {"sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90"};
      for (size_t k = 0; k < sizeof archs / sizeof archs[0]; k++) json_array_append_new(valid, json_string(archs[k]));
    } else {
      for (size_t k = 0; tc_target_cpu_at(k); k++) json_array_append_new(valid, json_string(tc_target_cpu_at(k)));
    }
    json_object_set_new(t, "valid_targets", valid);
    const char *nat = strchr(s->targets[i], '=');
    json_object_set_new(t, "native", json_string(nat ? nat + 1 : s->targets[i]));
    int own_ok = !(on_device && !json_is_true(json_object_get(t, "device_present")));
    json_t *tunable = srv__tunable_targets(s, fw, s->targets[i], own_ok, ws, nw);
    /* a device target tunes where this daemon or a live worker measures it: tunable_targets */
    if (on_device) json_object_set_new(t, "tuning", json_boolean(json_array_size(tunable) > 0));
    json_object_set_new(t, "tunable_targets", tunable);
    json_array_append_new(arr, t);
  }
  store_worker_list_free(ws, nw);
  json_t *root = json_object();
  json_object_set_new(root, "targets", arr);
  json_object_set_new(root, "compiler_version", json_string(s->compiler_version));
  return srv_json_doc(s, r, 200, root);
}

/* GET /workers: the fleet (every registered worker, alive ones first, with the jobs each runs). */
static enum MHD_Result srv__workers(srv_t *s, srv_request *r) {
  store_worker *ws = NULL;
  size_t n = 0;
  th_status rc = store_worker_list(s->st, &ws, &n);
  if (rc != TH_OK) return srv_error(s, r, rc, "store_error", NULL, "%s", store_errmsg(s->st));
  /* host names and data directories are for token holders only */
  json_t *doc = srv_present_workers(ws, n, (srv_request_scopes(s, r, NULL) & SRV_SCOPE_READ) != 0);
  store_worker_list_free(ws, n);
  if (!doc) return srv_error(s, r, TH_ERR_NOMEM, "out_of_memory", NULL, "out of memory");
  json_object_set_new(doc, "shared", json_boolean(store_shared(s->st)));
  return srv_json_doc(s, r, 200, doc);
}

/* A Prometheus label value: backslash, double quote and newline escaped. */
static void srv__label(const char *v, char *out, size_t n) {
  size_t k = 0;
  for (; *v && k + 3 < n; v++) {
    if (*v == '\\' || *v == '"' || *v == '\n') out[k++] = '\\';
    out[k++] = *v == '\n' ? 'n' : *v;
  }
  out[k] = '\0';
}

/* The fleet's gauges: queued jobs and live workers per concrete target. */
static void srv__metrics_fleet(srv_t *s, th_buf *b) {
  static const struct {
    const char *name, *help;
    size_t field;
  } gauges[] = {
      {"tunehub_queue_depth", "Queued jobs by the target of their key.", offsetof(store_target_stat, queued)},
      {"tunehub_queue_waiting_for_target", "Queued jobs handed back to wait for a worker with their target.",
       offsetof(store_target_stat, waiting)},
      {"tunehub_workers_alive", "Live workers (heartbeat within their lease) that measure the target.",
       offsetof(store_target_stat, workers_alive)},
  };
  store_target_stat *ts = NULL;
  size_t n = 0;
  if (store_target_stats(s->st, &ts, &n) != TH_OK) return;
  for (size_t g = 0; g < sizeof gauges / sizeof gauges[0]; g++) {
    th_buf_appendf(b, "# HELP %s %s\n# TYPE %s gauge\n", gauges[g].name, gauges[g].help, gauges[g].name);
    for (size_t i = 0; i < n; i++) {
      char t[600];
      int64_t v;
      memcpy(&v, (const char *)&ts[i] + gauges[g].field, sizeof v);
      srv__label(ts[i].target, t, sizeof t);
      th_buf_appendf(b, "%s{target=\"%s\"} %lld\n", gauges[g].name, t, (long long)v);
    }
  }
  free(ts);
}

static enum MHD_Result srv__metrics(srv_t *s, srv_request *r) {
  th_buf b;
  th_buf_init(&b, 1 << 20);
  th_buf_appendf(&b,
                 "# HELP tunehub_http_requests_total HTTP responses by route and status.\n"
                 "# TYPE tunehub_http_requests_total counter\n");
  pthread_mutex_lock(&s->metrics_mu);
  for (int i = 0; i < SRV_ROUTE_COUNT; i++)
    for (int j = 0; j < s->nstatus; j++)
      if (s->requests[i][j])
        th_buf_appendf(&b, "tunehub_http_requests_total{route=\"%s\",status=\"%d\"} %lld\n",
                       srv_route_names[i], s->status_codes[j], (long long)s->requests[i][j]);
  int64_t bytes = s->bytes_served;
  pthread_mutex_unlock(&s->metrics_mu);
  th_buf_appendf(&b,
                 "# HELP tunehub_artifact_bytes_served_total Bytes of artifact bodies sent (bundle, .so "
                 "and blob responses, ranges counted by their length).\n"
                 "# TYPE tunehub_artifact_bytes_served_total counter\n"
                 "tunehub_artifact_bytes_served_total %lld\n",
                 (long long)bytes);
  int64_t counts[5];
  if (store_job_counts(s->st, counts) == TH_OK) {
    th_buf_appendf(&b, "# HELP tunehub_jobs Jobs by state.\n# TYPE tunehub_jobs gauge\n");
    for (int i = 0; i < 5; i++)
      th_buf_appendf(&b, "tunehub_jobs{state=\"%s\"} %lld\n", store_job_state_str((store_job_state)i),
                     (long long)counts[i]);
  }
  th_buf_appendf(&b,
                 "# HELP tunehub_workers_busy Worker threads running a job.\n"
                 "# TYPE tunehub_workers_busy gauge\ntunehub_workers_busy %d\n"
                 "# HELP tunehub_uptime_seconds Seconds since the daemon started.\n"
                 "# TYPE tunehub_uptime_seconds gauge\ntunehub_uptime_seconds %.0f\n",
                 tune_workers_busy(s->workers), th_now_wall() - s->started_at);
  srv__metrics_fleet(s, &b);
  srv_gc_metrics(s, &b);
  srv_guard_metrics(s, &b);
  size_t len = b.len;
  struct MHD_Response *resp = srv_response_buffer(th_buf_steal(&b), len);
  if (!resp) return MHD_NO;
  MHD_add_response_header(resp, "Content-Type", "text/plain; version=0.0.4");
  return srv_queue(s, r, 200, resp);
}

static enum MHD_Result srv__web(srv_t *s, srv_request *r, const char *name) {
  static const struct {
    const char *ext, *type;
  } types[] = {{".html", "text/html; charset=utf-8"}, {".js", "text/javascript; charset=utf-8"},
               {".css", "text/css; charset=utf-8"},   {".svg", "image/svg+xml"},
               {".png", "image/png"},                 {".ico", "image/x-icon"},
               {".txt", "text/plain; charset=utf-8"}};
  const char *type = NULL;
  const char *dot = strrchr(name, '.');
  for (size_t i = 0; dot && i < sizeof types / sizeof types[0]; i++)
    if (!strcmp(dot, types[i].ext)) type = types[i].type;
  for (const char *p = name; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
          *p == '.' || *p == '-' || *p == '_'))
      type = NULL;
  if (!type || name[0] == '.')
    return srv_error(s, r, TH_ERR_NOT_FOUND, "not_found", NULL, "no such page or route: %s", r->path);
  char path[1400];
  snprintf(path, sizeof path, "%.1000s/%.128s", s->cfg.web_dir, name);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat sb;
  if (fd < 0 || fstat(fd, &sb) != 0) {
    if (fd >= 0) close(fd);
    return srv_error(s, r, TH_ERR_NOT_FOUND, "not_found", NULL, "no such page or route: %s", r->path);
  }
  struct MHD_Response *resp = srv_response_fd(fd, 0, (uint64_t)sb.st_size);
  if (!resp) return MHD_NO;
  MHD_add_response_header(resp, "Content-Type", type);
  MHD_add_response_header(resp, "Cache-Control", "no-cache");
  /* the page loads only its own script and style files and talks only to this origin; nothing inline runs */
  if (!strcmp(type, types[0].type))
    MHD_add_response_header(resp, "Content-Security-Policy",
                            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                            "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'");
  return srv_queue(s, r, 200, resp);
}

/* ---- the router ---- */

static enum MHD_Result srv__not_allowed(srv_t *s, srv_request *r, const char *allow) {
  char msg[2400];
  snprintf(msg, sizeof msg, "%s is not allowed on %s; allowed: %s", r->method, r->path, allow);
  struct MHD_Response *resp = srv_error_response(405, "method_not_allowed", NULL, msg);
  if (resp) MHD_add_response_header(resp, "Allow", allow);
  return srv_queue(s, r, 405, resp);
}

#define SRV__MAX_SEGS 8

enum MHD_Result srv_route(srv_t *s, srv_request *r) {
  const char *m = r->method;
  int get = !strcmp(m, "GET") || !strcmp(m, "HEAD");
  enum MHD_Result ret;
  /* the OCI distribution API answers its own errors (oci.c) */
  if (!strncmp(r->path, "/v2", 3) && (r->path[3] == '\0' || r->path[3] == '/')) {
    if (s->cfg.private_reads && !srv_authorized(s, r, SRV_SCOPE_READ, &ret)) return ret;
    return srv_oci_route(s, r);
  }
  /* split and decode the path; reject traversal and encoded separators before routing */
  char segs[SRV__MAX_SEGS][SRV_MAX_SEGMENT + 1];
  int nseg = 0;
  const char *p = r->path;
  if (*p != '/') return srv_error(s, r, TH_ERR_INVALID, "invalid_path", NULL, "the path must start with '/'");
  while (*p) {
    while (*p == '/') p++;
    if (!*p) break;
    const char *e = strchr(p, '/');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (nseg == SRV__MAX_SEGS)
      return srv_error(s, r, TH_ERR_NOT_FOUND, "not_found", NULL, "no such route: %s", r->path);
    if (len > SRV_MAX_SEGMENT)
      return srv_error_http(s, r, 414, "segment_too_long", NULL,
                       "a path segment is longer than %d characters", SRV_MAX_SEGMENT);
    if (srv_pct_decode(p, len, segs[nseg], sizeof segs[nseg]) < 0)
      return srv_error(s, r, TH_ERR_INVALID, "invalid_path", NULL,
                       "malformed path: bad percent-encoding, or an encoded '/', '\\\\' or NUL");
    if (!strcmp(segs[nseg], "..") || !strcmp(segs[nseg], "."))
      return srv_error(s, r, TH_ERR_INVALID, "invalid_path", NULL, "'.' and '..' are not allowed in paths");
    nseg++;
    p += len;
  }
#define SEG(i, lit) (nseg > (i) && !strcmp(segs[i], lit))
  /* --private: every read needs a read token but the liveness probes and the page's own files (a
   * name with an extension: index.html, app.js), which hold nothing of the registry; a change needs
   * its own scope anyway */
  int open_path =
      nseg == 0 || (nseg == 1 && (SEG(0, "healthz") || SEG(0, "readyz") || strchr(segs[0], '.')));
  if (s->cfg.private_reads && get && !open_path && !srv_authorized(s, r, SRV_SCOPE_READ, &ret))
    return ret;

  if (nseg == 0) {
    r->route = SRV_ROUTE_WEB;
    return get ? srv__web(s, r, "index.html") : srv__not_allowed(s, r, "GET, HEAD");
  }
  if (SEG(0, "models")) {
    if (nseg == 1) {
      r->route = SRV_ROUTE_CATALOG;
      return get ? srv__catalog(s, r) : srv__not_allowed(s, r, "GET, HEAD");
    }
    if ((nseg == 5 || nseg == 6) && SEG(4, "aliases")) { /* server/aliases.c */
      int put = !strcmp(m, "PUT"), del = !strcmp(m, "DELETE");
      r->route = put ? SRV_ROUTE_ALIAS_PUT : del ? SRV_ROUTE_ALIAS_DELETE : SRV_ROUTE_ALIASES;
      if (nseg == 5 ? !get : !(get || put || del))
        return srv__not_allowed(s, r, nseg == 5 ? "GET, HEAD" : "GET, HEAD, PUT, DELETE");
      store_key key;
      if (!srv__key(s, r, segs[1], segs[2], segs[3], &key, &ret)) return ret;
      return srv_aliases_route(s, r, &key, nseg == 6 ? segs[5] : NULL);
    }
    if (nseg < 4 || nseg > 5)
      return srv_error(s, r, TH_ERR_NOT_FOUND, "not_found", NULL,
                       "no such route: %s; models are at /models/{framework}/{network}/{batch}",
                       r->path);
    static const struct {
      const char *seg;
      int route;
    } subs[] = {{"manifest", SRV_ROUTE_MANIFEST},
                {"tune", SRV_ROUTE_TUNE},
                {"versions", SRV_ROUTE_VERSIONS},
                {"tuning", SRV_ROUTE_TUNING}};
    r->route = SRV_ROUTE_MODEL;
    for (size_t i = 0; nseg == 5 && i < sizeof subs / sizeof subs[0]; i++)
      if (!strcmp(segs[4], subs[i].seg)) r->route = subs[i].route;
    if (nseg == 5 && r->route == SRV_ROUTE_MODEL)
      return srv_error(s, r, TH_ERR_NOT_FOUND, "not_found", NULL,
                       "no such route: %s; valid: .../manifest, .../versions, .../aliases, .../tuning, .../tune",
                       r->path);
    int is_tune = r->route == SRV_ROUTE_TUNE;
    const char *allow = nseg == 4 ? "GET, HEAD, DELETE" : is_tune ? "POST" : "GET, HEAD";
    int ok = nseg == 4 ? (get || !strcmp(m, "DELETE")) : is_tune ? !strcmp(m, "POST") : get;
    if (!ok) return srv__not_allowed(s, r, allow);
    store_key key;
    if (!srv__key(s, r, segs[1], segs[2], segs[3], &key, &ret)) return ret;
    if (nseg == 4 && !strcmp(m, "DELETE")) {
      r->route = SRV_ROUTE_MODEL_DELETE;
      return srv__model_delete(s, r, &key);
    }
    if (nseg == 4) return srv__model_get(s, r, &key);
    if (r->route == SRV_ROUTE_MANIFEST) return srv__manifest(s, r, &key);
    if (r->route == SRV_ROUTE_VERSIONS) return srv__versions(s, r, &key);
    if (r->route == SRV_ROUTE_TUNING) return srv__tuning(s, r, &key);
    return srv__tune(s, r, &key);
  }
  if (SEG(0, "networks") && nseg == 2) { /* server/networks.c */
    r->route = SRV_ROUTE_NETWORK;
    return srv_networks_route(s, r, segs[1]);
  }
  if (SEG(0, "blobs") && nseg == 2) {
    r->route = SRV_ROUTE_BLOB;
    return get ? srv__blob(s, r, segs[1]) : srv__not_allowed(s, r, "GET, HEAD");
  }
  if (SEG(0, "jobs")) {
    if (nseg == 1) {
      r->route = SRV_ROUTE_JOBS;
      return get ? srv__jobs(s, r) : srv__not_allowed(s, r, "GET, HEAD");
    }
    if (nseg == 2) {
      int del = !strcmp(m, "DELETE");
      r->route = del ? SRV_ROUTE_JOB_CANCEL : SRV_ROUTE_JOB;
      if (!get && !del) return srv__not_allowed(s, r, "GET, HEAD, DELETE");
      return srv__job(s, r, segs[1], del);
    }
    if (nseg == 3 && SEG(2, "events")) { /* SSE: server/events.c */
      r->route = SRV_ROUTE_EVENTS;
      return !strcmp(m, "GET") ? srv_events_route(s, r, segs[1]) : srv__not_allowed(s, r, "GET");
    }
  }
  if (nseg == 1) {
    const char *allow = "GET, HEAD";
    if (SEG(0, "networks")) {
      r->route = SRV_ROUTE_NETWORKS;
      return get ? srv_networks_list(s, r) : srv__not_allowed(s, r, allow);
    }
    if (SEG(0, "targets")) {
      r->route = SRV_ROUTE_TARGETS;
      return get ? srv__targets(s, r) : srv__not_allowed(s, r, allow);
    }
    if (SEG(0, "healthz")) {
      r->route = SRV_ROUTE_HEALTHZ;
      return get ? srv_json(s, r, 200, "{\"status\":\"ok\"}") : srv__not_allowed(s, r, allow);
    }
    if (SEG(0, "readyz")) {
      r->route = SRV_ROUTE_READYZ;
      if (!get) return srv__not_allowed(s, r, allow);
      int64_t counts[5];
      if (store_job_counts(s->st, counts) != TH_OK)
        return srv_error_http(s, r, 503, "not_ready", NULL, "the store does not answer: %s",
                         store_errmsg(s->st));
      /* a low disk is reported, not a reason to leave the pool: published models are still served
       */
      json_t *doc = json_pack("{s:s}", "status", "ready");
      if (doc) srv_guard_readyz(s, doc);
      return srv_json_doc(s, r, 200, doc);
    }
    if (SEG(0, "workers")) {
      r->route = SRV_ROUTE_WORKERS;
      return get ? srv__workers(s, r) : srv__not_allowed(s, r, allow);
    }
    if (SEG(0, "scheduler")) { /* server/events.c */
      r->route = SRV_ROUTE_SCHEDULER;
      return get ? srv_scheduler_route(s, r) : srv__not_allowed(s, r, allow);
    }
    if (SEG(0, "metrics")) {
      r->route = SRV_ROUTE_METRICS;
      return get ? srv__metrics(s, r) : srv__not_allowed(s, r, allow);
    }
    r->route = SRV_ROUTE_WEB;
    return get ? srv__web(s, r, segs[0]) : srv__not_allowed(s, r, allow);
  }
  return srv_error(s, r, TH_ERR_NOT_FOUND, "not_found", NULL, "no such route: %s", r->path);
#undef SEG
}
