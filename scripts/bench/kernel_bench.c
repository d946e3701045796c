/* Kernel micro-benchmark: GFLOP/s of the conv2d fallback config on resnet-18's conv shapes (batch 1) and
 * of the dense head, against the machine's FMA peak measured with an FMA loop compiled by the same LLVM
 * backend (one independent accumulator chain per register, all threads). Run via scripts/bench/kernels.sh,
 * which sets TH_NUM_THREADS=2. Prints a table; AutoTVM's tuned figures from autotvm-facts.md are shown
 * beside for reference.
 *
 * Per-layer profile: `kernel_bench NET BATCH` times every distinct kernel of the network (all families,
 * fallback configs, after the graph passes) and prints calls x ms, the share of the summed time and
 * GFLOP/s, heaviest first, so one sees where an inference's time goes.
 * On a shared, loaded machine wall time is noise: the "cyc%" column is the calling thread's user-mode
 * cycles (perf_event_open) per call against the peak loop's FLOP per cycle, which descheduling does not
 * skew (the calling thread does 1/threads of the work).
 * TH_BENCH_REPS=n takes the best of n samples (default 5).
 * Experiments: TH_BENCH_CASE=i TH_BENCH_CFG=a,b,c,... times case (or task) i with the given knob value
 * indices instead of the fallback. TH_BENCH_OBJ=path keeps the kernels' object file there (objdump -d). */
#include <dlfcn.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ops.h"
#include "tc.h"
#include "llvm/tc_llvm.h"
#include "th_util.h"

typedef void (*kfn)(void *const *);

static tc_workload conv(int c, int hw, int oc, int k, int s, int p) {
  tc_workload w;
  memset(&w, 0, sizeof w);
  w.kernel = TC_KERNEL_CONV2D;
  w.n = 1;
  w.c = c;
  w.h = w.w = hw;
  w.oc = oc;
  w.kh = w.kw = k;
  w.sh = w.sw = s;
  w.pt = w.pl = w.pb = w.pr = p;
  w.oh = w.ow = (hw + 2 * p - k) / s + 1;
  w.in_cb = tc_channel_block(c, 16);
  w.out_cb = tc_channel_block(oc, 16);
  w.epilogue = TC_EPI_BIAS | TC_EPI_RELU;
  return w;
}

/* The peak kernel: `chains` accumulators x `iters` FMAs per task, two tasks per thread. */
static const tc_stmt *peak_kernel(tc_ir *ir, int lanes, int chains, int64_t iters, int tasks) {
  tc_type vt = tc_type_f32(lanes);
  tc_var *out = tc_var_buffer(ir, "out", tc_type_f32(1), 0);
  tc_var *acc = tc_var_buffer(ir, "acc", vt, -1);
  tc_var *t = tc_var_new(ir, "t", tc_type_int()), *i = tc_var_new(ir, "i", tc_type_int());
  tc_var *k = tc_var_new(ir, "k", tc_type_int()), *k2 = tc_var_new(ir, "k", tc_type_int());
  tc_var *k3 = tc_var_new(ir, "k", tc_type_int());
  const tc_expr *x = tc_e_broadcast(ir, tc_e_float(ir, 0.999999), lanes);
  const tc_expr *y = tc_e_broadcast(ir, tc_e_float(ir, 1e-7), lanes);
  const tc_stmt *init = tc_s_for(ir, k, tc_e_int(ir, 0), tc_e_int(ir, chains), TC_FOR_UNROLLED,
                                 tc_s_store(ir, acc, tc_e_var(ir, k),
                                            tc_e_broadcast(ir, tc_e_cast(ir, tc_type_f32(1), tc_e_var(ir, k)), lanes), 64));
  const tc_stmt *body = tc_s_for(
      ir, i, tc_e_int(ir, 0), tc_e_int(ir, iters), TC_FOR_SERIAL,
      tc_s_for(ir, k2, tc_e_int(ir, 0), tc_e_int(ir, chains), TC_FOR_UNROLLED,
               tc_s_store(ir, acc, tc_e_var(ir, k2),
                          tc_e_fma(ir, tc_e_load(ir, acc, tc_e_var(ir, k2), 1, 64), x, y), 64)));
  const tc_stmt *fin = tc_s_for(
      ir, k3, tc_e_int(ir, 0), tc_e_int(ir, chains), TC_FOR_UNROLLED,
      tc_s_store(ir, out, tc_e_mul(ir, tc_e_add(ir, tc_e_mul(ir, tc_e_var(ir, t), tc_e_int(ir, chains)), tc_e_var(ir, k3)), tc_e_int(ir, lanes)),
                 tc_e_load(ir, acc, tc_e_var(ir, k3), 1, 64), 4));
  const tc_stmt *items[3] = {init, body, fin};
  return tc_s_for(ir, t, tc_e_int(ir, 0), tc_e_int(ir, tasks), TC_FOR_PARALLEL,
                  tc_s_allocate(ir, acc, chains, TC_SCOPE_LOCAL, tc_s_seq(ir, 3, items)));
}

static int cyc_fd = -1;

static uint64_t cycles_now(void) {
  uint64_t c = 0;
  if (cyc_fd < 0 || read(cyc_fd, &c, sizeof c) != (ssize_t)sizeof c) return 0;
  return c;
}

/* Best wall seconds per call; *cyc gets the best calling-thread cycles per call (0 without perf). */
static double time_kernel(kfn f, void *const *args, double min_s, double *cyc) {
  f(args); /* warm-up */
  double best = 1e30, bestc = 1e300;
  const char *re = getenv("TH_BENCH_REPS"); /* more, shorter samples: a better minimum on a busy machine */
  int reps = re ? (int)strtol(re, NULL, 10) : 5;
  if (reps < 1) reps = 1;
  for (int rep = 0; rep < reps; rep++) {
    int n = 0;
    double t0 = th_now_mono(), t1;
    uint64_t c0 = cycles_now();
    do {
      f(args);
      n++;
      t1 = th_now_mono();
    } while (t1 - t0 < min_s / reps);
    double per = (t1 - t0) / n, perc = (double)(cycles_now() - c0) / n;
    if (per < best) best = per;
    if (perc < bestc) bestc = perc;
  }
  *cyc = cyc_fd < 0 ? 0 : bestc;
  return best;
}

/* Applies TH_BENCH_CFG ("a,b,c,...": knob value indices) to *c when TH_BENCH_CASE names case i. */
static void override_cfg(int i, const tc_space *s, tc_config *c) {
  const char *ci = getenv("TH_BENCH_CASE"), *cf = getenv("TH_BENCH_CFG");
  if (!ci || !cf || (int)strtol(ci, NULL, 10) != i) return;
  const char *p = cf;
  for (int k = 0; k < s->nknobs && *p; k++) {
    char *end = NULL;
    long v = strtol(p, &end, 10);
    if (end == p) break;
    if (v >= 0 && v < s->knobs[k].nvalues) c->idx[k] = (int)v;
    p = *end == ',' ? end + 1 : end;
  }
}

int main(int argc, char **argv) {
  tc_target t;
  if (tc_target_host(&t) != TH_OK) return 1;
  const char *nt = getenv("TH_NUM_THREADS");
  int threads = nt ? (int)strtol(nt, NULL, 10) : (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (threads < 1) threads = 1;
  enum { MAXC = 128 };
  struct bcase {
    char name[64];
    tc_workload wl;
    double tvm;
    int count;
  } *cases = calloc(MAXC, sizeof *cases);
  int n = 0;
  const char *net = argc >= 3 ? argv[1] : NULL;
  if (net) {
    tc_task *tasks = NULL;
    int nt_ = 0;
    tc_backend_target bt;
    th_status rc = tc_backend_target_init(tc_backend_default(), NULL, &bt, NULL, 0);
    if (rc == TH_OK) rc = tc_network_tasks(&bt, &(tc_netsrc){net, NULL, NULL}, (int)strtol(argv[2], NULL, 10), &tasks, &nt_);
    if (rc != TH_OK) {
      fprintf(stderr, "%s: %s\n", net, th_status_str(rc));
      return 1;
    }
    for (int i = 0; i < nt_ && n < MAXC; i++, n++) {
      const tc_workload *w = &tasks[i].wl;
      cases[n].wl = *w;
      cases[n].count = tasks[i].count;
      if (w->kernel == TC_KERNEL_CONV2D || w->kernel == TC_KERNEL_DEPTHWISE)
        snprintf(cases[n].name, sizeof cases[n].name, "%s %d->%d %dx%d/%d %d", w->kernel == TC_KERNEL_CONV2D ? "conv" : "dw",
                 w->c, w->oc, w->kh, w->kw, w->sh, w->h);
      else
        snprintf(cases[n].name, sizeof cases[n].name, "%.12s %d->%d %d", tc_kernel_name(w->kernel), w->c, w->oc, w->h);
    }
    free(tasks);
  } else {
    static const struct {
      const char *name;
      int c, hw, oc, k, s, p;
      double tvm;
    } rn[] = {
        {"conv1 7x7/2 3->64 224", 3, 224, 64, 7, 2, 3, 271}, {"64->64 3x3 56", 64, 56, 64, 3, 1, 1, 256},
        {"64->128 3x3/2 56", 64, 56, 128, 3, 2, 1, 178},     {"64->128 1x1/2 56", 64, 56, 128, 1, 2, 0, 87},
        {"128->128 3x3 28", 128, 28, 128, 3, 1, 1, 246},     {"128->256 3x3/2 28", 128, 28, 256, 3, 2, 1, 173},
        {"128->256 1x1/2 28", 128, 28, 256, 1, 2, 0, 143},   {"256->256 3x3 14", 256, 14, 256, 3, 1, 1, 256},
        {"256->512 3x3/2 14", 256, 14, 512, 3, 2, 1, 155},   {"256->512 1x1/2 14", 256, 14, 512, 1, 2, 0, 122},
        {"512->512 3x3 7", 512, 7, 512, 3, 1, 1, 187},
    };
    for (size_t i = 0; i < sizeof rn / sizeof rn[0]; i++, n++) {
      snprintf(cases[n].name, sizeof cases[n].name, "%s", rn[i].name);
      cases[n].wl = conv(rn[i].c, rn[i].hw, rn[i].oc, rn[i].k, rn[i].s, rn[i].p);
      cases[n].tvm = rn[i].tvm;
      cases[n].count = 1;
    }
    snprintf(cases[n].name, sizeof cases[n].name, "dense 512->1000");
    tc_workload *d = &cases[n].wl;
    d->kernel = TC_KERNEL_DENSE;
    d->n = 1, d->c = 512, d->h = d->w = d->oh = d->ow = 1, d->oc = 1000, d->in_cb = d->out_cb = 1;
    d->epilogue = TC_EPI_BIAS;
    cases[n].tvm = 10;
    cases[n].count = 1;
    n++;
  }

  tc_config *cfgs = calloc(MAXC, sizeof *cfgs);
  char(*names)[16] = calloc(MAXC, sizeof *names);
  for (int i = 0; i < n; i++) {
    tc_space s;
    if (tc_op_space(&cases[i].wl, &t, &s) != TH_OK || tc_op_fallback(&cases[i].wl, &t, &s, &cfgs[i]) != TH_OK) {
      fprintf(stderr, "no fallback for %s\n", cases[i].name);
      return 1;
    }
    override_cfg(i, &s, &cfgs[i]);
    if (tc_op_valid(&cases[i].wl, &t, &s, &cfgs[i]) != TH_OK) {
      fprintf(stderr, "invalid config for case %d\n", i);
      return 1;
    }
    snprintf(names[i], sizeof names[i], "k%d", i);
  }
  char so[] = "/tmp/th_kernel_bench_XXXXXX";
  int fd = mkstemp(so);
  if (fd >= 0) close(fd);
  char err[4096];
  /* Kernels plus the peak loop in one library. */
  tc_llvm_module_t *m = NULL;
  th_status rc = tc_llvm_module_new(&t, "bench", &m);
  for (int i = 0; i < n && rc == TH_OK; i++) rc = tc_llvm_add_kernel(m, names[i], &cases[i].wl, &cfgs[i]);
  th_arena *a = th_arena_new(1 << 16);
  tc_ir ir;
  tc_ir_init(&ir, a);
  int chains = t.nregs - 4;
  int64_t iters = 20000000;
  const tc_stmt *pk = peak_kernel(&ir, t.simd_lanes, chains, iters, 2 * threads);
  if (rc == TH_OK) rc = pk ? tc_llvm_add_stmt(m, "peak", pk) : TH_ERR_INTERNAL;
  char obj[64];
  snprintf(obj, sizeof obj, "%s.o", so);
  if (rc == TH_OK) rc = tc_llvm_emit_object(m, obj);
  if (rc != TH_OK) fprintf(stderr, "codegen: %s\n", tc_llvm_errmsg(m));
  tc_llvm_module_free(m);
  const char *objs[1] = {obj};
  if (rc == TH_OK) rc = tc_link_so(1, objs, 0, NULL, so, err, sizeof err);
  const char *keep = getenv("TH_BENCH_OBJ"); /* keep the kernels' object there, for objdump */
  if (keep && rc == TH_OK && rename(obj, keep) != 0) fprintf(stderr, "cannot keep the object as %s\n", keep);
  unlink(obj);
  if (rc != TH_OK) {
    fprintf(stderr, "build failed: %s\n", err);
    return 1;
  }
  void *h = dlopen(so, RTLD_NOW | RTLD_NODELETE);
  unlink(so);
  if (!h) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  struct perf_event_attr pa;
  memset(&pa, 0, sizeof pa);
  pa.type = PERF_TYPE_HARDWARE;
  pa.size = sizeof pa;
  pa.config = PERF_COUNT_HW_CPU_CYCLES;
  pa.exclude_kernel = 1;
  pa.exclude_hv = 1;
  cyc_fd = (int)syscall(SYS_perf_event_open, &pa, 0, -1, -1, 0);
  kfn f;
  *(void **)&f = dlsym(h, "peak");
  float *pout = calloc((size_t)2 * threads * chains * t.simd_lanes, sizeof *pout);
  void *pargs[1] = {pout};
  f((void *const *)pargs);
  double dt = 1e30, pcyc = 1e300;
  for (int rep = 0; rep < 5; rep++) { /* best of 5: the least disturbed run */
    double t0 = th_now_mono();
    uint64_t pc0 = cycles_now();
    f((void *const *)pargs);
    double d = th_now_mono() - t0, c = (double)(cycles_now() - pc0);
    if (d < dt) dt = d;
    if (c < pcyc) pcyc = c;
  }
  double peak = 2.0 * 2 * threads * (double)chains * iters * t.simd_lanes / dt / 1e9;
  /* FLOP per calling-thread cycle at peak (the caller runs 2 of the 2*threads tasks) */
  double peak_fpc = cyc_fd < 0 || pcyc <= 0 ? 0 : 2.0 * 2 * (double)chains * iters * t.simd_lanes / pcyc;
  printf("target %s, %d lanes, %d threads; FMA peak %.1f GFLOP/s (%.1f per thread), %.1f FLOP/cycle\n",
         t.cpu, t.simd_lanes, threads, peak, peak / threads, peak_fpc);
  double *ms = calloc((size_t)n, sizeof *ms), *cyc = calloc((size_t)n, sizeof *cyc);
  double tot_ms = 0, tot_fl = 0;
  for (int i = 0; i < n; i++) {
    tc_workload *wl = &cases[i].wl;
    size_t isz = (size_t)wl->n * wl->c * wl->h * wl->w, osz = (size_t)wl->n * wl->oc * wl->oh * wl->ow;
    if (wl->kernel == TC_KERNEL_CONCAT) osz = (size_t)wl->n * wl->oc * wl->h * wl->w;
    size_t big = isz > osz ? isz : osz;
    size_t psz = tc_op_packed_size(wl, &cfgs[i], &t);
    float *in = calloc(big, 4), *out = calloc(big, 4), *res = calloc(big, 4);
    float *wt = calloc(psz ? psz : 1, 4), *bias = calloc((size_t)wl->oc, 4);
    for (size_t j = 0; j < big; j++) in[j] = (float)(j % 7) * 0.1f;
    for (size_t j = 0; j < psz; j++) wt[j] = (float)(j % 5) * 0.01f;
    void *args5[5] = {in, wt, bias, res, out};
    void *args3[3] = {in, res, out};
    void *args2[2] = {in, out};
    int na = tc_op_nargs(wl->kernel);
    void **args = na == 5 ? args5 : na == 3 ? args3 : args2;
    *(void **)&f = dlsym(h, names[i]);
    double sec = time_kernel(f, (void *const *)args, net ? 0.2 : 0.5, &cyc[i]);
    ms[i] = sec * 1e3 * cases[i].count;
    tot_ms += ms[i];
    tot_fl += tc_workload_flops(wl) * cases[i].count;
    free(in), free(out), free(res), free(wt), free(bias);
  }
  int *order = calloc((size_t)n, sizeof *order);
  for (int i = 0; i < n; i++) order[i] = i;
  if (net) /* heaviest first */
    for (int i = 1; i < n; i++)
      for (int j = i; j > 0 && ms[order[j]] > ms[order[j - 1]]; j--) {
        int tmp = order[j];
        order[j] = order[j - 1];
        order[j - 1] = tmp;
      }
  printf("%-3s %-26s %-44s %5s %9s %6s %9s %7s %6s%s\n", "#", "layer", "config", "calls", "ms", "share",
         "GFLOP/s", "%peak", "cyc%", net ? "" : "   AutoTVM");
  double tot_cyc = 0;
  for (int oi = 0; oi < n; oi++) {
    int i = order[oi];
    tc_workload *wl = &cases[i].wl;
    double gf = tc_workload_flops(wl) * cases[i].count / (ms[i] / 1e3) / 1e9;
    tc_space s;
    char cs[512];
    tc_op_space(wl, &t, &s);
    tc_config_str(&s, &cfgs[i], cs, sizeof cs);
    /* Knob values only, compact: "[4,2][19,6]..." */
    char compact[256];
    size_t k = 0;
    int depth = 0;
    for (size_t j = 0; cs[j] && k + 1 < sizeof compact; j++) {
      if (cs[j] == '[') depth++;
      if (depth >= 3 && cs[j] != '"') compact[k++] = cs[j];
      if (cs[j] == ']') depth--;
    }
    compact[k] = '\0';
    double ceff = cyc[i] > 0 && peak_fpc > 0 ? tc_workload_flops(wl) / threads / cyc[i] / peak_fpc : 0;
    tot_cyc += cyc[i] * cases[i].count;
    printf("%-3d %-26.26s %-44.44s %5d %9.3f %5.1f%% %9.1f %6.1f%% %5.1f%%", i, cases[i].name, compact,
           cases[i].count, ms[i], 100 * ms[i] / tot_ms, gf, 100 * gf / peak, 100 * ceff);
    if (!net) printf(" %9.0f", cases[i].tvm);
    printf("\n");
  }
  double tceff = tot_cyc > 0 && peak_fpc > 0 ? tot_fl / threads / tot_cyc / peak_fpc : 0;
  printf("%-3s %-26s %-44s %5s %9.3f %5.1f%% %9.1f %6.1f%% %5.1f%%\n", "",
         net ? "all kernels" : "all (one of each)", "", "", tot_ms, 100.0, tot_fl / tot_ms / 1e6,
         100 * tot_fl / tot_ms / 1e6 / peak, 100 * tceff);
  th_arena_free(a);
  free(pout), free(ms), free(cyc), free(order), free(cases), free(cfgs), free(names);
  return 0;
}
