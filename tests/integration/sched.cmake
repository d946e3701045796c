# Integration tests of the load-aware scheduler: the real daemon, two tuning jobs at once, SSE, kill -9.
foreach(case interleave_sse kill9_tuning)
  th_integration_test(sched_${case} TIMEOUT 1800
                      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/sched.sh ${case}
                      ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>")
endforeach()
