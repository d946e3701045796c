/* Command-line front end of the tuning session: argument checking with messages that list the valid values,
 * the progress line (carriage return on a TTY, plain lines otherwise), Ctrl-C handling and the summary. */
#include "tune_cli.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store.h"
#include "tc/zoo.h"
#include "th_util.h"
#include "tune_job.h"
#include "tune_net.h"
#include "tune_task.h"

static tune_session_t *volatile tune__cli_session;

static void tune__on_sigint(int sig) {
  (void)sig;
  if (tune__cli_session) tune_session_cancel(tune__cli_session);
}

typedef struct tune_cli_view {
  int tty;
  int last_task;
  int64_t last_trials;
} tune_cli_view;

static void tune__fmt_time(double s, char *out, size_t n) {
  long t = (long)(s + 0.5);
  if (t >= 3600)
    snprintf(out, n, "%ldh%02ldm%02lds", t / 3600, t / 60 % 60, t % 60);
  else
    snprintf(out, n, "%ldm%02lds", t / 60, t % 60);
}

static void tune__cli_progress(void *ctx, const tune_session_t *s) {
  tune_cli_view *v = ctx;
  tune_progress p;
  tune_session_progress(s, &p);
  int i = p.current < p.ntasks ? p.current : p.ntasks - 1;
  const tune_task_progress *t = &p.tasks[i];
  /* One line per measured batch: nothing new to say while a task is only starting or building. */
  if (strcmp(t->state, "pending") == 0 || (i == v->last_task && t->trials == v->last_trials)) return;
  if (v->tty && i != v->last_task && v->last_task >= 0) fputc('\n', stdout);
  v->last_task = i;
  v->last_trials = t->trials;
  char el[32], eta[32];
  tune__fmt_time(p.elapsed_s, el, sizeof el);
  if (p.eta_s >= 0)
    tune__fmt_time(p.eta_s, eta, sizeof eta);
  else
    snprintf(eta, sizeof eta, "?");
  printf("%s[Task %2d/%2d] %8.2f/%8.2f GFLOPS | trials %lld/%lld | %s | elapsed %s | eta %s%s",
         v->tty ? "\r" : "", i + 1, p.ntasks, t->current_gflops, t->best_gflops, (long long)t->trials,
         (long long)t->budget, t->state, el, eta, v->tty ? "   " : "\n");
  fflush(stdout);
}

static void tune__usage(FILE *f) {
  fprintf(f,
          "usage: tunehub tune FRAMEWORK NETWORK BATCH [--data DIR] [--db URL] [--trials N]\n"
          "                    [--tuner xgb|ga|random|grid] [--early-stopping N] [--seed S] "
          "[--batch-size N]\n"
          "                    [--target native] [--precision fp32|tf32]\n");
}

static void tune__list_networks(FILE *f) {
  fprintf(f, "valid networks:");
  for (size_t i = 0; i < tc_zoo_count(); i++) fprintf(f, "%s %s", i ? "," : "", tc_zoo_at(i)->name);
  fprintf(f, "\n");
}

static int tune__int_arg(const char *name, const char *v, int64_t lo, int64_t hi, int64_t *out) {
  int64_t x;
  if (!v || th_parse_i64(v, &x) != TH_OK || x < lo || x > hi) {
    fprintf(stderr, "tunehub tune: %s must be an integer in %lld..%lld, got '%s'\n", name, (long long)lo,
            (long long)hi, v ? v : "");
    return -1;
  }
  *out = x;
  return 0;
}

int tune_cli_main(int argc, char **argv) {
  const char *pos[3] = {NULL, NULL, NULL};
  int npos = 0;
  const char *data = "./data", *target_name = NULL, *db_flag = NULL, *db = NULL, *precision = NULL;
  tune_options o;
  tune_options_default(&o);
  int64_t v;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *next = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      tune__usage(stdout);
      return 0;
    } else if (strcmp(a, "--data") == 0 && next) {
      data = next;
      i++;
    } else if (strcmp(a, "--db") == 0 && next) {
      db_flag = next;
      i++;
    } else if (strcmp(a, "--trials") == 0) {
      if (tune__int_arg("--trials", next, 1, 1000000, &v) != 0) return 2;
      o.trials = v;
      i++;
    } else if (strcmp(a, "--early-stopping") == 0) {
      if (tune__int_arg("--early-stopping", next, 0, 1000000, &v) != 0) return 2;
      o.early_stopping = v;
      i++;
    } else if (strcmp(a, "--seed") == 0) {
      if (tune__int_arg("--seed", next, 0, INT64_MAX, &v) != 0) return 2;
      o.seed = (uint64_t)v;
      i++;
    } else if (strcmp(a, "--batch-size") == 0) {
      if (tune__int_arg("--batch-size", next, 1, 1024, &v) != 0) return 2;
      o.batch = (int)v;
      i++;
    } else if (strcmp(a, "--target") == 0 && next) {
      target_name = next;
      i++;
    } else if (strcmp(a, "--precision") == 0 && next) {
      precision = next;
      i++;
    } else if (strcmp(a, "--tuner") == 0 && next) {
      snprintf(o.tuner, sizeof o.tuner, "%s", next);
      i++;
    } else if (a[0] == '-' && a[1] == '-') {
      fprintf(stderr, "tunehub tune: unknown or incomplete option '%s'\n", a);
      tune__usage(stderr);
      return 2;
    } else if (npos < 3) {
      pos[npos++] = a;
    } else {
      fprintf(stderr, "tunehub tune: unexpected argument '%s'\n", a);
      tune__usage(stderr);
      return 2;
    }
  }
  if (npos < 3) {
    tune__usage(stderr);
    return 2;
  }
  char err[TH_MSG_MAX];
  if (store_db_resolve(db_flag, &db, err, sizeof err) != TH_OK) {
    fprintf(stderr, "tunehub tune: %s\n", err);
    return 2;
  }
  char ferr[128];
  const tc_backend *be = tc_backend_find(pos[0], ferr, sizeof ferr);
  if (!be) {
    fprintf(stderr, "tunehub tune: %s\n", ferr);
    return 2;
  }
  /* tuning measures on this machine: --target may name it (native, or its own CPU name or arch), and another
   * target is refused with the way to get its untuned cross-compiled build */
  tc_backend_target want, here;
  char terr[TH_MSG_MAX] = "";
  if (target_name && tc_backend_target_init(be, target_name, &want, terr, sizeof terr) != TH_OK) {
    fprintf(stderr, "tunehub tune: %s\n", terr);
    return 2;
  }
  /* the precision of the build being tuned; without --target a cuda arch is the device's, checked once it is
   * known (tune_session_new) */
  tc_precision prec;
  if (tc_precision_check(pos[0], target_name ? want.str : NULL, precision, &prec, terr, sizeof terr) != TH_OK) {
    fprintf(stderr, "tunehub tune: --precision: %s\n", terr);
    return 2;
  }
  o.precision = prec;
  if (target_name) {
    if (tc_backend_target_init(be, NULL, &here, terr, sizeof terr) == TH_OK && strcmp(want.str, here.str) != 0) {
      fprintf(stderr,
              "tunehub tune: this machine measures only its own target (%s), not %s; tuning %s needs a worker "
              "with that hardware (tunehub build %s %s %s --target %s publishes the untuned cross-compiled "
              "build)\n",
              here.str, want.str, target_name, pos[0], pos[1], pos[2], target_name);
      return 2;
    }
  }
  int64_t batch;
  if (tune__int_arg("BATCH", pos[2], 1, 4096, &batch) != 0) return 2;
  if (tune_options_check(&o, err, sizeof err) != TH_OK) {
    fprintf(stderr, "tunehub tune: %s\n", err);
    return 2;
  }
  /* a zoo network needs no store to be named; an uploaded one is looked up in the store it was imported into */
  tune_net net;
  int have = 1;
  th_status rc = tc_zoo_find(pos[1]) ? TH_OK : store_exists_db(db, data, &have);
  if (rc == TH_OK && !have) rc = TH_ERR_NOT_FOUND;
  store_t *st = NULL;
  if (rc == TH_OK) rc = store_open_db(db, data, &st);
  if (rc != TH_OK && rc != TH_ERR_NOT_FOUND) {
    char where[TH_DIR_MAX];
    store_describe(db, data, where, sizeof where);
    fprintf(stderr, "tunehub tune: cannot open the store %s: %s\n", where, store_errmsg(NULL));
    return 1;
  }
  if (rc == TH_OK) rc = tune_net_resolve(st, pos[1], NULL, &net, err, sizeof err);
  if (rc != TH_OK) {
    if (rc != TH_ERR_NOT_FOUND || st) fprintf(stderr, "tunehub tune: %s\n", err);
    else fprintf(stderr, "tunehub tune: unknown network '%s'\n", pos[1]);
    if (!st) tune__list_networks(stderr);
    store_close(st);
    return rc == TH_ERR_NOT_FOUND ? 2 : 1;
  }
  tune_session_t *s = NULL;
  char tstr[256];
  /* cuda: the device's arch; without a device this fails with "no CUDA device: ..." */
  rc = tune_session_new(st, be, NULL, &net.src, (int)batch, &o, &s);
  if (rc == TH_OK) snprintf(tstr, sizeof tstr, "%s", tune_session_target(s));
  if (rc != TH_OK) {
    fprintf(stderr, "tunehub tune: cannot start tuning %s: %s\n", pos[1],
            tune_session_new_errmsg()[0] ? tune_session_new_errmsg() : th_status_str(rc));
    tune_net_free(&net);
    store_close(st);
    return 1;
  }
  tune_progress p;
  tune_session_progress(s, &p);
  printf("Tuning %s batch %d on %s: %d tasks, tuner %s, %lld trials per task%s\n", pos[1], (int)batch, tstr,
         p.ntasks, o.tuner, (long long)o.trials, o.early_stopping > 0 ? " (early stopping on)" : "");
  tune__cli_session = s;
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = tune__on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old);
  tune_cli_view view = {.tty = isatty(1), .last_task = -1, .last_trials = -1};
  rc = tune_session_run_all(s, tune__cli_progress, &view);
  sigaction(SIGINT, &old, NULL);
  tune__cli_session = NULL;
  if (view.tty) fputc('\n', stdout);
  tune_session_progress(s, &p);
  /* best: the fastest trial; verified: the median time, re-timed side by side at the task's end, of the
   * config builds apply (the best trial's time when the task was not verified) */
  printf("\n%-4s %-16s %-60s %7s %7s %10s %10s %11s %s\n", "#", "template", "workload", "weight", "trials",
         "best GF/s", "best ms", "verified ms", "state");
  double total_ms = 0, chosen_ms = 0;
  int all_measured = 1;
  for (int i = 0; i < p.ntasks; i++) {
    const tune_task_progress *t = &p.tasks[i];
    double ms = t->best_s * 1e3;
    double vms = t->verified_s * 1e3;
    if (t->best_s > 0) {
      total_ms += ms * t->weight;
      chosen_ms += (vms > 0 ? vms : ms) * t->weight;
    } else {
      all_measured = 0;
    }
    char vtxt[16] = "-";
    if (vms > 0) snprintf(vtxt, sizeof vtxt, "%.4f", vms);
    printf("%-4d %-16s %-60.60s %7d %7lld %10.2f %10.4f %11s %s%s%s\n", i + 1, t->template_name, t->key,
           t->weight, (long long)t->trials, t->best_gflops, ms, vtxt, t->state, t->msg[0] ? ": " : "", t->msg);
  }
  char el[32];
  tune__fmt_time(p.elapsed_s, el, sizeof el);
  printf("sum of best kernel times x weight: %.3f ms (verified: %.3f ms)%s; elapsed %s\n", total_ms, chosen_ms,
         all_measured ? "" : " (some tasks have no valid config)", el);
  int code = 0;
  if (rc == TH_ERR_CANCELLED) {
    printf("interrupted: every finished trial is stored in %s; rerun the same command to resume\n",
           store_db_display(st));
    code = 130;
  } else if (rc != TH_OK) {
    fprintf(stderr, "tunehub tune: %s\n", tune_session_errmsg(s));
    code = 1;
  }
  tune_session_free(s);
  tune_net_free(&net);
  store_close(st);
  return code;
}
