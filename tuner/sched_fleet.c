/* The scheduler as a worker of the fleet: its name, its registration in the store with the targets
 * it measures, and the heartbeat thread that renews its leases, requeues jobs whose lease expired
 * anywhere and marks the admitted jobs another claim took. */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "sched_int.h"
#include "th_log.h"
#include "th_util.h"

/* ---- the worker: registration, heartbeat, leases ---- */

/* name (and host) of this process as a worker: the given name, else host:pid:random (a restarted process is a
 * new worker, so nothing it did before can be mistaken for its own). */
void tune__worker_name(tune_sched *s, const char *given) {
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

th_status tune__register(tune_sched *s) {
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

void *tune__heartbeat_main(void *arg) {
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
