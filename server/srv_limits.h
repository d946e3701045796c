/* srv_limits.h: per-client limits on the work requests may queue and on failed authentications (see
 * limits.c). */
#ifndef SRV_LIMITS_H
#define SRV_LIMITS_H

#include <stddef.h>

#include "srv_int.h"

/* The client's address as text ("?" when unknown). */
void srv_client_ip(struct MHD_Connection *con, char *ip, size_t n);
/* 1 when r carries a bearer token of the daemon's --token-file (of any scope). */
int srv_token_holder(srv_t *s, srv_request *r);
/* 1 when r may cause a new job for key: a token holder, a key whose job is live, or an anonymous
 * client within --miss-rate, --anon-jobs-per-ip and --anon-queue-share (which reserves the place:
 * call srv_miss_done). Else 0, with the reason (naming the limit) in why and the seconds to wait in
 * retry (text, for Retry-After): the caller answers 429 in its route's error format, and queues
 * nothing. Thread-safe. */
int srv_miss_admit(srv_t *s, srv_request *r, const store_key *key, char *why, size_t n, char retry[16]);
/* After the miss srv_miss_admit admitted: the place it reserved becomes job_id's when created,
 * else it goes. A no-op for a request that reserved nothing. Thread-safe. */
void srv_miss_done(srv_t *s, srv_request *r, int64_t job_id, int created);
/* job_id changed (0: any job may have): its anonymous entry is looked up when next counted. */
void srv_anon_job_changed(srv_t *s, int64_t job_id);
/* Frees the table of live anonymous jobs (srv_stop). */
void srv_limits_free(srv_t *s);

/* The scopes of the bearer token r presents (auth.h), 0 when it presents none or one that matches
 * no token. A token that matches none counts as a failed authentication of the client's address; an
 * address past srv_config.auth_fail_limit has its token left unchecked (0) and *wait_s (when not
 * NULL) set to the seconds until it may try again, else 0. */
unsigned srv_request_scopes(srv_t *s, srv_request *r, int *wait_s);

#endif
