# scripts/bench/gpu.sh end to end on this machine (issue 41): pack, then run in two calls against a fake
# nvidia-smi, the unit tests' fake libcuda.so.1 and a stub PyTorch peer, the second resuming where the first
# stopped at its deadline. No daemon and no store take part, so no PostgreSQL twin. Registered only where the
# fake driver is built (NVRTC found); about 2 minutes on the 2-core CI machine.
if(TH_HAVE_CUDA)
  add_test(NAME integration.gpu_script COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/gpu_script.sh)
  set_tests_properties(integration.gpu_script PROPERTIES LABELS integration TIMEOUT 420 COST 120
                       SKIP_RETURN_CODE 77
                       ENVIRONMENT "BUILD=${CMAKE_BINARY_DIR};TH_FAKECUDA_DIR=${CMAKE_CURRENT_BINARY_DIR}/fakecuda")
endif()
