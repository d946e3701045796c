/* GPU depthwise conv (groups == c == oc, torch weights [c, 1, kh, kw]): an element map, one thread
 * per output element and `inner` elements per thread, each reducing its window in a register; the
 * window loops are unrolled per auto_unroll_max_step; a dilated one's taps lie dil apart
 * (tc__cuda_window_map). */
#include "templates_int.h"

static const tc_expr *update(tc__cuda_lc *L, const tc__cuda_pos *p, const tc_expr *acc,
                             const tc_expr *x) {
  const tc_workload *wl = L->wl;
  const tc_expr *w = LD(L->arg[TC_ARG_WEIGHTS],
                        ADD(MUL(ADD(MUL(V(p->c), I(wl->kh)), V(p->ky)), I(wl->kw)), V(p->kx)));
  return tc_e_fma(L->ir, x, w, acc);
}

static const tc__cuda_window window = {0.0f, TC_ARG_OUT, update, NULL};

static const tc_stmt *lower(tc__cuda_lc *L, const tc_space *s, const tc_config *c) {
  return tc__cuda_window_map(L, s, c, &window);
}

const tc__cuda_op tc__cuda_op_depthwise = TC__CUDA_WINDOW_OP(TC_KERNEL_DEPTHWISE, lower);
