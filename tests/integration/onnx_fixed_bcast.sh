#!/usr/bin/env bash
# Integration test of a file fixed at a batch above 2 that imports at batch 1 by broadcasting (issue 38:
# torch's PoissonNLLLoss exported at opset 6 multiplies its [10, 10] input by a constant [10, 10]): here
# y = c * x, x [3, 4] and the initializer c [3, 4], a Mul of opset 6 without broadcast. At batch 1 the
# importer's numpy rule broadcasts [1, 4] by [3, 4]; at batch 2 it cannot. The upload takes it as a network
# of batch 3 alone ("fixed_batch": 3), refuses batch 1 with 400 invalid_batch, and builds and runs it at 3.
# Usage: onnx_fixed_bcast.sh CASE.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
TOKEN="s3cret-token-123"
auth=(-H "Authorization: Bearer $TOKEN")

case_fixed_above_two() {
  /usr/bin/python3 - "$here" "$TMP" <<'PY' || fail "cannot write the model"
import struct, sys
sys.path.insert(0, sys.argv[1])
from onnx_models import model, graph, node, value_info, f_int, f_bytes
c = [0.25 * i - 1 for i in range(12)]
init = f_int(1, 3) + f_int(1, 4) + f_int(2, 1) + f_bytes(8, "c") + f_bytes(9, struct.pack("<12f", *c))
g = graph([node("Mul", ["c", "x"], ["y"], "mul1")], [value_info("x", [3, 4])], [value_info("y", [3, 4])],
          [init])
open(sys.argv[2] + "/fb3.onnx", "wb").write(model(g, opset=6))
x = [0.5 * i - 3 for i in range(12)]
open(sys.argv[2] + "/x.bin", "wb").write(struct.pack("<12f", *x))
open(sys.argv[2] + "/want.bin", "wb").write(struct.pack("<12f", *[a * b for a, b in zip(c, x)]))
PY
  printf '%s\n' "$TOKEN" >"$TMP/token"
  start_daemon --token-file "$TMP/token"
  local code
  code=$(curl -sS -o "$TMP/body" -w '%{http_code}' -X PUT "${auth[@]}" --data-binary "@$TMP/fb3.onnx" \
    "$BASE/networks/fb3") || true
  [[ "$code" == 201 ]] || { cat "$TMP/body"; fail "PUT fb3 -> $code"; }
  expect_status 200 "$BASE/networks/fb3"
  jq_ok '.fixed_batch == 3 and .inputs[0].shape == [3, 4] and .outputs[0].shape == [3, 4]'
  expect_status 400 "$BASE/models/llvm/fb3/1"
  jq_ok '.error.code == "invalid_batch" and .error.valid == {"min": 3, "max": 3}'
  expect_status 200 "$BASE/models/llvm/fb3/3?wait=300"
  cp "$TMP/body" "$TMP/fb3.tar"
  "$TUNEHUB" run "$TMP/fb3.tar" --input x="$TMP/x.bin" --output-dir "$TMP/outs" >"$TMP/run.out" 2>&1 ||
    { cat "$TMP/run.out"; fail "run fb3"; }
  cmp "$TMP/want.bin" "$TMP/outs/"* || fail "fb3's output is not c * x"
}

"case_$1"
echo "PASS $1"
