#!/bin/bash
# A/B benchmark of bundles: times each bundle once per round, in interleaved rounds on $THREADS threads, and
# prints each one's median over the rounds and its median per-round ratio to the first, so that the
# machine's drift moves both sides of a ratio alike (see lib.sh). For changes to the runtime or the
# templates: build the same network and records before and after, then compare the two bundles.
#
# usage: scripts/bench/ab.sh A.tar B.tar [C.tar ...] [--rounds 9] [--per 10] [--threads 2]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
TUNEHUB=${TUNEHUB:-$ROOT/build/server/tunehub}
THREADS=2
ROUNDS=9
PER=10
TARS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) ROUNDS=$2; shift 2 ;;
    --per) PER=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    -*) echo "ab.sh: unknown flag $1; valid: --rounds N --per N --threads N" >&2; exit 2 ;;
    *) [ -s "$1" ] || { echo "ab.sh: no bundle $1" >&2; exit 2; }; TARS+=("$1"); shift ;;
  esac
done
[ ${#TARS[@]} -ge 2 ] || { echo "usage: ab.sh A.tar B.tar [C.tar ...] [--rounds N] [--per N]" >&2; exit 2; }
OUT=$HERE/out
source "$HERE/lib.sh"
[ -x "$TUNEHUB" ] || { echo "ab.sh: $TUNEHUB not built (scripts/build.sh)" >&2; exit 1; }
declare -a V
for r in $(seq 1 "$ROUNDS"); do
  for i in "${!TARS[@]}"; do
    # rotate the order each round, so no bundle always runs right after another
    j=$(( (i + r) % ${#TARS[@]} ))
    V[$j]+="$(bench_tunehub_run "${TARS[$j]}" "$PER" 2>/dev/null) "
  done
  blog "round $r/$ROUNDS"
done
printf '%-40s %10s %10s\n' bundle median_ms "ratio_to_$(basename "${TARS[0]}" .tar)"
for i in "${!TARS[@]}"; do
  printf '%-40s %10s %10s\n' "$(basename "${TARS[$i]}")" "$(bench_median ${V[$i]})" \
    "$(bench_round_ratios "${V[$i]}" "${V[0]}")"
done
