/* Scatter by runtime int64 indices (ops.h): ONNX ScatterElements and the old Scatter, as an element
 * map over the output. Each output element starts as the data's element, then runs through the kh
 * updates that can land on it (the index's positions along the scattered axis, in index order) and
 * folds in each whose index, wrapped once when negative, names its coordinate on the axis: replaced
 * (TC_SCATTER_NONE: the last of duplicates wins, as in ONNX's reference), added, multiplied, or
 * maxed/minned. An index outside [-c, c) matches nothing. Rows of the output cut into pieces run in
 * parallel; scalar loops. Knobs: "pieces" per parallel task and "unroll" (always 1). */
#include <string.h>

#include "ops_int.h"

const tc_expr *tc__scatter_fold(tc_ir *ir, int op, const tc_expr *acc, const tc_expr *u) {
  switch (op) {
    case TC_SCATTER_ADD:
      return tc_e_add(ir, acc, u);
    case TC_SCATTER_MUL:
      return tc_e_mul(ir, acc, u);
    case TC_SCATTER_MAX:
      return tc_e_max(ir, acc, u);
    case TC_SCATTER_MIN:
      return tc_e_min(ir, acc, u);
    default:
      return u;
  }
}

const tc_stmt *tc__scatter_elem(tc_ir *ir, const tc_workload *wl, const tc_var *const bufs[4],
                                const tc_expr *at, const tc_expr *pos, const tc_expr *base) {
  tc_var *j = tc_var_new(ir, "j", tc_type_int()), *raw = tc_var_new(ir, "raw", tc_type_int());
  tc_var *k = tc_var_new(ir, "k", tc_type_int());
  const tc_expr *r = tc__v(ir, raw), *ke = tc__v(ir, k);
  const tc_expr *u = tc_e_add(ir, base, tc_e_mul(ir, tc__v(ir, j), tc__c(ir, wl->oc)));
  const tc_expr *wrap = tc_e_select(ir, tc_e_bin(ir, TC_EXPR_LT, r, tc__c(ir, 0)),
                                    tc_e_add(ir, r, tc__c(ir, wl->c)), r);
  const tc_expr *v = tc__scatter_fold(ir, wl->op, tc_e_load(ir, bufs[3], at, 1, 4),
                                      tc_e_load(ir, bufs[2], u, 1, 4));
  const tc_stmt *hit =
      tc_s_if(ir, tc_e_bin(ir, TC_EXPR_EQ, ke, pos), tc_s_store(ir, bufs[3], at, v, 4), NULL);
  const tc_stmt *body =
      tc_s_let(ir, raw, tc_e_load(ir, bufs[1], u, 1, 8), tc_s_let(ir, k, wrap, hit));
  const tc_stmt *seq[2] = {tc_s_store(ir, bufs[3], at, tc_e_load(ir, bufs[0], at, 1, 4), 4),
                           tc_s_for(ir, j, tc__c(ir, 0), tc__c(ir, wl->kh), TC_FOR_SERIAL, body)};
  return tc_s_seq(ir, 2, seq);
}

typedef struct sc_ctx {
  const tc_workload *wl;
  const tc_var *bufs[4];    /* data, indices, updates, out */
  const tc_expr *a, *b, *o; /* the piece's first element: axis coordinate, index offset, output */
  int64_t as, bs;           /* strides of the innermost dim */
  int unroll;
} sc_ctx;

static const tc_stmt *sc_step(tc_ir *ir, void *p, const tc_expr *i, int lanes, int slot) {
  (void)lanes, (void)slot;
  const sc_ctx *c = p;
  return tc__scatter_elem(ir, c->wl, c->bufs, tc_e_add(ir, c->o, i),
                          tc_e_add(ir, c->a, tc_e_mul(ir, i, tc__c(ir, c->as))),
                          tc_e_add(ir, c->b, tc_e_mul(ir, i, tc__c(ir, c->bs))));
}

static const tc_stmt *sc_piece(tc_ir *ir, void *p, const tc_expr *row, const tc_expr *off,
                               int64_t n) {
  sc_ctx *c = p;
  const tc_workload *wl = c->wl;
  tc__strided st;
  tc__strided_full(wl, &st);
  tc__strided_offsets(ir, &st, row, off, &c->a, &c->b);
  c->o = tc_e_add(ir, tc_e_mul(ir, row, tc__c(ir, wl->shape[wl->ndim - 1])), off);
  return tc__vec_loop(ir, n, 1, c->unroll, sc_step, c);
}

static th_status lower(const tc_workload *wl, const tc_target *t, const tc_space *s,
                       const tc_config *c, tc_ir *ir, const tc_stmt **out) {
  (void)t;
  int64_t rows = 1, len = wl->shape[wl->ndim - 1];
  for (int d = 0; d < wl->ndim - 1; d++) rows *= wl->shape[d];
  sc_ctx x = {
      wl,
      {tc_var_buffer(ir, "data", tc_type_f32(1), 0), tc_var_buffer(ir, "indices", tc_type_int(), 1),
       tc_var_buffer(ir, "updates", tc_type_f32(1), 2),
       tc_var_buffer(ir, "out", tc_type_f32(1), 3)},
      NULL,
      NULL,
      NULL,
      wl->astride[wl->ndim - 1],
      wl->bstride[wl->ndim - 1],
      tc__knob(s, c, "unroll")[0]};
  *out = tc__pieces(ir, rows, len, tc__knob(s, c, "pieces")[0], sc_piece, &x);
  return ir->err;
}

const tc__op tc__op_scatter = {
    TC_KERNEL_SCATTER, tc__tensor_space, tc__tensor_fallback, NULL, lower, NULL};
