th_unit_test(scheduler SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_scheduler.c
             LIBS th_tuner PG_TWIN scheduler_pg)
