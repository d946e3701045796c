# Per-client limits: misses that queue work (--miss-rate), connections per address (--max-connections-per-ip),
# slow headers.
foreach(case miss_rate conn_per_ip)
  th_integration_test(abuse_${case} TIMEOUT 300
                      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/abuse.sh ${case}
                      ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>")
endforeach()
# Slow headers: one daemon on the embedded store only (the store has no part in it, so no PostgreSQL twin).
add_test(NAME integration.abuse_slow_headers COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/abuse.sh slow_headers)
set_tests_properties(integration.abuse_slow_headers PROPERTIES LABELS integration TIMEOUT 120 SKIP_RETURN_CODE 77
                     ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>")
