#!/usr/bin/python3
"""ONNX files for the upload tests, made at test time (nothing is downloaded).

  onnx_models.py tiny OUT SEED   a small CNN (conv, batch norm, relu, max pool, flatten, linear) exported by
                                 torch.onnx.export with a dynamic batch axis; another SEED gives other weights
  onnx_models.py check TAR SEED BATCH
                                 runs the bundle TAR's model.so (through the C ABI, with its params.bin) on
                                 random inputs and compares its output with torch's for the same network:
                                 exits 1 when they differ by more than 1e-4 (relative to the output's scale)
  onnx_models.py small OUT       a network that builds in about a second and tunes in a few (conv 3x3, relu,
                                 flatten, matmul on a 16x16 image), written field by field without torch: the
                                 fault tests' fast network
  onnx_models.py bad KIND OUT    a file the importer must refuse, written field by field in protobuf's wire
                                 format (onnx.proto's field numbers): unsupported, opset, initializer, bomb,
                                 cycle, dangling
"""
import struct
import sys


def tiny_module(seed):
    import torch
    import torch.nn as nn

    torch.manual_seed(seed)

    class Tiny(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.bn = nn.BatchNorm2d(8)
            self.pool = nn.MaxPool2d(2)
            self.fc = nn.Linear(8 * 4 * 4, 10)

        def forward(self, x):
            x = self.pool(torch.relu(self.bn(self.conv(x))))
            return self.fc(torch.flatten(x, 1))

    m = Tiny().eval()
    with torch.no_grad():  # batch-norm statistics that are not the identity
        m.bn.running_mean.uniform_(-0.2, 0.2)
        m.bn.running_var.uniform_(0.5, 1.5)
    return m


def tiny(out, seed):
    import torch

    torch.onnx.export(tiny_module(seed), torch.randn(1, 3, 8, 8), out, input_names=["input"],
                      output_names=["output"], dynamic_axes={"input": {0: "N"}, "output": {0: "N"}}, opset_version=13)


def check(tar, seed, batch):
    """The bundle's model against torch's module of the same seed."""
    import ctypes
    import tarfile
    import tempfile

    import numpy as np
    import torch

    with tempfile.TemporaryDirectory() as d:
        with tarfile.open(tar) as t:
            t.extractall(d)
        lib = ctypes.CDLL(d + "/model.so")
        params = open(d + "/params.bin", "rb").read()
        model = ctypes.c_void_p()
        if lib.th_model_create(params, ctypes.c_size_t(len(params)), ctypes.byref(model)) != 0:
            lib.th_model_last_error.restype = ctypes.c_char_p
            raise SystemExit("th_model_create: " + lib.th_model_last_error().decode())
        x = np.random.default_rng(7).uniform(-1, 1, (batch, 3, 8, 8)).astype(np.float32)
        y = np.zeros((batch, 10), np.float32)
        fp = ctypes.POINTER(ctypes.c_float)
        if lib.th_model_run(model, x.ctypes.data_as(fp), y.ctypes.data_as(fp)) != 0:
            raise SystemExit("th_model_run failed")
        lib.th_model_free(model)
    with torch.no_grad():
        want = tiny_module(seed)(torch.from_numpy(x)).numpy()
    err = float(np.abs(y - want).max()) / max(1.0, float(np.abs(want).max()))
    print("max error %.3g (batch %d)" % (err, batch))
    if not err <= 1e-4:
        raise SystemExit("the bundle's output differs from torch's: %.3g" % err)


# ---- protobuf wire format, enough for onnx.proto's messages ----

def varint(n):
    b = bytearray()
    n &= (1 << 64) - 1
    while True:
        c = n & 0x7F
        n >>= 7
        if n:
            b.append(c | 0x80)
        else:
            b.append(c)
            return bytes(b)


def f_int(field, n):
    return varint(field << 3) + varint(n)


def f_bytes(field, data):
    if isinstance(data, str):
        data = data.encode()
    return varint(field << 3 | 2) + varint(len(data)) + data


# ModelProto: ir_version 1, producer_name 2, graph 7, opset_import 8 (domain 1, version 2)
def model(graph, opset=13):
    return (f_int(1, 8) + f_bytes(2, "tunehub-tests") + f_bytes(7, graph) +
            f_bytes(8, f_bytes(1, "") + f_int(2, opset)))


# ValueInfoProto: name 1, type 2 (TypeProto: tensor_type 1 (elem_type 1, shape 2 (dim 1 (dim_value 1,
# dim_param 2))))
def value_info(name, dims, elem=1):
    shape = b"".join(f_bytes(1, f_bytes(2, d) if isinstance(d, str) else f_int(1, d)) for d in dims)
    return f_bytes(1, name) + f_bytes(2, f_bytes(1, f_int(1, elem) + f_bytes(2, shape)))


# NodeProto: input 1, output 2, name 3, op_type 4
def node(op, inputs, outputs, name):
    return (b"".join(f_bytes(1, i) for i in inputs) + b"".join(f_bytes(2, o) for o in outputs) +
            f_bytes(3, name) + f_bytes(4, op))


# TensorProto: dims 1, data_type 2 (FLOAT = 1), name 8, raw_data 9
def tensor(name, dims, raw):
    return b"".join(f_int(1, d) for d in dims) + f_int(2, 1) + f_bytes(8, name) + f_bytes(9, raw)


# GraphProto: node 1, name 2, initializer 5, input 11, output 12
def graph(nodes, inputs, outputs, inits=()):
    return (b"".join(f_bytes(1, n) for n in nodes) + f_bytes(2, "g") + b"".join(f_bytes(5, t) for t in inits) +
            b"".join(f_bytes(11, v) for v in inputs) + b"".join(f_bytes(12, v) for v in outputs))


def floats(n):
    return struct.pack("<%df" % n, *([0.5] * n))


def small():
    x = value_info("x", ["N", 3, 16, 16])
    y = value_info("y", ["N", 10])
    inits = [tensor("w", [8, 3, 3, 3], floats(8 * 27)), tensor("b", [8], floats(8)),
             tensor("fw", [8 * 14 * 14, 10], floats(8 * 14 * 14 * 10))]
    nodes = [node("Conv", ["x", "w", "b"], ["c"], "conv1"), node("Relu", ["c"], ["r"], "relu1"),
             node("Flatten", ["r"], ["f"], "flat1"), node("MatMul", ["f", "fw"], ["y"], "fc1")]
    return model(graph(nodes, [x], [y], inits))


def bad(kind):
    x = value_info("x", ["N", 4])
    y = value_info("y", ["N", 4])
    if kind == "unsupported":  # Det: an ONNX operator no registry of compiled CNNs and transformers maps
        return model(graph([node("Relu", ["x"], ["r"], "relu1"), node("Det", ["r"], ["y"], "det1")], [x], [y]))
    if kind == "opset":  # opset 23, past the importer's 1..21 (Relu at opset 3 is refused by its own range)
        return model(graph([node("Relu", ["x"], ["y"], "relu1")], [x], [y]), opset=23)
    if kind == "initializer":  # dims 4x4 (64 bytes) backed by 8 bytes
        w = tensor("w", [4, 4], floats(2))
        return model(graph([node("MatMul", ["x", "w"], ["y"], "mm1")], [x], [y], [w]))
    if kind == "bomb":  # an initializer that declares 2^40 elements (and backs none)
        w = tensor("w", [1 << 20, 1 << 20], b"")
        return model(graph([node("MatMul", ["x", "w"], ["y"], "mm1")], [x], [y], [w]))
    if kind == "cycle":  # a needs b's output and b needs a's
        return model(graph([node("Add", ["x", "b_out"], ["a_out"], "a"), node("Relu", ["a_out"], ["b_out"], "b"),
                            node("Relu", ["a_out"], ["y"], "c")], [x], [y]))
    if kind == "dangling":  # an input no node, initializer or graph input makes
        return model(graph([node("Add", ["x", "nowhere"], ["y"], "add1")], [x], [y]))
    raise SystemExit("unknown kind " + kind)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "tiny":
        tiny(sys.argv[2], int(sys.argv[3]))
    elif len(sys.argv) == 5 and sys.argv[1] == "check":
        check(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif len(sys.argv) == 3 and sys.argv[1] == "small":
        with open(sys.argv[2], "wb") as f:
            f.write(small())
    elif len(sys.argv) == 4 and sys.argv[1] == "bad":
        with open(sys.argv[3], "wb") as f:
            f.write(bad(sys.argv[2]))
    else:
        raise SystemExit(__doc__)
