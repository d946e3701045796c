/* routes: the router of the registry API (see README.md, "HTTP API"), made from the table in
 * route_table.h. It sits above the handlers (models.c, jobs.c, status.c, web.c, networks.c,
 * aliases.c, events.c, oci.c), which it calls through the table (their prototypes and arguments:
 * srv_int.h); http.c calls it. */
#ifndef SRV_ROUTES_H
#define SRV_ROUTES_H

#include <stddef.h>

#include "srv_int.h"
#include "th_status.h"

/* Start-up: this machine's targets, the compiler version, the network list (cached for GET
 * /networks and upserted into the store). On failure writes a message into err. */
th_status srv_routes_init(srv_t *s, char *err, size_t n);
/* Routes a complete request (method, path, query and body read) and queues its response. */
enum MHD_Result srv_route(srv_t *s, srv_request *r);

#endif
