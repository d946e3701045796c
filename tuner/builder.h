/* The compiler-backed builder: the tune_builder that registry jobs run. A "build" job compiles the network
 * with the best stored record per workload, else a transferred config, else the template's fallback, and
 * publishes the bundle; the manifest says which source each layer's config came from. */
#ifndef TUNE_BUILDER_H
#define TUNE_BUILDER_H

#include "worker.h"

/* The process-wide compiler builder (static storage; thread-safe). */
const tune_builder *tune_builder_compiler(void);

/* The store key's target text for a framework on this machine: "llvm -mcpu=<host cpu>" for llvm,
 * "cuda -arch=sm_XX" for cuda. */
th_status tune_target_for(const char *framework, char *out, size_t n);

#endif
