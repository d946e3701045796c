/* tc_pass: graph passes from a zoo graph to a list of kernel calls over one workspace.
 *   fold_bn:  conv followed by batch norm becomes one conv that carries the BN parameters; the effective
 *             weights w*s and bias (b-mean)*s+beta (s = gamma/sqrt(var+eps)) are computed where the
 *             weights are known (reference interpreter, th_model_create), so params.bin keeps torch names.
 *   fuse:     dropout and identity adaptive pools vanish; relu/clip fold into the producing conv, dense or
 *             same-shape add, gelu/tanh into the producing dense, sigmoid/hard sigmoid/hard swish/silu
 *             into the producing conv (depthwise too) or dense; an add folds into one of its conv or
 *             dense inputs of the same shape as a residual epilogue (the other operand computed earlier),
 *             else, when it feeds only a layer norm, into that layer norm (inputs[1], TC_EPI_RESIDUAL); a
 *             softmax mask that is not [rows..., 1..., w] against the scores is expanded to their shape.
 *             Dense layers that share an input become one (TC_FUSE_QKV). Groups of these can be
 *             left out (tc_pass_fuse_groups).
 *   layout:   CNN feature maps get the channel block tc_channel_block(C); every other tensor stays plain.
 *             A map is the 4-D float32 output of an INPUT that feeds conv/BN/pools, of conv, BN and pools,
 *             an element-wise activation (relu, clip, sigmoid, hard sigmoid, hard swish, silu) or dropout
 *             of a map, a same-shape add of two maps, a multiply of two maps with the same channels whose
 *             other dims broadcast (squeeze-excite's x * gate[n, c, 1, 1]: a BINARY call over the blocked
 *             layout), a channel (axis 1) concat of maps, a layout node. Reorders (layout nodes) only at
 *             the edges: after a blocked network input, and
 *             before any other consumer of a blocked map (flatten of a map larger than 1x1, reshape,
 *             transpose, dense, ...) and a blocked graph output.
 *   plan:     liveness-based offsets of every tensor in one workspace (buffers are reused).
 *   lower:    the kernel calls: a tc_workload per kernel and where each ABI argument lives.
 * Passes modify the graph in place (node ids may change when layout or expand nodes are inserted) and
 * record the first error in g->err. None is thread-safe on one graph; distinct graphs are independent.
 *
 * Views. RESHAPE, FLATTEN, DROPOUT, TRANSPOSE, SLICE and EXPAND have no kernel of their own. Chains of them
 * compose into one strided view (element strides and an offset over a base: a computed tensor, a network
 * input or a CONST). A view that is contiguous (row-major strides, size-1 dims ignored) is an alias: it
 * shares its base's storage at an element offset (out.offset = the base's + the view's). A non-contiguous
 * view costs one TC_KERNEL_COPY into its own storage only where a consumer needs a contiguous tensor or it
 * is a graph output; copies, broadcast element-wise ops (TC_KERNEL_BINARY) and tensor concats (one COPY
 * per input into its slice of the output) read through the strides directly. A reshape that the strides
 * cannot express (merging a transposed pair of dims) is itself one COPY. A CONST and the views of one are
 * never in the workspace: kernels read them from the parameter (TC_SPACE_CONST). */
#ifndef TC_PASSES_H
#define TC_PASSES_H

#include <stddef.h>
#include <stdint.h>

#include "graph.h"
#include "th_status.h"
#include "workload.h"

th_status tc_pass_fold_bn(tc_graph *g);
/* Fusion groups, each of which a build can leave out to time what it buys (tc_build_opts.fuse_off,
 * `tunehub build --no-fuse GROUP,...`); every build the registry publishes, and every task the
 * tuner extracts, has all of them:
 *   TC_FUSE_ACTIVATION  relu, clip, gelu, tanh, sigmoid, hard sigmoid, hard swish and silu fold
 *                       into the producing conv, dense or same-shape add (off: a UNARY call each)
 *   TC_FUSE_RESIDUAL    a same-shape add folds into a conv or dense as its residual, or into the
 *                       layer norm it alone feeds (off: an ELTWISE or BINARY call each)
 *   TC_FUSE_SOFTMAX     a softmax keeps its scale and additive mask (off: x * alpha and + mask
 *                       become AFFINE and ADD nodes before a plain softmax: UNARY and BINARY calls)
 *   TC_FUSE_QKV         2 to TC_MAX_PARTS dense layers without activation or residual that read one
 *                       tensor with weights of one shape (bert's q, k and v projections) become one
 *                       dense over their weights concatenated along the output axis (composite
 *                       parameters, graph.h), each former layer a slice of its output; only where
 *                       none of their readers then needs a copy it did not need before (bert's
 *                       head split copies either way) (off: a dense call each)
 * Biases always join their conv or dense, dropout and identity pools always vanish, and an unusual
 * softmax mask is always expanded (lowering needs that). */
enum {
  TC_FUSE_ACTIVATION = 1 << 0,
  TC_FUSE_RESIDUAL = 1 << 1,
  TC_FUSE_SOFTMAX = 1 << 2,
  TC_FUSE_QKV = 1 << 3,
  TC_FUSE_ALL = (1 << 4) - 1
};
/* The fuse pass with every group. */
th_status tc_pass_fuse(tc_graph *g);
/* The fuse pass with the groups of the TC_FUSE_* mask `groups` only. TH_ERR_NOMEM (g->err set). */
th_status tc_pass_fuse_groups(tc_graph *g, int groups);
/* The name of one group ("activation", "residual", "softmax", "qkv"); NULL for anything else. */
const char *tc_fuse_group_name(int group);
/* Parses a comma-separated list of group names into *groups (a TC_FUSE_* mask). TH_ERR_INVALID for
 * an empty list, an empty item or an unknown name, with err naming it and listing the valid names;
 * *groups is written only on success. */
th_status tc_fuse_groups_parse(const char *list, int *groups, char *err, size_t errlen);
th_status tc_pass_layout(tc_graph *g, int simd_lanes);
/* Sets out.offset (4-byte units) of every node that owns workspace storage: sizes are tc_tensor_bytes / 4
 * rounded up to 64 bytes, every network input has its own slot from the start (the runtime copies the
 * inputs in before the first kernel), every output stays live to the end (copied out after the last).
 * Aliases get their base's offset plus the view's; strided views without a copy and CONST-based tensors
 * get -1. *workspace gets the total size in 4-byte units. TH_ERR_NOMEM. */
th_status tc_pass_plan_memory(tc_graph *g, int64_t *workspace);
/* fold_bn, fuse, layout and plan in order. */
th_status tc_passes_run(tc_graph *g, int simd_lanes, int64_t *workspace);

/* The node that owns the storage node id's tensor lives in: id itself for a computed tensor, an input or
 * a copied view; the base for an alias or a strided view (read through strides); the CONST node for a view
 * of a constant (not in the workspace). -1 for a bad id or out of memory. Costs a pass over the graph. */
int tc_graph_storage(const tc_graph *g, int id);

/* Effective (folded) weights and bias of a conv or dense node: w_out has the weight param's numel floats,
 * b_out the output channels. Needs parameter data. */
th_status tc_node_effective_params(const tc_graph *g, const tc_node *nd, float *w_out, float *b_out);
/* Nonzero when the node has a bias after folding (its own or from a folded batch norm). */
int tc_node_has_bias(const tc_node *nd);

/* Argument spaces of a call (the generated plan's th__calls use 0..3 only):
 *   TC_SPACE_WORK     arg_off is a workspace offset in 4-byte units.
 *   TC_SPACE_WEIGHTS  the packed weights of a conv/dense call (slot TC_ARG_WEIGHTS); set by the build.
 *   TC_SPACE_BIAS     the folded bias of that call (slot TC_ARG_BIAS); set by the build.
 *   TC_SPACE_CONST    a parameter read as a plain float32 tensor in torch's (row-major) layout: layer-norm
 *                     gamma and beta, an embedding table, a CONST node (class token, position embeddings)
 *                     or a view of one. arg_param is the parameter id (g->params) and arg_off the element
 *                     (float) offset inside it: a slice of rows 0..S-1 is 0, a later slice may not be; a
 *                     COPY keeps its view offset in wl.aoff and has arg_off 0. The build places each such
 *                     parameter once, unpacked and 64-byte aligned, in the weights blob and writes the call
 *                     as TC_SPACE_WEIGHTS at that parameter's offset + arg_off, so model runtimes see only
 *                     spaces 0..3.
 * arg_param is -1 for every other space. */
enum { TC_SPACE_NULL = 0, TC_SPACE_WORK = 1, TC_SPACE_WEIGHTS = 2, TC_SPACE_BIAS = 3, TC_SPACE_CONST = 4 };
typedef struct tc_call {
  tc_workload wl;
  int node; /* the graph node it implements */
  int nargs;
  int arg_space[5];
  int64_t arg_off[5]; /* TC_SPACE_WORK: 4-byte units in the workspace; TC_SPACE_CONST: floats */
  int arg_param[5];   /* TC_SPACE_CONST: the parameter id; -1 otherwise */
} tc_call;

/* Lowers a planned graph into kernel calls (malloc'd array, caller frees), in node order:
 *   conv2d       CONV2D or DEPTHWISE; pools, layout and a channel concat of maps (CONCAT, one call per
 *                input) as before
 *   dense        DENSE over rows of any rank: n = rows, c = k, oc = m, epilogues
 *   add          ELTWISE for two same-shape tensors read contiguously (maps: n, c, h, w; others: n = rows,
 *                c = the last dim), else BINARY; mul, sub, div: BINARY (the output's shape, per-dim
 *                strides of a and b, 0 broadcasts, adjacent dims merged)
 *   matmul       BATCH_MATMUL: n = the product of the leading dims, h = oh = M, c = K, oc = N, trans
 *                flags, alpha
 *   layer_norm   LAYER_NORM: n rows of c, alpha = eps, gamma and beta TC_SPACE_CONST, optional residual
 *   softmax      SOFTMAX (the CNN family) for rank 2, or a rank-4 CNN map, without mask or scale
 *                over a last dim > 1, else SOFTMAX_ROWS: rows [n, c, h] of w, alpha, the mask
 *                [n, w] with TC_EPI_MASK
 *   gelu, tanh, cast, affine   UNARY over n elements (op, alpha, beta)
 *   embedding    EMBEDDING: n indices, c table rows, oc = row width; the table TC_SPACE_CONST
 *   views        COPY where described above (ndim <= 6, strides and offsets in elements), else nothing
 *   const        nothing
 * TH_ERR_UNSUPPORTED (with g->err set) for a node no kernel implements. */
th_status tc_lower(tc_graph *g, tc_call **calls, int *ncalls);

#endif
