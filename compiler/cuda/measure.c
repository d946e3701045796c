/* tc_cuda_measure (see tc_cuda_measure.h): candidate -> CUDA C -> NVRTC cubin (or the caller's) ->
 * cuModuleLoadData -> seeded inputs and the tc_cuda_ref_kernel reference (cached per workload in
 * memory and in a folder's file) -> one checked run -> CUDA-event timing with number growth to
 * min_repeat_ms. Every wait polls with a deadline that starts when the device work does, so a
 * hanging kernel ends as RUN_TIMEOUT and a slow CPU reference never does. */
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cu_driver.h"
#include "ops.h"
#include "tc_cuda_measure.h"
#include "th_sha256.h"
#include "th_util.h"

static void tc__fill(float *p, int64_t n, uint64_t *s) {
  for (int64_t i = 0; i < n; i++) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    p[i] = (float)((double)(*s >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
  }
}

/* Waits for the event with a deadline: 0 done, 1 timeout, -1 error (code in *res). */
static int tc__wait(const tc_cu *cu, tc_cu_handle ev, double deadline, tc_cu_result *res) {
  for (;;) {
    tc_cu_result r = cu->EventQuery(ev);
    if (r == 0) return 0;
    if (r != TC_CU_ERROR_NOT_READY) {
      *res = r;
      return -1;
    }
    if (th_now_mono() > deadline) return 1;
    struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
  }
}

/* Device 0's primary context, retained once per process (see tc_cuda_measure.h). */
static tc_cu_handle tc__ctx;
static int tc__ctx_dev = -1;

static tc_cu_result tc__ctx_get(const tc_cu *cu) {
  if (tc__ctx) return cu->CtxSetCurrent(tc__ctx);
  int devno = 0;
  tc_cu_result cr = cu->DeviceGet(&devno, 0);
  if (cr == 0) cr = cu->DevicePrimaryCtxRetain(&tc__ctx, devno);
  if (cr != 0) {
    tc__ctx = NULL;
    return cr;
  }
  tc__ctx_dev = devno;
  return cu->CtxSetCurrent(tc__ctx);
}

/* Releases the last reference: the driver destroys the context with whatever state a failed kernel left. */
static void tc__ctx_drop(const tc_cu *cu) {
  if (!tc__ctx) return;
  cu->DevicePrimaryCtxRelease(tc__ctx_dev);
  tc__ctx = NULL;
  tc__ctx_dev = -1;
}

void (*tc_cuda_ref_hook)(const tc_workload *wl);

/* The reference of the last workload (inputs are a function of the seed), kept for its next
 * candidates. */
static struct {
  char key[1024]; /* tc_workload_key: the struct's padding never decides */
  uint64_t seed;
  float *out;
  int64_t n;
} tc__ref;
static pthread_mutex_t tc__ref_mu = PTHREAD_MUTEX_INITIALIZER;

/* The reference's file in dir: "cuda-ref-<sha256 of key and seed>.bin", holding TC__REF_MAGIC, the
 * key's length, the key, the seed, the element count and the floats. */
#define TC__REF_MAGIC "THCUREF1"
static void tc__ref_path(const char *dir, const char *key, uint64_t seed, char *path, size_t n) {
  th_sha256 h;
  unsigned char d[32];
  char hex[65];
  th_sha256_init(&h);
  th_sha256_update(&h, key, strlen(key));
  th_sha256_update(&h, &seed, sizeof seed);
  th_sha256_final(&h, d);
  th_hex(d, 16, hex);
  snprintf(path, n, "%s/cuda-ref-%s.bin", dir, hex);
}

/* Reads the reference of (key, seed, n floats) from dir into out: 0, or -1 when there is no such
 * file. */
static int tc__ref_load(const char *dir, const char *key, uint64_t seed, int64_t n, float *out) {
  char path[4200], *data = NULL;
  size_t len = 0, klen = strlen(key), head = 8 + sizeof(uint32_t) + klen + 2 * sizeof(uint64_t);
  tc__ref_path(dir, key, seed, path, sizeof path);
  if (th_read_file(path, head + (size_t)n * sizeof(float), &data, &len) != TH_OK) return -1;
  uint32_t kl = 0;
  uint64_t fseed = 0, fn = 0;
  int ok = len == head + (size_t)n * sizeof(float) && memcmp(data, TC__REF_MAGIC, 8) == 0;
  if (ok) {
    memcpy(&kl, data + 8, sizeof kl);
    ok = kl == klen && memcmp(data + 12, key, klen) == 0;
  }
  if (ok) {
    memcpy(&fseed, data + 12 + klen, sizeof fseed);
    memcpy(&fn, data + 12 + klen + 8, sizeof fn);
    ok = fseed == seed && fn == (uint64_t)n;
  }
  if (ok) memcpy(out, data + head, (size_t)n * sizeof(float));
  free(data);
  return ok ? 0 : -1;
}

/* Writes the reference to dir (best effort: without the file a new process computes it again) and
 * removes the other references there: the folder holds the last workload's only, as the memory
 * cache does, so a session's folder never grows with its tasks (vgg's outputs at batch 64 are 800
 * MB each). */
static void tc__ref_store(const char *dir, const char *key, uint64_t seed, int64_t n,
                          const float *ref) {
  char path[4200];
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
    size_t len = strlen(e->d_name);
    if (strncmp(e->d_name, "cuda-ref-", 9) != 0 || len < 13 ||
        strcmp(e->d_name + len - 4, ".bin") != 0)
      continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    unlink(path);
  }
  if (d) closedir(d);
  uint32_t kl = (uint32_t)strlen(key);
  uint64_t un = (uint64_t)n;
  size_t head = 8 + sizeof kl + kl + 2 * sizeof(uint64_t), len = head + (size_t)n * sizeof(float);
  char *data = malloc(len);
  if (!data) return;
  memcpy(data, TC__REF_MAGIC, 8);
  memcpy(data + 8, &kl, sizeof kl);
  memcpy(data + 12, key, kl);
  memcpy(data + 12 + kl, &seed, sizeof seed);
  memcpy(data + 12 + kl + 8, &un, sizeof un);
  memcpy(data + head, ref, (size_t)n * sizeof(float));
  tc__ref_path(dir, key, seed, path, sizeof path);
  (void)th_write_file_atomic(path, data, len);
  free(data);
}

/* The reference output of wl on the seeded inputs host[] into host[out_slot] (n floats,
 * NaN-poisoned by the caller): from this process's cache, else from dir's file (dir may be NULL),
 * else computed by tc_cuda_ref_kernel_threads on every CPU and kept in both. CPU work only: the caller runs it before
 * its deadline starts. */
static th_status tc__reference(const tc_workload *wl, uint64_t seed, const char *dir, float **host,
                               int out_slot, int64_t n) {
  char key[1024];
  th_status rc = tc_workload_key(wl, key, sizeof key);
  if (rc != TH_OK) return rc;
  int have_dir = dir && *dir;
  pthread_mutex_lock(&tc__ref_mu);
  if (tc__ref.out && tc__ref.n == n && tc__ref.seed == seed && strcmp(tc__ref.key, key) == 0) {
    memcpy(host[out_slot], tc__ref.out, (size_t)n * sizeof(float));
    pthread_mutex_unlock(&tc__ref_mu);
    return TH_OK;
  }
  if (!have_dir || tc__ref_load(dir, key, seed, n, host[out_slot]) != 0) {
    if (tc_cuda_ref_hook) tc_cuda_ref_hook(wl);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    rc = tc_cuda_ref_kernel_threads(wl, host, cpus > 0 ? (int)cpus : 1);
    if (rc == TH_OK && have_dir) tc__ref_store(dir, key, seed, n, host[out_slot]);
  }
  float *copy = rc == TH_OK ? realloc(tc__ref.out, (size_t)n * sizeof(float)) : NULL;
  if (copy) { /* no copy: no cache this time */
    memcpy(copy, host[out_slot], (size_t)n * sizeof(float));
    tc__ref.out = copy;
    tc__ref.n = n;
    tc__ref.seed = seed;
    snprintf(tc__ref.key, sizeof tc__ref.key, "%s", key);
  }
  pthread_mutex_unlock(&tc__ref_mu);
  return rc;
}

static int tc__cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

#define TC__FAIL(cls, ...)                                  \
  do {                                                      \
    r->error_class = (cls);                                 \
    snprintf(r->msg, sizeof r->msg, __VA_ARGS__);           \
    goto done;                                              \
  } while (0)

/* Seeded inputs for every argument of wl into host[] (malloc'd), the output slot poisoned with NaN,
 * as the CPU worker does: an element the kernel never writes then fails the check (zeros would pass
 * wherever the reference is 0, after a relu), and the reference, run on the same buffer, leaves NaN
 * where it writes nothing (another part of a concat). */
static th_status tc__inputs(const tc_workload *wl, uint64_t seed, const int64_t *sizes, int nargs,
                            float **host) {
  for (int a = 0; a < nargs; a++) {
    if (sizes[a] == 0) continue;
    host[a] = malloc((size_t)sizes[a] * (size_t)tc_cuda_arg_elem_bytes(wl, a));
    if (!host[a]) return TH_ERR_NOMEM;
    if (a == nargs - 1)
      for (int64_t i = 0; i < sizes[a]; i++) host[a][i] = NAN;
    else if (tc_cuda_arg_elem_bytes(wl, a) == 8)
      tc_cuda_fill_i64(wl, (int64_t *)host[a], sizes[a], &seed);
    else
      tc__fill(host[a], sizes[a], &seed);
  }
  return TH_OK;
}

/* 0 when got matches ref (n floats), else the first index that does not, plus one; *maxrel: the
 * largest difference relative to the scale: the largest finite |ref|, or scale where that is
 * larger. An element the reference left NaN must stay NaN; an infinite one needs the same infinity.
 */
static int64_t tc__compare(const float *got, const float *ref, int64_t n, double atol, double rtol,
                           double scale, double *maxrel) {
  double maxref = scale;
  *maxrel = 0;
  for (int64_t i = 0; i < n; i++)
    if (isfinite(ref[i])) maxref = fmax(maxref, fabs(ref[i]));
  for (int64_t i = 0; i < n; i++) {
    double d = fabs((double)got[i] - ref[i]);
    int ok = isnan(ref[i])   ? isnan(got[i])
             : isinf(ref[i]) ? got[i] == ref[i]
                             : d <= atol * maxref + rtol * fabs(ref[i]);
    if (!ok) return i + 1;
    if (maxref > 0 && isfinite(ref[i])) *maxrel = fmax(*maxrel, d / maxref);
  }
  return 0;
}

/* TF32 (issue 25): a tf32 GEMM rounds its inputs to 10 mantissa bits, so its error against the fp32
 * reference grows like sqrt(K) times the operands: up to about 4e-4 of the largest product
 * (compiler_cuda.emulated_tf32_gemm), where the fp32 check's 1e-4 relative (the tuner's 1e-3
 * relative plus 1e-4 of the largest output) failed correct kernels. A tf32 workload is checked
 * within at least TC_CUDA_TF32_ATOL of its scale plus as much relative, and the scale counts the
 * product before a bounding activation (clip, sigmoid, tanh, hard sigmoid), which shrinks the
 * output but not the error. */
/* *scale: the largest |output| of wl without its activation when the activation bounds the output
 * (host: the inputs, the reference in out_slot), else 0. */
static th_status tc__tf32_scale(const tc_workload *wl, float *const *host, int out_slot, int64_t n,
                                double *scale) {
  *scale = 0;
  if (!(wl->epilogue & (TC_EPI_CLIP | TC_EPI_SIGMOID | TC_EPI_TANH | TC_EPI_HARD_SIGMOID)))
    return TH_OK;
  tc_workload lin = *wl;
  lin.epilogue &= TC_EPI_BIAS | TC_EPI_RESIDUAL;
  float *args[5];
  memcpy(args, host, sizeof args);
  args[out_slot] = malloc((size_t)n * sizeof(float));
  if (!args[out_slot]) return TH_ERR_NOMEM;
  th_status rc = tc_cuda_ref_kernel(&lin, args);
  for (int64_t i = 0; rc == TH_OK && i < n; i++)
    if (isfinite(args[out_slot][i])) *scale = fmax(*scale, fabs(args[out_slot][i]));
  free(args[out_slot]);
  return rc;
}

/* One run of a candidate: its kernel, then the second kernel of a split-k config. */
static tc_cu_result tc__launch(const tc_cu *cu, tc_cu_handle fn, tc_cu_handle post, const tc_cuda_launch *l,
                               tc_cu_handle stream, void **params) {
  tc_cu_result cr = cu->LaunchKernel(fn, (unsigned)l->grid[0], (unsigned)l->grid[1], (unsigned)l->grid[2],
                                     (unsigned)l->block[0], (unsigned)l->block[1], (unsigned)l->block[2],
                                     (unsigned)l->dyn_shared, stream, params, NULL);
  if (cr == 0 && post)
    cr = cu->LaunchKernel(post, (unsigned)l->post_grid[0], (unsigned)l->post_grid[1], (unsigned)l->post_grid[2],
                          (unsigned)l->post_block[0], (unsigned)l->post_block[1], (unsigned)l->post_block[2], 0,
                          stream, params, NULL);
  return cr;
}

th_status tc_cuda_measure(const tc_workload *wl, const tc_config *cfg, const tc_cuda_target *t,
                          const tc_measure_opts *opts, tc_measure_result *r) {
  if (!wl || (!cfg && !(opts && opts->reference_only)) || !t || !r) return TH_ERR_INVALID;
  tc_measure_opts o;
  if (opts) o = *opts;
  else tc_measure_opts_default(&o);
  if (o.number < 1) o.number = 1;
  if (o.repeat < 1) o.repeat = 1;
  if (o.timeout_s <= 0) o.timeout_s = 10;
  memset(r, 0, sizeof *r);
  r->cost_mean_s = r->cost_min_s = 1e9;
  uint64_t seed = o.seed ? o.seed : 1;
  int nargs = tc_op_nargs(wl->kernel), out_slot = nargs - 1;
  int64_t sizes[5];
  tc_cuda_arg_sizes(wl, sizes);
  float *host[5] = {0}, *got = NULL;
  double tf32_scale = 0; /* the check's scale floor at tf32 (tc__tf32_scale) */
  th_status rc = TH_OK;
  if (o.reference_only) { /* the reference alone, into the caches: no device needed */
    rc = tc__inputs(wl, seed, sizes, nargs, host);
    if (rc == TH_OK) rc = tc__reference(wl, seed, o.ref_dir, host, out_slot, sizes[out_slot]);
    if (rc != TH_OK)
      snprintf(r->msg, sizeof r->msg, "no CPU reference for this workload: %s", th_status_str(rc));
    for (int a = 0; a < 5; a++) free(host[a]);
    return rc;
  }
  const tc_cu *cu = NULL;
  rc = tc__cu_get(&cu, r->msg, sizeof r->msg);
  if (rc != TH_OK) return rc;
  /* the candidate is checked against this device's own limits when it is the target's arch */
  tc_cuda_target dt = *t;
  tc_cuda_device gpu;
  if (tc_cuda_device_query(&gpu, NULL, 0) == TH_OK) tc_cuda_target_use_device(&dt, &gpu);
  t = &dt;

  tc_cu_ptr dev[6] = {0}, flush = 0; /* the arguments, then a split-k config's scratch */
  size_t flush_n = 0;
  tc_cu_handle mod = NULL, fn = NULL, post = NULL, stream = NULL, ev0 = NULL, ev1 = NULL;
  int have_ctx = 0;
  char *cubin = NULL;
  double *costs = NULL;
  th_buf src;
  th_buf_init(&src, (size_t)64 << 20);
  tc_cuda_launch l;
  char err[4096] = "";
  rc = tc_cuda_prelude(&src);
  th_status kr = rc == TH_OK ? tc_cuda_kernel_source(wl, cfg, t, "th_candidate", &src, &l, err, sizeof err) : rc;
  if (kr == TH_ERR_NOMEM) {
    rc = TH_ERR_NOMEM;
    goto done;
  }
  if (kr != TH_OK) TC__FAIL(TC_ERROR_CLASS_INSTANTIATION, "%s", err);
  double t0 = th_now_mono();
  size_t cubin_len = 0;
  if (!o.image)
    kr = tc_nvrtc_compile(src.data, "candidate.cu", t, &cubin, &cubin_len, NULL, NULL, err, sizeof err);
  r->compile_s = th_now_mono() - t0;
  if (kr == TH_ERR_UNSUPPORTED) {
    snprintf(r->msg, sizeof r->msg, "%s", err);
    rc = kr;
    goto done;
  }
  if (kr != TH_OK) TC__FAIL(TC_ERROR_CLASS_COMPILE_DEVICE, "%s", err);

  tc_cu_result cr = tc__ctx_get(cu);
  have_ctx = tc__ctx != NULL;
  if (cr != 0) {
    snprintf(r->msg, sizeof r->msg, "no CUDA device: cannot open a context (%s)", tc__cu_errstr(cu, cr));
    rc = TH_ERR_UNSUPPORTED;
    goto done;
  }
  cr = cu->ModuleLoadData(&mod, o.image ? o.image : cubin);
  if (cr != 0) TC__FAIL(TC_ERROR_CLASS_COMPILE_DEVICE, "cuModuleLoadData (%s): %s", t->arch, tc__cu_errstr(cu, cr));
  cr = cu->ModuleGetFunction(&fn, mod, "th_candidate");
  if (cr == 0 && l.scratch_floats > 0) cr = cu->ModuleGetFunction(&post, mod, "th_candidate_r");
  if (cr != 0) TC__FAIL(TC_ERROR_CLASS_COMPILE_DEVICE, "cuModuleGetFunction: %s", tc__cu_errstr(cu, cr));
  if (l.dyn_shared > 48 * 1024) { /* tc_cuda_valid held it to the device's opt-in maximum */
    cr = cu->FuncSetAttribute(fn, TC_CU_FUNC_ATTR_MAX_DYNAMIC_SHARED, l.dyn_shared);
    if (cr != 0)
      TC__FAIL(TC_ERROR_CLASS_RUNTIME_DEVICE, "cuFuncSetAttribute(%d bytes of dynamic shared memory): %s",
               l.dyn_shared, tc__cu_errstr(cu, cr));
  }

  /* the inputs and the reference, on the CPU before the deadline starts: the naive reference of a
   * large workload (vgg's convolutions at batch 4 and up) alone takes longer than the timeout */
  rc = tc__inputs(wl, seed, sizes, nargs, host);
  if (rc != TH_OK) goto done;
  if (o.check) {
    got = malloc((size_t)sizes[out_slot] * sizeof(float));
    if (!got) {
      rc = TH_ERR_NOMEM;
      goto done;
    }
    /* got holds the poisoned output to upload; host's output slot gets the reference */
    memcpy(got, host[out_slot], (size_t)sizes[out_slot] * sizeof(float));
    th_status fr = tc__reference(wl, seed, o.ref_dir, host, out_slot, sizes[out_slot]);
    if (fr == TH_ERR_NOMEM) {
      rc = fr;
      goto done;
    }
    if (fr != TH_OK) TC__FAIL(TC_ERROR_CLASS_INSTANTIATION, "no CPU reference for this workload");
    /* a negative tolerance (a caller asking for a failing check) stays as it is */
    if (wl->precision == TC_PRECISION_TF32 && o.atol >= 0 && o.rtol >= 0) {
      o.atol = fmax(o.atol, TC_CUDA_TF32_ATOL);
      o.rtol = fmax(o.rtol, TC_CUDA_TF32_ATOL);
      fr = tc__tf32_scale(wl, host, out_slot, sizes[out_slot], &tf32_scale);
      if (fr == TH_ERR_NOMEM) {
        rc = fr;
        goto done;
      }
      if (fr != TH_OK) TC__FAIL(TC_ERROR_CLASS_INSTANTIATION, "no CPU reference for this workload");
    }
  }
  void *params[6] = {0}; /* past nargs: NULL (the fake driver reads up to the first NULL) */
  for (int a = 0; a < nargs; a++) {
    params[a] = &dev[a];
    if (sizes[a] == 0) continue;
    size_t bytes = (size_t)sizes[a] * (size_t)tc_cuda_arg_elem_bytes(wl, a);
    cr = cu->MemAlloc(&dev[a], bytes);
    if (cr == 0) cr = cu->MemcpyHtoD(dev[a], a == out_slot && got ? got : host[a], bytes);
    if (cr != 0)
      TC__FAIL(TC_ERROR_CLASS_RUNTIME_DEVICE, "allocating %lld floats: %s", (long long)sizes[a],
               tc__cu_errstr(cu, cr));
  }
  if (l.scratch_floats > 0) { /* split-k: the partial sums between the two kernels */
    params[nargs] = &dev[nargs];
    cr = cu->MemAlloc(&dev[nargs], (size_t)l.scratch_floats * sizeof(float));
    if (cr != 0)
      TC__FAIL(TC_ERROR_CLASS_RUNTIME_DEVICE, "allocating %lld floats of scratch: %s",
               (long long)l.scratch_floats, tc__cu_errstr(cu, cr));
  }
  /* the arguments' cuMemcpyHtoD from pageable memory return once the bytes are staged; the timing
   * stream is non-blocking (it does not wait for the legacy stream), so wait for them to land */
  cr = cu->StreamSynchronize(NULL);
  if (cr == 0) cr = cu->StreamCreate(&stream, 1);
  if (cr == 0) cr = cu->EventCreate(&ev0, 0);
  if (cr == 0) cr = cu->EventCreate(&ev1, 0);
  if (cr != 0) TC__FAIL(TC_ERROR_CLASS_RUNTIME_DEVICE, "stream/events: %s", tc__cu_errstr(cu, cr));
  /* The L2 flush, as the CPU worker evicts its caches between repeats: a buffer twice the L2 is
   * written on the stream before each repeat, so that a repeat starts with the weights and the
   * output cold, as a layer in a network does after the layers before it went through the L2 (one
   * repeat's number launches then share what the first one loaded). Without the memory for it, the
   * timing goes on unflushed. */
  if (o.cache_flush && t->l2_bytes > 0) {
    flush_n = (size_t)t->l2_bytes * 2;
    if (cu->MemAlloc(&flush, flush_n) != 0) flush = 0;
  }
  /* the deadline covers the device work only */
  double deadline = th_now_mono() + o.timeout_s;
  /* a candidate is one kernel, or a split-k config's two */
#define TC__LAUNCH() tc__launch(cu, fn, post, &l, stream, params)

  /* one checked run */
  cr = TC__LAUNCH();
  if (cr == 0) cr = cu->EventRecord(ev1, stream);
  if (cr != 0) TC__FAIL(TC_ERROR_CLASS_RUNTIME_DEVICE, "launch: %s", tc__cu_errstr(cu, cr));
  int w = tc__wait(cu, ev1, deadline, &cr);
  if (w > 0) TC__FAIL(TC_ERROR_CLASS_RUN_TIMEOUT, "the first run did not finish within %.1f s", o.timeout_s);
  if (w < 0) TC__FAIL(TC_ERROR_CLASS_RUNTIME_DEVICE, "run: %s", tc__cu_errstr(cu, cr));
  if (o.check) {
    cr = cu->MemcpyDtoH(got, dev[out_slot], (size_t)sizes[out_slot] * sizeof(float));
    if (cr != 0) TC__FAIL(TC_ERROR_CLASS_RUNTIME_DEVICE, "reading the output: %s", tc__cu_errstr(cu, cr));
    int64_t bad = tc__compare(got, host[out_slot], sizes[out_slot], o.atol, o.rtol, tf32_scale,
                              &r->max_rel_err);
    if (bad > 0)
      TC__FAIL(TC_ERROR_CLASS_WRONG_ANSWER, "output %lld: got %.8g, reference %.8g",
               (long long)(bad - 1), got[bad - 1], host[out_slot][bad - 1]);
  }

  /* timing: grow number until a repeat lasts min_repeat_ms, then repeat */
  int number = o.number;
  costs = calloc((size_t)o.repeat, sizeof *costs);
  if (!costs) {
    rc = TH_ERR_NOMEM;
    goto done;
  }
  for (int rep = 0; rep < o.repeat;) {
    cr = flush ? cu->MemsetD8Async(flush, (unsigned char)(rep + 1), flush_n, stream) : 0;
    if (cr == 0) cr = cu->EventRecord(ev0, stream);
    for (int k = 0; cr == 0 && k < number; k++) cr = TC__LAUNCH();
    if (cr == 0) cr = cu->EventRecord(ev1, stream);
    if (cr != 0) TC__FAIL(TC_ERROR_CLASS_RUNTIME_DEVICE, "launch: %s", tc__cu_errstr(cu, cr));
    w = tc__wait(cu, ev1, deadline, &cr);
    if (w > 0) TC__FAIL(TC_ERROR_CLASS_RUN_TIMEOUT, "timing ran past %.1f s", o.timeout_s);
    if (w < 0) TC__FAIL(TC_ERROR_CLASS_RUNTIME_DEVICE, "run: %s", tc__cu_errstr(cu, cr));
    float ms = 0;
    cr = cu->EventElapsedTime(&ms, ev0, ev1);
    if (cr != 0) TC__FAIL(TC_ERROR_CLASS_RUNTIME_DEVICE, "cuEventElapsedTime: %s", tc__cu_errstr(cu, cr));
    if (ms < o.min_repeat_ms && number < (1 << 24)) {
      double grow = ms > 0 ? 1.5 * o.min_repeat_ms / ms : 8;
      number = (int)fmin((double)number * fmax(grow, 2.0), (double)(1 << 24));
      continue;
    }
    costs[rep++] = ms * 1e-3 / number;
  }
  int n = o.repeat, lo = 0;
  qsort(costs, (size_t)n, sizeof *costs, tc__cmp);
  r->cost_min_s = costs[0];
  if (n > 2) lo = 1, n -= 2;
  double s = 0, s2 = 0;
  for (int i = lo; i < lo + n; i++) s += costs[i];
  double mean = s / n;
  for (int i = lo; i < lo + n; i++) s2 += (costs[i] - mean) * (costs[i] - mean);
  r->cost_mean_s = mean;
  r->cost_std_s = n > 1 ? sqrt(s2 / (n - 1)) : 0;
  r->number = number;
  r->repeat = o.repeat;
  r->error_class = TC_ERROR_CLASS_NONE;
done:
  if (r->error_class != TC_ERROR_CLASS_NONE) r->cost_mean_s = 1e9;
  if (have_ctx) {
    cu->CtxSetCurrent(tc__ctx);
    if (ev0) cu->EventDestroy(ev0);
    if (ev1) cu->EventDestroy(ev1);
    if (stream) cu->StreamDestroy(stream);
    for (int a = 0; a < 6; a++)
      if (dev[a]) cu->MemFree(dev[a]);
    if (flush) cu->MemFree(flush);
    if (mod) cu->ModuleUnload(mod);
    /* a kernel that faulted or hung leaves the context unusable: a fresh one for the next candidate */
    if (r->error_class == TC_ERROR_CLASS_RUNTIME_DEVICE || r->error_class == TC_ERROR_CLASS_RUN_TIMEOUT ||
        rc == TH_ERR_UNSUPPORTED)
      tc__ctx_drop(cu);
  }
  for (int a = 0; a < 5; a++) free(host[a]);
  free(got);
  free(costs);
  free(cubin);
  th_buf_free(&src);
  return rc;
}
