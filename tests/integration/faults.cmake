# Fault injection against the real daemon on its embedded store (SQLite, a local data dir): kill -9 at random
# moments, a full disk, SQLite's write lock held by another process, the measurement worker killed. The faults are
# the embedded store's, so these have no PostgreSQL twin (th_integration_test would add one).
foreach(case kill9_x20 sqlite_write_lock measure_worker_killed)
  add_test(NAME faults.${case} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/faults.sh ${case})
  set_tests_properties(faults.${case} PROPERTIES LABELS integration TIMEOUT 600 SKIP_RETURN_CODE 77
                       ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>")
endforeach()
# faults.disk_full finds a defect not yet fixed: a build on a full disk fails with "llvm build failed: i/o error",
# which does not say that the disk is full (compiler/build.c: the failing write sets no message). Registered but
# DISABLED, so that ctest lists it as such instead of passing it; enable it with the fix.
add_test(NAME faults.disk_full COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/faults.sh disk_full)
set_tests_properties(faults.disk_full PROPERTIES LABELS integration TIMEOUT 600 SKIP_RETURN_CODE 77 DISABLED TRUE
                     ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>")
