#!/usr/bin/env bash
# Connection loss (issue 24): a daemon on PostgreSQL whose database goes away answers every request that needs
# the store with 503, Retry-After and {"error":{"code":"database_unavailable"}}, reports not ready, stays alive
# (liveness), queues nothing, and serves again by itself once the database is back (the store reconnects with
# backoff). The server is this test's own (use_private_pg), since the fault stops it.
# Usage: db_loss.sh CASE, with TUNEHUB set to the binary.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../integration/lib.sh"
M="/models/llvm/squeezenet_v1.1/1"

# expect_unavailable PATH: the 503 of a store whose database is away
expect_unavailable() {
  expect_status 503 "$BASE$1"
  [[ -n "$(header Retry-After)" ]] || fail "$1: a 503 without Retry-After"
  jq -e '.error.code == "database_unavailable" and .error.status == 503
    and (.error.message | test("unavailable|cannot connect"))' "$TMP/body" >/dev/null ||
    fail "$1: $(head -c 400 "$TMP/body")"
}

case_outage() {
  use_private_pg
  start_daemon
  expect_status 200 "$BASE$M?wait=300"
  local digest
  digest=$(sha256sum "$TMP/body" | cut -d' ' -f1)

  pg_stop
  expect_unavailable /models
  expect_unavailable "$M"
  expect_unavailable "/models/llvm/resnet-18/1" # a miss: nothing can be queued, and it says so
  expect_unavailable /jobs
  expect_unavailable "/blobs/sha256:$digest"
  expect_status 503 "$BASE/readyz"
  body_has '"code":"not_ready"'
  [[ -n "$(header Retry-After)" ]] || fail "/readyz: a 503 without Retry-After"
  expect_status 200 "$BASE/healthz" # alive: a restart would not bring the database back
  sleep 2                            # a few reconnect attempts fail meanwhile
  expect_unavailable /models
  kill -0 "$PID" || fail "the daemon died with its database"

  pg_up
  wait_ready /readyz 20
  expect_status 200 "$BASE/models"
  jq -e '.count == 1' "$TMP/body" >/dev/null || fail "catalog after the outage: $(head -c 300 "$TMP/body")"
  expect_status 200 "$BASE$M"
  [[ "$(sha256sum "$TMP/body" | cut -d' ' -f1)" == "$digest" ]] || fail "another bundle after the outage"
  expect_status 200 "$BASE/blobs/sha256:$digest"
  expect_status 200 "$BASE/jobs"
  jq -e '.count == 1' "$TMP/body" >/dev/null || fail "a job was queued while the database was away"
}

# The database restarts in the middle of a tuning job: requests answer 503 meanwhile; the job loses nothing
# (it goes back to the queue when the database answers, is claimed again and resumes from its records), and
# ends with exactly v1 (the quick build) and v2 (tuned), no config tried twice in a task.
case_mid_job() {
  use_private_pg
  start_daemon --on-miss tune --miss-trials 8
  expect_status 503 "$BASE$M"
  local job
  job=$(jq -r .error.job.id "$TMP/body")
  expect_status 200 "$BASE$M?wait=120" # v1, then tuning
  local n=0
  for _ in $(seq 1 600); do
    n=$(store_sql "SELECT count(*) FROM tuning_records WHERE job_id = $job")
    ((n >= 5)) && break
    sleep 0.1
  done
  ((n >= 5)) || fail "tuning recorded only $n trials in 60 s"
  pg_stop
  expect_unavailable "/jobs/$job"
  sleep 3
  pg_up
  wait_ready /readyz 20
  expect_status 200 "$BASE$M?tuned=1&wait=600"
  [[ "$(header Content-Disposition)" == *"_v2.tar"* ]] || fail "the tuned answer is not v2"
  expect_status 200 "$BASE/jobs/$job"
  jq -e '.state == "succeeded" and .attempts == 2' "$TMP/body" >/dev/null || fail "job: $(head -c 400 "$TMP/body")"
  grep -q "job $job: back in the queue" "$LOG" || fail "the job was not requeued by its daemon"
  expect_status 200 "$BASE$M/versions"
  jq -e '[.versions[].version] == [1, 2]' "$TMP/body" >/dev/null || fail "versions: $(head -c 400 "$TMP/body")"
  local dup
  dup=$(store_sql "SELECT workload_key, config FROM tuning_records WHERE job_id = $job AND tuner <> 'verify'
    GROUP BY workload_key, target, config HAVING count(*) > 1")
  [[ -z "$dup" ]] || fail "configs tried twice in one task: $dup"
}

"case_$1"
echo "PASS $1"
