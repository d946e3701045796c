/* Benchmark (label "bench", skipped unless TUNER_BENCH=1): best GFLOP/s against trials for the xgb, ga and
 * random strategies on a resnet-18 convolution (64->64, 3x3, 56x56, batch 1), each in a fresh store so that
 * nothing is resumed or transferred. TUNER_BENCH_TRIALS sets the budget (default 64), TUNER_BENCH_WL picks
 * the workload ("c64" default, "c128": 128->128 3x3 28x28, "c256s2": 128->256 3x3/2 28x28). Prints a table;
 * it checks only that every strategy found a valid config. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ops.h"
#include "store.h"
#include "th_test.h"
#include "th_util.h"
#include "tune_job.h"
#include "tune_task.h"

typedef struct curve {
  const char *key;
  double gflops[4096];
  int n;
  double best;
} curve;

static int curve_cb(void *ctx, const store_record *r) {
  curve *c = ctx;
  if (strcmp(r->workload_key, c->key) != 0 || c->n >= 4096) return 0;
  if (r->error_class == 0 && r->gflops > c->best) c->best = r->gflops;
  c->gflops[c->n++] = c->best;
  return 0;
}

TH_TEST(bench_conv_strategies) {
  const char *on = getenv("TUNER_BENCH");
  if (!on || strcmp(on, "1") != 0) return TH_SKIP;
  int64_t trials = 64;
  const char *tv = getenv("TUNER_BENCH_TRIALS");
  if (tv && th_parse_i64(tv, &trials) != TH_OK) trials = 64;
  const char *which = getenv("TUNER_BENCH_WL");
  tc_workload w;
  memset(&w, 0, sizeof w);
  w.kernel = TC_KERNEL_CONV2D;
  w.n = 1;
  w.c = 64, w.h = w.w = 56, w.oc = 64, w.sh = w.sw = 1;
  if (which && strcmp(which, "c128") == 0) w.c = 128, w.h = w.w = 28, w.oc = 128;
  if (which && strcmp(which, "c256s2") == 0) w.c = 128, w.h = w.w = 28, w.oc = 256, w.sh = w.sw = 2;
  w.kh = w.kw = 3;
  w.pt = w.pl = w.pb = w.pr = 1;
  w.oh = (w.h + 2 - 3) / w.sh + 1;
  w.ow = (w.w + 2 - 3) / w.sw + 1;
  w.in_cb = tc_channel_block(w.c, 16);
  w.out_cb = tc_channel_block(w.oc, 16);
  w.epilogue = TC_EPI_BIAS | TC_EPI_RELU;
  const char *kinds[] = {"xgb", "ga", "random"};
  curve *cv = calloc(3, sizeof *cv);
  double secs[3];
  char key[512];
  CHECK(tc_workload_key(&w, key, sizeof key) == TH_OK);
  for (int k = 0; k < 3; k++) {
    char dir[256];
    snprintf(dir, sizeof dir, "/tmp/tuner_bench_XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    store_t *st = NULL;
    CHECK(store_open(dir, &st) == TH_OK);
    tune_options o;
    tune_options_default(&o);
    snprintf(o.tuner, sizeof o.tuner, "%s", kinds[k]);
    o.trials = trials;
    o.batch = 16;
    o.measure.repeat = 5;
    o.measure.min_repeat_ms = 20;
    tune_session_t *s = NULL;
    CHECK(tune_session_new_workloads(st, NULL, &w, NULL, 1, &o, &s) == TH_OK);
    double t0 = th_now_mono();
    CHECK(tune_session_run_all(s, NULL, NULL) == TH_OK);
    secs[k] = th_now_mono() - t0;
    tune_session_free(s);
    tc_target host;
    CHECK(tc_target_host(&host) == TH_OK);
    char tstr[256];
    tune_target_str(&host, tstr, sizeof tstr);
    cv[k].key = key;
    CHECK(store_record_each(st, "conv2d_nchwc", tstr, curve_cb, &cv[k]) == TH_OK);
    CHECK(cv[k].best > 0);
    store_close(st);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "cleanup failed\n");
  }
  printf("workload: %s (%.3f GFLOP)\n", key, tc_workload_flops(&w) * 1e-9);
  printf("%8s %10s %10s %10s   (best GFLOP/s after n trials)\n", "trials", kinds[0], kinds[1], kinds[2]);
  for (int64_t t = 8; t <= trials; t += (t < 32 ? 8 : 16)) {
    printf("%8lld", (long long)t);
    for (int k = 0; k < 3; k++) printf(" %10.1f", cv[k].n >= t ? cv[k].gflops[t - 1] : NAN);
    printf("\n");
  }
  printf("%8s %10.0f %10.0f %10.0f   (seconds of tuning)\n", "time", secs[0], secs[1], secs[2]);
  free(cv);
  return 0;
}
