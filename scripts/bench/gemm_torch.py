"""PyTorch baseline for scripts/bench/gemm.sh: one round of torch.nn.functional.linear (with bias) or
torch.matmul (a batch of matrices, either operand a transposed view, times 0.125 as attention scales) on
each shape, torch.set_num_threads(THREADS).

usage: /usr/bin/python3 gemm_torch.py THREADS "SHAPE;SHAPE;..." [SECONDS]
SHAPE is "m,k,n" (linear: [m, k] x [n, k]^T) or "b,m,k,n,ta,tb" (b products [m, k] x [k, n]; ta, tb: the
operand is stored transposed). Prints "shape SHAPE MS" per shape: the median of the calls made in about
SECONDS (default 0.15) after a warm-up call, as gemm_bench times tunehub's kernels.
"""
import statistics
import sys
import time

import torch
import torch.nn.functional as F


def op_for(v):
    if len(v) == 3:
        m, k, n = v
        x, w, b = torch.randn(m, k), torch.randn(n, k), torch.randn(n)
        return lambda: F.linear(x, w, b)
    bt, m, k, n, ta, tb = v
    a = torch.randn(bt, k, m).transpose(1, 2) if ta else torch.randn(bt, m, k)
    b = torch.randn(bt, n, k).transpose(1, 2) if tb else torch.randn(bt, k, n)
    return lambda: torch.matmul(a, b) * 0.125


def main():
    threads, spec = int(sys.argv[1]), sys.argv[2]
    budget = float(sys.argv[3]) if len(sys.argv) > 3 else 0.15
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    with torch.no_grad():
        for part in filter(None, spec.split(";")):
            run = op_for([int(v) for v in part.split(",")])
            run()
            times, t0 = [], time.perf_counter()
            while len(times) < 3 or time.perf_counter() - t0 < budget:
                a = time.perf_counter()
                run()
                times.append((time.perf_counter() - a) * 1e3)
            print(f"shape {part} {statistics.median(times):.4f}", flush=True)


if __name__ == "__main__":
    main()
