/* File-system and clock helpers. Durable writes follow the write-temp, fsync, rename, fsync-directory
 * sequence, so a crash leaves either the old file or the complete new one, never a torn one. */
#include "th_util.h"
#include "th_alloc.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <libgen.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

th_status th_mkdir_p(const char *path) {
  char tmp[PATH_MAX];
  size_t n = strlen(path);
  if (n == 0 || n >= sizeof tmp) return TH_ERR_INVALID;
  memcpy(tmp, path, n + 1);
  for (char *p = tmp + 1; *p; p++) {
    if (*p == '/') {
      *p = '\0';
      if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return TH_ERR_IO;
      *p = '/';
    }
  }
  if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return TH_ERR_IO;
  return TH_OK;
}

th_status th_mkdtemp(const char *prefix, char *out, size_t n) {
  if (!prefix || !*prefix || !out) return TH_ERR_INVALID;
  const char *tmp = getenv("TMPDIR");
  char dir[PATH_MAX];
  int w = snprintf(dir, sizeof dir, "%s/%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", prefix);
  if (w < 0 || (size_t)w >= sizeof dir || (size_t)w >= n) return TH_ERR_TOO_LARGE;
  if (!mkdtemp(dir)) return TH_ERR_IO;
  memcpy(out, dir, (size_t)w + 1);
  return TH_OK;
}

th_status th_rm_rf(const char *path) {
  if (!path || !*path) return TH_ERR_INVALID;
  struct stat sb;
  if (lstat(path, &sb) != 0) return errno == ENOENT ? TH_OK : TH_ERR_IO;
  th_status rc = TH_OK;
  if (S_ISDIR(sb.st_mode)) {
    DIR *d = opendir(path);
    if (!d) rc = TH_ERR_IO;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
      char p[PATH_MAX];
      int n = snprintf(p, sizeof p, "%s/%s", path, e->d_name);
      th_status r = (n < 0 || (size_t)n >= sizeof p) ? TH_ERR_TOO_LARGE : th_rm_rf(p);
      if (rc == TH_OK) rc = r;
    }
    if (d) closedir(d);
    if (rmdir(path) != 0 && rc == TH_OK) rc = TH_ERR_IO;
  } else if (unlink(path) != 0 && errno != ENOENT) {
    rc = TH_ERR_IO;
  }
  return rc;
}

th_status th_read_file(const char *path, size_t max, char **data, size_t *len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? TH_ERR_NOT_FOUND : TH_ERR_IO;
  struct stat st;
  if (fstat(fd, &st) != 0) {
    close(fd);
    return TH_ERR_IO;
  }
  if ((uint64_t)st.st_size > max) {
    close(fd);
    return TH_ERR_TOO_LARGE;
  }
  size_t size = (size_t)st.st_size;
  char *buf = th_malloc(size + 1);
  if (!buf) {
    close(fd);
    return TH_ERR_NOMEM;
  }
  size_t got = 0;
  while (got < size) {
    ssize_t r = read(fd, buf + got, size - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  if (got != size) {
    free(buf);
    return TH_ERR_IO;
  }
  buf[size] = '\0';
  *data = buf;
  if (len) *len = size;
  return TH_OK;
}

th_status th_fsync_parent(const char *path) {
  char tmp[PATH_MAX];
  size_t n = strlen(path);
  if (n >= sizeof tmp) return TH_ERR_INVALID;
  memcpy(tmp, path, n + 1); /* length checked above */
  int dfd = open(dirname(tmp), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return TH_ERR_IO;
  int rc = fsync(dfd);
  close(dfd);
  return rc == 0 ? TH_OK : TH_ERR_IO;
}

th_status th_write_file_atomic(const char *path, const void *data, size_t len) {
  char tmp[PATH_MAX + 32]; /* path.tmp.<pid> */
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return TH_ERR_IO;
  const char *p = data;
  size_t left = len;
  while (left) {
    ssize_t w = write(fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      close(fd);
      unlink(tmp);
      return TH_ERR_IO;
    }
    p += w;
    left -= (size_t)w;
  }
  if (fsync(fd) != 0 || close(fd) != 0) {
    unlink(tmp);
    return TH_ERR_IO;
  }
  if (rename(tmp, path) != 0) {
    unlink(tmp);
    return TH_ERR_IO;
  }
  return th_fsync_parent(path);
}

double th_now_mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double th_now_wall(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct timespec th_deadline_in(double seconds) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  if (seconds < 0) seconds = 0;
  ts.tv_sec += (time_t)seconds;
  ts.tv_nsec += (long)((seconds - (double)(time_t)seconds) * 1e9);
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  return ts;
}

void th_time_iso(double t, char *out, size_t n) {
  time_t s = (time_t)t;
  struct tm tm;
  gmtime_r(&s, &tm);
  strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

th_status th_parse_i64(const char *s, int64_t *out) {
  if (!s || !*s) return TH_ERR_INVALID;
  const char *p = s;
  if (*p == '-') p++;
  if (!*p) return TH_ERR_INVALID;
  for (const char *q = p; *q; q++)
    if (*q < '0' || *q > '9') return TH_ERR_INVALID;
  errno = 0;
  char *end = NULL;
  long long v = strtoll(s, &end, 10);
  if (errno == ERANGE || *end) return TH_ERR_INVALID;
  *out = v;
  return TH_OK;
}

int th_write_full(int fd, const void *p, size_t n, int is_socket) {
  const char *c = p;
  while (n > 0) {
    ssize_t w = is_socket ? send(fd, c, n, MSG_NOSIGNAL) : write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno == ENOTSOCK && is_socket) {
      is_socket = 0;
      continue;
    }
    if (w <= 0) return -1;
    c += w;
    n -= (size_t)w;
  }
  return 0;
}

int th_read_full(int fd, void *p, size_t n, double deadline) {
  char *c = p;
  while (n > 0) {
    if (deadline >= 0) {
      double left = deadline - th_now_mono();
      if (left <= 0) return 2;
      struct pollfd pfd = {.fd = fd, .events = POLLIN};
      int pr = poll(&pfd, 1, (int)(left * 1000.0) + 1);
      if (pr < 0 && errno == EINTR) continue;
      if (pr < 0) return -1;
      if (pr == 0) return 2;
    }
    ssize_t r = read(fd, c, n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return errno == ECONNRESET ? 1 : -1; /* (a socket's peer died with our data unread) */
    if (r == 0) return 1;
    c += r;
    n -= (size_t)r;
  }
  return 0;
}

_Noreturn void th_child_exit(int status) {
  syscall(SYS_exit_group, status);
  _exit(status); /* not reached */
}
