/* The ONNX models of the importer's tests, built with onnx_build.h: each is described next to its
 * builder so that a test can build the same network with the graph builders (or naive loops) and
 * compare. They also seed the fuzzer's corpus (tests/fuzz/). */
#include <stdio.h>

#include "onnx_build.h"

/* input [N, 3, 8, 8] -> Conv 3x3 p1 (bias) -> BatchNormalization -> Relu -> MaxPool 3 s2 p1 -> Conv
 * 3x3 p1 (no bias) + residual -> Relu -> depthwise Conv 3x3 s2 p1 (group 8) -> Clip(0, 6)
 * (attributes below opset 11, inputs from 11) -> GlobalAveragePool -> Flatten -> Gemm transB (bias)
 * -> "logits" [N, 10]. */
uint8_t *tb_model_cnn(int64_t opset, size_t *len) {
  tb *b = tb_new(opset);
  int64_t in[4] = {-1, 3, 8, 8}, w1[4] = {8, 3, 3, 3}, c8[1] = {8}, w2[4] = {8, 8, 3, 3},
          w3[4] = {8, 1, 3, 3};
  int64_t fw[2] = {10, 8}, fb[1] = {10}, one[4] = {1, 1, 1, 1}, k3[2] = {3, 3}, s2[2] = {2, 2},
          s1[2] = {1, 1};
  tb_input(b, "input", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, in);
  tb_param(b, "conv1.weight", 4, w1, 0);
  tb_param(b, "conv1.bias", 1, c8, 0);
  tb_param(b, "bn1.weight", 1, c8, 1);
  tb_param(b, "bn1.bias", 1, c8, 0);
  tb_param(b, "bn1.running_mean", 1, c8, 0);
  tb_param(b, "bn1.running_var", 1, c8, 1);
  tb_param(b, "conv2.weight", 4, w2, 0);
  tb_param(b, "conv3.weight", 4, w3, 0);
  tb_param(b, "fc.weight", 2, fw, 0);
  tb_param(b, "fc.bias", 1, fb, 0);
  Onnx__NodeProto *n = tb_node(b, "Conv", "conv1", "input,conv1.weight,conv1.bias", "c1");
  tb_attr_ints(b, n, "pads", 4, one);
  tb_attr_ints(b, n, "kernel_shape", 2, k3);
  n = tb_node(b, "BatchNormalization", "bn1",
              "c1,bn1.weight,bn1.bias,bn1.running_mean,bn1.running_var", "b1");
  tb_attr_f(b, n, "epsilon", 1e-5f);
  tb_node(b, "Relu", "relu1", "b1", "r1");
  n = tb_node(b, "MaxPool", "pool", "r1", "p1");
  tb_attr_ints(b, n, "kernel_shape", 2, k3);
  tb_attr_ints(b, n, "strides", 2, s2);
  tb_attr_ints(b, n, "pads", 4, one);
  n = tb_node(b, "Conv", "conv2", "p1,conv2.weight", "c2");
  tb_attr_ints(b, n, "pads", 4, one);
  tb_attr_ints(b, n, "strides", 2, s1);
  tb_node(b, "Add", "add", "c2,p1", "a2");
  tb_node(b, "Relu", "relu2", "a2", "r2");
  n = tb_node(b, "Conv", "conv3", "r2,conv3.weight", "c3");
  tb_attr_i(b, n, "group", 8);
  tb_attr_ints(b, n, "strides", 2, s2);
  tb_attr_ints(b, n, "pads", 4, one);
  if (opset < 11) {
    n = tb_node(b, "Clip", "clip", "c3", "k3");
    tb_attr_f(b, n, "min", 0.0f);
    tb_attr_f(b, n, "max", 6.0f);
  } else {
    tb_const_f(b, "clip_min", 0.0f);
    tb_const_f(b, "clip_max", 6.0f);
    tb_node(b, "Clip", "clip", "c3,clip_min,clip_max", "k3");
  }
  tb_node(b, "GlobalAveragePool", "gap", "k3", "g");
  tb_node(b, "Flatten", "flatten", "g", "f");
  n = tb_node(b, "Gemm", "fc", "f,fc.weight,fc.bias", "logits");
  tb_attr_i(b, n, "transB", 1);
  tb_output(b, "logits");
  uint8_t *p = tb_pack(b, len);
  tb_free(b);
  return p;
}

/* Unsqueeze(in, axes) -> out, with the axes as an attribute below opset 13 and as an input from 13.
 */
static void tb_unsqueeze(tb *b, int64_t opset, const char *in, const char *out, int naxes,
                         const int64_t *axes) {
  char nm[96], ins[200];
  if (opset < 13) {
    Onnx__NodeProto *n = tb_node(b, "Unsqueeze", out, in, out);
    tb_attr_ints(b, n, "axes", naxes, axes);
    return;
  }
  snprintf(nm, sizeof nm, "%s_axes", out);
  tb_const_ints(b, nm, naxes, axes);
  snprintf(ins, sizeof ins, "%s,%s", in, nm);
  tb_node(b, "Unsqueeze", out, ins, out);
}

/* torch's dynamic shape [d0, d1, a, c] of `src` ([B, S, ...]): Shape -> Gather 0/1 -> Unsqueeze ->
 * Concat with constants; c == 0 leaves it out ([B, S, a]). Output "<pfx>_shape". */
static void tb_dyn_shape(tb *b, int64_t opset, const char *src, const char *pfx, int64_t a,
                         int64_t c) {
  char s[96], g0[96], g1[96], u0[96], u1[96], ca[96], cc[96], ins[512], idx0[96], idx1[96], out[96];
  static const int64_t zero = 0;
  snprintf(s, sizeof s, "%s_shp", pfx);
  tb_node(b, "Shape", s, src, s);
  snprintf(idx0, sizeof idx0, "%s_i0", pfx);
  snprintf(idx1, sizeof idx1, "%s_i1", pfx);
  Onnx__NodeProto *n = tb_node(b, "Constant", idx0, "", idx0);
  int64_t v0 = 0, v1 = 1;
  tb_attr_t(b, n, "value", tb_tensor_i(b, 0, NULL, &v0));
  n = tb_node(b, "Constant", idx1, "", idx1);
  tb_attr_t(b, n, "value", tb_tensor_i(b, 0, NULL, &v1));
  snprintf(g0, sizeof g0, "%s_g0", pfx);
  snprintf(g1, sizeof g1, "%s_g1", pfx);
  snprintf(ins, sizeof ins, "%s,%s", s, idx0);
  tb_node(b, "Gather", g0, ins, g0);
  snprintf(ins, sizeof ins, "%s,%s", s, idx1);
  tb_node(b, "Gather", g1, ins, g1);
  snprintf(u0, sizeof u0, "%s_u0", pfx);
  snprintf(u1, sizeof u1, "%s_u1", pfx);
  tb_unsqueeze(b, opset, g0, u0, 1, &zero);
  tb_unsqueeze(b, opset, g1, u1, 1, &zero);
  snprintf(ca, sizeof ca, "%s_ca", pfx);
  snprintf(cc, sizeof cc, "%s_cc", pfx);
  tb_const_ints(b, ca, 1, &a);
  tb_const_ints(b, cc, 1, &c);
  snprintf(out, sizeof out, "%s_shape", pfx);
  if (c)
    snprintf(ins, sizeof ins, "%s,%s,%s,%s", u0, u1, ca, cc);
  else
    snprintf(ins, sizeof ins, "%s,%s,%s", u0, u1, ca);
  n = tb_node(b, "Concat", out, ins, out);
  tb_attr_i(b, n, "axis", 0);
}

/* MatMul(x, <name>.weightT [K, N]) then Add(<name>.bias, .) as torch exports a Linear on 3-D
 * inputs. */
static void tb_linear(tb *b, const char *x, const char *name, int64_t K, int64_t N,
                      const char *out) {
  char w[96], bias[96], mm[96], ins[256];
  int64_t wd[2] = {K, N};
  snprintf(w, sizeof w, "%s.weightT", name);
  snprintf(bias, sizeof bias, "%s.bias", name);
  tb_param(b, w, 2, wd, 0);
  tb_param(b, bias, 1, &N, 0);
  snprintf(mm, sizeof mm, "%s_mm", name);
  snprintf(ins, sizeof ins, "%s,%s", x, w);
  tb_node(b, "MatMul", mm, ins, mm);
  snprintf(ins, sizeof ins, "%s,%s", bias, mm);
  tb_node(b, "Add", out, ins, out);
}

/* Layer norm over the last axis as torch.onnx decomposes it below opset 17; `swap` puts gamma and
 * beta first in their Mul and Add and squares by Mul(d, d) instead of Pow(d, 2). */
static void tb_layer_norm(tb *b, const char *x, const char *name, int64_t C, int swap,
                          const char *out) {
  char t[12][96], ins[256], gam[96], bet[96];
  static const int64_t last = -1;
  for (int i = 0; i < 12; i++) snprintf(t[i], sizeof t[i], "%s_t%d", name, i);
  snprintf(gam, sizeof gam, "%s.weight", name);
  snprintf(bet, sizeof bet, "%s.bias", name);
  tb_param(b, gam, 1, &C, 1);
  tb_param(b, bet, 1, &C, 0);
  Onnx__NodeProto *n = tb_node(b, "ReduceMean", t[0], x, t[0]);
  tb_attr_ints(b, n, "axes", 1, &last);
  snprintf(ins, sizeof ins, "%s,%s", x, t[0]);
  tb_node(b, "Sub", t[1], ins, t[1]);
  tb_const_f(b, t[2], 2.0f);
  snprintf(ins, sizeof ins, "%s,%s", t[1], swap ? t[1] : t[2]);
  tb_node(b, swap ? "Mul" : "Pow", t[3], ins, t[3]);
  n = tb_node(b, "ReduceMean", t[4], t[3], t[4]);
  tb_attr_ints(b, n, "axes", 1, &last);
  tb_const_f(b, t[5], 1e-5f);
  snprintf(ins, sizeof ins, "%s,%s", t[4], t[5]);
  tb_node(b, "Add", t[6], ins, t[6]);
  tb_node(b, "Sqrt", t[7], t[6], t[7]);
  snprintf(ins, sizeof ins, "%s,%s", t[1], t[7]);
  tb_node(b, "Div", t[8], ins, t[8]);
  snprintf(ins, sizeof ins, swap ? "%s,%s" : "%2$s,%1$s", gam, t[8]);
  tb_node(b, "Mul", t[9], ins, t[9]);
  snprintf(ins, sizeof ins, swap ? "%s,%s" : "%2$s,%1$s", bet, t[9]);
  tb_node(b, "Add", out, ins, out);
}

/* x [N, 5, 8] float, mask [N, 5] int64 ->
 *   x0 = x + pos_table[Range(0, S)]                      (Range folded; a constant gather = slice)
 *   h = LN1(x0) (decomposed); q, k, v = Linear(h) (MatMul + Add, torch's order)
 *   heads: Reshape to [B, S, 2, 4] by Shape/Gather/Unsqueeze/Concat, Transpose(0, 2, 1, 3)
 *   scores = MatMul(q, Transpose(k, 0 1 3 2)) / 2 + (1 - Cast(Unsqueeze(mask, [1, 2]))) * -10000
 *   ctx = MatMul(Softmax(scores), v) -> Transpose -> Reshape [B, S, -1]; r1 = x0 + Linear(ctx)
 *   y = r1 + Linear(gelu(Linear(LN2(r1))))  (gelu decomposed: x * (erf(x / sqrt2) + 1) * 0.5, the
 *   products in the order (x * p) * 0.5 below opset 13, (0.5 * p) * x below 16, p * (x * 0.5) from
 * 16) cls_out = Concat(Expand(cls [1, 1, 8], Where(Equal(..)) of torch's expand(B, -1, -1)), y,
 * axis 1) Outputs y [N, 5, 8] and cls_out [N, 6, 8]. Softmax's axis is 3 below opset 13 (the last:
 * the same). */
uint8_t *tb_model_transformer(int64_t opset, size_t *len) {
  enum { S = 5, D = 8, H = 2, DH = 4, FF = 16, PMAX = 10 };
  tb *b = tb_new(opset);
  int64_t xd[3] = {-1, S, D}, md[2] = {-1, S}, pd[2] = {PMAX, D}, cd[3] = {1, 1, D};
  static const int64_t axes12[2] = {1, 2}, perm_heads[4] = {0, 2, 1, 3}, perm_kt[4] = {0, 1, 3, 2};
  tb_input(b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 3, xd);
  tb_input(b, "mask", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 2, md);
  tb_param(b, "pos_table", 2, pd, 0);
  tb_param(b, "cls", 3, cd, 0);
  /* positions: Range(0, S, 1) with S from the input's shape */
  tb_node(b, "Shape", "xs", "x", "xs");
  Onnx__NodeProto *n = tb_node(b, "Constant", "one_i", "", "one_i");
  int64_t one = 1, zero = 0;
  tb_attr_t(b, n, "value", tb_tensor_i(b, 0, NULL, &one));
  n = tb_node(b, "Constant", "zero_i", "", "zero_i");
  tb_attr_t(b, n, "value", tb_tensor_i(b, 0, NULL, &zero));
  tb_node(b, "Gather", "seq", "xs,one_i", "seq");
  tb_node(b, "Range", "pos", "zero_i,seq,one_i", "pos");
  tb_node(b, "Gather", "pos_emb", "pos_table,pos", "pos_emb");
  tb_node(b, "Add", "x0", "x,pos_emb", "x0");
  tb_layer_norm(b, "x0", "ln1", D, 0, "h");
  const char *names[3] = {"q", "k", "v"};
  for (int i = 0; i < 3; i++) {
    char lin[32], r[32], t[32], ins[96], pfx[32];
    snprintf(lin, sizeof lin, "%s_lin", names[i]);
    tb_linear(b, "h", names[i], D, D, lin);
    snprintf(pfx, sizeof pfx, "%s_h", names[i]);
    tb_dyn_shape(b, opset, lin, pfx, H, DH);
    snprintf(r, sizeof r, "%s_r", names[i]);
    snprintf(ins, sizeof ins, "%s,%s_h_shape", lin, names[i]);
    tb_node(b, "Reshape", r, ins, r);
    snprintf(t, sizeof t, "%s_t", names[i]);
    n = tb_node(b, "Transpose", t, r, t);
    tb_attr_ints(b, n, "perm", 4, perm_heads);
  }
  n = tb_node(b, "Transpose", "kT", "k_t", "kT");
  tb_attr_ints(b, n, "perm", 4, perm_kt);
  tb_node(b, "MatMul", "scores", "q_t,kT", "scores");
  tb_const_f(b, "sqrt_dh", 2.0f);
  tb_node(b, "Div", "scaled", "scores,sqrt_dh", "scaled");
  tb_unsqueeze(b, opset, "mask", "mask4", 2, axes12);
  n = tb_node(b, "Cast", "maskf", "mask4", "maskf");
  tb_attr_i(b, n, "to", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
  tb_const_f(b, "one_f", 1.0f);
  tb_node(b, "Sub", "inv", "one_f,maskf", "inv");
  tb_const_f(b, "big_neg", -10000.0f);
  tb_node(b, "Mul", "madd", "inv,big_neg", "madd");
  tb_node(b, "Add", "masked", "scaled,madd", "masked");
  n = tb_node(b, "Softmax", "probs", "masked", "probs");
  tb_attr_i(b, n, "axis", opset < 13 ? 3 : -1);
  tb_node(b, "MatMul", "ctx", "probs,v_t", "ctx");
  n = tb_node(b, "Transpose", "ctx_t", "ctx", "ctx_t");
  tb_attr_ints(b, n, "perm", 4, perm_heads);
  tb_dyn_shape(b, opset, "ctx_t", "merge", -1, 0);
  tb_node(b, "Reshape", "ctx_r", "ctx_t,merge_shape", "ctx_r");
  tb_linear(b, "ctx_r", "o", D, D, "attn");
  tb_node(b, "Add", "r1", "x0,attn", "r1");
  tb_layer_norm(b, "r1", "ln2", D, 1, "h2");
  tb_linear(b, "h2", "fc1", D, FF, "f1");
  tb_const_f(b, "sqrt2", 1.4142135f);
  tb_node(b, "Div", "g_div", "f1,sqrt2", "g_div");
  tb_node(b, "Erf", "g_erf", "g_div", "g_erf");
  tb_const_f(b, "one_g", 1.0f);
  tb_node(b, "Add", "g_add", "g_erf,one_g", "g_add");
  tb_const_f(b, "half", 0.5f);
  if (opset < 13) { /* torch's three orders of 0.5 * x * (1 + erf) */
    tb_node(b, "Mul", "g_mul", "f1,g_add", "g_mul");
    tb_node(b, "Mul", "gelu", "g_mul,half", "gelu");
  } else if (opset < 16) {
    tb_node(b, "Mul", "g_mul", "half,g_add", "g_mul");
    tb_node(b, "Mul", "gelu", "g_mul,f1", "gelu");
  } else {
    tb_node(b, "Mul", "g_mul", "f1,half", "g_mul");
    tb_node(b, "Mul", "gelu", "g_add,g_mul", "gelu");
  }
  tb_linear(b, "gelu", "fc2", FF, D, "f2");
  tb_node(b, "Add", "y", "r1,f2", "y");
  /* torch's cls.expand(B, -1, -1) */
  tb_node(b, "Shape", "ys", "y", "ys");
  tb_node(b, "Gather", "bsz", "ys,zero_i", "bsz");
  tb_unsqueeze(b, opset, "bsz", "bsz1", 1, &zero);
  static const int64_t m1m1[2] = {-1, -1};
  tb_const_ints(b, "m1m1", 2, m1m1);
  n = tb_node(b, "Concat", "esz", "bsz1,m1m1", "esz");
  tb_attr_i(b, n, "axis", 0);
  tb_node(b, "Shape", "esz_s", "esz", "esz_s");
  n = tb_node(b, "ConstantOfShape", "ones", "esz_s", "ones");
  tb_attr_t(b, n, "value", tb_tensor_i(b, 1, &one, &one));
  tb_const_ints(b, "minus1", 1, m1m1);
  tb_node(b, "Mul", "neg", "ones,minus1", "neg");
  tb_node(b, "Equal", "eq", "esz,neg", "eq");
  tb_node(b, "Where", "wsz", "eq,ones,esz", "wsz");
  tb_node(b, "Expand", "cls_e", "cls,wsz", "cls_e");
  n = tb_node(b, "Concat", "cls_out", "cls_e,y", "cls_out");
  tb_attr_i(b, n, "axis", 1);
  tb_output(b, "y");
  tb_output(b, "cls_out");
  uint8_t *p = tb_pack(b, len);
  tb_free(b);
  return p;
}

/* x [N, 6, 4, 5] -> Split(axis 1, [2, 4]) -> a, b (sizes as an attribute below opset 13, an input
 * from 13) s = Slice(b, starts [1, -4], ends [INT64_MAX, 4], axes [1, -1], steps [2, 1]) = b[:,
 * 1::2, :, 1:4] (attributes and no steps below opset 10: b[:, 1:, :, 1:4]) a' =
 * Squeeze(Unsqueeze(a, [1]), [1]) -> Slice(axis -1, 0:3) -> Concat(a', s, axis 1) -> [N, C, 4, 3]
 *   Gather(index 2, axis 2) -> [N, C, 3] -> Transpose(0, 2, 1) -> [N, 3, C]
 *   Softmax(axis 1): below opset 13 over the flattened [N, 3C], from 13 over axis 1 alone -> "y".
 */
uint8_t *tb_model_views(int64_t opset, size_t *len) {
  tb *b = tb_new(opset);
  int64_t xd[4] = {-1, 6, 4, 5};
  static const int64_t split[2] = {2, 4}, one = 1, st[2] = {1, -4}, en[2] = {INT64_MAX, 4},
                       ax[2] = {1, -1};
  static const int64_t stp[2] = {2, 1}, zero = 0, three = 3, last = -1, perm[3] = {0, 2, 1};
  tb_input(b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, xd);
  Onnx__NodeProto *n;
  if (opset < 13) {
    n = tb_node(b, "Split", "split", "x", "a,b");
    tb_attr_ints(b, n, "split", 2, split);
  } else {
    tb_const_ints(b, "sizes", 2, split);
    n = tb_node(b, "Split", "split", "x,sizes", "a,b");
  }
  tb_attr_i(b, n, "axis", 1);
  if (opset < 10) {
    n = tb_node(b, "Slice", "sl", "b", "s");
    tb_attr_ints(b, n, "starts", 2, st);
    tb_attr_ints(b, n, "ends", 2, en);
    tb_attr_ints(b, n, "axes", 2, ax);
    n = tb_node(b, "Slice", "sl_a", "a2", "a3");
    tb_attr_ints(b, n, "starts", 1, &zero);
    tb_attr_ints(b, n, "ends", 1, &three);
    tb_attr_ints(b, n, "axes", 1, &last);
  } else {
    tb_const_ints(b, "st", 2, st);
    tb_const_ints(b, "en", 2, en);
    tb_const_ints(b, "ax", 2, ax);
    tb_const_ints(b, "stp", 2, stp);
    tb_node(b, "Slice", "sl", "b,st,en,ax,stp", "s");
    tb_const_ints(b, "z1", 1, &zero);
    tb_const_ints(b, "t1", 1, &three);
    tb_const_ints(b, "l1", 1, &last);
    tb_node(b, "Slice", "sl_a", "a2,z1,t1,l1", "a3");
  }
  if (opset < 13) {
    n = tb_node(b, "Unsqueeze", "unsq", "a", "a1");
    tb_attr_ints(b, n, "axes", 1, &one);
    n = tb_node(b, "Squeeze", "sq", "a1", "a2");
    tb_attr_ints(b, n, "axes", 1, &one);
  } else {
    tb_const_ints(b, "one_ax", 1, &one);
    tb_node(b, "Unsqueeze", "unsq", "a,one_ax", "a1");
    tb_node(b, "Squeeze", "sq", "a1,one_ax", "a2");
  }
  n = tb_node(b, "Concat", "cat", "a3,s", "c");
  tb_attr_i(b, n, "axis", 1);
  n = tb_node(b, "Constant", "two", "", "two");
  int64_t two = 2;
  tb_attr_t(b, n, "value", tb_tensor_i(b, 0, NULL, &two));
  n = tb_node(b, "Gather", "sel", "c,two", "g");
  tb_attr_i(b, n, "axis", 2);
  n = tb_node(b, "Transpose", "tr", "g", "t");
  tb_attr_ints(b, n, "perm", 3, perm);
  n = tb_node(b, "Softmax", "sm", "t", "y");
  tb_attr_i(b, n, "axis", 1);
  tb_output(b, "y");
  uint8_t *p = tb_pack(b, len);
  tb_free(b);
  return p;
}

/* x [N, 2, 5, 6] (opset 13) ->
 *   y1 = Conv(Pad(x, top 0, left 1, bottom 1, right 0), w3 [3, 2, 3, 3])          (the pad folded
 * in) y2 = AveragePool(Pad(x, 1 on every side), 3, stride 2)                        (counts the
 * zeros) y3 = MaxPool(x, 2, stride 2, ceil_mode)  y4 = AveragePool(x, 3, pads 1, count_include_pad)
 *   y5 = BatchNormalization(Gemm(Flatten(x), gw [60, 4], gb [4], alpha 0.5, beta 2))  (2-D batch
 * norm) y6 = ReduceMean(x, axes [-1, 2], keepdims 0)                                   (a global
 * average pool) Outputs y1..y6. */
uint8_t *tb_model_cnn_variants(size_t *len) {
  tb *b = tb_new(13);
  int64_t xd[4] = {-1, 2, 5, 6}, wd[4] = {3, 2, 3, 3}, gw[2] = {60, 4}, c4 = 4;
  static const int64_t pad1[8] = {0, 0, 0, 1, 0, 0, 1, 0}, pad2[8] = {0, 0, 1, 1, 0, 0, 1, 1};
  static const int64_t k3[2] = {3, 3}, k2[2] = {2, 2}, s2[2] = {2, 2}, p1[4] = {1, 1, 1, 1};
  tb_input(b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, xd);
  tb_param(b, "w3", 4, wd, 0);
  tb_param(b, "gw", 2, gw, 0);
  tb_param(b, "gb", 1, &c4, 0);
  tb_param(b, "bn_s", 1, &c4, 1);
  tb_param(b, "bn_b", 1, &c4, 0);
  tb_param(b, "bn_m", 1, &c4, 0);
  tb_param(b, "bn_v", 1, &c4, 1);
  tb_const_ints(b, "pad1", 8, pad1);
  tb_const_ints(b, "pad2", 8, pad2);
  tb_node(b, "Pad", "pad_a", "x,pad1", "xp1");
  tb_node(b, "Conv", "conv", "xp1,w3", "y1");
  tb_node(b, "Pad", "pad_b", "x,pad2", "xp2");
  Onnx__NodeProto *n = tb_node(b, "AveragePool", "avg_a", "xp2", "y2");
  tb_attr_ints(b, n, "kernel_shape", 2, k3);
  tb_attr_ints(b, n, "strides", 2, s2);
  n = tb_node(b, "MaxPool", "max_c", "x", "y3");
  tb_attr_ints(b, n, "kernel_shape", 2, k2);
  tb_attr_ints(b, n, "strides", 2, s2);
  tb_attr_i(b, n, "ceil_mode", 1);
  n = tb_node(b, "AveragePool", "avg_b", "x", "y4");
  tb_attr_ints(b, n, "kernel_shape", 2, k3);
  tb_attr_ints(b, n, "pads", 4, p1);
  tb_attr_i(b, n, "count_include_pad", 1);
  tb_node(b, "Flatten", "flat", "x", "f");
  n = tb_node(b, "Gemm", "gemm", "f,gw,gb", "gm");
  tb_attr_f(b, n, "alpha", 0.5f);
  tb_attr_f(b, n, "beta", 2.0f);
  tb_node(b, "BatchNormalization", "bn", "gm,bn_s,bn_b,bn_m,bn_v", "y5");
  static const int64_t hw[2] = {-1, 2};
  n = tb_node(b, "ReduceMean", "spatial_mean", "x", "y6");
  tb_attr_ints(b, n, "axes", 2, hw);
  tb_attr_i(b, n, "keepdims", 0);
  for (int i = 1; i <= 6; i++) {
    char nm[8];
    snprintf(nm, sizeof nm, "y%d", i);
    tb_output(b, nm);
  }
  uint8_t *p = tb_pack(b, len);
  tb_free(b);
  return p;
}

/* a [N, 2, 3, 4], b [N, 1, 4, 5] (opset 17) ->
 *   o_mm = MatMul(a, b) (b's dim 1 broadcast)       o_gs = Slice(Gather(a, [0, 2], axis 2), 1:3
 * step 1000, axis 3) o_cat = Concat(a x 10, axis 3)                  o_sm = Softmax(a, axis 1) o_ln
 * = LayerNormalization(a, ln_s, no bias, epsilon 1e-3) o_ex = Expand(b, [1, 3, 1, 1]) o_af = (2 -
 * a) / 4 o_lin = MatMul(Reshape(a, [0, -1]), Transpose(Wt [6, 24])) (a dense with Wt as it is). */
uint8_t *tb_model_tensor_variants(size_t *len) {
  tb *b = tb_new(17);
  int64_t ad[4] = {-1, 2, 3, 4}, bd[4] = {-1, 1, 4, 5}, c4 = 4, wd[2] = {6, 24};
  static const int64_t idx[2] = {0, 2}, st = 1, en = 3, ax = 3, big = 1000, shape[4] = {1, 3, 1, 1};
  static const int64_t rs[2] = {0, -1};
  tb_input(b, "a", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, ad);
  tb_input(b, "b", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, bd);
  tb_param(b, "ln_s", 1, &c4, 1);
  tb_param(b, "Wt", 2, wd, 0);
  tb_node(b, "MatMul", "mm", "a,b", "o_mm");
  tb_const_ints(b, "idx", 2, idx);
  Onnx__NodeProto *n = tb_node(b, "Gather", "gather", "a,idx", "g");
  tb_attr_i(b, n, "axis", 2);
  tb_const_ints(b, "st", 1, &st);
  tb_const_ints(b, "en", 1, &en);
  tb_const_ints(b, "ax", 1, &ax);
  tb_const_ints(b, "big", 1, &big);
  tb_node(b, "Slice", "slice", "g,st,en,ax,big", "o_gs");
  n = tb_node(b, "Concat", "cat", "a,a,a,a,a,a,a,a,a,a", "o_cat");
  tb_attr_i(b, n, "axis", 3);
  n = tb_node(b, "Softmax", "sm", "a", "o_sm");
  tb_attr_i(b, n, "axis", 1);
  n = tb_node(b, "LayerNormalization", "ln", "a,ln_s", "o_ln");
  tb_attr_f(b, n, "epsilon", 1e-3f);
  tb_const_ints(b, "shape", 4, shape);
  tb_node(b, "Expand", "ex", "b,shape", "o_ex");
  tb_const_f(b, "two", 2.0f);
  tb_const_f(b, "four", 4.0f);
  tb_node(b, "Sub", "sub", "two,a", "s");
  tb_node(b, "Div", "div", "s,four", "o_af");
  tb_const_ints(b, "rs", 2, rs);
  tb_node(b, "Reshape", "flat", "a,rs", "af");
  tb_node(b, "Identity", "id", "af", "af2");
  tb_node(b, "Dropout", "drop", "af2", "af3");
  tb_node(b, "Transpose", "wT", "Wt", "W");
  tb_node(b, "MatMul", "lin", "af3,W", "o_lin");
  static const char *const outs[] = {"o_mm", "o_gs", "o_cat", "o_sm",
                                     "o_ln", "o_ex", "o_af",  "o_lin"};
  for (int i = 0; i < 8; i++) tb_output(b, outs[i]);
  uint8_t *p = tb_pack(b, len);
  tb_free(b);
  return p;
}

/* x [N, 4] -> y1 = Sigmoid, y2 = HardSigmoid(alpha 0.3, beta 0.4), y3 = x * Sigmoid(x) (silu),
 * y4 = HardSigmoid(x, 1/6, 0.5) * x (hard swish, as torch exports it below opset 14), and from
 * opset 14 y5 = HardSwish(x). */
uint8_t *tb_model_activations(int64_t opset, size_t *len) {
  tb *b = tb_new(opset);
  int64_t xd[2] = {-1, 4};
  tb_input(b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, xd);
  tb_node(b, "Sigmoid", "sig", "x", "y1");
  Onnx__NodeProto *n = tb_node(b, "HardSigmoid", "hs", "x", "y2");
  tb_attr_f(b, n, "alpha", 0.3f);
  tb_attr_f(b, n, "beta", 0.4f);
  tb_node(b, "Sigmoid", "sig2", "x", "s2");
  tb_node(b, "Mul", "silu", "x,s2", "y3");
  n = tb_node(b, "HardSigmoid", "hs2", "x", "h2");
  tb_attr_f(b, n, "alpha", 1.0f / 6);
  tb_node(b, "Mul", "hswish", "h2,x", "y4");
  for (int i = 1; i <= 4; i++) {
    char nm[8];
    snprintf(nm, sizeof nm, "y%d", i);
    tb_output(b, nm);
  }
  if (opset >= 14) {
    tb_node(b, "HardSwish", "hsw", "x", "y5");
    tb_output(b, "y5");
  }
  uint8_t *p = tb_pack(b, len);
  tb_free(b);
  return p;
}

/* ids [N, 4] int64 -> e = Gather(emb [10, 6], ids) (an embedding); first = Gather(e, 0, axis 1) [N,
 * 6]; y = Tanh(Gemm(first, fc [3, 6], transB)) (bert's pooler without bias); outputs e and y (opset
 * 13). */
uint8_t *tb_model_embedding(size_t *len) {
  tb *b = tb_new(13);
  int64_t idd[2] = {-1, 4}, ed[2] = {10, 6}, fd[2] = {3, 6};
  tb_input(b, "ids", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 2, idd);
  tb_param(b, "emb", 2, ed, 0);
  tb_param(b, "fc", 2, fd, 0);
  tb_node(b, "Gather", "embed", "emb,ids", "e");
  Onnx__NodeProto *n = tb_node(b, "Constant", "zero", "", "zero");
  int64_t zero = 0;
  tb_attr_t(b, n, "value", tb_tensor_i(b, 0, NULL, &zero));
  n = tb_node(b, "Gather", "first", "e,zero", "f");
  tb_attr_i(b, n, "axis", 1);
  n = tb_node(b, "Gemm", "pool", "f,fc", "p");
  tb_attr_i(b, n, "transB", 1);
  tb_node(b, "Tanh", "tanh", "p", "y");
  tb_output(b, "e");
  tb_output(b, "y");
  uint8_t *p = tb_pack(b, len);
  tb_free(b);
  return p;
}

/* densenet's pre-activation: x [N, 4, 5, 6]; c = Concat(x, x, axis 1) [N, 8, 5, 6];
 * y = Conv(Relu(BatchNormalization(c, pa_s, pa_b, pa_m, pa_v)), pw [3, 8, 1, 1]) (opset 13). The batch
 * norm has no conv before it, so it cannot fold into one. */
uint8_t *tb_model_preact(size_t *len) {
  tb *b = tb_new(13);
  int64_t xd[4] = {-1, 4, 5, 6}, c8 = 8, wd[4] = {3, 8, 1, 1};
  tb_input(b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, xd);
  tb_param(b, "pa_s", 1, &c8, 1);
  tb_param(b, "pa_b", 1, &c8, 0);
  tb_param(b, "pa_m", 1, &c8, 0);
  tb_param(b, "pa_v", 1, &c8, 1);
  tb_param(b, "pw", 4, wd, 0);
  Onnx__NodeProto *n = tb_node(b, "Concat", "cat", "x,x", "c");
  tb_attr_i(b, n, "axis", 1);
  tb_node(b, "BatchNormalization", "norm", "c,pa_s,pa_b,pa_m,pa_v", "nc");
  tb_node(b, "Relu", "relu", "nc", "r");
  tb_node(b, "Conv", "conv", "r,pw", "y");
  tb_output(b, "y");
  uint8_t *p = tb_pack(b, len);
  tb_free(b);
  return p;
}
