# CUDA tuning sessions (module "tuner_cuda"), without a GPU: the session's measure worker runs
# tc_cuda_measure against the fake libcuda.so.1 (th_fakecuda, test_compiler_cuda_fakecu.c). The test
# executable captures the CUDA C each NVRTC call compiles and runs that exact candidate on the CPU through
# an emulation library (ENABLE_EXPORTS: the fake driver's kernel library calls back into the test). The
# no_device case runs without the fake driver and checks the "no CUDA device" error.
if(TH_HAVE_CUDA)
  th_unit_test(tuner_cuda SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_tuner_cuda.c
               LIBS th_tuner dl TIMEOUT 300)
  if(TARGET test_tuner_cuda)
    set_target_properties(test_tuner_cuda PROPERTIES ENABLE_EXPORTS ON)
    add_dependencies(test_tuner_cuda th_fakecuda)
    foreach(c conv_random concat_zero_flops mobilenet_xgb_build reference_survives_restart
              nvrtc_build_isolates_hang_and_crash nvrtc_build_worker_exec tf32_tune_and_build)
      set_tests_properties(tuner_cuda.${c} PROPERTIES
                           ENVIRONMENT_MODIFICATION "LD_LIBRARY_PATH=path_list_prepend:${CMAKE_CURRENT_BINARY_DIR}/fakecuda")
    endforeach()
  endif()
endif()
