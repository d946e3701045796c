#!/usr/bin/env bash
# GET /records and POST /records (records_http.c) against the real daemon: a store tuned offline
# (squeezenet_v1.1, 2 trials a task) serves its best records as the JSON Lines of `tunehub records export`;
# a fresh daemon takes them with a tune token (none: 401, a read token: 403), refuses bad bodies by line with
# nothing stored and a body past its limit with 413, adds nothing the second time, and its first build
# applies them (the manifest's layers say "tuned"), as fast as the first store's build within noise (both
# printed, not asserted), and its own tuning then times the imported configs again (verification records).
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
NET=${TH_RECORDS_NET:-squeezenet_v1.1} # TH_RECORDS_NET=small: an uploaded network, in seconds

# tokens of both daemons: a tune token and a read-only one
tokens() {
  printf 'records-tune-token tune\nrecords-read-token read\n' >"$TMP/tokens"
  TUNE=(-H 'Authorization: Bearer records-tune-token')
  READ=(-H 'Authorization: Bearer records-read-token')
}

# the network on the store in DATA (an uploaded one is imported there first)
net_on_store() {
  [[ "$NET" == small ]] || return 0
  [[ -f "$TMP/small.onnx" ]] || /usr/bin/python3 "$here/onnx_models.py" small "$TMP/small.onnx" ||
    fail "cannot write small.onnx"
  "$TUNEHUB" import "$TMP/small.onnx" --name small --data "$DATA" >/dev/null || fail "import small"
}

# records in the store in use
records_in_store() { store_sql "SELECT count(*) FROM tuning_records"; }

# the manifest of the first build of NET at batch 1 on the daemon at BASE into $TMP/$1.json
first_build() {
  expect_status 200 "$BASE/models/llvm/$NET/1?wait=300"
  expect_status 200 "$BASE/models/llvm/$NET/1/manifest"
  cp "$TMP/body" "$TMP/$1.json"
}

case_roundtrip() {
  tokens
  net_on_store
  "$TUNEHUB" tune llvm "$NET" 1 --data "$DATA" --trials 2 >"$TMP/tune.log" 2>&1 ||
    { tail -20 "$TMP/tune.log"; fail "tune"; }
  local tuned
  tuned=$(store_sql "SELECT count(DISTINCT workload_key) FROM tuning_records WHERE error_class = 0")
  [[ $tuned -ge 1 ]] || fail "nothing tuned: $(tail -5 "$TMP/tune.log")"
  start_daemon --token-file "$TMP/tokens"
  first_build a
  local q="framework=llvm&target=native&network=$NET&batch=1&best=1"
  expect_status 200 "$BASE/records?$q"
  [[ "$(header Content-Type)" == application/x-ndjson ]] || fail "type $(header Content-Type)"
  cp "$TMP/body" "$TMP/best.jsonl"
  head -1 "$TMP/best.jsonl" | jq -e --argjson n "$tuned" --arg net "$NET" '.tunehub_records == 1 and
    .count == $n and .best == true and .framework == "llvm" and .network == $net and .batch == 1' >/dev/null ||
    fail "header for $tuned tuned workloads: $(head -1 "$TMP/best.jsonl")"
  [[ $(($(wc -l <"$TMP/best.jsonl") - 1)) == "$tuned" ]] || fail "$(wc -l <"$TMP/best.jsonl") lines"
  # the same lines as the command's export (the header's exported_at aside)
  "$TUNEHUB" records export --data "$DATA" --framework llvm --target native --network "$NET" \
    --batch 1 --best >"$TMP/cli.jsonl" || fail "records export"
  diff <(tail -n +2 "$TMP/cli.jsonl") <(tail -n +2 "$TMP/best.jsonl") >/dev/null || fail "HTTP and CLI differ"
  # every record (no filter) and the filters' errors, with the valid names
  expect_status 200 "$BASE/records"
  [[ $(($(wc -l <"$TMP/body") - 1)) == "$(records_in_store)" ]] || fail "$(wc -l <"$TMP/body") lines unfiltered"
  expect_status 400 "$BASE/records?target=pentium9"
  body_has "valid: native"
  expect_status 400 "$BASE/records?framework=tpu"
  body_has "valid frameworks: llvm"
  expect_status 400 "$BASE/records?network=$NET"
  body_has "network and batch go together"
  expect_status 400 "$BASE/records?network=$NET&batch=0"
  body_has "whole number from 1 to 4096"
  expect_status 404 "$BASE/records?network=nonet&batch=1"
  body_has "resnet-18"
  expect_status 400 "$BASE/records?best=maybe"
  stop_daemon

  # a fresh daemon B
  DATA="$TMP/b"
  LOG="$TMP/b.log"
  PORT=""
  [[ -z "${TH_TEST_DB:-}" ]] || { echo "PASS roundtrip (the import half runs on the embedded store)"; exit 0; }
  net_on_store
  start_daemon --token-file "$TMP/tokens"
  expect_status 401 -X POST --data-binary @"$TMP/best.jsonl" "$BASE/records"
  expect_status 403 -X POST "${READ[@]}" --data-binary @"$TMP/best.jsonl" "$BASE/records"
  body_has "needs the scope tune"
  [[ $(records_in_store) == 0 ]] || fail "refused posts stored records"
  expect_status 200 -X POST "${TUNE[@]}" -H 'Content-Type: application/x-ndjson' \
    --data-binary @"$TMP/best.jsonl" "$BASE/records"
  jq_ok ".imported == $tuned and .present == 0 and (.targets | length == 1) and
    (.targets[0] | startswith(\"llvm -mcpu=\"))"
  expect_status 200 -X POST "${TUNE[@]}" --data-binary @"$TMP/best.jsonl" "$BASE/records"
  jq_ok ".imported == 0 and .present == $tuned"
  [[ $(records_in_store) == "$tuned" ]] || fail "$(records_in_store) records after two imports of $tuned"
  first_build b
  local src
  for m in a b; do
    src=$(jq -c '[.layers[] | select(.source == "tuned")] | length' "$TMP/$m.json")
    jq -e '.tuned == true' "$TMP/$m.json" >/dev/null && [[ $src -ge 1 ]] ||
      fail "store $m's build applied no tuned record: $(jq -c '{tuned, s: [.layers[].source]}' "$TMP/$m.json")"
    echo "store $m: $src tuned layers, latency median $(jq .latency_ms.median "$TMP/$m.json") ms" \
      "(min $(jq .latency_ms.min "$TMP/$m.json"), max $(jq .latency_ms.max "$TMP/$m.json"))"
  done
  diff <(jq -c '[.layers[] | [.name, .source, .config]]' "$TMP/a.json") \
    <(jq -c '[.layers[] | [.name, .source, .config]]' "$TMP/b.json") >/dev/null ||
    fail "B's layers differ from A's: $(jq -c '[.layers[] | .source]' "$TMP/b.json")"
  # B tunes: each task counts the imported record as a trial, and its end-of-task verification times the
  # imported configs again on this machine, beside the new trials (records of another machine are checked here,
  # not trusted)
  stop_daemon
  local before
  before=$(store_sql "SELECT max(id) FROM tuning_records")
  "$TUNEHUB" tune llvm "$NET" 1 --data "$DATA" --trials 2 >"$TMP/tune_b.log" 2>&1 ||
    { tail -20 "$TMP/tune_b.log"; fail "tune on B"; }
  local reverified
  reverified=$(store_sql "SELECT count(DISTINCT v.workload_key) FROM tuning_records v
    JOIN tuning_records i ON i.workload_key = v.workload_key AND i.target = v.target AND i.config = v.config
    WHERE v.id > $before AND v.tuner = 'verify' AND i.id <= $before")
  echo "store b: $reverified of $tuned imported configs timed again by B's verification"
  [[ $reverified -ge 1 ]] || fail "B's tuning verified none of the imported configs: $(tail -5 "$TMP/tune_b.log")"
}

# bad bodies: 400 naming the line, nothing stored; past the limit: 413 naming it
case_bad_bodies() {
  tokens
  start_daemon --token-file "$TMP/tokens"
  local rec good
  rec=$(sed -n 2p "$TH_RECORDS")
  good=$(printf '{"tunehub_records":1,"count":2}\n%s\n%s\n' "$rec" "$(sed -n 3p "$TH_RECORDS")")
  post() { expect_status "$1" -X POST "${TUNE[@]}" --data-binary @- "$BASE/records"; }
  { printf '{"tunehub_records":1,"count":2}\n%s\n' "$rec"; echo '{"workload": "conv2d'; } | post 400
  body_has "line 3: not JSON"
  jq_ok '.error.line == 3'
  printf '{"tunehub_records":2,"count":0}\n' | post 400
  body_has "line 1: field 'tunehub_records': format version 2 is newer"
  { printf '{"tunehub_records":1,"count":2}\n%s\n' "$rec"; jq -c '.template = "conv9d"' <<<"$rec"; } | post 400
  body_has "line 3: field 'template': unknown template 'conv9d'"
  jq_ok '.error.line == 3 and .error.status == 400'
  printf '%s\n' "$good" | head -2 | post 400
  body_has "the header says 2 records, the file has 1"
  printf 'hello\n' | post 400
  body_has "line 1: not JSON"
  post 400 </dev/null
  body_has "the body is empty"
  [[ $(records_in_store) == 0 ]] || fail "bad bodies stored $(records_in_store) records"
  head -c $((16 * 1024 * 1024 + 1)) /dev/zero | tr '\0' ' ' >"$TMP/big"
  expect_status 413 -X POST "${TUNE[@]}" --data-binary @"$TMP/big" "$BASE/records"
  body_has "exceeds 16777216 bytes"
  printf '%s\n' "$good" | post 200
  jq_ok '.imported == 2 and .present == 0 and .targets == ["cuda -arch=sm_90"]'
  [[ $(records_in_store) == 2 ]] || fail "$(records_in_store) records stored"
  # a body past the other routes' 64 KiB (blank lines pad it): all of it read; the 2 stored ones skipped
  { cat "$TH_RECORDS"; head -c 70000 /dev/zero | tr '\0' '\n'; } | post 200
  local n=$(($(wc -l <"$TH_RECORDS") - 1))
  jq_ok ".imported == $((n - 2)) and .present == 2"
  [[ $(records_in_store) == "$n" ]] || fail "$(records_in_store) records stored, not $n"
}

# reads are public unless --private, as GET /models
case_private() {
  tokens
  start_daemon --token-file "$TMP/tokens" --private
  expect_status 401 "$BASE/records"
  expect_status 200 "${READ[@]}" "$BASE/records"
  head -1 "$TMP/body" | jq -e '.count == 0' >/dev/null || fail "records of an empty store: $(head -c 300 "$TMP/body")"
}

"case_$1"
echo "PASS $1"
