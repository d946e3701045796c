/* A tuning task: one (template, workload) pair of a network on one target, with its config space, fallback
 * config, FLOPs and weight (how many times the network runs it). This module binds the generic tuner parts
 * (search, measure) to the compiler through its backend interface (backend.h): validity through
 * tc_backend_valid, features through tc_backend_lower + tc_ir_features plus shape features, candidates through
 * tc_backend_compile (a batch is split over threads, one .so per thread on the CPU, one image per candidate on
 * a device), and the argument layout and weight packing the measurement worker needs.
 *
 * Thread safety: a tune_task is read-only after tune_task_init and may be shared by threads. */
#ifndef TUNE_TASK_H
#define TUNE_TASK_H

#include <stddef.h>
#include <stdint.h>

#include "measure.h"
#include "tc/backend.h"
#include "tc/space.h"
#include "tc/workload.h"

#define TUNE_SHAPE_FEATURES 16

typedef struct tune_task {
  tc_workload wl;
  tc_backend_target target; /* copied */
  char key[512];           /* tc_workload_key */
  char template_name[64];  /* tc_kernel_name */
  char target_str[256];    /* target.str: "llvm -mcpu=<cpu>", "cuda -arch=sm_XX", the records' target */
  tc_space space;
  tc_config fallback;
  double flops;
  int weight;              /* occurrences in the network */
  float shape[TUNE_SHAPE_FEATURES]; /* from the workload key, see tune_shape_features */
  int on_device;           /* 1: candidates are timed by the backend in the worker (tc_backend_measure) */
} tune_task;

/* Fills the task for (wl, target): key, space and fallback of the target's backend, FLOPs, the records'
 * target string. TH_ERR_INVALID for a bad workload, TH_ERR_UNSUPPORTED for one the backend has no template
 * for. */
th_status tune_task_init(tune_task *t, const tc_workload *wl, const tc_backend_target *target, int weight);

/* tune_valid_fn over a task (ctx = const tune_task *): tc_backend_valid. */
int tune_task_valid(void *ctx, const tc_space *s, const tc_config *c);
/* Extra cost-model features (ctx = const tune_task *): TUNE_SHAPE_FEATURES shape features, then
 * TC_IR_FEATURE_LEN loop features of the lowered kernel. */
int tune_task_features(void *ctx, const tc_space *s, const tc_config *c, float *out);
int tune_task_feature_count(void);
/* Shape features of a workload key: log2(1 + v) of the first TUNE_SHAPE_FEATURES numbers in the key, in
 * order (keys of one template share a structure, so the positions line up); NAN where absent. */
void tune_shape_features(const char *workload_key, float *out);
/* Knob features of recorded config text laid out like tune_knob_features for space s (NAN for knobs the
 * text lacks), so records of other workloads can train this task's model. */
void tune_text_knob_features(const tc_space *s, const char *config_text, float *out);

/* The kernel argument layout of the task, from its family's row of TC_KERNEL_TABLE (tc_op_args):
 * elements per slot (0 for a NULL slot: no bias, residual or mask), outputs, packed weights, int64
 * slots with their value range (an embedding's indices in [0, c), a cast's small integers) and
 * partial outputs (a copy into one part of its output). Reads only t->wl. TH_ERR_INVALID for
 * TC_KERNEL_COUNT. */
th_status tune_task_layout(const tune_task *t, tune_layout *out);
/* The weight packing of a config (pack params and packed sizes for the packed slots). */
th_status tune_task_pack(const tune_task *t, const tc_config *c, tune_pack *out);

/* Builds n candidates into libraries under dir, using up to nthreads threads (one .so each).
 * Candidate i becomes function fn_names[i] (written, at most TUNE_FN_MAX bytes) in library
 * so_paths[i]; err_class[i] is 0, TC_ERROR_CLASS_INSTANTIATION (invalid config, not built) or
 * TC_ERROR_CLASS_COMPILE_HOST (msgs[i] says why). When a library of several candidates fails, its
 * candidates are rebuilt one by one so that only the bad ones fail. tag makes file names unique
 * across batches. Each library is compiled in a child process with a deadline of timeout_s (<= 0:
 * the default, TUNE_BUILD_TIMEOUT_S): a compiler that hangs or crashes on a candidate kills only
 * that child. The child is an exec of tune_build_worker_argv when that is set (the daemon and the
 * CLI: "tunehub build-worker"), kept for further libraries until it dies, passes a deadline or
 * idles for two minutes; else a plain fork. When a child passes its deadline or dies, its
 * candidates are built again one per child, and the guilty ones get TC_ERROR_CLASS_BUILD_TIMEOUT
 * ("build timed out after N s") or TC_ERROR_CLASS_COMPILE_HOST ("the compiler crashed"). A task
 * timed on a device (on_device): validity here (TC_ERROR_CLASS_INSTANTIATION, with the limit it
 * passes), then each candidate alone in a build child of the same kind with a deadline of
 * timeout_s: codegen (TC_ERROR_CLASS_COMPILE_HOST) and one NVRTC compile
 * (TC_ERROR_CLASS_COMPILE_DEVICE; a crash is one too; TC_ERROR_CLASS_BUILD_TIMEOUT past the
 * deadline), so that a hung NVRTC costs a child, never a scheduler thread. fn_names[i] is
 * "th_candidate" and so_paths[i] the image ("dir/tag_j.i.image"; empty when it could not be
 * written: the worker then compiles the candidate itself, tc_backend_measure). */
th_status tune_task_build(const tune_task *t, const tc_config *cfgs, int n, int nthreads, double timeout_s,
                          const char *dir, const char *tag, char (*so_paths)[TUNE_PATH_MAX],
                          char (*fn_names)[TUNE_FN_MAX], int *err_class, char (*msgs)[160]);

/* Default build deadline per library, as AutoTVM's LocalBuilder (10 s). */
#define TUNE_BUILD_TIMEOUT_S 10.0

/* The command line of a build worker, run by tune_task_build for each CPU library and device image
 * ({"/proc/self/exe", "build-worker", NULL} in tunehub's main), whose main calls
 * tune_build_worker_main(0). NULL: build children are plain forks of this process. Set it once,
 * before any build. */
extern char *const *tune_build_worker_argv;
/* The build worker's loop: reads build requests from fd (a socket to tune_task_build), builds each as a fork
 * would (tune_build_fault_hook included) and writes one outcome per candidate back, until the socket closes
 * or stays silent for two minutes; returns its exit status. */
int tune_build_worker_main(int fd);
/* Stops the idle build workers (the busy ones are stopped by their own builds' end). Thread-safe. */
void tune_build_workers_stop(void);

/* Fault injection for tests: when set, each build child calls it for every candidate it is about to
 * compile (a test makes it hang or crash on chosen configs). NULL in production. */
extern void (*tune_build_fault_hook)(const tc_config *cfg);

#endif
