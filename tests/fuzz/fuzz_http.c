/* libFuzzer target of the whole request path, in-process, as nginx's OSS-Fuzz harness feeds raw
 * bytes to its connection handler: the real daemon (srv_start: libmicrohttpd, the router, every
 * validator and route, a SQLite store in a temp data directory) runs once per fuzzer process, with
 * no listening socket of its own (srv_config.no_listen). Each input is written, as raw bytes, into
 * a loopback TCP connection whose accepted end is handed to MHD_add_connection; the write side is
 * then shut down and the response read until EOF. Built with clang-16 by tests/fuzz/fuzz.cmake
 * over server/ and common/ (those instrumented); the store, tuner and compiler are the gcc-built
 * libraries, linked as they are.
 *
 * No input may start a build: the daemon runs with zero admitted jobs (srv_config.workers = 0,
 * the scheduler of a serving replica, which srv_config_parse allows only with a shared store but
 * srv_start runs on SQLite as well), so a miss or a POST .../tune only queues a row. The miss rate
 * limit is off and the queue cap high, so that misses keep reaching the store instead of 429.
 *
 * A response that never ends is legitimate (an SSE stream, ?wait=N holds the request), so each
 * exchange has a deadline: FZ_IDLE_MS without a byte once the response began, FZ_TOTAL_MS in
 * all. An exchange that ends at a deadline without a byte is followed by a GET /healthz on a fresh
 * connection that must answer within FZ_ALIVE_MS: a daemon that stopped answering (a thread stuck
 * in a loop, a deadlock) traps on the input that caused it. FUZZ_HTTP_ECHO=1 in the environment
 * copies every response to stderr, to see what a seed reaches. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "builder.h"
#include "model_key.h"
#include "srv.h"
#include "srv_int.h"
#include "store.h"
#include "th_log.h"
#include "th_util.h"

#define FZ_TOTAL_MS 1000
#define FZ_IDLE_MS 100
#define FZ_ALIVE_MS 10000
#define FZ_FIN_MS 2

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static srv_t *fz_srv;
static char fz_dir[1024];

static double fz_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* A loopback TCP listener of the harness's own: each exchange connects to it and hands the accepted
 * end to libmicrohttpd, so the daemon works on a real TCP socket (TCP_NODELAY, TCP_CORK and
 * sendfile as in production) instead of a socketpair it would log about. */
static int fz_listen = -1;
static int fz_echo; /* FUZZ_HTTP_ECHO set: responses go to stderr */
static struct sockaddr_in fz_addr;

/* One exchange: data goes in, the response is read (and dropped) until EOF or a deadline. Returns
 * the response bytes read, or -1 when no connection could be made (the daemon's connection limit).
 */
static long fz_exchange(const uint8_t *data, size_t size, int total_ms, int idle_ms) {
  int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (c < 0) return -1;
  if (connect(c, (struct sockaddr *)&fz_addr, sizeof fz_addr) != 0) {
    close(c);
    return -1;
  }
  struct sockaddr_in peer;
  socklen_t plen = sizeof peer;
  int d = accept4(fz_listen, (struct sockaddr *)&peer, &plen, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (d < 0 || MHD_add_connection(fz_srv->mhd, d, (struct sockaddr *)&peer, plen) != MHD_YES) {
    close(c); /* libmicrohttpd closed d */
    return -1;
  }
  fcntl(c, F_SETFL, O_NONBLOCK);
  size_t off = 0;
  long got = 0;
  double start = fz_ms(), last = start, sent = 0;
  int wr_open = 1;
  if (size == 0) {
    shutdown(c, SHUT_WR);
    wr_open = 0;
  }
  for (;;) {
    double now = fz_ms();
    if (now - start > total_ms || (got > 0 && !wr_open && now - last > idle_ms)) break;
    struct pollfd p = {c, (short)(POLLIN | (wr_open && !sent ? POLLOUT : 0)), 0};
    if (poll(&p, 1, 1) < 0 && errno != EINTR) break;
    if (wr_open && !sent && (p.revents & POLLOUT)) {
      ssize_t k = write(c, data + off, size - off);
      if (k > 0) off += (size_t)k;
      if (k < 0 && errno != EAGAIN) { /* the daemon closed its side */
        shutdown(c, SHUT_WR);
        wr_open = 0;
      }
      if (off == size && !sent) sent = fz_ms();
    }
    /* The end of the request goes in its own segment, once the daemon has answered or had
     * FZ_FIN_MS to read the bytes: a FIN that arrives with the last bytes is consumed in the same
     * edge-triggered epoll wake-up, and libmicrohttpd would wait for the rest of an incomplete
     * request until its connection timeout instead of closing. */
    if (wr_open && sent && (got > 0 || fz_ms() - sent > FZ_FIN_MS)) {
      shutdown(c, SHUT_WR);
      wr_open = 0;
    }
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[65536];
      ssize_t k = read(c, buf, sizeof buf);
      if (k == 0 || (k < 0 && errno != EAGAIN)) break; /* EOF: the daemon closed the connection */
      if (k > 0) {
        if (fz_echo) fwrite(buf, 1, (size_t)k, stderr);
        got += k;
        last = fz_ms();
      }
    }
  }
  close(c);
  return got;
}

static void fz_cleanup(void) {
  srv_stop(fz_srv);
  fz_srv = NULL;
  if (fz_dir[0]) th_rm_rf(fz_dir);
}

/* Two published versions of llvm/resnet-18/1 on this machine's target (v1, and v2 tuned) and the
 * alias prod -> v1, so that inputs reach the hit paths: files with Range, If-Range, If-None-Match
 * and HEAD, blobs, manifests, versions, aliases and the OCI API. The artifacts are fixed bytes, so
 * their digests are fixed too: the tar's, FZ_TAR_DIGEST, is in the seeds and http.dict. */
#define FZ_TAR_DIGEST "9141107b6ed1422839ed97f4674de82ae742ec2f8556c3df948da06930f94393"
static void fz_publish(void) {
  char path[1100], why[1024], td[65], sd[65];
  unsigned char bytes[4096];
  for (size_t i = 0; i < sizeof bytes; i++) bytes[i] = (unsigned char)(i * 7 % 251);
  snprintf(path, sizeof path, "%s/model.tar", fz_dir);
  store_key key;
  th_status rc = th_write_file_atomic(path, bytes, sizeof bytes);
  if (rc == TH_OK) rc = store_artifact_put(fz_srv->st, path, "application/x-tar", td, NULL);
  snprintf(path, sizeof path, "%s/model.so", fz_dir);
  if (rc == TH_OK) rc = th_write_file_atomic(path, bytes, 1000);
  if (rc == TH_OK) rc = store_artifact_put(fz_srv->st, path, "application/x-sharedlib", sd, NULL);
  if (rc == TH_OK) rc = srv_model_key(fz_srv, "llvm", "resnet-18", 1, NULL, NULL, &key, why, sizeof why);
  static const char manifest[] =
      "{\"key\":{\"framework\":\"llvm\",\"network\":\"resnet-18\",\"batch\":1},"
      "\"latency_ms\":{\"mean\":12.5,\"median\":12.0,\"std\":0.5,\"n\":10},\"layers\":[]}";
  int version = 0, previous = 0;
  if (rc == TH_OK)
    rc = store_model_publish(fz_srv->st, &key, 0, td, sd, manifest, 12.5, 0, 0, &version);
  if (rc == TH_OK)
    rc = store_model_publish(fz_srv->st, &key, 1, td, sd, manifest, 10.0, 0, 0, &version);
  store_alias a;
  if (rc == TH_OK) rc = store_alias_set(fz_srv->st, &key, "prod", 1, NULL, &a, &previous);
  if (rc != TH_OK || strcmp(td, FZ_TAR_DIGEST) != 0) {
    fprintf(stderr, "fuzz_http: cannot publish the fixture versions (%s; tar sha256:%s): %s\n",
            th_status_str(rc), td, store_errmsg(fz_srv->st));
    exit(1);
  }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  fz_echo = getenv("FUZZ_HTTP_ECHO") != NULL;
  th_log_set_level("error"); /* a log line per request would bury libFuzzer's own output */
  /* tmpfs when there is one: a miss writes a row, and fsync on a disk would set the pace */
  snprintf(fz_dir, sizeof fz_dir, "%s/fuzz_http.XXXXXX",
           access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
  if (!mkdtemp(fz_dir)) {
    perror("fuzz_http: mkdtemp");
    exit(1);
  }
  char tokens[1100];
  snprintf(tokens, sizeof tokens, "%s/tokens", fz_dir);
  /* a tune token and an admin token, so that inputs reach the routes behind each scope (the
   * seeds and http.dict carry them) */
  static const char tok[] = "fuzz-tune-token-x tune\nfuzz-admin-token admin\n";
  if (th_write_file_atomic(tokens, tok, sizeof tok - 1) != TH_OK) {
    perror("fuzz_http: token file");
    exit(1);
  }
  srv_config c;
  srv_config_defaults(&c);
  snprintf(c.data_dir, sizeof c.data_dir, "%s/data", fz_dir);
  snprintf(c.token_file, sizeof c.token_file, "%s", tokens);
  c.no_listen = 1;
  c.workers = 0;
  c.http_threads = 1;
  c.miss_rate = 0;
  c.auth_fail_limit = 0; /* wrong tokens by the thousand must not shut the scoped routes */
  c.max_queued = 1 << 20;
  c.max_upload = 1 << 20;
  char err[2048];
  if (srv_start(&c, tune_builder_compiler(), &fz_srv, err, sizeof err) != TH_OK) {
    fprintf(stderr, "fuzz_http: cannot start the daemon: %s\n", err);
    exit(1);
  }
  atexit(fz_cleanup);
  /* the routes read cfg.workers as "this daemon measures its own target" (srv_target_tunable): with
   * the scheduler already started admitting nothing, saying 1 here lets POST .../tune reach its
   * body and the queue, as on a daemon that tunes, while still nothing runs */
  fz_srv->cfg.workers = 1;
  fz_publish();
  memset(&fz_addr, 0, sizeof fz_addr);
  fz_addr.sin_family = AF_INET;
  fz_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t alen = sizeof fz_addr;
  fz_listen = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fz_listen < 0 || bind(fz_listen, (struct sockaddr *)&fz_addr, sizeof fz_addr) != 0 ||
      listen(fz_listen, 16) != 0 ||
      getsockname(fz_listen, (struct sockaddr *)&fz_addr, &alen) != 0) {
    perror("fuzz_http: loopback listener");
    exit(1);
  }
  /* the first /networks, /targets and miss fill the daemon's caches and the store's first rows:
   * done here, so that no input pays for them under the per-exchange deadline */
  static const char *const warm[] = {"GET /networks HTTP/1.1\r\nHost: x\r\n\r\n",
                                     "GET /targets HTTP/1.1\r\nHost: x\r\n\r\n",
                                     "GET /models/llvm/resnet-18/1 HTTP/1.1\r\nHost: x\r\n\r\n"};
  for (size_t i = 0; i < sizeof warm / sizeof warm[0]; i++)
    if (fz_exchange((const uint8_t *)warm[i], strlen(warm[i]), 120000, 2000) <= 0) {
      fprintf(stderr, "fuzz_http: the daemon does not answer %s", warm[i]);
      exit(1);
    }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  double start = fz_ms();
  long got = fz_exchange(data, size, FZ_TOTAL_MS, FZ_IDLE_MS);
  if (got == 0 && fz_ms() - start >= FZ_TOTAL_MS) {
    static const char probe[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    if (fz_exchange((const uint8_t *)probe, sizeof probe - 1, FZ_ALIVE_MS, FZ_IDLE_MS) <= 0) {
      fprintf(stderr, "fuzz_http: the daemon stopped answering after this input\n");
      __builtin_trap();
    }
  }
  return 0;
}
