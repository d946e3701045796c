# Integration tests of users' own networks: ONNX uploads (PUT/GET/DELETE /networks/{name}) against the real
# daemon, and `tunehub import`; the ONNX files are exported with torch or written by onnx_models.py at test time.
foreach(case upload_serve upload_bad cli_import)
  th_integration_test(onnx_${case} TIMEOUT 900
                      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/onnx_api.sh ${case}
                      ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>")
endforeach()
