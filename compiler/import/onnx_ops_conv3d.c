/* The ONNX importer's 3-D windows and dilated max pools (issue 38): Conv, MaxPool and AveragePool
 * over [N, C, D, H, W] maps, and MaxPool with dilations, lowered onto the 2-D kernels every backend
 * has, so no kernel family of their own. A 3-D conv whose output depth OD is at most its depth taps
 * KD is "folded": one 2-D conv of [N, C*D, H, W] with expanded weights [O*OD, C*D, KH, KW] (output
 * channel (o, z) takes input channel (c, d) by tap t when d = z*sd - pd + t*dd: padding, stride,
 * dilation and groups in the weights), D/KD times a direct conv's multiply-adds. A deeper one is
 * "stacked": the D slices convolved as a batch [N*D, C, H, W] by every depth tap (O*KD channels, a
 * direct conv's work at depth stride 1) and the taps summed by a 0/1 dense [OD, D*KD]. A 3-D pool
 * is separable: a 2-D pool over (H, W) of [N, C*D, H, W], then a (KD x 1) pool over [N, C, D,
 * OH*OW]; max of maxes is the max, and the average of averages is the average because the window's
 * valid part is a box (its count a product), with or without counting the padding. A dilated max
 * pool is undilated pools of strided slices, one per phase (tc__ox_dilated_axis). */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "onnx_int.h"
#include "workload.h"

/* Kernel k (k[0] > 0: from the weights, checked against kernel_shape), strides s, dilations dil
 * (NULL: pools, which must have 1) and pads (3 begins, 3 ends) of a 3-D window over input dims xd
 * [N, C, D, H, W]. k comes back as the dilated extents (k - 1) * d + 1. */
static th_status tc__ox_window3(tc__ox *x, const Onnx__NodeProto *n, const int64_t *xd, int64_t *k,
                                int64_t *s, int64_t *dil, int64_t *pads) {
  static const char *names[3] = {"kernel_shape", "strides", "dilations"};
  int64_t a[8], d1[3] = {1, 1, 1};
  int64_t *outs[3] = {k, s, dil ? dil : d1};
  for (int m = 0; m < 3; m++) {
    int cnt;
    th_status rc = tc__ox_attr_ints(x, n, names[m], a, 8, &cnt);
    if (rc != TH_OK) return rc;
    if (cnt >= 0 && cnt != 3)
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "%s must have 3 values (3-D)", names[m]);
    int64_t hi = m == 2 ? 64 : 1024;
    for (int i = 0; i < 3; i++) {
      int64_t v = cnt == 3 ? a[i] : (m == 0 ? k[i] : 1);
      if (m == 0 && cnt == 3 && k[i] > 0 && a[i] != k[i])
        return tc__ox_nfail(x, n, TH_ERR_INVALID, "kernel_shape does not fit the weights");
      if (v < 1 || v > hi)
        return tc__ox_nfail(x, n, TH_ERR_INVALID, "%s %lld (1..%lld)", names[m], (long long)v,
                            (long long)hi);
      if (m == 2 && !dil && v != 1)
        return tc__ox_unsupported(x, n, "dilations = %lld on a 3-D pool (only 1)", (long long)v);
      outs[m][i] = v;
    }
  }
  for (int i = 0; i < 3; i++) k[i] = (k[i] - 1) * outs[2][i] + 1;
  th_status rc = tc__ox_window_pads_n(x, n, xd + 2, k, s, 3, pads);
  for (int i = 0; rc == TH_OK && i < 6; i++)
    if (pads[i] >= k[i % 3])
      return tc__ox_unsupported(x, n, "padding %lld is not smaller than the kernel",
                                (long long)pads[i]);
  return rc;
}

/* A 5-D float input of n as a graph node, refusing a Pad absorbed into it. */
static th_status tc__ox_map3(tc__ox *x, const Onnx__NodeProto *n, int *id) {
  tc__oxv *v = tc__ox_in(x, n, 0);
  *id = -1;
  if (v && v->kind == TC__OX_PAD) return tc__ox_unsupported(x, n, "a Pad before a 3-D window");
  th_status rc = tc__ox_float_in(x, n, 0, id);
  if (rc == TH_OK && *id >= 0 && tc__ox_t(x, *id)->ndim != 5) {
    *id = -1;
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "a 3-D window needs an [N, C, D, H, W] input");
  }
  return rc;
}

/* Node id reshaped to the r dims d, bound to n (*out = -1 when reported). */
static th_status tc__ox_view(tc__ox *x, const Onnx__NodeProto *n, int id, int r, const int64_t *d,
                             int *out) {
  *out = -1;
  for (int i = 0; i < r; i++)
    if (d[i] < 1 || d[i] > INT_MAX)
      return tc__ox_unsupported(x, n, "a view of %lld elements along one axis", (long long)d[i]);
  return tc__ox_reshape_node(x, n, id, d, r, out);
}

static int64_t tc__ox_out3(int64_t size, int64_t k, int64_t s, int64_t p0, int64_t p1) {
  int64_t span = size + p0 + p1 - k;
  return span < 0 ? 0 : span / s + 1;
}

/* The stacked 3-D conv's sum over the depth taps: *id [N*D, O*KD, OH, OW] (the conv of each depth
 * slice by each tap) -> [N, O, OH*OW, D*KD] -> a 0/1 dense into [N, O, OH*OW, OD] (output depth z
 * takes slice z*s - p + t*dil by tap t) -> [N, O, OD, OH*OW], plus the bias b (or NULL) per
 * channel. */
static th_status tc__ox_conv3d_taps(tc__ox *x, const Onnx__NodeProto *n, int *id, int64_t N,
                                    int64_t O, int64_t D, int64_t KD, int64_t od, int64_t s,
                                    int64_t dil, int64_t p0, const tc__oxv *b) {
  const tc_tensor *t = tc__ox_t(x, *id);
  int64_t P = (int64_t)t->shape[2] * t->shape[3], v5[5] = {N, D, O, KD, P},
          v4[4] = {N, O, P, D * KD};
  static const int perm5[5] = {0, 2, 4, 1, 3}, perm4[4] = {0, 1, 3, 2};
  int y;
  th_status rc = tc__ox_view(x, n, *id, 5, v5, &y);
  if (rc != TH_OK || y < 0) return rc;
  y = tc_graph_transpose(x->g, y, perm5);
  rc = tc__ox_bind_node(x, n, NULL, y);
  if (rc == TH_OK) rc = tc__ox_view(x, n, y, 4, v4, &y);
  if (rc != TH_OK || y < 0) return rc;
  float *A = NULL;
  if (x->opts->weights) {
    A = th_arena_alloc(x->g->arena, (size_t)(od * D * KD) * sizeof(float));
    if (!A) return tc__ox_fail(x, TH_ERR_NOMEM, "out of memory summing a 3-D conv's taps");
    memset(A, 0, (size_t)(od * D * KD) * sizeof(float));
    for (int64_t z = 0; z < od; z++)
      for (int64_t k = 0; k < KD; k++) {
        int64_t d = z * s - p0 + k * dil;
        if (d >= 0 && d < D) A[z * D * KD + d * KD + k] = 1.0f;
      }
  }
  rc = tc__ox_axis_map(x, n, &y, 3, (int)od, A, NULL, "depth");
  if (rc != TH_OK) return rc;
  y = tc_graph_transpose(x->g, y, perm4);
  rc = tc__ox_bind_node(x, n, NULL, y);
  if (rc == TH_OK && b) {
    char nm[256], pn[300];
    int64_t shape[3] = {O, 1, 1};
    snprintf(pn, sizeof pn, "%s.bias", tc__ox_gname(x, n, nm, sizeof nm));
    int c = tc_graph_const(x->g, pn, 3, shape, TC_INIT_EMBED, 1);
    rc = tc__ox_bind_node(x, n, NULL, c);
    if (rc == TH_OK && x->opts->weights) {
      float *bd = th_arena_alloc(x->g->arena, (size_t)O * sizeof(float));
      if (!bd) return tc__ox_fail(x, TH_ERR_NOMEM, "out of memory");
      memcpy(bd, b->c.f, (size_t)O * sizeof(float));
      x->g->params[x->g->nodes[c].weight].data = bd;
    }
    if (rc == TH_OK) rc = tc__ox_bind_node(x, n, NULL, y = tc_graph_add(x->g, y, c));
  }
  *id = rc == TH_OK ? y : -1;
  return rc;
}

th_status tc__ox_conv3d(tc__ox *x, const Onnx__NodeProto *n) {
  const tc__oxv *w = tc__ox_in(x, n, 1), *b = tc__ox_in(x, n, 2);
  int in;
  th_status rc = tc__ox_map3(x, n, &in);
  if (rc != TH_OK || in < 0) return rc;
  int64_t xd[5], k[3], kt[3], s[3], dil[3], pads[6], group;
  tc__ox_tdims(x, in, xd);
  for (int i = 0; i < 3; i++) k[i] = kt[i] = w->c.dims[2 + i];
  rc = tc__ox_window3(x, n, xd, k, s, dil, pads);
  if (rc == TH_OK) rc = tc__ox_attr_i(x, n, "group", 1, &group);
  if (rc != TH_OK) return rc;
  int64_t O = w->c.dims[0], C = xd[1], D = xd[2];
  if (group < 1 || group > C || w->c.dims[1] * group != C || O % group != 0)
    return tc__ox_nfail(x, n, TH_ERR_INVALID,
                        "weights [%lld, %lld, ...] with group %lld do not fit %lld channels",
                        (long long)O, (long long)w->c.dims[1], (long long)group, (long long)C);
  if (b && (b->kind != TC__OX_CONST || !b->c.fl || b->c.n != O))
    return tc__ox_unsupported(x, n, "the bias must be a constant of %lld floats", (long long)O);
  int64_t od = tc__ox_out3(D, k[0], s[0], pads[0], pads[3]);
  int64_t oh = tc__ox_out3(xd[3], k[1], s[1], pads[1], pads[4]);
  int64_t ow = tc__ox_out3(xd[4], k[2], s[2], pads[2], pads[5]);
  if (od < 1 || oh < 1 || ow < 1)
    return tc__ox_nfail(x, n, TH_ERR_INVALID,
                        "the input %lldx%lldx%lld is too small for the kernel", (long long)D,
                        (long long)xd[3], (long long)xd[4]);
  /* folded: one conv of [N, C*D, H, W] into O*OD channels, D/KD times a direct conv's work;
   * stacked: one conv of the D slices as a batch [N*D, C, H, W] into O*KD channels, summed over the
   * taps by a 0/1 dense [OD, D*KD] (KD*D/OD times the multiply-adds of the folded one's). */
  int stacked = od > kt[0];
  int64_t U = stacked ? kt[0] : od, CI = stacked ? C : C * D;
  double cost = (double)O * (double)U * (double)CI * (double)(k[1] * k[2]);
  if (cost > TC__OX_CONV_EXPAND_MAX)
    return tc__ox_unsupported(
        x, n, "the 3-D conv's 2-D weights [%lld, %lld, %lld, %lld] pass %d elements",
        (long long)(O * U), (long long)CI, (long long)k[1], (long long)k[2],
        TC__OX_CONV_EXPAND_MAX);
  int a = in;
  if (stacked) { /* [N, C, D, H, W] -> [N, D, C, H, W] */
    static const int perm[5] = {0, 2, 1, 3, 4};
    a = tc_graph_transpose(x->g, in, perm);
    rc = tc__ox_bind_node(x, n, NULL, a);
    if (rc != TH_OK) return rc;
  }
  int64_t v4[4] = {stacked ? xd[0] * D : xd[0], CI, xd[3], xd[4]};
  rc = tc__ox_view(x, n, a, 4, v4, &a);
  if (rc != TH_OK || a < 0) return rc;
  char nm[256];
  int64_t ph = pads[1] > pads[4] ? pads[1] : pads[4], pw = pads[2] > pads[5] ? pads[2] : pads[5];
  int id = tc_graph_conv(x->g, tc__ox_gname(x, n, nm, sizeof nm), a, (int)(O * U), (int)k[1],
                         (int)k[2], (int)s[1], (int)s[2], (int)ph, (int)pw, 1, b && !stacked);
  rc = tc__ox_bind_node(x, n, NULL, id);
  if (rc != TH_OK) return rc;
  tc_node *nd = &x->g->nodes[id];
  int64_t phw[4] = {pads[1], pads[2], pads[4], pads[5]};
  tc__ox_set_window(nd, k + 1, s + 1, phw, oh, ow);
  if (x->opts->weights) {
    tc_param *p = &x->g->params[nd->weight];
    float *d = th_arena_alloc(x->g->arena, (size_t)p->numel * sizeof(float));
    float *bd =
        b && !stacked ? th_arena_alloc(x->g->arena, (size_t)(O * od) * sizeof(float)) : NULL;
    if (!d || (b && !stacked && !bd))
      return tc__ox_fail(x, TH_ERR_NOMEM, "out of memory expanding a 3-D conv");
    memset(d, 0, (size_t)p->numel * sizeof(float));
    int64_t cg = C / group, og = O / group, KH = k[1], KW = k[2];
    for (int64_t o = 0; o < O; o++)
      for (int64_t u = 0; u < U; u++) { /* folded: output depth u; stacked: tap u */
        int64_t row = o * U + u;
        if (bd) bd[row] = b->c.f[o];
        for (int64_t ci = 0; ci < cg; ci++)
          for (int64_t t = stacked ? u : 0; t < (stacked ? u + 1 : kt[0]); t++) {
            int64_t dd = u * s[0] - pads[0] + t * dil[0], c = o / og * cg + ci;
            if (!stacked && (dd < 0 || dd >= D)) continue; /* a tap in the depth padding */
            int64_t col = stacked ? c : c * D + dd;
            for (int64_t i = 0; i < kt[1]; i++)
              for (int64_t j = 0; j < kt[2]; j++)
                d[((row * CI + col) * KH + i * dil[1]) * KW + j * dil[2]] =
                    w->c.f[(((o * cg + ci) * kt[0] + t) * kt[1] + i) * kt[2] + j];
          }
      }
    p->data = d;
    if (bd) x->g->params[nd->bias].data = bd;
  }
  if (stacked) rc = tc__ox_conv3d_taps(x, n, &id, xd[0], O, D, kt[0], od, s[0], dil[0], pads[0], b);
  int64_t v5[5] = {xd[0], O, od, oh, ow};
  int out = -1;
  if (rc == TH_OK && id >= 0) rc = tc__ox_view(x, n, id, 5, v5, &out);
  return rc != TH_OK || out < 0 ? rc : tc__ox_set_node(x, n, 0, out);
}

th_status tc__ox_pool3d(tc__ox *x, const Onnx__NodeProto *n, int is_max) {
  int in;
  th_status rc = tc__ox_map3(x, n, &in);
  if (rc != TH_OK || in < 0) return rc;
  int64_t xd[5], k[3] = {0, 0, 0}, s[3], pads[6], ceil_mode = 0, cip = 0;
  tc__ox_tdims(x, in, xd);
  rc = tc__ox_window3(x, n, xd, k, s, NULL, pads);
  if (rc == TH_OK && x->opset >= 10) rc = tc__ox_attr_i(x, n, "ceil_mode", 0, &ceil_mode);
  if (rc == TH_OK && !is_max) rc = tc__ox_attr_i(x, n, "count_include_pad", 0, &cip);
  if (rc != TH_OK) return rc;
  int64_t v4[4] = {xd[0], xd[1] * xd[2], xd[3], xd[4]};
  int a, hw, dv, dp;
  rc = tc__ox_view(x, n, in, 4, v4, &a);
  if (rc != TH_OK || a < 0) return rc;
  int64_t khw[2] = {k[1], k[2]}, shw[2] = {s[1], s[2]},
          phw[4] = {pads[1], pads[2], pads[4], pads[5]};
  rc = tc__ox_pool_node(x, n, a, is_max, khw, shw, phw, (int)ceil_mode, (int)cip, &hw);
  if (rc != TH_OK || hw < 0) return rc;
  const tc_tensor *t = tc__ox_t(x, hw);
  int64_t oh = t->shape[2], ow = t->shape[3];
  int64_t vd[4] = {xd[0], xd[1], xd[2], oh * ow};
  rc = tc__ox_view(x, n, hw, 4, vd, &dv);
  if (rc != TH_OK || dv < 0) return rc;
  int64_t kd[2] = {k[0], 1}, sd[2] = {s[0], 1}, pd[4] = {pads[0], 0, pads[3], 0};
  rc = tc__ox_pool_node(x, n, dv, is_max, kd, sd, pd, (int)ceil_mode, (int)cip, &dp);
  if (rc != TH_OK || dp < 0) return rc;
  int64_t v5[5] = {xd[0], xd[1], tc__ox_t(x, dp)->shape[2], oh, ow};
  int out;
  rc = tc__ox_view(x, n, dp, 5, v5, &out);
  return rc != TH_OK || out < 0 ? rc : tc__ox_set_node(x, n, 0, out);
}

static int64_t tc__ox_gcd(int64_t a, int64_t b) {
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* Node y max-pooled along axis a (2 or 3) by an undilated window of k taps, stride s and pads p0,
 * p1, into *out. The kernels take windows of at most TC__OX_POOL_TAPS taps: a longer one is a chain
 * of stride-1 pools of that many taps (each widening the window by TC__OX_POOL_TAPS - 1) ending in
 * the strided rest, the padding all on the first. */
#define TC__OX_POOL_TAPS 64
static th_status tc__ox_max_chain(tc__ox *x, const Onnx__NodeProto *n, int y, int a, int64_t k,
                                  int64_t s, int64_t p0, int64_t p1, int *out) {
  int64_t rest = k;
  *out = -1;
  for (int first = 1; y >= 0; first = 0) {
    int last = rest <= TC__OX_POOL_TAPS;
    int64_t kt = last ? rest : TC__OX_POOL_TAPS, st = last ? s : 1;
    int64_t b = first ? p0 : 0, e = first ? p1 : 0;
    if (b >= kt || e >= kt)
      return tc__ox_unsupported(x, n, "a dilated window's padding %lld is not below its %lld taps",
                                (long long)(b > e ? b : e), (long long)kt);
    int64_t kk[2] = {a == 2 ? kt : 1, a == 2 ? 1 : kt}, ss[2] = {a == 2 ? st : 1, a == 2 ? 1 : st};
    int64_t pads[4] = {a == 2 ? b : 0, a == 2 ? 0 : b, a == 2 ? e : 0, a == 2 ? 0 : e};
    th_status rc = tc__ox_pool_node(x, n, y, 1, kk, ss, pads, 0, 0, &y);
    if (rc != TH_OK || last) {
      *out = y;
      return rc;
    }
    rest -= TC__OX_POOL_TAPS - 1;
  }
  return TH_OK;
}

/* Node *id [N, C, H, W] max-pooled along axis a (2: H, 3: W) by k taps dilated by d, with stride s
 * and begin padding p0, into o outputs. With g = gcd(s, d), the outputs o = r + m*P (P = d/g) of
 * one residue r read only the inputs of one phase modulo d, consecutive taps being consecutive
 * inputs of that phase: an undilated pool of stride s/g over the strided slice x[phase::d]. The P
 * pools' results [.., M, ..] are interleaved along the axis (concat on a new axis, reshape) and cut
 * to o. */
static th_status tc__ox_dilated_axis(tc__ox *x, const Onnx__NodeProto *n, int *id, int a, int64_t k,
                                     int64_t s, int64_t d, int64_t p0, int64_t o) {
  int64_t g = tc__ox_gcd(s, d), P = d / g, sp = s / g, M = (o + P - 1) / P;
  if (P > o) P = o; /* the residues from o on have no output */
  int64_t len = tc__ox_t(x, *id)->shape[a], dims[TC__OX_RANK];
  int parts[64], r4 = tc__ox_tdims(x, *id, dims);
  for (int64_t r = 0; r < P; r++) {
    int64_t t0 = r * s - p0, phi = ((t0 % d) + d) % d, q0 = (t0 - phi) / d;
    int64_t start = phi + (q0 > 0 ? q0 * d : 0), pa = q0 < 0 ? -q0 : 0;
    if (start >= len)
      return tc__ox_unsupported(x, n, "a dilated window's phase %lld starts past the input",
                                (long long)r);
    int y = tc_graph_slice(x->g, *id, a, (int)start, (int)len, (int)d), p;
    th_status rc = tc__ox_bind_node(x, n, NULL, y);
    if (rc != TH_OK) return rc;
    /* mr outputs of this residue; one short of M: its last repeated (cut off after the interleave)
     */
    int64_t mr = (o - r + P - 1) / P, ylen = (len - start + d - 1) / d;
    int64_t pb = (mr - 1) * sp + k - ylen - pa;
    if (pb < 0) pb = 0;
    rc = tc__ox_max_chain(x, n, y, a, k, sp, pa, pb, &p);
    if (rc != TH_OK || p < 0) return rc;
    if (tc__ox_t(x, p)->shape[a] != mr) {
      p = tc_graph_slice(x->g, p, a, 0, (int)mr, 1);
      rc = tc__ox_bind_node(x, n, NULL, p);
    }
    if (rc == TH_OK && mr < M) {
      int two[2] = {p, tc_graph_slice(x->g, p, a, (int)mr - 1, (int)mr, 1)};
      rc = tc__ox_bind_node(x, n, NULL, two[1]);
      if (rc == TH_OK) rc = tc__ox_bind_node(x, n, NULL, p = tc_graph_concat_axis(x->g, 2, two, a));
    }
    if (rc != TH_OK) return rc;
    if (P > 1) { /* [.., M, ..] -> [.., M, 1, ..] */
      int64_t v[TC__OX_RANK];
      for (int i = 0, j = 0; i < r4; i++) {
        v[j++] = i == a ? M : dims[i];
        if (i == a) v[j++] = 1;
      }
      rc = tc__ox_view(x, n, p, r4 + 1, v, &p);
      if (rc != TH_OK || p < 0) return rc;
    }
    parts[r] = p;
  }
  if (P == 1) {
    *id = parts[0];
    return TH_OK;
  }
  int c = tc_graph_concat_axis(x->g, (int)P, parts, a + 1);
  th_status rc = tc__ox_bind_node(x, n, NULL, c);
  if (rc != TH_OK) return rc;
  dims[a] = M * P;
  rc = tc__ox_view(x, n, c, r4, dims, &c);
  if (rc != TH_OK || c < 0) return rc;
  *id = M * P == o ? c : tc_graph_slice(x->g, c, a, 0, (int)o, 1);
  return tc__ox_bind_node(x, n, NULL, *id);
}

th_status tc__ox_dilated_max_pool(tc__ox *x, const Onnx__NodeProto *n, int in, const int64_t *k,
                                  const int64_t *s, const int64_t *dil, const int64_t *pads,
                                  const int64_t *o, int *out) {
  int id = in;
  th_status rc = TH_OK;
  *out = -1;
  for (int i = 1; rc == TH_OK && id >= 0 && i >= 0; i--) { /* W, then H: a box max is separable */
    int64_t taps = (k[i] - 1) / dil[i] + 1;
    rc = tc__ox_dilated_axis(x, n, &id, 2 + i, taps, s[i], dil[i], pads[i], o[i]);
  }
  if (rc == TH_OK && id >= 0) *out = id;
  return rc;
}
