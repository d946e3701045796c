# Blob garbage collection against the real daemon: a deleted model's blobs swept by `tunehub gc`, the rest served.
th_integration_test(gc TIMEOUT 600 COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/gc.sh sweep
                    ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>")
