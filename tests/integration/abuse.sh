#!/usr/bin/env bash
# Abuse limits against the real daemon on 127.0.0.1: an anonymous client that floods misses on distinct keys is
# limited by --miss-rate (429 with Retry-After, nothing queued) while token holders and misses on keys already
# being built go through; one client address holding many idle connections is capped by
# --max-connections-per-ip, and another client is still served at once; a slow-headers attack (slowhttptest's
# Slowloris: 1200 connections that each send a header line every few seconds and never finish) holds no more
# than that cap, and another client is served throughout.
# Usage: abuse.sh miss_rate|conn_per_ip|slow_headers.
source "$(dirname "$0")/lib.sh"
CASE=${1:?usage: abuse.sh miss_rate|conn_per_ip|slow_headers}
NET=squeezenet_v1.1

njobs() { curl -fsS "$BASE/jobs" | jq '.jobs | length'; }

case "$CASE" in
miss_rate)
  echo "abuse-token-1234" >"$TMP/token"
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
  expect_status 503 -H 'Authorization: Bearer abuse-token-1234' "$BASE/models/llvm/$NET/6"
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
slow_headers)
  command -v slowhttptest >/dev/null || { echo "SKIP: slowhttptest is not installed (scripts/deps.sh --test)"; exit 77; }
  ulimit -n 8192 2>/dev/null || true
  # the daemon's defaults: 1000 connections, 256 per client address, 30 s idle timeout. Without the per-address
  # cap, 1200 slow connections take the whole budget and nobody else gets in.
  # shellcheck disable=SC2086 # ABUSE_DAEMON_FLAGS: extra flags, e.g. to show the test fail without the cap
  start_daemon ${ABUSE_DAEMON_FLAGS:-}
  slowhttptest -H -c 1200 -r 600 -i 3 -x 16 -l 25 -p 3 -u "$BASE/healthz" >"$TMP/slow.out" 2>&1 &
  attacker=$!
  sleep 4 # 1200 connections are opened at 600/s
  ok=0 worst=0 held_max=0
  for _ in $(seq 1 12); do
    # another client address on the loopback, as another machine would be
    if t=$(curl -fsS -o /dev/null -w '%{time_total}' --interface 127.0.0.2 --max-time 3 "$BASE/healthz"); then
      ok=$((ok + 1))
      worst=$(awk -v a="$worst" -v b="$t" 'BEGIN{print (b > a ? b : a)}')
    fi
    held=$(ss -Htn state established "( sport = :$PORT )" | wc -l)
    ((held > held_max)) && held_max=$held
    sleep 1
  done
  attempted=$(ss -Htn state established "( dport = :$PORT )" | wc -l)
  kill "$attacker" 2>/dev/null || true
  wait "$attacker" 2>/dev/null || true
  echo "slow headers: the daemon held at most $held_max connections; another client was served $ok of 12 times" \
    "(slowest ${worst}s)"
  # slowhttptest's last status lines, without their colours
  sed 's/\x1b\[[0-9;]*m//g' "$TMP/slow.out" | grep -E "^(connected|closed)" | tail -2 || true
  [[ $held_max -ge 100 ]] || fail "the attack never held connections ($held_max): slowhttptest did not run"
  [[ $ok -eq 12 ]] || fail "another client was served only $ok of 12 times during the attack"
  [[ $held_max -le 270 ]] || fail "one client address held $held_max connections (the cap is 256)"
  echo "PASS abuse.slow_headers"
  ;;
*) fail "unknown case $CASE" ;;
esac
