/* Writer of params.bin, and the compiler's side of its reader: the parsing and the name and shape
 * checks are runtime/th_params.c's, the same code every model .so runs, so a file the compiler
 * accepts is one a model accepts; here they are mapped to th_status codes and copied into a graph.
 */
#include "params.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void tc__put32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void tc__put64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

th_status tc_params_write(const tc_graph *g, th_buf *out) {
  size_t start = out->len;
  unsigned char hdr[TH_PARAMS_HEADER] = {0};
  th_status rc = th_buf_append(out, hdr, sizeof hdr);
  uint32_t count = 0;
  static const unsigned char zeros[TH_PARAMS_ALIGN] = {0};
  for (int i = 0; rc == TH_OK && i < g->nparams; i++) {
    const tc_param *p = &g->params[i];
    if (!p->used || !p->data || p->nparts) continue; /* a composite's parts are stored instead */
    unsigned char b[8];
    uint32_t nl = (uint32_t)strlen(p->name);
    tc__put32(b, nl);
    rc = th_buf_append(out, b, 4);
    if (rc == TH_OK) rc = th_buf_append(out, p->name, nl);
    tc__put32(b, (uint32_t)p->ndim);
    if (rc == TH_OK) rc = th_buf_append(out, b, 4);
    for (int d = 0; rc == TH_OK && d < p->ndim; d++) {
      tc__put64(b, (uint64_t)p->shape[d]);
      rc = th_buf_append(out, b, 8);
    }
    size_t pad = (TH_PARAMS_ALIGN - (out->len - start) % TH_PARAMS_ALIGN) % TH_PARAMS_ALIGN;
    if (rc == TH_OK) rc = th_buf_append(out, zeros, pad);
    /* little-endian hosts only (x86-64, aarch64): floats are stored as they sit in memory */
    if (rc == TH_OK) rc = th_buf_append(out, p->data, (size_t)p->numel * sizeof(float));
    count++;
  }
  if (rc != TH_OK) return rc;
  unsigned char *h = (unsigned char *)out->data + start;
  size_t size = out->len - start;
  memcpy(h, TH_PARAMS_MAGIC, 8);
  tc__put32(h + 8, TH_PARAMS_VERSION);
  tc__put32(h + 12, count);
  tc__put64(h + 16, size);
  tc__put32(h + 24, th_params_crc32(0, h + TH_PARAMS_HEADER, size - TH_PARAMS_HEADER));
  tc__put32(h + 28, 0);
  return TH_OK;
}

th_status tc_params_parse(const void *data, size_t size, tc_params_entry *entries, int max,
                          int *count, char *err, size_t errlen) {
  int n = th_params_parse(data, size, entries, entries ? max : 0, err, errlen);
  if (n < 0) return TH_ERR_CORRUPT;
  *count = n;
  return TH_OK;
}

th_status tc_params_load(tc_graph *g, const void *data, size_t size, char *err, size_t errlen) {
  int n = 0;
  th_status rc = tc_params_parse(data, size, NULL, 0, &n, err, errlen);
  if (rc != TH_OK) return rc;
  tc_params_entry *es = calloc((size_t)(n ? n : 1), sizeof *es);
  if (!es) return TH_ERR_NOMEM;
  rc = tc_params_parse(data, size, es, n, &n, err, errlen);
  for (int i = 0; rc == TH_OK && i < g->nparams; i++) {
    tc_param *p = &g->params[i];
    if (!p->used || p->nparts) continue; /* a composite is its parts (below) */
    const tc_params_entry *e =
        th_params_find(es, n, p->name, p->ndim, p->shape, g->network, err, errlen);
    if (!e) {
      rc = TH_ERR_INVALID;
      break;
    }
    if (!p->data) p->data = th_arena_alloc(g->arena, (size_t)p->numel * sizeof(float));
    if (!p->data) {
      rc = TH_ERR_NOMEM;
      break;
    }
    memcpy(p->data, e->data, (size_t)p->numel * sizeof(float));
  }
  if (rc == TH_OK) rc = tc_graph_concat_params(g);
  if (rc == TH_OK) g->has_data = 1;
  free(es);
  return rc;
}
