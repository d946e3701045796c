/* The graph passes (see passes.h): batch-norm folding, epilogue fusion, the NCHW[cb]c layout assignment
 * with edge-only reorders, liveness-based memory planning, and lowering to kernel calls. Passes work on
 * the node table in place: removed nodes are marked dead and their consumers rewired, so node order stays
 * topological and the reference interpreter can run the graph after any pass. */
#include "passes.h"

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

static int tc__can_take_epilogue(const tc_node *p) {
  return (p->op == TC_OP_CONV2D || p->op == TC_OP_DENSE || p->op == TC_OP_ADD) &&
         !(p->epilogue & (TC_EPI_RELU | TC_EPI_CLIP));
}

th_status tc_pass_fuse(tc_graph *g) {
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
      case TC_OP_CLIP: {
        tc_node *p = &g->nodes[x];
        if (u[x] == 1 && tc__can_take_epilogue(p)) {
          if (nd->op == TC_OP_RELU) {
            p->epilogue |= TC_EPI_RELU;
          } else {
            p->epilogue |= TC_EPI_CLIP;
            p->clip_min = nd->clip_min;
            p->clip_max = nd->clip_max;
          }
          tc__replace(g, i, x);
        }
        break;
      }
      case TC_OP_ADD: {
        /* fold into the later-computed conv input, so the other input exists when the conv runs */
        int best = -1;
        for (int k = 0; k < 2; k++) {
          int c = nd->inputs[k], o = nd->inputs[1 - k];
          const tc_node *p = &g->nodes[c];
          if (p->op == TC_OP_CONV2D && u[c] == 1 && p->ninputs == 1 && o < c && c != o &&
              !(p->epilogue & (TC_EPI_RELU | TC_EPI_CLIP | TC_EPI_RESIDUAL)) && c > best)
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
        }
        break;
      }
      default: break;
    }
    free(u);
  }
  return TH_OK;
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

static tc_node tc__layout_node(const tc_graph *g, int x, int cb) {
  tc_node n;
  memset(&n, 0, sizeof n);
  n.op = TC_OP_LAYOUT;
  n.ninputs = 1;
  n.inputs[0] = x;
  n.out = g->nodes[x].out;
  n.out.cb = cb;
  n.out.offset = -1;
  n.weight = n.bias = n.gamma = n.beta = n.mean = n.var = -1;
  n.groups = 1;
  return n;
}

th_status tc_pass_layout(tc_graph *g, int simd_lanes) {
  for (int i = 0; i < g->nnodes; i++) {
    tc_node *nd = &g->nodes[i];
    if (nd->dead) continue;
    nd->out.cb = nd->out.ndim == 4 ? tc_channel_block(nd->out.shape[1], simd_lanes) : 1;
    if (nd->op == TC_OP_INPUT && nd->out.cb != 1) {
      /* the caller hands plain NCHW: reorder once, right after the input */
      int cb = nd->out.cb;
      nd->out.cb = 1;
      tc_node ln = tc__layout_node(g, i, cb);
      if (tc__insert(g, i + 1, &ln) < 0) return TH_ERR_NOMEM;
      for (int j = i + 2; j < g->nnodes; j++)
        for (int k = 0; k < g->nodes[j].ninputs; k++)
          if (g->nodes[j].inputs[k] == i) g->nodes[j].inputs[k] = i + 1;
      for (int k = 0; k < g->noutputs; k++)
        if (g->outputs[k] == i) g->outputs[k] = i + 1;
      i++;
    } else if (nd->op == TC_OP_FLATTEN) {
      int x = nd->inputs[0];
      const tc_tensor *t = &g->nodes[x].out;
      if (t->ndim == 4 && t->cb != 1 && (int64_t)t->shape[2] * t->shape[3] > 1) {
        /* torch flattens in NCHW order: reorder a blocked map back to plain first */
        tc_node ln = tc__layout_node(g, x, 1);
        if (tc__insert(g, i, &ln) < 0) return TH_ERR_NOMEM;
        g->nodes[i + 1].inputs[0] = i;
        i++;
      }
    }
  }
  return TH_OK;
}

int tc_graph_storage(const tc_graph *g, int id) {
  while (id >= 0 && g->nodes[id].op == TC_OP_FLATTEN) id = g->nodes[id].inputs[0];
  return id;
}

typedef struct tc__block {
  int64_t off, size;
} tc__block;

th_status tc_pass_plan_memory(tc_graph *g, int64_t *workspace) {
  int n = g->nnodes;
  int *last = malloc((size_t)(n ? n : 1) * sizeof *last);
  tc__block *fl = malloc((size_t)(n + 1) * sizeof *fl); /* free list, sorted by offset */
  int *live = malloc((size_t)(n ? n : 1) * sizeof *live);
  if (!last || !fl || !live) {
    free(last);
    free(fl);
    free(live);
    return TH_ERR_NOMEM;
  }
  for (int i = 0; i < n; i++) last[i] = i;
  for (int i = 0; i < n; i++) {
    if (g->nodes[i].dead) continue;
    for (int k = 0; k < g->nodes[i].ninputs; k++) {
      int s = tc_graph_storage(g, g->nodes[i].inputs[k]);
      if (last[s] < i) last[s] = i;
    }
  }
  for (int k = 0; k < g->noutputs; k++)
    last[tc_graph_storage(g, g->outputs[k])] = n; /* copied out after the last kernel */
  int nfree = 0, nlive = 0;
  int64_t top = 0;
  for (int i = 0; i < n; i++) {
    tc_node *nd = &g->nodes[i];
    if (nd->dead || nd->op == TC_OP_FLATTEN) continue;
    /* release buffers whose last reader ran before this node; a node never overwrites its inputs */
    for (int k = 0; k < nlive;) {
      int j = live[k];
      if (last[j] < i) {
        tc__block b = {g->nodes[j].out.offset, (tc_tensor_numel(&g->nodes[j].out) + 15) / 16 * 16};
        int pos = 0;
        while (pos < nfree && fl[pos].off < b.off) pos++;
        memmove(&fl[pos + 1], &fl[pos], (size_t)(nfree - pos) * sizeof *fl);
        fl[pos] = b;
        nfree++;
        /* merge with neighbours */
        if (pos + 1 < nfree && fl[pos].off + fl[pos].size == fl[pos + 1].off) {
          fl[pos].size += fl[pos + 1].size;
          memmove(&fl[pos + 1], &fl[pos + 2], (size_t)(nfree - pos - 2) * sizeof *fl);
          nfree--;
        }
        if (pos > 0 && fl[pos - 1].off + fl[pos - 1].size == fl[pos].off) {
          fl[pos - 1].size += fl[pos].size;
          memmove(&fl[pos], &fl[pos + 1], (size_t)(nfree - pos - 1) * sizeof *fl);
          nfree--;
        }
        live[k] = live[--nlive];
      } else {
        k++;
      }
    }
    int64_t need = (tc_tensor_numel(&nd->out) + 15) / 16 * 16;
    int best = -1;
    for (int k = 0; k < nfree; k++)
      if (fl[k].size >= need && (best < 0 || fl[k].size < fl[best].size)) best = k;
    if (best >= 0) {
      nd->out.offset = fl[best].off;
      fl[best].off += need;
      fl[best].size -= need;
      if (fl[best].size == 0) {
        memmove(&fl[best], &fl[best + 1], (size_t)(nfree - best - 1) * sizeof *fl);
        nfree--;
      }
    } else if (nfree > 0 && fl[nfree - 1].off + fl[nfree - 1].size == top) {
      /* grow the last free block at the top */
      nd->out.offset = fl[nfree - 1].off;
      top = nd->out.offset + need;
      nfree--;
    } else {
      nd->out.offset = top;
      top += need;
    }
    live[nlive++] = i;
  }
  for (int i = 0; i < n; i++)
    if (!g->nodes[i].dead && g->nodes[i].op == TC_OP_FLATTEN)
      g->nodes[i].out.offset = g->nodes[tc_graph_storage(g, i)].out.offset;
  free(last);
  free(fl);
  free(live);
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

th_status tc_node_effective_params(const tc_graph *g, const tc_node *nd, float *w_out, float *b_out) {
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

static int64_t tc__off(const tc_graph *g, int id) {
  return g->nodes[tc_graph_storage(g, id)].out.offset;
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
  wl->epilogue = nd->epilogue;
  wl->clip_min = nd->clip_min;
  wl->clip_max = nd->clip_max;
}

th_status tc_lower(tc_graph *g, tc_call **calls, int *ncalls) {
  int cap = 16, n = 0;
  tc_call *cs = malloc((size_t)cap * sizeof *cs);
  if (!cs) return TH_ERR_NOMEM;
  th_status rc = TH_OK;
  for (int i = 0; rc == TH_OK && i < g->nnodes; i++) {
    tc_node *nd = &g->nodes[i];
    if (nd->dead || nd->op == TC_OP_INPUT || nd->op == TC_OP_FLATTEN) continue;
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
    tc_call *c = &cs[n];
    memset(c, 0, sizeof *c);
    c->node = i;
    tc__wl_from(g, nd, &c->wl);
    int64_t out = tc__off(g, i), in = tc__off(g, nd->inputs[0]);
    switch (nd->op) {
      case TC_OP_CONV2D:
      case TC_OP_DENSE:
        if (nd->op == TC_OP_DENSE) {
          c->wl.kernel = TC_KERNEL_DENSE;
          c->wl.in_cb = c->wl.out_cb = 1;
        } else if (nd->groups == 1) {
          c->wl.kernel = TC_KERNEL_CONV2D;
        } else if (nd->groups == c->wl.c && nd->groups == c->wl.oc) {
          c->wl.kernel = TC_KERNEL_DEPTHWISE;
        } else {
          rc = tc__fail(g, TH_ERR_UNSUPPORTED, "%s: grouped conv (groups %d) has no kernel", nd->name,
                        nd->groups);
          break;
        }
        if (nd->op == TC_OP_CONV2D) {
          c->wl.kh = nd->kh;
          c->wl.kw = nd->kw;
          c->wl.sh = nd->sh;
          c->wl.sw = nd->sw;
          c->wl.pt = nd->pt;
          c->wl.pl = nd->pl;
          c->wl.pb = nd->pb;
          c->wl.pr = nd->pr;
        }
        c->nargs = 5;
        c->arg_space[TC_ARG_IN] = TC_SPACE_WORK;
        c->arg_off[TC_ARG_IN] = in;
        c->arg_space[TC_ARG_WEIGHTS] = TC_SPACE_WEIGHTS; /* offset set by the build */
        c->arg_space[TC_ARG_BIAS] = (nd->epilogue & TC_EPI_BIAS) ? TC_SPACE_BIAS : TC_SPACE_NULL;
        if (nd->epilogue & TC_EPI_RESIDUAL) {
          c->arg_space[TC_ARG_RESIDUAL] = TC_SPACE_WORK;
          c->arg_off[TC_ARG_RESIDUAL] = tc__off(g, nd->inputs[1]);
        }
        c->arg_space[TC_ARG_OUT] = TC_SPACE_WORK;
        c->arg_off[TC_ARG_OUT] = out;
        n++;
        break;
      case TC_OP_MAX_POOL:
      case TC_OP_AVG_POOL:
      case TC_OP_GLOBAL_AVG_POOL:
      case TC_OP_SOFTMAX:
      case TC_OP_LAYOUT:
        if (nd->op == TC_OP_MAX_POOL || nd->op == TC_OP_AVG_POOL) {
          c->wl.kernel = nd->op == TC_OP_MAX_POOL ? TC_KERNEL_MAXPOOL : TC_KERNEL_AVGPOOL;
          c->wl.kh = nd->kh;
          c->wl.kw = nd->kw;
          c->wl.sh = nd->sh;
          c->wl.sw = nd->sw;
          c->wl.pt = nd->pt;
          c->wl.pl = nd->pl;
          c->wl.pb = nd->pb;
          c->wl.pr = nd->pr;
          c->wl.count_include_pad = nd->count_include_pad;
        } else if (nd->op == TC_OP_GLOBAL_AVG_POOL) {
          c->wl.kernel = TC_KERNEL_GLOBAL_AVGPOOL;
          c->wl.kh = c->wl.h;
          c->wl.kw = c->wl.w;
        } else if (nd->op == TC_OP_SOFTMAX) {
          c->wl.kernel = TC_KERNEL_SOFTMAX;
          c->wl.in_cb = c->wl.out_cb = 1;
        } else {
          c->wl.kernel = TC_KERNEL_LAYOUT;
        }
        c->nargs = 2;
        c->arg_space[0] = c->arg_space[1] = TC_SPACE_WORK;
        c->arg_off[0] = in;
        c->arg_off[1] = out;
        n++;
        break;
      case TC_OP_ADD:
        c->wl.kernel = TC_KERNEL_ELTWISE;
        c->nargs = 3;
        c->arg_space[0] = c->arg_space[1] = c->arg_space[2] = TC_SPACE_WORK;
        c->arg_off[0] = in;
        c->arg_off[1] = tc__off(g, nd->inputs[1]);
        c->arg_off[2] = out;
        n++;
        break;
      case TC_OP_CONCAT: {
        int off = 0;
        for (int k = 0; k < nd->ninputs; k++) {
          tc_call *ck = &cs[n];
          memset(ck, 0, sizeof *ck);
          ck->node = i;
          const tc_tensor *t = &g->nodes[nd->inputs[k]].out;
          ck->wl.kernel = TC_KERNEL_CONCAT;
          ck->wl.n = t->shape[0];
          ck->wl.c = t->shape[1];
          ck->wl.h = ck->wl.oh = t->shape[2];
          ck->wl.w = ck->wl.ow = t->shape[3];
          ck->wl.oc = nd->out.shape[1];
          ck->wl.kh = ck->wl.kw = ck->wl.sh = ck->wl.sw = 1;
          ck->wl.in_cb = t->cb;
          ck->wl.out_cb = nd->out.cb;
          ck->wl.c_offset = off;
          ck->nargs = 2;
          ck->arg_space[0] = ck->arg_space[1] = TC_SPACE_WORK;
          ck->arg_off[0] = tc__off(g, nd->inputs[k]);
          ck->arg_off[1] = out;
          off += t->shape[1];
          n++;
        }
        break;
      }
      default:
        rc = tc__fail(g, TH_ERR_UNSUPPORTED, "node %d (%s) has no kernel after the passes", i,
                      tc_op_name(nd->op));
        break;
    }
  }
  if (rc != TH_OK) {
    free(cs);
    return rc;
  }
  *calls = cs;
  *ncalls = n;
  return TH_OK;
}
