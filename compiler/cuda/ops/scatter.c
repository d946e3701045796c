/* GPU scatter by runtime int64 indices (ONNX ScatterElements, Scatter): an element map over the
 * contiguous output, one thread per element. Each element's axis coordinate and first candidate's
 * index offset come from its digits; the body (data, then the candidate updates folded in index
 * order where the wrapped index names the coordinate) is the CPU template's (ops/scatter.c), so
 * duplicates resolve the same way on both. */
#include "../../ops/ops_int.h"
#include "templates_int.h"

static const tc_stmt *elem(tc__cuda_lc *L, const tc_expr *idx) {
  const tc_workload *wl = L->wl;
  const tc_expr *a, *b;
  tc__cuda_digit_offsets(L, idx, &a, &b);
  const tc_var *const bufs[4] = {L->arg[0], L->arg[1], L->arg[2], L->arg[3]};
  return tc__scatter_elem(L->ir, wl, bufs, idx, a, b);
}

static const tc_stmt *lower(tc__cuda_lc *L, const tc_space *s, const tc_config *c) {
  return tc__cuda_map_cfg(L, s, c, tc__cuda_out_total(L->wl), elem);
}

const tc__cuda_op tc__cuda_op_scatter = {TC_KERNEL_SCATTER, tc__cuda_plain_map_space,
                                         tc__cuda_plain_map_fallback, tc__cuda_out_map_shape,
                                         lower};
