/* Tests of the graph passes on tensor graphs (issue 20): the reference interpreter gives the same
 * outputs before and after fold_bn/fuse/layout/plan on vit, bert and small hand-built graphs; the
 * lowered calls use only the kernel families of ops.h with the expected counts and epilogues, and
 * an executor of the calls written from ops.h's ABI (naive loops) reproduces the reference outputs,
 * so the strides, offsets and argument spaces of the lowering are checked too; the planner never
 * overlaps two live tensors; the CNN zoo lowers to exactly the calls of commit 0ac023b. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dlfcn.h>
#include <unistd.h>

#include "graph.h"
#include "llvm/tc_llvm.h"
#include "ops.h"
#include "passes.h"
#include "ref/ref.h"
#include "ref/ref_kernel.h"
#include "th_test.h"
#include "zoo.h"

/* ---- helpers
 * ----------------------------------------------------------------------------------------- */

static void tc__fill(float *x, int64_t n, uint64_t seed) {
  for (int64_t i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    x[i] = (float)((seed >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
  }
}

/* max |a - b| over max |b| */
static double tc__rel(const float *a, const float *b, int64_t n) {
  double mx = 0, d = 0;
  for (int64_t i = 0; i < n; i++) {
    if (!isfinite(a[i])) return INFINITY;
    mx = fmax(mx, fabs(b[i]));
    d = fmax(d, fabs((double)a[i] - b[i]));
  }
  return d / (mx > 0 ? mx : 1);
}

/* The network's outputs, malloc'd, each as large as its tensor. */
static void **tc__outputs(const tc_graph *g) {
  void **o = calloc(TC_MAX_IO, sizeof *o);
  for (int k = 0; k < g->noutputs; k++)
    o[k] = malloc((size_t)tc_tensor_bytes(&g->nodes[g->outputs[k]].out));
  return o;
}

static void tc__outputs_free(void **o) {
  for (int k = 0; k < TC_MAX_IO; k++) free(o[k]);
  free(o);
}

/* Every float output of a and b agree within tol (relative to the largest magnitude). */
static void tc__same_outputs(const tc_graph *g, void **a, void **b, double tol, const char *what) {
  for (int k = 0; k < g->noutputs; k++) {
    const tc_tensor *t = &g->nodes[g->outputs[k]].out;
    double r = tc__rel(a[k], b[k], tc_tensor_numel(t));
    fprintf(stderr, "  %s: %s max rel diff %.3g\n", what, g->output_names[k], r);
    CHECK(r <= tol);
  }
}

static int tc__live_ops(const tc_graph *g, tc_op op) {
  int n = 0;
  for (int i = 0; i < g->nnodes; i++) n += !g->nodes[i].dead && g->nodes[i].op == op;
  return n;
}

/* The plan: every tensor that owns workspace storage (tc_graph_storage(i) == i, not a CONST) lies
 * inside the workspace at a 64-byte boundary, and no two of them that are live at once share a
 * byte: inputs are live from the start, outputs to the end, a tensor from its writer to its last
 * reader (a reader of a view reads the view's storage). Aliases (views with an offset) lie inside
 * their storage; views of a constant and strided views have no offset. */
void tc__test_check_plan(const tc_graph *g, int64_t ws) {
  int n = g->nnodes;
  int *own = malloc((size_t)n * sizeof *own), *first = malloc((size_t)n * sizeof *first);
  int *last = malloc((size_t)n * sizeof *last);
  for (int i = 0; i < n; i++) {
    own[i] = g->nodes[i].dead ? -1 : tc_graph_storage(g, i);
    first[i] = g->nodes[i].op == TC_OP_INPUT ? -1 : i;
    last[i] = i;
  }
  for (int i = 0; i < n; i++) {
    if (g->nodes[i].dead) continue;
    for (int k = 0; k < g->nodes[i].ninputs; k++) {
      int s = own[g->nodes[i].inputs[k]];
      CHECK(s >= 0);
      if (last[s] < i) last[s] = i;
    }
  }
  for (int k = 0; k < g->noutputs; k++) last[own[g->outputs[k]]] = n;
  for (int a = 0; a < n; a++) {
    const tc_node *na = &g->nodes[a];
    if (na->dead) continue;
    int64_t a0 = na->out.offset, a1 = a0 + tc_tensor_bytes(&na->out) / 4;
    if (own[a] != a) { /* a view */
      const tc_node *s = &g->nodes[own[a]];
      if (s->op == TC_OP_CONST)
        CHECK_EQ_INT(a0, -1);
      else if (a0 >= 0)
        CHECK(a0 >= s->out.offset && a1 <= s->out.offset + tc_tensor_bytes(&s->out) / 4);
      continue;
    }
    if (na->op == TC_OP_CONST) continue;
    CHECK(a0 >= 0 && a0 % 16 == 0 && a1 <= ws);
    for (int b = a + 1; b < n; b++) {
      const tc_node *nb = &g->nodes[b];
      if (nb->dead || own[b] != b || nb->op == TC_OP_CONST) continue;
      if (first[b] > last[a] || first[a] > last[b]) continue; /* never live at once */
      int64_t b0 = nb->out.offset, b1 = b0 + tc_tensor_bytes(&nb->out) / 4;
      if (!(a1 <= b0 || b1 <= a0))
        fprintf(stderr, "overlap: node %d [%lld, %lld) and %d [%lld, %lld)\n", a, (long long)a0,
                (long long)a1, b, (long long)b0, (long long)b1);
      CHECK(a1 <= b0 || b1 <= a0);
    }
  }
  free(own);
  free(first);
  free(last);
}

/* ---- an executor of lowered calls
 * -------------------------------------------------------------------- */

/* Element (n, c, y, x) of an NCHW[cb]c tensor. */
static int64_t tc__at(int n, int c, int y, int x, int C, int H, int W, int cb) {
  return ((((int64_t)n * (C / cb) + c / cb) * H + y) * W + x) * cb + c % cb;
}

static double tc__hsig(double v, double alpha, double beta) {
  v = alpha * v + beta;
  return v < 0 ? 0 : v > 1 ? 1 : v;
}

/* The activations of flags epi (TC_EPI_*), with the workload's clip bounds and alpha and beta. */
static float tc__act(float v, int epi, const tc_workload *wl) {
  if (epi & TC_EPI_RELU) v = v > 0 ? v : 0;
  if (epi & TC_EPI_CLIP) v = v < wl->clip_min ? wl->clip_min : (v > wl->clip_max ? wl->clip_max : v);
  if (epi & TC_EPI_GELU) v = (float)(0.5 * v * (1.0 + erf(v / sqrt(2.0))));
  if (epi & TC_EPI_TANH) v = tanhf(v);
  if (epi & TC_EPI_SIGMOID) v = (float)(1 / (1 + exp(-(double)v)));
  if (epi & TC_EPI_HARD_SIGMOID) v = (float)tc__hsig(v, wl->alpha, wl->beta);
  if (epi & TC_EPI_HARD_SWISH) v = (float)(v * tc__hsig(v, 1.0 / 6, 0.5));
  if (epi & TC_EPI_SILU) v = (float)(v / (1 + exp(-(double)v)));
  return v;
}

static float tc__epi(float v, const tc_workload *wl) {
  return tc__act(v, wl->epilogue, wl);
}

/* Advances a row-major index over shape[0..nd); returns 0 after the last. */
static int tc__next(int *idx, const int *shape, int nd) {
  for (int d = nd - 1; d >= 0; d--) {
    if (++idx[d] < shape[d]) return 1;
    idx[d] = 0;
  }
  return 0;
}

/* Runs one call as ops.h describes its family, with the node's effective (torch-layout) weights. */
static void tc__exec_call(const tc_graph *g, const tc_call *c, float *ws) {
  const tc_workload *wl = &c->wl;
  const tc_node *nd = &g->nodes[c->node];
  float *p[5] = {0};
  float *wbuf = NULL, *bbuf = NULL;
  if (c->nargs == 5 && c->arg_space[TC_ARG_WEIGHTS] == TC_SPACE_WEIGHTS) {
    wbuf = malloc((size_t)g->params[nd->weight].numel * sizeof *wbuf);
    bbuf = malloc((size_t)wl->oc * sizeof *bbuf);
    CHECK_EQ_INT(tc_node_effective_params(g, nd, wbuf, bbuf), TH_OK);
  }
  for (int a = 0; a < c->nargs; a++) {
    switch (c->arg_space[a]) {
      case TC_SPACE_WORK: p[a] = ws + c->arg_off[a]; break;
      case TC_SPACE_CONST:
        CHECK(c->arg_param[a] >= 0 && c->arg_param[a] < g->nparams);
        p[a] = g->params[c->arg_param[a]].data + c->arg_off[a];
        break;
      case TC_SPACE_WEIGHTS: p[a] = wbuf; break;
      case TC_SPACE_BIAS: p[a] = bbuf; break;
      default: p[a] = NULL; break;
    }
    if (c->arg_space[a] != TC_SPACE_CONST) CHECK_EQ_INT(c->arg_param[a], -1);
  }
  int64_t total = (int64_t)wl->n * wl->c * wl->h * wl->w;
  switch (wl->kernel) {
    case TC_KERNEL_CONV2D:
    case TC_KERNEL_DEPTHWISE: {
      int G = wl->kernel == TC_KERNEL_DEPTHWISE ? wl->c : tc_workload_groups(wl);
      int icg = wl->c / G, ocg = wl->oc / G;
      for (int n = 0; n < wl->n; n++)
        for (int o = 0; o < wl->oc; o++)
          for (int oy = 0; oy < wl->oh; oy++)
            for (int ox = 0; ox < wl->ow; ox++) {
              double acc = 0;
              for (int ic = 0; ic < icg; ic++)
                for (int ky = 0; ky < wl->kh; ky++)
                  for (int kx = 0; kx < wl->kw; kx++) {
                    int iy = oy * wl->sh - wl->pt + ky, ix = ox * wl->sw - wl->pl + kx;
                    if (iy < 0 || iy >= wl->h || ix < 0 || ix >= wl->w) continue;
                    acc += (double)p[0][tc__at(n, o / ocg * icg + ic, iy, ix, wl->c, wl->h, wl->w,
                                               wl->in_cb)] *
                           p[1][(((int64_t)o * icg + ic) * wl->kh + ky) * wl->kw + kx];
                  }
              int64_t oi = tc__at(n, o, oy, ox, wl->oc, wl->oh, wl->ow, wl->out_cb);
              float v = (float)acc + (p[2] ? p[2][o] : 0.0f);
              if (wl->epilogue & TC_EPI_RESIDUAL) v += p[3][oi];
              p[4][oi] = tc__epi(v, wl);
            }
      break;
    }
    case TC_KERNEL_MAXPOOL:
    case TC_KERNEL_AVGPOOL:
    case TC_KERNEL_GLOBAL_AVGPOOL: /* torch's rules (ref.c has them for NCHW); padded taps never win */
      for (int n = 0; n < wl->n; n++)
        for (int ch = 0; ch < wl->c; ch++)
          for (int oy = 0; oy < wl->oh; oy++)
            for (int ox = 0; ox < wl->ow; ox++) {
              int mx = wl->kernel == TC_KERNEL_MAXPOOL, taps = 0, inside = 0;
              double acc = mx ? -INFINITY : 0;
              for (int ky = 0; ky < wl->kh; ky++)
                for (int kx = 0; kx < wl->kw; kx++) {
                  int iy = oy * wl->sh - wl->pt + ky, ix = ox * wl->sw - wl->pl + kx;
                  if (iy >= wl->h + wl->pb || ix >= wl->w + wl->pr) continue;
                  taps++;
                  if (iy < 0 || iy >= wl->h || ix < 0 || ix >= wl->w) continue;
                  inside++;
                  float v = p[0][tc__at(n, ch, iy, ix, wl->c, wl->h, wl->w, wl->in_cb)];
                  acc = mx ? fmax(acc, v) : acc + v;
                }
              p[1][tc__at(n, ch, oy, ox, wl->c, wl->oh, wl->ow, wl->out_cb)] =
                  (float)(mx ? acc : acc / (wl->count_include_pad ? taps : inside));
            }
      break;
    case TC_KERNEL_LAYOUT:
      for (int n = 0; n < wl->n; n++)
        for (int ch = 0; ch < wl->c; ch++)
          for (int y = 0; y < wl->h; y++)
            for (int x = 0; x < wl->w; x++)
              p[1][tc__at(n, ch, y, x, wl->c, wl->h, wl->w, wl->out_cb)] =
                  p[0][tc__at(n, ch, y, x, wl->c, wl->h, wl->w, wl->in_cb)];
      break;
    case TC_KERNEL_DENSE:
      for (int n = 0; n < wl->n; n++)
        for (int m = 0; m < wl->oc; m++) {
          double acc = tc_ref_dot(p[0] + (int64_t)n * wl->c, 1, p[1] + (int64_t)m * wl->c, 1, wl->c);
          float v = (float)acc + ((wl->epilogue & TC_EPI_BIAS) ? p[2][m] : 0.0f);
          if (wl->epilogue & TC_EPI_RESIDUAL) v += p[3][(int64_t)n * wl->oc + m];
          p[4][(int64_t)n * wl->oc + m] = tc__epi(v, wl);
        }
      break;
    case TC_KERNEL_ELTWISE:
      for (int64_t k = 0; k < total; k++) p[2][k] = tc__epi(p[0][k] + p[1][k], wl);
      break;
    case TC_KERNEL_SOFTMAX: { /* the innermost axis of extent > 1 among (w, h, c) */
      int len = wl->w > 1 ? wl->w : wl->h > 1 ? wl->h : wl->c;
      for (int64_t r = 0; r < total / len; r++) {
        const float *x = p[0] + r * len;
        float *y = p[1] + r * len, mx = -INFINITY;
        for (int k = 0; k < len; k++) mx = x[k] > mx ? x[k] : mx;
        double s = 0;
        for (int k = 0; k < len; k++) s += (y[k] = expf(x[k] - mx));
        for (int k = 0; k < len; k++) y[k] = (float)(y[k] / s);
      }
      break;
    }
    case TC_KERNEL_SOFTMAX_ROWS:
      for (int64_t r = 0; r < total / wl->w; r++) {
        const float *x = p[0] + r * wl->w,
                    *m = p[1] ? p[1] + r / ((int64_t)wl->c * wl->h) * wl->w : NULL;
        float *y = p[2] + r * wl->w, mx = -INFINITY;
        for (int k = 0; k < wl->w; k++) {
          y[k] = x[k] * wl->alpha + ((wl->epilogue & TC_EPI_MASK) ? m[k] : 0.0f);
          mx = y[k] > mx ? y[k] : mx;
        }
        double s = 0;
        for (int k = 0; k < wl->w; k++) s += (y[k] = expf(y[k] - mx));
        for (int k = 0; k < wl->w; k++) y[k] = (float)(y[k] / s);
      }
      break;
    case TC_KERNEL_BATCH_MATMUL: {
      int M = wl->h, K = wl->c, N = wl->oc;
      for (int i = 0; i < wl->n; i++) {
        const float *A = p[0] + (int64_t)i * M * K, *B = p[1] + (int64_t)i * K * N;
        for (int m = 0; m < M; m++)
          for (int n = 0; n < N; n++) {
            double acc = tc_ref_dot(wl->trans_a ? A + m : A + (int64_t)m * K, wl->trans_a ? M : 1,
                                    wl->trans_b ? B + (int64_t)n * K : B + n, wl->trans_b ? 1 : N, K);
            p[2][((int64_t)i * M + m) * N + n] = (float)(acc * wl->alpha);
          }
      }
      break;
    }
    case TC_KERNEL_LAYER_NORM:
      for (int r = 0; r < wl->n; r++) {
        const float *x = p[0] + (int64_t)r * wl->c, *rx = p[3] ? p[3] + (int64_t)r * wl->c : NULL;
        double mean = 0, var = 0;
        for (int k = 0; k < wl->c; k++) mean += x[k] + (rx ? rx[k] : 0.0f);
        mean /= wl->c;
        for (int k = 0; k < wl->c; k++) {
          double d = (double)(x[k] + (rx ? rx[k] : 0.0f)) - mean;
          var += d * d;
        }
        double inv = 1.0 / sqrt(var / wl->c + wl->alpha);
        for (int k = 0; k < wl->c; k++)
          p[4][(int64_t)r * wl->c + k] =
              (float)(((double)(x[k] + (rx ? rx[k] : 0.0f)) - mean) * inv * p[1][k] + p[2][k]);
      }
      break;
    case TC_KERNEL_UNARY:
      for (int64_t k = 0; k < wl->n; k++) {
        float x = wl->op == TC_UNARY_CAST_I64 ? (float)((const int64_t *)(void *)p[0])[k] : p[0][k];
        static const int act[TC_UNARY_COUNT] = {
            [TC_UNARY_GELU] = TC_EPI_GELU,       [TC_UNARY_TANH] = TC_EPI_TANH,
            [TC_UNARY_SIGMOID] = TC_EPI_SIGMOID, [TC_UNARY_HARD_SIGMOID] = TC_EPI_HARD_SIGMOID,
            [TC_UNARY_HARD_SWISH] = TC_EPI_HARD_SWISH, [TC_UNARY_SILU] = TC_EPI_SILU};
        p[1][k] = wl->op == TC_UNARY_AFFINE ? x * wl->alpha + wl->beta
                  : wl->op == TC_UNARY_CLIP ? fminf(fmaxf(x, wl->alpha), wl->beta)
                                            : tc__act(x, act[wl->op], wl);
      }
      break;
    case TC_KERNEL_EMBEDDING:
      for (int k = 0; k < wl->n; k++) {
        int64_t ix = ((const int64_t *)(void *)p[0])[k];
        for (int d = 0; d < wl->oc; d++)
          p[2][(int64_t)k * wl->oc + d] = ix >= 0 && ix < wl->c ? p[1][ix * wl->oc + d] : 0.0f;
      }
      break;
    case TC_KERNEL_COPY:
    case TC_KERNEL_BINARY: {
      int idx[TC_WL_DIMS] = {0}, nd2 = wl->ndim;
      int64_t flat = 0;
      do {
        int64_t ia = 0, ib = 0;
        for (int d = 0; d < nd2; d++) {
          ia += (int64_t)idx[d] * wl->astride[d];
          ib += (int64_t)idx[d] * wl->bstride[d];
        }
        if (wl->kernel == TC_KERNEL_COPY) {
          p[1][wl->boff + ib] = p[0][wl->aoff + ia];
        } else {
          float x = p[0][ia], y = p[1][ib];
          p[2][flat++] = wl->op == TC_BINARY_ADD   ? x + y
                         : wl->op == TC_BINARY_MUL ? x * y
                         : wl->op == TC_BINARY_SUB ? x - y
                                                   : x / y;
        }
      } while (tc__next(idx, wl->shape, nd2));
      break;
    }
    default: fprintf(stderr, "executor: no %s\n", tc_kernel_name(wl->kernel)); CHECK(0);
  }
  free(wbuf);
  free(bbuf);
}

/* Runs the calls over a workspace of ws 4-byte units filled with NaNs (a read of a tensor nobody
 * wrote shows), with the inputs copied to their slots and the outputs copied out from theirs. */
static void tc__exec(const tc_graph *g, const tc_call *cs, int ncalls, int64_t ws,
                     const void *const *ins, void *const *outs) {
  float *w = malloc((size_t)(ws + 16) * 4);
  memset(w, 0xff, (size_t)(ws + 16) * 4);
  for (int k = 0; k < g->ninputs; k++) {
    const tc_node *in = &g->nodes[g->inputs[k]];
    memcpy(w + in->out.offset, ins[k], (size_t)tc_tensor_bytes(&in->out));
  }
  for (int i = 0; i < ncalls; i++) {
    CHECK_EQ_INT(tc_workload_check(&cs[i].wl), TH_OK);
    tc__exec_call(g, &cs[i], w);
  }
  for (int k = 0; k < g->noutputs; k++) {
    const tc_node *o = &g->nodes[g->outputs[k]];
    CHECK(o->out.offset >= 0);
    memcpy(outs[k], w + o->out.offset, (size_t)tc_tensor_bytes(&o->out));
  }
  free(w);
}

/* ---- the pipeline
 * ------------------------------------------------------------------------------------ */

/* Runs the reference before the passes and after fold_bn, fuse, [layout,] plan (equal within
 * ref_tol), then the lowered calls in the executor when `exec` (equal to the first within 1e-5).
 * Returns the calls. */
static tc_call *tc__pipeline_ref(tc_graph *g, int layout, int groups, const void *const *ins,
                                 void **ref0, double ref_tol, int exec, int *ncalls, int64_t *ws) {
  char err[256];
  void **y0 = ref0 ? ref0 : tc__outputs(g), **y1 = tc__outputs(g);
  if (!ref0) CHECK_EQ_INT(tc_ref_run_io(g, ins, y0, err, sizeof err), TH_OK);
  CHECK_EQ_INT(tc_pass_fold_bn(g), TH_OK);
  CHECK_EQ_INT(tc_pass_fuse_groups(g, groups), TH_OK);
  CHECK_EQ_INT(tc__live_ops(g, TC_OP_DROPOUT), 0);
  if (layout) CHECK_EQ_INT(tc_pass_layout(g, 16), TH_OK);
  CHECK_EQ_INT(tc_pass_plan_memory(g, ws), TH_OK);
  tc__test_check_plan(g, *ws);
  CHECK_EQ_INT(tc_ref_run_io(g, ins, y1, err, sizeof err), TH_OK);
  tc__same_outputs(g, y1, y0, ref_tol, "reference after the passes");
  tc_call *calls = NULL;
  th_status rc = tc_lower(g, &calls, ncalls);
  if (rc != TH_OK) fprintf(stderr, "lower: %s\n", g->err);
  CHECK_EQ_INT(rc, TH_OK);
  for (int i = 0; i < *ncalls; i++) {
    CHECK(calls[i].wl.kernel >= 0 && calls[i].wl.kernel < TC_KERNEL_COUNT);
    CHECK_EQ_INT(tc_workload_check(&calls[i].wl), TH_OK);
  }
  if (exec) {
    tc__exec(g, calls, *ncalls, *ws, ins, y1);
    tc__same_outputs(g, y1, y0, 1e-5, "executor of the calls");
  }
  if (!ref0) tc__outputs_free(y0);
  tc__outputs_free(y1);
  return calls;
}

static tc_call *tc__pipeline_groups(tc_graph *g, int layout, int groups, const void *const *ins,
                                    double ref_tol, int exec, int *ncalls, int64_t *ws) {
  return tc__pipeline_ref(g, layout, groups, ins, NULL, ref_tol, exec, ncalls, ws);
}

/* tc__pipeline_groups with every fusion. */
static tc_call *tc__pipeline(tc_graph *g, int layout, const void *const *ins, double ref_tol,
                             int exec, int *ncalls, int64_t *ws) {
  return tc__pipeline_groups(g, layout, TC_FUSE_ALL, ins, ref_tol, exec, ncalls, ws);
}

static int tc__calls_of(const tc_call *cs, int n, tc_kernel k, int epi) {
  int c = 0;
  for (int i = 0; i < n; i++) c += cs[i].wl.kernel == k && (cs[i].wl.epilogue & epi) == epi;
  return c;
}

/* A reshape of a computed (contiguous) tensor is an alias: it neither copies nor owns storage. */
static void tc__check_reshape_aliases(const tc_graph *g, const tc_call *cs, int n) {
  int aliases = 0;
  for (int i = 0; i < g->nnodes; i++) {
    const tc_node *nd = &g->nodes[i];
    if (nd->dead || nd->op != TC_OP_RESHAPE) continue;
    tc_op in = g->nodes[nd->inputs[0]].op;
    if (in == TC_OP_RESHAPE || in == TC_OP_TRANSPOSE || in == TC_OP_SLICE || in == TC_OP_EXPAND)
      continue;
    CHECK_EQ_INT(tc_graph_storage(g, i), tc_graph_storage(g, nd->inputs[0]));
    CHECK_EQ_INT(nd->out.offset, g->nodes[nd->inputs[0]].out.offset);
    for (int k = 0; k < n; k++) CHECK(cs[k].node != i);
    aliases++;
  }
  CHECK(aliases > 0);
}

/* bert's inputs at [batch, seq]: ids, token types and a mask that pads the second sequence. */
static void tc__bert_inputs(int batch, int seq, int64_t *ids, int64_t *types, int64_t *mask) {
  for (int k = 0; k < batch * seq; k++) {
    ids[k] = (k * 7919) % 30522;
    types[k] = k % seq >= seq / 2;
    mask[k] = k < seq || k % seq < seq - 6;
  }
}

/* The lowered bert: 4 dense per layer (q, k and v joined into one of 2304 columns, attention output
 * + residual, intermediate + gelu, output + residual) and the pooler (tanh), 2 batch matmuls and a
 * masked softmax per layer, 25 layer norms, the 2 embeddings, the mask's cast and affine; 4 copies
 * per layer (q, k, v into heads, from slices of the joined output; heads merged); the position
 * embeddings are read from the constant (a broadcast add at batch > 1, the embeddings layer norm's
 * residual at batch 1) and the pooler's first token is an alias at batch 1, a copy above. With
 * `qkv` 0 (TC_FUSE_QKV off) q, k and v are 3 dense each. */
static void tc__check_bert_calls(const tc_graph *g, const tc_call *cs, int n, int batch, int seq,
                                 int qkv) {
  int b2 = batch > 1, dense = 73 - 24 * qkv, wide = 0;
  CHECK_EQ_INT(n, dense + 24 + 12 + 25 + 2 + 2 + 1 + b2 + 48 + b2);
  CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_DENSE, TC_EPI_BIAS), dense);
  CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_DENSE, TC_EPI_GELU), 12);
  CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_DENSE, TC_EPI_RESIDUAL), 24);
  CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_DENSE, TC_EPI_TANH), 1);
  CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_BATCH_MATMUL, 0), 24);
  CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_SOFTMAX_ROWS, TC_EPI_MASK), 12);
  CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_LAYER_NORM, 0), 25);
  CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_LAYER_NORM, TC_EPI_RESIDUAL), !b2);
  CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_EMBEDDING, 0), 2);
  CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_UNARY, 0), 2);
  CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_ELTWISE, 0), 1);
  CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_BINARY, 0), b2);
  CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_COPY, 0), 48 + b2);
  for (int i = 0; i < n; i++) {
    const tc_workload *wl = &cs[i].wl;
    if (wl->kernel == TC_KERNEL_SOFTMAX_ROWS) {
      /* scores [B, 12, S, S], mask [B, S] */
      CHECK(wl->n == batch && wl->c == 12 && wl->h == seq && wl->w == seq && wl->alpha == 0.125f);
      CHECK_EQ_INT(cs[i].arg_space[1], TC_SPACE_WORK);
    }
    if (wl->kernel == TC_KERNEL_BATCH_MATMUL) CHECK(wl->n == batch * 12 && wl->h == seq);
    if (wl->kernel == TC_KERNEL_DENSE) {
      CHECK(wl->n == batch * seq || (wl->n == batch && wl->oc == 768));
      if (wl->oc == 3 * 768) { /* q, k, v: one weight and bias made of theirs */
        const tc_node *nd = &g->nodes[cs[i].node];
        const tc_param *w = &g->params[nd->weight], *bs = &g->params[nd->bias];
        CHECK(w->nparts == 3 && bs->nparts == 3 && w->shape[0] == 2304 && w->shape[1] == 768);
        CHECK(strstr(w->name, "attention.self.query+key+value.weight") != NULL);
        CHECK(strstr(g->params[w->parts[1]].name, "attention.self.key.weight") != NULL);
        CHECK(strstr(g->params[bs->parts[2]].name, "attention.self.value.bias") != NULL);
        wide++;
      }
    }
    if (wl->kernel == TC_KERNEL_LAYER_NORM) {
      CHECK(wl->n == batch * seq && wl->c == 768 && wl->alpha == 1e-12f);
      CHECK(cs[i].arg_space[1] == TC_SPACE_CONST && cs[i].arg_space[2] == TC_SPACE_CONST);
      CHECK(strstr(g->params[cs[i].arg_param[1]].name, "LayerNorm.weight") != NULL);
    }
    if (wl->kernel == TC_KERNEL_EMBEDDING) {
      CHECK_EQ_INT(cs[i].arg_space[1], TC_SPACE_CONST);
      CHECK(wl->n == batch * seq && wl->oc == 768 && (wl->c == 30522 || wl->c == 2));
    }
    if (wl->kernel == TC_KERNEL_BINARY ||
        (wl->kernel == TC_KERNEL_LAYER_NORM && (wl->epilogue & TC_EPI_RESIDUAL))) {
      int a = wl->kernel == TC_KERNEL_BINARY ? 1 : 3; /* rows 0..S-1 of the position embeddings */
      CHECK_EQ_INT(cs[i].arg_space[a], TC_SPACE_CONST);
      CHECK(strcmp(g->params[cs[i].arg_param[a]].name, "embeddings.position_embeddings.weight") ==
            0);
      CHECK_EQ_INT(cs[i].arg_off[a], 0);
    }
  }
  CHECK_EQ_INT(wide, 12 * qkv);
  tc__check_reshape_aliases(g, cs, n);
}

/* bert at sequence 16, batch 1 and 2: the reference agrees before and after the passes, and the
 * executor of the lowered calls agrees with it. */
TH_TEST(passes_bert_preserve) {
  for (int batch = 1; batch <= 2; batch++) {
    tc_graph *g = NULL;
    CHECK_EQ_INT(tc_zoo_build("bert", batch, 16, 1, 1, &g, NULL, 0), TH_OK);
    int64_t ids[32], types[32], mask[32], ws = 0;
    tc__bert_inputs(batch, 16, ids, types, mask);
    const void *ins[3] = {ids, types, mask};
    int n = 0;
    fprintf(stderr, "bert batch %d, sequence 16\n", batch);
    tc_call *cs = tc__pipeline(g, 1, ins, 1e-6, 1, &n, &ws);
    tc__check_bert_calls(g, cs, n, batch, 16, 1);
    free(cs);
    tc_graph_free(g);
  }
  return 0;
}

/* bert at sequence 16 with each fusion group off, and all of them: the reference agrees before and
 * after the passes and the executor with it, and each group's calls come back unfused (163 calls at
 * batch 1 with every group; 188 without the residuals, 176 without the activations, 187 without the
 * softmax's scale and mask, 187 without q/k/v joined, 249 without any). */
TH_TEST(passes_bert_fusion_groups) {
  static const struct {
    int off, extra[2]; /* groups off; calls beyond the fused count at batch 1, 2 */
  } cases[] = {{TC_FUSE_RESIDUAL, {25, 24}},
               {TC_FUSE_ACTIVATION, {13, 13}},
               {TC_FUSE_SOFTMAX, {24, 24}},
               {TC_FUSE_QKV, {24, 24}},
               {TC_FUSE_ALL, {86, 85}}};
  for (int batch = 1; batch <= 2; batch++) {
    int64_t ids[32], types[32], mask[32], ws = 0;
    tc__bert_inputs(batch, 16, ids, types, mask);
    const void *ins[3] = {ids, types, mask};
    /* the graph before any pass is the same for every case: its reference outputs once per batch */
    tc_graph *g0 = NULL;
    CHECK_EQ_INT(tc_zoo_build("bert", batch, 16, 1, 1, &g0, NULL, 0), TH_OK);
    void **ref0 = tc__outputs(g0);
    char err[256];
    CHECK_EQ_INT(tc_ref_run_io(g0, ins, ref0, err, sizeof err), TH_OK);
    tc_graph_free(g0);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      tc_graph *g = NULL;
      CHECK_EQ_INT(tc_zoo_build("bert", batch, 16, 1, 1, &g, NULL, 0), TH_OK);
      int n = 0, off = cases[c].off, b2 = batch > 1;
      fprintf(stderr, "bert batch %d, fusion groups off 0x%x\n", batch, (unsigned)off);
      tc_call *cs = tc__pipeline_ref(g, 1, TC_FUSE_ALL & ~off, ins, ref0, 1e-6, 1, &n, &ws);
      CHECK_EQ_INT(n, 163 + 2 * b2 + cases[c].extra[b2]);
      if (off == TC_FUSE_QKV) tc__check_bert_calls(g, cs, n, batch, 16, 0);
      if (off & TC_FUSE_RESIDUAL) {
        CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_DENSE, TC_EPI_RESIDUAL), 0);
        CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_LAYER_NORM, TC_EPI_RESIDUAL), 0);
        CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_ELTWISE, 0), 1 + 24 + !b2);
      } else {
        CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_DENSE, TC_EPI_RESIDUAL), 24);
      }
      if (off & TC_FUSE_ACTIVATION) {
        CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_DENSE, TC_EPI_GELU), 0);
        CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_DENSE, TC_EPI_TANH), 0);
      } else {
        CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_DENSE, TC_EPI_GELU), 12);
      }
      /* the cast, the mask's affine, and the activations and the scales unfused */
      CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_UNARY, 0),
                   2 + 13 * !!(off & TC_FUSE_ACTIVATION) + 12 * !!(off & TC_FUSE_SOFTMAX));
      /* attention softmax stays SOFTMAX_ROWS, with the mask only when it is fused */
      CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_SOFTMAX_ROWS, 0), 12);
      CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_SOFTMAX_ROWS, TC_EPI_MASK),
                   off & TC_FUSE_SOFTMAX ? 0 : 12);
      free(cs);
      tc_graph_free(g);
    }
    tc__outputs_free(ref0);
  }
  return 0;
}

/* The lowered vit (layers of the zoo's or the small one): the patch conv (its map reordered to NCHW
 * for the reshape when the layout pass ran), the class token copied from its constant and the
 * patches copied transposed into the concat, the position add (broadcast at batch > 1), per layer 2
 * layer norms, 4 dense (in_proj, out_proj + residual, mlp + gelu, mlp + residual), 4 copies (q, k,
 * v selected out of in_proj's output, heads merged), 2 batch matmuls and a scaled softmax; the
 * final layer norm, the class token's row (an alias at batch 1, a copy above) and the head. */
static void tc__check_vit_calls(const tc_graph *g, const tc_call *cs, int n, int batch, int layout,
                                int layers, int seq) {
  int b2 = batch > 1;
  CHECK_EQ_INT(n, 1 + layout + 2 + 1 + 13 * layers + 1 + b2 + 1);
  CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_CONV2D, TC_EPI_BIAS), 1);
  CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_LAYOUT, 0), layout);
  CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_DENSE, TC_EPI_BIAS), 4 * layers + 1);
  CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_DENSE, TC_EPI_GELU), layers);
  CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_DENSE, TC_EPI_RESIDUAL), 2 * layers);
  CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_BATCH_MATMUL, 0), 2 * layers);
  CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_SOFTMAX_ROWS, 0), layers);
  CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_SOFTMAX_ROWS, TC_EPI_MASK), 0);
  CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_LAYER_NORM, 0), 2 * layers + 1);
  CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_COPY, 0), 4 * layers + 2 + b2);
  CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_BINARY, 0), b2);
  CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_ELTWISE, 0), !b2);
  int from_const = 0;
  for (int i = 0; i < n; i++) {
    const tc_workload *wl = &cs[i].wl;
    if (wl->kernel == TC_KERNEL_SOFTMAX_ROWS) CHECK(wl->n == batch && wl->h == seq && wl->w == seq);
    if (wl->kernel == TC_KERNEL_CONV2D) CHECK_EQ_INT(wl->out_cb, layout ? 16 : 1);
    for (int a = 0; a < cs[i].nargs; a++) {
      if (cs[i].arg_space[a] != TC_SPACE_CONST) continue;
      const char *pn = g->params[cs[i].arg_param[a]].name;
      if (wl->kernel == TC_KERNEL_COPY) { /* the class token, broadcast over the batch */
        CHECK(strcmp(pn, "class_token") == 0 && (batch == 1 || wl->astride[0] == 0) &&
              wl->aoff == 0);
        from_const++;
      } else if (wl->kernel != TC_KERNEL_LAYER_NORM) {
        CHECK(strcmp(pn, "encoder.pos_embedding") == 0 && cs[i].arg_off[a] == 0);
        from_const++;
      }
    }
  }
  CHECK_EQ_INT(from_const, 2);
  tc__check_reshape_aliases(g, cs, n);
}

/* A small vit (a 32x32 image in 8x8 patches: 16 + the class token, width 32, 4 heads, 2 layers)
 * built with the same graph ops and shapes as the zoo's, cheap enough for every pipeline variant.
 */
static tc_graph *tc__mini_vit(int batch) {
  enum { D = 32, H = 4, L = 2, S = 17 };
  char a[64], b[64], c[64];
  tc_graph *g = tc_graph_new("mini-vit", batch);
  int x = tc_graph_conv(g, "conv_proj", tc_graph_input(g, 3, 32, 32), D, 8, 8, 8, 8, 0, 0, 1, 1);
  x = tc_graph_transpose(g, tc_graph_reshape(g, x, 3, (const int[]){batch, D, 16}),
                         (const int[]){0, 2, 1});
  int cls = tc_graph_const(g, "class_token", 3, (const int64_t[]){1, 1, D}, TC_INIT_EMBED, D);
  x = tc_graph_concat_axis(
      g, 2, (const int[]){tc_graph_expand(g, cls, 3, (const int[]){batch, 1, D}), x}, 1);
  x = tc_graph_add(
      g, x,
      tc_graph_const(g, "encoder.pos_embedding", 3, (const int64_t[]){1, S, D}, TC_INIT_EMBED, D));
  for (int l = 0; l < L; l++) {
    snprintf(a, sizeof a, "ln_1.%d", l);
    snprintf(b, sizeof b, "in_proj_weight.%d", l);
    snprintf(c, sizeof c, "in_proj_bias.%d", l);
    int y = tc_graph_dense_named(g, "in_proj", tc_graph_layer_norm(g, a, x, 1e-6f), 3 * D, b, c);
    y = tc_graph_transpose(g, tc_graph_reshape(g, y, 5, (const int[]){batch, S, 3, H, D / H}),
                           (const int[]){2, 0, 3, 1, 4});
    int q = tc_graph_select(g, y, 0, 0), k = tc_graph_select(g, y, 0, 1),
        v = tc_graph_select(g, y, 0, 2);
    int att = tc_graph_dropout(
        g, tc_graph_softmax_ex(g, tc_graph_matmul(g, q, k, 0, 1, 1.0f), 0.125f, -1));
    int o =
        tc_graph_transpose(g, tc_graph_matmul(g, att, v, 0, 0, 1.0f), (const int[]){0, 2, 1, 3});
    o = tc_graph_reshape(g, o, 3, (const int[]){batch, S, D});
    snprintf(a, sizeof a, "out_proj.%d", l);
    x = tc_graph_add(g, x, tc_graph_dropout(g, tc_graph_dense(g, a, o, D, 1)));
    snprintf(a, sizeof a, "ln_2.%d", l);
    snprintf(b, sizeof b, "mlp.0.%d", l);
    snprintf(c, sizeof c, "mlp.3.%d", l);
    y = tc_graph_gelu(g, tc_graph_dense(g, b, tc_graph_layer_norm(g, a, x, 1e-6f), 2 * D, 1));
    x = tc_graph_add(g, x, tc_graph_dense(g, c, y, D, 1));
  }
  x = tc_graph_select(g, tc_graph_layer_norm(g, "encoder.ln", x, 1e-6f), 1, 0);
  tc_graph_dense(g, "heads.head", x, 10, 1);
  CHECK_EQ_INT(tc_graph_finish(g), TH_OK);
  CHECK_EQ_INT(tc_zoo_fill(g), TH_OK);
  return g;
}

/* The small vit at batch 1 and 2, with the CPU's layout pass and without it (the CUDA backend's
 * graph). */
TH_TEST(passes_mini_vit_preserve) {
  for (int batch = 1; batch <= 2; batch++)
    for (int layout = 0; layout <= 1; layout++) {
      tc_graph *g = tc__mini_vit(batch);
      float *x = malloc((size_t)batch * 3 * 32 * 32 * sizeof *x);
      tc__fill(x, batch * 3 * 32 * 32, 5);
      const void *ins[1] = {x};
      int n = 0;
      int64_t ws = 0;
      fprintf(stderr, "mini vit batch %d, layout pass %d\n", batch, layout);
      tc_call *cs = tc__pipeline(g, layout, ins, 1e-6, 1, &n, &ws);
      CHECK_EQ_INT(tc__live_ops(g, TC_OP_LAYOUT), layout);
      tc__check_vit_calls(g, cs, n, batch, layout, 2, 17);
      free(cs);
      free(x);
      tc_graph_free(g);
    }
  return 0;
}

/* torchvision's vit_b_16 at batch 1 through the CPU pipeline (about 20 s per reference run). */
TH_TEST(passes_vit_preserve) {
  tc_graph *g = NULL;
  CHECK_EQ_INT(tc_zoo_build("vit", 1, 0, 0, 1, &g, NULL, 0), TH_OK);
  float *x = malloc(3 * 224 * 224 * sizeof *x);
  tc__fill(x, 3 * 224 * 224, 9);
  const void *ins[1] = {x};
  int n = 0;
  int64_t ws = 0;
  tc_call *cs = tc__pipeline(g, 1, ins, 1e-6, 0, &n, &ws);
  tc__check_vit_calls(g, cs, n, 1, 1, 12, 197);
  free(cs);
  free(x);
  tc_graph_free(g);
  return 0;
}

/* The calls of vit and bert at their full sizes (shapes only), with and without the layout pass,
 * batch 1 and 2; the plan never overlaps live tensors. */
TH_TEST(passes_transformer_calls) {
  for (int batch = 1; batch <= 2; batch++)
    for (int layout = 0; layout <= 1; layout++)
      for (int net = 0; net < 2; net++) {
        tc_graph *g = NULL;
        CHECK_EQ_INT(tc_zoo_build(net ? "bert" : "vit", batch, 0, 0, 0, &g, NULL, 0), TH_OK);
        int64_t ws = 0;
        CHECK_EQ_INT(tc_pass_fold_bn(g), TH_OK);
        CHECK_EQ_INT(tc_pass_fuse(g), TH_OK);
        if (layout) CHECK_EQ_INT(tc_pass_layout(g, 16), TH_OK);
        CHECK_EQ_INT(tc_pass_plan_memory(g, &ws), TH_OK);
        tc__test_check_plan(g, ws);
        tc_call *cs = NULL;
        int n = 0;
        CHECK_EQ_INT(tc_lower(g, &cs, &n), TH_OK);
        for (int i = 0; i < n; i++) CHECK_EQ_INT(tc_workload_check(&cs[i].wl), TH_OK);
        if (net)
          tc__check_bert_calls(g, cs, n, batch, 128, 1);
        else
          tc__check_vit_calls(g, cs, n, batch, layout, 12, 197);
        fprintf(stderr, "%-4s batch %d layout %d: %d calls, workspace %.2f MB\n",
                net ? "bert" : "vit", batch, layout, n, ws * 4 / 1e6);
        free(cs);
        tc_graph_free(g);
      }
  return 0;
}

/* Tensor ops off the transformers' beaten path, each checked by the reference and the executor: a
 * stepped slice of a transpose reshaped (a reshape copy), broadcast mul/sub/div with constant and
 * strided operands, an add of a strided view into a layer norm (residual, copied), a dense residual
 * with gelu, an unusual softmax mask (expanded) and a row mask that is a strided view (copied), a
 * transposed matmul, a relu on an add of a tensor and its transpose (ELTWISE reads copies), softmax
 * of rank 3 and 2, int64 indices reshaped into an embedding, a concat along the last axis with a
 * broadcast constant, and outputs that are an alias at an offset, a strided view and a view of a
 * constant. */
static tc_graph *tc__odd_graph(void) {
  tc_graph *g = tc_graph_new("odd", 2);
  int x = tc_graph_input_tensor(g, "x", TC_DTYPE_F32, 4, (const int[]){2, 3, 4, 5});
  int ids = tc_graph_input_tensor(g, "ids", TC_DTYPE_I64, 2, (const int[]){2, 6});
  int m = tc_graph_input_tensor(g, "m", TC_DTYPE_F32, 1, (const int[]){4});
  int t = tc_graph_transpose(g, x, (const int[]){0, 2, 3, 1}); /* [2, 4, 5, 3] */
  int r = tc_graph_reshape(g, tc_graph_slice(g, t, 2, 1, 5, 2), 3, (const int[]){2, 4, 6});
  int c6 = tc_graph_const(g, "c6", 1, (const int64_t[]){6}, TC_INIT_EMBED, 6);
  int x2 = tc_graph_reshape(g, x, 3, (const int[]){2, 6, 10});
  int tr = tc_graph_transpose(g, tc_graph_slice(g, x2, 2, 0, 4, 1),
                              (const int[]){0, 2, 1}); /* [2, 4, 6] */
  int sb = tc_graph_sub(g, tc_graph_mul(g, r, c6), tr);
  int dv = tc_graph_div(g, sb, tc_graph_affine(g, c6, 1.0f, 2.0f));
  int ln = tc_graph_layer_norm(g, "ln", tc_graph_add(g, dv, tr), 1e-5f);
  int d1 = tc_graph_gelu(g, tc_graph_add(g, ln, tc_graph_dense(g, "d1", ln, 6, 1)));
  int um = tc_graph_reshape(g, m, 2, (const int[]){4, 1}); /* broadcasts along the softmax axis */
  int sm1 = tc_graph_softmax_ex(g, d1, 0.5f, um);
  int rm = tc_graph_reshape(g, tc_graph_slice(g, x2, 2, 0, 1, 1), 3, (const int[]){2, 1, 6});
  int sm2 = tc_graph_tanh(g, tc_graph_softmax_ex(g, ln, 1.0f, rm));
  int mm = tc_graph_matmul(g, r, r, 1, 0, 0.5f); /* [2, 6, 6] */
  int ea = tc_graph_relu(g, tc_graph_add(g, mm, tc_graph_transpose(g, mm, (const int[]){0, 2, 1})));
  int sm3 = tc_graph_softmax(g, ea);
  int sm4 = tc_graph_softmax(g, tc_graph_reshape(g, ea, 2, (const int[]){12, 6}));
  int emb = tc_graph_embedding(g, "emb", tc_graph_reshape(g, ids, 2, (const int[]){6, 2}), 10,
                               8); /* [6, 2, 8] */
  int c4 = tc_graph_const(g, "c4", 3, (const int64_t[]){1, 1, 4}, TC_INIT_EMBED, 4);
  int cc = tc_graph_concat_axis(
      g, 2, (const int[]){emb, tc_graph_expand(g, c4, 3, (const int[]){6, 2, 4})}, 2);
  CHECK(tc_graph_output(g, "row3", tc_graph_select(g, cc, 0, 3)) >= 0);
  CHECK(tc_graph_output(g, "sm1_t", tc_graph_transpose(g, sm1, (const int[]){2, 0, 1})) >= 0);
  CHECK(tc_graph_output(g, "c6_odd", tc_graph_slice(g, c6, 0, 1, 5, 2)) >= 0);
  CHECK(tc_graph_output(g, "sm2", sm2) >= 0);
  CHECK(tc_graph_output(g, "sm3", sm3) >= 0);
  CHECK(tc_graph_output(g, "sm4", sm4) >= 0);
  CHECK(tc_graph_output(g, "gelu", tc_graph_gelu(g, sb)) >= 0);
  if (tc_graph_error(g)[0]) fprintf(stderr, "%s\n", tc_graph_error(g));
  CHECK_EQ_INT(tc_graph_finish(g), TH_OK);
  CHECK_EQ_INT(tc_zoo_fill(g), TH_OK);
  return g;
}

TH_TEST(passes_tensor_views) {
  for (int layout = 0; layout <= 1; layout++) {
    tc_graph *g = tc__odd_graph();
    float x[120], m[4] = {0.0f, -1.0f, 2.0f, -1e30f};
    int64_t ids[12];
    tc__fill(x, 120, 3);
    for (int k = 0; k < 12; k++) ids[k] = (k * 7) % 10;
    const void *ins[3] = {x, ids, m};
    int n = 0, expands = tc__live_ops(g, TC_OP_EXPAND);
    int64_t ws = 0;
    tc_call *cs = tc__pipeline(g, layout, ins, 1e-6, 1, &n, &ws);
    CHECK_EQ_INT(tc__live_ops(g, TC_OP_EXPAND), expands + 1); /* the unusual mask */
    CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_LAYER_NORM, TC_EPI_RESIDUAL), 1);
    CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_DENSE, TC_EPI_BIAS | TC_EPI_RESIDUAL | TC_EPI_GELU),
                 1);
    CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_ELTWISE, TC_EPI_RELU), 1);
    CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_SOFTMAX_ROWS, TC_EPI_MASK), 2);
    CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_SOFTMAX_ROWS, 0), 3);
    CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_SOFTMAX, 0), 1);
    CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_BINARY, 0), 3);
    CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_UNARY, 0),
                 3); /* affine of c6, the tanh, the last gelu */
    for (int i = 0; i < n; i++) {
      const tc_workload *wl = &cs[i].wl;
      CHECK(wl->kernel != TC_KERNEL_COPY || wl->ndim <= 4);
      if (wl->kernel == TC_KERNEL_SOFTMAX_ROWS && (wl->epilogue & TC_EPI_MASK))
        CHECK((wl->n == 2 && wl->c == 1 && wl->h == 4) || (wl->n == 8 && wl->c == 1 && wl->h == 1));
    }
    free(cs);
    tc_graph_free(g);
  }
  return 0;
}

/* ---- the activations of imported CNNs (issue 21) ------------------------------------------------- */

/* Runs the lowered calls as a model .so would: every call's kernel (fallback config) built through LLVM
 * into one library, weights folded (tc_node_effective_params) and packed for their config, the
 * workspace filled with NaNs; the outputs copied out. */
static void tc__run_compiled(const tc_graph *g, const tc_call *cs, int n, int64_t ws,
                             const void *const *ins, void *const *outs) {
  tc_target t;
  CHECK_EQ_INT(tc_target_host(&t), TH_OK);
  tc_workload *wls = calloc((size_t)n, sizeof *wls);
  tc_config *cfgs = calloc((size_t)n, sizeof *cfgs);
  char **names = calloc((size_t)n, sizeof *names);
  CHECK(wls && cfgs && names);
  for (int i = 0; i < n; i++) {
    tc_space s;
    wls[i] = cs[i].wl;
    CHECK_EQ_INT(tc_op_space(&wls[i], &t, &s), TH_OK);
    CHECK_EQ_INT(tc_op_fallback(&wls[i], &t, &s, &cfgs[i]), TH_OK);
    names[i] = malloc(16);
    snprintf(names[i], 16, "k%d", i);
  }
  char so[64], err[1024] = "";
  snprintf(so, sizeof so, "/tmp/tc_passes_act_%ld.so", (long)getpid());
  th_status rc = tc_kernels_build_so(&t, n, wls, cfgs, (const char *const *)names, so, err, sizeof err);
  if (rc != TH_OK) fprintf(stderr, "build: %s\n", err);
  CHECK_EQ_INT(rc, TH_OK);
  void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  CHECK(h != NULL);
  float *w = malloc((size_t)(ws + 16) * 4);
  memset(w, 0xff, (size_t)(ws + 16) * 4);
  for (int k = 0; k < g->ninputs; k++) {
    const tc_node *in = &g->nodes[g->inputs[k]];
    memcpy(w + in->out.offset, ins[k], (size_t)tc_tensor_bytes(&in->out));
  }
  for (int i = 0; i < n; i++) {
    const tc_node *nd = &g->nodes[cs[i].node];
    float *p[5] = {0}, *wt = NULL, *bias = NULL, *packed = NULL;
    if (cs[i].arg_space[TC_ARG_WEIGHTS] == TC_SPACE_WEIGHTS && cs[i].nargs == 5) {
      wt = malloc((size_t)g->params[nd->weight].numel * sizeof *wt);
      bias = malloc((size_t)wls[i].oc * sizeof *bias);
      CHECK_EQ_INT(tc_node_effective_params(g, nd, wt, bias), TH_OK);
      packed = malloc(tc_op_packed_size(&wls[i], &cfgs[i], &t) * sizeof *packed + 64);
      CHECK_EQ_INT(tc_op_pack(&wls[i], &cfgs[i], &t, wt, packed), TH_OK);
    }
    for (int a = 0; a < cs[i].nargs; a++) {
      switch (cs[i].arg_space[a]) {
        case TC_SPACE_WORK: p[a] = w + cs[i].arg_off[a]; break;
        case TC_SPACE_CONST: p[a] = g->params[cs[i].arg_param[a]].data + cs[i].arg_off[a]; break;
        case TC_SPACE_WEIGHTS: p[a] = packed; break;
        case TC_SPACE_BIAS: p[a] = bias; break;
        default: p[a] = NULL; break;
      }
    }
    void (*fn)(void *const *);
    *(void **)&fn = dlsym(h, names[i]);
    CHECK(fn != NULL);
    fn((void *const *)p);
    free(wt), free(bias), free(packed);
  }
  for (int k = 0; k < g->noutputs; k++) {
    const tc_node *o = &g->nodes[g->outputs[k]];
    memcpy(outs[k], w + o->out.offset, (size_t)tc_tensor_bytes(&o->out));
  }
  dlclose(h);
  unlink(so);
  for (int i = 0; i < n; i++) free(names[i]);
  free(names), free(wls), free(cfgs), free(w);
}

/* A small network with the shapes of mobilenet_v3's and efficientnet_b0's blocks: conv + bn + silu,
 * depthwise + bn + silu, a squeeze-excite (global pool, 1x1 conv + silu, 1x1 conv + sigmoid, the map
 * times the gate), a projection, conv + hard swish, depthwise stride 2 + hard swish, a squeeze-excite
 * with relu and torch's hard sigmoid (adaptive pool, the gate as the first factor); then activations
 * that cannot fuse (after a max pool, and on a conv output used twice) and a head of dense layers with
 * each activation, and a product of two maps of one shape. Outputs: the logits, the unfused chain (a map)
 * and a dense with ONNX's default hard sigmoid (0.2, 0.5). */
static tc_graph *tc__act_graph(int batch) {
  tc_graph *g = tc_graph_new("act-net", batch);
  int x = tc_graph_input(g, 3, 20, 20);
  x = tc_graph_conv(g, "c0", x, 16, 3, 3, 2, 2, 1, 1, 1, 0);
  x = tc_graph_silu(g, tc_graph_bn(g, "bn0", x, 1e-5f));
  x = tc_graph_silu(g, tc_graph_bn(g, "bn1", tc_graph_conv(g, "dw1", x, 16, 3, 3, 1, 1, 1, 1, 16, 0), 1e-3f));
  int e = tc_graph_conv(g, "se1.fc1", tc_graph_global_avg_pool(g, x), 4, 1, 1, 1, 1, 0, 0, 1, 1);
  e = tc_graph_conv(g, "se1.fc2", tc_graph_silu(g, e), 16, 1, 1, 1, 1, 0, 0, 1, 1);
  x = tc_graph_mul(g, x, tc_graph_sigmoid(g, e));
  x = tc_graph_bn(g, "bn2", tc_graph_conv(g, "c2", x, 24, 1, 1, 1, 1, 0, 0, 1, 0), 1e-5f);
  x = tc_graph_bn(g, "bn3", tc_graph_conv(g, "c3", x, 48, 1, 1, 1, 1, 0, 0, 1, 0), 1e-5f);
  x = tc_graph_hard_swish(g, x);
  x = tc_graph_bn(g, "bn4", tc_graph_conv(g, "dw4", x, 48, 3, 3, 2, 2, 1, 1, 48, 0), 1e-5f);
  x = tc_graph_hard_swish(g, x);
  e = tc_graph_conv(g, "se4.fc1", tc_graph_adaptive_avg_pool(g, x, 1, 1), 12, 1, 1, 1, 1, 0, 0, 1, 1);
  e = tc_graph_conv(g, "se4.fc2", tc_graph_relu(g, e), 48, 1, 1, 1, 1, 0, 0, 1, 1);
  x = tc_graph_mul(g, tc_graph_hard_sigmoid(g, e, 1.0f / 6.0f, 0.5f), x);
  x = tc_graph_bn(g, "bn5", tc_graph_conv(g, "c5", x, 24, 1, 1, 1, 1, 0, 0, 1, 0), 1e-5f);
  /* unfusable: after a pool, and a conv output that two nodes read */
  int u = tc_graph_sigmoid(g, tc_graph_max_pool(g, x, 2, 1, 0, 0));
  u = tc_graph_hard_swish(g, tc_graph_hard_sigmoid(g, u, 0.2f, 0.5f));
  int c6 = tc_graph_conv(g, "c6", u, 24, 1, 1, 1, 1, 0, 0, 1, 1);
  u = tc_graph_mul(g, tc_graph_add(g, tc_graph_silu(g, c6), c6), c6); /* a same-shape product of maps */
  int y = tc_graph_flatten(g, tc_graph_global_avg_pool(g, x));
  y = tc_graph_hard_swish(g, tc_graph_dense(g, "fc1", y, 32, 1));
  int hs = tc_graph_hard_sigmoid(g, tc_graph_dense(g, "fc_hs", y, 8, 1), 0.2f, 0.5f);
  y = tc_graph_silu(g, tc_graph_dense(g, "fc2", y, 16, 1));
  y = tc_graph_sigmoid(g, tc_graph_dense(g, "fc3", y, 10, 1));
  CHECK(tc_graph_output(g, "logits", y) >= 0);
  CHECK(tc_graph_output(g, "unfused", u) >= 0);
  CHECK(tc_graph_output(g, "hard_sigmoid", hs) >= 0);
  if (tc_graph_error(g)[0]) fprintf(stderr, "%s\n", tc_graph_error(g));
  CHECK_EQ_INT(tc_graph_finish(g), TH_OK);
  CHECK_EQ_INT(tc_zoo_fill(g), TH_OK);
  return g;
}

/* Its calls: every activation after a conv or dense fused into it (hard sigmoid's alpha and beta in the
 * workload), the four that cannot fuse as UNARY calls that read the blocked maps as they are (no
 * reorder around them), each squeeze-excite product a BINARY call that reads the blocked map and gate
 * ([n, c / 16 blocks, h * w, 16 lanes], the gate broadcast along h * w). With the layout pass, one
 * reorder: the map output (the 3-channel input is read plain). */
static void tc__check_act_calls(const tc_graph *g, const tc_call *cs, int n, int layout) {
  CHECK_EQ_INT(n, 27 + layout);
  CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_CONV2D, TC_EPI_BIAS), 9);
  CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_CONV2D, TC_EPI_SILU), 2);
  CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_CONV2D, TC_EPI_SIGMOID), 1);
  CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_CONV2D, TC_EPI_HARD_SWISH), 1);
  CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_CONV2D, TC_EPI_HARD_SIGMOID), 1);
  CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_CONV2D, TC_EPI_RELU), 1);
  CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_DEPTHWISE, TC_EPI_BIAS | TC_EPI_SILU), 1);
  CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_DEPTHWISE, TC_EPI_BIAS | TC_EPI_HARD_SWISH), 1);
  CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_DENSE, TC_EPI_BIAS), 4);
  static const int dense_act[4] = {TC_EPI_SIGMOID, TC_EPI_HARD_SIGMOID, TC_EPI_HARD_SWISH, TC_EPI_SILU};
  for (int a = 0; a < 4; a++) CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_DENSE, dense_act[a]), 1);
  CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_UNARY, 0), 4);
  CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_BINARY, 0), 3);
  CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_ELTWISE, 0), 1);
  CHECK_EQ_INT(tc__calls_of(cs, n, TC_KERNEL_LAYOUT, 0), layout);
  for (int i = 0; i < n; i++) {
    const tc_workload *wl = &cs[i].wl;
    if (wl->epilogue & TC_EPI_HARD_SIGMOID)
      CHECK(wl->kernel == TC_KERNEL_CONV2D ? wl->alpha == 1.0f / 6.0f && wl->beta == 0.5f
                                            : wl->alpha == 0.2f && wl->beta == 0.5f);
    if (wl->kernel == TC_KERNEL_UNARY && layout) /* the map after the pool and c6 (24 channels) */
      CHECK(g->nodes[cs[i].node].out.cb == 8);
    if (wl->kernel == TC_KERNEL_BINARY && layout && g->nodes[cs[i].node].out.cb == 8) /* c6 x c6 */
      CHECK(wl->ndim == 1 && wl->astride[0] == 1 && wl->bstride[0] == 1);
    else if (wl->kernel == TC_KERNEL_BINARY && layout) { /* [blocks,] h * w, 16 (one block dropped) */
      const tc_tensor *o = &g->nodes[cs[i].node].out;
      int d = wl->ndim, hw = o->shape[2] * o->shape[3], blocks = o->shape[0] * o->shape[1] / 16;
      int gate = wl->astride[d - 2] == 0 ? 0 : 1;
      const int *st[2] = {wl->astride, wl->bstride};
      CHECK(o->cb == 16 && d == 2 + (blocks > 1));
      CHECK(wl->shape[d - 1] == 16 && wl->shape[d - 2] == hw && (d == 2 || wl->shape[0] == blocks));
      CHECK(st[1 - gate][d - 2] == 16 && st[1 - gate][d - 1] == 1);
      CHECK(d == 2 || st[1 - gate][0] == hw * 16);
      CHECK(st[gate][d - 2] == 0 && st[gate][d - 1] == 1 && (d == 2 || st[gate][0] == 16));
    }
  }
  CHECK_EQ_INT(tc__live_ops(g, TC_OP_SIGMOID) + tc__live_ops(g, TC_OP_HARD_SIGMOID) +
                   tc__live_ops(g, TC_OP_HARD_SWISH) + tc__live_ops(g, TC_OP_SILU),
               4);
}

/* The network above at batch 1 and 2, with and without the layout pass: the reference before and after
 * the passes, the executor of the calls, and the calls compiled through LLVM all agree. */
TH_TEST(passes_activations) {
  for (int batch = 1; batch <= 2; batch++)
    for (int layout = 0; layout <= 1; layout++) {
      tc_graph *g = tc__act_graph(batch);
      int64_t nin = (int64_t)batch * 3 * 20 * 20, ws = 0;
      float *x = malloc((size_t)nin * sizeof *x);
      tc__fill(x, nin, 11 + (uint64_t)batch);
      for (int64_t i = 0; i < nin; i++) x[i] *= 3.0f; /* inputs that reach every clamp */
      const void *ins[1] = {x};
      void **want = tc__outputs(g), **got = tc__outputs(g);
      char err[256];
      CHECK_EQ_INT(tc_ref_run_io(g, ins, want, err, sizeof err), TH_OK);
      int n = 0;
      fprintf(stderr, "activations: batch %d, layout pass %d\n", batch, layout);
      tc_call *cs = tc__pipeline(g, layout, ins, 1e-6, 1, &n, &ws);
      tc__check_act_calls(g, cs, n, layout);
      tc__run_compiled(g, cs, n, ws, ins, got);
      tc__same_outputs(g, got, want, 1e-4, "compiled calls");
      tc__outputs_free(want);
      tc__outputs_free(got);
      free(cs);
      free(x);
      tc_graph_free(g);
    }
  return 0;
}

/* Grouped convs (issue 38) through the passes, the executor and the compiled calls, with and
 * without the layout pass: 24 channels in 2 groups of 12 (the input's block of 8 splits a group:
 * one reorder to blocks of 4), 8 groups of 3 -> 6 (a reorder to plain NCHW), 4 groups of 12 -> 8
 * over a block of 16 (a reorder), and resnext's 32 groups of 2 over a block of 16 (lanes of one
 * block, no reorder), each a conv2d call of its groups. */
TH_TEST(passes_grouped_convs) {
  for (int layout = 0; layout <= 1; layout++) {
    tc_graph *g = tc_graph_new("grouped-net", 1);
    int x = tc_graph_input(g, 3, 12, 12);
    x = tc_graph_conv(g, "c0", x, 24, 3, 3, 1, 1, 1, 1, 1, 0);
    x = tc_graph_relu(g, tc_graph_bn(g, "bn0", x, 1e-5f));
    x = tc_graph_conv(g, "g1", x, 24, 3, 3, 1, 1, 1, 1, 2, 0);
    x = tc_graph_relu(g, tc_graph_bn(g, "bn1", x, 1e-5f));
    x = tc_graph_relu(g, tc_graph_conv(g, "g2", x, 48, 3, 3, 2, 2, 1, 1, 8, 1));
    x = tc_graph_relu(g, tc_graph_conv(g, "g3", x, 32, 1, 1, 1, 1, 0, 0, 4, 1));
    x = tc_graph_conv(g, "c4", x, 64, 1, 1, 1, 1, 0, 0, 1, 1);
    x = tc_graph_relu(g, tc_graph_conv(g, "g5", x, 64, 3, 3, 1, 1, 1, 1, 32, 1));
    int y = tc_graph_dense(g, "fc", tc_graph_flatten(g, tc_graph_global_avg_pool(g, x)), 10, 1);
    CHECK(tc_graph_output(g, "logits", y) >= 0);
    if (tc_graph_error(g)[0]) fprintf(stderr, "%s\n", tc_graph_error(g));
    CHECK_EQ_INT(tc_graph_finish(g), TH_OK);
    CHECK_EQ_INT(tc_zoo_fill(g), TH_OK);
    float x0[3 * 12 * 12];
    tc__fill(x0, 3 * 12 * 12, 5);
    const void *ins[1] = {x0};
    void **want = tc__outputs(g), **got = tc__outputs(g);
    char err[256];
    CHECK_EQ_INT(tc_ref_run_io(g, ins, want, err, sizeof err), TH_OK);
    int n = 0;
    int64_t ws = 0;
    tc_call *cs = tc__pipeline(g, layout, ins, 1e-5, 1, &n, &ws);
    int grouped = 0, reorders = 0, in_cb[4] = {0}, want_cb[4] = {4, 1, 4, 16};
    for (int i = 0; i < n; i++) {
      if (cs[i].wl.kernel == TC_KERNEL_CONV2D && cs[i].wl.groups > 1 && grouped < 4)
        in_cb[grouped++] = cs[i].wl.in_cb;
      reorders += cs[i].wl.kernel == TC_KERNEL_LAYOUT;
    }
    fprintf(stderr, "layout pass %d: %d calls, %d grouped convs, %d reorders\n", layout, n, grouped,
            reorders);
    CHECK_EQ_INT(grouped, 4);
    for (int k = 0; layout && k < 4; k++) CHECK_EQ_INT(in_cb[k], want_cb[k]);
    CHECK_EQ_INT(reorders, layout ? 3 : 0); /* 3 input channels and the pooled 1x1 need none */
    tc__run_compiled(g, cs, n, ws, ins, got);
    tc__same_outputs(g, got, want, 1e-4, "compiled calls");
    tc__outputs_free(want);
    tc__outputs_free(got);
    free(cs);
    tc_graph_free(g);
  }
  return 0;
}

/* ---- the CNN zoo is lowered as before
 * ---------------------------------------------------------------- */

static uint64_t tc__fnv(uint64_t h, const char *s) {
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001B3ull;
  return h;
}

/* FNV-1a of every call's workload key (one a line), and of every call's argument spaces and offsets
 * plus the workspace size, computed with commit 0ac023b's passes for the 14 CNNs at their default
 * sizes. */
static const struct {
  const char *net;
  int batch, layout, ncalls;
  uint64_t keys, args;
} tc__cnn_calls[] = {
    {"resnet-18", 1, 0, 23, 0x1911b2b8b6713f0full, 0xacdb19d3ccfd676full},
    {"resnet-18", 1, 1, 23, 0x327132ad04fe5889ull, 0xacdb19d3ccfd676full},
    {"resnet-18", 2, 0, 23, 0x5031f36c5af58d92ull, 0x326d099f1eab9fe5ull},
    {"resnet-18", 2, 1, 23, 0x62179b77ae8b2752ull, 0x326d099f1eab9fe5ull},
    {"resnet-34", 1, 0, 39, 0xc0dee3cf00b9249full, 0x1983c461993780afull},
    {"resnet-34", 1, 1, 39, 0x135fa02d33d25acdull, 0x1983c461993780afull},
    {"resnet-34", 2, 0, 39, 0x0803f6e8ccfe87aeull, 0xeca227de1bab2cc9ull},
    {"resnet-34", 2, 1, 39, 0xbaadf24b8ce1e8eaull, 0xeca227de1bab2cc9ull},
    {"resnet-50", 1, 0, 56, 0x6e885632a2ea1634ull, 0x8cc22bd2586801c5ull},
    {"resnet-50", 1, 1, 56, 0xe2e874d86da24784ull, 0x8cc22bd2586801c5ull},
    {"resnet-50", 2, 0, 56, 0xe4255fbee57401ceull, 0x31312ec2a9d46219ull},
    {"resnet-50", 2, 1, 56, 0xa5a67b07b8fbcdfcull, 0x31312ec2a9d46219ull},
    {"resnet-101", 1, 0, 107, 0xc0f59114420eb985ull, 0x631cfddf6ae34774ull},
    {"resnet-101", 1, 1, 107, 0x58d08f090ae408d3ull, 0x631cfddf6ae34774ull},
    {"resnet-101", 2, 0, 107, 0x2b8e3ff356d2beeaull, 0x25dc1a9603afca9aull},
    {"resnet-101", 2, 1, 107, 0xdacea734017725e6ull, 0x25dc1a9603afca9aull},
    {"resnet-152", 1, 0, 158, 0x310dc8f27fb72736ull, 0x50004c080d8934c5ull},
    {"resnet-152", 1, 1, 158, 0xf12aca83c0f00dbeull, 0x50004c080d8934c5ull},
    {"resnet-152", 2, 0, 158, 0x79a536a4b044ddceull, 0xaf0b65eefb62123eull},
    {"resnet-152", 2, 1, 158, 0x2c8b1a1ac0b66b88ull, 0xaf0b65eefb62123eull},
    {"vgg-11", 1, 0, 16, 0xce0c1a200ebec823ull, 0x2f237a2c1e33d203ull},
    {"vgg-11", 1, 1, 17, 0x1fcfe373c8d358f0ull, 0x82e640cadb0aec4cull},
    {"vgg-11", 2, 0, 16, 0x348789fab66bbe43ull, 0xce6eb51eeffb6587ull},
    {"vgg-11", 2, 1, 17, 0xe13c7d55418781d9ull, 0xe5bb548f4e107641ull},
    {"vgg-13", 1, 0, 18, 0x55f9521aba15b0cbull, 0xbeb856c1de06d260ull},
    {"vgg-13", 1, 1, 19, 0x5e236c1388eefca8ull, 0x0d970fedac77a4b3ull},
    {"vgg-13", 2, 0, 18, 0x30a19fb4663d4edfull, 0xf0df149de019d17dull},
    {"vgg-13", 2, 1, 19, 0xe63c74a0d7ad3619ull, 0x71cb2f4eac612aefull},
    {"vgg-16", 1, 0, 21, 0x88cb9dbc1b5e3574ull, 0x440637142f4a0513ull},
    {"vgg-16", 1, 1, 22, 0x18f5a08444529415ull, 0xed5afc2b3c034806ull},
    {"vgg-16", 2, 0, 21, 0xb2f66d5119bee001ull, 0x2da9bc566e1cfb42ull},
    {"vgg-16", 2, 1, 22, 0x06ca2a544c898035ull, 0x05280c4882fdc8feull},
    {"vgg-19", 1, 0, 24, 0x6f02a6c5650c8829ull, 0x9f5ff2359ce7a60cull},
    {"vgg-19", 1, 1, 25, 0x2c7dca7283cfef3aull, 0x45bde0967e48e647ull},
    {"vgg-19", 2, 0, 24, 0x47bffef346eda89full, 0xf17839dc0dcb81adull},
    {"vgg-19", 2, 1, 25, 0x8b57a5b42b8ef899ull, 0x5fd8a98b0004dd5full},
    {"mobilenet", 1, 0, 30, 0x041731c0523d1ca4ull, 0x8f238f7a62b02452ull},
    {"mobilenet", 1, 1, 30, 0xb0762f5a4ecf6484ull, 0x8f238f7a62b02452ull},
    {"mobilenet", 2, 0, 30, 0xdc779940dc956f46ull, 0x8ddc57ecb4ca84ffull},
    {"mobilenet", 2, 1, 30, 0xa2c961c8c90070a0ull, 0x8ddc57ecb4ca84ffull},
    {"mobilenet-v2", 1, 0, 54, 0x86b69d83f954659full, 0x7c5505649b2536d2ull},
    {"mobilenet-v2", 1, 1, 54, 0x7c001972d8c696f1ull, 0x7c5505649b2536d2ull},
    {"mobilenet-v2", 2, 0, 54, 0x96a973aca0b555f5ull, 0xf1c915ca8f991e94ull},
    {"mobilenet-v2", 2, 1, 54, 0x89feda6d6522c451ull, 0xf1c915ca8f991e94ull},
    {"squeezenet_v1.0", 1, 0, 46, 0xb2de807c3728e1f1ull, 0x26cca1276dc8538full},
    {"squeezenet_v1.0", 1, 1, 46, 0x553c6a7abc1d2ebaull, 0x26cca1276dc8538full},
    {"squeezenet_v1.0", 2, 0, 46, 0x354374a76f9b6f01ull, 0xc937e27cb99cd684ull},
    {"squeezenet_v1.0", 2, 1, 46, 0xe6459bd0873668d6ull, 0xc937e27cb99cd684ull},
    {"squeezenet_v1.1", 1, 0, 46, 0xdfbc566f00474281ull, 0x01f631e1390bd2e8ull},
    {"squeezenet_v1.1", 1, 1, 46, 0xd58ab1ca331019e4ull, 0x01f631e1390bd2e8ull},
    {"squeezenet_v1.1", 2, 0, 46, 0x140ac6e947acee05ull, 0xb432318a34b1abafull},
    {"squeezenet_v1.1", 2, 1, 46, 0xff81159ae14c08ecull, 0xb432318a34b1abafull},
    {"inception_v3", 1, 0, 155, 0xe882cdbd170e56d0ull, 0x04a8ae83dc605eb6ull},
    {"inception_v3", 1, 1, 155, 0x0d808b492738a884ull, 0x04a8ae83dc605eb6ull},
    {"inception_v3", 2, 0, 155, 0x10a2999e590a447dull, 0xb4ab978ff62a2623ull},
    {"inception_v3", 2, 1, 155, 0x37d4c9f1b3a8f9ffull, 0xb4ab978ff62a2623ull},
};

TH_TEST(passes_cnn_calls_unchanged) {
  size_t rows = sizeof tc__cnn_calls / sizeof tc__cnn_calls[0];
  CHECK_EQ_INT(rows, 14 * 4);
  for (size_t r = 0; r < rows; r++) {
    tc_graph *g = NULL;
    CHECK_EQ_INT(tc_zoo_build(tc__cnn_calls[r].net, tc__cnn_calls[r].batch, 0, 0, 0, &g, NULL, 0),
                 TH_OK);
    int64_t ws = 0;
    CHECK_EQ_INT(tc_pass_fold_bn(g), TH_OK);
    CHECK_EQ_INT(tc_pass_fuse(g), TH_OK);
    if (tc__cnn_calls[r].layout) CHECK_EQ_INT(tc_pass_layout(g, 16), TH_OK);
    CHECK_EQ_INT(tc_pass_plan_memory(g, &ws), TH_OK);
    tc_call *cs = NULL;
    int n = 0;
    CHECK_EQ_INT(tc_lower(g, &cs, &n), TH_OK);
    uint64_t hk = 0xCBF29CE484222325ull, ha = hk;
    for (int i = 0; i < n; i++) {
      char key[256], buf[64];
      CHECK_EQ_INT(tc_workload_key(&cs[i].wl, key, sizeof key), TH_OK);
      hk = tc__fnv(tc__fnv(hk, key), "\n");
      for (int a = 0; a < cs[i].nargs; a++) {
        snprintf(buf, sizeof buf, "%d:%lld,", cs[i].arg_space[a], (long long)cs[i].arg_off[a]);
        ha = tc__fnv(ha, buf);
      }
    }
    char buf[32];
    snprintf(buf, sizeof buf, "ws%lld", (long long)ws);
    ha = tc__fnv(ha, buf);
    if (n != tc__cnn_calls[r].ncalls || hk != tc__cnn_calls[r].keys || ha != tc__cnn_calls[r].args)
      fprintf(stderr, "%s batch %d layout %d: %d calls, keys %016llx, args %016llx\n",
              tc__cnn_calls[r].net, tc__cnn_calls[r].batch, tc__cnn_calls[r].layout, n,
              (unsigned long long)hk, (unsigned long long)ha);
    CHECK_EQ_INT(n, tc__cnn_calls[r].ncalls);
    CHECK(hk == tc__cnn_calls[r].keys);
    CHECK(ha == tc__cnn_calls[r].args);
    free(cs);
    tc_graph_free(g);
  }
  return 0;
}
