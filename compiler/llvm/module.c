/* The LLVM module of one build: LLVM's one-time native-target set-up, the module's life cycle with
 * its target machine for the target CPU, the last error kept on it, and the end of its life:
 * verification, the O3 pipeline (LLVMRunPasses "default<O3>") and emission as an object file or as
 * textual IR. The lowering of kernels into it is codegen.c. */
#include <errno.h>
#include <llvm-c/Analysis.h>
#include <llvm-c/BitWriter.h>
#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen_int.h"
#include "objcache.h"
#include "th_sha256.h"
#include "tc_llvm.h"

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_ok;

static void init_llvm(void) {
  init_ok = LLVMInitializeNativeTarget() == 0 && LLVMInitializeNativeAsmPrinter() == 0;
}

void tc_llvm__set_errf(tc_llvm_module_t *m, const char *what, const char *msg) {
  snprintf(m->err, sizeof m->err, "%s%s%s", what, msg ? ": " : "", msg ? msg : "");
}

const char *tc_llvm_errmsg(const tc_llvm_module_t *m) {
  return m ? m->err : "";
}

th_status tc_llvm_module_new(const tc_target *t, const char *name, tc_llvm_module_t **out) {
  if (!t || !out) return TH_ERR_INVALID;
  pthread_once(&init_once, init_llvm);
  if (!init_ok) return TH_ERR_COMPILE;
  tc_llvm_module_t *m = calloc(1, sizeof *m);
  if (!m) return TH_ERR_NOMEM;
  m->t = *t;
  LLVMTargetRef target = NULL;
  char *msg = NULL;
  if (LLVMGetTargetFromTriple(t->triple, &target, &msg)) {
    if (msg) LLVMDisposeMessage(msg);
    free(m);
    return TH_ERR_COMPILE;
  }
  m->tm = LLVMCreateTargetMachine(target, t->triple, t->cpu, t->features, LLVMCodeGenLevelAggressive,
                                  LLVMRelocPIC, LLVMCodeModelDefault);
  if (!m->tm) {
    free(m);
    return TH_ERR_COMPILE;
  }
  m->ctx = LLVMContextCreate();
  m->mod = LLVMModuleCreateWithNameInContext(name ? name : "tunehub", m->ctx);
  LLVMSetTarget(m->mod, t->triple);
  LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(m->tm);
  LLVMSetModuleDataLayout(m->mod, dl);
  LLVMDisposeTargetData(dl);
  *out = m;
  return TH_OK;
}

void tc_llvm_module_free(tc_llvm_module_t *m) {
  if (!m) return;
  if (m->mod) LLVMDisposeModule(m->mod);
  if (m->ctx) LLVMContextDispose(m->ctx);
  if (m->tm) LLVMDisposeTargetMachine(m->tm);
  free(m);
}

static th_status optimise(tc_llvm_module_t *m) {
  char *msg = NULL;
  if (LLVMVerifyModule(m->mod, LLVMReturnStatusAction, &msg)) {
    tc_llvm__set_errf(m, "verify", msg);
    LLVMDisposeMessage(msg);
    return TH_ERR_COMPILE;
  }
  if (msg) LLVMDisposeMessage(msg);
  LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
  LLVMErrorRef e = LLVMRunPasses(m->mod, "default<O3>", m->tm, opts);
  LLVMDisposePassBuilderOptions(opts);
  if (e) {
    char *em = LLVMGetErrorMessage(e);
    tc_llvm__set_errf(m, "passes", em);
    LLVMDisposeErrorMessage(em);
    return TH_ERR_COMPILE;
  }
  return TH_OK;
}

/* The object cache's file for this module (objcache.h): the sha256 of its bitcode before the passes, the
 * target machine's triple, CPU and features, the pipeline and LLVM's version. 0 when there is no cache. */
static int module_cache_path(tc_llvm_module_t *m, char *path, size_t n) {
  LLVMMemoryBufferRef bc = LLVMWriteBitcodeToMemoryBuffer(m->mod);
  if (!bc) return 0;
  th_sha256 h;
  th_sha256_init(&h);
  th_sha256_update(&h, LLVMGetBufferStart(bc), LLVMGetBufferSize(bc));
  LLVMDisposeMemoryBuffer(bc);
  unsigned v[3] = {0, 0, 0};
  LLVMGetVersion(&v[0], &v[1], &v[2]);
  char what[128];
  snprintf(what, sizeof what, "O3 aggressive pic llvm %u.%u.%u", v[0], v[1], v[2]);
  const char *parts[] = {m->t.triple, m->t.cpu, m->t.features, what};
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
    th_sha256_update(&h, parts[i], strlen(parts[i]) + 1);
  unsigned char d[32];
  th_sha256_final(&h, d);
  return tc_objcache_path("k-", d, ".o", path, n);
}

/* path could not be written: the message says so with errno's text. */
static th_status emit_write_failed(tc_llvm_module_t *m, const char *path, int werr) {
  char why[1200];
  snprintf(why, sizeof why, "cannot write %s: %s", path, strerror(werr ? werr : EIO));
  tc_llvm__set_errf(m, "emit", why);
  return TH_ERR_IO;
}

th_status tc_llvm_emit_object(tc_llvm_module_t *m, const char *path) {
  if (!m || !path || m->emitted) return TH_ERR_INVALID;
  m->emitted = 1;
  char cached[4400];
  int cache = module_cache_path(m, cached, sizeof cached);
  if (cache && tc_objcache_hit(cached)) {
    th_status crc = tc_objcache_copy_out(cached, path);
    if (crc == TH_OK) return TH_OK;
    if (crc == TH_ERR_IO) return emit_write_failed(m, path, errno); /* path's fault, not the cache's */
  }
  th_status rc = optimise(m);
  if (rc != TH_OK) return rc;
  char *msg = NULL;
  LLVMMemoryBufferRef buf = NULL;
  /* emitted to memory and written here: LLVM's own file stream aborts the whole process on a write
   * error (a full disk: "LLVM ERROR: IO failure on output stream"), where this returns the error
   * with its errno */
  if (LLVMTargetMachineEmitToMemoryBuffer(m->tm, m->mod, LLVMObjectFile, &msg, &buf)) {
    tc_llvm__set_errf(m, "emit", msg);
    if (msg) LLVMDisposeMessage(msg);
    return TH_ERR_COMPILE;
  }
  if (msg) LLVMDisposeMessage(msg);
  size_t n = LLVMGetBufferSize(buf);
  FILE *f = fopen(path, "wbe");
  size_t w = f ? fwrite(LLVMGetBufferStart(buf), 1, n, f) : 0;
  int werr = f && w == n ? 0 : errno;
  int closed =
      f ? fclose(f) == 0 : 0; /* a full disk often shows only here, when the buffer is flushed */
  if (!werr && !closed) werr = errno;
  if (!werr && f && cache) tc_objcache_store(cached, LLVMGetBufferStart(buf), n);
  LLVMDisposeMemoryBuffer(buf);
  if (werr || !f) return emit_write_failed(m, path, werr);
  return TH_OK;
}

th_status tc_llvm_emit_ir(tc_llvm_module_t *m, char **ir_text) {
  if (!m || !ir_text || m->emitted) return TH_ERR_INVALID;
  m->emitted = 1;
  th_status rc = optimise(m);
  if (rc != TH_OK) return rc;
  char *s = LLVMPrintModuleToString(m->mod);
  if (!s) return TH_ERR_NOMEM;
  *ir_text = strdup(s);
  LLVMDisposeMessage(s);
  return *ir_text ? TH_OK : TH_ERR_NOMEM;
}
