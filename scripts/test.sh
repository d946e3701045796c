#!/usr/bin/env bash
# One command on a fresh machine: installs what is missing (build and test dependencies), builds with
# warnings as errors, and runs every ctest test except the `bench` label (benchmarks are run by
# scripts/bench/, not as tests). The output ends with ctest's summary.
# Extra arguments go to ctest, e.g. scripts/test.sh -L unit   or   scripts/test.sh -R store.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh --test
if [[ -f tests/e2e/package.json ]]; then
  (cd tests/e2e && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
fi
scripts/build.sh -DTH_WERROR=ON
cd build
exec ctest --output-on-failure -j2 -LE bench "$@"
