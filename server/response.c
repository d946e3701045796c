/* Responses (see response.h): every answer goes through srv_queue, which adds the Server header,
 * counts the route's status for /metrics, and gives a 429 or a 503 its Retry-After. Errors take
 * their HTTP status from the th_status table (th_status_http) so that one code means one status
 * everywhere, and a store whose database went away (TH_ERR_UNAVAILABLE) answers the same 503
 * "database_unavailable" on every route. Files implement ETag / If-None-Match, Range / If-Range and
 * HEAD themselves, because libmicrohttpd does none of them, and are sent zero-copy from their
 * content-addressed path. */
#include "response.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "th_alloc.h"
#include "th_sha256.h"
#include "th_util.h"

/* clang-format off */
const char *const srv_route_names[] = {
    "other",
#define X(id, name, methods, pattern, access, handler) name,
    SRV_ROUTE_TABLE(X)
#undef X
};
/* clang-format on */
/* one label per route, and a metrics row per label: a route added to the table is counted */
_Static_assert(sizeof srv_route_names / sizeof srv_route_names[0] == SRV_ROUTE_COUNT,
               "srv_route_names: one name per route of route_table.h");
_Static_assert(sizeof((srv_t *)0)->requests / sizeof((srv_t *)0)->requests[0] == SRV_ROUTE_COUNT,
               "srv_t.requests: one row per route of route_table.h");
_Static_assert(sizeof((srv_t *)0)->requests[0] / sizeof(int64_t) == SRV_STATUS_SLOTS &&
                   sizeof((srv_t *)0)->status_codes / sizeof(int) == SRV_STATUS_SLOTS,
               "srv_t.requests: one column per status slot");

static int srv__status_slot(srv_t *s, unsigned int status) {
  for (int i = 0; i < s->nstatus; i++)
    if (s->status_codes[i] == (int)status) return i;
  if (s->nstatus < SRV_STATUS_SLOTS) {
    s->status_codes[s->nstatus] = (int)status;
    return s->nstatus++;
  }
  return SRV_STATUS_SLOTS - 1;
}

enum MHD_Result srv_queue(srv_t *s, srv_request *r, unsigned int status, struct MHD_Response *resp) {
  if (!resp) return MHD_NO;
  MHD_add_response_header(resp, "Server", "tunehub/" TH_VERSION);
  /* no body of ours is ever to be sniffed into another type (a JSON error rendered as HTML, say) */
  if (!MHD_get_response_header(resp, "X-Content-Type-Options"))
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
  /* every 429 (queue full, too many streams) and 503 (building, not ready, the database away) tells
   * clients such as curl --retry when to come back; a lost database is retried by the store every
   * 0.25 to 5 s */
  if (status == 429 && !MHD_get_response_header(resp, "Retry-After"))
    MHD_add_response_header(resp, "Retry-After", "10");
  if (status == 503 && !MHD_get_response_header(resp, "Retry-After"))
    MHD_add_response_header(resp, "Retry-After", "5");
  if (r->auto_target[0]) { /* ?target=auto: what was chosen for the client and why */
    MHD_add_response_header(resp, "X-Tunehub-Target", r->auto_target);
    MHD_add_response_header(resp, "X-Tunehub-Target-Reason", r->auto_reason);
  }
  pthread_mutex_lock(&s->metrics_mu);
  s->requests[r->route][srv__status_slot(s, status)]++;
  pthread_mutex_unlock(&s->metrics_mu);
  enum MHD_Result ret = MHD_queue_response(r->con, status, resp);
  MHD_destroy_response(resp);
  return ret;
}

void srv_count_bytes(srv_t *s, int64_t n) {
  pthread_mutex_lock(&s->metrics_mu);
  s->bytes_served += n;
  pthread_mutex_unlock(&s->metrics_mu);
}

struct MHD_Response *srv_response_buffer(void *body, size_t n) {
  struct MHD_Response *resp = MHD_create_response_from_buffer(n, body, MHD_RESPMEM_MUST_FREE);
  if (!resp) free(body); /* libmicrohttpd took it only if it made the response */
  return resp;
}

struct MHD_Response *srv_response_fd(int fd, uint64_t offset, uint64_t n) {
  struct MHD_Response *resp = MHD_create_response_from_fd_at_offset64(n, fd, offset);
  if (!resp) close(fd);
  return resp;
}

/* text (malloc'd; transferred) holds n characters and room for one more: the body is the text and a
 * newline. */
static struct MHD_Response *srv__json_text_response(char *text, size_t n) {
  text[n] = '\n';
  struct MHD_Response *resp = srv_response_buffer(text, n + 1);
  if (!resp) return NULL;
  MHD_add_response_header(resp, "Content-Type", "application/json");
  MHD_add_response_header(resp, "Cache-Control", "no-store");
  return resp;
}

struct MHD_Response *srv_json_response(json_t *doc) {
  char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
  json_decref(doc);
  /* json_dumps leaves room for its NUL, which becomes the newline */
  return text ? srv__json_text_response(text, strlen(text)) : NULL;
}

enum MHD_Result srv_json(srv_t *s, srv_request *r, unsigned int status, const char *json) {
  size_t n = strlen(json);
  char *body = th_malloc(n + 1);
  if (!body) return MHD_NO;
  memcpy(body, json, n);
  return srv_queue(s, r, status, srv__json_text_response(body, n));
}

enum MHD_Result srv_json_doc(srv_t *s, srv_request *r, unsigned int status, json_t *doc) {
  struct MHD_Response *resp = srv_json_response(doc);
  if (!resp) return srv_error(s, r, TH_ERR_NOMEM, "out_of_memory", NULL, "out of memory");
  return srv_queue(s, r, status, resp);
}

struct MHD_Response *srv_error_response(unsigned int http, const char *code, json_t *extra, const char *msg) {
  json_t *err = json_is_object(extra) ? extra : json_object();
  if (err != extra) json_decref(extra);
  json_object_set_new(err, "code", json_string(code));
  json_object_set_new(err, "status", json_integer(http));
  json_object_set_new(err, "message", json_string(msg));
  return srv_json_response(json_pack("{s:o}", "error", err));
}

static enum MHD_Result srv__error_v(srv_t *s, srv_request *r, unsigned int http, const char *code,
                                    const char *extra_json, const char *fmt, va_list ap) {
  char msg[TH_MSG_MAX];
  vsnprintf(msg, sizeof msg, fmt, ap);
  json_t *extra = extra_json ? json_loads(extra_json, 0, NULL) : NULL;
  return srv_queue(s, r, http, srv_error_response(http, code, extra, msg));
}

enum MHD_Result srv_error(srv_t *s, srv_request *r, th_status rc, const char *code, const char *extra_json,
                          const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  /* whichever route met it, a database that went away is one condition with one code */
  if (rc == TH_ERR_UNAVAILABLE) code = "database_unavailable";
  enum MHD_Result ret = srv__error_v(s, r, (unsigned int)th_status_http(rc), code, extra_json, fmt, ap);
  va_end(ap);
  return ret;
}

enum MHD_Result srv_error_http(srv_t *s, srv_request *r, unsigned int http, const char *code,
                               const char *extra_json, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  enum MHD_Result ret = srv__error_v(s, r, http, code, extra_json, fmt, ap);
  va_end(ap);
  return ret;
}

/* ---- files: ETag, Range, HEAD ---- */

/* 0: no usable Range (serve all); 1: one satisfiable range; -1: unsatisfiable. */
static int srv__parse_range(const char *h, int64_t size, int64_t *start, int64_t *len) {
  if (!h || strncmp(h, "bytes=", 6) != 0) return 0;
  const char *p = h + 6;
  if (strchr(p, ',')) return 0; /* multi-range: a plain 200 is allowed */
  const char *dash = strchr(p, '-');
  if (!dash) return 0;
  char a[32] = "", b[32] = "";
  size_t la = (size_t)(dash - p), lb = strlen(dash + 1);
  if (la >= sizeof a || lb >= sizeof b) return 0;
  memcpy(a, p, la);
  a[la] = '\0';
  memcpy(b, dash + 1, lb + 1);
  int64_t x = 0, y = 0;
  if (la == 0) { /* suffix: last y bytes */
    if (th_parse_i64(b, &y) != TH_OK || y < 0) return 0;
    if (y == 0 || size == 0) return -1;
    if (y > size) y = size;
    *start = size - y;
    *len = y;
    return 1;
  }
  if (th_parse_i64(a, &x) != TH_OK || x < 0) return 0;
  if (lb == 0) {
    y = size - 1;
  } else if (th_parse_i64(b, &y) != TH_OK || y < x) {
    return 0;
  }
  if (x >= size) return -1;
  if (y >= size) y = size - 1;
  *start = x;
  *len = y - x + 1;
  return 1;
}

int srv_range_select(const char *range, const char *if_range, const char *etag, int64_t size, int64_t *start,
                     int64_t *len) {
  int64_t s = 0, n = size;
  int pr = 0;
  if (range && (!if_range || strcmp(if_range, etag) == 0)) pr = srv__parse_range(range, size, &s, &n);
  if (pr < 0) return -1;
  if (pr == 0) {
    s = 0;
    n = size;
  }
  *start = s;
  *len = n;
  return pr;
}

int srv_etag_matches(const char *header, const char *etag) {
  if (!header) return 0;
  if (strcmp(header, "*") == 0) return 1;
  /* a comma-separated list; weak validators compare equal for If-None-Match */
  const char *p = header;
  size_t el = strlen(etag);
  while (*p) {
    while (*p == ' ' || *p == ',') p++;
    if (strncmp(p, "W/", 2) == 0) p += 2;
    if (strncmp(p, etag, el) == 0 && (p[el] == '\0' || p[el] == ',' || p[el] == ' ')) return 1;
    const char *c = strchr(p, ',');
    if (!c) break;
    p = c + 1;
  }
  return 0;
}

enum MHD_Result srv_send_file(srv_t *s, srv_request *r, const char *path, int64_t size, const char *digest,
                              const char *media_type, const char *filename, int immutable,
                              const char *extra_hdrs[][2]) {
  char docker_digest[TH_DIGEST_MAX], etag[TH_ETAG_MAX];
  snprintf(docker_digest, sizeof docker_digest, "sha256:%s", digest);
  snprintf(etag, sizeof etag, "\"%s\"", docker_digest);
  unsigned char raw[32];
  char b64[64], digest_hdr[96];
  th_unhex32(digest, raw);
  th_base64(raw, 32, b64);
  snprintf(digest_hdr, sizeof digest_hdr, "sha-256=:%s:", b64);
  const char *cache = immutable ? "public, max-age=31536000, immutable" : "no-cache";

  const char *inm = MHD_lookup_connection_value(r->con, MHD_HEADER_KIND, "If-None-Match");
  if (srv_etag_matches(inm, etag)) {
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (!resp) return MHD_NO;
    MHD_add_response_header(resp, "ETag", etag);
    MHD_add_response_header(resp, "Cache-Control", cache);
    return srv_queue(s, r, 304, resp);
  }
  int64_t start = 0, len = size;
  const char *rh = MHD_lookup_connection_value(r->con, MHD_HEADER_KIND, "Range");
  const char *if_range = MHD_lookup_connection_value(r->con, MHD_HEADER_KIND, "If-Range");
  int partial = srv_range_select(rh, if_range, etag, size, &start, &len);
  if (partial < 0) {
    char cr[64];
    snprintf(cr, sizeof cr, "bytes */%lld", (long long)size);
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (!resp) return MHD_NO;
    MHD_add_response_header(resp, "Content-Range", cr);
    MHD_add_response_header(resp, "Accept-Ranges", "bytes");
    MHD_add_response_header(resp, "ETag", etag);
    return srv_queue(s, r, 416, resp);
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return srv_error(s, r, TH_ERR_IO, "artifact_missing", NULL, "artifact sha256:%s is not readable: %s",
                     digest, strerror(errno));
  struct MHD_Response *resp = srv_response_fd(fd, (uint64_t)start, (uint64_t)len);
  if (!resp) return MHD_NO;
  char disp[256];
  snprintf(disp, sizeof disp, "attachment; filename=\"%s\"", filename);
  MHD_add_response_header(resp, "Content-Type", media_type);
  MHD_add_response_header(resp, "Content-Disposition", disp);
  MHD_add_response_header(resp, "ETag", etag);
  MHD_add_response_header(resp, "Accept-Ranges", "bytes");
  MHD_add_response_header(resp, "Cache-Control", cache);
  MHD_add_response_header(resp, "Repr-Digest", digest_hdr);
  MHD_add_response_header(resp, "Docker-Content-Digest", docker_digest);
  for (int i = 0; extra_hdrs && extra_hdrs[i][0]; i++)
    MHD_add_response_header(resp, extra_hdrs[i][0], extra_hdrs[i][1]);
  unsigned int status = 200;
  if (partial) {
    char cr[96];
    snprintf(cr, sizeof cr, "bytes %lld-%lld/%lld", (long long)start, (long long)(start + len - 1),
             (long long)size);
    MHD_add_response_header(resp, "Content-Range", cr);
    status = 206;
  } else {
    MHD_add_response_header(resp, "Content-Digest", digest_hdr);
  }
  if (strcmp(r->method, "HEAD") != 0) srv_count_bytes(s, len);
  return srv_queue(s, r, status, resp);
}
