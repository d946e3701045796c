# The tuner's unit tests (module "tuner"): config spaces, search strategies on synthetic objectives and on
# real kernels when the compiler provides them, the measurement worker (crash, hang, wrong answer), records
# and transfer through the store.
add_executable(tuner_measure_worker ${CMAKE_CURRENT_LIST_DIR}/test_tuner_worker.c)
target_link_libraries(tuner_measure_worker PRIVATE th_tuner)
th_unit_test(tuner
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_tuner.c ${CMAKE_CURRENT_LIST_DIR}/test_tuner_measure.c
  LIBS th_tuner dl
  TIMEOUT 300)
add_dependencies(test_tuner tuner_measure_worker)
target_compile_definitions(test_tuner PRIVATE
  TUNER_WORKER_EXE="$<TARGET_FILE:tuner_measure_worker>")
