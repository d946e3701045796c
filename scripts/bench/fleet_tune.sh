#!/usr/bin/env bash
# Tuning three networks with one worker against two, on one shared PostgreSQL 15 (tests/cluster/pg.sh): a
# serving replica (--workers 0) queues a tune job for each network, and `tunehub worker` processes (one, then two,
# each with --slots 1) run them; the wall time from the first POST to the last job's end, in fresh databases,
# alternating the configurations for ROUNDS rounds.
# usage: scripts/bench/fleet_tune.sh [TRIALS per task, default 8] [ROUNDS, default 1]
# On this 2-core machine the two workers share the cores the one worker had: expect little gain.
set -euo pipefail
TRIALS=${1:-8}
ROUNDS=${2:-1}
NETS=(squeezenet_v1.1 mobilenet squeezenet_v1.0)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
TUNEHUB=$BUILD/server/tunehub
source "$ROOT/tests/cluster/pg.sh"
TMP=$(mktemp -d /tmp/th_bench_ft_XXXXXX)
PIDS=()
stop_all() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  PIDS=()
}
trap 'stop_all; pg_stop; rm -rf "$TMP"' EXIT
pg_start "$TMP" >/dev/null
echo "tok-fleet-bench" >"$TMP/token"
port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# run NWORKERS ROUND: prints the wall seconds
run() {
  local nw=$1 db url p
  db="ft_${nw}w_$2"
  url=$(pg_url "$db")
  p=$(port)
  "$TUNEHUB" serve --db "$url" --data "$TMP/d-$db" --listen "127.0.0.1:$p" --workers 0 \
    --token-file "$TMP/token" >"$TMP/$db.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 1 100); do curl -fs -o /dev/null "127.0.0.1:$p/healthz" && break; sleep 0.1; done
  for i in $(seq 1 "$nw"); do
    "$TUNEHUB" worker --db "$url" --data "$TMP/w$i-$db" --slots 1 --name "w$i" >"$TMP/w$i-$db.log" 2>&1 &
    PIDS+=($!)
  done
  sleep 1
  local t0 ids=()
  t0=$(date +%s.%N)
  for n in "${NETS[@]}"; do
    ids+=($(curl -fsS -X POST -H 'Authorization: Bearer tok-fleet-bench' -d "{\"trials\":$TRIALS}" \
      "127.0.0.1:$p/models/llvm/$n/1/tune" | jq -r .job.id))
  done
  for id in "${ids[@]}"; do
    for _ in $(seq 1 3600); do
      s=$(curl -fsS "127.0.0.1:$p/jobs/$id" | jq -r .state)
      [[ "$s" == succeeded || "$s" == failed || "$s" == cancelled ]] && break
      sleep 0.5
    done
    [[ "$s" == succeeded ]] || echo "job $id ended $s" >&2
  done
  echo "$(date +%s.%N) - $t0" | bc
  stop_all
}
echo "3 networks (${NETS[*]}), batch 1, $TRIALS trials per task; $(nproc) cores"
for r in $(seq 1 "$ROUNDS"); do
  one=$(run 1 "$r")
  two=$(run 2 "$r")
  printf "round %d: one worker %.1f s, two workers %.1f s, ratio two/one %.2f\n" "$r" "$one" "$two" \
    "$(echo "$two / $one" | bc -l)"
done
