/* tc_netsrc: where a network's graph comes from. A zoo network is built by its C builder (zoo/); a user's
 * network was uploaded as an ONNX file, which the store keeps content-addressed, and is imported (onnx.h)
 * each time its graph is needed. The compiler's entry points (tc_build_opts, tc_network_tasks) take a
 * tc_netsrc so that they never ask the store themselves: the tuner resolves a name to a source through
 * store.h and hands it down (server -> store -> tuner -> compiler). */
#ifndef TC_NETWORK_H
#define TC_NETWORK_H

#include "graph.h"
#include "th_status.h"

typedef struct tc_netsrc {
  const char *name;      /* the registry's name: a zoo name, or an uploaded network's */
  const char *onnx_path; /* NULL: a zoo network; else the uploaded ONNX file */
  const char *shapes;    /* the upload's shapes string (onnx.h), or NULL */
} tc_netsrc;

/* A zoo source for `name` (onnx_path and shapes NULL). */
tc_netsrc tc_netsrc_zoo(const char *name);

/* Builds src's graph for `batch`. Zoo: tc_zoo_build(name, batch, h, w, weights). ONNX: tc_onnx_import_file
 * (h and w must be 0: the file fixes the input size; weights selects the initializers' data). Errors as
 * those two functions give them (TH_ERR_NOT_FOUND for an unknown zoo name). */
th_status tc_network_build(const tc_netsrc *src, int batch, int h, int w, int weights, tc_graph **out,
                           char *err, size_t errlen);

#endif
