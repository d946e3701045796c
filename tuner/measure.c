/* The tuner-side handle of the measurement worker (measure_worker.c): it spawns the worker (fork, or an
 * exec of the worker command), sends requests of measure_proto.h over a socketpair (send with MSG_NOSIGNAL,
 * so a dead worker never raises SIGPIPE in the tuner), enforces deadlines and restarts a worker that died,
 * reporting each failure as an AutoTVM error class. */
#include "measure.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "measure_proto.h"
#include "th_alloc.h"
#include "th_util.h"

void tune_measure_opts_default(tune_measure_opts *o) {
  memset(o, 0, sizeof *o);
  o->number = 1;
  o->repeat = 10;
  o->min_repeat_ms = 0;
  o->cache_flush = 1;
  o->timeout_s = 10.0;
  o->rtol = 1e-3;
  o->atol = 1e-4;
  o->seed = 1;
}

struct tune_measurer {
  tune_measure_opts opts;
  pid_t pid;
  int fd; /* our end of the socketpair; -1 when no worker */
  int restarts;
  int have_task;
  int libs;                      /* distinct libraries the current worker has loaded */
  char last_lib[TUNE_PATH_MAX];
  tune_req task; /* resent after a restart */
  double task_limit_s;         /* how long the task may take in the worker; 0: opts.timeout_s */
  char ref_dir[TUNE_PATH_MAX]; /* device references are kept here across workers ("": none) */
  char err[256];
  int deaths;       /* workers that died under a request (crashed, or killed from outside) */
  char death[160];  /* why the last one did (a tune_result msg) */
};

static void tune__kill_worker(tune_measurer_t *m, int hard) {
  if (m->fd >= 0) {
    if (!hard) {
      tune_req q;
      memset(&q, 0, sizeof q);
      q.magic = TUNE_MSG_MAGIC;
      q.type = TUNE_REQ_QUIT;
      th_write_full(m->fd, &q, sizeof q, 1);
    }
    close(m->fd);
    m->fd = -1;
  }
  if (m->pid > 0) {
    int status;
    if (hard) kill(m->pid, SIGKILL);
    /* A worker asked to quit gets a moment to do so before it is killed. */
    for (int i = 0; i < 200; i++) {
      pid_t p = waitpid(m->pid, &status, WNOHANG);
      if (p == m->pid || (p < 0 && errno != EINTR)) {
        m->pid = -1;
        return;
      }
      struct timespec ts = {0, 5 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
    kill(m->pid, SIGKILL);
    while (waitpid(m->pid, &status, 0) < 0 && errno == EINTR) {
    }
    m->pid = -1;
  }
}

static th_status tune__spawn(tune_measurer_t *m) {
  int sv[2];
  m->libs = 0;
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    snprintf(m->err, sizeof m->err, "socketpair: %s", strerror(errno));
    return TH_ERR_IO;
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(m->err, sizeof m->err, "fork: %s", strerror(errno));
    close(sv[0]);
    close(sv[1]);
    return TH_ERR_IO;
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) th_child_exit(1);
    close(sv[0]);
    signal(SIGINT, SIG_IGN); /* Ctrl-C is the tuner's to handle; it stops the worker itself */
    if (m->opts.worker_argv && m->opts.worker_argv[0]) {
      if (dup2(sv[1], 0) < 0 || dup2(sv[1], 1) < 0) th_child_exit(1);
      execv(m->opts.worker_argv[0], m->opts.worker_argv);
      th_child_exit(127);
    }
    th_child_exit(tune_measure_worker_main(sv[1], sv[1]));
  }
  close(sv[1]);
  m->fd = sv[0];
  m->pid = pid;
  return TH_OK;
}

/* Closes our end, kills the worker (in case it only closed the socket) and reaps it; why says how it ended. */
static void tune__reap(tune_measurer_t *m, char *why, size_t n) {
  int status = 0;
  pid_t pid = m->pid;
  if (m->fd >= 0) close(m->fd);
  m->fd = -1;
  if (pid > 0) {
    kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    m->pid = -1;
  }
  if (WIFSIGNALED(status))
    snprintf(why, n, "worker killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
  else
    snprintf(why, n, "worker exited (status %d)", WEXITSTATUS(status));
}

/* Sends q and waits for the reply. 0 ok, 1 EOF (worker died), 2 timeout, -1 I/O error. */
static int tune__roundtrip(tune_measurer_t *m, const tune_req *q, tune_rep *rep, double timeout) {
  if (th_write_full(m->fd, q, sizeof *q, 1) != 0) return 1;
  int r = th_read_full(m->fd, rep, sizeof *rep, th_now_mono() + timeout);
  if (r == 0 && rep->magic != TUNE_MSG_MAGIC) return -1;
  return r;
}

/* Sends the task to the running worker. TH_ERR_RUNTIME when it fails there (m->err says why); *died is set
 * when the worker died under it. */
static th_status tune__send_task(tune_measurer_t *m, int *died) {
  tune_rep rep;
  int r =
      tune__roundtrip(m, &m->task, &rep, m->task_limit_s > 0 ? m->task_limit_s : m->opts.timeout_s);
  if (r == 0 && rep.ok) return TH_OK;
  if (r == 1) {
    char why[128];
    tune__reap(m, why, sizeof why);
    snprintf(m->err, sizeof m->err, "reference kernel: the worker died running it (%s)", why);
    m->deaths++;
    snprintf(m->death, sizeof m->death, "%s, making the task's reference", why);
    *died = 1;
    return TH_ERR_RUNTIME;
  }
  if (r == 0)
    snprintf(m->err, sizeof m->err, "reference kernel: %s", rep.res.msg);
  else
    snprintf(m->err, sizeof m->err, "reference kernel %s", r == 2 ? "timed out" : "reply unreadable");
  tune__kill_worker(m, 1);
  return TH_ERR_RUNTIME;
}

/* How many fresh workers in a row may die making the task's reference before the task is given up. A worker
 * killed from outside (an operator, the OOM killer) just as it starts costs one more start; a reference that
 * kills every worker still fails, after a few. */
#define TUNE_TASK_STARTS 3

/* Starts a worker when none runs and gives it m->task, again with a fresh one when a worker dies under it.
 * TH_ERR_RUNTIME when the task fails (m->err says why), TH_ERR_IO when no worker starts. */
static th_status tune__start_task(tune_measurer_t *m) {
  th_status rc = TH_OK;
  for (int i = 0; i < TUNE_TASK_STARTS; i++) {
    if (m->fd < 0 && (rc = tune__spawn(m)) != TH_OK) return rc;
    int died = 0;
    rc = tune__send_task(m, &died);
    if (rc == TH_OK || !died) return rc;
  }
  size_t len = strlen(m->err);
  snprintf(m->err + len, sizeof m->err - len, ", %d workers in a row", TUNE_TASK_STARTS);
  return rc;
}

th_status tune_measurer_new(const tune_measure_opts *opts, tune_measurer_t **out) {
  tune_measurer_t *m = th_calloc(1, sizeof *m);
  if (!m) return TH_ERR_NOMEM;
  if (opts)
    m->opts = *opts;
  else
    tune_measure_opts_default(&m->opts);
  if (m->opts.timeout_s <= 0) m->opts.timeout_s = 10;
  m->fd = -1;
  m->pid = -1;
  th_status rc = tune__spawn(m);
  if (rc != TH_OK) {
    free(m);
    return rc;
  }
  *out = m;
  return TH_OK;
}

void tune_measurer_free(tune_measurer_t *m) {
  if (!m) return;
  tune__kill_worker(m, 0);
  free(m);
}

const char *tune_measurer_errmsg(tune_measurer_t *m) {
  return m ? m->err : "no measurer";
}

int tune_measurer_deaths(const tune_measurer_t *m, const char **why) {
  if (why) *why = m->death;
  return m->deaths;
}

int tune_measurer_restarts(const tune_measurer_t *m) {
  return m->restarts;
}

/* Makes m->task (filled by the caller) the worker's: starts a worker when none runs and sends it
 * the task. TH_ERR_RUNTIME when the task fails there (m->err says why), TH_ERR_IO when no worker
 * starts. */
static th_status tune__install_task(tune_measurer_t *m) {
  m->have_task = 0;
  th_status rc = tune__start_task(m);
  if (rc == TH_OK) m->have_task = 1;
  return rc;
}

th_status tune_measurer_set_task(tune_measurer_t *m, const tune_layout *layout, const char *ref_so,
                                 const char *ref_fn, const tune_pack *ref_pack) {
  if (!layout || !ref_so || !ref_fn || strlen(ref_so) >= TUNE_PATH_MAX || strlen(ref_fn) >= TUNE_FN_MAX ||
      layout->nbufs < 1 || layout->nbufs > TUNE_MAX_BUFS) {
    snprintf(m->err, sizeof m->err, "invalid task");
    return TH_ERR_INVALID;
  }
  memset(&m->task, 0, sizeof m->task);
  m->task_limit_s = 0;
  m->task.magic = TUNE_MSG_MAGIC;
  m->task.type = TUNE_REQ_TASK;
  m->task.layout = *layout;
  m->task.seed = m->opts.seed;
  if (ref_pack) m->task.pack = *ref_pack;
  snprintf(m->task.so_path, sizeof m->task.so_path, "%s", ref_so);
  snprintf(m->task.fn, sizeof m->task.fn, "%s", ref_fn);
  return tune__install_task(m);
}

/* A request of the given type carrying the measurer's timing and checking options (malloc'd; NULL when out
 * of memory). */
static tune_req *tune__new_req(const tune_measurer_t *m, int type) {
  tune_req *q = th_calloc(1, sizeof *q);
  if (!q) return NULL;
  q->magic = TUNE_MSG_MAGIC;
  q->type = type;
  q->number = m->opts.number;
  q->repeat = m->opts.repeat;
  q->min_repeat_ms = m->opts.min_repeat_ms;
  q->rtol = m->opts.rtol;
  q->atol = m->opts.atol;
  return q;
}

/* A dead or hung worker: reap it and report why in out. */
static void tune__worker_lost(tune_measurer_t *m, int r, double timeout, tune_result *out) {
  out->cost_mean_s = 1e9;
  if (r == 2) {
    out->error_class = TC_ERROR_CLASS_RUN_TIMEOUT;
    snprintf(out->msg, sizeof out->msg, "timed out after %.1f s", timeout);
    tune__kill_worker(m, 1);
  } else {
    tune__reap(m, out->msg, sizeof out->msg);
    out->error_class = TC_ERROR_CLASS_RUNTIME_DEVICE;
    m->deaths++;
    snprintf(m->death, sizeof m->death, "%s", out->msg);
  }
  m->restarts++;
}

th_status tune_measurer_run(tune_measurer_t *m, const char *so_path, const char *fn, const tune_pack *pack,
                            tune_result *out) {
  memset(out, 0, sizeof *out);
  out->cost_mean_s = 1e9;
  out->error_class = TC_ERROR_CLASS_UNKNOWN;
  if (!m->have_task) {
    snprintf(out->msg, sizeof out->msg, "no task set");
    return TH_ERR_INVALID;
  }
  if (!so_path || !fn || strlen(so_path) >= TUNE_PATH_MAX || strlen(fn) >= TUNE_FN_MAX) {
    snprintf(out->msg, sizeof out->msg, "path or name too long");
    return TH_ERR_INVALID;
  }
  if (strcmp(m->last_lib, so_path) != 0) {
    snprintf(m->last_lib, sizeof m->last_lib, "%s", so_path);
    if (++m->libs > TUNE_WORKER_MAX_LIBS && m->fd >= 0) tune__kill_worker(m, 0); /* planned restart */
  }
  if (m->fd < 0) { /* the previous candidate killed the worker: start a fresh one with the task */
    th_status rc = tune__start_task(m);
    if (rc != TH_OK) {
      snprintf(out->msg, sizeof out->msg, "worker restart failed: %.120s", m->err);
      return TH_ERR_IO;
    }
  }
  tune_req *q = tune__new_req(m, TUNE_REQ_RUN);
  if (!q) return TH_ERR_NOMEM;
  q->cache_flush = m->opts.cache_flush;
  if (pack) q->pack = *pack;
  snprintf(q->so_path, sizeof q->so_path, "%s", so_path);
  snprintf(q->fn, sizeof q->fn, "%s", fn);
  tune_rep rep;
  int r = tune__roundtrip(m, q, &rep, m->opts.timeout_s);
  free(q);
  if (r == 0) {
    *out = rep.res;
    if (out->error_class != TC_ERROR_CLASS_NONE) out->cost_mean_s = 1e9;
    return TH_OK;
  }
  tune__worker_lost(m, r, m->opts.timeout_s, out);
  return TH_OK;
}

/* Starts a worker when none runs (after a crash, a hang or a class 7). GPU requests need no task. */
static th_status tune__ensure_worker(tune_measurer_t *m) {
  if (m->fd >= 0) return TH_OK;
  return m->have_task ? tune__start_task(m) : tune__spawn(m);
}

void tune_measurer_set_ref_dir(tune_measurer_t *m, const char *dir) {
  if (m)
    snprintf(m->ref_dir, sizeof m->ref_dir, "%s",
             dir && strlen(dir) < sizeof m->ref_dir ? dir : "");
}

/* The device task of (t, wl): its CPU reference made in the worker before the first candidate, and
 * again (from ref_dir's file) after each restart, under a limit that fits a naive reference of the
 * workload's size (20 MFLOP/s, well below what the plain loops run at), so that the candidate's own
 * limit covers its compile and device work only. TH_ERR_RUNTIME when the reference fails (m->err
 * says why), TH_ERR_IO when no worker can be started. */
static th_status tune__device_task(tune_measurer_t *m, const tc_backend_target *t,
                                   const tc_workload *wl) {
  char key[1024] = "", have[1024] = ""; /* keys: the structs' padding never decides */
  if (m->have_task && m->task.type == TUNE_REQ_CUDA_REF &&
      tc_workload_key(wl, key, sizeof key) == TH_OK &&
      tc_workload_key(&m->task.wl, have, sizeof have) == TH_OK && strcmp(key, have) == 0 &&
      strcmp(m->task.target, t->str) == 0 && strcmp(m->task.ref_dir, m->ref_dir) == 0)
    return TH_OK;
  tune_req *q = tune__new_req(m, TUNE_REQ_CUDA_REF);
  if (!q) return TH_ERR_NOMEM;
  q->seed = m->opts.seed;
  q->timeout_s = m->opts.timeout_s;
  q->wl = *wl;
  snprintf(q->target, sizeof q->target, "%s", t->str);
  snprintf(q->ref_dir, sizeof q->ref_dir, "%s", m->ref_dir);
  m->task = *q;
  free(q);
  m->task_limit_s = m->opts.timeout_s + 60 + tc_workload_flops(wl) / 2e7;
  return tune__install_task(m);
}

th_status tune_measurer_run_device(tune_measurer_t *m, const tc_backend_target *t, const tc_workload *wl,
                                   const tc_config *cfg, const char *image_path, tune_result *out) {
  memset(out, 0, sizeof *out);
  out->cost_mean_s = 1e9;
  out->error_class = TC_ERROR_CLASS_UNKNOWN;
  if (!m || !t || !wl || !cfg || strlen(t->str) >= sizeof(((tune_req *)0)->target) ||
      (image_path && strlen(image_path) >= TUNE_PATH_MAX)) {
    snprintf(out->msg, sizeof out->msg, "invalid arguments");
    return TH_ERR_INVALID;
  }
  th_status rc = tune__device_task(m, t, wl);
  if (rc == TH_OK) rc = tune__ensure_worker(m);
  if (rc == TH_ERR_RUNTIME) {
    snprintf(out->msg, sizeof out->msg, "%.159s", m->err);
    return rc;
  }
  if (rc != TH_OK) {
    snprintf(out->msg, sizeof out->msg, "worker restart failed: %.120s", m->err);
    return rc == TH_ERR_NOMEM ? rc : TH_ERR_IO;
  }
  tune_req *q = tune__new_req(m, TUNE_REQ_CUDA);
  if (!q) return TH_ERR_NOMEM;
  q->cache_flush = m->opts.cache_flush;
  q->seed = m->opts.seed;
  q->timeout_s = m->opts.timeout_s;
  q->wl = *wl;
  q->cfg = *cfg;
  snprintf(q->target, sizeof q->target, "%s", t->str);
  snprintf(q->so_path, sizeof q->so_path, "%s", image_path ? image_path : "");
  snprintf(q->ref_dir, sizeof q->ref_dir, "%s", m->ref_dir);
  /* the reference is made already (the device task): a compile without an image and the module load
   * run before the timed part, so allow them beyond the backend's own limit */
  double limit = m->opts.timeout_s * 2 + 60;
  tune_rep rep;
  int r = tune__roundtrip(m, q, &rep, limit);
  free(q);
  if (r != 0) {
    tune__worker_lost(m, r, limit, out);
    return TH_OK;
  }
  *out = rep.res;
  if (out->error_class != TC_ERROR_CLASS_NONE) out->cost_mean_s = 1e9;
  if (out->error_class == TC_ERROR_CLASS_RUN_TIMEOUT) { /* a hung kernel may hold the context: new process */
    tune__kill_worker(m, 1);
    m->restarts++;
  }
  return TH_OK;
}

th_status tune_measurer_device(tune_measurer_t *m, const tc_backend *b, tc_device *out, char *err,
                               size_t errlen) {
  if (!m || !b || !out) return TH_ERR_INVALID;
  if (tune__ensure_worker(m) != TH_OK) {
    if (err && errlen) snprintf(err, errlen, "measurement worker: %s", m->err);
    return TH_ERR_IO;
  }
  tune_req *q = tune__new_req(m, TUNE_REQ_CUDA_DEVICE);
  if (!q) return TH_ERR_NOMEM;
  snprintf(q->target, sizeof q->target, "%s", tc_backend_name(b));
  tune_rep rep;
  int r = tune__roundtrip(m, q, &rep, m->opts.timeout_s + 60);
  free(q);
  if (r != 0) {
    tune_result lost;
    tune__worker_lost(m, r, m->opts.timeout_s + 60, &lost);
    if (err && errlen) snprintf(err, errlen, "measurement worker: %s", lost.msg);
    return TH_ERR_IO;
  }
  if (!rep.ok) {
    rep.dev_err[sizeof rep.dev_err - 1] = 0;
    if (err && errlen) snprintf(err, errlen, "%s", rep.dev_err[0] ? rep.dev_err : "no device");
    return TH_ERR_UNSUPPORTED;
  }
  *out = rep.dev;
  return TH_OK;
}

th_status tune_measurer_time_model(tune_measurer_t *m, const char *so_path, const char *params_path,
                                   const tc_time_opts *t, double timeout_s, tc_run_stats *st, char *err,
                                   size_t errlen) {
  if (!m || !so_path || !params_path || !t || !st || strlen(so_path) >= TUNE_PATH_MAX ||
      strlen(params_path) >= TUNE_PATH_MAX)
    return TH_ERR_INVALID;
  memset(st, 0, sizeof *st);
  if (tune__ensure_worker(m) != TH_OK) {
    if (err && errlen) snprintf(err, errlen, "measurement worker: %s", m->err);
    return TH_ERR_IO;
  }
  tune_req *q = tune__new_req(m, TUNE_REQ_MODEL);
  if (!q) return TH_ERR_NOMEM;
  snprintf(q->so_path, sizeof q->so_path, "%s", so_path);
  snprintf(q->params_path, sizeof q->params_path, "%s", params_path);
  q->timing = *t;
  tune_rep rep;
  int r = tune__roundtrip(m, q, &rep, timeout_s);
  free(q);
  if (r != 0) {
    tune_result lost;
    tune__worker_lost(m, r, timeout_s, &lost);
    if (err && errlen)
      snprintf(err, errlen, "the model %s while it was timed: %s",
               r == 2 ? "did not finish" : "crashed the measurement worker", lost.msg);
    return r == 2 ? TH_ERR_TIMEOUT : TH_ERR_RUNTIME;
  }
  rep.dev_err[sizeof rep.dev_err - 1] = 0;
  if (!rep.ok) {
    if (err && errlen) snprintf(err, errlen, "%s", rep.dev_err[0] ? rep.dev_err : "the model failed to run");
    return rep.status != TH_OK ? (th_status)rep.status : TH_ERR_RUNTIME;
  }
  *st = rep.stats;
  st->call_ms = NULL;
  st->manifest = NULL;
  return TH_OK;
}
