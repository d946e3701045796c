/* tc_cuda_measure (see tc_cuda_measure.h): candidate -> CUDA C -> NVRTC cubin (or the caller's) ->
 * cuModuleLoadData -> seeded inputs -> one checked run against tc_cuda_ref_kernel (cached per workload) ->
 * CUDA-event timing with number growth to min_repeat_ms. Every wait polls with a deadline, so a hanging
 * kernel ends as RUN_TIMEOUT. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cu_driver.h"
#include "ops.h"
#include "tc_cuda_measure.h"
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

/* The last workload's reference output (inputs are a function of the seed). */
static struct {
  tc_workload wl;
  uint64_t seed;
  float *out;
  int64_t n;
} tc__ref;

static th_status tc__reference(const tc_workload *wl, uint64_t seed, float **host, int out_slot, int64_t n) {
  if (tc__ref.out && tc__ref.n == n && tc__ref.seed == seed && memcmp(&tc__ref.wl, wl, sizeof *wl) == 0) {
    memcpy(host[out_slot], tc__ref.out, (size_t)n * sizeof(float));
    return TH_OK;
  }
  th_status rc = tc_cuda_ref_kernel(wl, host);
  if (rc != TH_OK) return rc;
  float *copy = realloc(tc__ref.out, (size_t)n * sizeof(float));
  if (!copy) return TH_OK; /* no cache this time */
  memcpy(copy, host[out_slot], (size_t)n * sizeof(float));
  tc__ref.out = copy;
  tc__ref.n = n;
  tc__ref.seed = seed;
  tc__ref.wl = *wl;
  return TH_OK;
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

th_status tc_cuda_measure(const tc_workload *wl, const tc_config *cfg, const tc_cuda_target *t,
                          const tc_measure_opts *opts, tc_measure_result *r) {
  if (!wl || !cfg || !t || !r) return TH_ERR_INVALID;
  tc_measure_opts o;
  if (opts) o = *opts;
  else tc_measure_opts_default(&o);
  if (o.number < 1) o.number = 1;
  if (o.repeat < 1) o.repeat = 1;
  if (o.timeout_s <= 0) o.timeout_s = 10;
  memset(r, 0, sizeof *r);
  r->cost_mean_s = r->cost_min_s = 1e9;
  const tc_cu *cu = NULL;
  th_status rc = tc__cu_get(&cu, r->msg, sizeof r->msg);
  if (rc != TH_OK) return rc;
  /* the candidate is checked against this device's own limits when it is the target's arch */
  tc_cuda_target dt = *t;
  tc_cuda_device gpu;
  if (tc_cuda_device_query(&gpu, NULL, 0) == TH_OK) tc_cuda_target_use_device(&dt, &gpu);
  t = &dt;

  int nargs = tc_op_nargs(wl->kernel), out_slot = nargs - 1;
  int64_t sizes[5];
  tc_cuda_arg_sizes(wl, sizes);
  float *host[5] = {0}, *got = NULL;
  tc_cu_ptr dev[5] = {0};
  tc_cu_handle mod = NULL, fn = NULL, stream = NULL, ev0 = NULL, ev1 = NULL;
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
  if (cr != 0) TC__FAIL(TC_ERROR_CLASS_COMPILE_DEVICE, "cuModuleGetFunction: %s", tc__cu_errstr(cu, cr));

  /* buffers: seeded inputs; the output poisoned with NaN, as the CPU worker does, so that an
   * element the kernel never writes fails the check (zeros would pass wherever the reference is 0:
   * after a relu) */
  uint64_t seed = o.seed ? o.seed : 1;
  void *params[5] = {0}; /* past nargs: NULL (the fake driver reads up to the first NULL) */
  for (int a = 0; a < nargs; a++) {
    params[a] = &dev[a];
    if (sizes[a] == 0) continue;
    size_t bytes = (size_t)sizes[a] * (size_t)tc_cuda_arg_elem_bytes(wl, a);
    host[a] = malloc(bytes);
    if (!host[a]) {
      rc = TH_ERR_NOMEM;
      goto done;
    }
    if (a == out_slot)
      for (int64_t i = 0; i < sizes[a]; i++) host[a][i] = NAN;
    else if (tc_cuda_arg_elem_bytes(wl, a) == 8)
      tc_cuda_fill_i64(wl, (int64_t *)host[a], sizes[a], &seed);
    else tc__fill(host[a], sizes[a], &seed);
    cr = cu->MemAlloc(&dev[a], bytes);
    if (cr == 0) cr = cu->MemcpyHtoD(dev[a], host[a], bytes);
    if (cr != 0) TC__FAIL(TC_ERROR_CLASS_RUNTIME_DEVICE, "allocating %lld floats: %s", (long long)sizes[a], tc__cu_errstr(cu, cr));
  }
  cr = cu->StreamCreate(&stream, 1);
  if (cr == 0) cr = cu->EventCreate(&ev0, 0);
  if (cr == 0) cr = cu->EventCreate(&ev1, 0);
  if (cr != 0) TC__FAIL(TC_ERROR_CLASS_RUNTIME_DEVICE, "stream/events: %s", tc__cu_errstr(cu, cr));
  double deadline = th_now_mono() + o.timeout_s;
#define TC__LAUNCH()                                                                                       \
  cu->LaunchKernel(fn, (unsigned)l.grid[0], (unsigned)l.grid[1], (unsigned)l.grid[2], (unsigned)l.block[0], \
                   (unsigned)l.block[1], (unsigned)l.block[2], 0, stream, params, NULL)

  /* one checked run */
  cr = TC__LAUNCH();
  if (cr == 0) cr = cu->EventRecord(ev1, stream);
  if (cr != 0) TC__FAIL(TC_ERROR_CLASS_RUNTIME_DEVICE, "launch: %s", tc__cu_errstr(cu, cr));
  int w = tc__wait(cu, ev1, deadline, &cr);
  if (w > 0) TC__FAIL(TC_ERROR_CLASS_RUN_TIMEOUT, "the first run did not finish within %.1f s", o.timeout_s);
  if (w < 0) TC__FAIL(TC_ERROR_CLASS_RUNTIME_DEVICE, "run: %s", tc__cu_errstr(cu, cr));
  if (o.check) {
    got = malloc((size_t)sizes[out_slot] * sizeof(float));
    if (!got) {
      rc = TH_ERR_NOMEM;
      goto done;
    }
    cr = cu->MemcpyDtoH(got, dev[out_slot], (size_t)sizes[out_slot] * sizeof(float));
    if (cr != 0) TC__FAIL(TC_ERROR_CLASS_RUNTIME_DEVICE, "reading the output: %s", tc__cu_errstr(cu, cr));
    if (tc__reference(wl, o.seed ? o.seed : 1, host, out_slot, sizes[out_slot]) != TH_OK) TC__FAIL(TC_ERROR_CLASS_INSTANTIATION, "no CPU reference for this workload");
    double maxref = 0, maxrel = 0;
    for (int64_t i = 0; i < sizes[out_slot]; i++)
      if (isfinite(host[out_slot][i])) maxref = fmax(maxref, fabs(host[out_slot][i]));
    for (int64_t i = 0; i < sizes[out_slot]; i++) {
      double ref = host[out_slot][i], d = fabs((double)got[i] - ref);
      /* the reference ran on the same NaN-poisoned output: an element it leaves NaN (another part
       * of a concat) must stay unwritten; an infinite one needs the same infinity */
      int ok = isnan(ref)   ? isnan(got[i])
               : isinf(ref) ? got[i] == ref
                            : d <= o.atol * maxref + o.rtol * fabs(ref);
      if (!ok)
        TC__FAIL(TC_ERROR_CLASS_WRONG_ANSWER, "output %lld: got %.8g, reference %.8g", (long long)i, got[i], ref);
      if (maxref > 0 && isfinite(ref)) maxrel = fmax(maxrel, d / maxref);
    }
    r->max_rel_err = maxrel;
  }

  /* timing: grow number until a repeat lasts min_repeat_ms, then repeat */
  int number = o.number;
  costs = calloc((size_t)o.repeat, sizeof *costs);
  if (!costs) {
    rc = TH_ERR_NOMEM;
    goto done;
  }
  for (int rep = 0; rep < o.repeat;) {
    cr = cu->EventRecord(ev0, stream);
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
    for (int a = 0; a < 5; a++)
      if (dev[a]) cu->MemFree(dev[a]);
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
