#!/usr/bin/env bash
# Integration test of blob garbage collection (store/store_gc.c, `tunehub gc`) against the real daemon on
# 127.0.0.1: two builds of squeezenet_v1.1, one DELETEd with an admin token; `tunehub gc --grace 0 --dry-run`
# lists its bundle and .so and removes nothing, `tunehub gc --grace 0` removes them (rows and files, and a shared
# store's large objects), and the other model is still served byte for byte. The daemon's own collector runs
# every 2 s with the default hour of grace (it sweeps nothing here) and /metrics shows its runs and still passes
# promtool. Usage: gc.sh sweep.
source "$(dirname "$0")/lib.sh"
CASE=${1:?usage: gc.sh sweep}
NET=squeezenet_v1.1
GONE=/models/llvm/$NET/1
KEPT=/models/llvm/$NET/2

# gc ARGS...: `tunehub gc` on the daemon's store into $TMP/gc.out, again when the daemon's collector held the
# collector's lock at that moment (it runs every 2 s, for milliseconds)
gc() {
  for _ in 1 2 3 4 5; do
    "$TUNEHUB" gc --data "$DATA" "$@" >"$TMP/gc.out" 2>"$TMP/gc.err" || fail "tunehub gc $*: $(cat "$TMP/gc.err")"
    grep -q "another process is collecting\|locked_out\": true" "$TMP/gc.out" || return 0
    sleep 0.3
  done
  fail "tunehub gc $* was locked out five times: $(cat "$TMP/gc.out")"
}

blob_file() {
  echo "$DATA/artifacts/${1:0:2}/$1"
}

case "$CASE" in
sweep)
  printf 'admin-token-12345 admin\n' >"$TMP/tokens"
  ADMIN=(-H 'Authorization: Bearer admin-token-12345')
  start_daemon --token-file "$TMP/tokens" --gc-interval 2
  grep -q "gc: every 2 s, sweeping blobs unreferenced for 3600 s" "$LOG" || fail "the collector did not start"
  expect_status 200 "$BASE$GONE?wait=300"
  expect_status 200 "$BASE$KEPT?wait=300"
  sha256sum "$TMP/body" | cut -c1-64 >"$TMP/kept.sha"
  read -r tar so < <(store_sql -F ' ' "SELECT tar_digest, so_digest FROM models WHERE batch = 1")
  [[ -f "$(blob_file "$tar")" && -f "$(blob_file "$so")" ]] || fail "the built blobs are not under $DATA/artifacts"
  bytes=$(($(stat -c %s "$(blob_file "$tar")") + $(stat -c %s "$(blob_file "$so")")))
  # nothing is unreferenced yet: a collection sweeps nothing, whatever the grace
  gc --grace 0
  grep -q "^tunehub gc: swept 0 blob(s)" "$TMP/gc.out" || fail "gc swept a referenced blob: $(cat "$TMP/gc.out")"
  expect_status 200 -X DELETE "${ADMIN[@]}" "$BASE$GONE"
  # within the grace period (the default hour) the deleted version's blobs stay
  gc --dry-run
  grep -q "^tunehub gc: would sweep 0 blob(s)" "$TMP/gc.out" || fail "blobs within the grace period listed: $(cat "$TMP/gc.out")"
  # a dry run lists both, and removes nothing
  gc --grace 0 --dry-run
  grep -q "^would remove sha256:$tar " "$TMP/gc.out" || fail "the dry run does not list the bundle: $(cat "$TMP/gc.out")"
  grep -q "^would remove sha256:$so " "$TMP/gc.out" || fail "the dry run does not list the .so: $(cat "$TMP/gc.out")"
  grep -q "^tunehub gc: would sweep 2 blob(s) ($bytes bytes)" "$TMP/gc.out" || fail "dry run: $(cat "$TMP/gc.out")"
  gc --grace 0 --dry-run --json
  jq -e --argjson b "$bytes" '.dry_run and .swept.blobs == 2 and .swept.bytes == $b and .marked.blobs == 2 and
    (.would_remove | length) == 2' "$TMP/gc.out" >/dev/null || fail "dry run JSON: $(cat "$TMP/gc.out")"
  [[ -f "$(blob_file "$tar")" && -f "$(blob_file "$so")" ]] || fail "the dry run removed a file"
  [[ "$(store_sql "SELECT count(*) FROM artifacts WHERE digest IN ('$tar', '$so')")" == 2 ]] || fail "the dry run removed a row"
  # the real run
  gc --grace 0
  grep -q "^tunehub gc: swept 2 blob(s) ($bytes bytes)" "$TMP/gc.out" || fail "gc: $(cat "$TMP/gc.out")"
  grep -q "1 deleted version(s) removed" "$TMP/gc.out" || fail "gc kept the deleted version's row: $(cat "$TMP/gc.out")"
  [[ ! -e "$(blob_file "$tar")" && ! -e "$(blob_file "$so")" ]] || fail "the swept blobs' files remain"
  [[ "$(store_sql "SELECT count(*) FROM artifacts WHERE digest IN ('$tar', '$so')")" == 0 ]] || fail "the swept rows remain"
  if [[ -n "${TH_TEST_DB:-}" ]]; then
    [[ "$(store_sql "SELECT count(*) FROM artifacts WHERE lo_oid IS NOT NULL")" == 2 ]] || fail "large objects: $(store_sql "SELECT digest, lo_oid FROM artifacts")"
    [[ "$(store_sql "SELECT count(*) FROM pg_largeobject_metadata")" == 2 ]] || fail "the swept large objects remain"
  fi
  # the rest of the catalog still serves, byte for byte; the swept blob is gone by digest too
  expect_status 200 "$BASE$KEPT"
  [[ "$(sha256sum "$TMP/body" | cut -c1-64)" == "$(cat "$TMP/kept.sha")" ]] || fail "the kept model's bytes changed"
  expect_status 200 "$BASE$KEPT/manifest"
  expect_status 200 "$BASE/models?network=$NET"
  jq -e '.count == 1 and .models[0].batch == 2' "$TMP/body" >/dev/null || fail "catalog: $(head -c 400 "$TMP/body")"
  expect_status 404 "$BASE/blobs/sha256:$tar"
  # a second run finds nothing more
  gc --grace 0
  grep -q "^tunehub gc: swept 0 blob(s) (0 bytes) and 0 leftover" "$TMP/gc.out" || fail "second gc: $(cat "$TMP/gc.out")"
  # the daemon's collector has run (every 2 s) and logged it; /metrics shows it and passes promtool
  for _ in $(seq 1 50); do grep -q "gc: swept 0 blob(s)" "$LOG" && break; sleep 0.1; done
  grep -q "gc: swept 0 blob(s)" "$LOG" || fail "the daemon's collector logged no run"
  expect_status 200 "$BASE/metrics"
  grep -Eq '^tunehub_gc_runs_total\{outcome="ok"\} [1-9]' "$TMP/body" || fail "no collection counted: $(grep gc "$TMP/body")"
  grep -Eq '^tunehub_gc_last_run_timestamp_seconds [1-9]' "$TMP/body" || fail "no last run time"
  grep -Eq '^tunehub_gc_swept_bytes_total 0$' "$TMP/body" || fail "the daemon swept within its grace period"
  if command -v promtool >/dev/null; then
    promtool check metrics <"$TMP/body" >"$TMP/lint" 2>&1 || { cat "$TMP/lint"; fail "promtool rejects /metrics"; }
  fi
  # bad flags name the valid ones
  expect_fail 2 "valid: --data DIR --db URL --grace SECONDS --dry-run --json" "$TUNEHUB" gc --data "$DATA" --force
  expect_fail 2 "grace takes a number of seconds >= 0" "$TUNEHUB" gc --data "$DATA" --grace soon
  # (a shared store's data dir is only a cache: any directory does)
  [[ -n "${TH_TEST_DB:-}" ]] || expect_fail 1 "holds no store" "$TUNEHUB" gc --data "$TMP/nowhere"
  stop_daemon
  expect_fail 2 "gc-interval takes a whole number" "$TUNEHUB" serve --data "$DATA" --gc-interval -1
  echo "PASS gc.sweep (swept 2 blobs, $bytes bytes)"
  ;;
*) fail "unknown case $CASE" ;;
esac
