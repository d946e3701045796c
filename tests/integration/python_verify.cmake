# The Python client's check of signed provenance (Client(verify_key=...), tunehub-pull --verify-key) against a
# daemon with and without --signing-key (tests/integration/python_verify.{sh,py}).
th_integration_test(python_verify TIMEOUT 600
                    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/python_verify.sh
                    ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>" "TH_SRC=${PROJECT_SOURCE_DIR}")
