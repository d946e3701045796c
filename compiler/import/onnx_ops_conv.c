/* The ONNX importer's convolution family and resampling, lowered onto kernels that exist on every
 * backend (issue 38; grouped and dilated Convs are conv2d / depthwise workloads of their groups and
 * dilations, onnx_ops.c): ConvTranspose is a conv with flipped, transposed weights over the input
 * spread by a 0/1 matrix per spatial axis (stride zeros, padding, cropping and output_padding in
 * one dense); Resize and Upsample are one dense per resized axis whose constant matrix holds the
 * interpolation weights (nearest with every rounding, linear, cubic, antialias, every coordinate
 * transformation; tf_crop_and_resize's extrapolation value as the dense's bias), since all of them
 * are separable; DepthToSpace and SpaceToDepth are a 6-D reshape, transpose and reshape. The cost:
 * a resampled axis of length L into L' costs L*L' multiply-adds per line instead of a few. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "onnx_int.h"
#include "workload.h"

/* Fills p with the weights of w as a conv of groups `group`: transposed = 0 reads w as a Conv's
 * [M, C/group, kh, kw]; transposed = 1 as a ConvTranspose's [C, M/group, kh, kw], flipped in both
 * spatial axes. */
static th_status tc__ox_expand(tc__ox *x, tc_param *p, const tc__oxv *w, int group,
                               const int64_t *dil, int transposed) {
  if (!x->opts->weights) return TH_OK;
  const tc__oxc *c = &w->c;
  int64_t M = p->shape[0], CP = p->shape[1], KH = p->shape[2], KW = p->shape[3];
  int64_t kh = c->ndim == 3 ? 1 : c->dims[2], kw = c->dims[c->ndim - 1];
  int64_t icg = transposed ? c->dims[0] / group : c->dims[1], ocg = M / group;
  float *d = th_arena_alloc(x->g->arena, (size_t)p->numel * sizeof(float));
  if (!d) return tc__ox_fail(x, TH_ERR_NOMEM, "out of memory expanding the weights '%s'", w->name);
  memset(d, 0, (size_t)p->numel * sizeof(float));
  for (int64_t m = 0; m < M; m++) {
    int64_t g = m / ocg, mi = m % ocg;
    for (int64_t ci = 0; ci < icg; ci++) {
      int64_t cd = CP == icg ? ci : g * icg + ci;
      for (int64_t i = 0; i < kh; i++)
        for (int64_t j = 0; j < kw; j++) {
          int64_t src = transposed
                            ? (((g * icg + ci) * ocg + mi) * kh + (kh - 1 - i)) * kw + (kw - 1 - j)
                            : ((m * icg + ci) * kh + i) * kw + j;
          d[((m * CP + cd) * KH + i * dil[0]) * KW + j * dil[1]] = c->f[src];
        }
    }
  }
  p->data = d;
  return TH_OK;
}

/* *id mapped along axis a by the constant matrix A [m, K] (K: *id's length there), plus bias [m]
 * when not NULL: one dense over the last axis, between two transposes for another axis. The
 * parameters are named <node>.<tag><axis>.weight / .bias; A and bias must live in the graph's
 * arena. */
th_status tc__ox_axis_map(tc__ox *x, const Onnx__NodeProto *n, int *id, int a, int m, float *A,
                          float *bias, const char *tag) {
  int r = x->g->nodes[*id].out.ndim, perm[TC_MAX_DIMS], cur = *id;
  for (int d = 0; d < r; d++) perm[d] = d;
  perm[a] = r - 1;
  perm[r - 1] = a;
  th_status rc = TH_OK;
  if (a != r - 1) {
    cur = tc_graph_transpose(x->g, cur, perm);
    rc = tc__ox_bind_node(x, n, NULL, cur);
    if (rc != TH_OK) return rc;
  }
  char nm[256], wn[300], bn[300];
  tc__ox_gname(x, n, nm, sizeof nm);
  snprintf(wn, sizeof wn, "%s.%s%d.weight", nm, tag, a);
  snprintf(bn, sizeof bn, "%s.%s%d.bias", nm, tag, a);
  cur = tc_graph_dense_named(x->g, wn, cur, m, wn, bias ? bn : NULL);
  rc = tc__ox_bind_node(x, n, NULL, cur);
  if (rc != TH_OK) return rc;
  if (x->opts->weights) {
    x->g->params[x->g->nodes[cur].weight].data = A;
    if (bias) x->g->params[x->g->nodes[cur].bias].data = bias;
  }
  if (a != r - 1) {
    cur = tc_graph_transpose(x->g, cur, perm);
    rc = tc__ox_bind_node(x, n, NULL, cur);
  }
  *id = cur;
  return rc;
}

/* A zeroed float array of cnt elements from the graph's arena (it holds parameter data). */
static float *tc__ox_zeros(tc__ox *x, int64_t cnt) {
  float *p = th_arena_alloc(x->g->arena, (size_t)(cnt > 0 ? cnt : 1) * sizeof(float));
  if (p) memset(p, 0, (size_t)(cnt > 0 ? cnt : 1) * sizeof(float));
  return p;
}

/* ---- ConvTranspose
 * ------------------------------------------------------------------------------------ */

/* A 2-value attribute into out (kept at its preset values when absent); 4 values give the last 2
 * (output_shape written with N and C). A 1-D one (one) has 1 value (3 with N and C): the width's.
 */
static th_status tc__ox_pair2(tc__ox *x, const Onnx__NodeProto *n, const char *name, int one,
                              int64_t *out, int *given) {
  int64_t a[8];
  int cnt, want = 2 - one;
  th_status rc = tc__ox_attr_ints(x, n, name, a, 8, &cnt);
  if (rc != TH_OK) return rc;
  if (given) *given = cnt >= 0;
  if (cnt < 0) return TH_OK;
  if (cnt != want && !(cnt == want + 2 && given))
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "%s must have %d values (%d-D)", name, want, want);
  if (!one) out[0] = a[cnt - 2];
  out[1] = a[cnt - 1];
  return TH_OK;
}

th_status tc__ox_c_conv_transpose(tc__ox *x, const Onnx__NodeProto *n) {
  tc__oxv *v = tc__ox_in(x, n, 0), *w = tc__ox_in(x, n, 1), *b = tc__ox_in(x, n, 2);
  if (!v || !w) return tc__ox_nfail(x, n, TH_ERR_INVALID, "the input or the weights are missing");
  if (w->kind != TC__OX_CONST || !w->c.fl || w->c.ndim < 3 || w->c.ndim > 4)
    return tc__ox_unsupported(
        x, n,
        "weights must be a constant 3-D or 4-D float tensor (3-D transposed convolutions are "
        "not mapped)");
  int in = -1, one = w->c.ndim == 3;
  th_status rc = tc__ox_tensor(x, n, v, &in);
  if (rc != TH_OK || in < 0) return rc;
  tc_tensor t = x->g->nodes[in].out;
  if (t.dtype != TC_DTYPE_F32 || t.ndim != 4 - one)
    return tc__ox_unsupported(x, n,
                              "only float32 %s inputs for %d-D weights (the input has %d "
                              "dimensions)",
                              one ? "NCL" : "NCHW", w->c.ndim, t.ndim);
  if (one) { /* [N, C, L] as [N, C, 1, L] */
    int s4[4] = {t.shape[0], t.shape[1], 1, t.shape[2]};
    in = tc_graph_reshape(x->g, in, 4, s4);
    rc = tc__ox_bind_node(x, n, NULL, in);
    if (rc != TH_OK) return rc;
    t = x->g->nodes[in].out;
  }
  int64_t group, C = w->c.dims[0], k[2] = {one ? 1 : w->c.dims[2], w->c.dims[w->c.ndim - 1]};
  int64_t s[2] = {1, 1}, dil[2] = {1, 1}, op[2] = {0, 0}, os[2] = {1, 0}, pads[4] = {0, 0, 0, 0};
  int has_os = 0, has_k = 0;
  int64_t ks[2] = {k[0], k[1]};
  rc = tc__ox_attr_i(x, n, "group", 1, &group);
  if (rc == TH_OK) rc = tc__ox_pair2(x, n, "kernel_shape", one, ks, NULL);
  if (rc == TH_OK) rc = tc__ox_pair2(x, n, "strides", one, s, NULL);
  if (rc == TH_OK) rc = tc__ox_pair2(x, n, "dilations", one, dil, NULL);
  if (rc == TH_OK) rc = tc__ox_pair2(x, n, "output_padding", one, op, NULL);
  if (rc == TH_OK) rc = tc__ox_pair2(x, n, "output_shape", one, os, &has_os);
  if (rc != TH_OK) return rc;
  (void)has_k;
  if (group < 1 || C != t.shape[1] || C % group != 0)
    return tc__ox_nfail(x, n, TH_ERR_INVALID,
                        "weights [%lld, %lld, ...] with group %lld do not fit %d channels",
                        (long long)C, (long long)w->c.dims[1], (long long)group, t.shape[1]);
  int64_t M = w->c.dims[1] * group;
  if (b && (b->kind != TC__OX_CONST || !b->c.fl || b->c.n != M))
    return tc__ox_unsupported(x, n, "the bias must be a constant of %lld floats", (long long)M);
  for (int d = 0; d < 2; d++) {
    if (ks[d] != k[d])
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "kernel_shape does not fit the weights");
    if (s[d] < 1 || s[d] > 1024 || dil[d] < 1 || dil[d] > 64 || op[d] < 0 ||
        (op[d] >= s[d] && op[d] >= dil[d]))
      return tc__ox_nfail(x, n, TH_ERR_INVALID,
                          "strides %lld (1..1024), dilations %lld (1..64), output_padding %lld "
                          "(0 .. below the stride or the dilation)",
                          (long long)s[d], (long long)dil[d], (long long)op[d]);
  }
  char ap[32];
  rc = tc__ox_attr_s(x, n, "auto_pad", "NOTSET", ap, sizeof ap);
  if (rc != TH_OK) return rc;
  int64_t ke[2], out[2];
  int same = strcmp(ap, "SAME_UPPER") == 0 || strcmp(ap, "SAME_LOWER") == 0;
  if (!same && strcmp(ap, "NOTSET") != 0 && strcmp(ap, "VALID") != 0)
    return tc__ox_nfail(x, n, TH_ERR_INVALID,
                        "auto_pad '%s' is not NOTSET, VALID, SAME_UPPER or SAME_LOWER", ap);
  if (strcmp(ap, "NOTSET") == 0 && !has_os) {
    int64_t p[8];
    int cnt;
    rc = tc__ox_attr_ints(x, n, "pads", p, 8, &cnt);
    if (rc != TH_OK) return rc;
    if (cnt >= 0 && cnt != 4 - 2 * one)
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "pads has %d values (%d for %d-D)", cnt,
                          4 - 2 * one, 2 - one);
    for (int i = 0; cnt > 0 && i < 4; i++) {
      int64_t pv = !one ? p[i] : i % 2 ? p[i / 2] : 0;
      if (pv < 0 || pv > TC_ONNX_MAX_DIM)
        return tc__ox_nfail(x, n, TH_ERR_INVALID, "pads value %lld", (long long)pv);
      pads[i] = pv;
    }
  }
  for (int d = 0; d < 2; d++) {
    int64_t len = t.shape[2 + d];
    ke[d] = (k[d] - 1) * dil[d] + 1;
    if (has_os || same) {
      int64_t want = has_os ? os[d] : len * s[d];
      int64_t total = s[d] * (len - 1) + op[d] + ke[d] - want;
      int upper = strcmp(ap, "SAME_UPPER") == 0;
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2); /* floor: total may be < 0 */
      pads[d] = upper ? half : total - half;
      pads[d + 2] = upper ? total - half : half;
    }
    out[d] = s[d] * (len - 1) + op[d] + ke[d] - pads[d] - pads[d + 2];
    if (out[d] < 1 || out[d] > TC_ONNX_MAX_DIM)
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "the output would be %lld wide", (long long)out[d]);
  }
  int dw = group == C && group == M;
  int64_t kg = dw ? group : 1;
  if ((double)M * (double)(C / kg) * (double)(ke[0] * ke[1]) > TC__OX_CONV_EXPAND_MAX)
    return tc__ox_unsupported(x, n, "the expanded weights pass %d elements",
                              TC__OX_CONV_EXPAND_MAX);
  /* the input spread: padding (ke - 1 - pad) before, (ke - 1 - pad + output_padding) after, and
   * stride - 1 zeros between the elements; a stride-1 axis with padding the conv takes needs none
   */
  int64_t cp[4] = {0, 0, 0, 0};
  int cur = in;
  for (int d = 0; d < 2; d++) {
    int64_t len = t.shape[2 + d], pb = ke[d] - 1 - pads[d], pe = ke[d] - 1 - pads[d + 2] + op[d];
    if (s[d] == 1 && pb >= 0 && pe >= 0 && pb < ke[d] && pe < ke[d]) {
      cp[d] = pb;
      cp[d + 2] = pe;
      continue;
    }
    int64_t L = out[d] + ke[d] - 1;
    if ((double)L * (double)len > TC__OX_CONV_EXPAND_MAX)
      return tc__ox_unsupported(x, n, "the spread of axis %d (%lld x %lld) passes %d elements",
                                2 + d, (long long)L, (long long)len, TC__OX_CONV_EXPAND_MAX);
    float *Z = tc__ox_zeros(x, L * len);
    if (!Z) return tc__ox_fail(x, TH_ERR_NOMEM, "out of memory");
    for (int64_t r = 0; r < L; r++) {
      int64_t j = r - pb;
      if (j >= 0 && j % s[d] == 0 && j / s[d] < len) Z[r * len + j / s[d]] = 1.0f;
    }
    rc = tc__ox_axis_map(x, n, &cur, 2 + d, (int)L, Z, NULL, "spread");
    if (rc != TH_OK) return rc;
  }
  char nm[256];
  int64_t ph = cp[0] > cp[2] ? cp[0] : cp[2], pw = cp[1] > cp[3] ? cp[1] : cp[3];
  int id = tc_graph_conv(x->g, tc__ox_gname(x, n, nm, sizeof nm), cur, (int)M, (int)ke[0],
                         (int)ke[1], 1, 1, (int)ph, (int)pw, (int)kg, b != NULL);
  rc = tc__ox_set_node(x, n, 0, id);
  if (rc != TH_OK) return rc;
  tc_node *nd = &x->g->nodes[id];
  nd->pt = (int)cp[0];
  nd->pl = (int)cp[1];
  nd->pb = (int)cp[2];
  nd->pr = (int)cp[3];
  nd->out.shape[2] = (int)out[0];
  nd->out.shape[3] = (int)out[1];
  rc = tc__ox_expand(x, &x->g->params[nd->weight], w, (int)group, dil, 1);
  if (rc == TH_OK && b) rc = tc__ox_bind_param(x, n, &x->g->nodes[id].bias, b, 0, 1.0f);
  if (rc != TH_OK || !one) return rc;
  int s3[3] = {t.shape[0], (int)M, (int)out[1]};
  return tc__ox_set_node(x, n, 0, tc_graph_reshape(x->g, id, 3, s3));
}

/* ---- Resize, Upsample
 * --------------------------------------------------------------------------------- */

enum { TC__OX_NEAREST, TC__OX_LINEAR, TC__OX_CUBIC };

/* How the resampling of one axis reads its input. */
typedef struct tc__ox_rs {
  int mode;               /* TC__OX_* */
  char ctm[32];           /* coordinate_transformation_mode */
  char nearest[32];       /* nearest_mode; "legacy" below opset 11 */
  double a;               /* cubic_coeff_a */
  int exclude, antialias; /* exclude_outside, antialias */
  float extrapolation;    /* tf_crop_and_resize outside the roi */
} tc__ox_rs;

/* The input coordinate of output coordinate o: lengths in -> out, scale, roi [start, end]. As
 * ONNX's reference, the output length in align_corners, pytorch_half_pixel and tf_crop_and_resize
 * is scale * in, which is not out when scales are given. */
static double tc__ox_rs_coord(const tc__ox_rs *rs, int64_t o, int64_t in, int64_t out, double scale,
                              double r0, double r1) {
  const char *m = rs->ctm;
  double of = scale * (double)in;
  if (strcmp(m, "align_corners") == 0) return of == 1 ? 0.0 : (double)o * (in - 1) / (of - 1);
  if (strcmp(m, "asymmetric") == 0) return o / scale;
  if (strcmp(m, "tf_half_pixel_for_nn") == 0) return (o + 0.5) / scale;
  if (strcmp(m, "pytorch_half_pixel") == 0) return of != 1 ? (o + 0.5) / scale - 0.5 : -0.5;
  if (strcmp(m, "tf_crop_and_resize") == 0)
    return of != 1 ? r0 * (in - 1) + o * (r1 - r0) * (in - 1) / (of - 1)
                   : 0.5 * (r0 + r1) * (in - 1);
  if (strcmp(m, "half_pixel_symmetric") == 0) {
    double adj = (double)out / of, off = (double)in / 2 * (1 - adj);
    return off + (o + 0.5) / scale - 0.5;
  }
  return (o + 0.5) / scale - 0.5; /* half_pixel */
}

/* The cubic kernel at distance t. */
static double tc__ox_cubic(double t, double A) {
  t = fabs(t);
  if (t <= 1) return ((A + 2) * t - (A + 3)) * t * t + 1;
  if (t < 2) return ((A * t - 5 * A) * t + 8 * A) * t - 4 * A;
  return 0;
}

/* Row o of the matrix resampling an axis of length in to out: weights into row[in], the bias
 * (tf_crop_and_resize outside the roi) into *bias. */
static void tc__ox_rs_row(const tc__ox_rs *rs, int64_t o, int64_t in, int64_t out, double scale,
                          double r0, double r1, float *row, float *bias) {
  double xo = tc__ox_rs_coord(rs, o, in, out, scale, r0, r1);
  *bias = 0.0f;
  if (strcmp(rs->ctm, "tf_crop_and_resize") == 0 && (xo < 0 || xo > (double)(in - 1))) {
    *bias = rs->extrapolation;
    return;
  }
  if (rs->mode == TC__OX_NEAREST) {
    double f = floor(xo);
    int64_t i;
    if (strcmp(rs->nearest, "floor") == 0)
      i = (int64_t)f;
    else if (strcmp(rs->nearest, "ceil") == 0)
      i = (int64_t)ceil(xo);
    else if (strcmp(rs->nearest, "round_prefer_ceil") == 0)
      i = (int64_t)floor(xo + 0.5);
    else if (strcmp(rs->nearest, "legacy") == 0)
      i = scale < 1 ? (int64_t)ceil(xo) : (int64_t)f;
    else
      i = xo - f == 0.5 ? (int64_t)f : (int64_t)floor(xo + 0.5); /* round_prefer_floor */
    i = i < 0 ? 0 : i > in - 1 ? in - 1 : i;
    row[i] = 1.0f;
    return;
  }
  /* taps i0 + start .. i0 + start + cnt - 1 of a tent (linear) or cubic kernel, stretched by
   * 1 / scale when antialiasing a downscale; edge taps clamp, or count 0 with exclude_outside */
  double s = rs->antialias && scale < 1 ? scale : 1.0, ratio = xo - floor(xo);
  int64_t i0 = (int64_t)floor(xo),
          start = (int64_t)floor((rs->mode == TC__OX_CUBIC ? -2 : -1) / s) + 1;
  int64_t cnt = 2 - 2 * start;
  double wsum = 0, wv[512];
  if (cnt > 512) cnt = 512;
  for (int64_t j = 0; j < cnt; j++) {
    double tj = ((double)(start + j) - ratio) * s;
    double wj =
        rs->mode == TC__OX_CUBIC ? tc__ox_cubic(tj, rs->a) : (fabs(tj) < 1 ? 1 - fabs(tj) : 0);
    int64_t idx = i0 + start + j;
    if (rs->exclude && (idx < 0 || idx >= in)) wj = 0;
    wv[j] = wj;
    wsum += wj;
  }
  int norm = rs->antialias || rs->exclude;
  for (int64_t j = 0; j < cnt; j++) {
    int64_t idx = i0 + start + j;
    idx = idx < 0 ? 0 : idx > in - 1 ? in - 1 : idx;
    row[idx] += (float)(norm && wsum != 0 ? wv[j] / wsum : wv[j]);
  }
}

/* The float values of constant input k (absent or empty: *cnt = 0). */
static th_status tc__ox_const_floats(tc__ox *x, const Onnx__NodeProto *n, int k, const float **f,
                                     int *cnt) {
  tc__oxv *v = tc__ox_in(x, n, k);
  *cnt = 0;
  *f = NULL;
  if (!v) return TH_OK;
  if (v->kind != TC__OX_CONST || !v->c.fl)
    return tc__ox_unsupported(x, n, "input %d must be a constant float tensor", k);
  if (v->c.n > TC_MAX_DIMS * 2)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "input %d has %lld values", k, (long long)v->c.n);
  *cnt = (int)v->c.n;
  *f = v->c.f;
  return TH_OK;
}

th_status tc__ox_c_resize(tc__ox *x, const Onnx__NodeProto *n) {
  int ups = strcmp(n->op_type, "Upsample") == 0, before = x->nunsup;
  int id = -1;
  tc__oxv *v = tc__ox_in(x, n, 0);
  if (!v) return tc__ox_nfail(x, n, TH_ERR_INVALID, "input 0 is missing");
  th_status rc = tc__ox_tensor(x, n, v, &id);
  if (rc != TH_OK || id < 0) return rc;
  tc_tensor t = x->g->nodes[id].out;
  int r = t.ndim;
  if (t.dtype != TC_DTYPE_F32 || r < 2)
    return tc__ox_unsupported(x, n, "only float32 inputs of rank 2 or more");
  tc__ox_rs rs;
  memset(&rs, 0, sizeof rs);
  char mode[32], kar[32];
  int64_t excl = 0, aa = 0;
  float a = -0.75f;
  rc = tc__ox_attr_s(x, n, "mode", "nearest", mode, sizeof mode);
  int modern = !ups && x->opset >= 11;
  if (rc == TH_OK)
    rc = tc__ox_attr_s(x, n, "coordinate_transformation_mode", modern ? "half_pixel" : "asymmetric",
                       rs.ctm, sizeof rs.ctm);
  if (rc == TH_OK)
    rc = tc__ox_attr_s(x, n, "nearest_mode", modern ? "round_prefer_floor" : "legacy", rs.nearest,
                       sizeof rs.nearest);
  if (rc == TH_OK) rc = tc__ox_attr_f(x, n, "cubic_coeff_a", -0.75f, &a);
  if (rc == TH_OK) rc = tc__ox_attr_i(x, n, "exclude_outside", 0, &excl);
  if (rc == TH_OK) rc = tc__ox_attr_f(x, n, "extrapolation_value", 0.0f, &rs.extrapolation);
  if (rc == TH_OK) rc = tc__ox_attr_i(x, n, "antialias", 0, &aa);
  if (rc == TH_OK) rc = tc__ox_attr_s(x, n, "keep_aspect_ratio_policy", "stretch", kar, sizeof kar);
  if (rc != TH_OK) return rc;
  rs.a = a;
  rs.exclude = excl != 0;
  rs.antialias = aa != 0;
  if (strcmp(mode, "nearest") == 0)
    rs.mode = TC__OX_NEAREST;
  else if (strcmp(mode, "linear") == 0 || strcmp(mode, "bilinear") == 0)
    rs.mode = TC__OX_LINEAR;
  else if (strcmp(mode, "cubic") == 0 || strcmp(mode, "bicubic") == 0)
    rs.mode = TC__OX_CUBIC;
  else
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "mode '%s' is not nearest, linear or cubic", mode);
  static const char *const ctms[] = {
      "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",  "align_corners",
      "asymmetric", "tf_crop_and_resize",   "tf_half_pixel_for_nn"};
  static const char *const nms[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil",
                                    "legacy"};
  int ok = 0;
  for (size_t i = 0; i < sizeof ctms / sizeof ctms[0]; i++) ok |= strcmp(rs.ctm, ctms[i]) == 0;
  if (!ok)
    return tc__ox_nfail(x, n, TH_ERR_INVALID,
                        "coordinate_transformation_mode '%s' is not half_pixel, "
                        "half_pixel_symmetric, pytorch_half_pixel, align_corners, asymmetric, "
                        "tf_crop_and_resize or tf_half_pixel_for_nn",
                        rs.ctm);
  ok = 0;
  for (size_t i = 0; i < sizeof nms / sizeof nms[0]; i++) ok |= strcmp(rs.nearest, nms[i]) == 0;
  if (!ok || (modern && strcmp(rs.nearest, "legacy") == 0))
    return tc__ox_nfail(x, n, TH_ERR_INVALID,
                        "nearest_mode '%s' is not round_prefer_floor, round_prefer_ceil, floor or "
                        "ceil",
                        rs.nearest);
  int64_t axes[TC_MAX_DIMS];
  int nax = -1;
  rc = tc__ox_attr_ints(x, n, "axes", axes, TC_MAX_DIMS, &nax);
  if (rc != TH_OK) return rc;
  if (nax < 0) {
    nax = r;
    for (int d = 0; d < r; d++) axes[d] = d;
  }
  for (int i = 0; i < nax; i++) {
    int ax;
    rc = tc__ox_axis(x, n, axes[i], r, &ax);
    if (rc != TH_OK) return rc;
    axes[i] = ax;
  }
  /* scales: Upsample-7's attribute; Upsample-9 and Resize-10 input 1; Resize-11+ input 2 (sizes 3,
   * roi 1) */
  const float *sc = NULL, *roi = NULL;
  float scbuf[TC_MAX_DIMS];
  int nsc = 0, nroi = 0, nsz = -1;
  int64_t sz[TC_MAX_DIMS * 2];
  if (ups && x->opset < 9) {
    const Onnx__AttributeProto *at = tc__ox_attr(n, "scales");
    if (!at || at->n_floats != (size_t)r)
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "attribute scales must have %d values", r);
    for (int d = 0; d < r; d++) scbuf[d] = at->floats[d];
    sc = scbuf;
    nsc = r;
  } else {
    rc = tc__ox_const_floats(x, n, modern ? 2 : 1, &sc, &nsc);
    if (rc == TH_OK && modern) rc = tc__ox_const_floats(x, n, 1, &roi, &nroi);
    if (rc == TH_OK && modern) rc = tc__ox_const_ints(x, n, 3, sz, TC_MAX_DIMS * 2, &nsz);
    if (rc != TH_OK || TC__OX_REPORTED(x, before)) return rc;
  }
  int use_sizes = nsc == 0 && nsz > 0;
  if ((use_sizes ? nsz : nsc) != nax || (nsc > 0 && nsz > 0))
    return tc__ox_nfail(x, n, TH_ERR_INVALID,
                        "give scales or sizes (not both), %d values (one per resized axis)", nax);
  if (nroi && nroi != 2 * nax && nroi != 2 * r)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "roi must have %d values", 2 * nax);
  if (strcmp(kar, "stretch") != 0 && strcmp(kar, "not_larger") != 0 &&
      strcmp(kar, "not_smaller") != 0)
    return tc__ox_nfail(x, n, TH_ERR_INVALID,
                        "keep_aspect_ratio_policy '%s' is not stretch, not_larger or not_smaller",
                        kar);
  double scale[TC_MAX_DIMS], kscale = 0;
  int64_t out[TC_MAX_DIMS];
  if (use_sizes && strcmp(kar, "stretch") != 0) {
    int larger = strcmp(kar, "not_smaller") == 0;
    for (int i = 0; i < nax; i++) {
      double q = (double)sz[i] / t.shape[axes[i]];
      if (i == 0 || (larger ? q > kscale : q < kscale)) kscale = q;
    }
  }
  for (int i = 0; i < nax; i++) {
    int64_t in = t.shape[axes[i]];
    if (use_sizes) {
      out[i] = kscale > 0 ? (int64_t)floor(kscale * in + 0.5) : sz[i];
      scale[i] = kscale > 0 ? kscale : (double)out[i] / in;
    } else {
      scale[i] = sc[i];
      out[i] = (int64_t)floor((double)sc[i] * in);
    }
    if (!(scale[i] > 0) || out[i] < 1 || out[i] > TC_ONNX_MAX_DIM)
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "axis %d: scale %g gives %lld elements",
                          (int)axes[i], scale[i], (long long)out[i]);
  }
  for (int i = 0; i < nax; i++) {
    int ax = (int)axes[i];
    int64_t in = t.shape[ax];
    double r0 = 0, r1 = 1;
    if (nroi) {
      int j = nroi == 2 * r ? ax : i, h = nroi / 2;
      r0 = roi[j];
      r1 = roi[j + h];
    }
    if ((double)in * (double)out[i] > TC__OX_CONV_EXPAND_MAX)
      return tc__ox_unsupported(x, n, "axis %d: the %lld x %lld matrix passes %d elements", ax,
                                (long long)out[i], (long long)in, TC__OX_CONV_EXPAND_MAX);
    float *A = tc__ox_zeros(x, out[i] * in), *bias = tc__ox_zeros(x, out[i]);
    if (!A || !bias) return tc__ox_fail(x, TH_ERR_NOMEM, "out of memory");
    int ident = out[i] == in, biased = 0;
    for (int64_t o = 0; o < out[i]; o++) {
      tc__ox_rs_row(&rs, o, in, out[i], scale[i], r0, r1, A + o * in, bias + o);
      biased |= bias[o] != 0.0f;
      for (int64_t k = 0; ident && k < in; k++) ident = A[o * in + k] == (k == o ? 1.0f : 0.0f);
    }
    if (ax == 0 && use_sizes && sz[i] == x->file_batch) continue; /* the file's batch, kept */
    if (ident && !biased) continue;
    if (ax == 0) return tc__ox_unsupported(x, n, "it resizes the batch axis");
    rc = tc__ox_axis_map(x, n, &id, ax, (int)out[i], A, biased ? bias : NULL, "resize");
    if (rc != TH_OK) return rc;
  }
  return tc__ox_set_node(x, n, 0, id);
}

/* ---- DepthToSpace, SpaceToDepth
 * ---------------------------------------------------------------------- */

th_status tc__ox_c_depth_to_space(tc__ox *x, const Onnx__NodeProto *n) {
  int to_space = strcmp(n->op_type, "DepthToSpace") == 0, id = -1;
  tc__oxv *v = tc__ox_in(x, n, 0);
  if (!v) return tc__ox_nfail(x, n, TH_ERR_INVALID, "input 0 is missing");
  th_status rc = tc__ox_tensor(x, n, v, &id);
  if (rc != TH_OK || id < 0) return rc;
  tc_tensor t = x->g->nodes[id].out;
  int64_t bs;
  char mode[16];
  rc = tc__ox_attr_i(x, n, "blocksize", 0, &bs);
  if (rc == TH_OK) rc = tc__ox_attr_s(x, n, "mode", "DCR", mode, sizeof mode);
  if (rc != TH_OK) return rc;
  if (t.ndim != 4 || t.dtype != TC_DTYPE_F32)
    return tc__ox_unsupported(x, n, "only float32 NCHW inputs");
  int crd = strcmp(mode, "CRD") == 0;
  if (!crd && strcmp(mode, "DCR") != 0)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "mode '%s' is not DCR or CRD", mode);
  int N = t.shape[0], C = t.shape[1], H = t.shape[2], W = t.shape[3], b = (int)bs;
  if (bs < 1 || bs > 1024 || (to_space && C % (b * b)) || (!to_space && (H % b || W % b)))
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "blocksize %lld (1..1024) must divide %s",
                        (long long)bs, to_space ? "the channels twice" : "the height and width");
  int s6[6], perm[6], s4[4];
  if (to_space && !crd) { /* [N, b, b, C', H, W] -> [N, C', H, b, W, b] */
    int a[6] = {N, b, b, C / (b * b), H, W}, p[6] = {0, 3, 4, 1, 5, 2};
    memcpy(s6, a, sizeof a);
    memcpy(perm, p, sizeof p);
  } else if (to_space) { /* [N, C', b, b, H, W] -> [N, C', H, b, W, b] */
    int a[6] = {N, C / (b * b), b, b, H, W}, p[6] = {0, 1, 4, 2, 5, 3};
    memcpy(s6, a, sizeof a);
    memcpy(perm, p, sizeof p);
  } else { /* [N, C, H', b, W', b] -> [N, b, b, C, H', W'] */
    int a[6] = {N, C, H / b, b, W / b, b}, p[6] = {0, 3, 5, 1, 2, 4};
    memcpy(s6, a, sizeof a);
    memcpy(perm, p, sizeof p);
  }
  if (to_space) {
    int a[4] = {N, C / (b * b), H * b, W * b};
    memcpy(s4, a, sizeof a);
  } else {
    int a[4] = {N, C * b * b, H / b, W / b};
    memcpy(s4, a, sizeof a);
  }
  id = tc_graph_reshape(x->g, id, 6, s6);
  rc = tc__ox_bind_node(x, n, NULL, id);
  if (rc != TH_OK) return rc;
  id = tc_graph_transpose(x->g, id, perm);
  rc = tc__ox_bind_node(x, n, NULL, id);
  if (rc != TH_OK) return rc;
  return tc__ox_set_node(x, n, 0, tc_graph_reshape(x->g, id, 4, s4));
}

/* ---- PRelu, GlobalMaxPool
 * ----------------------------------------------------------------------------- */

/* PRelu: x >= 0 ? x : slope * x. One slope is a leaky relu; others are relu(x) + slope * (x -
 * relu(x)) with the slope broadcast to x (numpy's rules; opset 6's slope [C] is per channel). */
th_status tc__ox_c_prelu(tc__ox *x, const Onnx__NodeProto *n) {
  tc__oxv *v = tc__ox_in(x, n, 0), *sv = tc__ox_in(x, n, 1);
  if (!v || !sv) return tc__ox_nfail(x, n, TH_ERR_INVALID, "needs X and slope");
  int a = -1, sl = -1;
  th_status rc = tc__ox_tensor(x, n, v, &a);
  if (rc != TH_OK || a < 0) return rc;
  tc_tensor t = x->g->nodes[a].out;
  if (t.dtype != TC_DTYPE_F32) return tc__ox_unsupported(x, n, "only float32 inputs");
  if (sv->kind == TC__OX_CONST && sv->c.fl && sv->c.n == 1)
    return tc__ox_set_node(x, n, 0, tc_graph_math(x->g, a, TC_UNARY_LEAKY_RELU, sv->c.f[0], 0));
  rc = tc__ox_tensor(x, n, sv, &sl);
  if (rc != TH_OK || sl < 0) return rc;
  tc_tensor st = x->g->nodes[sl].out;
  if (x->opset < 7 && st.ndim == 1 && t.ndim > 2 && st.shape[0] == t.shape[1]) {
    int sh[TC_MAX_DIMS];
    sh[0] = st.shape[0];
    for (int d = 1; d < t.ndim - 1; d++) sh[d] = 1;
    sl = tc_graph_reshape(x->g, sl, t.ndim - 1, sh);
    rc = tc__ox_bind_node(x, n, NULL, sl);
    if (rc != TH_OK) return rc;
  }
  int r = tc_graph_relu(x->g, a);
  rc = tc__ox_bind_node(x, n, NULL, r);
  int d = rc == TH_OK ? tc_graph_sub(x->g, a, r) : -1;
  if (rc == TH_OK) rc = tc__ox_bind_node(x, n, NULL, d);
  int m = rc == TH_OK ? tc_graph_mul(x->g, d, sl) : -1;
  if (rc == TH_OK) rc = tc__ox_bind_node(x, n, NULL, m);
  if (rc != TH_OK) return rc;
  if (x->g->nodes[m].out.ndim != t.ndim)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "the slope does not broadcast to X");
  return tc__ox_set_node(x, n, 0, tc_graph_add(x->g, r, m));
}

/* GlobalMaxPool of an [N, C, H, W] (or [N, C, L]) map: a max pool whose window is the map. */
th_status tc__ox_c_global_max_pool(tc__ox *x, const Onnx__NodeProto *n) {
  tc__oxv *v = tc__ox_in(x, n, 0);
  if (!v) return tc__ox_nfail(x, n, TH_ERR_INVALID, "input 0 is missing");
  int a = -1;
  th_status rc = tc__ox_tensor(x, n, v, &a);
  if (rc != TH_OK || a < 0) return rc;
  tc_tensor t = x->g->nodes[a].out;
  if (t.dtype != TC_DTYPE_F32 || (t.ndim != 3 && t.ndim != 4))
    return tc__ox_unsupported(x, n, "only float32 NCL or NCHW maps");
  if (t.ndim == 3) {
    int s4[4] = {t.shape[0], t.shape[1], 1, t.shape[2]};
    a = tc_graph_reshape(x->g, a, 4, s4);
    rc = tc__ox_bind_node(x, n, NULL, a);
    if (rc != TH_OK) return rc;
  }
  const tc_tensor *t4 = &x->g->nodes[a].out;
  int kh = t4->shape[2], kw = t4->shape[3];
  if (kh > 1024 || kw > 1024)
    return tc__ox_unsupported(x, n, "a %dx%d map (windows up to 1024)", kh, kw);
  int id = tc_graph_max_pool(x->g, a, 1, 1, 0, 0);
  rc = tc__ox_bind_node(x, n, NULL, id);
  if (rc != TH_OK) return rc;
  tc_node *nd = &x->g->nodes[id];
  nd->kh = kh;
  nd->kw = kw;
  nd->out.shape[2] = nd->out.shape[3] = 1;
  if (t.ndim == 4) return tc__ox_set_node(x, n, 0, id);
  int s3[3] = {t.shape[0], t.shape[1], 1};
  return tc__ox_set_node(x, n, 0, tc_graph_reshape(x->g, id, 3, s3));
}

/* ---- Pad that no Conv or AveragePool takes
 * ------------------------------------------------------------ */

th_status tc__ox_pad_maps(tc__ox *x, const Onnx__NodeProto *n, int a, const int64_t *p,
                          const char *mode, float val) {
  tc_tensor t = x->g->nodes[a].out;
  int r = t.ndim, cst = strcmp(mode, "constant") == 0;
  if (r < 2) return tc__ox_unsupported(x, n, "a Pad of a 1-D tensor");
  for (int d = 0; d < r; d++) {
    int64_t pb = p[d], pe = p[d + r], L = t.shape[d], Lo = L + pb + pe;
    if (pb == 0 && pe == 0) continue;
    if (d == 0) return tc__ox_unsupported(x, n, "it pads the batch axis");
    if (Lo < 1 || Lo > TC_ONNX_MAX_DIM)
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "axis %d would be %lld long", d, (long long)Lo);
    if (strcmp(mode, "reflect") == 0 && L > 1 && (pb >= L || pe >= L))
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "%s pads of %lld and %lld on an axis of %lld", mode,
                          (long long)pb, (long long)pe, (long long)L);
    if ((double)Lo * (double)L > TC__OX_CONV_EXPAND_MAX)
      return tc__ox_unsupported(x, n, "axis %d: the %lld x %lld matrix passes %d elements", d,
                                (long long)Lo, (long long)L, TC__OX_CONV_EXPAND_MAX);
    float *A = tc__ox_zeros(x, Lo * L), *bias = tc__ox_zeros(x, Lo);
    if (!A || !bias) return tc__ox_fail(x, TH_ERR_NOMEM, "out of memory");
    int biased = 0;
    for (int64_t o = 0; o < Lo; o++) {
      int64_t s = o - pb;
      if (s < 0 || s >= L) {
        if (cst) {
          bias[o] = val;
          biased |= val != 0.0f;
          continue;
        }
        if (strcmp(mode, "edge") == 0)
          s = s < 0 ? 0 : L - 1;
        else if (strcmp(mode, "wrap") == 0)
          s = ((s % L) + L) % L;
        else
          s = L == 1 ? 0 : s < 0 ? -s : 2 * (L - 1) - s; /* reflect */
      }
      A[o * L + s] = 1.0f;
    }
    th_status rc = tc__ox_axis_map(x, n, &a, d, (int)Lo, A, biased ? bias : NULL, "pad");
    if (rc != TH_OK) return rc;
  }
  return tc__ox_set_node(x, n, 0, a);
}
