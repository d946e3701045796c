/* Broadcast element-wise binary ops (TC_BINARY_*: add, mul, sub, div, max, min, pow, fmod and the
 * comparisons, Where's halves, workload.h) over up to 6 dims into a contiguous output, on float32
 * or (tc_workload.dtype TC_WL_I64) int64 elements: i64 vectors, division guarded at 0 and -1. The
 * iteration space is normalised first (tensor.c), so same-shape operands are one long run; each run
 * is vectorised on the output, an operand loaded contiguously (stride 1), broadcast from one scalar
 * (stride 0) or gathered (other strides), with a scalar tail. Runs (pieces of up to 4096 elements)
 * run in parallel. Knobs: "pieces" per parallel task and "unroll" vectors per loop step.
 */
#include "ops_int.h"

typedef struct bi_ctx {
  const tc_workload *wl;
  const tc__strided *st;
  const tc_var *a, *b, *out;
  const tc_expr *ao, *bo, *oo; /* the piece's first element in a, b and out */
  int vl, unroll;
} bi_ctx;

/* The float constant v shaped like x. */
static const tc_expr *bi_k(tc_ir *ir, const tc_expr *x, double v) {
  const tc_expr *c = tc_e_float(ir, v);
  return x->type.lanes > 1 ? tc_e_broadcast(ir, c, x->type.lanes) : c;
}

static const tc_expr_kind direct[] = {TC_EXPR_ADD, TC_EXPR_MUL, TC_EXPR_SUB,
                                      TC_EXPR_DIV, TC_EXPR_MAX, TC_EXPR_MIN};
static const tc_expr_kind cmp[] = {TC_EXPR_EQ, TC_EXPR_LT, TC_EXPR_GT,
                                   TC_EXPR_LE, TC_EXPR_GE, TC_EXPR_NE};

/* The int constant v shaped like x. */
static const tc_expr *bi_i(tc_ir *ir, const tc_expr *x, int64_t v) {
  const tc_expr *c = tc_e_int(ir, v);
  return x->type.lanes > 1 ? tc_e_broadcast(ir, c, x->type.lanes) : c;
}

/* x^y on int64 by square and multiply over y's 6 low bits (six unrolled steps): exact, wrapping
 * as numpy's, for y in 0..63; past 63 or below 0 (numpy refuses those) 1 for x = 1, +-1 by y's
 * parity for x = -1, else 0 (exact for an even x past 63). */
static const tc_expr *bi_int_pow(tc_ir *ir, const tc_expr *x, const tc_expr *y) {
  const tc_expr *zero = bi_i(ir, y, 0), *one = bi_i(ir, y, 1), *two = bi_i(ir, y, 2);
  const tc_expr *e = y, *p = x, *r = one;
  for (int k = 0; k < 6; k++) {
    const tc_expr *bit = tc_e_bin(ir, TC_EXPR_NE, tc_e_bin(ir, TC_EXPR_MOD, e, two), zero);
    r = tc_e_select(ir, bit, tc_e_mul(ir, r, p), r);
    if (k == 5) break;
    p = tc_e_mul(ir, p, p);
    e = tc_e_bin(ir, TC_EXPR_DIV, e, two);
  }
  const tc_expr *in = tc_e_bin(ir, TC_EXPR_AND, tc_e_bin(ir, TC_EXPR_GE, y, zero),
                               tc_e_bin(ir, TC_EXPR_LT, y, bi_i(ir, y, 64)));
  const tc_expr *odd = tc_e_bin(ir, TC_EXPR_NE, tc_e_bin(ir, TC_EXPR_MOD, y, two), zero);
  const tc_expr *m1 = bi_i(ir, y, -1);
  const tc_expr *out = tc_e_select(
      ir, tc_e_bin(ir, TC_EXPR_EQ, x, one), one,
      tc_e_select(ir, tc_e_bin(ir, TC_EXPR_EQ, x, m1), tc_e_select(ir, odd, m1, one), zero));
  return tc_e_select(ir, in, r, out);
}

/* The int64 ops (y int64; x int64, or the float mask of TAKE and LEAVE): a divisor of 0 or -1 is
 * replaced by 1 (x / 0 and x / -1 trap on x86) and the quotient fixed up after; x % 1 is already 0.
 */
static const tc_expr *bi_int(tc_ir *ir, int op, const tc_expr *x, const tc_expr *y) {
  const tc_expr *zero = bi_i(ir, y, 0);
  if (op == TC_BINARY_TAKE || op == TC_BINARY_LEAVE) {
    const tc_expr *c = tc_e_bin(ir, TC_EXPR_NE, x, bi_k(ir, x, 0.0));
    return op == TC_BINARY_TAKE ? tc_e_select(ir, c, y, zero) : tc_e_select(ir, c, zero, y);
  }
  if (op >= TC_BINARY_EQ && op <= TC_BINARY_NE)
    return tc_e_select(ir, tc_e_bin(ir, cmp[op - TC_BINARY_EQ], x, y), bi_k(ir, y, 1.0),
                       bi_k(ir, y, 0.0));
  if (op >= 0 && op <= TC_BINARY_MIN && op != TC_BINARY_DIV) return tc_e_bin(ir, direct[op], x, y);
  if (op == TC_BINARY_POW) return bi_int_pow(ir, x, y);
  if (op != TC_BINARY_DIV && op != TC_BINARY_FMOD && op != TC_BINARY_MOD) {
    if (ir->err == TH_OK) ir->err = TH_ERR_INTERNAL;
    return NULL;
  }
  const tc_expr *z = tc_e_bin(ir, TC_EXPR_EQ, y, zero),
                *neg = tc_e_bin(ir, TC_EXPR_EQ, y, bi_i(ir, y, -1));
  const tc_expr *safe = tc_e_select(ir, tc_e_bin(ir, TC_EXPR_OR, z, neg), bi_i(ir, y, 1), y);
  if (op == TC_BINARY_DIV)
    return tc_e_select(
        ir, z, zero,
        tc_e_select(ir, neg, tc_e_sub(ir, zero, x), tc_e_bin(ir, TC_EXPR_DIV, x, safe)));
  const tc_expr *r = tc_e_bin(ir, TC_EXPR_MOD, x, safe);
  if (op == TC_BINARY_FMOD) return r;
  /* the sign of y: r + y where r is nonzero and of the other sign */
  const tc_expr *lt = tc_e_bin(ir, TC_EXPR_AND, tc_e_bin(ir, TC_EXPR_LT, r, zero),
                               tc_e_bin(ir, TC_EXPR_GT, y, zero));
  const tc_expr *gt = tc_e_bin(ir, TC_EXPR_AND, tc_e_bin(ir, TC_EXPR_GT, r, zero),
                               tc_e_bin(ir, TC_EXPR_LT, y, zero));
  return tc_e_select(ir, tc_e_bin(ir, TC_EXPR_OR, lt, gt), tc_e_add(ir, r, y), r);
}

const tc_expr *tc__binary_expr(tc_ir *ir, int op, const tc_expr *x, const tc_expr *y) {
  if (y && y->type.code == TC_TYPE_INT) return bi_int(ir, op, x, y);
  const tc_expr *zero = bi_k(ir, x, 0.0), *one = bi_k(ir, x, 1.0);
  if (op >= 0 && op <= TC_BINARY_MIN) return tc_e_bin(ir, direct[op], x, y);
  if (op >= TC_BINARY_EQ && op <= TC_BINARY_NE)
    return tc_e_select(ir, tc_e_bin(ir, cmp[op - TC_BINARY_EQ], x, y), one, zero);
  if (op == TC_BINARY_TAKE || op == TC_BINARY_LEAVE) {
    const tc_expr *c = tc_e_bin(ir, TC_EXPR_NE, x, zero), *nz = bi_k(ir, x, -0.0);
    return op == TC_BINARY_TAKE ? tc_e_select(ir, c, y, nz) : tc_e_select(ir, c, nz, y);
  }
  if (op == TC_BINARY_FMOD) { /* x - y * trunc(x / y), the product subtracted exactly */
    const tc_expr *q = tc_e_div(ir, x, y);
    const tc_expr *t = tc_e_select(ir, tc_e_bin(ir, TC_EXPR_LT, q, zero),
                                   tc_e_float_fn(ir, TC_EXPR_CEIL, q),
                                   tc_e_float_fn(ir, TC_EXPR_FLOOR, q));
    return tc_e_fma(ir, tc_e_sub(ir, zero, y), t, x);
  }
  if (op != TC_BINARY_POW) {
    if (ir->err == TH_OK) ir->err = TH_ERR_INTERNAL;
    return NULL;
  }
  /* e^(y log |x|) for an integral y (negated for an odd one below zero), else e^(y log x): NaN
   * for x < 0; y = 0 gives 1 even at x = 0 (0 * log 0 would be NaN) */
  const tc_expr *integral = tc_e_bin(ir, TC_EXPR_EQ, tc_e_float_fn(ir, TC_EXPR_FLOOR, y), y);
  const tc_expr *half = tc_e_float_fn(ir, TC_EXPR_FLOOR, tc_e_mul(ir, y, bi_k(ir, x, 0.5)));
  const tc_expr *odd = tc_e_bin(ir, TC_EXPR_EQ, tc_e_fma(ir, half, bi_k(ir, x, -2.0), y), one);
  const tc_expr *ax = tc_e_max(ir, x, tc_e_sub(ir, zero, x));
  const tc_expr *r = tc_e_exp(
      ir, tc_e_mul(ir, y, tc_e_float_fn(ir, TC_EXPR_LOG, tc_e_select(ir, integral, ax, x))));
  r = tc_e_select(ir, tc_e_bin(ir, TC_EXPR_AND, tc_e_bin(ir, TC_EXPR_LT, x, zero), odd),
                  tc_e_sub(ir, zero, r), r);
  return tc_e_select(ir, tc_e_bin(ir, TC_EXPR_EQ, y, zero), one, r);
}

static const tc_stmt *bi_step(tc_ir *ir, void *p, const tc_expr *i, int lanes, int slot) {
  (void)slot;
  const bi_ctx *c = p;
  int last = c->st->nd - 1;
  const tc_expr *x = tc__strided_load(ir, c->a, c->ao, c->st->as[last], i, lanes);
  const tc_expr *y = tc__strided_load(ir, c->b, c->bo, c->st->bs[last], i, lanes);
  const tc_expr *r = tc__binary_expr(ir, c->wl->op, x, y);
  return tc_s_store(ir, c->out, tc_e_add(ir, c->oo, i), r,
                    r && r->type.code == TC_TYPE_INT ? 8 : 4);
}

static const tc_stmt *bi_piece(tc_ir *ir, void *p, const tc_expr *row, const tc_expr *off,
                               int64_t n) {
  bi_ctx *c = p;
  const tc__strided *st = c->st;
  tc__strided_offsets(ir, st, row, off, &c->ao, &c->bo);
  c->oo = tc_e_add(ir, tc_e_mul(ir, row, tc__c(ir, st->len)), off);
  return tc__vec_loop(ir, n, c->vl, c->unroll, bi_step, c);
}

static th_status lower(const tc_workload *wl, const tc_target *t, const tc_space *s,
                       const tc_config *c, tc_ir *ir, const tc_stmt **out) {
  tc__strided st;
  tc__strided_init(wl, &st);
  tc_type et[3];
  for (int a = 0; a < 3; a++) et[a] = tc_workload_i64_arg(wl, a) ? tc_type_int() : tc_type_f32(1);
  bi_ctx x = {wl,
              &st,
              tc_var_buffer(ir, "a", et[TC_ARG_ELT_A], TC_ARG_ELT_A),
              tc_var_buffer(ir, "b", et[TC_ARG_ELT_B], TC_ARG_ELT_B),
              tc_var_buffer(ir, "out", et[TC_ARG_ELT_OUT], TC_ARG_ELT_OUT),
              NULL,
              NULL,
              NULL,
              t->simd_lanes,
              tc__knob(s, c, "unroll")[0]};
  *out = tc__pieces(ir, st.rows, st.len, tc__knob(s, c, "pieces")[0], bi_piece, &x);
  return ir->err;
}

const tc__op tc__op_binary = {
    TC_KERNEL_BINARY, tc__tensor_space, tc__tensor_fallback, NULL, lower, NULL};
