/* The JSON documents of the HTTP API (see present.h and README.md, "HTTP API"). The field names and value forms
 * (ISO times, "sha256:" digests, null for what is unknown) are the API's contract with clients and the web page,
 * so they are spelled here once, not in the modules that own the data. */
#include "present.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tc/graph.h"
#include "tc/onnx.h"
#include "tc/zoo.h"
#include "th_alloc.h"
#include "th_sha256.h"
#include "th_util.h"
#include "tune_job.h"

void srv_job_url(int64_t id, char *out, size_t n) {
  snprintf(out, n, "/jobs/%lld", (long long)id);
}

/* An ISO time, or null when t is unset. */
static json_t *srv__time(double t) {
  if (t <= 0) return json_null();
  char iso[32];
  th_time_iso(t, iso, sizeof iso);
  return json_string(iso);
}

static json_t *srv__digest(const char *hex) {
  char d[TH_DIGEST_MAX];
  snprintf(d, sizeof d, "sha256:%s", hex);
  return json_string(d);
}

static json_t *srv__latency(double ms) {
  return ms < 0 ? json_null() : json_real(ms);
}

/* The spread of a version's timing, from its manifest's latency_ms: {min, max, rounds, runs_per_round,
 * isolated}, or null when unmeasured or timed before rounds were kept. */
static json_t *srv__latency_spread(const char *manifest) {
  json_t *m = manifest ? json_loads(manifest, 0, NULL) : NULL;
  json_t *lat = json_object_get(m, "latency_ms");
  json_t *out = json_null();
  if (json_is_number(json_object_get(lat, "min")) && json_is_number(json_object_get(lat, "max"))) {
    json_decref(out);
    out = json_pack("{s:O,s:O,s:O*,s:O*,s:b}", "min", json_object_get(lat, "min"), "max",
                    json_object_get(lat, "max"), "rounds", json_object_get(lat, "n"), "runs_per_round",
                    json_object_get(lat, "runs_per_round"), "isolated", json_is_true(json_object_get(lat, "isolated")));
  }
  json_decref(m);
  return out ? out : json_null();
}

/* A stored JSON object text as a value; {} when absent or unreadable. */
static json_t *srv__embedded(const char *text) {
  json_t *v = text ? json_loads(text, 0, NULL) : NULL;
  return v ? v : json_object();
}

/* The key's six fields into o, and the network's source (an uploaded network's keys carry its revision). */
static void srv__key_fields(json_t *o, const store_key *k) {
  json_object_set_new(o, "framework", json_string(k->framework));
  json_object_set_new(o, "network", json_string(k->network));
  json_object_set_new(o, "source", json_string(k->net_digest[0] ? "onnx" : "zoo"));
  json_object_set_new(o, "batch", json_integer(k->batch));
  json_object_set_new(o, "target", json_string(k->target));
  json_object_set_new(o, "compiler_version", json_string(k->compiler_version));
  json_object_set_new(o, "precision", json_string(store_key_precision(k)));
}

json_t *srv_present_job(const store_job *j) {
  json_t *o = json_object();
  if (!o) return NULL;
  json_object_set_new(o, "id", json_integer(j->id));
  srv__key_fields(o, &j->key);
  json_object_set_new(o, "kind", json_string(j->kind));
  json_object_set_new(o, "state", json_string(store_job_state_str(j->state)));
  json_object_set_new(o, "stage", json_string(j->stage));
  json_object_set_new(o, "priority", json_integer(j->priority));
  json_object_set_new(o, "attempts", json_integer(j->attempts));
  json_object_set_new(o, "cancel_requested", json_boolean(j->cancel_requested));
  json_object_set_new(o, "options", srv__embedded(j->options));
  json_object_set_new(o, "progress", srv__embedded(j->progress));
  json_object_set_new(o, "error", j->error ? json_string(j->error) : json_null());
  json_object_set_new(o, "created_at", srv__time(j->created_at));
  json_object_set_new(o, "started_at", srv__time(j->started_at));
  json_object_set_new(o, "finished_at", srv__time(j->finished_at));
  double end = j->finished_at > 0 ? j->finished_at : th_now_wall();
  json_object_set_new(o, "elapsed_s", j->started_at > 0 ? json_real(end - j->started_at) : json_null());
  /* the fleet: who runs it, until when its claim holds, and the target a claimer must have */
  json_object_set_new(o, "worker", j->worker[0] ? json_string(j->worker) : json_null());
  json_object_set_new(o, "lease_until", srv__time(j->lease_until));
  json_object_set_new(o, "needs_target", j->needs_target[0] ? json_string(j->needs_target) : json_null());
  char url[64];
  srv_job_url(j->id, url, sizeof url);
  json_object_set_new(o, "url", json_string(url));
  return o;
}

/* {"count": n, key: arr}; consumes arr. */
static json_t *srv__counted(const char *key, json_t *arr) {
  if (!arr) return NULL;
  json_t *root = json_object();
  if (!root) {
    json_decref(arr);
    return NULL;
  }
  json_object_set_new(root, "count", json_integer((json_int_t)json_array_size(arr)));
  json_object_set_new(root, key, arr);
  return root;
}

json_t *srv_present_jobs(const store_job *jobs, size_t n) {
  json_t *arr = json_array();
  for (size_t i = 0; arr && i < n; i++) json_array_append_new(arr, srv_present_job(&jobs[i]));
  return srv__counted("jobs", arr);
}

/* The label of a worker an anonymous client sees (srv_present_workers). */
static void srv__worker_label(const store_worker *w, char *out, size_t n) {
  size_t hl = strlen(w->host);
  if (!hl || strncmp(w->name, w->host, hl) != 0 || w->name[hl] != ':') { /* an operator's --name */
    snprintf(out, n, "%s", w->name);
    return;
  }
  th_sha256 h;
  unsigned char d[32];
  char hex[TH_HEX_MAX];
  th_sha256_init(&h);
  th_sha256_update(&h, w->name, strlen(w->name));
  th_sha256_final(&h, d);
  th_hex(d, 32, hex);
  snprintf(out, n, "worker-%.12s", hex);
}

json_t *srv_present_workers(const store_worker *ws, size_t n, int full) {
  json_t *arr = json_array();
  for (size_t i = 0; arr && i < n; i++) {
    const store_worker *w = &ws[i];
    json_t *o = json_object();
    char label[sizeof w->name];
    srv__worker_label(w, label, sizeof label);
    json_object_set_new(o, "name", json_string(full ? w->name : label));
    if (full) json_object_set_new(o, "host", json_string(w->host));
    json_t *targets = w->targets ? json_loads(w->targets, 0, NULL) : NULL;
    if (!json_is_array(targets)) {
      json_decref(targets);
      targets = json_array();
    }
    json_object_set_new(o, "targets", targets);
    json_object_set_new(o, "slots", json_integer(w->slots));
    json_object_set_new(o, "lease_s", json_real(w->lease_s));
    json_object_set_new(o, "alive", json_boolean(w->alive));
    json_object_set_new(o, "started_at", srv__time(w->started_at));
    json_object_set_new(o, "heartbeat_at", srv__time(w->heartbeat_at));
    json_object_set_new(o, "heartbeat_age_s", json_real(w->heartbeat_age_s));
    json_object_set_new(o, "stopped_at", srv__time(w->stopped_at));
    json_t *jobs = json_array();
    for (size_t k = 0; k < w->njobs; k++) {
      const store_worker_job *j = &w->jobs[k];
      json_t *jo = json_object();
      json_object_set_new(jo, "id", json_integer(j->id));
      srv__key_fields(jo, &j->key);
      json_object_set_new(jo, "kind", json_string(j->kind));
      json_object_set_new(jo, "attempt", json_integer(j->attempt));
      json_object_set_new(jo, "stage", json_string(j->stage));
      json_object_set_new(jo, "lease_left_s", json_real(j->lease_left_s));
      char url[64];
      srv_job_url(j->id, url, sizeof url);
      json_object_set_new(jo, "url", json_string(url));
      json_array_append_new(jobs, jo);
    }
    json_object_set_new(o, "jobs", jobs);
    json_array_append_new(arr, o);
  }
  return srv__counted("workers", arr);
}

json_t *srv_present_catalog(const store_catalog_row *rows, size_t n) {
  json_t *arr = json_array();
  for (size_t i = 0; arr && i < n; i++) {
    const store_catalog_row *c = &rows[i];
    json_t *o = json_object();
    srv__key_fields(o, &c->key);
    json_object_set_new(o, "state", json_string(store_catalog_state_str(c->state)));
    if (c->has_model) {
      const store_model *m = &c->model;
      json_object_set_new(o, "version", json_integer(m->version));
      json_object_set_new(o, "versions", json_integer(c->versions));
      json_object_set_new(o, "tuned", json_boolean(m->tuned));
      json_object_set_new(o, "digest", srv__digest(m->tar_digest));
      json_object_set_new(o, "so_digest", srv__digest(m->so_digest));
      json_object_set_new(o, "latency_ms", srv__latency(m->latency_ms));
      json_object_set_new(o, "published_at", srv__time(m->created_at));
      json_object_set_new(o, "size", json_integer(m->tar_size));
      json_object_set_new(o, "so_size", json_integer(m->so_size));
    }
    if (c->has_job) {
      json_t *job = json_object();
      json_object_set_new(job, "id", json_integer(c->job_id));
      json_object_set_new(job, "state", json_string(store_job_state_str(c->job_state)));
      json_object_set_new(job, "stage", json_string(c->job_stage));
      json_object_set_new(job, "error", c->job_error ? json_string(c->job_error) : json_null());
      json_object_set_new(o, "job", job);
    } else {
      json_object_set_new(o, "job", json_null());
    }
    json_array_append_new(arr, o);
  }
  return srv__counted("models", arr);
}

json_t *srv_present_alias(const store_alias *a) {
  char url[400], tag[200];
  /* a tf32 key's alias: ?precision=tf32 on its routes, "-tf32" after its OCI tag (oci.c) */
  int fp32 = strcmp(store_key_precision(&a->key), "fp32") == 0;
  snprintf(url, sizeof url, "/models/%s/%s/%d?alias=%s%s", a->key.framework, a->key.network, a->key.batch, a->name,
           fp32 ? "" : "&precision=tf32");
  snprintf(tag, sizeof tag, "%s/%s:%s%s", a->key.framework, a->key.network, a->name, fp32 ? "" : "-tf32");
  json_t *o = json_object();
  if (!o) return NULL;
  json_object_set_new(o, "alias", json_string(a->name));
  srv__key_fields(o, &a->key);
  json_object_set_new(o, "version", json_integer(a->version));
  json_object_set_new(o, "digest", srv__digest(a->tar_digest));
  json_object_set_new(o, "so_digest", srv__digest(a->so_digest));
  json_object_set_new(o, "retired", json_boolean(a->retired));
  json_object_set_new(o, "updated_at", srv__time(a->updated_at));
  json_object_set_new(o, "url", json_string(url));
  json_object_set_new(o, "oci", json_string(tag));
  return o;
}

/* The alias documents of as as an array (NULL when out of memory). */
static json_t *srv__alias_array(const store_alias *as, size_t n) {
  json_t *arr = json_array();
  for (size_t i = 0; arr && i < n; i++) json_array_append_new(arr, srv_present_alias(&as[i]));
  return arr;
}

json_t *srv_present_aliases(const store_key *key, const store_alias *as, size_t n) {
  json_t *arr = srv__alias_array(as, n);
  if (!arr) return NULL;
  return json_pack("{s:s,s:s,s:i,s:s,s:s,s:I,s:o}", "framework", key->framework, "network", key->network, "batch",
                   key->batch, "target", key->target, "precision", store_key_precision(key), "count", (json_int_t)n,
                   "aliases", arr);
}

json_t *srv_present_versions(const store_key *key, const store_model *versions, size_t n, const store_alias *as,
                             size_t nas) {
  json_t *arr = json_array();
  for (size_t i = 0; arr && i < n; i++) {
    const store_model *m = &versions[i];
    json_t *o = json_object();
    json_object_set_new(o, "version", json_integer(m->version));
    json_object_set_new(o, "tuned", json_boolean(m->tuned));
    json_object_set_new(o, "digest", srv__digest(m->tar_digest));
    json_object_set_new(o, "so_digest", srv__digest(m->so_digest));
    json_object_set_new(o, "latency_ms", srv__latency(m->latency_ms));
    json_object_set_new(o, "latency_spread_ms", srv__latency_spread(m->manifest));
    json_object_set_new(o, "job", m->job_id > 0 ? json_integer(m->job_id) : json_null());
    json_object_set_new(o, "published_at", srv__time(m->created_at));
    json_object_set_new(o, "size", json_integer(m->tar_size));
    json_object_set_new(o, "so_size", json_integer(m->so_size));
    json_t *names = json_array();
    for (size_t k = 0; names && k < nas; k++)
      if (as[k].version == m->version && !as[k].retired) json_array_append_new(names, json_string(as[k].name));
    json_object_set_new(o, "aliases", names ? names : json_null());
    json_array_append_new(arr, o);
  }
  json_t *aliases = srv__alias_array(as, nas);
  if (!arr || !aliases) {
    json_decref(arr);
    json_decref(aliases);
    return NULL;
  }
  return json_pack("{s:s,s:s,s:i,s:s,s:s,s:I,s:o,s:o}", "framework", key->framework, "network", key->network,
                   "batch", key->batch, "target", key->target, "precision", store_key_precision(key), "count",
                   (json_int_t)json_array_size(arr), "versions", arr, "aliases", aliases);
}

json_t *srv_present_curve(const tune_curve *c) {
  json_t *arr = json_array();
  for (int i = 0; arr && i < c->ntasks; i++) {
    const tune_curve_task *t = &c->tasks[i];
    json_t *pts = json_array();
    for (int64_t k = 0; pts && k < t->npoints; k++)
      json_array_append_new(pts, json_pack("[I,f]", (json_int_t)t->points[k].trial, t->points[k].best_gflops));
    json_t *o = json_pack("{s:i,s:s,s:s,s:i,s:f,s:I,s:I,s:f,s:o}", "task", t->task, "workload", t->workload,
                          "template", t->template_name, "count", t->count, "gflop", t->gflop, "trials",
                          (json_int_t)t->trials, "valid", (json_int_t)t->valid, "best_gflops", t->best_gflops,
                          "curve", pts);
    if (o) json_array_append_new(arr, o);
  }
  if (!arr) return NULL;
  return json_pack("{s:s,s:i,s:s,s:I,s:o}", "network", c->network, "batch", c->batch, "target", c->target,
                   "trials", (json_int_t)c->trials, "tasks", arr);
}

/* v as a JSON string appended to b. */
static th_status srv__json_str(th_buf *b, const char *v) {
  th_status rc = th_buf_append(b, "\"", 1);
  for (const char *c = v; rc == TH_OK && *c; c++) {
    if (*c == '"' || *c == '\\')
      rc = th_buf_appendf(b, "\\%c", *c);
    else if ((unsigned char)*c < 0x20)
      rc = th_buf_appendf(b, "\\u%04x", (unsigned char)*c);
    else
      rc = th_buf_append(b, c, 1);
  }
  if (rc == TH_OK) rc = th_buf_append(b, "\"", 1);
  return rc;
}

/* The tuning session's fields (no braces) appended to b. */
static th_status srv__session_fields(const tune_progress *pr, th_buf *b) {
  th_status rc = th_buf_appendf(b,
                                "\"tuner\":\"%s\",\"stage\":\"%s\",\"task\":%d,\"ntasks\":%d,"
                                "\"elapsed_s\":%.1f,\"eta_s\":%.1f,\"trials\":%lld,\"trials_total\":%lld,"
                                "\"tasks\":[",
                                pr->tuner, pr->stage, pr->current, pr->ntasks, pr->elapsed_s, pr->eta_s,
                                (long long)pr->trials_done, (long long)pr->trials_total);
  for (int i = 0; rc == TH_OK && i < pr->ntasks; i++) {
    const tune_task_progress *p = &pr->tasks[i];
    rc = th_buf_appendf(b, "%s{\"workload\":", i ? "," : "");
    if (rc == TH_OK) rc = srv__json_str(b, p->key);
    if (rc == TH_OK)
      rc = th_buf_appendf(b,
                          ",\"template\":\"%s\",\"weight\":%d,\"gflop\":%.4f,\"trials\":%lld,\"budget\":%lld,"
                          "\"best_gflops\":%.2f,\"verified_gflops\":%.2f,\"current_gflops\":%.2f,"
                          "\"best_ms\":%.6g,\"verified_ms\":%.6g,\"errors\":%lld,\"state\":\"%s\"",
                          p->template_name, p->weight, p->flops * 1e-9, (long long)p->trials, (long long)p->budget,
                          p->best_gflops, p->verified_gflops, p->current_gflops, p->best_s * 1e3,
                          p->verified_s * 1e3, (long long)p->errors, p->state);
    if (rc == TH_OK && p->msg[0]) {
      rc = th_buf_appendf(b, ",\"error\":");
      if (rc == TH_OK) rc = srv__json_str(b, p->msg);
    }
    if (rc == TH_OK) rc = th_buf_append(b, "}", 1);
  }
  if (rc == TH_OK) rc = th_buf_append(b, "]", 1);
  return rc;
}

th_status srv_present_progress(const tune_job_progress *p, th_buf *b) {
  th_status rc = th_buf_append(b, "{", 1);
  if (!p) return rc == TH_OK ? th_buf_append(b, "}", 1) : rc;
  const char *sep = "";
  if (rc == TH_OK && p->session) {
    rc = srv__session_fields(p->session, b);
    sep = ",";
  }
  if (rc == TH_OK && p->phase) {
    rc = th_buf_appendf(b, "%s\"phase\":", sep);
    if (rc == TH_OK) rc = srv__json_str(b, p->phase);
    sep = ",";
  }
  if (rc == TH_OK && p->has_build) {
    int done = p->build.done, total = p->build.total;
    json_t *o = json_pack("{s:s,s:i,s:i,s:f}", "stage", p->build.stage ? p->build.stage : "", "done", done,
                          "total", total, "fraction", total > 0 ? (double)done / total : 0.0);
    char *t = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    rc = t ? th_buf_appendf(b, "%s\"build\":%s", sep, t) : TH_ERR_NOMEM;
    free(t);
    sep = ",";
  }
  if (rc == TH_OK && p->tuning) {
    rc = th_buf_appendf(b, "%s\"tuning\":", sep);
    if (rc == TH_OK) rc = srv__json_str(b, p->tuning);
  }
  if (rc == TH_OK) rc = th_buf_append(b, "}", 1);
  return rc;
}

/* b's text as a malloc'd string (b is freed), or NULL when rc failed. */
static char *srv__buf_text(th_buf *b, th_status rc) {
  if (rc != TH_OK) {
    th_buf_free(b);
    return NULL;
  }
  return th_buf_steal(b);
}

char *srv_progress_doc(void *ctx, const tune_job_progress *p) {
  (void)ctx;
  th_buf b;
  th_buf_init(&b, 4 << 20);
  return srv__buf_text(&b, srv_present_progress(p, &b));
}

char *srv_present_event(const tune_event *ev) {
  json_t *o = NULL;
  switch (ev->kind) {
    case TUNE_EV_STAGE:
      o = json_pack("{s:I,s:s,s:s,s:i,s:i}", "job", (json_int_t)ev->job_id, "stage", ev->stage, "phase", ev->phase,
                    "task", ev->task, "ntasks", ev->ntasks);
      break;
    case TUNE_EV_PROGRESS:
      return th_strdup(ev->progress_doc ? ev->progress_doc : "{}");
    case TUNE_EV_PUBLISHED:
      o = json_pack("{s:I,s:i,s:b,s:o}", "job", (json_int_t)ev->job_id, "version", ev->version, "tuned",
                    ev->tuned, "digest", srv__digest(ev->digest));
      break;
    case TUNE_EV_DONE:
      o = json_pack("{s:I,s:s,s:o}", "job", (json_int_t)ev->job_id, "state", store_job_state_str(ev->state),
                    "error", ev->error ? json_string(ev->error) : json_null());
      break;
  }
  char *t = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  return t;
}

th_status srv_present_scheduler(const tune_sched_info *in, json_t *queue, th_buf *b) {
  th_status rc = th_buf_appendf(b, "{\"resources\":{\"cpu\":{\"total\":%d,\"busy\":%d},\"devices\":[",
                                in->cpu_total, in->cpu_busy);
  for (int i = 0; rc == TH_OK && i < in->ndevices; i++) {
    if (in->devices[i].busy)
      rc = th_buf_appendf(b, "%s{\"name\":\"%s\",\"holder\":%lld}", i ? "," : "", in->devices[i].name,
                          (long long)in->devices[i].holder);
    else
      rc = th_buf_appendf(b, "%s{\"name\":\"%s\",\"holder\":null}", i ? "," : "", in->devices[i].name);
  }
  if (rc == TH_OK)
    rc = th_buf_appendf(b, "]},\"admitted\":%d,\"max_jobs\":%d,\"aging_s\":%.1f,\"jobs\":[", in->admitted,
                        in->max_jobs, in->aging_s);
  for (int i = 0; rc == TH_OK && i < in->njobs; i++) {
    const tune_sched_job_info *j = &in->jobs[i];
    rc = th_buf_appendf(b,
                        "%s{\"id\":%lld,\"kind\":\"%s\",\"framework\":\"%s\",\"network\":\"%s\",\"batch\":%d,"
                        "\"priority\":%d,\"state\":\"%s\",\"stages_run\":%lld",
                        i ? "," : "", (long long)j->id, j->kind, j->key.framework, j->key.network, j->key.batch,
                        j->priority, j->running ? "running" : "waiting", (long long)j->stages_run);
    if (rc == TH_OK && j->has_stage)
      rc = th_buf_appendf(b,
                          ",\"stage\":\"%s\",\"phase\":\"%s\",\"kind\":\"%s\",\"task\":%d,\"ntasks\":%d,"
                          "\"device\":\"%s\",\"cpu_slots\":%d,\"%s\":%.3f,\"estimate_s\":%.3f",
                          tune_sched_stage_str(j->stage_kind), tune_sched_phase_str(j->stage_kind),
                          tune_sched_kind_str(j->stage_kind), j->task, j->ntasks, j->device, j->cpu_slots,
                          j->running ? "running_s" : "waiting_s", j->for_s, j->estimate_s);
    if (rc == TH_OK) rc = th_buf_append(b, "}", 1);
  }
  if (rc == TH_OK) rc = th_buf_appendf(b, "],\"waiting\":[");
  const char *sep = "";
  for (int i = 0; rc == TH_OK && i < in->njobs; i++) {
    const tune_sched_job_info *j = &in->jobs[i];
    if (j->running || !j->has_stage) continue;
    rc = th_buf_appendf(b, "%s{\"job\":%lld,\"stage\":\"%s\",\"waiting_s\":%.3f}", sep, (long long)j->id,
                        tune_sched_stage_str(j->stage_kind), j->for_s);
    sep = ",";
  }
  if (rc == TH_OK) rc = th_buf_appendf(b, "],\"estimates\":{");
  for (int k = 0; rc == TH_OK && k < TUNE_SK_COUNT; k++)
    rc = th_buf_appendf(b, "%s\"%s\":{\"mean_s\":%.4f,\"samples\":%lld}", k ? "," : "", tune_sched_kind_str(k),
                        in->estimates.mean_s[k], (long long)in->estimates.samples[k]);
  char *q = queue ? json_dumps(queue, JSON_COMPACT) : NULL;
  json_decref(queue);
  if (rc == TH_OK) rc = q ? th_buf_appendf(b, "},\"store_queue\":%s}", q) : TH_ERR_NOMEM;
  free(q);
  return rc;
}

/* {"name","dtype","shape"} of a network input or output: dims that differ between the graphs built
 * at batch 1 (t1) and 2 (t2) are "batch". */
/* batched: a dimension follows the batch (README's batch rule: an input without one is taken as
 * the file gives it) */
static json_t *srv__io(const char *name, const tc_tensor *t1, const tc_tensor *t2) {
  json_t *shape = json_array();
  int batched = 0;
  for (int d = 0; d < t1->ndim; d++) {
    int b = t2->ndim == t1->ndim && t2->shape[d] != t1->shape[d];
    batched |= b;
    json_array_append_new(shape, b ? json_string("batch") : json_integer(t1->shape[d]));
  }
  return json_pack("{s:s,s:s,s:o,s:b}", "name", name ? name : "", "dtype",
                   tc_dtype_name(t1->dtype), "shape", shape, "batched", batched);
}

/* A copy of a shape with its "batch" dims set to batch. */
static json_t *srv__shape_at(const json_t *shape, int batch) {
  json_t *a = json_array();
  size_t i;
  json_t *v;
  json_array_foreach(shape, i, v)
      json_array_append_new(a, json_is_string(v) ? json_integer(batch) : json_copy(v));
  return a;
}

static void srv__entry_at(json_t *e, int batch) {
  const char *keys[2] = {"inputs", "outputs"};
  for (int k = 0; k < 2; k++) {
    size_t i;
    json_t *io;
    json_array_foreach(json_object_get(e, keys[k]), i, io) {
      json_t *shape = json_object_get(io, "shape");
      if (shape) json_object_set_new(io, "shape", srv__shape_at(shape, batch));
    }
  }
  json_t *first = json_object_get(json_array_get(json_object_get(e, "inputs"), 0), "shape");
  if (first) json_object_set_new(e, "input", json_copy(first));
}

void srv_present_networks_at(json_t *doc, int batch) {
  json_t *nets = json_object_get(doc, "networks");
  if (!nets) {
    srv__entry_at(doc, batch);
    return;
  }
  size_t i;
  json_t *e;
  json_array_foreach(nets, i, e) srv__entry_at(e, batch);
}

/* "inputs", "outputs" (dims that follow the batch are "batch"), "input" (the first input's shape at batch 1),
 * "flops" and "params" (at batch 1) of a network from its graphs at batch 1 and 2, into o. */
static th_status srv__graph_fields(json_t *o, const tc_graph *g1, const tc_graph *g2) {
  if (g1->ninputs != g2->ninputs || g1->noutputs != g2->noutputs) return TH_ERR_INTERNAL;
  json_t *ins = json_array(), *outs = json_array();
  if (!ins || !outs) {
    json_decref(ins);
    json_decref(outs);
    return TH_ERR_NOMEM;
  }
  for (int k = 0; k < g1->ninputs; k++)
    json_array_append_new(ins, srv__io(g1->nodes[g1->inputs[k]].name, &g1->nodes[g1->inputs[k]].out,
                                       &g2->nodes[g2->inputs[k]].out));
  for (int k = 0; k < g1->noutputs; k++)
    json_array_append_new(outs, srv__io(g1->output_names[k], &g1->nodes[g1->outputs[k]].out,
                                        &g2->nodes[g2->outputs[k]].out));
  json_t *first = json_object_get(json_array_get(ins, 0), "shape");
  json_object_set_new(o, "input", first ? srv__shape_at(first, 1) : json_array());
  json_object_set_new(o, "inputs", ins);
  json_object_set_new(o, "outputs", outs);
  json_object_set_new(o, "flops", json_real(tc_graph_flops(g1)));
  json_object_set_new(o, "params", json_integer(tc_graph_param_count(g1)));
  return TH_OK;
}

th_status srv_present_network(const char *name, json_t **out) {
  const tc_zoo_entry *e = tc_zoo_find(name);
  if (!e) return TH_ERR_NOT_FOUND;
  tc_graph *g1 = NULL, *g2 = NULL;
  th_status rc = tc_zoo_build(name, 1, 0, 0, 0, &g1, NULL, 0);
  if (rc == TH_OK) rc = tc_zoo_build(name, 2, 0, 0, 0, &g2, NULL, 0);
  json_t *o = rc == TH_OK ? json_object() : NULL;
  if (rc == TH_OK && !o) rc = TH_ERR_NOMEM;
  if (rc == TH_OK) {
    json_object_set_new(o, "name", json_string(e->name));
    json_object_set_new(o, "source", json_string("zoo"));
    json_object_set_new(o, "description", json_string(e->description));
    rc = srv__graph_fields(o, g1, g2);
  }
  tc_graph_free(g1);
  tc_graph_free(g2);
  if (rc != TH_OK) {
    json_decref(o);
    return rc;
  }
  *out = o;
  return TH_OK;
}

th_status srv_present_onnx(const char *name, const tc_graph *g1, const tc_graph *g2, const tc_onnx_info *info,
                           json_t **out) {
  json_t *o = json_object(), *ops = json_array();
  th_status rc = o && ops ? TH_OK : TH_ERR_NOMEM;
  if (rc == TH_OK) {
    json_object_set_new(o, "name", json_string(name));
    json_object_set_new(o, "source", json_string("onnx"));
    rc = srv__graph_fields(o, g1, g2);
  }
  for (int i = 0; rc == TH_OK && i < info->nop_types; i++)
    json_array_append_new(ops, json_pack("{s:s,s:i}", "op_type", info->op_types[i].name, "count",
                                         info->op_types[i].count));
  if (rc == TH_OK) {
    json_object_set_new(o, "ops", ops);
    ops = NULL;
    json_object_set_new(o, "onnx", json_pack("{s:I,s:I,s:s,s:i,s:i,s:I,s:i,s:i,s:i}", "ir_version",
                                             (json_int_t)info->ir_version, "opset", (json_int_t)info->opset,
                                             "producer", info->producer, "nodes", info->nnodes, "initializers",
                                             info->ninitializers, "param_elements",
                                             (json_int_t)info->param_elements, "folded", info->folded,
                                             "fused_layer_norm", info->fused_layer_norm, "fused_gelu",
                                             info->fused_gelu));
  }
  json_decref(ops);
  if (rc != TH_OK) {
    json_decref(o);
    return rc;
  }
  *out = o;
  return TH_OK;
}

json_t *srv_present_uploaded(const store_network *n) {
  json_t *o = srv__embedded(n->description);
  if (!o) return NULL;
  json_object_set_new(o, "name", json_string(n->name));
  json_object_set_new(o, "source", json_string("onnx"));
  json_object_set_new(o, "version", json_integer(n->version));
  json_object_set_new(o, "digest", srv__digest(n->onnx_digest));
  json_object_set_new(o, "size", json_integer(n->onnx_size));
  json_object_set_new(o, "shapes", n->shapes ? json_string(n->shapes) : json_null());
  json_object_set_new(o, "created_at", srv__time(n->created_at));
  json_object_set_new(o, "updated_at", srv__time(n->updated_at));
  return o;
}
