/* Aliases over HTTP (see aliases.h and README.md, "Aliases"): listing, pinning, moving and removing the names
 * that pin one published version of a key, and resolving ?alias= for the bundle and manifest routes. The store
 * keeps them (store_alias_*); a name is unique per repository so that the OCI tag of that name names one image.
 * An alias whose version was retired stays until it is moved or deleted, and answers 410 saying why. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aliases.h"

#include "present.h"
#include "request.h"
#include "response.h"
#include "th_log.h"
#include "th_sha256.h"

const char srv_alias_rule[] =
    "an alias is 1 to 64 characters of a-z, 0-9, '.', '_' and '-', starts with a letter, has no '..', and is not "
    "'b' followed by a digit (those are the OCI tags b<batch> and b<batch>-v<version>)";

int srv_alias_name_valid(const char *name) {
  size_t n = strlen(name);
  if (n < 1 || n > 64 || name[0] < 'a' || name[0] > 'z' || strstr(name, "..")) return 0;
  if (name[0] == 'b' && name[1] >= '0' && name[1] <= '9') return 0;
  for (size_t i = 0; i < n; i++) {
    char c = name[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-')) return 0;
  }
  return 1;
}

static enum MHD_Result srv__bad_name(srv_t *s, srv_request *r, const char *name) {
  json_t *extra = json_pack("{s:s}", "rule", srv_alias_rule);
  char *text = extra ? json_dumps(extra, JSON_COMPACT) : NULL;
  json_decref(extra);
  enum MHD_Result ret =
      srv_error(s, r, TH_ERR_INVALID, "invalid_alias", text, "invalid alias '%.64s': %s", name, srv_alias_rule);
  free(text);
  return ret;
}

/* {"valid": [every ready version of key]} as text (malloc'd; NULL when the store cannot say), and the same as
 * "1, 2, 3" (or "none") into list. */
static char *srv__valid_versions(srv_t *s, const store_key *key, char *list, size_t n) {
  store_model *vs = NULL;
  size_t nv = 0;
  th_status rc = store_model_versions(s->st, key, &vs, &nv);
  snprintf(list, n, "none");
  if (rc != TH_OK && rc != TH_ERR_NOT_FOUND) return NULL;
  json_t *arr = json_array();
  size_t len = 0;
  for (size_t i = 0; arr && i < nv; i++) {
    json_array_append_new(arr, json_integer(vs[i].version));
    if (len < n) len += (size_t)snprintf(list + len, n - len, "%s%d", i ? ", " : "", vs[i].version);
  }
  store_model_list_free(vs, nv);
  json_t *o = arr ? json_pack("{s:o}", "valid", arr) : NULL;
  char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  return text;
}

/* {"valid": [the key's alias names]} as text (malloc'd, NULL when the store cannot say), and as "a, b" (or
 * "none") into list. */
static char *srv__valid_aliases(srv_t *s, const store_key *key, char *list, size_t n) {
  store_alias *as = NULL;
  size_t na = 0;
  snprintf(list, n, "none");
  if (store_alias_list(s->st, key, &as, &na) != TH_OK) return NULL;
  json_t *arr = json_array();
  size_t len = 0;
  for (size_t i = 0; arr && i < na; i++) {
    json_array_append_new(arr, json_string(as[i].name));
    if (len < n) len += (size_t)snprintf(list + len, n - len, "%s%s", i ? ", " : "", as[i].name);
  }
  free(as);
  json_t *o = arr ? json_pack("{s:o}", "valid", arr) : NULL;
  char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  return text;
}

static enum MHD_Result srv__unknown_alias(srv_t *s, srv_request *r, const store_key *key, const char *name) {
  char list[1024];
  char *valid = srv__valid_aliases(s, key, list, sizeof list);
  enum MHD_Result ret = srv_error(s, r, TH_ERR_NOT_FOUND, "unknown_alias", valid,
                                  "%s/%s/%d has no alias '%s'; its aliases: %s", key->framework, key->network,
                                  key->batch, name, list);
  free(valid);
  return ret;
}

int srv_alias_resolve(srv_t *s, srv_request *r, const store_key *key, const char *name, store_model *out,
                      enum MHD_Result *ret) {
  if (!srv_alias_name_valid(name)) {
    *ret = srv__bad_name(s, r, name);
    return 0;
  }
  store_alias a;
  th_status rc = store_alias_get(s->st, key, name, &a);
  if (rc == TH_ERR_NOT_FOUND) {
    *ret = srv__unknown_alias(s, r, key, name);
    return 0;
  }
  if (rc != TH_OK) {
    *ret = srv_error(s, r, rc, "store_error", NULL, "%s", store_errmsg(s->st));
    return 0;
  }
  if (!a.retired) {
    rc = store_model_version(s->st, key, a.version, out);
    if (rc == TH_OK) return 1;
    if (rc != TH_ERR_NOT_FOUND) {
      *ret = srv_error(s, r, rc, "store_error", NULL, "%s", store_errmsg(s->st));
      return 0;
    }
  }
  /* 410: the name is known and pins a version that is no longer served; a pipeline must not get another one */
  char list[1024];
  char *valid = srv__valid_versions(s, key, list, sizeof list);
  int other_revision = strcmp(a.key.net_digest, key->net_digest) != 0;
  *ret = srv_error_http(s, r, 410, "alias_retired", valid,
                        "alias '%s' pins version %d of %s/%s/%d, which was retired (%s) and is no longer served; "
                        "move it with PUT /models/%s/%s/%d/aliases/%s {\"version\": N}; published versions: %s",
                        name, a.version, key->framework, key->network, key->batch,
                        other_revision ? "it was built from an earlier upload of the network"
                                       : "unpublished by DELETE of the model",
                        key->framework, key->network, key->batch, name, list);
  free(valid);
  return 0;
}

/* The body of a PUT: exactly one of {"version": N} and {"digest": "sha256:<hex>"}; on bad input queues the 400
 * and returns 0. */
static int srv__alias_body(srv_t *s, srv_request *r, int *version, char digest[TH_HEX_MAX], enum MHD_Result *ret) {
  static const char usage[] = "the body is {\"version\": N} or {\"digest\": \"sha256:<64 hex digits>\"}";
  const char *why = srv_alias_body_parse(r->body.data, r->body.len, version, digest);
  if (why) {
    *ret = srv_error(s, r, TH_ERR_INVALID, "invalid_body", NULL, "invalid body: %s; %s", why, usage);
    return 0;
  }
  return 1;
}

static enum MHD_Result srv__alias_put(srv_t *s, srv_request *r, const store_key *key, const char *name) {
  enum MHD_Result ret;
  int version = 0;
  char digest[TH_HEX_MAX];
  if (!srv__alias_body(s, r, &version, digest, &ret)) return ret;
  store_alias a;
  int previous = 0;
  th_status rc = store_alias_set(s->st, key, name, version, version ? NULL : digest, &a, &previous);
  if (rc == TH_ERR_NOT_FOUND) {
    char why[TH_WHY_MAX], list[1024];
    snprintf(why, sizeof why, "%s", store_errmsg(s->st));
    char *valid = srv__valid_versions(s, key, list, sizeof list);
    ret = srv_error(s, r, TH_ERR_NOT_FOUND, "unknown_version", valid, "%s; published versions: %s", why, list);
    free(valid);
    return ret;
  }
  if (rc == TH_ERR_CONFLICT) return srv_error(s, r, rc, "alias_conflict", NULL, "%s", store_errmsg(s->st));
  if (rc != TH_OK) return srv_error(s, r, rc, "store_error", NULL, "%s", store_errmsg(s->st));
  char was[32] = "new";
  if (previous) snprintf(was, sizeof was, "was v%d", previous);
  TH_LOG(TH_LOG_INFO, "alias %s of %s/%s/%d -> v%d (%s)", name, key->framework, key->network, key->batch,
         a.version, was);
  json_t *doc = srv_present_alias(&a);
  if (doc) json_object_set_new(doc, "previous", previous ? json_integer(previous) : json_null());
  struct MHD_Response *resp = srv_json_response(doc);
  if (!resp) return srv_error(s, r, TH_ERR_NOMEM, "out_of_memory", NULL, "out of memory");
  char loc[400];
  snprintf(loc, sizeof loc, "/models/%s/%s/%d/aliases/%s", key->framework, key->network, key->batch, name);
  MHD_add_response_header(resp, "Location", loc);
  return srv_queue(s, r, previous ? 200 : 201, resp);
}

enum MHD_Result srv_aliases_route(srv_t *s, srv_request *r, const store_key *key, const char *name) {
  int put = !strcmp(r->method, "PUT"), del = !strcmp(r->method, "DELETE");
  if (!name) {
    store_alias *as = NULL;
    size_t n = 0;
    th_status rc = store_alias_list(s->st, key, &as, &n);
    if (rc != TH_OK) return srv_error(s, r, rc, "store_error", NULL, "%s", store_errmsg(s->st));
    json_t *doc = srv_present_aliases(key, as, n);
    free(as);
    return srv_json_doc(s, r, 200, doc);
  }
  if (!srv_alias_name_valid(name)) return srv__bad_name(s, r, name);
  if (put) return srv__alias_put(s, r, key, name);
  if (del) {
    int version = 0;
    th_status rc = store_alias_delete(s->st, key, name, &version);
    if (rc == TH_ERR_NOT_FOUND) return srv__unknown_alias(s, r, key, name);
    if (rc != TH_OK) return srv_error(s, r, rc, "store_error", NULL, "%s", store_errmsg(s->st));
    TH_LOG(TH_LOG_INFO, "alias %s of %s/%s/%d deleted (it pinned v%d)", name, key->framework, key->network,
           key->batch, version);
    return srv_json_doc(s, r, 200, json_pack("{s:s,s:i}", "deleted", name, "version", version));
  }
  store_alias a;
  th_status rc = store_alias_get(s->st, key, name, &a);
  if (rc == TH_ERR_NOT_FOUND) return srv__unknown_alias(s, r, key, name);
  if (rc != TH_OK) return srv_error(s, r, rc, "store_error", NULL, "%s", store_errmsg(s->st));
  return srv_json_doc(s, r, 200, srv_present_alias(&a));
}
