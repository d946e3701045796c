/* oci: the read side of the OCI distribution API under /v2/ (see oci.c): repositories <framework>/<network>,
 * tags b<batch>, b<batch>-v<version> and the aliases, manifests, blobs, tags/list and _catalog. */
#ifndef SRV_OCI_H
#define SRV_OCI_H

#include "srv_int.h"

/* Routes a request whose raw path is /v2 or starts with /v2/ and queues its response (OCI error bodies). */
enum MHD_Result srv_oci_route(srv_t *s, srv_request *r);

#endif
