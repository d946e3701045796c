/* Loads params.bin, runs the model once and times it. Build: cc example.c ./model.so -o example */
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
  float *in = calloc(info->input_size, sizeof(float)), *out = calloc(info->output_size, sizeof(float));
  for (size_t i = 0; i < info->input_size; i++) in[i] = (float)(i % 255) / 255.0f;
  th_model_run(m, in, out); /* warm-up */
  struct timespec t0, t1;
  int reps = 10;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int r = 0; r < reps; r++) th_model_run(m, in, out);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  int best = 0;
  for (size_t i = 1; i < info->output_size / (size_t)info->batch; i++) if (out[i] > out[best]) best = (int)i;
  printf("%s batch %d: %.3f ms per run, top class %d (%g)\n", info->network, info->batch,
         ((t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6) / reps, best, out[best]);
  th_model_free(m);
  free(in);
  free(out);
  return 0;
}
