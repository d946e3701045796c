# Admission guards (server/guard.c): a build larger than --memory-budget answers 413 over_budget, and below the
# --min-free floor new work answers 507 while published bundles are still served (min_free_stream: a chunked
# upload cut as it crosses the floor; needs root for its tmpfs, 77 without).
foreach(case over_budget min_free min_free_stream)
  th_integration_test(guard_${case} TIMEOUT 600
                      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/guard.sh ${case}
                      ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>")
endforeach()
