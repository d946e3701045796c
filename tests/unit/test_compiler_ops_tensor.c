/* The tensor kernel families of issue 20 (layer_norm, softmax_rows, unary, embedding, copy, binary,
 * and dense's gelu/tanh epilogues): the naive oracle tc_ref_kernel on tiny cases computed by hand,
 * so that the oracle the template tests trust is itself checked against numbers a reader can
 * verify; the loop IR pieces the templates need (int64 buffers, sqrt) through the LLVM backend. */
#include <float.h>
#include <stdint.h>

#include "link.h"
#include "ref/ref_kernel.h"
#include "test_ops_util.h"
#include "test_tensor_wl.h"

static void expect(const float *got, const float *want, int n, double tol) {
  for (int i = 0; i < n; i++) {
    if (!(fabs((double)got[i] - want[i]) <= tol)) {
      fprintf(stderr, "element %d: got %.9g want %.9g\n", i, got[i], want[i]);
      CHECK(0);
    }
  }
}

TH_TEST(ref_batch_matmul) {
  /* two 2x2 products; the second batch is the identity times b */
  float a[8] = {1, 2, 3, 4, 1, 0, 0, 1}, b[8] = {5, 6, 7, 8, 1, 2, 3, 4}, out[8];
  tc_workload wl = tensor_wl(TC_KERNEL_BATCH_MATMUL, 2, 2, 2, 1);
  wl.alpha = 0.5f;
  void *args[3] = {a, b, out};
  CHECK_EQ_INT(tc_ref_kernel(&wl, args), TH_OK);
  expect(out, (float[]){9.5f, 11, 21.5f, 25, 0.5f, 1, 1.5f, 2}, 8, 0);
  /* a stored [K, M] and b stored [N, K]: a^T . b^T */
  wl.trans_a = wl.trans_b = 1;
  wl.alpha = 1;
  CHECK_EQ_INT(tc_ref_kernel(&wl, args), TH_OK);
  /* a^T = [[1,3],[2,4]], b^T = [[5,7],[6,8]] */
  expect(out, (float[]){23, 31, 34, 46, 1, 3, 2, 4}, 8, 0);
  /* M = 1, K = 3, N = 2 (a non-square case) */
  tc_workload r = tensor_wl(TC_KERNEL_BATCH_MATMUL, 1, 3, 1, 1);
  r.oc = 2;
  r.alpha = 1;
  float ra[3] = {1, 2, 3}, rb[6] = {1, 0, 0, 1, 1, 1}, ro[2];
  void *rargs[3] = {ra, rb, ro};
  CHECK_EQ_INT(tc_ref_kernel(&r, rargs), TH_OK);
  expect(ro, (float[]){4, 5}, 2, 0);
  return 0;
}

TH_TEST(ref_layer_norm) {
  /* [1, 2, 3]: mean 2, biased variance 2/3, so (x - mean) / sqrt(2/3 + eps) = -+1.2247357 */
  float in[6] = {1, 2, 3, 5, 5, 5}, gamma[3] = {1, 2, 1}, beta[3] = {0, 0, 1}, out[6];
  tc_workload wl = tensor_wl(TC_KERNEL_LAYER_NORM, 2, 3, 1, 1);
  wl.alpha = 1e-5f;
  void *args[5] = {in, gamma, beta, NULL, out};
  CHECK_EQ_INT(tc_ref_kernel(&wl, args), TH_OK);
  double s = 1.0 / sqrt(2.0 / 3.0 + 1e-5);
  /* a constant row normalises to beta */
  expect(out, (float[]){(float)-s, 0, (float)(1 + s), 0, 0, 1}, 6, 1e-6);
  /* the residual is added first: [0, 1, 2] + [1, 1, 1] is the first row again */
  float in2[6] = {0, 1, 2, 4, 4, 4}, res[6] = {1, 1, 1, 1, 1, 1};
  wl.epilogue = TC_EPI_RESIDUAL;
  void *args2[5] = {in2, gamma, beta, res, out};
  CHECK_EQ_INT(tc_ref_kernel(&wl, args2), TH_OK);
  expect(out, (float[]){(float)-s, 0, (float)(1 + s), 0, 0, 1}, 6, 1e-6);
  args2[3] = NULL; /* the residual slot is read */
  CHECK_EQ_INT(tc_ref_kernel(&wl, args2), TH_ERR_INVALID);
  return 0;
}

TH_TEST(ref_softmax_rows) {
  /* rows [n=2, c=1, h=2] of w=3; alpha 2 halves nothing away: softmax(2 * [0, ln3/2, -inf-ish]) */
  float l3 = (float)(log(3.0) / 2);
  float in[12] = {0, l3, 0, 0, 0, 0, 1, 2, 3, 0, l3, 0};
  float mask[6] = {0, 0, -3.4e38f, -3.4e38f, -3.4e38f, -3.4e38f}, out[12];
  tc_workload wl = tensor_wl(TC_KERNEL_SOFTMAX_ROWS, 2, 1, 2, 3);
  wl.alpha = 2;
  void *args[3] = {in, NULL, out};
  CHECK_EQ_INT(tc_ref_kernel(&wl, args), TH_OK);
  double e2 = exp(2.0), e4 = exp(4.0), e6 = exp(6.0), z = e2 + e4 + e6;
  expect(out,
         (float[]){0.2f, 0.6f, 0.2f, 1 / 3.f, 1 / 3.f, 1 / 3.f, (float)(e2 / z), (float)(e4 / z),
                   (float)(e6 / z), 0.2f, 0.6f, 0.2f},
         12, 1e-6);
  /* the mask: batch 0 masks its last position, batch 1 all of them (uniform as in torch, no NaN) */
  wl.epilogue = TC_EPI_MASK;
  args[1] = mask;
  CHECK_EQ_INT(tc_ref_kernel(&wl, args), TH_OK);
  float t = 1 / 3.f;
  expect(out, (float[]){0.25f, 0.75f, 0, 0.5f, 0.5f, 0, t, t, t, t, t, t}, 12, 1e-6);
  args[1] = NULL;
  CHECK_EQ_INT(tc_ref_kernel(&wl, args), TH_ERR_INVALID);
  return 0;
}

TH_TEST(ref_unary) {
  float x[4] = {1, -1, 0, 0.5f}, out[4];
  tc_workload wl = tensor_wl(TC_KERNEL_UNARY, 4, 1, 1, 1);
  void *args[2] = {x, out};
  wl.op = TC_UNARY_GELU; /* torch.nn.functional.gelu: 0.8413447, -0.1586553, 0, 0.3457312 */
  CHECK_EQ_INT(tc_ref_kernel(&wl, args), TH_OK);
  expect(out, (float[]){0.8413447f, -0.1586553f, 0, 0.3457312f}, 4, 1e-7);
  wl.op = TC_UNARY_TANH;
  CHECK_EQ_INT(tc_ref_kernel(&wl, args), TH_OK);
  expect(out, (float[]){0.7615942f, -0.7615942f, 0, 0.4621172f}, 4, 1e-7);
  wl.op = TC_UNARY_AFFINE;
  wl.alpha = 2;
  wl.beta = 1;
  CHECK_EQ_INT(tc_ref_kernel(&wl, args), TH_OK);
  expect(out, (float[]){3, -1, 1, 2}, 4, 0);
  /* torch.sigmoid, nn.Hardsigmoid (alpha 1/6, beta 0.5; and ONNX's default 0.2), nn.Hardswish,
   * nn.SiLU of 1, -1, 0, 0.5 */
  wl.op = TC_UNARY_SIGMOID;
  CHECK_EQ_INT(tc_ref_kernel(&wl, args), TH_OK);
  expect(out, (float[]){0.7310586f, 0.2689414f, 0.5f, 0.6224593f}, 4, 1e-7);
  wl.op = TC_UNARY_HARD_SIGMOID;
  wl.alpha = 1.0f / 6.0f;
  wl.beta = 0.5f;
  CHECK_EQ_INT(tc_ref_kernel(&wl, args), TH_OK);
  expect(out, (float[]){0.6666667f, 0.3333333f, 0.5f, 0.5833333f}, 4, 1e-7);
  wl.alpha = 0.2f;
  x[0] = 3; /* clamped at 1 */
  x[1] = -2.5f; /* at 0 exactly */
  CHECK_EQ_INT(tc_ref_kernel(&wl, args), TH_OK);
  expect(out, (float[]){1, 0, 0.5f, 0.6f}, 4, 1e-7);
  x[0] = 1, x[1] = -1;
  wl.op = TC_UNARY_HARD_SWISH;
  CHECK_EQ_INT(tc_ref_kernel(&wl, args), TH_OK);
  expect(out, (float[]){0.6666667f, -0.3333333f, 0, 0.2916667f}, 4, 1e-7);
  wl.op = TC_UNARY_SILU;
  CHECK_EQ_INT(tc_ref_kernel(&wl, args), TH_OK);
  expect(out, (float[]){0.7310586f, -0.2689414f, 0, 0.3112297f}, 4, 1e-7);
  int64_t ids[4] = {-3, 1 << 20, 7, 0};
  wl.op = TC_UNARY_CAST_I64;
  args[0] = ids;
  CHECK_EQ_INT(tc_ref_kernel(&wl, args), TH_OK);
  expect(out, (float[]){-3, 1 << 20, 7, 0}, 4, 0);
  return 0;
}

TH_TEST(ref_embedding) {
  /* a [3, 2] table; index -1 and 3 are outside [0, 3): rows of zeros */
  float table[6] = {1, 2, 3, 4, 5, 6}, out[8];
  int64_t idx[4] = {2, -1, 3, 0};
  tc_workload wl = tensor_wl(TC_KERNEL_EMBEDDING, 4, 3, 1, 1);
  wl.oc = 2;
  void *args[3] = {idx, table, out};
  CHECK_EQ_INT(tc_ref_kernel(&wl, args), TH_OK);
  expect(out, (float[]){5, 6, 0, 0, 0, 0, 1, 2}, 8, 0);
  return 0;
}

TH_TEST(ref_gather) {
  /* Gather along axis 1 of data [2, 3] by indices [2] = {2, -3}: out [2, 2] (-3 wraps to 0) */
  float data[6] = {1, 2, 3, 4, 5, 6}, out[4];
  int64_t idx[3] = {2, -3, 3};
  tc_workload wl = strided_wl(TC_KERNEL_GATHER, 2, (int[]){2, 2}, (int[]){3, 0}, (int[]){0, 1});
  wl.c = 3;
  wl.oc = 1;
  wl.kh = wl.kw = 0;
  void *args[3] = {data, idx, out};
  CHECK_EQ_INT(tc_ref_kernel(&wl, args), TH_OK);
  expect(out, (float[]){3, 1, 6, 4}, 4, 0);
  /* GatherElements along axis 0 by [[1, 0, 2]]... here indices {2, -3, 3}: 3 is outside (0) */
  tc_workload el = strided_wl(TC_KERNEL_GATHER, 2, (int[]){1, 3}, (int[]){0, 1}, (int[]){3, 1});
  el.c = 2;
  el.oc = 3;
  el.kh = el.kw = 0;
  int64_t rows[3] = {1, -2, 2};
  void *eargs[3] = {data, rows, out};
  CHECK_EQ_INT(tc_ref_kernel(&el, eargs), TH_OK);
  expect(out, (float[]){4, 2, 0}, 3, 0);
  /* an ignored index (a loss's ignore_index 1) reads 0 */
  el.kh = 1;
  el.kw = 1;
  CHECK_EQ_INT(tc_ref_kernel(&el, eargs), TH_OK);
  expect(out, (float[]){0, 2, 0}, 3, 0);
  return 0;
}

TH_TEST(ref_copy) {
  float in[6] = {0, 1, 2, 3, 4, 5}, out[6];
  /* transpose [2, 3] -> [3, 2]: out[j * 2 + i] = in[i * 3 + j] */
  tc_workload wl = strided_wl(TC_KERNEL_COPY, 2, (int[]){2, 3}, (int[]){3, 1}, (int[]){1, 2});
  void *args[2] = {in, out};
  CHECK_EQ_INT(tc_ref_kernel(&wl, args), TH_OK);
  expect(out, (float[]){0, 3, 1, 4, 2, 5}, 6, 0);
  /* slice in[1..3) into out[4..6) (the offsets), leaving the rest alone */
  wl = strided_wl(TC_KERNEL_COPY, 1, (int[]){2}, (int[]){1}, (int[]){1});
  wl.aoff = 1;
  wl.boff = 4;
  CHECK_EQ_INT(tc_ref_kernel(&wl, args), TH_OK);
  expect(out, (float[]){0, 3, 1, 4, 1, 2}, 6, 0);
  /* expand [3] -> [2, 3] (stride 0 on the input) */
  wl = strided_wl(TC_KERNEL_COPY, 2, (int[]){2, 3}, (int[]){0, 1}, (int[]){3, 1});
  CHECK_EQ_INT(tc_ref_kernel(&wl, args), TH_OK);
  expect(out, (float[]){0, 1, 2, 0, 1, 2}, 6, 0);
  return 0;
}

TH_TEST(ref_binary) {
  float a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {10, 20, 40}, out[6];
  /* [2, 3] + [3] broadcast along axis 0 */
  tc_workload wl = strided_wl(TC_KERNEL_BINARY, 2, (int[]){2, 3}, (int[]){3, 1}, (int[]){0, 1});
  void *args[3] = {a, b, out};
  CHECK_EQ_INT(tc_ref_kernel(&wl, args), TH_OK);
  expect(out, (float[]){11, 22, 43, 14, 25, 46}, 6, 0);
  wl.op = TC_BINARY_MUL;
  CHECK_EQ_INT(tc_ref_kernel(&wl, args), TH_OK);
  expect(out, (float[]){10, 40, 120, 40, 100, 240}, 6, 0);
  /* a [2, 1] broadcast along axis 1 minus b [3]; then divided */
  wl = strided_wl(TC_KERNEL_BINARY, 2, (int[]){2, 3}, (int[]){1, 0}, (int[]){0, 1});
  wl.op = TC_BINARY_SUB;
  CHECK_EQ_INT(tc_ref_kernel(&wl, args), TH_OK);
  expect(out, (float[]){-9, -19, -39, -8, -18, -38}, 6, 0);
  wl.op = TC_BINARY_DIV;
  CHECK_EQ_INT(tc_ref_kernel(&wl, args), TH_OK);
  expect(out, (float[]){0.1f, 0.05f, 0.025f, 0.2f, 0.1f, 0.05f}, 6, 1e-8);
  return 0;
}

TH_TEST(ref_dense_epilogues) {
  /* [2, 2] . [2, 2]^T (torch's [oc, c] weights) + bias */
  float in[4] = {1, 2, 3, 4}, wt[4] = {1, 0, 1, -1}, bias[2] = {0, 0.5f}, res[4] = {1, 1, 1, 1},
        out[4];
  tc_workload wl = tensor_wl(TC_KERNEL_DENSE, 2, 2, 1, 1);
  void *args[5] = {in, wt, bias, res, out};
  wl.epilogue = TC_EPI_BIAS; /* rows: [1, -1 + 0.5], [3, -1 + 0.5] */
  CHECK_EQ_INT(tc_ref_kernel(&wl, args), TH_OK);
  expect(out, (float[]){1, -0.5f, 3, -0.5f}, 4, 0);
  wl.epilogue = TC_EPI_BIAS | TC_EPI_RESIDUAL | TC_EPI_RELU;
  CHECK_EQ_INT(tc_ref_kernel(&wl, args), TH_OK);
  expect(out, (float[]){2, 0.5f, 4, 0.5f}, 4, 0);
  wl.epilogue = TC_EPI_CLIP;
  wl.clip_min = -0.25f;
  wl.clip_max = 2;
  CHECK_EQ_INT(tc_ref_kernel(&wl, args), TH_OK);
  expect(out, (float[]){1, -0.25f, 2, -0.25f}, 4, 0);
  wl.epilogue = TC_EPI_BIAS | TC_EPI_GELU; /* gelu(1), gelu(-0.5), gelu(3), gelu(-0.5) */
  CHECK_EQ_INT(tc_ref_kernel(&wl, args), TH_OK);
  expect(out, (float[]){0.8413447f, -0.1542687f, 2.9959502f, -0.1542687f}, 4, 1e-7);
  wl.epilogue = TC_EPI_TANH;
  CHECK_EQ_INT(tc_ref_kernel(&wl, args), TH_OK);
  expect(out, (float[]){0.7615942f, -0.7615942f, 0.9950548f, -0.7615942f}, 4, 1e-7);
  return 0;
}

TH_TEST(ref_rejects) {
  float x[4] = {0};
  void *args[5] = {x, x, x, x, x};
  tc_workload conv = tensor_wl(TC_KERNEL_GLOBAL_AVGPOOL, 1, 2, 1, 1);
  conv.oh = conv.ow = 1;
  CHECK_EQ_INT(tc_ref_kernel(&conv, args), TH_ERR_UNSUPPORTED);
  tc_workload wl = tensor_wl(TC_KERNEL_UNARY, 4, 1, 1, 1);
  CHECK_EQ_INT(tc_ref_kernel(NULL, args), TH_ERR_INVALID);
  CHECK_EQ_INT(tc_ref_kernel(&wl, NULL), TH_ERR_INVALID);
  wl.op = TC_UNARY_COUNT; /* tc_workload_check says no */
  CHECK_EQ_INT(tc_ref_kernel(&wl, args), TH_ERR_INVALID);
  wl = tensor_wl(TC_KERNEL_DENSE, 1, 2, 1, 1);
  wl.epilogue = TC_EPI_BIAS;
  args[TC_ARG_BIAS] = NULL;
  CHECK_EQ_INT(tc_ref_kernel(&wl, args), TH_ERR_INVALID);
  /* gather: an ignored index without the flag, an empty axis, a flag other than 0 or 1 */
  tc_workload ga = strided_wl(TC_KERNEL_GATHER, 1, (int[]){2}, (int[]){0}, (int[]){1});
  ga.c = 2;
  ga.kh = 0;
  ga.kw = 0;
  CHECK_EQ_INT(tc_workload_check(&ga), TH_OK);
  ga.kw = 3;
  CHECK_EQ_INT(tc_workload_check(&ga), TH_ERR_INVALID);
  ga.kw = 0, ga.c = 0;
  CHECK_EQ_INT(tc_workload_check(&ga), TH_ERR_INVALID);
  ga.c = 2, ga.kh = 2;
  CHECK_EQ_INT(tc_workload_check(&ga), TH_ERR_INVALID);
  return 0;
}

TH_TEST(ref_scatter) {
  /* ONNX's ScatterElements example: data [3, 3] zeros, indices [[1, 0, 2], [0, 2, 1]] along axis 0,
   * updates [[1.0, 1.1, 1.2], [2.0, 2.1, 2.2]] -> [[2.0, 1.1, 0], [1.0, 0, 2.2], [0, 2.1, 1.2]] */
  float data[9] = {0}, upd[6] = {1.0f, 1.1f, 1.2f, 2.0f, 2.1f, 2.2f}, out[9];
  int64_t idx[6] = {1, 0, 2, 0, 2, 1};
  tc_workload wl = strided_wl(TC_KERNEL_SCATTER, 2, (int[]){3, 3}, (int[]){1, 0}, (int[]){0, 1});
  wl.c = 3, wl.oc = 3, wl.kh = 2, wl.kw = 0, wl.op = TC_SCATTER_NONE;
  void *args[4] = {data, idx, upd, out};
  CHECK_EQ_INT(tc_ref_kernel(&wl, args), TH_OK);
  expect(out, (float[]){2.0f, 1.1f, 0, 1.0f, 0, 2.2f, 0, 2.1f, 1.2f}, 9, 0);
  /* along axis 1 of [1, 5] = 1..5 by [1, -2 (= 3), 1] with [10, 20, 30]: the last duplicate wins
   * (none); add and mul fold both; max and min keep data's element against the updates */
  float d1[5] = {1, 2, 3, 4, 5}, u1[3] = {10, 20, 30}, o1[5];
  int64_t i1[3] = {1, -2, 1};
  tc_workload w1 = strided_wl(TC_KERNEL_SCATTER, 2, (int[]){1, 5}, (int[]){0, 1}, (int[]){3, 0});
  w1.c = 5, w1.oc = 1, w1.kh = 3, w1.kw = 0;
  void *a1[4] = {d1, i1, u1, o1};
  static const float want[TC_SCATTER_COUNT][5] = {{1, 30, 3, 20, 5},
                                                  {1, 42, 3, 24, 5},
                                                  {1, 600, 3, 80, 5},
                                                  {1, 30, 3, 20, 5},
                                                  {1, 2, 3, 4, 5}};
  for (int op = 0; op < TC_SCATTER_COUNT; op++) {
    w1.op = op;
    CHECK_EQ_INT(tc_ref_kernel(&w1, a1), TH_OK);
    expect(o1, want[op], 5, 0);
  }
  /* an index outside [-5, 5) lands nowhere */
  i1[0] = 5, i1[1] = -6, i1[2] = 7, w1.op = TC_SCATTER_NONE;
  CHECK_EQ_INT(tc_ref_kernel(&w1, a1), TH_OK);
  expect(o1, d1, 5, 0);
  /* no candidates, or a reduction beyond min, is refused */
  w1.kh = 0;
  CHECK_EQ_INT(tc_workload_check(&w1), TH_ERR_INVALID);
  w1.kh = 3, w1.op = TC_SCATTER_COUNT;
  CHECK_EQ_INT(tc_workload_check(&w1), TH_ERR_INVALID);
  return 0;
}

/* ---- templates through LLVM against tc_ref_kernel ---- */

/* The argument slots of a tensor workload: elements and element size of each, and which is the
 * output. */
typedef struct slots {
  int n, out;
  size_t count[5], size[5];
} slots;

static size_t span(const tc_workload *wl, const int *stride, int off) {
  size_t last = (size_t)off;
  for (int d = 0; d < wl->ndim; d++) last += (size_t)(wl->shape[d] - 1) * (size_t)stride[d];
  return last + 1;
}

static slots arg_slots(const tc_workload *wl) {
  slots a;
  memset(&a, 0, sizeof a);
  a.n = tc_op_nargs(wl->kernel);
  a.out = a.n - 1;
  size_t rows = (size_t)wl->n * wl->c * wl->h * wl->w;
  for (int i = 0; i < 5; i++) a.size[i] = sizeof(float);
  switch (wl->kernel) {
    case TC_KERNEL_LAYER_NORM:
      a.count[0] = a.count[3] = a.count[4] = rows;
      a.count[1] = a.count[2] = (size_t)wl->c;
      break;
    case TC_KERNEL_SOFTMAX_ROWS:
      a.count[0] = a.count[2] = rows;
      a.count[1] = (size_t)wl->n * wl->w;
      break;
    case TC_KERNEL_UNARY:
      a.count[0] = a.count[1] = (size_t)wl->n;
      if (wl->op == TC_UNARY_CAST_I64) a.size[0] = sizeof(int64_t);
      if (wl->op == TC_UNARY_CAST_TO_I64) a.count[1] *= 2; /* int64 results, as two floats each */
      break;
    case TC_KERNEL_REDUCE: /* ArgMax / ArgMin: int64 indices, as two floats each */
      a.count[0] = (size_t)wl->n * wl->c;
      a.count[1] = (size_t)wl->n * (wl->op >= TC_REDUCE_ARGMAX ? 2 : 1);
      break;
    case TC_KERNEL_EMBEDDING:
      a.count[0] = (size_t)wl->n;
      a.size[0] = sizeof(int64_t);
      a.count[1] = (size_t)wl->c * wl->oc;
      a.count[2] = (size_t)wl->n * wl->oc;
      break;
    case TC_KERNEL_COPY:
      a.count[0] = span(wl, wl->astride, wl->aoff);
      a.count[1] = span(wl, wl->bstride, wl->boff);
      break;
    case TC_KERNEL_BINARY:
      a.count[0] = span(wl, wl->astride, 0);
      a.count[1] = span(wl, wl->bstride, 0);
      a.count[2] = 1;
      for (int d = 0; d < wl->ndim; d++) a.count[2] *= (size_t)wl->shape[d];
      for (int i = 0; i < 3; i++) /* int64 operands and results (TC_WL_I64), as two floats each */
        if (tc_workload_i64_arg(wl, i)) a.count[i] *= 2;
      break;
    case TC_KERNEL_SCATTER:
      a.count[0] = a.count[3] = 1;
      for (int d = 0; d < wl->ndim; d++) a.count[0] = a.count[3] *= (size_t)wl->shape[d];
      a.count[1] = a.count[2] = span(wl, wl->bstride, 0) + (size_t)(wl->kh - 1) * (size_t)wl->oc;
      a.size[1] = sizeof(int64_t);
      break;
    case TC_KERNEL_GATHER:
      a.count[0] = span(wl, wl->astride, 0) + (size_t)(wl->c - 1) * (size_t)wl->oc;
      a.count[1] = span(wl, wl->bstride, 0);
      a.size[1] = sizeof(int64_t);
      a.count[2] = 1;
      for (int d = 0; d < wl->ndim; d++) a.count[2] *= (size_t)wl->shape[d];
      break;
    default:
      CHECK(0);
  }
  return a;
}

/* Inputs that reach each family's edges: a mean far from zero for layer norm, padded positions
 * (-3.4e38) and a fully masked batch for softmax masks, gelu/tanh tails, int64 values beyond 2^24,
 * indices outside the table, divisors away from zero. */
static void fill_slot(const tc_workload *wl, int slot, void *p, size_t count, size_t size) {
  float *f = p;
  int64_t *q = p;
  for (size_t i = 0; i < count && size == sizeof(float); i++) f[i] = frand();
  if (wl->kernel == TC_KERNEL_BINARY && wl->op >= TC_BINARY_TAKE) /* c: 0 or not; x: inf, NaN, -0 */
    for (size_t i = 0; i < count; i++)
      f[i] = slot == 0 ? (float)(i % 3 != 0) * f[i]
                       : (i % 4 == 0   ? NAN
                          : i % 4 == 1 ? -INFINITY
                          : i % 4 == 2 ? -0.0f
                                       : f[i]);
  if (wl->kernel == TC_KERNEL_BINARY && tc_workload_i64_arg(wl, slot))
    for (size_t i = 0; i < count / 2;
         i++) { /* small ones (0 and -1: division), past 2^53, limits */
      int r = irand(8);
      int64_t big = ((int64_t)irand(1 << 30) - (1 << 29)) * ((int64_t)1 << 30) + irand(1 << 20);
      q[i] = r < 4    ? (int64_t)irand(41) - 20
             : r < 6  ? big
             : r == 6 ? (irand(2) ? INT64_MIN : INT64_MAX)
                      : ((int64_t)1 << 53) + 1 + irand(9);
      if (wl->op == TC_BINARY_POW && slot == 1) q[i] = (int64_t)irand(70) - 3;
    }
  if (wl->kernel == TC_KERNEL_LAYER_NORM && (slot == 0 || slot == 3))
    for (size_t i = 0; i < count; i++) f[i] = 4.0f + 3.0f * f[i];
  if (wl->kernel == TC_KERNEL_SOFTMAX_ROWS && slot == 0)
    for (size_t i = 0; i < count; i++) f[i] *= 8.0f;
  if (wl->kernel == TC_KERNEL_SOFTMAX_ROWS && slot == 1)
    for (size_t i = 0; i < count; i++) {
      int masked = (int)(i / (size_t)wl->w) == 1 || irand(4) == 0; /* batch 1 fully masked */
      f[i] = masked ? -3.4e38f : 0.0f;
    }
  if (wl->kernel == TC_KERNEL_UNARY && wl->op != TC_UNARY_CAST_I64)
    for (size_t i = 0; i < count && slot == 0; i++) f[i] *= 7.0f;
  int pos = wl->op == TC_UNARY_LOG || wl->op == TC_UNARY_SQRT,
      rnd = wl->op == TC_UNARY_ROUND || wl->op == TC_UNARY_FLOOR || wl->op == TC_UNARY_CEIL;
  for (size_t i = 0; i < count && slot == 0 && wl->kernel == TC_KERNEL_UNARY; i++) {
    if (pos) f[i] = fabsf(f[i]) + 1e-3f; /* log and sqrt: positive (NaN below zero) */
    if (rnd && i % 3 == 0)
      f[i] = (float)((int)(i % 31) - 15) * 0.5f; /* exact halves and integers */
    if (wl->op == TC_UNARY_RECIPROCAL) f[i] += f[i] < 0 ? -0.5f : 0.5f;
    if (wl->op == TC_UNARY_ACOSH) f[i] = 1.0f + fabsf(f[i]); /* NaN below 1 */
    if (wl->op == TC_UNARY_ATANH) f[i] *= 0.13f;             /* within (-1, 1) */
    if (wl->op == TC_UNARY_ASIN || wl->op == TC_UNARY_ACOS) f[i] *= 0.13f;
    if (wl->op == TC_UNARY_TAN) f[i] *= 0.19f; /* within (-pi/2, pi/2), away from the poles */
    if ((wl->op == TC_UNARY_ISNAN || wl->op == TC_UNARY_ISINF) && i % 4 != 3)
      f[i] = i % 4 == 0 ? NAN : i % 4 == 1 ? INFINITY : -INFINITY; /* the cases tested for */
  }
  if (wl->kernel == TC_KERNEL_UNARY && wl->op == TC_UNARY_CAST_I64 && slot == 0)
    for (size_t i = 0; i < count; i++)
      q[i] = ((int64_t)irand(1 << 30) - (1 << 29)) * ((int64_t)1 << (irand(3) * 5));
  if (wl->kernel == TC_KERNEL_UNARY && wl->op == TC_UNARY_CAST_TO_I64 && slot == 0)
    for (size_t i = 0; i < count; i++) /* fractions of both signs (truncation), some past 2^31 */
      f[i] = i % 5 == 4 ? f[i] * 1e12f : f[i] * 100.0f;
  if (wl->kernel == TC_KERNEL_EMBEDDING && slot == 0)
    for (size_t i = 0; i < count; i++) q[i] = i == 0 ? wl->c : i == 1 ? -1 : irand(wl->c + 4) - 2;
  if (wl->kernel == TC_KERNEL_SCATTER && slot == 1) /* duplicates, negative, c and -c - 1 */
    for (size_t i = 0; i < count; i++)
      q[i] = i == 0 ? wl->c : i == 1 ? -wl->c - 1 : irand(2 * wl->c + 2) - wl->c - 1;
  if (wl->kernel == TC_KERNEL_GATHER && slot == 1) /* negative ones, c and -c - 1 outside */
    for (size_t i = 0; i < count; i++)
      q[i] = i == 0 ? wl->c : i == 1 ? -wl->c - 1 : irand(2 * wl->c + 2) - wl->c - 1;
  if (wl->kernel == TC_KERNEL_REDUCE && slot == 0 && wl->op >= TC_REDUCE_ARGMAX)
    for (size_t i = 0; i < count; i++) f[i] = (float)irand(5); /* ties: first and last differ */
  if (wl->kernel == TC_KERNEL_REDUCE && slot == 0 && wl->op == TC_REDUCE_LOG_SUM)
    for (size_t i = 0; i < count; i++) f[i] = fabsf(f[i]) + 1e-3f; /* a positive sum */
  if (wl->kernel == TC_KERNEL_REDUCE && slot == 0 && wl->op == TC_REDUCE_PROD)
    for (size_t i = 0; i < count; i++) f[i] = f[i] < 0 ? f[i] - 0.5f : f[i] + 0.5f; /* |x| ~ 1 */
  if (wl->kernel == TC_KERNEL_REDUCE && slot == 0 && wl->op == TC_REDUCE_LOG_SUM_EXP)
    for (size_t i = 0; i < count; i++) f[i] = 100.0f * f[i]; /* e^x alone would overflow */
  if (wl->kernel == TC_KERNEL_BINARY && slot == 1 &&
      (wl->op == TC_BINARY_DIV || wl->op == TC_BINARY_FMOD))
    for (size_t i = 0; i < count; i++) f[i] += f[i] < 0 ? -0.5f : 0.5f;
  /* pow: positive bases, fractional exponents in [-3, 3] (the emulator's check takes negative
   * bases with integral ones); comparisons: halves, so that equal pairs occur */
  if (wl->kernel == TC_KERNEL_BINARY && wl->op == TC_BINARY_POW)
    for (size_t i = 0; i < count; i++) f[i] = slot == 0 ? 0.25f + fabsf(f[i]) : 3.0f * f[i];
  if (wl->kernel == TC_KERNEL_BINARY && wl->op >= TC_BINARY_EQ)
    for (size_t i = 0; i < count; i++) f[i] = roundf(f[i] * 2.0f) * 0.5f;
}

/* Builds every (workload, config) into one library, runs each with random inputs (the output buffer
 * starts with the same random values for the kernel and the reference: a copy must leave the rest
 * alone) and compares with tc_ref_kernel at the 1e-4 tolerance of every template. */
static void check_tensor_list(const tc_workload *wls, const tc_config *cfgs, int n) {
  lib L;
  build(&L, n, wls, cfgs);
  for (int q = 0; q < n; q++) {
    const tc_workload *wl = &wls[q];
    slots a = arg_slots(wl);
    /* the residual or mask slot stays NULL without its epilogue: the kernel must not read it */
    int unused = wl->kernel == TC_KERNEL_LAYER_NORM && !(wl->epilogue & TC_EPI_RESIDUAL) ? 3
                 : wl->kernel == TC_KERNEL_SOFTMAX_ROWS && !(wl->epilogue & TC_EPI_MASK) ? 1
                                                                                         : -1;
    void *args[5] = {0}, *rargs[5] = {0};
    for (int i = 0; i < a.n; i++) {
      if (i == unused) continue;
      args[i] = malloc(a.count[i] * a.size[i] + 64);
      CHECK(args[i]);
      fill_slot(wl, i, args[i], a.count[i], a.size[i]);
      rargs[i] = args[i];
    }
    size_t osz = a.count[a.out];
    float *ref = malloc(osz * sizeof *ref);
    CHECK(ref);
    memcpy(ref, args[a.out], osz * sizeof *ref);
    rargs[a.out] = ref;
    CHECK_EQ_INT(tc_ref_kernel(wl, rargs), TH_OK);
    sym(&L, q)((void *const *)args);
    tc_space s;
    char key[512], cfg[1024];
    CHECK_EQ_INT(tc_op_space(wl, &target, &s), TH_OK);
    tc_workload_key(wl, key, sizeof key);
    tc_config_str(&s, &cfgs[q], cfg, sizeof cfg);
    int exact = (wl->kernel == TC_KERNEL_REDUCE && wl->op >= TC_REDUCE_ARGMAX) || /* indices */
                (wl->kernel == TC_KERNEL_UNARY && wl->op == TC_UNARY_CAST_TO_I64);
    if (exact && memcmp(args[a.out], ref, osz * sizeof *ref) != 0) {
      const int64_t *gi = args[a.out], *ri = (const int64_t *)ref;
      for (size_t i = 0; i < osz / 2; i++)
        if (gi[i] != ri[i])
          fprintf(stderr, "%s: row %zu: index %lld, want %lld\n", key, i, (long long)gi[i],
                  (long long)ri[i]);
      CHECK(0);
    }
    int bits = wl->kernel == TC_KERNEL_BINARY && /* Where's halves, int64: */
               (wl->op >= TC_BINARY_TAKE || wl->dtype == TC_WL_I64);
    if (bits && memcmp(args[a.out], ref, osz * sizeof *ref) != 0) { /* NaN, inf, -0 as taken */
      fprintf(stderr, "%s: not bit for bit\n", key);
      CHECK(0);
    }
    if (!exact && !bits && !compare(key, args[a.out], ref, osz)) {
      fprintf(stderr, "lanes %d config %s\n", target.simd_lanes, cfg);
      CHECK(0);
    }
    for (int i = 0; i < a.n; i++) free(args[i]);
    free(ref);
  }
  unload(&L);
}

/* Each workload with its fallback, every value of every knob around it, and random valid configs;
 * on the host's vectors and, on an AVX-512 host, again with 8-lane (AVX2-width) kernels. */
static void check_tensor(const tc_workload *wls, int nwl) {
  for (int pass = 0; pass < 2; pass++) {
    enum { MAXN = 256 };
    tc_workload *all_wl = calloc(MAXN, sizeof *all_wl);
    tc_config *all_cfg = calloc(MAXN, sizeof *all_cfg);
    CHECK(all_wl && all_cfg);
    int n = 0;
    for (int i = 0; i < nwl; i++) {
      tc_config cfgs[48], extra[4];
      tc_space s;
      CHECK_EQ_INT(tc_op_space(&wls[i], &target, &s), TH_OK);
      int k = axis_configs(&wls[i], cfgs, 40), m = sample_configs(&wls[i], extra, 4);
      for (int j = 1; j < m; j++) { /* extra[0] is the fallback again */
        int dup = 0;
        for (int e = 0; e < k; e++)
          dup |= tc_space_index(&s, &cfgs[e]) == tc_space_index(&s, &extra[j]);
        if (!dup) cfgs[k++] = extra[j];
      }
      for (int j = 0; j < k; j++) {
        CHECK(n < MAXN);
        all_wl[n] = wls[i];
        all_cfg[n++] = cfgs[j];
      }
    }
    check_tensor_list(all_wl, all_cfg, n);
    free(all_wl);
    free(all_cfg);
    if (target.simd_lanes != 16) break;
    target.simd_lanes = 8;
    target.nregs = 16;
  }
  init_target();
}

static tc_workload layer_norm_wl(int rows, int c, int residual) {
  tc_workload wl = tensor_wl(TC_KERNEL_LAYER_NORM, rows, c, 1, 1);
  wl.alpha = residual ? 1e-12f : 1e-5f; /* BERT's and ViT's eps */
  wl.epilogue = residual ? TC_EPI_RESIDUAL : 0;
  return wl;
}

TH_TEST(layer_norm_differential) {
  init_target();
  tc_workload wls[] = {layer_norm_wl(4, 768, 1), layer_norm_wl(197, 64, 0),
                       layer_norm_wl(5, 129, 1), layer_norm_wl(1, 3, 0),
                       layer_norm_wl(7, 1, 1),   layer_norm_wl(3, 40, 0),
                       layer_norm_wl(33, 197, 1)};
  check_tensor(wls, (int)(sizeof wls / sizeof wls[0]));
  return 0;
}

static tc_workload softmax_wl(int n, int heads, int rows, int w, float alpha, int mask) {
  tc_workload wl = tensor_wl(TC_KERNEL_SOFTMAX_ROWS, n, heads, rows, w);
  wl.alpha = alpha;
  wl.epilogue = mask ? TC_EPI_MASK : 0;
  return wl;
}

/* BERT's masked attention and ViT's 197-wide rows, one-element rows, a single row, rows of exactly
 * one vector; the masks pad random positions and all of batch 1 (fill_slot). */
TH_TEST(softmax_rows_differential) {
  init_target();
  tc_workload wls[] = {
      softmax_wl(2, 12, 128, 128, 0.125f, 1), softmax_wl(1, 2, 197, 197, 0.125f, 0),
      softmax_wl(2, 3, 4, 1, 1.0f, 1),        softmax_wl(1, 1, 1, 129, 1.0f, 0),
      softmax_wl(3, 2, 5, 3, 0.5f, 1),        softmax_wl(2, 1, 1, 16, 2.0f, 1),
      softmax_wl(2, 1, 3, 35, 1.0f, 1)};
  check_tensor(wls, (int)(sizeof wls / sizeof wls[0]));
  return 0;
}

static tc_workload unary_wl(int op, int n) {
  tc_workload wl = tensor_wl(TC_KERNEL_UNARY, n, 1, 1, 1);
  wl.op = op;
  wl.alpha = 0.5f;
  wl.beta = -2.0f;
  return wl;
}

/* BERT's ffn gelu (128 x 3072), the CNN activations at feature-map sizes, and small and odd sizes of
 * each op; inputs over [-7, 7] (gelu's and tanh's tails, both clamps of hard sigmoid and hard swish),
 * int64 values up to 2^39. */
TH_TEST(unary_differential) {
  init_target();
  tc_workload wls[] = {unary_wl(TC_UNARY_GELU, 128 * 3072), unary_wl(TC_UNARY_GELU, 197),
                       unary_wl(TC_UNARY_GELU, 1),          unary_wl(TC_UNARY_TANH, 768),
                       unary_wl(TC_UNARY_TANH, 3),          unary_wl(TC_UNARY_CAST_I64, 128),
                       unary_wl(TC_UNARY_CAST_I64, 33),     unary_wl(TC_UNARY_CAST_I64, 1),
                       unary_wl(TC_UNARY_AFFINE, 129),      unary_wl(TC_UNARY_AFFINE, 100003),
                       unary_wl(TC_UNARY_SIGMOID, 112 * 112 * 32), unary_wl(TC_UNARY_SIGMOID, 19),
                       unary_wl(TC_UNARY_HARD_SIGMOID, 197), unary_wl(TC_UNARY_HARD_SIGMOID, 5),
                       unary_wl(TC_UNARY_HARD_SWISH, 40 * 28 * 28), unary_wl(TC_UNARY_HARD_SWISH, 1),
                       unary_wl(TC_UNARY_SILU, 96 * 56 * 56),  unary_wl(TC_UNARY_SILU, 33),
                       unary_wl(TC_UNARY_CLIP, 64 * 56 * 56),  unary_wl(TC_UNARY_CLIP, 7)};
  wls[18].alpha = 0.0f; /* a standalone relu (an imported densenet's, after x * scale + shift) */
  wls[18].beta = 3.4e38f;
  wls[19].alpha = -1.0f; /* a clip with both bounds in the inputs' range */
  wls[19].beta = 6.0f;
  wls[12].alpha = 1.0f / 6.0f; /* torch's hardsigmoid; the other one clamps most inputs (0.5x - 2) */
  wls[12].beta = 0.5f;
  check_tensor(wls, (int)(sizeof wls / sizeof wls[0]));
  return 0;
}

/* ONNX's element-wise math (exp .. thresholded relu) against libm in double, over [-7, 7] (log
 * and sqrt over (0, 7]; round, floor and ceil also at exact halves, round's ties going to even),
 * each at a size with a vector body and at one that is all scalar tail; alpha 0.5 and beta -2. */
TH_TEST(math_differential) {
  init_target();
  tc_workload wls[2 * (TC_UNARY_COUNT - TC_UNARY_EXP) + 2];
  int n = 0;
  for (int op = TC_UNARY_EXP; op < TC_UNARY_COUNT; op++) {
    wls[n++] = unary_wl(op, 1000);
    wls[n++] = unary_wl(op, 7);
  }
  for (int k = 0; k < 2; k++) { /* IsInf of +inf only, of -inf only */
    wls[n] = unary_wl(TC_UNARY_ISINF, 37);
    wls[n].alpha = (float)(k == 0);
    wls[n++].beta = (float)(k == 1);
  }
  check_tensor(wls, n);
  return 0;
}

static tc_workload reduce_wl(int op, int rows, int len) {
  tc_workload wl = tensor_wl(TC_KERNEL_REDUCE, rows, len, 1, 1);
  wl.oc = 1;
  wl.op = op;
  return wl;
}

/* The TC_REDUCE_* ops [lo, hi) over rows with a vector body and a tail, all tail, one element, and
 * a long row (a global pool's). */
static void check_reduce(int lo, int hi) {
  tc_workload wls[4 * TC_REDUCE_COUNT];
  int n = 0;
  for (int op = lo; op < hi; op++) {
    wls[n++] = reduce_wl(op, 6, 37);
    wls[n++] = reduce_wl(op, 5, 3);
    wls[n++] = reduce_wl(op, 3, 1);
    wls[n++] = reduce_wl(op, 2, op == TC_REDUCE_PROD ? 40 : 3136);
  }
  check_tensor(wls, n);
}

/* The reductions; log-sum-exp's inputs reach 100 (e^x overflows float32 without the max). */
TH_TEST(reduce_differential) {
  init_target();
  check_reduce(0, TC_REDUCE_ARGMAX);
  return 0;
}

/* ArgMax and ArgMin, first and last index, exactly, over small integers (ties everywhere). */
TH_TEST(reduce_arg_differential) {
  init_target();
  check_reduce(TC_REDUCE_ARGMAX, TC_REDUCE_COUNT);
  return 0;
}

static tc_workload embedding_wl(int n, int rows, int dim) {
  tc_workload wl = tensor_wl(TC_KERNEL_EMBEDDING, n, rows, 1, 1);
  wl.oc = dim;
  return wl;
}

/* BERT's position and token-type tables (a shorter word table), odd widths, width 1 and rows longer
 * than a piece; indices 0 and 1 are c and -1, the others in [-2, c + 2) (fill_slot). */
TH_TEST(embedding_differential) {
  init_target();
  tc_workload wls[] = {embedding_wl(128, 1000, 768), embedding_wl(128, 512, 768),
                       embedding_wl(128, 2, 768),    embedding_wl(5, 7, 3),
                       embedding_wl(1, 3, 1),        embedding_wl(33, 10, 129),
                       embedding_wl(3, 4, 5000)};
  check_tensor(wls, (int)(sizeof wls / sizeof wls[0]));
  return 0;
}

/* Row-major element strides of shape[0..nd) into st. */
static void contiguous(int nd, const int *shape, int *st) {
  for (int d = nd - 1, m = 1; d >= 0; m *= shape[d], d--) st[d] = m;
}

/* The gather workload of ONNX Gather (elements 0) or GatherElements (1) along axis of contiguous
 * data dims[0..nd) by contiguous indices idims[0..ni), as the lowering builds it. */
static tc_workload gather_wl(int elements, int nd, const int *dims, int ni, const int *idims,
                             int axis, int ignore) {
  int ds[TC_WL_DIMS], is[TC_WL_DIMS], shape[TC_WL_DIMS], as[TC_WL_DIMS], bs[TC_WL_DIMS], r = 0;
  contiguous(nd, dims, ds);
  contiguous(ni, idims, is);
  if (elements) {
    for (int d = 0; d < nd; d++, r++) {
      shape[r] = idims[d];
      as[r] = d == axis ? 0 : ds[d];
      bs[r] = is[d];
    }
  } else {
    for (int d = 0; d < nd - 1 + ni; d++, r++) {
      shape[r] = d < axis ? dims[d] : d < axis + ni ? idims[d - axis] : dims[d - ni + 1];
      as[r] = d < axis ? ds[d] : d >= axis + ni ? ds[d - ni + 1] : 0;
      bs[r] = d >= axis && d < axis + ni ? is[d - axis] : 0;
    }
  }
  tc_workload wl = strided_wl(TC_KERNEL_GATHER, r, shape, as, bs);
  wl.c = dims[axis];
  wl.oc = ds[axis];
  wl.kh = ignore != INT32_MIN;
  wl.kw = wl.kh ? ignore : 0;
  return wl;
}

/* Gather (axis 0, a middle and the last axis; 2-D indices; one element) and GatherElements (the
 * losses' class pick [N, 1, d] along axis 1, with an ignored index; a last-axis pick), runs longer
 * than a piece; indices negative and outside [-c, c) (fill_slot). */
TH_TEST(gather_differential) {
  init_target();
  tc_workload wls[] = {
      gather_wl(0, 2, (int[]){10, 7}, 1, (int[]){5}, 0, INT32_MIN),
      gather_wl(0, 3, (int[]){3, 9, 5}, 2, (int[]){2, 3}, 1, INT32_MIN),
      gather_wl(0, 3, (int[]){2, 3, 4}, 1, (int[]){6}, 2, INT32_MIN),
      gather_wl(0, 1, (int[]){5}, 1, (int[]){1}, 0, INT32_MIN),
      gather_wl(1, 3, (int[]){4, 5, 6}, 3, (int[]){4, 1, 6}, 1, 2),
      gather_wl(1, 2, (int[]){3, 5000}, 2, (int[]){3, 4100}, 1, INT32_MIN),
      gather_wl(0, 2, (int[]){3, 5000}, 1, (int[]){2}, 0, INT32_MIN),
  };
  check_tensor(wls, (int)(sizeof wls / sizeof wls[0]));
  return 0;
}

/* ScatterElements along `axis` of contiguous data dims[0..nd) by contiguous indices and updates
 * whose axis extent is kh (the other dims data's), reduction op, as the lowering builds it. */
static tc_workload scatter_wl(int nd, const int *dims, int axis, int kh, int op) {
  int shape[TC_WL_DIMS], as[TC_WL_DIMS], bs[TC_WL_DIMS], id[TC_WL_DIMS], is[TC_WL_DIMS];
  for (int d = 0; d < nd; d++) id[d] = d == axis ? kh : dims[d];
  contiguous(nd, id, is);
  for (int d = 0; d < nd; d++) {
    shape[d] = dims[d];
    as[d] = d == axis;
    bs[d] = d == axis ? 0 : is[d];
  }
  tc_workload wl = strided_wl(TC_KERNEL_SCATTER, nd, shape, as, bs);
  wl.c = dims[axis], wl.oc = is[axis], wl.kh = kh, wl.kw = 0, wl.op = op;
  return wl;
}

/* Each reduction over axis 0, a middle and the last axis, more candidates than the axis holds
 * (duplicates), runs longer than a piece; indices negative and outside [-c, c) (fill_slot). */
TH_TEST(scatter_differential) {
  init_target();
  tc_workload wls[] = {
      scatter_wl(2, (int[]){3, 3}, 0, 2, TC_SCATTER_NONE),
      scatter_wl(3, (int[]){2, 5, 4}, 1, 9, TC_SCATTER_ADD),
      scatter_wl(3, (int[]){2, 3, 6}, 2, 4, TC_SCATTER_MUL),
      scatter_wl(1, (int[]){7}, 0, 12, TC_SCATTER_MAX),
      scatter_wl(2, (int[]){3, 5000}, 0, 4, TC_SCATTER_MIN),
      scatter_wl(2, (int[]){2, 4100}, 1, 3, TC_SCATTER_NONE),
  };
  check_tensor(wls, (int)(sizeof wls / sizeof wls[0]));
  return 0;
}

/* The copy of a contiguous tensor in_shape[0..nd) into its permutation out dim d = in dim perm[d]
 * (contiguous too), iterated in the output's order (unit-stride output: vectors, gathered input) or
 * in the input's (strided output: element by element). */
static tc_workload permute_wl(int nd, const int *in_shape, const int *perm, int out_order) {
  int in_st[TC_WL_DIMS], out_shape[TC_WL_DIMS], out_st[TC_WL_DIMS], as[TC_WL_DIMS], bs[TC_WL_DIMS];
  contiguous(nd, in_shape, in_st);
  for (int d = 0; d < nd; d++) out_shape[d] = in_shape[perm[d]];
  contiguous(nd, out_shape, out_st);
  for (int d = 0; d < nd; d++) {
    as[d] = out_order ? in_st[perm[d]] : in_st[d];
    bs[d] = out_st[d];
  }
  if (!out_order) /* in the input's order: input dim e goes to the output dim d with perm[d] == e */
    for (int d = 0; d < nd; d++) bs[perm[d]] = out_st[d];
  return strided_wl(TC_KERNEL_COPY, nd, out_order ? out_shape : in_shape, as, bs);
}

/* Attention's head split and merge ([B, L, H, D] <-> [B, H, L, D]), k's transpose (a gathered
 * input), 6-D permutations in both iteration orders, a slice, an expand, a concat part, a long
 * contiguous run (ViT's patches after the class token), one element, a stride-0 inner dim, odd and
 * width-1 dims. */
TH_TEST(copy_differential) {
  init_target();
  enum { N = 16 };
  tc_workload w[N];
  int n = 0;
  w[n++] = permute_wl(4, (int[]){2, 5, 3, 16}, (int[]){0, 2, 1, 3}, 1);  /* split heads */
  w[n++] = permute_wl(4, (int[]){2, 3, 5, 16}, (int[]){0, 2, 1, 3}, 1);  /* merge heads */
  w[n++] = permute_wl(4, (int[]){1, 2, 19, 64}, (int[]){0, 1, 3, 2}, 1); /* k^T */
  w[n++] = permute_wl(6, (int[]){2, 3, 1, 4, 5, 3}, (int[]){5, 3, 0, 4, 2, 1}, 1);
  w[n++] = permute_wl(6, (int[]){2, 3, 1, 4, 5, 3}, (int[]){5, 3, 0, 4, 2, 1}, 0);
  w[n++] = permute_wl(6, (int[]){3, 2, 2, 3, 2, 17}, (int[]){1, 0, 3, 2, 4, 5}, 1);
  w[n++] = permute_wl(3, (int[]){3, 1, 129}, (int[]){2, 1, 0}, 0);
  w[n++] = permute_wl(3, (int[]){3, 1, 129}, (int[]){1, 0, 2}, 1);
  /* in [4, 10, 7] [1:3, 2:9, :] */
  w[n] = strided_wl(TC_KERNEL_COPY, 3, (int[]){2, 7, 7}, (int[]){70, 7, 1}, (int[]){49, 7, 1});
  w[n++].aoff = 70 + 2 * 7;
  w[n++] = strided_wl(TC_KERNEL_COPY, 3, (int[]){3, 4, 5}, (int[]){5, 0, 1}, (int[]){20, 5, 1});
  /* [2, 3, 8] into channels [4, 7) of [2, 7, 8] */
  w[n] = strided_wl(TC_KERNEL_COPY, 3, (int[]){2, 3, 8}, (int[]){24, 8, 1}, (int[]){56, 8, 1});
  w[n++].boff = 4 * 8;
  w[n] =
      strided_wl(TC_KERNEL_COPY, 3, (int[]){1, 197, 768}, (int[]){0, 768, 1}, (int[]){0, 768, 1});
  w[n++].boff = 768;
  w[n++] = strided_wl(TC_KERNEL_COPY, 1, (int[]){1}, (int[]){1}, (int[]){1});
  w[n++] = strided_wl(TC_KERNEL_COPY, 2, (int[]){4, 33}, (int[]){1, 0}, (int[]){33, 1});
  w[n++] = strided_wl(TC_KERNEL_COPY, 2, (int[]){5, 1}, (int[]){1, 1}, (int[]){1, 1});
  CHECK(n <= N);
  check_tensor(w, n);
  return 0;
}

static tc_workload binary_wl(int op, int nd, const int *shape, const int *as, const int *bs) {
  tc_workload wl = strided_wl(TC_KERNEL_BINARY, nd, shape, as, bs);
  wl.op = op;
  return wl;
}

/* Broadcasts of b along each axis of a 6-D space (and of a scalar), both operands broadcast, a
 * transposed (gathered) operand, ViT's position-embedding add, one element; every op. */
TH_TEST(binary_differential) {
  init_target();
  enum { N = 20 };
  tc_workload w[N];
  int n = 0;
  int sh6[6] = {2, 3, 2, 3, 2, 5}, st6[6];
  contiguous(6, sh6, st6);
  for (int k = 0; k < 6; k++) {
    int bs[6];
    memcpy(bs, st6, sizeof bs);
    bs[k] = 0;
    w[n++] = binary_wl(k % TC_BINARY_COUNT, 6, sh6, st6, bs);
  }
  w[n++] = binary_wl(TC_BINARY_ADD, 3, (int[]){2, 5, 33}, (int[]){165, 33, 1}, (int[]){0, 0, 1});
  w[n++] = binary_wl(TC_BINARY_MUL, 3, (int[]){2, 5, 33}, (int[]){165, 33, 1}, (int[]){5, 1, 0});
  w[n++] = binary_wl(TC_BINARY_SUB, 3, (int[]){4, 6, 7}, (int[]){7, 0, 1}, (int[]){0, 7, 1});
  w[n++] = binary_wl(TC_BINARY_DIV, 1, (int[]){100}, (int[]){0}, (int[]){1});
  w[n++] = binary_wl(TC_BINARY_DIV, 2, (int[]){3, 4}, (int[]){1, 3}, (int[]){4, 1});
  w[n++] =
      binary_wl(TC_BINARY_ADD, 3, (int[]){1, 197, 768}, (int[]){0, 768, 1}, (int[]){0, 768, 1});
  w[n++] = binary_wl(TC_BINARY_MUL, 1, (int[]){1}, (int[]){1}, (int[]){1});
  w[n++] = binary_wl(TC_BINARY_SUB, 2, (int[]){129, 3}, (int[]){3, 1}, (int[]){1, 0});
  CHECK(n <= N);
  check_tensor(w, n);
  return 0;
}

/* The element-wise math and comparison ops (max and on: ONNX's binary operators, issue 38), each
 * with b broadcast along the rows, a strided a, and same-shape runs of a vector and a tail. */
TH_TEST(binary_math_differential) {
  init_target();
  enum { N = 3 * TC_BINARY_COUNT };
  tc_workload w[N];
  int n = 0;
  for (int op = TC_BINARY_MAX; op <= TC_BINARY_LEAVE; op++) { /* MOD is int64's alone */
    w[n++] = binary_wl(op, 2, (int[]){5, 37}, (int[]){37, 1}, (int[]){0, 1});
    w[n++] = binary_wl(op, 3, (int[]){2, 3, 7}, (int[]){1, 2, 6}, (int[]){21, 7, 1});
    w[n++] = binary_wl(op, 1, (int[]){67}, (int[]){1}, (int[]){1});
  }
  CHECK(n <= N);
  check_tensor(w, n);
  return 0;
}

/* int64 arithmetic (TC_WL_I64): every op against the reference, bit for bit, over small values
 * with 0 and -1 divisors, values past 2^53 and the int64 limits (wrapping add, sub, mul and pow;
 * INT64_MIN / -1; pow's exponents in -3..66); b broadcast along rows and from a scalar, a gathered
 * a, a 6-D space with both broadcast, a vector run with a tail. The workload key says " i64"; MOD
 * of floats and an int64 workload of another family are refused. */
TH_TEST(binary_i64_differential) {
  init_target();
  enum { N = 4 * TC_BINARY_COUNT };
  tc_workload w[N];
  int n = 0;
  int sh6[6] = {2, 3, 1, 3, 2, 5}, st6[6], bs6[6];
  contiguous(6, sh6, st6);
  memcpy(bs6, st6, sizeof bs6);
  bs6[1] = bs6[4] = 0;
  for (int op = 0; op < TC_BINARY_COUNT; op++) {
    int q = n;
    w[n++] = binary_wl(op, 2, (int[]){5, 37}, (int[]){37, 1}, (int[]){0, 1});
    w[n++] = binary_wl(op, 3, (int[]){2, 3, 7}, (int[]){1, 2, 6}, (int[]){0, 0, 0});
    w[n++] = binary_wl(op, 1, (int[]){67}, (int[]){1}, (int[]){1});
    w[n++] = binary_wl(op, 6, sh6, st6, bs6);
    for (int e = q; e < n; e++) {
      w[e].dtype = TC_WL_I64;
      CHECK_EQ_INT(tc_workload_check(&w[e]), TH_OK);
    }
    check_tensor(&w[q], n - q); /* an op at a time: every config of each */
  }
  CHECK(n <= N);
  char k32[512], k64[512];
  tc_workload f = w[0];
  f.dtype = TC_WL_F32;
  CHECK_EQ_INT(tc_workload_key(&w[0], k64, sizeof k64), TH_OK);
  CHECK_EQ_INT(tc_workload_key(&f, k32, sizeof k32), TH_OK);
  CHECK(strstr(k64, " i64") && !strstr(k32, "i64") && strncmp(k32, k64, strlen(k32)) == 0);
  tc_workload bad = binary_wl(TC_BINARY_MOD, 1, (int[]){4}, (int[]){1}, (int[]){1});
  CHECK_EQ_INT(tc_workload_check(&bad), TH_ERR_INVALID);
  bad = unary_wl(TC_UNARY_TANH, 8);
  bad.dtype = TC_WL_I64;
  CHECK_EQ_INT(tc_workload_check(&bad), TH_ERR_INVALID);
  return 0;
}

/* Each family's space (knob 0 units per task, knob 1 vectors per step; flat indices round-trip), its
 * fallback (one task on the calling thread for small work, a parallel loop for large work), no packed
 * weights, and loop features of the lowered kernel. */
TH_TEST(tensor_spaces_and_fallbacks) {
  init_target();
  tc_workload small[6] = {layer_norm_wl(2, 768, 1), softmax_wl(1, 1, 4, 128, 1.0f, 1),
                          unary_wl(TC_UNARY_GELU, 1000), embedding_wl(4, 10, 768),
                          permute_wl(3, (int[]){4, 8, 16}, (int[]){1, 0, 2}, 1),
                          binary_wl(TC_BINARY_ADD, 1, (int[]){5000}, (int[]){1}, (int[]){0})};
  tc_workload large[6] = {layer_norm_wl(128, 768, 1), softmax_wl(1, 12, 128, 128, 0.125f, 1),
                          unary_wl(TC_UNARY_GELU, 128 * 3072), embedding_wl(128, 512, 768),
                          permute_wl(4, (int[]){1, 128, 12, 64}, (int[]){0, 2, 1, 3}, 1),
                          binary_wl(TC_BINARY_ADD, 1, (int[]){197 * 768}, (int[]){1}, (int[]){1})};
  for (int q = 0; q < 12; q++) {
    const tc_workload *wl = q < 6 ? &small[q] : &large[q - 6];
    CHECK(tc_op_has_template(wl->kernel));
    tc_space s;
    tc_config fb;
    CHECK_EQ_INT(tc_op_space(wl, &target, &s), TH_OK);
    CHECK_EQ_INT(s.nknobs, 2);
    CHECK(strcmp(s.knobs[0].name, "rows") == 0 || strcmp(s.knobs[0].name, "pieces") == 0);
    for (int64_t i = 0; i < tc_space_size(&s); i++) {
      tc_config c;
      tc_space_get(&s, i, &c);
      CHECK_EQ_INT(tc_space_index(&s, &c), i);
      CHECK_EQ_INT(tc_op_valid(wl, &target, &s, &c), TH_OK);
    }
    CHECK_EQ_INT(tc_op_fallback(wl, &target, &s, &fb), TH_OK);
    CHECK_EQ_INT(tc_op_packed_size(wl, &fb, &target), 0);
    th_buf b;
    th_buf_init(&b, 1 << 24);
    CHECK_EQ_INT(tc_op_print(wl, &fb, &target, &b), TH_OK);
    CHECK((strstr(b.data, "parallel") != NULL) == (q >= 6));
    th_buf_free(&b);
    th_arena *a = th_arena_new(1 << 16);
    const tc_stmt *body = NULL;
    float f[TC_IR_FEATURE_LEN];
    int len = 0;
    CHECK_EQ_INT(tc_op_lower(wl, &fb, &target, a, &body), TH_OK);
    CHECK_EQ_INT(tc_ir_features(body, f, TC_IR_FEATURE_LEN, &len), TH_OK);
    th_arena_free(a);
  }
  return 0;
}

/* ---- loop IR pieces through LLVM ---- */

/* Compiles one hand-built kernel body as "k0" into a library and opens it. */
static void build_stmt(lib *L, const tc_stmt *body) {
  tc_llvm_module_t *m = NULL;
  CHECK_EQ_INT(tc_llvm_module_new(&target, "t", &m), TH_OK);
  CHECK_EQ_INT(tc_llvm_add_stmt(m, "k0", body), TH_OK);
  char obj[300], err[4096] = "";
  snprintf(L->path, sizeof L->path, "/tmp/tc_ops_tensor_%ld.so", (long)getpid());
  snprintf(obj, sizeof obj, "%s.o", L->path);
  CHECK_EQ_INT(tc_llvm_emit_object(m, obj), TH_OK);
  tc_llvm_module_free(m);
  const char *objs[1] = {obj};
  th_status rc = tc_link_so(1, objs, 0, NULL, L->path, err, sizeof err);
  if (rc != TH_OK) fprintf(stderr, "link: %s\n", err);
  CHECK_EQ_INT(rc, TH_OK);
  unlink(obj);
  L->h = dlopen(L->path, RTLD_NOW | RTLD_LOCAL);
  CHECK(L->h);
}

/* A buffer of int64 elements loads as 64-bit integers (vectors and scalars) and casts to float;
 * sqrt is a primitive (vector and scalar). out1 = float(ids), out2 = sqrt(x), 8-lane vectors then a
 * scalar. */
TH_TEST(llvm_int64_buffer_and_sqrt) {
  init_target();
  th_arena *a = th_arena_new(1 << 16);
  tc_ir ir;
  tc_ir_init(&ir, a);
  tc_var *ids = tc_var_buffer(&ir, "ids", tc_type_int(), 0),
         *x = tc_var_buffer(&ir, "x", tc_type_f32(1), 1);
  tc_var *o1 = tc_var_buffer(&ir, "o1", tc_type_f32(1), 2),
         *o2 = tc_var_buffer(&ir, "o2", tc_type_f32(1), 3);
  tc_var *i = tc_var_new(&ir, "i", tc_type_int());
  const tc_expr *v = tc_e_mul(&ir, tc_e_var(&ir, i), tc_e_int(&ir, 8)), *last = tc_e_int(&ir, 16);
  const tc_stmt *vec[2] = {
      tc_s_store(&ir, o1, v, tc_e_cast(&ir, tc_type_f32(8), tc_e_load(&ir, ids, v, 8, 8)), 4),
      tc_s_store(&ir, o2, v, tc_e_sqrt(&ir, tc_e_load(&ir, x, v, 8, 4)), 4)};
  const tc_stmt *all[3] = {
      tc_s_for(&ir, i, tc_e_int(&ir, 0), tc_e_int(&ir, 2), TC_FOR_SERIAL, tc_s_seq(&ir, 2, vec)),
      tc_s_store(&ir, o1, last, tc_e_cast(&ir, tc_type_f32(1), tc_e_load(&ir, ids, last, 1, 8)), 4),
      tc_s_store(&ir, o2, last, tc_e_sqrt(&ir, tc_e_load(&ir, x, last, 1, 4)), 4)};
  const tc_stmt *body = tc_s_seq(&ir, 3, all);
  CHECK(body && ir.err == TH_OK);
  th_buf b;
  th_buf_init(&b, 1 << 20);
  CHECK_EQ_INT(tc_ir_print(body, &b), TH_OK);
  CHECK(strstr(b.data, "sqrt(x["));
  th_buf_free(&b);
  lib L;
  build_stmt(&L, body);
  int64_t in_ids[17];
  float in_x[17], out1[17], out2[17], want1[17], want2[17];
  for (int k = 0; k < 17; k++) {
    in_ids[k] = (k % 3 == 0 ? -1 : 1) * ((int64_t)k << (2 * k)); /* up to 2^36: beyond int32 */
    in_x[k] = (float)k * 0.75f;
    want1[k] = (float)in_ids[k];
    want2[k] = sqrtf(in_x[k]);
  }
  void *args[4] = {in_ids, in_x, out1, out2};
  sym(&L, 0)((void *const *)args);
  expect(out1, want1, 17, 0);
  expect(out2, want2, 17, 0);
  unload(&L);
  th_arena_free(a);
  return 0;
}

/* The inline exp of the LLVM backend against libm's, in 16-lane vectors and scalars: within 2 ulp
 * on normal results over [-87, 88.7], subnormal results to within 2^-148, 0 below -104, inf above
 * FLT_MAX's log, exp(0) exactly 1 (a fully masked softmax row), NaN kept. */
TH_TEST(llvm_exp_accuracy) {
  init_target();
  enum { N = 4096 + 16 };
  static float x[N], vec[N], sc[N];
  for (int i = 0; i < 4096; i++) x[i] = -90.0f + 180.0f * (float)i / 4095.0f;
  const float edge[16] = {0.0f,   -0.0f,    1.0f,  -1e-30f, -100.0f,  -103.9f,   -104.5f, -1e30f,
                          88.72f, 88.7228f, 88.8f, 1e30f,   INFINITY, -INFINITY, NAN,     -3.4e38f};
  memcpy(x + 4096, edge, sizeof edge);
  th_arena *a = th_arena_new(1 << 16);
  tc_ir ir;
  tc_ir_init(&ir, a);
  tc_var *in = tc_var_buffer(&ir, "x", tc_type_f32(1), 0),
         *o1 = tc_var_buffer(&ir, "v", tc_type_f32(1), 1);
  tc_var *o2 = tc_var_buffer(&ir, "s", tc_type_f32(1), 2);
  tc_var *i = tc_var_new(&ir, "i", tc_type_int()), *j = tc_var_new(&ir, "j", tc_type_int());
  const tc_expr *vi = tc_e_mul(&ir, tc_e_var(&ir, i), tc_e_int(&ir, 16)), *sj = tc_e_var(&ir, j);
  const tc_stmt *loops[2] = {
      tc_s_for(&ir, i, tc_e_int(&ir, 0), tc_e_int(&ir, N / 16), TC_FOR_SERIAL,
               tc_s_store(&ir, o1, vi, tc_e_exp(&ir, tc_e_load(&ir, in, vi, 16, 4)), 4)),
      tc_s_for(&ir, j, tc_e_int(&ir, 0), tc_e_int(&ir, N), TC_FOR_SERIAL,
               tc_s_store(&ir, o2, sj, tc_e_exp(&ir, tc_e_load(&ir, in, sj, 1, 4)), 4))};
  lib L;
  build_stmt(&L, tc_s_seq(&ir, 2, loops));
  void *args[3] = {x, vec, sc};
  sym(&L, 0)((void *const *)args);
  for (int k = 0; k < N; k++) {
    double want = exp((double)x[k]);
    float got[2] = {vec[k], sc[k]};
    for (int q = 0; q < 2; q++) {
      int ok;
      if (isnan(x[k]))
        ok = isnan(got[q]);
      else if (want > FLT_MAX)
        ok = isinf(got[q]) && got[q] > 0;
      else if (want < FLT_MIN)
        ok = fabs(got[q] - want) <= ldexp(1.0, -148);
      else
        ok = fabs(got[q] - want) <= 2.5e-7 * want;
      if (x[k] == 0) ok = got[q] == 1.0f;
      if (!ok)
        fprintf(stderr, "exp(%.9g): got %.9g want %.9g (%s)\n", x[k], got[q], want,
                q ? "scalar" : "vector");
      CHECK(ok);
    }
  }
  unload(&L);
  th_arena_free(a);
  return 0;
}
