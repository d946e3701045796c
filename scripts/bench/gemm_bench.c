/* GEMM benchmark of the dense and batch_matmul templates (scripts/bench/gemm.sh runs it): the
 * transformers' four linear shapes (k x n = 768x768, 768x2304, 768x3072, 3072x768, bias epilogue)
 * at m = 128, 197, 1280, 1970 rows, and their attention products (Q.K^T and attn.V, 12 or 120 heads
 * of 128 or 197 tokens), for the fallback config and a one-knob-at-a-time sweep around it.
 *   gemm_bench build DIR   compiles every case into DIR/gemm.so and lists them in DIR/cases.txt
 *                          ("index SHAPE nknobs idx... |label|config" per line, SHAPE as below)
 *   gemm_bench run DIR     one round: times every case (median of the calls in about TH_BENCH_S
 *                          seconds, default 0.15) and prints "case INDEX MS" per line; with
 *                          TH_BENCH_INTERLEAVE=1 the cases are called in turn, one call each per
 *                          sweep, for about TH_BENCH_S seconds per case (for comparing cases with
 *                          each other on a loaded machine, e.g. 3 narrow dense layers against one
 *                          wide one)
 * GEMM_SHAPES="SHAPE;SHAPE..." replaces the shape list: "m,k,n" is a dense layer, "b,m,k,n,ta,tb" a
 * batch_matmul of b matrices (ta, tb: trans_a, trans_b; alpha 0.125). GEMM_SWEEP=0 builds the
 * fallback only. Threads: TH_NUM_THREADS (gemm.sh sets 2). gemm.sh interleaves the rounds with
 * PyTorch's and takes the medians. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llvm/tc_llvm.h"
#include "ops.h"
#include "th_util.h"

#define MAX_CASES 1024
#define MAX_CALLS 4096 /* per case and round */

typedef void (*kfn)(void *const *);

/* A shape: 3 ints (dense m, k, n) or 6 (batch_matmul b, m, k, n, trans_a, trans_b). */
typedef struct shape {
  int v[6], nv;
} shape;

static tc_workload shape_wl(const shape *sh) {
  tc_workload w;
  memset(&w, 0, sizeof w);
  w.w = w.ow = w.in_cb = w.out_cb = 1;
  if (sh->nv == 3) {
    w.kernel = TC_KERNEL_DENSE;
    w.n = sh->v[0], w.c = sh->v[1], w.oc = sh->v[2];
    w.h = w.oh = w.kh = w.kw = w.sh = w.sw = 1;
    w.epilogue = TC_EPI_BIAS;
  } else {
    w.kernel = TC_KERNEL_BATCH_MATMUL;
    w.n = sh->v[0], w.h = w.oh = sh->v[1], w.c = sh->v[2], w.oc = sh->v[3];
    w.trans_a = sh->v[4], w.trans_b = sh->v[5], w.alpha = 0.125f;
  }
  return w;
}

typedef struct bcase {
  shape sh;
  tc_workload wl;
  tc_config cfg;
  char label[48];
} bcase;

/* Reads "a,b,c[,d,e,f]" at *p into sh; 0 at the end or on a malformed shape. */
static int parse_shape(const char **p, shape *sh) {
  while (**p == ';' || **p == ' ') (*p)++;
  sh->nv = 0;
  for (int used = 0; sh->nv < 6 && sscanf(*p, "%d%n", &sh->v[sh->nv], &used) == 1; sh->nv++) {
    *p += used;
    if (**p != ',') {
      sh->nv++;
      break;
    }
    (*p)++;
  }
  return sh->nv == 3 || sh->nv == 6;
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

static int add_case(bcase *cs, int n, const shape *sh, const tc_workload *wl, const tc_target *t,
                    const tc_space *s, const tc_config *c, const char *label) {
  if (n >= MAX_CASES || tc_op_valid(wl, t, s, c) != TH_OK) return n;
  for (int i = n - 1; i >= 0 && memcmp(&cs[i].wl, wl, sizeof *wl) == 0; i--)
    if (memcmp(&cs[i].cfg, c, sizeof *c) == 0) return n; /* already there */
  cs[n].sh = *sh;
  cs[n].wl = *wl;
  cs[n].cfg = *c;
  snprintf(cs[n].label, sizeof cs[n].label, "%s", label);
  return n + 1;
}

/* The fallback, then each knob moved alone. */
static int sweep(bcase *cs, int n, const shape *sh, const tc_target *t, int full) {
  tc_workload wl_ = shape_wl(sh), *wl = &wl_;
  tc_space s;
  tc_config fb;
  if (tc_op_space(wl, t, &s) != TH_OK || tc_op_fallback(wl, t, &s, &fb) != TH_OK) return n;
  n = add_case(cs, n, sh, wl, t, &s, &fb, "fallback");
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
      n = add_case(cs, n, sh, wl, t, &s, &c, lab);
  }
  static const int kcs[] = {128, 256, 384, 512, 768, 1024};
  for (int i = 0; i < 6; i++) {
    tc_config c = fb;
    char lab[48];
    snprintf(lab, sizeof lab, "kc %d", kcs[i]);
    if (set_knob(&s, &c, "tile_k", &kcs[i], 1)) n = add_case(cs, n, sh, wl, t, &s, &c, lab);
  }
  {
    tc_config c = fb;
    if (set_knob(&s, &c, "tile_k", &wl->c, 1)) n = add_case(cs, n, sh, wl, t, &s, &c, "kc all");
  }
  static const int splits[][2] = {{1, 8}, {2, 4}, {4, 2}, {2, 8}, {1, 16}, {4, 4}, {2, 12}, {8, 2}};
  for (int i = 0; i < 8; i++) {
    tc_config c = fb;
    char lab[48];
    snprintf(lab, sizeof lab, "split %dx%d", splits[i][0], splits[i][1]);
    if (set_knob(&s, &c, "row_blocks", &splits[i][0], 1) &&
        set_knob(&s, &c, "col_blocks", &splits[i][1], 1))
      n = add_case(cs, n, sh, wl, t, &s, &c, lab);
  }
  const char *flips[] = {"order", "pack_a"};
  for (int i = 0; i < 2; i++) {
    tc_config c = fb;
    int k = tc_space_knob(&s, flips[i]);
    if (k < 0) continue;
    c.idx[k] = 1 - c.idx[k];
    char lab[48];
    snprintf(lab, sizeof lab, "%s %d", flips[i], c.idx[k]);
    n = add_case(cs, n, sh, wl, t, &s, &c, lab);
  }
  return n;
}

static int build(const char *dir, const tc_target *t) {
  bcase *cs = calloc(MAX_CASES, sizeof *cs);
  int n = 0, full = !getenv("GEMM_SWEEP") || strcmp(getenv("GEMM_SWEEP"), "0") != 0;
  /* the dense shapes at 128, 197, 1280, 1970 rows; Q.K^T and attn.V of 12 and 120 heads */
  const char *spec = getenv("GEMM_SHAPES");
  if (!spec || !*spec)
    spec =
        "128,768,768;128,768,2304;128,768,3072;128,3072,768;197,768,768;197,768,2304;197,768,3072;"
        "197,3072,768;1280,768,768;1280,768,2304;1280,768,3072;1280,3072,768;1970,768,768;"
        "1970,768,2304;1970,768,3072;1970,3072,768;12,128,64,128,0,1;12,128,128,64,0,0;"
        "12,197,64,197,0,1;12,197,197,64,0,0;120,128,64,128,0,1;120,128,128,64,0,0;"
        "120,197,64,197,0,1;120,197,197,64,0,0";
  shape sh;
  for (const char *p = spec; parse_shape(&p, &sh);) n = sweep(cs, n, &sh, t, full);
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
    fprintf(f, "%d ", i);
    for (int k = 0; k < cs[i].sh.nv; k++) fprintf(f, "%s%d", k ? "," : "", cs[i].sh.v[k]);
    fprintf(f, " %d", cs[i].cfg.nknobs);
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

/* One case ready to call: its kernel, its arguments and buffers, and its call times. */
typedef struct rcase {
  int index;
  kfn fn;
  void *args[5];
  float *in, *w, *pw, *bias, *out;
  double *times;
  int calls;
} rcase;

/* Reads case line `line` of cases.txt, checks its config against this build's space, allocates and
 * fills its operands (dense weights packed) and looks its kernel up in h. 0, or 1 with a message.
 */
static int prepare(const char *line, const tc_target *t, void *h, rcase *rc) {
  int used = 0;
  tc_config c;
  memset(&c, 0, sizeof c);
  memset(rc, 0, sizeof *rc);
  if (sscanf(line, "%d%n", &rc->index, &used) != 1) return 1;
  const char *p = line + used;
  shape sh;
  if (!parse_shape(&p, &sh) || sscanf(p, "%d%n", &c.nknobs, &used) != 1 || c.nknobs > TC_MAX_KNOBS)
    return 1;
  p += used;
  for (int j = 0; j < c.nknobs; j++) {
    if (sscanf(p, "%d%n", &c.idx[j], &used) != 1) return 1;
    p += used;
  }
  tc_workload wl = shape_wl(&sh);
  tc_space s;
  if (tc_op_space(&wl, t, &s) != TH_OK || tc_op_valid(&wl, t, &s, &c) != TH_OK) {
    fprintf(stderr, "case %d: not a valid config of this build's space\n", rc->index);
    return 1;
  }
  /* inputs: dense {in, packed W, bias, -, out}; batch_matmul {a, b, out} */
  int dense = wl.kernel == TC_KERNEL_DENSE;
  size_t na = dense ? (size_t)wl.n * wl.c : (size_t)wl.n * wl.h * wl.c;
  size_t nb = dense ? (size_t)wl.oc * wl.c : (size_t)wl.n * wl.c * wl.oc;
  size_t no = dense ? (size_t)wl.n * wl.oc : (size_t)wl.n * wl.h * wl.oc;
  size_t psz = dense ? tc_op_packed_size(&wl, &c, t) : 0;
  rc->in = malloc(na * 4), rc->w = malloc(nb * 4), rc->pw = malloc(psz * 4 + 4);
  rc->bias = malloc((size_t)wl.oc * 4), rc->out = malloc(no * 4);
  rc->times = malloc(MAX_CALLS * sizeof *rc->times);
  if (!rc->in || !rc->w || !rc->pw || !rc->bias || !rc->out || !rc->times) return 1;
  for (size_t j = 0; j < na; j++) rc->in[j] = (float)(j % 13) * 0.01f;
  for (size_t j = 0; j < nb; j++) rc->w[j] = (float)(j % 7) * 0.01f;
  for (int j = 0; j < wl.oc; j++) rc->bias[j] = 0.5f;
  if (dense) tc_op_pack(&wl, &c, t, rc->w, rc->pw);
  char name[16];
  snprintf(name, sizeof name, "k%d", rc->index);
  *(void **)&rc->fn = dlsym(h, name);
  if (!rc->fn) {
    fprintf(stderr, "case %d: no kernel %s in gemm.so\n", rc->index, name);
    return 1;
  }
  void *dargs[5] = {rc->in, rc->pw, rc->bias, NULL, rc->out}, *bargs[3] = {rc->in, rc->w, rc->out};
  memcpy(rc->args, dense ? dargs : bargs, (dense ? 5 : 3) * sizeof(void *));
  return 0;
}

static void release(rcase *rc) {
  free(rc->in), free(rc->w), free(rc->pw), free(rc->bias), free(rc->out), free(rc->times);
}

static void timed_call(rcase *rc) {
  double a = th_now_mono();
  rc->fn((void *const *)rc->args);
  rc->times[rc->calls++] = th_now_mono() - a;
}

static void print_median(rcase *rc) {
  qsort(rc->times, (size_t)rc->calls, sizeof rc->times[0], cmp_double);
  printf("case %d %.4f\n", rc->index, rc->times[rc->calls / 2] * 1e3);
  fflush(stdout);
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
  const char *bs = getenv("TH_BENCH_S"), *il = getenv("TH_BENCH_INTERLEAVE");
  double budget = bs ? strtod(bs, NULL) : 0.15;
  int interleave = il && strcmp(il, "0") != 0;
  rcase *cs = calloc(MAX_CASES, sizeof *cs);
  int n = 0, rc = cs ? 0 : 1;
  char line[1024];
  while (rc == 0 && n < MAX_CASES && fgets(line, sizeof line, f)) {
    int i;
    if (sscanf(line, "%d", &i) != 1) continue;
    rc = prepare(line, t, h, &cs[n]);
    n += rc == 0;
    if (rc != 0 || interleave) continue;
    /* one case after another: its calls for about `budget` seconds, its buffers freed before the
     * next */
    cs[n - 1].fn((void *const *)cs[n - 1].args);
    double t0 = th_now_mono();
    while (cs[n - 1].calls < MAX_CALLS && (cs[n - 1].calls < 3 || th_now_mono() - t0 < budget))
      timed_call(&cs[n - 1]);
    print_median(&cs[n - 1]);
    release(&cs[n - 1]);
    n--;
  }
  fclose(f);
  if (rc == 0 && interleave && n > 0) {
    /* every case called once per sweep, sweeps for about n x budget seconds: a load that comes and
     * goes meets every case alike, and each call finds the caches as the other cases left them */
    for (int i = 0; i < n; i++) cs[i].fn((void *const *)cs[i].args);
    double t0 = th_now_mono();
    while (cs[0].calls < MAX_CALLS && (cs[0].calls < 3 || th_now_mono() - t0 < budget * n))
      for (int i = 0; i < n; i++) timed_call(&cs[i]);
    for (int i = 0; i < n; i++) print_median(&cs[i]);
  }
  for (int i = 0; i < n; i++) release(&cs[i]);
  free(cs);
  return rc;
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
