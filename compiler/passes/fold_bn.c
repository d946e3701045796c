/* Batch-norm folding: a batch norm after a conv or dense becomes that node's gamma/beta/mean/var (the
 * weights stay torchvision's tensors in params.bin), and the arithmetic that folds them into the effective
 * weights and bias when a model is packed. */
#include "passes_int.h"

#include <math.h>
#include <stdlib.h>

#include "ops.h"

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
