/* aliases: the routes of a key's aliases (GET .../{batch}/aliases, GET|PUT|DELETE .../aliases/{alias}) and the
 * resolution of ?alias= for the bundle and manifest routes. An alias pins a name (prod, staging) to one published
 * version; the OCI tag of the same name resolves it too (oci.c). Sits beside routes.c, which validates the key. */
#ifndef SRV_ALIASES_H
#define SRV_ALIASES_H

#include "srv_int.h"

/* The naming rule in words, for the 400 that refuses a name. */
extern const char srv_alias_rule[];
/* 1 when name follows the rule: 1 to 64 characters of [a-z0-9._-], starting with a letter, without "..", and not
 * "b" followed by a digit (the OCI tags b<batch> and b<batch>-v<version> stay unambiguous). */
int srv_alias_name_valid(const char *name);

/* A request for key's aliases, method already checked by the router: name NULL lists them (GET, HEAD); with a
 * name (percent-decoded), GET and HEAD describe it, PUT pins it (token; body {"version": N} or {"digest":
 * "sha256:..."}), DELETE removes it (token). Nothing else is written for bad input. */
enum MHD_Result srv_aliases_route(srv_t *s, srv_request *r, const store_key *key, const char *name);

/* Resolves alias name of key to the version it pins (manifest loaded; the caller clears *out) and returns 1;
 * otherwise queues the error and returns 0 with *ret: 400 for a name against the rule, 404 for an unknown alias
 * (the key's aliases listed), 410 when its version was retired (unpublished, or built from an earlier upload of
 * the network), naming the valid versions. */
int srv_alias_resolve(srv_t *s, srv_request *r, const store_key *key, const char *name, store_model *out,
                      enum MHD_Result *ret);

#endif
