/* The device half of the tuner's task module (tune_cuda.c): the build stage of a session whose candidates
 * are timed on a device (cuda), through tc_backend_compile. Internal to the tuner (tune_task.c calls it from
 * tune_task_build for an on_device task). */
#ifndef TUNE_CUDA_H
#define TUNE_CUDA_H

#include "tune_task.h"

/* See tune_task_build: validity, codegen and one device compile per candidate (threads over candidates).
 * Candidate i's image goes to dir/tag_i.cubin, named in so_paths[i] (fn_names[i] "th_candidate"); an empty
 * path means it could not be written and the worker compiles the candidate again. */
th_status tune_cuda_build(const tune_task *t, const tc_config *cfgs, int n, int nthreads, const char *dir,
                          const char *tag, char (*so_paths)[TUNE_PATH_MAX], char (*fn_names)[TUNE_FN_MAX],
                          int *err_class, char (*msgs)[160]);

#endif
