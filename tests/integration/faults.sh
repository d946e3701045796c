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

"case_$1"
echo "PASS $1"
