/* Long polls (see longpoll.h): a table of suspended requests under s->wait_mu, and a waker thread that resumes
 * them at their deadline. A resumed request is routed again by the access handler, which answers it.
 * libmicrohttpd never times out a suspended connection, so the table is what bounds them: at most
 * --max-waits-per-ip suspended requests per client address, and half the connection limit in all. */
#include "longpoll.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "srv_limits.h"
#include "th_util.h"

/* Suspended requests the table holds at most: half the connection limit, so that waits never take all of
 * the connections. */
static int srv__wait_room(const srv_t *s) {
  int room = s->cfg.connection_limit / 2, size = (int)(sizeof s->waiting / sizeof s->waiting[0]);
  return room < 1 ? 1 : room > size ? size : room;
}

int srv_wait_admit(srv_t *s, srv_request *r, char *why, size_t n) {
  if (r->wait_deadline != 0) return 1; /* a wait resumed early, going on: it was admitted */
  srv_client_ip(r->con, r->wait_ip, sizeof r->wait_ip);
  int mine = 0;
  pthread_mutex_lock(&s->wait_mu);
  for (int i = 0; i < s->nwaiting; i++) mine += !strcmp(s->waiting[i]->wait_ip, r->wait_ip);
  pthread_mutex_unlock(&s->wait_mu);
  if (mine < s->cfg.max_waits_per_ip) return 1;
  snprintf(why, n,
           "%s already holds %d requests waiting with ?wait= (the limit is %d a client address, "
           "--max-waits-per-ip); retry without wait, or when one of them is answered",
           r->wait_ip, mine, s->cfg.max_waits_per_ip);
  return 0;
}

void srv_suspend(srv_t *s, srv_request *r, double seconds, int64_t job_id) {
  pthread_mutex_lock(&s->wait_mu);
  int mine = 0; /* counted again: requests that raced srv_wait_admit are answered at once */
  for (int i = 0; i < s->nwaiting; i++) mine += !strcmp(s->waiting[i]->wait_ip, r->wait_ip);
  if (s->wait_stop || s->nwaiting >= srv__wait_room(s) || mine >= s->cfg.max_waits_per_ip) {
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
  srv_anon_job_changed(s, job_id);
  pthread_mutex_lock(&s->cache_mu);
  s->cache_gen++;
  pthread_mutex_unlock(&s->cache_mu);
  pthread_mutex_lock(&s->wait_mu);
  for (int i = s->nwaiting - 1; i >= 0; i--)
    if (s->waiting[i]->wait_job == job_id) srv__resume_at(s, i);
  pthread_mutex_unlock(&s->wait_mu);
}

void srv_job_event_all(srv_t *s) {
  srv_anon_job_changed(s, 0);
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
    double wait = next - now;
    struct timespec ts = th_deadline_in(wait < 0.01 ? 0.01 : wait);
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
