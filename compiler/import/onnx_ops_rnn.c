/* The recurrent layers of the ONNX importer (issue 38): LSTM, GRU and RNN at opsets 7..21 (layout
 * 0 [seq, batch, ...] and 1 [batch, seq, ...], forward, reverse and bidirectional). The sequence
 * length is static, so each node is unrolled at import into existing graph ops: per direction one
 * dense of the whole sequence by W (the biases that add outside a gate folded into it), then per
 * step one matmul of the state by R for the whole gate group ([batch, 4H] for LSTM, [batch, 3H]
 * for GRU with linear_before_reset, [batch, 2H] + [batch, H] without), gate slices, the
 * activations (sigmoid, tanh and the unary math family), element-wise mul and add, and concats
 * for Y, Y_h and Y_c. */
#include <stdio.h>
#include <string.h>

#include "onnx_int.h"
#include "workload.h"

/* The most steps (sequence length x directions) one node unrolls into. */
#define TC__OX_RNN_STEPS 1024

/* An activation of the activations attribute, with its alpha and beta. */
enum {
  TC__OX_ACT_SIGMOID,
  TC__OX_ACT_TANH,
  TC__OX_ACT_RELU,
  TC__OX_ACT_HARD_SIGMOID,
  TC__OX_ACT_AFFINE,
  TC__OX_ACT_LEAKY_RELU,
  TC__OX_ACT_THRESHOLDED_RELU,
  TC__OX_ACT_SCALED_TANH,
  TC__OX_ACT_ELU,
  TC__OX_ACT_SOFTSIGN,
  TC__OX_ACT_SOFTPLUS,
};

static const struct {
  const char *name;
  int kind, nab; /* nab: how many of alpha, beta it takes from the lists */
  float alpha, beta;
} tc__ox_rnn_acts[] = {
    {"Sigmoid", TC__OX_ACT_SIGMOID, 0, 0, 0},
    {"Tanh", TC__OX_ACT_TANH, 0, 0, 0},
    {"Relu", TC__OX_ACT_RELU, 0, 0, 0},
    {"HardSigmoid", TC__OX_ACT_HARD_SIGMOID, 2, 0.2f, 0.5f},
    {"Affine", TC__OX_ACT_AFFINE, 2, 1.0f, 0.0f},
    {"LeakyRelu", TC__OX_ACT_LEAKY_RELU, 1, 0.01f, 0},
    {"ThresholdedRelu", TC__OX_ACT_THRESHOLDED_RELU, 1, 1.0f, 0},
    {"ScaledTanh", TC__OX_ACT_SCALED_TANH, 2, 1.0f, 1.0f},
    {"Elu", TC__OX_ACT_ELU, 1, 1.0f, 0},
    {"Softsign", TC__OX_ACT_SOFTSIGN, 0, 0, 0},
    {"Softplus", TC__OX_ACT_SOFTPLUS, 0, 0, 0},
};

typedef struct tc__ox_act {
  int kind;
  float alpha, beta;
} tc__ox_act;

/* One node's unrolling: the importer, the node, the first error (later builds are skipped). */
typedef struct tc__ox_rnn {
  tc__ox *x;
  const Onnx__NodeProto *n;
  th_status rc;
  int kind; /* 0 RNN, 1 GRU, 2 LSTM */
  int64_t H, batch, seq, in;
  int layout, lbr, input_forget;
  float clip; /* 0: none */
  tc__ox_act act[2][3];
} tc__ox_rnn;

/* Checks graph node id as part of the node's unrolling; -1 after the first error. */
static int tc__ox_rnn_k(tc__ox_rnn *r, int id) {
  if (r->rc != TH_OK) return -1;
  r->rc = tc__ox_bind_node(r->x, r->n, NULL, id);
  return r->rc == TH_OK ? id : -1;
}

static int tc__ox_rnn_same(const char *a, const char *b) {
  for (; *a && *b; a++, b++) {
    char ca = *a >= 'A' && *a <= 'Z' ? (char)(*a - 'A' + 'a') : *a;
    char cb = *b >= 'A' && *b <= 'Z' ? (char)(*b - 'A' + 'a') : *b;
    if (ca != cb) return 0;
  }
  return *a == *b;
}

/* The activations of each direction: the defaults (f Sigmoid, g Tanh, h Tanh; RNN's f Tanh), or
 * the attribute's names (case-insensitive) with alpha and beta consumed in order by those that
 * take them. An unknown name is reported. */
static th_status tc__ox_rnn_acts_of(tc__ox_rnn *r, int dirs) {
  static const int defaults[3][3] = {{TC__OX_ACT_TANH},
                                     {TC__OX_ACT_SIGMOID, TC__OX_ACT_TANH},
                                     {TC__OX_ACT_SIGMOID, TC__OX_ACT_TANH, TC__OX_ACT_TANH}};
  int nact = r->kind + 1;
  for (int d = 0; d < 2; d++)
    for (int k = 0; k < 3; k++) r->act[d][k] = (tc__ox_act){defaults[r->kind][k], 0, 0};
  const Onnx__AttributeProto *a = tc__ox_attr(r->n, "activations");
  if (!a || a->n_strings == 0) return TH_OK;
  if (a->n_strings != (size_t)(nact * dirs))
    return tc__ox_nfail(r->x, r->n, TH_ERR_INVALID,
                        "activations has %zu names; %d directions of %s take %d", a->n_strings,
                        dirs, r->n->op_type, nact * dirs);
  const Onnx__AttributeProto *al = tc__ox_attr(r->n, "activation_alpha");
  const Onnx__AttributeProto *be = tc__ox_attr(r->n, "activation_beta");
  size_t ia = 0, ib = 0;
  for (size_t i = 0; i < a->n_strings; i++) {
    char name[64];
    size_t len = a->strings[i].len < sizeof name - 1 ? a->strings[i].len : sizeof name - 1;
    memcpy(name, a->strings[i].data, len);
    name[len] = 0;
    size_t j = 0, cnt = sizeof tc__ox_rnn_acts / sizeof tc__ox_rnn_acts[0];
    while (j < cnt && !tc__ox_rnn_same(tc__ox_rnn_acts[j].name, name)) j++;
    if (j == cnt) {
      tc__ox_unsupported(r->x, r->n,
                         "activation '%.60s' (supported: Sigmoid, Tanh, Relu, HardSigmoid, Affine, "
                         "LeakyRelu, ThresholdedRelu, ScaledTanh, Elu, Softsign, Softplus)",
                         name);
      return TH_OK;
    }
    tc__ox_act *act = &r->act[i / (size_t)nact][i % (size_t)nact];
    act->kind = tc__ox_rnn_acts[j].kind;
    act->alpha = tc__ox_rnn_acts[j].alpha;
    act->beta = tc__ox_rnn_acts[j].beta;
    if (tc__ox_rnn_acts[j].nab >= 1 && al && ia < al->n_floats) act->alpha = al->floats[ia++];
    if (tc__ox_rnn_acts[j].nab >= 2 && be && ib < be->n_floats) act->beta = be->floats[ib++];
    if (!isfinite(act->alpha) || !isfinite(act->beta))
      return tc__ox_nfail(r->x, r->n, TH_ERR_INVALID,
                          "activation '%s' has a non-finite alpha or beta", name);
  }
  return TH_OK;
}

/* act(clip(id)). */
static int tc__ox_rnn_act(tc__ox_rnn *r, int id, const tc__ox_act *a) {
  tc_graph *g = r->x->g;
  if (r->clip > 0) id = tc__ox_rnn_k(r, tc_graph_clip(g, id, -r->clip, r->clip));
  if (id < 0) return -1;
  switch (a->kind) {
    case TC__OX_ACT_SIGMOID:
      return tc__ox_rnn_k(r, tc_graph_sigmoid(g, id));
    case TC__OX_ACT_TANH:
      return tc__ox_rnn_k(r, tc_graph_tanh(g, id));
    case TC__OX_ACT_RELU:
      return tc__ox_rnn_k(r, tc_graph_relu(g, id));
    case TC__OX_ACT_HARD_SIGMOID:
      return tc__ox_rnn_k(r, tc_graph_hard_sigmoid(g, id, a->alpha, a->beta));
    case TC__OX_ACT_AFFINE:
      return tc__ox_rnn_k(r, tc_graph_affine(g, id, a->alpha, a->beta));
    case TC__OX_ACT_LEAKY_RELU:
      return tc__ox_rnn_k(r, tc_graph_math(g, id, TC_UNARY_LEAKY_RELU, a->alpha, 0));
    case TC__OX_ACT_THRESHOLDED_RELU:
      return tc__ox_rnn_k(r, tc_graph_math(g, id, TC_UNARY_THRESHOLDED_RELU, a->alpha, 0));
    case TC__OX_ACT_ELU:
      return tc__ox_rnn_k(r, tc_graph_math(g, id, TC_UNARY_ELU, a->alpha, 0));
    case TC__OX_ACT_SOFTSIGN:
      return tc__ox_rnn_k(r, tc_graph_math(g, id, TC_UNARY_SOFTSIGN, 0, 0));
    case TC__OX_ACT_SOFTPLUS:
      return tc__ox_rnn_k(r, tc_graph_math(g, id, TC_UNARY_SOFTPLUS, 0, 0));
    default: /* ScaledTanh: alpha * tanh(beta * x) */
      id = tc__ox_rnn_k(r, tc_graph_affine(g, id, a->beta, 0));
      if (id >= 0) id = tc__ox_rnn_k(r, tc_graph_tanh(g, id));
      return id < 0 ? -1 : tc__ox_rnn_k(r, tc_graph_affine(g, id, a->alpha, 0));
  }
}

/* A float array of cnt elements from the graph's arena (it holds parameter data), zeroed. */
static float *tc__ox_rnn_data(tc__ox_rnn *r, int64_t cnt) {
  float *p = th_arena_alloc(r->x->g->arena, (size_t)(cnt > 0 ? cnt : 1) * sizeof(float));
  if (p) memset(p, 0, (size_t)(cnt > 0 ? cnt : 1) * sizeof(float));
  if (!p && r->rc == TH_OK) r->rc = TH_ERR_NOMEM;
  return p;
}

/* A constant node of shape [d0, d1] (d1 0: [d0]) named <node>.<tag> holding data (NULL: zeros). */
static int tc__ox_rnn_const(tc__ox_rnn *r, const char *tag, int64_t d0, int64_t d1,
                            const float *data) {
  if (r->rc != TH_OK) return -1;
  char nm[256], pn[300];
  tc__ox_gname(r->x, r->n, nm, sizeof nm);
  snprintf(pn, sizeof pn, "%s.%s", nm, tag);
  int64_t shape[2] = {d0, d1};
  int id = tc__ox_rnn_k(r, tc_graph_const(r->x->g, pn, d1 ? 2 : 1, shape, TC_INIT_BIAS, 1));
  if (id < 0 || !r->x->opts->weights) return id;
  float *p = tc__ox_rnn_data(r, d0 * (d1 ? d1 : 1));
  if (!p) return -1;
  if (data) memcpy(p, data, (size_t)(d0 * (d1 ? d1 : 1)) * sizeof(float));
  r->x->g->params[r->x->g->nodes[id].weight].data = p;
  return id;
}

/* Concat of n nodes along axis, as a tree of concats of at most TC_MAX_INPUTS. ids is scratch. */
static int tc__ox_rnn_concat(tc__ox_rnn *r, int *ids, int n, int axis) {
  while (n > 1 && r->rc == TH_OK) {
    int m = 0;
    for (int i = 0; i < n; i += TC_MAX_INPUTS) {
      int k = n - i < TC_MAX_INPUTS ? n - i : TC_MAX_INPUTS;
      ids[m++] = k == 1 ? ids[i] : tc__ox_rnn_k(r, tc_graph_concat_axis(r->x->g, k, ids + i, axis));
    }
    n = m;
  }
  return r->rc == TH_OK ? ids[0] : -1;
}

/* Node id [batch, H] reshaped with a 1 inserted at axis `at` (and another at at + 1 when two). */
static int tc__ox_rnn_unsq(tc__ox_rnn *r, int id, int at, int two) {
  int shape[4], k = 0;
  for (int d = 0; d < 3; d++) {
    if (d == at) {
      shape[k++] = 1;
      if (two) shape[k++] = 1;
    }
    if (d < 2) shape[k++] = (int)(d == 0 ? r->batch : r->H);
  }
  return tc__ox_rnn_k(r, tc_graph_reshape(r->x->g, id, k, shape));
}

/* Slice [lo, hi) * H of the last axis of a [batch, G*H] node. */
static int tc__ox_rnn_gate(tc__ox_rnn *r, int id, int lo, int hi) {
  return tc__ox_rnn_k(r, tc_graph_slice(r->x->g, id, 1, (int)(lo * r->H), (int)(hi * r->H), 1));
}

static int tc__ox_rnn_add(tc__ox_rnn *r, int a, int b) {
  return r->rc != TH_OK ? -1 : tc__ox_rnn_k(r, tc_graph_add(r->x->g, a, b));
}

static int tc__ox_rnn_mul(tc__ox_rnn *r, int a, int b) {
  return r->rc != TH_OK ? -1 : tc__ox_rnn_k(r, tc_graph_mul(r->x->g, a, b));
}

/* h [batch, H] times the transpose of the constant node rmat ([rows, H]): [batch, rows]. */
static int tc__ox_rnn_rmul(tc__ox_rnn *r, int h, int rmat) {
  return r->rc != TH_OK ? -1 : tc__ox_rnn_k(r, tc_graph_matmul(r->x->g, h, rmat, 0, 1, 1.0f));
}

/* One direction d of the node: xid the input, W, R, B, P (NULL when absent) its constants, h0/c0
 * the initial state nodes (-1: zeros). Sets ys[t] (t in time order, [batch, H]), *hl, *cl. */
static void tc__ox_rnn_dir(tc__ox_rnn *r, int d, int reverse, int xid, const tc__oxv *W,
                           const tc__oxv *R, const tc__oxv *B, int pid, int h, int c, int *ys,
                           int *hl, int *cl) {
  tc__ox *x = r->x;
  int64_t G = r->kind == 2 ? 4 : r->kind == 1 ? 3 : 1, GH = G * r->H, H = r->H;
  /* The input projection of every step: X W^T + Wb + Rb (GRU: Rb of h only without lbr). */
  char nm[256], wn[300], bn[300], tag[32];
  tc__ox_gname(x, r->n, nm, sizeof nm);
  snprintf(wn, sizeof wn, "%s.W%d.weight", nm, d);
  snprintf(bn, sizeof bn, "%s.W%d.bias", nm, d);
  int xp = tc__ox_rnn_k(r, tc_graph_dense_named(x->g, wn, xid, (int)GH, wn, bn));
  if (xp >= 0 && x->opts->weights) {
    float *w = tc__ox_rnn_data(r, GH * r->in), *b = tc__ox_rnn_data(r, GH);
    if (!w || !b) return;
    memcpy(w, W->c.f + d * GH * r->in, (size_t)(GH * r->in) * sizeof(float));
    for (int64_t i = 0; B && i < GH; i++) {
      float wb = B->c.f[d * 2 * GH + i], rb = B->c.f[d * 2 * GH + GH + i];
      b[i] = r->kind == 1 && r->lbr && i >= 2 * H ? wb : wb + rb;
    }
    x->g->params[x->g->nodes[xp].weight].data = w;
    x->g->params[x->g->nodes[xp].bias].data = b;
  }
  int rbh = -1; /* GRU with lbr: Rb of h, added inside r * (...) */
  if (r->kind == 1 && r->lbr) {
    snprintf(tag, sizeof tag, "Rb%d", d);
    rbh = tc__ox_rnn_const(r, tag, H, 0,
                           B && x->opts->weights ? B->c.f + d * 2 * GH + GH + 2 * H : NULL);
  }
  /* R of the direction: one constant [G*H, H] (GRU without lbr: [2H, H] and [H, H]). */
  const float *rd = x->opts->weights ? R->c.f + d * GH * H : NULL;
  snprintf(tag, sizeof tag, "R%d", d);
  int rm = tc__ox_rnn_const(r, tag, r->kind == 1 && !r->lbr ? 2 * H : GH, H, rd), rh = -1;
  if (r->kind == 1 && !r->lbr) {
    snprintf(tag, sizeof tag, "R%dh", d);
    rh = tc__ox_rnn_const(r, tag, H, H, rd ? rd + 2 * H * H : NULL);
  }
  int pi = -1, po = -1, pf = -1;
  if (pid >= 0) {
    int p = tc__ox_rnn_k(r, tc_graph_select(x->g, pid, 0, d));
    if (p >= 0) pi = tc__ox_rnn_k(r, tc_graph_slice(x->g, p, 0, 0, (int)H, 1));
    if (p >= 0) po = tc__ox_rnn_k(r, tc_graph_slice(x->g, p, 0, (int)H, (int)(2 * H), 1));
    if (p >= 0) pf = tc__ox_rnn_k(r, tc_graph_slice(x->g, p, 0, (int)(2 * H), (int)(3 * H), 1));
  }
  const tc__ox_act *f = &r->act[d][0], *ga = &r->act[d][1], *ha = &r->act[d][2];
  for (int64_t s = 0; s < r->seq && r->rc == TH_OK; s++) {
    int t = (int)(reverse ? r->seq - 1 - s : s);
    int xt = tc__ox_rnn_k(r, tc_graph_select(x->g, xp, r->layout ? 1 : 0, t));
    if (r->kind == 0) {
      h = tc__ox_rnn_act(r, tc__ox_rnn_add(r, xt, tc__ox_rnn_rmul(r, h, rm)), f);
    } else if (r->kind == 1) {
      int hr = tc__ox_rnn_rmul(r, h, rm), hh;
      int zr = tc__ox_rnn_act(r,
                              tc__ox_rnn_add(r, tc__ox_rnn_gate(r, xt, 0, 2),
                                             r->lbr ? tc__ox_rnn_gate(r, hr, 0, 2) : hr),
                              f);
      int z = tc__ox_rnn_gate(r, zr, 0, 1), rg = tc__ox_rnn_gate(r, zr, 1, 2);
      if (r->lbr)
        hh = tc__ox_rnn_mul(r, rg, tc__ox_rnn_add(r, tc__ox_rnn_gate(r, hr, 2, 3), rbh));
      else
        hh = tc__ox_rnn_rmul(r, tc__ox_rnn_mul(r, rg, h), rh);
      hh = tc__ox_rnn_act(r, tc__ox_rnn_add(r, tc__ox_rnn_gate(r, xt, 2, 3), hh), ga);
      /* (1 - z) hh + z h = hh + z (h - hh) */
      int diff = r->rc == TH_OK ? tc__ox_rnn_k(r, tc_graph_sub(x->g, h, hh)) : -1;
      h = tc__ox_rnn_add(r, hh, tc__ox_rnn_mul(r, z, diff));
    } else {
      int gs = tc__ox_rnn_add(r, xt, tc__ox_rnn_rmul(r, h, rm)), i, o, fg = -1;
      if (pid < 0) { /* i, o, f share the activation: one over [batch, 3H] */
        int iof = tc__ox_rnn_act(r, tc__ox_rnn_gate(r, gs, 0, 3), f);
        i = tc__ox_rnn_gate(r, iof, 0, 1);
        o = tc__ox_rnn_gate(r, iof, 1, 2);
        fg = tc__ox_rnn_gate(r, iof, 2, 3);
      } else {
        i = tc__ox_rnn_act(
            r, tc__ox_rnn_add(r, tc__ox_rnn_gate(r, gs, 0, 1), tc__ox_rnn_mul(r, c, pi)), f);
        if (!r->input_forget)
          fg = tc__ox_rnn_act(
              r, tc__ox_rnn_add(r, tc__ox_rnn_gate(r, gs, 2, 3), tc__ox_rnn_mul(r, c, pf)), f);
        o = -1;
      }
      if (r->input_forget && i >= 0) fg = tc__ox_rnn_k(r, tc_graph_affine(x->g, i, -1.0f, 1.0f));
      int cc = tc__ox_rnn_act(r, tc__ox_rnn_gate(r, gs, 3, 4), ga);
      c = tc__ox_rnn_add(r, tc__ox_rnn_mul(r, fg, c), tc__ox_rnn_mul(r, i, cc));
      if (pid >= 0)
        o = tc__ox_rnn_act(
            r, tc__ox_rnn_add(r, tc__ox_rnn_gate(r, gs, 1, 2), tc__ox_rnn_mul(r, c, po)), f);
      h = tc__ox_rnn_mul(r, o, tc__ox_rnn_act(r, c, ha));
    }
    ys[t] = h;
  }
  *hl = h;
  *cl = c;
}

/* LSTM, GRU, RNN. */
th_status tc__ox_c_rnn(tc__ox *x, const Onnx__NodeProto *n) {
  tc__ox_rnn r = {.x = x, .n = n, .rc = TH_OK};
  r.kind = strcmp(n->op_type, "LSTM") == 0 ? 2 : strcmp(n->op_type, "GRU") == 0 ? 1 : 0;
  int64_t G = r.kind == 2 ? 4 : r.kind == 1 ? 3 : 1, hs, layout = 0, lbr = 0, inf = 0;
  char dir[32];
  th_status rc = tc__ox_attr_i(x, n, "hidden_size", 0, &hs);
  if (rc == TH_OK && x->opset >= 14) rc = tc__ox_attr_i(x, n, "layout", 0, &layout);
  if (rc == TH_OK && r.kind == 1) rc = tc__ox_attr_i(x, n, "linear_before_reset", 0, &lbr);
  if (rc == TH_OK && r.kind == 2) rc = tc__ox_attr_i(x, n, "input_forget", 0, &inf);
  if (rc == TH_OK) rc = tc__ox_attr_f(x, n, "clip", 0.0f, &r.clip);
  if (rc == TH_OK) rc = tc__ox_attr_s(x, n, "direction", "forward", dir, sizeof dir);
  if (rc != TH_OK) return rc;
  int dirs = strcmp(dir, "bidirectional") == 0 ? 2 : 1, reverse = strcmp(dir, "reverse") == 0;
  if (dirs == 1 && !reverse && strcmp(dir, "forward") != 0)
    return tc__ox_nfail(x, n, TH_ERR_INVALID,
                        "direction '%.40s' (forward, reverse or bidirectional)", dir);
  if (layout != 0 && layout != 1)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "layout %lld (0 or 1)", (long long)layout);
  if (tc__ox_attr(n, "clip") && !(r.clip > 0 && isfinite(r.clip)))
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "clip must be a positive finite threshold");
  r.layout = (int)layout;
  r.lbr = lbr != 0;
  r.input_forget = inf != 0;
  tc__oxv *W = tc__ox_in(x, n, 1), *R = tc__ox_in(x, n, 2), *B = tc__ox_in(x, n, 3);
  tc__oxv *sl = tc__ox_in(x, n, 4), *P = r.kind == 2 ? tc__ox_in(x, n, 7) : NULL;
  if (!W || !R) return tc__ox_nfail(x, n, TH_ERR_INVALID, "W and R are required");
  if (W->kind != TC__OX_CONST || !W->c.fl || R->kind != TC__OX_CONST || !R->c.fl ||
      (B && (B->kind != TC__OX_CONST || !B->c.fl)))
    return tc__ox_unsupported(x, n, "W, R and B must be constant float tensors");
  int64_t H = R->c.ndim == 3 ? R->c.dims[2] : -1;
  if (W->c.ndim != 3 || R->c.ndim != 3 || W->c.dims[0] != dirs || R->c.dims[0] != dirs ||
      R->c.dims[1] != G * H || W->c.dims[1] != G * H || H <= 0 || (hs > 0 && hs != H))
    return tc__ox_nfail(x, n, TH_ERR_INVALID,
                        "W must be [%d, %lld*H, input] and R [%d, %lld*H, H] (hidden_size %lld)",
                        dirs, (long long)G, dirs, (long long)G, (long long)hs);
  if (B && (B->c.n != dirs * 2 * G * H))
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "B must be [%d, %lld]", dirs, (long long)(2 * G * H));
  int xid;
  rc = tc__ox_float_in(x, n, 0, &xid);
  if (rc != TH_OK || xid < 0) return rc;
  int64_t xd[TC__OX_RANK];
  if (tc__ox_tdims(x, xid, xd) != 3 || xd[2] != W->c.dims[2])
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "X must be 3-D with %lld inputs per step",
                        (long long)W->c.dims[2]);
  r.H = H;
  r.in = xd[2];
  r.seq = layout ? xd[1] : xd[0];
  r.batch = layout ? xd[0] : xd[1];
  if (r.seq < 1 || r.seq * dirs > TC__OX_RNN_STEPS)
    return tc__ox_unsupported(x, n,
                              "a sequence of %lld steps in %d directions (unrolled at import: the "
                              "limit is %d steps in all)",
                              (long long)r.seq, dirs, TC__OX_RNN_STEPS);
  if (sl) {
    int64_t lens[4096];
    int cnt, before = x->nunsup;
    if (sl->kind != TC__OX_CONST)
      return tc__ox_unsupported(x, n, "a runtime sequence_lens (only all equal to seq_length %lld)",
                                (long long)r.seq);
    rc = tc__ox_const_ints(x, n, 4, lens, 4096, &cnt);
    if (rc != TH_OK || TC__OX_REPORTED(x, before)) return rc;
    for (int i = 0; i < cnt; i++)
      if (lens[i] != r.seq)
        return tc__ox_unsupported(x, n,
                                  "sequence_lens[%d] is %lld (only all equal to seq_length %lld)",
                                  i, (long long)lens[i], (long long)r.seq);
  }
  int before = x->nunsup;
  rc = tc__ox_rnn_acts_of(&r, dirs);
  if (rc != TH_OK || TC__OX_REPORTED(x, before)) return rc;
  /* Initial states and peepholes: [dirs, batch, H] (layout 1: [batch, dirs, H]); P [dirs, 3H]. */
  int init[2] = {-1, -1}, pid = -1;
  for (int k = 0; k < (r.kind == 2 ? 2 : 1); k++) {
    if (!tc__ox_in(x, n, 5 + k)) continue;
    rc = tc__ox_float_in(x, n, 5 + k, &init[k]);
    if (rc != TH_OK || init[k] < 0) return rc;
    int64_t d[TC__OX_RANK], want0 = layout ? r.batch : dirs, want1 = layout ? dirs : r.batch;
    if (tc__ox_tdims(x, init[k], d) != 3 || d[0] != want0 || d[1] != want1 || d[2] != H)
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "%s must be [%lld, %lld, %lld]",
                          k ? "initial_c" : "initial_h", (long long)want0, (long long)want1,
                          (long long)H);
  }
  if (P) {
    rc = tc__ox_float_in(x, n, 7, &pid);
    if (rc != TH_OK || pid < 0) return rc;
    int64_t d[TC__OX_RANK];
    if (tc__ox_tdims(x, pid, d) != 2 || d[0] != dirs || d[1] != 3 * H)
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "P must be [%d, %lld]", dirs, (long long)(3 * H));
  }
  int *ys = th_arena_alloc(x->arena, (size_t)(r.seq * dirs) * sizeof(int));
  if (!ys) return TH_ERR_NOMEM;
  int hl[2], cl[2];
  for (int d = 0; d < dirs && r.rc == TH_OK; d++) {
    int st[2] = {-1, -1};
    for (int k = 0; k < 2; k++) {
      if (init[k] >= 0)
        st[k] = tc__ox_rnn_k(&r, tc_graph_select(x->g, init[k], layout ? 1 : 0, d));
      else {
        char tag[32];
        snprintf(tag, sizeof tag, "%s%d", k ? "c0_" : "h0_", d);
        st[k] = tc__ox_rnn_const(&r, tag, r.batch, H, NULL);
      }
    }
    tc__ox_rnn_dir(&r, d, dirs == 2 ? d : reverse, xid, W, R, B, pid, st[0], st[1], ys + d * r.seq,
                   &hl[d], &cl[d]);
  }
  /* Y [seq, dirs, batch, H] (layout 1: [batch, seq, dirs, H]); Y_h, Y_c [dirs, batch, H]
   * (layout 1: [batch, dirs, H]). */
  int parts[2];
  if (r.rc == TH_OK && tc__ox_out(x, n, 0)) {
    for (int d = 0; d < dirs; d++) {
      for (int64_t t = 0; t < r.seq; t++)
        ys[d * r.seq + t] = tc__ox_rnn_unsq(&r, ys[d * r.seq + t], layout ? 1 : 0, 1);
      parts[d] = tc__ox_rnn_concat(&r, ys + d * r.seq, (int)r.seq, layout ? 1 : 0);
    }
    int y = tc__ox_rnn_concat(&r, parts, dirs, layout ? 2 : 1);
    if (r.rc == TH_OK) r.rc = tc__ox_set_node(x, n, 0, y);
  }
  for (int k = 1; k <= (r.kind == 2 ? 2 : 1) && r.rc == TH_OK; k++) {
    if (!tc__ox_out(x, n, k)) continue;
    for (int d = 0; d < dirs; d++)
      parts[d] = tc__ox_rnn_unsq(&r, k == 1 ? hl[d] : cl[d], layout ? 1 : 0, 0);
    int y = tc__ox_rnn_concat(&r, parts, dirs, layout ? 1 : 0);
    if (r.rc == TH_OK) r.rc = tc__ox_set_node(x, n, k, y);
  }
  return r.rc;
}
