/* longpoll: requests that wait for a job (GET /models/...?wait=N). A waiting request suspends its connection (no
 * thread spins); the waker thread resumes it when its job changes or its deadline passes, and every suspended
 * connection is resumed before the daemon stops. Thread-safe. */
#ifndef SRV_LONGPOLL_H
#define SRV_LONGPOLL_H

#include <stdint.h>

#include "srv_int.h"
#include "th_status.h"

/* Starts the waker thread (s->wait_mu and s->wait_cv initialised). TH_ERR_NOMEM when it cannot. */
th_status srv_longpoll_start(srv_t *s);
/* Resumes every suspended request and joins the waker; a no-op when it was not started. */
void srv_longpoll_stop(srv_t *s);
/* Suspends r until job_id changes or seconds pass (r->suspended set); when there is no room, sets a deadline in
 * the past so the route answers at once. */
void srv_suspend(srv_t *s, srv_request *r, double seconds, int64_t job_id);
/* The scheduler's change listener (ctx is the srv_t): drops the manifest cache and resumes the job's waiters. */
void srv_job_event(void *ctx, int64_t job_id);
/* Drops the manifest cache and resumes every waiter (each re-reads the store): the relay's answer to changes it
 * may have missed while the database was away. */
void srv_job_event_all(srv_t *s);

#endif
