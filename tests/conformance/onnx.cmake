# ONNX conformance (issue 21, label "conformance"): for each network onnx_export.py exports (none of them in
# the zoo), the real daemon takes the .onnx by PUT /networks/NAME, builds it with fallback configs at each
# batch, `tunehub run --input` runs it on seeded inputs and ONNX Runtime (tests/conformance/node_modules,
# npm ci --ignore-scripts) runs the same file: every output must agree to 1e-4 of its largest value.
# Exports are cached in the build dir, keyed by the exporter's hash. Each entry is NAME:BATCHES:TIMEOUT
# (seconds, about three times the run measured on the 2-core CI machine) and the COST that ctest -j starts
# the longest first by. vit builds and runs at batch 1 only, to keep the set within CI's time; bert at 1 and 2,
# because only the second row of its inputs is padded, so batch 1 never tests the attention mask.
# Cases exit 77 (skipped) without torch or onnxruntime-node.
foreach(spec resnet50:1,2:900 mobilenet_v3_large:1,2:600 efficientnet_b0:1,2:600 densenet121:1,2:900
        convnext_tiny:1,2:900 googlenet:1,2:600 shufflenet_v2_x1_0:1,2:600 vit_b_16:1:900 bert_base:1,2:900
        regnet_x_400mf:1:900 lraspp_mobilenet_v3_large:1:600)
  string(REPLACE ":" ";" parts ${spec})
  list(GET parts 0 name)
  list(GET parts 1 batches)
  list(GET parts 2 timeout)
  string(REPLACE "," " " batches "${batches}")
  math(EXPR cost "${timeout} / 3")
  add_test(NAME conformance.onnx_${name}
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/conformance/onnx_conformance.sh ${name})
  set_tests_properties(conformance.onnx_${name} PROPERTIES LABELS conformance TIMEOUT ${timeout} COST ${cost}
                       SKIP_RETURN_CODE 77 ENVIRONMENT
                       "TUNEHUB=$<TARGET_FILE:tunehub>;TH_ONNX_CACHE=${CMAKE_BINARY_DIR}/onnx-conformance;TH_ONNX_BATCHES=${batches}")
endforeach()
