# The server's framework, target and precision names come from the backends (issue 37): unknown-framework
# errors, GET /targets' valid_targets, precisions and tuning_curve.
th_integration_test(backend_names_lists TIMEOUT 120
                    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/backend_names.sh lists
                    ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>")
