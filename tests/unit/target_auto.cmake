# ?target=auto's choice (compiler/target.c tc_target_auto behind the backend hook tc_backend_target_auto): the
# cpuinfo and LLVM spellings of a client's features, a CPU name, the levels, native, unknown names, cuda archs.
th_unit_test(target_auto SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_target_auto.c LIBS th_compiler)
