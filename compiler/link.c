/* Linking model and candidate shared libraries, for every backend: runs the system C compiler ($CC, else
 * "cc") with -shared -O2 -fPIC through fork/exec (no shell, so odd paths are safe), capturing its stderr for
 * the error message. The embedded runtime (th_rt.c) is compiled once per process into an object that every
 * link reuses, and once per machine and user into $XDG_CACHE_HOME/tunehub (rt_cache_*) that later processes
 * take instead of compiling it again; its header is written next to each link for the extra sources. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "link.h"
#include "objcache.h"
#include "tc_runtime_embed.h"
#include "th_sha256.h"
#include "th_util.h"

/* errno says why on TH_ERR_IO (a full disk: ENOSPC) */
static th_status write_all(const char *path, const unsigned char *data, size_t n) {
  FILE *f = fopen(path, "wbe");
  if (!f) return TH_ERR_IO;
  size_t w = fwrite(data, 1, n, f);
  int werr = w == n ? 0 : errno;
  int rc = fclose(f);
  if (werr) errno = werr;
  return (w == n && rc == 0) ? TH_OK : TH_ERR_IO;
}

th_status tc_runtime_write_sources(const char *dir) {
  if (!dir) return TH_ERR_INVALID;
  char path[4096];
  int w = snprintf(path, sizeof path, "%s/th_rt.h", dir);
  if (w < 0 || (size_t)w >= sizeof path) return TH_ERR_TOO_LARGE;
  th_status rc = write_all(path, tc_rt_src_th_rt_h, sizeof tc_rt_src_th_rt_h - 1);
  snprintf(path, sizeof path, "%s/th_rt.c", dir);
  if (rc == TH_OK) rc = write_all(path, tc_rt_src_th_rt_c, sizeof tc_rt_src_th_rt_c - 1);
  return rc;
}

static void set_err(char *err, size_t errlen, const char *fmt, const char *a, const char *b) {
  if (err && errlen) snprintf(err, errlen, fmt, a ? a : "", b ? b : "");
}

/* The watcher's answer to its parent's death: the whole compiler group (cc, cc1, as, collect2, ld, and the
 * watcher itself) is killed, so a killed daemon leaves no linker running. Async-signal-safe. */
static void watch__parent_died(int sig) {
  (void)sig;
  kill(0, SIGKILL);
  th_child_exit(1);
}

/* In a freshly forked child: becomes the leader of a process group that only the compiler joins, and runs
 * argv in it. The parent's death (PR_SET_PDEATHSIG, caught) kills the group: a pdeathsig set on cc alone
 * would leave its own children (ld links vgg for seconds) running after a kill -9 of the daemon. Returns
 * argv's exit status, 127 when it could not be started. */
static int run_watched(char *const *argv, pid_t parent) {
  struct sigaction sa = {.sa_handler = watch__parent_died};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigset_t none; /* the forking thread may block SIGTERM (the daemon's threads leave it to the main one) */
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) return 1; /* it died before the prctl */
  setpgid(0, 0);
  signal(SIGINT, SIG_IGN); /* Ctrl-C is the caller's; its death reaches the group through the watcher */
  pid_t cc = fork();
  if (cc < 0) return 127;
  if (cc == 0) {
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    execvp(argv[0], argv);
    th_child_exit(127);
  }
  int status = 0;
  while (waitpid(cc, &status, 0) < 0)
    if (errno != EINTR) return 127;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Runs argv, capturing stderr+stdout (truncated) into out. Returns the exit status or -1. */
static int run_capture(char *const *argv, char *out, size_t outlen) {
  int fds[2];
  /* close-on-exec: a child that another thread forks meanwhile must not hold the pipe (its EOF would wait) */
  if (pipe2(fds, O_CLOEXEC) != 0) return -1;
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    dup2(fds[1], 1); /* dup2 clears close-on-exec on 1 and 2 */
    dup2(fds[1], 2);
    th_child_exit(run_watched(argv, parent));
  }
  close(fds[1]);
  size_t used = 0;
  char buf[1024];
  for (;;) {
    ssize_t r = read(fds[0], buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    if (out && used + 1 < outlen) {
      size_t take = (size_t)r;
      if (take > outlen - 1 - used) take = outlen - 1 - used;
      memcpy(out + used, buf, take);
      used += take;
    }
  }
  if (out && outlen) out[used] = '\0';
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* argv[0..] = $CC split on spaces ("ccache gcc"), at most 8 words, in buf; returns the count. */
static size_t cc_argv(char *buf, size_t bufn, char **argv) {
  const char *cc = getenv("CC");
  snprintf(buf, bufn, "%s", (cc && *cc) ? cc : "cc");
  size_t n = 0;
  for (char *save = NULL, *tok = strtok_r(buf, " ", &save); tok && n < 8; tok = strtok_r(NULL, " ", &save))
    argv[n++] = tok;
  return n;
}

/* ---- the runtime object shared between processes ----
 * Every CLI build is a process of its own, and compiling th_rt.c is a third of a small network's build (0.5 s
 * of 1.4 s), so the object is also kept in $XDG_CACHE_HOME/tunehub (else $HOME/.cache/tunehub) under the
 * sha256 of everything that made it: the runtime's sources, $CC, the flags and the machine. The folder is
 * used only when it is this user's own and no one else may write to it (nor its parent); otherwise, or with
 * TUNEHUB_NO_CACHE set, each process compiles its own as before. A damaged object fails the link that uses
 * it with the linker's own message; deleting the folder is always safe. */
static char *const rt_flags[] = {"-c", "-O2", "-fPIC", "-std=gnu11", "-o"};

/* The cache's file for the runtime compiled by cc (the $CC string) into path; 0 when there is no private
 * cache folder to use (objcache.h). */
static int rt_cache_path(const char *cc, char *path, size_t n) {
  th_sha256 h;
  th_sha256_init(&h);
  th_sha256_update(&h, tc_rt_src_th_rt_c, sizeof tc_rt_src_th_rt_c);
  th_sha256_update(&h, tc_rt_src_th_rt_h, sizeof tc_rt_src_th_rt_h);
  th_sha256_update(&h, cc, strlen(cc) + 1);
  for (size_t i = 0; i < sizeof rt_flags / sizeof rt_flags[0]; i++)
    th_sha256_update(&h, rt_flags[i], strlen(rt_flags[i]) + 1);
  struct utsname u;
  if (uname(&u) == 0) th_sha256_update(&h, u.machine, strlen(u.machine) + 1);
  unsigned char d[32];
  th_sha256_final(&h, d);
  return tc_objcache_path("th_rt-", d, ".o", path, n);
}

/* Copies the freshly compiled obj into the cache at path. */
static void rt_cache_store(const char *obj, const char *path) {
  char *data = NULL;
  size_t len = 0;
  if (th_read_file(obj, (size_t)64 << 20, &data, &len) != TH_OK) return;
  tc_objcache_store(path, data, len);
  free(data);
}

/* ---- the runtime object: th_rt.c compiled once per process ---- */
static pthread_mutex_t rt_mu = PTHREAD_MUTEX_INITIALIZER;
static char rt_dir[4096], rt_obj[4400];
static pid_t rt_owner;       /* the process that compiled it removes it at exit (not its forked children) */
static atomic_int rt_ready; /* rt_obj is set: read without the lock (a forked child never takes it) */

static void rt_cleanup(void) {
  if (rt_owner == getpid() && rt_dir[0]) (void)th_rm_rf(rt_dir);
}

th_status tc_runtime_object(const char **path, char *err, size_t errlen) {
  if (atomic_load(&rt_ready) && access(rt_obj, R_OK) == 0) {
    *path = rt_obj;
    return TH_OK;
  }
  pthread_mutex_lock(&rt_mu);
  th_status rc = TH_OK;
  char cached[4400], ccbuf[512];
  const char *cc = getenv("CC");
  int cache = rt_cache_path((cc && *cc) ? cc : "cc", cached, sizeof cached);
  if ((!atomic_load(&rt_ready) || access(rt_obj, R_OK) != 0) && cache && tc_objcache_hit(cached)) {
    if (rt_owner == getpid() && rt_dir[0]) (void)th_rm_rf(rt_dir); /* a private one of before, gone */
    rt_dir[0] = '\0'; /* nothing of ours to remove at exit */
    snprintf(rt_obj, sizeof rt_obj, "%s", cached);
    atomic_store(&rt_ready, 1);
  }
  if (!atomic_load(&rt_ready) || access(rt_obj, R_OK) != 0) { /* first use, or the file went away */
    char dir[4096], src[4200], obj[4200], inc[4200];
    int made = th_mkdtemp("tunehub-rt", dir, sizeof dir) == TH_OK;
    if (!made) {
      set_err(err, errlen, "cannot create a temporary folder for the runtime: %s%s", strerror(errno), NULL);
      rc = TH_ERR_IO;
    }
    if (rc == TH_OK) {
      rc = tc_runtime_write_sources(dir);
      if (rc != TH_OK)
        set_err(err, errlen, "cannot write the runtime's sources into %s: %s", dir,
                strerror(errno));
    }
    snprintf(src, sizeof src, "%s/th_rt.c", dir);
    snprintf(obj, sizeof obj, "%s/th_rt.o", dir);
    snprintf(inc, sizeof inc, "-I%s", dir);
    if (rc == TH_OK) {
      char *argv[24];
      size_t n = cc_argv(ccbuf, sizeof ccbuf, argv);
      for (size_t i = 0; i < sizeof rt_flags / sizeof rt_flags[0]; i++) argv[n++] = rt_flags[i];
      argv[n++] = obj;
      argv[n++] = inc;
      argv[n++] = src;
      argv[n] = NULL;
      char out[2048];
      int st = run_capture(argv, out, sizeof out);
      if (st != 0) {
        set_err(err, errlen, "compiling the runtime failed: %s%s", st == 127 ? "C compiler not found: " : "", out);
        rc = TH_ERR_COMPILE;
      }
    }
    if (rc == TH_OK) {
      unlink(src);
      if (cache) rt_cache_store(obj, cached);
      if (rt_owner == getpid() && rt_dir[0]) (void)th_rm_rf(rt_dir); /* the previous one, if any */
      if (!rt_owner) atexit(rt_cleanup);
      snprintf(rt_dir, sizeof rt_dir, "%s", dir);
      snprintf(rt_obj, sizeof rt_obj, "%s", obj);
      rt_owner = getpid();
      atomic_store(&rt_ready, 1);
    } else if (made) {
      (void)th_rm_rf(dir);
    }
  }
  if (rc == TH_OK) *path = rt_obj;
  pthread_mutex_unlock(&rt_mu);
  return rc;
}

th_status tc_runtime_object_adopt(const char *path) {
  if (!path || !path[0] || strlen(path) >= sizeof rt_obj || access(path, R_OK) != 0) return TH_ERR_NOT_FOUND;
  pthread_mutex_lock(&rt_mu);
  if (rt_owner == getpid() && rt_dir[0]) (void)th_rm_rf(rt_dir); /* one of our own, made before */
  rt_dir[0] = '\0';                                                /* nothing of ours to remove at exit */
  snprintf(rt_obj, sizeof rt_obj, "%s", path);
  atomic_store(&rt_ready, 1);
  pthread_mutex_unlock(&rt_mu);
  return TH_OK;
}

th_status tc_link_so(int nobjs, const char *const *objs, int nsrcs, const char *const *srcs,
                     const char *so_path, char *err, size_t errlen) {
  if (!so_path || nobjs < 0 || nsrcs < 0 || nobjs + nsrcs > 4000) return TH_ERR_INVALID;
  char tmp[4096];
  int w = snprintf(tmp, sizeof tmp, "%s.rt.XXXXXX", so_path);
  if (w < 0 || (size_t)w >= sizeof tmp) return TH_ERR_TOO_LARGE;
  if (!mkdtemp(tmp)) {
    set_err(err, errlen, "cannot create a temporary folder next to %s%s", so_path, NULL);
    return TH_ERR_IO;
  }
  const char *rt_o = NULL;
  th_status rc = tc_runtime_object(&rt_o, err, errlen);
  if (rc == TH_OK) { /* th_rt.h for the extra sources */
    rc = tc_runtime_write_sources(tmp);
    if (rc != TH_OK)
      set_err(err, errlen, "cannot write the runtime's sources into %s: %s", tmp, strerror(errno));
  }
  char inc[4200];
  snprintf(inc, sizeof inc, "-I%s", tmp);
  char ccbuf[512];
  size_t cap = (size_t)nobjs + (size_t)nsrcs + 32;
  char **argv = calloc(cap, sizeof *argv);
  if (!argv && rc == TH_OK) rc = TH_ERR_NOMEM;
  if (rc == TH_OK) {
    size_t n = cc_argv(ccbuf, sizeof ccbuf, argv);
    static char *const flags[] = {"-shared", "-O2", "-fPIC", "-std=gnu11", "-o"};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) argv[n++] = flags[i];
    argv[n++] = (char *)so_path;
    argv[n++] = inc;
    for (int i = 0; i < nobjs; i++) argv[n++] = (char *)objs[i];
    for (int i = 0; i < nsrcs; i++) argv[n++] = (char *)srcs[i];
    argv[n++] = (char *)rt_o;
    argv[n++] = "-lpthread";
    argv[n++] = "-lm";
    argv[n] = NULL;
    char out[2048];
    int st = run_capture(argv, out, sizeof out);
    if (st != 0) {
      set_err(err, errlen, "linking failed: %s%s", st == 127 ? "C compiler not found: " : "", out);
      rc = TH_ERR_COMPILE;
    }
  }
  free(argv);
  (void)th_rm_rf(tmp);
  return rc;
}
