#!/usr/bin/env bash
# Serving benchmark: requests/s and p99 (wrk) for a cache-hit manifest and for /healthz at 1 and 200
# connections, and artifact download throughput of a published bundle against `cat file > /dev/null` of the
# same file, in the same run. Starts its own daemon on a free port with a temp data dir (or --data DIR to
# reuse one that already has the model). Usage: scripts/bench/serve.sh [--network resnet-18] [--data DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
NET=resnet-18
DATA=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --network) NET=$2; shift 2 ;;
    --data) DATA=$2; shift 2 ;;
    *) echo "unknown flag $1; valid: --network NAME --data DIR" >&2; exit 2 ;;
  esac
done
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 1; }
TUNEHUB=build/server/tunehub
[[ -x $TUNEHUB ]] || scripts/build.sh
TMP=$(mktemp -d)
[[ -n "$DATA" ]] || DATA="$TMP/data"
PORT=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
BASE="http://127.0.0.1:$PORT"
"$TUNEHUB" serve --listen "127.0.0.1:$PORT" --data "$DATA" --log-level warn >"$TMP/daemon.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 1 100); do curl -fs "$BASE/healthz" >/dev/null && break; sleep 0.1; done
M="$BASE/models/llvm/$NET/1"
echo "== building $NET (if not cached) =="
t0=$(date +%s.%N)
until curl -fsS -o "$TMP/model.tar" "$M?wait=600"; do sleep 1; done
echo "ready after $(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN{printf "%.1f", a-b}') s; bundle $(stat -c %s "$TMP/model.tar") bytes"
echo
echo "machine: $(nproc) cores; wrk and the daemon share them"
printf '%-28s %6s %12s %10s %10s\n' route conns req/s p50_ms p99_ms
for path in "/models/llvm/$NET/1/manifest" /healthz; do
  for c in 1 200; do
    t=$(( c < 2 ? 1 : 2 ))
    out=$(wrk -t$t -c$c -d10s --latency "$BASE$path" 2>&1)
    rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
    to_ms() { awk '{v=$1; if (v ~ /us$/) {sub(/us/,"",v); v/=1000} else if (v ~ /ms$/) {sub(/ms/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v*=1000}; printf "%.3f", v}'; }
    p50=$(awk '$1=="50%" {print $2}' <<<"$out" | to_ms)
    p99=$(awk '$1=="99%" {print $2}' <<<"$out" | to_ms)
    non2xx=$(awk '/Non-2xx/ {print $4}' <<<"$out")
    printf '%-28s %6d %12s %10s %10s %s\n' "${path:0:28}" "$c" "$rps" "$p50" "$p99" "${non2xx:+non-2xx: $non2xx}"
  done
done
echo
DIGEST=$(sha256sum "$TMP/model.tar" | cut -d' ' -f1)
FILE="$DATA/artifacts/${DIGEST:0:2}/$DIGEST"
SIZE=$(stat -c %s "$FILE")
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
http=(); plain=()
for i in $(seq 1 7); do
  http+=("$(curl -fsS -o /dev/null -w '%{time_total}' "$M")")
  s=$(date +%s.%N); cat "$FILE" >/dev/null; e=$(date +%s.%N)
  plain+=("$(awk -v a="$e" -v b="$s" 'BEGIN{printf "%.6f", a-b}')")
done
th=$(printf '%s\n' "${http[@]}" | median)
tp=$(printf '%s\n' "${plain[@]}" | median)
mbps() { awk -v n="$SIZE" -v t="$1" 'BEGIN{printf "%.1f", n/t/1e6}'; }
echo "artifact throughput ($SIZE bytes, median of 7, page cache warm):"
printf '  GET %-40s %8s MB/s\n' "/models/llvm/$NET/1" "$(mbps "$th")"
printf '  cat file > /dev/null %22s %8s MB/s\n' "" "$(mbps "$tp")"
echo "  ratio http/cat: $(awk -v a="$tp" -v b="$th" 'BEGIN{printf "%.2f", a/b}')"
