#!/usr/bin/env bash
# One command on a fresh machine: installs what is missing (build and test dependencies), builds with
# warnings as errors, and runs every ctest test except the `bench` label (benchmarks are run by
# scripts/bench/, not as tests). The output ends with ctest's summary.
# Extra arguments go to ctest, e.g. scripts/test.sh -L unit   or   scripts/test.sh -R store.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh --test
# the browser test's playwright-core and the ONNX conformance tests' onnxruntime-node
for dir in tests/e2e tests/conformance; do
  if [[ -f $dir/package.json ]]; then
    (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
  fi
done
scripts/build.sh -DTH_WERROR=ON
cd build
# ctest lists skipped tests (GPU tests without a device) after its summary; repeat the summary line last
mkdir -p Testing
set +e
ctest --output-on-failure -j2 -LE bench "$@" 2>&1 | tee Testing/ctest-output.log
rc=${PIPESTATUS[0]}
set -e
grep -E '^[0-9]+% tests passed' Testing/ctest-output.log | tail -1 || true
exit "$rc"
