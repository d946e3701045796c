# The batch rule of ONNX uploads (issue 38): unbatched and rank-0 inputs named in GET /networks/{name}, built
# and run through the CLI with every input fed; files that fix their batch, taken at that batch alone.
foreach(case unbatched_inputs fixed_batch)
  th_integration_test(onnx_batch_rule_${case} TIMEOUT 600
                      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/onnx_batch_rule.sh ${case}
                      ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>")
endforeach()
