# The OCI distribution API (pull side) against the real daemon, with skopeo as the client.
foreach(case skopeo digests errors targets)
  add_test(NAME integration.oci_${case} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/oci.sh ${case})
  set_tests_properties(integration.oci_${case} PROPERTIES LABELS integration TIMEOUT 600
                       ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>")
endforeach()
