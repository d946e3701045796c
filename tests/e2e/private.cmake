# End-to-end test of the catalog page against a daemon started with --private (issue 36): the page loads, asks for
# the read token at its first 401, and shows the registry with it. Needs what e2e.web needs; exits 77 without it.
add_test(NAME e2e.private COMMAND node ${CMAKE_CURRENT_SOURCE_DIR}/e2e/private.test.js)
set_tests_properties(e2e.private PROPERTIES LABELS e2e TIMEOUT 300 SKIP_RETURN_CODE 77
  ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>")
