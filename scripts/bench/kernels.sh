#!/bin/sh
# Kernel micro-benchmark: GFLOP/s of the conv2d fallback config on resnet-18's conv shapes (batch 1) and
# the dense head, on TH_NUM_THREADS threads (default 2), against the FMA peak measured on this machine.
# Usage: kernels.sh                 resnet-18's conv shapes + dense head
#        kernels.sh NET BATCH       per-layer profile of every distinct kernel of a zoo network
#        TH_BENCH_CASE=i TH_BENCH_CFG=a,b,.. kernels.sh [...]   case i with those knob value indices
# Builds th_compiler in build-bench (or $BUILD) and links scripts/bench/kernel_bench.c against it.
# Run on an otherwise idle machine: other load skews both the peak and the kernels.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build-bench}
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
make -C "$BUILD" th_compiler th_common -j2 >/dev/null
LLVM_CONFIG=$(command -v llvm-config-16 || command -v llvm-config)
# The library holds the CUDA backend when CMake found NVRTC; link it then.
NVRTC=$(sed -n 's/^CUDA_NVRTC_LIBRARY:FILEPATH=//p' "$BUILD/CMakeCache.txt")
case "$NVRTC" in ""|*NOTFOUND) NVRTC= ;; esac
${CC:-cc} -std=c11 -D_GNU_SOURCE -O2 -I"$ROOT/common" -I"$ROOT/compiler" -I"$ROOT/compiler/ops" \
  -I"$ROOT/compiler/ir" -I"$ROOT/compiler/runtime" -I"$ROOT/compiler/llvm" \
  "$ROOT/scripts/bench/kernel_bench.c" "$BUILD/compiler/libth_compiler.a" "$BUILD/common/libth_common.a" \
  -L"$($LLVM_CONFIG --libdir)" -lLLVM-16 $NVRTC $(pkg-config --libs jansson libarchive) -lpthread -ldl -lm \
  -o "$BUILD/kernel_bench"
TH_NUM_THREADS=${TH_NUM_THREADS:-2} "$BUILD/kernel_bench" "$@"
