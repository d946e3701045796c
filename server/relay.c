/* The relay: on a shared store (PostgreSQL), a thread that listens for the job changes other processes announce
 * (store_listener) and hands them to this daemon as if its own scheduler had made them: long polls wake
 * (srv_job_event, which also drops the manifest cache), and SSE streams get the progress, published and done
 * events. So `?wait=` and GET /jobs/{id}/events on any replica follow a job that a worker elsewhere runs. The
 * events of this daemon's own scheduler are skipped by their origin token: it told its listeners directly.
 * While the database is away the thread keeps trying; after it reconnects (RESYNC) it wakes every waiter, which
 * re-reads the store. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "longpoll.h"
#include "relay.h"
#include "th_log.h"

/* Turns a store event into the scheduler's typed event for the SSE rings; the job row gives its progress
 * document, state and error. */
static void relay__to_streams(srv_t *s, const store_event *e) {
  tune_event ev;
  memset(&ev, 0, sizeof ev);
  ev.job_id = e->job_id;
  ev.task = ev.ntasks = -1;
  if (e->kind == STORE_EV_PUBLISHED) {
    ev.kind = TUNE_EV_PUBLISHED;
    ev.version = e->version;
    ev.tuned = e->tuned;
    ev.digest = e->digest;
    srv_events_on_job(s, &ev);
    return;
  }
  store_job j;
  if (store_job_get(s->st, e->job_id, &j) != TH_OK) return;
  if (e->kind == STORE_EV_DONE) {
    ev.kind = TUNE_EV_DONE;
    ev.state = j.state;
    ev.error = j.error;
  } else {
    ev.kind = TUNE_EV_PROGRESS;
    ev.progress_doc = j.progress;
  }
  srv_events_on_job(s, &ev);
  store_job_clear(&j);
}

static void *relay__main(void *arg) {
  srv_t *s = arg;
  int was_down = 0;
  while (!__atomic_load_n(&s->relay_stop, __ATOMIC_ACQUIRE)) {
    store_event e;
    th_status rc = store_listener_wait(s->relay, 500, &e);
    if (rc == TH_ERR_TIMEOUT) continue;
    if (rc != TH_OK) {
      if (!was_down) TH_LOG(TH_LOG_WARN, "relay: %s; reconnecting", store_listener_errmsg(s->relay));
      was_down = 1;
      continue;
    }
    if (e.kind == STORE_EV_RESYNC) {
      if (was_down) TH_LOG(TH_LOG_INFO, "relay: listening again");
      was_down = 0;
      srv_job_event_all(s);
      continue;
    }
    if (strcmp(e.origin, store_origin(s->st)) == 0) continue;
    srv_job_event(s, e.job_id); /* drops the manifest cache too */
    if (e.kind == STORE_EV_CATALOG) continue;
    relay__to_streams(s, &e);
  }
  return NULL;
}

th_status srv_relay_start(srv_t *s, char *err, size_t n) {
  if (!store_shared(s->st)) return TH_OK;
  th_status rc = store_listener_open(s->st, &s->relay);
  if (rc != TH_OK) {
    snprintf(err, n, "cannot listen for job changes: %s", store_errmsg(s->st));
    return rc;
  }
  if (pthread_create(&s->relay_thread, NULL, relay__main, s) != 0) {
    store_listener_close(s->relay);
    s->relay = NULL;
    snprintf(err, n, "cannot start the relay thread");
    return TH_ERR_NOMEM;
  }
  return TH_OK;
}

void srv_relay_stop(srv_t *s) {
  if (!s->relay) return;
  __atomic_store_n(&s->relay_stop, 1, __ATOMIC_RELEASE);
  pthread_join(s->relay_thread, NULL);
  store_listener_close(s->relay);
  s->relay = NULL;
}
