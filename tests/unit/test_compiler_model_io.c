/* The model .so's named inputs and outputs (issue 20): th_model_info's inputs/outputs tables and
 * the legacy fields, th_model_run_io against th_model_run and the reference interpreter, the index
 * checks that refuse an out-of-range embedding index before anything runs, th_model_run pointing
 * networks with several inputs to th_model_run_io, the manifest's "inputs"/"outputs", example.c,
 * tc_bundle_run (`tunehub run`) on every kind of network and tc_bundle_infer (`tunehub run --input
 * --output-dir`) on files. The transformer cases need the tensor kernel templates, which exist: a
 * build that says a family has no template fails them (it is a regression, never a skip). */
#include <dlfcn.h>
#include <jansson.h>
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

typedef struct io_so {
  void *h;
  const struct th_model_info *(*info)(void);
  int (*create)(const void *, size_t, struct th_model **);
  int (*run)(struct th_model *, const float *, float *);
  int (*run_io)(struct th_model *, const void *const *, void *const *);
  int (*run_io_prof)(struct th_model *, const void *const *, void *const *, double *);
  void (*free_)(struct th_model *);
  const char *(*err)(void);
} io_so;

/* Opens dir/m.so. */
static void so_open(io_so *s, const char *dir) {
  char path[1100];
  snprintf(path, sizeof path, "%s/m.so", dir);
  s->h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!s->h) fprintf(stderr, "dlopen: %s\n", dlerror());
  CHECK(s->h != NULL);
  *(void **)&s->info = dlsym(s->h, "th_model_info");
  *(void **)&s->create = dlsym(s->h, "th_model_create");
  *(void **)&s->run = dlsym(s->h, "th_model_run");
  *(void **)&s->run_io = dlsym(s->h, "th_model_run_io");
  *(void **)&s->run_io_prof = dlsym(s->h, "th_model_run_io_profiled");
  *(void **)&s->free_ = dlsym(s->h, "th_model_free");
  *(void **)&s->err = dlsym(s->h, "th_model_last_error");
  CHECK(s->info && s->create && s->run && s->run_io && s->free_ && s->err);
}

/* Builds net (llvm, fallback configs) into a fresh dir (dir/b.tar and dir/m.so, the manifest in
 * *manifest when not NULL); 0, or the test fails with the build's error. */
static int build(const char *net, int batch, int hw, char *dir, size_t dirlen, char **manifest) {
  char tar[1100], so[1100], err[2048] = "";
  CHECK_EQ_INT(th_mkdtemp("tc-model-io", dir, dirlen), TH_OK);
  snprintf(tar, sizeof tar, "%s/b.tar", dir);
  snprintf(so, sizeof so, "%s/m.so", dir);
  tc_build_opts o;
  memset(&o, 0, sizeof o);
  o.framework = "llvm";
  o.network = net;
  o.batch = batch;
  o.input_h = o.input_w = hw;
  double t0 = th_now_mono();
  th_status rc = tc_build_bundle(&o, tar, so, manifest, err, sizeof err);
  fprintf(stderr, "%s batch %d: build %s in %.1f s%s%s\n", net, batch, th_status_name(rc),
          th_now_mono() - t0, rc == TH_OK ? "" : ": ", err);
  CHECK_EQ_INT(rc, TH_OK);
  return 0;
}

/* The largest |got - want| over n values, against the largest |want| (in *maxref). */
static double max_diff(const float *got, const float *want, size_t n, double *maxref) {
  double mx = 0, diff = 0;
  for (size_t i = 0; i < n; i++) {
    mx = fmax(mx, fabs(want[i]));
    diff = fmax(diff, fabs((double)got[i] - want[i]));
  }
  *maxref = mx;
  return diff;
}

/* A model of s created from net's seeded params.bin; the graph with its weights in *g (the
 * reference's), the file in *pb. */
static struct th_model *create_model(const io_so *s, const char *net, int batch, int hw,
                                     tc_graph **g, th_buf *pb) {
  char err[512];
  CHECK_EQ_INT(tc_zoo_build(net, batch, hw, hw, 1, g, err, sizeof err), TH_OK);
  th_buf_init(pb, (size_t)1 << 31);
  CHECK_EQ_INT(tc_params_write(*g, pb), TH_OK);
  struct th_model *m = NULL;
  if (s->create(pb->data, pb->len, &m) != 0) fprintf(stderr, "create: %s\n", s->err());
  CHECK(m != NULL);
  return m;
}

/* tc_bundle_run (`tunehub run`) on dir/b.tar. */
static void bundle_runs(const char *dir, int repeat) {
  char tar[1100], err[2048] = "";
  snprintf(tar, sizeof tar, "%s/b.tar", dir);
  tc_run_stats st;
  th_status rc = tc_bundle_run(tar, repeat, &st, err, sizeof err);
  if (rc != TH_OK) fprintf(stderr, "run: %s\n", err);
  CHECK_EQ_INT(rc, TH_OK);
  CHECK(st.n == repeat && st.median_ms > 0);
}

/* tc_bundle_infer on dir/b.tar with the given input files, writing into dir/<outdir>; the status. */
static th_status bundle_infer(const char *dir, const tc_run_input *in, int nin, const char *outdir,
                              char *err, size_t errlen) {
  char tar[1100], out[1100];
  snprintf(tar, sizeof tar, "%s/b.tar", dir);
  snprintf(out, sizeof out, "%s/%s", dir, outdir);
  tc_run_opts o;
  memset(&o, 0, sizeof o);
  o.inputs = in;
  o.ninputs = nin;
  o.output_dir = out;
  o.repeat = 1;
  tc_run_stats st;
  th_status rc = tc_bundle_infer(tar, &o, &st, err, errlen);
  fprintf(stderr, "infer into %s: %s%s%s\n", outdir, th_status_name(rc), err[0] ? ": " : "", err);
  if (rc == TH_OK) {
    CHECK(st.n == 1 && st.manifest != NULL);
    tc_run_stats_free(&st);
  }
  return rc;
}

/* dir/<rel> holds exactly n bytes: they are returned (malloc'd). */
static char *read_exact(const char *dir, const char *rel, size_t n) {
  char path[1100];
  snprintf(path, sizeof path, "%s/%s", dir, rel);
  char *data = NULL;
  size_t len = 0;
  CHECK_EQ_INT(th_read_file(path, n + 1, &data, &len), TH_OK);
  CHECK_EQ_INT(len, n);
  return data;
}

/* Writes n bytes to dir/<rel>; its path in path (1100 bytes). */
static void write_file(const char *dir, const char *rel, const void *data, size_t n, char *path) {
  snprintf(path, 1100, "%s/%s", dir, rel);
  CHECK_EQ_INT(th_write_file_atomic(path, data, n), TH_OK);
}

static void check_desc(const struct th_tensor_desc *d, const char *name, int dtype, int ndim,
                       const int64_t *shape) {
  CHECK_STR(d->name, name);
  CHECK_EQ_INT(d->dtype, dtype);
  CHECK_EQ_INT(d->ndim, ndim);
  size_t count = 1;
  for (int i = 0; i < ndim; i++) {
    CHECK_EQ_INT(d->shape[i], shape[i]);
    count *= (size_t)shape[i];
  }
  CHECK_EQ_INT(d->count, count);
}

/* A manifest's "inputs"/"outputs" entry k: name, dtype and shape. */
static void check_manifest_io(json_t *m, const char *key, int k, const char *name,
                              const char *dtype, int ndim, const int64_t *shape) {
  json_t *e = json_array_get(json_object_get(m, key), (size_t)k);
  CHECK(e != NULL);
  CHECK_STR(json_string_value(json_object_get(e, "name")), name);
  CHECK_STR(json_string_value(json_object_get(e, "dtype")), dtype);
  json_t *s = json_object_get(e, "shape");
  CHECK_EQ_INT(json_array_size(s), ndim);
  for (int d = 0; d < ndim; d++)
    CHECK_EQ_INT(json_integer_value(json_array_get(s, (size_t)d)), shape[d]);
}

/* example.c from the bundle builds with the documented command, runs, and prints what grep_for
 * says. */
static void check_example(const char *dir, const char *grep_for) {
  char cmd[3000];
  snprintf(cmd, sizeof cmd,
           "cd '%s' && rm -rf x && mkdir x && cd x && tar -xf ../b.tar && cc example.c ./model.so "
           "-o example && "
           "./example > out.txt && cat out.txt >&2 && grep -q '%s' out.txt",
           dir, grep_for);
  CHECK(system(cmd) == 0);
}

/* A CNN: one float32 input and output. th_model_run_io gives th_model_run's output exactly; the
 * info tables repeat the legacy fields; NULLs are refused with a message; the profiled variant
 * times every call; the manifest lists the input and output; `tunehub run` and example.c work. */
TH_TEST(cnn_run_io_matches_run) {
  char dir[1024], err[1024] = "";
  char *manifest = NULL;
  CHECK_EQ_INT(build("resnet-18", 2, 32, dir, sizeof dir, &manifest), 0);
  json_t *mj = json_loads(manifest, 0, NULL);
  CHECK(mj != NULL);
  const int64_t ishape[4] = {2, 3, 32, 32}, oshape[2] = {2, 1000};
  CHECK_EQ_INT(json_array_size(json_object_get(mj, "inputs")), 1);
  CHECK_EQ_INT(json_array_size(json_object_get(mj, "outputs")), 1);
  check_manifest_io(mj, "inputs", 0, "input", "float32", 4, ishape);
  check_manifest_io(mj, "outputs", 0, "output", "float32", 2, oshape);
  CHECK_STR(json_string_value(json_object_get(json_object_get(mj, "input"), "layout")), "NCHW");
  CHECK_STR(json_string_value(json_object_get(json_object_get(mj, "output"), "name")), "output");
  json_decref(mj);
  free(manifest);

  io_so s;
  so_open(&s, dir);
  const struct th_model_info *info = s.info();
  CHECK_EQ_INT(info->num_inputs, 1);
  CHECK_EQ_INT(info->num_outputs, 1);
  check_desc(&info->inputs[0], "input", TH_DTYPE_F32, 4, ishape);
  check_desc(&info->outputs[0], "output", TH_DTYPE_F32, 2, oshape);
  CHECK_EQ_INT(info->input_ndim, 4);
  CHECK_EQ_INT(info->output_ndim, 2);
  for (int d = 0; d < 4; d++) CHECK_EQ_INT(info->input_shape[d], ishape[d]);
  CHECK_EQ_INT(info->output_shape[1], 1000);
  CHECK_EQ_INT(info->input_size, 2 * 3 * 32 * 32);
  CHECK_EQ_INT(info->output_size, 2000);

  tc_graph *g = NULL;
  th_buf pb;
  struct th_model *m = create_model(&s, "resnet-18", 2, 32, &g, &pb);
  size_t nin = info->input_size, nout = info->output_size;
  /* unaligned caller buffers: the runtime copies */
  char *xb = malloc(nin * 4 + 1), *y2b = malloc(nout * 4 + 1);
  float *xa = malloc(nin * 4), *y1 = malloc(nout * 4), *y2 = malloc(nout * 4);
  for (size_t i = 0; i < nin; i++) xa[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
  memcpy(xb + 1, xa, nin * 4);
  CHECK_EQ_INT(s.run(m, xa, y1), 0);
  const void *ins[1] = {xb + 1};
  void *outs[1] = {y2b + 1};
  CHECK_EQ_INT(s.run_io(m, ins, outs), 0);
  memcpy(y2, y2b + 1, nout * 4);
  CHECK(memcmp(y1, y2, nout * 4) == 0);
  float *want = malloc(nout * 4);
  CHECK_EQ_INT(tc_ref_run(g, xa, want, err, sizeof err), TH_OK);
  double mx, diff = max_diff(y2, want, nout, &mx);
  fprintf(stderr, "run_io vs reference: max diff %.3g of max |ref| %.3g\n", diff, mx);
  CHECK(diff <= 1e-4 * mx);
  /* NULLs */
  const void *nulls[1] = {NULL};
  CHECK_EQ_INT(s.run_io(m, nulls, outs), -1);
  fprintf(stderr, "NULL input: %s\n", s.err());
  CHECK(strstr(s.err(), "inputs[0] (input) is NULL") != NULL);
  CHECK_EQ_INT(s.run_io(m, NULL, outs), -1);
  CHECK_EQ_INT(s.run_io(NULL, ins, outs), -1);
  CHECK(strstr(s.err(), "NULL") != NULL);
  /* the profiled variant: every call timed, same output */
  CHECK(s.run_io_prof != NULL);
  double *secs = calloc((size_t)info->num_kernels, sizeof *secs);
  void *outs1[1] = {y2};
  memset(y2, 0, nout * 4);
  CHECK_EQ_INT(s.run_io_prof(m, ins, outs1, secs), 0);
  CHECK(memcmp(y1, y2, nout * 4) == 0);
  double sum = 0;
  for (int i = 0; i < info->num_kernels; i++) sum += secs[i];
  CHECK(sum > 0);
  CHECK_EQ_INT(s.run_io_prof(m, ins, outs1, NULL), -1);
  free(secs);
  s.free_(m);
  dlclose(s.h);

  /* `tunehub run` and example.c */
  bundle_runs(dir, 3);
  check_example(dir, "output \\[2x1000\\]:.*top class");
  free(xb);
  free(y2b);
  free(xa);
  free(y1);
  free(y2);
  free(want);
  th_buf_free(&pb);
  tc_graph_free(g);
  (void)th_rm_rf(dir);
  return 0;
}

/* tc_bundle_infer (`tunehub run --input --output-dir`): the model runs on the file's exact bytes and
 * writes each output where tc_run_output_path says, matching the reference interpreter on the same input;
 * without the file the fill gives another output; an unknown name, a name given twice, a file of the wrong
 * size and a missing file are refused with messages that say why, and nothing is written then. */
TH_TEST(bundle_infer_files) {
  char dir[1024], err[2048] = "", xpath[1100], short_path[1100];
  CHECK_EQ_INT(build("resnet-18", 2, 32, dir, sizeof dir, NULL), 0);
  const size_t nin = 2 * 3 * 32 * 32, nout = 2 * 1000;
  float *x = malloc(nin * 4), *want = malloc(nout * 4);
  for (size_t i = 0; i < nin; i++) x[i] = sinf(0.37f * (float)i) + 0.25f * cosf(0.011f * (float)i);
  write_file(dir, "x.bin", x, nin * 4, xpath);
  tc_run_input in[2] = {{"input", xpath}, {"input", xpath}};
  CHECK_EQ_INT(bundle_infer(dir, in, 1, "out", err, sizeof err), TH_OK);
  float *y = (float *)read_exact(dir, "out/output.bin", nout * 4);
  tc_graph *g = NULL;
  CHECK_EQ_INT(tc_zoo_build("resnet-18", 2, 32, 32, 1, &g, err, sizeof err), TH_OK);
  CHECK_EQ_INT(tc_ref_run(g, x, want, err, sizeof err), TH_OK);
  double mx, diff = max_diff(y, want, nout, &mx);
  fprintf(stderr, "infer from a file vs reference: max diff %.3g of max |ref| %.3g\n", diff, mx);
  CHECK(mx > 0 && diff <= 1e-4 * mx);
  /* the fill instead of the file: another output */
  err[0] = '\0';
  CHECK_EQ_INT(bundle_infer(dir, NULL, 0, "fill", err, sizeof err), TH_OK);
  float *yf = (float *)read_exact(dir, "fill/output.bin", nout * 4);
  CHECK(max_diff(yf, y, nout, &mx) > 1e-3 * mx);

  /* refusals, before anything is written */
  tc_run_input bad = {"image", xpath};
  CHECK_EQ_INT(bundle_infer(dir, &bad, 1, "bad", err, sizeof err), TH_ERR_INVALID);
  CHECK_STR(err, "the model has no input 'image'; valid inputs: input");
  CHECK_EQ_INT(bundle_infer(dir, in, 2, "bad", err, sizeof err), TH_ERR_INVALID);
  CHECK(strstr(err, "input 'input' is given twice") != NULL);
  write_file(dir, "short.bin", x, nin * 4 - 4, short_path);
  tc_run_input shorter = {"input", short_path};
  CHECK_EQ_INT(bundle_infer(dir, &shorter, 1, "bad", err, sizeof err), TH_ERR_INVALID);
  CHECK(strstr(err, "input 'input' (float32 [2, 3, 32, 32] at batch 2): expected 24576 bytes, but ") != NULL);
  CHECK(strstr(err, "short.bin has 24572 bytes") != NULL);
  tc_run_input missing = {"input", "/nonexistent/x.bin"};
  CHECK_EQ_INT(bundle_infer(dir, &missing, 1, "bad", err, sizeof err), TH_ERR_IO);
  CHECK(strstr(err, "input 'input': cannot read /nonexistent/x.bin") != NULL);
  char bad_dir[1100];
  snprintf(bad_dir, sizeof bad_dir, "%s/bad", dir);
  CHECK(access(bad_dir, F_OK) != 0);

  char path[64];
  CHECK_EQ_INT(tc_run_output_path("d", "logits/0", path, sizeof path), TH_OK);
  CHECK_STR(path, "d/logits_0.bin");
  CHECK_EQ_INT(tc_run_output_path("a-long-directory", "name", path, 8), TH_ERR_TOO_LARGE);
  free(x);
  free(want);
  free(y);
  free(yf);
  tc_graph_free(g);
  (void)th_rm_rf(dir);
  return 0;
}

/* bert: three int64 inputs and two outputs. th_model_info lists them; th_model_run refuses and
 * points to th_model_run_io; an out-of-range index is refused before anything runs, naming the
 * input, the position, the value, the range and the table, and the outputs stay untouched; valid
 * inputs match the reference interpreter; `tunehub run` and example.c run it. */
TH_TEST(bert_bundle) {
  char dir[1024], err[2048] = "";
  char *manifest = NULL;
  if (build("bert", 1, 0, dir, sizeof dir, &manifest) != 0) return 1;
  const int64_t ids[2] = {1, 128}, lh[3] = {1, 128, 768}, po[2] = {1, 768};
  const char *in_names[3] = {"input_ids", "token_type_ids", "attention_mask"};
  json_t *mj = json_loads(manifest, 0, NULL);
  CHECK(mj != NULL);
  CHECK_EQ_INT(json_array_size(json_object_get(mj, "inputs")), 3);
  CHECK_EQ_INT(json_array_size(json_object_get(mj, "outputs")), 2);
  for (int k = 0; k < 3; k++) check_manifest_io(mj, "inputs", k, in_names[k], "int64", 2, ids);
  check_manifest_io(mj, "outputs", 0, "last_hidden_state", "float32", 3, lh);
  check_manifest_io(mj, "outputs", 1, "pooler_output", "float32", 2, po);
  CHECK_STR(json_string_value(json_object_get(json_object_get(mj, "input"), "name")), "input_ids");
  CHECK(json_object_get(json_object_get(mj, "input"), "layout") == NULL);
  json_decref(mj);
  free(manifest);

  io_so s;
  so_open(&s, dir);
  const struct th_model_info *info = s.info();
  CHECK_EQ_INT(info->num_inputs, 3);
  CHECK_EQ_INT(info->num_outputs, 2);
  for (int k = 0; k < 3; k++) check_desc(&info->inputs[k], in_names[k], TH_DTYPE_I64, 2, ids);
  check_desc(&info->outputs[0], "last_hidden_state", TH_DTYPE_F32, 3, lh);
  check_desc(&info->outputs[1], "pooler_output", TH_DTYPE_F32, 2, po);
  CHECK(info->input_ndim == 2 && info->input_shape[1] == 128 && info->input_size == 128);
  CHECK(info->output_ndim == 3 && info->output_shape[2] == 768 && info->output_size == 128 * 768);

  tc_graph *g = NULL;
  th_buf pb;
  struct th_model *m = create_model(&s, "bert", 1, 0, &g, &pb);
  int64_t *in[3];
  for (int k = 0; k < 3; k++) in[k] = malloc(128 * sizeof(int64_t));
  for (int i = 0; i < 128; i++) {
    in[0][i] = (int64_t)((i * 7919 + 101) % 30522);
    in[1][i] = i >= 64;
    in[2][i] = i < 100; /* the last 28 positions are padding */
  }
  float *lh_out = malloc(128 * 768 * 4), *po_out = malloc(768 * 4);
  const void *ins[3] = {in[0], in[1], in[2]};
  void *outs[2] = {lh_out, po_out};

  /* th_model_run cannot take three int64 inputs */
  float dummy_in[128], dummy_out[768];
  CHECK_EQ_INT(s.run(m, dummy_in, dummy_out), -1);
  fprintf(stderr, "th_model_run: %s\n", s.err());
  CHECK(strstr(s.err(), "th_model_run_io") != NULL);

  /* out-of-range indices: nothing runs, the outputs keep their bytes */
  for (int i = 0; i < 128 * 768; i++) lh_out[i] = 12345.0f;
  in[0][37] = 40000;
  CHECK_EQ_INT(s.run_io(m, ins, outs), -1);
  fprintf(stderr, "index: %s\n", s.err());
  CHECK_STR(s.err(), "input_ids[0][37] = 40000 is outside [0, 30522) (embeddings.word_embeddings)");
  for (int i = 0; i < 128 * 768; i++) CHECK(lh_out[i] == 12345.0f);
  in[0][37] = -1;
  CHECK_EQ_INT(s.run_io(m, ins, outs), -1);
  CHECK(strstr(s.err(), "input_ids[0][37] = -1 is outside [0, 30522)") != NULL);
  in[0][37] = 5;
  in[1][127] = 2;
  CHECK_EQ_INT(s.run_io(m, ins, outs), -1);
  fprintf(stderr, "index: %s\n", s.err());
  CHECK(strstr(s.err(), "token_type_ids[0][127] = 2 is outside [0, 2)") != NULL);
  in[1][127] = 1;
  const void *nulls[3] = {in[0], NULL, in[2]};
  CHECK_EQ_INT(s.run_io(m, nulls, outs), -1);
  CHECK(strstr(s.err(), "inputs[1] (token_type_ids) is NULL") != NULL);

  /* valid inputs: the reference interpreter's answer */
  CHECK_EQ_INT(s.run_io(m, ins, outs), 0);
  float *want_lh = malloc(128 * 768 * 4), *want_po = malloc(768 * 4);
  void *wouts[2] = {want_lh, want_po};
  CHECK_EQ_INT(tc_ref_run_io(g, ins, wouts, err, sizeof err), TH_OK);
  const float *got[2] = {lh_out, po_out}, *want[2] = {want_lh, want_po};
  size_t n[2] = {128 * 768, 768};
  for (int k = 0; k < 2; k++) {
    double mx, diff = max_diff(got[k], want[k], n[k], &mx);
    fprintf(stderr, "%s: max diff %.3g of max |ref| %.3g\n", info->outputs[k].name, diff, mx);
    CHECK(mx > 0 && diff <= 1e-3 * mx);
  }
  s.free_(m);
  dlclose(s.h);

  /* the same inputs from files (`tunehub run --input`): the same outputs, written to files */
  char paths[3][1100];
  tc_run_input files[3];
  for (int k = 0; k < 3; k++) {
    char rel[64];
    snprintf(rel, sizeof rel, "%s.bin", in_names[k]);
    write_file(dir, rel, in[k], 128 * sizeof(int64_t), paths[k]);
    files[k].name = in_names[k];
    files[k].path = paths[k];
  }
  CHECK_EQ_INT(bundle_infer(dir, files, 3, "out", err, sizeof err), TH_OK);
  char *got_lh = read_exact(dir, "out/last_hidden_state.bin", 128 * 768 * 4);
  char *got_po = read_exact(dir, "out/pooler_output.bin", 768 * 4);
  CHECK(memcmp(got_lh, lh_out, 128 * 768 * 4) == 0);
  CHECK(memcmp(got_po, po_out, 768 * 4) == 0);
  free(got_lh);
  free(got_po);
  /* an int64 file of int32 size */
  write_file(dir, "types32.bin", in[1], 128 * 4, paths[1]);
  CHECK_EQ_INT(bundle_infer(dir, files, 3, "bad", err, sizeof err), TH_ERR_INVALID);
  CHECK(strstr(err, "input 'token_type_ids' (int64 [1, 128] at batch 1): expected 1024 bytes, but ") != NULL);

  bundle_runs(dir, 2);
  check_example(dir, "pooler_output \\[1x768\\]:");
  for (int k = 0; k < 3; k++) free(in[k]);
  free(lh_out);
  free(po_out);
  free(want_lh);
  free(want_po);
  th_buf_free(&pb);
  tc_graph_free(g);
  (void)th_rm_rf(dir);
  return 0;
}

/* vit: one float32 input and output, so th_model_run still serves it; th_model_run_io gives the
 * same output and both match the reference. */
TH_TEST(vit_bundle) {
  char dir[1024], err[2048] = "";
  if (build("vit", 1, 224, dir, sizeof dir, NULL) != 0) return 1;
  io_so s;
  so_open(&s, dir);
  const struct th_model_info *info = s.info();
  const int64_t ishape[4] = {1, 3, 224, 224}, oshape[2] = {1, 1000};
  CHECK(info->num_inputs == 1 && info->num_outputs == 1);
  check_desc(&info->inputs[0], "input", TH_DTYPE_F32, 4, ishape);
  check_desc(&info->outputs[0], "output", TH_DTYPE_F32, 2, oshape);
  tc_graph *g = NULL;
  th_buf pb;
  struct th_model *m = create_model(&s, "vit", 1, 224, &g, &pb);
  size_t nin = info->input_size, nout = info->output_size;
  float *x = malloc(nin * 4), *y1 = malloc(nout * 4), *y2 = malloc(nout * 4),
        *want = malloc(nout * 4);
  for (size_t i = 0; i < nin; i++) x[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
  CHECK_EQ_INT(s.run(m, x, y1), 0);
  const void *ins[1] = {x};
  void *outs[1] = {y2};
  CHECK_EQ_INT(s.run_io(m, ins, outs), 0);
  CHECK(memcmp(y1, y2, nout * 4) == 0);
  CHECK_EQ_INT(tc_ref_run(g, x, want, err, sizeof err), TH_OK);
  double mx, diff = max_diff(y2, want, nout, &mx);
  fprintf(stderr, "vit: max diff %.3g of max |ref| %.3g\n", diff, mx);
  CHECK(mx > 0 && diff <= 1e-3 * mx);
  s.free_(m);
  dlclose(s.h);
  free(x);
  free(y1);
  free(y2);
  free(want);
  th_buf_free(&pb);
  tc_graph_free(g);
  (void)th_rm_rf(dir);
  return 0;
}
