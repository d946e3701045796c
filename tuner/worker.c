/* The worker pool. Each thread loops: claim the next queued job, give it a scratch directory, run the builder,
 * record the outcome. A job that fails or is cancelled keeps its message; a job interrupted by shutdown stays
 * 'running' in the store and store_recover() requeues it at the next start, so no accepted job is lost. */
#include "worker.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "th_log.h"
#include "th_util.h"

struct tune_workers {
  store_t *st;
  const tune_builder *builder;
  char work_root[1024];
  tune_listener_fn listener;
  void *listener_ctx;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int stopping;
  int busy;
  int nthreads;
  pthread_t threads[64];
};

typedef struct tune__job_ctx {
  tune_workers *w;
  store_job *job;
} tune__job_ctx;

static void tune__progress(void *ctx, const char *stage, const char *progress_json) {
  tune__job_ctx *c = ctx;
  store_job_progress(c->w->st, c->job->id, stage, progress_json);
  if (c->w->listener) c->w->listener(c->w->listener_ctx, c->job->id);
}

static int tune__cancelled(void *ctx) {
  tune__job_ctx *c = ctx;
  int stopping;
  pthread_mutex_lock(&c->w->mu);
  stopping = c->w->stopping;
  pthread_mutex_unlock(&c->w->mu);
  return stopping || store_job_cancel_requested(c->w->st, c->job->id);
}

static th_status tune__publish(void *ctx, const tune_build_output *out, int *version) {
  tune__job_ctx *c = ctx;
  store_t *st = c->w->st;
  char tar_digest[65], so_digest[65];
  th_status rc = store_artifact_put(st, out->tar_path, "application/x-tar", tar_digest, NULL);
  if (rc == TH_OK)
    rc = store_artifact_put(st, out->so_path, "application/x-sharedlib", so_digest, NULL);
  if (rc == TH_OK)
    rc = store_model_publish(st, &c->job->key, out->tuned, tar_digest, so_digest, out->manifest,
                             out->latency_ms, c->job->id, version);
  if (rc == TH_OK) {
    TH_LOG(TH_LOG_INFO, "job %lld published %s/%s/%d v%d (sha256:%.12s…)", (long long)c->job->id,
           c->job->key.framework, c->job->key.network, c->job->key.batch, *version, tar_digest);
    if (c->w->listener) c->w->listener(c->w->listener_ctx, c->job->id);
  }
  return rc;
}

static void tune__rmtree(const char *path) {
  DIR *d = opendir(path);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      char p[2048];
      snprintf(p, sizeof p, "%s/%s", path, e->d_name);
      struct stat sb;
      if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode))
        tune__rmtree(p);
      else
        unlink(p);
    }
    closedir(d);
  }
  rmdir(path);
}

static void tune__run_job(tune_workers *w, store_job *job) {
  char dir[1200];
  snprintf(dir, sizeof dir, "%s/job-%lld", w->work_root, (long long)job->id);
  tune__rmtree(dir); /* a previous attempt's leftovers */
  tune__job_ctx c = {w, job};
  char err[2048] = "";
  th_status rc = th_mkdir_p(dir);
  if (rc != TH_OK) snprintf(err, sizeof err, "cannot create scratch directory %s", dir);
  tune_build_env env = {
      .st = w->st,
      .job_id = job->id,
      .key = &job->key,
      .kind = job->kind,
      .options = job->options ? job->options : "{}",
      .work_dir = dir,
      .progress = tune__progress,
      .cancelled = tune__cancelled,
      .publish = tune__publish,
      .ctx = &c,
  };
  TH_LOG(TH_LOG_INFO, "job %lld: %s %s/%s/%d (attempt %d)", (long long)job->id, job->kind,
         job->key.framework, job->key.network, job->key.batch, job->attempts);
  char why[512];
  if (rc == TH_OK && !w->builder->supports(w->builder->self, job->key.framework, why, sizeof why)) {
    rc = TH_ERR_UNSUPPORTED;
    snprintf(err, sizeof err, "%s", why);
  }
  if (rc == TH_OK) rc = w->builder->run(w->builder->self, &env, err, sizeof err);
  tune__rmtree(dir);

  pthread_mutex_lock(&w->mu);
  int stopping = w->stopping;
  pthread_mutex_unlock(&w->mu);
  if (stopping && rc == TH_ERR_CANCELLED && !store_job_cancel_requested(w->st, job->id)) {
    /* interrupted by shutdown: stays 'running'; the next start requeues it */
    TH_LOG(TH_LOG_INFO, "job %lld interrupted by shutdown; it resumes at the next start",
           (long long)job->id);
    return;
  }
  th_status frc;
  if (rc == TH_OK) {
    frc = store_job_finish(w->st, job->id, STORE_JOB_SUCCEEDED, NULL);
    TH_LOG(TH_LOG_INFO, "job %lld succeeded", (long long)job->id);
  } else if (rc == TH_ERR_CANCELLED) {
    frc = store_job_finish(w->st, job->id, STORE_JOB_CANCELLED, "cancelled by request");
    TH_LOG(TH_LOG_INFO, "job %lld cancelled", (long long)job->id);
  } else {
    if (!err[0]) snprintf(err, sizeof err, "%s", th_status_str(rc));
    frc = store_job_finish(w->st, job->id, STORE_JOB_FAILED, err);
    TH_LOG(TH_LOG_WARN, "job %lld failed: %s", (long long)job->id, err);
  }
  if (frc != TH_OK)
    TH_LOG(TH_LOG_ERROR, "job %lld: cannot record the outcome: %s", (long long)job->id,
           store_errmsg(w->st));
  if (w->listener) w->listener(w->listener_ctx, job->id);
}

static void *tune__worker_main(void *arg) {
  tune_workers *w = arg;
  char name[64];
  snprintf(name, sizeof name, "pid%ld", (long)getpid());
  for (;;) {
    pthread_mutex_lock(&w->mu);
    int stopping = w->stopping;
    pthread_mutex_unlock(&w->mu);
    if (stopping) break;
    store_job job;
    th_status rc = store_job_claim(w->st, name, &job);
    if (rc == TH_OK) {
      pthread_mutex_lock(&w->mu);
      w->busy++;
      pthread_mutex_unlock(&w->mu);
      tune__run_job(w, &job);
      store_job_clear(&job);
      pthread_mutex_lock(&w->mu);
      w->busy--;
      pthread_mutex_unlock(&w->mu);
      continue;
    }
    if (rc != TH_ERR_NOT_FOUND)
      TH_LOG(TH_LOG_WARN, "cannot claim a job: %s", store_errmsg(w->st));
    /* Idle: wait for a notify, or poll once a second (another process may have queued work). */
    pthread_mutex_lock(&w->mu);
    if (!w->stopping) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_sec += 1;
      pthread_cond_timedwait(&w->cv, &w->mu, &ts);
    }
    pthread_mutex_unlock(&w->mu);
  }
  return NULL;
}

th_status tune_workers_start(store_t *st, const tune_builder *builder, int n, const char *work_root,
                             tune_listener_fn listener, void *listener_ctx, tune_workers **out) {
  if (n < 1 || n > 64) return TH_ERR_INVALID;
  tune_workers *w = calloc(1, sizeof *w);
  if (!w) return TH_ERR_NOMEM;
  w->st = st;
  w->builder = builder;
  w->listener = listener;
  w->listener_ctx = listener_ctx;
  snprintf(w->work_root, sizeof w->work_root, "%s", work_root);
  if (th_mkdir_p(w->work_root) != TH_OK) {
    free(w);
    return TH_ERR_IO;
  }
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, NULL);
  for (int i = 0; i < n; i++) {
    if (pthread_create(&w->threads[i], NULL, tune__worker_main, w) != 0) {
      tune_workers_stop(w);
      return TH_ERR_NOMEM;
    }
    w->nthreads++;
  }
  *out = w;
  return TH_OK;
}

void tune_workers_notify(tune_workers *w) {
  if (!w) return;
  pthread_mutex_lock(&w->mu);
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

int tune_workers_busy(tune_workers *w) {
  pthread_mutex_lock(&w->mu);
  int b = w->busy;
  pthread_mutex_unlock(&w->mu);
  return b;
}

void tune_workers_stop(tune_workers *w) {
  if (!w) return;
  pthread_mutex_lock(&w->mu);
  w->stopping = 1;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
  for (int i = 0; i < w->nthreads; i++) pthread_join(w->threads[i], NULL);
  pthread_mutex_destroy(&w->mu);
  pthread_cond_destroy(&w->cv);
  free(w);
}
