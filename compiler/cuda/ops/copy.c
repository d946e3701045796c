/* GPU strided copy (transpose, slice, expand, the parts of a concat; up to 6-D): the strided
 * element map of templates.c over the iteration space (extent-1 dimensions dropped, contiguous
 * neighbours merged), each element's input and output offsets built from its digits; float4 runs
 * when the innermost merged dimension is contiguous and aligned on both sides. */
#include "templates_int.h"

static const tc_stmt *elem(tc__cuda_lc *L, const tc__cuda_dims *d, tc_var *const *offs, int vec) {
  const tc_expr *v = tc__cuda_strided_load(L, d, 0, L->arg[0], V(offs[0]), vec);
  return tc_s_store(L->ir, L->arg[1], V(offs[1]), v, vec == 4 ? 16 : 4);
}

static const tc_stmt *lower(tc__cuda_lc *L, const tc_space *s, const tc_config *c) {
  return tc__cuda_strided_lower(L, s, c, elem);
}

const tc__cuda_op tc__cuda_op_copy = {TC_KERNEL_COPY, tc__cuda_strided_space,
                                      tc__cuda_strided_fallback, tc__cuda_strided_shape, lower};
