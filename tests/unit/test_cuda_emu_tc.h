/* The CPU emulation of the tensor-core and cp.async helpers that the CUDA prelude defines for sm_80
 * and newer (th_mma_tf32, th_cp_async1/4, th_cp_commit, th_cp_wait), as C++ source text for the
 * emulation headers of test_compiler_cuda.c (threads as pthreads) and test_compiler_cuda_emu.c
 * (threads as coroutines). Before it, the header defines TH_EMU_TID() (the thread's linear index in
 * its block) and TH_EMU_WARP_SYNC() (a rendezvous of the thread's warp, or of the whole block where
 * every warp issues its mma uniformly). The mma is collective as on the GPU: each lane posts its
 * fragments (PTX's m16n8k8 lane layout), the warp meets, each lane computes its four outputs from
 * the others' registers with TF32 inputs (cvt.rna: round to nearest, ties away, 10 mantissa bits)
 * and fp32 accumulation, and the warp meets again before a slot is reused. cp.async is deferred:
 * copies queue per thread and happen only when th_cp_wait releases their group, so a kernel that
 * reads a tile before waiting for it reads stale data here too. Dynamic shared memory
 * (TH_DYN_SHARED) is a static array of the largest opt-in size (227 KiB), shared by a block's
 * threads as __shared__ arrays are. */
#ifndef TEST_CUDA_EMU_TC_H
#define TEST_CUDA_EMU_TC_H

#define TH_EMU_TC_SRC                                                                              \
  "#include <vector>\n"                                                                            \
  "#define TH_DYN_SHARED(name) static float name[232448 / 4] __attribute__((aligned(16)))\n"      \
  "static inline float th_emu_rna(float x) { unsigned u; std::memcpy(&u, &x, 4);\n"                \
  "  if ((u & 0x7f800000u) != 0x7f800000u) u += 0x1000u;\n"                                        \
  "  u &= 0xffffe000u; std::memcpy(&x, &u, 4); return x; }\n"                                      \
  "static float th_mma_a[1024][4], th_mma_b[1024][2], th_mma_c[1024][4];\n"                        \
  "static void th_mma_tf32(float *d, const float *a, const float *b) {\n"                          \
  "  int me = TH_EMU_TID(), base = me & ~31, lane = me & 31, g = lane >> 2, t = lane & 3;\n"       \
  "  for (int i = 0; i < 4; i++) th_mma_a[me][i] = th_emu_rna(a[i]), th_mma_c[me][i] = d[i];\n"    \
  "  for (int i = 0; i < 2; i++) th_mma_b[me][i] = th_emu_rna(b[i]);\n"                            \
  "  TH_EMU_WARP_SYNC();\n"                                                                        \
  "  float out[4];\n"                                                                              \
  "  for (int r = 0; r < 4; r++) {\n"                                                              \
  "    int row = g + 8 * (r >> 1), col = 2 * t + (r & 1);\n"                                       \
  "    float s = th_mma_c[me][r];\n"                                                               \
  "    for (int k = 0; k < 8; k++) {\n"                                                            \
  "      float av = th_mma_a[base + (row & 7) * 4 + (k & 3)][(row >> 3) + 2 * (k >> 2)];\n"        \
  "      float bv = th_mma_b[base + col * 4 + (k & 3)][k >> 2];\n"                                 \
  "      s += av * bv;\n"                                                                          \
  "    }\n"                                                                                        \
  "    out[r] = s;\n"                                                                              \
  "  }\n"                                                                                          \
  "  TH_EMU_WARP_SYNC();\n"                                                                        \
  "  for (int r = 0; r < 4; r++) d[r] = out[r];\n"                                                 \
  "}\n"                                                                                            \
  "struct th_cp { float *dst; const float *src; int n; bool ok; int group; };\n"                   \
  "static std::vector<th_cp> th_cpq[1024];\n"                                                      \
  "static int th_cpg[1024];\n"                                                                     \
  "static void th_emu_tc_reset() { for (int i = 0; i < 1024; i++) th_cpq[i].clear(), th_cpg[i] = " \
  "0; }\n"                                                                                         \
  "static void th_cp_async4(float *dst, const float *src, bool ok) {\n"                            \
  "  int me = TH_EMU_TID(); th_cpq[me].push_back(th_cp{dst, src, 4, ok, th_cpg[me]}); }\n"         \
  "static void th_cp_async1(float *dst, const float *src, bool ok) {\n"                            \
  "  int me = TH_EMU_TID(); th_cpq[me].push_back(th_cp{dst, src, 1, ok, th_cpg[me]}); }\n"         \
  "static void th_cp_commit() { th_cpg[TH_EMU_TID()]++; }\n"                                       \
  "static void th_cp_wait(int n) {\n"                                                              \
  "  int me = TH_EMU_TID(); std::vector<th_cp> &q = th_cpq[me], keep;\n"                           \
  "  for (const th_cp &c : q) {\n"                                                                 \
  "    if (c.group >= th_cpg[me] - n) { keep.push_back(c); continue; }\n"                          \
  "    for (int i = 0; i < c.n; i++) c.dst[i] = c.ok ? c.src[i] : 0.0f;\n"                         \
  "  }\n"                                                                                          \
  "  q.swap(keep);\n"                                                                              \
  "}\n"

#endif
