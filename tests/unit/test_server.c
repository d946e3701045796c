/* Unit tests of server/ helpers: percent-decoding that refuses encoded separators, query lookup, and the
 * `serve` flag parser that names the valid forms. The routes themselves are exercised end to end against
 * the real daemon in tests/integration/. */
#include <string.h>

#include "srv.h"
#include "th_test.h"

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
  char *zero_workers[] = {"--workers", "0"};
  CHECK(srv_config_parse(&c, 2, zero_workers, err, sizeof err) == TH_ERR_INVALID);
  CHECK(strstr(err, "1 to 64") != NULL);
  return 0;
}
