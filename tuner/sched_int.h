/* The scheduler runtime's internal state, shared by the files of tune_sched (scheduler.c:
 * admission, rounds and the threads; sched_env.c: the callbacks a stage calls; sched_fleet.c:
 * worker registration and heartbeats). Nothing outside tuner/scheduler*.c and tuner/sched_*.c
 * includes it. */
#ifndef TUNE_SCHED_INT_H
#define TUNE_SCHED_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "scheduler.h"
#include "th_limits.h"

typedef struct tune__sjob {
  struct tune__sjob *next;
  tune_sched *s;
  store_job job;
  tune_build_env env;
  char dir[TH_SUBDIR_MAX + 32]; /* work_root/job-<id> */
  void *bj;         /* the builder's job state (staged builders) */
  int done_whole;   /* unstaged builder: its one stage ran */
  int running;      /* a stage is in flight */
  int have_desc;
  tune_stage_desc d;
  int device;       /* index of d.device, or -1 */
  int cpu_grant;
  int64_t mem_held; /* the running stage's memory estimate, counted in res.mem_busy */
  double ready_at, started_at, admitted_at;
  int64_t stages_run;
  double stage_s[TUNE_SK_COUNT]; /* time spent running stages of each kind */
  char err[TH_MSG_MAX];
  /* atomics, as the env callbacks set them from a stage's thread or from open (which runs under mu) */
  atomic_int lost;       /* another claim holds the job (a write was refused, or the heartbeat saw it) */
  atomic_int handed_off; /* the builder handed it back to the queue for a worker with its target */
} tune__sjob;

/* How a job leaves the scheduler besides a store_job_state: its outcome is not recorded here. */
enum { TUNE__END_SHUTDOWN = -1, TUNE__END_LOST = -2, TUNE__END_HANDED_OFF = -3, TUNE__REQUEUE = -4 };

struct tune_sched {
  store_t *st;
  const tune_builder *b;
  tune_sched_opts o;
  char work_root[TH_SUBDIR_MAX]; /* data_dir/work */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int stopping;
  tune__sjob *jobs;
  int njobs;
  tune_sched_resources res;
  char devname[TUNE_SCHED_MAX_DEVICES][16];
  int64_t dev_holder[TUNE_SCHED_MAX_DEVICES];
  tune_sched_estimates est;
  int nthreads;
  pthread_t th[32];
  char worker_name[1400];
  char host[128];
  char targets[TUNE_SCHED_MAX_TARGETS][TH_TARGET_MAX]; /* the concrete targets it registered */
  const char *target_ptrs[TUNE_SCHED_MAX_TARGETS];
  int ntargets;
  int registered; /* a worker row exists (max_jobs > 0) */
  pthread_t hb;   /* the heartbeat thread */
  int hb_started;
  int hb_failing; /* the last heartbeat failed (logged once until it works again) */
  /* what the store could not take while its database was away, written once it answers again
   * (tune__flush_pending): a job's outcome, or its return to the queue */
  struct {
    int64_t id;
    int attempt; /* the claim it was made under: the write stays fenced */
    int state;   /* a store_job_state, or TUNE__REQUEUE */
    char error[512];
  } pending[64];
  int npending;
  double claim_warned_at; /* a failing claim is logged once per 10 s, not once per round */
};

/* sched_env.c: the event fan-out (on_event, and the plain listener for what a reader can see), the
 * fencing check of a refused write, and the tune_build_env callbacks (ctx: the tune__sjob). */
void tune__emit(tune_sched *s, const tune_event *ev);
void tune__refused(tune__sjob *j, th_status rc, const char *what);
void tune__progress(void *ctx, const char *stage, const tune_job_progress *p);
int tune__cancelled(void *ctx);
th_status tune__handoff(void *ctx, const char *target);
th_status tune__publish(void *ctx, const tune_build_output *out, int *version);

/* sched_fleet.c: the worker name (and host) into s, its registration, and the heartbeat thread's
 * body. */
void tune__worker_name(tune_sched *s, const char *given);
th_status tune__register(tune_sched *s);
void *tune__heartbeat_main(void *arg);

#endif
