/* The compiler-backed builder that registry jobs run. A "build" job compiles once with the best configs the
 * store has (tuned, else transferred, else fallback) and publishes. A "tune" job first publishes that quick
 * build as a version within seconds, then runs a tuning session over the network's tasks, reporting its
 * progress as a struct (server/ makes the job's progress document of it), and publishes the tuned build as the
 * next version when some layer of it is tuned (tb__build_publish says why not otherwise). The daemon's
 * scheduler drives the staged form (open/next/step/close), which runs the same job one stage at a time, each
 * stage naming the resource it needs; run() is the same job end to end. */
#include "builder.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "measure.h"
#include "tc/backend.h"
#include "tc/space.h"
#include "tc/tc.h"
#include "th_alloc.h"
#include "th_buf.h"
#include "th_log.h"
#include "th_util.h"
#include "tune_job.h"
#include "tune_net.h"

/* A backend's device on this server, described once per process (for cuda: dlopen of libcuda, cuInit): present
 * 1 when there is one. why gets the reason when not ("no CUDA device: ..." or "built without CUDA"). */
typedef struct tb__dev_info {
  int done, present;
  tc_device dev;
  char why[256];
} tb__dev_info;

static tb__dev_info tb__devs[TC_BACKEND_COUNT];
static pthread_mutex_t tb__devs_mu = PTHREAD_MUTEX_INITIALIZER;

int tune_device(const tc_backend *b, char *name, size_t name_n, char *arch, size_t arch_n, char *why,
                size_t why_n) {
  int i = tc_backend_index(b);
  if (i < 0) return 0;
  pthread_mutex_lock(&tb__devs_mu);
  tb__dev_info *d = &tb__devs[i];
  if (!d->done) {
    d->present = tc_backend_has_device(b, d->why, sizeof d->why) &&
                 tc_backend_device(b, &d->dev, d->why, sizeof d->why) == TH_OK;
    if (!d->present) {
      memset(&d->dev, 0, sizeof d->dev);
      tc_backend_target t; /* the default build target's arch without a device */
      if (tc_backend_target_init(b, NULL, &t, NULL, 0) == TH_OK)
        tc_backend_target_arch(t.str, d->dev.arch, sizeof d->dev.arch);
    }
    d->done = 1;
  }
  pthread_mutex_unlock(&tb__devs_mu);
  if (name) snprintf(name, name_n, "%s", d->dev.name);
  if (arch) snprintf(arch, arch_n, "%s", d->dev.arch);
  if (why) snprintf(why, why_n, "%s", d->present ? "" : d->why);
  return d->present;
}

th_status tune_target_for(const char *framework, char *out, size_t n) {
  const tc_backend *b = tc_backend_find(framework, NULL, 0);
  if (!b) return TH_ERR_INVALID;
  tc_backend_target t;
  th_status rc = tc_backend_target_init(b, NULL, &t, NULL, 0);
  if (rc == TH_OK) snprintf(out, n, "%s", t.str);
  return rc;
}

int tune_local_targets(char (*out)[256], int max) {
  int n = 0;
  for (int i = 0; tc_backend_at(i) && n < max; i++) {
    const tc_backend *b = tc_backend_at(i);
    /* a backend that times on a device measures only where there is one */
    if (tc_backend_measure_kind(b) == TC_MEASURE_DEVICE && !tune_device(b, NULL, 0, NULL, 0, NULL, 0)) continue;
    if (tune_target_for(tc_backend_name(b), out[n], sizeof out[n]) == TH_OK) n++;
  }
  return n;
}

/* The target names of b whose code this machine can run, ", "-separated, for messages. */
static void tb__runnable_names(const tc_backend *b, char *out, size_t n) {
  size_t len = (size_t)snprintf(out, n, "native");
  for (int k = 0; tc_backend_target_name_at(b, k) && len < n; k++) {
    const char *name = tc_backend_target_name_at(b, k);
    tc_backend_target t;
    if (tc_backend_target_init(b, name, &t, NULL, 0) == TH_OK &&
        tc_backend_target_runs_here(&t, NULL, 0))
      len += (size_t)snprintf(out + len, n - len, ", %s", name);
  }
}

th_status tune_target_measurable(const char *name, char *out, size_t n, char *err, size_t errn) {
  if (!name || !*name) { /* "name native, an x86-64 CPU or level, or sm_XX" */
    size_t len = (size_t)snprintf(err, errn, "an empty target name; name native");
    for (int i = 0; tc_backend_at(i) && len < errn; i++)
      len += (size_t)snprintf(err + len, errn - len, ", %s%s", tc_backend_at(i + 1) ? "" : "or ",
                              tc_backend_target_hint(tc_backend_at(i)));
    return TH_ERR_INVALID;
  }
  /* a concrete target string or a framework names its backend, a bare arch the backend that claims
   * it */
  char archbuf[64];
  const tc_backend *b = tc_backend_of_target_name(name, archbuf, sizeof archbuf);
  const char *arch = archbuf, *fw = tc_backend_name(b);
  /* a backend that times on a device measures only its device's own arch */
  int on_device = tc_backend_measure_kind(b) == TC_MEASURE_DEVICE;
  char why[512] = "", devarch[32] = "";
  if (on_device) {
    if (!tune_device(b, NULL, 0, devarch, sizeof devarch, why, sizeof why)) {
      snprintf(err, errn, "target %s: this machine cannot measure %s code: %s", name, fw, why);
      return TH_ERR_UNSUPPORTED;
    }
    if (!*arch) arch = devarch;
  }
  tc_backend_target t;
  char terr[TH_MSG_MAX] = "";
  th_status rc = tc_backend_target_init(b, arch, &t, terr, sizeof terr);
  if (rc != TH_OK) {
    snprintf(err, errn, "unknown target '%s': %s", name, terr[0] ? terr : th_status_str(rc));
    return rc == TH_ERR_COMPILE ? TH_ERR_INVALID : rc;
  }
  if (on_device && strcmp(arch, devarch) != 0) {
    snprintf(err, errn,
             "target %s: this machine's %s device is %s, so of %s targets it measures only %s",
             name, fw, devarch, fw, devarch);
    return TH_ERR_UNSUPPORTED;
  }
  if (!on_device && !tc_backend_target_runs_here(&t, why, sizeof why)) {
    char names[2048];
    tb__runnable_names(b, names, sizeof names);
    snprintf(err, errn, "target %s: %s; this machine can measure: %s", name, why, names);
    return TH_ERR_UNSUPPORTED;
  }
  snprintf(out, n, "%s", t.str);
  return TH_OK;
}

static int tb__supports(void *self, const char *framework, char *why, size_t n) {
  (void)self;
  const tc_backend *b = tc_backend_find(framework, why, n);
  if (!b) return 0;
  if (!tc_backend_can_build(b, why, n)) return 0;
  /* builds need only the compiler; a missing device limits tuning, which the job reports */
  if (!tune_device(b, NULL, 0, NULL, 0, why, n) && why[0])
    snprintf(why + strlen(why), n - strlen(why), "; %s bundles are built but not timed or tuned here", framework);
  return 1;
}

/* Whether the backend's candidates and bundles are timed on a device this server may lack (cuda). */
static int tb__on_device(const char *framework) {
  const tc_backend *b = tc_backend_find(framework, NULL, 0);
  return b && tc_backend_measure_kind(b) == TC_MEASURE_DEVICE;
}

static int tb__has_device(const char *framework, char *why, size_t n) {
  return tune_device(tc_backend_find(framework, NULL, 0), NULL, 0, NULL, 0, why, n);
}

/* The last progress of a tuning session, kept (tasks copied) after the session is freed, so the tuned rebuild
 * still reports it. */
typedef struct tb__snapshot {
  tune_progress p;
  tune_task_progress *tasks; /* owned */
  int cap;
} tb__snapshot;

/* Copies the session's progress into sn; the previous snapshot stays when out of memory. */
static void tb__snapshot_take(tb__snapshot *sn, const tune_session_t *s) {
  tune_progress p;
  tune_session_progress(s, &p);
  if (p.ntasks > sn->cap) {
    tune_task_progress *t = th_realloc(sn->tasks, (size_t)p.ntasks * sizeof *t);
    if (!t) return;
    sn->tasks = t;
    sn->cap = p.ntasks;
  }
  if (p.ntasks > 0) memcpy(sn->tasks, p.tasks, (size_t)p.ntasks * sizeof *sn->tasks);
  sn->p = p;
  sn->p.tasks = sn->tasks;
}

/* The snapshot's progress, or NULL when none was taken. */
static const tune_progress *tb__snapshot_of(const tb__snapshot *sn) {
  return sn->p.tasks ? &sn->p : NULL;
}

typedef struct tb__ctx {
  const tune_build_env *env;
  const char *phase;           /* "build" or "rebuild" */
  const tune_progress *base;   /* the tuning session's last progress (rebuild), kept so the job still shows it */
  double last;
} tb__ctx;

static int tb__progress(void *ctx, const char *stage, int done, int total) {
  tb__ctx *c = ctx;
  double now = th_now_mono();
  if (done == 0 || done == total || now - c->last > 0.5) {
    c->last = now;
    tune_job_progress p = {.session = c->base, .phase = c->phase, .has_build = 1};
    p.build.stage = stage;
    p.build.done = done;
    p.build.total = total;
    c->env->progress(c->env->ctx, c->phase, &p);
  }
  return c->env->cancelled(c->env->ctx);
}

/* Reads the median latency (< 0 when not timed) and the manifest's "tuned" (some layer runs a config tuned for
 * its own workload; compiler/bundle.c decides it from the layers' sources). The version's flag is taken from
 * here and nowhere else, so that the store, X-Tunehub-Tuned, ?tuned=1, /versions and the published event say
 * what the manifest says. TH_ERR_INTERNAL when the manifest is not JSON or has no boolean "tuned". */
static th_status tb__manifest_facts(const char *manifest, double *latency_ms, int *tuned) {
  json_t *m = json_loads(manifest, 0, NULL);
  json_t *t = m ? json_object_get(m, "tuned") : NULL;
  if (!json_is_boolean(t)) {
    json_decref(m);
    return TH_ERR_INTERNAL;
  }
  json_t *lat = json_object_get(m, "latency_ms");
  json_t *med = lat ? json_object_get(lat, "median") : NULL;
  *latency_ms = json_is_number(med) ? json_number_value(med) : -1;
  *tuned = json_is_true(t);
  json_decref(m);
  return TH_OK;
}

/* Builds the bundle with the store's best configs and publishes it, tuned or not as its manifest says.
 * need_tuned is set for the tuned rebuild, which publishes only when some layer is tuned. After a tuning
 * session whose every trial failed the store has nothing new to apply, so the rebuild is the quick build
 * again, configs and all: the job then fails (TH_ERR_COMPILE, why in err) and publishes no second version.
 * A pipeline that GETs ?tuned=1 (&wait=S) wants a tuned bundle or a clear no: a failed job ends its wait with
 * the message, and a GET never queues a failed key again (POST .../tune does). Had the job published an
 * untuned version and succeeded, each such GET would find no tuned version and no failure, queue the same
 * tuning again and add one more identical version per round until its wait ran out. */
/* The arch a key's target names for the compiler (the backend parses its own target string) into
 * buf, returned; NULL when the target names none (the compiler's default). */
static const char *tb__arch(const char *target, char *buf, size_t n) {
  return tc_backend_target_arch(target, buf, n);
}

th_status tune_key_footprint(store_t *st, const store_key *key, const char *target,
                             const tc_netsrc *net, tc_footprint *out, char *err, size_t n) {
  if (err && n) err[0] = '\0';
  const tc_backend *b = tc_backend_find(key->framework, err, n);
  if (!b) return TH_ERR_NOT_FOUND;
  char tbuf[256], archbuf[64];
  th_status rc = TH_OK;
  if (!target) target = key->target;
  if (!target[0]) {
    rc = tune_target_for(key->framework, tbuf, sizeof tbuf);
    target = tbuf;
  }
  tc_backend_target bt;
  if (rc == TH_OK)
    rc = tc_backend_target_init(b, tb__arch(target, archbuf, sizeof archbuf), &bt, err, n);
  tune_net own;
  int resolved = 0;
  if (rc == TH_OK && !net) {
    rc = tune_net_resolve(st, key->network, key->net_digest[0] ? key->net_digest : NULL, &own, err,
                          n);
    resolved = rc == TH_OK;
    net = &own.src;
  }
  if (rc == TH_OK) rc = tc_network_footprint(&bt, net, key->batch, out, err, n);
  if (resolved) tune_net_free(&own);
  return rc;
}

/* How long a published build's timing may take in the measurement worker before it is killed: far above
 * tc_time_opts' budget (2 s of rounds after at most three warm-up runs), so that only a hang or a model that
 * no one could use reaches it (vgg-19 at batch 256 runs for about a minute a pass on 2 cores). */
#define TB_TIME_MODEL_TIMEOUT_S 900.0

/* tc_build_opts.measure_fn of a published build: the model is timed in a measurement worker process (an exec
 * of this executable), never in the daemon, so a miscompiled kernel or a device fault costs that process
 * only, and the job fails with the reason instead of the server dying. */
static th_status tb__time_model(void *ctx, const char *so_path, const char *params_path, const tc_time_opts *t,
                                tc_run_stats *st, char *err, size_t errlen) {
  (void)ctx;
  tune_measure_opts mo;
  tune_measure_opts_default(&mo);
  static char *const worker_argv[] = {"/proc/self/exe", "measure-worker", NULL};
  mo.worker_argv = worker_argv;
  tune_measurer_t *m = NULL;
  th_status rc = tune_measurer_new(&mo, &m);
  if (rc == TH_OK)
    rc = tune_measurer_time_model(m, so_path, params_path, t, TB_TIME_MODEL_TIMEOUT_S, st, err, errlen);
  else
    snprintf(err, errlen, "cannot start a measurement worker: %s", th_status_str(rc));
  tune_measurer_free(m);
  return rc;
}

static th_status tb__build_publish(const tune_build_env *env, const tune_net *net, const char *target,
                                   const char *tag, const char *phase, const tune_progress *base_progress,
                                   int need_tuned, char *err, size_t n) {
  char dir[TH_PATH_MAX], tar[TH_PATH_MAX], so[TH_PATH_MAX]; /* the job's work_dir and a tag */
  snprintf(dir, sizeof dir, "%s/%s", env->work_dir, tag);
  snprintf(tar, sizeof tar, "%s/%s.tar", env->work_dir, tag);
  snprintf(so, sizeof so, "%s/%s.so", env->work_dir, tag);
  tune_build_lookup_ctx lctx = {env->st, target};
  tb__ctx pctx = {env, phase, base_progress, 0};
  tc_build_opts o;
  memset(&o, 0, sizeof o);
  o.framework = env->key->framework;
  o.network = net->src.name;
  o.onnx_path = net->src.onnx_path;
  o.onnx_shapes = net->src.shapes;
  o.batch = env->key->batch;
  o.work_dir = dir;
  o.lookup = tune_build_lookup; /* tuned, transferred or fallback configs, for the key's target */
  o.lookup_ctx = &lctx;
  o.progress = tb__progress;
  o.progress_ctx = &pctx;
  /* the key's target names the CPU (-mcpu=) or the GPU arch (-arch=) to build for; a cuda bundle is
   * timed only where there is a device, an llvm one only where this CPU can run it: tc_build_bundle
   * checks, and an untimed manifest says why ("unmeasured") */
  char archbuf[64];
  o.arch = tb__arch(target, archbuf, sizeof archbuf);
  o.precision = store_key_precision(env->key); /* the server and the CLI refused what the target cannot take */
  o.measure = 1;
  o.measure_fn = tb__time_model;
  char *manifest = NULL;
  th_status rc = tc_build_bundle(&o, tar, so, &manifest, err, n);
  if (rc != TH_OK) return rc;
  double latency = -1;
  int tuned = 0;
  rc = tb__manifest_facts(manifest, &latency, &tuned);
  if (rc != TH_OK) {
    snprintf(err, n, "the %s build's manifest has no tuned flag", tag);
  } else if (need_tuned && !tuned) {
    rc = TH_ERR_COMPILE;
    snprintf(err, n,
             "tuning found no working config (every trial failed), so no layer is tuned: the rebuild equals the "
             "untuned version already published, and no tuned version was published");
  } else {
    tune_build_output out = {tar, so, manifest, latency, tuned};
    int version = 0;
    rc = env->publish(env->ctx, &out, &version);
    if (rc != TH_OK) snprintf(err, n, "cannot publish the bundle: %s", store_errmsg(env->st));
  }
  free(manifest);
  return rc;
}

/* Reads the job's tuning options (validated by the server) into o, and the precision of its key: a tf32 key
 * tunes the tf32 workloads its build runs. */
static void tb__tune_options(const tune_build_env *env, tune_options *o) {
  tc_precision p = TC_PRECISION_FP32;
  if (tc_precision_parse(store_key_precision(env->key), &p) == TH_OK) o->precision = p;
  json_t *j = json_loads(env->options, 0, NULL);
  if (!j) return;
  json_t *v;
  if ((v = json_object_get(j, "trials")) && json_is_integer(v)) o->trials = json_integer_value(v);
  if ((v = json_object_get(j, "early_stopping")) && json_is_integer(v))
    o->early_stopping = json_integer_value(v);
  if ((v = json_object_get(j, "tuner")) && json_is_string(v))
    snprintf(o->tuner, sizeof o->tuner, "%s", json_string_value(v));
  json_decref(j);
}

/* The tuning session for the job's framework: CPU tasks for llvm (compiled for the CPU of the key's target, which
 * this machine can run: a worker registers only such targets), GPU tasks on the server's device for cuda (the
 * arch of the key's target). */
static th_status tb__session(const tune_build_env *env, const tune_net *net, const char *target,
                             const tune_options *o, tune_session_t **s, char *err, size_t n) {
  const tc_backend *b = tc_backend_find(env->key->framework, err, n);
  if (!b) return TH_ERR_INVALID;
  char archbuf[64];
  th_status rc = tune_session_new(env->st, b, tb__arch(target, archbuf, sizeof archbuf), &net->src,
                                  env->key->batch, o, s);
  if (rc != TH_OK)
    snprintf(err, n, "cannot start tuning: %s", tune_session_new_errmsg()[0] ? tune_session_new_errmsg()
                                                                              : th_status_str(rc));
  return rc;
}

/* Takes the session's progress into sn and reports it. */
static void tb__report_session(const tune_build_env *env, tb__snapshot *sn, const tune_session_t *s) {
  tb__snapshot_take(sn, s);
  tune_job_progress p = {.session = tb__snapshot_of(sn)};
  env->progress(env->ctx, "tune", &p);
}

static th_status tb__tune(const tune_build_env *env, const tune_net *net, const char *target, char *err,
                          size_t n) {
  tune_options o;
  tune_options_default(&o);
  tb__tune_options(env, &o);
  o.job_id = env->job_id;
  o.attempt = env->attempt;
  char wd[TH_PATH_MAX];
  snprintf(wd, sizeof wd, "%s/tune", env->work_dir);
  th_mkdir_p(wd);
  o.work_dir = wd;
  static char *const worker_argv[] = {"/proc/self/exe", "measure-worker", NULL};
  o.measure.worker_argv = worker_argv;
  th_status rc = tune_options_check(&o, err, n);
  tune_session_t *s = NULL;
  if (rc == TH_OK) rc = tb__session(env, net, target, &o, &s, err, n);
  if (rc != TH_OK) {
    tune_session_free(s);
    return rc;
  }
  tb__snapshot sn = {0};
  double last = 0;
  while (tune_session_next_stage(s) != TUNE_RES_DONE) {
    if (env->cancelled(env->ctx)) tune_session_cancel(s);
    rc = tune_session_run_stage(s);
    if (rc != TH_OK) {
      snprintf(err, n, "tuning failed: %s", tune_session_errmsg(s));
      break;
    }
    double now = th_now_mono();
    if (now - last > 0.5) {
      last = now;
      tb__report_session(env, &sn, s);
    }
  }
  if (rc == TH_OK) tb__report_session(env, &sn, s);
  int cancelled = tune_session_cancelled(s);
  tune_session_free(s);
  if (rc == TH_OK && (cancelled || env->cancelled(env->ctx))) rc = TH_ERR_CANCELLED;
  if (rc == TH_OK) rc = tb__build_publish(env, net, target, "tuned", "rebuild", tb__snapshot_of(&sn), 1, err, n);
  free(sn.tasks);
  return rc;
}

/* Whether this runner measures target: one of the targets it registered (env->targets), else this machine's own
 * target of the framework; here gets what it measures, for messages. */
static int tb__measures(const tune_build_env *env, const char *target, char *here, size_t n) {
  here[0] = '\0';
  if (!env->targets) {
    if (tune_target_for(env->key->framework, here, n) != TH_OK) return 0;
    return strcmp(here, target) == 0;
  }
  size_t len = 0;
  int found = 0;
  for (int i = 0; i < env->ntargets; i++) {
    found |= strcmp(env->targets[i], target) == 0;
    if (len < n) len += (size_t)snprintf(here + len, n - len, "%s%s", i ? ", " : "", env->targets[i]);
  }
  if (env->ntargets == 0) snprintf(here, n, "no target");
  return found;
}

/* A tune job stops after its untuned build where this runner cannot measure its target: a cuda job without a
 * device, or a target that is not one it measures (a CPU a client deploys to, another GPU arch). The progress
 * says why, plainly. On a store shared with other workers the job then goes back to the queue for a worker that
 * has the target (env->handoff), which resumes it from the published untuned version; alone, the job ends
 * there. Returns 1 when the job ends here (handed off or not); a refused handoff (the claim was lost) too. */
static int tb__untuned(const tune_build_env *env) {
  char why[256], msg[900], here[512] = "";
  const char *stage = NULL;
  if (tb__on_device(env->key->framework) && !tb__has_device(env->key->framework, why, sizeof why)) {
    snprintf(msg, sizeof msg,
             "published untuned; tuning waits for a worker with a CUDA device (this %s has none: %s)",
             env->handoff ? "worker" : "server", why);
    stage = "waiting_for_device";
  } else if (env->key->target[0] && !tb__measures(env, env->key->target, here, sizeof here)) {
    snprintf(msg, sizeof msg,
             "published untuned; tuning waits for a worker with the target %s (this %s measures only %s)",
             env->key->target, env->handoff ? "worker" : "server", here);
    stage = "waiting_for_target";
  } else {
    return 0;
  }
  tune_job_progress p = {.phase = "untuned", .tuning = msg};
  env->progress(env->ctx, stage, &p);
  if (env->handoff && env->key->target[0]) (void)env->handoff(env->ctx, env->key->target);
  return 1;
}

/* The target string a job builds for: its key's (a client may have chosen it), else this machine's. */
static th_status tb__target(const tune_build_env *env, char *out, size_t n) {
  if (env->key->target[0]) {
    snprintf(out, n, "%s", env->key->target);
    return TH_OK;
  }
  return tune_target_for(env->key->framework, out, n);
}

/* The job's network, resolved through the store at the revision its key names: a job queued before a new upload
 * of its network fails here (TH_ERR_CONFLICT) instead of building the new revision under the old one's key. */
static th_status tb__net(const tune_build_env *env, tune_net *net, char *err, size_t n) {
  return tune_net_resolve(env->st, env->key->network, env->key->net_digest, net, err, n);
}

static th_status tb__run(void *self, const tune_build_env *env, char *err, size_t n) {
  (void)self;
  char target[TH_TARGET_MAX];
  th_status rc = tb__target(env, target, sizeof target);
  if (rc != TH_OK) {
    snprintf(err, n, "cannot determine the %s target", env->key->framework);
    return rc;
  }
  tune_net net;
  rc = tb__net(env, &net, err, n);
  if (rc != TH_OK) return rc;
  rc = tb__build_publish(env, &net, target, "quick", "build", NULL, 0, err, n);
  if (rc == TH_OK && strcmp(env->kind, "tune") == 0 && !tb__untuned(env))
    rc = env->cancelled(env->ctx) ? TH_ERR_CANCELLED : tb__tune(env, &net, target, err, n);
  tune_net_free(&net);
  return rc;
}

/* ---- the staged form the scheduler drives: quick build, then the tuning session's own stages (select,
 * build, measure, update per batch), then the tuned rebuild ---- */

enum { TB_QUICK = 0, TB_TUNE, TB_REBUILD, TB_DONE };
/* Candidates per granted CPU slot in one build stage that shares the pool (tenths of a second of LLVM each).
 * Each slice is one more library (a fork and a link): 4 instead of 2 took 0.79x the wall time and 0.82x
 * the CPU time of three scheduled 16-trial jobs (interleaved A/B, 3 rounds, 2026-11-23). -DTB_SLICE_PER_SLOT=N
 * builds a variant for such an A/B. */
#ifndef TB_SLICE_PER_SLOT
#define TB_SLICE_PER_SLOT 4
#endif

typedef struct tb__job {
  const tune_build_env *env;
  tune_net net; /* resolved once, at open (zeroed until then) */
  char target[TH_TARGET_MAX];
  int phase;
  int is_tune;
  tune_options o;
  char wd[1200];
  tune_session_t *s;
  tb__snapshot prog; /* the session's last progress */
  double last;
  int64_t build_bytes; /* a build's and its timing's peak memory, from the plan (tc_network_footprint) */
  int worker_deaths; /* measurement worker deaths already logged */
} tb__job;

/* The number of versions of the key that this job published: for a tuning job 1 after its quick build, 2 after
 * its tuned rebuild; for a build job 1. A restarted job resumes from this, its own progress. Whether the newest
 * version is tuned says where its configs came from, not what this job did: a quick build is tuned wherever
 * older jobs stored records for the network's workloads, and its job has tuned nothing yet. */
static th_status tb__published_by_job(const tune_build_env *env, int *count, char *err, size_t n) {
  store_model *vs = NULL;
  size_t nv = 0;
  th_status rc = store_model_versions(env->st, env->key, &vs, &nv);
  if (rc == TH_ERR_NOT_FOUND) {
    *count = 0;
    return TH_OK;
  }
  if (rc != TH_OK) {
    snprintf(err, n, "cannot read the versions this job published: %s", store_errmsg(env->st));
    return rc;
  }
  int c = 0;
  for (size_t i = 0; i < nv; i++) c += vs[i].job_id == env->job_id;
  store_model_list_free(vs, nv);
  *count = c;
  return TH_OK;
}

static th_status tb__open(void *self, const tune_build_env *env, void **out, char *err, size_t n) {
  (void)self;
  tb__job *j = th_calloc(1, sizeof *j);
  if (!j) return TH_ERR_NOMEM;
  j->env = env;
  j->is_tune = strcmp(env->kind, "tune") == 0;
  th_status rc = tb__target(env, j->target, sizeof j->target);
  if (rc != TH_OK) {
    snprintf(err, n, "cannot determine the %s target", env->key->framework);
    free(j);
    return rc;
  }
  rc = tb__net(env, &j->net, err, n);
  if (rc != TH_OK) {
    free(j);
    return rc;
  }
  /* Resume after a restart: a version this job already published is not built again, and a tuning job
   * that published only its quick build tunes (the session resumes from the stored records). */
  int published = 0;
  if (env->job_id > 0) rc = tb__published_by_job(env, &published, err, n);
  if (rc != TH_OK) {
    tune_net_free(&j->net);
    free(j);
    return rc;
  }
  /* the memory a build of it holds, for the scheduler's budget; a plan that fails here fails the
   * build later, with its message, so an estimate of 0 (small) is enough now */
  tc_footprint fp;
  if (tune_key_footprint(NULL, env->key, j->target, &j->net.src, &fp, NULL, 0) == TH_OK)
    j->build_bytes = fp.peak_bytes;
  if (published >= 2 || (published == 1 && (!j->is_tune || tb__untuned(env))))
    j->phase = TB_DONE;
  else if (published == 1)
    j->phase = TB_TUNE;
  *out = j;
  return TH_OK;
}

static int tb__next(void *self, void *job, tune_stage_desc *d) {
  (void)self;
  tb__job *j = job;
  const char *dev = tb__on_device(j->env->key->framework) ? j->env->key->framework : "cpu";
  memset(d, 0, sizeof *d);
  d->task = d->ntasks = -1;
  if (j->phase == TB_TUNE && j->s) {
    tune_resource r = tune_session_next_stage(j->s);
    if (r == TUNE_RES_DONE) {
      j->phase = TB_REBUILD;
    } else {
      tune_progress p;
      tune_session_progress(j->s, &p);
      d->task = p.current;
      d->ntasks = p.ntasks;
      if (r == TUNE_RES_CPU_BUILD) {
        d->kind = TUNE_SK_BUILD;
        d->cpu_min = 1;
        d->cpu_max = -1;
      } else if (r == TUNE_RES_MEASURE) {
        d->kind = TUNE_SK_MEASURE;
        snprintf(d->device, sizeof d->device, "%s", dev);
        d->mem_bytes = tune_session_task_bytes(j->s);
      } else {
        /* select and update fit and query the cost model (XGBoost): CPU work, so one slot, which also keeps
         * them off the cores while a CPU kernel is timed */
        d->kind = strcmp(p.stage, "update") == 0 ? TUNE_SK_UPDATE : TUNE_SK_SELECT;
        d->cpu_min = 1;
        d->cpu_max = 1;
      }
      return 1;
    }
  }
  switch (j->phase) {
    case TB_QUICK:
    case TB_REBUILD:
      /* compiles with the whole pool, then times the network: the device's measurement slot too */
      d->kind = j->phase == TB_QUICK ? TUNE_SK_QUICK : TUNE_SK_REBUILD;
      d->cpu_min = -1;
      d->cpu_max = -1;
      d->mem_bytes = j->build_bytes;
      snprintf(d->device, sizeof d->device, "%s", dev);
      return 1;
    case TB_TUNE: /* the session is made in a stage of its own (task extraction, the measurement worker) */
      d->kind = TUNE_SK_SELECT;
      d->cpu_min = 1;
      d->cpu_max = 1;
      return 1;
    default:
      return 0;
  }
}

static void tb__save_progress(tb__job *j, int force) {
  double now = th_now_mono();
  if (force || now - j->last > 0.5) {
    j->last = now;
    tb__report_session(j->env, &j->prog, j->s);
  } else {
    tb__snapshot_take(&j->prog, j->s);
  }
}

static th_status tb__step(void *self, void *job, int cpu_slots, char *err, size_t n) {
  (void)self;
  tb__job *j = job;
  const tune_build_env *env = j->env;
  th_status rc = TH_OK;
  if (env->cancelled(env->ctx)) return TH_ERR_CANCELLED;
  switch (j->phase) {
    case TB_QUICK:
      rc = tb__build_publish(env, &j->net, j->target, "quick", "build", NULL, 0, err, n);
      if (rc == TH_OK) j->phase = j->is_tune && !tb__untuned(env) ? TB_TUNE : TB_DONE;
      return rc;
    case TB_TUNE:
      if (!j->s) {
        tune_options_default(&j->o);
        tb__tune_options(env, &j->o);
        j->o.job_id = env->job_id;
        j->o.attempt = env->attempt;
        snprintf(j->wd, sizeof j->wd, "%s/tune", env->work_dir);
        th_mkdir_p(j->wd);
        j->o.work_dir = j->wd;
        static char *const worker_argv[] = {"/proc/self/exe", "measure-worker", NULL};
        j->o.measure.worker_argv = worker_argv;
        rc = tune_options_check(&j->o, err, n);
        if (rc == TH_OK) rc = tb__session(env, &j->net, j->target, &j->o, &j->s, err, n);
        if (rc != TH_OK) return rc;
        tb__save_progress(j, 1);
        return TH_OK;
      }
      tune_session_set_build_threads(j->s, cpu_slots > 0 ? cpu_slots : 1);
      /* Granted part of the pool while candidates are timed on the CPU: compile a short slice, so that a
       * job waiting to measure (which needs the whole pool) waits for a slice, not for a whole batch. */
      tune_session_set_build_limit(j->s, !tb__on_device(env->key->framework) && env->cpu_pool > 0 &&
                                                 cpu_slots < env->cpu_pool
                                             ? cpu_slots * TB_SLICE_PER_SLOT
                                             : 0);
      rc = tune_session_run_stage(j->s);
      /* an operator reading the log learns that the worker died (its trial counts as a runtime error) and that
       * tuning went on with a fresh one: nothing else would say so */
      const char *why = NULL;
      int deaths = tune_session_worker_deaths(j->s, &why);
      if (deaths == j->worker_deaths + 1)
        TH_LOG(TH_LOG_WARN, "job %lld: the measurement worker died (%s); a fresh one was started, tuning goes on",
               (long long)env->job_id, why);
      else if (deaths > j->worker_deaths)
        TH_LOG(TH_LOG_WARN, "job %lld: the measurement worker died %d times (the last: %s); a fresh one was started "
               "each time, tuning goes on", (long long)env->job_id, deaths - j->worker_deaths, why);
      j->worker_deaths = deaths;
      if (rc != TH_OK) {
        snprintf(err, n, "tuning failed: %s", tune_session_errmsg(j->s));
        return rc;
      }
      tb__save_progress(j, tune_session_next_stage(j->s) == TUNE_RES_DONE);
      return TH_OK;
    case TB_REBUILD:
      if (j->s) {
        tb__save_progress(j, 1);
        tune_session_free(j->s);
        j->s = NULL;
      }
      rc = tb__build_publish(env, &j->net, j->target, "tuned", "rebuild", tb__snapshot_of(&j->prog), 1, err, n);
      if (rc == TH_OK) j->phase = TB_DONE;
      return rc;
    default:
      return TH_OK;
  }
}

static void tb__close(void *self, void *job) {
  (void)self;
  tb__job *j = job;
  if (!j) return;
  tune_session_free(j->s);
  free(j->prog.tasks);
  tune_net_free(&j->net);
  free(j);
}

const tune_builder *tune_builder_compiler(void) {
  static const tune_builder b = {"compiler", tb__supports, tb__run, NULL, tb__open, tb__next, tb__step, tb__close};
  return &b;
}
