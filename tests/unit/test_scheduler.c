/* Unit tests of the load-aware scheduler (tuner/scheduler.c). The pure pick is driven by a discrete-event
 * simulation with simulated stage durations: several jobs of different priorities, each a sequence of stages
 * (quick build, select/build/measure/update rounds, rebuild). Invariants are checked at every start: the CPU
 * pool is never oversubscribed, the CPU measurement slot is never held while a CPU build runs, a GPU-device
 * measurement may overlap builds, no job waits unboundedly, and higher priority runs first. The runtime is then
 * run for real with a staged test builder over a real store: stage exclusivity under threads, cancel between
 * stages, and a shutdown that leaves the job for the next start. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scheduler.h"
#include "store.h"
#include "th_test.h"
#include "th_test_store.h"
#include "th_util.h"

/* ---- the simulation ---- */

typedef struct sim_stage {
  int kind, cpu_min, cpu_max, device;
  double dur;
} sim_stage;

typedef struct sim_job {
  int priority;
  double arrive;
  sim_stage st[64];
  int n, next;
  int running, grant;
  double end, ready_at, max_wait, finished_at, first_start;
} sim_job;

typedef struct sim {
  tune_sched_resources r;
  sim_job j[16];
  int nj;
  double now;
  /* observations */
  int cpu_measure_with_build; /* violations */
  int oversubscribed;
  int gpu_overlap; /* a GPU measurement ran alongside a CPU build */
  int device_double;
} sim;

/* A tuning job: quick, rounds x (select, build, measure, update), rebuild. device: 0 = cpu, 1 = cuda:0. */
static void sim_tuning_job(sim_job *j, int priority, int rounds, int device, double build_s, double measure_s) {
  memset(j, 0, sizeof *j);
  j->priority = priority;
  j->first_start = -1;
  j->st[j->n++] = (sim_stage){TUNE_SK_QUICK, -1, -1, 0, 3.0};
  for (int i = 0; i < rounds && j->n < 60; i++) {
    j->st[j->n++] = (sim_stage){TUNE_SK_SELECT, 0, 0, -1, 0.05};
    j->st[j->n++] = (sim_stage){TUNE_SK_BUILD, 1, -1, -1, build_s};
    j->st[j->n++] = (sim_stage){TUNE_SK_MEASURE, 0, 0, device, measure_s};
    j->st[j->n++] = (sim_stage){TUNE_SK_UPDATE, 0, 0, -1, 0.05};
  }
  j->st[j->n++] = (sim_stage){TUNE_SK_REBUILD, -1, -1, 0, 3.0};
}

static void sim_init(sim *s, int cpu_total) {
  memset(s, 0, sizeof *s);
  s->r.cpu_total = cpu_total;
  s->r.ndevices = 2;
  s->r.device_is_cpu[0] = 1;
}

static int sim_is_cpu_measure(const sim *s, const sim_stage *x) {
  return x->device >= 0 && s->r.device_is_cpu[x->device];
}

static void sim_check(sim *s) {
  int cpu_measure = 0, builds = 0, gpu = 0, busy = 0, dev_users[2] = {0, 0};
  for (int i = 0; i < s->nj; i++) {
    sim_job *j = &s->j[i];
    if (!j->running) continue;
    sim_stage *x = &j->st[j->next];
    busy += j->grant;
    if (x->device >= 0) dev_users[x->device]++;
    if (sim_is_cpu_measure(s, x)) cpu_measure++;
    else if (j->grant > 0) builds++;
    if (x->device == 1) gpu++;
  }
  if (busy > s->r.cpu_total || busy != s->r.cpu_busy) s->oversubscribed++;
  if (cpu_measure && builds) s->cpu_measure_with_build++;
  if (dev_users[0] > 1 || dev_users[1] > 1) s->device_double++;
  if (gpu && builds) s->gpu_overlap = 1;
}

/* Runs until every job is done (or a time limit); returns the end time. */
static double sim_run(sim *s, double limit, double aging_s) {
  tune_sched_policy pol = {aging_s};
  for (int i = 0; i < s->nj; i++) s->j[i].ready_at = s->j[i].arrive;
  for (;;) {
    /* start what may start now */
    for (;;) {
      tune_sched_cand c[16];
      int who[16], n = 0;
      for (int i = 0; i < s->nj; i++) {
        sim_job *j = &s->j[i];
        if (j->running || j->next >= j->n || j->arrive > s->now) continue;
        sim_stage *x = &j->st[j->next];
        c[n] = (tune_sched_cand){.job = i + 1, .priority = j->priority, .ready_at = j->ready_at,
                                 .cpu_min = x->cpu_min, .cpu_max = x->cpu_max, .device = x->device,
                                 .estimate_s = x->dur};
        who[n++] = i;
      }
      int grant = 0;
      int k = tune_sched_pick(&s->r, c, n, s->now, &pol, &grant);
      if (k < 0) break;
      sim_job *j = &s->j[who[k]];
      sim_stage *x = &j->st[j->next];
      double wait = s->now - j->ready_at;
      if (wait > j->max_wait) j->max_wait = wait;
      if (j->first_start < 0) j->first_start = s->now;
      j->running = 1;
      j->grant = grant;
      /* a build with more slots goes faster (ideal speed-up, as the candidates are independent) */
      double d = x->dur;
      if (x->kind == TUNE_SK_BUILD && grant > 1) d = d / grant;
      j->end = s->now + d;
      s->r.cpu_busy += grant;
      if (grant > 0 && j->end > s->r.cpu_free_at) s->r.cpu_free_at = j->end;
      if (x->device >= 0) {
        s->r.device_busy[x->device] = 1;
        s->r.device_free_at[x->device] = j->end;
      }
      sim_check(s);
    }
    /* advance to the next end */
    double t = 1e300;
    for (int i = 0; i < s->nj; i++) {
      if (s->j[i].running && s->j[i].end < t) t = s->j[i].end;
      if (!s->j[i].running && s->j[i].next < s->j[i].n && s->j[i].arrive > s->now && s->j[i].arrive < t)
        t = s->j[i].arrive;
    }
    if (t == 1e300 || t > limit) return s->now;
    s->now = t;
    for (int i = 0; i < s->nj; i++) {
      sim_job *j = &s->j[i];
      if (!j->running || j->end > s->now) continue;
      sim_stage *x = &j->st[j->next];
      j->running = 0;
      s->r.cpu_busy -= j->grant;
      if (s->r.cpu_busy == 0) s->r.cpu_free_at = s->now;
      if (x->device >= 0) s->r.device_busy[x->device] = 0;
      j->next++;
      j->ready_at = s->now;
      if (j->next == j->n) j->finished_at = s->now;
    }
  }
}

TH_TEST(pick_exclusive_cpu_measurement) {
  sim s;
  sim_init(&s, 2);
  for (int i = 0; i < 4; i++) sim_tuning_job(&s.j[s.nj++], i % 2, 8, 0, 1.0 + i * 0.3, 0.7);
  double end = sim_run(&s, 1e5, 5.0);
  CHECK_EQ_INT(s.oversubscribed, 0);
  CHECK_EQ_INT(s.cpu_measure_with_build, 0);
  CHECK_EQ_INT(s.device_double, 0);
  for (int i = 0; i < s.nj; i++) CHECK_EQ_INT(s.j[i].next, s.j[i].n); /* all finished */
  CHECK(end > 0);
  return 0;
}

TH_TEST(pick_gpu_measure_overlaps_builds) {
  sim s;
  sim_init(&s, 2);
  sim_tuning_job(&s.j[s.nj++], 0, 10, 1, 1.0, 1.0); /* measures on cuda:0 */
  sim_tuning_job(&s.j[s.nj++], 0, 10, 1, 1.0, 1.0);
  sim_tuning_job(&s.j[s.nj++], 0, 10, 0, 1.0, 0.5); /* measures on the CPU */
  sim_run(&s, 1e5, 5.0);
  CHECK_EQ_INT(s.cpu_measure_with_build, 0);
  CHECK_EQ_INT(s.device_double, 0);
  CHECK_EQ_INT(s.oversubscribed, 0);
  CHECK(s.gpu_overlap); /* a GPU measurement ran while the CPU built */
  for (int i = 0; i < s.nj; i++) CHECK_EQ_INT(s.j[i].next, s.j[i].n);
  return 0;
}

/* The memory budget: a GPU measurement holding 6 GiB of an 8 GiB budget keeps a 4 GiB CPU build waiting even
 * though the CPU pool is free, and a 1 GiB one may start; a build larger than the whole budget starts once no
 * memory-holding stage runs, and a better stage waiting on memory is not overtaken by a memory-holding one. */
TH_TEST(pick_memory_budget) {
  const int64_t G = (int64_t)1 << 30;
  tune_sched_resources r = {.cpu_total = 2, .ndevices = 2, .device_is_cpu = {1, 0}, .mem_budget = 8 * G};
  r.device_busy[1] = 1;
  r.mem_busy = 6 * G; /* the running cuda measurement */
  tune_sched_cand big = {.job = 1, .priority = 5, .cpu_min = -1, .cpu_max = -1, .device = 0, .estimate_s = 10,
                         .mem_bytes = 4 * G};
  tune_sched_cand small = {.job = 2, .priority = 0, .cpu_min = 1, .cpu_max = 1, .device = -1, .estimate_s = 1,
                           .mem_bytes = 1 * G};
  /* a stage that needs neither CPU slots nor memory (big also reserves the CPU pool it waits with) */
  tune_sched_cand none = {.job = 3, .priority = 0, .cpu_min = 0, .cpu_max = 0, .device = -1, .estimate_s = 1};
  int grant = 0;
  CHECK_EQ_INT(tune_sched_pick(&r, &big, 1, 0.0, NULL, &grant), -1); /* 6 + 4 > 8 */
  CHECK_EQ_INT(tune_sched_pick(&r, &small, 1, 0.0, NULL, &grant), 0); /* 6 + 1 fits */
  tune_sched_cand both[3] = {big, small, none};
  /* big waits for memory: small (which holds memory) may not overtake it; none (no memory) may */
  CHECK_EQ_INT(tune_sched_pick(&r, both, 2, 0.0, NULL, &grant), -1);
  CHECK_EQ_INT(tune_sched_pick(&r, both, 3, 0.0, NULL, &grant), 2);
  /* the measurement ends: big starts alone, even at 12 GiB, more than the budget */
  r.device_busy[1] = 0;
  r.mem_busy = 0;
  big.mem_bytes = 12 * G;
  CHECK_EQ_INT(tune_sched_pick(&r, &big, 1, 0.0, NULL, &grant), 0);
  CHECK_EQ_INT(grant, 2);
  /* no budget: memory never blocks */
  r.mem_budget = 0;
  r.mem_busy = 100 * G;
  CHECK_EQ_INT(tune_sched_pick(&r, &small, 1, 0.0, NULL, &grant), 0);
  return 0;
}

TH_TEST(pick_higher_priority_first) {
  sim s;
  sim_init(&s, 2);
  sim_tuning_job(&s.j[s.nj++], 0, 6, 0, 1.0, 0.5);
  sim_tuning_job(&s.j[s.nj++], 10, 6, 0, 1.0, 0.5); /* same work, higher priority, same arrival */
  sim_run(&s, 1e5, 1000.0);                         /* little aging: priority decides */
  CHECK(s.j[1].first_start <= s.j[0].first_start);
  CHECK(s.j[1].finished_at < s.j[0].finished_at);
  /* and the pure pick alone: equal resources, the higher priority wins */
  tune_sched_resources r = {.cpu_total = 2, .ndevices = 1, .device_is_cpu = {1}};
  tune_sched_cand c[2] = {{.job = 1, .priority = 0, .cpu_min = 1, .cpu_max = -1, .device = -1, .estimate_s = 1},
                          {.job = 2, .priority = 5, .cpu_min = 1, .cpu_max = -1, .device = -1, .estimate_s = 1}};
  int grant = 0;
  CHECK_EQ_INT(tune_sched_pick(&r, c, 2, 0.0, NULL, &grant), 1);
  CHECK_EQ_INT(grant, 2);
  return 0;
}

TH_TEST(pick_no_starvation) {
  /* a low-priority job among a stream of high-priority ones: aging bounds its wait */
  sim s;
  sim_init(&s, 2);
  for (int i = 0; i < 5; i++) {
    sim_tuning_job(&s.j[s.nj], 20, 15, 0, 1.0, 0.6);
    s.j[s.nj++].arrive = i * 5.0;
  }
  sim_tuning_job(&s.j[s.nj++], 0, 3, 0, 1.0, 0.6);
  double aging = 2.0;
  sim_run(&s, 1e5, aging);
  sim_job *low = &s.j[s.nj - 1];
  CHECK_EQ_INT(low->next, low->n);
  /* bound: the priority gap in aging time, plus the longest stage that may hold the resources */
  double bound = 20 * aging + 20.0;
  fprintf(stderr, "low-priority max wait %.1f s (bound %.1f)\n", low->max_wait, bound);
  CHECK(low->max_wait <= bound);
  CHECK(low->finished_at < s.j[0].finished_at + 1e9);
  /* without aging (huge aging_s) the same low job waits for the whole high-priority stream */
  sim s2;
  sim_init(&s2, 2);
  for (int i = 0; i < 5; i++) {
    sim_tuning_job(&s2.j[s2.nj], 20, 15, 0, 1.0, 0.6);
    s2.j[s2.nj++].arrive = i * 5.0;
  }
  sim_tuning_job(&s2.j[s2.nj++], 0, 3, 0, 1.0, 0.6);
  sim_run(&s2, 1e5, 1e9);
  fprintf(stderr, "without aging: %.1f s\n", s2.j[s2.nj - 1].max_wait);
  CHECK(s2.j[s2.nj - 1].max_wait > low->max_wait);
  return 0;
}

TH_TEST(pick_reservation_and_backfill) {
  /* a CPU measurement waits for a running build; a long build may not jump in front of it, a short
   * cheap stage may */
  tune_sched_resources r = {.cpu_total = 2, .cpu_busy = 1, .cpu_free_at = 10.0, .ndevices = 1,
                            .device_is_cpu = {1}};
  tune_sched_cand c[3] = {
      {.job = 1, .priority = 5, .ready_at = 0, .cpu_min = 0, .cpu_max = 0, .device = 0, .estimate_s = 1},
      {.job = 2, .priority = 0, .ready_at = 0, .cpu_min = 1, .cpu_max = -1, .device = -1, .estimate_s = 30},
      {.job = 3, .priority = 0, .ready_at = 0, .cpu_min = 0, .cpu_max = 0, .device = -1, .estimate_s = 0.1}};
  int grant = -1;
  CHECK_EQ_INT(tune_sched_pick(&r, c, 3, 5.0, NULL, &grant), 2); /* the select/update stage */
  CHECK_EQ_INT(grant, 0);
  CHECK_EQ_INT(tune_sched_pick(&r, c, 2, 5.0, NULL, &grant), -1); /* the long build waits */
  c[1].estimate_s = 2;                                              /* ends before the slot frees: backfill */
  CHECK_EQ_INT(tune_sched_pick(&r, c, 2, 5.0, NULL, &grant), 1);
  CHECK_EQ_INT(grant, 1);
  /* estimates learn */
  tune_sched_estimates e;
  tune_sched_estimates_init(&e);
  tune_sched_estimates_add(&e, TUNE_SK_BUILD, 4.0);
  CHECK(e.mean_s[TUNE_SK_BUILD] == 4.0);
  tune_sched_estimates_add(&e, TUNE_SK_BUILD, 2.0);
  CHECK(e.mean_s[TUNE_SK_BUILD] > 3.3 && e.mean_s[TUNE_SK_BUILD] < 3.5);
  return 0;
}

/* ---- the runtime with a staged test builder ---- */

typedef struct fake {
  pthread_mutex_t mu;
  int builds_running, cpu_measures_running, violations;
  int stages_total;
  int rounds;
  double stage_s;
} fake;

typedef struct fake_job {
  fake *f;
  const tune_build_env *env;
  int i; /* stage index: 0 quick, then rounds x (select, build, measure, update) */
} fake_job;

static int fk_supports(void *self, const char *fw, char *why, size_t n) {
  (void)self;
  if (!strcmp(fw, "llvm")) return 1;
  snprintf(why, n, "test builder: no %s", fw);
  return 0;
}

static th_status fk_open(void *self, const tune_build_env *env, void **job, char *err, size_t n) {
  (void)err;
  (void)n;
  fake_job *j = calloc(1, sizeof *j);
  j->f = self;
  j->env = env;
  *job = j;
  return TH_OK;
}

static int fk_next(void *self, void *job, tune_stage_desc *d) {
  fake *f = self;
  fake_job *j = job;
  int total = 1 + 4 * f->rounds;
  if (j->i >= total) return 0;
  memset(d, 0, sizeof *d);
  d->task = (j->i - 1) / 4;
  d->ntasks = f->rounds;
  if (j->i == 0) {
    d->kind = TUNE_SK_QUICK;
    d->cpu_min = d->cpu_max = -1;
    snprintf(d->device, sizeof d->device, "cpu");
    return 1;
  }
  int k = (j->i - 1) % 4;
  d->kind = k == 0 ? TUNE_SK_SELECT : k == 1 ? TUNE_SK_BUILD : k == 2 ? TUNE_SK_MEASURE : TUNE_SK_UPDATE;
  if (k == 1) {
    d->cpu_min = 1;
    d->cpu_max = -1;
  }
  if (k == 2) snprintf(d->device, sizeof d->device, "cpu");
  return 1;
}

static th_status fk_step(void *self, void *job, int cpu, char *err, size_t n) {
  (void)err;
  (void)n;
  fake *f = self;
  fake_job *j = job;
  tune_stage_desc d;
  fk_next(self, job, &d);
  int is_measure = d.kind == TUNE_SK_MEASURE || d.kind == TUNE_SK_QUICK;
  int is_build = d.kind == TUNE_SK_BUILD;
  pthread_mutex_lock(&f->mu);
  if (is_measure) {
    if (f->builds_running || f->cpu_measures_running) f->violations++;
    f->cpu_measures_running++;
  }
  if (is_build) {
    if (f->cpu_measures_running || cpu < 1) f->violations++;
    f->builds_running++;
  }
  f->stages_total++;
  pthread_mutex_unlock(&f->mu);
  tune_job_progress prog = {.phase = "tune", .has_build = 1};
  prog.build.stage = "fake";
  prog.build.done = j->i;
  prog.build.total = 1 + 4 * f->rounds;
  j->env->progress(j->env->ctx, "tune", &prog);
  usleep((useconds_t)(f->stage_s * 1e6));
  pthread_mutex_lock(&f->mu);
  if (is_measure) f->cpu_measures_running--;
  if (is_build) f->builds_running--;
  pthread_mutex_unlock(&f->mu);
  j->i++;
  return TH_OK;
}

static void fk_close(void *self, void *job) {
  (void)self;
  free(job);
}

static th_status fk_run(void *self, const tune_build_env *env, char *err, size_t n) {
  (void)self;
  (void)env;
  snprintf(err, n, "unused");
  return TH_ERR_INTERNAL;
}

static store_key key_of(const char *net) {
  store_key k;
  memset(&k, 0, sizeof k);
  snprintf(k.framework, sizeof k.framework, "llvm");
  snprintf(k.network, sizeof k.network, "%s", net);
  k.batch = 1;
  snprintf(k.target, sizeof k.target, "test");
  snprintf(k.compiler_version, sizeof k.compiler_version, "0");
  return k;
}

static store_t *open_tmp(void) {
  char d[] = "/tmp/th_sched_XXXXXX"; /* the store keeps its own copy of the path */
  CHECK(mkdtemp(d) != NULL);
  store_t *st = NULL;
  CHECK(th_test_store_open(d, &st) == TH_OK);
  return st;
}

static int job_state(store_t *st, int64_t id) {
  store_job j;
  if (store_job_get(st, id, &j) != TH_OK) return -1;
  int s = (int)j.state;
  store_job_clear(&j);
  return s;
}

typedef struct ev_log {
  pthread_mutex_t mu;
  int stage, progress, done;
} ev_log;

static void on_ev(void *ctx, const tune_event *ev) {
  ev_log *l = ctx;
  pthread_mutex_lock(&l->mu);
  if (ev->kind == TUNE_EV_STAGE) l->stage++;
  if (ev->kind == TUNE_EV_PROGRESS) l->progress++;
  if (ev->kind == TUNE_EV_DONE) l->done++;
  pthread_mutex_unlock(&l->mu);
}

TH_TEST(runtime_interleaves_exclusively) {
  store_t *st = open_tmp();
  fake f = {.mu = PTHREAD_MUTEX_INITIALIZER, .rounds = 4, .stage_s = 0.02};
  tune_builder b = {"fake", fk_supports, fk_run, &f, fk_open, fk_next, fk_step, fk_close};
  ev_log log = {.mu = PTHREAD_MUTEX_INITIALIZER};
  tune_sched_opts o;
  tune_sched_opts_default(&o);
  o.cpu_slots = 2;
  o.max_jobs = 3;
  char root[1200];
  snprintf(root, sizeof root, "%s/work", store_data_dir(st));
  o.work_root = root;
  o.on_event = on_ev;
  o.listener_ctx = &log;
  int64_t ids[3];
  const char *nets[3] = {"resnet-18", "mobilenet", "squeezenet_v1.1"};
  for (int i = 0; i < 3; i++) {
    store_key k = key_of(nets[i]);
    int created;
    CHECK(store_job_enqueue(st, &k, "tune", "{}", i, &ids[i], &created) == TH_OK);
  }
  tune_sched *s = NULL;
  CHECK(tune_sched_start(st, &b, &o, &s) == TH_OK);
  int max_admitted = 0;
  for (int t = 0; t < 400; t++) {
    int a = tune_sched_admitted(s);
    if (a > max_admitted) max_admitted = a;
    int done = 0;
    for (int i = 0; i < 3; i++) done += job_state(st, ids[i]) == STORE_JOB_SUCCEEDED;
    if (done == 3) break;
    usleep(20000);
  }
  for (int i = 0; i < 3; i++) CHECK_EQ_INT(job_state(st, ids[i]), STORE_JOB_SUCCEEDED);
  CHECK(max_admitted >= 2);
  CHECK_EQ_INT(f.violations, 0);
  CHECK_EQ_INT(f.stages_total, 3 * (1 + 4 * f.rounds));
  tune_sched_info info;
  CHECK(tune_sched_info_get(s, &info) == TH_OK);
  CHECK_STR(tune_sched_kind_str(TUNE_SK_MEASURE), "measure");
  CHECK(info.estimates.samples[TUNE_SK_MEASURE] > 0 && info.estimates.mean_s[TUNE_SK_MEASURE] > 0);
  CHECK_EQ_INT(info.cpu_total, 2);
  tune_sched_info_free(&info);
  tune_sched_stop(s);
  CHECK_EQ_INT(log.done, 3);
  CHECK_EQ_INT(log.stage, 3 * (1 + 4 * f.rounds));
  CHECK(log.progress >= log.stage);
  store_close(st);
  return 0;
}

TH_TEST(runtime_cancel_between_stages) {
  store_t *st = open_tmp();
  fake f = {.mu = PTHREAD_MUTEX_INITIALIZER, .rounds = 200, .stage_s = 0.02};
  tune_builder b = {"fake", fk_supports, fk_run, &f, fk_open, fk_next, fk_step, fk_close};
  tune_sched_opts o;
  tune_sched_opts_default(&o);
  o.cpu_slots = 2;
  char root[1200];
  snprintf(root, sizeof root, "%s/work", store_data_dir(st));
  o.work_root = root;
  store_key k = key_of("vgg-11");
  int64_t id;
  int created;
  CHECK(store_job_enqueue(st, &k, "tune", "{}", 0, &id, &created) == TH_OK);
  tune_sched *s = NULL;
  CHECK(tune_sched_start(st, &b, &o, &s) == TH_OK);
  while (job_state(st, id) != STORE_JOB_RUNNING) usleep(10000);
  usleep(200000);
  double t0 = th_now_mono();
  CHECK(store_job_cancel(st, id) == TH_OK);
  while (job_state(st, id) == STORE_JOB_RUNNING && th_now_mono() - t0 < 5) usleep(10000);
  CHECK_EQ_INT(job_state(st, id), STORE_JOB_CANCELLED);
  CHECK(th_now_mono() - t0 < 1.0); /* at the next stage boundary */
  pthread_mutex_lock(&f.mu);
  int ran = f.stages_total;
  pthread_mutex_unlock(&f.mu);
  CHECK(ran > 1 && ran < 1 + 4 * f.rounds);
  usleep(100000);
  CHECK_EQ_INT(f.stages_total, ran); /* nothing more ran */
  /* a shutdown mid-job hands it back to the queue at once, for the next start (or another worker) */
  CHECK(store_job_enqueue(st, &k, "tune", "{}", 0, &id, &created) == TH_OK);
  tune_sched_notify(s);
  while (job_state(st, id) != STORE_JOB_RUNNING) usleep(10000);
  usleep(100000);
  tune_sched_stop(s);
  CHECK_EQ_INT(job_state(st, id), STORE_JOB_QUEUED);
  store_job j;
  CHECK(store_job_get(st, id, &j) == TH_OK);
  CHECK(strstr(j.stage, "requeued: worker ") && strstr(j.stage, " stopped") && j.worker[0] == '\0');
  store_job_clear(&j);
  int requeued = 0;
  CHECK(store_recover(st, &requeued, NULL) == TH_OK);
  CHECK_EQ_INT(requeued, 0);
  store_close(st);
  return 0;
}
