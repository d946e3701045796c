/* Verification: before a task ends, its best configs and its fallback are timed again side by side, from
 * the libraries its trials already built (kept by the session), and the verified times are what the
 * records say. Also the row of one trial (tune__record), written by the update stage. */
#include "tune_job_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "th_alloc.h"
#include "th_util.h"
#include "tune_space.h"
#include "tune_task.h"

/* The row of one trial (or verification) of task t. */
void tune__record(const tune_session_t *s, const tune_task *t, const tc_config *cfg, const tune_result *r,
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
void tune__unlink_batch(const tune_session_t *s) {
  for (int i = 0; i < s->n; i++)
    if (s->so_paths[i][0] && (i == 0 || strcmp(s->so_paths[i], s->so_paths[i - 1]) != 0)) unlink(s->so_paths[i]);
}

/* Remembers a built candidate of the current task (its library stays on disk until tune__kept_clear). */
void tune__keep(tune_session_t *s, const tc_config *cfg, const char *so, const char *fn) {
  if (s->nkept == s->capkept) {
    int cap = s->capkept ? s->capkept * 2 : 64;
    tune_built *k = th_realloc(s->kept, sizeof *k * (size_t)cap);
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

const tune_built *tune__kept_find(const tune_session_t *s, const tc_config *cfg) {
  char text[1024];
  tc_config_str(&s->tasks[s->cur].space, cfg, text, sizeof text);
  for (int i = 0; i < s->nkept; i++)
    if (strcmp(s->kept[i].config, text) == 0 && access(s->kept[i].so, R_OK) == 0) return &s->kept[i];
  return NULL;
}

/* Deletes the kept libraries: trials (several candidates share one), the reference, verification builds. */
void tune__kept_clear(tune_session_t *s) {
  for (int i = 0; i < s->nkept; i++)
    if (i == 0 || strcmp(s->kept[i].so, s->kept[i - 1].so) != 0) unlink(s->kept[i].so);
  s->nkept = 0;
}

int tune__verifies(const tune_session_t *s) {
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
int tune__verify_start(tune_session_t *s) {
  if (!tune__verifies(s)) return 0;
  tune_task *t = &s->tasks[s->cur];
  tune_top_ctx *c = th_calloc(1, sizeof *c);
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
th_status tune__verify_measure(tune_session_t *s) {
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
th_status tune__verify_update(tune_session_t *s) {
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
