#!/usr/bin/env bash
# Manifest and bundle requests per second and p99 from one replica against two, on one shared PostgreSQL 15
# (tests/cluster/pg.sh): replica A builds squeezenet_v1.1 batch 1, replica B serves it from its own cache; wrk
# then drives A alone (64 connections; and, as the control, from two wrk processes of 32 each) and A and B
# together (32 each, summed), in interleaved rounds.
# usage: scripts/bench/replicas.sh [ROUNDS] [SECONDS]
# On this 2-core machine wrk, both daemons and PostgreSQL share the cores: expect no gain, and read the figures
# as what a second replica costs, not as scaling.
set -euo pipefail
ROUNDS=${1:-3}
SECS=${2:-8}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
TUNEHUB=$BUILD/server/tunehub
command -v wrk >/dev/null || { echo "wrk is not installed (scripts/deps.sh --test)"; exit 1; }
source "$ROOT/tests/cluster/pg.sh"
TMP=$(mktemp -d /tmp/th_bench_rep_XXXXXX)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; pg_stop; rm -rf "$TMP"' EXIT
pg_start "$TMP" >/dev/null
port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PA=$(port)
PB=$(port)
"$TUNEHUB" serve --db "$PG_URL" --data "$TMP/a" --listen "127.0.0.1:$PA" --on-miss build >"$TMP/a.log" 2>&1 &
PIDS+=($!)
"$TUNEHUB" serve --db "$PG_URL" --data "$TMP/b" --listen "127.0.0.1:$PB" --workers 0 >"$TMP/b.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 100); do curl -fs -o /dev/null "127.0.0.1:$PB/healthz" && curl -fs -o /dev/null "127.0.0.1:$PA/healthz" && break; sleep 0.1; done
M=/models/llvm/squeezenet_v1.1/1
curl -fsS -o /dev/null "127.0.0.1:$PA$M?wait=300"
curl -fsS -o /dev/null "127.0.0.1:$PB$M" # fills B's cache from the database
SIZE=$(curl -fsS "127.0.0.1:$PA$M" | wc -c)
echo "PostgreSQL 15 (fsync off), $(nproc) cores; bundle $SIZE bytes; wrk -t1, ${SECS}s per run, $ROUNDS rounds"

# wrk_run URL CONNS: prints "RPS P99_MS"
wrk_run() {
  wrk -t1 -c"$2" -d"${SECS}s" --latency "$1" 2>/dev/null | awk '
    /Requests\/sec/ {rps=$2}
    /^ +99%/ {v=$2; if (v ~ /us$/) {sub(/us/,"",v); v/=1000} else if (v ~ /ms$/) {sub(/ms/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v*=1000}; p99=v}
    END {printf "%.0f %.2f\n", rps, p99}'
}
# wrk_pair URL1 URL2: two wrk processes of 32 connections at once; prints "RPS1 P99_1 RPS2 P99_2"
wrk_pair() {
  wrk_run "$1" 32 >"$TMP/w1" &
  local p1=$!
  wrk_run "$2" 32 >"$TMP/w2" &
  local p2=$!
  wait "$p1" "$p2"
  echo "$(cat "$TMP/w1") $(cat "$TMP/w2")"
}
for path in manifest bundle; do
  u=$M/manifest
  [[ $path == bundle ]] && u=$M
  for r in $(seq 1 "$ROUNDS"); do
    read -r one p1 < <(wrk_run "http://127.0.0.1:$PA$u" 64)
    # the control: one replica driven by two wrk processes, as the two replicas are below
    read -r x1 _ x2 _ < <(wrk_pair "http://127.0.0.1:$PA$u" "http://127.0.0.1:$PA$u")
    two_clients=$((x1 + x2))
    read -r ra pa rb pb < <(wrk_pair "http://127.0.0.1:$PA$u" "http://127.0.0.1:$PB$u")
    printf "%-8s round %d: one replica %6d req/s p99 %6.2f ms; with two wrk %6d | two replicas %6d req/s (A %d + B %d) p99 A %.2f B %.2f ms | two/one %.2f, two/one-with-two-wrk %.2f\n" \
      "$path" "$r" "$one" "$p1" "$two_clients" $((ra + rb)) "$ra" "$rb" "$pa" "$pb" \
      "$(echo "($ra + $rb) / $one" | bc -l)" "$(echo "($ra + $rb) / $two_clients" | bc -l)"
  done
done
