/* The naive oracle of single kernel calls (ref_kernel.h): one plain loop nest per tensor family, read
 * straight off the ABI in ops.h, so that a template that disagrees with it is the one to suspect. Speed
 * does not matter here beyond the tests' sizes (a BERT layer's shapes run in well under a second). */
#include "ref_kernel.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ops.h"

static double tc__ref_hard_sigmoid(double v, double alpha, double beta) {
  v = alpha * v + beta;
  return v < 0 ? 0 : v > 1 ? 1 : v;
}

static float tc__ref_epi(const tc_workload *wl, double v, const float *bias, int col, const float *res,
                         int64_t idx) {
  if (wl->epilogue & TC_EPI_BIAS) v += bias[col];
  if (wl->epilogue & TC_EPI_RESIDUAL) v += res[idx];
  if (wl->epilogue & TC_EPI_RELU) v = v > 0 ? v : 0;
  if (wl->epilogue & TC_EPI_CLIP) v = v < wl->clip_min ? wl->clip_min : v > wl->clip_max ? wl->clip_max : v;
  if (wl->epilogue & TC_EPI_GELU) v = v * 0.5 * (1.0 + erf(v * 0.70710678118654752440));
  if (wl->epilogue & TC_EPI_SIGMOID) v = 1.0 / (1.0 + exp(-v));
  if (wl->epilogue & TC_EPI_HARD_SIGMOID) v = tc__ref_hard_sigmoid(v, wl->alpha, wl->beta);
  if (wl->epilogue & TC_EPI_HARD_SWISH) v = v * tc__ref_hard_sigmoid(v, 1.0 / 6.0, 0.5);
  if (wl->epilogue & TC_EPI_SILU) v = v / (1.0 + exp(-v));
  if (wl->epilogue & TC_EPI_TANH) return tanhf((float)v);
  return (float)v;
}

/* On x86-64 a second copy for AVX2 and FMA, chosen at load by the CPU (an ifunc): 4.5 GFLOP/s here against
 * 1.7 for SSE2's. The sum is the same in both: a product of two floats is exact in double, so fusing it
 * into the add rounds nothing differently. Not under ThreadSanitizer: its runtime is not up yet when the
 * loader runs an ifunc's resolver, and every program that linked this crashed at start. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define TC__REF_DOT_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define TC__REF_DOT_CLONES
#endif

TC__REF_DOT_CLONES double tc_ref_dot(const float *a, int64_t as, const float *b, int64_t bs, int64_t n) {
  double s[8] = {0};
  int64_t k = 0;
  if (as == 1 && bs == 1) /* eight sums, a vector's worth twice over, where both walk contiguously */
    for (; k + 8 <= n; k += 8)
      for (int j = 0; j < 8; j++) s[j] += (double)a[k + j] * b[k + j];
  for (; k + 4 <= n; k += 4)
    for (int j = 0; j < 4; j++) s[j] += (double)a[(k + j) * as] * b[(k + j) * bs];
  for (; k < n; k++) s[0] += (double)a[k * as] * b[k * bs];
  return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
}

static void tc__ref_dense(const tc_workload *wl, const float *in, const float *wt, const float *bias,
                          const float *res, float *out) {
  int K = wl->c, M = wl->oc;
  /* each weight row once, against every input row: the weights (9 MB for bert's FFN) are read from memory
   * once instead of once per row */
  for (int m = 0; m < M; m++)
    for (int64_t r = 0; r < wl->n; r++) {
      double acc = tc_ref_dot(in + r * K, 1, wt + (int64_t)m * K, 1, K);
      out[r * M + m] = tc__ref_epi(wl, acc, bias, m, res, r * M + m);
    }
}

static void tc__ref_batch_matmul(const tc_workload *wl, const float *a, const float *b, float *out) {
  int64_t M = wl->h, K = wl->c, N = wl->oc;
  for (int64_t i = 0; i < wl->n; i++) {
    const float *ai = a + i * M * K, *bi = b + i * K * N;
    for (int64_t y = 0; y < M; y++)
      for (int64_t x = 0; x < N; x++) {
        double acc = tc_ref_dot(wl->trans_a ? ai + y : ai + y * K, wl->trans_a ? M : 1,
                                wl->trans_b ? bi + x * K : bi + x, wl->trans_b ? 1 : N, K);
        out[(i * M + y) * N + x] = (float)(wl->alpha * acc);
      }
  }
}

static void tc__ref_layer_norm(const tc_workload *wl, const float *in, const float *gamma, const float *beta,
                               const float *res, float *out) {
  int64_t C = wl->c;
  for (int64_t r = 0; r < wl->n; r++) {
    float *o = out + r * C;
    /* x goes through the output row, in float as torch adds the residual */
    for (int64_t j = 0; j < C; j++) o[j] = (wl->epilogue & TC_EPI_RESIDUAL) ? in[r * C + j] + res[r * C + j]
                                                                          : in[r * C + j];
    double mean = 0, var = 0;
    for (int64_t j = 0; j < C; j++) mean += o[j];
    mean /= (double)C;
    for (int64_t j = 0; j < C; j++) var += (o[j] - mean) * (o[j] - mean);
    var /= (double)C;
    double inv = 1.0 / sqrt(var + (double)wl->alpha);
    for (int64_t j = 0; j < C; j++) o[j] = (float)((o[j] - mean) * inv * gamma[j] + beta[j]);
  }
}

static void tc__ref_softmax_rows(const tc_workload *wl, const float *in, const float *mask, float *out) {
  int64_t W = wl->w, rows = (int64_t)wl->n * wl->c * wl->h, per_n = (int64_t)wl->c * wl->h;
  for (int64_t r = 0; r < rows; r++) {
    const float *m = (wl->epilogue & TC_EPI_MASK) ? mask + (r / per_n) * W : NULL;
    float *o = out + r * W;
    double mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < W; j++) {
      float v = wl->alpha * in[r * W + j];
      if (m) v += m[j];
      o[j] = v;
      mx = v > mx ? v : mx;
    }
    for (int64_t j = 0; j < W; j++) sum += exp(o[j] - mx);
    for (int64_t j = 0; j < W; j++) o[j] = (float)(exp(o[j] - mx) / sum);
  }
}

static void tc__ref_unary(const tc_workload *wl, const void *in, float *out) {
  const float *x = in;
  for (int64_t i = 0; i < wl->n; i++) {
    switch (wl->op) {
      case TC_UNARY_GELU: out[i] = (float)(x[i] * 0.5 * (1.0 + erf(x[i] * 0.70710678118654752440))); break;
      case TC_UNARY_TANH: out[i] = tanhf(x[i]); break;
      case TC_UNARY_CAST_I64: out[i] = (float)((const int64_t *)in)[i]; break;
      case TC_UNARY_SIGMOID: out[i] = (float)(1.0 / (1.0 + exp(-(double)x[i]))); break;
      case TC_UNARY_HARD_SIGMOID:
        out[i] = (float)tc__ref_hard_sigmoid(x[i], wl->alpha, wl->beta);
        break;
      case TC_UNARY_HARD_SWISH:
        out[i] = (float)(x[i] * tc__ref_hard_sigmoid(x[i], 1.0 / 6.0, 0.5));
        break;
      case TC_UNARY_SILU: out[i] = (float)(x[i] / (1.0 + exp(-(double)x[i]))); break;
      case TC_UNARY_CLIP: out[i] = x[i] < wl->alpha ? wl->alpha : x[i] > wl->beta ? wl->beta : x[i]; break;
      case TC_UNARY_AFFINE: out[i] = x[i] * wl->alpha + wl->beta; break;
      default: out[i] = tc_ref_unary_math(x[i], wl->op, wl->alpha, wl->beta); break;
    }
  }
}

float tc_ref_unary_math(float f, int m, double a, double b) {
  double v = f;
  switch (m) {
    case TC_UNARY_EXP: return (float)exp(v);
    case TC_UNARY_LOG: return (float)log(v);
    case TC_UNARY_ABS: return fabsf(f);
    case TC_UNARY_SQRT: return (float)sqrt(v);
    case TC_UNARY_RECIPROCAL: return 1.0f / f;
    case TC_UNARY_FLOOR: return floorf(f);
    case TC_UNARY_CEIL: return ceilf(f);
    case TC_UNARY_ROUND: return nearbyintf(f); /* the default mode rounds halves to even */
    case TC_UNARY_SIGN: return f > 0 ? 1.0f : (f < 0 ? -1.0f : f);
    case TC_UNARY_ERF: return (float)erf(v);
    case TC_UNARY_SOFTPLUS: return (float)log1p(exp(v));
    case TC_UNARY_SOFTSIGN: return (float)(v / (1 + fabs(v)));
    case TC_UNARY_ELU: return (float)(v > 0 ? v : a * expm1(v));
    case TC_UNARY_SELU: return (float)(b * (v > 0 ? v : a * expm1(v)));
    case TC_UNARY_LEAKY_RELU: return (float)(v >= 0 ? v : a * v);
    case TC_UNARY_CELU: return (float)(fmax(0, v) + fmin(0, a * expm1(v / a)));
    case TC_UNARY_THRESHOLDED_RELU: return (float)(v > a ? v : 0);
    case TC_UNARY_SINH: return (float)sinh(v);
    case TC_UNARY_COSH: return (float)cosh(v);
    case TC_UNARY_ASINH: return (float)asinh(v);
    case TC_UNARY_ACOSH: return (float)acosh(v);
    case TC_UNARY_ATANH: return (float)atanh(v);
    case TC_UNARY_SIN: return (float)sin(v);
    case TC_UNARY_COS: return (float)cos(v);
    case TC_UNARY_TAN: return (float)tan(v);
    case TC_UNARY_ASIN: return (float)asin(v);
    case TC_UNARY_ACOS: return (float)acos(v);
    case TC_UNARY_ATAN: return (float)atan(v);
    case TC_UNARY_ISNAN: return isnan(v) ? 1.0f : 0.0f;
    case TC_UNARY_ISINF: return (isinf(v) && (v > 0 ? a : b) != 0) ? 1.0f : 0.0f;
    default: return NAN;
  }
}

static void tc__ref_embedding(const tc_workload *wl, const int64_t *idx, const float *table, float *out) {
  int64_t D = wl->oc;
  for (int64_t i = 0; i < wl->n; i++) {
    if (idx[i] >= 0 && idx[i] < wl->c)
      memcpy(out + i * D, table + idx[i] * D, (size_t)D * sizeof *out);
    else
      for (int64_t j = 0; j < D; j++) out[i * D + j] = 0.0f;
  }
}

float tc_ref_binary(int op, float x, float y) {
  switch (op) {
    case TC_BINARY_ADD: return x + y;
    case TC_BINARY_MUL: return x * y;
    case TC_BINARY_SUB: return x - y;
    case TC_BINARY_DIV: return x / y;
    case TC_BINARY_MAX: return x > y ? x : y;
    case TC_BINARY_MIN: return x < y ? x : y;
    case TC_BINARY_POW: return (float)pow(x, y);
    case TC_BINARY_FMOD: return (float)fmod(x, y);
    case TC_BINARY_EQ: return x == y;
    case TC_BINARY_LT: return x < y;
    case TC_BINARY_GT: return x > y;
    case TC_BINARY_LE: return x <= y;
    case TC_BINARY_GE: return x >= y;
    case TC_BINARY_NE: return x != y;
    case TC_BINARY_TAKE: return x != 0 ? y : -0.0f;
    case TC_BINARY_LEAVE: return x != 0 ? -0.0f : y;
    default: return NAN;
  }
}

/* x op y on int64 (workload.h): a comparison gives 1 or 0 (the caller stores it as a float); a
 * divisor of 0 gives 0, of -1 the negation; 0 for another op. */
static int64_t tc__ref_binary_i64(int op, int64_t x, int64_t y) {
  uint64_t ux = (uint64_t)x, uy = (uint64_t)y;
  int64_t r;
  switch (op) {
    case TC_BINARY_ADD:
      return (int64_t)(ux + uy);
    case TC_BINARY_MUL:
      return (int64_t)(ux * uy);
    case TC_BINARY_SUB:
      return (int64_t)(ux - uy);
    case TC_BINARY_DIV:
      return y == 0 ? 0 : y == -1 ? (int64_t)(0 - ux) : x / y;
    case TC_BINARY_MAX:
      return x > y ? x : y;
    case TC_BINARY_MIN:
      return x < y ? x : y;
    case TC_BINARY_POW: /* exponents 0..63 exact (wrapping); others as workload.h says */
      if (y < 0 || y > 63) return x == 1 ? 1 : x == -1 ? (y % 2 ? -1 : 1) : 0;
      for (uint64_t p = ux, e = (uint64_t)y, r1 = 1;; e >>= 1, p *= p) {
        if (e & 1) r1 *= p;
        if (e <= 1) return (int64_t)r1;
      }
    case TC_BINARY_FMOD:
      return y == 0 || y == -1 ? 0 : x % y;
    case TC_BINARY_MOD:
      r = y == 0 || y == -1 ? 0 : x % y;
      return r != 0 && (r < 0) != (y < 0) ? r + y : r;
    case TC_BINARY_EQ:
      return x == y;
    case TC_BINARY_LT:
      return x < y;
    case TC_BINARY_GT:
      return x > y;
    case TC_BINARY_LE:
      return x <= y;
    case TC_BINARY_GE:
      return x >= y;
    case TC_BINARY_NE:
      return x != y;
    case TC_BINARY_TAKE:
      return x != 0 ? y : 0;
    case TC_BINARY_LEAVE:
      return x != 0 ? 0 : y;
    default:
      return 0;
  }
}

void tc_ref_binary_at(int dtype, int op, const void *a, int64_t ai, const void *b, int64_t bi,
                      void *out, int64_t e) {
  if (dtype != TC_WL_I64) {
    ((float *)out)[e] = tc_ref_binary(op, ((const float *)a)[ai], ((const float *)b)[bi]);
    return;
  }
  int mask = op == TC_BINARY_TAKE || op == TC_BINARY_LEAVE;
  int64_t x = mask ? ((const float *)a)[ai] != 0.0f : ((const int64_t *)a)[ai];
  int64_t r = tc__ref_binary_i64(op, x, ((const int64_t *)b)[bi]);
  if (op >= TC_BINARY_EQ && op <= TC_BINARY_NE)
    ((float *)out)[e] = (float)r;
  else
    ((int64_t *)out)[e] = r;
}

/* Copy and binary: an odometer over shape[0..ndim), the last axis fastest. */
static void tc__ref_strided(const tc_workload *wl, const void *a, const void *b, void *out) {
  int copy = wl->kernel == TC_KERNEL_COPY;
  int64_t total = 1;
  for (int d = 0; d < wl->ndim; d++) total *= wl->shape[d];
  int i[TC_WL_DIMS] = {0};
  for (int64_t e = 0; e < total; e++) {
    int64_t ai = copy ? wl->aoff : 0, bi = copy ? wl->boff : 0;
    for (int d = 0; d < wl->ndim; d++) {
      ai += (int64_t)i[d] * wl->astride[d];
      bi += (int64_t)i[d] * wl->bstride[d];
    }
    if (copy)
      ((float *)out)[bi] = ((const float *)a)[ai];
    else
      tc_ref_binary_at(wl->dtype, wl->op, a, ai, b, bi, out, e);
    for (int d = wl->ndim - 1; d >= 0 && ++i[d] == wl->shape[d]; d--) i[d] = 0;
  }
}

/* Gather: an odometer over the output; the index read at b, wrapped once, checked, then the data.
 */
static void tc__ref_gather(const tc_workload *wl, const float *data, const int64_t *idx,
                           float *out) {
  int64_t total = 1;
  for (int d = 0; d < wl->ndim; d++) total *= wl->shape[d];
  int i[TC_WL_DIMS] = {0};
  for (int64_t e = 0; e < total; e++) {
    int64_t ai = 0, bi = 0;
    for (int d = 0; d < wl->ndim; d++) {
      ai += (int64_t)i[d] * wl->astride[d];
      bi += (int64_t)i[d] * wl->bstride[d];
    }
    int64_t raw = idx[bi], k = raw < 0 ? raw + wl->c : raw;
    int skip = k < 0 || k >= wl->c || (wl->kh && raw == wl->kw);
    out[e] = skip ? 0.0f : data[ai + k * wl->oc];
    for (int d = wl->ndim - 1; d >= 0 && ++i[d] == wl->shape[d]; d--) i[d] = 0;
  }
}

int64_t tc_ref_arg(const float *x, int64_t n, int op) {
  int mx = op == TC_REDUCE_ARGMAX || op == TC_REDUCE_ARGMAX_LAST;
  int last = op >= TC_REDUCE_ARGMAX_LAST;
  int64_t best = 0;
  for (int64_t i = 1; i < n; i++)
    if (mx ? (x[i] > x[best] || (last && x[i] == x[best]))
           : (x[i] < x[best] || (last && x[i] == x[best])))
      best = i;
  return best;
}

float tc_ref_reduce(const float *x, int64_t n, int op) {
  double acc = op == TC_REDUCE_PROD ? 1.0 : op == TC_REDUCE_MAX ? -INFINITY
               : op == TC_REDUCE_MIN ? INFINITY : 0.0;
  double mx = -INFINITY;
  if (op == TC_REDUCE_LOG_SUM_EXP)
    for (int64_t i = 0; i < n; i++) mx = fmax(mx, x[i]);
  for (int64_t i = 0; i < n; i++) {
    double v = x[i];
    switch (op) {
      case TC_REDUCE_MAX: acc = fmax(acc, v); break;
      case TC_REDUCE_MIN: acc = fmin(acc, v); break;
      case TC_REDUCE_PROD: acc *= v; break;
      case TC_REDUCE_SUM_SQUARE:
      case TC_REDUCE_L2: acc += v * v; break;
      case TC_REDUCE_L1: acc += fabs(v); break;
      case TC_REDUCE_LOG_SUM_EXP: acc += exp(v - mx); break;
      default: acc += v;
    }
  }
  switch (op) {
    case TC_REDUCE_MEAN: return (float)(acc / (double)n);
    case TC_REDUCE_L2: return (float)sqrt(acc);
    case TC_REDUCE_LOG_SUM: return (float)log(acc);
    case TC_REDUCE_LOG_SUM_EXP: return (float)(mx + log(acc));
    default: return (float)acc;
  }
}

/* Scatter: every output element from data, then each candidate update in index order where its
 * wrapped index names the element's coordinate on the axis. */
static void tc__ref_scatter(const tc_workload *wl, const float *data, const int64_t *idx,
                            const float *upd, float *out) {
  int64_t total = 1;
  for (int d = 0; d < wl->ndim; d++) total *= wl->shape[d];
  int i[TC_WL_DIMS] = {0};
  for (int64_t e = 0; e < total; e++) {
    int64_t pos = 0, bi = 0;
    for (int d = 0; d < wl->ndim; d++) {
      pos += (int64_t)i[d] * wl->astride[d];
      bi += (int64_t)i[d] * wl->bstride[d];
    }
    float v = data[e];
    for (int64_t j = 0; j < wl->kh; j++) {
      int64_t raw = idx[bi + j * wl->oc], k = raw < 0 ? raw + wl->c : raw;
      if (k != pos) continue;
      float u = upd[bi + j * wl->oc];
      switch (wl->op) {
        case TC_SCATTER_ADD: v += u; break;
        case TC_SCATTER_MUL: v *= u; break;
        case TC_SCATTER_MAX: v = fmaxf(v, u); break;
        case TC_SCATTER_MIN: v = fminf(v, u); break;
        default: v = u; break;
      }
    }
    out[e] = v;
    for (int d = wl->ndim - 1; d >= 0 && ++i[d] == wl->shape[d]; d--) i[d] = 0;
  }
}

th_status tc_ref_kernel(const tc_workload *wl, void *const *args) {
  if (!wl || !args || tc_workload_check(wl) != TH_OK) return TH_ERR_INVALID;
  int epi = wl->epilogue;
  switch (wl->kernel) {
    case TC_KERNEL_DENSE:
      if (!args[TC_ARG_IN] || !args[TC_ARG_WEIGHTS] || !args[TC_ARG_OUT] ||
          ((epi & TC_EPI_BIAS) && !args[TC_ARG_BIAS]) || ((epi & TC_EPI_RESIDUAL) && !args[TC_ARG_RESIDUAL]))
        return TH_ERR_INVALID;
      tc__ref_dense(wl, args[TC_ARG_IN], args[TC_ARG_WEIGHTS], args[TC_ARG_BIAS], args[TC_ARG_RESIDUAL],
                    args[TC_ARG_OUT]);
      return TH_OK;
    case TC_KERNEL_LAYER_NORM:
      if (!args[0] || !args[1] || !args[2] || !args[4] || ((epi & TC_EPI_RESIDUAL) && !args[3]))
        return TH_ERR_INVALID;
      tc__ref_layer_norm(wl, args[0], args[1], args[2], args[3], args[4]);
      return TH_OK;
    case TC_KERNEL_SOFTMAX_ROWS:
      if (!args[0] || !args[2] || ((epi & TC_EPI_MASK) && !args[1])) return TH_ERR_INVALID;
      tc__ref_softmax_rows(wl, args[0], args[1], args[2]);
      return TH_OK;
    case TC_KERNEL_SCATTER:
      if (!args[0] || !args[1] || !args[2] || !args[3]) return TH_ERR_INVALID;
      tc__ref_scatter(wl, args[0], args[1], args[2], args[3]);
      return TH_OK;
    case TC_KERNEL_GATHER:
      if (!args[0] || !args[1] || !args[2]) return TH_ERR_INVALID;
      tc__ref_gather(wl, args[0], args[1], args[2]);
      return TH_OK;
    case TC_KERNEL_BATCH_MATMUL:
    case TC_KERNEL_EMBEDDING:
    case TC_KERNEL_BINARY:
      if (!args[0] || !args[1] || !args[2]) return TH_ERR_INVALID;
      if (wl->kernel == TC_KERNEL_BATCH_MATMUL)
        tc__ref_batch_matmul(wl, args[0], args[1], args[2]);
      else if (wl->kernel == TC_KERNEL_EMBEDDING)
        tc__ref_embedding(wl, args[0], args[1], args[2]);
      else
        tc__ref_strided(wl, args[0], args[1], args[2]);
      return TH_OK;
    case TC_KERNEL_REDUCE:
      if (!args[0] || !args[1]) return TH_ERR_INVALID;
      for (int64_t r = 0; r < wl->n; r++)
        if (wl->op >= TC_REDUCE_ARGMAX)
          ((int64_t *)args[1])[r] = tc_ref_arg((const float *)args[0] + r * wl->c, wl->c, wl->op);
        else
          ((float *)args[1])[r] = tc_ref_reduce((const float *)args[0] + r * wl->c, wl->c, wl->op);
      return TH_OK;
    case TC_KERNEL_UNARY:
    case TC_KERNEL_COPY:
      if (!args[0] || !args[1]) return TH_ERR_INVALID;
      if (wl->kernel == TC_KERNEL_UNARY && wl->op == TC_UNARY_CAST_TO_I64)
        for (int64_t i = 0; i < wl->n; i++)
          ((int64_t *)args[1])[i] = (int64_t)((const float *)args[0])[i];
      else if (wl->kernel == TC_KERNEL_UNARY)
        tc__ref_unary(wl, args[0], args[1]);
      else
        tc__ref_strided(wl, args[0], NULL, args[1]);
      return TH_OK;
    default: return TH_ERR_UNSUPPORTED;
  }
}
