/* libFuzzer target of the conditional and partial GET headers that tunehub parses itself
 * (libmicrohttpd does neither): Range with If-Range (srv_range_select, server/response.c),
 * If-None-Match (srv_etag_matches) and Content-Digest (srv_content_digest_check,
 * server/request.c). The input is up to four lines, one header value each: Range, If-Range,
 * If-None-Match, Content-Digest. Each is checked against files of several sizes, from empty to
 * 2^63 - 1 bytes, and the result against what a client may rely on: a partial answer is a
 * non-empty range inside the file, a whole answer is the whole file, and a digest check answers
 * one of its four documented values. Built by tests/fuzz/fuzz.cmake with clang-16. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "request.h"
#include "response.h"
#include "th_sha256.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The ETag srv_send_file gives a blob: the quoted docker digest. */
static const char fz_etag[] =
    "\"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\"";

static void fz_range(const char *range, const char *if_range) {
  static const int64_t sizes[] = {0, 1, 2, 100, 4096, (int64_t)1 << 40, INT64_MAX};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    int64_t size = sizes[i], start = -1, len = -1;
    int r = srv_range_select(range, if_range, fz_etag, size, &start, &len);
    if (r < -1 || r > 1) __builtin_trap();
    if (r == 1 && (start < 0 || len < 1 || start > size - len)) __builtin_trap();
    if (r == 0 && (start != 0 || len != size)) __builtin_trap();
    if (r != 0 && (!range || (if_range && strcmp(if_range, fz_etag) != 0))) __builtin_trap();
  }
}

static void fz_digest(const char *header) {
  static const unsigned char sha[32] = {0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14,
                                        0x9a, 0xfb, 0xf4, 0xc8, 0x99, 0x6f, 0xb9, 0x24,
                                        0x27, 0xae, 0x41, 0xe4, 0x64, 0x9b, 0x93, 0x4c,
                                        0xa4, 0x95, 0x99, 0x1b, 0x78, 0x52, 0xb8, 0x55};
  int r = srv_content_digest_check(header, sha);
  if (r < -2 || r > 1) __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* header values as libmicrohttpd hands them over: NUL-terminated, no line breaks */
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  char *line[4] = {NULL, NULL, NULL, NULL};
  char *p = text;
  for (int i = 0; i < 4 && p; i++) {
    line[i] = p;
    p = strchr(p, '\n');
    if (p) *p++ = '\0';
  }
  fz_range(line[0], line[1]);
  fz_range(line[0], NULL);
  if (srv_etag_matches(line[2], fz_etag) < 0) __builtin_trap();
  if (line[2] && srv_etag_matches(line[2], line[2]) < 0) __builtin_trap();
  fz_digest(line[3] ? line[3] : line[0]);
  free(text);
  return 0;
}
