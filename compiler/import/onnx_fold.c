/* Constant tensors of the ONNX importer: decoding initializers and Constant values (every byte
 * count checked against the dims before a byte is read), and evaluating at import every node whose
 * inputs are constants: torch's shape arithmetic (Shape -> Gather -> Unsqueeze -> Concat ->
 * Reshape), mask and expand computations (Equal, Where, ConstantOfShape, Range), casts and small
 * float math. Results are capped at TC__OX_FOLD_MAX elements; weights are never copied through a
 * fold (views of them are zero-copy), so a node computing on a weight is left to the converters. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "onnx_int.h"

enum {
  T_FLOAT = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT,
  T_UINT8 = ONNX__TENSOR_PROTO__DATA_TYPE__UINT8,
  T_INT8 = ONNX__TENSOR_PROTO__DATA_TYPE__INT8,
  T_UINT16 = ONNX__TENSOR_PROTO__DATA_TYPE__UINT16,
  T_INT16 = ONNX__TENSOR_PROTO__DATA_TYPE__INT16,
  T_INT32 = ONNX__TENSOR_PROTO__DATA_TYPE__INT32,
  T_INT64 = ONNX__TENSOR_PROTO__DATA_TYPE__INT64,
  T_BOOL = ONNX__TENSOR_PROTO__DATA_TYPE__BOOL,
  T_FLOAT16 = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16,
  T_DOUBLE = ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE,
  T_UINT32 = ONNX__TENSOR_PROTO__DATA_TYPE__UINT32,
  T_UINT64 = ONNX__TENSOR_PROTO__DATA_TYPE__UINT64,
};

static size_t tc__ox_esize(int type) {
  switch (type) {
    case T_UINT8:
    case T_INT8:
    case T_BOOL:
      return 1;
    case T_UINT16:
    case T_INT16:
    case T_FLOAT16:
      return 2;
    case T_FLOAT:
    case T_INT32:
    case T_UINT32:
      return 4;
    case T_INT64:
    case T_DOUBLE:
    case T_UINT64:
      return 8;
    default:
      return 0;
  }
}

static int tc__ox_isfloat(int type) {
  return type == T_FLOAT || type == T_DOUBLE || type == T_FLOAT16;
}

static float tc__ox_half(uint16_t h) {
  int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  float v = e == 0    ? ldexpf((float)m, -24)
            : e == 31 ? (m ? NAN : INFINITY)
                      : ldexpf((float)(m | 1024), e - 25);
  return s ? -v : v;
}

/* Wraps v to the range of an integer type, as a C cast to that type would (two's complement). */
static int64_t tc__ox_wrap(int type, int64_t v) {
  uint64_t u = (uint64_t)v;
  switch (type) {
    case T_BOOL:
      return v != 0;
    case T_UINT8:
      return (int64_t)(u & 0xff);
    case T_INT8:
      return (int64_t)(int8_t)(uint8_t)u;
    case T_UINT16:
      return (int64_t)(u & 0xffff);
    case T_INT16:
      return (int64_t)(int16_t)(uint16_t)u;
    case T_UINT32:
      return (int64_t)(u & 0xffffffffu);
    case T_INT32:
      return (int64_t)(int32_t)(uint32_t)u;
    default:
      return v;
  }
}

static int64_t tc__ox_f2i(double v) {
  if (v != v) return 0;
  if (v >= 9.2233720368547748e18) return INT64_MAX;
  if (v <= -9.2233720368547758e18) return INT64_MIN;
  return (int64_t)v;
}

/* Sets c's dims and n, checking them against the limits; fails naming `what`. */
static th_status tc__ox_shape(tc__ox *x, tc__oxc *c, int ndim, const int64_t *dims,
                              const char *what) {
  if (ndim < 0 || ndim > TC__OX_RANK)
    return tc__ox_fail(x, TH_ERR_INVALID, "%.100s: %d dimensions (at most %d)", what, ndim,
                       TC__OX_RANK);
  c->ndim = ndim;
  c->n = 1;
  for (int d = 0; d < ndim; d++) {
    if (dims[d] < 0 || dims[d] > TC_ONNX_MAX_DIM)
      return tc__ox_fail(x, TH_ERR_INVALID, "%.100s: dimension %d is %lld (0..%lld)", what, d,
                         (long long)dims[d], (long long)TC_ONNX_MAX_DIM);
    c->dims[d] = dims[d];
    c->n *= dims[d];
    if (c->n > TC_ONNX_MAX_ELEMENTS)
      return tc__ox_fail(x, TH_ERR_INVALID, "%.100s: more than %lld elements", what,
                         (long long)TC_ONNX_MAX_ELEMENTS);
  }
  return TH_OK;
}

static th_status tc__ox_alloc_data(tc__ox *x, tc__oxc *c) {
  size_t bytes = (size_t)(c->n ? c->n : 1) * (c->fl ? sizeof(float) : sizeof(int64_t));
  void *p = th_arena_alloc(x->arena, bytes);
  if (!p) return tc__ox_fail(x, TH_ERR_NOMEM, "out of memory");
  if (c->fl)
    c->f = p;
  else
    c->i = p;
  return TH_OK;
}

th_status tc__ox_decode(tc__ox *x, const Onnx__TensorProto *t, const char *what, tc__oxc *c) {
  memset(c, 0, sizeof *c);
  c->src = -1;
  if ((t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) ||
      t->n_external_data > 0)
    return tc__ox_fail(
        x, TH_ERR_UNSUPPORTED,
        "'%.100s' uses external data (save the model with its weights inside the file)", what);
  if (t->segment)
    return tc__ox_fail(x, TH_ERR_UNSUPPORTED, "'%.100s' is a segment of a tensor", what);
  int type = t->has_data_type ? t->data_type : 0;
  size_t es = tc__ox_esize(type);
  if (es == 0)
    return tc__ox_fail(x, type == 0 ? TH_ERR_INVALID : TH_ERR_UNSUPPORTED,
                       "'%.100s' has element type %d%s", what, type,
                       type == 0 ? " (undefined)" : " (not a number type the importer reads)");
  if (t->n_dims > TC__OX_RANK)
    return tc__ox_fail(x, TH_ERR_INVALID, "%.100s: %zu dimensions (at most %d)", what, t->n_dims,
                       TC__OX_RANK);
  th_status rc = tc__ox_shape(x, c, (int)t->n_dims, t->dims, what);
  if (rc != TH_OK) return rc;
  c->type = type;
  c->fl = tc__ox_isfloat(type);
  int64_t n = c->n;
  if (t->has_raw_data || t->raw_data.len > 0) {
    if (t->raw_data.len != (size_t)n * es)
      return tc__ox_fail(x, TH_ERR_INVALID, "'%.100s' holds %zu bytes of data, its dims need %lld",
                         what, t->raw_data.len, (long long)n * (long long)es);
    const uint8_t *b = t->raw_data.data;
    if (type == T_FLOAT && ((uintptr_t)b % sizeof(float)) == 0) {
      c->f = (const float *)(const void *)b;
      return TH_OK;
    }
    if (type == T_INT64 && ((uintptr_t)b % sizeof(int64_t)) == 0) {
      c->i = (const int64_t *)(const void *)b;
      return TH_OK;
    }
    rc = tc__ox_alloc_data(x, c);
    if (rc != TH_OK) return rc;
    float *f = (float *)c->f;
    int64_t *iv = (int64_t *)c->i;
    for (int64_t k = 0; k < n; k++) {
      const uint8_t *p = b + (size_t)k * es;
      uint64_t u = 0;
      memcpy(&u, p, es); /* little-endian host (onnx_int.h) */
      switch (type) {
        case T_FLOAT: {
          float v;
          memcpy(&v, p, 4);
          f[k] = v;
          break;
        }
        case T_DOUBLE: {
          double v;
          memcpy(&v, p, 8);
          f[k] = tc__ox_f32(v);
          break;
        }
        case T_FLOAT16:
          f[k] = tc__ox_half((uint16_t)u);
          break;
        default:
          iv[k] = tc__ox_wrap(type, (int64_t)u);
          break;
      }
    }
    return TH_OK;
  }
  size_t have = type == T_FLOAT                          ? t->n_float_data
                : type == T_INT64                        ? t->n_int64_data
                : type == T_DOUBLE                       ? t->n_double_data
                : (type == T_UINT32 || type == T_UINT64) ? t->n_uint64_data
                                                         : t->n_int32_data;
  if (have != (size_t)n)
    return tc__ox_fail(x, TH_ERR_INVALID, "'%.100s' holds %zu values, its dims need %lld", what,
                       have, (long long)n);
  if (type == T_FLOAT) {
    c->f = t->float_data;
    return TH_OK;
  }
  if (type == T_INT64) {
    c->i = t->int64_data;
    return TH_OK;
  }
  rc = tc__ox_alloc_data(x, c);
  if (rc != TH_OK) return rc;
  for (int64_t k = 0; k < n; k++) {
    if (type == T_DOUBLE)
      ((float *)c->f)[k] = tc__ox_f32(t->double_data[k]);
    else if (type == T_FLOAT16)
      ((float *)c->f)[k] = tc__ox_half((uint16_t)t->int32_data[k]);
    else if (type == T_UINT32 || type == T_UINT64)
      ((int64_t *)c->i)[k] = tc__ox_wrap(type, (int64_t)t->uint64_data[k]);
    else
      ((int64_t *)c->i)[k] = tc__ox_wrap(type, t->int32_data[k]);
  }
  return TH_OK;
}

int tc__ox_scalar(const tc__oxv *v, double *out) {
  if (!v || v->kind != TC__OX_CONST || v->c.n != 1) return 0;
  *out = v->c.fl ? (double)v->c.f[0] : (double)v->c.i[0];
  return 1;
}

/* ---- results
 * ------------------------------------------------------------------------------------------ */

/* A new constant of the given type and dims, data allocated; *big = 1 (and nothing allocated) when
 * it has more than TC__OX_FOLD_MAX elements. */
static th_status tc__ox_new(tc__ox *x, const Onnx__NodeProto *n, tc__oxc *c, int type, int ndim,
                            const int64_t *dims, int *big) {
  memset(c, 0, sizeof *c);
  c->src = -1;
  char what[160];
  snprintf(what, sizeof what, "node '%.100s' (%.40s)", tc__ox_nname(n), n->op_type);
  th_status rc = tc__ox_shape(x, c, ndim, dims, what);
  if (rc != TH_OK) return rc;
  c->type = type;
  c->fl = tc__ox_isfloat(type);
  if (c->n > TC__OX_FOLD_MAX) {
    *big = 1;
    return TH_OK;
  }
  x->fold_total += c->n;
  if (x->fold_total > TC__OX_FOLD_TOTAL)
    return tc__ox_nfail(x, n, TH_ERR_INVALID,
                        "constants computed at import exceed %lld elements in all",
                        (long long)TC__OX_FOLD_TOTAL);
  return tc__ox_alloc_data(x, c);
}

static void tc__ox_set(tc__ox *x, const Onnx__NodeProto *n, int k, const tc__oxc *c) {
  tc__oxv *v = tc__ox_out(x, n, k);
  if (!v) return;
  v->kind = TC__OX_CONST;
  v->c = *c;
  if (v->c.src < 0) v->c.src = (int)(v - x->vals);
}

static double tc__ox_getf(const tc__oxc *c, int64_t k) {
  return c->fl ? (double)c->f[k] : (double)c->i[k];
}

static int64_t tc__ox_geti(const tc__oxc *c, int64_t k) {
  return c->fl ? tc__ox_f2i(c->f[k]) : c->i[k];
}

/* Input element offsets for an output of rank r: st[d] is the input stride of output dim d. */
static int64_t tc__ox_off(const int64_t *odims, int r, const int64_t *st, int64_t k) {
  int64_t off = 0;
  for (int d = r - 1; d >= 0; d--) {
    if (odims[d] == 0) return 0;
    off += (k % odims[d]) * st[d];
    k /= odims[d];
  }
  return off;
}

/* Strides of c broadcast (right-aligned, size-1 dims stride 0) to rank r. */
static void tc__ox_bstrides(const tc__oxc *c, int r, int64_t *st) {
  int64_t s = 1;
  for (int d = r - 1; d >= 0; d--) {
    int k = d - (r - c->ndim);
    if (k < 0) {
      st[d] = 0;
      continue;
    }
    st[d] = c->dims[k] == 1 ? 0 : s;
    s *= c->dims[k];
  }
}

static void tc__ox_copy_el(tc__oxc *o, int64_t k, const tc__oxc *in, int64_t j) {
  if (o->fl)
    ((float *)o->f)[k] = in->fl ? in->f[j] : (float)in->i[j];
  else
    ((int64_t *)o->i)[k] = in->fl ? tc__ox_f2i(in->f[j]) : in->i[j];
}

/* o[k] = in[base + off(k)] for every k. */
static void tc__ox_strided(tc__oxc *o, const tc__oxc *in, int64_t base, const int64_t *st) {
  for (int64_t k = 0; k < o->n; k++)
    tc__ox_copy_el(o, k, in, base + tc__ox_off(o->dims, o->ndim, st, k));
}

static void tc__ox_strides(const int64_t *dims, int r, int64_t *st) {
  int64_t s = 1;
  for (int d = r - 1; d >= 0; d--) {
    st[d] = s;
    s *= dims[d];
  }
}

/* ---- folds
 * ---------------------------------------------------------------------------------------------- */

typedef th_status (*tc__ox_fold_fn)(tc__ox *x, const Onnx__NodeProto *n, tc__oxc **in, int nin,
                                    int *big);

static th_status tc__ox_f_identity(tc__ox *x, const Onnx__NodeProto *n, tc__oxc **in, int nin,
                                   int *big) {
  (void)nin;
  tc__ox_set(x, n, 0, in[0]);
  if (tc__ox_out(x, n, 1)) { /* Dropout's mask: all true at inference */
    tc__oxc m;
    th_status rc = tc__ox_new(x, n, &m, T_BOOL, in[0]->ndim, in[0]->dims, big);
    if (rc != TH_OK || *big) return rc;
    for (int64_t k = 0; k < m.n; k++) ((int64_t *)m.i)[k] = 1;
    tc__ox_set(x, n, 1, &m);
  }
  return TH_OK;
}

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

/* ---- element-wise
 * ---------------------------------------------------------------------------------------- */

static int tc__ox_cmp_op(const char *op) {
  return strcmp(op, "Equal") == 0 || strcmp(op, "Less") == 0 || strcmp(op, "Greater") == 0 ||
         strcmp(op, "LessOrEqual") == 0 || strcmp(op, "GreaterOrEqual") == 0 ||
         strcmp(op, "And") == 0 || strcmp(op, "Or") == 0 || strcmp(op, "Xor") == 0;
}

static double tc__ox_fop(const char *op, double a, double b) {
  switch (op[0]) {
    case 'A':
      return op[1] == 'd' ? a + b : (a != 0 && b != 0);
    case 'S':
      return a - b;
    case 'M':
      return op[1] == 'u'   ? a * b
             : op[1] == 'a' ? (a > b ? a : b)
             : op[1] == 'i' ? (a < b ? a : b)
                            : fmod(a, b);
    case 'D':
      return a / b;
    case 'P':
      return pow(a, b);
    case 'E':
      return a == b;
    case 'O':
      return a != 0 || b != 0;
    case 'X':
      return (a != 0) != (b != 0);
    case 'L':
      return op[4] == 'O' ? a <= b : a < b;
    case 'G':
      return op[7] == 'O' ? a >= b : a > b;
    default:
      return 0;
  }
}

/* Integer arithmetic in two's complement (wrapping, never undefined). 0 for a division by zero. */
static int tc__ox_iop(const char *op, int64_t a, int64_t b, int64_t *r) {
  uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
  switch (op[0]) {
    case 'A':
      *r = op[1] == 'd' ? (int64_t)(ua + ub) : (a != 0 && b != 0);
      return 1;
    case 'S':
      *r = (int64_t)(ua - ub);
      return 1;
    case 'M':
      if (op[1] == 'u')
        *r = (int64_t)(ua * ub);
      else if (op[1] == 'a')
        *r = a > b ? a : b;
      else if (op[1] == 'i')
        *r = a < b ? a : b;
      else {
        if (b == 0) return 0;
        *r = b == -1 ? 0 : a % b; /* Mod (fmod=0: the sign of the divisor) */
        if (*r != 0 && ((*r < 0) != (b < 0))) *r += b;
      }
      return 1;
    case 'D':
      if (b == 0) return 0;
      *r = (a == INT64_MIN && b == -1) ? INT64_MIN : a / b;
      return 1;
    case 'P': {
      uint64_t acc = 1;
      if (b < 0) {
        *r = a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
        return 1;
      }
      for (int64_t k = 0; k < b && k < 64; k++) acc *= ua;
      *r = (int64_t)acc;
      return 1;
    }
    default:
      *r = (int64_t)tc__ox_fop(op, (double)a, (double)b);
      return 1;
  }
}

static th_status tc__ox_f_binary(tc__ox *x, const Onnx__NodeProto *n, tc__oxc **in, int nin,
                                 int *big) {
  const char *op = n->op_type;
  if (nin < 2) return tc__ox_f_identity(x, n, in, nin, big); /* Min/Max of one input */
  tc__oxc acc = *in[0];
  for (int i = 1; i < nin; i++) { /* Min/Max/Sum are variadic: fold left */
    const tc__oxc *a = &acc, *b = in[i];
    if (!b) return tc__ox_nfail(x, n, TH_ERR_INVALID, "input %d is missing", i);
    int64_t od[TC__OX_RANK], sa[TC__OX_RANK], sb[TC__OX_RANK];
    int r;
    tc__oxc legacy = *b; /* b seen through opset 6's broadcast/axis (the same below opset 7) */
    th_status lrc = tc__ox_legacy_bcast(x, n, a->dims, a->ndim, b->dims, b->ndim, od, &r);
    if (lrc != TH_OK) return lrc;
    memcpy(legacy.dims, od, sizeof od);
    legacy.ndim = r;
    b = &legacy;
    if (!tc__ox_bcast(a->dims, a->ndim, b->dims, b->ndim, od, &r))
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "the inputs' shapes do not broadcast");
    int cmp = tc__ox_cmp_op(op), fl = a->fl || b->fl;
    int type = cmp ? T_BOOL : fl ? (a->fl ? a->type : b->type) : a->type;
    tc__oxc o;
    th_status rc = tc__ox_new(x, n, &o, type, r, od, big);
    if (rc != TH_OK || *big) return rc;
    tc__ox_bstrides(a, r, sa);
    tc__ox_bstrides(b, r, sb);
    for (int64_t k = 0; k < o.n; k++) {
      int64_t ja = tc__ox_off(od, r, sa, k), jb = tc__ox_off(od, r, sb, k);
      if (fl) {
        double v = tc__ox_fop(op, tc__ox_getf(a, ja), tc__ox_getf(b, jb));
        if (o.fl)
          ((float *)o.f)[k] = tc__ox_f32(v);
        else
          ((int64_t *)o.i)[k] = (int64_t)v;
      } else {
        int64_t v;
        if (!tc__ox_iop(op, a->i[ja], b->i[jb], &v))
          return tc__ox_nfail(x, n, TH_ERR_INVALID, "integer division by zero");
        ((int64_t *)o.i)[k] = cmp ? (v != 0) : tc__ox_wrap(type, v);
      }
    }
    acc = o;
  }
  tc__ox_set(x, n, 0, &acc);
  return TH_OK;
}

static th_status tc__ox_f_where(tc__ox *x, const Onnx__NodeProto *n, tc__oxc **in, int nin,
                                int *big) {
  if (nin < 3 || !in[1] || !in[2])
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "needs condition, X and Y");
  const tc__oxc *c = in[0], *a = in[1], *b = in[2];
  if (a->fl != b->fl) return tc__ox_nfail(x, n, TH_ERR_INVALID, "X and Y have different types");
  int64_t t[TC__OX_RANK], od[TC__OX_RANK], sc[TC__OX_RANK], sa[TC__OX_RANK], sb[TC__OX_RANK];
  int r1, r;
  if (!tc__ox_bcast(c->dims, c->ndim, a->dims, a->ndim, t, &r1) ||
      !tc__ox_bcast(t, r1, b->dims, b->ndim, od, &r))
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "the inputs' shapes do not broadcast");
  tc__oxc o;
  th_status rc = tc__ox_new(x, n, &o, a->type, r, od, big);
  if (rc != TH_OK || *big) return rc;
  tc__ox_bstrides(c, r, sc);
  tc__ox_bstrides(a, r, sa);
  tc__ox_bstrides(b, r, sb);
  for (int64_t k = 0; k < o.n; k++) {
    int take = tc__ox_getf(c, tc__ox_off(od, r, sc, k)) != 0;
    if (take)
      tc__ox_copy_el(&o, k, a, tc__ox_off(od, r, sa, k));
    else
      tc__ox_copy_el(&o, k, b, tc__ox_off(od, r, sb, k));
  }
  tc__ox_set(x, n, 0, &o);
  return TH_OK;
}

static th_status tc__ox_f_unary(tc__ox *x, const Onnx__NodeProto *n, tc__oxc **in, int nin,
                                int *big) {
  (void)nin;
  const char *op = n->op_type;
  const tc__oxc *a = in[0];
  int is_not = strcmp(op, "Not") == 0;
  int keep_int = !a->fl && (is_not || strcmp(op, "Neg") == 0 || strcmp(op, "Abs") == 0 ||
                            strcmp(op, "Relu") == 0);
  tc__oxc o;
  th_status rc =
      tc__ox_new(x, n, &o, keep_int ? a->type : (a->fl ? a->type : T_FLOAT), a->ndim, a->dims, big);
  if (rc != TH_OK || *big) return rc;
  for (int64_t k = 0; k < o.n; k++) {
    if (keep_int) {
      int64_t v = a->i[k];
      uint64_t u = (uint64_t)v;
      ((int64_t *)o.i)[k] = is_not         ? !v
                            : op[0] == 'N' ? (int64_t)(0 - u)
                            : op[0] == 'A' ? (v < 0 ? (int64_t)(0 - u) : v)
                                           : (v > 0 ? v : 0);
      continue;
    }
    double v = tc__ox_getf(a, k), r;
    if (strcmp(op, "Neg") == 0)
      r = -v;
    else if (strcmp(op, "Abs") == 0)
      r = fabs(v);
    else if (strcmp(op, "Floor") == 0)
      r = floor(v);
    else if (strcmp(op, "Ceil") == 0)
      r = ceil(v);
    else if (strcmp(op, "Sqrt") == 0)
      r = sqrt(v);
    else if (strcmp(op, "Erf") == 0)
      r = erf(v);
    else if (strcmp(op, "Relu") == 0)
      r = v > 0 ? v : 0;
    else if (strcmp(op, "Tanh") == 0)
      r = tanh(v);
    else if (strcmp(op, "Sigmoid") == 0)
      r = 1.0 / (1.0 + exp(-v));
    else if (strcmp(op, "Reciprocal") == 0)
      r = 1.0 / v;
    else if (strcmp(op, "Exp") == 0)
      r = exp(v);
    else if (strcmp(op, "Log") == 0)
      r = log(v);
    else
      r = v != 0 ? 0 : 1; /* Not of floats */
    ((float *)o.f)[k] = tc__ox_f32(r);
  }
  tc__ox_set(x, n, 0, &o);
  return TH_OK;
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
