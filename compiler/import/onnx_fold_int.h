/* What the constant folding of the ONNX importer shares among its files (onnx_tensor.c: element
 * types, decoding and result tensors; onnx_fold.c: the shape folds and the fold table;
 * onnx_fold_math.c: the element-wise folds). Not for use outside compiler/import/onnx_tensor.c and
 * onnx_fold*.c. */
#ifndef TC_ONNX_FOLD_INT_H
#define TC_ONNX_FOLD_INT_H

#include <stddef.h>
#include <stdint.h>

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

/* ---- element types (onnx_tensor.c) ---- */
/* Bytes per element of an ONNX data type as stored here, 0 for one not supported. */
size_t tc__ox_esize(int type);
/* 1 for the floating-point types (held as float). */
int tc__ox_isfloat(int type);
/* v wrapped to the range of the integer type (two's complement, as numpy casts). */
int64_t tc__ox_wrap(int type, int64_t v);
/* A float to int64 as a C cast would, saturated and NaN to 0 instead of undefined. */
int64_t tc__ox_f2i(double v);
/* Allocates c's data (c->n elements of its type) in the import's arena. */
th_status tc__ox_alloc_data(tc__ox *x, tc__oxc *c);

/* ---- results and element access (onnx_tensor.c) ---- */
/* A new constant of the given type and dims, data allocated; *big = 1 (and nothing allocated) when
 * it has more than TC__OX_FOLD_MAX elements. */
th_status tc__ox_new(tc__ox *x, const Onnx__NodeProto *n, tc__oxc *c, int type, int ndim,
                     const int64_t *dims, int *big);
/* Sets node n's k-th output to the constant c. */
void tc__ox_set(tc__ox *x, const Onnx__NodeProto *n, int k, const tc__oxc *c);
/* Element k of c as a double, or as an int64. */
double tc__ox_getf(const tc__oxc *c, int64_t k);
int64_t tc__ox_geti(const tc__oxc *c, int64_t k);
/* Input element offsets for an output of rank r: st[d] is the input stride of output dim d. */
int64_t tc__ox_off(const int64_t *odims, int r, const int64_t *st, int64_t k);
/* Strides of c broadcast (right-aligned, size-1 dims stride 0) to rank r. */
void tc__ox_bstrides(const tc__oxc *c, int r, int64_t *st);
/* o[k] = in[j], converting between the two element types. */
void tc__ox_copy_el(tc__oxc *o, int64_t k, const tc__oxc *in, int64_t j);
/* o[k] = in[base + off(k)] for every k. */
void tc__ox_strided(tc__oxc *o, const tc__oxc *in, int64_t base, const int64_t *st);
/* Row-major strides of dims (rank r) into st. */
void tc__ox_strides(const int64_t *dims, int r, int64_t *st);

/* ---- folds: each computes node n's outputs from its constant inputs in[0..nin) (NULL for one not
 * given); *big = 1 when a result would exceed TC__OX_FOLD_MAX elements (the node is left to the
 * converters) ---- */
/* Element-wise (onnx_fold_math.c): Identity and Dropout, the binary arithmetic, comparison and logic
 * ops, Where, and the unary float math. */
th_status tc__ox_f_identity(tc__ox *x, const Onnx__NodeProto *n, tc__oxc **in, int nin, int *big);
th_status tc__ox_f_binary(tc__ox *x, const Onnx__NodeProto *n, tc__oxc **in, int nin, int *big);
th_status tc__ox_f_where(tc__ox *x, const Onnx__NodeProto *n, tc__oxc **in, int nin, int *big);
th_status tc__ox_f_unary(tc__ox *x, const Onnx__NodeProto *n, tc__oxc **in, int nin, int *big);

#endif
