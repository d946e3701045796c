# Networks from their source (compiler/include/tc/network.h): zoo names and uploaded ONNX files through
# tc_network_build, tc_network_tasks and tc_build_bundle (the file's initializers shipped, the manifest's
# network_source). The ONNX file is built with the importer tests' builder (onnx_build.c).
th_unit_test(compiler_netsrc SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_compiler_netsrc.c
             ${CMAKE_CURRENT_SOURCE_DIR}/unit/onnx_build.c LIBS th_compiler TIMEOUT 300)
target_include_directories(test_compiler_netsrc PRIVATE ${CMAKE_BINARY_DIR}/compiler/onnx_gen
                           ${TH_SOURCE_DIR}/compiler/import)
