/* The graph IR's core: the op and dtype names, a graph's life cycle and first error, the node table
 * and the parameter declarations the constructors (graph_build.c) append to, the input checks they
 * share (graph_int.h), the declared outputs, and the FLOP and parameter counts. */
#include "graph.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_int.h"
#include "workload.h"

static const char *const tc__op_names[] = {
    "input",  "conv2d",  "batch_norm",          "relu",    "clip",    "add",     "max_pool",
    "avg_pool", "global_avg_pool", "adaptive_avg_pool", "concat", "flatten", "dense", "dropout",
    "softmax", "layout_transform", "const", "matmul", "layer_norm", "gelu", "tanh", "embedding",
    "reshape", "transpose", "slice", "mul", "sub", "div", "cast", "affine", "expand",
    "sigmoid", "hard_sigmoid", "hard_swish", "silu", "math", "gather", "binary", "reduce",
    "scatter",
};
_Static_assert(TC_OP_COUNT == 40, "update tc__op_names when adding ops");
_Static_assert(sizeof tc__op_names / sizeof tc__op_names[0] == TC_OP_COUNT, "op name table size");

size_t tc_dtype_size(int dtype) {
  return dtype == TC_DTYPE_F32 ? 4 : dtype == TC_DTYPE_I64 ? 8 : 0;
}

const char *tc_dtype_name(int dtype) {
  return dtype == TC_DTYPE_F32 ? "float32" : dtype == TC_DTYPE_I64 ? "int64" : "unknown";
}

const char *tc_op_name(tc_op op) {
  if ((int)op < 0 || op >= TC_OP_COUNT) return "unknown";
  return tc__op_names[op];
}

int tc_op_activation(tc_op op) {
  switch (op) {
    case TC_OP_RELU: return TC_EPI_RELU;
    case TC_OP_CLIP: return TC_EPI_CLIP;
    case TC_OP_GELU: return TC_EPI_GELU;
    case TC_OP_TANH: return TC_EPI_TANH;
    case TC_OP_SIGMOID: return TC_EPI_SIGMOID;
    case TC_OP_HARD_SIGMOID: return TC_EPI_HARD_SIGMOID;
    case TC_OP_HARD_SWISH: return TC_EPI_HARD_SWISH;
    case TC_OP_SILU: return TC_EPI_SILU;
    default: return 0;
  }
}

void tc__err(tc_graph *g, const char *fmt, ...) {
  if (g->err[0]) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g->err, sizeof g->err, fmt, ap);
  va_end(ap);
}

const char *tc_graph_error(const tc_graph *g) {
  return g->err;
}

tc_graph *tc_graph_new(const char *network, int batch) {
  tc_graph *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  g->arena = th_arena_new(1 << 20);
  if (!g->arena) goto fail_arena;
  g->network = th_arena_strdup(g->arena, network ? network : "graph");
  if (!g->network) goto fail_name;
  g->batch = batch;
  return g;
fail_name:
  th_arena_free(g->arena);
fail_arena:
  free(g);
  return NULL;
}

void tc_graph_free(tc_graph *g) {
  if (!g) return;
  th_arena_free(g->arena);
  free(g->nodes);
  free(g->params);
  free(g);
}

int64_t tc_tensor_numel(const tc_tensor *t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
  return n;
}

int64_t tc_tensor_bytes(const tc_tensor *t) {
  return tc_tensor_numel(t) * (int64_t)tc_dtype_size(t->dtype);
}

int tc__node(tc_graph *g, tc_op op, const char *name, int n, const int *inputs) {
  if (g->err[0]) return -1;
  if (n > TC_MAX_INPUTS) {
    tc__err(g, "%s: too many inputs (%d)", tc_op_name(op), n);
    return -1;
  }
  for (int i = 0; i < n; i++) {
    if (inputs[i] < 0 || inputs[i] >= g->nnodes) {
      tc__err(g, "%s: bad input node %d", tc_op_name(op), inputs[i]);
      return -1;
    }
  }
  if (g->nnodes == g->node_cap) {
    int cap = g->node_cap ? g->node_cap * 2 : 64;
    tc_node *nn = realloc(g->nodes, (size_t)cap * sizeof *nn);
    if (!nn) {
      tc__err(g, "out of memory");
      return -1;
    }
    g->nodes = nn;
    g->node_cap = cap;
  }
  int id = g->nnodes++;
  tc_node *nd = &g->nodes[id];
  memset(nd, 0, sizeof *nd);
  nd->op = op;
  nd->name = name ? th_arena_strdup(g->arena, name) : NULL;
  nd->ninputs = n;
  for (int i = 0; i < n; i++) nd->inputs[i] = inputs[i];
  nd->weight = nd->bias = nd->gamma = nd->beta = nd->mean = nd->var = -1;
  nd->out.cb = 1;
  nd->out.offset = -1;
  nd->out.dtype = TC_DTYPE_F32;
  nd->groups = 1;
  nd->alpha = 1.0f;
  nd->step = 1;
  return id;
}

int tc_graph_param(tc_graph *g, const char *name, int ndim, const int64_t *shape, int init, int fan_in) {
  if (g->err[0]) return -1;
  if (g->nparams == g->param_cap) {
    int cap = g->param_cap ? g->param_cap * 2 : 64;
    tc_param *np = realloc(g->params, (size_t)cap * sizeof *np);
    if (!np) {
      tc__err(g, "out of memory");
      return -1;
    }
    g->params = np;
    g->param_cap = cap;
  }
  int id = g->nparams++;
  tc_param *p = &g->params[id];
  memset(p, 0, sizeof *p);
  p->name = th_arena_strdup(g->arena, name);
  if (!p->name) {
    tc__err(g, "out of memory");
    return -1;
  }
  p->ndim = ndim;
  p->numel = 1;
  for (int i = 0; i < ndim; i++) {
    p->shape[i] = shape[i];
    p->numel *= shape[i];
  }
  p->init = init;
  p->is_buffer = init == TC_INIT_MEAN || init == TC_INIT_VAR;
  p->scale = 1.0f;
  p->fan_in = fan_in;
  p->used = 1;
  return id;
}

int tc_graph_param_concat(tc_graph *g, const char *name, int n, const int *parts) {
  if (g->err[0]) return -1;
  if (n < 2 || n > TC_MAX_PARTS) {
    tc__err(g, "%s: %d parts (2..%d)", name, n, TC_MAX_PARTS);
    return -1;
  }
  const tc_param *p0 = parts[0] >= 0 && parts[0] < g->nparams ? &g->params[parts[0]] : NULL;
  for (int k = 0; k < n; k++) {
    const tc_param *p = parts[k] >= 0 && parts[k] < g->nparams ? &g->params[parts[k]] : NULL;
    if (!p0 || !p || p->nparts || p->ndim < 1 || p->ndim != p0->ndim ||
        memcmp(p->shape, p0->shape, sizeof p->shape) != 0) {
      tc__err(g, "%s: part %d is not a plain parameter of the first part's shape", name, k);
      return -1;
    }
  }
  int64_t shape[TC_MAX_DIMS];
  memcpy(shape, p0->shape, sizeof shape);
  shape[0] *= n;
  int id = tc_graph_param(g, name, p0->ndim, shape, p0->init, p0->fan_in);
  if (id < 0) return -1;
  tc_param *c = &g->params[id]; /* after tc_graph_param, which may move the table */
  c->is_buffer = g->params[parts[0]].is_buffer;
  c->nparts = n;
  memcpy(c->parts, parts, (size_t)n * sizeof *parts);
  if (tc_graph_concat_params(g) != TH_OK) {
    tc__err(g, "out of memory");
    return -1;
  }
  return id;
}

th_status tc_graph_concat_params(tc_graph *g) {
  for (int i = 0; i < g->nparams; i++) {
    tc_param *c = &g->params[i];
    int ready = c->nparts > 0;
    for (int k = 0; ready && k < c->nparts; k++) ready = g->params[c->parts[k]].data != NULL;
    if (!ready) continue;
    if (!c->data) c->data = th_arena_alloc(g->arena, (size_t)c->numel * sizeof(float));
    if (!c->data) return TH_ERR_NOMEM;
    int64_t each = c->numel / c->nparts;
    for (int k = 0; k < c->nparts; k++)
      memcpy(c->data + k * each, g->params[c->parts[k]].data, (size_t)each * sizeof(float));
  }
  return TH_OK;
}

int tc_graph_find_param(const tc_graph *g, const char *name) {
  for (int i = 0; i < g->nparams; i++)
    if (strcmp(g->params[i].name, name) == 0) return i;
  return -1;
}

int tc__named_param(tc_graph *g, const char *prefix, const char *suffix, int ndim,
                    const int64_t *shape, int init, int fan_in) {
  char nm[256];
  int k = snprintf(nm, sizeof nm, "%s%s%s", prefix, prefix[0] ? "." : "", suffix);
  if (k < 0 || (size_t)k >= sizeof nm) {
    tc__err(g, "parameter name too long: %s", prefix);
    return -1;
  }
  return tc_graph_param(g, nm, ndim, shape, init, fan_in);
}

const tc_tensor *tc__in(tc_graph *g, int x) {
  if (x < 0 || x >= g->nnodes) return NULL;
  return &g->nodes[x].out;
}

/* "[2, 3, 4]" into buf. */
const char *tc__shape_str(const tc_tensor *t, char *buf, size_t n) {
  size_t k = (size_t)snprintf(buf, n, "[");
  for (int d = 0; d < t->ndim && k < n; d++) k += (size_t)snprintf(buf + k, n - k, "%s%d", d ? ", " : "", t->shape[d]);
  if (k < n) snprintf(buf + k, n - k, "]");
  return buf;
}

int tc_graph_output(tc_graph *g, const char *name, int x) {
  if (g->err[0]) return -1;
  if (x < 0 || x >= g->nnodes || !name || !name[0] || g->noutputs >= TC_MAX_IO) {
    tc__err(g, "output %s: bad node %d or too many outputs", name ? name : "(null)", x);
    return -1;
  }
  for (int i = 0; i < g->noutputs; i++)
    if (strcmp(g->output_names[i], name) == 0) {
      tc__err(g, "output %s: declared twice", name);
      return -1;
    }
  const char *nm = th_arena_strdup(g->arena, name);
  if (!nm) {
    tc__err(g, "out of memory");
    return -1;
  }
  g->output_names[g->noutputs] = nm;
  g->outputs[g->noutputs++] = x;
  return x;
}

th_status tc_graph_finish(tc_graph *g) {
  if (g->err[0]) return TH_ERR_INVALID;
  if (g->ninputs == 0 || g->nnodes == 0) {
    tc__err(g, "the graph has no input");
    return TH_ERR_INVALID;
  }
  if (g->noutputs == 0 && tc_graph_output(g, "output", g->nnodes - 1) < 0) return TH_ERR_INVALID;
  return TH_OK;
}

int tc__need4(tc_graph *g, int x, const char *what) {
  const tc_tensor *t = tc__in(g, x);
  if (!t || t->ndim != 4) {
    tc__err(g, "%s: input must be a 4-D tensor", what);
    return 0;
  }
  return 1;
}

/* numpy broadcasting of a and b's shapes into *out (dtype float32); 0 with an error naming both. */
int tc__broadcast(tc_graph *g, const char *what, const tc_tensor *ta, const tc_tensor *tb, tc_tensor *out) {
  char sa[96], sb[96];
  if (ta->dtype != TC_DTYPE_F32 || tb->dtype != TC_DTYPE_F32) {
    tc__err(g, "%s: operands must be float32 (got %s and %s)", what, tc_dtype_name(ta->dtype),
            tc_dtype_name(tb->dtype));
    return 0;
  }
  memset(out, 0, sizeof *out);
  out->ndim = ta->ndim > tb->ndim ? ta->ndim : tb->ndim;
  out->cb = 1;
  out->offset = -1;
  for (int d = 0; d < out->ndim; d++) {
    int ia = d - (out->ndim - ta->ndim), ib = d - (out->ndim - tb->ndim);
    int da = ia >= 0 ? ta->shape[ia] : 1, db = ib >= 0 ? tb->shape[ib] : 1;
    if (da != db && da != 1 && db != 1) {
      tc__err(g, "%s: shapes %s and %s do not broadcast (dimension %d: %d vs %d)", what,
              tc__shape_str(ta, sa, sizeof sa), tc__shape_str(tb, sb, sizeof sb), d, da, db);
      return 0;
    }
    out->shape[d] = da == 1 ? db : da;
  }
  return 1;
}

/* The input tensor of a tensor op: a valid node, float32 unless any_dtype. */
const tc_tensor *tc__tin(tc_graph *g, int x, const char *what, int any_dtype) {
  if (g->err[0]) return NULL;
  const tc_tensor *t = tc__in(g, x);
  if (!t) {
    tc__err(g, "%s: bad input node %d", what, x);
    return NULL;
  }
  if (!any_dtype && t->dtype != TC_DTYPE_F32) {
    tc__err(g, "%s: input must be float32, got %s", what, tc_dtype_name(t->dtype));
    return NULL;
  }
  return t;
}

/* A new node of op on inputs xs whose output is *out. */
int tc__tnode(tc_graph *g, tc_op op, const char *name, int n, const int *xs, const tc_tensor *out) {
  int id = tc__node(g, op, name, n, xs);
  if (id < 0) return -1;
  g->nodes[id].out = *out;
  g->nodes[id].out.cb = 1;
  g->nodes[id].out.offset = -1;
  return id;
}

int64_t tc_graph_param_count(const tc_graph *g) {
  int64_t n = 0;
  for (int i = 0; i < g->nparams; i++)
    if (!g->params[i].is_buffer && g->params[i].used && !g->params[i].nparts)
      n += g->params[i].numel;
  return n;
}

double tc_graph_flops(const tc_graph *g) {
  double f = 0;
  for (int i = 0; i < g->nnodes; i++) {
    const tc_node *nd = &g->nodes[i];
    if (nd->dead) continue;
    if (nd->op == TC_OP_CONV2D) {
      int c = g->nodes[nd->inputs[0]].out.shape[1];
      f += 2.0 * (double)tc_tensor_numel(&nd->out) * (c / nd->groups) * nd->kh * nd->kw;
    } else if (nd->op == TC_OP_DENSE) {
      const tc_tensor *in = &g->nodes[nd->inputs[0]].out;
      f += 2.0 * (double)tc_tensor_numel(&nd->out) * in->shape[in->ndim - 1];
    } else if (nd->op == TC_OP_MATMUL) {
      const tc_tensor *a = &g->nodes[nd->inputs[0]].out;
      f += 2.0 * (double)tc_tensor_numel(&nd->out) * a->shape[a->ndim - (nd->trans_a ? 2 : 1)];
    }
  }
  return f;
}

th_status tc_graph_alloc_params(tc_graph *g) {
  for (int i = 0; i < g->nparams; i++) {
    tc_param *p = &g->params[i];
    if (p->data || p->nparts) continue;
    p->data = th_arena_alloc(g->arena, (size_t)p->numel * sizeof(float));
    if (!p->data) return TH_ERR_NOMEM;
  }
  g->has_data = 1;
  return tc_graph_concat_params(g);
}

int tc_graph_nonfinite(const tc_graph *g) {
  for (int i = 0; i < g->nnodes; i++) {
    const tc_node *nd = &g->nodes[i];
    if (nd->dead) continue;
    if (nd->op == TC_OP_DIV || (nd->op == TC_OP_BINARY && nd->math == TC_BINARY_POW) ||
        (nd->op == TC_OP_BINARY && nd->math == TC_BINARY_FMOD) ||
        (nd->op == TC_OP_MATH &&
         (nd->math == TC_UNARY_LOG || nd->math == TC_UNARY_SQRT ||
          nd->math == TC_UNARY_RECIPROCAL || nd->math == TC_UNARY_ACOSH ||
          nd->math == TC_UNARY_ATANH || nd->math == TC_UNARY_SINH || nd->math == TC_UNARY_COSH ||
          nd->math == TC_UNARY_TAN || nd->math == TC_UNARY_ASIN || nd->math == TC_UNARY_ACOS)) ||
        (nd->op == TC_OP_REDUCE && (nd->math == TC_REDUCE_LOG_SUM || nd->math == TC_REDUCE_PROD)))
      return 1;
  }
  return 0;
}
