/* Small file-system, descriptor and time helpers shared by every module: recursive mkdir and delete, whole-file reads,
 * durable writes (temp file, fsync, rename, fsync of the directory), whole reads and writes on pipes and
 * sockets, and monotonic/wall clocks. */
#ifndef TH_UTIL_H
#define TH_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include <time.h>

#include "th_status.h"

/* mkdir -p; existing directories are fine. */
th_status th_mkdir_p(const char *path);
/* Makes a fresh private directory $TMPDIR/<prefix>-XXXXXX (/tmp when TMPDIR is unset or empty) and writes
 * its path to out (n bytes). TH_ERR_TOO_LARGE when the path does not fit, TH_ERR_INVALID for an empty
 * prefix, TH_ERR_IO when mkdtemp fails (errno says why). out is written only on success. The caller owns the
 * directory (th_rm_rf). */
th_status th_mkdtemp(const char *prefix, char *out, size_t n);
/* rm -rf: removes path and, when it is a directory, everything below it. A symbolic link is unlinked,
 * never followed (a link to a directory outside the tree leaves that directory alone). A missing path
 * is TH_OK. Returns TH_ERR_IO when something could not be removed (the rest is still removed), and
 * TH_ERR_TOO_LARGE for a path deeper than PATH_MAX. Not safe against another process renaming
 * directories inside the tree meanwhile. */
th_status th_rm_rf(const char *path);
/* Reads a whole file into a malloc'd buffer (NUL-terminated; caller frees). Fails with TH_ERR_TOO_LARGE
 * past max bytes. */
th_status th_read_file(const char *path, size_t max, char **data, size_t *len);
/* Writes data to path durably: path.tmp.<pid>, fsync, rename, fsync(dir). */
th_status th_write_file_atomic(const char *path, const void *data, size_t len);
/* fsyncs the directory that holds path, so that a rename into it survives a crash. */
th_status th_fsync_parent(const char *path);
/* Writes all n bytes to fd, retrying on EINTR and short writes. is_socket: send with MSG_NOSIGNAL (a closed
 * peer is an error, not SIGPIPE); falls back to write when fd is not a socket. 0 ok, -1 error. */
int th_write_full(int fd, const void *p, size_t n, int is_socket);
/* Reads exactly n bytes from fd: 0 ok, 1 EOF first (or the peer reset the connection: it is gone too), 2 the
 * deadline (th_now_mono time; < 0: none) passed, -1 error. */
int th_read_full(int fd, void *p, size_t n, double deadline);
/* Seconds since an arbitrary start, from CLOCK_MONOTONIC. */
double th_now_mono(void);
/* Unix time in seconds, with fraction. */
double th_now_wall(void);
/* The CLOCK_REALTIME time `seconds` from now, as pthread_cond_timedwait takes its deadline. */
struct timespec th_deadline_in(double seconds);
/* Formats Unix time t as "2026-11-21T18:21:00Z" into out (at least 21 bytes). */
void th_time_iso(double t, char *out, size_t n);
/* Ends a forked child that did not exec, with status: like _exit (no atexit handlers, no stdio flush), and
 * without a sanitizer's exit checks either. ThreadSanitizer marks the parent's other threads finished in a
 * fork of a threaded process, so its _exit reported each as a leaked thread and turned status into 66: a
 * link that had succeeded read as a failed compile. Reports of real errors in the child are printed when
 * they happen, before this. */
_Noreturn void th_child_exit(int status);
/* strtoll with full validation: digits only (optional leading '-'), no overflow. */
th_status th_parse_i64(const char *s, int64_t *out);

#endif
