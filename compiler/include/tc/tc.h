/* tc: the compiler's public API for the rest of tunehub (tuner, server, CLI). It turns a network (a zoo
 * network or an uploaded ONNX file, network.h) into a bundle (for a backend of backend.h, which also gives a network's tunable tasks): a .tar with model.so (kernels + an ahead-of-time plan + the
 * runtime), tunehub_model.h, params.bin, graph.json, example.c and manifest.json. It also loads and times
 * a bundle. Everything here is thread-safe for distinct calls; nothing prints or aborts. */
#ifndef TC_H
#define TC_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "space.h"
#include "th_status.h"
#include "workload.h"

/* Config lookup: fill *cfg for the workload (a point of `space`) and write "tuned" or "transferred" into
 * source. Return TH_ERR_NOT_FOUND to make the build use the template's fallback. Any other error aborts
 * the build. Called from the building thread only. */
typedef th_status (*tc_config_lookup_fn)(void *ctx, const tc_workload *wl, const char *workload_key,
                                         const tc_space *space, tc_config *cfg, char source[16]);
/* Progress: stage is "graph", "kernels", "codegen", "link", "measure", "bundle"; done/total within the
 * stage. Return nonzero to cancel (the build then returns TH_ERR_CANCELLED). */
typedef int (*tc_progress_fn)(void *ctx, const char *stage, int done, int total);

/* Timing a whole model (tc_time_model), bounded by time rather than by a count, as AutoTVM's min_repeat_ms
 * bounds a trial: a few untimed runs, then rounds of `number` runs each (number grown from the warm-up so that a
 * round lasts min_round_ms, and a round cut short at a third of budget_s should the runs slow down after the
 * warm-up), until max_rounds rounds or budget_s seconds of rounds, whichever is first, but at least three rounds
 * unless those would take three budgets. Each round gives one mean; the stats are over the
 * rounds, so min and max are the spread a reader can trust. vgg-19 at batch 256 costs a run or two, squeezenet
 * at batch 1 ten rounds of many runs. */
typedef struct tc_time_opts {
  double budget_s;  /* seconds of timed rounds; 0: no bound (max_rounds rounds) */
  int max_rounds;   /* 0 means 10 */
  int min_round_ms; /* 0: one run per round */
  int warmup;       /* untimed runs, at most; after the first, only while they fit in a tenth of budget_s */
  int nonfinite_ok; /* nonzero: a non-finite output is no error (the graph has an op that gives NaN or
                       infinity on some finite inputs, tc_graph_nonfinite: log, pow, ...) */
} tc_time_opts;

/* The defaults of a published build: 2 s of rounds (at most 10) of at least 50 ms, 3 warm-up runs. */
void tc_time_opts_default(tc_time_opts *t);

typedef struct tc_run_stats {
  double mean_ms, median_ms, std_ms, min_ms, max_ms; /* per run, over the rounds' means */
  int n;           /* rounds */
  int number;      /* runs per round, as sized from the warm-up (a round cut short ran fewer) */
  double seconds;  /* wall time of the warm-up and the rounds */
  int ncalls;      /* tc_bundle_profile: kernel calls per run, one per manifest layer; else 0 */
  double *call_ms; /* tc_bundle_profile: each call's median ms over the runs (malloc'd); else NULL */
  char *manifest;  /* tc_bundle_profile, tc_bundle_infer writing outputs: the bundle's manifest.json text
                     (malloc'd); else NULL */
} tc_run_stats;

typedef struct tc_build_opts {
  const char *framework; /* a backend name (tc_backend_find: "llvm" CPU, "cuda" GPU, TH_ERR_UNSUPPORTED
                            when built without CUDA); TH_ERR_INVALID for another */
  const char *network;   /* a zoo name, or an uploaded network's name (with onnx_path) */
  const char *onnx_path;   /* NULL: the zoo network `network`; else the network's ONNX file (network.h) */
  const char *onnx_shapes; /* with onnx_path: the importer's shapes string, or NULL */
  int batch;             /* 1..4096 */
  const char *work_dir;  /* scratch directory (created); NULL: a fresh temp dir, removed afterwards */
  tc_config_lookup_fn lookup; /* may be NULL: every kernel uses its fallback */
  void *lookup_ctx;
  tc_progress_fn progress; /* may be NULL */
  void *progress_ctx;
  int measure;        /* nonzero: load the built model, time it and record latency in the manifest */
  const tc_time_opts *timing; /* how (NULL: tc_time_opts_default) */
  /* NULL: the model is timed in this process (tc_time_model). Else it is timed by measure_fn, which the
   * daemon points at its measurement worker process: a model that crashes or hangs must not take the caller
   * down. The build writes the weights it ships to WORK_DIR/params.bin first. */
  th_status (*measure_fn)(void *ctx, const char *so_path, const char *params_path, const tc_time_opts *t, tc_run_stats *st,
                          char *err, size_t errlen);
  void *measure_ctx;
  int input_h, input_w; /* 0: the network's default input size (tests use smaller ones) */
  const void *params;   /* optional params.bin bytes to ship (borrowed); NULL: seeded zoo weights, or the
                           ONNX file's initializers */
  size_t params_len;
  const char *arch; /* the target (backend.h, tc_backend_target_init): cuda "sm_XX" (NULL: the device's arch,
                       else sm_90); llvm a CPU name or x86-64-vN (NULL or "native": the host CPU) */
  const char *precision; /* "fp32" (NULL: the default, IEEE fp32 with FMA) or "tf32" (cuda on sm_80 and
                            newer: dense, batch_matmul and conv2d on tensor cores, keyed apart from fp32;
                            tc_precision in workload.h); anything else is TH_ERR_INVALID */
  /* 0, or TC_FUSE_* groups (include/tc/passes.h) left out of the fuse pass, to time what they buy
   * (`tunehub build --no-fuse`); the manifest then lists them as "fusion_disabled". The registry
   * and the tuner never set it: a published bundle is always fully fused. */
  int fuse_off;
} tc_build_opts;

/* Whether a build of framework (a backend name) for target (the canonical target string, "cuda -arch=sm_80")
 * may take precision ("fp32", "tf32"; NULL is fp32): fp32 anywhere, tf32 on cuda targets of sm_80 and newer
 * (target NULL: not known yet, e.g. a device's arch before the device is asked; the value and the framework are
 * checked, the arch is not).
 * TH_OK with *out (may be NULL), else TH_ERR_INVALID with a message in err that names the valid values and
 * why. tc_build_bundle checks its options with it; the server and the CLI check a request before queueing. */
th_status tc_precision_check(const char *framework, const char *target, const char *precision, tc_precision *out,
                             char *err, size_t errlen);

/* Builds the bundle. out_tar and out_so may each be NULL (then that file is not written); the .so
 * is the same file as the bundle's model.so. On success *manifest_json (if manifest_json != NULL)
 * is the manifest text, malloc'd, the caller frees it: the bundle's manifest.json plus this run's
 * facts (build_seconds, nvrtc_seconds, latency_ms, unmeasured, target.built_on), which the bundle
 * leaves out so that its bytes depend only on the records, the network and the compiler
 * (reproducible: two builds give one digest). On failure err gets a message. Returns
 * TH_ERR_NOT_FOUND (network), TH_ERR_INVALID (options), TH_ERR_UNSUPPORTED (framework),
 * TH_ERR_COMPILE (codegen or link), TH_ERR_IO, TH_ERR_NOMEM, TH_ERR_CANCELLED, or the lookup's
 * error. */
th_status tc_build_bundle(const tc_build_opts *o, const char *out_tar, const char *out_so,
                          char **manifest_json, char *err, size_t errlen);


/* dlopens the model so_path, creates it from params (params.bin bytes), and times it as t says, filling the
 * network's inputs with tc_bundle_run's pattern. TH_ERR_RUNTIME when it fails to load or run,
 * TH_ERR_WRONG_ANSWER for a non-finite output; err says which. A crash in the model crashes the caller: the
 * daemon runs this in its measurement worker (tc_build_opts.measure_fn). */
th_status tc_time_model(const char *so_path, const void *params, size_t params_len, const tc_time_opts *t,
                        tc_run_stats *st, char *err, size_t errlen);

/* Extracts the bundle to a temp dir, checks every file's sha256 against the manifest, dlopens model.so,
 * creates the model from params.bin, warms up, and times `repeat` runs (0 means 20). A corrupt or
 * truncated bundle gives TH_ERR_CORRUPT with a clear message; TH_ERR_RUNTIME for a model that fails to
 * load or run. The temp dir is removed. */
th_status tc_bundle_run(const char *tar_path, int repeat, tc_run_stats *out, char *err, size_t errlen);
/* tc_bundle_run that also times every kernel call (th_model_run_io_profiled) and returns each
 * call's median and the manifest in *out; free them with tc_run_stats_free. A bundle whose model.so
 * lacks the profiled entry point (CUDA bundles) gives TH_ERR_UNSUPPORTED. */
th_status tc_bundle_profile(const char *tar_path, int repeat, tc_run_stats *out, char *err, size_t errlen);
void tc_run_stats_free(tc_run_stats *s);

/* One input of tc_bundle_infer: path names a raw little-endian file of the input's dtype (float32 or
 * int64, as the manifest's "inputs" say) holding exactly the input's elements at the bundle's batch. */
typedef struct tc_run_input {
  const char *name; /* an input of the model (th_model_info's inputs) */
  const char *path;
} tc_run_input;

typedef struct tc_run_opts {
  int repeat;  /* timed rounds (0 means 20) */
  int warmup;  /* untimed runs before them (tc_bundle_run uses 3) */
  double budget_s;  /* 0, or the time bound of tc_time_opts */
  int min_round_ms; /* 0 (one run per round), or as tc_time_opts */
  int profile; /* nonzero: as tc_bundle_profile */
  int nonfinite_ok; /* as tc_time_opts */
  const tc_run_input *inputs; /* ninputs of them (borrowed), each name at most once; the model's other
                                 inputs get the fill tc_bundle_run uses (float32 a fixed pattern in
                                 [-0.5, 0.5), int64 i % 2) */
  int ninputs;
  const char *output_dir; /* NULL, or a directory (created) that gets each output of the last run as
                             tc_run_output_path names it, raw little-endian in the output's dtype */
} tc_run_opts;

/* tc_bundle_run with the options above: every run feeds the given files' exact bytes. A non-finite
 * output is an error (TH_ERR_WRONG_ANSWER) only while some input gets the fill (given every input, it is
 * the model's answer to them, as sqrt(-1) is NaN). Besides the errors of tc_bundle_run (and tc_bundle_profile with o->profile): TH_ERR_INVALID for an input name the model
 * does not have (err lists the valid ones), a name given twice, or a file whose size is not the input's
 * byte size (err names the input, its dtype and shape, the expected and the actual bytes); TH_ERR_IO for
 * a file that cannot be read or an output that cannot be written. Nothing is written to output_dir unless
 * every run succeeded. *out as tc_bundle_run gives it (with the manifest when profiling or writing
 * outputs); free it with tc_run_stats_free. */
th_status tc_bundle_infer(const char *tar_path, const tc_run_opts *o, tc_run_stats *out, char *err,
                          size_t errlen);
/* The file tc_bundle_infer writes output `name` to: dir/<name>.bin, where a '/' in the name becomes '_'.
 * TH_ERR_TOO_LARGE when it does not fit in n bytes (path untouched then). */
th_status tc_run_output_path(const char *dir, const char *name, char *path, size_t n);

#endif
