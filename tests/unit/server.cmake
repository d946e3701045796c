th_unit_test(server SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_server.c LIBS th_server)
