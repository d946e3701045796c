# Fault injection against the real daemon on its embedded store (SQLite, a local data dir): kill -9 at random
# moments, a full disk, SQLite's write lock held by another process, the measurement worker killed. The faults are
# the embedded store's, so these have no PostgreSQL twin (th_integration_test would add one).
foreach(case kill9_x20 sqlite_write_lock measure_worker_killed disk_full)
  add_test(NAME faults.${case} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/faults.sh ${case})
  set_tests_properties(faults.${case} PROPERTIES LABELS integration TIMEOUT 600 SKIP_RETURN_CODE 77
                       ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>")
endforeach()
