th_unit_test(store SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_store.c LIBS th_store PG_TWIN store_pg)
target_compile_definitions(test_store PRIVATE TH_SCHEMA_PATH="${TH_SOURCE_DIR}/schema.sql")
