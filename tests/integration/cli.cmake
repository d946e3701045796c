# Integration tests of the command line against real stores in temp dirs: tune, then remeasure (also per
# --target); build (cuda without a device: untimed), run; build --no-fuse; build and tune --precision; the
# runtime object cached between processes.
foreach(case remeasure remeasure_target run build_cuda_untimed build_no_fuse build_precision runtime_cache)
  th_integration_test(cli_${case} TIMEOUT 600
                      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/cli.sh ${case}
                      ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>;TH_WITH_CUDA=$<BOOL:${TH_HAVE_CUDA}>")
endforeach()
