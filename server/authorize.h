/* authorize: the answer to a request without the scope a route needs (401, 403 or 429), over the
 * tokens of auth.h and the request's presented token (limits.c). The router checks route_table.h's
 * access column with it. */
#ifndef SRV_AUTHORIZE_H
#define SRV_AUTHORIZE_H

#include <microhttpd.h>

#include "srv_int.h"

/* 1 when r carries a bearer token of the daemon's with every bit of scope (SRV_SCOPE_READ,
 * SRV_SCOPE_TUNE, SRV_SCOPE_ADMIN: auth.h); else queues the 401 (no such token; WWW-Authenticate
 * names the scope), 403 (a token without the scope) or 429 (too many failed authentications from
 * the address), *ret its result, and returns 0. Besides the router, a handler calls it only for a
 * scope that depends on what it finds (a blob that is an uploaded ONNX file, models.c) or before
 * routing (a network's PUT at its headers, networks.c). */
int srv_authorized(srv_t *s, srv_request *r, unsigned scope, enum MHD_Result *ret);

#endif
