#!/usr/bin/env bash
# Integration tests of the command line against real stores (no daemon): `tunehub tune` into a temp data dir,
# then `tunehub remeasure` on it, alone and against a second store, and its errors on bad input, and per target
# (--target); `tunehub build`, `run` (--profile; --input and --output-dir) on a CNN bundle, and `tunehub networks`.
# Usage: cli.sh CASE, with TUNEHUB set to the binary.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"


case_remeasure() {
  local net=squeezenet_v1.1
  # bad input first: nothing is created, nothing is timed
  expect_fail 2 "valid frameworks: llvm, cuda" "$TUNEHUB" remeasure tpu "$net" 1 --data "$DATA"
  expect_fail 2 "valid networks:.*resnet-18" "$TUNEHUB" remeasure llvm resnet-19 1 --data "$DATA"
  expect_fail 2 "whole number from 1 to 4096" "$TUNEHUB" remeasure llvm "$net" 0 --data "$DATA"
  expect_fail 2 "from 1 to 100" "$TUNEHUB" remeasure llvm "$net" 1 --data "$DATA" --rounds 0
  expect_fail 1 "holds no store" "$TUNEHUB" remeasure llvm "$net" 1 --data "$DATA"
  [[ ! -e "$DATA" ]] || fail "remeasure created $DATA"

  "$TUNEHUB" tune llvm "$net" 1 --data "$DATA" --trials 2 >"$TMP/tune.log" 2>&1 ||
    { tail -20 "$TMP/tune.log"; fail "tune"; }
  local tasks
  tasks=$(store_sql "SELECT count(DISTINCT workload_key) FROM tuning_records WHERE error_class = 0")
  expect_fail 1 "no task of resnet-18 at batch 1 has a stored record" \
    "$TUNEHUB" remeasure llvm resnet-18 1 --data "$DATA"
  expect_fail 1 "holds no store" "$TUNEHUB" remeasure llvm "$net" 1 --data "$DATA" --against "$TMP/nowhere"

  # alone: one line per task, network,"workload",recorded_s,isolated_s, both times positive
  "$TUNEHUB" remeasure llvm "$net" 1 --data "$DATA" >"$TMP/alone.csv" 2>"$TMP/alone.err" ||
    { cat "$TMP/alone.err"; fail "remeasure"; }
  local n
  n=$(wc -l <"$TMP/alone.csv")
  [[ $n -ge 10 ]] || fail "only $n tasks re-measured: $(cat "$TMP/alone.err")"
  [[ $n -le $tasks ]] || fail "$n lines for $tasks tuned workloads"
  /usr/bin/python3 - "$TMP/alone.csv" "$net" <<'PY' || fail "alone.csv: $(head -3 "$TMP/alone.csv")"
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
for r in rows:
    assert len(r) == 4 and r[0] == sys.argv[2] and float(r[2]) > 0 and float(r[3]) > 0, r
PY
  grep -q "^remeasure: \[[0-9]*/[0-9]*\] .* ms (recorded" "$TMP/alone.err" || fail "no progress lines on stderr"

  # against a copy of itself: every config is the same one, and both columns are timed
  local copy
  copy=$(store_copy "$TMP/copy")
  "$TUNEHUB" remeasure llvm "$net" 1 --data "$DATA" --against "$copy" --rounds 2 >"$TMP/pair.csv" \
    2>"$TMP/pair.err" || { cat "$TMP/pair.err"; fail "remeasure --against"; }
  [[ $(wc -l <"$TMP/pair.csv") == "$n" ]] || fail "--against: $(wc -l <"$TMP/pair.csv") lines, alone $n"
  /usr/bin/python3 - "$TMP/pair.csv" <<'PY' || fail "pair.csv: $(head -3 "$TMP/pair.csv")"
import csv, sys
for r in csv.reader(open(sys.argv[1])):
    assert len(r) == 6, r
    assert int(r[2]) >= 1 and float(r[3]) > 0 and float(r[4]) > 0 and r[5] == "1", r
PY
}

# `tunehub remeasure --target NAME`: a bad name lists the valid ones; records are per target (a store's records
# for this machine's CPU are not another target's); another target this CPU runs has its records timed here (a
# store tuned on a machine of that target is stood in for by relabelling this one's records to a level with the
# host's vector width, so the stored configs are points of its space); a target this CPU cannot run is refused
# with the features it lacks. The levels are picked from the host's CPUID flags, so this holds on AVX2 and on
# AVX-512 hosts alike.
case_remeasure_target() {
  local net=squeezenet_v1.1 flags level
  flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
  # the help shows --target on each command that takes it
  "$TUNEHUB" help >"$TMP/help.txt" || fail "tunehub help"
  local cmd
  for cmd in build tune remeasure; do
    awk -v c="$cmd" '/^  tunehub /{on = ($2 == c)} on && /\[--target NAME\]/{ok = 1} END{exit !ok}' "$TMP/help.txt" ||
      fail "tunehub help: $cmd does not show [--target NAME]: $(grep -A2 "tunehub $cmd" "$TMP/help.txt")"
  done
  expect_fail 2 "unknown CPU target 'pentium9'; valid: native, .*x86-64-v2, x86-64-v3, x86-64-v4" \
    "$TUNEHUB" remeasure llvm "$net" 1 --data "$DATA" --target pentium9
  [[ ! -e "$DATA" ]] || fail "remeasure created $DATA"

  "$TUNEHUB" tune llvm "$net" 1 --data "$DATA" --trials 2 >"$TMP/tune.log" 2>&1 ||
    { tail -20 "$TMP/tune.log"; fail "tune"; }
  "$TUNEHUB" remeasure llvm "$net" 1 --data "$DATA" --target native >"$TMP/native.csv" 2>"$TMP/native.err" ||
    { cat "$TMP/native.err"; fail "remeasure --target native"; }
  local n
  n=$(wc -l <"$TMP/native.csv")
  [[ $n -ge 10 ]] || fail "--target native: only $n tasks re-measured"

  if [[ $flags == *" avx512f "* && $flags == *" avx512bw "* && $flags == *" avx512dq "* &&
        $flags == *" avx512vl "* && $flags == *" avx512cd "* ]]; then
    level=x86-64-v4
  elif [[ $flags == *" avx2 "* && $flags == *" fma "* ]]; then
    level=x86-64-v3
  else
    level=x86-64-v2
  fi
  expect_fail 1 "no task of $net at batch 1 has a stored record for llvm -mcpu=$level .*tunes only its own target" \
    "$TUNEHUB" remeasure llvm "$net" 1 --data "$DATA" --target "$level"
  local other
  other=$(store_copy "$TMP/other")
  store_sql -S "$other" "UPDATE tuning_records SET target = 'llvm -mcpu=$level'" >/dev/null
  store_at "$other"
  "$TUNEHUB" remeasure llvm "$net" 1 "${AT[@]}" --target "$level" >"$TMP/level.csv" 2>"$TMP/level.err" ||
    { cat "$TMP/level.err"; fail "remeasure --target $level"; }
  # the same tasks: a task either run skipped (a config timed out on a loaded machine: a "remeasure: KEY: why"
  # note instead of a line) still counts
  local skip_n skip_l
  skip_n=$(grep -c '^remeasure: [^[]' "$TMP/native.err" || true)
  skip_l=$(grep -c '^remeasure: [^[]' "$TMP/level.err" || true)
  [[ $(($(wc -l <"$TMP/level.csv") + skip_l)) == $((n + skip_n)) ]] ||
    fail "--target $level: $(wc -l <"$TMP/level.csv") lines and $skip_l skipped, native $n and $skip_n skipped"
  /usr/bin/python3 - "$TMP/level.csv" "$net" <<'PY' || fail "level.csv: $(head -3 "$TMP/level.csv")"
import csv, sys
for r in csv.reader(open(sys.argv[1])):
    assert len(r) == 4 and r[0] == sys.argv[2] and float(r[2]) > 0 and float(r[3]) > 0, r
PY
  expect_fail 1 "no task of $net at batch 1 has a stored record for llvm -mcpu=" \
    "$TUNEHUB" remeasure llvm "$net" 1 "${AT[@]}"

  # a target whose code this CPU cannot run: the first of these whose telling flag the host lacks
  local t flag want found=""
  for t in "sapphirerapids avx512_fp16 avx512fp16" "x86-64-v4 avx512f avx512f" "x86-64-v3 avx2 avx2"; do
    read -r t flag want <<<"$t"
    if [[ $flags != *" $flag "* ]]; then
      expect_fail 2 "cannot time the records of llvm -mcpu=$t here: this machine's CPU (.*) lacks .*$want" \
        "$TUNEHUB" remeasure llvm "$net" 1 --data "$DATA" --target "$t"
      found=$t
      break
    fi
  done
  [[ -n $found ]] || echo "note: this CPU runs every target tried; the refusal is not exercised here"
}

# `tunehub run BUNDLE --input NAME=FILE --output-dir DIR` on a squeezenet bundle (batch 1, 224x224): the fill
# written to a file gives the same bytes as the fill itself (the file is fed as it is), another input gives
# another output, twice the same; bad flags, names and sizes are refused with what is valid, writing nothing.
run_on_files() {
  local tar=$1
  /usr/bin/python3 - "$TMP" <<'PY' || fail "writing the input files"
import sys
import numpy as np
n = 3 * 224 * 224
i = np.arange(n, dtype=np.uint64)
# bundle.c's fill: float32 ((i * 2654435761) % 1000) / 1000 - 0.5
fill = ((i * np.uint64(2654435761)) % np.uint64(1000)).astype(np.float32) / np.float32(1000) - np.float32(0.5)
fill.astype("<f4").tofile(sys.argv[1] + "/fill.bin")
np.random.default_rng(7).uniform(-1, 1, n).astype("<f4").tofile(sys.argv[1] + "/rand.bin")
PY
  "$TUNEHUB" run "$tar" --output-dir "$TMP/o_fill" >"$TMP/o.out" 2>&1 || fail "run --output-dir: $(cat "$TMP/o.out")"
  grep -q "b.tar: 1 runs: mean" "$TMP/o.out" || fail "run --output-dir runs once: $(cat "$TMP/o.out")"
  grep -qx "output output float32 \[1, 1000\] -> $TMP/o_fill/output.bin" "$TMP/o.out" ||
    fail "run --output-dir: $(cat "$TMP/o.out")"
  [[ $(stat -c %s "$TMP/o_fill/output.bin") == 4000 ]] || fail "output.bin is not 1000 floats"
  "$TUNEHUB" run "$tar" --input "input=$TMP/fill.bin" --output-dir "$TMP/o_same" >"$TMP/o.out" 2>&1 ||
    fail "run --input: $(cat "$TMP/o.out")"
  cmp "$TMP/o_fill/output.bin" "$TMP/o_same/output.bin" || fail "the fill from a file gives another output"
  for k in 1 2; do
    "$TUNEHUB" run "$tar" --input "input=$TMP/rand.bin" --output-dir "$TMP/o_rand$k" --repeat 2 >"$TMP/o.out" 2>&1 ||
      fail "run --input rand: $(cat "$TMP/o.out")"
  done
  grep -q "b.tar: 2 runs: mean" "$TMP/o.out" || fail "--repeat 2 with --input: $(cat "$TMP/o.out")"
  cmp "$TMP/o_rand1/output.bin" "$TMP/o_rand2/output.bin" || fail "two runs on one input differ"
  /usr/bin/python3 - "$TMP/o_fill/output.bin" "$TMP/o_rand1/output.bin" <<'PY' || fail "the input file changed nothing"
import sys
import numpy as np
a, b = (np.fromfile(f, "<f4") for f in sys.argv[1:])
d, m = float(np.abs(a - b).max()), float(np.abs(a).max())
print("fill vs random input: outputs differ by up to %.3g (max |y| %.3g)" % (d, m))
sys.exit(0 if d > 1e-2 * m > 0 else 1)
PY
  expect_fail 2 "takes NAME=FILE, not 'input'" "$TUNEHUB" run "$tar" --input input
  expect_fail 2 "takes NAME=FILE, not '=x'" "$TUNEHUB" run "$tar" --input =x
  expect_fail 1 "has no input 'image'; valid inputs: input$" "$TUNEHUB" run "$tar" --input "image=$TMP/fill.bin" \
    --output-dir "$TMP/o_bad"
  head -c 100 "$TMP/fill.bin" >"$TMP/short.bin"
  expect_fail 1 "input 'input' (float32 \[1, 3, 224, 224\] at batch 1): expected 602112 bytes, but $TMP/short.bin has 100 bytes" \
    "$TUNEHUB" run "$tar" --input "input=$TMP/short.bin" --output-dir "$TMP/o_bad"
  [[ ! -e "$TMP/o_bad" ]] || fail "a refused run created its output directory"
}

# `tunehub run` times a CNN bundle through th_model_run_io (and --profile per layer), and `tunehub networks`
# lists every input and output with its dtype and shape
case_run() {
  local net=squeezenet_v1.1
  "$TUNEHUB" build llvm "$net" 1 -o "$TMP/b.tar" --data "$DATA" >"$TMP/build.log" 2>&1 ||
    { tail -20 "$TMP/build.log"; fail "build"; }
  "$TUNEHUB" run "$TMP/b.tar" --repeat 3 >"$TMP/run.out" 2>&1 || fail "run: $(cat "$TMP/run.out")"
  grep -q "b.tar: 3 runs: mean [0-9.]* ms, median [0-9.]* ms" "$TMP/run.out" || fail "run: $(cat "$TMP/run.out")"
  "$TUNEHUB" run "$TMP/b.tar" --repeat 3 --profile >"$TMP/prof.out" 2>&1 || fail "profile: $(cat "$TMP/prof.out")"
  grep -q "^sum of layer medians [0-9.]* ms; run median [0-9.]* ms (3 runs)" "$TMP/prof.out" ||
    fail "profile: $(tail -3 "$TMP/prof.out")"
  tar -xOf "$TMP/b.tar" manifest.json >"$TMP/manifest.json"
  jq -e '.inputs == [{"name": "input", "dtype": "float32", "shape": [1, 3, 224, 224], "layout": "NCHW"}]
    and .outputs == [{"name": "output", "dtype": "float32", "shape": [1, 1000]}]
    and .input.name == "input" and .output.shape == [1, 1000]' "$TMP/manifest.json" >/dev/null ||
    fail "manifest inputs/outputs: $(jq -c '{input, inputs, output, outputs}' "$TMP/manifest.json")"
  run_on_files "$TMP/b.tar"
  "$TUNEHUB" networks >"$TMP/networks.out" || fail "networks"
  grep -Eq "^  input +input_ids +int64 +\[batch, 128\]$" "$TMP/networks.out" || fail "networks: no input_ids"
  grep -Eq "^  output +last_hidden_state +float32 +\[batch, 128, 768\]$" "$TMP/networks.out" ||
    fail "networks: no last_hidden_state"
  grep -Eq "^  input +input +float32 +\[batch, 3, 224, 224\]$" "$TMP/networks.out" || fail "networks: no CNN input"
  # --target: a bad name lists the valid ones; tuning refuses a target this machine cannot measure
  expect_fail 2 "unknown CPU target 'pentium9'; valid: native, .*x86-64-v3" \
    "$TUNEHUB" build llvm "$net" 1 -o "$TMP/x.tar" --data "$DATA" --target pentium9
  expect_fail 2 "measures only its own target .*not llvm -mcpu=x86-64-v2.*--target x86-64-v2" \
    "$TUNEHUB" tune llvm "$net" 1 --data "$DATA" --target x86-64-v2
  [[ ! -e "$TMP/x.tar" ]] || fail "a refused build wrote its output"
}

# `tunehub build cuda` on a machine without a GPU: the bundle is built (NVRTC) as the daemon publishes it,
# untimed, and stderr and the manifest say so and why; it failed with "th_model_create: no CUDA device"
case_build_cuda_untimed() {
  [[ "${TH_WITH_CUDA:-}" == 1 ]] || { echo "SKIP: built without CUDA"; exit 77; }
  if nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    echo "SKIP: a CUDA device is present; this case checks the device-less path"
    exit 77
  fi
  "$TUNEHUB" build cuda squeezenet_v1.1 1 -o "$TMP/c.tar" --data "$DATA" >"$TMP/build.out" 2>"$TMP/build.err" ||
    fail "build cuda: $(tail -5 "$TMP/build.err")"
  grep -q "^tunehub build: the bundle is untimed (its manifest's latency_ms is null): no CUDA device: " \
    "$TMP/build.err" || fail "no untimed message: $(cat "$TMP/build.err")"
  tar -tf "$TMP/c.tar" | grep -q "^kernels/kernels.cu$" || fail "no kernels.cu in the bundle"
  tar -xOf "$TMP/c.tar" manifest.json >"$TMP/manifest.json"
  # the reason is the build's, not the bundle's (it stays reproducible): stderr says it, the tar has none
  jq -e '.key.framework == "cuda" and .target.arch == "sm_90" and .latency_ms == null and
    (has("unmeasured") | not)' "$TMP/manifest.json" >/dev/null ||
    fail "manifest: $(jq -c '{key, target, latency_ms, unmeasured}' "$TMP/manifest.json")"
}

# The runtime object (th_rt.c) is compiled once per machine and user, into $XDG_CACHE_HOME/tunehub: a second
# CLI build compiles no runtime (the compiler wrapper logs every `cc -c`) and its bundle runs; a cache folder
# that others may write is not used, and TUNEHUB_NO_CACHE compiles as before.
case_runtime_cache() {
  /usr/bin/python3 "$here/onnx_models.py" small "$TMP/small.onnx" || fail "cannot write small.onnx"
  "$TUNEHUB" import "$TMP/small.onnx" --name small --data "$DATA" >/dev/null || fail "import"
  mkdir -p "$TMP/bin"
  printf '#!/bin/bash\n[[ " $* " == *" -c "* ]] && echo "$*" >>%q\nexec %s "$@"\n' "$TMP/compiles" \
    "${CC:-cc}" >"$TMP/bin/cc"
  chmod +x "$TMP/bin/cc"
  build() { # build N [env...]: bundle $TMP/bN.tar; echoes how many `cc -c` it ran
    local n=$1 before after
    shift
    before=$(cat "$TMP/compiles" 2>/dev/null | wc -l)
    env -u TUNEHUB_CACHE_DIR CC="$TMP/bin/cc" XDG_CACHE_HOME="$TMP/cache" "$@" "$TUNEHUB" build llvm small 2 -o "$TMP/b$n.tar" \
      --data "$DATA" >"$TMP/build$n.log" 2>&1 || { cat "$TMP/build$n.log"; fail "build $n"; }
    after=$(cat "$TMP/compiles" 2>/dev/null | wc -l)
    echo $((after - before))
  }
  local n
  n=$(build 1)
  [[ $n == 1 ]] || fail "the first build compiled the runtime $n times"
  local objs
  objs=$(find "$TMP/cache/tunehub" -name 'th_rt-*.o' -type f 2>/dev/null | wc -l || true)
  [[ $objs == 1 ]] || fail "the cache holds $objs runtime objects: $(ls -la "$TMP/cache/tunehub")"
  [[ "$(stat -c %a "$TMP/cache/tunehub")" == 700 ]] || fail "the cache folder is not private"
  # the kernels' objects too: one per module the build emitted, all reused by the second build
  local kobjs
  kobjs=$(find "$TMP/cache/tunehub" -name 'k-*.o' -type f | wc -l)
  [[ $kobjs -ge 1 ]] || fail "the cache holds no kernel objects: $(ls -la "$TMP/cache/tunehub")"
  grep -q "^object cache: 0 of $((kobjs + 1)) objects reused from $TMP/cache/tunehub$" "$TMP/build1.log" ||
    fail "first build: $(grep 'object cache' "$TMP/build1.log")"
  [[ "$(build 2)" == 0 ]] || fail "the second build compiled the runtime again"
  grep -q "^object cache: $((kobjs + 1)) of $((kobjs + 1)) objects reused" "$TMP/build2.log" ||
    fail "second build: $(grep 'object cache' "$TMP/build2.log") ($kobjs kernel objects)"
  "$TUNEHUB" run "$TMP/b2.tar" --repeat 2 >"$TMP/run.out" 2>&1 || fail "the cached runtime's bundle: $(cat "$TMP/run.out")"
  local b
  for b in b1 b2; do
    "$TUNEHUB" run "$TMP/$b.tar" --output-dir "$TMP/o_$b" >"$TMP/run_$b.out" 2>&1 || fail "run $b: $(cat "$TMP/run_$b.out")"
  done
  diff -r "$TMP/o_b1" "$TMP/o_b2" >/dev/null || fail "the bundle built from cached objects computes otherwise"
  # a damaged kernel object is not taken: compiled again, and replaced
  for f in "$TMP"/cache/tunehub/k-*.o; do printf 'JUNK' >"$f"; done
  [[ "$(build 5)" == 0 ]] || fail "the runtime was compiled again"
  grep -q "^object cache: 1 of $((kobjs + 1)) objects reused" "$TMP/build5.log" ||
    fail "damaged objects: $(grep 'object cache' "$TMP/build5.log")"
  "$TUNEHUB" run "$TMP/b5.tar" --output-dir "$TMP/o_b5" >"$TMP/run_b5.out" 2>&1 || fail "run b5: $(cat "$TMP/run_b5.out")"
  diff -r "$TMP/o_b1" "$TMP/o_b5" >/dev/null || fail "the bundle rebuilt over damaged objects computes otherwise"
  [[ "$(head -c4 "$(find "$TMP/cache/tunehub" -name 'k-*.o' | head -1)" | od -An -c | tr -d ' ')" == '177ELF' ]] ||
    fail "the damaged objects were not replaced"
  [[ "$(build 3 TUNEHUB_NO_CACHE=1)" == 1 ]] || fail "TUNEHUB_NO_CACHE still took the cached runtime"
  ! grep -q "object cache" "$TMP/build3.log" || fail "TUNEHUB_NO_CACHE: $(grep 'object cache' "$TMP/build3.log")"
  chmod 777 "$TMP/cache/tunehub"
  [[ "$(build 4)" == 1 ]] || fail "a cache folder that others may write was used"
}

# `tunehub build --no-fuse GROUP,...` (for timing fusions): a bad group is refused with the valid ones and
# nothing is written; a build without the activation group has more calls than the default one, and its
# manifest says which groups it lacks (a normal manifest has no "fusion_disabled")
case_build_no_fuse() {
  local net=squeezenet_v1.1
  expect_fail 2 "unknown fusion group 'bogus'; valid: activation, residual, softmax, qkv$" \
    "$TUNEHUB" build llvm "$net" 1 -o "$TMP/x.tar" --data "$DATA" --no-fuse activation,bogus
  expect_fail 2 "unknown fusion group ''; valid: activation, residual, softmax, qkv$" \
    "$TUNEHUB" build llvm "$net" 1 -o "$TMP/x.tar" --data "$DATA" --no-fuse ""
  [[ ! -e "$TMP/x.tar" ]] || fail "a refused build wrote its output"
  "$TUNEHUB" build llvm "$net" 1 -o "$TMP/fused.tar" --data "$DATA" >"$TMP/build.log" 2>&1 ||
    { tail -20 "$TMP/build.log"; fail "build"; }
  "$TUNEHUB" build llvm "$net" 1 -o "$TMP/act.tar" --data "$DATA" --no-fuse activation,activation \
    >"$TMP/build_act.log" 2>&1 || { tail -20 "$TMP/build_act.log"; fail "build --no-fuse activation"; }
  grep -q "fusion groups off: activation$" "$TMP/build_act.log" || fail "build log: $(head -1 "$TMP/build_act.log")"
  tar -xOf "$TMP/fused.tar" manifest.json >"$TMP/fused.json"
  tar -xOf "$TMP/act.tar" manifest.json >"$TMP/act.json"
  jq -e 'has("fusion_disabled") | not' "$TMP/fused.json" >/dev/null ||
    fail "a normal build lists disabled fusions: $(jq -c .fusion_disabled "$TMP/fused.json")"
  jq -e '.fusion_disabled == ["activation"]' "$TMP/act.json" >/dev/null ||
    fail "fusion_disabled: $(jq -c .fusion_disabled "$TMP/act.json")"
  local fused unfused
  fused=$(jq .num_calls "$TMP/fused.json")
  unfused=$(jq .num_calls "$TMP/act.json")
  [[ $unfused -gt $fused ]] || fail "--no-fuse activation: $unfused calls, fused $fused"
  # the same weights and input give the same output, fused or not
  local b
  for b in fused act; do
    "$TUNEHUB" run "$TMP/$b.tar" --output-dir "$TMP/o_$b" >"$TMP/o.out" 2>&1 || fail "run $b: $(cat "$TMP/o.out")"
  done
  /usr/bin/python3 - "$TMP/o_fused/output.bin" "$TMP/o_act/output.bin" <<'PY' || fail "fused and unfused outputs differ"
import sys
import numpy as np
a, b = (np.fromfile(f, "<f4") for f in sys.argv[1:])
assert a.size == 1000 and b.size == 1000, (a.size, b.size)
d, m = float(np.abs(a - b).max()), float(np.abs(a).max())
assert m > 0 and d <= 1e-4 * m, (d, m)
PY
}

# --precision (issue 25): tf32 on llvm, a value that is no precision, and tf32 below sm_80 are refused with exit 2
# and the valid values, before anything is written (no data directory, no store, no output); a cuda tf32 build's
# manifest says tf32
case_build_precision() {
  local net=squeezenet_v1.1
  # the help shows --precision on build and tune (scripts/bench/gpu.sh reads it there)
  "$TUNEHUB" help >"$TMP/help.txt" || fail "tunehub help"
  local cmd
  for cmd in build tune; do
    awk -v c="$cmd" '/^  tunehub /{on = ($2 == c)} on && /\[--precision fp32\|tf32\]/{ok = 1} END{exit !ok}' \
      "$TMP/help.txt" || fail "tunehub help: $cmd does not show [--precision fp32|tf32]"
  done
  expect_fail 2 "tunehub build: --precision: precision tf32 needs the cuda framework; llvm takes fp32$" \
    "$TUNEHUB" build llvm "$net" 1 -o "$TMP/x.tar" --data "$DATA" --precision tf32
  expect_fail 2 "precision 'fp16' is not one of fp32, tf32$" \
    "$TUNEHUB" build llvm "$net" 1 -o "$TMP/x.tar" --data "$DATA" --precision fp16
  expect_fail 2 "tunehub tune: --precision: precision tf32 needs the cuda framework; llvm takes fp32$" \
    "$TUNEHUB" tune llvm "$net" 1 --data "$DATA" --trials 2 --precision tf32
  expect_fail 2 "precision 'half' is not one of fp32, tf32$" \
    "$TUNEHUB" tune cuda "$net" 1 --data "$DATA" --trials 2 --precision half
  if [[ "${TH_WITH_CUDA:-}" == 1 ]]; then
    expect_fail 2 "tf32 needs tensor cores of sm_80 or newer; target cuda -arch=sm_75 takes fp32 only$" \
      "$TUNEHUB" build cuda "$net" 1 -o "$TMP/x.tar" --data "$DATA" --target sm_75 --precision tf32
  fi
  [[ ! -e "$TMP/x.tar" ]] || fail "a refused build wrote its output"
  [[ ! -e "$DATA" ]] || fail "a refused command created $DATA"
  if [[ -n "${TH_TEST_DB:-}" ]]; then
    [[ "$(store_sql "SELECT to_regclass('tunehub_schema') IS NULL")" == t ]] || fail "a refused command made a store"
  fi
  [[ "${TH_WITH_CUDA:-}" == 1 ]] || return 0
  "$TUNEHUB" build cuda "$net" 1 -o "$TMP/t.tar" --data "$DATA" --target sm_80 --precision tf32 \
    >"$TMP/build.out" 2>"$TMP/build.err" || fail "build cuda tf32: $(tail -5 "$TMP/build.err")"
  grep -q "^building cuda/$net/1 for cuda -arch=sm_80 (tf32)$" "$TMP/build.err" || fail "$(head -3 "$TMP/build.err")"
  tar -xOf "$TMP/t.tar" manifest.json | jq -e '.precision == "tf32" and .target.arch == "sm_80"' >/dev/null \
    || fail "manifest: $(tar -xOf "$TMP/t.tar" manifest.json | head -c 300)"
}

"case_$1"
echo "PASS $1"
