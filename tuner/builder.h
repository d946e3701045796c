/* The compiler-backed builder: the tune_builder that registry jobs run. A "build" job compiles the network
 * with the best stored record per workload, else a transferred config, else the template's fallback, and
 * publishes the bundle; the manifest says which source each layer's config came from. */
#ifndef TUNE_BUILDER_H
#define TUNE_BUILDER_H

#include "tc/backend.h"
#include "worker.h"

/* The process-wide compiler builder (static storage; thread-safe). */
const tune_builder *tune_builder_compiler(void);

/* The store key's target text for a framework on this machine: "llvm -mcpu=<host cpu>" for llvm,
 * "cuda -arch=sm_XX" for cuda. */
th_status tune_target_for(const char *framework, char *out, size_t n);

/* This machine's concrete targets, the ones a worker registers by default: its CPU ("llvm -mcpu=<host cpu>") and
 * its CUDA device's arch ("cuda -arch=sm_XX") when it has a device. Writes at most max into out and returns
 * how many. Thread-safe. */
int tune_local_targets(char (*out)[256], int max);

/* The concrete target that a worker's --target NAME stands for, into out, when this machine can measure it. NAME
 * is "native" (this CPU), an x86-64 CPU name or micro-architecture level ("znver4", "x86-64-v3") whose features
 * this CPU has, "sm_XX" (the arch of this machine's CUDA device), or a concrete target string ("llvm
 * -mcpu=x86-64-v3", "cuda -arch=sm_90"). TH_ERR_NOT_FOUND or TH_ERR_INVALID for a name no backend knows (err
 * lists the valid ones); TH_ERR_UNSUPPORTED for one this machine cannot measure (err says why: the CPU features
 * it lacks and the targets it can measure, or its device). */
th_status tune_target_measurable(const char *name, char *out, size_t n, char *err, size_t errn);

/* The planned memory of a build of key (tc_network_footprint: the graph passes and the memory plan,
 * no weights made, no code generated) on target (a concrete target string; NULL: key->target, and
 * "" there: this machine's). net is the key's network when the caller has resolved it, else NULL
 * and it is resolved through st at the key's revision (tune_net_resolve; st may be NULL for a zoo
 * network). out is written on TH_OK only; errors, with a message in err (may be NULL):
 * tune_net_resolve's, tc_backend_target_init's and tc_network_footprint's. Thread-safe. */
th_status tune_key_footprint(store_t *st, const store_key *key, const char *target,
                             const tc_netsrc *net, tc_footprint *out, char *err, size_t n);

/* The device of backend b on this server, described once per process: 1 when present (name and arch filled),
 * else 0 with the reason in why ("no CUDA device: ...", or built without CUDA); arch is then the default
 * build arch (sm_90 for cuda). Any output may be NULL. Thread-safe. */
int tune_device(const tc_backend *b, char *name, size_t name_n, char *arch, size_t arch_n, char *why,
                size_t why_n);

#endif
