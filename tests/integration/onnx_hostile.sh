#!/usr/bin/env bash
# Integration tests of hostile ONNX uploads against the real daemon on 127.0.0.1: a graph nested 3,000 levels
# deep through graph-valued node attributes (about 40 KB; it overflowed protobuf-c's recursion and killed the
# daemon with SIGSEGV) and a node bomb (10 MB of 5,000,000 empty NodeProtos; protobuf-c allocated about 750 MB
# before the importer counted them), written by tests/fuzz/onnx_hostile.py. Each PUT with a token gets
# 400 invalid_onnx naming the limit, the daemon stays up with its peak RSS (VmHWM) under a bound, nothing is
# stored; `tunehub import` of the same file exits 1 with the message. Usage: onnx_hostile.sh CASE.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
TOKEN="s3cret-token-123"
RSS_BOUND_KB=$((200 * 1024))

# hostile KIND N LIMIT: PUT the file (as network 'x'), then `tunehub import` it
hostile() {
  local kind=$1 n=$2 limit=$3 f="$TMP/$1.onnx" got
  /usr/bin/python3 "$here/../fuzz/onnx_hostile.py" "$kind" "$n" "$f" || fail "cannot write $f"
  echo "$kind: $(stat -c %s "$f") bytes"
  echo "$TOKEN" >"$TMP/token"
  start_daemon --token-file "$TMP/token" --max-upload 64M
  got=$(curl -sS -o "$TMP/body" -w '%{http_code}' -X PUT -H "Authorization: Bearer $TOKEN" \
    --data-binary "@$f" "$BASE/networks/x") || true
  echo "PUT: $got $(head -c 400 "$TMP/body")"
  kill -0 "$PID" 2>/dev/null || fail "the daemon died on the $kind upload"
  [[ "$got" == 400 ]] || fail "PUT $kind -> $got, want 400"
  body_has '"invalid_onnx"'
  body_has "$limit"
  expect_status 200 "$BASE/healthz"
  expect_status 200 "$BASE/networks"
  jq -e '[.networks[] | select(.source == "onnx")] | length == 0' "$TMP/body" >/dev/null ||
    fail "an uploaded network is listed: $(head -c 400 "$TMP/body")"
  [[ "$(store_sql "select count(*) from networks where source = 'onnx'")" == 0 ]] ||
    fail "a network row was stored"
  [[ -z "$(ls -A "$DATA/tmp" 2>/dev/null)" ]] || fail "temp files were left: $(ls -A "$DATA/tmp")"
  local hwm
  hwm=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$PID/status")
  echo "$kind: daemon peak RSS (VmHWM) $hwm kB (bound $RSS_BOUND_KB kB)"
  ((hwm < RSS_BOUND_KB)) || fail "the daemon's peak RSS is $hwm kB, over $RSS_BOUND_KB kB"
  stop_daemon
  # the CLI: exit 1 (not a signal: < 128) with the limit named, nothing stored; its own peak RSS
  local rc=0
  /usr/bin/python3 - "$TMP/cli_rss" "$TUNEHUB" import "$f" --name x --data "$DATA" \
    >"$TMP/out" 2>"$TMP/err" <<'PY' || rc=$?
import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:])
open(sys.argv[1], "w").write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(rc if rc >= 0 else 128 - rc)
PY
  echo "import: exit $rc: $(head -c 400 "$TMP/err")"
  echo "$kind: tunehub import peak RSS $(cat "$TMP/cli_rss") kB"
  [[ $rc == 1 ]] || fail "tunehub import of $kind exited $rc, not 1"
  grep -q -- "$limit" "$TMP/err" || fail "tunehub import of $kind does not name '$limit'"
  (($(cat "$TMP/cli_rss") < RSS_BOUND_KB)) || fail "tunehub import's peak RSS is over $RSS_BOUND_KB kB"
  [[ "$(store_sql "select count(*) from networks where source = 'onnx'")" == 0 ]] ||
    fail "tunehub import stored a network"
}

case_nested() { hostile nested 3000 "graph nesting deeper than 4 levels"; }
case_bomb() { hostile bomb 5000000 "more than 100000 nodes"; }

"case_$1"
echo "PASS onnx_hostile $1"
