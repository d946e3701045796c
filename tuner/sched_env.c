/* The callbacks a running stage calls back into the scheduler through its tune_build_env (progress,
 * cancel checks, the hand-off to another worker, publishing a built bundle), and the event fan-out
 * they share with the runtime. They run on the stage's thread without the scheduler lock; every
 * store write carries the claim's fencing token, and a refused one marks the job lost. */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "provenance.h"
#include "sched_int.h"
#include "th_log.h"
#include "th_util.h"

/* Typed events go to on_event; the plain listener (long polls, caches) hears the changes that a reader of the
 * job or the models can see: progress, publishes and the end, not every stage start. */
void tune__emit(tune_sched *s, const tune_event *ev) {
  if (s->o.on_event) s->o.on_event(s->o.listener_ctx, ev);
  if (s->o.listener && ev->kind != TUNE_EV_STAGE) s->o.listener(s->o.listener_ctx, ev->job_id);
}

/* A fenced write of job j was refused (rc TH_ERR_CONFLICT; what names the write): the job is another claim's
 * now, and stops here at its next check. Lock-free (lost is atomic): open calls back under mu. */
void tune__refused(tune__sjob *j, th_status rc, const char *what) {
  if (rc != TH_ERR_CONFLICT) return;
  TH_LOG(TH_LOG_WARN, "job %lld: %s refused: %s", (long long)j->job.id, what, store_errmsg(j->s->st));
  atomic_store(&j->lost, 1);
  pthread_cond_broadcast(&j->s->cv);
}

/* env callbacks (run on the stage's thread, without the scheduler lock) */
void tune__progress(void *ctx, const char *stage, const tune_job_progress *p) {
  tune__sjob *j = ctx;
  tune_sched *s = j->s;
  char *doc = p && s->o.encode_progress ? s->o.encode_progress(s->o.listener_ctx, p) : NULL;
  th_status rc = store_job_progress(s->st, j->job.id, j->job.attempts, stage, doc);
  tune__refused(j, rc, "a progress write");
  if (rc != TH_ERR_CONFLICT) {
    tune_event ev = {.kind = TUNE_EV_PROGRESS, .job_id = j->job.id, .progress = p, .progress_doc = doc};
    tune__emit(s, &ev);
  }
  free(doc);
}

int tune__cancelled(void *ctx) {
  tune__sjob *j = ctx;
  pthread_mutex_lock(&j->s->mu);
  int stop = j->s->stopping;
  pthread_mutex_unlock(&j->s->mu);
  return stop || atomic_load(&j->lost) || atomic_load(&j->handed_off) ||
         store_job_cancel_requested(j->s->st, j->job.id);
}

th_status tune__handoff(void *ctx, const char *target) {
  tune__sjob *j = ctx;
  th_status rc = store_job_handoff(j->s->st, j->job.id, j->job.attempts, target, NULL);
  tune__refused(j, rc, "the handoff");
  if (rc != TH_OK) return rc;
  TH_LOG(TH_LOG_INFO, "job %lld handed back to the queue: tuning %s/%s/%d waits for a worker with target %s",
         (long long)j->job.id, j->job.key.framework, j->job.key.network, j->job.key.batch, target);
  atomic_store(&j->handed_off, 1);
  /* long polls on the job see it queued again (its stream already has the progress that says why) */
  if (j->s->o.listener) j->s->o.listener(j->s->o.listener_ctx, j->job.id);
  return TH_OK;
}

/* Signs the provenance of job j's bundle tar_digest (--signing-key) and puts the DSSE envelope into
 * the store as an artifact: its digest into prov_digest. A failure fails the publish: a daemon told
 * to sign publishes nothing unsigned. */
static th_status tune__sign(tune__sjob *j, const tune_build_output *out, const char *tar_digest,
                            char prov_digest[65]) {
  char *env = NULL, err[TH_MSG_MAX + sizeof j->dir + 64] = "", path[sizeof j->dir + 32];
  tune_prov_machine mach = {j->s->worker_name};
  th_status rc = tune_prov_sign(j->s->o.signer, &j->job.key, tar_digest, out->manifest, &mach, &env,
                                err, sizeof err);
  snprintf(path, sizeof path, "%s/provenance.json", j->dir);
  int fd = rc == TH_OK ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
  if (rc == TH_OK && (fd < 0 || th_write_full(fd, env, strlen(env), 0) != 0)) {
    snprintf(err, sizeof err, "cannot write %s", path);
    rc = TH_ERR_IO;
  }
  if (fd >= 0) close(fd);
  if (rc == TH_OK)
    rc = store_artifact_put(j->s->st, path, TUNE_PROV_ENVELOPE_MEDIA, prov_digest, NULL);
  else
    TH_LOG(TH_LOG_ERROR, "job %lld: cannot sign the provenance of sha256:%.12s…: %s",
           (long long)j->job.id, tar_digest, err);
  unlink(path);
  free(env);
  return rc;
}

th_status tune__publish(void *ctx, const tune_build_output *out, int *version) {
  tune__sjob *j = ctx;
  store_t *st = j->s->st;
  char tar_digest[65], so_digest[65], prov_digest[65] = "";
  /* a claim already lost copies no bundle; the publish itself is fenced in its own transaction */
  th_status rc = store_job_fence(st, j->job.id, j->job.attempts);
  if (rc == TH_OK) rc = store_artifact_put(st, out->tar_path, "application/x-tar", tar_digest, NULL);
  if (rc == TH_OK) rc = store_artifact_put(st, out->so_path, "application/x-sharedlib", so_digest, NULL);
  if (rc == TH_OK && j->s->o.signer) rc = tune__sign(j, out, tar_digest, prov_digest);
  if (rc == TH_OK)
    rc = store_model_publish_signed(st, &j->job.key, out->tuned, tar_digest, so_digest, prov_digest,
                                    out->manifest, out->latency_ms, j->job.id, j->job.attempts,
                                    version);
  tune__refused(j, rc, "the publish");
  if (rc == TH_OK) {
    TH_LOG(TH_LOG_INFO, "job %lld published %s/%s/%d v%d (sha256:%.12s…)", (long long)j->job.id,
           j->job.key.framework, j->job.key.network, j->job.key.batch, *version, tar_digest);
    /* retention after the publish, before the event: a reader woken by it sees the versions that stay. A
     * failure is logged, not the job's: the version is published, and the next publish retries. */
    int retired = 0;
    if (j->s->o.keep_versions > 0 && store_model_retain(st, &j->job.key, j->s->o.keep_versions, &retired) != TH_OK)
      TH_LOG(TH_LOG_WARN, "job %lld: retention (--keep-versions %d) failed: %s", (long long)j->job.id,
             j->s->o.keep_versions, store_errmsg(st));
    else if (retired > 0)
      TH_LOG(TH_LOG_INFO, "retention: %d old version(s) of %s/%s/%d unpublished (keeping %d and the aliased ones)",
             retired, j->job.key.framework, j->job.key.network, j->job.key.batch, j->s->o.keep_versions);
    tune_event ev = {.kind = TUNE_EV_PUBLISHED, .job_id = j->job.id, .version = *version, .tuned = out->tuned,
                     .digest = tar_digest};
    tune__emit(j->s, &ev);
  }
  return rc;
}
