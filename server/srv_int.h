/* The daemon's internal state, shared by the files of server/: the srv_t body, a request in flight and the
 * metric labels of the routes. Functions are declared in the header of the file that defines them. */
#ifndef SRV_INT_H
#define SRV_INT_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdint.h>

#include "auth.h"
#include "srv.h"
#include "store.h"
#include "th_buf.h"

typedef struct srv_events srv_events;
typedef struct srv_upload srv_upload; /* a streamed upload (networks.c) */

/* A request as the access handler assembled it; owned by libmicrohttpd's connection (freed when it completes). */
typedef struct srv_request {
  struct MHD_Connection *con;
  const char *method;
  char path[2048];   /* raw (still percent-encoded) path */
  char query[2048];  /* raw query string, without '?' */
  th_buf body;
  int body_too_large;
  srv_upload *upload; /* PUT /networks/{name}: the body streams to a file instead of body (networks.c) */
  int answered;       /* a response was queued before the body was read: the rest of the request is ignored */
  int uri_too_long;  /* the path or the query did not fit: answered 414, never routed */
  int route;         /* metrics label index */
  /* long-poll state */
  int suspended;
  int resumed; /* a waker resumed it; the next access-handler call routes it again */
  double wait_deadline; /* monotonic seconds; 0 when not waiting */
  int64_t wait_job;
  char wait_ip[48]; /* the client address, counted against --max-waits-per-ip while suspended */
} srv_request;

struct srv {
  srv_config cfg;
  store_t *st;
  tune_workers *workers; /* the load-aware scheduler (tuner/scheduler.h) */
  srv_events *events;    /* SSE rings and streams (events.c) */
  const tune_builder *builder;
  int64_t mem_budget; /* the scheduler's memory budget (tune_sched_opts, default resolved); 0 when
                         it runs no jobs */
  struct MHD_Daemon *mhd;
  srv_tokens tokens; /* from --token-file, hashed (auth.h) */
  int have_token;
  srv_auth_fails auth_fails; /* failed authentications per client address (auth.h) */
  char *networks_json; /* cached GET /networks body */
  char targets[4][TH_TARGET_MAX]; /* this machine's target string per backend, in tc_backend_at order */
  char compiler_version[32];
  double started_at;
  /* suspended long-poll requests */
  pthread_mutex_t wait_mu;
  pthread_cond_t wait_cv;
  srv_request *waiting[1024];
  int nwaiting;
  /* live jobs that anonymous clients caused, by address (limits.c) */
  pthread_mutex_t anon_mu;
  struct srv_anon_job *anon; /* nanon used of anon_cap */
  int nanon, anon_cap;
  int wait_stop;
  pthread_t waker;
  int waker_started;
  /* job changes from other processes on a shared store (relay.c) */
  store_listener *relay;
  pthread_t relay_thread;
  int relay_stop;
  /* blob garbage collection (gc.c): the thread, and its runs for /metrics (under metrics_mu) */
  pthread_t gc_thread;
  int gc_started;
  pthread_mutex_t gc_mu;
  pthread_cond_t gc_cv;
  int gc_stop; /* under gc_mu */
  int64_t gc_runs[3]; /* by outcome: ok, error, locked_out */
  int64_t gc_swept_blobs, gc_swept_bytes;
  int64_t gc_kept_bytes; /* the last successful run's marked and young bytes */
  double gc_last_run;    /* wall clock; 0 before the first */
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
    char key[TH_KEY_MAX]; /* every field of the store_key (srv__manifest) */
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
  SRV_ROUTE_NETWORK,        /* GET /networks/{name} */
  SRV_ROUTE_NETWORK_PUT,    /* PUT /networks/{name} */
  SRV_ROUTE_NETWORK_DELETE, /* DELETE /networks/{name} */
  SRV_ROUTE_OCI,
  SRV_ROUTE_ALIASES,      /* GET .../aliases[/{alias}] */
  SRV_ROUTE_ALIAS_PUT,    /* PUT .../aliases/{alias} */
  SRV_ROUTE_ALIAS_DELETE, /* DELETE .../aliases/{alias} */
  SRV_ROUTE_WORKERS,      /* GET /workers */
  SRV_ROUTE_COUNT
};
extern const char *const srv_route_names[SRV_ROUTE_COUNT];

#endif
