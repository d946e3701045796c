/* The ONNX importer's top level: it scans the wire format first (onnx_wire.c: depth, counts,
 * allocation), parses the file with protoc-c's code under a byte budget, has it validated, its
 * value table built and its nodes ordered (onnx_check.c), runs every node through folding, the
 * pattern matchers and the converters, lists every unsupported op in one error, and finishes the
 * graph: dead nodes and unused parameters dropped, outputs named as in the file, info filled. The
 * table of the opsets each op supports is here. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx_int.h"

/* ---- the import loop
 * ----------------------------------------------------------------------------------- */

static int tc__ox_known(const char *op) {
  return tc__ox_converter(op) || tc__ox_foldable(op);
}

/* The opsets whose semantics each known op's converter and folding rule implement: from the version
 * that introduced the op (6 for an op whose versions 1..5 differ or were not checked: the legacy
 * consumed_inputs, is_test and broadcast attributes; 1 where version 1's semantics still hold) to
 * the last one checked against the standard's changelog (shared/reference/onnx-semantics-facts.md). The version switches inside a range (an
 * attribute that became an input, opset 6's broadcast attribute, ...) are the converters'. An op
 * outside its range, or a known op missing here, is refused naming the range. */
static const struct tc__ox_opset_range {
  const char *op;
  int64_t lo, hi;
} tc__ox_opsets[] = {
    {"Conv", 6, 21},
    {"BatchNormalization", 6, 21},
    {"Relu", 6, 21},
    {"Tanh", 6, 21},
    {"Sigmoid", 6, 21},
    {"HardSigmoid", 6, 21},
    {"HardSwish", 14, 21},
    {"Clip", 6, 21},
    {"Add", 6, 21},
    {"Sub", 6, 21},
    {"Mul", 6, 21},
    {"Div", 6, 21},
    {"Pow", 6, 21},
    {"Sqrt", 6, 21},
    {"Erf", 9, 21},
    {"MaxPool", 6, 21},
    {"AveragePool", 6, 21},
    {"GlobalAveragePool", 1, 21},
    {"Pad", 6, 21},
    {"ConvTranspose", 6, 21},
    {"Resize", 10, 21},
    {"Upsample", 7, 9},
    {"DepthToSpace", 6, 21},
    {"SpaceToDepth", 6, 21},
    {"PRelu", 6, 21},
    {"GlobalMaxPool", 1, 21},
    {"Gemm", 6, 21},
    {"MatMul", 6, 21},
    {"Flatten", 6, 21},
    {"Reshape", 6, 21},
    {"Squeeze", 6, 21},
    {"Unsqueeze", 6, 21},
    {"Transpose", 1, 21},
    {"Concat", 6, 21},
    {"Split", 6, 21},
    {"Slice", 6, 21},
    {"Gather", 6, 21},
    {"Cast", 6, 21},
    {"Expand", 8, 21},
    {"ReduceMean", 6, 21},
    {"ReduceSum", 6, 21},
    {"ReduceMax", 6, 21},
    {"ReduceMin", 6, 21},
    {"ReduceProd", 6, 21},
    {"ReduceSumSquare", 6, 21},
    {"ReduceL1", 6, 21},
    {"ReduceL2", 6, 21},
    {"ReduceLogSum", 6, 21},
    {"ReduceLogSumExp", 6, 21},
    {"ArgMax", 6, 21},
    {"ArgMin", 6, 21},
    {"InstanceNormalization", 6, 21},
    {"Softmax", 6, 21},
    {"LogSoftmax", 6, 21},
    {"GatherElements", 11, 21},
    {"ScatterElements", 11, 21},
    {"Scatter", 9, 10},
    {"Tile", 6, 21},
    {"OneHot", 9, 21},
    {"TopK", 1, 21},
    {"NegativeLogLikelihoodLoss", 12, 21},
    {"SoftmaxCrossEntropyLoss", 12, 21},
    {"LayerNormalization", 17, 21},
    {"Dropout", 6, 21},
    {"Identity", 1, 21},
    {"Shape", 6, 21},
    {"Size", 6, 21},
    {"Constant", 6, 21},
    {"ConstantOfShape", 9, 21},
    {"Range", 11, 21},
    {"Where", 9, 21},
    {"Trilu", 14, 21},
    {"Hardmax", 6, 21},
    {"Mod", 10, 21},
    {"Min", 6, 21},
    {"Max", 6, 21},
    {"Sum", 6, 21},
    {"Sinh", 9, 21},
    {"Cosh", 9, 21},
    {"Asinh", 9, 21},
    {"Acosh", 9, 21},
    {"Atanh", 9, 21},
    {"Sin", 7, 21},
    {"Cos", 7, 21},
    {"Tan", 7, 21},
    {"Asin", 7, 21},
    {"Acos", 7, 21},
    {"Atan", 7, 21},
    {"IsNaN", 9, 21},
    {"IsInf", 10, 21},
    {"Mean", 6, 21},
    {"Equal", 6, 21},
    {"Less", 6, 21},
    {"Greater", 6, 21},
    {"LessOrEqual", 12, 21},
    {"GreaterOrEqual", 12, 21},
    {"And", 6, 21},
    {"Or", 6, 21},
    {"Xor", 6, 21},
    {"Not", 6, 21},
    {"Neg", 6, 21},
    {"Abs", 6, 21},
    {"Floor", 6, 21},
    {"Ceil", 6, 21},
    {"Reciprocal", 6, 21},
    {"Exp", 6, 21},
    {"Log", 6, 21},
    {"Round", 11, 21},
    {"Sign", 9, 21},
    {"Softplus", 1, 21},
    {"Softsign", 1, 21},
    {"Elu", 6, 21},
    {"Selu", 6, 21},
    {"LeakyRelu", 6, 21},
    {"Celu", 12, 21},
    {"ThresholdedRelu", 10, 21},
    {"LSTM", 7, 21},
    {"GRU", 7, 21},
    {"RNN", 7, 21},
    {"Shrink", 9, 21},
    {"MeanVarianceNormalization", 9, 21},
    {"LRN", 1, 21},
    {"GridSample", 16, 21},
};

int tc__ox_opset_range(const char *op, int64_t *lo, int64_t *hi) {
  for (size_t i = 0; i < sizeof tc__ox_opsets / sizeof tc__ox_opsets[0]; i++)
    if (strcmp(tc__ox_opsets[i].op, op) == 0) {
      *lo = tc__ox_opsets[i].lo;
      *hi = tc__ox_opsets[i].hi;
      return 1;
    }
  return 0;
}

static th_status tc__ox_node(tc__ox *x, int k) {
  const Onnx__NodeProto *n = x->gp->node[k];
  if (!tc__ox_known(n->op_type)) return tc__ox_unsupported(x, n, "%s", "");
  int64_t lo, hi;
  if (!tc__ox_opset_range(n->op_type, &lo, &hi))
    return tc__ox_unsupported(x, n, "the importer declares no opset range for it");
  if (x->opset < lo || x->opset > hi)
    return tc__ox_unsupported(x, n, "its semantics are implemented for opsets %lld..%lld only",
                              (long long)lo, (long long)hi);
  for (size_t i = 0; i < n->n_input; i++) {
    tc__oxv *v = tc__ox_find(x, n->input[i]);
    if (!v) continue;
    if (v->kind == TC__OX_BAD) {
      tc__ox_poison(x, n); /* downstream of an unsupported node: it is listed already */
      return TH_OK;
    }
    if (v->kind == TC__OX_PAD && strcmp(n->op_type, "Conv") != 0 &&
        strcmp(n->op_type, "AveragePool") != 0)
      return tc__ox_nfail(x, n, TH_ERR_INTERNAL, "a pending Pad reached this node");
    if (v->kind == TC__OX_UNSET)
      return tc__ox_nfail(x, n, TH_ERR_INVALID,
                          "input '%.100s' is an output its producer does not define", v->name);
  }
  int done = 0;
  th_status rc = tc__ox_match(x, k, &done);
  if (rc != TH_OK || done) return rc;
  if (tc__ox_foldable(n->op_type)) {
    int before = x->nunsup;
    rc = tc__ox_fold(x, n, &done);
    if (rc != TH_OK || TC__OX_REPORTED(x, before)) return rc;
    if (done) {
      x->info.folded++;
      return TH_OK;
    }
  }
  tc__ox_conv_fn fn = tc__ox_converter(n->op_type);
  if (fn) return fn(x, n);
  for (size_t i = 0; i < n->n_input; i++) {
    tc__oxv *v = tc__ox_find(x, n->input[i]);
    if (v && v->kind != TC__OX_CONST)
      return tc__ox_unsupported(
          x, n, "only folded at import, and it depends on the runtime tensor '%.60s'", v->name);
  }
  return tc__ox_unsupported(x, n, "its constant result is too large to fold");
}

/* "unsupported ONNX operators: Resize (node 'up1', opset 13), ..." into err. */
static void tc__ox_list_unsupported(tc__ox *x) {
  if (!x->err || x->errlen == 0) return;
  char also[512] = "";
  if (x->failed) snprintf(also, sizeof also, "; the import also failed: %s", x->err);
  char *e = x->err;
  size_t len = x->errlen, k = (size_t)snprintf(e, len, "unsupported ONNX operators: ");
  int i = 0;
  for (; i < x->nunsup && k < len; i++) {
    const tc__ox_unsup *u = &x->unsup[i];
    const Onnx__NodeProto *n = u->node;
    char item[400];
    int w =
        snprintf(item, sizeof item, "%s%.48s (node '%.100s', opset %lld%s%s)", i ? ", " : "",
                 n->op_type, tc__ox_nname(n), (long long)x->opset, u->why[0] ? ": " : "", u->why);
    if (w < 0) break;
    if (k + (size_t)w + 32 >= len && i + 1 < x->nunsup)
      break; /* keep room for the count of the rest */
    k += (size_t)snprintf(e + k, len - k, "%s", item);
  }
  if (i < x->nunsup && k < len)
    k += (size_t)snprintf(e + k, len - k, " and %d more", x->nunsup - i);
  if (k < len) snprintf(e + k, len - k, "%s", also);
}

/* ---- finishing
 * ----------------------------------------------------------------------------------------- */

/* Drops graph nodes no output needs (ops that patterns and peepholes bypassed) and parameters no
 * node uses, renumbering both; names parameters that share a name (one initializer in two layouts)
 * apart. */
static th_status tc__ox_compact(tc__ox *x) {
  tc_graph *g = x->g;
  size_t nn = g->nnodes ? (size_t)g->nnodes : 1, np = g->nparams ? (size_t)g->nparams : 1;
  int *map = th_arena_alloc(x->arena, nn * sizeof *map),
      *pmap = th_arena_alloc(x->arena, np * sizeof *pmap);
  unsigned char *live = th_arena_alloc(x->arena, nn);
  if (!map || !pmap || !live) return tc__ox_fail(x, TH_ERR_NOMEM, "out of memory");
  for (int i = 0; i < g->noutputs; i++) live[g->outputs[i]] = 1;
  for (int i = 0; i < g->ninputs; i++) live[g->inputs[i]] = 1;
  for (int i = g->nnodes - 1; i >= 0; i--)
    if (live[i])
      for (int k = 0; k < g->nodes[i].ninputs; k++) live[g->nodes[i].inputs[k]] = 1;
  int m = 0;
  for (int i = 0; i < g->nnodes; i++) {
    map[i] = live[i] ? m : -1;
    if (!live[i]) continue;
    tc_node *nd = &g->nodes[m];
    *nd = g->nodes[i];
    for (int k = 0; k < nd->ninputs; k++) nd->inputs[k] = map[nd->inputs[k]];
    m++;
  }
  g->nnodes = m;
  for (int i = 0; i < g->ninputs; i++) g->inputs[i] = map[g->inputs[i]];
  for (int i = 0; i < g->noutputs; i++) g->outputs[i] = map[g->outputs[i]];
  for (int p = 0; p < g->nparams; p++) pmap[p] = -1;
  for (int i = 0; i < g->nnodes; i++) {
    tc_node *nd = &g->nodes[i];
    int *ids[6] = {&nd->weight, &nd->bias, &nd->gamma, &nd->beta, &nd->mean, &nd->var};
    for (int k = 0; k < 6; k++)
      if (*ids[k] >= 0) pmap[*ids[k]] = 1;
  }
  int q = 0;
  for (int p = 0; p < g->nparams; p++) {
    if (pmap[p] < 0) continue;
    pmap[p] = q;
    g->params[q] = g->params[p];
    q++;
  }
  g->nparams = q;
  for (int i = 0; i < g->nnodes; i++) {
    tc_node *nd = &g->nodes[i];
    int *ids[6] = {&nd->weight, &nd->bias, &nd->gamma, &nd->beta, &nd->mean, &nd->var};
    for (int k = 0; k < 6; k++)
      if (*ids[k] >= 0) *ids[k] = pmap[*ids[k]];
  }
  /* parameter names must be unique in params.bin: a later parameter with an earlier one's name gets
   * a suffix (hash table over names, linear probing) */
  uint32_t ns = 16;
  while (ns < 2 * (uint32_t)q + 1) ns *= 2;
  int *slot = th_arena_alloc(x->arena, ns * sizeof *slot);
  if (!slot) return tc__ox_fail(x, TH_ERR_NOMEM, "out of memory");
  memset(slot, 0xff, ns * sizeof *slot);
  for (int p = 0; p < q; p++) {
    for (int attempt = 1;; attempt++) {
      uint32_t h = tc__ox_hash(g->params[p].name) & (ns - 1);
      int clash = 0;
      for (; slot[h] >= 0; h = (h + 1) & (ns - 1))
        if (strcmp(g->params[slot[h]].name, g->params[p].name) == 0) clash = 1;
      if (!clash) {
        slot[h] = p;
        break;
      }
      char buf[1100];
      snprintf(buf, sizeof buf, "%s#%d", g->params[p].name, attempt);
      const char *nm = th_arena_strdup(g->arena, buf);
      if (!nm) return tc__ox_fail(x, TH_ERR_NOMEM, "out of memory");
      g->params[p].name = nm;
    }
    if (x->opts->weights && !g->params[p].data && g->params[p].numel > 0)
      return tc__ox_fail(x, TH_ERR_INTERNAL, "parameter '%.100s' got no data", g->params[p].name);
  }
  g->has_data = x->opts->weights != 0;
  return TH_OK;
}

static th_status tc__ox_outputs(tc__ox *x) {
  for (size_t i = 0; i < x->gp->n_output; i++) {
    const char *nm = tc__ox_s(x->gp->output[i]->name);
    tc__oxv *v = tc__ox_find(x, nm);
    if (v->kind == TC__OX_BAD) continue;
    int id = -1;
    th_status rc;
    if (v->kind == TC__OX_CONST) {
      const Onnx__NodeProto *pn = v->producer >= 0 ? x->gp->node[v->producer] : NULL;
      static const Onnx__NodeProto fake = {.name = (char *)"(graph output)",
                                           .op_type = (char *)"Constant"};
      if (v->c.fl)
        rc = tc__ox_tensor(x, pn ? pn : &fake, v, &id);
      else /* Shape, Size, ...: the values the file's shapes fix, computed at import */
        rc = tc__ox_int_tensor(x, pn ? pn : &fake, v, &id);
      if (rc != TH_OK) return rc;
      if (id < 0) continue; /* listed as unsupported */
    } else if (v->kind == TC__OX_NODE) {
      id = v->node;
    } else {
      return tc__ox_fail(x, TH_ERR_INVALID,
                         "graph output '%.100s' is an output its producer does not define", nm);
    }
    if (tc_graph_output(x->g, nm, id) < 0)
      return tc__ox_fail(x, TH_ERR_INVALID, "%s", tc_graph_error(x->g));
  }
  return TH_OK;
}

static th_status tc__ox_run(tc__ox *x) {
  th_status rc = tc__ox_check_model(x);
  if (rc == TH_OK) {
    x->gp = x->m->graph;
    rc = tc__ox_values(x);
  }
  if (rc == TH_OK) rc = tc__ox_sort(x);
  if (rc != TH_OK) return rc;
  x->g = tc_graph_new(x->opts->network, x->opts->batch);
  if (!x->g) return tc__ox_fail(x, TH_ERR_NOMEM, "out of memory");
  memset(x->done, 0, x->gp->n_node ? x->gp->n_node : 1);
  rc = tc__ox_inputs(x);
  size_t i = 0;
  for (; rc == TH_OK && i < x->gp->n_node; i++) {
    int k = x->order[i];
    if (x->done[k]) continue;
    rc = tc__ox_node(x, k);
    x->done[k] = 1;
  }
  if (rc == TH_OK) rc = tc__ox_outputs(x);
  if (x->nunsup > 0) {
    /* list the unknown op types of the nodes the loop did not reach, then every unsupported node */
    for (; i < x->gp->n_node && rc != TH_ERR_NOMEM; i++) {
      const Onnx__NodeProto *n = x->gp->node[x->order[i]];
      if (!x->done[x->order[i]] && !tc__ox_known(n->op_type)) tc__ox_unsupported(x, n, "%s", "");
    }
    if (rc == TH_ERR_NOMEM) return rc;
    tc__ox_list_unsupported(x);
    return TH_ERR_UNSUPPORTED;
  }
  if (rc == TH_OK) rc = tc__ox_compact(x);
  if (rc == TH_OK && tc_graph_finish(x->g) != TH_OK)
    rc = tc__ox_fail(x, TH_ERR_INVALID, "%s", tc_graph_error(x->g));
  return rc;
}

th_status tc_onnx_import(const void *data, size_t len, const tc_onnx_opts *opts, tc_graph **out,
                         tc_onnx_info *info, char *err, size_t errlen) {
  if (err && errlen) err[0] = '\0';
  if (!opts || !out || (!data && len > 0)) {
    if (err) snprintf(err, errlen, "tc_onnx_import: NULL argument");
    return TH_ERR_INVALID;
  }
  if (opts->batch < 1 || opts->batch > 4096) {
    if (err) snprintf(err, errlen, "batch %d is outside 1..4096", opts->batch);
    return TH_ERR_INVALID;
  }
  /* the scan refuses what would overflow protobuf-c's recursion or its allocations; the budget
   * holds protobuf-c to the same bound should the scan miss something */
  char why[512];
  if (tc__ox_wire_scan(data, len, NULL, why, sizeof why) != TH_OK) {
    static const char mal[] = "malformed protobuf: ";
    if (err && strncmp(why, mal, sizeof mal - 1) == 0)
      snprintf(err, errlen, "not an ONNX model (protobuf parse failed): %s", why + sizeof mal - 1);
    else if (err)
      snprintf(err, errlen, "the ONNX file is refused before parsing: %s", why);
    return TH_ERR_INVALID;
  }
  tc__ox_budget budget;
  tc__ox_budget_init(&budget, tc__ox_wire_budget(len));
  Onnx__ModelProto *m = onnx__model_proto__unpack(&budget.pa, len, data ? data : (const void *)"");
  if (!m) {
    if (err && budget.over)
      snprintf(err, errlen,
               "the ONNX file is refused while parsing: protobuf would allocate more "
               "than %zu bytes (the file's %zu bytes plus %zu MiB)",
               budget.limit, len, TC_ONNX_PARSE_OVERHEAD >> 20);
    else if (err)
      snprintf(err, errlen, "not an ONNX model (protobuf parse failed)");
    return TH_ERR_INVALID;
  }
  tc__ox *x = calloc(1, sizeof *x);
  th_arena *arena = th_arena_new(1 << 16);
  th_status rc = TH_ERR_NOMEM;
  if (x && arena) {
    x->m = m;
    x->opts = opts;
    x->arena = arena;
    x->err = err;
    x->errlen = err ? errlen : 0;
    rc = tc__ox_run(x);
  } else if (err) {
    snprintf(err, errlen, "out of memory");
  }
  if (info) memset(info, 0, sizeof *info);
  if (rc == TH_OK) {
    *out = x->g;
    if (info) *info = x->info;
  } else if (x) {
    tc_graph_free(x->g);
  }
  if (info && x) info->file_batch = x->file_batch;
  if (x) {
    free(x->unsup);
    free(x->pinfo);
  }
  free(x);
  th_arena_free(arena);
  onnx__model_proto__free_unpacked(m, &budget.pa);
  return rc;
}

th_status tc_onnx_import_file(const char *path, const tc_onnx_opts *opts, tc_graph **out,
                              tc_onnx_info *info, char *err, size_t errlen) {
  if (!path) {
    if (err) snprintf(err, errlen, "tc_onnx_import_file: NULL path");
    return TH_ERR_INVALID;
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (err) snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return TH_ERR_IO;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    if (err) snprintf(err, errlen, "%s: not a regular file", path);
    close(fd);
    return TH_ERR_IO;
  }
  size_t len = (size_t)st.st_size;
  void *p = len ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
  close(fd);
  if (len && p == MAP_FAILED) {
    if (err) snprintf(err, errlen, "%s: mmap: %s", path, strerror(errno));
    return TH_ERR_IO;
  }
  th_status rc = tc_onnx_import(p, len, opts, out, info, err, errlen);
  if (len) munmap(p, len);
  return rc;
}
