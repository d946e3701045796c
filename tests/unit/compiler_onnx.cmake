# The ONNX importer (compiler/import/): models built in C with protoc-c's structs (onnx_build.c,
# onnx_models.c), imported and run by the reference interpreter against the graph builders or naive loops,
# and every malformed or unsupported input the contract names.
th_unit_test(compiler_onnx SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_compiler_onnx.c
             ${CMAKE_CURRENT_SOURCE_DIR}/unit/onnx_build.c ${CMAKE_CURRENT_SOURCE_DIR}/unit/onnx_models.c
             LIBS th_compiler TIMEOUT 300)
target_include_directories(test_compiler_onnx PRIVATE ${CMAKE_BINARY_DIR}/compiler/onnx_gen
                           ${TH_SOURCE_DIR}/compiler/import)
# Conformance with PyTorch (label conformance, ~45 s: torch.onnx.export of resnet18, mobilenet_v3_small and an
# encoder layer at several opsets); 77 without torch.
th_unit_test(compiler_onnx_torch SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_compiler_onnx_torch.c
             LIBS th_compiler LABELS conformance TIMEOUT 300)
target_compile_definitions(test_compiler_onnx_torch PRIVATE TH_SRC_DIR="${TH_SOURCE_DIR}")
# Hostile files (compiler/import/onnx_wire.c): the wire scan's limits, protobuf-c's byte budget, malformed
# wire data and non-finite attributes.
th_unit_test(compiler_onnx_wire SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_compiler_onnx_wire.c
             ${CMAKE_CURRENT_SOURCE_DIR}/unit/onnx_build.c ${CMAKE_CURRENT_SOURCE_DIR}/unit/onnx_models.c
             LIBS th_compiler TIMEOUT 120)
target_include_directories(test_compiler_onnx_wire PRIVATE ${CMAKE_BINARY_DIR}/compiler/onnx_gen
                           ${TH_SOURCE_DIR}/compiler/import)
# The softmax family, runtime gathers and losses (compiler/import/onnx_ops_index.c) against naive loops.
th_unit_test(compiler_onnx_index SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_compiler_onnx_index.c
             ${CMAKE_CURRENT_SOURCE_DIR}/unit/onnx_build.c ${CMAKE_CURRENT_SOURCE_DIR}/unit/onnx_models.c
             LIBS th_compiler TIMEOUT 120)
target_include_directories(test_compiler_onnx_index PRIVATE ${CMAKE_BINARY_DIR}/compiler/onnx_gen
                           ${TH_SOURCE_DIR}/compiler/import)
# The convolution family and resampling (issue 38): grouped/dilated Conv, ConvTranspose, Resize,
# DepthToSpace/SpaceToDepth imported and run by the reference interpreter against naive loops.
th_unit_test(compiler_onnx_conv SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_compiler_onnx_conv.c
             ${CMAKE_CURRENT_SOURCE_DIR}/unit/onnx_build.c ${CMAKE_CURRENT_SOURCE_DIR}/unit/onnx_models.c
             LIBS th_compiler TIMEOUT 120)
target_include_directories(test_compiler_onnx_conv PRIVATE ${CMAKE_BINARY_DIR}/compiler/onnx_gen
                           ${TH_SOURCE_DIR}/compiler/import)
# Graph forms and element-wise binary operators of the importer (issue 38): the batch rule (unbatched and
# rank-0 inputs), Max/Min/Sum/Mean/Pow/Mod, the comparisons and the logical ops against naive loops.
th_unit_test(compiler_onnx_graph SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_compiler_onnx_graph.c
             ${CMAKE_CURRENT_SOURCE_DIR}/unit/onnx_build.c ${CMAKE_CURRENT_SOURCE_DIR}/unit/onnx_models.c
             LIBS th_compiler TIMEOUT 120)
target_include_directories(test_compiler_onnx_graph PRIVATE ${CMAKE_BINARY_DIR}/compiler/onnx_gen
                           ${TH_SOURCE_DIR}/compiler/import)
# The reductions (compiler/import/onnx_ops_reduce.c): every Reduce* against naive loops, noop and refusals.
th_unit_test(compiler_onnx_reduce SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_compiler_onnx_reduce.c
             ${CMAKE_CURRENT_SOURCE_DIR}/unit/onnx_build.c LIBS th_compiler TIMEOUT 120)
target_include_directories(test_compiler_onnx_reduce PRIVATE ${CMAKE_BINARY_DIR}/compiler/onnx_gen
                           ${TH_SOURCE_DIR}/compiler/import)
# Trilu, Hardmax and Gemm with a runtime B (compiler/import/onnx_ops_mask.c, issue 38) against naive loops.
th_unit_test(compiler_onnx_mask SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_compiler_onnx_mask.c
             ${CMAKE_CURRENT_SOURCE_DIR}/unit/onnx_build.c ${CMAKE_CURRENT_SOURCE_DIR}/unit/onnx_models.c
             LIBS th_compiler TIMEOUT 120)
target_include_directories(test_compiler_onnx_mask PRIVATE ${CMAKE_BINARY_DIR}/compiler/onnx_gen
                           ${TH_SOURCE_DIR}/compiler/import)
# The recurrent layers (compiler/import/onnx_ops_rnn.c, issue 38): a bidirectional LSTM and a GRU of
# realistic size unrolled at import against naive loops, activations, output subsets and refusals.
th_unit_test(compiler_onnx_rnn SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_compiler_onnx_rnn.c
             ${CMAKE_CURRENT_SOURCE_DIR}/unit/onnx_build.c LIBS th_compiler TIMEOUT 120)
target_include_directories(test_compiler_onnx_rnn PRIVATE ${CMAKE_BINARY_DIR}/compiler/onnx_gen
                           ${TH_SOURCE_DIR}/compiler/import)
# ScatterElements and Scatter (compiler/import/onnx_ops_scatter.c, issue 38) against naive loops.
th_unit_test(compiler_onnx_scatter SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_compiler_onnx_scatter.c
             ${CMAKE_CURRENT_SOURCE_DIR}/unit/onnx_build.c ${CMAKE_CURRENT_SOURCE_DIR}/unit/onnx_models.c
             LIBS th_compiler TIMEOUT 120)
target_include_directories(test_compiler_onnx_scatter PRIVATE ${CMAKE_BINARY_DIR}/compiler/onnx_gen
                           ${TH_SOURCE_DIR}/compiler/import)
# Shrink, MeanVarianceNormalization, LRN and GridSample (compiler/import/onnx_ops_sample.c, issue 38)
# against naive loops in double, at batch 1 and 3.
th_unit_test(compiler_onnx_sample SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_compiler_onnx_sample.c
             ${CMAKE_CURRENT_SOURCE_DIR}/unit/onnx_build.c LIBS th_compiler TIMEOUT 120)
target_include_directories(test_compiler_onnx_sample PRIVATE ${CMAKE_BINARY_DIR}/compiler/onnx_gen
                           ${TH_SOURCE_DIR}/compiler/import)
# 3-D Conv and pools, dilated MaxPool (compiler/import/onnx_ops_conv3d.c, issue 38): drawn windows at
# batch 1 and 3 against naive loops.
th_unit_test(compiler_onnx_window3 SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_compiler_onnx_window3.c
             ${CMAKE_CURRENT_SOURCE_DIR}/unit/onnx_build.c LIBS th_compiler TIMEOUT 120)
target_include_directories(test_compiler_onnx_window3 PRIVATE ${CMAKE_BINARY_DIR}/compiler/onnx_gen
                           ${TH_SOURCE_DIR}/compiler/import)
