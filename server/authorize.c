/* The check of a route's scope (see authorize.h): a request without a usable bearer token gets a
 * 401 whose WWW-Authenticate names the scope, one with a token of too low a scope a 403, and an
 * address past its failed authentications a 429 with Retry-After. */
#include "authorize.h"

#include <stdio.h>

#include "srv_limits.h"
#include "response.h"

/* A 401 for a request without a usable token: WWW-Authenticate says the scheme and the scope (RFC
 * 6750). */
static enum MHD_Result srv__unauthorized(srv_t *s, srv_request *r, unsigned scope,
                                         const char *msg) {
  char www[96];
  snprintf(www, sizeof www, "Bearer realm=\"tunehub\", scope=\"%s\"", srv_scope_name(scope));
  json_t *extra = json_pack("{s:s}", "scope", srv_scope_name(scope));
  struct MHD_Response *resp = srv_error_response(401, "unauthorized", extra, msg);
  if (resp) MHD_add_response_header(resp, "WWW-Authenticate", www);
  return srv_queue(s, r, 401, resp);
}

int srv_authorized(srv_t *s, srv_request *r, unsigned scope, enum MHD_Result *ret) {
  char msg[512];
  if (!s->have_token) {
    snprintf(msg, sizeof msg,
             "this route changes the registry and needs a bearer token, but the daemon was started "
             "without --token-file, so it accepts no changes");
    *ret = srv__unauthorized(s, r, scope, msg);
    return 0;
  }
  int wait = 0;
  unsigned granted = srv_request_scopes(s, r, &wait);
  if (wait) {
    char ip[48], retry[16];
    srv_client_ip(r->con, ip, sizeof ip);
    snprintf(retry, sizeof retry, "%d", wait);
    snprintf(msg, sizeof msg,
             "%s presented more than %d wrong bearer tokens in a minute; its tokens are not "
             "checked for %d s (Retry-After)",
             ip, s->auth_fails.limit, wait);
    struct MHD_Response *resp =
        srv_error_response(429, "too_many_failed_authentications", NULL, msg);
    if (resp) MHD_add_response_header(resp, "Retry-After", retry);
    *ret = srv_queue(s, r, 429, resp);
    return 0;
  }
  if (!granted) {
    snprintf(
        msg, sizeof msg,
        "missing or wrong bearer token: %.16s %.200s needs a token with the scope %s (or one above "
        "it: read < tune < admin); send 'Authorization: Bearer <token>' with a token of the "
        "daemon's --token-file",
        r->method, r->path, srv_scope_name(scope));
    *ret = srv__unauthorized(s, r, scope, msg);
    return 0;
  }
  if ((granted & scope) != scope) {
    *ret = srv_error(s, r, TH_ERR_FORBIDDEN, "forbidden", NULL,
                     "this token has the scope %s; %s %s needs the scope %s (scopes are set per token in the "
                     "daemon's --token-file)",
                     srv_scope_name(granted), r->method, r->path, srv_scope_name(scope));
    return 0;
  }
  return 1;
}
