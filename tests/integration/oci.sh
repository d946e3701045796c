#!/usr/bin/env bash
# Integration tests of the OCI distribution API (pull side, server/oci.c) against the real daemon on
# 127.0.0.1, with skopeo as the client a deployment pipeline would use. Usage: oci.sh CASE.
source "$(dirname "$0")/lib.sh"
CASE=${1:?usage: oci.sh skopeo|errors|digests|targets}
NET=squeezenet_v1.1
REPO=llvm/$NET
SKOPEO=(skopeo --override-os linux --override-arch amd64)
command -v skopeo >/dev/null || fail "skopeo is not installed (scripts/deps.sh --test installs it)"

# build NET at batch 1 through the registry and leave its bundle digest in $DIGEST
build_b1() {
  expect_status 200 "$BASE/models/llvm/$NET/1?wait=300"
  DIGEST=$(sha256sum "$TMP/body" | cut -d' ' -f1)
  [[ "$(header ETag)" == "\"sha256:$DIGEST\"" ]] || fail "ETag $(header ETag) is not the body's sha256 $DIGEST"
}

case "$CASE" in
skopeo)
  start_daemon
  expect_status 200 "$BASE/v2/"
  [[ "$(header Docker-Distribution-API-Version)" == "registry/2.0" ]] || fail "no Docker-Distribution-API-Version"
  build_b1
  # inspect --raw: the OCI manifest, one uncompressed tar layer that is the bundle itself
  "${SKOPEO[@]}" inspect --raw --tls-verify=false "docker://127.0.0.1:$PORT/$REPO:b1" >"$TMP/raw.json"
  jq -e '.schemaVersion == 2 and .mediaType == "application/vnd.oci.image.manifest.v1+json"' "$TMP/raw.json" >/dev/null ||
    fail "not an OCI manifest: $(cat "$TMP/raw.json")"
  [[ "$(jq -r '.layers | length' "$TMP/raw.json")" == 1 ]] || fail "want one layer: $(cat "$TMP/raw.json")"
  [[ "$(jq -r '.layers[0].digest' "$TMP/raw.json")" == "sha256:$DIGEST" ]] || fail "layer is not the bundle"
  [[ "$(jq -r '.layers[0].mediaType' "$TMP/raw.json")" == "application/vnd.oci.image.layer.v1.tar" ]] ||
    fail "layer media type: $(jq -r '.layers[0].mediaType' "$TMP/raw.json")"
  [[ "$(jq -r '.annotations["dev.tunehub.network"]' "$TMP/raw.json")" == "$NET" ]] || fail "no network annotation"
  [[ "$(jq -r '.annotations["dev.tunehub.tuned"]' "$TMP/raw.json")" == false ]] || fail "tuned annotation"
  # inspect: tags, architecture and labels through the config
  "${SKOPEO[@]}" inspect --tls-verify=false "docker://127.0.0.1:$PORT/$REPO:b1" >"$TMP/inspect.json"
  jq -e '.Os == "linux" and (.RepoTags | index("b1")) and (.RepoTags | index("b1-v1"))' "$TMP/inspect.json" \
    >/dev/null || fail "skopeo inspect: $(cat "$TMP/inspect.json")"
  [[ "$(jq -r '.Layers[0]' "$TMP/inspect.json")" == "sha256:$DIGEST" ]] || fail "inspect's layer"
  # copy to an OCI layout: the layer file is byte for byte the bundle
  "${SKOPEO[@]}" copy --src-tls-verify=false --dest-oci-accept-uncompressed-layers \
    "docker://127.0.0.1:$PORT/$REPO:b1" "oci:$TMP/layout:b1" >/dev/null
  [[ -f "$TMP/layout/blobs/sha256/$DIGEST" ]] || fail "the copied layout has no blob $DIGEST: $(ls "$TMP/layout/blobs/sha256")"
  [[ "$(sha256sum "$TMP/layout/blobs/sha256/$DIGEST" | cut -d' ' -f1)" == "$DIGEST" ]] || fail "copied layer bytes"
  # (not tar | grep -q: grep quits at the first match and tar, still listing, dies of SIGPIPE under pipefail)
  tar -tf "$TMP/layout/blobs/sha256/$DIGEST" >"$TMP/layer.list"
  grep -qx 'model.so' "$TMP/layer.list" || fail "the layer has no model.so: $(cat "$TMP/layer.list")"
  # the pinned tag is the same image; list-tags lists both
  "${SKOPEO[@]}" inspect --raw --tls-verify=false "docker://127.0.0.1:$PORT/$REPO:b1-v1" >"$TMP/raw_v1.json"
  cmp -s "$TMP/raw.json" "$TMP/raw_v1.json" || fail "b1 and b1-v1 differ while v1 is the newest"
  "${SKOPEO[@]}" list-tags --tls-verify=false "docker://127.0.0.1:$PORT/$REPO" >"$TMP/tags.json"
  [[ "$(jq -c '.Tags' "$TMP/tags.json")" == '["b1","b1-v1"]' ]] || fail "list-tags: $(cat "$TMP/tags.json")"
  expect_status 200 "$BASE/v2/_catalog"
  [[ "$(jq -c .repositories "$TMP/body")" == "[\"$REPO\"]" ]] || fail "catalog: $(cat "$TMP/body")"
  ;;
digests)
  start_daemon
  build_b1
  expect_status 200 -H 'Accept: application/vnd.oci.image.manifest.v1+json' "$BASE/v2/$REPO/manifests/b1"
  MD=$(header Docker-Content-Digest)
  [[ "$MD" == "sha256:$(sha256sum "$TMP/body" | cut -d' ' -f1)" ]] || fail "Docker-Content-Digest $MD is not the body's"
  [[ "$(header Content-Type)" == "application/vnd.oci.image.manifest.v1+json" ]] || fail "manifest type"
  cp "$TMP/body" "$TMP/manifest.json"
  CD=$(jq -r .config.digest "$TMP/manifest.json")
  # by digest: the same bytes; HEAD: the same length and digest, no body; If-None-Match: 304
  expect_status 200 "$BASE/v2/$REPO/manifests/$MD"
  cmp -s "$TMP/body" "$TMP/manifest.json" || fail "manifest by digest differs"
  expect_status 200 -I "$BASE/v2/$REPO/manifests/b1"
  [[ "$(header Content-Length)" == "$(stat -c %s "$TMP/manifest.json")" ]] || fail "HEAD Content-Length"
  [[ "$(header Docker-Content-Digest)" == "$MD" ]] || fail "HEAD digest"
  expect_status 304 -H "If-None-Match: \"$MD\"" "$BASE/v2/$REPO/manifests/b1"
  # the config blob, and the layer blob with a Range
  expect_status 200 "$BASE/v2/$REPO/blobs/$CD"
  [[ "sha256:$(sha256sum "$TMP/body" | cut -d' ' -f1)" == "$CD" ]] || fail "config bytes do not match $CD"
  [[ "$(jq -r .config.size "$TMP/manifest.json")" == "$(stat -c %s "$TMP/body")" ]] || fail "config size"
  jq -e ".rootfs.diff_ids == [\"sha256:$DIGEST\"] and .os == \"linux\"" "$TMP/body" >/dev/null || fail "config: $(cat "$TMP/body")"
  expect_status 206 -H 'Range: bytes=0-99' "$BASE/v2/$REPO/blobs/sha256:$DIGEST"
  [[ "$(stat -c %s "$TMP/body")" == 100 ]] || fail "range length"
  expect_status 200 "$BASE/v2/$REPO/blobs/sha256:$DIGEST"
  [[ "$(sha256sum "$TMP/body" | cut -d' ' -f1)" == "$DIGEST" ]] || fail "layer bytes"
  # a digest of another repository's blob is unknown here
  expect_status 404 "$BASE/v2/llvm/resnet-18/blobs/sha256:$DIGEST"; body_has BLOB_UNKNOWN
  # the daemon restarted: the same digests (generated, not stored, and deterministic)
  stop_daemon
  start_daemon
  expect_status 200 "$BASE/v2/$REPO/manifests/b1"
  [[ "$(header Docker-Content-Digest)" == "$MD" ]] || fail "the manifest digest changed across a restart"
  ;;
errors)
  start_daemon
  jobs_before() { curl -fsS "$BASE/jobs" | jq '.jobs | length'; }
  expect_status 404 "$BASE/v2/llvm/nope/tags/list"; body_has NAME_UNKNOWN; body_has 'valid networks'
  expect_status 404 "$BASE/v2/tensorflow/$NET/manifests/b1"; body_has NAME_UNKNOWN
  expect_status 404 "$BASE/v2/$NET/manifests/b1"; body_has NAME_UNKNOWN
  expect_status 400 "$BASE/v2/$REPO/blobs/sha256:zz"; body_has DIGEST_INVALID
  expect_status 400 "$BASE/v2/$REPO/manifests/md5:abc"; body_has DIGEST_INVALID
  expect_status 400 "$BASE/v2/$REPO/manifests/b1..x"; body_has MANIFEST_INVALID
  expect_status 400 "$BASE/v2/$REPO/manifests/-b1"; body_has MANIFEST_INVALID
  expect_status 404 "$BASE/v2/$REPO/manifests/latest"; body_has MANIFEST_UNKNOWN; body_has 'b<batch>'
  expect_status 404 "$BASE/v2/$REPO/manifests/b0"; body_has MANIFEST_UNKNOWN
  expect_status 400 "$BASE/v2/$REPO/manifests/b999999"; body_has MANIFEST_INVALID
  expect_status 405 -X DELETE "$BASE/v2/$REPO/manifests/b1"; body_has UNSUPPORTED
  expect_status 405 -X PUT --data '{}' "$BASE/v2/$REPO/manifests/b1"; body_has UNSUPPORTED
  # HEAD of an unbuilt tag never queues; nothing above queued anything
  expect_status 404 -I "$BASE/v2/$REPO/manifests/b2"
  [[ "$(jobs_before)" == 0 ]] || fail "bad input or HEAD queued a job: $(curl -s "$BASE/jobs")"
  # GET of an unbuilt tag is a miss: the job is queued once (single-flight), the answer is an OCI error
  expect_status 503 "$BASE/v2/$REPO/manifests/b2"; body_has MANIFEST_UNKNOWN; body_has '"queued":true'
  [[ -n "$(header Retry-After)" ]] || fail "no Retry-After on a miss"
  expect_status 503 "$BASE/v2/$REPO/manifests/b2"; body_has '"queued":false'
  [[ "$(jobs_before)" == 1 ]] || fail "want one job: $(curl -s "$BASE/jobs")"
  expect_status 404 "$BASE/v2/$REPO/manifests/b2-v7"; body_has MANIFEST_UNKNOWN
  ;;
targets)
  # a client-chosen target is its own tag: b<batch>-<target>, b<batch>-v<version>-<target>
  start_daemon
  expect_status 200 "$BASE/models/llvm/$NET/1?target=x86-64-v3&wait=300"
  V3=$(sha256sum "$TMP/body" | cut -d' ' -f1)
  "${SKOPEO[@]}" inspect --raw --tls-verify=false "docker://127.0.0.1:$PORT/$REPO:b1-x86-64-v3" >"$TMP/raw.json"
  [[ "$(jq -r '.layers[0].digest' "$TMP/raw.json")" == "sha256:$V3" ]] || fail "b1-x86-64-v3 is not the v3 bundle"
  [[ "$(jq -r '.annotations["dev.tunehub.target"]' "$TMP/raw.json")" == "llvm -mcpu=x86-64-v3" ]] || fail "target annotation"
  expect_status 200 "$BASE/v2/$REPO/manifests/b1-v1-x86-64-v3"
  cmp -s "$TMP/body" "$TMP/raw.json" || fail "b1-v1-x86-64-v3 differs from b1-x86-64-v3"
  build_b1
  [[ "$DIGEST" != "$V3" ]] || fail "native and x86-64-v3 are the same bundle"
  "${SKOPEO[@]}" list-tags --tls-verify=false "docker://127.0.0.1:$PORT/$REPO" >"$TMP/tags.json"
  [[ "$(jq -c '.Tags | sort' "$TMP/tags.json")" == '["b1","b1-v1","b1-v1-x86-64-v3","b1-x86-64-v3"]' ]] \
    || fail "list-tags: $(cat "$TMP/tags.json")"
  expect_status 404 "$BASE/v2/$REPO/manifests/b1-pentium9"; body_has MANIFEST_UNKNOWN; body_has 'x86-64-v2'
  # an unbuilt target tag is a miss for that target's key
  expect_status 503 "$BASE/v2/$REPO/manifests/b2-x86-64-v2"; body_has '"queued":true'
  curl -fsS "$BASE/jobs" | jq -e '[.jobs[] | select(.batch == 2)][0].target == "llvm -mcpu=x86-64-v2"' >/dev/null \
    || fail "the miss queued another target: $(curl -s "$BASE/jobs")"
  ;;
*) fail "unknown case $CASE" ;;
esac
echo "PASS oci.$CASE"
