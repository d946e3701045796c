/* The part of every model .so that both backends share, between th_params (the params.bin reader,
 * in front of it) and the backend's own runtime (model_rt.c, cuda/rt/model_rt_cuda.c, after it):
 * the thread's last error, th_model_info, reading params.bin into a tensor list, and fetching one
 * layer's weights with its bias and batch norm folded in. Like the files around it, it is text that
 * compiler/embed.cmake joins into the runtime part of every generated model.c, after the generated
 * tables (th__info, th__wparams with the fields weight, bias, gamma, beta, mean, var, eps, oc,
 * ndim, shape). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The start of th_model_create: clears the last error, checks the arguments and reads params.bin
 * into *es (malloc'd, the caller frees it; it points into params). Returns the tensor count, or -1
 * with the error set. */
static int th__create_begin(const void *params, size_t size, const void *out,
                            th_params_tensor **es) {
  th__err[0] = '\0';
  if (!params || !out) return th__fail("th_model_create: NULL argument");
  int n = th_params_parse(params, size, NULL, 0, th__err, sizeof th__err);
  if (n < 0) return -1;
  *es = calloc((size_t)n + 1, sizeof **es);
  if (!*es) return th__fail("out of memory");
  th_params_parse(params, size, *es, n, th__err, sizeof th__err);
  return n;
}

/* The tensor `name` of shape[0 .. ndim) copied into a fresh buffer; NULL (error set) if it is
 * absent, of another shape or there twice. */
static float *th__fetch(const th_params_tensor *es, int n, const char *name, int ndim,
                        const int64_t *shape) {
  const th_params_tensor *e =
      th_params_find(es, n, name, ndim, shape, th__info.network, th__err, sizeof th__err);
  if (!e) return NULL;
  float *out = malloc((size_t)e->numel * sizeof(float) + 1);
  if (!out) {
    th__fail("out of memory");
    return NULL;
  }
  memcpy(out, e->data, (size_t)e->numel * sizeof(float));
  return out;
}

/* The weights of one layer in torch's layout with its batch norm folded in (malloc'd, the caller
 * frees them), and its folded bias written to bias (oc floats) when bias is not NULL. The tensors
 * are fetched in order, stopping at the first failure so that the error names it; NULL then. */
static float *th__folded_weights(const struct th__wparam *wp, const th_params_tensor *es, int n,
                                 float *bias) {
  int64_t cshape[1] = {wp->oc};
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
    th_params_fold_bn(w, w, numel / wp->oc, wp->oc, b, ga, be, me, va, wp->eps, bias);
  }
  free(b);
  free(ga);
  free(be);
  free(me);
  free(va);
  if (!ok) {
    free(w);
    return NULL;
  }
  return w;
}
