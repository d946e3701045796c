"""PyTorch baseline for scripts/bench/gemm.sh: one round of torch.nn.functional.linear (with bias) on each
shape, torch.set_num_threads(THREADS).

usage: /usr/bin/python3 gemm_torch.py THREADS "m,k,n;m,k,n;..." [SECONDS]
Prints "shape M K N MS" per shape: the median of the calls made in about SECONDS (default 0.15) after a
warm-up call, in the same way gemm_bench times tunehub's kernels.
"""
import statistics
import sys
import time

import torch
import torch.nn.functional as F


def main():
    threads, spec = int(sys.argv[1]), sys.argv[2]
    budget = float(sys.argv[3]) if len(sys.argv) > 3 else 0.15
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    with torch.no_grad():
        for part in filter(None, spec.split(";")):
            m, k, n = (int(v) for v in part.split(","))
            x, w, b = torch.randn(m, k), torch.randn(n, k), torch.randn(n)
            F.linear(x, w, b)
            times, t0 = [], time.perf_counter()
            while len(times) < 3 or time.perf_counter() - t0 < budget:
                a = time.perf_counter()
                F.linear(x, w, b)
                times.append((time.perf_counter() - a) * 1e3)
            print(f"shape {m} {k} {n} {statistics.median(times):.4f}", flush=True)


if __name__ == "__main__":
    main()
