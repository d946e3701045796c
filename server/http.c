/* The HTTP daemon on libmicrohttpd: start-up and shutdown, the access handler that assembles a request (raw
 * path, query, a capped body) and hands it to the router, response helpers (JSON, errors, metrics) and the
 * long-poll machinery. Long polls suspend the connection (no busy loop); a waker thread resumes it when its job
 * changes or its deadline passes, and every suspended connection is resumed before the daemon stops. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "present.h"
#include "scheduler.h"
#include "srv.h"
#include "th_log.h"
#include "th_util.h"

const char *const srv_route_names[SRV_ROUTE_COUNT] = {
    "other",   "model",   "manifest", "catalog",  "blob",    "tune",    "model_delete", "jobs",
    "job",     "job_cancel", "networks", "targets", "healthz", "readyz", "metrics",      "web",
    "versions", "tuning", "events", "scheduler"};

/* ---- responses ---- */

static int srv__status_slot(srv_t *s, unsigned int status) {
  for (int i = 0; i < s->nstatus; i++)
    if (s->status_codes[i] == (int)status) return i;
  if (s->nstatus < 16) {
    s->status_codes[s->nstatus] = (int)status;
    return s->nstatus++;
  }
  return 15;
}

enum MHD_Result srv_queue(srv_t *s, srv_request *r, unsigned int status, struct MHD_Response *resp) {
  if (!resp) return MHD_NO;
  MHD_add_response_header(resp, "Server", "tunehub/" TH_VERSION);
  /* every 429 (queue full, too many streams) tells clients such as curl --retry when to come back */
  if (status == 429 && !MHD_get_response_header(resp, "Retry-After"))
    MHD_add_response_header(resp, "Retry-After", "10");
  pthread_mutex_lock(&s->metrics_mu);
  s->requests[r->route][srv__status_slot(s, status)]++;
  pthread_mutex_unlock(&s->metrics_mu);
  enum MHD_Result ret = MHD_queue_response(r->con, status, resp);
  MHD_destroy_response(resp);
  return ret;
}

void srv_count_bytes(srv_t *s, int64_t n) {
  pthread_mutex_lock(&s->metrics_mu);
  s->bytes_served += n;
  pthread_mutex_unlock(&s->metrics_mu);
}

enum MHD_Result srv_json(srv_t *s, srv_request *r, unsigned int status, const char *json) {
  size_t n = strlen(json);
  char *body = malloc(n + 1);
  if (!body) return MHD_NO;
  memcpy(body, json, n);
  body[n] = '\n';
  struct MHD_Response *resp =
      MHD_create_response_from_buffer(n + 1, body, MHD_RESPMEM_MUST_FREE);
  MHD_add_response_header(resp, "Content-Type", "application/json");
  MHD_add_response_header(resp, "Cache-Control", "no-store");
  return srv_queue(s, r, status, resp);
}

enum MHD_Result srv_json_doc(srv_t *s, srv_request *r, unsigned int status, json_t *doc) {
  char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
  json_decref(doc);
  if (!text) return srv_error(s, r, 500, "out_of_memory", NULL, "out of memory");
  enum MHD_Result ret = srv_json(s, r, status, text);
  free(text);
  return ret;
}

enum MHD_Result srv_error(srv_t *s, srv_request *r, unsigned int status, const char *code,
                          const char *extra_json, const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  json_t *err = NULL;
  if (extra_json) err = json_loads(extra_json, 0, NULL);
  if (!err) err = json_object();
  json_object_set_new(err, "code", json_string(code));
  json_object_set_new(err, "status", json_integer(status));
  json_object_set_new(err, "message", json_string(msg));
  json_t *root = json_object();
  json_object_set_new(root, "error", err);
  char *text = json_dumps(root, JSON_COMPACT);
  json_decref(root);
  enum MHD_Result ret = srv_json(s, r, status, text ? text : "{\"error\":{}}");
  free(text);
  return ret;
}

/* ---- query strings ---- */

static int srv__hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int srv_pct_decode(const char *in, size_t len, char *out, size_t n) {
  size_t o = 0;
  for (size_t i = 0; i < len; i++) {
    char c = in[i];
    if (c == '%') {
      if (i + 2 >= len) return -1;
      int hi = srv__hex(in[i + 1]);
      int lo = srv__hex(in[i + 2]);
      if (hi < 0 || lo < 0) return -1;
      c = (char)(hi << 4 | lo);
      if (c == '/' || c == '\0' || c == '\\') return -1;
      i += 2;
    } else if (c == '+') {
      c = ' ';
    }
    if (o + 1 >= n) return -1;
    out[o++] = c;
  }
  out[o] = '\0';
  return (int)o;
}

int srv_query(const srv_request *r, const char *name, char *out, size_t n) {
  size_t nl = strlen(name);
  const char *p = r->query;
  while (*p) {
    const char *amp = strchr(p, '&');
    size_t len = amp ? (size_t)(amp - p) : strlen(p);
    if (len >= nl && strncmp(p, name, nl) == 0 && (len == nl || p[nl] == '=')) {
      if (len == nl) {
        if (n) out[0] = '\0';
        return 1;
      }
      return srv_pct_decode(p + nl + 1, len - nl - 1, out, n) < 0 ? -1 : 1;
    }
    if (!amp) break;
    p = amp + 1;
  }
  return 0;
}

/* ---- long polling ---- */

void srv_suspend(srv_t *s, srv_request *r, double seconds, int64_t job_id) {
  pthread_mutex_lock(&s->wait_mu);
  if (s->wait_stop || s->nwaiting >= (int)(sizeof s->waiting / sizeof s->waiting[0])) {
    pthread_mutex_unlock(&s->wait_mu);
    r->wait_deadline = th_now_mono() - 1; /* no room: answer now as if the wait expired */
    return;
  }
  r->wait_deadline = th_now_mono() + seconds;
  r->wait_job = job_id;
  r->suspended = 1;
  MHD_suspend_connection(r->con);
  s->waiting[s->nwaiting++] = r;
  pthread_cond_signal(&s->wait_cv);
  pthread_mutex_unlock(&s->wait_mu);
}

/* Resumes waiting[i]; the caller holds wait_mu. */
static void srv__resume_at(srv_t *s, int i) {
  srv_request *r = s->waiting[i];
  s->waiting[i] = s->waiting[--s->nwaiting];
  /* r->suspended stays set until the access handler runs again: the route that just suspended may not have
   * returned yet, and must still see it suspended (else it would answer as well) */
  r->resumed = 1;
  MHD_resume_connection(r->con);
}

void srv_job_event(void *ctx, int64_t job_id) {
  srv_t *s = ctx;
  pthread_mutex_lock(&s->cache_mu);
  s->cache_gen++;
  pthread_mutex_unlock(&s->cache_mu);
  pthread_mutex_lock(&s->wait_mu);
  for (int i = s->nwaiting - 1; i >= 0; i--)
    if (s->waiting[i]->wait_job == job_id) srv__resume_at(s, i);
  pthread_mutex_unlock(&s->wait_mu);
}

static void *srv__waker(void *arg) {
  srv_t *s = arg;
  pthread_mutex_lock(&s->wait_mu);
  while (!s->wait_stop) {
    double now = th_now_mono(), next = now + 1.0;
    for (int i = s->nwaiting - 1; i >= 0; i--) {
      if (s->waiting[i]->wait_deadline <= now)
        srv__resume_at(s, i);
      else if (s->waiting[i]->wait_deadline < next)
        next = s->waiting[i]->wait_deadline;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double wait = next - now;
    if (wait < 0.01) wait = 0.01;
    ts.tv_sec += (time_t)wait;
    ts.tv_nsec += (long)((wait - (double)(time_t)wait) * 1e9);
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&s->wait_cv, &s->wait_mu, &ts);
  }
  while (s->nwaiting > 0) srv__resume_at(s, s->nwaiting - 1);
  pthread_mutex_unlock(&s->wait_mu);
  return NULL;
}

/* A request from the raw URI: the path (still percent-encoded) and the query string apart. r->con stays
 * NULL until the access handler's first call fills it. */
static srv_request *srv__request_new(const char *uri) {
  srv_request *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  th_buf_init(&r->body, SRV_MAX_BODY);
  const char *q = strchr(uri, '?');
  size_t plen = q ? (size_t)(q - uri) : strlen(uri);
  if (plen >= sizeof r->path) plen = sizeof r->path - 1;
  memcpy(r->path, uri, plen);
  r->path[plen] = '\0';
  if (q) snprintf(r->query, sizeof r->query, "%s", q + 1);
  return r;
}

/* ---- the access handler ---- */

static enum MHD_Result srv__access(void *cls, struct MHD_Connection *con, const char *url,
                                   const char *method, const char *version, const char *upload_data,
                                   size_t *upload_size, void **con_cls) {
  (void)version;
  srv_t *s = cls;
  srv_request *r = *con_cls;
  if (!r) {
    /* the URI log callback failed to allocate; try once more from the (query-less) url */
    r = srv__request_new(url);
    if (!r) return MHD_NO;
    r->con = con;
    r->method = method;
    *con_cls = r;
    return MHD_YES;
  }
  if (*upload_size) {
    if (th_buf_append(&r->body, upload_data, *upload_size) != TH_OK) r->body_too_large = 1;
    *upload_size = 0;
    return MHD_YES;
  }
  if (r->suspended) {
    if (!r->resumed) return MHD_YES;
    r->suspended = 0;
    r->resumed = 0;
  }
  if (r->body_too_large)
    return srv_error(s, r, 413, "body_too_large", NULL, "request body exceeds %d bytes",
                     SRV_MAX_BODY);
  return srv_route(s, r);
}

/* MHD parses the query itself only for its own lookups; tunehub reads the raw URL. */
static size_t srv__no_unescape(void *cls, struct MHD_Connection *c, char *s) {
  (void)cls;
  (void)c;
  return strlen(s);
}

/* MHD gives the full URI here before parsing; keep the raw query (MHD strips it from url). */
static void *srv__uri_log(void *cls, const char *uri, struct MHD_Connection *con) {
  (void)cls;
  (void)con;
  return srv__request_new(uri);
}

static enum MHD_Result srv__access_wrap(void *cls, struct MHD_Connection *con, const char *url,
                                        const char *method, const char *version,
                                        const char *upload_data, size_t *upload_size,
                                        void **con_cls) {
  srv_request *r = *con_cls;
  if (r && !r->con) {
    /* first call after the URI log callback made the request */
    r->con = con;
    r->method = method;
    (void)url;
    return MHD_YES;
  }
  return srv__access(cls, con, url, method, version, upload_data, upload_size, con_cls);
}

static void srv__completed(void *cls, struct MHD_Connection *con, void **con_cls,
                           enum MHD_RequestTerminationCode toe) {
  (void)cls;
  (void)con;
  (void)toe;
  srv_request *r = *con_cls;
  if (!r) return;
  th_buf_free(&r->body);
  free(r);
  *con_cls = NULL;
}

static th_status srv__read_token(srv_t *s, char *err, size_t n) {
  if (!s->cfg.token_file[0]) return TH_OK;
  char *data = NULL;
  size_t len = 0;
  if (th_read_file(s->cfg.token_file, 4096, &data, &len) != TH_OK) {
    snprintf(err, n, "cannot read --token-file %s: %s", s->cfg.token_file, strerror(errno));
    return TH_ERR_IO;
  }
  while (len && (data[len - 1] == '\n' || data[len - 1] == '\r' || data[len - 1] == ' '))
    data[--len] = '\0';
  if (len < 8 || len >= sizeof s->token) {
    free(data);
    snprintf(err, n, "the token in %s must be 8 to %zu characters", s->cfg.token_file,
             sizeof s->token - 1);
    return TH_ERR_INVALID;
  }
  memcpy(s->token, data, len + 1);
  s->have_token = 1;
  free(data);
  return TH_OK;
}

th_status srv__init_catalog(srv_t *s, char *err, size_t n); /* routes.c */

th_status srv_start(const srv_config *c, const tune_builder *builder, srv_t **out, char *err,
                    size_t n) {
  srv_t *s = calloc(1, sizeof *s);
  if (!s) return TH_ERR_NOMEM;
  s->cfg = *c;
  s->builder = builder;
  s->started_at = th_now_wall();
  s->lock_fd = -1;
  pthread_mutex_init(&s->wait_mu, NULL);
  pthread_cond_init(&s->wait_cv, NULL);
  pthread_mutex_init(&s->metrics_mu, NULL);
  pthread_mutex_init(&s->cache_mu, NULL);
  th_status rc = srv__read_token(s, err, n);
  if (rc != TH_OK) goto fail_token;
  if (th_mkdir_p(c->data_dir) != TH_OK) {
    snprintf(err, n, "cannot create data directory %s: %s", c->data_dir, strerror(errno));
    rc = TH_ERR_IO;
    goto fail_token;
  }
  char lock_path[1200];
  snprintf(lock_path, sizeof lock_path, "%s/daemon.lock", c->data_dir);
  s->lock_fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (s->lock_fd < 0 || flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0) {
    snprintf(err, n, "another tunehub daemon is serving %s (lock %s)", c->data_dir, lock_path);
    rc = TH_ERR_CONFLICT;
    goto fail_token;
  }
  rc = store_open(c->data_dir, &s->st);
  if (rc != TH_OK) {
    snprintf(err, n, "cannot open the store in %s: %s", c->data_dir, store_errmsg(NULL));
    goto fail_token;
  }
  int requeued = 0, swept = 0;
  rc = store_recover(s->st, &requeued, &swept);
  if (rc != TH_OK) {
    snprintf(err, n, "recovery failed: %s", store_errmsg(s->st));
    goto fail_store;
  }
  if (requeued || swept)
    TH_LOG(TH_LOG_INFO, "recovered: %d job(s) requeued, %d orphan file(s) swept", requeued, swept);
  rc = srv__init_catalog(s, err, n);
  if (rc != TH_OK) goto fail_store;

  char work_root[1200];
  snprintf(work_root, sizeof work_root, "%s/work", c->data_dir);
  rc = srv_events_new(c->max_streams, c->max_streams_per_ip, &s->events);
  if (rc != TH_OK) {
    snprintf(err, n, "cannot start the event streams");
    goto fail_store;
  }
  tune_sched_opts so;
  tune_sched_opts_default(&so);
  so.cpu_slots = c->cpu_slots;
  so.max_jobs = c->workers;
  so.work_root = work_root;
  so.listener = srv_job_event;
  so.on_event = srv_events_on_job;
  so.encode_progress = srv_progress_doc;
  so.listener_ctx = s;
  rc = tune_workers_start_opts(s->st, builder, &so, &s->workers);
  if (rc != TH_OK) {
    snprintf(err, n, "cannot start the scheduler (%d admitted job(s))", c->workers);
    goto fail_store;
  }
  if (pthread_create(&s->waker, NULL, srv__waker, s) != 0) {
    snprintf(err, n, "cannot start the waker thread");
    rc = TH_ERR_NOMEM;
    goto fail_workers;
  }
  s->waker_started = 1;

  struct sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_port = htons((uint16_t)c->port);
  if (inet_pton(AF_INET, c->listen_host, &addr.sin_addr) != 1) {
    snprintf(err, n, "--listen host must be an IPv4 address, got '%s'", c->listen_host);
    rc = TH_ERR_INVALID;
    goto fail_waker;
  }
  s->mhd = MHD_start_daemon(
      MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_TURBO | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG,
      (uint16_t)c->port,
      NULL, NULL, srv__access_wrap, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
      MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)c->http_threads, MHD_OPTION_CONNECTION_TIMEOUT,
      (unsigned int)c->timeout_s, MHD_OPTION_CONNECTION_LIMIT, (unsigned int)c->connection_limit,
      MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)c->per_ip_limit,
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024), MHD_OPTION_UNESCAPE_CALLBACK,
      srv__no_unescape, NULL, MHD_OPTION_URI_LOG_CALLBACK, srv__uri_log, NULL,
      MHD_OPTION_NOTIFY_COMPLETED, srv__completed, NULL, MHD_OPTION_LISTENING_ADDRESS_REUSE,
      (unsigned int)1, MHD_OPTION_END);
  if (!s->mhd) {
    snprintf(err, n, "cannot listen on %s:%d (port in use or not permitted)", c->listen_host, c->port);
    rc = TH_ERR_IO;
    goto fail_waker;
  }
  *out = s;
  return TH_OK;

fail_waker:
  pthread_mutex_lock(&s->wait_mu);
  s->wait_stop = 1;
  pthread_cond_signal(&s->wait_cv);
  pthread_mutex_unlock(&s->wait_mu);
  pthread_join(s->waker, NULL);
fail_workers:
  tune_workers_stop(s->workers);
fail_store:
  srv_events_free(s->events);
  store_close(s->st);
fail_token:
  if (s->lock_fd >= 0) close(s->lock_fd);
  free(s->networks_json);
  free(s);
  return rc;
}

void srv_stop(srv_t *s) {
  if (!s) return;
  MHD_quiesce_daemon(s->mhd);
  pthread_mutex_lock(&s->wait_mu);
  s->wait_stop = 1;
  pthread_cond_signal(&s->wait_cv);
  pthread_mutex_unlock(&s->wait_mu);
  if (s->waker_started) pthread_join(s->waker, NULL); /* resumes every suspended connection */
  srv_events_stop(s->events);                         /* ends and resumes every event stream */
  MHD_stop_daemon(s->mhd);
  tune_workers_stop(s->workers);
  srv_events_free(s->events);
  store_close(s->st);
  if (s->lock_fd >= 0) close(s->lock_fd);
  free(s->networks_json);
  for (size_t i = 0; i < sizeof s->cache / sizeof s->cache[0]; i++) free(s->cache[i].manifest);
  free(s);
}
