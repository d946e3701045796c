/* tunehub_model.h: the C ABI of a model .so built by tunehub. The library holds every kernel of the
 * network, an ahead-of-time plan that calls them in order over one workspace, and a small runtime (thread
 * pool: TH_NUM_THREADS, default all cores). It needs nothing else from tunehub.
 *
 *   th_model_info()      static facts: network, target, batch, input and output shapes; every named input
 *                        and output with its dtype and shape (inputs, outputs).
 *   th_model_create()    checks params.bin (magic, version, size, CRC-32, every tensor's name and shape),
 *                        folds batch norms, packs the weights once into one allocation and allocates the
 *                        workspace. The params buffer may be freed afterwards. Returns 0, or -1 with
 *                        th_model_last_error() saying why; *out is written only on success.
 *   th_model_run_io()    any network: inputs[i] points at inputs[i].count elements of inputs[i].dtype
 *                        (float32: float, int64: int64_t), in th_model_info's order; outputs likewise.
 *                        The buffers need no alignment. Every int64 input that indexes an embedding table
 *                        is checked before anything runs: a value outside [0, rows) returns -1 with
 *                        th_model_last_error() naming the input, the position, the value, the valid range
 *                        and the table ("input_ids[0][37] = 40000 is outside [0, 30522)
 *                        (embeddings.word_embeddings)"), and the outputs are left untouched.
 *   th_model_run()       networks with one float32 input and one float32 output (the CNNs, vit): input
 *                        batch x C x H x W floats (NCHW); output: the output shape's floats. Others: -1
 *                        with a message that points to th_model_run_io.
 *                        One model must not run on two threads at once; create one model per thread.
 *   th_model_run_profiled(), th_model_run_io_profiled() the same, timing each kernel call (CPU bundles;
 *                        `tunehub run --profile`).
 *   th_model_free()      accepts NULL.
 *   th_model_last_error() the calling thread's last error message ("" if none).
 * A CUDA model .so (target "cuda -arch=sm_XX") opens libcuda.so.1 at th_model_create, which fails with
 * "no CUDA device: ..." on a machine without a driver or GPU; the .so itself always loads. It uploads the
 * weights once; th_model_run and th_model_run_io copy host inputs and outputs (one asynchronous copy per
 * tensor, through page-locked buffers allocated at create, then one synchronize); th_model_run_device
 * takes device pointers. th_model_create records the network's kernel launches once into a CUDA graph,
 * and every run replays it (one cuGraphLaunch); the input and output copies stay outside the graph, which
 * touches only the model's own memory, so any buffers and streams may be passed. TH_CUDA_GRAPHS=0 in the
 * environment at create launches the kernels one by one instead (A/B timing), as does a driver without
 * graphs or a failed capture: th_model_cuda_launch_mode says which. */
#ifndef TUNEHUB_MODEL_H
#define TUNEHUB_MODEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum th_dtype { TH_DTYPE_F32 = 0, TH_DTYPE_I64 = 1 };

struct th_tensor_desc {
  const char *name; /* "input", "input_ids", "last_hidden_state", ... */
  int dtype;        /* enum th_dtype */
  int ndim;
  int64_t shape[6];
  size_t count;     /* elements */
};

struct th_model_info {
  const char *network;          /* "resnet-18" */
  const char *target;           /* "llvm -mcpu=<cpu>" */
  const char *triple;           /* "x86_64-pc-linux-gnu" */
  const char *compiler_version; /* tunehub version that built it */
  int batch;
  int input_ndim;
  int64_t input_shape[4];
  int output_ndim;
  int64_t output_shape[4];
  size_t input_size;            /* elements of inputs[0] (floats for the CNNs) */
  size_t output_size;           /* elements of outputs[0] */
  size_t workspace_bytes;
  size_t weights_bytes;
  int num_kernels;              /* kernel calls per run */
  /* every input and output (appended: the fields above keep their offsets), in the network's order.
   * input_ndim/input_shape/input_size describe inputs[0] and output_* outputs[0]; input_ndim (output_ndim)
   * is 0 when that tensor has more than 4 dimensions. */
  int num_inputs;
  const struct th_tensor_desc *inputs;
  int num_outputs;
  const struct th_tensor_desc *outputs;
};

struct th_model;

const struct th_model_info *th_model_info(void);
int th_model_create(const void *params, size_t size, struct th_model **out);
int th_model_run(struct th_model *m, const float *input, float *output);
int th_model_run_io(struct th_model *m, const void *const *inputs, void *const *outputs);
/* CPU bundles only: th_model_run that also adds each kernel call's wall time in seconds to
 * call_seconds[i], i < num_kernels (the manifest's layers, by index). Timing costs two clock reads per
 * call. */
int th_model_run_profiled(struct th_model *m, const float *input, float *output, double *call_seconds);
/* CPU bundles only: th_model_run_io with the same per-call timing as th_model_run_profiled. */
int th_model_run_io_profiled(struct th_model *m, const void *const *inputs, void *const *outputs,
                             double *call_seconds);
void th_model_free(struct th_model *m);
const char *th_model_last_error(void);
/* CUDA bundles only (target "cuda ..."): runs on device memory. d_input and d_output are CUdeviceptr
 * values (input_size / output_size floats) of the current device; stream is a CUstream, or NULL for
 * CUDA's legacy default stream (stream 0: ordered after the caller's earlier work on it and on blocking
 * streams, such as a cudaMemcpy into d_input). The call only enqueues work: synchronise the stream
 * before reading d_output (a synchronous cudaMemcpy from d_output does, for stream 0).
 * Networks with one float32 input and output only (like th_model_run); others get -1. */
int th_model_run_device(struct th_model *m, const void *d_input, void *d_output, void *stream);
/* CUDA bundles only: how m runs its kernels, "graph" (a CUDA graph replayed per run) or "launches (why)":
 * "launches (TH_CUDA_GRAPHS=0)", "launches (the driver lacks cuGraphInstantiateWithFlags)",
 * "launches (cuStreamBeginCapture: ...)". Borrowed, valid until th_model_free(m); "" for NULL. */
const char *th_model_cuda_launch_mode(const struct th_model *m);

#ifdef __cplusplus
}
#endif

#endif
