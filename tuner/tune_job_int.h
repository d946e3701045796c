/* Internal to the tuning session (tune_job.c and the files it is split into: tune_verify.c,
 * tune_transfer.c): the session struct, its stages and the functions one of them lends another.
 * tune_lookup.c (the build's config lookup) does not need it. Nothing outside tuner/ includes it.
 */
#ifndef TUNE_JOB_INT_H
#define TUNE_JOB_INT_H

#include <signal.h>

#include "measure.h"
#include "search.h"
#include "tune_job.h"
#include "tune_task.h"

typedef enum tune_stage {
  TUNE_STAGE_TASK_START = 0,
  TUNE_STAGE_REF_BUILD,
  TUNE_STAGE_REF_SET,
  TUNE_STAGE_SELECT,
  TUNE_STAGE_BUILD,
  TUNE_STAGE_MEASURE,
  TUNE_STAGE_UPDATE,
  TUNE_STAGE_DONE
} tune_stage;

typedef struct tune_built {
  char config[1024]; /* tc_config_str */
  char so[TUNE_PATH_MAX];
  char fn[TUNE_FN_MAX];
} tune_built;

struct tune_session {
  store_t *st;
  tc_backend_target target;
  int on_device; /* candidates are timed by the backend in the worker (tc_backend_measure): cuda */
  tune_options o;
  char work_dir[512];
  int own_work_dir;
  tune_task *tasks;
  tune_task_progress *prog;
  int ntasks, cur;
  tune_stage stage;
  volatile sig_atomic_t cancel;
  tune_search_t *search;
  tune_measurer_t *measurer;
  int batch_serial;
  int build_limit; /* candidates per build stage (0: all) */
  /* current batch */
  int n;
  int built;     /* candidates of the batch compiled so far */
  int verifying; /* the batch is the task's verification, not trials */
  double vcost[TUNE_VERIFY_MAX + 1][TUNE_VERIFY_ROUNDS];
  tc_config *cfgs;
  char (*so_paths)[TUNE_PATH_MAX];
  char (*fn_names)[TUNE_FN_MAX];
  int *err_class;
  char (*msgs)[160];
  tune_result *res;
  char ref_so[TUNE_PATH_MAX];
  /* the current task's built candidates (trials and the reference), kept until the task ends so
   * that its verification times them from the same libraries instead of building its configs again
   */
  tune_built *kept;
  int nkept, capkept;
  double t0;
  int64_t trials_run; /* measured in this session (for the ETA) */
  double time_run;    /* seconds spent on them */
  char err[512];
};

#define TUNE_MAX_OTHERS 64 /* other workloads of a template considered for transfer */

/* The record a build would apply for one workload (as store_record_best): the fastest valid one of
 * the latest verification, else the fastest valid trial. */
typedef struct tune_wl_best {
  char key[512];
  char config[1024];
  double cost;
  double verify_at; /* created_at of the verification it comes from; 0: a trial */
  float dist;       /* shape distance to the task at hand */
} tune_wl_best;

/* tune_job.c */
/* Records the session error (fmt with up to two strings) and returns rc. */
th_status tune__fail(tune_session_t *s, th_status rc, const char *fmt, const char *a,
                     const char *b);
/* Times built candidate i of the batch into *r; TH_ERR_IO only when the worker cannot be
 * (re)started. */
th_status tune__measure_one(tune_session_t *s, int i, tune_result *r);
/* Marks the current task failed (why) and moves on to the next. */
void tune__task_failed(tune_session_t *s, const char *why);

/* tune_verify.c */
/* Keeps a built candidate of the current task for its verification (tune__kept_find). */
void tune__keep(tune_session_t *s, const tc_config *cfg, const char *so, const char *fn);
void tune__kept_clear(tune_session_t *s);
const tune_built *tune__kept_find(const tune_session_t *s, const tc_config *cfg);
/* The row of one trial (or verification) of task t. */
void tune__record(const tune_session_t *s, const tune_task *t, const tc_config *cfg,
                  const tune_result *r, const char *tuner, double created_at, store_record *rec);
void tune__unlink_batch(const tune_session_t *s);
/* Whether the session verifies its tasks' best configs before they end. */
int tune__verifies(const tune_session_t *s);
th_status tune__verify_measure(tune_session_t *s);
int tune__verify_start(tune_session_t *s);
th_status tune__verify_update(tune_session_t *s);

/* tune_transfer.c */
/* Folds r (records come oldest first) into the best of its workload among b[0..*n); returns its
 * entry, or NULL when there is no room. tune__best_sort orders b by shape distance, then cost. */
tune_wl_best *tune__best_fold(tune_wl_best *b, int *n, int cap, const store_record *r);
void tune__best_sort(tune_wl_best *b, int n);
void tune__note_valid(tune_task_progress *p, double gflops, double cost_s);
float tune__shape_dist(const float *a, const float *b);
/* The task-start stage: records, resume, transfer, the search. */
th_status tune__task_start(tune_session_t *s);

#endif
