/* tc_params: the params.bin format (documented in compiler/README.md): named float32 tensors with a
 * magic, a version, the total size and a CRC-32 of everything after the header. The same format is
 * read by the generated model .so (th_model_create), with the same reader (runtime/th_params.c),
 * and written by scripts/torch2params.py from a torch state_dict. */
#ifndef TC_PARAMS_H
#define TC_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "graph.h"
#include "th_buf.h"
#include "th_params.h"
#include "th_status.h"

/* One tensor as found in a params.bin buffer (th_params.h, the reader every model .so shares). */
typedef th_params_tensor tc_params_entry;

/* Appends params.bin bytes holding every parameter of g that is in use and has data, in graph
 * order. */
th_status tc_params_write(const tc_graph *g, th_buf *out);
/* Validates the header (magic, version, size, CRC) and walks the entries. On success *count is the
 * number of tensors; when entries != NULL, up to max entries are filled. TH_ERR_CORRUPT with a
 * message in err for any inconsistency. data must stay valid while the entries are used. */
th_status tc_params_parse(const void *data, size_t size, tc_params_entry *entries, int max,
                          int *count, char *err, size_t errlen);
/* Copies the tensors of a params.bin buffer into g's parameters by name (allocating data as
 * needed). Every parameter of g that is in use must be present with exactly its shape; extra
 * tensors are ignored. TH_ERR_CORRUPT (bad file), TH_ERR_INVALID (missing tensor or shape mismatch;
 * err names it), TH_ERR_NOMEM. */
th_status tc_params_load(tc_graph *g, const void *data, size_t size, char *err, size_t errlen);

#endif
