/* The graph passes (see passes.h): batch-norm folding, epilogue fusion, the NCHW[cb]c layout assignment
 * of CNN feature maps with edge-only reorders, strided views (chains of reshape/transpose/slice/expand
 * composed into one view over a base, an alias where contiguous, one COPY where a kernel needs it
 * contiguous), liveness-based memory planning, and lowering to kernel calls. Passes work on the node table
 * in place: removed nodes are marked dead and their consumers rewired, so node order stays topological and
 * the reference interpreter can run the graph after any pass. Views are recomputed from the graph where
 * needed (plan, lower, tc_graph_storage) rather than stored, so that graph.h's nodes carry no pass state. */
#include "passes.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

static th_status tc__fail(tc_graph *g, th_status rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static th_status tc__fail(tc_graph *g, th_status rc, const char *fmt, ...) {
  if (!g->err[0]) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->err, sizeof g->err, fmt, ap);
    va_end(ap);
  }
  return rc;
}

/* Number of references to each node from live nodes (+1 for the graph output). */
static int *tc__uses(const tc_graph *g) {
  int *u = calloc((size_t)g->nnodes + 1, sizeof *u);
  if (!u) return NULL;
  for (int i = 0; i < g->nnodes; i++) {
    if (g->nodes[i].dead) continue;
    for (int k = 0; k < g->nodes[i].ninputs; k++) u[g->nodes[i].inputs[k]]++;
  }
  for (int k = 0; k < g->noutputs; k++) u[g->outputs[k]]++;
  return u;
}

/* Every reference to `from` now points to `to`; `from` dies. */
static void tc__replace(tc_graph *g, int from, int to) {
  for (int i = 0; i < g->nnodes; i++) {
    if (g->nodes[i].dead) continue;
    for (int k = 0; k < g->nodes[i].ninputs; k++)
      if (g->nodes[i].inputs[k] == from) g->nodes[i].inputs[k] = to;
  }
  for (int k = 0; k < g->noutputs; k++)
    if (g->outputs[k] == from) g->outputs[k] = to;
  g->nodes[from].dead = 1;
}

int tc_node_has_bias(const tc_node *nd) {
  return nd->bias >= 0 || nd->gamma >= 0;
}

th_status tc_pass_fold_bn(tc_graph *g) {
  int *u = tc__uses(g);
  if (!u) return TH_ERR_NOMEM;
  for (int i = 0; i < g->nnodes; i++) {
    tc_node *bn = &g->nodes[i];
    if (bn->dead || bn->op != TC_OP_BATCH_NORM) continue;
    tc_node *c = &g->nodes[bn->inputs[0]];
    if (c->op != TC_OP_CONV2D || c->gamma >= 0 || c->epilogue || u[bn->inputs[0]] != 1) continue;
    c->gamma = bn->gamma;
    c->beta = bn->beta;
    c->mean = bn->mean;
    c->var = bn->var;
    c->eps = bn->eps;
    int conv = bn->inputs[0];
    tc__replace(g, i, conv);
    u[conv] = u[i];
  }
  free(u);
  return TH_OK;
}

/* the activations of imported CNNs: fused into a conv (depthwise too) or dense only */
#define TC__CNN_ACT (TC_EPI_SIGMOID | TC_EPI_HARD_SIGMOID | TC_EPI_HARD_SWISH | TC_EPI_SILU)
#define TC__ACT (TC_EPI_RELU | TC_EPI_CLIP | TC_EPI_GELU | TC_EPI_TANH | TC__CNN_ACT)

static int tc__same_shape(const tc_tensor *a, const tc_tensor *b) {
  if (a->ndim != b->ndim) return 0;
  for (int d = 0; d < a->ndim; d++)
    if (a->shape[d] != b->shape[d]) return 0;
  return 1;
}

/* Both operands of a binary node have the output's element count: the broadcast is trivial and all three
 * tensors have the same row-major element order. */
static int tc__same_numel_operands(const tc_graph *g, const tc_node *nd) {
  int64_t n = tc_tensor_numel(&nd->out);
  return nd->ninputs == 2 && tc_tensor_numel(&g->nodes[nd->inputs[0]].out) == n &&
         tc_tensor_numel(&g->nodes[nd->inputs[1]].out) == n;
}

static int tc__can_take_epilogue(const tc_graph *g, const tc_node *p) {
  if (p->epilogue & TC__ACT) return 0;
  /* an add takes an activation only as ELTWISE, which needs equal shapes (BINARY has no epilogue) */
  return p->op == TC_OP_CONV2D || p->op == TC_OP_DENSE ||
         (p->op == TC_OP_ADD && tc__same_numel_operands(g, p));
}

/* For softmax scores x with an additive mask m: the split p such that m, right-aligned to x, equals x on
 * dims [0, p), is 1 on [p, rank-1) and equals x on the last dim. Then the mask is [n, w] rows with n the
 * product of x's first p dims, which SOFTMAX_ROWS reads with TC_EPI_MASK. -1 for any other pattern. */
static int tc__mask_split(const tc_tensor *x, const tc_tensor *m) {
  int r = x->ndim, mm[TC_MAX_DIMS];
  if (m->ndim > r || r < 1) return -1;
  for (int d = 0; d < r; d++) {
    int k = d - (r - m->ndim);
    mm[d] = k >= 0 ? m->shape[k] : 1;
  }
  if (mm[r - 1] != x->shape[r - 1]) return -1;
  int p = 0;
  while (p < r - 1 && mm[p] == x->shape[p]) p++;
  for (int d = p; d < r - 1; d++)
    if (mm[d] != 1) return -1;
  return p;
}

static tc_node tc__blank_node(tc_op op) {
  tc_node n;
  memset(&n, 0, sizeof n);
  n.op = op;
  n.weight = n.bias = n.gamma = n.beta = n.mean = n.var = -1;
  n.groups = 1;
  n.alpha = 1.0f;
  n.step = 1;
  n.out.cb = 1;
  n.out.offset = -1;
  return n;
}

/* Inserts a copy of *proto at position pos; later nodes shift by one and references are renumbered. */
static int tc__insert(tc_graph *g, int pos, const tc_node *proto) {
  if (g->nnodes == g->node_cap) {
    int cap = g->node_cap ? g->node_cap * 2 : 64;
    tc_node *nn = realloc(g->nodes, (size_t)cap * sizeof *nn);
    if (!nn) return -1;
    g->nodes = nn;
    g->node_cap = cap;
  }
  memmove(&g->nodes[pos + 1], &g->nodes[pos], (size_t)(g->nnodes - pos) * sizeof *g->nodes);
  g->nnodes++;
  g->nodes[pos] = *proto;
  for (int i = 0; i < g->nnodes; i++) {
    if (i == pos) continue;
    for (int k = 0; k < g->nodes[i].ninputs; k++)
      if (g->nodes[i].inputs[k] >= pos) g->nodes[i].inputs[k]++;
  }
  for (int k = 0; k < g->noutputs; k++)
    if (g->outputs[k] >= pos) g->outputs[k]++;
  for (int k = 0; k < g->ninputs; k++)
    if (g->inputs[k] >= pos) g->inputs[k]++;
  return pos;
}

/* The only live consumer of node x, or -1 (none, several, or x is a graph output). */
static int tc__sole_consumer(const tc_graph *g, const int *u, int x) {
  if (u[x] != 1) return -1;
  for (int k = 0; k < g->noutputs; k++)
    if (g->outputs[k] == x) return -1;
  for (int j = x + 1; j < g->nnodes; j++) {
    if (g->nodes[j].dead) continue;
    for (int k = 0; k < g->nodes[j].ninputs; k++)
      if (g->nodes[j].inputs[k] == x) return j;
  }
  return -1;
}

/* Folds add node i into its later-computed conv or dense operand of the same shape as a residual, or
 * into the layer norm it alone feeds. Returns 1 when the add is gone. */
static int tc__fuse_add(tc_graph *g, const int *u, int i) {
  tc_node *nd = &g->nodes[i];
  int best = -1;
  for (int k = 0; k < 2; k++) {
    int c = nd->inputs[k], o = nd->inputs[1 - k];
    const tc_node *p = &g->nodes[c];
    if ((p->op == TC_OP_CONV2D || p->op == TC_OP_DENSE) && u[c] == 1 && p->ninputs == 1 && o < c &&
        !(p->epilogue & (TC__ACT | TC_EPI_RESIDUAL)) && tc__same_shape(&p->out, &nd->out) &&
        tc_tensor_numel(&g->nodes[o].out) == tc_tensor_numel(&nd->out) && c > best)
      best = c;
  }
  if (best >= 0) {
    tc_node *p = &g->nodes[best];
    p->inputs[1] = nd->inputs[0] == best ? nd->inputs[1] : nd->inputs[0];
    p->ninputs = 2;
    p->epilogue |= TC_EPI_RESIDUAL;
    p->epilogue |= nd->epilogue;
    p->clip_min = nd->clip_min;
    p->clip_max = nd->clip_max;
    tc__replace(g, i, best);
    return 1;
  }
  int ln = tc__sole_consumer(g, u, i);
  if (ln < 0 || nd->epilogue || !tc__same_numel_operands(g, nd)) return 0;
  tc_node *l = &g->nodes[ln];
  if (l->op != TC_OP_LAYER_NORM || l->ninputs != 1 || l->inputs[0] != i) return 0;
  l->inputs[0] = nd->inputs[0];
  l->inputs[1] = nd->inputs[1];
  l->ninputs = 2;
  l->epilogue |= TC_EPI_RESIDUAL;
  nd->dead = 1;
  return 1;
}

static const char *const tc__fuse_names[] = {"activation", "residual", "softmax", "qkv"};
_Static_assert(sizeof tc__fuse_names / sizeof tc__fuse_names[0] == 4 && TC_FUSE_ALL == (1 << 4) - 1,
               "a name per fusion group");
enum { TC__NFUSE = sizeof tc__fuse_names / sizeof tc__fuse_names[0] };

const char *tc_fuse_group_name(int group) {
  for (int k = 0; k < TC__NFUSE; k++)
    if (group == 1 << k) return tc__fuse_names[k];
  return NULL;
}

th_status tc_fuse_groups_parse(const char *list, int *groups, char *err, size_t errlen) {
  char valid[128] = "";
  for (int k = 0; k < TC__NFUSE; k++)
    snprintf(valid + strlen(valid), sizeof valid - strlen(valid), "%s%s", k ? ", " : "",
             tc__fuse_names[k]);
  int mask = 0;
  const char *p = list ? list : "";
  do {
    size_t len = strcspn(p, ",");
    int bit = 0;
    for (int k = 0; k < TC__NFUSE && !bit; k++)
      if (len == strlen(tc__fuse_names[k]) && strncmp(p, tc__fuse_names[k], len) == 0) bit = 1 << k;
    if (!bit) {
      if (err && errlen)
        snprintf(err, errlen, "unknown fusion group '%.*s'; valid: %s", (int)(len > 64 ? 64 : len),
                 p, valid);
      return TH_ERR_INVALID;
    }
    mask |= bit;
    p += len;
  } while (*p++ == ',');
  *groups = mask;
  return TH_OK;
}

/* TC_FUSE_SOFTMAX off: softmax(alpha * x + mask) becomes softmax(affine(x, alpha) + mask), the
 * nodes a graph without the fused operator would have; the add broadcasts the mask (BINARY) and the
 * softmax is plain. */
static th_status tc__unfuse_softmax(tc_graph *g) {
  for (int i = 0; i < g->nnodes; i++) {
    if (g->nodes[i].dead || g->nodes[i].op != TC_OP_SOFTMAX) continue;
    for (int step = 0; step < 2; step++) { /* the scale, then the mask */
      tc_node *sm = &g->nodes[i];
      if (step == 0 ? sm->alpha == 1.0f : sm->ninputs != 2) continue;
      tc_node e = tc__blank_node(step == 0 ? TC_OP_AFFINE : TC_OP_ADD);
      e.ninputs = step + 1;
      e.inputs[0] = sm->inputs[0];
      e.out = sm->out;
      e.out.offset = -1;
      if (step == 0) {
        e.alpha = sm->alpha;
        sm->alpha = 1.0f;
      } else {
        e.inputs[1] = sm->inputs[1];
        sm->ninputs = 1;
      }
      if (tc__insert(g, i, &e) < 0) return tc__fail(g, TH_ERR_NOMEM, "out of memory");
      i++; /* the softmax, one further on, reads the new node */
      g->nodes[i].inputs[0] = i - 1;
    }
  }
  return TH_OK;
}

static th_status tc__fuse_qkv(tc_graph *g);

th_status tc_pass_fuse(tc_graph *g) {
  return tc_pass_fuse_groups(g, TC_FUSE_ALL);
}

th_status tc_pass_fuse_groups(tc_graph *g, int groups) {
  if (!(groups & TC_FUSE_SOFTMAX)) {
    th_status rc = tc__unfuse_softmax(g);
    if (rc != TH_OK) return rc;
  }
  for (int i = 0; i < g->nnodes; i++) {
    tc_node *nd = &g->nodes[i];
    if (nd->dead) continue;
    if (nd->op == TC_OP_CONV2D || nd->op == TC_OP_DENSE) {
      if (tc_node_has_bias(nd)) nd->epilogue |= TC_EPI_BIAS;
      continue;
    }
    int *u = tc__uses(g);
    if (!u) return TH_ERR_NOMEM;
    int x = nd->ninputs > 0 ? nd->inputs[0] : -1;
    switch (nd->op) {
      case TC_OP_DROPOUT: tc__replace(g, i, x); break;
      case TC_OP_ADAPTIVE_AVG_POOL: {
        const tc_tensor *t = &g->nodes[x].out;
        if (t->shape[2] == nd->out.shape[2] && t->shape[3] == nd->out.shape[3]) {
          tc__replace(g, i, x);
        } else if (t->shape[2] % nd->out.shape[2] == 0 && t->shape[3] % nd->out.shape[3] == 0 &&
                   t->shape[2] / nd->out.shape[2] == t->shape[3] / nd->out.shape[3]) {
          int k = t->shape[2] / nd->out.shape[2]; /* equal bins: a plain average pool */
          nd->op = TC_OP_AVG_POOL;
          nd->kh = nd->kw = nd->sh = nd->sw = k;
          nd->pt = nd->pl = nd->pb = nd->pr = 0;
          nd->count_include_pad = 1;
        }
        break;
      }
      case TC_OP_RELU:
      case TC_OP_CLIP:
      case TC_OP_GELU:
      case TC_OP_TANH:
      case TC_OP_SIGMOID:
      case TC_OP_HARD_SIGMOID:
      case TC_OP_HARD_SWISH:
      case TC_OP_SILU: {
        tc_node *p = &g->nodes[x];
        int flag = tc_op_activation(nd->op);
        int gt = nd->op == TC_OP_GELU || nd->op == TC_OP_TANH; /* dense epilogues only */
        int cnn = (flag & TC__CNN_ACT) != 0;                   /* conv and dense epilogues only */
        if ((groups & TC_FUSE_ACTIVATION) && u[x] == 1 && tc__can_take_epilogue(g, p) &&
            (!gt || p->op == TC_OP_DENSE) && (!cnn || p->op != TC_OP_ADD)) {
          if (nd->op == TC_OP_CLIP) {
            p->clip_min = nd->clip_min;
            p->clip_max = nd->clip_max;
          }
          if (nd->op == TC_OP_HARD_SIGMOID) { /* a conv or dense has no use for alpha and shift */
            p->alpha = nd->alpha;
            p->shift = nd->shift;
          }
          p->epilogue |= flag;
          tc__replace(g, i, x);
        }
        break;
      }
      case TC_OP_ADD:
        if (groups & TC_FUSE_RESIDUAL) tc__fuse_add(g, u, i);
        break;
      case TC_OP_SOFTMAX:
        if (nd->ninputs == 2 && tc__mask_split(&nd->out, &g->nodes[nd->inputs[1]].out) < 0) {
          /* an unusual mask: broadcast it to the scores' shape (one COPY), read as [rows, w] */
          tc_node e = tc__blank_node(TC_OP_EXPAND);
          e.ninputs = 1;
          e.inputs[0] = nd->inputs[1];
          e.out = nd->out;
          e.out.dtype = TC_DTYPE_F32;
          e.out.offset = -1;
          if (tc__insert(g, i, &e) < 0) {
            free(u);
            return tc__fail(g, TH_ERR_NOMEM, "out of memory");
          }
          g->nodes[i + 1].inputs[1] = i;
          i++;
        }
        break;
      default: break;
    }
    free(u);
  }
  return (groups & TC_FUSE_QKV) ? tc__fuse_qkv(g) : TH_OK;
}
/* ---- layout ------------------------------------------------------------------------------------------ */

static int tc__is_cnn_op(tc_op op) {
  return op == TC_OP_CONV2D || op == TC_OP_BATCH_NORM || op == TC_OP_MAX_POOL ||
         op == TC_OP_AVG_POOL || op == TC_OP_GLOBAL_AVG_POOL || op == TC_OP_ADAPTIVE_AVG_POOL;
}

/* A broadcast multiply of maps that keeps the channel-blocked layout (squeeze-excite's x * gate): the
 * operands have the output's channels, and each of their other dims is the output's or 1 (a gate [n, c,
 * 1, 1]). Both then have the output's channel block, and lowering reads them through blocked strides. */
static int tc__map_mul(const tc_graph *g, const tc_node *nd) {
  for (int k = 0; k < 2; k++) {
    const tc_tensor *t = &g->nodes[nd->inputs[k]].out;
    if (t->ndim != 4 || nd->out.ndim != 4 || t->shape[1] != nd->out.shape[1]) return 0;
    for (int d = 0; d < 4; d++)
      if (t->shape[d] != nd->out.shape[d] && t->shape[d] != 1) return 0;
  }
  return 1;
}

/* Whether node i is a CNN feature map (passes.h), given the flags of the nodes before it. */
static int tc__map_of(const tc_graph *g, const int *map, int i) {
  const tc_node *nd = &g->nodes[i];
  switch (nd->op) {
    case TC_OP_INPUT:
      if (nd->out.ndim != 4 || nd->out.dtype != TC_DTYPE_F32) return 0;
      for (int j = i + 1; j < g->nnodes; j++) {
        if (g->nodes[j].dead || !tc__is_cnn_op(g->nodes[j].op)) continue;
        for (int k = 0; k < g->nodes[j].ninputs; k++)
          if (g->nodes[j].inputs[k] == i) return 1;
      }
      return 0;
    case TC_OP_CONV2D:
    case TC_OP_BATCH_NORM:
    case TC_OP_MAX_POOL:
    case TC_OP_AVG_POOL:
    case TC_OP_GLOBAL_AVG_POOL:
    case TC_OP_ADAPTIVE_AVG_POOL:
    case TC_OP_LAYOUT: return 1;
    case TC_OP_RELU:
    case TC_OP_CLIP:
    case TC_OP_SIGMOID:
    case TC_OP_HARD_SIGMOID:
    case TC_OP_HARD_SWISH:
    case TC_OP_SILU:
    case TC_OP_DROPOUT: return map[nd->inputs[0]];
    case TC_OP_ADD:
      return map[nd->inputs[0]] && map[nd->inputs[1]] &&
             tc__same_shape(&g->nodes[nd->inputs[0]].out, &g->nodes[nd->inputs[1]].out);
    case TC_OP_MUL: return map[nd->inputs[0]] && map[nd->inputs[1]] && tc__map_mul(g, nd);
    case TC_OP_CONCAT:
      if (nd->axis != 1 || nd->out.ndim != 4) return 0;
      for (int k = 0; k < nd->ninputs; k++)
        if (!map[nd->inputs[k]]) return 0;
      return 1;
    default: return 0;
  }
}

/* The map flag of every node (0 for dead ones); malloc'd, NULL when out of memory. */
static int *tc__maps(const tc_graph *g) {
  int *map = calloc((size_t)g->nnodes + 1, sizeof *map);
  if (!map) return NULL;
  for (int i = 0; i < g->nnodes; i++)
    if (!g->nodes[i].dead) map[i] = tc__map_of(g, map, i);
  return map;
}

/* Whether a blocked map is in NCHW order as stored: 1x1, its block not padding the channels. */
static int tc__nchw_1x1(const tc_tensor *t) {
  return t->ndim == 4 && (int64_t)t->shape[2] * t->shape[3] == 1 &&
         tc_channels_stored((int)t->shape[1], t->cb) == t->shape[1];
}

/* Whether consumer j reads a blocked (NCHW[cb]c, cb > 1) map x as it is. */
static int tc__takes_blocked(const tc_graph *g, const int *map, int j, int x) {
  switch (g->nodes[j].op) {
    case TC_OP_CONV2D:
    case TC_OP_BATCH_NORM:
    case TC_OP_RELU:
    case TC_OP_CLIP:
    case TC_OP_SIGMOID: /* element-wise (UNARY): the layout does not matter */
    case TC_OP_HARD_SIGMOID:
    case TC_OP_HARD_SWISH:
    case TC_OP_SILU:
    case TC_OP_DROPOUT:
    case TC_OP_MAX_POOL:
    case TC_OP_AVG_POOL:
    case TC_OP_GLOBAL_AVG_POOL:
    case TC_OP_ADAPTIVE_AVG_POOL:
    case TC_OP_LAYOUT: return 1;
    case TC_OP_ADD:
    case TC_OP_MUL:
    case TC_OP_CONCAT: return map[j];
    /* a blocked 1x1 map is already in NCHW order, unless its block pads the channels */
    case TC_OP_FLATTEN: return tc__nchw_1x1(&g->nodes[x].out);
    default: return 0;
  }
}

static tc_node tc__layout_node(const tc_graph *g, int x, int cb) {
  tc_node n = tc__blank_node(TC_OP_LAYOUT);
  n.ninputs = 1;
  n.inputs[0] = x;
  n.out = g->nodes[x].out;
  n.out.cb = cb;
  n.out.offset = -1;
  return n;
}

/* tc__insert that keeps the map flags in step. */
static int tc__insert_mapped(tc_graph *g, int pos, const tc_node *proto, int **map) {
  int *m = realloc(*map, ((size_t)g->nnodes + 2) * sizeof *m);
  if (!m) return -1;
  *map = m;
  if (tc__insert(g, pos, proto) < 0) return -1;
  memmove(&m[pos + 1], &m[pos], (size_t)(g->nnodes - 1 - pos) * sizeof *m);
  m[pos] = 1; /* a layout node is a map */
  return pos;
}

/* Whether node nd maps each input channel to the same output channel (c == oc): a depthwise conv, a
 * batch norm, the pools. */
static int tc__same_channels(const tc_node *nd) {
  switch (nd->op) {
    case TC_OP_CONV2D: return nd->groups > 1 && nd->groups == nd->out.shape[1];
    case TC_OP_BATCH_NORM:
    case TC_OP_MAX_POOL:
    case TC_OP_AVG_POOL:
    case TC_OP_GLOBAL_AVG_POOL:
    case TC_OP_ADAPTIVE_AVG_POOL: return nd->ninputs >= 1;
    default: return 0;
  }
}

th_status tc_pass_layout(tc_graph *g, int simd_lanes) {
  int *map = tc__maps(g);
  if (!map) return tc__fail(g, TH_ERR_NOMEM, "out of memory");
  for (int i = 0; i < g->nnodes; i++) {
    tc_node *nd = &g->nodes[i];
    if (nd->dead || nd->op == TC_OP_LAYOUT) continue;
    nd->out.cb = map[i] ? tc_channel_block(nd->out.shape[1], simd_lanes) : 1;
  }
  th_status rc = TH_OK;
  for (int i = 0; rc == TH_OK && i < g->nnodes; i++) {
    if (g->nodes[i].dead) continue;
    if (g->nodes[i].op == TC_OP_INPUT && g->nodes[i].out.cb != 1) {
      /* the caller hands plain NCHW: reorder once, right after the input */
      int cb = g->nodes[i].out.cb;
      g->nodes[i].out.cb = 1;
      tc_node ln = tc__layout_node(g, i, cb);
      if (tc__insert_mapped(g, i + 1, &ln, &map) < 0) {
        rc = tc__fail(g, TH_ERR_NOMEM, "out of memory");
        break;
      }
      for (int j = i + 2; j < g->nnodes; j++)
        for (int k = 0; k < g->nodes[j].ninputs; k++)
          if (g->nodes[j].inputs[k] == i) g->nodes[j].inputs[k] = i + 1;
      for (int k = 0; k < g->noutputs; k++)
        if (g->outputs[k] == i) g->outputs[k] = i + 1;
      i++;
      continue;
    }
    if (tc__same_channels(&g->nodes[i]) && g->nodes[i].out.cb > 1 &&
        g->nodes[g->nodes[i].inputs[0]].out.cb != g->nodes[i].out.cb &&
        tc_channels_stored((int)g->nodes[i].out.shape[1], g->nodes[i].out.cb) != g->nodes[i].out.shape[1]) {
      /* a depthwise conv or pool computes its padding lanes from the input's: it reads its input in its
       * own padded block (here a plain map, after a tensor op: one reorder for this consumer) */
      tc_node ln = tc__layout_node(g, g->nodes[i].inputs[0], g->nodes[i].out.cb);
      if (tc__insert_mapped(g, i, &ln, &map) < 0) {
        rc = tc__fail(g, TH_ERR_NOMEM, "out of memory");
        break;
      }
      g->nodes[i + 1].inputs[0] = i;
      i++;
      continue;
    }
    for (int k = 0; k < g->nodes[i].ninputs; k++) {
      int x = g->nodes[i].inputs[k];
      if (g->nodes[x].out.cb == 1 || tc__takes_blocked(g, map, i, x)) continue;
      /* a tensor op reads the map in NCHW order: one reorder before its first such consumer */
      tc_node ln = tc__layout_node(g, x, 1);
      if (tc__insert_mapped(g, i, &ln, &map) < 0) {
        rc = tc__fail(g, TH_ERR_NOMEM, "out of memory");
        break;
      }
      for (int j = i + 1; j < g->nnodes; j++) {
        if (g->nodes[j].dead) continue;
        for (int q = 0; q < g->nodes[j].ninputs; q++)
          if (g->nodes[j].inputs[q] == x && !tc__takes_blocked(g, map, j, x))
            g->nodes[j].inputs[q] = i;
      }
      i++;
    }
  }
  for (int k = 0; rc == TH_OK && k < g->noutputs; k++) {
    int x = g->outputs[k];
    if (g->nodes[x].out.cb == 1) continue;
    tc_node ln = tc__layout_node(g, x, 1); /* outputs leave in NCHW */
    if (tc__insert_mapped(g, g->nnodes, &ln, &map) < 0) {
      rc = tc__fail(g, TH_ERR_NOMEM, "out of memory");
      break;
    }
    g->outputs[k] = g->nnodes - 1;
  }
  free(map);
  return rc;
}
/* ---- views ------------------------------------------------------------------------------------------- */

static int tc__is_view(tc_op op) {
  return op == TC_OP_RESHAPE || op == TC_OP_FLATTEN || op == TC_OP_DROPOUT ||
         op == TC_OP_TRANSPOSE || op == TC_OP_SLICE || op == TC_OP_EXPAND;
}

static int tc__is_reshape(tc_op op) {
  return op == TC_OP_RESHAPE || op == TC_OP_FLATTEN || op == TC_OP_DROPOUT;
}

/* A node's tensor as a strided view of a base node's storage. For a node with its own storage (computed,
 * an input, a CONST, a reshape the strides cannot express) base is the node itself, strides row-major.
 * Views compose through chains of views regardless of copies, so a copy of an intermediate view never
 * changes how a later view reads. */
typedef struct tc__view {
  int base;
  int64_t st[TC_MAX_DIMS]; /* element strides into base, per dim of the node's shape */
  int64_t off;             /* element offset into base */
  int contig;              /* row-major for the node's shape (size-1 dims ignored): an alias */
  int copy;                /* materialised by a COPY call into the node's own storage */
  int bad; /* reads a blocked map in another order (no layout pass reorder before it) */
} tc__view;

typedef struct tc__views {
  tc__view *v;
  int *map; /* CNN feature maps */
} tc__views;

static void tc__rowmajor(const tc_tensor *t, int64_t *st) {
  int64_t s = 1;
  for (int d = t->ndim - 1; d >= 0; d--) {
    st[d] = s;
    s *= t->shape[d];
  }
}

static int tc__is_contig(const tc_tensor *t, const int64_t *st) {
  int64_t s = 1;
  for (int d = t->ndim - 1; d >= 0; d--) {
    if (t->shape[d] != 1 && st[d] != s) return 0;
    s *= t->shape[d];
  }
  return 1;
}

/* Strides of `to` that read the same elements as `from` with strides fst, as numpy's no-copy reshape: each
 * group of dims with equal products must be contiguous among themselves in `from`. 0 when impossible. */
static int tc__reshape_strides(const tc_tensor *from, const int64_t *fst, const tc_tensor *to,
                               int64_t *tst) {
  int od[TC_MAX_DIMS], on = 0, nn = to->ndim;
  int64_t os[TC_MAX_DIMS];
  for (int d = 0; d < from->ndim; d++) {
    if (from->shape[d] == 1) continue;
    od[on] = from->shape[d];
    os[on++] = fst[d];
  }
  int oi = 0, ni = 0;
  while (ni < nn && oi < on) {
    int oj = oi + 1, nj = ni + 1;
    int64_t np = to->shape[ni], op = od[oi];
    while (np != op) {
      if (np < op) {
        if (nj >= nn) return 0;
        np *= to->shape[nj++];
      } else {
        if (oj >= on) return 0;
        op *= od[oj++];
      }
    }
    for (int k = oi; k < oj - 1; k++)
      if (os[k] != od[k + 1] * os[k + 1]) return 0;
    tst[nj - 1] = os[oj - 1];
    for (int k = nj - 1; k > ni; k--) tst[k - 1] = tst[k] * to->shape[k];
    ni = nj;
    oi = oj;
  }
  for (; ni < nn; ni++) tst[ni] = 1; /* trailing size-1 dims */
  return 1;
}

/* The strides of x's view (rank x->ndim) broadcast to `out` (numpy rules): 0 where x is missing or 1. */
static void tc__bcast_strides(const tc_tensor *x, const int64_t *xst, const tc_tensor *out,
                              int64_t *st) {
  for (int d = 0; d < out->ndim; d++) {
    int k = d - (out->ndim - x->ndim);
    st[d] = (k < 0 || (x->shape[k] == 1 && out->shape[d] != 1)) ? 0 : xst[k];
  }
}

static void tc__view_of(const tc_graph *g, tc__view *V, int i) {
  const tc_node *nd = &g->nodes[i];
  tc__view *v = &V[i];
  memset(v, 0, sizeof *v);
  v->base = i;
  tc__rowmajor(&nd->out, v->st);
  v->contig = 1;
  if (!tc__is_view(nd->op)) return;
  int x = nd->inputs[0];
  const tc__view *X = &V[x];
  const tc_tensor *tx = &g->nodes[x].out;
  if (tx->cb != 1) {
    /* a blocked map: only a reshape of a 1x1 map keeps the NCHW order */
    if (tc__is_reshape(nd->op) && tc__nchw_1x1(tx))
      v->base = x;
    else
      v->bad = 1;
    return;
  }
  int64_t st[TC_MAX_DIMS], off = X->off;
  switch (nd->op) {
    case TC_OP_TRANSPOSE:
      for (int d = 0; d < nd->out.ndim; d++) st[d] = X->st[nd->perm[d]];
      break;
    case TC_OP_SLICE:
      memcpy(st, X->st, sizeof st);
      off += (int64_t)nd->begin * X->st[nd->axis];
      st[nd->axis] *= nd->step;
      break;
    case TC_OP_EXPAND: tc__bcast_strides(tx, X->st, &nd->out, st); break;
    default:
      if (!tc__reshape_strides(tx, X->st, &nd->out, st)) {
        v->copy = 1; /* the strides cannot say it: the reshape is one COPY from x's view */
        v->bad = X->bad;
        return;
      }
      break;
  }
  v->base = X->base;
  v->off = off;
  v->bad = X->bad;
  memcpy(v->st, st, sizeof st);
  v->contig = tc__is_contig(&nd->out, st);
}

/* An add runs as ELTWISE (0) when both operands have the output's elements in its order and can be read
 * contiguously (maps always; an add carrying an activation copies strided operands), else as BINARY (1),
 * which reads broadcast and strided operands directly. */
static int tc__add_binary(const tc_graph *g, const tc__views *vs, int c) {
  const tc_node *nd = &g->nodes[c];
  if (!tc__same_numel_operands(g, nd)) return 1;
  if (vs->map[c] || nd->epilogue) return 0;
  return !(vs->v[nd->inputs[0]].contig && vs->v[nd->inputs[1]].contig);
}

/* Whether consumer c reads its input slot k through strides (else it needs a contiguous tensor). */
static int tc__reads_strided(const tc_graph *g, const tc__views *vs, int c, int k) {
  const tc_node *nd = &g->nodes[c];
  if (tc__is_view(nd->op)) return k == 0;
  switch (nd->op) {
    case TC_OP_CONCAT: return !vs->map[c];
    case TC_OP_MUL:
    case TC_OP_SUB:
    case TC_OP_DIV: return 1;
    case TC_OP_ADD: return tc__add_binary(g, vs, c);
    default: return 0;
  }
}

static int tc__is_output(const tc_graph *g, int x) {
  for (int k = 0; k < g->noutputs; k++)
    if (g->outputs[k] == x) return 1;
  return 0;
}

static void tc__views_free(tc__views *vs) {
  free(vs->v);
  free(vs->map);
}

/* Every node's view, and which views are copied: a non-contiguous view that a consumer needs contiguous
 * or that is a graph output, and a view of a CONST that is a graph output (outputs leave the workspace). */
static th_status tc__views_build(const tc_graph *g, tc__views *vs) {
  vs->v = calloc((size_t)g->nnodes + 1, sizeof *vs->v);
  vs->map = tc__maps(g);
  if (!vs->v || !vs->map) {
    tc__views_free(vs);
    return TH_ERR_NOMEM;
  }
  for (int i = 0; i < g->nnodes; i++)
    if (!g->nodes[i].dead) tc__view_of(g, vs->v, i);
  for (int i = 0; i < g->nnodes; i++) {
    tc__view *v = &vs->v[i];
    if (g->nodes[i].dead || !tc__is_view(g->nodes[i].op) || v->base == i) continue;
    int out = tc__is_output(g, i);
    int need = out && (!v->contig || g->nodes[v->base].op == TC_OP_CONST);
    for (int j = i + 1; !need && !v->contig && j < g->nnodes; j++) {
      if (g->nodes[j].dead) continue;
      for (int k = 0; k < g->nodes[j].ninputs; k++)
        if (g->nodes[j].inputs[k] == i && !tc__reads_strided(g, vs, j, k)) need = 1;
    }
    v->copy = need;
  }
  return TH_OK;
}

/* Nodes that own workspace storage: computed tensors, inputs and copied views. */
static int tc__planned(const tc_graph *g, const tc__views *vs, int i) {
  const tc_node *nd = &g->nodes[i];
  return !nd->dead && nd->op != TC_OP_CONST && (!tc__is_view(nd->op) || vs->v[i].copy);
}

/* The node whose storage consumer c reads through input slot k. */
static int tc__read_base(const tc_graph *g, const tc__views *vs, int c, int k) {
  int x = g->nodes[c].inputs[k];
  if (vs->v[x].copy && !tc__reads_strided(g, vs, c, k)) return x;
  return vs->v[x].base;
}

/* The view a COPY of node i reads (a copied view's own, or a reshape copy's input's) and its shape. */
static const tc__view *tc__copy_src(const tc_graph *g, const tc__views *vs, int i,
                                    const tc_tensor **shape) {
  const tc__view *v = &vs->v[i];
  if (v->base == i) {
    int x = g->nodes[i].inputs[0];
    *shape = &g->nodes[x].out;
    return &vs->v[x];
  }
  *shape = &g->nodes[i].out;
  return v;
}

int tc_graph_storage(const tc_graph *g, int id) {
  if (!g || id < 0 || id >= g->nnodes) return -1;
  tc__views vs;
  if (tc__views_build(g, &vs) != TH_OK) return -1;
  int s = (tc__planned(g, &vs, id) || g->nodes[id].op == TC_OP_CONST || g->nodes[id].dead)
              ? id
              : vs.v[id].base;
  tc__views_free(&vs);
  return s;
}

/* ---- q/k/v: dense layers that share an input ------------------------------------------------ */

/* Dense node i could share its input's pass with others: no activation, residual or batch norm, and
 * plain (not composite) parameters that are its own shape. */
static int tc__qkv_candidate(const tc_graph *g, int i) {
  const tc_node *nd = &g->nodes[i];
  if (nd->dead || nd->op != TC_OP_DENSE || nd->ninputs != 1 || (nd->epilogue & ~TC_EPI_BIAS) ||
      nd->gamma >= 0 || nd->weight < 0)
    return 0;
  const tc_param *w = &g->params[nd->weight];
  if (w->nparts || w->ndim != 2 || w->shape[0] != nd->oc) return 0;
  return nd->bias < 0 || (!g->params[nd->bias].nparts && g->params[nd->bias].numel == nd->oc);
}

/* Candidates a and b read one tensor with weights of one shape, both with a bias or neither. */
static int tc__qkv_match(const tc_graph *g, int a, int b) {
  const tc_node *x = &g->nodes[a], *y = &g->nodes[b];
  const tc_param *wx = &g->params[x->weight], *wy = &g->params[y->weight];
  return x->inputs[0] == y->inputs[0] && wx->shape[0] == wy->shape[0] &&
         wx->shape[1] == wy->shape[1] && (x->bias >= 0) == (y->bias >= 0) &&
         x->epilogue == y->epilogue;
}

/* Whether dense node p's output, were it a slice of a wider one (a view that is not contiguous),
 * would cost no copy that it does not cost now: every reader reaches it through views only up to a
 * consumer that reads through strides anyway, or up to a view that is copied already (bert's
 * heads: reshape, transpose, one COPY in both graphs); and neither it nor a contiguous view of it
 * is a graph output. in: scratch of g->nnodes ints. */
static int tc__qkv_slice_free(const tc_graph *g, const tc__views *vs, int p, int *in) {
  memset(in, 0, (size_t)g->nnodes * sizeof *in);
  in[p] = 1; /* p and the views of it */
  for (int j = p + 1; j < g->nnodes; j++) {
    const tc_node *nd = &g->nodes[j];
    if (nd->dead) continue;
    for (int k = 0; k < nd->ninputs; k++) {
      int y = nd->inputs[k];
      if (!in[y]) continue;
      if (tc__is_view(nd->op) && k == 0)
        in[j] = 1;
      else if (!tc__reads_strided(g, vs, j, k) && (y == p || !vs->v[y].copy))
        return 0;
    }
  }
  for (int k = 0; k < g->noutputs; k++) {
    int y = g->outputs[k];
    if (in[y] && (y == p || !vs->v[y].copy)) return 0;
  }
  return 1;
}

/* "a.b.query+key+value.weight" for names a.b.query.weight, a.b.key.weight, a.b.value.weight: the
 * common prefix and suffix (cut at dots) once, the parts between joined by '+' (arena string; NULL
 * when a name is NULL or out of memory). */
static const char *tc__joined_name(tc_graph *g, const char *const *names, int n) {
  for (int k = 0; k < n; k++)
    if (!names[k]) return NULL;
  size_t pre = 0, suf = 0, l0 = strlen(names[0]);
  for (size_t q = 0; q < l0; q++) { /* the longest common prefix ending in a dot */
    int same = 1;
    for (int k = 1; k < n && same; k++) same = names[k][q] == names[0][q];
    if (!same) break;
    if (names[0][q] == '.') pre = q + 1;
  }
  for (size_t q = 1; q <= l0 - pre; q++) { /* the longest common suffix starting at a dot */
    int same = 1;
    for (int k = 1; k < n && same; k++) {
      size_t lk = strlen(names[k]);
      same = lk >= pre + q && names[k][lk - q] == names[0][l0 - q];
    }
    if (!same) break;
    if (names[0][l0 - q] == '.') suf = q;
  }
  th_buf b;
  th_buf_init(&b, 4096);
  th_status rc = th_buf_appendf(&b, "%.*s", (int)pre, names[0]);
  for (int k = 0; rc == TH_OK && k < n; k++)
    rc = th_buf_appendf(&b, "%s%.*s", k ? "+" : "", (int)(strlen(names[k]) - pre - suf),
                        names[k] + pre);
  if (rc == TH_OK) rc = th_buf_appendf(&b, "%s", names[0] + l0 - suf);
  const char *out = rc == TH_OK ? th_arena_strdup(g->arena, b.data) : NULL;
  th_buf_free(&b);
  return out;
}

/* Joins dense nodes parts[0 .. n) (candidates that match, in node order) into one at parts[0]
 * whose weight and bias are composites of theirs; a SLICE after it gives parts[0]'s readers their
 * columns, and the other nodes become SLICEs of it. */
static th_status tc__qkv_join(tc_graph *g, const int *parts, int n) {
  int p0 = parts[0], oc = g->nodes[p0].oc, has_bias = g->nodes[p0].bias >= 0;
  int ws[TC_MAX_PARTS], bs[TC_MAX_PARTS];
  const char *wn[TC_MAX_PARTS], *bn[TC_MAX_PARTS], *nn[TC_MAX_PARTS];
  for (int k = 0; k < n; k++) {
    const tc_node *nd = &g->nodes[parts[k]];
    ws[k] = nd->weight;
    bs[k] = nd->bias;
    wn[k] = g->params[nd->weight].name;
    bn[k] = has_bias ? g->params[nd->bias].name : NULL;
    nn[k] = nd->name;
  }
  const char *wname = tc__joined_name(g, wn, n), *bname = has_bias ? tc__joined_name(g, bn, n) : "";
  if (!wname || !bname) return tc__fail(g, TH_ERR_NOMEM, "out of memory");
  int w = tc_graph_param_concat(g, wname, n, ws);
  int b = has_bias && w >= 0 ? tc_graph_param_concat(g, bname, n, bs) : -1;
  if (w < 0 || (has_bias && b < 0))
    return strstr(g->err, "out of memory") ? TH_ERR_NOMEM : TH_ERR_INTERNAL;
  tc_node *a = &g->nodes[p0];
  int last = a->out.ndim - 1;
  tc_node s = tc__blank_node(TC_OP_SLICE);
  s.name = a->name;
  s.ninputs = 1;
  s.inputs[0] = p0;
  s.out = a->out;
  s.out.offset = -1;
  s.axis = last;
  s.end = oc;
  a->name = tc__joined_name(g, nn, n);
  a->weight = w;
  a->bias = b;
  a->oc = n * oc;
  a->out.shape[last] = n * oc;
  if (tc__insert(g, p0 + 1, &s) < 0) return tc__fail(g, TH_ERR_NOMEM, "out of memory");
  for (int j = p0 + 2; j < g->nnodes; j++) /* parts[0]'s readers read its slice */
    for (int k = 0; k < g->nodes[j].ninputs; k++)
      if (g->nodes[j].inputs[k] == p0) g->nodes[j].inputs[k] = p0 + 1;
  for (int k = 0; k < g->noutputs; k++)
    if (g->outputs[k] == p0) g->outputs[k] = p0 + 1;
  for (int k = 1; k < n; k++) { /* moved one on by the insert */
    tc_node *nd = &g->nodes[parts[k] + 1];
    nd->op = TC_OP_SLICE;
    nd->inputs[0] = p0;
    nd->weight = nd->bias = -1;
    nd->epilogue = 0;
    nd->axis = last;
    nd->begin = k * oc;
    nd->end = (k + 1) * oc;
    nd->step = 1;
  }
  return TH_OK;
}

/* TC_FUSE_QKV (passes.h). */
static th_status tc__fuse_qkv(tc_graph *g) {
  th_status rc = TH_OK;
  for (int i = 0; rc == TH_OK && i < g->nnodes; i++) {
    if (!tc__qkv_candidate(g, i)) continue;
    int parts[TC_MAX_PARTS] = {i}, n = 1;
    for (int j = i + 1; j < g->nnodes && n < TC_MAX_PARTS; j++)
      if (tc__qkv_candidate(g, j) && tc__qkv_match(g, i, j)) parts[n++] = j;
    if (n < 2) continue;
    tc__views vs;
    int *scratch = malloc((size_t)g->nnodes * sizeof *scratch);
    if (!scratch || tc__views_build(g, &vs) != TH_OK) {
      free(scratch);
      return tc__fail(g, TH_ERR_NOMEM, "out of memory");
    }
    int free_slices = 1;
    for (int k = 0; k < n && free_slices; k++)
      free_slices = tc__qkv_slice_free(g, &vs, parts[k], scratch);
    tc__views_free(&vs);
    free(scratch);
    if (free_slices) rc = tc__qkv_join(g, parts, n);
  }
  return rc;
}

/* ---- memory planning --------------------------------------------------------------------------------- */

typedef struct tc__block {
  int64_t off, size;
} tc__block;

/* Elements as stored: a channel-blocked map stores its channels rounded up to the block. */
static int64_t tc__stored_numel(const tc_tensor *t) {
  int64_t n = tc_tensor_numel(t);
  if (t->cb > 1 && t->ndim == 4 && t->shape[1] > 0)
    n = n / t->shape[1] * tc_channels_stored((int)t->shape[1], t->cb);
  return n;
}

/* 4-byte units, rounded up to 64 bytes. */
static int64_t tc__units(const tc_tensor *t) {
  return (tc__stored_numel(t) * tc_dtype_size(t->dtype) / 4 + 15) / 16 * 16;
}

static void tc__release(tc__block *fl, int *nfree, tc__block b) {
  int pos = 0, n = *nfree;
  while (pos < n && fl[pos].off < b.off) pos++;
  memmove(&fl[pos + 1], &fl[pos], (size_t)(n - pos) * sizeof *fl);
  fl[pos] = b;
  n++;
  /* merge with neighbours */
  if (pos + 1 < n && fl[pos].off + fl[pos].size == fl[pos + 1].off) {
    fl[pos].size += fl[pos + 1].size;
    memmove(&fl[pos + 1], &fl[pos + 2], (size_t)(n - pos - 2) * sizeof *fl);
    n--;
  }
  if (pos > 0 && fl[pos - 1].off + fl[pos - 1].size == fl[pos].off) {
    fl[pos - 1].size += fl[pos].size;
    memmove(&fl[pos], &fl[pos + 1], (size_t)(n - pos - 1) * sizeof *fl);
    n--;
  }
  *nfree = n;
}

/* Best fit in the free list, else the top (growing a free block that ends there). */
static int64_t tc__alloc(tc__block *fl, int *nfree, int64_t *top, int64_t need) {
  int best = -1, n = *nfree;
  int64_t off;
  for (int k = 0; k < n; k++)
    if (fl[k].size >= need && (best < 0 || fl[k].size < fl[best].size)) best = k;
  if (best >= 0) {
    off = fl[best].off;
    fl[best].off += need;
    fl[best].size -= need;
    if (fl[best].size == 0) {
      memmove(&fl[best], &fl[best + 1], (size_t)(n - best - 1) * sizeof *fl);
      n--;
    }
  } else if (n > 0 && fl[n - 1].off + fl[n - 1].size == *top) {
    off = fl[n - 1].off;
    *top = off + need;
    n--;
  } else {
    off = *top;
    *top += need;
  }
  *nfree = n;
  return off;
}

static void tc__last_use(const tc_graph *g, int *last, int s, int t) {
  if (s >= 0 && g->nodes[s].op != TC_OP_CONST && last[s] < t) last[s] = t;
}

th_status tc_pass_plan_memory(tc_graph *g, int64_t *workspace) {
  int n = g->nnodes;
  tc__views vs;
  if (tc__views_build(g, &vs) != TH_OK) return tc__fail(g, TH_ERR_NOMEM, "out of memory");
  int *last = malloc((size_t)(n ? n : 1) * sizeof *last);
  tc__block *fl = malloc((size_t)(n + 1) * sizeof *fl); /* free list, sorted by offset */
  int *live = malloc((size_t)(n ? n : 1) * sizeof *live);
  if (!last || !fl || !live) {
    free(last);
    free(fl);
    free(live);
    tc__views_free(&vs);
    return tc__fail(g, TH_ERR_NOMEM, "out of memory");
  }
  for (int i = 0; i < n; i++) last[i] = i;
  for (int i = 0; i < n; i++) {
    if (!tc__planned(g, &vs, i) || g->nodes[i].op == TC_OP_INPUT) continue;
    if (tc__is_view(g->nodes[i].op)) { /* a copy reads its source view's base */
      const tc_tensor *sh;
      tc__last_use(g, last, tc__copy_src(g, &vs, i, &sh)->base, i);
      continue;
    }
    for (int k = 0; k < g->nodes[i].ninputs; k++)
      tc__last_use(g, last, tc__read_base(g, &vs, i, k), i);
  }
  for (int k = 0; k < g->noutputs; k++) {
    int o = g->outputs[k];
    tc__last_use(g, last, tc__planned(g, &vs, o) ? o : vs.v[o].base,
                 n); /* copied out after the last kernel */
  }
  int nfree = 0, nlive = 0;
  int64_t top = 0;
  /* the runtime copies every input in before the first kernel: each has its own slot from the start */
  for (int k = 0; k < g->ninputs; k++) {
    tc_node *nd = &g->nodes[g->inputs[k]];
    nd->out.offset = tc__alloc(fl, &nfree, &top, tc__units(&nd->out));
    live[nlive++] = g->inputs[k];
  }
  for (int i = 0; i < n; i++) {
    tc_node *nd = &g->nodes[i];
    if (!tc__planned(g, &vs, i) || nd->op == TC_OP_INPUT) continue;
    /* release buffers whose last reader ran before this node; a node never overwrites its inputs */
    for (int k = 0; k < nlive;) {
      int j = live[k];
      if (last[j] < i) {
        tc__release(fl, &nfree, (tc__block){g->nodes[j].out.offset, tc__units(&g->nodes[j].out)});
        live[k] = live[--nlive];
      } else {
        k++;
      }
    }
    nd->out.offset = tc__alloc(fl, &nfree, &top, tc__units(&nd->out));
    live[nlive++] = i;
  }
  for (int i = 0; i < n; i++) {
    tc_node *nd = &g->nodes[i];
    if (nd->dead || tc__planned(g, &vs, i)) continue;
    const tc__view *v = &vs.v[i];
    /* aliases: the base's storage at the view's offset; strided views and constants: none */
    int alias = tc__is_view(nd->op) && v->contig && !v->bad && g->nodes[v->base].op != TC_OP_CONST;
    nd->out.offset =
        alias ? g->nodes[v->base].out.offset + v->off * (int64_t)(tc_dtype_size(nd->out.dtype) / 4)
              : -1;
  }
  free(last);
  free(fl);
  free(live);
  tc__views_free(&vs);
  *workspace = top;
  return TH_OK;
}

th_status tc_passes_run(tc_graph *g, int simd_lanes, int64_t *workspace) {
  th_status rc = tc_pass_fold_bn(g);
  if (rc == TH_OK) rc = tc_pass_fuse(g);
  if (rc == TH_OK) rc = tc_pass_layout(g, simd_lanes);
  if (rc == TH_OK) rc = tc_pass_plan_memory(g, workspace);
  return rc;
}

th_status tc_node_effective_params(const tc_graph *g, const tc_node *nd, float *w_out,
                                   float *b_out) {
  if (nd->weight < 0 || !g->params[nd->weight].data) return TH_ERR_INVALID;
  const tc_param *w = &g->params[nd->weight];
  int oc = nd->op == TC_OP_DENSE ? nd->oc : nd->out.shape[1];
  int64_t per = w->numel / oc;
  const float *b = nd->bias >= 0 ? g->params[nd->bias].data : NULL;
  for (int o = 0; o < oc; o++) {
    float s = 1.0f, sh = 0.0f;
    if (nd->gamma >= 0) {
      s = g->params[nd->gamma].data[o] / sqrtf(g->params[nd->var].data[o] + nd->eps);
      sh = g->params[nd->beta].data[o] - g->params[nd->mean].data[o] * s;
    }
    for (int64_t k = 0; k < per; k++) w_out[o * per + k] = w->data[o * per + k] * s;
    if (b_out) b_out[o] = (b ? b[o] : 0.0f) * s + sh;
  }
  return TH_OK;
}

/* ---- lowering ---------------------------------------------------------------------------------------- */

static void tc__wl_epilogue(tc_workload *wl, const tc_node *nd) {
  wl->epilogue = nd->epilogue;
  wl->clip_min = nd->clip_min;
  wl->clip_max = nd->clip_max;
  if (nd->epilogue & TC_EPI_HARD_SIGMOID) {
    wl->alpha = nd->alpha;
    wl->beta = nd->shift;
  }
}

/* The conv or pooling window: kernel, strides, padding. */
static void tc__wl_window(tc_workload *wl, const tc_node *nd) {
  wl->kh = nd->kh;
  wl->kw = nd->kw;
  wl->sh = nd->sh;
  wl->sw = nd->sw;
  wl->pt = nd->pt;
  wl->pl = nd->pl;
  wl->pb = nd->pb;
  wl->pr = nd->pr;
}

static void tc__wl_from(const tc_graph *g, const tc_node *nd, tc_workload *wl) {
  const tc_tensor *in = &g->nodes[nd->inputs[0]].out;
  memset(wl, 0, sizeof *wl);
  wl->n = in->shape[0];
  wl->c = in->shape[1];
  wl->h = in->ndim == 4 ? in->shape[2] : 1;
  wl->w = in->ndim == 4 ? in->shape[3] : 1;
  wl->oc = nd->out.shape[1];
  wl->oh = nd->out.ndim == 4 ? nd->out.shape[2] : 1;
  wl->ow = nd->out.ndim == 4 ? nd->out.shape[3] : 1;
  wl->kh = wl->kw = wl->sh = wl->sw = 1;
  wl->in_cb = in->cb;
  wl->out_cb = nd->out.cb;
  tc__wl_epilogue(wl, nd);
}

/* A tensor family's workload: plain layouts, unused sizes 1. */
static void tc__wl_tensor(tc_workload *wl, tc_kernel k, int n, int c, int h, int w, int oc, int oh,
                          int ow) {
  memset(wl, 0, sizeof *wl);
  wl->kernel = k;
  wl->n = n;
  wl->c = c;
  wl->h = h;
  wl->w = w;
  wl->oc = oc;
  wl->oh = oh;
  wl->ow = ow;
  wl->kh = wl->kw = wl->sh = wl->sw = 1;
  wl->in_cb = wl->out_cb = 1;
}

static int64_t tc__rows(const tc_tensor *t) {
  return tc_tensor_numel(t) / t->shape[t->ndim - 1];
}

static void tc__arg_work(tc_call *c, int a, int64_t off) {
  c->arg_space[a] = TC_SPACE_WORK;
  c->arg_off[a] = off;
}

/* Argument a points at element `off` of base node b (a CONST is read from its parameter). */
static void tc__arg_at(const tc_graph *g, tc_call *c, int a, int b, int64_t off, int dtype) {
  const tc_node *nb = &g->nodes[b];
  if (nb->op == TC_OP_CONST) {
    c->arg_space[a] = TC_SPACE_CONST;
    c->arg_param[a] = nb->weight;
    c->arg_off[a] = off;
  } else {
    tc__arg_work(c, a, nb->out.offset + off * (int64_t)(tc_dtype_size(dtype) / 4));
  }
}

static void tc__arg_param(tc_call *c, int a, int param) {
  c->arg_space[a] = TC_SPACE_CONST;
  c->arg_param[a] = param;
  c->arg_off[a] = 0;
}

/* Argument a reads node x as a contiguous tensor. */
static th_status tc__arg_in(tc_graph *g, const tc__views *vs, tc_call *c, int a, int x) {
  const tc__view *v = &vs->v[x];
  if (v->bad)
    return tc__fail(g, TH_ERR_INVALID, "node %d (%s) reads a channel-blocked map without a reorder",
                    x, tc_op_name(g->nodes[x].op));
  if (v->copy || !tc__is_view(g->nodes[x].op)) {
    tc__arg_at(g, c, a, x, 0, g->nodes[x].out.dtype);
  } else if (!v->contig) {
    return tc__fail(g, TH_ERR_INVALID,
                    "node %d (%s) is a strided view where a contiguous tensor is needed", x,
                    tc_op_name(g->nodes[x].op));
  } else {
    tc__arg_at(g, c, a, v->base, v->off, g->nodes[x].out.dtype);
  }
  return TH_OK;
}

/* Drops size-1 dims and merges neighbours that are contiguous in every one of the nst stride lists. */
static int tc__merge_dims(int n, int *sh, int64_t **st, int nst) {
  int m = 0;
  for (int d = 0; d < n; d++) {
    if (sh[d] == 1) continue;
    int ok = m > 0;
    for (int q = 0; ok && q < nst; q++) ok = st[q][m - 1] == (int64_t)sh[d] * st[q][d];
    if (ok) {
      sh[m - 1] *= sh[d];
      for (int q = 0; q < nst; q++) st[q][m - 1] = st[q][d];
      continue;
    }
    sh[m] = sh[d];
    for (int q = 0; q < nst; q++) st[q][m] = st[q][d];
    m++;
  }
  if (m == 0) {
    sh[0] = 1;
    for (int q = 0; q < nst; q++) st[q][0] = 0;
    m = 1;
  }
  return m;
}

/* Copies the iteration space shape (rank nd) of a view of src_base (strides ast, offset aoff) to node dst
 * at strides bst, offset boff; elements of `dtype` (int64 moves as two 4-byte halves). */
static th_status tc__copy_call(tc_graph *g, tc_call *c, int node, int src_base, int nd,
                               const int *shape, const int64_t *ast, int64_t aoff,
                               const int64_t *bst, int64_t boff, int dst, int dtype) {
  int sh[TC_MAX_DIMS + 1], k = (int)(tc_dtype_size(dtype) / 4), n = 0;
  int64_t sa[TC_MAX_DIMS + 1], sb[TC_MAX_DIMS + 1], *st[2] = {sa, sb};
  for (int d = 0; d < nd; d++) {
    sh[n] = shape[d];
    sa[n] = ast[d] * k;
    sb[n++] = bst[d] * k;
  }
  if (k == 2) {
    sh[n] = 2;
    sa[n] = sb[n] = 1;
    n++;
  }
  n = tc__merge_dims(n, sh, st, 2);
  if (n > TC_WL_DIMS)
    return tc__fail(g, TH_ERR_UNSUPPORTED, "node %d (%s): a copy over %d dimensions (at most %d)",
                    node, tc_op_name(g->nodes[node].op), n, TC_WL_DIMS);
  tc__wl_tensor(&c->wl, TC_KERNEL_COPY, 1, 1, 1, 1, 1, 1, 1);
  c->wl.ndim = n;
  int64_t lim = (int64_t)1 << 31;
  if (aoff * k >= lim || boff * k >= lim)
    return tc__fail(g, TH_ERR_TOO_LARGE, "node %d: copy offsets beyond 2^31", node);
  c->wl.aoff = (int)(aoff * k);
  c->wl.boff = (int)(boff * k);
  for (int d = 0; d < n; d++) {
    if (sa[d] >= lim || sb[d] >= lim)
      return tc__fail(g, TH_ERR_TOO_LARGE, "node %d: copy strides beyond 2^31", node);
    c->wl.shape[d] = sh[d];
    c->wl.astride[d] = (int)sa[d];
    c->wl.bstride[d] = (int)sb[d];
  }
  c->nargs = 2;
  tc__arg_at(g, c, 0, src_base, 0, TC_DTYPE_F32);
  tc__arg_work(c, 1, g->nodes[dst].out.offset);
  return TH_OK;
}

/* The 5-D space [n, c / cb, h, w, cb] of a product of blocked maps (tc__map_mul; the operands have the
 * output's c and block cb): its shape, and the element strides of operand t, 0 where it broadcasts. */
static void tc__blocked_strides(const tc_tensor *t, const tc_tensor *out, int *sh, int64_t *st) {
  const int *o = out->shape, *s = t->shape;
  int cb = out->cb;
  int64_t dims[5] = {s[0], tc_channels_stored((int)s[1], cb) / cb, s[2], s[3], cb},
          full[5] = {o[0], tc_channels_stored((int)o[1], cb) / cb, o[2], o[3], cb};
  int64_t stride = 1;
  for (int d = 4; d >= 0; d--) {
    sh[d] = (int)full[d];
    st[d] = dims[d] == 1 && full[d] != 1 ? 0 : stride;
    stride *= dims[d];
  }
}

/* TC_KERNEL_BINARY over the output's shape; operands are read through their (broadcast) views, or, for a
 * product of channel-blocked maps, through their blocked layouts (the output's too). */
static th_status tc__binary_call(tc_graph *g, const tc__views *vs, tc_call *c, int i, int op) {
  const tc_node *nd = &g->nodes[i];
  int r = nd->out.ndim, sh[TC_MAX_DIMS];
  int64_t sa[TC_MAX_DIMS], sb[TC_MAX_DIMS], so[TC_MAX_DIMS], *st[3] = {sa, sb, so};
  const tc__view *va = &vs->v[nd->inputs[0]], *vb = &vs->v[nd->inputs[1]];
  if (va->bad || vb->bad)
    return tc__fail(g, TH_ERR_INVALID, "node %d (%s) reads a channel-blocked map without a reorder",
                    i, tc_op_name(nd->op));
  if (nd->out.cb > 1) { /* maps (never views), all three in one channel block */
    const tc_tensor *ta = &g->nodes[nd->inputs[0]].out, *tb = &g->nodes[nd->inputs[1]].out;
    if (!vs->map[i] || ta->cb != nd->out.cb || tb->cb != nd->out.cb)
      return tc__fail(g, TH_ERR_INVALID, "node %d (%s): operands in another channel block", i,
                      tc_op_name(nd->op));
    r = 5;
    tc__blocked_strides(ta, &nd->out, sh, sa);
    tc__blocked_strides(tb, &nd->out, sh, sb);
    tc__blocked_strides(&nd->out, &nd->out, sh, so);
  } else {
    tc__bcast_strides(&g->nodes[nd->inputs[0]].out, va->st, &nd->out, sa);
    tc__bcast_strides(&g->nodes[nd->inputs[1]].out, vb->st, &nd->out, sb);
    tc__rowmajor(&nd->out, so);
    memcpy(sh, nd->out.shape, sizeof sh);
  }
  int n = tc__merge_dims(r, sh, st, 3);
  if (n > TC_WL_DIMS)
    return tc__fail(g, TH_ERR_UNSUPPORTED, "node %d: binary over %d dimensions", i, n);
  tc__wl_tensor(&c->wl, TC_KERNEL_BINARY, 1, 1, 1, 1, 1, 1, 1);
  c->wl.op = op;
  c->wl.ndim = n;
  for (int d = 0; d < n; d++) {
    if (sa[d] >= (int64_t)1 << 31 || sb[d] >= (int64_t)1 << 31)
      return tc__fail(g, TH_ERR_TOO_LARGE, "node %d: binary strides beyond 2^31", i);
    c->wl.shape[d] = sh[d];
    c->wl.astride[d] = (int)sa[d];
    c->wl.bstride[d] = (int)sb[d];
  }
  c->nargs = 3;
  tc__arg_at(g, c, 0, va->base, va->off, TC_DTYPE_F32);
  tc__arg_at(g, c, 1, vb->base, vb->off, TC_DTYPE_F32);
  tc__arg_work(c, 2, nd->out.offset);
  return TH_OK;
}

/* softmax(alpha * x + mask) over the last dim: the CNN family for a plain softmax of rank 2 or of a
 * rank-4 CNN map, else SOFTMAX_ROWS with rows [n, c, h]: n spans the dims the mask varies along
 * (tc__mask_split). So attention scores take SOFTMAX_ROWS with or without a scale and a mask
 * (TC_FUSE_SOFTMAX off). */
static th_status tc__softmax_call(tc_graph *g, const tc__views *vs, tc_call *c, int i) {
  const tc_node *nd = &g->nodes[i];
  const tc_tensor *t = &nd->out;
  int r = t->ndim, w = t->shape[r - 1], mask = nd->ninputs > 1;
  th_status rc = TH_OK;
  if (!mask && nd->alpha == 1.0f && (r == 2 || (r == 4 && vs->map[nd->inputs[0]])) && w > 1) {
    tc__wl_from(g, nd, &c->wl);
    c->wl.kernel = TC_KERNEL_SOFTMAX;
    c->wl.in_cb = c->wl.out_cb = 1;
    c->nargs = 2;
    rc = tc__arg_in(g, vs, c, 0, nd->inputs[0]);
    tc__arg_work(c, 1, nd->out.offset);
    return rc;
  }
  int p = mask ? tc__mask_split(t, &g->nodes[nd->inputs[1]].out) : (r >= 2 ? 1 : 0);
  if (p < 0)
    return tc__fail(g, TH_ERR_INVALID,
                    "node %d: softmax mask does not broadcast as rows (run tc_pass_fuse)", i);
  int64_t n = 1, ch = 1;
  for (int d = 0; d < p; d++) n *= t->shape[d];
  for (int d = p; d < r - 2; d++) ch *= t->shape[d];
  int h = p <= r - 2 ? t->shape[r - 2] : 1;
  tc__wl_tensor(&c->wl, TC_KERNEL_SOFTMAX_ROWS, (int)n, (int)ch, h, w, (int)ch, h, w);
  c->wl.alpha = nd->alpha;
  c->nargs = 3;
  rc = tc__arg_in(g, vs, c, 0, nd->inputs[0]);
  if (mask) {
    c->wl.epilogue = TC_EPI_MASK;
    if (rc == TH_OK) rc = tc__arg_in(g, vs, c, 1, nd->inputs[1]);
  }
  tc__arg_work(c, 2, nd->out.offset);
  return rc;
}

/* TC_KERNEL_UNARY's operation for a unary graph op. */
static int tc__unary_op(tc_op op) {
  switch (op) {
    case TC_OP_GELU: return TC_UNARY_GELU;
    case TC_OP_TANH: return TC_UNARY_TANH;
    case TC_OP_CAST: return TC_UNARY_CAST_I64;
    case TC_OP_SIGMOID: return TC_UNARY_SIGMOID;
    case TC_OP_HARD_SIGMOID: return TC_UNARY_HARD_SIGMOID;
    case TC_OP_HARD_SWISH: return TC_UNARY_HARD_SWISH;
    case TC_OP_SILU: return TC_UNARY_SILU;
    case TC_OP_RELU:
    case TC_OP_CLIP: return TC_UNARY_CLIP;
    default: return TC_UNARY_AFFINE;
  }
}

/* One node's calls (a channel concat of maps and a tensor concat make one per input); *n advances. */
static th_status tc__lower_node(tc_graph *g, const tc__views *vs, tc_call *cs, int *n, int i) {
  tc_node *nd = &g->nodes[i];
  tc_call *c = &cs[*n];
  memset(c, 0, sizeof *c);
  for (int a = 0; a < 5; a++) c->arg_param[a] = -1;
  c->node = i;
  th_status rc = TH_OK;
  int64_t out = nd->out.offset;
  if (tc__is_view(nd->op)) { /* a copied view */
    const tc_tensor *sh;
    const tc__view *src = tc__copy_src(g, vs, i, &sh);
    if (src->bad)
      return tc__fail(g, TH_ERR_INVALID,
                      "node %d (%s) reads a channel-blocked map without a reorder", i,
                      tc_op_name(nd->op));
    int64_t bst[TC_MAX_DIMS];
    tc__rowmajor(sh, bst);
    rc = tc__copy_call(g, c, i, src->base, sh->ndim, sh->shape, src->st, src->off, bst, 0, i,
                       nd->out.dtype);
    if (rc == TH_OK) (*n)++;
    return rc;
  }
  switch (nd->op) {
    case TC_OP_CONV2D:
    case TC_OP_DENSE:
      tc__wl_from(g, nd, &c->wl);
      if (nd->op == TC_OP_DENSE) {
        const tc_tensor *in = &g->nodes[nd->inputs[0]].out;
        tc__wl_tensor(&c->wl, TC_KERNEL_DENSE, (int)tc__rows(in), in->shape[in->ndim - 1], 1, 1,
                      nd->oc, 1, 1);
        tc__wl_epilogue(&c->wl, nd);
      } else if (nd->groups == 1) {
        c->wl.kernel = TC_KERNEL_CONV2D;
      } else if (nd->groups == c->wl.c && nd->groups == c->wl.oc) {
        c->wl.kernel = TC_KERNEL_DEPTHWISE;
      } else {
        return tc__fail(g, TH_ERR_UNSUPPORTED, "%s: grouped conv (groups %d) has no kernel",
                        nd->name, nd->groups);
      }
      if (nd->op == TC_OP_CONV2D) tc__wl_window(&c->wl, nd);
      c->nargs = 5;
      rc = tc__arg_in(g, vs, c, TC_ARG_IN, nd->inputs[0]);
      c->arg_space[TC_ARG_WEIGHTS] = TC_SPACE_WEIGHTS; /* offset set by the build */
      c->arg_space[TC_ARG_BIAS] = (nd->epilogue & TC_EPI_BIAS) ? TC_SPACE_BIAS : TC_SPACE_NULL;
      if ((nd->epilogue & TC_EPI_RESIDUAL) && rc == TH_OK)
        rc = tc__arg_in(g, vs, c, TC_ARG_RESIDUAL, nd->inputs[1]);
      tc__arg_work(c, TC_ARG_OUT, out);
      break;
    case TC_OP_MAX_POOL:
    case TC_OP_AVG_POOL:
    case TC_OP_GLOBAL_AVG_POOL:
    case TC_OP_LAYOUT:
      tc__wl_from(g, nd, &c->wl);
      if (nd->op == TC_OP_MAX_POOL || nd->op == TC_OP_AVG_POOL) {
        c->wl.kernel = nd->op == TC_OP_MAX_POOL ? TC_KERNEL_MAXPOOL : TC_KERNEL_AVGPOOL;
        tc__wl_window(&c->wl, nd);
        c->wl.count_include_pad = nd->count_include_pad;
      } else if (nd->op == TC_OP_GLOBAL_AVG_POOL) {
        c->wl.kernel = TC_KERNEL_GLOBAL_AVGPOOL;
        c->wl.kh = c->wl.h;
        c->wl.kw = c->wl.w;
      } else {
        c->wl.kernel = TC_KERNEL_LAYOUT;
      }
      c->nargs = 2;
      rc = tc__arg_in(g, vs, c, 0, nd->inputs[0]);
      tc__arg_work(c, 1, out);
      break;
    case TC_OP_SOFTMAX: rc = tc__softmax_call(g, vs, c, i); break;
    case TC_OP_ADD:
      if (tc__add_binary(g, vs, i)) {
        rc = tc__binary_call(g, vs, c, i, TC_BINARY_ADD);
        break;
      }
      if (vs->map[i] || nd->out.ndim == 4) {
        tc__wl_from(g, nd, &c->wl);
      } else { /* rows of the last dim */
        int last = nd->out.shape[nd->out.ndim - 1], rows = (int)tc__rows(&nd->out);
        tc__wl_tensor(&c->wl, TC_KERNEL_ELTWISE, rows, last, 1, 1, last, 1, 1);
        tc__wl_epilogue(&c->wl, nd);
      }
      c->wl.kernel = TC_KERNEL_ELTWISE;
      c->nargs = 3;
      rc = tc__arg_in(g, vs, c, 0, nd->inputs[0]);
      if (rc == TH_OK) rc = tc__arg_in(g, vs, c, 1, nd->inputs[1]);
      tc__arg_work(c, 2, out);
      break;
    case TC_OP_MUL:
    case TC_OP_SUB:
    case TC_OP_DIV:
      rc = tc__binary_call(g, vs, c, i,
                           nd->op == TC_OP_MUL   ? TC_BINARY_MUL
                           : nd->op == TC_OP_SUB ? TC_BINARY_SUB
                                                 : TC_BINARY_DIV);
      break;
    case TC_OP_CONCAT: {
      int64_t off = 0, ost[TC_MAX_DIMS];
      tc__rowmajor(&nd->out, ost);
      for (int k = 0; rc == TH_OK && k < nd->ninputs; k++) {
        tc_call *ck = &cs[*n];
        memset(ck, 0, sizeof *ck);
        for (int a = 0; a < 5; a++) ck->arg_param[a] = -1;
        ck->node = i;
        const tc_tensor *t = &g->nodes[nd->inputs[k]].out;
        if (vs->map[i]) {
          ck->wl.kernel = TC_KERNEL_CONCAT;
          ck->wl.n = t->shape[0];
          ck->wl.c = t->shape[1];
          ck->wl.h = ck->wl.oh = t->shape[2];
          ck->wl.w = ck->wl.ow = t->shape[3];
          ck->wl.oc = nd->out.shape[1];
          ck->wl.kh = ck->wl.kw = ck->wl.sh = ck->wl.sw = 1;
          ck->wl.in_cb = t->cb;
          ck->wl.out_cb = nd->out.cb;
          ck->wl.c_offset = (int)off;
          ck->nargs = 2;
          rc = tc__arg_in(g, vs, ck, 0, nd->inputs[k]);
          tc__arg_work(ck, 1, out);
        } else { /* each input's view straight into its slice of the output */
          const tc__view *v = &vs->v[nd->inputs[k]];
          if (v->bad)
            return tc__fail(g, TH_ERR_INVALID,
                            "node %d (concat) reads a channel-blocked map without a reorder", i);
          rc = tc__copy_call(g, ck, i, v->base, t->ndim, t->shape, v->st, v->off, ost,
                             off * ost[nd->axis], i, nd->out.dtype);
        }
        off += t->shape[nd->axis];
        if (rc == TH_OK) (*n)++;
      }
      return rc;
    }
    case TC_OP_MATMUL: {
      const tc_tensor *ta = &g->nodes[nd->inputs[0]].out;
      int r = nd->out.ndim, M = nd->out.shape[r - 2], N = nd->out.shape[r - 1];
      int K = ta->shape[r - (nd->trans_a ? 2 : 1)];
      tc__wl_tensor(&c->wl, TC_KERNEL_BATCH_MATMUL,
                    (int)(tc_tensor_numel(&nd->out) / ((int64_t)M * N)), K, M, 1, N, M, 1);
      c->wl.trans_a = nd->trans_a;
      c->wl.trans_b = nd->trans_b;
      c->wl.alpha = nd->alpha;
      c->nargs = 3;
      rc = tc__arg_in(g, vs, c, 0, nd->inputs[0]);
      if (rc == TH_OK) rc = tc__arg_in(g, vs, c, 1, nd->inputs[1]);
      tc__arg_work(c, 2, out);
      break;
    }
    case TC_OP_LAYER_NORM: {
      int last = nd->out.shape[nd->out.ndim - 1];
      tc__wl_tensor(&c->wl, TC_KERNEL_LAYER_NORM, (int)tc__rows(&nd->out), last, 1, 1, last, 1, 1);
      c->wl.alpha = nd->eps;
      c->wl.epilogue = nd->epilogue & TC_EPI_RESIDUAL;
      c->nargs = 5;
      rc = tc__arg_in(g, vs, c, 0, nd->inputs[0]);
      tc__arg_param(c, 1, nd->gamma);
      tc__arg_param(c, 2, nd->beta);
      if ((nd->epilogue & TC_EPI_RESIDUAL) && rc == TH_OK)
        rc = tc__arg_in(g, vs, c, 3, nd->inputs[1]);
      tc__arg_work(c, 4, out);
      break;
    }
    case TC_OP_GELU:
    case TC_OP_TANH:
    case TC_OP_CAST:
    case TC_OP_AFFINE:
    case TC_OP_SIGMOID:
    case TC_OP_HARD_SIGMOID:
    case TC_OP_HARD_SWISH:
    case TC_OP_SILU:
    case TC_OP_RELU: /* one that no conv, dense or add took as its epilogue (after an imported x * s + b) */
    case TC_OP_CLIP:
    case TC_OP_MATH:
      /* element-wise: a channel-blocked map is read and written in its own layout */
      tc__wl_tensor(&c->wl, TC_KERNEL_UNARY, (int)tc__stored_numel(&nd->out), 1, 1, 1, 1, 1, 1);
      c->wl.op = nd->op == TC_OP_MATH ? nd->math : tc__unary_op(nd->op);
      if (nd->op == TC_OP_AFFINE || nd->op == TC_OP_HARD_SIGMOID || nd->op == TC_OP_MATH) {
        c->wl.alpha = nd->alpha;
        c->wl.beta = nd->shift;
      } else if (nd->op == TC_OP_RELU || nd->op == TC_OP_CLIP) {
        c->wl.alpha = nd->op == TC_OP_RELU ? 0.0f : nd->clip_min;
        c->wl.beta = nd->op == TC_OP_RELU ? FLT_MAX : nd->clip_max;
      }
      c->nargs = 2;
      rc = tc__arg_in(g, vs, c, 0, nd->inputs[0]);
      tc__arg_work(c, 1, out);
      break;
    case TC_OP_EMBEDDING: {
      const tc_param *tab = &g->params[nd->weight];
      tc__wl_tensor(&c->wl, TC_KERNEL_EMBEDDING, (int)tc_tensor_numel(&g->nodes[nd->inputs[0]].out),
                    (int)tab->shape[0], 1, 1, nd->oc, 1, 1);
      c->nargs = 3;
      rc = tc__arg_in(g, vs, c, 0, nd->inputs[0]);
      tc__arg_param(c, 1, nd->weight);
      tc__arg_work(c, 2, out);
      break;
    }
    default:
      return tc__fail(g, TH_ERR_UNSUPPORTED, "node %d (%s) has no kernel after the passes", i,
                      tc_op_name(nd->op));
  }
  if (rc == TH_OK) (*n)++;
  return rc;
}

th_status tc_lower(tc_graph *g, tc_call **calls, int *ncalls) {
  tc__views vs;
  if (tc__views_build(g, &vs) != TH_OK) return tc__fail(g, TH_ERR_NOMEM, "out of memory");
  int cap = 16, n = 0;
  tc_call *cs = malloc((size_t)cap * sizeof *cs);
  th_status rc = cs ? TH_OK : TH_ERR_NOMEM;
  for (int k = 0; rc == TH_OK && k < g->noutputs; k++)
    if (g->nodes[g->outputs[k]].op == TC_OP_CONST)
      rc = tc__fail(g, TH_ERR_UNSUPPORTED, "output %s is a constant", g->output_names[k]);
  for (int i = 0; rc == TH_OK && i < g->nnodes; i++) {
    tc_node *nd = &g->nodes[i];
    if (nd->dead || nd->op == TC_OP_INPUT || nd->op == TC_OP_CONST) continue;
    if (tc__is_view(nd->op) && !vs.v[i].copy) continue; /* an alias or read through strides */
    int parts = nd->op == TC_OP_CONCAT ? nd->ninputs : 1;
    if (n + parts > cap) {
      cap = (n + parts) * 2;
      tc_call *nc = realloc(cs, (size_t)cap * sizeof *nc);
      if (!nc) {
        rc = TH_ERR_NOMEM;
        break;
      }
      cs = nc;
    }
    rc = tc__lower_node(g, &vs, cs, &n, i);
  }
  tc__views_free(&vs);
  if (rc != TH_OK) {
    if (rc == TH_ERR_NOMEM) tc__fail(g, rc, "out of memory");
    free(cs);
    return rc;
  }
  *calls = cs;
  *ncalls = n;
  return TH_OK;
}
