/* Targets: the host through LLVM, or a CPU a client names (cross-compilation): the triple, the CPU name and
 * feature string that the backend passes to its TargetMachine, and the vector width / register count that
 * templates size tiles by. */
#include "target.h"

#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <stdio.h>
#include <string.h>

#include "th_buf.h"

static int has_feature(const char *features, const char *name) {
  size_t n = strlen(name);
  const char *p = features;
  while (p && *p) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == n + 1 && p[0] == '+' && strncmp(p + 1, name, n) == 0) return 1;
    p = end ? end + 1 : NULL;
  }
  return 0;
}

static void derive(tc_target *t) {
  if (has_feature(t->features, "avx512f")) {
    t->simd_lanes = 16;
    t->nregs = 32;
  } else if (has_feature(t->features, "avx2") || has_feature(t->features, "avx")) {
    t->simd_lanes = 8;
    t->nregs = 16;
  } else {
    t->simd_lanes = 4;
    t->nregs = 16;
  }
}

th_status tc_target_init(tc_target *t, const char *cpu, const char *features) {
  if (!t || !cpu || !features) return TH_ERR_INVALID;
  if (strlen(cpu) >= sizeof t->cpu || strlen(features) >= sizeof t->features) return TH_ERR_TOO_LARGE;
  char *triple = LLVMGetDefaultTargetTriple();
  if (!triple) return TH_ERR_COMPILE;
  int w = snprintf(t->triple, sizeof t->triple, "%s", triple);
  LLVMDisposeMessage(triple);
  if (w < 0 || (size_t)w >= sizeof t->triple) return TH_ERR_TOO_LARGE;
  snprintf(t->cpu, sizeof t->cpu, "%s", cpu);
  snprintf(t->features, sizeof t->features, "%s", features);
  derive(t);
  return TH_OK;
}

/* Every x86 feature LLVM 16 knows (llvm/lib/TargetParser/Host.cpp, getHostCPUFeatures), with the
 * CPUID bit that says a CPU has it and the register state the OS must save for it (XGETBV), in one
 * order: the model .so's guard (model/model_rt.c) checks each feature a bundle was compiled with by
 * these coordinates, which the compiler writes into model.c (tc_target_guard), so the guard can
 * test any feature LLVM may be given. */
enum { TC__EAX = 0, TC__EBX, TC__ECX, TC__EDX };
enum { TC__STATE_NONE = 0, TC__STATE_YMM, TC__STATE_ZMM, TC__STATE_AMX };
static const struct tc__feature {
  const char *name;
  unsigned leaf, sub;
  unsigned char reg, bit, state;
} tc__features[] = {
    /* the x86-64 baseline: every x86-64 CPU has them (the host's feature string names them) */
    {"64bit", 0x80000001u, 0, TC__EDX, 29, 0},
    {"cx8", 1, 0, TC__EDX, 8, 0},
    {"cmov", 1, 0, TC__EDX, 15, 0},
    {"mmx", 1, 0, TC__EDX, 23, 0},
    {"fxsr", 1, 0, TC__EDX, 24, 0},
    {"sse", 1, 0, TC__EDX, 25, 0},
    {"sse2", 1, 0, TC__EDX, 26, 0},
    {"x87", 1, 0, TC__EDX, 0, 0},
    /* leaf 1 */
    {"cx16", 1, 0, TC__ECX, 13, 0},
    {"sahf", 0x80000001u, 0, TC__ECX, 0, 0},
    {"sse3", 1, 0, TC__ECX, 0, 0},
    {"ssse3", 1, 0, TC__ECX, 9, 0},
    {"sse4.1", 1, 0, TC__ECX, 19, 0},
    {"sse4.2", 1, 0, TC__ECX, 20, 0},
    {"crc32", 1, 0, TC__ECX, 20, 0},
    {"popcnt", 1, 0, TC__ECX, 23, 0},
    {"pclmul", 1, 0, TC__ECX, 1, 0},
    {"aes", 1, 0, TC__ECX, 25, 0},
    {"movbe", 1, 0, TC__ECX, 22, 0},
    {"rdrnd", 1, 0, TC__ECX, 30, 0},
    {"xsave", 1, 0, TC__ECX, 27, TC__STATE_YMM},
    {"avx", 1, 0, TC__ECX, 28, TC__STATE_YMM},
    {"fma", 1, 0, TC__ECX, 12, TC__STATE_YMM},
    {"f16c", 1, 0, TC__ECX, 29, TC__STATE_YMM},
    /* extended leaves */
    {"lzcnt", 0x80000001u, 0, TC__ECX, 5, 0},
    {"sse4a", 0x80000001u, 0, TC__ECX, 6, 0},
    {"prfchw", 0x80000001u, 0, TC__ECX, 8, 0},
    {"xop", 0x80000001u, 0, TC__ECX, 11, TC__STATE_YMM},
    {"lwp", 0x80000001u, 0, TC__ECX, 15, 0},
    {"fma4", 0x80000001u, 0, TC__ECX, 16, TC__STATE_YMM},
    {"tbm", 0x80000001u, 0, TC__ECX, 21, 0},
    {"mwaitx", 0x80000001u, 0, TC__ECX, 29, 0},
    {"clzero", 0x80000008u, 0, TC__EBX, 0, 0},
    {"rdpru", 0x80000008u, 0, TC__EBX, 4, 0},
    {"wbnoinvd", 0x80000008u, 0, TC__EBX, 9, 0},
    {"3dnow", 0x80000001u, 0, TC__EDX, 31, 0},
    {"3dnowa", 0x80000001u, 0, TC__EDX, 30, 0},
    /* leaf 7, subleaf 0 */
    {"fsgsbase", 7, 0, TC__EBX, 0, 0},
    {"sgx", 7, 0, TC__EBX, 2, 0},
    {"bmi", 7, 0, TC__EBX, 3, 0},
    {"avx2", 7, 0, TC__EBX, 5, TC__STATE_YMM},
    {"bmi2", 7, 0, TC__EBX, 8, 0},
    {"invpcid", 7, 0, TC__EBX, 10, 0},
    {"rtm", 7, 0, TC__EBX, 11, 0},
    {"avx512f", 7, 0, TC__EBX, 16, TC__STATE_ZMM},
    {"avx512dq", 7, 0, TC__EBX, 17, TC__STATE_ZMM},
    {"rdseed", 7, 0, TC__EBX, 18, 0},
    {"adx", 7, 0, TC__EBX, 19, 0},
    {"avx512ifma", 7, 0, TC__EBX, 21, TC__STATE_ZMM},
    {"clflushopt", 7, 0, TC__EBX, 23, 0},
    {"clwb", 7, 0, TC__EBX, 24, 0},
    {"avx512pf", 7, 0, TC__EBX, 26, TC__STATE_ZMM},
    {"avx512er", 7, 0, TC__EBX, 27, TC__STATE_ZMM},
    {"avx512cd", 7, 0, TC__EBX, 28, TC__STATE_ZMM},
    {"sha", 7, 0, TC__EBX, 29, 0},
    {"avx512bw", 7, 0, TC__EBX, 30, TC__STATE_ZMM},
    {"avx512vl", 7, 0, TC__EBX, 31, TC__STATE_ZMM},
    {"prefetchwt1", 7, 0, TC__ECX, 0, 0},
    {"avx512vbmi", 7, 0, TC__ECX, 1, TC__STATE_ZMM},
    {"pku", 7, 0, TC__ECX, 4, 0},
    {"waitpkg", 7, 0, TC__ECX, 5, 0},
    {"avx512vbmi2", 7, 0, TC__ECX, 6, TC__STATE_ZMM},
    {"shstk", 7, 0, TC__ECX, 7, 0},
    {"gfni", 7, 0, TC__ECX, 8, 0},
    {"vaes", 7, 0, TC__ECX, 9, TC__STATE_YMM},
    {"vpclmulqdq", 7, 0, TC__ECX, 10, TC__STATE_YMM},
    {"avx512vnni", 7, 0, TC__ECX, 11, TC__STATE_ZMM},
    {"avx512bitalg", 7, 0, TC__ECX, 12, TC__STATE_ZMM},
    {"avx512vpopcntdq", 7, 0, TC__ECX, 14, TC__STATE_ZMM},
    {"rdpid", 7, 0, TC__ECX, 22, 0},
    {"kl", 7, 0, TC__ECX, 23, 0},
    {"cldemote", 7, 0, TC__ECX, 25, 0},
    {"movdiri", 7, 0, TC__ECX, 27, 0},
    {"movdir64b", 7, 0, TC__ECX, 28, 0},
    {"enqcmd", 7, 0, TC__ECX, 29, 0},
    {"uintr", 7, 0, TC__EDX, 5, 0},
    {"avx512vp2intersect", 7, 0, TC__EDX, 8, TC__STATE_ZMM},
    {"serialize", 7, 0, TC__EDX, 14, 0},
    {"tsxldtrk", 7, 0, TC__EDX, 16, 0},
    {"pconfig", 7, 0, TC__EDX, 18, 0},
    {"amx-bf16", 7, 0, TC__EDX, 22, TC__STATE_AMX},
    {"avx512fp16", 7, 0, TC__EDX, 23, TC__STATE_ZMM},
    {"amx-tile", 7, 0, TC__EDX, 24, TC__STATE_AMX},
    {"amx-int8", 7, 0, TC__EDX, 25, TC__STATE_AMX},
    /* leaf 7, subleaf 1 */
    {"raoint", 7, 1, TC__EAX, 3, 0},
    {"avxvnni", 7, 1, TC__EAX, 4, TC__STATE_YMM},
    {"avx512bf16", 7, 1, TC__EAX, 5, TC__STATE_ZMM},
    {"cmpccxadd", 7, 1, TC__EAX, 7, 0},
    {"amx-fp16", 7, 1, TC__EAX, 21, TC__STATE_AMX},
    {"hreset", 7, 1, TC__EAX, 22, 0},
    {"avxifma", 7, 1, TC__EAX, 23, TC__STATE_YMM},
    {"avxvnniint8", 7, 1, TC__EDX, 4, TC__STATE_YMM},
    {"avxneconvert", 7, 1, TC__EDX, 5, TC__STATE_YMM},
    {"prefetchi", 7, 1, TC__EDX, 14, 0},
    /* leaves 0xd, 0x14, 0x19 */
    {"xsaveopt", 0xd, 1, TC__EAX, 0, TC__STATE_YMM},
    {"xsavec", 0xd, 1, TC__EAX, 1, TC__STATE_YMM},
    {"xsaves", 0xd, 1, TC__EAX, 3, TC__STATE_YMM},
    {"ptwrite", 0x14, 0, TC__EBX, 4, 0},
    {"widekl", 0x19, 0, TC__EBX, 2, 0},
};
enum { TC__NFEATURES = sizeof tc__features / sizeof tc__features[0], TC__NBASELINE = 8 };

static int tc__feature_index(const char *name, size_t len) {
  for (int i = 0; i < TC__NFEATURES; i++)
    if (strlen(tc__features[i].name) == len && strncmp(tc__features[i].name, name, len) == 0)
      return i;
  return -1;
}

/* LLVM 16's x86-64 CPU names (llc-16 -march=x86-64 -mcpu=help) with every feature of tc__features
 * (the baseline aside) that clang-16 -march=NAME enables, which is LLVM's own table of what the
 * name implies: the LLVM C API has no call that reads a target machine's subtarget features, so
 * scripts/gen_cpu_table.sh asks clang once and regenerates this. tc_target_named gives LLVM the
 * name with exactly these features on and every other feature of tc__features off, so that the code
 * never uses a feature the bundle's guard does not check. */
static const struct {
  const char *name, *features;
} tc__cpus[] = {
    {"alderlake",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,aes,movbe,rdrnd,xsave,avx,fma,f16c,"
     "lzcnt,prfchw,fsgsbase,sgx,bmi,avx2,bmi2,invpcid,rdseed,adx,clflushopt,clwb,sha,pku,waitpkg,"
     "shstk,gfni,vaes,vpclmulqdq,rdpid,kl,cldemote,movdiri,movdir64b,serialize,pconfig,avxvnni,"
     "hreset,xsaveopt,xsavec,xsaves,ptwrite,widekl"},
    {"amdfam10", "cx16,sahf,sse3,popcnt,lzcnt,sse4a,prfchw,3dnow,3dnowa"},
    {"athlon-fx", "3dnow,3dnowa"},
    {"athlon64", "3dnow,3dnowa"},
    {"athlon64-sse3", "sse3,3dnow,3dnowa"},
    {"atom", "cx16,sahf,sse3,ssse3,movbe"},
    {"barcelona", "cx16,sahf,sse3,popcnt,lzcnt,sse4a,prfchw,3dnow,3dnowa"},
    {"bdver1",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,aes,xsave,avx,lzcnt,sse4a,prfchw,xop,"
     "lwp,fma4"},
    {"bdver2",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,aes,xsave,avx,fma,f16c,lzcnt,sse4a,"
     "prfchw,xop,lwp,fma4,tbm,bmi"},
    {"bdver3",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,aes,xsave,avx,fma,f16c,lzcnt,sse4a,"
     "prfchw,xop,lwp,fma4,tbm,fsgsbase,bmi,xsaveopt"},
    {"bdver4",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,aes,movbe,rdrnd,xsave,avx,fma,f16c,"
     "lzcnt,sse4a,prfchw,xop,lwp,fma4,tbm,mwaitx,fsgsbase,bmi,avx2,bmi2,xsaveopt"},
    {"bonnell", "cx16,sahf,sse3,ssse3,movbe"},
    {"broadwell",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,movbe,rdrnd,xsave,avx,fma,f16c,lzcnt,"
     "prfchw,fsgsbase,bmi,avx2,bmi2,invpcid,rdseed,adx,xsaveopt"},
    {"btver1", "cx16,sahf,sse3,ssse3,popcnt,lzcnt,sse4a,prfchw"},
    {"btver2",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,aes,movbe,xsave,avx,f16c,lzcnt,sse4a,"
     "prfchw,bmi,xsaveopt"},
    {"cannonlake",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,aes,movbe,rdrnd,xsave,avx,fma,f16c,"
     "lzcnt,prfchw,fsgsbase,sgx,bmi,avx2,bmi2,invpcid,avx512f,avx512dq,rdseed,adx,avx512ifma,"
     "clflushopt,avx512cd,sha,avx512bw,avx512vl,avx512vbmi,pku,xsaveopt,xsavec,xsaves"},
    {"cascadelake",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,aes,movbe,rdrnd,xsave,avx,fma,f16c,"
     "lzcnt,prfchw,fsgsbase,bmi,avx2,bmi2,invpcid,avx512f,avx512dq,rdseed,adx,clflushopt,clwb,"
     "avx512cd,avx512bw,avx512vl,pku,avx512vnni,xsaveopt,xsavec,xsaves"},
    {"cooperlake",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,aes,movbe,rdrnd,xsave,avx,fma,f16c,"
     "lzcnt,prfchw,fsgsbase,bmi,avx2,bmi2,invpcid,avx512f,avx512dq,rdseed,adx,clflushopt,clwb,"
     "avx512cd,avx512bw,avx512vl,pku,avx512vnni,avx512bf16,xsaveopt,xsavec,xsaves"},
    {"core-avx-i",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,rdrnd,xsave,avx,f16c,fsgsbase,"
     "xsaveopt"},
    {"core-avx2",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,movbe,rdrnd,xsave,avx,fma,f16c,lzcnt,"
     "fsgsbase,bmi,avx2,bmi2,invpcid,xsaveopt"},
    {"core2", "cx16,sahf,sse3,ssse3"},
    {"corei7", "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt"},
    {"corei7-avx", "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,xsave,avx,xsaveopt"},
    {"emeraldrapids",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,aes,movbe,rdrnd,xsave,avx,fma,f16c,"
     "lzcnt,prfchw,wbnoinvd,fsgsbase,sgx,bmi,avx2,bmi2,invpcid,avx512f,avx512dq,rdseed,adx,"
     "avx512ifma,clflushopt,clwb,avx512cd,sha,avx512bw,avx512vl,avx512vbmi,pku,waitpkg,avx512vbmi2,"
     "shstk,gfni,vaes,vpclmulqdq,avx512vnni,avx512bitalg,avx512vpopcntdq,rdpid,cldemote,movdiri,"
     "movdir64b,enqcmd,uintr,serialize,tsxldtrk,pconfig,amx-bf16,avx512fp16,amx-tile,amx-int8,"
     "avxvnni,avx512bf16,xsaveopt,xsavec,xsaves,ptwrite"},
    {"goldmont",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,aes,movbe,rdrnd,xsave,prfchw,fsgsbase,"
     "rdseed,clflushopt,sha,xsaveopt,xsavec,xsaves"},
    {"goldmont-plus",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,aes,movbe,rdrnd,xsave,prfchw,fsgsbase,"
     "sgx,rdseed,clflushopt,sha,rdpid,xsaveopt,xsavec,xsaves,ptwrite"},
    {"grandridge",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,aes,movbe,rdrnd,xsave,avx,fma,f16c,"
     "lzcnt,prfchw,fsgsbase,sgx,bmi,avx2,bmi2,invpcid,rdseed,adx,clflushopt,clwb,sha,pku,waitpkg,"
     "shstk,gfni,vaes,vpclmulqdq,rdpid,kl,cldemote,movdiri,movdir64b,serialize,pconfig,raoint,"
     "avxvnni,cmpccxadd,hreset,avxifma,avxvnniint8,avxneconvert,xsaveopt,xsavec,xsaves,ptwrite,"
     "widekl"},
    {"graniterapids",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,aes,movbe,rdrnd,xsave,avx,fma,f16c,"
     "lzcnt,prfchw,wbnoinvd,fsgsbase,sgx,bmi,avx2,bmi2,invpcid,avx512f,avx512dq,rdseed,adx,"
     "avx512ifma,clflushopt,clwb,avx512cd,sha,avx512bw,avx512vl,avx512vbmi,pku,waitpkg,avx512vbmi2,"
     "shstk,gfni,vaes,vpclmulqdq,avx512vnni,avx512bitalg,avx512vpopcntdq,rdpid,cldemote,movdiri,"
     "movdir64b,enqcmd,uintr,serialize,tsxldtrk,pconfig,amx-bf16,avx512fp16,amx-tile,amx-int8,"
     "avxvnni,avx512bf16,amx-fp16,prefetchi,xsaveopt,xsavec,xsaves,ptwrite"},
    {"haswell",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,movbe,rdrnd,xsave,avx,fma,f16c,lzcnt,"
     "fsgsbase,bmi,avx2,bmi2,invpcid,xsaveopt"},
    {"icelake-client",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,aes,movbe,rdrnd,xsave,avx,fma,f16c,"
     "lzcnt,prfchw,fsgsbase,sgx,bmi,avx2,bmi2,invpcid,avx512f,avx512dq,rdseed,adx,avx512ifma,"
     "clflushopt,avx512cd,sha,avx512bw,avx512vl,avx512vbmi,pku,avx512vbmi2,gfni,vaes,vpclmulqdq,"
     "avx512vnni,avx512bitalg,avx512vpopcntdq,rdpid,xsaveopt,xsavec,xsaves"},
    {"icelake-server",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,aes,movbe,rdrnd,xsave,avx,fma,f16c,"
     "lzcnt,prfchw,wbnoinvd,fsgsbase,sgx,bmi,avx2,bmi2,invpcid,avx512f,avx512dq,rdseed,adx,"
     "avx512ifma,clflushopt,clwb,avx512cd,sha,avx512bw,avx512vl,avx512vbmi,pku,avx512vbmi2,gfni,"
     "vaes,vpclmulqdq,avx512vnni,avx512bitalg,avx512vpopcntdq,rdpid,pconfig,xsaveopt,xsavec,"
     "xsaves"},
    {"ivybridge",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,rdrnd,xsave,avx,f16c,fsgsbase,"
     "xsaveopt"},
    {"k8", "3dnow,3dnowa"},
    {"k8-sse3", "sse3,3dnow,3dnowa"},
    {"knl",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,aes,movbe,rdrnd,xsave,avx,fma,f16c,"
     "lzcnt,prfchw,fsgsbase,bmi,avx2,bmi2,invpcid,avx512f,rdseed,adx,avx512pf,avx512er,avx512cd,"
     "prefetchwt1,xsaveopt"},
    {"knm",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,aes,movbe,rdrnd,xsave,avx,fma,f16c,"
     "lzcnt,prfchw,fsgsbase,bmi,avx2,bmi2,invpcid,avx512f,rdseed,adx,avx512pf,avx512er,avx512cd,"
     "prefetchwt1,avx512vpopcntdq,xsaveopt"},
    {"meteorlake",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,aes,movbe,rdrnd,xsave,avx,fma,f16c,"
     "lzcnt,prfchw,fsgsbase,sgx,bmi,avx2,bmi2,invpcid,rdseed,adx,clflushopt,clwb,sha,pku,waitpkg,"
     "shstk,gfni,vaes,vpclmulqdq,rdpid,kl,cldemote,movdiri,movdir64b,serialize,pconfig,avxvnni,"
     "hreset,xsaveopt,xsavec,xsaves,ptwrite,widekl"},
    {"nehalem", "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt"},
    {"nocona", "cx16,sse3"},
    {"opteron", "3dnow,3dnowa"},
    {"opteron-sse3", "sse3,3dnow,3dnowa"},
    {"penryn", "cx16,sahf,sse3,ssse3,sse4.1"},
    {"raptorlake",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,aes,movbe,rdrnd,xsave,avx,fma,f16c,"
     "lzcnt,prfchw,fsgsbase,sgx,bmi,avx2,bmi2,invpcid,rdseed,adx,clflushopt,clwb,sha,pku,waitpkg,"
     "shstk,gfni,vaes,vpclmulqdq,rdpid,kl,cldemote,movdiri,movdir64b,serialize,pconfig,avxvnni,"
     "hreset,xsaveopt,xsavec,xsaves,ptwrite,widekl"},
    {"rocketlake",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,aes,movbe,rdrnd,xsave,avx,fma,f16c,"
     "lzcnt,prfchw,fsgsbase,bmi,avx2,bmi2,invpcid,avx512f,avx512dq,rdseed,adx,avx512ifma,"
     "clflushopt,avx512cd,sha,avx512bw,avx512vl,avx512vbmi,pku,avx512vbmi2,gfni,vaes,vpclmulqdq,"
     "avx512vnni,avx512bitalg,avx512vpopcntdq,rdpid,xsaveopt,xsavec,xsaves"},
    {"sandybridge", "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,xsave,avx,xsaveopt"},
    {"sapphirerapids",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,aes,movbe,rdrnd,xsave,avx,fma,f16c,"
     "lzcnt,prfchw,wbnoinvd,fsgsbase,sgx,bmi,avx2,bmi2,invpcid,avx512f,avx512dq,rdseed,adx,"
     "avx512ifma,clflushopt,clwb,avx512cd,sha,avx512bw,avx512vl,avx512vbmi,pku,waitpkg,avx512vbmi2,"
     "shstk,gfni,vaes,vpclmulqdq,avx512vnni,avx512bitalg,avx512vpopcntdq,rdpid,cldemote,movdiri,"
     "movdir64b,enqcmd,uintr,serialize,tsxldtrk,pconfig,amx-bf16,avx512fp16,amx-tile,amx-int8,"
     "avxvnni,avx512bf16,xsaveopt,xsavec,xsaves,ptwrite"},
    {"sierraforest",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,aes,movbe,rdrnd,xsave,avx,fma,f16c,"
     "lzcnt,prfchw,fsgsbase,sgx,bmi,avx2,bmi2,invpcid,rdseed,adx,clflushopt,clwb,sha,pku,waitpkg,"
     "shstk,gfni,vaes,vpclmulqdq,rdpid,kl,cldemote,movdiri,movdir64b,serialize,pconfig,avxvnni,"
     "cmpccxadd,hreset,avxifma,avxvnniint8,avxneconvert,xsaveopt,xsavec,xsaves,ptwrite,widekl"},
    {"silvermont", "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,movbe,rdrnd,prfchw"},
    {"skx",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,aes,movbe,rdrnd,xsave,avx,fma,f16c,"
     "lzcnt,prfchw,fsgsbase,bmi,avx2,bmi2,invpcid,avx512f,avx512dq,rdseed,adx,clflushopt,clwb,"
     "avx512cd,avx512bw,avx512vl,pku,xsaveopt,xsavec,xsaves"},
    {"skylake",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,aes,movbe,rdrnd,xsave,avx,fma,f16c,"
     "lzcnt,prfchw,fsgsbase,sgx,bmi,avx2,bmi2,invpcid,rdseed,adx,clflushopt,xsaveopt,xsavec,"
     "xsaves"},
    {"skylake-avx512",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,aes,movbe,rdrnd,xsave,avx,fma,f16c,"
     "lzcnt,prfchw,fsgsbase,bmi,avx2,bmi2,invpcid,avx512f,avx512dq,rdseed,adx,clflushopt,clwb,"
     "avx512cd,avx512bw,avx512vl,pku,xsaveopt,xsavec,xsaves"},
    {"slm", "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,movbe,rdrnd,prfchw"},
    {"tigerlake",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,aes,movbe,rdrnd,xsave,avx,fma,f16c,"
     "lzcnt,prfchw,fsgsbase,sgx,bmi,avx2,bmi2,invpcid,avx512f,avx512dq,rdseed,adx,avx512ifma,"
     "clflushopt,clwb,avx512cd,sha,avx512bw,avx512vl,avx512vbmi,pku,avx512vbmi2,shstk,gfni,vaes,"
     "vpclmulqdq,avx512vnni,avx512bitalg,avx512vpopcntdq,rdpid,kl,movdiri,movdir64b,"
     "avx512vp2intersect,xsaveopt,xsavec,xsaves,widekl"},
    {"tremont",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,aes,movbe,rdrnd,xsave,prfchw,fsgsbase,"
     "sgx,rdseed,clflushopt,clwb,sha,gfni,rdpid,xsaveopt,xsavec,xsaves,ptwrite"},
    {"westmere", "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul"},
    {"x86-64", ""},
    {"x86-64-v2", "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt"},
    {"x86-64-v3",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,movbe,xsave,avx,fma,f16c,lzcnt,bmi,avx2,"
     "bmi2"},
    {"x86-64-v4",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,movbe,xsave,avx,fma,f16c,lzcnt,bmi,avx2,bmi2,"
     "avx512f,avx512dq,avx512cd,avx512bw,avx512vl"},
    {"znver1",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,aes,movbe,rdrnd,xsave,avx,fma,f16c,"
     "lzcnt,sse4a,prfchw,mwaitx,clzero,fsgsbase,bmi,avx2,bmi2,rdseed,adx,clflushopt,sha,xsaveopt,"
     "xsavec,xsaves"},
    {"znver2",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,aes,movbe,rdrnd,xsave,avx,fma,f16c,"
     "lzcnt,sse4a,prfchw,mwaitx,clzero,rdpru,wbnoinvd,fsgsbase,bmi,avx2,bmi2,rdseed,adx,clflushopt,"
     "clwb,sha,rdpid,xsaveopt,xsavec,xsaves"},
    {"znver3",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,aes,movbe,rdrnd,xsave,avx,fma,f16c,"
     "lzcnt,sse4a,prfchw,mwaitx,clzero,rdpru,wbnoinvd,fsgsbase,bmi,avx2,bmi2,invpcid,rdseed,adx,"
     "clflushopt,clwb,sha,pku,vaes,vpclmulqdq,rdpid,xsaveopt,xsavec,xsaves"},
    {"znver4",
     "cx16,sahf,sse3,ssse3,sse4.1,sse4.2,crc32,popcnt,pclmul,aes,movbe,rdrnd,xsave,avx,fma,f16c,"
     "lzcnt,sse4a,prfchw,mwaitx,clzero,rdpru,wbnoinvd,fsgsbase,bmi,avx2,bmi2,invpcid,avx512f,"
     "avx512dq,rdseed,adx,avx512ifma,clflushopt,clwb,avx512cd,sha,avx512bw,avx512vl,avx512vbmi,pku,"
     "avx512vbmi2,shstk,gfni,vaes,vpclmulqdq,avx512vnni,avx512bitalg,avx512vpopcntdq,rdpid,"
     "avx512bf16,xsaveopt,xsavec,xsaves"},
};

size_t tc_target_cpu_count(void) {
  return sizeof tc__cpus / sizeof tc__cpus[0];
}

const char *tc_target_cpu_at(size_t i) {
  return i < tc_target_cpu_count() ? tc__cpus[i].name : NULL;
}

/* The features of t (tc__features' order) that have lacks (have NULL: all of t's), joined by sep,
 * into out. */
static void tc__features_lacking(const tc_target *t, const tc_target *have, const char *sep, char *out, size_t n) {
  size_t used = 0;
  if (n) out[0] = '\0';
  for (int i = 0; i < TC__NFEATURES; i++) {
    const char *f = tc__features[i].name;
    if (!has_feature(t->features, f) || (have && has_feature(have->features, f))) continue;
    int w = snprintf(out + used, n - used, "%s%s", used ? sep : "", f);
    if (w < 0 || (size_t)w >= n - used) break;
    used += (size_t)w;
  }
}

th_status tc_target_guard(const tc_target *t, th_buf *b, char *err, size_t errlen) {
  if (err && errlen) err[0] = '\0';
  /* a feature LLVM is given that the guard cannot test is refused here, not skipped there */
  char unknown[512] = "";
  size_t used = 0;
  for (const char *p = t->features; p && *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len > 1 && p[0] == '+' && tc__feature_index(p + 1, len - 1) < 0) {
      int w = snprintf(unknown + used, sizeof unknown - used, "%s%.*s", used ? ", " : "",
                       (int)(len - 1), p + 1);
      if (w > 0 && (size_t)w < sizeof unknown - used) used += (size_t)w;
    }
    p = end ? end + 1 : NULL;
  }
  if (used) {
    if (err && errlen)
      snprintf(err, errlen,
               "the CPU target '%s' enables %s, which the model .so's CPUID guard cannot test "
               "(compiler/target.c, "
               "tc__features): refusing to build code that could die of SIGILL instead of refusing "
               "to load",
               t->cpu, unknown);
    return TH_ERR_UNSUPPORTED;
  }
  th_status rc = th_buf_appendf(
      b,
      "\nstatic const char th__cpu_target[] = \"%s\";\n"
      "/* every feature the kernels were compiled for: its CPUID leaf, subleaf, register "
      "(0 eax .. 3 edx) and bit, and the\n * register state the OS must save (1 AVX, 2 "
      "AVX-512, 3 AMX tiles) */\n"
      "struct th__cpu_feature {\n  const char *name;\n  unsigned leaf, sub;\n"
      "  unsigned char reg, bit, state;\n};\n"
      "static const struct th__cpu_feature th__cpu_needs[] = {\n",
      t->cpu);
  for (int i = 0; rc == TH_OK && i < TC__NFEATURES; i++) {
    const struct tc__feature *f = &tc__features[i];
    if (!has_feature(t->features, f->name)) continue;
    rc = th_buf_appendf(b, "    {\"%s\", 0x%xu, %u, %u, %u, %u},\n", f->name, f->leaf, f->sub,
                        f->reg, f->bit, f->state);
  }
  if (rc == TH_OK) rc = th_buf_appendf(b, "    {0, 0, 0, 0, 0, 0}};\n\n");
  return rc;
}

void tc_target_required(const tc_target *t, char *out, size_t n) {
  tc__features_lacking(t, NULL, ",", out, n);
}

void tc_target_missing(const tc_target *t, const tc_target *have, char *out, size_t n) {
  tc__features_lacking(t, have, ", ", out, n);
}

th_status tc_target_host(tc_target *t) {
  if (!t) return TH_ERR_INVALID;
  char *cpu = LLVMGetHostCPUName();
  char *features = LLVMGetHostCPUFeatures();
  th_status rc = (cpu && features) ? tc_target_init(t, cpu, features) : TH_ERR_COMPILE;
  if (cpu) LLVMDisposeMessage(cpu);
  if (features) LLVMDisposeMessage(features);
  return rc;
}

/* 1 when the comma list (no signs) names f. */
static int tc__list_has(const char *list, const char *f) {
  size_t n = strlen(f);
  for (const char *p = list; p && *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == n && strncmp(p, f, n) == 0) return 1;
    p = end ? end + 1 : NULL;
  }
  return 0;
}

static int tc__cpu_index(const char *name) {
  for (size_t i = 0; i < tc_target_cpu_count(); i++)
    if (strcmp(tc__cpus[i].name, name) == 0) return (int)i;
  return -1;
}

static int tc__amd_cpu(const char *name) {
  static const char *const prefixes[] = {"znver", "bdver", "btver", "amdfam", "barcelona", "athlon", "k8",
                                         "opteron"};
  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
    if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0) return 1;
  return 0;
}

int tc_target_known_cpu(const tc_target *host) {
  int best = -1, best_n = -1;
  int amd = has_feature(host->features, "sse4a"); /* AMD's own extension: a tie goes to an AMD name */
  for (size_t i = 0; i < tc_target_cpu_count(); i++) {
    int n = 0, all = 1;
    for (const char *p = tc__cpus[i].features; *p && all;) {
      const char *end = strchr(p, ',');
      size_t len = end ? (size_t)(end - p) : strlen(p);
      char f[32];
      snprintf(f, sizeof f, "%.*s", (int)len, p);
      if (has_feature(host->features, f)) n++;
      else all = 0;
      p = end ? end + 1 : p + len;
    }
    if (!all) continue;
    int vendor = tc__amd_cpu(tc__cpus[i].name) == amd;
    if (n > best_n || (n == best_n && vendor && tc__amd_cpu(tc__cpus[best].name) != amd)) best = (int)i, best_n = n;
  }
  return best;
}

th_status tc_target_named(tc_target *t, const char *name, char *err, size_t errlen) {
  if (!t) return TH_ERR_INVALID;
  if (err && errlen) err[0] = '\0';
  tc_target host;
  th_status rc = tc_target_host(&host);
  if (rc != TH_OK) {
    if (err && errlen) snprintf(err, errlen, "LLVM has no target for this machine");
    return rc;
  }
  if (!name || !*name || !strcmp(name, "native") || !strcmp(name, host.cpu)) {
    if (tc__cpu_index(host.cpu) >= 0) {
      *t = host;
      return TH_OK;
    }
    /* A CPU newer than LLVM 16 (a Zen 5) is "generic" to it, a name that keys AVX-512 and SSE2 machines
     * alike: native is then the most capable CPU LLVM knows whose checked features this one has, built
     * with exactly that CPU's features, so that the key names what the bundle needs. */
    int k = tc_target_known_cpu(&host);
    if (k < 0) {
      *t = host;
      return TH_OK;
    }
    name = tc__cpus[k].name;
  }
  for (size_t i = 0; i < tc_target_cpu_count(); i++) {
    if (strcmp(tc__cpus[i].name, name) != 0) continue;
    /* the CPU's features on and every other one the guard knows off (the baseline is the triple's),
     * so that LLVM uses exactly what the guard checks, whatever else its own table for the name
     * holds */
    char features[sizeof t->features] = "";
    size_t used = 0;
    for (int k = TC__NBASELINE; k < TC__NFEATURES; k++) {
      const char *f = tc__features[k].name;
      int on = tc__list_has(tc__cpus[i].features, f);
      int w = snprintf(features + used, sizeof features - used, "%s%c%s", used ? "," : "",
                       on ? '+' : '-', f);
      if (w > 0 && (size_t)w < sizeof features - used) used += (size_t)w;
    }
    rc = tc_target_init(t, name, features);
    if (rc == TH_OK) snprintf(t->triple, sizeof t->triple, "%s", host.triple);
    return rc;
  }
  if (err && errlen) {
    size_t used = (size_t)snprintf(err, errlen, "unknown CPU target '%s'; valid: native", name);
    for (size_t i = 0; i < tc_target_cpu_count() && used < errlen; i++) {
      int w = snprintf(err + used, errlen - used, ", %s", tc__cpus[i].name);
      if (w < 0) break;
      used += (size_t)w;
    }
  }
  return TH_ERR_NOT_FOUND;
}

/* /proc/cpuinfo's names of the features whose LLVM name differs (the kernel's arch/x86 cpufeatures
 * names); any other flag is looked up by its LLVM name, so a client may send either spelling. */
static const struct {
  const char *cpuinfo, *llvm;
} tc__cpuinfo_names[] = {
    {"lm", "64bit"},
    {"fpu", "x87"},
    {"pni", "sse3"},
    {"sse4_1", "sse4.1"},
    {"sse4_2", "sse4.2"},
    {"pclmulqdq", "pclmul"},
    {"rdrand", "rdrnd"},
    {"lahf_lm", "sahf"},
    {"abm", "lzcnt"},
    {"3dnowprefetch", "prfchw"},
    {"bmi1", "bmi"},
    {"sha_ni", "sha"},
    {"user_shstk", "shstk"},
    {"avx512_vnni", "avx512vnni"},
    {"avx512_vbmi2", "avx512vbmi2"},
    {"avx512_bitalg", "avx512bitalg"},
    {"avx512_vpopcntdq", "avx512vpopcntdq"},
    {"avx512_vp2intersect", "avx512vp2intersect"},
    {"avx512_bf16", "avx512bf16"},
    {"avx512_fp16", "avx512fp16"},
    {"avx_vnni", "avxvnni"},
    {"amx_bf16", "amx-bf16"},
    {"amx_tile", "amx-tile"},
    {"amx_int8", "amx-int8"},
    {"amx_fp16", "amx-fp16"},
    {"avx_ifma", "avxifma"},
    {"avx_vnni_int8", "avxvnniint8"},
    {"avx_ne_convert", "avxneconvert"},
    {"3dnowext", "3dnowa"},
    {"cmpccxadd", "cmpccxadd"},
};

/* The /proc/cpuinfo flags (the kernel's arch/x86 cpufeatures names) that name no instruction set
 * LLVM compiles with: system, virtualisation, power and mitigation flags. They are skipped quietly;
 * a flag neither here nor a feature is listed as unknown in ?target=auto's reason. */
static const char tc__cpuinfo_system[] =
    " vme de pse tsc msr pae mce apic sep mtrr pge mca pat pse36 pn clflush dts acpi ss ht tm ia64 "
    "pbe syscall mp"
    " nx mmxext fxsr_opt pdpe1gb rdtscp recovery longrun lrti cxmmx k8 k7 p3 p4 constant_tsc up "
    "art arch_perfmon"
    " pebs bts syscall32 sysenter32 rep_good acc_power nopl xtopology tsc_reliable nonstop_tsc "
    "cpuid extd_apicid"
    " amd_dcm aperfmperf rapl nonstop_tsc_s3 tsc_known_freq dtes64 monitor ds_cpl vmx smx est tm2 "
    "cid sdbg xtpr"
    " pdcm pcid dca x2apic tsc_deadline_timer hypervisor rng rng_en ace ace_en ace2 ace2_en phe "
    "phe_en pmm pmm_en"
    " cmp_legacy svm extapic cr8_legacy misalignsse osvw ibs skinit wdt tce nodeid_msr topoext "
    "perfctr_core"
    " perfctr_nb bpext ptsc perfctr_llc ring3mwait cpuid_fault cpb epb cat_l3 cat_l2 cdp_l3 "
    "invpcid_single"
    " hw_pstate proc_feedback sme pti intel_ppin cdp_l2 ssbd mba sev sev_es sev_snp ibrs ibpb stibp"
    " ibrs_enhanced tpr_shadow vnmi flexpriority ept vpid vmmcall ept_ad xenpv tsc_adjust hle "
    "fdp_excptn_only"
    " smep erms cqm mpx rdt_a smap intel_pt xgetbv1 cqm_llc cqm_occup_llc cqm_mbm_total "
    "cqm_mbm_local irperf"
    " xsaveerptr amd_ppin amd_ssbd virt_ssbd amd_ssb_no amd_stibp dtherm ida arat pln pts hwp "
    "hwp_notify"
    " hwp_act_window hwp_epp hwp_pkg_req hfi npt lbrv svm_lock nrip_save tsc_scale vmcb_clean "
    "flushbyasid"
    " decodeassists pausefilter pfthreshold avic v_vmsave_vmload vgif v_spec_ctrl x2avic umip "
    "ospke tme la57"
    " bus_lock_detect sgx_lc overflow_recov succor smca avx512_4vnniw avx512_4fmaps fsrm "
    "srbds_ctrl md_clear"
    " rtm_always_abort tsx_force_abort hybrid_cpu arch_lbr ibt flush_l1d arch_capabilities "
    "core_capabilities"
    " spec_ctrl_ssbd split_lock_detect fsrs fzrm fsrc cppc debug_swap ";

/* Lists flag f in unknown (un bytes, *used of them taken) unless it is a system flag of cpuinfo's;
 * the list stops near 200 bytes (a reason is one header line). */
static void tc__note_unknown(const char *f, char *unknown, size_t un, size_t *used) {
  char word[64];
  snprintf(word, sizeof word, " %.60s ", f);
  if (strstr(tc__cpuinfo_system, word) || *used >= 200) return;
  size_t at = *used;
  int w = snprintf(unknown + *used, un - *used, "%s%s", *used ? ", " : "", f);
  if (w > 0 && (size_t)w < un - *used) *used += (size_t)w;
  for (size_t i = at; i < *used;
       i++) /* the client's bytes go into a response header: printable ASCII */
    if (unknown[i] < 0x20 || unknown[i] > 0x7e) unknown[i] = '?';
}

/* Appends "+f" to feats (a tc_target feature string) unless it holds it already. */
static void tc__feature_add(char *feats, size_t n, const char *f) {
  if (has_feature(feats, f)) return;
  size_t used = strlen(feats);
  snprintf(feats + used, n - used, "%s+%s", used ? "," : "", f);
}

/* The client's machine as a tc_target: the features of list (cpuinfo or LLVM names, any case) or of
 * the CPU name cpu, plus the x86-64 baseline; the names neither spelling knows go into unknown (",
 * "). */
static th_status tc__client_target(const char *list, const char *cpu, tc_target *have,
                                   char *unknown, size_t un, char *err, size_t errlen) {
  char feats[sizeof have->features] = "";
  size_t uused = 0;
  if (un) unknown[0] = '\0';
  for (int i = 0; i < TC__NBASELINE; i++)
    tc__feature_add(feats, sizeof feats, tc__features[i].name);
  if (cpu && *cpu) {
    if (!strcmp(cpu, "native") || tc__cpu_index(cpu) < 0) {
      size_t used =
          err && errlen ? (size_t)snprintf(err, errlen, "unknown client CPU '%s'; valid:", cpu) : 0;
      for (size_t i = 0; err && i < tc_target_cpu_count() && used < errlen; i++)
        used +=
            (size_t)snprintf(err + used, errlen - used, "%s %s", i ? "," : "", tc__cpus[i].name);
      return TH_ERR_INVALID;
    }
    for (const char *p = tc__cpus[tc__cpu_index(cpu)].features; *p;) {
      size_t len = strcspn(p, ",");
      char f[32];
      snprintf(f, sizeof f, "%.*s", (int)len, p);
      tc__feature_add(feats, sizeof feats, f);
      p += len + (p[len] == ',');
    }
  }
  const char *p = list ? list : "";
  for (p += strspn(p, ", \t"); *p; p += strspn(p, ", \t")) {
    size_t len = strcspn(p, ", \t");
    char f[48];
    if (len > 0 && len < sizeof f) {
      for (size_t k = 0; k < len; k++)
        f[k] = (char)(p[k] >= 'A' && p[k] <= 'Z' ? p[k] - 'A' + 'a' : p[k]);
      f[len] = '\0';
      const char *name = f;
      for (size_t k = 0; k < sizeof tc__cpuinfo_names / sizeof tc__cpuinfo_names[0]; k++)
        if (!strcmp(f, tc__cpuinfo_names[k].cpuinfo)) name = tc__cpuinfo_names[k].llvm;
      if (tc__feature_index(name, strlen(name)) >= 0) {
        tc__feature_add(feats, sizeof feats, name);
        if (!strcmp(name, "sse4.2"))
          tc__feature_add(feats, sizeof feats, "crc32"); /* LLVM splits it out */
      } else {
        tc__note_unknown(f, unknown, un, &uused);
      }
    } else {
      char f2[48];
      snprintf(f2, sizeof f2, "%.20s...", p); /* a name too long to be a feature, cut */
      tc__note_unknown(f2, unknown, un, &uused);
    }
    p += len;
  }
  return tc_target_init(have, cpu && *cpu ? cpu : "client", feats);
}

th_status tc_target_auto(const char *features, const char *cpu, char *name, size_t n, char *reason,
                         size_t rn, char *err, size_t errlen) {
  if (err && errlen) err[0] = '\0';
  tc_target have, native;
  char unknown[256];
  th_status rc = tc__client_target(features, cpu, &have, unknown, sizeof unknown, err, errlen);
  if (rc != TH_OK) return rc;
  rc = tc_target_named(&native, NULL, err, errlen);
  if (rc != TH_OK) return rc;
  char missing[1024], why[1536];
  tc_target_missing(&native, &have, missing, sizeof missing);
  if (!missing[0]) {
    snprintf(name, n, "native");
    snprintf(why, sizeof why, "client has every feature of native %s", native.cpu);
  } else {
    /* the levels, most capable first; the baseline x86-64 (no features) always fits */
    static const char *const levels[] = {"x86-64-v4", "x86-64-v3", "x86-64-v2", "x86-64"};
    size_t used = (size_t)snprintf(why, sizeof why, "client lacks %s (needed by native %s)",
                                   missing, native.cpu);
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
      tc_target lv;
      rc = tc_target_named(&lv, levels[i], err, errlen);
      if (rc != TH_OK) return rc;
      char lack[512];
      tc_target_missing(&lv, &have, lack, sizeof lack);
      if (!lack[0]) {
        snprintf(name, n, "%s", levels[i]);
        if (used < sizeof why) snprintf(why + used, sizeof why - used, "; %s covered", levels[i]);
        break;
      }
      if (i == 0 && used < sizeof why) /* the near miss: what the best level would have needed */
        used += (size_t)snprintf(why + used, sizeof why - used, "; %s needs %s", levels[i], lack);
    }
  }
  if (unknown[0])
    snprintf(reason, rn, "%s; ignored unknown features: %s", why, unknown);
  else
    snprintf(reason, rn, "%s", why);
  return TH_OK;
}
