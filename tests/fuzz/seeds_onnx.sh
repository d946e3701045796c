#!/bin/sh
# Seeds of fuzz.onnx (run.sh runs it as `seeds_onnx.sh TEST_COMPILER_ONNX SRC_DIR DIR`): the unit tests' models,
# written by `test_compiler_onnx write_corpus`, a small torch export when /usr/bin/python3 has torch, hostile
# files of tests/fuzz/onnx_hostile.py, and random grammar-mode programs (fuzz_onnx.c: 0xA5, then random bytes).
set -eu
unit=$1 src=$2 out=$3
TC_ONNX_CORPUS="$out" "$unit" write_corpus
if /usr/bin/python3 -c 'import torch' >/dev/null 2>&1; then
  /usr/bin/python3 "$src/tests/unit/onnx_torch_export.py" "$out" 13 encoder >/dev/null 2>&1 || true
  rm -f "$out"/*.in "$out"/*.out "$out"/*.txt
fi
# hostile files that nest graphs in attributes (below and past TC_ONNX_MAX_GRAPH_DEPTH) and a node bomb just past
# TC_ONNX_MAX_NODES in repeat mode (fuzz_onnx.c: 0xA7), so that mutations start at the wire scan's limits
for n in 3 4 5 40; do /usr/bin/python3 "$src/tests/fuzz/onnx_hostile.py" nested "$n" "$out/nested$n.onnx"; done
/usr/bin/python3 "$src/tests/fuzz/onnx_hostile.py" fuzzbomb 100001 "$out/bomb100001.repeat"
for i in 1 2 3 4 5 6 7 8; do
  { printf '\245'; head -c 256 /dev/urandom; } >"$out/grammar$i"
done
