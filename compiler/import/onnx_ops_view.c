/* The ONNX importer's converters of views and layout ops: Reshape, Transpose, Concat, Split, Slice,
 * Cast and Expand, at every opset's form of their arguments (attributes or constant inputs). */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "onnx_int.h"
#include "workload.h"

/* ---- views
 * ------------------------------------------------------------------------------------------------
 */

th_status tc__ox_c_reshape(tc__ox *x, const Onnx__NodeProto *n) {
  int a, before = x->nunsup;
  th_status rc = tc__ox_node_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  int64_t in[TC__OX_RANK], out[TC__OX_RANK];
  int rin = tc__ox_tdims(x, a, in), rout;
  rc = tc__ox_reshape_dims(x, n, in, rin, out, &rout);
  if (rc != TH_OK || TC__OX_REPORTED(x, before)) return rc;
  const tc_tensor *t = tc__ox_t(x, a);
  if (strcmp(n->op_type, "Flatten") == 0 && rout == 2 && rin >= 2 && out[0] == in[0] &&
      t->dtype == TC_DTYPE_F32 && rin == 4)
    return tc__ox_set_node(x, n, 0, tc_graph_flatten(x->g, a));
  int id;
  rc = tc__ox_reshape_node(x, n, a, out, rout, &id);
  if (rc != TH_OK || id < 0) return rc;
  return tc__ox_set_node(x, n, 0, id);
}

th_status tc__ox_c_transpose(tc__ox *x, const Onnx__NodeProto *n) {
  int a, perm[TC__OX_RANK];
  th_status rc = tc__ox_float_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  int r = tc__ox_t(x, a)->ndim, same = 1;
  rc = tc__ox_perm(x, n, r, perm);
  if (rc != TH_OK) return rc;
  for (int d = 0; d < r; d++) same = same && perm[d] == d;
  return tc__ox_set_node(x, n, 0, same ? a : tc_graph_transpose(x->g, a, perm));
}

th_status tc__ox_c_concat(tc__ox *x, const Onnx__NodeProto *n) {
  int64_t ax;
  th_status rc = tc__ox_attr_i(x, n, "axis", INT64_MAX, &ax);
  if (rc != TH_OK) return rc;
  if (ax == INT64_MAX) return tc__ox_nfail(x, n, TH_ERR_INVALID, "axis is missing");
  int *ids = th_arena_alloc(x->arena, (n->n_input + 1) * sizeof *ids), m = 0, axis = 0;
  if (!ids) return tc__ox_fail(x, TH_ERR_NOMEM, "out of memory");
  for (int k = 0; k < (int)n->n_input; k++) {
    tc__oxv *v = tc__ox_in(x, n, k);
    if (!v || (v->kind == TC__OX_CONST && v->c.n == 0)) continue; /* empty pieces add nothing */
    rc = tc__ox_float_in(x, n, k, &ids[m]);
    if (rc != TH_OK || ids[m] < 0) return rc;
    m++;
  }
  if (m == 0) return tc__ox_unsupported(x, n, "every input is empty");
  const tc_tensor *t0 = tc__ox_t(x, ids[0]);
  rc = tc__ox_axis(x, n, ax, t0->ndim, &axis);
  if (rc != TH_OK) return rc;
  int64_t along = 0;
  for (int i = 0; i < m; i++)
    along += tc__ox_t(x, ids[i])->shape[axis] * (tc__ox_t(x, ids[i])->ndim == t0->ndim);
  if (along > INT_MAX)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "the result is %lld long along axis %d",
                        (long long)along, axis);
  int cnn = axis == 1 && t0->ndim == 4, acc = ids[0];
  for (int i = 1; i < m;) { /* groups of at most TC_MAX_INPUTS, chained */
    int grp[TC_MAX_INPUTS], c = 0;
    grp[c++] = acc;
    while (c < TC_MAX_INPUTS && i < m) grp[c++] = ids[i++];
    acc = cnn ? tc_graph_concat(x->g, c, grp) : tc_graph_concat_axis(x->g, c, grp, axis);
    rc = tc__ox_bind_node(x, n, NULL, acc);
    if (rc != TH_OK) return rc;
  }
  return tc__ox_set_node(x, n, 0, acc);
}

th_status tc__ox_c_split(tc__ox *x, const Onnx__NodeProto *n) {
  int a, axis, before = x->nunsup, nout = (int)n->n_output;
  th_status rc = tc__ox_float_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  int64_t dims[TC__OX_RANK], sizes[TC__OX_RANK * 8], off = 0;
  int r = tc__ox_tdims(x, a, dims);
  rc = tc__ox_split_args(x, n, dims, r, &axis, sizes, nout);
  if (rc != TH_OK || TC__OX_REPORTED(x, before)) return rc;
  for (int k = 0; k < nout; k++) {
    if (sizes[k] == 0) return tc__ox_unsupported(x, n, "an empty output");
    int id = sizes[k] == dims[axis]
                 ? a
                 : tc_graph_slice(x->g, a, axis, (int)off, (int)(off + sizes[k]), 1);
    off += sizes[k];
    rc = tc__ox_set_node(x, n, k, id);
    if (rc != TH_OK) return rc;
  }
  return TH_OK;
}

th_status tc__ox_c_slice(tc__ox *x, const Onnx__NodeProto *n) {
  int a, before = x->nunsup;
  th_status rc = tc__ox_float_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  int64_t dims[TC__OX_RANK];
  int r = tc__ox_tdims(x, a, dims);
  tc__ox_range rg[TC__OX_RANK];
  rc = tc__ox_slice_args(x, n, dims, r, rg);
  if (rc != TH_OK || TC__OX_REPORTED(x, before)) return rc;
  int id = a;
  for (int d = 0; d < r; d++) {
    if (rg[d].begin == 0 && rg[d].end == dims[d] && rg[d].step == 1) continue;
    if (rg[d].step < 0) return tc__ox_unsupported(x, n, "negative steps");
    if (tc__ox_range_len(&rg[d]) == 0) return tc__ox_unsupported(x, n, "an empty slice");
    if (rg[d].step > dims[d])
      rg[d].step = dims[d]; /* one element either way; keeps the builder's sums small */
    id = tc_graph_slice(x->g, id, d, (int)rg[d].begin, (int)rg[d].end, (int)rg[d].step);
    rc = tc__ox_bind_node(x, n, NULL, id);
    if (rc != TH_OK) return rc;
  }
  return tc__ox_set_node(x, n, 0, id);
}

th_status tc__ox_c_cast(tc__ox *x, const Onnx__NodeProto *n) {
  int64_t to;
  int a;
  th_status rc = tc__ox_attr_i(x, n, "to", 0, &to);
  if (rc == TH_OK) rc = tc__ox_node_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  int dt = tc__ox_t(x, a)->dtype;
  int f = to == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT ||
          to == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE ||
          to == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16;
  if ((f && dt == TC_DTYPE_F32) ||
      (to == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 && dt == TC_DTYPE_I64))
    return tc__ox_set_node(x, n, 0, a);
  if (f && dt == TC_DTYPE_I64)
    return tc__ox_set_node(x, n, 0, tc_graph_cast(x->g, a, TC_DTYPE_F32));
  if (to == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 && dt == TC_DTYPE_F32) /* truncated toward zero */
    return tc__ox_set_node(x, n, 0, tc_graph_cast(x->g, a, TC_DTYPE_I64));
  return tc__ox_unsupported(x, n, "a cast of a runtime %s tensor to element type %lld",
                            tc_dtype_name(dt), (long long)to);
}

th_status tc__ox_c_expand(tc__ox *x, const Onnx__NodeProto *n) {
  int64_t shape[TC__OX_RANK], dims[TC__OX_RANK], od[TC__OX_RANK];
  int cnt, a, r, before = x->nunsup;
  th_status rc = tc__ox_const_ints(x, n, 1, shape, TC__OX_RANK, &cnt);
  if (rc != TH_OK || TC__OX_REPORTED(x, before)) return rc;
  if (cnt < 0) return tc__ox_nfail(x, n, TH_ERR_INVALID, "the shape is missing");
  rc = tc__ox_float_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  int ra = tc__ox_tdims(x, a, dims);
  if (!tc__ox_bcast(dims, ra, shape, cnt, od, &r))
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "the input does not broadcast to the shape");
  if (r > TC_MAX_DIMS) return tc__ox_unsupported(x, n, "%d dimensions", r);
  int same = r == ra, s[TC_MAX_DIMS];
  int64_t numel = 1;
  for (int d = 0; d < r; d++) {
    same = same && od[d] == dims[d];
    if (od[d] < 1 || od[d] > INT_MAX)
      return tc__ox_unsupported(x, n, "dimension %d is %lld", d, (long long)od[d]);
    s[d] = (int)od[d];
    numel *= od[d];
    if (numel > TC_ONNX_MAX_ELEMENTS)
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "the result has more than %lld elements",
                          (long long)TC_ONNX_MAX_ELEMENTS);
  }
  return tc__ox_set_node(x, n, 0, same ? a : tc_graph_expand(x->g, a, r, s));
}
