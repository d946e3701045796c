/* Unit tests of server/ helpers: percent-decoding that refuses encoded separators, query lookup,
 * and the `serve` flag parser that names the valid forms, the JSON documents made of the store's
 * and the tuner's structs, and the response helpers when libmicrohttpd or jansson cannot allocate
 * (fault injection). The routes themselves are exercised end to end against the real daemon in
 * tests/integration/. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "present.h"
#include "request.h"
#include "response.h"
#include "srv.h"
#include "th_sha256.h"
#include "th_test.h"
#include "upload.h"
#include "tune_job.h"

/* Fault injection for libmicrohttpd: this definition interposes on the library's (the executable's
 * symbol wins for the server code linked into it) and forwards to it, except while th__mhd_fails is
 * set, when a buffer response cannot be made, as when libmicrohttpd is out of memory. */
static int th__mhd_fails;
struct MHD_Response *MHD_create_response_from_buffer(size_t size, void *buffer,
                                                     enum MHD_ResponseMemoryMode mode) {
  static struct MHD_Response *(*real)(size_t, void *, enum MHD_ResponseMemoryMode);
  if (th__mhd_fails) return NULL;
  if (!real) *(void **)&real = dlsym(RTLD_NEXT, "MHD_create_response_from_buffer");
  return real ? real(size, buffer, mode) : NULL;
}

/* Fault injection for jansson (json_set_alloc_funcs): its allocations fail while th__json_fails is
 * set. */
static int th__json_fails;
static void *th__json_malloc(size_t n) {
  return th__json_fails ? NULL : malloc(n);
}

/* Heap bytes in use (glibc's arena and mmapped chunks), to see that a failure path frees what it
 * was given. Elsewhere it reads 0, and the sanitizer build's leak checker does the job. */
static size_t th__heap_in_use(void) {
#ifdef __GLIBC__
  struct mallinfo2 mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;
#else
  return 0;
#endif
}

TH_TEST(pct_decode_plain_and_escapes) {
  char out[64];
  CHECK_EQ_INT(srv_pct_decode("resnet-18", 9, out, sizeof out), 9);
  CHECK_STR(out, "resnet-18");
  CHECK(srv_pct_decode("squeezenet_v1%2e1", 17, out, sizeof out) > 0);
  CHECK_STR(out, "squeezenet_v1.1");
  CHECK(srv_pct_decode("a+b", 3, out, sizeof out) > 0);
  CHECK_STR(out, "a b");
  return 0;
}

TH_TEST(pct_decode_refuses_separators_and_garbage) {
  char out[64];
  CHECK(srv_pct_decode("a%2fb", 5, out, sizeof out) < 0);
  CHECK(srv_pct_decode("a%2Fb", 5, out, sizeof out) < 0);
  CHECK(srv_pct_decode("a%5cb", 5, out, sizeof out) < 0);
  CHECK(srv_pct_decode("a%00", 4, out, sizeof out) < 0);
  CHECK(srv_pct_decode("a%4", 3, out, sizeof out) < 0);
  CHECK(srv_pct_decode("a%zz", 4, out, sizeof out) < 0);
  char tiny[4];
  CHECK(srv_pct_decode("abcdef", 6, tiny, sizeof tiny) < 0);
  return 0;
}

TH_TEST(query_lookup) {
  srv_request r;
  memset(&r, 0, sizeof r);
  snprintf(r.query, sizeof r.query, "framework=llvm&network=squeezenet_v1%%2e1&flag&wait=30");
  char v[64];
  CHECK_EQ_INT(srv_query(&r, "framework", v, sizeof v), 1);
  CHECK_STR(v, "llvm");
  CHECK_EQ_INT(srv_query(&r, "network", v, sizeof v), 1);
  CHECK_STR(v, "squeezenet_v1.1");
  CHECK_EQ_INT(srv_query(&r, "flag", v, sizeof v), 1);
  CHECK_STR(v, "");
  CHECK_EQ_INT(srv_query(&r, "wait", v, sizeof v), 1);
  CHECK_STR(v, "30");
  CHECK_EQ_INT(srv_query(&r, "frame", v, sizeof v), 0);
  CHECK_EQ_INT(srv_query(&r, "state", v, sizeof v), 0);
  snprintf(r.query, sizeof r.query, "network=a%%2fb");
  CHECK_EQ_INT(srv_query(&r, "network", v, sizeof v), -1);
  return 0;
}

TH_TEST(config_flags) {
  srv_config c;
  srv_config_defaults(&c);
  CHECK_STR(c.listen_host, "127.0.0.1");
  CHECK_EQ_INT(c.port, 8080);
  CHECK_STR(c.data_dir, "./data");
  char *ok[] = {"--listen", "0.0.0.0:9090", "--data", "/tmp/x", "--workers", "3", "--max-queued", "10"};
  char err[512] = "";
  CHECK(srv_config_parse(&c, 8, ok, err, sizeof err) == TH_OK);
  CHECK_STR(c.listen_host, "0.0.0.0");
  CHECK_EQ_INT(c.port, 9090);
  CHECK_STR(c.data_dir, "/tmp/x");
  CHECK_EQ_INT(c.workers, 3);
  CHECK_EQ_INT(c.max_queued, 10);
  char *bad_port[] = {"--listen", "127.0.0.1:99999"};
  CHECK(srv_config_parse(&c, 2, bad_port, err, sizeof err) == TH_ERR_INVALID);
  CHECK(strstr(err, "0 to 65535") != NULL);
  char *no_port[] = {"--listen", "localhost"};
  CHECK(srv_config_parse(&c, 2, no_port, err, sizeof err) == TH_ERR_INVALID);
  CHECK(strstr(err, "HOST:PORT") != NULL);
  char *unknown[] = {"--colour", "blue"};
  CHECK(srv_config_parse(&c, 2, unknown, err, sizeof err) == TH_ERR_INVALID);
  CHECK(strstr(err, "--token-file") != NULL);
  /* --workers 0 is a serving replica, which only a shared store (--db) can have: nothing else would run jobs */
  char *zero_workers[] = {"--workers", "0"};
  CHECK(srv_config_parse(&c, 2, zero_workers, err, sizeof err) == TH_ERR_INVALID);
  CHECK(strstr(err, "--workers 0") != NULL && strstr(err, "needs --db") != NULL);
  srv_config_defaults(&c);
  char *replica[] = {"--workers", "0", "--db", "postgresql://u@/db?host=/tmp", "--lease", "5"};
  CHECK(srv_config_parse(&c, 6, replica, err, sizeof err) == TH_OK);
  CHECK_EQ_INT(c.workers, 0);
  CHECK_EQ_INT(c.lease_s, 5);
  CHECK_STR(c.db, "postgresql://u@/db?host=/tmp");
  char *too_many[] = {"--workers", "65"};
  CHECK(srv_config_parse(&c, 2, too_many, err, sizeof err) == TH_ERR_INVALID);
  CHECK(strstr(err, "0 to 64") != NULL);
  return 0;
}

TH_TEST(progress_document) {
  th_buf b;
  th_buf_init(&b, 1 << 20);
  CHECK(srv_present_progress(NULL, &b) == TH_OK);
  CHECK_STR(b.data, "{}");
  /* a concat has no FLOPs: the time says it has a valid config */
  tune_task_progress t;
  memset(&t, 0, sizeof t);
  snprintf(t.key, sizeof t.key, "concat \"a\"");
  snprintf(t.template_name, sizeof t.template_name, "concat");
  t.trials = t.budget = 4;
  t.best_s = 0.0012;
  t.state = "done";
  tune_progress pr;
  memset(&pr, 0, sizeof pr);
  snprintf(pr.tuner, sizeof pr.tuner, "xgb");
  pr.ntasks = 1;
  pr.current = 1;
  pr.stage = "done";
  pr.trials_done = pr.trials_total = 4;
  pr.tasks = &t;
  tune_job_progress p = {.session = &pr, .phase = "rebuild", .has_build = 1};
  p.build.stage = "link";
  p.build.done = 1;
  p.build.total = 2;
  b.len = 0;
  CHECK(srv_present_progress(&p, &b) == TH_OK);
  fprintf(stderr, "%s\n", b.data);
  CHECK(strstr(b.data, "{\"tuner\":\"xgb\",\"stage\":\"done\",\"task\":1,\"ntasks\":1,") == b.data);
  CHECK(strstr(b.data, "\"workload\":\"concat \\\"a\\\"\"") && strstr(b.data, "\"best_ms\":1.2,"));
  CHECK(strstr(b.data, "],\"phase\":\"rebuild\",\"build\":{\"stage\":\"link\",\"done\":1,\"total\":2,"
                       "\"fraction\":0.5}}"));
  tune_job_progress u = {.phase = "untuned", .tuning = "no device"};
  b.len = 0;
  CHECK(srv_present_progress(&u, &b) == TH_OK);
  CHECK_STR(b.data, "{\"phase\":\"untuned\",\"tuning\":\"no device\"}");
  th_buf_free(&b);
  return 0;
}

TH_TEST(job_document_and_events) {
  store_job j;
  memset(&j, 0, sizeof j);
  j.id = 7;
  snprintf(j.key.framework, sizeof j.key.framework, "llvm");
  snprintf(j.key.network, sizeof j.key.network, "resnet-18");
  j.key.batch = 1;
  j.state = STORE_JOB_RUNNING;
  j.progress = "{\"phase\":\"build\"}";
  json_t *o = srv_present_job(&j);
  char *t = json_dumps(o, JSON_COMPACT);
  json_decref(o);
  CHECK(strstr(t, "\"id\":7,\"framework\":\"llvm\"") && strstr(t, "\"url\":\"/jobs/7\""));
  CHECK(strstr(t, "\"progress\":{\"phase\":\"build\"}") && strstr(t, "\"started_at\":null"));
  free(t);
  tune_event pub = {.kind = TUNE_EV_PUBLISHED, .job_id = 7, .version = 2, .tuned = 1, .digest = "ab"};
  t = srv_present_event(&pub);
  CHECK_STR(t, "{\"job\":7,\"version\":2,\"tuned\":true,\"digest\":\"sha256:ab\"}");
  free(t);
  tune_event done = {.kind = TUNE_EV_DONE, .job_id = 7, .state = STORE_JOB_FAILED, .error = "a \"b\""};
  t = srv_present_event(&done);
  CHECK_STR(t, "{\"job\":7,\"state\":\"failed\",\"error\":\"a \\\"b\\\"\"}");
  free(t);
  tune_event stage = {.kind = TUNE_EV_STAGE, .job_id = 7, .stage = "measure", .phase = "tune", .task = 0, .ntasks = 3};
  t = srv_present_event(&stage);
  CHECK_STR(t, "{\"job\":7,\"stage\":\"measure\",\"phase\":\"tune\",\"task\":0,\"ntasks\":3}");
  free(t);
  return 0;
}

/* The routes take their error statuses from the th_status table; these are the mappings they rely on. */
TH_TEST(error_statuses_from_the_table) {
  CHECK_EQ_INT(th_status_http(TH_ERR_INVALID), 400);
  CHECK_EQ_INT(th_status_http(TH_ERR_UNAUTHORIZED), 401);
  CHECK_EQ_INT(th_status_http(TH_ERR_NOT_FOUND), 404);
  CHECK_EQ_INT(th_status_http(TH_ERR_CANCELLED), 409);
  CHECK_EQ_INT(th_status_http(TH_ERR_CONFLICT), 409);
  CHECK_EQ_INT(th_status_http(TH_ERR_TOO_LARGE), 413);
  CHECK_EQ_INT(th_status_http(TH_ERR_BUSY), 429);
  CHECK_EQ_INT(th_status_http(TH_ERR_DB), 500);
  CHECK_EQ_INT(th_status_http(TH_ERR_COMPILE), 500);
  CHECK_EQ_INT(th_status_http(TH_ERR_UNSUPPORTED), 501);
  /* a missing device cannot be retried away: 501, never 503 (curl -f --retry would wait an hour) */
  CHECK_EQ_INT(th_status_http(TH_ERR_NO_DEVICE), 501);
  return 0;
}

/* srv_json when libmicrohttpd cannot make the response: no header is added to the missing one
 * (libmicrohttpd would crash), the copied body is freed, and the connection is refused (MHD_NO). */
TH_TEST(json_reply_when_the_response_cannot_be_made) {
  /* srv_queue refuses a NULL response before it looks at the server or the request */
  static srv_t s;
  static srv_request r;
  char json[4096];
  memset(json, 'x', sizeof json - 1);
  json[0] = json[sizeof json - 2] = '"';
  json[sizeof json - 1] = '\0';
  /* A body left behind shows as 4 KiB more in use. Small blocks that jansson frees may stay in
   * glibc's per-thread cache, which mallinfo2 counts as in use, hence the margin. */
  th__mhd_fails = 1;
  size_t before = th__heap_in_use();
  CHECK_EQ_INT(srv_json(&s, &r, 200, json), MHD_NO);
  CHECK(th__heap_in_use() < before + sizeof json / 2);
  /* the same through the document and error paths, which share the body's response */
  json_t *doc = json_pack("{s:s}", "message", json);
  CHECK(doc != NULL);
  CHECK_EQ_INT(srv_json_doc(&s, &r, 200, doc), MHD_NO);
  CHECK(srv_error_response(500, "out_of_memory", NULL, json) == NULL);
  CHECK(th__heap_in_use() < before + sizeof json / 2);
  th__mhd_fails = 0;
  return 0;
}

/* srv_json_response (the 202 bodies of the routes, every error) when json_dumps returns NULL: a
 * NULL response, never a body made of strlen(NULL); the document is consumed either way. */
TH_TEST(json_response_when_json_dumps_fails) {
  json_set_alloc_funcs(th__json_malloc, free);
  json_t *doc = json_pack("{s:s,s:b}", "message", "the model is being built", "queued", 1);
  CHECK(doc != NULL);
  struct MHD_Response *resp = srv_json_response(json_incref(doc));
  CHECK(resp != NULL);
  CHECK_STR(MHD_get_response_header(resp, "Content-Type"), "application/json");
  CHECK_STR(MHD_get_response_header(resp, "Cache-Control"), "no-store");
  MHD_destroy_response(resp);
  th__json_fails = 1;
  CHECK(srv_json_response(doc) == NULL);
  CHECK(srv_error_response(500, "out_of_memory", NULL, "out of memory") == NULL);
  th__json_fails = 0;
  CHECK(srv_json_response(NULL) == NULL);
  return 0;
}

/* srv_response_fd owns the fd it is given: the response closes it, and so does a failure to make
 * one (an offset past what a file can have is refused by libmicrohttpd itself). */
TH_TEST(file_response_owns_the_fd) {
  int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  CHECK(fd >= 0);
  CHECK(srv_response_fd(fd, (uint64_t)INT64_MAX, 1) == NULL);
  errno = 0;
  CHECK(fcntl(fd, F_GETFD) == -1 && errno == EBADF);
  fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  CHECK(fd >= 0);
  struct MHD_Response *resp = srv_response_fd(fd, 0, 0);
  CHECK(resp != NULL);
  CHECK(fcntl(fd, F_GETFD) != -1);
  MHD_destroy_response(resp);
  errno = 0;
  CHECK(fcntl(fd, F_GETFD) == -1 && errno == EBADF);
  return 0;
}

/* GET /networks: every input and output of every zoo network with its name, dtype and shape, the
 * batch as "batch" (or the number ?batch= gives); bert has three int64 inputs and two outputs. */
TH_TEST(networks_list_inputs_and_outputs) {
  json_t *o = NULL;
  CHECK(srv_present_network("bert", &o) == TH_OK);
  char *text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
  fprintf(stderr, "%s\n", text);
  free(text);
  json_t *ins = json_object_get(o, "inputs"), *outs = json_object_get(o, "outputs");
  CHECK_EQ_INT(json_array_size(ins), 3);
  const char *names[3] = {"input_ids", "token_type_ids", "attention_mask"};
  for (int k = 0; k < 3; k++) {
    json_t *io = json_array_get(ins, (size_t)k);
    CHECK_STR(json_string_value(json_object_get(io, "name")), names[k]);
    CHECK_STR(json_string_value(json_object_get(io, "dtype")), "int64");
    json_t *shape = json_object_get(io, "shape");
    CHECK_EQ_INT(json_array_size(shape), 2);
    CHECK_STR(json_string_value(json_array_get(shape, 0)), "batch");
    CHECK_EQ_INT(json_integer_value(json_array_get(shape, 1)), 128);
  }
  CHECK_EQ_INT(json_array_size(outs), 2);
  json_t *lh = json_array_get(outs, 0), *po = json_array_get(outs, 1);
  CHECK_STR(json_string_value(json_object_get(lh, "name")), "last_hidden_state");
  CHECK_STR(json_string_value(json_object_get(lh, "dtype")), "float32");
  CHECK_EQ_INT(json_array_size(json_object_get(lh, "shape")), 3);
  CHECK_EQ_INT(json_integer_value(json_array_get(json_object_get(lh, "shape"), 2)), 768);
  CHECK_STR(json_string_value(json_object_get(po, "name")), "pooler_output");
  CHECK_EQ_INT(json_array_size(json_object_get(po, "shape")), 2);
  /* "input" (older clients): the first input at batch 1 */
  CHECK_EQ_INT(json_array_size(json_object_get(o, "input")), 2);
  CHECK_EQ_INT(json_integer_value(json_array_get(json_object_get(o, "input"), 0)), 1);
  CHECK(json_integer_value(json_object_get(o, "params")) == 109482240);
  /* ?batch=4 */
  srv_present_networks_at(o, 4);
  CHECK_EQ_INT(
      json_integer_value(json_array_get(json_object_get(json_array_get(ins, 2), "shape"), 0)), 4);
  CHECK_EQ_INT(json_integer_value(json_array_get(json_object_get(lh, "shape"), 0)), 4);
  CHECK_EQ_INT(json_integer_value(json_array_get(json_object_get(lh, "shape"), 1)), 128);
  CHECK_EQ_INT(json_integer_value(json_array_get(json_object_get(o, "input"), 0)), 4);
  json_decref(o);
  /* a CNN: one float32 input [batch, 3, 224, 224] and "input" as before */
  CHECK(srv_present_network("resnet-18", &o) == TH_OK);
  json_t *in = json_array_get(json_object_get(o, "inputs"), 0);
  CHECK_EQ_INT(json_array_size(json_object_get(o, "inputs")), 1);
  CHECK_STR(json_string_value(json_object_get(in, "name")), "input");
  CHECK_STR(json_string_value(json_object_get(in, "dtype")), "float32");
  CHECK_STR(json_string_value(json_array_get(json_object_get(in, "shape"), 0)), "batch");
  CHECK_EQ_INT(json_integer_value(json_array_get(json_object_get(in, "shape"), 3)), 224);
  json_t *input = json_object_get(o, "input");
  CHECK(json_array_size(input) == 4 && json_integer_value(json_array_get(input, 0)) == 1 &&
        json_integer_value(json_array_get(input, 1)) == 3);
  CHECK_STR(
      json_string_value(json_object_get(json_array_get(json_object_get(o, "outputs"), 0), "name")),
      "output");
  json_decref(o);
  CHECK(srv_present_network("resnet-9000", &o) == TH_ERR_NOT_FOUND);
  return 0;
}

/* --max-upload: bytes, or K, M, G (binary); the default is 2 GiB. */
/* --min-free: a byte count up to P (PiB), or 0 (off); the default is -1 (srv_start picks 1 GiB or
 * 5% of the disk). */
TH_TEST(config_min_free) {
  srv_config c;
  char err[512];
  srv_config_defaults(&c);
  CHECK(c.min_free == -1);
  char *pib[] = {"--min-free", "1P"};
  CHECK(srv_config_parse(&c, 2, pib, err, sizeof err) == TH_OK);
  CHECK(c.min_free == (int64_t)1 << 50);
  char *off[] = {"--min-free", "0"};
  CHECK(srv_config_parse(&c, 2, off, err, sizeof err) == TH_OK);
  CHECK(c.min_free == 0);
  char *bad[] = {"--min-free", "lots"};
  CHECK(srv_config_parse(&c, 2, bad, err, sizeof err) == TH_ERR_INVALID);
  CHECK(strstr(err, "--min-free") != NULL);
  return 0;
}

TH_TEST(config_max_upload) {
  srv_config c;
  srv_config_defaults(&c);
  CHECK(c.max_upload == (int64_t)2 << 30);
  char err[512] = "";
  char *plain[] = {"--max-upload", "4096"};
  CHECK(srv_config_parse(&c, 2, plain, err, sizeof err) == TH_OK);
  CHECK(c.max_upload == 4096);
  char *mib[] = {"--max-upload", "300M"};
  CHECK(srv_config_parse(&c, 2, mib, err, sizeof err) == TH_OK);
  CHECK(c.max_upload == (int64_t)300 << 20);
  char *gib[] = {"--max-upload", "3g"};
  CHECK(srv_config_parse(&c, 2, gib, err, sizeof err) == TH_OK);
  CHECK(c.max_upload == (int64_t)3 << 30);
  const char *bad[] = {"0", "-5", "12X", "G", "", "99999999999999999999", "2048G"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char *argv[] = {"--max-upload", (char *)bad[i]};
    err[0] = '\0';
    CHECK(srv_config_parse(&c, 2, argv, err, sizeof err) == TH_ERR_INVALID);
    CHECK(strstr(err, "K, M, G, T or P") != NULL);
  }
  return 0;
}

/* The naming rule of uploaded networks: [a-z0-9][a-z0-9._-]{0,62}. */
TH_TEST(network_name_rule) {
  const char *good[] = {"a", "tiny", "my-net.v2_b", "0net", "resnet-18", "squeezenet_v1.1",
                        "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijk"}; /* 63 */
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) CHECK(srv_network_name_ok(good[i]));
  const char *bad[] = {"", "Tiny", "-net", ".net", "_net", "a b", "a/b", "net%", "ünet", "a:b",
                       "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijkl"}; /* 64 */
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) CHECK(!srv_network_name_ok(bad[i]));
  CHECK(!srv_network_name_ok(NULL));
  return 0;
}

/* Content-Digest (RFC 9530): the sha-256 member is compared; others are skipped; a malformed header or one
 * without sha-256 is told apart from a mismatch. */
TH_TEST(content_digest_check) {
  th_sha256 h;
  unsigned char sha[32];
  th_sha256_init(&h);
  th_sha256_update(&h, "hello", 5);
  th_sha256_final(&h, sha);
  char b64[48], hdr[256];
  th_base64(sha, 32, b64);
  snprintf(hdr, sizeof hdr, "sha-256=:%s:", b64);
  CHECK_EQ_INT(srv_content_digest_check(hdr, sha), 1);
  snprintf(hdr, sizeof hdr, "sha-512=:AAAA:, SHA-256=:%s:", b64);
  CHECK_EQ_INT(srv_content_digest_check(hdr, sha), 1);
  size_t l = strlen(b64);
  while (l && b64[l - 1] == '=') b64[--l] = '\0';
  snprintf(hdr, sizeof hdr, "sha-256=:%s:;v=1", b64); /* padding left out, a parameter */
  CHECK_EQ_INT(srv_content_digest_check(hdr, sha), 1);
  CHECK_EQ_INT(srv_content_digest_check("sha-256=:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=:", sha), 0);
  CHECK_EQ_INT(srv_content_digest_check("sha-512=:AAAA:", sha), -2);
  CHECK_EQ_INT(srv_content_digest_check("", sha), -2);
  CHECK_EQ_INT(srv_content_digest_check("sha-256=abc", sha), -1);
  CHECK_EQ_INT(srv_content_digest_check("sha-256=:ab$c:", sha), -1);
  CHECK_EQ_INT(srv_content_digest_check("sha-256", sha), -1);
  CHECK_EQ_INT(srv_content_digest_check("sha-256=:abc", sha), -1);
  return 0;
}

/* Token files: plain and hashed tokens, scopes (each with those below it), and the errors that name
 * the rule. */
TH_TEST(tokens_hashed_with_scopes) {
  char err[512] = "";
  srv_tokens t;
  const unsigned all = SRV_SCOPE_READ | SRV_SCOPE_TUNE | SRV_SCOPE_ADMIN;
  const char *file =
      "# tune only\n"
      "  tune-token-12345 tune\n"
      "\n"
      "sha256:be1b4c1b2b5b8ab1f5e86e1cfe3d0ed38c0b3e9a2a6e0b0d8f0d5d8cd1a3a3e1 admin\r\n"
      "legacy-token-all\n"
      "reader-token-12345 read\n";
  CHECK(srv_tokens_parse(file, &t, err, sizeof err) == TH_OK);
  CHECK_EQ_INT(t.n, 4);
  CHECK_EQ_INT(srv_tokens_scopes(&t, "tune-token-12345"), SRV_SCOPE_TUNE | SRV_SCOPE_READ);
  CHECK_EQ_INT(srv_tokens_scopes(&t, "legacy-token-all"), all);
  CHECK_EQ_INT(srv_tokens_scopes(&t, "reader-token-12345"), SRV_SCOPE_READ);
  CHECK_EQ_INT(srv_tokens_scopes(&t, "tune-token-1234"), 0);
  CHECK_EQ_INT(srv_tokens_scopes(&t, "tune-token-12345 "), 0);
  CHECK_EQ_INT(srv_tokens_scopes(&t, ""), 0);
  CHECK(!strcmp(srv_scope_name(SRV_SCOPE_READ), "read"));
  CHECK(!strcmp(srv_scope_name(SRV_SCOPE_TUNE | SRV_SCOPE_READ), "tune"));
  CHECK(!strcmp(srv_scope_name(all), "admin"));
  /* a hashed line matches the token whose sha256 it holds, never the hash text itself */
  char line[200];
  unsigned char h[32];
  char hex[65];
  th_sha256 s;
  th_sha256_init(&s);
  th_sha256_update(&s, "admin-secret-1234", 17);
  th_sha256_final(&s, h);
  th_hex(h, 32, hex);
  snprintf(line, sizeof line, "sha256:%s admin\n", hex);
  CHECK(srv_tokens_parse(line, &t, err, sizeof err) == TH_OK);
  CHECK_EQ_INT(srv_tokens_scopes(&t, "admin-secret-1234"), all);
  CHECK_EQ_INT(srv_tokens_scopes(&t, line), 0);
  CHECK_EQ_INT(srv_tokens_scopes(&t, hex), 0);
  CHECK(srv_tokens_parse("tune-token-12345 tune,deploy\n", &t, err, sizeof err) == TH_ERR_INVALID);
  CHECK(strstr(err, "line 1") && strstr(err, "valid scopes: read, tune, admin"));
  CHECK(srv_tokens_parse("sha256:abcd\n", &t, err, sizeof err) == TH_ERR_INVALID);
  CHECK(strstr(err, "64 hex digits"));
  CHECK(srv_tokens_parse("# nothing\n\n", &t, err, sizeof err) == TH_ERR_INVALID);
  CHECK(strstr(err, "no token"));
  return 0;
}

/* Issue 36: the limits on what anonymous clients may hold (live jobs per address, their share of the
 * queue, waits per address) have defaults and refuse values out of range, naming the flag. */
TH_TEST(config_share_limits) {
  srv_config c;
  srv_config_defaults(&c);
  CHECK_EQ_INT(c.anon_jobs_per_ip, 4);
  CHECK_EQ_INT(c.anon_queue_share, 50);
  CHECK_EQ_INT(c.max_waits_per_ip, 32);
  char err[512] = "";
  char *ok[] = {"--anon-jobs-per-ip", "0", "--anon-queue-share", "100", "--max-waits-per-ip", "1"};
  CHECK(srv_config_parse(&c, 6, ok, err, sizeof err) == TH_OK);
  CHECK_EQ_INT(c.anon_jobs_per_ip, 0);
  CHECK_EQ_INT(c.anon_queue_share, 100);
  CHECK_EQ_INT(c.max_waits_per_ip, 1);
  const char *bad[][3] = {{"--anon-jobs-per-ip", "-1", "0 to 100000"},
                          {"--anon-queue-share", "101", "0 to 100"},
                          {"--max-waits-per-ip", "0", "1 to 1024"},
                          {"--max-waits-per-ip", "1025", "1 to 1024"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char *argv[] = {(char *)bad[i][0], (char *)bad[i][1]};
    err[0] = '\0';
    CHECK(srv_config_parse(&c, 2, argv, err, sizeof err) == TH_ERR_INVALID);
    CHECK(strstr(err, bad[i][0]) != NULL && strstr(err, bad[i][2]) != NULL);
  }
  return 0;
}

/* A token is at least SRV_TOKEN_MIN (16) characters: a shorter one refuses the whole file, naming
 * its line, the minimum and its length (8 characters were taken before). */
TH_TEST(tokens_minimum_length) {
  char err[512] = "";
  srv_tokens t;
  CHECK_EQ_INT(SRV_TOKEN_MIN, 16);
  CHECK(srv_tokens_parse("short\n", &t, err, sizeof err) == TH_ERR_INVALID);
  CHECK(strstr(err, "16 to 1024"));
  CHECK(srv_tokens_parse("# first a good one\nlong-enough-token-1 tune\nabcdefgh admin\n", &t, err,
                         sizeof err) == TH_ERR_INVALID);
  CHECK(strstr(err, "line 3") && strstr(err, "16 to 1024") && strstr(err, "this one has 8"));
  CHECK(srv_tokens_parse("fifteen-chars-1\n", &t, err, sizeof err) == TH_ERR_INVALID);
  CHECK(srv_tokens_parse("sixteen-chars-12\n", &t, err, sizeof err) == TH_OK);
  return 0;
}

/* Failed authentications: SRV_AUTH_FAILS_PER_MIN an address in a one-minute window, then it waits
 * out the window (whole seconds, at least 1); other addresses are not held back; a new window
 * starts afresh. */
TH_TEST(auth_fails_window) {
  static srv_auth_fails f; /* 1024 slots: not on the stack */
  srv_auth_fails_init(&f, SRV_AUTH_FAILS_PER_MIN);
  double t0 = 1000.0;
  for (int i = 0; i < SRV_AUTH_FAILS_PER_MIN; i++) {
    CHECK_EQ_INT(srv_auth_fails_wait(&f, "10.0.0.1", t0 + i), 0);
    srv_auth_fails_note(&f, "10.0.0.1", t0 + i);
  }
  CHECK_EQ_INT(srv_auth_fails_wait(&f, "10.0.0.1", t0 + 10), 50);
  CHECK_EQ_INT(srv_auth_fails_wait(&f, "10.0.0.1", t0 + 59.5), 1);
  CHECK_EQ_INT(srv_auth_fails_wait(&f, "10.0.0.2", t0 + 10), 0);
  CHECK_EQ_INT(srv_auth_fails_wait(&f, "10.0.0.1", t0 + 60), 0);
  srv_auth_fails_note(&f, "10.0.0.1", t0 + 60); /* one failure in a new window */
  CHECK_EQ_INT(srv_auth_fails_wait(&f, "10.0.0.1", t0 + 61), 0);
  /* a full table takes a new address in the slot of the oldest window, and counts it from there */
  char ip[48] = "";
  for (int i = 0; i < SRV_AUTH_FAIL_SLOTS + 5; i++) {
    snprintf(ip, sizeof ip, "10.1.%d.%d", i / 256, i % 256);
    srv_auth_fails_note(&f, ip, t0 + 100 + i * 0.001);
  }
  for (int i = 1; i < SRV_AUTH_FAILS_PER_MIN; i++) srv_auth_fails_note(&f, ip, t0 + 102);
  CHECK(srv_auth_fails_wait(&f, ip, t0 + 102) > 0);
  CHECK_EQ_INT(srv_auth_fails_wait(&f, "10.1.0.0", t0 + 102), 0); /* forgotten */
  srv_auth_fails_free(&f);
  srv_auth_fails_init(&f, 0); /* no limit */
  for (int i = 0; i < 100; i++) srv_auth_fails_note(&f, "10.0.0.1", t0);
  CHECK_EQ_INT(srv_auth_fails_wait(&f, "10.0.0.1", t0), 0);
  srv_auth_fails_free(&f);
  return 0;
}

/* Repeated slashes name the resource a single one does (a PUT //networks/x answered 500: its upload
 * was not set up, since only "/networks/" was recognised at the headers). */
TH_TEST(path_squash) {
  static const char *const cases[][2] = {{"//networks//x", "/networks/x"},
                                         {"/a///b/", "/a/b/"},
                                         {"///", "/"},
                                         {"/v2//x%2F/y", "/v2/x%2F/y"},
                                         {"", ""}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    /* both texts through locals: gcc's -Wformat-overflow under -fsanitize takes a table entry for null */
    const char *in = cases[i][0], *want = cases[i][1];
    char p[64];
    snprintf(p, sizeof p, "%s", in ? in : "");
    srv_path_squash(p);
    if (!want || strcmp(p, want))
      fprintf(stderr, "'%s' -> '%s', want '%s'\n", in ? in : "", p, want ? want : "");
    CHECK(want && !strcmp(p, want));
  }
  return 0;
}
