#!/usr/bin/env bash
# A private PostgreSQL 15 for one test: Debian's server binaries, a cluster made with initdb in a temporary
# directory, listening only on a Unix socket in that directory (no TCP port to collide with), stopped by pg_stop.
# Source it, then:
#   pg_start DIR      makes DIR/pgdata and starts the server; sets PG_URL (postgresql://...; database tunehub)
#   pg_url NAME       prints the URL of database NAME, creating it when missing (one database per test case)
#   pg_stop           stops the server (fast shutdown) and leaves DIR for the test to remove
#   pg_restart        stops and starts it again on the same data (the "database goes away" fault)
#   pg_up             starts it again on the same data after pg_stop (a longer outage: pg_stop, ..., pg_up)
#   pg_psql SQL       runs SQL in database $PG_DB (default tunehub) and prints the rows (unaligned, no header)
#   pg_attach FILE    uses the server a fixture started (tests/cluster/pg_fixture.sh wrote its directory to FILE)
#   pg_fresh_db NAME  drops database NAME if it exists, creates it empty and prints its URL
#   pg_copy_db FROM NAME  the same, with NAME a copy of database FROM (which nobody may be connected to)
# A started server is guarded: should the process that started it (PG_GUARD_PID, default the calling shell) die
# without pg_stop (ctest's kill -9 at a timeout), a watcher stops the server, so no postgres outlives its test.
# Needs postgresql-15 (scripts/deps.sh --test installs it). Run as root, the server runs as the `postgres` user,
# which Debian's package creates (PostgreSQL refuses to run as root); otherwise as the calling user.
# A test that cannot start PostgreSQL exits 77 (ctest: skipped) only when the binaries are missing; any other
# failure to start is a failure.

PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}

# Runs a command as the user who owns the cluster.
pg__as() {
  if [[ $(id -u) -eq 0 ]]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

pg_start() {
  local dir=$1
  if [[ ! -x "$PG_BIN/initdb" ]]; then
    echo "SKIP: PostgreSQL 15 is not installed ($PG_BIN/initdb); scripts/deps.sh --test installs postgresql-15" >&2
    exit 77
  fi
  PG_DIR=$(cd "$dir" && pwd)/pg
  mkdir -p "$PG_DIR"
  [[ $(id -u) -eq 0 ]] && chown postgres: "$PG_DIR" && chmod 755 "$dir"
  pg__as "$PG_BIN/initdb" -D "$PG_DIR/data" -U postgres -A trust --no-sync -E UTF8 >"$PG_DIR/initdb.log" 2>&1 ||
    { cat "$PG_DIR/initdb.log" >&2; echo "FAIL: initdb" >&2; return 1; }
  PG_SOCK=$PG_DIR
  pg__start_server || return 1
  pg__guard "${PG_GUARD_PID:-$$}"
  pg__as "$PG_BIN/createdb" -h "$PG_SOCK" -U postgres tunehub || { echo "FAIL: createdb" >&2; return 1; }
  PG_URL=$(pg_url_of tunehub)
  export PG_URL PG_DIR PG_SOCK
}

pg__start_server() {
  # fsync off: a test's cluster is thrown away; the durability under test is tunehub's, not the disk's
  pg__as "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 \
    -o "-c listen_addresses='' -k $PG_SOCK -c fsync=off -c full_page_writes=off -c max_connections=200" start \
    >/dev/null || { tail -20 "$PG_DIR/server.log" >&2; echo "FAIL: pg_ctl start" >&2; return 1; }
}

# Stops the server once process $1 is gone, unless pg_stop came first (it removes $PG_DIR/guard). The watcher's
# output goes nowhere: ctest waits for every holder of a test's stdout to close it.
pg__guard() {
  local pid=$1 dir=$PG_DIR
  touch "$dir/guard"
  (
    while [[ -e "$dir/guard" ]] && kill -0 "$pid" 2>/dev/null; do sleep 1; done
    kill -0 "$pid" 2>/dev/null || pg__as "$PG_BIN/pg_ctl" -D "$dir/data" -m immediate -w -t 30 stop
  ) </dev/null >/dev/null 2>&1 &
  disown
}

# The URL of database $1 on the test server (libpq URI: host is the socket directory).
pg_url_of() {
  echo "postgresql://postgres@/$1?host=$PG_SOCK"
}

pg_url() {
  local name=$1
  if ! pg__as "$PG_BIN/psql" -h "$PG_SOCK" -U postgres -d postgres -Atc \
      "SELECT 1 FROM pg_database WHERE datname = '$name'" | grep -q 1; then
    pg__as "$PG_BIN/createdb" -h "$PG_SOCK" -U postgres "$name" || return 1
  fi
  pg_url_of "$name"
}

pg_psql() {
  pg__as "$PG_BIN/psql" -h "$PG_SOCK" -U postgres -d "${PG_DB:-tunehub}" -v ON_ERROR_STOP=1 -Atc "$1"
}

pg_stop() {
  [[ -n "${PG_DIR:-}" && -d "$PG_DIR/data" ]] || return 0
  rm -f "$PG_DIR/guard"
  pg__as "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m fast -w -t 60 stop >/dev/null 2>&1 || true
}

pg_up() {
  pg__start_server || return 1
  pg__guard "${PG_GUARD_PID:-$$}"
}

pg_restart() {
  pg__as "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m fast -w -t 60 stop >/dev/null || return 1
  pg__start_server
}

pg_attach() {
  local file=$1
  [[ -s "$file" ]] || { echo "FAIL: no PostgreSQL fixture ($file is missing): run the test through ctest" >&2; return 1; }
  PG_DIR=$(cat "$file")
  PG_SOCK=$PG_DIR
  [[ -S "$PG_SOCK/.s.PGSQL.5432" ]] || { echo "FAIL: the fixture's server in $PG_DIR is not running" >&2; return 1; }
  PG_URL=$(pg_url_of tunehub)
  export PG_URL PG_DIR PG_SOCK
}

pg_fresh_db() {
  pg_copy_db template1 "$1"
}

pg_copy_db() {
  local from=$1 name=$2
  PGOPTIONS="-c client_min_messages=warning" pg__as "$PG_BIN/dropdb" -h "$PG_SOCK" -U postgres --if-exists --force \
    "$name" || return 1
  pg__as "$PG_BIN/createdb" -h "$PG_SOCK" -U postgres -T "$from" "$name" || return 1
  pg_url_of "$name"
}
