# CUDA backend (compiler/cuda/): registered only when NVRTC was found (TH_HAVE_CUDA).
#   compiler_cuda        GPU templates through NVRTC (sm_80, sm_90), validity, codegen, device query.
#   compiler_cuda_bundle every zoo network as a cuda bundle at batch 1 and 100 (one case per network).
#   compiler_cuda_gpu    label gpu: templates and networks on a device against the CPU reference (exit 77
#                        without a device).
if(TH_HAVE_CUDA)
  th_unit_test(compiler_cuda SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_compiler_cuda.c
               LIBS th_compiler TIMEOUT 300)
  th_unit_test(compiler_cuda_bundle SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_compiler_cuda_bundle.c
               LIBS th_compiler TIMEOUT 900)
  th_unit_test(compiler_cuda_gpu SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_compiler_cuda_gpu.c
               LIBS th_compiler LABELS gpu TIMEOUT 900)
endif()

# Bundles end to end on the CPU: a fake libcuda.so.1 (test_compiler_cuda_fakecu.c) runs the bundle's own
# kernels.cu compiled with an emulation header; ctest puts it first on LD_LIBRARY_PATH for these cases only
# (prepended: a path the caller set, for libraries installed outside the system dirs, is kept).
if(TH_HAVE_CUDA)
  add_library(th_fakecuda SHARED ${CMAKE_CURRENT_LIST_DIR}/test_compiler_cuda_fakecu.c)
  set_target_properties(th_fakecuda PROPERTIES OUTPUT_NAME cuda SOVERSION 1
                        LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fakecuda)
  target_link_libraries(th_fakecuda PRIVATE dl)
  # the same fake without the graph entry points (a driver older than CUDA 11.4), for the fallback case
  add_library(th_fakecuda_nographs SHARED ${CMAKE_CURRENT_LIST_DIR}/test_compiler_cuda_fakecu.c)
  set_target_properties(th_fakecuda_nographs PROPERTIES OUTPUT_NAME cuda SOVERSION 1
                        LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fakecuda_nographs)
  target_compile_definitions(th_fakecuda_nographs PRIVATE TH_FAKECU_NO_GRAPHS)
  target_link_libraries(th_fakecuda_nographs PRIVATE dl)
  th_unit_test(compiler_cuda_emu SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_compiler_cuda_emu.c
               ${CMAKE_CURRENT_LIST_DIR}/onnx_build.c LIBS th_compiler TIMEOUT 600)
  target_include_directories(test_compiler_cuda_emu PRIVATE ${CMAKE_BINARY_DIR}/compiler/onnx_gen
                             ${TH_SOURCE_DIR}/compiler/import)
  add_dependencies(test_compiler_cuda_emu th_fakecuda th_fakecuda_nographs)
  foreach(c resnet_18 resnet_18_tf32 mobilenet_v2 squeezenet_v1_1 mobilenet bert arch_newer_than_device_refused
            arch_older_than_device_runs measure_emulated measure_emulated_embedding
            measure_emulated_skipped_elements measure_emulated_slow_reference measure_emulated_l2_flush
            measure_emulated_tf32_split_dyn graph_replays graph_capture_fails_falls_back graph_run_device_pointers
            dynamic_shared_over_48k gpu_gate_verdicts tf32_gemm_device_path measure_emulated_tf32 onnx_sample_ops
            onnx_conv3d_stacked onnx_conv3d_folded_groups onnx_avgpool3d onnx_maxpool3d onnx_maxpool2d_dilated
            onnx_conv2d_groups onnx_conv1d_groups measure_emulated_grouped onnx_conv2d_dilated
            onnx_conv1d_dilated measure_emulated_dilated)
    set_tests_properties(compiler_cuda_emu.${c} PROPERTIES
                         ENVIRONMENT_MODIFICATION "LD_LIBRARY_PATH=path_list_prepend:${CMAKE_CURRENT_BINARY_DIR}/fakecuda")
  endforeach()
  set_tests_properties(compiler_cuda_emu.graph_driver_without_graphs PROPERTIES ENVIRONMENT_MODIFICATION
                       "LD_LIBRARY_PATH=path_list_prepend:${CMAKE_CURRENT_BINARY_DIR}/fakecuda_nographs")
endif()

# The device query once more with the fake libcuda first on the path: the branch where the driver
# reports a device runs on a host without one too (compiler_cuda.device_query checks this host).
if(TH_HAVE_CUDA)
  add_test(NAME compiler_cuda.device_query_fake COMMAND test_compiler_cuda device_query)
  set_tests_properties(compiler_cuda.device_query_fake PROPERTIES LABELS unit TIMEOUT 60
                       ENVIRONMENT_MODIFICATION
                       "LD_LIBRARY_PATH=path_list_prepend:${CMAKE_CURRENT_BINARY_DIR}/fakecuda")
endif()
