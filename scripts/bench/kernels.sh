#!/bin/bash
# Kernel micro-benchmark: GFLOP/s of the conv2d fallback config on resnet-18's conv shapes (batch 1) and
# the dense head, on TH_NUM_THREADS threads (default 2), against the FMA peak measured on this machine.
# Usage: kernels.sh                 resnet-18's conv shapes + dense head
#        kernels.sh NET BATCH       per-layer profile of every distinct kernel of a zoo network
#        TH_BENCH_CASE=i TH_BENCH_CFG=a,b,.. kernels.sh [...]   case i with those knob value indices
# Builds th_compiler in build-bench (or $BUILD) and links scripts/bench/kernel_bench.c against it.
# Run on an otherwise idle machine: other load skews both the peak and the kernels.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${BUILD:-$ROOT/build-bench}
source "$HERE/lib.sh"
bench_link_compiler "$HERE/kernel_bench.c" "$BUILD/kernel_bench"
TH_NUM_THREADS=${TH_NUM_THREADS:-2} "$BUILD/kernel_bench" "$@"
