/* The daemon's own state: GET /targets (this machine's targets and what can be tuned where), /workers (the
 * fleet), /metrics (Prometheus text), and the probes /healthz and /readyz. */
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builder.h"
#include "gc.h"
#include "guard.h"
#include "present.h"
#include "response.h"
#include "srv_limits.h"
#include "tc/backend.h"
#include "tc/tc.h"
#include "th_util.h"

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
  for (int i = 0; i < TC_BACKEND_COUNT; i++) {
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
    for (int k = 0; tc_backend_target_name_at(b, k); k++)
      json_array_append_new(valid, json_string(tc_backend_target_name_at(b, k)));
    json_object_set_new(t, "valid_targets", valid);
    char nat[64];
    json_object_set_new(
        t, "native",
        json_string(tc_backend_target_arch(s->targets[i], nat, sizeof nat) ? nat : s->targets[i]));
    json_t *precisions = json_array(); /* the precisions the framework builds at (?precision=) */
    for (int p = 0; p < TC_PRECISION_COUNT; p++)
      if (tc_backend_has_precision(b, (tc_precision)p))
        json_array_append_new(precisions, json_string(tc_precision_name(p)));
    json_object_set_new(t, "precisions", precisions);
    /* GET .../tuning answers for the default backend's models only (srv__tuning) */
    json_object_set_new(t, "tuning_curve", json_boolean(b == tc_backend_default()));
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

/* ---- the table's handlers (route_table.h) ---- */

enum MHD_Result srv_route_targets(srv_t *s, srv_request *r, const srv_route_args *a) {
  (void)a;
  return srv__targets(s, r);
}

enum MHD_Result srv_route_workers(srv_t *s, srv_request *r, const srv_route_args *a) {
  (void)a;
  return srv__workers(s, r);
}

enum MHD_Result srv_route_metrics(srv_t *s, srv_request *r, const srv_route_args *a) {
  (void)a;
  return srv__metrics(s, r);
}

enum MHD_Result srv_route_healthz(srv_t *s, srv_request *r, const srv_route_args *a) {
  (void)a;
  return srv_json(s, r, 200, "{\"status\":\"ok\"}");
}

enum MHD_Result srv_route_readyz(srv_t *s, srv_request *r, const srv_route_args *a) {
  (void)a;
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
