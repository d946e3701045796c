/* The tunehub daemon as main.c sees it: its configuration (the `serve` flags) and start/stop. server/ alone maps
 * th_status codes to HTTP; the other modules never see HTTP. The daemon's internals are in srv_int.h, and its
 * files are layered: request.c and response.c at the bottom, present.c (the JSON documents), longpoll.c, then
 * events.c and routes.c, and http.c (the libmicrohttpd daemon) on top. */
#ifndef SRV_H
#define SRV_H

#include <stddef.h>
#include <stdint.h>

#include "th_limits.h"
#include "th_status.h"
#include "worker.h"

#define SRV_MAX_BODY (64 * 1024)
/* The body of POST /records (tuning records as JSON Lines) and the text of GET /records. */
#define SRV_RECORDS_MAX_BODY (16 * 1024 * 1024)
#define SRV_RECORDS_MAX_EXPORT (64 * 1024 * 1024)
#define SRV_MAX_SEGMENT 128
#define SRV_MAX_WAIT_S 600
/* The grace period `tunehub gc` and the daemon give an unreferenced blob before sweeping it: an hour. A
 * publish puts its bundle and .so and then inserts the version that references them, seconds apart even for
 * a multi-gigabyte bundle on a slow disk; an hour is far longer than that, and is the age store_recover
 * already waits for on a shared store's files. */
#define SRV_GC_GRACE_S 3600
/* How long the daemon waits for another process's SQLite write lock before a request answers 503 (Retry-After)
 * and a job goes back to the queue (store_wait_limit). */
#define SRV_STORE_WAIT_MS 2000

typedef struct srv_config {
  char listen_host[64];
  int port;
  char data_dir[TH_DIR_MAX]; /* the embedded store, or with db the local cache and scratch space */
  char db[TH_DIR_MAX]; /* --db or TUNEHUB_DB: the PostgreSQL URL of a shared store; "" for the embedded
                    one */
  char token_file[TH_DIR_MAX];
  char signing_key[TH_DIR_MAX]; /* --signing-key: the Ed25519 key (PEM PKCS#8) that signs every
                                   publish */
  const struct tune_signer
      *signer;         /* that key, loaded by the caller of srv_start (borrowed, outlives the
                          daemon); NULL: versions are published unsigned */
  int private_reads;   /* --private: every read but /healthz, /readyz and the page's files needs a
                          read token */
  int auth_fail_limit; /* failed authentications an address may make a minute
                          (SRV_AUTH_FAILS_PER_MIN; 0: no limit, for the fuzz harness); not a flag */
  char web_dir[TH_DIR_MAX];
  int workers;
  int http_threads;
  int max_batch;
  int max_queued;
  int connection_limit;
  int per_ip_limit;  /* connections one client address may hold (--max-connections-per-ip) */
  int miss_rate;     /* new jobs an anonymous client may cause a minute (--miss-rate; 0: no limit) */
  int anon_jobs_per_ip; /* live jobs an anonymous client address may have caused (--anon-jobs-per-ip;
                           0: no limit) */
  int anon_queue_share; /* percent of max_queued that all anonymous clients' live jobs may hold
                           (--anon-queue-share) */
  int max_waits_per_ip; /* ?wait= requests one client address may hold suspended (--max-waits-per-ip) */
  int timeout_s;
  int miss_tunes;  /* 1: a miss queues a tune job (v1 quick build, then tuned v2); 0: a build job only */
  int miss_trials; /* trials per task for a miss's tuning; 0 = the tuner's default budget */
  int cpu_slots;   /* the scheduler's CPU build pool; 0 = online cores */
  int max_streams, max_streams_per_ip; /* SSE caps */
  int64_t max_upload; /* bytes of an uploaded ONNX file (PUT /networks/{name}); default 2 GiB */
  int64_t mem_budget; /* the scheduler's memory budget for builds and measurements (tune_sched_opts); 0:
                         three quarters of the machine */
  int64_t min_free; /* --min-free: free bytes on the data directory below which new work is refused
                       (507); -1: the default (srv_start: the smaller of 1 GiB and 5% of the file
                       system); 0: none */
  int keep_versions;  /* retention: ready versions kept per key after each publish, aliased ones aside; 0 = all */
  int lease_s;        /* the lease of the scheduler's job claims, renewed every lease_s / 3 */
  int gc_interval_s;  /* seconds between blob garbage collections (--gc-interval; 0: none) */
  int gc_grace_s;     /* an unreferenced blob's grace period before a collection sweeps it (--gc-grace) */
  int no_listen;      /* 1: no listening socket; connections come only through MHD_add_connection on the daemon
                         (the in-process fuzz harness, tests/fuzz/fuzz_http.c); not a flag */
} srv_config;

/* Defaults: 127.0.0.1:8080, ./data, web/ from the source tree, 4 admitted jobs, max batch 256, 256 queued jobs,
 * misses tune, a 30 s lease, a blob garbage collection every hour with an hour's grace. */
void srv_config_defaults(srv_config *c);
/* Parses `serve` flags; writes a message to err on a bad flag. Without --db, db comes from the environment
 * variable TUNEHUB_DB (store_db_resolve). --workers 0 (a serving replica that runs no jobs) needs a shared store:
 * with the embedded one nothing else would run them. */
th_status srv_config_parse(srv_config *c, int argc, char **argv, char *err, size_t n);
/* A byte count flag: a whole number with an optional K, M, G, T or P (binary), from lo to hi; err
 * names the flag and the valid form. */
th_status srv_bytes_flag(const char *flag, const char *v, int64_t lo, int64_t hi, int64_t *out, char *err, size_t n);

typedef struct srv srv_t;

/* Opens the store, recovers, starts the workers and the HTTP daemon. builder is borrowed. */
th_status srv_start(const srv_config *c, const tune_builder *builder, srv_t **out, char *err, size_t n);
/* Stops accepting, resumes every suspended request, stops workers and closes the store. Accepts NULL. */
void srv_stop(srv_t *s);

#endif
