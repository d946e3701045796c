/* Measurement of candidate kernels in a separate worker process. The tuner (tune_measurer_*) owns the worker:
 * it spawns it (exec of an explicit command such as `/proc/self/exe measure-worker`, or a plain fork), sends it
 * one task layout and one candidate at a time over a socketpair, and waits for the reply with a timeout. A
 * candidate that crashes kills only the worker (the tuner sees EOF: error class 4); one that hangs is killed at
 * the timeout (class 7); either way the worker is restarted and given the task again before the next candidate.
 *
 * The worker (tune_measure_worker_main) dlopens each candidate .so, fills the inputs with seeded random data,
 * runs the kernel once and compares its outputs with the reference outputs (the fallback config's, computed
 * once per task: class 5 on mismatch), then times it the AutoTVM way: number calls per repeat, number grown
 * until a repeat lasts min_repeat_ms, an optional cache flush before each repeat, min and max dropped when
 * repeat > 2, score = mean. Kernels use the ABI `void NAME(void *const *args)`.
 *
 * Candidates of a backend that times them itself (cuda; tune_measurer_run_device) travel as workload + config +
 * target string + options and the path of the image the build stage compiled: the worker runs
 * tc_backend_measure (for cuda: CUDA events, check against the CPU reference, NVRTC only without an image) and
 * returns its error class. A CUDA context cannot be recovered from a hung kernel, so after a class 7 (the
 * backend's own timeout or the tuner's) the worker is killed and the next candidate gets a fresh process. The
 * tuner process itself never touches the driver: tune_measurer_device asks the worker, so a plain fork never
 * inherits an initialised driver.
 *
 * Thread safety: a tune_measurer_t is used by one thread at a time. */
#ifndef TUNE_MEASURE_H
#define TUNE_MEASURE_H

#include <stdint.h>

#include "tc/backend.h"
#include "tc/error_class.h"
#include "tc/space.h"
#include "tc/tc.h"
#include "tc/workload.h"
#include "th_status.h"

#define TUNE_MAX_BUFS 8
#define TUNE_PATH_MAX 512
#define TUNE_FN_MAX 96

#define TUNE_PACK_NPARAMS 10 /* TC_PACK_NPARAMS (compiler/include/tc/ops.h) */

/* The argument list of a task's kernels: args[i] points at a buffer of nelems[i] elements (NULL
 * when nelems[i] is 0), float32 unless elem_bytes[i] is 8 (int64: embedding indices, a cast's
 * input); output buffers (float32 only) are checked against the reference and the others are
 * inputs, filled with seeded random values: floats in [-1, 1), int64 values in [0, index_limit[i])
 * (the rows of an embedding table; 0 means [0, 100)). Outputs are poisoned with NaN before each
 * run, so an element a kernel never writes is caught; a partial output (a copy that writes one part
 * of a concat) is zeroed instead, since the reference leaves the rest unwritten too. A weight
 * buffer whose layout depends on the config is marked packed: nelems is then its unpacked (torch
 * layout) size, and each candidate brings its pack parameters (tune_pack). */
typedef struct tune_layout {
  int nbufs;
  int64_t nelems[TUNE_MAX_BUFS];
  int is_output[TUNE_MAX_BUFS];
  int packed[TUNE_MAX_BUFS];
  int elem_bytes[TUNE_MAX_BUFS];      /* 0 or 4: float32; 8: int64 */
  int64_t index_limit[TUNE_MAX_BUFS]; /* int64 inputs: values in [0, index_limit) */
  int partial[TUNE_MAX_BUFS]; /* outputs written only in part: zeroed, not NaN, before a run */
} tune_layout;

/* Per-candidate packing of the packed buffers: the worker calls th_rt_pack_weights(params, raw, dst) found
 * in the candidate's own .so (every kernel library links the runtime), with dst of packed_n floats. */
typedef struct tune_pack {
  int params[TUNE_MAX_BUFS][TUNE_PACK_NPARAMS];
  int64_t packed_n[TUNE_MAX_BUFS];
} tune_pack;

typedef struct tune_measure_opts {
  int number;          /* calls per repeat before growth; default 1 */
  int repeat;          /* default 10 */
  int min_repeat_ms;   /* grow number until a repeat lasts this long; default 0 */
  int cache_flush; /* evict the caches before each repeat (the CPU's lines of every argument but the
                      input; on a device a buffer twice its L2 written); default 1 */
  double timeout_s;    /* per candidate (check + timing); default 10 */
  double rtol, atol;   /* output check: |a-r| <= atol*max|ref| + rtol*|r|; defaults 1e-3, 1e-4 */
  uint64_t seed;       /* input data seed */
  /* Worker command (borrowed, NULL-terminated argv). NULL: fork without exec and run the worker loop in the
   * child, which is right for single-threaded callers such as tests and the CLI. */
  char *const *worker_argv;
} tune_measure_opts;

void tune_measure_opts_default(tune_measure_opts *o);

typedef struct tune_result {
  int error_class;   /* tc_error_class (error_class.h), stored as store_record.error_class */
  double cost_mean_s; /* 1e9 when failed */
  double cost_std_s;
  int number;        /* calls per repeat after growth */
  char msg[160];
} tune_result;

typedef struct tune_measurer tune_measurer_t;

/* Starts the worker. opts is copied (worker_argv stays borrowed). */
th_status tune_measurer_new(const tune_measure_opts *opts, tune_measurer_t **out);
/* Stops the worker and frees; accepts NULL. */
void tune_measurer_free(tune_measurer_t *m);
/* The last error text (task setup failures); never NULL. */
const char *tune_measurer_errmsg(tune_measurer_t *m);
/* Sets the task: the buffer layout and the reference kernel (ref_so/ref_fn, the fallback config), which the
 * worker runs once to produce the expected outputs. pack may be NULL when no buffer is packed. TH_ERR_RUNTIME when the reference fails (crash, hang,
 * NaN). Paths are copied. */
th_status tune_measurer_set_task(tune_measurer_t *m, const tune_layout *layout, const char *ref_so,
                                 const char *ref_fn, const tune_pack *ref_pack);
/* Measures one candidate; always fills *out (a failure is a result, not an error). Returns TH_ERR_INVALID
 * before any task is set, TH_ERR_IO when the worker cannot be (re)started. */
th_status tune_measurer_run(tune_measurer_t *m, const char *so_path, const char *fn, const tune_pack *pack,
                            tune_result *out);
/* Measures one candidate of a TC_MEASURE_DEVICE target in the worker with tc_backend_measure (opts:
 * number, repeat, min_repeat_ms, timeout_s, rtol, atol, seed); needs no task. image_path: the
 * candidate as the build stage compiled it (NULL: the worker compiles it). The first candidate of a
 * workload (t, wl) makes it the device task: the worker computes its CPU reference first, in a
 * request of its own bounded by the workload's size rather than by timeout_s, and after every
 * restart reads it back from the folder of tune_measurer_set_ref_dir (or computes it again without
 * one); timeout_s then bounds the candidate's device work only. Always fills *out; the error class
 * is the backend's. TH_ERR_INVALID for bad arguments, TH_ERR_RUNTIME when the workload's reference
 * fails (out->msg says why: the task's failure, not the candidate's), TH_ERR_IO when the worker
 * cannot be (re)started. */
th_status tune_measurer_run_device(tune_measurer_t *m, const tc_backend_target *t, const tc_workload *wl,
                                   const tc_config *cfg, const char *image_path, tune_result *out);
/* The folder (copied; NULL or "": none) where the worker keeps a device task's reference as a file,
 * so that a worker restarted after a hung or crashed candidate reads it back instead of computing
 * it again (a naive reference of vgg's convolutions at batch 4 takes longer than the candidate
 * timeout). It holds the last workload's reference only; the caller removes the folder. */
void tune_measurer_set_ref_dir(tune_measurer_t *m, const char *dir);
/* Asks the worker for b's device (tc_backend_device there). TH_ERR_UNSUPPORTED with "no CUDA device: ..." in
 * err when it has none; TH_ERR_IO when the worker cannot be reached. */
th_status tune_measurer_device(tune_measurer_t *m, const tc_backend *b, tc_device *out, char *err,
                               size_t errlen);
/* Times a whole built model (model.so and its params.bin) in the worker with tc_time_model, bounded as t says,
 * and kills the worker when no answer comes within timeout_s: a miscompiled model or a device fault costs the
 * worker, never the caller. TH_ERR_RUNTIME when it crashed the worker or failed to load or run,
 * TH_ERR_WRONG_ANSWER for a non-finite output, TH_ERR_TIMEOUT past timeout_s, TH_ERR_IO when no worker can be
 * started; err says which. Needs no task. */
th_status tune_measurer_time_model(tune_measurer_t *m, const char *so_path, const char *params_path,
                                   const tc_time_opts *t, double timeout_s, tc_run_stats *st, char *err,
                                   size_t errlen);
/* How many workers died under a request or while making the task's reference (a candidate crashed it, or it
 * was killed from outside); *why (may be NULL; borrowed, valid until the next request) says how the last one
 * did. The next request starts a fresh one. */
int tune_measurer_deaths(const tune_measurer_t *m, const char **why);
/* How many times the worker was restarted after a crash or hang. */
int tune_measurer_restarts(const tune_measurer_t *m);

/* The worker loop: reads requests from in_fd, answers on out_fd, until EOF or a quit message. When out_fd is
 * 1, replies move to a private descriptor and stdout is pointed at stderr, so that a kernel that prints
 * cannot corrupt the protocol. Returns 0 on a clean end. */
int tune_measure_worker_main(int in_fd, int out_fd);

#endif
