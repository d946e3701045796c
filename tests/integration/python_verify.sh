#!/usr/bin/env bash
# Integration test of the Python client's check of signed provenance (issue 40, part 3, client side): a daemon
# started with --signing-key; Client(verify_key=...) and tunehub-pull --verify-key pull with the right key
# (fresh and cached), and a wrong key, a tampered statement (cached, and as the daemon serves it) and a tampered
# cached bundle each fail with the message that names the check; then the same daemon without the key: a new
# version is unsigned and a pull with a key refuses it. tests/integration/python_verify.py does the pulling.
# Usage: python_verify.sh, with TUNEHUB and TH_SRC set.
source "$(dirname "$0")/lib.sh"
command -v openssl >/dev/null || { echo "SKIP: no openssl command (scripts/deps.sh --test installs it)"; exit 77; }
mkdir -p "$TMP/keys" "$TMP/work"
openssl genpkey -algorithm ed25519 -out "$TMP/keys/key.pem" 2>/dev/null
openssl pkey -in "$TMP/keys/key.pem" -pubout -out "$TMP/keys/pub.pem"
openssl genpkey -algorithm ed25519 -out "$TMP/keys/other.pem" 2>/dev/null
openssl pkey -in "$TMP/keys/other.pem" -pubout -out "$TMP/keys/other_pub.pem"
py() { PYTHONPATH="$TH_SRC/python" /usr/bin/python3 "$(dirname "$0")/python_verify.py" "$1" "$BASE" "$TMP/keys" \
  "$DATA" "$TMP/work" || fail "python_verify.py $1 failed"; }

start_daemon --signing-key "$TMP/keys/key.pem"
py signed
stop_daemon
start_daemon
py unsigned
echo "python_verify: ok"
