#!/usr/bin/env bash
# Sharing the daemon fairly (issue 36), against the real daemon on 127.0.0.1: every field of the model key has its
# own manifest and ETag even when another key's manifest is cached (no publish in between); anonymous clients get
# a bounded number of live jobs per address and a bounded share of the queue, so a token holder's tune is accepted
# during a flood of misses; ?wait= requests are capped per address and end at their deadline; anonymous event
# streams can neither end a stream that a token holder follows nor take every event ring.
# Usage: share.sh manifest_keys|anon_queue|waits|sse, with TUNEHUB set to the binary.
source "$(dirname "$0")/lib.sh"
CASE=${1:?usage: share.sh manifest_keys|anon_queue|waits|sse}
NET=squeezenet_v1.1
M="/models/llvm/$NET/1"
TOKEN=share-token-1234
auth=(-H "Authorization: Bearer $TOKEN")

njobs() { curl -fsS "$BASE/jobs" | jq .count; }

# keys_apart PATH QA QB: two keys of PATH (query strings QA, QB), both built, and no job runs: each manifest is
# its own (the cache of the first read must not answer the second), with the ETag of its own download, and an
# If-None-Match with the other key's ETag gets 200, with its own 304
keys_apart() {
  local p=$1 qa=$2 qb=$3 ea eb
  expect_status 200 "$BASE$p/manifest?$qa"
  ea=$(header ETag)
  cp "$TMP/body" "$TMP/ma.json"
  expect_status 200 "$BASE$p/manifest?$qb"
  eb=$(header ETag)
  cp "$TMP/body" "$TMP/mb.json"
  echo "$p ?$qa: $ea; ?$qb: $eb"
  [[ "$ea" != "$eb" ]] || fail "?$qa and ?$qb answered the same ETag $ea"
  cmp -s "$TMP/ma.json" "$TMP/mb.json" && fail "?$qa and ?$qb answered the same manifest"
  for q in "$qa $ea $eb" "$qb $eb $ea"; do
    set -- $q
    expect_status 200 "$BASE$p?$1"
    [[ "$(header ETag)" == "$2" ]] || fail "the download of ?$1 has ETag $(header ETag), its manifest $2"
    expect_status 200 -H "If-None-Match: $3" "$BASE$p/manifest?$1"
    [[ "$(header ETag)" == "$2" ]] || fail "?$1 with the other key's If-None-Match: ETag $(header ETag), want $2"
    expect_status 304 -H "If-None-Match: $2" "$BASE$p/manifest?$1"
    expect_status 200 "$BASE$p/versions?$1"
    jq -e --arg d "${2//\"/}" '.versions[0] | tostring | contains($d | ltrimstr("sha256:"))' "$TMP/body" \
      >/dev/null || fail "versions of ?$1 do not list its bundle ${2}: $(head -c 300 "$TMP/body")"
  done
}

case "$CASE" in
manifest_keys)
  start_daemon
  # both keys built first; then no job runs while the manifests are read
  expect_status 200 "$BASE$M?wait=300"
  expect_status 200 "$BASE$M?target=x86-64-v3&wait=300"
  for id in $(curl -fsS "$BASE/jobs" | jq -r '.jobs[].id'); do wait_job "$id" succeeded 60; done
  keys_apart "$M" "target=native" "target=x86-64-v3"
  jq -e '.target.cpu == "x86-64-v3"' "$TMP/mb.json" >/dev/null || fail "v3 manifest: $(head -c 300 "$TMP/mb.json")"
  # cuda: fp32 and tf32 of one target (NVRTC builds them without a device)
  expect_status 200 "$BASE/targets"
  if jq -e '.targets[] | select(.framework == "cuda") | .available' "$TMP/body" >/dev/null; then
    C="/models/cuda/$NET/1"
    expect_status 200 "$BASE$C?target=sm_80&wait=300"
    expect_status 200 "$BASE$C?target=sm_80&precision=tf32&wait=300"
    for id in $(curl -fsS "$BASE/jobs" | jq -r '.jobs[] | select(.state != "succeeded") | .id'); do
      wait_job "$id" succeeded 120
    done
    keys_apart "$C" "target=sm_80&precision=fp32" "target=sm_80&precision=tf32"
    jq -e '.precision == "tf32"' "$TMP/mb.json" >/dev/null || fail "tf32 manifest: $(head -c 300 "$TMP/mb.json")"
  else
    echo "cuda is not built in: the precision pair is not checked here"
  fi
  echo "PASS share.manifest_keys"
  ;;
anon_queue)
  echo "$TOKEN" >"$TMP/token"
  # one worker: the misses stay live (the first tunes, the rest wait in the queue) while the test runs
  start_daemon --token-file "$TMP/token" --on-miss tune --workers 1 --max-queued 6 --anon-jobs-per-ip 2 \
    --anon-queue-share 50
  ok=0 refused=0
  for b in $(seq 1 10); do
    code=$(curl -sS -o "$TMP/body" -D "$TMP/headers" -w '%{http_code}' -H 'Prefer: respond-async' \
      "$BASE/models/llvm/$NET/$b") || true
    case "$code" in
      202) ok=$((ok + 1)) ;;
      429)
        refused=$((refused + 1))
        [[ -n "$(header Retry-After)" ]] || fail "429 without Retry-After"
        grep -q -- '--anon-jobs-per-ip' "$TMP/body" || fail "miss $b refused without naming the limit: $(cat "$TMP/body")"
        ;;
      *) fail "miss on batch $b -> $code: $(head -c 300 "$TMP/body")" ;;
    esac
  done
  echo "flood of 10 anonymous misses from 127.0.0.1: $ok queued, $refused refused"
  # the token holder's tune is accepted meanwhile (with the flood filling the queue it got 429 queue_full)
  expect_status 202 -X POST "${auth[@]}" -d '{}' "$BASE/models/llvm/$NET/20/tune"
  [[ $ok == 2 && $refused == 8 ]] || fail "want 2 misses queued and 8 refused at --anon-jobs-per-ip 2"
  # another address: the anonymous share (50% of 6 = 3 live jobs) holds one more, then refuses
  expect_status 202 --interface 127.0.0.2 -H 'Prefer: respond-async' "$BASE/models/llvm/$NET/11"
  expect_status 429 --interface 127.0.0.2 -H 'Prefer: respond-async' "$BASE/models/llvm/$NET/12"
  body_has '"code":"rate_limited"'
  body_has 'anon-queue-share'
  [[ "$(header Retry-After)" =~ ^[0-9]+$ ]] || fail "Retry-After '$(header Retry-After)'"
  # a miss on a key already live costs nothing; token holders still queue
  expect_status 202 -H 'Prefer: respond-async' "$BASE/models/llvm/$NET/2"
  expect_status 202 -X POST "${auth[@]}" -d '{}' "$BASE/models/llvm/$NET/21/tune"
  [[ "$(njobs)" == 5 ]] || fail "want 5 jobs (3 anonymous, 2 with the token), got $(njobs)"
  echo "PASS share.anon_queue"
  ;;
waits)
  start_daemon --on-miss tune --workers 1 --max-waits-per-ip 2
  # the one worker tunes batch 1; batch 2 stays queued behind it, so its waits run to their deadline
  expect_status 202 -H 'Prefer: respond-async' "$BASE$M"
  for _ in 1 2; do curl -s -o /dev/null --max-time 60 "$BASE/models/llvm/$NET/2?wait=40" & done
  for _ in $(seq 1 50); do
    [[ "$(curl -fsS "$BASE/jobs" | jq .count)" == 2 ]] && break
    sleep 0.1
  done
  sleep 1 # both waits suspended
  t0=$(date +%s.%N)
  expect_status 429 --max-time 10 "$BASE/models/llvm/$NET/3?wait=40"
  t=$(echo "$(date +%s.%N) - $t0" | bc)
  body_has '"code":"too_many_waits"'
  body_has 'max-waits-per-ip'
  [[ -n "$(header Retry-After)" ]] || fail "429 without Retry-After"
  [[ "$(njobs)" == 2 ]] || fail "the refused wait queued a job: $(njobs) jobs"
  # another address waits, and is answered at its deadline though nothing happened to its job
  t0=$(date +%s.%N)
  expect_status 503 --max-time 20 --interface 127.0.0.2 "$BASE/models/llvm/$NET/2?wait=2"
  d=$(echo "$(date +%s.%N) - $t0" | bc)
  body_has '"code":"building"'
  echo "the third wait from one address was refused in ${t}s; a 2 s wait from another ended after ${d}s"
  (($(echo "$d >= 1.9 && $d < 4" | bc))) || fail "a 2 s wait ended after ${d}s"
  echo "PASS share.waits"
  ;;
sse)
  echo "$TOKEN" >"$TMP/token"
  start_daemon --token-file "$TMP/token" --workers 1 --on-miss tune --max-streams 200 --max-streams-per-ip 200
  # 70 jobs: more than the 64 event rings; one runs, the rest stay queued
  for b in $(seq 1 70); do
    code=$(curl -sS -o /dev/null -w '%{http_code}' -X POST "${auth[@]}" -d '{}' "$BASE/models/llvm/$NET/$b/tune")
    [[ "$code" == 202 ]] || fail "tune of batch $b -> $code"
  done
  # a token holder follows job 70
  curl -sN "${auth[@]}" "$BASE/jobs/70/events" >"$TMP/follow" 2>&1 &
  follower=$!
  for _ in $(seq 1 50); do grep -q '^event: progress' "$TMP/follow" && break; sleep 0.1; done
  grep -q '^event: progress' "$TMP/follow" || fail "the followed stream sent nothing: $(head -c 300 "$TMP/follow")"
  # an anonymous client opens streams on the 69 other jobs and holds them
  /usr/bin/python3 - "$PORT" >"$TMP/anon" <<'PY' &
import socket, sys, time
port, socks, codes = int(sys.argv[1]), [], {}
for job in range(1, 70):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /jobs/%d/events HTTP/1.1\r\nHost: x\r\n\r\n" % job)
    line = b""
    while not line.endswith(b"\r\n"):
        line += s.recv(1)
    code = line.split()[1].decode()
    codes[code] = codes.get(code, 0) + 1
    socks.append(s)
print(" ".join("%s=%d" % kv for kv in sorted(codes.items())), flush=True)
time.sleep(20)
PY
  anon=$!
  for _ in $(seq 1 100); do [[ -s "$TMP/anon" ]] && break; sleep 0.1; done
  sleep 1
  echo "69 anonymous streams: $(cat "$TMP/anon") (by HTTP status)"
  kill -0 "$follower" 2>/dev/null || fail "the stream the token holder follows ended: $(tail -c 300 "$TMP/follow")"
  grep -q '200=' "$TMP/anon" || fail "no anonymous stream was accepted: $(cat "$TMP/anon")"
  n200=$(sed -n 's/.*200=\([0-9]*\).*/\1/p' "$TMP/anon")
  ((n200 <= 33)) || fail "$n200 anonymous streams were accepted; they may follow 32 rings alone"
  # the token holder still finds a ring for another job
  expect_status 200 --max-time 2 "${auth[@]}" "$BASE/jobs/1/events"
  kill "$anon" "$follower" 2>/dev/null || true
  echo "PASS share.sse"
  ;;
*) fail "unknown case $CASE" ;;
esac
