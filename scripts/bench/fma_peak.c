/* FP32 FMA peak of this machine, 1 and 2 threads: 12 independent FMA chains per thread (enough to cover
 * the FMA latency on both AVX2 and AVX-512 cores). Built and run by scripts/bench/lib.sh. */
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#define ITERS 100000000L
#ifdef __AVX512F__
typedef __m512 V; enum { W = 16 };
#define SET1 _mm512_set1_ps
#define FMA _mm512_fmadd_ps
static float sum(V v) { return _mm512_reduce_add_ps(v); }
#else
typedef __m256 V; enum { W = 8 };
#define SET1 _mm256_set1_ps
#define FMA _mm256_fmadd_ps
static float sum(V v) { float f[8]; _mm256_storeu_ps(f, v); return f[0] + f[7]; }
#endif
enum { ACC = 12 };
static volatile float sink;
static void *work(void *arg) {
  long n = *(long *)arg;
  /* 12 named accumulators (not an array: at -O2 GCC would keep an array in memory) */
  V a = SET1(0.999999f), b = SET1(1e-7f);
  V x0 = SET1(0), x1 = SET1(1), x2 = SET1(2), x3 = SET1(3), x4 = SET1(4), x5 = SET1(5);
  V x6 = SET1(6), x7 = SET1(7), x8 = SET1(8), x9 = SET1(9), x10 = SET1(10), x11 = SET1(11);
  for (long i = 0; i < n; i++) {
    x0 = FMA(x0, a, b); x1 = FMA(x1, a, b); x2 = FMA(x2, a, b); x3 = FMA(x3, a, b);
    x4 = FMA(x4, a, b); x5 = FMA(x5, a, b); x6 = FMA(x6, a, b); x7 = FMA(x7, a, b);
    x8 = FMA(x8, a, b); x9 = FMA(x9, a, b); x10 = FMA(x10, a, b); x11 = FMA(x11, a, b);
  }
  sink = sum(x0) + sum(x1) + sum(x2) + sum(x3) + sum(x4) + sum(x5) + sum(x6) + sum(x7) + sum(x8) +
         sum(x9) + sum(x10) + sum(x11);
  return NULL;
}
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static double run(int threads, long n) {
  pthread_t th[64];
  double t0 = now();
  for (int i = 0; i < threads; i++) pthread_create(&th[i], NULL, work, &n);
  for (int i = 0; i < threads; i++) pthread_join(th[i], NULL);
  return 2.0 * W * ACC * (double)n * threads / (now() - t0) / 1e9;
}
int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : ITERS;
  run(1, n / 10);
  for (int t = 1; t <= 2; t++) {
    double best = 0;
    for (int r = 0; r < 3; r++) { double g = run(t, n); if (g > best) best = g; }
    printf("peak_%dt=%.2f\n", t, best);
  }
  printf("isa=%s\n", W == 16 ? "avx512f" : "avx2+fma");
  return 0;
}
