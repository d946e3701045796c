/* The measurement worker: the child side of measure.c's process boundary. It loads candidate libraries,
 * runs each with guard bytes around every buffer, checks its output against the reference and times it;
 * device candidates and whole models are timed by their backend here. Everything that can go wrong inside
 * a candidate (crash, hang, garbage output, writes past a buffer) is confined to this process. */
#include "measure_proto.h"

#include <dlfcn.h>
#include <math.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <emmintrin.h>
#include <immintrin.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "th_alloc.h"
#include "th_util.h"

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
    w->bufs[i] = th_aligned_alloc(64, tune__round64((size_t)n * sizeof(float) + TUNE_GUARD_BYTES));
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
    if (!w->layout.packed[i]) w->bufs[i] = th_aligned_alloc(64, tune__round64(bytes + TUNE_GUARD_BYTES));
    w->pristine[i] = th_malloc(bytes);
    if (w->layout.is_output[i]) w->ref[i] = th_malloc(bytes);
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
    w->flush = th_malloc(n);
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
  tune_req *q = th_malloc(sizeof *q);
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
