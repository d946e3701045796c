/* Tests of the tuning session on real kernels (compiler templates + LLVM + the measurement worker) with a
 * real store: records are written and survive a reopen, a rerun resumes and skips finished tasks, the build
 * lookup returns tuned / transferred / fallback configs, transfer seeds a new workload with the best config
 * of a tuned one, the stage machine reports the right resources, and the CLI rejects bad input by naming
 * the valid values. */
#include <dlfcn.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ops.h"
#include "store.h"
#include "test_build_faults.h"
#include "test_tensor_wl.h"
#include "th_buf.h"
#include "th_test.h"
#include "tune_cli.h"
#include "tune_job.h"
#include "tune_space.h"
#include "tune_task.h"

/* The host CPU as the tuner's target (the llvm backend's). */
static const tc_backend_target *host_target(void) {
  static tc_backend_target t;
  if (!t.backend) CHECK(tc_backend_target_init(tc_backend_default(), NULL, &t, NULL, 0) == TH_OK);
  return &t;
}

static tc_workload conv(int c, int hw, int oc, int k, int stride) {
  tc_workload w;
  memset(&w, 0, sizeof w);
  w.kernel = TC_KERNEL_CONV2D;
  w.n = 1;
  w.c = c;
  w.h = w.w = hw;
  w.oc = oc;
  w.kh = w.kw = k;
  w.sh = w.sw = stride;
  w.pt = w.pl = w.pb = w.pr = k / 2;
  w.oh = w.ow = (hw + 2 * (k / 2) - k) / stride + 1;
  w.in_cb = tc_channel_block(c, 16);
  w.out_cb = tc_channel_block(oc, 16);
  w.epilogue = TC_EPI_BIAS | TC_EPI_RELU;
  return w;
}

static void tmpdir(char *d, size_t n) {
  snprintf(d, n, "/tmp/tuner_session_XXXXXX");
  CHECK(mkdtemp(d) != NULL);
}

static void rmdir_r(const char *d) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", d);
  if (system(cmd) != 0) fprintf(stderr, "cleanup failed\n");
}

static void quick_opts(tune_options *o, const char *tuner, int trials) {
  tune_options_default(o);
  snprintf(o->tuner, sizeof o->tuner, "%s", tuner);
  o->trials = trials;
  o->batch = 8;
  o->measure.repeat = 3;
  o->measure.timeout_s = 20;
}

typedef struct rec_ctx {
  const char *key;
  int n, valid, verify;
  char best_cfg[1024];
  double best;
} rec_ctx;

static int rec_cb(void *ctx, const store_record *r) {
  rec_ctx *c = ctx;
  if (strcmp(r->workload_key, c->key) != 0) return 0;
  if (strcmp(r->tuner, STORE_TUNER_VERIFY) == 0) { /* a re-timing at the task's end, not a trial */
    c->verify++;
    return 0;
  }
  c->n++;
  if (r->error_class == 0) {
    c->valid++;
    CHECK(r->cost_mean_s > 0 && r->cost_mean_s < 1);
    CHECK(r->gflops > 0);
    if (r->cost_mean_s < c->best) {
      c->best = r->cost_mean_s;
      snprintf(c->best_cfg, sizeof c->best_cfg, "%s", r->config);
    }
  } else {
    CHECK(r->cost_mean_s >= 1e9);
    fprintf(stderr, "failed trial: class %d config %s\n", r->error_class, r->config);
  }
  CHECK_STR(r->tuner, "xgb");
  return 0;
}

TH_TEST(session_records_resume_lookup) {
  char dir[256];
  tmpdir(dir, sizeof dir);
  store_t *st = NULL;
  CHECK(store_open(dir, &st) == TH_OK);
  tc_workload wl = conv(16, 14, 32, 3, 1);
  tune_options o;
  quick_opts(&o, "xgb", 24);
  tune_session_t *s = NULL;
  CHECK(tune_session_new_workloads(st, NULL, NULL, &wl, NULL, 1, &o, &s) == TH_OK);
  /* The stages and their resources, in order. */
  CHECK_EQ_INT(tune_session_next_stage(s), TUNE_RES_NONE); /* start task */
  CHECK(tune_session_run_stage(s) == TH_OK);
  CHECK_EQ_INT(tune_session_next_stage(s), TUNE_RES_CPU_BUILD); /* reference */
  CHECK(tune_session_run_stage(s) == TH_OK);
  CHECK_EQ_INT(tune_session_next_stage(s), TUNE_RES_MEASURE);
  CHECK(tune_session_run_stage(s) == TH_OK);
  CHECK_EQ_INT(tune_session_next_stage(s), TUNE_RES_NONE); /* select */
  CHECK(tune_session_run_stage(s) == TH_OK);
  CHECK_EQ_INT(tune_session_next_stage(s), TUNE_RES_CPU_BUILD);
  CHECK(tune_session_run_stage(s) == TH_OK);
  CHECK_EQ_INT(tune_session_next_stage(s), TUNE_RES_MEASURE);
  CHECK(tune_session_run_stage(s) == TH_OK);
  CHECK_EQ_INT(tune_session_next_stage(s), TUNE_RES_NONE); /* update */
  CHECK(tune_session_run_all(s, NULL, NULL) == TH_OK);
  CHECK_EQ_INT(tune_session_next_stage(s), TUNE_RES_DONE);
  tune_progress p;
  tune_session_progress(s, &p);
  CHECK_EQ_INT(p.ntasks, 1);
  CHECK_STR(p.tasks[0].state, "done");
  CHECK_EQ_INT(p.tasks[0].trials, 24);
  CHECK(p.tasks[0].best_gflops > 0.1);
  CHECK(p.trials_done == 24 && p.trials_total == 24);
  tune_session_free(s);
  store_close(st);

  /* The records survive a reopen. */
  CHECK(store_open(dir, &st) == TH_OK);
  char key[512], tstr[256];
  CHECK(tc_workload_key(&wl, key, sizeof key) == TH_OK);
  tc_target host;
  CHECK(tc_target_host(&host) == TH_OK);
  snprintf(tstr, sizeof tstr, "%s", host_target()->str);
  int64_t count = 0;
  CHECK(store_record_count(st, key, tstr, &count) == TH_OK);
  CHECK_EQ_INT(count, 24);
  rec_ctx rc = {.key = key, .best = 1e18};
  CHECK(store_record_each(st, "conv2d_nchwc", tstr, rec_cb, &rc) == TH_OK);
  CHECK_EQ_INT(rc.n, 24);
  CHECK(rc.valid > 0);
  fprintf(stderr, "records: %d, valid %d\n", rc.n, rc.valid);

  /* A rerun resumes: the task is at its budget and is skipped; no new records. */
  CHECK(tune_session_new_workloads(st, NULL, NULL, &wl, NULL, 1, &o, &s) == TH_OK);
  CHECK(tune_session_run_all(s, NULL, NULL) == TH_OK);
  tune_session_progress(s, &p);
  CHECK_STR(p.tasks[0].state, "skipped");
  CHECK_EQ_INT(p.tasks[0].trials, 24);
  CHECK(p.tasks[0].best_gflops > 0.1);
  tune_session_free(s);
  CHECK(store_record_count(st, key, tstr, &count) == TH_OK);
  CHECK_EQ_INT(count, 24);

  /* A bigger budget tunes only the difference. */
  o.trials = 32;
  CHECK(tune_session_new_workloads(st, NULL, NULL, &wl, NULL, 1, &o, &s) == TH_OK);
  CHECK(tune_session_run_all(s, NULL, NULL) == TH_OK);
  tune_session_free(s);
  CHECK(store_record_count(st, key, tstr, &count) == TH_OK);
  CHECK_EQ_INT(count, 32);

  /* Lookup: the tuned workload gets its best record; another shape of the template a transferred config. */
  tc_space sp;
  CHECK(tc_op_space(&wl, &host, &sp) == TH_OK);
  tc_config cfg;
  char source[16];
  CHECK(tune_lookup_config(st, tstr, &wl, &sp, &cfg, source) == TH_OK);
  CHECK_STR(source, "tuned");
  store_record best;
  CHECK(store_record_best(st, key, tstr, &best) == TH_OK);
  CHECK_EQ_INT(tc_space_index(&sp, &cfg), best.config_index);
  tc_workload other = conv(16, 28, 32, 3, 1);
  tc_space sp2;
  CHECK(tc_op_space(&other, &host, &sp2) == TH_OK);
  /* the tuned record moves over only when it uses the algorithm the fallback picks for the other shape */
  tc_config ofb, bcfg;
  CHECK(tc_op_fallback(&other, &host, &sp2, &ofb) == TH_OK);
  CHECK(tune_config_from_text(&sp, best.config, &bcfg) == TH_OK);
  int same = tc_config_int(&sp, &bcfg, "winograd", 0) == tc_config_int(&sp2, &ofb, "winograd", 0);
  CHECK(tune_lookup_config(st, tstr, &other, &sp2, &cfg, source) == TH_OK);
  CHECK_STR(source, same ? "transferred" : "fallback");
  CHECK(tc_op_valid(&other, &host, &sp2, &cfg) == TH_OK);
  CHECK_EQ_INT(tc_config_int(&sp2, &cfg, "winograd", -1), tc_config_int(&sp2, &ofb, "winograd", -2));
  tune_build_lookup_ctx lc = {st, tstr};
  CHECK(tune_build_lookup(&lc, &other, "", &sp2, &cfg, source) == (same ? TH_OK : TH_ERR_NOT_FOUND));
  CHECK(tune_lookup_config(st, "llvm -mcpu=other", &other, &sp2, &cfg, source) == TH_OK);
  CHECK_STR(source, "fallback");
  CHECK(tune_build_lookup(&(tune_build_lookup_ctx){st, "llvm -mcpu=other"}, &other, "", &sp2, &cfg, source) ==
        TH_ERR_NOT_FOUND);
  store_close(st);
  rmdir_r(dir);
  return 0;
}

/* Opens the store in dir and fills the host target and its records' target string. */
static store_t *open_for_host(const char *dir, tc_target *host, char *tstr, size_t n) {
  store_t *st = NULL;
  CHECK(store_open(dir, &st) == TH_OK);
  CHECK(tc_target_host(host) == TH_OK);
  snprintf(tstr, n, "%s", host_target()->str);
  return st;
}

/* A transferred config keeps the algorithm the fallback picks for the workload it moves to: a direct-path
 * record of one 3x3 conv does not replace the Winograd fallback of another, a Winograd record does. */
static void add_record(store_t *st, const tc_workload *wl, const tc_space *sp, const tc_config *c,
                       const char *tstr, double cost, double at) {
  store_record r;
  memset(&r, 0, sizeof r);
  CHECK(tc_workload_key(wl, r.workload_key, sizeof r.workload_key) == TH_OK);
  snprintf(r.template_name, sizeof r.template_name, "%s", tc_kernel_name(wl->kernel));
  snprintf(r.target, sizeof r.target, "%s", tstr);
  CHECK(tc_config_str(sp, c, r.config, sizeof r.config) == TH_OK);
  r.config_index = tc_space_index(sp, c);
  r.cost_mean_s = cost;
  r.gflops = tc_workload_flops(wl) / cost * 1e-9;
  snprintf(r.tuner, sizeof r.tuner, "random");
  r.created_at = at;
  CHECK(store_record_add(st, &r) == TH_OK);
}

TH_TEST(lookup_transfer_keeps_algorithm) {
  char dir[256], tstr[256];
  tmpdir(dir, sizeof dir);
  tc_target host;
  store_t *st = open_for_host(dir, &host, tstr, sizeof tstr);
  tc_workload a = conv(32, 14, 32, 3, 1), b = conv(32, 28, 32, 3, 1);
  tc_space sa, sb;
  CHECK(tc_op_space(&a, &host, &sa) == TH_OK && tc_op_space(&b, &host, &sb) == TH_OK);
  int kw = tc_space_knob(&sa, "winograd");
  CHECK(kw >= 0 && sa.knobs[kw].nvalues == 3 && sa.knobs[kw].algo);
  tc_config fa, fb, cfg;
  CHECK(tc_op_fallback(&a, &host, &sa, &fa) == TH_OK && tc_op_fallback(&b, &host, &sb, &fb) == TH_OK);
  CHECK(tc_config_int(&sb, &fb, "winograd", 0) > 0); /* small weights: the fallback is Winograd */
  /* a's record: its fallback turned into a direct-path config */
  tc_config direct = fa;
  direct.idx[kw] = 0;
  CHECK(tc_op_valid(&a, &host, &sa, &direct) == TH_OK);
  add_record(st, &a, &sa, &direct, tstr, 1e-4, 1.0);
  char source[16];
  CHECK(tune_lookup_config(st, tstr, &b, &sb, &cfg, source) == TH_OK);
  CHECK_STR(source, "fallback");
  CHECK_EQ_INT(tc_space_index(&sb, &cfg), tc_space_index(&sb, &fb));
  /* a faster Winograd record of a: it moves over */
  add_record(st, &a, &sa, &fa, tstr, 5e-5, 2.0);
  CHECK(tune_lookup_config(st, tstr, &b, &sb, &cfg, source) == TH_OK);
  CHECK_STR(source, "transferred");
  CHECK(tc_config_int(&sb, &cfg, "winograd", 0) == tc_config_int(&sa, &fa, "winograd", -1));
  store_close(st);
  rmdir_r(dir);
  return 0;
}

/* Transfer: a new workload of the same template is seeded with the best config of a tuned one. */
TH_TEST(session_transfer_seeds_new_task) {
  char dir[256];
  tmpdir(dir, sizeof dir);
  store_t *st = NULL;
  CHECK(store_open(dir, &st) == TH_OK);
  tc_workload a = conv(32, 14, 32, 3, 1), b = conv(32, 28, 32, 3, 1);
  tune_options o;
  quick_opts(&o, "xgb", 16);
  tune_session_t *s = NULL;
  CHECK(tune_session_new_workloads(st, NULL, NULL, &a, NULL, 1, &o, &s) == TH_OK);
  CHECK(tune_session_run_all(s, NULL, NULL) == TH_OK);
  tune_session_free(s);
  char ka[512], kb[512], tstr[256];
  tc_target host;
  CHECK(tc_target_host(&host) == TH_OK);
  snprintf(tstr, sizeof tstr, "%s", host_target()->str);
  CHECK(tc_workload_key(&a, ka, sizeof ka) == TH_OK);
  CHECK(tc_workload_key(&b, kb, sizeof kb) == TH_OK);
  store_record best;
  CHECK(store_record_best(st, ka, tstr, &best) == TH_OK);
  /* One trial of b with the random tuner: without transfer it would be a random config; with transfer it is
   * a's best config (valid here: same channels, so the same blocks). */
  quick_opts(&o, "random", 1);
  o.batch = 1;
  o.seed = 99;
  o.verify_top = 0; /* the best record is then that one trial (verification might prefer the fallback) */
  CHECK(tune_session_new_workloads(st, NULL, NULL, &b, NULL, 1, &o, &s) == TH_OK);
  CHECK(tune_session_run_all(s, NULL, NULL) == TH_OK);
  tune_session_free(s);
  tc_space spb;
  CHECK(tc_op_space(&b, &host, &spb) == TH_OK);
  tc_config expect;
  CHECK(tune_config_from_text_nearest(&spb, best.config, &expect, NULL) == TH_OK);
  CHECK(tc_op_valid(&b, &host, &spb, &expect) == TH_OK);
  char expect_text[1024];
  CHECK(tc_config_str(&spb, &expect, expect_text, sizeof expect_text) == TH_OK);
  int64_t count = 0;
  CHECK(store_record_count(st, kb, tstr, &count) == TH_OK);
  CHECK_EQ_INT(count, 1);
  store_record bb;
  CHECK(store_record_best(st, kb, tstr, &bb) == TH_OK);
  CHECK_STR(bb.config, expect_text);
  store_close(st);
  rmdir_r(dir);
  return 0;
}

static int cli(const char *line) {
  char buf[512];
  char *argv[32];
  int argc = 0;
  snprintf(buf, sizeof buf, "%s", line);
  for (char *t = strtok(buf, " "); t && argc < 31; t = strtok(NULL, " ")) argv[argc++] = t;
  argv[argc] = NULL;
  return tune_cli_main(argc, argv);
}

/* cuda tuning needs a device: without one the CLI fails with "no CUDA device" (exit 1, not a usage error) */
TH_TEST(cli_cuda_without_device) {
  if (access("/dev/nvidia0", F_OK) == 0) return TH_SKIP; /* a GPU machine: this case is about the device-less path */
  char dir[] = "/tmp/th_cli_cuda_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char line[256];
  snprintf(line, sizeof line, "tune cuda squeezenet_v1.1 1 --trials 2 --data %s", dir);
  CHECK_EQ_INT(cli(line), 1);
  return 0;
}

TH_TEST(cli_rejects_bad_input) {
  CHECK_EQ_INT(cli("tune"), 2);
  CHECK_EQ_INT(cli("tune tensorflow resnet-18 1"), 2);
  CHECK_EQ_INT(cli("tune llvm resnet-19 1"), 2);
  CHECK_EQ_INT(cli("tune cuda resnet-19 1"), 2);
  CHECK_EQ_INT(cli("tune llvm resnet-18 0"), 2);
  CHECK_EQ_INT(cli("tune llvm resnet-18 abc"), 2);
  CHECK_EQ_INT(cli("tune llvm resnet-18 1 --tuner sgd"), 2);
  CHECK_EQ_INT(cli("tune llvm resnet-18 1 --trials 0"), 2);
  CHECK_EQ_INT(cli("tune llvm resnet-18 1 --bogus"), 2);
  return 0;
}

typedef struct count_ctx {
  int n;
  char keys[64][512];
  int nkeys;
} count_ctx;

static int count_cb(void *ctx, const store_record *r) {
  count_ctx *c = ctx;
  if (strcmp(r->tuner, STORE_TUNER_VERIFY) == 0) return 0; /* not trials */
  c->n++;
  for (int i = 0; i < c->nkeys; i++)
    if (strcmp(c->keys[i], r->workload_key) == 0) return 0;
  if (c->nkeys < 64) snprintf(c->keys[c->nkeys++], 512, "%s", r->workload_key);
  return 0;
}

/* The CLI tunes a whole network (one trial per task), then a rerun finds every task at its budget. */
TH_TEST(cli_tunes_network_and_resumes) {
  char dir[256], line[512];
  tmpdir(dir, sizeof dir);
  snprintf(line, sizeof line, "tune llvm resnet-18 1 --trials 1 --batch-size 1 --data %s", dir);
  CHECK_EQ_INT(cli(line), 0);
  tc_target host;
  char tstr[256];
  store_t *st = open_for_host(dir, &host, tstr, sizeof tstr);
  count_ctx c1 = {0};
  CHECK(store_record_each(st, "conv2d_nchwc", tstr, count_cb, &c1) == TH_OK);
  CHECK(c1.nkeys >= 8); /* resnet-18 has about a dozen distinct convolutions */
  CHECK_EQ_INT(c1.n, c1.nkeys); /* one trial each */
  store_close(st);
  CHECK_EQ_INT(cli(line), 0); /* resume: nothing left to do */
  CHECK(store_open(dir, &st) == TH_OK);
  count_ctx c2 = {0};
  CHECK(store_record_each(st, "conv2d_nchwc", tstr, count_cb, &c2) == TH_OK);
  CHECK_EQ_INT(c2.n, c1.n);
  store_close(st);
  rmdir_r(dir);
  return 0;
}

/* Every strategy runs end to end on a small real convolution: budget respected, records written, a valid
 * best found. */
typedef struct trial_of_ctx {
  const char *config, *tuner;
  int found;
} trial_of_ctx;

static int trial_of_cb(void *ctx, const store_record *r) {
  trial_of_ctx *c = ctx;
  c->found |= strcmp(r->config, c->config) == 0 && strcmp(r->tuner, c->tuner) == 0;
  return 0;
}

TH_TEST(session_every_strategy_small_conv) {
  const char *kinds[] = {"xgb", "ga", "random", "grid"};
  tc_workload wl = conv(16, 7, 16, 3, 1);
  char key[512], tstr[256];
  CHECK(tc_workload_key(&wl, key, sizeof key) == TH_OK);
  tc_target host;
  CHECK(tc_target_host(&host) == TH_OK);
  snprintf(tstr, sizeof tstr, "%s", host_target()->str);
  for (int k = 0; k < 4; k++) {
    char dir[256];
    tmpdir(dir, sizeof dir);
    store_t *st = NULL;
    CHECK(store_open(dir, &st) == TH_OK);
    tune_options o;
    quick_opts(&o, kinds[k], 10);
    o.batch = 4;
    tune_session_t *s = NULL;
    CHECK(tune_session_new_workloads(st, NULL, NULL, &wl, NULL, 1, &o, &s) == TH_OK);
    CHECK(tune_session_run_all(s, NULL, NULL) == TH_OK);
    tune_progress p;
    tune_session_progress(s, &p);
    CHECK_EQ_INT(p.tasks[0].trials, 10);
    CHECK(p.tasks[0].best_gflops > 0);
    fprintf(stderr, "%s: best %.2f GFLOP/s in 10 trials\n", kinds[k], p.tasks[0].best_gflops);
    tune_session_free(s);
    int64_t n = 0;
    CHECK(store_record_count(st, key, tstr, &n) == TH_OK);
    CHECK_EQ_INT(n, 10);
    store_record best;
    CHECK(store_record_best(st, key, tstr, &best) == TH_OK);
    /* builds apply the verified choice, one of this strategy's trials */
    CHECK_STR(best.tuner, STORE_TUNER_VERIFY);
    trial_of_ctx tc = {.config = best.config, .tuner = kinds[k]};
    CHECK(store_record_each(st, "conv2d_nchwc", tstr, trial_of_cb, &tc) == TH_OK);
    CHECK(tc.found);
    store_close(st);
    rmdir_r(dir);
  }
  return 0;
}

typedef struct gemm_rec_ctx {
  const char *key;
  int trials, failed;
} gemm_rec_ctx;

static int gemm_rec_cb(void *ctx, const store_record *r) {
  gemm_rec_ctx *c = ctx;
  if (strcmp(r->workload_key, c->key) != 0 || strcmp(r->tuner, STORE_TUNER_VERIFY) == 0) return 0;
  c->trials++;
  if (r->error_class != 0) {
    fprintf(stderr, "%s: class %d config %s\n", c->key, r->error_class, r->config);
    c->failed++;
  }
  return 0;
}

/* The GEMM families through the whole tuner: random dense (packed weights, a gelu epilogue) and
 * batch_matmul (Q.K^T: three buffers, B transposed) configs are built, timed and checked against the
 * fallback's output; every valid config computes the same function, so no trial fails. */
TH_TEST(session_tunes_gemm_families) {
  tc_workload wls[2];
  memset(wls, 0, sizeof wls);
  wls[0].kernel = TC_KERNEL_DENSE;
  wls[0].n = 37, wls[0].c = 96, wls[0].oc = 72;
  wls[0].epilogue = TC_EPI_BIAS | TC_EPI_GELU;
  wls[1].kernel = TC_KERNEL_BATCH_MATMUL;
  wls[1].n = 3, wls[1].h = wls[1].oh = 29, wls[1].c = 64, wls[1].oc = 29;
  wls[1].trans_b = 1, wls[1].alpha = 0.125f;
  wls[0].h = wls[0].oh = wls[0].kh = wls[0].kw = wls[0].sh = wls[0].sw = 1;
  for (int i = 0; i < 2; i++) wls[i].w = wls[i].ow = wls[i].in_cb = wls[i].out_cb = 1;
  char dir[256], tstr[256];
  tmpdir(dir, sizeof dir);
  snprintf(tstr, sizeof tstr, "%s", host_target()->str);
  store_t *st = NULL;
  CHECK(store_open(dir, &st) == TH_OK);
  tune_options o;
  quick_opts(&o, "random", 8);
  tune_session_t *s = NULL;
  CHECK(tune_session_new_workloads(st, NULL, NULL, wls, NULL, 2, &o, &s) == TH_OK);
  CHECK(tune_session_run_all(s, NULL, NULL) == TH_OK);
  tune_session_free(s);
  for (int i = 0; i < 2; i++) {
    char key[512];
    CHECK(tc_workload_key(&wls[i], key, sizeof key) == TH_OK);
    gemm_rec_ctx c = {.key = key};
    CHECK(store_record_each(st, tc_kernel_name(wls[i].kernel), tstr, gemm_rec_cb, &c) == TH_OK);
    CHECK_EQ_INT(c.trials, 8);
    CHECK_EQ_INT(c.failed, 0);
  }
  store_close(st);
  rmdir_r(dir);
  return 0;
}

/* Build isolation: the fault hook (run in the build child) hangs on one candidate and crashes on
 * another; only those two fail, as class 6 and class 2, and the others build into usable libraries.
 * A session whose builds hang on a quarter of the space records class 6 trials and still finds a
 * valid best. */
static int count_err6(void *ctx, const store_record *r) {
  int *n = ctx;
  if (r->error_class == TC_ERROR_CLASS_BUILD_TIMEOUT) n[0]++;
  if (r->error_class == 0) n[1]++;
  return 0;
}

/* The build worker this executable becomes when a test sets tune_build_worker_argv to
 * {"/proc/self/exe", "build-worker"}, as tunehub's main does: it takes the faults to inject from the file in
 * TH_TEST_BUILD_FAULTS (the hang and crash configs), and notes its pid in TH_TEST_BUILD_EXEC_LOG, so that the
 * test sees the exec happen. Not a TH_TEST. */
static int build_worker_entry(void) {
  const char *log = getenv("TH_TEST_BUILD_EXEC_LOG");
  faults_load();
  FILE *l = log ? fopen(log, "a") : NULL;
  if (l) {
    fprintf(l, "%ld\n", (long)getpid());
    fclose(l);
  }
  exit(tune_build_worker_main(0));
}
__attribute__((constructor)) static void register_build_worker(void) {
  th_test_register("build-worker", build_worker_entry);
}

static int count_lines(const char *path) {
  int n = 0;
  FILE *l = fopen(path, "r");
  for (long pid; l && fscanf(l, "%ld", &pid) == 1;) n++;
  if (l) fclose(l);
  return n;
}

/* Four candidates of one task in one library, the second hanging and the third crashing its compiler: each
 * child is a fork (exec 0) or an exec'd build worker (exec 1). Returns the directory the libraries are in. */
static void isolation_case(int exec, char *dir, size_t dirn) {
  tc_workload wl = conv(16, 7, 16, 3, 1);
  tc_target host;
  CHECK(tc_target_host(&host) == TH_OK);
  tune_task t;
  CHECK(tune_task_init(&t, &wl, host_target(), 1) == TH_OK);
  tc_config cfgs[4];
  cfgs[0] = t.fallback;
  tune_rng rng;
  tune_rng_seed(&rng, 7);
  for (int i = 1; i < 4; i++) {
    do tune_space_random(&t.space, &rng, &cfgs[i]);
    while (!tune_task_valid(&t, &t.space, &cfgs[i]) || same_cfg(&cfgs[i], &cfgs[0]) ||
           (i > 1 && same_cfg(&cfgs[i], &cfgs[1])) || (i > 2 && same_cfg(&cfgs[i], &cfgs[2])));
  }
  g_hang_cfg = cfgs[1];
  g_crash_cfg = cfgs[2];
  g_hang_mod = 0;
  tmpdir(dir, dirn);
  char faults[300], log[300];
  static char *const worker_argv[] = {"/proc/self/exe", "build-worker", NULL};
  snprintf(faults, sizeof faults, "%s/faults.bin", dir);
  snprintf(log, sizeof log, "%s/exec.log", dir);
  if (exec) {
    faults_write(faults);
    setenv("TH_TEST_BUILD_EXEC_LOG", log, 1);
    tune_build_worker_argv = worker_argv;
  } else {
    tune_build_fault_hook = fault_hook;
  }
  char so[4][TUNE_PATH_MAX], fn[4][TUNE_FN_MAX], msg[4][160];
  int ec[4];
  CHECK(tune_task_build(&t, cfgs, 4, 1, 1.0, dir, "iso", so, fn, ec, msg) == TH_OK);
  fprintf(stderr, "build classes %d %d %d %d: %s / %s\n", ec[0], ec[1], ec[2], ec[3], msg[1], msg[2]);
  CHECK_EQ_INT(ec[0], 0);
  CHECK_EQ_INT(ec[1], TC_ERROR_CLASS_BUILD_TIMEOUT);
  CHECK(strstr(msg[1], "timed out") != NULL);
  CHECK_EQ_INT(ec[2], TC_ERROR_CLASS_COMPILE_HOST);
  CHECK(strstr(msg[2], "crashed") != NULL);
  CHECK_EQ_INT(ec[3], 0);
  CHECK(access(so[0], R_OK) == 0 && access(so[3], R_OK) == 0);
  CHECK(so[1][0] == 0 && so[2][0] == 0);

  /* exec'd workers: one for the library of four (killed when it hung), a second for candidate 0 that also
   * takes candidate 1 (and is killed when that hangs), a third that candidate 2 crashes, a fourth for 3 */
  CHECK_EQ_INT(count_lines(log), exec ? 4 : 0);
  /* the same candidates without faults all build, in one child per thread (workers that know no faults) */
  tune_build_fault_hook = NULL;
  unsetenv("TH_TEST_BUILD_FAULTS");
  tune_build_workers_stop();
  CHECK(tune_task_build(&t, cfgs, 4, 2, 0, dir, "ok", so, fn, ec, msg) == TH_OK);
  for (int i = 0; i < 4; i++) CHECK_EQ_INT(ec[i], 0);
  /* the libraries the workers built are real: the fallback's runs in this process */
  void *h = dlopen(so[0], RTLD_NOW | RTLD_LOCAL);
  CHECK(h != NULL && dlsym(h, fn[0]) != NULL);
  dlclose(h);
  int execs = count_lines(log);
  fprintf(stderr, "%s build workers: %d exec'd after the faultless build\n", exec ? "exec" : "fork", execs);
  CHECK(exec ? execs == 5 || execs == 6 : execs == 0); /* one or two more: the second thread may reuse */
  /* a worker serves library after library: two more builds start none */
  CHECK(tune_task_build(&t, cfgs, 4, 1, 0, dir, "again", so, fn, ec, msg) == TH_OK);
  CHECK(tune_task_build(&t, cfgs, 4, 1, 0, dir, "again2", so, fn, ec, msg) == TH_OK);
  for (int i = 0; i < 4; i++) CHECK_EQ_INT(ec[i], 0);
  fprintf(stderr, "%s build workers: %d exec'd, %d after two more libraries\n", exec ? "exec" : "fork", execs,
          count_lines(log));
  CHECK_EQ_INT(count_lines(log), execs);
  tune_build_workers_stop();
  tune_build_worker_argv = NULL;
  unsetenv("TH_TEST_BUILD_EXEC_LOG");
}

TH_TEST(build_worker_exec_isolates_hang_and_crash) {
  char dir[256];
  isolation_case(1, dir, sizeof dir);
  rmdir_r(dir);
  return 0;
}

TH_TEST(build_isolates_hang_and_crash) {
  char dir[256];
  isolation_case(0, dir, sizeof dir);
  rmdir_r(dir);

  /* a session goes on past build timeouts, and records them */
  tc_workload wl = conv(16, 7, 16, 3, 1);
  tune_task t;
  CHECK(tune_task_init(&t, &wl, host_target(), 1) == TH_OK);
  char sdir[256];
  tmpdir(sdir, sizeof sdir);
  store_t *st = NULL;
  CHECK(store_open(sdir, &st) == TH_OK);
  tune_options o;
  quick_opts(&o, "random", 12);
  o.batch = 6;
  o.build_timeout_s = 1.0;
  memset(&g_hang_cfg, 0, sizeof g_hang_cfg);
  memset(&g_crash_cfg, 0, sizeof g_crash_cfg);
  g_hang_mod = 4;
  tune_build_fault_hook = fault_hook;
  tune_session_t *s = NULL;
  CHECK(tune_session_new_workloads(st, NULL, NULL, &wl, NULL, 1, &o, &s) == TH_OK);
  CHECK(tune_session_run_all(s, NULL, NULL) == TH_OK);
  tune_build_fault_hook = NULL;
  tune_progress p;
  tune_session_progress(s, &p);
  CHECK_EQ_INT(p.tasks[0].trials, 12);
  CHECK(p.tasks[0].best_gflops > 0);
  tune_session_free(s);
  int n[2] = {0, 0};
  CHECK(store_record_each(st, t.template_name, t.target_str, count_err6, n) == TH_OK);
  fprintf(stderr, "session: %d build timeouts, %d valid of 12\n", n[0], n[1]);
  CHECK(n[0] >= 1);
  CHECK(n[1] >= 1);
  store_close(st);
  rmdir_r(sdir);
  return 0;
}

/* Without records to transfer, a task's first trial is its fallback config, so the tuned choice is measured
 * against the fallback under the same conditions. */
TH_TEST(session_first_trial_is_fallback) {
  char dir[256];
  tmpdir(dir, sizeof dir);
  store_t *st = NULL;
  CHECK(store_open(dir, &st) == TH_OK);
  tc_workload wl = conv(16, 14, 32, 3, 1);
  tune_options o;
  quick_opts(&o, "random", 1);
  o.batch = 1;
  o.seed = 5;
  tune_session_t *s = NULL;
  CHECK(tune_session_new_workloads(st, NULL, NULL, &wl, NULL, 1, &o, &s) == TH_OK);
  CHECK(tune_session_run_all(s, NULL, NULL) == TH_OK);
  tune_session_free(s);
  tc_target host;
  CHECK(tc_target_host(&host) == TH_OK);
  tune_task t;
  CHECK(tune_task_init(&t, &wl, host_target(), 1) == TH_OK);
  char fb[1024];
  CHECK(tc_config_str(&t.space, &t.fallback, fb, sizeof fb) == TH_OK);
  store_record r;
  CHECK(store_record_best(st, t.key, t.target_str, &r) == TH_OK);
  CHECK_STR(r.config, fb);
  store_close(st);
  rmdir_r(dir);
  return 0;
}

/* With a build limit (a scheduler granted part of a shared pool), a batch is compiled over several build
 * stages of at most that many candidates before it is measured, and every candidate is still timed. */
TH_TEST(session_build_limit_slices_batch) {
  char dir[256];
  tmpdir(dir, sizeof dir);
  store_t *st = NULL;
  CHECK(store_open(dir, &st) == TH_OK);
  tc_workload wl = conv(16, 14, 32, 3, 1);
  tune_options o;
  quick_opts(&o, "random", 8);
  o.seed = 3;
  tune_session_t *s = NULL;
  CHECK(tune_session_new_workloads(st, NULL, NULL, &wl, NULL, 1, &o, &s) == TH_OK);
  tune_session_set_build_threads(s, 1);
  tune_session_set_build_limit(s, 3);
  int builds = 0, measures = 0;
  while (tune_session_next_stage(s) != TUNE_RES_DONE) {
    tune_progress p;
    tune_session_progress(s, &p);
    int trials = strcmp(p.tasks[0].state, "tuning") == 0; /* not the verification at the end */
    if (trials && strcmp(p.stage, "build") == 0) builds++;
    if (trials && strcmp(p.stage, "measure") == 0) {
      measures++;
      CHECK_EQ_INT(builds, 3); /* 8 candidates: 3 + 3 + 2, all before the measurement */
    }
    CHECK(tune_session_run_stage(s) == TH_OK);
  }
  CHECK_EQ_INT(measures, 1);
  tune_progress p;
  tune_session_progress(s, &p);
  CHECK_EQ_INT(p.tasks[0].trials, 8);
  CHECK_EQ_INT(p.tasks[0].errors, 0);
  tune_session_free(s);
  tc_target host;
  CHECK(tc_target_host(&host) == TH_OK);
  tune_task t;
  CHECK(tune_task_init(&t, &wl, host_target(), 1) == TH_OK);
  int64_t nrec = 0;
  CHECK(store_record_count(st, t.key, t.target_str, &nrec) == TH_OK);
  CHECK_EQ_INT((int)nrec, 8);
  store_close(st);
  rmdir_r(dir);
  return 0;
}

typedef struct verify_ctx {
  const char *key;
  int ntrials, nverify;
  struct {
    char config[1024];
    double cost;
  } trials[64], verify[16];
  double verify_at;
  int verify_times; /* distinct created_at values of the verification records */
} verify_ctx;

static int verify_cb(void *ctx, const store_record *r) {
  verify_ctx *c = ctx;
  if (strcmp(r->workload_key, c->key) != 0) return 0;
  if (strcmp(r->tuner, STORE_TUNER_VERIFY) == 0) {
    CHECK(c->nverify < 16);
    if (c->nverify == 0 || r->created_at != c->verify_at) c->verify_times++;
    c->verify_at = r->created_at;
    snprintf(c->verify[c->nverify].config, 1024, "%s", r->config);
    c->verify[c->nverify++].cost = r->error_class == 0 ? r->cost_mean_s : 1e9;
  } else if (r->error_class == 0) {
    CHECK(c->ntrials < 64);
    snprintf(c->trials[c->ntrials].config, 1024, "%s", r->config);
    c->trials[c->ntrials++].cost = r->cost_mean_s;
  }
  return 0;
}

static int verify_has(const verify_ctx *c, const char *config) {
  for (int i = 0; i < c->nverify; i++)
    if (strcmp(c->verify[i].config, config) == 0) return 1;
  return 0;
}

/* At a task's end its three fastest distinct trial configs and the fallback are timed again side by side; the
 * verification records are not trials, builds apply the fastest of them, and a task whose trials were done
 * before a run stopped is verified on the next run without new trials. */
TH_TEST(session_verifies_best_configs) {
  char dir[256];
  tmpdir(dir, sizeof dir);
  store_t *st = NULL;
  CHECK(store_open(dir, &st) == TH_OK);
  tc_workload wl = conv(16, 14, 32, 3, 1);
  tc_target host;
  CHECK(tc_target_host(&host) == TH_OK);
  tune_task t;
  CHECK(tune_task_init(&t, &wl, host_target(), 1) == TH_OK);
  char fb[1024];
  CHECK(tc_config_str(&t.space, &t.fallback, fb, sizeof fb) == TH_OK);

  /* The trials end as if the run had stopped before verifying: verification off. */
  tune_options o;
  quick_opts(&o, "random", 16);
  o.seed = 11;
  o.verify_top = 0;
  tune_session_t *s = NULL;
  CHECK(tune_session_new_workloads(st, NULL, NULL, &wl, NULL, 1, &o, &s) == TH_OK);
  CHECK(tune_session_run_all(s, NULL, NULL) == TH_OK);
  tune_session_free(s);
  verify_ctx *c = calloc(1, sizeof *c);
  c->key = t.key;
  CHECK(store_record_each(st, t.template_name, t.target_str, verify_cb, c) == TH_OK);
  CHECK_EQ_INT(c->nverify, 0);
  CHECK(c->ntrials >= 4);

  /* The next run finds the budget spent and only verifies. */
  o.verify_top = TUNE_VERIFY_TOP;
  CHECK(tune_session_new_workloads(st, NULL, NULL, &wl, NULL, 1, &o, &s) == TH_OK);
  CHECK(tune_session_run_all(s, NULL, NULL) == TH_OK);
  tune_progress p;
  tune_session_progress(s, &p);
  CHECK_STR(p.tasks[0].state, "done");
  CHECK_EQ_INT(p.tasks[0].trials, 16);
  CHECK(p.tasks[0].verified_gflops > 0);
  double verified_gflops = p.tasks[0].verified_gflops;
  tune_session_free(s);
  int64_t count = 0;
  CHECK(store_record_count(st, t.key, t.target_str, &count) == TH_OK);
  CHECK_EQ_INT((int)count, 16);
  memset(c, 0, sizeof *c);
  c->key = t.key;
  CHECK(store_record_each(st, t.template_name, t.target_str, verify_cb, c) == TH_OK);
  /* the three fastest distinct configs of the trials, and the fallback */
  int top = 0;
  for (int k = 0; k < 3; k++) {
    int bi = -1;
    for (int i = 0; i < c->ntrials; i++)
      if (c->trials[i].cost < 1e8 && (bi < 0 || c->trials[i].cost < c->trials[bi].cost)) bi = i;
    if (bi < 0) break;
    CHECK(verify_has(c, c->trials[bi].config));
    top += strcmp(c->trials[bi].config, fb) != 0;
    for (int i = 0; i < c->ntrials; i++) /* take every copy of that config out */
      if (i != bi && strcmp(c->trials[i].config, c->trials[bi].config) == 0) c->trials[i].cost = 1e9;
    c->trials[bi].cost = 1e9;
  }
  CHECK(verify_has(c, fb));
  CHECK_EQ_INT(c->nverify, top + 1);
  CHECK_EQ_INT(c->verify_times, 1);
  /* a build applies the fastest verified config, by its verified time */
  store_record best;
  CHECK(store_record_best(st, t.key, t.target_str, &best) == TH_OK);
  CHECK_STR(best.tuner, STORE_TUNER_VERIFY);
  for (int i = 0; i < c->nverify; i++) CHECK(best.cost_mean_s <= c->verify[i].cost);
  CHECK(fabs(best.gflops - verified_gflops) < 1e-6 * verified_gflops + 1e-9);

  /* A rerun skips the verified task, adds nothing, and reports the verified time. */
  CHECK(tune_session_new_workloads(st, NULL, NULL, &wl, NULL, 1, &o, &s) == TH_OK);
  CHECK(tune_session_run_all(s, NULL, NULL) == TH_OK);
  tune_session_progress(s, &p);
  CHECK_STR(p.tasks[0].state, "skipped");
  CHECK(fabs(p.tasks[0].verified_gflops - verified_gflops) < 1e-6 * verified_gflops + 1e-9);
  tune_session_free(s);
  int before = c->nverify;
  memset(c, 0, sizeof *c);
  c->key = t.key;
  CHECK(store_record_each(st, t.template_name, t.target_str, verify_cb, c) == TH_OK);
  CHECK_EQ_INT(c->nverify, before);
  free(c);
  store_close(st);
  rmdir_r(dir);
  return 0;
}

/* Every config compiled by the build children, counted across fork through an O_APPEND file. */
static int g_build_log = -1;
static void count_build_hook(const tc_config *c) {
  (void)c;
  if (g_build_log >= 0 && write(g_build_log, "x", 1) != 1) abort();
}

static long builds_with_verify(int verify_top, int *nverify) {
  char dir[256], logp[300];
  tmpdir(dir, sizeof dir);
  snprintf(logp, sizeof logp, "%s/builds.log", dir);
  g_build_log = open(logp, O_WRONLY | O_CREAT | O_APPEND, 0600);
  CHECK(g_build_log >= 0);
  store_t *st = NULL;
  CHECK(store_open(dir, &st) == TH_OK);
  tc_workload wl = conv(16, 14, 32, 3, 1);
  tune_options o;
  quick_opts(&o, "random", 16);
  o.seed = 5;
  o.verify_top = verify_top;
  tune_session_t *s = NULL;
  tune_build_fault_hook = count_build_hook;
  CHECK(tune_session_new_workloads(st, NULL, NULL, &wl, NULL, 1, &o, &s) == TH_OK);
  CHECK(tune_session_run_all(s, NULL, NULL) == TH_OK);
  tune_build_fault_hook = NULL;
  tune_progress p;
  tune_session_progress(s, &p);
  CHECK_STR(p.tasks[0].state, "done");
  if (verify_top > 0) CHECK(p.tasks[0].verified_gflops > 0);
  tune_session_free(s);
  tc_target host;
  CHECK(tc_target_host(&host) == TH_OK);
  tune_task t;
  CHECK(tune_task_init(&t, &wl, host_target(), 1) == TH_OK);
  verify_ctx *c = calloc(1, sizeof *c);
  c->key = t.key;
  CHECK(store_record_each(st, t.template_name, t.target_str, verify_cb, c) == TH_OK);
  *nverify = c->nverify;
  free(c);
  store_close(st);
  close(g_build_log);
  g_build_log = -1;
  struct stat sb;
  CHECK(stat(logp, &sb) == 0);
  rmdir_r(dir);
  return (long)sb.st_size;
}

/* Verification at a task's end times its top configs and the fallback from the libraries the task already
 * built (its trials, the reference): with the same seed, a session that verifies compiles no more configs
 * than one that does not. */
TH_TEST(verification_reuses_trial_libraries) {
  int nv0 = 0, nv3 = 0;
  long without = builds_with_verify(0, &nv0);
  long with = builds_with_verify(TUNE_VERIFY_TOP, &nv3);
  CHECK_EQ_INT(nv0, 0);
  CHECK(nv3 >= 2); /* the fastest configs and the fallback were re-timed */
  CHECK(without >= 8);
  CHECK_EQ_INT((int)with, (int)without);
  return 0;
}

/* The tensor families tune end to end on the CPU: tune_task_layout sizes their arguments as the kernels
 * touch them (the worker's guard bytes catch a write past a buffer, its NaN-poisoned outputs an element
 * left unwritten), int64 inputs included, and a copy into part of its output is timed too. */
TH_TEST(session_tunes_tensor_families) {
  char dir[256];
  tmpdir(dir, sizeof dir);
  store_t *st = NULL;
  CHECK(store_open(dir, &st) == TH_OK);
  tc_workload wls[9];
  int n = 0;
  /* bert's additive mask, x * 3.4e38 - 3.4e38: -inf for the worker's negative inputs is the right answer */
  wls[n] = tensor_wl(TC_KERNEL_UNARY, 256, 1, 1, 1);
  wls[n].op = TC_UNARY_AFFINE;
  wls[n].alpha = 3.40282347e38f;
  wls[n++].beta = -3.40282347e38f;
  wls[n] = tensor_wl(TC_KERNEL_LAYER_NORM, 64, 129, 1, 1);
  wls[n].alpha = 1e-5f;
  wls[n++].epilogue = TC_EPI_RESIDUAL;
  wls[n] = tensor_wl(TC_KERNEL_SOFTMAX_ROWS, 2, 3, 33, 35);
  wls[n].alpha = 0.125f;
  wls[n++].epilogue = TC_EPI_MASK;
  wls[n] = tensor_wl(TC_KERNEL_UNARY, 9000, 1, 1, 1);
  wls[n++].op = TC_UNARY_CAST_I64;
  wls[n] = tensor_wl(TC_KERNEL_UNARY, 9000, 1, 1, 1);
  wls[n++].op = TC_UNARY_GELU;
  wls[n] = tensor_wl(TC_KERNEL_EMBEDDING, 40, 50, 1, 1);
  wls[n++].oc = 65;
  /* [3, 5, 16] -> [5, 3, 16], and [3, 16] into rows 2..5 of a [6, 16] output */
  wls[n++] = strided_wl(TC_KERNEL_COPY, 3, (int[]){5, 3, 16}, (int[]){16, 80, 1}, (int[]){48, 16, 1});
  wls[n] = strided_wl(TC_KERNEL_COPY, 2, (int[]){3, 16}, (int[]){16, 1}, (int[]){16, 1});
  wls[n++].boff = 32;
  wls[n] = strided_wl(TC_KERNEL_BINARY, 2, (int[]){70, 129}, (int[]){129, 1}, (int[]){0, 1});
  wls[n++].op = TC_BINARY_SUB;
  tune_options o;
  quick_opts(&o, "random", 3);
  o.batch = 3;
  tune_session_t *s = NULL;
  CHECK(tune_session_new_workloads(st, NULL, NULL, wls, NULL, n, &o, &s) == TH_OK);
  CHECK(tune_session_run_all(s, NULL, NULL) == TH_OK);
  tune_progress p;
  tune_session_progress(s, &p);
  CHECK_EQ_INT(p.ntasks, n);
  for (int i = 0; i < n; i++) {
    fprintf(stderr, "%s: %s, %lld trials, %lld errors, best %.3g s %s\n", p.tasks[i].key, p.tasks[i].state,
            (long long)p.tasks[i].trials, (long long)p.tasks[i].errors, p.tasks[i].best_s, p.tasks[i].msg);
    CHECK(p.tasks[i].best_s > 0);
    CHECK_EQ_INT(p.tasks[i].errors, 0);
  }
  tune_session_free(s);
  store_close(st);
  rmdir_r(dir);
  return 0;
}
