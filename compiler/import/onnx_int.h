/* Internals of the ONNX importer, shared by its files: onnx.c (parsing, the import loop, finishing
 * the graph, info), onnx_check.c (validation, the value table, evaluation order, inputs),
 * onnx_values.c (errors, value look-ups and bindings, parameters), onnx_args.c (node attributes and
 * the per-opset decoding of axes, shapes, slices and splits that folding and conversion share),
 * onnx_tensor.c and onnx_fold*.c (constant tensors: decoding and evaluation at import; their own
 * shared helpers are in onnx_fold_int.h), onnx_ops.c (one converter per op onto the graph builders)
 * and onnx_match.c (decomposed layer norm and gelu, scale and mask absorption). Nothing here is
 * public. */
#ifndef TC_ONNX_INT_H
#define TC_ONNX_INT_H

#include <math.h>
#include <stdint.h>

#include "onnx.h"
#include "onnx/onnx.pb-c.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "raw_data of ONNX tensors is little-endian; this importer reads it in place"
#endif

#define TC__OX_RANK 8 /* the most dimensions of any tensor in a file we accept */
#define TC__OX_FOLD_MAX ((int64_t)1 << 20) /* elements of one tensor computed at import */
#define TC__OX_FOLD_TOTAL                                                       \
  ((int64_t)1 << 26) /* elements computed at import over the whole file: a bomb \
                         of small nodes with large constant results stops here */
#define TC__OX_SMALL                                                                     \
  64 /* float initializers up to this many elements fold like constants; larger ones are \
        weights, kept as parameters (never copied through a fold) */

/* double -> float without undefined behaviour: out of range is +-infinity, as IEEE rounding would
 * give. */
static inline float tc__ox_f32(double v) {
  return v > 3.4028234663852886e38    ? (float)INFINITY
         : v < -3.4028234663852886e38 ? -(float)INFINITY
                                      : (float)v;
}

/* What an ONNX tensor name stands for during the import. */
enum {
  TC__OX_UNSET = 0, /* not produced yet */
  TC__OX_CONST,     /* a constant known at import (initializer, Constant, folded) */
  TC__OX_NODE,      /* a graph node's output */
  TC__OX_BAD,       /* depends on an unsupported node: conversion goes on to list every such node */
  TC__OX_PAD,       /* a zero Pad whose padding the consuming Conv/AveragePool takes over */
};

/* A constant tensor. Integer and bool types are held as int64, float types (float, double, float16)
 * as float. Data is borrowed from the parsed model where its layout allows (raw little-endian
 * floats and int64s, float_data, int64_data), else owned by the import's arena. */
typedef struct tc__oxc {
  int type; /* ONNX__TENSOR_PROTO__DATA_TYPE__* */
  int fl;   /* float family: data in f; else in i */
  int ndim;
  int64_t dims[TC__OX_RANK];
  int64_t n;
  const float *f;
  const int64_t *i;
  int src; /* the value whose exact tensor this is (an initializer seen through Identity/Dropout),
              or self */
} tc__oxc;

typedef struct tc__oxv {
  const char *name;
  int kind;     /* TC__OX_* */
  int producer; /* index of the file's node that produces it, -1 for inputs and initializers */
  int init;     /* initializer index, -1 */
  int uses;     /* node inputs reading it, plus graph outputs */
  int cons0; /* consumers: cons[cons0 .. cons0 + ncons) of tc__ox, node indices (once per node) */
  int ncons;
  int is_output;
  int node;  /* NODE: its graph node; CONST: the graph node materialising it, or -1; PAD: the input
              */
  int param; /* the first graph parameter made from this value's data (tc__ox_pinfo.next chains), -1
              */
  int mark;  /* scratch for one pass over the nodes */
  tc__oxc c; /* CONST */
  int pads[4]; /* PAD: top, left, bottom, right */
} tc__oxv;

typedef struct tc__ox_unsup {
  const Onnx__NodeProto *node;
  char why[160]; /* "" for an op type the importer does not know */
} tc__ox_unsup;

/* Where a graph parameter's data comes from. */
typedef struct tc__ox_pinfo {
  int src;     /* the value whose data it holds (an initializer), or -1 */
  int mat;     /* the constant value it materialises (TC_OP_CONST), or -1 */
  int next;    /* the next parameter made from the same source, or -1 */
  int trans;   /* the data is the source's 2-D transpose */
  float scale; /* ... times this */
} tc__ox_pinfo;

typedef struct tc__ox {
  const Onnx__ModelProto *m;
  const Onnx__GraphProto *gp;
  const tc_onnx_opts *opts;
  int64_t opset;
  tc_graph *g;
  th_arena *arena; /* the import's scratch: tables, converted and folded tensors */
  tc__oxv *vals;
  int nvals;
  int *slots; /* name hash table: value index or -1 */
  uint32_t nslots;
  int *cons;           /* consumer lists (see tc__oxv.cons0) */
  int *order;          /* file node indices in evaluation order */
  unsigned char *done; /* per file node: converted, or absorbed by a pattern */
  tc__ox_unsup *unsup;
  int nunsup, unsup_cap;
  tc__ox_pinfo *pinfo; /* per graph parameter */
  int pcap;
  int64_t fold_total; /* elements computed by folds so far */
  int file_batch;     /* the first dimension of the first input as the file fixes it, or 0 */
  char *err;
  size_t errlen;
  int failed; /* err holds the first fatal error */
  tc_onnx_info info;
} tc__ox;

/* ---- onnx_values.c: errors, values, outputs, parameters
 * --------------------------------------------- */

/* The string or "" (protobuf-c leaves absent strings NULL). */
const char *tc__ox_s(const char *s);
/* The node's name, else its first output's, else "?" (for messages). */
const char *tc__ox_nname(const Onnx__NodeProto *n);
/* Records the first fatal error (the message is kept only for the first) and returns rc. */
th_status tc__ox_fail(tc__ox *x, th_status rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same, prefixed "node 'NAME' (OP): ". */
th_status tc__ox_nfail(tc__ox *x, const Onnx__NodeProto *n, th_status rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Lists n as unsupported (why: a reason, "" when the op type is unknown) and marks its outputs bad,
 * so the import goes on and lists every such node. Returns TH_OK, or TH_ERR_NOMEM. */
th_status tc__ox_unsupported(tc__ox *x, const Onnx__NodeProto *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The value named s, or NULL. */
tc__oxv *tc__ox_find(tc__ox *x, const char *s);
/* Input k of n, or NULL when absent (past the end, or the empty name of an omitted optional input).
 */
tc__oxv *tc__ox_in(tc__ox *x, const Onnx__NodeProto *n, int k);
/* Output k of n, or NULL when absent or unnamed (an output nobody asked for). */
tc__oxv *tc__ox_out(tc__ox *x, const Onnx__NodeProto *n, int k);
/* The file node index of n's single consumer of output k, or -1 (none, several, or a graph output).
 */
int tc__ox_sole_consumer(tc__ox *x, const tc__oxv *v);
/* Binds output k of n to graph node id (checking the build: id < 0 fails with the graph's error).
 */
th_status tc__ox_set_node(tc__ox *x, const Onnx__NodeProto *n, int k, int id);
/* Binds value v to graph node id: the same, for outputs of nodes absorbed by a pattern. */
th_status tc__ox_bind_node(tc__ox *x, const Onnx__NodeProto *n, tc__oxv *v, int id);
/* The graph node of value v: a NODE's own, a float CONST materialised as a parameter (TC_OP_CONST,
 * named as the value), or an error (an integer constant, a rank the graph cannot hold). */
th_status tc__ox_tensor(tc__ox *x, const Onnx__NodeProto *n, tc__oxv *v, int *id);
/* An int64 constant as a runtime int64 tensor (a graph output such as Shape's): float32 parameter
 * data cast to int64 when the graph runs, so its values must lie within +-2^24 (refused naming the
 * value otherwise). *id -1 where it was listed as unsupported. */
th_status tc__ox_int_tensor(tc__ox *x, const Onnx__NodeProto *n, tc__oxv *v, int *id);
/* The dimensions of a CONST or NODE value; returns its rank. */
int tc__ox_dims(const tc__ox *x, const tc__oxv *v, int64_t *dims);
/* Makes graph parameter *slot hold constant v (its data, transposed when trans (2-D), times scale),
 * named as the initializer it comes from. A parameter already made from the same source and form is
 * shared
 * (*slot then points to it). The builder's shape must match. */
th_status tc__ox_bind_param(tc__ox *x, const Onnx__NodeProto *n, int *slot, const tc__oxv *v,
                            int trans, float scale);
/* Fills parameter pid (made by a builder, e.g. layer-norm gamma without an affine) with value
 * `fill`. */
th_status tc__ox_fill_param(tc__ox *x, int pid, float fill);
/* A graph-safe name for builders from the node ("" -> its output's), truncated to fit parameter
 * names. */
const char *tc__ox_gname(tc__ox *x, const Onnx__NodeProto *n, char *buf, size_t len);

/* Marks n's outputs bad (TC__OX_BAD): what reads them is not converted either. */
void tc__ox_poison(tc__ox *x, const Onnx__NodeProto *n);
/* FNV-1a of s, for the name table. */
uint32_t tc__ox_hash(const char *s);
/* Adds a value named s; -1 when the name is taken (the caller decides whether that is an error). */
int tc__ox_add(tc__ox *x, const char *s);

/* ---- onnx_check.c: before any node is converted
 * ----------------------------------------------------- */

/* Validates the model as a whole (its graph, opsets, domains, node and initializer counts); fails
 * naming the first fault. */
th_status tc__ox_check_model(tc__ox *x);
/* Builds the value table: initializers decoded, graph inputs and node outputs named (each once),
 * every node input resolved. */
th_status tc__ox_values(tc__ox *x);
/* Orders the nodes into x->order (Kahn's algorithm; constant-only nodes first); fails on a cycle.
 */
th_status tc__ox_sort(tc__ox *x);
/* Declares the graph's runtime inputs with the shapes the options give or the file fixes. */
th_status tc__ox_inputs(tc__ox *x);

/* Helpers that find a node unsupported report it (tc__ox_unsupported) and return TH_OK; the caller
 * sees the list grow and stops converting that node. */
#define TC__OX_REPORTED(x, before) ((x)->nunsup != (before))

/* ---- onnx_args.c: attributes and shared argument decoding
 * ------------------------------------------- */

const Onnx__AttributeProto *tc__ox_attr(const Onnx__NodeProto *n, const char *name);
/* Integer / float / string attributes with a default; a present attribute of the wrong type fails.
 */
th_status tc__ox_attr_i(tc__ox *x, const Onnx__NodeProto *n, const char *name, int64_t def,
                        int64_t *out);
th_status tc__ox_attr_f(tc__ox *x, const Onnx__NodeProto *n, const char *name, float def,
                        float *out);
th_status tc__ox_attr_s(tc__ox *x, const Onnx__NodeProto *n, const char *name, const char *def,
                        char *out, size_t len);
/* An INTS attribute of at most max values: *count = -1 when absent. */
th_status tc__ox_attr_ints(tc__ox *x, const Onnx__NodeProto *n, const char *name, int64_t *out,
                           int max, int *count);
/* Integer values of a constant input (1-D or scalar) of at most max values; *count = -1 when the
 * input is absent; a runtime input is unsupported (reported, *count = -2). */
th_status tc__ox_const_ints(tc__ox *x, const Onnx__NodeProto *n, int k, int64_t *out, int max,
                            int *count);
/* axes (or another list) taken from attribute `attr` below opset `since`, else from input k. */
th_status tc__ox_list(tc__ox *x, const Onnx__NodeProto *n, const char *attr, int k, int64_t since,
                      int64_t *out, int max, int *count);
/* axis in [-rank, rank) to [0, rank); fails naming the node. */
th_status tc__ox_axis(tc__ox *x, const Onnx__NodeProto *n, int64_t axis, int rank, int *out);
/* Numpy broadcast of two shapes; 0 when they do not broadcast. */
int tc__ox_bcast(const int64_t *a, int ra, const int64_t *b, int rb, int64_t *out, int *rank);
/* Output dimensions of Reshape/Flatten/Squeeze/Unsqueeze/Transpose for node n on input dims. */
th_status tc__ox_reshape_dims(tc__ox *x, const Onnx__NodeProto *n, const int64_t *in, int rin,
                              int64_t *out, int *rout);
/* The permutation of a Transpose of rank `rank`. */
th_status tc__ox_perm(tc__ox *x, const Onnx__NodeProto *n, int rank, int *perm);
/* A Slice's normalised ranges per dimension (begin, end, step, as Python/ONNX clamp them). */
typedef struct tc__ox_range {
  int64_t begin, end, step;
} tc__ox_range;
th_status tc__ox_slice_args(tc__ox *x, const Onnx__NodeProto *n, const int64_t *dims, int rank,
                            tc__ox_range *r);
/* Elements of a normalised range. */
int64_t tc__ox_range_len(const tc__ox_range *r);
/* A Split's axis and the size of each output. */
th_status tc__ox_split_args(tc__ox *x, const Onnx__NodeProto *n, const int64_t *dims, int rank,
                            int *axis, int64_t *sizes, int nout);
/* Padding of a Conv or pool: pads[4] = top, left, bottom, right, from pads/auto_pad. */
th_status tc__ox_window_pads(tc__ox *x, const Onnx__NodeProto *n, const int64_t *in_hw,
                             const int64_t *k, const int64_t *s, int64_t *pads);
/* The same over r spatial axes (in, k, s: r values each): pads[2r] = the r begins, then the r ends.
 */
th_status tc__ox_window_pads_n(tc__ox *x, const Onnx__NodeProto *n, const int64_t *in,
                               const int64_t *k, const int64_t *s, int r, int64_t *pads);

/* ---- onnx_tensor.c, onnx_fold.c: constant tensors
 * ----------------------------------------------------- */

/* Decodes tensor t (an initializer or a Constant's value; `what` names it in errors) into c. */
th_status tc__ox_decode(tc__ox *x, const Onnx__TensorProto *t, const char *what, tc__oxc *c);
/* Evaluates node n when its inputs allow (every input constant, the result small enough, no weight
 * copied): *done = 1 with the outputs set to constants, or *done = 0 for the converters to map it.
 */
th_status tc__ox_fold(tc__ox *x, const Onnx__NodeProto *n, int *done);
/* Whether op_type is one that folding knows. */
int tc__ox_foldable(const char *op_type);
/* The float value of a one-element constant, or 0 when v is not one. */
int tc__ox_scalar(const tc__oxv *v, double *out);

/* ---- onnx_ops.c: converters
 * ------------------------------------------------------------------------- */

typedef th_status (*tc__ox_conv_fn)(tc__ox *x, const Onnx__NodeProto *n);
/* The output of graph node id. */
const tc_tensor *tc__ox_t(tc__ox *x, int id);
/* Dims of graph node id as int64; returns its rank. */
int tc__ox_tdims(tc__ox *x, int id, int64_t *dims);
/* Input k as a graph node (constants materialised): *id = -1 when it was reported unsupported. */
th_status tc__ox_node_in(tc__ox *x, const Onnx__NodeProto *n, int k, int *id);
/* The same for a float input: an int64 one is reported unsupported. */
th_status tc__ox_float_in(tc__ox *x, const Onnx__NodeProto *n, int k, int *id);
/* x * alpha + shift, merged into a producing affine (onnx_ops.c). */
int tc__ox_affine(tc__ox *x, int id, float alpha, float shift);
/* A float weight behind value v (a constant, or the transpose of a materialised one: *trans
 * toggled), copied into *w; 0 when v is no such weight (onnx_ops.c). */
int tc__ox_weight(tc__ox *x, const tc__oxv *v, tc__oxv *w, int *trans);
/* Converters of element-wise ops (onnx_ops_elem.c), linear layers (onnx_ops_linear.c) and views
 * (onnx_ops_view.c); the table in onnx_ops.c maps op types onto them. */
th_status tc__ox_c_unary(tc__ox *x, const Onnx__NodeProto *n);
th_status tc__ox_c_identity(tc__ox *x, const Onnx__NodeProto *n);
th_status tc__ox_c_clip(tc__ox *x, const Onnx__NodeProto *n);
th_status tc__ox_c_binary(tc__ox *x, const Onnx__NodeProto *n);
th_status tc__ox_c_math(tc__ox *x, const Onnx__NodeProto *n);
th_status tc__ox_c_gemm(tc__ox *x, const Onnx__NodeProto *n);
th_status tc__ox_c_matmul(tc__ox *x, const Onnx__NodeProto *n);
th_status tc__ox_c_reshape(tc__ox *x, const Onnx__NodeProto *n);
th_status tc__ox_c_transpose(tc__ox *x, const Onnx__NodeProto *n);
th_status tc__ox_c_concat(tc__ox *x, const Onnx__NodeProto *n);
th_status tc__ox_c_split(tc__ox *x, const Onnx__NodeProto *n);
th_status tc__ox_c_slice(tc__ox *x, const Onnx__NodeProto *n);
th_status tc__ox_c_cast(tc__ox *x, const Onnx__NodeProto *n);
th_status tc__ox_c_expand(tc__ox *x, const Onnx__NodeProto *n);
/* Inputs k0 and k1 of an arithmetic op as graph nodes of one dtype: float32, or int64 (runtime
 * tensors kept exact; an int64 constant through tc__ox_int_tensor); *a = *b = -1 when reported. */
th_status tc__ox_num_ins(tc__ox *x, const Onnx__NodeProto *n, int k0, int k1, int *a, int *b);
/* Node id reshaped to dims[0 .. r) (id itself when they are its dims), bound to n: *out = -1 when
 * the graph cannot hold the result (reported). */
th_status tc__ox_reshape_node(tc__ox *x, const Onnx__NodeProto *n, int id, const int64_t *dims,
                              int r, int *out);
/* Sets a conv or pool node's window (onnx_ops.c): kernel k and strides s (height, width), pads
 * (top, left, bottom, right) and its output's height oh and width ow. */
void tc__ox_set_window(tc_node *nd, const int64_t *k, const int64_t *s, const int64_t *pads,
                       int64_t oh, int64_t ow);
/* A 2-D max or average pool (onnx_ops.c) of node `in` [N, C, H, W] with kernel k, strides s and
 * pads (top, left, bottom, right; ceil_mode widens the end pads), bound to n: *out = -1 when
 * reported. */
th_status tc__ox_pool_node(tc__ox *x, const Onnx__NodeProto *n, int in, int is_max,
                           const int64_t *k, const int64_t *s, int64_t *pads, int ceil_mode,
                           int cip, int *out);
/* onnx_ops_conv.c: *id mapped along axis a by the constant matrix A [m, K] (and bias [m], or NULL):
 * one dense over the last axis, between transposes for another axis (A, bias: in the graph's
 * arena). */
th_status tc__ox_axis_map(tc__ox *x, const Onnx__NodeProto *n, int *id, int a, int m, float *A,
                          float *bias, const char *tag);
/* onnx_ops_conv3d.c: Conv, MaxPool and AveragePool over [N, C, D, H, W] maps, by 2-D kernels. */
th_status tc__ox_conv3d(tc__ox *x, const Onnx__NodeProto *n);
th_status tc__ox_pool3d(tc__ox *x, const Onnx__NodeProto *n, int is_max);
/* A MaxPool with dilations of node in [N, C, H, W]: k the dilated extents, s strides, dil
 * dilations, pads (top, left, ...), o the output's [H, W]; by undilated pools of strided slices
 * (onnx_ops_conv3d.c). *out = -1 when reported. */
th_status tc__ox_dilated_max_pool(tc__ox *x, const Onnx__NodeProto *n, int in, const int64_t *k,
                                  const int64_t *s, const int64_t *dil, const int64_t *pads,
                                  const int64_t *o, int *out);
/* onnx_ops_reduce.c: ReduceSum, ReduceMean, ReduceMax, ... at every opset. */
th_status tc__ox_c_reduce(tc__ox *x, const Onnx__NodeProto *n);
/* Node a with the axes in mask (of its rank) reduced by op into one value each, in *out (keepdims:
 * the reduced axes kept as 1). A mask of 0 reduces over a new trailing axis of one (ONNX's
 * noop_with_empty_axes, where LogSum still takes the log). */
th_status tc__ox_reduce_axes(tc__ox *x, const Onnx__NodeProto *n, int a, int mask, int op, int keep,
                             int *out);
/* ArgMax, ArgMin (int64 results). */
th_status tc__ox_c_arg(tc__ox *x, const Onnx__NodeProto *n);
/* LayerNormalization over any axis. */
th_status tc__ox_c_layer_norm(tc__ox *x, const Onnx__NodeProto *n);
/* InstanceNormalization (over the spatial axes of each channel). */
th_status tc__ox_c_instance_norm(tc__ox *x, const Onnx__NodeProto *n);
/* The converter of op_type, or NULL (unknown to the importer, or only ever folded). */
tc__ox_conv_fn tc__ox_converter(const char *op_type);
/* The opsets [*lo, *hi] whose semantics op's converter or folding rule implements; 0 when op
 * declares none (onnx.c's table). */
int tc__ox_opset_range(const char *op, int64_t *lo, int64_t *hi);
/* Opset 6's binary broadcast (Add, Sub, Mul, Div, Pow, Equal, Less, Greater, And, Or, Xor below
 * opset 7): with attribute broadcast = 1, B (bdims, rank rb) is aligned with A (rank ra) from
 * attribute axis (default: its trailing dimensions), so *out gets B's dims padded with 1s to rank
 * ra (*rout = ra); with broadcast = 0 the shapes must be equal, or of one rank and numpy-compatible
 * (the batch the import puts in place of a file's first dimension can make equal shapes differ),
 * and *out = B's. From opset 7 on *out = B's dims unchanged (numpy broadcasting). TH_ERR_INVALID
 * (reported on n) for an axis or shape the rule refuses. */
th_status tc__ox_legacy_bcast(tc__ox *x, const Onnx__NodeProto *n, const int64_t *adims, int ra,
                              const int64_t *bdims, int rb, int64_t *out, int *rout);

/* Shared converter helpers (onnx_ops.c): the output tensor of graph node id; input k as a graph
 * node (constants materialised; *id = -1 when reported unsupported); the same, reporting an int64
 * tensor; node id's dims as int64 (returns the rank); node id reshaped to dims (no node when they
 * are its own; a rank or size the graph cannot hold is reported, *out = -1). */
const tc_tensor *tc__ox_t(tc__ox *x, int id);
th_status tc__ox_node_in(tc__ox *x, const Onnx__NodeProto *n, int k, int *id);
th_status tc__ox_float_in(tc__ox *x, const Onnx__NodeProto *n, int k, int *id);
int tc__ox_tdims(tc__ox *x, int id, int64_t *dims);
th_status tc__ox_reshape_node(tc__ox *x, const Onnx__NodeProto *n, int id, const int64_t *dims,
                              int r, int *out);

/* ---- onnx_ops_index.c: softmax family, gathers and scatters, losses, TopK
 * ----------------------------------------------------- */

/* Softmax and LogSoftmax over any axis (opset < 13: the input coerced to 2-D at axis). */
th_status tc__ox_c_softmax(tc__ox *x, const Onnx__NodeProto *n);
/* Gather (constant indices as a slice, rows of a constant table as an embedding, else the gather
 * family) and GatherElements. */
th_status tc__ox_c_gather(tc__ox *x, const Onnx__NodeProto *n);
/* NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: a gather of the target's class, weights
 * gathered the same way, sums as products with ones. */
th_status tc__ox_c_loss(tc__ox *x, const Onnx__NodeProto *n);
/* onnx_ops_scatter.c: ScatterElements (reductions) and Scatter by runtime int64 indices. */
th_status tc__ox_c_scatter(tc__ox *x, const Onnx__NodeProto *n);
/* Tile by constant repeats (concats of copies). */
th_status tc__ox_c_tile(tc__ox *x, const Onnx__NodeProto *n);
/* OneHot with constant depth and values (a broadcast comparison with 0..depth-1). */
th_status tc__ox_c_onehot(tc__ox *x, const Onnx__NodeProto *n);
/* TopK along any axis by ranks from broadcast comparisons (values and int64 indices). */
th_status tc__ox_c_topk(tc__ox *x, const Onnx__NodeProto *n);

/* ---- onnx_ops_conv.c: the convolution family and resampling
 * ------------------------------------------------ */

/* The most elements the expanded weights of a ConvTranspose (or a resampling matrix) take. */
#define TC__OX_CONV_EXPAND_MAX (64 * 1024 * 1024)
th_status tc__ox_c_conv_transpose(tc__ox *x, const Onnx__NodeProto *n);
th_status tc__ox_c_resize(tc__ox *x, const Onnx__NodeProto *n);
th_status tc__ox_c_depth_to_space(tc__ox *x, const Onnx__NodeProto *n);
th_status tc__ox_c_prelu(tc__ox *x, const Onnx__NodeProto *n);
th_status tc__ox_c_global_max_pool(tc__ox *x, const Onnx__NodeProto *n);
/* Pad of node a by p (begins, then ends; negative ones crop) in mode constant (val), reflect, edge
 * or wrap: a 0/1 matrix per padded axis (a dense, the constant as its bias). Sets n's output. */
th_status tc__ox_pad_maps(tc__ox *x, const Onnx__NodeProto *n, int a, const int64_t *p,
                          const char *mode, float val);

/* ---- onnx_ops_binary.c: element-wise binary math and comparisons
 * ------------------------------------------------ */

/* Max, Min, Sum, Mean, Pow, Mod, Equal, Less, Greater, LessOrEqual, GreaterOrEqual, And, Or, Xor,
 * Not. */
th_status tc__ox_c_binary_math(tc__ox *x, const Onnx__NodeProto *n);

/* ---- onnx_ops_elem.c: element-wise tests and Where
 * ------------------------------------------------------------ */

/* IsNaN and IsInf (detect_positive, detect_negative): 1.0 where true, 0.0 where not. */
th_status tc__ox_c_is_special(tc__ox *x, const Onnx__NodeProto *n);
/* Where(c, x, y) with broadcasting: c ? x : y exactly (inf and NaN of the other side unseen). */
th_status tc__ox_c_where(tc__ox *x, const Onnx__NodeProto *n);

/* ---- onnx_ops_mask.c: masks and one-hots
 * ------------------------------------------------------------ */

/* A float constant of shape dims[0 .. r) named <node>.<tag>, bound to n: *id its node and *data
 * its zeroed data (in the graph's arena, the parameter's when the import loads weights); one of
 * more than 2^26 elements is reported unsupported (*id = -1). */
th_status tc__ox_mask_const(tc__ox *x, const Onnx__NodeProto *n, const char *tag, int r,
                            const int64_t *dims, int *id, float **data);
/* Trilu: a constant triangle mask of the last two dims (TAKE and LEAVE, as Where). */
th_status tc__ox_c_trilu(tc__ox *x, const Onnx__NodeProto *n);
/* Hardmax: ArgMax compared with a constant iota (opset < 13: over the input coerced to 2-D). */
th_status tc__ox_c_hardmax(tc__ox *x, const Onnx__NodeProto *n);

/* ---- onnx_ops_sample.c: local normalisations, shrinkage
 * ------------------------------------------------------------------------ */

/* Shrink (hard and soft, with bias) onto comparisons, TAKE and LEAVE. */
th_status tc__ox_c_shrink(tc__ox *x, const Onnx__NodeProto *n);
/* MeanVarianceNormalization over its axes, as ONNX's function body. */
th_status tc__ox_c_mvn(tc__ox *x, const Onnx__NodeProto *n);
/* LRN: a band matrix of ones times the squares sums each channel window. */
th_status tc__ox_c_lrn(tc__ox *x, const Onnx__NodeProto *n);
/* GridSample of a 4-D input (every mode, padding and align_corners) as gathers of taps. */
th_status tc__ox_c_grid_sample(tc__ox *x, const Onnx__NodeProto *n);

/* ---- onnx_ops_rnn.c: recurrent layers
 * ------------------------------------------------------------------------ */

/* LSTM, GRU and RNN (layout 0 and 1, every direction), unrolled over the static sequence length. */
th_status tc__ox_c_rnn(tc__ox *x, const Onnx__NodeProto *n);

/* ---- onnx_match.c: patterns
 * ------------------------------------------------------------------------- */

/* Tries the patterns anchored at file node k (decomposed layer norm, erf gelu): *matched = 1 when
 * they built the fused op and marked the nodes they absorbed done. */
th_status tc__ox_match(tc__ox *x, int k, int *matched);
/* Graph peepholes on a node about to be built: the operand under a scalar scale (AFFINE with no
 * shift), *alpha multiplied by its scale; returns the operand's node. */
int tc__ox_unscale(tc__ox *x, int id, float *alpha);

/* ---- onnx_wire.c: the scan before unpacking, and protobuf-c's allocator
 * ------------------------------------------------------- */

typedef struct tc__ox_wire {
  int64_t nodes, initializers; /* over all graphs */
  int depth;                   /* the deepest message nesting (ModelProto alone: 1) */
  size_t alloc;                /* an upper bound of what protobuf-c allocates to unpack the file */
} tc__ox_wire;

/* The most protobuf-c may allocate to unpack a file of len bytes (TC_ONNX_PARSE_OVERHEAD more). */
size_t tc__ox_wire_budget(size_t len);
/* Walks data[0..len) as an ONNX ModelProto without allocating: TH_OK and *out (if out != NULL)
 * when protobuf-c can unpack it within the limits of onnx.h and tc__ox_wire_budget(len);
 * TH_ERR_INVALID with err naming the limit passed or the malformed data (and its offset). */
th_status tc__ox_wire_scan(const void *data, size_t len, tc__ox_wire *out, char *err,
                           size_t errlen);

/* A ProtobufCAllocator that refuses (over = 1, NULL) an allocation that would take the bytes
 * live past limit; each allocation counts its size plus a 16-byte header. Not thread-safe: one per
 * unpack; it must outlive the unpacked message, freed through the same allocator. */
typedef struct tc__ox_budget {
  ProtobufCAllocator pa; /* pass &b->pa to protobuf-c */
  size_t limit, used, peak;
  int over;
} tc__ox_budget;
void tc__ox_budget_init(tc__ox_budget *b, size_t limit);

#endif
