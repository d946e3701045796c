/* The GPU backend (framework "cuda") behind the tc_backend vtable: an sm_XX arch as the target (the
 * device's when none is named), the GPU templates of templates.c as its template table (plain NCHW, so no
 * layout pass), every kernel of a build printed into one CUDA translation unit and compiled by one NVRTC call
 * (cubin + PTX), a kernel table with launch shapes in the plan and the device code pulled in with the
 * assembler's .incbin (the host part compiles in well under a second), rt/model_rt_cuda.c as the runtime of
 * its model .so, kernels/kernels.cu in the bundle, and one-kernel candidates compiled here and timed in the
 * tuner's worker by tc_cuda_measure. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_int.h"
#include "tc_cuda.h"
#include "tc_cuda_embed.h"
#include "tc_cuda_measure.h"
#include "th_util.h"

_Static_assert(sizeof(tc_cuda_target) <= TC_BACKEND_TARGET_BYTES, "tc_cuda_target must fit tc_backend_target");

#define GPU(t) TC__CIMPL(tc_cuda_target, t)

/* ---- target and device -------------------------------------------------------------------------------- */

/* The device of this process, queried once (dlopen of libcuda, cuInit). */
static struct {
  int present;
  tc_cuda_device dev;
  char why[256];
} cuda__dev;
static pthread_once_t cuda__dev_once = PTHREAD_ONCE_INIT;
static _Atomic int cuda__dev_done; /* 1 once cuda__dev is filled in */

static void cuda__dev_query(void) {
#ifdef TH_HAVE_CUDA
  cuda__dev.present = tc_cuda_device_query(&cuda__dev.dev, cuda__dev.why, sizeof cuda__dev.why) == TH_OK;
  if (!cuda__dev.present && !cuda__dev.why[0]) snprintf(cuda__dev.why, sizeof cuda__dev.why, "no CUDA device");
#else
  snprintf(cuda__dev.why, sizeof cuda__dev.why,
           "this tunehub was built without CUDA (NVRTC was not found under /usr/local/cuda at build time)");
#endif
  cuda__dev_done = 1;
}

static int cuda__has_device(char *why, size_t whylen) {
  pthread_once(&cuda__dev_once, cuda__dev_query);
  if (!cuda__dev.present) tc__seterr(why, whylen, "%s", cuda__dev.why);
  return cuda__dev.present;
}

static int cuda__can_build(char *why, size_t whylen) {
#ifdef TH_HAVE_CUDA
  (void)why, (void)whylen;
  return 1;
#else
  tc__seterr(why, whylen, "tunehub was built without CUDA (NVRTC not found at build time)");
  return 0;
#endif
}

static th_status cuda__device(tc_device *out, char *err, size_t errlen) {
  tc_cuda_device d;
  th_status rc = tc_cuda_device_query(&d, err, errlen);
  if (rc != TH_OK) return rc;
  memset(out, 0, sizeof *out);
  snprintf(out->name, sizeof out->name, "%s", d.name);
  snprintf(out->arch, sizeof out->arch, "%s", d.arch);
  out->multiprocessors = d.multiprocessors;
  out->total_mem = d.total_mem;
  out->driver_version = d.driver_version;
  return TH_OK;
}

static th_status cuda__target_init(const char *arch, tc_backend_target *t, char *err, size_t errlen) {
  if (!arch || !*arch) {
    char why[8];
    arch = cuda__has_device(why, sizeof why) ? cuda__dev.dev.arch : "sm_90";
  }
  tc_cuda_target *g = TC__IMPL(tc_cuda_target, t);
  if (tc_cuda_target_init(g, arch) != TH_OK) {
    tc__seterr(err, errlen, "unknown CUDA arch '%s' (want sm_70 .. sm_121)", arch);
    return TH_ERR_INVALID;
  }
  /* the device's own limits for its arch, when this process has asked for the device already: a
   * named arch must not cuInit here (the tuner forks its workers after setting up targets, and a
   * child cannot use CUDA that its parent initialised); tc_cuda_measure applies them itself */
  if (cuda__dev_done && cuda__dev.present) tc_cuda_target_use_device(g, &cuda__dev.dev);
  snprintf(t->str, sizeof t->str, "cuda -arch=%.16s", g->arch);
  snprintf(t->triple, sizeof t->triple, "nvptx64-nvidia-cuda");
  return TH_OK;
}

/* A cuda bundle is timed where this process has a device that runs its code: of the target's arch
 * or a newer one (the bundle's PTX is compiled for it there). Elsewhere it is built untimed, and
 * says why. */
static int cuda__runs_here(const tc_backend_target *t, char *why, size_t whylen) {
  if (!cuda__has_device(why, whylen)) return 0;
  if (cuda__dev.dev.major * 10 + cuda__dev.dev.minor >= GPU(t)->sm) return 1;
  tc__seterr(why, whylen, "this machine's CUDA device (%s) is %s, which cannot run code for %s",
             cuda__dev.dev.name, cuda__dev.dev.arch, GPU(t)->arch);
  return 0;
}

static th_status cuda__target_parse(const char *target_str, tc_backend_target *t) {
  const char *a = strstr(target_str, "-arch=");
  char arch[16] = "";
  if (a) snprintf(arch, sizeof arch, "%.*s", (int)strcspn(a + 6, " "), a + 6);
  return cuda__target_init(arch[0] ? arch : "sm_90", t, NULL, 0);
}

/* The archs a client may name, one per row of tc_cuda_target's limits table (tc_cuda.h); newer ones
 * (up to sm_121) are taken too, with sm_90's limits. */
static const char *const cuda__archs[] = {"sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90"};

static const char *cuda__target_name_at(int i) {
  return i >= 0 && i < (int)(sizeof cuda__archs / sizeof cuda__archs[0]) ? cuda__archs[i] : NULL;
}

static int cuda__claims_arch(const char *name) {
  return strncmp(name, "sm_", 3) == 0;
}

static th_status cuda__target_auto(const tc_client_machine *m, char *name, size_t n, char *reason,
                                   size_t rn, char *err, size_t errlen) {
  if (!m->cuda_arch || !*m->cuda_arch) {
    tc__seterr(
        err, errlen,
        "target=auto for cuda needs the client's device arch in X-Tunehub-CUDA-Arch (sm_XX)");
    return TH_ERR_NOT_FOUND;
  }
  tc_cuda_target g;
  if (!cuda__claims_arch(m->cuda_arch) || tc_cuda_target_init(&g, m->cuda_arch) != TH_OK) {
    tc__seterr(err, errlen,
               "unknown client CUDA arch '%.32s'; valid: sm_70, sm_75, sm_80, sm_86, sm_89, sm_90 "
               "(and newer up to sm_121)",
               m->cuda_arch);
    return TH_ERR_INVALID;
  }
  snprintf(name, n, "%s", g.arch);
  snprintf(reason, rn, "client device is %s: its own arch", g.arch);
  return TH_OK;
}

/* fp32 everywhere; tf32 on the tensor cores of sm_80 and newer */
static int cuda__takes_precision(const char *t_str, tc_precision p, char *why, size_t whylen) {
  if (p == TC_PRECISION_FP32) return 1;
  if (p != TC_PRECISION_TF32) return 0;
  const char *a = t_str ? strstr(t_str, "sm_") : NULL;
  if (!t_str || (a ? strtol(a + 3, NULL, 10) : 0) >= 80) return 1;
  tc__seterr(why, whylen,
             "precision tf32 needs tensor cores of sm_80 or newer; target %s takes fp32 only",
             t_str);
  return 0;
}

/* ---- template table: templates.c ---------------------------------------------------------------------- */

static int cuda__supports_op(tc_kernel k) {
  /* GPU tensors stay NCHW: nothing to reorder */
  return k != TC_KERNEL_LAYOUT && tc_cuda_has_template(k);
}

static th_status cuda__space(const tc_backend_target *t, const tc_workload *wl, tc_space *out) {
  return tc_cuda_space(wl, GPU(t), out);
}

static th_status cuda__fallback(const tc_backend_target *t, const tc_workload *wl, const tc_space *s,
                                tc_config *out) {
  return tc_cuda_fallback(wl, GPU(t), s, out);
}

static th_status cuda__valid(const tc_backend_target *t, const tc_workload *wl, const tc_space *s,
                             const tc_config *cfg, char *why, size_t whylen) {
  return tc_cuda_valid(wl, GPU(t), s, cfg, why, whylen);
}

static th_status cuda__lower(const tc_backend_target *t, const tc_workload *wl, const tc_config *cfg,
                             th_arena *arena, const tc_stmt **body) {
  tc_cuda_lowered k;
  memset(&k, 0, sizeof k);
  th_status rc = tc_cuda_lower(wl, cfg, GPU(t), arena, &k);
  if (rc == TH_OK) *body = k.body;
  return rc;
}

/* ---- emit: one translation unit, one NVRTC call ------------------------------------------------------- */

typedef struct cuda__emitted {
  tc_cuda_launch *launch; /* per kernel */
  th_buf cu;              /* kernels.cu, shipped in the bundle */
  double nvrtc_seconds;
  size_t cubin_len, ptx_len;
} cuda__emitted;

static th_status cuda__emit(const tc_backend_target *t, const tc__kernel *ks, int nk, const char *dir,
                            const char *network, tc__emit *out, char *err, size_t errlen) {
  (void)network;
  cuda__emitted *x = calloc(1, sizeof *x);
  if (!x) return TH_ERR_NOMEM;
  out->priv = x;
  th_buf_init(&x->cu, (size_t)256 << 20);
  x->launch = calloc((size_t)(nk ? nk : 1), sizeof *x->launch);
  th_status rc = x->launch ? tc_cuda_prelude(&x->cu) : TH_ERR_NOMEM;
  for (int k = 0; rc == TH_OK && k < nk; k++) {
    th_buf_appendf(&x->cu, "/* %s  config %s */\n", ks[k].key, ks[k].source);
    rc = tc_cuda_kernel_source(&ks[k].wl, &ks[k].cfg, GPU(t), ks[k].fn, &x->cu, &x->launch[k], err, errlen);
  }
  char *cubin = NULL, *ptx = NULL;
  double t0 = th_now_mono();
  if (rc == TH_OK)
    rc = tc_nvrtc_compile(x->cu.data, "kernels.cu", GPU(t), &cubin, &x->cubin_len, &ptx, &x->ptx_len, err,
                          errlen);
  x->nvrtc_seconds = th_now_mono() - t0;
  char path[2300];
  if (rc == TH_OK) rc = tc__write(dir, "kernels.cubin", cubin, x->cubin_len, path, sizeof path, err, errlen);
  if (rc == TH_OK) rc = tc__write(dir, "kernels.ptx", ptx, x->ptx_len > 0 ? x->ptx_len - 1 : 0, path, sizeof path, err, errlen);
  if (rc == TH_OK) rc = tc__write(dir, "kernels.cu", x->cu.data, x->cu.len, path, sizeof path, err, errlen);
  free(cubin);
  free(ptx);
  out->nobjs = 0; /* the device code goes in through model.c's .incbin */
  out->extra_name = "kernels/kernels.cu";
  out->extra = x->cu.data;
  out->extra_len = x->cu.len;
  return rc;
}

static void cuda__emit_free(tc__emit *e) {
  cuda__emitted *x = e->priv;
  if (!x) return;
  th_buf_free(&x->cu);
  free(x->launch);
  free(x);
  e->priv = NULL;
}

/* ---- plan --------------------------------------------------------------------------------------------- */

static th_status cuda__plan_kernels(const tc_backend_target *t, const tc__kernel *ks, int nk, const tc__emit *e,
                                    th_buf *b) {
  (void)t;
  const cuda__emitted *x = e->priv;
  /* dyn_shared: the dynamic shared memory a launch passes (the runtime opts a kernel in above 48 KiB);
   * post, scratch: a split-k kernel's second kernel (launched right after it, NULL for none) and the
   * floats of scratch both take after the call's arguments (one buffer, the largest, serves every
   * call: the launches run in order on one stream) */
  th_buf_appendf(b, "static const struct th__kernel {\n  const char *name, *post;\n  unsigned long long scratch;\n"
                    "  unsigned pgrid[3], pblock[3];\n  unsigned grid[3], block[3];\n"
                    "  unsigned dyn_shared;\n} th__kernels[] = {\n");
  for (int k = 0; k < nk; k++) {
    const tc_cuda_launch *l = &x->launch[k];
    th_buf_appendf(b, "  {\"%s\", ", ks[k].fn);
    if (l->scratch_floats > 0)
      th_buf_appendf(b, "\"%s_r\", %lldull, {%lldu, %lldu, %lldu}, {%du, %du, %du}, ", ks[k].fn,
                     (long long)l->scratch_floats, (long long)l->post_grid[0], (long long)l->post_grid[1],
                     (long long)l->post_grid[2], l->post_block[0], l->post_block[1], l->post_block[2]);
    else
      th_buf_appendf(b, "0, 0ull, {0u, 0u, 0u}, {0u, 0u, 0u}, ");
    th_buf_appendf(b, "{%lldu, %lldu, %lldu}, {%du, %du, %du}, %du}, /* %s */\n", (long long)l->grid[0],
                   (long long)l->grid[1], (long long)l->grid[2], l->block[0], l->block[1], l->block[2],
                   l->dyn_shared, ks[k].key);
  }
  return th_buf_appendf(b, "};\n\n");
}

static th_status cuda__weight_floats(const tc_backend_target *t, const tc__kernel *k, const tc_param *w,
                                     int64_t *floats) {
  (void)t, (void)k;
  *floats = w->numel; /* torch's layout: no packing on the GPU */
  return TH_OK;
}

static th_status cuda__plan_runtime(const tc_backend_target *t, const char *dir, th_buf *b) {
  /* the arch the cubin and PTX were built for: th_model_create refuses a device below it by name */
  th_buf_appendf(b, "static const int th__build_sm = %d;\n", GPU(t)->sm);
  /* the device code, embedded by the assembler (no megabyte C arrays to compile) */
  th_buf_appendf(b, "__asm__(\".pushsection .rodata\\n.balign 64\\n.globl th__cubin\\n.hidden th__cubin\\n"
                    "th__cubin:\\n.incbin \\\"%s/kernels.cubin\\\"\\n.byte 0\\n.balign 64\\n.globl th__ptx\\n"
                    ".hidden th__ptx\\nth__ptx:\\n.incbin \\\"%s/kernels.ptx\\\"\\n.byte 0\\n.popsection\\n\");\n",
                 dir, dir);
  th_buf_appendf(b, "extern const unsigned char th__cubin[] __attribute__((visibility(\"hidden\")));\n"
                    "extern const unsigned char th__ptx[] __attribute__((visibility(\"hidden\")));\n\n");
  return th_buf_append(b, tc_cuda_src_model_rt_cuda_c, sizeof tc_cuda_src_model_rt_cuda_c - 1);
}

/* ---- manifest ----------------------------------------------------------------------------------------- */

static json_t *cuda__manifest_target(const tc_backend_target *t) {
  return json_pack("{s:s,s:s,s:i,s:s,s:b}", "triple", t->triple, "arch", GPU(t)->arch, "sm", GPU(t)->sm, "nvrtc",
                   tc_nvrtc_version(), "ptx_fallback", 1);
}

static void cuda__manifest_build(const tc__emit *e, json_t *m) {
  const cuda__emitted *x = e->priv;
  json_object_set_new(m, "nvrtc_seconds", json_real(x->nvrtc_seconds));
  json_object_set_new(m, "cubin_bytes", json_integer((json_int_t)x->cubin_len));
  json_object_set_new(m, "ptx_bytes", json_integer((json_int_t)x->ptx_len));
}

static void cuda__manifest_layer(const tc__emit *e, int kernel, json_t *l) {
  const tc_cuda_launch *k = &((const cuda__emitted *)e->priv)->launch[kernel];
  json_object_set_new(l, "grid", json_pack("[I,I,I]", (json_int_t)k->grid[0], (json_int_t)k->grid[1],
                                           (json_int_t)k->grid[2]));
  json_object_set_new(l, "block", json_pack("[i,i,i]", k->block[0], k->block[1], k->block[2]));
  json_object_set_new(l, "shared_bytes", json_integer(k->shared_bytes));
  if (k->dyn_shared > 0) json_object_set_new(l, "dyn_shared_bytes", json_integer(k->dyn_shared));
  if (k->scratch_floats > 0) json_object_set_new(l, "split_k_scratch_floats", json_integer(k->scratch_floats));
}

/* ---- candidates --------------------------------------------------------------------------------------- */

/* One candidate: validity (TH_ERR_INVALID), CUDA C (TH_ERR_UNSUPPORTED and the like), NVRTC (TH_ERR_COMPILE),
 * the cubin written to path. */
static th_status cuda__compile(const tc_backend_target *t, int n, const tc_workload *wls, const tc_config *cfgs,
                               const char *const *fn_names, const char *path, char *err, size_t errlen) {
  if (n != 1) return TH_ERR_INVALID;
  tc_space s;
  th_status rc = tc_cuda_space(&wls[0], GPU(t), &s);
  if (rc == TH_OK) rc = tc_cuda_valid(&wls[0], GPU(t), &s, &cfgs[0], err, errlen);
  if (rc != TH_OK) {
    if (err && errlen && !err[0]) tc__seterr(err, errlen, "device limits");
    return TH_ERR_INVALID;
  }
  th_buf src;
  th_buf_init(&src, (size_t)1 << 26);
  tc_cuda_launch l;
  rc = tc_cuda_prelude(&src);
  if (rc == TH_OK) rc = tc_cuda_kernel_source(&wls[0], &cfgs[0], GPU(t), fn_names[0], &src, &l, err, errlen);
  if (rc == TH_OK) rc = th_buf_append(&src, "", 1); /* NUL */
  if (rc != TH_OK) rc = TH_ERR_UNSUPPORTED; /* the CUDA C printer: a host-side failure */
  char *cubin = NULL;
  size_t cubin_len = 0;
  if (rc == TH_OK) {
    rc = tc_nvrtc_compile(src.data, "candidate.cu", GPU(t), &cubin, &cubin_len, NULL, NULL, err, errlen);
    if (rc != TH_OK) rc = TH_ERR_COMPILE;
  }
  if (rc == TH_OK) rc = th_write_file_atomic(path, cubin, cubin_len);
  free(cubin);
  th_buf_free(&src);
  return rc;
}

static th_status cuda__measure(const tc_backend_target *t, const tc_workload *wl, const tc_config *cfg,
                               const tc_measure_opts *o, tc_measure_result *r) {
  return tc_cuda_measure(wl, cfg, GPU(t), o, r);
}

const tc_backend tc__backend_cuda = {
    .name = "cuda",
    .target_init = cuda__target_init,
    .target_parse = cuda__target_parse,
    .target_name_at = cuda__target_name_at,
    .target_hint = "sm_XX",
    .arch_flag = "-arch=",
    .claims_arch = cuda__claims_arch,
    .takes_precision = cuda__takes_precision,
    .has_device = cuda__has_device,
    .can_build = cuda__can_build,
    .device = cuda__device,
    .runs_here = cuda__runs_here,
    .target_auto = cuda__target_auto,
    .supports_op = cuda__supports_op,
    .space = cuda__space,
    .fallback = cuda__fallback,
    .valid = cuda__valid,
    .lower = cuda__lower,
    .graph_pass = NULL,
    .emit = cuda__emit,
    .emit_free = cuda__emit_free,
    .plan_includes = "",
    .call_field = "int kernel;",
    .call_by_index = 1,
    .plan_kernels = cuda__plan_kernels,
    .weight_floats = cuda__weight_floats,
    .pack = NULL,
    .plan_runtime = cuda__plan_runtime,
    .manifest_target = cuda__manifest_target,
    .manifest_build = cuda__manifest_build,
    .manifest_layer = cuda__manifest_layer,
    .measure_kind = TC_MEASURE_DEVICE,
    .prepare = NULL,
    .compile = cuda__compile,
    .measure = cuda__measure,
};
