/* Epilogue fusion (tc_pass_fuse_groups): activations, residual adds and softmax masks fold into their
 * producing kernel, and dense layers that share an input (q/k/v) are joined into one dense whose output
 * the consumers read as slices. Each fusion group can be switched off for A/B comparisons. */
#include "passes_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

/* the activations of imported CNNs: fused into a conv (depthwise too) or dense only */
#define TC__CNN_ACT (TC_EPI_SIGMOID | TC_EPI_HARD_SIGMOID | TC_EPI_HARD_SWISH | TC_EPI_SILU)
#define TC__ACT (TC_EPI_RELU | TC_EPI_CLIP | TC_EPI_GELU | TC_EPI_TANH | TC__CNN_ACT)

static int tc__can_take_epilogue(const tc_graph *g, const tc_node *p) {
  if (p->epilogue & TC__ACT) return 0;
  /* an add takes an activation only as ELTWISE, which needs equal shapes (BINARY has no epilogue) */
  return p->op == TC_OP_CONV2D || p->op == TC_OP_DENSE ||
         (p->op == TC_OP_ADD && tc__same_numel_operands(g, p));
}

/* For softmax scores x with an additive mask m: the split p such that m, right-aligned to x, equals x on
 * dims [0, p), is 1 on [p, rank-1) and equals x on the last dim. Then the mask is [n, w] rows with n the
 * product of x's first p dims, which SOFTMAX_ROWS reads with TC_EPI_MASK. -1 for any other pattern. */
int tc__mask_split(const tc_tensor *x, const tc_tensor *m) {
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
