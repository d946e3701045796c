/* Constant folding in the ONNX importer: evaluating at import every node whose inputs are
 * constants, through one table from op type to fold. Here are the table, its driver and the folds
 * that move or compute shapes and indices: torch's shape arithmetic (Shape -> Gather -> Unsqueeze
 * -> Concat -> Reshape), Slice, Split, Transpose, Expand, ConstantOfShape, Range, Constant and
 * Cast; the element-wise folds are in onnx_fold_math.c and the constant tensors they work on in
 * onnx_tensor.c. Results are capped at TC__OX_FOLD_MAX elements; weights are never copied through a
 * fold (views of them are zero-copy), so a node computing on a weight is left to the converters. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "onnx_fold_int.h"

/* ---- folds
 * ---------------------------------------------------------------------------------------------- */

typedef th_status (*tc__ox_fold_fn)(tc__ox *x, const Onnx__NodeProto *n, tc__oxc **in, int nin,
                                    int *big);

static th_status tc__ox_f_cast(tc__ox *x, const Onnx__NodeProto *n, tc__oxc **in, int nin,
                               int *big) {
  (void)nin;
  int64_t to;
  th_status rc = tc__ox_attr_i(x, n, "to", 0, &to);
  if (rc != TH_OK) return rc;
  if (to < 0 || to > INT_MAX || tc__ox_esize((int)to) == 0)
    return tc__ox_unsupported(x, n, "a cast to element type %lld", (long long)to);
  int fl = tc__ox_isfloat((int)to);
  tc__oxc o = *in[0];
  if (fl == in[0]->fl && (fl || to == T_INT64 || to == in[0]->type)) { /* the same values: a view */
    o.type = (int)to;
    tc__ox_set(x, n, 0, &o);
    return TH_OK;
  }
  rc = tc__ox_new(x, n, &o, (int)to, in[0]->ndim, in[0]->dims, big);
  if (rc != TH_OK || *big) return rc;
  for (int64_t k = 0; k < o.n; k++) {
    if (fl)
      ((float *)o.f)[k] = tc__ox_f32(tc__ox_getf(in[0], k));
    else
      ((int64_t *)o.i)[k] = tc__ox_wrap((int)to, in[0]->fl ? tc__ox_f2i(in[0]->f[k]) : in[0]->i[k]);
  }
  tc__ox_set(x, n, 0, &o);
  return TH_OK;
}

static th_status tc__ox_f_shape(tc__ox *x, const Onnx__NodeProto *n, tc__oxc **in, int nin,
                                int *big) {
  (void)in;
  (void)nin;
  int64_t dims[TC__OX_RANK], start = 0, end = INT64_MAX;
  int r = tc__ox_dims(x, tc__ox_in(x, n, 0), dims);
  th_status rc = TH_OK;
  if (x->opset >= 15) rc = tc__ox_attr_i(x, n, "start", 0, &start);
  if (rc == TH_OK && x->opset >= 15) rc = tc__ox_attr_i(x, n, "end", INT64_MAX, &end);
  if (rc != TH_OK) return rc;
  if (start < 0) start = start < -r ? 0 : start + r;
  if (end < 0) end = end < -r ? 0 : end + r;
  start = start > r ? r : start;
  end = end > r ? r : end;
  int64_t len = end > start ? end - start : 0;
  tc__oxc o;
  if (strcmp(n->op_type, "Size") == 0) {
    rc = tc__ox_new(x, n, &o, T_INT64, 0, NULL, big);
    if (rc == TH_OK) {
      int64_t p = 1;
      for (int d = 0; d < r; d++) p *= dims[d];
      ((int64_t *)o.i)[0] = p;
    }
  } else {
    rc = tc__ox_new(x, n, &o, T_INT64, 1, &len, big);
    for (int64_t k = 0; rc == TH_OK && k < len; k++) ((int64_t *)o.i)[k] = dims[start + k];
  }
  if (rc == TH_OK) tc__ox_set(x, n, 0, &o);
  return rc;
}

static th_status tc__ox_f_gather(tc__ox *x, const Onnx__NodeProto *n, tc__oxc **in, int nin,
                                 int *big) {
  if (nin < 2 || !in[1]) return tc__ox_nfail(x, n, TH_ERR_INVALID, "needs data and indices");
  const tc__oxc *d = in[0], *ix = in[1];
  int64_t a;
  int axis;
  th_status rc = tc__ox_attr_i(x, n, "axis", 0, &a);
  if (rc == TH_OK) rc = tc__ox_axis(x, n, a, d->ndim, &axis);
  if (rc != TH_OK) return rc;
  if (ix->fl) return tc__ox_nfail(x, n, TH_ERR_INVALID, "indices must be integers");
  int r = d->ndim - 1 + ix->ndim;
  if (r > TC__OX_RANK) return tc__ox_nfail(x, n, TH_ERR_INVALID, "the result has %d dimensions", r);
  int64_t od[TC__OX_RANK];
  int k = 0;
  for (int i = 0; i < axis; i++) od[k++] = d->dims[i];
  for (int i = 0; i < ix->ndim; i++) od[k++] = ix->dims[i];
  for (int i = axis + 1; i < d->ndim; i++) od[k++] = d->dims[i];
  tc__oxc o;
  rc = tc__ox_new(x, n, &o, d->type, r, od, big);
  if (rc != TH_OK || *big) return rc;
  int64_t len = d->dims[axis], inner = 1, outer = 1;
  for (int i = axis + 1; i < d->ndim; i++) inner *= d->dims[i];
  for (int i = 0; i < axis; i++) outer *= d->dims[i];
  for (int64_t j = 0; j < ix->n; j++) {
    int64_t v = ix->i[j];
    if (v < -len || v >= len)
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "index %lld is out of range for length %lld",
                          (long long)v, (long long)len);
  }
  int64_t q = 0;
  for (int64_t o1 = 0; o1 < outer; o1++)
    for (int64_t j = 0; j < ix->n; j++) {
      int64_t v = ix->i[j] < 0 ? ix->i[j] + len : ix->i[j];
      for (int64_t i = 0; i < inner; i++) tc__ox_copy_el(&o, q++, d, (o1 * len + v) * inner + i);
    }
  tc__ox_set(x, n, 0, &o);
  return TH_OK;
}

/* Reshape, Flatten, Squeeze, Unsqueeze: the same data in new dims (a view of the input). */
static th_status tc__ox_f_reshape(tc__ox *x, const Onnx__NodeProto *n, tc__oxc **in, int nin,
                                  int *big) {
  (void)nin;
  (void)big;
  int before = x->nunsup;
  tc__oxc o = *in[0];
  int r;
  th_status rc = tc__ox_reshape_dims(x, n, in[0]->dims, in[0]->ndim, o.dims, &r);
  if (rc != TH_OK || TC__OX_REPORTED(x, before)) return rc;
  o.ndim = r;
  tc__ox_set(x, n, 0, &o);
  return TH_OK;
}

static th_status tc__ox_f_concat(tc__ox *x, const Onnx__NodeProto *n, tc__oxc **in, int nin,
                                 int *big) {
  int64_t a;
  int axis;
  th_status rc = tc__ox_attr_i(x, n, "axis", INT64_MAX, &a);
  if (rc != TH_OK) return rc;
  if (a == INT64_MAX) return tc__ox_nfail(x, n, TH_ERR_INVALID, "axis is missing");
  const tc__oxc *c0 = NULL;
  for (int i = 0; i < nin && !c0; i++) c0 = in[i];
  if (!c0) return tc__ox_nfail(x, n, TH_ERR_INVALID, "no inputs");
  rc = tc__ox_axis(x, n, a, c0->ndim, &axis);
  if (rc != TH_OK) return rc;
  int64_t od[TC__OX_RANK];
  memcpy(od, c0->dims, sizeof od);
  od[axis] = 0;
  for (int i = 0; i < nin; i++) {
    const tc__oxc *c = in[i];
    if (!c) continue;
    int ok = c->ndim == c0->ndim && c->fl == c0->fl;
    for (int d = 0; ok && d < c->ndim; d++) ok = d == axis || c->dims[d] == c0->dims[d];
    if (!ok) return tc__ox_nfail(x, n, TH_ERR_INVALID, "input %d does not fit the others", i);
    od[axis] += c->dims[axis];
  }
  tc__oxc o;
  rc = tc__ox_new(x, n, &o, c0->type, c0->ndim, od, big);
  if (rc != TH_OK || *big) return rc;
  int64_t outer = 1, inner = 1, q = 0;
  for (int d = 0; d < axis; d++) outer *= od[d];
  for (int d = axis + 1; d < c0->ndim; d++) inner *= od[d];
  for (int64_t o1 = 0; o1 < outer; o1++)
    for (int i = 0; i < nin; i++) {
      if (!in[i]) continue;
      int64_t blk = in[i]->dims[axis] * inner;
      for (int64_t j = 0; j < blk; j++) tc__ox_copy_el(&o, q++, in[i], o1 * blk + j);
    }
  tc__ox_set(x, n, 0, &o);
  return TH_OK;
}

static th_status tc__ox_f_slice(tc__ox *x, const Onnx__NodeProto *n, tc__oxc **in, int nin,
                                int *big) {
  (void)nin;
  const tc__oxc *d = in[0];
  tc__ox_range r[TC__OX_RANK];
  int before = x->nunsup;
  th_status rc = tc__ox_slice_args(x, n, d->dims, d->ndim, r);
  if (rc != TH_OK || TC__OX_REPORTED(x, before)) return rc;
  int64_t od[TC__OX_RANK], st[TC__OX_RANK], ist[TC__OX_RANK], base = 0;
  for (int k = 0; k < d->ndim; k++) od[k] = tc__ox_range_len(&r[k]);
  tc__oxc o;
  rc = tc__ox_new(x, n, &o, d->type, d->ndim, od, big);
  if (rc != TH_OK || *big) return rc;
  tc__ox_strides(d->dims, d->ndim, ist);
  for (int k = 0; k < d->ndim; k++) {
    st[k] = ist[k] * r[k].step;
    if (od[k] > 0) base += r[k].begin * ist[k];
  }
  tc__ox_strided(&o, d, base, st);
  tc__ox_set(x, n, 0, &o);
  return TH_OK;
}

static th_status tc__ox_f_split(tc__ox *x, const Onnx__NodeProto *n, tc__oxc **in, int nin,
                                int *big) {
  (void)nin;
  const tc__oxc *d = in[0];
  int64_t sizes[TC__OX_RANK * 8], ist[TC__OX_RANK], off = 0;
  int axis, before = x->nunsup, nout = (int)n->n_output;
  th_status rc = tc__ox_split_args(x, n, d->dims, d->ndim, &axis, sizes, nout);
  if (rc != TH_OK || TC__OX_REPORTED(x, before)) return rc;
  tc__ox_strides(d->dims, d->ndim, ist);
  for (int k = 0; k < nout; k++) {
    int64_t od[TC__OX_RANK];
    memcpy(od, d->dims, sizeof od);
    od[axis] = sizes[k];
    tc__oxc o;
    rc = tc__ox_new(x, n, &o, d->type, d->ndim, od, big);
    if (rc != TH_OK || *big) return rc;
    tc__ox_strided(&o, d, off * ist[axis], ist);
    off += sizes[k];
    tc__ox_set(x, n, k, &o);
  }
  return TH_OK;
}

static th_status tc__ox_f_transpose(tc__ox *x, const Onnx__NodeProto *n, tc__oxc **in, int nin,
                                    int *big) {
  (void)nin;
  const tc__oxc *d = in[0];
  int perm[TC__OX_RANK];
  th_status rc = tc__ox_perm(x, n, d->ndim, perm);
  if (rc != TH_OK) return rc;
  int64_t od[TC__OX_RANK], ist[TC__OX_RANK], st[TC__OX_RANK];
  tc__ox_strides(d->dims, d->ndim, ist);
  for (int k = 0; k < d->ndim; k++) {
    od[k] = d->dims[perm[k]];
    st[k] = ist[perm[k]];
  }
  tc__oxc o;
  rc = tc__ox_new(x, n, &o, d->type, d->ndim, od, big);
  if (rc != TH_OK || *big) return rc;
  tc__ox_strided(&o, d, 0, st);
  tc__ox_set(x, n, 0, &o);
  return TH_OK;
}

static th_status tc__ox_f_expand(tc__ox *x, const Onnx__NodeProto *n, tc__oxc **in, int nin,
                                 int *big) {
  if (nin < 2 || !in[1] || in[1]->fl || in[1]->ndim != 1 || in[1]->n > TC__OX_RANK)
    return tc__ox_nfail(x, n, TH_ERR_INVALID,
                        "the shape must be a 1-D integer tensor of at most %d values", TC__OX_RANK);
  int64_t od[TC__OX_RANK], st[TC__OX_RANK];
  int r;
  if (!tc__ox_bcast(in[0]->dims, in[0]->ndim, in[1]->i, (int)in[1]->n, od, &r))
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "the input does not broadcast to the shape");
  tc__oxc o;
  th_status rc = tc__ox_new(x, n, &o, in[0]->type, r, od, big);
  if (rc != TH_OK || *big) return rc;
  tc__ox_bstrides(in[0], r, st);
  tc__ox_strided(&o, in[0], 0, st);
  tc__ox_set(x, n, 0, &o);
  return TH_OK;
}

static th_status tc__ox_f_constant_of_shape(tc__ox *x, const Onnx__NodeProto *n, tc__oxc **in,
                                            int nin, int *big) {
  (void)nin;
  const tc__oxc *s = in[0];
  if (s->fl || s->ndim != 1 || s->n > TC__OX_RANK)
    return tc__ox_nfail(x, n, TH_ERR_INVALID,
                        "the shape must be a 1-D integer tensor of at most %d values", TC__OX_RANK);
  tc__oxc val;
  memset(&val, 0, sizeof val);
  static const float zero = 0.0f;
  val.type = T_FLOAT;
  val.fl = 1;
  val.n = 1;
  val.f = &zero;
  const Onnx__AttributeProto *a = tc__ox_attr(n, "value");
  if (a) {
    if (!a->t) return tc__ox_nfail(x, n, TH_ERR_INVALID, "attribute 'value' must be a tensor");
    th_status rc = tc__ox_decode(x, a->t, "ConstantOfShape value", &val);
    if (rc != TH_OK) return rc;
    if (val.n != 1)
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "attribute 'value' must hold one element");
  }
  tc__oxc o;
  th_status rc = tc__ox_new(x, n, &o, val.type, (int)s->n, s->i, big);
  if (rc != TH_OK || *big) return rc;
  for (int64_t k = 0; k < o.n; k++) tc__ox_copy_el(&o, k, &val, 0);
  tc__ox_set(x, n, 0, &o);
  return TH_OK;
}

static th_status tc__ox_f_range(tc__ox *x, const Onnx__NodeProto *n, tc__oxc **in, int nin,
                                int *big) {
  if (nin < 3 || !in[1] || !in[2] || in[0]->n != 1 || in[1]->n != 1 || in[2]->n != 1)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "start, limit and delta must be scalars");
  tc__oxc o;
  int64_t len;
  th_status rc;
  if (in[0]->fl) {
    double s = tc__ox_getf(in[0], 0), l = tc__ox_getf(in[1], 0), d = tc__ox_getf(in[2], 0);
    double cnt = d != 0 ? ceil((l - s) / d) : NAN;
    if (!(cnt == cnt) || cnt > (double)TC_ONNX_MAX_ELEMENTS)
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "bad range (%g, %g, %g)", s, l, d);
    len = cnt > 0 ? (int64_t)cnt : 0;
    rc = tc__ox_new(x, n, &o, in[0]->type, 1, &len, big);
    if (rc != TH_OK || *big) return rc;
    for (int64_t k = 0; k < len; k++) ((float *)o.f)[k] = tc__ox_f32(s + (double)k * d);
  } else {
    int64_t s = in[0]->i[0], l = tc__ox_geti(in[1], 0), d = tc__ox_geti(in[2], 0), span;
    if (d == 0 || __builtin_sub_overflow(l, s, &span))
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "bad range (%lld, %lld, %lld)", (long long)s,
                          (long long)l, (long long)d);
    len = (d > 0 && span > 0) ? (span - 1) / d + 1 : (d < 0 && span < 0) ? (span + 1) / d + 1 : 0;
    if (len > TC_ONNX_MAX_ELEMENTS)
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "the range is too long");
    rc = tc__ox_new(x, n, &o, in[0]->type, 1, &len, big);
    if (rc != TH_OK || *big) return rc;
    for (int64_t k = 0; k < len; k++) ((int64_t *)o.i)[k] = s + k * d;
  }
  tc__ox_set(x, n, 0, &o);
  return TH_OK;
}

static th_status tc__ox_f_constant(tc__ox *x, const Onnx__NodeProto *n, tc__oxc **in, int nin,
                                   int *big) {
  (void)in;
  (void)nin;
  (void)big;
  if (n->n_attribute != 1 || !n->attribute[0] || !n->attribute[0]->name)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "needs exactly one value attribute");
  const Onnx__AttributeProto *a = n->attribute[0];
  const char *an = a->name;
  tc__oxc o;
  memset(&o, 0, sizeof o);
  o.src = -1;
  th_status rc = TH_OK;
  if (strcmp(an, "value") == 0) {
    if (!a->t) return tc__ox_nfail(x, n, TH_ERR_INVALID, "attribute 'value' must be a tensor");
    char what[160];
    snprintf(what, sizeof what, "Constant '%.100s'", tc__ox_nname(n));
    rc = tc__ox_decode(x, a->t, what, &o);
  } else if (strcmp(an, "value_float") == 0 || strcmp(an, "value_int") == 0) {
    int fl = an[6] == 'f';
    o.type = fl ? T_FLOAT : T_INT64;
    o.fl = fl;
    o.n = 1;
    rc = tc__ox_alloc_data(x, &o);
    if (rc == TH_OK && fl) ((float *)o.f)[0] = a->f;
    if (rc == TH_OK && !fl) ((int64_t *)o.i)[0] = a->i;
  } else if (strcmp(an, "value_floats") == 0 || strcmp(an, "value_ints") == 0) {
    int fl = an[6] == 'f';
    size_t cnt = fl ? a->n_floats : a->n_ints;
    o.type = fl ? T_FLOAT : T_INT64;
    o.fl = fl;
    o.ndim = 1;
    o.dims[0] = o.n = (int64_t)cnt;
    if (fl)
      o.f = a->floats;
    else
      o.i = a->ints;
  } else {
    return tc__ox_unsupported(x, n, "attribute '%.40s' (only numeric values)", an);
  }
  if (rc == TH_OK) tc__ox_set(x, n, 0, &o);
  return rc;
}

/* ---- the table
 * ------------------------------------------------------------------------------------------ */

enum {
  F_VIEW = 1 /* zero-copy: fine on weights */,
  F_SHAPE = 2 /* reads only its input's shape */
};

static const struct {
  const char *op;
  tc__ox_fold_fn fn;
  int flags;
} tc__ox_folds[] = {
    {"Identity", tc__ox_f_identity, F_VIEW},
    {"Dropout", tc__ox_f_identity, F_VIEW},
    {"Cast", tc__ox_f_cast, 0},
    {"Shape", tc__ox_f_shape, F_SHAPE},
    {"Size", tc__ox_f_shape, F_SHAPE},
    {"Gather", tc__ox_f_gather, 0},
    {"Reshape", tc__ox_f_reshape, F_VIEW},
    {"Flatten", tc__ox_f_reshape, F_VIEW},
    {"Squeeze", tc__ox_f_reshape, F_VIEW},
    {"Unsqueeze", tc__ox_f_reshape, F_VIEW},
    {"Concat", tc__ox_f_concat, 0},
    {"Slice", tc__ox_f_slice, 0},
    {"Split", tc__ox_f_split, 0},
    {"Transpose", tc__ox_f_transpose, 0},
    {"Expand", tc__ox_f_expand, 0},
    {"ConstantOfShape", tc__ox_f_constant_of_shape, 0},
    {"Range", tc__ox_f_range, 0},
    {"Constant", tc__ox_f_constant, 0},
    {"Where", tc__ox_f_where, 0},
    {"Add", tc__ox_f_binary, 0},
    {"Sub", tc__ox_f_binary, 0},
    {"Mul", tc__ox_f_binary, 0},
    {"Div", tc__ox_f_binary, 0},
    {"Pow", tc__ox_f_binary, 0},
    {"Mod", tc__ox_f_binary, 0},
    {"Min", tc__ox_f_binary, 0},
    {"Max", tc__ox_f_binary, 0},
    {"Equal", tc__ox_f_binary, 0},
    {"Less", tc__ox_f_binary, 0},
    {"Greater", tc__ox_f_binary, 0},
    {"LessOrEqual", tc__ox_f_binary, 0},
    {"GreaterOrEqual", tc__ox_f_binary, 0},
    {"And", tc__ox_f_binary, 0},
    {"Or", tc__ox_f_binary, 0},
    {"Xor", tc__ox_f_binary, 0},
    {"Not", tc__ox_f_unary, 0},
    {"Neg", tc__ox_f_unary, 0},
    {"Abs", tc__ox_f_unary, 0},
    {"Floor", tc__ox_f_unary, 0},
    {"Ceil", tc__ox_f_unary, 0},
    {"Sqrt", tc__ox_f_unary, 0},
    {"Erf", tc__ox_f_unary, 0},
    {"Relu", tc__ox_f_unary, 0},
    {"Tanh", tc__ox_f_unary, 0},
    {"Sigmoid", tc__ox_f_unary, 0},
    {"Reciprocal", tc__ox_f_unary, 0},
    {"Exp", tc__ox_f_unary, 0},
    {"Log", tc__ox_f_unary, 0},
};

static int tc__ox_fold_find(const char *op) {
  for (size_t i = 0; i < sizeof tc__ox_folds / sizeof tc__ox_folds[0]; i++)
    if (strcmp(tc__ox_folds[i].op, op) == 0) return (int)i;
  return -1;
}

int tc__ox_foldable(const char *op_type) {
  return tc__ox_fold_find(op_type) >= 0;
}

th_status tc__ox_fold(tc__ox *x, const Onnx__NodeProto *n, int *done) {
  *done = 0;
  int f = tc__ox_fold_find(n->op_type);
  if (f < 0) return TH_OK;
  int flags = tc__ox_folds[f].flags;
  int nin = (int)n->n_input;
  tc__oxc **in = th_arena_alloc(x->arena, (size_t)(nin + 1) * sizeof *in);
  if (!in) return tc__ox_fail(x, TH_ERR_NOMEM, "out of memory");
  int64_t wn = -1; /* the largest float initializer read, -1 for none */
  for (int i = 0; i < nin; i++) {
    tc__oxv *v = tc__ox_in(x, n, i);
    in[i] = NULL;
    if (!v) continue;
    if (v->kind != TC__OX_CONST && !(flags & F_SHAPE && i == 0 && v->kind == TC__OX_NODE))
      return TH_OK;
    if (v->kind != TC__OX_CONST) continue;
    if (!(flags & F_VIEW) && v->c.fl && v->c.n > TC__OX_SMALL)
      return TH_OK; /* a weight: the graph does it */
    if (v->c.fl && x->vals[v->c.src].init >= 0 && v->c.n > wn) wn = v->c.n;
    in[i] = &v->c;
  }
  if (strcmp(n->op_type, "Constant") != 0 && (nin == 0 || !tc__ox_in(x, n, 0)))
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "the first input is missing");
  int big = 0;
  th_status rc = tc__ox_folds[f].fn(x, n, in, nin, &big);
  if (rc != TH_OK || big) return rc;
  /* a node reported unsupported (a list it needs is computed) is not folded either; nor one that
   * would make a parameter larger than the initializer it comes from (an expanded class token stays
   * a parameter and an expand, as in the zoo) */
  int grows = 0;
  for (size_t k = 0; k < n->n_output; k++) {
    tc__oxv *v = tc__ox_out(x, n, (int)k);
    if (v && v->kind == TC__OX_BAD) return TH_OK;
    grows |= v && wn >= 0 && v->c.fl && v->c.n > wn;
  }
  if (grows) {
    for (size_t k = 0; k < n->n_output; k++) {
      tc__oxv *v = tc__ox_out(x, n, (int)k);
      if (v) v->kind = TC__OX_UNSET;
    }
    return TH_OK;
  }
  *done = 1;
  return TH_OK;
}
