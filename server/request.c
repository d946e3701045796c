/* Request parsing (see request.h). tunehub reads the raw URL (libmicrohttpd's own unescaping is turned off), so
 * every path segment and query value passes through srv_pct_decode, which refuses what could change the meaning
 * of a path after routing. */
#include "request.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "th_sha256.h"
#include "th_util.h"

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

void srv_path_squash(char *path) {
  char *w = path, prev = '\0';
  for (const char *p = path; *p; prev = *p++)
    if (*p != '/' || prev != '/') *w++ = *p;
  *w = '\0';
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

int srv_tune_body_check(const char *data, size_t len, json_t **body, const char **bad, char *msg, size_t n) {
  json_error_t jerr;
  json_t *b = len ? json_loadb(data, len, 0, &jerr) : json_object();
  if (!b || !json_is_object(b)) {
    json_decref(b);
    return -1;
  }
  static const char *const tuners[] = {"xgb", "ga", "random", "grid"};
  const char *k;
  json_t *v;
  *bad = NULL;
  if (n) msg[0] = '\0';
  json_object_foreach(b, k, v) {
    if (!strcmp(k, "tuner")) {
      int ok = 0;
      for (int i = 0; i < 4; i++) ok |= json_is_string(v) && !strcmp(json_string_value(v), tuners[i]);
      if (!ok) {
        *bad = "tuner";
        snprintf(msg, n, "valid tuners: xgb, ga, random, grid");
      }
    } else if (!strcmp(k, "trials") || !strcmp(k, "early_stopping")) {
      if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 100000) {
        *bad = k;
        snprintf(msg, n, "%s is a whole number from 1 to 100000", k);
      }
    } else if (!strcmp(k, "priority")) {
      if (!json_is_integer(v) || json_integer_value(v) < -100 || json_integer_value(v) > 100) {
        *bad = k;
        snprintf(msg, n, "priority is a whole number from -100 to 100");
      }
    } else {
      *bad = k;
      snprintf(msg, n, "valid options: trials, tuner, early_stopping, priority");
    }
    if (*bad) break;
  }
  *body = b;
  return 0;
}

const char *srv_alias_body_parse(const char *data, size_t len, int *version, char digest[TH_HEX_MAX]) {
  json_error_t jerr;
  json_t *body = len ? json_loadb(data, len, 0, &jerr) : NULL;
  const char *why = NULL;
  json_t *v = body ? json_object_get(body, "version") : NULL, *d = body ? json_object_get(body, "digest") : NULL;
  if (!body || !json_is_object(body))
    why = "not a JSON object";
  else if (json_object_size(body) != 1 || (!v && !d))
    why = "give exactly one of version and digest";
  else if (v && (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 1000000000))
    why = "version is a whole number from 1";
  else if (d && (!json_is_string(d) || strncmp(json_string_value(d), "sha256:", 7) != 0 ||
                 !th_is_sha256_hex(json_string_value(d) + 7)))
    why = "digest is sha256: followed by 64 lowercase hex digits";
  if (!why) {
    *version = v ? (int)json_integer_value(v) : 0;
    digest[0] = '\0';
    if (d) snprintf(digest, 65, "%s", json_string_value(d) + 7);
  }
  json_decref(body);
  return why;
}

int srv_last_event_id_parse(const char *header, int64_t *last) {
  int64_t v = 0;
  if (header && *header && (th_parse_i64(header, &v) != TH_OK || v < 0)) return -1;
  *last = v;
  return 0;
}
