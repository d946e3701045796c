/* tc_params: the params.bin format (documented in compiler/README.md): named float32 tensors with a magic,
 * a version, the total size and a CRC-32 of everything after the header. The same format is read by the
 * generated model .so (th_model_create) and written by scripts/torch2params.py from a torch state_dict. */
#ifndef TC_PARAMS_H
#define TC_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "graph.h"
#include "th_buf.h"
#include "th_status.h"

#define TC_PARAMS_MAGIC "THPARAMS"
#define TC_PARAMS_VERSION 1u
#define TC_PARAMS_HEADER 32
#define TC_PARAMS_ALIGN 64

/* One tensor as found in a params.bin buffer; name and data point into that buffer (borrowed). */
typedef struct tc_params_entry {
  const char *name; /* not NUL-terminated: name_len bytes */
  uint32_t name_len;
  uint32_t ndim;
  int64_t shape[8];
  int64_t numel;
  const float *data; /* 64-byte aligned relative to the buffer start */
} tc_params_entry;

/* CRC-32 (IEEE 802.3, as zlib's crc32) of n bytes, continuing from crc (start with 0). */
uint32_t tc_crc32(uint32_t crc, const void *data, size_t n);

/* Appends params.bin bytes holding every parameter of g that is in use and has data, in graph order. */
th_status tc_params_write(const tc_graph *g, th_buf *out);
/* Validates the header (magic, version, size, CRC) and walks the entries. On success *count is the number
 * of tensors; when entries != NULL, up to max entries are filled. TH_ERR_CORRUPT with a message in err for
 * any inconsistency. data must stay valid while the entries are used. */
th_status tc_params_parse(const void *data, size_t size, tc_params_entry *entries, int max, int *count,
                          char *err, size_t errlen);
/* Copies the tensors of a params.bin buffer into g's parameters by name (allocating data as needed).
 * Every parameter of g that is in use must be present with exactly its shape; extra tensors are ignored.
 * TH_ERR_CORRUPT (bad file), TH_ERR_INVALID (missing tensor or shape mismatch; err names it), TH_ERR_NOMEM. */
th_status tc_params_load(tc_graph *g, const void *data, size_t size, char *err, size_t errlen);

#endif
