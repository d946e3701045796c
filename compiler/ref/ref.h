/* tc_ref: the reference interpreter, the oracle of every compiler test. It runs any tc_graph, before or
 * after the passes (folded batch norm, fused epilogues, layout nodes), with plain loops over logical NCHW
 * tensors: a channel-blocked layout is only a storage order, so layout nodes are copies here. */
#ifndef TC_REF_H
#define TC_REF_H

#include <stddef.h>

#include "graph.h"
#include "th_status.h"

/* Runs g on `input` (batch x C x H x W floats, NCHW) and writes the output node's tensor to `output`
 * (tc_tensor_numel of it). The graph's parameters must carry data. Buffers are allocated per tensor and
 * freed at their last use. TH_ERR_INVALID (missing data, unsupported node; err says which), TH_ERR_NOMEM.
 * Thread-safe for distinct graphs; g is not modified. */
th_status tc_ref_run(const tc_graph *g, const float *input, float *output, char *err, size_t errlen);
/* Any network: inputs[i] holds the numel of g->inputs[i]'s tensor in its dtype, outputs[i] receives
 * g->outputs[i]'s. An embedding index out of range is TH_ERR_INVALID naming the input and the index. */
th_status tc_ref_run_io(const tc_graph *g, const void *const *inputs, void *const *outputs, char *err,
                        size_t errlen);

#endif
