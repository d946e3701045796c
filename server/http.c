/* The HTTP daemon on libmicrohttpd (the top of server/): start-up and shutdown in order (store, recovery, event
 * streams, scheduler, long-poll waker, listener; and back), and the access handler that assembles a request (raw
 * path, query, a capped body, or a network's upload streamed to disk) and hands it to the router. It reaches the
 * rest of server/ only through routes.h, networks.h, events.h, longpoll.h and response.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "builder.h"
#include "events.h"
#include "gc.h"
#include "srv_limits.h"
#include "guard.h"
#include "longpoll.h"
#include "relay.h"
#include "networks.h"
#include "present.h"
#include "request.h"
#include "response.h"
#include "routes.h"
#include "scheduler.h"
#include "th_alloc.h"
#include "th_log.h"
#include "th_util.h"

/* A request from the raw URI: the path (still percent-encoded) and the query string apart. r->con
 * stays NULL until the access handler's first call fills it. A path or query that does not fit
 * marks the request uri_too_long: a cut one could name another resource, or drop a parameter the
 * client sent. */
static srv_request *srv__request_new(const char *uri) {
  srv_request *r = th_calloc(1, sizeof *r);
  if (!r) return NULL;
  th_buf_init(&r->body, SRV_MAX_BODY);
  const char *q = strchr(uri, '?');
  size_t plen = q ? (size_t)(q - uri) : strlen(uri);
  if (plen >= sizeof r->path || (q && strlen(q + 1) >= sizeof r->query)) {
    r->uri_too_long = 1;
    return r;
  }
  memcpy(r->path, uri, plen);
  r->path[plen] = '\0';
  srv_path_squash(r->path);
  if (!strcmp(r->path, "/records")) th_buf_init(&r->body, SRV_RECORDS_MAX_BODY); /* records, JSONL */
  if (q) memcpy(r->query, q + 1, strlen(q + 1) + 1);
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
  if (r->answered) { /* answered at its headers: nothing of the body is wanted */
    *upload_size = 0;
    return MHD_YES;
  }
  if (*upload_size) {
    size_t n = *upload_size;
    *upload_size = 0;
    if (r->upload) return srv_networks_put_data(s, r, upload_data, n);
    if (th_buf_append(&r->body, upload_data, n) != TH_OK) r->body_too_large = 1;
    return MHD_YES;
  }
  if (r->suspended) {
    if (!r->resumed) return MHD_YES;
    r->suspended = 0;
    r->resumed = 0;
  }
  if (r->uri_too_long)
    return srv_error_http(s, r, 414, "uri_too_long", NULL,
                          "the request path or query is longer than %zu bytes", sizeof r->path - 1);
  if (r->body_too_large)
    return srv_error(s, r, TH_ERR_TOO_LARGE, "body_too_large", NULL, "request body exceeds %zu bytes",
                     r->body.max);
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
    /* first call after the URI log callback made the request: the headers are in. An upload of a network
     * streams to disk from here on (or is refused before its body is read). */
    r->con = con;
    r->method = method;
    (void)url;
    enum MHD_Result ret = MHD_YES;
    if (!strcmp(method, "PUT") && srv_networks_put_begin(cls, r, &ret)) return ret;
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
  srv_upload_free(r->upload);
  free(r);
  *con_cls = NULL;
}

static th_status srv__read_token(srv_t *s, char *err, size_t n) {
  if (!s->cfg.token_file[0]) return TH_OK;
  char *data = NULL;
  size_t len = 0;
  if (th_read_file(s->cfg.token_file, 256 * 1024, &data, &len) != TH_OK) {
    snprintf(err, n, "cannot read --token-file %s: %s", s->cfg.token_file, strerror(errno));
    return TH_ERR_IO;
  }
  char why[TH_WHY_MAX];
  th_status rc = srv_tokens_parse(data, &s->tokens, why, sizeof why);
  free(data);
  if (rc != TH_OK) {
    snprintf(err, n, "--token-file %s: %s", s->cfg.token_file, why);
    return rc;
  }
  s->have_token = 1;
  /* as ssh does for its keys, though only a warning: a file others may read gives its tokens away
   * (or their hashes, to be guessed offline), one others may write lets them add their own */
  struct stat sb;
  if (stat(s->cfg.token_file, &sb) == 0 && (sb.st_mode & 077))
    TH_LOG(TH_LOG_WARN,
           "--token-file %s has mode %04o: group or others may %s it; make it private with "
           "chmod 600 %s",
           s->cfg.token_file, (unsigned)(sb.st_mode & 07777), sb.st_mode & 022 ? "write" : "read",
           s->cfg.token_file);
  return TH_OK;
}

th_status srv_start(const srv_config *c, const tune_builder *builder, srv_t **out, char *err,
                    size_t n) {
  srv_t *s = th_calloc(1, sizeof *s);
  if (!s) return TH_ERR_NOMEM;
  s->cfg = *c;
  s->builder = builder;
  s->started_at = th_now_wall();
  s->lock_fd = -1;
  pthread_mutex_init(&s->wait_mu, NULL);
  pthread_cond_init(&s->wait_cv, NULL);
  pthread_mutex_init(&s->metrics_mu, NULL);
  pthread_mutex_init(&s->cache_mu, NULL);
  pthread_mutex_init(&s->anon_mu, NULL);
  srv_auth_fails_init(&s->auth_fails, c->auth_fail_limit);
  th_status rc = srv__read_token(s, err, n);
  if (rc != TH_OK) goto fail_token;
  if (th_mkdir_p(c->data_dir) != TH_OK) {
    snprintf(err, n, "cannot create data directory %s: %s", c->data_dir, strerror(errno));
    rc = TH_ERR_IO;
    goto fail_token;
  }
  char lock_path[TH_SUBDIR_MAX];
  snprintf(lock_path, sizeof lock_path, "%s/daemon.lock", c->data_dir);
  s->lock_fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (s->lock_fd < 0 || flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0) {
    snprintf(err, n, "another tunehub daemon is serving %s (lock %s)", c->data_dir, lock_path);
    rc = TH_ERR_CONFLICT;
    goto fail_token;
  }
  /* another process's SQLite write lock is waited for seconds, not the store's default 15 s: a request then
   * answers 503 instead of hanging (and holding up every read behind the store's one connection) */
  store_wait_limit(SRV_STORE_WAIT_MS);
  rc = store_open_db(c->db[0] ? c->db : NULL, c->data_dir, &s->st);
  if (rc != TH_OK) {
    char where[TH_DIR_MAX];
    store_describe(c->db[0] ? c->db : NULL, c->data_dir, where, sizeof where);
    snprintf(err, n, "cannot open the store %s: %s", where, store_errmsg(NULL));
    goto fail_token;
  }
  if (store_shared(s->st))
    TH_LOG(TH_LOG_INFO, "store: PostgreSQL %s, shared; %s/artifacts is this daemon's local cache",
           store_db_display(s->st), c->data_dir);
  else
    TH_LOG(TH_LOG_INFO, "store: SQLite %s", store_db_display(s->st));
  /* the free-space floor: new work is refused below it, and the store writes no artifact that would
   * cross it */
  int64_t min_free = c->min_free >= 0 ? c->min_free : srv_min_free_default(c->data_dir);
  store_set_min_free(s->st, min_free);
  int64_t avail = 0;
  if (store_free_space(s->st, &avail) == TH_OK)
    TH_LOG(avail < min_free ? TH_LOG_WARN : TH_LOG_INFO,
           "data directory %s: %lld bytes free, floor %lld bytes (--min-free)%s", c->data_dir,
           (long long)avail, (long long)min_free,
           avail < min_free ? ": new work is refused (507) until space is freed" : "");
  int requeued = 0, swept = 0;
  rc = store_recover(s->st, &requeued, &swept);
  if (rc != TH_OK) {
    snprintf(err, n, "recovery failed: %s", store_errmsg(s->st));
    goto fail_store;
  }
  if (requeued || swept)
    TH_LOG(TH_LOG_INFO, "recovered: %d job(s) requeued, %d orphan file(s) swept", requeued, swept);
  rc = srv_routes_init(s, err, n);
  if (rc != TH_OK) goto fail_store;

  char work_root[TH_SUBDIR_MAX];
  snprintf(work_root, sizeof work_root, "%s/work", c->data_dir);
  rc = srv_events_new(c->max_streams, c->max_streams_per_ip, &s->events);
  if (rc != TH_OK) {
    snprintf(err, n, "cannot start the event streams");
    goto fail_store;
  }
  tune_sched_opts so;
  tune_sched_opts_default(&so);
  so.cpu_slots = c->cpu_slots;
  if (c->mem_budget > 0) so.mem_budget = c->mem_budget;
  s->mem_budget =
      c->workers > 0 ? so.mem_budget : 0; /* a build larger than it is refused (guard.c) */
  so.max_jobs = c->workers;
  so.work_root = work_root;
  so.listener = srv_job_event;
  so.on_event = srv_events_on_job;
  so.encode_progress = srv_progress_doc;
  so.listener_ctx = s;
  so.keep_versions = c->keep_versions;
  so.signer = c->signer;
  /* the scheduler is this daemon's worker: it registers the targets this machine measures, and one that
   * admits no job (--workers 0, a serving replica) only requeues the expired leases of others */
  so.lease_s = c->lease_s;
  /* claims under the data directory's owner name, the same across restarts: the next daemon on this directory
   * requeues at once what this one leaves running (store_recover), instead of waiting out the lease */
  so.name = store_owner(s->st);
  char targets[TUNE_SCHED_MAX_TARGETS][256];
  const char *target_ptrs[TUNE_SCHED_MAX_TARGETS];
  so.ntargets = tune_local_targets(targets, TUNE_SCHED_MAX_TARGETS);
  for (int i = 0; i < so.ntargets; i++) target_ptrs[i] = targets[i];
  so.targets = target_ptrs;
  rc = tune_workers_start_opts(s->st, builder, &so, &s->workers);
  if (rc != TH_OK) {
    snprintf(err, n, "cannot start the scheduler (%d admitted job(s)): %s", c->workers,
             rc == TH_ERR_INVALID || rc == TH_ERR_NOMEM || rc == TH_ERR_IO ? th_status_str(rc) : store_errmsg(s->st));
    goto fail_store;
  }
  rc = srv_longpoll_start(s);
  if (rc != TH_OK) {
    snprintf(err, n, "cannot start the waker thread");
    goto fail_workers;
  }
  rc = srv_relay_start(s, err, n);
  if (rc != TH_OK) goto fail_waker;
  rc = srv_gc_start(s, err, n);
  if (rc != TH_OK) goto fail_relay;

  struct sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_port = htons((uint16_t)c->port);
  if (inet_pton(AF_INET, c->listen_host, &addr.sin_addr) != 1) {
    snprintf(err, n, "--listen host must be an IPv4 address, got '%s'", c->listen_host);
    rc = TH_ERR_INVALID;
    goto fail_gc;
  }
  unsigned int flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_TURBO | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
  if (c->no_listen) flags |= MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC;
  s->mhd = MHD_start_daemon(
      flags,
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
    goto fail_gc;
  }
  *out = s;
  return TH_OK;

fail_gc:
  srv_gc_stop(s);
fail_relay:
  srv_relay_stop(s);
fail_waker:
  srv_longpoll_stop(s);
fail_workers:
  tune_workers_stop(s->workers);
fail_store:
  srv_events_free(s->events);
  store_close(s->st);
fail_token:
  if (s->lock_fd >= 0) close(s->lock_fd);
  free(s->networks_json);
  srv_auth_fails_free(&s->auth_fails);
  free(s);
  return rc;
}

void srv_stop(srv_t *s) {
  if (!s) return;
  MHD_quiesce_daemon(s->mhd);
  srv_relay_stop(s);
  srv_longpoll_stop(s);        /* resumes every suspended connection */
  srv_events_stop(s->events);                         /* ends and resumes every event stream */
  MHD_stop_daemon(s->mhd);
  srv_gc_stop(s); /* before the store closes; a run in progress ends first */
  tune_workers_stop(s->workers);
  srv_events_free(s->events);
  store_close(s->st);
  if (s->lock_fd >= 0) close(s->lock_fd);
  free(s->networks_json);
  for (size_t i = 0; i < sizeof s->cache / sizeof s->cache[0]; i++) free(s->cache[i].manifest);
  srv_limits_free(s);
  srv_auth_fails_free(&s->auth_fails);
  free(s);
}
