# The object cache (compiler/objcache.c): its private folder and when it is refused, stores and hits, the copy
# out, and the size cap that removes the least recently used objects first.
th_unit_test(compiler_objcache SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_compiler_objcache.c LIBS th_compiler)
