# The backends' answers to every backend question (compiler/include/tc/backend.h): their target names, how a target name
# is parsed and which backend it belongs to, which precisions a target takes, and the tuner's target resolution
# that asks them (tuner/builder.c).
th_unit_test(compiler_backend SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_compiler_backend.c LIBS th_tuner)
