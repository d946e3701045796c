#!/usr/bin/env bash
# Runs one test case against PostgreSQL: attaches to the fixture's server (TH_PG_FIXTURE, the state file of
# pg_fixture.sh), gives the case a fresh database of its own, and runs the command with TH_TEST_DB set to that
# database's URL (PG_DB names it, for pg_psql). Usage: pg_case.sh DBNAME COMMAND [ARGS...]. Exits 77 (skipped)
# when PostgreSQL 15 is not installed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/pg.sh"
db=$1
shift
if [[ ! -x "$PG_BIN/initdb" ]]; then
  echo "SKIP: PostgreSQL 15 is not installed ($PG_BIN/initdb); scripts/deps.sh --test installs postgresql-15"
  exit 77
fi
pg_attach "${TH_PG_FIXTURE:?TH_PG_FIXTURE names the fixture state file}"
TH_TEST_DB=$(pg_fresh_db "$db")
PG_DB=$db
export TH_TEST_DB PG_DB
exec "$@"
