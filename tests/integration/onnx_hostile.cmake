# Hostile ONNX uploads (a graph nested 3,000 deep through attributes, a 10 MB node bomb) against the real daemon
# and `tunehub import`: 400 invalid_onnx naming the limit, the daemon alive, its peak RSS bounded, nothing stored.
foreach(case nested bomb)
  th_integration_test(onnx_hostile_${case} TIMEOUT 300
                      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/onnx_hostile.sh ${case}
                      ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>")
endforeach()
