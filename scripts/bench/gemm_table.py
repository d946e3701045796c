"""The table of scripts/bench/gemm.sh, from its output folder.

usage: python3 gemm_table.py OUT ROUNDS THREADS
Reads OUT/cases.txt (gemm_bench build), OUT/ours.R ("case I MS"), OUT/torch.R ("shape SHAPE MS"), OUT/peak.R
(fma_peak) and OUT/load.R for R in 1..ROUNDS, and prints per shape the GFLOP/s and % of the FMA peak of
tunehub's fallback config, of the best config of the sweep (each config's median over rounds) and of
PyTorch, and the medians over rounds of torch's time / tunehub's (above 1: tunehub is faster).
"""
import statistics
import subprocess
import sys


def read_rows(path, tag):
    rows = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if parts and parts[0] == tag:
                rows.append(parts[1:])
    return rows


def main():
    out, rounds, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    cases = {}  # index -> (shape, label); shape "m,k,n" (dense) or "b,m,k,n,ta,tb" (batch_matmul)
    with open(f"{out}/cases.txt") as f:
        for line in f:
            head, label, _ = line.split("|", 2)
            i, shape = head.split()[:2]
            cases[int(i)] = (shape, label)
    ours = {i: [] for i in cases}  # index -> ms per round
    torch = {}  # shape -> ms per round
    peaks, loads = [], []
    for r in range(1, rounds + 1):
        for i, ms in read_rows(f"{out}/ours.{r}", "case"):
            ours[int(i)].append(float(ms))
        for shape, ms in read_rows(f"{out}/torch.{r}", "shape"):
            torch.setdefault(shape, []).append(float(ms))
        with open(f"{out}/peak.{r}") as f:
            vals = dict(line.strip().split("=", 1) for line in f if "=" in line)
        peaks.append(float(vals["peak_1t" if threads == 1 else "peak_2t"]))
        with open(f"{out}/load.{r}") as f:
            loads.append(f.read().strip())
    peak = statistics.median(peaks)
    cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model = next((l.split(":", 1)[1].strip() for l in cpu.splitlines() if l.startswith("Model name")), "?")
    print(f"CPU {model}; {threads} threads; FMA peak {peak:.1f} GFLOP/s (median of {rounds} rounds: "
          f"{' '.join(f'{p:.0f}' for p in peaks)}); load average before each round: {' '.join(loads)}")
    print("dense m,k,n: [m, k] x [n, k]^T + bias; batch_matmul b,m,k,n,ta,tb: b x [m, k] x [k, n] (t: stored "
          "transposed); fb/torch, best/torch: torch's time / tunehub's (> 1: tunehub faster)")
    print(f"{'shape':<20} {'GFLOP':>6} | {'fallback':>8} {'%peak':>6} | {'best':>6} {'%peak':>6} "
          f"{'(sweep)':<14} | {'torch':>6} {'%peak':>6} | {'fb/torch':>8} {'best/torch':>10}")
    for shape in dict.fromkeys(c[0] for c in cases.values()):  # in the order built
        v = [int(x) for x in shape.split(",")]
        gflop = 2.0 * v[0] * v[1] * v[2] * (v[3] if len(v) == 6 else 1) / 1e9
        mine = [i for i, c in cases.items() if c[0] == shape and ours[i]]
        fb = next((i for i in mine if cases[i][1] == "fallback"), None)
        best = min(mine, key=lambda i: statistics.median(ours[i]))
        tms = torch.get(shape, [])

        def rate(ms_list):
            return gflop / (statistics.median(ms_list) / 1e3) if ms_list else float("nan")

        def ratio(i):  # median over rounds of torch ms / tunehub ms
            pairs = [t / o for t, o in zip(tms, ours[i]) if o > 0]
            return statistics.median(pairs) if pairs else float("nan")

        f_rate = rate(ours[fb]) if fb is not None else float("nan")
        b_rate, t_rate = rate(ours[best]), rate(tms)
        print(f"{shape:<20} {gflop:>6.2f} | {f_rate:>8.1f} {100 * f_rate / peak:>5.1f}% | "
              f"{b_rate:>6.1f} {100 * b_rate / peak:>5.1f}% {cases[best][1][:14]:<14} | {t_rate:>6.1f} "
              f"{100 * t_rate / peak:>5.1f}% | {ratio(fb) if fb is not None else float('nan'):>8.2f} "
              f"{ratio(best):>10.2f}")


if __name__ == "__main__":
    main()
