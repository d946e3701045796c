/* Internal interface of the graph passes (compiler/passes/): the node-table edits every pass shares
 * (passes.c), strided views (views.c) and the few helpers one pass lends another. Nothing outside this
 * folder includes it; the passes' public contract is passes.h. */
#ifndef TC_PASSES_INT_H
#define TC_PASSES_INT_H

#include <stdint.h>

#include "passes.h"

/* ---- node-table edits (passes.c) ---- */

/* Records the first error of the graph (g->err) and returns rc. */
th_status tc__fail(tc_graph *g, th_status rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Number of references to each node from live nodes (+1 for the graph output); the caller frees. */
int *tc__uses(const tc_graph *g);
/* Every reference to `from` now points to `to`; `from` dies. */
void tc__replace(tc_graph *g, int from, int to);
/* A node of op with no parameters, one group, alpha 1, plain layout and no storage yet. */
tc_node tc__blank_node(tc_op op);
/* Inserts a copy of *proto at position pos; later nodes shift by one and references are renumbered.
 * Returns pos, or -1 out of memory. */
int tc__insert(tc_graph *g, int pos, const tc_node *proto);
int tc__same_shape(const tc_tensor *a, const tc_tensor *b);
/* Both operands of a binary node have the output's element count. */
int tc__same_numel_operands(const tc_graph *g, const tc_node *nd);

/* ---- strided views (views.c) ---- */

/* A node's tensor as a strided view of a base node's storage. For a node with its own storage (computed,
 * an input, a CONST, a reshape the strides cannot express) base is the node itself, strides row-major.
 * Views compose through chains of views regardless of copies, so a copy of an intermediate view never
 * changes how a later view reads. */
typedef struct tc__view {
  int base;
  int64_t st[TC_MAX_DIMS]; /* element strides into base, per dim of the node's shape */
  int64_t off;             /* element offset into base */
  int contig;              /* row-major for the node's shape (size-1 dims ignored): an alias */
  int copy;                /* materialised by a COPY call into the node's own storage */
  int bad; /* reads a blocked map in another order (no layout pass reorder before it) */
} tc__view;

typedef struct tc__views {
  tc__view *v;
  int *map; /* CNN feature maps */
} tc__views;

int tc__is_view(tc_op op);
void tc__rowmajor(const tc_tensor *t, int64_t *st);
void tc__bcast_strides(const tc_tensor *x, const int64_t *xst, const tc_tensor *out, int64_t *st);
th_status tc__views_build(const tc_graph *g, tc__views *vs);
void tc__views_free(tc__views *vs);
int tc__add_binary(const tc_graph *g, const tc__views *vs, int c);
int tc__reads_strided(const tc_graph *g, const tc__views *vs, int c, int k);
int tc__planned(const tc_graph *g, const tc__views *vs, int i);
int tc__read_base(const tc_graph *g, const tc__views *vs, int c, int k);
const tc__view *tc__copy_src(const tc_graph *g, const tc__views *vs, int i, const tc_tensor **shape);

/* ---- lent by one pass to another ---- */

/* layout.c: the map flag of every node (0 for dead ones); malloc'd, NULL when out of memory. */
int *tc__maps(const tc_graph *g);
/* layout.c: a broadcast multiply of maps that keeps the channel-blocked layout (x * gate). */
int tc__map_mul(const tc_graph *g, const tc_node *nd);
/* layout.c: whether a blocked map is in NCHW order as stored: 1x1, its block not padding the channels. */
int tc__nchw_1x1(const tc_tensor *t);
/* fuse.c: where a softmax mask splits into [n, w] rows, or -1. */
int tc__mask_split(const tc_tensor *x, const tc_tensor *m);
/* plan.c: elements as stored: a channel-blocked map stores its channels rounded up to the block. */
int64_t tc__stored_numel(const tc_tensor *t);

#endif
