/* Request parsing (see request.h). tunehub reads the raw URL (libmicrohttpd's own unescaping is turned off), so
 * every path segment and query value passes through srv_pct_decode, which refuses what could change the meaning
 * of a path after routing. */
#include "request.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "th_sha256.h"

static int srv__hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int srv_pct_decode(const char *in, size_t len, char *out, size_t n) {
  size_t o = 0;
  for (size_t i = 0; i < len; i++) {
    char c = in[i];
    if (c == '%') {
      if (i + 2 >= len) return -1;
      int hi = srv__hex(in[i + 1]);
      int lo = srv__hex(in[i + 2]);
      if (hi < 0 || lo < 0) return -1;
      c = (char)(hi << 4 | lo);
      if (c == '/' || c == '\0' || c == '\\') return -1;
      i += 2;
    } else if (c == '+') {
      c = ' ';
    }
    if (o + 1 >= n) return -1;
    out[o++] = c;
  }
  out[o] = '\0';
  return (int)o;
}

int srv_query(const srv_request *r, const char *name, char *out, size_t n) {
  size_t nl = strlen(name);
  const char *p = r->query;
  while (*p) {
    const char *amp = strchr(p, '&');
    size_t len = amp ? (size_t)(amp - p) : strlen(p);
    if (len >= nl && strncmp(p, name, nl) == 0 && (len == nl || p[nl] == '=')) {
      if (len == nl) {
        if (n) out[0] = '\0';
        return 1;
      }
      return srv_pct_decode(p + nl + 1, len - nl - 1, out, n) < 0 ? -1 : 1;
    }
    if (!amp) break;
    p = amp + 1;
  }
  return 0;
}

int srv_content_digest_check(const char *header, const unsigned char sha[32]) {
  char want[48];
  th_base64(sha, 32, want);
  const char *p = header;
  int found = 0, match = 0;
  while (p && *p) {
    while (*p == ' ' || *p == '\t' || *p == ',') p++;
    if (!*p) break;
    const char *key = p;
    while (*p && *p != '=' && *p != ',') p++;
    if (*p != '=') return -1; /* every member of the dictionary is key=:bytes: */
    size_t klen = (size_t)(p - key);
    while (klen && (key[klen - 1] == ' ' || key[klen - 1] == '\t')) klen--;
    p++;
    while (*p == ' ' || *p == '\t') p++;
    if (*p != ':') return -1;
    const char *val = ++p;
    while (*p && *p != ':') {
      if (!isalnum((unsigned char)*p) && *p != '+' && *p != '/' && *p != '=') return -1;
      p++;
    }
    if (*p != ':') return -1;
    size_t vlen = (size_t)(p - val);
    p++;
    while (*p == ' ' || *p == '\t') p++;
    if (*p == ';') { /* parameters of a member: skipped */
      while (*p && *p != ',') p++;
    }
    if (*p && *p != ',') return -1;
    if (klen == 7 && strncasecmp(key, "sha-256", 7) == 0) {
      found = 1;
      /* standard base64 with its padding; a value without the padding is the same bytes */
      size_t wlen = strlen(want);
      while (vlen && val[vlen - 1] == '=') vlen--;
      while (wlen && want[wlen - 1] == '=') wlen--;
      match = vlen == wlen && memcmp(val, want, vlen) == 0;
    }
  }
  if (!found) return -2;
  return match;
}
