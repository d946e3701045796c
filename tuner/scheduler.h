/* tune_sched: the load-aware scheduler that runs registry jobs as sequences of stages on shared resources.
 *
 * Resources: a CPU build pool of N slots, and one exclusive measurement slot per device ("cpu" for llvm,
 * "cuda:0" later). A stage asks for CPU slots (a range: it runs with as many as it is granted), for a device's
 * measurement slot, or for nothing (select, update). Measuring on the CPU device also takes every CPU slot, so
 * no build runs on the cores while a CPU kernel is timed; measuring on another device leaves the pool to builds.
 *
 * The decision (tune_sched_pick) is a pure function over plain structs, unit-tested with simulated durations:
 * each waiting stage scores priority + waited/aging_s (aging, so no job starves); the best-scoring stage that
 * fits runs; the best-scoring stage that does not fit reserves the resources it waits for, and a lower stage
 * may only take those resources when its learned duration estimate says it ends before they would free up
 * (backfilling). Estimates are an EWMA of past stage durations per stage kind.
 *
 * The runtime (tune_sched_start) is a small pool of threads inside the daemon or a `tunehub worker`. It registers
 * itself as a worker with the targets it measures (store_worker_register). Each thread, under one mutex, admits
 * queued jobs from the store (store_job_claim under a lease, at most max_jobs admitted), asks tune_sched_pick for
 * the next stage across all admitted jobs, runs it without the lock, and gives its resources back. A heartbeat
 * thread renews the leases every lease_s / 3, requeues jobs whose lease expired anywhere (store_job_reap), and
 * checks that each admitted job is still this runner's. Every write of a job carries its claim's attempt (the
 * fencing token); once a write is refused, or the heartbeat finds the job claimed by another attempt, the job
 * stops here at once with no further write ("lost the lease of job N"). A cancel takes effect between stages;
 * on shutdown, running stages finish (or abort through env->cancelled) and their jobs go back to the queue at
 * once (store_worker_stop); they resume from their published versions and stored records.
 *
 * Thread safety: every tune_sched_* function on a running scheduler is thread-safe. */
#ifndef TUNE_SCHEDULER_H
#define TUNE_SCHEDULER_H

#include <stddef.h>
#include <stdint.h>

#include "sched_policy.h"
#include "store.h"
#include "th_buf.h"
#include "th_status.h"
#include "worker.h"

/* ---- the runtime ---- */
typedef struct tune_sched tune_sched;

typedef struct tune_sched_opts {
  int cpu_slots;        /* 0: online cores */
  int max_jobs;         /* admitted (claimed) jobs at once; default 4 */
  const char *work_root;
  tune_listener_fn listener; /* every change of a job (may be NULL) */
  tune_event_fn on_event;    /* stage / progress / published / done (may be NULL) */
  tune_progress_encoder_fn encode_progress; /* the progress document to persist (NULL: only stages persist) */
  void *listener_ctx;
  tune_sched_policy policy;
  int keep_versions; /* retention after each publish: the key's newest N ready versions and its aliased ones
                        stay, older ones are unpublished (store_model_retain); 0 keeps every version */
  double lease_s;    /* a claim's lease, renewed every lease_s / 3; default TUNE_SCHED_LEASE_S */
  const char *name;  /* the worker name to register; NULL: host:pid:random */
  const char *const *targets; /* the concrete targets it measures (copied), ntargets of them; NULL: none
                                 registered (it claims only jobs any worker may take) */
  int ntargets;
  int64_t mem_budget; /* bytes of estimated peak memory that running stages may hold together (builds and
                         their timing, measurements); 0: no limit. tune_sched_opts_default: three quarters of
                         the machine's memory */
  const struct tune_signer
      *signer; /* borrowed, outlives the scheduler; non-NULL: every publish is signed
                  (provenance.h), the envelope stored beside the bundle */
} tune_sched_opts;

#define TUNE_SCHED_LEASE_S 30.0
#define TUNE_SCHED_MAX_TARGETS 16

void tune_sched_opts_default(tune_sched_opts *o);
/* st and builder are borrowed and must outlive the scheduler. */
th_status tune_sched_start(store_t *st, const tune_builder *builder, const tune_sched_opts *o,
                           tune_sched **out);
/* Wakes the threads after a job was queued or cancelled. */
void tune_sched_notify(tune_sched *s);
/* Stops: no new stage starts, running stages end, the jobs it held go back to the queue and the worker is marked
 * stopped. Accepts NULL. */
void tune_sched_stop(tune_sched *s);
/* The worker name it registered (borrowed; valid until tune_sched_stop). */
const char *tune_sched_name(tune_sched *s);
/* Admitted jobs right now. */
int tune_sched_admitted(tune_sched *s);
/* ---- the state, for GET /scheduler ---- */
typedef struct tune_sched_job_info {
  int64_t id;
  char kind[16];
  store_key key;
  int priority;
  int running;        /* 1: a stage runs now; 0: waiting */
  int64_t stages_run;
  int has_stage;      /* the fields below describe the running or next stage */
  int stage_kind;     /* tune_stage_kind */
  int task, ntasks;
  char device[16];
  int cpu_slots;      /* granted while running, else 0 */
  double for_s;       /* seconds running (running) or waiting (otherwise) */
  double estimate_s;
} tune_sched_job_info;

typedef struct tune_sched_info {
  int cpu_total, cpu_busy;
  int ndevices;
  struct {
    char name[16];
    int busy;
    int64_t holder; /* the job measuring on it, when busy */
  } devices[TUNE_SCHED_MAX_DEVICES];
  int admitted, max_jobs;
  double aging_s;
  tune_sched_job_info *jobs; /* owned; njobs of them, newest admitted first */
  int njobs;
  tune_sched_estimates estimates;
} tune_sched_info;

/* A snapshot of the state into *out (the caller's struct; free its contents with tune_sched_info_free). */
th_status tune_sched_info_get(tune_sched *s, tune_sched_info *out);
/* Frees what tune_sched_info_get put in i (not i itself); accepts NULL. */
void tune_sched_info_free(tune_sched_info *i);

#endif
