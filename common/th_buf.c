/* Growable buffers and arenas. Buffers double their capacity up to the cap; arenas chain blocks and serve
 * oversized requests from a dedicated block so that one big tensor does not waste a whole chain. */
#include "th_buf.h"
#include "th_alloc.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void th_buf_init(th_buf *b, size_t max) {
  b->data = NULL;
  b->len = 0;
  b->cap = 0;
  b->max = max ? max : SIZE_MAX / 2;
}

void th_buf_free(th_buf *b) {
  if (!b) return;
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

static th_status th__buf_reserve(th_buf *b, size_t extra) {
  if (extra > b->max || b->len > b->max - extra) return TH_ERR_TOO_LARGE;
  size_t need = b->len + extra + 1;
  if (need <= b->cap) return TH_OK;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < need) cap *= 2;
  char *p = th_realloc(b->data, cap);
  if (!p) return TH_ERR_NOMEM;
  b->data = p;
  b->cap = cap;
  return TH_OK;
}

th_status th_buf_append(th_buf *b, const void *data, size_t n) {
  th_status rc = th__buf_reserve(b, n);
  if (rc != TH_OK) return rc;
  if (n) memcpy(b->data + b->len, data, n);
  b->len += n;
  b->data[b->len] = '\0';
  return TH_OK;
}

th_status th_buf_appendf(th_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return TH_ERR_INVALID;
  th_status rc = th__buf_reserve(b, (size_t)n);
  if (rc != TH_OK) return rc;
  va_start(ap, fmt);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
  return TH_OK;
}

char *th_buf_steal(th_buf *b) {
  char *p = b->data;
  if (!p) p = th_calloc(1, 1);
  b->data = NULL;
  b->len = b->cap = 0;
  return p;
}

struct th__arena_block {
  struct th__arena_block *next;
  size_t used, size;
  _Alignas(64) unsigned char mem[];
};

struct th_arena {
  struct th__arena_block *head;
  size_t block_size;
};

th_arena *th_arena_new(size_t block_size) {
  th_arena *a = th_calloc(1, sizeof *a);
  if (!a) return NULL;
  a->block_size = block_size ? block_size : 64 * 1024;
  return a;
}

void th_arena_free(th_arena *a) {
  if (!a) return;
  struct th__arena_block *b = a->head;
  while (b) {
    struct th__arena_block *n = b->next;
    free(b);
    b = n;
  }
  free(a);
}

void *th_arena_alloc(th_arena *a, size_t n) {
  n = (n + 63) & ~(size_t)63;
  if (n == 0) n = 64;
  struct th__arena_block *b = a->head;
  if (!b || b->size - b->used < n) {
    size_t size = n > a->block_size ? n : a->block_size;
    struct th__arena_block *nb = th_aligned_alloc(64, (sizeof *nb + size + 63) & ~(size_t)63);
    if (!nb) return NULL;
    nb->used = 0;
    nb->size = size;
    if (b && n > a->block_size) {
      /* keep the current block as the head so its free space stays usable */
      nb->next = b->next;
      b->next = nb;
    } else {
      nb->next = b;
      a->head = nb;
    }
    b = nb;
  }
  void *p = b->mem + b->used;
  b->used += n;
  memset(p, 0, n);
  return p;
}

char *th_arena_strdup(th_arena *a, const char *s) {
  size_t n = strlen(s) + 1;
  char *p = th_arena_alloc(a, n);
  if (p) memcpy(p, s, n);
  return p;
}
