/* The model runtime: a persistent pthread pool for the generated kernels' parallel loops and the weight
 * packers. Parallel-for hands [0, n) out in contiguous chunks from an atomic counter, the calling thread
 * included ("guided" scheduling): each grab takes 1 / (2 x threads) of what is left, at most
 * n / (4 x threads), so the first chunks are long (a thread keeps its weights and bands in cache across
 * consecutive tasks) and the last ones are single tasks, and no thread waits at the end for more than one
 * task of another. When a core is slower (a shared or throttled core, another tenant), the others take
 * its remaining chunks instead of waiting for it.
 *
 * The caller waits only for the chunks that were handed out, never for a worker to show up: a worker
 * that is descheduled, or still asleep, when the loop starts finds the counter at its end and does
 * nothing, while the caller (and any awake worker) has done its share. On a loaded machine a
 * parallel-for thus costs at worst the serial time, not a scheduler time slice per call. To make a late
 * worker harmless, the counter and the loop's generation share one 64-bit word: a worker takes a chunk
 * only by a compare-and-swap that names the generation it read the loop's fields in, so it can never
 * take part of a later loop with an earlier loop's function or bounds.
 *
 * Workers spin briefly on the generation before sleeping, so back-to-back kernels do not pay a wake-up
 * each; the caller signals the condition variable only when a worker sleeps on it. */
#include "th_rt.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TH_RT_MAX_THREADS 256
#define TH_RT_SPIN 20000
/* pauses of the waiting caller before it yields its core (to a descheduled worker holding a chunk) */
#define TH_RT_WAIT_SPIN 2000

typedef void (*th_rt_fn)(void *ctx, int64_t begin, int64_t end);

/* state = generation << 32 | the first index not handed out yet */
#define ST_GEN(s) ((uint32_t)((s) >> 32))
#define ST_IDX(s) ((int64_t)((s)&0xffffffffu))
#define ST_MAKE(g, i) (((uint64_t)(g) << 32) | (uint64_t)(i))

static struct {
  pthread_once_t once;
  int nthreads;
  pthread_mutex_t busy; /* one parallel-for at a time */
  pthread_mutex_t mu;   /* with cv: sleeping workers */
  pthread_cond_t cv;
  atomic_int sleepers;
  _Atomic uint64_t state;
  atomic_llong done; /* indices of the current generation that have run */
  /* the current loop; written by the caller before it publishes the generation, read by workers
   * that may be late (hence atomics, relaxed: a stale read is only ever used after a compare-and-swap
   * that failed) */
  _Atomic(th_rt_fn) fn;
  _Atomic(void *) ctx;
  atomic_llong n, chunk;
  atomic_int stop;
  pthread_t threads[TH_RT_MAX_THREADS];
} pool = {.once = PTHREAD_ONCE_INIT,
          .nthreads = 1,
          .busy = PTHREAD_MUTEX_INITIALIZER,
          .mu = PTHREAD_MUTEX_INITIALIZER,
          .cv = PTHREAD_COND_INITIALIZER};

static _Thread_local int in_parallel;

/* Takes and runs chunks of generation gen until none is left or the pool has moved on to another loop. */
static void run_chunks(uint32_t gen) {
  int64_t div = 2 * (int64_t)pool.nthreads;
  uint64_t s = atomic_load_explicit(&pool.state, memory_order_acquire);
  while (ST_GEN(s) == gen) {
    int64_t b = ST_IDX(s), n = atomic_load_explicit(&pool.n, memory_order_relaxed);
    if (b >= n) return;
    int64_t c = (n - b + div - 1) / div, cmax = atomic_load_explicit(&pool.chunk, memory_order_relaxed);
    if (c > cmax) c = cmax;
    th_rt_fn fn = atomic_load_explicit(&pool.fn, memory_order_relaxed);
    void *ctx = atomic_load_explicit(&pool.ctx, memory_order_relaxed);
    /* Success means the word still held (gen, b): the loop is still gen, whose fields were read above
     * (acq_rel keeps those reads before the swap). On failure s is reloaded. */
    if (!atomic_compare_exchange_weak_explicit(&pool.state, &s, ST_MAKE(gen, b + c), memory_order_acq_rel,
                                               memory_order_acquire))
      continue;
    fn(ctx, b, b + c);
    atomic_fetch_add_explicit(&pool.done, c, memory_order_release);
    s = atomic_load_explicit(&pool.state, memory_order_acquire);
  }
}

static void *worker(void *arg) {
  (void)arg;
  uint32_t seen = 0;
  in_parallel = 1;
  for (;;) {
    uint32_t g;
    int spins = 0;
    while ((g = ST_GEN(atomic_load(&pool.state))) == seen) {
      if (++spins < TH_RT_SPIN) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        continue;
      }
      pthread_mutex_lock(&pool.mu);
      atomic_fetch_add(&pool.sleepers, 1);
      while (ST_GEN(atomic_load(&pool.state)) == seen) pthread_cond_wait(&pool.cv, &pool.mu);
      atomic_fetch_sub(&pool.sleepers, 1);
      pthread_mutex_unlock(&pool.mu);
    }
    seen = g;
    if (atomic_load_explicit(&pool.stop, memory_order_acquire)) break;
    run_chunks(g);
  }
  return NULL;
}

/* Publishes generation gen (the loop's fields already written) and wakes sleeping workers. A worker
 * counts itself in sleepers before it checks the generation under mu, and both sides use sequentially
 * consistent operations, so either the caller sees the sleeper or the sleeper sees the new generation. */
static void publish(uint32_t gen) {
  atomic_store(&pool.state, ST_MAKE(gen, 0));
  if (atomic_load(&pool.sleepers) > 0) {
    pthread_mutex_lock(&pool.mu);
    pthread_cond_broadcast(&pool.cv);
    pthread_mutex_unlock(&pool.mu);
  }
}

static void pool_init(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  const char *env = getenv("TH_NUM_THREADS");
  if (env && *env) {
    char *end = NULL;
    long v = strtol(env, &end, 10);
    if (end && *end == '\0' && v >= 1) n = v;
  }
  if (n < 1) n = 1;
  if (n > TH_RT_MAX_THREADS) n = TH_RT_MAX_THREADS;
  pool.nthreads = 1;
  /* Conv kernels keep an input band of up to 192 KiB on the stack: give workers room for it whatever
   * the process's default thread stack is. */
  pthread_attr_t attr;
  int have_attr = pthread_attr_init(&attr) == 0;
  if (have_attr) pthread_attr_setstacksize(&attr, (size_t)4 << 20);
  for (long i = 1; i < n; i++) {
    if (pthread_create(&pool.threads[i], have_attr ? &attr : NULL, worker, (void *)(intptr_t)i) != 0)
      break; /* fewer threads is still correct */
    pool.nthreads++;
  }
  if (have_attr) pthread_attr_destroy(&attr);
}

/* When the library is unloaded (dlclose) or the process exits, the workers must leave code that is
 * about to be unmapped: stop and join them. */
__attribute__((destructor)) static void pool_shutdown(void) {
  if (pool.nthreads <= 1) return;
  pthread_mutex_lock(&pool.busy);
  atomic_store_explicit(&pool.stop, 1, memory_order_release);
  atomic_store_explicit(&pool.n, 0, memory_order_relaxed);
  publish(ST_GEN(atomic_load(&pool.state)) + 1);
  for (int i = 1; i < pool.nthreads; i++) pthread_join(pool.threads[i], NULL);
  pool.nthreads = 1;
  pthread_mutex_unlock(&pool.busy);
}

int th_rt_num_threads(void) {
  pthread_once(&pool.once, pool_init);
  return pool.nthreads;
}

void th_rt_parallel_for(void (*fn)(void *ctx, int64_t begin, int64_t end), void *ctx, int64_t n) {
  if (n <= 0) return;
  pthread_once(&pool.once, pool_init);
  /* the counter holds 32 bits; no generated loop comes near, but a larger one is still run */
  if (n == 1 || n > (int64_t)0xffffffffu || pool.nthreads == 1 || in_parallel ||
      pthread_mutex_trylock(&pool.busy) != 0) {
    fn(ctx, 0, n);
    return;
  }
  /* No chunk of the previous generation is outstanding (its caller waited for all of them), so the
   * fields can be rewritten; a late worker's stale reads of them fail its compare-and-swap. */
  uint32_t gen = ST_GEN(atomic_load_explicit(&pool.state, memory_order_relaxed)) + 1;
  atomic_store_explicit(&pool.fn, fn, memory_order_relaxed);
  atomic_store_explicit(&pool.ctx, ctx, memory_order_relaxed);
  atomic_store_explicit(&pool.n, n, memory_order_relaxed);
  atomic_store_explicit(&pool.chunk, (n + 4 * (int64_t)pool.nthreads - 1) / (4 * (int64_t)pool.nthreads),
                        memory_order_relaxed);
  atomic_store_explicit(&pool.done, 0, memory_order_relaxed);
  publish(gen);
  in_parallel = 1;
  run_chunks(gen);
  in_parallel = 0;
  for (int spins = 0; atomic_load_explicit(&pool.done, memory_order_acquire) < n; spins++) {
#if defined(__x86_64__) || defined(__i386__)
    if (spins < TH_RT_WAIT_SPIN) {
      __builtin_ia32_pause();
      continue;
    }
#endif
    sched_yield();
  }
  pthread_mutex_unlock(&pool.busy);
}

void th_rt_pack_conv(const float *src, float *dst, int oc, int ic, int kh, int kw, int in_cb,
                     int oc_tile, int oc_real, int ic_real) {
  int nt = oc / oc_tile, nicb = ic / in_cb;
  size_t o = 0;
  for (int t = 0; t < nt; t++)
    for (int cb = 0; cb < nicb; cb++)
      for (int y = 0; y < kh; y++)
        for (int x = 0; x < kw; x++)
          for (int ci = 0; ci < in_cb; ci++)
            for (int j = 0; j < oc_tile; j++) {
              int co = t * oc_tile + j, c = cb * in_cb + ci;
              dst[o++] = co < oc_real && c < ic_real ? src[(((size_t)co * ic_real + c) * kh + y) * kw + x] : 0.0f;
            }
}

void th_rt_pack_depthwise(const float *src, float *dst, int c, int kh, int kw, int vl, int c_real) {
  size_t o = 0;
  for (int b = 0; b < c / vl; b++)
    for (int y = 0; y < kh; y++)
      for (int x = 0; x < kw; x++)
        for (int j = 0; j < vl; j++)
          dst[o++] = b * vl + j < c_real ? src[((size_t)(b * vl + j) * kh + y) * kw + x] : 0.0f;
}

void th_rt_pack_dense(const float *src, float *dst, int m, int k, int bn) {
  int np = (m + bn - 1) / bn;
  size_t o = 0;
  for (int p = 0; p < np; p++)
    for (int i = 0; i < k; i++)
      for (int j = 0; j < bn; j++) {
        int row = p * bn + j;
        dst[o++] = row < m ? src[(size_t)row * k + i] : 0.0f;
      }
}

void th_rt_pack_winograd(const float *src, float *dst, int oc, int ic, int m, int oc_tile, int oc_real,
                         int ic_real) {
  /* G of F(2,3) and F(4,3) (Lavin and Gray), rows = transformed taps */
  static const double g2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  static const double g4[6][3] = {{1.0 / 4, 0, 0},           {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                  {-1.0 / 6, 1.0 / 6, -1.0 / 6}, {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                  {1.0 / 24, -1.0 / 12, 1.0 / 6}, {0, 0, 1}};
  int a = m + 2;
  static const float zero[9];
  for (int co = 0; co < oc; co++)
    for (int c = 0; c < ic; c++) {
      const float *g = co < oc_real && c < ic_real ? src + ((size_t)co * ic_real + c) * 9 : zero;
      double tmp[6][3];
      for (int i = 0; i < a; i++)
        for (int l = 0; l < 3; l++) {
          double s = 0;
          for (int k = 0; k < 3; k++) s += (m == 2 ? g2[i][k] : g4[i][k]) * g[k * 3 + l];
          tmp[i][l] = s;
        }
      int t = co / oc_tile, j = co % oc_tile;
      for (int i = 0; i < a; i++)
        for (int jj = 0; jj < a; jj++) {
          double s = 0;
          for (int l = 0; l < 3; l++) s += tmp[i][l] * (m == 2 ? g2[jj][l] : g4[jj][l]);
          dst[(((size_t)t * a * a + i * a + jj) * ic + c) * oc_tile + j] = (float)s;
        }
    }
}

size_t th_rt_packed_size(const int p[TH_RT_PACK_NPARAMS]) {
  switch (p[0]) {
    case TH_RT_PACK_CONV: return (size_t)p[1] * p[2] * p[3] * p[4];
    case TH_RT_PACK_DEPTHWISE: return (size_t)p[1] * p[2] * p[3];
    case TH_RT_PACK_DENSE:
      if (p[3] <= 0) return 0;
      return (size_t)((p[1] + p[3] - 1) / p[3]) * p[3] * p[2];
    case TH_RT_PACK_WINOGRAD: return (size_t)p[1] * p[2] * (p[3] + 2) * (p[3] + 2);
    default: return 0;
  }
}

int th_rt_pack_weights(const int p[TH_RT_PACK_NPARAMS], const float *src, float *dst) {
  for (int i = 1; i < TH_RT_PACK_NPARAMS; i++)
    if (p[i] < 0) return -1;
  switch (p[0]) {
    case TH_RT_PACK_CONV:
      if (p[5] <= 0 || p[6] <= 0 || p[2] % p[5] || p[1] % p[6] || p[7] < 1 || p[7] > p[1] || p[8] < 1 ||
          p[8] > p[2])
        return -1;
      th_rt_pack_conv(src, dst, p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8]);
      return 0;
    case TH_RT_PACK_DEPTHWISE:
      if (p[4] <= 0 || p[1] % p[4] || p[5] < 1 || p[5] > p[1]) return -1;
      th_rt_pack_depthwise(src, dst, p[1], p[2], p[3], p[4], p[5]);
      return 0;
    case TH_RT_PACK_DENSE:
      if (p[3] <= 0) return -1;
      th_rt_pack_dense(src, dst, p[1], p[2], p[3]);
      return 0;
    case TH_RT_PACK_WINOGRAD:
      if ((p[3] != 2 && p[3] != 4) || p[4] <= 0 || p[1] % p[4] || p[5] < 1 || p[5] > p[1] || p[6] < 1 ||
          p[6] > p[2])
        return -1;
      th_rt_pack_winograd(src, dst, p[1], p[2], p[3], p[4], p[5], p[6]);
      return 0;
    default: return -1;
  }
}
