#!/usr/bin/env bash
# Serving benchmark (issue 22), everything on 127.0.0.1 against a daemon this script starts (--on-miss build, a
# temp data dir or --data DIR):
#   1. downloads: the --network bundle (resnet-18, about 47 MB) fetched by curl from tunehub and the same file
#      from Python's http.server (python3 -m http.server, a plain threaded server) and read by cat, in ROUNDS
#      interleaved rounds; medians in MB/s and the median of the per-round ratios;
#   2. single routes (wrk, 10 s each): a manifest and /healthz at 1 and 200 connections;
#   3. a mixed load (wrk, 200 connections, DURATION s): manifests, /versions, bundle downloads of the small
#      --hit-network, misses on three keys being built, with 20 SSE streams (curl -N) following those builds;
#      per-status counts, p50/p99, and the daemon's RSS before and after (VmRSS, VmHWM);
#   4. a fixed rate (RATE req/s of manifests over 200 connections, 30 s, wrk with a per-connection delay): the
#      achieved rate and p50/p99, so that p99 is not connections divided by throughput;
#   5. slow headers: slowhttptest's Slowloris, 1200 connections for 30 s from 127.0.0.1, while another client
#      address (127.0.0.2) asks /healthz 5 times a second: how often it was served, and how fast.
# Usage: scripts/bench/serve.sh [--network NAME] [--hit-network NAME] [--data DIR] [--duration S] [--rate N]
#        [--rounds N] [--skip-load]
set -euo pipefail
cd "$(dirname "$0")/../.."
NET=resnet-18
HIT=squeezenet_v1.1
DATA=""
DURATION=60
RATE=5000
ROUNDS=7
LOAD=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --network) NET=$2; shift 2 ;;
    --hit-network) HIT=$2; shift 2 ;;
    --data) DATA=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --skip-load) LOAD=0; shift ;;
    *) echo "unknown flag $1; valid: --network NAME --hit-network NAME --data DIR --duration S --rate N" \
         "--rounds N --skip-load" >&2; exit 2 ;;
  esac
done
for tool in wrk slowhttptest curl jq; do
  command -v "$tool" >/dev/null || { echo "$tool is missing: scripts/deps.sh --test installs it" >&2; exit 1; }
done
PY=/usr/bin/python3
TUNEHUB=build/server/tunehub
[[ -x $TUNEHUB ]] || scripts/build.sh
TMP=$(mktemp -d)
[[ -n "$DATA" ]] || DATA="$TMP/data"
free_port() { $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PORT=$(free_port)
BASE="http://127.0.0.1:$PORT"
ulimit -n 8192 2>/dev/null || true
"$TUNEHUB" serve --listen "127.0.0.1:$PORT" --data "$DATA" --on-miss build --log-level warn >"$TMP/daemon.log" 2>&1 &
PID=$!
PYPID=""
trap 'kill $PID $PYPID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 1 100); do curl -fs "$BASE/healthz" >/dev/null && break; sleep 0.1; done
rss() { awk '/^VmRSS/ {r=$2} /^VmHWM/ {h=$2} END {printf "RSS %.0f MB (peak %.0f MB)", r/1024, h/1024}' "/proc/$PID/status"; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
to_ms() { awk '{v=$1; if (v ~ /us$/) {sub(/us/,"",v); v/=1000} else if (v ~ /ms$/) {sub(/ms/,"",v)}
                else if (v ~ /s$/) {sub(/s/,"",v); v*=1000}; printf "%.3f", v}'; }
wrk_line() { # wrk output -> "req/s p50_ms p99_ms"
  local rps p50 p99
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$1")
  p50=$(awk '$1=="50%" {print $2}' <<<"$1" | to_ms)
  p99=$(awk '$1=="99%" {print $2}' <<<"$1" | to_ms)
  echo "$rps $p50 $p99"
}

echo "machine: $(nproc) cores, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo); the clients and the daemon share them"
for net in "$NET" "$HIT"; do
  t0=$SECONDS
  until curl -fsS -o "$TMP/$net.tar" "$BASE/models/llvm/$net/1?wait=600"; do sleep 1; done
  echo "$net batch 1: ready after $((SECONDS - t0)) s, bundle $(stat -c %s "$TMP/$net.tar") bytes"
done
echo "daemon after the builds: $(rss)"

# ---- 1. downloads ----
DIGEST=$(sha256sum "$TMP/$NET.tar" | cut -d' ' -f1)
FILE="$DATA/artifacts/${DIGEST:0:2}/$DIGEST"
[[ -f $FILE ]] || { echo "the bundle's blob is not at $FILE" >&2; exit 1; }
SIZE=$(stat -c %s "$FILE")
PYPORT=$(free_port)
$PY -m http.server "$PYPORT" --bind 127.0.0.1 --directory "$(dirname "$FILE")" >"$TMP/pyhttp.log" 2>&1 &
PYPID=$!
for _ in $(seq 1 100); do curl -fs -o /dev/null "http://127.0.0.1:$PYPORT/" && break; sleep 0.1; done
TH_URL="$BASE/models/llvm/$NET/1"
PY_URL="http://127.0.0.1:$PYPORT/$DIGEST"
curl -fsS -o /dev/null "$TH_URL"; curl -fsS -o /dev/null "$PY_URL" # warm both
mbps() { awk -v n="$SIZE" -v t="$1" 'BEGIN{printf "%.0f", n/t/1e6}'; }
th=(); py=(); ca=(); ratio=()
for r in $(seq 1 "$ROUNDS"); do
  # each system three times a round, its fastest kept: the round's figure
  a=$(for _ in 1 2 3; do curl -fsS -o /dev/null -w '%{time_total}\n' "$TH_URL"; done | sort -g | head -1)
  b=$(for _ in 1 2 3; do curl -fsS -o /dev/null -w '%{time_total}\n' "$PY_URL"; done | sort -g | head -1)
  c=$(for _ in 1 2 3; do s=$(date +%s.%N); cat "$FILE" >/dev/null; e=$(date +%s.%N)
        awk -v a="$e" -v b="$s" 'BEGIN{printf "%.6f\n", a-b}'; done | sort -g | head -1)
  th+=("$(mbps "$a")"); py+=("$(mbps "$b")"); ca+=("$(mbps "$c")")
  ratio+=("$(awk -v a="$a" -v b="$b" 'BEGIN{printf "%.3f", b/a}')")
done
echo
echo "== downloads: $SIZE bytes, $ROUNDS interleaved rounds (best of 3 per system per round), page cache warm"
printf '  %-34s median %6s MB/s   rounds: %s\n' "tunehub GET /models/llvm/$NET/1" \
  "$(printf '%s\n' "${th[@]}" | median)" "${th[*]}"
printf '  %-34s median %6s MB/s   rounds: %s\n' "python3 -m http.server (same file)" \
  "$(printf '%s\n' "${py[@]}" | median)" "${py[*]}"
printf '  %-34s median %6s MB/s\n' "cat file > /dev/null" "$(printf '%s\n' "${ca[@]}" | median)"
echo "  tunehub/http.server speed, median of per-round ratios: $(printf '%s\n' "${ratio[@]}" | median) (rounds: ${ratio[*]})"
kill "$PYPID" 2>/dev/null; wait "$PYPID" 2>/dev/null || true
PYPID=""
[[ $LOAD == 1 ]] || exit 0

# ---- 2. single routes ----
echo
echo "== single routes (wrk, 10 s each)"
printf '  %-30s %6s %10s %9s %9s\n' route conns req/s p50_ms p99_ms
for path in "/models/llvm/$NET/1/manifest" /healthz; do
  for c in 1 200; do
    out=$(wrk -t$((c < 2 ? 1 : 2)) -c$c -d10s --latency "$BASE$path" 2>&1)
    read -r rps p50 p99 <<<"$(wrk_line "$out")"
    non2xx=$(awk '/Non-2xx/ {print $4}' <<<"$out")
    printf '  %-30s %6d %10s %9s %9s %s\n' "${path:0:30}" "$c" "$rps" "$p50" "$p99" "${non2xx:+non-2xx: $non2xx}"
  done
done

# ---- 3. mixed load ----
# three misses (batches 2..4 of the hit network: built while the load runs), followed by 20 SSE streams
ids=()
for b in 2 3 4; do
  id=$(curl -sS -H 'Prefer: respond-async' "$BASE/models/llvm/$HIT/$b" | jq -r '.job.id // empty')
  [[ -n $id ]] && ids+=("$id")
done
for i in $(seq 0 19); do
  [[ ${#ids[@]} -gt 0 ]] || break
  curl -sS -N --max-time $((DURATION + 30)) "$BASE/jobs/${ids[$((i % ${#ids[@]}))]}/events" >"$TMP/sse.$i" 2>/dev/null &
done
cat >"$TMP/mix.lua" <<LUA
-- one request in 20: a bundle download; 2: a miss on a key being built; 3: /versions; the rest: manifests
local paths = {}
for i = 1, 14 do paths[#paths + 1] = "/models/llvm/$NET/1/manifest" end
for i = 1, 3 do paths[#paths + 1] = "/models/llvm/$NET/1/versions" end
paths[#paths + 1] = "/models/llvm/$HIT/1"
paths[#paths + 1] = "/models/llvm/$HIT/2"
paths[#paths + 1] = "/models/llvm/$HIT/3"
local n = 0
codes = {} -- a global, so that done() can read each thread's
local threads = {}
function setup(thread) table.insert(threads, thread) end
function request()
  n = n + 1
  return wrk.format("GET", paths[(n % #paths) + 1])
end
function response(status, headers, body)
  local k = "c" .. status
  codes[k] = (codes[k] or 0) + 1
end
function done(summary, latency, requests)
  local all = {}
  for _, t in ipairs(threads) do
    local c = t:get("codes")
    for k, v in pairs(c) do all[k] = (all[k] or 0) + v end
  end
  local out = {}
  for k, v in pairs(all) do out[#out + 1] = string.sub(k, 2) .. ":" .. v end
  table.sort(out)
  io.write("status counts: " .. table.concat(out, " ") .. "\n")
end
LUA
before=$(rss)
out=$(wrk -t2 -c200 -d"${DURATION}s" --latency -s "$TMP/mix.lua" "$BASE" 2>&1)
after=$(rss)
wait_sse=0
for i in $(seq 0 19); do [[ -f $TMP/sse.$i ]] && wait_sse=1; done
[[ $wait_sse == 1 ]] && sleep 1
read -r rps p50 p99 <<<"$(wrk_line "$out")"
echo
echo "== mixed load: wrk 200 connections, $DURATION s (14/20 manifests, 3/20 /versions, 1/20 $HIT bundle downloads," \
  "2/20 misses on keys being built)"
echo "  $rps req/s, p50 $p50 ms, p99 $p99 ms; $(grep -E 'status counts' <<<"$out")"
grep -E "Socket errors|timeout" <<<"$out" | sed 's/^/  /' || true
events=0 streams=0
for f in "$TMP"/sse.*; do
  [[ -f $f ]] || continue
  streams=$((streams + 1))
  events=$((events + $(grep -c '^event:' "$f" || true)))
done
echo "  SSE: $streams streams on ${#ids[@]} jobs got $events events"
echo "  daemon before: $before; after: $after"
pkill -f "$BASE/jobs/" 2>/dev/null || true

# ---- 4. fixed rate ----
cat >"$TMP/rate.lua" <<LUA
-- each of the connections waits its share of the interval before each request: RATE req/s in all
local gap_ms = 1000.0 * 200 / $RATE
function delay() return gap_ms end
LUA
out=$(wrk -t2 -c200 -d30s --latency -s "$TMP/rate.lua" "$BASE/models/llvm/$NET/1/manifest" 2>&1)
read -r rps p50 p99 <<<"$(wrk_line "$out")"
echo
echo "== fixed rate: $RATE req/s of manifests asked over 200 connections, 30 s"
echo "  achieved $rps req/s, p50 $p50 ms, p99 $p99 ms (latency from each request's send)"

# ---- 5. slow headers ----
slowhttptest -H -c 1200 -r 600 -i 3 -x 16 -l 30 -p 3 -u "$BASE/healthz" >"$TMP/slow.out" 2>&1 &
SLOW=$!
sleep 4
lat=()
ok=0 tries=0
end=$((SECONDS + 20))
while ((SECONDS < end)); do
  tries=$((tries + 1))
  if t=$(curl -fsS -o /dev/null -w '%{time_total}' --interface 127.0.0.2 --max-time 3 "$BASE/healthz"); then
    ok=$((ok + 1))
    lat+=("$(awk -v t="$t" 'BEGIN{printf "%.2f", t * 1000}')")
  fi
  sleep 0.2
done
held=$(ss -Htn state established "( sport = :$PORT )" | wc -l)
kill "$SLOW" 2>/dev/null || true
wait "$SLOW" 2>/dev/null || true
echo
echo "== slow headers: slowhttptest -H, 1200 connections from 127.0.0.1 for 30 s"
echo "  the daemon held $held connections at the end (per-address cap 256); 127.0.0.2 asked /healthz $tries times:" \
  "served $ok, median $(printf '%s\n' "${lat[@]:-0}" | median) ms, slowest $(printf '%s\n' "${lat[@]:-0}" | sort -g | tail -1) ms"
echo "  daemon: $(rss)"
