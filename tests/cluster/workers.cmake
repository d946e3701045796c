# Cluster tests of workers (issue 24): each case starts its own PostgreSQL 15 (pg.sh), a replica daemon and real
# `tunehub worker` processes on 127.0.0.1 (workers.sh). Skipped (77) where postgresql-15 is not installed.
foreach(case kill9_resume sigstop_fenced handoff_target fleet_view two_replicas migrate)
  add_test(NAME cluster.workers_${case} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cluster/workers.sh ${case})
  set_tests_properties(cluster.workers_${case} PROPERTIES LABELS cluster TIMEOUT 900 SKIP_RETURN_CODE 77
                       ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>")
endforeach()
