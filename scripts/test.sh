#!/usr/bin/env bash
# One command on a fresh machine: installs what is missing (build and test dependencies), runs scripts/lint.sh
# (banned functions; clang-format once .clang-format-enforced exists), builds with
# warnings as errors, runs the sanitizer slice (scripts/sanitize.sh --ci: ASan+UBSan and TSan builds of the
# daemon's and the store's tests, about 4 minutes), then every ctest test except the `bench` label (benchmarks
# are run by scripts/bench/, not as tests). The output ends with ctest's summary.
# Extra arguments go to ctest and skip the sanitizer slice, e.g. scripts/test.sh -L unit   or   -R store.
# TH_SANITIZE_SLICE=0 skips the slice too.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh --test
scripts/lint.sh
# the browser test's playwright-core and the ONNX conformance tests' onnxruntime-node
for dir in tests/e2e tests/conformance; do
  if [[ -f $dir/package.json ]]; then
    (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
  fi
done
scripts/build.sh -DTH_WERROR=ON
san_rc=0
if [[ $# -eq 0 && ${TH_SANITIZE_SLICE:-1} != 0 ]]; then
  scripts/sanitize.sh --ci || san_rc=$?
fi
cd build
# the object cache (compiler/include/tc/objcache.h) of this build's tests: their own, cold in a fresh clone, not the user's
export TUNEHUB_CACHE_DIR=$PWD/Testing/objcache
# ctest lists skipped tests (GPU tests without a device) after its summary; repeat the summary line last
mkdir -p Testing
set +e
ctest --output-on-failure -j2 -LE bench "$@" 2>&1 | tee Testing/ctest-output.log
rc=${PIPESTATUS[0]}
set -e
if [[ $san_rc -ne 0 ]]; then
  echo "the sanitizer slice failed (scripts/sanitize.sh --ci, above): exit $san_rc"
  [[ $rc -ne 0 ]] || rc=$san_rc
fi
grep -E '^[0-9]+% tests passed' Testing/ctest-output.log | tail -1 || true
exit "$rc"
