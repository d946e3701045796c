/* Tests of the graph side of the compiler: every zoo network builds at batch 1 and 2 with torchvision's
 * parameter counts and the expected FLOPs; params.bin round-trips and rejects bad files; the reference
 * interpreter agrees with hand-computed values. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "params.h"
#include "ref/ref.h"
#include "test_params_util.h"
#include "th_test.h"
#include "zoo.h"

/* torchvision 0.14: sum(p.numel() for p in model.parameters()); inception without aux logits. mobilenet
 * v1 1.0 has Keras's trainable count. FLOPs: 2 x torchvision's published multiply-adds (GFLOPS column),
 * at the default input size. */
static const struct {
  const char *name;
  int64_t params;
  double gmacs;
} tc__known[] = {
    {"resnet-18", 11689512, 1.81},       {"resnet-34", 21797672, 3.66},
    {"resnet-50", 25557032, 4.09},       {"resnet-101", 44549160, 7.80},
    {"resnet-152", 60192808, 11.51},     {"vgg-11", 132863336, 7.61},
    {"vgg-13", 133047848, 11.31},        {"vgg-16", 138357544, 15.47},
    {"vgg-19", 143667240, 19.63},        {"mobilenet", 4231976, 0.569},
    {"mobilenet-v2", 3504872, 0.30},     {"squeezenet_v1.0", 1248424, 0.82},
    {"squeezenet_v1.1", 1235496, 0.35},  {"inception_v3", 23834568, 5.71},
    /* vit_b_16: torchvision's 17.56 GFLOPS; bert-base (BertModel with pooler) at sequence 128: the
     * multiply-adds of its dense and matmul layers, 12 x 128 x (4 x 768^2 + 2 x 768 x 3072 + 2 x 128 x 768)
     * + 768^2 */
    {"vit", 86567656, 17.56},            {"bert", 109482240, 11.174},
};

TH_TEST(zoo_registry) {
  CHECK_EQ_INT(tc_zoo_count(), 16);
  for (size_t i = 0; i < tc_zoo_count(); i++) {
    const tc_zoo_entry *e = tc_zoo_at(i);
    CHECK(e && e->name && e->description && ((e->c == 3 && e->h >= 224) || strcmp(e->name, "bert") == 0));
    CHECK(tc_zoo_find(e->name) == e);
  }
  CHECK(tc_zoo_at(tc_zoo_count()) == NULL);
  CHECK(tc_zoo_find("resnet-19") == NULL);
  CHECK(tc_zoo_find(NULL) == NULL);
  tc_graph *g = NULL;
  char err[512];
  CHECK_EQ_INT(tc_zoo_build("alexnet", 1, 0, 0, 0, &g, err, sizeof err), TH_ERR_NOT_FOUND);
  CHECK(strstr(err, "resnet-18") != NULL); /* lists the valid names */
  CHECK_EQ_INT(tc_zoo_build("resnet-18", 0, 0, 0, 0, &g, err, sizeof err), TH_ERR_INVALID);
  CHECK_EQ_INT(tc_zoo_build("inception_v3", 1, 32, 32, 0, &g, err, sizeof err), TH_ERR_INVALID);
  CHECK(g == NULL);
  return 0;
}

TH_TEST(zoo_params_and_flops) {
  CHECK_EQ_INT(sizeof tc__known / sizeof tc__known[0], tc_zoo_count());
  for (size_t i = 0; i < tc_zoo_count(); i++) {
    double flops = 0;
    int64_t params = 0;
    CHECK_EQ_INT(tc_zoo_info(tc__known[i].name, 1, &flops, &params), TH_OK);
    fprintf(stderr, "%-16s params %10lld  GFLOPs %7.3f (torchvision GMACs x2: %7.3f)\n",
            tc__known[i].name, (long long)params, flops / 1e9, 2 * tc__known[i].gmacs);
    CHECK_EQ_INT(params, tc__known[i].params);
    CHECK(fabs(flops / 1e9 - 2 * tc__known[i].gmacs) < 0.03 * 2 * tc__known[i].gmacs);
    double f2 = 0;
    CHECK_EQ_INT(tc_zoo_info(tc__known[i].name, 2, &f2, NULL), TH_OK);
    CHECK(fabs(f2 - 2 * flops) < 1e-6 * flops);
  }
  return 0;
}

TH_TEST(zoo_builds_batch_1_and_2) {
  for (size_t i = 0; i < tc_zoo_count(); i++) {
    const tc_zoo_entry *e = tc_zoo_at(i);
    for (int b = 1; b <= 2; b++) {
      tc_graph *g = NULL;
      char err[256] = "";
      th_status rc = tc_zoo_build(e->name, b, 0, 0, 0, &g, err, sizeof err);
      if (rc != TH_OK) fprintf(stderr, "%s: %s\n", e->name, err);
      CHECK_EQ_INT(rc, TH_OK);
      const tc_tensor *o = &g->nodes[g->outputs[0]].out;
      if (strcmp(e->name, "bert") == 0) {
        /* three int64 [b, 128] inputs; last_hidden_state [b, 128, 768], pooler_output [b, 768] */
        CHECK_EQ_INT(g->ninputs, 3);
        CHECK_EQ_INT(g->noutputs, 2);
        CHECK(strcmp(g->nodes[g->inputs[2]].name, "attention_mask") == 0);
        CHECK_EQ_INT(g->nodes[g->inputs[0]].out.dtype, TC_DTYPE_I64);
        CHECK(strcmp(g->output_names[0], "last_hidden_state") == 0);
        CHECK(o->ndim == 3 && o->shape[0] == b && o->shape[1] == 128 && o->shape[2] == 768);
        const tc_tensor *po = &g->nodes[g->outputs[1]].out;
        CHECK(po->ndim == 2 && po->shape[0] == b && po->shape[1] == 768);
        tc_graph_free(g);
        continue;
      }
      CHECK_EQ_INT(g->ninputs, 1);
      CHECK_EQ_INT(g->noutputs, 1);
      CHECK_EQ_INT(o->ndim, 2);
      CHECK_EQ_INT(o->shape[0], b);
      CHECK_EQ_INT(o->shape[1], 1000);
      /* names are unique */
      for (int p = 0; p < g->nparams; p++) CHECK_EQ_INT(tc_graph_find_param(g, g->params[p].name), p);
      tc_graph_free(g);
    }
  }
  return 0;
}

TH_TEST(zoo_weights_deterministic_and_finite) {
  tc_graph *a = NULL, *b = NULL;
  CHECK_EQ_INT(tc_zoo_build("resnet-18", 1, 64, 64, 1, &a, NULL, 0), TH_OK);
  CHECK_EQ_INT(tc_zoo_build("resnet-18", 2, 64, 64, 1, &b, NULL, 0), TH_OK);
  CHECK_EQ_INT(a->nparams, b->nparams);
  for (int i = 0; i < a->nparams; i++)
    CHECK(memcmp(a->params[i].data, b->params[i].data, (size_t)a->params[i].numel * 4) == 0);
  int v = tc_graph_find_param(a, "layer1.0.bn1.running_var");
  CHECK(v >= 0 && a->params[v].data[0] > 0.5f && a->params[v].data[0] < 1.5f);
  tc_graph_free(a);
  tc_graph_free(b);
  return 0;
}

static float *tc__input(int64_t n, uint64_t seed) {
  float *x = malloc((size_t)n * sizeof *x);
  for (int64_t i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    x[i] = (float)((seed >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
  }
  return x;
}

/* Every network runs in the reference interpreter at a small size and gives finite, non-constant logits
 * (bert at sequence 16, with a padded mask, checked on both outputs). */
TH_TEST(ref_all_networks_finite) {
  for (size_t i = 0; i < tc_zoo_count(); i++) {
    const tc_zoo_entry *e = tc_zoo_at(i);
    if (strcmp(e->name, "bert") == 0) {
      tc_graph *g = NULL;
      CHECK_EQ_INT(tc_zoo_build(e->name, 2, 16, 1, 1, &g, NULL, 0), TH_OK);
      int64_t ids[32], types[32], mask[32];
      for (int k = 0; k < 32; k++) {
        ids[k] = (k * 7919) % 30522;
        types[k] = k % 16 >= 8;
        mask[k] = k < 16 || k % 16 < 10;
      }
      float *hs = malloc(32 * 768 * sizeof *hs), pooled[2 * 768];
      const void *ins[3] = {ids, types, mask};
      void *outs[2] = {hs, pooled};
      char err[256];
      CHECK_EQ_INT(tc_ref_run_io(g, ins, outs, err, sizeof err), TH_OK);
      for (int k = 0; k < 32 * 768; k++) CHECK(isfinite(hs[k]));
      for (int k = 0; k < 2 * 768; k++) CHECK(isfinite(pooled[k]) && fabsf(pooled[k]) <= 1.0f);
      CHECK(hs[0] != hs[1] && pooled[0] != pooled[1] && pooled[0] != pooled[768]);
      ids[5] = 30522; /* out of range: an error naming the index, not a crash */
      CHECK_EQ_INT(tc_ref_run_io(g, ins, outs, err, sizeof err), TH_ERR_INVALID);
      CHECK(strstr(err, "30522") != NULL);
      fprintf(stderr, "%-16s seq 16: hidden[0] %g, pooled[0] %g\n", e->name, hs[0], pooled[0]);
      free(hs);
      tc_graph_free(g);
      continue;
    }
    int hw = e->min_hw > 64 ? e->min_hw : 64;
    if (strncmp(e->name, "vgg", 3) == 0) hw = 32;
    tc_graph *g = NULL;
    CHECK_EQ_INT(tc_zoo_build(e->name, 1, hw, hw, 1, &g, NULL, 0), TH_OK);
    float *x = tc__input(3 * hw * hw, 7), out[1000];
    char err[256];
    CHECK_EQ_INT(tc_ref_run(g, x, out, err, sizeof err), TH_OK);
    float mn = out[0], mx = out[0];
    for (int k = 0; k < 1000; k++) {
      CHECK(isfinite(out[k]));
      mn = out[k] < mn ? out[k] : mn;
      mx = out[k] > mx ? out[k] : mx;
    }
    fprintf(stderr, "%-16s %dx%d logits in [%g, %g]\n", e->name, hw, hw, mn, mx);
    CHECK(mx > mn);
    free(x);
    tc_graph_free(g);
  }
  return 0;
}

/* A 2x2 image, one 3x3 conv with pad 1, then relu, by hand. */
TH_TEST(ref_conv_by_hand) {
  tc_graph *g = tc_graph_new("t", 1);
  int x = tc_graph_input(g, 1, 2, 2);
  x = tc_graph_conv(g, "c", x, 1, 3, 3, 1, 1, 1, 1, 1, 1);
  x = tc_graph_relu(g, x);
  CHECK(x >= 0);
  CHECK_EQ_INT(tc_graph_finish(g), TH_OK);
  CHECK_EQ_INT(g->noutputs, 1);
  CHECK_EQ_INT(g->outputs[0], x);
  CHECK_EQ_INT(tc_graph_alloc_params(g), TH_OK);
  float *w = g->params[tc_graph_find_param(g, "c.weight")].data;
  for (int k = 0; k < 9; k++) w[k] = (float)(k + 1); /* 1..9 */
  g->params[tc_graph_find_param(g, "c.bias")].data[0] = -30.0f;
  float in[4] = {1, 2, 3, 4}, out[4];
  CHECK_EQ_INT(tc_ref_run(g, in, out, NULL, 0), TH_OK);
  /* out(0,0) = 5*1 + 6*2 + 8*3 + 9*4 - 30 = 47; out(0,1) = 4*1+5*2+7*3+8*4-30 = 37;
   * out(1,0) = 2*1+3*2+5*3+6*4-30 = 17; out(1,1) = 1+2*2+4*3+5*4-30 = 7 */
  CHECK(out[0] == 47 && out[1] == 37 && out[2] == 17 && out[3] == 7);
  g->params[tc_graph_find_param(g, "c.bias")].data[0] = -40.0f;
  CHECK_EQ_INT(tc_ref_run(g, in, out, NULL, 0), TH_OK);
  CHECK(out[0] == 37 && out[3] == 0);
  tc_graph_free(g);
  return 0;
}

TH_TEST(ref_pools_by_hand) {
  tc_graph *g = tc_graph_new("t", 1);
  int x = tc_graph_input(g, 1, 3, 3);
  int m = tc_graph_max_pool(g, x, 2, 2, 0, 1); /* ceil mode: 2x2 output */
  CHECK_EQ_INT(g->nodes[m].out.shape[2], 2);
  int a = tc_graph_avg_pool(g, x, 3, 1, 1, 1);
  int a2 = tc_graph_avg_pool(g, x, 3, 1, 1, 0);
  float in[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, out[9];
  g->noutputs = 1;
  g->outputs[0] = m;
  CHECK_EQ_INT(tc_ref_run(g, in, out, NULL, 0), TH_OK);
  CHECK(out[0] == 5 && out[1] == 6 && out[2] == 8 && out[3] == 9);
  g->outputs[0] = a;
  CHECK_EQ_INT(tc_ref_run(g, in, out, NULL, 0), TH_OK);
  CHECK(fabsf(out[0] - 12.0f / 9) < 1e-6f && fabsf(out[4] - 5.0f) < 1e-6f);
  g->outputs[0] = a2;
  CHECK_EQ_INT(tc_ref_run(g, in, out, NULL, 0), TH_OK);
  CHECK(fabsf(out[0] - 3.0f) < 1e-6f);
  tc_graph_free(g);
  return 0;
}

/* th_params_crc32 is zlib's CRC-32 at every length and alignment: the check value of "123456789"
 * (0xCBF43926), chaining, and a bytewise CRC of the same bytes from every offset 0..8 and length 0..64. */
TH_TEST(params_crc32_matches_bytewise) {
  CHECK_EQ_INT(th_params_crc32(0, "123456789", 9), 0xCBF43926u);
  CHECK_EQ_INT(th_params_crc32(th_params_crc32(0, "1234", 4), "56789", 5), 0xCBF43926u);
  unsigned char b[80];
  for (int i = 0; i < 80; i++) b[i] = (unsigned char)(i * 37 + 11);
  for (size_t off = 0; off <= 8; off++)
    for (size_t len = 0; len <= 64; len++) {
      uint32_t c = ~0u;
      for (size_t i = 0; i < len; i++) {
        c ^= b[off + i];
        for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      }
      CHECK_EQ_INT(th_params_crc32(0, b + off, len), ~c);
    }
  return 0;
}

TH_TEST(params_round_trip_and_rejects) {
  tc_graph *g = NULL, *h = NULL;
  CHECK_EQ_INT(tc_zoo_build("squeezenet_v1.1", 1, 0, 0, 1, &g, NULL, 0), TH_OK);
  th_buf b;
  th_buf_init(&b, (size_t)1 << 30);
  CHECK_EQ_INT(tc_params_write(g, &b), TH_OK);
  CHECK_EQ_INT(b.len % 4, 0);
  CHECK_EQ_INT(tc_zoo_build("squeezenet_v1.1", 1, 0, 0, 0, &h, NULL, 0), TH_OK);
  char err[256];
  CHECK_EQ_INT(tc_params_load(h, b.data, b.len, err, sizeof err), TH_OK);
  for (int i = 0; i < g->nparams; i++)
    CHECK(memcmp(g->params[i].data, h->params[i].data, (size_t)g->params[i].numel * 4) == 0);
  /* every truncation is rejected cleanly */
  size_t steps[] = {0, 7, 31, 32, 33, 100, b.len / 2, b.len - 4, b.len - 1};
  for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++) {
    err[0] = 0;
    CHECK_EQ_INT(tc_params_load(h, b.data, steps[k], err, sizeof err), TH_ERR_CORRUPT);
    CHECK(err[0] != 0);
  }
  /* a flipped byte fails the checksum */
  b.data[b.len / 2] ^= 0x40;
  CHECK_EQ_INT(tc_params_load(h, b.data, b.len, err, sizeof err), TH_ERR_CORRUPT);
  CHECK(strstr(err, "checksum") != NULL);
  b.data[b.len / 2] ^= 0x40;
  /* another network's file names the missing tensor */
  tc_graph *r = NULL;
  CHECK_EQ_INT(tc_zoo_build("resnet-18", 1, 0, 0, 0, &r, NULL, 0), TH_OK);
  CHECK_EQ_INT(tc_params_load(r, b.data, b.len, err, sizeof err), TH_ERR_INVALID);
  CHECK(strstr(err, "missing tensor 'conv1.weight'") != NULL);
  tc_graph_free(r);
  /* squeezenet 1.0 shares names with 1.1 but not shapes */
  CHECK_EQ_INT(tc_zoo_build("squeezenet_v1.0", 1, 0, 0, 0, &r, NULL, 0), TH_OK);
  CHECK_EQ_INT(tc_params_load(r, b.data, b.len, err, sizeof err), TH_ERR_INVALID);
  CHECK(strstr(err, "features.0.weight") != NULL && strstr(err, "shape") != NULL);
  tc_graph_free(r);
  th_buf_free(&b);
  tc_graph_free(g);
  tc_graph_free(h);
  return 0;
}

/* The reader's edge cases, the same in the compiler and every model .so (runtime/th_params.c): zero
 * dimensions, the per-tensor cap wherever a zero dimension stands, and a needed tensor given twice. */
TH_TEST(params_zero_dims_and_duplicates) {
  char err[256] = "";
  th_buf b;
  th_buf_init(&b, (size_t)1 << 30);
  float v[6] = {1, 2, 3, 4, 5, 6};
  uint64_t zero[3] = {3, 0, 5}, six[1] = {6};
  /* a zero dimension: no data, and the next tensor still starts 64-byte aligned */
  CHECK_EQ_INT(tp_append(&b, 0, "empty", 3, zero, NULL, 0), TH_OK);
  CHECK_EQ_INT(tp_append(&b, 1, "six", 1, six, v, 6), TH_OK);
  tc_params_entry es[4];
  int n = 0;
  CHECK_EQ_INT(tc_params_parse(b.data, b.len, es, 4, &n, err, sizeof err), TH_OK);
  CHECK(n == 2 && es[0].numel == 0 && es[0].ndim == 3 && es[0].shape[1] == 0);
  CHECK(es[1].numel == 6 && es[1].data[5] == 6.0f && ((const char *)es[1].data - b.data) % 64 == 0);
  /* the 2^40 cap is on the product of the nonzero dimensions, wherever the zero stands */
  uint64_t big[2][3] = {{0, 1ull << 40, 1ull << 40}, {1ull << 40, 1ull << 40, 0}};
  for (int k = 0; k < 2; k++) {
    b.len = 0;
    CHECK_EQ_INT(tp_append(&b, 0, "big", 3, big[k], NULL, 0), TH_OK);
    err[0] = 0;
    CHECK_EQ_INT(tc_params_parse(b.data, b.len, es, 4, &n, err, sizeof err), TH_ERR_CORRUPT);
    CHECK(strstr(err, "tensor 1 of 1 is truncated or malformed") != NULL);
  }
  /* a tensor the network needs, twice: ambiguous (the compiler used to take the last copy, a model .so
   * the first), so it is rejected, naming it; an extra tensor twice is still ignored */
  tc_graph *g = NULL, *h = NULL;
  CHECK_EQ_INT(tc_zoo_build("squeezenet_v1.1", 1, 0, 0, 1, &g, NULL, 0), TH_OK);
  CHECK_EQ_INT(tc_zoo_build("squeezenet_v1.1", 1, 0, 0, 0, &h, NULL, 0), TH_OK);
  b.len = 0;
  CHECK_EQ_INT(tc_params_write(g, &b), TH_OK);
  CHECK_EQ_INT(tc_params_parse(b.data, b.len, NULL, 0, &n, err, sizeof err), TH_OK);
  CHECK_EQ_INT(tp_append(&b, (uint32_t)n, "extra", 1, six, v, 6), TH_OK);
  CHECK_EQ_INT(tp_append(&b, (uint32_t)n + 1, "extra", 1, six, v, 6), TH_OK);
  CHECK_EQ_INT(tc_params_load(h, b.data, b.len, err, sizeof err), TH_OK);
  const tc_param *p = &g->params[tc_graph_find_param(g, "classifier.1.bias")];
  uint64_t dims[8];
  for (int d = 0; d < p->ndim; d++) dims[d] = (uint64_t)p->shape[d];
  CHECK_EQ_INT(tp_append(&b, (uint32_t)n + 2, p->name, (uint32_t)p->ndim, dims, p->data, (size_t)p->numel),
               TH_OK);
  CHECK_EQ_INT(tc_params_load(h, b.data, b.len, err, sizeof err), TH_ERR_INVALID);
  fprintf(stderr, "twice: %s\n", err);
  CHECK(strstr(err, "tensor 'classifier.1.bias' appears twice") != NULL);
  tc_graph_free(g);
  tc_graph_free(h);
  th_buf_free(&b);
  return 0;
}

/* ---- passes --------------------------------------------------------------------------------------- */
#include "passes.h"

/* Composite parameters (bert's q, k and v joined by the fuse pass): params.bin holds the parts
 * under their own names and never the composite; loading it into a graph fused without weights, or
 * filling one with the zoo's weights, gives the composite its parts' data in order; the parameter
 * count is the network's, parts counted once; a part of another shape is refused. */
TH_TEST(params_composite) {
  tc_graph *g = NULL, *h = NULL;
  CHECK_EQ_INT(tc_zoo_build("bert", 1, 16, 1, 1, &g, NULL, 0), TH_OK);
  CHECK_EQ_INT(tc_zoo_build("bert", 1, 16, 1, 0, &h, NULL, 0), TH_OK);
  int64_t count = tc_graph_param_count(g);
  CHECK_EQ_INT(tc_pass_fuse(g), TH_OK);
  CHECK_EQ_INT(tc_pass_fuse(h), TH_OK);
  CHECK(tc_graph_param_count(g) == count && tc_graph_param_count(h) == count);
  int w = tc_graph_find_param(g, "encoder.layer.3.attention.self.query+key+value.weight");
  int bi = tc_graph_find_param(g, "encoder.layer.3.attention.self.query+key+value.bias");
  CHECK(w >= 0 && bi >= 0 && g->params[w].nparts == 3 && g->params[w].shape[0] == 2304);
  CHECK(h->params[w].nparts == 3 && h->params[w].data == NULL);
  const char *parts[3] = {"encoder.layer.3.attention.self.query.weight",
                          "encoder.layer.3.attention.self.key.weight",
                          "encoder.layer.3.attention.self.value.weight"};
  for (int k = 0; k < 3; k++) { /* the zoo's weights, in part order */
    const tc_param *p = &g->params[tc_graph_find_param(g, parts[k])];
    CHECK(p->numel == 768 * 768);
    CHECK(memcmp(g->params[w].data + k * p->numel, p->data, (size_t)p->numel * 4) == 0);
  }
  th_buf b;
  th_buf_init(&b, (size_t)1 << 30);
  CHECK_EQ_INT(tc_params_write(g, &b), TH_OK);
  char err[256];
  int n = 0;
  CHECK_EQ_INT(tc_params_parse(b.data, b.len, NULL, 0, &n, err, sizeof err), TH_OK);
  tc_params_entry *es = calloc((size_t)n, sizeof *es);
  CHECK_EQ_INT(tc_params_parse(b.data, b.len, es, n, &n, err, sizeof err), TH_OK);
  int64_t stored = 0;
  for (int i = 0; i < n; i++) {
    CHECK(strchr(es[i].name, '+') == NULL);
    stored += strstr(es[i].name, "attention.self.") != NULL;
  }
  CHECK_EQ_INT(stored, 12 * 6); /* q, k, v weight and bias of each layer */
  free(es);
  CHECK_EQ_INT(tc_params_load(h, b.data, b.len, err, sizeof err), TH_OK);
  for (int i = 0; i < g->nparams; i++)
    CHECK(h->params[i].data &&
          memcmp(g->params[i].data, h->params[i].data, (size_t)g->params[i].numel * 4) == 0);
  /* parts of two shapes */
  int bad[2] = {tc_graph_find_param(h, parts[0]),
                tc_graph_find_param(h, "encoder.layer.3.attention.self.query.bias")};
  CHECK_EQ_INT(tc_graph_param_concat(h, "bad", 2, bad), -1);
  CHECK(strstr(tc_graph_error(h), "part 1 is not a plain parameter") != NULL);
  th_buf_free(&b);
  tc_graph_free(g);
  tc_graph_free(h);
  return 0;
}

static int tc__count_ops(const tc_graph *g, tc_op op) {
  int n = 0;
  for (int i = 0; i < g->nnodes; i++) n += !g->nodes[i].dead && g->nodes[i].op == op;
  return n;
}

/* The plan's invariants (test_compiler_passes.c): no two live tensors share workspace bytes. */
void tc__test_check_plan(const tc_graph *g, int64_t ws);

static double tc__max_rel(const float *a, const float *b, int64_t n) {
  double mx = 0, d = 0;
  for (int64_t i = 0; i < n; i++) {
    mx = fmax(mx, fabs(b[i]));
    d = fmax(d, fabs(a[i] - b[i]));
  }
  return d / (mx > 0 ? mx : 1);
}

static void tc__passes_preserve(const char *net, int batch, int hw) {
  tc_graph *g = NULL;
  char err[256];
  CHECK_EQ_INT(tc_zoo_build(net, batch, hw, hw, 1, &g, err, sizeof err), TH_OK);
  int64_t nin = (int64_t)batch * 3 * hw * hw, nout = (int64_t)batch * 1000;
  float *x = tc__input(nin, 11), *y0 = malloc((size_t)nout * 4), *y1 = malloc((size_t)nout * 4);
  CHECK_EQ_INT(tc_ref_run(g, x, y0, err, sizeof err), TH_OK);
  int64_t ws = 0;
  CHECK_EQ_INT(tc_pass_fold_bn(g), TH_OK);
  CHECK_EQ_INT(tc__count_ops(g, TC_OP_BATCH_NORM), 0);
  CHECK_EQ_INT(tc_ref_run(g, x, y1, err, sizeof err), TH_OK);
  CHECK(tc__max_rel(y1, y0, nout) < 1e-5);
  CHECK_EQ_INT(tc_pass_fuse(g), TH_OK);
  CHECK_EQ_INT(tc__count_ops(g, TC_OP_RELU) + tc__count_ops(g, TC_OP_CLIP), 0);
  CHECK_EQ_INT(tc__count_ops(g, TC_OP_DROPOUT), 0);
  CHECK_EQ_INT(tc_ref_run(g, x, y1, err, sizeof err), TH_OK);
  CHECK(tc__max_rel(y1, y0, nout) < 1e-5);
  CHECK_EQ_INT(tc_pass_layout(g, 16), TH_OK);
  CHECK_EQ_INT(tc_pass_plan_memory(g, &ws), TH_OK);
  tc__test_check_plan(g, ws);
  CHECK_EQ_INT(tc_ref_run(g, x, y1, err, sizeof err), TH_OK);
  CHECK(tc__max_rel(y1, y0, nout) < 1e-5);
  tc_call *calls = NULL;
  int ncalls = 0;
  th_status rc = tc_lower(g, &calls, &ncalls);
  if (rc != TH_OK) fprintf(stderr, "%s: %s\n", net, g->err);
  if (strncmp(net, "vgg", 3) == 0 && hw < 224) {
    /* a 1x1 map pooled up to 7x7 has no kernel; the reference still runs it */
    CHECK_EQ_INT(rc, TH_ERR_UNSUPPORTED);
    CHECK(strstr(g->err, "adaptive_avg_pool") != NULL);
  } else {
    CHECK_EQ_INT(rc, TH_OK);
  }
  int64_t total = 0;
  for (int i = 0; i < g->nnodes; i++)
    if (!g->nodes[i].dead && g->nodes[i].op != TC_OP_FLATTEN) total += tc_tensor_numel(&g->nodes[i].out);
  fprintf(stderr, "%-16s b%d %dx%d: %d kernels, %d layout nodes, workspace %.2f MB (sum of tensors %.2f MB)\n",
          net, batch, hw, hw, ncalls, tc__count_ops(g, TC_OP_LAYOUT), ws * 4 / 1e6, total * 4 / 1e6);
  free(calls);
  free(x);
  free(y0);
  free(y1);
  tc_graph_free(g);
}

TH_TEST(passes_preserve_resnet) {
  tc__passes_preserve("resnet-18", 2, 64);
  tc__passes_preserve("resnet-50", 1, 64);
  return 0;
}

TH_TEST(passes_preserve_others) {
  tc__passes_preserve("mobilenet", 1, 64);
  tc__passes_preserve("mobilenet-v2", 2, 64);
  tc__passes_preserve("squeezenet_v1.0", 1, 64);
  tc__passes_preserve("squeezenet_v1.1", 1, 64);
  tc__passes_preserve("inception_v3", 1, 75);
  tc__passes_preserve("vgg-11", 1, 32);
  return 0;
}

/* resnet-18's block structure after fusion: every conv carries its BN, each block's last conv carries the
 * residual add and the relu; the only layout edge is none (3-channel input, 1x1 map before flatten). */
TH_TEST(passes_resnet18_structure) {
  tc_graph *g = NULL;
  CHECK_EQ_INT(tc_zoo_build("resnet-18", 1, 0, 0, 0, &g, NULL, 0), TH_OK);
  int64_t ws = 0;
  CHECK_EQ_INT(tc_passes_run(g, 16, &ws), TH_OK);
  CHECK_EQ_INT(tc__count_ops(g, TC_OP_CONV2D), 20);
  CHECK_EQ_INT(tc__count_ops(g, TC_OP_ADD), 0);
  CHECK_EQ_INT(tc__count_ops(g, TC_OP_LAYOUT), 0);
  int residual = 0;
  for (int i = 0; i < g->nnodes; i++) {
    const tc_node *nd = &g->nodes[i];
    if (nd->dead || nd->op != TC_OP_CONV2D) continue;
    CHECK(nd->gamma >= 0 && (nd->epilogue & TC_EPI_BIAS));
    if (nd->epilogue & TC_EPI_RESIDUAL) {
      residual++;
      CHECK(nd->epilogue & TC_EPI_RELU);
    }
  }
  CHECK_EQ_INT(residual, 8);
  /* vgg needs exactly one reorder, before the flatten of the 7x7 map */
  tc_graph *v = NULL;
  CHECK_EQ_INT(tc_zoo_build("vgg-16", 1, 0, 0, 0, &v, NULL, 0), TH_OK);
  CHECK_EQ_INT(tc_passes_run(v, 16, &ws), TH_OK);
  CHECK_EQ_INT(tc__count_ops(v, TC_OP_LAYOUT), 1);
  CHECK_EQ_INT(tc__count_ops(v, TC_OP_ADAPTIVE_AVG_POOL), 0);
  tc_call *calls = NULL;
  int ncalls = 0;
  CHECK_EQ_INT(tc_lower(v, &calls, &ncalls), TH_OK);
  CHECK_EQ_INT(ncalls, 13 + 5 + 1 + 3); /* convs, pools, the reorder, dense layers */
  CHECK_EQ_INT(calls[18].wl.kernel, TC_KERNEL_LAYOUT);
  CHECK_EQ_INT(calls[18].wl.in_cb, 16);
  CHECK_EQ_INT(calls[18].wl.out_cb, 1);
  free(calls);
  tc_graph_free(v);
  tc_graph_free(g);
  return 0;
}

/* The tensor ops in the reference interpreter, by hand: a small graph with named typed inputs and two
 * outputs. */
TH_TEST(ref_tensor_ops_by_hand) {
  int as[3] = {1, 2, 3}, ms[1] = {4};
  tc_graph *g = tc_graph_new("t", 1);
  int a = tc_graph_input_tensor(g, "a", TC_DTYPE_F32, 3, as);
  int d = tc_graph_sub(g, a, tc_graph_select(g, a, 1, 0)); /* [1, 2, 3] - [1, 3] broadcasts */
  CHECK(d >= 0 && tc_graph_add(g, d, tc_graph_slice(g, a, 2, 0, 2, 1)) < 0); /* [1, 2, 3] + [1, 2, 2]: no */
  CHECK(strstr(tc_graph_error(g), "[1, 2, 3]") && strstr(tc_graph_error(g), "[1, 2, 2]"));
  tc_graph_free(g);

  g = tc_graph_new("t", 1);
  a = tc_graph_input_tensor(g, "a", TC_DTYPE_F32, 3, as);
  int bt = tc_graph_transpose(g, a, (const int[]){0, 2, 1}); /* [1, 3, 2] */
  int mm = tc_graph_matmul(g, a, bt, 0, 0, 0.5f);           /* 0.5 * a . a^T, [1, 2, 2] */
  int mm2 = tc_graph_matmul(g, a, a, 0, 1, 0.5f);           /* the same through trans_b */
  int sl = tc_graph_slice(g, a, -1, 0, 3, 2);               /* columns 0 and 2: [1, 2, 2] */
  int cat = tc_graph_concat_axis(g, 2, (const int[]){mm, sl}, 2); /* [1, 2, 4] */
  int m = tc_graph_input_tensor(g, "mask", TC_DTYPE_F32, 1, ms);
  int sm = tc_graph_softmax_ex(g, cat, 2.0f, m);
  d = tc_graph_sub(g, mm, mm2); /* zeros */
  int row = tc_graph_select(g, a, 1, 1);                    /* [1, 3]: 4 5 6 */
  int ln = tc_graph_layer_norm(g, "ln", tc_graph_expand(g, row, 2, (const int[]){2, 3}), 1e-5f);
  CHECK(sm >= 0 && ln >= 0);
  CHECK(tc_graph_output(g, "softmax", sm) >= 0 && tc_graph_output(g, "diff", d) >= 0);
  CHECK(tc_graph_output(g, "ln", ln) >= 0);
  CHECK_EQ_INT(tc_graph_finish(g), TH_OK);
  CHECK_EQ_INT(tc_graph_alloc_params(g), TH_OK);
  float *ga = g->params[tc_graph_find_param(g, "ln.weight")].data;
  float *be = g->params[tc_graph_find_param(g, "ln.bias")].data;
  for (int k = 0; k < 3; k++) ga[k] = (float)(k + 1), be[k] = 0.5f;
  float x[6] = {1, 2, 3, 4, 5, 6}, mask[4] = {0, 0, -3.4e38f, 0};
  float o_sm[8], o_d[4], o_ln[6];
  const void *ins[2] = {x, mask};
  void *outs[3] = {o_sm, o_d, o_ln};
  char err[256];
  CHECK_EQ_INT(tc_ref_run_io(g, ins, outs, err, sizeof err), TH_OK);
  /* 0.5 * a.a^T = [[7, 16], [16, 38.5]]; slice = [[1, 3], [4, 6]]; row 0 of cat = [7, 16, 1, 3] masked at
   * column 2, times 2: softmax of [14, 32, -inf, 6] */
  double z = exp(14 - 32) + 1 + exp(6 - 32);
  CHECK(fabs(o_sm[0] - exp(14 - 32) / z) < 1e-6 && fabs(o_sm[1] - 1 / z) < 1e-6 && o_sm[2] == 0.0f);
  for (int k = 0; k < 4; k++) CHECK(o_d[k] == 0.0f);
  /* layer norm of [4, 5, 6]: (x - 5) / sqrt(2/3 + 1e-5) * [1, 2, 3] + 0.5 */
  double inv = 1 / sqrt(2.0 / 3 + 1e-5);
  CHECK(fabs(o_ln[0] - (-inv + 0.5)) < 1e-5 && fabs(o_ln[1] - 0.5) < 1e-6 && fabs(o_ln[5] - (3 * inv + 0.5)) < 1e-5);
  CHECK(tc_ref_run(g, x, o_sm, err, sizeof err) == TH_ERR_INVALID); /* two inputs: tc_ref_run_io */

  /* shape errors name the shapes */
  CHECK(tc_graph_matmul(g, a, a, 0, 0, 1.0f) < 0 && strstr(tc_graph_error(g), "matmul"));
  tc_graph_free(g);
  g = tc_graph_new("t", 1);
  a = tc_graph_input_tensor(g, "a", TC_DTYPE_F32, 3, as);
  CHECK(tc_graph_reshape(g, a, 2, (const int[]){4, -1}) < 0 && strstr(tc_graph_error(g), "[1, 2, 3]"));
  tc_graph_free(g);
  g = tc_graph_new("t", 1);
  int ix = tc_graph_input_tensor(g, "ids", TC_DTYPE_I64, 2, (const int[]){1, 4});
  CHECK(tc_graph_layer_norm(g, "ln", ix, 1e-5f) < 0 && strstr(tc_graph_error(g), "int64"));
  tc_graph_free(g);
  return 0;
}

/* The CNN activations (issue 21) in the reference interpreter, by hand: each keeps its input's shape and
 * name, takes only float32, and computes sigmoid, ONNX HardSigmoid (torch's alpha 1/6, beta 0.5 and
 * ONNX's default 0.2, 0.5), hard swish and silu; graph.json names them with hard sigmoid's constants. */
TH_TEST(ref_activations_by_hand) {
  tc_graph *g = tc_graph_new("act", 1);
  int a = tc_graph_input_tensor(g, "a", TC_DTYPE_F32, 2, (const int[]){1, 6});
  int ys[5] = {tc_graph_sigmoid(g, a), tc_graph_hard_sigmoid(g, a, 1.0f / 6.0f, 0.5f),
               tc_graph_hard_sigmoid(g, a, 0.2f, 0.5f), tc_graph_hard_swish(g, a), tc_graph_silu(g, a)};
  const char *names[5] = {"sigmoid", "hard_sigmoid", "hard_sigmoid", "hard_swish", "silu"};
  for (int k = 0; k < 5; k++) {
    CHECK(ys[k] >= 0);
    CHECK(strcmp(tc_op_name(g->nodes[ys[k]].op), names[k]) == 0);
    CHECK(g->nodes[ys[k]].out.ndim == 2 && g->nodes[ys[k]].out.shape[1] == 6);
    char nm[8];
    snprintf(nm, sizeof nm, "y%d", k);
    CHECK(tc_graph_output(g, nm, ys[k]) >= 0);
  }
  CHECK_EQ_INT(tc_graph_finish(g), TH_OK);
  float x[6] = {-4, -1, 0, 0.5f, 2, 3.5f}, y[5][6];
  const void *ins[1] = {x};
  void *outs[5] = {y[0], y[1], y[2], y[3], y[4]};
  char err[256];
  CHECK_EQ_INT(tc_ref_run_io(g, ins, outs, err, sizeof err), TH_OK);
  for (int i = 0; i < 6; i++) {
    double v = x[i], s = 1 / (1 + exp(-v));
    double h6 = fmin(1, fmax(0, v / 6 + 0.5)), h5 = fmin(1, fmax(0, 0.2 * v + 0.5));
    double want[5] = {s, h6, h5, v * h6, v * s};
    for (int k = 0; k < 5; k++) {
      if (!(fabs(y[k][i] - want[k]) <= 1e-6))
        fprintf(stderr, "%s(%g): %.8g, want %.8g\n", names[k], v, y[k][i], want[k]);
      CHECK(fabs(y[k][i] - want[k]) <= 1e-6);
    }
  }
  CHECK(y[1][0] == 0.0f && y[2][5] == 1.0f && y[3][0] == 0.0f && y[3][5] == 3.5f); /* clamped ends */
  th_buf b;
  th_buf_init(&b, 1 << 20);
  CHECK_EQ_INT(tc_graph_to_json(g, &b), TH_OK);
  CHECK(strstr(b.data, "\"op\": \"hard_swish\"") && strstr(b.data, "\"op\": \"silu\""));
  CHECK(strstr(b.data, "\"alpha\": 0.2") && strstr(b.data, "\"beta\": 0.5"));
  th_buf_free(&b);
  tc_graph_free(g);

  g = tc_graph_new("act", 1);
  int ix = tc_graph_input_tensor(g, "ids", TC_DTYPE_I64, 2, (const int[]){1, 4});
  CHECK(tc_graph_silu(g, ix) < 0 && strstr(tc_graph_error(g), "int64"));
  tc_graph_free(g);
  g = tc_graph_new("act", 1);
  a = tc_graph_input_tensor(g, "a", TC_DTYPE_F32, 2, (const int[]){1, 6});
  CHECK(tc_graph_hard_sigmoid(g, a, NAN, 0.5f) < 0 && strstr(tc_graph_error(g), "finite"));
  tc_graph_free(g);
  return 0;
}
