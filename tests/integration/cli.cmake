# Integration tests of the command line against real stores in temp dirs: tune, then remeasure (also per
# --target); build, run.
foreach(case remeasure remeasure_target run)
  add_test(NAME integration.cli_${case} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/cli.sh ${case})
  set_tests_properties(integration.cli_${case} PROPERTIES LABELS integration TIMEOUT 600
                       ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>")
endforeach()
