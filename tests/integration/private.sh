#!/usr/bin/env bash
# Integration tests of private reads and of the limits on authentication (issue 36, defects 9 and 7) against
# the real daemon on 127.0.0.1: the read scope and `serve --private`, an uploaded network's ONNX file served to
# token holders only, /workers without host names or data paths for anonymous clients, the minimum token
# length, failed authentications limited per address, the token file's permissions, repeated slashes in paths,
# and every subcommand's --help. Usage: private.sh CASE.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
CASE=${1:?usage: private.sh reads|workers|auth_limits|paths|cli_help}
READER=reader-token-0123456789
TUNER=tuner-token-0123456789
ADMIN=admin-token-0123456789
R=(-H "Authorization: Bearer $READER")
T=(-H "Authorization: Bearer $TUNER")

# tokens: a token file with a read, a tune and an admin token (the admin one hashed), private to its owner
tokens() {
  printf '%s read\n%s tune\n%s admin\n' "$READER" "$TUNER" "$(echo "$ADMIN" | "$TUNEHUB" hash-token)" >"$TMP/tokens"
  chmod 600 "$TMP/tokens"
}

# expect_401 SCOPE curl-args...: a 401 whose WWW-Authenticate and JSON error name the scope needed
expect_401() {
  local scope=$1
  shift
  expect_status 401 "$@"
  [[ "$(header WWW-Authenticate)" == "Bearer realm=\"tunehub\", scope=\"$scope\"" ]] ||
    fail "WWW-Authenticate of $*: '$(header WWW-Authenticate)'"
  jq -e --arg s "$scope" '.error.code == "unauthorized" and .error.scope == $s and
    (.error.message | test("scope " + $s))' "$TMP/body" >/dev/null || fail "401 body of $*: $(head -c 400 "$TMP/body")"
}

case_reads() {
  tokens
  /usr/bin/python3 "$here/onnx_models.py" small "$TMP/net.onnx" || fail "cannot write net.onnx"
  local sha
  sha=$(sha256sum "$TMP/net.onnx" | cut -d' ' -f1)
  # the default stays open: the catalog, the page and the network list answer anonymous clients
  start_daemon --token-file "$TMP/tokens"
  expect_status 201 -X PUT "${T[@]}" --data-binary "@$TMP/net.onnx" "$BASE/networks/mine"
  expect_status 403 -X PUT "${R[@]}" --data-binary "@$TMP/net.onnx" "$BASE/networks/mine"
  body_has 'needs the scope tune'
  expect_status 200 "$BASE/models"
  expect_status 200 "$BASE/"
  body_has '<html'
  expect_status 200 "$BASE/networks/mine"
  [[ "$(jq -r .digest "$TMP/body")" == "sha256:$sha" ]] || fail "network digest: $(head -c 400 "$TMP/body")"
  # but an uploaded network's ONNX file (its weights) goes to a read token only, even in the open mode
  expect_401 read "$BASE/blobs/sha256:$sha"
  expect_status 401 -I "$BASE/blobs/sha256:$sha" # HEAD: the same answer, without its body
  [[ "$(header WWW-Authenticate)" == 'Bearer realm="tunehub", scope="read"' ]] || fail "HEAD: no WWW-Authenticate"
  expect_status 200 "${R[@]}" "$BASE/blobs/sha256:$sha"
  cmp -s "$TMP/body" "$TMP/net.onnx" || fail "the ONNX file served differs from the upload"
  expect_status 200 -H "Authorization: Bearer $ADMIN" "$BASE/blobs/sha256:$sha" # admin > tune > read
  stop_daemon

  # --private: every read needs a read token (or one above it); probes and the page's files stay open
  start_daemon --token-file "$TMP/tokens" --private
  local p
  for p in /models /networks /networks/mine /jobs /targets /workers /scheduler /metrics \
    "/models/llvm/squeezenet_v1.1/1" "/models/llvm/squeezenet_v1.1/1/versions" "/blobs/sha256:$sha" /v2/ \
    /v2/_catalog; do
    expect_401 read "$BASE$p"
  done
  # a wrong token is no read token (a few: more than 10 a minute would be refused unchecked)
  for p in /models /v2/ "/blobs/sha256:$sha"; do
    expect_401 read -H "Authorization: Bearer wrong-token-0123456789" "$BASE$p"
  done
  expect_status 200 "$BASE/healthz"
  expect_status 200 "$BASE/readyz"
  expect_status 200 "$BASE/"
  expect_status 200 "$BASE/app.js"
  for p in /models /networks/mine /jobs /targets /workers /metrics /v2/ "/blobs/sha256:$sha"; do
    expect_status 200 "${R[@]}" "$BASE$p"
    expect_status 200 "${T[@]}" "$BASE$p"
  done
  # a read token reads, and changes nothing
  expect_status 403 -X POST "${R[@]}" -d '{"trials":1}' "$BASE/models/llvm/squeezenet_v1.1/1/tune"
  body_has 'has the scope read'
  [[ "$(store_sql "SELECT count(*) FROM jobs")" == 0 ]] || fail "a job was queued"
  stop_daemon
  # --private without a token file is refused at start
  expect_fail 2 "\-\-private needs \-\-token-file" timeout 20 "$TUNEHUB" serve --listen "127.0.0.1:$(free_port)" --data "$DATA" \
    --private
  echo "PASS private.reads"
}

case_workers() {
  tokens
  start_daemon --token-file "$TMP/tokens"
  local real host
  real=$(realpath "$DATA")
  host=$(hostname)
  # the daemon is a worker of its own store: a token holder sees its host and data directory
  expect_status 200 "${R[@]}" "$BASE/workers"
  jq -e --arg h "$host" '.count >= 1 and all(.workers[]; .host == $h)' "$TMP/body" >/dev/null ||
    fail "workers (read token): $(head -c 600 "$TMP/body")"
  body_has "$real"
  # an anonymous client sees neither, and the same label for the same worker on every call
  expect_status 200 "$BASE/workers"
  # (the host name as a value or a value's host: prefix; "vm" is also in "llvm")
  if grep -q -- "$real" "$TMP/body" ||
    ! jq -e --arg h "$host" '[.. | strings | select(. == $h or startswith($h + ":"))] | length == 0' "$TMP/body" \
      >/dev/null; then
    fail "anonymous /workers shows a data path or the host name: $(head -c 600 "$TMP/body")"
  fi
  jq -e '.count >= 1 and all(.workers[]; has("host") | not) and all(.workers[]; .name | test("^worker-[0-9a-f]{12}$"))' \
    "$TMP/body" >/dev/null || fail "anonymous workers: $(head -c 600 "$TMP/body")"
  local label
  label=$(jq -r '.workers[0].name' "$TMP/body")
  expect_status 200 -H "Authorization: Bearer wrong-token-0123456789" "$BASE/workers"
  [[ "$(jq -r '.workers[0].name' "$TMP/body")" == "$label" ]] || fail "the label changed: $(head -c 300 "$TMP/body")"
  grep -q -- "$real" "$TMP/body" && fail "a wrong token sees the data path"
  echo "PASS private.workers"
}

case_auth_limits() {
  tokens
  # a token shorter than 16 characters refuses the file at start, naming the line and the minimum
  printf '%s tune\nshort-token-15c admin\n' "$TUNER" >"$TMP/short"
  chmod 600 "$TMP/short"
  expect_fail 1 "line 2: a token is 16 to 1024 characters, this one has 15" \
    timeout 20 "$TUNEHUB" serve --listen "127.0.0.1:$(free_port)" --data "$DATA" --token-file "$TMP/short"
  echo -n "short-token-15c" | expect_fail 2 "at least 16 characters" "$TUNEHUB" hash-token
  # a token file others may read is served, with a warning that names the mode and the fix
  chmod 644 "$TMP/tokens"
  start_daemon --token-file "$TMP/tokens"
  grep -q "has mode 0644: group or others may read it; make it private with chmod 600 $TMP/tokens" "$LOG" ||
    fail "no warning about the token file's mode: $(grep -i token "$LOG" | head -5)"
  # failed authentications: 10 a minute per address, then 429 with Retry-After, the token not even checked
  local i
  for i in $(seq 1 10); do
    expect_status 401 -X POST -H "Authorization: Bearer guess-$i-0123456789abcdef" \
      "$BASE/models/llvm/squeezenet_v1.1/1/tune"
  done
  expect_status 429 -X POST -H "Authorization: Bearer guess-11-0123456789abcdef" \
    "$BASE/models/llvm/squeezenet_v1.1/1/tune"
  body_has '"code":"too_many_failed_authentications"'
  body_has 'more than 10 wrong bearer tokens in a minute'
  local retry
  retry=$(header Retry-After)
  [[ "$retry" =~ ^[0-9]+$ ]] && ((retry >= 1 && retry <= 60)) || fail "Retry-After '$retry'"
  # the right token of that address waits too (it is not checked), and nothing was queued
  expect_status 429 -X POST "${T[@]}" -d '{"trials":1}' "$BASE/models/llvm/squeezenet_v1.1/1/tune"
  [[ "$(store_sql "SELECT count(*) FROM jobs")" == 0 ]] || fail "a job was queued"
  # an anonymous read is no authentication: it is served
  expect_status 200 "$BASE/models"
  stop_daemon
  : >"$LOG"
  chmod 600 "$TMP/tokens"
  start_daemon --token-file "$TMP/tokens"
  grep -q "has mode" "$LOG" && fail "a warning for a token file of mode 0600"
  # a fresh daemon: the right token works at once
  expect_status 403 -X DELETE "${T[@]}" "$BASE/models/llvm/squeezenet_v1.1/1"
  echo "PASS private.auth_limits"
}

case_paths() {
  tokens
  /usr/bin/python3 "$here/onnx_models.py" small "$TMP/net.onnx" || fail "cannot write net.onnx"
  start_daemon --token-file "$TMP/tokens"
  # PUT //networks/x was a 500 (the upload, recognised only at "/networks/", was never set up): now it is the
  # route of /networks/x
  expect_status 201 -X PUT "${T[@]}" --data-binary "@$TMP/net.onnx" "$BASE//networks/mine"
  expect_status 200 -X PUT "${T[@]}" --data-binary "@$TMP/net.onnx" "$BASE//networks//mine"
  expect_status 200 "$BASE//networks///mine"
  body_has '"name":"mine"'
  expect_status 401 -X PUT --data-binary "@$TMP/net.onnx" "$BASE//networks/other"
  # no double-slash path is ever a 5xx
  local m p code
  for m in GET PUT POST DELETE; do
    for p in // /// //models //models//llvm//squeezenet_v1.1//1//manifest //networks //networks/ //networks// \
      //jobs//1 //blobs//sha256:00 //v2// //v2//_catalog //workers //healthz //networks/mine//x; do
      code=$(curl -sS -o "$TMP/body" -w '%{http_code}' -X "$m" "${T[@]}" --data-binary '{}' "$BASE$p") || true
      [[ "$code" =~ ^[1-4][0-9][0-9]$ ]] || fail "$m $p -> $code: $(head -c 300 "$TMP/body")"
    done
  done
  expect_status 200 -X DELETE -H "Authorization: Bearer $ADMIN" "$BASE//networks//mine"
  echo "PASS private.paths"
}

case_cli_help() {
  # every subcommand `tunehub help` lists prints its usage on stdout and exits 0 for --help and -h
  local cmds
  cmds=$("$TUNEHUB" help | sed -n 's/^  tunehub \([a-z][a-z-]*\).*/\1/p' | sort -u)
  [[ $(wc -w <<<"$cmds") -ge 12 ]] || fail "tunehub help lists only: $cmds"
  local c h rc
  for c in $cmds; do
    for h in --help -h; do
      rc=0
      "$TUNEHUB" "$c" "$h" >"$TMP/out" 2>"$TMP/err" </dev/null || rc=$?
      [[ $rc == 0 ]] || fail "tunehub $c $h exited $rc: $(head -c 300 "$TMP/err")"
      grep -q "usage:" "$TMP/out" || fail "tunehub $c $h printed no usage on stdout: $(head -c 300 "$TMP/out")"
      grep -q "tunehub $c" "$TMP/out" || fail "tunehub $c $h: the usage does not name the command"
    done
  done
  # after other arguments too, and a bad flag still exits 2 with the usage on stderr
  "$TUNEHUB" gc --data "$DATA" --help >"$TMP/out" || fail "tunehub gc --data D --help"
  [[ ! -e "$DATA" ]] || fail "gc --help opened a store"
  expect_fail 2 "usage: tunehub gc" "$TUNEHUB" gc --bogus
  echo "PASS private.cli_help ($(wc -w <<<"$cmds") commands)"
}

"case_$CASE"
