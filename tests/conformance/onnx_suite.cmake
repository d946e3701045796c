# ONNX's own backend conformance suites (issue 38, label "conformance"): Debian's libonnx-testdata (ONNX 1.12)
# sets run through `tunehub import`, `build` and `run` by onnx_suite.py (python3-onnx, /usr/bin/python3). A
# case fails on any wrong answer or crash not in onnx_suite_known.txt and on a pass count below the set's
# floor in onnx_suite_floor.txt (the floor only rises); it is skipped (77) only without the test data.
# Each case runs its tests 3 at a time (the work is mostly the LLVM build of one small node, ~1 s each);
# the CSV of every test's status and reason is left in the build dir.
foreach(set node pytorch-converted pytorch-operator simple)
  add_test(NAME conformance.onnx_suite_${set}
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/conformance/onnx_suite.sh ${set})
  set_tests_properties(conformance.onnx_suite_${set} PROPERTIES LABELS conformance TIMEOUT 1200
                       SKIP_RETURN_CODE 77 ENVIRONMENT
                       "TUNEHUB=$<TARGET_FILE:tunehub>;TH_ONNX_SUITE_CSV=${CMAKE_BINARY_DIR}/onnx-suite-${set}.csv")
endforeach()
set_tests_properties(conformance.onnx_suite_node PROPERTIES COST 600)
