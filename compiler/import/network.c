/* A network's graph from its source (network.h): the zoo's C builder for a zoo name, the ONNX importer for an
 * uploaded file. The one place where the compiler's entry points (the build, the task list) turn a tc_netsrc
 * into a graph, so that they treat both kinds alike. */
#include "network.h"

#include <stdio.h>

#include "onnx.h"
#include "zoo.h"

tc_netsrc tc_netsrc_zoo(const char *name) {
  tc_netsrc s = {name, NULL, NULL};
  return s;
}

th_status tc_network_build(const tc_netsrc *src, int batch, int h, int w, int weights, tc_graph **out,
                           char *err, size_t errlen) {
  if (!src || !src->name || !out) return TH_ERR_INVALID;
  if (!src->onnx_path) return tc_zoo_build(src->name, batch, h, w, weights, out, err, errlen);
  if (h != 0 || w != 0) {
    if (err && errlen) snprintf(err, errlen, "%s: an ONNX network's file fixes its input size", src->name);
    return TH_ERR_INVALID;
  }
  tc_onnx_opts o = {.network = src->name, .batch = batch, .shapes = src->shapes, .weights = weights};
  return tc_onnx_import_file(src->onnx_path, &o, out, NULL, err, errlen);
}
