# /metrics checked by promtool after real traffic.
add_test(NAME integration.metrics_promtool COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/metrics.sh promtool)
set_tests_properties(integration.metrics_promtool PROPERTIES LABELS integration TIMEOUT 600
                     ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>")
