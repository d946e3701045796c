/* The CPU oracle of the GPU templates: one workload computed with plain loops in the GPU ABI (NCHW,
 * torch-layout weights with batch norm folded, bias [oc], fused epilogue). Used by the CUDA
 * measurement (tc_cuda_measure) and the GPU template tests. Double accumulation, so it is the more
 * exact side. Dense and the tensor families (whose GPU ABI is the CPU one) go to tc_ref_kernel
 * (ref/ref_kernel.c). */
#include "ref/ref_kernel.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "ops.h"
#include "tc_cuda.h"

void tc_cuda_arg_sizes(const tc_workload *wl, int64_t sizes[5]) {
  tc_arg_layout args;
  memset(sizes, 0, 5 * sizeof sizes[0]);
  if (tc_op_args(wl, &args) != TH_OK) return;
  for (int a = 0; a < args.nargs && a < 5; a++) sizes[a] = args.nelems[a];
}

int tc_cuda_arg_elem_bytes(const tc_workload *wl, int slot) {
  tc_arg_layout args;
  if (slot < 0 || slot >= TC_MAX_ARGS || tc_op_args(wl, &args) != TH_OK) return 4;
  return args.elem_bytes[slot] == 8 ? 8 : 4;
}

void tc_cuda_fill_i64(const tc_workload *wl, int64_t *p, int64_t n, uint64_t *seed) {
  int ga = wl->kernel == TC_KERNEL_GATHER || wl->kernel == TC_KERNEL_SCATTER;
  int emb = wl->kernel == TC_KERNEL_EMBEDDING || ga;
  /* gather and scatter also take negative indices in [-c, 0) */
  int64_t lo = !emb ? -1000 : ga ? -wl->c : 0;
  int64_t span = !emb ? 2001 : ga ? 2 * (int64_t)wl->c : wl->c;
  for (int64_t i = 0; i < n; i++) {
    *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t r = *seed >> 33;
    p[i] = lo + (int64_t)(r % (uint64_t)span);
    int64_t sign = (r >> 24) % 2 ? -1 : 1;
    if ((r >> 20) % 16 == 0) /* one in 16 just outside the table, or beyond 32 bits */
      p[i] = emb ? (sign < 0 ? -1 : wl->c) : sign * (((int64_t)1 << 40) + (int64_t)(r % 4096));
  }
}

static double tc__hard_sigmoid(double v, double alpha, double beta) {
  v = alpha * v + beta;
  return v < 0 ? 0 : v > 1 ? 1 : v;
}

static float tc__epi(const tc_workload *wl, double v, int ch, int64_t idx, float *const *args) {
  int weighted = wl->kernel == TC_KERNEL_CONV2D || wl->kernel == TC_KERNEL_DEPTHWISE || wl->kernel == TC_KERNEL_DENSE;
  if (weighted && (wl->epilogue & TC_EPI_BIAS) && args[TC_ARG_BIAS]) v += args[TC_ARG_BIAS][ch];
  if (weighted && (wl->epilogue & TC_EPI_RESIDUAL) && args[TC_ARG_RESIDUAL]) v += args[TC_ARG_RESIDUAL][idx];
  if (wl->epilogue & TC_EPI_RELU) v = v > 0 ? v : 0;
  if (wl->epilogue & TC_EPI_CLIP) v = v < wl->clip_min ? wl->clip_min : v > wl->clip_max ? wl->clip_max : v;
  if (wl->epilogue & TC_EPI_SIGMOID) v = 1.0 / (1.0 + exp(-v));
  if (wl->epilogue & TC_EPI_HARD_SIGMOID) v = tc__hard_sigmoid(v, wl->alpha, wl->beta);
  if (wl->epilogue & TC_EPI_HARD_SWISH) v = v * tc__hard_sigmoid(v, 1.0 / 6.0, 0.5);
  if (wl->epilogue & TC_EPI_SILU) v = v / (1.0 + exp(-v));
  return (float)v;
}

th_status tc_cuda_ref_kernel(const tc_workload *wl, float *const *args) {
  if (!wl || !args || tc_workload_check(wl) != TH_OK || wl->in_cb != 1 || wl->out_cb != 1) return TH_ERR_INVALID;
  const int N = wl->n, C = wl->c, H = wl->h, W = wl->w, F = wl->oc, OH = wl->oh, OW = wl->ow;
  const float *in = args[0];
  switch (wl->kernel) {
    case TC_KERNEL_CONV2D:
    case TC_KERNEL_DEPTHWISE:
    case TC_KERNEL_MAXPOOL:
    case TC_KERNEL_AVGPOOL: {
      int conv = wl->kernel == TC_KERNEL_CONV2D, dw = wl->kernel == TC_KERNEL_DEPTHWISE;
      float *out = args[conv || dw ? TC_ARG_OUT : 1];
      const float *w = args[TC_ARG_WEIGHTS];
      for (int n = 0; n < N; n++)
        for (int f = 0; f < F; f++)
          for (int oy = 0; oy < OH; oy++)
            for (int ox = 0; ox < OW; ox++) {
              double acc = wl->kernel == TC_KERNEL_MAXPOOL ? -FLT_MAX : 0.0;
              int G = tc_workload_groups(wl), cg = C / G, c0 = conv ? f / (F / G) * cg : f;
              int c1 = conv ? c0 + cg : f + 1;
              for (int c = c0; c < c1; c++)
                for (int ky = 0; ky < wl->kh; ky++)
                  for (int kx = 0; kx < wl->kw; kx++) {
                    int iy = oy * wl->sh - wl->pt + ky * tc_workload_dil(wl, 0),
                        ix = ox * wl->sw - wl->pl + kx * tc_workload_dil(wl, 1);
                    if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                    double v = in[(((int64_t)n * C + c) * H + iy) * W + ix];
                    if (conv)
                      acc += v * w[(((int64_t)f * cg + c - c0) * wl->kh + ky) * wl->kw + kx];
                    else if (dw) acc += v * w[((int64_t)f * wl->kh + ky) * wl->kw + kx];
                    else if (wl->kernel == TC_KERNEL_MAXPOOL) acc = v > acc ? v : acc;
                    else acc += v;
                  }
              if (wl->kernel == TC_KERNEL_AVGPOOL) {
                int hs = oy * wl->sh - wl->pt, ws = ox * wl->sw - wl->pl, he = hs + wl->kh, we = ws + wl->kw;
                int hpe = he < H + wl->pb ? he : H + wl->pb, wpe = we < W + wl->pr ? we : W + wl->pr;
                int h0 = hs < 0 ? 0 : hs, w0 = ws < 0 ? 0 : ws, h1 = he < H ? he : H, w1 = we < W ? we : W;
                int div = wl->count_include_pad ? (hpe - hs) * (wpe - ws) : (h1 - h0) * (w1 - w0);
                acc = div > 0 ? acc / div : 0.0;
              }
              int64_t o = (((int64_t)n * F + f) * OH + oy) * OW + ox;
              out[o] = tc__epi(wl, acc, f, o, args);
            }
      return TH_OK;
    }
    case TC_KERNEL_GLOBAL_AVGPOOL:
      for (int64_t r = 0; r < (int64_t)N * C; r++) {
        double acc = 0;
        for (int64_t k = 0; k < (int64_t)H * W; k++) acc += in[r * H * W + k];
        args[1][r] = tc__epi(wl, acc / ((double)H * W), 0, r, args);
      }
      return TH_OK;
    case TC_KERNEL_SOFTMAX: {
      int64_t len = W > 1 ? W : H > 1 ? H : C, rows = (int64_t)N * C * H * W / len;
      for (int64_t r = 0; r < rows; r++) {
        const float *x = in + r * len;
        double m = -INFINITY, s = 0;
        for (int64_t k = 0; k < len; k++) m = x[k] > m ? x[k] : m;
        for (int64_t k = 0; k < len; k++) s += exp(x[k] - m);
        for (int64_t k = 0; k < len; k++) args[1][r * len + k] = (float)(exp(x[k] - m) / s);
      }
      return TH_OK;
    }
    case TC_KERNEL_ELTWISE:
      for (int64_t i = 0; i < (int64_t)N * C * H * W; i++)
        args[2][i] = tc__epi(wl, (double)args[0][i] + args[1][i], 0, i, args);
      return TH_OK;
    case TC_KERNEL_CONCAT:
      for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++)
          memcpy(args[1] + (((int64_t)n * F + wl->c_offset + c) * H * W), in + ((int64_t)n * C + c) * H * W,
                 (size_t)H * W * sizeof(float));
      return TH_OK;
    case TC_KERNEL_LAYOUT:
      memcpy(args[1], in, (size_t)N * C * H * W * sizeof(float));
      return TH_OK;
    default: /* dense (torch weights on the GPU too), the tensor families: the CPU ABI's oracle */
      return tc_ref_kernel(wl, (void *const *)args);
  }
}

/* ---- the reference split over the batch ------------------------------------------------------------ */

typedef struct tc__ref_part {
  tc_workload wl; /* n = this part's samples */
  float *args[TC_MAX_ARGS];
  th_status rc;
} tc__ref_part;

static void *tc__ref_part_run(void *p) {
  tc__ref_part *part = p;
  part->rc = tc_cuda_ref_kernel(&part->wl, part->args);
  return NULL;
}

/* The families whose samples (n) are independent and whose arguments are either per sample, n-major,
 * or shared by every sample. */
static int tc__ref_splits(tc_kernel k) {
  switch (k) {
    case TC_KERNEL_CONV2D:
    case TC_KERNEL_DEPTHWISE:
    case TC_KERNEL_DENSE:
    case TC_KERNEL_MAXPOOL:
    case TC_KERNEL_AVGPOOL:
    case TC_KERNEL_GLOBAL_AVGPOOL:
    case TC_KERNEL_BATCH_MATMUL:
      return 1;
    default:
      return 0;
  }
}

th_status tc_cuda_ref_kernel_threads(const tc_workload *wl, float *const *args, int threads) {
  if (!wl || !args) return TH_ERR_INVALID;
  int n = wl->n;
  if (threads > n) threads = n;
  if (threads > 64) threads = 64;
  if (threads < 2 || !tc__ref_splits(wl->kernel)) return tc_cuda_ref_kernel(wl, args);
  /* which arguments are per sample: those of n samples are n times those of one; the others must be
   * the same size for one sample and for n (the weights, the bias) */
  tc_workload one = *wl;
  one.n = 1;
  tc_arg_layout all, each;
  if (tc_workload_check(wl) != TH_OK || tc_workload_check(&one) != TH_OK || tc_op_args(wl, &all) != TH_OK ||
      tc_op_args(&one, &each) != TH_OK)
    return tc_cuda_ref_kernel(wl, args);
  for (int a = 0; a < all.nargs; a++)
    if (all.nelems[a] != each.nelems[a] && all.nelems[a] != (int64_t)n * each.nelems[a])
      return tc_cuda_ref_kernel(wl, args);
  tc__ref_part parts[64];
  pthread_t tid[64];
  int started = 0;
  th_status rc = TH_OK;
  for (int i = 0; i < threads; i++) {
    int n0 = (int)((int64_t)n * i / threads), n1 = (int)((int64_t)n * (i + 1) / threads);
    tc__ref_part *p = &parts[i];
    p->wl = *wl;
    p->wl.n = n1 - n0;
    p->rc = TH_OK;
    for (int a = 0; a < TC_MAX_ARGS; a++) {
      p->args[a] = a < all.nargs ? args[a] : NULL;
      if (a < all.nargs && args[a] && all.nelems[a] != each.nelems[a])
        p->args[a] = (float *)((char *)args[a] + (size_t)n0 * (size_t)each.nelems[a] * (size_t)all.elem_bytes[a]);
    }
  }
  for (; started < threads; started++)
    if (pthread_create(&tid[started], NULL, tc__ref_part_run, &parts[started]) != 0) break;
  for (int i = started; i < threads; i++) tc__ref_part_run(&parts[i]); /* no thread: here */
  for (int i = 0; i < started; i++) pthread_join(tid[i], NULL);
  for (int i = 0; i < threads; i++)
    if (parts[i].rc != TH_OK) rc = parts[i].rc;
  return rc;
}
