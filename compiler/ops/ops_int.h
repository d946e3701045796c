/* Internal contract between ops.c (dispatch, shared checks) and the per-family template files. Each
 * family fills a tc__op vtable; helpers here build the index and epilogue expressions every template
 * shares, so the NCHW[cb]c rules live in one place. */
#ifndef TC_OPS_INT_H
#define TC_OPS_INT_H

#include "ops.h"

typedef struct tc__op {
  tc_kernel kernel;
  th_status (*space)(const tc_workload *wl, const tc_target *t, tc_space *s);
  th_status (*fallback)(const tc_workload *wl, const tc_target *t, const tc_space *s, tc_config *c);
  /* Template-specific validity beyond the knob ranges (may be NULL). */
  th_status (*valid)(const tc_workload *wl, const tc_target *t, const tc_space *s, const tc_config *c);
  th_status (*lower)(const tc_workload *wl, const tc_target *t, const tc_space *s, const tc_config *c,
                     tc_ir *ir, const tc_stmt **out);
  /* Pack params (NULL for weight-less families). */
  th_status (*pack)(const tc_workload *wl, const tc_target *t, const tc_space *s, const tc_config *c,
                    int p[TC_PACK_NPARAMS]);
} tc__op;

extern const tc__op tc__op_conv2d, tc__op_depthwise, tc__op_dense, tc__op_maxpool, tc__op_avgpool,
    tc__op_global_avgpool, tc__op_softmax, tc__op_eltwise, tc__op_concat, tc__op_layout;
/* the tensor families (issue 20) */
extern const tc__op tc__op_batch_matmul, tc__op_layer_norm, tc__op_softmax_rows, tc__op_unary,
    tc__op_embedding, tc__op_copy, tc__op_binary;
/* ONNX indexing (issue 38) */
extern const tc__op tc__op_gather, tc__op_scatter;
extern const tc__op tc__op_reduce;

/* The value tuple of knob `name` in c (NULL if absent). */
const int *tc__knob(const tc_space *s, const tc_config *c, const char *name);

/* Largest power of two <= cap dividing every nonzero argument (a, b, c; 0 means "any"). */
int tc__pow2_div(int cap, int a, int b, int c);

/* Concat's and layout's copy (concat.c): the lanes of one vector move, whole vectors of real channels on
 * both sides (their "vec" knob), and the lowering, which also writes a padded output block's zeros. */
int tc__copy_lanes(const tc_workload *wl, const tc_target *t);
th_status tc__lower_copy(const tc_workload *wl, const tc_target *t, const tc_space *s, const tc_config *c,
                         tc_ir *ir, const tc_stmt **out);

/* Element index of (n, cblk, y, x, lane) in an NCHW[cb]c tensor with nblk = channels / cb. */
const tc_expr *tc__idx(tc_ir *ir, const tc_expr *n, const tc_expr *cblk, const tc_expr *y,
                       const tc_expr *x, const tc_expr *lane, int nblk, int h, int w, int cb);
/* Index of channel `c` (an expression; cb constant) at (n, y, x). */
const tc_expr *tc__idx_c(tc_ir *ir, const tc_expr *n, const tc_expr *c, const tc_expr *y,
                         const tc_expr *x, int channels, int h, int w, int cb);

/* Applies the workload's epilogue to v (float x lanes): + bias[oc0 .. +lanes] (TC_EPI_BIAS),
 * + residual[ridx .. +lanes] (TC_EPI_RESIDUAL), then the activation (relu, clip, gelu, tanh, sigmoid,
 * hard sigmoid, hard swish, silu). bias/res may be NULL when unused. */
const tc_expr *tc__epilogue(tc_ir *ir, const tc_workload *wl, const tc_expr *v, const tc_var *bias,
                            const tc_expr *oc0, const tc_var *res, const tc_expr *ridx);

/* Emits the output-width tiling shared by the conv-like templates: tiles of width rw over [0, ow), the
 * ones whose window (stride sw, left pad pl, kernel kw) stays inside [0, w) as "fast" and the others as
 * "safe" (bounds-checked loads), plus one remainder tile. fn builds one tile at ow0 of `width`. */
typedef const tc_stmt *(*tc__tile_fn)(tc_ir *ir, void *ctx, const tc_expr *ow0, int width, int safe);
const tc_stmt *tc__ow_tiles(tc_ir *ir, int ow, int rw, int sw, int pl, int kw, int w, tc__tile_fn fn,
                            void *ctx);

/* Builds the fused parallel loop over `n` tasks; decompose the task var with div/mod in the body. */
const tc_stmt *tc__parallel(tc_ir *ir, const tc_var *task, int64_t n, const tc_stmt *body);

/* ---- shared by the tensor templates (tensor.c) ---- */

/* The tensor templates' space and fallback (tc__op slots): knob 0 is the units (rows, or pieces of
 * runs) per parallel task, "rows" or "pieces", whose last value puts all units in one task, which runs
 * on the calling thread; knob 1 is 1, 2 or 4 vectors per loop step ("accs" for the reductions' vector
 * accumulators, "unroll" for the others). The fallback runs small work on one thread and gives a task
 * enough work to be worth handing out. What each family's units and runs are is in tensor.c. */
th_status tc__tensor_space(const tc_workload *wl, const tc_target *t, tc_space *s);
th_status tc__tensor_fallback(const tc_workload *wl, const tc_target *t, const tc_space *s,
                              tc_config *c);
/* A parallel loop over tasks of r rows (the last may be shorter), binding `row` around body for each. */
const tc_stmt *tc__row_tasks(tc_ir *ir, int64_t rows, int64_t r, const tc_var *row, const tc_stmt *body);

/* Builds one piece: n (a constant) elements of run `row` from element `off` of the run. */
typedef const tc_stmt *(*tc__piece_fn)(tc_ir *ir, void *ctx, const tc_expr *row, const tc_expr *off,
                                       int64_t n);
/* rows runs of len elements, cut into pieces of at most 4096 elements (the last of a run shorter), r
 * pieces per parallel task ("pieces", knob 0): fn builds each. */
const tc_stmt *tc__pieces(tc_ir *ir, int64_t rows, int64_t len, int64_t r, tc__piece_fn fn,
                          void *ctx);

/* Builds the body of a vector loop at element offset i (lanes: vl, or 1 in the scalar tail). slot is the
 * step's copy in [0, unroll) for vectors (the leftover vectors count on from 0), -1 in the tail. */
typedef const tc_stmt *(*tc__vec_fn)(tc_ir *ir, void *ctx, const tc_expr *i, int lanes, int slot);
/* fn over [0, len): a loop of steps of `unroll` vectors of vl lanes (the copies unrolled), the whole
 * vectors left over at constant offsets, then a scalar tail loop. */
/* TC_UNARY_* op of x (float, any lanes) with the workload's alpha and beta, built from ir.h's
 * primitives so that the CPU and GPU templates compute the same function; NULL (ir->err set) for
 * the ops that are not one expression of x (CAST_I64). unary.c. */
const tc_expr *tc__unary_expr(tc_ir *ir, int op, const tc_expr *x, double alpha, double beta);
/* TC_BINARY_* op of x and y of equal lanes, shared by the CPU and GPU templates: floats, or an int
 * y (TC_WL_I64) with x int or TAKE/LEAVE's float mask. binary.c. */
const tc_expr *tc__binary_expr(tc_ir *ir, int op, const tc_expr *x, const tc_expr *y);

/* The pieces of TC_REDUCE_* (reduce.c) that the CPU and GPU templates share: the fold (op and
 * starting value; log-sum-exp's second pass), the map of an element x before it is folded (mx, the
 * row's max, for log-sum-exp only) and the finishing of the folded s (c: the row's length). */
void tc__reduce_fold(int op, tc_expr_kind *k, double *init);
const tc_expr *tc__reduce_map(tc_ir *ir, int op, const tc_expr *x, const tc_expr *mx);
const tc_expr *tc__reduce_finish(tc_ir *ir, int op, const tc_expr *s, const tc_expr *mx, int64_t c);

/* TC_SCATTER_* op folding update u into acc (scatter.c), and one output element of the scatter
 * family for the CPU and GPU templates: bufs {data, indices, updates, out}, the element's offset
 * at (data and out alike), its coordinate on the axis pos and its first candidate's index offset
 * base (ops.h). */
const tc_expr *tc__scatter_fold(tc_ir *ir, int op, const tc_expr *acc, const tc_expr *u);
const tc_stmt *tc__scatter_elem(tc_ir *ir, const tc_workload *wl, const tc_var *const bufs[4],
                                const tc_expr *at, const tc_expr *pos, const tc_expr *base);

const tc_stmt *tc__vec_loop(tc_ir *ir, int64_t len, int vl, int unroll, tc__vec_fn fn, void *ctx);

/* A row reduction kept in registers: n vector accumulators of vl lanes and a scalar one for the tail,
 * combined with op (TC_EXPR_ADD or TC_EXPR_MAX) from init. tc__red_alloc wraps the code that uses them;
 * tc__red_init (re)starts them; tc__red_step folds x (vl lanes for a slot >= 0, scalar for -1) into an
 * accumulator (get/put for other updates, e.g. an FMA); tc__red_let combines them, as a tree, into the
 * scalar `out` bound around body. */
typedef struct tc__red {
  tc_var *vec, *tail, *spill;
  int n, vl;
  tc_expr_kind op;
  double init;
} tc__red;
void tc__red_new(tc_ir *ir, tc__red *r, int n, int vl, tc_expr_kind op, double init);
const tc_stmt *tc__red_alloc(tc_ir *ir, const tc__red *r, const tc_stmt *body);
const tc_stmt *tc__red_init(tc_ir *ir, const tc__red *r);
const tc_expr *tc__red_get(tc_ir *ir, const tc__red *r, int slot);
const tc_stmt *tc__red_put(tc_ir *ir, const tc__red *r, int slot, const tc_expr *v);
const tc_stmt *tc__red_step(tc_ir *ir, const tc__red *r, int slot, const tc_expr *x);
const tc_stmt *tc__red_let(tc_ir *ir, const tc__red *r, const tc_var *out, const tc_stmt *body);

/* The iteration space of copy and binary with extent-1 dims dropped and neighbours merged where both
 * sides run on contiguously (the outer stride is the inner stride times the inner extent), at least one
 * dim: `rows` outer rows (every dim but the last) of `len` elements. as/bs are the a and b strides (for
 * copy, b is the output). Binary's output stays contiguous under this: row r starts at r * len. */
typedef struct tc__strided {
  int nd;
  int64_t shape[TC_WL_DIMS], as[TC_WL_DIMS], bs[TC_WL_DIMS];
  int64_t rows, len;
} tc__strided;
void tc__strided_init(const tc_workload *wl, tc__strided *s);
/* The workload's dims as they are, none dropped or merged (gather, scatter: their output is
 * contiguous over the whole shape, rows of shape[ndim - 1]). */
void tc__strided_full(const tc_workload *wl, tc__strided *s);
/* The element offsets (without aoff/boff) on the a and b sides of element `off` of outer row `row`. */
void tc__strided_offsets(tc_ir *ir, const tc__strided *s, const tc_expr *row, const tc_expr *off,
                         const tc_expr **a, const tc_expr **b);
/* lanes elements of buf from base + i * stride: a vector load (stride 1), a broadcast scalar (stride 0)
 * or a gather. */
const tc_expr *tc__strided_load(tc_ir *ir, const tc_var *buf, const tc_expr *base, int64_t stride,
                                const tc_expr *i, int lanes);

/* Simple integer helpers. */
const tc_expr *tc__c(tc_ir *ir, int64_t v);
const tc_expr *tc__v(tc_ir *ir, const tc_var *v);
const tc_expr *tc__and(tc_ir *ir, const tc_expr *a, const tc_expr *b);
const tc_expr *tc__in_range(tc_ir *ir, const tc_expr *x, int lo, int hi); /* lo <= x < hi */

#endif
