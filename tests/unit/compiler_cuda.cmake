# CUDA backend (compiler/cuda/): registered only when NVRTC was found (TH_HAVE_CUDA).
#   compiler_cuda        GPU templates through NVRTC (sm_80, sm_90), validity, codegen, device query.
#   compiler_cuda_bundle every zoo network as a cuda bundle at batch 1 and 100 (one case per network).
#   compiler_cuda_gpu    label gpu: templates and networks on a device against the CPU reference (exit 77
#                        without a device).
if(TH_HAVE_CUDA)
  th_unit_test(compiler_cuda SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_compiler_cuda.c
               LIBS th_compiler TIMEOUT 300)
  th_unit_test(compiler_cuda_bundle SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_compiler_cuda_bundle.c
               LIBS th_compiler TIMEOUT 300)
  th_unit_test(compiler_cuda_gpu SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_compiler_cuda_gpu.c
               LIBS th_compiler LABELS gpu TIMEOUT 900)
endif()
