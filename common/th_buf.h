/* Growable byte buffers with a hard cap (curl's dynbuf idea) and a bump arena for per-request and graph
 * memory. Both report out-of-memory and over-cap as statuses instead of aborting. */
#ifndef TH_BUF_H
#define TH_BUF_H

#include <stddef.h>

#include "th_status.h"

typedef struct th_buf {
  char *data; /* owned; always NUL-terminated when len > 0 */
  size_t len;
  size_t cap;
  size_t max; /* hard cap on len; appends past it fail with TH_ERR_TOO_LARGE */
} th_buf;

void th_buf_init(th_buf *b, size_t max);
/* Releases the storage; b may be reused after th_buf_init. Accepts a zeroed or NULL buffer. */
void th_buf_free(th_buf *b);
th_status th_buf_append(th_buf *b, const void *data, size_t n);
th_status th_buf_appendf(th_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Hands the storage to the caller (free() it); the buffer is left empty. */
char *th_buf_steal(th_buf *b);

typedef struct th_arena th_arena;
/* A bump allocator; every allocation is freed at once by th_arena_free. Not thread-safe. */
th_arena *th_arena_new(size_t block_size);
void th_arena_free(th_arena *a);
/* Returns zeroed memory aligned to 64 bytes, or NULL when out of memory. */
void *th_arena_alloc(th_arena *a, size_t n);
char *th_arena_strdup(th_arena *a, const char *s);

#endif
