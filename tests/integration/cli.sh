#!/usr/bin/env bash
# Integration tests of the command line against real stores (no daemon): `tunehub tune` into a temp data dir,
# then `tunehub remeasure` on it, alone and against a second store, and its errors on bad input.
# Usage: cli.sh CASE, with TUNEHUB set to the binary.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"

# expect_fail CODE PATTERN cmd...: the command exits with CODE and says PATTERN on stderr
expect_fail() {
  local want=$1 pat=$2 got=0
  shift 2
  "$@" >"$TMP/out" 2>"$TMP/err" || got=$?
  [[ $got == "$want" ]] || fail "$* exited $got, not $want: $(head -c 400 "$TMP/err")"
  grep -q -- "$pat" "$TMP/err" || fail "$*: stderr lacks '$pat': $(head -c 400 "$TMP/err")"
}

case_remeasure() {
  local net=squeezenet_v1.1
  # bad input first: nothing is created, nothing is timed
  expect_fail 2 "valid frameworks: llvm, cuda" "$TUNEHUB" remeasure tpu "$net" 1 --data "$DATA"
  expect_fail 2 "valid networks:.*resnet-18" "$TUNEHUB" remeasure llvm resnet-19 1 --data "$DATA"
  expect_fail 2 "whole number from 1 to 4096" "$TUNEHUB" remeasure llvm "$net" 0 --data "$DATA"
  expect_fail 2 "from 1 to 100" "$TUNEHUB" remeasure llvm "$net" 1 --data "$DATA" --rounds 0
  expect_fail 1 "holds no store" "$TUNEHUB" remeasure llvm "$net" 1 --data "$DATA"
  [[ ! -e "$DATA" ]] || fail "remeasure created $DATA"

  "$TUNEHUB" tune llvm "$net" 1 --data "$DATA" --trials 2 >"$TMP/tune.log" 2>&1 ||
    { tail -20 "$TMP/tune.log"; fail "tune"; }
  local tasks
  tasks=$(sqlite3 "$DATA/tunehub.db" "SELECT count(DISTINCT workload_key) FROM tuning_records WHERE error_class = 0")
  expect_fail 1 "no task of resnet-18 at batch 1 has a stored record" \
    "$TUNEHUB" remeasure llvm resnet-18 1 --data "$DATA"
  expect_fail 1 "holds no store" "$TUNEHUB" remeasure llvm "$net" 1 --data "$DATA" --against "$TMP/nowhere"

  # alone: one line per task, network,"workload",recorded_s,isolated_s, both times positive
  "$TUNEHUB" remeasure llvm "$net" 1 --data "$DATA" >"$TMP/alone.csv" 2>"$TMP/alone.err" ||
    { cat "$TMP/alone.err"; fail "remeasure"; }
  local n
  n=$(wc -l <"$TMP/alone.csv")
  [[ $n -ge 10 ]] || fail "only $n tasks re-measured: $(cat "$TMP/alone.err")"
  [[ $n -le $tasks ]] || fail "$n lines for $tasks tuned workloads"
  /usr/bin/python3 - "$TMP/alone.csv" "$net" <<'PY' || fail "alone.csv: $(head -3 "$TMP/alone.csv")"
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
for r in rows:
    assert len(r) == 4 and r[0] == sys.argv[2] and float(r[2]) > 0 and float(r[3]) > 0, r
PY
  grep -q "^remeasure: \[[0-9]*/[0-9]*\] .* ms (recorded" "$TMP/alone.err" || fail "no progress lines on stderr"

  # against a copy of itself: every config is the same one, and both columns are timed
  cp -r "$DATA" "$TMP/copy"
  "$TUNEHUB" remeasure llvm "$net" 1 --data "$DATA" --against "$TMP/copy" --rounds 2 >"$TMP/pair.csv" \
    2>"$TMP/pair.err" || { cat "$TMP/pair.err"; fail "remeasure --against"; }
  [[ $(wc -l <"$TMP/pair.csv") == "$n" ]] || fail "--against: $(wc -l <"$TMP/pair.csv") lines, alone $n"
  /usr/bin/python3 - "$TMP/pair.csv" <<'PY' || fail "pair.csv: $(head -3 "$TMP/pair.csv")"
import csv, sys
for r in csv.reader(open(sys.argv[1])):
    assert len(r) == 6, r
    assert int(r[2]) >= 1 and float(r[3]) > 0 and float(r[4]) > 0 and r[5] == "1", r
PY
}

"case_$1"
echo "PASS $1"
