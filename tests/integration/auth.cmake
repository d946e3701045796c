# Bearer tokens with scopes (tune, admin), stored hashed, against the real daemon.
th_integration_test(auth_scopes TIMEOUT 600 COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/auth.sh scopes
                    ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>")
