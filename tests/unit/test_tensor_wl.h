/* Tensor workloads (ops.h's tensor families) for the tests of their templates and of the tuner: the
 * shape fields a family does not read are 1, as ops.h asks. */
#ifndef TEST_TENSOR_WL_H
#define TEST_TENSOR_WL_H

#include <string.h>

#include "workload.h"

/* A tensor workload with every unused shape field 1 (ops.h: "unused shape fields are 1"). */
static inline tc_workload tensor_wl(tc_kernel k, int n, int c, int h, int w) {
  tc_workload wl;
  memset(&wl, 0, sizeof wl);
  wl.kernel = k;
  wl.n = n;
  wl.c = wl.oc = c;
  wl.h = wl.oh = h;
  wl.w = wl.ow = w;
  wl.in_cb = wl.out_cb = 1;
  wl.kh = wl.kw = wl.sh = wl.sw = 1;
  return wl;
}

/* A copy or binary workload over shape[0..ndim) with the given strides. */
static inline tc_workload strided_wl(tc_kernel k, int ndim, const int *shape, const int *as,
                                     const int *bs) {
  tc_workload wl = tensor_wl(k, 1, 1, 1, 1);
  wl.ndim = ndim;
  for (int d = 0; d < ndim; d++) {
    wl.shape[d] = shape[d];
    wl.astride[d] = as[d];
    wl.bstride[d] = bs[d];
  }
  return wl;
}

#endif
