#!/bin/sh
# fuzz.onnx: builds a seed corpus (the unit tests' models, written by `test_compiler_onnx write_corpus`,
# a small torch export when /usr/bin/python3 has torch, and random grammar-mode programs) and runs the libFuzzer target for SECONDS
# (default 60) on a scratch copy of it. Fails on any crash, leak, sanitizer report or timeout (libFuzzer exits
# non-zero and leaves crash-*/leak-*/timeout-* files, which are kept in the scratch dir it names).
# usage: run.sh FUZZ_BINARY TEST_COMPILER_ONNX SRC_DIR [SECONDS]
set -eu
fuzz=$1 unit=$2 src=$3 secs=${4:-60}
work=$(mktemp -d /tmp/fuzz_onnx.XXXXXX)
mkdir -p "$work/seeds" "$work/corpus" "$work/artifacts"
TC_ONNX_CORPUS="$work/seeds" "$unit" write_corpus
if /usr/bin/python3 -c 'import torch' >/dev/null 2>&1; then
  /usr/bin/python3 "$src/tests/unit/onnx_torch_export.py" "$work/seeds" 13 encoder >/dev/null 2>&1 || true
  rm -f "$work/seeds"/*.in "$work/seeds"/*.out "$work/seeds"/*.txt
fi
for i in 1 2 3 4 5 6 7 8; do # grammar-mode programs (fuzz_onnx.c): 0xA5 then random bytes
  { printf '\245'; head -c 256 /dev/urandom; } > "$work/seeds/grammar$i"
done
echo "seeds: $(ls "$work/seeds" | wc -l) files in $work/seeds"
status=0
"$fuzz" -dict="$src/tests/fuzz/onnx.dict" -max_total_time="$secs" -timeout=20 -rss_limit_mb=3072 -max_len=262144 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" "$work/corpus" "$work/seeds" || status=$?
if [ "$status" -ne 0 ] || [ -n "$(ls "$work/artifacts")" ]; then
  echo "fuzz.onnx: FAILED (exit $status); reproducers in $work/artifacts:" >&2
  ls -l "$work/artifacts" >&2
  exit 1
fi
rm -rf "$work"
