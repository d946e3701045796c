/* Loads params.bin, runs the model on every input and times it. Build: cc example.c ./model.so -o example */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "tunehub_model.h"

int main(void) {
  const struct th_model_info *info = th_model_info();
  FILE *f = fopen("params.bin", "rb");
  if (!f) { perror("params.bin"); return 1; }
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  rewind(f);
  void *params = malloc((size_t)size);
  if (!params || fread(params, 1, (size_t)size, f) != (size_t)size) { fprintf(stderr, "read failed\n"); return 1; }
  fclose(f);
  struct th_model *m;
  if (th_model_create(params, (size_t)size, &m) != 0) { fprintf(stderr, "%s\n", th_model_last_error()); return 1; }
  free(params);
  /* every input by its dtype: float32 a ramp in [0, 1], int64 i % 2 (valid for every embedding table) */
  const void *in[8];
  void *out[8];
  for (int k = 0; k < info->num_inputs; k++) {
    const struct th_tensor_desc *d = &info->inputs[k];
    if (d->dtype == TH_DTYPE_I64) {
      int64_t *x = calloc(d->count, sizeof *x);
      for (size_t i = 0; i < d->count; i++) x[i] = (int64_t)(i % 2);
      in[k] = x;
    } else {
      float *x = calloc(d->count, sizeof *x);
      for (size_t i = 0; i < d->count; i++) x[i] = (float)(i % 255) / 255.0f;
      in[k] = x;
    }
  }
  for (int k = 0; k < info->num_outputs; k++)
    out[k] = calloc(info->outputs[k].count, info->outputs[k].dtype == TH_DTYPE_I64 ? 8 : 4);
  if (th_model_run_io(m, in, out) != 0) { fprintf(stderr, "%s\n", th_model_last_error()); return 1; } /* warm-up */
  struct timespec t0, t1;
  int reps = 10;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int r = 0; r < reps; r++) th_model_run_io(m, in, out);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  printf("%s batch %d: %.3f ms per run\n", info->network, info->batch,
         ((t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6) / reps);
  for (int k = 0; k < info->num_outputs; k++) {
    const struct th_tensor_desc *d = &info->outputs[k];
    const float *y = out[k];
    printf("  %s [", d->name);
    for (int i = 0; i < d->ndim; i++) printf("%s%lld", i ? "x" : "", (long long)d->shape[i]);
    printf("]:");
    for (size_t i = 0; d->dtype == TH_DTYPE_F32 && i < d->count && i < 5; i++) printf(" %.5g", y[i]);
    if (info->num_outputs == 1 && d->dtype == TH_DTYPE_F32 && d->ndim == 2) { /* a classifier's logits */
      size_t best = 0;
      for (size_t i = 1; i < (size_t)d->shape[1]; i++) if (y[i] > y[best]) best = i;
      printf(" ... top class %zu (%g)", best, y[best]);
    }
    printf("\n");
  }
  th_model_free(m);
  for (int k = 0; k < info->num_inputs; k++) free((void *)in[k]);
  for (int k = 0; k < info->num_outputs; k++) free(out[k]);
  return 0;
}
