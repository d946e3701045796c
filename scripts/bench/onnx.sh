#!/bin/bash
# Import benchmark (issue 21): networks that are not in the zoo, exported to ONNX by
# tests/conformance/onnx_export.py (seeded weights, dynamic batch), uploaded to tunehub and compared with
# ONNX Runtime 1.30 (tests/conformance/onnx_ort.js: onnxruntime-node, graphOptimizationLevel 'all', the
# batch pinned) on the same .onnx file and the same inputs, all on $THREADS threads, against the FP32 FMA peak
# measured here. For each network:
#   - import: the PUT /networks/NAME round trip to a daemon (127.0.0.1, a fresh data dir) and `tunehub import`
#     into a fresh data dir, each --rounds times (medians);
#   - per batch, fallback: GET /models/llvm/NAME/B?wait=... from that daemon (--on-miss build), timed from the
#     request to the bundle (the build and its measurement);
#   - per batch, tuned (--trials N > 0): `tunehub import` into a fresh data dir, `tunehub tune --trials N`,
#     `tunehub build` with the records (tuning wall time);
#   - then the fallback bundle, the tuned bundle and ONNX Runtime in --rounds interleaved rounds of --repeat
#     runs each (see lib.sh): medians over the rounds, ratios the medians of the per-round ratios.
# Writes onnx.csv and a table; bundles, exports and logs go to scripts/bench/out/onnx.
#
# usage: scripts/bench/onnx.sh [--networks "resnet50 ..."] [--batches "1 10"] [--threads 2] [--repeat 10]
#                              [--rounds 3] [--trials 64] [--tuner xgb]
#
# --networks: names of `onnx_export.py --list` (default: all nine); --trials 0 skips tuning (hours for the
# whole set at the default). Needs the built binary ($TUNEHUB, default build/server/tunehub), /usr/bin/python3
# with torch and torchvision, node/npm (npm ci --ignore-scripts in tests/conformance when missing). Run on an
# otherwise idle machine.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CONF=$ROOT/tests/conformance
TUNEHUB=${TUNEHUB:-$ROOT/build/server/tunehub}
NETWORKS=
BATCHES="1 10"
THREADS=2
REPEAT=10
ROUNDS=3
TRIALS=64
TUNER=xgb
while [ $# -gt 0 ]; do
  case "$1" in
    --networks) NETWORKS=$2; shift 2 ;;
    --batches) BATCHES=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --trials) TRIALS=$2; shift 2 ;;
    --tuner) TUNER=$2; shift 2 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "onnx.sh: unknown argument $1; see --help" >&2; exit 2 ;;
  esac
done
OUT=$HERE/out/onnx
mkdir -p "$OUT"
source "$HERE/lib.sh"
bench_prereqs "$CONF"
[ "$HAVE_ORT" = 1 ] || { blog "onnxruntime-node does not load in $CONF: no ONNX Runtime to compare with"; exit 1; }
bench_peak
# the daemon helpers of the integration tests: start_daemon (a free port, $DATA, --on-miss build), its log in
# $LOG, and a trap that stops it and removes $TMP at exit
source "$ROOT/tests/integration/lib.sh"
ALL=$("$PY" "$CONF/onnx_export.py" --list)
[ -n "$NETWORKS" ] || NETWORKS=$(echo $ALL)
for NET in $NETWORKS; do
  grep -qx -- "$NET" <<<"$ALL" || { echo "onnx.sh: unknown network $NET; valid: $(echo $ALL)" >&2; exit 2; }
done
TOKEN=bench-token-12345
echo "$TOKEN" >"$TMP/token"
start_daemon --token-file "$TMP/token"
blog "daemon on $BASE, data in $DATA"

secs() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }

# ort_time ONNX BATCH INDIR -> median ms of onnx_ort.js's timing mode, or "-"
ort_time() {
  local out log=$OUT/${1##*/}.b$2.ort.log
  if out=$(cd "$CONF" && node onnx_ort.js time "$1" "$2" "$3" "$THREADS" "$REPEAT" 2>"$log"); then
    cat "$log" >&2
    echo "$out" | sed -n 's/^median_ms=//p'
  else
    blog "ORT $1 b$2 failed"; tail -5 "$log" >&2; echo -
  fi
}

# put NAME FILE -> seconds of the PUT round trip (the answer in $OUT/NAME.put.json), or "-"
put() {
  local code t
  t=$(curl -sS -o "$OUT/$1.put.json" -w '%{http_code} %{time_total}' -X PUT -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/octet-stream' --upload-file "$2" "$BASE/networks/$1") || t="000 -"
  code=${t% *}
  if [ "$code" = 200 ] || [ "$code" = 201 ]; then echo "${t#* }"; else
    blog "PUT /networks/$1 -> $code: $(head -c 300 "$OUT/$1.put.json")"; echo -; fi
}

# import_s NAME FILE DATA -> seconds of `tunehub import` into DATA (made afresh), or "-"
import_s() {
  local t0
  rm -rf "$3"
  t0=$(date +%s.%N)
  if "$TUNEHUB" import "$2" --name "$1" --data "$3" >"$OUT/$1.import.log" 2>&1; then secs "$t0"; else
    blog "tunehub import $1 failed: $(tail -3 "$OUT/$1.import.log")"; echo -; fi
}

CSV=$OUT/onnx.csv
echo "network,batch,opset,gflop,put_s,import_s,fallback_build_s,tune_s,fallback_ms,tuned_ms,ort_ms,fallback_over_ort,tuned_over_ort,fallback_pk,tuned_pk,ort_pk,peak_2t_gflops" >"$CSV"
# exports are kept, keyed by the hash of what makes them (the exporter and the torch models it imports)
EXP=$OUT/export/$(cat "$CONF/onnx_export.py" "$ROOT/tests/unit/conformance_torch.py" | sha256sum | cut -c1-16)
BLIST=$(echo $BATCHES | tr ' ' ',')
# exported NET -> whether $EXP has NET and each of its inputs at every batch (the b<B> folders are
# shared by the networks: an image network's input.bin is not bert's input_ids.bin)
exported() {
  [ -s "$EXP/$1.json" ] || return 1
  local names
  names=$("$PY" -c 'import json, sys; print(" ".join(i["name"] for i in json.load(open(sys.argv[1]))["inputs"]))' \
    "$EXP/$1.json") || return 1
  for B in $BATCHES; do
    for I in $names; do [ -s "$EXP/b$B/$I.bin" ] || return 1; done
  done
}
for NET in $NETWORKS; do
  if ! exported "$NET"; then
    blog "$NET: onnx_export.py (batches $BLIST)"
    "$PY" "$CONF/onnx_export.py" "$NET" "$EXP" --batches "$BLIST" >"$OUT/$NET.export.log" 2>&1 ||
      { blog "$NET: export failed"; tail -5 "$OUT/$NET.export.log" >&2; continue; }
  fi
  ONNX=$EXP/$NET.onnx
  OPSET=$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["opset"])' "$EXP/$NET.json")

  # import: the PUT that the builds below use, then more under other names (the same file imported again)
  PUTS=$(put "$NET" "$ONNX")
  IMPORTS=
  for R in $(seq 1 "$ROUNDS"); do
    [ "$R" = 1 ] || PUTS="$PUTS $(put "$NET-put$R" "$ONNX")"
    IMPORTS="$IMPORTS $(import_s "$NET" "$ONNX" "$OUT/$NET.import-data")"
  done
  PUT_S=$(bench_median $PUTS) IMPORT_S=$(bench_median $IMPORTS)
  blog "$NET: PUT $PUTS s, tunehub import $IMPORTS s"

  for B in $BATCHES; do
    TAG=${NET}_b$B
    blog "$TAG: GET /models/llvm/$NET/$B?wait=600 (fallback configs)"
    T0=$(date +%s.%N)
    CODE=$(curl -sS -o "$OUT/$TAG.fallback.tar" -w '%{http_code}' "$BASE/models/llvm/$NET/$B?wait=600") || CODE=000
    BUILD_S=$(secs "$T0")
    if [ "$CODE" != 200 ]; then
      blog "$TAG: GET -> $CODE: $(head -c 300 "$OUT/$TAG.fallback.tar")"; continue
    fi
    G=$(tar -xOf "$OUT/$TAG.fallback.tar" manifest.json | "$PY" -c 'import json, sys; print("%.2f" % (json.load(sys.stdin)["flops"] / 1e9))')
    HAVE_TUNED=0 TUNE_S=-
    if [ "$TRIALS" -gt 0 ]; then
      TD=$OUT/$TAG.tune-data
      if [ "$(import_s "$NET" "$ONNX" "$TD")" != - ]; then
        blog "$TAG: tunehub tune llvm $NET $B --trials $TRIALS --tuner $TUNER"
        T0=$(date +%s.%N)
        if TH_NUM_THREADS=$THREADS "$TUNEHUB" tune llvm "$NET" "$B" --data "$TD" --trials "$TRIALS" --tuner "$TUNER" \
          >"$OUT/$TAG.tune.log" 2>&1; then
          TUNE_S=$(secs "$T0")
          "$TUNEHUB" build llvm "$NET" "$B" --data "$TD" -o "$OUT/$TAG.tuned.tar" >"$OUT/$TAG.tuned.log" 2>&1 &&
            HAVE_TUNED=1 || { blog "$TAG: tuned build failed"; tail -5 "$OUT/$TAG.tuned.log" >&2; }
        else
          blog "$TAG: tuning failed"; tail -5 "$OUT/$TAG.tune.log" >&2
        fi
      fi
    fi
    FS=; TS=; OS=
    for R in $(seq 1 "$ROUNDS"); do
      blog "$TAG: round $R/$ROUNDS"
      F=$(bench_tunehub_run "$OUT/$TAG.fallback.tar" "$REPEAT")
      T=-
      [ "$HAVE_TUNED" = 1 ] && T=$(bench_tunehub_run "$OUT/$TAG.tuned.tar" "$REPEAT")
      O=$(ort_time "$ONNX" "$B" "$EXP/b$B")
      FS="$FS $F"; TS="$TS $T"; OS="$OS $O"
    done
    FM=$(bench_median $FS) TM=$(bench_median $TS) OM=$(bench_median $OS)
    echo "$NET,$B,$OPSET,$G,$PUT_S,$IMPORT_S,$BUILD_S,$TUNE_S,$FM,$TM,$OM,$(bench_round_ratios "$FS" "$OS"),$(bench_round_ratios "$TS" "$OS"),$(bench_share "$G" "$FM"),$(bench_share "$G" "$TM"),$(bench_share "$G" "$OM"),$PEAK2" >>"$CSV"
  done
done

echo
echo "FP32 FMA peak: 1 thread $PEAK1 GFLOP/s, 2 threads $PEAK2 GFLOP/s; $THREADS threads; $ROUNDS interleaved rounds of $REPEAT runs; tuning: $TRIALS trials per task ($TUNER)"
awk -F, 'NR == 1 { printf "%-18s %5s %5s %7s %6s %8s %8s %8s %9s %9s %9s %7s %7s %6s %6s %6s\n", "network", "batch", "opset", "GFLOP", "put_s", "import_s", "build_s", "tune_s", "fallback", "tuned", "ort", "fb/ort", "tu/ort", "fb%pk", "tu%pk", "ort%pk"; next }
  { printf "%-18s %5s %5s %7s %6s %8s %8s %8s %9s %9s %9s %7s %7s %6s %6s %6s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16 }' "$CSV"
echo "CSV: $CSV"
