# Helpers for integration tests: start the real daemon on 127.0.0.1 with a free port and a temp data dir,
# wait for it, stop it, and assert. Sourced by the case scripts; TUNEHUB is the binary under test.
# The store is the SQLite file in the data dir, or, when TH_TEST_DB names a PostgreSQL database (the cluster
# twins, run through tests/cluster/pg_case.sh), that database: the daemon gets --db, every other command finds
# it in TUNEHUB_DB, and the data dir is the local cache. store_sql queries whichever store is in use.
set -euo pipefail

TMP=$(mktemp -d /tmp/th_it_XXXXXX)
DATA="$TMP/data"
LOG="$TMP/daemon.log"
PID=""
PORT=""
DB_ARGS=()
PG_OWN=""
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/../cluster" && pwd)/pg.sh"
if [[ -n "${TH_TEST_DB:-}" ]]; then
  export TUNEHUB_DB=$TH_TEST_DB
  DB_ARGS=(--db "$TH_TEST_DB")
fi

# use_private_pg: the store becomes a database on a PostgreSQL server of this test's own, in $TMP, for faults
# that stop the server (pg_stop, pg_up, pg_restart); it is stopped when the test exits
use_private_pg() {
  pg_start "$TMP" >/dev/null || fail "cannot start PostgreSQL"
  PG_OWN=1
  TH_TEST_DB=$PG_URL
  PG_DB=tunehub
  export TH_TEST_DB PG_DB TUNEHUB_DB=$PG_URL
  DB_ARGS=(--db "$TH_TEST_DB")
}

# store_sql [-F SEP] [-S STORE] SQL: the rows of SQL, one a line, columns separated by SEP (default |), on the
# store in use or on STORE (what store_copy printed)
store_sql() {
  local sep="|" at=""
  while [[ "$1" == -F || "$1" == -S ]]; do
    [[ "$1" == -F ]] && sep=$2 || at=$2
    shift 2
  done
  [[ -n "$at" ]] || at=${TH_TEST_DB:-$DATA}
  if [[ "$at" == postgresql://* ]]; then
    pg__as "$PG_BIN/psql" "$at" -v ON_ERROR_STOP=1 -At -F "$sep" -c "$1"
  else
    sqlite3 -separator "$sep" "$at/tunehub.db" "$1"
  fi
}

# store_at STORE: sets AT to the flags that name STORE (what store_copy printed) to a command: --data DIR, or
# --db URL with a data dir of its own for the local cache
store_at() {
  if [[ "$1" == postgresql://* ]]; then
    AT=(--data "$TMP/cache_$(echo "$1" | sha256sum | cut -c1-8)" --db "$1")
  else
    AT=(--data "$1")
  fi
}

# store_copy DIR: copies the store in use for a second look (remeasure --against) and prints what names the copy:
# DIR, a copy of the data dir, or the URL of a copy of the database
store_copy() {
  if [[ -n "${TH_TEST_DB:-}" ]]; then
    pg_copy_db "$PG_DB" "${PG_DB}_copy"
  else
    cp -r "$DATA" "$1"
    echo "$1"
  fi
}

free_port() {
  /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

start_daemon() {
  [[ -n "$PORT" ]] || PORT=$(free_port)
  BASE="http://127.0.0.1:$PORT"
  "$TUNEHUB" serve --listen "127.0.0.1:$PORT" --data "$DATA" "${DB_ARGS[@]}" --on-miss build "$@" >>"$LOG" 2>&1 &
  PID=$!
  local engine=SQLite
  [[ -n "${TH_TEST_DB:-}" ]] && engine=PostgreSQL
  local arg
  for arg in "$@"; do [[ "$arg" == --db ]] && engine=PostgreSQL; done
  for _ in $(seq 1 100); do
    if curl -fsS "$BASE/healthz" >/dev/null 2>&1; then
      grep -q "store: $engine" "$LOG" || { cat "$LOG"; fail "the daemon did not open the $engine store"; }
      return 0
    fi
    kill -0 "$PID" 2>/dev/null || { cat "$LOG"; fail "daemon exited at start"; }
    sleep 0.1
  done
  cat "$LOG"
  fail "daemon did not answer /healthz"
}

stop_daemon() {
  if [[ -n "$PID" ]] && kill -0 "$PID" 2>/dev/null; then
    kill "$PID"
    wait "$PID" || true
  fi
  PID=""
}

cleanup() {
  local rc=$?
  stop_daemon
  [[ -z "$PG_OWN" ]] || pg_stop
  if [[ $rc -ne 0 ]]; then
    echo "--- daemon log ---"
    tail -n 60 "$LOG" 2>/dev/null || true
  fi
  rm -rf "$TMP"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# expect_status CODE curl-args...: runs curl and checks the HTTP status; the body is in $TMP/body,
# the headers in $TMP/headers.
expect_status() {
  local want=$1
  shift
  local got
  got=$(curl -sS -o "$TMP/body" -D "$TMP/headers" -w '%{http_code}' "$@") || true
  if [[ "$got" != "$want" ]]; then
    echo "body: $(head -c 600 "$TMP/body")"
    fail "curl $* -> $got, want $want"
  fi
}

# expect_fail CODE PATTERN cmd...: the command exits with CODE and says PATTERN on stderr
expect_fail() {
  local want=$1 pat=$2 got=0
  shift 2
  "$@" >"$TMP/out" 2>"$TMP/err" || got=$?
  [[ $got == "$want" ]] || fail "$* exited $got, not $want: $(head -c 400 "$TMP/err")"
  grep -q -- "$pat" "$TMP/err" || fail "$*: stderr lacks '$pat': $(head -c 400 "$TMP/err")"
}

header() {
  grep -i "^$1:" "$TMP/headers" | head -n1 | cut -d' ' -f2- | tr -d '\r'
}

body_has() {
  grep -q -- "$1" "$TMP/body" || { echo "body: $(head -c 600 "$TMP/body")"; fail "body lacks '$1'"; }
}

# jq_ok FILTER: the last body satisfies FILTER (jq -e)
jq_ok() {
  jq -e "$1" "$TMP/body" >/dev/null || { echo "body: $(head -c 1500 "$TMP/body")"; fail "jq: $1"; }
}

# wait_job ID STATE SECONDS: polls /jobs/ID until its state is STATE, at most SECONDS (the caller checks after)
wait_job() {
  for _ in $(seq 1 $(($3 * 10))); do
    [[ "$(curl -s "$BASE/jobs/$1")" == *"\"state\":\"$2\""* ]] && return 0
    sleep 0.1
  done
}

# wait_untuned_job ID TEXT: a tune job for a target this daemon cannot measure published its untuned build and says
# why in its progress (TEXT). On the embedded store it ends there (succeeded); on a shared store it goes back to
# the queue for a worker with that target (waiting_for_target).
wait_untuned_job() {
  local want=succeeded
  [[ -n "${TH_TEST_DB:-}" ]] && want=queued
  for _ in $(seq 1 200); do
    expect_status 200 "$BASE/jobs/$1"
    jq -e --arg s "$want" --arg t "$2" '.state == $s and (.progress.tuning // "" | test($t))' "$TMP/body" >/dev/null \
      && break
    sleep 0.1
  done
  jq -e --arg s "$want" --arg t "$2" '.state == $s and (.progress.tuning | test($t))' "$TMP/body" >/dev/null \
    || fail "job $1 is not $want with '$2': $(head -c 500 "$TMP/body")"
  [[ "$want" == succeeded ]] || jq -e '.stage == "waiting_for_target"' "$TMP/body" >/dev/null \
    || fail "job $1 does not wait for its target: $(head -c 500 "$TMP/body")"
}

# The reason a 501 gives for a target no one here measures: this daemon alone (embedded), or the fleet (shared).
not_tunable_text() {
  if [[ -n "${TH_TEST_DB:-}" ]]; then echo "no live worker measures"; else echo "measures only its own"; fi
}

# wait_ready PATH SECONDS: polls until PATH answers 200
wait_ready() {
  local path=$1 secs=$2
  for _ in $(seq 1 $((secs * 5))); do
    code=$(curl -s -o /dev/null -w '%{http_code}' "$BASE$path") || true
    [[ "$code" == 200 ]] && return 0
    sleep 0.2
  done
  fail "$path not ready after ${secs}s (last status $code)"
}
