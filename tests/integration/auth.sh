#!/usr/bin/env bash
# Integration test of bearer tokens with scopes (auth.h) against the real daemon on 127.0.0.1: a token file
# with a plain `tune` token, a hashed `admin` token made by `tunehub hash-token`, and a comment. A tune token
# may queue tuning and cancel, but a delete answers 403 naming the scope it needs; the admin token, stored only
# as its hash, deletes; a wrong token is 401; a bad token file stops the daemon at start with the rule.
# Usage: auth.sh scopes.
source "$(dirname "$0")/lib.sh"
CASE=${1:?usage: auth.sh scopes}
NET=squeezenet_v1.1
M=/models/llvm/$NET/1

case "$CASE" in
scopes)
  admin_hash=$(echo "admin-secret-4242" | "$TUNEHUB" hash-token)
  [[ "$admin_hash" =~ ^sha256:[0-9a-f]{64}$ ]] || fail "hash-token printed '$admin_hash'"
  printf '# tokens of the test\ntune-only-token-1 tune\n%s admin\n' "$admin_hash" >"$TMP/tokens"
  grep -q "admin-secret-4242" "$TMP/tokens" && fail "the token file holds the admin token itself"
  TUNE=(-H 'Authorization: Bearer tune-only-token-1')
  ADMIN=(-H 'Authorization: Bearer admin-secret-4242')
  start_daemon --token-file "$TMP/tokens"
  expect_status 200 "$BASE$M?wait=300"
  # the tune token queues tuning (and may cancel it); it may not delete
  expect_status 202 -X POST "${TUNE[@]}" -d '{"trials":1}' "$BASE$M/tune"
  job=$(jq -r .job.id "$TMP/body")
  expect_status 202 -X DELETE "${TUNE[@]}" "$BASE/jobs/$job"  # a running job stops between stages
  expect_status 403 -X DELETE "${TUNE[@]}" "$BASE$M"
  body_has '"code":"forbidden"'
  body_has 'needs the scope admin'
  expect_status 200 "$BASE$M"  # still published
  # a wrong token, and the hash text presented as a token, are unknown
  expect_status 401 -X DELETE -H 'Authorization: Bearer tune-only-token-1X' "$BASE$M"
  expect_status 401 -X DELETE -H "Authorization: Bearer ${admin_hash#sha256:}" "$BASE$M"
  expect_status 401 -X DELETE "$BASE$M"
  # the admin token, held by the daemon only as its hash, deletes
  expect_status 200 -X DELETE "${ADMIN[@]}" "$BASE$M"
  [[ "$(curl -s -o /dev/null -w "%{http_code}" "$BASE$M/versions")" == 404 ]] || fail "versions remain after the delete"
  stop_daemon
  # a token file the daemon cannot use stops it at start, with the rule
  printf 'tune-only-token-1 tune,deploy\n' >"$TMP/bad"
  "$TUNEHUB" serve --listen "127.0.0.1:$(free_port)" --data "$DATA" --token-file "$TMP/bad" >"$TMP/bad.log" 2>&1 &&
    fail "the daemon started with an unknown scope"
  grep -q "valid scopes: read, tune, admin" "$TMP/bad.log" || fail "no clear message: $(cat "$TMP/bad.log")"
  echo "PASS auth.scopes"
  ;;
*) fail "unknown case $CASE" ;;
esac
