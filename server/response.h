/* response: the helpers every route answers with (JSON, errors, files, metrics). The bottom of server/: it calls
 * nothing above it. Every function queues exactly one response on r's connection and returns libmicrohttpd's
 * result; callable from any libmicrohttpd thread. */
#ifndef SRV_RESPONSE_H
#define SRV_RESPONSE_H

#include <jansson.h>
#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>

#include "srv_int.h"
#include "th_status.h"

/* Queues resp (owned; destroyed here; NULL answers MHD_NO) with HTTP status, and counts the route's status. */
enum MHD_Result srv_queue(srv_t *s, srv_request *r, unsigned int status, struct MHD_Response *resp);
/* Adds n to the artifact bytes served (/metrics). */
void srv_count_bytes(srv_t *s, int64_t n);

/* A response over body (malloc'd, n bytes; transferred: the response frees it, or this function
 * does when libmicrohttpd cannot make the response, and returns NULL). */
struct MHD_Response *srv_response_buffer(void *body, size_t n);
/* A response over the n bytes of fd from offset (fd transferred: the response closes it, or this
 * function does when libmicrohttpd cannot make the response, and returns NULL). */
struct MHD_Response *srv_response_fd(int fd, uint64_t offset, uint64_t n);
/* doc (consumed) as an application/json, no-store response: its text and a newline. For routes that
 * add headers before srv_queue; NULL when out of memory (doc NULL, json_dumps or libmicrohttpd
 * failing). */
struct MHD_Response *srv_json_response(json_t *doc);

/* Queues json (borrowed; copied) and a newline as an application/json body. */
enum MHD_Result srv_json(srv_t *s, srv_request *r, unsigned int status, const char *json);
/* Queues doc (consumed) as the JSON body; NULL (out of memory) answers a TH_ERR_NOMEM error. */
enum MHD_Result srv_json_doc(srv_t *s, srv_request *r, unsigned int status, json_t *doc);

/* The error body {"error":{...extra, "code", "status": http, "message": msg}} as a response (no-store), for
 * routes that add headers before srv_queue; extra (an object, or NULL) is consumed. NULL when out of memory. */
struct MHD_Response *srv_error_response(unsigned int http, const char *code, json_t *extra, const char *msg);
/* Queues an error for rc with HTTP status th_status_http(rc); extra_json is the text of an object
 * whose fields join the error (e.g. {"valid": [...]}), or NULL. TH_ERR_UNAVAILABLE (the store's
 * database went away) answers 503 with code "database_unavailable", whatever code says, and
 * Retry-After. */
enum MHD_Result srv_error(srv_t *s, srv_request *r, th_status rc, const char *code, const char *extra_json,
                          const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* The same for an HTTP status that is no th_status's (405, 414, 503 not ready). */
enum MHD_Result srv_error_http(srv_t *s, srv_request *r, unsigned int http, const char *code,
                               const char *extra_json, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* 1 when an If-None-Match header value matches etag (a list, "*", weak validators). */
int srv_etag_matches(const char *header, const char *etag);
/* The part of a file of size bytes (ETag etag) to send for a Range header and an If-Range header (each
 * NULL when absent): 1 and *start, *len for one satisfiable byte range (If-Range, when present, must equal
 * etag); 0 and the whole file when there is no usable range (none, a multi-range, malformed, or an If-Range
 * for another version); -1 when the range is unsatisfiable (answer 416). Pure; thread-safe. */
int srv_range_select(const char *range, const char *if_range, const char *etag, int64_t size, int64_t *start,
                     int64_t *len);
/* Sends the file at path (size bytes, content digest hex) with ETag, Range, If-Range, HEAD, Repr-Digest and
 * Content-Disposition filename; immutable: cached for a year (blobs), else revalidated. extra_hdrs is a
 * {NULL, NULL}-terminated list of more headers, or NULL. */
enum MHD_Result srv_send_file(srv_t *s, srv_request *r, const char *path, int64_t size, const char *digest,
                              const char *media_type, const char *filename, int immutable,
                              const char *extra_hdrs[][2]);

#endif
