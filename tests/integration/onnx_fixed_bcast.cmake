# A file fixed at a batch above 2 that imports at batch 1 by broadcasting (issue 38: torch's PoissonNLLLoss
# at opset 6): taken as a network of that batch alone.
foreach(case fixed_above_two)
  th_integration_test(onnx_fixed_bcast_${case} TIMEOUT 600
                      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/onnx_fixed_bcast.sh ${case}
                      ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>")
endforeach()
