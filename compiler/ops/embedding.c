/* Embedding lookup (ops.h): out row i = table row indices[i] (int64), a row of zeros for an index
 * outside [0, c), which is checked before any load so the table is never read outside. Rows (pieces
 * of up to 4096 floats of them) run in parallel, each copied as unrolled vectors plus a scalar
 * tail. Knobs: "pieces" per parallel task and "unroll" vectors per loop step. */
#include "ops_int.h"

typedef struct em_ctx {
  const tc_workload *wl;
  const tc_var *idx, *table, *out;
  const tc_expr *src,
      *dst; /* the piece's first element in the table (NULL: zeros) and the output */
  int vl, unroll;
} em_ctx;

static const tc_stmt *em_step(tc_ir *ir, void *p, const tc_expr *i, int lanes, int slot) {
  (void)slot;
  const em_ctx *c = p;
  const tc_expr *v = c->src ? tc_e_load(ir, c->table, tc_e_add(ir, c->src, i), lanes, 4)
                            : tc_e_broadcast(ir, tc_e_float(ir, 0.0), lanes);
  return tc_s_store(ir, c->out, tc_e_add(ir, c->dst, i), v, 4);
}

static const tc_stmt *em_piece(tc_ir *ir, void *p, const tc_expr *row, const tc_expr *off,
                               int64_t n) {
  em_ctx *c = p;
  int64_t D = c->wl->oc;
  tc_var *k = tc_var_new(ir, "index", tc_type_int());
  const tc_expr *ke = tc__v(ir, k);
  c->dst = tc_e_add(ir, tc_e_mul(ir, row, tc__c(ir, D)), off);
  c->src = tc_e_add(ir, tc_e_mul(ir, ke, tc__c(ir, D)), off);
  const tc_stmt *copy = tc__vec_loop(ir, n, c->vl, c->unroll, em_step, c);
  c->src = NULL;
  const tc_stmt *zeros = tc__vec_loop(ir, n, c->vl, c->unroll, em_step, c);
  return tc_s_let(ir, k, tc_e_load(ir, c->idx, row, 1, 8),
                  tc_s_if(ir, tc__in_range(ir, ke, 0, c->wl->c), copy, zeros));
}

static th_status lower(const tc_workload *wl, const tc_target *t, const tc_space *s,
                       const tc_config *c, tc_ir *ir, const tc_stmt **out) {
  em_ctx x = {wl,
              tc_var_buffer(ir, "indices", tc_type_int(), 0),
              tc_var_buffer(ir, "table", tc_type_f32(1), 1),
              tc_var_buffer(ir, "out", tc_type_f32(1), 2),
              NULL,
              NULL,
              t->simd_lanes,
              tc__knob(s, c, "unroll")[0]};
  *out = tc__pieces(ir, wl->n, wl->oc, tc__knob(s, c, "pieces")[0], em_piece, &x);
  return ir->err;
}

const tc__op tc__op_embedding = {
    TC_KERNEL_EMBEDDING, tc__tensor_space, tc__tensor_fallback, NULL, lower, NULL};
