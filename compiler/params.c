/* Reader and writer of params.bin. The reader trusts nothing: every length is checked against the
 * remaining bytes before it is used, so a truncated or corrupt file gives TH_ERR_CORRUPT with a message
 * instead of a crash (the fuzz-style tests feed it every truncation of a valid file). */
#include "params.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint32_t tc_crc32(uint32_t crc, const void *data, size_t n) {
  uint32_t table[256]; /* 2k operations: cheaper than any once-only initialisation across threads */
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
  const unsigned char *p = data;
  crc = ~crc;
  for (size_t i = 0; i < n; i++) crc = table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

static void tc__put32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void tc__put64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t tc__get32(const unsigned char *p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
  return v;
}

static uint64_t tc__get64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

th_status tc_params_write(const tc_graph *g, th_buf *out) {
  size_t start = out->len;
  unsigned char hdr[TC_PARAMS_HEADER] = {0};
  th_status rc = th_buf_append(out, hdr, sizeof hdr);
  uint32_t count = 0;
  static const unsigned char zeros[TC_PARAMS_ALIGN] = {0};
  for (int i = 0; rc == TH_OK && i < g->nparams; i++) {
    const tc_param *p = &g->params[i];
    if (!p->used || !p->data) continue;
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
    size_t pad = (TC_PARAMS_ALIGN - (out->len - start) % TC_PARAMS_ALIGN) % TC_PARAMS_ALIGN;
    if (rc == TH_OK) rc = th_buf_append(out, zeros, pad);
    /* little-endian hosts only (x86-64, aarch64): floats are stored as they sit in memory */
    if (rc == TH_OK) rc = th_buf_append(out, p->data, (size_t)p->numel * sizeof(float));
    count++;
  }
  if (rc != TH_OK) return rc;
  unsigned char *h = (unsigned char *)out->data + start;
  size_t size = out->len - start;
  memcpy(h, TC_PARAMS_MAGIC, 8);
  tc__put32(h + 8, TC_PARAMS_VERSION);
  tc__put32(h + 12, count);
  tc__put64(h + 16, size);
  tc__put32(h + 24, tc_crc32(0, h + TC_PARAMS_HEADER, size - TC_PARAMS_HEADER));
  tc__put32(h + 28, 0);
  return TH_OK;
}

th_status tc_params_parse(const void *data, size_t size, tc_params_entry *entries, int max, int *count,
                          char *err, size_t errlen) {
  const unsigned char *p = data;
  if (!data || size < TC_PARAMS_HEADER || memcmp(p, TC_PARAMS_MAGIC, 8) != 0) {
    snprintf(err, errlen, "params.bin: not a tunehub parameter file (bad magic or shorter than %d bytes)",
             TC_PARAMS_HEADER);
    return TH_ERR_CORRUPT;
  }
  uint32_t ver = tc__get32(p + 8), n = tc__get32(p + 12);
  uint64_t fsize = tc__get64(p + 16);
  if (ver != TC_PARAMS_VERSION) {
    snprintf(err, errlen, "params.bin: version %u, this build reads version %u", ver, TC_PARAMS_VERSION);
    return TH_ERR_CORRUPT;
  }
  if (fsize != size) {
    snprintf(err, errlen, "params.bin: header says %llu bytes but %zu were given (truncated?)",
             (unsigned long long)fsize, size);
    return TH_ERR_CORRUPT;
  }
  uint32_t crc = tc_crc32(0, p + TC_PARAMS_HEADER, size - TC_PARAMS_HEADER);
  if (crc != tc__get32(p + 24)) {
    snprintf(err, errlen, "params.bin: checksum mismatch (file corrupt)");
    return TH_ERR_CORRUPT;
  }
  size_t off = TC_PARAMS_HEADER;
  for (uint32_t i = 0; i < n; i++) {
    tc_params_entry e;
    memset(&e, 0, sizeof e);
    if (size - off < 4) goto trunc;
    e.name_len = tc__get32(p + off);
    off += 4;
    if (e.name_len == 0 || e.name_len > 1024 || size - off < e.name_len + 4u) goto trunc;
    e.name = (const char *)p + off;
    off += e.name_len;
    e.ndim = tc__get32(p + off);
    off += 4;
    if (e.ndim > 8 || size - off < 8u * e.ndim) goto trunc;
    e.numel = 1;
    for (uint32_t d = 0; d < e.ndim; d++) {
      uint64_t v = tc__get64(p + off);
      off += 8;
      if (v > (1ull << 40) || (e.numel > 0 && (uint64_t)e.numel > (1ull << 40) / (v ? v : 1))) goto trunc;
      e.shape[d] = (int64_t)v;
      e.numel *= (int64_t)v;
    }
    off += (TC_PARAMS_ALIGN - off % TC_PARAMS_ALIGN) % TC_PARAMS_ALIGN;
    if (off > size || (uint64_t)(size - off) / sizeof(float) < (uint64_t)e.numel) goto trunc;
    e.data = (const float *)(const void *)(p + off);
    off += (size_t)e.numel * sizeof(float);
    if (entries && (int)i < max) entries[i] = e;
    continue;
  trunc:
    snprintf(err, errlen, "params.bin: tensor %u of %u is truncated or malformed", i + 1, n);
    return TH_ERR_CORRUPT;
  }
  if (off != size) {
    snprintf(err, errlen, "params.bin: %zu trailing bytes after the last tensor", size - off);
    return TH_ERR_CORRUPT;
  }
  *count = (int)n;
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
    if (!p->used) continue;
    const tc_params_entry *e = NULL;
    size_t nl = strlen(p->name);
    for (int k = 0; k < n; k++)
      if (es[k].name_len == nl && memcmp(es[k].name, p->name, nl) == 0) e = &es[k];
    if (!e) {
      snprintf(err, errlen, "params.bin: missing tensor '%s' (%s expects it)", p->name, g->network);
      rc = TH_ERR_INVALID;
      break;
    }
    int same = (int)e->ndim == p->ndim;
    for (int d = 0; same && d < p->ndim; d++) same = e->shape[d] == p->shape[d];
    if (!same) {
      char want[96] = "", got[96] = "";
      size_t o1 = 0, o2 = 0;
      for (int d = 0; d < p->ndim && o1 < sizeof want; d++)
        o1 += (size_t)snprintf(want + o1, sizeof want - o1, "%s%lld", d ? "x" : "", (long long)p->shape[d]);
      for (uint32_t d = 0; d < e->ndim && o2 < sizeof got; d++)
        o2 += (size_t)snprintf(got + o2, sizeof got - o2, "%s%lld", d ? "x" : "", (long long)e->shape[d]);
      snprintf(err, errlen, "params.bin: tensor '%s' has shape [%s], %s expects [%s]", p->name, got,
               g->network, want);
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
  if (rc == TH_OK) g->has_data = 1;
  free(es);
  return rc;
}
