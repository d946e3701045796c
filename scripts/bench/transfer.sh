#!/bin/bash
# Transfer benchmark: how much faster a network tunes when the store already holds another network's records.
# Records are keyed by workload, so tasks whose shape the first network shares are reused as they are (the
# session finds them at budget and skips them), and the other tasks start from the nearest tuned workload of
# the same template (transfer seeds the cost model and the first candidates).
#
# usage: scripts/bench/transfer.sh [--first resnet-18] [--networks "resnet-34 resnet-50"] [--batch 1]
#                                  [--trials 64] [--early-stopping N] [--threads 2] [--rounds 7]
#                                  [--first-data DIR]
#
# Runs: (1) tune FIRST in a fresh store (or take DIR, a store where FIRST was tuned already, e.g. tune.sh's);
# then for each network: (2) tune it in a copy of that store ("after"); (3) tune it in a fresh store
# ("scratch"). Reports, for (2) and (3): new trials, tuning wall time, and the
# latency of the resulting build (both builds timed in --rounds interleaved rounds); the speed-up is scratch
# time / after time. With --early-stopping a task stops once that many trials bring no better config, so a
# task that transfer seeds well stops sooner. Writes transfer.csv to scripts/bench/out.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
TUNEHUB=${TUNEHUB:-$ROOT/build/server/tunehub}
FIRST=resnet-18
FIRST_DATA=
NETS=resnet-34
ES=
ROUNDS=7
PER=10
B=1
TRIALS=64
THREADS=2
while [ $# -gt 0 ]; do
  case "$1" in
    --first) FIRST=$2; shift 2 ;;
    --first-data) FIRST_DATA=$2; shift 2 ;;
    --network|--networks) NETS=$2; shift 2 ;;
    --early-stopping) ES=$2; shift 2 ;;
    --batch) B=$2; shift 2 ;;
    --trials) TRIALS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "transfer.sh: unknown argument $1; see --help" >&2; exit 2 ;;
  esac
done
OUT=$HERE/out
mkdir -p "$OUT"
source "$HERE/lib.sh"
command -v sqlite3 >/dev/null || { SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo; $SUDO apt-get install -y sqlite3; }

records() { sqlite3 "$1/tunehub.db" 'SELECT count(*) FROM tuning_records'; }
# tune DATA NET -> "seconds new_trials" on stdout
tune() {
  local before t0 t1 after
  before=$(records "$1" 2>/dev/null || echo 0)
  t0=$(date +%s.%N)
  TH_NUM_THREADS=$THREADS "$TUNEHUB" tune llvm "$2" "$B" --data "$1" --trials "$TRIALS" ${ES:+--early-stopping "$ES"} \
    >"$1.$2.tune.log" 2>&1 || { tail -5 "$1.$2.tune.log" >&2; exit 1; }
  t1=$(date +%s.%N)
  after=$(records "$1")
  grep -E '^sum of' "$1.$2.tune.log" >&2 || true
  awk -v a="$t0" -v b="$t1" -v n=$((after - before)) 'BEGIN { printf "%.1f %d\n", b - a, n }'
}

if [ -n "$FIRST_DATA" ]; then
  A=$FIRST_DATA
  [ -s "$A/tunehub.db" ] || { echo "transfer.sh: no store in $A" >&2; exit 2; }
  FIRST_S=-; FIRST_N=$(records "$A")
  blog "1: using $FIRST's store $A ($FIRST_N records)"
else
  A=$OUT/transfer_first.data
  rm -rf "$A"; mkdir -p "$A"
  blog "1: tune $FIRST b$B ($TRIALS trials per task${ES:+, early stopping $ES}) in a fresh store"
  read -r FIRST_S FIRST_N < <(tune "$A" "$FIRST")
  blog "   $FIRST: ${FIRST_S}s, $FIRST_N trials"
fi

CSV=$OUT/transfer.csv
echo "first,network,batch,trials_per_task,early_stopping,first_s,shared_tasks,tasks,after_s,after_trials,after_ms,scratch_s,scratch_trials,scratch_ms,after_over_scratch_ms,speedup" >"$CSV"
for NET in $NETS; do
  AFTER=$OUT/transfer_after_$NET.data; SCRATCH=$OUT/transfer_scratch_$NET.data
  rm -rf "$AFTER" "$SCRATCH"; mkdir -p "$AFTER" "$SCRATCH"
  sqlite3 "$A/tunehub.db" ".backup '$AFTER/tunehub.db'"
  blog "$NET: tune b$B after $FIRST"
  read -r AFTER_S AFTER_N < <(tune "$AFTER" "$NET")
  blog "   after: ${AFTER_S}s, $AFTER_N new trials"
  blog "$NET: tune b$B from scratch"
  read -r SCR_S SCR_N < <(tune "$SCRATCH" "$NET")
  blog "   scratch: ${SCR_S}s, $SCR_N trials"
  # tasks of NET whose workload FIRST had tuned already (reused as they are)
  TASKS=$(sqlite3 "$SCRATCH/tunehub.db" 'SELECT count(DISTINCT workload_key) FROM tuning_records')
  SHARED=$(sqlite3 "$SCRATCH/tunehub.db" "ATTACH '$A/tunehub.db' AS f; SELECT count(DISTINCT workload_key) FROM tuning_records WHERE workload_key IN (SELECT workload_key FROM f.tuning_records)")

  "$TUNEHUB" build llvm "$NET" "$B" --data "$AFTER" -o "$OUT/transfer_after.tar" >/dev/null 2>&1
  "$TUNEHUB" build llvm "$NET" "$B" --data "$SCRATCH" -o "$OUT/transfer_scratch.tar" >/dev/null 2>&1
  AV=; SV=
  for r in $(seq 1 "$ROUNDS"); do
    AV+="$(bench_tunehub_run "$OUT/transfer_after.tar" "$PER" 2>/dev/null) "
    SV+="$(bench_tunehub_run "$OUT/transfer_scratch.tar" "$PER" 2>/dev/null) "
  done
  AFTER_MS=$(bench_median $AV); SCR_MS=$(bench_median $SV); LAT_RATIO=$(bench_round_ratios "$AV" "$SV")
  SOURCES=$(tar -xOf "$OUT/transfer_after.tar" manifest.json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["config_sources"])')
  SPEEDUP=$(bench_ratio "$SCR_S" "$AFTER_S")
  echo "$FIRST,$NET,$B,$TRIALS,${ES:-0},$FIRST_S,$SHARED,$TASKS,$AFTER_S,$AFTER_N,$AFTER_MS,$SCR_S,$SCR_N,$SCR_MS,$LAT_RATIO,$SPEEDUP" >>"$CSV"
  echo
  printf "%-22s %10s %10s %12s\n" "$NET b$B" "tune_s" "trials" "latency_ms"
  printf "%-22s %10s %10s %12s\n" "from scratch" "$SCR_S" "$SCR_N" "$SCR_MS"
  printf "%-22s %10s %10s %12s\n" "after $FIRST" "$AFTER_S" "$AFTER_N" "$AFTER_MS"
  echo "$SHARED of $TASKS tasks shared with $FIRST; speed-up of tuning: ${SPEEDUP}x; latency after/scratch ${LAT_RATIO} (median of $ROUNDS interleaved rounds)"
  echo "config sources of the 'after' build: $SOURCES"
  rm -rf "$AFTER" "$SCRATCH"
done
echo "CSV: $CSV"
