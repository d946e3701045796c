#!/usr/bin/env bash
# Abuse limits against the real daemon on 127.0.0.1: an anonymous client that floods misses on distinct keys is
# limited by --miss-rate (429 with Retry-After, nothing queued) while token holders and misses on keys already
# being built go through; one client address holding many idle connections is capped by
# --max-connections-per-ip, and another client is still served at once.
# Usage: abuse.sh miss_rate|conn_per_ip.
source "$(dirname "$0")/lib.sh"
CASE=${1:?usage: abuse.sh miss_rate|conn_per_ip}
NET=squeezenet_v1.1

njobs() { curl -fsS "$BASE/jobs" | jq '.jobs | length'; }

case "$CASE" in
miss_rate)
  echo "abuse-token-123" >"$TMP/token"
  # one worker: the misses stay queued behind the first while the test runs
  start_daemon --token-file "$TMP/token" --miss-rate 3 --workers 1
  for b in 1 2 3; do expect_status 503 "$BASE/models/llvm/$NET/$b"; done
  expect_status 429 "$BASE/models/llvm/$NET/4"
  body_has '"code":"rate_limited"'
  body_has 'at most 3 new builds a minute'
  retry=$(header Retry-After)
  [[ "$retry" =~ ^[0-9]+$ && "$retry" -ge 1 && "$retry" -le 20 ]] || fail "Retry-After '$retry', want 1..20 s"
  [[ "$(njobs)" == 3 ]] || fail "the refused miss queued a job: $(njobs) jobs"
  # the OCI face refuses in its own error format
  expect_status 429 -H 'Accept: application/vnd.oci.image.manifest.v1+json' "$BASE/v2/llvm/$NET/manifests/b5"
  body_has TOOMANYREQUESTS
  # a miss on a key already being built costs nothing; a token holder is not limited
  expect_status 503 "$BASE/models/llvm/$NET/2"
  expect_status 503 -H 'Authorization: Bearer abuse-token-123' "$BASE/models/llvm/$NET/6"
  [[ "$(njobs)" == 4 ]] || fail "want 4 jobs (3 anonymous, 1 with the token), got $(njobs)"
  echo "PASS abuse.miss_rate"
  ;;
conn_per_ip)
  start_daemon --max-connections-per-ip 20
  # 60 idle connections from 127.0.0.2 (another client address on the loopback), held open
  /usr/bin/python3 - "$PORT" >"$TMP/held" <<'PY' &
import socket, sys, time
port = int(sys.argv[1])
socks = []
for _ in range(60):
    s = socket.socket()
    s.bind(("127.0.0.2", 0))
    s.connect(("127.0.0.1", port))
    socks.append(s)
time.sleep(1.0)
alive = 0
for s in socks:
    s.setblocking(False)
    try:
        alive += s.recv(1) != b""  # data: not expected; b"": closed by the server
    except BlockingIOError:
        alive += 1  # nothing to read and not closed: the server holds it
print(alive, flush=True)
time.sleep(4)
PY
  holder=$!
  sleep 0.5
  # another client is served at once while the flood holds its connections
  t=$(curl -fsS -o /dev/null -w '%{time_total}' --max-time 3 "$BASE/healthz") || fail "/healthz failed during the flood"
  wait "$holder" || true
  alive=$(cat "$TMP/held")
  [[ -n "$alive" && "$alive" -le 20 ]] || fail "one address held $alive connections, the limit is 20"
  [[ "$alive" -ge 1 ]] || fail "no connection of the flood was accepted at all"
  echo "PASS abuse.conn_per_ip (flood held $alive of 60; /healthz in ${t}s)"
  ;;
*) fail "unknown case $CASE" ;;
esac
