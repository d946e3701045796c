#!/bin/bash
# A/B benchmark of bundles: times each bundle once per round, in interleaved rounds on $THREADS threads, and
# prints each one's median over the rounds and its median per-round ratio to the first, so that the
# machine's drift moves both sides of a ratio alike (see lib.sh). For changes to the runtime or the
# templates: build the same network and records before and after, then compare the two bundles. Each
# round's medians go to stderr as it ends, so that the spread of the rounds can be judged.
#
# With --layers, each round runs `tunehub run --profile` and the script also prints, per manifest layer, each
# bundle's median over the rounds and its median per-round ratio to the first bundle's same layer (the
# bundles must be builds of one network, so that their layers line up).
#
# usage: scripts/bench/ab.sh A.tar B.tar [C.tar ...] [--rounds 9] [--per 10] [--threads 2] [--layers]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
TUNEHUB=${TUNEHUB:-$ROOT/build/server/tunehub}
THREADS=2
ROUNDS=9
PER=10
LAYERS=0
TARS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) ROUNDS=$2; shift 2 ;;
    --per) PER=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --layers) LAYERS=1; shift ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    -*) echo "ab.sh: unknown flag $1; valid: --rounds N --per N --threads N --layers" >&2; exit 2 ;;
    *) [ -s "$1" ] || { echo "ab.sh: no bundle $1" >&2; exit 2; }; TARS+=("$1"); shift ;;
  esac
done
[ ${#TARS[@]} -ge 2 ] || { echo "usage: ab.sh A.tar B.tar [C.tar ...] [--rounds N] [--per N]" >&2; exit 2; }
OUT=$HERE/out
source "$HERE/lib.sh"
[ -x "$TUNEHUB" ] || { echo "ab.sh: $TUNEHUB not built (scripts/build.sh)" >&2; exit 1; }
declare -a V R
PROF=$(mktemp)
trap 'rm -f "$PROF"' EXIT
for r in $(seq 1 "$ROUNDS"); do
  for i in "${!TARS[@]}"; do
    # rotate the order each round, so no bundle always runs right after another
    j=$(( (i + r) % ${#TARS[@]} ))
    if [ "$LAYERS" = 1 ]; then
      # profile rows: index name op source median_ms ...; tagged with bundle and round
      out=$(TH_NUM_THREADS=$THREADS "$TUNEHUB" run "${TARS[$j]}" --profile --repeat "$PER" 2>&1) ||
        { blog "tunehub run --profile ${TARS[$j]} failed: $out"; exit 1; }
      echo "$out" | awk -v b="$j" -v r="$r" '$1 ~ /^[0-9]+$/ && NF >= 6 { print b, r, $1, $2, $3, $4, $5 }' >>"$PROF"
      R[$j]=$(echo "$out" | sed -n 's/.*run median \([0-9.]*\) ms.*/\1/p' | tail -1)
    else
      R[$j]=$(bench_tunehub_run "${TARS[$j]}" "$PER" 2>/dev/null)
    fi
    V[$j]+="${R[$j]} "
  done
  # this round's medians in argument order: the spread of the rounds is there to judge
  blog "round $r/$ROUNDS: ${R[*]} ms"
done
if [ "$LAYERS" = 1 ]; then
  # per layer: each bundle's median over rounds, and its median per-round ratio to bundle 0
  awk -v nb=${#TARS[@]} '
    function med(a, n,   i, j, t) {
      for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    { ms[$1, $2, $3] = $7; src[$1, $3] = $6; name[$3] = $4; op[$3] = $5; rounds[$2] = 1; if ($3 > nl) nl = $3 }
    END {
      printf "%-5s %-24s %-10s", "layer", "name", "op"
      for (b = 0; b < nb; b++) printf " %9s %-9s", "ms_" b, "src_" b
      for (b = 1; b < nb; b++) printf " %9s", "ratio_" b
      printf "\n"
      for (l = 0; l <= nl; l++) {
        printf "%-5d %-24s %-10s", l, name[l], op[l]
        for (b = 0; b < nb; b++) { n = 0; for (r in rounds) if ((b, r, l) in ms) v[++n] = ms[b, r, l]; printf " %9.3f %-9s", n ? med(v, n) : 0, src[b, l] }
        for (b = 1; b < nb; b++) {
          n = 0; for (r in rounds) if ((b, r, l) in ms && (0, r, l) in ms && ms[0, r, l] > 0) v[++n] = ms[b, r, l] / ms[0, r, l]
          printf " %9.3f", n ? med(v, n) : 0
        }
        printf "\n"
      }
    }' "$PROF"
fi
printf '%-40s %10s %10s\n' bundle median_ms "ratio_to_$(basename "${TARS[0]}" .tar)"
for i in "${!TARS[@]}"; do
  printf '%-40s %10s %10s\n' "$(basename "${TARS[$i]}")" "$(bench_median ${V[$i]})" \
    "$(bench_round_ratios "${V[$i]}" "${V[0]}")"
done
