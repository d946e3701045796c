th_unit_test(common SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_common.c LIBS th_common)
