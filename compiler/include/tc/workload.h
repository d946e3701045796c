/* tc_workload: the contract between the graph side of the compiler (graph, passes, plan) and the kernel side
 * (operator templates, loop IR, codegen). A workload is a fully specified kernel: operator, shapes, data
 * layouts and fused epilogue. Two equal workloads compute the same function, so the tuner keys its records
 * by tc_workload_key() and shares them across networks. */
#ifndef TC_WORKLOAD_H
#define TC_WORKLOAD_H

#include <stddef.h>

#include "th_status.h"

/* The kernel families, one row each: the one place a family's identity and argument list are
 * written. X(ID, name, nargs, a0, a1, a2, a3, a4) makes TC_KERNEL_<ID> (in row order), its template
 * name (tc_kernel_name: records and keys) and its argument slots, the `args` array of the kernel
 * ABI (ops.h): nargs slots, each a (role, size rule) pair (TC_ARG_ROLE_<role>, TC_ARG_SIZE_<rule>
 * in ops.h), padded to five with (NONE, NONE). tc_op_nargs, tc_op_args (the tuner's layout, the GPU
 * measurement's buffers) and the _Static_asserts beside them in ops.c derive from it. Maps are
 * NCHW[cb]c as stored (ops.h). */
#define TC_KERNEL_TABLE(X)                                                                         \
  /* NCHW[cb]c conv, groups (tc_workload.groups) of c/groups -> oc/groups channels each */        \
  X(CONV2D, "conv2d_nchwc", 5, (IN, MAP_IN), (PACKED, WEIGHTS), (OPT, BIAS), (OPT, RESIDUAL),      \
    (OUT, MAP_OUT))                                                                                \
  /* groups == c == oc */                                                                          \
  X(DEPTHWISE, "depthwise_nchwc", 5, (IN, MAP_IN), (PACKED, WEIGHTS), (OPT, BIAS),                 \
    (OPT, RESIDUAL), (OUT, MAP_OUT))                                                               \
  /* [n, k] x [k, m] -> [n, m], weights packed */                                                  \
  X(DENSE, "dense_pack", 5, (IN, MAP_IN), (PACKED, WEIGHTS), (OPT, BIAS), (OPT, RESIDUAL),         \
    (OUT, MAP_OUT))                                                                                \
  X(MAXPOOL, "max_pool_nchwc", 2, (IN, MAP_IN), (OUT, MAP_OUT), (NONE, NONE), (NONE, NONE),        \
    (NONE, NONE))                                                                                  \
  X(AVGPOOL, "avg_pool_nchwc", 2, (IN, MAP_IN), (OUT, MAP_OUT), (NONE, NONE), (NONE, NONE),        \
    (NONE, NONE))                                                                                  \
  X(GLOBAL_AVGPOOL, "global_avg_pool_nchwc", 2, (IN, MAP_IN), (OUT, MAP_OUT), (NONE, NONE),        \
    (NONE, NONE), (NONE, NONE))                                                                    \
  /* over the last axis */                                                                         \
  X(SOFTMAX, "softmax", 2, (IN, MAP_IN), (OUT, MAP_OUT), (NONE, NONE), (NONE, NONE), (NONE, NONE)) \
  /* binary add (+ epilogue) of two same-shape tensors */                                          \
  X(ELTWISE, "eltwise_add", 3, (IN, MAP_IN), (IN, MAP_IN), (OUT, MAP_IN), (NONE, NONE),            \
    (NONE, NONE))                                                                                  \
  /* channel concat */                                                                             \
  X(CONCAT, "concat_nchwc", 2, (IN, MAP_IN), (OUT, MAP_OUT), (NONE, NONE), (NONE, NONE),           \
    (NONE, NONE))                                                                                  \
  /* NCHW[a]c <-> NCHW[b]c reorder */                                                              \
  X(LAYOUT, "layout_transform", 2, (IN, MAP_IN), (OUT, MAP_OUT), (NONE, NONE), (NONE, NONE),       \
    (NONE, NONE))                                                                                  \
  /* tensor kernels (transformers, imported graphs): plain row-major, see ops.h for each ABI */    \
  /* [n, M, K] x [n, K, N] (either operand transposed) -> [n, M, N], times alpha */                \
  X(BATCH_MATMUL, "batch_matmul", 3, (IN, BMM_A), (IN, BMM_B), (OUT, BMM_OUT), (NONE, NONE),       \
    (NONE, NONE))                                                                                  \
  /* over the last axis (c) of n rows, gamma/beta, eps = alpha; optional residual */               \
  X(LAYER_NORM, "layer_norm", 5, (IN, ROWS), (IN, CHANNELS), (IN, CHANNELS), (OPT, ROWS_RESIDUAL), \
    (OUT, ROWS))                                                                                   \
  /* softmax(alpha * x + mask) over w, rows [n, c, h]; mask [n, w] (TC_EPI_MASK) */                \
  X(SOFTMAX_ROWS, "softmax_rows", 3, (IN, MAP_IN), (OPT, MASK), (OUT, MAP_IN), (NONE, NONE),       \
    (NONE, NONE))                                                                                  \
  /* element-wise TC_UNARY_* over n elements (gelu, tanh, cast, affine) */                         \
  X(UNARY, "unary", 2, (IN, UNARY_IN), (OUT, UNARY_OUT), (NONE, NONE), (NONE, NONE), (NONE, NONE))     \
  /* gather rows of a [c, oc] table by n int64 indices */                                          \
  X(EMBEDDING, "embedding", 3, (IN, INDICES), (IN, TABLE), (OUT, GATHER_OUT), (NONE, NONE),        \
    (NONE, NONE))                                                                                  \
  /* strided copy over an ndim-D space: transpose, slice, expand, concat parts */                  \
  X(COPY, "copy", 2, (IN, A_EXTENT), (OUT, B_EXTENT), (NONE, NONE), (NONE, NONE), (NONE, NONE))    \
  /* broadcast element-wise TC_BINARY_* over an ndim-D space */                                    \
  X(BINARY, "binary", 3, (IN, A_EXTENT), (IN, B_EXTENT), (OUT, VOLUME), (NONE, NONE), (NONE, NONE)) \
  /* out[e] = data[a(e) + idx[b(e)] * oc] over an ndim-D space (ONNX Gather, GatherElements) */    \
  X(GATHER, "gather", 3, (IN, GATHER_DATA), (IN, GATHER_INDEX), (OUT, VOLUME), (NONE, NONE),      \
    (NONE, NONE))                                                                                 \
  /* TC_REDUCE_* over each of n rows of c floats -> n floats */                                    \
  X(REDUCE, "reduce", 2, (IN, ROWS), (OUT, REDUCE_OUT), (NONE, NONE), (NONE, NONE), (NONE, NONE))  \
  /* out = data with updates folded in where indices point (ONNX ScatterElements, Scatter) */      \
  X(SCATTER, "scatter", 4, (IN, VOLUME), (IN, SCATTER_INDEX), (IN, SCATTER_UPDATES),               \
    (OUT, VOLUME), (NONE, NONE))

typedef enum tc_kernel {
#define TC__KERNEL_ENUM(id, name, nargs, a0, a1, a2, a3, a4) TC_KERNEL_##id,
  TC_KERNEL_TABLE(TC__KERNEL_ENUM)
#undef TC__KERNEL_ENUM
      TC_KERNEL_COUNT
} tc_kernel;

/* Epilogue flags, applied in this order after the main computation: + bias, + residual, then activation. */
enum {
  TC_EPI_BIAS = 1 << 0,
  TC_EPI_RESIDUAL = 1 << 1, /* adds a tensor of the output's shape and layout */
  TC_EPI_RELU = 1 << 2,
  TC_EPI_CLIP = 1 << 3, /* clamp to [clip_min, clip_max], e.g. relu6 */
  TC_EPI_GELU = 1 << 4, /* x * 0.5 * (1 + erf(x / sqrt(2))), torch's default gelu (dense) */
  TC_EPI_TANH = 1 << 5, /* tanh (dense; bert's pooler) */
  TC_EPI_MASK = 1 << 6, /* softmax_rows: adds the additive mask before normalising */
  /* the activations of imported CNNs (conv2d, depthwise and dense only; none with another activation) */
  TC_EPI_SIGMOID = 1 << 7,      /* 1 / (1 + e^-x) */
  TC_EPI_HARD_SIGMOID = 1 << 8, /* max(0, min(1, alpha * x + beta)), the workload's alpha and beta */
  TC_EPI_HARD_SWISH = 1 << 9,   /* x * max(0, min(1, x / 6 + 0.5)) */
  TC_EPI_SILU = 1 << 10,        /* x * sigmoid(x) */
};

/* TC_KERNEL_UNARY's operation (tc_workload.op). */
enum {
  TC_UNARY_GELU = 0,   /* erf form */
  TC_UNARY_TANH,
  TC_UNARY_CAST_I64,   /* int64 input -> float32 output (exact below 2^24) */
  TC_UNARY_AFFINE,     /* x * alpha + beta */
  TC_UNARY_SIGMOID,    /* 1 / (1 + e^-x) */
  TC_UNARY_HARD_SIGMOID, /* max(0, min(1, x * alpha + beta)) */
  TC_UNARY_HARD_SWISH, /* x * max(0, min(1, x / 6 + 0.5)) */
  TC_UNARY_SILU,       /* x * sigmoid(x) */
  TC_UNARY_CLIP,       /* min(max(x, alpha), beta): a relu or clip that no producer took as its epilogue */
  /* ONNX element-wise math (alpha and beta are the ONNX attributes where the op has them) */
  TC_UNARY_EXP,
  TC_UNARY_LOG,
  TC_UNARY_ABS,
  TC_UNARY_SQRT,
  TC_UNARY_RECIPROCAL, /* 1 / x */
  TC_UNARY_FLOOR,
  TC_UNARY_CEIL,
  TC_UNARY_ROUND,      /* halves to even */
  TC_UNARY_SIGN,       /* -1, 0 or 1 */
  TC_UNARY_ERF,
  TC_UNARY_SOFTPLUS,   /* log(1 + e^x) */
  TC_UNARY_SOFTSIGN,   /* x / (1 + |x|) */
  TC_UNARY_ELU,        /* x > 0 ? x : alpha * (e^x - 1) */
  TC_UNARY_SELU,       /* beta * (x > 0 ? x : alpha * (e^x - 1)) (ONNX's gamma is beta) */
  TC_UNARY_LEAKY_RELU, /* x >= 0 ? x : alpha * x */
  TC_UNARY_CELU,       /* max(0, x) + min(0, alpha * (e^(x / alpha) - 1)) */
  TC_UNARY_THRESHOLDED_RELU, /* x > alpha ? x : 0 */
  /* the hyperbolic functions and their inverses, through e^x and log (ONNX Sinh, ...) */
  TC_UNARY_SINH,  /* (e^x - e^-x) / 2 */
  TC_UNARY_COSH,  /* (e^x + e^-x) / 2 */
  TC_UNARY_ASINH, /* sign(x) log(|x| + sqrt(x^2 + 1)) */
  TC_UNARY_ACOSH, /* log(x + sqrt(x^2 - 1)); NaN below 1 */
  TC_UNARY_ATANH, /* log((1 + x) / (1 - x)) / 2; NaN outside [-1, 1] */
  /* the circular functions and their inverses, as libm's (ONNX Sin, ...) */
  TC_UNARY_SIN,
  TC_UNARY_COS,
  TC_UNARY_TAN,  /* huge near odd multiples of pi/2 */
  TC_UNARY_ASIN, /* NaN outside [-1, 1] */
  TC_UNARY_ACOS, /* NaN outside [-1, 1] */
  TC_UNARY_ATAN,
  /* tests, 1.0 where true and 0.0 where not (ONNX IsNaN, IsInf: bool held as float32) */
  TC_UNARY_ISNAN, /* x != x */
  TC_UNARY_ISINF, /* x is +inf and alpha != 0, or x is -inf and beta != 0 */
  TC_UNARY_CAST_TO_I64, /* float32 input -> int64 output, truncated toward zero (ONNX Cast, numpy's
                           astype); NaN, inf and values past int64 are undefined, as in ONNX */
  TC_UNARY_COUNT
};

/* The arithmetic of a workload (tc_workload.precision). FP32 is IEEE fp32 with FMA, every family's
 * default; TF32 (dense, batch_matmul and conv2d on the GPU, sm_80 and newer) multiplies on tensor
 * cores with inputs rounded to 10 mantissa bits and accumulates in fp32: relative errors around
 * 1e-3 of the output's magnitude instead of 1e-6. A TF32 workload has its own key (" tf32"), so it never shares
 * tuning records with the FP32 one; FP32 keys are those from before precisions existed. */
typedef enum tc_precision { TC_PRECISION_FP32 = 0, TC_PRECISION_TF32, TC_PRECISION_COUNT } tc_precision;

/* "fp32", "tf32" (NULL for another value). */
const char *tc_precision_name(int p);
/* Parses "fp32" or "tf32" (NULL or "" means fp32) into *out; TH_ERR_INVALID for anything else. */
th_status tc_precision_parse(const char *s, tc_precision *out);

/* TC_KERNEL_SCATTER's reduction (tc_workload.op): how an update combines with the element (ONNX
 * ScatterElements' reduction attribute; NONE replaces it, so the last of duplicates wins). */
enum {
  TC_SCATTER_NONE = 0,
  TC_SCATTER_ADD,
  TC_SCATTER_MUL,
  TC_SCATTER_MAX,
  TC_SCATTER_MIN,
  TC_SCATTER_COUNT
};

/* TC_KERNEL_REDUCE's operation (tc_workload.op): ONNX's Reduce* over a row of c elements. */
enum {
  TC_REDUCE_SUM = 0,
  TC_REDUCE_MEAN,
  TC_REDUCE_MAX,
  TC_REDUCE_MIN,
  TC_REDUCE_PROD,
  TC_REDUCE_SUM_SQUARE,  /* sum of x^2 */
  TC_REDUCE_L1,          /* sum of |x| */
  TC_REDUCE_L2,          /* sqrt(sum of x^2) */
  TC_REDUCE_LOG_SUM,     /* log(sum of x) */
  TC_REDUCE_LOG_SUM_EXP, /* max + log(sum of e^(x - max)): no overflow */
  /* ArgMax, ArgMin: the int64 index of the first (or, _LAST, the last) max or min of the row */
  TC_REDUCE_ARGMAX,
  TC_REDUCE_ARGMIN,
  TC_REDUCE_ARGMAX_LAST,
  TC_REDUCE_ARGMIN_LAST,
  TC_REDUCE_COUNT
};

/* The element type of a TC_KERNEL_BINARY workload (tc_workload.dtype): float32 (every other
 * family's, and the key of before int64 arithmetic) or int64 (key " i64"). */
enum { TC_WL_F32 = 0, TC_WL_I64 = 1 };

/* TC_KERNEL_BINARY's operation (tc_workload.op): a op b on floats, or, with tc_workload.dtype
 * TC_WL_I64, on int64 a and b (a is the float mask for TAKE and LEAVE) giving int64: wrapping add,
 * sub and mul, div truncated toward zero (a / 0 is 0 and a / -1 is -a, wrapped, as numpy's), max,
 * min, FMOD as C's % and MOD with the divisor's sign (both 0 for b = 0 or -1), POW exact for
 * exponents 0..63 (others: 1 for a = 1, +-1 for a = -1, else 0). The comparisons give
 * 1.0 where they hold and 0.0 elsewhere (ONNX's bool results, held as float32, from int64 operands
 * too). */
enum {
  TC_BINARY_ADD = 0,
  TC_BINARY_MUL,
  TC_BINARY_SUB,
  TC_BINARY_DIV,
  TC_BINARY_MAX, /* ONNX Max, Min (variadic ones are chains) */
  TC_BINARY_MIN,
  TC_BINARY_POW,  /* a^b: negative a only with an integral b (else NaN); a^0 = 1 */
  TC_BINARY_FMOD, /* C's fmod: a - b * trunc(a / b), the sign of a (ONNX Mod with fmod = 1) */
  TC_BINARY_EQ,
  TC_BINARY_LT,
  TC_BINARY_GT,
  TC_BINARY_LE,
  TC_BINARY_GE,
  TC_BINARY_NE, /* also ONNX Xor of bools held as 0/1 (And is MIN, Or is MAX) */
  /* ONNX Where(c, x, y) is TAKE(c, x) + LEAVE(c, y): exact, as v + -0 is v for every v */
  TC_BINARY_TAKE,  /* a != 0 ? b : -0 */
  TC_BINARY_LEAVE, /* a != 0 ? -0 : b */
  TC_BINARY_MOD,   /* int64 only: a - b * floor(a / b), the sign of b (ONNX Mod with fmod = 0) */
  TC_BINARY_COUNT
};

#define TC_WL_DIMS 6

typedef struct tc_workload {
  tc_kernel kernel;
  int n;            /* batch */
  int c, h, w;      /* input channels and spatial size */
  int oc, oh, ow;   /* output channels and spatial size */
  int kh, kw;       /* kernel or pooling window */
  int sh, sw;       /* strides */
  int pt, pl, pb, pr; /* padding: top, left, bottom, right */
  int in_cb;        /* input channel block (NCHW[in_cb]c); 1 means plain NCHW */
  int out_cb;       /* output channel block */
  int epilogue;     /* TC_EPI_* flags */
  float clip_min, clip_max;
  int count_include_pad; /* avg pooling */
  int c_offset;          /* concat: channel offset of this input inside the output */
  /* tensor kernels (zero for the CNN families above but for a hard-sigmoid epilogue's alpha and beta;
     see ops.h for which family reads what) */
  int op;                     /* UNARY: TC_UNARY_*; BINARY: TC_BINARY_*; REDUCE: TC_REDUCE_* */
  int trans_a, trans_b;       /* BATCH_MATMUL: operand stored transposed ([n, K, M] / [n, N, K]) */
  float alpha, beta;          /* BATCH_MATMUL, SOFTMAX_ROWS: scale; LAYER_NORM: eps; UNARY affine and
                                 hard sigmoid; conv2d, depthwise, dense: TC_EPI_HARD_SIGMOID's */
  int ndim;                   /* COPY, BINARY: rank of the iteration space, 1..TC_WL_DIMS */
  int shape[TC_WL_DIMS];      /* COPY, BINARY: the iteration space (the output's shape for BINARY) */
  int astride[TC_WL_DIMS];    /* COPY: the input's element strides; BINARY: a's (0 broadcasts) */
  int bstride[TC_WL_DIMS];    /* COPY: the output's element strides; BINARY: b's (0 broadcasts) */
  int aoff, boff;             /* COPY: element offsets of the first input and output element */
  int precision;              /* tc_precision; TF32 for DENSE, BATCH_MATMUL and CONV2D only */
  int dtype;                  /* TC_WL_*; int64 (TC_WL_I64) for BINARY only */
  int groups; /* CONV2D: channel groups, each c/groups inputs to oc/groups outputs (0 or 1: one; key
                 " g<groups>" above 1, so ungrouped keys are those from before groups existed) */
  /* CONV2D, DEPTHWISE: dilations, taps dil_h rows / dil_w columns apart (0 or 1: none; key
     " d<H>x<W>" when either is above 1, so undilated keys are those from before dilations) */
  int dil_h, dil_w;
} tc_workload;

/* A canonical, stable text key for records, e.g. "conv2d_nchwc n1 c64 h56 w56 oc64 k3x3 s1x1 p1,1,1,1
 * cb16,16 e5". Writes at most n bytes; returns TH_ERR_TOO_LARGE if it does not fit. */
th_status tc_workload_key(const tc_workload *wl, char *out, size_t n);
/* Gives wl a build's precision p where its family takes one (dense, batch_matmul and conv2d); any
 * other workload stays FP32. Returns 1 when wl changed (its key did too). */
int tc_workload_take_precision(tc_workload *wl, tc_precision p);
/* 1 when argument slot a of wl holds int64 elements through its dtype (a BINARY of TC_WL_I64:
 * a but for TAKE and LEAVE's mask, b, and out but for the comparisons' 0/1 floats). */
int tc_workload_i64_arg(const tc_workload *wl, int a);
/* A conv2d's channel groups (1 for any other family or an ungrouped conv). */
int tc_workload_groups(const tc_workload *wl);
/* A conv2d's or depthwise conv's dilation along axis 0 (rows) or 1 (columns): 1 for any other
 * family or none. */
int tc_workload_dil(const tc_workload *wl, int axis);
/* The input extent a window covers along axis 0 or 1: (kh - 1) * dil_h + 1 (dilated convs). */
int tc_workload_span(const tc_workload *wl, int axis);
/* Multiply-adds counted as 2 FLOPs. */
double tc_workload_flops(const tc_workload *wl);
/* The template family name ("conv2d_nchwc", "depthwise_nchwc", "dense_pack", ...). */
const char *tc_kernel_name(tc_kernel k);

#endif
