/* libFuzzer target of the ONNX importer: any bytes go through tc_onnx_import with weights (the path that
 * copies and transposes initializers) at batch 1, under ASan and UBSan. An import either succeeds, and the
 * graph's parameters and shapes are then read back once so that a wrong size shows as an ASan report, or
 * fails with a message; it never crashes, leaks or hangs. Built by tests/fuzz/fuzz.cmake with clang-16. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "graph.h"
#include "onnx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tc_onnx_opts o = {"fuzz", 1, NULL, 1};
  tc_graph *g = NULL;
  tc_onnx_info info;
  char err[1024];
  if (tc_onnx_import(data, size, &o, &g, &info, err, sizeof err) != TH_OK) {
    if (g || !memchr(err, '\0', sizeof err) || !err[0]) __builtin_trap(); /* a failure always says why */
    return 0;
  }
  volatile float sink = 0;
  for (int i = 0; i < g->nparams; i++)
    for (int64_t k = 0; k < g->params[i].numel; k += 1 + g->params[i].numel / 16) sink += g->params[i].data[k];
  for (int i = 0; i < g->nnodes; i++)
    for (int k = 0; k < g->nodes[i].ninputs; k++)
      if (g->nodes[i].inputs[k] < 0 || g->nodes[i].inputs[k] >= i) __builtin_trap(); /* topological order */
  (void)sink;
  tc_graph_free(g);
  return 0;
}
