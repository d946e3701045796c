"""PyTorch baseline for scripts/bench/models.sh.

usage: /usr/bin/python3 models_torch.py NET BATCH THREADS REPEAT ONNX_OUT
Builds the torchvision model with random weights (vit: vit_b_16; bert: the BertModel-named encoder of
tests/unit/conformance_torch.py at sequence 128, fed three int64 inputs of ones), times REPEAT forward
passes after a warm-up (eval, no_grad, torch.set_num_threads(THREADS)), prints "median_ms=X", and exports
ONNX (opset 13; 14 for the transformers) to ONNX_OUT unless that file exists already (the benchmarks call it
once per round).
"""
import os
import statistics
import sys
import time

# before torch loads OpenMP: its threads spin between regions and fought OpenBLAS's pool for the 2 cores
# (bert b1 under load: 2084 ms spinning, 330 ms passive), so PyTorch gets its faster setting
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import torch  # noqa: E402
import torchvision.models as tvm


SEQ = 128


def build(net):
    if net == "vit":
        return tvm.vit_b_16(weights=None), 224
    if net == "bert":
        here = os.path.dirname(os.path.abspath(__file__))
        # tests/unit in the tree; beside this file in scripts/bench/gpu.sh's pack
        sys.path[:0] = [os.path.join(here, "..", "..", "tests", "unit"), here]
        import conformance_torch  # the torch twin of tunehub's zoo bert, with BertModel's parameter names
        return conformance_torch.BertModel(), SEQ
    if net == "inception_v3":
        return tvm.inception_v3(weights=None, aux_logits=False, init_weights=False), 299
    ctor = {
        "resnet-18": tvm.resnet18, "resnet-34": tvm.resnet34, "resnet-50": tvm.resnet50,
        "resnet-101": tvm.resnet101, "resnet-152": tvm.resnet152,
        "vgg-11": tvm.vgg11, "vgg-13": tvm.vgg13, "vgg-16": tvm.vgg16, "vgg-19": tvm.vgg19,
        "mobilenet-v2": tvm.mobilenet_v2,
        "squeezenet_v1.0": tvm.squeezenet1_0, "squeezenet_v1.1": tvm.squeezenet1_1,
    }.get(net)
    if ctor is None:
        sys.exit(f"models_torch.py: no torchvision equivalent for {net}")
    return ctor(weights=None), 224


def main():
    net, batch, threads, repeat, onnx_out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model, size = build(net)
    model.eval()
    if net == "bert":
        ones = torch.ones(batch, size, dtype=torch.long)
        x = (ones, ones.clone(), ones.clone())
        names, outs, opset = ["input_ids", "token_type_ids", "attention_mask"], ["last_hidden_state", "pooler_output"], 14
    else:
        x = (torch.randn(batch, 3, size, size),)
        names, outs, opset = ["input"], ["output"], 14 if net == "vit" else 13
    with torch.no_grad():
        for _ in range(3):
            model(*x)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            model(*x)
            times.append((time.perf_counter() - t0) * 1e3)
    if not (os.path.exists(onnx_out) and os.path.getsize(onnx_out) > 0):
        # outside no_grad: there nn.MultiheadAttention (vit) takes its fused fast path, which has no ONNX export
        torch.onnx.export(model, x, onnx_out, opset_version=opset, input_names=names, output_names=outs)
    print(f"torch {net} b{batch}: {repeat} runs, median {statistics.median(times):.3f} ms, min {min(times):.3f} ms",
          file=sys.stderr)
    print(f"median_ms={statistics.median(times):.3f}")


if __name__ == "__main__":
    main()
