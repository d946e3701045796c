/* GPU unary (n elements, TC_UNARY_*): an element map, `inner` elements per thread. gelu, tanh,
 * sigmoid, hard sigmoid, hard swish, silu and the ONNX math are the CPU's expressions
 * (tc__unary_expr); the int64 casts read or write a `long long` buffer (codegen.c types integer
 * arguments so); affine is x * alpha + beta. */
#include "../../ops/ops_int.h"
#include "templates_int.h"

static const tc_stmt *elem(tc__cuda_lc *L, const tc_expr *idx) {
  const tc_workload *wl = L->wl;
  const tc_expr *x = LD(L->arg[TC_ARG_SIMPLE_IN], idx), *y = x;
  if (wl->op == TC_UNARY_CAST_I64)
    y = tc_e_cast(L->ir, tc_type_f32(1), x);
  else if (wl->op == TC_UNARY_CAST_TO_I64)
    y = tc_e_cast(L->ir, tc_type_int(), x);
  else
    y = tc__unary_expr(L->ir, wl->op, x, wl->alpha, wl->beta);
  return ST(L->arg[TC_ARG_SIMPLE_OUT], idx, y);
}

static const tc_stmt *lower(tc__cuda_lc *L, const tc_space *s, const tc_config *c) {
  return tc__cuda_map_cfg(L, s, c, L->wl->n, elem);
}

const tc__cuda_op tc__cuda_op_unary = {TC_KERNEL_UNARY, tc__cuda_plain_map_space,
                                       tc__cuda_in_map_fallback, tc__cuda_in_map_shape, lower};
