/* GPU scatter by runtime int64 indices (ONNX ScatterElements, Scatter): an element map over the
 * contiguous output, one thread per element. Each element's axis coordinate and first candidate's
 * index offset come from its digits; the body (data, then the candidate updates folded in index
 * order where the wrapped index names the coordinate) is the CPU template's (ops/scatter.c), so
 * duplicates resolve the same way on both. */
#include "../../ops/ops_int.h"
#include "templates_int.h"

static th_status space(const tc_workload *wl, const tc_cuda_target *t, tc_space *s) {
  (void)wl;
  (void)t;
  return tc__cuda_map_space(s, 0, 0);
}

static th_status fallback(const tc_workload *wl, const tc_cuda_target *t, const tc_space *s,
                          tc_config *c) {
  (void)wl;
  (void)t;
  tc__cuda_map_pick(s, c, 0);
  return TH_OK;
}

static const tc_stmt *elem(tc__cuda_lc *L, const tc_expr *idx) {
  const tc_workload *wl = L->wl;
  const tc_expr *rem = idx, *a = I(0), *b = I(0);
  for (int d = wl->ndim - 1; d >= 0; d--) {
    const tc_expr *i = d > 0 ? MOD(rem, I(wl->shape[d])) : rem;
    a = ADD(a, MUL(i, I(wl->astride[d])));
    b = ADD(b, MUL(i, I(wl->bstride[d])));
    if (d > 0) rem = DIV(rem, I(wl->shape[d]));
  }
  const tc_var *const bufs[4] = {L->arg[0], L->arg[1], L->arg[2], L->arg[3]};
  return tc__scatter_elem(L->ir, wl, bufs, idx, a, b);
}

static const tc_stmt *lower(tc__cuda_lc *L, const tc_space *s, const tc_config *c) {
  return tc__cuda_map_cfg(L, s, c, tc__cuda_out_total(L->wl), elem);
}

const tc__cuda_op tc__cuda_op_scatter = {TC_KERNEL_SCATTER, space, fallback, tc__cuda_out_map_shape,
                                         lower};
