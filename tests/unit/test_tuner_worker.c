/* A stand-alone measurement worker for the tests' exec mode: the same loop `tunehub measure-worker` runs. */
#include "measure.h"

int main(void) {
  return tune_measure_worker_main(0, 1);
}
