/* tc_workload: the contract between the graph side of the compiler (graph, passes, plan) and the kernel side
 * (operator templates, loop IR, codegen). A workload is a fully specified kernel: operator, shapes, data
 * layouts and fused epilogue. Two equal workloads compute the same function, so the tuner keys its records
 * by tc_workload_key() and shares them across networks. */
#ifndef TC_WORKLOAD_H
#define TC_WORKLOAD_H

#include <stddef.h>

#include "th_status.h"

typedef enum tc_kernel {
  TC_KERNEL_CONV2D = 0,    /* NCHW[cb]c conv, groups == 1 */
  TC_KERNEL_DEPTHWISE,     /* groups == c == oc */
  TC_KERNEL_DENSE,         /* [n, k] x [k, m] -> [n, m], weights packed */
  TC_KERNEL_MAXPOOL,
  TC_KERNEL_AVGPOOL,
  TC_KERNEL_GLOBAL_AVGPOOL,
  TC_KERNEL_SOFTMAX,       /* over the last axis */
  TC_KERNEL_ELTWISE,       /* binary add (+ epilogue) of two same-shape tensors */
  TC_KERNEL_CONCAT,        /* channel concat */
  TC_KERNEL_LAYOUT,        /* NCHW[a]c <-> NCHW[b]c reorder */
  TC_KERNEL_COUNT
} tc_kernel;

/* Epilogue flags, applied in this order after the main computation: + bias, + residual, then activation. */
enum {
  TC_EPI_BIAS = 1 << 0,
  TC_EPI_RESIDUAL = 1 << 1, /* adds a tensor of the output's shape and layout */
  TC_EPI_RELU = 1 << 2,
  TC_EPI_CLIP = 1 << 3, /* clamp to [clip_min, clip_max], e.g. relu6 */
};

typedef struct tc_workload {
  tc_kernel kernel;
  int n;            /* batch */
  int c, h, w;      /* input channels and spatial size */
  int oc, oh, ow;   /* output channels and spatial size */
  int kh, kw;       /* kernel or pooling window */
  int sh, sw;       /* strides */
  int pt, pl, pb, pr; /* padding: top, left, bottom, right */
  int in_cb;        /* input channel block (NCHW[in_cb]c); 1 means plain NCHW */
  int out_cb;       /* output channel block */
  int epilogue;     /* TC_EPI_* flags */
  float clip_min, clip_max;
  int count_include_pad; /* avg pooling */
  int c_offset;          /* concat: channel offset of this input inside the output */
} tc_workload;

/* A canonical, stable text key for records, e.g. "conv2d_nchwc n1 c64 h56 w56 oc64 k3x3 s1x1 p1,1,1,1
 * cb16,16 e5". Writes at most n bytes; returns TH_ERR_TOO_LARGE if it does not fit. */
th_status tc_workload_key(const tc_workload *wl, char *out, size_t n);
/* Multiply-adds counted as 2 FLOPs. */
double tc_workload_flops(const tc_workload *wl);
/* The template family name ("conv2d_nchwc", "depthwise_nchwc", "dense_pack", ...). */
const char *tc_kernel_name(tc_kernel k);

#endif
