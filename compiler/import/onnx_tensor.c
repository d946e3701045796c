/* Constant tensors of the ONNX importer: their element types and conversions (float16, integer
 * wrap-around, float to integer), decoding initializers and Constant values (every byte count
 * checked against the dims before a byte is read), and the result tensors and strided element
 * access that the folds (onnx_fold.c, onnx_fold_math.c) build on. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "onnx_fold_int.h"

size_t tc__ox_esize(int type) {
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

int tc__ox_isfloat(int type) {
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
int64_t tc__ox_wrap(int type, int64_t v) {
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

int64_t tc__ox_f2i(double v) {
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

th_status tc__ox_alloc_data(tc__ox *x, tc__oxc *c) {
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
th_status tc__ox_new(tc__ox *x, const Onnx__NodeProto *n, tc__oxc *c, int type, int ndim,
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

void tc__ox_set(tc__ox *x, const Onnx__NodeProto *n, int k, const tc__oxc *c) {
  tc__oxv *v = tc__ox_out(x, n, k);
  if (!v) return;
  v->kind = TC__OX_CONST;
  v->c = *c;
  if (v->c.src < 0) v->c.src = (int)(v - x->vals);
}

double tc__ox_getf(const tc__oxc *c, int64_t k) {
  return c->fl ? (double)c->f[k] : (double)c->i[k];
}

int64_t tc__ox_geti(const tc__oxc *c, int64_t k) {
  return c->fl ? tc__ox_f2i(c->f[k]) : c->i[k];
}

/* Input element offsets for an output of rank r: st[d] is the input stride of output dim d. */
int64_t tc__ox_off(const int64_t *odims, int r, const int64_t *st, int64_t k) {
  int64_t off = 0;
  for (int d = r - 1; d >= 0; d--) {
    if (odims[d] == 0) return 0;
    off += (k % odims[d]) * st[d];
    k /= odims[d];
  }
  return off;
}

/* Strides of c broadcast (right-aligned, size-1 dims stride 0) to rank r. */
void tc__ox_bstrides(const tc__oxc *c, int r, int64_t *st) {
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

void tc__ox_copy_el(tc__oxc *o, int64_t k, const tc__oxc *in, int64_t j) {
  if (o->fl)
    ((float *)o->f)[k] = in->fl ? in->f[j] : (float)in->i[j];
  else
    ((int64_t *)o->i)[k] = in->fl ? tc__ox_f2i(in->f[j]) : in->i[j];
}

/* o[k] = in[base + off(k)] for every k. */
void tc__ox_strided(tc__oxc *o, const tc__oxc *in, int64_t base, const int64_t *st) {
  for (int64_t k = 0; k < o->n; k++)
    tc__ox_copy_el(o, k, in, base + tc__ox_off(o->dims, o->ndim, st, k));
}

void tc__ox_strides(const int64_t *dims, int r, int64_t *st) {
  int64_t s = 1;
  for (int d = r - 1; d >= 0; d--) {
    st[d] = s;
    s *= dims[d];
  }
}
