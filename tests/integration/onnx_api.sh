#!/usr/bin/env bash
# Integration tests of users' own networks (PUT/GET/DELETE /networks/{name}, `tunehub import`) against the real
# daemon on 127.0.0.1, with ONNX files made here: a small CNN exported by torch.onnx.export (two seeds: two
# versions; its bundles are run against torch's output) and hand-written bad files
# (tests/integration/onnx_models.py). Usage: onnx_api.sh CASE.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
TOKEN="s3cret-token-123"
auth=(-H "Authorization: Bearer $TOKEN")
M=/models/llvm/tiny

# make_models: $TMP/a.onnx and $TMP/b.onnx (the same network, other weights) and their digests
make_models() {
  /usr/bin/python3 "$here/onnx_models.py" tiny "$TMP/a.onnx" 1 || fail "cannot export a.onnx with torch"
  /usr/bin/python3 "$here/onnx_models.py" tiny "$TMP/b.onnx" 2 || fail "cannot export b.onnx with torch"
  SHA_A=$(sha256sum "$TMP/a.onnx" | cut -d' ' -f1)
  SHA_B=$(sha256sum "$TMP/b.onnx" | cut -d' ' -f1)
  B64_A=$(openssl dgst -sha256 -binary "$TMP/a.onnx" | base64 -w0)
  B64_B=$(openssl dgst -sha256 -binary "$TMP/b.onnx" | base64 -w0)
  [[ "$SHA_A" != "$SHA_B" ]] || fail "the two exports have the same bytes"
}

put() { # put FILE [curl args...]: PUT /networks/tiny with FILE as the body
  local f=$1
  shift
  curl -sS -o "$TMP/body" -D "$TMP/headers" -w '%{http_code}' -X PUT "$@" --data-binary "@$f" \
    "$BASE/networks/tiny" || true
}

expect_put() { # expect_put CODE FILE [curl args...]
  local want=$1 got
  shift
  got=$(put "$@")
  [[ "$got" == "$want" ]] || { echo "body: $(head -c 800 "$TMP/body")"; fail "PUT $* -> $got, want $want"; }
}

manifest_of() { # manifest_of TAR: its manifest.json into $TMP/manifest.json
  tar -xOf "$1" manifest.json >"$TMP/manifest.json" || fail "no manifest.json in $1"
}

db() { store_sql "$1"; }

# nothing of an upload is left: no uploaded network row, no ONNX artifact (row or file), no temp file, no job
nothing_left() {
  [[ "$(db "select count(*) from networks where source = 'onnx'")" == 0 ]] || fail "a network row was left"
  [[ "$(db "select count(*) from artifacts where media_type = 'application/onnx'")" == 0 ]] ||
    fail "an ONNX artifact row was left"
  [[ -z "$(find "$DATA/artifacts" -type f)" ]] || fail "files were left: $(find "$DATA/artifacts" -type f)"
  [[ -z "$(ls -A "$DATA/tmp")" ]] || fail "temp files were left: $(ls -A "$DATA/tmp")"
  expect_status 200 "$BASE/jobs"; jq_ok '.count == 0'
  expect_status 200 "$BASE/networks"; jq_ok '[.networks[] | select(.source == "onnx")] | length == 0'
}

# upload, serve, build, tune, a new version, restart, delete
case_upload_serve() {
  make_models
  echo "$TOKEN" >"$TMP/token"
  start_daemon --token-file "$TMP/token"
  # the body streams to disk: 96 MB through the daemon leave its peak memory where it was (a buffered body
  # would add all of it), and the file it went to is gone after the refusal
  head -c 100000000 /dev/urandom >"$TMP/junk.bin"
  hwm0=$(awk '/VmHWM/ {print $2}' "/proc/$PID/status")
  expect_status 400 -X PUT "${auth[@]}" -T "$TMP/junk.bin" "$BASE/networks/junk"; body_has '"code":"invalid_onnx"'
  hwm1=$(awk '/VmHWM/ {print $2}' "/proc/$PID/status")
  (( hwm1 - hwm0 < 32000 )) || fail "the daemon's peak memory grew by $((hwm1 - hwm0)) kB for a 100 MB upload"
  [[ -z "$(ls -A "$DATA/tmp")" ]] || fail "the upload's temp file was left"
  rm -f "$TMP/junk.bin"
  expect_put 201 "$TMP/a.onnx" "${auth[@]}"
  jq_ok ".name == \"tiny\" and .source == \"onnx\" and .version == 1 and .created == true
         and .digest == \"sha256:$SHA_A\" and .size == $(stat -c %s "$TMP/a.onnx") and .shapes == null"
  jq_ok '.inputs == [{"name": "input", "dtype": "float32", "shape": ["batch", 3, 8, 8], "batched": true}]
         and .outputs == [{"name": "output", "dtype": "float32", "shape": ["batch", 10], "batched": true}]
         and .input == [1, 3, 8, 8] and .flops > 0 and .params > 0'
  jq_ok '[.ops[].op_type] as $o | ($o | index("Conv")) != null and ($o | index("Gemm")) != null
         and (.ops | all(.count >= 1)) and .onnx.opset == 13'
  [[ "$(header Location)" == /networks/tiny ]] || fail "Location $(header Location)"
  # the stored file is a blob like the bundles: addressable by its digest, the same bytes (for a read token
  # only: it holds the uploader's weights)
  expect_status 401 "$BASE/blobs/sha256:$SHA_A"
  expect_status 200 "${auth[@]}" "$BASE/blobs/sha256:$SHA_A"
  cmp "$TMP/body" "$TMP/a.onnx" || fail "the blob is not a.onnx"
  [[ "$(header Content-Type)" == application/onnx && "$(header Content-Disposition)" == *.onnx* ]] ||
    fail "blob headers: $(header Content-Type), $(header Content-Disposition)"
  [[ "$(stat -c %a "$DATA/artifacts/${SHA_A:0:2}/$SHA_A")" == 644 ]] || fail "the stored file's mode"
  # the same bytes again change nothing (200), with or without their Content-Digest
  expect_put 200 "$TMP/a.onnx" "${auth[@]}"
  jq_ok '.version == 1 and .created == false'
  expect_put 200 "$TMP/a.onnx" "${auth[@]}" -H "Content-Digest: sha-256=:$B64_A:"
  # a digest that names other bytes: 400, and nothing changes
  expect_put 400 "$TMP/a.onnx" "${auth[@]}" -H "Content-Digest: sha-256=:$B64_B:"
  body_has '"code":"digest_mismatch"'
  expect_status 200 "$BASE/networks/tiny"; jq_ok '.version == 1 and .source == "onnx"'
  expect_status 200 "$BASE/networks/resnet-18"; jq_ok '.source == "zoo" and .params == 11689512'
  expect_status 200 "$BASE/networks"
  jq_ok 'any(.networks[]; .name == "tiny" and .source == "onnx") and any(.networks[]; .name == "resnet-18" and
         .source == "zoo") and .count == (.networks | length)'
  expect_status 200 "$BASE/networks?batch=4"
  jq_ok '.networks[] | select(.name == "tiny") | .inputs[0].shape == [4, 3, 8, 8] and .outputs[0].shape == [4, 10]'

  # a miss builds it like a zoo network: the bundle names the network and the file, and its model runs
  expect_status 200 "$BASE$M/1?wait=300"
  cp "$TMP/body" "$TMP/a1.tar"
  manifest_of "$TMP/a1.tar"
  jq -e ".key.network == \"tiny\" and .network_source.kind == \"onnx\" and .network_source.sha256 == \"$SHA_A\"
         and .inputs[0].shape == [1, 3, 8, 8] and .outputs[0].shape == [1, 10]" "$TMP/manifest.json" >/dev/null ||
    fail "manifest: $(head -c 600 "$TMP/manifest.json")"
  "$TUNEHUB" run "$TMP/a1.tar" --repeat 3 >"$TMP/run.txt" 2>&1 || { cat "$TMP/run.txt"; fail "tunehub run"; }
  grep -q "3 runs" "$TMP/run.txt" || fail "run: $(cat "$TMP/run.txt")"
  # and it computes what torch computes with the same weights
  /usr/bin/python3 "$here/onnx_models.py" check "$TMP/a1.tar" 1 1 || fail "the bundle's output is not torch's"
  expect_status 200 "$BASE/models?network=tiny"
  jq_ok '.count == 1 and .models[0].source == "onnx" and .models[0].state == "ready"'
  # tuning: a tuned version, its curve
  expect_status 202 -X POST "${auth[@]}" -d '{"trials": 2}' "$BASE$M/1/tune"
  expect_status 200 "$BASE$M/1?tuned=1&wait=600"
  # (a tuning job publishes its quick build, then the tuned one)
  expect_status 200 "$BASE$M/1/versions"; jq_ok '.count == 3 and .versions[2].tuned == true'
  expect_status 200 "$BASE$M/1/tuning"; jq_ok '.trials > 0 and (.tasks | length) > 0'

  # a job of this version still queued or running when other bytes arrive is cancelled by the new version
  expect_status 202 -H 'Prefer: respond-async' "$BASE$M/2"
  job=$(jq -r .job.id "$TMP/body")
  expect_put 201 "$TMP/b.onnx" "${auth[@]}"
  jq_ok ".version == 2 and .created == true and .digest == \"sha256:$SHA_B\" and (.cancelled_jobs | index($job)) != null
         and .stale_versions == 3"
  # the old bundles are not served as the network's any more: no hit, no manifest, out of the catalog
  expect_status 404 -I "$BASE$M/1"
  expect_status 404 "$BASE$M/1/manifest"
  expect_status 200 "$BASE/models?network=tiny"; jq_ok '.count == 0'
  expect_status 200 "$BASE/jobs/$job"; jq_ok '.state == "cancelled" or .cancel_requested == true'
  # the next miss builds the new version
  expect_status 200 "$BASE$M/2?wait=300"
  cp "$TMP/body" "$TMP/b2.tar"
  manifest_of "$TMP/b2.tar"
  jq -e ".network_source.sha256 == \"$SHA_B\" and .key.batch == 2" "$TMP/manifest.json" >/dev/null ||
    fail "rebuilt manifest: $(head -c 400 "$TMP/manifest.json")"
  /usr/bin/python3 "$here/onnx_models.py" check "$TMP/b2.tar" 2 2 || fail "the new version's bundle is not b.onnx's"
  expect_status 200 "$BASE$M/1?wait=300"
  manifest_of "$TMP/body"
  jq -e ".network_source.sha256 == \"$SHA_B\"" "$TMP/manifest.json" >/dev/null || fail "batch 1 not rebuilt"
  # the new version's bundles only; version numbers go on counting over the name
  expect_status 200 "$BASE$M/1/versions"; jq_ok '.count == 1 and .versions[0].version == 4'
  # the old file went with its version (no network has those bytes); the new one is content-addressed
  [[ ! -e "$DATA/artifacts/${SHA_A:0:2}/$SHA_A" ]] || fail "the replaced ONNX file is still stored"
  cmp "$DATA/artifacts/${SHA_B:0:2}/$SHA_B" "$TMP/b.onnx" || fail "the stored file differs from b.onnx"

  # a restart serves the same
  stop_daemon
  start_daemon --token-file "$TMP/token"
  expect_status 200 -I "$BASE$M/1"
  expect_status 200 "$BASE/networks/tiny"; jq_ok '.version == 2'

  # delete: token, then the network, its models and its file are gone; a zoo network cannot be deleted
  expect_status 401 -X DELETE "$BASE/networks/tiny"
  expect_status 409 -X DELETE "${auth[@]}" "$BASE/networks/resnet-18"
  expect_status 200 -X DELETE "${auth[@]}" "$BASE/networks/tiny"; jq_ok '.deleted_versions == 2'
  expect_status 404 "$BASE/networks/tiny"
  expect_status 404 "$BASE$M/1"; body_has '"code":"unknown_network"'
  expect_status 404 -X DELETE "${auth[@]}" "$BASE/networks/tiny"
  [[ "$(db "select count(*) from networks where name = 'tiny'")" == 0 ]] || fail "the row is left"
  [[ ! -e "$DATA/artifacts/${SHA_B:0:2}/$SHA_B" ]] || fail "the ONNX file is left"
  [[ "$(db "select count(*) from models where network = 'tiny' and state = 'ready'")" == 0 ]] ||
    fail "ready models are left"
}

# every bad input: a clear 4xx, and nothing stored or queued
case_upload_bad() {
  make_models
  for k in unsupported opset initializer bomb cycle dangling; do
    /usr/bin/python3 "$here/onnx_models.py" bad "$k" "$TMP/$k.onnx" || fail "cannot write $k.onnx"
  done
  head -c 3000 "$TMP/a.onnx" >"$TMP/truncated.onnx"
  echo "this is not an ONNX file" >"$TMP/text.onnx"
  : >"$TMP/empty.onnx"
  head -c 100000 /dev/urandom >"$TMP/big.onnx"
  echo "$TOKEN" >"$TMP/token"
  start_daemon --token-file "$TMP/token" --max-upload 64K
  # the token first, before any byte of the body is read
  expect_put 401 "$TMP/a.onnx"
  expect_put 401 "$TMP/a.onnx" -H 'Authorization: Bearer wrong-token'
  # names: a zoo network's (409, with the reason), and the rule (400, naming it)
  expect_status 409 -X PUT "${auth[@]}" --data-binary "@$TMP/a.onnx" "$BASE/networks/resnet-18"
  body_has '"code":"zoo_name"'; body_has 'zoo network'
  for bad in Tiny -tiny 'a%20b' "$(printf 'a%.0s' $(seq 1 64))"; do
    expect_status 400 -X PUT "${auth[@]}" --data-binary "@$TMP/a.onnx" "$BASE/networks/$bad"
    body_has '"code":"invalid_name"'; body_has 'a-z0-9'
  done
  # past --max-upload: declared (413 before reading) and chunked (413 once it grows past)
  expect_put 413 "$TMP/big.onnx" "${auth[@]}"; body_has '"code":"upload_too_large"'; body_has '65536'
  expect_put 413 "$TMP/big.onnx" "${auth[@]}" -H 'Transfer-Encoding: chunked'; body_has 'grew past 65536'
  # files the importer refuses
  expect_put 400 "$TMP/truncated.onnx" "${auth[@]}"; body_has '"code":"invalid_onnx"'
  expect_put 400 "$TMP/text.onnx" "${auth[@]}"; body_has '"code":"invalid_onnx"'
  expect_put 400 "$TMP/empty.onnx" "${auth[@]}"; body_has '"code":"invalid_onnx"'
  expect_put 422 "$TMP/unsupported.onnx" "${auth[@]}"; body_has '"code":"unsupported_operator"'; body_has 'Det'
  expect_put 400 "$TMP/opset.onnx" "${auth[@]}"; body_has 'opset 23'; body_has '1..21'
  expect_put 400 "$TMP/initializer.onnx" "${auth[@]}"; body_has "'w'"
  expect_put 400 "$TMP/bomb.onnx" "${auth[@]}"; body_has '"code":"invalid_onnx"'
  expect_put 400 "$TMP/cycle.onnx" "${auth[@]}"; body_has 'cycle'
  expect_put 400 "$TMP/dangling.onnx" "${auth[@]}"; body_has 'nowhere'
  # a shapes string the importer cannot read
  curl -sS -o "$TMP/body" -w '%{http_code}' -X PUT "${auth[@]}" --data-binary "@$TMP/a.onnx" \
    "$BASE/networks/tiny?shapes=input:Nx3xZ" >"$TMP/code" || true
  [[ "$(cat "$TMP/code")" == 400 ]] || fail "bad shapes -> $(cat "$TMP/code"): $(cat "$TMP/body")"
  # a Content-Digest that does not match, or is malformed
  expect_put 400 "$TMP/a.onnx" "${auth[@]}" -H "Content-Digest: sha-256=:$B64_B:"; body_has 'digest_mismatch'
  expect_put 400 "$TMP/a.onnx" "${auth[@]}" -H "Content-Digest: sha-256=$B64_A"; body_has 'invalid_digest'
  nothing_left
  # the daemon still takes a good file, with a shapes string it stores
  curl -sS -o "$TMP/body" -w '%{http_code}' -X PUT "${auth[@]}" --data-binary "@$TMP/a.onnx" \
    "$BASE/networks/tiny?shapes=input:Nx3x8x8" >"$TMP/code" || true
  [[ "$(cat "$TMP/code")" == 201 ]] || fail "good upload -> $(cat "$TMP/code"): $(cat "$TMP/body")"
  jq_ok '.shapes == "input:Nx3x8x8" and .version == 1'
}

# `tunehub import` into a store, `networks` and `build` on it, then the daemon serves it
case_cli_import() {
  make_models
  /usr/bin/python3 "$here/onnx_models.py" bad cycle "$TMP/cycle.onnx" || fail "cannot write cycle.onnx"
  "$TUNEHUB" import "$TMP/a.onnx" --name tiny --data "$DATA" >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "import"; }
  grep -q "tiny: imported, version 1, sha256:$SHA_A" "$TMP/out" || fail "import said: $(cat "$TMP/out")"
  grep -q "Conv" "$TMP/out" || fail "import lists no ops: $(cat "$TMP/out")"
  "$TUNEHUB" import "$TMP/a.onnx" --name tiny --data "$DATA" >"$TMP/out" 2>&1 || fail "import again"
  grep -q "unchanged" "$TMP/out" || fail "import again said: $(cat "$TMP/out")"
  # a bad file: exit 1 with the importer's reason, and nothing stored
  expect_fail 1 "cycle" "$TUNEHUB" import "$TMP/cycle.onnx" --name bad --data "$DATA"
  [[ "$(db "select count(*) from networks where name = 'bad'")" == 0 ]] || fail "a row for the bad file"
  [[ "$(find "$DATA/artifacts" -type f | wc -l)" == 1 ]] || fail "files: $(find "$DATA/artifacts" -type f)"
  [[ -z "$(ls -A "$DATA/tmp")" ]] || fail "temp files were left"
  # a bad name and a zoo name: exit 2
  expect_fail 2 "a-z0-9" "$TUNEHUB" import "$TMP/a.onnx" --name Tiny --data "$DATA"
  expect_fail 2 "zoo network" "$TUNEHUB" import "$TMP/a.onnx" --name resnet-18 --data "$DATA"
  "$TUNEHUB" networks --data "$DATA" >"$TMP/out" || fail "networks"
  grep -q "^tiny .*uploaded ONNX, version 1" "$TMP/out" || fail "networks: $(tail -n 5 "$TMP/out")"
  grep -q "^resnet-18 " "$TMP/out" || fail "networks lists no zoo"
  "$TUNEHUB" build llvm tiny 1 -o "$TMP/cli.tar" --data "$DATA" 2>"$TMP/build.err" || {
    cat "$TMP/build.err"
    fail "build"
  }
  manifest_of "$TMP/cli.tar"
  jq -e ".network_source.sha256 == \"$SHA_A\"" "$TMP/manifest.json" >/dev/null || fail "cli manifest"
  "$TUNEHUB" run "$TMP/cli.tar" --repeat 2 >/dev/null || fail "run the cli bundle"
  /usr/bin/python3 "$here/onnx_models.py" check "$TMP/cli.tar" 1 1 || fail "the cli bundle's output is not torch's"
  # the daemon on that store serves it
  start_daemon
  expect_status 200 "$BASE/networks/tiny"; jq_ok ".digest == \"sha256:$SHA_A\""
  expect_status 200 "$BASE$M/1?wait=300"
}

"case_$1"
echo "PASS $1"
