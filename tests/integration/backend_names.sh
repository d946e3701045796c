#!/usr/bin/env bash
# The server asks the backends for every framework, target and precision name it answers with (issue 37): an
# unknown framework's 4xx lists the backends, GET /targets lists each backend's target names, precisions and
# whether GET .../tuning answers for it, and nothing is queued for a refused request. Usage: backend_names.sh lists.
source "$(dirname "$0")/lib.sh"
CASE=${1:?usage: backend_names.sh lists}

case "$CASE" in
lists)
  start_daemon
  NET=squeezenet_v1.1
  # an unknown framework: the valid ones, from the backend registry, in the detail and the message
  expect_status 404 "$BASE/models/tpu/$NET/1"
  body_has '"code":"unknown_framework"'
  jq -e '.error.valid == ["llvm","cuda"] or .valid == ["llvm","cuda"]' "$TMP/body" >/dev/null \
    || fail "the unknown framework's valid list: $(head -c 400 "$TMP/body")"
  body_has "unknown framework 'tpu'; valid frameworks: llvm, cuda"
  expect_status 400 "$BASE/models?framework=tpu"
  body_has '"code":"unknown_framework"'
  body_has "unknown framework 'tpu'; valid frameworks: llvm, cuda"
  jq -e '.error.valid == ["llvm","cuda"] or .valid == ["llvm","cuda"]' "$TMP/body" >/dev/null \
    || fail "the catalog's unknown framework: $(head -c 400 "$TMP/body")"
  expect_status 200 "$BASE/jobs"
  [[ "$(jq .count "$TMP/body")" == 0 ]] || fail "an unknown framework queued a job"
  # GET /targets: one entry per backend, each with its own target names, precisions and tuning-curve answer
  expect_status 200 "$BASE/targets"
  jq -e '[.targets[].framework] == ["llvm","cuda"]' "$TMP/body" >/dev/null || fail "frameworks: $(head -c 600 "$TMP/body")"
  jq -e '.targets[] | select(.framework=="cuda") |
    .valid_targets == ["native","sm_70","sm_75","sm_80","sm_86","sm_89","sm_90"] and .precisions == ["fp32","tf32"]
    and .tuning_curve == false and (.native | startswith("sm_"))' "$TMP/body" >/dev/null \
    || fail "cuda in /targets: $(jq -c '.targets[1]' "$TMP/body" | head -c 600)"
  jq -e '.targets[] | select(.framework=="llvm") |
    (.valid_targets | index("x86-64-v3") and index("znver4") and .[0] == "native") and .precisions == ["fp32"]
    and .tuning_curve == true and ("llvm -mcpu=" + .native == .target)' "$TMP/body" >/dev/null \
    || fail "llvm in /targets: $(jq -c '.targets[0] | del(.valid_targets)' "$TMP/body" | head -c 600)"
  # a precision a backend does not take: its reason, from the backend, and nothing queued
  expect_status 400 "$BASE/models/llvm/$NET/1?precision=tf32"
  body_has 'precision tf32 needs the cuda framework; llvm takes fp32'
  expect_status 400 "$BASE/models/cuda/$NET/1?precision=tf32&target=sm_75"
  body_has 'tf32 needs tensor cores of sm_80 or newer; target cuda -arch=sm_75 takes fp32 only'
  expect_status 200 "$BASE/jobs"
  [[ "$(jq .count "$TMP/body")" == 0 ]] || fail "a refused precision queued a job"
  echo "PASS backend_names.lists"
  ;;
*) fail "unknown case $CASE" ;;
esac
