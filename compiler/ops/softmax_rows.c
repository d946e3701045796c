/* Softmax over rows of w floats (attention scores, ops.h): v = alpha * x (+ the batch's mask row),
 * then three vectorised passes over the row: the max of v, exp(v - max) written to the output and
 * summed, and the scaling by 1 / sum. A fully masked row (mask -3.4e38 everywhere) has v = max
 * everywhere, so it comes out uniform, as in torch. Knobs: "rows" per parallel task and "accs", the
 * independent vector accumulators of the max and the sum. */
#include <math.h>

#include "ops_int.h"

typedef struct sm_ctx {
  const tc_workload *wl;
  const tc_var *in, *mask, *out, *mx, *inv;
  const tc__red *red;
  const tc_expr *base, *mbase;
  int pass;
} sm_ctx;

/* alpha * x + mask for `lanes` elements at i of the row. */
static const tc_expr *scores(tc_ir *ir, const sm_ctx *c, const tc_expr *i, int lanes) {
  const tc_expr *x = tc_e_load(ir, c->in, tc_e_add(ir, c->base, i), lanes, 4);
  const tc_expr *m = NULL;
  if (c->wl->epilogue & TC_EPI_MASK)
    m = tc_e_load(ir, c->mask, tc_e_add(ir, c->mbase, i), lanes, 4);
  if (c->wl->alpha == 1.0f) return m ? tc_e_add(ir, x, m) : x;
  const tc_expr *a = tc_e_broadcast(ir, tc_e_float(ir, c->wl->alpha), lanes);
  return m ? tc_e_fma(ir, a, x, m) : tc_e_mul(ir, a, x);
}

static const tc_stmt *sm_step(tc_ir *ir, void *p, const tc_expr *i, int lanes, int slot) {
  const sm_ctx *c = p;
  const tc_expr *at = tc_e_add(ir, c->base, i);
  if (c->pass == 0) return tc__red_step(ir, c->red, slot, scores(ir, c, i, lanes));
  if (c->pass == 2) {
    const tc_expr *inv = tc_e_broadcast(ir, tc__v(ir, c->inv), lanes);
    return tc_s_store(ir, c->out, at, tc_e_mul(ir, tc_e_load(ir, c->out, at, lanes, 4), inv), 4);
  }
  tc_var *e = tc_var_new(ir, "e", tc_type_f32(lanes));
  const tc_expr *mx = tc_e_broadcast(ir, tc__v(ir, c->mx), lanes);
  const tc_stmt *items[2] = {tc_s_store(ir, c->out, at, tc__v(ir, e), 4),
                             tc__red_step(ir, c->red, slot, tc__v(ir, e))};
  return tc_s_let(ir, e, tc_e_exp(ir, tc_e_sub(ir, scores(ir, c, i, lanes), mx)),
                  tc_s_seq(ir, 2, items));
}

static int64_t nrows(const tc_workload *wl) {
  return (int64_t)wl->n * wl->c * wl->h;
}

static th_status lower(const tc_workload *wl, const tc_target *t, const tc_space *s,
                       const tc_config *c, tc_ir *ir, const tc_stmt **out) {
  int vl = t->simd_lanes, accs = tc__knob(s, c, "accs")[0];
  int64_t W = wl->w, per_n = (int64_t)wl->c * wl->h;
  tc__red mx, sum;
  tc__red_new(ir, &mx, accs, vl, TC_EXPR_MAX, -INFINITY);
  tc__red_new(ir, &sum, accs, vl, TC_EXPR_ADD, 0.0);
  tc_var *row = tc_var_new(ir, "row", tc_type_int()),
         *total = tc_var_new(ir, "sum", tc_type_f32(1));
  const tc_expr *r = tc__v(ir, row);
  sm_ctx x = {wl,
              tc_var_buffer(ir, "in", tc_type_f32(1), 0),
              tc_var_buffer(ir, "mask", tc_type_f32(1), 1),
              tc_var_buffer(ir, "out", tc_type_f32(1), 2),
              tc_var_new(ir, "mx", tc_type_f32(1)),
              tc_var_new(ir, "inv", tc_type_f32(1)),
              &mx,
              tc_e_mul(ir, r, tc__c(ir, W)),
              tc_e_mul(ir, tc_e_div(ir, r, tc__c(ir, per_n)), tc__c(ir, W)),
              0};
  const tc_stmt *maxes = tc__vec_loop(ir, W, vl, accs, sm_step, &x);
  x.pass = 1;
  x.red = &sum;
  const tc_stmt *exps = tc__vec_loop(ir, W, vl, accs, sm_step, &x);
  x.pass = 2;
  const tc_stmt *scale = tc__vec_loop(ir, W, vl, accs, sm_step, &x);
  const tc_expr *inv = tc_e_div(ir, tc_e_float(ir, 1.0), tc__v(ir, total));
  const tc_stmt *second[3] = {tc__red_init(ir, &sum), exps,
                              tc__red_let(ir, &sum, total, tc_s_let(ir, x.inv, inv, scale))};
  const tc_stmt *first[3] = {tc__red_init(ir, &mx), maxes,
                             tc__red_let(ir, &mx, x.mx, tc_s_seq(ir, 3, second))};
  const tc_stmt *body = tc__red_alloc(ir, &mx, tc__red_alloc(ir, &sum, tc_s_seq(ir, 3, first)));
  *out = tc__row_tasks(ir, nrows(wl), tc__knob(s, c, "rows")[0], row, body);
  return ir->err;
}

const tc__op tc__op_softmax_rows = {
    TC_KERNEL_SOFTMAX_ROWS, tc__tensor_space, tc__tensor_fallback, NULL, lower, NULL};
