/* networks: the /networks routes. GET /networks lists the zoo (cached at start) and the uploaded networks (from
 * the store); GET, PUT and DELETE /networks/{name} describe, upload and remove a user's ONNX network. A PUT's body
 * is never buffered: from the request's headers on (srv_networks_put_begin) it streams into a file in the
 * store's scratch directory, hashed as it arrives and cut off at --max-upload, and the complete request
 * (srv_networks_route) checks its Content-Digest, validates it (upload.h: the import runs here, in the request's
 * thread: a few seconds for a 400 MB model) and stores it. Sits beside routes.c; http.c calls the streaming
 * hooks. */
#ifndef SRV_NETWORKS_H
#define SRV_NETWORKS_H

#include <stddef.h>

#include "srv_int.h"

/* The headers of a PUT have arrived. For a PUT /networks/{name} it checks what needs no body (the token, the
 * name, a zoo name, Content-Length against --max-upload, the shapes parameter) and either queues the error
 * (r->answered set: the body is never read) or opens the file the body streams into (r->upload). Returns 0 for
 * another path (its body is buffered as any other), else 1 with *ret libmicrohttpd's result. */
int srv_networks_put_begin(srv_t *s, srv_request *r, enum MHD_Result *ret);
/* Writes n bytes of an upload's body (r->upload set) to its file, hashing them; past --max-upload the file goes
 * and the rest is read and dropped (the answer is a 413 once the request is complete), up to 64 MiB more, when
 * the connection is closed instead (MHD_NO). */
enum MHD_Result srv_networks_put_data(srv_t *s, srv_request *r, const char *data, size_t n);
/* Frees an upload's state, removing its file unless the store took it; accepts NULL. */
void srv_upload_free(srv_upload *u);

/* GET /networks[?batch=N]. */
enum MHD_Result srv_networks_list(srv_t *s, srv_request *r);
/* A complete request for /networks/{name} (name percent-decoded): GET or HEAD describes it (zoo or uploaded),
 * PUT stores the streamed upload, DELETE removes an uploaded network with its models and live jobs. */
enum MHD_Result srv_networks_route(srv_t *s, srv_request *r, const char *name);

#endif
