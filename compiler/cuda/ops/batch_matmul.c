/* GPU batch_matmul (out[i] = alpha * a[i] . b[i], either operand stored transposed; attention's
 * Q.K^T and P.V): the shared-memory tiled GEMM of gemm.c with the batch folded into the block
 * index, each operand staged along its contiguous axis; at precision tf32 the tensor-core GEMM of
 * gemm_tc.c. */
#include "templates_int.h"

static th_status space(const tc_workload *wl, const tc_cuda_target *t, tc_space *s) {
  if (wl->precision == TC_PRECISION_TF32) return tc__cuda_tcgemm_space(wl, t, s);
  return tc__cuda_gemm_space(s);
}

static th_status fallback(const tc_workload *wl, const tc_cuda_target *t, const tc_space *s,
                          tc_config *c) {
  if (wl->precision == TC_PRECISION_TF32) return tc__cuda_tcgemm_fallback(wl, t, s, c);
  return tc__cuda_gemm_fallback(wl, t, s, c);
}

static th_status shape(const tc_workload *wl, const tc_space *s, const tc_config *c,
                       tc__cuda_shape *sh, char *why, size_t whylen) {
  if (wl->precision == TC_PRECISION_TF32) return tc__cuda_tcgemm_shape(wl, s, c, sh, why, whylen);
  return tc__cuda_gemm_shape(wl, s, c, sh, why, whylen);
}

static const tc_stmt *lower(tc__cuda_lc *L, const tc_space *s, const tc_config *c) {
  if (L->wl->precision == TC_PRECISION_TF32) return tc__cuda_tcgemm_lower(L, s, c);
  return tc__cuda_gemm_lower(L, s, c);
}

const tc__cuda_op tc__cuda_op_batch_matmul = {TC_KERNEL_BATCH_MATMUL, space, fallback, shape,
                                              lower};
