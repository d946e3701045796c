/* GPU embedding (out[i, :] = table[indices[i], :], int64 indices): an element map over the output,
 * float4 runs of a row when oc is a multiple of 4. The index is compared with the table's rows in
 * 64 bits before any use, so an index outside [0, c) writes a row of zeros and never reads outside
 * the table. */
#include "templates_int.h"

static th_status space(const tc_workload *wl, const tc_cuda_target *t, tc_space *s) {
  (void)wl;
  (void)t;
  return tc__cuda_map_space(s, 1, 0);
}

static th_status shape(const tc_workload *wl, const tc_space *s, const tc_config *c,
                       tc__cuda_shape *sh, char *why, size_t whylen) {
  if (tc_config_int(s, c, "vec", 1) == 4 && wl->oc % 4)
    return tc__cuda_why(why, whylen, "float4 rows need oc % 4 == 0");
  return tc__cuda_out_map_shape(wl, s, c, sh, why, whylen);
}

static th_status fallback(const tc_workload *wl, const tc_cuda_target *t, const tc_space *s,
                          tc_config *c) {
  (void)t;
  tc__cuda_map_pick(s, c, wl->oc % 4 == 0);
  return TH_OK;
}

/* the element (vec lanes) at flat output index idx */
static const tc_stmt *gather(tc__cuda_lc *L, const tc_expr *idx, int vec) {
  const tc_workload *wl = L->wl;
  const tc_expr *row = DIV(idx, I(wl->oc)), *col = MOD(idx, I(wl->oc));
  const tc_expr *ix = LD(L->arg[0], row); /* long long */
  const tc_expr *ok = BIN(TC_EXPR_AND, BIN(TC_EXPR_GE, ix, I(0)), BIN(TC_EXPR_LT, ix, I(wl->c)));
  const tc_expr *src = ADD(MUL(ix, I(wl->oc)), col);
  const tc_expr *v = tc_e_load(L->ir, L->arg[1], src, vec, vec == 4 ? 16 : 4);
  const tc_expr *zero = vec == 4 ? tc_e_broadcast(L->ir, FLT(0.0), 4) : FLT(0.0);
  return tc_s_store(L->ir, L->arg[2], idx, tc_e_select(L->ir, ok, v, zero), vec == 4 ? 16 : 4);
}

static const tc_stmt *elem(tc__cuda_lc *L, const tc_expr *idx) {
  return gather(L, idx, 1);
}

static const tc_stmt *elem4(tc__cuda_lc *L, const tc_expr *idx4) {
  return gather(L, MUL(idx4, I(4)), 4);
}

static const tc_stmt *lower(tc__cuda_lc *L, const tc_space *s, const tc_config *c) {
  int64_t total = tc__cuda_out_total(L->wl);
  if (tc_config_int(s, c, "vec", 1) == 4) return tc__cuda_map_cfg(L, s, c, total / 4, elem4);
  return tc__cuda_map_cfg(L, s, c, total, elem);
}

const tc__cuda_op tc__cuda_op_embedding = {TC_KERNEL_EMBEDDING, space, fallback, shape, lower};
