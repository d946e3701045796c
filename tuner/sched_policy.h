/* The scheduling policy of tune_sched (scheduler.h), a pure function of plain structs with no
 * threads, store or clock of its own: which waiting stage starts now on which resources
 * (tune_sched_pick: priority, aging, memory, backfilling by estimates), and the learned
 * stage-duration estimates it reads. Kept apart from the runtime so that it can be tested, and
 * reasoned about, as a function of its arguments. */
#ifndef TUNE_SCHED_POLICY_H
#define TUNE_SCHED_POLICY_H

#include <stdint.h>

#include "worker.h"

#define TUNE_SCHED_MAX_DEVICES 8
#define TUNE_SCHED_ALL_CPU (-1) /* cpu_max: every slot of the pool */

/* The pure decision's view of the resources. *_free_at: estimated (monotonic) time the running stages that
 * hold the resource end; used for backfilling only. */
typedef struct tune_sched_resources {
  int cpu_total, cpu_busy;
  double cpu_free_at;
  int64_t mem_budget, mem_busy; /* bytes: the budget (0: none) and what running stages are estimated to hold */
  int ndevices;
  int device_busy[TUNE_SCHED_MAX_DEVICES];
  int device_is_cpu[TUNE_SCHED_MAX_DEVICES];
  double device_free_at[TUNE_SCHED_MAX_DEVICES];
} tune_sched_resources;

/* One runnable stage (a job's next stage). */
typedef struct tune_sched_cand {
  int64_t job;
  int priority;      /* higher runs first */
  double ready_at;   /* monotonic time the stage became runnable */
  int cpu_min;       /* CPU slots it needs to start (0: none) */
  int cpu_max;       /* slots it can use; TUNE_SCHED_ALL_CPU: the whole pool */
  int device;        /* measurement slot index, or -1 */
  double estimate_s; /* learned duration */
  int64_t mem_bytes; /* estimated peak memory (tune_stage_desc.mem_bytes); 0: small */
} tune_sched_cand;

typedef struct tune_sched_policy {
  double aging_s; /* waiting this long is worth one priority point; default 5 */
} tune_sched_policy;

/* Picks the stage to start now: its index in c, or -1 when none may start. *cpu_grant receives the CPU slots
 * it gets (the whole pool for a CPU-device measurement). Memory: a stage with mem_bytes starts only while the
 * running stages' estimates and its own fit mem_budget, or when no stage that holds memory runs (a build
 * larger than the whole budget runs alone rather than never); the best stage blocked on memory keeps every
 * later memory-holding stage from starting before it. Pure: reads only its arguments. */
int tune_sched_pick(const tune_sched_resources *r, const tune_sched_cand *c, int n, double now,
                    const tune_sched_policy *p, int *cpu_grant);

/* ---- duration estimates ---- */
typedef struct tune_sched_estimates {
  double mean_s[TUNE_SK_COUNT]; /* EWMA */
  int64_t samples[TUNE_SK_COUNT];
} tune_sched_estimates;

void tune_sched_estimates_init(tune_sched_estimates *e);
/* Folds one observed duration in (alpha 0.3; the first sample sets the mean). */
void tune_sched_estimates_add(tune_sched_estimates *e, int kind, double seconds);
const char *tune_sched_kind_str(int kind);
/* The stage name a stage kind reports ("select", "build", "measure", "update", "rebuild") and the phase it
 * belongs to ("quick", "tune", "rebuild", "job"). Never NULL. */
const char *tune_sched_stage_str(int kind);
const char *tune_sched_phase_str(int kind);

#endif
