/* The device half of the tuner's task module (tune_cuda.c): one candidate of a session whose
 * candidates are timed on a device (cuda) compiled to an image through tc_backend_compile. Internal
 * to the tuner (tune_task.c calls it in a build child, for an on_device task). */
#ifndef TUNE_CUDA_H
#define TUNE_CUDA_H

#include "tune_task.h"

/* Validity, codegen and one device compile of cfg into the image file img_path, named in so_path
 * (TUNE_PATH_MAX bytes) when written; otherwise *err_class and msg (160 bytes) say why: 1 for a
 * config over the device's limits, 3 for an NVRTC error, 2 for a codegen error. An image that could
 * not be written leaves so_path and *err_class alone: the worker then compiles the candidate
 * itself. */
void tune_cuda_build_one(const tune_task *t, const tc_config *cfg, const char *img_path,
                         char *so_path, int *err_class, char *msg);

#endif
