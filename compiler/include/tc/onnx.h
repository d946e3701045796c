/* tc_onnx: the ONNX importer. It reads an ONNX model (protobuf, parsed by the C code protoc-c generates from
 * Debian's onnx/onnx.proto; never by hand) and maps its graph onto the graph IR (graph.h), so that an
 * uploaded network is built, tuned and served like a zoo network.
 *
 * - Opsets TC_ONNX_OPSET_MIN..TC_ONNX_OPSET_MAX of the default domain ("" or "ai.onnx"); each op is
 *   converted by the rule of the highest opset version not above the model's (as TVM's importer does).
 * - Shape arithmetic (Shape, Gather, Unsqueeze, Concat, Cast, Equal, Where, ConstantOfShape, ... on
 *   constants) is folded at import; decomposed layer norm and erf gelu become the fused graph ops.
 * - The batch (README's batch rule): the first dimension of every graph input that shares the
 *   network's batch dimension (symbolic, or, at rank >= 2, the number the first input of rank >= 2
 *   fixes; a fixed-length vector never) becomes opts->batch; rank-0 inputs and other leading dimensions are taken
 *   as the file gives them; every other dimension must be static in the file or fixed by
 *   opts->shapes.
 * - Weights are the initializers: graph parameters named as in the file (a weight whose layout the graph
 *   needs transposed keeps its name; graph.json and the manifest say so).
 * - Errors: every unsupported op is listed in one message with its node name and opset ("unsupported
 *   ONNX operators: Resize (node 'up1', opset 13), Loop (node 'loop', opset 13)"); a malformed file, a
 *   cycle, a dangling input, an initializer whose data does not match its dims, or a size past the limits
 *   below is refused with a message that names the tensor or node.
 * The ops mapped, the folding rules and the patterns are listed in compiler/README.md ("ONNX import").
 * Nothing here prints, aborts or keeps global state; distinct calls are thread-safe. */
#ifndef TC_ONNX_H
#define TC_ONNX_H

#include <stddef.h>
#include <stdint.h>

#include "graph.h"
#include "th_status.h"

#define TC_ONNX_OPSET_MIN 1 /* per op: see the opset table in onnx.c (most start at 6) */
#define TC_ONNX_OPSET_MAX 21

/* Sanity limits against an "ONNX bomb": a file that declares sizes it does not (or cannot) back. */
#define TC_ONNX_MAX_DIM ((int64_t)1 << 24)           /* one dimension */
#define TC_ONNX_MAX_ELEMENTS ((int64_t)1 << 31)      /* one tensor (initializer or activation) */
#define TC_ONNX_MAX_NODES 100000
#define TC_ONNX_MAX_OP_TYPES 128                     /* distinct op types reported in tc_onnx_info */
/* Limits of the wire-format scan (onnx_wire.c) that runs over the bytes before protobuf-c unpacks
 * anything: a file past one of them is refused with TH_ERR_INVALID and a message naming the limit. */
#define TC_ONNX_MAX_DEPTH 32           /* messages nested in messages (protobuf-c recurses on each) */
#define TC_ONNX_MAX_GRAPH_DEPTH 4      /* graphs nested through graph-valued attributes (If, Loop) */
#define TC_ONNX_MAX_INITIALIZERS 100000 /* initializers over all graphs (nodes: TC_ONNX_MAX_NODES) */
#define TC_ONNX_MAX_REPEATED (1 << 20) /* entries of one repeated field of one message (packed
                                          numbers aside: they are data, counted in bytes below) */
#define TC_ONNX_PARSE_OVERHEAD \
  ((size_t)256 << 20) /* protobuf-c may allocate at most the file's size plus this */

typedef struct tc_onnx_opts {
  const char *network; /* the graph's network name (g->network) */
  int batch;           /* 1..4096: the first dimension of every batched input (the batch rule) */
  const char *shapes;  /* NULL, or "NAME:DxDxD,NAME2:DxD": the full shape of named inputs, for dimensions
                          the file leaves symbolic; the first D may be "N" (the batch replaces it anyway) */
  int weights;         /* nonzero: parameters get the initializers' data; 0: shapes only (cheaper) */
} tc_onnx_opts;

typedef struct tc_onnx_optype {
  char name[48]; /* ONNX op_type, e.g. "Conv" */
  int count;     /* nodes of that type in the file */
} tc_onnx_optype;

typedef struct tc_onnx_info {
  int64_t ir_version;
  int64_t opset;       /* of the default domain */
  char producer[64];   /* producer_name producer_version, e.g. "pytorch 1.13.1" */
  int nnodes;          /* nodes in the file */
  int ninitializers;
  int64_t param_elements; /* elements over all initializers */
  int nop_types;          /* distinct op types, in first-seen order */
  tc_onnx_optype op_types[TC_ONNX_MAX_OP_TYPES];
  int folded;             /* nodes evaluated at import (constant shape arithmetic, Constant nodes) */
  int fused_layer_norm;   /* decomposed layer norms matched into TC_OP_LAYER_NORM */
  int fused_gelu;         /* decomposed gelus matched into TC_OP_GELU */
  int file_batch; /* the batch the file fixes (README, "The batch rule": the leading dimension of its
                     first input of rank >= 2) when that is a number, else 0; the only field that is
                     also set when the import fails (once the inputs were read) */
} tc_onnx_info;

/* Imports the ONNX model in data[0..len) for opts->batch. On success *out is a finished graph (the
 * caller frees it with tc_graph_free) and *info (if info != NULL) describes the file; on failure
 * *info is zero but for file_batch. Errors (err
 * says why, and lists every unsupported op at once; errlen of 1024 or more keeps long lists whole):
 *   TH_ERR_INVALID      not a parsable ONNX model (malformed wire data, or past a scan limit above:
 *                       the message names it), a non-finite float attribute, a missing graph, an
 *                       opset outside 1..21 or another domain's op, a cycle, a dangling input, bad
 *                       initializer data, a size past the limits, a dimension that is symbolic and
 *                       not fixed by opts->shapes, a bad shapes string, a shape the graph IR
 * refuses; TH_ERR_UNSUPPORTED  ops (or attributes of them) the importer does not map, or an op at
 * an opset outside the range its converter declares; TH_ERR_NOMEM. */
th_status tc_onnx_import(const void *data, size_t len, const tc_onnx_opts *opts, tc_graph **out,
                         tc_onnx_info *info, char *err, size_t errlen);
/* The same for a file (mapped read-only, not copied); TH_ERR_IO when it cannot be read. */
th_status tc_onnx_import_file(const char *path, const tc_onnx_opts *opts, tc_graph **out, tc_onnx_info *info,
                              char *err, size_t errlen);

#endif
