/* GPU gather by runtime int64 indices (ONNX Gather, GatherElements, the losses' class pick): an
 * element map over the contiguous output, each element's data and index offsets built from its
 * digits. The index is wrapped and compared with the axis extent in 64 bits before any use, so an
 * index outside [-c, c) (or the ignored one) writes 0 and never reads outside the data. */
#include "templates_int.h"

static const tc_stmt *elem(tc__cuda_lc *L, const tc_expr *idx) {
  const tc_workload *wl = L->wl;
  const tc_expr *a, *b;
  tc__cuda_digit_offsets(L, idx, &a, &b);
  tc_var *raw = tc_var_new(L->ir, "raw", tc_type_int()), *k = tc_var_new(L->ir, "k", tc_type_int());
  const tc_expr *wrap =
      tc_e_select(L->ir, BIN(TC_EXPR_LT, V(raw), I(0)), ADD(V(raw), I(wl->c)), V(raw));
  const tc_expr *ok =
      BIN(TC_EXPR_AND, BIN(TC_EXPR_GE, V(k), I(0)), BIN(TC_EXPR_LT, V(k), I(wl->c)));
  if (wl->kh) ok = BIN(TC_EXPR_AND, ok, tc_e_not(L->ir, BIN(TC_EXPR_EQ, V(raw), I(wl->kw))));
  const tc_expr *v = LD(L->arg[0], ADD(a, MUL(V(k), I(wl->oc))));
  const tc_stmt *st = ST(L->arg[2], idx, tc_e_select(L->ir, ok, v, FLT(0.0)));
  return tc_s_let(L->ir, raw, LD(L->arg[1], b), tc_s_let(L->ir, k, wrap, st));
}

static const tc_stmt *lower(tc__cuda_lc *L, const tc_space *s, const tc_config *c) {
  return tc__cuda_map_cfg(L, s, c, tc__cuda_out_total(L->wl), elem);
}

const tc__cuda_op tc__cuda_op_gather = {TC_KERNEL_GATHER, tc__cuda_plain_map_space,
                                        tc__cuda_plain_map_fallback, tc__cuda_out_map_shape, lower};
