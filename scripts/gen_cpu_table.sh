#!/usr/bin/env bash
# Regenerates the CPU table of compiler/target.c (tc__cpus): every x86-64 CPU name LLVM 16 knows, with every
# feature of the model .so's CPUID guard (tc__features, the x86-64 baseline aside) that clang-16 -march=NAME
# enables. clang's table of a CPU name is LLVM's own (llvm/TargetParser/X86TargetParser); the LLVM C API has no
# call that reads a target machine's subtarget features, hence this tool. A developer's tool (needs llvm-16 and
# clang-16); paste its output between the braces of tc__cpus. A macro of a feature that tc__features lacks must
# be added there (with its CPUID bit) first: the guard must be able to test everything LLVM is given.
set -euo pipefail
LLC=${LLC:-/usr/lib/llvm-16/bin/llc}
CLANG=${CLANG:-clang-16}
# LLVM feature name : the macro clang defines for it (tc__features' order)
feats=(cx16:GCC_HAVE_SYNC_COMPARE_AND_SWAP_16 sahf:LAHF_SAHF sse3:SSE3 ssse3:SSSE3 sse4.1:SSE4_1 sse4.2:SSE4_2
       crc32:CRC32 popcnt:POPCNT pclmul:PCLMUL aes:AES movbe:MOVBE rdrnd:RDRND xsave:XSAVE avx:AVX fma:FMA f16c:F16C
       lzcnt:LZCNT sse4a:SSE4A prfchw:PRFCHW xop:XOP lwp:LWP fma4:FMA4 tbm:TBM mwaitx:MWAITX clzero:CLZERO
       rdpru:RDPRU wbnoinvd:WBNOINVD 3dnow:3dNOW 3dnowa:3dNOW_A fsgsbase:FSGSBASE sgx:SGX bmi:BMI avx2:AVX2 bmi2:BMI2 invpcid:INVPCID rtm:RTM
       avx512f:AVX512F avx512dq:AVX512DQ rdseed:RDSEED adx:ADX avx512ifma:AVX512IFMA clflushopt:CLFLUSHOPT
       clwb:CLWB avx512pf:AVX512PF avx512er:AVX512ER avx512cd:AVX512CD sha:SHA avx512bw:AVX512BW avx512vl:AVX512VL
       prefetchwt1:PREFETCHWT1 avx512vbmi:AVX512VBMI pku:PKU waitpkg:WAITPKG avx512vbmi2:AVX512VBMI2 shstk:SHSTK
       gfni:GFNI vaes:VAES vpclmulqdq:VPCLMULQDQ avx512vnni:AVX512VNNI avx512bitalg:AVX512BITALG
       avx512vpopcntdq:AVX512VPOPCNTDQ rdpid:RDPID kl:KL cldemote:CLDEMOTE movdiri:MOVDIRI movdir64b:MOVDIR64B
       enqcmd:ENQCMD uintr:UINTR avx512vp2intersect:AVX512VP2INTERSECT serialize:SERIALIZE tsxldtrk:TSXLDTRK
       pconfig:PCONFIG amx-bf16:AMX_BF16 avx512fp16:AVX512FP16 amx-tile:AMX_TILE amx-int8:AMX_INT8 raoint:RAOINT
       avxvnni:AVXVNNI avx512bf16:AVX512BF16 cmpccxadd:CMPCCXADD amx-fp16:AMX_FP16 hreset:HRESET avxifma:AVXIFMA
       avxvnniint8:AVXVNNIINT8 avxneconvert:AVXNECONVERT prefetchi:PREFETCHI xsaveopt:XSAVEOPT xsavec:XSAVEC
       xsaves:XSAVES ptwrite:PTWRITE widekl:WIDEKL)
for cpu in $("$LLC" -march=x86-64 -mcpu=help 2>&1 | awk '/Available CPUs/{f=1;next} /^$/{if(f&&n)exit} f{print $1;n++}'); do
  macros=$("$CLANG" -march="$cpu" -E -dM -x c /dev/null 2>/dev/null) || continue  # 32-bit-only CPUs
  grep -q '__x86_64__' <<<"$macros" || continue
  list=""
  for f in "${feats[@]}"; do
    m=${f#*:}
    [[ $m == GCC_* ]] && pat="#define __${m} 1" || pat="#define __${m}__ 1"
    grep -qx "$pat" <<<"$macros" && list+="${list:+,}${f%%:*}"
  done
  printf '    {"%s", "%s"},\n' "$cpu" "$list"
done
