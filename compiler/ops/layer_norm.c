/* Layer norm over rows of c floats (ops.h): three vectorised passes over a row, which stays in L1
 * between them (768 floats for BERT and ViT): the sum (adding the residual first and keeping x = in
 * + residual in the output row), the sum of squared deviations from the mean (two passes, not
 * E[x^2] - mean^2, which cancels when the mean is large), then (x - mean) * inv * gamma + beta.
 * Knobs: "rows" per parallel task and "accs", the independent vector accumulators of each sum
 * (hiding the add latency). */
#include "ops_int.h"

typedef struct ln_ctx {
  const tc_workload *wl;
  const tc_var *in, *res, *out, *gamma, *beta, *mean, *inv;
  const tc__red *red;
  const tc_expr *base;
  int pass;
} ln_ctx;

static const tc_stmt *ln_step(tc_ir *ir, void *p, const tc_expr *i, int lanes, int slot) {
  const ln_ctx *c = p;
  const tc_expr *at = tc_e_add(ir, c->base, i);
  int res = c->wl->epilogue & TC_EPI_RESIDUAL;
  if (c->pass == 0) {
    const tc_expr *x = tc_e_load(ir, c->in, at, lanes, 4);
    if (!res) return tc__red_step(ir, c->red, slot, x);
    /* bound once: the store to out may alias in or res for all LLVM knows, so a second use would
     * load again */
    tc_var *xv = tc_var_new(ir, "x", tc_type_f32(lanes));
    const tc_expr *xe = tc__v(ir, xv);
    const tc_stmt *items[2] = {tc_s_store(ir, c->out, at, xe, 4),
                               tc__red_step(ir, c->red, slot, xe)};
    return tc_s_let(ir, xv, tc_e_add(ir, x, tc_e_load(ir, c->res, at, lanes, 4)),
                    tc_s_seq(ir, 2, items));
  }
  const tc_expr *x = tc_e_load(ir, res ? c->out : c->in, at, lanes, 4);
  const tc_expr *d = tc_e_sub(ir, x, tc_e_broadcast(ir, tc__v(ir, c->mean), lanes));
  if (c->pass == 1)
    return tc__red_put(ir, c->red, slot, tc_e_fma(ir, d, d, tc__red_get(ir, c->red, slot)));
  const tc_expr *y =
      tc_e_fma(ir, tc_e_mul(ir, d, tc_e_broadcast(ir, tc__v(ir, c->inv), lanes)),
               tc_e_load(ir, c->gamma, i, lanes, 4), tc_e_load(ir, c->beta, i, lanes, 4));
  return tc_s_store(ir, c->out, at, y, 4);
}

static th_status lower(const tc_workload *wl, const tc_target *t, const tc_space *s,
                       const tc_config *c, tc_ir *ir, const tc_stmt **out) {
  int vl = t->simd_lanes, accs = tc__knob(s, c, "accs")[0];
  int64_t C = wl->c;
  tc__red red;
  tc__red_new(ir, &red, accs, vl, TC_EXPR_ADD, 0.0);
  tc_var *row = tc_var_new(ir, "row", tc_type_int());
  tc_var *sum = tc_var_new(ir, "sum", tc_type_f32(1)), *ssq = tc_var_new(ir, "ssq", tc_type_f32(1));
  ln_ctx x = {wl,
              tc_var_buffer(ir, "in", tc_type_f32(1), 0),
              tc_var_buffer(ir, "res", tc_type_f32(1), 3),
              tc_var_buffer(ir, "out", tc_type_f32(1), 4),
              tc_var_buffer(ir, "gamma", tc_type_f32(1), 1),
              tc_var_buffer(ir, "beta", tc_type_f32(1), 2),
              tc_var_new(ir, "mean", tc_type_f32(1)),
              tc_var_new(ir, "inv", tc_type_f32(1)),
              &red,
              tc_e_mul(ir, tc__v(ir, row), tc__c(ir, C)),
              0};
  const tc_stmt *sums = tc__vec_loop(ir, C, vl, accs, ln_step, &x);
  x.pass = 1;
  const tc_stmt *squares = tc__vec_loop(ir, C, vl, accs, ln_step, &x);
  x.pass = 2;
  const tc_stmt *scale = tc__vec_loop(ir, C, vl, accs, ln_step, &x);
  const tc_expr *cf = tc_e_float(ir, (double)C);
  const tc_expr *var = tc_e_add(ir, tc_e_div(ir, tc__v(ir, ssq), cf), tc_e_float(ir, wl->alpha));
  const tc_expr *inv = tc_e_div(ir, tc_e_float(ir, 1.0), tc_e_sqrt(ir, var));
  const tc_stmt *after_mean[3] = {tc__red_init(ir, &red), squares,
                                  tc__red_let(ir, &red, ssq, tc_s_let(ir, x.inv, inv, scale))};
  const tc_stmt *first[3] = {tc__red_init(ir, &red), sums,
                             tc__red_let(ir, &red, sum,
                                         tc_s_let(ir, x.mean, tc_e_div(ir, tc__v(ir, sum), cf),
                                                  tc_s_seq(ir, 3, after_mean)))};
  const tc_stmt *body = tc__red_alloc(ir, &red, tc_s_seq(ir, 3, first));
  *out = tc__row_tasks(ir, wl->n, tc__knob(s, c, "rows")[0], row, body);
  return ir->err;
}

const tc__op tc__op_layer_norm = {
    TC_KERNEL_LAYER_NORM, tc__tensor_space, tc__tensor_fallback, NULL, lower, NULL};
