#!/usr/bin/env bash
# The sanitizer builds (issue 22): an ASan+UBSan build (build-asan/) that runs the unit tests and the daemon's
# integration tests, and a TSan build (build-tsan/) that runs the concurrency tests of the server, store,
# scheduler and worker. Any report fails the run: UBSan halts on its first error, LeakSanitizer is on, and
# both ASan and TSan leave SIGSEGV/SIGBUS/SIGFPE to the default action, so that a deliberately crashing kernel
# in the measurement worker dies of its signal as it does without them (the tests check that the crash is
# reported as one). scripts/tsan.supp names LLVM's own lazily made globals, which TSan cannot see guarded.
# The compiler's heaviest tests (whole-network builds and the ONNX conformance runs: the same code paths as
# the unit tests of its ops, for minutes more) and the PostgreSQL twins are left to scripts/test.sh.
# Usage: scripts/sanitize.sh [asan|tsan]... (default both). Extra ctest filters: SAN_UNIT_EXCLUDE, SAN_IT.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh --test
kinds=("$@")
[[ ${#kinds[@]} -gt 0 ]] || kinds=(asan tsan)
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=detect_leaks=1:handle_segv=0:handle_sigbus=0:handle_sigfpe=0:detect_stack_use_after_return=0
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:handle_segv=0:handle_sigbus=0:handle_sigfpe=0:suppressions=$PWD/scripts/tsan.supp"
# whole-network compiler tests, the ONNX conformance runs, the CUDA emulator's networks, and the PostgreSQL twins
UNIT_EXCLUDE=${SAN_UNIT_EXCLUDE:-'^(compiler_model|compiler_conformance|compiler_cuda_bundle|compiler_cuda_emu|conformance|tuner_cuda|compiler_onnx_torch)\.|_pg\.'}
# the daemon's own paths: requests, bad input, ranges, OCI, auth and limits, aliases, metrics, gc, faults
IT=${SAN_IT:-'^(integration\.(bad_inputs|endpoints|miss_then_hit|range_304_head|cancel_and_delete|queue_full|auth_scopes|abuse_|aliases_|oci_|metrics_promtool|gc)|faults\.(sqlite_write_lock|measure_worker_killed))'}
rc=0
for kind in "${kinds[@]}"; do
  case "$kind" in
    asan) dir=build-asan san=address,undefined ;;
    tsan) dir=build-tsan san=thread ;;
    *) echo "unknown sanitizer '$kind'; valid: asan tsan" >&2; exit 2 ;;
  esac
  echo "== $kind: building $dir (-fsanitize=$san)"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTH_SANITIZE="$san" -DTH_FUZZ=OFF -DTH_WERROR=ON >/dev/null
  cmake --build "$dir" -j"$(nproc)" >"$dir/build.log" 2>&1 || { tail -40 "$dir/build.log"; exit 1; }
  if [[ $kind == asan ]]; then
    (cd "$dir" && ctest --output-on-failure -j2 -L unit -E "$UNIT_EXCLUDE") || rc=1
    (cd "$dir" && ctest --output-on-failure -j2 -R "$IT") || rc=1
  else
    # TSan: the threads of the daemon's HTTP server, the store's connection, the scheduler and the workers
    (cd "$dir" && ctest --output-on-failure -j2 -R '^(server|store|scheduler|worker|gc)\.') || rc=1
  fi
done
exit "$rc"
