/* Element-wise unary kernels over n elements (ops.h): gelu (erf form), tanh, the CNN activations
 * (sigmoid, hard sigmoid, hard swish, silu) and ONNX's element-wise math (exp, log, abs, floor,
 * elu,
 * ...) through the composite expressions of ir.h, so the vector and the scalar tail (and the GPU
 * template, which shares tc__unary_expr) compute the same function; the
 * int64 -> float cast (the input buffer holds int64, loaded as 64-bit integer vectors); x * alpha +
 * beta. Pieces of up to 4096 elements run in parallel, each an unrolled vector loop with a scalar
 * tail. Knobs: "pieces" per parallel task and "unroll" vectors per loop step. */
#include "ops_int.h"

/* The float constant v shaped like x. */
static const tc_expr *un_k(tc_ir *ir, const tc_expr *x, double v) {
  const tc_expr *c = tc_e_float(ir, v);
  return x && x->type.lanes > 1 ? tc_e_broadcast(ir, c, x->type.lanes) : c;
}

/* e^x - 1 below zero, times alpha (elu, selu, celu's negative side). */
static const tc_expr *un_expm1(tc_ir *ir, const tc_expr *x, double alpha) {
  return tc_e_mul(ir, un_k(ir, x, alpha), tc_e_sub(ir, tc_e_exp(ir, x), un_k(ir, x, 1.0)));
}

const tc_expr *tc__unary_expr(tc_ir *ir, int op, const tc_expr *x, double alpha, double beta) {
  const tc_expr *zero = un_k(ir, x, 0.0), *one = un_k(ir, x, 1.0);
  const tc_expr *abs = tc_e_max(ir, x, tc_e_sub(ir, zero, x));
  switch (op) {
    case TC_UNARY_GELU:
      return tc_e_gelu(ir, x);
    case TC_UNARY_TANH:
      return tc_e_tanh(ir, x);
    case TC_UNARY_SIGMOID:
      return tc_e_sigmoid(ir, x);
    case TC_UNARY_HARD_SIGMOID:
      return tc_e_hard_sigmoid(ir, x, alpha, beta);
    case TC_UNARY_HARD_SWISH:
      return tc_e_hard_swish(ir, x);
    case TC_UNARY_SILU:
      return tc_e_silu(ir, x);
    case TC_UNARY_CLIP:
      return tc_e_min(ir, tc_e_max(ir, x, un_k(ir, x, alpha)), un_k(ir, x, beta));
    case TC_UNARY_AFFINE:
      return tc_e_fma(ir, x, un_k(ir, x, alpha), un_k(ir, x, beta));
    case TC_UNARY_EXP:
      return tc_e_exp(ir, x);
    case TC_UNARY_LOG:
      return tc_e_float_fn(ir, TC_EXPR_LOG, x);
    case TC_UNARY_ABS:
      return abs;
    case TC_UNARY_SQRT:
      return tc_e_sqrt(ir, x);
    case TC_UNARY_RECIPROCAL:
      return tc_e_div(ir, one, x);
    case TC_UNARY_FLOOR:
      return tc_e_float_fn(ir, TC_EXPR_FLOOR, x);
    case TC_UNARY_CEIL:
      return tc_e_float_fn(ir, TC_EXPR_CEIL, x);
    case TC_UNARY_ROUND:
      return tc_e_float_fn(ir, TC_EXPR_ROUND, x);
    case TC_UNARY_SIGN:
      return tc_e_select(ir, tc_e_bin(ir, TC_EXPR_GT, x, zero), one,
                         tc_e_select(ir, tc_e_bin(ir, TC_EXPR_LT, x, zero), un_k(ir, x, -1.0), x));
    case TC_UNARY_ERF:
      return tc_e_erf(ir, x);
    case TC_UNARY_SOFTPLUS: /* max(x, 0) + log(1 + e^-|x|): no overflow for large x */
      return tc_e_add(
          ir, tc_e_max(ir, x, zero),
          tc_e_float_fn(ir, TC_EXPR_LOG, tc_e_add(ir, one, tc_e_exp(ir, tc_e_sub(ir, zero, abs)))));
    case TC_UNARY_SOFTSIGN:
      return tc_e_div(ir, x, tc_e_add(ir, one, abs));
    case TC_UNARY_ELU:
      return tc_e_select(ir, tc_e_bin(ir, TC_EXPR_GT, x, zero), x, un_expm1(ir, x, alpha));
    case TC_UNARY_SELU:
      return tc_e_mul(
          ir, un_k(ir, x, beta),
          tc_e_select(ir, tc_e_bin(ir, TC_EXPR_GT, x, zero), x, un_expm1(ir, x, alpha)));
    case TC_UNARY_LEAKY_RELU:
      return tc_e_select(ir, tc_e_bin(ir, TC_EXPR_GE, x, zero), x,
                         tc_e_mul(ir, un_k(ir, x, alpha), x));
    case TC_UNARY_CELU:
      return tc_e_add(ir, tc_e_max(ir, x, zero),
                      tc_e_min(ir, zero, un_expm1(ir, tc_e_div(ir, x, un_k(ir, x, alpha)), alpha)));
    case TC_UNARY_SINH:
    case TC_UNARY_COSH: {
      const tc_expr *ep = tc_e_exp(ir, x), *en = tc_e_exp(ir, tc_e_sub(ir, zero, x));
      return tc_e_mul(ir, un_k(ir, x, 0.5),
                      op == TC_UNARY_SINH ? tc_e_sub(ir, ep, en) : tc_e_add(ir, ep, en));
    }
    case TC_UNARY_ASINH: { /* on |x|, so that large negative x loses nothing to cancellation */
      const tc_expr *r =
          tc_e_float_fn(ir, TC_EXPR_LOG, tc_e_add(ir, abs, tc_e_sqrt(ir, tc_e_fma(ir, x, x, one))));
      return tc_e_select(ir, tc_e_bin(ir, TC_EXPR_LT, x, zero), tc_e_sub(ir, zero, r), r);
    }
    case TC_UNARY_ACOSH:
      return tc_e_float_fn(ir, TC_EXPR_LOG,
                           tc_e_add(ir, x, tc_e_sqrt(ir, tc_e_fma(ir, x, x, un_k(ir, x, -1.0)))));
    case TC_UNARY_ATANH:
      return tc_e_mul(
          ir, un_k(ir, x, 0.5),
          tc_e_float_fn(ir, TC_EXPR_LOG, tc_e_div(ir, tc_e_add(ir, one, x), tc_e_sub(ir, one, x))));
    case TC_UNARY_SIN:
    case TC_UNARY_COS:
    case TC_UNARY_TAN:
    case TC_UNARY_ASIN:
    case TC_UNARY_ACOS:
    case TC_UNARY_ATAN:
      return tc_e_float_fn(ir, (tc_expr_kind)(TC_EXPR_SIN + (op - TC_UNARY_SIN)), x);
    case TC_UNARY_ISNAN:
      return tc_e_select(ir, tc_e_bin(ir, TC_EXPR_NE, x, x), one, zero);
    case TC_UNARY_ISINF: { /* beyond FLT_MAX: only an infinity (NaN compares false) */
      const tc_expr *big = un_k(ir, x, 3.4028234663852886e38);
      const tc_expr *t = alpha != 0 && beta != 0 ? tc_e_bin(ir, TC_EXPR_GT, abs, big)
                         : alpha != 0            ? tc_e_bin(ir, TC_EXPR_GT, x, big)
                         : beta != 0 ? tc_e_bin(ir, TC_EXPR_GT, tc_e_sub(ir, zero, x), big)
                                     : NULL;
      return t ? tc_e_select(ir, t, one, zero) : zero; /* neither sign: never */
    }
    case TC_UNARY_THRESHOLDED_RELU:
      return tc_e_select(ir, tc_e_bin(ir, TC_EXPR_GT, x, un_k(ir, x, alpha)), x, zero);
    default:
      if (ir->err == TH_OK) ir->err = TH_ERR_INTERNAL;
      return NULL;
  }
}

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
  if (c->wl->op == TC_UNARY_CAST_I64)
    y = tc_e_cast(ir, tc_type_f32(lanes), x);
  else if (c->wl->op == TC_UNARY_CAST_TO_I64)
    y = tc_e_cast(ir, (tc_type){TC_TYPE_INT, (uint16_t)lanes}, x);
  else
    y = tc__unary_expr(ir, c->wl->op, x, c->wl->alpha, c->wl->beta);
  return tc_s_store(ir, c->out, at, y, c->wl->op == TC_UNARY_CAST_TO_I64 ? 8 : 4);
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
  tc_type ot = wl->op == TC_UNARY_CAST_TO_I64 ? tc_type_int() : tc_type_f32(1);
  un_ctx x = {wl,
              tc_var_buffer(ir, "in", et, 0),
              tc_var_buffer(ir, "out", ot, 1),
              NULL,
              t->simd_lanes,
              tc__knob(s, c, "unroll")[0]};
  *out = tc__pieces(ir, 1, wl->n, tc__knob(s, c, "pieces")[0], un_piece, &x);
  return ir->err;
}

const tc__op tc__op_unary = {
    TC_KERNEL_UNARY, tc__tensor_space, tc__tensor_fallback, NULL, lower, NULL};
