# Private reads and the limits on authentication (issue 36): the read scope and serve --private, the ONNX file of
# an upload for token holders only, /workers without host-internal facts for anonymous clients, the minimum
# token length, failed authentications per address, the token file's mode, repeated slashes, every --help.
foreach(case reads workers auth_limits paths cli_help)
  th_integration_test(private_${case} TIMEOUT 300
                      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/private.sh ${case}
                      ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>")
endforeach()
