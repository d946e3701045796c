#!/usr/bin/env bash
# The sanitizer builds (issue 22): an ASan+UBSan build (build-asan/) that runs the unit tests and the daemon's
# integration tests, and a TSan build (build-tsan/) that runs the concurrency tests of the server, store,
# scheduler and worker. Any report fails the run: UBSan halts on its first error, LeakSanitizer is on, and
# both ASan and TSan leave SIGSEGV/SIGBUS/SIGFPE to the default action, so that a deliberately crashing kernel
# in the measurement worker dies of its signal as it does without them (the tests check that the crash is
# reported as one). scripts/tsan.supp names LLVM's own lazily made globals, which TSan cannot see guarded.
#
# Two scopes:
#   full (the default): every unit test but the whole-network compiler builds, the ONNX conformance runs and
#     the PostgreSQL twins (those are the same code paths as the op tests, for many minutes more under ASan),
#     and the daemon's integration tests for requests, bad input, ranges, OCI, auth, limits, aliases, metrics,
#     gc and two faults. About 15 minutes on 2 cores.
#   --ci: the slice scripts/test.sh runs before the main suite, about 4 minutes: only the targets it needs are
#     built; under ASan+UBSan the server, store, scheduler, worker, gc and common tests, the graph passes
#     (not the four whole-transformer ones), the ONNX importer and its wire scan, the tensor ops, the build children and
#     build-worker pool, the out-of-memory tests (alloc_fault: the leaks of every failure path), and the
#     daemon's request, bad-input, range, OCI-error, auth, abuse, queue and metrics integration tests; under
#     TSan the server, store, scheduler, worker, gc and build-worker tests, and the
#     exit status of a forked child (common.child_exit_*).
# Usage: scripts/sanitize.sh [--ci] [asan|tsan]... (default both). Filters: SAN_UNIT, SAN_UNIT_EXCLUDE, SAN_IT.
set -euo pipefail
cd "$(dirname "$0")/.."
scope=full
kinds=()
for a in "$@"; do
  case "$a" in
    --ci) scope=ci ;;
    asan | tsan) kinds+=("$a") ;;
    *) echo "sanitize.sh: unknown argument '$a'; valid: --ci asan tsan" >&2; exit 2 ;;
  esac
done
[[ ${#kinds[@]} -gt 0 ]] || kinds=(asan tsan)
scripts/deps.sh --test
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=detect_leaks=1:handle_segv=0:handle_sigbus=0:handle_sigfpe=0:detect_stack_use_after_return=0
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:handle_segv=0:handle_sigbus=0:handle_sigfpe=0:suppressions=$PWD/scripts/tsan.supp"
TSAN_TESTS='^((server|store|scheduler|worker|gc)\.|tuner\.build_|common\.child_exit_)'
if [[ $scope == full ]]; then
  UNIT=${SAN_UNIT:-.}
  UNIT_EXCLUDE=${SAN_UNIT_EXCLUDE:-'^(compiler_model|compiler_conformance|compiler_cuda_bundle|compiler_cuda_emu|conformance|tuner_cuda|compiler_onnx_torch)\.|_pg\.'}
  IT=${SAN_IT:-'^(integration\.(bad_inputs|endpoints|miss_then_hit|range_304_head|cancel_and_delete|queue_full|auth_scopes|abuse_|aliases_|oci_|metrics_promtool|gc)|faults\.(sqlite_write_lock|measure_worker_killed))'}
  asan_targets=(all)
  tsan_targets=(all)
else
  UNIT=${SAN_UNIT:-'^((server|store|alloc_fault|scheduler|worker|gc|common|compiler_graph|compiler_onnx|compiler_onnx_wire|compiler_ops_tensor)\.|tuner\.build_)'}
  UNIT_EXCLUDE=${SAN_UNIT_EXCLUDE:-'^compiler_graph\.(passes_vit_preserve|passes_bert_preserve|passes_bert_fusion_groups|ref_all_networks_finite)$|_pg\.'}
  IT=${SAN_IT:-'^integration\.(bad_inputs|endpoints|miss_then_hit|range_304_head|oci_errors|auth_scopes|abuse_[a-z_]+|queue_full|metrics_promtool)$'}
  asan_targets=(tunehub test_server test_store test_alloc_fault test_scheduler test_worker test_gc test_common test_compiler_graph
                test_compiler_onnx test_compiler_onnx_wire test_compiler_ops_tensor test_tuner)
  tsan_targets=(test_server test_store test_scheduler test_worker test_gc test_tuner test_common)
fi
rc=0
for kind in "${kinds[@]}"; do
  case "$kind" in
    asan) dir=build-asan san=address,undefined targets=("${asan_targets[@]}") ;;
    tsan) dir=build-tsan san=thread targets=("${tsan_targets[@]}") ;;
  esac
  echo "== $kind ($scope): building $dir (-fsanitize=$san): ${targets[*]}"
  t0=$SECONDS
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTH_SANITIZE="$san" -DTH_FUZZ=OFF -DTH_WERROR=ON >/dev/null
  cmake --build "$dir" -j"$(nproc)" --target "${targets[@]}" >"$dir/build.log" 2>&1 ||
    { tail -40 "$dir/build.log"; exit 1; }
  echo "== $kind: built in $((SECONDS - t0)) s"
  if [[ $kind == asan ]]; then
    # The tensor-op tests dlopen kernels LLVM just compiled, with their thread pool; gcc 12's LeakSanitizer
    # then dies in its own tracer ("Tracer caught signal 11") in about one run of three, after the test has
    # passed. They run under ASan and UBSan with leak detection off; every other test keeps it on.
    NOLEAK='^compiler_ops_tensor\.'
    (cd "$dir" && ctest --output-on-failure -j2 -L unit -R "$UNIT" -E "$UNIT_EXCLUDE|$NOLEAK") || rc=1
    (cd "$dir" && ASAN_OPTIONS=${ASAN_OPTIONS/detect_leaks=1/detect_leaks=0} \
      ctest --output-on-failure -j2 -L unit -R "$NOLEAK" -E "$UNIT_EXCLUDE") || rc=1
    (cd "$dir" && ctest --output-on-failure -j2 -R "$IT") || rc=1
  else
    # the threads of the daemon's HTTP server, the store's connection, the scheduler and the workers
    (cd "$dir" && ctest --output-on-failure -j2 -R "$TSAN_TESTS") || rc=1
  fi
  echo "== $kind: done in $((SECONDS - t0)) s"
done
exit "$rc"
