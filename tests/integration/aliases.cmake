# Aliases (pin, resolve by HTTP and OCI, move, delete, bad input) and --keep-versions retention against the
# real daemon, with skopeo as the OCI client.
foreach(case pin retention)
  th_integration_test(aliases_${case} TIMEOUT 900
                      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/aliases.sh ${case}
                      ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>")
endforeach()
