#!/usr/bin/python3
"""Generates a conformance case for tunehub against PyTorch: builds torchvision model NAME with seeded
random weights (and random batch-norm running statistics, so that folding is exercised), runs it in eval
mode on a seeded input, and writes DIR/state.pt, DIR/input.bin and DIR/logits.bin (raw float32).

usage: conformance_torch.py NAME BATCH SIZE DIR
"""
import sys

import torch
import torchvision.models as tvm

BUILDERS = {
    "resnet-18": lambda: tvm.resnet18(),
    "resnet-34": lambda: tvm.resnet34(),
    "resnet-50": lambda: tvm.resnet50(),
    "resnet-101": lambda: tvm.resnet101(),
    "resnet-152": lambda: tvm.resnet152(),
    "vgg-11": lambda: tvm.vgg11(),
    "vgg-13": lambda: tvm.vgg13(),
    "vgg-16": lambda: tvm.vgg16(),
    "vgg-19": lambda: tvm.vgg19(),
    "mobilenet-v2": lambda: tvm.mobilenet_v2(),
    "squeezenet_v1.0": lambda: tvm.squeezenet1_0(),
    "squeezenet_v1.1": lambda: tvm.squeezenet1_1(),
    "inception_v3": lambda: tvm.inception_v3(aux_logits=False, init_weights=False, transform_input=False),
}


def main(name, batch, size, out):
    torch.manual_seed(1234)
    torch.set_num_threads(2)
    model = BUILDERS[name]()
    g = torch.Generator().manual_seed(99)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                c = m.num_features
                m.running_mean.copy_((torch.rand(c, generator=g) - 0.5) * 0.2)
                m.running_var.copy_(torch.rand(c, generator=g) * 0.8 + 0.6)
                m.weight.copy_(torch.rand(c, generator=g) * 0.6 + 0.6)
                m.bias.copy_((torch.rand(c, generator=g) - 0.5) * 0.2)
            elif isinstance(m, (torch.nn.Linear, torch.nn.Conv2d)) and m.bias is not None:
                m.bias.copy_((torch.rand(m.bias.shape, generator=g) - 0.5) * 0.2)
    model.eval()
    x = torch.rand(batch, 3, size, size, generator=g) * 2 - 1
    with torch.no_grad():
        y = model(x)
    torch.save(model.state_dict(), out + "/state.pt")
    x.numpy().astype("<f4").tofile(out + "/input.bin")
    y.numpy().astype("<f4").tofile(out + "/logits.bin")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]))
