/* The register-tiled GEMM shared by dense (packed weights) and batch_matmul (activations): C[m, n]
 * (+)= A[m, k] . B[k, n], with C in row tiles of at most mr rows (balanced: `big` tiles, spread
 * evenly, have q + 1 rows, the others q, so 197 rows are 17 tiles of 11-12 rows, not 16 x 12 + 5)
 * and column panels of nv vectors. The micro-kernel keeps rows x nv vector accumulators for a whole
 * k block, loads nv B vectors per k step (B vectors are contiguous and the caller pads B to whole
 * vectors) and broadcasts one A scalar per row. The last panel may have fewer vectors (nvt) and a
 * last vector with only `tail` valid lanes: its partial sums go through a small stack buffer and
 * its valid lanes are loaded and stored one by one, so C is never touched past column n. A k block
 * other than the only one starts from C (partial sums stored raw) and only the last one applies the
 * epilogue. The templates supply where A, B and C live through the callbacks below. */
#ifndef TC_GEMM_INT_H
#define TC_GEMM_INT_H

#include "ops_int.h"

/* The A operand of one row tile: element (r, k) of the tile's k block is buf[a0 + r*rs + k*ks]. */
typedef struct tc__gemm_a {
  const tc_var *buf;
  const tc_expr *a0;
  int64_t rs, ks;
} tc__gemm_a;

typedef struct tc__gemm tc__gemm;

/* Where a template's operands live. */
typedef struct tc__gemm_ops {
  /* Statements run once per k block of a task before its row tiles (may be NULL): e.g. copying a
   * block of B. */
  const tc_stmt *(*k_prologue)(tc_ir *ir, const tc__gemm *g, const tc_expr *k0,
                               const tc_expr *kext);
  /* The A operand of a row tile of `rows` rows at row r0 in the k block [k0, k0 + kext); may return
   * statements to run first (copying A's rows), or NULL for none. */
  const tc_stmt *(*a_tile)(tc_ir *ir, const tc__gemm *g, int rows, const tc_expr *r0,
                           const tc_expr *k0, const tc_expr *kext, tc__gemm_a *a);
  /* Index in B of (k0, first column of panel p). */
  const tc_expr *(*b_at)(tc_ir *ir, const tc__gemm *g, const tc_expr *p, const tc_expr *k0);
  /* Index in C of (r0, column 0). */
  const tc_expr *(*c_at)(tc_ir *ir, const tc__gemm *g, const tc_expr *r0);
  /* The final value of v (a vector, or one lane) at column col and C index cidx. */
  const tc_expr *(*epi)(tc_ir *ir, const tc__gemm *g, const tc_expr *v, const tc_expr *col,
                        const tc_expr *cidx);
} tc__gemm_ops;

struct tc__gemm {
  int vl, mr, nv;         /* lanes; register tile of at most mr rows x nv vectors */
  int m, n;               /* rows and columns of C */
  int nt, q, big;         /* row tiles: big of them (spread evenly) have q + 1 rows, the others q */
  int np, npf, nvt, tail; /* panels of nv*vl columns; full panels; the last panel's vectors, and the
                             lanes of its last vector that are inside C */
  const tc_var *b, *c;
  int64_t
      b_ks; /* B: vector v of k row k at b_at(p, k0) + k*b_ks + v*vl; C rows are n floats apart */
  const tc__gemm_ops *ops;
  void *ctx; /* the template's, for the callbacks */
  /* Set by tc__gemm_parallel for the callbacks: the task's matrix (batch_matmul) and panels. */
  const tc_expr *mat, *p_lo, *p_hi;
};

/* Fills the shape fields of g for an m x n C and tiles of mr rows x nv vectors of vl lanes. */
void tc__gemm_shape(tc__gemm *g, int m, int n, int vl, int mr, int nv);
/* Clears g, fills its shape and the operands' buffers and callbacks (borrowed: they must outlive
 * the lowering). */
void tc__gemm_init(tc__gemm *g, int m, int n, int vl, int mr, int nv, const tc_var *b, int64_t b_ks,
                   const tc_var *c, const tc__gemm_ops *ops, void *ctx);

/* The whole reduction over k (blocks of kc, the last one shorter) for row tiles [t_lo, t_hi) and
 * panels [g->p_lo, g->p_hi): per k block, k_prologue, then per row tile a_tile and every panel. */
const tc_stmt *tc__gemm_loops(tc_ir *ir, const tc__gemm *g, int k, int kc, const tc_expr *t_lo,
                              const tc_expr *t_hi);

/* The parallel loop over nmat x nrb x ncb tasks: task -> (matrix, row block, column block), the
 * matrix outermost, then row blocks fastest (order 0) or column blocks fastest; blocks are balanced
 * runs of whole row tiles and panels. Binds g->mat, p_lo and p_hi, and allocates `scratch` (NULL:
 * none) of scratch_floats per task around tc__gemm_loops. */
const tc_stmt *tc__gemm_parallel(tc_ir *ir, tc__gemm *g, int nmat, int nrb, int ncb, int order,
                                 int k, int kc, const tc_var *scratch, int64_t scratch_floats);

/* Copies rows x kext of a row-major matrix (element (r, k) at src[s0 + r*lds + k]) into dst with
 * row stride ldd, vectors of vl lanes then single floats, and sets *a to read it. */
const tc_stmt *tc__gemm_copy_rows(tc_ir *ir, int vl, const tc_var *src, const tc_expr *s0,
                                  int64_t lds, const tc_var *dst, int64_t ldd, int rows,
                                  const tc_expr *kext, tc__gemm_a *a);

/* A stride for a stack copy of rows of kc floats: whole vectors plus one cache line, so the rows of
 * a tile fall in different L1 sets whatever kc is (a row stride of a multiple of 4 KiB, such as k =
 * 3072, puts every row of the tile in one set and thrashes it). */
int tc__gemm_ld(int kc);

/* Knobs both templates share, appended to s: tile_n [panels, nv], tile_m [tiles, mr], tile_k
 * [blocks, kc] (the whole k first), row_blocks and col_blocks (the parallel split of C into blocks
 * of whole row tiles and panels), order (0: consecutive tasks take the row blocks of one column
 * block, so threads working at the same time read the same B; 1: the column blocks of one row
 * block). */
th_status tc__gemm_space(tc_space *s, const tc_target *t, int m, int n, int k);
/* Register and split rules of those knobs: mr*nv + nv + 1 <= nregs, at most one row tile per row
 * block and one panel per column block. Reads them into the out parameters (any may be NULL). */
th_status tc__gemm_valid(const tc_space *s, const tc_config *c, const tc_target *t, int m, int n,
                         int k, int *mr, int *nv, int *kc, int *nrb, int *ncb, int *order);
/* Up to this many rows (the CNN heads' batches) the fallback takes one row tile if the registers
 * allow it (each row tile streams all of B), the whole k at once and a task per row tile and panel,
 * as the dense template before the packed GEMM did. */
#define TC__GEMM_FEW_ROWS 16

/* Sets the shared knobs of c: the register tile (mr, nv), kc and the split (see gemm.c for the
 * rules). */
th_status tc__gemm_fallback(const tc_space *s, tc_config *c, const tc_target *t, int m, int n,
                            int k, int mr_max);

#endif
