#!/usr/bin/env bash
# Cluster tests of workers (issue 24, part C): a private PostgreSQL 15 (pg.sh), one daemon that runs no jobs
# (serve --db --workers 0: a serving replica, which still requeues expired leases) and real `tunehub worker`
# processes on 127.0.0.1, with a 3 s lease so that expiries come quickly.
#   kill9_resume      kill -9 of the worker that holds a tuning job: after the lease expires the other worker
#                     resumes it from the records: versions exactly v1 and v2, no (workload, config) measured twice
#   sigstop_fenced    SIGSTOP the holder past its lease, let the other worker finish, SIGCONT it: it learns it lost
#                     the job, and nothing it did afterwards is visible (no version, record or job change)
#   handoff_target    a tune job for a target no worker has: published untuned, queued with needs_target; a worker
#                     started with --target for it claims it and publishes the tuned version
#   fleet_view        GET /workers shows both workers with their targets; /metrics has the per-target gauges
# Usage: workers.sh CASE, with TUNEHUB set to the binary.
#
# Each process has a --data directory of its own: the bundles a worker publishes live in the database (large
# objects), and a daemon fetches them into its own cache.
#   two_replicas      two daemons and two workers: a miss on daemon A is built and tuned by a worker; daemon B
#                     follows it (?wait= and its SSE stream, woken by NOTIFY) and serves the same digests as A
#   migrate           tunehub migrate copies an embedded store with tuned versions, records and an alias into
#                     PostgreSQL; a daemon on it with an empty cache serves the same bytes; a second copy into
#                     the same database, and a source blob that no longer matches its digest, are refused
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../integration/lib.sh"
source "$here/pg.sh"

declare -A WPID=() # worker name -> pid
CHILDREN=()        # measurement workers of killed workers

fleet_cleanup() {
  local rc=$?
  if [[ -n "${BPID:-}" ]]; then kill "$BPID" 2>/dev/null || true; fi
  for n in "${!WPID[@]}"; do
    kill -CONT "${WPID[$n]}" 2>/dev/null || true
    kill -TERM "${WPID[$n]}" 2>/dev/null || true
  done
  for n in "${!WPID[@]}"; do
    for _ in $(seq 1 100); do kill -0 "${WPID[$n]}" 2>/dev/null || break; sleep 0.1; done
    kill -9 "${WPID[$n]}" 2>/dev/null || true
  done
  for p in "${CHILDREN[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  stop_daemon
  pg_stop
  if [[ $rc -ne 0 ]]; then
    for f in "$TMP"/*.log; do
      echo "--- $(basename "$f") ---"
      tail -n 40 "$f"
    done
  fi
  rm -rf "$TMP"
}
trap fleet_cleanup EXIT

pg_start "$TMP" || fail "cannot start PostgreSQL"

# start_fleet_daemon ARGS...: the replica (no jobs of its own), tuning misses with few trials
start_fleet_daemon() {
  LOG="$TMP/daemon.log"
  start_daemon --db "$PG_URL" --workers 0 --lease 3 --on-miss tune "$@"
}

# start_worker NAME ARGS...: a worker with a 3 s lease and one slot, registered before it returns
start_worker() {
  local name=$1
  shift
  "$TUNEHUB" worker --db "$PG_URL" --data "$TMP/data-$name" --lease 3 --slots 1 --name "$name" "$@" >>"$TMP/$name.log" 2>&1 &
  WPID[$name]=$!
  for _ in $(seq 1 100); do
    [[ "$(pg_psql "SELECT count(*) FROM workers WHERE name = '$name' AND stopped_at IS NULL")" == 1 ]] && return 0
    kill -0 "${WPID[$name]}" 2>/dev/null || { cat "$TMP/$name.log"; fail "worker $name exited at start"; }
    sleep 0.1
  done
  fail "worker $name did not register"
}

job_field() { curl -s "$BASE/jobs/$1" | jq -r ".$2"; }
# sql ARGS: one value from the database
sql() { pg_psql "$1"; }
records_of() { sql "SELECT count(*) FROM tuning_records WHERE job_id = $1 AND tuner <> 'verify'"; }

# wait_until SECONDS DESCRIPTION COMMAND...: polls COMMAND every 0.25 s
wait_until() {
  local secs=$1 what=$2
  shift 2
  for _ in $(seq 1 $((secs * 4))); do
    "$@" && return 0
    sleep 0.25
  done
  fail "$what: not after ${secs}s"
}
job_is() { [[ "$(job_field "$1" state)" == "$2" ]]; }
job_attempts_are() { [[ "$(job_field "$1" attempts)" == "$2" && "$(job_field "$1" state)" == running ]]; }
records_at_least() { [[ "$(records_of "$1")" -ge "$2" ]]; }

# expect_versions JOB: the key has exactly v1 (untuned) and v2 (tuned), both published by JOB
expect_versions() {
  local got
  got=$(sql "SELECT string_agg(version || ':' || tuned || ':' || job_id, ',' ORDER BY version) FROM models
             WHERE (framework, network, batch, target) IN (SELECT framework, network, batch, target FROM jobs
             WHERE id = $1)")
  [[ "$got" == "1:0:$1,2:1:$1" ]] || fail "versions (version:tuned:job) are '$got', not exactly v1 untuned and v2 tuned"
}

# expect_no_repeated_trial JOB: no (workload, target, config) measured twice by the job, verification aside
expect_no_repeated_trial() {
  local dup
  dup=$(sql "SELECT workload_key, config, count(*) FROM tuning_records WHERE job_id = $1 AND tuner <> 'verify'
             GROUP BY workload_key, target, config HAVING count(*) > 1")
  [[ -z "$dup" ]] || fail "configs measured twice: $dup"
}

# the worker that holds JOB (it is running), and the other one of w1/w2
holder_of() { sql "SELECT worker FROM jobs WHERE id = $1 AND state = 'running'"; }
other_than() { [[ "$1" == w1 ]] && echo w2 || echo w1; }

# tuning_on_two_workers TRIALS: the replica, workers w1 and w2, and a tuning miss with TRIALS per task; once the
# job has stored 6 trials, job is its id, holder the worker that runs it and other the other one
tuning_on_two_workers() {
  start_fleet_daemon --miss-trials "$1"
  start_worker w1
  start_worker w2
  expect_status 503 "$BASE/models/llvm/squeezenet_v1.1/1"
  job=$(jq -r .error.job.id "$TMP/body")
  wait_until 240 "job $job storing tuning records" records_at_least "$job" 6
  holder=$(holder_of "$job")
  [[ "$holder" == w1 || "$holder" == w2 ]] || fail "job $job is held by '$holder'"
  other=$(other_than "$holder")
}

case_kill9_resume() {
  tuning_on_two_workers 3
  CHILDREN+=($(pgrep -P "${WPID[$holder]}" || true))
  kill -9 "${WPID[$holder]}"
  wait "${WPID[$holder]}" 2>/dev/null || true
  unset "WPID[$holder]"
  t0=$(date +%s.%N)
  before=$(records_of "$job")
  # nobody else touches the job until its lease (3 s, renewed every second) has expired; then it is requeued
  # (by the other worker or the replica) and the other worker claims it as attempt 2
  wait_until 30 "attempt 2 of job $job" job_attempts_are "$job" 2
  waited=$(echo "$(date +%s.%N) - $t0" | bc)
  (($(echo "$waited >= 1.9" | bc))) || fail "job $job was taken over ${waited}s after the kill, before its lease expired"
  [[ "$(holder_of "$job")" == "$other" ]] || fail "job $job resumed on $(holder_of "$job"), not $other"
  grep -q "requeued 1 job(s) whose lease expired" "$TMP/$other.log" "$TMP/daemon.log" \
    || fail "nobody logged the requeue of the expired lease"
  grep -q "job $job claimed by $other: .*(attempt 2," "$TMP/$other.log" || fail "$other did not log its claim"
  wait_until 600 "job $job succeeded" job_is "$job" succeeded
  # resumed, not restarted: the quick build was not published again, and no trial was measured twice
  expect_versions "$job"
  expect_no_repeated_trial "$job"
  over=$(sql "SELECT workload_key, count(*) FROM tuning_records WHERE job_id = $job AND tuner <> 'verify'
              GROUP BY workload_key, target HAVING count(*) > 3")
  [[ -z "$over" ]] || fail "tasks with more trials than the budget of 3: $over"
  after1=$(sql "SELECT count(*) FROM tuning_records WHERE job_id = $job AND attempt = 1 AND tuner <> 'verify'")
  [[ "$after1" == "$before" ]] || fail "attempt 1 has $after1 trials after the kill, $before before"
  [[ "$(sql "SELECT count(*) FROM tuning_records WHERE job_id = $job AND attempt = 2")" -gt 0 ]] \
    || fail "attempt 2 stored nothing"
  # the bundle is served (the same digest the store has)
  expect_status 200 "$BASE/models/llvm/squeezenet_v1.1/1/manifest"
  echo "trials: $before before the kill (attempt 1), $(records_of "$job") in all; taken over after ${waited}s"
}

case_sigstop_fenced() {
  tuning_on_two_workers 4
  kill -STOP "${WPID[$holder]}"
  stopped1=$(sql "SELECT count(*) FROM tuning_records WHERE job_id = $job AND attempt = 1")
  wait_until 30 "attempt 2 of job $job" job_attempts_are "$job" 2
  [[ "$(holder_of "$job")" == "$other" ]] || fail "job $job resumed on $(holder_of "$job"), not $other"
  wait_until 600 "job $job succeeded" job_is "$job" succeeded
  expect_versions "$job"
  snapshot() {
    sql "SELECT state, stage, attempts, worker, finished_at, error, progress FROM jobs WHERE id = $job"
    sql "SELECT count(*), max(id) FROM tuning_records WHERE job_id = $job"
    sql "SELECT count(*), max(id) FROM models"
  }
  snapshot >"$TMP/before_cont"
  [[ "$(sql "SELECT count(*) FROM tuning_records WHERE job_id = $job AND attempt = 1")" == "$stopped1" ]] \
    || fail "records of attempt 1 changed while its worker was stopped"
  # the paused worker comes back: it finds its claim gone and stops the job without another write
  kill -CONT "${WPID[$holder]}"
  wait_until 30 "$holder noticing the lost lease" grep -q "lost the lease of job $job (attempt 1;" "$TMP/$holder.log"
  sleep 4 # a few more heartbeats and stages' worth of time for anything late to show
  snapshot >"$TMP/after_cont"
  [[ "$(sql "SELECT count(*) FROM tuning_records WHERE job_id = $job AND attempt = 1")" == "$stopped1" ]] \
    || fail "attempt 1 stored records after it lost the lease"
  diff "$TMP/before_cont" "$TMP/after_cont" >&2 || fail "the stale worker changed the job, its records or the models"
  expect_versions "$job"
  expect_no_repeated_trial "$job"
  grep -q "attempt 1 is stale" "$TMP/$holder.log" || fail "$holder logged no refusal of attempt 1"
  # it lives on as a healthy worker that holds nothing
  wait_until 10 "$holder alive with no job" bash -c \
    "curl -s '$BASE/workers' | jq -e '.workers[] | select(.name == \"$holder\" and .alive and (.jobs | length) == 0)' >/dev/null"
  grep "lost the lease\|is stale" "$TMP/$holder.log" | cut -c1-300
}

case_handoff_target() {
  start_fleet_daemon --miss-trials 2
  start_worker w1 # this CPU's own target only
  own=$(sql "SELECT target FROM worker_targets WHERE worker = 'w1'")
  want="llvm -mcpu=x86-64-v2"
  [[ "$own" != "$want" ]] || fail "this CPU is named x86-64-v2: the case needs another target"
  M="/models/llvm/mobilenet/1"
  # no worker measures x86-64-v2: a tuned version cannot be promised
  expect_status 501 "$BASE$M?target=x86-64-v2&tuned=1"
  body_has "no live worker measures $want"
  expect_status 503 "$BASE$M?target=x86-64-v2"
  job=$(jq -r .error.job.id "$TMP/body")
  waiting() { [[ "$(job_field "$job" state)" == queued && "$(job_field "$job" needs_target)" == "$want" ]]; }
  wait_until 120 "job $job waiting for $want" waiting
  expect_status 200 "$BASE/jobs/$job"
  jq -e '.stage == "waiting_for_target" and .attempts == 1 and .worker == null and
         (.progress.tuning | test("published untuned; tuning waits for a worker with the target llvm -mcpu=x86-64-v2"))' \
    "$TMP/body" >/dev/null || fail "waiting job: $(head -c 600 "$TMP/body")"
  expect_status 200 "$BASE$M/versions?target=x86-64-v2"
  jq -e '.count == 1 and .versions[0].tuned == false' "$TMP/body" >/dev/null || fail "v1: $(head -c 300 "$TMP/body")"
  curl -s "$BASE/metrics" >"$TMP/metrics"
  grep -q "^tunehub_queue_waiting_for_target{target=\"$want\"} 1$" "$TMP/metrics" || fail "no waiting gauge"
  grep -q "^tunehub_workers_alive{target=\"$want\"} 0$" "$TMP/metrics" || fail "no workers_alive gauge at 0"
  # it stays there: the worker without the target never takes it again
  sleep 4
  waiting || fail "job $job left the queue without a worker for $want"
  # a worker with that target comes: it claims the job, resumes after the untuned version and tunes
  start_worker w2 --target x86-64-v2
  wait_until 300 "job $job succeeded" job_is "$job" succeeded
  expect_versions "$job"
  [[ "$(job_field "$job" attempts)" == 2 && "$(job_field "$job" worker)" == w2 ]] || fail "job: $(curl -s "$BASE/jobs/$job")"
  [[ "$(sql "SELECT count(DISTINCT target) || ':' || min(target) FROM tuning_records WHERE job_id = $job")" == "1:$want" ]] \
    || fail "the job's records are not all for $want"
  [[ "$(sql "SELECT count(*) FROM tuning_records WHERE job_id = $job AND attempt <> 2")" == 0 ]] \
    || fail "records written outside attempt 2"
  expect_status 200 "$BASE$M?target=x86-64-v2&tuned=1"
  [[ "$(header X-Tunehub-Version)" == 2 ]] || fail "tuned=1 served version '$(header X-Tunehub-Version)'"
}

case_fleet_view() {
  start_fleet_daemon
  start_worker w1
  start_worker w2 --target x86-64-v2 --target x86-64-v3 --slots 3
  own=$(sql "SELECT target FROM worker_targets WHERE worker = 'w1'")
  expect_status 200 "$BASE/workers"
  jq -e --arg own "$own" '.shared == true and .count == 2 and
    ([.workers[] | select(.name == "w1" and .alive and .targets == [$own] and .slots == 1)] | length) == 1 and
    ([.workers[] | select(.name == "w2" and .alive and .slots == 3 and
       .targets == ["llvm -mcpu=x86-64-v2", "llvm -mcpu=x86-64-v3"])] | length) == 1 and
    all(.workers[]; .jobs == [] and .heartbeat_age_s < 3 and (.heartbeat_at | test("Z$")) and .stopped_at == null)' \
    "$TMP/body" >/dev/null || fail "workers: $(head -c 900 "$TMP/body")"
  curl -s "$BASE/metrics" >"$TMP/metrics"
  for t in "$own" "llvm -mcpu=x86-64-v2" "llvm -mcpu=x86-64-v3"; do
    grep -q "^tunehub_workers_alive{target=\"$t\"} 1$" "$TMP/metrics" || fail "no live worker gauge for $t"
    grep -q "^tunehub_queue_depth{target=\"$t\"} 0$" "$TMP/metrics" || fail "no queue depth gauge for $t"
  done
  grep -q '^# TYPE tunehub_queue_depth gauge$' "$TMP/metrics" || fail "no TYPE line"
  # /targets says tuning can go ahead for every live worker's target (the replica itself measures nothing)
  expect_status 200 "$BASE/targets"
  jq -e --arg own "$own" '.targets[] | select(.framework == "llvm") | .tunable_targets | sort ==
    ([$own, "llvm -mcpu=x86-64-v2", "llvm -mcpu=x86-64-v3"] | unique)' "$TMP/body" >/dev/null \
    || fail "tunable targets: $(jq -c '.targets[] | select(.framework == "llvm") | .tunable_targets' "$TMP/body")"
  # a clean stop: the worker says so and the fleet sees it gone
  kill -TERM "${WPID[w2]}"
  wait "${WPID[w2]}" || fail "worker w2 exited non-zero on SIGTERM"
  unset "WPID[w2]"
  expect_status 200 "$BASE/workers"
  jq -e '.workers[] | select(.name == "w2") | (.alive == false and .stopped_at != null)' "$TMP/body" >/dev/null \
    || fail "w2 after its stop: $(head -c 600 "$TMP/body")"
  expect_status 200 "$BASE/metrics" # (not curl | grep -q: curl, cut off at the first match, fails pipefail)
  grep -q '^tunehub_workers_alive{target="llvm -mcpu=x86-64-v3"} 0$' "$TMP/body" || fail "workers_alive did not drop to 0"
  expect_status 200 "$BASE/targets"
  jq -e '.targets[] | select(.framework == "llvm") | .tunable_targets | index("llvm -mcpu=x86-64-v3") == null' \
    "$TMP/body" >/dev/null || fail "x86-64-v3 still tunable after its only worker stopped"
  # the page has its fleet section
  expect_status 200 "$BASE/"
  body_has 'id="workers-section"'
}

# sha256 of what GET URL serves
sha_of() { curl -fsS "$1" | sha256sum | cut -d' ' -f1; }

case_two_replicas() {
  start_fleet_daemon --miss-trials 2
  # replica B: another daemon on the same database, with a data directory (a blob cache) of its own
  local port_b base_b
  port_b=$(free_port)
  base_b="http://127.0.0.1:$port_b"
  "$TUNEHUB" serve --listen "127.0.0.1:$port_b" --data "$TMP/data-b" --db "$PG_URL" --workers 0 --lease 3 \
    >>"$TMP/replica-b.log" 2>&1 &
  BPID=$!
  wait_until 20 "replica B up" curl -fs -o /dev/null "$base_b/healthz"
  start_worker w1
  start_worker w2
  M=/models/llvm/squeezenet_v1.1/1
  expect_status 503 "$BASE$M"
  job=$(jq -r .error.job.id "$TMP/body")
  # B follows the job that a worker runs: its SSE stream, and a long poll that only a notification can end early
  curl -sN --max-time 300 "$base_b/jobs/$job/events" >"$TMP/sse-b" &
  sse=$!
  t0=$(date +%s.%N)
  code=$(curl -s -o "$TMP/b1" -D "$TMP/b1.h" -w '%{http_code}' --max-time 200 "$base_b$M?wait=240") || true
  [[ "$code" == 200 ]] || fail "B's long poll ended with $code, not the first version (the relay did not wake it)"
  echo "B's ?wait= answered $(echo "$(date +%s.%N) - $t0" | bc) s after the miss"
  wait_until 600 "job $job succeeded" job_is "$job" succeeded
  wait "$sse" || true
  grep -q '^event: done' "$TMP/sse-b" || fail "B's event stream did not end with done: $(tail -c 400 "$TMP/sse-b")"
  [[ "$(grep -c '^event: published' "$TMP/sse-b")" == 2 ]] || fail "B's stream lacks the two published events"
  grep -q '^event: progress' "$TMP/sse-b" || fail "B's stream has no progress from the worker"
  # both replicas list the same versions and serve each one's bytes (by digest, as an OCI client pulls them),
  # and the newest from the plain URL, all matching the store's digests
  [[ "$(curl -fsS "$BASE$M/versions" | jq -c '[.versions[] | [.version, .tuned, .digest]]')" == \
     "$(curl -fsS "$base_b$M/versions" | jq -c '[.versions[] | [.version, .tuned, .digest]]')" ]] \
    || fail "A and B list different versions"
  for v in 1 2; do
    want=$(sql "SELECT tar_digest FROM models WHERE job_id = $job AND version = $v")
    [[ -n "$want" ]] || fail "no version $v in the store"
    a=$(sha_of "$BASE/v2/llvm/squeezenet_v1.1/blobs/sha256:$want")
    b=$(sha_of "$base_b/v2/llvm/squeezenet_v1.1/blobs/sha256:$want")
    [[ "$a" == "$want" && "$b" == "$want" ]] || fail "v$v: A serves $a, B serves $b, the store has $want"
  done
  [[ "$(sha_of "$base_b$M")" == "$want" && "$(sha_of "$BASE$M")" == "$want" ]] || fail "the newest version differs"
  [[ "$(sql "SELECT string_agg(DISTINCT worker, ',') FROM jobs WHERE id = $job")" =~ ^w[12]$ ]] \
    || fail "job $job was not run by a worker"
  [[ -s "$TMP/data-b/artifacts/${want:0:2}/$want" ]] || fail "B did not fill its own cache"
  kill "$BPID" 2>/dev/null || true
  wait "$BPID" 2>/dev/null || true
}

case_migrate() {
  # an embedded store with a tuned version, tuning records and an alias
  local src=$DATA tok=migrate-token-123
  echo "$tok" >"$TMP/token"
  LOG="$TMP/embedded.log"
  start_daemon --token-file "$TMP/token" --on-miss tune --miss-trials 2
  M=/models/llvm/squeezenet_v1.1/1
  expect_status 503 "$BASE$M"
  job=$(jq -r .error.job.id "$TMP/body")
  wait_until 600 "job $job succeeded" job_is "$job" succeeded
  expect_status 201 -X PUT -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' \
    -d '{"version": 2}' "$BASE$M/aliases/prod"
  v2=$(sha_of "$BASE$M?version=2")
  stop_daemon
  q() { sqlite3 "$src/tunehub.db" "$1"; }
  want="$(q "SELECT count(*) FROM models")/$(q "SELECT count(*) FROM tuning_records")/$(q "SELECT count(*) FROM artifacts")"
  "$TUNEHUB" migrate --from "$src" --to "$PG_URL" >"$TMP/migrate.out" 2>"$TMP/migrate.err" \
    || fail "migrate failed: $(cat "$TMP/migrate.err")"
  grep -q "each read back from the database and hashed" "$TMP/migrate.out" || fail "no verification: $(cat "$TMP/migrate.out")"
  got="$(sql "SELECT count(*) FROM models")/$(sql "SELECT count(*) FROM tuning_records")/$(sql "SELECT count(*) FROM artifacts WHERE lo_oid IS NOT NULL")"
  [[ "$got" == "$want" ]] || fail "models/records/blobs: PostgreSQL has $got, the embedded store $want"
  # a daemon on the database with an empty cache serves the same bytes, versions and alias
  DATA=$TMP/fresh
  PORT=""
  start_daemon --db "$PG_URL" --token-file "$TMP/token"
  [[ "$(sha_of "$BASE$M?version=2")" == "$v2" ]] || fail "v2 differs after the migration"
  expect_status 200 "$BASE$M?alias=prod"
  [[ "$(header X-Tunehub-Version)" == 2 ]] || fail "alias prod serves version '$(header X-Tunehub-Version)'"
  expect_status 200 "$BASE$M/versions"
  jq -e '[.versions[] | .version] == [1, 2] and ([.versions[] | .tuned] == [false, true])' "$TMP/body" >/dev/null \
    || fail "versions: $(head -c 400 "$TMP/body")"
  stop_daemon
  # the same database again: refused, nothing changed
  expect_fail 1 "already holds" "$TUNEHUB" migrate --from "$src" --to "$PG_URL"
  # a source blob whose bytes no longer match its digest is not copied (into a new database)
  f=$(find "$src/artifacts" -type f | head -n1)
  printf 'x' | dd of="$f" bs=1 seek=100 conv=notrunc status=none
  expect_fail 1 "hashes to" "$TUNEHUB" migrate --from "$src" --to "$(pg_url second)"
}

"case_$1"
echo "PASS $1"
