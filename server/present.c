/* The JSON documents of the HTTP API (see present.h and README.md, "HTTP API"). The field names and value forms
 * (ISO times, "sha256:" digests, null for what is unknown) are the API's contract with clients and the web page,
 * so they are spelled here once, not in the modules that own the data. */
#include "present.h"

#include <stdio.h>

#include "th_util.h"

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
  char d[80];
  snprintf(d, sizeof d, "sha256:%s", hex);
  return json_string(d);
}

static json_t *srv__latency(double ms) {
  return ms < 0 ? json_null() : json_real(ms);
}

/* A stored JSON object text as a value; {} when absent or unreadable. */
static json_t *srv__embedded(const char *text) {
  json_t *v = text ? json_loads(text, 0, NULL) : NULL;
  return v ? v : json_object();
}

/* The key's five fields into o. */
static void srv__key_fields(json_t *o, const store_key *k) {
  json_object_set_new(o, "framework", json_string(k->framework));
  json_object_set_new(o, "network", json_string(k->network));
  json_object_set_new(o, "batch", json_integer(k->batch));
  json_object_set_new(o, "target", json_string(k->target));
  json_object_set_new(o, "compiler_version", json_string(k->compiler_version));
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

json_t *srv_present_versions(const store_key *key, const store_model *versions, size_t n) {
  json_t *arr = json_array();
  for (size_t i = 0; arr && i < n; i++) {
    const store_model *m = &versions[i];
    json_t *o = json_object();
    json_object_set_new(o, "version", json_integer(m->version));
    json_object_set_new(o, "tuned", json_boolean(m->tuned));
    json_object_set_new(o, "digest", srv__digest(m->tar_digest));
    json_object_set_new(o, "so_digest", srv__digest(m->so_digest));
    json_object_set_new(o, "latency_ms", srv__latency(m->latency_ms));
    json_object_set_new(o, "job", m->job_id > 0 ? json_integer(m->job_id) : json_null());
    json_object_set_new(o, "published_at", srv__time(m->created_at));
    json_object_set_new(o, "size", json_integer(m->tar_size));
    json_object_set_new(o, "so_size", json_integer(m->so_size));
    json_array_append_new(arr, o);
  }
  if (!arr) return NULL;
  return json_pack("{s:s,s:s,s:i,s:s,s:I,s:o}", "framework", key->framework, "network", key->network, "batch",
                   key->batch, "target", key->target, "count", (json_int_t)json_array_size(arr), "versions", arr);
}
