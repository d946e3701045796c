/* Long polls (see longpoll.h): a table of suspended requests under s->wait_mu, and a waker thread that resumes
 * them at their deadline. A resumed request is routed again by the access handler, which answers it. */
#include "longpoll.h"

#include <time.h>

#include "th_util.h"

void srv_suspend(srv_t *s, srv_request *r, double seconds, int64_t job_id) {
  pthread_mutex_lock(&s->wait_mu);
  if (s->wait_stop || s->nwaiting >= (int)(sizeof s->waiting / sizeof s->waiting[0])) {
    pthread_mutex_unlock(&s->wait_mu);
    r->wait_deadline = th_now_mono() - 1; /* no room: answer now as if the wait expired */
    return;
  }
  r->wait_deadline = th_now_mono() + seconds;
  r->wait_job = job_id;
  r->suspended = 1;
  MHD_suspend_connection(r->con);
  s->waiting[s->nwaiting++] = r;
  pthread_cond_signal(&s->wait_cv);
  pthread_mutex_unlock(&s->wait_mu);
}

/* Resumes waiting[i]; the caller holds wait_mu. */
static void srv__resume_at(srv_t *s, int i) {
  srv_request *r = s->waiting[i];
  s->waiting[i] = s->waiting[--s->nwaiting];
  /* r->suspended stays set until the access handler runs again: the route that just suspended may not have
   * returned yet, and must still see it suspended (else it would answer as well) */
  r->resumed = 1;
  MHD_resume_connection(r->con);
}

void srv_job_event(void *ctx, int64_t job_id) {
  srv_t *s = ctx;
  pthread_mutex_lock(&s->cache_mu);
  s->cache_gen++;
  pthread_mutex_unlock(&s->cache_mu);
  pthread_mutex_lock(&s->wait_mu);
  for (int i = s->nwaiting - 1; i >= 0; i--)
    if (s->waiting[i]->wait_job == job_id) srv__resume_at(s, i);
  pthread_mutex_unlock(&s->wait_mu);
}

void srv_job_event_all(srv_t *s) {
  pthread_mutex_lock(&s->cache_mu);
  s->cache_gen++;
  pthread_mutex_unlock(&s->cache_mu);
  pthread_mutex_lock(&s->wait_mu);
  for (int i = s->nwaiting - 1; i >= 0; i--) srv__resume_at(s, i);
  pthread_mutex_unlock(&s->wait_mu);
}

static void *srv__waker(void *arg) {
  srv_t *s = arg;
  pthread_mutex_lock(&s->wait_mu);
  while (!s->wait_stop) {
    double now = th_now_mono(), next = now + 1.0;
    for (int i = s->nwaiting - 1; i >= 0; i--) {
      if (s->waiting[i]->wait_deadline <= now)
        srv__resume_at(s, i);
      else if (s->waiting[i]->wait_deadline < next)
        next = s->waiting[i]->wait_deadline;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double wait = next - now;
    if (wait < 0.01) wait = 0.01;
    ts.tv_sec += (time_t)wait;
    ts.tv_nsec += (long)((wait - (double)(time_t)wait) * 1e9);
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&s->wait_cv, &s->wait_mu, &ts);
  }
  while (s->nwaiting > 0) srv__resume_at(s, s->nwaiting - 1);
  pthread_mutex_unlock(&s->wait_mu);
  return NULL;
}

th_status srv_longpoll_start(srv_t *s) {
  if (pthread_create(&s->waker, NULL, srv__waker, s) != 0) return TH_ERR_NOMEM;
  s->waker_started = 1;
  return TH_OK;
}

void srv_longpoll_stop(srv_t *s) {
  pthread_mutex_lock(&s->wait_mu);
  s->wait_stop = 1;
  pthread_cond_signal(&s->wait_cv);
  pthread_mutex_unlock(&s->wait_mu);
  if (s->waker_started) pthread_join(s->waker, NULL); /* resumes every suspended connection */
  s->waker_started = 0;
}
