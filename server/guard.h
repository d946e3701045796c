/* guard: what new work must fit before it is queued or stored (see guard.c): a build's planned
 * memory within the daemon's --memory-budget (413 over_budget) and free space on the data directory
 * above --min-free (507 insufficient_storage). Published artifacts are served whatever the guards
 * say. */
#ifndef SRV_GUARD_H
#define SRV_GUARD_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "srv_int.h"
#include "th_buf.h"
#include "th_status.h"

/* The default --min-free for a data directory: the smaller of 1 GiB and 5% of its file system's
 * size (so that a small disk is not refused all work); 0 when the size cannot be read. */
int64_t srv_min_free_default(const char *data_dir);
/* TH_OK when a build of key (its planned peak, tune_key_footprint) fits the memory budget of this
 * daemon's scheduler, or when there is no budget to fit (a replica that runs no jobs); else
 * TH_ERR_TOO_LARGE with a message in why naming the footprint and the budget. A key whose plan
 * fails passes: its build fails with the planner's message. Thread-safe. */
th_status srv_guard_footprint(srv_t *s, const store_key *key, char *why, size_t n);
/* TH_OK when `need` more bytes leave the --min-free floor free on the data directory; else
 * TH_ERR_NO_SPACE with a message in why naming the free space and the floor (what names the work:
 * "a build", "the upload"), or TH_ERR_IO when the free space cannot be read. Thread-safe. */
th_status srv_guard_space(srv_t *s, int64_t need, const char *what, char *why, size_t n);
/* Queues the error of a guard's refusal: 413 over_budget or 507 insufficient_storage (with the free
 * bytes and the floor as fields), else srv_error with code. */
enum MHD_Result srv_guard_error(srv_t *s, srv_request *r, th_status rc, const char *code,
                                const char *why);
/* The free space as fields of /readyz's document (data_free_bytes, min_free_bytes, disk: "ok" or
 * "low"). */
void srv_guard_readyz(srv_t *s, json_t *doc);
/* Appends the free-space gauges (Prometheus text) to b. */
void srv_guard_metrics(srv_t *s, th_buf *b);

#endif
