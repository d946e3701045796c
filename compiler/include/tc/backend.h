/* tc_backend: the one interface between the compiler's neutral pipeline (build.c, bundle.c), the tuner, the
 * server and a code generator. A framework name ("llvm" = CPU through LLVM, "cuda" = NVIDIA GPU through
 * NVRTC) is parsed once, by tc_backend_find, into a backend; everything else asks the backend: the target
 * it compiles for (tc_backend_target, whose canonical string keys records and manifests), its operator
 * templates (space, fallback, validity, lowering, supports_op), how a network's tasks look on it, how one
 * candidate is compiled and measured, and what its device is. The implementations live in compiler/llvm/
 * and compiler/cuda/ behind the vtable of backend_int.h; nothing outside compiler/ includes their headers.
 * Every function is thread-safe for distinct arguments, never prints and never aborts. */
#ifndef TC_BACKEND_H
#define TC_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "ir.h"
#include "network.h"
#include "ops.h"
#include "space.h"
#include "th_status.h"
#include "workload.h"

typedef struct tc_backend tc_backend; /* static, never freed: a pointer is valid for the process */

/* Bytes of a backend's own target description kept inside tc_backend_target (each backend asserts that its
 * concrete target fits). */
#define TC_BACKEND_TARGET_BYTES 4608

/* A target of one backend, by value (copy it freely). The concrete description (the CPU's triple, name
 * and features; the GPU's arch and limits) is the backend's business: callers see the backend, the
 * canonical string and the triple. */
typedef struct tc_backend_target {
  const tc_backend *backend;
  char str[128];   /* "llvm -mcpu=znver4", "cuda -arch=sm_90": the key of records and manifests */
  char triple[64]; /* "x86_64-pc-linux-gnu", "nvptx64-nvidia-cuda" */
  union {
    long double align;
    unsigned char bytes[TC_BACKEND_TARGET_BYTES];
  } impl; /* the backend's concrete target */
} tc_backend_target;

/* The backend of the host CPU ("llvm"): what a caller that names no target means. */
const tc_backend *tc_backend_default(void);
/* The backend for a framework name; NULL for another name, with "unknown framework 'x'; valid frameworks:
 * llvm, cuda" in err (err may be NULL). The only place that compares framework strings. */
const tc_backend *tc_backend_find(const char *framework, char *err, size_t errlen);
/* The framework name ("llvm", "cuda"). */
const char *tc_backend_name(const tc_backend *b);
/* The backends in a fixed order (i from 0; NULL past the last), for listings. */
const tc_backend *tc_backend_at(int i);
/* "llvm, cuda": the valid names, for messages. */
const char *tc_backend_names(void);
/* How many backends tc_backend_at gives (a compile-time constant, for arrays indexed like
 * tc_backend_at). */
#define TC_BACKEND_COUNT 2
/* The index of b in tc_backend_at order, or -1 for NULL. */
int tc_backend_index(const tc_backend *b);

/* ---- target names: what a client may write, what a records' target string says -------------- */

/* The i-th target name a client may give b (?target=, --target; i from 0, NULL past the last), for
 * listings and messages: llvm's x86-64 CPU names and levels in LLVM's order, cuda's sm_70 .. sm_90.
 * "native" (the server's own target) is valid for every backend and is not listed. */
const char *tc_backend_target_name_at(const tc_backend *b, int i);
/* How b's target names look, for messages ("an x86-64 CPU or level", "sm_XX"). */
const char *tc_backend_target_hint(const tc_backend *b);
/* The arch a concrete target string names, the short name a client passes ("znver4" of
 * "llvm -mcpu=znver4", "sm_90" of "cuda -arch=sm_90"), into buf (n bytes) and returned; NULL (buf
 * "") when target_str belongs to no backend or names no arch. Only parses: the arch may be one this
 * build does not know. */
const char *tc_backend_target_arch(const char *target_str, char *buf, size_t n);
/* The backend of a target name a client gives: a concrete target string ("cuda -arch=sm_90"), a
 * framework name alone ("cuda"), or a bare arch that a backend claims ("sm_75" is cuda's; any other
 * the default backend's). The arch it names goes into arch (n bytes; "" when none: the backend's
 * default). Never NULL for a string. */
const tc_backend *tc_backend_of_target_name(const char *name, char *arch, size_t n);

/* ---- precisions ----------------------------------------------------------------------------- */

/* Whether b can build at precision p (fp32: every backend; tf32: cuda). */
int tc_backend_has_precision(const tc_backend *b, tc_precision p);
/* Whether a build of b for the concrete target target_str (NULL: not known yet, the arch is not
 * checked) may take precision p: TH_OK, else TH_ERR_INVALID with the reason in err ("precision tf32
 * needs tensor cores of sm_80 or newer; target cuda -arch=sm_75 takes fp32 only", "precision tf32
 * needs the cuda framework; llvm takes fp32"). */
th_status tc_backend_precision_check(const tc_backend *b, const char *target_str, tc_precision p,
                                     char *err, size_t errlen);

/* Fills *t with the target of b that arch names. cuda: "sm_XX", or NULL/"" for the device's (sm_90 without
 * a device). llvm: an x86-64 CPU name LLVM knows, "x86-64-v2".."x86-64-v4", or NULL/""/"native" for the host
 * CPU (target.h, tc_target_named). TH_ERR_INVALID / TH_ERR_NOT_FOUND for a bad arch (err lists the valid
 * ones), TH_ERR_COMPILE if LLVM has no target for the host; err gets a message. */
th_status tc_backend_target_init(const tc_backend *b, const char *arch, tc_backend_target *t, char *err,
                                 size_t errlen);
/* The target that a records' target string names ("llvm -mcpu=NAME" that CPU, the host's own name the host;
 * "cuda -arch=sm_XX" that arch). TH_ERR_INVALID for a string no backend owns. */
th_status tc_backend_target_parse(const char *target_str, tc_backend_target *t);
/* Whether b can run code on this machine: always 1 for llvm; for cuda, whether a device answers (queried
 * once per process). why gets the reason when not ("no CUDA device: ...", "built without CUDA"). */
int tc_backend_has_device(const tc_backend *b, char *why, size_t whylen);
/* Whether this machine can run code built for t (llvm: its CPU has every feature t's kernels use; cuda: 1,
 * the device is tc_backend_has_device's question). why gets the missing features when not. */
int tc_backend_target_runs_here(const tc_backend_target *t, char *why, size_t whylen);
/* What a client says of the machine it deploys to (each field NULL when not said): its CPU
 * features (comma-separated, /proc/cpuinfo flag names or LLVM's), its CPU's LLVM name, its CUDA
 * device's arch ("sm_86"). */
typedef struct tc_client_machine {
  const char *cpu_features, *cpu_name, *cuda_arch;
} tc_client_machine;
/* ?target=auto: the name of b's target (for tc_backend_target_init) that suits the client best,
 * never one it cannot run, into name (n bytes), and one line saying why into reason. llvm: "native"
 * when the client has every feature of this machine's native target, else the most capable x86-64
 * level it covers (tc_target_auto). cuda: the client's arch when b builds it. TH_ERR_NOT_FOUND when
 * m says nothing b reads (err names what it needs), TH_ERR_INVALID for a CPU name or arch b does
 * not know (err lists the valid ones). */
th_status tc_backend_target_auto(const tc_backend *b, const tc_client_machine *m, char *name,
                                 size_t n, char *reason, size_t rn, char *err, size_t errlen);
/* Whether b can build bundles in this binary (cuda needs NVRTC at build time). why as above. */
int tc_backend_can_build(const tc_backend *b, char *why, size_t whylen);

/* ---- templates ---------------------------------------------------------------------------------------- */

/* Whether t's backend has a template for this kernel family. */
int tc_backend_supports_op(const tc_backend_target *t, tc_kernel k);
/* The config space of wl's template on t. TH_ERR_UNSUPPORTED for a family or layout the backend lacks. */
th_status tc_backend_space(const tc_backend_target *t, const tc_workload *wl, tc_space *out);
/* A good default config (valid when the space has a valid point). */
th_status tc_backend_fallback(const tc_backend_target *t, const tc_workload *wl, const tc_space *s,
                              tc_config *out);
/* TH_OK when cfg is a point of s that the template and the target accept; TH_ERR_INVALID otherwise, with a
 * reason in why (may be NULL). Never compiles. */
th_status tc_backend_valid(const tc_backend_target *t, const tc_workload *wl, const tc_space *s,
                           const tc_config *cfg, char *why, size_t whylen);
/* Lowers (wl, cfg) to loop IR in arena (borrowed; *body lives as long as it), for inspection and features. */
th_status tc_backend_lower(const tc_backend_target *t, const tc_workload *wl, const tc_config *cfg,
                           th_arena *arena, const tc_stmt **body);

/* The weight packing of (wl, cfg) on t: the parameters th_rt_pack_weights needs and the packed size in
 * floats. Backends that keep torch's layout (cuda) give zeros and 0 floats. */
th_status tc_backend_pack(const tc_backend_target *t, const tc_workload *wl, const tc_config *cfg,
                          int p[TC_PACK_NPARAMS], int64_t *packed_floats);

/* ---- tasks -------------------------------------------------------------------------------------------- */

/* One distinct (template, workload) pair of a network after the graph passes. */
typedef struct tc_task {
  tc_workload wl;
  char key[192]; /* tc_workload_key(wl) */
  double flops;  /* of one call */
  int count;     /* calls of this workload in the network */
} tc_task;

/* The distinct kernels of network net (network.h: a zoo name or an uploaded ONNX file) at `batch` (default
 * input size) on t, in first-use order, after the graph passes of t's backend (the CPU's NCHWc layout pass,
 * none on the GPU). *tasks is malloc'd (caller frees with free()); *n its length. Families with a trivial
 * space (layout, concat) are included; the tuner may skip them. TH_ERR_NOT_FOUND for an unknown zoo network,
 * TH_ERR_INVALID for a bad batch, the importer's errors for an ONNX file (tc_network_build). */
th_status tc_network_tasks(const tc_backend_target *t, const tc_netsrc *net, int batch, tc_task **tasks,
                           int *n);
/* The same, with the reason of a failure (the graph pass or lowering that refused the graph) in err. */
th_status tc_network_tasks_err(const tc_backend_target *t, const tc_netsrc *net, int batch, tc_task **tasks,
                               int *n, char *err, size_t errlen);
/* Gives the tasks of a build at precision p what the build gives its calls (tc_workload_take_precision: the
 * GEMM families' workloads, and so their keys, which gain " tf32"), so that a tf32 build tunes and looks up
 * the workloads it runs. TH_ERR_TOO_LARGE should a key not fit. */
th_status tc_tasks_take_precision(tc_task *tasks, int n, tc_precision p);

/* The memory a build of net at `batch` on t needs, from its plan (graph passes and the memory plan, no weights
 * made, no code generated): params_bytes, the weights as params.bin holds them; workspace_bytes, the planned
 * activations; peak_bytes, what a build and its timing hold at once (the builder's params.bin and graph
 * weights, and the measuring process's params.bin, packed weights and workspace) plus a fixed allowance for
 * the compiler. A scheduler admits a build only while such peaks fit its memory budget. Errors as
 * tc_network_tasks_err. */
typedef struct tc_footprint {
  int64_t params_bytes, workspace_bytes, peak_bytes;
} tc_footprint;
th_status tc_network_footprint(const tc_backend_target *t, const tc_netsrc *net, int batch, tc_footprint *out,
                               char *err, size_t errlen);

/* ---- candidates (the tuner) --------------------------------------------------------------------------- */

/* How a backend's candidates are timed: from a shared library that the tuner's worker loads and runs on the
 * CPU (TC_MEASURE_LIBRARY), or by the backend itself in the worker, tc_backend_measure (TC_MEASURE_DEVICE). */
typedef enum tc_measure_kind { TC_MEASURE_LIBRARY = 0, TC_MEASURE_DEVICE = 1 } tc_measure_kind;
tc_measure_kind tc_backend_measure_kind(const tc_backend *b);

/* Work that must happen before fork() so that children find it ready (the CPU runtime object); TH_OK for
 * backends without any. */
th_status tc_backend_prepare(const tc_backend *b, char *err, size_t errlen);

/* Compiles candidates to `path`. TC_MEASURE_LIBRARY backends: one shared library holding n kernels
 * fn_names[i] = template(wls[i], cfgs[i]) plus the runtime. TC_MEASURE_DEVICE backends: n must be 1 and
 * path gets the device image of the kernel fn_names[0] (for tc_backend_measure). Errors: TH_ERR_INVALID (a
 * config the template rejects; nothing compiled), TH_ERR_UNSUPPORTED (the code generator cannot express
 * it), TH_ERR_COMPILE (the compiler or linker failed), TH_ERR_IO; err gets a message. */
th_status tc_backend_compile(const tc_backend_target *t, int n, const tc_workload *wls, const tc_config *cfgs,
                             const char *const *fn_names, const char *path, char *err, size_t errlen);

/* The tolerance at which a precision tf32 workload's candidate is checked (fp32 accumulation of products rounded
 * to TF32's 10 mantissa bits): 1e-3 of the output's scale (its largest |reference|, or the product's before a
 * bounding activation) plus 1e-3 relative, the bound compiler_cuda.emulated_tf32_gemm holds the tensor-core GEMM
 * to (compiler/cuda/measure.c). */
#define TC_CUDA_TF32_ATOL 1e-3

typedef struct tc_measure_opts {
  int number;        /* launches per repeat before growth; default 1 */
  int repeat;        /* timed repeats; default 10 */
  int min_repeat_ms; /* grow number until one repeat lasts this long; default 0 */
  double timeout_s;  /* device work (check + timing), not the CPU reference; default 10 */
  double rtol, atol; /* check tolerance; defaults 1e-4, 1e-5; a tf32 workload's atol and rtol are at
                        least TC_CUDA_TF32_ATOL */
  uint64_t seed;     /* input data seed; default 1 */
  int check;         /* nonzero: compare with the reference (default 1) */
  int cache_flush;   /* nonzero: a buffer twice the L2 is written before each repeat (default 1) */
  const void *image; /* tc_backend_compile's output for this candidate (borrowed); NULL: compile here */
  size_t image_len;
  /* A folder (borrowed; NULL: none) where the reference outputs of workloads are kept as files, so
   * that a new process (the worker restarted after a candidate hung or crashed it) reads them back
   * instead of computing them again; the caller owns the folder and its lifetime. */
  const char *ref_dir;
  int reference_only; /* nonzero: only compute (or find) wl's reference into the caches; cfg is
                         ignored and no device is needed */
} tc_measure_opts;
void tc_measure_opts_default(tc_measure_opts *o);

typedef struct tc_measure_result {
  int error_class;    /* 0 or AutoTVM's class (1 instantiation, 3 device compile, 4 runtime, 5 wrong answer,
                         7 timeout) */
  double cost_mean_s; /* per launch; 1e9 when failed */
  double cost_std_s, cost_min_s;
  int number, repeat;
  double compile_s;
  double max_rel_err;
  char msg[512];
} tc_measure_result;

/* Times one candidate on t's device in this process (TC_MEASURE_DEVICE backends; TH_ERR_UNSUPPORTED for
 * the others). TH_OK with r->error_class set for every outcome of the candidate itself; TH_ERR_UNSUPPORTED
 * ("no CUDA device: ..." in r->msg) without a usable device. See tc_cuda_measure for the device context. */
th_status tc_backend_measure(const tc_backend_target *t, const tc_workload *wl, const tc_config *cfg,
                             const tc_measure_opts *o, tc_measure_result *r);

/* The device of a backend: the host CPU for llvm, device 0 for cuda. */
typedef struct tc_device {
  char name[256];
  char arch[16]; /* "sm_90"; the CPU name for llvm */
  int multiprocessors;
  int64_t total_mem;
  int driver_version;
} tc_device;
/* Describes b's device. TH_ERR_UNSUPPORTED with "no CUDA device: ..." in err when there is none. */
th_status tc_backend_device(const tc_backend *b, tc_device *out, char *err, size_t errlen);

#endif
