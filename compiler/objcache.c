/* The object cache (objcache.h): the private folder, file names from digests, hits, atomic stores and the
 * size cap that removes the oldest kernel objects. */
#include "objcache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "th_util.h"

/* A folder that only this user can write: owned by the effective uid, not group- or world-writable. */
static int private_dir(const char *dir) {
  struct stat st;
  return stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & 022);
}

static atomic_uint lookups, hits;

void tc_objcache_counts(unsigned *hit, unsigned *looked) {
  if (hit) *hit = atomic_load(&hits);
  if (looked) *looked = atomic_load(&lookups);
}

int tc_objcache_dir(char *dir, size_t n) {
  const char *off = getenv("TUNEHUB_NO_CACHE");
  if (off && *off) return 0;
  char base[4096];
  const char *own = getenv("TUNEHUB_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  int w;
  if (own && own[0] == '/') { /* the folder itself, named by the operator */
    w = snprintf(dir, n, "%s", own);
    if (w < 0 || (size_t)w >= n) return 0;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) return 0;
    return private_dir(dir);
  }
  if (xdg && xdg[0] == '/')
    w = snprintf(base, sizeof base, "%s", xdg);
  else if (home && home[0] == '/')
    w = snprintf(base, sizeof base, "%s/.cache", home);
  else
    return 0;
  if (w < 0 || (size_t)w >= sizeof base) return 0;
  w = snprintf(dir, n, "%s/tunehub", base);
  if (w < 0 || (size_t)w >= n) return 0;
  (void)mkdir(base, 0700);
  if (mkdir(dir, 0700) != 0 && errno != EEXIST) return 0;
  return private_dir(base) && private_dir(dir);
}

int tc_objcache_path(const char *prefix, const unsigned char digest[32], const char *suffix, char *path,
                     size_t n) {
  char dir[4200], hex[65];
  if (!tc_objcache_dir(dir, sizeof dir)) return 0;
  for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", digest[i]);
  int w = snprintf(path, n, "%s/%s%.32s%s", dir, prefix, hex, suffix);
  return w > 0 && (size_t)w < n;
}

int tc_objcache_hit(const char *path) {
  atomic_fetch_add(&lookups, 1);
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_size < 4) return 0;
  unsigned char magic[4] = {0};
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t r = read(fd, magic, sizeof magic);
  close(fd);
  if (r != 4 || memcmp(magic, "\x7f" "ELF", 4) != 0) return 0;
  (void)utimensat(AT_FDCWD, path, NULL, 0); /* now: the cap removes the least recently used first */
  atomic_fetch_add(&hits, 1);
  return 1;
}

/* Writes n bytes to path (created 0600, truncated); errno says why on TH_ERR_IO. Not synced: a cache. */
static th_status write_bytes(const char *path, const void *data, size_t n) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return TH_ERR_IO;
  int ok = th_write_full(fd, data, n, 0) == 0;
  int e = errno;
  if (close(fd) != 0 && ok) return TH_ERR_IO;
  errno = e;
  return ok ? TH_OK : TH_ERR_IO;
}

th_status tc_objcache_copy_out(const char *path, const char *dst) {
  char *data = NULL;
  size_t len = 0;
  th_status rc = th_read_file(path, (size_t)1 << 30, &data, &len);
  if (rc == TH_ERR_NOMEM) return rc;
  rc = rc != TH_OK || len == 0 ? TH_ERR_NOT_FOUND : write_bytes(dst, data, len);
  free(data);
  return rc;
}

size_t tc_objcache_cap(void) {
  const char *s = getenv("TUNEHUB_CACHE_MAX_MB");
  long mb = 1024;
  if (s && *s) {
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (end && !*end && v >= 1 && v <= 1048576) mb = v;
  }
  return (size_t)mb << 20;
}

typedef struct {
  char name[256];
  off_t size;
  struct timespec mtime;
} cache_file;

static int older_first(const void *a, const void *b) {
  const cache_file *x = a, *y = b;
  if (x->mtime.tv_sec != y->mtime.tv_sec) return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
  if (x->mtime.tv_nsec != y->mtime.tv_nsec) return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
  return strcmp(x->name, y->name);
}

int tc_objcache_prune(const char *path, const char *prefix, size_t cap) {
  char dir[4200];
  const char *slash = strrchr(path, '/');
  if (!slash || (size_t)(slash - path) >= sizeof dir) return 0;
  memcpy(dir, path, (size_t)(slash - path));
  dir[slash - path] = '\0';
  DIR *d = opendir(dir);
  if (!d) return 0;
  cache_file *files = NULL;
  size_t nf = 0, cap_f = 0, plen = strlen(prefix);
  unsigned long long total = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strncmp(e->d_name, prefix, plen) != 0 || strstr(e->d_name, ".tmp")) continue;
    struct stat st;
    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
    if (nf == cap_f) {
      size_t nc = cap_f ? 2 * cap_f : 256;
      cache_file *g = realloc(files, nc * sizeof *g);
      if (!g) break;
      files = g;
      cap_f = nc;
    }
    snprintf(files[nf].name, sizeof files[nf].name, "%s", e->d_name);
    files[nf].size = st.st_size;
    files[nf].mtime = st.st_mtim;
    total += (unsigned long long)st.st_size;
    nf++;
  }
  int removed = 0;
  if (total > cap && nf) {
    qsort(files, nf, sizeof *files, older_first);
    for (size_t i = 0; i < nf && total > cap; i++) {
      if (unlinkat(dirfd(d), files[i].name, 0) == 0) removed++;
      total -= (unsigned long long)files[i].size;
    }
  }
  closedir(d);
  free(files);
  return removed;
}

/* every 64th store of a process, and its first, looks at the folder's size */
static atomic_uint stores;

void tc_objcache_store(const char *path, const void *data, size_t n) {
  char tmp[4400];
  int w = snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
  if (w < 0 || (size_t)w >= sizeof tmp) return;
  if (write_bytes(tmp, data, n) != TH_OK || rename(tmp, path) != 0) {
    unlink(tmp);
    return;
  }
  if (atomic_fetch_add(&stores, 1) % 64 == 0) (void)tc_objcache_prune(path, "k-", tc_objcache_cap());
}
