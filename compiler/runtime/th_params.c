/* The params.bin reader and the batch-norm fold of th_params.h. The reader trusts nothing: every
 * length is checked against the remaining bytes before it is used, so a truncated or corrupt file
 * gives an error message instead of a crash (the tests feed it every truncation of a valid file).
 * Messages are written with snprintf only, so the same text serves the compiler and a model .so. */
#include "th_params.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* CRC-32 (zlib's) eight bytes at a time ("slicing by 8"): t[0] is the bytewise table, t[j][b] the CRC of
 * byte b followed by j zero bytes, so that one step folds eight bytes with eight lookups; the bytewise loop
 * took 1 s of a bert bundle's 440 MB load. */
TH_PARAMS_API uint32_t th_params_crc32(uint32_t crc, const void *data, size_t n) {
  uint32_t t[8][256]; /* 18k operations: cheaper than any once-only initialisation across threads */
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; i++)
    for (int j = 1; j < 8; j++) t[j][i] = t[0][t[j - 1][i] & 0xFF] ^ (t[j - 1][i] >> 8);
  const unsigned char *p = data;
  crc = ~crc;
  for (; n >= 8; n -= 8, p += 8) {
    uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
    uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
    crc = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^
          t[3][hi & 0xFF] ^ t[2][(hi >> 8) & 0xFF] ^ t[1][(hi >> 16) & 0xFF] ^ t[0][hi >> 24];
  }
  for (; n; n--, p++) crc = t[0][(crc ^ *p) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

static uint32_t th__params_get32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t th__params_get64(const unsigned char *p) {
  return (uint64_t)th__params_get32(p) | (uint64_t)th__params_get32(p + 4) << 32;
}

static int th__params_fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int th__params_fail(char *err, size_t errlen, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return -1;
}

TH_PARAMS_API int th_params_parse(const void *data, size_t size, th_params_tensor *es, int max,
                                  char *err, size_t errlen) {
  const unsigned char *p = data;
  if (!data || size < TH_PARAMS_HEADER || memcmp(p, TH_PARAMS_MAGIC, 8) != 0)
    return th__params_fail(
        err, errlen,
        "params.bin: not a tunehub parameter file (bad magic or shorter than %d bytes)",
        TH_PARAMS_HEADER);
  uint32_t ver = th__params_get32(p + 8), n = th__params_get32(p + 12);
  uint64_t fsize = th__params_get64(p + 16);
  if (ver != TH_PARAMS_VERSION)
    return th__params_fail(err, errlen, "params.bin: version %u, this build reads version %u", ver,
                           TH_PARAMS_VERSION);
  if (fsize != size)
    return th__params_fail(err, errlen,
                           "params.bin: header says %llu bytes but %zu were given (truncated?)",
                           (unsigned long long)fsize, size);
  if (th_params_crc32(0, p + TH_PARAMS_HEADER, size - TH_PARAMS_HEADER) != th__params_get32(p + 24))
    return th__params_fail(err, errlen, "params.bin: checksum mismatch (file corrupt)");
  if (n > (uint32_t)INT32_MAX)
    return th__params_fail(err, errlen, "params.bin: %u tensors (at most 2^31 - 1)", n);
  size_t off = TH_PARAMS_HEADER;
  for (uint32_t i = 0; i < n; i++) {
    th_params_tensor e;
    memset(&e, 0, sizeof e);
    if (size - off < 4) goto bad;
    e.name_len = th__params_get32(p + off);
    off += 4;
    if (e.name_len == 0 || e.name_len > TH_PARAMS_MAX_NAME || size - off < e.name_len + 4u)
      goto bad;
    e.name = (const char *)p + off;
    off += e.name_len;
    e.ndim = th__params_get32(p + off);
    off += 4;
    if (e.ndim > TH_PARAMS_MAX_NDIM || size - off < 8u * e.ndim) goto bad;
    /* The cap applies to the product of the nonzero dimensions, so that whether a shape is accepted
     * does not depend on where its zero stands. */
    uint64_t nonzero = 1;
    int zero = 0;
    for (uint32_t d = 0; d < e.ndim; d++) {
      uint64_t v = th__params_get64(p + off);
      off += 8;
      if (v > TH_PARAMS_MAX_NUMEL) goto bad;
      if (v == 0) {
        zero = 1;
      } else {
        if (nonzero > TH_PARAMS_MAX_NUMEL / v) goto bad;
        nonzero *= v;
      }
      e.shape[d] = (int64_t)v;
    }
    e.numel = zero ? 0 : (int64_t)nonzero;
    off += (TH_PARAMS_ALIGN - off % TH_PARAMS_ALIGN) % TH_PARAMS_ALIGN;
    if (off > size || (uint64_t)(size - off) / sizeof(float) < (uint64_t)e.numel) goto bad;
    e.data = (const float *)(const void *)(p + off);
    off += (size_t)e.numel * sizeof(float);
    if (es && (int)i < max) es[i] = e;
    continue;
  bad:
    return th__params_fail(err, errlen, "params.bin: tensor %u of %u is truncated or malformed",
                           i + 1, n);
  }
  if (off != size)
    return th__params_fail(err, errlen, "params.bin: %zu trailing bytes after the last tensor",
                           size - off);
  return (int)n;
}

/* "AxBxC" into buf. */
static void th__params_dims(char *buf, size_t n, int ndim, const int64_t *shape) {
  size_t used = 0;
  buf[0] = '\0';
  for (int d = 0; d < ndim && used < n; d++)
    used += (size_t)snprintf(buf + used, n - used, "%s%lld", d ? "x" : "", (long long)shape[d]);
}

TH_PARAMS_API const th_params_tensor *th_params_find(const th_params_tensor *es, int n,
                                                     const char *name, int ndim,
                                                     const int64_t *shape, const char *network,
                                                     char *err, size_t errlen) {
  size_t nl = strlen(name);
  const th_params_tensor *e = NULL;
  for (int i = 0; i < n; i++) {
    if (es[i].name_len != nl || memcmp(es[i].name, name, nl) != 0) continue;
    if (e) {
      th__params_fail(err, errlen, "params.bin: tensor '%s' appears twice (%s expects it once)",
                      name, network);
      return NULL;
    }
    e = &es[i];
  }
  if (!e) {
    th__params_fail(err, errlen, "params.bin: missing tensor '%s' (%s expects it)", name, network);
    return NULL;
  }
  int same = (int)e->ndim == ndim;
  for (int d = 0; same && d < ndim; d++) same = e->shape[d] == shape[d];
  if (!same) {
    char got[128], want[128];
    th__params_dims(got, sizeof got, (int)e->ndim, e->shape);
    th__params_dims(want, sizeof want, ndim, shape);
    th__params_fail(err, errlen, "params.bin: tensor '%s' has shape [%s], %s expects [%s]", name,
                    got, network, want);
    return NULL;
  }
  return e;
}

TH_PARAMS_API void th_params_fold_bn(const float *w, float *w_out, int64_t per, int oc,
                                     const float *bias, const float *gamma, const float *beta,
                                     const float *mean, const float *var, float eps,
                                     float *bias_out) {
  for (int o = 0; o < oc; o++) {
    float s = 1.0f, sh = 0.0f;
    if (gamma) {
      s = gamma[o] / sqrtf(var[o] + eps);
      sh = beta[o] - mean[o] * s;
    }
    for (int64_t k = 0; k < per; k++) w_out[o * per + k] = w[o * per + k] * s;
    if (bias_out) bias_out[o] = (bias ? bias[o] : 0.0f) * s + sh;
  }
}
