#!/usr/bin/env bash
# Integration test of the batch rule (README, "Uploading an ONNX network"; issue 38): a network with a
# batched input x [N, 4], a vector v [4] and a rank-0 s [] is uploaded to the real daemon, which names the
# unbatched inputs in GET /networks/{name} (`batched: false`, their own shapes), and built and run through
# the CLI at batch 3 with every input fed, y = max(x + v, x * s) checked element by element.
# Usage: onnx_batch_rule.sh CASE.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
TOKEN="s3cret-token-123"
auth=(-H "Authorization: Bearer $TOKEN")

make_model() { # $TMP/unb.onnx, written with onnx_models.py's wire helpers
  /usr/bin/python3 - "$here" "$TMP/unb.onnx" <<'PY' || fail "cannot write unb.onnx"
import sys
sys.path.insert(0, sys.argv[1])
from onnx_models import model, graph, node, value_info
ins = [value_info("x", ["N", 4]), value_info("v", [4]), value_info("s", [])]
nodes = [node("Add", ["x", "v"], ["a"], "add1"), node("Mul", ["x", "s"], ["m"], "mul1"),
         node("Max", ["a", "m"], ["y"], "max1")]
with open(sys.argv[2], "wb") as f:
    f.write(model(graph(nodes, ins, [value_info("y", ["N", 4])])))
PY
}

case_unbatched_inputs() {
  make_model
  printf '%s\n' "$TOKEN" >"$TMP/token"
  start_daemon --token-file "$TMP/token"
  local code
  code=$(curl -sS -o "$TMP/body" -w '%{http_code}' -X PUT "${auth[@]}" --data-binary "@$TMP/unb.onnx" \
    "$BASE/networks/unb") || true
  [[ "$code" == 201 || "$code" == 200 ]] || { cat "$TMP/body"; fail "PUT -> $code"; }
  expect_status 200 "$BASE/networks/unb"
  jq_ok '[.inputs[] | "\(.name) \(.batched) \(.shape)"] == ["x true [\"batch\",4]", "v false [4]", "s false []"]'
  jq_ok '.outputs[0].batched == true and .outputs[0].shape == ["batch", 4]'
  expect_status 200 "$BASE/networks/unb?batch=3"
  jq_ok '.inputs[0].shape == [3, 4] and .inputs[1].shape == [4] and .inputs[2].shape == []'
  stop_daemon
  # the CLI on that store: build at batch 3, run with every input fed
  "$TUNEHUB" build llvm unb 3 -o "$TMP/unb.tar" --data "$DATA" 2>"$TMP/build.err" || {
    cat "$TMP/build.err"
    fail "build"
  }
  /usr/bin/python3 - "$TMP" <<'PY' || fail "cannot write the inputs"
import struct, sys
d = sys.argv[1]
x = [0.25 * i - 1.5 for i in range(12)]
open(d + "/x.bin", "wb").write(struct.pack("<12f", *x))
open(d + "/v.bin", "wb").write(struct.pack("<4f", 0.5, -1.0, 2.0, -0.25))
open(d + "/s.bin", "wb").write(struct.pack("<f", -2.0))
PY
  "$TUNEHUB" run "$TMP/unb.tar" --input x="$TMP/x.bin" --input v="$TMP/v.bin" --input s="$TMP/s.bin" \
    --output-dir "$TMP/outs" >"$TMP/run.out" 2>&1 || { cat "$TMP/run.out"; fail "run"; }
  /usr/bin/python3 - "$TMP" <<'PY' || fail "wrong output"
import glob, struct, sys
d = sys.argv[1]
files = glob.glob(d + "/outs/*")
assert len(files) == 1, files
y = struct.unpack("<12f", open(files[0], "rb").read())
x = [0.25 * i - 1.5 for i in range(12)]
v = [0.5, -1.0, 2.0, -0.25]
want = [max(x[i] + v[i % 4], x[i] * -2.0) for i in range(12)]
bad = [(i, y[i], want[i]) for i in range(12) if abs(y[i] - want[i]) > 1e-6]
assert not bad, bad
PY
  # a wrong-sized file for the rank-0 input is refused, naming it
  printf 'abcdefgh' >"$TMP/s8.bin"
  expect_fail 1 "s" "$TUNEHUB" run "$TMP/unb.tar" --input x="$TMP/x.bin" --input v="$TMP/v.bin" \
    --input s="$TMP/s8.bin"
}

# A file whose graph holds at the batch it fixes only: fx2 reshapes its [2, 3, 4] input to the constant
# [2, 12] (at batch 1 that is 24 elements from 12), fx1 squeezes axis 0 of its [1, 3] input (at batch 2
# axis 0 has length 2). Each is taken as a network of that batch alone ("fixed_batch"), built and run there,
# and any other batch is a 400 invalid_batch naming it, with nothing queued; a network of any batch has no
# "fixed_batch".
case_fixed_batch() {
  /usr/bin/python3 - "$here" "$TMP" <<'PY' || fail "cannot write the models"
import struct, sys
sys.path.insert(0, sys.argv[1])
from onnx_models import model, graph, node, value_info, f_int, f_bytes
def i64(name, vals):  # TensorProto: dims 1, data_type 2 (INT64 = 7), name 8, raw_data 9
    return f_int(1, len(vals)) + f_int(2, 7) + f_bytes(8, name) + f_bytes(9, struct.pack("<%dq" % len(vals), *vals))
fx2 = graph([node("Reshape", ["x", "shape"], ["y"], "reshape1")], [value_info("x", [2, 3, 4])],
            [value_info("y", [2, 12])], [i64("shape", [2, 12])])
fx1 = graph([node("Squeeze", ["x", "axes"], ["y"], "squeeze1")], [value_info("x", [1, 3])],
            [value_info("y", [3])], [i64("axes", [0])])
for name, g in (("fx2", fx2), ("fx1", fx1)):
    with open("%s/%s.onnx" % (sys.argv[2], name), "wb") as f:
        f.write(model(g))
open(sys.argv[2] + "/x.bin", "wb").write(struct.pack("<24f", *[0.5 * i - 3 for i in range(24)]))
PY
  make_model
  printf '%s\n' "$TOKEN" >"$TMP/token"
  start_daemon --token-file "$TMP/token"
  local net b other code
  for net in fx2 fx1 unb; do
    code=$(curl -sS -o "$TMP/body" -w '%{http_code}' -X PUT "${auth[@]}" --data-binary "@$TMP/$net.onnx" \
      "$BASE/networks/$net") || true
    [[ "$code" == 201 ]] || { cat "$TMP/body"; fail "PUT $net -> $code"; }
  done
  expect_status 200 "$BASE/networks/fx2"
  jq_ok '.fixed_batch == 2 and .inputs[0].shape == [2, 3, 4] and .outputs[0].shape == [2, 12]'
  expect_status 200 "$BASE/networks/fx1"
  jq_ok '.fixed_batch == 1 and .inputs[0].shape == [1, 3] and .outputs[0].shape == [3]'
  expect_status 200 "$BASE/networks/unb"
  jq_ok 'has("fixed_batch") | not'
  for net in fx2 fx1; do
    b=${net#fx}
    other=$((3 - b))
    expect_status 400 "$BASE/models/llvm/$net/$other"
    jq_ok ".error.code == \"invalid_batch\" and .error.valid == {\"min\": $b, \"max\": $b}"
    body_has "fixes the batch to $b"
    expect_status 400 -X POST "${auth[@]}" -d '{"trials": 2}' "$BASE/models/llvm/$net/$other/tune"
  done
  expect_status 200 "$BASE/jobs"
  jq_ok '.count == 0'
  # at its own batch it builds and runs: the reshape keeps the order of the 24 values
  expect_status 200 "$BASE/models/llvm/fx2/2?wait=300"
  cp "$TMP/body" "$TMP/fx2.tar"
  "$TUNEHUB" run "$TMP/fx2.tar" --input x="$TMP/x.bin" --output-dir "$TMP/outs" >"$TMP/run.out" 2>&1 ||
    { cat "$TMP/run.out"; fail "run fx2"; }
  cmp "$TMP/x.bin" "$TMP/outs/"* || fail "fx2's output is not its input, reshaped"
  expect_status 200 "$BASE/models/llvm/fx1/1?wait=300"
}

"case_$1"
echo "PASS $1"
