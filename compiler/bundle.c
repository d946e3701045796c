/* Bundles, for every backend: the manifest (key, target, shapes, per-layer configs and their source,
 * latency, sha256 and size of every file; the backend adds its target object, build facts and per-layer
 * launch facts) and the .tar written with libarchive; tc_time_model, which dlopens a model .so and times it;
 * and tc_bundle_infer (tc_bundle_run), which reads a bundle back (bundle_read.c: nothing in it is trusted until
 * every file matches the manifest's digest), then dlopens the model, runs it on the caller's input files (or
 * the fill) and times it, and writes its outputs to files. */
#include <archive.h>
#include <archive_entry.h>
#include <dlfcn.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend_int.h"
#include "bundle_read.h"
#include "model/tunehub_model.h"
#include "ops.h"
#include "tc_model_embed.h"
#include "th_sha256.h"
#include "th_util.h"

typedef struct tc__file {
  const char *name;
  const void *data;
  size_t len;
  int owned;
} tc__file;

static void tc__sha_hex(const void *data, size_t n, char hex[65]) {
  th_sha256 s;
  unsigned char d[32];
  th_sha256_init(&s);
  th_sha256_update(&s, data, n);
  th_sha256_final(&s, d);
  th_hex(d, 32, hex);
}

static json_t *tc__shape(const tc_tensor *t) {
  json_t *a = json_array();
  for (int d = 0; d < t->ndim; d++) json_array_append_new(a, json_integer(t->shape[d]));
  return a;
}

/* {name, dtype, shape} of a network input or output (a 4-D float32 input also says its layout,
 * NCHW). */
static json_t *tc__tensor_json(const char *name, const tc_tensor *t, int is_input) {
  json_t *o = json_pack("{s:s,s:s,s:o}", "name", name ? name : "", "dtype", tc_dtype_name(t->dtype),
                        "shape", tc__shape(t));
  if (o && is_input && t->ndim == 4 && t->dtype == TC_DTYPE_F32)
    json_object_set_new(o, "layout", json_string("NCHW"));
  return o;
}

static json_t *tc__manifest(const tc__bundle_in *bi, const tc__file *files, int nfiles) {
  const tc_backend_target *t = bi->target;
  const tc_backend *be = t->backend;
  const tc_graph *g = bi->graph;
  json_t *m = json_object();
  json_object_set_new(m, "format", json_string("tunehub-bundle/1"));
  json_object_set_new(m, "key", json_pack("{s:s,s:s,s:i,s:s,s:s}", "framework", be->name, "network",
                                          bi->network, "batch", bi->batch, "target", t->str,
                                          "compiler_version", TH_VERSION));
  /* where the graph came from: the zoo's builder, or an uploaded ONNX file named by its bytes */
  json_t *src = json_pack("{s:s}", "kind", bi->onnx_sha256 ? "onnx" : "zoo");
  if (bi->onnx_sha256) {
    json_object_set_new(src, "sha256", json_string(bi->onnx_sha256));
    json_object_set_new(src, "shapes", bi->onnx_shapes ? json_string(bi->onnx_shapes) : json_null());
  }
  json_object_set_new(m, "network_source", src);
  json_object_set_new(m, "target", be->manifest_target(t));
  json_object_set_new(m, "precision", json_string(tc_precision_name(bi->precision)));
  json_object_set_new(m, "compiler_version", json_string(TH_VERSION));
  /* "input" and "output": the first ones, for consumers older than "inputs" and "outputs" */
  json_object_set_new(m, "input",
                      tc__tensor_json(g->nodes[g->inputs[0]].name, &g->nodes[g->inputs[0]].out, 1));
  json_object_set_new(m, "output",
                      tc__tensor_json(g->output_names[0], &g->nodes[g->outputs[0]].out, 0));
  json_t *ins = json_array(), *outs = json_array();
  for (int k = 0; k < g->ninputs; k++)
    json_array_append_new(
        ins, tc__tensor_json(g->nodes[g->inputs[k]].name, &g->nodes[g->inputs[k]].out, 1));
  for (int k = 0; k < g->noutputs; k++)
    json_array_append_new(outs,
                          tc__tensor_json(g->output_names[k], &g->nodes[g->outputs[k]].out, 0));
  json_object_set_new(m, "inputs", ins);
  json_object_set_new(m, "outputs", outs);
  json_object_set_new(m, "flops", json_real(tc_graph_flops(g)));
  json_object_set_new(m, "params", json_integer(tc_graph_param_count(g)));
  json_object_set_new(m, "workspace_bytes", json_integer(bi->workspace_bytes));
  json_object_set_new(m, "weights_bytes", json_integer(bi->weights_bytes));
  json_object_set_new(m, "num_kernels", json_integer(bi->nkernels));
  json_object_set_new(m, "num_calls", json_integer(bi->ncalls));
  json_object_set_new(m, "build_seconds", json_real(bi->build_seconds));
  /* a build for timing fusions says so: it can never pass for a normal one */
  if (bi->fuse_off) {
    json_t *off = json_array();
    for (int k = 1; k <= TC_FUSE_ALL; k <<= 1)
      if (bi->fuse_off & k) json_array_append_new(off, json_string(tc_fuse_group_name(k)));
    json_object_set_new(m, "fusion_disabled", off);
  }
  if (be->manifest_build) be->manifest_build(bi->emit, m);
  int counts[3] = {0, 0, 0};
  json_t *layers = json_array();
  for (int i = 0; i < bi->ncalls; i++) {
    const tc__kernel *k = &bi->kernels[bi->call_kernel[i]];
    const tc_node *nd = &g->nodes[bi->calls[i].node];
    char cfg[1024] = "";
    if (tc_config_str(&k->space, &k->cfg, cfg, sizeof cfg) != TH_OK) snprintf(cfg, sizeof cfg, "?");
    json_t *l = json_pack("{s:i,s:s,s:s,s:s,s:s,s:s,s:f}", "index", i, "op", tc_op_name(nd->op), "kernel",
                          tc_kernel_name(k->wl.kernel), "workload", k->key, "config", cfg, "source",
                          k->source, "flops", tc_workload_flops(&k->wl));
    if (nd->name) json_object_set_new(l, "name", json_string(nd->name));
    json_object_set_new(l, "function", json_string(k->fn));
    if (be->manifest_layer) be->manifest_layer(bi->emit, bi->call_kernel[i], l);
    json_array_append_new(layers, l);
    counts[strcmp(k->source, "tuned") == 0 ? 0 : strcmp(k->source, "transferred") == 0 ? 1 : 2]++;
  }
  json_object_set_new(m, "layers", layers);
  json_object_set_new(m, "config_sources", json_pack("{s:i,s:i,s:i}", "tuned", counts[0], "transferred",
                                                     counts[1], "fallback", counts[2]));
  /* "tuned": at least one layer runs a config measured for its own workload on this target */
  json_object_set_new(m, "tuned", json_boolean(counts[0] > 0));
  /* over n rounds of runs_per_round runs each (tc_time_opts): min and max are the spread of the rounds' means;
   * isolated says the model ran in a process of its own (the daemon's measurement worker), not the builder's */
  if (bi->measured)
    json_object_set_new(m, "latency_ms",
                        json_pack("{s:f,s:f,s:f,s:f,s:f,s:i,s:i,s:f,s:b}", "mean", bi->stats.mean_ms, "median",
                                  bi->stats.median_ms, "std", bi->stats.std_ms, "min", bi->stats.min_ms, "max",
                                  bi->stats.max_ms, "n", bi->stats.n, "runs_per_round", bi->stats.number,
                                  "seconds", bi->stats.seconds, "isolated", bi->measured_isolated));
  else
    json_object_set_new(m, "latency_ms", json_null());
  if (bi->unmeasured_why) json_object_set_new(m, "unmeasured", json_string(bi->unmeasured_why));
  json_t *fs = json_object();
  for (int i = 0; i < nfiles; i++) {
    char hex[65];
    tc__sha_hex(files[i].data, files[i].len, hex);
    json_object_set_new(fs, files[i].name, json_pack("{s:s,s:I}", "sha256", hex, "size",
                                                     (json_int_t)files[i].len));
  }
  json_object_set_new(m, "files", fs);
  return m;
}

/* The manifest's facts of one build's run, not of its inputs: the wall clock (build_seconds, cuda's
 * nvrtc_seconds), the timing (latency_ms), why there was none (unmeasured: it names this machine's
 * devices) and the machine that built it (target.built_on: host name and CPU). They are in the
 * manifest text tc_build_bundle hands back (the store keeps it in the version's row, and
 * /models/.../manifest serves it) and never in the bundle's manifest.json. */
static const char *const tc__measured_keys[] = {"build_seconds", "nvrtc_seconds", "latency_ms",
                                                "unmeasured"};

static th_status tc__tar_entry(struct archive *a, const char *name, const void *data, size_t len, int mode) {
  struct archive_entry *e = archive_entry_new();
  if (!e) return TH_ERR_NOMEM;
  archive_entry_set_pathname(e, name);
  archive_entry_set_size(e, (la_int64_t)len);
  archive_entry_set_filetype(e, AE_IFREG);
  archive_entry_set_perm(e, mode);
  archive_entry_set_mtime(e, 0, 0); /* reproducible bytes for equal inputs */
  th_status rc = archive_write_header(a, e) == ARCHIVE_OK ? TH_OK : TH_ERR_IO;
  if (rc == TH_OK && len > 0 && archive_write_data(a, data, len) != (la_ssize_t)len) rc = TH_ERR_IO;
  archive_entry_free(e);
  return rc;
}

th_status tc__bundle_write(const tc__bundle_in *bi, const char *out_tar, char **manifest_json, char *err,
                           size_t errlen) {
  char so_path[2200];
  snprintf(so_path, sizeof so_path, "%s/model.so", bi->dir);
  char *so = NULL;
  size_t so_len = 0;
  th_status rc = th_read_file(so_path, (size_t)1 << 31, &so, &so_len);
  if (rc != TH_OK) {
    tc__seterr(err, errlen, "cannot read %s", so_path);
    return rc;
  }
  tc__file files[6] = {
      {"model.so", so, so_len, 1},
      {"tunehub_model.h", tc_model_src_tunehub_model_h, sizeof tc_model_src_tunehub_model_h - 1, 0},
      {"params.bin", bi->params, bi->params_len, 0},
      {"graph.json", bi->graph_json, bi->graph_json_len, 0},
      {"example.c", tc_model_src_example_c, sizeof tc_model_src_example_c - 1, 0},
      {bi->emit->extra_name, bi->emit->extra, bi->emit->extra_len, 0},
  };
  int nfiles = bi->emit->extra_name ? 6 : 5; /* the backend's own file (kernels/kernels.cu) last */
  json_t *m = tc__manifest(bi, files, nfiles);
  char *text = m ? json_dumps(m, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
  char *in_tar = NULL;
  if (m && text) {
    /* the tar's copy holds nothing of this build's run (tc__measured_keys): the same records,
     * network and compiler give the same bundle bytes, so a signed digest can be checked by
     * rebuilding; the text handed back (the store's row) keeps them */
    for (size_t i = 0; i < sizeof tc__measured_keys / sizeof *tc__measured_keys; i++)
      json_object_del(m, tc__measured_keys[i]);
    json_object_del(json_object_get(m, "target"), "built_on");
    in_tar = json_dumps(m, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  }
  json_decref(m);
  if (!text || !in_tar) rc = TH_ERR_NOMEM;
  if (rc == TH_OK && out_tar) {
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", out_tar, (long)getpid());
    struct archive *a = archive_write_new();
    if (!a) rc = TH_ERR_NOMEM;
    if (rc == TH_OK && (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
                        archive_write_open_filename(a, tmp) != ARCHIVE_OK)) {
      tc__seterr(err, errlen, "cannot write %s: %s", tmp, archive_error_string(a));
      rc = TH_ERR_IO;
    }
    if (rc == TH_OK) rc = tc__tar_entry(a, "manifest.json", in_tar, strlen(in_tar), 0644);
    for (int i = 0; rc == TH_OK && i < nfiles; i++)
      rc = tc__tar_entry(a, files[i].name, files[i].data, files[i].len, i == 0 ? 0755 : 0644);
    if (a && archive_write_close(a) != ARCHIVE_OK && rc == TH_OK) rc = TH_ERR_IO;
    if (rc != TH_OK && err && !err[0])
      tc__seterr(err, errlen, "writing %s failed: %s", out_tar, a ? archive_error_string(a) : "no memory");
    if (a) archive_write_free(a);
    if (rc == TH_OK && rename(tmp, out_tar) != 0) {
      tc__seterr(err, errlen, "cannot rename %s to %s", tmp, out_tar);
      rc = TH_ERR_IO;
    }
    if (rc != TH_OK) unlink(tmp);
  }
  if (rc == TH_OK && manifest_json) {
    *manifest_json = text;
    text = NULL;
  }
  free(text);
  free(in_tar);
  free(so);
  return rc;
}

/* ---- timing a model .so -------------------------------------------------------------------------------- */

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

/* The inputs tunehub times a model with (and example.c runs it on): float32 a fixed pattern in
 * [-0.5, 0.5), int64 i % 2, which every embedding table accepts (token types, masks, vocabularies).
 */
static void tc__fill_input(const struct th_tensor_desc *d, void *buf) {
  if (d->dtype == TH_DTYPE_I64) {
    int64_t *x = buf;
    for (size_t i = 0; i < d->count; i++) x[i] = (int64_t)(i % 2);
  } else {
    float *x = buf;
    for (size_t i = 0; i < d->count; i++) x[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
  }
}

static size_t tc__desc_bytes(const struct th_tensor_desc *d) {
  return d->count * (d->dtype == TH_DTYPE_I64 ? sizeof(int64_t) : sizeof(float));
}

typedef int (*tc__run_io_fn)(void *, const void *const *, void *const *);
typedef int (*tc__run_io_prof_fn)(void *, const void *const *, void *const *, double *);

/* "float32 [2, 3, 224, 224]" */
static void tc__desc_str(const struct th_tensor_desc *d, char *out, size_t n) {
  size_t used = (size_t)snprintf(out, n, "%s [", d->dtype == TH_DTYPE_I64 ? "int64" : "float32");
  for (int i = 0; i < d->ndim && used < n; i++)
    used += (size_t)snprintf(out + used, n - used, "%s%lld", i ? ", " : "", (long long)d->shape[i]);
  if (used < n) snprintf(out + used, n - used, "]");
}

/* Fills ins[k] for every input of mi: from the file o names for it (its size checked against the
 * input's), else with tc__fill_input. ins[k] are malloc'd (the caller frees them, also on failure). */
static th_status tc__load_inputs(const struct th_model_info *mi, const tc_run_opts *o, const void **ins,
                                 char *err, size_t errlen) {
  const char *path[8] = {0};
  for (int i = 0; i < o->ninputs; i++) {
    int k = 0;
    while (k < mi->num_inputs && strcmp(mi->inputs[k].name, o->inputs[i].name) != 0) k++;
    if (k == mi->num_inputs) {
      char valid[512] = "";
      size_t used = 0;
      for (int j = 0; j < mi->num_inputs && used < sizeof valid; j++) {
        int w = snprintf(valid + used, sizeof valid - used, "%s%s", j ? ", " : "", mi->inputs[j].name);
        if (w > 0) used += (size_t)w;
      }
      tc__seterr(err, errlen, "the model has no input '%s'; valid inputs: %s", o->inputs[i].name, valid);
      return TH_ERR_INVALID;
    }
    if (path[k]) {
      tc__seterr(err, errlen, "input '%s' is given twice", o->inputs[i].name);
      return TH_ERR_INVALID;
    }
    path[k] = o->inputs[i].path;
  }
  for (int k = 0; k < mi->num_inputs; k++) {
    const struct th_tensor_desc *d = &mi->inputs[k];
    size_t want = tc__desc_bytes(d);
    if (!path[k]) {
      void *x = malloc(want + 1);
      if (!x) return TH_ERR_NOMEM;
      tc__fill_input(d, x);
      ins[k] = x;
      continue;
    }
    struct stat sb;
    if (stat(path[k], &sb) != 0) {
      tc__seterr(err, errlen, "input '%s': cannot read %s: %s", d->name, path[k], strerror(errno));
      return TH_ERR_IO;
    }
    if ((size_t)sb.st_size != want) {
      char desc[160];
      tc__desc_str(d, desc, sizeof desc);
      tc__seterr(err, errlen, "input '%s' (%s at batch %d): expected %zu bytes, but %s has %lld bytes",
                 d->name, desc, mi->batch, want, path[k], (long long)sb.st_size);
      return TH_ERR_INVALID;
    }
    char *x = NULL;
    size_t len = 0;
    th_status rc = th_read_file(path[k], want, &x, &len);
    if (rc == TH_OK && len != want) rc = TH_ERR_IO; /* the file changed under us */
    if (rc != TH_OK) {
      free(x);
      tc__seterr(err, errlen, "input '%s': cannot read %s (%s)", d->name, path[k], th_status_str(rc));
      return rc == TH_ERR_NOMEM ? rc : TH_ERR_IO;
    }
    ins[k] = x;
  }
  return TH_OK;
}

th_status tc_run_output_path(const char *dir, const char *name, char *path, size_t n) {
  int w = snprintf(path, n, "%s/%s.bin", dir, name);
  if (w < 0 || (size_t)w >= n) return TH_ERR_TOO_LARGE;
  for (char *c = path + strlen(dir) + 1; *c; c++)
    if (*c == '/') *c = '_';
  return TH_OK;
}

static th_status tc__write_outputs(const struct th_model_info *mi, void *const *outs, const char *dir,
                                   char *err, size_t errlen) {
  th_status rc = th_mkdir_p(dir);
  if (rc != TH_OK) tc__seterr(err, errlen, "cannot create the output directory %s", dir);
  for (int k = 0; rc == TH_OK && k < mi->num_outputs; k++) {
    char path[4200];
    rc = tc_run_output_path(dir, mi->outputs[k].name, path, sizeof path);
    if (rc == TH_OK) rc = th_write_file_atomic(path, outs[k], tc__desc_bytes(&mi->outputs[k]));
    if (rc != TH_OK) tc__seterr(err, errlen, "cannot write output '%s' to %s", mi->outputs[k].name, dir);
  }
  return rc == TH_OK ? TH_OK : TH_ERR_IO;
}

/* dlopens so_path and runs it as o says (tc_bundle_infer's contract), with the stats in *st. */
static th_status tc__run_so(const char *so_path, const void *params, size_t params_len, const tc_run_opts *o,
                            tc_run_stats *st, char *err, size_t errlen) {
  memset(st, 0, sizeof *st);
  int repeat = o->repeat > 0 ? o->repeat : 20, profile = o->profile;
  void *h = dlopen(so_path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    tc__seterr(err, errlen, "cannot load %s: %s", so_path, dlerror());
    return TH_ERR_RUNTIME;
  }
  typedef const struct th_model_info *(*info_fn)(void);
  info_fn info = (info_fn)dlsym(h, "th_model_info");
  int (*create)(const void *, size_t, void **) =
      (int (*)(const void *, size_t, void **))dlsym(h, "th_model_create");
  tc__run_io_fn run = (tc__run_io_fn)dlsym(h, "th_model_run_io");
  void (*fr)(void *) = (void (*)(void *))dlsym(h, "th_model_free");
  const char *(*lasterr)(void) = (const char *(*)(void))dlsym(h, "th_model_last_error");
  tc__run_io_prof_fn runp = (tc__run_io_prof_fn)dlsym(h, "th_model_run_io_profiled");
  if (!info || !create || !run || !fr || !lasterr) {
    tc__seterr(err, errlen, "%s does not export the tunehub model ABI (th_model_run_io)", so_path);
    dlclose(h);
    return TH_ERR_RUNTIME;
  }
  if (profile && !runp) {
    tc__seterr(err, errlen,
               "%s has no th_model_run_io_profiled: per-layer profiles need a CPU (llvm) bundle",
               so_path);
    dlclose(h);
    return TH_ERR_UNSUPPORTED;
  }
  const struct th_model_info *mi = info();
  int nin = mi->num_inputs, nout = mi->num_outputs;
  const void *ins[8] = {0};
  void *outs[8] = {0};
  void *m = NULL;
  double *ts = malloc((size_t)repeat * sizeof *ts);
  int ncalls = profile ? mi->num_kernels : 0;
  /* calls[r * ncalls + i]: run r's seconds in call i */
  double *calls = profile ? calloc((size_t)repeat * (size_t)ncalls + 1, sizeof *calls) : NULL;
  double *call_ms = profile ? calloc((size_t)ncalls + 1, sizeof *call_ms) : NULL;
  th_status rc = (ts && (!profile || (calls && call_ms))) ? TH_OK : TH_ERR_NOMEM;
  if (rc == TH_OK && (nin < 1 || nin > 8 || nout < 1 || nout > 8)) {
    tc__seterr(err, errlen, "%s declares %d inputs and %d outputs (1..8 each)", so_path, nin, nout);
    rc = TH_ERR_RUNTIME;
  }
  /* the inputs before the model: a wrong file is refused before the weights are packed */
  if (rc == TH_OK) rc = tc__load_inputs(mi, o, ins, err, errlen);
  if (rc == TH_OK && create(params, params_len, &m) != 0) {
    tc__seterr(err, errlen, "th_model_create: %s", lasterr());
    rc = TH_ERR_RUNTIME;
  }
  for (int k = 0; rc == TH_OK && k < nout; k++)
    if (!(outs[k] = malloc(tc__desc_bytes(&mi->outputs[k]) + 1))) rc = TH_ERR_NOMEM;
  /* warm-up: after the first run (which also shows the model runs), only while the runs fit in a tenth of the
   * budget; the last one's time sizes the rounds */
  double t_start = th_now_mono(), one = 0;
  for (int r = 0; rc == TH_OK && r < o->warmup; r++) {
    if (r > 0 && o->budget_s > 0 && th_now_mono() - t_start > 0.1 * o->budget_s) break;
    double t0 = th_now_mono();
    if (run(m, ins, outs) != 0) rc = TH_ERR_RUNTIME;
    one = th_now_mono() - t0;
  }
  int number = 1; /* runs per round; a profile keeps one run per round (its per-call times are per run) */
  if (!profile && o->min_round_ms > 0 && one > 0) {
    double want = ceil(o->min_round_ms * 1e-3 / one);
    number = want > 1000 ? 1000 : want < 1 ? 1 : (int)want;
  }
  /* a round also ends after a third of the budget, so that a model which slows down after the warm-up (another
   * process took the cores) still gets three rounds within the budget rather than one long one */
  double round_cap = o->budget_s > 0 ? o->budget_s / 3 : 0;
  double t_rounds = th_now_mono();
  int rounds = 0;
  for (int r = 0; rc == TH_OK && r < repeat; r++) {
    double el = th_now_mono() - t_rounds;
    if (r > 0 && o->budget_s > 0 && el >= o->budget_s && (r >= 3 || el >= 3 * o->budget_s)) break;
    double t0 = th_now_mono();
    int k = 0;
    while (rc == TH_OK && k < number) {
      if ((profile ? runp(m, ins, outs, calls + (size_t)r * (size_t)ncalls) : run(m, ins, outs)) != 0)
        rc = TH_ERR_RUNTIME;
      k++;
      if (round_cap > 0 && th_now_mono() - t0 >= round_cap) break;
    }
    ts[r] = (th_now_mono() - t0) * 1e3 / k;
    rounds++;
  }
  double seconds = th_now_mono() - t_start;
  double *tmp = ncalls ? malloc((size_t)repeat * sizeof *tmp) : NULL;
  if (ncalls && !tmp) rc = TH_ERR_NOMEM;
  for (int i = 0; rc == TH_OK && i < ncalls; i++)
    call_ms[i] = 1e3 * tc__median_strided(calls + i, rounds, ncalls, tmp);
  free(tmp);
  free(calls);
  for (int k = 0; rc == TH_OK && k < nout; k++) {
    /* on the caller's own inputs (every one given) a NaN or infinity is the model's answer */
    if (mi->outputs[k].dtype != TH_DTYPE_F32 || o->nonfinite_ok || o->ninputs == nin) continue;
    const float *y = outs[k];
    for (size_t i = 0; rc == TH_OK && i < mi->outputs[k].count; i++)
      if (!isfinite(y[i])) {
        tc__seterr(err, errlen, "the model produced a non-finite output (%s)", mi->outputs[k].name);
        rc = TH_ERR_WRONG_ANSWER;
      }
  }
  if (rc == TH_ERR_RUNTIME && !(err && err[0]))
    tc__seterr(err, errlen, "th_model_run_io: %s", lasterr());
  if (rc == TH_OK && o->output_dir) rc = tc__write_outputs(mi, outs, o->output_dir, err, errlen);
  if (rc == TH_OK) {
    int n = rounds;
    double s = 0, s2 = 0;
    for (int r = 0; r < n; r++) s += ts[r];
    double mean = s / n;
    for (int r = 0; r < n; r++) s2 += (ts[r] - mean) * (ts[r] - mean);
    qsort(ts, (size_t)n, sizeof *ts, tc__cmp_double);
    st->mean_ms = mean;
    st->median_ms = n % 2 ? ts[n / 2] : 0.5 * (ts[n / 2 - 1] + ts[n / 2]);
    st->std_ms = n > 1 ? sqrt(s2 / (n - 1)) : 0;
    st->min_ms = ts[0];
    st->max_ms = ts[n - 1];
    st->n = n;
    st->number = number;
    st->seconds = seconds;
    st->ncalls = ncalls;
    st->call_ms = call_ms;
    call_ms = NULL;
  }
  free(call_ms);
  for (int k = 0; k < 8; k++) {
    free((void *)ins[k]);
    free(outs[k]);
  }
  free(ts);
  if (m) fr(m);
  dlclose(h);
  return rc;
}

void tc_time_opts_default(tc_time_opts *t) {
  t->budget_s = 2.0;
  t->max_rounds = 10;
  t->min_round_ms = 50;
  t->warmup = 3;
  t->nonfinite_ok = 0;
}

th_status tc_time_model(const char *so_path, const void *params, size_t params_len, const tc_time_opts *t,
                        tc_run_stats *st, char *err, size_t errlen) {
  tc_time_opts d;
  if (!t) {
    tc_time_opts_default(&d);
    t = &d;
  }
  tc_run_opts o;
  memset(&o, 0, sizeof o);
  o.repeat = t->max_rounds > 0 ? t->max_rounds : 10;
  o.warmup = t->warmup;
  o.budget_s = t->budget_s;
  o.min_round_ms = t->min_round_ms;
  o.nonfinite_ok = t->nonfinite_ok;
  return tc__run_so(so_path, params, params_len, &o, st, err, errlen);
}

/* The options of plain timing (tc_bundle_run, tc_bundle_profile): 3 warm-up runs, then `repeat` rounds of one
 * run each with no time bound, the fill. */
static tc_run_opts tc__timing_opts(int repeat, int profile) {
  tc_run_opts o;
  memset(&o, 0, sizeof o);
  o.repeat = repeat;
  o.warmup = 3;
  o.profile = profile;
  return o;
}

/* ---- reading a bundle back -------------------------------------------------------------------------- */

th_status tc_bundle_infer(const char *tar_path, const tc_run_opts *o, tc_run_stats *out, char *err,
                          size_t errlen) {
  if (err && errlen) err[0] = '\0';
  if (!tar_path || !o || !out || o->ninputs < 0 || (o->ninputs && !o->inputs)) return TH_ERR_INVALID;
  int keep_manifest = o->profile || o->output_dir;
  tc_bundle_files files;
  th_status rc = tc_bundle_read(tar_path, &files, err, errlen);
  if (rc != TH_OK) return rc;
  char *manifest = NULL;
  if (keep_manifest) {
    manifest = files.manifest;
    files.manifest = NULL;
  }
  char dir[1024] = "";
  if (th_mkdtemp("tunehub-run", dir, sizeof dir) != TH_OK) {
    dir[0] = '\0';
    tc__seterr(err, errlen, "cannot create a temporary directory");
    rc = TH_ERR_IO;
  }
  char so[1100];
  snprintf(so, sizeof so, "%s/model.so", dir);
  if (rc == TH_OK) {
    FILE *f = fopen(so, "wbe");
    if (!f || fwrite(files.data[TC_BUNDLE_SO], 1, files.len[TC_BUNDLE_SO], f) != files.len[TC_BUNDLE_SO])
      rc = TH_ERR_IO;
    if (f && fclose(f) != 0) rc = TH_ERR_IO;
    if (rc != TH_OK) tc__seterr(err, errlen, "cannot write %s", so);
  }
  tc_run_stats st;
  if (rc == TH_OK)
    rc = tc__run_so(so, files.data[TC_BUNDLE_PARAMS], files.len[TC_BUNDLE_PARAMS], o, &st, err, errlen);
  if (dir[0]) (void)th_rm_rf(dir);
  tc_bundle_files_free(&files);
  if (rc == TH_OK) {
    st.manifest = manifest;
    manifest = NULL;
    *out = st;
  }
  free(manifest);
  return rc;
}

th_status tc_bundle_run(const char *tar_path, int repeat, tc_run_stats *out, char *err, size_t errlen) {
  tc_run_opts o = tc__timing_opts(repeat, 0);
  return tc_bundle_infer(tar_path, &o, out, err, errlen);
}

th_status tc_bundle_profile(const char *tar_path, int repeat, tc_run_stats *out, char *err, size_t errlen) {
  tc_run_opts o = tc__timing_opts(repeat, 1);
  return tc_bundle_infer(tar_path, &o, out, err, errlen);
}

void tc_run_stats_free(tc_run_stats *s) {
  if (!s) return;
  free(s->call_ms);
  free(s->manifest);
  s->call_ms = NULL;
  s->manifest = NULL;
  s->ncalls = 0;
}
