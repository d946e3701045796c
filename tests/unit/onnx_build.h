/* A small builder of ONNX models in C for the importer's tests and the fuzzer's seed corpus:
 * protoc-c's structs filled by hand and packed with onnx__model_proto__pack, so the tests need no
 * Python and no onnx package. Everything a builder allocates is freed by tb_free; the packed bytes
 * are the caller's. */
#ifndef TEST_ONNX_BUILD_H
#define TEST_ONNX_BUILD_H

#include <stddef.h>
#include <stdint.h>

#include "onnx/onnx.pb-c.h"

typedef struct tb tb;

/* A model with ir_version 8 and one opset import of the default domain (opset <= 0: none). */
tb *tb_new(int64_t opset);
void tb_free(tb *b);
Onnx__ModelProto *tb_model(tb *b);
/* A graph input; dims[i] < 0 is symbolic ("N" for the first, "d<i>" after), ndim < 0: no shape. */
void tb_input(tb *b, const char *name, int elem_type, int ndim, const int64_t *dims);
void tb_output(tb *b, const char *name);
/* Initializers (raw_data, little-endian). */
Onnx__TensorProto *tb_init_f(tb *b, const char *name, int ndim, const int64_t *dims,
                             const float *data);
Onnx__TensorProto *tb_init_i(tb *b, const char *name, int ndim, const int64_t *dims,
                             const int64_t *data);
/* A tensor for a Constant's value attribute (not added to the graph). */
Onnx__TensorProto *tb_tensor_f(tb *b, int ndim, const int64_t *dims, const float *data);
Onnx__TensorProto *tb_tensor_i(tb *b, int ndim, const int64_t *dims, const int64_t *data);
/* A node; inputs and outputs are comma-separated names ("" entries are omitted optional inputs). */
Onnx__NodeProto *tb_node(tb *b, const char *op, const char *name, const char *inputs,
                         const char *outputs);
void tb_attr_i(tb *b, Onnx__NodeProto *n, const char *name, int64_t v);
void tb_attr_f(tb *b, Onnx__NodeProto *n, const char *name, float v);
void tb_attr_s(tb *b, Onnx__NodeProto *n, const char *name, const char *v);
void tb_attr_ints(tb *b, Onnx__NodeProto *n, const char *name, int count, const int64_t *v);
void tb_attr_t(tb *b, Onnx__NodeProto *n, const char *name, Onnx__TensorProto *t);
/* Constant nodes for scalars and int64 vectors. */
void tb_const_f(tb *b, const char *out, float v);
void tb_const_ints(tb *b, const char *out, int count, const int64_t *v);
/* The packed model (malloc'd). */
uint8_t *tb_pack(tb *b, size_t *len);

/* Deterministic values in [-1, 1). */
void tb_fill(float *x, int64_t n, uint64_t seed);
/* The data of the test models' initializer `name`: tb_fill seeded by the name; positive: in
 * [0.5, 1.5). */
void tb_data(const char *name, int64_t n, int positive, float *out);
/* A float initializer filled by tb_data. */
void tb_param(tb *b, const char *name, int ndim, const int64_t *dims, int positive);

/* The test models (packed, malloc'd), shared by the unit tests and the fuzzer's corpus. */
uint8_t *tb_model_cnn(int64_t opset, size_t *len);
uint8_t *tb_model_transformer(int64_t opset, size_t *len);
uint8_t *tb_model_views(int64_t opset, size_t *len);
uint8_t *tb_model_cnn_variants(size_t *len);
uint8_t *tb_model_tensor_variants(size_t *len);
uint8_t *tb_model_activations(int64_t opset, size_t *len);
uint8_t *tb_model_embedding(size_t *len);
uint8_t *tb_model_preact(size_t *len);

#endif
