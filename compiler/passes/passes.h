/* tc_pass: graph passes from a zoo graph to a list of kernel calls over one workspace.
 *   fold_bn:  conv followed by batch norm becomes one conv that carries the BN parameters; the effective
 *             weights w*s and bias (b-mean)*s+beta (s = gamma/sqrt(var+eps)) are computed where the
 *             weights are known (reference interpreter, th_model_create), so params.bin keeps torch names.
 *   fuse:     dropout and identity adaptive pools vanish; relu/clip fold into the producing conv, dense or
 *             add; an add folds into one of its conv inputs as a residual epilogue.
 *   layout:   every 4-D tensor gets the channel block tc_channel_block(C); reorders (layout nodes) only at
 *             the edges: after a non-plain network input, and before the flatten of a map larger than 1x1.
 *   plan:     liveness-based offsets of every tensor in one workspace (buffers are reused).
 *   lower:    the kernel calls: a tc_workload per kernel and the workspace offset of each ABI argument.
 * Passes modify the graph in place (node ids may change when layout nodes are inserted) and record the
 * first error in g->err. */
#ifndef TC_PASSES_H
#define TC_PASSES_H

#include <stdint.h>

#include "graph.h"
#include "th_status.h"
#include "workload.h"

th_status tc_pass_fold_bn(tc_graph *g);
th_status tc_pass_fuse(tc_graph *g);
th_status tc_pass_layout(tc_graph *g, int simd_lanes);
/* Sets out.offset (floats) of every live node; flatten/dropout/layout-free aliases share their input's
 * storage. *workspace gets the total size in floats. */
th_status tc_pass_plan_memory(tc_graph *g, int64_t *workspace);
/* fold_bn, fuse, layout and plan in order. */
th_status tc_passes_run(tc_graph *g, int simd_lanes, int64_t *workspace);

/* The node whose storage holds node id's tensor (follows flatten aliases). */
int tc_graph_storage(const tc_graph *g, int id);

/* Effective (folded) weights and bias of a conv or dense node: w_out has the weight param's numel floats,
 * b_out the output channels. Needs parameter data. */
th_status tc_node_effective_params(const tc_graph *g, const tc_node *nd, float *w_out, float *b_out);
/* Nonzero when the node has a bias after folding (its own or from a folded batch norm). */
int tc_node_has_bias(const tc_node *nd);

/* One kernel call of the lowered plan. */
/* TC_SPACE_CONST: arg_off is the id of a parameter read as a plain tensor (layer-norm gamma, an
 * embedding table, a position embedding); the build copies each such parameter once into the weights
 * blob and the generated plan names it as TC_SPACE_WEIGHTS, so model runtimes see only spaces 0..3. */
enum { TC_SPACE_NULL = 0, TC_SPACE_WORK = 1, TC_SPACE_WEIGHTS = 2, TC_SPACE_BIAS = 3, TC_SPACE_CONST = 4 };
typedef struct tc_call {
  tc_workload wl;
  int node;   /* the graph node it implements */
  int nargs;
  int arg_space[5];
  int64_t arg_off[5]; /* floats, in the workspace for TC_SPACE_WORK */
} tc_call;

/* Lowers a planned graph into kernel calls (malloc'd array, caller frees). TH_ERR_UNSUPPORTED (with
 * g->err set) for a node no kernel implements. */
th_status tc_lower(tc_graph *g, tc_call **calls, int *ncalls);

#endif
