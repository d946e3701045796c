/* tc_cuda: the CUDA backend of the compiler. GPU operator templates (NCHW, no channel blocking) lower a
 * tc_workload + tc_config to the shared loop IR (compiler/ir/) with loops bound to blockIdx/threadIdx,
 * __shared__ buffers and barriers; the codegen prints that IR as CUDA C (one `extern "C" __global__`
 * function per kernel); NVRTC compiles a whole translation unit (every kernel of a network) in one call
 * to a cubin for sm_XX plus its PTX (JIT fallback). The CUDA driver (libcuda.so.1) is only ever opened
 * with dlopen at run time, so everything here loads and reports "no CUDA device" on a machine without
 * one. All functions are thread-safe for distinct arguments, never print and never abort.
 *
 * Kernel ABI (same argument slots as the CPU templates, see include/tc/ops.h): `fn(float *a0, ..., float *aN-1)`
 * with N = tc_op_nargs(kernel); tensors are plain NCHW (in_cb == out_cb == 1); weights are in torch's
 * layout (OIHW, [c,1,kh,kw], [oc,c]) with batch norm already folded, bias [oc]. Pointers must be 16-byte
 * aligned (the model plan aligns every tensor to 64 bytes) because templates may use float4 accesses. */
#ifndef TC_CUDA_H
#define TC_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "ir.h"
#include "space.h"
#include "th_buf.h"
#include "th_status.h"
#include "workload.h"

/* The GPU a kernel is compiled for and the limits every kernel is checked against before NVRTC runs
 * (tc_cuda_valid). They come from the arch table in nvrtc.c (the CUDA C++ Programming Guide's
 * "Technical Specifications per Compute Capability" for sm_70, 75, 80, 86, 89 and 90, and the SM
 * count of one documented part per arch; an arch without a row gets the smallest value of every
 * column), or from the device itself when the target is the arch of the device this process has
 * (tc_cuda_target_use_device). The fallback configs size their grids by the SM count. */
typedef struct tc_cuda_target {
  char arch[16];           /* "sm_90" */
  int sm;                  /* 90 */
  int max_threads;         /* per block: 1024 */
  int max_block[3];        /* per dimension: 1024, 1024, 64 */
  int64_t max_grid[3];     /* 2^31-1, 65535, 65535 */
  int max_shared_bytes;    /* static __shared__ per block, what the templates use: 48 KiB on all */
  int max_shared_optin;    /* per block with dynamic shared memory and the opt-in attribute */
  int max_shared_per_sm;   /* a block's shared memory must also fit one multiprocessor */
  int max_regs_per_block;  /* 65536 */
  int max_regs_per_thread; /* 255 */
  int max_regs_per_sm;     /* 65536 */
  int max_threads_per_sm;  /* 1024 (sm_75) .. 2048 */
  int multiprocessors;     /* SMs: the device's, else the table's part's (132: an H100 SXM) */
  int l2_bytes;            /* L2 cache: the device's, else the table's part's (50 MiB: an H100) */
  char limits_from[80];    /* where the limits come from: "sm_75 table" or "device <name>" */
} tc_cuda_target;

/* Fills *t for arch "sm_XX" (XX in 70..121; NULL or "" means sm_90) with the arch table's limits.
 * TH_ERR_INVALID otherwise. */
th_status tc_cuda_target_init(tc_cuda_target *t, const char *arch);

/* ---- templates (templates.c; one file per family in cuda/ops/) ------------------------------------ */

/* Launch facts of one generated kernel, found by the codegen from the IR's bound loops. A workload
 * whose config splits K (split_k) runs as two kernels, `fn` and then `fn` "_r", both taking the
 * workload's arguments and then a scratch buffer of scratch_floats floats (which the caller
 * allocates; its contents need no initialisation and are dead after the second kernel). */
typedef struct tc_cuda_launch {
  int64_t grid[3];
  int block[3];
  int shared_bytes; /* static __shared__ bytes */
  int dyn_shared;   /* dynamic shared bytes every launch passes (above 48 KiB: the opt-in attribute) */
  int local_floats; /* per-thread local array floats (a register-pressure estimate) */
  int64_t scratch_floats; /* 0: one kernel, the workload's arguments only */
  int64_t post_grid[3];   /* the second kernel's launch, when scratch_floats > 0 */
  int post_block[3];
} tc_cuda_launch;

/* A lowered GPU kernel: the loop IR plus the codegen options the config chose. */
typedef struct tc_cuda_lowered {
  const tc_stmt *body;
  int unroll_max_step; /* serial constant loop nests with at most this many iterations get unrolled */
  int unroll_explicit; /* 1: the codegen replicates such bodies; 0: it emits #pragma unroll */
  int dyn_shared;      /* 1: shared allocations are carved from `extern __shared__` memory */
  const tc_stmt *post; /* the second kernel of a split-k config (NULL: none) */
  int64_t scratch_floats; /* the scratch both kernels take as their last parameter (0: none) */
} tc_cuda_lowered;

/* Nonzero when family k has a GPU template. */
int tc_cuda_has_template(tc_kernel k);
/* 1 if there is a GPU template for wl: a valid workload of a family with one, in plain NCHW (in_cb ==
 * out_cb == 1); 0 otherwise. When 1, tc_cuda_space succeeds. */
int tc_cuda_supports_op(const tc_workload *wl);
/* Config space of the GPU template for wl (at least one knob). TH_ERR_UNSUPPORTED for a family or layout
 * with no GPU template (layout reorders, channel-blocked tensors). */
th_status tc_cuda_space(const tc_workload *wl, const tc_cuda_target *t, tc_space *out);
/* A good default config (valid by construction when the space has any valid point). */
th_status tc_cuda_fallback(const tc_workload *wl, const tc_cuda_target *t, const tc_space *s,
                           tc_config *out);
/* TH_OK if cfg is a point of s that fits the device: threads per block and per dimension, grid limits,
 * shared memory (48 KiB of static __shared__; a template staging through dynamic shared memory up to
 * the target's opt-in maximum), a register estimate, 32-bit index range. TH_ERR_INVALID otherwise, with a reason
 * in why (may be NULL). Never calls NVRTC. */
th_status tc_cuda_valid(const tc_workload *wl, const tc_cuda_target *t, const tc_space *s,
                        const tc_config *cfg, char *why, size_t whylen);
/* Lowers (wl, cfg) to loop IR in arena (borrowed; the result lives as long as it). Validates first. */
th_status tc_cuda_lower(const tc_workload *wl, const tc_config *cfg, const tc_cuda_target *t,
                        th_arena *arena, tc_cuda_lowered *out);

/* ---- codegen (codegen.c) -------------------------------------------------------------------------- */

/* The helpers every translation unit starts with (float4 arithmetic); append once per unit. */
th_status tc_cuda_prelude(th_buf *src);
/* Appends `extern "C" __global__ void fn(float *a0, ...)` for the lowered kernel (nargs parameters) to
 * src and fills *launch (k->post is not printed: tc_cuda_kernel_source prints it as a kernel of its
 * own). TH_ERR_UNSUPPORTED (with err) for IR the printer cannot express (vector widths
 * other than 1/4, gathers, conflicting extents on one thread axis). */
th_status tc_cuda_codegen(const tc_cuda_lowered *k, const char *fn, int nargs, th_buf *src,
                          tc_cuda_launch *launch, char *err, size_t errlen);
/* Lower + codegen of one workload (no prelude): `fn`, and `fn` "_r" after it for a split-k config
 * (launch->scratch_floats > 0). */
th_status tc_cuda_kernel_source(const tc_workload *wl, const tc_config *cfg, const tc_cuda_target *t,
                                const char *fn, th_buf *src, tc_cuda_launch *launch, char *err,
                                size_t errlen);

/* ---- NVRTC (nvrtc.c) ------------------------------------------------------------------------------ */

/* Compiles one translation unit for t->arch in a single NVRTC call and returns the cubin and the PTX
 * (both malloc'd; out-params may be NULL to drop one). TH_ERR_COMPILE with the NVRTC log in err on a
 * compile error; TH_ERR_UNSUPPORTED if tunehub was built without CUDA. */
th_status tc_nvrtc_compile(const char *src, const char *name, const tc_cuda_target *t, char **cubin,
                           size_t *cubin_len, char **ptx, size_t *ptx_len, char *err, size_t errlen);
/* The NVRTC version ("13.0"), or "none". */
const char *tc_nvrtc_version(void);

/* ---- the device (driver.c) ------------------------------------------------------------------------ */

typedef struct tc_cuda_device {
  char name[256];
  char arch[16]; /* "sm_90" */
  int major, minor;
  int multiprocessors;
  int64_t total_mem;
  int driver_version; /* e.g. 13000 */
  /* its limits as the driver reports them (cuDeviceGetAttribute); 0 where it reported none */
  int max_threads; /* per block */
  int max_block[3];
  int max_grid[3];
  int max_shared_bytes; /* static shared memory per block */
  int max_shared_optin; /* per block with the opt-in attribute */
  int max_shared_per_sm;
  int max_regs_per_block;
  int max_regs_per_sm;
  int max_threads_per_sm;
  int l2_bytes;
} tc_cuda_device;

/* Opens libcuda.so.1 with dlopen, cuInit, and describes device 0. TH_ERR_UNSUPPORTED with "no CUDA
 * device: ..." in err when there is no driver, no device, or the driver fails to initialise. */
th_status tc_cuda_device_query(tc_cuda_device *out, char *err, size_t errlen);
/* When t is for d's arch, replaces t's limits, SM count and L2 size with those d reported (a limit
 * d lacks, 0, keeps the table's value) and names the device in t->limits_from; a target for another
 * arch (a build for another GPU) keeps its table limits. Registers per thread (255) are not a
 * device attribute. */
void tc_cuda_target_use_device(tc_cuda_target *t, const tc_cuda_device *d);

/* ---- reference (ref_kernel.c) --------------------------------------------------------------------- */

/* Plain C loops computing one workload with the GPU ABI (NCHW, torch-layout folded weights): args as for
 * the kernel (host pointers). The oracle of measurement and of the GPU template tests. */
th_status tc_cuda_ref_kernel(const tc_workload *wl, float *const *args);
/* tc_cuda_ref_kernel with the batch split over up to `threads` threads (at most 64), for the families
 * whose samples are independent (conv2d, depthwise, dense, the pools, batch_matmul); the same bytes as
 * one thread. The naive reference of a large batch (resnet-18's first conv at batch 100: 23.6 GFLOP)
 * otherwise takes tens of seconds per task before a GPU tuning trial can be checked. */
th_status tc_cuda_ref_kernel_threads(const tc_workload *wl, float *const *args, int threads);
/* Element counts of each argument slot of wl (0 for an unused slot, which the kernel never reads:
 * no bias, no residual, no mask), up to 5: tc_op_args, the family's row of TC_KERNEL_TABLE. */
void tc_cuda_arg_sizes(const tc_workload *wl, int64_t sizes[5]);
/* Bytes per element of slot's buffer: 8 for int64 (embedding's indices, the input of an int64
 * cast), else 4 (float). */
int tc_cuda_arg_elem_bytes(const tc_workload *wl, int slot);
/* Seeded int64 inputs for such a slot: embedding indices over the table's rows with one in 16 just
 * outside them (-1 or c); cast inputs in [-1000, 1000] with one in 16 beyond 32 bits (+-2^40).
 * *seed advances. */
void tc_cuda_fill_i64(const tc_workload *wl, int64_t *p, int64_t n, uint64_t *seed);

#endif
