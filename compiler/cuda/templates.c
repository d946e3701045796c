/* GPU operator templates (NCHW): the dispatch from a workload's family to its template in cuda/ops/
 * (one file per family, listed in ops[] below), the device checks every config passes (threads,
 * grid, shared memory, registers, 32-bit indexing), the fallback search, the lowering entry point,
 * and the helpers several families share: split knobs, element maps, window reductions, cooperative
 * fetches into shared memory, tree reductions, row kernels (rows of a tensor reduced by a group of
 * threads each) and strided index spaces (copy, broadcast). Epilogues (bias, residual, relu, clip,
 * gelu, tanh) are fused into the store of every producing kernel. Splits use exact factors, so conv
 * tiles need no bounds guards; the other families guard their tails. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "templates_int.h"

static const tc__cuda_op *const ops[TC_KERNEL_COUNT] = {
    &tc__cuda_op_conv2d,       &tc__cuda_op_depthwise,    &tc__cuda_op_dense,
    &tc__cuda_op_maxpool,      &tc__cuda_op_avgpool,      &tc__cuda_op_global_avgpool,
    &tc__cuda_op_softmax,      &tc__cuda_op_eltwise,      &tc__cuda_op_concat,
    &tc__cuda_op_layout,       &tc__cuda_op_batch_matmul, &tc__cuda_op_layer_norm,
    &tc__cuda_op_softmax_rows, &tc__cuda_op_unary,        &tc__cuda_op_embedding,
    &tc__cuda_op_copy,         &tc__cuda_op_binary,       &tc__cuda_op_gather,
    &tc__cuda_op_reduce,       &tc__cuda_op_scatter};
_Static_assert(TC_KERNEL_COUNT == 20,
               "add the new kernel family's GPU template to ops[] (or NULL)");

/* The template of wl's family, or NULL when there is none for it or for its layout. */
static const tc__cuda_op *tc__cuda_op_of(const tc_workload *wl) {
  if (wl->kernel < 0 || wl->kernel >= TC_KERNEL_COUNT) return NULL;
  if (wl->in_cb != 1 || wl->out_cb != 1) return NULL; /* no NCHWc on GPU */
  return ops[wl->kernel];
}

int tc_cuda_has_template(tc_kernel k) {
  return k >= 0 && k < TC_KERNEL_COUNT && ops[k] != NULL;
}

int tc_cuda_supports_op(const tc_workload *wl) {
  return wl && tc_workload_check(wl) == TH_OK && tc__cuda_op_of(wl) != NULL;
}

/* ---- spaces and configs
 * ------------------------------------------------------------------------------ */

th_status tc__cuda_add_unroll(tc_space *s, int with_explicit) {
  static const int steps[] = {0, 512, 1500}, explicit_[] = {0, 1};
  th_status rc = tc__cuda_add_list(s, "auto_unroll_max_step", TC_KNOB_OTHER, 3, steps);
  if (rc == TH_OK && with_explicit)
    rc = tc__cuda_add_list(s, "unroll_explicit", TC_KNOB_OTHER, 2, explicit_);
  return rc;
}

/* Appends the ordered factorizations of n into `parts` factors whose factor i is at most cap[i]
 * (the first factor is unbounded), up to TC_MAX_KNOB_VALUES. */
static void tc__splits(int n, int parts, const int *cap, int *vals, int *nv, int depth, int rem,
                       int *cur) {
  if (*nv >= TC_MAX_KNOB_VALUES) return;
  if (depth == parts - 1) {
    cur[0] = rem; /* the block (outermost) factor takes the rest */
    for (int i = 0; i < parts; i++) vals[*nv * TC_KNOB_WIDTH + i] = cur[i];
    (*nv)++;
    return;
  }
  int pos = parts - 1 - depth; /* fill from the innermost factor outwards */
  if (pos < 1 || pos >= TC_KNOB_WIDTH) return;
  for (int f = 1; f <= rem && f <= cap[pos]; f++) {
    if (rem % f) continue;
    cur[pos] = f;
    tc__splits(n, parts, cap, vals, nv, depth + 1, rem / f, cur);
  }
}

th_status tc__cuda_add_split(tc_space *s, const char *name, int n, int parts, const int *cap) {
  int vals[TC_MAX_KNOB_VALUES * TC_KNOB_WIDTH], nv = 0, cur[TC_KNOB_WIDTH] = {0};
  memset(vals, 0, sizeof vals);
  tc__splits(n, parts, cap, vals, &nv, 0, n, cur);
  int packed[TC_MAX_KNOB_VALUES * TC_KNOB_WIDTH];
  for (int i = 0; i < nv; i++)
    for (int k = 0; k < parts; k++) packed[i * parts + k] = vals[i * TC_KNOB_WIDTH + k];
  return tc_space_add(s, name, TC_KNOB_SPLIT, parts, nv, packed);
}

th_status tc__cuda_add_list(tc_space *s, const char *name, tc_knob_kind kind, int n, const int *v) {
  return tc_space_add(s, name, kind, 1, n, v);
}

const int *tc__cuda_val(const tc_space *s, const tc_config *c, const char *name) {
  int k = tc_space_knob(s, name);
  if (k < 0 || k >= c->nknobs || c->idx[k] < 0 || c->idx[k] >= s->knobs[k].nvalues) return NULL;
  return s->knobs[k].values[c->idx[k]];
}

void tc__cuda_pick(const tc_space *s, tc_config *c, const char *name, const int *want, int width) {
  int k = tc_space_knob(s, name);
  if (k < 0) return;
  c->idx[k] = 0;
  for (int i = 0; i < s->knobs[k].nvalues; i++)
    if (memcmp(s->knobs[k].values[i], want, (size_t)width * sizeof(int)) == 0) {
      c->idx[k] = i;
      return;
    }
}

th_status tc__cuda_why(char *why, size_t n, const char *msg) {
  return tc__cuda_whyf(why, n, "%s", msg);
}

th_status tc__cuda_whyf(char *why, size_t n, const char *fmt, ...) {
  if (why && n) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
  }
  return TH_ERR_INVALID;
}

th_status tc_cuda_space(const tc_workload *wl, const tc_cuda_target *t, tc_space *out) {
  if (!wl || !t || !out) return TH_ERR_INVALID;
  th_status rc = tc_workload_check(wl);
  if (rc != TH_OK) return rc;
  const tc__cuda_op *op = tc__cuda_op_of(wl);
  if (!op) return TH_ERR_UNSUPPORTED;
  memset(out, 0, sizeof *out);
  return op->space(wl, t, out);
}

/* ---- validity
 * ---------------------------------------------------------------------------------------- */

th_status tc_cuda_valid(const tc_workload *wl, const tc_cuda_target *t, const tc_space *s,
                        const tc_config *cfg, char *why, size_t whylen) {
  if (why && whylen) why[0] = '\0';
  if (!wl || !t || !s || !cfg) return TH_ERR_INVALID;
  if (tc_workload_check(wl) != TH_OK || wl->in_cb != 1 || wl->out_cb != 1)
    return tc__cuda_why(why, whylen, "workload is not a plain NCHW GPU workload");
  int64_t in_el = (int64_t)wl->n * wl->c * wl->h * wl->w,
          out_el = (int64_t)wl->n * wl->oc * wl->oh * wl->ow;
  int64_t w_el = (int64_t)wl->oc * wl->c * wl->kh * wl->kw;
  if (in_el >= INT32_MAX || out_el >= INT32_MAX || w_el >= INT32_MAX)
    return tc__cuda_why(why, whylen, "tensor larger than 2^31 elements (32-bit indexing)");
  if (wl->precision == TC_PRECISION_TF32 && t->sm < 80)
    return tc__cuda_whyf(why, whylen, "precision tf32 needs tensor cores of sm_80 or newer, not %s",
                         t->arch);
  tc__cuda_shape sh;
  memset(&sh, 0, sizeof sh);
  for (int a = 0; a < 3; a++) sh.grid[a] = sh.block[a] = 1;
  if (tc_space_index(s, cfg) < 0)
    return tc__cuda_why(why, whylen, "config is not a point of the space");
  const tc__cuda_op *op = tc__cuda_op_of(wl);
  if (!op) return tc__cuda_why(why, whylen, "no GPU template for this family");
  th_status rc = op->shape(wl, s, cfg, &sh, why, whylen);
  if (rc != TH_OK) return rc;
  return tc__cuda_fits(&sh, t, why, whylen);
}

th_status tc__cuda_fits(const tc__cuda_shape *sh, const tc_cuda_target *t, char *why,
                        size_t whylen) {
  int64_t threads = (int64_t)sh->block[0] * sh->block[1] * sh->block[2];
  const char *from = t->limits_from[0] ? t->limits_from : t->arch;
  if (threads > t->max_threads)
    return tc__cuda_whyf(why, whylen, "%lld threads per block over the limit of %d (%s)",
                         (long long)threads, t->max_threads, from);
  static const char axis[3] = {'x', 'y', 'z'};
  for (int a = 0; a < 3; a++) {
    if (sh->block[a] > t->max_block[a])
      return tc__cuda_whyf(why, whylen,
                           "%d threads in block dimension %c over the limit of %d (%s)",
                           sh->block[a], axis[a], t->max_block[a], from);
    if (sh->grid[a] > t->max_grid[a] || sh->grid[a] < 1)
      return tc__cuda_whyf(why, whylen, "grid dimension %c of %lld blocks outside 1..%lld (%s)",
                           axis[a], (long long)sh->grid[a], (long long)t->max_grid[a], from);
  }
  /* static __shared__ arrays are capped per block (48 KiB) and by a multiprocessor; a template that
   * can stage through dynamic shared memory goes up to the opt-in maximum per block */
  int shared_cap =
      t->max_shared_bytes < t->max_shared_per_sm ? t->max_shared_bytes : t->max_shared_per_sm;
  if (sh->dyn_shared_ok && sh->shared_bytes > shared_cap) {
    int optin = t->max_shared_optin < t->max_shared_per_sm ? t->max_shared_optin
                                                            : t->max_shared_per_sm;
    if (sh->shared_bytes > optin)
      return tc__cuda_whyf(why, whylen,
                           "dynamic shared memory of %lld bytes per block over the opt-in limit of "
                           "%d bytes (%s)",
                           (long long)sh->shared_bytes, optin, from);
  } else if (sh->shared_bytes > shared_cap) {
    return tc__cuda_whyf(
        why, whylen, "static shared memory of %lld bytes per block over the limit of %d bytes (%s)",
        (long long)sh->shared_bytes, shared_cap, from);
  }
  int64_t regs = sh->local_floats + 32; /* accumulators + addressing and staging */
  if (regs > t->max_regs_per_thread)
    return tc__cuda_whyf(why, whylen,
                         "register estimate of %lld per thread over the limit of %d (%s)",
                         (long long)regs, t->max_regs_per_thread, from);
  int reg_cap =
      t->max_regs_per_block < t->max_regs_per_sm ? t->max_regs_per_block : t->max_regs_per_sm;
  if (regs * threads > reg_cap)
    return tc__cuda_whyf(why, whylen,
                         "register estimate of %lld per block over the limit of %d (%s)",
                         (long long)(regs * threads), reg_cap, from);
  return TH_OK;
}

/* ---- fallback
 * ---------------------------------------------------------------------------------------- */

th_status tc_cuda_fallback(const tc_workload *wl, const tc_cuda_target *t, const tc_space *s,
                           tc_config *out) {
  if (!wl || !t || !s || !out) return TH_ERR_INVALID;
  memset(out, 0, sizeof *out);
  out->nknobs = s->nknobs;
  const tc__cuda_op *op = tc__cuda_op_of(wl);
  if (!op) return TH_ERR_UNSUPPORTED;
  th_status rc = op->fallback(wl, t, s, out);
  if (rc != TH_OK) return rc;
  if (tc_cuda_valid(wl, t, s, out, NULL, 0) == TH_OK) return TH_OK;
  /* the heuristic point does not fit: the first valid point in flat order */
  int64_t n = tc_space_size(s);
  for (int64_t i = 0; i < n && i < 200000; i++) {
    tc_space_get(s, i, out);
    if (tc_cuda_valid(wl, t, s, out, NULL, 0) == TH_OK) return TH_OK;
  }
  return TH_ERR_UNSUPPORTED;
}

/* ---- element maps
 * ------------------------------------------------------------------------------------ */

th_status tc__cuda_map_space(tc_space *s, int with_vec, int with_unroll) {
  static const int threads[] = {64, 128, 256, 512, 1024}, inner[] = {1, 2, 4}, vec[] = {1, 4};
  th_status rc = tc__cuda_add_list(s, "threads", TC_KNOB_SPLIT, 5, threads);
  if (rc == TH_OK) rc = tc__cuda_add_list(s, "inner", TC_KNOB_SPLIT, 3, inner);
  if (rc == TH_OK && with_vec) rc = tc__cuda_add_list(s, "vec", TC_KNOB_ANNOTATE, 2, vec);
  if (rc == TH_OK && with_unroll) rc = tc__cuda_add_unroll(s, 0);
  return rc;
}

th_status tc__cuda_window_space(const tc_workload *wl, const tc_cuda_target *t, tc_space *s) {
  (void)wl;
  (void)t;
  return tc__cuda_map_space(s, 0, 1);
}

static th_status tc__cuda_map_shape(const tc_space *s, const tc_config *c, int64_t total,
                                    tc__cuda_shape *sh, char *why, size_t whylen) {
  const int *th = tc__cuda_val(s, c, "threads"), *in = tc__cuda_val(s, c, "inner");
  const int *vec = tc__cuda_val(s, c, "vec");
  if (!th || !in) return tc__cuda_why(why, whylen, "missing knob");
  if (vec && vec[0] == 4) {
    if (total % 4) return tc__cuda_why(why, whylen, "float4 needs a multiple of 4 elements");
    total /= 4;
  }
  sh->block[0] = th[0];
  sh->grid[0] = (total + (int64_t)th[0] * in[0] - 1) / ((int64_t)th[0] * in[0]);
  sh->local_floats = 1;
  return TH_OK;
}

th_status tc__cuda_in_map_shape(const tc_workload *wl, const tc_space *s, const tc_config *c,
                                tc__cuda_shape *sh, char *why, size_t whylen) {
  return tc__cuda_map_shape(s, c, tc__cuda_in_total(wl), sh, why, whylen);
}

th_status tc__cuda_out_map_shape(const tc_workload *wl, const tc_space *s, const tc_config *c,
                                 tc__cuda_shape *sh, char *why, size_t whylen) {
  return tc__cuda_map_shape(s, c, tc__cuda_out_total(wl), sh, why, whylen);
}

void tc__cuda_map_pick(const tc_space *s, tc_config *c, int vec4) {
  int th = 256, in = 1, un = 512, vec = vec4 ? 4 : 1;
  tc__cuda_pick(s, c, "threads", &th, 1);
  tc__cuda_pick(s, c, "inner", &in, 1);
  tc__cuda_pick(s, c, "vec", &vec, 1);
  tc__cuda_pick(s, c, "auto_unroll_max_step", &un, 1);
}

th_status tc__cuda_plain_map_space(const tc_workload *wl, const tc_cuda_target *t, tc_space *s) {
  (void)wl;
  (void)t;
  return tc__cuda_map_space(s, 0, 0);
}

th_status tc__cuda_plain_map_fallback(const tc_workload *wl, const tc_cuda_target *t,
                                      const tc_space *s, tc_config *c) {
  (void)wl;
  (void)t;
  tc__cuda_map_pick(s, c, 0);
  return TH_OK;
}

void tc__cuda_digit_offsets(tc__cuda_lc *L, const tc_expr *idx, const tc_expr **a,
                            const tc_expr **b) {
  const tc_workload *wl = L->wl;
  const tc_expr *rem = idx;
  *a = I(0);
  *b = I(0);
  for (int d = wl->ndim - 1; d >= 0; d--) {
    const tc_expr *i = d > 0 ? MOD(rem, I(wl->shape[d])) : rem;
    *a = ADD(*a, MUL(i, I(wl->astride[d])));
    *b = ADD(*b, MUL(i, I(wl->bstride[d])));
    if (d > 0) rem = DIV(rem, I(wl->shape[d]));
  }
}

th_status tc__cuda_in_map_fallback(const tc_workload *wl, const tc_cuda_target *t,
                                   const tc_space *s, tc_config *c) {
  (void)t;
  tc__cuda_map_pick(s, c, tc__cuda_in_total(wl) % 4 == 0);
  return TH_OK;
}

th_status tc__cuda_out_map_fallback(const tc_workload *wl, const tc_cuda_target *t,
                                    const tc_space *s, tc_config *c) {
  (void)t;
  tc__cuda_map_pick(s, c, tc__cuda_out_total(wl) % 4 == 0);
  return TH_OK;
}

int64_t tc__cuda_in_total(const tc_workload *wl) {
  return (int64_t)wl->n * wl->c * wl->h * wl->w;
}

int64_t tc__cuda_out_total(const tc_workload *wl) {
  /* gather, scatter: a contiguous output over the iteration space */
  if (wl->kernel == TC_KERNEL_GATHER || wl->kernel == TC_KERNEL_SCATTER) {
    int64_t v = 1;
    for (int d = 0; d < wl->ndim && d < TC_WL_DIMS; d++) v *= wl->shape[d];
    return v;
  }
  return (int64_t)wl->n * wl->oc * wl->oh * wl->ow;
}

const tc_stmt *tc__cuda_map(tc__cuda_lc *L, int64_t total, int threads, int inner,
                            tc__cuda_elem_fn fn) {
  int64_t blocks = (total + (int64_t)threads * inner - 1) / ((int64_t)threads * inner);
  tc_var *bx = tc__cuda_iv(L, "bx"), *tx = tc__cuda_iv(L, "tx"), *i = tc__cuda_iv(L, "i");
  tc_var *idx = tc__cuda_iv(L, "idx");
  const tc_expr *e = ADD(MUL(ADD(MUL(V(bx), I(inner)), V(i)), I(threads)), V(tx));
  const tc_stmt *body = tc_s_let(
      L->ir, idx, e, tc_s_if(L->ir, BIN(TC_EXPR_LT, V(idx), I(total)), fn(L, V(idx)), NULL));
  body = tc__cuda_for(L, i, inner, TC_FOR_SERIAL, body);
  body = tc__cuda_for(L, tx, threads, TC_FOR_GPU_THREAD_X, body);
  return tc__cuda_for(L, bx, blocks, TC_FOR_GPU_BLOCK_X, body);
}

const tc_stmt *tc__cuda_map_cfg(tc__cuda_lc *L, const tc_space *s, const tc_config *c,
                                int64_t total, tc__cuda_elem_fn fn) {
  return tc__cuda_map(L, total, tc_config_int(s, c, "threads", 256),
                      tc_config_int(s, c, "inner", 1), fn);
}

/* Decomposes an NCHW output index into (n, c, y, x) lets around body. */
static const tc_stmt *tc__cuda_with_pos(tc__cuda_lc *L, const tc_expr *idx, const tc__cuda_pos *p,
                                        const tc_stmt *body) {
  const tc_workload *wl = L->wl;
  const tc_stmt *s = tc_s_let(L->ir, p->n, DIV(idx, I((int64_t)wl->oc * wl->oh * wl->ow)), body);
  s = tc_s_let(L->ir, p->c, MOD(DIV(idx, I((int64_t)wl->oh * wl->ow)), I(wl->oc)), s);
  s = tc_s_let(L->ir, p->y, MOD(DIV(idx, I(wl->ow)), I(wl->oh)), s);
  return tc_s_let(L->ir, p->x, MOD(idx, I(wl->ow)), s);
}

static const tc_expr *tc__cuda_inside(tc__cuda_lc *L, const tc_expr *iy, const tc_expr *ix) {
  const tc_workload *wl = L->wl;
  const tc_expr *a = BIN(TC_EXPR_AND, BIN(TC_EXPR_GE, iy, I(0)), BIN(TC_EXPR_LT, iy, I(wl->h)));
  const tc_expr *b = BIN(TC_EXPR_AND, BIN(TC_EXPR_GE, ix, I(0)), BIN(TC_EXPR_LT, ix, I(wl->w)));
  return BIN(TC_EXPR_AND, a, b);
}

static const tc_stmt *tc__cuda_window_elem(tc__cuda_lc *L, const tc_expr *idx) {
  const tc_workload *wl = L->wl;
  const tc__cuda_window *win = L->ctx;
  tc__cuda_pos p = {tc__cuda_iv(L, "n"), tc__cuda_iv(L, "c"),  tc__cuda_iv(L, "y"),
                    tc__cuda_iv(L, "x"), tc__cuda_iv(L, "ky"), tc__cuda_iv(L, "kx")};
  tc_var *acc = tc__cuda_local(L, "acc");
  /* a dilated (depthwise) window's taps lie dil apart; 1 for the pools */
  const tc_expr *iy =
      ADD(SUB(MUL(V(p.y), I(wl->sh)), I(wl->pt)), MUL(V(p.ky), I(tc_workload_dil(wl, 0))));
  const tc_expr *ix =
      ADD(SUB(MUL(V(p.x), I(wl->sw)), I(wl->pl)), MUL(V(p.kx), I(tc_workload_dil(wl, 1))));
  const tc_expr *in_idx =
      ADD(MUL(ADD(MUL(ADD(MUL(V(p.n), I(wl->c)), V(p.c)), I(wl->h)), iy), I(wl->w)), ix);
  const tc_expr *a0 = LD(acc, I(0)), *x = LD(L->arg[TC_ARG_IN], in_idx);
  const tc_expr *upd = win->update(L, &p, a0, x);
  const tc_stmt *inner = tc_s_if(L->ir, tc__cuda_inside(L, iy, ix), ST(acc, I(0), upd), NULL);
  inner = tc__cuda_for(L, p.ky, wl->kh, TC_FOR_SERIAL,
                       tc__cuda_for(L, p.kx, wl->kw, TC_FOR_SERIAL, inner));
  const tc_expr *res = LD(acc, I(0));
  if (win->finish) res = win->finish(L, &p, res);
  const tc_stmt *items[3] = {ST(acc, I(0), FLT(win->init)), inner,
                             ST(L->arg[win->out_arg], idx, tc__cuda_epi(L, res, V(p.c), idx))};
  const tc_stmt *body = tc_s_allocate(L->ir, acc, 1, TC_SCOPE_LOCAL, tc_s_seq(L->ir, 3, items));
  return tc__cuda_with_pos(L, idx, &p, body);
}

const tc_stmt *tc__cuda_window_map(tc__cuda_lc *L, const tc_space *s, const tc_config *c,
                                   const tc__cuda_window *win) {
  L->ctx = win;
  return tc__cuda_map_cfg(L, s, c, tc__cuda_out_total(L->wl), tc__cuda_window_elem);
}

/* ---- row kernels
 * ------------------------------------------------------------------------------------- */

/* the rows and their length: layer_norm's n rows of c, softmax_rows' n*c*h rows of w */
static int64_t tc__cuda_rows(const tc_workload *wl) {
  return wl->kernel != TC_KERNEL_SOFTMAX_ROWS ? wl->n : (int64_t)wl->n * wl->c * wl->h;
}

static int64_t tc__cuda_row_len(const tc_workload *wl) {
  return wl->kernel != TC_KERNEL_SOFTMAX_ROWS ? wl->c : wl->w;
}

th_status tc__cuda_row_space(const tc_workload *wl, const tc_cuda_target *t, tc_space *s) {
  (void)wl;
  (void)t;
  static const int threads[] = {32, 64, 128, 256, 512, 1024}, rows[] = {1, 2, 4, 8};
  th_status rc = tc__cuda_add_list(s, "threads", TC_KNOB_SPLIT, 6, threads);
  if (rc == TH_OK) rc = tc__cuda_add_list(s, "rows_per_block", TC_KNOB_SPLIT, 4, rows);
  return rc;
}

/* elements per thread held in registers at most; longer rows are read again in each pass */
#define TC__CUDA_STASH 16

th_status tc__cuda_row_shape(const tc_workload *wl, const tc_space *s, const tc_config *c,
                             tc__cuda_shape *sh, char *why, size_t whylen) {
  int64_t rows = tc__cuda_rows(wl), len = tc__cuda_row_len(wl);
  const int *th = tc__cuda_val(s, c, "threads"), *ty = tc__cuda_val(s, c, "rows_per_block");
  if (!th || !ty) return tc__cuda_why(why, whylen, "missing knob");
  if (th[0] > 32 && th[0] / 2 >= len)
    return tc__cuda_why(why, whylen, "more than twice as many threads as the row has elements");
  int64_t per = (len + th[0] - 1) / th[0];
  sh->block[0] = th[0];
  sh->block[1] = ty[0];
  sh->grid[0] = (rows + ty[0] - 1) / ty[0];
  sh->shared_bytes = 4LL * th[0] * ty[0];
  sh->local_floats = (per <= TC__CUDA_STASH ? per : 0) + 2;
  return TH_OK;
}

th_status tc__cuda_row_fallback(const tc_workload *wl, const tc_cuda_target *t, const tc_space *s,
                                tc_config *c) {
  (void)t;
  int th = 32; /* about 8 elements per thread, and blocks of at least 128 threads */
  while (th < 1024 && (int64_t)th * 8 < tc__cuda_row_len(wl)) th *= 2;
  int ty = th >= 128 ? 1 : 128 / th;
  tc__cuda_pick(s, c, "threads", &th, 1);
  tc__cuda_pick(s, c, "rows_per_block", &ty, 1);
  return TH_OK;
}

void tc__cuda_row_init(tc__cuda_lc *L, tc__cuda_row *R, const tc_space *s, const tc_config *c,
                       tc__cuda_row_value value) {
  memset(R, 0, sizeof *R);
  R->rows = tc__cuda_rows(L->wl);
  R->len = tc__cuda_row_len(L->wl);
  R->tx = tc_config_int(s, c, "threads", 32);
  R->ty = tc_config_int(s, c, "rows_per_block", 1);
  R->per = (R->len + R->tx - 1) / R->tx;
  R->stash = R->per <= TC__CUDA_STASH;
  R->value = value;
  R->bx = tc__cuda_iv(L, "bx");
  R->tx_v = tc__cuda_iv(L, "tx");
  R->ty_v = tc__cuda_iv(L, "ty");
  R->row = tc__cuda_iv(L, "row");
  R->red = tc_var_buffer(L->ir, "red", tc_type_f32(1), -1);
  R->vals = tc__cuda_local(L, "vals");
}

const tc_stmt *tc__cuda_row_pass(tc__cuda_lc *L, const tc__cuda_row *R, int first,
                                 tc__cuda_row_fn fn) {
  tc_var *q = tc__cuda_iv(L, "q"), *x = tc_var_new(L->ir, "x", tc_type_f32(1));
  const tc_expr *pos = ADD(MUL(V(q), I(R->tx)), V(R->tx_v));
  const tc_expr *xv = R->stash && !first ? LD(R->vals, V(q)) : R->value(L, R, pos);
  const tc_stmt *body = fn(L, R, pos, V(q), V(x));
  if (R->stash && first)
    body = tc_s_seq(L->ir, 2, (const tc_stmt *const[]){ST(R->vals, V(q), V(x)), body});
  body = tc_s_let(L->ir, x, xv, body);
  const tc_expr *ok = NULL, *in_row = BIN(TC_EXPR_LT, pos, I(R->len));
  if (R->rows % R->ty)
    ok = BIN(TC_EXPR_LT, V(R->row), I(R->rows)); /* the last block's extra rows */
  if (R->len % R->tx) ok = ok ? BIN(TC_EXPR_AND, in_row, ok) : in_row;
  if (ok) body = tc_s_if(L->ir, ok, body, NULL);
  /* stashed values are registers only when their indices are constants: the loop is unrolled */
  return tc__cuda_for(L, q, R->per, R->stash ? TC_FOR_UNROLLED : TC_FOR_SERIAL, body);
}

const tc_stmt *tc__cuda_row_allreduce(tc__cuda_lc *L, const tc__cuda_row *R, tc_var *acc,
                                      int is_max, tc_var *result, const tc_stmt *rest) {
  const tc_expr *base = MUL(V(R->ty_v), I(R->tx));
  /* every thread has read the result before red is reused */
  const tc_stmt *after[2] = {tc_s_sync(L->ir), rest};
  const tc_stmt *items[4] = {ST(R->red, ADD(base, V(R->tx_v)), LD(acc, I(0))), tc_s_sync(L->ir),
                             tc__cuda_tree(L, R->red, base, R->tx_v, R->tx, is_max),
                             tc_s_let(L->ir, result, LD(R->red, base), tc_s_seq(L->ir, 2, after))};
  return tc_s_seq(L->ir, 4, items);
}

const tc_stmt *tc__cuda_row_kernel(tc__cuda_lc *L, const tc__cuda_row *R, tc_var *acc,
                                   const tc_stmt *body) {
  body = tc_s_allocate(L->ir, acc, 1, TC_SCOPE_LOCAL, body);
  if (R->stash) body = tc_s_allocate(L->ir, R->vals, R->per, TC_SCOPE_LOCAL, body);
  body = tc_s_let(L->ir, R->row, ADD(MUL(V(R->bx), I(R->ty)), V(R->ty_v)), body);
  body = tc_s_allocate(L->ir, R->red, (int64_t)R->tx * R->ty, TC_SCOPE_SHARED, body);
  body = tc__cuda_for(L, R->tx_v, R->tx, TC_FOR_GPU_THREAD_X, body);
  body = tc__cuda_for(L, R->ty_v, R->ty, TC_FOR_GPU_THREAD_Y, body);
  return tc__cuda_for(L, R->bx, (R->rows + R->ty - 1) / R->ty, TC_FOR_GPU_BLOCK_X, body);
}

/* ---- strided index spaces
 * ---------------------------------------------------------------------------- */

void tc__cuda_dims_init(tc__cuda_dims *d, const tc_workload *wl) {
  memset(d, 0, sizeof *d);
  int64_t out[TC_WL_DIMS], acc = 1;
  for (int k = wl->ndim - 1; k >= 0; k--) { /* binary's output is contiguous */
    out[k] = acc;
    acc *= wl->shape[k];
  }
  d->nops = wl->kernel == TC_KERNEL_BINARY ? 3 : 2;
  d->off[0] = wl->aoff;
  d->off[1] = wl->boff;
  d->total = acc;
  for (int k = 0; k < wl->ndim; k++) {
    if (wl->shape[k] == 1) continue; /* contributes nothing */
    int64_t st[3] = {wl->astride[k], wl->bstride[k], out[k]};
    int j = d->nd - 1, merge = j >= 0;
    /* dimension k folds into the previous kept one when every operand steps over it contiguously */
    for (int o = 0; merge && o < d->nops; o++) merge = d->stride[o][j] == st[o] * wl->shape[k];
    if (merge) {
      d->shape[j] *= wl->shape[k];
      for (int o = 0; o < d->nops; o++) d->stride[o][j] = st[o];
      continue;
    }
    d->shape[d->nd] = wl->shape[k];
    for (int o = 0; o < d->nops; o++) d->stride[o][d->nd] = st[o];
    d->nd++;
  }
}

int tc__cuda_dims_vec4(const tc__cuda_dims *d) {
  if (d->nd == 0 || d->shape[d->nd - 1] % 4) return 0;
  int in = d->nd - 1;
  for (int o = 0; o < d->nops; o++) {
    int out = o == d->nops - 1;
    if (d->stride[o][in] == 0 && !out) continue; /* broadcast along the run: one scalar, 4 lanes */
    if (d->stride[o][in] != 1 || d->off[o] % 4) return 0;
    for (int k = 0; k < in; k++)
      if (d->stride[o][k] % 4) return 0; /* 16-byte aligned vectors */
  }
  return 1;
}

const tc_stmt *tc__cuda_dims_offsets(tc__cuda_lc *L, const tc__cuda_dims *d, const tc_expr *idx,
                                     tc_var *const *offs, const tc_stmt *body) {
  tc_var *digit[TC_WL_DIMS];
  const tc_expr *off[3];
  for (int o = 0; o < d->nops; o++) off[o] = I(d->off[o]);
  for (int k = 0; k < d->nd; k++) {
    digit[k] = tc__cuda_iv(L, "i");
    for (int o = 0; o < d->nops; o++)
      if (d->stride[o][k]) off[o] = ADD(off[o], MUL(V(digit[k]), I(d->stride[o][k])));
  }
  for (int o = d->nops - 1; o >= 0; o--) body = tc_s_let(L->ir, offs[o], off[o], body);
  int64_t inner = 1;
  for (int k = d->nd - 1; k >= 0; k--) {
    const tc_expr *e = inner > 1 ? DIV(idx, I(inner)) : idx;
    if (k > 0) e = MOD(e, I(d->shape[k])); /* the outermost digit is below its extent already */
    body = tc_s_let(L->ir, digit[k], e, body);
    inner *= d->shape[k];
  }
  return body;
}

th_status tc__cuda_strided_space(const tc_workload *wl, const tc_cuda_target *t, tc_space *s) {
  (void)wl;
  (void)t;
  return tc__cuda_map_space(s, 1, 0);
}

th_status tc__cuda_strided_shape(const tc_workload *wl, const tc_space *s, const tc_config *c,
                                 tc__cuda_shape *sh, char *why, size_t whylen) {
  tc__cuda_dims d;
  tc__cuda_dims_init(&d, wl);
  if (tc_config_int(s, c, "vec", 1) == 4 && !tc__cuda_dims_vec4(&d))
    return tc__cuda_why(why, whylen, "float4 needs a contiguous, aligned innermost run of 4");
  return tc__cuda_map_shape(s, c, d.total, sh, why, whylen);
}

th_status tc__cuda_strided_fallback(const tc_workload *wl, const tc_cuda_target *t,
                                    const tc_space *s, tc_config *c) {
  (void)t;
  tc__cuda_dims d;
  tc__cuda_dims_init(&d, wl);
  tc__cuda_map_pick(s, c, tc__cuda_dims_vec4(&d));
  return TH_OK;
}

const tc_expr *tc__cuda_strided_load(tc__cuda_lc *L, const tc__cuda_dims *d, int o, tc_var *buf,
                                     const tc_expr *off, int vec) {
  if (vec == 1) return LD(buf, off);
  if (d->stride[o][d->nd - 1] == 0) return tc_e_broadcast(L->ir, LD(buf, off), 4);
  return tc_e_load(L->ir, buf, off, 4, 16);
}

/* the state of one strided lowering, in L->ctx while the map builds its element */
typedef struct tc__cuda_strided {
  tc__cuda_dims d;
  tc__cuda_strided_fn fn;
  int vec;
} tc__cuda_strided;

static const tc_stmt *tc__cuda_strided_elem(tc__cuda_lc *L, const tc_expr *idx) {
  const tc__cuda_strided *x = L->ctx;
  tc_var *offs[3] = {tc__cuda_iv(L, "oa"), tc__cuda_iv(L, "ob"), tc__cuda_iv(L, "oc")};
  const tc_stmt *body = x->fn(L, &x->d, offs, x->vec);
  return tc__cuda_dims_offsets(L, &x->d, x->vec == 4 ? MUL(idx, I(4)) : idx, offs, body);
}

const tc_stmt *tc__cuda_strided_lower(tc__cuda_lc *L, const tc_space *s, const tc_config *c,
                                      tc__cuda_strided_fn fn) {
  tc__cuda_strided x;
  tc__cuda_dims_init(&x.d, L->wl);
  x.fn = fn;
  x.vec = tc_config_int(s, c, "vec", 1);
  L->ctx = &x;
  return tc__cuda_map_cfg(L, s, c, x.d.total / x.vec, tc__cuda_strided_elem);
}

/* ---- lowering helpers
 * -------------------------------------------------------------------------------- */

tc__cuda_gemm tc__cuda_gemm_of(const tc_workload *wl) {
  if (wl->kernel == TC_KERNEL_DENSE) return (tc__cuda_gemm){1, wl->n, wl->oc, wl->c, 0, 1, 1.0};
  if (wl->kernel == TC_KERNEL_CONV2D)
    return (tc__cuda_gemm){wl->n, wl->oc, (int64_t)wl->oh * wl->ow, (int64_t)wl->c * wl->kh * wl->kw,
                           0, 0, 1.0};
  return (tc__cuda_gemm){wl->n, wl->h, wl->oc, wl->c, wl->trans_a, wl->trans_b, wl->alpha};
}

tc_var *tc__cuda_scratch(tc__cuda_lc *L, int64_t floats) {
  if (!L->scratch)
    L->scratch = tc_var_buffer(L->ir, "ws", tc_type_f32(1), tc_op_nargs(L->wl->kernel));
  if (floats > L->scratch_floats) L->scratch_floats = floats;
  return L->scratch;
}

tc_var *tc__cuda_iv(tc__cuda_lc *L, const char *name) {
  return tc_var_new(L->ir, name, tc_type_int());
}

tc_var *tc__cuda_local(tc__cuda_lc *L, const char *name) {
  return tc_var_buffer(L->ir, name, tc_type_f32(1), -1);
}

const tc_stmt *tc__cuda_for(tc__cuda_lc *L, tc_var *v, int64_t ext, tc_for_kind k,
                            const tc_stmt *body) {
  return tc_s_for(L->ir, v, I(0), I(ext), k, body);
}

const tc_expr *tc__cuda_epi(tc__cuda_lc *L, const tc_expr *v, const tc_expr *ch,
                            const tc_expr *idx) {
  const tc_workload *wl = L->wl;
  if (wl->kernel == TC_KERNEL_CONV2D || wl->kernel == TC_KERNEL_DEPTHWISE ||
      wl->kernel == TC_KERNEL_DENSE) { /* the families with weights have bias and residual slots */
    if ((wl->epilogue & TC_EPI_BIAS) && L->arg[TC_ARG_BIAS])
      v = ADD(v, LD(L->arg[TC_ARG_BIAS], ch));
    if ((wl->epilogue & TC_EPI_RESIDUAL) && L->arg[TC_ARG_RESIDUAL])
      v = ADD(v, LD(L->arg[TC_ARG_RESIDUAL], idx));
  }
  if (wl->epilogue & TC_EPI_RELU) v = tc_e_max(L->ir, v, FLT(0.0));
  if (wl->epilogue & TC_EPI_CLIP)
    v = tc_e_min(L->ir, tc_e_max(L->ir, v, FLT(wl->clip_min)), FLT(wl->clip_max));
  if (wl->epilogue & TC_EPI_GELU) v = tc_e_gelu(L->ir, v);
  if (wl->epilogue & TC_EPI_TANH) v = tc_e_tanh(L->ir, v);
  if (wl->epilogue & TC_EPI_SIGMOID) v = tc_e_sigmoid(L->ir, v);
  if (wl->epilogue & TC_EPI_HARD_SIGMOID) v = tc_e_hard_sigmoid(L->ir, v, wl->alpha, wl->beta);
  if (wl->epilogue & TC_EPI_HARD_SWISH) v = tc_e_hard_swish(L->ir, v);
  if (wl->epilogue & TC_EPI_SILU) v = tc_e_silu(L->ir, v);
  return v;
}

const tc_stmt *tc__cuda_coop(tc__cuda_lc *L, int64_t count, int64_t T, tc_var *lt, tc_var *e,
                             const tc_stmt *body) {
  tc_var *it = tc__cuda_iv(L, "fetch"); /* the codegen never auto-unrolls fetch loops */
  const tc_expr *ev = ADD(MUL(V(it), I(T)), V(lt));
  const tc_stmt *s =
      tc_s_let(L->ir, e, ev,
               count % T == 0 ? body : tc_s_if(L->ir, BIN(TC_EXPR_LT, V(e), I(count)), body, NULL));
  return tc__cuda_for(L, it, (count + T - 1) / T, TC_FOR_SERIAL, s);
}

const tc_stmt *tc__cuda_tree(tc__cuda_lc *L, tc_var *red, const tc_expr *base, tc_var *tx,
                             int width, int is_max) {
  tc_stmt_list l = {0};
  for (int s = width / 2; s >= 1; s /= 2) {
    const tc_expr *a = LD(red, ADD(base, V(tx))), *b = LD(red, ADD(base, ADD(V(tx), I(s))));
    const tc_expr *v = is_max == 1 || is_max == TC_EXPR_MAX ? tc_e_max(L->ir, a, b)
                       : is_max == TC_EXPR_MIN || is_max == TC_EXPR_MUL ? BIN(is_max, a, b)
                                                                         : ADD(a, b);
    tc_list_push(L->ir, &l,
                 tc_s_if(L->ir, BIN(TC_EXPR_LT, V(tx), I(s)), ST(red, ADD(base, V(tx)), v), NULL));
    tc_list_push(L->ir, &l, tc_s_sync(L->ir));
  }
  if (l.n == 0) tc_list_push(L->ir, &l, tc_s_sync(L->ir));
  return tc_list_seq(L->ir, &l);
}

/* ---- entry points
 * ------------------------------------------------------------------------------------ */

th_status tc_cuda_lower(const tc_workload *wl, const tc_config *cfg, const tc_cuda_target *t,
                        th_arena *arena, tc_cuda_lowered *out) {
  if (!wl || !cfg || !t || !arena || !out) return TH_ERR_INVALID;
  tc_space s;
  th_status rc = tc_cuda_space(wl, t, &s);
  if (rc == TH_OK) rc = tc_cuda_valid(wl, t, &s, cfg, NULL, 0);
  if (rc != TH_OK) return rc;
  tc_ir ir;
  tc_ir_init(&ir, arena);
  tc__cuda_lc Ls, *L = &Ls;
  memset(L, 0, sizeof *L);
  L->ir = &ir;
  L->wl = wl;
  int nargs = tc_op_nargs(wl->kernel);
  static const char *names[5] = {"in", "w", "bias", "res", "out"};
  int64_t sizes[5];
  tc_cuda_arg_sizes(wl, sizes);
  /* a slot the workload leaves NULL (no bias, no mask, ...) has no buffer; int64 slots are ints */
  for (int a = 0; a < nargs; a++) {
    tc_type elem = tc_cuda_arg_elem_bytes(wl, a) == 8 ? tc_type_int() : tc_type_f32(1);
    if (sizes[a]) L->arg[a] = tc_var_buffer(&ir, nargs == 5 ? names[a] : "arg", elem, a);
  }
  /* staging above the static limit (valid only for a template that allows it) is dynamic */
  const tc__cuda_op *op = tc__cuda_op_of(wl);
  tc__cuda_shape sh;
  memset(&sh, 0, sizeof sh);
  for (int a = 0; a < 3; a++) sh.grid[a] = sh.block[a] = 1;
  if (op->shape(wl, &s, cfg, &sh, NULL, 0) != TH_OK) return TH_ERR_INTERNAL;
  L->dyn_shared = sh.dyn_shared_ok && sh.shared_bytes > t->max_shared_bytes;
  memset(out, 0, sizeof *out);
  out->unroll_max_step = tc_config_int(&s, cfg, "auto_unroll_max_step", 0);
  out->unroll_explicit = tc_config_int(&s, cfg, "unroll_explicit", 0);
  const tc_stmt *body = op->lower(L, &s, cfg);
  if (ir.err != TH_OK || !body) return ir.err != TH_OK ? ir.err : TH_ERR_INTERNAL;
  out->body = body;
  out->dyn_shared = L->dyn_shared;
  out->post = L->post;
  out->scratch_floats = L->scratch ? L->scratch_floats : 0;
  if (L->post && !L->scratch) return TH_ERR_INTERNAL; /* a second kernel reads the scratch */
  return TH_OK;
}

th_status tc_cuda_kernel_source(const tc_workload *wl, const tc_config *cfg,
                                const tc_cuda_target *t, const char *fn, th_buf *src,
                                tc_cuda_launch *launch, char *err, size_t errlen) {
  th_arena *arena = th_arena_new((size_t)1 << 16);
  if (!arena) return TH_ERR_NOMEM;
  tc_cuda_lowered k;
  th_status rc = tc_cuda_lower(wl, cfg, t, arena, &k);
  if (rc != TH_OK && err && errlen) {
    tc_space s;
    char why[256] = "";
    if (tc_cuda_space(wl, t, &s) == TH_OK) tc_cuda_valid(wl, t, &s, cfg, why, sizeof why);
    snprintf(err, errlen, "cuda template %s: %s%s%s", tc_kernel_name(wl->kernel), th_status_str(rc),
             why[0] ? ": " : "", why);
  }
  int nargs = tc_op_nargs(wl->kernel) + (k.scratch_floats > 0);
  if (rc == TH_OK) rc = tc_cuda_codegen(&k, fn, nargs, src, launch, err, errlen);
  if (rc == TH_OK && k.post) { /* the second kernel: same parameters, no dynamic shared memory */
    char post_fn[48];
    tc_cuda_lowered p = k;
    tc_cuda_launch pl;
    p.body = k.post;
    p.post = NULL;
    p.dyn_shared = 0;
    snprintf(post_fn, sizeof post_fn, "%s_r", fn);
    rc = tc_cuda_codegen(&p, post_fn, nargs, src, &pl, err, errlen);
    for (int a = 0; rc == TH_OK && a < 3; a++)
      launch->post_grid[a] = pl.grid[a], launch->post_block[a] = pl.block[a];
  }
  if (rc == TH_OK) launch->scratch_floats = k.scratch_floats;
  th_arena_free(arena);
  return rc;
}
