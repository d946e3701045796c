#!/bin/bash
# Fusion benchmark (issue 20): what each fusion group buys. Per network and batch it builds the default
# bundle (every fusion), one bundle per group left out (`tunehub build llvm NET B -o X.tar --no-fuse G`) and
# one without any, all from the same store (fallback configs from an empty one unless --data names a store
# that `tunehub tune` filled), then times them against each other with ab.sh in interleaved rounds (each
# bundle once per round, the order rotated) and prints per group the calls and the median per-round ratio
# unfused / fused: above 1, the fusion pays. A group that changes no call of a network (vit has no q/k/v
# projections to join: its in_proj is one dense already) is listed without timing. With --data, mind that
# the tuner extracts the fused network's tasks: an unfused layer (bert's 768-wide q, k, v) may have no
# record of its own and run its fallback. See compiler/README.md, "Fusion groups".
#
# usage: scripts/bench/fusion.sh [--networks "bert vit"] [--batches "1"] [--rounds 9] [--per 10]
#                                [--threads 2] [--groups "activation residual softmax qkv"] [--data DIR]
#
# Needs the built binary ($TUNEHUB, default build/server/tunehub). Writes the bundles, ab.sh's output and
# fusion.csv to scripts/bench/out/fusion/. Run on an otherwise idle machine; on a shared one, more rounds.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
TUNEHUB=${TUNEHUB:-$ROOT/build/server/tunehub}
NETWORKS="bert vit"
BATCHES="1"
ROUNDS=9
PER=10
THREADS=2
GROUPS_="activation residual softmax qkv"
DATA=
while [ $# -gt 0 ]; do
  case "$1" in
    --networks) NETWORKS=$2; shift 2 ;;
    --batches) BATCHES=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --per) PER=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --groups) GROUPS_=$2; shift 2 ;;
    --data) DATA=$2; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "fusion.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
OUT=$HERE/out/fusion
source "$HERE/lib.sh"
[ -x "$TUNEHUB" ] || { echo "fusion.sh: $TUNEHUB not built (scripts/build.sh)" >&2; exit 1; }
mkdir -p "$OUT"
STORE=${DATA:-$OUT/empty-store}
[ -n "$DATA" ] || rm -rf "$STORE"
ALL=$(echo $GROUPS_ | tr ' ' ',')
# "all": every group at once, when there are several
CASES=$GROUPS_
[ "$ALL" = "$GROUPS_" ] || CASES="$GROUPS_ all"

# build TAG NET B [GROUPS]: OUT/TAG.tar (GROUPS left out); prints its call count
build() {
  local log=$OUT/$1.build.log
  if ! "$TUNEHUB" build llvm "$2" "$3" -o "$OUT/$1.tar" --data "$STORE" ${4:+--no-fuse "$4"} >"$log" 2>&1; then
    blog "$1: build failed"; tail -5 "$log" >&2; return 1
  fi
  tar -xOf "$OUT/$1.tar" manifest.json | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["num_calls"])'
}

CSV=$OUT/fusion.csv
echo "network,batch,group,calls,fused_calls,median_ms,fused_ms,unfused_over_fused,rounds" > "$CSV"
for NET in $NETWORKS; do
  for B in $BATCHES; do
    TAG=${NET}_b$B
    blog "$TAG: building the fused bundle and one per group left out ($CASES)"
    FUSED_CALLS=$(build "$TAG.fused" "$NET" "$B") || continue
    TARS=("$OUT/$TAG.fused.tar")
    declare -A CALLS=()
    for G in $CASES; do
      OFF=$G
      [ "$G" = all ] && OFF=$ALL
      CALLS[$G]=$(build "$TAG.no-$G" "$NET" "$B" "$OFF") || { CALLS[$G]=-; continue; }
      if [ "${CALLS[$G]}" = "$FUSED_CALLS" ]; then
        blog "$TAG: leaving out $G changes no call ($FUSED_CALLS); not timed"
      else
        TARS+=("$OUT/$TAG.no-$G.tar")
      fi
    done
    [ ${#TARS[@]} -ge 2 ] || { blog "$TAG: no group changes a call; nothing to time"; continue; }
    blog "$TAG: timing ${#TARS[@]} bundles, $ROUNDS interleaved rounds of $PER runs"
    "$HERE/ab.sh" "${TARS[@]}" --rounds "$ROUNDS" --per "$PER" --threads "$THREADS" | tee "$OUT/$TAG.ab.txt"
    # ab.sh's table: bundle median_ms ratio_to_first
    FUSED_MS=$(awk -v b="$TAG.fused.tar" '$1 == b { print $2 }' "$OUT/$TAG.ab.txt")
    for G in $CASES; do
      read -r MS RATIO < <(awk -v b="$TAG.no-$G.tar" '$1 == b { print $2, $3 } END { print "- -" }' \
        "$OUT/$TAG.ab.txt" | head -1)
      echo "$NET,$B,$G,${CALLS[$G]},$FUSED_CALLS,$MS,${FUSED_MS:--},$RATIO,$ROUNDS" >> "$CSV"
    done
    unset CALLS
  done
done

echo
echo "unfused / fused: the median over $ROUNDS interleaved rounds of the per-round ratio of run medians ($PER runs"
echo "each, $THREADS threads); above 1, the group's fusions pay. Configs: ${DATA:-fallback (empty store)}."
awk -F, 'NR == 1 { printf "%-5s %5s %-11s %6s %6s %10s %10s %9s\n", "net", "batch", "left out", "calls", "fused", "ms", "fused ms", "unf/fused"; next }
  { printf "%-5s %5s %-11s %6s %6s %10s %10s %9s\n", $1, $2, $3, $4, $5, $6, $7, $8 }' "$CSV"
echo "CSV: $CSV"
