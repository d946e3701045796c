/* The compiler-backed builder: the tune_builder that registry jobs run. A "build" job compiles the network
 * with the best stored record per workload, else a transferred config, else the template's fallback, and
 * publishes the bundle; the manifest says which source each layer's config came from. */
#ifndef TUNE_BUILDER_H
#define TUNE_BUILDER_H

#include "backend.h"
#include "worker.h"

/* The process-wide compiler builder (static storage; thread-safe). */
const tune_builder *tune_builder_compiler(void);

/* The store key's target text for a framework on this machine: "llvm -mcpu=<host cpu>" for llvm,
 * "cuda -arch=sm_XX" for cuda. */
th_status tune_target_for(const char *framework, char *out, size_t n);

/* The device of backend b on this server, described once per process: 1 when present (name and arch filled),
 * else 0 with the reason in why ("no CUDA device: ...", or built without CUDA); arch is then the default
 * build arch (sm_90 for cuda). Any output may be NULL. Thread-safe. */
int tune_device(const tc_backend *b, char *name, size_t name_n, char *arch, size_t arch_n, char *why,
                size_t why_n);

#endif
