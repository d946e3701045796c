/* The protocol between the measurement worker (measure_worker.c) and its parent (measure.c):
 * fixed-size request and reply structs over a socketpair, each opening with TUNE_MSG_MAGIC. Both
 * sides are built from one binary, so the structs travel as bytes; nothing outside these two files
 * includes this header. */
#ifndef TUNE_MEASURE_PROTO_H
#define TUNE_MEASURE_PROTO_H

#include <stdint.h>

#include "measure.h"
#include "tc/backend.h"
#include "tc/tc.h"

#define TUNE_MSG_MAGIC 0x54554e45u /* "TUNE" */
#define TUNE_GUARD_BYTES 4096
#define TUNE_WORKER_MAX_LIBS 48
#define TUNE_GUARD_BYTE 0xa5

enum {
  TUNE_REQ_TASK = 1,
  TUNE_REQ_RUN = 2,
  TUNE_REQ_QUIT = 3,
  TUNE_REQ_CUDA = 4,
  TUNE_REQ_CUDA_DEVICE = 5,
  TUNE_REQ_MODEL = 6, /* a whole built model: so_path, params_path, timing */
  TUNE_REQ_CUDA_REF =
      7 /* the device task: wl's CPU reference, made (or read from ref_dir) before candidates */
};

typedef struct tune_req {
  uint32_t magic, type;
  tune_layout layout;
  tune_pack pack;
  uint64_t seed;
  int32_t number, repeat, min_repeat_ms, cache_flush;
  double rtol, atol;
  char so_path[TUNE_PATH_MAX];
  char fn[TUNE_FN_MAX];
  /* TUNE_REQ_CUDA: a candidate timed by its backend; TUNE_REQ_CUDA_DEVICE: the backend's device */
  tc_workload wl;
  tc_config cfg;
  char target[128]; /* tc_backend_target.str; the backend's name for a device query */
  double timeout_s;
  char params_path[TUNE_PATH_MAX]; /* TUNE_REQ_MODEL: the model's params.bin */
  tc_time_opts timing;             /* TUNE_REQ_MODEL */
  char ref_dir[TUNE_PATH_MAX]; /* TUNE_REQ_CUDA(_REF): where references are kept across workers */
} tune_req;

typedef struct tune_rep {
  uint32_t magic;
  int32_t ok; /* task: 1 on success */
  tune_result res;
  tc_device dev; /* TUNE_REQ_CUDA_DEVICE */
  char dev_err[256];
  tc_run_stats stats; /* TUNE_REQ_MODEL, its pointers NULL */
  int32_t status;     /* TUNE_REQ_MODEL: tc_time_model's th_status, its message in dev_err */
} tune_rep;

#endif
