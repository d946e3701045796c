#!/usr/bin/python3
"""Exports a network that is not in tunehub's zoo to ONNX with seeded random weights and a dynamic batch
axis, and writes seeded inputs for it, for the ONNX conformance tests (onnx_conformance.sh) and the import
benchmark (scripts/bench/onnx.sh):

- OUTDIR/NAME.onnx, exported by torch.onnx at the opset MODELS gives (every input and output has the
  symbolic first dimension "batch"; the other dimensions are fixed: 224x224 images, 128 tokens);
- OUTDIR/NAME.json: the opset, the torch version, and every input and output with its dtype and shape
  (the first dimension "batch");
- OUTDIR/b<B>/<input>.bin for every batch B of --batches: the inputs as raw little-endian files (float32
  images uniform in [-1, 1); bert's int64 input_ids, token_type_ids and attention_mask from
  conformance_torch.bert_inputs, whose odd rows pad their last 40 positions).

Weights are random and seeded: the CNNs get random batch-norm statistics and biases
(conformance_torch.randomize_cnn); convnext_tiny and vit_b_16 also get random layer-norm parameters and
biases (conformance_torch.randomize_zeros), and convnext's layer scales (1e-6 at initialisation, which would
hide every block behind its residual) values in [0.1, 0.3]; bert is conformance_torch.seeded_bert. The script
runs the model in torch on the largest batch's inputs and exits 1 when an output is constant along its last
axis or across the batch (conformance_torch.check_varies): a comparison against it would prove nothing.

Opsets: 13 for most CNNs; 14 for mobilenet_v3_large (HardSwish is an ONNX op from 14) and bert (Gather,
Where and the decomposed layer norm and erf gelu); 15 for googlenet; 17 for convnext_tiny and vit_b_16
(LayerNormalization is an ONNX op from 17). So the importer sees opsets 13, 14, 15 and 17, and layer norm
both whole and decomposed.

usage: /usr/bin/python3 onnx_export.py NAME OUTDIR [--batches 1,2]
       /usr/bin/python3 onnx_export.py --list          the names, one a line
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "unit"))
import conformance_torch as ct  # noqa: E402
import torch  # noqa: E402
import torchvision  # noqa: E402
import torchvision.models as tvm  # noqa: E402

SIZE = 224
SEQ = 128

# name: (torchvision builder or None for bert, opset)
MODELS = {
    "resnet50": (lambda: tvm.resnet50(), 13),
    "mobilenet_v3_large": (lambda: tvm.mobilenet_v3_large(), 14),
    "efficientnet_b0": (lambda: tvm.efficientnet_b0(), 13),
    "densenet121": (lambda: tvm.densenet121(), 13),
    "convnext_tiny": (lambda: tvm.convnext_tiny(), 17),
    "googlenet": (lambda: tvm.googlenet(aux_logits=False, transform_input=False, init_weights=False), 15),
    "shufflenet_v2_x1_0": (lambda: tvm.shufflenet_v2_x1_0(), 13),
    "vit_b_16": (lambda: tvm.vit_b_16(), 17),
    # grouped convolutions (issue 38): per-group widths 16 (regnet) and 4..32 (resnext)
    "regnet_x_400mf": (lambda: tvm.regnet_x_400mf(), 13),
    "resnext50_32x4d": (lambda: tvm.resnext50_32x4d(), 13),
    # segmentation: dilated convolutions and bilinear Resize (the "out" map)
    "lraspp_mobilenet_v3_large": (lambda: Seg(tvm.segmentation.lraspp_mobilenet_v3_large(
        weights_backbone=None)), 13),
    # not in CI (onnx.cmake): 127 GFLOP at batch 1 once its dilated 3x3 convs are 5x5 and 9x9
    "fcn_resnet50": (lambda: Seg(tvm.segmentation.fcn_resnet50(weights_backbone=None)), 13),
    "bert_base": (None, 14),
}


class Seg(torch.nn.Module):
    """A segmentation model's "out" map alone (torchvision returns a dict)."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return self.m(x)["out"]


BERT_INPUTS = ["input_ids", "token_type_ids", "attention_mask"]
BERT_OUTPUTS = ["last_hidden_state", "pooler_output"]


def calibrate_batch_norm(model, g):
    """Sets every BatchNorm2d's running statistics to those of a forward pass in training mode on 4
    random images, then moves them at random (means by up to 0.2 standard deviations, variances by a
    factor in [0.7, 1.3]). Statistics drawn at random alone do not match the activations: layer after
    layer they shrink the part of the signal that depends on the input until mobilenet_v3_large and
    efficientnet_b0 give every image the same logits (differences of 1e-8)."""
    bns = [m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    for m in bns:
        m.reset_running_stats()
        m.momentum = None  # a cumulative average: one batch gives its own statistics
    model.train()
    with torch.no_grad():
        model(torch.rand(4, 3, SIZE, SIZE, generator=g) * 2 - 1)
        for m in bns:
            std = m.running_var.sqrt()
            m.running_mean.add_(ct.uniform(std.shape, -0.2, 0.2, g) * std)
            m.running_var.mul_(ct.uniform(std.shape, 0.7, 1.3, g))
    model.eval()


def build(name, g):
    """The seeded model in eval mode, its input names and its output names."""
    ctor, _ = MODELS[name]
    if ctor is None:
        return ct.seeded_bert(g), BERT_INPUTS, BERT_OUTPUTS
    model = ctor()
    if name != "vit_b_16":
        ct.randomize_cnn(model, g)
        calibrate_batch_norm(model, g)
    if name in ("convnext_tiny", "vit_b_16"):
        ct.randomize_zeros(model, g)
    if name == "convnext_tiny":
        with torch.no_grad():
            for mname, p in model.named_parameters():
                if mname.endswith("layer_scale"):
                    p.copy_(ct.uniform(p.shape, 0.1, 0.3, g))
    return model.eval(), ["input"], ["output"]


def inputs(name, batch):
    """The seeded inputs at `batch` (their own generator, so that they do not depend on the weights or on
    the other batches)."""
    g = torch.Generator().manual_seed(1000 + batch)
    if MODELS[name][0] is None:
        return ct.bert_inputs(batch, SEQ, g)
    return (torch.rand(batch, 3, SIZE, SIZE, generator=g) * 2 - 1,)


def describe(names, tensors):
    return [{"name": n, "dtype": "int64" if t.dtype == torch.int64 else "float32",
             "shape": ["batch"] + list(t.shape[1:])} for n, t in zip(names, tensors)]


def main():
    ap = argparse.ArgumentParser(description="Exports a seeded torchvision model (or bert) to ONNX.")
    ap.add_argument("name", nargs="?", choices=sorted(MODELS))
    ap.add_argument("outdir", nargs="?")
    ap.add_argument("--batches", default="1,2", help="batches to write inputs for (comma-separated; the "
                    "largest, at least 2, is the one checked in torch)")
    ap.add_argument("--list", action="store_true", help="print the model names")
    a = ap.parse_args()
    if a.list:
        print("\n".join(MODELS))
        return 0
    if not a.name or not a.outdir:
        ap.error("NAME and OUTDIR are required")
    batches = sorted({int(b) for b in a.batches.split(",")})
    if batches[0] < 1:
        ap.error("batches are 1 or more")
    check_batch = max(2, batches[-1])
    torch.manual_seed(1234)
    torch.set_num_threads(2)
    g = torch.Generator().manual_seed(99)
    t0 = time.time()
    try:
        model, in_names, out_names = build(a.name, g)
        with torch.no_grad():
            ys = model(*inputs(a.name, check_batch))
        ys = ys if isinstance(ys, tuple) else (ys,)
        for n, y in zip(out_names, ys):
            ct.check_varies(n, y)
            print("%s: batch row 1 differs from row 0 by up to %.3g of max |y|"
                  % (n, float((y[1] - y[0]).abs().max() / y.abs().max())))
    except ct.Fail as e:
        sys.stderr.write("onnx_export.py %s: %s\n" % (a.name, e))
        return 1
    os.makedirs(a.outdir, exist_ok=True)
    path = os.path.join(a.outdir, a.name + ".onnx")
    opset = MODELS[a.name][1]
    # traced at batch 2, so that no shape is specialised to a batch of 1; outside no_grad: there
    # nn.MultiheadAttention (vit) takes its fused fast path, which has no ONNX export
    example = inputs(a.name, 2)
    axes = {n: {0: "batch"} for n in in_names + out_names}
    torch.onnx.export(model, example, path + ".tmp", opset_version=opset, input_names=in_names,
                      output_names=out_names, dynamic_axes=axes, do_constant_folding=True)
    os.replace(path + ".tmp", path)
    for b in batches:
        d = os.path.join(a.outdir, "b%d" % b)
        os.makedirs(d, exist_ok=True)
        for n, t in zip(in_names, inputs(a.name, b)):
            t.contiguous().numpy().astype("<i8" if t.dtype == torch.int64 else "<f4").tofile(
                os.path.join(d, n + ".bin"))
    meta = {"name": a.name, "opset": opset, "torch": torch.__version__, "torchvision": torchvision.__version__,
            "inputs": describe(in_names, example), "outputs": describe(out_names, ys), "batches": batches,
            "export_seconds": round(time.time() - t0, 1), "onnx_bytes": os.path.getsize(path)}
    with open(os.path.join(a.outdir, a.name + ".json"), "w") as f:
        json.dump(meta, f, indent=1)
    print("%s: opset %d, %.1f MB, exported in %.1f s" % (a.name, opset, meta["onnx_bytes"] / 1e6,
                                                          meta["export_seconds"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
