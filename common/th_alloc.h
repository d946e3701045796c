/* The allocator every module's own heap memory goes through (th_malloc and friends: plain libc
 * underneath), with a fault-injection switch in the manner of SQLite's sqlite3FaultSim: a test arms
 * it to make the Nth allocation from then on fail, and so walks an operation through every
 * out-of-memory path it has. Allocations made inside foreign libraries (SQLite, libpq, jansson,
 * libmicrohttpd, LLVM, libarchive) call their own malloc and are not counted or failed by the
 * switch. */
#ifndef TH_ALLOC_H
#define TH_ALLOC_H

#include <stddef.h>

/* malloc, calloc, realloc, strdup, strndup and aligned_alloc, except that each returns NULL (and
 * counts) when the armed fault says so. What they return is released with th_free (or free: it is
 * the same heap). th_realloc that fails leaves p as it was, still owned by the caller. th_calloc
 * fails (NULL) when count * size overflows. Thread-safe. */
void *th_malloc(size_t n);
void *th_calloc(size_t count, size_t size);
void *th_realloc(void *p, size_t n);
char *th_strdup(const char *s);
char *th_strndup(const char *s, size_t n);
/* aligned_alloc (n a multiple of align, as C11 asks). */
void *th_aligned_alloc(size_t align, size_t n);
/* free(p); NULL is fine. */
void th_free(void *p);

/* Arms the switch: the nth allocation (1-based) made through the functions above after this call
 * fails, and with persist every one after it fails too (until th_alloc_fault_disarm). n <= 0
 * disarms. The count is process-wide and atomic, so allocations of other threads count as well: arm
 * it where one thread runs the operation under test. */
void th_alloc_fault_arm(long n, int persist);
/* Disarms the switch and returns how many allocations failed since it was armed (0: the operation
 * ran without reaching the nth allocation). */
long th_alloc_fault_disarm(void);
/* How many allocations the functions above have made since th_alloc_fault_arm (counting failed
 * ones), for a test that measures an operation. */
long th_alloc_fault_count(void);

#endif
