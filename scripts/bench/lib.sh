# Shared parts of the end-to-end benchmarks (models.sh, tune.sh; scheduler.sh uses the median helpers; the
# kernel-level kernels.sh and gemm.sh link against the compiler with bench_link_compiler, which needs ROOT
# and BUILD), sourced after HERE, ROOT, OUT, TUNEHUB and THREADS are set: the prerequisites (torch, onnxruntime-node,
# sqlite3), the FP32 FMA peak of this machine,
# and one timing function per system. Every function logs to stderr and prints its result on stdout.
# This machine's speed drifts by up to 1.6x within minutes, so the scripts time the systems in interleaved
# rounds (each system once per round, a median of a few runs each) and quote the median over rounds of each
# system and of the per-round ratios: a drift then moves both sides of a ratio alike.
PY=/usr/bin/python3
blog() { echo "[$(basename "$0") $(date +%H:%M:%S)] $*" >&2; }

# bench_link_compiler SRC EXE: builds th_compiler in $BUILD (Release) and links the C program SRC against it
# (and LLVM, and NVRTC when CMake found it) into EXE; for the kernel-level benchmarks (kernels.sh, gemm.sh).
bench_link_compiler() {
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
  make -C "$BUILD" th_compiler th_common -j2 >/dev/null
  local llvm_config nvrtc
  llvm_config=$(command -v llvm-config-16 || command -v llvm-config)
  # The library holds the CUDA backend when CMake found NVRTC; link it then.
  nvrtc=$(sed -n 's/^CUDA_NVRTC_LIBRARY:FILEPATH=//p' "$BUILD/CMakeCache.txt")
  case "$nvrtc" in ""|*NOTFOUND) nvrtc= ;; esac
  ${CC:-cc} -std=c11 -D_GNU_SOURCE -O2 -I"$ROOT/common" -I"$ROOT/compiler" -I"$ROOT/compiler/ops" \
    -I"$ROOT/compiler/ir" -I"$ROOT/compiler/runtime" -I"$ROOT/compiler/llvm" -I"$ROOT/compiler/import" \
    "$1" "$BUILD/compiler/libth_compiler.a" "$BUILD/common/libth_common.a" \
    -L"$($llvm_config --libdir)" -lLLVM-16 $nvrtc $(pkg-config --libs jansson libarchive libprotobuf-c) -lpthread -ldl -lm \
    -o "$2"
}

# bench_prereqs [NODE_DIR]: installs what the peers need; sets HAVE_ORT=1 when onnxruntime-node loads from
# NODE_DIR (default scripts/bench; onnx.sh uses tests/conformance), installed there by npm when missing.
bench_prereqs() {
  local nd=${1:-$HERE}
  [ -x "$TUNEHUB" ] || { echo "$(basename "$0"): $TUNEHUB not built (scripts/build.sh)" >&2; exit 1; }
  local sudo=; [ "$(id -u)" = 0 ] || sudo=sudo
  if ! "$PY" -c 'import torch, torchvision' 2>/dev/null; then
    blog "installing python3-torch python3-torchvision"
    $sudo apt-get update && $sudo apt-get install -y python3-torch python3-torchvision
  fi
  # Debian's python3-torch calls whatever libblas.so.3 is selected for its linear layers: the reference
  # BLAS alone made bert take 10.6 s a run instead of about 0.5 s, so give PyTorch OpenBLAS as a user has
  if [ ! -e /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3 ]; then
    blog "installing libopenblas0-pthread (PyTorch's BLAS)"
    $sudo apt-get install -y libopenblas0-pthread
  fi
  if ! command -v sqlite3 >/dev/null; then
    blog "installing sqlite3"
    $sudo apt-get install -y sqlite3
  fi
  HAVE_ORT=1
  if [ ! -d "$nd/node_modules/onnxruntime-node" ]; then
    blog "npm install --ignore-scripts in $nd"
    (cd "$nd" && npm install --ignore-scripts --no-audit --no-fund) || HAVE_ORT=0
  fi
  if [ "$HAVE_ORT" = 1 ] && ! (cd "$nd" && node -e "require('onnxruntime-node')") >/dev/null 2>&1; then
    blog "onnxruntime-node does not load (binding missing under node_modules/onnxruntime-node/bin?); ORT skipped"
    HAVE_ORT=0
  fi
  blog "torch $("$PY" -c 'import torch; print(torch.__version__)'), onnxruntime-node $( [ "$HAVE_ORT" = 1 ] &&
    node -p "require('$nd/node_modules/onnxruntime-node/package.json').version" || echo none)"
}

# Sets PEAK1 and PEAK2 (GFLOP/s on 1 and 2 threads).
bench_peak() {
  local march=-march=native
  grep -q avx512f /proc/cpuinfo || march="-march=native -mno-avx512f"
  blog "measuring the FMA peak ($(grep -q avx512f /proc/cpuinfo && echo AVX-512 || echo AVX2))"
  ${CC:-cc} -O2 $march -pthread "$HERE/fma_peak.c" -o "$OUT/fma_peak"
  local out; out=$("$OUT/fma_peak")
  PEAK1=$(echo "$out" | sed -n 's/^peak_1t=//p')
  PEAK2=$(echo "$out" | sed -n 's/^peak_2t=//p')
  blog "FMA peak $(echo "$out" | sed -n 's/^isa=//p'): 1 thread $PEAK1 GFLOP/s, 2 threads $PEAK2 GFLOP/s"
}

# bench_net_gflops NET / bench_net_size NET: a zoo network's GFLOPs at batch 1 and its (square) input size,
# from `tunehub networks` ("network GFLOPs params description", then "  input NAME DTYPE [batch, 3, H, W]")
bench_net_gflops() { "$TUNEHUB" networks ${DATA:+--data "$DATA"} | awk -v n="$1" '$1 == n { print $2; exit }'; }
bench_net_size() {
  "$TUNEHUB" networks ${DATA:+--data "$DATA"} |
    awk -v n="$1" '$1 == n { f = 1; next } f && $1 == "input" { gsub(/[],]/, "", $NF); print $NF; exit }'
}

# bench_tunehub_run TAR REPEAT -> median ms, or "-"
bench_tunehub_run() {
  local out ms
  if out=$(TH_NUM_THREADS=$THREADS "$TUNEHUB" run "$1" --repeat "$2" 2>&1); then
    echo "$out" >&2
    ms=$(echo "$out" | sed -n 's/.*median \([0-9.]*\) ms.*/\1/p' | tail -1)
    echo "${ms:--}"
  else
    blog "tunehub run $1 failed: $out"; echo -
  fi
}

# bench_torch NET BATCH REPEAT ONNX_OUT -> median ms, or "-" (also exports the ONNX file for ORT)
bench_torch() {
  local out log=$OUT/$1_b$2.torch.log
  if out=$("$PY" "$HERE/models_torch.py" "$1" "$2" "$THREADS" "$3" "$4" 2>"$log"); then
    grep -E '^torch ' "$log" >&2 || true
    echo "$out" | sed -n 's/^median_ms=//p'
  else
    blog "torch $1 b$2 failed"; tail -5 "$log" >&2; echo -
  fi
}

# bench_ort ONNX BATCH SIZE REPEAT -> median ms, or "-" (SIZE "-": every input's shape from the model)
bench_ort() {
  local out log=${1%.onnx}.ort.log shape=
  if [ "$HAVE_ORT" != 1 ] || [ ! -s "$1" ]; then echo -; return; fi
  [ "$3" = - ] || shape="$2,3,$3,$3"
  if out=$(cd "$HERE" && node models_ort.js "$1" "$THREADS" "$4" $shape 2>"$log"); then
    cat "$log" >&2
    echo "$out" | sed -n 's/^median_ms=//p'
  else
    blog "ORT $1 failed"; tail -5 "$log" >&2; echo -
  fi
}

# bench_median V... -> the median of the values that are numbers, or "-"
bench_median() {
  printf '%s\n' "$@" | awk '$1 ~ /^[0-9.]+$/' | sort -g |
    awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
# bench_round_ratios "A1 A2 .." "B1 B2 .." -> the median over rounds of Ai / Bi (rounds where both are numbers)
bench_round_ratios() {
  paste -d' ' <(printf '%s\n' $1) <(printf '%s\n' $2) |
    awk '$1 ~ /^[0-9.]+$/ && $2 ~ /^[0-9.]+$/ && $2 > 0 { print $1 / $2 }' | sort -g |
    awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) printf "%.3f\n", v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
bench_ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || a == "-" || b == "-" || b == 0) print "-"; else printf "%.2f", a / b }'; }
# bench_share GFLOP MS -> percent of the 2-thread peak
bench_share() { awk -v g="$1" -v ms="$2" -v p="$PEAK2" 'BEGIN { if (ms == "" || ms == "-" || ms == 0 || p == "") print "-"; else printf "%.1f", 100 * g / (ms / 1e3) / p }'; }
