# The tensor kernel families (issue 20): the naive oracle tc_ref_kernel on hand-computed cases, and every
# CPU template compiled through LLVM against it.
th_unit_test(compiler_ops_tensor SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_compiler_ops_tensor.c
             LIBS th_compiler TIMEOUT 600)
