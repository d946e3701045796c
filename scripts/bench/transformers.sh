#!/bin/bash
# Transformer benchmark (issue 20): tunehub (llvm; fallback configs, and tuned configs when --tuned-data
# names a store that `tunehub tune` filled) vs PyTorch 1.13 eager vs ONNX Runtime 1.30 (onnxruntime-node,
# graphOptimizationLevel 'all', on the torch export of the same model), all on $THREADS threads, against the
# FP32 FMA peak measured here. The systems run in interleaved rounds (each once per round, a median of
# REPEAT runs each); the table quotes the median over rounds of each system and of the per-round ratios.
#
# usage: scripts/bench/transformers.sh [--networks "vit bert"] [--batches "1 10"] [--threads 2]
#                                      [--repeat 10] [--rounds 3] [--tuned-data DIR]
#
# vit is torchvision's vit_b_16; bert is the BertModel-named encoder of tests/unit/conformance_torch.py
# (sequence 128, three int64 inputs). Needs the built binary ($TUNEHUB, default build/server/tunehub),
# /usr/bin/python3 with torch and torchvision, node/npm. Writes bundles, ONNX files and transformers.csv
# to scripts/bench/out. Run on an otherwise idle machine.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
TUNEHUB=${TUNEHUB:-$ROOT/build/server/tunehub}
NETWORKS="vit bert"
BATCHES="1 10"
THREADS=2
REPEAT=10
ROUNDS=3
TUNED=
while [ $# -gt 0 ]; do
  case "$1" in
    --networks) NETWORKS=$2; shift 2 ;;
    --batches) BATCHES=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --tuned-data) TUNED=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "transformers.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
OUT=$HERE/out
mkdir -p "$OUT"
source "$HERE/lib.sh"
bench_prereqs
bench_peak

CSV=$OUT/transformers.csv
echo "network,batch,gflop,fallback_ms,tuned_ms,torch_ms,ort_ms,fallback_over_ort,tuned_over_ort,tuned_over_torch,fallback_pk,tuned_pk,torch_pk,ort_pk,peak_2t_gflops" > "$CSV"
for NET in $NETWORKS; do
  for B in $BATCHES; do
    TAG=${NET}_b$B
    EMPTY=$OUT/$TAG.empty-store
    rm -rf "$EMPTY"
    blog "$TAG: tunehub build (fallback configs)"
    "$TUNEHUB" build llvm "$NET" "$B" -o "$OUT/$TAG.fallback.tar" --data "$EMPTY" > "$OUT/$TAG.fallback.log" 2>&1 ||
      { blog "$TAG: fallback build failed"; tail -5 "$OUT/$TAG.fallback.log" >&2; continue; }
    HAVE_TUNED=0
    if [ -n "$TUNED" ]; then
      blog "$TAG: tunehub build (records of $TUNED)"
      if "$TUNEHUB" build llvm "$NET" "$B" -o "$OUT/$TAG.tuned.tar" --data "$TUNED" > "$OUT/$TAG.tuned.log" 2>&1; then
        HAVE_TUNED=1
      else
        blog "$TAG: tuned build failed"; tail -5 "$OUT/$TAG.tuned.log" >&2
      fi
    fi
    G=$(tar -xOf "$OUT/$TAG.fallback.tar" manifest.json | "$PY" -c 'import json, sys; print("%.2f" % (json.load(sys.stdin)["flops"] / 1e9))')
    FS=; TS=; PS=; OS=
    for R in $(seq 1 "$ROUNDS"); do
      blog "$TAG: round $R/$ROUNDS"
      F=$(bench_tunehub_run "$OUT/$TAG.fallback.tar" "$REPEAT")
      T=-
      [ "$HAVE_TUNED" = 1 ] && T=$(bench_tunehub_run "$OUT/$TAG.tuned.tar" "$REPEAT")
      P=$(bench_torch "$NET" "$B" "$REPEAT" "$OUT/$TAG.onnx")
      O=$(bench_ort "$OUT/$TAG.onnx" "$B" - "$REPEAT")
      FS="$FS $F"; TS="$TS $T"; PS="$PS $P"; OS="$OS $O"
    done
    FM=$(bench_median $FS) TM=$(bench_median $TS) PM=$(bench_median $PS) OM=$(bench_median $OS)
    echo "$NET,$B,$G,$FM,$TM,$PM,$OM,$(bench_round_ratios "$FS" "$OS"),$(bench_round_ratios "$TS" "$OS"),$(bench_round_ratios "$TS" "$PS"),$(bench_share "$G" "$FM"),$(bench_share "$G" "$TM"),$(bench_share "$G" "$PM"),$(bench_share "$G" "$OM"),$PEAK2" >> "$CSV"
  done
done

echo
echo "FP32 FMA peak: 1 thread $PEAK1 GFLOP/s, 2 threads $PEAK2 GFLOP/s; $THREADS threads; $ROUNDS interleaved rounds of $REPEAT runs"
awk -F, 'NR == 1 { printf "%-6s %5s %7s %9s %9s %9s %9s %8s %8s %8s %6s %6s %6s %6s\n", "net", "batch", "GFLOP", "fallback", "tuned", "torch", "ort", "fb/ort", "tu/ort", "tu/pt", "fb%pk", "tu%pk", "pt%pk", "ort%pk"; next }
  { printf "%-6s %5s %7s %9s %9s %9s %9s %8s %8s %8s %6s %6s %6s %6s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14 }' "$CSV"
echo "CSV: $CSV"
