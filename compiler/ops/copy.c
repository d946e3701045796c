/* Strided copy (ops.h) over up to 6 dims: transposes (attention's head split and merge), slices,
 * expands (stride 0) and the parts of a concat. The iteration space is first normalised (tensor.c:
 * extent-1 dims dropped, dims contiguous on both sides merged), so a contiguous copy is one long
 * run. When the output's innermost dim is unit-stride, each run is copied as vectors (loaded
 * contiguously, broadcast for stride 0, or gathered), else element by element. Runs (pieces of up
 * to 4096 elements) run in parallel. Knobs: "pieces" per parallel task and "unroll" vectors per
 * loop step. */
#include "ops_int.h"

typedef struct cp_ctx {
  const tc__strided *st;
  const tc_var *in, *out;
  const tc_expr *a, *b; /* the piece's first element on each side */
  int aoff, boff, vl, unroll;
} cp_ctx;

static const tc_stmt *cp_step(tc_ir *ir, void *p, const tc_expr *i, int lanes, int slot) {
  (void)slot;
  const cp_ctx *c = p;
  int64_t as = c->st->as[c->st->nd - 1], bs = c->st->bs[c->st->nd - 1];
  const tc_expr *v = tc__strided_load(ir, c->in, c->a, as, i, lanes);
  return tc_s_store(ir, c->out, tc_e_add(ir, c->b, tc_e_mul(ir, i, tc__c(ir, bs))), v, 4);
}

static const tc_stmt *cp_piece(tc_ir *ir, void *p, const tc_expr *row, const tc_expr *off,
                               int64_t n) {
  cp_ctx *c = p;
  const tc__strided *st = c->st;
  tc__strided_offsets(ir, st, row, off, &c->a, &c->b);
  c->a = tc_e_add(ir, c->a, tc__c(ir, c->aoff));
  c->b = tc_e_add(ir, c->b, tc__c(ir, c->boff));
  int vl = st->bs[st->nd - 1] == 1 ? c->vl : 1; /* vector stores need a contiguous output */
  return tc__vec_loop(ir, n, vl, c->unroll, cp_step, c);
}

static th_status lower(const tc_workload *wl, const tc_target *t, const tc_space *s,
                       const tc_config *c, tc_ir *ir, const tc_stmt **out) {
  tc__strided st;
  tc__strided_init(wl, &st);
  cp_ctx x = {&st,
              tc_var_buffer(ir, "in", tc_type_f32(1), TC_ARG_SIMPLE_IN),
              tc_var_buffer(ir, "out", tc_type_f32(1), TC_ARG_SIMPLE_OUT),
              NULL,
              NULL,
              wl->aoff,
              wl->boff,
              t->simd_lanes,
              tc__knob(s, c, "unroll")[0]};
  *out = tc__pieces(ir, st.rows, st.len, tc__knob(s, c, "pieces")[0], cp_piece, &x);
  return ir->err;
}

const tc__op tc__op_copy = {
    TC_KERNEL_COPY, tc__tensor_space, tc__tensor_fallback, NULL, lower, NULL};
