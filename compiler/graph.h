/* tc_graph: the compiler's graph IR. A graph is a list of nodes in topological order (every node's inputs
 * come before it), each producing one float32 tensor of up to 4 dimensions (NCHW, optionally channel-blocked
 * NCHW[cb]c after the layout pass), plus a table of named parameters (torchvision names) whose data may be
 * absent when only shapes are needed (task extraction, FLOP counts). Strings and parameter data live in the
 * graph's arena; the node and parameter tables are owned by the graph and freed by tc_graph_free. */
#ifndef TC_GRAPH_H
#define TC_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "th_buf.h"
#include "th_status.h"

#define TC_MAX_DIMS 4
#define TC_MAX_INPUTS 8

typedef enum tc_op {
  TC_OP_INPUT = 0,
  TC_OP_CONV2D,          /* groups, stride, pad; dilation 1; optional bias; fused epilogue after passes */
  TC_OP_BATCH_NORM,      /* inference batch norm: gamma, beta, running mean and var, eps */
  TC_OP_RELU,
  TC_OP_CLIP,            /* clamp to [clip_min, clip_max]; relu6 is clip(0, 6) */
  TC_OP_ADD,             /* element-wise add of two same-shape tensors (+ fused activation) */
  TC_OP_MAX_POOL,        /* pads never win; ceil_mode is expressed as extra bottom/right padding */
  TC_OP_AVG_POOL,        /* count_include_pad as in torch */
  TC_OP_GLOBAL_AVG_POOL, /* adaptive average pool to 1x1 */
  TC_OP_ADAPTIVE_AVG_POOL, /* adaptive average pool to (oh, ow), torch's bin rule */
  TC_OP_CONCAT,          /* along channels */
  TC_OP_FLATTEN,         /* [n, c, h, w] -> [n, c*h*w] */
  TC_OP_DENSE,           /* [n, k] x weight[m, k]^T (+ bias) -> [n, m] */
  TC_OP_DROPOUT,         /* identity at inference */
  TC_OP_SOFTMAX,         /* over the last axis */
  TC_OP_LAYOUT,          /* reorder NCHW[in cb]c -> NCHW[out cb]c; inserted by the layout pass */
  TC_OP_COUNT
} tc_op;

/* The op's name ("conv2d"); never NULL. */
const char *tc_op_name(tc_op op);

typedef struct tc_param {
  const char *name; /* arena string, torchvision name, e.g. "layer1.0.bn1.running_mean" */
  int ndim;
  int64_t shape[TC_MAX_DIMS];
  int64_t numel;
  int is_buffer;  /* running statistics: stored in params.bin but not counted as trainable parameters */
  int init;       /* TC_INIT_*: how the zoo's seeded generator fills it */
  float scale;    /* extra factor for the generator (e.g. small gamma on residual branches) */
  int fan_in;     /* for Kaiming-style bounds */
  float *data;    /* arena-owned, or NULL when the graph was built without weights */
  int used;       /* still referenced after the passes (folded originals are not) */
} tc_param;

enum { TC_INIT_WEIGHT = 0, TC_INIT_BIAS, TC_INIT_GAMMA, TC_INIT_BETA, TC_INIT_MEAN, TC_INIT_VAR,
       TC_INIT_DENSE_WEIGHT };

typedef struct tc_tensor {
  int ndim;
  int shape[TC_MAX_DIMS]; /* logical NCHW shape (or [n, k] after flatten) */
  int cb;                 /* channel block of the layout: 1 = plain NCHW */
  int64_t offset;         /* workspace offset in floats after memory planning; -1 before */
} tc_tensor;

typedef struct tc_node {
  tc_op op;
  const char *name; /* arena string; the torchvision module path where there is one */
  int ninputs;
  int inputs[TC_MAX_INPUTS]; /* node ids; for a fused conv/dense, inputs[1] is the residual */
  tc_tensor out;
  /* conv / pool attributes */
  int oc, kh, kw, sh, sw, pt, pl, pb, pr, groups;
  int count_include_pad;
  int oh_target, ow_target; /* adaptive pool output */
  float clip_min, clip_max, eps;
  int epilogue;             /* TC_EPI_* (workload.h) after fusion */
  int weight, bias;         /* param ids or -1 */
  int gamma, beta, mean, var; /* batch norm param ids */
  int dead;                 /* removed by a pass; skipped everywhere */
} tc_node;

typedef struct tc_graph {
  th_arena *arena;
  const char *network; /* arena string */
  int batch, in_c, in_h, in_w;
  int nnodes, node_cap;
  tc_node *nodes; /* owned */
  int nparams, param_cap;
  tc_param *params; /* owned table; data in the arena */
  int output;       /* node id of the graph output */
  int has_data;     /* parameters carry data */
  char err[256];    /* the first builder or pass error */
} tc_graph;

/* Creates an empty graph. Returns NULL when out of memory. */
tc_graph *tc_graph_new(const char *network, int batch);
/* Frees the graph, its arena and every parameter's data. Accepts NULL. */
void tc_graph_free(tc_graph *g);

/* Builders. Each returns the new node id, or -1 on a shape error or out of memory (the graph is then
 * unusable; tc_graph_error() says why). Inputs are node ids. Parameters are declared by name and get data
 * only when the graph is later filled (tc_zoo_fill or tc_graph_load_params). */
int tc_graph_input(tc_graph *g, int c, int h, int w);
int tc_graph_conv(tc_graph *g, const char *name, int x, int oc, int kh, int kw, int sh, int sw, int ph,
                  int pw, int groups, int bias);
int tc_graph_bn(tc_graph *g, const char *name, int x, float eps);
int tc_graph_relu(tc_graph *g, int x);
int tc_graph_clip(tc_graph *g, int x, float lo, float hi);
int tc_graph_add(tc_graph *g, int a, int b);
int tc_graph_max_pool(tc_graph *g, int x, int k, int s, int p, int ceil_mode);
int tc_graph_avg_pool(tc_graph *g, int x, int k, int s, int p, int count_include_pad);
int tc_graph_global_avg_pool(tc_graph *g, int x);
int tc_graph_adaptive_avg_pool(tc_graph *g, int x, int oh, int ow);
int tc_graph_concat(tc_graph *g, int n, const int *xs);
int tc_graph_flatten(tc_graph *g, int x);
int tc_graph_dense(tc_graph *g, const char *name, int x, int units, int bias);
int tc_graph_dropout(tc_graph *g, int x);
int tc_graph_softmax(tc_graph *g, int x);
/* Appends a parameter; returns its id or -1. */
int tc_graph_param(tc_graph *g, const char *name, int ndim, const int64_t *shape, int init, int fan_in);
/* Finds a parameter by name; -1 when absent. */
int tc_graph_find_param(const tc_graph *g, const char *name);
/* The first builder error, or "" (owned by the graph). */
const char *tc_graph_error(const tc_graph *g);

/* Elements of a node's output tensor. */
int64_t tc_tensor_numel(const tc_tensor *t);
/* Trainable parameters (running statistics excluded), counted from shapes, of the parameters in use. */
int64_t tc_graph_param_count(const tc_graph *g);
/* FLOPs of one inference: 2 per multiply-add of conv and dense layers (the convention torchvision and
 * AutoTVM report as "GFLOPs" x 2), other ops excluded. */
double tc_graph_flops(const tc_graph *g);
/* Allocates (arena) data for every parameter that has none. TH_ERR_NOMEM. */
th_status tc_graph_alloc_params(tc_graph *g);
/* Appends a JSON description of the graph (nodes with op, name, inputs, shape, layout block, attributes,
 * epilogue and workspace offset) to b. */
th_status tc_graph_to_json(const tc_graph *g, th_buf *b);

#endif
