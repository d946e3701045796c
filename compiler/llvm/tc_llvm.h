/* The LLVM CPU backend: lowers loop IR kernels into one LLVM module per build, optimises it for the
 * target CPU (LLVMRunPasses "default<O3>") and emits an object file; plus tc_kernels_build_so(), which
 * links such an object with the runtime (compiler/include/tc/link.h) into a shared library (the tuner's candidates,
 * through tc_backend_compile, and the tests).
 * LLVM errors never abort: they come back as TH_ERR_COMPILE with LLVM's message. A module is not
 * thread-safe, but separate modules may be used from separate threads (each owns its LLVMContext). */
#ifndef TC_LLVM_H
#define TC_LLVM_H

#include <stddef.h>

#include "ir.h"
#include "link.h"
#include "space.h"
#include "target.h"
#include "workload.h"

typedef struct tc_llvm_module tc_llvm_module_t;

/* Creates an empty module for target t (copied). *out is owned by the caller (tc_llvm_module_free). */
th_status tc_llvm_module_new(const tc_target *t, const char *name, tc_llvm_module_t **out);
/* Frees the module; accepts NULL. */
void tc_llvm_module_free(tc_llvm_module_t *m);
/* The last error message of this module ("" if none). Valid until the next call on m. */
const char *tc_llvm_errmsg(const tc_llvm_module_t *m);

/* Lowers the template for (wl, cfg) and adds it as the external function `void fn_name(void *const *)`.
 * TH_ERR_INVALID for a bad workload/config, TH_ERR_COMPILE for an LLVM failure (see tc_llvm_errmsg). */
th_status tc_llvm_add_kernel(tc_llvm_module_t *m, const char *fn_name, const tc_workload *wl,
                             const tc_config *cfg);
/* Adds a hand-built loop IR body as `void fn_name(void *const *args)`; buffers with param >= 0 are read
 * from args[param]. */
th_status tc_llvm_add_stmt(tc_llvm_module_t *m, const char *fn_name, const tc_stmt *body);
/* Verifies, optimises (O3) and writes an ELF object to path. The module may not be used afterwards
 * except to be freed. */
th_status tc_llvm_emit_object(tc_llvm_module_t *m, const char *path);
/* Like tc_llvm_emit_object but returns the optimised textual IR (malloc'd, caller frees) instead; for
 * inspection. */
th_status tc_llvm_emit_ir(tc_llvm_module_t *m, char **ir_text);

/* Builds a shared library at so_path holding n kernels fn_names[i] = template(wls[i], cfgs[i]) plus the
 * runtime (thread pool), linked with $CC (default "cc") -shared -O2 -fPIC. Temporary files go next to
 * so_path and are removed. On failure, err (if errlen > 0) gets a message. Thread-safe. */
th_status tc_kernels_build_so(const tc_target *t, int n, const tc_workload *wls, const tc_config *cfgs,
                              const char *const *fn_names, const char *so_path, char *err,
                              size_t errlen);

#endif
