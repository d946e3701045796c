/* The reference interpreter: straightforward loops, written for obvious correctness first and tolerable
 * speed second (the innermost loops run over contiguous output columns so the compiler can vectorise them),
 * because every compiled network in the tests is compared against it at full size. */
#include "ref.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref_kernel.h"
#include "workload.h"

static float tc__hard_sigmoid(float v, float alpha, float beta) {
  v = alpha * v + beta;
  return v < 0 ? 0 : (v > 1 ? 1 : v);
}

/* The activations of epi, with node nd's clip bounds and hard-sigmoid alpha and beta (shift). */
static float tc__act(float v, int epi, const tc_node *nd) {
  if (epi & TC_EPI_RELU) v = v > 0 ? v : 0;
  if (epi & TC_EPI_CLIP) v = v < nd->clip_min ? nd->clip_min : (v > nd->clip_max ? nd->clip_max : v);
  if (epi & TC_EPI_GELU) v = (float)(0.5 * v * (1.0 + erf(v / sqrt(2.0))));
  if (epi & TC_EPI_TANH) v = tanhf(v);
  if (epi & TC_EPI_SIGMOID) v = 1.0f / (1.0f + expf(-v));
  if (epi & TC_EPI_HARD_SIGMOID) v = tc__hard_sigmoid(v, nd->alpha, nd->shift);
  if (epi & TC_EPI_HARD_SWISH) v = v * tc__hard_sigmoid(v, 1.0f / 6.0f, 0.5f);
  if (epi & TC_EPI_SILU) v = v / (1.0f + expf(-v));
  return v;
}

/* Row-major element strides of t (a size-1 dimension gets stride 0 when bcast, so that it broadcasts),
 * right-aligned to rank `rank`: dimensions t lacks get stride 0. */
static void tc__strides(const tc_tensor *t, int rank, int bcast, int64_t *st) {
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; d--) {
    int k = d - (rank - t->ndim);
    if (k < 0) {
      st[d] = 0;
      continue;
    }
    st[d] = (bcast && t->shape[k] == 1) ? 0 : s;
    s *= t->shape[k];
  }
}

/* The input element offset of each output element for a strided map over out's shape. */
static int64_t tc__offset_of(const tc_tensor *out, const int64_t *st, int64_t flat) {
  int64_t off = 0;
  for (int d = out->ndim - 1; d >= 0; d--) {
    off += (flat % out->shape[d]) * st[d];
    flat /= out->shape[d];
  }
  return off;
}

static void tc__conv(const tc_graph *g, const tc_node *nd, const float *in, const float *res,
                     float *out) {
  const tc_tensor *ti = &g->nodes[nd->inputs[0]].out;
  int N = ti->shape[0], C = ti->shape[1], H = ti->shape[2], W = ti->shape[3];
  int OC = nd->out.shape[1], OH = nd->out.shape[2], OW = nd->out.shape[3];
  int G = nd->groups, icg = C / G, ocg = OC / G;
  const float *wt = g->params[nd->weight].data;
  const float *bias = nd->bias >= 0 ? g->params[nd->bias].data : NULL;
  for (int n = 0; n < N; n++) {
    for (int oc = 0; oc < OC; oc++) {
      float *o = out + ((size_t)n * OC + oc) * OH * OW;
      float b0 = bias ? bias[oc] : 0.0f, bn_s = 1.0f;
      if (nd->gamma >= 0) { /* folded batch norm: w*s, (b - mean)*s + beta */
        bn_s = g->params[nd->gamma].data[oc] / sqrtf(g->params[nd->var].data[oc] + nd->eps);
        b0 = (b0 - g->params[nd->mean].data[oc]) * bn_s + g->params[nd->beta].data[oc];
      }
      for (int k = 0; k < OH * OW; k++) o[k] = b0;
      int gi = oc / ocg;
      for (int ic = 0; ic < icg; ic++) {
        const float *ip = in + ((size_t)n * C + gi * icg + ic) * H * W;
        for (int ky = 0; ky < nd->kh; ky++) {
          for (int kx = 0; kx < nd->kw; kx++) {
            float wv = wt[(((size_t)oc * icg + ic) * nd->kh + ky) * nd->kw + kx] * bn_s;
            /* the tap's input offsets (dilated: taps dil apart) */
            int dy = ky * (nd->dil_h > 1 ? nd->dil_h : 1),
                dx = kx * (nd->dil_w > 1 ? nd->dil_w : 1);
            /* valid output columns: 0 <= ow*sw - pl + dx < W */
            int ow0 = 0, ow1 = OW;
            while (ow0 < OW && ow0 * nd->sw - nd->pl + dx < 0) ow0++;
            while (ow1 > ow0 && (ow1 - 1) * nd->sw - nd->pl + dx >= W) ow1--;
            for (int oy = 0; oy < OH; oy++) {
              int iy = oy * nd->sh - nd->pt + dy;
              if (iy < 0 || iy >= H) continue;
              const float *row = ip + (size_t)iy * W - nd->pl + dx;
              float *orow = o + (size_t)oy * OW;
              if (nd->sw == 1) {
                for (int ox = ow0; ox < ow1; ox++) orow[ox] += wv * row[ox];
              } else {
                for (int ox = ow0; ox < ow1; ox++) orow[ox] += wv * row[ox * nd->sw];
              }
            }
          }
        }
      }
      const float *r = res ? res + ((size_t)n * OC + oc) * OH * OW : NULL;
      for (int k = 0; k < OH * OW; k++)
        o[k] = tc__act(r ? o[k] + r[k] : o[k], nd->epilogue, nd);
    }
  }
}

static void tc__dense(const tc_graph *g, const tc_node *nd, const float *in, const float *res,
                      float *out) {
  const tc_tensor *ti = &g->nodes[nd->inputs[0]].out;
  int K = ti->shape[ti->ndim - 1], M = nd->out.shape[nd->out.ndim - 1];
  int64_t N = tc_tensor_numel(ti) / K;
  const float *wt = g->params[nd->weight].data;
  const float *bias = nd->bias >= 0 ? g->params[nd->bias].data : NULL;
  for (int m = 0; m < M; m++) { /* each weight row once, against every input row (tc__ref_dense) */
    for (int64_t n = 0; n < N; n++) {
      double acc = tc_ref_dot(in + (size_t)n * K, 1, wt + (size_t)m * K, 1, K);
      float v = (float)acc + (bias ? bias[m] : 0.0f);
      if (res) v += res[(size_t)n * M + m];
      out[(size_t)n * M + m] = tc__act(v, nd->epilogue, nd);
    }
  }
}

static void tc__pool(const tc_graph *g, const tc_node *nd, const float *in, float *out) {
  const tc_tensor *ti = &g->nodes[nd->inputs[0]].out;
  int NC = ti->shape[0] * ti->shape[1], H = ti->shape[2], W = ti->shape[3];
  int OH = nd->out.shape[2], OW = nd->out.shape[3];
  int is_max = nd->op == TC_OP_MAX_POOL;
  for (int c = 0; c < NC; c++) {
    const float *ip = in + (size_t)c * H * W;
    float *op = out + (size_t)c * OH * OW;
    for (int oy = 0; oy < OH; oy++) {
      for (int ox = 0; ox < OW; ox++) {
        int hs = oy * nd->sh - nd->pt, ws = ox * nd->sw - nd->pl;
        int he = hs + nd->kh, we = ws + nd->kw;
        int hpe = he < H + nd->pb ? he : H + nd->pb, wpe = we < W + nd->pr ? we : W + nd->pr;
        int pool_size = (hpe - hs) * (wpe - ws);
        int h0 = hs < 0 ? 0 : hs, w0 = ws < 0 ? 0 : ws;
        int h1 = he < H ? he : H, w1 = we < W ? we : W;
        float acc = is_max ? -FLT_MAX : 0.0f;
        for (int y = h0; y < h1; y++)
          for (int x = w0; x < w1; x++) {
            float v = ip[(size_t)y * W + x];
            if (is_max) acc = v > acc ? v : acc;
            else acc += v;
          }
        if (!is_max) {
          int div = nd->count_include_pad ? pool_size : (h1 - h0) * (w1 - w0);
          acc = div > 0 ? acc / (float)div : 0.0f;
        }
        op[oy * OW + ox] = acc;
      }
    }
  }
}

static void tc__adaptive(const tc_graph *g, const tc_node *nd, const float *in, float *out) {
  const tc_tensor *ti = &g->nodes[nd->inputs[0]].out;
  int NC = ti->shape[0] * ti->shape[1], H = ti->shape[2], W = ti->shape[3];
  int OH = nd->out.shape[2], OW = nd->out.shape[3];
  for (int c = 0; c < NC; c++) {
    const float *ip = in + (size_t)c * H * W;
    for (int oy = 0; oy < OH; oy++) {
      int h0 = oy * H / OH, h1 = ((oy + 1) * H + OH - 1) / OH;
      for (int ox = 0; ox < OW; ox++) {
        int w0 = ox * W / OW, w1 = ((ox + 1) * W + OW - 1) / OW;
        double acc = 0;
        for (int y = h0; y < h1; y++)
          for (int x = w0; x < w1; x++) acc += ip[(size_t)y * W + x];
        out[((size_t)c * OH + oy) * OW + ox] = (float)(acc / ((h1 - h0) * (w1 - w0)));
      }
    }
  }
}

/* Gather and GatherElements from the output's coordinates: the data coordinate along the axis is
 * the index there (wrapped once; 0 out of range or ignored). */
static void tc__gather(const tc_graph *g, const tc_node *nd, const float *data, const int64_t *ix,
                       float *out) {
  const tc_tensor *td = &g->nodes[nd->inputs[0]].out, *ti = &g->nodes[nd->inputs[1]].out;
  int ax = nd->axis, q = ti->ndim, len = td->shape[ax];
  int64_t numel = tc_tensor_numel(&nd->out);
  for (int64_t e = 0; e < numel; e++) {
    int oc[TC_MAX_DIMS], dc[TC_MAX_DIMS];
    int64_t rem = e, ip = 0, dp = 0;
    for (int d = nd->out.ndim - 1; d >= 0; d--) {
      oc[d] = (int)(rem % nd->out.shape[d]);
      rem /= nd->out.shape[d];
    }
    if (nd->gather_elements) {
      ip = e;
      memcpy(dc, oc, sizeof dc);
    } else {
      for (int d = 0; d < q; d++) ip = ip * ti->shape[d] + oc[ax + d];
      for (int d = 0; d < td->ndim; d++) dc[d] = d < ax ? oc[d] : d > ax ? oc[d - 1 + q] : 0;
    }
    int64_t raw = ix[ip], k = raw < 0 ? raw + len : raw;
    if (k < 0 || k >= len || (nd->has_ignore && raw == nd->ignore)) {
      out[e] = 0.0f;
      continue;
    }
    dc[ax] = (int)k;
    for (int d = 0; d < td->ndim; d++) dp = dp * td->shape[d] + dc[d];
    out[e] = data[dp];
  }
}

/* ScatterElements as the ONNX reference runs it: the output is a copy of data, then each update in
 * the indices' order lands at its own coordinates with the axis one replaced by its index (wrapped
 * once; outside the axis: dropped), folded in by the reduction. */
static void tc__scatter(const tc_graph *g, const tc_node *nd, const float *data, const int64_t *ix,
                        const float *upd, float *out) {
  const tc_tensor *ti = &g->nodes[nd->inputs[1]].out;
  int ax = nd->axis, len = nd->out.shape[ax];
  int64_t numel = tc_tensor_numel(&nd->out), nu = tc_tensor_numel(ti);
  memcpy(out, data, (size_t)numel * sizeof *out);
  for (int64_t j = 0; j < nu; j++) {
    int uc[TC_MAX_DIMS];
    int64_t rem = j, dp = 0;
    for (int d = ti->ndim - 1; d >= 0; d--) {
      uc[d] = (int)(rem % ti->shape[d]);
      rem /= ti->shape[d];
    }
    int64_t k = ix[j] < 0 ? ix[j] + len : ix[j];
    if (k < 0 || k >= len) continue;
    uc[ax] = (int)k;
    for (int d = 0; d < nd->out.ndim; d++) dp = dp * nd->out.shape[d] + uc[d];
    float v = out[dp], u = upd[j];
    out[dp] = nd->math == TC_SCATTER_ADD   ? v + u
              : nd->math == TC_SCATTER_MUL ? v * u
              : nd->math == TC_SCATTER_MAX ? fmaxf(v, u)
              : nd->math == TC_SCATTER_MIN ? fminf(v, u)
                                           : u;
  }
}

static th_status tc__run_node(const tc_graph *g, const tc_node *nd, float **buf, float *out,
                              char *err, size_t errlen) {
  const float *in0 = nd->ninputs > 0 ? buf[nd->inputs[0]] : NULL;
  int64_t numel = tc_tensor_numel(&nd->out);
  switch (nd->op) {
    case TC_OP_INPUT: return TH_OK; /* filled by the caller */
    case TC_OP_CONV2D:
      tc__conv(g, nd, in0, nd->ninputs > 1 ? buf[nd->inputs[1]] : NULL, out);
      return TH_OK;
    case TC_OP_DENSE:
      tc__dense(g, nd, in0, nd->ninputs > 1 ? buf[nd->inputs[1]] : NULL, out);
      return TH_OK;
    case TC_OP_BATCH_NORM: {
      int C = nd->out.shape[1], HW = nd->out.shape[2] * nd->out.shape[3];
      const float *ga = g->params[nd->gamma].data, *be = g->params[nd->beta].data;
      const float *me = g->params[nd->mean].data, *va = g->params[nd->var].data;
      for (int n = 0; n < nd->out.shape[0]; n++)
        for (int c = 0; c < C; c++) {
          float sc = ga[c] / sqrtf(va[c] + nd->eps), sh = be[c] - me[c] * sc;
          const float *ip = in0 + ((size_t)n * C + c) * HW;
          float *op = out + ((size_t)n * C + c) * HW;
          for (int k = 0; k < HW; k++) op[k] = ip[k] * sc + sh;
        }
      return TH_OK;
    }
    case TC_OP_RELU:
    case TC_OP_CLIP:
    case TC_OP_GELU:
    case TC_OP_TANH:
    case TC_OP_SIGMOID:
    case TC_OP_HARD_SIGMOID:
    case TC_OP_HARD_SWISH:
    case TC_OP_SILU:
      for (int64_t k = 0; k < numel; k++) out[k] = tc__act(in0[k], tc_op_activation(nd->op), nd);
      return TH_OK;
    case TC_OP_MATH:
      for (int64_t k = 0; k < numel; k++)
        out[k] = tc_ref_unary_math(in0[k], nd->math, nd->alpha, nd->shift);
      return TH_OK;
    case TC_OP_REDUCE: {
      const tc_tensor *ti = &g->nodes[nd->inputs[0]].out;
      int64_t len = ti->shape[ti->ndim - 1];
      for (int64_t k = 0; k < numel; k++)
        if (nd->math >= TC_REDUCE_ARGMAX)
          ((int64_t *)out)[k] = tc_ref_arg(in0 + k * len, len, nd->math);
        else
          out[k] = tc_ref_reduce(in0 + k * len, len, nd->math);
      return TH_OK;
    }
    case TC_OP_ADD: {
      int64_t sa[TC_MAX_DIMS], sb[TC_MAX_DIMS];
      tc__strides(&g->nodes[nd->inputs[0]].out, nd->out.ndim, 1, sa);
      tc__strides(&g->nodes[nd->inputs[1]].out, nd->out.ndim, 1, sb);
      const float *b = buf[nd->inputs[1]];
      for (int64_t k = 0; k < numel; k++)
        out[k] = tc__act(in0[tc__offset_of(&nd->out, sa, k)] + b[tc__offset_of(&nd->out, sb, k)],
                         nd->epilogue, nd);
      return TH_OK;
    }
    case TC_OP_MAX_POOL:
    case TC_OP_AVG_POOL: tc__pool(g, nd, in0, out); return TH_OK;
    case TC_OP_GLOBAL_AVG_POOL: {
      const tc_tensor *ti = &g->nodes[nd->inputs[0]].out;
      int64_t NC = (int64_t)ti->shape[0] * ti->shape[1], HW = (int64_t)ti->shape[2] * ti->shape[3];
      for (int64_t c = 0; c < NC; c++) {
        double acc = 0;
        for (int64_t k = 0; k < HW; k++) acc += in0[c * HW + k];
        out[c] = (float)(acc / (double)HW);
      }
      return TH_OK;
    }
    case TC_OP_ADAPTIVE_AVG_POOL: tc__adaptive(g, nd, in0, out); return TH_OK;
    case TC_OP_CONCAT: {
      /* [outer, axis, inner] blocks: each input's rows of the axis go after the previous inputs' */
      int64_t outer = 1, inner = 1;
      for (int d = 0; d < nd->axis; d++) outer *= nd->out.shape[d];
      for (int d = nd->axis + 1; d < nd->out.ndim; d++) inner *= nd->out.shape[d];
      int64_t C = nd->out.shape[nd->axis];
      for (int64_t n = 0; n < outer; n++) {
        int64_t off = 0;
        for (int i = 0; i < nd->ninputs; i++) {
          int64_t ci = g->nodes[nd->inputs[i]].out.shape[nd->axis];
          memcpy(out + (n * C + off) * inner, buf[nd->inputs[i]] + n * ci * inner,
                 (size_t)(ci * inner) * sizeof(float));
          off += ci;
        }
      }
      return TH_OK;
    }
    case TC_OP_FLATTEN:
    case TC_OP_DROPOUT:
    case TC_OP_LAYOUT: memcpy(out, in0, (size_t)numel * sizeof(float)); return TH_OK;
    case TC_OP_SOFTMAX: {
      /* softmax(alpha * x + mask) over the last axis; the mask broadcasts */
      int last = nd->out.shape[nd->out.ndim - 1];
      int64_t rows = numel / last, sm[TC_MAX_DIMS];
      const float *mask = nd->ninputs > 1 ? buf[nd->inputs[1]] : NULL;
      if (mask) tc__strides(&g->nodes[nd->inputs[1]].out, nd->out.ndim, 1, sm);
      for (int64_t r = 0; r < rows; r++) {
        const float *x = in0 + r * last;
        float *y = out + r * last;
        float mx = -FLT_MAX;
        for (int k = 0; k < last; k++) {
          y[k] = x[k] * nd->alpha + (mask ? mask[tc__offset_of(&nd->out, sm, r * last + k)] : 0.0f);
          mx = y[k] > mx ? y[k] : mx;
        }
        double s = 0;
        for (int k = 0; k < last; k++) s += (y[k] = expf(y[k] - mx));
        for (int k = 0; k < last; k++) y[k] = (float)(y[k] / s);
      }
      return TH_OK;
    }
    case TC_OP_CONST:
      memcpy(out, g->params[nd->weight].data, (size_t)numel * sizeof(float));
      return TH_OK;
    case TC_OP_RESHAPE:
    case TC_OP_EXPAND:
    case TC_OP_TRANSPOSE:
    case TC_OP_SLICE: {
      /* every view is a strided gather: st[d] is the input stride of output dimension d */
      const tc_tensor *ti = &g->nodes[nd->inputs[0]].out;
      int64_t st[TC_MAX_DIMS], in_st[TC_MAX_DIMS], base = 0;
      size_t es = tc_dtype_size(nd->out.dtype);
      if (nd->op == TC_OP_RESHAPE) {
        memcpy(out, in0, (size_t)numel * es);
        return TH_OK;
      }
      tc__strides(ti, ti->ndim, 0, in_st);
      if (nd->op == TC_OP_EXPAND) {
        tc__strides(ti, nd->out.ndim, 1, st);
      } else if (nd->op == TC_OP_TRANSPOSE) {
        for (int d = 0; d < nd->out.ndim; d++) st[d] = in_st[nd->perm[d]];
      } else {
        memcpy(st, in_st, sizeof st);
        st[nd->axis] *= nd->step;
        base = nd->begin * in_st[nd->axis];
      }
      for (int64_t k = 0; k < numel; k++)
        memcpy((char *)out + k * es, (const char *)in0 + (base + tc__offset_of(&nd->out, st, k)) * es, es);
      return TH_OK;
    }
    case TC_OP_MUL:
    case TC_OP_SUB:
    case TC_OP_DIV:
    case TC_OP_BINARY: {
      int op = nd->op == TC_OP_BINARY ? nd->math
               : nd->op == TC_OP_MUL  ? TC_BINARY_MUL
               : nd->op == TC_OP_SUB  ? TC_BINARY_SUB
                                      : TC_BINARY_DIV;
      int64_t sa[TC_MAX_DIMS], sb[TC_MAX_DIMS];
      tc__strides(&g->nodes[nd->inputs[0]].out, nd->out.ndim, 1, sa);
      tc__strides(&g->nodes[nd->inputs[1]].out, nd->out.ndim, 1, sb);
      int dt = g->nodes[nd->inputs[1]].out.dtype == TC_DTYPE_I64 ? TC_WL_I64 : TC_WL_F32;
      for (int64_t k = 0; k < numel; k++)
        tc_ref_binary_at(dt, op, in0, tc__offset_of(&nd->out, sa, k), buf[nd->inputs[1]],
                         tc__offset_of(&nd->out, sb, k), out, k);
      return TH_OK;
    }
    case TC_OP_MATMUL: {
      const tc_tensor *ta = &g->nodes[nd->inputs[0]].out;
      int r = ta->ndim, M = nd->out.shape[r - 2], N = nd->out.shape[r - 1];
      int K = ta->shape[r - (nd->trans_a ? 2 : 1)];
      int64_t batch = numel / ((int64_t)M * N);
      const float *b = buf[nd->inputs[1]];
      for (int64_t i = 0; i < batch; i++) {
        const float *A = in0 + i * M * K, *B = b + i * K * N;
        for (int m = 0; m < M; m++)
          for (int n = 0; n < N; n++) {
            double acc = tc_ref_dot(nd->trans_a ? A + m : A + (size_t)m * K, nd->trans_a ? M : 1,
                                    nd->trans_b ? B + (size_t)n * K : B + n, nd->trans_b ? 1 : N, K);
            out[(i * M + m) * N + n] = (float)(acc * nd->alpha);
          }
      }
      return TH_OK;
    }
    case TC_OP_LAYER_NORM: {
      int C = nd->out.shape[nd->out.ndim - 1];
      const float *ga = g->params[nd->gamma].data, *be = g->params[nd->beta].data;
      const float *res = nd->ninputs > 1 ? buf[nd->inputs[1]] : NULL;
      for (int64_t r = 0; r < numel / C; r++) {
        const float *x = in0 + r * C, *rx = res ? res + r * C : NULL;
        double mean = 0, var = 0;
        for (int c = 0; c < C; c++) mean += x[c] + (rx ? rx[c] : 0.0f);
        mean /= C;
        for (int c = 0; c < C; c++) {
          double d = (double)(x[c] + (rx ? rx[c] : 0.0f)) - mean;
          var += d * d;
        }
        double inv = 1.0 / sqrt(var / C + nd->eps);
        for (int c = 0; c < C; c++)
          out[r * C + c] = (float)(((double)(x[c] + (rx ? rx[c] : 0.0f)) - mean) * inv * ga[c] + be[c]);
      }
      return TH_OK;
    }
    case TC_OP_AFFINE:
      for (int64_t k = 0; k < numel; k++) out[k] = in0[k] * nd->alpha + nd->shift;
      return TH_OK;
    case TC_OP_CAST: {
      const int64_t *ix = (const int64_t *)(const void *)in0;
      if (nd->out.dtype == TC_DTYPE_I64) /* float32 -> int64, truncated toward zero */
        for (int64_t k = 0; k < numel; k++) ((int64_t *)(void *)out)[k] = (int64_t)in0[k];
      else
        for (int64_t k = 0; k < numel; k++) out[k] = (float)ix[k];
      return TH_OK;
    }
    case TC_OP_EMBEDDING: {
      const int64_t *ix = (const int64_t *)(const void *)in0;
      const tc_param *w = &g->params[nd->weight];
      int D = (int)w->shape[1];
      int64_t V = w->shape[0];
      for (int64_t k = 0; k < numel / D; k++) {
        if (ix[k] < 0 || ix[k] >= V) {
          snprintf(err, errlen, "reference: %s: index %lld at position %lld is outside [0, %lld)",
                   nd->name ? nd->name : "embedding", (long long)ix[k], (long long)k, (long long)V);
          return TH_ERR_INVALID;
        }
        memcpy(out + k * D, w->data + ix[k] * D, (size_t)D * sizeof(float));
      }
      return TH_OK;
    }
    case TC_OP_GATHER:
      tc__gather(g, nd, in0, (const int64_t *)(const void *)buf[nd->inputs[1]], out);
      return TH_OK;
    case TC_OP_SCATTER:
      tc__scatter(g, nd, in0, (const int64_t *)(const void *)buf[nd->inputs[1]], buf[nd->inputs[2]],
                  out);
      return TH_OK;
    case TC_OP_COUNT: break;
  }
  snprintf(err, errlen, "reference: unsupported op %d", (int)nd->op);
  return TH_ERR_INVALID;
}

th_status tc_ref_run_io(const tc_graph *g, const void *const *inputs, void *const *outputs, char *err,
                        size_t errlen) {
  char dummy[8];
  if (!err) {
    err = dummy;
    errlen = sizeof dummy;
  }
  if (!g || !inputs || !outputs || g->ninputs < 1 || g->noutputs < 1) {
    snprintf(err, errlen, "reference: bad arguments");
    return TH_ERR_INVALID;
  }
  for (int i = 0; i < g->nnodes; i++) {
    const tc_node *nd = &g->nodes[i];
    if (nd->dead) continue;
    int ids[6] = {nd->weight, nd->bias, nd->gamma, nd->beta, nd->mean, nd->var};
    for (int k = 0; k < 6; k++) {
      if (ids[k] >= 0 && !g->params[ids[k]].data) {
        snprintf(err, errlen, "reference: parameter %s has no data", g->params[ids[k]].name);
        return TH_ERR_INVALID;
      }
    }
  }
  /* last use of each node, so buffers are freed as soon as possible; outputs live to the end */
  size_t nn = g->nnodes > 0 ? (size_t)g->nnodes : 1;
  int *last = malloc(nn * sizeof *last);
  float **buf = calloc(nn, sizeof *buf);
  th_status rc = (last && buf) ? TH_OK : TH_ERR_NOMEM;
  int top = 0;
  for (int i = 0; rc == TH_OK && i < g->nnodes; i++) last[i] = i;
  for (int k = 0; rc == TH_OK && k < g->noutputs; k++) {
    last[g->outputs[k]] = g->nnodes;
    if (g->outputs[k] > top) top = g->outputs[k];
  }
  for (int i = 0; rc == TH_OK && i < g->nnodes; i++) {
    if (g->nodes[i].dead) continue;
    for (int k = 0; k < g->nodes[i].ninputs; k++)
      if (last[g->nodes[i].inputs[k]] < i) last[g->nodes[i].inputs[k]] = i;
  }
  for (int i = 0; rc == TH_OK && i <= top; i++) {
    const tc_node *nd = &g->nodes[i];
    if (nd->dead) continue;
    int64_t bytes = tc_tensor_bytes(&nd->out);
    buf[i] = malloc((size_t)bytes + 8);
    if (!buf[i]) {
      rc = TH_ERR_NOMEM;
      break;
    }
    if (nd->op == TC_OP_INPUT) {
      int slot = -1;
      for (int k = 0; k < g->ninputs; k++)
        if (g->inputs[k] == i) slot = k;
      if (slot < 0) {
        snprintf(err, errlen, "reference: input node %d is not a network input", i);
        rc = TH_ERR_INVALID;
        break;
      }
      memcpy(buf[i], inputs[slot], (size_t)bytes);
    } else {
      rc = tc__run_node(g, nd, buf, buf[i], err, errlen);
    }
    for (int k = 0; rc == TH_OK && k < nd->ninputs; k++) {
      int j = nd->inputs[k];
      if (last[j] == i && buf[j]) {
        free(buf[j]);
        buf[j] = NULL;
      }
    }
  }
  for (int k = 0; rc == TH_OK && k < g->noutputs; k++)
    memcpy(outputs[k], buf[g->outputs[k]], (size_t)tc_tensor_bytes(&g->nodes[g->outputs[k]].out));
  if (rc == TH_ERR_NOMEM) snprintf(err, errlen, "reference: out of memory");
  for (int i = 0; buf && i < g->nnodes; i++) free(buf[i]);
  free(buf);
  free(last);
  return rc;
}

th_status tc_ref_run(const tc_graph *g, const float *input, float *output, char *err, size_t errlen) {
  char dummy[8];
  if (!err) {
    err = dummy;
    errlen = sizeof dummy;
  }
  if (!g || !input || !output || g->ninputs != 1 || g->noutputs != 1 ||
      g->nodes[g->inputs[0]].out.dtype != TC_DTYPE_F32 || g->nodes[g->outputs[0]].out.dtype != TC_DTYPE_F32) {
    snprintf(err, errlen, "reference: tc_ref_run takes one float32 input and output (use tc_ref_run_io)");
    return TH_ERR_INVALID;
  }
  const void *ins[1] = {input};
  void *outs[1] = {output};
  return tc_ref_run_io(g, ins, outs, err, errlen);
}
