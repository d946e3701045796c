/* tc_cuda_measure: times one candidate GPU kernel (workload + config) on the CUDA device, the AutoTVM way,
 * and checks its output against the CPU reference (tc_cuda_ref_kernel). It is the CUDA counterpart of the
 * tuner's measure worker: the caller (the tuner's worker process) passes one candidate at a time. A kernel
 * that hangs cannot be killed inside a CUDA context: after TC_CUDA_ERR_RUN_TIMEOUT the process should be
 * restarted before the next candidate. Not thread-safe against other users of the same CUDA context. */
#ifndef TC_CUDA_MEASURE_H
#define TC_CUDA_MEASURE_H

#include <stdint.h>

#include "tc_cuda.h"

/* Error classes, equal to AutoTVM's (and tuner/measure.h's tune_error_class). */
enum {
  TC_CUDA_OK = 0,
  TC_CUDA_ERR_INSTANTIATION = 1, /* the config is not valid for this workload/device (no compile tried) */
  TC_CUDA_ERR_COMPILE_DEVICE = 3, /* NVRTC or the driver's module load failed */
  TC_CUDA_ERR_RUNTIME_DEVICE = 4, /* launch or execution failed */
  TC_CUDA_ERR_WRONG_ANSWER = 5,   /* output differs from the CPU reference */
  TC_CUDA_ERR_RUN_TIMEOUT = 7     /* the check or timing ran past timeout_s */
};

typedef struct tc_cuda_measure_opts {
  int number;        /* launches per repeat before growth; default 1 */
  int repeat;        /* timed repeats; default 10 (min and max dropped when > 2) */
  int min_repeat_ms; /* grow number until one repeat lasts this long; default 0 */
  double timeout_s;  /* check + timing; default 10 */
  double rtol, atol; /* |a-r| <= atol*max|ref| + rtol*|r|; defaults 1e-4, 1e-5 */
  uint64_t seed;     /* input data seed; default 1 */
  int check;         /* nonzero: compare with the CPU reference (default in tc_cuda_measure_opts_default: 1) */
  const void *cubin; /* this very candidate already compiled (the tuner's build stage): NVRTC is skipped */
  size_t cubin_len;
} tc_cuda_measure_opts;

void tc_cuda_measure_opts_default(tc_cuda_measure_opts *o);

typedef struct tc_cuda_measure_result {
  int error_class;    /* TC_CUDA_* */
  double cost_mean_s; /* per launch; 1e9 when failed */
  double cost_std_s;
  double cost_min_s;
  int number;         /* launches per repeat after growth */
  int repeat;
  double compile_s;   /* NVRTC time */
  double max_rel_err; /* of the check */
  char msg[512];
} tc_cuda_measure_result;

/* Generates, compiles (NVRTC, one program; skipped when o->cubin is given), loads and runs the candidate on
 * device 0. The process keeps device 0's primary context between calls (creating one costs more than most
 * measurements) and gives it up after a candidate that failed on the device, so the next one starts in a
 * fresh context. The CPU reference of the last workload is kept too: the inputs come from the seed, so a
 * task's candidates share it. Returns TH_OK with
 * r->error_class set for every candidate outcome (including failures of the candidate itself);
 * TH_ERR_UNSUPPORTED ("no CUDA device: ..." in r->msg) when there is no usable device or CUDA support,
 * TH_ERR_INVALID for bad arguments, TH_ERR_NOMEM. */
th_status tc_cuda_measure(const tc_workload *wl, const tc_config *cfg, const tc_cuda_target *t,
                          const tc_cuda_measure_opts *o, tc_cuda_measure_result *r);

#endif
