"""Exports small torch models to ONNX for the importer's conformance test (test_compiler_onnx.c, label
conformance): torchvision's resnet18 and mobilenet_v3_small at 64x64 and nn.TransformerEncoderLayer (gelu,
batch_first), seeded,
with a dynamic batch axis, at the opset given. Writes NAME.onnx, NAME.in (float32 input, raw) and NAME.out
(float32 output of torch, raw) for a batch of 2, and NAME.txt ("B d1 d2 ..." of the input, then of the
output). torch.onnx.export needs no onnx package (Debian's torch 1.13)."""
import os
import sys
import warnings

import torch
import torchvision

warnings.filterwarnings("ignore")


def export(name, model, x, outdir, opset):
    model.eval()
    with torch.no_grad():
        y = model(x)
    path = os.path.join(outdir, name)
    torch.onnx.export(model, (x,), path + ".onnx", input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}}, opset_version=opset,
                      do_constant_folding=True)
    x.numpy().astype("float32").tofile(path + ".in")
    y.numpy().astype("float32").tofile(path + ".out")
    with open(path + ".txt", "w") as f:
        f.write(" ".join(str(d) for d in x.shape) + "\n" + " ".join(str(d) for d in y.shape) + "\n")


def main():
    outdir, opset = sys.argv[1], int(sys.argv[2])
    which = sys.argv[3:] or ["resnet18", "encoder"]
    torch.manual_seed(0)
    if "resnet18" in which:
        m = torchvision.models.resnet18(weights=None)
        with torch.no_grad():  # non-trivial batch-norm statistics (a fresh model has mean 0, var 1)
            for mod in m.modules():
                if isinstance(mod, torch.nn.BatchNorm2d):
                    mod.running_mean.uniform_(-0.1, 0.1)
                    mod.running_var.uniform_(0.5, 1.5)
                    mod.weight.uniform_(0.5, 1.0)
                    mod.bias.uniform_(-0.1, 0.1)
        export("resnet18", m, torch.randn(2, 3, 64, 64), outdir, opset)
    if "mobilenet_v3" in which:
        torch.manual_seed(2)
        m = torchvision.models.mobilenet_v3_small(weights=None)
        with torch.no_grad():
            for mod in m.modules():
                if isinstance(mod, torch.nn.BatchNorm2d):
                    mod.running_mean.uniform_(-0.1, 0.1)
                    mod.running_var.uniform_(0.5, 1.5)
        export("mobilenet_v3", m, torch.randn(2, 3, 64, 64), outdir, opset)
    if "encoder" in which:
        torch.manual_seed(1)
        layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0,
                                                 activation="gelu", batch_first=True)
        export("encoder", layer, torch.randn(2, 7, 32), outdir, opset)


if __name__ == "__main__":
    main()
