/* longpoll: requests that wait for a job (GET /models/...?wait=N). A waiting request suspends its connection (no
 * thread spins); the waker thread resumes it when its job changes or its deadline passes, and every suspended
 * connection is resumed before the daemon stops. Thread-safe. */
#ifndef SRV_LONGPOLL_H
#define SRV_LONGPOLL_H

#include <stddef.h>
#include <stdint.h>

#include "srv_int.h"
#include "th_status.h"

/* Starts the waker thread (s->wait_mu and s->wait_cv initialised). TH_ERR_NOMEM when it cannot. */
th_status srv_longpoll_start(srv_t *s);
/* Resumes every suspended request and joins the waker; a no-op when it was not started. */
void srv_longpoll_stop(srv_t *s);
/* 1 when r may wait: its client address holds fewer than --max-waits-per-ip suspended requests (or r is
 * a wait already under way). Else 0 with why naming the limit: the caller answers 429 before it queues
 * anything. */
int srv_wait_admit(srv_t *s, srv_request *r, char *why, size_t n);
/* Suspends r until job_id changes or seconds pass (r->suspended set); when there is no room (the
 * table holds half the connection limit, or r's address its --max-waits-per-ip), sets a deadline
 * in the past so the route answers at once, as if the wait had expired. */
void srv_suspend(srv_t *s, srv_request *r, double seconds, int64_t job_id);
/* The scheduler's change listener (ctx is the srv_t): drops the manifest cache and resumes the job's waiters. */
void srv_job_event(void *ctx, int64_t job_id);
/* Drops the manifest cache and resumes every waiter (each re-reads the store): the relay's answer to changes it
 * may have missed while the database was away. */
void srv_job_event_all(srv_t *s);

#endif
