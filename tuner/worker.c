/* The registry's job runner: the tune_workers face of the load-aware scheduler (scheduler.c). A job is no
 * longer run end to end by one worker thread; the scheduler admits up to n jobs from the store's queue and runs
 * their stages on a shared CPU pool and per-device measurement slots. A job that fails or is cancelled keeps its
 * message; a job interrupted by shutdown stays 'running' in the store and store_recover() requeues it at the
 * next start, so no accepted job is lost. */
#include "worker.h"

#include "scheduler.h"

/* A tune_workers handle is the scheduler itself. */
th_status tune_workers_start_opts(store_t *st, const tune_builder *builder, const struct tune_sched_opts *o,
                                  tune_workers **out) {
  tune_sched *s = NULL;
  th_status rc = tune_sched_start(st, builder, o, &s);
  if (rc != TH_OK) return rc;
  *out = (tune_workers *)s;
  return TH_OK;
}

th_status tune_workers_start(store_t *st, const tune_builder *builder, int n, const char *work_root,
                             tune_listener_fn listener, void *listener_ctx, tune_workers **out) {
  if (n < 1 || n > 64) return TH_ERR_INVALID;
  tune_sched_opts o;
  tune_sched_opts_default(&o);
  o.max_jobs = n;
  o.work_root = work_root;
  o.listener = listener;
  o.listener_ctx = listener_ctx;
  return tune_workers_start_opts(st, builder, &o, out);
}

void tune_workers_notify(tune_workers *w) {
  tune_sched_notify((tune_sched *)w);
}

void tune_workers_stop(tune_workers *w) {
  tune_sched_stop((tune_sched *)w);
}

int tune_workers_busy(tune_workers *w) {
  return tune_sched_admitted((tune_sched *)w);
}

th_status tune_workers_info(tune_workers *w, tune_sched_info *out) {
  return tune_sched_info_get((tune_sched *)w, out);
}
