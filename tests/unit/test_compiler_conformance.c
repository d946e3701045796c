/* Conformance with PyTorch: for torchvision networks, torch generates seeded weights (with random
 * batch-norm statistics), an input and the logits; scripts/torch2params.py converts the state_dict
 * to params.bin; tunehub loads it by torchvision names and must reproduce the logits (relative 1e-4
 * of the largest logit, and the same top-5) with the reference interpreter and with the compiled
 * model. The transformers (vit, bert: named inputs and outputs, int64 token ids) run through
 * tc_ref_run_io and th_model_run_io; each output must agree within 1e-4 of its largest magnitude,
 * and a torch output that is constant along its last axis or across the batch fails the case, since
 * it would prove nothing. */
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graph.h"
#include "model/tunehub_model.h"
#include "params.h"
#include "ref/ref.h"
#include "tc.h"
#include "th_test.h"
#include "th_util.h"
#include "zoo.h"

/* A network's inputs and outputs, in the graph's (and th_model_info's) order, each read from
 * DIR/<file>.bin as conformance_torch.py writes it. */
enum { TC__MAX_IO = 4 };

typedef struct tc__io {
  const char *name;  /* the graph's, and th_model_info's */
  const char *file;  /* DIR/<file>.bin */
  size_t elem;       /* bytes per value: 4 (float32) or 8 (int64) */
  size_t rows, cols; /* cols: the last axis; rows: the product of the others */
} tc__io;

typedef struct tc__net {
  const char *net;
  int batch;
  int zoo_hw;  /* tc_zoo_build's / tc_build_opts' h and w (0: the default) */
  int py_size; /* conformance_torch.py's SIZE: the image side, or the sequence length */
  int n_in, n_out;
  tc__io in[TC__MAX_IO], out[TC__MAX_IO];
} tc__net;

/* The case's folder (one case per process). A failed CHECK exits: atexit removes it then too, since a
 * transformer's leaves hundreds of MB behind. */
static char tc__dir[PATH_MAX];

static void tc__remove_dir(void) {
  if (tc__dir[0] && th_rm_rf(tc__dir) != TH_OK) fprintf(stderr, "could not remove %s\n", tc__dir);
  tc__dir[0] = 0;
}

typedef struct tc__case {
  char *params;
  size_t params_len;
  void *in[TC__MAX_IO], *want[TC__MAX_IO], *got[TC__MAX_IO];
} tc__case;

/* An image classifier (a torchvision CNN, vit): one image input, 1000 logits. */
static tc__net tc__image(const char *net, int batch, int size) {
  const size_t b = (size_t)batch, s = (size_t)size;
  tc__net n = {.net = net, .batch = batch, .zoo_hw = size, .py_size = size, .n_in = 1, .n_out = 1};
  n.in[0] = (tc__io){"input", "input", 4, b * 3 * s, s};
  n.out[0] = (tc__io){"output", "logits", 4, b, 1000};
  return n;
}

static tc__net tc__bert(int batch) {
  const size_t b = (size_t)batch, seq = 128;
  tc__net n = {
      .net = "bert", .batch = batch, .zoo_hw = 0, .py_size = (int)seq, .n_in = 3, .n_out = 2};
  n.in[0] = (tc__io){"input_ids", "input_ids", 8, b, seq};
  n.in[1] = (tc__io){"token_type_ids", "token_type_ids", 8, b, seq};
  n.in[2] = (tc__io){"attention_mask", "attention_mask", 8, b, seq};
  n.out[0] = (tc__io){"last_hidden_state", "last_hidden_state", 4, b * seq, 768};
  n.out[1] = (tc__io){"pooler_output", "pooler_output", 4, b, 768};
  return n;
}

static int tc__have_torch(void) {
  return system("/usr/bin/python3 -c 'import torch, torchvision' >/dev/null 2>&1") == 0;
}

static void tc__read_exact(const char *dir, const char *name, size_t bytes, void **out) {
  char path[PATH_MAX + 64];
  char *data;
  size_t len;
  snprintf(path, sizeof path, "%s/%s.bin", dir, name);
  CHECK_EQ_INT(th_read_file(path, (size_t)1 << 31, &data, &len), TH_OK);
  if (len != bytes) fprintf(stderr, "%s: %zu bytes, expected %zu\n", path, len, bytes);
  CHECK_EQ_INT(len, bytes);
  *out = data;
}

/* Runs the torch side in a fresh folder and reads params.bin, the inputs and the expected outputs
 * (and allocates room for the computed ones) into *c; returns 0, or 77 when torch is missing.
 * Either way *c is then for tc__case_free. */
static int tc__gen(const tc__net *n, tc__case *c) {
  memset(c, 0, sizeof *c);
  if (!tc__have_torch()) {
    fprintf(stderr, "SKIP: /usr/bin/python3 cannot import torch/torchvision\n");
    return TH_SKIP;
  }
  CHECK_EQ_INT(th_mkdtemp("tc_conf", tc__dir, sizeof tc__dir), TH_OK);
  CHECK(atexit(tc__remove_dir) == 0);
  char cmd[3 * PATH_MAX];
  int len = snprintf(
      cmd, sizeof cmd,
      "/usr/bin/python3 %s/tests/unit/conformance_torch.py %s %d %d %s && "
      "/usr/bin/python3 %s/scripts/torch2params.py %s/state.pt %s/params.bin && rm %s/state.pt",
      TH_SRC_DIR, n->net, n->batch, n->py_size, tc__dir, TH_SRC_DIR, tc__dir, tc__dir, tc__dir);
  CHECK(len > 0 && (size_t)len < sizeof cmd);
  CHECK(system(cmd) == 0);
  char path[PATH_MAX + 16];
  snprintf(path, sizeof path, "%s/params.bin", tc__dir);
  CHECK_EQ_INT(th_read_file(path, (size_t)1 << 31, &c->params, &c->params_len), TH_OK);
  for (int i = 0; i < n->n_in; i++) {
    const tc__io *io = &n->in[i];
    tc__read_exact(tc__dir, io->file, io->rows * io->cols * io->elem, &c->in[i]);
  }
  for (int i = 0; i < n->n_out; i++) {
    const tc__io *io = &n->out[i];
    tc__read_exact(tc__dir, io->file, io->rows * io->cols * io->elem, &c->want[i]);
    CHECK((c->got[i] = malloc(io->rows * io->cols * io->elem)) != NULL);
  }
  return 0;
}

static void tc__case_free(tc__case *c) {
  tc__remove_dir();
  free(c->params);
  for (int i = 0; i < TC__MAX_IO; i++) {
    free(c->in[i]);
    free(c->want[i]);
    free(c->got[i]);
  }
}

static void tc__top5(const float *x, int n, int top[5]) {
  for (int k = 0; k < 5; k++) {
    int best = -1;
    for (int i = 0; i < n; i++) {
      int taken = 0;
      for (int j = 0; j < k; j++) taken |= top[j] == i;
      if (!taken && (best < 0 || x[i] > x[best])) best = i;
    }
    top[k] = best;
  }
}

/* max |got - want| <= 1e-4 * max |want| per batch row, and the same top-5 per row. */
static void tc__compare(const char *what, const float *got, const float *want, int batch, int classes) {
  for (int b = 0; b < batch; b++) {
    const float *g = got + (size_t)b * classes, *w = want + (size_t)b * classes;
    double mx = 0, diff = 0;
    for (int i = 0; i < classes; i++) {
      mx = fmax(mx, fabs(w[i]));
      diff = fmax(diff, fabs(g[i] - w[i]));
    }
    int tg[5], tw[5];
    tc__top5(g, classes, tg);
    tc__top5(w, classes, tw);
    fprintf(stderr, "%s row %d: max |logit| %.4g, max diff %.3g (relative %.3g), top-5 %d %d %d %d %d\n",
            what, b, mx, diff, diff / mx, tw[0], tw[1], tw[2], tw[3], tw[4]);
    CHECK(diff <= 1e-4 * mx);
    for (int k = 0; k < 5; k++) CHECK_EQ_INT(tg[k], tw[k]);
  }
}

/* The zoo's graph of n with torch's weights (tc_params_load of c's params.bin). */
static tc_graph *tc__ref_graph(const tc__net *n, const tc__case *c) {
  tc_graph *g = NULL;
  char err[512];
  th_status st = tc_zoo_build(n->net, n->batch, n->zoo_hw, n->zoo_hw, 0, &g, err, sizeof err);
  if (st == TH_OK) st = tc_params_load(g, c->params, c->params_len, err, sizeof err);
  if (st != TH_OK) fprintf(stderr, "%s\n", err);
  CHECK_EQ_INT(st, TH_OK);
  return g;
}

/* The graph's inputs and outputs are n's, in n's order, with n's dtypes and sizes. */
static void tc__check_graph_io(const tc__net *n, const tc_graph *g) {
  CHECK_EQ_INT(g->ninputs, n->n_in);
  CHECK_EQ_INT(g->noutputs, n->n_out);
  for (int i = 0; i < n->n_in + n->n_out; i++) {
    const tc__io *io = i < n->n_in ? &n->in[i] : &n->out[i - n->n_in];
    const tc_node *x = &g->nodes[i < n->n_in ? g->inputs[i] : g->outputs[i - n->n_in]];
    CHECK_STR(i < n->n_in ? x->name : g->output_names[i - n->n_in], io->name);
    CHECK_EQ_INT(tc_dtype_size(x->out.dtype), io->elem);
    CHECK_EQ_INT(tc_tensor_bytes(&x->out), io->rows * io->cols * io->elem);
  }
}

static int tc__ref_case(const char *net, int batch, int size) {
  tc__net n = tc__image(net, batch, size);
  tc__case c;
  int rc = tc__gen(&n, &c);
  if (rc) return rc;
  tc_graph *g = tc__ref_graph(&n, &c);
  char err[512];
  CHECK_EQ_INT(tc_ref_run(g, c.in[0], c.got[0], err, sizeof err), TH_OK);
  tc__compare("reference", c.got[0], c.want[0], batch, 1000);
  tc_graph_free(g);
  tc__case_free(&c);
  return 0;
}

TH_TEST(ref_resnet_18) { return tc__ref_case("resnet-18", 1, 224); }
TH_TEST(ref_resnet_50) { return tc__ref_case("resnet-50", 2, 64); }
TH_TEST(ref_resnet_101) { return tc__ref_case("resnet-101", 1, 64); }
TH_TEST(ref_vgg_11) { return tc__ref_case("vgg-11", 1, 32); }
TH_TEST(ref_vgg_19) { return tc__ref_case("vgg-19", 1, 32); }
TH_TEST(ref_mobilenet_v2) { return tc__ref_case("mobilenet-v2", 2, 224); }
TH_TEST(ref_squeezenet_v1_0) { return tc__ref_case("squeezenet_v1.0", 1, 224); }
TH_TEST(ref_squeezenet_v1_1) { return tc__ref_case("squeezenet_v1.1", 2, 224); }
TH_TEST(ref_inception_v3) { return tc__ref_case("inception_v3", 1, 107); }

/* The compiled model of n, built with torch's params.bin shipped in the bundle as DIR/model.so: the
 * dlopen handle. */
static void *tc__so_open(const tc__net *n, const tc__case *c) {
  char so[PATH_MAX + 16], err[1024] = "";
  snprintf(so, sizeof so, "%s/model.so", tc__dir);
  tc_build_opts o;
  memset(&o, 0, sizeof o);
  o.framework = "llvm";
  o.network = n->net;
  o.batch = n->batch;
  o.input_h = o.input_w = n->zoo_hw;
  o.params = c->params;
  o.params_len = c->params_len;
  th_status st = tc_build_bundle(&o, NULL, so, NULL, err, sizeof err);
  if (st != TH_OK) fprintf(stderr, "%s\n", err);
  CHECK_EQ_INT(st, TH_OK);
  void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  if (!h) fprintf(stderr, "%s\n", dlerror());
  CHECK(h != NULL);
  return h;
}

/* th_model_create on c's params, saying th_model_last_error on failure. */
static void *tc__so_create(void *h, const tc__case *c) {
  int (*create)(const void *, size_t, void **) =
      (int (*)(const void *, size_t, void **))dlsym(h, "th_model_create");
  const char *(*last_error)(void) = (const char *(*)(void))dlsym(h, "th_model_last_error");
  CHECK(create && last_error);
  void *m = NULL;
  int rc = create(c->params, c->params_len, &m);
  if (rc != 0) fprintf(stderr, "th_model_create: %s\n", last_error());
  CHECK_EQ_INT(rc, 0);
  return m;
}

static void tc__so_close(void *h, void *m) {
  void (*fr)(void *) = (void (*)(void *))dlsym(h, "th_model_free");
  CHECK(fr != NULL);
  fr(m);
  dlclose(h);
}

static int tc__so_case(const char *net, int batch, int size) {
  tc__net n = tc__image(net, batch, size);
  tc__case c;
  int rc = tc__gen(&n, &c);
  if (rc) return rc;
  void *h = tc__so_open(&n, &c);
  int (*run)(void *, const float *, float *) =
      (int (*)(void *, const float *, float *))dlsym(h, "th_model_run");
  CHECK(run != NULL);
  void *m = tc__so_create(h, &c);
  CHECK_EQ_INT(run(m, c.in[0], c.got[0]), 0);
  tc__compare("compiled", c.got[0], c.want[0], batch, 1000);
  tc__so_close(h, m);
  tc__case_free(&c);
  return 0;
}

TH_TEST(so_resnet_18) { return tc__so_case("resnet-18", 1, 224); }
TH_TEST(so_mobilenet_v2) { return tc__so_case("mobilenet-v2", 2, 224); }
TH_TEST(so_squeezenet_v1_1) { return tc__so_case("squeezenet_v1.1", 2, 224); }

/* Fails when torch's output is constant along its last axis in some row, or when the batch items
 * are all alike: then agreement would prove nothing (vit_b_16's zero head gives all-zero logits).
 */
static void tc__check_varies(const tc__io *io, const float *want, int batch) {
  double mx = 0;
  for (size_t i = 0; i < io->rows * io->cols; i++) mx = fmax(mx, fabs(want[i]));
  CHECK(mx > 0 && isfinite(mx));
  for (size_t r = 0; r < io->rows; r++) {
    float lo = want[r * io->cols], hi = lo;
    for (size_t j = 1; j < io->cols; j++) {
      lo = fminf(lo, want[r * io->cols + j]);
      hi = fmaxf(hi, want[r * io->cols + j]);
    }
    if (!(hi - lo > 1e-3 * mx)) fprintf(stderr, "%s: row %zu is constant (%g)\n", io->name, r, lo);
    CHECK(hi - lo > 1e-3 * mx);
  }
  const size_t per = io->rows * io->cols / (size_t)batch;
  for (int b = 1; b < batch; b++) {
    double d = 0;
    for (size_t i = 0; i < per; i++) d = fmax(d, fabs(want[b * per + i] - want[i]));
    if (!(d > 1e-3 * mx)) fprintf(stderr, "%s: batch item %d equals item 0\n", io->name, b);
    CHECK(d > 1e-3 * mx);
  }
}

/* Output k of n: max |got - want| <= 1e-4 * max |want| over the whole output (a NaN fails), and
 * torch's output must vary (tc__check_varies). */
static void tc__compare_io(const char *what, const tc__net *n, int k, const float *got,
                           const float *want) {
  const tc__io *io = &n->out[k];
  tc__check_varies(io, want, n->batch);
  double mx = 0, diff = 0;
  size_t at = 0;
  for (size_t i = 0; i < io->rows * io->cols; i++) {
    double d = fabs((double)got[i] - want[i]);
    mx = fmax(mx, fabs(want[i]));
    if (!(d <= diff)) {
      diff = d;
      at = i;
      if (isnan(d)) break;
    }
  }
  fprintf(stderr, "%s %s %s: max |y| %.4g, max diff %.3g at [%zu][%zu] (relative %.3g)\n", what,
          n->net, io->name, mx, diff, at / io->cols, at % io->cols, diff / mx);
  CHECK(diff <= 1e-4 * mx);
}

/* The transformers in the reference interpreter: every input and output through tc_ref_run_io. */
static void tc__ref_io(const tc__net *n, tc__case *c) {
  tc_graph *g = tc__ref_graph(n, c);
  tc__check_graph_io(n, g);
  char err[512];
  th_status st = tc_ref_run_io(g, (const void *const *)c->in, c->got, err, sizeof err);
  if (st != TH_OK) fprintf(stderr, "%s\n", err);
  CHECK_EQ_INT(st, TH_OK);
  for (int k = 0; k < n->n_out; k++) tc__compare_io("reference", n, k, c->got[k], c->want[k]);
  tc_graph_free(g);
}

/* The transformers compiled: th_model_run_io. */
static void tc__so_io(const tc__net *n, tc__case *c) {
  void *h = tc__so_open(n, c);
  int (*run)(void *, const void *const *, void *const *) =
      (int (*)(void *, const void *const *, void *const *))dlsym(h, "th_model_run_io");
  const char *(*last_error)(void) = (const char *(*)(void))dlsym(h, "th_model_last_error");
  CHECK(run && last_error);
  const struct th_model_info *(*info)(void) =
      (const struct th_model_info *(*)(void))dlsym(h, "th_model_info");
  CHECK(info != NULL);
  const struct th_model_info *mi = info();
  CHECK_EQ_INT(mi->num_inputs, n->n_in);
  CHECK_EQ_INT(mi->num_outputs, n->n_out);
  for (int i = 0; i < n->n_in + n->n_out; i++) {
    const tc__io *io = i < n->n_in ? &n->in[i] : &n->out[i - n->n_in];
    const struct th_tensor_desc *d = i < n->n_in ? &mi->inputs[i] : &mi->outputs[i - n->n_in];
    CHECK_STR(d->name, io->name);
    CHECK_EQ_INT(d->dtype, io->elem == 8 ? TH_DTYPE_I64 : TH_DTYPE_F32);
    CHECK_EQ_INT(d->count, io->rows * io->cols);
  }
  void *m = tc__so_create(h, c);
  /* the reference's answers are still in got: NaN bytes, so that an output the model leaves
   * unwritten fails the comparison instead of passing on them */
  for (int k = 0; k < n->n_out; k++)
    memset(c->got[k], 0xff, n->out[k].rows * n->out[k].cols * n->out[k].elem);
  int rc = run(m, (const void *const *)c->in, c->got);
  if (rc != 0) fprintf(stderr, "th_model_run_io: %s\n", last_error());
  CHECK_EQ_INT(rc, 0);
  for (int k = 0; k < n->n_out; k++) tc__compare_io("compiled", n, k, c->got[k], c->want[k]);
  tc__so_close(h, m);
}

/* One torch case (its generation is most of the cost: seeded weights for 86M / 110M parameters,
 * params.bin written and read back) checked twice: by the reference interpreter, then compiled. */
static int tc__transformer_case(tc__net n) {
  tc__case c;
  int rc = tc__gen(&n, &c);
  if (rc) return rc;
  tc__ref_io(&n, &c);
  tc__so_io(&n, &c);
  tc__case_free(&c);
  return 0;
}

TH_TEST(vit) { return tc__transformer_case(tc__image("vit", 2, 224)); }
TH_TEST(bert) { return tc__transformer_case(tc__bert(2)); }
