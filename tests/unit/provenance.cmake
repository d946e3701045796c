th_unit_test(provenance SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_provenance.c LIBS th_tuner)
