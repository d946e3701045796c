# The scheduling policy's own test: built from tuner/sched_policy.c alone with th_common, without the tuner
# library, the store or the scheduler's threads, so that the policy stays a pure function of its arguments (a
# call into the runtime or the store from there fails to link here).
th_unit_test(sched_policy SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_sched_policy.c
             ${PROJECT_SOURCE_DIR}/tuner/sched_policy.c LIBS th_common)
target_include_directories(test_sched_policy PRIVATE ${PROJECT_SOURCE_DIR}/tuner
                           $<TARGET_PROPERTY:th_store,INTERFACE_INCLUDE_DIRECTORIES>)
