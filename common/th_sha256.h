/* SHA-256 (FIPS 180-4), hex and base64 helpers. Artifacts are content-addressed by their SHA-256, and the
 * server sends it as an ETag ("sha256:<hex>") and as an RFC 9530 Content-Digest (base64). */
#ifndef TH_SHA256_H
#define TH_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "th_limits.h"
#include "th_status.h"

typedef struct th_sha256 {
  uint32_t h[8];
  uint64_t len;
  unsigned char block[64];
  size_t fill;
} th_sha256;

void th_sha256_init(th_sha256 *s);
void th_sha256_update(th_sha256 *s, const void *data, size_t n);
void th_sha256_final(th_sha256 *s, unsigned char out[32]);

/* Writes 64 lowercase hex digits and a NUL into hex. */
void th_hex(const unsigned char *bytes, size_t n, char *hex);
/* Standard base64 with padding; out needs 4*ceil(n/3)+1 bytes. */
void th_base64(const unsigned char *bytes, size_t n, char *out);
/* Decodes 64 hex digits into 32 bytes; returns TH_ERR_INVALID on anything else. */
th_status th_unhex32(const char *hex, unsigned char out[32]);
/* True when s is exactly 64 lowercase hex digits. */
int th_is_sha256_hex(const char *s);

/* Hashes a whole file. On success writes the hex digest (65 bytes) and the size. */
th_status th_sha256_file(const char *path, char hex[TH_HEX_MAX], int64_t *size);

#endif
