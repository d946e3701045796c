# Per-client limits: misses that queue work (--miss-rate), connections per address (--max-connections-per-ip).
foreach(case miss_rate conn_per_ip)
  th_integration_test(abuse_${case} TIMEOUT 300
                      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/abuse.sh ${case}
                      ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>")
endforeach()
