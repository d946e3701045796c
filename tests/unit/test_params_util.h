/* Hand-made params.bin files for the reader tests (test_compiler_graph.c, test_compiler_graph_model.c):
 * shapes and duplicates that tc_params_write never writes. Each append rewrites the header's count, size
 * and CRC, so every file is valid but for what the test puts in it. */
#ifndef TEST_PARAMS_UTIL_H
#define TEST_PARAMS_UTIL_H

#include <stdint.h>
#include <string.h>

#include "th_buf.h"
#include "th_params.h"

static void tp__put(unsigned char *p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* Rewrites the header of the params.bin in b for `count` tensors. */
static void tp_seal(th_buf *b, uint32_t count) {
  unsigned char *h = (unsigned char *)b->data;
  memcpy(h, TH_PARAMS_MAGIC, 8);
  tp__put(h + 8, TH_PARAMS_VERSION, 4);
  tp__put(h + 12, count, 4);
  tp__put(h + 16, b->len, 8);
  tp__put(h + 24, th_params_crc32(0, h + TH_PARAMS_HEADER, b->len - TH_PARAMS_HEADER), 4);
  tp__put(h + 28, 0, 4);
}

/* Appends a tensor of nfloats floats from data (the count need not be prod(dims): a test may lie) to the
 * params.bin in b, which holds `count` tensors before the call (b empty: a new file). */
static th_status tp_append(th_buf *b, uint32_t count, const char *name, uint32_t ndim, const uint64_t *dims,
                           const float *data, size_t nfloats) {
  static const unsigned char zeros[TH_PARAMS_ALIGN] = {0};
  th_status rc = b->len ? TH_OK : th_buf_append(b, zeros, TH_PARAMS_HEADER);
  unsigned char u[8];
  tp__put(u, strlen(name), 4);
  if (rc == TH_OK) rc = th_buf_append(b, u, 4);
  if (rc == TH_OK) rc = th_buf_append(b, name, strlen(name));
  tp__put(u, ndim, 4);
  if (rc == TH_OK) rc = th_buf_append(b, u, 4);
  for (uint32_t d = 0; rc == TH_OK && d < ndim; d++) {
    tp__put(u, dims[d], 8);
    rc = th_buf_append(b, u, 8);
  }
  if (rc == TH_OK) rc = th_buf_append(b, zeros, (TH_PARAMS_ALIGN - b->len % TH_PARAMS_ALIGN) % TH_PARAMS_ALIGN);
  if (rc == TH_OK && nfloats) rc = th_buf_append(b, data, nfloats * sizeof(float));
  if (rc == TH_OK) tp_seal(b, count + 1);
  return rc;
}

#endif
