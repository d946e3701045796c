th_unit_test(gc SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_gc.c LIBS th_store PG_TWIN gc_pg)
