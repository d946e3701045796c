/* libFuzzer target of the params.bin reader: th_params_parse and th_params_find
 * (compiler/runtime/th_params.c, the one reader, compiled into the compiler and, as text, into
 * every model .so, where th_model_create runs it on the bytes a user passes), and tc_params_load
 * (compiler/params.c), which copies the tensors into a small graph's parameters by name and shape.
 *
 * Every input is read twice: as it is, and with its 32-byte header repaired (magic, version, the
 * total size and the CRC-32 of the rest), because a CRC check would otherwise stop nearly every
 * mutation before the tensor walk. An accepted file is read back in full (every tensor's name and
 * data, within the buffer, as ASan checks) and every tensor is found again by its own name and
 * shape. Built by tests/fuzz/fuzz.cmake with clang-16. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "params.h"
#include "th_params.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* conv1 (weight, no bias) -> bn1 -> relu -> fc (weight, bias): the parameter names and shapes of
 * the seeds in tests/fuzz/corpus/params/ */
static tc_graph *fz_graph(void) {
  static tc_graph *g;
  if (g) return g;
  g = tc_graph_new("fuzz", 1);
  int x = g ? tc_graph_input(g, 1, 2, 2) : -1;
  if (x >= 0) x = tc_graph_conv(g, "conv1", x, 2, 1, 1, 1, 1, 0, 0, 1, 0);
  if (x >= 0) x = tc_graph_bn(g, "bn1", x, 1e-5f);
  if (x >= 0) x = tc_graph_relu(g, x);
  if (x >= 0) x = tc_graph_flatten(g, x);
  if (x >= 0) x = tc_graph_dense(g, "fc", x, 3, 1);
  if (x < 0 || tc_graph_finish(g) != TH_OK) abort(); /* the harness itself is broken */
  return g;
}

static void fz_read(const uint8_t *p, size_t size) {
  char err[512];
  err[0] = '\0';
  int n = th_params_parse(p, size, NULL, 0, err, sizeof err);
  if (n < 0) {
    if (strncmp(err, "params.bin: ", 12) != 0) __builtin_trap(); /* every failure says why */
    return;
  }
  th_params_tensor *es = calloc((size_t)(n ? n : 1), sizeof *es);
  if (!es) return;
  if (th_params_parse(p, size, es, n, err, sizeof err) != n) __builtin_trap();
  volatile float sink = 0;
  for (int i = 0; i < n; i++) {
    const th_params_tensor *e = &es[i];
    if ((const uint8_t *)e->name < p || (const uint8_t *)(e->name + e->name_len) > p + size)
      __builtin_trap();
    volatile char c = e->name[e->name_len - 1];
    (void)c;
    if (e->numel > 0) sink += e->data[0] + e->data[e->numel - 1];
    char name[TH_PARAMS_MAX_NAME + 1];
    memcpy(name, e->name, e->name_len);
    name[e->name_len] = '\0';
    if (memchr(name, '\0', e->name_len)) continue; /* a C caller cannot name it */
    const th_params_tensor *f =
        th_params_find(es, n, name, (int)e->ndim, e->shape, "fuzz", err, sizeof err);
    if (f && (f->name_len != e->name_len || memcmp(f->name, e->name, e->name_len) != 0))
      __builtin_trap();
  }
  (void)sink;
  free(es);
  tc_params_load(fz_graph(), p, size, err, sizeof err);
}

static void fz_put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_read(data, size);
  if (size < TH_PARAMS_HEADER) return 0;
  /* a copy, so that ASan sees reads past the end of exactly size bytes */
  uint8_t *p = malloc(size);
  if (!p) return 0;
  memcpy(p, data, size);
  memcpy(p, TH_PARAMS_MAGIC, 8);
  fz_put32(p + 8, TH_PARAMS_VERSION);
  fz_put32(p + 16, (uint32_t)size);
  fz_put32(p + 20, (uint32_t)((uint64_t)size >> 32));
  fz_put32(p + 24, th_params_crc32(0, p + TH_PARAMS_HEADER, size - TH_PARAMS_HEADER));
  fz_read(p, size);
  free(p);
  return 0;
}
