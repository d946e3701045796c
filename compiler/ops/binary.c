/* Broadcast element-wise add, mul, sub and div (ops.h) over up to 6 dims into a contiguous output.
 * The iteration space is normalised first (tensor.c), so same-shape operands are one long run; each
 * run is vectorised on the output, an operand loaded contiguously (stride 1), broadcast from one
 * scalar (stride 0) or gathered (other strides), with a scalar tail. Runs (pieces of up to 4096
 * elements) run in parallel. Knobs: "pieces" per parallel task and "unroll" vectors per loop step.
 */
#include "ops_int.h"

typedef struct bi_ctx {
  const tc_workload *wl;
  const tc__strided *st;
  const tc_var *a, *b, *out;
  const tc_expr *ao, *bo, *oo; /* the piece's first element in a, b and out */
  int vl, unroll;
} bi_ctx;

static const tc_stmt *bi_step(tc_ir *ir, void *p, const tc_expr *i, int lanes, int slot) {
  (void)slot;
  static const tc_expr_kind ops[TC_BINARY_COUNT] = {TC_EXPR_ADD, TC_EXPR_MUL, TC_EXPR_SUB,
                                                    TC_EXPR_DIV};
  const bi_ctx *c = p;
  int last = c->st->nd - 1;
  const tc_expr *x = tc__strided_load(ir, c->a, c->ao, c->st->as[last], i, lanes);
  const tc_expr *y = tc__strided_load(ir, c->b, c->bo, c->st->bs[last], i, lanes);
  return tc_s_store(ir, c->out, tc_e_add(ir, c->oo, i), tc_e_bin(ir, ops[c->wl->op], x, y), 4);
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
  bi_ctx x = {wl,
              &st,
              tc_var_buffer(ir, "a", tc_type_f32(1), TC_ARG_ELT_A),
              tc_var_buffer(ir, "b", tc_type_f32(1), TC_ARG_ELT_B),
              tc_var_buffer(ir, "out", tc_type_f32(1), TC_ARG_ELT_OUT),
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
