/* GPU channel concat: an element map over the input copying each element into channels [c_offset,
 * c_offset + c) of the output. Layout transforms (layout.c) are the same copy with offset 0; on the
 * GPU every tensor is plain NCHW, so theirs is the identity index. */
#include "templates_int.h"

th_status tc__cuda_copy_space(const tc_workload *wl, const tc_cuda_target *t, tc_space *s) {
  (void)wl;
  (void)t;
  return tc__cuda_map_space(s, 0, 0);
}

static const tc_stmt *elem(tc__cuda_lc *L, const tc_expr *idx) {
  const tc_workload *wl = L->wl;
  const tc_expr *out = idx;
  if (wl->kernel == TC_KERNEL_CONCAT) {
    int64_t hw = (int64_t)wl->h * wl->w;
    const tc_expr *s = MOD(idx, I(hw)), *nc = DIV(idx, I(hw));
    const tc_expr *ch = MOD(nc, I(wl->c)), *nn = DIV(nc, I(wl->c));
    out = ADD(MUL(ADD(MUL(nn, I(wl->oc)), ADD(ch, I(wl->c_offset))), I(hw)), s);
  }
  return ST(L->arg[TC_ARG_SIMPLE_OUT], out, LD(L->arg[TC_ARG_SIMPLE_IN], idx));
}

const tc_stmt *tc__cuda_copy_lower(tc__cuda_lc *L, const tc_space *s, const tc_config *c) {
  return tc__cuda_map_cfg(L, s, c, tc__cuda_in_total(L->wl), elem);
}

const tc__cuda_op tc__cuda_op_concat = {TC_KERNEL_CONCAT, tc__cuda_copy_space,
                                        tc__cuda_in_map_fallback, tc__cuda_in_map_shape,
                                        tc__cuda_copy_lower};
