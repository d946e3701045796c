#!/bin/bash
# End-to-end model benchmark: tunehub (llvm, fallback configs) vs PyTorch (torchvision) vs ONNX Runtime
# (onnxruntime-node), all on $THREADS threads (default 2), against the FP32 FMA peak measured here.
#
# usage: scripts/bench/models.sh [--networks "resnet-18 ..."] [--batches "1 10"] [--threads 2] [--repeat 20]
#
# Needs the built binary ($TUNEHUB, default build/server/tunehub), /usr/bin/python3 with torch+torchvision
# (apt-get installs python3-torch python3-torchvision if missing) and node/npm (npm install --ignore-scripts
# in scripts/bench if node_modules is missing). Writes ONNX files, bundles and models.csv to scripts/bench/out.
# Run on an otherwise idle machine.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
TUNEHUB=${TUNEHUB:-$ROOT/build/server/tunehub}
NETWORKS="resnet-18 resnet-50 vgg-11 mobilenet-v2 squeezenet_v1.1 inception_v3"
BATCHES="1 10"
THREADS=2
REPEAT=20
while [ $# -gt 0 ]; do
  case "$1" in
    --networks) NETWORKS=$2; shift 2 ;;
    --batches) BATCHES=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "models.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
OUT=$HERE/out
mkdir -p "$OUT"
DATA=$OUT/data
mkdir -p "$DATA"
source "$HERE/lib.sh"
bench_prereqs
bench_peak

# ---- per-network GFLOPs (batch 1) from the registry ----

CSV=$OUT/models.csv
echo "network,batch,tunehub_build_s,tunehub_ms,torch_ms,ort_ms,tunehub_over_torch,tunehub_over_ort,gflop,tunehub_peak_pct,torch_peak_pct,ort_peak_pct,peak_2t_gflops" > "$CSV"
for NET in $NETWORKS; do
  G1=$(bench_net_gflops "$NET")
  [ -n "$G1" ] || { blog "$NET: not in 'tunehub networks', skipped"; continue; }
  SIZE=$(bench_net_size "$NET")
  for B in $BATCHES; do
    G=$(awk -v g="$G1" -v b="$B" 'BEGIN { printf "%.2f", g * b }')
    TAG=${NET}_b$B
    # tunehub
    blog "$TAG: tunehub build"
    TBUILD=-; TMS=-
    T0=$(date +%s.%N)
    if "$TUNEHUB" build llvm "$NET" "$B" -o "$OUT/$TAG.tar" --data "$DATA" > "$OUT/$TAG.build.log" 2>&1; then
      TBUILD=$(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
      blog "$TAG: built in ${TBUILD}s; tunehub run --repeat $REPEAT"
      TMS=$(bench_tunehub_run "$OUT/$TAG.tar" "$REPEAT")
    else
      blog "$TAG: tunehub build failed (see $OUT/$TAG.build.log)"; tail -5 "$OUT/$TAG.build.log" >&2
    fi
    blog "$TAG: torch"
    PMS=$(bench_torch "$NET" "$B" "$REPEAT" "$OUT/$TAG.onnx")
    blog "$TAG: onnxruntime"
    OMS=$(bench_ort "$OUT/$TAG.onnx" "$B" "$SIZE" "$REPEAT")
    echo "$NET,$B,$TBUILD,$TMS,$PMS,$OMS,$(bench_ratio "$TMS" "$PMS"),$(bench_ratio "$TMS" "$OMS"),$G,$(bench_share "$G" "$TMS"),$(bench_share "$G" "$PMS"),$(bench_share "$G" "$OMS"),$PEAK2" >> "$CSV"
  done
done

echo
echo "FP32 FMA peak: 1 thread $PEAK1 GFLOP/s, 2 threads $PEAK2 GFLOP/s; $THREADS threads, median of $REPEAT runs"
awk -F, 'NR == 1 { printf "%-16s %5s %8s %10s %10s %10s %8s %8s %8s %7s %7s %7s\n", "network", "batch", "build_s", "tunehub_ms", "torch_ms", "ort_ms", "th/torch", "th/ort", "GFLOP", "th%pk", "pt%pk", "ort%pk"; next }
  { printf "%-16s %5s %8s %10s %10s %10s %8s %8s %8s %7s %7s %7s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12 }' "$CSV"
echo "CSV: $CSV"
