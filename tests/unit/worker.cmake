th_unit_test(worker SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_worker.c
                            ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_builder.c
             LIBS th_tuner PkgConfig::ARCHIVE
             TIMEOUT 300 PG_TWIN worker_pg)
