th_unit_test(store SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_store.c LIBS th_store)
