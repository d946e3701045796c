/* The ONNX importer's converters of scatters by runtime indices: ScatterElements (opsets 11..21,
 * reduction none, add, mul, max, min) and the old Scatter (opsets 9, 10: ScatterElements without
 * a reduction) onto the scatter family (TC_OP_SCATTER). Data and updates are float tensors (a
 * constant one materialised); the indices are int64 graph inputs or computed int64 nodes. */
#include <string.h>

#include "onnx_int.h"
#include "workload.h"

th_status tc__ox_c_scatter(tc__ox *x, const Onnx__NodeProto *n) {
  static const char *const reds[TC_SCATTER_COUNT] = {"none", "add", "mul", "max", "min"};
  char red[16];
  int64_t ax;
  int a, i, u, axis, op = -1;
  th_status rc = tc__ox_attr_i(x, n, "axis", 0, &ax);
  if (rc == TH_OK) rc = tc__ox_attr_s(x, n, "reduction", "none", red, sizeof red);
  if (rc != TH_OK) return rc;
  for (int k = 0; k < TC_SCATTER_COUNT; k++)
    if (strcmp(red, reds[k]) == 0) op = k;
  if (op < 0)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "reduction '%s' is not none, add, mul, max or min",
                        red);
  tc__oxv *vi = tc__ox_in(x, n, 1);
  if (!vi || !tc__ox_in(x, n, 0) || !tc__ox_in(x, n, 2))
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "needs data, indices and updates");
  if (vi->kind != TC__OX_NODE)
    return tc__ox_unsupported(x, n, "constant indices (only runtime int64 ones)");
  rc = tc__ox_float_in(x, n, 0, &a);
  if (rc == TH_OK && a >= 0) rc = tc__ox_node_in(x, n, 1, &i);
  if (rc == TH_OK && a >= 0 && i >= 0) rc = tc__ox_float_in(x, n, 2, &u);
  if (rc != TH_OK || a < 0 || i < 0 || u < 0) return rc;
  const tc_tensor *td = tc__ox_t(x, a), *ti = tc__ox_t(x, i), *tu = tc__ox_t(x, u);
  if (ti->dtype != TC_DTYPE_I64) return tc__ox_unsupported(x, n, "the indices must be int64");
  rc = tc__ox_axis(x, n, ax, td->ndim, &axis);
  if (rc != TH_OK) return rc;
  int ok = ti->ndim == td->ndim && tu->ndim == ti->ndim;
  for (int d = 0; ok && d < td->ndim; d++) ok = tu->shape[d] == ti->shape[d];
  if (!ok)
    return tc__ox_nfail(x, n, TH_ERR_INVALID,
                        "indices and updates must have data's rank %d and "
                        "one shape",
                        td->ndim);
  for (int d = 0; d < td->ndim; d++)
    if (d != axis && ti->shape[d] != td->shape[d])
      return tc__ox_unsupported(x, n,
                                "indices whose dim %d (%d) differs from data's (%d): only "
                                "the scattered axis %d may differ",
                                d, ti->shape[d], td->shape[d], axis);
  return tc__ox_set_node(x, n, 0, tc_graph_scatter(x->g, a, i, u, axis, op));
}
