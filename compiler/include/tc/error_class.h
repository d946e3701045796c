/* tc_error_class: the outcome classes of measuring one candidate config, AutoTVM's numbers. The
 * compiler's measurement (cuda/measure.c) and the tuner (tuner/, which runs the CPU measurements
 * and the build stage) both report them, and the store keeps them in tuning_records.error_class, so
 * the numbers are fixed: a new class is added last and none is ever renumbered. */
#ifndef TC_ERROR_CLASS_H
#define TC_ERROR_CLASS_H

/* X(name, number, text) */
#define TC_ERROR_CLASSES(X)                                                                       \
  X(NONE, 0, "ok")                                                                                \
  X(INSTANTIATION, 1, "instantiation") /* the config is not valid for the workload (not built) */ \
  X(COMPILE_HOST, 2, "compile host")   /* codegen or the host compiler failed */                  \
  X(COMPILE_DEVICE, 3, "compile device") /* NVRTC or the driver's module load failed */           \
  X(RUNTIME_DEVICE, 4, "runtime device") /* the launch or run failed, or the worker crashed */    \
  X(WRONG_ANSWER, 5, "wrong answer")     /* the output differs from the reference */              \
  X(BUILD_TIMEOUT, 6, "build timeout")   /* the build ran past its time */                        \
  X(RUN_TIMEOUT, 7, "run timeout")       /* the check or the timing ran past its time */          \
  X(UNKNOWN, 8, "unknown")

typedef enum tc_error_class {
#define TC__ERROR_CLASS_ENUM(name, num, text) TC_ERROR_CLASS_##name = num,
  TC_ERROR_CLASSES(TC__ERROR_CLASS_ENUM)
#undef TC__ERROR_CLASS_ENUM
} tc_error_class;

/* The class's text ("wrong answer"); "unknown" for a number that is not a class. Thread-safe. */
const char *tc_error_class_str(int error_class);

#endif
