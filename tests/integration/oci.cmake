# The OCI distribution API (pull side) against the real daemon, with skopeo as the client.
foreach(case skopeo digests errors targets)
  th_integration_test(oci_${case} TIMEOUT 600
                      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/oci.sh ${case}
                      ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>")
endforeach()
