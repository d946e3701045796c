/* The register-tiled GEMM shared by dense and batch_matmul (see gemm_int.h): the micro-kernel, the
 * loops over k blocks, row tiles and panels of one task, the copy of A's rows into a stack buffer,
 * and the knobs both templates share with their validity rules and fallback. */
#include <string.h>

#include "gemm_int.h"

void tc__gemm_shape(tc__gemm *g, int m, int n, int vl, int mr, int nv) {
  g->vl = vl, g->mr = mr, g->nv = nv, g->m = m, g->n = n;
  g->nt = (m + mr - 1) / mr;
  g->q = m / g->nt;
  g->big = m % g->nt;
  int bn = nv * vl;
  g->np = (n + bn - 1) / bn;
  g->npf = n / bn;
  int rem = n - g->npf * bn; /* columns of the partial panel, 0 when there is none */
  g->nvt = rem ? (rem + vl - 1) / vl : nv;
  g->tail = rem ? rem - (g->nvt - 1) * vl : vl;
}

void tc__gemm_init(tc__gemm *g, int m, int n, int vl, int mr, int nv, const tc_var *b, int64_t b_ks,
                   const tc_var *c, const tc__gemm_ops *ops, void *ctx) {
  memset(g, 0, sizeof *g);
  tc__gemm_shape(g, m, n, vl, mr, nv);
  g->b = b, g->b_ks = b_ks, g->c = c, g->ops = ops, g->ctx = ctx;
}

/* acc[i] for i < count = 0 */
static const tc_stmt *zero_acc(tc_ir *ir, const tc_var *acc, int count, int vl) {
  tc_var *i = tc_var_new(ir, "i", tc_type_int());
  return tc_s_for(
      ir, i, tc__c(ir, 0), tc__c(ir, count), TC_FOR_UNROLLED,
      tc_s_store(ir, acc, tc__v(ir, i), tc_e_broadcast(ir, tc_e_float(ir, 0.0), vl), 64));
}

/* Loads (final = -1) or stores (final = 0: raw partial sums, 1: through the epilogue) the rows x nv
 * accumulators from or to C; the last vector has `tail` lanes inside C and goes through tmp lane by
 * lane. */
static const tc_stmt *move_c(tc_ir *ir, const tc__gemm *g, const tc_var *acc, const tc_var *tmp,
                             int rows, int nv, int tail, const tc_expr *c0, const tc_expr *col0,
                             int final) {
  int vl = g->vl;
  tc_stmt_list l = {0};
  for (int r = 0; r < rows; r++)
    for (int v = 0; v < nv; v++) {
      const tc_expr *ai = tc__c(ir, (int64_t)r * nv + v);
      const tc_expr *ci = tc_e_add(ir, c0, tc__c(ir, (int64_t)r * g->n + (int64_t)v * vl));
      const tc_expr *col = tc_e_add(ir, col0, tc__c(ir, (int64_t)v * vl));
      if (v < nv - 1 || tail == vl) {
        if (final < 0) {
          tc_list_push(ir, &l, tc_s_store(ir, acc, ai, tc_e_load(ir, g->c, ci, vl, 4), 64));
        } else {
          const tc_expr *x = tc_e_load(ir, acc, ai, 1, 64);
          tc_list_push(ir, &l,
                       tc_s_store(ir, g->c, ci, final ? g->ops->epi(ir, g, x, col, ci) : x, 4));
        }
        continue;
      }
      /* the partial vector: lanes [0, tail) through tmp */
      tc_var *j = tc_var_new(ir, "lane", tc_type_int());
      const tc_expr *je = tc__v(ir, j), *cj = tc_e_add(ir, ci, je);
      if (final < 0) {
        const tc_stmt *s[3] = {
            tc_s_store(ir, tmp, tc__c(ir, 0), tc_e_broadcast(ir, tc_e_float(ir, 0.0), vl), 4),
            tc_s_for(ir, j, tc__c(ir, 0), tc__c(ir, tail), TC_FOR_SERIAL,
                     tc_s_store(ir, tmp, je, tc_e_load(ir, g->c, cj, 1, 4), 4)),
            tc_s_store(ir, acc, ai, tc_e_load(ir, tmp, tc__c(ir, 0), vl, 4), 64)};
        tc_list_push(ir, &l, tc_s_seq(ir, 3, s));
      } else {
        const tc_expr *x = tc_e_load(ir, tmp, je, 1, 4);
        if (final) x = g->ops->epi(ir, g, x, tc_e_add(ir, col, je), cj);
        const tc_stmt *s[2] = {tc_s_store(ir, tmp, tc__c(ir, 0), tc_e_load(ir, acc, ai, 1, 64), 4),
                               tc_s_for(ir, j, tc__c(ir, 0), tc__c(ir, tail), TC_FOR_SERIAL,
                                        tc_s_store(ir, g->c, cj, x, 4))};
        tc_list_push(ir, &l, tc_s_seq(ir, 2, s));
      }
    }
  return tc_list_seq(ir, &l);
}

/* One register tile: rows x nv accumulators over the k block [0, kext) of A and B from (a, b0),
 * then C. first / last (NULL: the only k block) say whether to start from zero and whether to apply
 * the epilogue. */
static const tc_stmt *tile(tc_ir *ir, const tc__gemm *g, const tc__gemm_a *a, int rows, int nv,
                           int tail, const tc_expr *b0, const tc_expr *c0, const tc_expr *col0,
                           const tc_expr *kext, const tc_expr *first, const tc_expr *last) {
  int vl = g->vl;
  tc_type vt = tc_type_f32(vl);
  tc_var *acc = tc_var_buffer(ir, "acc", vt, -1), *wreg = tc_var_buffer(ir, "wreg", vt, -1);
  tc_var *tmp = tail < vl ? tc_var_buffer(ir, "ctail", tc_type_f32(1), -1) : NULL;
  const tc_stmt *init = zero_acc(ir, acc, rows * nv, vl);
  if (first) init = tc_s_if(ir, first, init, move_c(ir, g, acc, tmp, rows, nv, tail, c0, col0, -1));
  /* k loop: nv B vectors, then per row one broadcast A scalar times each of them */
  tc_var *kk = tc_var_new(ir, "k", tc_type_int()), *v = tc_var_new(ir, "v", tc_type_int());
  tc_var *r = tc_var_new(ir, "r", tc_type_int()), *v2 = tc_var_new(ir, "v", tc_type_int());
  tc_var *xb = tc_var_new(ir, "xb", vt);
  const tc_expr *ke = tc__v(ir, kk);
  const tc_expr *bk = tc_e_add(ir, b0, tc_e_mul(ir, ke, tc__c(ir, g->b_ks)));
  const tc_stmt *ldw = tc_s_for(
      ir, v, tc__c(ir, 0), tc__c(ir, nv), TC_FOR_UNROLLED,
      tc_s_store(
          ir, wreg, tc__v(ir, v),
          tc_e_load(ir, g->b, tc_e_add(ir, bk, tc_e_mul(ir, tc__v(ir, v), tc__c(ir, vl))), vl, 4),
          64));
  const tc_expr *ai = tc_e_add(ir, tc_e_mul(ir, tc__v(ir, r), tc__c(ir, nv)), tc__v(ir, v2));
  const tc_expr *xi =
      tc_e_add(ir, tc_e_add(ir, a->a0, tc_e_mul(ir, tc__v(ir, r), tc__c(ir, a->rs))),
               tc_e_mul(ir, ke, tc__c(ir, a->ks)));
  const tc_stmt *fmas =
      tc_s_for(ir, r, tc__c(ir, 0), tc__c(ir, rows), TC_FOR_UNROLLED,
               tc_s_let(ir, xb, tc_e_broadcast(ir, tc_e_load(ir, a->buf, xi, 1, 4), vl),
                        tc_s_for(ir, v2, tc__c(ir, 0), tc__c(ir, nv), TC_FOR_UNROLLED,
                                 tc_s_store(ir, acc, ai,
                                            tc_e_fma(ir, tc_e_var(ir, xb),
                                                     tc_e_load(ir, wreg, tc__v(ir, v2), 1, 64),
                                                     tc_e_load(ir, acc, ai, 1, 64)),
                                            64))));
  const tc_stmt *kb[2] = {ldw, fmas};
  const tc_stmt *kloop =
      tc_s_allocate(ir, wreg, nv, TC_SCOPE_LOCAL,
                    tc_s_for(ir, kk, tc__c(ir, 0), kext, TC_FOR_SERIAL, tc_s_seq(ir, 2, kb)));
  const tc_stmt *fin = move_c(ir, g, acc, tmp, rows, nv, tail, c0, col0, 1);
  if (last) fin = tc_s_if(ir, last, fin, move_c(ir, g, acc, tmp, rows, nv, tail, c0, col0, 0));
  const tc_stmt *all[3] = {init, kloop, fin};
  const tc_stmt *body = tc_s_seq(ir, 3, all);
  if (tmp) body = tc_s_allocate(ir, tmp, vl, TC_SCOPE_LOCAL, body);
  return tc_s_allocate(ir, acc, (int64_t)rows * nv, TC_SCOPE_LOCAL, body);
}

/* One row tile of `rows` rows at r0 in one k block: a_tile, then the full panels of [p_lo, p_hi)
 * and the partial last panel when the range holds it. */
static const tc_stmt *row_tile(tc_ir *ir, const tc__gemm *g, int rows, const tc_expr *r0,
                               const tc_expr *k0, const tc_expr *kext, const tc_expr *first,
                               const tc_expr *last) {
  const tc_expr *p_lo = g->p_lo, *p_hi = g->p_hi;
  tc__gemm_a a;
  memset(&a, 0, sizeof a);
  const tc_stmt *pro = g->ops->a_tile(ir, g, rows, r0, k0, kext, &a);
  const tc_expr *crow = g->ops->c_at(ir, g, r0);
  int bn = g->nv * g->vl;
  tc_stmt_list l = {0};
  if (pro) tc_list_push(ir, &l, pro);
  if (g->npf > 0) {
    tc_var *p = tc_var_new(ir, "p", tc_type_int());
    const tc_expr *pe = tc__v(ir, p), *col = tc_e_mul(ir, pe, tc__c(ir, bn));
    const tc_expr *hi = g->npf < g->np ? tc_e_min(ir, p_hi, tc__c(ir, g->npf)) : p_hi;
    tc_list_push(ir, &l,
                 tc_s_for(ir, p, p_lo, tc_e_sub(ir, hi, p_lo), TC_FOR_SERIAL,
                          tile(ir, g, &a, rows, g->nv, g->vl, g->ops->b_at(ir, g, pe, k0),
                               tc_e_add(ir, crow, col), col, kext, first, last)));
  }
  if (g->npf < g->np) { /* the partial panel, last of all */
    const tc_expr *pl = tc__c(ir, g->np - 1), *col = tc__c(ir, (int64_t)(g->np - 1) * bn);
    tc_list_push(ir, &l,
                 tc_s_if(ir, tc_e_bin(ir, TC_EXPR_EQ, p_hi, tc__c(ir, g->np)),
                         tile(ir, g, &a, rows, g->nvt, g->tail, g->ops->b_at(ir, g, pl, k0),
                              tc_e_add(ir, crow, col), col, kext, first, last),
                         NULL));
  }
  return tc_list_seq(ir, &l);
}

/* Row tiles [t_lo, t_hi) of one k block. */
static const tc_stmt *row_tiles(tc_ir *ir, const tc__gemm *g, const tc_expr *t_lo,
                                const tc_expr *t_hi, const tc_expr *k0, const tc_expr *kext,
                                const tc_expr *first, const tc_expr *last) {
  tc_var *t = tc_var_new(ir, "rt", tc_type_int()), *r0 = tc_var_new(ir, "r0", tc_type_int());
  const tc_expr *te = tc__v(ir, t);
  const tc_stmt *body = row_tile(ir, g, g->q, tc__v(ir, r0), k0, kext, first, last);
  /* The big tiles (one row more) are spread evenly: tile t starts at t*q + t*big/nt, so every block
   * of consecutive tiles (a row block) gets its share of them. */
  const tc_expr *bigs = tc_e_div(ir, tc_e_mul(ir, te, tc__c(ir, g->big)), tc__c(ir, g->nt));
  const tc_expr *bigs1 = tc_e_div(
      ir, tc_e_mul(ir, tc_e_add(ir, te, tc__c(ir, 1)), tc__c(ir, g->big)), tc__c(ir, g->nt));
  if (g->big)
    body = tc_s_if(ir, tc_e_bin(ir, TC_EXPR_GT, bigs1, bigs),
                   row_tile(ir, g, g->q + 1, tc__v(ir, r0), k0, kext, first, last), body);
  const tc_expr *r0v = tc_e_add(ir, tc_e_mul(ir, te, tc__c(ir, g->q)), bigs);
  return tc_s_for(ir, t, t_lo, tc_e_sub(ir, t_hi, t_lo), TC_FOR_SERIAL,
                  tc_s_let(ir, r0, r0v, body));
}

const tc_stmt *tc__gemm_loops(tc_ir *ir, const tc__gemm *g, int k, int kc, const tc_expr *t_lo,
                              const tc_expr *t_hi) {
  int nk = (k + kc - 1) / kc;
  if (nk <= 1) {
    const tc_expr *z = tc__c(ir, 0), *ke = tc__c(ir, k);
    const tc_stmt *rows = row_tiles(ir, g, t_lo, t_hi, z, ke, NULL, NULL);
    const tc_stmt *pro = g->ops->k_prologue ? g->ops->k_prologue(ir, g, z, ke) : NULL;
    const tc_stmt *both[2] = {pro, rows};
    return pro ? tc_s_seq(ir, 2, both) : rows;
  }
  /* k blocks: partial sums go through C (a kernel's output never aliases its inputs) */
  tc_var *kb = tc_var_new(ir, "kb", tc_type_int()), *k0 = tc_var_new(ir, "k0", tc_type_int());
  tc_var *ke = tc_var_new(ir, "kext", tc_type_int());
  const tc_expr *kbe = tc__v(ir, kb), *k0e = tc__v(ir, k0), *kee = tc__v(ir, ke);
  const tc_expr *first = tc_e_bin(ir, TC_EXPR_EQ, kbe, tc__c(ir, 0));
  const tc_expr *last = tc_e_bin(ir, TC_EXPR_EQ, kbe, tc__c(ir, nk - 1));
  const tc_stmt *rows = row_tiles(ir, g, t_lo, t_hi, k0e, kee, first, last);
  const tc_stmt *pro = g->ops->k_prologue ? g->ops->k_prologue(ir, g, k0e, kee) : NULL;
  const tc_stmt *both[2] = {pro, rows};
  const tc_stmt *body = pro ? tc_s_seq(ir, 2, both) : rows;
  body = tc_s_let(ir, ke, tc_e_min(ir, tc__c(ir, kc), tc_e_sub(ir, tc__c(ir, k), k0e)), body);
  return tc_s_for(ir, kb, tc__c(ir, 0), tc__c(ir, nk), TC_FOR_SERIAL,
                  tc_s_let(ir, k0, tc_e_mul(ir, kbe, tc__c(ir, kc)), body));
}

/* Block b of `count` over `total` items: [b * total / count, (b + 1) * total / count). */
static const tc_expr *block_edge(tc_ir *ir, const tc_expr *b, int plus, int total, int count) {
  return tc_e_div(ir, tc_e_mul(ir, tc_e_add(ir, b, tc__c(ir, plus)), tc__c(ir, total)),
                  tc__c(ir, count));
}

const tc_stmt *tc__gemm_parallel(tc_ir *ir, tc__gemm *g, int nmat, int nrb, int ncb, int order,
                                 int k, int kc, const tc_var *scratch, int64_t scratch_floats) {
  tc_var *task = tc_var_new(ir, "task", tc_type_int()), *mat = tc_var_new(ir, "mat", tc_type_int());
  tc_var *rb = tc_var_new(ir, "rb", tc_type_int()), *cb = tc_var_new(ir, "cb", tc_type_int());
  const tc_expr *tk = tc__v(ir, task), *rbe = tc__v(ir, rb), *cbe = tc__v(ir, cb);
  int64_t per = (int64_t)nrb * ncb;
  const tc_expr *blk = nmat > 1 ? tc_e_mod(ir, tk, tc__c(ir, per)) : tk;
  const tc_expr *rbv =
      order ? tc_e_div(ir, blk, tc__c(ir, ncb)) : tc_e_mod(ir, blk, tc__c(ir, nrb));
  const tc_expr *cbv =
      order ? tc_e_mod(ir, blk, tc__c(ir, ncb)) : tc_e_div(ir, blk, tc__c(ir, nrb));
  g->mat = tc__v(ir, mat);
  g->p_lo = block_edge(ir, cbe, 0, g->np, ncb);
  g->p_hi = block_edge(ir, cbe, 1, g->np, ncb);
  const tc_stmt *body = tc__gemm_loops(ir, g, k, kc, block_edge(ir, rbe, 0, g->nt, nrb),
                                       block_edge(ir, rbe, 1, g->nt, nrb));
  if (scratch) body = tc_s_allocate(ir, scratch, scratch_floats, TC_SCOPE_LOCAL, body);
  body = tc_s_let(ir, mat, nmat > 1 ? tc_e_div(ir, tk, tc__c(ir, per)) : tc__c(ir, 0),
                  tc_s_let(ir, rb, rbv, tc_s_let(ir, cb, cbv, body)));
  return tc__parallel(ir, task, nmat * per, body);
}

const tc_stmt *tc__gemm_copy_rows(tc_ir *ir, int vl, const tc_var *src, const tc_expr *s0,
                                  int64_t lds, const tc_var *dst, int64_t ldd, int rows,
                                  const tc_expr *kext, tc__gemm_a *a) {
  tc_var *r = tc_var_new(ir, "cr", tc_type_int()), *j = tc_var_new(ir, "cv", tc_type_int());
  tc_var *j2 = tc_var_new(ir, "cs", tc_type_int());
  const tc_expr *re = tc__v(ir, r);
  const tc_expr *srow = tc_e_add(ir, s0, tc_e_mul(ir, re, tc__c(ir, lds)));
  const tc_expr *drow = tc_e_mul(ir, re, tc__c(ir, ldd));
  const tc_expr *nvec = tc_e_div(ir, kext, tc__c(ir, vl)), *kv = tc_e_mul(ir, nvec, tc__c(ir, vl));
  const tc_expr *jo = tc_e_mul(ir, tc__v(ir, j), tc__c(ir, vl));
  const tc_expr *j2e = tc__v(ir, j2);
  const tc_stmt *s[2] = {
      tc_s_for(ir, j, tc__c(ir, 0), nvec, TC_FOR_SERIAL,
               tc_s_store(ir, dst, tc_e_add(ir, drow, jo),
                          tc_e_load(ir, src, tc_e_add(ir, srow, jo), vl, 4), 4)),
      tc_s_for(ir, j2, kv, tc_e_sub(ir, kext, kv), TC_FOR_SERIAL,
               tc_s_store(ir, dst, tc_e_add(ir, drow, j2e),
                          tc_e_load(ir, src, tc_e_add(ir, srow, j2e), 1, 4), 4))};
  a->buf = dst;
  a->a0 = tc__c(ir, 0);
  a->rs = ldd;
  a->ks = 1;
  return tc_s_for(ir, r, tc__c(ir, 0), tc__c(ir, rows), TC_FOR_SERIAL, tc_s_seq(ir, 2, s));
}

int tc__gemm_ld(int kc) {
  return (kc + 15) / 16 * 16 + 16;
}

/* ---- knobs ---- */

/* The parallel split's candidate block counts (each must not exceed the tiles or panels it splits).
 */
static const int blocks[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128};
#define NBLOCKS ((int)(sizeof blocks / sizeof blocks[0]))
/* Candidate k blocks below the whole k. */
static const int kcs[] = {64, 128, 192, 256, 320, 384, 512, 768, 1024};
#define NKCS ((int)(sizeof kcs / sizeof kcs[0]))
#define MAX_MR 24
#define MAX_NV 8

th_status tc__gemm_space(tc_space *s, const tc_target *t, int m, int n, int k) {
  int vals[TC_MAX_KNOB_VALUES * 2], cnt = 0;
  int nvec = (n + t->simd_lanes - 1) / t->simd_lanes;
  for (int nv = 1; nv <= MAX_NV && nv <= nvec; nv++, cnt++) {
    vals[2 * cnt] = (nvec + nv - 1) / nv;
    vals[2 * cnt + 1] = nv;
  }
  th_status rc = tc_space_add(s, "tile_n", TC_KNOB_SPLIT, 2, cnt, vals);
  cnt = 0;
  for (int mr = 1; mr <= MAX_MR && mr <= m; mr++, cnt++) {
    vals[2 * cnt] = (m + mr - 1) / mr;
    vals[2 * cnt + 1] = mr;
  }
  if (rc == TH_OK) rc = tc_space_add(s, "tile_m", TC_KNOB_SPLIT, 2, cnt, vals);
  vals[0] = 1, vals[1] = k;
  cnt = 1;
  for (int i = 0; i < NKCS && kcs[i] < k; i++, cnt++) {
    vals[2 * cnt] = (k + kcs[i] - 1) / kcs[i];
    vals[2 * cnt + 1] = kcs[i];
  }
  if (rc == TH_OK) rc = tc_space_add(s, "tile_k", TC_KNOB_SPLIT, 2, cnt, vals);
  cnt = 0;
  for (int i = 0; i < NBLOCKS && blocks[i] <= m; i++) vals[cnt++] = blocks[i];
  if (rc == TH_OK) rc = tc_space_add(s, "row_blocks", TC_KNOB_OTHER, 1, cnt, vals);
  cnt = 0;
  for (int i = 0; i < NBLOCKS && blocks[i] <= nvec; i++) vals[cnt++] = blocks[i];
  if (rc == TH_OK) rc = tc_space_add(s, "col_blocks", TC_KNOB_OTHER, 1, cnt, vals);
  int order[2] = {0, 1};
  if (rc == TH_OK) rc = tc_space_add(s, "order", TC_KNOB_REORDER, 1, 2, order);
  return rc;
}

th_status tc__gemm_valid(const tc_space *s, const tc_config *c, const tc_target *t, int m, int n,
                         int k, int *mr, int *nv, int *kc, int *nrb, int *ncb, int *order) {
  (void)k;
  const int *tn = tc__knob(s, c, "tile_n"), *tm = tc__knob(s, c, "tile_m"),
            *tk = tc__knob(s, c, "tile_k");
  const int *rb = tc__knob(s, c, "row_blocks"), *cb = tc__knob(s, c, "col_blocks");
  const int *od = tc__knob(s, c, "order");
  if (!tn || !tm || !tk || !rb || !cb || !od) return TH_ERR_INVALID;
  if (tm[1] * tn[1] + tn[1] + 1 > t->nregs) return TH_ERR_INVALID;
  tc__gemm g;
  tc__gemm_shape(&g, m, n, t->simd_lanes, tm[1], tn[1]);
  if (rb[0] > g.nt || cb[0] > g.np) return TH_ERR_INVALID;
  if (mr) *mr = tm[1];
  if (nv) *nv = tn[1];
  if (kc) *kc = tk[1];
  if (nrb) *nrb = rb[0];
  if (ncb) *ncb = cb[0];
  if (order) *order = od[0];
  return TH_OK;
}

/* Estimated cycles of one k step of a rows x nv tile: FMA throughput (2 per cycle), the latency of
 * the accumulator chains (4 cycles) and loads (2 per cycle: nv B vectors, one A scalar per row),
 * after oneDNN's estimate (as conv2d's fallback). */
static double step_cycles(int rows, int nv) {
  double fma = rows * nv / 2.0, ld = (rows + nv) / 2.0, m = fma > 4.0 ? fma : 4.0;
  return m > ld ? m : ld;
}

/* Estimated efficiency (1 = the FMA peak) of the whole C with (mr, nv) tiles: balanced row tiles
 * and the partial last panel included. */
static double tile_eff(int m, int n, int vl, int mr, int nv) {
  tc__gemm g;
  tc__gemm_shape(&g, m, n, vl, mr, nv);
  double per_row_set[2];
  for (int i = 0; i < 2; i++) {
    int rows = g.q + i;
    per_row_set[i] =
        rows ? g.npf * step_cycles(rows, nv) + (g.np - g.npf) * step_cycles(rows, g.nvt) : 0;
  }
  double cyc = g.big * per_row_set[1] + (g.nt - g.big) * per_row_set[0];
  return ((double)m * n / vl / 2.0) / cyc;
}

/* The largest k block the fallback takes when there are more than a few rows. On the transformers'
 * shapes (znver4, 2 threads) 384 to 1024 came within a few % of each other and 128 was 15-20%
 * slower: the k steps between C round trips matter more than the A tile staying in L1 (on L2 it is
 * 2 bytes a cycle). */
#define KC_PREF 768
/* Cache budgets of one task's blocks: its B per k block (kc x its columns) is read by every row
 * tile, and its C block (rows x columns) is read and written once per k block; both should stay in
 * L2 (1 MiB or more on AVX-512 parts). */
#define B_BLOCK_BYTES (512 * 1024)
#define C_BLOCK_BYTES (256 * 1024)
/* Tasks the fallback aims at (4 per thread on 2 threads), so guided chunks even out the threads. */
#define TASKS_PREF 8

/* The smallest value of knob k (block counts, ascending) that is >= want, else its largest value <=
 * most. */
static int block_index(const tc_space *s, int k, int want, int most) {
  int best = 0;
  for (int i = 0; i < s->knobs[k].nvalues && s->knobs[k].values[i][0] <= most; i++) {
    best = i;
    if (s->knobs[k].values[i][0] >= want) break;
  }
  return best;
}

th_status tc__gemm_fallback(const tc_space *s, tc_config *c, const tc_target *t, int m, int n,
                            int k, int mr_max) {
  int kn = tc_space_knob(s, "tile_n"), km = tc_space_knob(s, "tile_m"),
      kk = tc_space_knob(s, "tile_k");
  int krb = tc_space_knob(s, "row_blocks"), kcb = tc_space_knob(s, "col_blocks"),
      ko = tc_space_knob(s, "order");
  if (kn < 0 || km < 0 || kk < 0 || krb < 0 || kcb < 0 || ko < 0) return TH_ERR_INTERNAL;
  /* register tile by the cycle model; ties go to more rows (fewer B loads per FMA). At most 4
   * vectors, so that a few rows (the CNN heads) still split into many panels. A few rows take as
   * few row tiles as possible first: each row tile streams the whole B, which is then too big to
   * stay in cache. */
  int few = m <= TC__GEMM_FEW_ROWS;
  double best = -1e30;
  for (int i = 0; i < s->knobs[kn].nvalues; i++)
    for (int j = 0; j < s->knobs[km].nvalues; j++) {
      int nv = s->knobs[kn].values[i][1], mr = s->knobs[km].values[j][1];
      if (nv > 4 || mr * nv + nv + 1 > t->nregs || (mr_max > 0 && mr > mr_max)) continue;
      double score =
          tile_eff(m, n, t->simd_lanes, mr, nv) + 0.001 * mr - (few ? (m + mr - 1) / mr : 0);
      if (score > best) best = score, c->idx[kn] = i, c->idx[km] = j;
    }
  if (best <= -1e30) return TH_ERR_INTERNAL;
  tc__gemm g;
  tc__gemm_shape(&g, m, n, t->simd_lanes, s->knobs[km].values[c->idx[km]][1],
                 s->knobs[kn].values[c->idx[kn]][1]);
  /* k blocks: none for a few rows (B is streamed once and only reused from registers), else even
   * blocks of at most KC_PREF */
  c->idx[kk] = 0;
  if (!few && k > KC_PREF) {
    int nk = (k + KC_PREF - 1) / KC_PREF, want = (k + nk - 1) / nk;
    for (int i = 1; i < s->knobs[kk].nvalues; i++)
      if (s->knobs[kk].values[i][1] >= want) {
        c->idx[kk] = i;
        break;
      }
  }
  int kc = s->knobs[kk].values[c->idx[kk]][1], bn = g.nv * g.vl;
  /* split: a few rows -> a task per row tile and panel (as many as the lists have); else blocks
   * that keep B and C in their budgets, at least two row blocks (threads running at once then read
   * the same B) and at least TASKS_PREF tasks, adding column blocks */
  int ncb = g.np, nrb = g.nt;
  if (!few) {
    int ppb = (int)(B_BLOCK_BYTES / ((double)kc * bn * 4));
    ncb = (g.np + (ppb > 1 ? ppb : 1) - 1) / (ppb > 1 ? ppb : 1);
    nrb = 2;
    if (kc < k) { /* C partial sums: a block of rows x (np / ncb panels) */
      int tpb = (int)(C_BLOCK_BYTES / ((double)(g.np + ncb - 1) / ncb * bn * 4 * (g.q + 1)));
      tpb = tpb > 1 ? tpb : 1;
      if ((g.nt + tpb - 1) / tpb > nrb) nrb = (g.nt + tpb - 1) / tpb;
    }
    if (nrb * ncb < TASKS_PREF) ncb = (TASKS_PREF + nrb - 1) / nrb;
  }
  c->idx[krb] = block_index(s, krb, nrb, g.nt);
  c->idx[kcb] = block_index(s, kcb, ncb, g.np);
  c->idx[ko] = 0;
  return TH_OK;
}
