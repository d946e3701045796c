/* Loop-structure features for the tuner's cost model, after AutoTVM's "itervar" features: per loop its
 * extent, depth, the iteration products above and below it and its annotation, then operation and
 * memory-traffic totals weighted by how often each statement runs. The layout is fixed (see ir.h) so that
 * vectors from different configs of one template line up. */
#include <math.h>
#include <string.h>

#include "ir.h"

typedef struct feat_ctx {
  float *feat;
  int nloops;
  int max_depth;
  double fma, add, mul, div, loads, stores, bytes_ld, bytes_st, local_bytes;
  int max_lanes;
} feat_ctx;

static double const_extent(const tc_expr *e) {
  return (e && e->kind == TC_EXPR_INT && e->ival > 0) ? (double)e->ival : 1.0;
}

static double lg(double x) {
  return log2(1.0 + (x > 0 ? x : 0));
}

static void count_expr(feat_ctx *c, const tc_expr *e, double w) {
  if (!e) return;
  if (e->type.lanes > c->max_lanes) c->max_lanes = e->type.lanes;
  int fl = e->type.code == TC_TYPE_FLOAT;
  double lanes = e->type.lanes;
  switch (e->kind) {
    case TC_EXPR_FMA: c->fma += w * lanes; break;
    case TC_EXPR_ADD:
    case TC_EXPR_SUB:
      if (fl) c->add += w * lanes;
      break;
    case TC_EXPR_MUL:
      if (fl) c->mul += w * lanes;
      break;
    case TC_EXPR_DIV:
      if (fl) c->div += w * lanes;
      break;
    case TC_EXPR_LOAD:
      c->loads += w;
      c->bytes_ld += w * (e->type.code == TC_TYPE_INT ? 8.0 : 4.0) * lanes; /* int64 indices */
      break;
    default: break;
  }
  count_expr(c, e->a, w);
  count_expr(c, e->b, w);
  count_expr(c, e->c, w);
}

/* Returns the product of constant loop extents in the subtree (the iterations "below"). */
static double walk(feat_ctx *c, const tc_stmt *s, int depth, double above, double w) {
  if (!s) return 1.0;
  switch (s->kind) {
    case TC_STMT_FOR: {
      double ext = const_extent(s->extent);
      int slot = c->nloops++;
      if (depth + 1 > c->max_depth) c->max_depth = depth + 1;
      double below = walk(c, s->body, depth + 1, above * ext, w * ext);
      if (slot < TC_IR_FEATURE_LOOPS) {
        float *f = c->feat + slot * TC_IR_FEATURE_PER_LOOP;
        f[0] = (float)lg(ext);
        f[1] = (float)depth;
        f[2] = (float)lg(above);
        f[3] = (float)lg(below);
        int k = 0;
        switch (s->for_kind) {
          case TC_FOR_SERIAL:
          case TC_FOR_ROLLED: k = 0; break;
          case TC_FOR_PARALLEL: k = 1; break;
          case TC_FOR_VECTORIZED: k = 2; break;
          case TC_FOR_UNROLLED: k = 3; break;
          case TC_FOR_GPU_BLOCK_X:
          case TC_FOR_GPU_BLOCK_Y:
          case TC_FOR_GPU_BLOCK_Z: k = 4; break;
          default: k = 5; break;
        }
        f[4 + k] = 1.0f;
      }
      return ext * below;
    }
    case TC_STMT_LET:
      count_expr(c, s->value, w);
      return walk(c, s->body, depth, above, w);
    case TC_STMT_ALLOCATE:
      if (s->scope == TC_SCOPE_LOCAL) c->local_bytes += 4.0 * (double)s->count * s->var->elem.lanes;
      return walk(c, s->body, depth, above, w);
    case TC_STMT_STORE:
      count_expr(c, s->index, w);
      count_expr(c, s->value, w);
      c->stores += w;
      c->bytes_st += w * 4.0 * s->value->type.lanes;
      return 1.0;
    case TC_STMT_IF: {
      count_expr(c, s->value, w);
      double a = walk(c, s->body, depth, above, w);
      double b = s->else_body ? walk(c, s->else_body, depth, above, w) : 1.0;
      return a > b ? a : b;
    }
    case TC_STMT_SEQ: {
      double best = 1.0;
      for (int i = 0; i < s->n; i++) {
        double x = walk(c, s->items[i], depth, above, w);
        if (x > best) best = x;
      }
      return best;
    }
    case TC_STMT_EVAL: count_expr(c, s->value, w); return 1.0;
    case TC_STMT_INTRIN: /* a lane's share of a 16x8x8 tensor-core product; copies as loads */
      if (s->intrin == TC_INTRIN_MMA_TF32) c->fma += w * 32;
      if (s->intrin == TC_INTRIN_CP_ASYNC) {
        c->loads += w;
        c->bytes_ld += w * 4.0 * (double)s->imm;
      }
      return 1.0;
    default: return 1.0;
  }
}

th_status tc_ir_features(const tc_stmt *s, float *feat, int max, int *n) {
  if (!s || !feat || !n || max < TC_IR_FEATURE_LEN) return TH_ERR_INVALID;
  memset(feat, 0, sizeof *feat * TC_IR_FEATURE_LEN);
  feat_ctx c;
  memset(&c, 0, sizeof c);
  c.feat = feat;
  walk(&c, s, 0, 1.0, 1.0);
  float *g = feat + TC_IR_FEATURE_LOOPS * TC_IR_FEATURE_PER_LOOP;
  g[0] = (float)lg(c.fma);
  g[1] = (float)lg(c.add);
  g[2] = (float)lg(c.mul);
  g[3] = (float)lg(c.div);
  g[4] = (float)lg(c.loads);
  g[5] = (float)lg(c.stores);
  g[6] = (float)lg(c.bytes_ld);
  g[7] = (float)lg(c.bytes_st);
  g[8] = (float)lg(c.local_bytes);
  g[9] = (float)c.max_lanes;
  g[10] = (float)c.nloops;
  g[11] = (float)c.max_depth;
  *n = TC_IR_FEATURE_LEN;
  return TH_OK;
}
