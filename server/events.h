/* events: live job progress over Server-Sent Events (GET /jobs/{id}/events) and the scheduler's state
 * (GET /scheduler). It sits above response.c and present.c; http.c starts and stops it, routes.c routes to it. */
#ifndef SRV_EVENTS_H
#define SRV_EVENTS_H

#include <stdint.h>

#include "srv_int.h"
#include "th_status.h"
#include "worker.h"

/* Makes the event rings and starts the heartbeat timer; at most max_total streams, max_per_ip per client
 * address. *out is owned by the caller (srv_events_free). */
th_status srv_events_new(int max_total, int max_per_ip, srv_events **out);
/* Ends every stream and stops the timer (call before MHD_stop_daemon). Accepts NULL. */
void srv_events_stop(srv_events *E);
/* Frees the rings after the daemon stopped; accepts NULL. After the call E is no longer valid. */
void srv_events_free(srv_events *E);
/* The scheduler's typed event listener (ctx is the srv_t): presents the event and wakes its job's streams.
 * Thread-safe. */
void srv_events_on_job(void *ctx, const tune_event *ev);
/* GET /jobs/{id}/events: a Server-Sent Events stream; id_text is the decoded path segment. */
enum MHD_Result srv_events_route(srv_t *s, srv_request *r, const char *id_text);
/* GET /scheduler: resources, admitted jobs' stages, the queue, the learned estimates. */
enum MHD_Result srv_scheduler_route(srv_t *s, srv_request *r);

#endif
