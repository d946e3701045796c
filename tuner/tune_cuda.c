/* The device half of a candidate build (cuda): validity, codegen and one NVRTC compile of one
 * candidate into an image file, through tc_backend_compile, with the candidate's outcome mapped to
 * its AutoTVM error class. It runs where CPU candidates are built, in a build child with a deadline
 * (tune_task.c: the pooled exec'd `tunehub build-worker`, or a fork in tests), so that a hung or
 * crashing NVRTC costs that child only; the worker process (tc_backend_measure) loads the image, so
 * the measure stage, which holds the device, does no compiler work. */
#include "tune_cuda.h"

#include <stdio.h>

#include "th_limits.h"

void tune_cuda_build_one(const tune_task *t, const tc_config *cfg, const char *img_path,
                         char *so_path, int *err_class, char *msg) {
  char err[TH_MSG_MAX] = "";
  const char *fn = "th_candidate";
  th_status rc = tc_backend_compile(&t->target, 1, &t->wl, cfg, &fn, img_path, err, sizeof err);
  if (rc == TH_OK) {
    snprintf(so_path, TUNE_PATH_MAX, "%s", img_path);
  } else if (rc == TH_ERR_INVALID) {
    *err_class = TC_ERROR_CLASS_INSTANTIATION;
    snprintf(msg, 160, "invalid config: %.140s", err[0] ? err : "device limits");
  } else if (rc == TH_ERR_COMPILE) {
    *err_class = TC_ERROR_CLASS_COMPILE_DEVICE;
    snprintf(msg, 160, "NVRTC: %.145s", err[0] ? err : th_status_str(rc));
  } else if (rc != TH_ERR_IO) { /* IO: no file, and the worker compiles the candidate itself */
    *err_class = TC_ERROR_CLASS_COMPILE_HOST;
    snprintf(msg, 160, "codegen: %.140s", err[0] ? err : th_status_str(rc));
  }
}
