#!/usr/bin/env bash
# Integration tests of aliases (PUT/DELETE/GET .../aliases, ?alias=, the OCI tag of an alias) and of
# `serve --keep-versions N` against the real daemon on 127.0.0.1. Several versions of one key come from one
# tuning job: its quick build and its tuned build (squeezenet_v1.1, batch 1, 2 trials per task).
# Usage: aliases.sh pin|retention.
source "$(dirname "$0")/lib.sh"
CASE=${1:?usage: aliases.sh pin|retention}
NET=squeezenet_v1.1
REPO=llvm/$NET
M=/models/llvm/$NET/1
SKOPEO=(skopeo --override-os linux --override-arch amd64)
command -v skopeo >/dev/null || fail "skopeo is not installed (scripts/deps.sh --test installs it)"
echo "s3cret-token-123" >"$TMP/token"
AUTH=(-H 'Authorization: Bearer s3cret-token-123')

njobs() { curl -fsS "$BASE/jobs" | jq '.jobs | length'; }
# the digest of version $1 of the key, from /versions
digest_of() { curl -fsS "$BASE$M/versions" | jq -r ".versions[] | select(.version == $1) | .digest"; }
# the first version, then a tuning job's quick and tuned builds: versions 1, 2, 3 (waits for the job to end)
build_versions() {
  expect_status 200 "$BASE$M?wait=300"
  expect_status 202 -X POST "${AUTH[@]}" -d '{"trials":2}' "$BASE$M/tune"
  local job
  job=$(jq -r .job.id "$TMP/body")
  for _ in $(seq 1 600); do
    state=$(curl -fsS "$BASE/jobs/$job" | jq -r .state)
    [[ "$state" == succeeded ]] && return 0
    [[ "$state" == queued || "$state" == running ]] || fail "tuning job $job ended $state: $(curl -s "$BASE/jobs/$job" | jq -c .error)"
    sleep 1
  done
  fail "tuning job $job did not end in 600 s"
}
# put_alias STATUS NAME BODY
put_alias() { expect_status "$1" -X PUT "${AUTH[@]}" -H 'Content-Type: application/json' -d "$3" "$BASE$M/aliases/$2"; }

case "$CASE" in
pin)
  start_daemon --token-file "$TMP/token"
  build_versions
  [[ "$(curl -fsS "$BASE$M/versions" | jq -c '[.versions[].version]')" == '[1,2,3]' ]] || fail "want versions 1..3"
  D1=$(digest_of 1)
  D2=$(digest_of 2)
  D3=$(digest_of 3)
  JOBS=$(njobs)
  # bad input: 401 without the token, 400 for a name against the rule or a bad body, 404 for an unknown version;
  # nothing is pinned and nothing queued
  expect_status 401 -X PUT -d '{"version":1}' "$BASE$M/aliases/prod"
  expect_status 401 -X PUT -H 'Authorization: Bearer wrong' -d '{"version":1}' "$BASE$M/aliases/prod"
  expect_status 401 -X DELETE "$BASE$M/aliases/prod"
  for bad in b1 b2-x Prod 1prod a..b "$(printf 'a%.0s' {1..65})"; do
    put_alias 400 "$bad" '{"version":1}'; body_has invalid_alias; body_has 'starts with a letter'
  done
  put_alias 400 prod 'not json'; body_has invalid_body
  put_alias 400 prod '{"version":1,"digest":"sha256:'"${D1#sha256:}"'"}'; body_has 'exactly one'
  put_alias 400 prod '{"version":"1"}'; body_has 'whole number'
  put_alias 400 prod '{"digest":"md5:00"}'; body_has 'sha256:'
  put_alias 400 prod '{"tag":"x"}'; body_has 'exactly one'
  put_alias 404 prod '{"version":9}'; body_has unknown_version; body_has 'published versions: 1, 2, 3'
  jq -e '.error.valid == [1,2,3]' "$TMP/body" >/dev/null || fail "404 lists no valid versions"
  put_alias 404 prod '{"digest":"sha256:'"$(printf '0%.0s' {1..64})"'"}'; body_has unknown_version
  expect_status 404 "$BASE$M?alias=prod"; body_has unknown_alias
  expect_status 400 "$BASE$M?alias=B1"; body_has invalid_alias
  expect_status 404 "$BASE/models/llvm/$NET/3?alias=prod"; body_has unknown_alias   # never built: no miss
  expect_status 404 "$BASE/v2/$REPO/manifests/prod"; body_has MANIFEST_UNKNOWN
  expect_status 405 -X POST "$BASE$M/aliases/prod"
  [[ "$(njobs)" == "$JOBS" ]] || fail "bad input queued a job: $(curl -s "$BASE/jobs")"
  expect_status 200 "$BASE$M/aliases"
  [[ "$(jq .count "$TMP/body")" == 0 ]] || fail "bad input pinned an alias: $(cat "$TMP/body")"

  # pin v1: HTTP (GET, HEAD, manifest) and OCI resolve it while the newest is v3
  put_alias 201 prod '{"version":1}'
  jq -e '.alias == "prod" and .version == 1 and .previous == null and .oci == "'"$REPO"':prod"' "$TMP/body" \
    >/dev/null || fail "PUT answer: $(cat "$TMP/body")"
  [[ "$(header Location)" == "$M/aliases/prod" ]] || fail "Location $(header Location)"
  expect_status 200 "$BASE$M?alias=prod"
  [[ "sha256:$(sha256sum "$TMP/body" | cut -d' ' -f1)" == "$D1" ]] || fail "?alias=prod is not v1's bundle"
  [[ "$(header X-Tunehub-Version)" == 1 && "$(header X-Tunehub-Alias)" == prod ]] || fail "alias headers"
  [[ "$(header ETag)" == "\"$D1\"" ]] || fail "ETag $(header ETag)"
  expect_status 200 -I "$BASE$M?alias=prod"
  [[ "$(header X-Tunehub-Version)" == 1 ]] || fail "HEAD ?alias=prod"
  expect_status 200 "$BASE$M?alias=prod&format=so"
  [[ "$(header X-Tunehub-Version)" == 1 ]] || fail "?alias=prod&format=so"
  expect_status 400 "$BASE$M?alias=prod&tuned=1"; body_has 'do not go together'
  expect_status 200 "$BASE$M/manifest?alias=prod"
  [[ "$(header ETag)" == "\"$D1\"" ]] || fail "manifest?alias=prod is not v1's"
  expect_status 200 "$BASE$M"
  [[ "$(header X-Tunehub-Version)" == 3 ]] || fail "the plain route is not the newest"
  "${SKOPEO[@]}" inspect --raw --tls-verify=false "docker://127.0.0.1:$PORT/$REPO:prod" >"$TMP/raw.json"
  [[ "$(jq -r '.layers[0].digest' "$TMP/raw.json")" == "$D1" ]] || fail "OCI prod is not v1: $(cat "$TMP/raw.json")"
  "${SKOPEO[@]}" inspect --raw --tls-verify=false "docker://127.0.0.1:$PORT/$REPO:b1-v1" >"$TMP/raw_v1.json"
  cmp -s "$TMP/raw.json" "$TMP/raw_v1.json" || fail "prod and b1-v1 are not the same manifest"
  "${SKOPEO[@]}" inspect --tls-verify=false "docker://127.0.0.1:$PORT/$REPO:prod" >"$TMP/inspect.json"
  jq -e '(.RepoTags | index("prod")) and .Labels["dev.tunehub.network"] == "'"$NET"'"' "$TMP/inspect.json" >/dev/null ||
    fail "skopeo inspect: $(cat "$TMP/inspect.json")"
  [[ "$(jq -r '.Layers[0]' "$TMP/inspect.json")" == "$D1" ]] || fail "inspect's layer"
  "${SKOPEO[@]}" list-tags --tls-verify=false "docker://127.0.0.1:$PORT/$REPO" >"$TMP/tags.json"
  [[ "$(jq -c '.Tags | sort' "$TMP/tags.json")" == '["b1","b1-v1","b1-v2","b1-v3","prod"]' ]] ||
    fail "list-tags: $(cat "$TMP/tags.json")"
  # /versions names it on v1, and lists it
  expect_status 200 "$BASE$M/versions"
  jq -e '.versions[0].aliases == ["prod"] and .versions[2].aliases == [] and .aliases[0].alias == "prod"' \
    "$TMP/body" >/dev/null || fail "versions: $(jq -c . "$TMP/body")"

  # move by digest (v2), then by number (v3): the same name follows, over HTTP and OCI
  put_alias 200 prod '{"digest":"'"$D2"'"}'
  jq -e '.version == 2 and .previous == 1' "$TMP/body" >/dev/null || fail "move answer: $(cat "$TMP/body")"
  expect_status 200 "$BASE$M?alias=prod"
  [[ "sha256:$(sha256sum "$TMP/body" | cut -d' ' -f1)" == "$D2" ]] || fail "moved ?alias=prod is not v2"
  "${SKOPEO[@]}" inspect --raw --tls-verify=false "docker://127.0.0.1:$PORT/$REPO:prod" >"$TMP/raw.json"
  [[ "$(jq -r '.layers[0].digest' "$TMP/raw.json")" == "$D2" ]] || fail "moved OCI prod is not v2"
  put_alias 201 staging '{"version":3}'
  expect_status 200 "$BASE$M/aliases/staging"
  jq -e '.version == 3 and .digest == "'"$D3"'" and .retired == false' "$TMP/body" >/dev/null || fail "GET alias"
  expect_status 200 "$BASE$M/aliases"
  [[ "$(jq -c '[.aliases[] | [.alias, .version]]' "$TMP/body")" == '[["prod",2],["staging",3]]' ]] ||
    fail "aliases: $(cat "$TMP/body")"

  # delete: gone by HTTP and OCI
  expect_status 200 -X DELETE "${AUTH[@]}" "$BASE$M/aliases/staging"
  jq -e '.deleted == "staging" and .version == 3' "$TMP/body" >/dev/null || fail "DELETE answer: $(cat "$TMP/body")"
  expect_status 404 -X DELETE "${AUTH[@]}" "$BASE$M/aliases/staging"; body_has unknown_alias
  expect_status 404 "$BASE$M?alias=staging"; body_has 'its aliases: prod'
  expect_status 404 "$BASE/v2/$REPO/manifests/staging"; body_has MANIFEST_UNKNOWN
  "${SKOPEO[@]}" list-tags --tls-verify=false "docker://127.0.0.1:$PORT/$REPO" >"$TMP/tags.json"
  [[ "$(jq -c '.Tags | sort' "$TMP/tags.json")" == '["b1","b1-v1","b1-v2","b1-v3","prod"]' ]] ||
    fail "list-tags after delete: $(cat "$TMP/tags.json")"

  # a version unpublished under an alias: 410 saying so (HTTP), 404 naming it (OCI); moving it needs a version
  expect_status 200 -X DELETE "${AUTH[@]}" "$BASE$M"
  expect_status 410 "$BASE$M?alias=prod"; body_has alias_retired; body_has 'pins version 2'
  expect_status 404 "$BASE/v2/$REPO/manifests/prod"; body_has 'was retired'
  put_alias 404 prod '{"version":3}'; body_has 'published versions: none'
  [[ "$(njobs)" == "$JOBS" ]] || fail "the alias routes queued a job: $(curl -s "$BASE/jobs")"
  ;;
retention)
  start_daemon --token-file "$TMP/token" --keep-versions 1
  expect_status 200 "$BASE$M?wait=300"
  put_alias 201 prod '{"version":1}'
  D1=$(digest_of 1)
  # the tuning job publishes v2 (quick) and v3 (tuned); with --keep-versions 1, v2 goes when v3 comes, and v1
  # stays because prod pins it
  expect_status 202 -X POST "${AUTH[@]}" -d '{"trials":2}' "$BASE$M/tune"
  job=$(jq -r .job.id "$TMP/body")
  for _ in $(seq 1 600); do
    state=$(curl -fsS "$BASE/jobs/$job" | jq -r .state)
    [[ "$state" == queued || "$state" == running ]] || break
    sleep 1
  done
  [[ "$state" == succeeded ]] || fail "tuning job $job ended $state"
  grep -q 'retention: 1 old version(s) of llvm/squeezenet_v1.1/1 unpublished' "$LOG" || fail "no retention in the log"
  expect_status 200 "$BASE$M/versions"
  [[ "$(jq -c '[.versions[].version]' "$TMP/body")" == '[1,3]' ]] || fail "retention kept $(jq -c '[.versions[].version]' "$TMP/body")"
  expect_status 200 "$BASE$M?alias=prod"
  [[ "sha256:$(sha256sum "$TMP/body" | cut -d' ' -f1)" == "$D1" ]] || fail "the aliased v1 is gone"
  expect_status 200 "$BASE$M"
  [[ "$(header X-Tunehub-Version)" == 3 ]] || fail "the newest is not v3"
  expect_status 404 "$BASE/v2/$REPO/manifests/b1-v2"; body_has MANIFEST_UNKNOWN
  # the unpublished version's blob stays (a garbage collector removes it)
  read -r STATE2 D2 < <(store_sql -F ' ' "SELECT state, tar_digest FROM models WHERE version = 2")
  [[ "$STATE2" == deleted && -n "$D2" ]] || fail "v2 is '$STATE2', not deleted"
  expect_status 200 "$BASE/blobs/sha256:$D2"
  [[ "$(sha256sum "$TMP/body" | cut -d' ' -f1)" == "$D2" ]] || fail "v2's blob is gone"
  ;;
*) fail "unknown case $CASE" ;;
esac
echo "PASS aliases.$CASE"
