# Per-client limits: misses that queue work (--miss-rate), connections per address (--max-connections-per-ip).
foreach(case miss_rate conn_per_ip)
  add_test(NAME integration.abuse_${case} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/abuse.sh ${case})
  set_tests_properties(integration.abuse_${case} PROPERTIES LABELS integration TIMEOUT 300
                       ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>")
endforeach()
