/* Internal interface of server/: configuration, the HTTP daemon and its routes. server/ alone maps th_status
 * codes to HTTP; the other modules never see HTTP. */
#ifndef SRV_H
#define SRV_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdint.h>

#include "store.h"
#include "th_buf.h"
#include "th_status.h"
#include "worker.h"

#define SRV_MAX_BODY (64 * 1024)
#define SRV_MAX_SEGMENT 128
#define SRV_MAX_WAIT_S 600

typedef struct srv_config {
  char listen_host[64];
  int port;
  char data_dir[1024];
  char token_file[1024];
  char web_dir[1024];
  int workers;
  int http_threads;
  int max_batch;
  int max_queued;
  int connection_limit;
  int per_ip_limit;
  int timeout_s;
  int miss_tunes;  /* 1: a miss queues a tune job (v1 quick build, then tuned v2); 0: a build job only */
  int miss_trials; /* trials per task for a miss's tuning; 0 = the tuner's default budget */
  int cpu_slots;   /* the scheduler's CPU build pool; 0 = online cores */
  int max_streams, max_streams_per_ip; /* SSE caps */
} srv_config;

/* Defaults: 127.0.0.1:8080, ./data, web/ from the source tree, 1 worker, max batch 256, 256 queued jobs,
 * misses tune. */
void srv_config_defaults(srv_config *c);
/* Parses `serve` flags; writes a message to err on a bad flag. */
th_status srv_config_parse(srv_config *c, int argc, char **argv, char *err, size_t n);

typedef struct srv srv_t;
typedef struct srv_events srv_events;

/* Opens the store, recovers, starts the workers and the HTTP daemon. builder is borrowed. */
th_status srv_start(const srv_config *c, const tune_builder *builder, srv_t **out, char *err, size_t n);
/* Stops accepting, resumes every suspended request, stops workers and closes the store. Accepts NULL. */
void srv_stop(srv_t *s);

/* ---- request plumbing shared by the route files ---- */
typedef struct srv_request {
  struct MHD_Connection *con;
  const char *method;
  char path[2048];   /* raw (still percent-encoded) path */
  char query[2048];  /* raw query string, without '?' */
  th_buf body;
  int body_too_large;
  int route;         /* metrics label index */
  /* long-poll state */
  int suspended;
  int resumed; /* a waker resumed it; the next access-handler call routes it again */
  double wait_deadline; /* monotonic seconds; 0 when not waiting */
  int64_t wait_job;
} srv_request;

struct srv {
  srv_config cfg;
  store_t *st;
  tune_workers *workers; /* the load-aware scheduler (tuner/scheduler.h) */
  srv_events *events;    /* SSE rings and streams (events.c) */
  const tune_builder *builder;
  struct MHD_Daemon *mhd;
  char token[256];
  int have_token;
  char *networks_json; /* cached GET /networks body */
  char targets[4][256]; /* this machine's target string per backend, in tc_backend_at order */
  char compiler_version[32];
  double started_at;
  /* suspended long-poll requests */
  pthread_mutex_t wait_mu;
  pthread_cond_t wait_cv;
  srv_request *waiting[1024];
  int nwaiting;
  int wait_stop;
  pthread_t waker;
  int waker_started;
  /* metrics */
  pthread_mutex_t metrics_mu;
  int64_t requests[32][16]; /* route x status slot */
  int status_codes[16];
  int nstatus;
  int64_t bytes_served;
  int lock_fd;
  /* manifest cache: the newest version's manifest per key, valid while cache_gen is unchanged (every job
   * event and every delete bumps it), so the hot metadata route skips SQLite */
  pthread_mutex_t cache_mu;
  uint64_t cache_gen;
  struct srv_manifest_entry {
    char key[400];
    char etag[80];
    char *manifest;
    size_t len;
    uint64_t gen;
  } cache[64];
};

/* Metric labels for routes. */
enum srv_route {
  SRV_ROUTE_OTHER = 0,
  SRV_ROUTE_MODEL,
  SRV_ROUTE_MANIFEST,
  SRV_ROUTE_CATALOG,
  SRV_ROUTE_BLOB,
  SRV_ROUTE_TUNE,
  SRV_ROUTE_MODEL_DELETE,
  SRV_ROUTE_JOBS,
  SRV_ROUTE_JOB,
  SRV_ROUTE_JOB_CANCEL,
  SRV_ROUTE_NETWORKS,
  SRV_ROUTE_TARGETS,
  SRV_ROUTE_HEALTHZ,
  SRV_ROUTE_READYZ,
  SRV_ROUTE_METRICS,
  SRV_ROUTE_WEB,
  SRV_ROUTE_VERSIONS,
  SRV_ROUTE_TUNING,
  SRV_ROUTE_EVENTS,
  SRV_ROUTE_SCHEDULER,
  SRV_ROUTE_COUNT
};
extern const char *const srv_route_names[SRV_ROUTE_COUNT];

/* Queues resp with status; counts the metric; destroys resp. Returns the MHD result. */
enum MHD_Result srv_queue(srv_t *s, srv_request *r, unsigned int status, struct MHD_Response *resp);
/* Queues a JSON body (copied). */
enum MHD_Result srv_json(srv_t *s, srv_request *r, unsigned int status, const char *json);
/* Queues {"error":{"code","message", ...extra}}; extra is a JSON object text merged in, or NULL. */
enum MHD_Result srv_error(srv_t *s, srv_request *r, unsigned int status, const char *code,
                          const char *extra_json, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* The value of a query parameter, percent-decoded into out; 0 when absent. -1 when malformed. */
int srv_query(const srv_request *r, const char *name, char *out, size_t n);
/* Percent-decodes in into out; returns -1 on a malformed escape, an encoded '/' or NUL, or overflow. */
int srv_pct_decode(const char *in, size_t len, char *out, size_t n);
/* Adds bytes to the served-bytes counter. */
void srv_count_bytes(srv_t *s, int64_t n);

/* Routes (routes.c): dispatches a complete request. */
enum MHD_Result srv_route(srv_t *s, srv_request *r);
/* Long-poll plumbing (http.c). */
void srv_suspend(srv_t *s, srv_request *r, double seconds, int64_t job_id);
/* Called by the worker pool's listener when a job changes. */
void srv_job_event(void *ctx, int64_t job_id);

/* Live progress (events.c). srv_events_new starts the heartbeat timer; srv_events_stop ends every stream (call
 * before MHD_stop_daemon); srv_events_free after the daemon stopped. */
th_status srv_events_new(int max_total, int max_per_ip, srv_events **out);
void srv_events_stop(srv_events *E);
void srv_events_free(srv_events *E);
/* The scheduler's typed event listener; ctx is the srv_t. */
void srv_events_on_job(void *ctx, int64_t job_id, tune_event_kind kind, const char *json);
/* GET /jobs/{id}/events: a Server-Sent Events stream. */
enum MHD_Result srv_events_route(srv_t *s, srv_request *r, const char *id_text);
/* GET /scheduler: resources, admitted jobs' stages, the queue, the learned estimates. */
enum MHD_Result srv_scheduler_route(srv_t *s, srv_request *r);

#endif
