/* The model builder, one pipeline for every backend: the network's graph (zoo or ONNX) -> graph passes (the backend may add one:
 * the CPU's NCHWc layout) -> kernel calls -> one config per distinct workload (lookup or the backend's
 * fallback) -> the backend emits every kernel (LLVM objects in parallel, or one NVRTC image) -> a generated
 * C plan (model.c: the neutral tables of calls and weights around the backend's kernel declarations and
 * runtime source) -> model.so linked with the runtime (link.c) -> optional timing -> the bundle (bundle.c).
 * The backend is asked only where the targets differ (backend_int.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend_int.h"
#include "link.h"
#include "ops.h"
#include "params.h"
#include "tc.h"
#include "tc_model_embed.h"
#include "th_sha256.h"
#include "th_util.h"
#include "zoo.h"

static int tc__progress(const tc_build_opts *o, const char *stage, int done, int total) {
  return o->progress ? o->progress(o->progress_ctx, stage, done, total) : 0;
}

th_status tc_precision_check(const char *framework, const char *target, const char *precision, tc_precision *out,
                             char *err, size_t errlen) {
  tc_precision p;
  if (tc_precision_parse(precision, &p) != TH_OK) {
    tc__seterr(err, errlen, "precision '%s' is not one of fp32, tf32", precision);
    return TH_ERR_INVALID;
  }
  /* which backend takes which precision on which target is the backend's answer */
  const tc_backend *b = p != TC_PRECISION_FP32 ? tc_backend_find(framework, err, errlen) : NULL;
  if (p != TC_PRECISION_FP32 &&
      (!b || tc_backend_precision_check(b, target, p, err, errlen) != TH_OK))
    return TH_ERR_INVALID;
  if (out) *out = p;
  return TH_OK;
}

/* ---- configs ------------------------------------------------------------------------------------------ */

static th_status tc__configs(const tc_build_opts *o, const tc_backend_target *t, const tc_call *calls,
                             int ncalls, tc__kernel **kout, int *nk, int *call_kernel, char *err,
                             size_t errlen) {
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
    rc = tc_backend_space(t, &k->wl, &k->space);
    if (rc != TH_OK) {
      tc__seterr(err, errlen, "no %s template for workload %s", t->backend->name, key);
      break;
    }
    th_status lr = TH_ERR_NOT_FOUND;
    if (o->lookup) {
      char src[16] = "tuned";
      tc_config c;
      memset(&c, 0, sizeof c);
      lr = o->lookup(o->lookup_ctx, &k->wl, key, &k->space, &c, src);
      if (lr == TH_OK && tc_backend_valid(t, &k->wl, &k->space, &c, NULL, 0) == TH_OK) {
        k->cfg = c;
        src[sizeof src - 1] = '\0';
        snprintf(k->source, sizeof k->source, "%s", src);
      } else if (lr == TH_OK) {
        lr = TH_ERR_NOT_FOUND; /* a stale record that no longer fits the space or device: fall back */
      } else if (lr != TH_ERR_NOT_FOUND) {
        tc__seterr(err, errlen, "config lookup failed for %s: %s", key, th_status_str(lr));
        rc = lr;
        break;
      }
    }
    if (lr != TH_OK) {
      rc = tc_backend_fallback(t, &k->wl, &k->space, &k->cfg);
      snprintf(k->source, sizeof k->source, "fallback");
      if (rc != TH_OK) tc__seterr(err, errlen, "no valid %s config for %s", t->backend->name, key);
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

/* ---- the generated plan ------------------------------------------------------------------------------- */

static const char *tc__pname(const tc_graph *g, int id) {
  return id >= 0 ? g->params[id].name : NULL;
}

static void tc__dims(th_buf *b, int n, const int *v, int ndim) {
  for (int d = 0; d < n; d++) th_buf_appendf(b, "%s%d", d ? ", " : "", d < ndim ? v[d] : 0);
}

/* th__wparams: per weighted call, the tensors' names, the BN parameters, the shape, the backend's pack
 * parameters (when it packs) and the offsets in the weights blob (wo/bo per call, -1 when none). */
static th_status tc__plan_weights(const tc_backend_target *t, const tc_graph *g, const tc_call *calls,
                                  int ncalls, const tc__kernel *ks, const int *call_kernel, int64_t *wo,
                                  int64_t *bo, int64_t *woff_out, th_buf *wp) {
  const tc_backend *be = t->backend;
  char packf[32] = "";
  if (be->pack) snprintf(packf, sizeof packf, "  int pack[%d];\n", TC_PACK_NPARAMS);
  th_buf_appendf(wp, "static const struct th__wparam {\n  const char *weight, *bias, *gamma, *beta, *mean, "
                     "*var;\n  float eps;\n  int oc, ndim;\n  int64_t shape[4];\n%s  int64_t woff, boff;\n} "
                     "th__wparams[] = {\n",
                 packf);
  int64_t woff = 0;
  int nw = 0;
  th_status rc = TH_OK;
  for (int i = 0; rc == TH_OK && i < ncalls; i++) {
    wo[i] = bo[i] = -1;
    if (calls[i].arg_space[TC_ARG_WEIGHTS] != TC_SPACE_WEIGHTS || calls[i].nargs != 5) continue;
    const tc__kernel *k = &ks[call_kernel[i]];
    const tc_node *nd = &g->nodes[calls[i].node];
    const tc_param *w = &g->params[nd->weight];
    int pk[TC_PACK_NPARAMS];
    int64_t wfloats = 0;
    rc = be->weight_floats(t, k, w, &wfloats);
    if (rc == TH_OK && be->pack) rc = be->pack(t, k, pk);
    if (rc != TH_OK) break;
    wo[i] = woff;
    woff += (wfloats + 15) / 16 * 16; /* 64-byte aligned: vector loads */
    if (calls[i].arg_space[TC_ARG_BIAS] == TC_SPACE_BIAS) {
      bo[i] = woff;
      woff += (k->wl.oc + 15) / 16 * 16;
    }
    th_buf_appendf(wp, "  {");
    const char *names[6] = {w->name,
                            tc__pname(g, nd->bias),
                            tc__pname(g, nd->gamma),
                            tc__pname(g, nd->beta),
                            tc__pname(g, nd->mean),
                            tc__pname(g, nd->var)};
    for (int q = 0; q < 6; q++) {
      if (q) th_buf_appendf(wp, ", ");
      tc__cstr(wp, names[q]);
    }
    th_buf_appendf(wp, ", (float)%.9g, %d, %d, {", nd->eps, k->wl.oc, w->ndim);
    for (int d = 0; d < 4; d++)
      th_buf_appendf(wp, "%s%lld", d ? ", " : "", d < w->ndim ? (long long)w->shape[d] : 0LL);
    th_buf_appendf(wp, "}, ");
    if (be->pack) {
      th_buf_appendf(wp, "{");
      for (int d = 0; d < TC_PACK_NPARAMS; d++) th_buf_appendf(wp, "%s%d", d ? ", " : "", pk[d]);
      th_buf_appendf(wp, "}, ");
    }
    th_buf_appendf(wp, "%lld, %lld},\n", (long long)wo[i], (long long)bo[i]);
    nw++;
  }
  if (nw == 0)
    th_buf_appendf(wp, "  {NULL, NULL, NULL, NULL, NULL, NULL, 0.0f, 0, 0, {0}, %s-1, -1},\n",
                   be->pack ? "{0}, " : "");
  rc = rc == TH_OK ? th_buf_appendf(wp, "};\n\n") : rc;
  if (rc == TH_OK) *woff_out = woff;
  return rc;
}

/* th__cats: every composite parameter (graph.h) a weighted call reads as its weight or bias,
 * once, with the names of its parts; the model's runtime concatenates them from params.bin
 * (th__fetch). */
static th_status tc__plan_cats(const tc_graph *g, const tc_call *calls, int ncalls, th_buf *b) {
  th_buf_appendf(b,
                 "/* tensors made of params.bin's tensors parts[0 .. nparts), of equal shapes, "
                 "concatenated along dim 0 */\nstatic const struct th__cat {\n"
                 "  const char *name;\n  int nparts;\n  const char *parts[%d];\n} th__cats[] = {\n",
                 TC_MAX_PARTS);
  char *seen = calloc((size_t)(g->nparams ? g->nparams : 1), 1);
  if (!seen) return TH_ERR_NOMEM;
  int n = 0;
  th_status rc = TH_OK;
  for (int i = 0; rc == TH_OK && i < ncalls; i++) {
    if (calls[i].arg_space[TC_ARG_WEIGHTS] != TC_SPACE_WEIGHTS || calls[i].nargs != 5) continue;
    const tc_node *nd = &g->nodes[calls[i].node];
    int ids[2] = {nd->weight, nd->bias};
    for (int q = 0; rc == TH_OK && q < 2; q++) {
      if (ids[q] < 0 || !g->params[ids[q]].nparts || seen[ids[q]]) continue;
      const tc_param *c = &g->params[ids[q]];
      seen[ids[q]] = 1;
      th_buf_appendf(b, "  {");
      tc__cstr(b, c->name);
      th_buf_appendf(b, ", %d, {", c->nparts);
      for (int k = 0; k < c->nparts; k++) {
        if (k) th_buf_appendf(b, ", ");
        tc__cstr(b, g->params[c->parts[k]].name);
      }
      rc = th_buf_appendf(b, "}},\n");
      n++;
    }
  }
  free(seen);
  if (n == 0) th_buf_appendf(b, "  {NULL, 0, {NULL}},\n");
  if (rc == TH_OK) rc = th_buf_appendf(b, "};\nstatic const int th__ncats = %d;\n\n", n);
  return rc;
}

/* A tensor's description row (struct th_tensor_desc) for th__inputs / th__outputs. */
static void tc__desc(th_buf *b, const char *name, const tc_tensor *t) {
  th_buf_appendf(b, "  {");
  tc__cstr(b, name);
  th_buf_appendf(b, ", %d, %d, {", t->dtype, t->ndim);
  for (int d = 0; d < TC_MAX_DIMS; d++)
    th_buf_appendf(b, "%s%d", d ? ", " : "", d < t->ndim ? t->shape[d] : 0);
  th_buf_appendf(b, "}, %lld},\n", (long long)tc_tensor_numel(t));
}

/* The legacy 4-D shape fields of th_model_info: ndim 0 (and zeros) for a tensor of more than 4
 * dims. */
static void tc__legacy_shape(th_buf *b, const tc_tensor *t) {
  int nd = t->ndim <= 4 ? t->ndim : 0;
  th_buf_appendf(b, "%d, {", nd);
  tc__dims(b, 4, t->shape, nd);
  th_buf_appendf(b, "}");
}

/* The network input whose elements node id holds unchanged (through reshapes, flattens and
 * dropouts), or -1 when it is computed. */
static int tc__source_input(const tc_graph *g, int id) {
  for (int hops = 0; id >= 0 && hops <= g->nnodes; hops++) {
    const tc_node *nd = &g->nodes[id];
    if (nd->op == TC_OP_INPUT) {
      for (int k = 0; k < g->ninputs; k++)
        if (g->inputs[k] == id) return k;
      return -1;
    }
    if (nd->op != TC_OP_RESHAPE && nd->op != TC_OP_FLATTEN && nd->op != TC_OP_DROPOUT) return -1;
    id = nd->inputs[0];
  }
  return -1;
}

/* th__consts: every parameter a call reads as a plain tensor (TC_SPACE_CONST), once, copied raw
 * into the weights blob from *woff on (64-byte aligned); const_off[param id] gets its offset in
 * floats (-1: none). th__index_checks: the embedding calls whose indices are a network input, with
 * the table's rows. */
static th_status tc__plan_consts(const tc_graph *g, const tc_call *calls, int ncalls,
                                 int64_t *const_off, int64_t *woff, th_buf *b) {
  th_buf_appendf(
      b,
      "/* parameters that kernels read as plain row-major tensors, copied raw into the weights at "
      "off (floats) */\nstatic const struct th__const {\n  const char *name;\n  int ndim;\n"
      "  int64_t shape[6];\n  int64_t off;\n} th__consts[] = {\n");
  int n = 0;
  th_status rc = TH_OK;
  for (int p = 0; p < g->nparams; p++) const_off[p] = -1;
  for (int i = 0; rc == TH_OK && i < ncalls; i++)
    for (int a = 0; a < calls[i].nargs && a < 5; a++) {
      if (calls[i].arg_space[a] != TC_SPACE_CONST) continue;
      int p = calls[i].arg_param[a];
      if (p < 0 || p >= g->nparams) return TH_ERR_INTERNAL;
      if (const_off[p] >= 0) continue;
      const tc_param *pr = &g->params[p];
      const_off[p] = *woff;
      *woff += (pr->numel + 15) / 16 * 16;
      th_buf_appendf(b, "  {");
      tc__cstr(b, pr->name);
      th_buf_appendf(b, ", %d, {", pr->ndim);
      for (int d = 0; d < 6; d++)
        th_buf_appendf(b, "%s%lld", d ? ", " : "", d < pr->ndim ? (long long)pr->shape[d] : 0LL);
      rc = th_buf_appendf(b, "}, %lld},\n", (long long)const_off[p]);
      n++;
    }
  if (n == 0) th_buf_appendf(b, "  {NULL, 0, {0}, -1},\n");
  th_buf_appendf(b, "};\nstatic const int th__nconsts = %d;\n\n", n);
  th_buf_appendf(
      b,
      "/* int64 network inputs that index an embedding table: checked before every run */\n"
      "static const struct th__index_check {\n  int input;\n  int64_t rows;\n  const char *table;\n"
      "} th__index_checks[] = {\n");
  int nc = 0;
  for (int i = 0; rc == TH_OK && i < ncalls; i++) {
    const tc_call *c = &calls[i];
    if (c->wl.kernel != TC_KERNEL_EMBEDDING) continue;
    const tc_node *nd = &g->nodes[c->node];
    int in = tc__source_input(g, nd->inputs[0]);
    if (in < 0) continue;
    const char *table = nd->name;
    if (!table && c->arg_space[1] == TC_SPACE_CONST) table = g->params[c->arg_param[1]].name;
    th_buf_appendf(b, "  {%d, %lld, ", in, (long long)c->wl.c);
    tc__cstr(b, table ? table : "embedding");
    rc = th_buf_appendf(b, "},\n");
    nc++;
  }
  if (nc == 0) th_buf_appendf(b, "  {-1, 0, NULL},\n");
  if (rc == TH_OK) rc = th_buf_appendf(b, "};\nstatic const int th__nindex_checks = %d;\n\n", nc);
  return rc;
}

static th_status tc__plan(const tc_backend_target *t, const tc__emit *e, const tc_graph *g, const tc_call *calls,
                          int ncalls, const tc__kernel *ks, int nk, const int *call_kernel, int64_t ws,
                          const char *dir, int64_t *weights_floats, th_buf *b) {
  const tc_backend *be = t->backend;
  const tc_tensor *in = &g->nodes[g->inputs[0]].out, *out = &g->nodes[g->outputs[0]].out;
  th_buf_appendf(b, "/* Generated by tunehub %s for %s, batch %d, %s (%s). Do not edit. */\n", TH_VERSION,
                 g->network, g->batch, t->str, t->triple);
  th_buf_appendf(b, "#include <stdint.h>\n%s#include \"tunehub_model.h\"\n\n", be->plan_includes);
  int64_t *wo = calloc((size_t)(ncalls ? ncalls : 1), sizeof *wo);
  int64_t *bo = calloc((size_t)(ncalls ? ncalls : 1), sizeof *bo);
  int64_t *co = calloc((size_t)(g->nparams ? g->nparams : 1), sizeof *co);
  th_buf wp, cp;
  th_buf_init(&wp, (size_t)64 << 20);
  th_buf_init(&cp, (size_t)16 << 20);
  int64_t woff = 0;
  th_status rc = (wo && bo && co) ? TH_OK : TH_ERR_NOMEM;
  /* every input and output has workspace storage of its own, or aliases some (the memory plan) */
  for (int k = 0; rc == TH_OK && k < g->ninputs; k++)
    if (g->nodes[g->inputs[k]].out.offset < 0) rc = TH_ERR_INTERNAL;
  for (int k = 0; rc == TH_OK && k < g->noutputs; k++)
    if (g->nodes[g->outputs[k]].out.offset < 0) rc = TH_ERR_INTERNAL;
  if (rc == TH_OK) rc = tc__plan_weights(t, g, calls, ncalls, ks, call_kernel, wo, bo, &woff, &wp);
  if (rc == TH_OK) rc = tc__plan_consts(g, calls, ncalls, co, &woff, &cp);
  if (rc == TH_OK) rc = tc__plan_cats(g, calls, ncalls, &cp);
  /* every input and output, in the network's order */
  th_buf_appendf(b, "static const struct th_tensor_desc th__inputs[] = {\n");
  for (int k = 0; k < g->ninputs; k++)
    tc__desc(b, g->nodes[g->inputs[k]].name, &g->nodes[g->inputs[k]].out);
  th_buf_appendf(b, "};\nstatic const struct th_tensor_desc th__outputs[] = {\n");
  for (int k = 0; k < g->noutputs; k++)
    tc__desc(b, g->output_names[k], &g->nodes[g->outputs[k]].out);
  th_buf_appendf(b, "};\n\n");
  th_buf_appendf(b, "static const struct th_model_info th__info = {\n  ");
  tc__cstr(b, g->network);
  th_buf_appendf(b, ", ");
  tc__cstr(b, t->str);
  th_buf_appendf(b, ", ");
  tc__cstr(b, t->triple);
  th_buf_appendf(b, ", \"%s\", %d,\n  ", TH_VERSION, g->batch);
  tc__legacy_shape(b, in);
  th_buf_appendf(b, ", ");
  tc__legacy_shape(b, out);
  th_buf_appendf(b, ",\n  %lld, %lld, %lld, %lld, %d,\n  %d, th__inputs, %d, th__outputs};\n\n",
                 (long long)tc_tensor_numel(in), (long long)tc_tensor_numel(out), (long long)ws * 4,
                 (long long)woff * 4, ncalls, g->ninputs, g->noutputs);
  th_buf_appendf(b, "static const int64_t th__workspace_floats = %lld, th__weights_floats = %lld;\n",
                 (long long)ws, (long long)woff);
  th_buf_appendf(b,
                 "/* th__info's inputs and outputs in the workspace: offset (floats) and bytes */\n"
                 "static const struct th__io {\n  int64_t off;\n  size_t bytes;\n} th__in[] = {\n");
  for (int k = 0; k < g->ninputs; k++) {
    const tc_node *nd = &g->nodes[g->inputs[k]];
    th_buf_appendf(b, "  {%lld, %lld},\n", (long long)nd->out.offset,
                   (long long)tc_tensor_bytes(&nd->out));
  }
  th_buf_appendf(b, "}, th__out[] = {\n");
  /* an output's own offset: an alias's is its base's plus the view's (passes.h) */
  for (int k = 0; k < g->noutputs; k++)
    th_buf_appendf(b, "  {%lld, %lld},\n", (long long)g->nodes[g->outputs[k]].out.offset,
                   (long long)tc_tensor_bytes(&g->nodes[g->outputs[k]].out));
  th_buf_appendf(b, "};\n\n");
  if (rc == TH_OK) rc = th_buf_append(b, cp.data, cp.len);
  if (rc == TH_OK) rc = be->plan_kernels(t, ks, nk, e, b);
  th_buf_appendf(b, "static const struct th__call {\n  %s\n  int nargs;\n  int space[5];\n  int64_t off[5];\n"
                    "} th__calls[] = {\n",
                 be->call_field);
  for (int i = 0; rc == TH_OK && i < ncalls; i++) {
    const tc_call *c = &calls[i];
    if (be->call_by_index) th_buf_appendf(b, "  {%d, %d, {", call_kernel[i], c->nargs);
    else th_buf_appendf(b, "  {%s, %d, {", ks[call_kernel[i]].fn, c->nargs);
    /* a parameter read as a tensor lives in the weights blob: runtimes see spaces 0..3 only */
    for (int a = 0; a < 5; a++) {
      int sp = a < c->nargs ? c->arg_space[a] : 0;
      th_buf_appendf(b, "%s%d", a ? ", " : "", sp == TC_SPACE_CONST ? TC_SPACE_WEIGHTS : sp);
    }
    th_buf_appendf(b, "}, {");
    for (int a = 0; a < 5; a++) {
      int64_t off = 0;
      if (a < c->nargs) {
        if (c->arg_space[a] == TC_SPACE_WORK) off = c->arg_off[a];
        else if (c->arg_space[a] == TC_SPACE_WEIGHTS) off = wo[i];
        else if (c->arg_space[a] == TC_SPACE_BIAS) off = bo[i];
        else if (c->arg_space[a] == TC_SPACE_CONST)
          off = co[c->arg_param[a]] + c->arg_off[a];
      }
      th_buf_appendf(b, "%s%lld", a ? ", " : "", (long long)off);
    }
    th_buf_appendf(b, "}}, /* %s */\n", tc_op_name(g->nodes[c->node].op));
  }
  th_buf_appendf(b, "};\n\n");
  if (rc == TH_OK) rc = th_buf_append(b, wp.data, wp.len);
  if (rc == TH_OK) rc = be->plan_runtime(t, dir, b);
  th_buf_free(&wp);
  th_buf_free(&cp);
  free(wo);
  free(bo);
  free(co);
  if (rc == TH_OK) *weights_floats = woff;
  return rc;
}

/* ---- build -------------------------------------------------------------------------------------------- */

static th_status tc__work_dir(const tc_build_opts *o, char *dir, size_t n, int *own_dir, char *err,
                              size_t errlen) {
  th_status rc;
  *own_dir = 0;
  if (o->work_dir) {
    snprintf(dir, n, "%s", o->work_dir);
    rc = th_mkdir_p(dir);
  } else {
    rc = th_mkdtemp("tunehub-build", dir, n);
    *own_dir = rc == TH_OK;
  }
  if (rc != TH_OK) tc__seterr(err, errlen, "cannot create the work directory %s", dir);
  /* the generated model.c may name files in it (the assembler's .incbin) */
  if (rc == TH_OK && (strchr(dir, '"') || strchr(dir, '\\') || strchr(dir, '\n'))) {
    tc__seterr(err, errlen, "the work directory %s has a character the assembler cannot quote", dir);
    rc = TH_ERR_INVALID;
  }
  return rc;
}

th_status tc_build_bundle(const tc_build_opts *o, const char *out_tar, const char *out_so,
                          char **manifest_json, char *err, size_t errlen) {
  if (err && errlen) err[0] = '\0';
  if (!o || !o->network || !o->framework) {
    tc__seterr(err, errlen, "tc_build_bundle: framework and network are required");
    return TH_ERR_INVALID;
  }
  const tc_backend *be = tc_backend_find(o->framework, err, errlen);
  if (!be) return TH_ERR_INVALID;
  if (!o->onnx_path && !tc_zoo_find(o->network)) return tc_zoo_build(o->network, 1, 0, 0, 0, NULL, err, errlen);
  if (o->batch < 1 || o->batch > 4096) {
    tc__seterr(err, errlen, "batch %d is outside 1..4096", o->batch);
    return TH_ERR_INVALID;
  }
  if (o->fuse_off & ~TC_FUSE_ALL) {
    tc__seterr(err, errlen, "fuse_off 0x%x names no fusion group (passes.h)",
               (unsigned)o->fuse_off);
    return TH_ERR_INVALID;
  }
  char why[512];
  if (!tc_backend_can_build(be, why, sizeof why)) {
    tc__seterr(err, errlen, "framework '%s': %s", be->name, why);
    return TH_ERR_UNSUPPORTED;
  }
  double t_start = th_now_mono();
  tc_backend_target t;
  th_status rc = tc_backend_target_init(be, o->arch, &t, err, errlen);
  if (rc != TH_OK) return rc;
  tc_precision prec;
  rc = tc_precision_check(be->name, t.str, o->precision, &prec, err, errlen);
  if (rc != TH_OK) return rc;

  char dir[2048];
  int own_dir = 0;
  rc = tc__work_dir(o, dir, sizeof dir, &own_dir, err, errlen);
  if (rc == TH_OK && tc__progress(o, "graph", 0, 1)) rc = TH_ERR_CANCELLED;

  /* graph, weights, passes, lowering; an ONNX network's weights are its initializers, and the manifest names
   * the file it was built from by its sha256 */
  tc_netsrc net = {o->network, o->onnx_path, o->onnx_shapes};
  char onnx_hex[65] = "";
  if (rc == TH_OK && o->onnx_path) {
    int64_t onnx_size = 0;
    rc = th_sha256_file(o->onnx_path, onnx_hex, &onnx_size);
    if (rc != TH_OK) tc__seterr(err, errlen, "%s: cannot read the ONNX file %s", o->network, o->onnx_path);
  }
  tc_graph *g = NULL;
  tc_call *calls = NULL;
  int ncalls = 0;
  int64_t ws = 0;
  th_buf params;
  th_buf_init(&params, (size_t)4 << 30);
  if (rc == TH_OK)
    rc = tc__lowered(&t, &net, o->batch, o->input_h, o->input_w, o->params == NULL, o->fuse_off, &g,
                     &calls, &ncalls, &ws, err, errlen);
  for (int i = 0; rc == TH_OK && i < ncalls; i++) tc_workload_take_precision(&calls[i].wl, prec);
  if (rc == TH_OK) {
    if (o->params) {
      rc = tc_params_load(g, o->params, o->params_len, err, errlen);
      if (rc == TH_OK) rc = th_buf_append(&params, o->params, o->params_len);
    } else {
      rc = tc_params_write(g, &params);
    }
  }

  /* configs, then the backend emits every kernel */
  tc__kernel *ks = NULL;
  int nk = 0;
  int *call_kernel = rc == TH_OK ? calloc((size_t)(ncalls ? ncalls : 1), sizeof *call_kernel) : NULL;
  if (rc == TH_OK && !call_kernel) rc = TH_ERR_NOMEM;
  if (rc == TH_OK) rc = tc__configs(o, &t, calls, ncalls, &ks, &nk, call_kernel, err, errlen);
  tc__emit em;
  memset(&em, 0, sizeof em);
  if (rc == TH_OK && tc__progress(o, "kernels", 0, nk)) rc = TH_ERR_CANCELLED;
  if (rc == TH_OK) rc = be->emit(&t, ks, nk, dir, o->network, &em, err, errlen);
  if (rc == TH_OK && tc__progress(o, "codegen", 1, 1)) rc = TH_ERR_CANCELLED;

  /* plan + link */
  char modelc[2200], hdr[2200], so[2200];
  snprintf(so, sizeof so, "%s/model.so", dir);
  th_buf plan;
  th_buf_init(&plan, (size_t)256 << 20);
  int64_t wfloats = 0;
  if (rc == TH_OK) rc = tc__plan(&t, &em, g, calls, ncalls, ks, nk, call_kernel, ws, dir, &wfloats, &plan);
  if (rc == TH_OK) rc = tc__write(dir, "model.c", plan.data, plan.len, modelc, sizeof modelc, err, errlen);
  if (rc == TH_OK)
    rc = tc__write(dir, "tunehub_model.h", tc_model_src_tunehub_model_h, sizeof tc_model_src_tunehub_model_h - 1,
                   hdr, sizeof hdr, err, errlen);
  if (rc == TH_OK && tc__progress(o, "link", 0, 1)) rc = TH_ERR_CANCELLED;
  if (rc == TH_OK) {
    const char *objs[TC__MAX_OBJS];
    for (int j = 0; j < em.nobjs; j++) objs[j] = em.objs[j];
    const char *srcs[1] = {modelc};
    rc = tc_link_so(em.nobjs, objs, 1, srcs, so, err, errlen);
  }
  double t_build = th_now_mono() - t_start;

  /* measure */
  tc_run_stats st;
  memset(&st, 0, sizeof st);
  /* a target this machine cannot run (another CPU's features) is published untimed, and says why */
  int measure = o->measure;
  char unmeasured[512] = "";
  if (measure && !tc_backend_target_runs_here(&t, unmeasured, sizeof unmeasured)) measure = 0;
  if (rc == TH_OK && measure) {
    if (tc__progress(o, "measure", 0, 1)) rc = TH_ERR_CANCELLED;
    tc_time_opts topts;
    tc_time_opts_default(&topts);
    if (o->timing) topts = *o->timing;
    topts.nonfinite_ok = tc_graph_nonfinite(g);
    if (rc == TH_OK && o->measure_fn) {
      /* in another process: the caller's measurement worker reads the weights from this file */
      char pbin[2200];
      rc = tc__write(dir, "params.bin", params.data, params.len, pbin, sizeof pbin, err, errlen);
      if (rc == TH_OK) rc = o->measure_fn(o->measure_ctx, so, pbin, &topts, &st, err, errlen);
    } else if (rc == TH_OK) {
      rc = tc_time_model(so, params.data, params.len, &topts, &st, err, errlen);
    }
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
    bi.onnx_sha256 = o->onnx_path ? onnx_hex : NULL;
    bi.onnx_shapes = o->onnx_path ? o->onnx_shapes : NULL;
    bi.batch = o->batch;
    bi.precision = prec;
    bi.target = &t;
    bi.emit = &em;
    bi.graph = g;
    bi.nkernels = nk;
    bi.ncalls = ncalls;
    bi.kernels = ks;
    bi.call_kernel = call_kernel;
    bi.calls = calls;
    bi.fuse_off = o->fuse_off;
    bi.measured = measure;
    bi.measured_isolated = measure && o->measure_fn;
    bi.unmeasured_why = unmeasured[0] ? unmeasured : NULL;
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
  if (rc != TH_OK && err && !err[0]) tc__seterr(err, errlen, "%s build failed: %s", be->name, th_status_str(rc));
  be->emit_free(&em);
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
