#!/usr/bin/env bash
# ONNX conformance of one network that is not in the zoo (issue 21), end to end against ONNX Runtime:
# onnx_export.py exports it with seeded weights and writes seeded inputs (cached under $TH_ONNX_CACHE, keyed
# by the exporter's hash, so that reruns skip torch), the real daemon (127.0.0.1, a fresh data dir, a token)
# takes the file by PUT /networks/NAME, builds it at every batch of $TH_ONNX_BATCHES with fallback configs
# (GET /models/llvm/NAME/B?wait=..., --on-miss build: no tuning), `tunehub run --input ... --output-dir`
# runs each bundle on the inputs, and onnx_ort.js runs ONNX Runtime on the same file and inputs. Every
# output must agree: max |tunehub - ORT| <= 1e-4 * max |ORT|; a reference output that is constant along its
# last axis or across the batch fails the test too (it would prove nothing).
#
# Usage: onnx_conformance.sh NAME (a name of `onnx_export.py --list`), with TUNEHUB set to the binary,
# TH_ONNX_CACHE to the export cache (default $TMPDIR/tunehub-onnx-conformance) and TH_ONNX_BATCHES to the
# batches (default "1 2"). Exits 77 (skipped) when /usr/bin/python3 cannot import torch and torchvision or
# when onnxruntime-node is not installed in tests/conformance (npm ci --ignore-scripts there).
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
source "$root/tests/integration/lib.sh"
NAME=${1:?usage: onnx_conformance.sh NAME}
BATCHES=${TH_ONNX_BATCHES:-1 2}
CACHE=${TH_ONNX_CACHE:-${TMPDIR:-/tmp}/tunehub-onnx-conformance}
TOKEN=conformance-token-21
WAIT=600
PY=/usr/bin/python3

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

if ! "$PY" -c 'import torch, torchvision, numpy' 2>/dev/null; then
  echo "SKIP: $PY cannot import torch, torchvision and numpy"
  exit 77
fi
if ! (cd "$here" && node -e "require('onnxruntime-node')") >/dev/null 2>&1; then
  echo "SKIP: onnxruntime-node is not installed in $here (npm ci --ignore-scripts there)"
  exit 77
fi
names=$("$PY" "$here/onnx_export.py" --list)
grep -qx -- "$NAME" <<<"$names" || fail "unknown network '$NAME'; valid: $(echo $names)"

# ---- the export, cached by the hash of what makes it (the exporter and the torch models it imports) ----
key=$(cat "$here/onnx_export.py" "$root/tests/unit/conformance_torch.py" | sha256sum | cut -c1-16)
EXP=$CACHE/$key/$NAME
if [[ -s "$EXP/$NAME.json" ]]; then
  echo "export: cached in $EXP"
else
  mkdir -p "$CACHE"
  # exports made by other versions of the scripts are stale: they go (each network's test clears its own)
  find "$CACHE" -mindepth 2 -maxdepth 2 -name "$NAME" ! -path "$CACHE/$key/*" -exec rm -rf {} + 2>/dev/null || true
  t0=$(now)
  part=$CACHE/$key/.part.$NAME.$$
  rm -rf "$part"
  "$PY" "$here/onnx_export.py" "$NAME" "$part" --batches 1,2 >"$TMP/export.log" 2>&1 ||
    { tail -20 "$TMP/export.log"; rm -rf "$part"; fail "onnx_export.py $NAME"; }
  grep -v -i warning "$TMP/export.log" | grep -E "differs|exported|spread" || true
  rm -rf "$EXP"
  mv "$part" "$EXP"
  echo "export: $(since "$t0") s (torch $("$PY" -c 'import torch; print(torch.__version__)'))"
fi
ONNX=$EXP/$NAME.onnx
for B in $BATCHES; do
  [[ -d "$EXP/b$B" ]] || fail "the export has inputs for batches 1 and 2 only, not $B"
done

# ---- upload ----
echo "$TOKEN" >"$TMP/token"
start_daemon --token-file "$TMP/token"
t0=$(now)
code=$(curl -sS -o "$TMP/put.json" -w '%{http_code}' -X PUT -H "Authorization: Bearer $TOKEN" \
  -H 'Content-Type: application/octet-stream' --upload-file "$ONNX" "$BASE/networks/$NAME") || true
[[ "$code" == 200 || "$code" == 201 ]] || fail "PUT /networks/$NAME -> $code: $(head -c 800 "$TMP/put.json")"
echo "PUT /networks/$NAME ($(stat -c %s "$ONNX") bytes): $code in $(since "$t0") s"
# the answer names the file's inputs and outputs as the export does, with their dtypes
"$PY" - "$TMP/put.json" "$EXP/$NAME.json" <<'PY' || fail "PUT answer: $(head -c 800 "$TMP/put.json")"
import json, sys
got, want = (json.load(open(f)) for f in sys.argv[1:])
for key in ("inputs", "outputs"):
    g = [(t["name"], t["dtype"]) for t in got[key]]
    w = [(t["name"], t["dtype"]) for t in want[key]]
    assert g == w, "%s: %s, the export has %s" % (key, g, w)
assert got["flops"] > 0, "flops %r" % got["flops"]
print("PUT answer: %d inputs, %d outputs, %.2f GFLOP at batch 1, %d op types"
      % (len(got["inputs"]), len(got["outputs"]), got["flops"] / 1e9, len(got.get("ops", []))))
PY

# ---- build at each batch, run on the inputs, compare with ONNX Runtime ----
for B in $BATCHES; do
  t0=$(now)
  code=$(curl -sS -o "$TMP/b$B.tar" -w '%{http_code}' "$BASE/models/llvm/$NAME/$B?wait=$WAIT") || true
  [[ "$code" == 200 ]] || fail "GET /models/llvm/$NAME/$B?wait=$WAIT -> $code: $(head -c 800 "$TMP/b$B.tar")"
  echo "b$B: built and fetched in $(since "$t0") s"
  args=()
  for f in "$EXP/b$B"/*.bin; do args+=(--input "$(basename "$f" .bin)=$f"); done
  t0=$(now)
  "$TUNEHUB" run "$TMP/b$B.tar" "${args[@]}" --output-dir "$TMP/th_b$B" >"$TMP/run.log" 2>&1 ||
    { cat "$TMP/run.log"; fail "tunehub run b$B"; }
  echo "b$B: tunehub run $(since "$t0") s: $(grep -c '^output ' "$TMP/run.log") outputs"
  t0=$(now)
  (cd "$here" && node onnx_ort.js run "$ONNX" "$B" "$EXP/b$B" "$TMP/ort_b$B" 2) >"$TMP/ort.log" 2>&1 ||
    { cat "$TMP/ort.log"; fail "onnx_ort.js b$B"; }
  echo "b$B: onnx runtime $(since "$t0") s"
  "$PY" "$here/onnx_compare.py" "$EXP/$NAME.json" "$B" "$TMP/ort_b$B" "$TMP/th_b$B" ||
    fail "b$B: tunehub and ONNX Runtime disagree"
done
