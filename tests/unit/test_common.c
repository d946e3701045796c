/* Unit tests of common/: th_mkdtemp (under $TMPDIR, unique, 0700, too long, failing), th_rm_rf (nested
 * trees, a missing path, a symbolic link to a directory that must be unlinked and not followed), SHA-256
 * against the FIPS 180-2 vectors, th_buf's hard cap, th_child_exit's status from a fork of a threaded process
 * (run under TSan by scripts/sanitize.sh, where _exit turned it into 66), and th_read_full on a socket whose
 * peer is gone. Each case works in its own temporary directory. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "th_buf.h"
#include "th_sha256.h"
#include "th_test.h"
#include "th_util.h"

static char *tmpdir(void) {
  char *d = strdup("/tmp/th_common_XXXXXX");
  CHECK(d != NULL && mkdtemp(d) != NULL);
  return d;
}

static void touch(const char *dir, const char *name) {
  char p[1024];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  FILE *f = fopen(p, "w");
  CHECK(f != NULL);
  fputs("x", f);
  CHECK(fclose(f) == 0);
}

static int exists(const char *path) {
  struct stat sb;
  return lstat(path, &sb) == 0;
}

TH_TEST(mkdtemp_under_tmpdir) {
  char *base = tmpdir(), out[4096];
  CHECK(setenv("TMPDIR", base, 1) == 0);
  CHECK(th_mkdtemp("tunehub-x", out, sizeof out) == TH_OK);
  size_t bl = strlen(base);
  CHECK(strncmp(out, base, bl) == 0 && strncmp(out + bl, "/tunehub-x-", 11) == 0);
  CHECK(strlen(out) == bl + 11 + 6 && strstr(out, "XXXXXX") == NULL);
  struct stat sb;
  CHECK(stat(out, &sb) == 0 && S_ISDIR(sb.st_mode) && (sb.st_mode & 0777) == 0700);
  char again[4096];
  CHECK(th_mkdtemp("tunehub-x", again, sizeof again) == TH_OK && strcmp(again, out) != 0);
  char small[8] = "keep";
  CHECK(th_mkdtemp("tunehub-x", small, sizeof small) == TH_ERR_TOO_LARGE && strcmp(small, "keep") == 0);
  CHECK(th_mkdtemp("", out, sizeof out) == TH_ERR_INVALID);
  CHECK(setenv("TMPDIR", "/nonexistent-th-dir", 1) == 0);
  CHECK(th_mkdtemp("tunehub-x", small, sizeof small) == TH_ERR_TOO_LARGE);
  char none[4096] = "";
  CHECK(th_mkdtemp("tunehub-x", none, sizeof none) == TH_ERR_IO && none[0] == '\0');
  CHECK(setenv("TMPDIR", "", 1) == 0);
  CHECK(th_mkdtemp("tunehub-x", out, sizeof out) == TH_OK && strncmp(out, "/tmp/tunehub-x-", 15) == 0);
  CHECK(th_rm_rf(out) == TH_OK && th_rm_rf(base) == TH_OK);
  free(base);
  return 0;
}

TH_TEST(rm_rf_nested) {
  char *d = tmpdir(), p[1024];
  snprintf(p, sizeof p, "%s/a/b/c", d);
  CHECK(th_mkdir_p(p) == TH_OK);
  touch(d, "top.txt");
  touch(d, "a/one");
  touch(d, "a/b/two");
  touch(d, "a/b/c/three");
  snprintf(p, sizeof p, "%s/a/b/empty", d);
  CHECK(th_mkdir_p(p) == TH_OK);
  CHECK(th_rm_rf(d) == TH_OK);
  CHECK(!exists(d));
  free(d);
  return 0;
}

TH_TEST(rm_rf_missing_path) {
  char *d = tmpdir(), p[1024];
  snprintf(p, sizeof p, "%s/never/was", d);
  CHECK(th_rm_rf(p) == TH_OK);
  CHECK(th_rm_rf(d) == TH_OK);
  CHECK(th_rm_rf(d) == TH_OK); /* twice: already gone */
  CHECK(th_rm_rf("") == TH_ERR_INVALID);
  CHECK(th_rm_rf(NULL) == TH_ERR_INVALID);
  free(d);
  return 0;
}

TH_TEST(rm_rf_plain_file) {
  char *d = tmpdir(), p[1024];
  touch(d, "f");
  snprintf(p, sizeof p, "%s/f", d);
  CHECK(th_rm_rf(p) == TH_OK);
  CHECK(!exists(p));
  CHECK(exists(d));
  CHECK(th_rm_rf(d) == TH_OK);
  free(d);
  return 0;
}

TH_TEST(rm_rf_symlink_not_followed) {
  char *keep = tmpdir(), *d = tmpdir(), p[1024], kept[1024];
  touch(keep, "precious");
  snprintf(kept, sizeof kept, "%s/precious", keep);
  snprintf(p, sizeof p, "%s/link", d);
  CHECK(symlink(keep, p) == 0);
  CHECK(th_rm_rf(d) == TH_OK);
  CHECK(!exists(d));
  CHECK(exists(kept)); /* the link went, not what it pointed at */
  /* a link named directly is unlinked too */
  char *d2 = tmpdir();
  snprintf(p, sizeof p, "%s/link", d2);
  CHECK(symlink(keep, p) == 0);
  CHECK(th_rm_rf(p) == TH_OK);
  CHECK(!exists(p));
  CHECK(exists(kept));
  CHECK(th_rm_rf(d2) == TH_OK);
  CHECK(th_rm_rf(keep) == TH_OK);
  free(keep);
  free(d);
  free(d2);
  return 0;
}

static void sha_hex(const char *msg, size_t n, char hex[65]) {
  th_sha256 s;
  unsigned char out[32];
  th_sha256_init(&s);
  th_sha256_update(&s, msg, n);
  th_sha256_final(&s, out);
  th_hex(out, 32, hex);
}

TH_TEST(sha256_known_vectors) {
  char hex[65];
  sha_hex("", 0, hex);
  CHECK_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  sha_hex("abc", 3, hex);
  CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"; /* 448 bits: two blocks */
  sha_hex(two, strlen(two), hex);
  CHECK_STR(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  /* one million 'a', fed in uneven pieces */
  char *a = malloc(1000000);
  CHECK(a != NULL);
  memset(a, 'a', 1000000);
  th_sha256 s;
  unsigned char out[32];
  th_sha256_init(&s);
  size_t off = 0, step = 1;
  while (off < 1000000) {
    size_t k = step < 1000000 - off ? step : 1000000 - off;
    th_sha256_update(&s, a + off, k);
    off += k;
    step = step * 3 + 1;
  }
  th_sha256_final(&s, out);
  th_hex(out, 32, hex);
  CHECK_STR(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  free(a);
  return 0;
}

TH_TEST(buf_cap) {
  th_buf b;
  th_buf_init(&b, 8);
  CHECK(th_buf_append(&b, "12345", 5) == TH_OK);
  CHECK(th_buf_append(&b, "678", 3) == TH_OK);
  CHECK_EQ_INT(b.len, 8);
  CHECK(th_buf_append(&b, "9", 1) == TH_ERR_TOO_LARGE);
  CHECK(th_buf_appendf(&b, "%d", 1) == TH_ERR_TOO_LARGE);
  CHECK_EQ_INT(b.len, 8); /* a refused append leaves the contents as they were */
  CHECK(memcmp(b.data, "12345678", 8) == 0);
  th_buf_free(&b);
  th_buf_init(&b, 1 << 20);
  CHECK(th_buf_appendf(&b, "%s-%d", "x", 42) == TH_OK);
  CHECK_STR(b.data, "x-42");
  th_buf_free(&b);
  th_buf_free(NULL);
  return 0;
}

static void *quick_thread(void *arg) {
  return arg;
}

/* The tuner's build child and the linker's watcher are forks that exit with a status their parent reads. In
 * a fork of a process with a finished, not yet joined thread, ThreadSanitizer's _exit reports that thread
 * as leaked and exits 66 instead; th_child_exit keeps the status, in a child and in its own fork. */
TH_TEST(child_exit_keeps_status_in_fork_of_threaded_process) {
  pthread_t t;
  CHECK(pthread_create(&t, NULL, quick_thread, NULL) == 0);
  usleep(50 * 1000); /* it has finished; it is joined only after the fork */
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    pid_t g = fork();
    if (g < 0) th_child_exit(90);
    if (g == 0) th_child_exit(7);
    int st = 0;
    if (waitpid(g, &st, 0) != g || !WIFEXITED(st)) th_child_exit(91);
    th_child_exit(WEXITSTATUS(st) == 7 ? 3 : 92);
  }
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK(pthread_join(t, NULL) == 0);
  CHECK(WIFEXITED(status));
  CHECK_EQ_INT(WEXITSTATUS(status), 3);
  return 0;
}

/* A worker that dies before it reads what it was sent resets the socket: the reader gets ECONNRESET, not EOF.
 * th_read_full says 1 (gone) for both, so a measurement worker killed under its task counts as died. */
TH_TEST(read_full_peer_gone_with_data_unread) {
  int sv[2];
  CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  char buf[16] = "task";
  CHECK(th_write_full(sv[0], buf, sizeof buf, 1) == 0);
  close(sv[1]); /* the task is still unread there */
  CHECK_EQ_INT(th_read_full(sv[0], buf, sizeof buf, th_now_mono() + 5), 1);
  close(sv[0]);
  CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0); /* and a plain EOF */
  close(sv[1]);
  CHECK_EQ_INT(th_read_full(sv[0], buf, sizeof buf, th_now_mono() + 5), 1);
  close(sv[0]);
  return 0;
}
