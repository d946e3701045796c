/* Bearer tokens with scopes, stored hashed (see auth.h). */
#include "auth.h"

#include <stdio.h>
#include <string.h>

#include "th_sha256.h"

#define AUTH_MIN_TOKEN 8

const char *srv_scope_name(unsigned scope) {
  return scope & SRV_SCOPE_ADMIN ? "admin" : "tune";
}

static void auth__hash(const char *token, size_t len, unsigned char out[32]) {
  th_sha256 h;
  th_sha256_init(&h);
  th_sha256_update(&h, token, len);
  th_sha256_final(&h, out);
}

/* Parses "tune,admin" (len bytes) into scope bits; 0 on an unknown name. */
static unsigned auth__scopes(const char *p, size_t len) {
  unsigned bits = 0;
  while (len) {
    const char *comma = memchr(p, ',', len);
    size_t w = comma ? (size_t)(comma - p) : len;
    if (w == 4 && !memcmp(p, "tune", 4))
      bits |= SRV_SCOPE_TUNE;
    else if (w == 5 && !memcmp(p, "admin", 5))
      bits |= SRV_SCOPE_ADMIN | SRV_SCOPE_TUNE;
    else
      return 0;
    if (!comma) break;
    len -= w + 1;
    p = comma + 1;
  }
  return bits;
}

th_status srv_tokens_parse(const char *text, srv_tokens *out, char *err, size_t n) {
  memset(out, 0, sizeof *out);
  int line = 0;
  for (const char *p = text; *p;) {
    const char *end = strchr(p, '\n');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    line++;
    while (len && (p[len - 1] == '\r' || p[len - 1] == ' ' || p[len - 1] == '\t')) len--;
    while (len && (*p == ' ' || *p == '\t')) p++, len--;
    if (len && *p != '#') {
      const char *sp = memchr(p, ' ', len);
      size_t tl = sp ? (size_t)(sp - p) : len;
      unsigned scopes = SRV_SCOPE_TUNE | SRV_SCOPE_ADMIN;
      if (sp) {
        const char *s = sp;
        while (s < p + len && *s == ' ') s++;
        scopes = auth__scopes(s, (size_t)(p + len - s));
        if (!scopes) {
          snprintf(err, n, "line %d: unknown scope in '%.*s'; valid scopes: tune, admin (comma-separated)", line,
                   (int)(p + len - s), s);
          return TH_ERR_INVALID;
        }
      }
      if (out->n == SRV_MAX_TOKENS) {
        snprintf(err, n, "line %d: more than %d tokens", line, SRV_MAX_TOKENS);
        return TH_ERR_INVALID;
      }
      unsigned char *h = out->t[out->n].hash;
      if (tl > 7 && !memcmp(p, "sha256:", 7)) {
        char hex[65];
        snprintf(hex, sizeof hex, "%.*s", (int)(tl - 7), p + 7);
        if (tl - 7 != 64 || th_unhex32(hex, h) != TH_OK) {
          snprintf(err, n, "line %d: a hashed token is sha256: and 64 hex digits (tunehub hash-token prints one)",
                   line);
          return TH_ERR_INVALID;
        }
      } else if (tl < AUTH_MIN_TOKEN || tl > 1024) {
        snprintf(err, n, "line %d: a token is %d to 1024 characters", line, AUTH_MIN_TOKEN);
        return TH_ERR_INVALID;
      } else {
        auth__hash(p, tl, h);
      }
      out->t[out->n++].scopes = scopes;
    }
    if (!end) break;
    p = end + 1;
  }
  if (out->n == 0) {
    snprintf(err, n, "no token in the file (one per line: TOKEN or sha256:HEX, then optional scopes tune,admin)");
    return TH_ERR_INVALID;
  }
  return TH_OK;
}

unsigned srv_tokens_scopes(const srv_tokens *t, const char *presented) {
  unsigned char h[32];
  auth__hash(presented, strlen(presented), h);
  unsigned scopes = 0;
  for (int i = 0; i < t->n; i++) {
    unsigned diff = 0;
    for (int b = 0; b < 32; b++) diff |= (unsigned)(h[b] ^ t->t[i].hash[b]);
    /* no early exit: every stored hash is compared whatever matched */
    unsigned match = (unsigned)-(int)(diff == 0);
    scopes |= match & t->t[i].scopes;
  }
  return scopes;
}

int cli_hash_token(void) {
  char line[1100];
  if (!fgets(line, sizeof line, stdin)) {
    fprintf(stderr, "tunehub hash-token: give the token on stdin (echo -n TOKEN | tunehub hash-token)\n");
    return 2;
  }
  size_t len = strcspn(line, "\r\n");
  if (len < AUTH_MIN_TOKEN) {
    fprintf(stderr, "tunehub hash-token: a token is at least %d characters\n", AUTH_MIN_TOKEN);
    return 2;
  }
  unsigned char h[32];
  char hex[65];
  auth__hash(line, len, h);
  th_hex(h, 32, hex);
  printf("sha256:%s\n", hex);
  return 0;
}
