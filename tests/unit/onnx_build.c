/* The ONNX model builder of onnx_build.h: every allocation goes on a list that tb_free releases,
 * since protoc-c's structs are plain C with arrays of pointers and no owner of their own. */
#include "onnx_build.h"

#include <stdlib.h>
#include <string.h>

struct tb {
  Onnx__ModelProto m;
  Onnx__GraphProto g;
  Onnx__OperatorSetIdProto opset;
  Onnx__OperatorSetIdProto *opsets[1];
  void **allocs;
  size_t nallocs, cap;
};

static void *tb_keep(tb *b, void *p) {
  if (!p) abort();
  if (b->nallocs == b->cap) {
    b->cap = b->cap ? b->cap * 2 : 64;
    b->allocs = realloc(b->allocs, b->cap * sizeof *b->allocs);
    if (!b->allocs) abort();
  }
  b->allocs[b->nallocs++] = p;
  return p;
}

static void *tb_alloc(tb *b, size_t n) {
  return tb_keep(b, calloc(1, n ? n : 1));
}

static char *tb_str(tb *b, const char *s) {
  return strcpy(tb_alloc(b, strlen(s) + 1), s);
}

/* Appends p to an array of pointers (*arr, *n), both kept by b. */
static void tb_push(tb *b, void ***arr, size_t *n, void *p) {
  void **na = tb_alloc(b, (*n + 1) * sizeof *na);
  if (*n) memcpy(na, *arr, *n * sizeof *na);
  na[(*n)++] = p;
  *arr = na;
}

tb *tb_new(int64_t opset) {
  tb *b = calloc(1, sizeof *b);
  if (!b) abort();
  onnx__model_proto__init(&b->m);
  onnx__graph_proto__init(&b->g);
  onnx__operator_set_id_proto__init(&b->opset);
  b->m.has_ir_version = 1;
  b->m.ir_version = 8;
  b->m.producer_name = (char *)"tunehub-test";
  b->m.producer_version = (char *)"1";
  b->m.graph = &b->g;
  b->g.name = (char *)"test";
  if (opset > 0) {
    b->opset.domain = (char *)"";
    b->opset.has_version = 1;
    b->opset.version = opset;
    b->opsets[0] = &b->opset;
    b->m.n_opset_import = 1;
    b->m.opset_import = b->opsets;
  }
  return b;
}

void tb_free(tb *b) {
  if (!b) return;
  for (size_t i = 0; i < b->nallocs; i++) free(b->allocs[i]);
  free(b->allocs);
  free(b);
}

Onnx__ModelProto *tb_model(tb *b) {
  return &b->m;
}

void tb_input(tb *b, const char *name, int elem_type, int ndim, const int64_t *dims) {
  Onnx__ValueInfoProto *v = tb_alloc(b, sizeof *v);
  onnx__value_info_proto__init(v);
  v->name = tb_str(b, name);
  Onnx__TypeProto *tp = tb_alloc(b, sizeof *tp);
  onnx__type_proto__init(tp);
  Onnx__TypeProto__Tensor *tt = tb_alloc(b, sizeof *tt);
  onnx__type_proto__tensor__init(tt);
  tt->has_elem_type = 1;
  tt->elem_type = elem_type;
  if (ndim >= 0) {
    Onnx__TensorShapeProto *sh = tb_alloc(b, sizeof *sh);
    onnx__tensor_shape_proto__init(sh);
    for (int d = 0; d < ndim; d++) {
      Onnx__TensorShapeProto__Dimension *dm = tb_alloc(b, sizeof *dm);
      onnx__tensor_shape_proto__dimension__init(dm);
      if (dims[d] >= 0) {
        dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        dm->dim_value = dims[d];
      } else {
        char nm[16] = "N";
        if (d > 0) {
          nm[0] = 'd';
          nm[1] = (char)('0' + d);
          nm[2] = '\0';
        }
        dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
        dm->dim_param = tb_str(b, nm);
      }
      tb_push(b, (void ***)&sh->dim, &sh->n_dim, dm);
    }
    tt->shape = sh;
  }
  tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  tp->tensor_type = tt;
  v->type = tp;
  tb_push(b, (void ***)&b->g.input, &b->g.n_input, v);
}

void tb_output(tb *b, const char *name) {
  Onnx__ValueInfoProto *v = tb_alloc(b, sizeof *v);
  onnx__value_info_proto__init(v);
  v->name = tb_str(b, name);
  tb_push(b, (void ***)&b->g.output, &b->g.n_output, v);
}

static Onnx__TensorProto *tb_tensor(tb *b, int type, int ndim, const int64_t *dims,
                                    const void *data, size_t es) {
  Onnx__TensorProto *t = tb_alloc(b, sizeof *t);
  onnx__tensor_proto__init(t);
  t->has_data_type = 1;
  t->data_type = type;
  t->n_dims = (size_t)ndim;
  t->dims = tb_alloc(b, (size_t)(ndim ? ndim : 1) * sizeof *t->dims);
  size_t n = 1;
  for (int d = 0; d < ndim; d++) {
    t->dims[d] = dims[d];
    n *= (size_t)dims[d];
  }
  t->has_raw_data = 1;
  t->raw_data.len = n * es;
  t->raw_data.data = tb_alloc(b, n * es);
  if (n) memcpy(t->raw_data.data, data, n * es);
  return t;
}

Onnx__TensorProto *tb_tensor_f(tb *b, int ndim, const int64_t *dims, const float *data) {
  return tb_tensor(b, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, ndim, dims, data, 4);
}

Onnx__TensorProto *tb_tensor_i(tb *b, int ndim, const int64_t *dims, const int64_t *data) {
  return tb_tensor(b, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, ndim, dims, data, 8);
}

Onnx__TensorProto *tb_init_f(tb *b, const char *name, int ndim, const int64_t *dims,
                             const float *data) {
  Onnx__TensorProto *t = tb_tensor_f(b, ndim, dims, data);
  t->name = tb_str(b, name);
  tb_push(b, (void ***)&b->g.initializer, &b->g.n_initializer, t);
  return t;
}

Onnx__TensorProto *tb_init_i(tb *b, const char *name, int ndim, const int64_t *dims,
                             const int64_t *data) {
  Onnx__TensorProto *t = tb_tensor_i(b, ndim, dims, data);
  t->name = tb_str(b, name);
  tb_push(b, (void ***)&b->g.initializer, &b->g.n_initializer, t);
  return t;
}

/* Splits "a,b,,c" into the names array (empty entries kept as ""). */
static void tb_names(tb *b, const char *list, char ***arr, size_t *n) {
  *arr = NULL;
  *n = 0;
  if (!list || !list[0]) return;
  const char *s = list;
  for (;;) {
    const char *e = strchr(s, ',');
    size_t len = e ? (size_t)(e - s) : strlen(s);
    char *nm = tb_alloc(b, len + 1);
    memcpy(nm, s, len);
    tb_push(b, (void ***)arr, n, nm);
    if (!e) break;
    s = e + 1;
  }
}

Onnx__NodeProto *tb_node(tb *b, const char *op, const char *name, const char *inputs,
                         const char *outputs) {
  Onnx__NodeProto *n = tb_alloc(b, sizeof *n);
  onnx__node_proto__init(n);
  n->op_type = tb_str(b, op);
  n->name = tb_str(b, name ? name : "");
  tb_names(b, inputs, &n->input, &n->n_input);
  tb_names(b, outputs, &n->output, &n->n_output);
  tb_push(b, (void ***)&b->g.node, &b->g.n_node, n);
  return n;
}

static Onnx__AttributeProto *tb_attr(tb *b, Onnx__NodeProto *n, const char *name, int type) {
  Onnx__AttributeProto *a = tb_alloc(b, sizeof *a);
  onnx__attribute_proto__init(a);
  a->name = tb_str(b, name);
  a->has_type = 1;
  a->type = type;
  tb_push(b, (void ***)&n->attribute, &n->n_attribute, a);
  return a;
}

void tb_attr_i(tb *b, Onnx__NodeProto *n, const char *name, int64_t v) {
  Onnx__AttributeProto *a = tb_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
  a->has_i = 1;
  a->i = v;
}

void tb_attr_f(tb *b, Onnx__NodeProto *n, const char *name, float v) {
  Onnx__AttributeProto *a = tb_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
  a->has_f = 1;
  a->f = v;
}

void tb_attr_s(tb *b, Onnx__NodeProto *n, const char *name, const char *v) {
  Onnx__AttributeProto *a = tb_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
  a->has_s = 1;
  a->s.len = strlen(v);
  a->s.data = (uint8_t *)tb_str(b, v);
}

void tb_attr_ints(tb *b, Onnx__NodeProto *n, const char *name, int count, const int64_t *v) {
  Onnx__AttributeProto *a = tb_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
  a->n_ints = (size_t)count;
  a->ints = tb_alloc(b, (size_t)(count ? count : 1) * sizeof *a->ints);
  if (count) memcpy(a->ints, v, (size_t)count * sizeof *v);
}

void tb_attr_t(tb *b, Onnx__NodeProto *n, const char *name, Onnx__TensorProto *t) {
  Onnx__AttributeProto *a = tb_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
  a->t = t;
}

void tb_const_f(tb *b, const char *out, float v) {
  Onnx__NodeProto *n = tb_node(b, "Constant", out, "", out);
  tb_attr_t(b, n, "value", tb_tensor_f(b, 0, NULL, &v));
}

void tb_const_ints(tb *b, const char *out, int count, const int64_t *v) {
  Onnx__NodeProto *n = tb_node(b, "Constant", out, "", out);
  int64_t d = count;
  tb_attr_t(b, n, "value", tb_tensor_i(b, 1, &d, v));
}

uint8_t *tb_pack(tb *b, size_t *len) {
  *len = onnx__model_proto__get_packed_size(&b->m);
  uint8_t *p = malloc(*len ? *len : 1);
  if (!p) abort();
  onnx__model_proto__pack(&b->m, p);
  return p;
}

void tb_fill(float *x, int64_t n, uint64_t seed) {
  for (int64_t i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    x[i] = (float)((seed >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
  }
}

void tb_data(const char *name, int64_t n, int positive, float *out) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (const char *s = name; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001B3ull;
  tb_fill(out, n, h);
  if (positive)
    for (int64_t i = 0; i < n; i++) out[i] = 1.0f + out[i] * 0.5f;
}

void tb_param(tb *b, const char *name, int ndim, const int64_t *dims, int positive) {
  int64_t n = 1;
  for (int d = 0; d < ndim; d++) n *= dims[d];
  float *v = malloc((size_t)(n ? n : 1) * sizeof *v);
  if (!v) abort();
  tb_data(name, n, positive, v);
  tb_init_f(b, name, ndim, dims, v);
  free(v);
}
