/* Claims against a shared store (issue 24): W worker processes claim and finish trivial jobs through the store's
 * own calls (store_job_claim with a lease, store_job_finish fenced by the attempt), as `tunehub worker` does
 * without the build.
 *   throughput: N jobs queued up front, then W workers drain them: claims per second.
 *   latency:    W idle workers; a job queued every 20 ms, M in all; the time from the enqueue to the claim,
 *               once with workers woken by NOTIFY (store_listener) and once with workers that look once a second
 *               (the scheduler's fallback).
 * usage: claims_bench URL [--workers 8] [--jobs 2000] [--latency-jobs 100] [--lease 30]
 * (--lease 0: claims without a lease, the cost of the lease by difference) */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store.h"
#include "th_util.h"

static store_t *open_or_die(const char *url, const char *dir) {
  store_t *st = NULL;
  if (store_open_db(url, dir, &st) != TH_OK) {
    fprintf(stderr, "open %s: %s\n", url, store_errmsg(NULL));
    exit(1);
  }
  return st;
}

static void enqueue(store_t *st, const char *tag, int i) {
  store_key k;
  memset(&k, 0, sizeof k);
  snprintf(k.framework, sizeof k.framework, "llvm");
  snprintf(k.network, sizeof k.network, "%s-%d", tag, i);
  k.batch = 1;
  snprintf(k.target, sizeof k.target, "llvm -mcpu=bench");
  snprintf(k.compiler_version, sizeof k.compiler_version, "bench");
  int64_t id;
  int created;
  if (store_job_enqueue(st, &k, "build", "{}", 0, &id, &created) != TH_OK) {
    fprintf(stderr, "enqueue: %s\n", store_errmsg(st));
    exit(1);
  }
}

/* One worker process: claims and finishes until told to stop (SIGTERM) or, with drain, until the queue is
 * empty; writes "claims latency_sum_s latency_max_s" and each latency to out. mode 0: no waiting (drain);
 * 1: wait on NOTIFY; 2: look once a second. */
static volatile sig_atomic_t stop_now;
static void on_term(int sig) {
  (void)sig;
  stop_now = 1;
}

static double lease_s = 30; /* --lease: 0 claims without a lease (lease_until NULL), to show what the lease costs */

static void worker(const char *url, int idx, int mode, const char *out_path) {
  signal(SIGTERM, on_term);
  char dir[64], name[32];
  snprintf(dir, sizeof dir, "/tmp/claims-bench-%d", getpid());
  snprintf(name, sizeof name, "bench-w%d", idx);
  store_t *st = open_or_die(url, dir);
  store_listener *l = NULL;
  if (mode == 1 && store_listener_open(st, &l) != TH_OK) {
    fprintf(stderr, "listen: %s\n", store_errmsg(st));
    exit(1);
  }
  FILE *out = fopen(out_path, "w");
  int64_t claims = 0;
  while (!stop_now) {
    store_job j;
    th_status rc = store_job_claim(st, name, lease_s, &j);
    if (rc == TH_OK) {
      double lat = th_now_wall() - j.created_at;
      if (store_job_finish(st, j.id, j.attempts, STORE_JOB_SUCCEEDED, NULL) != TH_OK)
        fprintf(stderr, "finish: %s\n", store_errmsg(st));
      fprintf(out, "%.6f\n", lat);
      claims++;
      store_job_clear(&j);
      continue;
    }
    if (rc != TH_ERR_NOT_FOUND) {
      fprintf(stderr, "claim: %s\n", store_errmsg(st));
      break;
    }
    if (mode == 0) break;
    if (mode == 1) {
      store_event e;
      store_listener_wait(l, 1000, &e);
    } else {
      struct timespec ts = {1, 0};
      nanosleep(&ts, NULL);
    }
  }
  fclose(out);
  store_listener_close(l);
  store_close(st);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) {
  }
  _exit(0);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Reads every worker's latencies; prints count, median, p90, p99, max. */
static void report_latencies(const char *what, int w) {
  double *v = NULL;
  size_t n = 0, cap = 0;
  for (int i = 0; i < w; i++) {
    char path[64];
    snprintf(path, sizeof path, "/tmp/claims-bench-%d.lat", i);
    FILE *f = fopen(path, "r");
    double x;
    while (f && fscanf(f, "%lf", &x) == 1) {
      if (n == cap) v = realloc(v, (cap = cap ? cap * 2 : 256) * sizeof *v);
      v[n++] = x;
    }
    if (f) fclose(f);
    unlink(path);
  }
  qsort(v, n, sizeof *v, cmp_double);
  if (n)
    printf("%-34s %5zu claims  miss->claim median %.1f ms  p90 %.1f ms  p99 %.1f ms  max %.1f ms\n", what, n,
           v[n / 2] * 1e3, v[(size_t)(n * 0.9)] * 1e3, v[(size_t)(n * 0.99)] * 1e3, v[n - 1] * 1e3);
  free(v);
}

static void run_phase(const char *url, int w, int mode, pid_t *pids) {
  for (int i = 0; i < w; i++) {
    char path[64];
    snprintf(path, sizeof path, "/tmp/claims-bench-%d.lat", i);
    pids[i] = fork();
    if (pids[i] == 0) worker(url, i, mode, path);
  }
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: claims_bench URL [--workers 8] [--jobs 2000] [--latency-jobs 100]\n");
    return 2;
  }
  const char *url = argv[1];
  int w = 8, njobs = 2000, nlat = 100;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--workers")) w = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--jobs")) njobs = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--latency-jobs")) nlat = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--lease")) lease_s = atof(argv[i + 1]);
  }
  pid_t pids[64];
  if (w < 1 || w > 64) return 2;
  store_t *st = open_or_die(url, "/tmp/claims-bench-main");

  /* throughput */
  for (int i = 0; i < njobs; i++) enqueue(st, "drain", i);
  double t0 = th_now_mono();
  run_phase(url, w, 0, pids);
  for (int i = 0; i < w; i++) waitpid(pids[i], NULL, 0);
  double dt = th_now_mono() - t0;
  int64_t counts[5];
  store_job_counts(st, counts);
  printf("throughput (lease %g s): %d workers drained %d jobs in %.2f s: %.0f claims/s (claim + fenced finish each); "
         "succeeded %" PRId64 ", left queued %" PRId64 "\n",
         lease_s, w, njobs, dt, njobs / dt, counts[STORE_JOB_SUCCEEDED], counts[STORE_JOB_QUEUED]);
  report_latencies("  (queued up front; not a latency)", w);

  /* latency, NOTIFY then polling */
  const char *names[] = {"", "latency, woken by NOTIFY:", "latency, looking once a second:"};
  for (int mode = 1; mode <= 2; mode++) {
    run_phase(url, w, mode, pids);
    struct timespec settle = {0, 500 * 1000 * 1000};
    nanosleep(&settle, NULL);
    for (int i = 0; i < nlat; i++) {
      enqueue(st, mode == 1 ? "notify" : "poll", i);
      struct timespec gap = {0, 20 * 1000 * 1000};
      nanosleep(&gap, NULL);
    }
    for (int tries = 0; tries < 300; tries++) {
      store_job_counts(st, counts);
      if (counts[STORE_JOB_QUEUED] == 0 && counts[STORE_JOB_RUNNING] == 0) break;
      struct timespec ts = {0, 100 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
    for (int i = 0; i < w; i++) kill(pids[i], SIGTERM);
    for (int i = 0; i < w; i++) waitpid(pids[i], NULL, 0);
    report_latencies(names[mode], w);
  }
  store_close(st);
  if (system("rm -rf /tmp/claims-bench-main") != 0) {
  }
  return 0;
}
