/* The CUDA build path (tc_build_bundle with framework "cuda"): zoo graph -> batch-norm folding and
 * epilogue fusion (no NCHWc layout pass: GPU kernels read plain NCHW) -> memory plan -> kernel calls ->
 * one config per distinct workload (lookup or GPU fallback) -> one CUDA translation unit with every
 * kernel -> one NVRTC call (cubin + PTX) -> a generated model.c (tables: kernels with launch shapes,
 * calls, weights; the cubin and PTX pulled in with the assembler's .incbin, so the host part compiles in
 * well under a second) + model_rt_cuda.c -> model.so -> the bundle: the CPU bundle's files plus
 * kernels/kernels.cu, and a manifest that says framework cuda, the arch and every layer's config source. */
#include <archive.h>
#include <archive_entry.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build_int.h"
#include "ops.h"
#include "params.h"
#include "passes/passes.h"
#include "tc.h"
#include "tc_cuda.h"
#include "tc_cuda_embed.h"
#include "tc_model_embed.h"
#include "llvm/tc_llvm.h"
#include "th_sha256.h"
#include "th_util.h"
#include "zoo.h"

typedef struct tc__ck {
  tc_workload wl;
  tc_config cfg;
  tc_space space;
  char key[192];
  char source[16];
  char fn[32];
  tc_cuda_launch launch;
} tc__ck;

static int tc__cprog(const tc_build_opts *o, const char *stage, int done, int total) {
  return o->progress ? o->progress(o->progress_ctx, stage, done, total) : 0;
}

/* zoo -> fold_bn -> fuse -> plan -> lower (no layout pass). */
static th_status tc__cuda_lowered(const char *network, int batch, int h, int w, int weights, tc_graph **gout,
                                  tc_call **calls, int *ncalls, int64_t *ws, char *err, size_t errlen) {
  tc_graph *g = NULL;
  th_status rc = tc_zoo_build(network, batch, h, w, weights, &g, err, errlen);
  if (rc != TH_OK) return rc;
  rc = tc_pass_fold_bn(g);
  if (rc == TH_OK) rc = tc_pass_fuse(g);
  if (rc == TH_OK) rc = tc_pass_plan_memory(g, ws);
  if (rc == TH_OK) rc = tc_lower(g, calls, ncalls);
  if (rc != TH_OK) {
    tc__seterr(err, errlen, "%s: %s", network, g->err[0] ? g->err : th_status_str(rc));
    tc_graph_free(g);
    return rc;
  }
  *gout = g;
  return TH_OK;
}

th_status tc_cuda_network_tasks(const char *network, int batch, tc_task **tasks, int *n) {
  if (!tasks || !n || !network) return TH_ERR_INVALID;
  tc_graph *g = NULL;
  tc_call *calls = NULL;
  int ncalls = 0;
  int64_t ws = 0;
  th_status rc = tc__cuda_lowered(network, batch, 0, 0, 0, &g, &calls, &ncalls, &ws, NULL, 0);
  if (rc != TH_OK) return rc;
  tc_task *ts = calloc((size_t)(ncalls ? ncalls : 1), sizeof *ts);
  int nt = 0;
  if (!ts) rc = TH_ERR_NOMEM;
  for (int i = 0; rc == TH_OK && i < ncalls; i++) {
    char key[192];
    rc = tc_workload_key(&calls[i].wl, key, sizeof key);
    int found = -1;
    for (int k = 0; rc == TH_OK && k < nt && found < 0; k++)
      if (strcmp(ts[k].key, key) == 0) found = k;
    if (rc != TH_OK) break;
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

static th_status tc__cuda_configs(const tc_build_opts *o, const tc_cuda_target *t, const tc_call *calls,
                                  int ncalls, tc__ck **kout, int *nk, int *call_kernel, char *err,
                                  size_t errlen) {
  tc__ck *ks = calloc((size_t)(ncalls ? ncalls : 1), sizeof *ks);
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
    tc__ck *k = &ks[n];
    k->wl = calls[i].wl;
    memcpy(k->key, key, sizeof key);
    snprintf(k->fn, sizeof k->fn, "th_k%d", n);
    rc = tc_cuda_space(&k->wl, t, &k->space);
    if (rc != TH_OK) {
      tc__seterr(err, errlen, "no GPU template for workload %s", key);
      break;
    }
    th_status lr = TH_ERR_NOT_FOUND;
    if (o->lookup) {
      char src[16] = "tuned";
      tc_config c;
      memset(&c, 0, sizeof c);
      lr = o->lookup(o->lookup_ctx, &k->wl, key, &k->space, &c, src);
      if (lr == TH_OK && tc_cuda_valid(&k->wl, t, &k->space, &c, NULL, 0) == TH_OK) {
        k->cfg = c;
        src[sizeof src - 1] = '\0';
        snprintf(k->source, sizeof k->source, "%s", src);
      } else if (lr == TH_OK) {
        lr = TH_ERR_NOT_FOUND; /* a record that does not fit this space or device: fall back */
      } else if (lr != TH_ERR_NOT_FOUND) {
        tc__seterr(err, errlen, "config lookup failed for %s: %s", key, th_status_str(lr));
        rc = lr;
        break;
      }
    }
    if (lr != TH_OK) {
      rc = tc_cuda_fallback(&k->wl, t, &k->space, &k->cfg);
      snprintf(k->source, sizeof k->source, "fallback");
      if (rc != TH_OK) tc__seterr(err, errlen, "no valid GPU config for %s", key);
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

static void tc__cstr2(th_buf *b, const char *s) {
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

static const char *tc__pn(const tc_graph *g, int id) {
  return id >= 0 ? g->params[id].name : NULL;
}

/* The generated host part: tables + .incbin of the cubin and PTX + model_rt_cuda.c. */
static th_status tc__cuda_plan(const tc_graph *g, const tc_cuda_target *t, const tc_call *calls, int ncalls,
                               const tc__ck *ks, int nk, const int *call_kernel, int64_t ws, const char *dir,
                               int64_t *weights_floats, th_buf *b) {
  const tc_tensor *in = &g->nodes[0].out, *out = &g->nodes[g->output].out;
  th_buf_appendf(b, "/* Generated by tunehub %s for %s, batch %d, CUDA %s. Do not edit. */\n", TH_VERSION,
                 g->network, g->batch, t->arch);
  th_buf_appendf(b, "#include <stdint.h>\n#include \"tunehub_model.h\"\n\n");
  th_buf_appendf(b, "static const struct th_model_info th__info = {\n  ");
  tc__cstr2(b, g->network);
  th_buf_appendf(b, ", \"cuda -arch=%s\", \"nvptx64-nvidia-cuda\", \"%s\", %d,\n  %d, {", t->arch, TH_VERSION,
                 g->batch, in->ndim);
  for (int d = 0; d < 4; d++) th_buf_appendf(b, "%s%d", d ? ", " : "", d < in->ndim ? in->shape[d] : 0);
  th_buf_appendf(b, "}, %d, {", out->ndim);
  for (int d = 0; d < 4; d++) th_buf_appendf(b, "%s%d", d ? ", " : "", d < out->ndim ? out->shape[d] : 0);
  int64_t woff = 0;
  int64_t *wo = calloc((size_t)(ncalls ? ncalls : 1), sizeof *wo);
  int64_t *bo = calloc((size_t)(ncalls ? ncalls : 1), sizeof *bo);
  th_buf wp;
  th_buf_init(&wp, (size_t)64 << 20);
  th_buf_appendf(&wp, "static const struct th__wparam {\n  const char *weight, *bias, *gamma, *beta, *mean, "
                      "*var;\n  float eps;\n  int oc, ndim;\n  int64_t shape[4];\n  int64_t woff, boff;\n} "
                      "th__wparams[] = {\n");
  th_status rc = (wo && bo) ? TH_OK : TH_ERR_NOMEM;
  int nw = 0;
  for (int i = 0; rc == TH_OK && i < ncalls; i++) {
    wo[i] = bo[i] = -1;
    if (calls[i].nargs != 5 || calls[i].arg_space[TC_ARG_WEIGHTS] != TC_SPACE_WEIGHTS) continue;
    const tc__ck *k = &ks[call_kernel[i]];
    const tc_node *nd = &g->nodes[calls[i].node];
    const tc_param *w = &g->params[nd->weight];
    wo[i] = woff;
    woff += (w->numel + 15) / 16 * 16; /* 64-byte aligned: float4 loads */
    if (calls[i].arg_space[TC_ARG_BIAS] == TC_SPACE_BIAS) {
      bo[i] = woff;
      woff += (k->wl.oc + 15) / 16 * 16;
    }
    th_buf_appendf(&wp, "  {");
    tc__cstr2(&wp, w->name);
    const char *names[5] = {tc__pn(g, nd->bias), tc__pn(g, nd->gamma), tc__pn(g, nd->beta), tc__pn(g, nd->mean),
                            tc__pn(g, nd->var)};
    for (int q = 0; q < 5; q++) {
      th_buf_appendf(&wp, ", ");
      tc__cstr2(&wp, names[q]);
    }
    th_buf_appendf(&wp, ", (float)%.9g, %d, %d, {", nd->eps, k->wl.oc, w->ndim);
    for (int d = 0; d < 4; d++)
      th_buf_appendf(&wp, "%s%lld", d ? ", " : "", d < w->ndim ? (long long)w->shape[d] : 0LL);
    th_buf_appendf(&wp, "}, %lld, %lld},\n", (long long)wo[i], (long long)bo[i]);
    nw++;
  }
  if (nw == 0) th_buf_appendf(&wp, "  {NULL, NULL, NULL, NULL, NULL, NULL, 0.0f, 0, 0, {0}, -1, -1},\n");
  th_buf_appendf(&wp, "};\n\n");
  int64_t in_off = g->nodes[0].out.offset, out_off = g->nodes[tc_graph_storage(g, g->output)].out.offset;
  th_buf_appendf(b, "},\n  %lld, %lld, %lld, %lld, %d};\n\n", (long long)tc_tensor_numel(in),
                 (long long)tc_tensor_numel(out), (long long)ws * 4, (long long)woff * 4, ncalls);
  th_buf_appendf(b, "static const int64_t th__workspace_floats = %lld, th__weights_floats = %lld;\n",
                 (long long)ws, (long long)woff);
  th_buf_appendf(b, "static const int64_t th__in_off = %lld, th__out_off = %lld;\n\n", (long long)in_off,
                 (long long)out_off);
  th_buf_appendf(b, "static const struct th__kernel {\n  const char *name;\n  unsigned grid[3], block[3];\n} "
                    "th__kernels[] = {\n");
  for (int k = 0; k < nk; k++)
    th_buf_appendf(b, "  {\"%s\", {%lldu, %lldu, %lldu}, {%du, %du, %du}}, /* %s */\n", ks[k].fn,
                   (long long)ks[k].launch.grid[0], (long long)ks[k].launch.grid[1],
                   (long long)ks[k].launch.grid[2], ks[k].launch.block[0], ks[k].launch.block[1],
                   ks[k].launch.block[2], ks[k].key);
  th_buf_appendf(b, "};\n\nstatic const struct th__call {\n  int kernel, nargs;\n  int space[5];\n  int64_t off[5];\n"
                    "} th__calls[] = {\n");
  for (int i = 0; rc == TH_OK && i < ncalls; i++) {
    const tc_call *c = &calls[i];
    th_buf_appendf(b, "  {%d, %d, {", call_kernel[i], c->nargs);
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
  /* the device code, embedded by the assembler (no megabyte C arrays to compile) */
  th_buf_appendf(b, "__asm__(\".pushsection .rodata\\n.balign 64\\n.globl th__cubin\\n.hidden th__cubin\\n"
                    "th__cubin:\\n.incbin \\\"%s/kernels.cubin\\\"\\n.byte 0\\n.balign 64\\n.globl th__ptx\\n"
                    ".hidden th__ptx\\nth__ptx:\\n.incbin \\\"%s/kernels.ptx\\\"\\n.byte 0\\n.popsection\\n\");\n",
                 dir, dir);
  th_buf_appendf(b, "extern const unsigned char th__cubin[] __attribute__((visibility(\"hidden\")));\n"
                    "extern const unsigned char th__ptx[] __attribute__((visibility(\"hidden\")));\n\n");
  if (rc == TH_OK) rc = th_buf_append(b, tc_cuda_src_model_rt_cuda_c, sizeof tc_cuda_src_model_rt_cuda_c - 1);
  th_buf_free(&wp);
  free(wo);
  free(bo);
  if (rc == TH_OK) *weights_floats = woff;
  return rc;
}

/* ---- bundle ------------------------------------------------------------------------------------------ */

typedef struct tc__cfile {
  const char *name;
  const void *data;
  size_t len;
} tc__cfile;

static void tc__hex(const void *data, size_t n, char hex[65]) {
  th_sha256 s;
  unsigned char d[32];
  th_sha256_init(&s);
  th_sha256_update(&s, data, n);
  th_sha256_final(&s, d);
  th_hex(d, 32, hex);
}

static json_t *tc__jshape(const tc_tensor *t) {
  json_t *a = json_array();
  for (int d = 0; d < t->ndim; d++) json_array_append_new(a, json_integer(t->shape[d]));
  return a;
}

typedef struct tc__cbundle {
  const tc_build_opts *o;
  const tc_cuda_target *t;
  const tc_graph *g;
  const tc_call *calls;
  int ncalls;
  const tc__ck *ks;
  int nk;
  const int *call_kernel;
  double build_seconds, nvrtc_seconds;
  int64_t ws_bytes, w_bytes;
  size_t cubin_len, ptx_len;
  const tc_run_stats *stats;
} tc__cbundle;

static json_t *tc__cuda_manifest(const tc__cbundle *cb, const tc__cfile *files, int nfiles) {
  const tc_graph *g = cb->g;
  char target[128];
  snprintf(target, sizeof target, "cuda -arch=%s", cb->t->arch);
  json_t *m = json_object();
  json_object_set_new(m, "format", json_string("tunehub-bundle/1"));
  json_object_set_new(m, "key", json_pack("{s:s,s:s,s:i,s:s,s:s}", "framework", "cuda", "network", cb->o->network,
                                          "batch", cb->o->batch, "target", target, "compiler_version", TH_VERSION));
  json_object_set_new(m, "target", json_pack("{s:s,s:s,s:i,s:s,s:b}", "triple", "nvptx64-nvidia-cuda", "arch",
                                             cb->t->arch, "sm", cb->t->sm, "nvrtc", tc_nvrtc_version(),
                                             "ptx_fallback", 1));
  json_object_set_new(m, "compiler_version", json_string(TH_VERSION));
  json_object_set_new(m, "input", json_pack("{s:s,s:o,s:s,s:s}", "name", "input", "shape", tc__jshape(&g->nodes[0].out),
                                            "dtype", "float32", "layout", "NCHW"));
  json_object_set_new(m, "output", json_pack("{s:s,s:o,s:s}", "name", "output", "shape",
                                             tc__jshape(&g->nodes[g->output].out), "dtype", "float32"));
  json_object_set_new(m, "flops", json_real(tc_graph_flops(g)));
  json_object_set_new(m, "params", json_integer(tc_graph_param_count(g)));
  json_object_set_new(m, "workspace_bytes", json_integer(cb->ws_bytes));
  json_object_set_new(m, "weights_bytes", json_integer(cb->w_bytes));
  json_object_set_new(m, "num_kernels", json_integer(cb->nk));
  json_object_set_new(m, "num_calls", json_integer(cb->ncalls));
  json_object_set_new(m, "build_seconds", json_real(cb->build_seconds));
  json_object_set_new(m, "nvrtc_seconds", json_real(cb->nvrtc_seconds));
  json_object_set_new(m, "cubin_bytes", json_integer((json_int_t)cb->cubin_len));
  json_object_set_new(m, "ptx_bytes", json_integer((json_int_t)cb->ptx_len));
  int counts[3] = {0, 0, 0};
  json_t *layers = json_array();
  for (int i = 0; i < cb->ncalls; i++) {
    const tc__ck *k = &cb->ks[cb->call_kernel[i]];
    const tc_node *nd = &g->nodes[cb->calls[i].node];
    char cfg[1024] = "";
    if (tc_config_str(&k->space, &k->cfg, cfg, sizeof cfg) != TH_OK) snprintf(cfg, sizeof cfg, "?");
    json_t *l = json_pack("{s:i,s:s,s:s,s:s,s:s,s:s,s:f}", "index", i, "op", tc_op_name(nd->op), "kernel",
                          tc_kernel_name(k->wl.kernel), "workload", k->key, "config", cfg, "source", k->source,
                          "flops", tc_workload_flops(&k->wl));
    if (nd->name) json_object_set_new(l, "name", json_string(nd->name));
    json_object_set_new(l, "function", json_string(k->fn));
    json_object_set_new(l, "grid", json_pack("[I,I,I]", (json_int_t)k->launch.grid[0], (json_int_t)k->launch.grid[1],
                                             (json_int_t)k->launch.grid[2]));
    json_object_set_new(l, "block", json_pack("[i,i,i]", k->launch.block[0], k->launch.block[1], k->launch.block[2]));
    json_object_set_new(l, "shared_bytes", json_integer(k->launch.shared_bytes));
    json_array_append_new(layers, l);
    counts[strcmp(k->source, "tuned") == 0 ? 0 : strcmp(k->source, "transferred") == 0 ? 1 : 2]++;
  }
  json_object_set_new(m, "layers", layers);
  json_object_set_new(m, "config_sources", json_pack("{s:i,s:i,s:i}", "tuned", counts[0], "transferred", counts[1],
                                                     "fallback", counts[2]));
  json_object_set_new(m, "tuned", json_boolean(counts[0] > 0));
  if (cb->stats)
    json_object_set_new(m, "latency_ms", json_pack("{s:f,s:f,s:f,s:f,s:i}", "mean", cb->stats->mean_ms, "median",
                                                   cb->stats->median_ms, "std", cb->stats->std_ms, "min",
                                                   cb->stats->min_ms, "n", cb->stats->n));
  else
    json_object_set_new(m, "latency_ms", json_null());
  json_t *fs = json_object();
  for (int i = 0; i < nfiles; i++) {
    char hex[65];
    tc__hex(files[i].data, files[i].len, hex);
    json_object_set_new(fs, files[i].name, json_pack("{s:s,s:I}", "sha256", hex, "size", (json_int_t)files[i].len));
  }
  json_object_set_new(m, "files", fs);
  return m;
}

static th_status tc__centry(struct archive *a, const char *name, const void *data, size_t len, int mode) {
  struct archive_entry *e = archive_entry_new();
  if (!e) return TH_ERR_NOMEM;
  archive_entry_set_pathname(e, name);
  archive_entry_set_size(e, (la_int64_t)len);
  archive_entry_set_filetype(e, AE_IFREG);
  archive_entry_set_perm(e, mode);
  archive_entry_set_mtime(e, 0, 0);
  th_status rc = archive_write_header(a, e) == ARCHIVE_OK ? TH_OK : TH_ERR_IO;
  if (rc == TH_OK && len > 0 && archive_write_data(a, data, len) != (la_ssize_t)len) rc = TH_ERR_IO;
  archive_entry_free(e);
  return rc;
}

static th_status tc__cuda_tar(const char *out_tar, const char *manifest, const tc__cfile *files, int nfiles,
                              char *err, size_t errlen) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", out_tar, (long)getpid());
  struct archive *a = archive_write_new();
  th_status rc = a ? TH_OK : TH_ERR_NOMEM;
  if (rc == TH_OK && (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
                      archive_write_open_filename(a, tmp) != ARCHIVE_OK)) {
    tc__seterr(err, errlen, "cannot write %s: %s", tmp, archive_error_string(a));
    rc = TH_ERR_IO;
  }
  if (rc == TH_OK) rc = tc__centry(a, "manifest.json", manifest, strlen(manifest), 0644);
  for (int i = 0; rc == TH_OK && i < nfiles; i++)
    rc = tc__centry(a, files[i].name, files[i].data, files[i].len, i == 0 ? 0755 : 0644);
  if (a && archive_write_close(a) != ARCHIVE_OK && rc == TH_OK) rc = TH_ERR_IO;
  if (rc != TH_OK && err && !err[0])
    tc__seterr(err, errlen, "writing %s failed: %s", out_tar, a ? archive_error_string(a) : "no memory");
  if (a) archive_write_free(a);
  if (rc == TH_OK && rename(tmp, out_tar) != 0) {
    tc__seterr(err, errlen, "cannot rename %s to %s", tmp, out_tar);
    rc = TH_ERR_IO;
  }
  if (rc != TH_OK) unlink(tmp);
  return rc;
}

static th_status tc__wfile(const char *dir, const char *name, const void *data, size_t n, char *path, size_t pl) {
  int k = snprintf(path, pl, "%s/%s", dir, name);
  if (k < 0 || (size_t)k >= pl) return TH_ERR_TOO_LARGE;
  return th_write_file_atomic(path, data, n);
}

th_status tc_cuda_build_bundle(const tc_build_opts *o, const char *out_tar, const char *out_so,
                               char **manifest_json, char *err, size_t errlen) {
  if (err && errlen) err[0] = '\0';
  if (!o || !o->network) return TH_ERR_INVALID;
  if (!tc_zoo_find(o->network)) return tc_zoo_build(o->network, 1, 0, 0, 0, NULL, err, errlen);
  if (o->batch < 1 || o->batch > 4096) {
    tc__seterr(err, errlen, "batch %d is outside 1..4096", o->batch);
    return TH_ERR_INVALID;
  }
#ifndef TH_HAVE_CUDA
  (void)out_tar, (void)out_so, (void)manifest_json;
  tc__seterr(err, errlen, "framework 'cuda': tunehub was built without CUDA (NVRTC not found at build time)");
  return TH_ERR_UNSUPPORTED;
#else
  double t_start = th_now_mono();
  tc_cuda_target t;
  th_status rc = TH_OK;
  const char *arch = o->arch;
  tc_cuda_device dev;
  if (!arch || !*arch) arch = tc_cuda_device_query(&dev, NULL, 0) == TH_OK ? dev.arch : "sm_90";
  if (tc_cuda_target_init(&t, arch) != TH_OK) {
    tc__seterr(err, errlen, "unknown CUDA arch '%s' (want sm_70 .. sm_121)", arch);
    return TH_ERR_INVALID;
  }
  char dir[2048];
  int own_dir = 0;
  if (o->work_dir) {
    snprintf(dir, sizeof dir, "%s", o->work_dir);
    rc = th_mkdir_p(dir);
  } else {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/tunehub-cuda-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    rc = mkdtemp(dir) ? TH_OK : TH_ERR_IO;
    own_dir = rc == TH_OK;
  }
  if (rc != TH_OK) tc__seterr(err, errlen, "cannot create the work directory %s", dir);
  if (rc == TH_OK && (strchr(dir, '"') || strchr(dir, '\\') || strchr(dir, '\n'))) {
    tc__seterr(err, errlen, "the work directory %s has a character the assembler cannot quote", dir);
    rc = TH_ERR_INVALID;
  }
  if (rc == TH_OK && tc__cprog(o, "graph", 0, 1)) rc = TH_ERR_CANCELLED;

  tc_graph *g = NULL;
  tc_call *calls = NULL;
  int ncalls = 0;
  int64_t ws = 0;
  th_buf params;
  th_buf_init(&params, (size_t)4 << 30);
  if (rc == TH_OK)
    rc = tc__cuda_lowered(o->network, o->batch, o->input_h, o->input_w, o->params == NULL, &g, &calls, &ncalls,
                          &ws, err, errlen);
  if (rc == TH_OK) {
    if (o->params) {
      rc = tc_params_load(g, o->params, o->params_len, err, errlen);
      if (rc == TH_OK) rc = th_buf_append(&params, o->params, o->params_len);
    } else {
      rc = tc_params_write(g, &params);
    }
  }
  tc__ck *ks = NULL;
  int nk = 0;
  int *call_kernel = rc == TH_OK ? calloc((size_t)(ncalls ? ncalls : 1), sizeof *call_kernel) : NULL;
  if (rc == TH_OK && !call_kernel) rc = TH_ERR_NOMEM;
  if (rc == TH_OK) rc = tc__cuda_configs(o, &t, calls, ncalls, &ks, &nk, call_kernel, err, errlen);

  /* one translation unit, one NVRTC call */
  th_buf cu;
  th_buf_init(&cu, (size_t)256 << 20);
  if (rc == TH_OK && tc__cprog(o, "kernels", 0, nk)) rc = TH_ERR_CANCELLED;
  if (rc == TH_OK) rc = tc_cuda_prelude(&cu);
  for (int k = 0; rc == TH_OK && k < nk; k++) {
    th_buf_appendf(&cu, "/* %s  config %s */\n", ks[k].key, ks[k].source);
    rc = tc_cuda_kernel_source(&ks[k].wl, &ks[k].cfg, &t, ks[k].fn, &cu, &ks[k].launch, err, errlen);
  }
  char *cubin = NULL, *ptx = NULL;
  size_t cubin_len = 0, ptx_len = 0;
  double t_nv = th_now_mono();
  if (rc == TH_OK && tc__cprog(o, "codegen", 0, 1)) rc = TH_ERR_CANCELLED;
  if (rc == TH_OK)
    rc = tc_nvrtc_compile(cu.data, "kernels.cu", &t, &cubin, &cubin_len, &ptx, &ptx_len, err, errlen);
  t_nv = th_now_mono() - t_nv;
  char path[2300], modelc[2300], so[2300];
  snprintf(so, sizeof so, "%s/model.so", dir);
  if (rc == TH_OK) rc = tc__wfile(dir, "kernels.cubin", cubin, cubin_len, path, sizeof path);
  if (rc == TH_OK) rc = tc__wfile(dir, "kernels.ptx", ptx, ptx_len > 0 ? ptx_len - 1 : 0, path, sizeof path);
  if (rc == TH_OK) rc = tc__wfile(dir, "kernels.cu", cu.data, cu.len, path, sizeof path);
  th_buf plan;
  th_buf_init(&plan, (size_t)256 << 20);
  int64_t wfloats = 0;
  if (rc == TH_OK) rc = tc__cuda_plan(g, &t, calls, ncalls, ks, nk, call_kernel, ws, dir, &wfloats, &plan);
  if (rc == TH_OK) rc = tc__wfile(dir, "model.c", plan.data, plan.len, modelc, sizeof modelc);
  if (rc == TH_OK)
    rc = tc__wfile(dir, "tunehub_model.h", tc_model_src_tunehub_model_h, sizeof tc_model_src_tunehub_model_h - 1,
                   path, sizeof path);
  if (rc == TH_OK && tc__cprog(o, "link", 0, 1)) rc = TH_ERR_CANCELLED;
  if (rc == TH_OK) {
    const char *srcs[1] = {modelc};
    rc = tc_link_so(0, NULL, 1, srcs, so, err, errlen);
  }
  double t_build = th_now_mono() - t_start;
  tc_run_stats st;
  memset(&st, 0, sizeof st);
  if (rc == TH_OK && o->measure) {
    if (tc__cprog(o, "measure", 0, 1)) rc = TH_ERR_CANCELLED;
    if (rc == TH_OK)
      rc = tc__time_so(so, params.data, params.len, o->measure_repeat > 0 ? o->measure_repeat : 20, 0, &st, err, errlen);
  }
  th_buf gj;
  th_buf_init(&gj, (size_t)64 << 20);
  if (rc == TH_OK) rc = tc_graph_to_json(g, &gj);
  if (rc == TH_OK && tc__cprog(o, "bundle", 0, 1)) rc = TH_ERR_CANCELLED;
  char *sodata = NULL;
  size_t solen = 0;
  if (rc == TH_OK) {
    rc = th_read_file(so, (size_t)1 << 31, &sodata, &solen);
    if (rc != TH_OK) tc__seterr(err, errlen, "cannot read %s", so);
  }
  if (rc == TH_OK) {
    tc__cfile files[6] = {
        {"model.so", sodata, solen},
        {"tunehub_model.h", tc_model_src_tunehub_model_h, sizeof tc_model_src_tunehub_model_h - 1},
        {"params.bin", params.data, params.len},
        {"graph.json", gj.data, gj.len},
        {"example.c", tc_model_src_example_c, sizeof tc_model_src_example_c - 1},
        {"kernels/kernels.cu", cu.data, cu.len},
    };
    tc__cbundle cb = {o, &t, g, calls, ncalls, ks, nk, call_kernel, t_build, t_nv, ws * 4, wfloats * 4,
                      cubin_len, ptx_len, o->measure ? &st : NULL};
    json_t *m = tc__cuda_manifest(&cb, files, 6);
    char *text = m ? json_dumps(m, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(m);
    if (!text) rc = TH_ERR_NOMEM;
    if (rc == TH_OK && out_tar) rc = tc__cuda_tar(out_tar, text, files, 6, err, errlen);
    if (rc == TH_OK && out_so) {
      rc = th_write_file_atomic(out_so, sodata, solen);
      if (rc != TH_OK) tc__seterr(err, errlen, "cannot write %s", out_so);
    }
    if (rc == TH_OK && manifest_json) {
      *manifest_json = text;
      text = NULL;
    }
    free(text);
  }
  if (rc != TH_OK && err && !err[0]) tc__seterr(err, errlen, "cuda build failed: %s", th_status_str(rc));
  free(sodata);
  free(cubin);
  free(ptx);
  th_buf_free(&gj);
  th_buf_free(&plan);
  th_buf_free(&cu);
  th_buf_free(&params);
  free(ks);
  free(call_kernel);
  free(calls);
  tc_graph_free(g);
  if (own_dir) (void)th_rm_rf(dir);
  return rc;
#endif
}
