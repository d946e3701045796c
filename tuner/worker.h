/* tune_workers: the registry's background job runner, now a thin face of the load-aware scheduler
 * (scheduler.h): jobs are claimed from the store's persistent queue and run as stages through one interface,
 * tune_builder: build(network, framework, batch, target, options) -> bundle files, published through a callback
 * (a tuning job publishes twice: a quick build, then the tuned one). A builder either runs a job whole (run) or
 * as a state machine of stages (open/next/step/close) so that the scheduler interleaves the stages of many jobs
 * by the resource each needs. Job state and progress are persisted in the store as they change; a cancel takes
 * effect between stages; a failure keeps its message. Listeners hear about every change (the server uses that
 * to answer long polls) and get typed events (stage, progress, published, done) for the SSE stream. */
#ifndef TUNE_WORKER_H
#define TUNE_WORKER_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"
#include "th_buf.h"
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

struct tune_progress; /* tune_job.h */

/* A job's progress as its builder reports it (server/ turns it into the job's progress document). Every pointer
 * is borrowed for the duration of the call. */
typedef struct tune_job_progress {
  const struct tune_progress *session; /* the tuning session's progress, or NULL */
  const char *phase;                   /* "build", "rebuild", "untuned", or NULL while tuning */
  int has_build;                       /* build below is set: a bundle build is under way */
  struct {
    const char *stage; /* the compiler's stage */
    int done, total;
  } build;
  const char *tuning; /* why tuning does not run (phase "untuned"), or NULL */
} tune_job_progress;

typedef struct tune_build_env {
  store_t *st;
  int64_t job_id; /* 0 outside a registry job (CLI) */
  const store_key *key;
  const char *kind;     /* "build" or "tune" */
  const char *options;  /* JSON text, never NULL */
  const char *work_dir; /* a fresh directory the builder may use; removed afterwards */
  int cpu_pool;         /* slots in the scheduler's CPU pool (0: no scheduler); a step granted fewer shares it */
  /* Reports a stage name and the job's progress (either may be NULL; both are borrowed for the call): the runner
   * persists them and tells its listeners. */
  void (*progress)(void *ctx, const char *stage, const tune_job_progress *progress);
  /* Nonzero once a cancel was requested; builders check it between stages. */
  int (*cancelled)(void *ctx);
  /* Publishes a new model version; *version receives its number. */
  th_status (*publish)(void *ctx, const tune_build_output *out, int *version);
  void *ctx;
  /* The claim's fencing token (store_job_claim): every write of the job is made under it, so that a runner that
   * lost the job (its lease expired, another worker claimed it) writes nothing more. 0 outside a leased job. */
  int attempt;
  /* The concrete targets this runner measures ("llvm -mcpu=znver4", "cuda -arch=sm_90"), ntargets of them; NULL:
   * this machine's own (tune_target_for), as a runner without a registered target list. */
  const char *const *targets;
  int ntargets;
  /* Hands the job back to the queue for a worker that measures target (a store shared with other workers only;
   * NULL otherwise): after TH_OK the job is no longer this runner's, and the builder ends it without another
   * write. */
  th_status (*handoff)(void *ctx, const char *target);
} tune_build_env;

/* Kinds of stage, for the resources they take and the durations the scheduler learns per kind. */
typedef enum tune_stage_kind {
  TUNE_SK_QUICK = 0, /* quick build + latency measurement + publish v1 (CPU pool + measurement slot) */
  TUNE_SK_SELECT,    /* strategy picks candidates; task start (no shared resource) */
  TUNE_SK_BUILD,     /* compile candidates (CPU pool) */
  TUNE_SK_MEASURE,   /* time candidates (the device's measurement slot; on the CPU also the whole pool) */
  TUNE_SK_UPDATE,    /* store records, update the cost model (no shared resource) */
  TUNE_SK_REBUILD,   /* tuned build + latency measurement + publish (CPU pool + measurement slot) */
  TUNE_SK_JOB,       /* a whole job of a builder without stages (CPU pool + measurement slot) */
  TUNE_SK_COUNT
} tune_stage_kind;

/* What the next stage of a job needs. */
typedef struct tune_stage_desc {
  int kind;           /* tune_stage_kind */
  int cpu_min;        /* CPU slots needed to start (0: none) */
  int cpu_max;        /* slots it can use; -1: the whole pool */
  char device[16];    /* measurement slot ("cpu", "cuda:0"), or "" for none */
  int task, ntasks;   /* tuning task index and count; -1 outside tuning */
  int64_t mem_bytes;  /* estimated peak memory of the stage (a build: weights and workspace from its plan); 0:
                         small */
} tune_stage_desc;

typedef struct tune_builder {
  const char *name;
  /* 1 when framework can be built here; otherwise 0 and a reason that names what is missing. */
  int (*supports)(void *self, const char *framework, char *why, size_t n);
  /* Runs the whole job; publishes at least once on success. On failure writes a message into err. Used when
   * open is NULL. */
  th_status (*run)(void *self, const tune_build_env *env, char *err, size_t errlen);
  void *self;
  /* Optional staged form. open makes a job state (env stays valid until close); next fills d and returns 1
   * while a stage is left, 0 when the job is complete; step runs that stage with cpu_slots CPU slots granted
   * (TH_ERR_CANCELLED when it stopped because env->cancelled said so). */
  th_status (*open)(void *self, const tune_build_env *env, void **job, char *err, size_t errlen);
  int (*next)(void *self, void *job, tune_stage_desc *d);
  th_status (*step)(void *self, void *job, int cpu_slots, char *err, size_t errlen);
  void (*close)(void *self, void *job);
} tune_builder;

typedef struct tune_workers tune_workers;

typedef void (*tune_listener_fn)(void *ctx, int64_t job_id);

/* Typed job events (the SSE stream's source); server/ presents them. */
typedef enum tune_event_kind {
  TUNE_EV_STAGE = 0, /* a stage starts: stage, phase, task, ntasks */
  TUNE_EV_PROGRESS,  /* progress and progress_doc */
  TUNE_EV_PUBLISHED, /* version, tuned, digest */
  TUNE_EV_DONE       /* state, error: the last event of a job */
} tune_event_kind;

/* One event; the fields of its kind are set, and every pointer is borrowed for the duration of the call. */
typedef struct tune_event {
  tune_event_kind kind;
  int64_t job_id;
  const char *stage, *phase; /* STAGE: the stage's and its phase's names */
  int task, ntasks;          /* STAGE: the tuning task, -1 outside tuning */
  const tune_job_progress *progress; /* PROGRESS: NULL when only the stage changed */
  const char *progress_doc;  /* PROGRESS: what the runner's progress encoder made of it (persisted), or NULL */
  int version, tuned;        /* PUBLISHED */
  const char *digest;        /* PUBLISHED: the bundle's sha256 (hex) */
  store_job_state state;     /* DONE */
  const char *error;         /* DONE: NULL when none */
} tune_event;
typedef void (*tune_event_fn)(void *ctx, const tune_event *ev);

/* Turns a progress report into the job's progress document (malloc'd text, which the runner persists in the
 * store, frees, and passes to the event listener as progress_doc), or NULL when out of memory. */
typedef char *(*tune_progress_encoder_fn)(void *ctx, const tune_job_progress *p);

/* Starts the scheduler over st with builder (both borrowed; they must outlive it), admitting at most n jobs
 * at once, with a CPU pool of online cores. work_root is a directory for per-job scratch space. Without a
 * progress encoder (tune_workers_start_opts sets one) a job's stage is persisted, its progress document not. */
th_status tune_workers_start(store_t *st, const tune_builder *builder, int n, const char *work_root,
                             tune_listener_fn listener, void *listener_ctx, tune_workers **out);
/* Wakes idle workers after a job was queued. Thread-safe. */
void tune_workers_notify(tune_workers *w);
/* Stops the pool: running stages end at their next check, and the jobs it held go back to the queue at once
 * (store_worker_stop), to resume from their published versions and stored records; waits for the threads.
 * Accepts NULL. */
void tune_workers_stop(tune_workers *w);
/* Number of jobs admitted (running) right now. */
int tune_workers_busy(tune_workers *w);
/* The same with every option (cpu slots, events); see scheduler.h. opts is a tune_sched_opts. */
struct tune_sched_opts;
th_status tune_workers_start_opts(store_t *st, const tune_builder *builder, const struct tune_sched_opts *o,
                                  tune_workers **out);
/* The scheduler's state (GET /scheduler) into *out; see tune_sched_info_get. */
struct tune_sched_info;
th_status tune_workers_info(tune_workers *w, struct tune_sched_info *out);

#endif
