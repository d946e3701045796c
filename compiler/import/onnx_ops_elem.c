/* The ONNX importer's converters of element-wise tests onto the graph's TC_OP_MATH (the unary
 * kernel family): IsNaN and IsInf, whose bool results the graph holds as float32 1.0 / 0.0 as it
 * does the comparisons' (onnx_ops_binary.c). */
#include <string.h>

#include "onnx_int.h"
#include "workload.h"

th_status tc__ox_c_is_special(tc__ox *x, const Onnx__NodeProto *n) {
  int a;
  th_status rc = tc__ox_float_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  if (strcmp(n->op_type, "IsNaN") == 0)
    return tc__ox_set_node(x, n, 0, tc_graph_math(x->g, a, TC_UNARY_ISNAN, 0.0f, 0.0f));
  int64_t pos, neg;
  rc = tc__ox_attr_i(x, n, "detect_positive", 1, &pos);
  if (rc == TH_OK) rc = tc__ox_attr_i(x, n, "detect_negative", 1, &neg);
  if (rc != TH_OK) return rc;
  if ((pos != 0 && pos != 1) || (neg != 0 && neg != 1))
    return tc__ox_nfail(x, n, TH_ERR_INVALID,
                        "detect_positive %lld and detect_negative %lld must be 0 or 1",
                        (long long)pos, (long long)neg);
  return tc__ox_set_node(x, n, 0, tc_graph_math(x->g, a, TC_UNARY_ISINF, (float)pos, (float)neg));
}
