/* GPU batch_matmul (out[i] = alpha * a[i] . b[i], either operand stored transposed; attention's
 * Q.K^T and P.V): the shared-memory tiled GEMM of gemm.c with the batch folded into the block
 * index, each operand staged along its contiguous axis. */
#include "templates_int.h"

static th_status space(const tc_workload *wl, const tc_cuda_target *t, tc_space *s) {
  (void)wl;
  (void)t;
  return tc__cuda_gemm_space(s);
}

const tc__cuda_op tc__cuda_op_batch_matmul = {TC_KERNEL_BATCH_MATMUL, space, tc__cuda_gemm_fallback,
                                              tc__cuda_gemm_shape, tc__cuda_gemm_lower};
