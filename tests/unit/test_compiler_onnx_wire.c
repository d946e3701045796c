/* Tests of the ONNX importer's defences against hostile files (compiler/import/onnx_wire.c and the
 * attribute checks): the wire scan accepts every test model with an allocation bound that holds for
 * what protobuf-c really allocates, and refuses, before anything is allocated and with the limit
 * named, a graph nested through attributes, messages nested too deep, a node bomb, an allocation
 * bomb and malformed wire data; protobuf-c's byte budget stops an unpack on its own; a non-finite
 * float attribute is refused with the node and the attribute named. Hostile files are written
 * backwards (a message's length comes before it) by the small writer below. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.h"
#include "onnx_build.h"
#include "onnx_int.h"
#include "th_test.h"

/* ---- a backwards protobuf writer
 * ------------------------------------------------------------------------------ */

typedef struct tw {
  uint8_t *buf;
  size_t cap, pos; /* the bytes are buf[pos..cap) */
} tw;

static void tw_init(tw *w, size_t cap) {
  w->buf = malloc(cap);
  w->cap = w->pos = cap;
}

static void tw_byte(tw *w, uint8_t b) {
  if (w->pos == 0) abort(); /* a test sized its buffer wrong */
  w->buf[--w->pos] = b;
}

static void tw_varint(tw *w, uint64_t v) {
  uint8_t t[10];
  int k = 0;
  do {
    t[k++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    v >>= 7;
  } while (v);
  while (k > 0) tw_byte(w, t[--k]);
}

/* The field `num` of wire type 2 whose payload is buf[pos..end). */
static void tw_wrap(tw *w, int num, size_t end) {
  tw_varint(w, end - w->pos);
  tw_varint(w, (uint64_t)num << 3 | 2);
}

static void tw_int(tw *w, int num, uint64_t v) {
  tw_varint(w, v);
  tw_varint(w, (uint64_t)num << 3);
}

/* ModelProto fields around a graph already written in buf[pos..end): ir_version 8, opset 13. */
static uint8_t *tw_model(tw *w, size_t end, size_t *len) {
  tw_wrap(w, 7, end);
  size_t op_end = w->pos;
  tw_int(w, 2, 13);
  tw_wrap(w, 8, op_end);
  tw_int(w, 1, 8);
  *len = w->cap - w->pos;
  uint8_t *p = malloc(*len);
  memcpy(p, w->buf + w->pos, *len);
  free(w->buf);
  return p;
}

/* A graph whose one node holds a graph attribute holding a graph ... `levels` graphs in all; the
 * innermost is empty. Every level ends where the file does, so each length is the rest. */
static uint8_t *tw_nested(int levels, size_t *len) {
  tw w;
  tw_init(&w, (size_t)levels * 24 + 64);
  size_t end = w.cap;
  for (int i = 1; i < levels; i++) {
    tw_wrap(&w, 6, end); /* AttributeProto.g */
    tw_int(&w, 20, 5);   /* type GRAPH */
    tw_byte(&w, 'g');
    tw_byte(&w, 1);
    tw_byte(&w, 0x0a);   /* name "g" */
    tw_wrap(&w, 5, end); /* NodeProto.attribute */
    tw_byte(&w, 'f');
    tw_byte(&w, 'I');
    tw_byte(&w, 2);
    tw_byte(&w, 0x22);   /* op_type "If" */
    tw_wrap(&w, 1, end); /* GraphProto.node */
  }
  return tw_model(&w, end, len);
}

/* A graph of `nodes` NodeProtos, each with `inputs` empty input names (0: empty nodes). */
static uint8_t *tw_bomb(int64_t nodes, int inputs, size_t *len) {
  tw w;
  tw_init(&w, (size_t)nodes * (2 * (size_t)inputs + 4) + 64);
  size_t end = w.cap;
  for (int64_t i = 0; i < nodes; i++) {
    size_t node_end = w.pos;
    for (int k = 0; k < inputs; k++) {
      tw_byte(&w, 0);
      tw_byte(&w, 0x0a); /* NodeProto.input "" */
    }
    tw_wrap(&w, 1, node_end); /* GraphProto.node */
  }
  return tw_model(&w, end, len);
}

/* A graph input whose type nests sequence_type.elem_type `levels` times. */
static uint8_t *tw_deep_type(int levels, size_t *len) {
  tw w;
  tw_init(&w, (size_t)levels * 8 + 64);
  size_t end = w.cap;
  for (int i = 0; i < levels; i++) {
    tw_wrap(&w, 1, end); /* Sequence.elem_type: a TypeProto */
    tw_wrap(&w, 4, end); /* TypeProto.sequence_type */
  }
  tw_wrap(&w, 2, end);  /* ValueInfoProto.type */
  tw_wrap(&w, 11, end); /* GraphProto.input */
  return tw_model(&w, end, len);
}

/* ---- helpers
 * ------------------------------------------------------------------------------------------ */

/* Scans and imports p, expecting `want_rc` from the import and, on an error, `want` in the scan's
 * message (scan_refuses) and in the import's. */
static void tt_refused(const uint8_t *p, size_t len, int scan_refuses, th_status want_rc,
                       const char *want) {
  char err[1024] = "";
  th_status rc = tc__ox_wire_scan(p, len, NULL, err, sizeof err);
  fprintf(stderr, "scan of %zu bytes: %s %s\n", len, th_status_name(rc), err);
  CHECK_EQ_INT(rc, scan_refuses ? TH_ERR_INVALID : TH_OK);
  if (scan_refuses) CHECK(strstr(err, want) != NULL);
  tc_onnx_opts o = {"hostile", 1, NULL, 1};
  tc_graph *g = NULL;
  rc = tc_onnx_import(p, len, &o, &g, NULL, err, sizeof err);
  fprintf(stderr, "import: %s %s\n", th_status_name(rc), err);
  CHECK_EQ_INT(rc, want_rc);
  CHECK(g == NULL);
  int found = want && strstr(err, want) != NULL;
  if (!found) fprintf(stderr, "  missing '%s'\n", want ? want : "(null)");
  CHECK(found);
}

/* ---- tests
 * -------------------------------------------------------------------------------------------- */

/* Every test model passes the scan, and protobuf-c under the budget allocates no more than the
 * scan's bound at its peak. */
TH_TEST(scan_accepts_test_models) {
  uint8_t *(*const opset_models[])(int64_t, size_t *) = {tb_model_cnn, tb_model_transformer,
                                                         tb_model_views, tb_model_activations};
  uint8_t *(*const fixed[])(size_t *) = {tb_model_cnn_variants, tb_model_tensor_variants,
                                         tb_model_embedding, tb_model_preact};
  static const int64_t opsets[] = {9, 11, 13, 14, 17};
  size_t nm = sizeof opset_models / sizeof opset_models[0], nf = sizeof fixed / sizeof fixed[0];
  for (size_t m = 0; m < nm * 5 + nf; m++) {
    size_t len;
    uint8_t *p = m < nm * 5 ? opset_models[m / 5](opsets[m % 5], &len) : fixed[m - nm * 5](&len);
    tc__ox_wire w;
    char err[512];
    th_status rc = tc__ox_wire_scan(p, len, &w, err, sizeof err);
    if (rc != TH_OK) fprintf(stderr, "model %zu: %s\n", m, err);
    CHECK_EQ_INT(rc, TH_OK);
    tc__ox_budget b;
    tc__ox_budget_init(&b, tc__ox_wire_budget(len));
    Onnx__ModelProto *mp = onnx__model_proto__unpack(&b.pa, len, p);
    CHECK(mp != NULL && !b.over);
    fprintf(stderr, "model %zu: %zu bytes, %lld nodes, depth %d, bound %zu, peak %zu\n", m, len,
            (long long)w.nodes, w.depth, w.alloc, b.peak);
    CHECK(mp && (int64_t)mp->graph->n_node == w.nodes);
    CHECK(b.peak <= w.alloc && b.peak > 0);
    onnx__model_proto__free_unpacked(mp, &b.pa);
    CHECK(b.used == 0);
    free(p);
  }
  return 0;
}

/* 3,000 graphs nested through node attributes (the file that overflowed protobuf-c's stack): the
 * fifth level is refused; four levels pass the scan and reach the importer's own checks. */
TH_TEST(scan_refuses_graph_nesting) {
  size_t len;
  uint8_t *p = tw_nested(3000, &len);
  fprintf(stderr, "3000 levels: %zu bytes\n", len);
  tt_refused(p, len, 1, TH_ERR_INVALID, "graph nesting deeper than 4 levels");
  free(p);
  p = tw_nested(TC_ONNX_MAX_GRAPH_DEPTH + 1, &len);
  tt_refused(p, len, 1, TH_ERR_INVALID, "graph nesting deeper than 4 levels");
  free(p);
  p = tw_nested(TC_ONNX_MAX_GRAPH_DEPTH, &len);
  tt_refused(p, len, 0, TH_ERR_INVALID, "the graph has no outputs");
  free(p);
  return 0;
}

/* Types nested in types (no graph in between) stop at the message depth. */
TH_TEST(scan_refuses_message_depth) {
  size_t len;
  uint8_t *p = tw_deep_type(2000, &len);
  tt_refused(p, len, 1, TH_ERR_INVALID, "messages nested deeper than 32 levels");
  free(p);
  return 0;
}

/* One node past TC_ONNX_MAX_NODES (the 10 MB bomb of 5,000,000 scaled down) is refused by the scan,
 * before protobuf-c allocates one node. */
TH_TEST(scan_refuses_node_bomb) {
  size_t len;
  uint8_t *p = tw_bomb(TC_ONNX_MAX_NODES + 1, 0, &len);
  tt_refused(p, len, 1, TH_ERR_INVALID, "more than 100000 nodes");
  free(p);
  return 0;
}

/* 8 MB of empty input names (each 2 bytes of file, about 90 bytes of protobuf-c's memory) under
 * every count limit: refused for the allocation it would cost. */
TH_TEST(scan_refuses_allocation_bomb) {
  size_t len;
  uint8_t *p = tw_bomb(1000, 4000, &len);
  tt_refused(p, len, 1, TH_ERR_INVALID, "protobuf would allocate more than");
  free(p);
  return 0;
}

/* The budget on its own: protobuf-c stops when an allocation would pass it, and frees through the
 * budget all it had allocated. */
TH_TEST(budget_stops_protobuf_c) {
  size_t len;
  uint8_t *p = tb_model_transformer(13, &len);
  tc__ox_budget b;
  tc__ox_budget_init(&b, 4096);
  Onnx__ModelProto *m = onnx__model_proto__unpack(&b.pa, len, p);
  CHECK(m == NULL && b.over);
  CHECK(b.used == 0);
  free(p);
  return 0;
}

/* Malformed wire data, each refused with what is wrong; and every prefix of a test model is
 * refused by the scan exactly when protobuf-c refuses it. */
TH_TEST(scan_refuses_malformed) {
  static const struct {
    const char *bytes;
    size_t len;
    const char *want;
  } bad[] = {
      {"\x08\x80", 2, "truncated"}, /* ir_version's varint cut */
      {"\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12, "over 10 bytes"},
      {"\x3a\x05\x0a\x00", 4, "past the end"},                    /* graph: 5 bytes, 2 there */
      {"\x3d\x00\x00\x00\x00", 5, "wire type 5 (32-bit), not 2"}, /* graph as a float */
      {"\x0b", 1, "wire type 3 (group start)"},
      {"\x00\x01", 2, "field number 0"},
      {"\x3a\x02\x0a\x05", 4, "past the end"}, /* a node longer than its graph */
      {"\x3a\x00\x3a\x00", 4, "occurs twice"}, /* two graphs */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    tt_refused((const uint8_t *)bad[i].bytes, bad[i].len, 1, TH_ERR_INVALID, bad[i].want);
  size_t len;
  uint8_t *p = tb_model_cnn(13, &len);
  int refused = 0;
  for (size_t k = 0; k < len; k++) {
    char err[512];
    int scan_ok = tc__ox_wire_scan(p, k, NULL, err, sizeof err) == TH_OK;
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, k, p);
    if (scan_ok != (m != NULL))
      fprintf(stderr, "prefix %zu: scan %d, protobuf-c %d: %s\n", k, scan_ok, m != NULL, err);
    CHECK(scan_ok == (m != NULL));
    refused += !scan_ok;
    if (m) onnx__model_proto__free_unpacked(m, NULL);
  }
  fprintf(stderr, "%d of %zu prefixes refused\n", refused, len);
  CHECK(refused > 0);
  free(p);
  return 0;
}

/* A BatchNormalization epsilon of NaN or Inf, and a Gemm alpha of -Inf, are refused at import with
 * the node and the attribute named (before, the import passed and every build failed). */
TH_TEST(non_finite_attribute_refused) {
  static const struct {
    const char *op, *attr;
    float v;
    const char *want;
  } cases[] = {{"BatchNormalization", "epsilon", NAN, "attribute 'epsilon' is NaN"},
               {"BatchNormalization", "epsilon", INFINITY, "attribute 'epsilon' is +Inf"},
               {"Gemm", "alpha", -INFINITY, "attribute 'alpha' is -Inf"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tb *b = tb_new(13);
    int64_t xd[2] = {-1, 4}, c4[1] = {4}, wd[2] = {4, 4};
    tb_input(b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, xd);
    Onnx__NodeProto *n;
    if (strcmp(cases[i].op, "Gemm") == 0) {
      tb_param(b, "w", 2, wd, 0);
      n = tb_node(b, "Gemm", "fc", "x,w", "y");
    } else {
      tb_param(b, "s", 1, c4, 1);
      tb_param(b, "bb", 1, c4, 0);
      tb_param(b, "m", 1, c4, 0);
      tb_param(b, "v", 1, c4, 1);
      n = tb_node(b, "BatchNormalization", "bn", "x,s,bb,m,v", "y");
    }
    tb_attr_f(b, n, cases[i].attr, cases[i].v);
    tb_output(b, "y");
    size_t len;
    uint8_t *p = tb_pack(b, &len);
    tb_free(b);
    char want[160];
    snprintf(want, sizeof want, "node '%s' (%s): %s", strcmp(cases[i].op, "Gemm") ? "bn" : "fc",
             cases[i].op, cases[i].want);
    tt_refused(p, len, 0, TH_ERR_INVALID, want);
    free(p);
  }
  return 0;
}
