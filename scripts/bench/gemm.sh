#!/bin/bash
# GEMM benchmark: tunehub's dense template (packed GEMM, bias epilogue) on the transformers' four linear
# shapes (k x n = 768x768, 768x2304, 768x3072, 3072x768) at m = 128, 197, 1280, 1970 rows (bert and vit
# at batch 1 and 10) and its batch_matmul on their attention products (Q.K^T, attn.V; 12 and 120 heads),
# for the fallback config and the best of a one-knob-at-a-time sweep around it, next to PyTorch
# (torch.nn.functional.linear, torch.matmul on OpenBLAS, in its faster threading; see gemm_torch.py) on
# the same shapes and the FP32 FMA peak (fma_peak.c), all on --threads threads. The systems run in
# --rounds interleaved rounds (fma_peak, tunehub, torch once each per round; a median of the calls in
# ~0.15 s per case) and the table quotes medians over rounds, and the median of the per-round
# torch/tunehub time ratios (see lib.sh). The 1-minute load average before each round is printed: other
# tenants' load skews every column.
#
# usage: scripts/bench/gemm.sh [--rounds 5] [--threads 2] [--shapes "m,k,n;b,m,k,n,ta,tb;..."] [--no-sweep]
# Needs /usr/bin/python3 with torch. Writes scripts/bench/out/gemm/ (kernels, per-round results, table.txt).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${BUILD:-$ROOT/build-bench}
OUT=$HERE/out/gemm
ROUNDS=5
THREADS=2
SHAPES=
SWEEP=1
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) ROUNDS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --shapes) SHAPES=$2; shift 2 ;;
    --no-sweep) SWEEP=0; shift ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "gemm.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
source "$HERE/lib.sh"
rm -rf "$OUT"
mkdir -p "$OUT"
blog "building gemm_bench and the kernels"
bench_link_compiler "$HERE/gemm_bench.c" "$BUILD/gemm_bench"
GEMM_SHAPES=$SHAPES GEMM_SWEEP=$SWEEP "$BUILD/gemm_bench" build "$OUT"
march=-march=native
grep -q avx512f /proc/cpuinfo || march="-march=native -mno-avx512f"
${CC:-cc} -O2 $march -pthread "$HERE/fma_peak.c" -o "$OUT/fma_peak"
# the shapes as torch gets them, from the case list
TSHAPES=$(awk '{ print $2 }' "$OUT/cases.txt" | awk '!seen[$0]++' | paste -sd';')
for r in $(seq "$ROUNDS"); do
  load=$(cut -d' ' -f1 /proc/loadavg)
  blog "round $r/$ROUNDS (load average $load)"
  echo "$load" > "$OUT/load.$r"
  "$OUT/fma_peak" 30000000 > "$OUT/peak.$r"
  TH_NUM_THREADS=$THREADS "$BUILD/gemm_bench" run "$OUT" > "$OUT/ours.$r"
  "$PY" "$HERE/gemm_torch.py" "$THREADS" "$TSHAPES" > "$OUT/torch.$r"
done
"$PY" "$HERE/gemm_table.py" "$OUT" "$ROUNDS" "$THREADS" | tee "$OUT/table.txt"
