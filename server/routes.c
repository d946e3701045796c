/* The router of the registry API (see README.md, "HTTP API"), made from route_table.h: a path is
 * split and decoded, matched against the table's patterns, and the request goes to the row that
 * matches it with its method (405 with Allow when none does, 404 when no pattern matches), with its
 * key validated and its scope checked first. Every path is validated before anything is written to
 * the store: a bad framework, network, batch or path gets a 4xx that lists the valid values, and
 * nothing is queued. Error statuses come from the th_status table (srv_error); the few that are no
 * th_status's error (405, 414) are explicit. */
#include "routes.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aliases.h"
#include "authorize.h"
#include "builder.h"
#include "events.h"
#include "model_key.h"
#include "networks.h"
#include "oci.h"
#include "present.h"
#include "request.h"
#include "response.h"
#include "tc/backend.h"
#include "tc/zoo.h"

/* ---- start-up: the network list ---- */

th_status srv_routes_init(srv_t *s, char *err, size_t n) {
  snprintf(s->compiler_version, sizeof s->compiler_version, "%s", TH_VERSION);
  for (int i = 0; i < TC_BACKEND_COUNT; i++)
    if (tune_target_for(tc_backend_name(tc_backend_at(i)), s->targets[i], sizeof s->targets[i]) != TH_OK) {
      snprintf(err, n, "cannot determine this machine's targets (LLVM has no native target?)");
      return TH_ERR_INTERNAL;
    }
  json_t *arr = json_array();
  for (size_t i = 0; i < tc_zoo_count(); i++) {
    const tc_zoo_entry *e = tc_zoo_at(i);
    json_t *o = NULL;
    if (srv_present_network(e->name, &o) != TH_OK) {
      snprintf(err, n, "cannot describe network %s", e->name);
      json_decref(arr);
      return TH_ERR_INTERNAL;
    }
    json_array_append_new(arr, o);
    char *shape_text = json_dumps(json_object_get(o, "input"), JSON_COMPACT);
    if (shape_text)
      store_network_upsert(s->st, e->name, shape_text,
                           json_number_value(json_object_get(o, "flops")),
                           (int64_t)json_integer_value(json_object_get(o, "params")));
    free(shape_text);
  }
  json_t *root = json_object();
  json_object_set_new(root, "count", json_integer((json_int_t)json_array_size(arr)));
  json_object_set_new(root, "networks", arr);
  s->networks_json = json_dumps(root, JSON_COMPACT);
  json_decref(root);
  return s->networks_json ? TH_OK : TH_ERR_NOMEM;
}

/* ---- the table ---- */

typedef struct srv_route_def {
  int id;
  unsigned methods;
  const char *pattern;
  srv_access access;
  enum MHD_Result (*handler)(srv_t *s, srv_request *r, const srv_route_args *a);
} srv_route_def;

static const srv_route_def srv__routes[] = {
#define X(id, name, methods, pattern, access, handler) \
  {SRV_ROUTE_##id, SRV_METHODS_##methods, pattern, SRV_ACCESS_##access, srv_route_##handler},
    SRV_ROUTE_TABLE(X)
#undef X
};
_Static_assert(sizeof srv__routes / sizeof srv__routes[0] == SRV_ROUTE_COUNT - 1,
               "one router row per route of route_table.h");

/* The handlers of other files, whose arguments predate the table. */
enum MHD_Result srv_route_networks(srv_t *s, srv_request *r, const srv_route_args *a) {
  (void)a;
  return srv_networks_list(s, r);
}

enum MHD_Result srv_route_network(srv_t *s, srv_request *r, const srv_route_args *a) {
  return srv_networks_route(s, r, a->seg[1]);
}

enum MHD_Result srv_route_aliases(srv_t *s, srv_request *r, const srv_route_args *a) {
  return srv_aliases_route(s, r, a->key, a->nseg == 6 ? a->seg[5] : NULL);
}

enum MHD_Result srv_route_events(srv_t *s, srv_request *r, const srv_route_args *a) {
  return srv_events_route(s, r, a->seg[1]);
}

enum MHD_Result srv_route_scheduler(srv_t *s, srv_request *r, const srv_route_args *a) {
  (void)a;
  return srv_scheduler_route(s, r);
}

enum MHD_Result srv_route_oci(srv_t *s, srv_request *r, const srv_route_args *a) {
  (void)a;
  return srv_oci_route(s, r);
}

/* ---- the router ---- */

static unsigned srv__method_bit(const char *m) {
  static const struct {
    const char *name;
    unsigned bit;
  } methods[] = {{"GET", SRV_METHOD_GET},
                 {"HEAD", SRV_METHOD_HEAD},
                 {"POST", SRV_METHOD_POST},
                 {"PUT", SRV_METHOD_PUT},
                 {"DELETE", SRV_METHOD_DELETE}};
  for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
    if (!strcmp(m, methods[i].name)) return methods[i].bit;
  return 0;
}

/* "GET, HEAD, ..." for the SRV_METHOD_* bits in methods (the Allow header of a 405). */
static void srv__allow_text(unsigned methods, char *out, size_t n) {
  static const char *const names[] = {"GET", "HEAD", "POST", "PUT", "DELETE"};
  size_t k = 0;
  out[0] = '\0';
  for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
    if (methods & (1u << i)) {
      int w = snprintf(out + k, n - k, "%s%s", k ? ", " : "", names[i]);
      if (w < 0 || (size_t)w >= n - k) return;
      k += (size_t)w;
    }
}

/* Whether the nseg segments match pattern: -1 when not, else the number of its literal segments.
 * *key_at gets the index of a {key}'s first segment, or -1. */
static int srv__pattern_match(const char *pattern, char segs[][SRV_MAX_SEGMENT + 1], int nseg,
                              int *key_at) {
  int i = 0, literals = 0;
  *key_at = -1;
  const char *p = pattern;
  while (*p) {
    while (*p == '/') p++;
    if (!*p) break;
    const char *e = strchr(p, '/');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == 5 && !strncmp(p, "{key}", 5)) {
      if (nseg - i < 3) return -1;
      *key_at = i;
      i += 3;
    } else if (len > 3 && p[0] == '{' && p[len - 2] == '?') { /* an optional last segment */
      if (nseg - i > 1) return -1;
      i = nseg;
    } else if (p[0] == '{') {
      if (i == nseg) return -1;
      i++;
    } else {
      if (i == nseg || strlen(segs[i]) != len || strncmp(segs[i], p, len)) return -1;
      i++;
      literals++;
    }
    p += len;
  }
  return i == nseg ? literals : -1;
}

/* Whether a row is matched on the raw path ("/v2/..."). */
static int srv__raw(const char *pattern) {
  size_t n = strlen(pattern);
  return n >= 4 && !strcmp(pattern + n - 4, "/...");
}

/* 1 when path is a raw row's prefix, or starts with it and a '/'. */
static int srv__raw_match(const char *pattern, const char *path) {
  size_t n = strlen(pattern) - 4;
  return srv__raw(pattern) && !strncmp(path, pattern, n) && (path[n] == '\0' || path[n] == '/');
}

static enum MHD_Result srv__not_allowed(srv_t *s, srv_request *r, const char *allow) {
  char msg[2400];
  snprintf(msg, sizeof msg, "%s is not allowed on %s; allowed: %s", r->method, r->path, allow);
  struct MHD_Response *resp = srv_error_response(405, "method_not_allowed", NULL, msg);
  if (resp) MHD_add_response_header(resp, "Allow", allow);
  return srv_queue(s, r, 405, resp);
}

/* The 404 of a path no row matches, with the shape of the model routes under /models. */
static enum MHD_Result srv__no_route(srv_t *s, srv_request *r, char segs[][SRV_MAX_SEGMENT + 1],
                                     int nseg) {
  if (nseg == 5 && !strcmp(segs[0], "models")) {
    r->route = SRV_ROUTE_MODEL;
    return srv_error(
        s, r, TH_ERR_NOT_FOUND, "not_found", NULL,
        "no such route: %s; valid: .../manifest, .../versions, .../aliases, .../tuning, .../tune, "
        ".../provenance",
        r->path);
  }
  if (nseg > 1 && !strcmp(segs[0], "models"))
    return srv_error(s, r, TH_ERR_NOT_FOUND, "not_found", NULL,
                     "no such route: %s; models are at /models/{framework}/{network}/{batch}",
                     r->path);
  return srv_error(s, r, TH_ERR_NOT_FOUND, "not_found", NULL, "no such route: %s", r->path);
}

enum MHD_Result srv_route(srv_t *s, srv_request *r) {
  const char *m = r->method;
  int get = !strcmp(m, "GET") || !strcmp(m, "HEAD");
  enum MHD_Result ret;
  srv_route_args a = {.nseg = 0};
  for (size_t i = 0; i < sizeof srv__routes / sizeof srv__routes[0]; i++)
    if (srv__raw_match(srv__routes[i].pattern, r->path)) {
      r->route = srv__routes[i].id;
      if (s->cfg.private_reads && !srv_authorized(s, r, SRV_SCOPE_READ, &ret)) return ret;
      return srv__routes[i].handler(s, r, &a);
    }
  /* split and decode the path; reject traversal and encoded separators before routing */
  char segs[SRV_ROUTE_MAX_SEGS][SRV_MAX_SEGMENT + 1];
  int nseg = 0;
  const char *p = r->path;
  if (*p != '/')
    return srv_error(s, r, TH_ERR_INVALID, "invalid_path", NULL, "the path must start with '/'");
  while (*p) {
    while (*p == '/') p++;
    if (!*p) break;
    const char *e = strchr(p, '/');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (nseg == SRV_ROUTE_MAX_SEGS)
      return srv_error(s, r, TH_ERR_NOT_FOUND, "not_found", NULL, "no such route: %s", r->path);
    if (len > SRV_MAX_SEGMENT)
      return srv_error_http(s, r, 414, "segment_too_long", NULL,
                            "a path segment is longer than %d characters", SRV_MAX_SEGMENT);
    if (srv_pct_decode(p, len, segs[nseg], sizeof segs[nseg]) < 0)
      return srv_error(s, r, TH_ERR_INVALID, "invalid_path", NULL,
                       "malformed path: bad percent-encoding, or an encoded '/', '\\\\' or NUL");
    if (!strcmp(segs[nseg], "..") || !strcmp(segs[nseg], "."))
      return srv_error(s, r, TH_ERR_INVALID, "invalid_path", NULL,
                       "'.' and '..' are not allowed in paths");
    nseg++;
    p += len;
  }
  /* the row that serves the method (pick), the best match whatever the method (best: the label
   * of a 405), and the methods of every row that matches (a 405's Allow) */
  const srv_route_def *pick = NULL, *best = NULL;
  int pick_score = -1, best_score = -1, key_at = -1;
  unsigned method = srv__method_bit(m), allow = 0;
  for (size_t i = 0; i < sizeof srv__routes / sizeof srv__routes[0]; i++) {
    const srv_route_def *d = &srv__routes[i];
    int k = -1, score = srv__raw(d->pattern) ? -1 : srv__pattern_match(d->pattern, segs, nseg, &k);
    if (score < 0) continue;
    allow |= d->methods;
    if (score > best_score) best = d, best_score = score;
    if ((d->methods & method) && score > pick_score) pick = d, pick_score = score, key_at = k;
  }
  const srv_route_def *d = pick ? pick : best;
  /* --private: every read needs a read token but the liveness probes and the page's own files (a
   * name with an extension: index.html, app.js), which hold nothing of the registry; a change needs
   * its own scope anyway */
  int open_path = d && (d->access == SRV_ACCESS_OPEN ||
                        (d->access == SRV_ACCESS_PAGE && (nseg == 0 || strchr(segs[0], '.'))));
  if (s->cfg.private_reads && get && !open_path && !srv_authorized(s, r, SRV_SCOPE_READ, &ret))
    return ret;
  if (!d) return srv__no_route(s, r, segs, nseg);
  r->route = d->id;
  if (!pick) {
    char text[64];
    srv__allow_text(allow, text, sizeof text);
    return srv__not_allowed(s, r, text);
  }
  for (int i = 0; i < nseg; i++) a.seg[i] = segs[i];
  a.nseg = nseg;
  store_key key;
  if (key_at >= 0) {
    if (!srv__key(s, r, segs[key_at], segs[key_at + 1], segs[key_at + 2], &key, &ret)) return ret;
    a.key = &key;
  }
  unsigned scope = d->access == SRV_ACCESS_TUNE    ? SRV_SCOPE_TUNE
                   : d->access == SRV_ACCESS_ADMIN ? SRV_SCOPE_ADMIN
                                                   : 0;
  if (scope && !srv_authorized(s, r, scope, &ret)) return ret;
  return d->handler(s, r, &a);
}
