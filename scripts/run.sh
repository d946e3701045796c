#!/usr/bin/env bash
# One command on a fresh machine: installs what is missing, builds, and runs the registry daemon on
# 127.0.0.1:8080 with the embedded defaults (the SQLite file and artifacts under ./data).
# Extra arguments go to `tunehub serve`, e.g. scripts/run.sh --listen 127.0.0.1:9090 --token-file token.txt
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh
exec build/server/tunehub serve --listen 127.0.0.1:8080 --data ./data "$@"
