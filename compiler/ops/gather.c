/* Gather by runtime int64 indices (ops.h): ONNX Gather and GatherElements, and the class pick of
 * the losses, as one strided element map. Each output element loads its index, wraps a negative one
 * by the axis extent c, and reads the data only when the index is inside [0, c) (and is not the
 * ignored one), so no index can read outside the data; the others give 0. Scalar loops (each
 * element is a dependent load), rows of the output cut into pieces run in parallel. Knobs: "pieces"
 * per parallel task and "unroll" (always 1: no vectors). */
#include <string.h>

#include "ops_int.h"

typedef struct ga_ctx {
  const tc_workload *wl;
  const tc_var *data, *idx, *out;
  const tc_expr *a, *b, *o; /* the piece's first element: data and index offsets, output offset */
  int64_t as, bs;           /* strides of the innermost dim */
  int unroll;
} ga_ctx;

static const tc_stmt *ga_step(tc_ir *ir, void *p, const tc_expr *i, int lanes, int slot) {
  (void)lanes, (void)slot;
  const ga_ctx *c = p;
  const tc_workload *wl = c->wl;
  tc_var *raw = tc_var_new(ir, "raw", tc_type_int()), *k = tc_var_new(ir, "k", tc_type_int());
  const tc_expr *r = tc__v(ir, raw), *ke = tc__v(ir, k);
  const tc_expr *at = tc_e_add(ir, c->o, i);
  const tc_expr *src = tc_e_add(ir, tc_e_add(ir, c->a, tc_e_mul(ir, i, tc__c(ir, c->as))),
                                tc_e_mul(ir, ke, tc__c(ir, wl->oc)));
  const tc_expr *ok = tc__in_range(ir, ke, 0, wl->c);
  if (wl->kh) ok = tc__and(ir, ok, tc_e_not(ir, tc_e_bin(ir, TC_EXPR_EQ, r, tc__c(ir, wl->kw))));
  const tc_stmt *pick =
      tc_s_if(ir, ok, tc_s_store(ir, c->out, at, tc_e_load(ir, c->data, src, 1, 4), 4),
              tc_s_store(ir, c->out, at, tc_e_float(ir, 0.0), 4));
  const tc_expr *wrap = tc_e_select(ir, tc_e_bin(ir, TC_EXPR_LT, r, tc__c(ir, 0)),
                                    tc_e_add(ir, r, tc__c(ir, wl->c)), r);
  const tc_expr *load =
      tc_e_load(ir, c->idx, tc_e_add(ir, c->b, tc_e_mul(ir, i, tc__c(ir, c->bs))), 1, 8);
  return tc_s_let(ir, raw, load, tc_s_let(ir, k, wrap, pick));
}

static const tc_stmt *ga_piece(tc_ir *ir, void *p, const tc_expr *row, const tc_expr *off,
                               int64_t n) {
  ga_ctx *c = p;
  const tc_workload *wl = c->wl;
  tc__strided st;
  tc__strided_full(wl, &st);
  tc__strided_offsets(ir, &st, row, off, &c->a, &c->b);
  c->o = tc_e_add(ir, tc_e_mul(ir, row, tc__c(ir, wl->shape[wl->ndim - 1])), off);
  return tc__vec_loop(ir, n, 1, c->unroll, ga_step, c);
}

static th_status lower(const tc_workload *wl, const tc_target *t, const tc_space *s,
                       const tc_config *c, tc_ir *ir, const tc_stmt **out) {
  (void)t;
  int64_t rows = 1, len = wl->shape[wl->ndim - 1];
  for (int d = 0; d < wl->ndim - 1; d++) rows *= wl->shape[d];
  ga_ctx x = {wl,
              tc_var_buffer(ir, "data", tc_type_f32(1), 0),
              tc_var_buffer(ir, "indices", tc_type_int(), 1),
              tc_var_buffer(ir, "out", tc_type_f32(1), 2),
              NULL,
              NULL,
              NULL,
              wl->astride[wl->ndim - 1],
              wl->bstride[wl->ndim - 1],
              tc__knob(s, c, "unroll")[0]};
  *out = tc__pieces(ir, rows, len, tc__knob(s, c, "pieces")[0], ga_piece, &x);
  return ir->err;
}

const tc__op tc__op_gather = {
    TC_KERNEL_GATHER, tc__tensor_space, tc__tensor_fallback, NULL, lower, NULL};
