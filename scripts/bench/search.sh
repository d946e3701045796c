#!/bin/sh
# Search efficiency: best GFLOP/s against trials for the xgb, ga and random strategies on three resnet-18
# convolutions (batch 1; 64->64 56x56, 128->128 28x28, 128->256 stride 2), each in a fresh store (no
# resumption, no transfer). Prints a table per workload and writes scripts/bench/out/search.csv
# (workload,tuner,trial,best_gflops) for plots.
#
# usage: scripts/bench/search.sh [--trials 128] [--tuners xgb,ga,random] [--workloads c64,c128,c256s2] [--seed 1]
# Kernels run on TH_NUM_THREADS threads (default 2). Run on an otherwise idle machine.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
mkdir -p "$ROOT/scripts/bench/out"
cmake -S "$ROOT" -B "$BUILD" >/dev/null
make -C "$BUILD" th_search_bench -j2 >/dev/null
TH_NUM_THREADS=${TH_NUM_THREADS:-2} "$BUILD/th_search_bench" --csv "$ROOT/scripts/bench/out/search.csv" "$@"
echo "CSV: $ROOT/scripts/bench/out/search.csv"
