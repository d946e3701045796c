/* The build stage of a session whose candidates are timed on a device (cuda): each candidate of a batch is
 * compiled on the CPU by tc_backend_compile (validity, codegen, one device compile), candidates spread over
 * threads. A candidate that fails here gets its AutoTVM error class without ever reaching the device; the
 * image of one that compiles is written to the session's work folder, and the worker process
 * (tc_backend_measure) loads it, so the measure stage, which holds the device, does no compiler work. */
#include "tune_cuda.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "th_buf.h"
#include "th_util.h"

typedef struct tune_cuda_job {
  const tune_task *t;
  const tc_config *cfgs;
  int n, nthreads, first;
  const char *dir, *tag;
  char (*so_paths)[TUNE_PATH_MAX];
  char (*fn_names)[TUNE_FN_MAX];
  int *err_class;
  char (*msgs)[160];
} tune_cuda_job;

static void tune__cuda_one(const tune_task *t, const tc_config *cfg, const char *img_path, char *so_path,
                           char *fn_name, int *err_class, char *msg) {
  char err[2048] = "";
  const char *fn = "th_candidate";
  th_status rc = tc_backend_compile(&t->target, 1, &t->wl, cfg, &fn, img_path, err, sizeof err);
  if (rc == TH_OK) {
    snprintf(so_path, TUNE_PATH_MAX, "%s", img_path);
    snprintf(fn_name, TUNE_FN_MAX, "%s", fn);
  } else if (rc == TH_ERR_INVALID) {
    *err_class = TC_ERROR_CLASS_INSTANTIATION;
    snprintf(msg, 160, "invalid config: %.140s", err[0] ? err : "device limits");
  } else if (rc == TH_ERR_COMPILE) {
    *err_class = TC_ERROR_CLASS_COMPILE_DEVICE;
    snprintf(msg, 160, "NVRTC: %.145s", err[0] ? err : th_status_str(rc));
  } else if (rc != TH_ERR_IO) { /* IO: no file, and the worker compiles the candidate itself */
    *err_class = TC_ERROR_CLASS_COMPILE_HOST;
    snprintf(msg, 160, "codegen: %.140s", err[0] ? err : th_status_str(rc));
  }
}

static void *tune__cuda_thread(void *arg) {
  tune_cuda_job *j = arg;
  for (int i = j->first; i < j->n; i += j->nthreads) {
    char path[TUNE_PATH_MAX];
    snprintf(path, sizeof path, "%s/%s_%d.cubin", j->dir, j->tag, i);
    tune__cuda_one(j->t, &j->cfgs[i], path, j->so_paths[i], j->fn_names[i], &j->err_class[i], j->msgs[i]);
  }
  return NULL;
}

th_status tune_cuda_build(const tune_task *t, const tc_config *cfgs, int n, int nthreads, const char *dir,
                          const char *tag, char (*so_paths)[TUNE_PATH_MAX], char (*fn_names)[TUNE_FN_MAX],
                          int *err_class, char (*msgs)[160]) {
  if (!t || !t->on_device || n < 0 || !dir || !tag) return TH_ERR_INVALID;
  for (int i = 0; i < n; i++) {
    so_paths[i][0] = 0;
    fn_names[i][0] = 0;
    msgs[i][0] = 0;
    err_class[i] = TC_ERROR_CLASS_NONE;
  }
  if (nthreads > n) nthreads = n;
  if (nthreads < 1) return TH_OK;
  tune_cuda_job *jobs = calloc((size_t)nthreads, sizeof *jobs);
  pthread_t *th = calloc((size_t)nthreads, sizeof *th);
  char *started = calloc((size_t)nthreads, 1);
  if (!jobs || !th || !started) {
    free(jobs);
    free(th);
    free(started);
    return TH_ERR_NOMEM;
  }
  for (int j = 0; j < nthreads; j++)
    jobs[j] = (tune_cuda_job){.t = t, .cfgs = cfgs, .n = n, .nthreads = nthreads, .first = j, .dir = dir,
                              .tag = tag, .so_paths = so_paths, .fn_names = fn_names, .err_class = err_class,
                              .msgs = msgs};
  for (int j = 1; j < nthreads; j++) {
    if (pthread_create(&th[j], NULL, tune__cuda_thread, &jobs[j]) == 0)
      started[j] = 1;
    else
      tune__cuda_thread(&jobs[j]); /* no thread: compile here */
  }
  tune__cuda_thread(&jobs[0]);
  for (int j = 1; j < nthreads; j++)
    if (started[j]) pthread_join(th[j], NULL);
  free(jobs);
  free(th);
  free(started);
  return TH_OK;
}
