/* The layout pass: CNN feature maps get an NCHW[cb]c channel block (tc_channel_block), with a reorder
 * (LAYOUT node) inserted only on the edges where producer and consumer disagree; tensor ops keep
 * plain row-major layouts. */
#include "passes_int.h"

#include <stdlib.h>
#include <string.h>

#include "ops.h"

static int tc__is_cnn_op(tc_op op) {
  return op == TC_OP_CONV2D || op == TC_OP_BATCH_NORM || op == TC_OP_MAX_POOL ||
         op == TC_OP_AVG_POOL || op == TC_OP_GLOBAL_AVG_POOL || op == TC_OP_ADAPTIVE_AVG_POOL;
}

/* A broadcast multiply of maps that keeps the channel-blocked layout (squeeze-excite's x * gate): the
 * operands have the output's channels, and each of their other dims is the output's or 1 (a gate [n, c,
 * 1, 1]). Both then have the output's channel block, and lowering reads them through blocked strides. */
int tc__map_mul(const tc_graph *g, const tc_node *nd) {
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
int *tc__maps(const tc_graph *g) {
  int *map = calloc((size_t)g->nnodes + 1, sizeof *map);
  if (!map) return NULL;
  for (int i = 0; i < g->nnodes; i++)
    if (!g->nodes[i].dead) map[i] = tc__map_of(g, map, i);
  return map;
}

/* Whether a blocked map is in NCHW order as stored: 1x1, its block not padding the channels. */
int tc__nchw_1x1(const tc_tensor *t) {
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

/* Node i's first input reordered to block cb by a layout node inserted before it (the node is then at
 * i + 1 and reads the reorder); -1 when out of memory. */
static int tc__reorder_first_input(tc_graph *g, int i, int cb, int **map) {
  tc_node ln = tc__layout_node(g, g->nodes[i].inputs[0], cb);
  if (tc__insert_mapped(g, i, &ln, map) < 0) return -1;
  g->nodes[i + 1].inputs[0] = i;
  return 0;
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

/* Whether node nd is a grouped conv2d that is not depthwise (a conv2d workload with groups). */
static int tc__grouped(const tc_graph *g, const tc_node *nd) {
  return nd->op == TC_OP_CONV2D && nd->groups > 1 &&
         !(nd->groups == nd->out.shape[1] && nd->groups == g->nodes[nd->inputs[0]].out.shape[1]);
}

/* The largest block of at most `lanes` (and 16) lanes that divides n: no padding. */
static int tc__exact_block(int n, int lanes) {
  int b = 16;
  while (b > 1 && (b > lanes || n % b)) b /= 2;
  return b;
}

/* Whether a grouped conv reads input block cb as it is (tc_workload_check's rule): no padded
 * channels, and the block and a group's cg channels divide one another. */
static int tc__group_block_ok(int c, int cg, int cb) {
  return tc_channels_stored(c, cb) == c && (cg % cb == 0 || cb % cg == 0);
}

th_status tc_pass_layout(tc_graph *g, int simd_lanes) {
  int *map = tc__maps(g);
  if (!map) return tc__fail(g, TH_ERR_NOMEM, "out of memory");
  for (int i = 0; i < g->nnodes; i++) {
    tc_node *nd = &g->nodes[i];
    if (nd->dead || nd->op == TC_OP_LAYOUT) continue;
    nd->out.cb = map[i] ? tc_channel_block(nd->out.shape[1], simd_lanes) : 1;
    /* a grouped conv's groups are real channels: its output block pads none */
    if (map[i] && tc__grouped(g, nd) &&
        tc_channels_stored(nd->out.shape[1], nd->out.cb) != nd->out.shape[1])
      nd->out.cb = tc__exact_block(nd->out.shape[1], simd_lanes);
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
      if (tc__reorder_first_input(g, i, g->nodes[i].out.cb, &map) < 0) {
        rc = tc__fail(g, TH_ERR_NOMEM, "out of memory");
        break;
      }
      i++;
      continue;
    }
    if (tc__grouped(g, &g->nodes[i])) {
      const tc_tensor *t = &g->nodes[g->nodes[i].inputs[0]].out;
      int c = t->shape[1], cg = c / g->nodes[i].groups;
      if (!tc__group_block_ok(c, cg, t->cb)) {
        /* the input's block splits or pads a group: one reorder to a block of the group's
         * channels (a divisor of them, so also of c) */
        if (tc__reorder_first_input(g, i, tc__exact_block(cg, simd_lanes), &map) < 0) {
          rc = tc__fail(g, TH_ERR_NOMEM, "out of memory");
          break;
        }
        i++;
        continue;
      }
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
