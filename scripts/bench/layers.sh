#!/bin/bash
# Per-layer benchmark: each layer of a tunehub bundle (`tunehub run --profile`) next to the ONNX Runtime node
# that computes the same layer (onnxruntime-node's profiler), timed in interleaved rounds on $THREADS threads.
# Layers are matched by their shapes (op, input and output channels and sizes, kernel size), in graph order,
# so each row compares one convolution with the same convolution; ORT fuses bias, ReLU and the residual add
# into its convolutions as tunehub does. Shows where a network's gap to ORT comes from.
#
# usage: scripts/bench/layers.sh [--network resnet-18] [--batch 10] [--bundle TAR | --data DIR]
#                                [--threads 2] [--rounds 5] [--per 10]
#   --bundle TAR  the bundle to profile (its manifest gives the network and batch); without it, one is
#                 built with `tunehub build` from --data's records (default: an empty store, so the
#                 fallback configs)
# Writes scripts/bench/out/layers_<network>_b<batch>.csv. Run on an otherwise idle machine.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
TUNEHUB=${TUNEHUB:-$ROOT/build/server/tunehub}
NET=resnet-18
B=10
BUNDLE=
DATA=
THREADS=2
ROUNDS=5
PER=10
while [ $# -gt 0 ]; do
  case "$1" in
    --network) NET=$2; shift 2 ;;
    --batch) B=$2; shift 2 ;;
    --bundle) BUNDLE=$2; shift 2 ;;
    --data) DATA=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --per) PER=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "layers.sh: unknown argument $1; see --help" >&2; exit 2 ;;
  esac
done
if [ -n "$BUNDLE" ]; then
  # a bundle names its own network and batch (manifest.json "key"); the ORT side must match them
  [ -s "$BUNDLE" ] || { echo "layers.sh: no bundle $BUNDLE" >&2; exit 2; }
  KEY=$(tar xOf "$BUNDLE" manifest.json | tr -d ' \n' | sed -n 's/.*"key":{\([^}]*\)}.*/\1/p')
  NET=$(echo "$KEY" | sed -n 's/.*"network":"\([^"]*\)".*/\1/p')
  B=$(echo "$KEY" | sed -n 's/.*"batch":\([0-9]*\).*/\1/p')
  [ -n "$NET" ] && [ -n "$B" ] || { echo "layers.sh: $BUNDLE has no network/batch in manifest.json" >&2; exit 2; }
fi
OUT=$HERE/out
mkdir -p "$OUT"
source "$HERE/lib.sh"
bench_prereqs
[ "$HAVE_ORT" = 1 ] || { echo "layers.sh: onnxruntime-node is needed" >&2; exit 1; }

SIZE=$(bench_net_size "$NET")
[ -n "$SIZE" ] || { echo "layers.sh: unknown network $NET; valid: $("$TUNEHUB" networks | awk 'NR > 1 && !/^ / { printf "%s ", $1 }')" >&2; exit 2; }
TAG=${NET}_b$B
TMP=$(mktemp -d "${TMPDIR:-/tmp}/tunehub-layers-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
if [ -z "$BUNDLE" ]; then
  BUNDLE=$TMP/$TAG.tar
  blog "building $NET b$B ${DATA:+from the records in $DATA}"
  "$TUNEHUB" build llvm "$NET" "$B" -o "$BUNDLE" --data "${DATA:-$TMP/data}" >"$TMP/build.log" 2>&1 ||
    { cat "$TMP/build.log" >&2; exit 1; }
fi
ONNX=$OUT/$TAG.onnx
if [ ! -s "$ONNX" ]; then
  blog "exporting $ONNX (PyTorch)"
  bench_torch "$NET" "$B" 1 "$ONNX" >/dev/null
fi

# tunehub's profile -> "KEY<TAB>MS<TAB>NAME" per layer, KEY in layers_ort.js's form.
th_layers() {
  TH_NUM_THREADS=$THREADS "$TUNEHUB" run "$BUNDLE" --profile --repeat "$PER" |
    awk '$1 ~ /^[0-9]+$/ {
      op = $3; ms = $5; wl = ""; for (i = 8; i <= NF; i++) wl = wl " " $i
      n = split(wl, f, " "); delete v
      for (i = 1; i <= n; i++) if (match(f[i], /^(c|h|w|oc|oh|ow|k)[0-9x]+$/)) { k = f[i]; sub(/[0-9x]+$/, "", k); v[k] = substr(f[i], length(k) + 1) }
      sub(/x.*/, "", v["k"])
      if (op == "conv2d") key = sprintf("conv c%s h%s w%s oc%s oh%s ow%s k%s", v["c"], v["h"], v["w"], v["oc"], v["oh"], v["ow"], v["k"])
      else if (op == "max_pool") key = sprintf("max_pool c%s h%s w%s oh%s ow%s", v["c"], v["h"], v["w"], v["oh"], v["ow"])
      else if (op == "global_avg_pool") key = sprintf("global_avg_pool c%s h%s w%s", v["c"], v["h"], v["w"])
      else if (op == "dense") key = sprintf("dense c%s oc%s", v["c"], v["oc"])
      else key = "other " op
      printf "%s\t%s\t%s\n", key, ms, $2
    }'
}
ort_layers() { (cd "$HERE" && node layers_ort.js "$ONNX" "$THREADS" "$PER" "$B,3,$SIZE,$SIZE"); }

for r in $(seq 1 "$ROUNDS"); do
  blog "round $r/$ROUNDS"
  th_layers >"$TMP/th.$r"
  ort_layers >"$TMP/ort.$r"
done

# Join: the i-th tunehub layer with a key goes with the i-th ORT node with that key.
CSV=$OUT/layers_$TAG.csv
for r in $(seq 1 "$ROUNDS"); do
  awk -F'\t' -v r="$r" 'FNR == 1 { f++ }
    f == 1 { n = ++seen1[$1]; th[$1 SUBSEP n] = $2; name[$1 SUBSEP n] = $3; order[++no] = $1 SUBSEP n; next }
    { n = ++seen2[$1]; ort[$1 SUBSEP n] = $2 }
    END { for (i = 1; i <= no; i++) { k = order[i]; split(k, p, SUBSEP)
            printf "%d\t%d\t%s\t%s\t%s\t%s\n", r, i, name[k], p[1], th[k], (k in ort) ? ort[k] : "-" } }' \
    "$TMP/th.$r" "$TMP/ort.$r"
done >"$TMP/joined"

echo "layer,name,shape,tunehub_ms,ort_ms,tunehub_over_ort" >"$CSV"
printf '\n%-5s %-24s %-42s %10s %10s %8s\n' layer name shape tunehub_ms ort_ms th/ort
NL=$(awk -F'\t' '{ if ($2 > n) n = $2 } END { print n + 0 }' "$TMP/joined")
THSUM=() ORTSUM=()
for i in $(seq 1 "$NL"); do
  rows=$(awk -F'\t' -v i="$i" '$2 == i' "$TMP/joined")
  name=$(echo "$rows" | head -1 | cut -f3); shape=$(echo "$rows" | head -1 | cut -f4)
  thv=$(echo "$rows" | cut -f5 | tr '\n' ' '); ortv=$(echo "$rows" | cut -f6 | tr '\n' ' ')
  thm=$(bench_median $thv); om=$(bench_median $ortv); ratio=$(bench_round_ratios "$thv" "$ortv")
  printf '%-5d %-24s %-42s %10s %10s %8s\n' "$((i - 1))" "$name" "$shape" "$thm" "$om" "$ratio"
  echo "$((i - 1)),$name,$shape,$thm,$om,$ratio" >>"$CSV"
done
# Totals per round (layers matched on both sides only), then their medians and the median ratio.
TOT=$(awk -F'\t' '$6 != "-" { th[$1] += $5; o[$1] += $6 } END { for (r in th) printf "%s %.3f %.3f\n", r, th[r], o[r] }' "$TMP/joined" | sort -n)
THT=$(echo "$TOT" | awk '{ print $2 }' | tr '\n' ' '); OT=$(echo "$TOT" | awk '{ print $3 }' | tr '\n' ' ')
printf '%-5s %-24s %-42s %10s %10s %8s\n' sum "(matched layers)" "" "$(bench_median $THT)" "$(bench_median $OT)" \
  "$(bench_round_ratios "$THT" "$OT")"
echo "sum,matched,,$(bench_median $THT),$(bench_median $OT),$(bench_round_ratios "$THT" "$OT")" >>"$CSV"
blog "wrote $CSV"
