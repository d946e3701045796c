/* th_params: the one reader of params.bin (the format is in compiler/README.md) and the batch-norm
 * folding rule. Plain C11 with no tunehub headers, because it is compiled twice: into the compiler
 * library (behind compiler/params.h) and, as text, into every model .so of either backend
 * (compiler/embed.cmake puts it in front of model/model_rt.c and cuda/rt/model_rt_cuda.c). Its
 * symbols are hidden, so a model .so exports nothing new and never binds to tunehub's copy. All
 * functions are pure and thread-safe. */
#ifndef TH_PARAMS_H
#define TH_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#define TH_PARAMS_API __attribute__((visibility("hidden")))

#define TH_PARAMS_MAGIC "THPARAMS"
#define TH_PARAMS_VERSION 1u
#define TH_PARAMS_HEADER 32 /* bytes before the first tensor */
#define TH_PARAMS_ALIGN 64  /* tensor data starts at a multiple of this from the file's start */
#define TH_PARAMS_MAX_NDIM 8
#define TH_PARAMS_MAX_NAME 1024
#define TH_PARAMS_MAX_NUMEL ((uint64_t)1 << 40) /* per tensor, and per dimension */

/* One tensor as found in a params.bin buffer; name and data point into that buffer (borrowed). */
typedef struct th_params_tensor {
  const char *name; /* not NUL-terminated: name_len bytes */
  uint32_t name_len;
  uint32_t ndim;
  int64_t shape[TH_PARAMS_MAX_NDIM];
  int64_t numel;     /* prod(shape): 0 when a dimension is 0, 1 when ndim is 0 */
  const float *data; /* numel floats, TH_PARAMS_ALIGN-aligned relative to the buffer start */
} th_params_tensor;

/* CRC-32 (IEEE 802.3, as zlib's crc32) of n bytes, continuing from crc (start with 0). */
TH_PARAMS_API uint32_t th_params_crc32(uint32_t crc, const void *data, size_t n);

/* Validates the header (magic, version, size, CRC) and walks the tensors: a tensor running past the
 * end, a name outside 1..1024 bytes, more than 8 dimensions, a dimension or a product of the
 * nonzero dimensions over 2^40 (in any order), and trailing bytes are errors. Returns the tensor
 * count and fills es[0 .. min(count, max)) (es may be NULL), or returns -1 with a message starting
 * "params.bin: " in err. data must stay valid while the entries are used. */
TH_PARAMS_API int th_params_parse(const void *data, size_t size, th_params_tensor *es, int max,
                                  char *err, size_t errlen);

/* The tensor called name among es[0 .. n), checked to have exactly shape[0 .. ndim). NULL with a
 * message naming it (and `network`, the one that expects it) in err when it is missing, has another
 * shape, or appears more than once (the file would be ambiguous). */
TH_PARAMS_API const th_params_tensor *th_params_find(const th_params_tensor *es, int n,
                                                     const char *name, int ndim,
                                                     const int64_t *shape, const char *network,
                                                     char *err, size_t errlen);

/* Folds a batch norm into a layer with oc output channels of `per` weights each, as th_model_create
 * does: s = gamma / sqrt(var + eps), w_out = w * s, bias_out = bias * s + beta - mean * s. gamma ==
 * NULL means no batch norm (s = 1, shift 0); bias == NULL means a zero bias; bias_out may be NULL;
 * w_out may be w. */
TH_PARAMS_API void th_params_fold_bn(const float *w, float *w_out, int64_t per, int oc,
                                     const float *bias, const float *gamma, const float *beta,
                                     const float *mean, const float *var, float eps,
                                     float *bias_out);

#endif
