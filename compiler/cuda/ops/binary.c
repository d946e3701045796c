/* GPU binary (out = a op b with broadcasting by per-dimension strides, out contiguous): the strided
 * element map of templates.c with two inputs; float4 runs when the innermost merged dimension is
 * contiguous in the output and in each input that does not broadcast along it (one that does gives
 * one scalar for all 4). */
#include "templates_int.h"

static const tc_stmt *elem(tc__cuda_lc *L, const tc__cuda_dims *d, tc_var *const *offs, int vec) {
  static const tc_expr_kind kinds[TC_BINARY_COUNT] = {TC_EXPR_ADD, TC_EXPR_MUL, TC_EXPR_SUB,
                                                      TC_EXPR_DIV};
  const tc_expr *a = tc__cuda_strided_load(L, d, 0, L->arg[0], V(offs[0]), vec);
  const tc_expr *b = tc__cuda_strided_load(L, d, 1, L->arg[1], V(offs[1]), vec);
  return tc_s_store(L->ir, L->arg[2], V(offs[2]), BIN(kinds[L->wl->op], a, b), vec == 4 ? 16 : 4);
}

static const tc_stmt *lower(tc__cuda_lc *L, const tc_space *s, const tc_config *c) {
  return tc__cuda_strided_lower(L, s, c, elem);
}

const tc__cuda_op tc__cuda_op_binary = {TC_KERNEL_BINARY, tc__cuda_strided_space,
                                        tc__cuda_strided_fallback, tc__cuda_strided_shape, lower};
