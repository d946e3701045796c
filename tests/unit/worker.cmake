th_unit_test(worker SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_worker.c
             LIBS th_tuner PkgConfig::ARCHIVE)
