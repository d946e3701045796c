/* Unit tests of the object cache (compiler/include/tc/objcache.h) in a folder of their own ($XDG_CACHE_HOME set to a
 * fresh temporary folder): the folder is made 0700 and refused when others may write to it or when
 * TUNEHUB_NO_CACHE is set; a stored object is found, copied out whole and counted; a file that is not an
 * object is no hit; the cap removes the least recently used kernel objects and nothing else. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "objcache.h"
#include "th_test.h"
#include "th_util.h"

static char base[4096];

/* A fresh $XDG_CACHE_HOME for this test. */
static void fresh_home(void) {
  CHECK(th_mkdtemp("objcache-test", base, sizeof base) == TH_OK);
  setenv("XDG_CACHE_HOME", base, 1);
  unsetenv("TUNEHUB_NO_CACHE");
  unsetenv("TUNEHUB_CACHE_DIR");
}

/* n bytes that start as an ELF object does, then byte seed repeated. */
static void object_bytes(unsigned char *b, size_t n, unsigned char seed) {
  memset(b, seed, n);
  memcpy(b, "\x7f" "ELF", 4);
}

static void digest_of(int i, unsigned char d[32]) {
  memset(d, 0, 32);
  d[0] = (unsigned char)i;
}

TH_TEST(folder_private_or_refused) {
  fresh_home();
  char dir[4200], want[4200];
  CHECK(tc_objcache_dir(dir, sizeof dir));
  snprintf(want, sizeof want, "%s/tunehub", base);
  CHECK_STR(dir, want);
  struct stat st;
  CHECK(stat(dir, &st) == 0);
  CHECK_EQ_INT((int)(st.st_mode & 0777), 0700);
  setenv("TUNEHUB_NO_CACHE", "1", 1);
  CHECK(!tc_objcache_dir(dir, sizeof dir));
  unsigned char d[32];
  digest_of(1, d);
  char path[4400];
  CHECK(!tc_objcache_path("k-", d, ".o", path, sizeof path));
  unsetenv("TUNEHUB_NO_CACHE");
  CHECK(chmod(want, 0777) == 0);
  CHECK(!tc_objcache_dir(dir, sizeof dir));
  CHECK(chmod(want, 0700) == 0);
  CHECK(chmod(base, 0777) == 0); /* the parent too: another user could swap the folder */
  CHECK(!tc_objcache_dir(dir, sizeof dir));
  CHECK(chmod(base, 0700) == 0);
  CHECK(tc_objcache_dir(dir, sizeof dir));
  /* TUNEHUB_CACHE_DIR names the folder itself, under the same rule */
  snprintf(want, sizeof want, "%s/own", base);
  setenv("TUNEHUB_CACHE_DIR", want, 1);
  CHECK(tc_objcache_dir(dir, sizeof dir));
  CHECK_STR(dir, want);
  CHECK(chmod(want, 0770) == 0);
  CHECK(!tc_objcache_dir(dir, sizeof dir));
  unsetenv("TUNEHUB_CACHE_DIR");
  th_rm_rf(base);
  return 0;
}

TH_TEST(store_hit_copy_out) {
  fresh_home();
  unsigned char d[32], obj[3000];
  digest_of(7, d);
  char path[4400], out[4400];
  CHECK(tc_objcache_path("k-", d, ".o", path, sizeof path));
  CHECK(strstr(path, "/tunehub/k-07000000") != NULL);
  unsigned h0, l0, h1, l1;
  tc_objcache_counts(&h0, &l0);
  CHECK(!tc_objcache_hit(path)); /* not stored yet */
  object_bytes(obj, sizeof obj, 0x5a);
  tc_objcache_store(path, obj, sizeof obj);
  CHECK(tc_objcache_hit(path));
  tc_objcache_counts(&h1, &l1);
  CHECK_EQ_INT((int)(l1 - l0), 2);
  CHECK_EQ_INT((int)(h1 - h0), 1);
  snprintf(out, sizeof out, "%s/out.o", base);
  CHECK(tc_objcache_copy_out(path, out) == TH_OK);
  char *data = NULL;
  size_t len = 0;
  CHECK(th_read_file(out, 1 << 20, &data, &len) == TH_OK);
  CHECK_EQ_INT((int)len, (int)sizeof obj);
  CHECK(memcmp(data, obj, sizeof obj) == 0);
  free(data);
  /* an unwritable destination is the destination's error, a missing object the cache's */
  CHECK(tc_objcache_copy_out(path, "/nonexistent-dir/x.o") == TH_ERR_IO);
  snprintf(out, sizeof out, "%s/tunehub/k-missing.o", base);
  CHECK(tc_objcache_copy_out(out, path) == TH_ERR_NOT_FOUND);
  /* a file that is not an object (damaged, or someone else's text) is no hit */
  memcpy(obj, "JUNK", 4);
  CHECK(th_write_file_atomic(path, obj, sizeof obj) == TH_OK);
  CHECK(!tc_objcache_hit(path));
  th_rm_rf(base);
  return 0;
}

TH_TEST(cap_removes_least_recently_used) {
  fresh_home();
  unsigned char d[32], obj[100];
  char paths[5][4400], rt[4400];
  object_bytes(obj, sizeof obj, 1);
  for (int i = 0; i < 5; i++) {
    digest_of(i + 1, d);
    CHECK(tc_objcache_path("k-", d, ".o", paths[i], sizeof paths[i]));
    tc_objcache_store(paths[i], obj, sizeof obj);
    struct timespec ts[2] = {{1000000 + i * 10, 0}, {1000000 + i * 10, 0}};
    CHECK(utimensat(AT_FDCWD, paths[i], ts, 0) == 0);
  }
  digest_of(9, d);
  CHECK(tc_objcache_path("th_rt-", d, ".o", rt, sizeof rt));
  tc_objcache_store(rt, obj, sizeof obj);
  struct timespec old[2] = {{1, 0}, {1, 0}};
  CHECK(utimensat(AT_FDCWD, rt, old, 0) == 0); /* older than all, but not a kernel object */
  /* a hit makes the oldest the newest */
  CHECK(tc_objcache_hit(paths[0]));
  CHECK_EQ_INT(tc_objcache_prune(paths[0], "k-", 1000), 0); /* under the cap: nothing goes */
  CHECK_EQ_INT(tc_objcache_prune(paths[0], "k-", 250), 3);
  CHECK(access(paths[0], F_OK) == 0);
  CHECK(access(paths[1], F_OK) != 0);
  CHECK(access(paths[2], F_OK) != 0);
  CHECK(access(paths[3], F_OK) != 0);
  CHECK(access(paths[4], F_OK) == 0);
  CHECK(access(rt, F_OK) == 0);
  /* the cap from the environment, and its default when unset or out of range */
  setenv("TUNEHUB_CACHE_MAX_MB", "3", 1);
  CHECK(tc_objcache_cap() == (size_t)3 << 20);
  setenv("TUNEHUB_CACHE_MAX_MB", "0", 1);
  CHECK(tc_objcache_cap() == (size_t)1024 << 20);
  setenv("TUNEHUB_CACHE_MAX_MB", "12x", 1);
  CHECK(tc_objcache_cap() == (size_t)1024 << 20);
  unsetenv("TUNEHUB_CACHE_MAX_MB");
  CHECK(tc_objcache_cap() == (size_t)1024 << 20);
  th_rm_rf(base);
  return 0;
}
