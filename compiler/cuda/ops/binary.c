/* GPU binary (out = a op b with broadcasting by per-dimension strides, out contiguous): the strided
 * element map of templates.c with two inputs; float4 runs when the innermost merged dimension is
 * contiguous in the output and in each input that does not broadcast along it (one that does gives
 * one scalar for all 4) and the op is one the printer vectorises (add, mul, sub, div, max, min;
 * pow, fmod and the comparisons select lane-wise, which float4 code does not, so they run a float
 * at a time). int64 workloads (TC_WL_I64: `long long` buffers, codegen.c) run an element at a time.
 */
#include "../../ops/ops_int.h"
#include "templates_int.h"

static const tc_stmt *elem(tc__cuda_lc *L, const tc__cuda_dims *d, tc_var *const *offs, int vec) {
  const tc_expr *a = tc__cuda_strided_load(L, d, 0, L->arg[0], V(offs[0]), vec);
  const tc_expr *b = tc__cuda_strided_load(L, d, 1, L->arg[1], V(offs[1]), vec);
  const tc_expr *r = tc__binary_expr(L->ir, L->wl->op, a, b);
  int align = vec == 4 ? 16 : r && r->type.code == TC_TYPE_INT ? 8 : 4;
  return tc_s_store(L->ir, L->arg[2], V(offs[2]), r, align);
}

static const tc_stmt *lower(tc__cuda_lc *L, const tc_space *s, const tc_config *c) {
  return tc__cuda_strided_lower(L, s, c, elem);
}

static th_status shape(const tc_workload *wl, const tc_space *s, const tc_config *c,
                       tc__cuda_shape *sh, char *why, size_t whylen) {
  if ((wl->op > TC_BINARY_MIN || wl->dtype == TC_WL_I64) && tc_config_int(s, c, "vec", 1) == 4)
    return tc__cuda_why(why, whylen, "float4 only for float add, mul, sub, div, max and min");
  return tc__cuda_strided_shape(wl, s, c, sh, why, whylen);
}

static th_status fallback(const tc_workload *wl, const tc_cuda_target *t, const tc_space *s,
                          tc_config *c) {
  if (wl->op <= TC_BINARY_MIN && wl->dtype == TC_WL_F32)
    return tc__cuda_strided_fallback(wl, t, s, c);
  tc__cuda_map_pick(s, c, 0);
  return TH_OK;
}

const tc__cuda_op tc__cuda_op_binary = {TC_KERNEL_BINARY, tc__cuda_strided_space, fallback, shape,
                                        lower};
