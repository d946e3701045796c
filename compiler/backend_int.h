/* The backend vtable and the internal contract between the neutral pipeline (build.c: graph -> passes ->
 * configs -> emit -> plan -> link -> time; bundle.c: manifest and .tar) and the two backends (llvm/backend.c,
 * cuda/backend.c). A hook exists only where the targets really differ; everything else is written once.
 * Not part of the public API (backend.h, tc.h). */
#ifndef TC_BACKEND_INT_H
#define TC_BACKEND_INT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "graph.h"
#include "network.h"
#include "ops.h"
#include "passes.h"
#include "space.h"
#include "tc.h"
#include "th_buf.h"

/* One distinct kernel of a build and where its config came from. */
typedef struct tc__kernel {
  tc_workload wl;
  tc_config cfg;
  tc_space space;
  char key[192];
  char source[16]; /* "tuned", "transferred" or "fallback" */
  char fn[32];     /* symbol in model.so */
} tc__kernel;

#define TC__MAX_OBJS 16

/* What a backend's emit step produced in the work directory: objects to link into model.so, one extra
 * bundle file (may be none), and the backend's own per-build state for the plan and manifest hooks. */
typedef struct tc__emit {
  int nobjs;
  char objs[TC__MAX_OBJS][2200];
  const char *extra_name; /* a further bundle entry ("kernels/kernels.cu") or NULL */
  const void *extra;      /* owned by priv */
  size_t extra_len;
  void *priv; /* the backend's; released by emit_free */
} tc__emit;

struct tc_backend {
  const char *name; /* the framework: "llvm", "cuda" */

  /* target */
  th_status (*target_init)(const char *arch, tc_backend_target *t, char *err, size_t errlen);
  /* a records' target string that starts with the backend's name ("cuda -arch=sm_80") */
  th_status (*target_parse)(const char *target_str, tc_backend_target *t);
  /* target names: the i-th a client may give (NULL past the last), how they look for messages, the
   * flag before the arch in a target string ("-mcpu="), and whether a bare name is this backend's
   * (NULL: only the default backend takes names no backend claims) */
  const char *(*target_name_at)(int i);
  const char *target_hint;
  const char *arch_flag;
  int (*claims_arch)(const char *name);
  /* whether t_str (a concrete target string; NULL: any target of the backend) takes precision p,
   * else 0 with the reason in why; NULL: fp32 only */
  int (*takes_precision)(const char *t_str, tc_precision p, char *why, size_t whylen);
  int (*has_device)(char *why, size_t whylen);
  int (*can_build)(char *why, size_t whylen);
  th_status (*device)(tc_device *out, char *err, size_t errlen);
  /* whether this machine can run t's code (its CPU has the features t was compiled for; a device of
   * t's arch or a newer one), else 0 with the reason in why; NULL: yes */
  int (*runs_here)(const tc_backend_target *t, char *why, size_t whylen);
  /* ?target=auto: the target name (for target_init) that suits the client machine m best, and why;
   * TH_ERR_NOT_FOUND when m says nothing this backend reads (err names what it needs) */
  th_status (*target_auto)(const tc_client_machine *m, char *name, size_t n, char *reason,
                           size_t rn, char *err, size_t errlen);

  /* template table */
  int (*supports_op)(tc_kernel k);
  th_status (*space)(const tc_backend_target *t, const tc_workload *wl, tc_space *out);
  th_status (*fallback)(const tc_backend_target *t, const tc_workload *wl, const tc_space *s, tc_config *out);
  th_status (*valid)(const tc_backend_target *t, const tc_workload *wl, const tc_space *s,
                     const tc_config *cfg, char *why, size_t whylen);
  th_status (*lower)(const tc_backend_target *t, const tc_workload *wl, const tc_config *cfg,
                     th_arena *arena, const tc_stmt **body);

  /* graph passes between epilogue fusion and memory planning (the CPU's layout pass); may be NULL */
  th_status (*graph_pass)(const tc_backend_target *t, tc_graph *g);

  /* emit every kernel of a build into dir (objects or device images); fills *out */
  th_status (*emit)(const tc_backend_target *t, const tc__kernel *ks, int nk, const char *dir,
                    const char *network, tc__emit *out, char *err, size_t errlen);
  void (*emit_free)(tc__emit *e); /* accepts an emit that failed half way */

  /* the generated plan (model.c): the backend's lines around the neutral tables */
  const char *plan_includes; /* after <stdint.h>, before tunehub_model.h */
  const char *call_field;    /* first field of struct th__call: the kernel by pointer or by index */
  int call_by_index;         /* 1: th__calls[i] names its kernel by index into th__kernels */
  /* the kernel declarations or the kernel table (launch shapes) */
  th_status (*plan_kernels)(const tc_backend_target *t, const tc__kernel *ks, int nk, const tc__emit *e,
                            th_buf *b);
  /* floats a call's weights take in the weights blob, and the pack parameters when pack is not NULL */
  th_status (*weight_floats)(const tc_backend_target *t, const tc__kernel *k, const tc_param *w,
                             int64_t *floats);
  th_status (*pack)(const tc_backend_target *t, const tc__kernel *k, int p[TC_PACK_NPARAMS]);
  /* the runtime source of the model .so, after the tables (and what it needs: the device image) */
  th_status (*plan_runtime)(const tc_backend_target *t, const char *dir, th_buf *b);

  /* manifest: the "target" object, build facts after build_seconds, per-layer launch facts (may be NULL) */
  json_t *(*manifest_target)(const tc_backend_target *t);
  void (*manifest_build)(const tc__emit *e, json_t *m);
  void (*manifest_layer)(const tc__emit *e, int kernel, json_t *layer);

  /* candidates */
  tc_measure_kind measure_kind;
  th_status (*prepare)(char *err, size_t errlen);
  th_status (*compile)(const tc_backend_target *t, int n, const tc_workload *wls, const tc_config *cfgs,
                       const char *const *fn_names, const char *path, char *err, size_t errlen);
  th_status (*measure)(const tc_backend_target *t, const tc_workload *wl, const tc_config *cfg,
                       const tc_measure_opts *o, tc_measure_result *r);
};

extern const tc_backend tc__backend_llvm, tc__backend_cuda;

/* The backend's concrete target inside t (each backend asserts its type fits TC_BACKEND_TARGET_BYTES). */
#define TC__IMPL(type, t) ((type *)(void *)(t)->impl.bytes)
#define TC__CIMPL(type, t) ((const type *)(const void *)(t)->impl.bytes)

void tc__seterr(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Appends s as a C string literal ("NULL" for NULL). */
void tc__cstr(th_buf *b, const char *s);
/* Writes data to dir/name (path gets the full name). */
th_status tc__write(const char *dir, const char *name, const void *data, size_t n, char *path, size_t pathlen,
                    char *err, size_t errlen);
/* The graph after the passes of t's backend, lowered to calls (shared by tc_network_tasks and the
 * build); fuse_off: the TC_FUSE_* groups left out of the fuse pass (0 but in a build asked to time
 * fusions). */
th_status tc__lowered(const tc_backend_target *t, const tc_netsrc *net, int batch, int h, int w,
                      int weights, int fuse_off, tc_graph **gout, tc_call **calls, int *ncalls,
                      int64_t *ws, char *err, size_t errlen);

/* What bundle.c needs of a finished build. */
typedef struct tc__bundle_in {
  const char *dir; /* holds model.so */
  const char *network;
  const char *onnx_sha256; /* an uploaded network's ONNX file (sha256 hex), NULL for a zoo network */
  const char *onnx_shapes; /* its shapes string, or NULL */
  int batch;
  const tc_backend_target *target;
  const tc__emit *emit;
  const tc_graph *graph;
  const tc__kernel *kernels;
  int nkernels;
  const tc_call *calls;
  int ncalls;
  const int *call_kernel;
  int fuse_off; /* tc_build_opts.fuse_off: the manifest lists the groups as "fusion_disabled" */
  int measured;
  int measured_isolated; /* timed by tc_build_opts.measure_fn, in another process */
  const char *unmeasured_why; /* when not measured because this machine cannot run the target, or NULL */
  tc_run_stats stats;
  double build_seconds;
  int64_t workspace_bytes, weights_bytes;
  const char *params;
  size_t params_len;
  const char *graph_json;
  size_t graph_json_len;
  int precision; /* tc_precision of the build */
} tc__bundle_in;

/* Writes the bundle .tar (atomically) when out_tar != NULL and returns the manifest text when
 * manifest_json != NULL (malloc'd). */
th_status tc__bundle_write(const tc__bundle_in *bi, const char *out_tar, char **manifest_json, char *err,
                           size_t errlen);

#endif
