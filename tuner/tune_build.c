/* Candidate builds of a task (tune_task_build, declared in tune_task.h): a batch split over threads, each
 * library or device image compiled in a child process with a deadline, so that a compiler that hangs or
 * crashes costs a child, never a scheduler thread. The children are plain forks or, with
 * tune_build_worker_argv, exec'd build workers kept in a pool and spoken to over a socket. */
#include "tune_task.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tc/link.h"
#include "th_alloc.h"
#include "th_limits.h"
#include "th_util.h"

typedef struct tune_build_job {
  const tune_task *t;
  const tc_config *cfgs;
  int *which; /* candidate indices in this library */
  int n;
  char so[TUNE_PATH_MAX];
  char (*fn_names)[TUNE_FN_MAX];
  char (*so_paths)[TUNE_PATH_MAX];
  int *err_class;
  char (*msgs)[160];
  double timeout_s;
} tune_build_job;

static th_status tune__build_lib(const tune_task *t, const tc_config *cfgs, const int *which, int n,
                                 char (*fn_names)[TUNE_FN_MAX], const char *so, char *err, size_t errlen) {
  tc_workload *wls = th_malloc(sizeof *wls * (size_t)n);
  tc_config *cs = th_malloc(sizeof *cs * (size_t)n);
  const char **names = th_malloc(sizeof *names * (size_t)n);
  th_status rc = TH_ERR_NOMEM;
  if (wls && cs && names) {
    for (int i = 0; i < n; i++) {
      wls[i] = t->wl;
      cs[i] = cfgs[which[i]];
      names[i] = fn_names[which[i]];
    }
    rc = tc_backend_compile(&t->target, n, wls, cs, names, so, err, errlen);
  }
  free(wls);
  free(cs);
  free(names);
  return rc;
}

void (*tune_build_fault_hook)(const tc_config *cfg);

/* The library of j's i-th candidate when candidates are built one each: "<so stem>.<i>.so". */
static void tune__single_so(const tune_build_job *j, int i, char *out, size_t n) {
  int stem = (int)strlen(j->so) - 3; /* without ".so" */
  snprintf(out, n, "%.*s.%d.so", stem < 480 ? stem : 480, j->so, i);
}

/* One candidate of a task timed on a device (TC_MEASURE_DEVICE): validity, codegen and one device
 * compile of cfg into the image file img_path, through tc_backend_compile, named in so_path
 * (TUNE_PATH_MAX bytes) when written; otherwise *err_class and msg (160 bytes) say why: 1 for a
 * config over the device's limits, 3 for a device compiler error, 2 for a codegen error. An image
 * that could not be written (TH_ERR_IO) leaves so_path and *err_class alone: the worker then
 * compiles the candidate itself. It runs in the build child, so a hung or crashing device compiler
 * costs that child only, and the measure stage does no compiler work. */
static void tune__build_image(const tune_task *t, const tc_config *cfg, const char *img_path,
                              char *so_path, int *err_class, char *msg) {
  char err[TH_MSG_MAX] = "";
  const char *fn = "th_candidate";
  th_status rc = tc_backend_compile(&t->target, 1, &t->wl, cfg, &fn, img_path, err, sizeof err);
  if (rc == TH_OK) {
    snprintf(so_path, TUNE_PATH_MAX, "%s", img_path);
  } else if (rc == TH_ERR_INVALID) {
    *err_class = TC_ERROR_CLASS_INSTANTIATION;
    snprintf(msg, 160, "invalid config: %.140s", err[0] ? err : "device limits");
  } else if (rc == TH_ERR_COMPILE) {
    *err_class = TC_ERROR_CLASS_COMPILE_DEVICE;
    snprintf(msg, 160, "device compile: %.135s", err[0] ? err : th_status_str(rc));
  } else if (rc != TH_ERR_IO) {
    *err_class = TC_ERROR_CLASS_COMPILE_HOST;
    snprintf(msg, 160, "codegen: %.140s", err[0] ? err : th_status_str(rc));
  }
}

/* Builds j's candidates here: one library, or one each when it fails. A device task's get one image
 * each: "<so stem>.image" for a job of one (as tune__build_thread makes them), else
 * "<so stem>.<i>.image". */
static void tune__build_local(tune_build_job *j) {
  char err[160] = "";
  if (tune_build_fault_hook)
    for (int i = 0; i < j->n; i++) tune_build_fault_hook(&j->cfgs[j->which[i]]);
  if (j->t->on_device) {
    for (int i = 0; i < j->n; i++) {
      int k = j->which[i], stem = (int)strlen(j->so) - 3;
      char img[TUNE_PATH_MAX];
      if (j->n == 1)
        snprintf(img, sizeof img, "%.*s.image", stem < 480 ? stem : 480, j->so);
      else
        snprintf(img, sizeof img, "%.*s.%d.image", stem < 480 ? stem : 480, j->so, i);
      tune__build_image(j->t, &j->cfgs[k], img, j->so_paths[k], &j->err_class[k], j->msgs[k]);
    }
    return;
  }
  th_status rc = tune__build_lib(j->t, j->cfgs, j->which, j->n, j->fn_names, j->so, err, sizeof err);
  if (rc == TH_OK) {
    for (int i = 0; i < j->n; i++) snprintf(j->so_paths[j->which[i]], TUNE_PATH_MAX, "%s", j->so);
    return;
  }
  /* Find the bad candidates: one library each. */
  for (int i = 0; i < j->n; i++) {
    int k = j->which[i];
    char so1[TUNE_PATH_MAX];
    tune__single_so(j, i, so1, sizeof so1);
    if (j->n > 1) rc = tune__build_lib(j->t, j->cfgs, &k, 1, j->fn_names, so1, err, sizeof err);
    if (rc == TH_OK) {
      memcpy(j->so_paths[k], so1, sizeof so1);
    } else {
      j->err_class[k] = TC_ERROR_CLASS_COMPILE_HOST;
      snprintf(j->msgs[k], 160, "%s", err[0] ? err : th_status_str(rc));
    }
  }
}

/* One candidate's outcome, as the build child reports it. */
typedef struct tune_build_rep {
  int err_class;
  char so[TUNE_PATH_MAX];
  char msg[160];
} tune_build_rep;

char *const *tune_build_worker_argv;

/* The request an exec'd build worker reads on fd 0: this header, then n tc_config, then n function names
 * (TUNE_FN_MAX each). The worker is this same executable, so the structs' layout is shared; the backend is sent
 * by name, as its address differs in the new image. */
#define TUNE_BUILD_MAGIC 0x54484257u /* "THBW" */
#define TUNE_BUILD_IDLE_S 120.0      /* a build worker with no request for this long exits */
typedef struct tune_build_hdr {
  uint32_t magic;
  int32_t n;
  char backend[16];
  tc_backend_target target;
  tc_workload wl;
  char so[TUNE_PATH_MAX];
  char rt_obj[TUNE_PATH_MAX]; /* the parent's runtime object, adopted rather than compiled again */
} tune_build_hdr;

/* Sends j to the exec'd worker on fd. 0, or -1 when the worker went away. */
static int tune__send_build(int fd, const tune_build_job *j) {
  tune_build_hdr *h = th_calloc(1, sizeof *h);
  tc_config *cs = th_malloc(sizeof *cs * (size_t)j->n);
  char(*names)[TUNE_FN_MAX] = th_malloc(sizeof *names * (size_t)j->n);
  int r = -1;
  const char *rt = NULL;
  char rt_err[160];
  if (h && cs && names) {
    h->magic = TUNE_BUILD_MAGIC;
    h->n = j->n;
    snprintf(h->backend, sizeof h->backend, "%s", tc_backend_name(j->t->target.backend));
    h->target = j->t->target;
    h->target.backend = NULL;
    h->wl = j->t->wl;
    snprintf(h->so, sizeof h->so, "%s", j->so);
    if (!j->t->on_device && tc_runtime_object(&rt, rt_err, sizeof rt_err) == TH_OK)
      snprintf(h->rt_obj, sizeof h->rt_obj, "%s", rt);
    for (int i = 0; i < j->n; i++) {
      cs[i] = j->cfgs[j->which[i]];
      memcpy(names[i], j->fn_names[j->which[i]], TUNE_FN_MAX);
    }
    r = th_write_full(fd, h, sizeof *h, 1) == 0 && th_write_full(fd, cs, sizeof *cs * (size_t)j->n, 1) == 0 &&
                th_write_full(fd, names, sizeof *names * (size_t)j->n, 1) == 0
            ? 0
            : -1;
  }
  free(h);
  free(cs);
  free(names);
  return r;
}

/* One request on fd: 0 served, 1 the parent closed the socket or stayed silent for TUNE_BUILD_IDLE_S (the
 * worker's end), -1 a malformed request or a failed reply. */
static int tune__serve_build(int fd) {
  tune_build_hdr *h = th_calloc(1, sizeof *h);
  if (!h) return -1;
  int r = th_read_full(fd, h, sizeof *h, th_now_mono() + TUNE_BUILD_IDLE_S);
  if (r != 0 || h->magic != TUNE_BUILD_MAGIC || h->n < 1 || h->n > 65536) {
    if (r == 0) fprintf(stderr, "tunehub build-worker: a malformed build request on fd %d\n", fd);
    free(h);
    return r == 1 || r == 2 ? 1 : -1;
  }
  double deadline = th_now_mono() + 60;
  h->backend[sizeof h->backend - 1] = '\0';
  h->so[sizeof h->so - 1] = '\0';
  h->rt_obj[sizeof h->rt_obj - 1] = '\0';
  tune_task *t = th_calloc(1, sizeof *t);
  int n = h->n;
  tc_config *cfgs = th_malloc(sizeof *cfgs * (size_t)n);
  char(*names)[TUNE_FN_MAX] = th_malloc(sizeof *names * (size_t)n);
  char(*so_paths)[TUNE_PATH_MAX] = th_calloc((size_t)n, sizeof *so_paths);
  char(*msgs)[160] = th_calloc((size_t)n, sizeof *msgs);
  int *which = th_malloc(sizeof *which * (size_t)n), *err_class = th_calloc((size_t)n, sizeof *err_class);
  char err[160];
  const tc_backend *b = tc_backend_find(h->backend, err, sizeof err);
  if (!b) fprintf(stderr, "tunehub build-worker: %s\n", err);
  int rc = -1;
  if (b && t && cfgs && names && so_paths && msgs && which && err_class &&
      th_read_full(fd, cfgs, sizeof *cfgs * (size_t)n, deadline) == 0 &&
      th_read_full(fd, names, sizeof *names * (size_t)n, deadline) == 0) {
    t->wl = h->wl;
    t->target = h->target;
    t->target.backend = b;
    t->on_device = tc_backend_measure_kind(b) == TC_MEASURE_DEVICE;
    if (h->rt_obj[0]) (void)tc_runtime_object_adopt(h->rt_obj);
    for (int i = 0; i < n; i++) {
      which[i] = i;
      names[i][TUNE_FN_MAX - 1] = '\0';
    }
    tune_build_job j = {.t = t, .cfgs = cfgs, .which = which, .n = n, .fn_names = names, .so_paths = so_paths,
                        .err_class = err_class, .msgs = msgs};
    snprintf(j.so, sizeof j.so, "%s", h->so);
    tune__build_local(&j);
    rc = 0;
    for (int i = 0; rc == 0 && i < n; i++) {
      tune_build_rep rep = {.err_class = err_class[i]};
      snprintf(rep.so, sizeof rep.so, "%s", so_paths[i]);
      snprintf(rep.msg, sizeof rep.msg, "%s", msgs[i]);
      if (th_write_full(fd, &rep, sizeof rep, 1) != 0) rc = -1;
    }
  }
  free(h);
  free(t);
  free(cfgs);
  free(names);
  free(so_paths);
  free(msgs);
  free(which);
  free(err_class);
  return rc;
}

int tune_build_worker_main(int fd) {
  int r;
  while ((r = tune__serve_build(fd)) == 0) {
  }
  return r < 0;
}

/* What a build child's end means for j: r == 0, every outcome came back (reps, copied into j's arrays); else
 * why says what happened, from r (2: killed at the deadline) and the child's wait status. */
static void tune__build_outcome(tune_build_job *j, const tune_build_rep *reps, int r, int status, double timeout_s,
                                char *why, size_t n) {
  if (r == 0) {
    for (int i = 0; i < j->n; i++) {
      int k = j->which[i];
      j->err_class[k] = reps[i].err_class;
      memcpy(j->so_paths[k], reps[i].so, TUNE_PATH_MAX);
      memcpy(j->msgs[k], reps[i].msg, 160);
    }
  } else if (r == 2) {
    snprintf(why, n, "build timed out after %.0f s", timeout_s);
  } else if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL) { /* SIGKILL: ours, after it went quiet */
    snprintf(why, n, "the compiler crashed (signal %d, %s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
  } else if (WIFEXITED(status) && WEXITSTATUS(status) >= 126 && tune_build_worker_argv) {
    snprintf(why, n, "cannot run the build worker %.100s (exit %d)", tune_build_worker_argv[0],
             WEXITSTATUS(status));
  } else {
    snprintf(why, n, "the build process failed (%s %d)", WIFEXITED(status) ? "exit" : "signal",
             WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
  }
}

/* ---- the pool of build workers ----
 * Exec'ing tunehub costs about 40 ms (libLLVM's relocations and constructors), a tenth of a small task's
 * tuning, so a worker serves request after request and is replaced only when it dies, hangs past a deadline,
 * or idles out. Workers are forked by one long-lived thread: PR_SET_PDEATHSIG fires when the forking *thread*
 * ends, and the build threads end after every batch. */
#define TUNE_BW_MAX 64
typedef struct tune__bw {
  pid_t pid; /* 0: an empty slot */
  int fd;
  int busy;
} tune__bw;
static pthread_mutex_t bw_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t bw_cv = PTHREAD_COND_INITIALIZER;
static tune__bw bw_pool[TUNE_BW_MAX];
static int bw_spawner_up, bw_req, bw_done; /* the spawner's state, under bw_mu */
static pid_t bw_new_pid;
static int bw_new_fd, bw_new_errno;

/* fork + exec of argv with a socket on fd 0; the caller's end in *fd. Runs on the spawner thread. */
static pid_t tune__bw_fork(int *fd) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return -1;
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    /* only async-signal-safe calls between the fork and the exec */
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* kept across the exec */
    if (getppid() != parent) th_child_exit(1);
    signal(SIGINT, SIG_IGN); /* Ctrl-C is the tuner's; it kills its workers itself */
    if (dup2(sv[1], 0) < 0) th_child_exit(126);
    execv(tune_build_worker_argv[0], tune_build_worker_argv);
    th_child_exit(127);
  }
  close(sv[1]);
  if (pid < 0) {
    close(sv[0]);
    return -1;
  }
  *fd = sv[0];
  return pid;
}

static void *tune__bw_spawner(void *arg) {
  (void)arg;
  pthread_mutex_lock(&bw_mu);
  for (;;) {
    while (!bw_req) pthread_cond_wait(&bw_cv, &bw_mu);
    bw_req = 0;
    bw_new_pid = tune__bw_fork(&bw_new_fd);
    bw_new_errno = errno;
    bw_done = 1;
    pthread_cond_broadcast(&bw_cv);
  }
  return NULL;
}

/* Takes an idle worker, or starts one: its slot, or -1 (why says so). */
static int tune__bw_acquire(char *why, size_t n) {
  pthread_mutex_lock(&bw_mu);
  int slot = -1;
  for (int i = 0; i < TUNE_BW_MAX && slot < 0; i++)
    if (bw_pool[i].pid > 0 && !bw_pool[i].busy) slot = i;
  for (int i = 0; i < TUNE_BW_MAX && slot < 0; i++)
    if (bw_pool[i].pid == 0 && !bw_pool[i].busy) slot = i;
  if (slot >= 0) bw_pool[slot].busy = 1; /* ours before the lock is let go while a worker is started */
  if (slot < 0) {
    snprintf(why, n, "more than %d build workers at once", TUNE_BW_MAX);
  } else if (bw_pool[slot].pid == 0) {
    if (!bw_spawner_up) {
      pthread_t th;
      pthread_attr_t at;
      pthread_attr_init(&at);
      pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
      bw_spawner_up = pthread_create(&th, &at, tune__bw_spawner, NULL) == 0;
      pthread_attr_destroy(&at);
    }
    while (bw_spawner_up && (bw_req || bw_done)) pthread_cond_wait(&bw_cv, &bw_mu); /* another's turn */
    if (bw_spawner_up) {
      bw_req = 1;
      pthread_cond_broadcast(&bw_cv);
      while (!bw_done) pthread_cond_wait(&bw_cv, &bw_mu);
      bw_done = 0;
      pthread_cond_broadcast(&bw_cv);
    }
    if (!bw_spawner_up || bw_new_pid <= 0) {
      snprintf(why, n, "cannot start a build worker: %s", bw_spawner_up ? strerror(bw_new_errno) : "no thread");
      bw_pool[slot].busy = 0;
      slot = -1;
    } else {
      bw_pool[slot].pid = bw_new_pid;
      bw_pool[slot].fd = bw_new_fd;
    }
  }
  pthread_mutex_unlock(&bw_mu);
  return slot;
}

/* Gives the slot back: kept for the next request when ok, else the worker is killed and reaped (its wait
 * status in *status when status != NULL). */
static void tune__bw_release(int slot, int ok, int *status) {
  pthread_mutex_lock(&bw_mu);
  tune__bw w = bw_pool[slot];
  if (!ok) bw_pool[slot].pid = 0;
  bw_pool[slot].busy = 0;
  pthread_mutex_unlock(&bw_mu);
  if (ok) return;
  close(w.fd);
  kill(w.pid, SIGKILL);
  int st = 0;
  while (waitpid(w.pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (status) *status = st;
}

void tune_build_workers_stop(void) {
  for (int i = 0; i < TUNE_BW_MAX; i++) {
    pthread_mutex_lock(&bw_mu);
    int idle = bw_pool[i].pid > 0 && !bw_pool[i].busy;
    if (idle) bw_pool[i].busy = 1;
    pthread_mutex_unlock(&bw_mu);
    if (idle) tune__bw_release(i, 0, NULL);
  }
}

/* j's build by a pooled build worker, with a deadline of timeout_s: as tune__build_child. */
static int tune__build_pooled(tune_build_job *j, double timeout_s, char *why, size_t n) {
  tune_build_rep *reps = th_malloc(sizeof *reps * (size_t)j->n);
  if (!reps) {
    snprintf(why, n, "out of memory");
    return -1;
  }
  /* before the request: the runtime object the worker adopts (CPU libraries link it) */
  const char *rt = NULL;
  char rt_err[160];
  if (!j->t->on_device) (void)tc_runtime_object(&rt, rt_err, sizeof rt_err);
  double deadline = th_now_mono() + timeout_s;
  int slot = -1, r = 1;
  /* a worker that idled out since its last request is found dead at the send: one more, fresh, then */
  for (int attempt = 0; attempt < 2 && r == 1; attempt++) {
    if ((slot = tune__bw_acquire(why, n)) < 0) break;
    r = tune__send_build(bw_pool[slot].fd, j) == 0 ? 0 : 1;
    if (r != 0) {
      tune__bw_release(slot, 0, NULL);
      slot = -1;
    }
  }
  if (slot < 0) {
    free(reps);
    if (!why[0]) snprintf(why, n, "the build worker went away");
    return -1;
  }
  for (int i = 0; r == 0 && i < j->n; i++) r = th_read_full(bw_pool[slot].fd, &reps[i], sizeof reps[i], deadline);
  int status = 0;
  tune__bw_release(slot, r == 0, &status);
  tune__build_outcome(j, reps, r, status, timeout_s, why, n);
  free(reps);
  return r;
}

/* Runs j's build in a child that reports back, with a deadline of timeout_s: a pooled build worker (an exec of
 * tune_build_worker_argv running tune_build_worker_main) when that is set, as the daemon and the CLI set it, so
 * that LLVM and cc never run in a fork of a threaded process; else tune__build_local in a plain fork (tests
 * and library callers). Returns 0 when every outcome came back (copied into j's arrays), else the reason in
 * why: the child was killed at the deadline (2) or died first (1, or -1 for fork/socket errors). */
static int tune__build_child(tune_build_job *j, double timeout_s, char *why, size_t n) {
  if (tune_build_worker_argv && tune_build_worker_argv[0]) return tune__build_pooled(j, timeout_s, why, n);
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    snprintf(why, n, "socketpair: %s", strerror(errno));
    return -1;
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(why, n, "fork: %s", strerror(errno));
    close(sv[0]);
    close(sv[1]);
    return -1;
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) th_child_exit(1);
    signal(SIGINT, SIG_IGN); /* Ctrl-C is the tuner's; it kills the child itself */
    close(sv[0]);
    tune__build_local(j);
    for (int i = 0; i < j->n; i++) {
      int k = j->which[i];
      tune_build_rep rep = {.err_class = j->err_class[k]};
      snprintf(rep.so, sizeof rep.so, "%s", j->so_paths[k]);
      snprintf(rep.msg, sizeof rep.msg, "%s", j->msgs[k]);
      if (th_write_full(sv[1], &rep, sizeof rep, 1) != 0) th_child_exit(1);
    }
    th_child_exit(0);
  }
  close(sv[1]);
  double deadline = th_now_mono() + timeout_s;
  int r = 0;
  tune_build_rep *reps = th_malloc(sizeof *reps * (size_t)j->n);
  if (!reps) r = -1;
  for (int i = 0; r == 0 && i < j->n; i++) r = th_read_full(sv[0], &reps[i], sizeof reps[i], deadline);
  close(sv[0]);
  if (r != 0) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  tune__build_outcome(j, reps, r, status, timeout_s, why, n);
  free(reps);
  return r;
}

/* A library of candidates built in a child process; when the child hangs or dies, each candidate is
 * built alone in a child of its own, so only the guilty ones get class 6 (timeout) or 2 (crash). A
 * device task's candidates are each compiled alone from the start (one NVRTC program, one deadline
 * each), and a crash is NVRTC's: class 3. */
static void *tune__build_thread(void *arg) {
  tune_build_job *j = arg;
  char why[160] = "";
  int dev = j->t->on_device;
  int r = dev ? 1 : tune__build_child(j, j->timeout_s, why, sizeof why);
  if (r == 0) return NULL;
  for (int i = 0; i < j->n; i++) {
    int k = j->which[i];
    tune_build_job one = *j;
    one.which = &k;
    one.n = 1;
    tune__single_so(j, i, one.so, sizeof one.so);
    if (j->n > 1 || dev) r = tune__build_child(&one, j->timeout_s, why, sizeof why);
    if (r == 0) continue;
    j->so_paths[k][0] = 0;
    j->err_class[k] = r == 2 ? TC_ERROR_CLASS_BUILD_TIMEOUT
                      : dev  ? TC_ERROR_CLASS_COMPILE_DEVICE
                             : TC_ERROR_CLASS_COMPILE_HOST;
    snprintf(j->msgs[k], 160, "%s", why);
  }
  return NULL;
}

th_status tune_task_build(const tune_task *t, const tc_config *cfgs, int n, int nthreads, double timeout_s,
                          const char *dir, const char *tag, char (*so_paths)[TUNE_PATH_MAX],
                          char (*fn_names)[TUNE_FN_MAX], int *err_class, char (*msgs)[160]) {
  if (n <= 0) return TH_OK;
  if (nthreads < 1) nthreads = 1;
  int *which = th_malloc(sizeof *which * (size_t)n);
  tune_build_job *jobs = th_calloc((size_t)nthreads, sizeof *jobs);
  pthread_t *th = th_calloc((size_t)nthreads, sizeof *th);
  if (!which || !jobs || !th) {
    free(which);
    free(jobs);
    free(th);
    return TH_ERR_NOMEM;
  }
  int nvalid = 0;
  for (int i = 0; i < n; i++) {
    so_paths[i][0] = 0;
    msgs[i][0] = 0;
    if (t->on_device)
      snprintf(fn_names[i], TUNE_FN_MAX, "th_candidate"); /* one image each */
    else
      snprintf(fn_names[i], TUNE_FN_MAX, "tune_%s_%d", tag, i);
    err_class[i] = TC_ERROR_CLASS_NONE;
    char why[140] = "";
    if (tc_backend_valid(&t->target, &t->wl, &t->space, &cfgs[i], why, sizeof why) != TH_OK) {
      err_class[i] = TC_ERROR_CLASS_INSTANTIATION;
      if (t->on_device)
        snprintf(msgs[i], 160, "invalid config: %s", why[0] ? why : "device limits");
      else
        snprintf(msgs[i], 160, "invalid config for this workload");
      continue;
    }
    which[nvalid++] = i;
  }
  /* The runtime object every candidate library links: compiled here once, before the build children
   * fork, so that they find it ready (a failure shows again, per candidate, in the children).
   * Device images link nothing. */
  char rt_err[160];
  if (!t->on_device) (void)tc_backend_prepare(t->target.backend, rt_err, sizeof rt_err);
  int njobs = nvalid < nthreads ? nvalid : nthreads;
  int pos = 0;
  for (int j = 0; j < njobs; j++) {
    int cnt = nvalid / njobs + (j < nvalid % njobs);
    jobs[j] = (tune_build_job){.t = t, .cfgs = cfgs, .which = which + pos, .n = cnt, .fn_names = fn_names,
                               .so_paths = so_paths, .err_class = err_class, .msgs = msgs,
                               .timeout_s = timeout_s > 0 ? timeout_s : TUNE_BUILD_TIMEOUT_S};
    snprintf(jobs[j].so, sizeof jobs[j].so, "%.300s/%.64s_%d.so", dir, tag, j);
    pos += cnt;
  }
  char *started = th_calloc((size_t)nthreads, 1);
  for (int j = 1; j < njobs; j++) {
    if (started && pthread_create(&th[j], NULL, tune__build_thread, &jobs[j]) == 0)
      started[j] = 1;
    else
      tune__build_thread(&jobs[j]); /* no thread: build here */
  }
  if (njobs > 0) tune__build_thread(&jobs[0]);
  for (int j = 1; j < njobs; j++)
    if (started && started[j]) pthread_join(th[j], NULL);
  free(started);
  free(which);
  free(jobs);
  free(th);
  return TH_OK;
}
