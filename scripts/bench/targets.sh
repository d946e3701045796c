#!/bin/bash
# What portability costs (issue 23): one network built for this machine's own CPU (native) and for the
# x86-64 levels a fleet may share, timed side by side in interleaved rounds, with ONNX Runtime on the same
# network and thread count in the same rounds. Targets this CPU cannot run are built and reported as such.
#
# usage: scripts/bench/targets.sh [--network resnet-18] [--batch 1] [--targets "native x86-64-v3 x86-64-v2"]
#                                 [--rounds 3] [--repeat 30] [--threads 2]
# Needs the built binary ($TUNEHUB, default build/server/tunehub), python3-torch (the ONNX export for ORT) and
# node/npm (onnxruntime-node). Writes bundles and targets.csv to scripts/bench/out. Run on an idle machine.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
TUNEHUB=${TUNEHUB:-$ROOT/build/server/tunehub}
NET=resnet-18
B=1
TARGETS="native x86-64-v3 x86-64-v2"
ROUNDS=3
REPEAT=30
THREADS=2
while [ $# -gt 0 ]; do
  case "$1" in
    --network) NET=$2; shift 2 ;;
    --batch) B=$2; shift 2 ;;
    --targets) TARGETS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "targets.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
OUT=$HERE/out
DATA=$OUT/data
mkdir -p "$OUT" "$DATA"
source "$HERE/lib.sh"
bench_prereqs
bench_peak
G1=$(bench_net_gflops "$NET")
SIZE=$(bench_net_size "$NET")
G=$(awk -v g="$G1" -v b="$B" 'BEGIN { printf "%.2f", g * b }')

# build each target once (fallback configs: records are per target, and only native could be tuned here)
declare -A TS
RUNNABLE=""
for T in $TARGETS; do
  TAR=$OUT/${NET}_b${B}_$T.tar
  blog "$NET b$B: build for $T"
  "$TUNEHUB" build llvm "$NET" "$B" -o "$TAR" --data "$DATA" --target "$T" > "$OUT/${NET}_b${B}_$T.build.log" 2>&1 \
    || { tail -3 "$OUT/${NET}_b${B}_$T.build.log" >&2; exit 1; }
  REQ=$(tar -xOf "$TAR" manifest.json | jq -r '.target.required_features')
  if tar -xOf "$TAR" manifest.json | jq -e '.unmeasured' >/dev/null; then
    blog "$T: this CPU cannot run it ($(tar -xOf "$TAR" manifest.json | jq -r .unmeasured))"
  else
    RUNNABLE="$RUNNABLE $T"
  fi
  blog "$T needs: $REQ"
done
# the ONNX file for ORT (the torchvision model, exported by models_torch.py as models.sh does)
bench_torch "$NET" "$B" 3 "$OUT/${NET}_b$B.onnx" > /dev/null

OS=""
for R in $(seq 1 "$ROUNDS"); do
  for T in $RUNNABLE; do
    MS=$(bench_tunehub_run "$OUT/${NET}_b${B}_$T.tar" "$REPEAT")
    TS[$T]="${TS[$T]:-} $MS"
    blog "round $R: $T $MS ms"
  done
  MS=$(bench_ort "$OUT/${NET}_b$B.onnx" "$B" "$SIZE" "$REPEAT")
  OS="$OS $MS"
  blog "round $R: onnxruntime $MS ms"
done

CSV=$OUT/targets.csv
echo "network,batch,target,median_ms,over_native,over_ort,peak_pct,rounds_ms" > "$CSV"
FIRST=$(echo $RUNNABLE | awk '{ print $1 }') # ratios are against the first target (native by default)
for T in $RUNNABLE; do
  echo "$NET,$B,$T,$(bench_median ${TS[$T]}),$(bench_round_ratios "${TS[$T]}" "${TS[$FIRST]}"),$(bench_round_ratios "${TS[$T]}" "$OS"),$(bench_share "$G" "$(bench_median ${TS[$T]})"),${TS[$T]# }" >> "$CSV"
done
echo "$NET,$B,onnxruntime,$(bench_median $OS),$(bench_round_ratios "$OS" "${TS[$FIRST]}"),1.00,$(bench_share "$G" "$(bench_median $OS)"),${OS# }" >> "$CSV"
echo
echo "FP32 FMA peak: 2 threads $PEAK2 GFLOP/s; $THREADS threads, $ROUNDS interleaved rounds of $REPEAT runs (median of the round medians; ratios: median of per-round ratios)"
column -s, -t "$CSV"
echo "CSV: $CSV"
