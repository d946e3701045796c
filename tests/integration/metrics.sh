#!/usr/bin/env bash
# /metrics in the Prometheus text format, checked by Prometheus's own linter (`promtool check metrics`, from
# Debian's prometheus package) after traffic that fills every family: hits, a miss that builds, 4xx answers and
# a download. Usage: metrics.sh promtool.
source "$(dirname "$0")/lib.sh"
CASE=${1:?usage: metrics.sh promtool}
command -v promtool >/dev/null || fail "promtool is not installed (scripts/deps.sh --test installs prometheus)"

case "$CASE" in
promtool)
  start_daemon
  expect_status 200 "$BASE/models/llvm/squeezenet_v1.1/1?wait=300"
  expect_status 200 "$BASE/models/llvm/squeezenet_v1.1/1/manifest"
  expect_status 404 "$BASE/models/llvm/no-such-net/1"
  expect_status 400 "$BASE/models/llvm/squeezenet_v1.1/0"
  curl -fsS "$BASE/metrics" >"$TMP/metrics"
  promtool check metrics <"$TMP/metrics" >"$TMP/lint" 2>&1 || { cat "$TMP/lint"; fail "promtool rejects /metrics"; }
  # the families a dashboard reads are there, with the traffic above counted
  grep -q '^tunehub_http_requests_total{.*status="404"' "$TMP/metrics" || fail "no 404 counted"
  grep -q '^tunehub_artifact_bytes_served_total [1-9]' "$TMP/metrics" || fail "no bytes counted"
  grep -q '^tunehub_jobs{state="succeeded"} 1' "$TMP/metrics" || fail "the build job is not counted"
  echo "PASS metrics.promtool ($(grep -c '^# TYPE' "$TMP/metrics") families)"
  ;;
*) fail "unknown case $CASE" ;;
esac
