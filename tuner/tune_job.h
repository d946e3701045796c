/* A tuning session as a state machine driven from outside, one stage at a time, so that a scheduler can
 * interleave many sessions: builds fill the CPU pool while another session holds the measurement device.
 *
 *   per task:  start (load records, transfer) -> build reference -> set reference (measure)
 *   per batch: select (strategy) -> build (CPU) -> measure (device) -> update (records, model)
 *
 * tune_session_next_stage() says which resource the next stage needs; tune_session_run_stage() runs it.
 * Every trial is written to the store as it is measured, so a session that is stopped (Ctrl-C, cancel,
 * crash) resumes from its records: tasks already at their budget are skipped.
 *
 * Thread safety: one thread drives a session at a time; tune_session_cancel() may be called from any thread
 * or a signal handler. */
#ifndef TUNE_JOB_H
#define TUNE_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "measure.h"
#include "store.h"
#include "tc/backend.h"
#include "tc/space.h"
#include "tc/workload.h"
#include "th_buf.h"

typedef enum tune_resource {
  TUNE_RES_NONE = 0,  /* select / update / task start: cheap, no shared resource */
  TUNE_RES_CPU_BUILD, /* compiling candidates: uses the CPU pool */
  TUNE_RES_MEASURE,   /* timing on the target device: must hold it alone */
  TUNE_RES_DONE       /* nothing left (finished or cancelled) */
} tune_resource;

/* The end-of-task verification (see tune_options.verify_top). A trial's time is one noisy measurement, and the
 * fastest of many is biased low (it won partly by luck); timing the few best again side by side with the
 * fallback, and keeping the median of the rounds, picks the config that is fast, not the one that was lucky. */
#define TUNE_VERIFY_TOP 3
#define TUNE_VERIFY_ROUNDS 3
#define TUNE_VERIFY_MAX 8 /* the largest verify_top */

typedef struct tune_options {
  char tuner[16];          /* "xgb" (default), "ga", "random", "grid" */
  int64_t trials;          /* per task; default 64 (meets the tune.sh target in under 20 min, see README) */
  int64_t early_stopping;  /* 0: off */
  uint64_t seed;           /* default 1 */
  int batch;               /* candidates per select/build/measure round; default 16 */
  int build_threads;       /* default: online cores */
  double build_timeout_s;  /* deadline of one candidate library's build; default TUNE_BUILD_TIMEOUT_S */
  int transfer;            /* seed from records of other workloads of the same template; default 1 */
  int verify_top;          /* at a task's end, time its verify_top best configs and the fallback again in
                              TUNE_VERIFY_ROUNDS interleaved rounds; builds apply the fastest by the median
                              (CPU and device tasks); default TUNE_VERIFY_TOP, 0: off */
  int precision;           /* tc_precision of the build being tuned (default FP32): tune_session_new gives it to
                              the network's GEMM tasks (tc_tasks_take_precision), whose keys gain " tf32" */
  int64_t job_id;          /* stored with every record; 0 from the CLI */
  int attempt;             /* the job claim's fencing token, stored with every record, which the store refuses
                              once the claim is lost (store_record_add); 0 from the CLI */
  const char *work_dir;    /* borrowed; NULL: a fresh directory under $TMPDIR, removed at free */
  tune_measure_opts measure;
} tune_options;

void tune_options_default(tune_options *o);
/* TH_ERR_INVALID with a message naming the valid values when tuner is unknown. */
th_status tune_options_check(const tune_options *o, char *err, size_t n);

typedef struct tune_task_progress {
  char key[512];
  char template_name[64];
  int weight;
  double flops;
  int64_t trials;     /* including trials resumed from the store */
  int64_t budget;
  double best_gflops; /* 0 when none valid yet */
  double verified_gflops; /* of the config the verification chose; 0 when not verified */
  double best_s;      /* the fastest valid trial's time; 0 when none valid yet (a concat has no FLOPs, so the
                       * time, not the GFLOPS, says whether a task has a valid config) */
  double verified_s;  /* the verified time of the chosen config; 0 when not verified */
  double current_gflops; /* of the last valid measured trial */
  int64_t errors;     /* failed trials */
  const char *state;  /* "pending", "tuning", "verifying", "done", "skipped", "failed" */
  char msg[160];      /* why it failed */
} tune_task_progress;

typedef struct tune_progress {
  char tuner[16];     /* the search strategy */
  int ntasks;
  int current;        /* index of the task being tuned; ntasks when finished */
  const char *stage;
  double elapsed_s;
  double eta_s;       /* < 0 when unknown */
  int64_t trials_done, trials_total;
  const tune_task_progress *tasks; /* borrowed; valid until the next call on the session */
} tune_progress;

typedef struct tune_session tune_session_t;

/* A session over the tasks of network net (a zoo network or an uploaded file: tune_net_resolve) on backend b (NULL: the host CPU, llvm), tasks with a one-point space
 * left out (tc_network_tasks). arch: the device's arch for a backend that times candidates on its device
 * (cuda: "sm_XX"; NULL or "": the device's), ignored otherwise. Such a session compiles candidates on the CPU
 * (build stage) and measures them with tc_backend_measure in the worker process (measure stage), with no
 * reference stage (the backend checks against the CPU reference); the worker is started first and queried
 * for the device: without one, TH_ERR_UNSUPPORTED and tune_session_new_errmsg() says "no CUDA device: ...".
 * Records use the target's string ("llvm -mcpu=...", "cuda -arch=sm_XX"). st is borrowed and must outlive
 * the session. */
th_status tune_session_new(store_t *st, const tc_backend *b, const char *arch, const tc_netsrc *net, int batch,
                           const tune_options *o, tune_session_t **out);
/* The same over explicit workloads (weights = occurrences, may be NULL; NCHW for cuda). */
th_status tune_session_new_workloads(store_t *st, const tc_backend *b, const char *arch, const tc_workload *wls,
                                     const int *weights, int n, const tune_options *o, tune_session_t **out);
/* Why the last tune_session_new* call on this thread failed (thread-local; "" when it did not). */
const char *tune_session_new_errmsg(void);
void tune_session_free(tune_session_t *s);
/* The session's target string ("llvm -mcpu=znver4", "cuda -arch=sm_90"); valid while s lives. */
const char *tune_session_target(const tune_session_t *s);
const char *tune_session_errmsg(const tune_session_t *s);
/* How many measurement workers of the session died under a trial or its reference (tune_measurer_deaths);
 * *why (may be NULL; borrowed, valid until the next stage) says how the last one did. Tuning goes on with a
 * fresh worker. */
int tune_session_worker_deaths(const tune_session_t *s, const char **why);

tune_resource tune_session_next_stage(const tune_session_t *s);
/* Runs the next stage. A failing candidate is a result, not an error; errors are store or system failures
 * (message in tune_session_errmsg). */
th_status tune_session_run_stage(tune_session_t *s);
/* Runs every stage in order until done or cancelled; calls cb after each stage when not NULL. */
th_status tune_session_run_all(tune_session_t *s, void (*cb)(void *ctx, const tune_session_t *s), void *ctx);
/* Sets the threads the next build stages use (a scheduler grants CPU slots per stage); n >= 1. */
void tune_session_set_build_threads(tune_session_t *s, int n);
/* Caps the candidates one build stage compiles (0: the whole batch, the default). With a cap, a batch takes
 * several build stages before it is measured: a scheduler that granted part of a shared CPU pool keeps the
 * stage short, so that another job's CPU measurement does not wait for a whole batch. */
void tune_session_set_build_limit(tune_session_t *s, int max_candidates);
/* Asks the session to stop at the next stage boundary. Async-signal-safe. */
void tune_session_cancel(tune_session_t *s);
int tune_session_cancelled(const tune_session_t *s);

void tune_session_progress(const tune_session_t *s, tune_progress *out);
/* The memory the measurement worker holds for the current task: its argument buffers, the pristine copies of
 * the inputs and the reference outputs (tune_layout), so about three times the arguments; 0 when no task is
 * current. A scheduler admits measurements within its memory budget by it. */
int64_t tune_session_task_bytes(const tune_session_t *s);

/* The config a build should use for a workload: the best valid record for (workload, target) -> "tuned";
 * else the config of the nearest tuned workload of the same template that is valid here -> "transferred";
 * else the template's fallback -> "fallback". space must be the workload's space on the target the string
 * names (tc_backend_target_parse: "cuda -arch=sm_XX" records are validated with the GPU templates for that
 * arch, "llvm -mcpu=..." ones with the host CPU's). */
th_status tune_lookup_config(store_t *st, const char *target, const tc_workload *wl, const tc_space *space,
                             tc_config *cfg, char source[16]);

/* Adapter for tc_build_opts.lookup (compiler/include/tc/tc.h): ctx is a tune_build_lookup_ctx. Returns TH_ERR_NOT_FOUND
 * when only the fallback is left, so the compiler applies (and reports) its own fallback. */
typedef struct tune_build_lookup_ctx {
  store_t *st;        /* borrowed */
  const char *target; /* records' target string, e.g. from tune_target_str() */
} tune_build_lookup_ctx;
th_status tune_build_lookup(void *ctx, const tc_workload *wl, const char *workload_key, const tc_space *space,
                            tc_config *cfg, char source[16]);

#endif
