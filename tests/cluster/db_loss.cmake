# Connection loss: a daemon on PostgreSQL answers 503 (database_unavailable, Retry-After) while its database is
# stopped, and serves again once it is back (outage); a tuning job in flight when the database restarts loses
# nothing and finishes (mid_job). Each test runs its own server (it stops it), not the fixture's.
foreach(case outage mid_job)
  add_test(NAME cluster.db_${case} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cluster/db_loss.sh ${case})
  set_tests_properties(cluster.db_${case} PROPERTIES LABELS cluster TIMEOUT 600 SKIP_RETURN_CODE 77
                       ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>")
endforeach()
