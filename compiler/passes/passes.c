/* The graph passes (see passes.h) and the pipeline that runs them: batch-norm folding (fold_bn.c), epilogue
 * fusion (fuse.c), the NCHW[cb]c layout (layout.c), memory planning (plan.c), with strided views (views.c)
 * and the lowering to kernel calls (lower.c). Passes work on the node table in place: removed nodes are
 * marked dead and their consumers rewired, so node order stays topological and the reference interpreter
 * can run the graph after any pass. This file holds the node-table edits every pass shares.
 * Views are recomputed from the graph where needed (plan, lower, tc_graph_storage) rather than stored, so
 * that graph.h's nodes carry no pass state. */
#include "passes_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

th_status tc__fail(tc_graph *g, th_status rc, const char *fmt, ...) {
  if (!g->err[0]) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->err, sizeof g->err, fmt, ap);
    va_end(ap);
  }
  return rc;
}

/* Number of references to each node from live nodes (+1 for the graph output). */
int *tc__uses(const tc_graph *g) {
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
void tc__replace(tc_graph *g, int from, int to) {
  for (int i = 0; i < g->nnodes; i++) {
    if (g->nodes[i].dead) continue;
    for (int k = 0; k < g->nodes[i].ninputs; k++)
      if (g->nodes[i].inputs[k] == from) g->nodes[i].inputs[k] = to;
  }
  for (int k = 0; k < g->noutputs; k++)
    if (g->outputs[k] == from) g->outputs[k] = to;
  g->nodes[from].dead = 1;
}

int tc__same_shape(const tc_tensor *a, const tc_tensor *b) {
  if (a->ndim != b->ndim) return 0;
  for (int d = 0; d < a->ndim; d++)
    if (a->shape[d] != b->shape[d]) return 0;
  return 1;
}

/* Both operands of a binary node have the output's element count: the broadcast is trivial and all three
 * tensors have the same row-major element order. */
int tc__same_numel_operands(const tc_graph *g, const tc_node *nd) {
  int64_t n = tc_tensor_numel(&nd->out);
  return nd->ninputs == 2 && tc_tensor_numel(&g->nodes[nd->inputs[0]].out) == n &&
         tc_tensor_numel(&g->nodes[nd->inputs[1]].out) == n;
}

tc_node tc__blank_node(tc_op op) {
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
int tc__insert(tc_graph *g, int pos, const tc_node *proto) {
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

th_status tc_passes_run(tc_graph *g, int simd_lanes, int64_t *workspace) {
  th_status rc = tc_pass_fold_bn(g);
  if (rc == TH_OK) rc = tc_pass_fuse(g);
  if (rc == TH_OK) rc = tc_pass_layout(g, simd_lanes);
  if (rc == TH_OK) rc = tc_pass_plan_memory(g, workspace);
  return rc;
}
