/* request: reading what a client sent, without trusting it: percent-decoding that refuses encoded separators,
 * query-string lookup, the headers and JSON bodies that routes parse. Pure functions (each fuzzed by
 * tests/fuzz/); thread-safe. */
#ifndef SRV_REQUEST_H
#define SRV_REQUEST_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "srv_int.h"

/* Percent-decodes in (len bytes) into out (n bytes, NUL-terminated); returns the decoded length, or -1 on a
 * malformed escape, an encoded '/', '\\' or NUL, or overflow. */
int srv_pct_decode(const char *in, size_t len, char *out, size_t n);
/* Collapses each run of '/' in path (a raw request path, NUL-terminated) into one, in place, so
 * that "//networks//x" names the resource "/networks/x" does for every route, the ones matched on
 * the raw path (an upload, the OCI API) as much as those the router splits. */
void srv_path_squash(char *path);
/* The value of query parameter name, percent-decoded into out: 1 when present ("" for a bare name), 0 when
 * absent, -1 when malformed. */
int srv_query(const srv_request *r, const char *name, char *out, size_t n);

/* Checks an RFC 9530 Content-Digest (or Repr-Digest) header value, a dictionary such as "sha-256=:<base64>:,
 * sha-512=:...:", against sha (the SHA-256 of the body): 1 when its sha-256 member matches, 0 when it differs,
 * -1 when the header is malformed, -2 when it has no sha-256 member (the only algorithm checked). */
int srv_content_digest_check(const char *header, const unsigned char sha[32]);

/* The body of POST /models/{fw}/{net}/{batch}/tune (len bytes; empty means {}): a JSON object of options,
 * each known and in range (trials and early_stopping 1..100000, tuner xgb|ga|random|grid, priority
 * -100..100). Returns -1 when the body is not a JSON object (*body untouched); else 0 with *body the object
 * (owned: json_decref it), and *bad NULL when every option is valid, or *bad the first invalid option's
 * name (pointing into *body) and msg why. */
int srv_tune_body_check(const char *data, size_t len, json_t **body, const char **bad, char *msg, size_t n);
/* The body of PUT .../aliases/{alias} (len bytes): exactly one of {"version": N} (1..1e9) and {"digest":
 * "sha256:<64 lowercase hex>"}. Returns NULL and sets *version (0 for a digest) and digest ("" for a
 * version), or returns why the body is invalid (a static string; out-params untouched). */
const char *srv_alias_body_parse(const char *data, size_t len, int *version, char digest[TH_HEX_MAX]);
/* A Last-Event-ID header (NULL when absent): 0 and *last the event id a resumed stream continues after (0
 * when absent or empty: a new stream), or -1 when it is not a whole number >= 0. */
int srv_last_event_id_parse(const char *header, int64_t *last);

#endif
