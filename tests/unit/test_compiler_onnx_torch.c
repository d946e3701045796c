/* Conformance of the ONNX importer with PyTorch (label conformance): onnx_torch_export.py exports
 * seeded torch models (torchvision's resnet18 and mobilenet_v3_small, nn.TransformerEncoderLayer)
 * with a dynamic batch axis at several opsets, and the imported graph, run by the reference
 * interpreter, must reproduce torch's outputs within 1e-4 of their largest magnitude, at the
 * exported batch (2) and at batch 1 (the first sample). Cases exit 77 when /usr/bin/python3 cannot
 * import torch and torchvision. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "onnx.h"
#include "ref/ref.h"
#include "th_test.h"

static int tt_have_torch(void) {
  return system("/usr/bin/python3 -c 'import torch, torchvision' >/dev/null 2>&1") == 0;
}

static void *tt_read(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  CHECK(f != NULL);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *p = malloc((size_t)n + 1);
  CHECK(p && fread(p, 1, (size_t)n, f) == (size_t)n);
  fclose(f);
  *len = (size_t)n;
  return p;
}

/* Exports `which` at `opset` into a new temp dir (returned, malloc'd). */
static char *tt_export(const char *which, int opset) {
  char *dir = strdup("/tmp/tc_onnx_torch_XXXXXX");
  CHECK(mkdtemp(dir) != NULL);
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s/tests/unit/onnx_torch_export.py %s %d %s",
           TH_SRC_DIR, dir, opset, which);
  CHECK(system(cmd) == 0);
  return dir;
}

static void tt_rmdir(char *dir) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0);
  free(dir);
}

/* Imports DIR/NAME.onnx at batch 2 and 1 and compares with torch's output for the same input rows.
 */
static void tt_check(const char *dir, const char *name, int fused_ln, int fused_gelu) {
  char path[512];
  size_t n_in, n_out;
  snprintf(path, sizeof path, "%s/%s.in", dir, name);
  float *in = tt_read(path, &n_in);
  snprintf(path, sizeof path, "%s/%s.out", dir, name);
  float *want = tt_read(path, &n_out);
  snprintf(path, sizeof path, "%s/%s.onnx", dir, name);
  for (int batch = 2; batch >= 1; batch--) {
    tc_onnx_opts o = {name, batch, NULL, 1};
    tc_graph *g = NULL;
    tc_onnx_info info;
    char err[2048];
    th_status rc = tc_onnx_import_file(path, &o, &g, &info, err, sizeof err);
    if (rc != TH_OK) fprintf(stderr, "%s: %s\n", path, err);
    CHECK(rc == TH_OK);
    fprintf(stderr,
            "%s batch %d: opset %lld, %d nodes (%d folded, %d layer norms, %d gelus) -> %d graph "
            "nodes\n",
            name, batch, (long long)info.opset, info.nnodes, info.folded, info.fused_layer_norm,
            info.fused_gelu, g->nnodes);
    CHECK_EQ_INT(info.fused_layer_norm, fused_ln);
    CHECK_EQ_INT(info.fused_gelu, fused_gelu);
    const tc_tensor *ti = &g->nodes[g->inputs[0]].out, *to = &g->nodes[g->outputs[0]].out;
    CHECK((size_t)tc_tensor_bytes(ti) * 2 == n_in * (size_t)batch);
    CHECK((size_t)tc_tensor_bytes(to) * 2 == n_out * (size_t)batch);
    float *out = malloc((size_t)tc_tensor_bytes(to));
    const void *ins[1] = {in};
    void *outs[1] = {out};
    rc = tc_ref_run_io(g, ins, outs, err, sizeof err);
    if (rc != TH_OK) fprintf(stderr, "reference: %s\n", err);
    CHECK(rc == TH_OK);
    double mx = 0, d = 0;
    for (int64_t i = 0; i < tc_tensor_numel(to); i++) {
      CHECK(isfinite(out[i]));
      mx = fmax(mx, fabs(want[i]));
      d = fmax(d, fabs((double)out[i] - want[i]));
    }
    fprintf(stderr, "  max |diff| %.3g, max |torch| %.3g, relative %.3g\n", d, mx, d / mx);
    CHECK(mx > 0 && d / mx <= 1e-4);
    free(out);
    tc_graph_free(g);
  }
  free(in);
  free(want);
}

TH_TEST(torch_resnet18) {
  if (!tt_have_torch()) return TH_SKIP;
  char *dir = tt_export("resnet18", 13);
  tt_check(dir, "resnet18", 0, 0);
  tt_rmdir(dir);
  return 0;
}

/* hardswish (HardSwish from opset 14, x * HardSigmoid(x) below), squeeze-excite (HardSigmoid gate
 * times the map), depthwise convs, Relu, GlobalAveragePool */
TH_TEST(torch_mobilenet_v3) {
  if (!tt_have_torch()) return TH_SKIP;
  static const int opsets[] = {13, 14};
  for (size_t i = 0; i < sizeof opsets / sizeof opsets[0]; i++) {
    char *dir = tt_export("mobilenet_v3", opsets[i]);
    tt_check(dir, "mobilenet_v3", 0, 0);
    tt_rmdir(dir);
  }
  return 0;
}

TH_TEST(torch_encoder_layer) {
  if (!tt_have_torch()) return TH_SKIP;
  static const int opsets[] = {11, 13, 17};
  for (size_t i = 0; i < sizeof opsets / sizeof opsets[0]; i++) {
    char *dir = tt_export("encoder", opsets[i]);
    tt_check(dir, "encoder", opsets[i] < 17 ? 2 : 0,
             1); /* opset 17 exports LayerNormalization itself */
    tt_rmdir(dir);
  }
  return 0;
}
