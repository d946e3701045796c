/* GEMM benchmark of the dense template (scripts/bench/gemm.sh runs it): the transformers' four
 * linear shapes (k x n = 768x768, 768x2304, 768x3072, 3072x768) at m = 128, 197, 1280, 1970 rows,
 * with a bias epilogue, for the fallback config and a one-knob-at-a-time sweep around it.
 *   gemm_bench build DIR   compiles every case into DIR/gemm.so and lists them in DIR/cases.txt
 *                          ("index m k n nknobs idx... |label|config" per line)
 *   gemm_bench run DIR     one round: times every case (median of the calls in about TH_BENCH_S
 * seconds, default 0.15) and prints "case INDEX MS" per line GEMM_SHAPES="m,k,n;m,k,n..." replaces
 * the shape list; GEMM_SWEEP=0 builds the fallback only. Threads: TH_NUM_THREADS (gemm.sh sets 2).
 * The rounds are interleaved with PyTorch's by gemm.sh, which takes the medians. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llvm/tc_llvm.h"
#include "ops.h"
#include "th_util.h"

#define MAX_CASES 1024

typedef void (*kfn)(void *const *);

typedef struct bcase {
  tc_workload wl;
  tc_config cfg;
  char label[48];
} bcase;

static tc_workload dense_wl(int m, int k, int n) {
  tc_workload w;
  memset(&w, 0, sizeof w);
  w.kernel = TC_KERNEL_DENSE;
  w.n = m, w.c = k, w.oc = n;
  w.h = w.w = w.oh = w.ow = w.kh = w.kw = w.sh = w.sw = 1;
  w.in_cb = w.out_cb = 1;
  w.epilogue = TC_EPI_BIAS;
  return w;
}

/* Sets knob `name` of c to the value whose ints start with v[0..nv); 0 if there is none. */
static int set_knob(const tc_space *s, tc_config *c, const char *name, const int *v, int nv) {
  int k = tc_space_knob(s, name);
  if (k < 0) return 0;
  for (int i = 0; i < s->knobs[k].nvalues; i++) {
    int off = s->knobs[k].kind == TC_KNOB_SPLIT ? 1 : 0; /* splits: [count, size], match the size */
    if (memcmp(&s->knobs[k].values[i][off], v, sizeof(int) * (size_t)nv) == 0) {
      c->idx[k] = i;
      return 1;
    }
  }
  return 0;
}

static int add_case(bcase *cs, int n, const tc_workload *wl, const tc_target *t, const tc_space *s,
                    const tc_config *c, const char *label) {
  if (n >= MAX_CASES || tc_op_valid(wl, t, s, c) != TH_OK) return n;
  for (int i = n - 1; i >= 0 && cs[i].wl.n == wl->n && cs[i].wl.c == wl->c && cs[i].wl.oc == wl->oc;
       i--)
    if (memcmp(&cs[i].cfg, c, sizeof *c) == 0) return n; /* already there */
  cs[n].wl = *wl;
  cs[n].cfg = *c;
  snprintf(cs[n].label, sizeof cs[n].label, "%s", label);
  return n + 1;
}

/* The fallback, then each knob moved alone. */
static int sweep(bcase *cs, int n, const tc_workload *wl, const tc_target *t, int full) {
  tc_space s;
  tc_config fb;
  if (tc_op_space(wl, t, &s) != TH_OK || tc_op_fallback(wl, t, &s, &fb) != TH_OK) return n;
  n = add_case(cs, n, wl, t, &s, &fb, "fallback");
  if (!full) return n;
  static const int tiles32[][2] = {{12, 2}, {14, 2}, {6, 4}, {8, 3}, {9, 3}, {5, 4}, {4, 4}};
  static const int tiles16[][2] = {{6, 2}, {4, 3}, {5, 2}, {3, 3}};
  int big = t->nregs >= 32, ntiles = big ? 7 : 4;
  for (int i = 0; i < ntiles; i++) {
    tc_config c = fb;
    const int *tl = big ? tiles32[i] : tiles16[i];
    char lab[48];
    snprintf(lab, sizeof lab, "tile %dx%d", tl[0], tl[1]);
    if (set_knob(&s, &c, "tile_m", &tl[0], 1) && set_knob(&s, &c, "tile_n", &tl[1], 1))
      n = add_case(cs, n, wl, t, &s, &c, lab);
  }
  static const int kcs[] = {128, 256, 384, 512, 768, 1024};
  for (int i = 0; i < 6; i++) {
    tc_config c = fb;
    char lab[48];
    snprintf(lab, sizeof lab, "kc %d", kcs[i]);
    if (set_knob(&s, &c, "tile_k", &kcs[i], 1)) n = add_case(cs, n, wl, t, &s, &c, lab);
  }
  {
    tc_config c = fb;
    if (set_knob(&s, &c, "tile_k", &wl->c, 1)) n = add_case(cs, n, wl, t, &s, &c, "kc all");
  }
  static const int splits[][2] = {{1, 8}, {2, 4}, {4, 2}, {2, 8}, {1, 16}, {4, 4}, {2, 12}, {8, 2}};
  for (int i = 0; i < 8; i++) {
    tc_config c = fb;
    char lab[48];
    snprintf(lab, sizeof lab, "split %dx%d", splits[i][0], splits[i][1]);
    if (set_knob(&s, &c, "row_blocks", &splits[i][0], 1) &&
        set_knob(&s, &c, "col_blocks", &splits[i][1], 1))
      n = add_case(cs, n, wl, t, &s, &c, lab);
  }
  const char *flips[] = {"order", "pack_a"};
  for (int i = 0; i < 2; i++) {
    tc_config c = fb;
    int k = tc_space_knob(&s, flips[i]);
    if (k < 0) continue;
    c.idx[k] = 1 - c.idx[k];
    char lab[48];
    snprintf(lab, sizeof lab, "%s %d", flips[i], c.idx[k]);
    n = add_case(cs, n, wl, t, &s, &c, lab);
  }
  return n;
}

static int build(const char *dir, const tc_target *t) {
  bcase *cs = calloc(MAX_CASES, sizeof *cs);
  int n = 0, full = !getenv("GEMM_SWEEP") || strcmp(getenv("GEMM_SWEEP"), "0") != 0;
  const char *spec = getenv("GEMM_SHAPES");
  if (spec && *spec) {
    for (const char *p = spec; *p;) {
      int m, k, nn, used = 0;
      if (sscanf(p, "%d,%d,%d%n", &m, &k, &nn, &used) != 3) break;
      tc_workload wl = dense_wl(m, k, nn);
      n = sweep(cs, n, &wl, t, full);
      p += used;
      while (*p == ';' || *p == ' ') p++;
    }
  } else {
    static const int ms[] = {128, 197, 1280, 1970},
                     kn[][2] = {{768, 768}, {768, 2304}, {768, 3072}, {3072, 768}};
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 4; j++) {
        tc_workload wl = dense_wl(ms[i], kn[j][0], kn[j][1]);
        n = sweep(cs, n, &wl, t, full);
      }
  }
  tc_workload *wls = calloc((size_t)n, sizeof *wls);
  tc_config *cfgs = calloc((size_t)n, sizeof *cfgs);
  char **names = calloc((size_t)n, sizeof *names);
  char path[1024];
  snprintf(path, sizeof path, "%s/cases.txt", dir);
  FILE *f = fopen(path, "w");
  if (!f || !wls || !cfgs || !names) return 1;
  for (int i = 0; i < n; i++) {
    wls[i] = cs[i].wl;
    cfgs[i] = cs[i].cfg;
    names[i] = malloc(16);
    snprintf(names[i], 16, "k%d", i);
    tc_space s;
    char cstr[512];
    tc_op_space(&cs[i].wl, t, &s);
    tc_config_str(&s, &cs[i].cfg, cstr, sizeof cstr);
    fprintf(f, "%d %d %d %d %d", i, cs[i].wl.n, cs[i].wl.c, cs[i].wl.oc, cs[i].cfg.nknobs);
    for (int k = 0; k < cs[i].cfg.nknobs; k++) fprintf(f, " %d", cs[i].cfg.idx[k]);
    fprintf(f, " |%s|%s\n", cs[i].label, cstr);
  }
  fclose(f);
  snprintf(path, sizeof path, "%s/gemm.so", dir);
  char err[4096] = "";
  double t0 = th_now_mono();
  th_status rc =
      tc_kernels_build_so(t, n, wls, cfgs, (const char *const *)names, path, err, sizeof err);
  fprintf(stderr, "gemm_bench: %d kernels built in %.1f s%s%s\n", n, th_now_mono() - t0,
          rc == TH_OK ? "" : ": ", rc == TH_OK ? "" : err);
  for (int i = 0; i < n; i++) free(names[i]);
  free(names), free(wls), free(cfgs), free(cs);
  return rc == TH_OK ? 0 : 1;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int run(const char *dir, const tc_target *t) {
  char path[1024];
  snprintf(path, sizeof path, "%s/gemm.so", dir);
  void *h = dlopen(path, RTLD_NOW);
  if (!h) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  snprintf(path, sizeof path, "%s/cases.txt", dir);
  FILE *f = fopen(path, "r");
  if (!f) return 1;
  const char *bs = getenv("TH_BENCH_S");
  double budget = bs ? strtod(bs, NULL) : 0.15;
  char line[1024];
  while (fgets(line, sizeof line, f)) {
    int i, m, k, n, used = 0;
    tc_config c;
    memset(&c, 0, sizeof c);
    if (sscanf(line, "%d %d %d %d %d%n", &i, &m, &k, &n, &c.nknobs, &used) != 5 ||
        c.nknobs > TC_MAX_KNOBS)
      continue;
    const char *p = line + used;
    for (int j = 0; j < c.nknobs; j++) {
      int u = 0;
      if (sscanf(p, "%d%n", &c.idx[j], &u) != 1) return 1;
      p += u;
    }
    tc_workload wl = dense_wl(m, k, n);
    tc_space s;
    if (tc_op_space(&wl, t, &s) != TH_OK || tc_op_valid(&wl, t, &s, &c) != TH_OK) {
      fprintf(stderr, "case %d: not a valid config of this build's space\n", i);
      return 1;
    }
    size_t psz = tc_op_packed_size(&wl, &c, t);
    float *in = malloc((size_t)m * k * 4), *w = malloc((size_t)n * k * 4), *pw = malloc(psz * 4);
    float *bias = malloc((size_t)n * 4), *out = malloc((size_t)m * n * 4);
    for (size_t j = 0; j < (size_t)m * k; j++) in[j] = (float)(j % 13) * 0.01f;
    for (size_t j = 0; j < (size_t)n * k; j++) w[j] = (float)(j % 7) * 0.01f;
    for (int j = 0; j < n; j++) bias[j] = 0.5f;
    tc_op_pack(&wl, &c, t, w, pw);
    char name[16];
    snprintf(name, sizeof name, "k%d", i);
    kfn fn;
    *(void **)&fn = dlsym(h, name);
    void *args[5] = {in, pw, bias, NULL, out};
    fn((void *const *)args);
    static double times[4096];
    double t0 = th_now_mono();
    int calls = 0;
    while (calls < 4096 && (calls < 3 || th_now_mono() - t0 < budget)) {
      double a = th_now_mono();
      fn((void *const *)args);
      times[calls++] = th_now_mono() - a;
    }
    qsort(times, (size_t)calls, sizeof times[0], cmp_double);
    printf("case %d %.4f\n", i, times[calls / 2] * 1e3);
    fflush(stdout);
    free(in), free(w), free(pw), free(bias), free(out);
  }
  fclose(f);
  return 0;
}

int main(int argc, char **argv) {
  tc_target t;
  if (argc != 3 || tc_target_host(&t) != TH_OK) {
    fprintf(stderr, "usage: gemm_bench build|run DIR\n");
    return 2;
  }
  if (strcmp(argv[1], "build") == 0) return build(argv[2], &t);
  if (strcmp(argv[1], "run") == 0) return run(argv[2], &t);
  return 2;
}
