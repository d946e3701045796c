/* Lowering: each live node of the planned graph becomes a tc_call (a kernel workload with its argument
 * slots in the workspace, the parameters or the graph inputs); views become strided COPY calls where a
 * kernel needs a contiguous operand. The switch over graph ops is tc__lower_node. */
#include "passes_int.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

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
  wl->dil_h = nd->dil_h > 1 ? nd->dil_h : 0;
  wl->dil_w = nd->dil_w > 1 ? nd->dil_w : 0;
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
  if (g->nodes[nd->inputs[1]].out.dtype == TC_DTYPE_I64) c->wl.dtype = TC_WL_I64;
  c->nargs = 3;
  tc__arg_at(g, c, 0, va->base, va->off, g->nodes[nd->inputs[0]].out.dtype);
  tc__arg_at(g, c, 1, vb->base, vb->off, g->nodes[nd->inputs[1]].out.dtype);
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

/* Gather and GatherElements: TC_KERNEL_GATHER over the output's shape, with data strides per
 * output dim (0 where the index stands in for the axis) and the index's strides. */
static th_status tc__gather_call(tc_graph *g, const tc__views *vs, tc_call *c, int i) {
  const tc_node *nd = &g->nodes[i];
  const tc_tensor *td = &g->nodes[nd->inputs[0]].out, *ti = &g->nodes[nd->inputs[1]].out;
  int64_t ds[TC_MAX_DIMS], is[TC_MAX_DIMS];
  tc__rowmajor(td, ds);
  tc__rowmajor(ti, is);
  int ax = nd->axis, q = ti->ndim, r = nd->out.ndim;
  tc__wl_tensor(&c->wl, TC_KERNEL_GATHER, 1, td->shape[ax], 1, 1, (int)ds[ax], 1, 1);
  c->wl.ndim = r;
  c->wl.kh = nd->has_ignore;
  c->wl.kw = nd->has_ignore ? nd->ignore : 0;
  for (int d = 0; d < r; d++) {
    c->wl.shape[d] = nd->out.shape[d];
    if (nd->gather_elements) {
      c->wl.astride[d] = d == ax ? 0 : (int)ds[d];
      c->wl.bstride[d] = (int)is[d];
    } else {
      c->wl.astride[d] = d < ax ? (int)ds[d] : d >= ax + q ? (int)ds[d - q + 1] : 0;
      c->wl.bstride[d] = d >= ax && d < ax + q ? (int)is[d - ax] : 0;
    }
  }
  if (r > TC_WL_DIMS)
    return tc__fail(g, TH_ERR_UNSUPPORTED, "node %d (gather): %d dimensions (at most %d)", i, r,
                    TC_WL_DIMS);
  c->nargs = 3;
  th_status rc = tc__arg_in(g, vs, c, 0, nd->inputs[0]);
  if (rc == TH_OK) rc = tc__arg_in(g, vs, c, 1, nd->inputs[1]);
  tc__arg_work(c, 2, nd->out.offset);
  return rc;
}

/* ScatterElements: TC_KERNEL_SCATTER over data's shape; astride picks the axis coordinate, the
 * indices' strides (0 on the axis) the first candidate update, whose axis stride is oc. */
static th_status tc__scatter_call(tc_graph *g, const tc__views *vs, tc_call *c, int i) {
  const tc_node *nd = &g->nodes[i];
  const tc_tensor *ti = &g->nodes[nd->inputs[1]].out;
  int64_t is[TC_MAX_DIMS];
  tc__rowmajor(ti, is);
  int ax = nd->axis, r = nd->out.ndim;
  if (r > TC_WL_DIMS)
    return tc__fail(g, TH_ERR_UNSUPPORTED, "node %d (scatter): %d dimensions (at most %d)", i, r,
                    TC_WL_DIMS);
  tc__wl_tensor(&c->wl, TC_KERNEL_SCATTER, 1, nd->out.shape[ax], 1, 1, (int)is[ax], 1, 1);
  c->wl.ndim = r;
  c->wl.kh = ti->shape[ax];
  c->wl.kw = 0;
  c->wl.op = nd->math;
  for (int d = 0; d < r; d++) {
    c->wl.shape[d] = nd->out.shape[d];
    c->wl.astride[d] = d == ax;
    c->wl.bstride[d] = d == ax ? 0 : (int)is[d];
  }
  c->nargs = 4;
  th_status rc = tc__arg_in(g, vs, c, 0, nd->inputs[0]);
  if (rc == TH_OK) rc = tc__arg_in(g, vs, c, 1, nd->inputs[1]);
  if (rc == TH_OK) rc = tc__arg_in(g, vs, c, 2, nd->inputs[2]);
  tc__arg_work(c, 3, nd->out.offset);
  return rc;
}

/* TC_KERNEL_UNARY's operation for a unary graph node (a cast by its direction). */
static int tc__unary_op(const tc_node *nd) {
  switch (nd->op) {
    case TC_OP_GELU: return TC_UNARY_GELU;
    case TC_OP_TANH: return TC_UNARY_TANH;
    case TC_OP_CAST:
      return nd->out.dtype == TC_DTYPE_I64 ? TC_UNARY_CAST_TO_I64 : TC_UNARY_CAST_I64;
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
      } else if (nd->groups > 1 && nd->groups == c->wl.c && nd->groups == c->wl.oc) {
        c->wl.kernel = TC_KERNEL_DEPTHWISE;
      } else { /* groups of c/groups -> oc/groups channels (tc_pass_layout fits the blocks) */
        c->wl.kernel = TC_KERNEL_CONV2D;
        c->wl.groups = nd->groups;
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
    case TC_OP_BINARY: rc = tc__binary_call(g, vs, c, i, nd->math); break;
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
      c->wl.op = nd->op == TC_OP_MATH ? nd->math : tc__unary_op(nd);
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
    case TC_OP_REDUCE: {
      const tc_tensor *ti = &g->nodes[nd->inputs[0]].out;
      tc__wl_tensor(&c->wl, TC_KERNEL_REDUCE, (int)tc_tensor_numel(&nd->out),
                    ti->shape[ti->ndim - 1], 1, 1, 1, 1, 1);
      c->wl.op = nd->math;
      c->nargs = 2;
      rc = tc__arg_in(g, vs, c, 0, nd->inputs[0]);
      tc__arg_work(c, 1, out);
      break;
    }
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
    case TC_OP_GATHER:
      rc = tc__gather_call(g, vs, c, i);
      break;
    case TC_OP_SCATTER:
      rc = tc__scatter_call(g, vs, c, i);
      break;
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
