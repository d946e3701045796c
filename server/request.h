/* request: reading what a client sent, without trusting it: percent-decoding that refuses encoded separators,
 * and query-string lookup. Pure functions; thread-safe. */
#ifndef SRV_REQUEST_H
#define SRV_REQUEST_H

#include <stddef.h>

#include "srv_int.h"

/* Percent-decodes in (len bytes) into out (n bytes, NUL-terminated); returns the decoded length, or -1 on a
 * malformed escape, an encoded '/', '\\' or NUL, or overflow. */
int srv_pct_decode(const char *in, size_t len, char *out, size_t n);
/* The value of query parameter name, percent-decoded into out: 1 when present ("" for a bare name), 0 when
 * absent, -1 when malformed. */
int srv_query(const srv_request *r, const char *name, char *out, size_t n);

/* Checks an RFC 9530 Content-Digest (or Repr-Digest) header value, a dictionary such as "sha-256=:<base64>:,
 * sha-512=:...:", against sha (the SHA-256 of the body): 1 when its sha-256 member matches, 0 when it differs,
 * -1 when the header is malformed, -2 when it has no sha-256 member (the only algorithm checked). */
int srv_content_digest_check(const char *header, const unsigned char sha[32]);

#endif
