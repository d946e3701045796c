#!/usr/bin/env bash
# The ctest fixture behind the `cluster` twins of the store's unit tests and of the integration suite: one private
# PostgreSQL 15 for the whole ctest run, on a Unix socket in a temporary directory. Each case then gets a database
# of its own (pg_case.sh). Usage: pg_fixture.sh start|stop STATEFILE, where STATEFILE records the server's
# directory for the cases. start first stops a server that an interrupted run left behind; the server is guarded
# by the ctest process (pg.sh's pg__guard), so it never outlives the run. Without PostgreSQL's binaries start
# does nothing (the cases then exit 77, skipped).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/pg.sh"
action=$1
state=$2

stop_recorded() {
  [[ -s "$state" ]] || return 0
  PG_DIR=$(cat "$state")
  pg_stop
  rm -rf "$(dirname "$PG_DIR")" "$state"
}

case $action in
  start)
    stop_recorded
    [[ -x "$PG_BIN/initdb" ]] || { echo "PostgreSQL 15 is not installed; the cluster tests will be skipped"; exit 0; }
    dir=$(mktemp -d /tmp/th_pgfx_XXXXXX)
    PG_GUARD_PID=$PPID pg_start "$dir"
    mkdir -p "$(dirname "$state")"
    echo "$PG_DIR" >"$state"
    echo "PostgreSQL fixture: $PG_URL"
    ;;
  stop)
    stop_recorded
    ;;
  *)
    echo "usage: pg_fixture.sh start|stop STATEFILE" >&2
    exit 2
    ;;
esac
