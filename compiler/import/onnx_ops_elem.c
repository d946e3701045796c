/* The ONNX importer's converters of element-wise tests and selection: IsNaN and IsInf onto the
 * graph's TC_OP_MATH (the unary kernel family), their bool results held as float32 1.0 / 0.0 as
 * the comparisons' are (onnx_ops_binary.c); Where (float32 or int64 x and y) onto TC_OP_BINARY's
 * TAKE and LEAVE and an add. */
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

th_status tc__ox_c_where(tc__ox *x, const Onnx__NodeProto *n) {
  int c, a, b;
  if (n->n_input != 3)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "has %d inputs (3)", (int)n->n_input);
  th_status rc = tc__ox_float_in(x, n, 0, &c);
  if (rc == TH_OK && c >= 0) rc = tc__ox_num_ins(x, n, 1, 2, &a, &b);
  if (rc != TH_OK || c < 0 || a < 0 || b < 0) return rc;
  int t = tc_graph_binary(x->g, c, a, TC_BINARY_TAKE);
  int l = t < 0 ? -1 : tc_graph_binary(x->g, c, b, TC_BINARY_LEAVE);
  int id = l < 0 ? -1 : tc_graph_add(x->g, t, l); /* int64 too: TAKE and LEAVE give 0 for -0 */
  if (id < 0) return tc__ox_nfail(x, n, TH_ERR_INVALID, "%s", tc_graph_error(x->g));
  return tc__ox_set_node(x, n, 0, id);
}
