th_unit_test(server_routes SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_server_routes.c LIBS th_server)
