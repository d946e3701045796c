/* tc_cuda_measure: times one candidate GPU kernel (workload + config) on the CUDA device, the AutoTVM way,
 * and checks its output against the CPU reference (tc_cuda_ref_kernel). It is the CUDA counterpart of the
 * tuner's measure worker: the caller (the tuner's worker process) passes one candidate at a time. A kernel
 * that hangs cannot be killed inside a CUDA context: after TC_ERROR_CLASS_RUN_TIMEOUT the process should
 * be restarted before the next candidate. Not thread-safe against other users of the same CUDA context. */
#ifndef TC_CUDA_MEASURE_H
#define TC_CUDA_MEASURE_H

#include <stdint.h>

#include "error_class.h"
#include "tc_cuda.h"

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
  int error_class;    /* tc_error_class (error_class.h): 0, 1, 3, 4, 5 or 7 */
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
