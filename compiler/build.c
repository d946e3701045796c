/* The model builder: zoo graph -> passes -> kernel calls -> configs (lookup or fallback) -> one LLVM
 * object with every distinct kernel -> a generated C plan (model.c: tables of calls and weights, plus the
 * embedded fixed part compiler/model/model_rt.c) -> model.so linked with the runtime -> optional timing
 * -> the bundle (bundle.c). Also tc_network_tasks, the tuner's view of the same lowering. */
#include <dlfcn.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "build_int.h"
#include "ops.h"
#include "params.h"
#include "passes/passes.h"
#include "target.h"
#include "tc.h"
#include "tc_cuda.h"
#include "llvm/tc_llvm.h"
#include "tc_model_embed.h"
#include "th_sha256.h"
#include "th_util.h"
#include "zoo.h"

void tc__seterr(char *err, size_t errlen, const char *fmt, ...) {
  if (!err || !errlen) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

/* ---- tasks ------------------------------------------------------------------------------------------ */

static th_status tc__lowered(const char *network, int batch, int h, int w, int weights, int lanes,
                             tc_graph **gout, tc_call **calls, int *ncalls, int64_t *ws, char *err,
                             size_t errlen) {
  tc_graph *g = NULL;
  th_status rc = tc_zoo_build(network, batch, h, w, weights, &g, err, errlen);
  if (rc != TH_OK) return rc;
  rc = tc_passes_run(g, lanes, ws);
  if (rc == TH_OK) rc = tc_lower(g, calls, ncalls);
  if (rc != TH_OK) {
    tc__seterr(err, errlen, "%s: %s", network, g->err[0] ? g->err : th_status_str(rc));
    tc_graph_free(g);
    return rc;
  }
  *gout = g;
  return TH_OK;
}

th_status tc_network_tasks(const char *network, int batch, tc_task **tasks, int *n) {
  if (!tasks || !n) return TH_ERR_INVALID;
  tc_target t;
  th_status rc = tc_target_host(&t);
  tc_graph *g = NULL;
  tc_call *calls = NULL;
  int ncalls = 0;
  int64_t ws = 0;
  if (rc == TH_OK) rc = tc__lowered(network, batch, 0, 0, 0, t.simd_lanes, &g, &calls, &ncalls, &ws, NULL, 0);
  if (rc != TH_OK) return rc;
  tc_task *ts = calloc((size_t)(ncalls ? ncalls : 1), sizeof *ts);
  int nt = 0;
  if (!ts) rc = TH_ERR_NOMEM;
  for (int i = 0; rc == TH_OK && i < ncalls; i++) {
    char key[192];
    rc = tc_workload_key(&calls[i].wl, key, sizeof key);
    if (rc != TH_OK) break;
    int found = -1;
    for (int k = 0; k < nt && found < 0; k++)
      if (strcmp(ts[k].key, key) == 0) found = k;
    if (found >= 0) {
      ts[found].count++;
      continue;
    }
    ts[nt].wl = calls[i].wl;
    memcpy(ts[nt].key, key, sizeof key);
    ts[nt].flops = tc_workload_flops(&calls[i].wl);
    ts[nt].count = 1;
    nt++;
  }
  free(calls);
  tc_graph_free(g);
  if (rc != TH_OK) {
    free(ts);
    return rc;
  }
  *tasks = ts;
  *n = nt;
  return TH_OK;
}

/* ---- kernels and configs ---------------------------------------------------------------------------- */

static int tc__progress(const tc_build_opts *o, const char *stage, int done, int total) {
  return o->progress ? o->progress(o->progress_ctx, stage, done, total) : 0;
}

static th_status tc__configs(const tc_build_opts *o, const tc_target *t, tc_call *calls, int ncalls,
                             tc__kernel **kout, int *nk, int *call_kernel, char *err, size_t errlen) {
  tc__kernel *ks = calloc((size_t)(ncalls ? ncalls : 1), sizeof *ks);
  if (!ks) return TH_ERR_NOMEM;
  int n = 0;
  th_status rc = TH_OK;
  for (int i = 0; rc == TH_OK && i < ncalls; i++) {
    char key[192];
    rc = tc_workload_key(&calls[i].wl, key, sizeof key);
    if (rc != TH_OK) break;
    int found = -1;
    for (int k = 0; k < n && found < 0; k++)
      if (strcmp(ks[k].key, key) == 0) found = k;
    if (found >= 0) {
      call_kernel[i] = found;
      continue;
    }
    tc__kernel *k = &ks[n];
    k->wl = calls[i].wl;
    memcpy(k->key, key, sizeof key);
    snprintf(k->fn, sizeof k->fn, "th_k%d", n);
    rc = tc_op_space(&k->wl, t, &k->space);
    if (rc != TH_OK) {
      tc__seterr(err, errlen, "no template for workload %s", key);
      break;
    }
    th_status lr = TH_ERR_NOT_FOUND;
    if (o->lookup) {
      char src[16] = "tuned";
      tc_config c;
      memset(&c, 0, sizeof c);
      lr = o->lookup(o->lookup_ctx, &k->wl, key, &k->space, &c, src);
      if (lr == TH_OK && tc_op_valid(&k->wl, t, &k->space, &c) == TH_OK) {
        k->cfg = c;
        src[sizeof src - 1] = '\0';
        snprintf(k->source, sizeof k->source, "%s", src);
      } else if (lr == TH_OK) {
        lr = TH_ERR_NOT_FOUND; /* a stale record that no longer fits the space: fall back */
      } else if (lr != TH_ERR_NOT_FOUND) {
        tc__seterr(err, errlen, "config lookup failed for %s: %s", key, th_status_str(lr));
        rc = lr;
        break;
      }
    }
    if (lr != TH_OK) {
      rc = tc_op_fallback(&k->wl, t, &k->space, &k->cfg);
      snprintf(k->source, sizeof k->source, "fallback");
      if (rc != TH_OK) tc__seterr(err, errlen, "no fallback config for %s", key);
    }
    call_kernel[i] = n++;
  }
  if (rc != TH_OK) {
    free(ks);
    return rc;
  }
  *kout = ks;
  *nk = n;
  return TH_OK;
}

/* ---- parallel codegen ------------------------------------------------------------------------------ */

#define TC__MAX_JOBS 16

typedef struct tc__cg_job {
  const tc_target *t;
  const tc__kernel *ks;
  int nk, first, step;
  const char *path, *network;
  th_status rc;
  char err[512];
} tc__cg_job;

/* Emits kernels first, first+step, ... into one object file. Each job owns its LLVM module (and
 * context), which the LLVM backend allows across threads. */
static void *tc__cg_run(void *arg) {
  tc__cg_job *j = arg;
  tc_llvm_module_t *mod = NULL;
  j->rc = tc_llvm_module_new(j->t, j->network, &mod);
  if (j->rc != TH_OK) snprintf(j->err, sizeof j->err, "LLVM module: %s", mod ? tc_llvm_errmsg(mod) : "failed");
  for (int k = j->first; j->rc == TH_OK && k < j->nk; k += j->step) {
    j->rc = tc_llvm_add_kernel(mod, j->ks[k].fn, &j->ks[k].wl, &j->ks[k].cfg);
    if (j->rc != TH_OK) snprintf(j->err, sizeof j->err, "kernel %s: %s", j->ks[k].key, tc_llvm_errmsg(mod));
  }
  if (j->rc == TH_OK) {
    j->rc = tc_llvm_emit_object(mod, j->path);
    if (j->rc != TH_OK) snprintf(j->err, sizeof j->err, "codegen: %s", tc_llvm_errmsg(mod));
  }
  tc_llvm_module_free(mod);
  return NULL;
}

/* ---- the generated plan ----------------------------------------------------------------------------- */

static void tc__cstr(th_buf *b, const char *s) {
  if (!s) {
    th_buf_appendf(b, "NULL");
    return;
  }
  th_buf_appendf(b, "\"");
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') th_buf_appendf(b, "\\%c", *s);
    else if ((unsigned char)*s < 32) th_buf_appendf(b, "\\%03o", (unsigned char)*s);
    else th_buf_appendf(b, "%c", *s);
  }
  th_buf_appendf(b, "\"");
}

static const char *tc__pname(const tc_graph *g, int id) {
  return id >= 0 ? g->params[id].name : NULL;
}

static th_status tc__gen_plan(const tc_graph *g, const tc_target *t, const tc_call *calls, int ncalls,
                       const tc__kernel *ks, int nk, const int *call_kernel, int64_t ws,
                       int64_t *weights_floats, th_buf *b) {
  const tc_tensor *in = &g->nodes[0].out, *out = &g->nodes[g->output].out;
  th_buf_appendf(b, "/* Generated by tunehub %s for %s, batch %d, on %s (%s). Do not edit. */\n",
                 TH_VERSION, g->network, g->batch, t->cpu, t->triple);
  th_buf_appendf(b, "#include <stdint.h>\n#include \"th_rt.h\"\n#include \"tunehub_model.h\"\n\n");
  for (int k = 0; k < nk; k++) th_buf_appendf(b, "void %s(void *const *args);\n", ks[k].fn);
  th_buf_appendf(b, "\nstatic const struct th_model_info th__info = {\n  ");
  tc__cstr(b, g->network);
  th_buf_appendf(b, ", \"llvm -mcpu=%s\", ", t->cpu);
  tc__cstr(b, t->triple);
  th_buf_appendf(b, ", \"%s\", %d,\n  %d, {", TH_VERSION, g->batch, in->ndim);
  for (int d = 0; d < 4; d++) th_buf_appendf(b, "%s%d", d ? ", " : "", d < in->ndim ? in->shape[d] : 0);
  th_buf_appendf(b, "}, %d, {", out->ndim);
  for (int d = 0; d < 4; d++) th_buf_appendf(b, "%s%d", d ? ", " : "", d < out->ndim ? out->shape[d] : 0);
  /* weights: packed kernels and folded biases, 16-float aligned, in one blob */
  int64_t woff = 0;
  th_buf wp;
  th_buf_init(&wp, (size_t)64 << 20);
  th_buf_appendf(&wp, "static const struct th__wparam {\n  const char *weight, *bias, *gamma, *beta, *mean, "
                      "*var;\n  float eps;\n  int oc, ndim;\n  int64_t shape[4];\n  int pack[8];\n"
                      "  int64_t woff, boff;\n} th__wparams[] = {\n");
  int64_t *wo = calloc((size_t)(ncalls ? ncalls : 1), sizeof *wo);
  int64_t *bo = calloc((size_t)(ncalls ? ncalls : 1), sizeof *bo);
  th_status rc = (wo && bo) ? TH_OK : TH_ERR_NOMEM;
  int nw = 0;
  for (int i = 0; rc == TH_OK && i < ncalls; i++) {
    wo[i] = bo[i] = -1;
    if (calls[i].arg_space[TC_ARG_WEIGHTS] != TC_SPACE_WEIGHTS || calls[i].nargs != 5) continue;
    const tc__kernel *k = &ks[call_kernel[i]];
    const tc_node *nd = &g->nodes[calls[i].node];
    const tc_param *w = &g->params[nd->weight];
    int pk[TC_PACK_NPARAMS];
    rc = tc_op_pack_params(&k->wl, &k->cfg, t, pk);
    if (rc != TH_OK) break;
    size_t psz = tc_op_packed_size(&k->wl, &k->cfg, t);
    wo[i] = woff;
    woff += ((int64_t)psz + 15) / 16 * 16;
    if (calls[i].arg_space[TC_ARG_BIAS] == TC_SPACE_BIAS) {
      bo[i] = woff;
      woff += (k->wl.oc + 15) / 16 * 16;
    }
    th_buf_appendf(&wp, "  {");
    tc__cstr(&wp, w->name);
    th_buf_appendf(&wp, ", ");
    tc__cstr(&wp, tc__pname(g, nd->bias));
    const char *bn[4] = {tc__pname(g, nd->gamma), tc__pname(g, nd->beta), tc__pname(g, nd->mean),
                         tc__pname(g, nd->var)};
    for (int q = 0; q < 4; q++) {
      th_buf_appendf(&wp, ", ");
      tc__cstr(&wp, bn[q]);
    }
    th_buf_appendf(&wp, ", (float)%.9g, %d, %d, {", nd->eps, k->wl.oc, w->ndim);
    for (int d = 0; d < 4; d++) th_buf_appendf(&wp, "%s%lld", d ? ", " : "", d < w->ndim ? (long long)w->shape[d] : 0LL);
    th_buf_appendf(&wp, "}, {");
    for (int d = 0; d < 8; d++) th_buf_appendf(&wp, "%s%d", d ? ", " : "", d < TC_PACK_NPARAMS ? pk[d] : 0);
    th_buf_appendf(&wp, "}, %lld, %lld},\n", (long long)wo[i], (long long)bo[i]);
    nw++;
  }
  if (nw == 0) th_buf_appendf(&wp, "  {NULL, NULL, NULL, NULL, NULL, NULL, 0.0f, 0, 0, {0}, {0}, -1, -1},\n");
  th_buf_appendf(&wp, "};\n");
  int64_t in_off = g->nodes[0].out.offset, out_off = g->nodes[tc_graph_storage(g, g->output)].out.offset;
  th_buf_appendf(b, "},\n  %lld, %lld, %lld, %lld, %d};\n\n", (long long)tc_tensor_numel(in),
                 (long long)tc_tensor_numel(out), (long long)ws * 4, (long long)woff * 4, ncalls);
  th_buf_appendf(b, "static const int64_t th__workspace_floats = %lld, th__weights_floats = %lld;\n",
                 (long long)ws, (long long)woff);
  th_buf_appendf(b, "static const int64_t th__in_off = %lld, th__out_off = %lld;\n\n", (long long)in_off,
                 (long long)out_off);
  th_buf_appendf(b, "static const struct th__call {\n  void (*fn)(void *const *);\n  int nargs;\n"
                    "  int space[5];\n  int64_t off[5];\n} th__calls[] = {\n");
  for (int i = 0; rc == TH_OK && i < ncalls; i++) {
    const tc_call *c = &calls[i];
    th_buf_appendf(b, "  {%s, %d, {", ks[call_kernel[i]].fn, c->nargs);
    for (int a = 0; a < 5; a++) th_buf_appendf(b, "%s%d", a ? ", " : "", a < c->nargs ? c->arg_space[a] : 0);
    th_buf_appendf(b, "}, {");
    for (int a = 0; a < 5; a++) {
      int64_t off = 0;
      if (a < c->nargs) {
        if (c->arg_space[a] == TC_SPACE_WORK) off = c->arg_off[a];
        else if (c->arg_space[a] == TC_SPACE_WEIGHTS) off = wo[i];
        else if (c->arg_space[a] == TC_SPACE_BIAS) off = bo[i];
      }
      th_buf_appendf(b, "%s%lld", a ? ", " : "", (long long)off);
    }
    th_buf_appendf(b, "}}, /* %s */\n", tc_op_name(g->nodes[c->node].op));
  }
  th_buf_appendf(b, "};\n\n");
  if (rc == TH_OK) rc = th_buf_append(b, wp.data, wp.len);
  if (rc == TH_OK) rc = th_buf_appendf(b, "\n");
  if (rc == TH_OK) rc = th_buf_append(b, tc_model_src_model_rt_c, sizeof tc_model_src_model_rt_c - 1);
  th_buf_free(&wp);
  free(wo);
  free(bo);
  if (rc == TH_OK) *weights_floats = woff;
  return rc;
}

/* ---- build ------------------------------------------------------------------------------------------ */

static th_status tc__write(const char *dir, const char *name, const void *data, size_t n, char *path,
                           size_t pathlen) {
  int k = snprintf(path, pathlen, "%s/%s", dir, name);
  if (k < 0 || (size_t)k >= pathlen) return TH_ERR_TOO_LARGE;
  FILE *f = fopen(path, "wb");
  if (!f) return TH_ERR_IO;
  size_t w = fwrite(data, 1, n, f);
  int rc = fclose(f);
  return (w == n && rc == 0) ? TH_OK : TH_ERR_IO;
}

static int tc__cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median of v[0], v[stride], ... (n values, copied to tmp and sorted there). */
static double tc__median_strided(double *v, int n, int stride, double *tmp) {
  for (int i = 0; i < n; i++) tmp[i] = v[(size_t)i * (size_t)stride];
  qsort(tmp, (size_t)n, sizeof *tmp, tc__cmp_double);
  return n % 2 ? tmp[n / 2] : 0.5 * (tmp[n / 2 - 1] + tmp[n / 2]);
}

th_status tc__time_so(const char *so_path, const void *params, size_t params_len, int repeat, int profile,
                      tc_run_stats *st, char *err, size_t errlen) {
  memset(st, 0, sizeof *st);
  void *h = dlopen(so_path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    tc__seterr(err, errlen, "cannot load %s: %s", so_path, dlerror());
    return TH_ERR_RUNTIME;
  }
  typedef const struct th_model_info_view {
    const char *network, *target, *triple, *compiler_version;
    int batch, input_ndim;
    int64_t input_shape[4];
    int output_ndim;
    int64_t output_shape[4];
    size_t input_size, output_size, workspace_bytes, weights_bytes;
    int num_kernels;
  } *(*info_fn)(void);
  info_fn info = (info_fn)dlsym(h, "th_model_info");
  int (*create)(const void *, size_t, void **) =
      (int (*)(const void *, size_t, void **))dlsym(h, "th_model_create");
  int (*run)(void *, const float *, float *) = (int (*)(void *, const float *, float *))dlsym(h, "th_model_run");
  void (*fr)(void *) = (void (*)(void *))dlsym(h, "th_model_free");
  const char *(*lasterr)(void) = (const char *(*)(void))dlsym(h, "th_model_last_error");
  int (*runp)(void *, const float *, float *, double *) =
      (int (*)(void *, const float *, float *, double *))dlsym(h, "th_model_run_profiled");
  if (!info || !create || !run || !fr || !lasterr) {
    tc__seterr(err, errlen, "%s does not export the tunehub model ABI", so_path);
    dlclose(h);
    return TH_ERR_RUNTIME;
  }
  if (profile && !runp) {
    tc__seterr(err, errlen, "%s has no th_model_run_profiled: per-layer profiles need a CPU (llvm) bundle",
               so_path);
    dlclose(h);
    return TH_ERR_UNSUPPORTED;
  }
  void *m = NULL;
  if (create(params, params_len, &m) != 0) {
    tc__seterr(err, errlen, "th_model_create: %s", lasterr());
    dlclose(h);
    return TH_ERR_RUNTIME;
  }
  size_t nin = info()->input_size, nout = info()->output_size;
  float *x = malloc(nin * sizeof *x), *y = malloc(nout * sizeof *y);
  double *ts = malloc((size_t)(repeat > 0 ? repeat : 1) * sizeof *ts);
  int ncalls = profile ? info()->num_kernels : 0;
  /* calls[r * ncalls + i]: run r's seconds in call i */
  double *calls = profile ? calloc((size_t)repeat * (size_t)ncalls + 1, sizeof *calls) : NULL;
  double *call_ms = profile ? calloc((size_t)ncalls + 1, sizeof *call_ms) : NULL;
  th_status rc = (x && y && ts && (!profile || (calls && call_ms))) ? TH_OK : TH_ERR_NOMEM;
  for (size_t i = 0; rc == TH_OK && i < nin; i++) x[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
  for (int r = 0; rc == TH_OK && r < 3; r++) /* warm-up */
    if (run(m, x, y) != 0) rc = TH_ERR_RUNTIME;
  for (int r = 0; rc == TH_OK && r < repeat; r++) {
    double t0 = th_now_mono();
    if ((profile ? runp(m, x, y, calls + (size_t)r * (size_t)ncalls) : run(m, x, y)) != 0) rc = TH_ERR_RUNTIME;
    ts[r] = (th_now_mono() - t0) * 1e3;
  }
  double *tmp = ncalls ? malloc((size_t)repeat * sizeof *tmp) : NULL;
  if (ncalls && !tmp) rc = TH_ERR_NOMEM;
  for (int i = 0; rc == TH_OK && i < ncalls; i++)
    call_ms[i] = 1e3 * tc__median_strided(calls + i, repeat, ncalls, tmp);
  free(tmp);
  free(calls);
  for (size_t i = 0; rc == TH_OK && i < nout; i++)
    if (!isfinite(y[i])) {
      tc__seterr(err, errlen, "the model produced a non-finite output");
      rc = TH_ERR_WRONG_ANSWER;
    }
  if (rc == TH_ERR_RUNTIME) tc__seterr(err, errlen, "th_model_run: %s", lasterr());
  if (rc == TH_OK) {
    double s = 0, s2 = 0;
    for (int r = 0; r < repeat; r++) s += ts[r];
    double mean = s / repeat;
    for (int r = 0; r < repeat; r++) s2 += (ts[r] - mean) * (ts[r] - mean);
    qsort(ts, (size_t)repeat, sizeof *ts, tc__cmp_double);
    st->mean_ms = mean;
    st->median_ms = repeat % 2 ? ts[repeat / 2] : 0.5 * (ts[repeat / 2 - 1] + ts[repeat / 2]);
    st->std_ms = repeat > 1 ? sqrt(s2 / (repeat - 1)) : 0;
    st->min_ms = ts[0];
    st->n = repeat;
    st->ncalls = ncalls;
    st->call_ms = call_ms;
    call_ms = NULL;
  }
  free(call_ms);
  free(x);
  free(y);
  free(ts);
  fr(m);
  dlclose(h);
  return rc;
}

th_status tc_build_bundle(const tc_build_opts *o, const char *out_tar, const char *out_so,
                          char **manifest_json, char *err, size_t errlen) {
  if (err && errlen) err[0] = '\0';
  if (!o || !o->network || !o->framework) {
    tc__seterr(err, errlen, "tc_build_bundle: framework and network are required");
    return TH_ERR_INVALID;
  }
  if (strcmp(o->framework, "cuda") == 0) return tc_cuda_build_bundle(o, out_tar, out_so, manifest_json, err, errlen);
  if (strcmp(o->framework, "llvm") != 0) {
    tc__seterr(err, errlen, "unknown framework '%s' (valid: llvm, cuda)", o->framework);
    return TH_ERR_INVALID;
  }
  if (!tc_zoo_find(o->network)) return tc_zoo_build(o->network, 1, 0, 0, 0, NULL, err, errlen);
  if (o->batch < 1 || o->batch > 4096) {
    tc__seterr(err, errlen, "batch %d is outside 1..4096", o->batch);
    return TH_ERR_INVALID;
  }
  double t_start = th_now_mono();
  tc_target t;
  th_status rc = tc_target_host(&t);
  if (rc != TH_OK) tc__seterr(err, errlen, "LLVM has no target for this machine");

  /* work dir */
  char dir[2048];
  int own_dir = 0;
  if (rc == TH_OK) {
    if (o->work_dir) {
      snprintf(dir, sizeof dir, "%s", o->work_dir);
      rc = th_mkdir_p(dir);
    } else {
      const char *tmp = getenv("TMPDIR");
      snprintf(dir, sizeof dir, "%s/tunehub-build-XXXXXX", tmp && *tmp ? tmp : "/tmp");
      rc = mkdtemp(dir) ? TH_OK : TH_ERR_IO;
      own_dir = rc == TH_OK;
    }
    if (rc != TH_OK) tc__seterr(err, errlen, "cannot create the work directory %s", dir);
  }
  if (rc == TH_OK && tc__progress(o, "graph", 0, 1)) rc = TH_ERR_CANCELLED;

  /* graph, weights, passes, lowering */
  tc_graph *g = NULL;
  tc_call *calls = NULL;
  int ncalls = 0;
  int64_t ws = 0;
  th_buf params;
  th_buf_init(&params, (size_t)4 << 30);
  if (rc == TH_OK)
    rc = tc__lowered(o->network, o->batch, o->input_h, o->input_w, o->params == NULL, t.simd_lanes, &g,
                     &calls, &ncalls, &ws, err, errlen);
  if (rc == TH_OK) {
    if (o->params) {
      rc = tc_params_load(g, o->params, o->params_len, err, errlen);
      if (rc == TH_OK) rc = th_buf_append(&params, o->params, o->params_len);
    } else {
      rc = tc_params_write(g, &params);
    }
  }

  /* configs and kernels */
  tc__kernel *ks = NULL;
  int nk = 0;
  int *call_kernel = rc == TH_OK ? calloc((size_t)(ncalls ? ncalls : 1), sizeof *call_kernel) : NULL;
  if (rc == TH_OK && !call_kernel) rc = TH_ERR_NOMEM;
  if (rc == TH_OK) rc = tc__configs(o, &t, calls, ncalls, &ks, &nk, call_kernel, err, errlen);
  char objs_path[TC__MAX_JOBS][2200], modelc[2200], hdr[2200], so[2200];
  snprintf(so, sizeof so, "%s/model.so", dir);
  /* codegen: kernels split round-robin over one LLVM module per core, emitted in parallel */
  int njobs = 1;
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  if (ncpu > 1) njobs = ncpu < TC__MAX_JOBS ? (int)ncpu : TC__MAX_JOBS;
  if (njobs > nk) njobs = nk > 0 ? nk : 1;
  tc__cg_job jobs[TC__MAX_JOBS];
  memset(jobs, 0, sizeof jobs);
  for (int j = 0; rc == TH_OK && j < njobs; j++) {
    snprintf(objs_path[j], sizeof objs_path[j], "%s/kernels%d.o", dir, j);
    jobs[j].t = &t;
    jobs[j].ks = ks;
    jobs[j].nk = nk;
    jobs[j].first = j;
    jobs[j].step = njobs;
    jobs[j].path = objs_path[j];
    jobs[j].network = o->network;
  }
  if (rc == TH_OK && tc__progress(o, "kernels", 0, nk)) rc = TH_ERR_CANCELLED;
  if (rc == TH_OK) {
    pthread_t th[TC__MAX_JOBS];
    int started[TC__MAX_JOBS] = {0};
    for (int j = 1; j < njobs; j++) started[j] = pthread_create(&th[j], NULL, tc__cg_run, &jobs[j]) == 0;
    tc__cg_run(&jobs[0]);
    for (int j = 1; j < njobs; j++) {
      if (started[j]) pthread_join(th[j], NULL);
      else tc__cg_run(&jobs[j]);
    }
    for (int j = 0; j < njobs && rc == TH_OK; j++) {
      if (jobs[j].rc != TH_OK) {
        rc = jobs[j].rc;
        tc__seterr(err, errlen, "%s", jobs[j].err);
      }
    }
  }
  if (rc == TH_OK && tc__progress(o, "codegen", 1, 1)) rc = TH_ERR_CANCELLED;

  /* plan + link */
  th_buf plan;
  th_buf_init(&plan, (size_t)256 << 20);
  int64_t wfloats = 0;
  if (rc == TH_OK) rc = tc__gen_plan(g, &t, calls, ncalls, ks, nk, call_kernel, ws, &wfloats, &plan);
  if (rc == TH_OK) rc = tc__write(dir, "model.c", plan.data, plan.len, modelc, sizeof modelc);
  if (rc == TH_OK)
    rc = tc__write(dir, "tunehub_model.h", tc_model_src_tunehub_model_h,
                   sizeof tc_model_src_tunehub_model_h - 1, hdr, sizeof hdr);
  if (rc == TH_OK && tc__progress(o, "link", 0, 1)) rc = TH_ERR_CANCELLED;
  if (rc == TH_OK) {
    const char *objs[TC__MAX_JOBS];
    for (int j = 0; j < njobs; j++) objs[j] = objs_path[j];
    const char *srcs[1] = {modelc};
    rc = tc_link_so(njobs, objs, 1, srcs, so, err, errlen);
  }
  double t_build = th_now_mono() - t_start;

  /* measure */
  tc_run_stats st;
  memset(&st, 0, sizeof st);
  if (rc == TH_OK && o->measure) {
    if (tc__progress(o, "measure", 0, 1)) rc = TH_ERR_CANCELLED;
    if (rc == TH_OK)
      rc = tc__time_so(so, params.data, params.len, o->measure_repeat > 0 ? o->measure_repeat : 20, 0,
                       &st, err, errlen);
  }

  /* bundle */
  th_buf gj;
  th_buf_init(&gj, (size_t)64 << 20);
  if (rc == TH_OK) rc = tc_graph_to_json(g, &gj);
  if (rc == TH_OK && tc__progress(o, "bundle", 0, 1)) rc = TH_ERR_CANCELLED;
  if (rc == TH_OK) {
    tc__bundle_in bi;
    memset(&bi, 0, sizeof bi);
    bi.dir = dir;
    bi.network = o->network;
    bi.batch = o->batch;
    bi.target = &t;
    bi.graph = g;
    bi.nkernels = nk;
    bi.ncalls = ncalls;
    bi.kernels = ks;
    bi.call_kernel = call_kernel;
    bi.calls = calls;
    bi.measured = o->measure;
    bi.stats = st;
    bi.build_seconds = t_build;
    bi.workspace_bytes = ws * 4;
    bi.weights_bytes = wfloats * 4;
    bi.params = params.data;
    bi.params_len = params.len;
    bi.graph_json = gj.data;
    bi.graph_json_len = gj.len;
    rc = tc__bundle_write(&bi, out_tar, manifest_json, err, errlen);
  }
  if (rc == TH_OK && out_so) {
    char *data = NULL;
    size_t len = 0;
    rc = th_read_file(so, (size_t)1 << 31, &data, &len);
    if (rc == TH_OK) rc = th_write_file_atomic(out_so, data, len);
    if (rc != TH_OK) tc__seterr(err, errlen, "cannot write %s", out_so);
    free(data);
  }
  (void)hdr;
  if (rc != TH_OK && err && !err[0]) tc__seterr(err, errlen, "build failed: %s", th_status_str(rc));
  th_buf_free(&gj);
  th_buf_free(&plan);
  th_buf_free(&params);
  free(ks);
  free(call_kernel);
  free(calls);
  tc_graph_free(g);
  if (own_dir) (void)th_rm_rf(dir);
  return rc;
}
