# `tunehub records export / import` against real stores in temp dirs: the committed H200 export imported twice
# and built from without a GPU, exported back; bad files refused by line with nothing stored; an llvm store's
# export after a tiny tune.
foreach(case import_build bad_input llvm_export)
  th_integration_test(records_cli_${case} TIMEOUT 300
                      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/records_cli.sh ${case}
                      ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>;TH_WITH_CUDA=$<BOOL:${TH_HAVE_CUDA}>;TH_RECORDS=${CMAKE_CURRENT_SOURCE_DIR}/data/records-h200-sm_90.jsonl")
endforeach()
