/* Element-wise unary kernels over n elements (ops.h): gelu (erf form), tanh and the CNN activations
 * (sigmoid, hard sigmoid, hard swish, silu) through the composite expressions of ir.h, so the vector
 * and the scalar tail compute the same function; the
 * int64 -> float cast (the input buffer holds int64, loaded as 64-bit integer vectors); x * alpha +
 * beta. Pieces of up to 4096 elements run in parallel, each an unrolled vector loop with a scalar
 * tail. Knobs: "pieces" per parallel task and "unroll" vectors per loop step. */
#include "ops_int.h"

typedef struct un_ctx {
  const tc_workload *wl;
  const tc_var *in, *out;
  const tc_expr *base;
  int vl, unroll;
} un_ctx;

static const tc_stmt *un_step(tc_ir *ir, void *p, const tc_expr *i, int lanes, int slot) {
  (void)slot;
  const un_ctx *c = p;
  const tc_expr *at = tc_e_add(ir, c->base, i);
  const tc_expr *x = tc_e_load(ir, c->in, at, lanes, c->wl->op == TC_UNARY_CAST_I64 ? 8 : 4),
                *y = NULL;
  switch (c->wl->op) {
    case TC_UNARY_GELU:
      y = tc_e_gelu(ir, x);
      break;
    case TC_UNARY_TANH:
      y = tc_e_tanh(ir, x);
      break;
    case TC_UNARY_CAST_I64:
      y = tc_e_cast(ir, tc_type_f32(lanes), x);
      break;
    case TC_UNARY_SIGMOID:
      y = tc_e_sigmoid(ir, x);
      break;
    case TC_UNARY_HARD_SIGMOID:
      y = tc_e_hard_sigmoid(ir, x, c->wl->alpha, c->wl->beta);
      break;
    case TC_UNARY_HARD_SWISH:
      y = tc_e_hard_swish(ir, x);
      break;
    case TC_UNARY_SILU:
      y = tc_e_silu(ir, x);
      break;
    case TC_UNARY_CLIP:
      y = tc_e_min(ir, tc_e_max(ir, x, tc_e_broadcast(ir, tc_e_float(ir, c->wl->alpha), lanes)),
                   tc_e_broadcast(ir, tc_e_float(ir, c->wl->beta), lanes));
      break;
    default:
      y = tc_e_fma(ir, x, tc_e_broadcast(ir, tc_e_float(ir, c->wl->alpha), lanes),
                   tc_e_broadcast(ir, tc_e_float(ir, c->wl->beta), lanes));
      break;
  }
  return tc_s_store(ir, c->out, at, y, 4);
}

/* One piece: the vector loop over n elements from off. */
static const tc_stmt *un_piece(tc_ir *ir, void *p, const tc_expr *row, const tc_expr *off,
                               int64_t n) {
  (void)row; /* one run */
  un_ctx *c = p;
  c->base = off;
  return tc__vec_loop(ir, n, c->vl, c->unroll, un_step, c);
}

static th_status lower(const tc_workload *wl, const tc_target *t, const tc_space *s,
                       const tc_config *c, tc_ir *ir, const tc_stmt **out) {
  tc_type et = wl->op == TC_UNARY_CAST_I64 ? tc_type_int() : tc_type_f32(1);
  un_ctx x = {wl,
              tc_var_buffer(ir, "in", et, 0),
              tc_var_buffer(ir, "out", tc_type_f32(1), 1),
              NULL,
              t->simd_lanes,
              tc__knob(s, c, "unroll")[0]};
  *out = tc__pieces(ir, 1, wl->n, tc__knob(s, c, "pieces")[0], un_piece, &x);
  return ir->err;
}

const tc__op tc__op_unary = {
    TC_KERNEL_UNARY, tc__tensor_space, tc__tensor_fallback, NULL, lower, NULL};
