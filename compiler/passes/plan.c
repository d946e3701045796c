/* Memory planning: liveness-based placement of every intermediate tensor in one workspace (a first-fit
 * free list over last uses); aliases share their base's storage at the view's offset. */
#include "passes_int.h"

#include <stdlib.h>
#include <string.h>

#include "ops.h"

typedef struct tc__block {
  int64_t off, size;
} tc__block;

/* Elements as stored: a channel-blocked map stores its channels rounded up to the block. */
int64_t tc__stored_numel(const tc_tensor *t) {
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
