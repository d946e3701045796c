/* Strided views: chains of reshape/transpose/slice/expand composed into one view over a base tensor,
 * an alias where contiguous, one COPY where a kernel needs it contiguous. Views are recomputed from the
 * graph by the passes that need them (plan, lower, fuse's q/k/v, tc_graph_storage), never stored. */
#include "passes_int.h"

#include <stdlib.h>
#include <string.h>

#include "ops.h"

int tc__is_view(tc_op op) {
  return op == TC_OP_RESHAPE || op == TC_OP_FLATTEN || op == TC_OP_DROPOUT ||
         op == TC_OP_TRANSPOSE || op == TC_OP_SLICE || op == TC_OP_EXPAND;
}

static int tc__is_reshape(tc_op op) {
  return op == TC_OP_RESHAPE || op == TC_OP_FLATTEN || op == TC_OP_DROPOUT;
}

void tc__rowmajor(const tc_tensor *t, int64_t *st) {
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
void tc__bcast_strides(const tc_tensor *x, const int64_t *xst, const tc_tensor *out,
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
int tc__add_binary(const tc_graph *g, const tc__views *vs, int c) {
  const tc_node *nd = &g->nodes[c];
  if (!tc__same_numel_operands(g, nd)) return 1;
  if (vs->map[c] || nd->epilogue) return 0;
  return !(vs->v[nd->inputs[0]].contig && vs->v[nd->inputs[1]].contig);
}

/* Whether consumer c reads its input slot k through strides (else it needs a contiguous tensor). */
int tc__reads_strided(const tc_graph *g, const tc__views *vs, int c, int k) {
  const tc_node *nd = &g->nodes[c];
  if (tc__is_view(nd->op)) return k == 0;
  switch (nd->op) {
    case TC_OP_CONCAT: return !vs->map[c];
    case TC_OP_MUL:
    case TC_OP_SUB:
    case TC_OP_DIV:
    case TC_OP_BINARY: return 1;
    case TC_OP_ADD: return tc__add_binary(g, vs, c);
    default: return 0;
  }
}

static int tc__is_output(const tc_graph *g, int x) {
  for (int k = 0; k < g->noutputs; k++)
    if (g->outputs[k] == x) return 1;
  return 0;
}

void tc__views_free(tc__views *vs) {
  free(vs->v);
  free(vs->map);
}

/* Every node's view, and which views are copied: a non-contiguous view that a consumer needs contiguous
 * or that is a graph output, and a view of a CONST that is a graph output (outputs leave the workspace). */
th_status tc__views_build(const tc_graph *g, tc__views *vs) {
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
int tc__planned(const tc_graph *g, const tc__views *vs, int i) {
  const tc_node *nd = &g->nodes[i];
  return !nd->dead && nd->op != TC_OP_CONST && (!tc__is_view(nd->op) || vs->v[i].copy);
}

/* The node whose storage consumer c reads through input slot k. */
int tc__read_base(const tc_graph *g, const tc__views *vs, int c, int k) {
  int x = g->nodes[c].inputs[k];
  if (vs->v[x].copy && !tc__reads_strided(g, vs, c, k)) return x;
  return vs->v[x].base;
}

/* The view a COPY of node i reads (a copied view's own, or a reshape copy's input's) and its shape. */
const tc__view *tc__copy_src(const tc_graph *g, const tc__views *vs, int i,
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
