/* Out-of-memory tests in the manner of SQLite's malloc tests: the allocation switch of th_alloc.h
 * fails the 1st, 2nd, 3rd ... allocation an operation makes, until the operation runs without
 * reaching the armed one. At each N the operation must return TH_ERR_NOMEM (or succeed whole, when
 * the failed allocation was one it can do without), leave the store as it was or fully changed
 * (checked again on a reopened store), and leak nothing, which the ASan build (scripts/sanitize.sh)
 * checks. Only tunehub's own allocations are failed: SQLite's, jansson's and libmicrohttpd's go to
 * their own malloc. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "builder.h"
#include "srv.h"
#include "srv_int.h"
#include "store.h"
#include "th_alloc.h"
#include "th_log.h"
#include "th_test.h"
#include "th_util.h"

/* The most allocations any operation below may make: a loop that reaches it has stopped
 * converging (an operation that allocates without end, or a switch that never fires). */
#define AF_MAX_N 2000

static char *af_tmpdir(void) {
  static char pool[4][64];
  static int used;
  CHECK(used < 4);
  char *d = pool[used++];
  CHECK(th_mkdtemp("th_alloc_fault", d, sizeof pool[0]) == TH_OK);
  return d;
}

static store_key af_key(int i) {
  store_key k;
  memset(&k, 0, sizeof k);
  snprintf(k.framework, sizeof k.framework, "llvm");
  snprintf(k.network, sizeof k.network, "net-%d", i);
  k.batch = 1;
  snprintf(k.target, sizeof k.target, "llvm -mcpu=test");
  snprintf(k.compiler_version, sizeof k.compiler_version, "0.1.0");
  return k;
}

/* Checks the outcome of one run under the switch: a run that never reached the armed allocation
 * succeeded; one that did returned TH_ERR_NOMEM or (an allocation it could do without) TH_OK. */
static void af_check_rc(const char *what, long n, long hits, th_status rc, const char *msg) {
  if (hits == 0 && rc != TH_OK) {
    fprintf(stderr, "%s at N=%ld: no allocation failed, yet %s: %s\n", what, n, th_status_str(rc),
            msg);
    exit(1);
  }
  if (hits > 0 && rc != TH_OK && rc != TH_ERR_NOMEM) {
    fprintf(stderr, "%s at N=%ld: allocation %ld failed and the call returned %s, not %s: %s\n",
            what, n, n, th_status_str(rc), th_status_str(TH_ERR_NOMEM), msg);
    exit(1);
  }
}

/* After a failed operation, a write on the same handle must work: an operation that left its
 * transaction open (a rollback skipped for want of memory) fails here, and its caller's next write
 * would have joined the transaction. */
static void af_probe_write(store_t *st, const char *what, long n) {
  static int probes;
  store_key k = af_key(1000000 + probes++);
  int64_t id = 0;
  int created = 0;
  th_status rc = store_job_enqueue(st, &k, "build", "{}", 0, &id, &created);
  if (rc != TH_OK) {
    fprintf(stderr, "%s at N=%ld: the next write on the handle failed (%s): %s\n", what, n,
            th_status_str(rc), store_errmsg(st));
    exit(1);
  }
}

/* The switch itself: the nth counted allocation fails, once or (persist) from then on. */
TH_TEST(switch_fails_the_nth) {
  th_alloc_fault_arm(2, 0);
  void *a = th_malloc(8), *b = th_malloc(8), *c = th_strdup("c");
  CHECK(a != NULL && b == NULL && c != NULL);
  CHECK_EQ_INT(th_alloc_fault_count(), 3);
  CHECK_EQ_INT(th_alloc_fault_disarm(), 1);
  th_free(a);
  th_free(c);
  th_alloc_fault_arm(1, 1);
  CHECK(th_calloc(1, 8) == NULL && th_realloc(NULL, 8) == NULL && th_strndup("x", 1) == NULL);
  CHECK_EQ_INT(th_alloc_fault_disarm(), 3);
  a = th_malloc(8); /* disarmed: nothing fails */
  CHECK(a != NULL);
  th_free(a);
  CHECK(th_calloc((size_t)-1, 16) == NULL); /* an overflowing product is refused, not wrapped */
  return 0;
}

/* store_open on a fresh data directory and again on the one it made: every failure is TH_ERR_NOMEM
 * with no handle, and the directory opens afterwards with its schema whole. */
TH_TEST(store_open_every_n) {
  char *d = af_tmpdir();
  for (int pass = 0; pass < 4; pass++) {
    long n = 1;
    for (; n <= AF_MAX_N; n++) {
      store_t *st = NULL;
      th_alloc_fault_arm(n, pass / 2);
      th_status rc = store_open(d, &st);
      long hits = th_alloc_fault_disarm();
      af_check_rc("store_open", n, hits, rc, store_errmsg(NULL));
      CHECK(rc == TH_OK ? st != NULL : st == NULL);
      if (st) {
        int64_t counts[5];
        CHECK(store_job_counts(st, counts) == TH_OK); /* the schema is there */
        store_close(st);
      }
      if (hits == 0) break;
    }
    CHECK(n > 1 && n <= AF_MAX_N);
    fprintf(stderr, "store_open (%s directory): %ld allocations, failed %s\n",
            pass % 2 ? "existing" : "fresh", n - 1, pass / 2 ? "from each on" : "each once");
  }
  return 0;
}

/* One write operation under the switch: run makes case i's change (a key, a record of its own) and
 * returns its status; check looks at the store afterwards, given that status. */
typedef struct af_write {
  const char *what;
  th_status (*run)(store_t *st, void *ctx, long i);
  void (*check)(store_t *st, void *ctx, long i, th_status rc);
  void *ctx;
} af_write;

/* Walks op through N = 1, 2, ... with the Nth allocation failed once, then from the Nth on, until a
 * run reaches no armed allocation. After each run: check on the open handle, a probe write on it,
 * and check again on the directory reopened. Returns the allocations of a run that fails none. */
static long af_walk_write(const char *dir, const af_write *op) {
  store_t *st = NULL;
  CHECK(store_open(dir, &st) == TH_OK);
  long n = 1;
  for (int persist = 0; persist < 2; persist++) {
    for (n = 1; n <= AF_MAX_N; n++) {
      long i = persist * 10000 + n;
      th_alloc_fault_arm(n, persist);
      th_status rc = op->run(st, op->ctx, i);
      long hits = th_alloc_fault_disarm();
      af_check_rc(op->what, n, hits, rc, store_errmsg(st));
      for (int reopen = 0; reopen < 2; reopen++) {
        op->check(st, op->ctx, i, rc);
        if (!reopen) af_probe_write(st, op->what, n);
        store_close(st);
        CHECK(store_open(dir, &st) == TH_OK);
      }
      if (hits == 0) break;
    }
    CHECK(n > 1 && n <= AF_MAX_N);
  }
  store_close(st);
  fprintf(stderr, "%s: %ld allocations, each failed once and from each on\n", op->what, n - 1);
  return n - 1;
}

typedef struct af_enqueue {
  int64_t id;
  int created;
} af_enqueue;

static th_status af_enqueue_run(store_t *st, void *ctx, long i) {
  af_enqueue *e = ctx;
  store_key k = af_key((int)i);
  e->id = -1;
  e->created = -1;
  th_status rc = store_job_enqueue(st, &k, "build", "{}", 0, &e->id, &e->created);
  if (rc != TH_OK) CHECK(e->id == -1 && e->created == -1); /* out-params on success only */
  return rc;
}

static void af_enqueue_check(store_t *st, void *ctx, long i, th_status rc) {
  af_enqueue *e = ctx;
  store_key k = af_key((int)i);
  store_job j;
  th_status g = store_job_latest(st, &k, &j);
  if (rc == TH_OK) {
    CHECK(g == TH_OK && j.id == e->id && e->created == 1 && j.state == STORE_JOB_QUEUED);
    store_job_clear(&j);
  } else {
    if (g != TH_ERR_NOT_FOUND)
      fprintf(stderr, "store_job_enqueue of case %ld failed (%s) but left job %lld\n", i,
              th_status_str(rc), g == TH_OK ? (long long)j.id : -1LL);
    CHECK(g == TH_ERR_NOT_FOUND);
  }
}

/* store_job_enqueue of a new key: a failed call queues nothing, a successful one exactly one job.
 */
TH_TEST(store_job_enqueue_every_n) {
  af_enqueue e;
  af_write op = {"store_job_enqueue", af_enqueue_run, af_enqueue_check, &e};
  af_walk_write(af_tmpdir(), &op);
  return 0;
}

typedef struct af_publish {
  char digest[TH_HEX_MAX], so[TH_HEX_MAX];
  int version;
} af_publish;

static th_status af_publish_run(store_t *st, void *ctx, long i) {
  af_publish *p = ctx;
  store_key k = af_key((int)i);
  p->version = -1;
  return store_model_publish(st, &k, 0, p->digest, p->so, "{\"layers\":[]}", 1.5, 0, 0,
                             &p->version);
}

static void af_publish_check(store_t *st, void *ctx, long i, th_status rc) {
  af_publish *p = ctx;
  store_key k = af_key((int)i);
  store_model m;
  th_status g = store_model_get(st, &k, 0, &m);
  if (rc == TH_OK) {
    CHECK(g == TH_OK && p->version == 1 && m.version == 1 && strcmp(m.tar_digest, p->digest) == 0);
    CHECK(m.manifest && strcmp(m.manifest, "{\"layers\":[]}") == 0);
    store_model_clear(&m);
  } else {
    CHECK(p->version == -1);
    CHECK(g == TH_ERR_NOT_FOUND);
  }
}

/* Puts a file of the given bytes into the store at dir and returns its digest in hex. */
static void af_artifact(const char *dir, const char *name, const char *bytes,
                        char hex[TH_HEX_MAX]) {
  store_t *st = NULL;
  CHECK(store_open(dir, &st) == TH_OK);
  char src[TH_PATH_MAX];
  snprintf(src, sizeof src, "%s/%s", dir, name);
  CHECK(th_write_file_atomic(src, bytes, strlen(bytes)) == TH_OK);
  CHECK(store_artifact_put(st, src, "application/octet-stream", hex, NULL) == TH_OK);
  store_close(st);
}

/* store_model_publish of version 1 of a new key: a failed call publishes nothing. */
TH_TEST(store_model_publish_every_n) {
  char *d = af_tmpdir();
  af_publish p;
  af_artifact(d, "model.tar", "tar bytes", p.digest);
  af_artifact(d, "model.so", "so bytes", p.so);
  af_write op = {"store_model_publish", af_publish_run, af_publish_check, &p};
  af_walk_write(d, &op);
  return 0;
}

static void af_record_of(long i, store_record *r) {
  memset(r, 0, sizeof *r);
  snprintf(r->workload_key, sizeof r->workload_key, "[\"conv2d\",%ld]", i);
  snprintf(r->template_name, sizeof r->template_name, "conv2d");
  snprintf(r->target, sizeof r->target, "llvm -mcpu=test");
  snprintf(r->config, sizeof r->config, "{\"tile\":4}");
  snprintf(r->tuner, sizeof r->tuner, "ga");
  r->cost_mean_s = 0.001;
  r->gflops = 10;
}

static th_status af_record_run(store_t *st, void *ctx, long i) {
  (void)ctx;
  store_record r;
  af_record_of(i, &r);
  return store_record_add(st, &r);
}

static void af_record_check(store_t *st, void *ctx, long i, th_status rc) {
  (void)ctx;
  store_record r;
  af_record_of(i, &r);
  int64_t count = -1;
  CHECK(store_record_count(st, r.workload_key, r.target, &count) == TH_OK);
  CHECK_EQ_INT(count, rc == TH_OK ? 1 : 0);
}

/* store_record_add: a failed call stores no record. */
TH_TEST(store_record_add_every_n) {
  af_write op = {"store_record_add", af_record_run, af_record_check, NULL};
  af_walk_write(af_tmpdir(), &op);
  return 0;
}

/* Reads: store_model_get and store_job_get return TH_ERR_NOMEM or the whole row, never a row whose
 * owned texts (the manifest, the job's options) went missing for want of memory. */
TH_TEST(store_reads_every_n) {
  char *d = af_tmpdir();
  char digest[TH_HEX_MAX];
  af_artifact(d, "model.tar", "tar bytes", digest);
  store_t *st = NULL;
  CHECK(store_open(d, &st) == TH_OK);
  store_key k = af_key(1);
  int version = 0;
  CHECK(store_model_publish(st, &k, 0, digest, digest, "{\"layers\":[]}", 1.5, 0, 0, &version) ==
        TH_OK);
  int64_t id = 0;
  int created = 0;
  CHECK(store_job_enqueue(st, &k, "tune", "{\"trials\":8}", 0, &id, &created) == TH_OK);
  long n = 1;
  for (int persist = 0; persist < 2; persist++) {
    for (n = 1; n <= AF_MAX_N; n++) {
      store_model m;
      store_job j;
      th_alloc_fault_arm(n, persist);
      th_status rc = store_model_get(st, &k, 0, &m);
      th_status rj = rc == TH_OK ? store_job_get(st, id, &j) : TH_ERR_NOMEM;
      long hits = th_alloc_fault_disarm();
      af_check_rc("store_model_get", n, hits, rc, store_errmsg(st));
      if (rc == TH_OK) {
        af_check_rc("store_job_get", n, hits, rj, store_errmsg(st));
        if (!m.manifest) {
          fprintf(stderr, "store_model_get at N=%ld: TH_OK without the manifest\n", n);
          exit(1);
        }
        store_model_clear(&m);
      }
      if (rc == TH_OK && rj == TH_OK) {
        if (!j.options || strcmp(j.options, "{\"trials\":8}") != 0) {
          fprintf(stderr, "store_job_get at N=%ld: TH_OK without the options\n", n);
          exit(1);
        }
        store_job_clear(&j);
      }
      if (hits == 0) break;
    }
    CHECK(n > 1 && n <= AF_MAX_N);
  }
  fprintf(stderr, "store_model_get + store_job_get: %ld allocations\n", n - 1);
  store_close(st);
  return 0;
}

/* store_job_claim: a failed claim leaves the job queued with its attempts as they were; a
 * successful one hands over the whole job (its options too) and runs it. */
TH_TEST(store_job_claim_every_n) {
  char *d = af_tmpdir();
  store_t *st = NULL;
  CHECK(store_open(d, &st) == TH_OK);
  store_key k = af_key(1);
  int64_t id = 0;
  int created = 0;
  CHECK(store_job_enqueue(st, &k, "tune", "{\"trials\":8}", 0, &id, &created) == TH_OK);
  long n = 1;
  int attempts = 0;
  for (int persist = 0; persist < 2; persist++) {
    for (n = 1; n <= AF_MAX_N; n++) {
      store_job j;
      th_alloc_fault_arm(n, persist);
      th_status rc = store_job_claim(st, "w1", 0, &j);
      long hits = th_alloc_fault_disarm();
      af_check_rc("store_job_claim", n, hits, rc, store_errmsg(st));
      if (rc == TH_OK) {
        CHECK(j.id == id && j.options && strcmp(j.options, "{\"trials\":8}") == 0);
        store_job_clear(&j);
        attempts++;
      }
      store_job now;
      CHECK(store_job_get(st, id, &now) == TH_OK);
      CHECK_EQ_INT(now.state, rc == TH_OK ? STORE_JOB_RUNNING : STORE_JOB_QUEUED);
      CHECK_EQ_INT(now.attempts, attempts);
      store_job_clear(&now);
      if (rc == TH_OK) CHECK(store_job_requeue(st, id, "w1") == TH_OK);
      if (hits == 0) break;
    }
    CHECK(n > 1 && n <= AF_MAX_N);
  }
  fprintf(stderr, "store_job_claim: %ld allocations\n", n - 1);
  store_close(st);
  return 0;
}

/* ---- the daemon in-process (as tests/fuzz/fuzz_http.c runs it): no listening socket of its own,
 * no admitted jobs, one HTTP thread; each exchange hands the accepted end of a loopback connection
 * to libmicrohttpd and reads the answer until the daemon closes ("Connection: close"). ---- */

static void af_daemon_config(srv_config *c, const char *dir) {
  srv_config_defaults(c);
  snprintf(c->data_dir, sizeof c->data_dir, "%s/data", dir);
  c->no_listen = 1;
  c->workers = 0;
  c->http_threads = 1;
  c->miss_rate = 0;
  c->anon_jobs_per_ip = 0; /* the test cancels its jobs behind the daemon's back */
  c->anon_queue_share = 100;
  c->gc_interval_s = 0;
  c->min_free = 0;
}

/* Sends req to the daemon and returns the HTTP status of its answer (0: the daemon closed the
 * connection without one), with the answer's text in out. */
static int af_exchange(srv_t *s, const char *req, char *out, size_t n) {
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t alen = sizeof a;
  int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  CHECK(l >= 0 && bind(l, (struct sockaddr *)&a, sizeof a) == 0 && listen(l, 1) == 0);
  CHECK(getsockname(l, (struct sockaddr *)&a, &alen) == 0);
  int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  CHECK(c >= 0 && connect(c, (struct sockaddr *)&a, sizeof a) == 0);
  struct sockaddr_in peer;
  socklen_t plen = sizeof peer;
  int d = accept4(l, (struct sockaddr *)&peer, &plen, SOCK_CLOEXEC | SOCK_NONBLOCK);
  close(l);
  CHECK(d >= 0);
  size_t got = 0;
  out[0] = '\0';
  if (MHD_add_connection(s->mhd, d, (struct sockaddr *)&peer, plen) != MHD_YES) {
    close(c); /* libmicrohttpd closed d */
    return 0;
  }
  CHECK(th_write_full(c, req, strlen(req), 1) == 0);
  for (;;) {
    struct pollfd p = {c, POLLIN, 0};
    int r = poll(&p, 1, 10000);
    CHECK(r > 0); /* an answer, or the connection closed, within 10 s */
    ssize_t k = read(c, out + got, n - 1 - got);
    if (k <= 0) break;
    got += (size_t)k;
    if (got == n - 1) break;
  }
  out[got] = '\0';
  close(c);
  int status = 0;
  if (sscanf(out, "HTTP/1.1 %d", &status) != 1) status = 0;
  return status;
}

static int64_t af_queued(store_t *st) {
  int64_t counts[5];
  CHECK(store_job_counts(st, counts) == TH_OK);
  return counts[STORE_JOB_QUEUED];
}

/* One request of the daemon, a miss (GET /models/llvm/resnet-18/1: look-ups, validation, the
 * store's single-flight enqueue, the job document) with each allocation failed in turn: the answer
 * is the 503 "building" with its job queued, or another JSON error (500 out of memory, 503) with
 * nothing queued, or at worst a connection closed without an answer, with nothing queued; and the
 * daemon still answers the next request. Allocations of the daemon's idle threads made meanwhile
 * are counted too and may be the ones failed: they must survive it as well. */
TH_TEST(server_miss_request_every_n) {
  char *d = af_tmpdir();
  srv_config c;
  af_daemon_config(&c, d);
  th_log_set_level("error");
  srv_t *s = NULL;
  char err[2048] = "";
  if (srv_start(&c, tune_builder_compiler(), &s, err, sizeof err) != TH_OK) {
    fprintf(stderr, "cannot start the daemon: %s\n", err);
    return 1;
  }
  static const char req[] =
      "GET /models/llvm/resnet-18/1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  static char resp[65536];
  long n = 1;
  int closed = 0, errors = 0;
  for (int persist = 0; persist < 2; persist++) {
    for (n = 1; n <= AF_MAX_N; n++) {
      CHECK_EQ_INT(af_queued(s->st), 0);
      th_alloc_fault_arm(n, persist);
      int status = af_exchange(s, req, resp, sizeof resp);
      long hits = th_alloc_fault_disarm();
      int64_t queued = af_queued(s->st);
      int building = status == 503 && strstr(resp, "\"code\":\"building\"") != NULL;
      if (hits == 0 && !building) {
        fprintf(stderr, "N=%ld: no allocation failed, yet the miss answered %d:\n%s\n", n, status,
                resp);
        exit(1);
      }
      if (building) {
        CHECK_EQ_INT(queued, 1);
        store_job *jobs = NULL;
        size_t nj = 0;
        CHECK(store_job_list(s->st, "queued", 10, &jobs, &nj) == TH_OK && nj == 1);
        CHECK(store_job_cancel(s->st, jobs[0].id) == TH_OK);
        store_job_list_free(jobs, nj);
      } else {
        if (queued != 0) {
          fprintf(stderr, "N=%ld: the miss answered %d but queued a job:\n%s\n", n, status, resp);
          exit(1);
        }
        if (status == 0) {
          closed++;
        } else {
          errors++;
          if ((status != 500 && status != 503) || !strstr(resp, "application/json") ||
              !strstr(resp, "\"error\"")) {
            fprintf(stderr, "N=%ld: allocation %ld failed and the miss answered:\n%s\n", n, n,
                    resp);
            exit(1);
          }
        }
      }
      if (hits == 0) break;
    }
    CHECK(n > 1 && n <= AF_MAX_N);
  }
  static const char health[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  CHECK_EQ_INT(af_exchange(s, health, resp, sizeof resp), 200);
  fprintf(stderr, "the miss: %ld allocations; %d JSON errors, %d connections closed unanswered\n",
          n - 1, errors, closed);
  srv_stop(s);
  return 0;
}

/* srv_start with each allocation failed in turn: every failure is an error with a message and no
 * daemon (its threads stopped, its store closed and the data directory's lock let go: the next
 * start in this process takes it), and the start that fails nothing serves. */
TH_TEST(server_start_every_n) {
  char *d = af_tmpdir();
  srv_config c;
  af_daemon_config(&c, d);
  th_log_set_level("error");
  long n = 1;
  for (int persist = 0; persist < 2; persist++) {
    for (n = 1; n <= AF_MAX_N; n++) {
      srv_t *s = NULL;
      char err[2048] = "";
      th_alloc_fault_arm(n, persist);
      th_status rc = srv_start(&c, tune_builder_compiler(), &s, err, sizeof err);
      long hits = th_alloc_fault_disarm();
      if (rc != TH_OK && (hits == 0 || (rc != TH_ERR_NOMEM && !err[0]))) {
        fprintf(stderr, "srv_start at N=%ld (%ld failed): %s: %s\n", n, hits, th_status_str(rc),
                err);
        exit(1);
      }
      CHECK(rc == TH_OK ? s != NULL : s == NULL);
      if (s) srv_stop(s);
      if (hits == 0) break;
    }
    CHECK(n > 1 && n <= AF_MAX_N);
  }
  fprintf(stderr, "srv_start: %ld allocations\n", n - 1);
  return 0;
}
