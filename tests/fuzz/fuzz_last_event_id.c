/* libFuzzer target of the SSE Last-Event-ID header (srv_last_event_id_parse, server/request.c),
 * which GET /jobs/{id}/events reads to resume a stream: any header value either gives an event id
 * >= 0 (0 for an absent or empty header, a new stream) or is refused, and an accepted one is the
 * number the text spells. Built by tests/fuzz/fuzz.cmake with clang-16. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *h = malloc(size + 1);
  if (!h) return 0;
  memcpy(h, data, size);
  h[size] = '\0'; /* libmicrohttpd hands header values over NUL-terminated */
  int64_t last = -1;
  if (srv_last_event_id_parse(h, &last) == 0) {
    if (last < 0) __builtin_trap();
    if (*h) {
      /* the id round-trips: what was accepted is the number written, nothing more or less */
      if (strtoll(h, NULL, 10) != last) __builtin_trap();
    } else if (last != 0) {
      __builtin_trap();
    }
  } else if (last != -1) {
    __builtin_trap(); /* out-param written on failure */
  }
  if (srv_last_event_id_parse(NULL, &last) != 0 || last != 0) __builtin_trap();
  free(h);
  return 0;
}
