/* The part of every model .so that both backends share, between th_params (the params.bin reader,
 * in front of it) and the backend's own runtime (model_rt.c, cuda/rt/model_rt_cuda.c, after it):
 * the thread's last error, th_model_info, reading params.bin into a tensor list, fetching one
 * layer's weights with its bias and batch norm folded in, copying the parameters kernels read as
 * plain tensors, and the checks of th_model_run_io's arguments (embedding indices against their
 * tables). Like the files around it, it is text that compiler/embed.cmake joins into the runtime
 * part of every generated model.c, after the generated tables (th__info with
 * th__inputs/th__outputs, th__in/th__out, th__consts/th__nconsts,
 * th__index_checks/th__nindex_checks, th__cats/th__ncats, th__wparams with the fields weight, bias,
 * gamma, beta, mean, var, eps, oc, ndim, shape). */
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

/* The tensor `name` of shape[0 .. ndim) copied into a fresh buffer: a tensor of params.bin, or one
 * of th__cats, whose parts (each of shape[0] / nparts rows) are copied one after another. NULL
 * (error set) if it or a part is absent, of another shape or there twice. */
static float *th__fetch(const th_params_tensor *es, int n, const char *name, int ndim,
                        const int64_t *shape) {
  const struct th__cat *cat = NULL;
  for (int c = 0; c < th__ncats && !cat; c++)
    if (strcmp(th__cats[c].name, name) == 0) cat = &th__cats[c];
  int nparts = cat ? cat->nparts : 1;
  int64_t part_shape[6], numel = 1;
  for (int d = 0; d < ndim && d < 6; d++) {
    part_shape[d] = d == 0 ? shape[0] / nparts : shape[d];
    numel *= shape[d];
  }
  float *out = malloc((size_t)numel * sizeof(float) + 1);
  if (!out) {
    th__fail("out of memory");
    return NULL;
  }
  for (int k = 0; k < nparts; k++) {
    const th_params_tensor *e = th_params_find(es, n, cat ? cat->parts[k] : name, ndim, part_shape,
                                               th__info.network, th__err, sizeof th__err);
    if (!e) {
      free(out);
      return NULL;
    }
    memcpy(out + k * (numel / nparts), e->data, (size_t)e->numel * sizeof(float));
  }
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

/* Copies every parameter that kernels read as a plain tensor (th__consts: layer-norm gamma and
 * beta, embedding tables, position embeddings) raw into the weights blob. 0, or -1 with the error
 * naming the missing or misshapen tensor. */
static int th__load_consts(float *blob, const th_params_tensor *es, int n) {
  for (int i = 0; i < th__nconsts; i++) {
    const struct th__const *c = &th__consts[i];
    const th_params_tensor *e = th_params_find(es, n, c->name, c->ndim, c->shape, th__info.network,
                                               th__err, sizeof th__err);
    if (!e) return -1;
    memcpy(blob + c->off, e->data, (size_t)e->numel * sizeof(float));
  }
  return 0;
}

/* "[0][37]": the position of flat element i in a tensor of the given shape. */
static void th__position(char *out, size_t n, int ndim, const int64_t *shape, size_t i) {
  size_t idx[6] = {0, 0, 0, 0, 0, 0};
  for (int d = ndim - 1; d >= 0; d--) {
    size_t dim = shape[d] > 0 ? (size_t)shape[d] : 1;
    idx[d] = i % dim;
    i /= dim;
  }
  size_t used = 0;
  out[0] = '\0';
  for (int d = 0; d < ndim && used < n; d++) {
    int w = snprintf(out + used, n - used, "[%zu]", idx[d]);
    if (w < 0) break;
    used += (size_t)w;
  }
}

/* th_model_run_io's checks, before anything runs: no NULL pointers, and every int64 input that
 * indexes an embedding table within [0, rows). 0, or -1 with the error set. */
static int th__check_io(const void *m, const void *const *inputs, void *const *outputs) {
  th__err[0] = '\0';
  if (!m || !inputs || !outputs) return th__fail("th_model_run_io: NULL argument");
  for (int k = 0; k < th__info.num_inputs; k++)
    if (!inputs[k])
      return th__fail("th_model_run_io: inputs[%d] (%s) is NULL", k, th__info.inputs[k].name);
  for (int k = 0; k < th__info.num_outputs; k++)
    if (!outputs[k])
      return th__fail("th_model_run_io: outputs[%d] (%s) is NULL", k, th__info.outputs[k].name);
  for (int c = 0; c < th__nindex_checks; c++) {
    const struct th__index_check *ic = &th__index_checks[c];
    const struct th_tensor_desc *d = &th__info.inputs[ic->input];
    const unsigned char *p = inputs[ic->input];
    for (size_t i = 0; i < d->count; i++) {
      int64_t v;
      memcpy(&v, p + i * sizeof v, sizeof v); /* the caller's buffer need not be aligned */
      if (v >= 0 && v < ic->rows) continue;
      char pos[96];
      th__position(pos, sizeof pos, d->ndim, d->shape, i);
      return th__fail("%s%s = %lld is outside [0, %lld) (%s)", d->name, pos, (long long)v,
                      (long long)ic->rows, ic->table);
    }
  }
  return 0;
}

/* th_model_run and th_model_run_profiled take one float32 input and output: 0 when the network has
 * exactly those, else -1 with a message that points to th_model_run_io. */
static int th__check_single(const char *fn) {
  int ok = th__info.num_inputs == 1 && th__info.num_outputs == 1 &&
           th__info.inputs[0].dtype == TH_DTYPE_F32 && th__info.outputs[0].dtype == TH_DTYPE_F32;
  if (ok) return 0;
  return th__fail(
      "%s: %s has %d input%s and %d output%s (the first input '%s' is %s); "
      "use th_model_run_io, which takes every input and output",
      fn, th__info.network, th__info.num_inputs, th__info.num_inputs == 1 ? "" : "s",
      th__info.num_outputs, th__info.num_outputs == 1 ? "" : "s", th__info.inputs[0].name,
      th__info.inputs[0].dtype == TH_DTYPE_I64 ? "int64" : "float32");
}
