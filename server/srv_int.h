/* The daemon's internal state, shared by the files of server/: the srv_t body, a request in flight and the
 * routes of route_table.h (their labels, arguments and handlers). Other functions are declared in the
 * header of the file that defines them. */
#ifndef SRV_INT_H
#define SRV_INT_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdint.h>

#include "auth.h"
#include "route_table.h"
#include "srv.h"
#include "store.h"
#include "tc/backend.h"
#include "th_buf.h"

/* The distinct HTTP statuses /metrics counts per route; later ones share the last slot. */
#define SRV_STATUS_SLOTS 16

/* Metric labels for routes: 0 for a request no route matched, then one per row of route_table.h. */
enum srv_route {
  SRV_ROUTE_OTHER = 0,
#define X(id, name, methods, pattern, access, handler) SRV_ROUTE_##id,
  SRV_ROUTE_TABLE(X)
#undef X
  SRV_ROUTE_COUNT
};
/* "other", then each route's name: the label of /metrics (response.c). */
extern const char *const srv_route_names[];

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
  /* ?target=auto: the target chosen for the client and why, sent as X-Tunehub-Target(-Reason) */
  char auto_target[32];
  char auto_reason[768];
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
  /* this machine's target string per backend, in tc_backend_at order */
  char targets[TC_BACKEND_COUNT][TH_TARGET_MAX];
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
  int64_t requests[SRV_ROUTE_COUNT][SRV_STATUS_SLOTS]; /* route x status slot (response.c) */
  int status_codes[SRV_STATUS_SLOTS];
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

/* ---- the routes of route_table.h: what the router hands their handlers ---- */

/* The methods of a route (route_table.h's methods column: SRV_METHODS_<column>). */
enum {
  SRV_METHOD_GET = 1,
  SRV_METHOD_HEAD = 2,
  SRV_METHOD_POST = 4,
  SRV_METHOD_PUT = 8,
  SRV_METHOD_DELETE = 16,
  SRV_METHODS_GH = SRV_METHOD_GET | SRV_METHOD_HEAD,
  SRV_METHODS_GET = SRV_METHOD_GET,
  SRV_METHODS_POST = SRV_METHOD_POST,
  SRV_METHODS_PUT = SRV_METHOD_PUT,
  SRV_METHODS_DELETE = SRV_METHOD_DELETE
};

/* Who may call a route (route_table.h's access column; see there). */
typedef enum srv_access {
  SRV_ACCESS_OPEN,
  SRV_ACCESS_PAGE,
  SRV_ACCESS_READ,
  SRV_ACCESS_TUNE,
  SRV_ACCESS_ADMIN
} srv_access;

/* The most segments a routed path has (more: 404). */
#define SRV_ROUTE_MAX_SEGS 8

/* What the router hands a handler: the decoded path segments (borrowed, valid during the call) and,
 * for a pattern with {key}, the validated key (else NULL). */
typedef struct srv_route_args {
  const char *seg[SRV_ROUTE_MAX_SEGS];
  int nseg;
  const store_key *key;
} srv_route_args;

/* The handlers of route_table.h: each queues its response and returns libmicrohttpd's result. The
 * method, the key and the access column were checked before the call. */
#define X(id, name, methods, pattern, access, handler) \
  enum MHD_Result srv_route_##handler(srv_t *s, srv_request *r, const srv_route_args *a);
SRV_ROUTE_TABLE(X)
#undef X

#endif
