/* routes: the registry API (see README.md, "HTTP API"). It sits above response.c, present.c, longpoll.c and
 * events.c; http.c calls it. */
#ifndef SRV_ROUTES_H
#define SRV_ROUTES_H

#include <stddef.h>

#include "srv_int.h"
#include "th_status.h"

/* Start-up: this machine's targets, the compiler version, the network list (cached for GET /networks and
 * upserted into the store). On failure writes a message into err. */
th_status srv_routes_init(srv_t *s, char *err, size_t n);
/* 1 when r carries the daemon's bearer token; else queues the 401 (*ret its result) and returns 0. */
int srv_authorized(srv_t *s, srv_request *r, enum MHD_Result *ret);
/* Routes a complete request (method, path, query and body read) and queues its response. */
enum MHD_Result srv_route(srv_t *s, srv_request *r);

#endif
