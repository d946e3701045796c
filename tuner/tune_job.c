/* The tuning session state machine (see tune_job.h): a session is created for a network's tasks, runs
 * one bounded stage at a time (start a task, build and set the reference, select, build, measure, update)
 * and reports its progress. The stages' heavier parts live beside it: verification (tune_verify.c) and
 * the task start with its records, resume and transfer (tune_transfer.c). */
#include "tune_job_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"
#include "tc/tc.h"
#include "th_alloc.h"
#include "th_util.h"
#include "tune_task.h"

static const char *const tune__stage_names[] = {"start task", "build reference", "reference", "select",
                                               "build",      "measure",         "update",    "done"};

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

th_status tune__fail(tune_session_t *s, th_status rc, const char *fmt, const char *a, const char *b) {
  snprintf(s->err, sizeof s->err, fmt, a ? a : "", b ? b : "");
  return rc;
}

static th_status tune__alloc_batch(tune_session_t *s) {
  int b = s->o.batch > s->o.verify_top + 1 ? s->o.batch : s->o.verify_top + 1;
  s->cfgs = th_calloc((size_t)b, sizeof *s->cfgs);
  s->so_paths = th_calloc((size_t)b, sizeof *s->so_paths);
  s->fn_names = th_calloc((size_t)b, sizeof *s->fn_names);
  s->err_class = th_calloc((size_t)b, sizeof *s->err_class);
  s->msgs = th_calloc((size_t)b, sizeof *s->msgs);
  s->res = th_calloc((size_t)b, sizeof *s->res);
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
  tune_session_t *s = th_calloc(1, sizeof *s);
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
    s->tasks = th_calloc((size_t)n, sizeof *s->tasks);
    s->prog = th_calloc((size_t)n, sizeof *s->prog);
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
th_status tune__measure_one(tune_session_t *s, int i, tune_result *r) {
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

void tune__task_failed(tune_session_t *s, const char *why) {
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
  tc_workload *wls = rc == TH_OK ? th_malloc(sizeof *wls * (size_t)(n > 0 ? n : 1)) : NULL;
  int *weights = rc == TH_OK ? th_malloc(sizeof *weights * (size_t)(n > 0 ? n : 1)) : NULL;
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
