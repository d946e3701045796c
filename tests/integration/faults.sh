#!/usr/bin/env bash
# Fault-injection tests against the real daemon on 127.0.0.1 (real SQLite file, real HTTP): kill -9 at random
# moments, a data directory that fills up, another process holding SQLite's write lock, the measurement worker
# killed from outside. After each: no accepted job is lost, no partial or duplicate version is visible, and
# PRAGMA integrity_check is ok. Usage: faults.sh CASE, with TUNEHUB set to the binary. The faults are the
# embedded store's (a SQLite file, a local data dir), so the PostgreSQL twins skip.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
[[ -z "${TH_TEST_DB:-}" ]] || { echo "SKIP: the faults are the embedded SQLite store's"; exit 77; }
TOKEN="faults-token-123"
auth=(-H "Authorization: Bearer $TOKEN")
echo "$TOKEN" >"$TMP/tokens"
SMALL=/models/llvm/small

# upload_small: PUT /networks/small, a network that builds in about a second and tunes in a few
# (onnx_models.py small), so that a cycle of a fault test is short
upload_small() {
  /usr/bin/python3 "$here/onnx_models.py" small "$TMP/small.onnx" || fail "cannot write small.onnx"
  expect_status 201 -X PUT "${auth[@]}" --data-binary "@$TMP/small.onnx" "$BASE/networks/small"
}

kill9_daemon() {
  kill -9 "$PID"
  wait "$PID" 2>/dev/null || true
  PID=""
}

# integrity_ok: PRAGMA integrity_check of the store says ok
integrity_ok() {
  local r
  r=$(sqlite3 "$DATA/tunehub.db" "PRAGMA integrity_check") || fail "integrity_check did not run"
  [[ "$r" == ok ]] || fail "integrity_check: $r"
}

# versions_ok: what a client can see is whole. Each key's versions are 1..n, without a gap or a duplicate;
# every version's files are there and hash to their names (a partial file would not); no job published more
# than its two versions (quick and tuned).
versions_ok() {
  local bad
  bad=$(store_sql "SELECT network || '/' || batch || '/' || target, group_concat(version) FROM models
    GROUP BY framework, network, batch, target, compiler_version
    HAVING min(version) <> 1 OR max(version) <> count(*) OR count(DISTINCT version) <> count(*)")
  [[ -z "$bad" ]] || fail "versions with a gap or a duplicate: $bad"
  bad=$(store_sql "SELECT job_id, count(*) FROM models GROUP BY job_id HAVING count(*) > 2")
  [[ -z "$bad" ]] || fail "jobs that published more than two versions (job|versions): $bad"
  local d f
  for d in $(store_sql "SELECT tar_digest FROM models UNION SELECT so_digest FROM models"); do
    f="$DATA/artifacts/${d:0:2}/$d"
    [[ -f "$f" ]] || fail "a published version's file is missing: $f"
    [[ "$(sha256sum "$f" | cut -d' ' -f1)" == "$d" ]] || fail "partial or wrong artifact $f"
  done
}

# download_ok DIGEST: GET /blobs/sha256:DIGEST answers 200 with bytes that hash to DIGEST, which is also the ETag
download_ok() {
  expect_status 200 "$BASE/blobs/sha256:$1"
  local got
  got=$(sha256sum "$TMP/body" | cut -d' ' -f1)
  [[ "$got" == "$1" ]] || fail "blob sha256:$1 downloads as sha256:$got"
  [[ "$(header ETag)" == "\"sha256:$got\"" ]] || fail "blob sha256:$1: ETag $(header ETag), bytes sha256:$got"
}

# model_ok PATH: GET PATH answers 200 with a bundle whose sha256 is its ETag
model_ok() {
  expect_status 200 "$BASE$1"
  local got
  got=$(sha256sum "$TMP/body" | cut -d' ' -f1)
  [[ "$(header ETag)" == "\"sha256:$got\"" ]] || fail "$1: ETag $(header ETag), bytes sha256:$got"
}

# job_of: the job id in the last body (a 503 miss: .error.job.id; a 202: .job.id), or nothing
job_of() {
  jq -r '(.error.job.id // .job.id // empty)' "$TMP/body" 2>/dev/null || true
}

# ---- 20 kill -9 at random moments of build, tune and publish ----
# Keys: the small network at batch 1..4 (quick build about 1 s, tuning a few s, then the tuned rebuild), and
# squeezenet_v1.1/1 for another machine's target (x86-64-v2: built untuned, a compile of about 15 s that the
# kills interrupt again and again). Each cycle starts the daemon on the same data dir, sends a miss or a tune
# request to a random key, waits a random 0.2 to 4 s (seeded: TH_FAULT_SEED=N repeats a run), and kills it.
case_kill9_x20() {
  local seed=${TH_FAULT_SEED:-$(($(date +%s%N) / 1000 % 32768))}
  RANDOM=$seed
  echo "seed $seed (TH_FAULT_SEED=$seed repeats these delays and requests)"
  local t0=$SECONDS kills=0 req=0 aimed=0
  local -a keys=("$SMALL/1" "$SMALL/2" "$SMALL/3" "$SMALL/4" "/models/llvm/squeezenet_v1.1/1?target=x86-64-v2")
  local serve=(--on-miss tune --miss-trials 6 --token-file "$TMP/tokens")
  : >"$TMP/accepted"
  : >"$TMP/stages"
  start_daemon "${serve[@]}"
  upload_small
  for kills in $(seq 1 20); do
    ((kills == 1)) || start_daemon "${serve[@]}"
    local n k code id plan=""
    # (RANDOM is drawn here, not inside $(...): a subshell's draws come from a reseeded generator)
    local nreq=$((RANDOM % 2 + 1))
    for n in $(seq 1 "$nreq"); do
      k=${keys[$((RANDOM % ${#keys[@]}))]}
      req=$((req + 1))
      if ((RANDOM % 2 == 0)) && [[ "$k" == "$SMALL"/* ]]; then
        # a new tune job on a key that may have versions already: more versions, more publishes to interrupt
        code=$(curl -sS -o "$TMP/body" -w '%{http_code}' -X POST "${auth[@]}" -d '{"trials":4}' "$BASE$k/tune") || true
      else
        code=$(curl -sS -o "$TMP/body" -w '%{http_code}' "$BASE$k") || true
      fi
      id=$(job_of)
      case "$code" in
        202 | 503) [[ -n "$id" ]] || fail "$k answered $code without a job: $(head -c 300 "$TMP/body")" ;;
        200) id="" ;;
        *) fail "request $req ($k) -> $code: $(head -c 300 "$TMP/body")" ;;
      esac
      [[ -z "$id" ]] || echo "$id" >>"$TMP/accepted"
      plan+=" $k:$code${id:+:job$id}"
    done
    local ms=$((200 + RANDOM % 3800)) aim=$((RANDOM % 4 == 0)) what
    if ((aim)); then
      # aimed at a publish: a random 0 to 100 ms after the next "published" line (the window between the
      # version's commit and the job's next step, where a resumed job could publish the same build twice), or
      # after 4 s when none comes by then
      local from=$(($(wc -l <"$LOG") + 1)) waited=0 after=$((RANDOM % 100))
      ms=4000
      what="at ${after} ms after a publish"
      while ((waited < ms)); do
        sed -n "$from,\$p" "$LOG" >"$TMP/cycle.log"
        grep published "$TMP/cycle.log" >/dev/null && break
        sleep 0.02
        waited=$((waited + 20))
      done
      if ((waited < ms)); then
        sleep "0.$(printf '%03d' "$after")"
        aimed=$((aimed + 1))
      else
        what="after $ms ms (no publish came)"
      fi
    else
      what="after $ms ms"
      sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
    fi
    # where the kill lands: the stage of every running job (quick, tune, rebuild: publish ends quick and rebuild)
    curl -s "$BASE/jobs?state=running" | jq -r '.jobs[] | "\(.id):\(if .stage == "" then "claimed" else .stage | gsub(" "; "_") end)"' >>"$TMP/stages" 2>/dev/null || true
    echo "--- kill $kills $what ---" >>"$LOG"
    echo "kill $kills $what:$plan"
    kill9_daemon
    # what the crash left is whole: this is what the next start (and every client) sees
    integrity_ok
    versions_ok
  done
  local kill_s=$((SECONDS - t0))
  start_daemon "${serve[@]}"
  sort -un "$TMP/accepted" >"$TMP/ids"
  local id_list
  id_list=$(paste -sd, "$TMP/ids")
  # every accepted job finishes after the last restart; the deadline is generous for a loaded machine, the
  # outcome exact: each one succeeded
  for _ in $(seq 1 600); do
    [[ "$(store_sql "SELECT count(*) FROM jobs WHERE state IN ('queued', 'running')")" == 0 ]] && break
    sleep 0.5
  done
  local left
  left=$(store_sql "SELECT id, state, stage FROM jobs WHERE id IN ($id_list) AND state <> 'succeeded'")
  [[ -z "$left" ]] || fail "accepted jobs that did not succeed (id|state|stage): $left"
  # nothing was queued that no answer accepted, and nothing accepted is missing
  [[ "$(store_sql "SELECT id FROM jobs ORDER BY id")" == "$(cat "$TMP/ids")" ]] ||
    fail "jobs in the store ($(store_sql "SELECT group_concat(id) FROM jobs")) are not the accepted ones ($id_list)"
  # a tune job of this server's own target published its quick and its tuned build; the other target's, one
  local wrong
  wrong=$(store_sql "SELECT j.id, j.network, count(m.id) FROM jobs j LEFT JOIN models m ON m.job_id = j.id
    GROUP BY j.id HAVING count(m.id) <> (CASE WHEN j.network = 'small' THEN 2 ELSE 1 END)")
  [[ -z "$wrong" ]] || fail "jobs with the wrong number of versions (id|network|versions): $wrong"
  versions_ok
  local d
  for d in $(store_sql "SELECT tar_digest FROM models"); do download_ok "$d"; done
  for k in "${keys[@]}"; do model_ok "$k"; done
  [[ -z "$(ls -A "$DATA/tmp")" ]] || fail "temp files left behind: $(ls -A "$DATA/tmp")"
  stop_daemon
  integrity_ok
  local stages
  stages=$(cut -d: -f2 "$TMP/stages" | sort | uniq -c | tr -s ' \n' ' ')
  echo "kills: $kills in ${kill_s} s ($aimed of them just after a publish; $req requests); jobs accepted: $(wc -l <"$TMP/ids"), all succeeded" \
    "(attempts: $(store_sql "SELECT sum(attempts) FROM jobs")); versions:" \
    "$(store_sql "SELECT network || '/' || batch || ' v1..' || max(version) FROM models GROUP BY network, batch" |
      paste -sd' ')"
  echo "running stages at the kills: ${stages:-none}; total $((SECONDS - t0)) s"
}

# ---- another process holds SQLite's write lock for 10 s ----
# A miss needs a write (it queues a job): it answers 503 with Retry-After within a few seconds, never a 500 and
# never a hang for the lock's whole time; reads of what is published (a hit, the catalog, /healthz) keep working
# throughout. After the lock goes, a miss succeeds and every job an answer accepted is there and finishes.
case_sqlite_write_lock() {
  start_daemon --token-file "$TMP/tokens"
  upload_small
  model_ok "$SMALL/1?wait=120"
  local sha1
  sha1=$(sha256sum "$TMP/body" | cut -d' ' -f1)
  # the holder: BEGIN IMMEDIATE (SQLite's write lock, as a writer of another process takes it), 10 s, COMMIT
  /usr/bin/python3 -c '
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=0)
c.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
time.sleep(10)
c.execute("COMMIT")
print("released", flush=True)' "$DATA/tunehub.db" >"$TMP/holder" 2>&1 &
  local holder=$!
  for _ in $(seq 1 100); do
    grep locked "$TMP/holder" >/dev/null && break
    sleep 0.05
  done
  grep locked "$TMP/holder" >/dev/null || fail "the lock holder did not start: $(cat "$TMP/holder")"
  local t_lock=$SECONDS misses=0 reads=0 slowest=0 read_max=0 t code
  : >"$TMP/accepted"
  while kill -0 "$holder" 2>/dev/null && ((SECONDS - t_lock < 9)); do
    # a miss on a new key, and reads of the published one, each timed (a read runs while the miss waits)
    curl -sS -o "$TMP/miss.body" -D "$TMP/miss.headers" -w '%{http_code} %{time_total}\n' \
      "$BASE$SMALL/$((2 + misses % 3))" >"$TMP/miss.out" 2>&1 &
    local mpid=$!
    sleep 0.2
    for path in "$SMALL/1" /healthz /models; do
      t=$(curl -sS -o "$TMP/body" -D "$TMP/headers" -w '%{http_code} %{time_total}' "$BASE$path") || true
      [[ "${t%% *}" == 200 ]] || fail "GET $path while the lock is held -> $t: $(head -c 300 "$TMP/body")"
      [[ "$path" != "$SMALL/1" || "$(sha256sum "$TMP/body" | cut -d' ' -f1)" == "$sha1" ]] ||
        fail "the published model changed while the lock was held"
      awk -v t="${t#* }" 'BEGIN { exit !(t < 5) }' || fail "GET $path took ${t#* } s while the lock was held"
      reads=$((reads + 1))
      awk -v t="${t#* }" -v m="$read_max" 'BEGIN { exit !(t > m) }' && read_max=${t#* }
    done
    wait "$mpid" || true
    read -r code t <"$TMP/miss.out" || fail "the miss got no answer: $(cat "$TMP/miss.out")"
    misses=$((misses + 1))
    echo "miss $misses: $code in $t s: $(head -c 200 "$TMP/miss.body")"
    awk -v t="$t" 'BEGIN { exit !(t < 5) }' || fail "a miss waited ${t} s for the lock (a few seconds at most)"
    [[ "$code" == 503 ]] || fail "a miss while the lock is held -> $code, want 503"
    grep -i '^Retry-After:' "$TMP/miss.headers" >/dev/null || fail "a 503 without Retry-After"
    jq -r '.error.job.id // empty' "$TMP/miss.body" >>"$TMP/accepted"
    ((slowest < ${t%.*})) && slowest=${t%.*}
  done
  ((misses >= 2)) || fail "only $misses misses were answered in the lock's 10 s"
  wait "$holder" || fail "the lock holder failed: $(cat "$TMP/holder")"
  # the lock is gone: a miss succeeds, and every job that was accepted meanwhile finishes
  model_ok "$SMALL/2?wait=120"
  for id in $(sort -u "$TMP/accepted"); do
    wait_job "$id" succeeded 120
    expect_status 200 "$BASE/jobs/$id"
    body_has '"state":"succeeded"'
  done
  [[ "$(store_sql "SELECT count(*) FROM jobs WHERE state <> 'succeeded'")" == 0 ]] ||
    fail "jobs that did not succeed: $(store_sql "SELECT id, state, error FROM jobs WHERE state <> 'succeeded'")"
  versions_ok
  stop_daemon
  integrity_ok
  echo "lock held 10 s: $misses misses answered 503 (slowest ${slowest}+ s), $reads reads served (slowest ${read_max} s);" \
    "accepted jobs: $(sort -u "$TMP/accepted" | wc -l), all succeeded"
}

# descendants PID: the daemon's descendants as "pid argv...", children first
descendants() {
  local k
  for k in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
    echo "$k $(tr '\0' ' ' </proc/"$k"/cmdline 2>/dev/null)"
    descendants "$k"
  done
}

# ---- the measurement worker killed from outside, mid-trial ----
# kill -9 of the worker process (`tunehub measure-worker`, exec'd as /proc/self/exe; not a build-worker) while a tuning
# job times its candidates, twice: the trial in flight is lost, the scheduler starts a fresh worker, tuning goes
# on, the job succeeds and publishes its tuned version, and the log says the worker died.
case_measure_worker_killed() {
  start_daemon --on-miss tune --miss-trials 64 --token-file "$TMP/tokens"
  upload_small
  expect_status 503 "$BASE$SMALL/1"
  local job killed=0 victim="" w n stored=0
  job=$(job_of)
  for _ in $(seq 1 1200); do # at most about 2 min on a loaded machine
    w=$(descendants "$PID" | awk '$3 == "measure-worker" { print $1; exit }')
    # mid-trial: the job is tuning and has stored a trial since the last kill (so the fresh worker has made
    # the task's reference and measures), and a worker other than the one killed last runs
    n=$(store_sql "SELECT count(*) FROM tuning_records WHERE job_id = $job")
    if [[ -n "$w" && "$w" != "$victim" ]] && ((n > stored)); then
      kill -9 "$w" 2>/dev/null && { killed=$((killed + 1)); victim=$w; stored=$n; echo "killed measurement worker $w"; }
      ((killed == 2)) && break
    fi
    [[ "$(store_sql "SELECT state FROM jobs WHERE id = $job")" == running ]] || break
    sleep 0.1
  done
  ((killed == 2)) || fail "caught the measurement worker $killed times, not twice, while job $job tuned"
  local before
  before=$(store_sql "SELECT count(*) FROM tuning_records WHERE job_id = $job")
  wait_job "$job" succeeded 300
  expect_status 200 "$BASE/jobs/$job"
  jq -e '.state == "succeeded" and .attempts == 1' "$TMP/body" >/dev/null || fail "job: $(head -c 400 "$TMP/body")"
  # tuning went on after the second kill: more trials were stored, and the tuned version is out
  local after
  after=$(store_sql "SELECT count(*) FROM tuning_records WHERE job_id = $job")
  ((after > before)) || fail "no trial was stored after the worker was killed ($before before, $after after)"
  model_ok "$SMALL/1?tuned=1"
  [[ "$(header X-Tunehub-Version)" == 2 && "$(header X-Tunehub-Tuned)" == true ]] ||
    fail "no tuned v2: version $(header X-Tunehub-Version), tuned $(header X-Tunehub-Tuned)"
  local said
  said=$(grep -cE "measurement worker died( [0-9]+ times)? \((the last: )?worker killed by signal 9" "$LOG" || true)
  # (a kill that lands after the worker's last trial is never noticed by a request: at least the first is)
  ((said >= 1)) || fail "the log never says that the measurement worker died"
  versions_ok
  stop_daemon
  integrity_ok
  echo "worker killed twice mid-trial: $before trials stored by the second kill, $after in all;" \
    "job succeeded in one attempt with tuned v2; the log said so $said time(s)"
}

# ---- the data directory on a small tmpfs that fills up ----
# A build that cannot be written fails with a clear error (no space), leaves nothing partial (no temp file, no
# artifact file that no version names), and the daemon keeps serving what it has; once space is freed, a new
# miss succeeds. Needs root to mount the tmpfs (skips otherwise).
# (It found that such a build failed with only "llvm build failed: i/o error": the compiler's file writes
# (tc__write) set no message. They now name the file and errno's "No space left on device".)
case_disk_full() {
  [[ "$(id -u)" == 0 ]] || { echo "SKIP: mounting a tmpfs needs root (id -u is $(id -u))"; exit 77; }
  mkdir -p "$DATA"
  mount -t tmpfs -o size=24m tmpfs "$DATA" 2>"$TMP/mount.err" ||
    { echo "SKIP: cannot mount a tmpfs: $(cat "$TMP/mount.err")"; exit 77; }
  trap 'rc=$?; stop_daemon; umount -l "$DATA" 2>/dev/null; (exit $rc); cleanup' EXIT
  # no free-space floor: this case is about the writes themselves failing (the floor is integration.guard_min_free's)
  start_daemon --token-file "$TMP/tokens" --min-free 0
  upload_small
  model_ok "$SMALL/1?wait=120"
  local sha1
  sha1=$(sha256sum "$TMP/body" | cut -d' ' -f1)
  # fill it, leaving 256 KiB: room for the database's own writes, none for squeezenet's 5 MB of weights
  local avail
  avail=$(df --output=avail -B1 "$DATA" | tail -n1)
  head -c "$((avail - 262144))" /dev/zero >"$DATA/filler" || true
  echo "free after filling: $(df --output=avail -B1 "$DATA" | tail -n1) bytes"
  local code job
  code=$(curl -sS -o "$TMP/body" -w '%{http_code}' "$BASE/models/llvm/squeezenet_v1.1/1") || true
  echo "miss on a full disk: $code $(head -c 300 "$TMP/body")"
  job=$(job_of)
  if [[ -n "$job" ]]; then
    [[ "$code" == 503 ]] || fail "a miss with a job answered $code"
    wait_job "$job" failed 180
    expect_status 200 "$BASE/jobs/$job"
    jq -e '.state == "failed"' "$TMP/body" >/dev/null || fail "the build on a full disk: $(head -c 400 "$TMP/body")"
    jq -e '.error | test("No space left on device|disk is full|ENOSPC"; "i")' "$TMP/body" >/dev/null ||
      fail "the failed build does not say the disk is full: $(jq -r .error "$TMP/body")"
    echo "job $job failed: $(jq -r .error "$TMP/body" | head -c 300)"
  else
    # the database itself could not grow: a clear 5xx, never a crash
    [[ "$code" == 5* ]] || fail "a miss on a full disk answered $code without a job"
    grep -Ei "full|space" "$TMP/body" >/dev/null || fail "the $code does not say the disk is full"
  fi
  kill -0 "$PID" || fail "the daemon died on a full disk"
  # nothing partial stays
  [[ -z "$(ls -A "$DATA/tmp")" ]] || fail "temp files left behind: $(ls -A "$DATA/tmp")"
  store_sql "SELECT digest FROM artifacts" | sort >"$TMP/rows"
  find "$DATA/artifacts" -type f -printf '%f\n' | sort >"$TMP/files"
  [[ "$(comm -13 "$TMP/rows" "$TMP/files")" == "" ]] ||
    fail "artifact files that no row names: $(comm -13 "$TMP/rows" "$TMP/files")"
  # what it has, it still serves
  expect_status 200 "$BASE/healthz"
  model_ok "$SMALL/1"
  [[ "$(sha256sum "$TMP/body" | cut -d' ' -f1)" == "$sha1" ]] || fail "the published model changed"
  # space again: a new miss succeeds
  rm -f "$DATA/filler"
  model_ok "$SMALL/2?wait=120"
  versions_ok
  stop_daemon
  integrity_ok
}

"case_$1"
echo "PASS $1"
