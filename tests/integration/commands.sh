#!/usr/bin/env bash
# Integration test of the subcommand table (server/main.c, issue 37): `tunehub help`, the "unknown
# command" list and the dispatch are made from one table, so they name the same commands; the
# internal worker commands are in neither list; the other spellings (--version, --help, -h) reach
# their command. Usage: commands.sh CASE.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
CASE=${1:?usage: commands.sh table}

case_table() {
  "$TUNEHUB" help >"$TMP/help" || fail "tunehub help exited $?"
  local listed valid
  listed=$(sed -n 's/^  tunehub \([a-z][a-z-]*\).*/\1/p' "$TMP/help" | sort -u | tr '\n' ' ')
  expect_fail 2 "unknown command 'bogus'; valid commands: " "$TUNEHUB" bogus
  valid=$(sed -n 's/.*valid commands: //p' "$TMP/err" | tr -d ' ' | tr ',' '\n' | grep -vx help | sort -u |
    tr '\n' ' ')
  [[ -n $listed && $listed == "$valid" ]] ||
    fail "tunehub help lists '$listed' but the unknown-command error names '$valid'"
  grep -q 'valid commands: .*help' "$TMP/err" || fail "the unknown-command list lacks help: $(cat "$TMP/err")"
  grep -q 'worker-\|measure-worker\|build-worker' <<<"$listed $(cat "$TMP/err")" &&
    fail "an internal command is listed: $listed / $(cat "$TMP/err")"
  # every listed command dispatches to its handler: its own usage, exit 0
  local c
  for c in $listed; do
    "$TUNEHUB" "$c" --help >"$TMP/out" 2>&1 || fail "tunehub $c --help exited $?"
    grep -q "tunehub $c" "$TMP/out" || fail "tunehub $c --help: $(head -c 200 "$TMP/out")"
  done
  # the other spellings, and no command at all: the help on stderr, exit 2
  for c in --help -h; do
    "$TUNEHUB" "$c" | cmp -s - "$TMP/help" || fail "tunehub $c does not print the help"
  done
  [[ $("$TUNEHUB" --version) == "$("$TUNEHUB" version)" && $("$TUNEHUB" version) == "tunehub "* ]] ||
    fail "tunehub --version: $("$TUNEHUB" --version)"
  local rc=0
  "$TUNEHUB" >"$TMP/out" 2>"$TMP/err" || rc=$?
  [[ $rc == 2 ]] && cmp -s "$TMP/err" "$TMP/help" || fail "tunehub without a command: exit $rc"
  echo "PASS commands.table ($(wc -w <<<"$listed") commands)"
}

"case_$CASE"
