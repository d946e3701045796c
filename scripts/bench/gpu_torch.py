"""PyTorch eager on a CUDA device, the peer of scripts/bench/gpu.sh.

usage: python3 gpu_torch.py --rows "resnet-18:1 bert:5 ..." [--repeat 30] [--warmup 5] --out FILE.tsv

For each row (zoo network and batch) builds the model with random weights as models_torch.py does (torchvision
for the CNNs and vit_b_16; bert: the BertModel-named encoder of tests/unit/conformance_torch.py at sequence
128), or mobilenet (TVM's testing-zoo MobileNet v1 1.0 with softmax, written below as the zoo builds it), in eval mode under
inference_mode, cudnn.benchmark on, and times it twice: with TF32 off (IEEE fp32 matmuls and convolutions)
and on. Each time is the median of REPEAT runs after WARMUP, measured with CUDA events:
  h2h: the input copied from host memory, the forward pass, the outputs copied back (what `tunehub run`
       times for a cuda bundle: th_model_run_io from host buffers to host buffers);
  dev: the forward pass alone, on inputs already on the device.
Appends "net batch mode h2h_ms dev_ms note" lines to FILE.tsv ("-" and the reason in note where a row
failed: out of memory, say); prints what it set and read back for TF32. Exits 2 without a CUDA device.
"""
import argparse
import os
import statistics
import sys

import torch

import models_torch  # beside this file: the torchvision and bert builders of scripts/bench/models.sh


class MobileNetV1(torch.nn.Module):
    """MobileNet v1 1.0 as TVM's relay/testing/mobilenet.py and tunehub's zoo build it (batch norm after
    every convolution, relu, global average pool, fc, softmax)."""

    SPEC = [(32, 64, 1), (64, 128, 2), (128, 128, 1), (128, 256, 2), (256, 256, 1), (256, 512, 2),
            (512, 512, 1), (512, 512, 1), (512, 512, 1), (512, 512, 1), (512, 512, 1), (512, 1024, 2),
            (1024, 1024, 1)]

    def __init__(self):
        super().__init__()
        nn = torch.nn
        layers = [nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU()]
        for dw, pw, s in self.SPEC:
            layers += [nn.Conv2d(dw, dw, 3, s, 1, groups=dw, bias=False), nn.BatchNorm2d(dw), nn.ReLU(),
                       nn.Conv2d(dw, pw, 1, 1, 0, bias=False), nn.BatchNorm2d(pw), nn.ReLU()]
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(1024, 1000)

    def forward(self, x):
        x = self.features(x).mean((2, 3))
        return torch.softmax(self.fc(x), 1)


def build(net):
    """(model, input size) for a zoo network name: models_torch.build's, and MobileNet v1 here."""
    if net == "mobilenet":
        return MobileNetV1(), 224
    return models_torch.build(net)


def has_attr(obj, name):
    """hasattr for torch.backends modules, whose __getattr__ raised AssertionError before torch 2."""
    try:
        getattr(obj, name)
        return True
    except (AttributeError, AssertionError):
        return False


def set_tf32(on):
    """Sets TF32 for matmuls and cuDNN convolutions with the API this torch has, and returns what it reads
    back (torch 2.9 and later: fp32_precision; before: allow_tf32)."""
    b = torch.backends
    if has_attr(b.cuda.matmul, "fp32_precision") and has_attr(b.cudnn, "conv"):
        p = "tf32" if on else "ieee"
        b.cuda.matmul.fp32_precision = p
        b.cudnn.conv.fp32_precision = p
        return f"matmul.fp32_precision={b.cuda.matmul.fp32_precision} " \
               f"cudnn.conv.fp32_precision={b.cudnn.conv.fp32_precision}"
    b.cuda.matmul.allow_tf32 = on
    b.cudnn.allow_tf32 = on
    return f"matmul.allow_tf32={b.cuda.matmul.allow_tf32} cudnn.allow_tf32={b.cudnn.allow_tf32}"


def median_ms(fn, repeat, warmup):
    """Median of repeat runs of fn() between two CUDA events, after warmup runs."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(repeat):
        t0.record()
        fn()
        t1.record()
        t1.synchronize()
        times.append(t0.elapsed_time(t1))
    return statistics.median(times)


def time_row(net, batch, repeat, warmup):
    """{mode: (h2h_ms, dev_ms)} for one row."""
    torch.manual_seed(0)
    model, size = build(net)
    model = model.eval().cuda()
    if net == "bert":
        ones = torch.ones(batch, size, dtype=torch.long)
        host = [ones, ones.clone(), ones.clone()]
    else:
        host = [torch.rand(batch, 3, size, size) * 2 - 1]
    dev = [t.cuda() for t in host]
    res = {}
    with torch.inference_mode():
        for mode in ("fp32", "tf32"):
            print(f"torch {net} b{batch} {mode}: {set_tf32(mode == 'tf32')}", file=sys.stderr)

            def h2h():
                out = model(*[t.cuda() for t in host])
                outs = out if isinstance(out, (tuple, list)) else (out,)
                return [o.cpu() for o in outs]

            def on_device():
                return model(*dev)

            res[mode] = (median_ms(h2h, repeat, warmup), median_ms(on_device, repeat, warmup))
    del model, dev
    torch.cuda.empty_cache()
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", required=True, help='"NET:BATCH ..."')
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("gpu_torch.py: no CUDA device: torch.cuda.is_available() is False", file=sys.stderr)
        return 2
    torch.backends.cudnn.benchmark = True
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, "
          f"{torch.cuda.get_device_name(0)}", file=sys.stderr)
    with open(a.out, "a") as f:
        for row in a.rows.split():
            net, batch = row.rsplit(":", 1)
            try:
                res = time_row(net, int(batch), a.repeat, a.warmup)
                for mode, (h2h, dev) in res.items():
                    f.write(f"{net}\t{batch}\t{mode}\t{h2h:.3f}\t{dev:.3f}\t-\n")
                    print(f"torch {net} b{batch} {mode}: median {h2h:.3f} ms host to host, {dev:.3f} ms "
                          f"on the device ({a.repeat} runs)", file=sys.stderr)
            except Exception as e:  # a row that fails (out of memory) is reported, never filled in
                why = f"{type(e).__name__}: {e}".replace("\t", " ").replace("\n", " ")[:200]
                for mode in ("fp32", "tf32"):
                    f.write(f"{net}\t{batch}\t{mode}\t-\t-\t{why}\n")
                print(f"torch {net} b{batch} failed: {why}", file=sys.stderr)
                torch.cuda.empty_cache()
            f.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
