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
    tc__op_global_avgpool, tc__op_softmax, tc__op_eltwise, tc__op_concat, tc__op_layout,
    tc__op_batch_matmul;

/* The value tuple of knob `name` in c (NULL if absent). */
const int *tc__knob(const tc_space *s, const tc_config *c, const char *name);

/* Largest power of two <= cap dividing every nonzero argument (a, b, c; 0 means "any"). */
int tc__pow2_div(int cap, int a, int b, int c);

/* Element index of (n, cblk, y, x, lane) in an NCHW[cb]c tensor with nblk = channels / cb. */
const tc_expr *tc__idx(tc_ir *ir, const tc_expr *n, const tc_expr *cblk, const tc_expr *y,
                       const tc_expr *x, const tc_expr *lane, int nblk, int h, int w, int cb);
/* Index of channel `c` (an expression; cb constant) at (n, y, x). */
const tc_expr *tc__idx_c(tc_ir *ir, const tc_expr *n, const tc_expr *c, const tc_expr *y,
                         const tc_expr *x, int channels, int h, int w, int cb);

/* Applies the workload's epilogue to v (float x lanes): + bias[oc0 .. +lanes] (TC_EPI_BIAS),
 * + residual[ridx .. +lanes] (TC_EPI_RESIDUAL), relu, clip. bias/res may be NULL when unused. */
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

/* Simple integer helpers. */
const tc_expr *tc__c(tc_ir *ir, int64_t v);
const tc_expr *tc__v(tc_ir *ir, const tc_var *v);
const tc_expr *tc__and(tc_ir *ir, const tc_expr *a, const tc_expr *b);
const tc_expr *tc__in_range(tc_ir *ir, const tc_expr *x, int lo, int hi); /* lo <= x < hi */

#endif
