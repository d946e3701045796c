# Bearer tokens with scopes (tune, admin), stored hashed, against the real daemon.
add_test(NAME integration.auth_scopes COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/auth.sh scopes)
set_tests_properties(integration.auth_scopes PROPERTIES LABELS integration TIMEOUT 600
                     ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>")
