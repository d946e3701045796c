/* Tasks: the compiler-facing half of the tuner. Everything here goes through the backend interface
 * (compiler/include/tc/backend.h), compiler/include/tc/ops.h (argument slots) and compiler/include/tc/ir.h (features), so the rest of the
 * tuner stays independent of any template or code generator. The candidates' builds (tune_task_build and
 * its pool of build workers) are in tune_build.c. */
#include "tune_task.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tc/ir.h"
#include "tc/ops.h"
#include "tune_space.h"

void tune_shape_features(const char *key, float *out) {
  int n = 0;
  const char *p = key;
  for (int i = 0; i < TUNE_SHAPE_FEATURES; i++) out[i] = NAN;
  while (*p && n < TUNE_SHAPE_FEATURES) {
    if (isdigit((unsigned char)*p)) {
      char *end;
      long v = strtol(p, &end, 10);
      out[n++] = (float)log2(1.0 + (double)(v < 0 ? -v : v));
      p = end;
    } else {
      p++;
    }
  }
}

void tune_text_knob_features(const tc_space *s, const char *text, float *out) {
  char names[TC_MAX_KNOBS][24];
  int values[TC_MAX_KNOBS][TC_KNOB_WIDTH], widths[TC_MAX_KNOBS];
  int n = tune_config_parse(text, names, values, widths, TC_MAX_KNOBS);
  int f = 0;
  for (int i = 0; i < s->nknobs; i++) {
    const tc_knob *k = &s->knobs[i];
    int j = 0;
    while (j < n && strcmp(names[j], k->name) != 0) j++;
    for (int w = 0; w < k->width; w++)
      out[f++] = j < n && w < widths[j] ? (float)log2(1.0 + fabs((double)values[j][w])) : NAN;
  }
}

th_status tune_task_init(tune_task *t, const tc_workload *wl, const tc_backend_target *target, int weight) {
  if (!t || !wl || !target || !target->backend) return TH_ERR_INVALID;
  memset(t, 0, sizeof *t);
  t->wl = *wl;
  t->target = *target;
  t->on_device = tc_backend_measure_kind(target->backend) == TC_MEASURE_DEVICE;
  t->weight = weight > 0 ? weight : 1;
  th_status rc = tc_workload_check(wl);
  if (rc == TH_OK) rc = tc_workload_key(wl, t->key, sizeof t->key);
  if (rc == TH_OK) rc = tc_backend_space(target, wl, &t->space);
  if (rc == TH_OK) rc = tc_backend_fallback(target, wl, &t->space, &t->fallback);
  if (rc != TH_OK) return rc;
  snprintf(t->template_name, sizeof t->template_name, "%s", tc_kernel_name(wl->kernel));
  snprintf(t->target_str, sizeof t->target_str, "%s", target->str);
  t->flops = tc_workload_flops(wl);
  tune_shape_features(t->key, t->shape);
  return TH_OK;
}

int tune_task_valid(void *ctx, const tc_space *s, const tc_config *c) {
  const tune_task *t = ctx;
  return tc_backend_valid(&t->target, &t->wl, s, c, NULL, 0) == TH_OK;
}

int tune_task_feature_count(void) {
  return TUNE_SHAPE_FEATURES + TC_IR_FEATURE_LEN;
}

int tune_task_features(void *ctx, const tc_space *s, const tc_config *c, float *out) {
  const tune_task *t = ctx;
  (void)s;
  memcpy(out, t->shape, sizeof t->shape);
  float *ir = out + TUNE_SHAPE_FEATURES;
  th_arena *a = th_arena_new(1 << 16);
  if (!a) return -1;
  const tc_stmt *body = NULL;
  int n = 0;
  th_status rc = tc_backend_lower(&t->target, &t->wl, c, a, &body);
  if (rc == TH_OK) rc = tc_ir_features(body, ir, TC_IR_FEATURE_LEN, &n);
  th_arena_free(a);
  if (rc != TH_OK) {
    for (int i = 0; i < TC_IR_FEATURE_LEN; i++) ir[i] = NAN;
    return -1;
  }
  return 0;
}

_Static_assert(TC_PACK_NPARAMS == TUNE_PACK_NPARAMS, "the worker passes every pack parameter");
_Static_assert(TC_MAX_ARGS <= TUNE_MAX_BUFS, "the worker holds every kernel argument");

th_status tune_task_layout(const tune_task *t, tune_layout *out) {
  tc_arg_layout args;
  memset(out, 0, sizeof *out);
  th_status rc = tc_op_args(&t->wl, &args);
  if (rc != TH_OK) return rc;
  out->nbufs = args.nargs;
  for (int a = 0; a < args.nargs; a++) {
    out->nelems[a] = args.nelems[a];
    out->is_output[a] = args.role[a] == TC_ARG_ROLE_OUT;
    out->packed[a] = args.role[a] == TC_ARG_ROLE_PACKED;
    out->elem_bytes[a] = args.elem_bytes[a];
    out->index_limit[a] = args.index_limit[a];
    out->partial[a] = args.partial[a];
  }
  return TH_OK;
}

th_status tune_task_pack(const tune_task *t, const tc_config *c, tune_pack *out) {
  memset(out, 0, sizeof *out);
  /* only the families with a packed slot (conv, depthwise, dense) pack their weights; the tensor
   * families read plain buffers (layer norm's gamma and beta, an embedding's table) */
  tc_arg_layout args;
  th_status rc = tc_op_args(&t->wl, &args);
  if (rc != TH_OK) return rc;
  int slot = -1;
  for (int a = 0; a < args.nargs; a++)
    if (args.role[a] == TC_ARG_ROLE_PACKED) slot = a;
  if (slot < 0) return TH_OK;
  int p[TC_PACK_NPARAMS];
  int64_t n = 0;
  rc = tc_backend_pack(&t->target, &t->wl, c, p, &n);
  if (rc != TH_OK) return rc;
  if (n == 0) return TH_ERR_INVALID;
  for (int i = 0; i < TC_PACK_NPARAMS && i < TUNE_PACK_NPARAMS; i++) out->params[slot][i] = p[i];
  out->packed_n[slot] = (int64_t)n;
  return TH_OK;
}
