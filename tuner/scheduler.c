/* The load-aware scheduler (see scheduler.h): the pure pick over plain structs, the learned stage-duration
 * estimates, and the in-process runtime that claims jobs from the store under a lease, runs their stages on a
 * small thread pool by resource, priority, aging and estimates, renews its leases from a heartbeat thread, and
 * records each job's outcome under the claim's fencing token. */
#include "scheduler.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "th_alloc.h"
#include "th_log.h"
#include "backend.h"
#include "th_util.h"

/* ---- the pure decision ---- */

static int tune__uses_cpu(const tune_sched_resources *r, const tune_sched_cand *c) {
  int dev_cpu = c->device >= 0 && c->device < r->ndevices && r->device_is_cpu[c->device];
  return dev_cpu || c->cpu_min != 0;
}

/* 1 when c's memory estimate fits beside the running stages' (or none that holds memory runs). */
static int tune__mem_fits(const tune_sched_resources *r, const tune_sched_cand *c) {
  return c->mem_bytes <= 0 || r->mem_budget <= 0 || r->mem_busy <= 0 || r->mem_busy + c->mem_bytes <= r->mem_budget;
}

/* 1 when c can start now; *grant = the CPU slots it gets. */
static int tune__fits(const tune_sched_resources *r, const tune_sched_cand *c, int *grant) {
  *grant = 0;
  if (c->device >= r->ndevices) return 0;
  if (!tune__mem_fits(r, c)) return 0;
  if (c->device >= 0 && r->device_busy[c->device]) return 0;
  int dev_cpu = c->device >= 0 && r->device_is_cpu[c->device];
  int free_slots = r->cpu_total - r->cpu_busy;
  if (dev_cpu || c->cpu_min < 0) { /* the whole pool: a CPU measurement, or a stage that asks for it all */
    if (r->cpu_busy != 0) return 0;
    *grant = r->cpu_total;
    return 1;
  }
  if (c->cpu_min == 0) return 1;
  int need = c->cpu_min > r->cpu_total ? r->cpu_total : c->cpu_min;
  if (free_slots < need || free_slots < 1) return 0;
  int max = c->cpu_max < 0 || c->cpu_max > r->cpu_total ? r->cpu_total : c->cpu_max;
  *grant = free_slots < max ? free_slots : max;
  if (*grant < need) *grant = need;
  return 1;
}

static double tune__score(const tune_sched_cand *c, double now, double aging_s) {
  double waited = now - c->ready_at;
  if (waited < 0) waited = 0;
  return (double)c->priority + waited / aging_s;
}

int tune_sched_pick(const tune_sched_resources *r, const tune_sched_cand *c, int n, double now,
                    const tune_sched_policy *p, int *cpu_grant) {
  double aging = p && p->aging_s > 0 ? p->aging_s : 5.0;
  int order[256];
  if (n > 256) n = 256;
  for (int i = 0; i < n; i++) order[i] = i;
  /* best first: score, then the shorter estimate, then the older job */
  for (int i = 1; i < n; i++) {
    int k = order[i], j = i;
    double sk = tune__score(&c[k], now, aging);
    while (j > 0) {
      const tune_sched_cand *a = &c[order[j - 1]];
      double sa = tune__score(a, now, aging);
      int before = sk > sa + 1e-12 ||
                   (sk > sa - 1e-12 && (c[k].estimate_s < a->estimate_s ||
                                        (c[k].estimate_s == a->estimate_s && c[k].job < a->job)));
      if (!before) break;
      order[j] = order[j - 1];
      j--;
    }
    order[j] = k;
  }
  /* reservations held by the best blocked stage on each resource: when it could start */
  double cpu_resv = -1, dev_resv[TUNE_SCHED_MAX_DEVICES];
  int mem_resv = 0; /* a better stage waits for memory: no later one may take memory before it */
  for (int d = 0; d < TUNE_SCHED_MAX_DEVICES; d++) dev_resv[d] = -1;
  for (int oi = 0; oi < n; oi++) {
    const tune_sched_cand *x = &c[order[oi]];
    int uses_cpu = tune__uses_cpu(r, x);
    int dev = x->device >= 0 && x->device < r->ndevices ? x->device : -1;
    double end = now + (x->estimate_s > 0 ? x->estimate_s : 0);
    int conflict = (uses_cpu && cpu_resv >= 0 && end > cpu_resv) || (dev >= 0 && dev_resv[dev] >= 0 && end > dev_resv[dev]) ||
                   (mem_resv && x->mem_bytes > 0);
    int grant = 0;
    if (!conflict && tune__fits(r, x, &grant)) {
      if (cpu_grant) *cpu_grant = grant;
      return order[oi];
    }
    if (conflict) continue;
    /* blocked: reserve what it waits for, from the time the holders are expected to end */
    double at = now;
    if (uses_cpu && r->cpu_busy > 0 && r->cpu_free_at > at) at = r->cpu_free_at;
    if (dev >= 0 && r->device_busy[dev] && r->device_free_at[dev] > at) at = r->device_free_at[dev];
    if (uses_cpu && cpu_resv < 0) cpu_resv = at;
    if (dev >= 0 && dev_resv[dev] < 0) dev_resv[dev] = at;
    if (!tune__mem_fits(r, x)) mem_resv = 1;
  }
  return -1;
}

/* ---- estimates ---- */

static const char *const tune__kind_names[TUNE_SK_COUNT] = {"quick", "select", "build", "measure",
                                                            "update", "rebuild", "job"};
static const double tune__kind_prior[TUNE_SK_COUNT] = {10.0, 0.05, 2.0, 2.0, 0.05, 10.0, 10.0};

const char *tune_sched_kind_str(int kind) {
  return kind >= 0 && kind < TUNE_SK_COUNT ? tune__kind_names[kind] : "unknown";
}

void tune_sched_estimates_init(tune_sched_estimates *e) {
  for (int i = 0; i < TUNE_SK_COUNT; i++) {
    e->mean_s[i] = tune__kind_prior[i];
    e->samples[i] = 0;
  }
}

void tune_sched_estimates_add(tune_sched_estimates *e, int kind, double seconds) {
  if (kind < 0 || kind >= TUNE_SK_COUNT || seconds < 0) return;
  e->mean_s[kind] = e->samples[kind] == 0 ? seconds : 0.7 * e->mean_s[kind] + 0.3 * seconds;
  e->samples[kind]++;
}

/* ---- the runtime ---- */

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


void tune_sched_opts_default(tune_sched_opts *o) {
  memset(o, 0, sizeof *o);
  long nc = sysconf(_SC_NPROCESSORS_ONLN);
  o->cpu_slots = nc > 0 ? (int)nc : 1;
  o->max_jobs = 4;
  o->work_root = "/tmp/tunehub-work";
  o->policy.aging_s = 5.0;
  o->lease_s = TUNE_SCHED_LEASE_S;
  /* three quarters of the machine: the rest is the daemon, the page cache and whatever else runs there */
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  o->mem_budget = pages > 0 && page > 0 ? (int64_t)pages * page / 4 * 3 : 0;
}

/* Typed events go to on_event; the plain listener (long polls, caches) hears the changes that a reader of the
 * job or the models can see: progress, publishes and the end, not every stage start. */
static void tune__emit(tune_sched *s, const tune_event *ev) {
  if (s->o.on_event) s->o.on_event(s->o.listener_ctx, ev);
  if (s->o.listener && ev->kind != TUNE_EV_STAGE) s->o.listener(s->o.listener_ctx, ev->job_id);
}

/* A fenced write of job j was refused (rc TH_ERR_CONFLICT; what names the write): the job is another claim's
 * now, and stops here at its next check. Lock-free (lost is atomic): open calls back under mu. */
static void tune__refused(tune__sjob *j, th_status rc, const char *what) {
  if (rc != TH_ERR_CONFLICT) return;
  TH_LOG(TH_LOG_WARN, "job %lld: %s refused: %s", (long long)j->job.id, what, store_errmsg(j->s->st));
  atomic_store(&j->lost, 1);
  pthread_cond_broadcast(&j->s->cv);
}

/* env callbacks (run on the stage's thread, without the scheduler lock) */
static void tune__progress(void *ctx, const char *stage, const tune_job_progress *p) {
  tune__sjob *j = ctx;
  tune_sched *s = j->s;
  char *doc = p && s->o.encode_progress ? s->o.encode_progress(s->o.listener_ctx, p) : NULL;
  th_status rc = store_job_progress(s->st, j->job.id, j->job.attempts, stage, doc);
  tune__refused(j, rc, "a progress write");
  if (rc != TH_ERR_CONFLICT) {
    tune_event ev = {.kind = TUNE_EV_PROGRESS, .job_id = j->job.id, .progress = p, .progress_doc = doc};
    tune__emit(s, &ev);
  }
  free(doc);
}

static int tune__cancelled(void *ctx) {
  tune__sjob *j = ctx;
  pthread_mutex_lock(&j->s->mu);
  int stop = j->s->stopping;
  pthread_mutex_unlock(&j->s->mu);
  return stop || atomic_load(&j->lost) || atomic_load(&j->handed_off) ||
         store_job_cancel_requested(j->s->st, j->job.id);
}

static th_status tune__handoff(void *ctx, const char *target) {
  tune__sjob *j = ctx;
  th_status rc = store_job_handoff(j->s->st, j->job.id, j->job.attempts, target, NULL);
  tune__refused(j, rc, "the handoff");
  if (rc != TH_OK) return rc;
  TH_LOG(TH_LOG_INFO, "job %lld handed back to the queue: tuning %s/%s/%d waits for a worker with target %s",
         (long long)j->job.id, j->job.key.framework, j->job.key.network, j->job.key.batch, target);
  atomic_store(&j->handed_off, 1);
  /* long polls on the job see it queued again (its stream already has the progress that says why) */
  if (j->s->o.listener) j->s->o.listener(j->s->o.listener_ctx, j->job.id);
  return TH_OK;
}

static th_status tune__publish(void *ctx, const tune_build_output *out, int *version) {
  tune__sjob *j = ctx;
  store_t *st = j->s->st;
  char tar_digest[65], so_digest[65];
  /* a claim already lost copies no bundle; the publish itself is fenced in its own transaction */
  th_status rc = store_job_fence(st, j->job.id, j->job.attempts);
  if (rc == TH_OK) rc = store_artifact_put(st, out->tar_path, "application/x-tar", tar_digest, NULL);
  if (rc == TH_OK) rc = store_artifact_put(st, out->so_path, "application/x-sharedlib", so_digest, NULL);
  if (rc == TH_OK)
    rc = store_model_publish(st, &j->job.key, out->tuned, tar_digest, so_digest, out->manifest, out->latency_ms,
                             j->job.id, j->job.attempts, version);
  tune__refused(j, rc, "the publish");
  if (rc == TH_OK) {
    TH_LOG(TH_LOG_INFO, "job %lld published %s/%s/%d v%d (sha256:%.12s…)", (long long)j->job.id,
           j->job.key.framework, j->job.key.network, j->job.key.batch, *version, tar_digest);
    /* retention after the publish, before the event: a reader woken by it sees the versions that stay. A
     * failure is logged, not the job's: the version is published, and the next publish retries. */
    int retired = 0;
    if (j->s->o.keep_versions > 0 && store_model_retain(st, &j->job.key, j->s->o.keep_versions, &retired) != TH_OK)
      TH_LOG(TH_LOG_WARN, "job %lld: retention (--keep-versions %d) failed: %s", (long long)j->job.id,
             j->s->o.keep_versions, store_errmsg(st));
    else if (retired > 0)
      TH_LOG(TH_LOG_INFO, "retention: %d old version(s) of %s/%s/%d unpublished (keeping %d and the aliased ones)",
             retired, j->job.key.framework, j->job.key.network, j->job.key.batch, j->s->o.keep_versions);
    tune_event ev = {.kind = TUNE_EV_PUBLISHED, .job_id = j->job.id, .version = *version, .tuned = out->tuned,
                     .digest = tar_digest};
    tune__emit(j->s, &ev);
  }
  return rc;
}

static int tune__device_index(tune_sched *s, const char *name) {
  if (!name || !name[0]) return -1;
  for (int i = 0; i < s->res.ndevices; i++)
    if (!strcmp(s->devname[i], name)) return i;
  if (s->res.ndevices == TUNE_SCHED_MAX_DEVICES) return -1;
  int i = s->res.ndevices++;
  snprintf(s->devname[i], sizeof s->devname[i], "%s", name);
  s->res.device_is_cpu[i] = !strcmp(name, "cpu");
  s->dev_holder[i] = 0;
  return i;
}

/* Keeps what the store could not take (its database away) for tune__flush_pending. Caller holds mu.
 */
static void tune__pend(tune_sched *s, int64_t id, int attempt, int state, const char *error) {
  if (s->npending == (int)(sizeof s->pending / sizeof s->pending[0])) {
    TH_LOG(TH_LOG_ERROR,
           "job %lld stays 'running' in the store until the next start: too many pending writes",
           (long long)id);
    return;
  }
  s->pending[s->npending].id = id;
  s->pending[s->npending].attempt = attempt;
  s->pending[s->npending].state = state;
  snprintf(s->pending[s->npending].error, sizeof s->pending[0].error, "%s", error ? error : "");
  s->npending++;
}

/* Writes the pending outcomes and requeues in order while the store takes them. Caller holds mu. */
static void tune__flush_pending(tune_sched *s) {
  while (s->npending > 0) {
    int64_t id = s->pending[0].id;
    int state = s->pending[0].state;
    th_status rc = state == TUNE__REQUEUE
                       ? store_job_requeue(s->st, id, s->worker_name)
                       : store_job_finish(s->st, id, s->pending[0].attempt, (store_job_state)state,
                                          s->pending[0].error[0] ? s->pending[0].error : NULL);
    if (rc == TH_ERR_UNAVAILABLE) return; /* still away: the next round tries again */
    if (rc == TH_OK)
      TH_LOG(TH_LOG_INFO, "job %lld: %s now that the database answers again", (long long)id,
             state == TUNE__REQUEUE ? "back in the queue" : "outcome recorded");
    else if (rc !=
             TH_ERR_CONFLICT) /* conflict: it ended or moved meanwhile, nothing of ours to write */
      TH_LOG(TH_LOG_ERROR, "job %lld: cannot record what happened to it: %s", (long long)id,
             store_errmsg(s->st));
    memmove(&s->pending[0], &s->pending[1], (size_t)(s->npending - 1) * sizeof s->pending[0]);
    s->npending--;
  }
}

/* Logs that job j is another claim's now: "lost the lease of job N (attempt A; attempt B holds it)". */
static void tune__log_lost(tune_sched *s, tune__sjob *j) {
  store_job now;
  char where[320] = "its state is unknown";
  if (store_job_get(s->st, j->job.id, &now) == TH_OK) {
    if (now.state == STORE_JOB_RUNNING && now.attempts != j->job.attempts)
      snprintf(where, sizeof where, "attempt %d holds it on %s", now.attempts, now.worker);
    else if (now.state == STORE_JOB_QUEUED)
      snprintf(where, sizeof where, "requeued, waiting for attempt %d", now.attempts + 1);
    else
      snprintf(where, sizeof where, "attempt %d holds it; it %s", now.attempts,
               now.state == STORE_JOB_RUNNING ? "runs" : store_job_state_str(now.state));
    store_job_clear(&now);
  }
  TH_LOG(TH_LOG_WARN, "lost the lease of job %lld (attempt %d; %s): stopped here, nothing more is written",
         (long long)j->job.id, j->job.attempts, where);
}

/* Ends a job: records the outcome, frees it. Caller holds mu. state < 0 records nothing: TUNE__END_SHUTDOWN (the
 * stop hands it back to the queue), TUNE__END_LOST (another claim holds it), TUNE__END_HANDED_OFF (queued for a
 * worker with its target), TUNE__REQUEUE (its database went away mid-stage: back to the queue once it answers,
 * to be claimed again and resume from its records). An outcome the store cannot take because its database is
 * away is written once it answers again. */
static void tune__finish(tune_sched *s, tune__sjob *j, int state, const char *error) {
  if (s->b->close && j->bj) s->b->close(s->b->self, j->bj);
  j->bj = NULL;
  (void)th_rm_rf(j->dir);
  if (state == TUNE__REQUEUE) {
    TH_LOG(TH_LOG_WARN, "job %lld: the database went away (%s); it goes back to the queue when it answers",
           (long long)j->job.id, error ? error : "");
    tune__pend(s, j->job.id, j->job.attempts, TUNE__REQUEUE, NULL);
  } else if (state >= 0) {
    th_status rc = store_job_finish(s->st, j->job.id, j->job.attempts, (store_job_state)state, error);
    if (rc == TH_ERR_CONFLICT && j->job.attempts > 0) {
      TH_LOG(TH_LOG_WARN, "job %lld: recording the outcome was refused: %s", (long long)j->job.id, store_errmsg(s->st));
      tune__log_lost(s, j);
      state = TUNE__END_LOST;
    } else if (rc == TH_ERR_UNAVAILABLE) {
      TH_LOG(TH_LOG_ERROR, "job %lld: cannot record the outcome yet: %s", (long long)j->job.id, store_errmsg(s->st));
      tune__pend(s, j->job.id, j->job.attempts, state, error);
    } else if (rc != TH_OK) {
      TH_LOG(TH_LOG_ERROR, "job %lld: cannot record the outcome: %s", (long long)j->job.id, store_errmsg(s->st));
    }
  }
  if (state >= 0) {
    if (state == STORE_JOB_SUCCEEDED) {
      /* where the job's time went: per stage kind, and waiting for resources (the rest) */
      char acc[512];
      size_t len = 0;
      double run = 0, wall = th_now_mono() - j->admitted_at;
      for (int k = 0; k < TUNE_SK_COUNT && len < sizeof acc; k++) {
        run += j->stage_s[k];
        if (j->stage_s[k] > 0)
          len += (size_t)snprintf(acc + len, sizeof acc - len, "%s %.1f s, ", tune_sched_kind_str(k), j->stage_s[k]);
      }
      TH_LOG(TH_LOG_INFO, "job %lld succeeded (%lld stages in %.1f s: %swaiting %.1f s)", (long long)j->job.id,
             (long long)j->stages_run, wall, acc, wall > run ? wall - run : 0.0);
    } else
      TH_LOG(TH_LOG_WARN, "job %lld %s: %s", (long long)j->job.id, store_job_state_str((store_job_state)state),
             error ? error : "");
    tune_event ev = {.kind = TUNE_EV_DONE, .job_id = j->job.id, .state = (store_job_state)state, .error = error};
    tune__emit(s, &ev);
  } else if (state == TUNE__END_SHUTDOWN) {
    TH_LOG(TH_LOG_INFO, "job %lld interrupted by shutdown; it goes back to the queue and resumes from its records",
           (long long)j->job.id);
  } else if (state == TUNE__END_LOST && atomic_load(&j->lost)) {
    tune__log_lost(s, j);
  }
  tune__sjob **pp = &s->jobs;
  while (*pp && *pp != j) pp = &(*pp)->next;
  if (*pp) *pp = j->next;
  s->njobs--;
  store_job_clear(&j->job);
  free(j);
}

/* Claims queued jobs up to the admission limit. Caller holds mu. */
static void tune__admit(tune_sched *s) {
  tune__flush_pending(s);
  while (!s->stopping && s->njobs < s->o.max_jobs) {
    store_job job;
    th_status rc = store_job_claim(s->st, s->worker_name, s->o.lease_s, &job);
    if (rc != TH_OK) {
      double now = th_now_mono();
      if (rc != TH_ERR_NOT_FOUND && now - s->claim_warned_at >= 10) {
        s->claim_warned_at = now;
        TH_LOG(TH_LOG_WARN, "cannot claim a job: %s", store_errmsg(s->st));
      }
      return;
    }
    tune__sjob *j = th_calloc(1, sizeof *j);
    if (!j) {
      store_job_finish(s->st, job.id, job.attempts, STORE_JOB_FAILED, "out of memory");
      store_job_clear(&job);
      return;
    }
    j->s = s;
    j->job = job;
    j->device = -1;
    j->ready_at = j->admitted_at = th_now_mono();
    snprintf(j->dir, sizeof j->dir, "%s/job-%lld", s->work_root, (long long)job.id);
    j->next = s->jobs;
    s->jobs = j;
    s->njobs++;
    (void)th_rm_rf(j->dir); /* a previous attempt's leftovers */
    j->env = (tune_build_env){.st = s->st,
                              .job_id = job.id,
                              .key = &j->job.key,
                              .kind = j->job.kind,
                              .options = j->job.options ? j->job.options : "{}",
                              .work_dir = j->dir,
                              .cpu_pool = s->res.cpu_total,
                              .progress = tune__progress,
                              .cancelled = tune__cancelled,
                              .publish = tune__publish,
                              .ctx = j,
                              .attempt = job.attempts,
                              .targets = s->ntargets > 0 ? s->target_ptrs : NULL,
                              .ntargets = s->ntargets,
                              .handoff = store_shared(s->st) ? tune__handoff : NULL};
    TH_LOG(TH_LOG_INFO, "job %lld claimed by %s: %s %s/%s/%d for %s (attempt %d, priority %d, lease %.0f s)",
           (long long)job.id, s->worker_name, job.kind, job.key.framework, job.key.network, job.key.batch,
           job.key.target, job.attempts, job.priority, s->o.lease_s);
    char why[512];
    if (th_mkdir_p(j->dir) != TH_OK) {
      snprintf(j->err, sizeof j->err, "cannot create scratch directory %s", j->dir);
      tune__finish(s, j, STORE_JOB_FAILED, j->err);
      continue;
    }
    if (!s->b->supports(s->b->self, job.key.framework, why, sizeof why)) {
      tune__finish(s, j, STORE_JOB_FAILED, why);
      continue;
    }
    if (s->b->open) {
      rc = s->b->open(s->b->self, &j->env, &j->bj, j->err, sizeof j->err);
      if (rc != TH_OK) {
        if (!j->err[0]) snprintf(j->err, sizeof j->err, "%s", th_status_str(rc));
        tune__finish(s, j, atomic_load(&j->lost) ? TUNE__END_LOST : STORE_JOB_FAILED, j->err);
        continue;
      }
    }
  }
}

/* Fills j->d with the job's next stage; 0 when the job is complete. Caller holds mu. */
static int tune__next(tune_sched *s, tune__sjob *j) {
  if (j->have_desc) return 1;
  memset(&j->d, 0, sizeof j->d);
  if (s->b->open) {
    if (!s->b->next(s->b->self, j->bj, &j->d)) return 0;
  } else {
    if (j->done_whole) return 0;
    j->d.kind = TUNE_SK_JOB;
    j->d.cpu_min = -1;
    j->d.cpu_max = -1;
    /* a whole job holds the CPU when its candidates are timed there */
    const tc_backend *b = tc_backend_find(j->job.key.framework, NULL, 0);
    snprintf(j->d.device, sizeof j->d.device, "%s",
             b && tc_backend_measure_kind(b) == TC_MEASURE_LIBRARY ? "cpu" : "");
    j->d.task = j->d.ntasks = -1;
  }
  j->device = tune__device_index(s, j->d.device);
  j->have_desc = 1;
  return 1;
}

static double tune__estimate(tune_sched *s, const tune__sjob *j) {
  return s->est.mean_s[j->d.kind];
}

const char *tune_sched_stage_str(int kind) {
  switch (kind) {
    case TUNE_SK_SELECT: return "select";
    case TUNE_SK_MEASURE: return "measure";
    case TUNE_SK_UPDATE: return "update";
    case TUNE_SK_REBUILD: return "rebuild";
    default: return "build";
  }
}

const char *tune_sched_phase_str(int kind) {
  switch (kind) {
    case TUNE_SK_QUICK: return "quick";
    case TUNE_SK_REBUILD: return "rebuild";
    case TUNE_SK_JOB: return "job";
    default: return "tune";
  }
}

/* Ends job j, whose builder has no stage left: succeeded, unless it was handed back to the queue or lost. Caller
 * holds mu. */
static void tune__complete(tune_sched *s, tune__sjob *j) {
  if (atomic_load(&j->lost))
    tune__finish(s, j, TUNE__END_LOST, NULL);
  else if (atomic_load(&j->handed_off))
    tune__finish(s, j, TUNE__END_HANDED_OFF, NULL);
  else
    tune__finish(s, j, STORE_JOB_SUCCEEDED, NULL);
}

/* One scheduling round: picks a stage and runs it. Caller holds mu; returns 1 when it ran (or ended) something. */
static int tune__round(tune_sched *s) {
  tune__admit(s);
  tune_sched_cand cands[256];
  tune__sjob *who[256];
  int n = 0;
  double now = th_now_mono();
  for (tune__sjob *j = s->jobs, *nx; j; j = nx) {
    nx = j->next;
    if (j->running) continue;
    if (atomic_load(&j->lost) || !tune__next(s, j)) {
      tune__complete(s, j);
      return 1;
    }
    if (n == 256) continue;
    cands[n] = (tune_sched_cand){.job = j->job.id, .priority = j->job.priority, .ready_at = j->ready_at,
                                 .cpu_min = j->d.cpu_min, .cpu_max = j->d.cpu_max, .device = j->device,
                                 .estimate_s = tune__estimate(s, j), .mem_bytes = j->d.mem_bytes};
    who[n++] = j;
  }
  int grant = 0;
  int k = tune_sched_pick(&s->res, cands, n, now, &s->o.policy, &grant);
  if (k < 0) return 0;
  tune__sjob *j = who[k];
  if (store_job_cancel_requested(s->st, j->job.id)) {
    tune__finish(s, j, STORE_JOB_CANCELLED, "cancelled by request");
    return 1;
  }
  /* take the resources */
  double est = tune__estimate(s, j);
  j->running = 1;
  j->cpu_grant = grant;
  j->started_at = now;
  s->res.cpu_busy += grant;
  j->mem_held = j->d.mem_bytes > 0 ? j->d.mem_bytes : 0;
  s->res.mem_busy += j->mem_held;
  if (j->mem_held > s->res.mem_budget && s->res.mem_budget > 0)
    TH_LOG(TH_LOG_WARN, "job %lld: its %s stage needs about %.1f GiB, more than the memory budget of %.1f GiB: it runs "
           "alone", (long long)j->job.id, tune_sched_kind_str(j->d.kind), j->mem_held / 1073741824.0,
           s->res.mem_budget / 1073741824.0);
  if (grant > 0 && now + est > s->res.cpu_free_at) s->res.cpu_free_at = now + est;
  if (j->device >= 0) {
    s->res.device_busy[j->device] = 1;
    s->res.device_free_at[j->device] = now + est;
    s->dev_holder[j->device] = j->job.id;
  }
  tune_event ev = {.kind = TUNE_EV_STAGE, .job_id = j->job.id, .stage = tune_sched_stage_str(j->d.kind),
                   .phase = tune_sched_phase_str(j->d.kind), .task = j->d.task, .ntasks = j->d.ntasks};
  pthread_mutex_unlock(&s->mu);
  tune__emit(s, &ev);
  TH_LOG(TH_LOG_DEBUG, "job %lld: %s (cpu %d%s%s)", (long long)j->job.id, tune_sched_kind_str(j->d.kind), grant,
         j->device >= 0 ? ", device " : "", j->device >= 0 ? j->d.device : "");
  j->err[0] = '\0';
  th_status rc;
  if (s->b->open) {
    rc = s->b->step(s->b->self, j->bj, grant, j->err, sizeof j->err);
  } else {
    rc = s->b->run(s->b->self, &j->env, j->err, sizeof j->err);
    j->done_whole = 1;
  }
  double t1 = th_now_mono();
  pthread_mutex_lock(&s->mu);
  /* give the resources back */
  tune_sched_estimates_add(&s->est, j->d.kind, t1 - j->started_at);
  j->stage_s[j->d.kind] += t1 - j->started_at;
  s->res.cpu_busy -= grant;
  s->res.mem_busy -= j->mem_held;
  j->mem_held = 0;
  if (s->res.cpu_busy == 0) s->res.cpu_free_at = t1;
  if (j->device >= 0) {
    s->res.device_busy[j->device] = 0;
    s->res.device_free_at[j->device] = t1;
    s->dev_holder[j->device] = 0;
  }
  j->running = 0;
  j->have_desc = 0;
  j->ready_at = t1;
  j->stages_run++;
  pthread_cond_broadcast(&s->cv);
  if (rc == TH_OK) {
    /* a job whose last stage just ended is recorded now, right after its publish, not a round later */
    if (atomic_load(&j->lost) || !tune__next(s, j)) tune__complete(s, j);
    return 1;
  }
  /* a stage that failed may have failed on a refused write (a tuning record, say): whether the claim still holds
   * decides between the job's failure and a job that is no longer ours */
  if (!atomic_load(&j->lost) && !atomic_load(&j->handed_off) &&
      store_job_fence(s->st, j->job.id, j->job.attempts) == TH_ERR_CONFLICT)
    atomic_store(&j->lost, 1);
  if (atomic_load(&j->lost) || atomic_load(&j->handed_off)) {
    tune__complete(s, j);
    return 1;
  }
  int cancel_req = store_job_cancel_requested(s->st, j->job.id);
  if (rc == TH_ERR_CANCELLED && s->stopping && !cancel_req) {
    tune__finish(s, j, TUNE__END_SHUTDOWN, NULL);
  } else if (rc == TH_ERR_CANCELLED) {
    tune__finish(s, j, STORE_JOB_CANCELLED, "cancelled by request");
  } else if (rc == TH_ERR_UNAVAILABLE) {
    /* not the job's failure: its trials so far are in the records, and it resumes from them */
    tune__finish(s, j, TUNE__REQUEUE, j->err);
  } else {
    if (!j->err[0]) snprintf(j->err, sizeof j->err, "%s", th_status_str(rc));
    tune__finish(s, j, STORE_JOB_FAILED, j->err);
  }
  return 1;
}

static void *tune__sched_main(void *arg) {
  tune_sched *s = arg;
  pthread_mutex_lock(&s->mu);
  while (!s->stopping) {
    if (tune__round(s)) continue;
    /* nothing can start: wait for a stage to end, a notify, or poll the store once a second (another
     * process may have queued work) */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 1;
    pthread_cond_timedwait(&s->cv, &s->mu, &ts);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

/* ---- the worker: registration, heartbeat, leases ---- */

/* name (and host) of this process as a worker: the given name, else host:pid:random (a restarted process is a
 * new worker, so nothing it did before can be mistaken for its own). */
static void tune__worker_name(tune_sched *s, const char *given) {
  if (gethostname(s->host, sizeof s->host) != 0 || !s->host[0]) snprintf(s->host, sizeof s->host, "localhost");
  s->host[sizeof s->host - 1] = '\0';
  if (given && *given) {
    snprintf(s->worker_name, sizeof s->worker_name, "%s", given);
    return;
  }
  unsigned r = 0;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0 || read(fd, &r, sizeof r) != (ssize_t)sizeof r) r = (unsigned)(th_now_wall() * 1e6) ^ (unsigned)getpid();
  if (fd >= 0) close(fd);
  snprintf(s->worker_name, sizeof s->worker_name, "%.80s:%ld:%06x", s->host, (long)getpid(), r & 0xffffff);
}

static th_status tune__register(tune_sched *s) {
  int requeued = 0;
  th_status rc = store_worker_register(s->st, s->worker_name, s->host, s->target_ptrs, s->ntargets, s->o.max_jobs,
                                       s->o.lease_s, &requeued);
  if (rc != TH_OK) return rc;
  char list[1024] = "";
  size_t len = 0;
  for (int i = 0; i < s->ntargets && len < sizeof list; i++)
    len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", s->targets[i]);
  TH_LOG(TH_LOG_INFO, "worker %s registered: targets [%s], %d slot(s), lease %.1f s, memory budget %.1f GiB",
         s->worker_name, list, s->o.max_jobs, s->o.lease_s, s->o.mem_budget / 1073741824.0);
  if (requeued > 0)
    TH_LOG(TH_LOG_INFO, "requeued %d job(s) an earlier worker named %s held", requeued, s->worker_name);
  return TH_OK;
}

/* One heartbeat: renews this worker's leases, requeues any job whose lease expired (whoever held it), and marks
 * the admitted jobs that another claim took (they stop at their next check). Runs on the heartbeat thread. */
static void tune__beat(tune_sched *s) {
  th_status rc = TH_OK;
  if (s->registered) {
    rc = store_worker_heartbeat(s->st, s->worker_name, s->o.lease_s, NULL);
    if (rc == TH_ERR_NOT_FOUND) rc = tune__register(s); /* forgotten after a long silence */
  }
  int requeued = 0;
  if (rc == TH_OK) rc = store_job_reap(s->st, &requeued);
  if (rc != TH_OK) {
    if (!s->hb_failing)
      TH_LOG(TH_LOG_WARN, "worker %s: heartbeat failed (leases are not renewed meanwhile): %s", s->worker_name,
             store_errmsg(s->st));
    s->hb_failing = 1;
    return;
  }
  if (s->hb_failing) TH_LOG(TH_LOG_INFO, "worker %s: heartbeat works again", s->worker_name);
  s->hb_failing = 0;
  if (requeued > 0) TH_LOG(TH_LOG_INFO, "requeued %d job(s) whose lease expired", requeued);
  int64_t ids[256];
  int attempts[256], n = 0;
  pthread_mutex_lock(&s->mu);
  if (requeued > 0) pthread_cond_broadcast(&s->cv);
  for (tune__sjob *j = s->jobs; j && n < 256; j = j->next)
    if (!atomic_load(&j->lost) && !atomic_load(&j->handed_off)) {
      ids[n] = j->job.id;
      attempts[n++] = j->job.attempts;
    }
  pthread_mutex_unlock(&s->mu);
  for (int i = 0; i < n; i++) {
    if (store_job_fence(s->st, ids[i], attempts[i]) != TH_ERR_CONFLICT) continue;
    TH_LOG(TH_LOG_WARN, "job %lld: the heartbeat's fencing check refused attempt %d: %s", (long long)ids[i],
           attempts[i], store_errmsg(s->st));
    pthread_mutex_lock(&s->mu);
    for (tune__sjob *j = s->jobs; j; j = j->next)
      if (j->job.id == ids[i] && j->job.attempts == attempts[i]) atomic_store(&j->lost, 1);
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
  }
}

static void *tune__heartbeat_main(void *arg) {
  tune_sched *s = arg;
  double every = s->o.lease_s / 3;
  pthread_mutex_lock(&s->mu);
  while (!s->stopping) {
    pthread_mutex_unlock(&s->mu);
    tune__beat(s);
    double next = th_now_mono() + every;
    pthread_mutex_lock(&s->mu);
    while (!s->stopping && th_now_mono() < next) {
      struct timespec ts = th_deadline_in(next - th_now_mono());
      pthread_cond_timedwait(&s->cv, &s->mu, &ts);
    }
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

const char *tune_sched_name(tune_sched *s) {
  return s->worker_name;
}

th_status tune_sched_start(store_t *st, const tune_builder *builder, const tune_sched_opts *o,
                           tune_sched **out) {
  if (!st || !builder || !o || o->max_jobs < 0 || o->max_jobs > 256 || o->cpu_slots < 0 || o->cpu_slots > 256 ||
      o->ntargets < 0 || o->ntargets > TUNE_SCHED_MAX_TARGETS || (o->ntargets > 0 && !o->targets))
    return TH_ERR_INVALID;
  if (builder->open && (!builder->next || !builder->step)) return TH_ERR_INVALID;
  tune_sched *s = th_calloc(1, sizeof *s);
  if (!s) return TH_ERR_NOMEM;
  s->st = st;
  s->b = builder;
  s->o = *o;
  if (s->o.cpu_slots == 0) {
    long nc = sysconf(_SC_NPROCESSORS_ONLN);
    s->o.cpu_slots = nc > 0 ? (int)nc : 1;
  }
  if (s->o.policy.aging_s <= 0) s->o.policy.aging_s = 5.0;
  if (!(s->o.lease_s > 0)) s->o.lease_s = TUNE_SCHED_LEASE_S;
  snprintf(s->work_root, sizeof s->work_root, "%s", o->work_root ? o->work_root : "/tmp/tunehub-work");
  s->o.work_root = s->work_root;
  tune__worker_name(s, o->name);
  s->o.name = s->worker_name;
  for (int i = 0; i < o->ntargets; i++) {
    snprintf(s->targets[i], sizeof s->targets[i], "%s", o->targets[i]);
    s->target_ptrs[i] = s->targets[i];
  }
  s->ntargets = o->ntargets;
  s->o.targets = s->target_ptrs;
  if (th_mkdir_p(s->work_root) != TH_OK) {
    free(s);
    return TH_ERR_IO;
  }
  /* a scheduler that runs jobs is a worker; with max_jobs 0 (a serving replica) it only requeues expired
   * leases */
  if (s->o.max_jobs > 0) {
    th_status rc = tune__register(s);
    if (rc != TH_OK) {
      TH_LOG(TH_LOG_ERROR, "cannot register worker %s: %s", s->worker_name, store_errmsg(st));
      free(s);
      return rc;
    }
    s->registered = 1;
  }
  s->res.cpu_total = s->o.cpu_slots;
  s->res.mem_budget = s->o.mem_budget > 0 ? s->o.mem_budget : 0;
  tune__device_index(s, "cpu");
  tune_sched_estimates_init(&s->est);
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  if (pthread_create(&s->hb, NULL, tune__heartbeat_main, s) != 0) {
    tune_sched_stop(s);
    return TH_ERR_NOMEM;
  }
  s->hb_started = 1;
  /* one thread per CPU slot, one per measurement device, one for the cheap stages */
  int nt = s->o.cpu_slots + 2;
  if (nt > s->o.max_jobs + 1) nt = s->o.max_jobs + 1;
  if (s->o.max_jobs == 0) nt = 0;
  if (nt > 32) nt = 32;
  for (int i = 0; i < nt; i++) {
    if (pthread_create(&s->th[i], NULL, tune__sched_main, s) != 0) {
      tune_sched_stop(s);
      return TH_ERR_NOMEM;
    }
    s->nthreads++;
  }
  *out = s;
  return TH_OK;
}

void tune_sched_notify(tune_sched *s) {
  if (!s) return;
  pthread_mutex_lock(&s->mu);
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
}

int tune_sched_admitted(tune_sched *s) {
  pthread_mutex_lock(&s->mu);
  int n = s->njobs;
  pthread_mutex_unlock(&s->mu);
  return n;
}

void tune_sched_stop(tune_sched *s) {
  if (!s) return;
  pthread_mutex_lock(&s->mu);
  s->stopping = 1;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  for (int i = 0; i < s->nthreads; i++) pthread_join(s->th[i], NULL);
  if (s->hb_started) pthread_join(s->hb, NULL);
  /* nothing of this process writes to its jobs any more: the ones it held go back to the queue at once, to
   * resume (on any worker) from their published versions and stored records, instead of waiting out the lease */
  pthread_mutex_lock(&s->mu);
  while (s->jobs) tune__finish(s, s->jobs, TUNE__END_SHUTDOWN, NULL);
  pthread_mutex_unlock(&s->mu);
  int requeued = 0;
  if (s->registered && store_worker_stop(s->st, s->worker_name, &requeued) != TH_OK)
    TH_LOG(TH_LOG_WARN, "worker %s: cannot hand its jobs back (they are requeued when their lease expires): %s",
           s->worker_name, store_errmsg(s->st));
  else if (requeued > 0)
    TH_LOG(TH_LOG_INFO, "worker %s stopped: %d job(s) handed back to the queue", s->worker_name, requeued);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv);
  free(s);
}

void tune_sched_info_free(tune_sched_info *i) {
  if (!i) return;
  free(i->jobs);
  i->jobs = NULL;
  i->njobs = 0;
}

th_status tune_sched_info_get(tune_sched *s, tune_sched_info *out) {
  tune_sched_info in;
  memset(&in, 0, sizeof in);
  pthread_mutex_lock(&s->mu);
  double now = th_now_mono();
  in.cpu_total = s->res.cpu_total;
  in.cpu_busy = s->res.cpu_busy;
  in.ndevices = s->res.ndevices;
  for (int i = 0; i < s->res.ndevices; i++) {
    snprintf(in.devices[i].name, sizeof in.devices[i].name, "%s", s->devname[i]);
    in.devices[i].busy = s->res.device_busy[i];
    in.devices[i].holder = s->res.device_busy[i] ? s->dev_holder[i] : 0;
  }
  in.admitted = s->njobs;
  in.max_jobs = s->o.max_jobs;
  in.aging_s = s->o.policy.aging_s;
  in.estimates = s->est;
  in.jobs = th_calloc((size_t)(s->njobs > 0 ? s->njobs : 1), sizeof *in.jobs);
  for (tune__sjob *j = s->jobs; in.jobs && j; j = j->next) {
    tune_sched_job_info *o = &in.jobs[in.njobs++];
    o->id = j->job.id;
    snprintf(o->kind, sizeof o->kind, "%s", j->job.kind);
    o->key = j->job.key;
    o->priority = j->job.priority;
    o->running = j->running;
    o->stages_run = j->stages_run;
    o->has_stage = j->have_desc;
    if (!j->have_desc) continue;
    o->stage_kind = j->d.kind;
    o->task = j->d.task;
    o->ntasks = j->d.ntasks;
    snprintf(o->device, sizeof o->device, "%s", j->d.device);
    o->cpu_slots = j->running ? j->cpu_grant : 0;
    o->for_s = now - (j->running ? j->started_at : j->ready_at);
    o->estimate_s = tune__estimate(s, j);
  }
  pthread_mutex_unlock(&s->mu);
  if (!in.jobs) return TH_ERR_NOMEM;
  *out = in;
  return TH_OK;
}
