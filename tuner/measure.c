/* The measurement worker and its tuner-side handle. The protocol is fixed-size request and reply structs over
 * a socketpair (send with MSG_NOSIGNAL, so a dead worker never raises SIGPIPE in the tuner). Everything that
 * can go wrong inside a candidate (crash, hang, garbage output, writes past a buffer) is confined to the worker
 * and reported as an AutoTVM error class. */
#include "measure.h"

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <emmintrin.h>
#include <immintrin.h>
#endif
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "tc.h"
#include "th_util.h"

#define TUNE_MSG_MAGIC 0x54554e45u /* "TUNE" */
#define TUNE_GUARD_BYTES 4096
#define TUNE_WORKER_MAX_LIBS 48
#define TUNE_GUARD_BYTE 0xa5

enum {
  TUNE_REQ_TASK = 1,
  TUNE_REQ_RUN = 2,
  TUNE_REQ_QUIT = 3,
  TUNE_REQ_CUDA = 4,
  TUNE_REQ_CUDA_DEVICE = 5,
  TUNE_REQ_MODEL = 6, /* a whole built model: so_path, params_path, timing */
  TUNE_REQ_CUDA_REF =
      7 /* the device task: wl's CPU reference, made (or read from ref_dir) before candidates */
};

typedef struct tune_req {
  uint32_t magic, type;
  tune_layout layout;
  tune_pack pack;
  uint64_t seed;
  int32_t number, repeat, min_repeat_ms, cache_flush;
  double rtol, atol;
  char so_path[TUNE_PATH_MAX];
  char fn[TUNE_FN_MAX];
  /* TUNE_REQ_CUDA: a candidate timed by its backend; TUNE_REQ_CUDA_DEVICE: the backend's device */
  tc_workload wl;
  tc_config cfg;
  char target[128]; /* tc_backend_target.str; the backend's name for a device query */
  double timeout_s;
  char params_path[TUNE_PATH_MAX]; /* TUNE_REQ_MODEL: the model's params.bin */
  tc_time_opts timing;             /* TUNE_REQ_MODEL */
  char ref_dir[TUNE_PATH_MAX]; /* TUNE_REQ_CUDA(_REF): where references are kept across workers */
} tune_req;

typedef struct tune_rep {
  uint32_t magic;
  int32_t ok; /* task: 1 on success */
  tune_result res;
  tc_device dev; /* TUNE_REQ_CUDA_DEVICE */
  char dev_err[256];
  tc_run_stats stats; /* TUNE_REQ_MODEL, its pointers NULL */
  int32_t status;     /* TUNE_REQ_MODEL: tc_time_model's th_status, its message in dev_err */
} tune_rep;

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

/* =====================================================================================================
 * Worker side
 * ===================================================================================================== */
typedef void (*tune_kernel_fn)(void *const *args);
typedef int (*tune_pack_fn)(const int *params, const float *src, float *dst);

typedef struct tune_worker {
  tune_layout layout;
  int64_t live_n[TUNE_MAX_BUFS]; /* floats in bufs[i] (packed size for packed buffers) */
  float *bufs[TUNE_MAX_BUFS];   /* live argument buffers, each followed by a guard zone */
  float *pristine[TUNE_MAX_BUFS]; /* input copies, restored before each candidate */
  float *ref[TUNE_MAX_BUFS];      /* reference outputs */
  int have_task;
  void *dl;
  char dl_path[TUNE_PATH_MAX];
  char *flush;
  size_t flush_n;
} tune_worker;

static void tune__worker_free_task(tune_worker *w) {
  for (int i = 0; i < TUNE_MAX_BUFS; i++) {
    free(w->bufs[i]);
    free(w->pristine[i]);
    free(w->ref[i]);
    w->bufs[i] = w->pristine[i] = w->ref[i] = NULL;
  }
  w->have_task = 0;
}

static double tune__now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static size_t tune__round64(size_t n) {
  return (n + 63) & ~(size_t)63;
}

/* Bytes of one element of buffer i: 8 for int64, else 4 (float32). */
static size_t tune__elem(const tune_layout *l, int i) {
  return l->elem_bytes[i] == 8 ? 8 : 4;
}

static tune_kernel_fn tune__worker_sym(tune_worker *w, const char *path, const char *fn, char *msg,
                                       size_t msgn) {
  if (!w->dl || strcmp(w->dl_path, path) != 0) {
    /* RTLD_NODELETE: a kernel library starts its own runtime thread pool and has no teardown, so unmapping
     * it under live pool threads would crash the worker. Libraries stay mapped; the tuner side restarts
     * the worker every TUNE_WORKER_MAX_LIBS libraries to bound that. */
    if (w->dl) dlclose(w->dl);
    w->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!w->dl) {
      const char *e = dlerror();
      snprintf(msg, msgn, "dlopen: %s", e ? e : "failed");
      w->dl_path[0] = 0;
      return NULL;
    }
    snprintf(w->dl_path, sizeof w->dl_path, "%s", path);
  }
  dlerror();
  void *sym = dlsym(w->dl, fn);
  if (!sym) {
    snprintf(msg, msgn, "symbol %s not found in %s", fn, path);
    return NULL;
  }
  tune_kernel_fn f;
  memcpy(&f, &sym, sizeof f);
  return f;
}

static void tune__fill_guards(tune_worker *w) {
  for (int i = 0; i < w->layout.nbufs; i++)
    if (w->bufs[i])
      memset((char *)w->bufs[i] + (size_t)w->live_n[i] * sizeof(float), TUNE_GUARD_BYTE, TUNE_GUARD_BYTES);
}

static int tune__guards_intact(const tune_worker *w) {
  for (int i = 0; i < w->layout.nbufs; i++) {
    if (!w->bufs[i]) continue;
    const unsigned char *g = (const unsigned char *)w->bufs[i] + (size_t)w->live_n[i] * sizeof(float);
    for (size_t j = 0; j < TUNE_GUARD_BYTES; j++)
      if (g[j] != TUNE_GUARD_BYTE) return 0;
  }
  return 1;
}

/* Restores inputs, poisons outputs with NaN (so an element the kernel never writes is caught), runs once. */
static void tune__run_checked(tune_worker *w, tune_kernel_fn f) {
  for (int i = 0; i < w->layout.nbufs; i++) {
    size_t bytes = (size_t)w->layout.nelems[i] * tune__elem(&w->layout, i);
    if (!w->bufs[i] || w->layout.packed[i]) continue; /* NULL slot, or packed once per candidate */
    if (w->layout.is_output[i] && w->layout.partial[i]) {
      memset(w->bufs[i], 0, bytes);
    } else if (w->layout.is_output[i]) {
      for (int64_t j = 0; j < w->layout.nelems[i]; j++) w->bufs[i][j] = NAN;
    } else {
      memcpy(w->bufs[i], w->pristine[i], bytes);
    }
  }
  tune__fill_guards(w);
  f((void *const *)w->bufs);
}

/* (Re)builds the packed buffers for the candidate in w->dl from the raw weights, with the packer the
 * candidate's library carries (so the layout always matches the kernel that reads it). */
static int tune__pack(tune_worker *w, const tune_pack *p, char *msg, size_t msgn) {
  tune_pack_fn pf = NULL;
  for (int i = 0; i < w->layout.nbufs; i++) {
    if (!w->layout.packed[i] || w->layout.nelems[i] == 0) continue;
    int64_t n = p->packed_n[i];
    if (n < 1 || n > ((int64_t)1 << 31)) {
      snprintf(msg, msgn, "bad packed size %lld for buffer %d", (long long)n, i);
      return -1;
    }
    if (!pf) {
      void *sym = dlsym(w->dl, "th_rt_pack_weights");
      if (!sym) {
        snprintf(msg, msgn, "th_rt_pack_weights not found in %.100s", w->dl_path);
        return -1;
      }
      memcpy(&pf, &sym, sizeof pf);
    }
    free(w->bufs[i]);
    w->bufs[i] = aligned_alloc(64, tune__round64((size_t)n * sizeof(float) + TUNE_GUARD_BYTES));
    if (!w->bufs[i]) {
      snprintf(msg, msgn, "out of memory");
      return -1;
    }
    w->live_n[i] = n;
    memset(w->bufs[i], 0, (size_t)n * sizeof(float));
    if (pf(p->params[i], w->pristine[i], w->bufs[i]) != 0) {
      snprintf(msg, msgn, "weight packing failed for buffer %d", i);
      return -1;
    }
  }
  return 0;
}

static void tune__worker_task(tune_worker *w, const tune_req *q, tune_rep *rep) {
  tune__worker_free_task(w);
  w->layout = q->layout;
  if (w->layout.nbufs < 1 || w->layout.nbufs > TUNE_MAX_BUFS) {
    snprintf(rep->res.msg, sizeof rep->res.msg, "bad buffer count %d", w->layout.nbufs);
    return;
  }
  uint64_t x = q->seed ? q->seed : 1;
  for (int i = 0; i < w->layout.nbufs; i++) {
    int64_t n = w->layout.nelems[i];
    if (n == 0) continue; /* a NULL argument (no bias, no residual) */
    int int64 = w->layout.elem_bytes[i] == 8;
    if (n < 0 || n > ((int64_t)1 << 31) || (w->layout.packed[i] && w->layout.is_output[i]) ||
        (w->layout.elem_bytes[i] != 0 && w->layout.elem_bytes[i] != 4 && !int64) ||
        (int64 && (w->layout.is_output[i] || w->layout.packed[i]))) {
      snprintf(rep->res.msg, sizeof rep->res.msg, "bad buffer %d: %lld elements of %d bytes%s", i,
               (long long)n, w->layout.elem_bytes[i],
               int64 ? " (int64 buffers are plain inputs)" : "");
      return;
    }
    size_t bytes = (size_t)n * tune__elem(&w->layout, i);
    w->live_n[i] = (int64_t)(bytes / sizeof(float));
    if (!w->layout.packed[i]) w->bufs[i] = aligned_alloc(64, tune__round64(bytes + TUNE_GUARD_BYTES));
    w->pristine[i] = malloc(bytes);
    if (w->layout.is_output[i]) w->ref[i] = malloc(bytes);
    if ((!w->layout.packed[i] && !w->bufs[i]) || !w->pristine[i] || (w->layout.is_output[i] && !w->ref[i])) {
      snprintf(rep->res.msg, sizeof rep->res.msg, "out of memory");
      return;
    }
    int64_t limit = w->layout.index_limit[i] > 0 ? w->layout.index_limit[i] : 100;
    for (int64_t j = 0; j < n;
         j++) { /* xorshift64*: cheap, seeded, values in [-1, 1) or [0, limit) */
      x ^= x >> 12;
      x ^= x << 25;
      x ^= x >> 27;
      uint64_t r = x * 0x2545f4914f6cdd1dULL;
      if (int64) {
        int64_t v = (int64_t)((r >> 11) % (uint64_t)limit);
        memcpy((char *)w->pristine[i] + (size_t)j * 8, &v, 8);
      } else {
        w->pristine[i][j] = (float)((double)(r >> 40) / 8388608.0 - 1.0);
      }
    }
  }
  tune_kernel_fn f = tune__worker_sym(w, q->so_path, q->fn, rep->res.msg, sizeof rep->res.msg);
  if (!f || tune__pack(w, &q->pack, rep->res.msg, sizeof rep->res.msg) != 0) return;
  tune__run_checked(w, f);
  if (!tune__guards_intact(w)) {
    snprintf(rep->res.msg, sizeof rep->res.msg, "reference kernel wrote past a buffer");
    return;
  }
  for (int i = 0; i < w->layout.nbufs; i++) {
    if (!w->layout.is_output[i] || !w->bufs[i]) continue;
    /* an infinity can be the right answer (bert's additive mask: x * 3.4e38 - 3.4e38 overflows for
     * x < 0); a NaN never is */
    for (int64_t j = 0; j < w->layout.nelems[i]; j++)
      if (isnan(w->bufs[i][j])) {
        snprintf(rep->res.msg, sizeof rep->res.msg, "reference output %d[%lld] is NaN", i, (long long)j);
        return;
      }
    memcpy(w->ref[i], w->bufs[i], (size_t)w->layout.nelems[i] * sizeof(float));
  }
  w->have_task = 1;
  rep->ok = 1;
}

#if defined(__x86_64__) || defined(__i386__)
/* CLFLUSHOPT (CPUID.(EAX=7,ECX=0):EBX bit 23): the same eviction as CLFLUSH, but the flushes of different lines
 * are not ordered with each other, so they overlap; the mfence after the loop orders them before the timed
 * run. On a 2-vCPU Intel Xeon VM a 2.4 MB weight buffer took 3.8 ms clean and 7.6 ms dirty with CLFLUSH,
 * 0.18 and 0.20 ms with CLFLUSHOPT, and CLFLUSH was 98% of the worker's own CPU time in a tuning run. */
static int tune__has_clflushopt(void) {
  static int have = -1;
  if (have < 0) {
    unsigned a = 0, b = 0, c = 0, d = 0;
    have = __get_cpuid_max(0, NULL) >= 7 && __get_cpuid_count(7, 0, &a, &b, &c, &d) && ((b >> 23) & 1);
  }
  return have;
}

__attribute__((target("clflushopt"))) static void tune__evict_opt(const char *p, size_t n) {
  for (size_t off = 0; off < n; off += 64) _mm_clflushopt((void *)(p + off));
}

static void tune__evict(const char *p, size_t n) {
  for (size_t off = 0; off < n; off += 64) _mm_clflush(p + off);
}
#endif

/* The cache flush between repeats, as AutoTVM's x86 runner: every argument but the first (the input, which
 * in a network the previous layer has just written, so it is warm) is evicted line by line (CLFLUSHOPT where
 * the CPU has it, else CLFLUSH), so weights, bias, residual and output start cold as they do in a network run.
 * Other architectures write a buffer of twice the L3; on x86 that left the caches full of dirty lines whose
 * write-backs the timed kernel paid for, and evicted the input too: the fallback of resnet-18's 14x14 -> 7x7
 * conv timed 2.49 ms alone and 1.22 ms inside the network. */
static void tune__flush_cache(tune_worker *w) {
#if defined(__x86_64__) || defined(__i386__)
  int opt = tune__has_clflushopt();
  for (int i = 1; i < w->layout.nbufs; i++) {
    const char *p = (const char *)w->bufs[i];
    if (!p) continue;
    size_t n = (size_t)w->live_n[i] * sizeof(float);
    if (opt)
      tune__evict_opt(p, n);
    else
      tune__evict(p, n);
  }
  _mm_mfence();
#else
  if (!w->flush) {
    long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    size_t n = (size_t)(l2 > 0 ? l2 : 1 << 20) * 4;
    if (l3 > 0 && (size_t)l3 * 2 > n && l3 <= (64 << 20)) n = (size_t)l3 * 2;
    w->flush = malloc(n);
    if (!w->flush) return;
    w->flush_n = n;
  }
  static volatile char sink;
  memset(w->flush, (int)(tune__now() * 1000) & 0x7f, w->flush_n);
  sink = w->flush[w->flush_n / 2];
  (void)sink;
#endif
}

static void tune__worker_run(tune_worker *w, const tune_req *q, tune_rep *rep) {
  tune_result *res = &rep->res;
  res->cost_mean_s = 1e9;
  if (!w->have_task) {
    res->error_class = TC_ERROR_CLASS_UNKNOWN;
    snprintf(res->msg, sizeof res->msg, "no task set");
    return;
  }
  tune_kernel_fn f = tune__worker_sym(w, q->so_path, q->fn, res->msg, sizeof res->msg);
  if (!f) {
    res->error_class = TC_ERROR_CLASS_COMPILE_HOST;
    return;
  }
  if (tune__pack(w, &q->pack, res->msg, sizeof res->msg) != 0) {
    res->error_class = TC_ERROR_CLASS_RUNTIME_DEVICE;
    return;
  }
  tune__run_checked(w, f); /* also the warm-up call, which is not timed */
  if (!tune__guards_intact(w)) {
    res->error_class = TC_ERROR_CLASS_RUNTIME_DEVICE;
    snprintf(res->msg, sizeof res->msg, "kernel wrote past the end of a buffer");
    return;
  }
  for (int i = 0; i < w->layout.nbufs; i++) {
    if (!w->layout.is_output[i] || !w->bufs[i]) continue;
    double maxref = 0;
    for (int64_t j = 0; j < w->layout.nelems[i]; j++)
      if (isfinite(w->ref[i][j])) maxref = fmax(maxref, fabs(w->ref[i][j]));
    for (int64_t j = 0; j < w->layout.nelems[i]; j++) {
      double a = w->bufs[i][j], r = w->ref[i][j];
      /* an infinite reference needs the same infinity; NaN fails */
      if (isinf(r) ? a != r : !(fabs(a - r) <= q->atol * maxref + q->rtol * fabs(r))) {
        res->error_class = TC_ERROR_CLASS_WRONG_ANSWER;
        snprintf(res->msg, sizeof res->msg, "output %d[%lld] = %g, expected %g", i, (long long)j, a, r);
        return;
      }
    }
  }
  int number = q->number > 0 ? q->number : 1;
  int repeat = q->repeat > 0 ? q->repeat : 1;
  double min_s = q->min_repeat_ms > 0 ? q->min_repeat_ms / 1000.0 : 0;
  void *const *args = (void *const *)w->bufs;
  /* Grow number until one repeat lasts min_repeat_ms (AutoTVM re-runs the repeat with a larger number). */
  for (;;) {
    if (q->cache_flush) tune__flush_cache(w);
    double t0 = tune__now();
    for (int k = 0; k < number; k++) f(args);
    double el = tune__now() - t0;
    if (el >= min_s || number >= (1 << 24)) break;
    double grow = el > 0 ? min_s / el * 1.1 : 16;
    int next = (int)fmin((double)(1 << 24), ceil(number * fmax(2.0, grow)));
    number = next > number ? next : number + 1;
  }
  double t[1024];
  if (repeat > 1024) repeat = 1024;
  for (int r = 0; r < repeat; r++) {
    if (q->cache_flush) tune__flush_cache(w);
    double t0 = tune__now();
    for (int k = 0; k < number; k++) f(args);
    t[r] = (tune__now() - t0) / number;
  }
  int lo = 0, hi = 0;
  for (int r = 1; r < repeat; r++) {
    if (t[r] < t[lo]) lo = r;
    if (t[r] > t[hi]) hi = r;
  }
  if (lo == hi) hi = lo == 0 ? 1 : 0;
  double sum = 0, sq = 0;
  int n = 0;
  for (int r = 0; r < repeat; r++) {
    if (repeat > 2 && (r == lo || r == hi)) continue;
    sum += t[r];
    n++;
  }
  double mean = sum / n;
  for (int r = 0; r < repeat; r++) {
    if (repeat > 2 && (r == lo || r == hi)) continue;
    sq += (t[r] - mean) * (t[r] - mean);
  }
  res->error_class = TC_ERROR_CLASS_NONE;
  res->cost_mean_s = mean;
  res->cost_std_s = n > 1 ? sqrt(sq / (n - 1)) : 0;
  res->number = number;
}

/* TUNE_REQ_CUDA: one candidate timed by its backend; TUNE_REQ_CUDA_REF: only the workload's
 * reference. */
static void tune__worker_cuda(const tune_req *q, tune_rep *rep) {
  tune_result *res = &rep->res;
  res->cost_mean_s = 1e9;
  res->error_class = TC_ERROR_CLASS_INSTANTIATION;
  char target[sizeof q->target + 1];
  memcpy(target, q->target, sizeof q->target);
  target[sizeof q->target] = 0;
  tc_backend_target t;
  if (tc_backend_target_parse(target, &t) != TH_OK) {
    snprintf(res->msg, sizeof res->msg, "bad target '%.64s'", target);
    return;
  }
  tc_measure_opts o;
  tc_measure_opts_default(&o);
  if (q->number > 0) o.number = q->number;
  if (q->repeat > 0) o.repeat = q->repeat;
  o.min_repeat_ms = q->min_repeat_ms > 0 ? q->min_repeat_ms : 0;
  if (q->timeout_s > 0) o.timeout_s = q->timeout_s;
  o.rtol = q->rtol;
  o.atol = q->atol;
  o.seed = q->seed ? q->seed : 1;
  o.check = 1;
  o.cache_flush = q->cache_flush;
  char ref_dir[sizeof q->ref_dir + 1];
  memcpy(ref_dir, q->ref_dir, sizeof q->ref_dir);
  ref_dir[sizeof q->ref_dir] = 0;
  o.ref_dir = ref_dir[0] ? ref_dir : NULL;
  o.reference_only = q->type == TUNE_REQ_CUDA_REF;
  char *image = NULL; /* the build stage's image; without one the backend compiles the candidate */
  size_t image_len = 0;
  if (q->so_path[0] && th_read_file(q->so_path, (size_t)1 << 28, &image, &image_len) == TH_OK) {
    o.image = image;
    o.image_len = image_len;
  }
  tc_measure_result r;
  memset(&r, 0, sizeof r);
  th_status rc = tc_backend_measure(&t, &q->wl, &q->cfg, &o, &r);
  free(image);
  if (o.reference_only) {
    rep->ok = rc == TH_OK;
    res->error_class = rc == TH_OK ? TC_ERROR_CLASS_NONE : TC_ERROR_CLASS_INSTANTIATION;
    snprintf(res->msg, sizeof res->msg, "%.159s", r.msg[0] ? r.msg : th_status_str(rc));
    return;
  }
  if (rc != TH_OK) {
    res->error_class =
        rc == TH_ERR_INVALID ? TC_ERROR_CLASS_INSTANTIATION : TC_ERROR_CLASS_RUNTIME_DEVICE;
    snprintf(res->msg, sizeof res->msg, "%.159s", r.msg[0] ? r.msg : th_status_str(rc));
    return;
  }
  res->error_class = r.error_class;
  res->cost_mean_s = r.error_class == TC_ERROR_CLASS_NONE ? r.cost_mean_s : 1e9;
  res->cost_std_s = r.error_class == TC_ERROR_CLASS_NONE ? r.cost_std_s : 0;
  res->number = r.number;
  snprintf(res->msg, sizeof res->msg, "%.159s", r.msg);
  rep->ok = 1;
}

static void tune__worker_device(const tune_req *q, tune_rep *rep) {
  char name[sizeof q->target + 1];
  memcpy(name, q->target, sizeof q->target);
  name[sizeof q->target] = 0;
  const tc_backend *b = tc_backend_find(name, rep->dev_err, sizeof rep->dev_err);
  rep->ok = b && tc_backend_device(b, &rep->dev, rep->dev_err, sizeof rep->dev_err) == TH_OK;
}

/* A whole model, timed by the compiler's own loop (tc_time_model) in this process, so that a model that crashes
 * or hangs takes only the worker with it. */
static void tune__worker_model(const tune_req *q, tune_rep *rep) {
  char *params = NULL;
  size_t n = 0;
  th_status rc = th_read_file(q->params_path, (size_t)1 << 34, &params, &n);
  if (rc != TH_OK)
    snprintf(rep->dev_err, sizeof rep->dev_err, "cannot read the model's params.bin: %s", th_status_str(rc));
  if (rc == TH_OK) rc = tc_time_model(q->so_path, params, n, &q->timing, &rep->stats, rep->dev_err, sizeof rep->dev_err);
  free(params);
  tc_run_stats_free(&rep->stats); /* no per-call times or manifest travel */
  rep->status = rc;
  rep->ok = rc == TH_OK;
}

int tune_measure_worker_main(int in_fd, int out_fd) {
  if (out_fd == 1) { /* keep the protocol off stdout: a printing kernel must not corrupt it */
    int fd = dup(1);
    if (fd < 0) return 1;
    dup2(2, 1);
    out_fd = fd;
  }
  tune_worker w;
  memset(&w, 0, sizeof w);
  tune_req *q = malloc(sizeof *q);
  if (!q) return 1;
  int rc = 0;
  for (;;) {
    int r = th_read_full(in_fd, q, sizeof *q, -1);
    if (r == 1) break;
    if (r != 0 || q->magic != TUNE_MSG_MAGIC) {
      rc = 1;
      break;
    }
    if (q->type == TUNE_REQ_QUIT) break;
    tune_rep rep;
    memset(&rep, 0, sizeof rep);
    rep.magic = TUNE_MSG_MAGIC;
    if (q->type == TUNE_REQ_TASK)
      tune__worker_task(&w, q, &rep);
    else if (q->type == TUNE_REQ_RUN)
      tune__worker_run(&w, q, &rep);
    else if (q->type == TUNE_REQ_CUDA || q->type == TUNE_REQ_CUDA_REF)
      tune__worker_cuda(q, &rep);
    else if (q->type == TUNE_REQ_CUDA_DEVICE)
      tune__worker_device(q, &rep);
    else if (q->type == TUNE_REQ_MODEL)
      tune__worker_model(q, &rep);
    else
      snprintf(rep.res.msg, sizeof rep.res.msg, "unknown request %u", q->type);
    if (th_write_full(out_fd, &rep, sizeof rep, 1) != 0) {
      rc = 1;
      break;
    }
  }
  tune__worker_free_task(&w);
  if (w.dl) dlclose(w.dl);
  free(w.flush);
  free(q);
  return rc;
}

/* =====================================================================================================
 * Tuner side
 * ===================================================================================================== */
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
  tune_measurer_t *m = calloc(1, sizeof *m);
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
  tune_req *q = calloc(1, sizeof *q);
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
