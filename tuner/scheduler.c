/* The load-aware scheduler's runtime (see scheduler.h): claims jobs from the store under a lease,
 * runs their stages on a small thread pool in the order the policy (sched_policy.c) picks, and
 * records each job's outcome under the claim's fencing token. The stage callbacks are in
 * sched_env.c, the worker's registration and heartbeat in sched_fleet.c. */
#include "scheduler.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sched_int.h"
#include "tc/backend.h"
#include "th_alloc.h"
#include "th_log.h"
#include "th_util.h"

/* ---- the runtime ---- */

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
