/* Unit tests of the route table (server/route_table.h) and the router made from it: every route
 * has one unique metrics label, and a request with a method no route of its path takes gets 405
 * with the Allow header the routes had before the table (a list written out here, independent of
 * the table), counted under a route's label. The router runs in-process on a zeroed srv_t: a wrong
 * method is refused before anything reads the connection or the store, and libmicrohttpd's
 * MHD_queue_response is interposed to catch the status and the headers. A new route needs its
 * path here. */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "routes.h"
#include "srv_int.h"
#include "th_test.h"

static unsigned th__status;
static char th__allow[128];
static int th__has_allow;

/* The executable's definition wins over libmicrohttpd's for the server code linked into it. */
enum MHD_Result MHD_queue_response(struct MHD_Connection *con, unsigned int status,
                                   struct MHD_Response *resp) {
  (void)con;
  th__status = status;
  const char *a = MHD_get_response_header(resp, "Allow");
  th__has_allow = a != NULL;
  snprintf(th__allow, sizeof th__allow, "%s", a ? a : "");
  return MHD_YES;
}

/* A path of each pattern: {key} is a valid-looking key, {x} and {x?} one segment, the optional one
 * also left out; "/v2/..." is its prefix. Returns the number of paths written (1 or 2). */
static int th__paths_of(const char *pattern, char out[2][256]) {
  const char *q = strstr(pattern, "?}");
  if (!strcmp(pattern + strlen(pattern) - 4, "/...")) {
    snprintf(out[0], 256, "%.*s/", (int)(strlen(pattern) - 4), pattern);
    return 1;
  }
  int n = q ? 2 : 1;
  for (int v = 0; v < n; v++) {
    size_t k = 0;
    out[v][0] = '\0';
    for (const char *p = pattern; *p && k < 200;) {
      if (*p != '{') {
        out[v][k++] = *p++;
        continue;
      }
      const char *e = strchr(p, '}');
      int optional = e[-1] == '?';
      const char *with = !strncmp(p, "{key}", 5) ? "llvm/resnet-18/1" : "x1";
      if (optional && v == 1) { /* left out, with its slash */
        if (k > 1) k--;
      } else {
        k += (size_t)snprintf(out[v] + k, 256 - k, "%s", with);
      }
      p = e + 1;
    }
    out[v][k] = '\0';
  }
  return n;
}

/* The Allow header of each path before the route table (NULL: its handler answers its own 405). */
static const struct {
  const char *path, *allow;
} th__allowed[] = {
    {"/models/llvm/resnet-18/1", "GET, HEAD, DELETE"},
    {"/models/llvm/resnet-18/1/manifest", "GET, HEAD"},
    {"/models/llvm/resnet-18/1/versions", "GET, HEAD"},
    {"/models/llvm/resnet-18/1/tuning", "GET, HEAD"},
    {"/models/llvm/resnet-18/1/provenance", "GET, HEAD"},
    {"/models/llvm/resnet-18/1/tune", "POST"},
    {"/models/llvm/resnet-18/1/aliases", "GET, HEAD"},
    {"/models/llvm/resnet-18/1/aliases/x1", "GET, HEAD, PUT, DELETE"},
    {"/models", "GET, HEAD"},
    {"/blobs/x1", "GET, HEAD"},
    {"/jobs", "GET, HEAD"},
    {"/jobs/x1", "GET, HEAD, DELETE"},
    {"/jobs/x1/events", "GET"},
    {"/networks", "GET, HEAD"},
    {"/networks/x1", "GET, HEAD, PUT, DELETE"},
    {"/targets", "GET, HEAD"},
    {"/healthz", "GET, HEAD"},
    {"/readyz", "GET, HEAD"},
    {"/metrics", "GET, HEAD"},
    {"/scheduler", "GET, HEAD"},
    {"/workers", "GET, HEAD"},
    {"/records", "GET, HEAD, POST"},
    {"/", "GET, HEAD"},
    {"/x1", "GET, HEAD"},
    {"/v2/", NULL},
};

static const struct {
  int id;
  const char *name, *pattern;
} th__routes[] = {
#define X(id, name, methods, pattern, access, handler) {SRV_ROUTE_##id, name, pattern},
    SRV_ROUTE_TABLE(X)
#undef X
};

/* Every route has a label for /metrics, each one distinct, in [a-z_], and "other" is the rest. */
TH_TEST(route_names_unique) {
  size_t n = sizeof th__routes / sizeof th__routes[0];
  CHECK_EQ_INT(n + 1, SRV_ROUTE_COUNT);
  CHECK_STR(srv_route_names[SRV_ROUTE_OTHER], "other");
  for (size_t i = 0; i < n; i++) {
    CHECK_EQ_INT(th__routes[i].id, (int)i + 1);
    const char *name = srv_route_names[th__routes[i].id];
    CHECK(name && name[0] && strspn(name, "abcdefghijklmnopqrstuvwxyz_") == strlen(name));
    CHECK_STR(name, th__routes[i].name);
    for (int j = 0; j < SRV_ROUTE_COUNT; j++)
      if (j != th__routes[i].id && !strcmp(srv_route_names[j], name)) {
        fprintf(stderr, "route label '%s' is used by routes %d and %d\n", name, th__routes[i].id,
                j);
        CHECK(0);
      }
  }
  return 0;
}

/* A request to each route's path with each method its path does not take: 405, Allow as before the
 * table, counted in /metrics under a route of the table. */
TH_TEST(wrong_method_405_allow) {
  static srv_t s; /* large: not on the stack */
  pthread_mutex_init(&s.metrics_mu, NULL);
  static const char *const methods[] = {"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH"};
  int checked = 0;
  for (size_t i = 0; i < sizeof th__routes / sizeof th__routes[0]; i++) {
    char paths[2][256];
    int np = th__paths_of(th__routes[i].pattern, paths);
    for (int v = 0; v < np; v++) {
      const char *allow = NULL;
      int known = 0;
      for (size_t k = 0; k < sizeof th__allowed / sizeof th__allowed[0]; k++)
        if (!strcmp(th__allowed[k].path, paths[v])) {
          allow = th__allowed[k].allow;
          known = 1;
        }
      if (!known)
        fprintf(stderr, "route %s: no expected Allow for %s here\n", th__routes[i].name, paths[v]);
      CHECK(known);
      for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++) {
        if (allow ? strstr(allow, methods[m]) != NULL
                  : !strcmp(methods[m], "GET") || !strcmp(methods[m], "HEAD"))
          continue;
        static srv_request r;
        memset(&r, 0, sizeof r);
        r.method = methods[m];
        snprintf(r.path, sizeof r.path, "%s", paths[v]);
        th__status = 0;
        int64_t before = 0;
        for (int a = 0; a < SRV_ROUTE_COUNT; a++)
          for (int b = 0; b < SRV_STATUS_SLOTS; b++) before += s.requests[a][b];
        srv_route(&s, &r);
        if (th__status != 405 || (allow && strcmp(th__allow, allow)))
          fprintf(stderr, "%s %s (route %s): %u, Allow '%s'; want 405, Allow '%s'\n", r.method,
                  r.path, th__routes[i].name, th__status, th__allow, allow ? allow : "(its own)");
        CHECK_EQ_INT(th__status, 405);
        CHECK(!allow || (th__has_allow && !strcmp(th__allow, allow)));
        CHECK(r.route > SRV_ROUTE_OTHER && r.route < SRV_ROUTE_COUNT);
        int slot = -1;
        for (int b = 0; b < s.nstatus; b++)
          if (s.status_codes[b] == 405) slot = b;
        CHECK(slot >= 0 && s.requests[r.route][slot] > 0);
        int64_t after = 0;
        for (int a = 0; a < SRV_ROUTE_COUNT; a++)
          for (int b = 0; b < SRV_STATUS_SLOTS; b++) after += s.requests[a][b];
        CHECK_EQ_INT(after, before + 1);
        checked++;
      }
    }
  }
  CHECK(checked > 50);
  pthread_mutex_destroy(&s.metrics_mu);
  return 0;
}
