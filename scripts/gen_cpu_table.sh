#!/usr/bin/env bash
# Regenerates the CPU table of compiler/target.c (tc__cpus): every x86-64 CPU name LLVM 16 knows, with the
# features tunehub's model .so checks (tc__checked) that clang-16 -march=NAME enables. A developer's tool
# (needs llvm-16 and clang-16); paste its output between the braces of tc__cpus.
set -euo pipefail
LLC=${LLC:-/usr/lib/llvm-16/bin/llc}
CLANG=${CLANG:-clang-16}
feats=(sse4.2:SSE4_2 popcnt:POPCNT avx:AVX avx2:AVX2 fma:FMA f16c:F16C bmi:BMI bmi2:BMI2 lzcnt:LZCNT
       movbe:MOVBE avx512f:AVX512F avx512bw:AVX512BW avx512dq:AVX512DQ avx512vl:AVX512VL avx512cd:AVX512CD
       avx512vnni:AVX512VNNI avx512bf16:AVX512BF16 avx512fp16:AVX512FP16 avxvnni:AVXVNNI)
for cpu in $("$LLC" -march=x86-64 -mcpu=help 2>&1 | awk '/Available CPUs/{f=1;next} /^$/{if(f&&n)exit} f{print $1;n++}'); do
  macros=$("$CLANG" -march="$cpu" -E -dM -x c /dev/null 2>/dev/null) || continue  # 32-bit-only CPUs
  grep -q '__x86_64__' <<<"$macros" || continue
  list=""
  for f in "${feats[@]}"; do
    grep -q "#define __${f#*:}__ 1" <<<"$macros" && list+="${list:+,}${f%%:*}"
  done
  printf '    {"%s", "%s"},\n' "$cpu" "$list"
done
