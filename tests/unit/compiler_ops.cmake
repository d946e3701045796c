# The kernels side of the compiler: loop IR, operator templates (differential against naive C), LLVM
# codegen, runtime.
th_unit_test(compiler_ops SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_compiler_ops.c
             LIBS th_compiler TIMEOUT 600)
