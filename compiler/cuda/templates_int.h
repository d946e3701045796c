/* Internal contract between templates.c (dispatch, the device checks every template shares) and the
 * GPU template families, one file per family in cuda/ops/ as the CPU ones are in ops/. Each family
 * fills a tc__cuda_op; the helpers here are the pieces several families build on: split knobs, the
 * launch shape of an element map, the fused epilogue, cooperative shared-memory fetches and tree
 * reductions. */
#ifndef TC_CUDA_TEMPLATES_INT_H
#define TC_CUDA_TEMPLATES_INT_H

#include "ops.h"
#include "tc_cuda.h"

/* The launch a config implies (what the lowering will bind), checked against the device's limits.
 */
typedef struct tc__cuda_shape {
  int64_t grid[3];
  int block[3];
  int64_t shared_bytes;
  int64_t local_floats; /* per-thread accumulators: the register estimate */
  /* 1: the template stages through dynamic shared memory where shared_bytes exceeds the 48 KiB of
   * static __shared__, up to the target's opt-in maximum (tc__cuda_lc.dyn_shared) */
  int dyn_shared_ok;
} tc__cuda_shape;

/* The state of one lowering: the IR, the workload and its argument buffers (NULL where unused). */
typedef struct tc__cuda_lc {
  tc_ir *ir;
  const tc_workload *wl;
  tc_var *arg[5];
  const void *ctx; /* a family's own data for its element function (e.g. its window rule) */
  /* Set by a template that runs as two kernels (split-k): the scratch buffer both take as their
   * last parameter (tc__cuda_scratch), its floats, and the body of the kernel launched after the
   * main one; NULL / 0 for a single kernel. */
  tc_var *scratch;
  int64_t scratch_floats;
  const tc_stmt *post;
  int dyn_shared; /* 1: the shared allocations go into dynamic shared memory (tc_cuda_valid said so) */
} tc__cuda_lc;

typedef struct tc__cuda_op {
  tc_kernel kernel;
  /* The knobs (at least one). The dispatcher has checked the workload and that it is plain NCHW. */
  th_status (*space)(const tc_workload *wl, const tc_cuda_target *t, tc_space *s);
  /* Sets the knobs of c (zeroed, nknobs set) to a good point; the dispatcher falls back to the
   * first valid point in flat order when this one does not fit the device. */
  th_status (*fallback)(const tc_workload *wl, const tc_cuda_target *t, const tc_space *s,
                        tc_config *c);
  /* Fills sh (grid and block preset to 1) with the launch c implies; TH_ERR_INVALID with a reason
   * in why for a config the template cannot build. The dispatcher checks the shape against the
   * device. */
  th_status (*shape)(const tc_workload *wl, const tc_space *s, const tc_config *c,
                     tc__cuda_shape *sh, char *why, size_t whylen);
  /* The kernel body for a valid c; NULL only when L->ir has an error. */
  const tc_stmt *(*lower)(tc__cuda_lc *L, const tc_space *s, const tc_config *c);
} tc__cuda_op;

extern const tc__cuda_op tc__cuda_op_conv2d, tc__cuda_op_depthwise, tc__cuda_op_dense,
    tc__cuda_op_maxpool, tc__cuda_op_avgpool, tc__cuda_op_global_avgpool, tc__cuda_op_softmax,
    tc__cuda_op_eltwise, tc__cuda_op_concat, tc__cuda_op_layout, tc__cuda_op_batch_matmul,
    tc__cuda_op_layer_norm, tc__cuda_op_softmax_rows, tc__cuda_op_unary, tc__cuda_op_embedding,
    tc__cuda_op_copy, tc__cuda_op_binary, tc__cuda_op_gather, tc__cuda_op_reduce,
    tc__cuda_op_scatter;

/* ---- spaces and configs (templates.c) ---- */

/* TVM's unroll knobs: auto_unroll_max_step {0, 512, 1500}, then, with both, unroll_explicit {0, 1}.
 */
th_status tc__cuda_add_unroll(tc_space *s, int with_explicit);

/* Adds a split knob: every ordered factorization of n into `parts` factors whose factor i (i >= 1)
 * is at most cap[i]; factor 0 (the block) takes the rest. */
th_status tc__cuda_add_split(tc_space *s, const char *name, int n, int parts, const int *cap);
/* Adds a one-int knob with values v[0..n). */
th_status tc__cuda_add_list(tc_space *s, const char *name, tc_knob_kind kind, int n, const int *v);
/* The value tuple of knob `name` in c (NULL if absent). */
const int *tc__cuda_val(const tc_space *s, const tc_config *c, const char *name);
/* Sets knob `name` of c to the value equal to want[0..width) (the first value when none is). */
void tc__cuda_pick(const tc_space *s, tc_config *c, const char *name, const int *want, int width);
/* Writes msg to why and returns TH_ERR_INVALID. */
th_status tc__cuda_why(char *why, size_t n, const char *msg);
th_status tc__cuda_whyf(char *why, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* TH_OK if a launch of shape sh fits t's limits (threads, grid, static shared memory, the register
 * estimate); TH_ERR_INVALID with the amount, the limit and where it comes from in why otherwise. */
th_status tc__cuda_fits(const tc__cuda_shape *sh, const tc_cuda_target *t, char *why,
                        size_t whylen);

/* ---- element maps: one thread per output element, `inner` elements per thread ---- */

/* Knobs threads and inner, then vec {1, 4} and auto_unroll_max_step when asked. */
th_status tc__cuda_map_space(tc_space *s, int with_vec, int with_unroll);
/* The knobs of the window families (depthwise, pooling): threads, inner, auto_unroll_max_step. */
th_status tc__cuda_window_space(const tc_workload *wl, const tc_cuda_target *t, tc_space *s);
/* The launch of a map over the input's elements (eltwise, concat, layout) or the output's (the
 * window families), a quarter of them with vec 4: tc__cuda_op.shape for those families. */
th_status tc__cuda_in_map_shape(const tc_workload *wl, const tc_space *s, const tc_config *c,
                                tc__cuda_shape *sh, char *why, size_t whylen);
th_status tc__cuda_out_map_shape(const tc_workload *wl, const tc_space *s, const tc_config *c,
                                 tc__cuda_shape *sh, char *why, size_t whylen);
/* The map's knobs at 256 threads, inner 1, vec 4 when vec4, auto_unroll_max_step 512. */
void tc__cuda_map_pick(const tc_space *s, tc_config *c, int vec4);
/* Their fallback: 256 threads, inner 1, vec 4 when the count allows, auto_unroll_max_step 512. */
th_status tc__cuda_in_map_fallback(const tc_workload *wl, const tc_cuda_target *t,
                                   const tc_space *s, tc_config *c);
th_status tc__cuda_out_map_fallback(const tc_workload *wl, const tc_cuda_target *t,
                                    const tc_space *s, tc_config *c);
/* The plain map of the families whose elements read computed offsets (unary, gather, scatter):
 * knobs threads and inner; fallback 256 threads, inner 1. */
th_status tc__cuda_plain_map_space(const tc_workload *wl, const tc_cuda_target *t, tc_space *s);
th_status tc__cuda_plain_map_fallback(const tc_workload *wl, const tc_cuda_target *t,
                                      const tc_space *s, tc_config *c);
/* The a- and b-side offsets (astride, bstride) of contiguous element idx of wl->shape, from its
 * digits (gather, scatter). */
void tc__cuda_digit_offsets(tc__cuda_lc *L, const tc_expr *idx, const tc_expr **a,
                            const tc_expr **b);
/* Elements of the map: the input's for copies and eltwise, the output's for the others. */
int64_t tc__cuda_in_total(const tc_workload *wl);
int64_t tc__cuda_out_total(const tc_workload *wl);

typedef const tc_stmt *(*tc__cuda_elem_fn)(tc__cuda_lc *L, const tc_expr *idx);
/* grid.x blocks of `threads` threads, each doing `inner` elements idx = (bx*inner + i)*threads +
 * tx, the tail guarded; fn builds the body of one element. */
const tc_stmt *tc__cuda_map(tc__cuda_lc *L, int64_t total, int threads, int inner,
                            tc__cuda_elem_fn fn);
/* The map with the config's threads and inner. */
const tc_stmt *tc__cuda_map_cfg(tc__cuda_lc *L, const tc_space *s, const tc_config *c,
                                int64_t total, tc__cuda_elem_fn fn);

/* A window reduction per output element (depthwise conv, max and average pooling): acc = init, then
 * acc = update(acc, x) over the taps inside the input, then out[idx] = epilogue(finish(acc)). */
typedef struct tc__cuda_pos {
  tc_var *n, *c, *y, *x; /* the output element */
  tc_var *ky, *kx;       /* the tap */
} tc__cuda_pos;
typedef struct tc__cuda_window {
  float init;
  int out_arg;
  const tc_expr *(*update)(tc__cuda_lc *L, const tc__cuda_pos *p, const tc_expr *acc,
                           const tc_expr *x);
  const tc_expr *(*finish)(tc__cuda_lc *L, const tc__cuda_pos *p,
                           const tc_expr *acc); /* may be NULL */
} tc__cuda_window;
/* The map over the output's elements with the config's threads and inner, each reducing its window.
 */
const tc_stmt *tc__cuda_window_map(tc__cuda_lc *L, const tc_space *s, const tc_config *c,
                                   const tc__cuda_window *win);

/* ---- row kernels (layer_norm, softmax_rows): `rows` rows of `len` elements, rows_per_block (ty)
 * rows per block and `threads` (tx, a power of two) threads per row; a thread's elements are pos =
 * q*tx + tx for q < per; they stay in registers between passes when per <= 16 (stash), else each
 * pass reads them again. Every thread reaches every barrier, rows past the end included (they only
 * skip their elements). ---- */

typedef struct tc__cuda_row tc__cuda_row;
/* The element at pos of row R->row, read from memory (first pass, or every pass without stash). */
typedef const tc_expr *(*tc__cuda_row_value)(tc__cuda_lc *L, const tc__cuda_row *R,
                                             const tc_expr *pos);
/* One element's work in a pass: x is the element, q its index among the thread's values. */
typedef const tc_stmt *(*tc__cuda_row_fn)(tc__cuda_lc *L, const tc__cuda_row *R, const tc_expr *pos,
                                          const tc_expr *q, const tc_expr *x);
struct tc__cuda_row {
  int64_t rows, len, per;
  int tx, ty, stash;
  tc_var *bx, *tx_v, *ty_v, *row; /* row = bx * ty + ty_v */
  tc_var *red;                    /* shared [ty][tx] for the reductions */
  tc_var *vals;                   /* local [per]: the stash */
  tc__cuda_row_value value;
};
/* The row families' tc__cuda_op entries (layer_norm, reduce: n rows of c; softmax_rows: n*c*h
 * rows of w):
 * knobs threads {32 .. 1024} and rows_per_block {1, 2, 4, 8}; the launch, ceil(rows / ty) blocks of
 * tx x ty threads (far more threads than elements: invalid); the fallback, about 8 elements per
 * thread and blocks of at least 128 threads. */
th_status tc__cuda_row_space(const tc_workload *wl, const tc_cuda_target *t, tc_space *s);
th_status tc__cuda_row_shape(const tc_workload *wl, const tc_space *s, const tc_config *c,
                             tc__cuda_shape *sh, char *why, size_t whylen);
th_status tc__cuda_row_fallback(const tc_workload *wl, const tc_cuda_target *t, const tc_space *s,
                                tc_config *c);
void tc__cuda_row_init(tc__cuda_lc *L, tc__cuda_row *R, const tc_space *s, const tc_config *c,
                       tc__cuda_row_value value);
/* fn over the thread's elements of its row; the first pass reads them (and stashes them). */
const tc_stmt *tc__cuda_row_pass(tc__cuda_lc *L, const tc__cuda_row *R, int first,
                                 tc__cuda_row_fn fn);
/* acc[0] of every thread of the row combined (max or sum, or is_max as tc__cuda_tree's) into
 * `result`, bound around rest. */
const tc_stmt *tc__cuda_row_allreduce(tc__cuda_lc *L, const tc__cuda_row *R, tc_var *acc,
                                      int is_max, tc_var *result, const tc_stmt *rest);
/* The kernel around body: the launch loops, red, the stash and acc (a local float). */
const tc_stmt *tc__cuda_row_kernel(tc__cuda_lc *L, const tc__cuda_row *R, tc_var *acc,
                                   const tc_stmt *body);

/* ---- strided index spaces (copy, binary): the workload's ndim-D space with dimensions of extent 1
 * dropped and neighbours that every operand steps over contiguously merged (a transpose of [b, s,
 * h, d] keeps d as one run). Operands: copy {in, out}, binary {a, b, out} (out contiguous). ---- */

typedef struct tc__cuda_dims {
  int nd, nops;
  int64_t total; /* elements of the space */
  int64_t shape[TC_WL_DIMS];
  int64_t stride[3][TC_WL_DIMS];
  int64_t off[3];
} tc__cuda_dims;
void tc__cuda_dims_init(tc__cuda_dims *d, const tc_workload *wl);
/* 1 when float4 runs fit: an innermost extent multiple of 4 that every operand reads contiguously
 * from 16-byte aligned positions, or an input broadcasts along it (stride 0). */
int tc__cuda_dims_vec4(const tc__cuda_dims *d);
/* The element offsets of flat index idx in every operand bound to offs[0..nops) around body. */
const tc_stmt *tc__cuda_dims_offsets(tc__cuda_lc *L, const tc__cuda_dims *d, const tc_expr *idx,
                                     tc_var *const *offs, const tc_stmt *body);

/* The strided element map (copy, binary): threads, inner, vec (4 only where tc__cuda_dims_vec4). */
th_status tc__cuda_strided_space(const tc_workload *wl, const tc_cuda_target *t, tc_space *s);
th_status tc__cuda_strided_shape(const tc_workload *wl, const tc_space *s, const tc_config *c,
                                 tc__cuda_shape *sh, char *why, size_t whylen);
th_status tc__cuda_strided_fallback(const tc_workload *wl, const tc_cuda_target *t,
                                    const tc_space *s, tc_config *c);
/* Operand o's vec lanes at off: a float4 load, or one scalar broadcast where it has stride 0 along
 * the innermost run. */
const tc_expr *tc__cuda_strided_load(tc__cuda_lc *L, const tc__cuda_dims *d, int o, tc_var *buf,
                                     const tc_expr *off, int vec);
/* One element (vec lanes) of the family, given every operand's offset. */
typedef const tc_stmt *(*tc__cuda_strided_fn)(tc__cuda_lc *L, const tc__cuda_dims *d,
                                              tc_var *const *offs, int vec);
const tc_stmt *tc__cuda_strided_lower(tc__cuda_lc *L, const tc_space *s, const tc_config *c,
                                      tc__cuda_strided_fn fn);

/* The channel copy of concat (ops/concat.c), which layout transforms reuse with offset 0. */
th_status tc__cuda_copy_space(const tc_workload *wl, const tc_cuda_target *t, tc_space *s);
const tc_stmt *tc__cuda_copy_lower(tc__cuda_lc *L, const tc_space *s, const tc_config *c);

/* The table entry of a window family: the window knobs, fallback and launch, and its lowering. */
#define TC__CUDA_WINDOW_OP(kernel, lower) \
  { (kernel), tc__cuda_window_space, tc__cuda_out_map_fallback, tc__cuda_out_map_shape, (lower) }

/* ---- the GEMM families: dense, batch_matmul and, on tensor cores, conv2d as an implicit GEMM ---- */

/* The product as a GEMM sees it, out[b, m, n] = alpha * sum_k A(b, m, k) B(b, k, n): dense is one
 * batch of [rows, K] x [N, K]^T with alpha 1; batch_matmul its own; conv2d (NCHW, torch's OIHW
 * weights) per image the weights [oc, c*kh*kw] times the im2col matrix [c*kh*kw, oh*ow], which is
 * the output's NCHW layout as [n][oc][oh*ow]. */
typedef struct tc__cuda_gemm {
  int64_t batch, M, N, K;
  int trans_a, trans_b;
  double alpha;
} tc__cuda_gemm;
tc__cuda_gemm tc__cuda_gemm_of(const tc_workload *wl);

/* The shared-memory tiled GEMM (ops/gemm.c) of dense (batch >= 32) and batch_matmul. */

/* Knobs tile_y (threads, rows per thread), tile_x (threads, columns per thread), tile_k and the
 * unroll pair. */
th_status tc__cuda_gemm_space(tc_space *s);
th_status tc__cuda_gemm_shape(const tc_workload *wl, const tc_space *s, const tc_config *c,
                              tc__cuda_shape *sh, char *why, size_t whylen);
/* The valid tiles scored for reuse, 256 threads, little padding and enough blocks for two waves. */
th_status tc__cuda_gemm_fallback(const tc_workload *wl, const tc_cuda_target *t, const tc_space *s,
                                 tc_config *c);
const tc_stmt *tc__cuda_gemm_lower(tc__cuda_lc *L, const tc_space *s, const tc_config *c);

/* ---- the TF32 tensor-core GEMM (ops/gemm_tc.c) of dense, batch_matmul and conv2d at precision
 * tf32 ---- */

/* Knobs block_tile (BM, BN), warp_tile (WM, WN), tile_k, stages and split_k; TH_ERR_UNSUPPORTED
 * below sm_80. */
th_status tc__cuda_tcgemm_space(const tc_workload *wl, const tc_cuda_target *t, tc_space *s);
th_status tc__cuda_tcgemm_shape(const tc_workload *wl, const tc_space *s, const tc_config *c,
                                tc__cuda_shape *sh, char *why, size_t whylen);
/* The valid config scored for warp-tile reuse, 4-8 warps, little padding, a pipeline and a wave
 * of blocks. */
th_status tc__cuda_tcgemm_fallback(const tc_workload *wl, const tc_cuda_target *t,
                                   const tc_space *s, tc_config *c);
const tc_stmt *tc__cuda_tcgemm_lower(tc__cuda_lc *L, const tc_space *s, const tc_config *c);

/* ---- lowering helpers ---- */

/* The scratch buffer of a two-kernel template (created once per lowering, the parameter after the
 * workload's arguments), recording that the lowering needs `floats` of it. */
tc_var *tc__cuda_scratch(tc__cuda_lc *L, int64_t floats);
tc_var *tc__cuda_iv(tc__cuda_lc *L, const char *name);
tc_var *tc__cuda_local(tc__cuda_lc *L, const char *name);
const tc_stmt *tc__cuda_for(tc__cuda_lc *L, tc_var *v, int64_t ext, tc_for_kind k,
                            const tc_stmt *body);
/* The fused epilogue of value v at output element idx of channel ch: + bias, + residual (families
 * with weights), then relu/clip. */
const tc_expr *tc__cuda_epi(tc__cuda_lc *L, const tc_expr *v, const tc_expr *ch,
                            const tc_expr *idx);
/* Cooperative load of `count` elements by T threads (linear id lt): for each e < count, body(e). */
const tc_stmt *tc__cuda_coop(tc__cuda_lc *L, int64_t count, int64_t T, tc_var *lt, tc_var *e,
                             const tc_stmt *body);
/* red[base + tx] combined pairwise down to red[base] by `width` (a power of two) threads, max
 * (is_max 1) or sum (0), or with the tc_expr_kind is_max when it is TC_EXPR_MIN or TC_EXPR_MUL;
 * every thread of the block reaches every barrier. */
const tc_stmt *tc__cuda_tree(tc__cuda_lc *L, tc_var *red, const tc_expr *base, tc_var *tx,
                             int width, int is_max);

/* Lowering shorthand over L->ir, for the template files only. */
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

#endif
