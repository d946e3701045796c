# /metrics checked by promtool after real traffic.
th_integration_test(metrics_promtool TIMEOUT 600
                    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/metrics.sh promtool
                    ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>")
