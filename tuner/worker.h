/* tune_workers: the registry's background job runner. A pool of threads claims jobs from the store's persistent
 * queue and runs each through one interface, tune_builder: build(network, framework, batch, target, options) ->
 * bundle files, published through a callback (a tuning job publishes twice: a quick build, then the tuned one).
 * Job state and progress are persisted in the store as they change; a cancel takes effect between stages; a
 * failure keeps its message. Listeners hear about every publish and every finished job (the server uses that
 * to answer long-polling requests). */
#ifndef TUNE_WORKER_H
#define TUNE_WORKER_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"
#include "th_status.h"

/* What a build produced. Paths are borrowed for the duration of the publish call; the files are copied into
 * the content-addressed store, and the builder may delete them afterwards. */
typedef struct tune_build_output {
  const char *tar_path;
  const char *so_path;
  const char *manifest; /* JSON text */
  double latency_ms;    /* < 0 when not measured */
  int tuned;
} tune_build_output;

typedef struct tune_build_env {
  store_t *st;
  int64_t job_id; /* 0 outside a registry job (CLI) */
  const store_key *key;
  const char *kind;     /* "build" or "tune" */
  const char *options;  /* JSON text, never NULL */
  const char *work_dir; /* a fresh directory the builder may use; removed afterwards */
  /* Persists a stage name and progress JSON (either may be NULL). */
  void (*progress)(void *ctx, const char *stage, const char *progress_json);
  /* Nonzero once a cancel was requested; builders check it between stages. */
  int (*cancelled)(void *ctx);
  /* Publishes a new model version; *version receives its number. */
  th_status (*publish)(void *ctx, const tune_build_output *out, int *version);
  void *ctx;
} tune_build_env;

typedef struct tune_builder {
  const char *name;
  /* 1 when framework can be built here; otherwise 0 and a reason that names what is missing. */
  int (*supports)(void *self, const char *framework, char *why, size_t n);
  /* Runs the whole job; publishes at least once on success. On failure writes a message into err. */
  th_status (*run)(void *self, const tune_build_env *env, char *err, size_t errlen);
  void *self;
} tune_builder;

typedef struct tune_workers tune_workers;

typedef void (*tune_listener_fn)(void *ctx, int64_t job_id);

/* Starts n worker threads over st with builder (both borrowed; they must outlive the pool). work_root is a
 * directory for per-job scratch space. */
th_status tune_workers_start(store_t *st, const tune_builder *builder, int n, const char *work_root,
                             tune_listener_fn listener, void *listener_ctx, tune_workers **out);
/* Wakes idle workers after a job was queued. Thread-safe. */
void tune_workers_notify(tune_workers *w);
/* Stops the pool: running jobs are left 'running' in the store (the next start requeues them) unless they end
 * first; waits for the threads. Accepts NULL. */
void tune_workers_stop(tune_workers *w);
/* Number of jobs running right now. */
int tune_workers_busy(tune_workers *w);

#endif
