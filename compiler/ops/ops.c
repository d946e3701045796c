/* Template dispatch and the shared pieces of every template: workload checks, keys and FLOPs, channel
 * blocks, NCHW[cb]c indexing, the fused epilogue, the fast/safe output-width tiling and the packing entry
 * points. The families themselves live one per file (conv2d.c, dense.c, ...). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops_int.h"
#include "th_rt.h"

/* A family without a CPU template yet is NULL: its workloads then have no space (TH_ERR_UNSUPPORTED). */
static const tc__op *const ops[TC_KERNEL_COUNT] = {
    &tc__op_conv2d,  &tc__op_depthwise,      &tc__op_dense,   &tc__op_maxpool,
    &tc__op_avgpool, &tc__op_global_avgpool, &tc__op_softmax, &tc__op_eltwise,
    &tc__op_concat,  &tc__op_layout,
    &tc__op_batch_matmul,
    &tc__op_layer_norm, &tc__op_softmax_rows, &tc__op_unary, &tc__op_embedding, &tc__op_copy,
    &tc__op_binary,
    &tc__op_gather,
    &tc__op_reduce,
    &tc__op_scatter};
static const char *const names[TC_KERNEL_COUNT] = {
#define TC__KERNEL_NAME(id, name, nargs, a0, a1, a2, a3, a4) [TC_KERNEL_##id] = name,
    TC_KERNEL_TABLE(TC__KERNEL_NAME)
#undef TC__KERNEL_NAME
};
_Static_assert(TC_KERNEL_COUNT == 20, "add the new kernel family to ops[]");

/* TC_KERNEL_TABLE's argument slots: (role, size rule) pairs. */
#define TC__ROLE(role, size) TC_ARG_ROLE_##role
#define TC__SIZE(role, size) TC_ARG_SIZE_##size
typedef struct tc__args {
  int nargs;
  tc_arg_role role[TC_MAX_ARGS];
  tc_arg_size size[TC_MAX_ARGS];
} tc__args;
static const tc__args args_table[TC_KERNEL_COUNT] = {
#define TC__KERNEL_ARGS(id, name, nargs, a0, a1, a2, a3, a4)                             \
  [TC_KERNEL_##id] = {nargs,                                                             \
                      {TC__ROLE a0, TC__ROLE a1, TC__ROLE a2, TC__ROLE a3, TC__ROLE a4}, \
                      {TC__SIZE a0, TC__SIZE a1, TC__SIZE a2, TC__SIZE a3, TC__SIZE a4}},
    TC_KERNEL_TABLE(TC__KERNEL_ARGS)
#undef TC__KERNEL_ARGS
};
/* Each row: nargs slots named (and none past them), its last one the only output. */
#define TC__SLOT(a, i, nargs) ((TC__ROLE a != TC_ARG_ROLE_NONE) == ((i) < (nargs)))
#define TC__OUTS(a0, a1, a2, a3, a4)                                     \
  ((TC__ROLE a0 == TC_ARG_ROLE_OUT) + (TC__ROLE a1 == TC_ARG_ROLE_OUT) + \
   (TC__ROLE a2 == TC_ARG_ROLE_OUT) + (TC__ROLE a3 == TC_ARG_ROLE_OUT) + \
   (TC__ROLE a4 == TC_ARG_ROLE_OUT))
#define TC__LAST(nargs, a0, a1, a2, a3, a4) \
  ((nargs) == 1   ? TC__ROLE a0             \
   : (nargs) == 2 ? TC__ROLE a1             \
   : (nargs) == 3 ? TC__ROLE a2             \
   : (nargs) == 4 ? TC__ROLE a3             \
                  : TC__ROLE a4)
#define TC__KERNEL_CHECK(id, name, nargs, a0, a1, a2, a3, a4)                                      \
  _Static_assert((nargs) >= 1 && (nargs) <= TC_MAX_ARGS && TC__SLOT(a0, 0, nargs) &&               \
                     TC__SLOT(a1, 1, nargs) && TC__SLOT(a2, 2, nargs) && TC__SLOT(a3, 3, nargs) && \
                     TC__SLOT(a4, 4, nargs),                                                       \
                 "TC_KERNEL_TABLE: " #id " names nargs slots");                                    \
  _Static_assert(                                                                                  \
      TC__OUTS(a0, a1, a2, a3, a4) == 1 && TC__LAST(nargs, a0, a1, a2, a3, a4) == TC_ARG_ROLE_OUT, \
      "TC_KERNEL_TABLE: " #id "'s last slot is its one output");
TC_KERNEL_TABLE(TC__KERNEL_CHECK)
#undef TC__KERNEL_CHECK
#undef TC__LAST
#undef TC__OUTS
#undef TC__SLOT
#undef TC__SIZE
#undef TC__ROLE

const char *tc_kernel_name(tc_kernel k) {
  return (k >= 0 && k < TC_KERNEL_COUNT) ? names[k] : "unknown";
}

int tc_op_has_template(tc_kernel k) {
  return k >= 0 && k < TC_KERNEL_COUNT && ops[k] != NULL;
}

int tc_op_nargs(tc_kernel k) {
  return k >= 0 && k < TC_KERNEL_COUNT ? args_table[k].nargs : 2;
}

/* Elements a strided operand spans: the offset of its last element plus one (a stride 0
 * broadcasts). */
static int64_t tc__extent(const tc_workload *w, const int *stride, int off) {
  int64_t e = (int64_t)off + 1;
  for (int d = 0; d < w->ndim && d < TC_WL_DIMS; d++) {
    if (w->shape[d] <= 0) return 0;
    e += (int64_t)(w->shape[d] - 1) * (stride[d] < 0 ? -(int64_t)stride[d] : stride[d]);
  }
  return e;
}

static int64_t tc__volume(const tc_workload *w) {
  int64_t v = 1;
  for (int d = 0; d < w->ndim && d < TC_WL_DIMS; d++) v *= w->shape[d];
  return v;
}

static int64_t tc__arg_elems(const tc_workload *w, tc_arg_size size) {
  int64_t map_out = (int64_t)w->n * tc_channels_stored(w->oc, w->out_cb) * w->oh * w->ow;
  switch (size) {
    case TC_ARG_SIZE_NONE:
      return 0;
    case TC_ARG_SIZE_MAP_IN:
      return (int64_t)w->n * tc_channels_stored(w->c, w->in_cb) * w->h * w->w;
    case TC_ARG_SIZE_MAP_OUT:
      return map_out;
    case TC_ARG_SIZE_WEIGHTS:
      return w->kernel == TC_KERNEL_CONV2D
                 ? (int64_t)w->oc * (w->c / tc_workload_groups(w)) * w->kh * w->kw
             : w->kernel == TC_KERNEL_DEPTHWISE ? (int64_t)w->c * w->kh * w->kw
                                                : (int64_t)w->oc * w->c;
    case TC_ARG_SIZE_BIAS:
      return (w->epilogue & TC_EPI_BIAS) ? tc_channels_stored(w->oc, w->out_cb) : 0;
    case TC_ARG_SIZE_RESIDUAL:
      return (w->epilogue & TC_EPI_RESIDUAL) ? map_out : 0;
    case TC_ARG_SIZE_BMM_A:
      return (int64_t)w->n * w->h * w->c;
    case TC_ARG_SIZE_BMM_B:
      return (int64_t)w->n * w->c * w->oc;
    case TC_ARG_SIZE_BMM_OUT:
      return (int64_t)w->n * w->h * w->oc;
    case TC_ARG_SIZE_ROWS:
      return (int64_t)w->n * w->c;
    case TC_ARG_SIZE_ROWS_RESIDUAL:
      return (w->epilogue & TC_EPI_RESIDUAL) ? (int64_t)w->n * w->c : 0;
    case TC_ARG_SIZE_CHANNELS:
      return w->c;
    case TC_ARG_SIZE_MASK:
      return (w->epilogue & TC_EPI_MASK) ? (int64_t)w->n * w->w : 0;
    case TC_ARG_SIZE_ELEMS:
    case TC_ARG_SIZE_REDUCE_OUT:
    case TC_ARG_SIZE_UNARY_IN:
    case TC_ARG_SIZE_UNARY_OUT:
    case TC_ARG_SIZE_INDICES:
      return w->n;
    case TC_ARG_SIZE_TABLE:
      return (int64_t)w->c * w->oc;
    case TC_ARG_SIZE_GATHER_OUT:
      return (int64_t)w->n * w->oc;
    case TC_ARG_SIZE_A_EXTENT:
      return tc__extent(w, w->astride, w->aoff);
    case TC_ARG_SIZE_B_EXTENT:
      return tc__extent(w, w->bstride, w->boff);
    case TC_ARG_SIZE_VOLUME:
      return tc__volume(w);
    case TC_ARG_SIZE_GATHER_DATA:
      return tc__extent(w, w->astride, 0) + (int64_t)(w->c - 1) * w->oc;
    case TC_ARG_SIZE_GATHER_INDEX:
      return tc__extent(w, w->bstride, 0);
    case TC_ARG_SIZE_SCATTER_INDEX:
    case TC_ARG_SIZE_SCATTER_UPDATES:
      return tc__extent(w, w->bstride, 0) + (int64_t)(w->kh - 1) * w->oc;
  }
  return 0;
}

int tc_workload_i64_arg(const tc_workload *wl, int a) {
  if (wl->kernel != TC_KERNEL_BINARY || wl->dtype != TC_WL_I64) return 0;
  if (a == TC_ARG_ELT_A) return wl->op != TC_BINARY_TAKE && wl->op != TC_BINARY_LEAVE;
  if (a == TC_ARG_ELT_OUT) return wl->op < TC_BINARY_EQ || wl->op > TC_BINARY_NE;
  return a == TC_ARG_ELT_B;
}

th_status tc_op_args(const tc_workload *wl, tc_arg_layout *out) {
  if (!wl || !out || wl->kernel < 0 || wl->kernel >= TC_KERNEL_COUNT) return TH_ERR_INVALID;
  const tc__args *row = &args_table[wl->kernel];
  memset(out, 0, sizeof *out);
  out->nargs = row->nargs;
  for (int a = 0; a < row->nargs; a++) {
    tc_arg_size size = row->size[a];
    out->role[a] = row->role[a];
    out->nelems[a] = tc__arg_elems(wl, size);
    out->elem_bytes[a] = 4;
    if (size == TC_ARG_SIZE_INDICES || size == TC_ARG_SIZE_GATHER_INDEX ||
        size == TC_ARG_SIZE_SCATTER_INDEX ||
        (size == TC_ARG_SIZE_UNARY_IN && wl->op == TC_UNARY_CAST_I64) ||
        (size == TC_ARG_SIZE_UNARY_OUT && wl->op == TC_UNARY_CAST_TO_I64) ||
        (size == TC_ARG_SIZE_REDUCE_OUT && wl->op >= TC_REDUCE_ARGMAX) ||
        tc_workload_i64_arg(wl, a))
      out->elem_bytes[a] = 8;
    if (size == TC_ARG_SIZE_INDICES || size == TC_ARG_SIZE_GATHER_INDEX)
      out->index_limit[a] = wl->c;
    /* one part of a concat (or a slice's gaps): the rest of the output stays unwritten */
    if (row->role[a] == TC_ARG_ROLE_OUT && size == TC_ARG_SIZE_B_EXTENT)
      out->partial[a] = wl->boff != 0 || out->nelems[a] != tc__volume(wl);
  }
  return TH_OK;
}

int tc_channel_block(int channels, int simd_lanes) {
  static const int blocks[] = {16, 8, 4, 2, 1};
  int exact = 1;
  for (int i = 0; i < 5; i++)
    if (channels > 0 && channels % blocks[i] == 0) {
      exact = blocks[i];
      break;
    }
  int lanes = simd_lanes < 1 ? 1 : simd_lanes > 16 ? 16 : simd_lanes;
  if (exact >= (lanes < 8 ? lanes : 8) || channels < lanes) return exact;
  /* a padded block of one vector, where it wastes at most a quarter: 58 -> 64 (4 x 16) instead of 29 x 2 */
  int stored = (channels + lanes - 1) / lanes * lanes;
  return (int64_t)stored * 4 <= (int64_t)channels * 5 ? lanes : exact;
}

int tc_channels_stored(int channels, int cb) {
  return cb > 1 ? (channels + cb - 1) / cb * cb : channels;
}

static int is_block(int cb) {
  return cb == 1 || cb == 2 || cb == 4 || cb == 8 || cb == 16;
}

static int out_dim(int in, int k, int s, int p0, int p1) {
  return (in + p0 + p1 - k) / s + 1;
}

/* The shape rules of the tensor families (plain layouts, see ops.h). */
static th_status tc__tensor_check(const tc_workload *w) {
  if (w->in_cb != 1 || w->out_cb != 1) return TH_ERR_INVALID;
  int epi_ok = 0;
  switch (w->kernel) {
    case TC_KERNEL_BATCH_MATMUL:
      if (w->w != 1 || w->ow != 1 || w->h != w->oh || (w->trans_a & ~1) || (w->trans_b & ~1) ||
          !isfinite(w->alpha))
        return TH_ERR_INVALID;
      if ((int64_t)w->n * w->h * w->c > (int64_t)1 << 31 || (int64_t)w->n * w->c * w->oc > (int64_t)1 << 31)
        return TH_ERR_TOO_LARGE;
      break;
    case TC_KERNEL_LAYER_NORM:
      if (w->c != w->oc || w->h != 1 || w->w != 1 || w->oh != 1 || w->ow != 1 || !(w->alpha > 0) ||
          !isfinite(w->alpha))
        return TH_ERR_INVALID;
      epi_ok = TC_EPI_RESIDUAL;
      break;
    case TC_KERNEL_SOFTMAX_ROWS:
      if (w->c != w->oc || w->h != w->oh || w->w != w->ow || !isfinite(w->alpha)) return TH_ERR_INVALID;
      epi_ok = TC_EPI_MASK;
      break;
    case TC_KERNEL_UNARY:
      if (w->c != 1 || w->h != 1 || w->w != 1 || w->oc != 1 || w->oh != 1 || w->ow != 1 || w->op < 0 ||
          w->op >= TC_UNARY_COUNT || !isfinite(w->alpha) || !isfinite(w->beta))
        return TH_ERR_INVALID;
      break;
    case TC_KERNEL_REDUCE:
      if (w->c < 1 || w->oc != 1 || w->h != 1 || w->w != 1 || w->oh != 1 || w->ow != 1 || w->op < 0 ||
          w->op >= TC_REDUCE_COUNT)
        return TH_ERR_INVALID;
      if ((int64_t)w->n * w->c > (int64_t)1 << 31) return TH_ERR_TOO_LARGE;
      break;
    case TC_KERNEL_EMBEDDING:
      if (w->h != 1 || w->w != 1 || w->oh != 1 || w->ow != 1) return TH_ERR_INVALID;
      if ((int64_t)w->c * w->oc > (int64_t)1 << 31) return TH_ERR_TOO_LARGE;
      break;
    case TC_KERNEL_COPY:
    case TC_KERNEL_BINARY:
    case TC_KERNEL_GATHER:
    case TC_KERNEL_SCATTER: {
      /* gather: c is the gathered axis' extent and oc its stride; kh 1 with kw the ignored index;
         scatter: c the axis' extent, kh candidate updates oc apart, op a TC_SCATTER_* */
      int ga = w->kernel == TC_KERNEL_GATHER, sc = w->kernel == TC_KERNEL_SCATTER;
      if ((ga   ? w->c < 1 || w->oc < 0 || (w->kh & ~1) || (!w->kh && w->kw) || w->aoff || w->boff
           : sc ? w->c < 1 || w->oc < 0 || w->kh < 1 || w->kw || w->aoff || w->boff || w->op < 0 ||
                      w->op >= TC_SCATTER_COUNT
                : w->c != 1 || w->oc != 1) ||
          w->h != 1 || w->w != 1 || w->oh != 1 || w->ow != 1 || w->n != 1 || w->ndim < 1 ||
          w->ndim > TC_WL_DIMS)
        return TH_ERR_INVALID;
      if (w->kernel == TC_KERNEL_BINARY && (w->op < 0 || w->op >= TC_BINARY_COUNT || w->aoff || w->boff))
        return TH_ERR_INVALID;
      if (w->aoff < 0 || w->boff < 0) return TH_ERR_INVALID;
      int64_t total = 1, amax = ga ? (int64_t)(w->c - 1) * w->oc : w->aoff,
              bmax = sc ? (int64_t)(w->kh - 1) * w->oc : w->boff;
      for (int d = 0; d < w->ndim; d++) {
        if (w->shape[d] < 1 || w->astride[d] < 0 || w->bstride[d] < 0) return TH_ERR_INVALID;
        total *= w->shape[d];
        amax += (int64_t)(w->shape[d] - 1) * w->astride[d];
        bmax += (int64_t)(w->shape[d] - 1) * w->bstride[d];
        if (total > (int64_t)1 << 31) return TH_ERR_TOO_LARGE;
      }
      if (amax >= (int64_t)1 << 31 || bmax >= (int64_t)1 << 31) return TH_ERR_TOO_LARGE;
      for (int d = w->ndim; d < TC_WL_DIMS; d++)
        if (w->shape[d] || w->astride[d] || w->bstride[d]) return TH_ERR_INVALID;
      break;
    }
    default: return TH_ERR_INVALID;
  }
  return (w->epilogue & ~epi_ok) ? TH_ERR_INVALID : TH_OK;
}

/* The families whose kernels run at a precision other than FP32 (the GEMMs, conv2d as an implicit GEMM). */
/* A grouped conv2d: groups divide both channel counts, neither map pads its channels (a group's
 * channels are real ones), the input block and the group's input channels divide one another (a
 * group is whole blocks, or lanes of one block), and fp32 only. */
static th_status tc__groups_check(const tc_workload *w) {
  if (w->kernel != TC_KERNEL_CONV2D || w->c % w->groups || w->oc % w->groups) return TH_ERR_INVALID;
  int cg = w->c / w->groups;
  if (tc_channels_stored(w->c, w->in_cb) != w->c || tc_channels_stored(w->oc, w->out_cb) != w->oc)
    return TH_ERR_INVALID;
  if (cg % w->in_cb && w->in_cb % cg) return TH_ERR_INVALID;
  return w->precision == TC_PRECISION_FP32 ? TH_OK : TH_ERR_INVALID;
}

static int takes_precision(int kernel) {
  return kernel == TC_KERNEL_DENSE || kernel == TC_KERNEL_BATCH_MATMUL || kernel == TC_KERNEL_CONV2D;
}

th_status tc_workload_check(const tc_workload *wl) {
  if (!wl || wl->kernel < 0 || wl->kernel >= TC_KERNEL_COUNT) return TH_ERR_INVALID;
  const tc_workload *w = wl;
  if (w->n < 1 || w->c < 1 || w->h < 1 || w->w < 1 || w->oc < 1 || w->oh < 1 || w->ow < 1)
    return TH_ERR_INVALID;
  if ((int64_t)w->n * w->c * w->h * w->w > (int64_t)1 << 31 ||
      (int64_t)w->n * w->oc * w->oh * w->ow > (int64_t)1 << 31)
    return TH_ERR_TOO_LARGE;
  if (!is_block(w->in_cb) || !is_block(w->out_cb)) return TH_ERR_INVALID; /* padded when they do not divide */
  if (w->groups < 0 || (w->groups > 1 && tc__groups_check(w) != TH_OK)) return TH_ERR_INVALID;
  if (w->dil_h < 0 || w->dil_w < 0 || w->dil_h > 64 || w->dil_w > 64) return TH_ERR_INVALID;
  if ((w->dil_h > 1 || w->dil_w > 1) && w->kernel != TC_KERNEL_CONV2D &&
      w->kernel != TC_KERNEL_DEPTHWISE)
    return TH_ERR_INVALID;
  const int cnn_act = TC_EPI_SIGMOID | TC_EPI_HARD_SIGMOID | TC_EPI_HARD_SWISH | TC_EPI_SILU;
  if (w->epilogue & ~(TC_EPI_BIAS | TC_EPI_RESIDUAL | TC_EPI_RELU | TC_EPI_CLIP | TC_EPI_GELU |
                      TC_EPI_TANH | TC_EPI_MASK | cnn_act))
    return TH_ERR_INVALID;
  if (w->precision != TC_PRECISION_FP32 &&
      (w->precision != TC_PRECISION_TF32 || !takes_precision(w->kernel)))
    return TH_ERR_INVALID;
  /* int64 BINARY: every op; MOD is int64's alone */
  if (w->dtype != TC_WL_F32 && (w->dtype != TC_WL_I64 || w->kernel != TC_KERNEL_BINARY))
    return TH_ERR_INVALID;
  if (w->kernel == TC_KERNEL_BINARY && w->op == TC_BINARY_MOD && w->dtype != TC_WL_I64)
    return TH_ERR_INVALID;
  if (w->kernel >= TC_KERNEL_BATCH_MATMUL) return tc__tensor_check(w);
  if (w->epilogue & cnn_act) { /* conv2d, depthwise and dense, alone among the activations */
    int act = w->epilogue & (TC_EPI_RELU | TC_EPI_CLIP | TC_EPI_GELU | TC_EPI_TANH | cnn_act);
    int weighted = w->kernel == TC_KERNEL_CONV2D || w->kernel == TC_KERNEL_DEPTHWISE ||
                   w->kernel == TC_KERNEL_DENSE;
    if (!weighted || (act & (act - 1))) return TH_ERR_INVALID;
    if ((w->epilogue & TC_EPI_HARD_SIGMOID) && !(isfinite(w->alpha) && isfinite(w->beta)))
      return TH_ERR_INVALID;
  }
  if (w->epilogue & (TC_EPI_GELU | TC_EPI_TANH | TC_EPI_MASK)) {
    if (w->kernel != TC_KERNEL_DENSE || (w->epilogue & TC_EPI_MASK)) return TH_ERR_INVALID;
    if ((w->epilogue & TC_EPI_GELU) && (w->epilogue & (TC_EPI_TANH | TC_EPI_RELU | TC_EPI_CLIP)))
      return TH_ERR_INVALID;
    if ((w->epilogue & TC_EPI_TANH) && (w->epilogue & (TC_EPI_RELU | TC_EPI_CLIP))) return TH_ERR_INVALID;
  }
  if ((w->epilogue & TC_EPI_CLIP) && !(w->clip_min <= w->clip_max)) return TH_ERR_INVALID;
  int eh = tc_workload_span(w, 0), ew = tc_workload_span(w, 1);
  switch (w->kernel) {
    case TC_KERNEL_CONV2D:
    case TC_KERNEL_DEPTHWISE:
    case TC_KERNEL_MAXPOOL:
    case TC_KERNEL_AVGPOOL:
      if (w->kh < 1 || w->kw < 1 || w->sh < 1 || w->sw < 1 || w->pt < 0 || w->pl < 0 || w->pb < 0 ||
          w->pr < 0)
        return TH_ERR_INVALID;
      /* a dilated conv's window spans (k - 1) * dil + 1 input rows / columns */
      if (w->kh > 64 || w->kw > 64 || w->pt >= eh || w->pb >= eh || w->pl >= ew || w->pr >= ew)
        return TH_ERR_UNSUPPORTED;
      if (w->h + w->pt + w->pb < eh || w->w + w->pl + w->pr < ew) return TH_ERR_INVALID;
      if (w->oh != out_dim(w->h, eh, w->sh, w->pt, w->pb) ||
          w->ow != out_dim(w->w, ew, w->sw, w->pl, w->pr))
        return TH_ERR_INVALID;
      if (w->kernel != TC_KERNEL_CONV2D && w->c != w->oc) return TH_ERR_INVALID;
      /* one channel to one: the padding lanes come from the input's, so both pad alike */
      if (w->kernel != TC_KERNEL_CONV2D &&
          tc_channels_stored(w->c, w->in_cb) != tc_channels_stored(w->oc, w->out_cb))
        return TH_ERR_INVALID;
      if (w->kernel == TC_KERNEL_MAXPOOL || w->kernel == TC_KERNEL_AVGPOOL) {
        if (w->epilogue & (TC_EPI_BIAS | TC_EPI_RESIDUAL)) return TH_ERR_UNSUPPORTED;
      }
      return TH_OK;
    case TC_KERNEL_DENSE:
      if (w->h != 1 || w->w != 1 || w->oh != 1 || w->ow != 1 || w->in_cb != 1 || w->out_cb != 1)
        return TH_ERR_INVALID;
      return TH_OK;
    case TC_KERNEL_GLOBAL_AVGPOOL:
      if (w->c != w->oc || w->oh != 1 || w->ow != 1 ||
          tc_channels_stored(w->c, w->in_cb) != tc_channels_stored(w->oc, w->out_cb))
        return TH_ERR_INVALID;
      if (w->epilogue & (TC_EPI_BIAS | TC_EPI_RESIDUAL)) return TH_ERR_UNSUPPORTED;
      return TH_OK;
    case TC_KERNEL_SOFTMAX:
      if (w->c != w->oc || w->h != w->oh || w->w != w->ow || w->in_cb != 1 || w->out_cb != 1 ||
          w->epilogue)
        return TH_ERR_INVALID;
      return TH_OK;
    case TC_KERNEL_ELTWISE:
      if (w->c != w->oc || w->h != w->oh || w->w != w->ow || w->in_cb != w->out_cb ||
          (w->epilogue & (TC_EPI_BIAS | TC_EPI_RESIDUAL)))
        return TH_ERR_INVALID;
      return TH_OK;
    case TC_KERNEL_CONCAT:
      if (w->h != w->oh || w->w != w->ow || w->c_offset < 0 || w->c_offset + w->c > w->oc || w->epilogue)
        return TH_ERR_INVALID;
      return TH_OK;
    case TC_KERNEL_LAYOUT:
      if (w->c != w->oc || w->h != w->oh || w->w != w->ow || w->epilogue) return TH_ERR_INVALID;
      return TH_OK;
    default: return TH_ERR_INVALID;
  }
}

const char *tc_precision_name(int p) {
  return p == TC_PRECISION_FP32 ? "fp32" : p == TC_PRECISION_TF32 ? "tf32" : NULL;
}

th_status tc_precision_parse(const char *s, tc_precision *out) {
  if (!out) return TH_ERR_INVALID;
  if (!s || !*s || strcmp(s, "fp32") == 0) {
    *out = TC_PRECISION_FP32;
    return TH_OK;
  }
  if (strcmp(s, "tf32") == 0) {
    *out = TC_PRECISION_TF32;
    return TH_OK;
  }
  return TH_ERR_INVALID;
}

int tc_workload_take_precision(tc_workload *wl, tc_precision p) {
  if (!takes_precision(wl->kernel) || wl->groups > 1) return 0; /* grouped convs: fp32 only */
  int changed = wl->precision != (int)p;
  wl->precision = p;
  return changed;
}

static th_status key_body(const tc_workload *wl, char *out, size_t n);

/* The FP32 key is the one from before precisions existed (stored records keep working); another
 * precision appends its name, an int64 BINARY " i64" (the two never meet: no family has both). */
th_status tc_workload_key(const tc_workload *wl, char *out, size_t n) {
  th_status rc = key_body(wl, out, n);
  if (rc != TH_OK || (wl->precision == TC_PRECISION_FP32 && wl->dtype == TC_WL_F32)) return rc;
  const char *p = wl->dtype == TC_WL_I64 ? "i64" : tc_precision_name(wl->precision);
  size_t used = strlen(out);
  int w = snprintf(out + used, n - used, " %s", p ? p : "prec?");
  return w < 0 || (size_t)w >= n - used ? TH_ERR_TOO_LARGE : TH_OK;
}

static th_status key_body(const tc_workload *wl, char *out, size_t n) {
  if (!wl || !out || wl->kernel < 0 || wl->kernel >= TC_KERNEL_COUNT) return TH_ERR_INVALID;
  int w = snprintf(out, n,
                   "%s n%d c%d h%d w%d oc%d oh%d ow%d k%dx%d s%dx%d p%d,%d,%d,%d cb%d,%d e%d",
                   names[wl->kernel], wl->n, wl->c, wl->h, wl->w, wl->oc, wl->oh, wl->ow, wl->kh,
                   wl->kw, wl->sh, wl->sw, wl->pt, wl->pl, wl->pb, wl->pr, wl->in_cb, wl->out_cb,
                   wl->epilogue);
  if (w < 0 || (size_t)w >= n) return TH_ERR_TOO_LARGE;
  size_t used = (size_t)w;
  if (wl->groups > 1) {
    w = snprintf(out + used, n - used, " g%d", wl->groups);
    if (w < 0 || (size_t)w >= n - used) return TH_ERR_TOO_LARGE;
    used += (size_t)w;
  }
  if (tc_workload_dil(wl, 0) > 1 || tc_workload_dil(wl, 1) > 1) {
    w = snprintf(out + used, n - used, " d%dx%d", tc_workload_dil(wl, 0), tc_workload_dil(wl, 1));
    if (w < 0 || (size_t)w >= n - used) return TH_ERR_TOO_LARGE;
    used += (size_t)w;
  }
  if (wl->epilogue & TC_EPI_CLIP) {
    w = snprintf(out + used, n - used, " clip%g,%g", (double)wl->clip_min, (double)wl->clip_max);
    if (w < 0 || (size_t)w >= n - used) return TH_ERR_TOO_LARGE;
    used += (size_t)w;
  }
  if (wl->epilogue & TC_EPI_HARD_SIGMOID) {
    w = snprintf(out + used, n - used, " hs%.9g,%.9g", (double)wl->alpha, (double)wl->beta);
    if (w < 0 || (size_t)w >= n - used) return TH_ERR_TOO_LARGE;
    used += (size_t)w;
  }
  if (wl->kernel == TC_KERNEL_AVGPOOL) {
    w = snprintf(out + used, n - used, " cip%d", wl->count_include_pad);
    if (w < 0 || (size_t)w >= n - used) return TH_ERR_TOO_LARGE;
    used += (size_t)w;
  }
  if (wl->kernel == TC_KERNEL_CONCAT) {
    w = snprintf(out + used, n - used, " off%d", wl->c_offset);
    if (w < 0 || (size_t)w >= n - used) return TH_ERR_TOO_LARGE;
  }
  if (wl->kernel >= TC_KERNEL_BATCH_MATMUL) {
    /* the tensor families' own fields, each only where the family reads it */
    w = 0;
    if (wl->kernel == TC_KERNEL_UNARY || wl->kernel == TC_KERNEL_BINARY ||
        wl->kernel == TC_KERNEL_REDUCE || wl->kernel == TC_KERNEL_SCATTER)
      w = snprintf(out + used, n - used, " op%d", wl->op);
    else if (wl->kernel == TC_KERNEL_BATCH_MATMUL)
      w = snprintf(out + used, n - used, " t%d,%d", wl->trans_a, wl->trans_b);
    if (w < 0 || (size_t)w >= n - used) return TH_ERR_TOO_LARGE;
    used += (size_t)w;
    w = 0;
    int ab = wl->kernel == TC_KERNEL_UNARY &&
             (wl->op == TC_UNARY_AFFINE || wl->op == TC_UNARY_HARD_SIGMOID ||
              wl->op == TC_UNARY_CLIP || wl->op >= TC_UNARY_ELU);
    if (wl->kernel == TC_KERNEL_BATCH_MATMUL || wl->kernel == TC_KERNEL_SOFTMAX_ROWS ||
        wl->kernel == TC_KERNEL_LAYER_NORM || ab)
      w = snprintf(out + used, n - used, " a%.9g", (double)wl->alpha);
    if (w < 0 || (size_t)w >= n - used) return TH_ERR_TOO_LARGE;
    used += (size_t)w;
    if (ab) {
      w = snprintf(out + used, n - used, " b%.9g", (double)wl->beta);
      if (w < 0 || (size_t)w >= n - used) return TH_ERR_TOO_LARGE;
      used += (size_t)w;
    }
    if (wl->kernel == TC_KERNEL_COPY || wl->kernel == TC_KERNEL_BINARY ||
        wl->kernel == TC_KERNEL_GATHER || wl->kernel == TC_KERNEL_SCATTER) {
      const int *v[3] = {wl->shape, wl->astride, wl->bstride};
      const char *tag[3] = {" d", " sa", " sb"};
      for (int q = 0; q < 3; q++) {
        w = snprintf(out + used, n - used, "%s", tag[q]);
        if (w < 0 || (size_t)w >= n - used) return TH_ERR_TOO_LARGE;
        used += (size_t)w;
        for (int d = 0; d < wl->ndim; d++) {
          w = snprintf(out + used, n - used, "%s%d", d ? "," : "", v[q][d]);
          if (w < 0 || (size_t)w >= n - used) return TH_ERR_TOO_LARGE;
          used += (size_t)w;
        }
      }
      if (wl->kernel == TC_KERNEL_COPY) {
        w = snprintf(out + used, n - used, " o%d,%d", wl->aoff, wl->boff);
        if (w < 0 || (size_t)w >= n - used) return TH_ERR_TOO_LARGE;
      }
    }
  }
  return TH_OK;
}

int tc_workload_groups(const tc_workload *wl) {
  return wl->kernel == TC_KERNEL_CONV2D && wl->groups > 1 ? wl->groups : 1;
}

int tc_workload_dil(const tc_workload *wl, int axis) {
  int d = axis ? wl->dil_w : wl->dil_h;
  return (wl->kernel == TC_KERNEL_CONV2D || wl->kernel == TC_KERNEL_DEPTHWISE) && d > 1 ? d : 1;
}

int tc_workload_span(const tc_workload *wl, int axis) {
  return ((axis ? wl->kw : wl->kh) - 1) * tc_workload_dil(wl, axis) + 1;
}

double tc_workload_flops(const tc_workload *wl) {
  if (!wl) return 0;
  double out = (double)wl->n * wl->oc * wl->oh * wl->ow;
  switch (wl->kernel) {
    case TC_KERNEL_CONV2D: return 2.0 * out * (wl->c / tc_workload_groups(wl)) * wl->kh * wl->kw;
    case TC_KERNEL_DEPTHWISE: return 2.0 * out * wl->kh * wl->kw;
    case TC_KERNEL_DENSE: return 2.0 * wl->n * (double)wl->oc * wl->c;
    case TC_KERNEL_MAXPOOL:
    case TC_KERNEL_AVGPOOL: return out * wl->kh * wl->kw;
    case TC_KERNEL_GLOBAL_AVGPOOL: return (double)wl->n * wl->c * wl->h * wl->w;
    case TC_KERNEL_SOFTMAX: return 3.0 * wl->n * (double)wl->c * wl->h * wl->w;
    case TC_KERNEL_ELTWISE: return out;
    case TC_KERNEL_BATCH_MATMUL: return 2.0 * wl->n * (double)wl->h * wl->c * wl->oc;
    case TC_KERNEL_LAYER_NORM: return 8.0 * wl->n * (double)wl->c;
    case TC_KERNEL_SOFTMAX_ROWS: return 5.0 * wl->n * (double)wl->c * wl->h * wl->w;
    case TC_KERNEL_UNARY: return wl->n;
    case TC_KERNEL_REDUCE: return (double)wl->n * wl->c;
    case TC_KERNEL_BINARY:
    case TC_KERNEL_GATHER:
    case TC_KERNEL_SCATTER: {
      double e = wl->kernel == TC_KERNEL_SCATTER ? wl->kh : 1;
      for (int d = 0; d < wl->ndim && d < TC_WL_DIMS; d++) e *= wl->shape[d];
      return e;
    }
    default: return 0;
  }
}

/* ---- shared helpers ---- */

const int *tc__knob(const tc_space *s, const tc_config *c, const char *name) {
  int k = tc_space_knob(s, name);
  if (k < 0 || k >= c->nknobs || c->idx[k] < 0 || c->idx[k] >= s->knobs[k].nvalues) return NULL;
  return s->knobs[k].values[c->idx[k]];
}

int tc__pow2_div(int cap, int a, int b, int c) {
  int v = 1;
  while (v * 2 <= cap && (a == 0 || a % (v * 2) == 0) && (b == 0 || b % (v * 2) == 0) &&
         (c == 0 || c % (v * 2) == 0))
    v *= 2;
  return v;
}

const tc_expr *tc__c(tc_ir *ir, int64_t v) {
  return tc_e_int(ir, v);
}

const tc_expr *tc__v(tc_ir *ir, const tc_var *v) {
  return tc_e_var(ir, v);
}

const tc_expr *tc__and(tc_ir *ir, const tc_expr *a, const tc_expr *b) {
  return tc_e_bin(ir, TC_EXPR_AND, a, b);
}

const tc_expr *tc__in_range(tc_ir *ir, const tc_expr *x, int lo, int hi) {
  return tc__and(ir, tc_e_bin(ir, TC_EXPR_GE, x, tc__c(ir, lo)), tc_e_bin(ir, TC_EXPR_LT, x, tc__c(ir, hi)));
}

const tc_expr *tc__idx(tc_ir *ir, const tc_expr *n, const tc_expr *cblk, const tc_expr *y,
                       const tc_expr *x, const tc_expr *lane, int nblk, int h, int w, int cb) {
  const tc_expr *e = tc_e_add(ir, tc_e_mul(ir, n, tc__c(ir, nblk)), cblk);
  e = tc_e_add(ir, tc_e_mul(ir, e, tc__c(ir, h)), y);
  e = tc_e_add(ir, tc_e_mul(ir, e, tc__c(ir, w)), x);
  return tc_e_add(ir, tc_e_mul(ir, e, tc__c(ir, cb)), lane);
}

const tc_expr *tc__idx_c(tc_ir *ir, const tc_expr *n, const tc_expr *c, const tc_expr *y,
                         const tc_expr *x, int channels, int h, int w, int cb) {
  return tc__idx(ir, n, tc_e_div(ir, c, tc__c(ir, cb)), y, x, tc_e_mod(ir, c, tc__c(ir, cb)),
                 tc_channels_stored(channels, cb) / cb, h, w, cb);
}

const tc_expr *tc__epilogue(tc_ir *ir, const tc_workload *wl, const tc_expr *v, const tc_var *bias,
                            const tc_expr *oc0, const tc_var *res, const tc_expr *ridx) {
  if (!v) return NULL;
  int lanes = v->type.lanes;
  if ((wl->epilogue & TC_EPI_BIAS) && bias) v = tc_e_add(ir, v, tc_e_load(ir, bias, oc0, lanes, 4));
  if ((wl->epilogue & TC_EPI_RESIDUAL) && res) v = tc_e_add(ir, v, tc_e_load(ir, res, ridx, lanes, 4));
  if (wl->epilogue & TC_EPI_RELU) v = tc_e_max(ir, v, tc_e_broadcast(ir, tc_e_float(ir, 0.0), lanes));
  if (wl->epilogue & TC_EPI_CLIP) {
    v = tc_e_max(ir, v, tc_e_broadcast(ir, tc_e_float(ir, wl->clip_min), lanes));
    v = tc_e_min(ir, v, tc_e_broadcast(ir, tc_e_float(ir, wl->clip_max), lanes));
  }
  if (wl->epilogue & TC_EPI_GELU) v = tc_e_gelu(ir, v);
  if (wl->epilogue & TC_EPI_TANH) v = tc_e_tanh(ir, v);
  if (wl->epilogue & TC_EPI_SIGMOID) v = tc_e_sigmoid(ir, v);
  if (wl->epilogue & TC_EPI_HARD_SIGMOID) v = tc_e_hard_sigmoid(ir, v, wl->alpha, wl->beta);
  if (wl->epilogue & TC_EPI_HARD_SWISH) v = tc_e_hard_swish(ir, v);
  if (wl->epilogue & TC_EPI_SILU) v = tc_e_silu(ir, v);
  return v;
}

const tc_stmt *tc__parallel(tc_ir *ir, const tc_var *task, int64_t n, const tc_stmt *body) {
  return tc_s_for(ir, task, tc__c(ir, 0), tc__c(ir, n), n > 1 ? TC_FOR_PARALLEL : TC_FOR_SERIAL, body);
}

const tc_stmt *tc__ow_tiles(tc_ir *ir, int ow, int rw, int sw, int pl, int kw, int w, tc__tile_fn fn,
                            void *ctx) {
  int full = ow / rw, rem = ow % rw;
  /* Tile j is fast when its whole input window is inside the row. The fast tiles are contiguous. */
  int lo = full, hi = full;
  for (int j = 0; j < full; j++) {
    int first = j * rw * sw - pl, last = (j * rw + rw - 1) * sw - pl + kw - 1;
    if (first >= 0 && last < w) {
      if (lo == full) lo = j;
      hi = j + 1;
    }
  }
  if (lo == full) hi = full;
  tc_stmt_list l = {0};
  int ranges[3][3] = {{0, lo, 1}, {lo, hi, 0}, {hi, full, 1}};
  for (int r = 0; r < 3; r++) {
    int a = ranges[r][0], b = ranges[r][1];
    if (b <= a) continue;
    if (ranges[r][2] && b - a <= 4) {
      /* Few border tiles: emit each at a constant position, so that with kw unrolled every bounds
       * check folds to a constant and the border costs no more than the interior. */
      for (int jj = a; jj < b; jj++) tc_list_push(ir, &l, fn(ir, ctx, tc__c(ir, (int64_t)jj * rw), rw, 1));
      continue;
    }
    tc_var *j = tc_var_new(ir, "owt", tc_type_int());
    const tc_stmt *t = fn(ir, ctx, tc_e_mul(ir, tc__v(ir, j), tc__c(ir, rw)), rw, ranges[r][2]);
    tc_list_push(ir, &l, tc_s_for(ir, j, tc__c(ir, a), tc__c(ir, b - a), TC_FOR_SERIAL, t));
  }
  if (rem) {
    int j0 = full * rw;
    int first = j0 * sw - pl, last = (ow - 1) * sw - pl + kw - 1;
    tc_list_push(ir, &l, fn(ir, ctx, tc__c(ir, j0), rem, !(first >= 0 && last < w)));
  }
  return tc_list_seq(ir, &l);
}

/* ---- public entry points ---- */

_Static_assert(TC_PACK_NPARAMS == TH_RT_PACK_NPARAMS, "one pack-parameter count on both sides");

/* What a template sees: the families that compute every lane of a channel-blocked map get the stored
 * channel counts (a block that does not divide the channels is padded, tc_channel_block), so they compute
 * the padding lanes too, from zero weights and biases (the packers pad them). Concat and layout copy the
 * real channels and write the padding themselves (tc__lower_copy). */
static tc_workload stored(const tc_workload *wl) {
  tc_workload w = *wl;
  switch (wl->kernel) {
    case TC_KERNEL_CONV2D:
    case TC_KERNEL_DEPTHWISE:
    case TC_KERNEL_MAXPOOL:
    case TC_KERNEL_AVGPOOL:
    case TC_KERNEL_GLOBAL_AVGPOOL:
    case TC_KERNEL_ELTWISE:
      w.c = tc_channels_stored(wl->c, wl->in_cb);
      w.oc = tc_channels_stored(wl->oc, wl->out_cb);
      break;
    default: break;
  }
  return w;
}

th_status tc_op_space(const tc_workload *wl, const tc_target *t, tc_space *out) {
  if (!wl || !t || !out) return TH_ERR_INVALID;
  th_status rc = tc_workload_check(wl);
  if (rc != TH_OK) return rc;
  if (!ops[wl->kernel] || wl->precision != TC_PRECISION_FP32)
    return TH_ERR_UNSUPPORTED; /* the CPU computes in fp32 only */
  tc_space s;
  memset(&s, 0, sizeof s);
  tc_workload w = stored(wl);
  rc = ops[wl->kernel]->space(&w, t, &s);
  if (rc == TH_OK && s.nknobs < 1) rc = TH_ERR_INTERNAL;
  if (rc == TH_OK) *out = s;
  return rc;
}

th_status tc_op_valid(const tc_workload *wl, const tc_target *t, const tc_space *s,
                      const tc_config *cfg) {
  if (!wl || !t || !s || !cfg) return TH_ERR_INVALID;
  th_status rc = tc_workload_check(wl);
  if (rc != TH_OK) return rc;
  if (tc_space_index(s, cfg) < 0) return TH_ERR_INVALID;
  const tc__op *op = ops[wl->kernel];
  if (!op) return TH_ERR_UNSUPPORTED;
  tc_workload w = stored(wl);
  return op->valid ? op->valid(&w, t, s, cfg) : TH_OK;
}

th_status tc_op_fallback(const tc_workload *wl, const tc_target *t, const tc_space *s, tc_config *out) {
  if (!wl || !t || !s || !out) return TH_ERR_INVALID;
  th_status rc = tc_workload_check(wl);
  if (rc != TH_OK) return rc;
  tc_config c;
  memset(&c, 0, sizeof c);
  c.nknobs = s->nknobs;
  if (!ops[wl->kernel]) return TH_ERR_UNSUPPORTED;
  tc_workload w = stored(wl);
  rc = ops[wl->kernel]->fallback(&w, t, s, &c);
  if (rc == TH_OK) rc = tc_op_valid(wl, t, s, &c);
  if (rc == TH_OK) *out = c;
  return rc;
}

th_status tc_op_lower(const tc_workload *wl, const tc_config *cfg, const tc_target *t, th_arena *arena,
                      const tc_stmt **out) {
  if (!wl || !cfg || !t || !arena || !out) return TH_ERR_INVALID;
  tc_space s;
  th_status rc = tc_op_space(wl, t, &s);
  if (rc == TH_OK) rc = tc_op_valid(wl, t, &s, cfg);
  if (rc != TH_OK) return rc;
  tc_ir ir;
  tc_ir_init(&ir, arena);
  const tc_stmt *body = NULL;
  tc_workload w = stored(wl);
  rc = ops[wl->kernel]->lower(&w, t, &s, cfg, &ir, &body);
  if (rc == TH_OK && ir.err != TH_OK) rc = ir.err;
  if (rc == TH_OK && !body) rc = TH_ERR_INTERNAL;
  if (rc == TH_OK) *out = body;
  return rc;
}

th_status tc_op_pack_params(const tc_workload *wl, const tc_config *cfg, const tc_target *t,
                            int params[TC_PACK_NPARAMS]) {
  if (!wl || !cfg || !t || !params) return TH_ERR_INVALID;
  tc_space s;
  th_status rc = tc_op_space(wl, t, &s);
  if (rc == TH_OK) rc = tc_op_valid(wl, t, &s, cfg);
  if (rc != TH_OK) return rc;
  if (!ops[wl->kernel]->pack) return TH_ERR_INVALID;
  int p[TC_PACK_NPARAMS] = {0};
  tc_workload w = stored(wl);
  rc = ops[wl->kernel]->pack(&w, t, &s, cfg, p);
  if (rc != TH_OK) return rc;
  /* the packers read the real (torch-layout) channels and zero the padded ones */
  if (p[0] == TH_RT_PACK_CONV) {
    p[7] = wl->oc;
    p[8] = wl->c / tc_workload_groups(wl); /* a group's input channels */
  } else if (p[0] == TH_RT_PACK_DEPTHWISE) {
    p[5] = wl->c;
  } else if (p[0] == TH_RT_PACK_WINOGRAD) {
    p[5] = wl->oc;
    p[6] = wl->c;
  }
  memcpy(params, p, sizeof p);
  return rc;
}

size_t tc_op_packed_size(const tc_workload *wl, const tc_config *cfg, const tc_target *t) {
  int p[TC_PACK_NPARAMS];
  if (tc_op_pack_params(wl, cfg, t, p) != TH_OK) return 0;
  return th_rt_packed_size(p);
}

th_status tc_op_pack(const tc_workload *wl, const tc_config *cfg, const tc_target *t, const float *src,
                     float *dst) {
  if (!src || !dst) return TH_ERR_INVALID;
  int p[TC_PACK_NPARAMS];
  th_status rc = tc_op_pack_params(wl, cfg, t, p);
  if (rc == TH_OK && th_rt_pack_weights(p, src, dst) != 0) rc = TH_ERR_INTERNAL;
  return rc;
}

th_status tc_op_print(const tc_workload *wl, const tc_config *cfg, const tc_target *t, th_buf *b) {
  th_arena *a = th_arena_new(1 << 16);
  if (!a) return TH_ERR_NOMEM;
  const tc_stmt *s = NULL;
  th_status rc = tc_op_lower(wl, cfg, t, a, &s);
  if (rc == TH_OK) rc = tc_ir_print(s, b);
  th_arena_free(a);
  return rc;
}
