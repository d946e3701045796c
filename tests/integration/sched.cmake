# Integration tests of the load-aware scheduler: the real daemon, three tuning jobs at once, SSE, kill -9.
foreach(case interleave_sse kill9_tuning)
  add_test(NAME integration.sched_${case} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/sched.sh ${case})
  set_tests_properties(integration.sched_${case} PROPERTIES LABELS integration TIMEOUT 1800
                       ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>")
endforeach()
