/* `tunehub worker`: the load-aware scheduler of one machine, run against a store that daemons and
 * other workers share (PostgreSQL, --db), with no HTTP server. It registers the concrete targets
 * this machine measures (its CPU, and its CUDA device's arch when it has one; --target names them
 * instead), claims the jobs it may take under a heartbeat lease, and writes every result under the
 * claim's fencing token (tuner/scheduler.h). SIGTERM or SIGINT stops it cleanly: the running stages
 * end at their next check and the jobs it held go back to the queue at once, to resume on any
 * worker from their published versions and stored records; a worker that dies without stopping
 * (kill -9, a lost machine) leaves its jobs to be requeued when their lease expires. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builder.h"
#include "cli.h"
#include "present.h"
#include "provenance.h"
#include "scheduler.h"
#include "guard.h"
#include "srv.h"
#include "store.h"
#include "th_log.h"
#include "th_util.h"

static const char cli__worker_usage[] =
    "usage: tunehub worker --db postgresql://... [--target NAME]... [--slots N] [--data DIR] "
    "[--lease SECONDS]\n"
    "                      [--name NAME] [--build-slots N] [--memory-budget BYTES] [--min-free BYTES]\n"
    "                      [--keep-versions N] [--signing-key KEY.pem] [--log-level L]";

/* A whole-number flag from lo to hi into *out; 0 with a message naming the range otherwise. */
static int cli__int(const char *flag, const char *v, int lo, int hi, int *out) {
  int64_t x = 0;
  if (!v || th_parse_i64(v, &x) != TH_OK || x < lo || x > hi) {
    fprintf(stderr, "tunehub worker: %s takes a whole number from %d to %d, got '%s'\n", flag, lo,
            hi, v ? v : "");
    return 0;
  }
  *out = (int)x;
  return 1;
}

/* A worker name: 1..100 printable characters without spaces (it names the worker in jobs and logs).
 */
static int cli__name_ok(const char *name) {
  size_t len = strlen(name);
  if (len < 1 || len > 100) return 0;
  for (const char *p = name; *p; p++)
    if (*p <= ' ' || *p > '~') return 0;
  return 1;
}

void cli_stop_signals(sigset_t *set) {
  sigemptyset(set);
  sigaddset(set, SIGINT);
  sigaddset(set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, set, NULL);
  signal(SIGPIPE, SIG_IGN);
}

/* The listener that wakes a worker's scheduler when a job is queued anywhere. */
typedef struct cli__wake {
  tune_sched *sched;
  store_listener *l;
  pthread_t thread;
  int stop;
} cli__wake;

static void *cli__wake_main(void *arg) {
  cli__wake *w = arg;
  while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
    store_event e;
    if (store_listener_wait(w->l, 500, &e) == TH_OK && (e.kind == STORE_EV_QUEUED || e.kind == STORE_EV_RESYNC))
      tune_sched_notify(w->sched);
  }
  return NULL;
}

int cli_worker(int argc, char **argv) {
  const char *db = NULL, *data = "./data", *name = NULL, *key = NULL;
  const char *names[TUNE_SCHED_MAX_TARGETS];
  int nnames = 0, slots = 2, lease = 30, build_slots = 0, keep = 0;
  int64_t mem_budget = 0; /* 0: tune_sched_opts_default's three quarters of the machine */
  if (cli_help(argc, argv, cli__worker_usage)) return 0;
  int64_t min_free = -1;  /* -1: srv_min_free_default of the data directory */
  for (int i = 0; i < argc; i++) {
    const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int ok = v != NULL;
    if (!strcmp(f, "--db") && v) {
      db = v;
    } else if (!strcmp(f, "--data") && v) {
      data = v;
    } else if (!strcmp(f, "--name") && v) {
      name = v;
      if (!cli__name_ok(v)) {
        fprintf(
            stderr,
            "tunehub worker: --name takes 1 to 100 printable characters without spaces, got '%s'\n",
            v);
        return 2;
      }
    } else if (!strcmp(f, "--target") && v) {
      if (nnames == TUNE_SCHED_MAX_TARGETS) {
        fprintf(stderr, "tunehub worker: at most %d --target flags\n", TUNE_SCHED_MAX_TARGETS);
        return 2;
      }
      names[nnames++] = v;
    } else if (!strcmp(f, "--slots")) {
      ok = cli__int(f, v, 1, 64, &slots);
    } else if (!strcmp(f, "--lease")) {
      ok = cli__int(f, v, 1, 3600, &lease);
    } else if (!strcmp(f, "--build-slots")) {
      ok = cli__int(f, v, 1, 256, &build_slots);
    } else if (!strcmp(f, "--memory-budget")) {
      char why[200];
      ok = srv_bytes_flag(f, v, (int64_t)64 << 20, (int64_t)1 << 50, &mem_budget, why, sizeof why) == TH_OK;
      if (!ok) fprintf(stderr, "tunehub worker: %s\n", why);
    } else if (!strcmp(f, "--min-free")) {
      char why[200] = "";
      min_free = 0;
      ok = (v && !strcmp(v, "0")) ||
           srv_bytes_flag(f, v, 1, (int64_t)1 << 60, &min_free, why, sizeof why) == TH_OK;
      if (!ok) fprintf(stderr, "tunehub worker: %s\n", why);
    } else if (!strcmp(f, "--keep-versions")) {
      ok = cli__int(f, v, 0, 1000000, &keep);
    } else if (!strcmp(f, "--signing-key") && v) {
      key = v;
    } else if (!strcmp(f, "--log-level") && v) {
      if (th_log_set_level(v) != 0) {
        fprintf(stderr, "tunehub worker: --log-level takes error, warn, info or debug\n");
        return 2;
      }
    } else {
      fprintf(stderr, "tunehub worker: unknown flag '%s' (or it lacks its value)\n%s\n", f,
              cli__worker_usage);
      return 2;
    }
    if (!ok) return 2;
    i++; /* every flag takes a value */
  }
  if (!db) {
    fprintf(stderr,
            "tunehub worker: needs --db postgresql://...: a worker claims jobs from the store that "
            "daemons and "
            "other workers share; the embedded store in --data is run by its own daemon (tunehub "
            "serve)\n%s\n",
            cli__worker_usage);
    return 2;
  }
  /* the targets it registers: the named ones, each one this machine can measure, else this
   * machine's own */
  char targets[TUNE_SCHED_MAX_TARGETS][256];
  int ntargets = 0;
  for (int i = 0; i < nnames; i++) {
    char err[4096];
    if (tune_target_measurable(names[i], targets[ntargets], sizeof targets[ntargets], err,
                               sizeof err) != TH_OK) {
      fprintf(stderr, "tunehub worker: %s\n", err);
      return 2;
    }
    int dup = 0;
    for (int k = 0; k < ntargets; k++) dup |= !strcmp(targets[k], targets[ntargets]);
    ntargets += !dup;
  }
  if (nnames == 0) ntargets = tune_local_targets(targets, TUNE_SCHED_MAX_TARGETS);
  const char *target_ptrs[TUNE_SCHED_MAX_TARGETS];
  for (int i = 0; i < ntargets; i++) target_ptrs[i] = targets[i];
  /* a worker signs what it publishes as a daemon does (serve --signing-key), with the same refusal */
  tune_signer *signer = NULL;
  char kerr[TH_MSG_MAX];
  if (key && tune_signer_load(key, &signer, kerr, sizeof kerr) != TH_OK) {
    fprintf(stderr, "tunehub worker: --signing-key: %s\n", kerr);
    return 2;
  }

  sigset_t set;
  cli_stop_signals(&set);

  store_t *st = NULL;
  if (store_open_db(db, data, &st) != TH_OK) {
    fprintf(stderr, "tunehub worker: cannot open the store: %s\n", store_errmsg(NULL));
    tune_signer_free(signer);
    return 1;
  }
  if (!store_shared(
          st)) { /* store_open_db refuses anything but a PostgreSQL URL; kept for a future engine */
    fprintf(stderr, "tunehub worker: --db must name a shared store\n");
    store_close(st);
    tune_signer_free(signer);
    return 2;
  }
  /* its builds publish nothing that would leave the data directory (the local cache) below the floor */
  store_set_min_free(st, min_free >= 0 ? min_free : srv_min_free_default(data));
  /* a scratch root of its own: workers may share a data directory (one machine, tests) */
  char work_root[TH_SUBDIR_MAX];
  snprintf(work_root, sizeof work_root, "%s/work/worker-%ld", data, (long)getpid());
  tune_sched_opts o;
  tune_sched_opts_default(&o);
  if (build_slots > 0) o.cpu_slots = build_slots;
  if (mem_budget > 0) o.mem_budget = mem_budget;
  o.max_jobs = slots;
  o.work_root = work_root;
  o.encode_progress = srv_progress_doc; /* the job's progress document, as the daemons present it */
  o.keep_versions = keep;
  o.lease_s = lease;
  o.name = name;
  o.targets = target_ptrs;
  o.ntargets = ntargets;
  o.signer = signer;
  tune_sched *sched = NULL;
  th_status rc = tune_sched_start(st, cli_default_builder(data), &o, &sched);
  if (rc != TH_OK) {
    fprintf(stderr, "tunehub worker: cannot start: %s\n",
            rc == TH_ERR_INVALID || rc == TH_ERR_IO ? th_status_str(rc) : store_errmsg(st));
    store_close(st);
    tune_signer_free(signer);
    return 1;
  }
  TH_LOG(TH_LOG_INFO,
         "tunehub %s worker %s on %s: %d slot(s), lease %d s; SIGTERM stops it and hands its jobs "
         "back to the queue",
         TH_VERSION, tune_sched_name(sched), store_db_display(st), slots, lease);
  /* a queued or requeued job wakes the scheduler at once (NOTIFY), instead of at its next once-a-second look */
  cli__wake w = {.sched = sched};
  int listening = store_listener_open(st, &w.l) == TH_OK && pthread_create(&w.thread, NULL, cli__wake_main, &w) == 0;
  if (!listening) {
    TH_LOG(TH_LOG_WARN, "not listening for new jobs (%s): claims wait for the scheduler's once-a-second look",
           store_errmsg(st));
    store_listener_close(w.l);
  }
  int sig = 0;
  sigwait(&set, &sig);
  TH_LOG(TH_LOG_INFO, "signal %d: stopping worker %s", sig, tune_sched_name(sched));
  if (listening) {
    __atomic_store_n(&w.stop, 1, __ATOMIC_RELEASE);
    pthread_join(w.thread, NULL);
    store_listener_close(w.l);
  }
  tune_sched_stop(sched);
  store_close(st);
  tune_signer_free(signer);
  TH_LOG(TH_LOG_INFO, "stopped");
  return 0;
}
