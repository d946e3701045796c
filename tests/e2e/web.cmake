# End-to-end test of the catalog page (web/) in headless Chromium against the real daemon.
# Needs node, tests/e2e/node_modules (npm ci --ignore-scripts) and /usr/bin/chromium; exits 77
# (skipped) without them, and fails (1) without the tunehub binary, which this build makes.
find_program(TH_NODE node)
if(TH_NODE)
  add_test(NAME e2e.web COMMAND ${TH_NODE} ${CMAKE_CURRENT_SOURCE_DIR}/e2e/web.test.js)
else()
  add_test(NAME e2e.web COMMAND node ${CMAKE_CURRENT_SOURCE_DIR}/e2e/web.test.js)
endif()
set_tests_properties(e2e.web PROPERTIES LABELS e2e TIMEOUT 900 SKIP_RETURN_CODE 77
  ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>;E2E_ARTIFACTS=${CMAKE_BINARY_DIR}/e2e-artifacts")
