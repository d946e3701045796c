#!/usr/bin/env bash
# Integration tests of the load-aware scheduler against the real daemon: two tuning misses at once
# interleave (seen through GET /scheduler and the SSE stream, resumed with Last-Event-ID) and all publish a
# tuned v2; a kill -9 mid-tuning resumes from the stored records after a restart.
# Usage: sched.sh CASE, with TUNEHUB set to the binary.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"

job_state() { curl -s "$BASE/jobs/$1" | jq -r .state; }

# wait_jobs SECONDS ID...: until every job has ended; fails unless all succeeded
wait_jobs() {
  local secs=$1
  shift
  for _ in $(seq 1 $((secs * 2))); do
    local left=0
    for j in "$@"; do
      case "$(job_state "$j")" in
        succeeded) ;;
        failed | cancelled) curl -s "$BASE/jobs/$j" | head -c 600; fail "job $j ended $(job_state "$j")" ;;
        *) left=$((left + 1)) ;;
      esac
    done
    [[ $left == 0 ]] && return 0
    sample_scheduler
    sleep 0.5
  done
  fail "jobs $* did not finish in ${secs}s"
}

sample_scheduler() {
  curl -s "$BASE/scheduler" >>"$TMP/sched.jsonl" || true
  echo >>"$TMP/sched.jsonl"
}

records_of() { store_sql "SELECT count(*) FROM tuning_records WHERE job_id = $1"; }

# trials_per_task JOB: "workload|target<TAB>trials" per task (verification re-timings are not
# trials)
trials_per_task() {
  store_sql -F $'\t' "SELECT workload_key || '|' || target, count(*)
    FROM tuning_records WHERE job_id = $1 AND tuner <> 'verify'
    GROUP BY workload_key, target ORDER BY 1"
}

case_interleave_sse() {
  start_daemon --on-miss tune --miss-trials 2 --workers 3
  nets=(squeezenet_v1.1 mobilenet) # two jobs are enough to interleave (a third cost the test a third more)
  ids=()
  for n in "${nets[@]}"; do
    expect_status 503 "$BASE/models/llvm/$n/1"
    ids+=("$(jq -r .error.job.id "$TMP/body")")
  done
  # the first job's whole stream (ends by itself after "done")
  curl -sN --max-time 900 "$BASE/jobs/${ids[0]}/events" >"$TMP/sse0" &
  full=$!
  # GET /scheduler sampled from now until both jobs end: a tuning job lasts ~30 s once its kernels are in
  # the object cache, so sampling only from wait_jobs on (after the streams below) can miss the overlap
  # (its own file, so that two writers never interleave; it stops at the stop file or when $TMP goes)
  (while [[ -d $TMP && ! -e $TMP/sampler_stop ]]; do
    curl -s "$BASE/scheduler" >>"$TMP/sched_bg.jsonl" && echo >>"$TMP/sched_bg.jsonl"
    sleep 0.5
  done) >/dev/null 2>&1 &
  sampler=$!
  # once the second job has started: a short stream, then a resume from the last id seen
  for _ in $(seq 1 240); do
    curl -s "$BASE/scheduler" | jq -e --argjson id "${ids[1]}" \
      '.jobs[] | select(.id == $id and (.state == "running" or .stages_run > 0))' >/dev/null && break
    sleep 0.5
  done
  curl -sN --max-time 3 "$BASE/jobs/${ids[1]}/events" >"$TMP/sse1a" || true
  grep -q '^event: progress' "$TMP/sse1a" || fail "a new stream starts without a progress snapshot"
  last=$(grep '^id: ' "$TMP/sse1a" | tail -n1 | cut -d' ' -f2)
  [[ "${last:-0}" -gt 0 ]] || fail "no events for job ${ids[1]}: $(head -c 300 "$TMP/sse1a")"
  sleep 2
  curl -sN --max-time 20 -H "Last-Event-ID: $last" "$BASE/jobs/${ids[1]}/events" >"$TMP/sse1b" || true
  first=$(grep '^id: ' "$TMP/sse1b" | head -n1 | cut -d' ' -f2)
  [[ -n "$first" && "$first" -gt "$last" ]] || fail "resume after $last began at '$first'"
  # the ring still holds them: the resume continues exactly after the last id, with no snapshot first
  [[ "$first" == $((last + 1)) ]] || fail "resume after $last began at $first"
  # the stream cap per client
  expect_status 200 "$BASE/scheduler"
  jq -e '.resources.cpu.total >= 1 and (.resources.devices | map(.name) | index("cpu") != null)' "$TMP/body" \
    >/dev/null || fail "scheduler resources: $(head -c 400 "$TMP/body")"
  wait_jobs 1500 "${ids[@]}"
  touch "$TMP/sampler_stop"
  wait "$sampler" || true
  cat "$TMP/sched_bg.jsonl" "$TMP/sched.jsonl" >"$TMP/sched_all.jsonl" # in time order
  mv "$TMP/sched_all.jsonl" "$TMP/sched.jsonl"
  wait "$full" || true
  # interleaving: some sample had more than one job admitted, and two jobs past their quick build at once
  jq -e -s 'map(select(.admitted != null)) | map(.admitted) | max > 1' "$TMP/sched.jsonl" >/dev/null \
    || fail "never more than one admitted job"
  jq -e -s 'map(select(.jobs != null) | [.jobs[] | select(.phase == "tune")] | length) | max > 1' \
    "$TMP/sched.jsonl" >/dev/null || fail "tuning stages of different jobs never interleaved"
  jq -e -s 'map(select(.estimates != null)) | last | .estimates.measure.samples > 0' "$TMP/sched.jsonl" \
    >/dev/null || fail "no learned measure estimate"
  # the full stream: stages, progress, both publishes (v2 tuned), done last, increasing ids
  for ev in stage progress published done; do
    grep -q "^event: $ev" "$TMP/sse0" || fail "stream lacks '$ev': $(tail -c 400 "$TMP/sse0")"
  done
  grep -q '^data: {"job":'"${ids[0]}"',"version":2,"tuned":true,"digest":"sha256:' "$TMP/sse0" \
    || fail "no tuned v2 publish event"
  [[ "$(grep '^event: ' "$TMP/sse0" | tail -n1)" == "event: done" ]] || fail "done is not the last event"
  grep -q '"state":"succeeded","error":null' "$TMP/sse0" || fail "done data"
  grep '^id: ' "$TMP/sse0" | cut -d' ' -f2 | sort -n -c || fail "event ids do not increase"
  grep -q '"stage":"measure"' "$TMP/sse0" || fail "no measure stage event"
  # a finished job's stream: snapshot and done at once
  curl -sN --max-time 10 "$BASE/jobs/${ids[1]}/events" >"$TMP/sse2"
  grep -q '^event: progress' "$TMP/sse2" && grep -q '^event: done' "$TMP/sse2" || fail "finished stream"
  for n in "${nets[@]}"; do
    expect_status 200 "$BASE/models/llvm/$n/1/versions"
    jq -e '.count == 2 and .versions[1].version == 2 and .versions[1].tuned == true' "$TMP/body" >/dev/null \
      || fail "$n: no tuned v2: $(head -c 300 "$TMP/body")"
  done
  # per-client stream cap: 429 with Retry-After and a clear message
  stop_daemon
  start_daemon --max-streams-per-ip 1
  expect_status 202 -H 'Prefer: respond-async' "$BASE/models/llvm/squeezenet_v1.1/2"
  j=$(jq -r .job.id "$TMP/body")
  curl -sN --max-time 5 "$BASE/jobs/$j/events" >/dev/null &
  bg=$!
  sleep 0.5
  expect_status 429 "$BASE/jobs/$j/events"
  body_has 'event streams open'
  [[ -n "$(header Retry-After)" ]] || fail "429 without Retry-After"
  wait "$bg" || true
}

case_kill9_tuning() {
  start_daemon --on-miss tune --miss-trials 3 --workers 2
  expect_status 503 "$BASE/models/llvm/squeezenet_v1.1/1"
  job=$(jq -r .error.job.id "$TMP/body")
  # wait until it is tuning and has stored some records
  for _ in $(seq 1 600); do
    n=$(records_of "$job")
    [[ "$n" -ge 6 ]] && break
    sleep 0.25
  done
  [[ "$n" -ge 6 ]] || fail "no tuning records after 150 s"
  kill -9 "$PID"
  wait "$PID" 2>/dev/null || true
  PID=""
  before=$(records_of "$job")
  trials_per_task "$job" >"$TMP/trials_before"
  start_daemon --on-miss tune --miss-trials 3 --workers 2
  grep -q "requeued" "$LOG" || fail "the running job was not requeued"
  wait_jobs 900 "$job"
  expect_status 200 "$BASE/jobs/$job"
  jq -e '.attempts == 2 and .state == "succeeded"' "$TMP/body" >/dev/null || fail "job: $(head -c 300 "$TMP/body")"
  # resumed, not restarted: the quick build was not published again (v1 quick, v2 tuned, nothing else)
  expect_status 200 "$BASE/models/llvm/squeezenet_v1.1/1/versions"
  jq -e '.count == 2 and .versions[0].tuned == false and .versions[1].tuned == true' "$TMP/body" >/dev/null \
    || fail "versions: $(head -c 400 "$TMP/body")"
  # The trials stored before the kill were not run again (README: the session skips them; only the
  # batch in flight is redone): no task holds more trials than its budget of 3, no task tried one
  # config twice, and a task that had its 3 before the kill got no trial after the restart.
  trials_per_task "$job" >"$TMP/trials_after"
  over=$(awk -F'\t' '$2 > 3' "$TMP/trials_after")
  [[ -z "$over" ]] \
    || fail "tasks with more trials than the budget of 3 (re-run after the restart): $over"
  dup=$(store_sql "SELECT workload_key, config, count(*) FROM tuning_records
    WHERE job_id = $job AND tuner <> 'verify' GROUP BY workload_key, target, config
    HAVING count(*) > 1")
  [[ -z "$dup" ]] || fail "configs tried twice in one task: $dup"
  while IFS=$'\t' read -r task n; do
    [[ "$n" -lt 3 ]] && continue
    now=$(awk -F'\t' -v t="$task" '$1 == t { print $2 }' "$TMP/trials_after")
    [[ "$now" == "$n" ]] || fail "task $task had its $n trials before the kill and $now after"
  done <"$TMP/trials_before"
  final=$(records_of "$job")
  [[ "$final" -gt "$before" ]] \
    || fail "the resumed job stored nothing: $before records before, $final after"
  echo "records: before kill $before ($(wc -l <"$TMP/trials_before") tasks begun), after $final" \
    "($(wc -l <"$TMP/trials_after") tasks)"
}

"case_$1"
echo "PASS $1"
