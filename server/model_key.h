/* model_key: a request's (framework, network, batch, ?target=, ?precision=) made into a store_key,
 * with the 4xx that lists the valid values when a part is wrong, and the questions asked of a key.
 * The router, the model routes, aliases.c and oci.c validate through it. */
#ifndef SRV_MODEL_KEY_H
#define SRV_MODEL_KEY_H

#include <stddef.h>

#include "srv_int.h"
#include "th_status.h"

/* The error detail of a refused precision: the values ?precision= takes. */
#define SRV__PRECISIONS "{\"valid\":[\"fp32\",\"tf32\"]}"

/* The key of (fw, net, batch) for the target a client names (NULL, "" or "native": this server's
 * own for fw; else a CPU name or x86-64-vN for llvm, an sm_XX for cuda; the key stores the concrete
 * target, so one machine asked two ways is one key). TH_ERR_NOT_FOUND (unknown framework or
 * network), TH_ERR_INVALID (batch outside 1..--max-batch, or a precision, NULL or "" meaning fp32,
 * that is not fp32 or tf32, or that the framework or target cannot take: tc_precision_check),
 * TH_ERR_UNSUPPORTED (an unknown target), a store error: why gets the reason and the valid values.
 */
th_status srv_model_key(srv_t *s, const char *fw, const char *net, int batch, const char *target,
                        const char *precision, store_key *key, char *why, size_t n);
/* "" for a key on this server's own target at fp32, else "-<cpu or arch>" for another target, then
 * "-tf32" for precision tf32 (the suffix of OCI tags and file names: an fp32 key's names are those
 * from before precisions). */
void srv_target_suffix(srv_t *s, const store_key *key, char *out, size_t n);
/* Whether key's target can be tuned: this server's own CPU for llvm or its device for cuda (when
 * its scheduler runs jobs), or, on a store shared with workers, a live worker that registered the
 * target. why gets the reason when not. */
int srv_target_tunable(srv_t *s, const store_key *key, char *why, size_t n);

/* Resolves (framework, network, batch) text and the request's ?target= and ?precision= into a key;
 * on bad input queues the 4xx and returns 0 (*ret its result). */
int srv__key(srv_t *s, srv_request *r, const char *fw, const char *net, const char *batch,
             store_key *key, enum MHD_Result *ret);
/* The index of a framework's backend in tc_backend_at order (s->targets), or -1. */
int srv__backend_index(const char *fw);
/* The error detail of an unknown framework, {"valid":[...]} with the backends' names, in buf. */
const char *srv_frameworks_valid(char *buf, size_t n);
/* Whether work on this framework needs a device this server lacks (why gets the reason). */
int srv__lacks_device(const char *fw, char *why, size_t n);
/* Whether a live worker of a shared store registered key's target. */
int srv__fleet_measures(srv_t *s, const store_key *key);
/* The revision of network net into digest ("" for a zoo network): 1 when net is a zoo or uploaded
 * network, else 0 with *rc TH_ERR_NOT_FOUND, or the store's error when it cannot say (its message
 * on the handle). */
int srv__network_known(srv_t *s, const char *net, char digest[65], th_status *rc);
/* Queues the 404 (or the store's error) for a network that is neither in the zoo nor uploaded. */
enum MHD_Result srv__unknown_network(srv_t *s, srv_request *r, const char *net, th_status rc,
                                     th_status status);

#endif
