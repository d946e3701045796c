/* The ONNX models of the importer's tests, built with onnx_build.h: each is described next to its builder
 * so that a test can build the same network with the graph builders (or naive loops) and compare. They
 * also seed the fuzzer's corpus (tests/fuzz/). */
#include "onnx_build.h"

/* input [N, 3, 8, 8] -> Conv 3x3 p1 (bias) -> BatchNormalization -> Relu -> MaxPool 3 s2 p1 -> Conv 3x3 p1
 * (no bias) + residual -> Relu -> Conv 1x1 s2 group 2 -> Clip(0, 6) (attributes below opset 11, inputs from
 * 11) -> GlobalAveragePool -> Flatten -> Gemm transB (bias) -> "logits" [N, 10]. */
uint8_t *tb_model_cnn(int64_t opset, size_t *len) {
  tb *b = tb_new(opset);
  int64_t in[4] = {-1, 3, 8, 8}, w1[4] = {8, 3, 3, 3}, c8[1] = {8}, w2[4] = {8, 8, 3, 3}, w3[4] = {16, 4, 1, 1};
  int64_t fw[2] = {10, 16}, fb[1] = {10}, one[4] = {1, 1, 1, 1}, k3[2] = {3, 3}, s2[2] = {2, 2}, s1[2] = {1, 1};
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
  n = tb_node(b, "BatchNormalization", "bn1", "c1,bn1.weight,bn1.bias,bn1.running_mean,bn1.running_var", "b1");
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
  tb_attr_i(b, n, "group", 2);
  tb_attr_ints(b, n, "strides", 2, s2);
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
