"""PyTorch baseline for scripts/bench/gemm.sh: one round of torch.nn.functional.linear (with bias) or
torch.matmul (a batch of matrices, either operand a transposed view, times 0.125 as attention scales) on
each shape, on THREADS threads.

usage: /usr/bin/python3 gemm_torch.py THREADS "SHAPE;SHAPE;..." [SECONDS]
SHAPE is "m,k,n" (linear: [m, k] x [n, k]^T) or "b,m,k,n,ta,tb" (b products [m, k] x [k, n]; ta, tb: the
operand is stored transposed). Prints "shape SHAPE MS" per shape: the median of the calls made in about
SECONDS (default 0.15) after a warm-up call, as gemm_bench times tunehub's kernels.
Debian's torch runs these products in OpenBLAS (libblas.so.3), whose own pool has THREADS threads; torch's
OpenMP threads, spinning while idle, fought it for the 2 cores and made the products 2x slower (12 ms
instead of 1.3 for 197x768x768). So OpenMP waits passively, and each shape is timed with
torch.set_num_threads(THREADS) and with 1 (the batch loop serial, each product on OpenBLAS's THREADS
threads), keeping the faster: the best this PyTorch does here.
"""
import os
import statistics
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("OPENBLAS_NUM_THREADS", sys.argv[1] if len(sys.argv) > 1 else "1")

import torch  # noqa: E402 (after the environment that its OpenMP and OpenBLAS read at load)
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


def median_ms(run, budget):
    run()
    times, t0 = [], time.perf_counter()
    while len(times) < 3 or time.perf_counter() - t0 < budget:
        a = time.perf_counter()
        run()
        times.append((time.perf_counter() - a) * 1e3)
    return statistics.median(times)


def main():
    threads, spec = int(sys.argv[1]), sys.argv[2]
    budget = float(sys.argv[3]) if len(sys.argv) > 3 else 0.15
    torch.manual_seed(0)
    with torch.no_grad():
        for part in filter(None, spec.split(";")):
            run = op_for([int(v) for v in part.split(",")])
            best = float("inf")
            for intra in dict.fromkeys((threads, 1)):
                torch.set_num_threads(intra)
                best = min(best, median_ms(run, budget / 2))
            print(f"shape {part} {best:.4f}", flush=True)


if __name__ == "__main__":
    main()
