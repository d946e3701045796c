/* limits: per-client limits on the work requests may queue (see limits.c). */
#ifndef SRV_LIMITS_H
#define SRV_LIMITS_H

#include <stddef.h>

#include "srv_int.h"

/* The client's address as text ("?" when unknown). */
void srv_client_ip(struct MHD_Connection *con, char *ip, size_t n);
/* 1 when r may cause a new job for key: a token holder, a key whose job is live, or an anonymous client within
 * --miss-rate. Else 0, with the reason in why and the seconds to wait in retry (text, for Retry-After): the
 * caller answers 429 in its route's error format, and queues nothing. */
int srv_miss_admit(srv_t *s, srv_request *r, const store_key *key, char *why, size_t n, char retry[16]);

#endif
