/* tc_zoo: the model zoo. Each network is a C builder that produces a tc_graph with torchvision's
 * architecture and parameter names (mobilenet v1 follows TVM's testing zoo, with torch-style names), for
 * any batch size and, where the architecture allows, any input size. Weights are optional: a seeded
 * generator fills them deterministically per (network, parameter name) with Kaiming-style magnitudes and
 * near-identity batch-norm statistics, so activations stay finite through the deepest networks. */
#ifndef TC_ZOO_H
#define TC_ZOO_H

#include <stdint.h>

#include "graph.h"
#include "th_status.h"

typedef struct tc_zoo_entry {
  const char *name;        /* "resnet-18" */
  int c, h, w;             /* the default input size */
  int min_hw;              /* the smallest input height/width the architecture accepts */
  const char *description; /* one line */
} tc_zoo_entry;

/* Number of networks in the zoo. */
size_t tc_zoo_count(void);
/* The i-th entry (static storage), or NULL past the end. */
const tc_zoo_entry *tc_zoo_at(size_t i);
/* The entry named `name`, or NULL. */
const tc_zoo_entry *tc_zoo_find(const char *name);

/* Builds network `name` for `batch` at input size h x w (0, 0 for the default). With weights != 0 the
 * parameters get seeded data. On success *out is a new graph the caller frees with tc_graph_free.
 * TH_ERR_NOT_FOUND for an unknown name, TH_ERR_INVALID for a bad batch or size (err says why),
 * TH_ERR_NOMEM. */
th_status tc_zoo_build(const char *name, int batch, int h, int w, int weights, tc_graph **out,
                       char *err, size_t errlen);
/* FLOPs (see tc_graph_flops) and trainable parameter count at the default input size, computed from
 * shapes only (no weights are generated; well under a millisecond per network). Out-params may be NULL. */
th_status tc_zoo_info(const char *name, int batch, double *flops, int64_t *params);
/* Fills every parameter of g that has no data yet with the seeded generator (keyed by g->network). */
th_status tc_zoo_fill(tc_graph *g);

#endif
