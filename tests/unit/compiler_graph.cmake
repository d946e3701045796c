# Graph-side compiler tests: graph IR, zoo, params.bin, reference interpreter, passes (the tensor graphs'
# in test_compiler_passes.c), model .so and bundle.
th_unit_test(compiler_graph SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_compiler_graph.c
             ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_compiler_passes.c LIBS th_compiler TIMEOUT 300)
# two reference runs of the full vit_b_16 (20 to 80 s each, with the machine shared)
set_tests_properties(compiler_graph.passes_vit_preserve PROPERTIES TIMEOUT 900)
# Compiled models: every zoo network built into a model .so and compared with the reference interpreter,
# plus the bundle (example.c, corrupt and truncated bundles, bad params.bin).
th_unit_test(compiler_model SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_compiler_graph_model.c
             LIBS th_compiler TIMEOUT 600)
