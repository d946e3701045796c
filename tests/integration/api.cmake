# Integration tests: the real daemon on 127.0.0.1 with a free port and a temp data dir, driven by curl.
# TH_FAKECUDA_DIR: the folder of the unit tests' fake libcuda.so.1 (cuda_tuning puts it in a daemon's path).
foreach(case bad_inputs endpoints miss_then_hit range_304_head kill9_resume kill9_no_orphans kill9_no_orphans_tuning targets cancel_and_delete miss_tunes cuda_untuned cuda_tuning cuda_precision queue_full)
  th_integration_test(${case} TIMEOUT 600
                      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/api.sh ${case}
                      ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>;TH_WITH_CUDA=$<BOOL:${TH_HAVE_CUDA}>;TH_FAKECUDA_DIR=${CMAKE_CURRENT_BINARY_DIR}/fakecuda")
endforeach()
