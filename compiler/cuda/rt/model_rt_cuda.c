/* The fixed part of every generated CUDA model.c (after the generated tables th__info,
 * th__in/th__out, th__consts, th__index_checks, th__kernels, th__calls, th__wparams, the th__*
 * sizes and the embedded cubin/PTX symbols, and after th_params and model/model_rt_common.c, which
 * compiler/embed.cmake puts in front of this file): a CUDA driver runtime that opens libcuda.so.1
 * with dlopen at th_model_create (so the .so loads anywhere and a machine without a driver or
 * device gets "no CUDA device"), refuses a device older than the build's arch by name (neither the
 * cubin nor the PTX can run there), loads the cubin (or JIT-compiles the PTX when the cubin does not
 * fit the device), uploads the folded weights and the plain-tensor parameters once (the kernels
 * read torch's layout: no packing), and launches the plan on a stream, copying each host input in
 * and each output out through page-locked buffers allocated at create; the plan's launches are
 * recorded once into a CUDA graph at create and replayed by every run (plain launches where the driver
 * has no graphs, the capture fails, or TH_CUDA_GRAPHS=0). Plain C11; embedded into tunehub and never compiled into tunehub itself. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int th__cures;
typedef uint64_t th__cuptr;
typedef void *th__cuh;

static struct th__cu {
  int loaded;
  th__cures (*Init)(unsigned);
  th__cures (*DeviceGetCount)(int *);
  th__cures (*DeviceGet)(int *, int);
  th__cures (*DeviceGetAttribute)(int *, int, int);
  th__cures (*DeviceGetName)(char *, int, int);
  th__cures (*DevicePrimaryCtxRetain)(th__cuh *, int);
  th__cures (*DevicePrimaryCtxRelease)(int);
  th__cures (*CtxSetCurrent)(th__cuh);
  th__cures (*ModuleLoadData)(th__cuh *, const void *);
  th__cures (*ModuleUnload)(th__cuh);
  th__cures (*ModuleGetFunction)(th__cuh *, th__cuh, const char *);
  th__cures (*MemAlloc)(th__cuptr *, size_t);
  th__cures (*MemFree)(th__cuptr);
  th__cures (*MemcpyHtoD)(th__cuptr, const void *, size_t);
  th__cures (*MemcpyHtoDAsync)(th__cuptr, const void *, size_t, th__cuh);
  th__cures (*MemcpyDtoHAsync)(void *, th__cuptr, size_t, th__cuh);
  th__cures (*MemcpyDtoDAsync)(th__cuptr, th__cuptr, size_t, th__cuh);
  th__cures (*MemsetD8)(th__cuptr, unsigned char, size_t);
  th__cures (*LaunchKernel)(th__cuh, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                            th__cuh, void **, void **);
  th__cures (*StreamCreate)(th__cuh *, unsigned);
  th__cures (*StreamDestroy)(th__cuh);
  th__cures (*StreamSynchronize)(th__cuh);
  th__cures (*GetErrorString)(th__cures, const char **);
  th__cures (*MemHostAlloc)(void **, size_t, unsigned);
  th__cures (*MemFreeHost)(void *);
  th__cures (*FuncSetAttribute)(th__cuh, int, int);
  /* CUDA graphs (optional: a driver without them runs plain launches) */
  th__cures (*StreamBeginCapture)(th__cuh, int);
  th__cures (*StreamEndCapture)(th__cuh, th__cuh *);
  th__cures (*GraphInstantiate)(th__cuh *, th__cuh, unsigned long long);
  th__cures (*GraphLaunch)(th__cuh, th__cuh);
  th__cures (*GraphExecDestroy)(th__cuh);
  th__cures (*GraphDestroy)(th__cuh);
  const char *graph_missing; /* the first graph entry point the driver lacks, or NULL */
} th__cu;

#define TH__NKERNELS ((int)(sizeof th__kernels / sizeof th__kernels[0]))

struct th_model {
  int dev;
  th__cuh ctx, module, stream;
  th__cuh fns[TH__NKERNELS];
  th__cuh posts[TH__NKERNELS]; /* a split-k kernel's second kernel (NULL: none) */
  th__cuptr weights;   /* folded weights and biases, one allocation */
  th__cuptr workspace; /* every intermediate tensor */
  th__cuptr scratch;   /* the split-k partial sums, the largest any kernel takes (0: none) */
  /* page-locked staging for th_model_run(_io): every input, then every output, each at a 256-byte
   * boundary (th__pin_off), so the copies are DMA and asynchronous; NULL when the driver could not
   * pin that much, and the copies then read and write the caller's (pageable) memory directly */
  unsigned char *pinned;
  /* the plan's launches recorded once at create and replayed by every run (NULL: plain launches,
   * and launch_mode says why) */
  th__cuh graph, exec;
  char launch_mode[300];
};

static const char *th__cuerr(th__cures r) {
  static _Thread_local char buf[48];
  const char *s = NULL;
  if (th__cu.GetErrorString && th__cu.GetErrorString(r, &s) == 0 && s) return s;
  snprintf(buf, sizeof buf, "CUDA error %d", r);
  return buf;
}

/* Opens the driver once; 0 or -1 with "no CUDA device: ..." set. Not thread-safe against concurrent
 * first calls of th_model_create (create models from one thread first). */
static int th__cu_load(void) {
  if (th__cu.loaded) return 0;
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) return th__fail("no CUDA device: the CUDA driver (libcuda.so.1) is not installed (%s)", dlerror());
  struct {
    void **slot;
    const char *name;
  } syms[] = {
      {(void **)&th__cu.Init, "cuInit"},
      {(void **)&th__cu.DeviceGetCount, "cuDeviceGetCount"},
      {(void **)&th__cu.DeviceGet, "cuDeviceGet"},
      {(void **)&th__cu.DeviceGetAttribute, "cuDeviceGetAttribute"},
      {(void **)&th__cu.DeviceGetName, "cuDeviceGetName"},
      {(void **)&th__cu.DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"},
      {(void **)&th__cu.DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"},
      {(void **)&th__cu.CtxSetCurrent, "cuCtxSetCurrent"},
      {(void **)&th__cu.ModuleLoadData, "cuModuleLoadData"},
      {(void **)&th__cu.ModuleUnload, "cuModuleUnload"},
      {(void **)&th__cu.ModuleGetFunction, "cuModuleGetFunction"},
      {(void **)&th__cu.MemAlloc, "cuMemAlloc_v2"},
      {(void **)&th__cu.MemFree, "cuMemFree_v2"},
      {(void **)&th__cu.MemcpyHtoD, "cuMemcpyHtoD_v2"},
      {(void **)&th__cu.MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"},
      {(void **)&th__cu.MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"},
      {(void **)&th__cu.MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"},
      {(void **)&th__cu.MemsetD8, "cuMemsetD8_v2"},
      {(void **)&th__cu.LaunchKernel, "cuLaunchKernel"},
      {(void **)&th__cu.StreamCreate, "cuStreamCreate"},
      {(void **)&th__cu.StreamDestroy, "cuStreamDestroy_v2"},
      {(void **)&th__cu.StreamSynchronize, "cuStreamSynchronize"},
      {(void **)&th__cu.GetErrorString, "cuGetErrorString"},
      {(void **)&th__cu.MemHostAlloc, "cuMemHostAlloc"},
      {(void **)&th__cu.MemFreeHost, "cuMemFreeHost"},
      {(void **)&th__cu.FuncSetAttribute, "cuFuncSetAttribute"},
      /* after this row, optional: the graph entry points, without which the runtime launches one by one
       * (the names cuda.h maps cuStreamBeginCapture and cuGraphInstantiate to, CUDA 11.4 and later) */
      {NULL, NULL},
      {(void **)&th__cu.StreamBeginCapture, "cuStreamBeginCapture_v2"},
      {(void **)&th__cu.StreamEndCapture, "cuStreamEndCapture"},
      {(void **)&th__cu.GraphInstantiate, "cuGraphInstantiateWithFlags"},
      {(void **)&th__cu.GraphLaunch, "cuGraphLaunch"},
      {(void **)&th__cu.GraphExecDestroy, "cuGraphExecDestroy"},
      {(void **)&th__cu.GraphDestroy, "cuGraphDestroy"},
  };
  int optional = 0;
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    if (!syms[i].slot) {
      optional = 1;
      continue;
    }
    *syms[i].slot = dlsym(h, syms[i].name);
    if (*syms[i].slot) continue;
    if (!optional) return th__fail("no CUDA device: the CUDA driver lacks %s (too old?)", syms[i].name);
    if (!th__cu.graph_missing) th__cu.graph_missing = syms[i].name;
  }
  th__cures r = th__cu.Init(0);
  if (r != 0) return th__fail("no CUDA device: cuInit failed (%s)", th__cuerr(r));
  int n = 0;
  r = th__cu.DeviceGetCount(&n);
  if (r != 0 || n < 1) return th__fail("no CUDA device: the driver reports %s", r ? th__cuerr(r) : "none");
  th__cu.loaded = 1;
  return 0;
}

static int th__load_weights(float *host, const th_params_tensor *es, int n) {
  for (int i = 0; i < (int)(sizeof th__wparams / sizeof th__wparams[0]); i++) {
    const struct th__wparam *wp = &th__wparams[i];
    if (!wp->weight) continue; /* the placeholder row of a network without weights */
    float *w = th__folded_weights(wp, es, n, wp->boff >= 0 ? host + wp->boff : NULL);
    if (!w) return -1;
    int64_t numel = 1;
    for (int d = 0; d < wp->ndim; d++) numel *= wp->shape[d];
    memcpy(host + wp->woff, w, (size_t)numel * sizeof(float));
    free(w);
  }
  return 0;
}

#define TH__CU(call, what)                                                                 \
  do {                                                                                     \
    th__cures r__ = (call);                                                                \
    if (r__ != 0) return th__fail("%s: %s (%s)", th__info.network, what, th__cuerr(r__)); \
  } while (0)

/* A cubin for sm_XY runs on sm_XZ with Z >= Y, and the PTX for compute_XY JIT-compiles for any device
 * of compute capability XY or above; a device below the build's arch can run neither, and the driver
 * would say only "invalid image". Name both archs instead. */
static int th__check_arch(int dev) {
  int major = 0, minor = 0;
  TH__CU(th__cu.DeviceGetAttribute(&major, 75 /* COMPUTE_CAPABILITY_MAJOR */, dev), "cuDeviceGetAttribute");
  TH__CU(th__cu.DeviceGetAttribute(&minor, 76 /* COMPUTE_CAPABILITY_MINOR */, dev), "cuDeviceGetAttribute");
  int sm = major * 10 + minor;
  if (sm >= th__build_sm) return 0;
  char name[128] = "";
  if (th__cu.DeviceGetName(name, (int)sizeof name, dev) != 0) snprintf(name, sizeof name, "device %d", dev);
  return th__fail("%s: this bundle was built for sm_%d (cubin sm_%d, PTX compute_%d) and cannot run on %s, "
                  "an sm_%d device; fetch one built for it (?target=sm_%d)",
                  th__info.network, th__build_sm, th__build_sm, th__build_sm, name, sm, sm);
}

/* Where input k (out = 0) or output k (out = 1) lies in m->pinned; with k = th__info.num_outputs and
 * out = 1, the buffer's size. */
static size_t th__pin_off(int out, int k) {
  size_t off = 0;
  for (int i = 0; i < (out ? th__info.num_inputs : k); i++) off += (th__in[i].bytes + 255) / 256 * 256;
  for (int i = 0; out && i < k; i++) off += (th__out[i].bytes + 255) / 256 * 256;
  return off;
}

/* A launch may pass up to 48 KiB of dynamic shared memory; a kernel that needs more opts in once, up to
 * the device's per-block maximum (227 KiB on sm_90, 99 KiB on sm_86), which is checked here so that the
 * message names the kernel and both sizes. */
static int th__dyn_shared_opt_in(struct th_model *m) {
  int optin = -1;
  for (int k = 0; k < TH__NKERNELS; k++) {
    unsigned need = th__kernels[k].dyn_shared;
    if (need <= 48 * 1024) continue;
    if (optin < 0)
      TH__CU(th__cu.DeviceGetAttribute(&optin, 97 /* MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */, m->dev),
             "cuDeviceGetAttribute");
    if (need > (unsigned)optin)
      return th__fail("%s: kernel %s needs %u bytes of dynamic shared memory per block; the device allows %d",
                      th__info.network, th__kernels[k].name, need, optin);
    TH__CU(th__cu.FuncSetAttribute(m->fns[k], 8 /* MAX_DYNAMIC_SHARED_SIZE_BYTES */, (int)need),
           "cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)");
  }
  return 0;
}

static int th__setup(struct th_model *m, const float *host) {
  TH__CU(th__cu.DeviceGet(&m->dev, 0), "cuDeviceGet");
  if (th__check_arch(m->dev) != 0) return -1;
  TH__CU(th__cu.DevicePrimaryCtxRetain(&m->ctx, m->dev), "cuDevicePrimaryCtxRetain");
  TH__CU(th__cu.CtxSetCurrent(m->ctx), "cuCtxSetCurrent");
  /* the cubin for the build's arch; the PTX (JIT) when the device cannot run it */
  if (th__cu.ModuleLoadData(&m->module, th__cubin) != 0) {
    m->module = NULL;
    TH__CU(th__cu.ModuleLoadData(&m->module, th__ptx), "loading the kernels (cubin and PTX both failed)");
  }
  unsigned long long scratch = 0;
  for (int k = 0; k < TH__NKERNELS; k++) {
    TH__CU(th__cu.ModuleGetFunction(&m->fns[k], m->module, th__kernels[k].name), "cuModuleGetFunction");
    if (th__kernels[k].post)
      TH__CU(th__cu.ModuleGetFunction(&m->posts[k], m->module, th__kernels[k].post), "cuModuleGetFunction");
    if (th__kernels[k].scratch > scratch) scratch = th__kernels[k].scratch;
  }
  if (th__dyn_shared_opt_in(m) != 0) return -1;
  /* never cleared: each split-k kernel writes every partial its second kernel reads */
  if (scratch > 0) TH__CU(th__cu.MemAlloc(&m->scratch, (size_t)scratch * sizeof(float)), "allocating the split-k scratch");
  size_t wbytes = ((size_t)th__weights_floats * sizeof(float) + 255) / 256 * 256;
  size_t wsbytes = ((size_t)th__workspace_floats * sizeof(float) + 255) / 256 * 256;
  TH__CU(th__cu.MemAlloc(&m->weights, wbytes ? wbytes : 256), "allocating the weights");
  TH__CU(th__cu.MemAlloc(&m->workspace, wsbytes ? wsbytes : 256), "allocating the workspace");
  TH__CU(th__cu.MemsetD8(m->workspace, 0, wsbytes ? wsbytes : 256), "clearing the workspace");
  if (th__weights_floats > 0)
    TH__CU(th__cu.MemcpyHtoD(m->weights, host, (size_t)th__weights_floats * sizeof(float)), "uploading the weights");
  /* cuMemcpyHtoD from pageable memory returns once the bytes are staged, and the model's stream is
   * non-blocking (it does not wait for the legacy stream): wait for the upload to land */
  TH__CU(th__cu.StreamSynchronize(NULL), "uploading the weights");
  TH__CU(th__cu.StreamCreate(&m->stream, 1 /* non-blocking */), "cuStreamCreate");
  /* not fatal: pinned memory is a limited resource, and pageable copies are merely slower */
  void *pin = NULL;
  if (th__cu.MemHostAlloc(&pin, th__pin_off(1, th__info.num_outputs) + 256, 0) == 0) m->pinned = pin;
  return 0;
}

static int th__launch(struct th_model *m, th__cuh stream) {
  for (int i = 0; i < (int)(sizeof th__calls / sizeof th__calls[0]); i++) {
    const struct th__call *c = &th__calls[i];
    const struct th__kernel *k = &th__kernels[c->kernel];
    th__cuptr args[6] = {0, 0, 0, 0, 0, 0};
    void *params[7] = {0, 0, 0, 0, 0, 0, 0};
    for (int a = 0; a < c->nargs; a++) {
      switch (c->space[a]) {
        case 1: args[a] = m->workspace + (th__cuptr)c->off[a] * sizeof(float); break;
        case 2:
        case 3: args[a] = m->weights + (th__cuptr)c->off[a] * sizeof(float); break;
        default: args[a] = 0; break;
      }
      params[a] = &args[a];
    }
    if (k->post) { /* split-k: the scratch after the arguments, for both kernels */
      args[c->nargs] = m->scratch;
      params[c->nargs] = &args[c->nargs];
    }
    th__cures r = th__cu.LaunchKernel(m->fns[c->kernel], k->grid[0], k->grid[1], k->grid[2], k->block[0],
                                      k->block[1], k->block[2], k->dyn_shared, stream, params, NULL);
    if (r != 0) return th__fail("launching %s (call %d): %s", k->name, i, th__cuerr(r));
    if (k->post) {
      r = th__cu.LaunchKernel(m->posts[c->kernel], k->pgrid[0], k->pgrid[1], k->pgrid[2], k->pblock[0],
                              k->pblock[1], k->pblock[2], 0, stream, params, NULL);
      if (r != 0) return th__fail("launching %s (call %d): %s", k->post, i, th__cuerr(r));
    }
  }
  return 0;
}

/* Records the plan's launches on the model's stream into a CUDA graph and instantiates it, so that a
 * run is one cuGraphLaunch instead of one cuLaunchKernel per call. Only the launches are captured: they
 * read and write the model's own weights and workspace, whose addresses never change, so the graph
 * holds for every run and every caller's buffers and stream; the input and output copies stay outside
 * it (one per tensor, not per kernel). A driver without graphs, TH_CUDA_GRAPHS=0, or a failed capture
 * or instantiation leaves plain launches, and launch_mode says why; never an error. */
static void th__graph_build(struct th_model *m) {
  const char *env = getenv("TH_CUDA_GRAPHS");
  if (env && strcmp(env, "0") == 0) {
    snprintf(m->launch_mode, sizeof m->launch_mode, "launches (TH_CUDA_GRAPHS=0)");
    return;
  }
  if (th__cu.graph_missing) {
    snprintf(m->launch_mode, sizeof m->launch_mode, "launches (the driver lacks %s)", th__cu.graph_missing);
    return;
  }
  /* thread-local: other threads' allocations (another model's create) stay legal during the capture */
  th__cures r = th__cu.StreamBeginCapture(m->stream, 1 /* CU_STREAM_CAPTURE_MODE_THREAD_LOCAL */);
  if (r != 0) {
    snprintf(m->launch_mode, sizeof m->launch_mode, "launches (cuStreamBeginCapture: %s)", th__cuerr(r));
    return;
  }
  int lr = th__launch(m, m->stream);
  char why[sizeof m->launch_mode];
  snprintf(why, sizeof why, "%s", th__err);
  th__err[0] = '\0'; /* the create succeeds */
  th__cuh g = NULL;
  r = th__cu.StreamEndCapture(m->stream, &g); /* ends the capture whatever happened inside it */
  if (lr == 0 && r == 0 && g) r = th__cu.GraphInstantiate(&m->exec, g, 0);
  if (lr == 0 && r == 0 && g && m->exec) {
    m->graph = g;
    snprintf(m->launch_mode, sizeof m->launch_mode, "graph");
    return;
  }
  m->exec = NULL;
  if (g) th__cu.GraphDestroy(g);
  if (lr != 0)
    snprintf(m->launch_mode, sizeof m->launch_mode, "launches (capturing: %s)", why);
  else
    snprintf(m->launch_mode, sizeof m->launch_mode, "launches (%s: %s)",
             !g ? "cuStreamEndCapture" : "cuGraphInstantiate", r ? th__cuerr(r) : "no graph");
}

/* The plan on stream s: the graph's replay, or every launch. */
static int th__plan(struct th_model *m, th__cuh s) {
  if (!m->exec) return th__launch(m, s);
  th__cures r = th__cu.GraphLaunch(m->exec, s);
  if (r != 0) return th__fail("%s: cuGraphLaunch (%s)", th__info.network, th__cuerr(r));
  return 0;
}

const char *th_model_cuda_launch_mode(const struct th_model *m) {
  return m ? m->launch_mode : "";
}

void th_model_free(struct th_model *m) {
  if (!m) return;
  if (m->ctx) th__cu.CtxSetCurrent(m->ctx);
  if (m->exec) th__cu.GraphExecDestroy(m->exec);
  if (m->graph) th__cu.GraphDestroy(m->graph);
  if (m->stream) th__cu.StreamDestroy(m->stream);
  if (m->pinned) th__cu.MemFreeHost(m->pinned);
  if (m->weights) th__cu.MemFree(m->weights);
  if (m->workspace) th__cu.MemFree(m->workspace);
  if (m->scratch) th__cu.MemFree(m->scratch);
  if (m->module) th__cu.ModuleUnload(m->module);
  if (m->ctx) th__cu.DevicePrimaryCtxRelease(m->dev);
  free(m);
}

int th_model_create(const void *params, size_t size, struct th_model **out) {
  th_params_tensor *es = NULL;
  int n = th__create_begin(params, size, out, &es);
  if (n < 0) return -1;
  float *host = calloc((size_t)th__weights_floats + 16, sizeof(float));
  if (!host) {
    free(es);
    return th__fail("out of memory");
  }
  int rc = th__load_weights(host, es, n);
  if (rc == 0) rc = th__load_consts(host, es, n);
  free(es);
  if (rc == 0) rc = th__cu_load();
  struct th_model *m = NULL;
  if (rc == 0 && !(m = calloc(1, sizeof *m))) rc = th__fail("out of memory");
  if (rc == 0) rc = th__setup(m, host);
  free(host);
  if (rc == 0) th__graph_build(m);
  if (rc != 0) {
    th_model_free(m);
    return -1;
  }
  *out = m;
  return 0;
}

int th_model_run_device(struct th_model *m, const void *d_input, void *d_output, void *stream) {
  if (!m || !d_input || !d_output) return th__fail("th_model_run_device: NULL argument");
  if (th__check_single("th_model_run_device") != 0) return -1;
  /* NULL is CUDA's stream 0, the legacy default stream: ordered after the caller's earlier work on it
   * and on blocking streams (a cudaMemcpy into d_input), as a CUDA caller expects of stream 0 */
  th__cuh s = (th__cuh)stream;
  TH__CU(th__cu.CtxSetCurrent(m->ctx), "cuCtxSetCurrent");
  TH__CU(th__cu.MemcpyDtoDAsync(m->workspace + (th__cuptr)th__in[0].off * sizeof(float),
                                (th__cuptr)(uintptr_t)d_input, th__in[0].bytes, s),
         "copying the input");
  if (th__plan(m, s) != 0) return -1;
  TH__CU(th__cu.MemcpyDtoDAsync((th__cuptr)(uintptr_t)d_output,
                                m->workspace + (th__cuptr)th__out[0].off * sizeof(float),
                                th__out[0].bytes, s),
         "copying the output");
  return 0;
}

/* Host inputs in (one copy per tensor), the plan, host outputs out, on the model's stream, through
 * the pinned buffers when there are some: the copies are then asynchronous DMA and the run waits once,
 * at the end; the host-side memcpy into and out of them is what the driver would do for pageable
 * memory itself, through its own smaller staging buffers and in chunks. */
static int th__run_host(struct th_model *m, const void *const *inputs, void *const *outputs) {
  TH__CU(th__cu.CtxSetCurrent(m->ctx), "cuCtxSetCurrent");
  th__cures r = 0;
  for (int k = 0; k < th__info.num_inputs; k++) {
    const void *src = inputs[k];
    if (m->pinned) src = memcpy(m->pinned + th__pin_off(0, k), inputs[k], th__in[k].bytes);
    if ((r = th__cu.MemcpyHtoDAsync(m->workspace + (th__cuptr)th__in[k].off * sizeof(float), src,
                                    th__in[k].bytes, m->stream)) != 0)
      return th__fail("%s: copying input '%s' to the device (%s)", th__info.network,
                      th__info.inputs[k].name, th__cuerr(r));
  }
  if (th__plan(m, m->stream) != 0) return -1;
  for (int k = 0; k < th__info.num_outputs; k++)
    if ((r = th__cu.MemcpyDtoHAsync(m->pinned ? m->pinned + th__pin_off(1, k) : outputs[k],
                                    m->workspace + (th__cuptr)th__out[k].off * sizeof(float),
                                    th__out[k].bytes, m->stream)) != 0)
      return th__fail("%s: copying output '%s' from the device (%s)", th__info.network,
                      th__info.outputs[k].name, th__cuerr(r));
  TH__CU(th__cu.StreamSynchronize(m->stream), "running the model");
  for (int k = 0; m->pinned && k < th__info.num_outputs; k++)
    memcpy(outputs[k], m->pinned + th__pin_off(1, k), th__out[k].bytes);
  return 0;
}

int th_model_run(struct th_model *m, const float *input, float *output) {
  if (!m || !input || !output) return th__fail("th_model_run: NULL argument");
  if (th__check_single("th_model_run") != 0) return -1;
  const void *ins[1] = {input};
  void *outs[1] = {output};
  return th__run_host(m, ins, outs);
}

int th_model_run_io(struct th_model *m, const void *const *inputs, void *const *outputs) {
  if (th__check_io(m, inputs, outputs) != 0) return -1;
  return th__run_host(m, inputs, outputs);
}
