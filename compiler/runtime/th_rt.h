/* th_rt: the small runtime compiled into every model .so and kernel library. It holds the thread pool
 * that parallel loops of generated kernels call, and the weight packers that turn torch-layout weights
 * into each template's packed layout once, at model load. Plain C11 + pthreads, no tunehub headers: the
 * sources are embedded into tunehub and written next to each build (tc_runtime_write_sources). */
#ifndef TH_RT_H
#define TH_RT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Runs fn(ctx, begin, end) over [0, n) in contiguous chunks that the threads (the caller included) take
 * from a shared counter, each 1 / (2 x threads) of what is left and at most n / (4 x threads), so the
 * last chunks are single indices; fn may thus run several times per thread, on any chunks. Returns when
 * every chunk ran. The pool is persistent and created on first use with TH_NUM_THREADS threads (default:
 * online cores). A call made from inside a parallel body, or while another thread is using the pool, runs
 * serially in the caller. Never fails. */
void th_rt_parallel_for(void (*fn)(void *ctx, int64_t begin, int64_t end), void *ctx, int64_t n);
/* The pool's thread count (including the caller). */
int th_rt_num_threads(void);

/* Pack kinds: the first int of a pack-params array. */
enum {
  TH_RT_PACK_NONE = 0,
  TH_RT_PACK_CONV = 1,      /* p = {kind, oc, ic, kh, kw, in_cb, oc_tile, oc_real, ic_real} */
  TH_RT_PACK_DEPTHWISE = 2, /* p = {kind, c, kh, kw, vl, c_real} */
  TH_RT_PACK_DENSE = 3,     /* p = {kind, m, k, bn} */
  TH_RT_PACK_WINOGRAD = 4   /* p = {kind, oc, ic, m, oc_tile, oc_real, ic_real}: 3x3 conv weights for
                               F(m x m, 3 x 3) */
};
#define TH_RT_PACK_NPARAMS 10

/* The packers read torch-layout weights of the real channel counts (oc_real, ic_real, c_real) and write
 * the stored ones (oc, ic, c: a padded channel block rounds them up), zero where a channel is padding. */
/* conv2d: OIHW -> [oc/oc_tile][ic/in_cb][kh][kw][in_cb][oc_tile]. */
void th_rt_pack_conv(const float *src, float *dst, int oc, int ic, int kh, int kw, int in_cb,
                     int oc_tile, int oc_real, int ic_real);
/* depthwise: [c,1,kh,kw] -> [c/vl][kh][kw][vl]. */
void th_rt_pack_depthwise(const float *src, float *dst, int c, int kh, int kw, int vl, int c_real);
/* dense: [m,k] -> [ceil(m/bn)][k][bn], the last panel zero-padded. */
void th_rt_pack_dense(const float *src, float *dst, int m, int k, int bn);
/* Winograd F(m x m, 3 x 3), m = 2 or 4: OIHW 3x3 -> U = G g G^T per (oc, ic), laid out
 * [oc/oc_tile][(m+2)^2][ic][oc_tile], computed in double. */
void th_rt_pack_winograd(const float *src, float *dst, int oc, int ic, int m, int oc_tile, int oc_real,
                         int ic_real);
/* Packed size in floats for params p (0 for an unknown kind). */
size_t th_rt_packed_size(const int p[TH_RT_PACK_NPARAMS]);
/* Dispatches on p[0]; returns 0, or -1 for an unknown kind or bad sizes. */
int th_rt_pack_weights(const int p[TH_RT_PACK_NPARAMS], const float *src, float *dst);

#ifdef __cplusplus
}
#endif

#endif
