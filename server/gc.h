/* gc: garbage collection of blobs from the command line (`tunehub gc`) and in the daemon (a background thread
 * every --gc-interval seconds, its runs in /metrics). The mark and sweep itself is store_gc (store/store_gc.c). */
#ifndef SRV_GC_H
#define SRV_GC_H

#include <stddef.h>

#include "srv_int.h"
#include "th_buf.h"
#include "th_status.h"

/* Starts the collector thread (cfg.gc_interval_s > 0): a run every gc_interval_s seconds, the first one
 * interval after start, each logged in one line and counted for srv_gc_metrics. A no-op when the interval is
 * 0. TH_ERR_INTERNAL (err says why) when the thread cannot start. */
th_status srv_gc_start(srv_t *s, char *err, size_t n);
/* Stops and joins the thread, waiting for a run in progress to end; a no-op when it was not started. */
void srv_gc_stop(srv_t *s);
/* Appends the collector's metrics (Prometheus text) to b. */
void srv_gc_metrics(srv_t *s, th_buf *b);

#endif
