/* libFuzzer target of the ONNX importer, under ASan and UBSan, in modes picked by the first
 * byte:
 * - raw: any bytes go through tc_onnx_import as a file (the parser, validation and everything
 * after);
 * - grammar (first byte 0xA5): the bytes are a program that builds a well-formed model with the
 * tests' builder (tests/unit/onnx_build.c) from the ops and attributes the importer knows, with
 * small random shapes, inputs, attribute values and opsets, so that mutations reach the converters
 * and folds instead of stopping at the protobuf parser. An import either succeeds, and the graph is
 * then read back (every parameter's data, topological order) so that a wrong size shows as an ASan
 * report, or fails with a message; it never crashes, leaks or hangs. Built by tests/fuzz/fuzz.cmake
 * with clang-16.
 * A grammar program may also wrap its graph in up to 15 graphs, each the then_branch of an If node,
 * so that mutations reach the wire scan's depth limits (compiler/import/onnx_wire.c); and a third
 * mode, repeat (first byte 0xA7), expands a few bytes into a large file (a prefix, a pattern
 * repeated up to 16 MiB, a suffix), so that a bomb of millions of messages fits in a small seed or
 * regression. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "onnx.h"
#include "onnx_build.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fz_import(const uint8_t *data, size_t size) {
  tc_onnx_opts o = {"fuzz", 1, NULL, 1};
  tc_graph *g = NULL;
  tc_onnx_info info;
  char err[1024];
  if (tc_onnx_import(data, size, &o, &g, &info, err, sizeof err) != TH_OK) {
    if (g || !memchr(err, '\0', sizeof err) || !err[0])
      __builtin_trap(); /* a failure always says why */
    return;
  }
  volatile float sink = 0;
  for (int i = 0; i < g->nparams; i++)
    for (int64_t k = 0; k < g->params[i].numel; k += 1 + g->params[i].numel / 16)
      sink += g->params[i].data[k];
  for (int i = 0; i < g->nnodes; i++)
    for (int k = 0; k < g->nodes[i].ninputs; k++)
      if (g->nodes[i].inputs[k] < 0 || g->nodes[i].inputs[k] >= i)
        __builtin_trap(); /* topological order */
  (void)sink;
  tc_graph_free(g);
}

/* ---- grammar mode
 * ------------------------------------------------------------------------------------- */

typedef struct fz {
  const uint8_t *p;
  size_t n, at;
} fz;

static int fz_byte(fz *f) {
  return f->at < f->n ? f->p[f->at++] : 0;
}

/* A small signed value: mostly 0..4, sometimes negative or large. */
static int64_t fz_int(fz *f) {
  int b = fz_byte(f);
  if (b < 200) return b % 5;
  if (b < 240) return -(b % 4) - 1;
  return (int64_t)1 << (b % 40);
}

static const char *const fz_ops[] = {
    "Conv",
    "BatchNormalization",
    "Relu",
    "Tanh",
    "Sigmoid",
    "HardSigmoid",
    "HardSwish",
    "Clip",
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Pow",
    "Sqrt",
    "Erf",
    "MaxPool",
    "AveragePool",
    "GlobalAveragePool",
    "Pad",
    "Gemm",
    "MatMul",
    "Flatten",
    "Reshape",
    "Squeeze",
    "Unsqueeze",
    "Transpose",
    "Concat",
    "Split",
    "Slice",
    "Gather",
    "Cast",
    "Expand",
    "ReduceMean",
    "Softmax",
    "LayerNormalization",
    "Dropout",
    "Identity",
    "Shape",
    "Size",
    "ConstantOfShape",
    "Range",
    "Where",
    "Equal",
    "Less",
    "Greater",
    "Not",
    "Neg",
    "Min",
    "Max",
    "Mod",
    "Constant",
};
static const char *const fz_iattrs[] = {"axis",      "group",  "keepdims",  "to",
                                        "transA",    "transB", "ceil_mode", "count_include_pad",
                                        "allowzero", "start",  "end",       "value_int"};
static const char *const fz_lattrs[] = {"axes", "perm",      "kernel_shape", "strides",
                                        "pads", "dilations", "split",        "starts",
                                        "ends", "value_ints"};
static const char *const fz_fattrs[] = {"epsilon", "alpha", "beta", "min", "max", "value_float"};

enum { FZ_WRAP_MAX = 15 };

/* The packed model of b with its graph wrapped in `levels` graphs: each holds one If node whose
 * then_branch is the graph inside, and the innermost graph's inputs and outputs (shared, not
 * copied: b still owns everything it built). */
static uint8_t *fz_pack_wrapped(tb *b, int levels, size_t *len) {
  static char if_op[] = "If", then_name[] = "then_branch";
  Onnx__GraphProto wg[FZ_WRAP_MAX];
  Onnx__NodeProto wn[FZ_WRAP_MAX], *wnp[FZ_WRAP_MAX];
  Onnx__AttributeProto wa[FZ_WRAP_MAX], *wap[FZ_WRAP_MAX];
  Onnx__ModelProto *m = tb_model(b);
  Onnx__GraphProto *inner = m->graph, *cur = inner;
  for (int i = 0; i < levels && i < FZ_WRAP_MAX && inner; i++) {
    onnx__attribute_proto__init(&wa[i]);
    wa[i].name = then_name;
    wa[i].has_type = 1;
    wa[i].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
    wa[i].g = cur;
    wap[i] = &wa[i];
    onnx__node_proto__init(&wn[i]);
    wn[i].op_type = if_op;
    wn[i].n_attribute = 1;
    wn[i].attribute = &wap[i];
    wnp[i] = &wn[i];
    onnx__graph_proto__init(&wg[i]);
    wg[i].n_node = 1;
    wg[i].node = &wnp[i];
    wg[i].n_input = inner->n_input;
    wg[i].input = inner->input;
    wg[i].n_output = inner->n_output;
    wg[i].output = inner->output;
    cur = &wg[i];
  }
  m->graph = cur;
  uint8_t *p = tb_pack(b, len);
  m->graph = inner;
  return p;
}

static void fz_grammar(const uint8_t *data, size_t size) {
  fz f = {data, size, 1};
  tb *b = tb_new(7 + fz_byte(&f) % 11);
  int wrap = fz_byte(&f);
  wrap = wrap >= 0xF0 ? wrap - 0xF0 : 0; /* one program in 16 nests its graph */
  char names[64][8];
  int nv = 0;
  int64_t dims[4] = {-1, 1 + fz_byte(&f) % 4, 1 + fz_byte(&f) % 6, 1 + fz_byte(&f) % 6};
  int rank = 2 + fz_byte(&f) % 3;
  tb_input(
      b, "x",
      fz_byte(&f) % 4 ? ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT : ONNX__TENSOR_PROTO__DATA_TYPE__INT64,
      rank, dims);
  snprintf(names[nv++], 8, "x");
  int ninit = fz_byte(&f) % 4;
  for (int i = 0; i < ninit && nv < 64; i++) { /* constants: float tensors or int64 vectors */
    snprintf(names[nv], 8, "c%d", i);
    int r = fz_byte(&f) % 5;
    int64_t d[4], n = 1;
    for (int k = 0; k < r; k++) n *= d[k] = fz_byte(&f) % 5;
    if (fz_byte(&f) % 2) {
      float v[256];
      for (int64_t k = 0; k < n && k < 256; k++) v[k] = (float)fz_int(&f) * 0.5f;
      if (n <= 256) tb_init_f(b, names[nv++], r, d, v);
    } else {
      int64_t v[8];
      int cnt = fz_byte(&f) % 8;
      for (int k = 0; k < cnt; k++) v[k] = fz_int(&f);
      tb_const_ints(b, names[nv++], cnt, v);
    }
  }
  int nodes = 1 + fz_byte(&f) % 12;
  for (int i = 0; i < nodes && nv < 60 && f.at < f.n; i++) {
    const char *op = fz_ops[fz_byte(&f) % (sizeof fz_ops / sizeof fz_ops[0])];
    char ins[64] = "", outs[32], nm[16];
    int nin = fz_byte(&f) % 4, nout = 1 + (fz_byte(&f) % 8 == 0);
    for (int k = 0; k < nin; k++) {
      size_t len = strlen(ins);
      snprintf(ins + len, sizeof ins - len, "%s%s", k ? "," : "",
               fz_byte(&f) % 9 ? names[fz_byte(&f) % nv] : "");
    }
    snprintf(outs, sizeof outs, "v%d", nv);
    if (nout == 2) snprintf(outs + strlen(outs), sizeof outs - strlen(outs), ",v%d", nv + 1);
    snprintf(nm, sizeof nm, "n%d", i);
    Onnx__NodeProto *n = tb_node(b, op, nm, ins, outs);
    int nattr = fz_byte(&f) % 4;
    for (int a = 0; a < nattr; a++) {
      int kind = fz_byte(&f) % 3;
      if (kind == 0) {
        tb_attr_i(b, n, fz_iattrs[fz_byte(&f) % (sizeof fz_iattrs / sizeof fz_iattrs[0])],
                  fz_int(&f));
      } else if (kind == 1) {
        int64_t v[8];
        int cnt = fz_byte(&f) % 9;
        for (int k = 0; k < cnt; k++) v[k] = fz_int(&f);
        tb_attr_ints(b, n, fz_lattrs[fz_byte(&f) % (sizeof fz_lattrs / sizeof fz_lattrs[0])], cnt,
                     v);
      } else {
        tb_attr_f(b, n, fz_fattrs[fz_byte(&f) % (sizeof fz_fattrs / sizeof fz_fattrs[0])],
                  (float)fz_int(&f) * 0.25f);
      }
    }
    for (int k = 0; k < nout; k++, nv++) snprintf(names[nv], 8, "v%d", nv);
  }
  int nout = 1 + fz_byte(&f) % 2;
  for (int k = 0; k < nout; k++) tb_output(b, names[nv - 1 - (k < nv - 1 ? k : 0)]);
  size_t len;
  uint8_t *p = fz_pack_wrapped(b, wrap, &len);
  tb_free(b);
  fz_import(p, len);
  free(p);
}

/* ---- repeat mode
 * -------------------------------------------------------------------------------------- */

#define FZ_REPEAT_MAX ((size_t)16 << 20)

/* 0xA7, P, P bytes of prefix, a 4-byte little-endian count C, L (1..255), L bytes of pattern, then
 * the suffix: imports prefix + C x pattern + suffix, C cut so that the whole fits FZ_REPEAT_MAX. */
static void fz_repeat(const uint8_t *data, size_t size) {
  size_t at = 1, plen = at < size ? data[at++] : 0;
  if (size < at + plen + 5) return;
  const uint8_t *prefix = data + at;
  at += plen;
  uint64_t count = (uint64_t)data[at] | (uint64_t)data[at + 1] << 8 | (uint64_t)data[at + 2] << 16 |
                   (uint64_t)data[at + 3] << 24;
  size_t len = data[at + 4];
  at += 5;
  if (len == 0 || size < at + len) return;
  const uint8_t *pattern = data + at, *suffix = data + at + len;
  size_t slen = size - at - len;
  if (plen + slen > FZ_REPEAT_MAX) return;
  size_t room = (FZ_REPEAT_MAX - plen - slen) / len;
  if (count > room) count = room;
  size_t total = plen + (size_t)count * len + slen;
  uint8_t *p = malloc(total ? total : 1);
  if (!p) return;
  memcpy(p, prefix, plen);
  for (uint64_t i = 0; i < count; i++) memcpy(p + plen + i * len, pattern, len);
  memcpy(p + plen + count * len, suffix, slen);
  fz_import(p, total);
  free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 0 && data[0] == 0xA5)
    fz_grammar(data, size);
  else if (size > 0 && data[0] == 0xA7)
    fz_repeat(data, size);
  else
    fz_import(data, size);
  return 0;
}
