#!/usr/bin/env bash
# Integration tests of `tunehub records export` and `tunehub records import` against real stores (no daemon):
# the committed export of an H200 tuning run (tests/data/records-h200-sm_90.jsonl) imported into a fresh store,
# twice (the second adds nothing), a cuda build from it on a machine without a GPU applying the tuned configs,
# and its --best export giving the same lines back; bad files refused by line and field with nothing stored;
# export's flags checked as build checks them; an llvm export of a store a tiny `tunehub tune` filled.
# Usage: records_cli.sh CASE, with TUNEHUB set to the binary and TH_RECORDS the committed file.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"

RECORDS=${TH_RECORDS:-$here/../data/records-h200-sm_90.jsonl}

records_in_store() {
  store_sql "SELECT count(*) FROM tuning_records"
}

case_import_build() {
  [[ -f "$RECORDS" ]] || fail "no $RECORDS"
  local n
  n=$(($(wc -l <"$RECORDS") - 1))
  "$TUNEHUB" records import "$RECORDS" --data "$DATA" >"$TMP/import.out" 2>"$TMP/import.err" ||
    fail "import: $(cat "$TMP/import.err")"
  grep -qx "imported $n records (0 already present) for 1 target" "$TMP/import.out" ||
    fail "import said: $(cat "$TMP/import.out" "$TMP/import.err")"
  [[ $(records_in_store) == "$n" ]] || fail "the store holds $(records_in_store) records, not $n"
  # again: nothing new
  "$TUNEHUB" records import "$RECORDS" --data "$DATA" >"$TMP/import2.out" 2>"$TMP/import.err" ||
    fail "second import: $(cat "$TMP/import.err")"
  grep -qx "imported 0 records ($n already present) for 1 target" "$TMP/import2.out" ||
    fail "second import said: $(cat "$TMP/import2.out")"
  [[ $(records_in_store) == "$n" ]] || fail "the second import added records: $(records_in_store)"

  # the --best export of that store gives the same file back, header included but for its time
  "$TUNEHUB" records export --data "$DATA" --framework cuda --target sm_90 --best -o "$TMP/back.jsonl" \
    2>"$TMP/export.err" || fail "export: $(cat "$TMP/export.err")"
  diff <(tail -n +2 "$RECORDS") <(tail -n +2 "$TMP/back.jsonl") >"$TMP/diff" ||
    fail "the export differs from the imported file: $(head -c 600 "$TMP/diff")"
  [[ "$(head -1 "$RECORDS" | jq -cS 'del(.exported_at)')" == "$(head -1 "$TMP/back.jsonl" | jq -cS 'del(.exported_at)')" ]] ||
    fail "headers differ: $(head -1 "$RECORDS") / $(head -1 "$TMP/back.jsonl")"
  # to stdout, and per network: resnet-18's workloads only
  "$TUNEHUB" records export --data "$DATA" --best --network resnet-18 --batch 1 --target sm_90 >"$TMP/r18.jsonl" ||
    fail "export --network"
  local r18
  r18=$(($(wc -l <"$TMP/r18.jsonl") - 1))
  [[ $r18 -ge 10 && $r18 -lt $n ]] || fail "resnet-18 has $r18 of the $n records"
  jq -e 'select(.count) | .count == '"$r18"' and .network == "resnet-18" and .batch == 1' \
    <(head -1 "$TMP/r18.jsonl") >/dev/null || fail "header: $(head -1 "$TMP/r18.jsonl")"
  tail -n +2 "$TMP/r18.jsonl" | grep -vxFf "$RECORDS" >"$TMP/extra" && fail "not lines of $RECORDS: $(head -c 300 "$TMP/extra")"

  # a build without a GPU (NVRTC compiles) applies the imported configs
  [[ "${TH_WITH_CUDA:-}" == 1 ]] || { echo "SKIP (the rest): built without CUDA"; exit 77; }
  "$TUNEHUB" build cuda resnet-18 1 --target sm_90 -o "$TMP/r18.tar" --data "$DATA" >"$TMP/build.out" \
    2>"$TMP/build.err" || fail "build cuda: $(tail -5 "$TMP/build.err")"
  tar -xOf "$TMP/r18.tar" manifest.json >"$TMP/manifest.json"
  jq -e '.tuned == true and ([.layers[] | select(.source) | .source] | length > 0 and all(. == "tuned"))' \
    "$TMP/manifest.json" >/dev/null ||
    fail "manifest: $(jq -c '{tuned, sources: [.layers[] | .source]}' "$TMP/manifest.json")"
}

# expect_refused LINE_PATTERN FILE: import exits 2, names the line, and stores nothing
expect_refused() {
  local before
  before=$(records_in_store)
  expect_fail 2 "$1" "$TUNEHUB" records import "$2" --data "$DATA"
  grep -q "nothing was imported" "$TMP/err" || fail "import of $2: $(cat "$TMP/err")"
  [[ $(records_in_store) == "$before" ]] || fail "a refused import stored records: $before -> $(records_in_store)"
}

case_bad_input() {
  # a bad file into a fresh data directory creates no store
  printf '{"tunehub_records":2,"count":0}\n' >"$TMP/v2.jsonl"
  expect_fail 2 "v2.jsonl line 1: field 'tunehub_records': format version 2 is newer than this tunehub" \
    "$TUNEHUB" records import "$TMP/v2.jsonl" --data "$DATA"
  [[ -n "${TH_TEST_DB:-}" || ! -e "$DATA" ]] || fail "a refused import created $DATA"
  expect_fail 1 "cannot read $TMP/nowhere.jsonl: No such file or directory" \
    "$TUNEHUB" records import "$TMP/nowhere.jsonl" --data "$DATA"
  expect_fail 1 "holds no store" "$TUNEHUB" records export --data "$DATA"

  # a store with some records, which the refused files must leave as they are
  head -1 "$RECORDS" | jq -c '.count = 3' >"$TMP/three.jsonl"
  sed -n 2,4p "$RECORDS" >>"$TMP/three.jsonl"
  "$TUNEHUB" records import "$TMP/three.jsonl" --data "$DATA" >/dev/null || fail "import of three records"
  [[ $(records_in_store) == 3 ]] || fail "$(records_in_store) records stored, not 3"
  # bad lines, each at line 7 of a file of the header and 6 records (lines 2..4 already stored, 5 and 6 new:
  # the records before a bad line are not stored either)
  local good="$TMP/six.jsonl"
  head -1 "$RECORDS" | jq -c '.count = 6' >"$good"
  sed -n 2,7p "$RECORDS" >>"$good"
  mk() { # mk NAME JQ: good with line 7 changed by JQ
    { head -6 "$good"; sed -n 7p "$good" | jq -c "$2"; tail -n +8 "$good"; } >"$TMP/$1.jsonl"
  }
  { head -6 "$good"; sed -n 7p "$good" | head -c 100; echo; } >"$TMP/cut.jsonl"
  expect_refused "cut.jsonl line 7: not JSON" "$TMP/cut.jsonl"
  mk config_string '.config = "tile_f=4"'
  expect_refused "config_string.jsonl line 7: field 'config' must be an array of knobs .*it is not an array" \
    "$TMP/config_string.jsonl"
  mk config_bad '.config = [[1, 2]]'
  expect_refused "config_bad.jsonl line 7: field 'config' must be an array of knobs .*does not parse" \
    "$TMP/config_bad.jsonl"
  mk template '.template = "conv9d"'
  expect_refused "template.jsonl line 7: field 'template': unknown template 'conv9d'" "$TMP/template.jsonl"
  mk target '.target = "tpu -arch=v5"'
  expect_refused "target.jsonl line 7: field 'target': 'tpu -arch=v5' is no target" "$TMP/target.jsonl"
  mk arch '.target = "llvm -mcpu=pentium9"'
  expect_refused "arch.jsonl line 7: field 'target': 'llvm -mcpu=pentium9' names an arch this tunehub does not know" \
    "$TMP/arch.jsonl"
  mk cost '.cost_mean_s = "fast"'
  expect_refused "cost.jsonl line 7: field 'cost_mean_s' must be a number" "$TMP/cost.jsonl"
  mk noworkload 'del(.workload)'
  expect_refused "noworkload.jsonl line 7: field 'workload' must be a non-empty string" "$TMP/noworkload.jsonl"
  # a header that is not one; a file cut at a line's end (the header's count says so)
  { echo '{"records":1}'; tail -n +2 "$good"; } >"$TMP/nohead.jsonl"
  expect_refused "nohead.jsonl line 1: not a tunehub records file" "$TMP/nohead.jsonl"
  head -6 "$good" >"$TMP/short.jsonl"
  expect_refused "short.jsonl line 6: the header says 6 records, the file has 5" "$TMP/short.jsonl"
  { sed -n 1p "$good" | jq -c '.tunehub_records = 2'; tail -n +2 "$good"; } >"$TMP/future.jsonl"
  expect_refused "future.jsonl line 1: field 'tunehub_records': format version 2 is newer" "$TMP/future.jsonl"
  # the good file itself: the three new records only
  "$TUNEHUB" records import "$good" --data "$DATA" >"$TMP/out" || fail "import of the good file"
  grep -qx "imported 3 records (3 already present) for 1 target" "$TMP/out" || fail "import said: $(cat "$TMP/out")"

  # export's flags, checked as build checks them
  expect_fail 2 "unknown CUDA arch 'sm_60' (want sm_70" "$TUNEHUB" records export --data "$DATA" --target sm_60
  expect_fail 2 "unknown CPU target 'pentium9'; valid: native, .*x86-64-v3" \
    "$TUNEHUB" records export --data "$DATA" --framework llvm --target pentium9
  expect_fail 2 "valid frameworks: llvm, cuda" "$TUNEHUB" records export --data "$DATA" --framework tpu
  expect_fail 2 "--network and --batch go together" "$TUNEHUB" records export --data "$DATA" --network vit
  expect_fail 2 "valid networks:.*resnet-18" \
    "$TUNEHUB" records export --data "$DATA" --network resnet-19 --batch 1
  expect_fail 2 "whole number from 1 to 4096" "$TUNEHUB" records export --data "$DATA" --network vit --batch 0
  expect_fail 2 "valid: export, import" "$TUNEHUB" records exprot
  # the framework's records only
  "$TUNEHUB" records export --data "$DATA" --framework llvm >"$TMP/llvm.jsonl" || fail "export --framework llvm"
  [[ $(wc -l <"$TMP/llvm.jsonl") == 1 ]] || fail "llvm records from a cuda store: $(head -3 "$TMP/llvm.jsonl")"
}

# a store that `tunehub tune llvm` filled (the fault tests' small uploaded network, 2 trials a task: about a
# second): every trial exported, --best one per tuned workload, --network of an uploaded network, imported into
# another store whose build applies them as tuned
case_llvm_export() {
  /usr/bin/python3 "$here/onnx_models.py" small "$TMP/small.onnx" || fail "cannot write small.onnx"
  "$TUNEHUB" import "$TMP/small.onnx" --name small --data "$DATA" >/dev/null || fail "import small.onnx"
  "$TUNEHUB" tune llvm small 1 --data "$DATA" --trials 2 >"$TMP/tune.log" 2>&1 ||
    { tail -20 "$TMP/tune.log"; fail "tune"; }
  local all tuned
  all=$(records_in_store)
  tuned=$(store_sql "SELECT count(DISTINCT workload_key) FROM tuning_records WHERE error_class = 0")
  [[ $tuned -ge 1 ]] || fail "nothing tuned: $(tail -5 "$TMP/tune.log")"
  "$TUNEHUB" records export --data "$DATA" --framework llvm -o "$TMP/all.jsonl" 2>/dev/null || fail "export"
  [[ $(($(wc -l <"$TMP/all.jsonl") - 1)) == "$all" ]] || fail "$(wc -l <"$TMP/all.jsonl") lines for $all records"
  "$TUNEHUB" records export --data "$DATA" --target native --best --network small --batch 1 \
    -o "$TMP/best.jsonl" 2>/dev/null || fail "export --best"
  [[ $(($(wc -l <"$TMP/best.jsonl") - 1)) == "$tuned" ]] ||
    fail "$(($(wc -l <"$TMP/best.jsonl") - 1)) best records for $tuned tuned workloads"
  tail -n +2 "$TMP/best.jsonl" | jq -e -s 'all(.error_class == 0 and (.target | startswith("llvm -mcpu=")))' \
    >/dev/null || fail "best: $(sed -n 2p "$TMP/best.jsonl")"
  "$TUNEHUB" records export --data "$DATA" --best --network small --batch 2 >"$TMP/b2.jsonl" || fail "batch 2"
  [[ $(wc -l <"$TMP/b2.jsonl") == 1 ]] || fail "batch 2's workloads have records: $(sed -n 2p "$TMP/b2.jsonl")"
  # into another store (embedded: a PostgreSQL twin has one database), whose build applies them
  [[ -z "${TH_TEST_DB:-}" ]] || return 0
  local d2=(--data "$TMP/d2")
  env -u TUNEHUB_DB "$TUNEHUB" import "$TMP/small.onnx" --name small "${d2[@]}" >/dev/null || fail "import small"
  env -u TUNEHUB_DB "$TUNEHUB" records import "$TMP/best.jsonl" "${d2[@]}" >"$TMP/out" || fail "import"
  grep -qx "imported $tuned records (0 already present) for 1 target" "$TMP/out" || fail "import: $(cat "$TMP/out")"
  env -u TUNEHUB_DB "$TUNEHUB" build llvm small 1 -o "$TMP/b.tar" "${d2[@]}" >"$TMP/build.log" 2>&1 ||
    { tail -20 "$TMP/build.log"; fail "build"; }
  tar -xOf "$TMP/b.tar" manifest.json | jq -e '.tuned == true and any(.layers[]; .source == "tuned")' >/dev/null ||
    fail "manifest: $(tar -xOf "$TMP/b.tar" manifest.json | jq -c '{tuned, s: [.layers[].source]}')"
}

"case_$1"
echo "PASS $1"
