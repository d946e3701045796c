/* What the LLVM backend's two files share: the module's state (module.c owns its life cycle,
 * codegen.c lowers kernels into it) and its error recorder. Not for use outside compiler/llvm/. */
#ifndef TC_LLVM_CODEGEN_INT_H
#define TC_LLVM_CODEGEN_INT_H

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "tc_llvm.h"

struct tc_llvm_module {
  tc_target t;
  LLVMContextRef ctx;
  LLVMModuleRef mod;
  LLVMTargetMachineRef tm;
  int nouts; /* outlined functions so far, for unique names */
  int emitted;
  char err[2048];
};

/* Sets m's error message to "what: msg" (or "what" when msg is NULL). */
void tc_llvm__set_errf(tc_llvm_module_t *m, const char *what, const char *msg);

#endif
