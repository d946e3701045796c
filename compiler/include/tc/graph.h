/* tc_graph: the compiler's graph IR. A graph is a list of nodes in topological order (every node's inputs
 * come before it), each producing one tensor of up to 6 dimensions with a dtype (float32 or int64; CNN maps
 * are NCHW, optionally channel-blocked NCHW[cb]c after the layout pass), plus a table of named parameters
 * (torchvision / Hugging Face names) whose data may be absent when only shapes are needed (task extraction,
 * FLOP counts). A network has named inputs (INPUT nodes, in order) and named outputs (any nodes, in order).
 * Every builder infers its output's shape and records a clear error for a shape that does not fit. Strings
 * and parameter data live in the graph's arena; the node and parameter tables are owned by the graph and
 * freed by tc_graph_free. */
#ifndef TC_GRAPH_H
#define TC_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "th_buf.h"
#include "th_status.h"

#define TC_MAX_DIMS 6
#define TC_MAX_INPUTS 8 /* per node */
#define TC_MAX_IO 8     /* network inputs, and outputs */
#define TC_MAX_PARTS 4  /* parameters joined into one composite parameter */

/* Element types; the values equal tunehub_model.h's TH_DTYPE_*. */
typedef enum tc_dtype { TC_DTYPE_F32 = 0, TC_DTYPE_I64 = 1 } tc_dtype;
/* 4 or 8; 0 for an unknown dtype. */
size_t tc_dtype_size(int dtype);
/* "float32", "int64"; "unknown" otherwise. */
const char *tc_dtype_name(int dtype);

typedef enum tc_op {
  TC_OP_INPUT = 0,
  TC_OP_CONV2D,          /* groups, stride, pad, dilation; optional bias; fused epilogue later */
  TC_OP_BATCH_NORM,      /* inference batch norm: gamma, beta, running mean and var, eps */
  TC_OP_RELU,
  TC_OP_CLIP,            /* clamp to [clip_min, clip_max]; relu6 is clip(0, 6) */
  TC_OP_ADD,             /* element-wise add of two same-shape tensors (+ fused activation) */
  TC_OP_MAX_POOL,        /* pads never win; ceil_mode is expressed as extra bottom/right padding */
  TC_OP_AVG_POOL,        /* count_include_pad as in torch */
  TC_OP_GLOBAL_AVG_POOL, /* adaptive average pool to 1x1 */
  TC_OP_ADAPTIVE_AVG_POOL, /* adaptive average pool to (oh, ow), torch's bin rule */
  TC_OP_CONCAT,          /* along `axis` (1, the channels, for CNN maps) */
  TC_OP_FLATTEN,         /* [n, c, h, w] -> [n, c*h*w] */
  TC_OP_DENSE,           /* [..., k] x weight[m, k]^T (+ bias) -> [..., m] */
  TC_OP_DROPOUT,         /* identity at inference */
  TC_OP_SOFTMAX,         /* over the last axis, of alpha * x (+ inputs[1], an additive mask that
                            broadcasts to x, when ninputs == 2) */
  TC_OP_LAYOUT,          /* reorder NCHW[in cb]c -> NCHW[out cb]c; inserted by the layout pass */
  /* tensor ops (any rank up to TC_MAX_DIMS, plain row-major layout) */
  TC_OP_CONST,           /* a parameter used as a tensor (class token, position embedding): weight */
  TC_OP_MATMUL,          /* a [..., M, K] x b [..., K, N] -> [..., M, N], times alpha; trans_a/trans_b
                            mean the operand is stored [..., K, M] / [..., N, K]; equal leading dims */
  TC_OP_LAYER_NORM,      /* over the last axis: gamma, beta params, eps; after fusion inputs[1] is a
                            residual added before normalising (epilogue TC_EPI_RESIDUAL) */
  TC_OP_GELU,            /* erf form, torch's default */
  TC_OP_TANH,
  TC_OP_EMBEDDING,       /* int64 indices [...] -> [..., dim]: rows of weight [num, dim] */
  TC_OP_RESHAPE,         /* the same elements in a new shape (row-major): an alias, no kernel */
  TC_OP_TRANSPOSE,       /* output dim d is input dim perm[d] */
  TC_OP_SLICE,           /* along axis: elements begin, begin + step, ... < end (step >= 1) */
  TC_OP_MUL,             /* broadcast multiply (numpy rules); ADD also broadcasts */
  TC_OP_SUB,             /* broadcast a - b */
  TC_OP_DIV,             /* broadcast a / b */
  TC_OP_CAST,            /* int64 -> float32, or float32 -> int64 (truncated) */
  TC_OP_AFFINE,          /* x * alpha + shift, scalars (turns a 0/1 mask into an additive one) */
  TC_OP_EXPAND,          /* broadcast to a larger shape (numpy rules) */
  /* activations of imported CNNs (element-wise, any rank; fused into a producing conv or dense) */
  TC_OP_SIGMOID,         /* 1 / (1 + e^-x) */
  TC_OP_HARD_SIGMOID,    /* max(0, min(1, alpha * x + shift)): ONNX HardSigmoid's alpha and beta */
  TC_OP_HARD_SWISH,      /* x * max(0, min(1, x / 6 + 0.5)) */
  TC_OP_SILU,            /* x * sigmoid(x) (swish) */
  TC_OP_MATH,            /* element-wise math: the TC_UNARY_* in math, with alpha and shift
                            (ONNX Exp, Log, Elu, ...; never fused) */
  TC_OP_GATHER,          /* inputs[0] float data, inputs[1] int64 indices, along axis: ONNX Gather
                            (gather_elements 0) or GatherElements (1) */
  TC_OP_BINARY,          /* broadcast element-wise a op b: the TC_BINARY_* in math (MAX and after:
                            ONNX Max, Min, Pow, Mod, the comparisons as float 1/0) */
  TC_OP_REDUCE,          /* the TC_REDUCE_* in math over the last axis, which becomes 1 */
  TC_OP_SCATTER,         /* inputs float data, int64 indices, float updates along axis: ONNX
                            ScatterElements with the TC_SCATTER_* reduction in math */
  TC_OP_COUNT
} tc_op;

/* The op's name ("conv2d"); never NULL. */
const char *tc_op_name(tc_op op);
/* The TC_EPI_* flag (include/tc/workload.h) that an element-wise activation op becomes when fused into its
 * producer (relu, clip, gelu, tanh, sigmoid, hard sigmoid, hard swish, silu); 0 for any other op. */
int tc_op_activation(tc_op op);

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
  /* A composite (nparts > 0): the parameters parts[0 .. nparts), of equal shapes, concatenated
   * along dim 0 (a fused layer's weights or bias, tc_graph_param_concat). params.bin holds its
   * parts under their own names and never the composite; its data is theirs, copied when they have
   * data. */
  int nparts;
  int parts[TC_MAX_PARTS];
} tc_param;

enum { TC_INIT_WEIGHT = 0, TC_INIT_BIAS, TC_INIT_GAMMA, TC_INIT_BETA, TC_INIT_MEAN, TC_INIT_VAR,
       TC_INIT_DENSE_WEIGHT, TC_INIT_EMBED /* embeddings, class token, positions: uniform(+-0.1) */ };

typedef struct tc_tensor {
  int ndim;
  int shape[TC_MAX_DIMS]; /* logical shape: NCHW for CNN maps (or [n, k] after flatten) */
  int dtype;              /* TC_DTYPE_*; float32 unless an op says otherwise */
  int cb;                 /* channel block of the layout: 1 = plain NCHW / row-major */
  int64_t offset;         /* workspace offset in floats (4-byte units; an int64 element takes two) after
                             memory planning; -1 before */
} tc_tensor;

typedef struct tc_node {
  tc_op op;
  const char *name; /* arena string; the torchvision module path where there is one */
  int ninputs;
  int inputs[TC_MAX_INPUTS]; /* node ids; for a fused conv/dense, inputs[1] is the residual */
  tc_tensor out;
  /* conv / pool attributes */
  int oc, kh, kw, sh, sw, pt, pl, pb, pr, groups;
  /* conv: dilations (0 or 1: none), the kh x kw taps dil_h rows / dil_w columns apart */
  int dil_h, dil_w;
  int count_include_pad;
  int oh_target, ow_target; /* adaptive pool output */
  float clip_min, clip_max, eps;
  int epilogue;             /* TC_EPI_* (workload.h) after fusion */
  int weight, bias;         /* param ids or -1 */
  int gamma, beta, mean, var; /* batch norm param ids */
  int dead;                 /* removed by a pass; skipped everywhere */
  /* tensor op attributes */
  int perm[TC_MAX_DIMS];    /* transpose */
  int axis, begin, end, step; /* slice (axis also concat) */
  int trans_a, trans_b;     /* matmul */
  int math;                 /* TC_OP_MATH: its TC_UNARY_*; TC_OP_BINARY: its TC_BINARY_*; TC_OP_REDUCE:
                               its TC_REDUCE_* (workload.h) */
  int gather_elements;      /* TC_OP_GATHER: GatherElements (else Gather) */
  int has_ignore, ignore;   /* TC_OP_GATHER: an index equal to `ignore` reads 0 */
  float alpha, shift;       /* matmul and softmax scale (1 when unset); affine x * alpha + shift; hard
                               sigmoid's alpha and beta (also on a conv or dense that fused one) */
} tc_node;

typedef struct tc_graph {
  th_arena *arena;
  const char *network; /* arena string */
  int batch, in_c, in_h, in_w;
  int nnodes, node_cap;
  tc_node *nodes; /* owned */
  int nparams, param_cap;
  tc_param *params; /* owned table; data in the arena */
  int ninputs, inputs[TC_MAX_IO];   /* INPUT node ids, in the network's order */
  int noutputs, outputs[TC_MAX_IO]; /* output node ids, in order (passes keep them current) */
  const char *output_names[TC_MAX_IO]; /* arena strings */
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
/* The CNN input "input": float32 [batch, c, h, w]. */
int tc_graph_input(tc_graph *g, int c, int h, int w);
/* A named input of any dtype and shape, rank 0..TC_MAX_DIMS (shape[0] is usually the batch). */
int tc_graph_input_tensor(tc_graph *g, const char *name, int dtype, int ndim, const int *shape);
/* Appends node x to the network's outputs under `name`; returns x, or -1 (too many, bad id, duplicate
 * name). A graph without any output gets its last node as "output" from tc_graph_finish. */
int tc_graph_output(tc_graph *g, const char *name, int x);
/* Checks that the graph has inputs and outputs (naming its last node "output" when none was declared).
 * Builders call it last. TH_OK, or TH_ERR_INVALID with tc_graph_error set. */
th_status tc_graph_finish(tc_graph *g);
int tc_graph_conv(tc_graph *g, const char *name, int x, int oc, int kh, int kw, int sh, int sw, int ph,
                  int pw, int groups, int bias);
int tc_graph_bn(tc_graph *g, const char *name, int x, float eps);
int tc_graph_relu(tc_graph *g, int x);
int tc_graph_clip(tc_graph *g, int x, float lo, float hi);
/* Broadcast add (numpy rules); CNN residuals have equal shapes. */
int tc_graph_add(tc_graph *g, int a, int b);
int tc_graph_max_pool(tc_graph *g, int x, int k, int s, int p, int ceil_mode);
int tc_graph_avg_pool(tc_graph *g, int x, int k, int s, int p, int count_include_pad);
int tc_graph_global_avg_pool(tc_graph *g, int x);
int tc_graph_adaptive_avg_pool(tc_graph *g, int x, int oh, int ow);
int tc_graph_concat(tc_graph *g, int n, const int *xs);
int tc_graph_flatten(tc_graph *g, int x);
/* Dense over the last axis of any rank: parameters "<name>.weight" [units, k] and "<name>.bias". */
int tc_graph_dense(tc_graph *g, const char *name, int x, int units, int bias);
/* The same with explicit parameter names (bias_name NULL: no bias), e.g. torch's in_proj_weight. */
int tc_graph_dense_named(tc_graph *g, const char *name, int x, int units, const char *weight_name,
                         const char *bias_name);
int tc_graph_dropout(tc_graph *g, int x);
int tc_graph_softmax(tc_graph *g, int x);

/* Tensor ops. Shapes follow torch; each returns the node id or -1 with a clear error. */
/* A parameter of the given shape used as a tensor (init: TC_INIT_*). */
int tc_graph_const(tc_graph *g, const char *name, int ndim, const int64_t *shape, int init, int fan_in);
int tc_graph_matmul(tc_graph *g, int a, int b, int trans_a, int trans_b, float alpha);
/* Layer norm over the last axis: parameters "<name>.weight" and "<name>.bias" [last dim]. */
int tc_graph_layer_norm(tc_graph *g, const char *name, int x, float eps);
int tc_graph_gelu(tc_graph *g, int x);
int tc_graph_tanh(tc_graph *g, int x);
/* Gathers rows of "<name>.weight" [num, dim] by the int64 tensor idx: [...] -> [..., dim]. */
int tc_graph_embedding(tc_graph *g, const char *name, int idx, int num, int dim);
/* One entry of shape may be -1 (inferred). */
int tc_graph_reshape(tc_graph *g, int x, int ndim, const int *shape);
int tc_graph_transpose(tc_graph *g, int x, const int *perm);
/* Negative axis counts from the end; begin/end are clamped to the axis as in Python; step >= 1. */
int tc_graph_slice(tc_graph *g, int x, int axis, int begin, int end, int step);
/* x[..., index, ...] along axis, which disappears (a slice of one and a reshape). */
int tc_graph_select(tc_graph *g, int x, int axis, int index);
/* Concat along any axis; all other dims equal. */
int tc_graph_concat_axis(tc_graph *g, int n, const int *xs, int axis);
int tc_graph_mul(tc_graph *g, int a, int b);
int tc_graph_sub(tc_graph *g, int a, int b);
int tc_graph_div(tc_graph *g, int a, int b);
/* softmax(alpha * x + mask) over the last axis; mask -1 for none, else a float tensor that broadcasts. */
int tc_graph_softmax_ex(tc_graph *g, int x, float alpha, int mask);
int tc_graph_cast(tc_graph *g, int x, int dtype);
int tc_graph_affine(tc_graph *g, int x, float alpha, float shift);
int tc_graph_expand(tc_graph *g, int x, int ndim, const int *shape);
/* Element-wise activations (float32, the input's shape): sigmoid 1 / (1 + e^-x); hard sigmoid
 * max(0, min(1, alpha * x + beta)) (ONNX HardSigmoid; torch's hardsigmoid is alpha 1/6, beta 0.5;
 * alpha and beta must be finite); hard swish x * max(0, min(1, x / 6 + 0.5)); silu x * sigmoid(x). */
int tc_graph_sigmoid(tc_graph *g, int x);
int tc_graph_hard_sigmoid(tc_graph *g, int x, float alpha, float beta);
int tc_graph_hard_swish(tc_graph *g, int x);
int tc_graph_silu(tc_graph *g, int x);
/* Element-wise math (float32, the input's shape): the TC_UNARY_* op math (EXP and after in
 * workload.h), with its alpha and beta (finite); -1 and an error for another op. */
int tc_graph_math(tc_graph *g, int x, int math, float alpha, float beta);
/* Gathers float32 data along axis by the int64 tensor idx (a negative index counts from the end of
 * the axis; one outside [-len, len) reads 0, as does one equal to ignore when has_ignore). Gather
 * (elements 0): the output is data's dims before axis, idx's dims, data's dims after axis (rank at
 * most TC_MAX_DIMS). GatherElements (elements 1): idx has data's rank, each dim but axis at most
 * data's, and the output has idx's shape: out[i] = data[i with axis replaced by idx[i]]. */
int tc_graph_gather(tc_graph *g, int data, int idx, int axis, int elements, int has_ignore,
                    int ignore);
/* ScatterElements: data (float32) with the float32 updates folded in where the int64 tensor idx
 * (updates' shape; data's rank and dims but on axis) points along axis (negative from the end; one
 * outside [-len, len) lands nowhere), in index order, by the TC_SCATTER_* reduction red (NONE
 * replaces, so the last duplicate wins). The output has data's shape. */
int tc_graph_scatter(tc_graph *g, int data, int idx, int upd, int axis, int red);
/* Broadcast element-wise a op b (numpy rules): the TC_BINARY_* op (workload.h) of float32 a and b
 * (MAX and after but MOD; add, mul, sub and div have their builders), or of int64 a and b (any op;
 * a is a float32 mask for TAKE and LEAVE), giving int64 but for the comparisons' float32
 * 0/1; -1 and an error for another op or dtype. */
int tc_graph_binary(tc_graph *g, int a, int b, int op);
/* Whether an op of g can give NaN or infinity on some finite inputs (log, sqrt, reciprocal,
 * division, pow, fmod, sinh, cosh, acosh, atanh, tan, asin, acos, the log-sum and product
 * reductions): a non-finite output of a build's timing run is then no sign of a broken kernel. */
int tc_graph_nonfinite(const tc_graph *g);
/* The TC_REDUCE_* op (workload.h) over the last axis of float32 x, kept as an axis of 1 (ONNX's
 * Reduce* over other axes move them last first; ArgMax and ArgMin give int64); -1 and an error for
 * another op. */
int tc_graph_reduce(tc_graph *g, int x, int op);
/* Appends a parameter; returns its id or -1. */
int tc_graph_param(tc_graph *g, const char *name, int ndim, const int64_t *shape, int init, int fan_in);
/* Appends a composite parameter `name`: the n (2..TC_MAX_PARTS) parameters parts, none composite,
 * all of one shape, concatenated along dim 0. It has data at once when all of them have data, else
 * when tc_graph_concat_params runs after they get some. Returns its id, or -1 (a bad part, or out
 * of memory; tc_graph_error says which). */
int tc_graph_param_concat(tc_graph *g, const char *name, int n, const int *parts);
/* Gives every composite parameter whose parts all have data a copy of them (allocated once). The
 * fillers (tc_zoo_fill, tc_graph_alloc_params, tc_params_load) call it last. TH_ERR_NOMEM. */
th_status tc_graph_concat_params(tc_graph *g);
/* Finds a parameter by name; -1 when absent. */
int tc_graph_find_param(const tc_graph *g, const char *name);
/* The first builder error, or "" (owned by the graph). */
const char *tc_graph_error(const tc_graph *g);

/* Elements of a node's output tensor. */
int64_t tc_tensor_numel(const tc_tensor *t);
/* Bytes of a tensor: numel x the dtype's size. */
int64_t tc_tensor_bytes(const tc_tensor *t);
/* Trainable parameters (running statistics excluded), counted from shapes, of the parameters in
 * use; a composite's elements are its parts', counted once. */
int64_t tc_graph_param_count(const tc_graph *g);
/* FLOPs of one inference: 2 per multiply-add of conv, dense and matmul nodes (the convention torchvision
 * and AutoTVM report as "GFLOPs" x 2), other ops excluded. */
double tc_graph_flops(const tc_graph *g);
/* Allocates (arena) data for every parameter that has none (a composite gets its parts').
 * TH_ERR_NOMEM. */
th_status tc_graph_alloc_params(tc_graph *g);
/* Appends a JSON description of the graph (nodes with op, name, inputs, shape, layout block, attributes,
 * epilogue and workspace offset) to b. */
th_status tc_graph_to_json(const tc_graph *g, th_buf *b);

#endif
