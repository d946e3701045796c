/* The pieces the tensor templates (layer_norm.c, softmax_rows.c, unary.c, embedding.c, copy.c,
 * binary.c) share: vector loops with a scalar tail over a contiguous run, row reductions kept in
 * vector registers, rows grouped into parallel tasks with a fallback that stays on one thread for
 * small work, and the normalised iteration space of the strided families. Their knobs mean the same
 * thing in every family. */
#include <string.h>

#include "ops_int.h"

/* Below this much work (about one element's load, op and store per unit) a kernel runs on the
 * calling thread: waking the pool costs more. Above it, a task gets at least TASK_WORK. */
#define SERIAL_WORK 16384.0
#define TASK_WORK 4096.0
/* Runs longer than this are cut into pieces of it, so that one long run still spreads over threads.
 */
#define PIECE 4096

/* What a family's knobs range over: knob 0, `tasks`, the units (rows or pieces of runs) per
 * parallel task, over `units` units of unit_cost work each; knob 1, `vec`, 1, 2 or 4 vectors per
 * step (unrolled copies, or independent accumulators) over runs of vec_len (0: not vectorised, 1
 * only), where the fallback takes value index vec_pref or the largest there is. */
typedef struct shape {
  const char *tasks;
  int64_t units;
  double unit_cost;
  const char *vec;
  int64_t vec_len;
  int vec_pref;
} shape;

static int64_t piece_len(int64_t len) {
  return len < PIECE ? len : PIECE;
}

/* rows runs of len elements each costing elem_cost, as pieces */
static shape pieces(int64_t rows, int64_t len, double elem_cost, int64_t vec_len) {
  int64_t p = piece_len(len);
  shape sh = {"pieces", rows * ((len + p - 1) / p), (double)p * elem_cost, "unroll", vec_len, 1};
  return sh;
}

static shape shape_of(const tc_workload *wl) {
  tc__strided st;
  switch (wl->kernel) {
    case TC_KERNEL_LAYER_NORM:
      return (shape){"rows", wl->n, 3.0 * wl->c, "accs", wl->c, 2};
    case TC_KERNEL_REDUCE: /* log-sum-exp: two passes and an exp */
      return (shape){"rows", wl->n, (wl->op == TC_REDUCE_LOG_SUM_EXP ? 6.0 : 1.0) * wl->c, "accs",
                     wl->c, 2};
    case TC_KERNEL_SOFTMAX_ROWS: /* three passes and an exp */
      return (shape){"rows", (int64_t)wl->n * wl->c * wl->h, 6.0 * wl->w, "accs", wl->w, 2};
    case TC_KERNEL_UNARY: { /* gelu and tanh cost about an exp */
      double cost = wl->op == TC_UNARY_GELU ? 8.0 : wl->op == TC_UNARY_TANH ? 6.0 : 1.0;
      return pieces(1, wl->n, cost, wl->n);
    }
    case TC_KERNEL_EMBEDDING:
      return pieces(wl->n, wl->oc, 1.0, wl->oc);
    case TC_KERNEL_SCATTER: { /* scalar: kh index loads and compares per element */
      int64_t rows = 1;
      for (int d = 0; d < wl->ndim - 1; d++) rows *= wl->shape[d];
      return pieces(rows, wl->shape[wl->ndim - 1], 2.0 + 2.0 * wl->kh, 0);
    }
    case TC_KERNEL_GATHER: { /* scalar: an index load, a check and a dependent load per element */
      int64_t rows = 1;
      for (int d = 0; d < wl->ndim - 1; d++) rows *= wl->shape[d];
      return pieces(rows, wl->ndim ? wl->shape[wl->ndim - 1] : 1, 3.0, 0);
    }
    default: /* copy, binary: vectors where the output side runs on contiguously */
      tc__strided_init(wl, &st);
      return pieces(st.rows, st.len, 1.0,
                    st.bs[st.nd - 1] == 1 || wl->kernel == TC_KERNEL_BINARY ? st.len : 0);
  }
}

th_status tc__tensor_space(const tc_workload *wl, const tc_target *t, tc_space *s) {
  shape sh = shape_of(wl);
  int vals[TC_MAX_KNOB_VALUES], n = 0;
  for (int64_t r = 1; r < sh.units && n < TC_MAX_KNOB_VALUES - 1; r *= 2) vals[n++] = (int)r;
  vals[n++] = (int)sh.units;
  th_status rc = tc_space_add(s, sh.tasks, TC_KNOB_SPLIT, 1, n, vals);
  n = 0;
  for (int u = 1; u <= 4; u *= 2)
    if (u == 1 || (int64_t)u * t->simd_lanes <= sh.vec_len) vals[n++] = u;
  if (rc == TH_OK) rc = tc_space_add(s, sh.vec, TC_KNOB_ANNOTATE, 1, n, vals);
  return rc;
}

th_status tc__tensor_fallback(const tc_workload *wl, const tc_target *t, const tc_space *s,
                              tc_config *c) {
  (void)t;
  shape sh = shape_of(wl);
  const tc_knob *k = &s->knobs[0];
  c->idx[0] = k->nvalues - 1; /* one task: small work stays on the calling thread */
  if ((double)sh.units * sh.unit_cost >= SERIAL_WORK)
    for (int i = k->nvalues - 1; i >= 0 && k->values[i][0] * sh.unit_cost >= TASK_WORK; i--)
      c->idx[0] = i;
  c->idx[1] = sh.vec_pref < s->knobs[1].nvalues ? sh.vec_pref : s->knobs[1].nvalues - 1;
  return TH_OK;
}

const tc_stmt *tc__row_tasks(tc_ir *ir, int64_t rows, int64_t r, const tc_var *row,
                             const tc_stmt *body) {
  tc_var *task = tc_var_new(ir, "task", tc_type_int());
  if (r <= 1) return tc__parallel(ir, task, rows, tc_s_let(ir, row, tc__v(ir, task), body));
  tc_var *rr = tc_var_new(ir, "rr", tc_type_int());
  const tc_expr *first = tc_e_mul(ir, tc__v(ir, task), tc__c(ir, r));
  const tc_expr *ext =
      rows % r ? tc_e_min(ir, tc__c(ir, r), tc_e_sub(ir, tc__c(ir, rows), first)) : tc__c(ir, r);
  const tc_stmt *loop = tc_s_for(ir, rr, tc__c(ir, 0), ext, TC_FOR_SERIAL,
                                 tc_s_let(ir, row, tc_e_add(ir, first, tc__v(ir, rr)), body));
  return tc__parallel(ir, task, (rows + r - 1) / r, loop);
}

const tc_stmt *tc__pieces(tc_ir *ir, int64_t rows, int64_t len, int64_t r, tc__piece_fn fn,
                          void *ctx) {
  int64_t p = piece_len(len), np = (len + p - 1) / p;
  tc_var *u = tc_var_new(ir, "unit", tc_type_int());
  const tc_expr *ue = tc__v(ir, u);
  const tc_expr *row = np > 1 ? tc_e_div(ir, ue, tc__c(ir, np)) : ue;
  const tc_expr *k = np > 1 ? tc_e_mod(ir, ue, tc__c(ir, np)) : tc__c(ir, 0);
  const tc_expr *off = tc_e_mul(ir, k, tc__c(ir, p));
  const tc_stmt *body = fn(ir, ctx, row, off, p);
  if (len %
      p) /* the last piece of a run is shorter: its own code, so every extent stays a constant */
    body = tc_s_if(ir, tc_e_bin(ir, TC_EXPR_LT, k, tc__c(ir, np - 1)), body,
                   fn(ir, ctx, row, off, len - (np - 1) * p));
  return tc__row_tasks(ir, rows * np, r, u, body);
}

const tc_stmt *tc__vec_loop(tc_ir *ir, int64_t len, int vl, int unroll, tc__vec_fn fn, void *ctx) {
  tc_stmt_list l = {0};
  int64_t step = (int64_t)vl * unroll, nbig = len / step, done = nbig * step;
  if (nbig > 0) {
    tc_var *i = tc_var_new(ir, "vi", tc_type_int());
    const tc_expr *at = tc_e_mul(ir, tc__v(ir, i), tc__c(ir, step));
    tc_stmt_list copies = {0};
    for (int u = 0; u < unroll; u++)
      tc_list_push(ir, &copies, fn(ir, ctx, tc_e_add(ir, at, tc__c(ir, (int64_t)u * vl)), vl, u));
    tc_list_push(
        ir, &l,
        tc_s_for(ir, i, tc__c(ir, 0), tc__c(ir, nbig), TC_FOR_SERIAL, tc_list_seq(ir, &copies)));
  }
  for (int u = 0; done + vl <= len; done += vl, u++)
    tc_list_push(ir, &l, fn(ir, ctx, tc__c(ir, done), vl, u));
  if (done < len) {
    tc_var *j = tc_var_new(ir, "vt", tc_type_int());
    tc_list_push(ir, &l,
                 tc_s_for(ir, j, tc__c(ir, done), tc__c(ir, len - done), TC_FOR_SERIAL,
                          fn(ir, ctx, tc__v(ir, j), 1, -1)));
  }
  return tc_list_seq(ir, &l);
}

/* ---- row reductions ---- */

void tc__red_new(tc_ir *ir, tc__red *r, int n, int vl, tc_expr_kind op, double init) {
  r->vec = tc_var_buffer(ir, "racc", tc_type_f32(vl), -1);
  r->tail = tc_var_buffer(ir, "rtail", tc_type_f32(1), -1);
  r->spill = tc_var_buffer(ir, "rspill", tc_type_f32(1), -1);
  r->n = n;
  r->vl = vl;
  r->op = op;
  r->init = init;
}

const tc_stmt *tc__red_alloc(tc_ir *ir, const tc__red *r, const tc_stmt *body) {
  return tc_s_allocate(ir, r->vec, r->n, TC_SCOPE_LOCAL,
                       tc_s_allocate(ir, r->tail, 1, TC_SCOPE_LOCAL,
                                     tc_s_allocate(ir, r->spill, r->vl, TC_SCOPE_LOCAL, body)));
}

const tc_stmt *tc__red_init(tc_ir *ir, const tc__red *r) {
  tc_stmt_list l = {0};
  for (int u = 0; u < r->n; u++)
    tc_list_push(ir, &l,
                 tc_s_store(ir, r->vec, tc__c(ir, u),
                            tc_e_broadcast(ir, tc_e_float(ir, r->init), r->vl), 64));
  tc_list_push(ir, &l, tc_s_store(ir, r->tail, tc__c(ir, 0), tc_e_float(ir, r->init), 4));
  return tc_list_seq(ir, &l);
}

const tc_expr *tc__red_get(tc_ir *ir, const tc__red *r, int slot) {
  return slot < 0 ? tc_e_load(ir, r->tail, tc__c(ir, 0), 1, 4)
                  : tc_e_load(ir, r->vec, tc__c(ir, slot % r->n), 1, 64);
}

const tc_stmt *tc__red_put(tc_ir *ir, const tc__red *r, int slot, const tc_expr *v) {
  return slot < 0 ? tc_s_store(ir, r->tail, tc__c(ir, 0), v, 4)
                  : tc_s_store(ir, r->vec, tc__c(ir, slot % r->n), v, 64);
}

const tc_stmt *tc__red_step(tc_ir *ir, const tc__red *r, int slot, const tc_expr *x) {
  return tc__red_put(ir, r, slot, tc_e_bin(ir, r->op, tc__red_get(ir, r, slot), x));
}

/* A balanced tree of op over leaves [0, n) (each leaf(i) built on demand), so the dependency chain
 * is log2(n) deep. */
static const tc_expr *tree(tc_ir *ir, tc_expr_kind op, const tc__red *r, int lo, int hi, int vec) {
  if (hi - lo == 1)
    return vec ? tc_e_load(ir, r->vec, tc__c(ir, lo), 1, 64)
               : tc_e_load(ir, r->spill, tc__c(ir, lo), 1, 4);
  int mid = lo + (hi - lo) / 2;
  return tc_e_bin(ir, op, tree(ir, op, r, lo, mid, vec), tree(ir, op, r, mid, hi, vec));
}

const tc_stmt *tc__red_let(tc_ir *ir, const tc__red *r, const tc_var *out, const tc_stmt *body) {
  const tc_stmt *spill = tc_s_store(ir, r->spill, tc__c(ir, 0), tree(ir, r->op, r, 0, r->n, 1), 4);
  const tc_expr *all = tc_e_bin(ir, r->op, tree(ir, r->op, r, 0, r->vl, 0), tc__red_get(ir, r, -1));
  const tc_stmt *items[2] = {spill, tc_s_let(ir, out, all, body)};
  return tc_s_seq(ir, 2, items);
}

/* ---- strided iteration spaces (copy, binary) ---- */

void tc__strided_full(const tc_workload *wl, tc__strided *s) {
  memset(s, 0, sizeof *s);
  s->nd = wl->ndim;
  for (int d = 0; d < wl->ndim; d++) {
    s->shape[d] = wl->shape[d];
    s->as[d] = wl->astride[d];
    s->bs[d] = wl->bstride[d];
  }
}

void tc__strided_init(const tc_workload *wl, tc__strided *s) {
  memset(s, 0, sizeof *s);
  for (int d = 0; d < wl->ndim; d++) {
    if (wl->shape[d] == 1) continue;
    int p = s->nd - 1;
    if (p >= 0 && s->as[p] == (int64_t)wl->astride[d] * wl->shape[d] &&
        s->bs[p] == (int64_t)wl->bstride[d] * wl->shape[d]) {
      /* the outer dim steps over exactly one run of this one on both sides: one longer dim */
      s->shape[p] *= wl->shape[d];
      s->as[p] = wl->astride[d];
      s->bs[p] = wl->bstride[d];
      continue;
    }
    s->shape[s->nd] = wl->shape[d];
    s->as[s->nd] = wl->astride[d];
    s->bs[s->nd++] = wl->bstride[d];
  }
  if (s->nd == 0) { /* one element */
    s->nd = 1;
    s->shape[0] = 1;
  }
  s->len = s->shape[s->nd - 1];
  s->rows = 1;
  for (int d = 0; d < s->nd - 1; d++) s->rows *= s->shape[d];
}

void tc__strided_offsets(tc_ir *ir, const tc__strided *s, const tc_expr *row, const tc_expr *off,
                         const tc_expr **a, const tc_expr **b) {
  const tc_expr *rem = row;
  int last = s->nd - 1;
  *a = tc_e_mul(ir, off, tc__c(ir, s->as[last]));
  *b = tc_e_mul(ir, off, tc__c(ir, s->bs[last]));
  for (int d = last - 1; d >= 0; d--) {
    const tc_expr *i = d > 0 ? tc_e_mod(ir, rem, tc__c(ir, s->shape[d])) : rem;
    *a = tc_e_add(ir, *a, tc_e_mul(ir, i, tc__c(ir, s->as[d])));
    *b = tc_e_add(ir, *b, tc_e_mul(ir, i, tc__c(ir, s->bs[d])));
    if (d > 0) rem = tc_e_div(ir, rem, tc__c(ir, s->shape[d]));
  }
}

const tc_expr *tc__strided_load(tc_ir *ir, const tc_var *buf, const tc_expr *base, int64_t stride,
                                const tc_expr *i, int lanes) {
  if (stride == 0) return tc_e_broadcast(ir, tc_e_load(ir, buf, base, 1, 4), lanes);
  const tc_expr *at = tc_e_add(ir, base, tc_e_mul(ir, i, tc__c(ir, stride)));
  if (stride == 1 || lanes == 1) return tc_e_load(ir, buf, at, lanes, 4);
  return tc_e_load(ir, buf, tc_e_ramp(ir, at, tc__c(ir, stride), lanes), lanes, 4); /* a gather */
}
