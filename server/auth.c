/* Bearer tokens with scopes, stored hashed, and the count of failed authentications per address
 * (see auth.h). */
#include "auth.h"

#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "th_sha256.h"

const char *srv_scope_name(unsigned scope) {
  return scope & SRV_SCOPE_ADMIN  ? "admin"
         : scope & SRV_SCOPE_TUNE ? "tune"
         : scope & SRV_SCOPE_READ ? "read"
                                  : "none";
}

static void auth__hash(const char *token, size_t len, unsigned char out[32]) {
  th_sha256 h;
  th_sha256_init(&h);
  th_sha256_update(&h, token, len);
  th_sha256_final(&h, out);
}

/* Parses "read,tune,admin" (len bytes) into scope bits, each scope with those below it; 0 on an
 * unknown name. */
static unsigned auth__scopes(const char *p, size_t len) {
  unsigned bits = 0;
  while (len) {
    const char *comma = memchr(p, ',', len);
    size_t w = comma ? (size_t)(comma - p) : len;
    if (w == 4 && !memcmp(p, "read", 4))
      bits |= SRV_SCOPE_READ;
    else if (w == 4 && !memcmp(p, "tune", 4))
      bits |= SRV_SCOPE_TUNE | SRV_SCOPE_READ;
    else if (w == 5 && !memcmp(p, "admin", 5))
      bits |= SRV_SCOPE_ADMIN | SRV_SCOPE_TUNE | SRV_SCOPE_READ;
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
      unsigned scopes = SRV_SCOPE_READ | SRV_SCOPE_TUNE | SRV_SCOPE_ADMIN;
      if (sp) {
        const char *s = sp;
        while (s < p + len && *s == ' ') s++;
        scopes = auth__scopes(s, (size_t)(p + len - s));
        if (!scopes) {
          snprintf(
              err, n,
              "line %d: unknown scope in '%.*s'; valid scopes: read, tune, admin (comma-separated)",
              line, (int)(p + len - s), s);
          return TH_ERR_INVALID;
        }
      }
      if (out->n == SRV_MAX_TOKENS) {
        snprintf(err, n, "line %d: more than %d tokens", line, SRV_MAX_TOKENS);
        return TH_ERR_INVALID;
      }
      unsigned char *h = out->t[out->n].hash;
      if (tl > 7 && !memcmp(p, "sha256:", 7)) {
        char hex[TH_HEX_MAX];
        snprintf(hex, sizeof hex, "%.*s", (int)(tl - 7), p + 7);
        if (tl - 7 != 64 || th_unhex32(hex, h) != TH_OK) {
          snprintf(err, n, "line %d: a hashed token is sha256: and 64 hex digits (tunehub hash-token prints one)",
                   line);
          return TH_ERR_INVALID;
        }
      } else if (tl < SRV_TOKEN_MIN || tl > 1024) {
        snprintf(err, n,
                 "line %d: a token is %d to 1024 characters, this one has %zu (make one with "
                 "`openssl rand -hex 32`)",
                 line, SRV_TOKEN_MIN, tl);
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
    snprintf(err, n,
             "no token in the file (one per line: TOKEN or sha256:HEX, then optional scopes "
             "read,tune,admin)");
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

int cli_hash_token(int argc, char **argv) {
  static const char usage[] =
      "usage: tunehub hash-token < TOKEN   print sha256:HEX, a --token-file line that does not "
      "hold the token";
  if (cli_help(argc, argv, usage)) return 0;
  if (argc > 0) {
    fprintf(stderr, "%s\n", usage);
    return 2;
  }
  char line[1100];
  if (!fgets(line, sizeof line, stdin)) {
    fprintf(stderr, "tunehub hash-token: give the token on stdin (echo -n TOKEN | tunehub hash-token)\n");
    return 2;
  }
  size_t len = strcspn(line, "\r\n");
  if (len < SRV_TOKEN_MIN) {
    fprintf(stderr,
            "tunehub hash-token: a token is at least %d characters (make one with "
            "`openssl rand -hex 32`)\n",
            SRV_TOKEN_MIN);
    return 2;
  }
  unsigned char h[32];
  char hex[TH_HEX_MAX];
  auth__hash(line, len, h);
  th_hex(h, 32, hex);
  printf("sha256:%s\n", hex);
  return 0;
}

void srv_auth_fails_init(srv_auth_fails *f, int limit) {
  memset(f->slot, 0, sizeof f->slot);
  f->limit = limit;
  pthread_mutex_init(&f->mu, NULL);
}

void srv_auth_fails_free(srv_auth_fails *f) {
  pthread_mutex_destroy(&f->mu);
}

/* The index of ip's slot with its window current at now (a new window when it has none or it
 * ended), under f->mu; with create 0, -1 when ip has no current window. */
static int auth__slot(srv_auth_fails *f, const char *ip, double now, int create) {
  int oldest = 0;
  for (int i = 0; i < SRV_AUTH_FAIL_SLOTS; i++) {
    if (f->slot[i].start > 0 && !strcmp(f->slot[i].ip, ip)) {
      if (now - f->slot[i].start < 60.0) return i;
      if (!create) return -1;
      f->slot[i].start = now;
      f->slot[i].n = 0;
      return i;
    }
    if (f->slot[i].start < f->slot[oldest].start)
      oldest = i; /* a free slot has start 0: it is taken first */
  }
  if (!create) return -1;
  snprintf(f->slot[oldest].ip, sizeof f->slot[oldest].ip, "%s", ip);
  f->slot[oldest].start = now;
  f->slot[oldest].n = 0;
  return oldest;
}

int srv_auth_fails_wait(srv_auth_fails *f, const char *ip, double now) {
  if (f->limit <= 0) return 0;
  pthread_mutex_lock(&f->mu);
  int i = auth__slot(f, ip, now, 0), wait = 0;
  if (i >= 0 && f->slot[i].n >= f->limit) {
    wait = (int)(f->slot[i].start + 60.0 - now + 0.999);
    if (wait < 1) wait = 1;
  }
  pthread_mutex_unlock(&f->mu);
  return wait;
}

void srv_auth_fails_note(srv_auth_fails *f, const char *ip, double now) {
  if (f->limit <= 0) return;
  pthread_mutex_lock(&f->mu);
  f->slot[auth__slot(f, ip, now, 1)].n++;
  pthread_mutex_unlock(&f->mu);
}
