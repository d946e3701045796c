/* models: the model routes (models.c) and the miss path that oci.c shares with them. */
#ifndef SRV_MODELS_H
#define SRV_MODELS_H

#include <stdint.h>

#include "srv_int.h"
#include "th_status.h"

/* The miss path of a model GET: queues the key's build (a tune with tuned_only or --miss-tunes)
 * unless a job is live (single-flight; --max-queued). TH_OK: *job_id is the live job, *created 1
 * when this call queued it. Else why says why: TH_ERR_UNSUPPORTED (framework unavailable),
 * TH_ERR_NO_DEVICE (tuned_only, no device), TH_ERR_COMPILE / TH_ERR_CANCELLED (the last build
 * failed, or was cancelled while `waiting`; *job_id is it), TH_ERR_BUSY (the queue is full), a
 * store error. */
th_status srv_model_miss(srv_t *s, const store_key *key, int tuned_only, int waiting,
                         int64_t *job_id, int *created, char *why, size_t n);

#endif
