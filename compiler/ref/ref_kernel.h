/* tc_ref_kernel: the naive oracle of one kernel call in the CPU kernel ABI of ops.h, for the tensor
 * families (batch_matmul, layer_norm, softmax_rows, unary, embedding, copy, binary) and dense with every
 * epilogue. Templates (CPU and CUDA) and the graph reference interpreter are checked against it, so it is
 * written for obvious correctness: plain loops over plain row-major tensors, double accumulation. */
#ifndef TC_REF_KERNEL_H
#define TC_REF_KERNEL_H

#include <stdint.h>

#include "th_status.h"
#include "workload.h"

/* Runs the kernel `wl` on args, laid out as the kernel ABI of ops.h ("Tensor kernels") says, except
 * that dense takes torch's unpacked weights [oc, c] in slot TC_ARG_WEIGHTS (not the packed panels).
 * The args are borrowed; every slot the workload reads must be non-NULL (bias only with TC_EPI_BIAS,
 * residual only with TC_EPI_RESIDUAL, mask only with TC_EPI_MASK). Epilogues apply in the order of
 * workload.h: + bias, + residual, relu, clip, gelu (erf form, libm's erf), tanh, sigmoid, hard sigmoid
 * (the workload's alpha and beta), hard swish, silu (one activation at most, tc_workload_check says).
 * Precision: sums (matmul, layer-norm statistics, softmax) accumulate in double; element-wise arithmetic
 * that torch does in float32 (binary ops, alpha * x + mask, the residual add) is done in float, so a fully
 * masked softmax row (mask -3.4e38) comes out uniform as in torch.
 * Returns TH_OK, TH_ERR_INVALID (NULL wl or args, a missing slot, a workload tc_workload_check rejects),
 * TH_ERR_UNSUPPORTED for the other families (conv, pools, ...). Thread-safe; writes only the output. */
th_status tc_ref_kernel(const tc_workload *wl, void *const *args);

/* The element-wise math op m (TC_UNARY_EXP and after, workload.h) of x with alpha a and beta b,
 * naively through libm in double (the graph reference's TC_OP_MATH too); NaN for another op. */
float tc_ref_unary_math(float x, int m, double a, double b);
/* x op y for the TC_BINARY_* op (workload.h), naively through libm (the graph reference's binary
 * ops too); comparisons give 1 or 0; NaN for another op. */
float tc_ref_binary(int op, float x, float y);
/* Element e of a binary's output from a[ai] and b[bi] (TC_BINARY_* op, workload.h) on float32, or,
 * for dtype TC_WL_I64, int64 (a is then int64 but for TAKE and LEAVE's float mask; out is int64 but
 * for the comparisons' 0/1 floats), naively in C with unsigned wrapping. */
void tc_ref_binary_at(int dtype, int op, const void *a, int64_t ai, const void *b, int64_t bi,
                      void *out, int64_t e);

/* sum a[k * as] * b[k * bs] over k < n, in double: every product of the matmuls, dense layers and the
 * graph reference's MatMul. Eight partial sums over interleaved k, added at the end: exact enough (double
 * holds a float product exactly and the partial sums lose no more than one), and several times faster than
 * one sum whose every add waits for the last (bert's reference took 43 s). */
double tc_ref_dot(const float *a, int64_t as, const float *b, int64_t bs, int64_t n);

/* The TC_REDUCE_* op (workload.h) of the n floats x, naively in double (log-sum-exp from the max):
 * the reduce kernel's and the graph reference's TC_OP_REDUCE. */
float tc_ref_reduce(const float *x, int64_t n, int op);
/* The index of the first (TC_REDUCE_ARGMAX, ARGMIN) or last (the _LAST ones) max or min of x. */
int64_t tc_ref_arg(const float *x, int64_t n, int op);

#endif
