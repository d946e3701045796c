#!/usr/bin/env bash
# Admission guards against the real daemon (server/guard.c): a key whose planned build is larger than
# --memory-budget answers 413 over_budget naming the footprint and the budget, and queues nothing; below the
# --min-free floor on the data directory, new work (a miss that would queue, POST .../tune, an upload) answers 507
# insufficient_storage naming the free space and the floor, while a published bundle is still served, and /readyz
# and /metrics report the free space; a chunked upload that would cross the floor as it streams is cut and
# answered 507 with its file removed (min_free_stream: a tmpfs data directory, so it needs root).
# Usage: guard.sh over_budget|min_free|min_free_stream.
source "$(dirname "$0")/lib.sh"
CASE=${1:?usage: guard.sh over_budget|min_free|min_free_stream}
NET=squeezenet_v1.1
TOKEN=guard-token-12345678
echo "$TOKEN" >"$TMP/tokens"
AUTH=(-H "Authorization: Bearer $TOKEN")

njobs() { curl -fsS "$BASE/jobs" | jq '.jobs | length'; }

case "$CASE" in
over_budget)
  # 1 GiB: squeezenet at batch 1 (5 MB of weights, 512 MiB for the compiler) fits; vgg-19 at batch 64 (548 MB of
  # weights, four times over, and its activations) does not
  start_daemon --token-file "$TMP/tokens" --memory-budget 1G --workers 1
  expect_status 413 "$BASE/models/llvm/vgg-19/64"
  body_has '"code":"over_budget"'
  body_has '"status":413'
  jq -e '.error.message | test("needs about [0-9]+ bytes .* memory budget of 1073741824 bytes")' "$TMP/body" \
    >/dev/null || fail "the 413 does not name the footprint and the budget: $(head -c 600 "$TMP/body")"
  echo "miss: $(jq -r .error.message "$TMP/body")"
  [[ "$(njobs)" == 0 ]] || fail "the refused miss queued a job: $(curl -sS "$BASE/jobs")"
  # with a token, and as a tuning request: the same
  expect_status 413 "${AUTH[@]}" -X POST -d '{}' "$BASE/models/llvm/vgg-19/64/tune"
  body_has '"code":"over_budget"'
  # the OCI face refuses too, in its own format
  expect_status 413 -H 'Accept: application/vnd.oci.image.manifest.v1+json' "$BASE/v2/llvm/vgg-19/manifests/b64"
  body_has DENIED
  [[ "$(njobs)" == 0 ]] || fail "a refused request queued a job: $(curl -sS "$BASE/jobs")"
  # a key that fits is queued as before
  expect_status 503 "$BASE/models/llvm/$NET/1"
  [[ "$(njobs)" == 1 ]] || fail "the miss that fits did not queue: $(curl -sS "$BASE/jobs")"
  stop_daemon
  # the command line refuses such a build before compiling
  expect_fail 2 "memory budget" "$TUNEHUB" build llvm vgg-19 64 -o "$TMP/x.tar" --data "$DATA" --memory-budget 1G
  [[ ! -e "$TMP/x.tar" ]] || fail "the refused build wrote $TMP/x.tar"
  echo "PASS guard.over_budget"
  ;;
min_free)
  # publish one with the default floor
  start_daemon --token-file "$TMP/tokens"
  expect_status 200 "$BASE/models/llvm/$NET/1?wait=300"
  sha=$(sha256sum "$TMP/body" | cut -d' ' -f1)
  expect_status 200 "$BASE/readyz"
  jq -e '.disk == "ok" and .data_free_bytes > 0 and .min_free_bytes > 0' "$TMP/body" >/dev/null ||
    fail "/readyz with room: $(cat "$TMP/body")"
  stop_daemon
  # a floor above any disk: 1 PiB
  floor=1125899906842624
  start_daemon --token-file "$TMP/tokens" --min-free 1P
  grep -q "new work is refused (507)" "$LOG" || fail "the start-up log does not warn of the low disk"
  # what is published is still served, byte for byte
  expect_status 200 "$BASE/models/llvm/$NET/1"
  [[ "$(sha256sum "$TMP/body" | cut -d' ' -f1)" == "$sha" ]] || fail "the cached bundle changed"
  # a miss that would queue
  expect_status 507 "$BASE/models/llvm/$NET/2"
  body_has '"code":"insufficient_storage"'
  jq -e --argjson f "$floor" '.error.min_free_bytes == $f and .error.free_bytes > 0 and
      (.error.message | test("[0-9]+ bytes free on .* floor of " + ($f | tostring) + " bytes"))' "$TMP/body" \
    >/dev/null || fail "the 507 does not name the free space and the floor: $(head -c 600 "$TMP/body")"
  echo "miss: $(jq -r .error.message "$TMP/body")"
  # a tuning request
  expect_status 507 "${AUTH[@]}" -X POST -d '{}' "$BASE/models/llvm/$NET/1/tune"
  body_has '"code":"insufficient_storage"'
  # an upload, refused before its body is stored
  head -c 1000 /dev/urandom >"$TMP/x.onnx"
  expect_status 507 "${AUTH[@]}" -X PUT --data-binary @"$TMP/x.onnx" "$BASE/networks/guarded"
  body_has '"code":"insufficient_storage"'
  expect_status 404 "$BASE/networks/guarded"
  [[ -z "$(ls -A "$DATA/tmp")" ]] || fail "the refused upload left files: $(ls -A "$DATA/tmp")"
  [[ "$(njobs)" == 1 ]] || fail "a refused request queued a job: $(curl -sS "$BASE/jobs")"
  # readiness reports the disk, and stays ready: it still serves
  expect_status 200 "$BASE/readyz"
  jq -e --argjson f "$floor" '.status == "ready" and .disk == "low" and .min_free_bytes == $f and
      .data_free_bytes > 0' "$TMP/body" >/dev/null || fail "/readyz: $(cat "$TMP/body")"
  echo "readyz: $(cat "$TMP/body")"
  expect_status 200 "$BASE/metrics"
  grep -qE '^tunehub_data_free_bytes [0-9]+$' "$TMP/body" || fail "/metrics lacks tunehub_data_free_bytes"
  grep -qx "tunehub_data_min_free_bytes $floor" "$TMP/body" || fail "/metrics lacks the floor"
  grep -E '^tunehub_data_(min_)?free_bytes' "$TMP/body"
  echo "PASS guard.min_free"
  ;;
min_free_stream)
  [[ "$(id -u)" == 0 ]] || { echo "SKIP: mounting a tmpfs needs root (id -u is $(id -u))"; exit 77; }
  mkdir -p "$DATA"
  mount -t tmpfs -o size=64m tmpfs "$DATA" 2>"$TMP/mount.err" ||
    { echo "SKIP: cannot mount a tmpfs: $(cat "$TMP/mount.err")"; exit 77; }
  trap 'rc=$?; stop_daemon; umount -l "$DATA" 2>/dev/null; (exit $rc); cleanup' EXIT
  start_daemon --token-file "$TMP/tokens" --min-free 40M
  # 48 MiB without a length: taken at its start (64 MiB free), cut at the 32 MiB mark (less than 40 MiB left)
  head -c $((48 << 20)) /dev/urandom >"$TMP/big.onnx"
  expect_status 507 "${AUTH[@]}" -X PUT -H 'Transfer-Encoding: chunked' --data-binary @"$TMP/big.onnx" \
    "$BASE/networks/streamed"
  body_has '"code":"insufficient_storage"'
  body_has 'floor of 41943040 bytes'
  echo "chunked upload: $(jq -r .error.message "$TMP/body")"
  expect_status 404 "$BASE/networks/streamed"
  [[ -z "$(ls -A "$DATA/tmp")" ]] || fail "the cut upload left files: $(ls -A "$DATA/tmp")"
  avail=$(df --output=avail -B1 "$DATA" | tail -n1)
  ((avail > 60 << 20)) || fail "the cut upload's bytes were not given back: $avail bytes free"
  kill -0 "$PID" || fail "the daemon died"
  echo "PASS guard.min_free_stream ($avail bytes free after)"
  ;;
*) fail "unknown case $CASE" ;;
esac
