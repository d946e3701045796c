# Aliases (pin, resolve by HTTP and OCI, move, delete, bad input) and --keep-versions retention against the
# real daemon, with skopeo as the OCI client.
foreach(case pin retention)
  add_test(NAME integration.aliases_${case} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/aliases.sh ${case})
  set_tests_properties(integration.aliases_${case} PROPERTIES LABELS integration TIMEOUT 900
                       ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>")
endforeach()
