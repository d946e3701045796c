/* The tuning session state machine (see tune_job.h), the records it writes and reads (resume, transfer) and
 * the build-time config lookup. Each stage does one bounded piece of work and returns, so the caller decides
 * what runs when. */
#include "tune_job.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ops.h"
#include "tc.h"
#include "search.h"
#include "th_util.h"
#include "tune_space.h"
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

static const char *const tune__stage_names[] = {"start task", "build reference", "reference", "select",
                                               "build",      "measure",         "update",    "done"};

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
  int built; /* candidates of the batch compiled so far */
  int verifying; /* the batch is the task's verification, not trials */
  double vcost[TUNE_VERIFY_MAX + 1][TUNE_VERIFY_ROUNDS];
  tc_config *cfgs;
  char (*so_paths)[TUNE_PATH_MAX];
  char (*fn_names)[TUNE_FN_MAX];
  int *err_class;
  char (*msgs)[160];
  tune_result *res;
  char ref_so[TUNE_PATH_MAX];
  /* the current task's built candidates (trials and the reference), kept until the task ends so that its
   * verification times them from the same libraries instead of building its configs again */
  tune_built *kept;
  int nkept, capkept;
  double t0;
  int64_t trials_run; /* measured in this session (for the ETA) */
  double time_run;    /* seconds spent on them */
  char err[512];
};

static void tune__kept_clear(tune_session_t *s);
static void tune__task_failed(tune_session_t *s, const char *why);

void tune_options_default(tune_options *o) {
  memset(o, 0, sizeof *o);
  snprintf(o->tuner, sizeof o->tuner, "xgb");
  o->trials = 64;
  o->seed = 1;
  o->batch = 16;
  long nc = sysconf(_SC_NPROCESSORS_ONLN);
  o->build_threads = nc > 0 ? (int)nc : 1;
  o->build_timeout_s = TUNE_BUILD_TIMEOUT_S;
  o->transfer = 1;
  o->verify_top = TUNE_VERIFY_TOP;
  tune_measure_opts_default(&o->measure);
}

th_status tune_options_check(const tune_options *o, char *err, size_t n) {
  static const char *const kinds[] = {"xgb", "ga", "random", "grid"};
  int ok = 0;
  for (int i = 0; i < 4; i++) ok |= strcmp(o->tuner, kinds[i]) == 0;
  if (!ok) {
    snprintf(err, n, "unknown tuner '%s' (valid: xgb, ga, random, grid)", o->tuner);
    return TH_ERR_INVALID;
  }
  if (o->trials < 1) {
    snprintf(err, n, "trials must be at least 1");
    return TH_ERR_INVALID;
  }
  if (o->batch < 1 || o->batch > 1024) {
    snprintf(err, n, "batch must be in 1..1024");
    return TH_ERR_INVALID;
  }
  if (o->verify_top < 0 || o->verify_top > TUNE_VERIFY_MAX) {
    snprintf(err, n, "verify_top must be in 0..%d", TUNE_VERIFY_MAX);
    return TH_ERR_INVALID;
  }
  return TH_OK;
}

static th_status tune__fail(tune_session_t *s, th_status rc, const char *fmt, const char *a, const char *b) {
  snprintf(s->err, sizeof s->err, fmt, a ? a : "", b ? b : "");
  return rc;
}

static th_status tune__alloc_batch(tune_session_t *s) {
  int b = s->o.batch > s->o.verify_top + 1 ? s->o.batch : s->o.verify_top + 1;
  s->cfgs = calloc((size_t)b, sizeof *s->cfgs);
  s->so_paths = calloc((size_t)b, sizeof *s->so_paths);
  s->fn_names = calloc((size_t)b, sizeof *s->fn_names);
  s->err_class = calloc((size_t)b, sizeof *s->err_class);
  s->msgs = calloc((size_t)b, sizeof *s->msgs);
  s->res = calloc((size_t)b, sizeof *s->res);
  return s->cfgs && s->so_paths && s->fn_names && s->err_class && s->msgs && s->res ? TH_OK : TH_ERR_NOMEM;
}

static _Thread_local char tune__new_err[512];

const char *tune_session_new_errmsg(void) {
  return tune__new_err;
}

static th_status tune__session_new(store_t *st, const tc_backend_target *target, const tc_workload *wls, const int *weights, int n, const tune_options *o,
                                   tune_measurer_t *measurer, tune_session_t **out) {
  if (!st || !wls || n < 1 || !o) {
    tune_measurer_free(measurer);
    return TH_ERR_INVALID;
  }
  char msg[160];
  if (tune_options_check(o, msg, sizeof msg) != TH_OK) {
    snprintf(tune__new_err, sizeof tune__new_err, "%s", msg);
    tune_measurer_free(measurer);
    return TH_ERR_INVALID;
  }
  tune_session_t *s = calloc(1, sizeof *s);
  if (!s) {
    tune_measurer_free(measurer);
    return TH_ERR_NOMEM;
  }
  s->st = st;
  s->o = *o;
  s->measurer = measurer;
  th_status rc = TH_OK;
  s->target = *target;
  s->on_device = tc_backend_measure_kind(target->backend) == TC_MEASURE_DEVICE;
  if (rc == TH_OK) {
    s->tasks = calloc((size_t)n, sizeof *s->tasks);
    s->prog = calloc((size_t)n, sizeof *s->prog);
    if (!s->tasks || !s->prog) rc = TH_ERR_NOMEM;
  }
  for (int i = 0; rc == TH_OK && i < n; i++) {
    rc = tune_task_init(&s->tasks[i], &wls[i], &s->target, weights ? weights[i] : 1);
    if (rc != TH_OK) break;
    tune_task_progress *p = &s->prog[i];
    snprintf(p->key, sizeof p->key, "%s", s->tasks[i].key);
    snprintf(p->template_name, sizeof p->template_name, "%s", s->tasks[i].template_name);
    p->weight = s->tasks[i].weight;
    p->flops = s->tasks[i].flops;
    p->budget = o->trials;
    p->state = "pending";
    /* Trials already stored (resume), so progress and ETA are right before the task starts. */
    int64_t have = 0;
    if (store_record_count(st, s->tasks[i].key, s->tasks[i].target_str, &have) == TH_OK)
      p->trials = have < o->trials ? have : o->trials;
  }
  s->ntasks = n;
  if (rc == TH_OK) rc = tune__alloc_batch(s);
  if (rc == TH_OK) {
    if (o->work_dir) {
      snprintf(s->work_dir, sizeof s->work_dir, "%s", o->work_dir);
      rc = th_mkdir_p(s->work_dir);
    } else {
      rc = th_mkdtemp("tunehub-tune", s->work_dir, sizeof s->work_dir);
      s->own_work_dir = rc == TH_OK;
    }
  }
  if (rc == TH_OK && !s->measurer) rc = tune_measurer_new(&s->o.measure, &s->measurer);
  if (rc == TH_OK)
    tune_measurer_set_ref_dir(s->measurer, s->work_dir); /* device tasks' references */
  if (rc != TH_OK) {
    tune_session_free(s);
    return rc;
  }
  s->o.work_dir = NULL;
  s->t0 = th_now_mono();
  *out = s;
  return TH_OK;
}


const char *tune_session_target(const tune_session_t *s) {
  return s ? s->target.str : "";
}

void tune_session_free(tune_session_t *s) {
  if (!s) return;
  tune_search_free(s->search);
  tune_measurer_free(s->measurer);
  tune__kept_clear(s);
  free(s->kept);
  if (s->own_work_dir) (void)th_rm_rf(s->work_dir);
  free(s->tasks);
  free(s->prog);
  free(s->cfgs);
  free(s->so_paths);
  free(s->fn_names);
  free(s->err_class);
  free(s->msgs);
  free(s->res);
  free(s);
}

int tune_session_worker_deaths(const tune_session_t *s, const char **why) {
  if (why) *why = "";
  return s->measurer ? tune_measurer_deaths(s->measurer, why) : 0;
}

const char *tune_session_errmsg(const tune_session_t *s) {
  return s->err;
}

void tune_session_set_build_threads(tune_session_t *s, int n) {
  if (n >= 1) s->o.build_threads = n;
}

void tune_session_set_build_limit(tune_session_t *s, int max_candidates) {
  s->build_limit = max_candidates > 0 ? max_candidates : 0;
}

void tune_session_cancel(tune_session_t *s) {
  s->cancel = 1;
}

int tune_session_cancelled(const tune_session_t *s) {
  return s->cancel != 0;
}

tune_resource tune_session_next_stage(const tune_session_t *s) {
  if (s->cancel || s->stage == TUNE_STAGE_DONE) return TUNE_RES_DONE;
  switch (s->stage) {
    case TUNE_STAGE_REF_BUILD:
    case TUNE_STAGE_BUILD:
      return TUNE_RES_CPU_BUILD;
    case TUNE_STAGE_REF_SET:
    case TUNE_STAGE_MEASURE:
      return TUNE_RES_MEASURE;
    default:
      return TUNE_RES_NONE;
  }
}

/* Times candidate i of the batch into *r: on the device by the backend (from its image), else from
 * its library with its weight packing. TH_OK for every outcome of the candidate (in
 * r->error_class); TH_ERR_RUNTIME when the workload's reference fails (a device task's), TH_ERR_IO
 * when the worker cannot be (re)started. */
static th_status tune__measure_one(tune_session_t *s, int i, tune_result *r) {
  const tune_task *t = &s->tasks[s->cur];
  if (s->on_device) {
    th_status rc = tune_measurer_run_device(s->measurer, &s->target, &t->wl, &s->cfgs[i],
                                            s->so_paths[i][0] ? s->so_paths[i] : NULL, r);
    return rc == TH_ERR_INVALID ? TH_OK : rc;
  }
  tune_pack pack;
  if (tune_task_pack(t, &s->cfgs[i], &pack) != TH_OK) {
    memset(r, 0, sizeof *r);
    r->cost_mean_s = 1e9;
    r->error_class = TC_ERROR_CLASS_INSTANTIATION;
    snprintf(r->msg, sizeof r->msg, "no weight packing for this config");
    return TH_OK;
  }
  th_status rc = tune_measurer_run(s->measurer, s->so_paths[i], s->fn_names[i], &pack, r);
  return rc == TH_ERR_IO ? rc : TH_OK;
}

/* ---- verification: the task's best configs and its fallback timed again, side by side ---- */
/* The row of one trial (or verification) of task t. */
static void tune__record(const tune_session_t *s, const tune_task *t, const tc_config *cfg, const tune_result *r,
                         const char *tuner, double created_at, store_record *rec) {
  memset(rec, 0, sizeof *rec);
  snprintf(rec->workload_key, sizeof rec->workload_key, "%s", t->key);
  snprintf(rec->template_name, sizeof rec->template_name, "%s", t->template_name);
  snprintf(rec->target, sizeof rec->target, "%s", t->target_str);
  tc_config_str(&t->space, cfg, rec->config, sizeof rec->config);
  rec->config_index = tc_space_index(&t->space, cfg);
  rec->error_class = r->error_class;
  rec->cost_mean_s = r->error_class == 0 ? r->cost_mean_s : 1e9;
  rec->cost_std_s = r->error_class == 0 ? r->cost_std_s : 0;
  rec->gflops = r->error_class == 0 && r->cost_mean_s > 0 ? t->flops / r->cost_mean_s * 1e-9 : 0;
  snprintf(rec->tuner, sizeof rec->tuner, "%s", tuner);
  rec->job_id = s->o.job_id;
  rec->attempt = s->o.attempt;
  rec->created_at = created_at;
}

/* The batch's candidate libraries are no longer needed once timed (several candidates share one). */
static void tune__unlink_batch(const tune_session_t *s) {
  for (int i = 0; i < s->n; i++)
    if (s->so_paths[i][0] && (i == 0 || strcmp(s->so_paths[i], s->so_paths[i - 1]) != 0)) unlink(s->so_paths[i]);
}

/* Remembers a built candidate of the current task (its library stays on disk until tune__kept_clear). */
static void tune__keep(tune_session_t *s, const tc_config *cfg, const char *so, const char *fn) {
  if (s->nkept == s->capkept) {
    int cap = s->capkept ? s->capkept * 2 : 64;
    tune_built *k = realloc(s->kept, sizeof *k * (size_t)cap);
    if (!k) {
      unlink(so); /* not kept: verification builds it again if it needs it */
      return;
    }
    s->kept = k;
    s->capkept = cap;
  }
  tune_built *b = &s->kept[s->nkept++];
  tc_config_str(&s->tasks[s->cur].space, cfg, b->config, sizeof b->config);
  snprintf(b->so, sizeof b->so, "%s", so);
  snprintf(b->fn, sizeof b->fn, "%s", fn);
}

static const tune_built *tune__kept_find(const tune_session_t *s, const tc_config *cfg) {
  char text[1024];
  tc_config_str(&s->tasks[s->cur].space, cfg, text, sizeof text);
  for (int i = 0; i < s->nkept; i++)
    if (strcmp(s->kept[i].config, text) == 0 && access(s->kept[i].so, R_OK) == 0) return &s->kept[i];
  return NULL;
}

/* Deletes the kept libraries: trials (several candidates share one), the reference, verification builds. */
static void tune__kept_clear(tune_session_t *s) {
  for (int i = 0; i < s->nkept; i++)
    if (i == 0 || strcmp(s->kept[i].so, s->kept[i - 1].so) != 0) unlink(s->kept[i].so);
  s->nkept = 0;
}

static int tune__verifies(const tune_session_t *s) {
  return s->o.verify_top > 0;
}

typedef struct tune_top_ctx {
  const char *key;
  int k, n;
  struct {
    char config[1024];
    double cost;
  } top[TUNE_VERIFY_MAX];
} tune_top_ctx;

/* Keeps the k fastest distinct configs among the task's valid trials, fastest first. */
static int tune__top_cb(void *ctx, const store_record *r) {
  tune_top_ctx *c = ctx;
  if (r->error_class != 0 || strcmp(r->workload_key, c->key) != 0 || strcmp(r->tuner, STORE_TUNER_VERIFY) == 0)
    return 0;
  int i = 0;
  while (i < c->n && strcmp(c->top[i].config, r->config) != 0) i++;
  if (i == c->n) { /* a new config: in only if there is room or it beats the slowest kept */
    if (c->n < c->k)
      c->n++;
    else if (r->cost_mean_s >= c->top[c->n - 1].cost)
      return 0;
    i = c->n - 1;
    snprintf(c->top[i].config, sizeof c->top[i].config, "%s", r->config);
    c->top[i].cost = r->cost_mean_s;
  } else if (r->cost_mean_s < c->top[i].cost) {
    c->top[i].cost = r->cost_mean_s;
  } else {
    return 0;
  }
  while (i > 0 && c->top[i - 1].cost > c->top[i].cost) { /* keep the order */
    __typeof__(c->top[0]) tmp = c->top[i];
    c->top[i] = c->top[i - 1];
    c->top[i - 1] = tmp;
    i--;
  }
  return 0;
}

/* When the task's trials are done: makes the batch its verify_top fastest configs plus the fallback, and
 * goes to build them. 0 when there is nothing to choose between (fewer than two configs). */
static int tune__verify_start(tune_session_t *s) {
  if (!tune__verifies(s)) return 0;
  tune_task *t = &s->tasks[s->cur];
  tune_top_ctx *c = calloc(1, sizeof *c);
  if (!c) return 0;
  c->key = t->key;
  c->k = s->o.verify_top;
  if (store_record_each(s->st, t->template_name, t->target_str, tune__top_cb, c) != TH_OK) c->n = 0;
  int n = 0, have_fb = 0;
  char fb[1024] = "";
  tc_config_str(&t->space, &t->fallback, fb, sizeof fb);
  for (int i = 0; i < c->n; i++) {
    tc_config cfg;
    if (tune_config_from_text(&t->space, c->top[i].config, &cfg) != TH_OK) continue;
    have_fb |= strcmp(c->top[i].config, fb) == 0;
    s->cfgs[n++] = cfg;
  }
  free(c);
  if (!have_fb) s->cfgs[n++] = t->fallback;
  if (n < 2) return 0;
  s->n = n;
  s->built = 0;
  s->verifying = 1;
  s->prog[s->cur].state = "verifying";
  s->stage = TUNE_STAGE_BUILD;
  return 1;
}

static int tune__cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* TUNE_VERIFY_ROUNDS rounds, each timing every config once (a full measurement: repeat, cache
 * flush), the order rotated per round; a config's cost is the median of its rounds, its spread
 * their standard deviation. A config that fails (wrong answer, crash, timeout) is out. A device
 * task's configs are timed by the backend (tune_measurer_run_device) from the images its build
 * stage compiled again. */
static th_status tune__verify_measure(tune_session_t *s) {
  double t0 = th_now_mono();
  for (int i = 0; i < s->n; i++) {
    memset(&s->res[i], 0, sizeof s->res[i]);
    s->res[i].error_class = s->err_class[i];
    snprintf(s->res[i].msg, sizeof s->res[i].msg, "%s", s->msgs[i]);
  }
  for (int round = 0; round < TUNE_VERIFY_ROUNDS; round++) {
    for (int j = 0; j < s->n; j++) {
      int i = (j + round) % s->n;
      tune_result *r = &s->res[i];
      if (r->error_class != 0) continue;
      tune_result one;
      th_status rc = tune__measure_one(s, i, &one);
      if (rc == TH_ERR_RUNTIME) { /* the workload's reference: the task fails */
        tune__unlink_batch(s);
        tune__task_failed(s, one.msg);
        s->verifying = 0;
        return TH_OK;
      }
      if (rc != TH_OK) return tune__fail(s, rc, "measurement worker: %s%s", one.msg, NULL);
      if (one.error_class != 0) {
        *r = one;
        continue;
      }
      s->vcost[i][round] = one.cost_mean_s;
    }
  }
  for (int i = 0; i < s->n; i++) {
    tune_result *r = &s->res[i];
    if (r->error_class != 0) {
      r->cost_mean_s = 1e9;
      continue;
    }
    double v[TUNE_VERIFY_ROUNDS], mean = 0, var = 0;
    memcpy(v, s->vcost[i], sizeof v);
    qsort(v, TUNE_VERIFY_ROUNDS, sizeof v[0], tune__cmp_double);
    for (int k = 0; k < TUNE_VERIFY_ROUNDS; k++) mean += v[k] / TUNE_VERIFY_ROUNDS;
    for (int k = 0; k < TUNE_VERIFY_ROUNDS; k++) var += (v[k] - mean) * (v[k] - mean) / TUNE_VERIFY_ROUNDS;
    r->cost_mean_s = v[TUNE_VERIFY_ROUNDS / 2];
    r->cost_std_s = sqrt(var);
  }
  if (s->on_device)
    tune__unlink_batch(s); /* CPU libraries are kept with the task's, until it ends */
  s->time_run += th_now_mono() - t0;
  s->stage = TUNE_STAGE_UPDATE;
  return TH_OK;
}

/* Stores the verification (one created_at for the whole set, so that builds find the latest one) and ends
 * the task. Not trials: the strategy and the trial counts do not see them. */
static th_status tune__verify_update(tune_session_t *s) {
  tune_task *t = &s->tasks[s->cur];
  tune_task_progress *p = &s->prog[s->cur];
  double now = th_now_wall(), best = 1e9;
  th_status rc = TH_OK;
  for (int i = 0; i < s->n && rc == TH_OK; i++) {
    const tune_result *r = &s->res[i];
    store_record rec;
    tune__record(s, t, &s->cfgs[i], r, STORE_TUNER_VERIFY, now, &rec);
    rc = store_record_add(s->st, &rec);
    if (r->error_class == 0 && rec.cost_mean_s < best) best = rec.cost_mean_s;
  }
  if (rc != TH_OK) return tune__fail(s, rc, "store: %s%s", store_errmsg(s->st), NULL);
  if (best < 1e9) {
    p->verified_gflops = t->flops / best * 1e-9;
    p->verified_s = best;
  }
  s->verifying = 0;
  p->state = "done";
  s->cur++;
  s->stage = TUNE_STAGE_TASK_START;
  return TH_OK;
}

/* ---- task start: records, resume and transfer ---- */
#define TUNE_MAX_SEEDS 8
#define TUNE_MAX_OTHERS 64 /* other workloads of a template considered for transfer */

/* The record a build would apply for one workload (as store_record_best): the fastest valid one of the latest
 * verification, else the fastest valid trial. */
typedef struct tune_wl_best {
  char key[512];
  char config[1024];
  double cost;
  double verify_at; /* created_at of the verification it comes from; 0: a trial */
  float dist;       /* shape distance to the task at hand */
} tune_wl_best;

/* Folds r (records come oldest first) into the best of its workload among b[0..*n), adding the workload when
 * there is room; returns its entry, or NULL. */
static tune_wl_best *tune__best_fold(tune_wl_best *b, int *n, int cap, const store_record *r) {
  int i = 0;
  while (i < *n && strcmp(b[i].key, r->workload_key) != 0) i++;
  if (i == *n) {
    if (*n == cap) return NULL;
    memset(&b[i], 0, sizeof b[i]);
    snprintf(b[i].key, sizeof b[i].key, "%s", r->workload_key);
    b[i].cost = 1e18;
    (*n)++;
  }
  tune_wl_best *e = &b[i];
  if (r->error_class != 0) return e;
  int take;
  if (strcmp(r->tuner, STORE_TUNER_VERIFY) == 0)
    take = r->created_at > e->verify_at || (r->created_at == e->verify_at && r->cost_mean_s < e->cost);
  else
    take = e->verify_at == 0 && r->cost_mean_s < e->cost;
  if (take) {
    e->cost = r->cost_mean_s;
    if (strcmp(r->tuner, STORE_TUNER_VERIFY) == 0) e->verify_at = r->created_at;
    snprintf(e->config, sizeof e->config, "%s", r->config);
  }
  return e;
}

/* Orders b by shape distance, then cost. */
/* A valid trial of a task: the fastest time and the best GFLOPS (the same trial, except for a task with no
 * FLOPs, whose GFLOPS stay 0). */
static void tune__note_valid(tune_task_progress *p, double gflops, double cost_s) {
  p->best_gflops = fmax(p->best_gflops, gflops);
  if (cost_s > 0 && (p->best_s == 0 || cost_s < p->best_s)) p->best_s = cost_s;
}

static void tune__best_sort(tune_wl_best *b, int n) {
  for (int i = 1; i < n; i++) {
    int j = i;
    while (j > 0 && (b[j - 1].dist > b[j].dist || (b[j - 1].dist == b[j].dist && b[j - 1].cost > b[j].cost))) {
      tune_wl_best tmp = b[j];
      b[j] = b[j - 1];
      b[j - 1] = tmp;
      j--;
    }
  }
}

typedef struct tune_load_ctx {
  tune_session_t *s;
  tune_task *t;
  int verified; /* the task has verification records */
  tc_config *hist;
  double *hist_cost;
  int nhist, hist_cap;
  tune_wl_best best[TUNE_MAX_OTHERS]; /* other workloads: the record a build would apply */
  int nbest;
  char groups[64][512];
  int ngroups;
  float *row;
  th_status rc;
} tune_load_ctx;

static float tune__shape_dist(const float *a, const float *b) {
  float d = 0;
  for (int i = 0; i < TUNE_SHAPE_FEATURES; i++) {
    if (isnan(a[i]) && isnan(b[i])) continue;
    float x = (isnan(a[i]) ? 0 : a[i]) - (isnan(b[i]) ? 0 : b[i]);
    d += x * x + (isnan(a[i]) != isnan(b[i]) ? 100.f : 0.f);
  }
  return d;
}

static int tune__load_cb(void *ctx, const store_record *r) {
  tune_load_ctx *c = ctx;
  tune_task *t = c->t;
  if (strcmp(r->workload_key, t->key) == 0) { /* own history: resume */
    if (strcmp(r->tuner, STORE_TUNER_VERIFY) == 0) { /* a re-timing, not a trial */
      c->verified = 1;
      return 0;
    }
    tc_config cfg;
    if (tune_config_from_text(&t->space, r->config, &cfg) != TH_OK) return 0;
    if (c->nhist == c->hist_cap) {
      int ncap = c->hist_cap ? c->hist_cap * 2 : 256;
      tc_config *nh = realloc(c->hist, sizeof *nh * (size_t)ncap);
      double *nc = nh ? realloc(c->hist_cost, sizeof *nc * (size_t)ncap) : NULL;
      if (nh) c->hist = nh;
      if (!nh || !nc) {
        c->rc = TH_ERR_NOMEM;
        return 1;
      }
      c->hist_cost = nc;
      c->hist_cap = ncap;
    }
    c->hist[c->nhist] = cfg;
    c->hist_cost[c->nhist++] = r->error_class == 0 ? r->cost_mean_s : 1e9;
    return 0;
  }
  if (!c->s->o.transfer) return 0;
  /* Another workload of the same template: a prior row for the model, and maybe a seed. */
  int g = 0;
  while (g < c->ngroups && strcmp(c->groups[g], r->workload_key) != 0) g++;
  if (g == c->ngroups && c->ngroups < 64) snprintf(c->groups[c->ngroups++], 512, "%s", r->workload_key);
  if (g >= 64) return 0;
  if (c->s->search && c->row) {
    float *row = c->row;
    int nk = tune_knob_feature_count(&t->space);
    tune_text_knob_features(&t->space, r->config, row);
    tune_shape_features(r->workload_key, row + nk);
    for (int i = 0; i < TC_IR_FEATURE_LEN; i++) row[nk + TUNE_SHAPE_FEATURES + i] = NAN;
    double score = r->error_class == 0 && r->cost_mean_s > 0 && r->cost_mean_s < 1e9 ? r->gflops : 0;
    tune_search_add_prior(c->s->search, row, score, g);
  }
  int was = c->nbest;
  tune_wl_best *e = tune__best_fold(c->best, &c->nbest, TUNE_MAX_OTHERS, r);
  if (e && c->nbest > was) {
    float sh[TUNE_SHAPE_FEATURES];
    tune_shape_features(r->workload_key, sh);
    e->dist = tune__shape_dist(sh, t->shape);
  }
  return 0;
}

static th_status tune__task_start(tune_session_t *s) {
  tune__kept_clear(s); /* the previous task's libraries */
  if (s->cur >= s->ntasks) {
    s->stage = TUNE_STAGE_DONE;
    return TH_OK;
  }
  tune_task *t = &s->tasks[s->cur];
  tune_task_progress *p = &s->prog[s->cur];
  tune_search_free(s->search);
  s->search = NULL;
  th_status rc = store_workload_upsert(s->st, t->key, t->template_name, t->flops);
  if (rc != TH_OK) return tune__fail(s, rc, "store: %s%s", store_errmsg(s->st), NULL);
  tune_search_opts so;
  tune_search_opts_default(&so, s->o.tuner);
  so.seed = s->o.seed + (uint64_t)s->cur * 7919;
  so.budget = s->o.trials;
  so.early_stopping = s->o.early_stopping;
  tune_search_space ss = {.space = &t->space, .valid = tune_task_valid, .valid_ctx = t,
                          .extra = tune_task_features, .extra_ctx = t, .nextra = tune_task_feature_count()};
  rc = tune_search_new(&so, &ss, &s->search);
  if (rc != TH_OK) return tune__fail(s, rc, "cannot create the %s strategy%s", s->o.tuner, NULL);
  tune_load_ctx *c = calloc(1, sizeof *c);
  if (!c) return TH_ERR_NOMEM;
  c->s = s;
  c->t = t;
  c->row = malloc(sizeof(float) * (size_t)tune_search_feature_count(s->search));
  rc = c->row ? store_record_each(s->st, t->template_name, t->target_str, tune__load_cb, c) : TH_ERR_NOMEM;
  if (rc == TH_OK) rc = c->rc;
  if (rc == TH_OK && c->nhist > 0) {
    /* Resume: the stored trials count against the budget and feed the model. */
    int n = c->nhist;
    if ((int64_t)n > s->o.trials) n = (int)s->o.trials;
    rc = tune_search_history(s->search, c->hist, c->hist_cost, n);
    for (int i = 0; i < n; i++) {
      if (c->hist_cost[i] >= 1e9) p->errors++;
      else tune__note_valid(p, t->flops / c->hist_cost[i] * 1e-9, c->hist_cost[i]);
    }
  }
  if (rc == TH_OK && c->nbest > 0) {
    /* Seeds: the configs builds apply to the nearest workloads, when they are valid here. */
    tune__best_sort(c->best, c->nbest);
    tc_config seeds[TUNE_MAX_SEEDS];
    int ns = 0;
    for (int i = 0; i < c->nbest && ns < TUNE_MAX_SEEDS; i++)
      if (c->best[i].cost < 1e18 &&
          tune_config_from_text_nearest(&t->space, c->best[i].config, &seeds[ns], NULL) == TH_OK &&
          tune_task_valid(t, &t->space, &seeds[ns]))
        ns++;
    tune_search_seed(s->search, seeds, ns);
  }
  /* The fallback config is a trial too, right after the transfer seeds (skipped when already measured): the
   * tuned choice is then measured against it under the same conditions, not only against the search's
   * candidates. */
  if (rc == TH_OK) tune_search_seed(s->search, &t->fallback, 1);
  p->trials = tune_search_trials(s->search);
  int verified = c->verified;
  if (verified) {
    store_record vr;
    if (store_record_best(s->st, t->key, t->target_str, &vr) == TH_OK &&
        strcmp(vr.tuner, STORE_TUNER_VERIFY) == 0) {
      p->verified_gflops = vr.gflops;
      p->verified_s = vr.cost_mean_s;
    }
  }
  free(c->row);
  free(c->hist);
  free(c->hist_cost);
  free(c);
  if (rc != TH_OK) return tune__fail(s, rc, "loading records: %s%s", store_errmsg(s->st), NULL);
  /* Already at its budget (or stopped early) in an earlier run: skipped, unless that run ended before the
   * verification (the reference stages, then select finds the budget spent and verifies). */
  if (tune_search_done(s->search) && (verified || !tune__verifies(s))) {
    p->state = "skipped";
    s->cur++;
    return TH_OK;
  }
  p->state = "tuning";
  /* A device candidate is checked against the CPU reference by its backend (tc_backend_measure): no reference
   * stage. */
  s->stage = s->on_device ? TUNE_STAGE_SELECT : TUNE_STAGE_REF_BUILD;
  return TH_OK;
}

static void tune__task_failed(tune_session_t *s, const char *why) {
  tune_task_progress *p = &s->prog[s->cur];
  p->state = "failed";
  snprintf(p->msg, sizeof p->msg, "%.150s", why);
  s->cur++;
  s->stage = TUNE_STAGE_TASK_START;
}

static th_status tune__ref_build(tune_session_t *s) {
  tune_task *t = &s->tasks[s->cur];
  char tag[32], so[1][TUNE_PATH_MAX], fn[1][TUNE_FN_MAX], msg[1][160];
  int ec;
  snprintf(tag, sizeof tag, "ref%d", s->cur);
  th_status rc =
      tune_task_build(t, &t->fallback, 1, 1, s->o.build_timeout_s, s->work_dir, tag, so, fn, &ec, msg);
  if (rc != TH_OK) return tune__fail(s, rc, "building the reference: %s%s", th_status_str(rc), NULL);
  if (ec != 0) {
    char why[200];
    snprintf(why, sizeof why, "fallback config does not build: %.150s", msg[0]);
    tune__task_failed(s, why);
    return TH_OK;
  }
  snprintf(s->ref_so, sizeof s->ref_so, "%s", so[0]);
  snprintf(s->fn_names[0], TUNE_FN_MAX, "%s", fn[0]);
  tune__keep(s, &t->fallback, so[0], fn[0]);
  s->stage = TUNE_STAGE_REF_SET;
  return TH_OK;
}

static th_status tune__ref_set(tune_session_t *s) {
  tune_task *t = &s->tasks[s->cur];
  tune_layout lay;
  tune_pack pack;
  th_status rc = tune_task_layout(t, &lay);
  if (rc == TH_OK) rc = tune_task_pack(t, &t->fallback, &pack);
  if (rc == TH_OK) rc = tune_measurer_set_task(s->measurer, &lay, s->ref_so, s->fn_names[0], &pack);
  if (rc != TH_OK) {
    char why[200];
    snprintf(why, sizeof why, "reference: %.180s", tune_measurer_errmsg(s->measurer));
    tune__task_failed(s, why);
    return TH_OK;
  }
  s->stage = TUNE_STAGE_SELECT;
  return TH_OK;
}

static th_status tune__select(tune_session_t *s) {
  s->n = tune_search_next(s->search, s->cfgs, s->o.batch);
  if (s->n == 0 && tune__verify_start(s)) return TH_OK;
  if (s->n == 0) {
    s->prog[s->cur].state = "done";
    s->cur++;
    s->stage = TUNE_STAGE_TASK_START;
    return TH_OK;
  }
  s->built = 0;
  s->stage = TUNE_STAGE_BUILD;
  return TH_OK;
}

/* The verification batch: configs this task already built (its trials, the reference) are timed from those
 * libraries; only the others (records of an earlier run, transferred ones) are compiled, in one stage. */
static th_status tune__build_verify(tune_session_t *s) {
  char tag[32];
  int miss[TUNE_VERIFY_MAX + 1], nmiss = 0;
  tc_config cfgs[TUNE_VERIFY_MAX + 1];
  char so[TUNE_VERIFY_MAX + 1][TUNE_PATH_MAX], fn[TUNE_VERIFY_MAX + 1][TUNE_FN_MAX], msg[TUNE_VERIFY_MAX + 1][160];
  int ec[TUNE_VERIFY_MAX + 1];
  for (int i = 0; i < s->n; i++) {
    const tune_built *k = tune__kept_find(s, &s->cfgs[i]);
    if (k) {
      snprintf(s->so_paths[i], TUNE_PATH_MAX, "%s", k->so);
      snprintf(s->fn_names[i], TUNE_FN_MAX, "%s", k->fn);
      s->err_class[i] = TC_ERROR_CLASS_NONE;
      s->msgs[i][0] = '\0';
    } else {
      cfgs[nmiss] = s->cfgs[i];
      miss[nmiss++] = i;
    }
  }
  if (nmiss > 0) {
    snprintf(tag, sizeof tag, "t%d_b%d", s->cur, s->batch_serial++);
    th_status rc = tune_task_build(&s->tasks[s->cur], cfgs, nmiss, s->o.build_threads, s->o.build_timeout_s,
                                   s->work_dir, tag, so, fn, ec, msg);
    if (rc != TH_OK) return tune__fail(s, rc, "build: %s%s", th_status_str(rc), NULL);
    for (int j = 0; j < nmiss; j++) {
      int i = miss[j];
      memcpy(s->so_paths[i], so[j], TUNE_PATH_MAX);
      memcpy(s->fn_names[i], fn[j], TUNE_FN_MAX);
      s->err_class[i] = ec[j];
      memcpy(s->msgs[i], msg[j], sizeof s->msgs[i]);
      if (so[j][0]) tune__keep(s, &s->cfgs[i], so[j], fn[j]); /* deleted with the task's others */
    }
  }
  s->built = s->n;
  s->stage = TUNE_STAGE_MEASURE;
  return TH_OK;
}

/* Compiles the batch's next candidates: all that are left, or build_limit of them. */
static th_status tune__build(tune_session_t *s) {
  if (s->verifying && !s->on_device) return tune__build_verify(s);
  char tag[32];
  int b = s->built, take = s->n - b;
  if (s->build_limit > 0 && take > s->build_limit) take = s->build_limit;
  snprintf(tag, sizeof tag, "t%d_b%d", s->cur, s->batch_serial++);
  th_status rc = tune_task_build(&s->tasks[s->cur], s->cfgs + b, take, s->o.build_threads, s->o.build_timeout_s,
                                 s->work_dir, tag, s->so_paths + b, s->fn_names + b, s->err_class + b, s->msgs + b);
  if (rc != TH_OK) return tune__fail(s, rc, "build: %s%s", th_status_str(rc), NULL);
  s->built += take;
  if (s->built >= s->n) s->stage = TUNE_STAGE_MEASURE;
  return TH_OK;
}

static th_status tune__measure(tune_session_t *s) {
  if (s->verifying) return tune__verify_measure(s);
  double t0 = th_now_mono();
  for (int i = 0; i < s->n; i++) {
    tune_result *r = &s->res[i];
    memset(r, 0, sizeof *r);
    r->cost_mean_s = 1e9;
    if (s->err_class[i] != 0) {
      r->error_class = s->err_class[i];
      snprintf(r->msg, sizeof r->msg, "%s", s->msgs[i]);
      continue;
    }
    th_status rc = tune__measure_one(s, i, r);
    if (rc == TH_ERR_RUNTIME) { /* the workload's reference: the task fails, not its candidates */
      tune__unlink_batch(s);
      tune__task_failed(s, r->msg);
      return TH_OK;
    }
    if (rc != TH_OK) return tune__fail(s, rc, "measurement worker: %s%s", r->msg, NULL);
  }
  if (s->on_device)
    tune__unlink_batch(s);
  else
    for (int i = 0; i < s->n; i++)
      if (s->so_paths[i][0]) tune__keep(s, &s->cfgs[i], s->so_paths[i], s->fn_names[i]);
  s->time_run += th_now_mono() - t0;
  s->stage = TUNE_STAGE_UPDATE;
  return TH_OK;
}

static th_status tune__update(tune_session_t *s) {
  if (s->verifying) return tune__verify_update(s);
  tune_task *t = &s->tasks[s->cur];
  tune_task_progress *p = &s->prog[s->cur];
  double costs[1024];
  th_status rc = TH_OK;
  for (int i = 0; i < s->n && rc == TH_OK; i++) {
    tune_result *r = &s->res[i];
    store_record rec;
    tune__record(s, t, &s->cfgs[i], r, s->o.tuner, th_now_wall(), &rec);
    rc = store_record_add(s->st, &rec);
    costs[i] = rec.cost_mean_s;
    if (r->error_class == 0) {
      p->current_gflops = rec.gflops;
      tune__note_valid(p, rec.gflops, rec.cost_mean_s);
    } else {
      p->errors++;
    }
  }
  if (rc != TH_OK) return tune__fail(s, rc, "store: %s%s", store_errmsg(s->st), NULL);
  rc = tune_search_update(s->search, s->cfgs, costs, s->n);
  if (rc != TH_OK) return tune__fail(s, rc, "strategy: %s%s", tune_search_errmsg(s->search), NULL);
  s->trials_run += s->n;
  p->trials = tune_search_trials(s->search);
  s->stage = TUNE_STAGE_SELECT;
  return TH_OK;
}

th_status tune_session_run_stage(tune_session_t *s) {
  if (s->cancel) return TH_ERR_CANCELLED;
  switch (s->stage) {
    case TUNE_STAGE_TASK_START:
      return tune__task_start(s);
    case TUNE_STAGE_REF_BUILD:
      return tune__ref_build(s);
    case TUNE_STAGE_REF_SET:
      return tune__ref_set(s);
    case TUNE_STAGE_SELECT:
      return tune__select(s);
    case TUNE_STAGE_BUILD:
      return tune__build(s);
    case TUNE_STAGE_MEASURE:
      return tune__measure(s);
    case TUNE_STAGE_UPDATE:
      return tune__update(s);
    case TUNE_STAGE_DONE:
      return TH_OK;
  }
  return TH_ERR_INTERNAL;
}

th_status tune_session_run_all(tune_session_t *s, void (*cb)(void *ctx, const tune_session_t *s), void *ctx) {
  th_status rc = TH_OK;
  while (rc == TH_OK && tune_session_next_stage(s) != TUNE_RES_DONE) {
    rc = tune_session_run_stage(s);
    if (cb) cb(ctx, s);
  }
  if (rc == TH_OK && s->cancel) rc = TH_ERR_CANCELLED;
  return rc;
}

void tune_session_progress(const tune_session_t *s, tune_progress *out) {
  memset(out, 0, sizeof *out);
  snprintf(out->tuner, sizeof out->tuner, "%s", s->o.tuner);
  out->ntasks = s->ntasks;
  out->current = s->cur;
  out->stage = tune__stage_names[s->stage];
  out->elapsed_s = th_now_mono() - s->t0;
  out->tasks = s->prog;
  int64_t left = 0;
  for (int i = 0; i < s->ntasks; i++) {
    const tune_task_progress *p = &s->prog[i];
    out->trials_done += p->trials;
    out->trials_total += p->budget;
    if (i >= s->cur && strcmp(p->state, "pending") == 0) left += p->budget > p->trials ? p->budget - p->trials : 0;
    if (i == s->cur && strcmp(p->state, "tuning") == 0) left += p->budget > p->trials ? p->budget - p->trials : 0;
  }
  /* ETA from this session's own pace (build + measure per trial); an upper bound, as early stopping and
   * skipped tasks only shorten it. */
  out->eta_s = s->trials_run > 0 ? out->elapsed_s / (double)s->trials_run * (double)left : -1;
  if (s->stage == TUNE_STAGE_DONE) out->eta_s = 0;
}

/* ---- config lookup for builds ---- */
typedef struct tune_lookup_ctx {
  const tc_workload *wl;
  const tc_space *space;
  const tc_backend_target *tgt;
  float shape[TUNE_SHAPE_FEATURES];
  const char *key;
  tune_wl_best best[TUNE_MAX_OTHERS]; /* the other workloads of the template */
  int nbest;
} tune_lookup_ctx;

static th_status tune__lookup_valid(const tc_workload *wl, const tc_backend_target *tgt, const tc_space *space,
                                    const tc_config *cfg) {
  return tc_backend_valid(tgt, wl, space, cfg, NULL, 0);
}

static int tune__lookup_cb(void *ctx, const store_record *r) {
  tune_lookup_ctx *c = ctx;
  if (strcmp(r->workload_key, c->key) == 0) return 0;
  int was = c->nbest;
  tune_wl_best *e = tune__best_fold(c->best, &c->nbest, TUNE_MAX_OTHERS, r);
  if (e && c->nbest > was) {
    float sh[TUNE_SHAPE_FEATURES];
    tune_shape_features(r->workload_key, sh);
    e->dist = tune__shape_dist(sh, c->shape);
  }
  return 0;
}

th_status tune_lookup_config(store_t *st, const char *target, const tc_workload *wl, const tc_space *space,
                             tc_config *cfg, char source[16]) {
  if (!st || !target || !wl || !space || !cfg || !source) return TH_ERR_INVALID;
  char key[512];
  th_status rc = tc_workload_key(wl, key, sizeof key);
  if (rc != TH_OK) return rc;
  /* Records of a target only ever serve that target: "cuda -arch=sm_XX" validates with the GPU templates
   * for that arch, "llvm -mcpu=NAME" with that CPU's, anything else (a CPU this LLVM does not know) with the
   * host CPU's, which finds no records of that target and so gives the fallback. */
  tc_backend_target tgt;
  rc = tc_backend_target_parse(target, &tgt);
  if (rc == TH_ERR_INVALID || rc == TH_ERR_NOT_FOUND)
    rc = tc_backend_target_init(tc_backend_default(), NULL, &tgt, NULL, 0);
  if (rc != TH_OK) return rc;
  store_record best;
  rc = store_record_best(st, key, target, &best);
  if (rc == TH_OK) {
    tc_config c;
    if (tune_config_from_text(space, best.config, &c) == TH_OK &&
        tune__lookup_valid(wl, &tgt, space, &c) == TH_OK) {
      *cfg = c;
      snprintf(source, 16, "tuned");
      return TH_OK;
    }
  } else if (rc != TH_ERR_NOT_FOUND) {
    return rc;
  }
  tune_lookup_ctx *c = calloc(1, sizeof *c);
  if (!c) return TH_ERR_NOMEM;
  c->wl = wl;
  c->space = space;
  c->tgt = &tgt;
  c->key = key;
  tune_shape_features(key, c->shape);
  rc = store_record_each(st, tc_kernel_name(wl->kernel), target, tune__lookup_cb, c);
  tc_config fb;
  th_status frc = tc_backend_fallback(&tgt, wl, space, &fb);
  /* the nearest workload (then the fastest) whose applied config is valid here and uses the algorithm the
   * fallback picks for this workload (a Winograd config that won on a 56x56 map loses to the direct path
   * on a 7x7 one with large weights, and the other knobs mean different things per algorithm) */
  int found = 0;
  tune__best_sort(c->best, c->nbest);
  for (int i = 0; rc == TH_OK && frc == TH_OK && !found && i < c->nbest; i++) {
    tc_config x;
    found = c->best[i].cost < 1e18 && tune_config_from_text_nearest(space, c->best[i].config, &x, NULL) == TH_OK &&
            tune__lookup_valid(wl, &tgt, space, &x) == TH_OK;
    for (int k = 0; found && k < space->nknobs; k++)
      if (space->knobs[k].algo && x.idx[k] != fb.idx[k]) found = 0;
    if (found) *cfg = x;
  }
  free(c);
  if (rc != TH_OK) return rc;
  if (found) {
    snprintf(source, 16, "transferred");
    return TH_OK;
  }
  if (frc == TH_OK) {
    *cfg = fb;
    snprintf(source, 16, "fallback");
  }
  return frc;
}

th_status tune_build_lookup(void *ctx, const tc_workload *wl, const char *workload_key, const tc_space *space,
                            tc_config *cfg, char source[16]) {
  const tune_build_lookup_ctx *c = ctx;
  (void)workload_key;
  tc_config out;
  char src[16];
  th_status rc = tune_lookup_config(c->st, c->target, wl, space, &out, src);
  if (rc != TH_OK) return rc;
  if (strcmp(src, "fallback") == 0) return TH_ERR_NOT_FOUND;
  *cfg = out;
  memcpy(source, src, 16);
  return TH_OK;
}

/* The session's target: the host CPU for llvm; for a backend that times candidates on its device, the worker
 * is started first and asked for the device (the tuner process itself never initialises a driver: a forked
 * worker could not use it), and arch NULL or "" means the device's. */
static th_status tune__prepare(const tc_backend *b, const char *arch, const tune_options *o, tc_backend_target *t,
                               tune_measurer_t **m) {
  tune__new_err[0] = 0;
  *m = NULL;
  if (!o) return TH_ERR_INVALID;
  if (!b) b = tc_backend_default();
  char err[256] = "";
  th_status rc = TH_OK;
  tc_device dev;
  memset(&dev, 0, sizeof dev);
  if (tc_backend_measure_kind(b) == TC_MEASURE_DEVICE) {
    rc = tune_measurer_new(&o->measure, m);
    if (rc != TH_OK) {
      snprintf(tune__new_err, sizeof tune__new_err, "cannot start the measurement worker");
      return rc;
    }
    rc = tune_measurer_device(*m, b, &dev, err, sizeof err);
  }
  if (rc == TH_OK) rc = tc_backend_target_init(b, arch && *arch ? arch : dev.arch, t, err, sizeof err);
  if (rc != TH_OK) {
    snprintf(tune__new_err, sizeof tune__new_err, "%s", err[0] ? err : th_status_str(rc));
    tune_measurer_free(*m);
    *m = NULL;
  }
  return rc;
}

th_status tune_session_new_workloads(store_t *st, const tc_backend *b, const char *arch, const tc_workload *wls,
                                     const int *weights, int n, const tune_options *o, tune_session_t **out) {
  if (!st || !wls || n < 1 || !o || !out) return TH_ERR_INVALID;
  tc_backend_target t;
  tune_measurer_t *m = NULL;
  th_status rc = tune__prepare(b, arch, o, &t, &m);
  if (rc != TH_OK) return rc;
  rc = tune__session_new(st, &t, wls, weights, n, o, m, out);
  if (rc != TH_OK && !tune__new_err[0]) snprintf(tune__new_err, sizeof tune__new_err, "%s", th_status_str(rc));
  return rc;
}

th_status tune_session_new(store_t *st, const tc_backend *b, const char *arch, const tc_netsrc *net, int batch,
                           const tune_options *o, tune_session_t **out) {
  if (!st || !net || !net->name || batch < 1 || !o || !out) return TH_ERR_INVALID;
  tc_backend_target t;
  tune_measurer_t *m = NULL;
  th_status rc = tune__prepare(b, arch, o, &t, &m);
  if (rc != TH_OK) return rc;
  /* the arch is known now (a device's, when none was named): a tf32 session needs one that takes it */
  if (tc_precision_check(tc_backend_name(t.backend), t.str, tc_precision_name(o->precision), NULL, tune__new_err,
                         sizeof tune__new_err) != TH_OK) {
    tune_measurer_free(m);
    return TH_ERR_INVALID;
  }
  tc_task *tasks = NULL;
  int n = 0;
  rc = tc_network_tasks(&t, net, batch, &tasks, &n);
  if (rc == TH_OK) rc = tc_tasks_take_precision(tasks, n, (tc_precision)o->precision);
  tc_workload *wls = rc == TH_OK ? malloc(sizeof *wls * (size_t)(n > 0 ? n : 1)) : NULL;
  int *weights = rc == TH_OK ? malloc(sizeof *weights * (size_t)(n > 0 ? n : 1)) : NULL;
  int k = 0;
  if (rc == TH_OK && (!wls || !weights)) rc = TH_ERR_NOMEM;
  for (int i = 0; rc == TH_OK && i < n; i++) {
    /* Only tunable tasks: a one-point space (layout, concat) has nothing to search. */
    tc_space sp;
    if (tc_backend_space(&t, &tasks[i].wl, &sp) != TH_OK || tc_space_size(&sp) < 2) continue;
    wls[k] = tasks[i].wl;
    weights[k++] = tasks[i].count;
  }
  if (rc == TH_OK && k == 0) rc = TH_ERR_NOT_FOUND;
  if (rc == TH_OK) {
    rc = tune__session_new(st, &t, wls, weights, k, o, m, out);
    m = NULL; /* owned (or freed) by tune__session_new */
  }
  if (rc != TH_OK && !tune__new_err[0])
    snprintf(tune__new_err, sizeof tune__new_err, "%s: %s", net->name, th_status_str(rc));
  tune_measurer_free(m);
  free(tasks);
  free(wls);
  free(weights);
  return rc;
}

int64_t tune_session_task_bytes(const tune_session_t *s) {
  if (!s || s->cur < 0 || s->cur >= s->ntasks) return 0;
  tune_layout lay;
  if (tune_task_layout(&s->tasks[s->cur], &lay) != TH_OK) return 0;
  int64_t bytes = 0;
  for (int i = 0; i < lay.nbufs; i++) bytes += lay.nelems[i] * (lay.elem_bytes[i] == 8 ? 8 : 4);
  return 3 * bytes;
}
