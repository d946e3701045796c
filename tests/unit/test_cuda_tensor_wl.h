/* Workloads of the tensor kernel families (ops.h, "Tensor kernels") for the CUDA template tests
 * (test_compiler_cuda.c, test_compiler_cuda_gpu.c): one builder per family, and every kernel of a
 * ViT-B/16 (torchvision, 224x224: 197 tokens) and a BERT-base (sequence 128) encoder at a given
 * batch, with the shapes, transposes, masks and epilogues those networks run, each family's
 * edge shapes, and the GEMMs at precision tf32. */
#ifndef TEST_CUDA_TENSOR_WL_H
#define TEST_CUDA_TENSOR_WL_H

#include <stdint.h>
#include <string.h>

#include "workload.h"

static inline tc_workload tw_base(tc_kernel k) {
  tc_workload wl;
  memset(&wl, 0, sizeof wl);
  wl.kernel = k;
  wl.n = wl.c = wl.h = wl.w = wl.oc = wl.oh = wl.ow = 1;
  wl.in_cb = wl.out_cb = 1;
  return wl;
}

/* [rows, k] x [m, k]^T (+ epilogue) */
static inline tc_workload tw_dense(int rows, int k, int m, int epi) {
  tc_workload wl = tw_base(TC_KERNEL_DENSE);
  wl.n = rows, wl.c = k, wl.oc = m, wl.epilogue = epi;
  wl.kh = wl.kw = wl.sh = wl.sw = 1;
  return wl;
}

/* out[b] = alpha * a[b] . b[b]: [M, K] x [K, N] */
static inline tc_workload tw_bmm(int batch, int M, int K, int N, int ta, int tb, float alpha) {
  tc_workload wl = tw_base(TC_KERNEL_BATCH_MATMUL);
  wl.n = batch, wl.h = wl.oh = M, wl.c = K, wl.oc = N, wl.trans_a = ta, wl.trans_b = tb,
  wl.alpha = alpha;
  return wl;
}

static inline tc_workload tw_ln(int rows, int c, int residual, float eps) {
  tc_workload wl = tw_base(TC_KERNEL_LAYER_NORM);
  wl.n = rows, wl.c = wl.oc = c, wl.alpha = eps, wl.epilogue = residual ? TC_EPI_RESIDUAL : 0;
  return wl;
}

/* rows [n, c, h] of w, mask [n, w] */
static inline tc_workload tw_smr(int n, int c, int h, int w, int mask, float alpha) {
  tc_workload wl = tw_base(TC_KERNEL_SOFTMAX_ROWS);
  wl.n = n, wl.c = wl.oc = c, wl.h = wl.oh = h, wl.w = wl.ow = w, wl.alpha = alpha;
  wl.epilogue = mask ? TC_EPI_MASK : 0;
  return wl;
}

static inline tc_workload tw_unary(int n, int op, float alpha, float beta) {
  tc_workload wl = tw_base(TC_KERNEL_UNARY);
  wl.n = n, wl.op = op, wl.alpha = alpha, wl.beta = beta;
  return wl;
}

/* n indices into a [rows, dim] table */
static inline tc_workload tw_emb(int n, int rows, int dim) {
  tc_workload wl = tw_base(TC_KERNEL_EMBEDDING);
  wl.n = n, wl.c = rows, wl.oc = dim;
  return wl;
}

/* gather over shape[0..nd) (data strides as, index strides bs), axis extent c and stride oc,
 * ignored index ignore (-1: none) */
static inline tc_workload tw_gather(int nd, const int *shape, const int *as, const int *bs, int c,
                                    int oc, int ignore) {
  tc_workload wl = tw_base(TC_KERNEL_GATHER);
  wl.ndim = nd, wl.c = c, wl.oc = oc, wl.kh = ignore >= 0, wl.kw = ignore >= 0 ? ignore : 0;
  for (int d = 0; d < nd; d++) wl.shape[d] = shape[d], wl.astride[d] = as[d], wl.bstride[d] = bs[d];
  return wl;
}

/* ScatterElements along `axis` of contiguous data dims[0..nd) by contiguous indices whose axis
 * extent is kh (the other dims data's), reduction op (TC_SCATTER_*), as the lowering builds it */
static inline tc_workload tw_scatter(int nd, const int *dims, int axis, int kh, int op) {
  tc_workload wl = tw_base(TC_KERNEL_SCATTER);
  int is = 1;
  for (int d = nd - 1; d >= 0; d--) {
    wl.shape[d] = dims[d], wl.astride[d] = d == axis, wl.bstride[d] = d == axis ? 0 : is;
    is *= d == axis ? kh : dims[d];
  }
  int ax = 1;
  for (int d = axis + 1; d < nd; d++) ax *= dims[d];
  wl.ndim = nd, wl.c = dims[axis], wl.oc = ax, wl.kh = kh, wl.kw = 0, wl.op = op;
  return wl;
}

/* copy (bstride: the output's) or binary (bstride: b's) over shape[0..nd) */
static inline tc_workload tw_strided(tc_kernel k, int nd, const int *shape, const int *as,
                                     const int *bs, int aoff, int boff) {
  tc_workload wl = tw_base(k);
  wl.ndim = nd, wl.aoff = aoff, wl.boff = boff;
  for (int d = 0; d < nd; d++) wl.shape[d] = shape[d], wl.astride[d] = as[d], wl.bstride[d] = bs[d];
  return wl;
}

static inline tc_workload tw_copy(int nd, const int *shape, const int *as, const int *bs, int aoff,
                                  int boff) {
  return tw_strided(TC_KERNEL_COPY, nd, shape, as, bs, aoff, boff);
}

static inline tc_workload tw_binary(int op, int nd, const int *shape, const int *as,
                                    const int *bs) {
  tc_workload wl = tw_strided(TC_KERNEL_BINARY, nd, shape, as, bs, 0, 0);
  wl.op = op;
  return wl;
}

/* The encoder's attention: the heads split out of the fused qkv projection [b, S, 3, 12, 64] into
 * [b*12, S, 64] (q, k, v at offsets 0, 768, 1536), Q.K^T / 8, softmax (mask [b, S] or none), P.V
 * and the heads merged back to [b, S, 768]. */
static inline int tw__attention(int b, int S, int mask, tc_workload *w) {
  int n = 0, sh[4] = {b, 12, S, 64}, qkv[4] = {S * 2304, 64, 2304, 1},
      heads[4] = {12 * S * 64, S * 64, 64, 1};
  int merged[4] = {S * 768, 64, 768, 1};
  for (int part = 0; part < 3; part++) w[n++] = tw_copy(4, sh, qkv, heads, part * 768, 0);
  w[n++] = tw_bmm(b * 12, S, 64, S, 0, 1, 0.125f);
  w[n++] = tw_smr(b, 12, S, S, mask, 1.0f);
  w[n++] = tw_bmm(b * 12, S, S, 64, 0, 0, 1.0f);
  w[n++] = tw_copy(4, sh, heads, merged, 0, 0);
  return n;
}

/* Every kernel of ViT-B/16 at batch b (at most TW_MAX). */
static inline int tw_vit(int b, tc_workload *w) {
  const int S = 197, D = 768, T = b * S;
  int n = 0;
  tc_workload conv = tw_base(TC_KERNEL_CONV2D); /* the 16x16 patch embedding */
  conv.n = b, conv.c = 3, conv.h = conv.w = 224, conv.oc = D, conv.oh = conv.ow = 14;
  conv.kh = conv.kw = conv.sh = conv.sw = 16, conv.epilogue = TC_EPI_BIAS;
  w[n++] = conv;
  int ps[3] = {b, 196, D}, pin[3] = {D * 196, 1, 196},
      pout[3] = {S * D, D, 1}; /* [b,768,196] -> tokens 1.. */
  w[n++] = tw_copy(3, ps, pin, pout, 0, D);
  int cs[2] = {b, D}, cin[2] = {0, 1}, cout[2] = {S * D, 1}; /* the class token, expanded */
  w[n++] = tw_copy(2, cs, cin, cout, 0, 0);
  int es[2] = {b, S * D}, ea[2] = {S * D, 1},
      eb[2] = {0, 1}; /* + the position embedding, broadcast */
  w[n++] = tw_binary(TC_BINARY_ADD, 2, es, ea, eb);
  w[n++] = tw_ln(T, D, 0, 1e-6f);
  w[n++] = tw_dense(T, D, 3 * D, TC_EPI_BIAS);
  n += tw__attention(b, S, 0, w + n);
  w[n++] = tw_dense(T, D, D, TC_EPI_BIAS | TC_EPI_RESIDUAL);
  w[n++] = tw_dense(T, D, 4 * D, TC_EPI_BIAS | TC_EPI_GELU);
  w[n++] = tw_dense(T, 4 * D, D, TC_EPI_BIAS | TC_EPI_RESIDUAL);
  int ks[2] = {b, D}, kin[2] = {S * D, 1},
      kout[2] = {D, 1}; /* the class token out of the final norm */
  w[n++] = tw_copy(2, ks, kin, kout, 0, 0);
  w[n++] = tw_dense(b, D, 1000, TC_EPI_BIAS);
  return n;
}

/* Every kernel of BERT-base at batch b, sequence 128 (pooler with tanh, a 2-way classifier; at most
 * TW_MAX). */
static inline int tw_bert(int b, tc_workload *w) {
  const int S = 128, D = 768, T = b * S;
  int n = 0;
  w[n++] = tw_emb(T, 30522, D); /* words, positions, token types */
  w[n++] = tw_emb(T, 512, D);
  w[n++] = tw_emb(T, 2, D);
  int es[1] = {T * D}, e1[1] = {1};
  w[n++] = tw_binary(TC_BINARY_ADD, 1, es, e1, e1);
  w[n++] = tw_ln(T, D, 0, 1e-12f);
  w[n++] = tw_unary(T, TC_UNARY_CAST_I64, 0, 0); /* the attention mask: (mask - 1) * 10000 */
  w[n++] = tw_unary(T, TC_UNARY_AFFINE, 10000.0f, -10000.0f);
  w[n++] = tw_dense(T, D, 3 * D, TC_EPI_BIAS);
  n += tw__attention(b, S, 1, w + n);
  w[n++] = tw_dense(T, D, D, TC_EPI_BIAS);
  w[n++] = tw_ln(T, D, 1, 1e-12f); /* LayerNorm(x + attention) */
  w[n++] = tw_dense(T, D, 4 * D, TC_EPI_BIAS | TC_EPI_GELU);
  w[n++] = tw_dense(T, 4 * D, D, TC_EPI_BIAS | TC_EPI_RESIDUAL);
  w[n++] = tw_ln(T, D, 0, 1e-12f);
  int ks[2] = {b, D}, kin[2] = {S * D, 1}, kout[2] = {D, 1}; /* the [CLS] token */
  w[n++] = tw_copy(2, ks, kin, kout, 0, 0);
  w[n++] = tw_dense(b, D, D, TC_EPI_BIAS | TC_EPI_TANH);
  w[n++] = tw_dense(b, D, 2, TC_EPI_BIAS);
  return n;
}

#define TW_MAX 32 /* kernels of either network */
#define TW_EDGE_MAX 12

/* Edge shapes of family k (at most TW_EDGE_MAX; for dense, its transformer epilogues and row
 * counts): rows that are no multiple of a tile, K no multiple of a vector or of tile_k, single
 * rows, transposes, masks (the tests pad and fully mask positions), out-of-range indices,
 * broadcasts and strides in every place. */
static inline int tw_edge_set(tc_kernel k, tc_workload *w) {
  int n = 0;
  switch (k) {
    case TC_KERNEL_BATCH_MATMUL:
      w[n++] = tw_bmm(2, 13, 9, 11, 0, 0, 1.0f);
      w[n++] = tw_bmm(3, 17, 20, 6, 0, 1, 0.125f);
      w[n++] = tw_bmm(2, 8, 33, 19, 1, 0, 0.5f);
      w[n++] = tw_bmm(1, 1, 5, 7, 1, 1, 2.0f); /* one row */
      w[n++] = tw_bmm(2, 40, 64, 36, 0, 1, 0.125f);
      w[n++] = tw_bmm(1, 64, 16, 64, 0, 0, 1.0f); /* whole tiles: no guards */
      break;
    case TC_KERNEL_DENSE: /* the transformer epilogues and row counts */
      w[n++] = tw_dense(40, 30, 21, TC_EPI_BIAS | TC_EPI_GELU);
      w[n++] = tw_dense(3, 24, 10, TC_EPI_BIAS | TC_EPI_TANH);
      w[n++] = tw_dense(70, 64, 36, TC_EPI_BIAS | TC_EPI_RESIDUAL);
      w[n++] = tw_dense(33, 9, 13, TC_EPI_GELU);
      w[n++] = tw_dense(64, 32, 64, TC_EPI_BIAS | TC_EPI_TANH);
      w[n++] = tw_dense(1, 48, 5, TC_EPI_BIAS | TC_EPI_GELU);
      break;
    case TC_KERNEL_LAYER_NORM:
      w[n++] = tw_ln(5, 37, 0, 1e-5f);
      w[n++] = tw_ln(3, 200, 1, 1e-12f);
      w[n++] = tw_ln(1, 1, 0, 1e-5f);
      w[n++] = tw_ln(9, 64, 1, 1e-6f);
      w[n++] = tw_ln(2, 768, 0, 1e-12f);
      w[n++] =
          tw_ln(2, 1500, 1, 1e-5f); /* long rows: passes read them again at small thread counts */
      break;
    case TC_KERNEL_SOFTMAX_ROWS:
      w[n++] = tw_smr(2, 3, 5, 13, 1, 0.125f);
      w[n++] = tw_smr(1, 2, 3, 197, 0, 1.0f);
      w[n++] = tw_smr(3, 1, 2, 1, 1, 1.0f);
      w[n++] = tw_smr(2, 2, 2, 600, 1, 0.5f);
      w[n++] = tw_smr(2, 12, 1, 128, 1, 1.0f);
      break;
    case TC_KERNEL_UNARY:
      w[n++] = tw_unary(1000, TC_UNARY_GELU, 0, 0);
      w[n++] = tw_unary(37, TC_UNARY_TANH, 0, 0);
      w[n++] = tw_unary(50, TC_UNARY_CAST_I64, 0, 0);
      w[n++] = tw_unary(33, TC_UNARY_AFFINE, 2.5f, -1.0f);
      w[n++] = tw_unary(1, TC_UNARY_AFFINE, 10000.0f, -10000.0f);
      w[n++] = tw_unary(301, TC_UNARY_SIGMOID, 0, 0);
      w[n++] = tw_unary(45, TC_UNARY_HARD_SIGMOID, 0.5f, 0.25f); /* clamps inputs outside [-0.5, 1.5] */
      w[n++] = tw_unary(64, TC_UNARY_HARD_SWISH, 0, 0);
      w[n++] = tw_unary(7, TC_UNARY_SILU, 0, 0);
      w[n++] = tw_unary(99, TC_UNARY_CLIP, 0.0f, 6.0f); /* a standalone relu6 */
      break;
    case TC_KERNEL_EMBEDDING:
      w[n++] = tw_emb(7, 10, 12);
      w[n++] = tw_emb(5, 3, 7);
      w[n++] = tw_emb(1, 1, 4);
      w[n++] = tw_emb(40, 30, 64);
      break;
    case TC_KERNEL_COPY: {
      int s0[3] = {3, 5, 7}, a0[3] = {35, 1, 5},
          b0[3] = {35, 7, 1}; /* transpose of the last two axes */
      w[n++] = tw_copy(3, s0, a0, b0, 0, 0);
      int s1[3] = {2, 4, 8}, a1[3] = {64, 8, 1}, b1[3] = {32, 8, 1}; /* a slice: float4 runs */
      w[n++] = tw_copy(3, s1, a1, b1, 16, 0);
      int s2[2] = {3, 6}, a2[2] = {0, 1}, b2[2] = {6, 1}; /* expand */
      w[n++] = tw_copy(2, s2, a2, b2, 0, 0);
      int s3[3] = {2, 3, 4}, a3[3] = {12, 4, 1},
          b3[3] = {28, 4, 1}; /* a concat part along axis 1 */
      w[n++] = tw_copy(3, s3, a3, b3, 0, 8);
      int s4[6] = {2, 1, 3, 2, 1, 5}, a4[6] = {30, 0, 1, 15, 0, 3}, b4[6] = {30, 30, 10, 5, 5, 1};
      w[n++] = tw_copy(6, s4, a4, b4, 0, 0);
      int s5[4] = {2, 12, 5, 64}, a5[4] = {5 * 2304, 64, 2304, 1},
          b5[4] = {12 * 5 * 64, 5 * 64, 64, 1};
      w[n++] = tw_copy(4, s5, a5, b5, 768, 0); /* attention heads out of a fused qkv */
      break;
    }
    case TC_KERNEL_BINARY: {
      int s0[2] = {4, 6}, a0[2] = {6, 1}, b0[2] = {0, 1}; /* b broadcast over rows */
      w[n++] = tw_binary(TC_BINARY_ADD, 2, s0, a0, b0);
      int s1[2] = {3, 8}, a1[2] = {8, 1}, b1[2] = {1, 0}; /* b broadcast along the row */
      w[n++] = tw_binary(TC_BINARY_MUL, 2, s1, a1, b1);
      int s2[3] = {2, 3, 5}, a2[3] = {5, 0, 1}, b2[3] = {15, 5, 1};
      w[n++] = tw_binary(TC_BINARY_SUB, 3, s2, a2, b2);
      int s3[1] = {10}, a3[1] = {1}, b3[1] = {1};
      w[n++] = tw_binary(TC_BINARY_DIV, 1, s3, a3, b3);
      int s4[3] = {2, 7, 3}, a4[3] = {0, 3, 1}, b4[3] = {1, 0, 0}; /* both broadcast, no float4 */
      w[n++] = tw_binary(TC_BINARY_ADD, 3, s4, a4, b4);
      break;
    }
    case TC_KERNEL_GATHER: { /* indices in [-c, c) and some outside (tc_cuda_fill_i64) */
      int s0[2] = {5, 7}, a0[2] = {0, 1}, b0[2] = {1, 0}; /* Gather axis 0 of [10, 7] by 5 */
      w[n++] = tw_gather(2, s0, a0, b0, 10, 7, -1);
      int s1[3] = {2, 3, 6}, a1[3] = {12, 4, 0}, b1[3] = {0, 0, 1}; /* last axis of [2, 3, 4] */
      w[n++] = tw_gather(3, s1, a1, b1, 4, 1, -1);
      int s2[3] = {4, 1, 6}, a2[3] = {30, 0, 1}, b2[3] = {6, 6, 1}; /* a loss's pick, ignore 2 */
      w[n++] = tw_gather(3, s2, a2, b2, 5, 6, 2);
      int s3[2] = {3, 4100}, a3[2] = {5000, 0}, b3[2] = {4100, 1}; /* GatherElements, last axis */
      w[n++] = tw_gather(2, s3, a3, b3, 5000, 1, -1);
      break;
    }
    case TC_KERNEL_SCATTER: /* each reduction; duplicates, negative and outside indices */
      w[n++] = tw_scatter(2, (int[]){3, 3}, 0, 2, TC_SCATTER_NONE);
      w[n++] = tw_scatter(3, (int[]){2, 5, 4}, 1, 7, TC_SCATTER_ADD);
      w[n++] = tw_scatter(2, (int[]){4, 9}, 1, 3, TC_SCATTER_MUL);
      w[n++] = tw_scatter(1, (int[]){6}, 0, 4, TC_SCATTER_MAX);
      w[n++] = tw_scatter(2, (int[]){3, 4100}, 0, 5, TC_SCATTER_MIN);
      break;
    default:
      break;
  }
  return n;
}

/* n seeded floats in [-4, 4) from the LCG state *s: the emulated and device checks' inputs. */
static inline void tw_fill_floats(float *f, int64_t n, uint64_t *s) {
  for (int64_t e = 0; e < n; e++) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    f[e] = (float)((double)(*s >> 40) / (double)(1ull << 24) * 2.0 - 1.0) * 4.0f;
  }
}

/* Dense and batch_matmul at precision tf32: rows 1, 3, 128, 129 and 197 (no multiple of a tile but
 * 128), K 67 (no multiple of 4: 4-byte copies) and 768, N 37 and 1000, every dense epilogue, and
 * batch_matmul with each of its four transposes (at most TW_TF32_GEMM_MAX). */
#define TW_TF32_GEMM_MAX 16
static inline int tw_tf32_gemm_set(tc_workload *w) {
  static const int epis[10] = {TC_EPI_BIAS,
                               TC_EPI_BIAS | TC_EPI_RESIDUAL,
                               TC_EPI_BIAS | TC_EPI_RELU,
                               TC_EPI_CLIP,
                               TC_EPI_BIAS | TC_EPI_GELU,
                               TC_EPI_BIAS | TC_EPI_TANH,
                               TC_EPI_SIGMOID,
                               TC_EPI_BIAS | TC_EPI_HARD_SIGMOID,
                               TC_EPI_HARD_SWISH,
                               TC_EPI_BIAS | TC_EPI_SILU};
  static const int rows[10] = {1, 3, 128, 129, 197, 3, 129, 128, 1, 197};
  static const int ks[10] = {67, 768, 67, 67, 67, 67, 768, 67, 768, 67};
  static const int ns[10] = {37, 37, 37, 1000, 37, 1000, 37, 37, 37, 37};
  int n = 0;
  for (int i = 0; i < 10; i++) {
    w[n] = tw_dense(rows[i], ks[i], ns[i], epis[i]);
    w[n].clip_min = -1, w[n].clip_max = 6, w[n].alpha = 0.2f, w[n].beta = 0.5f;
    w[n++].precision = TC_PRECISION_TF32;
  }
  w[n++] = tw_bmm(2, 197, 67, 37, 0, 1, 0.125f);
  w[n++] = tw_bmm(2, 129, 67, 37, 1, 0, 1.0f);
  w[n++] = tw_bmm(1, 3, 768, 37, 1, 1, 0.5f);
  w[n++] = tw_bmm(3, 128, 64, 128, 0, 0, 1.0f);
  w[n++] = tw_bmm(2, 128, 64, 128, 1, 1, 1.0f); /* whole tiles, 16-byte copies both sides */
  for (int i = n - 5; i < n; i++) w[i].precision = TC_PRECISION_TF32;
  return n;
}

#endif
