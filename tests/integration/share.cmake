# Sharing the daemon fairly (issue 36): each key's own manifest and ETag, anonymous clients' live jobs and share of
# the queue, ?wait= caps and deadlines, event rings that anonymous streams cannot evict.
foreach(case manifest_keys anon_queue waits sse)
  th_integration_test(share_${case} TIMEOUT 600
                      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/share.sh ${case}
                      ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>")
endforeach()
