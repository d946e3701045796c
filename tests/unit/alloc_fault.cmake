# Out-of-memory tests (th_alloc.h's fault switch): every allocation of a store and a server operation failed
# in turn. Run under ASan by scripts/sanitize.sh, which sees the leaks.
th_unit_test(alloc_fault SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_alloc_fault.c LIBS th_server)
