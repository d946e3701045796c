# Integration tests of signed provenance (issue 40): reproducible bundles (two builds, one without the object
# cache, give one digest); serve --signing-key and GET .../provenance;
# tunehub verify; the OCI 1.1 referrers of a signed version.
foreach(case serve verify referrers)
  th_integration_test(sign_${case} TIMEOUT 600
                      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/sign.sh ${case}
                      ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>")
endforeach()
# two `tunehub build`s into a data directory of their own: no daemon, so no PostgreSQL twin
th_integration_test(sign_reproducible NO_TWIN TIMEOUT 600
                    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/sign.sh reproducible
                    ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>")
