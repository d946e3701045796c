/* Backend-neutral linking: the system C compiler turns objects and generated C into a shared library with
 * the runtime (compiler/runtime/th_rt.c) compiled in. Both backends' model .so files and the CPU tuner's
 * candidate libraries are linked here. Thread-safe; never prints. */
#ifndef TC_LINK_H
#define TC_LINK_H

#include <stddef.h>

#include "th_status.h"

/* Links objects and the runtime object (tc_runtime_object) into so_path with $CC -shared -O2 -fPIC. srcs are
 * further C files to compile in (may be NULL/0; th_rt.h is on their include path). On failure err (if
 * errlen > 0) gets the compiler's output. TH_ERR_COMPILE, TH_ERR_IO, TH_ERR_NOMEM, TH_ERR_INVALID. */
th_status tc_link_so(int nobjs, const char *const *objs, int nsrcs, const char *const *srcs,
                     const char *so_path, char *err, size_t errlen);

/* Writes the runtime's sources (th_rt.h, th_rt.c), embedded in this binary at build time, into dir
 * (which must exist). */
th_status tc_runtime_write_sources(const char *dir);
/* The runtime (th_rt.c) compiled with $CC -O2 -fPIC once per process into a temporary folder, removed at the
 * process's exit; compiled again if the file went away. *path stays valid until the next call. Thread-safe;
 * call it before fork() so that children find it ready (a child never takes the lock). */
th_status tc_runtime_object(const char **path, char *err, size_t errlen);
/* Makes path (another process's tc_runtime_object, still alive) this process's runtime object, which it
 * neither recompiles nor removes: an exec'd build worker links against its parent's. TH_ERR_NOT_FOUND when
 * the file cannot be read (the worker then compiles its own on first use). */
th_status tc_runtime_object_adopt(const char *path);

#endif
