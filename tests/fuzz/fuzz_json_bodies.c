/* libFuzzer target of the JSON bodies of the mutating routes, as the routes parse them
 * (server/request.c): POST /models/{fw}/{net}/{batch}/tune (srv_tune_body_check) and PUT
 * .../aliases/{alias} (srv_alias_body_parse). The first byte picks the body kind, the rest is
 * the body. What a route accepts is checked against what the rest of tunehub relies on: tuning
 * options that are all known and in range (the scheduler reads them back without checking), an
 * alias target that is either a version from 1 or a 64-digit lowercase sha256. Built by
 * tests/fuzz/fuzz.cmake with clang-16. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "request.h"
#include "th_sha256.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fz_tune(const char *body, size_t len) {
  json_t *b = NULL;
  const char *bad = NULL;
  char msg[256];
  if (srv_tune_body_check(body, len, &b, &bad, msg, sizeof msg) < 0) {
    if (b) __builtin_trap(); /* nothing handed out for a body that is not an object */
    return;
  }
  if (!json_is_object(b)) __builtin_trap();
  if (bad) {
    if (!msg[0] || !json_object_get(b, bad)) __builtin_trap(); /* the option named is the body's */
  } else {
    const char *k;
    json_t *v;
    json_object_foreach(b, k, v) {
      if (!strcmp(k, "tuner")) {
        if (!json_is_string(v)) __builtin_trap();
      } else if (!strcmp(k, "priority")) {
        json_int_t x = json_integer_value(v);
        if (!json_is_integer(v) || x < -100 || x > 100) __builtin_trap();
      } else if (!strcmp(k, "trials") || !strcmp(k, "early_stopping")) {
        json_int_t x = json_integer_value(v);
        if (!json_is_integer(v) || x < 1 || x > 100000) __builtin_trap();
      } else {
        __builtin_trap();
      }
    }
    /* the route stores the options as compact JSON text for the job */
    char *text = json_dumps(b, JSON_COMPACT);
    if (!text) __builtin_trap();
    free(text);
  }
  json_decref(b);
}

static void fz_alias(const char *body, size_t len) {
  int version = -1;
  char digest[65];
  memset(digest, 'x', sizeof digest);
  const char *why = srv_alias_body_parse(body, len, &version, digest);
  if (why) {
    if (version != -1 || !why[0]) __builtin_trap(); /* out-params untouched on failure */
    return;
  }
  if (version < 0 || version > 1000000000) __builtin_trap();
  if (version == 0 ? !th_is_sha256_hex(digest) : digest[0] != '\0') __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  const char *body = (const char *)data + 1;
  if (data[0] & 1)
    fz_alias(body, size - 1);
  else
    fz_tune(body, size - 1);
  return 0;
}
