# The tuner's unit tests (module "tuner"): config spaces, search strategies on a synthetic objective, the
# measurement worker (crash, hang, wrong answer, packed weights), and on real kernels with a real store: the
# session stages, records that persist and resume, build lookup, transfer, and the tune CLI.
add_executable(tuner_measure_worker ${CMAKE_CURRENT_LIST_DIR}/test_tuner_worker.c)
target_link_libraries(tuner_measure_worker PRIVATE th_tuner)
th_unit_test(tuner
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_tuner.c ${CMAKE_CURRENT_LIST_DIR}/test_tuner_measure.c
          ${CMAKE_CURRENT_LIST_DIR}/test_tuner_session.c
  LIBS th_tuner dl
  TIMEOUT 600)
add_dependencies(test_tuner tuner_measure_worker)
target_compile_definitions(test_tuner PRIVATE
  TUNER_WORKER_EXE="$<TARGET_FILE:tuner_measure_worker>")
