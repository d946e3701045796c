/* The operator templates: for each kernel family a config space, a validity check, a fallback config and a
 * lowering from (workload, config) to loop IR, plus the weight packing each template expects. This is the
 * contract used by the graph side (which emits kernels and packs weights in the model .so) and the tuner
 * (which searches the spaces). All functions are pure and thread-safe.
 *
 * Kernel ABI. Every kernel is an LLVM function `void NAME(void *const *args)`; args holds float pointers:
 *   conv2d, depthwise, dense:                 {in, packed_weights, bias_or_NULL, residual_or_NULL, out}
 *   maxpool, avgpool, global_avgpool, softmax, layout, concat: {in, out}
 *   eltwise:                                  {a, b, out}
 * bias is [oc] floats (read only with TC_EPI_BIAS); residual has the output's shape and layout (read only
 * with TC_EPI_RESIDUAL). Pointers need only float alignment. Parallel loops call th_rt_parallel_for.
 *
 * Layouts. A 4-D tensor [n, c, h, w] with channel block cb is stored NCHW[cb]c with cp =
 * tc_channels_stored(c, cb) channels (c rounded up to a multiple of cb): element (n, c, y, x) is at
 * ((n*(cp/cb) + c/cb) * h + y) * w + x) * cb + c%cb; cb = 1 is plain NCHW. Workloads name the real c
 * and oc; conv2d, depthwise, the pools and eltwise compute the padding lanes too (weights and bias
 * packed with zeros there), concat and layout copy the real channels and zero the padding.
 *   conv2d:     in [n,c,h,w] block in_cb, out [n,oc,oh,ow] block out_cb; torch weights OIHW.
 *   depthwise:  c == oc (groups == c), torch weights [c,1,kh,kw]; in_cb, out_cb any valid blocks.
 *   dense:      in [n, c] plain, out [n, oc] plain, torch weights [oc, c]; h = w = oh = ow = 1.
 *   max/avgpool: c == oc, in block in_cb, out block out_cb; window kh x kw, stride, padding; avg uses
 *               count_include_pad. Max pooling ignores padded taps.
 *   global_avgpool: in [n,c,h,w] block in_cb -> out [n,c,1,1] block out_cb (oh = ow = 1).
 *   softmax:    plain layout [n,c,h,w]; normalises over the innermost axis of extent > 1 among (w, h, c)
 *               (so [n, m] may be given as c = m, h = w = 1), for every row of the others.
 *   eltwise:    out = a + b over n*c*h*w floats (any layout, the same for a, b, out); TC_EPI_RELU/CLIP.
 *   concat:     copies in [n,c,h,w] (block in_cb) into channels [c_offset, c_offset+c) of out
 *               [n,oc,h,w] (block out_cb); oh, ow = h, w.
 *   layout:     in [n,c,h,w] block in_cb -> out, same tensor, block out_cb (oc = c).
 *
 * Tensor kernels (plain row-major tensors, in_cb = out_cb = 1; unused shape fields are 1):
 *   dense:        also [..., k] inputs of any rank: n is the product of the leading dims (rows), c = k,
 *                 oc = m; epilogues bias, residual ([n, m]), relu, clip, gelu, tanh.
 *   batch_matmul: {a, b, out}: out[i, M, N] = alpha * a[i] . b[i] for i < n, with M = h = oh, K = c,
 *                 N = oc (w = ow = 1); a is [n, M, K] ([n, K, M] when trans_a), b is [n, K, N] ([n, N, K]
 *                 when trans_b). No epilogue.
 *   layer_norm:   {in, gamma, beta, residual_or_NULL, out} (slots 0..4): n rows of c (= oc) floats;
 *                 x = in (+ residual with TC_EPI_RESIDUAL), out = (x - mean) / sqrt(var + eps) * gamma
 *                 + beta, biased variance, eps = alpha. gamma and beta are [c] floats.
 *   softmax_rows: {in, mask_or_NULL, out}: rows [n, c, h] of length w (oc, oh, ow equal c, h, w);
 *                 out = softmax over w of (alpha * in + mask[row / (c*h), :]) where the mask is [n, w]
 *                 floats, added with TC_EPI_MASK only.
 *   unary:        {in, out}: n elements (c = h = w = 1): TC_UNARY_GELU (erf form), TANH, CAST_I64 (the
 *                 input holds int64 values), AFFINE (in * alpha + beta), SIGMOID, HARD_SIGMOID
 *                 (max(0, min(1, in * alpha + beta))), HARD_SWISH, SILU; element-wise, so any layout
 *                 (a channel-blocked map too) as long as in and out share it.
 *   embedding:    {indices, table, out}: n int64 indices, table [c, oc] floats (c rows), out [n, oc];
 *                 an index outside [0, c) gives a row of zeros and never reads outside the table (the
 *                 model runtime rejects such graph inputs before running, with an error).
 *   copy:         {in, out}: for every index (i_0 .. i_ndim-1) of shape[0..ndim), out[boff + sum i_d *
 *                 bstride[d]] = in[aoff + sum i_d * astride[d]] (element strides): transpose, slice, expand
 *                 (stride 0) and the parts of a concat along any axis are all copies.
 *   binary:       {a, b, out}: out (contiguous, shape[0..ndim)) = a op b with element strides astride
 *                 and bstride per output dimension (0 broadcasts); op is TC_BINARY_*.
 *   gather:       {data, indices, out}: out (contiguous, shape[0..ndim)) element e at digits (i_d) is
 *                 data[sum i_d * astride[d] + k * oc] with k = indices[sum i_d * bstride[d]] (int64),
 *                 k + c when k < 0; 0 when k is outside [0, c) (never read), or when kh == 1 and the
 *                 raw index equals kw (a loss's ignore_index). n = h = w = oh = ow = 1.
 *   scatter:      {data, indices, updates, out}: out (contiguous, shape[0..ndim), as data) element e
 *                 at digits (i_d) is data[e] folded (TC_SCATTER_* op) with updates[b + j * oc] for
 *                 j = 0..kh-1 in order wherever k = indices[b + j * oc] (k + c when k < 0) equals
 *                 sum i_d * astride[d] (astride 1 on the axis, 0 elsewhere), b = sum i_d * bstride[d]
 *                 (0 on the axis). n = h = w = oh = ow = 1, kw = 0.
 *   reduce:       {in, out}: in is n rows of c floats, out[i] = TC_REDUCE_* (op) of row i (oc = h = w
 *                 = 1): sum, mean, max, min, prod, sum of squares, L1, L2, log-sum, log-sum-exp;
 *                 or the int64 index of the row's first (last) max (min): out holds int64 then.
 *
 * Packed weights. tc_op_packed_size() gives the packed size in floats (0: the kernel takes no weights);
 * tc_op_pack_params() gives the ints that th_rt_pack_weights() (runtime/th_rt.h) needs, so a model .so
 * packs its weights once at load with no compiler at hand; tc_op_pack() does the same in-process. */
#ifndef TC_OPS_H
#define TC_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "ir.h"
#include "space.h"
#include "target.h"
#include "th_buf.h"
#include "workload.h"

/* Kernel argument slots. */
enum { TC_ARG_IN = 0, TC_ARG_WEIGHTS = 1, TC_ARG_BIAS = 2, TC_ARG_RESIDUAL = 3, TC_ARG_OUT = 4 };
enum { TC_ARG_SIMPLE_IN = 0, TC_ARG_SIMPLE_OUT = 1 };          /* pools, softmax, layout, concat */
enum { TC_ARG_ELT_A = 0, TC_ARG_ELT_B = 1, TC_ARG_ELT_OUT = 2 }; /* eltwise */

/* Nonzero when the family has a CPU template (every family will; a new one may land on one backend first). */
int tc_op_has_template(tc_kernel k);

/* The number of pointers in the kernel's args array for this family (5, 2 or 3): TC_KERNEL_TABLE's
 * nargs. */
int tc_op_nargs(tc_kernel k);

/* Argument roles and size rules of TC_KERNEL_TABLE (workload.h). The output is the last slot. */
#define TC_MAX_ARGS 5
typedef enum tc_arg_role {
  TC_ARG_ROLE_NONE = 0, /* past nargs */
  TC_ARG_ROLE_IN,       /* read */
  TC_ARG_ROLE_OPT,      /* read when its epilogue flag is set, else NULL (0 elements) */
  TC_ARG_ROLE_PACKED,   /* weights: torch layout in the graph, packed per config (tc_op_pack) */
  TC_ARG_ROLE_OUT,      /* written */
} tc_arg_role;
typedef enum tc_arg_size {
  TC_ARG_SIZE_NONE = 0,
  TC_ARG_SIZE_MAP_IN,        /* n * tc_channels_stored(c, in_cb) * h * w */
  TC_ARG_SIZE_MAP_OUT,       /* n * tc_channels_stored(oc, out_cb) * oh * ow */
  TC_ARG_SIZE_WEIGHTS,       /* torch layout: conv2d oc*c*kh*kw, depthwise c*kh*kw, dense oc*c */
  TC_ARG_SIZE_BIAS,          /* tc_channels_stored(oc, out_cb) with TC_EPI_BIAS */
  TC_ARG_SIZE_RESIDUAL,      /* MAP_OUT with TC_EPI_RESIDUAL */
  TC_ARG_SIZE_BMM_A,         /* n * h * c */
  TC_ARG_SIZE_BMM_B,         /* n * c * oc */
  TC_ARG_SIZE_BMM_OUT,       /* n * h * oc */
  TC_ARG_SIZE_ROWS,          /* n * c */
  TC_ARG_SIZE_ROWS_RESIDUAL, /* n * c with TC_EPI_RESIDUAL */
  TC_ARG_SIZE_CHANNELS,      /* c */
  TC_ARG_SIZE_MASK,          /* n * w with TC_EPI_MASK */
  TC_ARG_SIZE_ELEMS,         /* n */
  TC_ARG_SIZE_REDUCE_OUT,    /* n; int64 for TC_REDUCE_ARGMAX and after */
  TC_ARG_SIZE_UNARY_IN,      /* n; int64 for TC_UNARY_CAST_I64 */
  TC_ARG_SIZE_UNARY_OUT,     /* n; int64 for TC_UNARY_CAST_TO_I64 */
  TC_ARG_SIZE_INDICES,       /* n int64 indices in [0, c) */
  TC_ARG_SIZE_TABLE,         /* c * oc */
  TC_ARG_SIZE_GATHER_OUT,    /* n * oc */
  TC_ARG_SIZE_A_EXTENT,      /* 1 + aoff + sum (shape[d] - 1) * astride[d] */
  TC_ARG_SIZE_B_EXTENT, /* 1 + boff + sum (shape[d] - 1) * bstride[d]; as an output, partial when it
                           is not the whole contiguous space */
  TC_ARG_SIZE_VOLUME,   /* prod shape[d] */
  TC_ARG_SIZE_GATHER_DATA,  /* A_EXTENT plus (c - 1) * oc: the gathered axis */
  TC_ARG_SIZE_GATHER_INDEX, /* B_EXTENT int64 indices in [0, c) */
  TC_ARG_SIZE_SCATTER_INDEX,   /* B_EXTENT plus (kh - 1) * oc int64 indices in [-c, c) */
  TC_ARG_SIZE_SCATTER_UPDATES, /* as many floats */
} tc_arg_size;

/* A workload's kernel arguments, from its family's row of TC_KERNEL_TABLE. */
typedef struct tc_arg_layout {
  int nargs;
  tc_arg_role role[TC_MAX_ARGS];
  int64_t nelems[TC_MAX_ARGS];      /* elements as stored (0: a NULL slot); unpacked for PACKED */
  int elem_bytes[TC_MAX_ARGS];      /* 4: float32, 8: int64 */
  int64_t index_limit[TC_MAX_ARGS]; /* int64 indices: values in [0, index_limit); 0 otherwise */
  int partial[TC_MAX_ARGS];         /* an output written only in part (a copy into a slice) */
} tc_arg_layout;

/* Fills *out for wl (assumed to pass tc_workload_check). TH_ERR_INVALID for a kernel outside the
 * table. */
th_status tc_op_args(const tc_workload *wl, tc_arg_layout *out);

/* The channel block for a map of `channels` channels on a target of simd_lanes float lanes: the largest of
 * {16, 8, 4, 2, 1} that divides channels, unless that is narrower than min(8, lanes) while channels >=
 * lanes; then one vector (lanes) when padding the channels to a multiple of it adds at most a quarter
 * (shufflenet's 58, 116 and 232 channels are 4, 8 and 15 blocks of 16 on AVX-512, not 29 blocks of 2, 4
 * or 8). Both sides of the compiler (the layout pass, the templates) agree through this one rule. */
int tc_channel_block(int channels, int simd_lanes);
/* Channels a map of `channels` channels stores in block cb: rounded up to a multiple of cb (cb > 1). The
 * padding lanes hold finite values (each producer writes them: zero weights and biases, concat and layout
 * zeros) that no consumer lets through to a real channel. */
int tc_channels_stored(int channels, int cb);

/* Checks that the workload's shapes are consistent for its family (output size from the window, blocks
 * dividing channels, ...). TH_ERR_INVALID or TH_ERR_UNSUPPORTED otherwise; never aborts. */
th_status tc_workload_check(const tc_workload *wl);

/* Fills *out with the template's config space for this workload and target (at least one knob, so
 * every space has at least one point). */
th_status tc_op_space(const tc_workload *wl, const tc_target *t, tc_space *out);
/* The fallback config: what a build uses without a tuning record. */
th_status tc_op_fallback(const tc_workload *wl, const tc_target *t, const tc_space *s, tc_config *out);
/* TH_OK if cfg is a valid point of s for this workload and target; TH_ERR_INVALID (instantiation error)
 * otherwise, e.g. a register tile that does not fit the register file. */
th_status tc_op_valid(const tc_workload *wl, const tc_target *t, const tc_space *s,
                      const tc_config *cfg);
/* Lowers the workload with cfg to loop IR built in `arena` (borrowed; *out lives as long as it). The
 * space is recomputed inside from (wl, t). Buffers that are kernel arguments have tc_var.param set to
 * their slot. TH_ERR_INVALID for a bad workload or config, TH_ERR_NOMEM. */
th_status tc_op_lower(const tc_workload *wl, const tc_config *cfg, const tc_target *t, th_arena *arena,
                      const tc_stmt **out);

/* Packed weight size in floats for (wl, cfg); 0 for families without weights. */
size_t tc_op_packed_size(const tc_workload *wl, const tc_config *cfg, const tc_target *t);
#define TC_PACK_NPARAMS 10
/* The parameters of th_rt_pack_weights(params, src, dst) for this kernel: params[0] is the pack kind
 * (TH_RT_PACK_*), the rest its sizes. TH_ERR_INVALID for families without weights. */
th_status tc_op_pack_params(const tc_workload *wl, const tc_config *cfg, const tc_target *t,
                            int params[TC_PACK_NPARAMS]);
/* Packs torch-layout weights (OIHW, [c,1,kh,kw] or [oc, c]) into dst (tc_op_packed_size floats). */
th_status tc_op_pack(const tc_workload *wl, const tc_config *cfg, const tc_target *t, const float *src,
                     float *dst);

/* A readable listing of the kernel's loop IR, appended to b (for inspection and debugging). */
th_status tc_op_print(const tc_workload *wl, const tc_config *cfg, const tc_target *t, th_buf *b);

#endif
