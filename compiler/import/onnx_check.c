/* What the ONNX importer does before a node is converted: validating what a malicious or broken
 * file could get wrong (opsets, domains, sizes, names, dangling inputs, cycles), building the value
 * table from the initializers, inputs and node outputs, ordering the nodes (ONNX does not require a
 * sorted graph; constants go first so that patterns see them), and declaring the graph's inputs
 * with the shapes the caller gives. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_int.h"

/* ---- validation
 * -------------------------------------------------------------------------------------- */

static int tc__ox_default_domain(const char *d) {
  return !d || !d[0] || strcmp(d, "ai.onnx") == 0;
}

th_status tc__ox_check_model(tc__ox *x) {
  const Onnx__ModelProto *m = x->m;
  if (!m->has_ir_version || m->ir_version < 3)
    return tc__ox_fail(x, TH_ERR_INVALID,
                       "ir_version %lld is below 3 (or missing): not a supported ONNX model",
                       (long long)(m->has_ir_version ? m->ir_version : 0));
  if (!m->graph) return tc__ox_fail(x, TH_ERR_INVALID, "the model has no graph");
  int64_t opset = -1;
  for (size_t i = 0; i < m->n_opset_import; i++) {
    const Onnx__OperatorSetIdProto *o = m->opset_import[i];
    if (!tc__ox_default_domain(o->domain)) continue;
    if (opset >= 0 && opset != o->version)
      return tc__ox_fail(x, TH_ERR_INVALID,
                         "the model imports two opsets of the default domain (%lld, %lld)",
                         (long long)opset, (long long)o->version);
    opset = o->version;
  }
  if (opset < 0)
    return tc__ox_fail(x, TH_ERR_INVALID,
                       "the model imports no opset of the default domain (ai.onnx)");
  if (opset < TC_ONNX_OPSET_MIN || opset > TC_ONNX_OPSET_MAX)
    return tc__ox_fail(x, TH_ERR_INVALID,
                       "opset %lld of the default domain is outside the supported %d..%d",
                       (long long)opset, TC_ONNX_OPSET_MIN, TC_ONNX_OPSET_MAX);
  x->opset = opset;
  const Onnx__GraphProto *gp = m->graph;
  if (gp->n_node > TC_ONNX_MAX_NODES)
    return tc__ox_fail(x, TH_ERR_INVALID, "the graph has %zu nodes (the limit is %d)", gp->n_node,
                       TC_ONNX_MAX_NODES);
  if (gp->n_sparse_initializer > 0)
    return tc__ox_fail(x, TH_ERR_UNSUPPORTED, "sparse initializers are not supported");
  tc_onnx_info *in = &x->info;
  for (size_t k = 0; k < gp->n_node; k++) {
    const Onnx__NodeProto *n = gp->node[k];
    if (!n->op_type || !n->op_type[0])
      return tc__ox_fail(x, TH_ERR_INVALID, "node %zu has no op_type", k);
    if (!tc__ox_default_domain(n->domain))
      return tc__ox_nfail(x, n, TH_ERR_INVALID,
                          "domain '%.60s' is not supported (only ai.onnx opsets %d..%d)", n->domain,
                          TC_ONNX_OPSET_MIN, TC_ONNX_OPSET_MAX);
    int t = 0;
    while (t < in->nop_types && strcmp(in->op_types[t].name, n->op_type) != 0) t++;
    if (t == in->nop_types && t < TC_ONNX_MAX_OP_TYPES) {
      snprintf(in->op_types[t].name, sizeof in->op_types[t].name, "%s", n->op_type);
      in->nop_types++;
    }
    if (t < in->nop_types) in->op_types[t].count++;
  }
  in->ir_version = m->ir_version;
  in->opset = opset;
  snprintf(in->producer, sizeof in->producer, "%s%s%s", tc__ox_s(m->producer_name),
           m->producer_version && m->producer_version[0] ? " " : "", tc__ox_s(m->producer_version));
  in->nnodes = (int)gp->n_node;
  in->ninitializers = (int)gp->n_initializer;
  return TH_OK;
}

/* ---- the value table
 * --------------------------------------------------------------------------------- */

/* Whether s names an initializer (they enter the name table first). */
static int tc__ox_is_init(tc__ox *x, const char *s) {
  const tc__oxv *v = tc__ox_find(x, s);
  return v && v->init >= 0;
}

th_status tc__ox_values(tc__ox *x) {
  const Onnx__GraphProto *gp = x->gp;
  size_t total = gp->n_input + gp->n_initializer;
  for (size_t k = 0; k < gp->n_node; k++) total += gp->node[k]->n_output;
  if (total > (size_t)1 << 21)
    return tc__ox_fail(x, TH_ERR_INVALID, "the graph names more than 2^21 tensors");
  uint32_t ns = 16;
  while (ns < 2 * total + 1) ns *= 2;
  x->vals = th_arena_alloc(x->arena, (total ? total : 1) * sizeof *x->vals);
  x->slots = th_arena_alloc(x->arena, ns * sizeof *x->slots);
  if (!x->vals || !x->slots) return tc__ox_fail(x, TH_ERR_NOMEM, "out of memory");
  x->nslots = ns;
  memset(x->slots, 0xff, ns * sizeof *x->slots);
  int64_t elements = 0;
  for (size_t i = 0; i < gp->n_initializer; i++) {
    const Onnx__TensorProto *t = gp->initializer[i];
    const char *nm = tc__ox_s(t->name);
    if (!nm[0] || strlen(nm) > 1024)
      return tc__ox_fail(x, TH_ERR_INVALID,
                         "initializer %zu has no name or one longer than 1024 bytes", i);
    int vi = tc__ox_add(x, nm);
    if (vi < 0) return tc__ox_fail(x, TH_ERR_INVALID, "initializer '%.100s' appears twice", nm);
    tc__oxv *v = &x->vals[vi];
    v->init = (int)i;
    th_status rc = tc__ox_decode(x, t, nm, &v->c);
    if (rc != TH_OK) return rc;
    v->c.src = vi;
    v->kind = TC__OX_CONST;
    elements += v->c.n;
  }
  x->info.param_elements = elements;
  for (size_t i = 0; i < gp->n_input; i++) {
    const char *nm = tc__ox_s(gp->input[i]->name);
    if (!nm[0]) return tc__ox_fail(x, TH_ERR_INVALID, "graph input %zu has no name", i);
    if (tc__ox_is_init(x, nm)) continue; /* old exporters list initializers as inputs too */
    if (tc__ox_add(x, nm) < 0)
      return tc__ox_fail(x, TH_ERR_INVALID, "graph input '%.100s' appears twice", nm);
  }
  for (size_t k = 0; k < gp->n_node; k++) {
    const Onnx__NodeProto *n = gp->node[k];
    for (size_t o = 0; o < n->n_output; o++) {
      const char *nm = tc__ox_s(n->output[o]);
      if (!nm[0]) continue;
      int vi = tc__ox_add(x, nm);
      if (vi < 0)
        return tc__ox_nfail(
            x, n, TH_ERR_INVALID,
            "output '%.100s' has the name of another tensor (duplicate output name)", nm);
      x->vals[vi].producer = (int)k;
    }
  }
  /* consumers: every input must name a tensor; each node appears once per value it reads */
  size_t ncons = 0;
  for (size_t k = 0; k < gp->n_node; k++) {
    const Onnx__NodeProto *n = gp->node[k];
    for (size_t i = 0; i < n->n_input; i++) {
      const char *nm = tc__ox_s(n->input[i]);
      if (!nm[0]) continue;
      tc__oxv *v = tc__ox_find(x, nm);
      if (!v)
        return tc__ox_nfail(
            x, n, TH_ERR_INVALID,
            "input '%.100s' is dangling: no node, graph input or initializer produces it", nm);
      v->uses++;
      if (v->mark != (int)k + 1) { /* each node once per value it reads */
        v->mark = (int)k + 1;
        v->ncons++;
        ncons++;
      }
    }
  }
  x->cons = th_arena_alloc(x->arena, (ncons ? ncons : 1) * sizeof *x->cons);
  if (!x->cons) return tc__ox_fail(x, TH_ERR_NOMEM, "out of memory");
  int off = 0;
  for (int i = 0; i < x->nvals; i++) {
    x->vals[i].cons0 = off;
    off += x->vals[i].ncons;
    x->vals[i].ncons = 0;
  }
  for (size_t k = 0; k < gp->n_node; k++) {
    const Onnx__NodeProto *n = gp->node[k];
    for (size_t i = 0; i < n->n_input; i++) {
      tc__oxv *v = tc__ox_find(x, n->input[i]);
      if (!v) continue;
      if (v->ncons > 0 && x->cons[v->cons0 + v->ncons - 1] == (int)k) continue;
      x->cons[v->cons0 + v->ncons++] = (int)k;
    }
  }
  if (gp->n_output == 0) return tc__ox_fail(x, TH_ERR_INVALID, "the graph has no outputs");
  if (gp->n_output > TC_MAX_IO)
    return tc__ox_fail(x, TH_ERR_INVALID, "the graph has %zu outputs (at most %d)", gp->n_output,
                       TC_MAX_IO);
  for (size_t i = 0; i < gp->n_output; i++) {
    const char *nm = tc__ox_s(gp->output[i]->name);
    tc__oxv *v = tc__ox_find(x, nm);
    if (!v)
      return tc__ox_fail(x, TH_ERR_INVALID, "graph output '%.100s' is not produced by any node",
                         nm);
    for (size_t j = 0; j < i; j++)
      if (strcmp(tc__ox_s(gp->output[j]->name), nm) == 0)
        return tc__ox_fail(x, TH_ERR_INVALID, "graph output '%.100s' is listed twice", nm);
    v->is_output = 1;
    v->uses++;
  }
  return TH_OK;
}

/* ---- evaluation order
 * -------------------------------------------------------------------------------- */

/* Kahn's algorithm; among ready nodes those whose inputs are all constants go first, so that every
 * constant the patterns look at is known before the activations around it are converted. */
th_status tc__ox_sort(tc__ox *x) {
  const Onnx__GraphProto *gp = x->gp;
  size_t nn = gp->n_node ? gp->n_node : 1;
  int *indeg = th_arena_alloc(x->arena, nn * sizeof *indeg);
  int *qc = th_arena_alloc(x->arena, nn * sizeof *qc),
      *qr = th_arena_alloc(x->arena, nn * sizeof *qr);
  unsigned char *cst = th_arena_alloc(x->arena, (size_t)(x->nvals ? x->nvals : 1));
  x->order = th_arena_alloc(x->arena, nn * sizeof *x->order);
  x->done = th_arena_alloc(x->arena, nn);
  if (!indeg || !qc || !qr || !cst || !x->order || !x->done)
    return tc__ox_fail(x, TH_ERR_NOMEM, "out of memory");
  for (int i = 0; i < x->nvals; i++) {
    cst[i] = x->vals[i].init >= 0;
    if (x->vals[i].producer < 0) continue;
    for (int c = 0; c < x->vals[i].ncons; c++) indeg[x->cons[x->vals[i].cons0 + c]]++;
  }
  int hc = 0, tcn = 0, hr = 0, tr = 0, cnt = 0;
  for (size_t k = 0; k < gp->n_node; k++)
    if (indeg[k] == 0) {
      int all = 1;
      for (size_t i = 0; i < gp->node[k]->n_input; i++) {
        tc__oxv *v = tc__ox_find(x, gp->node[k]->input[i]);
        if (v && !cst[v - x->vals]) all = 0;
      }
      if (all)
        qc[tcn++] = (int)k;
      else
        qr[tr++] = (int)k;
    }
  while (hc < tcn || hr < tr) {
    int k = hc < tcn ? qc[hc++] : qr[hr++];
    const Onnx__NodeProto *n = gp->node[k];
    x->order[cnt++] = k;
    int all = 1;
    for (size_t i = 0; i < n->n_input; i++) {
      tc__oxv *v = tc__ox_find(x, n->input[i]);
      if (v && !cst[v - x->vals]) all = 0;
    }
    if (strcmp(n->op_type, "Shape") == 0 || strcmp(n->op_type, "Size") == 0) all = 1;
    for (size_t o = 0; o < n->n_output; o++) {
      tc__oxv *v = tc__ox_out(x, n, (int)o);
      if (!v) continue;
      cst[v - x->vals] = (unsigned char)all;
      for (int c = 0; c < v->ncons; c++) {
        int j = x->cons[v->cons0 + c];
        if (--indeg[j] != 0) continue;
        int jall = 1;
        for (size_t i = 0; i < gp->node[j]->n_input; i++) {
          tc__oxv *w = tc__ox_find(x, gp->node[j]->input[i]);
          if (w && !cst[w - x->vals]) jall = 0;
        }
        if (jall)
          qc[tcn++] = j;
        else
          qr[tr++] = j;
      }
    }
  }
  if ((size_t)cnt == gp->n_node) return TH_OK;
  /* a node left over is in a cycle or downstream of one: walk back through unsorted producers until
   * the walk must have entered the cycle */
  unsigned char *sorted = x->done;
  for (int i = 0; i < cnt; i++) sorted[x->order[i]] = 1;
  int u = 0;
  while (sorted[u]) u++;
  for (size_t step = 0; step < gp->n_node; step++) {
    const Onnx__NodeProto *n = gp->node[u];
    for (size_t i = 0; i < n->n_input; i++) {
      tc__oxv *v = tc__ox_find(x, n->input[i]);
      if (v && v->producer >= 0 && !sorted[v->producer]) {
        u = v->producer;
        break;
      }
    }
  }
  return tc__ox_nfail(x, gp->node[u], TH_ERR_INVALID, "the graph has a cycle through this node");
}

/* ---- inputs
 * ------------------------------------------------------------------------------------------ */

/* Parses one entry [s, end) of opts->shapes, "NAME:DxDxD" (names run to the last ':'; the first D
 * may be N, returned as 0): its rank, or -1 for a malformed entry (message in x). */
static int tc__ox_shape_entry(tc__ox *x, const char *s, const char *end, size_t *namelen,
                              int64_t *dims) {
  const char *colon = NULL;
  for (const char *p = s; p < end; p++)
    if (*p == ':') colon = p;
  int rank = 0;
  const char *p = colon ? colon + 1 : end;
  if (!colon || colon == s || p == end) goto bad;
  while (p < end) {
    int64_t v = 0;
    if (*p == 'N' && rank == 0) {
      p++;
    } else {
      if (*p < '0' || *p > '9') goto bad;
      while (p < end && *p >= '0' && *p <= '9') {
        v = v * 10 + (*p++ - '0');
        if (v > TC_ONNX_MAX_DIM) goto bad;
      }
      if (v < 1) goto bad;
    }
    if (rank == TC__OX_RANK) goto bad;
    dims[rank++] = v;
    if (p < end && (*p != 'x' || p + 1 == end)) goto bad;
    if (p < end) p++;
  }
  *namelen = (size_t)(colon - s);
  return rank;
bad:
  tc__ox_fail(x, TH_ERR_INVALID,
              "bad shapes string '%.200s': entries are NAME:DxDxD, positive dimensions up to %lld "
              "(the first may be "
              "N), separated by commas",
              x->opts->shapes, (long long)TC_ONNX_MAX_DIM);
  return -1;
}

/* The dims opts->shapes gives input `name`: the rank, 0 when it gives none, -1 for a malformed
 * string. */
static int tc__ox_shape_of(tc__ox *x, const char *name, int64_t *dims) {
  for (const char *s = x->opts->shapes; s && *s;) {
    const char *end = strchr(s, ',');
    if (!end) end = s + strlen(s);
    size_t nl;
    int rank = tc__ox_shape_entry(x, s, end, &nl, dims);
    if (rank < 0) return -1;
    if (nl == strlen(name) && memcmp(s, name, nl) == 0) return rank;
    s = *end ? end + 1 : end;
  }
  return 0;
}

/* opts->shapes is well formed and names only graph inputs. */
static th_status tc__ox_check_shapes(tc__ox *x) {
  for (const char *s = x->opts->shapes; s && *s;) {
    const char *end = strchr(s, ',');
    if (!end) end = s + strlen(s);
    size_t nl;
    int64_t dims[TC__OX_RANK];
    if (tc__ox_shape_entry(x, s, end, &nl, dims) < 0) return TH_ERR_INVALID;
    int found = 0;
    for (size_t i = 0; i < x->gp->n_input && !found; i++) {
      const char *nm = tc__ox_s(x->gp->input[i]->name);
      found = strlen(nm) == nl && memcmp(nm, s, nl) == 0 && !tc__ox_is_init(x, nm);
    }
    if (!found)
      return tc__ox_fail(x, TH_ERR_INVALID,
                         "shapes names '%.*s', which is not an input of the graph",
                         (int)(nl > 100 ? 100 : nl), s);
    s = *end ? end + 1 : end;
  }
  return TH_OK;
}

/* The leading dimension of input vi as the file writes it: its value, 0 when symbolic (a dim_param
 * or nothing); *rank gets the file's rank (-1 when it gives no shape). */
static int64_t tc__ox_lead(const Onnx__ValueInfoProto *vi, int *rank) {
  const Onnx__TypeProto *tp = vi->type;
  const Onnx__TensorShapeProto *sh =
      tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && tp->tensor_type
          ? tp->tensor_type->shape
          : NULL;
  *rank = sh ? (int)(sh->n_dim > 64 ? 64 : sh->n_dim) : -1;
  if (!sh || sh->n_dim == 0) return 0;
  const Onnx__TensorShapeProto__Dimension *d = sh->dim[0];
  return d && d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE ? d->dim_value
                                                                                   : 0;
}

/* The batch rule (README, "The batch rule"): the network's batch dimension is the leading dimension
 * of its first input of rank >= 2. An input is batched (its first dimension becomes opts->batch)
 * when its leading dimension is symbolic, or when its leading dimension is the number (2 or more)
 * the batch dimension fixes: a [3] beside a [3, 5] holds one value per sample (a class target, a
 * sequence length, a diffusion timestep). Any other vector of fixed length is data (numpy
 * broadcasting aligns it with the trailing dimension: a bias, a scale, a list to split); rank-0
 * inputs, and inputs whose leading dimension is another fixed number, are taken as the file gives
 * them. A file fixed at batch 1 keeps its [1] vectors as data: one sample cannot tell them apart. */
static void tc__ox_batch_rule(tc__ox *x, unsigned char *batched) {
  int64_t lead = -1;
  for (size_t i = 0; i < x->gp->n_input && lead < 0; i++) {
    int r;
    int64_t v = tc__ox_lead(x->gp->input[i], &r);
    if (!tc__ox_is_init(x, tc__ox_s(x->gp->input[i]->name)) && (r < 0 || r >= 2)) lead = v;
  }
  for (size_t i = 0; i < x->gp->n_input; i++) {
    int r;
    int64_t v = tc__ox_lead(x->gp->input[i], &r);
    batched[i] = r < 0 || (r >= 1 && (v == 0 || (v == lead && (r >= 2 || lead >= 2))));
  }
  x->file_batch = lead > 0 && lead <= INT_MAX ? (int)lead : 0;
}

th_status tc__ox_inputs(tc__ox *x) {
  th_status rc = tc__ox_check_shapes(x);
  if (rc != TH_OK) return rc;
  unsigned char *batched = th_arena_alloc(x->arena, x->gp->n_input + 1);
  if (!batched) return TH_ERR_NOMEM;
  tc__ox_batch_rule(x, batched);
  for (size_t i = 0; i < x->gp->n_input; i++) {
    const Onnx__ValueInfoProto *vi = x->gp->input[i];
    const char *nm = tc__ox_s(vi->name);
    if (tc__ox_is_init(x, nm)) continue;
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
      return tc__ox_fail(x, TH_ERR_INVALID, "input '%.100s' is not a tensor", nm);
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    int dtype = tt->elem_type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT   ? TC_DTYPE_F32
                : tt->elem_type == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 ? TC_DTYPE_I64
                                                                        : -1;
    if (dtype < 0)
      return tc__ox_fail(x, TH_ERR_INVALID,
                         "input '%.100s' has element type %d (float32 and int64 are supported)", nm,
                         (int)tt->elem_type);
    int64_t given[TC__OX_RANK];
    int grank = tc__ox_shape_of(x, nm, given);
    if (grank < 0) return TH_ERR_INVALID;
    int rank = tt->shape ? (int)(tt->shape->n_dim > 64 ? 64 : tt->shape->n_dim) : -1;
    if (rank < 0 && grank == 0)
      return tc__ox_fail(x, TH_ERR_INVALID,
                         "input '%.100s' has no shape in the file; give it in shapes (NAME:Nx...)",
                         nm);
    if (grank > 0 && rank >= 0 && grank != rank)
      return tc__ox_fail(x, TH_ERR_INVALID,
                         "shapes gives input '%.100s' %d dimensions, the file %d", nm, grank, rank);
    if (rank < 0) rank = grank;
    if (rank < 0 || rank > TC_MAX_DIMS)
      return tc__ox_fail(x, TH_ERR_INVALID, "input '%.100s' has %d dimensions (0..%d)", nm, rank,
                         TC_MAX_DIMS);
    if (!batched[i] && grank > 0 && given[0] == 0)
      return tc__ox_fail(x, TH_ERR_INVALID,
                         "shapes gives input '%.100s' the batch (N) first, but the file fixes its "
                         "first dimension apart from the batch's; give it as a number",
                         nm);
    for (int d = 0; tt->shape && d < rank && (size_t)d < tt->shape->n_dim; d++) {
      const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[d];
      if (grank <= 0 && dim &&
          dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
          dim->dim_value == 0) /* a fixed 0, not a symbolic dimension */
        return tc__ox_fail(x, TH_ERR_INVALID,
                           "input '%.100s': dimension %d is 0 (empty tensors are not supported)",
                           nm, d);
    }
    int shape[TC_MAX_DIMS];
    shape[0] = x->opts->batch;
    for (int d = batched[i] ? 1 : 0; d < rank; d++) {
      const Onnx__TensorShapeProto__Dimension *dim =
          tt->shape && (size_t)d < tt->shape->n_dim ? tt->shape->dim[d] : NULL;
      int64_t v = dim && dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE
                      ? dim->dim_value
                      : 0;
      if (v < 0 || v > TC_ONNX_MAX_DIM)
        return tc__ox_fail(x, TH_ERR_INVALID, "input '%.100s': dimension %d is %lld (0..%lld)", nm,
                           d, (long long)v, (long long)TC_ONNX_MAX_DIM);
      if (grank > 0) v = given[d];
      if (v == 0) {
        const char *param =
            dim && dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM
                ? tc__ox_s(dim->dim_param)
                : "";
        return tc__ox_fail(x, TH_ERR_INVALID,
                           "input '%.100s': dimension %d%s%.60s%s is symbolic; fix it with shapes "
                           "(\"%.100s:Nx...\")",
                           nm, d, param[0] ? " ('" : "", param, param[0] ? "')" : "", nm);
      }
      shape[d] = (int)v;
    }
    int id = tc_graph_input_tensor(x->g, nm, dtype, rank, shape);
    if (id < 0) return tc__ox_fail(x, TH_ERR_INVALID, "%s", tc_graph_error(x->g));
    if (x->g->ninputs == 1 && rank == 4 && dtype == TC_DTYPE_F32) {
      x->g->in_c = shape[1];
      x->g->in_h = shape[2];
      x->g->in_w = shape[3];
    }
    tc__oxv *v = tc__ox_find(x, nm);
    v->kind = TC__OX_NODE;
    v->node = id;
  }
  if (x->g->ninputs == 0)
    return tc__ox_fail(x, TH_ERR_INVALID, "the graph has no inputs (besides initializers)");
  return TH_OK;
}
