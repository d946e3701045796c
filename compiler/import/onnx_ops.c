/* The ONNX importer's converters: one function per op type, mapping a node onto the graph builders
 * (graph.h) so that an imported network looks like the zoo's (conv/bn/relu/pool/dense for CNNs;
 * dense, matmul, softmax_ex, layer_norm, gelu, views for transformers) and the same passes and
 * templates apply. Each converter picks the behaviour of the model's opset where ONNX changed an
 * op, and reports what it cannot map as unsupported with the reason (the import goes on and lists
 * every such node). Nodes whose inputs are all constants never get here: onnx_fold.c evaluates
 * them. This file holds the helpers the converters share, the CNN ops (Conv, BatchNormalization,
 * pools, Pad) and the table from op type to converter; the other families are in onnx_ops_*.c. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "onnx_int.h"
#include "workload.h"

/* ---- helpers
 * ------------------------------------------------------------------------------------------ */

const tc_tensor *tc__ox_t(tc__ox *x, int id) {
  return &x->g->nodes[id].out;
}

/* Input k as a graph node (constants materialised): *id = -1 when it was reported unsupported. */
th_status tc__ox_node_in(tc__ox *x, const Onnx__NodeProto *n, int k, int *id) {
  tc__oxv *v = tc__ox_in(x, n, k);
  *id = -1;
  if (!v) return tc__ox_nfail(x, n, TH_ERR_INVALID, "input %d is missing", k);
  return tc__ox_tensor(x, n, v, id);
}

/* A float input node: reports int64 ones (the graph's arithmetic is float32). */
th_status tc__ox_float_in(tc__ox *x, const Onnx__NodeProto *n, int k, int *id) {
  th_status rc = tc__ox_node_in(x, n, k, id);
  if (rc != TH_OK || *id < 0) return rc;
  if (tc__ox_t(x, *id)->dtype != TC_DTYPE_F32) {
    *id = -1;
    return tc__ox_unsupported(
        x, n, "input %d is an int64 tensor at run time (only float32 arithmetic)", k);
  }
  return TH_OK;
}

/* Input k as a float32 or int64 node (an int64 constant materialised as tc__ox_int_tensor's). */
static th_status tc__ox_num_in(tc__ox *x, const Onnx__NodeProto *n, int k, int *id) {
  tc__oxv *v = tc__ox_in(x, n, k);
  *id = -1;
  if (v && v->kind == TC__OX_CONST && !v->c.fl && v->node < 0)
    return tc__ox_int_tensor(x, n, v, id);
  return tc__ox_node_in(x, n, k, id);
}

th_status tc__ox_num_ins(tc__ox *x, const Onnx__NodeProto *n, int k0, int k1, int *a, int *b) {
  *b = -1;
  th_status rc = tc__ox_num_in(x, n, k0, a);
  if (rc == TH_OK && *a >= 0) rc = tc__ox_num_in(x, n, k1, b);
  if (rc != TH_OK || *a < 0 || *b < 0) {
    *a = *b = -1;
    return rc;
  }
  int da = tc__ox_t(x, *a)->dtype, db = tc__ox_t(x, *b)->dtype;
  if (da != db) {
    *a = *b = -1;
    return tc__ox_unsupported(x, n, "inputs %d and %d are %s and %s (one dtype)", k0, k1,
                              tc_dtype_name(da), tc_dtype_name(db));
  }
  return TH_OK;
}

/* x * alpha + shift, merged into a producing affine (bert's mask: (1 - m) * min is one affine). */
int tc__ox_affine(tc__ox *x, int id, float alpha, float shift) {
  const tc_node *nd = &x->g->nodes[id];
  if (alpha == 1.0f && shift == 0.0f) return id;
  if (nd->op == TC_OP_AFFINE)
    return tc_graph_affine(x->g, nd->inputs[0], nd->alpha * alpha, nd->shift * alpha + shift);
  return tc_graph_affine(x->g, id, alpha, shift);
}

/* Dims of a graph tensor as int64. */
int tc__ox_tdims(tc__ox *x, int id, int64_t *dims) {
  const tc_tensor *t = tc__ox_t(x, id);
  for (int d = 0; d < t->ndim; d++) dims[d] = t->shape[d];
  return t->ndim;
}

/* Reshapes node id to dims (no node when they are its own); reports a rank or size the graph cannot
 * hold. */
th_status tc__ox_reshape_node(tc__ox *x, const Onnx__NodeProto *n, int id, const int64_t *dims,
                              int r, int *out) {
  const tc_tensor *t = tc__ox_t(x, id);
  *out = -1;
  if (r < 1 || r > TC_MAX_DIMS)
    return tc__ox_unsupported(x, n, "the result has %d dimensions (the graph holds 1..%d)", r,
                              TC_MAX_DIMS);
  int shape[TC_MAX_DIMS], same = r == t->ndim;
  for (int d = 0; d < r; d++) {
    if (dims[d] < 1 || dims[d] > INT_MAX)
      return tc__ox_unsupported(x, n, "dimension %d is %lld", d, (long long)dims[d]);
    shape[d] = (int)dims[d];
    same = same && shape[d] == t->shape[d];
  }
  *out = same ? id : tc_graph_reshape(x->g, id, r, shape);
  return tc__ox_bind_node(x, n, NULL, *out);
}

/* A float weight behind value v: a constant (leading dims of 1 dropped to make it 2-D when want2d),
 * or the 2-D transpose of a materialised constant (*trans toggled). Copies the view into *w. */
int tc__ox_weight(tc__ox *x, const tc__oxv *v, tc__oxv *w, int *trans) {
  if (v->kind == TC__OX_CONST && v->c.fl && v->c.ndim >= 2) {
    for (int d = 0; d < v->c.ndim - 2; d++)
      if (v->c.dims[d] != 1) return 0;
    *w = *v;
    w->c.ndim = 2;
    w->c.dims[0] = v->c.dims[v->c.ndim - 2];
    w->c.dims[1] = v->c.dims[v->c.ndim - 1];
    return 1;
  }
  if (v->kind != TC__OX_NODE) return 0;
  const tc_node *nd = &x->g->nodes[v->node];
  if (nd->op != TC_OP_TRANSPOSE || nd->out.ndim != 2 || nd->perm[0] != 1) return 0;
  const tc_node *c = &x->g->nodes[nd->inputs[0]];
  if (c->op != TC_OP_CONST || c->weight < 0 || c->weight >= x->pcap || x->pinfo[c->weight].mat < 0)
    return 0;
  const tc__oxv *m = &x->vals[x->pinfo[c->weight].mat];
  if (m->c.ndim != 2) return 0;
  *w = *m;
  *trans = !*trans;
  return 1;
}

/* ---- CNN ops
 * -----------------------------------------------------------------------------------------------
 */

/* A 2-value window attribute (kernel_shape, strides) into out, which keeps its preset values when
 * the attribute is absent; both must end up in 1..1024. A 1-D window (one) has 1 value, the
 * width's (its height is 1). */
static th_status tc__ox_pair(tc__ox *x, const Onnx__NodeProto *n, const char *name, int one,
                             int64_t *out) {
  int64_t a[8];
  int cnt;
  th_status rc = tc__ox_attr_ints(x, n, name, a, 8, &cnt);
  if (rc != TH_OK) return rc;
  if (cnt >= 0 && cnt != 2 - one)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "%s must have %d values (%d-D)", name, 2 - one,
                        2 - one);
  if (cnt == 1 && one) {
    out[0] = 1;
    out[1] = a[0];
  } else if (cnt == 2) {
    out[0] = a[0];
    out[1] = a[1];
  }
  if (out[0] < 1 || out[1] < 1 || out[0] > 1024 || out[1] > 1024)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "%s %lldx%lld (1..1024)", name, (long long)out[0],
                        (long long)out[1]);
  return TH_OK;
}

/* The window attributes of Conv and the pools: kernel (given, or from the attribute), strides,
 * dilations and pads; pads of a pending zero Pad on the input are added. With dil (Conv), dil gets
 * the dilations and k the dilated kernel's extent, (k - 1) * d + 1; without, dilations must be 1.
 * *in = the input node; a 1-D window's [N, C, L] input is viewed as [N, C, 1, L] (the caller views
 * its result back). */
static th_status tc__ox_window(tc__ox *x, const Onnx__NodeProto *n, int64_t *k, int64_t *s,
                               int64_t *dil, int64_t *pads, int *in, int *padded) {
  tc__oxv *v = tc__ox_in(x, n, 0);
  *in = -1;
  *padded = 0;
  if (!v) return tc__ox_nfail(x, n, TH_ERR_INVALID, "input 0 is missing");
  int id = -1;
  if (v->kind == TC__OX_PAD) {
    id = v->node;
    *padded = 1;
  } else {
    th_status rc = tc__ox_float_in(x, n, 0, &id);
    if (rc != TH_OK || id < 0) return rc;
  }
  const tc_tensor *t = tc__ox_t(x, id);
  int one = t->ndim == 3;
  if (one && *padded) return tc__ox_unsupported(x, n, "a Pad before a 1-D window");
  if (one) {
    int s4[4] = {t->shape[0], t->shape[1], 1, t->shape[2]};
    id = tc_graph_reshape(x->g, id, 4, s4);
    th_status rc = tc__ox_bind_node(x, n, NULL, id);
    if (rc != TH_OK) return rc;
    t = tc__ox_t(x, id);
  } else if (t->ndim != 4) {
    return tc__ox_unsupported(
        x, n, "only 1-D and 2-D windows over NCL/NCHW maps (the input has %d dimensions)", t->ndim);
  }
  int64_t a[8], hw[2] = {t->shape[2], t->shape[3]};
  int cnt;
  th_status rc = tc__ox_attr_ints(x, n, "kernel_shape", a, 8, &cnt);
  if (rc != TH_OK) return rc;
  if (cnt >= 0 && k[0] > 0 && cnt == 2 - one &&
      (one ? a[0] != k[1] : (a[0] != k[0] || a[1] != k[1])))
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "kernel_shape does not fit the weights");
  s[0] = s[1] = 1;
  rc = tc__ox_pair(x, n, "kernel_shape", one, k);
  if (rc == TH_OK) rc = tc__ox_pair(x, n, "strides", one, s);
  if (rc != TH_OK) return rc;
  rc = tc__ox_attr_ints(x, n, "dilations", a, 8, &cnt);
  if (rc != TH_OK) return rc;
  if (cnt >= 0 && cnt != 2 - one)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "dilations must have %d values", 2 - one);
  if (one && cnt == 1) {
    a[1] = a[0];
    a[0] = 1;
    cnt = 2;
  }
  for (int i = 0; i < cnt; i++) {
    if (a[i] < 1 || a[i] > 64)
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "dilations %lld (1..64)", (long long)a[i]);
    if (a[i] != 1 && !dil)
      return tc__ox_unsupported(x, n, "attribute dilations = %lld (only 1)", (long long)a[i]);
  }
  for (int i = 0; dil && i < 2; i++) {
    dil[i] = cnt == 2 ? a[i] : 1;
    k[i] = (k[i] - 1) * dil[i] + 1;
  }
  char ap[32];
  rc = tc__ox_attr_s(x, n, "auto_pad", "NOTSET", ap, sizeof ap);
  if (rc == TH_OK && one && strcmp(ap, "NOTSET") == 0) { /* pads [begin, end] of the width */
    rc = tc__ox_attr_ints(x, n, "pads", a, 8, &cnt);
    if (rc == TH_OK && cnt >= 0 && cnt != 2)
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "pads has %d values (2 for 1-D)", cnt);
    for (int i = 0; i < 4; i++) pads[i] = cnt == 2 && i % 2 ? a[i / 2] : 0;
    for (int i = 0; rc == TH_OK && i < 4; i++)
      if (pads[i] < 0 || pads[i] > TC_ONNX_MAX_DIM)
        return tc__ox_nfail(x, n, TH_ERR_INVALID, "pads value %lld", (long long)pads[i]);
  } else if (rc == TH_OK) {
    rc = tc__ox_window_pads(x, n, hw, k, s, pads);
  }
  if (rc != TH_OK) return rc;
  if (*padded)
    for (int i = 0; i < 4; i++) pads[i] += v->pads[i];
  for (int i = 0; i < 4; i++)
    if (pads[i] >= k[i % 2])
      return tc__ox_unsupported(x, n, "padding %lld is not smaller than the kernel",
                                (long long)pads[i]);
  *in = id;
  return TH_OK;
}

/* Output size of a window: floor, or torch's ceil mode (the last window starts inside the input).
 */
static int64_t tc__ox_out_dim(int64_t size, int64_t k, int64_t s, int64_t p0, int64_t p1,
                              int ceil_mode) {
  int64_t span = size + p0 + p1 - k;
  if (span < 0) return 0;
  int64_t o = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (o - 1) * s >= size + p0) o--;
  return o;
}

void tc__ox_set_window(tc_node *nd, const int64_t *k, const int64_t *s, const int64_t *pads,
                       int64_t oh, int64_t ow) {
  nd->kh = (int)k[0];
  nd->kw = (int)k[1];
  nd->sh = (int)s[0];
  nd->sw = (int)s[1];
  nd->pt = (int)pads[0];
  nd->pl = (int)pads[1];
  nd->pb = (int)pads[2];
  nd->pr = (int)pads[3];
  nd->out.shape[2] = (int)oh;
  nd->out.shape[3] = (int)ow;
}

/* A 1-D window's [N, C, 1, L] result (node id) viewed back as n's [N, C, L] output. */
static th_status tc__ox_flat_window(tc__ox *x, const Onnx__NodeProto *n, int id) {
  const tc_tensor *t = tc__ox_t(x, id);
  int s3[3] = {t->shape[0], t->shape[1], t->shape[3]};
  return tc__ox_set_node(x, n, 0, tc_graph_reshape(x->g, id, 3, s3));
}

static th_status tc__ox_c_conv(tc__ox *x, const Onnx__NodeProto *n) {
  tc__oxv *w = tc__ox_in(x, n, 1), *b = tc__ox_in(x, n, 2);
  if (!w) return tc__ox_nfail(x, n, TH_ERR_INVALID, "the weights are missing");
  if (w->kind == TC__OX_CONST && w->c.fl && w->c.ndim == 5) return tc__ox_conv3d(x, n);
  if (w->kind != TC__OX_CONST || !w->c.fl || w->c.ndim < 3 || w->c.ndim > 4)
    return tc__ox_unsupported(x, n, "weights must be a constant 3-D, 4-D or 5-D float tensor");
  int64_t xd[TC__OX_RANK];
  tc__oxv *xv = tc__ox_in(x, n, 0);
  int one = xv && xv->kind != TC__OX_BAD && tc__ox_dims(x, xv, xd) == 3;
  if (one != (w->c.ndim == 3))
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "%d-D weights for a %s input", w->c.ndim,
                        one ? "1-D" : "2-D");
  if (b && (b->kind != TC__OX_CONST || !b->c.fl || b->c.n != w->c.dims[0]))
    return tc__ox_unsupported(x, n, "the bias must be a constant of %lld floats",
                              (long long)w->c.dims[0]);
  int64_t k[2] = {one ? 1 : w->c.dims[2], w->c.dims[one ? 2 : 3]}, s[2], dil[2], pads[4], group;
  int in, padded;
  th_status rc = tc__ox_window(x, n, k, s, dil, pads, &in, &padded);
  if (rc != TH_OK || in < 0) return rc;
  rc = tc__ox_attr_i(x, n, "group", 1, &group);
  if (rc != TH_OK) return rc;
  const tc_tensor *t = tc__ox_t(x, in);
  int64_t oc = w->c.dims[0];
  if (group < 1 || group > t->shape[1] || w->c.dims[1] * group != t->shape[1] || oc % group != 0 ||
      oc > INT_MAX)
    return tc__ox_nfail(x, n, TH_ERR_INVALID,
                        "weights [%lld, %lld, ...] with group %lld do not fit %d channels",
                        (long long)oc, (long long)w->c.dims[1], (long long)group, t->shape[1]);
  /* grouped and dilated convs are conv2d (or depthwise) workloads of their groups and dilations:
   * per-group GEMMs reading taps dil apart, not expanded weights (issue 38) */
  int64_t kt[2]; /* the taps (k is the dilated window's span) */
  for (int i = 0; i < 2; i++) kt[i] = (k[i] - 1) / dil[i] + 1;
  int64_t oh = tc__ox_out_dim(t->shape[2], k[0], s[0], pads[0], pads[2], 0);
  int64_t ow = tc__ox_out_dim(t->shape[3], k[1], s[1], pads[1], pads[3], 0);
  if (oh < 1 || ow < 1)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "the input %dx%d is too small for the kernel",
                        t->shape[2], t->shape[3]);
  char nm[256];
  int64_t ph = pads[0] > pads[2] ? pads[0] : pads[2], pw = pads[1] > pads[3] ? pads[1] : pads[3];
  int id = tc_graph_conv(x->g, tc__ox_gname(x, n, nm, sizeof nm), in, (int)oc, (int)kt[0],
                         (int)kt[1], (int)s[0], (int)s[1], (int)ph, (int)pw, (int)group, b != NULL);
  rc = tc__ox_set_node(x, n, 0, id);
  if (rc != TH_OK) return rc;
  tc__ox_set_window(&x->g->nodes[id], kt, s, pads, oh, ow);
  x->g->nodes[id].dil_h = (int)dil[0];
  x->g->nodes[id].dil_w = (int)dil[1];
  rc = tc__ox_bind_param(x, n, &x->g->nodes[id].weight, w, 0, 1.0f);
  if (rc == TH_OK && b) rc = tc__ox_bind_param(x, n, &x->g->nodes[id].bias, b, 0, 1.0f);
  return rc == TH_OK && one ? tc__ox_flat_window(x, n, id) : rc;
}

/* Whether tc_pass_fold_bn will fold a batch norm on node a into it: a plain conv (4-D) used by
 * nothing else. Only such a batch norm stays one (the parameters keep their names for params.bin).
 */
static int tc__ox_bn_folds(tc__ox *x, int a) {
  const tc_node *c = &x->g->nodes[a];
  if (c->op != TC_OP_CONV2D || c->gamma >= 0 || c->epilogue) return 0;
  for (int i = a + 1; i < x->g->nnodes; i++)
    for (int k = 0; k < x->g->nodes[i].ninputs; k++)
      if (x->g->nodes[i].inputs[k] == a) return 0;
  return 1;
}

/* Channel c's scale (shift = 0) or shift (shift = 1) of a batch norm with parameters p (scale,
 * bias, mean, var). */
static float tc__ox_bn_coef(tc__oxv **p, float eps, int c, int shift) {
  double sc = p[0]->c.f[c] / sqrt((double)p[3]->c.f[c] + eps);
  return tc__ox_f32(shift ? p[1]->c.f[c] - p[2]->c.f[c] * sc : sc);
}

/* A batch norm that no conv takes in (after a dense, a concat, an add): x * s + t over the channel
 * axis, with s = gamma / sqrt(var + eps) and t = beta - mean * s computed here as parameters
 * "<node>.scale" and "<node>.shift" (there is no batch-norm kernel of its own). p: scale, bias,
 * mean, var. On an NCHW map it is a depthwise 1x1 convolution with weights s [C, 1, 1, 1] and bias
 * t: one pass in the channel-blocked layout, into which a following relu or clip folds (densenet's
 * pre-activation norm before every conv). Before, it was a multiply and an add in the plain layout:
 * a layout transform and three passes per layer, 26% of densenet121's layer time at batch 1. Other
 * ranks keep the multiply and add of constants [C, 1, ...].
 */
static th_status tc__ox_bn_affine(tc__ox *x, const Onnx__NodeProto *n, int a, tc__oxv **p,
                                  float eps) {
  const tc_tensor *t = tc__ox_t(x, a);
  int r = t->ndim, C = t->shape[1], ids[2];
  int64_t shape[TC_MAX_DIMS];
  shape[0] = C;
  for (int d = 1; d < r - 1; d++) shape[d] = 1;
  char nm[256], pn[300];
  tc__ox_gname(x, n, nm, sizeof nm);
  if (r == 4) {
    int id = tc_graph_conv(x->g, nm, a, C, 1, 1, 1, 1, 0, 0, C, 1);
    th_status rc = tc__ox_set_node(x, n, 0, id);
    for (int k = 0; rc == TH_OK && k < 2; k++) {
      tc_param *q = &x->g->params[k ? x->g->nodes[id].bias : x->g->nodes[id].weight];
      snprintf(pn, sizeof pn, "%s.%s", nm, k ? "shift" : "scale");
      q->name = th_arena_strdup(x->g->arena, pn);
      q->data = x->opts->weights ? th_arena_alloc(x->g->arena, (size_t)C * sizeof(float)) : NULL;
      if (!q->name || (x->opts->weights && !q->data))
        return tc__ox_fail(x, TH_ERR_NOMEM, "out of memory");
      for (int c = 0; q->data && c < C; c++) q->data[c] = tc__ox_bn_coef(p, eps, c, k);
    }
    return rc;
  }
  for (int k = 0; k < 2; k++) {
    snprintf(pn, sizeof pn, "%s.%s", nm, k ? "shift" : "scale");
    ids[k] = tc_graph_const(x->g, pn, r - 1, shape, TC_INIT_EMBED, 1);
    th_status rc = tc__ox_bind_node(x, n, NULL, ids[k]);
    if (rc != TH_OK) return rc;
    if (!x->opts->weights) continue;
    tc_param *q = &x->g->params[x->g->nodes[ids[k]].weight];
    q->data = th_arena_alloc(x->g->arena, (size_t)C * sizeof(float));
    if (!q->data) return tc__ox_fail(x, TH_ERR_NOMEM, "out of memory");
    for (int c = 0; c < C; c++) q->data[c] = tc__ox_bn_coef(p, eps, c, k);
  }
  int id = tc_graph_mul(x->g, a, ids[0]);
  th_status rc = tc__ox_bind_node(x, n, NULL, id);
  if (rc != TH_OK) return rc;
  return tc__ox_set_node(x, n, 0, tc_graph_add(x->g, id, ids[1]));
}

static th_status tc__ox_c_bn(tc__ox *x, const Onnx__NodeProto *n) {
  int a;
  float eps;
  int64_t spatial = 1, training = 0, is_test = 1;
  th_status rc = tc__ox_attr_f(x, n, "epsilon", 1e-5f, &eps);
  if (rc == TH_OK && x->opset < 9) rc = tc__ox_attr_i(x, n, "spatial", 1, &spatial);
  if (rc == TH_OK && x->opset >= 14) rc = tc__ox_attr_i(x, n, "training_mode", 0, &training);
  /* opset 6: is_test = 0 (the default) normalises by the batch's own statistics */
  if (rc == TH_OK && x->opset < 7) rc = tc__ox_attr_i(x, n, "is_test", 0, &is_test);
  if (rc != TH_OK) return rc;
  if (spatial != 1 || training != 0 || is_test == 0)
    return tc__ox_unsupported(x, n, "spatial = 0, training_mode = 1 or (opset 6) is_test = 0");
  for (int k = 1; k < (int)n->n_output; k++) {
    tc__oxv *o = tc__ox_out(x, n, k);
    if (o && o->uses > 0) return tc__ox_unsupported(x, n, "its training outputs are used");
  }
  rc = tc__ox_float_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  const tc_tensor *t = tc__ox_t(x, a);
  if (t->ndim < 2)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "the input has %d dimensions", t->ndim);
  tc__oxv *p[4];
  for (int k = 0; k < 4; k++) {
    p[k] = tc__ox_in(x, n, k + 1);
    if (!p[k] || p[k]->kind != TC__OX_CONST || !p[k]->c.fl || p[k]->c.n != t->shape[1])
      return tc__ox_unsupported(x, n, "scale, bias, mean and var must be constants of %d floats",
                                t->shape[1]);
  }
  int sole =
      tc__ox_sole_consumer(x, tc__ox_in(x, n, 0)); /* later readers of the conv would keep it too */
  if (sole < 0 || x->gp->node[sole] != n || !tc__ox_bn_folds(x, a))
    return tc__ox_bn_affine(x, n, a, p, eps);
  char nm[256];
  int id = tc_graph_bn(x->g, tc__ox_gname(x, n, nm, sizeof nm), a, eps);
  rc = tc__ox_set_node(x, n, 0, id);
  tc_node *nd = rc == TH_OK ? &x->g->nodes[id] : NULL;
  int *slots[4] = {nd ? &nd->gamma : NULL, nd ? &nd->beta : NULL, nd ? &nd->mean : NULL,
                   nd ? &nd->var : NULL};
  for (int k = 0; rc == TH_OK && k < 4; k++) rc = tc__ox_bind_param(x, n, slots[k], p[k], 0, 1.0f);
  return rc;
}

th_status tc__ox_pool_node(tc__ox *x, const Onnx__NodeProto *n, int in, int is_max,
                           const int64_t *k, const int64_t *s, int64_t *pads, int ceil_mode,
                           int cip, int *out) {
  const tc_tensor *t = tc__ox_t(x, in);
  *out = -1;
  int64_t oh = tc__ox_out_dim(t->shape[2], k[0], s[0], pads[0], pads[2], ceil_mode);
  int64_t ow = tc__ox_out_dim(t->shape[3], k[1], s[1], pads[1], pads[3], ceil_mode);
  if (oh < 1 || ow < 1)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "the input %dx%d is too small for the window",
                        t->shape[2], t->shape[3]);
  if (ceil_mode) { /* the last window may run past the padding: extend it at the end (never read) */
    int64_t eb = (oh - 1) * s[0] + k[0] - t->shape[2] - pads[0],
            er = (ow - 1) * s[1] + k[1] - t->shape[3] - pads[1];
    int grows = eb > pads[2] || er > pads[3];
    if (grows && !is_max && cip)
      return tc__ox_unsupported(
          x, n, "ceil_mode with count_include_pad changes the divisor of the last window");
    if (eb > pads[2]) pads[2] = eb;
    if (er > pads[3]) pads[3] = er;
  }
  int id =
      is_max ? tc_graph_max_pool(x->g, in, 1, 1, 0, 0) : tc_graph_avg_pool(x->g, in, 1, 1, 0, cip);
  th_status rc = tc__ox_bind_node(x, n, NULL, id);
  if (rc != TH_OK) return rc;
  tc__ox_set_window(&x->g->nodes[id], k, s, pads, oh, ow);
  *out = id;
  return TH_OK;
}

static th_status tc__ox_c_pool(tc__ox *x, const Onnx__NodeProto *n) {
  int is_max = strcmp(n->op_type, "MaxPool") == 0;
  int64_t k[2] = {0, 0}, s[2], pads[4], ceil_mode = 0, cip = 0, own[4] = {0};
  int in, padded;
  tc__oxv *idx = tc__ox_out(x, n, 1);
  if (idx && idx->uses > 0) return tc__ox_unsupported(x, n, "its Indices output is used");
  if (!tc__ox_attr(n, "kernel_shape"))
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "kernel_shape is missing");
  int64_t xd5[TC__OX_RANK];
  tc__oxv *xv = tc__ox_in(x, n, 0);
  if (xv && xv->kind != TC__OX_BAD && xv->kind != TC__OX_PAD && tc__ox_dims(x, xv, xd5) == 5)
    return tc__ox_pool3d(x, n, is_max);
  int64_t dil[2] = {1, 1};
  th_status rc = tc__ox_window(x, n, k, s, is_max ? dil : NULL, pads, &in, &padded);
  if (rc != TH_OK || in < 0) return rc;
  if (x->opset >= 10) rc = tc__ox_attr_i(x, n, "ceil_mode", 0, &ceil_mode);
  if (rc == TH_OK && !is_max) rc = tc__ox_attr_i(x, n, "count_include_pad", 0, &cip);
  if (rc != TH_OK) return rc;
  if (padded) {
    if (is_max) return tc__ox_nfail(x, n, TH_ERR_INTERNAL, "a Pad reached a MaxPool");
    const tc__oxv *v = tc__ox_in(x, n, 0);
    for (int i = 0; i < 4; i++) own[i] = pads[i] - v->pads[i];
    if (!cip && (own[0] || own[1] || own[2] || own[3]))
      return tc__ox_unsupported(
          x, n, "a zero Pad before an AveragePool that pads without counting the padding");
    cip = 1; /* the Pad's zeros are elements of the input */
  }
  int id;
  if (dil[0] != 1 || dil[1] != 1) {
    const tc_tensor *t = tc__ox_t(x, in);
    int64_t o[2];
    for (int i = 0; i < 2; i++)
      o[i] = tc__ox_out_dim(t->shape[2 + i], k[i], s[i], pads[i], pads[i + 2], (int)ceil_mode);
    if (o[0] < 1 || o[1] < 1)
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "the input %dx%d is too small for the window",
                          t->shape[2], t->shape[3]);
    rc = tc__ox_dilated_max_pool(x, n, in, k, s, dil, pads, o, &id);
  } else {
    rc = tc__ox_pool_node(x, n, in, is_max, k, s, pads, (int)ceil_mode, (int)cip, &id);
  }
  if (rc != TH_OK || id < 0) return rc;
  rc = tc__ox_set_node(x, n, 0, id);
  int64_t xd[TC__OX_RANK];
  if (rc == TH_OK && tc__ox_dims(x, tc__ox_in(x, n, 0), xd) == 3) rc = tc__ox_flat_window(x, n, id);
  return rc;
}

static th_status tc__ox_c_global_pool(tc__ox *x, const Onnx__NodeProto *n) {
  int a;
  th_status rc = tc__ox_float_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  if (tc__ox_t(x, a)->ndim != 4)
    return tc__ox_unsupported(x, n, "only over NCHW maps (the input has %d dimensions)",
                              tc__ox_t(x, a)->ndim);
  return tc__ox_set_node(x, n, 0, tc_graph_global_avg_pool(x->g, a));
}

static th_status tc__ox_c_pad(tc__ox *x, const Onnx__NodeProto *n) {
  char mode[32];
  int64_t p[2 * TC__OX_RANK];
  int cnt;
  float val = 0.0f;
  th_status rc = tc__ox_attr_s(x, n, "mode", "constant", mode, sizeof mode);
  if (rc != TH_OK) return rc;
  int cst = strcmp(mode, "constant") == 0, crop = 0;
  if (!cst && strcmp(mode, "reflect") != 0 && strcmp(mode, "edge") != 0 &&
      strcmp(mode, "wrap") != 0)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "mode '%s' is not constant, reflect, edge or wrap",
                        mode);
  if (x->opset >= 18 && tc__ox_in(x, n, 3))
    return tc__ox_unsupported(x, n, "an axes input (opset 18; pads over every axis only)");
  int before = x->nunsup;
  if (x->opset < 11) {
    rc = tc__ox_attr_ints(x, n, "pads", p, 2 * TC__OX_RANK, &cnt);
    if (rc == TH_OK) rc = tc__ox_attr_f(x, n, "value", 0.0f, &val);
  } else {
    double d = 0;
    rc = tc__ox_const_ints(x, n, 1, p, 2 * TC__OX_RANK, &cnt);
    tc__oxv *cv = tc__ox_in(x, n, 2);
    if (rc == TH_OK && cv && !tc__ox_scalar(cv, &d))
      return tc__ox_unsupported(x, n, "the pad value is not a constant");
    val = tc__ox_f32(d);
  }
  if (rc != TH_OK || TC__OX_REPORTED(x, before)) return rc;
  int a;
  rc = tc__ox_float_in(x, n, 0, &a);
  if (rc != TH_OK || a < 0) return rc;
  const tc_tensor *t = tc__ox_t(x, a);
  if (cnt != 2 * t->ndim)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "pads has %d values for %d dimensions", cnt, t->ndim);
  int zero = 1, spatial = t->ndim == 4;
  for (int i = 0; i < cnt; i++) {
    crop |= p[i] < 0;
    if (p[i] > TC_ONNX_MAX_DIM || p[i] < -TC_ONNX_MAX_DIM)
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "pads value %lld", (long long)p[i]);
    zero = zero && p[i] == 0;
    if (i % t->ndim < 2 && p[i] != 0) spatial = 0;
  }
  if (zero) return tc__ox_set_node(x, n, 0, a);
  tc__oxv *o = tc__ox_out(x, n, 0);
  int c = tc__ox_sole_consumer(x, o);
  const Onnx__NodeProto *cn = c >= 0 ? x->gp->node[c] : NULL;
  int fits = cn && (strcmp(cn->op_type, "Conv") == 0 || strcmp(cn->op_type, "AveragePool") == 0) &&
             tc__ox_in(x, cn, 0) == o && val == 0.0f && spatial;
  if (!fits || crop || !cst) return tc__ox_pad_maps(x, n, a, p, mode, val);
  o->kind = TC__OX_PAD;
  o->node = a;
  o->pads[0] = (int)p[2];
  o->pads[1] = (int)p[3];
  o->pads[2] = (int)p[6];
  o->pads[3] = (int)p[7];
  return TH_OK;
}

/* ---- the table
 * ------------------------------------------------------------------------------------------ */

static const struct {
  const char *op;
  tc__ox_conv_fn fn;
} tc__ox_convs[] = {
    {"Conv", tc__ox_c_conv},
    {"BatchNormalization", tc__ox_c_bn},
    {"Relu", tc__ox_c_unary},
    {"Tanh", tc__ox_c_unary},
    {"Sigmoid", tc__ox_c_unary},
    {"HardSigmoid", tc__ox_c_unary},
    {"HardSwish", tc__ox_c_unary},
    {"Clip", tc__ox_c_clip},
    {"Add", tc__ox_c_binary},
    {"Sub", tc__ox_c_binary},
    {"Mul", tc__ox_c_binary},
    {"Div", tc__ox_c_binary},
    {"Pow", tc__ox_c_binary_math},
    {"Sqrt", tc__ox_c_math},
    {"Erf", tc__ox_c_math},
    {"Exp", tc__ox_c_math},
    {"Log", tc__ox_c_math},
    {"Abs", tc__ox_c_math},
    {"Neg", tc__ox_c_math},
    {"Reciprocal", tc__ox_c_math},
    {"Floor", tc__ox_c_math},
    {"Ceil", tc__ox_c_math},
    {"Round", tc__ox_c_math},
    {"Sign", tc__ox_c_math},
    {"Softplus", tc__ox_c_math},
    {"Softsign", tc__ox_c_math},
    {"Elu", tc__ox_c_math},
    {"Selu", tc__ox_c_math},
    {"LeakyRelu", tc__ox_c_math},
    {"Celu", tc__ox_c_math},
    {"ThresholdedRelu", tc__ox_c_math},
    {"Sinh", tc__ox_c_math},
    {"Cosh", tc__ox_c_math},
    {"Asinh", tc__ox_c_math},
    {"Acosh", tc__ox_c_math},
    {"Atanh", tc__ox_c_math},
    {"Sin", tc__ox_c_math},
    {"Cos", tc__ox_c_math},
    {"Tan", tc__ox_c_math},
    {"Asin", tc__ox_c_math},
    {"Acos", tc__ox_c_math},
    {"Atan", tc__ox_c_math},
    {"IsNaN", tc__ox_c_is_special},
    {"IsInf", tc__ox_c_is_special},
    {"Where", tc__ox_c_where},
    {"Trilu", tc__ox_c_trilu},
    {"Hardmax", tc__ox_c_hardmax},
    {"MaxPool", tc__ox_c_pool},
    {"AveragePool", tc__ox_c_pool},
    {"GlobalAveragePool", tc__ox_c_global_pool},
    {"Pad", tc__ox_c_pad},
    {"ConvTranspose", tc__ox_c_conv_transpose},
    {"Resize", tc__ox_c_resize},
    {"Upsample", tc__ox_c_resize},
    {"DepthToSpace", tc__ox_c_depth_to_space},
    {"SpaceToDepth", tc__ox_c_depth_to_space},
    {"PRelu", tc__ox_c_prelu},
    {"GlobalMaxPool", tc__ox_c_global_max_pool},
    {"Gemm", tc__ox_c_gemm},
    {"MatMul", tc__ox_c_matmul},
    {"Flatten", tc__ox_c_reshape},
    {"Reshape", tc__ox_c_reshape},
    {"Squeeze", tc__ox_c_reshape},
    {"Unsqueeze", tc__ox_c_reshape},
    {"Transpose", tc__ox_c_transpose},
    {"Concat", tc__ox_c_concat},
    {"Split", tc__ox_c_split},
    {"Slice", tc__ox_c_slice},
    {"Gather", tc__ox_c_gather},
    {"GatherElements", tc__ox_c_gather},
    {"ScatterElements", tc__ox_c_scatter},
    {"Scatter", tc__ox_c_scatter},
    {"Tile", tc__ox_c_tile},
    {"OneHot", tc__ox_c_onehot},
    {"TopK", tc__ox_c_topk},
    {"Cast", tc__ox_c_cast},
    {"Expand", tc__ox_c_expand},
    {"ReduceMean", tc__ox_c_reduce},
    {"ReduceSum", tc__ox_c_reduce},
    {"ReduceMax", tc__ox_c_reduce},
    {"ReduceMin", tc__ox_c_reduce},
    {"ReduceProd", tc__ox_c_reduce},
    {"ReduceSumSquare", tc__ox_c_reduce},
    {"ReduceL1", tc__ox_c_reduce},
    {"ReduceL2", tc__ox_c_reduce},
    {"ReduceLogSum", tc__ox_c_reduce},
    {"ReduceLogSumExp", tc__ox_c_reduce},
    {"ArgMax", tc__ox_c_arg},
    {"ArgMin", tc__ox_c_arg},
    {"InstanceNormalization", tc__ox_c_instance_norm},
    {"Softmax", tc__ox_c_softmax},
    {"LogSoftmax", tc__ox_c_softmax},
    {"NegativeLogLikelihoodLoss", tc__ox_c_loss},
    {"SoftmaxCrossEntropyLoss", tc__ox_c_loss},
    {"LayerNormalization", tc__ox_c_layer_norm},
    {"Dropout", tc__ox_c_identity},
    {"Identity", tc__ox_c_identity},
    {"Max", tc__ox_c_binary_math},
    {"Min", tc__ox_c_binary_math},
    {"Sum", tc__ox_c_binary_math},
    {"Mean", tc__ox_c_binary_math},
    {"Mod", tc__ox_c_binary_math},
    {"Equal", tc__ox_c_binary_math},
    {"Less", tc__ox_c_binary_math},
    {"Greater", tc__ox_c_binary_math},
    {"LessOrEqual", tc__ox_c_binary_math},
    {"GreaterOrEqual", tc__ox_c_binary_math},
    {"And", tc__ox_c_binary_math},
    {"Or", tc__ox_c_binary_math},
    {"Xor", tc__ox_c_binary_math},
    {"Not", tc__ox_c_binary_math},
    {"LSTM", tc__ox_c_rnn},
    {"GRU", tc__ox_c_rnn},
    {"RNN", tc__ox_c_rnn},
    {"Shrink", tc__ox_c_shrink},
    {"MeanVarianceNormalization", tc__ox_c_mvn},
    {"LRN", tc__ox_c_lrn},
    {"GridSample", tc__ox_c_grid_sample},
};

tc__ox_conv_fn tc__ox_converter(const char *op_type) {
  for (size_t i = 0; i < sizeof tc__ox_convs / sizeof tc__ox_convs[0]; i++)
    if (strcmp(tc__ox_convs[i].op, op_type) == 0) return tc__ox_convs[i].fn;
  return NULL;
}
