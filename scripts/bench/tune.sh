#!/bin/bash
# Tuning benchmark: tune a network from scratch at each batch on $THREADS threads, then compare the tuned
# latency with the fallback build, PyTorch and ONNX Runtime measured in the same run, and with the FMA peak.
#
# usage: scripts/bench/tune.sh [--network resnet-18] [--batches "1 10"] [--trials N] [--early-stopping N]
#                              [--tuner xgb] [--threads 2] [--rounds 7] [--per 10] [--checkpoints 8]
#
# For each batch: a fresh data dir; `tunehub build` (fallback configs); `tunehub tune` (wall time, trials per
# task); the tuned build. Convergence: for each of --checkpoints points in time, a copy of the store keeps only
# the records measured up to that point, and the network is built with them. Then every build, PyTorch and
# ONNX Runtime are timed in --rounds interleaved rounds of --per runs each (see lib.sh); latencies are medians
# over the rounds, ratios medians of the per-round ratios. The first checkpoint within 5% of the final build
# gives the time to 5%. Without --trials/--early-stopping, tunehub's defaults are used. Writes tune.csv and
# tune_curve.csv to scripts/bench/out.
# Run on an otherwise idle machine.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
TUNEHUB=${TUNEHUB:-$ROOT/build/server/tunehub}
NET=resnet-18
BATCHES="1 10"
TRIALS=
ES=
TUNER=xgb
THREADS=2
ROUNDS=7
PER=10
CHECKPOINTS=8
while [ $# -gt 0 ]; do
  case "$1" in
    --network) NET=$2; shift 2 ;;
    --batches) BATCHES=$2; shift 2 ;;
    --trials) TRIALS=$2; shift 2 ;;
    --early-stopping) ES=$2; shift 2 ;;
    --tuner) TUNER=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --per) PER=$2; shift 2 ;;
    --checkpoints) CHECKPOINTS=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "tune.sh: unknown argument $1; see --help" >&2; exit 2 ;;
  esac
done
OUT=$HERE/out
mkdir -p "$OUT"
source "$HERE/lib.sh"
bench_prereqs
bench_peak

NETLIST=$("$TUNEHUB" networks)
G1=$(echo "$NETLIST" | awk -v n="$NET" '$1 == n { print $3 }')
IN=$(echo "$NETLIST" | awk -v n="$NET" '$1 == n { print $2 }')
[ -n "$G1" ] || { echo "tune.sh: unknown network $NET; valid: $(echo "$NETLIST" | awk 'NR > 1 { printf "%s ", $1 }')" >&2; exit 2; }
SIZE=${IN##*x}

CSV=$OUT/tune.csv
CURVE=$OUT/tune_curve.csv
echo "network,batch,tuner,trials_per_task,tasks,trials_total,tune_s,time_to_5pct_s,fallback_ms,tuned_ms,torch_ms,ort_ms,tuned_over_fallback,tuned_over_torch,tuned_over_ort,gflop,tuned_peak_pct,ort_peak_pct,peak_2t_gflops" >"$CSV"
echo "network,batch,checkpoint,elapsed_s,records,latency_ms,over_final" >"$CURVE"

for B in $BATCHES; do
  TAG=${NET}_b${B}_tune
  DATA=$OUT/$TAG.data
  rm -rf "$DATA"; mkdir -p "$DATA"
  G=$(awk -v g="$G1" -v b="$B" 'BEGIN { printf "%.2f", g * b }')

  blog "$TAG: fallback build"
  "$TUNEHUB" build llvm "$NET" "$B" --data "$DATA" -o "$OUT/$TAG.fallback.tar" >"$OUT/$TAG.build.log" 2>&1

  blog "$TAG: tunehub tune llvm $NET $B ${TRIALS:+--trials $TRIALS} ${ES:+--early-stopping $ES} --tuner $TUNER"
  T0=$(date +%s.%N)
  TH_NUM_THREADS=$THREADS "$TUNEHUB" tune llvm "$NET" "$B" --data "$DATA" --tuner "$TUNER" \
    ${TRIALS:+--trials "$TRIALS"} ${ES:+--early-stopping "$ES"} 2>&1 | tee "$OUT/$TAG.tune.log" | grep -E '^(#|[0-9]+ |sum of)' >&2 || true
  T1=$(date +%s.%N)
  TUNE_S=$(awk -v a="$T0" -v b="$T1" 'BEGIN { printf "%.1f", b - a }')
  TASKS=$(sqlite3 "$DATA/tunehub.db" 'SELECT count(DISTINCT workload_key) FROM tuning_records')
  # trials per task: min-max over the tasks (a task whose space is smaller than the budget stops early); the
  # end-of-task verification records (tuner 'verify') are not trials
  PER_TASK=$(sqlite3 "$DATA/tunehub.db" "SELECT min(n) || '-' || max(n) FROM (SELECT count(*) AS n FROM tuning_records WHERE tuner != 'verify' GROUP BY workload_key)")
  TOTAL=$(sqlite3 "$DATA/tunehub.db" "SELECT count(*) FROM tuning_records WHERE tuner != 'verify'")
  blog "$TAG: tuned in ${TUNE_S}s, $TOTAL trials over $TASKS tasks"

  blog "$TAG: tuned build"
  "$TUNEHUB" build llvm "$NET" "$B" --data "$DATA" -o "$OUT/$TAG.tuned.tar" >>"$OUT/$TAG.build.log" 2>&1

  # convergence: the store as it was at each checkpoint, built now and timed in the rounds below
  FIRST=$(sqlite3 "$DATA/tunehub.db" 'SELECT min(created_at) FROM tuning_records')
  LAST=$(sqlite3 "$DATA/tunehub.db" 'SELECT max(created_at) FROM tuning_records')
  declare -a CK_ELAPSED=() CK_REC=()
  for k in $(seq 1 "$CHECKPOINTS"); do
    CUT=$(awk -v f="$FIRST" -v l="$LAST" -v k="$k" -v n="$CHECKPOINTS" 'BEGIN { printf "%.3f", f + (l - f) * k / n }')
    SNAP=$OUT/$TAG.snap
    rm -rf "$SNAP"; mkdir -p "$SNAP"
    sqlite3 "$DATA/tunehub.db" ".backup '$SNAP/tunehub.db'"
    sqlite3 "$SNAP/tunehub.db" "DELETE FROM tuning_records WHERE created_at > $CUT"
    CK_REC[$k]=$(sqlite3 "$SNAP/tunehub.db" 'SELECT count(*) FROM tuning_records')
    CK_ELAPSED[$k]=$(awk -v t0="$T0" -v c="$CUT" 'BEGIN { printf "%.1f", c - t0 }')
    "$TUNEHUB" build llvm "$NET" "$B" --data "$SNAP" -o "$OUT/$TAG.ck$k.tar" >>"$OUT/$TAG.build.log" 2>&1
  done
  rm -rf "$OUT/$TAG.snap"

  # interleaved rounds: fallback, checkpoints, tuned, torch, ORT once each per round (see lib.sh)
  declare -A V=()
  for r in $(seq 1 "$ROUNDS"); do
    blog "$TAG: round $r/$ROUNDS"
    V[fb]+="$(bench_tunehub_run "$OUT/$TAG.fallback.tar" "$PER" 2>/dev/null) "
    for k in $(seq 1 "$CHECKPOINTS"); do V[ck$k]+="$(bench_tunehub_run "$OUT/$TAG.ck$k.tar" "$PER" 2>/dev/null) "; done
    V[tuned]+="$(bench_tunehub_run "$OUT/$TAG.tuned.tar" "$PER" 2>/dev/null) "
    V[torch]+="$(bench_torch "$NET" "$B" "$PER" "$OUT/${NET}_b$B.onnx" 2>/dev/null) "
    V[ort]+="$(bench_ort "$OUT/${NET}_b$B.onnx" "$B" "$SIZE" "$PER" 2>/dev/null) "
    blog "  fallback $(echo ${V[fb]} | awk '{ print $NF }') tuned $(echo ${V[tuned]} | awk '{ print $NF }') torch $(echo ${V[torch]} | awk '{ print $NF }') ort $(echo ${V[ort]} | awk '{ print $NF }') ms"
  done
  FMS=$(bench_median ${V[fb]}); TMS=$(bench_median ${V[tuned]})
  PMS=$(bench_median ${V[torch]}); OMS=$(bench_median ${V[ort]})
  TO5=-
  for k in $(seq 1 "$CHECKPOINTS"); do
    CMS=$(bench_median ${V[ck$k]})
    CR=$(bench_round_ratios "${V[ck$k]}" "${V[tuned]}")
    blog "$TAG: checkpoint $k/$CHECKPOINTS at ${CK_ELAPSED[$k]}s (${CK_REC[$k]} records): $CMS ms, ${CR}x the final build"
    echo "$NET,$B,$k,${CK_ELAPSED[$k]},${CK_REC[$k]},$CMS,$CR" >>"$CURVE"
    if [ "$TO5" = - ] && awk -v c="$CR" 'BEGIN { exit !(c != "-" && c <= 1.05) }'; then TO5=${CK_ELAPSED[$k]}; fi
    rm -f "$OUT/$TAG.ck$k.tar"
  done
  echo "$NET,$B,$TUNER,$PER_TASK,$TASKS,$TOTAL,$TUNE_S,$TO5,$FMS,$TMS,$PMS,$OMS,$(bench_round_ratios "${V[tuned]}" "${V[fb]}"),$(bench_round_ratios "${V[tuned]}" "${V[torch]}"),$(bench_round_ratios "${V[tuned]}" "${V[ort]}"),$G,$(bench_share "$G" "$TMS"),$(bench_share "$G" "$OMS"),$PEAK2" >>"$CSV"
  unset V
done

echo
echo "FP32 FMA peak: 1 thread $PEAK1 GFLOP/s, 2 threads $PEAK2 GFLOP/s; $THREADS threads, medians over $ROUNDS interleaved rounds of $PER runs; ratios are medians of the per-round ratios"
awk -F, 'NR == 1 { printf "%-10s %5s %6s %7s %8s %8s %9s %9s %9s %9s %9s %8s %8s %7s %7s\n", "network", "batch", "trials", "tune_s", "to5%_s", "fallback", "tuned_ms", "torch_ms", "ort_ms", "tuned/fb", "tu/torch", "tu/ort", "GFLOP", "tu%pk", "ort%pk"; next }
  { printf "%-10s %5s %6s %7s %8s %8s %9s %9s %9s %9s %9s %8s %8s %7s %7s\n", $1, $2, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18 }' "$CSV"
echo "trials per task: $(awk -F, 'NR > 1 { printf "b%s: %s x %s tasks  ", $2, $4, $5 }' "$CSV")"
echo "CSV: $CSV, convergence: $CURVE"
