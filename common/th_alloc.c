/* th_alloc: the counted allocator of th_alloc.h. When disarmed the cost over libc is one relaxed
 * atomic load per call; armed, one atomic increment decides whether the call fails. The switch
 * lives here, not in the callers, so that a test can fail any one allocation of an operation
 * without knowing which function makes it. */
#include "th_alloc.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static atomic_long th__fault_at;     /* 0: disarmed; else the 1-based allocation that fails */
static atomic_int th__fault_persist; /* 1: every allocation after th__fault_at fails too */
static atomic_long th__fault_count;  /* allocations since armed */
static atomic_long th__fault_hits;   /* allocations failed since armed */

/* 1 when this allocation is to fail. */
static int th__fault(void) {
  long at = atomic_load_explicit(&th__fault_at, memory_order_relaxed);
  if (at <= 0) return 0;
  long k = atomic_fetch_add(&th__fault_count, 1) + 1;
  if (k == at || (k > at && atomic_load(&th__fault_persist))) {
    atomic_fetch_add(&th__fault_hits, 1);
    return 1;
  }
  return 0;
}

void *th_malloc(size_t n) {
  return th__fault() ? NULL : malloc(n);
}

void *th_calloc(size_t count, size_t size) {
  if (size && count > SIZE_MAX / size) return NULL;
  return th__fault() ? NULL : calloc(count, size);
}

void *th_realloc(void *p, size_t n) {
  return th__fault() ? NULL : realloc(p, n);
}

char *th_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = th_malloc(n);
  if (p) memcpy(p, s, n);
  return p;
}

char *th_strndup(const char *s, size_t n) {
  size_t len = strnlen(s, n);
  char *p = th_malloc(len + 1);
  if (!p) return NULL;
  memcpy(p, s, len);
  p[len] = '\0';
  return p;
}

void *th_aligned_alloc(size_t align, size_t n) {
  return th__fault() ? NULL : aligned_alloc(align, n);
}

void th_free(void *p) {
  free(p);
}

void th_alloc_fault_arm(long n, int persist) {
  atomic_store(&th__fault_at, 0);
  atomic_store(&th__fault_count, 0);
  atomic_store(&th__fault_hits, 0);
  atomic_store(&th__fault_persist, persist ? 1 : 0);
  if (n > 0) atomic_store(&th__fault_at, n);
}

long th_alloc_fault_disarm(void) {
  atomic_store(&th__fault_at, 0);
  return atomic_load(&th__fault_hits);
}

long th_alloc_fault_count(void) {
  return atomic_load(&th__fault_count);
}
