/* GPU operator templates (NCHW): config spaces, validity checks, fallbacks and lowerings to loop IR with
 * GPU-bound loops. Families:
 *   conv2d     TVM's conv2d_nchw direct schedule: output tiles split 4 ways (block, vthread, thread,
 *              inner) over f, y, x; reduction split 2 ways over rc, ry, rx; the input patch and the
 *              weight slice of one reduction step staged in __shared__ memory by the whole block;
 *              auto_unroll_max_step / unroll_explicit for the inner loops.
 *   dense      batch < 32: K split over tile_k threads per output row (rows_per_block rows per block),
 *              optional float4 loads, tree reduction in shared memory; batch >= 32: a shared-memory tiled
 *              GEMM (tile_y over the batch, tile_x over the outputs, tile_k the staged depth).
 *   depthwise, max/avg pool, global avg pool, eltwise (optional float4), concat: an element map (one
 *              thread per output element, `inner` elements per thread, coalesced), window loops unrolled
 *              per auto_unroll_max_step.
 *   softmax    one block per row; max and sum reduced in shared memory.
 * Epilogues (bias, residual, relu, clip) are fused into the store of every producing kernel. Splits use
 * exact factors, so conv tiles need no bounds guards; the other families guard their tails. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops.h"
#include "tc_cuda.h"

/* ---- spaces ----------------------------------------------------------------------------------------- */

/* Appends the ordered factorizations of n into `parts` factors whose factor i is at most cap[i] (the
 * first factor is unbounded), up to TC_MAX_KNOB_VALUES. */
static void tc__splits(int n, int parts, const int *cap, int *vals, int *nv, int depth, int rem, int *cur) {
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

static th_status tc__add_split(tc_space *s, const char *name, int n, int parts, const int *cap) {
  int vals[TC_MAX_KNOB_VALUES * TC_KNOB_WIDTH], nv = 0, cur[TC_KNOB_WIDTH] = {0};
  memset(vals, 0, sizeof vals);
  tc__splits(n, parts, cap, vals, &nv, 0, n, cur);
  int packed[TC_MAX_KNOB_VALUES * TC_KNOB_WIDTH];
  for (int i = 0; i < nv; i++)
    for (int k = 0; k < parts; k++) packed[i * parts + k] = vals[i * TC_KNOB_WIDTH + k];
  return tc_space_add(s, name, TC_KNOB_SPLIT, parts, nv, packed);
}

static th_status tc__add_list(tc_space *s, const char *name, tc_knob_kind kind, int n, const int *v) {
  return tc_space_add(s, name, kind, 1, n, v);
}

static const int *tc__val(const tc_space *s, const tc_config *c, const char *name) {
  int k = tc_space_knob(s, name);
  if (k < 0 || k >= c->nknobs || c->idx[k] < 0 || c->idx[k] >= s->knobs[k].nvalues) return NULL;
  return s->knobs[k].values[c->idx[k]];
}

static int tc__is_map(tc_kernel k) {
  return k == TC_KERNEL_DEPTHWISE || k == TC_KERNEL_MAXPOOL || k == TC_KERNEL_AVGPOOL ||
         k == TC_KERNEL_GLOBAL_AVGPOOL || k == TC_KERNEL_ELTWISE || k == TC_KERNEL_CONCAT ||
         k == TC_KERNEL_LAYOUT;
}

static int64_t tc__map_total(const tc_workload *wl) {
  if (wl->kernel == TC_KERNEL_ELTWISE || wl->kernel == TC_KERNEL_CONCAT || wl->kernel == TC_KERNEL_LAYOUT)
    return (int64_t)wl->n * wl->c * wl->h * wl->w;
  return (int64_t)wl->n * wl->oc * wl->oh * wl->ow;
}

static int tc__softmax_len(const tc_workload *wl) {
  return wl->w > 1 ? wl->w : wl->h > 1 ? wl->h : wl->c;
}

static const int tc__unroll_steps[] = {0, 512, 1500};
static const int tc__explicit[] = {0, 1};

th_status tc_cuda_space(const tc_workload *wl, const tc_cuda_target *t, tc_space *out) {
  if (!wl || !t || !out) return TH_ERR_INVALID;
  th_status rc = tc_workload_check(wl);
  if (rc != TH_OK) return rc;
  if (wl->in_cb != 1 || wl->out_cb != 1) return TH_ERR_UNSUPPORTED; /* no NCHWc on GPU */
  memset(out, 0, sizeof *out);
  static const int threads[] = {64, 128, 256, 512, 1024};
  static const int inner[] = {1, 2, 4};
  switch (wl->kernel) {
    case TC_KERNEL_CONV2D: {
      int capf[4] = {0, 2, 64, 8}, capyx[4] = {0, 2, 32, 4}, cap2c[2] = {0, 16}, cap2k[2] = {0, 11};
      rc = tc__add_split(out, "tile_f", wl->oc, 4, capf);
      if (rc == TH_OK) rc = tc__add_split(out, "tile_y", wl->oh, 4, capyx);
      if (rc == TH_OK) rc = tc__add_split(out, "tile_x", wl->ow, 4, capyx);
      if (rc == TH_OK) rc = tc__add_split(out, "tile_rc", wl->c, 2, cap2c);
      if (rc == TH_OK) rc = tc__add_split(out, "tile_ry", wl->kh, 2, cap2k);
      if (rc == TH_OK) rc = tc__add_split(out, "tile_rx", wl->kw, 2, cap2k);
      if (rc == TH_OK) rc = tc__add_list(out, "auto_unroll_max_step", TC_KNOB_OTHER, 3, tc__unroll_steps);
      if (rc == TH_OK) rc = tc__add_list(out, "unroll_explicit", TC_KNOB_OTHER, 2, tc__explicit);
      return rc;
    }
    case TC_KERNEL_DENSE:
      if (wl->n < 32) {
        static const int tk[] = {32, 64, 128, 256, 512}, rows[] = {1, 2, 4, 8}, vec[] = {1, 4};
        rc = tc__add_list(out, "tile_k", TC_KNOB_SPLIT, 5, tk);
        if (rc == TH_OK) rc = tc__add_list(out, "rows_per_block", TC_KNOB_OTHER, 4, rows);
        if (rc == TH_OK) rc = tc__add_list(out, "vec", TC_KNOB_ANNOTATE, 2, vec);
      } else {
        static const int ty[] = {8, 1, 8, 2, 8, 4, 16, 1, 16, 2, 16, 4, 8, 8, 32, 2};
        static const int tx[] = {8, 1, 8, 2, 8, 4, 16, 1, 16, 2, 16, 4, 32, 1, 32, 2, 8, 8};
        static const int tk[] = {8, 16, 32};
        rc = tc_space_add(out, "tile_y", TC_KNOB_SPLIT, 2, 8, ty);
        if (rc == TH_OK) rc = tc_space_add(out, "tile_x", TC_KNOB_SPLIT, 2, 9, tx);
        if (rc == TH_OK) rc = tc__add_list(out, "tile_k", TC_KNOB_SPLIT, 3, tk);
        if (rc == TH_OK) rc = tc__add_list(out, "auto_unroll_max_step", TC_KNOB_OTHER, 3, tc__unroll_steps);
        if (rc == TH_OK) rc = tc__add_list(out, "unroll_explicit", TC_KNOB_OTHER, 2, tc__explicit);
      }
      return rc;
    case TC_KERNEL_SOFTMAX: {
      static const int st[] = {32, 64, 128, 256, 512, 1024};
      return tc__add_list(out, "threads", TC_KNOB_SPLIT, 6, st);
    }
    case TC_KERNEL_LAYOUT:
    case TC_KERNEL_DEPTHWISE:
    case TC_KERNEL_MAXPOOL:
    case TC_KERNEL_AVGPOOL:
    case TC_KERNEL_GLOBAL_AVGPOOL:
    case TC_KERNEL_ELTWISE:
    case TC_KERNEL_CONCAT: {
      static const int vec[] = {1, 4};
      rc = tc__add_list(out, "threads", TC_KNOB_SPLIT, 5, threads);
      if (rc == TH_OK) rc = tc__add_list(out, "inner", TC_KNOB_SPLIT, 3, inner);
      if (rc == TH_OK && wl->kernel == TC_KERNEL_ELTWISE) rc = tc__add_list(out, "vec", TC_KNOB_ANNOTATE, 2, vec);
      if (rc == TH_OK && wl->kernel != TC_KERNEL_ELTWISE && wl->kernel != TC_KERNEL_CONCAT &&
          wl->kernel != TC_KERNEL_LAYOUT)
        rc = tc__add_list(out, "auto_unroll_max_step", TC_KNOB_OTHER, 3, tc__unroll_steps);
      return rc;
    }
    default: return TH_ERR_UNSUPPORTED;
  }
}

/* ---- validity --------------------------------------------------------------------------------------- */

typedef struct tc__shape {
  int64_t grid[3];
  int block[3];
  int64_t shared_bytes;
  int64_t local_floats;
} tc__shape;

static th_status tc__why(char *why, size_t n, const char *msg) {
  if (why && n) snprintf(why, n, "%s", msg);
  return TH_ERR_INVALID;
}

/* The launch shape a config implies (what the lowering will bind), for validity checks. */
static th_status tc__launch_shape(const tc_workload *wl, const tc_space *s, const tc_config *cfg, tc__shape *sh,
                                  char *why, size_t whylen) {
  memset(sh, 0, sizeof *sh);
  for (int a = 0; a < 3; a++) sh->grid[a] = sh->block[a] = 1;
  if (tc_space_index(s, cfg) < 0) return tc__why(why, whylen, "config is not a point of the space");
  if (wl->kernel == TC_KERNEL_CONV2D) {
    const int *f = tc__val(s, cfg, "tile_f"), *y = tc__val(s, cfg, "tile_y"), *x = tc__val(s, cfg, "tile_x");
    const int *rc = tc__val(s, cfg, "tile_rc"), *ry = tc__val(s, cfg, "tile_ry"), *rx = tc__val(s, cfg, "tile_rx");
    if (!f || !y || !x || !rc || !ry || !rx) return tc__why(why, whylen, "missing knob");
    sh->grid[2] = (int64_t)wl->n * f[0];
    sh->grid[1] = y[0];
    sh->grid[0] = x[0];
    sh->block[2] = f[2];
    sh->block[1] = y[2];
    sh->block[0] = x[2];
    int64_t yb = (int64_t)y[1] * y[2] * y[3], xb = (int64_t)x[1] * x[2] * x[3];
    int64_t ih = (yb - 1) * wl->sh + ry[1], iw = (xb - 1) * wl->sw + rx[1];
    sh->shared_bytes = 4 * ((int64_t)rc[1] * ih * iw + (int64_t)f[1] * f[2] * f[3] * rc[1] * ry[1] * rx[1]);
    sh->local_floats = (int64_t)f[1] * f[3] * y[1] * y[3] * x[1] * x[3];
  } else if (wl->kernel == TC_KERNEL_DENSE && wl->n < 32) {
    const int *tk = tc__val(s, cfg, "tile_k"), *rows = tc__val(s, cfg, "rows_per_block"), *vec = tc__val(s, cfg, "vec");
    if (!tk || !rows || !vec) return tc__why(why, whylen, "missing knob");
    if (vec[0] == 4 && wl->c % 4) return tc__why(why, whylen, "float4 loads need K % 4 == 0");
    sh->block[0] = tk[0];
    sh->block[1] = rows[0];
    sh->grid[0] = ((int64_t)wl->n * wl->oc + rows[0] - 1) / rows[0];
    sh->shared_bytes = 4LL * tk[0] * rows[0];
    sh->local_floats = 4;
  } else if (wl->kernel == TC_KERNEL_DENSE) {
    const int *ty = tc__val(s, cfg, "tile_y"), *tx = tc__val(s, cfg, "tile_x"), *tk = tc__val(s, cfg, "tile_k");
    if (!ty || !tx || !tk) return tc__why(why, whylen, "missing knob");
    int64_t bn = (int64_t)ty[0] * ty[1], bm = (int64_t)tx[0] * tx[1];
    sh->block[0] = tx[0];
    sh->block[1] = ty[0];
    sh->grid[0] = (wl->oc + bm - 1) / bm;
    sh->grid[1] = (wl->n + bn - 1) / bn;
    sh->shared_bytes = 4LL * tk[0] * (bn + bm);
    sh->local_floats = (int64_t)ty[1] * tx[1];
  } else if (wl->kernel == TC_KERNEL_SOFTMAX) {
    const int *th = tc__val(s, cfg, "threads");
    if (!th) return tc__why(why, whylen, "missing knob");
    int64_t len = tc__softmax_len(wl);
    sh->block[0] = th[0];
    sh->grid[0] = tc__map_total(wl) / len;
    sh->shared_bytes = 4LL * th[0];
    if (th[0] > 32 && th[0] / 2 >= len) return tc__why(why, whylen, "more than twice as many threads as the row has elements");
  } else if (tc__is_map(wl->kernel)) {
    const int *th = tc__val(s, cfg, "threads"), *in = tc__val(s, cfg, "inner");
    const int *vec = tc__val(s, cfg, "vec");
    if (!th || !in) return tc__why(why, whylen, "missing knob");
    int64_t total = tc__map_total(wl);
    if (vec && vec[0] == 4) {
      if (total % 4) return tc__why(why, whylen, "float4 needs a multiple of 4 elements");
      total /= 4;
    }
    sh->block[0] = th[0];
    sh->grid[0] = (total + (int64_t)th[0] * in[0] - 1) / ((int64_t)th[0] * in[0]);
    sh->local_floats = 1;
  } else {
    return tc__why(why, whylen, "no GPU template for this family");
  }
  return TH_OK;
}

th_status tc_cuda_valid(const tc_workload *wl, const tc_cuda_target *t, const tc_space *s,
                        const tc_config *cfg, char *why, size_t whylen) {
  if (why && whylen) why[0] = '\0';
  if (!wl || !t || !s || !cfg) return TH_ERR_INVALID;
  if (tc_workload_check(wl) != TH_OK || wl->in_cb != 1 || wl->out_cb != 1)
    return tc__why(why, whylen, "workload is not a plain NCHW GPU workload");
  int64_t in_el = (int64_t)wl->n * wl->c * wl->h * wl->w, out_el = (int64_t)wl->n * wl->oc * wl->oh * wl->ow;
  int64_t w_el = (int64_t)wl->oc * wl->c * wl->kh * wl->kw;
  if (in_el >= INT32_MAX || out_el >= INT32_MAX || w_el >= INT32_MAX)
    return tc__why(why, whylen, "tensor larger than 2^31 elements (32-bit indexing)");
  tc__shape sh;
  th_status rc = tc__launch_shape(wl, s, cfg, &sh, why, whylen);
  if (rc != TH_OK) return rc;
  int64_t threads = (int64_t)sh.block[0] * sh.block[1] * sh.block[2];
  if (threads > t->max_threads) return tc__why(why, whylen, "more than 1024 threads per block");
  for (int a = 0; a < 3; a++) {
    if (sh.block[a] > t->max_block[a]) return tc__why(why, whylen, "threads per block dimension over the limit");
    if (sh.grid[a] > t->max_grid[a] || sh.grid[a] < 1) return tc__why(why, whylen, "grid dimension over the limit");
  }
  if (sh.shared_bytes > t->max_shared_bytes) return tc__why(why, whylen, "static shared memory over 48 KiB");
  int64_t regs = sh.local_floats + 32; /* accumulators + addressing and staging */
  if (regs > t->max_regs_per_thread) return tc__why(why, whylen, "register estimate over 255 per thread");
  if (regs * threads > t->max_regs_per_block) return tc__why(why, whylen, "register estimate over 64K per block");
  return TH_OK;
}

/* ---- fallback --------------------------------------------------------------------------------------- */

static int tc__find(const tc_space *s, const char *name, const int *want, int width) {
  int k = tc_space_knob(s, name);
  if (k < 0) return 0;
  for (int i = 0; i < s->knobs[k].nvalues; i++)
    if (memcmp(s->knobs[k].values[i], want, (size_t)width * sizeof(int)) == 0) return i;
  return 0;
}

static void tc__set(const tc_space *s, tc_config *c, const char *name, int idx) {
  int k = tc_space_knob(s, name);
  if (k >= 0) c->idx[k] = idx;
}

static int tc__largest_div(int n, int cap) {
  for (int d = cap; d > 1; d--)
    if (n % d == 0) return d;
  return 1;
}

th_status tc_cuda_fallback(const tc_workload *wl, const tc_cuda_target *t, const tc_space *s,
                           tc_config *out) {
  if (!wl || !t || !s || !out) return TH_ERR_INVALID;
  memset(out, 0, sizeof *out);
  out->nknobs = s->nknobs;
  if (wl->kernel == TC_KERNEL_CONV2D) {
    int rc2[2] = {0, tc__largest_div(wl->c, 8)};
    rc2[0] = wl->c / rc2[1];
    int ry[2] = {1, wl->kh}, rx[2] = {1, wl->kw};
    if (wl->kh > 11) ry[0] = wl->kh, ry[1] = 1;
    if (wl->kw > 11) rx[0] = wl->kw, rx[1] = 1;
    tc__set(s, out, "tile_rc", tc__find(s, "tile_rc", rc2, 2));
    tc__set(s, out, "tile_ry", tc__find(s, "tile_ry", ry, 2));
    tc__set(s, out, "tile_rx", tc__find(s, "tile_rx", rx, 2));
    int one = 0; /* nvcc unrolls the small constant loops itself; explicit steps cost NVRTC time */
    tc__set(s, out, "auto_unroll_max_step", tc__find(s, "auto_unroll_max_step", &one, 1));
    int kf = tc_space_knob(s, "tile_f"), ky = tc_space_knob(s, "tile_y"), kx = tc_space_knob(s, "tile_x");
    double best = -1e30;
    tc_config bestc = *out;
    for (int a = 0; a < s->knobs[kf].nvalues; a++)
      for (int b = 0; b < s->knobs[ky].nvalues; b++)
        for (int c = 0; c < s->knobs[kx].nvalues; c++) {
          out->idx[kf] = a;
          out->idx[ky] = b;
          out->idx[kx] = c;
          const int *f = s->knobs[kf].values[a], *y = s->knobs[ky].values[b], *x = s->knobs[kx].values[c];
          if (tc_cuda_valid(wl, t, s, out, NULL, 0) != TH_OK) continue;
          double th = (double)f[2] * y[2] * x[2], per = (double)f[1] * f[3] * y[1] * y[3] * x[1] * x[3];
          double blocks = (double)wl->n * f[0] * y[0] * x[0];
          double score = -fabs(log2(th) - 7.5) - 0.6 * fabs(log2(per) - 3.5);
          if (blocks < 264) score -= 0.8 * log2(264.0 / blocks);
          if (x[2] < 4 && wl->ow >= 4) score -= 0.5; /* coalescing along x */
          score -= 0.05 * (f[1] + y[1] + x[1]); /* prefer no vthreads */
          if (score > best) {
            best = score;
            bestc = *out;
          }
        }
    *out = bestc;
  } else if (wl->kernel == TC_KERNEL_DENSE && wl->n < 32) {
    int tk = wl->c >= 2048 ? 256 : wl->c >= 512 ? 128 : wl->c >= 128 ? 64 : 32;
    int rows = wl->n * wl->oc >= 4096 ? 4 : 1, vec = wl->c % 4 == 0 ? 4 : 1;
    tc__set(s, out, "tile_k", tc__find(s, "tile_k", &tk, 1));
    tc__set(s, out, "rows_per_block", tc__find(s, "rows_per_block", &rows, 1));
    tc__set(s, out, "vec", tc__find(s, "vec", &vec, 1));
  } else if (wl->kernel == TC_KERNEL_DENSE) {
    int ty[2] = {16, 4}, tx[2] = {16, 4}, tk = 16, un = 512;
    tc__set(s, out, "tile_y", tc__find(s, "tile_y", ty, 2));
    tc__set(s, out, "tile_x", tc__find(s, "tile_x", tx, 2));
    tc__set(s, out, "tile_k", tc__find(s, "tile_k", &tk, 1));
    tc__set(s, out, "auto_unroll_max_step", tc__find(s, "auto_unroll_max_step", &un, 1));
  } else if (wl->kernel == TC_KERNEL_SOFTMAX) {
    int len = tc__softmax_len(wl), th = len >= 1024 ? 256 : len >= 256 ? 128 : 32;
    tc__set(s, out, "threads", tc__find(s, "threads", &th, 1));
  } else {
    int th = 256, in = 1, un = 512, vec = tc__map_total(wl) % 4 == 0 ? 4 : 1;
    tc__set(s, out, "threads", tc__find(s, "threads", &th, 1));
    tc__set(s, out, "inner", tc__find(s, "inner", &in, 1));
    tc__set(s, out, "vec", tc__find(s, "vec", &vec, 1));
    tc__set(s, out, "auto_unroll_max_step", tc__find(s, "auto_unroll_max_step", &un, 1));
  }
  if (tc_cuda_valid(wl, t, s, out, NULL, 0) == TH_OK) return TH_OK;
  /* the heuristic point does not fit: the first valid point in flat order */
  int64_t n = tc_space_size(s);
  for (int64_t i = 0; i < n && i < 200000; i++) {
    tc_space_get(s, i, out);
    if (tc_cuda_valid(wl, t, s, out, NULL, 0) == TH_OK) return TH_OK;
  }
  return TH_ERR_UNSUPPORTED;
}

/* ---- lowering helpers ------------------------------------------------------------------------------- */

typedef struct tl {
  tc_ir *ir;
  const tc_workload *wl;
  tc_var *arg[5];
} tl;

#define I(v) tc_e_int(L->ir, (v))
#define V(v) tc_e_var(L->ir, (v))
#define ADD(a, b) tc_e_add(L->ir, (a), (b))
#define SUB(a, b) tc_e_sub(L->ir, (a), (b))
#define MUL(a, b) tc_e_mul(L->ir, (a), (b))
#define DIV(a, b) tc_e_div(L->ir, (a), (b))
#define MOD(a, b) tc_e_mod(L->ir, (a), (b))
#define BIN(k, a, b) tc_e_bin(L->ir, (k), (a), (b))
#define LD(buf, idx) tc_e_load(L->ir, (buf), (idx), 1, 4)
#define ST(buf, idx, v) tc_s_store(L->ir, (buf), (idx), (v), 4)
#define FLT(x) tc_e_float(L->ir, (x))

static tc_var *tl_iv(tl *L, const char *name) {
  return tc_var_new(L->ir, name, tc_type_int());
}

static const tc_stmt *tl_for(tl *L, tc_var *v, int64_t ext, tc_for_kind k, const tc_stmt *body) {
  return tc_s_for(L->ir, v, I(0), I(ext), k, body);
}

static tc_var *tl_local(tl *L, const char *name) {
  return tc_var_buffer(L->ir, name, tc_type_f32(1), -1);
}

static const tc_expr *tl_act(tl *L, const tc_expr *v) {
  const tc_workload *wl = L->wl;
  if (wl->epilogue & TC_EPI_RELU) v = tc_e_max(L->ir, v, FLT(0.0));
  if (wl->epilogue & TC_EPI_CLIP) v = tc_e_min(L->ir, tc_e_max(L->ir, v, FLT(wl->clip_min)), FLT(wl->clip_max));
  return v;
}

/* The fused epilogue of a value at output element idx of channel ch: + bias, + residual, then relu/clip. */
static const tc_expr *tl_epi(tl *L, const tc_expr *v, const tc_expr *ch, const tc_expr *idx) {
  const tc_workload *wl = L->wl;
  int weighted = wl->kernel == TC_KERNEL_CONV2D || wl->kernel == TC_KERNEL_DEPTHWISE || wl->kernel == TC_KERNEL_DENSE;
  if (!weighted) return tl_act(L, v);
  if ((wl->epilogue & TC_EPI_BIAS) && L->arg[TC_ARG_BIAS]) v = ADD(v, LD(L->arg[TC_ARG_BIAS], ch));
  if ((wl->epilogue & TC_EPI_RESIDUAL) && L->arg[TC_ARG_RESIDUAL]) v = ADD(v, LD(L->arg[TC_ARG_RESIDUAL], idx));
  if (wl->epilogue & TC_EPI_RELU) v = tc_e_max(L->ir, v, FLT(0.0));
  if (wl->epilogue & TC_EPI_CLIP) v = tc_e_min(L->ir, tc_e_max(L->ir, v, FLT(wl->clip_min)), FLT(wl->clip_max));
  return v;
}

/* ---- element maps ------------------------------------------------------------------------------------ */

typedef const tc_stmt *(*tl_elem_fn)(tl *L, const tc_expr *idx);

/* grid.x blocks of `threads` threads, each doing `inner` elements idx = (bx*inner + i)*threads + tx. */
static const tc_stmt *tl_map(tl *L, int64_t total, int threads, int inner, tl_elem_fn fn) {
  int64_t blocks = (total + (int64_t)threads * inner - 1) / ((int64_t)threads * inner);
  tc_var *bx = tl_iv(L, "bx"), *tx = tl_iv(L, "tx"), *i = tl_iv(L, "i"), *idx = tl_iv(L, "idx");
  const tc_expr *e = ADD(MUL(ADD(MUL(V(bx), I(inner)), V(i)), I(threads)), V(tx));
  const tc_stmt *body = tc_s_let(L->ir, idx, e,
                                 tc_s_if(L->ir, BIN(TC_EXPR_LT, V(idx), I(total)), fn(L, V(idx)), NULL));
  body = tl_for(L, i, inner, TC_FOR_SERIAL, body);
  body = tl_for(L, tx, threads, TC_FOR_GPU_THREAD_X, body);
  return tl_for(L, bx, blocks, TC_FOR_GPU_BLOCK_X, body);
}

static const tc_stmt *tl_elt(tl *L, const tc_expr *idx) {
  const tc_expr *v = ADD(LD(L->arg[TC_ARG_ELT_A], idx), LD(L->arg[TC_ARG_ELT_B], idx));
  return ST(L->arg[TC_ARG_ELT_OUT], idx, tl_epi(L, v, NULL, NULL));
}

static const tc_stmt *tl_elt4(tl *L, const tc_expr *idx4) {
  const tc_expr *idx = MUL(idx4, I(4));
  const tc_expr *v = ADD(tc_e_load(L->ir, L->arg[TC_ARG_ELT_A], idx, 4, 16),
                         tc_e_load(L->ir, L->arg[TC_ARG_ELT_B], idx, 4, 16));
  if (L->wl->epilogue & TC_EPI_RELU) v = tc_e_max(L->ir, v, tc_e_broadcast(L->ir, FLT(0.0), 4));
  if (L->wl->epilogue & TC_EPI_CLIP)
    v = tc_e_min(L->ir, tc_e_max(L->ir, v, tc_e_broadcast(L->ir, FLT(L->wl->clip_min), 4)),
                 tc_e_broadcast(L->ir, FLT(L->wl->clip_max), 4));
  return tc_s_store(L->ir, L->arg[TC_ARG_ELT_OUT], idx, v, 16);
}

static const tc_stmt *tl_copy(tl *L, const tc_expr *idx) {
  const tc_workload *wl = L->wl;
  const tc_expr *out = idx;
  if (wl->kernel == TC_KERNEL_CONCAT) {
    int64_t hw = (int64_t)wl->h * wl->w;
    const tc_expr *s = MOD(idx, I(hw)), *nc = DIV(idx, I(hw));
    const tc_expr *ch = MOD(nc, I(wl->c)), *nn = DIV(nc, I(wl->c));
    out = ADD(MUL(ADD(MUL(nn, I(wl->oc)), ADD(ch, I(wl->c_offset))), I(hw)), s);
  }
  return ST(L->arg[TC_ARG_SIMPLE_OUT], out, LD(L->arg[TC_ARG_SIMPLE_IN], idx));
}

/* Decomposes an NCHW output index into (n, c, y, x) lets around body(n, c, y, x). */
typedef struct tl_pos {
  tc_var *n, *c, *y, *x;
} tl_pos;

static const tc_stmt *tl_with_pos(tl *L, const tc_expr *idx, tl_pos *p, const tc_stmt *body) {
  const tc_workload *wl = L->wl;
  const tc_stmt *s = tc_s_let(L->ir, p->n, DIV(idx, I((int64_t)wl->oc * wl->oh * wl->ow)), body);
  s = tc_s_let(L->ir, p->c, MOD(DIV(idx, I((int64_t)wl->oh * wl->ow)), I(wl->oc)), s);
  s = tc_s_let(L->ir, p->y, MOD(DIV(idx, I(wl->ow)), I(wl->oh)), s);
  return tc_s_let(L->ir, p->x, MOD(idx, I(wl->ow)), s);
}

static const tc_expr *tl_inside(tl *L, const tc_expr *iy, const tc_expr *ix) {
  const tc_workload *wl = L->wl;
  const tc_expr *a = BIN(TC_EXPR_AND, BIN(TC_EXPR_GE, iy, I(0)), BIN(TC_EXPR_LT, iy, I(wl->h)));
  const tc_expr *b = BIN(TC_EXPR_AND, BIN(TC_EXPR_GE, ix, I(0)), BIN(TC_EXPR_LT, ix, I(wl->w)));
  return BIN(TC_EXPR_AND, a, b);
}

/* depthwise conv, max/avg pool: a window reduction per output element into a one-float local. */
static const tc_stmt *tl_window(tl *L, const tc_expr *idx) {
  const tc_workload *wl = L->wl;
  tl_pos p = {tl_iv(L, "n"), tl_iv(L, "c"), tl_iv(L, "y"), tl_iv(L, "x")};
  tc_var *ky = tl_iv(L, "ky"), *kx = tl_iv(L, "kx"), *acc = tl_local(L, "acc");
  const tc_expr *iy = ADD(SUB(MUL(V(p.y), I(wl->sh)), I(wl->pt)), V(ky));
  const tc_expr *ix = ADD(SUB(MUL(V(p.x), I(wl->sw)), I(wl->pl)), V(kx));
  const tc_expr *in_idx = ADD(MUL(ADD(MUL(ADD(MUL(V(p.n), I(wl->c)), V(p.c)), I(wl->h)), iy), I(wl->w)), ix);
  const tc_expr *a0 = LD(acc, I(0)), *x = LD(L->arg[TC_ARG_IN], in_idx);
  const tc_expr *upd;
  float init = 0.0f;
  if (wl->kernel == TC_KERNEL_DEPTHWISE) {
    const tc_expr *w = LD(L->arg[TC_ARG_WEIGHTS], ADD(MUL(ADD(MUL(V(p.c), I(wl->kh)), V(ky)), I(wl->kw)), V(kx)));
    upd = tc_e_fma(L->ir, x, w, a0);
  } else if (wl->kernel == TC_KERNEL_MAXPOOL) {
    upd = tc_e_max(L->ir, a0, x);
    init = -INFINITY;
  } else {
    upd = ADD(a0, x);
  }
  const tc_stmt *inner = tc_s_if(L->ir, tl_inside(L, iy, ix), ST(acc, I(0), upd), NULL);
  inner = tl_for(L, ky, wl->kh, TC_FOR_SERIAL, tl_for(L, kx, wl->kw, TC_FOR_SERIAL, inner));
  const tc_expr *res = LD(acc, I(0));
  if (wl->kernel == TC_KERNEL_MAXPOOL) {
    res = tc_e_select(L->ir, BIN(TC_EXPR_EQ, res, FLT(-INFINITY)), FLT(-3.4028234663852886e38), res);
  } else if (wl->kernel == TC_KERNEL_AVGPOOL) {
    /* the divisor of PyTorch's avg_pool2d (see ref.c): the window clipped to the padded input, or to the
     * input without count_include_pad */
    const tc_expr *hs = SUB(MUL(V(p.y), I(wl->sh)), I(wl->pt)), *ws = SUB(MUL(V(p.x), I(wl->sw)), I(wl->pl));
    const tc_expr *he = ADD(hs, I(wl->kh)), *we = ADD(ws, I(wl->kw));
    const tc_expr *cnt;
    if (wl->count_include_pad) {
      cnt = MUL(SUB(tc_e_min(L->ir, he, I(wl->h + wl->pb)), hs), SUB(tc_e_min(L->ir, we, I(wl->w + wl->pr)), ws));
    } else {
      cnt = MUL(SUB(tc_e_min(L->ir, he, I(wl->h)), tc_e_max(L->ir, hs, I(0))),
                SUB(tc_e_min(L->ir, we, I(wl->w)), tc_e_max(L->ir, ws, I(0))));
    }
    res = tc_e_select(L->ir, BIN(TC_EXPR_GT, cnt, I(0)), DIV(res, tc_e_cast(L->ir, tc_type_f32(1), cnt)), FLT(0.0));
  }
  const tc_stmt *items[3] = {ST(acc, I(0), FLT(init)), inner,
                             ST(L->arg[TC_ARG_SIMPLE_OUT + (wl->kernel == TC_KERNEL_DEPTHWISE ? 3 : 0)], idx,
                                tl_epi(L, res, V(p.c), idx))};
  const tc_stmt *body = tc_s_allocate(L->ir, acc, 1, TC_SCOPE_LOCAL, tc_s_seq(L->ir, 3, items));
  return tl_with_pos(L, idx, &p, body);
}

static const tc_stmt *tl_gap(tl *L, const tc_expr *idx) {
  const tc_workload *wl = L->wl;
  int64_t hw = (int64_t)wl->h * wl->w;
  tc_var *k = tl_iv(L, "k"), *acc = tl_local(L, "acc");
  const tc_stmt *items[3] = {
      ST(acc, I(0), FLT(0.0)),
      tl_for(L, k, hw, TC_FOR_SERIAL, ST(acc, I(0), ADD(LD(acc, I(0)), LD(L->arg[TC_ARG_SIMPLE_IN], ADD(MUL(idx, I(hw)), V(k)))))),
      ST(L->arg[TC_ARG_SIMPLE_OUT], idx, tl_epi(L, MUL(LD(acc, I(0)), FLT(1.0 / (double)hw)), NULL, NULL))};
  return tc_s_allocate(L->ir, acc, 1, TC_SCOPE_LOCAL, tc_s_seq(L->ir, 3, items));
}

/* ---- reductions in shared memory -------------------------------------------------------------------- */

/* red[base + tx] combined pairwise down to red[base], `width` (a power of two) threads; every thread of
 * the block reaches every barrier. */
static const tc_stmt *tl_tree(tl *L, tc_var *red, const tc_expr *base, tc_var *tx, int width, int is_max) {
  tc_stmt_list l = {0};
  for (int s = width / 2; s >= 1; s /= 2) {
    const tc_expr *a = LD(red, ADD(base, V(tx))), *b = LD(red, ADD(base, ADD(V(tx), I(s))));
    const tc_expr *v = is_max ? tc_e_max(L->ir, a, b) : ADD(a, b);
    tc_list_push(L->ir, &l, tc_s_if(L->ir, BIN(TC_EXPR_LT, V(tx), I(s)), ST(red, ADD(base, V(tx)), v), NULL));
    tc_list_push(L->ir, &l, tc_s_sync(L->ir));
  }
  if (l.n == 0) tc_list_push(L->ir, &l, tc_s_sync(L->ir));
  return tc_list_seq(L->ir, &l);
}

static const tc_stmt *tl_softmax(tl *L, int threads) {
  const tc_workload *wl = L->wl;
  int64_t len = tc__softmax_len(wl), rows = tc__map_total(wl) / len;
  tc_var *bx = tl_iv(L, "row"), *tx = tl_iv(L, "tx"), *k = tl_iv(L, "k"), *k2 = tl_iv(L, "k"), *k3 = tl_iv(L, "k");
  tc_var *red = tc_var_buffer(L->ir, "red", tc_type_f32(1), -1), *acc = tl_local(L, "acc");
  tc_var *m = tc_var_new(L->ir, "m", tc_type_f32(1)), *sum = tc_var_new(L->ir, "s", tc_type_f32(1));
  tc_var *in = L->arg[TC_ARG_SIMPLE_IN], *out = L->arg[TC_ARG_SIMPLE_OUT];
  int64_t iters = (len + threads - 1) / threads;
  const tc_expr *pos = ADD(MUL(V(k), I(threads)), V(tx)), *pos2 = ADD(MUL(V(k2), I(threads)), V(tx));
  const tc_expr *pos3 = ADD(MUL(V(k3), I(threads)), V(tx));
  const tc_expr *row0 = MUL(V(bx), I(len));
  const tc_stmt *mx = tl_for(L, k, iters, TC_FOR_SERIAL,
                             tc_s_if(L->ir, BIN(TC_EXPR_LT, pos, I(len)),
                                     ST(acc, I(0), tc_e_max(L->ir, LD(acc, I(0)), LD(in, ADD(row0, pos)))), NULL));
  const tc_stmt *sm = tl_for(L, k2, iters, TC_FOR_SERIAL,
                             tc_s_if(L->ir, BIN(TC_EXPR_LT, pos2, I(len)),
                                     ST(acc, I(0), ADD(LD(acc, I(0)), tc_e_exp(L->ir, SUB(LD(in, ADD(row0, pos2)), V(m))))),
                                     NULL));
  const tc_stmt *wr = tl_for(L, k3, iters, TC_FOR_SERIAL,
                             tc_s_if(L->ir, BIN(TC_EXPR_LT, pos3, I(len)),
                                     ST(out, ADD(row0, pos3), DIV(tc_e_exp(L->ir, SUB(LD(in, ADD(row0, pos3)), V(m))), V(sum))),
                                     NULL));
  /* after m is read by every thread a barrier protects red before the sum pass overwrites it */
  const tc_stmt *after_sum[2] = {tc_s_sync(L->ir), wr};
  const tc_stmt *sum_part[5] = {ST(acc, I(0), FLT(0.0)), sm, ST(red, V(tx), LD(acc, I(0))), tc_s_sync(L->ir),
                                tl_tree(L, red, I(0), tx, threads, 0)};
  const tc_stmt *with_m[3] = {tc_s_sync(L->ir), tc_s_seq(L->ir, 5, sum_part),
                              tc_s_let(L->ir, sum, LD(red, I(0)), tc_s_seq(L->ir, 2, after_sum))};
  const tc_stmt *items[6] = {ST(acc, I(0), FLT(-INFINITY)), mx, ST(red, V(tx), LD(acc, I(0))), tc_s_sync(L->ir),
                             tl_tree(L, red, I(0), tx, threads, 1),
                             tc_s_let(L->ir, m, LD(red, I(0)), tc_s_seq(L->ir, 3, with_m))};
  const tc_stmt *body = tc_s_allocate(L->ir, acc, 1, TC_SCOPE_LOCAL, tc_s_seq(L->ir, 6, items));
  body = tc_s_allocate(L->ir, red, threads, TC_SCOPE_SHARED, body);
  body = tl_for(L, tx, threads, TC_FOR_GPU_THREAD_X, body);
  return tl_for(L, bx, rows, TC_FOR_GPU_BLOCK_X, body);
}

/* dense, batch < 32: tk threads per output row split K, rows rows per block, tree reduction. */
static const tc_stmt *tl_dense_small(tl *L, int tk, int rows, int vec) {
  const tc_workload *wl = L->wl;
  int64_t K = wl->c, M = wl->oc, R = (int64_t)wl->n * M;
  tc_var *bx = tl_iv(L, "bx"), *tx = tl_iv(L, "tx"), *ty = tl_iv(L, "ty"), *row = tl_iv(L, "row"), *k = tl_iv(L, "k");
  tc_var *red = tc_var_buffer(L->ir, "red", tc_type_f32(1), -1), *acc = tl_local(L, "acc");
  tc_var *in = L->arg[TC_ARG_IN], *w = L->arg[TC_ARG_WEIGHTS];
  const tc_expr *nn = DIV(V(row), I(M)), *mm = MOD(V(row), I(M));
  const tc_stmt *loop, *init, *fin;
  if (vec == 4) {
    int64_t iters = (K / 4 + tk - 1) / tk;
    const tc_expr *kk = MUL(ADD(MUL(V(k), I(tk)), V(tx)), I(4));
    const tc_expr *f = tc_e_fma(L->ir, tc_e_load(L->ir, in, ADD(MUL(nn, I(K)), kk), 4, 16),
                                tc_e_load(L->ir, w, ADD(MUL(mm, I(K)), kk), 4, 16), tc_e_load(L->ir, acc, I(0), 4, 4));
    loop = tl_for(L, k, iters, TC_FOR_SERIAL,
                  tc_s_if(L->ir, BIN(TC_EXPR_LT, kk, I(K)), tc_s_store(L->ir, acc, I(0), f, 4), NULL));
    init = tc_s_store(L->ir, acc, I(0), tc_e_broadcast(L->ir, FLT(0.0), 4), 4);
    fin = ST(acc, I(0), ADD(ADD(LD(acc, I(0)), LD(acc, I(1))), ADD(LD(acc, I(2)), LD(acc, I(3)))));
  } else {
    int64_t iters = (K + tk - 1) / tk;
    const tc_expr *kk = ADD(MUL(V(k), I(tk)), V(tx));
    loop = tl_for(L, k, iters, TC_FOR_SERIAL,
                  tc_s_if(L->ir, BIN(TC_EXPR_LT, kk, I(K)),
                          ST(acc, I(0), tc_e_fma(L->ir, LD(in, ADD(MUL(nn, I(K)), kk)), LD(w, ADD(MUL(mm, I(K)), kk)), LD(acc, I(0)))),
                          NULL));
    init = ST(acc, I(0), FLT(0.0));
    fin = tc_s_seq(L->ir, 0, NULL);
  }
  const tc_stmt *compute[2] = {loop, fin};
  const tc_expr *base = MUL(V(ty), I(tk));
  const tc_stmt *store = tc_s_if(L->ir, BIN(TC_EXPR_AND, BIN(TC_EXPR_EQ, V(tx), I(0)), BIN(TC_EXPR_LT, V(row), I(R))),
                                 ST(L->arg[TC_ARG_OUT], V(row), tl_epi(L, LD(red, base), mm, V(row))), NULL);
  const tc_stmt *items[5] = {init, tc_s_if(L->ir, BIN(TC_EXPR_LT, V(row), I(R)), tc_s_seq(L->ir, 2, compute), NULL),
                             ST(red, ADD(base, V(tx)), LD(acc, I(0))), tc_s_sync(L->ir),
                             tc_s_seq(L->ir, 2, (const tc_stmt *const[]){tl_tree(L, red, base, tx, tk, 0), store})};
  const tc_stmt *body = tc_s_allocate(L->ir, acc, 4, TC_SCOPE_LOCAL, tc_s_seq(L->ir, 5, items));
  body = tc_s_let(L->ir, row, ADD(MUL(V(bx), I(rows)), V(ty)), body);
  body = tc_s_allocate(L->ir, red, (int64_t)tk * rows, TC_SCOPE_SHARED, body);
  body = tl_for(L, tx, tk, TC_FOR_GPU_THREAD_X, body);
  body = tl_for(L, ty, rows, TC_FOR_GPU_THREAD_Y, body);
  return tl_for(L, bx, (R + rows - 1) / rows, TC_FOR_GPU_BLOCK_X, body);
}

/* Cooperative load of `count` elements by T threads (linear id lt): for each e < count, body(e). */
static const tc_stmt *tl_coop(tl *L, int64_t count, int64_t T, tc_var *lt, tc_var *e,
                              const tc_stmt *body) {
  tc_var *it = tl_iv(L, "fetch");
  const tc_expr *ev = ADD(MUL(V(it), I(T)), V(lt));
  const tc_stmt *s = tc_s_let(L->ir, e, ev, count % T == 0 ? body : tc_s_if(L->ir, BIN(TC_EXPR_LT, V(e), I(count)), body, NULL));
  return tl_for(L, it, (count + T - 1) / T, TC_FOR_SERIAL, s);
}

/* dense, batch >= 32: C[n, m] = sum_k A[n, k] W[m, k], a BN x BM tile per block staged through shared. */
static const tc_stmt *tl_dense_large(tl *L, int ty, int tn, int tx, int tm, int bk) {
  const tc_workload *wl = L->wl;
  int64_t N = wl->n, M = wl->oc, K = wl->c, BN = (int64_t)ty * tn, BM = (int64_t)tx * tm, T = (int64_t)tx * ty;
  tc_var *bxm = tl_iv(L, "bm"), *byn = tl_iv(L, "bn"), *vx = tl_iv(L, "tx"), *vy = tl_iv(L, "ty"), *lt = tl_iv(L, "lt");
  tc_var *k0 = tl_iv(L, "k0"), *kk = tl_iv(L, "kk"), *i = tl_iv(L, "i"), *j = tl_iv(L, "j"), *e = tl_iv(L, "e"), *e2 = tl_iv(L, "e");
  tc_var *As = tc_var_buffer(L->ir, "As", tc_type_f32(1), -1), *Ws = tc_var_buffer(L->ir, "Ws", tc_type_f32(1), -1);
  tc_var *acc = tl_local(L, "acc");
  tc_var *A = L->arg[TC_ARG_IN], *W = L->arg[TC_ARG_WEIGHTS];
  /* As[kk*BN + nl] = A[bn*BN + nl, k0*bk + kk] (consecutive threads read consecutive k) */
  const tc_expr *akk = MOD(V(e), I(bk)), *anl = DIV(V(e), I(bk));
  const tc_expr *agk = ADD(MUL(V(k0), I(bk)), akk), *agn = ADD(MUL(V(byn), I(BN)), anl);
  const tc_expr *aok = BIN(TC_EXPR_AND, BIN(TC_EXPR_LT, agk, I(K)), BIN(TC_EXPR_LT, agn, I(N)));
  const tc_stmt *lda = ST(As, ADD(MUL(akk, I(BN)), anl), tc_e_select(L->ir, aok, LD(A, ADD(MUL(agn, I(K)), agk)), FLT(0.0)));
  const tc_expr *wkk = MOD(V(e2), I(bk)), *wml = DIV(V(e2), I(bk));
  const tc_expr *wgk = ADD(MUL(V(k0), I(bk)), wkk), *wgm = ADD(MUL(V(bxm), I(BM)), wml);
  const tc_expr *wok = BIN(TC_EXPR_AND, BIN(TC_EXPR_LT, wgk, I(K)), BIN(TC_EXPR_LT, wgm, I(M)));
  const tc_stmt *ldw = ST(Ws, ADD(MUL(wkk, I(BM)), wml), tc_e_select(L->ir, wok, LD(W, ADD(MUL(wgm, I(K)), wgk)), FLT(0.0)));
  const tc_expr *nl = ADD(MUL(V(i), I(ty)), V(vy)), *ml = ADD(MUL(V(j), I(tx)), V(vx));
  const tc_expr *ai = ADD(MUL(V(i), I(tm)), V(j));
  const tc_stmt *fma = ST(acc, ai, tc_e_fma(L->ir, LD(As, ADD(MUL(V(kk), I(BN)), nl)), LD(Ws, ADD(MUL(V(kk), I(BM)), ml)), LD(acc, ai)));
  const tc_stmt *comp = tl_for(L, kk, bk, TC_FOR_SERIAL, tl_for(L, i, tn, TC_FOR_SERIAL, tl_for(L, j, tm, TC_FOR_SERIAL, fma)));
  const tc_stmt *step[5] = {tc_s_sync(L->ir), tl_coop(L, bk * BN, T, lt, e, lda), tl_coop(L, bk * BM, T, lt, e2, ldw),
                            tc_s_sync(L->ir), comp};
  const tc_stmt *kloop = tl_for(L, k0, (K + bk - 1) / bk, TC_FOR_SERIAL, tc_s_seq(L->ir, 5, step));
  tc_var *i2 = tl_iv(L, "i"), *j2 = tl_iv(L, "j"), *i3 = tl_iv(L, "i"), *j3 = tl_iv(L, "j");
  const tc_stmt *init = tl_for(L, i3, tn, TC_FOR_SERIAL, tl_for(L, j3, tm, TC_FOR_SERIAL, ST(acc, ADD(MUL(V(i3), I(tm)), V(j3)), FLT(0.0))));
  const tc_expr *gn = ADD(MUL(V(byn), I(BN)), ADD(MUL(V(i2), I(ty)), V(vy)));
  const tc_expr *gm = ADD(MUL(V(bxm), I(BM)), ADD(MUL(V(j2), I(tx)), V(vx)));
  const tc_expr *oidx = ADD(MUL(gn, I(M)), gm);
  const tc_stmt *wr = tc_s_if(L->ir, BIN(TC_EXPR_AND, BIN(TC_EXPR_LT, gn, I(N)), BIN(TC_EXPR_LT, gm, I(M))),
                              ST(L->arg[TC_ARG_OUT], oidx, tl_epi(L, LD(acc, ADD(MUL(V(i2), I(tm)), V(j2))), gm, oidx)), NULL);
  wr = tl_for(L, i2, tn, TC_FOR_SERIAL, tl_for(L, j2, tm, TC_FOR_SERIAL, wr));
  const tc_stmt *items[3] = {init, kloop, wr};
  const tc_stmt *body = tc_s_allocate(L->ir, acc, BN / ty * tm, TC_SCOPE_LOCAL, tc_s_seq(L->ir, 3, items));
  body = tc_s_let(L->ir, lt, ADD(MUL(V(vy), I(tx)), V(vx)), body);
  body = tc_s_allocate(L->ir, As, bk * BN, TC_SCOPE_SHARED, tc_s_allocate(L->ir, Ws, bk * BM, TC_SCOPE_SHARED, body));
  body = tl_for(L, vx, tx, TC_FOR_GPU_THREAD_X, body);
  body = tl_for(L, vy, ty, TC_FOR_GPU_THREAD_Y, body);
  body = tl_for(L, bxm, (M + BM - 1) / BM, TC_FOR_GPU_BLOCK_X, body);
  return tl_for(L, byn, (N + BN - 1) / BN, TC_FOR_GPU_BLOCK_Y, body);
}

/* conv2d direct (TVM conv2d_nchw CUDA): see the file comment. */
static const tc_stmt *tl_conv(tl *L, const int *f, const int *y, const int *x, const int *rc, const int *ry,
                              const int *rx) {
  const tc_workload *wl = L->wl;
  int64_t C = wl->c, H = wl->h, W = wl->w, F = wl->oc, OH = wl->oh, OW = wl->ow, KH = wl->kh, KW = wl->kw;
  int64_t Fb = (int64_t)f[1] * f[2] * f[3], Yb = (int64_t)y[1] * y[2] * y[3], Xb = (int64_t)x[1] * x[2] * x[3];
  int64_t IHt = (Yb - 1) * wl->sh + ry[1], IWt = (Xb - 1) * wl->sw + rx[1];
  int64_t T = (int64_t)f[2] * y[2] * x[2], nacc = (int64_t)f[1] * f[3] * y[1] * y[3] * x[1] * x[3];
  int64_t S1 = rc[1] * IHt * IWt, S2 = Fb * rc[1] * ry[1] * rx[1];
  tc_var *bz = tl_iv(L, "bz"), *by = tl_iv(L, "by"), *bx = tl_iv(L, "bx");
  tc_var *tz = tl_iv(L, "tz"), *ty = tl_iv(L, "ty"), *tx = tl_iv(L, "tx"), *lt = tl_iv(L, "lt");
  tc_var *nn = tl_iv(L, "n"), *f0 = tl_iv(L, "f0"), *y0 = tl_iv(L, "y0"), *x0 = tl_iv(L, "x0");
  tc_var *rco = tl_iv(L, "rco"), *ryo = tl_iv(L, "ryo"), *rxo = tl_iv(L, "rxo");
  tc_var *cc = tl_iv(L, "rci"), *ky = tl_iv(L, "ryi"), *kx = tl_iv(L, "rxi");
  tc_var *e1 = tl_iv(L, "e"), *e2 = tl_iv(L, "e");
  tc_var *sin = tc_var_buffer(L->ir, "pad_shared", tc_type_f32(1), -1);
  tc_var *sw = tc_var_buffer(L->ir, "kernel_shared", tc_type_f32(1), -1);
  tc_var *acc = tl_local(L, "acc");
  tc_var *in = L->arg[TC_ARG_IN], *w = L->arg[TC_ARG_WEIGHTS];
  /* input patch */
  const tc_expr *c1 = DIV(V(e1), I(IHt * IWt)), *r1 = MOD(V(e1), I(IHt * IWt));
  const tc_expr *gy = ADD(ADD(SUB(MUL(V(y0), I(wl->sh)), I(wl->pt)), MUL(V(ryo), I(ry[1]))), DIV(r1, I(IWt)));
  const tc_expr *gx = ADD(ADD(SUB(MUL(V(x0), I(wl->sw)), I(wl->pl)), MUL(V(rxo), I(rx[1]))), MOD(r1, I(IWt)));
  const tc_expr *gc = ADD(MUL(V(rco), I(rc[1])), c1);
  const tc_expr *ok = BIN(TC_EXPR_AND, BIN(TC_EXPR_AND, BIN(TC_EXPR_GE, gy, I(0)), BIN(TC_EXPR_LT, gy, I(H))),
                          BIN(TC_EXPR_AND, BIN(TC_EXPR_GE, gx, I(0)), BIN(TC_EXPR_LT, gx, I(W))));
  const tc_stmt *ld1 = ST(sin, V(e1), tc_e_select(L->ir, ok, LD(in, ADD(MUL(ADD(MUL(ADD(MUL(V(nn), I(C)), gc), I(H)), gy), I(W)), gx)), FLT(0.0)));
  /* weight slice [Fb][rci][ryi][rxi] */
  int64_t per = (int64_t)rc[1] * ry[1] * rx[1];
  const tc_expr *ff = DIV(V(e2), I(per)), *r2 = MOD(V(e2), I(per));
  const tc_expr *wc = ADD(MUL(V(rco), I(rc[1])), DIV(r2, I((int64_t)ry[1] * rx[1])));
  const tc_expr *wy = ADD(MUL(V(ryo), I(ry[1])), MOD(DIV(r2, I(rx[1])), I(ry[1])));
  const tc_expr *wx = ADD(MUL(V(rxo), I(rx[1])), MOD(r2, I(rx[1])));
  const tc_expr *widx = ADD(MUL(ADD(MUL(ADD(MUL(ADD(V(f0), ff), I(C)), wc), I(KH)), wy), I(KW)), wx);
  const tc_stmt *ld2 = ST(sw, V(e2), LD(w, widx));
  /* compute: loops vf, fi, vy, yi, vx, xi inside rci, ryi, rxi */
  tc_var *vf = tl_iv(L, "vf"), *fi = tl_iv(L, "fi"), *vy = tl_iv(L, "vy"), *yi = tl_iv(L, "yi"), *vx = tl_iv(L, "vx"), *xi = tl_iv(L, "xi");
  const tc_expr *fl = ADD(MUL(ADD(MUL(V(vf), I(f[2])), V(tz)), I(f[3])), V(fi));
  const tc_expr *yl = ADD(MUL(ADD(MUL(V(vy), I(y[2])), V(ty)), I(y[3])), V(yi));
  const tc_expr *xl = ADD(MUL(ADD(MUL(V(vx), I(x[2])), V(tx)), I(x[3])), V(xi));
  const tc_expr *ai = ADD(MUL(ADD(MUL(ADD(MUL(ADD(MUL(ADD(MUL(V(vf), I(f[3])), V(fi)), I(y[1])), V(vy)), I(y[3])), V(yi)), I(x[1])), V(vx)), I(x[3])), V(xi));
  const tc_expr *sidx = ADD(MUL(ADD(MUL(V(cc), I(IHt)), ADD(MUL(yl, I(wl->sh)), V(ky))), I(IWt)), ADD(MUL(xl, I(wl->sw)), V(kx)));
  const tc_expr *kidx = ADD(MUL(ADD(MUL(ADD(MUL(fl, I(rc[1])), V(cc)), I(ry[1])), V(ky)), I(rx[1])), V(kx));
  const tc_stmt *fm = ST(acc, ai, tc_e_fma(L->ir, LD(sin, sidx), LD(sw, kidx), LD(acc, ai)));
  const tc_stmt *tile = tl_for(L, vf, f[1], TC_FOR_SERIAL, tl_for(L, vy, y[1], TC_FOR_SERIAL, tl_for(L, vx, x[1], TC_FOR_SERIAL,
                        tl_for(L, fi, f[3], TC_FOR_SERIAL, tl_for(L, yi, y[3], TC_FOR_SERIAL, tl_for(L, xi, x[3], TC_FOR_SERIAL, fm))))));
  const tc_stmt *comp = tl_for(L, cc, rc[1], TC_FOR_SERIAL, tl_for(L, ky, ry[1], TC_FOR_SERIAL, tl_for(L, kx, rx[1], TC_FOR_SERIAL, tile)));
  const tc_stmt *step[5] = {tc_s_sync(L->ir), tl_coop(L, S1, T, lt, e1, ld1), tl_coop(L, S2, T, lt, e2, ld2), tc_s_sync(L->ir), comp};
  const tc_stmt *red = tl_for(L, rco, rc[0], TC_FOR_SERIAL, tl_for(L, ryo, ry[0], TC_FOR_SERIAL,
                       tl_for(L, rxo, rx[0], TC_FOR_SERIAL, tc_s_seq(L->ir, 5, step))));
  tc_var *q = tl_iv(L, "q");
  const tc_stmt *init = tl_for(L, q, nacc, TC_FOR_SERIAL, ST(acc, V(q), FLT(0.0)));
  /* write-back with the epilogue */
  tc_var *vf2 = tl_iv(L, "vf"), *fi2 = tl_iv(L, "fi"), *vy2 = tl_iv(L, "vy"), *yi2 = tl_iv(L, "yi"), *vx2 = tl_iv(L, "vx"), *xi2 = tl_iv(L, "xi");
  const tc_expr *of = ADD(V(f0), ADD(MUL(ADD(MUL(V(vf2), I(f[2])), V(tz)), I(f[3])), V(fi2)));
  const tc_expr *oy = ADD(V(y0), ADD(MUL(ADD(MUL(V(vy2), I(y[2])), V(ty)), I(y[3])), V(yi2)));
  const tc_expr *ox = ADD(V(x0), ADD(MUL(ADD(MUL(V(vx2), I(x[2])), V(tx)), I(x[3])), V(xi2)));
  const tc_expr *ai2 = ADD(MUL(ADD(MUL(ADD(MUL(ADD(MUL(ADD(MUL(V(vf2), I(f[3])), V(fi2)), I(y[1])), V(vy2)), I(y[3])), V(yi2)), I(x[1])), V(vx2)), I(x[3])), V(xi2));
  const tc_expr *oidx = ADD(MUL(ADD(MUL(ADD(MUL(V(nn), I(F)), of), I(OH)), oy), I(OW)), ox);
  const tc_stmt *wr = ST(L->arg[TC_ARG_OUT], oidx, tl_epi(L, LD(acc, ai2), of, oidx));
  wr = tl_for(L, vf2, f[1], TC_FOR_SERIAL, tl_for(L, vy2, y[1], TC_FOR_SERIAL, tl_for(L, vx2, x[1], TC_FOR_SERIAL,
       tl_for(L, fi2, f[3], TC_FOR_SERIAL, tl_for(L, yi2, y[3], TC_FOR_SERIAL, tl_for(L, xi2, x[3], TC_FOR_SERIAL, wr))))));
  const tc_stmt *items[3] = {init, red, wr};
  const tc_stmt *body = tc_s_allocate(L->ir, acc, nacc, TC_SCOPE_LOCAL, tc_s_seq(L->ir, 3, items));
  body = tc_s_let(L->ir, lt, ADD(MUL(ADD(MUL(V(tz), I(y[2])), V(ty)), I(x[2])), V(tx)), body);
  body = tc_s_let(L->ir, nn, DIV(V(bz), I(f[0])), body);
  body = tc_s_let(L->ir, f0, MUL(MOD(V(bz), I(f[0])), I(Fb)), body);
  body = tc_s_let(L->ir, y0, MUL(V(by), I(Yb)), body);
  body = tc_s_let(L->ir, x0, MUL(V(bx), I(Xb)), body);
  body = tc_s_allocate(L->ir, sin, S1, TC_SCOPE_SHARED, tc_s_allocate(L->ir, sw, S2, TC_SCOPE_SHARED, body));
  body = tl_for(L, tx, x[2], TC_FOR_GPU_THREAD_X, body);
  body = tl_for(L, ty, y[2], TC_FOR_GPU_THREAD_Y, body);
  body = tl_for(L, tz, f[2], TC_FOR_GPU_THREAD_Z, body);
  body = tl_for(L, bx, x[0], TC_FOR_GPU_BLOCK_X, body);
  body = tl_for(L, by, y[0], TC_FOR_GPU_BLOCK_Y, body);
  (void)OW;
  return tl_for(L, bz, (int64_t)wl->n * f[0], TC_FOR_GPU_BLOCK_Z, body);
}

th_status tc_cuda_lower(const tc_workload *wl, const tc_config *cfg, const tc_cuda_target *t,
                        th_arena *arena, tc_cuda_lowered *out) {
  if (!wl || !cfg || !t || !arena || !out) return TH_ERR_INVALID;
  tc_space s;
  th_status rc = tc_cuda_space(wl, t, &s);
  if (rc == TH_OK) rc = tc_cuda_valid(wl, t, &s, cfg, NULL, 0);
  if (rc != TH_OK) return rc;
  tc_ir ir;
  tc_ir_init(&ir, arena);
  tl Ls = {&ir, wl, {0}}, *L = &Ls;
  int nargs = tc_op_nargs(wl->kernel);
  static const char *names[5] = {"in", "w", "bias", "res", "out"};
  for (int a = 0; a < nargs; a++) L->arg[a] = tc_var_buffer(&ir, nargs == 5 ? names[a] : "arg", tc_type_f32(1), a);
  if (nargs == 5) {
    if (!(wl->epilogue & TC_EPI_BIAS)) L->arg[TC_ARG_BIAS] = NULL;
    if (!(wl->epilogue & TC_EPI_RESIDUAL)) L->arg[TC_ARG_RESIDUAL] = NULL;
  }
  memset(out, 0, sizeof *out);
  out->unroll_max_step = tc_config_int(&s, cfg, "auto_unroll_max_step", 0);
  out->unroll_explicit = tc_config_int(&s, cfg, "unroll_explicit", 0);
  const tc_stmt *body = NULL;
  switch (wl->kernel) {
    case TC_KERNEL_CONV2D:
      body = tl_conv(L, tc__val(&s, cfg, "tile_f"), tc__val(&s, cfg, "tile_y"), tc__val(&s, cfg, "tile_x"),
                     tc__val(&s, cfg, "tile_rc"), tc__val(&s, cfg, "tile_ry"), tc__val(&s, cfg, "tile_rx"));
      break;
    case TC_KERNEL_DENSE:
      if (wl->n < 32) {
        body = tl_dense_small(L, tc_config_int(&s, cfg, "tile_k", 32), tc_config_int(&s, cfg, "rows_per_block", 1),
                              tc_config_int(&s, cfg, "vec", 1));
      } else {
        const int *ty = tc__val(&s, cfg, "tile_y"), *tx = tc__val(&s, cfg, "tile_x");
        body = tl_dense_large(L, ty[0], ty[1], tx[0], tx[1], tc_config_int(&s, cfg, "tile_k", 16));
      }
      break;
    case TC_KERNEL_SOFTMAX: body = tl_softmax(L, tc_config_int(&s, cfg, "threads", 128)); break;
    default: {
      int th = tc_config_int(&s, cfg, "threads", 256), in = tc_config_int(&s, cfg, "inner", 1);
      int64_t total = tc__map_total(wl);
      tl_elem_fn fn = NULL;
      switch (wl->kernel) {
        case TC_KERNEL_ELTWISE:
          fn = tl_elt;
          if (tc_config_int(&s, cfg, "vec", 1) == 4) {
            fn = tl_elt4;
            total /= 4;
          }
          break;
        case TC_KERNEL_CONCAT:
        case TC_KERNEL_LAYOUT: fn = tl_copy; break;
        case TC_KERNEL_GLOBAL_AVGPOOL: fn = tl_gap; break;
        default: fn = tl_window; break;
      }
      body = tl_map(L, total, th, in, fn);
      break;
    }
  }
  if (ir.err != TH_OK || !body) return ir.err != TH_OK ? ir.err : TH_ERR_INTERNAL;
  out->body = body;
  return TH_OK;
}

th_status tc_cuda_kernel_source(const tc_workload *wl, const tc_config *cfg, const tc_cuda_target *t,
                                const char *fn, th_buf *src, tc_cuda_launch *launch, char *err,
                                size_t errlen) {
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
  if (rc == TH_OK) rc = tc_cuda_codegen(&k, fn, tc_op_nargs(wl->kernel), src, launch, err, errlen);
  th_arena_free(arena);
  return rc;
}
