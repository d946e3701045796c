/* tc_cuda_measure: times one candidate GPU kernel (workload + config) on the CUDA device, the AutoTVM way,
 * and checks its output against the CPU reference (tc_cuda_ref_kernel). It is the CUDA counterpart of the
 * tuner's measure worker: the caller (the tuner's worker process) passes one candidate at a time. A kernel
 * that hangs cannot be killed inside a CUDA context: after TC_ERROR_CLASS_RUN_TIMEOUT the process should
 * be restarted before the next candidate. Not thread-safe against other users of the same CUDA context. */
#ifndef TC_CUDA_MEASURE_H
#define TC_CUDA_MEASURE_H

#include <stdint.h>

#include "backend.h"
#include "error_class.h"
#include "tc_cuda.h"

/* The options and the result are the backend interface's (backend.h): tc_backend_measure passes
 * them through unchanged. o->image is the cubin of this very candidate (the tuner's build stage):
 * NVRTC is then skipped. o->timeout_s bounds the device work only: the CPU reference is computed
 * (or found) before it starts. With o->reference_only only the reference is made (no device, cfg
 * may be NULL): a caller that bounds the whole call asks for it first, with a limit that fits the
 * reference. Generates, compiles (NVRTC, one program; skipped when o->image is given), loads and
 * runs the candidate on device 0. The process keeps device 0's primary context between calls
 * (creating one costs more than most measurements) and gives it up after a candidate that failed on
 * the device, so the next one starts in a fresh context. The CPU reference of the last workload is
 * kept too: the inputs come from the seed, so a task's candidates share it; with o->ref_dir it is
 * also written there and read back by later processes. Returns TH_OK with r->error_class set for
 * every candidate outcome (including failures of the candidate itself); TH_ERR_UNSUPPORTED ("no
 * CUDA device: ..." in r->msg) when there is no usable device or CUDA support, TH_ERR_INVALID for
 * bad arguments, TH_ERR_NOMEM. */
th_status tc_cuda_measure(const tc_workload *wl, const tc_config *cfg, const tc_cuda_target *t,
                          const tc_measure_opts *o, tc_measure_result *r);

/* Tests only: called each time a reference is computed, not found in memory or in o->ref_dir (NULL:
 * nothing is called). */
extern void (*tc_cuda_ref_hook)(const tc_workload *wl);

#endif
