/* The fixed part of every generated model.c (appended after the generated tables th__info, th__calls,
 * th__wparams and the th__* sizes): the params.bin reader, weight folding and packing, and the plan
 * interpreter that calls the kernels in order over one workspace. Plain C11; it is embedded into tunehub
 * and never compiled into tunehub itself. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct th_model {
  float *weights;   /* packed weights and folded biases, one allocation */
  float *workspace; /* every intermediate tensor */
};

static _Thread_local char th__err[512];

const char *th_model_last_error(void) {
  return th__err;
}

static int th__fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int th__fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(th__err, sizeof th__err, fmt, ap);
  va_end(ap);
  return -1;
}

const struct th_model_info *th_model_info(void) {
  return &th__info;
}

static uint32_t th__get32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t th__get64(const unsigned char *p) {
  return (uint64_t)th__get32(p) | (uint64_t)th__get32(p + 4) << 32;
}

static uint32_t th__crc32(const unsigned char *p, size_t n) {
  uint32_t table[256], crc = 0xFFFFFFFFu;
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
  for (size_t i = 0; i < n; i++) crc = table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

struct th__tensor {
  const char *name;
  uint32_t name_len, ndim;
  int64_t shape[8];
  int64_t numel;
  const unsigned char *data;
};

/* Validates params.bin and fills up to max entries; returns the count or -1. */
static int th__parse(const unsigned char *p, size_t size, struct th__tensor *es, int max) {
  if (size < 32 || memcmp(p, "THPARAMS", 8) != 0)
    return th__fail("params.bin: not a tunehub parameter file (bad magic or fewer than 32 bytes)");
  if (th__get32(p + 8) != 1) return th__fail("params.bin: unsupported version %u", th__get32(p + 8));
  if (th__get64(p + 16) != size)
    return th__fail("params.bin: header says %llu bytes but %zu were given (truncated?)",
                    (unsigned long long)th__get64(p + 16), size);
  if (th__crc32(p + 32, size - 32) != th__get32(p + 24))
    return th__fail("params.bin: checksum mismatch (file corrupt)");
  uint32_t n = th__get32(p + 12);
  size_t off = 32;
  for (uint32_t i = 0; i < n; i++) {
    struct th__tensor e;
    memset(&e, 0, sizeof e);
    if (size - off < 4) goto trunc;
    e.name_len = th__get32(p + off);
    off += 4;
    if (e.name_len == 0 || e.name_len > 1024 || size - off < e.name_len + 4u) goto trunc;
    e.name = (const char *)p + off;
    off += e.name_len;
    e.ndim = th__get32(p + off);
    off += 4;
    if (e.ndim > 8 || size - off < 8u * e.ndim) goto trunc;
    e.numel = 1;
    for (uint32_t d = 0; d < e.ndim; d++) {
      uint64_t v = th__get64(p + off);
      off += 8;
      if (v > (1ull << 40) || (uint64_t)e.numel > (1ull << 40) / (v ? v : 1)) goto trunc;
      e.shape[d] = (int64_t)v;
      e.numel *= (int64_t)v;
    }
    off += (64 - off % 64) % 64;
    if (off > size || (uint64_t)(size - off) / 4 < (uint64_t)e.numel) goto trunc;
    e.data = p + off;
    off += (size_t)e.numel * 4;
    if ((int)i < max) es[i] = e;
    continue;
  trunc:
    return th__fail("params.bin: tensor %u of %u is truncated or malformed", i + 1, n);
  }
  if (off != size) return th__fail("params.bin: %zu trailing bytes after the last tensor", size - off);
  return (int)n;
}

/* The tensor named `name` with `numel` floats copied into a fresh buffer; NULL (error set) if absent or
 * of another shape. */
static float *th__fetch(const struct th__tensor *es, int n, const char *name, int ndim,
                        const int64_t *shape) {
  size_t nl = strlen(name);
  for (int i = 0; i < n; i++) {
    if (es[i].name_len != nl || memcmp(es[i].name, name, nl) != 0) continue;
    int same = (int)es[i].ndim == ndim;
    for (int d = 0; same && d < ndim; d++) same = es[i].shape[d] == shape[d];
    if (!same) {
      char got[128] = "", want[128] = "";
      size_t a = 0, b = 0;
      for (uint32_t d = 0; d < es[i].ndim && a < sizeof got; d++)
        a += (size_t)snprintf(got + a, sizeof got - a, "%s%lld", d ? "x" : "", (long long)es[i].shape[d]);
      for (int d = 0; d < ndim && b < sizeof want; d++)
        b += (size_t)snprintf(want + b, sizeof want - b, "%s%lld", d ? "x" : "", (long long)shape[d]);
      th__fail("params.bin: tensor '%s' has shape [%s], %s expects [%s]", name, got, th__info.network,
               want);
      return NULL;
    }
    float *out = malloc((size_t)es[i].numel * sizeof(float) + 1);
    if (!out) {
      th__fail("out of memory");
      return NULL;
    }
    memcpy(out, es[i].data, (size_t)es[i].numel * sizeof(float));
    return out;
  }
  th__fail("params.bin: missing tensor '%s' (%s expects it)", name, th__info.network);
  return NULL;
}

static int th__load_weights(struct th_model *m, const struct th__tensor *es, int n) {
  for (int i = 0; i < (int)(sizeof th__wparams / sizeof th__wparams[0]); i++) {
    const struct th__wparam *wp = &th__wparams[i];
    int64_t cshape[1] = {wp->oc};
    /* fetched in order, stopping at the first failure so the error names it */
    float *w = th__fetch(es, n, wp->weight, wp->ndim, wp->shape), *b = NULL;
    float *ga = NULL, *be = NULL, *me = NULL, *va = NULL;
    int ok = w != NULL;
    if (ok && wp->bias) ok = (b = th__fetch(es, n, wp->bias, 1, cshape)) != NULL;
    if (ok && wp->gamma) ok = (ga = th__fetch(es, n, wp->gamma, 1, cshape)) != NULL;
    if (ok && wp->gamma) ok = (be = th__fetch(es, n, wp->beta, 1, cshape)) != NULL;
    if (ok && wp->gamma) ok = (me = th__fetch(es, n, wp->mean, 1, cshape)) != NULL;
    if (ok && wp->gamma) ok = (va = th__fetch(es, n, wp->var, 1, cshape)) != NULL;
    if (ok) {
      int64_t numel = 1;
      for (int d = 0; d < wp->ndim; d++) numel *= wp->shape[d];
      int64_t per = numel / wp->oc;
      float *bias = wp->boff >= 0 ? m->weights + wp->boff : NULL;
      for (int o = 0; o < wp->oc; o++) {
        float s = 1.0f, sh = 0.0f;
        if (ga) {
          s = ga[o] / sqrtf(va[o] + wp->eps);
          sh = be[o] - me[o] * s;
        }
        for (int64_t k = 0; k < per; k++) w[o * per + k] *= s;
        if (bias) bias[o] = (b ? b[o] : 0.0f) * s + sh;
      }
      if (th_rt_pack_weights(wp->pack, w, m->weights + wp->woff) != 0) {
        th__fail("packing the weights of '%s' failed", wp->weight);
        ok = 0;
      }
    }
    free(w);
    free(b);
    free(ga);
    free(be);
    free(me);
    free(va);
    if (!ok) return -1;
  }
  return 0;
}

int th_model_create(const void *params, size_t size, struct th_model **out) {
  th__err[0] = '\0';
  if (!params || !out) return th__fail("th_model_create: NULL argument");
  int n = th__parse(params, size, NULL, 0);
  if (n < 0) return -1;
  struct th__tensor *es = calloc((size_t)n + 1, sizeof *es);
  struct th_model *m = calloc(1, sizeof *m);
  if (!es || !m) {
    free(es);
    free(m);
    return th__fail("out of memory");
  }
  th__parse(params, size, es, n);
  size_t wbytes = ((size_t)th__weights_floats * sizeof(float) + 63) / 64 * 64;
  size_t wsbytes = ((size_t)th__workspace_floats * sizeof(float) + 63) / 64 * 64;
  m->weights = aligned_alloc(64, wbytes ? wbytes : 64);
  m->workspace = aligned_alloc(64, wsbytes ? wsbytes : 64);
  int rc = (m->weights && m->workspace) ? 0 : th__fail("out of memory (%zu + %zu bytes)", wbytes, wsbytes);
  if (rc == 0) {
    memset(m->weights, 0, wbytes);
    memset(m->workspace, 0, wsbytes);
    rc = th__load_weights(m, es, n);
  }
  free(es);
  if (rc != 0) {
    th_model_free(m);
    return -1;
  }
  *out = m;
  return 0;
}

static double th__now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The plan interpreter; call_seconds, when not NULL, gets each call's wall time added. */
static int th__run(struct th_model *m, const float *input, float *output, double *call_seconds) {
  if (!m || !input || !output) return th__fail("th_model_run: NULL argument");
  memcpy(m->workspace + th__in_off, input, th__info.input_size * sizeof(float));
  for (int i = 0; i < (int)(sizeof th__calls / sizeof th__calls[0]); i++) {
    const struct th__call *c = &th__calls[i];
    void *args[5] = {0, 0, 0, 0, 0};
    for (int a = 0; a < c->nargs; a++) {
      switch (c->space[a]) {
        case 1: args[a] = m->workspace + c->off[a]; break;
        case 2:
        case 3: args[a] = m->weights + c->off[a]; break;
        default: args[a] = NULL; break;
      }
    }
    double t0 = call_seconds ? th__now() : 0;
    c->fn(args);
    if (call_seconds) call_seconds[i] += th__now() - t0;
  }
  memcpy(output, m->workspace + th__out_off, th__info.output_size * sizeof(float));
  return 0;
}

int th_model_run(struct th_model *m, const float *input, float *output) {
  return th__run(m, input, output, NULL);
}

int th_model_run_profiled(struct th_model *m, const float *input, float *output, double *call_seconds) {
  if (!call_seconds) return th__fail("th_model_run_profiled: NULL call_seconds");
  return th__run(m, input, output, call_seconds);
}

void th_model_free(struct th_model *m) {
  if (!m) return;
  free(m->weights);
  free(m->workspace);
  free(m);
}
