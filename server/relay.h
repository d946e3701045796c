/* relay: job changes made by other processes on a shared store, delivered to this daemon's long polls and SSE
 * streams (see relay.c). */
#ifndef SRV_RELAY_H
#define SRV_RELAY_H

#include <stddef.h>

#include "srv_int.h"
#include "th_status.h"

/* Starts the relay thread when the store is shared; a no-op on the embedded store. */
th_status srv_relay_start(srv_t *s, char *err, size_t n);
/* Stops and joins it; a no-op when it was not started. */
void srv_relay_stop(srv_t *s);

#endif
