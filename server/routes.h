/* routes: the registry API (see README.md, "HTTP API"). It sits above response.c, present.c, longpoll.c and
 * events.c; http.c calls it. */
#ifndef SRV_ROUTES_H
#define SRV_ROUTES_H

#include <stddef.h>

#include "srv_int.h"
#include "th_status.h"

/* Start-up: this machine's targets, the compiler version, the network list (cached for GET /networks and
 * upserted into the store). On failure writes a message into err. */
th_status srv_routes_init(srv_t *s, char *err, size_t n);
/* The key of (fw, net, batch) for the target a client names (NULL, "" or "native": this server's own for fw;
 * else a CPU name or x86-64-vN for llvm, an sm_XX for cuda; the key stores the concrete target, so one machine
 * asked two ways is one key). TH_ERR_NOT_FOUND (unknown framework or network), TH_ERR_INVALID (batch outside
 * 1..--max-batch, or a precision, NULL or "" meaning fp32, that is not fp32 or tf32, or that the framework or
 * target cannot take: tc_precision_check), TH_ERR_UNSUPPORTED (an unknown target), a store error: why gets the
 * reason and the valid values. */
th_status srv_model_key(srv_t *s, const char *fw, const char *net, int batch, const char *target,
                        const char *precision, store_key *key, char *why, size_t n);
/* "" for a key on this server's own target at fp32, else "-<cpu or arch>" for another target, then "-tf32" for
 * precision tf32 (the suffix of OCI tags and file names: an fp32 key's names are those from before precisions). */
void srv_target_suffix(srv_t *s, const store_key *key, char *out, size_t n);
/* Whether key's target can be tuned: this server's own CPU for llvm or its device for cuda (when its scheduler
 * runs jobs), or, on a store shared with workers, a live worker that registered the target. why gets the
 * reason when not. */
int srv_target_tunable(srv_t *s, const store_key *key, char *why, size_t n);
/* The miss path of a model GET: queues the key's build (a tune with tuned_only or --miss-tunes) unless a job
 * is live (single-flight; --max-queued). TH_OK: *job_id is the live job, *created 1 when this call queued it.
 * Else why says why: TH_ERR_UNSUPPORTED (framework unavailable), TH_ERR_NO_DEVICE (tuned_only, no device),
 * TH_ERR_COMPILE / TH_ERR_CANCELLED (the last build failed, or was cancelled while `waiting`; *job_id is
 * it), TH_ERR_BUSY (the queue is full), a store error. */
th_status srv_model_miss(srv_t *s, const store_key *key, int tuned_only, int waiting, int64_t *job_id,
                         int *created, char *why, size_t n);
/* 1 when r carries a bearer token of the daemon's with every bit of scope (SRV_SCOPE_READ,
 * SRV_SCOPE_TUNE, SRV_SCOPE_ADMIN: auth.h); else queues the 401 (no such token; WWW-Authenticate
 * names the scope), 403 (a token without the scope) or 429 (too many failed authentications from
 * the address), *ret its result, and returns 0. */
int srv_authorized(srv_t *s, srv_request *r, unsigned scope, enum MHD_Result *ret);
/* Routes a complete request (method, path, query and body read) and queues its response. */
enum MHD_Result srv_route(srv_t *s, srv_request *r);

#endif
