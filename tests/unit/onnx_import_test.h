/* The importer tests' one call of the importer on a model they built (onnx_build.h): packed, imported at a
 * batch, checked against the status the test wants, and the builder freed. Header-only, so that only the
 * tests that import (not the fuzzer's seed builder) need the compiler library. */
#ifndef TEST_ONNX_IMPORT_TEST_H
#define TEST_ONNX_IMPORT_TEST_H

#include <stdio.h>
#include <stdlib.h>

#include "onnx.h"
#include "onnx_build.h"
#include "th_test.h"

/* b imported at batch `batch`: the graph when want is TH_OK (err holds the error otherwise); b is freed. */
static inline tc_graph *tb_import(tb *b, int batch, char *err, size_t errlen, th_status want) {
  size_t len;
  uint8_t *p = tb_pack(b, &len);
  tc_onnx_opts o = {"test", batch, NULL, 1};
  tc_graph *g = NULL;
  err[0] = '\0';
  th_status rc = tc_onnx_import(p, len, &o, &g, NULL, err, errlen);
  if (rc != want) fprintf(stderr, "import: %s (%s)\n", th_status_name(rc), err);
  CHECK(rc == want);
  free(p);
  tb_free(b);
  return g;
}

#endif
