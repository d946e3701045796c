#!/usr/bin/env bash
# Integration tests of signed provenance (issue 40): a bundle is reproducible (the same records, network and
# compiler give the same bytes, so a signature over its digest can be checked by rebuilding); the daemon signs
# what it publishes (--signing-key) and serves the DSSE envelope beside the bundle and as an OCI 1.1 referrer.
# Usage: sign.sh CASE, with TUNEHUB set to the binary.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"

NET=squeezenet_v1.1

# Two `tunehub build`s of one key give one sha256: the first without the object cache (TUNEHUB_NO_CACHE), the
# second from another working directory with a cache of its own, so neither the cache nor a temp path makes
# them equal. The measured latency and the build's duration differ between the two and are not in the bundle
# (the store's row and the build's manifest text keep them). Before the fix the manifest held both.
case_reproducible() {
  mkdir -p "$TMP/a" "$TMP/b"
  (cd "$TMP/a" && env -u TUNEHUB_CACHE_DIR TUNEHUB_NO_CACHE=1 "$TUNEHUB" build llvm "$NET" 1 -o "$TMP/a/b.tar" \
    --data "$DATA" >"$TMP/a.log" 2>&1) || { tail -5 "$TMP/a.log"; fail "first build"; }
  (cd "$TMP/b" && env -u TUNEHUB_CACHE_DIR XDG_CACHE_HOME="$TMP/cache" "$TUNEHUB" build llvm "$NET" 1 \
    -o "$TMP/b/b.tar" --data "$DATA" >"$TMP/b.log" 2>&1) || { tail -5 "$TMP/b.log"; fail "second build"; }
  local da db
  da=$(sha256sum <"$TMP/a/b.tar" | cut -c1-64)
  db=$(sha256sum <"$TMP/b/b.tar" | cut -c1-64)
  echo "bundle digests: $da $db"
  if [[ "$da" != "$db" ]]; then
    mkdir -p "$TMP/xa" "$TMP/xb"
    tar -xf "$TMP/a/b.tar" -C "$TMP/xa"
    tar -xf "$TMP/b/b.tar" -C "$TMP/xb"
    (cd "$TMP/xa" && sha256sum ./*) >"$TMP/sa"
    (cd "$TMP/xb" && sha256sum ./*) >"$TMP/sb"
    diff "$TMP/sa" "$TMP/sb" || true
    diff "$TMP/xa/manifest.json" "$TMP/xb/manifest.json" | head -20 || true
    fail "two builds of llvm/$NET/1 differ: sha256:$da and sha256:$db"
  fi
  # the bundle's manifest holds no measurement and no name of the machine that built it
  tar -xOf "$TMP/a/b.tar" manifest.json |
    jq -e 'has("latency_ms") or has("build_seconds") or (.target | has("built_on")) | not' >/dev/null ||
    fail "the bundle's manifest holds a measurement: $(tar -xOf "$TMP/a/b.tar" manifest.json | head -c 600)"
}

# keys: an Ed25519 pair and a second (wrong) one, and an RSA key that is no Ed25519 key
make_keys() {
  command -v openssl >/dev/null || { echo "SKIP: no openssl command (scripts/deps.sh --test installs it)"; exit 77; }
  openssl genpkey -algorithm ed25519 -out "$TMP/key.pem" 2>/dev/null
  openssl pkey -in "$TMP/key.pem" -pubout -out "$TMP/pub.pem"
  openssl genpkey -algorithm ed25519 -out "$TMP/other.pem" 2>/dev/null
  openssl pkey -in "$TMP/other.pem" -pubout -out "$TMP/other_pub.pem"
  openssl genpkey -algorithm rsa -pkeyopt rsa_keygen_bits:1024 -out "$TMP/rsa.pem" 2>/dev/null
}

# The envelope in $1 verifies with public key $2 by openssl alone (DSSE: the signature is over
# PAE(payloadType, payload)), and its statement goes to $TMP/statement.json
openssl_verify() {
  local type
  type=$(jq -r .payloadType "$1")
  jq -r .payload "$1" | base64 -d >"$TMP/payload"
  jq -r '.signatures[0].sig' "$1" | base64 -d >"$TMP/sig"
  { printf 'DSSEv1 %d %s %d ' "${#type}" "$type" "$(stat -c %s "$TMP/payload")"; cat "$TMP/payload"; } >"$TMP/pae"
  cp "$TMP/payload" "$TMP/statement.json"
  openssl pkeyutl -verify -pubin -inkey "$2" -rawin -in "$TMP/pae" -sigfile "$TMP/sig" >/dev/null 2>&1
}

# `tunehub serve --signing-key`: a bad key is refused at start (exit 2, naming the file and the format); a
# version published without a key has no provenance (404 that says so); with the key every publish is signed:
# GET .../provenance serves a DSSE envelope whose signature openssl verifies over PAE, whose statement's subject
# is the bundle's sha256 and whose predicate holds the build's facts; and `tunehub build` of the same key
# rebuilds the very bundle the statement names.
case_serve() {
  make_keys
  expect_fail 2 "rsa.pem holds no Ed25519 private key: expected an unencrypted PEM PKCS#8" \
    "$TUNEHUB" serve --data "$DATA" --signing-key "$TMP/rsa.pem"
  expect_fail 2 "pub.pem holds no Ed25519 private key" "$TUNEHUB" serve --data "$DATA" --signing-key "$TMP/pub.pem"
  expect_fail 2 "cannot read the signing key file $TMP/nowhere.pem" \
    "$TUNEHUB" serve --data "$DATA" --signing-key "$TMP/nowhere.pem"
  # a fleet worker refuses the same way, before it opens the shared store
  expect_fail 2 "worker: --signing-key: $TMP/rsa.pem holds no Ed25519 private key" \
    "$TUNEHUB" worker --db postgresql://127.0.0.1:1/none --data "$TMP/w" --signing-key "$TMP/rsa.pem"

  start_daemon
  expect_status 404 "$BASE/models/llvm/$NET/1/provenance"
  body_has "has no published version yet"
  expect_status 200 "$BASE/models/llvm/$NET/1?wait=300"
  expect_status 404 "$BASE/models/llvm/$NET/1/provenance"
  body_has "no signed provenance: version 1 of llvm/$NET/1 was published unsigned"
  body_has "signing-key"
  stop_daemon

  start_daemon --signing-key "$TMP/key.pem"
  grep -q "signing the provenance of every publish with $TMP/key.pem" "$LOG" || fail "no signing line in the log"
  expect_status 200 "$BASE/models/llvm/$NET/2?wait=300"
  local digest
  digest=$(sha256sum <"$TMP/body" | cut -c1-64)
  expect_status 200 "$BASE/models/llvm/$NET/2/provenance"
  [[ "$(header Content-Type)" == "application/vnd.dsse.envelope.v1+json" ]] || fail "type $(header Content-Type)"
  [[ "$(header X-Tunehub-Version)" == 1 ]] || fail "version $(header X-Tunehub-Version)"
  cp "$TMP/body" "$TMP/envelope.json"
  jq_ok '.payloadType == "application/vnd.in-toto+json" and (.signatures | length) == 1 and
    (.signatures[0].keyid | test("^[0-9a-f]{64}$"))'
  openssl_verify "$TMP/envelope.json" "$TMP/pub.pem" || fail "openssl does not verify the envelope over PAE"
  openssl_verify "$TMP/envelope.json" "$TMP/other_pub.pem" && fail "the envelope verifies with another key"
  jq -e --arg d "$digest" --arg n "llvm/$NET/2" --arg net "$NET" '._type == "https://in-toto.io/Statement/v1" and
    .subject == [{name: $n, digest: {sha256: $d}}] and
    .predicateType == "https://tunehub.dev/provenance/bundle/v1" and
    .predicate.compiler.framework == "llvm" and (.predicate.compiler.version | length) > 0 and
    .predicate.compiler.precision == "fp32" and (.predicate.compiler.target | length) > 0 and
    (.predicate.target.features | length) > 0 and .predicate.network.name == $net and
    .predicate.records.sha256 == "" and .predicate.records.count == 0 and
    .predicate.latency_ms.median > 0 and .predicate.latency_ms.n > 0 and
    (.predicate.measured_on.threads >= 1) and (.predicate.measured_on.cpu | length) > 0 and
    .predicate.numerical_check.kernels.rtol > 0' "$TMP/statement.json" >/dev/null ||
    fail "statement: $(jq -c . "$TMP/statement.json")"
  # bad input and unsigned versions
  expect_status 400 "$BASE/models/llvm/$NET/2/provenance?version=x"
  body_has "whole number from 1"
  expect_status 404 "$BASE/models/llvm/$NET/2/provenance?version=7"
  body_has "version 7 of llvm/$NET/2 is not published"
  expect_status 200 "$BASE/models/llvm/$NET/2/provenance?version=1"
  cmp -s "$TMP/body" "$TMP/envelope.json" || fail "?version=1 is not the newest version's envelope"
  expect_status 404 "$BASE/models/llvm/$NET/1/provenance"
  # the bundle the statement names is what a rebuild of the key gives (no records here: fallbacks alone)
  "$TUNEHUB" build llvm "$NET" 2 -o "$TMP/rebuilt.tar" --data "$DATA" >"$TMP/rebuild.log" 2>&1 ||
    { tail -5 "$TMP/rebuild.log"; fail "rebuild"; }
  [[ "$(sha256sum <"$TMP/rebuilt.tar" | cut -c1-64)" == "$digest" ]] ||
    fail "a rebuild gives sha256:$(sha256sum <"$TMP/rebuilt.tar" | cut -c1-64), the statement names sha256:$digest"
}

# `tunehub verify BUNDLE --statement FILE --key PUB.pem` on what a signing daemon serves: the good triple
# passes and prints the predicate; a tampered bundle, a tampered statement (its payload edited and re-encoded),
# a wrong key, and an envelope that is no DSSE each fail (exit 1) with the message that names the check.
case_verify() {
  make_keys
  start_daemon --signing-key "$TMP/key.pem"
  expect_status 200 "$BASE/models/llvm/$NET/1?wait=300"
  cp "$TMP/body" "$TMP/b.tar"
  local digest
  digest=$(sha256sum <"$TMP/b.tar" | cut -c1-64)
  expect_status 200 "$BASE/models/llvm/$NET/1/provenance"
  cp "$TMP/body" "$TMP/b.dsse"
  stop_daemon

  "$TUNEHUB" verify "$TMP/b.tar" --statement "$TMP/b.dsse" --key "$TMP/pub.pem" >"$TMP/ok.out" 2>"$TMP/ok.err" ||
    fail "a good bundle does not verify: $(cat "$TMP/ok.err")"
  grep -q "^verified: the signature verifies with $TMP/pub.pem" "$TMP/ok.out" || fail "$(cat "$TMP/ok.out")"
  grep -q "^subject:   llvm/$NET/1 sha256:$digest$" "$TMP/ok.out" || fail "no subject line: $(cat "$TMP/ok.out")"
  grep -q "^latency:   median [0-9.]* ms" "$TMP/ok.out" || fail "no latency line: $(cat "$TMP/ok.out")"
  grep -q "^records:   0 (fallback configs only)" "$TMP/ok.out" || fail "no records line: $(cat "$TMP/ok.out")"

  # a tampered bundle: one byte more
  cp "$TMP/b.tar" "$TMP/bad.tar"
  printf 'x' >>"$TMP/bad.tar"
  local bad
  bad=$(sha256sum <"$TMP/bad.tar" | cut -c1-64)
  expect_fail 1 "FAILED: bundle digest sha256:$bad is not the statement's subject sha256:$digest" \
    "$TUNEHUB" verify "$TMP/bad.tar" --statement "$TMP/b.dsse" --key "$TMP/pub.pem"
  # a tampered statement: the payload says a faster latency, the signature is the old one
  jq -r .payload "$TMP/b.dsse" | base64 -d | jq -c '.predicate.latency_ms.median = 0.001' >"$TMP/forged.json"
  jq --arg p "$(base64 -w0 "$TMP/forged.json")" '.payload = $p' "$TMP/b.dsse" >"$TMP/forged.dsse"
  expect_fail 1 "FAILED: signature does not verify with $TMP/pub.pem" \
    "$TUNEHUB" verify "$TMP/b.tar" --statement "$TMP/forged.dsse" --key "$TMP/pub.pem"
  # a wrong key
  expect_fail 1 "FAILED: signature does not verify with $TMP/other_pub.pem" \
    "$TUNEHUB" verify "$TMP/b.tar" --statement "$TMP/b.dsse" --key "$TMP/other_pub.pem"
  # not an envelope; a private key where the public one goes; bad usage
  printf 'not json' >"$TMP/junk.dsse"
  expect_fail 1 "FAILED: statement is not valid JSON/DSSE: " \
    "$TUNEHUB" verify "$TMP/b.tar" --statement "$TMP/junk.dsse" --key "$TMP/pub.pem"
  jq 'del(.payload)' "$TMP/b.dsse" >"$TMP/nopayload.dsse"
  expect_fail 1 "FAILED: statement is not valid JSON/DSSE: a DSSE envelope has string payloadType and payload" \
    "$TUNEHUB" verify "$TMP/b.tar" --statement "$TMP/nopayload.dsse" --key "$TMP/pub.pem"
  expect_fail 1 "holds no Ed25519 public key" \
    "$TUNEHUB" verify "$TMP/b.tar" --statement "$TMP/b.dsse" --key "$TMP/key.pem"
  expect_fail 2 "usage: tunehub verify" "$TUNEHUB" verify "$TMP/b.tar" --statement "$TMP/b.dsse"
}

# OCI 1.1 referrers: GET /v2/<repo>/referrers/<manifest digest> lists the signed provenance of that version as an
# artifact manifest (artifactType the DSSE envelope's, subject the image manifest), which /v2/ serves by digest
# with its blobs (the empty config and the envelope, byte for byte what .../provenance serves); an unsigned
# version, or a digest no version has, gets an empty index (200); ?artifactType= filters and says so.
case_referrers() {
  make_keys
  local V2 idx=application/vnd.oci.image.index.v1+json
  start_daemon
  V2="$BASE/v2/llvm/$NET"
  expect_status 200 "$BASE/models/llvm/$NET/1?wait=300"
  expect_status 200 "$V2/manifests/b1"
  local d1
  d1=$(header Docker-Content-Digest)
  expect_status 200 "$V2/referrers/$d1"
  [[ "$(header Content-Type)" == "$idx" ]] || fail "referrers type $(header Content-Type)"
  jq_ok '.schemaVersion == 2 and .mediaType == "application/vnd.oci.image.index.v1+json" and .manifests == []'
  stop_daemon

  start_daemon --signing-key "$TMP/key.pem"
  V2="$BASE/v2/llvm/$NET"
  expect_status 200 "$BASE/models/llvm/$NET/2?wait=300"
  expect_status 200 "$BASE/models/llvm/$NET/2/provenance"
  cp "$TMP/body" "$TMP/envelope.json"
  expect_status 200 "$V2/manifests/b2"
  local d2 size2
  d2=$(header Docker-Content-Digest)
  size2=$(stat -c %s "$TMP/body")
  expect_status 200 "$V2/referrers/$d2"
  [[ "$(header Content-Type)" == "$idx" ]] || fail "referrers type $(header Content-Type)"
  jq_ok '.manifests | length == 1 and
    .[0].mediaType == "application/vnd.oci.image.manifest.v1+json" and
    .[0].artifactType == "application/vnd.dsse.envelope.v1+json" and
    .[0].annotations["dev.tunehub.predicate_type"] == "https://tunehub.dev/provenance/bundle/v1"'
  local art
  art=$(jq -r '.manifests[0].digest' "$TMP/body")
  # the artifact manifest, by digest, with its subject and its blobs
  expect_status 200 "$V2/manifests/$art"
  [[ "sha256:$(sha256sum <"$TMP/body" | cut -c1-64)" == "$art" ]] || fail "the artifact's bytes are not $art"
  cp "$TMP/body" "$TMP/artifact.json"
  jq -e --arg d "$d2" --argjson n "$size2" '.artifactType == "application/vnd.dsse.envelope.v1+json" and
    .subject == {mediaType: "application/vnd.oci.image.manifest.v1+json", digest: $d, size: $n} and
    .config.mediaType == "application/vnd.oci.empty.v1+json" and (.layers | length) == 1 and
    .layers[0].mediaType == "application/vnd.dsse.envelope.v1+json"' "$TMP/artifact.json" >/dev/null ||
    fail "artifact manifest: $(cat "$TMP/artifact.json")"
  expect_status 200 "$V2/blobs/$(jq -r .layers[0].digest "$TMP/artifact.json")"
  cmp -s "$TMP/body" "$TMP/envelope.json" || fail "the artifact's layer is not the envelope .../provenance serves"
  expect_status 200 "$V2/blobs/$(jq -r .config.digest "$TMP/artifact.json")"
  [[ "$(cat "$TMP/body")" == "{}" ]] || fail "the empty config is $(cat "$TMP/body")"
  # filters, an unsigned version, an unknown digest, a bad one
  expect_status 200 "$V2/referrers/$d2?artifactType=application/vnd.dsse.envelope.v1%2Bjson"
  jq_ok '.manifests | length == 1'
  [[ "$(header OCI-Filters-Applied)" == artifactType ]] || fail "no OCI-Filters-Applied"
  expect_status 200 "$V2/referrers/$d2?artifactType=application/example"
  jq_ok '.manifests == []'
  expect_status 200 "$V2/referrers/$d1"
  jq_ok '.manifests == []'
  expect_status 200 "$V2/referrers/sha256:$(printf '%064d' 0)"
  jq_ok '.manifests == []'
  expect_status 400 "$V2/referrers/sha256:xyz"
  body_has DIGEST_INVALID
}

"case_$1"
