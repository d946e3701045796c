/* routes: the router of the registry API (see README.md, "HTTP API"), made from the table in
 * route_table.h. It sits above the handlers (models.c, jobs.c, status.c, web.c, networks.c,
 * aliases.c, events.c, oci.c), which it calls through the table; http.c calls it. */
#ifndef SRV_ROUTES_H
#define SRV_ROUTES_H

#include <stddef.h>

#include "srv_int.h"
#include "th_status.h"

/* The methods of a route (route_table.h's methods column: SRV_METHODS_<column>). */
enum {
  SRV_METHOD_GET = 1,
  SRV_METHOD_HEAD = 2,
  SRV_METHOD_POST = 4,
  SRV_METHOD_PUT = 8,
  SRV_METHOD_DELETE = 16,
  SRV_METHODS_GH = SRV_METHOD_GET | SRV_METHOD_HEAD,
  SRV_METHODS_GET = SRV_METHOD_GET,
  SRV_METHODS_POST = SRV_METHOD_POST,
  SRV_METHODS_PUT = SRV_METHOD_PUT,
  SRV_METHODS_DELETE = SRV_METHOD_DELETE
};

/* Who may call a route (route_table.h's access column; see there). */
typedef enum srv_access {
  SRV_ACCESS_OPEN,
  SRV_ACCESS_PAGE,
  SRV_ACCESS_READ,
  SRV_ACCESS_TUNE,
  SRV_ACCESS_ADMIN
} srv_access;

/* The most segments a routed path has (more: 404). */
#define SRV_ROUTE_MAX_SEGS 8

/* What the router hands a handler: the decoded path segments (borrowed, valid during the call) and,
 * for a pattern with {key}, the validated key (else NULL). */
typedef struct srv_route_args {
  const char *seg[SRV_ROUTE_MAX_SEGS];
  int nseg;
  const store_key *key;
} srv_route_args;

/* The handlers of route_table.h: each queues its response and returns libmicrohttpd's result. The
 * method, the key and the access column were checked before the call. */
#define X(id, name, methods, pattern, access, handler) \
  enum MHD_Result srv_route_##handler(srv_t *s, srv_request *r, const srv_route_args *a);
SRV_ROUTE_TABLE(X)
#undef X

/* Start-up: this machine's targets, the compiler version, the network list (cached for GET
 * /networks and upserted into the store). On failure writes a message into err. */
th_status srv_routes_init(srv_t *s, char *err, size_t n);
/* Routes a complete request (method, path, query and body read) and queues its response. */
enum MHD_Result srv_route(srv_t *s, srv_request *r);

#endif
