#!/usr/bin/env bash
# Issue 24's store-level figures on a private PostgreSQL 15 (tests/cluster/pg.sh, fsync off as in the tests):
# claims per second with W worker processes on trivial jobs (claim with a lease + fenced finish), and the time
# from a job's enqueue to a worker's claim, with workers woken by NOTIFY and with workers that look once a second.
# usage: scripts/bench/cluster.sh [--workers 8] [--jobs 2000] [--latency-jobs 100] [--lease 30]
# (--lease 0 claims without a lease: run both to see what the lease costs)
# Run on an otherwise idle machine.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
cmake -S "$ROOT" -B "$BUILD" >/dev/null
make -C "$BUILD" th_store th_common -j2 >/dev/null
${CC:-cc} -std=c11 -D_GNU_SOURCE -O2 -I"$ROOT/common" -I"$ROOT/store" "$ROOT/scripts/bench/claims_bench.c" \
  "$BUILD/store/libth_store.a" "$BUILD/common/libth_common.a" -lsqlite3 -lpq -lpthread -lm -o "$BUILD/claims_bench"
source "$ROOT/tests/cluster/pg.sh"
TMP=$(mktemp -d /tmp/th_bench_pg_XXXXXX)
trap 'pg_stop; rm -rf "$TMP"' EXIT
pg_start "$TMP" >/dev/null
echo "PostgreSQL 15 on a Unix socket (fsync off); $(nproc) cores"
"$BUILD/claims_bench" "$PG_URL" "$@"
