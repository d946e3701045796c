#!/usr/bin/env bash
# Benchmark of the load-aware scheduler: three tuning jobs with a fixed trial budget each (resnet-18,
# mobilenet-v2, squeezenet_v1.1, batch 1; FW=llvm (default, the CPU) or FW=cuda (device 0: measurements on the
# GPU leave the CPU pool to builds), run three ways from empty data directories:
#   (a) sequential: the daemon admitting one job at a time (--workers 1), the three misses at once;
#   (b) naive parallel: three independent processes at once, no scheduler, sharing one data dir as the
#       daemon's jobs do (so records transfer between networks in every mode)
#       (tunehub build = quick v1, tunehub tune, tunehub build = tuned v2);
#   (c) scheduler: the daemon admitting all three (--workers 3), the three misses at once.
# Reported per mode: total completion time; per job the interference = median over its tasks' best configs of
# |recorded time - isolated re-measurement| / isolated (tunehub remeasure, run after all modes on the then
# idle machine, same measurement worker and options, REMEASURE_ROUNDS interleaved rounds), and its signed
# median (bias); and each network's final latency (tunehub run on the
# tuned bundle: the median over ROUNDS interleaved rounds (default 5) of each round's median). Prints a table and saves CSV under scripts/bench/out/.
# Usage: scripts/bench/scheduler.sh [TRIALS] (default 2 trials per task). TUNEHUB overrides the binary;
# MODES="sequential naive scheduler" (the default) picks the modes to run; a suffix runs a mode again as a
# control of the run-to-run spread (MODES="sequential naive scheduler sequential2 scheduler2"); the totals are
# also given as ratios within pairs of the same suffix (see the end).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
TH=${TUNEHUB:-$root/build/server/tunehub}
TRIALS=${1:-2}
FW=${FW:-llvm}
case $FW in llvm | cuda) ;; *) echo "FW=$FW: valid frameworks: llvm, cuda" >&2; exit 2 ;; esac
REPEAT=${REPEAT:-30}
NETS=(resnet-18 mobilenet-v2 squeezenet_v1.1)
OUT="$root/scripts/bench/out"
. "$root/scripts/bench/lib.sh" # bench_median, bench_round_ratios
mkdir -p "$OUT"
W=$(mktemp -d /tmp/th_bench_sched_XXXXXX)
stamp=$(date -u +%Y%m%dT%H%M%SZ)
csv="$OUT/scheduler-$FW-$stamp.csv"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$W"; }
trap cleanup EXIT

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# daemon_mode NAME WORKERS: the three misses at once against one daemon; tuned bundles to $W/NAME/NET.tar
daemon_mode() {
  local name=$1 workers=$2 port
  port=$(free_port)
  mkdir -p "$W/$name"
  "$TH" serve --listen "127.0.0.1:$port" --data "$W/$name/data" --on-miss tune --miss-trials "$TRIALS" \
    --workers "$workers" >"$W/$name/daemon.log" 2>&1 &
  local pid=$!
  PIDS+=("$pid")
  for _ in $(seq 1 100); do curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
  local t0 t1
  t0=$(date +%s.%N)
  local pids=()
  for n in "${NETS[@]}"; do
    # ?tuned=1&wait=600 answers once the tuned v2 exists (a miss queues the tuning job)
    (
      for _ in $(seq 1 6); do
        curl -fsS -o "$W/$name/$n.tar" "http://127.0.0.1:$port/models/$FW/$n/1?tuned=1&wait=600" && exit 0
        sleep 1
      done
      exit 1
    ) &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || { tail -30 "$W/$name/daemon.log"; exit 1; }; done
  t1=$(date +%s.%N)
  # CPU seconds of the daemon and its reaped children (build children, measurement workers, cc) over the run:
  # how well the mode keeps the cores busy (cores busy = cpu_s / total_s)
  local cpu
  cpu=$(awk -v hz="$(getconf CLK_TCK)" '{ printf "%.1f", ($14 + $15 + $16 + $17) / hz }' "/proc/$pid/stat")
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }' >"$W/$name/total_s"
  echo "$cpu" >"$W/$name/cpu_s"
  echo "   cpu ${cpu} s: $(awk -v c="$cpu" -v t="$(cat "$W/$name/total_s")" 'BEGIN { printf "%.2f", c / t }') of $(nproc) cores busy on average"
  for n in "${NETS[@]}"; do ln -sfn "$W/$name/data" "$W/$name/data-$n"; done
  # where each job's time went (stage kinds and waiting), from the daemon's log
  grep -E "succeeded \(" "$W/$name/daemon.log" | sed 's/^/   /' | tee "$OUT/scheduler-$FW-$stamp-$name.jobs.log"
}

naive_mode() {
  local name=$1
  mkdir -p "$W/$name"
  local t0 t1 pids=()
  t0=$(date +%s.%N)
  for n in "${NETS[@]}"; do
    (
      d="$W/$name/data"
      "$TH" build "$FW" "$n" 1 -o "$W/$name/$n-quick.tar" --data "$d"
      "$TH" tune "$FW" "$n" 1 --trials "$TRIALS" --data "$d"
      "$TH" build "$FW" "$n" 1 -o "$W/$name/$n.tar" --data "$d"
    ) >"$W/$name/$n.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || { tail -20 "$W/$name/"*.log; exit 1; }; done
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }' >"$W/$name/total_s"
  for n in "${NETS[@]}"; do ln -sfn "$W/$name/data" "$W/$name/data-$n"; done
}

MODES=${MODES:-sequential naive scheduler}
for mode in $MODES; do
  case $mode in
    sequential*) echo "== (a) $mode: sequential (daemon, one job at a time), $TRIALS trials per task, $FW"; daemon_mode "$mode" 1 ;;
    naive*) echo "== (b) $mode: naive parallel (three independent tuners), $TRIALS trials per task, $FW"; naive_mode "$mode" ;;
    scheduler*) echo "== (c) $mode: scheduler (daemon, three jobs admitted), $TRIALS trials per task, $FW"; daemon_mode "$mode" 3 ;;
    *) echo "unknown mode $mode (valid: sequential naive scheduler, each with an optional suffix)" >&2; exit 2 ;;
  esac
  echo "   $(cat "$W/$mode/total_s") s"
done

echo "== isolated re-measurement and final latencies (idle machine from here on)"
# REMEASURE_ROUNDS rounds (default 3), each over every network and mode in turn, so that a drift of the
# machine's speed hits all modes alike; a task's isolated time is the median over the rounds.
RR=${REMEASURE_ROUNDS:-3}
for r in $(seq 1 "$RR"); do
  for n in "${NETS[@]}"; do
    for mode in $MODES; do
      "$TH" remeasure "$FW" "$n" 1 --data "$W/$mode/data-$n" >"$W/$mode/$n.remeasure.$r.csv" \
        2>>"$W/$mode/$n.remeasure.err" || true
    done
  done
done
# Final latencies in interleaved rounds (every mode's bundle once per round), so that a drift of the machine's
# speed during the measurement hits all modes alike; a network's latency is the median over the rounds of each
# round's median of REPEAT/ROUNDS runs.
ROUNDS=${ROUNDS:-5}
PER=$(( (REPEAT + ROUNDS - 1) / ROUNDS ))
for r in $(seq 1 "$ROUNDS"); do
  for mode in $MODES; do
    for n in "${NETS[@]}"; do
      "$TH" run "$W/$mode/$n.tar" --repeat "$PER" | sed -n 's/.*median \([0-9.]*\) ms.*/\1/p' >>"$W/$mode/$n.lat"
    done
  done
done
echo "mode,network,total_s,interference_median,bias_median,tasks,latency_ms" >"$csv"
for mode in $MODES; do
  for n in "${NETS[@]}"; do
    # interference: median over tasks of |recorded - isolated| / isolated; bias: the same without the
    # absolute value (> 0: the tuning run recorded slower times than the idle machine gives)
    interf=$(/usr/bin/python3 - "$W/$mode/$n".remeasure.*.csv <<'PY'
import csv, statistics, sys
rec, iso = {}, {}
for f in sys.argv[1:]:
    for r in csv.reader(open(f)):
        if len(r) == 4 and float(r[3]) > 0:
            rec[r[1]] = float(r[2])
            iso.setdefault(r[1], []).append(float(r[3]))
d = [(rec[k] - statistics.median(v)) / statistics.median(v) for k, v in iso.items()]
print(f"{statistics.median(abs(x) for x in d):.4f},{statistics.median(d):+.4f},{len(d)}" if d else "nan,nan,0")
PY
)
    lat=$(bench_median $(cat "$W/$mode/$n.lat"))
    echo "$mode,$n,$(cat "$W/$mode/total_s"),$interf,$lat" >>"$csv"
  done
done

echo
printf '%-11s %-16s %9s %13s %8s %6s %11s\n' mode network total_s interference bias tasks latency_ms
tail -n +2 "$csv" | while IFS=, read -r m n t i b k l; do
  printf '%-11s %-16s %9.1f %13s %8s %6s %11s\n' "$m" "$n" "$t" "$i" "$b" "$k" "$l"
done
# Paired totals: each mode against the sequential run with the same suffix. Run MODES in pairs
# (sequential scheduler sequential2 scheduler2 ...): this machine's speed drifts by tens of percent over
# minutes, so a ratio within a back-to-back pair is the figure to trust, and the median over the pairs.
ratios=()
for mode in $MODES; do
  case $mode in sequential*) continue ;; esac
  suf=${mode#scheduler}
  suf=${suf#naive}
  base=sequential$suf
  [ -f "$W/$base/total_s" ] || continue
  r=$(awk -v a="$(cat "$W/$mode/total_s")" -v b="$(cat "$W/$base/total_s")" 'BEGIN { printf "%.3f", a / b }')
  echo "total time $mode / $base: $r"
  # final latency: the median over the rounds of each round's ratio (line k of .lat is round k's median)
  for n in "${NETS[@]}"; do
    echo "  latency $n $mode / $base: $(bench_round_ratios "$(cat "$W/$mode/$n.lat")" "$(cat "$W/$base/$n.lat")") (median of $(wc -l <"$W/$mode/$n.lat") per-round ratios)"
  done
  # the chosen configs themselves: each task's best config of this mode and of the base, timed side by side
  # on the idle machine (PAIR_ROUNDS alternating rounds, default 7); the weighted sum is the network's kernel
  # time, without the whole-network run's noise. Tasks where both picked one config show the noise floor (and
  # count at their mean on both sides).
  for n in "${NETS[@]}"; do
    "$TH" remeasure "$FW" "$n" 1 --data "$W/$mode/data-$n" --against "$W/$base/data-$n" \
      --rounds "${PAIR_ROUNDS:-7}" >"$W/$mode/$n.pair.csv" 2>>"$W/$mode/$n.remeasure.err" || true
    echo "  configs $n $mode / $base: $(/usr/bin/python3 - "$W/$mode/$n.pair.csv" <<'PY'
import csv, statistics, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) == 6]
if not rows:
    print("-")
    sys.exit()
# one config has one true time: where both picked it, both sides take the mean of its two timings
pool = lambda r, k: (float(r[3]) + float(r[4])) / 2 if r[5] == "1" else float(r[k])
a = sum(int(r[2]) * pool(r, 3) for r in rows)
b = sum(int(r[2]) * pool(r, 4) for r in rows)
diff = [float(r[3]) / float(r[4]) for r in rows if r[5] == "0"]
same = [float(r[3]) / float(r[4]) for r in rows if r[5] == "1"]
floor = f", same-config ratios {min(same):.3f}..{max(same):.3f}" if same else ""
print(f"weighted kernel time ratio {a / b:.3f} over {len(rows)} tasks; {len(same)} picked the same config{floor}; "
      f"of {len(diff)} that differ, {sum(x > 1.03 for x in diff)} slower and {sum(x < 1 / 1.03 for x in diff)} faster by >3%"
      + (f" (median ratio {statistics.median(diff):.3f})" if diff else ""))
PY
)"
  done
  case $mode in scheduler*) ratios+=("$r") ;; esac
done
if [ ${#ratios[@]} -gt 0 ]; then
  echo "scheduler / sequential, median over ${#ratios[@]} pairs: $(bench_median "${ratios[@]}")"
fi
# KEEP=DIR keeps every mode's tuned bundles, re-measurements and daemon log (for scripts/bench/ab.sh --layers)
if [ -n "${KEEP:-}" ]; then
  for mode in $MODES; do
    mkdir -p "$KEEP/$mode"
    cp "$W/$mode/"*.tar "$W/$mode/"*.csv "$W/$mode/"*.log "$KEEP/$mode/" 2>/dev/null || true
  done
  echo "kept the bundles and re-measurements under $KEEP"
fi
echo
echo "saved $csv"
