#!/bin/sh
# One libFuzzer target as a ctest test (fuzz.NAME), in three steps:
# 1. replays every input in tests/fuzz/regressions/NAME/ (each crash ever found, kept there for good): each
#    must run clean;
# 2. fuzzes for SECONDS from the committed seeds in tests/fuzz/corpus/NAME/ plus those a SEED_CMD writes (run as
#    `SEED_CMD... DIR`), into a scratch corpus; tests/fuzz/NAME.dict is the dictionary when it exists, and
#    tests/fuzz/NAME.flags holds more libFuzzer flags (one per line) when it exists;
# 3. prints, as its last line, the executions per second and in total (libFuzzer's -print_final_stats=1).
# Fails on any crash, leak, sanitizer report or timeout, naming the reproducer (crash-*, leak-*, timeout-*,
# oom-*), which stays in the scratch directory it names: copy it into tests/fuzz/regressions/NAME/ with the fix.
# usage: run.sh NAME FUZZ_BINARY SRC_DIR SECONDS [SEED_CMD...]
set -eu
name=$1 fuzz=$2 src=$3 secs=$4
shift 4
dir="$src/tests/fuzz"
work=$(mktemp -d "/tmp/fuzz_$name.XXXXXX")
mkdir -p "$work/seeds" "$work/corpus" "$work/artifacts"
flags="-timeout=20 -rss_limit_mb=3072"
[ -f "$dir/$name.dict" ] && flags="$flags -dict=$dir/$name.dict"
[ -f "$dir/$name.flags" ] && flags="$flags $(grep -v '^#' "$dir/$name.flags" | tr '\n' ' ')"

fail() { # $1: what failed
  echo "fuzz.$name: FAILED ($1); reproducers in $work/artifacts:" >&2
  for f in "$work"/artifacts/*; do
    [ -e "$f" ] || continue
    echo "  $f" >&2
    echo "  (replay: $fuzz $f; keep it in tests/fuzz/regressions/$name/ with the fix)" >&2
  done
  exit 1
}

regressions=$(find "$dir/regressions/$name" -type f ! -name '.*' 2>/dev/null | sort)
if [ -n "$regressions" ]; then
  # shellcheck disable=SC2086 # flags and the file list are word lists
  if ! "$fuzz" $flags -artifact_prefix="$work/artifacts/" $regressions >"$work/replay.log" 2>&1; then
    tail -n 60 "$work/replay.log" >&2
    fail "a regression input crashes again"
  fi
  echo "fuzz.$name: $(echo "$regressions" | wc -l) regression input(s) replayed clean"
fi

if [ $# -gt 0 ]; then "$@" "$work/seeds"; fi
seeds="$work/seeds"
[ -d "$dir/corpus/$name" ] && seeds="$seeds $dir/corpus/$name"
echo "fuzz.$name: seeds: $(find $seeds -type f | wc -l) file(s); ${secs} s"
status=0
# shellcheck disable=SC2086
"$fuzz" $flags -max_total_time="$secs" -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
  "$work/corpus" $seeds >"$work/fuzz.log" 2>&1 || status=$?
if [ "$status" -ne 0 ] || [ -n "$(ls "$work/artifacts")" ]; then
  tail -n 80 "$work/fuzz.log" >&2
  fail "exit $status"
fi
grep -E '^(INFO: seed corpus|#[0-9]+ +DONE)' "$work/fuzz.log" || true
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/fuzz.log")
rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/fuzz.log")
cov=$(sed -n 's/^#[0-9]*[[:space:]]*DONE[[:space:]]*cov: \([0-9]*\).*/\1/p' "$work/fuzz.log")
rm -rf "$work"
echo "fuzz.$name: ${runs:-?} executions in ${secs} s, ${rate:-?} exec/s, coverage ${cov:-?} edges"
