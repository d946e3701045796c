/* What the graph's own files share (graph.c, graph_build.c): the first-error recorder, the node
 * append and the input checks every constructor starts with. Not for use outside compiler/graph*.c:
 * other modules go through graph.h. */
#ifndef TC_GRAPH_INT_H
#define TC_GRAPH_INT_H

#include <stddef.h>
#include <stdint.h>

#include "graph.h"

/* Records the first error on g (later ones are dropped). */
void tc__err(tc_graph *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends a node of op on inputs (n of them, each an existing node) with default attributes and a
 * float32 output of no shape yet; its id, or -1 with the error on g. */
int tc__node(tc_graph *g, tc_op op, const char *name, int n, const int *inputs);
/* Declares the parameter "<prefix>.<suffix>" (tc_graph_param). */
int tc__named_param(tc_graph *g, const char *prefix, const char *suffix, int ndim,
                    const int64_t *shape, int init, int fan_in);
/* Node x's output tensor, or NULL when x is no node. */
const tc_tensor *tc__in(tc_graph *g, int x);
/* "[2, 3, 4]" into buf (n bytes); returns buf. */
const char *tc__shape_str(const tc_tensor *t, char *buf, size_t n);
/* 1 when node x is a 4-D tensor, else 0 with the error on g naming what. */
int tc__need4(tc_graph *g, int x, const char *what);
/* numpy broadcasting of a and b's shapes into *out (dtype float32); 0 with an error naming both. */
int tc__broadcast(tc_graph *g, const char *what, const tc_tensor *ta, const tc_tensor *tb,
                  tc_tensor *out);
/* The input tensor of a tensor op: a valid node, float32 unless any_dtype; NULL with the error on
 * g. */
const tc_tensor *tc__tin(tc_graph *g, int x, const char *what, int any_dtype);
/* A new node of op on inputs xs whose output is *out. */
int tc__tnode(tc_graph *g, tc_op op, const char *name, int n, const int *xs, const tc_tensor *out);

#endif
