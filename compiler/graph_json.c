/* The graph's JSON dump (graph.json in a bundle): nodes with their op, inputs, attributes and
 * output shape, the declared inputs and outputs, and the parameters. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "graph.h"
#include "workload.h"

th_status tc_graph_to_json(const tc_graph *g, th_buf *b) {
  json_t *root = json_object();
  json_t *nodes = json_array();
  if (!root || !nodes) {
    json_decref(root);
    json_decref(nodes);
    return TH_ERR_NOMEM;
  }
  json_object_set_new(root, "network", json_string(g->network));
  json_object_set_new(root, "batch", json_integer(g->batch));
  json_t *ins = json_array(), *outs = json_array();
  for (int i = 0; i < g->ninputs; i++) {
    const tc_tensor *t = &g->nodes[g->inputs[i]].out;
    json_t *sh = json_array();
    for (int k = 0; k < t->ndim; k++) json_array_append_new(sh, json_integer(t->shape[k]));
    json_array_append_new(ins, json_pack("{s:s,s:i,s:s,s:o}", "name", g->nodes[g->inputs[i]].name, "node",
                                         g->inputs[i], "dtype", tc_dtype_name(t->dtype), "shape", sh));
  }
  for (int i = 0; i < g->noutputs; i++)
    json_array_append_new(outs, json_pack("{s:s,s:i}", "name", g->output_names[i], "node", g->outputs[i]));
  json_object_set_new(root, "inputs", ins);
  json_object_set_new(root, "outputs", outs);
  for (int i = 0; i < g->nnodes; i++) {
    const tc_node *nd = &g->nodes[i];
    if (nd->dead) continue;
    json_t *o = json_object();
    json_object_set_new(o, "id", json_integer(i));
    json_object_set_new(o, "op", json_string(tc_op_name(nd->op)));
    if (nd->name) json_object_set_new(o, "name", json_string(nd->name));
    json_t *in = json_array(), *sh = json_array();
    for (int k = 0; k < nd->ninputs; k++) json_array_append_new(in, json_integer(nd->inputs[k]));
    for (int k = 0; k < nd->out.ndim; k++) json_array_append_new(sh, json_integer(nd->out.shape[k]));
    json_object_set_new(o, "inputs", in);
    json_object_set_new(o, "shape", sh);
    json_object_set_new(o, "channel_block", json_integer(nd->out.cb));
    if (nd->out.dtype != TC_DTYPE_F32) json_object_set_new(o, "dtype", json_string(tc_dtype_name(nd->out.dtype)));
    if (nd->op == TC_OP_TRANSPOSE) {
      json_t *pm = json_array();
      for (int k = 0; k < nd->out.ndim; k++) json_array_append_new(pm, json_integer(nd->perm[k]));
      json_object_set_new(o, "perm", pm);
    }
    if (nd->op == TC_OP_SLICE)
      json_object_set_new(o, "slice", json_pack("{s:i,s:i,s:i,s:i}", "axis", nd->axis, "begin", nd->begin, "end",
                                                nd->end, "step", nd->step));
    if (nd->op == TC_OP_CONCAT) json_object_set_new(o, "axis", json_integer(nd->axis));
    if (nd->op == TC_OP_MATMUL)
      json_object_set_new(o, "matmul", json_pack("{s:b,s:b,s:f}", "trans_a", nd->trans_a, "trans_b", nd->trans_b,
                                                 "alpha", (double)nd->alpha));
    if (nd->out.offset >= 0) json_object_set_new(o, "offset", json_integer(nd->out.offset));
    if (nd->op == TC_OP_CONV2D || nd->op == TC_OP_MAX_POOL || nd->op == TC_OP_AVG_POOL) {
      json_object_set_new(o, "kernel", json_pack("[i,i]", nd->kh, nd->kw));
      json_object_set_new(o, "stride", json_pack("[i,i]", nd->sh, nd->sw));
      json_object_set_new(o, "pad", json_pack("[i,i,i,i]", nd->pt, nd->pl, nd->pb, nd->pr));
    }
    if (nd->op == TC_OP_CONV2D) json_object_set_new(o, "groups", json_integer(nd->groups));
    if (nd->op == TC_OP_CONV2D && (nd->dil_h > 1 || nd->dil_w > 1))
      json_object_set_new(
          o, "dilations",
          json_pack("[i,i]", nd->dil_h > 1 ? nd->dil_h : 1, nd->dil_w > 1 ? nd->dil_w : 1));
    if (nd->op == TC_OP_CONV2D || nd->op == TC_OP_DENSE || nd->op == TC_OP_ADD) {
      json_t *epi = json_array();
      if (nd->bias >= 0) json_array_append_new(epi, json_string("bias"));
      if (nd->epilogue & TC_EPI_RESIDUAL) json_array_append_new(epi, json_string("residual"));
      if (nd->epilogue & TC_EPI_RELU) json_array_append_new(epi, json_string("relu"));
      if (nd->epilogue & TC_EPI_CLIP) json_array_append_new(epi, json_string("clip"));
      if (nd->epilogue & TC_EPI_GELU) json_array_append_new(epi, json_string("gelu"));
      if (nd->epilogue & TC_EPI_TANH) json_array_append_new(epi, json_string("tanh"));
      if (nd->epilogue & TC_EPI_SIGMOID) json_array_append_new(epi, json_string("sigmoid"));
      if (nd->epilogue & TC_EPI_HARD_SIGMOID)
        json_array_append_new(epi, json_string("hard_sigmoid"));
      if (nd->epilogue & TC_EPI_HARD_SWISH) json_array_append_new(epi, json_string("hard_swish"));
      if (nd->epilogue & TC_EPI_SILU) json_array_append_new(epi, json_string("silu"));
      json_object_set_new(o, "epilogue", epi);
    }
    if (nd->op == TC_OP_HARD_SIGMOID || (nd->epilogue & TC_EPI_HARD_SIGMOID))
      json_object_set_new(
          o, "hard_sigmoid",
          json_pack("{s:f,s:f}", "alpha", (double)nd->alpha, "beta", (double)nd->shift));
    if (nd->weight >= 0) json_object_set_new(o, "weight", json_string(g->params[nd->weight].name));
    json_array_append_new(nodes, o);
  }
  json_object_set_new(root, "nodes", nodes);
  char *s = json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
  json_decref(root);
  if (!s) return TH_ERR_NOMEM;
  th_status rc = th_buf_append(b, s, strlen(s));
  free(s);
  return rc;
}
