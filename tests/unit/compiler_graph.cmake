# Graph-side compiler tests: graph IR, zoo, params.bin, reference interpreter, passes, model .so and bundle.
th_unit_test(compiler_graph SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_compiler_graph.c
             LIBS th_compiler TIMEOUT 300)
