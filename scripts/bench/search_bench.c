/* Search efficiency of the tuner's strategies: best GFLOP/s against trials for xgb, ga and random (and grid
 * on request) on resnet-18 convolutions at batch 1, each run in a fresh store so nothing is resumed or
 * transferred. Built by scripts/bench/search.sh (target th_search_bench), which documents the usage.
 *
 * usage: th_search_bench [--trials N] [--tuners xgb,ga,random] [--workloads c64,c128,c256s2] [--seed S]
 *                        [--csv FILE]
 * Prints one table per workload (best GFLOP/s after n trials, and the seconds each strategy took) and writes
 * every (workload, tuner, trial, best_gflops) point to the CSV. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ops.h"
#include "store.h"
#include "th_util.h"
#include "tune_job.h"
#include "tune_task.h"

#define MAX_TRIALS 4096
#define MAX_TUNERS 4

typedef struct curve {
  const char *key;
  double best_after[MAX_TRIALS];
  int n;
  double best;
} curve;

static int curve_cb(void *ctx, const store_record *r) {
  curve *c = ctx;
  if (strcmp(r->workload_key, c->key) != 0 || c->n >= MAX_TRIALS) return 0;
  if (r->error_class == 0 && r->gflops > c->best) c->best = r->gflops;
  c->best_after[c->n++] = c->best;
  return 0;
}

/* resnet-18's 3x3 convolutions at batch 1, with its fused bias + relu epilogue */
static int workload_of(const char *name, tc_workload *w) {
  memset(w, 0, sizeof *w);
  w->kernel = TC_KERNEL_CONV2D;
  w->n = 1;
  w->kh = w->kw = 3;
  w->pt = w->pl = w->pb = w->pr = 1;
  w->sh = w->sw = 1;
  if (!strcmp(name, "c64")) {
    w->c = 64, w->h = w->w = 56, w->oc = 64;
  } else if (!strcmp(name, "c128")) {
    w->c = 128, w->h = w->w = 28, w->oc = 128;
  } else if (!strcmp(name, "c256s2")) {
    w->c = 128, w->h = w->w = 28, w->oc = 256, w->sh = w->sw = 2;
  } else if (!strcmp(name, "c512")) {
    w->c = 512, w->h = w->w = 7, w->oc = 512;
  } else {
    return -1;
  }
  w->oh = (w->h + 2 - 3) / w->sh + 1;
  w->ow = (w->w + 2 - 3) / w->sw + 1;
  w->in_cb = tc_channel_block(w->c, 16);
  w->out_cb = tc_channel_block(w->oc, 16);
  w->epilogue = TC_EPI_BIAS | TC_EPI_RELU;
  return 0;
}

static int run_one(const tc_workload *w, const char *key, const char *tuner, int64_t trials, uint64_t seed,
                   curve *cv, double *secs) {
  char dir[] = "/tmp/th_search_XXXXXX";
  if (!mkdtemp(dir)) return -1;
  store_t *st = NULL;
  if (store_open(dir, &st) != TH_OK) return -1;
  tune_options o;
  tune_options_default(&o);
  snprintf(o.tuner, sizeof o.tuner, "%s", tuner);
  o.trials = trials;
  o.seed = seed;
  o.transfer = 0;
  tune_session_t *s = NULL;
  int rc = -1;
  if (tune_session_new_workloads(st, NULL, NULL, w, NULL, 1, &o, &s) == TH_OK) {
    double t0 = th_now_mono();
    if (tune_session_run_all(s, NULL, NULL) == TH_OK) rc = 0;
    *secs = th_now_mono() - t0;
    if (rc != 0) fprintf(stderr, "%s: %s\n", tuner, tune_session_errmsg(s));
  }
  tune_session_free(s);
  tc_backend_target host;
  char tstr[256];
  if (rc == 0 && tc_backend_target_init(tc_backend_default(), NULL, &host, NULL, 0) == TH_OK) {
    snprintf(tstr, sizeof tstr, "%s", host.str);
    cv->key = key;
    if (store_record_each(st, tc_kernel_name(w->kernel), tstr, curve_cb, cv) != TH_OK) rc = -1;
  }
  store_close(st);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", dir);
  return rc;
}

static int split(char *list, const char **out, int max) {
  int n = 0;
  for (char *t = strtok(list, ","); t && n < max; t = strtok(NULL, ",")) out[n++] = t;
  return n;
}

int main(int argc, char **argv) {
  int64_t trials = 128, seed = 1;
  char tuners_s[128] = "xgb,ga,random", wls_s[128] = "c64,c128,c256s2";
  const char *csv_path = NULL;
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(argv[i], "--trials") && v && th_parse_i64(v, &trials) == TH_OK && trials > 0 &&
        trials <= MAX_TRIALS)
      i++;
    else if (!strcmp(argv[i], "--seed") && v && th_parse_i64(v, &seed) == TH_OK)
      i++;
    else if (!strcmp(argv[i], "--tuners") && v && strlen(v) < sizeof tuners_s)
      snprintf(tuners_s, sizeof tuners_s, "%s", argv[++i]);
    else if (!strcmp(argv[i], "--workloads") && v && strlen(v) < sizeof wls_s)
      snprintf(wls_s, sizeof wls_s, "%s", argv[++i]);
    else if (!strcmp(argv[i], "--csv") && v)
      csv_path = argv[++i];
    else {
      fprintf(stderr,
              "th_search_bench: bad argument '%s'; valid: --trials 1..%d --tuners xgb,ga,random,grid "
              "--workloads c64,c128,c256s2,c512 --seed S --csv FILE\n",
              argv[i], MAX_TRIALS);
      return 2;
    }
  }
  const char *tuners[MAX_TUNERS], *wls[8];
  int nt = split(tuners_s, tuners, MAX_TUNERS), nw = split(wls_s, wls, 8);
  FILE *csv = csv_path ? fopen(csv_path, "w") : NULL;
  if (csv_path && !csv) {
    perror(csv_path);
    return 1;
  }
  if (csv) fprintf(csv, "workload,tuner,trial,best_gflops\n");
  curve *cv = calloc(MAX_TUNERS, sizeof *cv);
  if (!cv) return 1;
  int status = 0;
  for (int wi = 0; wi < nw; wi++) {
    tc_workload w;
    char key[512];
    if (workload_of(wls[wi], &w) != 0 || tc_workload_key(&w, key, sizeof key) != TH_OK) {
      fprintf(stderr, "th_search_bench: unknown workload '%s'; valid: c64, c128, c256s2, c512\n", wls[wi]);
      return 2;
    }
    double secs[MAX_TUNERS] = {0};
    memset(cv, 0, MAX_TUNERS * sizeof *cv);
    for (int k = 0; k < nt; k++) {
      fprintf(stderr, "[%s] %s: %lld trials...\n", wls[wi], tuners[k], (long long)trials);
      if (run_one(&w, key, tuners[k], trials, (uint64_t)seed, &cv[k], &secs[k]) != 0) {
        fprintf(stderr, "[%s] %s failed\n", wls[wi], tuners[k]);
        status = 1;
      }
      for (int t = 0; csv && t < cv[k].n; t++)
        fprintf(csv, "%s,%s,%d,%.3f\n", wls[wi], tuners[k], t + 1, cv[k].best_after[t]);
    }
    printf("\n%s: %s (%.3f GFLOP)\n", wls[wi], key, tc_workload_flops(&w) * 1e-9);
    printf("%8s", "trials");
    for (int k = 0; k < nt; k++) printf(" %10s", tuners[k]);
    printf("   (best GFLOP/s after n trials)\n");
    for (int64_t t = 8; t <= trials; t += (t < 32 ? 8 : t < 128 ? 16 : 64)) {
      printf("%8lld", (long long)t);
      for (int k = 0; k < nt; k++) printf(" %10.1f", cv[k].n >= t ? cv[k].best_after[t - 1] : NAN);
      printf("\n");
    }
    printf("%8s", "seconds");
    for (int k = 0; k < nt; k++) printf(" %10.0f", secs[k]);
    printf("\n");
    fflush(stdout);
  }
  if (csv) fclose(csv);
  free(cv);
  return status;
}
