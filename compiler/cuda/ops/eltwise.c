/* GPU eltwise add (+ relu/clip) of two same-shape tensors: an element map, optionally on float4
 * vectors
 * (`vec` 4, when the element count is a multiple of 4; pointers are 16-byte aligned by the ABI). */
#include "templates_int.h"

static th_status space(const tc_workload *wl, const tc_cuda_target *t, tc_space *s) {
  (void)wl;
  (void)t;
  return tc__cuda_map_space(s, 1, 0);
}

static const tc_stmt *elem(tc__cuda_lc *L, const tc_expr *idx) {
  const tc_expr *v = ADD(LD(L->arg[TC_ARG_ELT_A], idx), LD(L->arg[TC_ARG_ELT_B], idx));
  return ST(L->arg[TC_ARG_ELT_OUT], idx, tc__cuda_epi(L, v, NULL, NULL));
}

static const tc_stmt *elem4(tc__cuda_lc *L, const tc_expr *idx4) {
  const tc_expr *idx = MUL(idx4, I(4));
  const tc_expr *v = ADD(tc_e_load(L->ir, L->arg[TC_ARG_ELT_A], idx, 4, 16),
                         tc_e_load(L->ir, L->arg[TC_ARG_ELT_B], idx, 4, 16));
  if (L->wl->epilogue & TC_EPI_RELU) v = tc_e_max(L->ir, v, tc_e_broadcast(L->ir, FLT(0.0), 4));
  if (L->wl->epilogue & TC_EPI_CLIP)
    v = tc_e_min(L->ir, tc_e_max(L->ir, v, tc_e_broadcast(L->ir, FLT(L->wl->clip_min), 4)),
                 tc_e_broadcast(L->ir, FLT(L->wl->clip_max), 4));
  return tc_s_store(L->ir, L->arg[TC_ARG_ELT_OUT], idx, v, 16);
}

static const tc_stmt *lower(tc__cuda_lc *L, const tc_space *s, const tc_config *c) {
  int64_t total = tc__cuda_in_total(L->wl);
  if (tc_config_int(s, c, "vec", 1) == 4) return tc__cuda_map_cfg(L, s, c, total / 4, elem4);
  return tc__cuda_map_cfg(L, s, c, total, elem);
}

const tc__cuda_op tc__cuda_op_eltwise = {TC_KERNEL_ELTWISE, space, tc__cuda_in_map_fallback,
                                         tc__cuda_in_map_shape, lower};
