/* The CUDA C printer: loop IR -> one `extern "C" __global__` function. Loops bound to GPU axes
 * become `const int v = min + blockIdx.x;` (their extents become the launch grid/block, checked to
 * agree when an axis is bound more than once), SHARED allocations become `__shared__` arrays (or,
 * for a kernel staging above 48 KiB, pointers into its `extern __shared__` block), SYNC
 * `__syncthreads()`, 4-lane loads/stores with 16-byte alignment become float4 accesses, and serial
 * loop nests with constant extents whose iteration count is at most the config's
 * auto_unroll_max_step are unrolled, either with `#pragma unroll` or, with unroll_explicit, by
 * replicating the body (at most 64 iterations; cooperative fetch loops, whose variable is named
 * "fetch*", are never auto-unrolled). Indices are printed as 32-bit int (the templates reject
 * workloads whose tensors exceed 2^31 elements); an argument buffer of integers (the int64 indices
 * of embedding, the input of an int64 cast) is a `long long *` parameter. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tc_cuda.h"

typedef struct cg {
  th_buf *b;
  const tc_cuda_lowered *k;
  tc_cuda_launch *l;
  int bound[6]; /* per axis (block xyz, thread xyz): extent, 0 = unbound */
  int int_param[8]; /* 1: argument slot i is a buffer of 64-bit integers (long long *) */
  int64_t local_floats;
  int64_t shared_bytes;
  th_status rc;
  char *err;
  size_t errlen;
  int depth;
} cg;

static void cg_fail(cg *c, th_status rc, const char *msg, const char *detail) {
  if (c->rc != TH_OK) return;
  c->rc = rc;
  if (c->err && c->errlen) snprintf(c->err, c->errlen, "cuda codegen: %s%s%s", msg, detail ? " " : "", detail ? detail : "");
}

static void cg_indent(cg *c) {
  for (int i = 0; i < c->depth; i++) th_buf_appendf(c->b, "  ");
}

static void cg_var(cg *c, const tc_var *v) {
  if (v->param >= 0 && v->param < 8 && v->elem.code == TC_TYPE_INT) c->int_param[v->param] = 1;
  if (v->param >= 0) th_buf_appendf(c->b, "a%d", v->param);
  else th_buf_appendf(c->b, "%s_%d", v->name ? v->name : "v", v->id);
}

static const char *cg_type(tc_type t) {
  if (t.code == TC_TYPE_INT) return "int";
  if (t.code == TC_TYPE_BOOL) return "bool";
  if (t.code == TC_TYPE_FLOAT) return t.lanes == 4 ? "float4" : "float";
  return "float *";
}

static void cg_expr(cg *c, const tc_expr *e);

static void cg_float(cg *c, double v) {
  if (isinf(v)) th_buf_appendf(c->b, v > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)");
  else if (isnan(v)) th_buf_appendf(c->b, "__int_as_float(0x7fc00000)");
  else th_buf_appendf(c->b, "%.9ef", v);
}

static void cg_call2(cg *c, const char *fn, const tc_expr *a, const tc_expr *b) {
  th_buf_appendf(c->b, "%s(", fn);
  cg_expr(c, a);
  th_buf_appendf(c->b, ", ");
  cg_expr(c, b);
  th_buf_appendf(c->b, ")");
}

static void cg_expr(cg *c, const tc_expr *e) {
  if (c->rc != TH_OK) return;
  if (e->type.lanes != 1 && e->type.lanes != 4) {
    cg_fail(c, TH_ERR_UNSUPPORTED, "vector width other than 1 or 4", NULL);
    return;
  }
  static const char *ops[TC_EXPR_KIND_COUNT] = {
      [TC_EXPR_ADD] = "+", [TC_EXPR_SUB] = "-", [TC_EXPR_MUL] = "*", [TC_EXPR_DIV] = "/",
      [TC_EXPR_MOD] = "%", [TC_EXPR_LT] = "<",  [TC_EXPR_LE] = "<=", [TC_EXPR_GT] = ">",
      [TC_EXPR_GE] = ">=", [TC_EXPR_EQ] = "==", [TC_EXPR_NE] = "!=", [TC_EXPR_AND] = "&&",
      [TC_EXPR_OR] = "||"};
  switch (e->kind) {
    case TC_EXPR_INT:
      if (e->ival > INT32_MAX || e->ival < INT32_MIN) cg_fail(c, TH_ERR_UNSUPPORTED, "integer beyond 32 bits", NULL);
      else if (e->ival == INT32_MIN) th_buf_appendf(c->b, "(-2147483647 - 1)");
      else th_buf_appendf(c->b, "%" PRId64, e->ival);
      break;
    case TC_EXPR_FLOAT: cg_float(c, e->fval); break;
    case TC_EXPR_VAR: cg_var(c, e->var); break;
    case TC_EXPR_ADD: case TC_EXPR_SUB: case TC_EXPR_MUL: case TC_EXPR_DIV: case TC_EXPR_MOD:
    case TC_EXPR_LT: case TC_EXPR_LE: case TC_EXPR_GT: case TC_EXPR_GE: case TC_EXPR_EQ:
    case TC_EXPR_NE: case TC_EXPR_AND: case TC_EXPR_OR:
      if (e->type.lanes == 4 && (e->type.code != TC_TYPE_FLOAT || e->kind == TC_EXPR_MOD)) {
        cg_fail(c, TH_ERR_UNSUPPORTED, "vector comparison or modulo", NULL);
        return;
      }
      th_buf_appendf(c->b, "(");
      cg_expr(c, e->a);
      th_buf_appendf(c->b, " %s ", ops[e->kind]);
      cg_expr(c, e->b);
      th_buf_appendf(c->b, ")");
      break;
    case TC_EXPR_MIN: cg_call2(c, "th_min", e->a, e->b); break;
    case TC_EXPR_MAX: cg_call2(c, "th_max", e->a, e->b); break;
    case TC_EXPR_NOT:
      th_buf_appendf(c->b, "(!");
      cg_expr(c, e->a);
      th_buf_appendf(c->b, ")");
      break;
    case TC_EXPR_SELECT:
      if (e->a->type.lanes != 1) {
        cg_fail(c, TH_ERR_UNSUPPORTED, "lane-wise select", NULL);
        return;
      }
      th_buf_appendf(c->b, "(");
      cg_expr(c, e->a);
      th_buf_appendf(c->b, " ? ");
      cg_expr(c, e->b);
      th_buf_appendf(c->b, " : ");
      cg_expr(c, e->c);
      th_buf_appendf(c->b, ")");
      break;
    case TC_EXPR_BROADCAST:
      if (e->a->type.code != TC_TYPE_FLOAT) {
        cg_fail(c, TH_ERR_UNSUPPORTED, "integer broadcast", NULL);
        return;
      }
      th_buf_appendf(c->b, "th_bc4(");
      cg_expr(c, e->a);
      th_buf_appendf(c->b, ")");
      break;
    case TC_EXPR_RAMP: cg_fail(c, TH_ERR_UNSUPPORTED, "ramp (gather) expressions", NULL); break;
    case TC_EXPR_LOAD:
      if (e->a && e->a->type.lanes != 1) {
        cg_fail(c, TH_ERR_UNSUPPORTED, "gather loads", NULL);
        return;
      }
      if (e->type.lanes == 4 && e->var->elem.lanes == 1) {
        if (e->align >= 16) {
          th_buf_appendf(c->b, "(*(const float4 *)(");
          cg_var(c, e->var);
          th_buf_appendf(c->b, " + ");
          cg_expr(c, e->a);
          th_buf_appendf(c->b, "))");
        } else {
          th_buf_appendf(c->b, "th_ld4u(");
          cg_var(c, e->var);
          th_buf_appendf(c->b, ", ");
          cg_expr(c, e->a);
          th_buf_appendf(c->b, ")");
        }
      } else {
        cg_var(c, e->var);
        th_buf_appendf(c->b, "[");
        cg_expr(c, e->a);
        th_buf_appendf(c->b, "]");
      }
      break;
    case TC_EXPR_FMA:
      th_buf_appendf(c->b, "%s(", e->type.lanes == 4 ? "th_fma4" : "fmaf");
      cg_expr(c, e->a);
      th_buf_appendf(c->b, ", ");
      cg_expr(c, e->b);
      th_buf_appendf(c->b, ", ");
      cg_expr(c, e->c);
      th_buf_appendf(c->b, ")");
      break;
    case TC_EXPR_CAST:
      if (e->type.lanes != 1) {
        cg_fail(c, TH_ERR_UNSUPPORTED, "vector casts", NULL);
        return;
      }
      /* an integer is 64-bit, as the LLVM side's: a float past 2^31 keeps its value */
      th_buf_appendf(c->b, "((%s)(", e->type.code == TC_TYPE_FLOAT ? "float" : "long long");
      cg_expr(c, e->a);
      th_buf_appendf(c->b, "))");
      break;
    case TC_EXPR_EXP:
    case TC_EXPR_SQRT:
    case TC_EXPR_LOG:
    case TC_EXPR_FLOOR:
    case TC_EXPR_CEIL:
    case TC_EXPR_ROUND:
    case TC_EXPR_SIN:
    case TC_EXPR_COS:
    case TC_EXPR_TAN:
    case TC_EXPR_ASIN:
    case TC_EXPR_ACOS:
    case TC_EXPR_ATAN: {
      static const char *const fns[] = {"expf(", "sqrtf(", "logf(", "floorf(", "ceilf(", "rintf(",
                                        "sinf(", "cosf(",  "tanf(", "asinf(",  "acosf(", "atanf("};
      _Static_assert(sizeof fns / sizeof *fns == TC_EXPR_ATAN - TC_EXPR_EXP + 1,
                     "one per function");
      if (e->type.lanes != 1) {
        cg_fail(c, TH_ERR_UNSUPPORTED, "vector float functions", NULL);
        return;
      }
      th_buf_appendf(c->b, "%s", fns[e->kind - TC_EXPR_EXP]);
      cg_expr(c, e->a);
      th_buf_appendf(c->b, ")");
      break;
    }
    default: cg_fail(c, TH_ERR_UNSUPPORTED, "unknown expression kind", NULL); break;
  }
}

/* Iterations of a loop nest when every loop in it is serial/unrolled with a constant extent and it holds
 * no barrier or allocation; -1 otherwise. */
static int64_t cg_nest_iters(const tc_stmt *s) {
  if (!s) return 1;
  switch (s->kind) {
    case TC_STMT_FOR: {
      if (s->extent->kind != TC_EXPR_INT || s->for_kind >= TC_FOR_GPU_BLOCK_X) return -1;
      int64_t in = cg_nest_iters(s->body);
      if (in < 0) return -1;
      int64_t r = s->extent->ival * in;
      return r > (int64_t)1 << 30 ? -1 : r;
    }
    case TC_STMT_LET: return cg_nest_iters(s->body);
    case TC_STMT_IF: {
      int64_t a = cg_nest_iters(s->body), b = s->else_body ? cg_nest_iters(s->else_body) : 1;
      return (a < 0 || b < 0) ? -1 : (a > b ? a : b);
    }
    case TC_STMT_SEQ: {
      int64_t m = 1;
      for (int i = 0; i < s->n; i++) {
        int64_t x = cg_nest_iters(s->items[i]);
        if (x < 0) return -1;
        if (x > m) m = x;
      }
      return m;
    }
    case TC_STMT_STORE:
    case TC_STMT_EVAL: return 1;
    default: return -1; /* allocate, sync */
  }
}

static void cg_stmt(cg *c, const tc_stmt *s);

#define TC__EXPLICIT_MAX 64

static void cg_bind(cg *c, const tc_stmt *s) {
  static const char *axis[6] = {"blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y",
                                "threadIdx.z"};
  int a = (int)s->for_kind - (int)TC_FOR_GPU_BLOCK_X;
  if (s->extent->kind != TC_EXPR_INT || s->extent->ival < 1 || s->extent->ival > INT32_MAX) {
    cg_fail(c, TH_ERR_UNSUPPORTED, "a GPU-bound loop needs a constant positive extent:", axis[a]);
    return;
  }
  int ext = (int)s->extent->ival;
  if (c->bound[a] && c->bound[a] != ext) {
    cg_fail(c, TH_ERR_UNSUPPORTED, "one GPU axis bound with two extents:", axis[a]);
    return;
  }
  c->bound[a] = ext;
  cg_indent(c);
  th_buf_appendf(c->b, "{\n");
  c->depth++;
  cg_indent(c);
  th_buf_appendf(c->b, "const int ");
  cg_var(c, s->var);
  th_buf_appendf(c->b, " = ");
  if (!(s->min->kind == TC_EXPR_INT && s->min->ival == 0)) {
    cg_expr(c, s->min);
    th_buf_appendf(c->b, " + ");
  }
  th_buf_appendf(c->b, "(int)%s;\n", axis[a]);
  cg_stmt(c, s->body);
  c->depth--;
  cg_indent(c);
  th_buf_appendf(c->b, "}\n");
}

static void cg_for(cg *c, const tc_stmt *s) {
  if (s->for_kind >= TC_FOR_GPU_BLOCK_X) {
    cg_bind(c, s);
    return;
  }
  int64_t iters = cg_nest_iters(s);
  /* cooperative fetch loops (variables named "fetch...") move data to shared memory with divisions per
   * element; unrolling them costs NVRTC minutes and buys nothing, so auto-unroll skips them */
  int fetch = s->var->name && strncmp(s->var->name, "fetch", 5) == 0;
  int unroll = s->for_kind == TC_FOR_UNROLLED ||
               (!fetch && iters > 1 && c->k->unroll_max_step > 0 && iters <= c->k->unroll_max_step);
  /* explicit replication is capped at TC__EXPLICIT_MAX iterations per nest (beyond that the pragma), which
   * keeps sources and NVRTC time bounded */
  if (unroll && c->k->unroll_explicit && s->min->kind == TC_EXPR_INT && s->extent->kind == TC_EXPR_INT &&
      iters <= TC__EXPLICIT_MAX) {
    for (int64_t i = 0; i < s->extent->ival && c->rc == TH_OK; i++) {
      cg_indent(c);
      th_buf_appendf(c->b, "{\n");
      c->depth++;
      cg_indent(c);
      th_buf_appendf(c->b, "const int ");
      cg_var(c, s->var);
      th_buf_appendf(c->b, " = %" PRId64 ";\n", s->min->ival + i);
      cg_stmt(c, s->body);
      c->depth--;
      cg_indent(c);
      th_buf_appendf(c->b, "}\n");
    }
    return;
  }
  if (unroll) {
    cg_indent(c);
    th_buf_appendf(c->b, "#pragma unroll\n");
  }
  cg_indent(c);
  th_buf_appendf(c->b, "for (int ");
  cg_var(c, s->var);
  th_buf_appendf(c->b, " = ");
  cg_expr(c, s->min);
  th_buf_appendf(c->b, "; ");
  cg_var(c, s->var);
  th_buf_appendf(c->b, " < ");
  if (s->min->kind == TC_EXPR_INT && s->min->ival == 0) {
    cg_expr(c, s->extent);
  } else {
    th_buf_appendf(c->b, "(");
    cg_expr(c, s->min);
    th_buf_appendf(c->b, ") + (");
    cg_expr(c, s->extent);
    th_buf_appendf(c->b, ")");
  }
  th_buf_appendf(c->b, "; ++");
  cg_var(c, s->var);
  th_buf_appendf(c->b, ") {\n");
  c->depth++;
  cg_stmt(c, s->body);
  c->depth--;
  cg_indent(c);
  th_buf_appendf(c->b, "}\n");
}

/* &buf[idx] */
static void cg_addr(cg *c, const tc_var *buf, const tc_expr *idx) {
  th_buf_appendf(c->b, "&");
  cg_var(c, buf);
  th_buf_appendf(c->b, "[");
  cg_expr(c, idx);
  th_buf_appendf(c->b, "]");
}

/* The intrinsics become calls of the prelude's th_mma_tf32 / th_cp_* helpers (sm_80 and newer). */
static void cg_intrin(cg *c, const tc_stmt *s) {
  cg_indent(c);
  switch (s->intrin) {
    case TC_INTRIN_MMA_TF32:
      th_buf_appendf(c->b, "th_mma_tf32(");
      for (int i = 0; i < 3; i++) {
        if (i) th_buf_appendf(c->b, ", ");
        cg_addr(c, s->bufs[i], s->idx[i]);
      }
      th_buf_appendf(c->b, ");\n");
      break;
    case TC_INTRIN_CP_ASYNC:
      if (s->imm != 1 && s->imm != 4) {
        cg_fail(c, TH_ERR_UNSUPPORTED, "cp.async of other than 1 or 4 floats", NULL);
        return;
      }
      th_buf_appendf(c->b, "th_cp_async%d(", (int)s->imm);
      cg_addr(c, s->bufs[0], s->idx[0]);
      th_buf_appendf(c->b, ", ");
      if (s->value) { /* a false condition reads nothing: the address stays the buffer's start */
        th_buf_appendf(c->b, "(");
        cg_expr(c, s->value);
        th_buf_appendf(c->b, ") ? ");
        cg_addr(c, s->bufs[1], s->idx[1]);
        th_buf_appendf(c->b, " : ");
        cg_var(c, s->bufs[1]);
        th_buf_appendf(c->b, ", ");
        cg_expr(c, s->value);
      } else {
        cg_addr(c, s->bufs[1], s->idx[1]);
        th_buf_appendf(c->b, ", true");
      }
      th_buf_appendf(c->b, ");\n");
      break;
    case TC_INTRIN_CP_COMMIT: th_buf_appendf(c->b, "th_cp_commit();\n"); break;
    case TC_INTRIN_CP_WAIT:
      if (s->imm < 0 || s->imm > 7) {
        cg_fail(c, TH_ERR_UNSUPPORTED, "cp.async wait for other than 0..7 groups", NULL);
        return;
      }
      th_buf_appendf(c->b, "th_cp_wait(%d);\n", (int)s->imm);
      break;
    default: cg_fail(c, TH_ERR_UNSUPPORTED, "unknown intrinsic", NULL); break;
  }
}

static void cg_stmt(cg *c, const tc_stmt *s) {
  if (c->rc != TH_OK || !s) return;
  switch (s->kind) {
    case TC_STMT_FOR: cg_for(c, s); break;
    case TC_STMT_LET:
      cg_indent(c);
      th_buf_appendf(c->b, "{\n");
      c->depth++;
      cg_indent(c);
      th_buf_appendf(c->b, "const %s ", cg_type(s->var->type));
      cg_var(c, s->var);
      th_buf_appendf(c->b, " = ");
      cg_expr(c, s->value);
      th_buf_appendf(c->b, ";\n");
      cg_stmt(c, s->body);
      c->depth--;
      cg_indent(c);
      th_buf_appendf(c->b, "}\n");
      break;
    case TC_STMT_ALLOCATE: {
      int lanes = s->var->elem.lanes;
      if (lanes != 1 && lanes != 4) {
        cg_fail(c, TH_ERR_UNSUPPORTED, "allocation of a vector width other than 1 or 4", NULL);
        return;
      }
      if (s->scope == TC_SCOPE_GLOBAL) {
        cg_fail(c, TH_ERR_UNSUPPORTED, "global allocations inside a kernel", NULL);
        return;
      }
      int64_t bytes = s->count * 4 * lanes, at = c->shared_bytes;
      if (s->scope == TC_SCOPE_SHARED) /* 16-byte aligned pieces of the dynamic block */
        c->shared_bytes += c->k->dyn_shared ? (bytes + 15) / 16 * 16 : bytes;
      else c->local_floats += s->count * lanes;
      cg_indent(c);
      th_buf_appendf(c->b, "{\n");
      c->depth++;
      cg_indent(c);
      if (s->scope == TC_SCOPE_SHARED && c->k->dyn_shared) { /* carved from the dynamic block */
        th_buf_appendf(c->b, "%s *const ", lanes == 4 ? "float4" : "float");
        cg_var(c, s->var);
        th_buf_appendf(c->b, " = (%s *)(th_dyn_smem + %" PRId64 ");\n", lanes == 4 ? "float4" : "float",
                       at / 4);
      } else {
        th_buf_appendf(c->b, "%s%s ", s->scope == TC_SCOPE_SHARED ? "__shared__ __align__(16) " : "",
                       lanes == 4 ? "float4" : "float");
        cg_var(c, s->var);
        th_buf_appendf(c->b, "[%" PRId64 "];\n", s->count);
      }
      cg_stmt(c, s->body);
      c->depth--;
      cg_indent(c);
      th_buf_appendf(c->b, "}\n");
      break;
    }
    case TC_STMT_STORE:
      cg_indent(c);
      if (s->index->type.lanes != 1) {
        cg_fail(c, TH_ERR_UNSUPPORTED, "scatter stores", NULL);
        return;
      }
      if (s->value->type.lanes == 4 && s->var->elem.lanes == 1) {
        if (s->align >= 16) {
          th_buf_appendf(c->b, "*(float4 *)(");
          cg_var(c, s->var);
          th_buf_appendf(c->b, " + ");
          cg_expr(c, s->index);
          th_buf_appendf(c->b, ") = ");
          cg_expr(c, s->value);
        } else {
          th_buf_appendf(c->b, "th_st4u(");
          cg_var(c, s->var);
          th_buf_appendf(c->b, ", ");
          cg_expr(c, s->index);
          th_buf_appendf(c->b, ", ");
          cg_expr(c, s->value);
          th_buf_appendf(c->b, ")");
        }
      } else {
        cg_var(c, s->var);
        th_buf_appendf(c->b, "[");
        cg_expr(c, s->index);
        th_buf_appendf(c->b, "] = ");
        cg_expr(c, s->value);
      }
      th_buf_appendf(c->b, ";\n");
      break;
    case TC_STMT_IF:
      cg_indent(c);
      th_buf_appendf(c->b, "if (");
      cg_expr(c, s->value);
      th_buf_appendf(c->b, ") {\n");
      c->depth++;
      cg_stmt(c, s->body);
      c->depth--;
      cg_indent(c);
      if (s->else_body) {
        th_buf_appendf(c->b, "} else {\n");
        c->depth++;
        cg_stmt(c, s->else_body);
        c->depth--;
        cg_indent(c);
      }
      th_buf_appendf(c->b, "}\n");
      break;
    case TC_STMT_SEQ:
      for (int i = 0; i < s->n; i++) cg_stmt(c, s->items[i]);
      break;
    case TC_STMT_EVAL:
      cg_indent(c);
      th_buf_appendf(c->b, "(void)(");
      cg_expr(c, s->value);
      th_buf_appendf(c->b, ");\n");
      break;
    case TC_STMT_SYNC:
      cg_indent(c);
      th_buf_appendf(c->b, "__syncthreads();\n");
      break;
    case TC_STMT_INTRIN: cg_intrin(c, s); break;
    default: cg_fail(c, TH_ERR_UNSUPPORTED, "unknown statement kind", NULL); break;
  }
}

th_status tc_cuda_prelude(th_buf *src) {
  th_status rc = th_buf_appendf(
      src,
      "/* Generated by tunehub's CUDA backend. */\n"
      "__device__ __forceinline__ int th_min(int a, int b) { return a < b ? a : b; }\n"
      "__device__ __forceinline__ int th_max(int a, int b) { return a > b ? a : b; }\n"
      "__device__ __forceinline__ long long th_min(long long a, long long b) { return a < b ? a "
      ": b; }\n"
      "__device__ __forceinline__ long long th_max(long long a, long long b) { return a > b ? a "
      ": b; }\n"
      "__device__ __forceinline__ float th_min(float a, float b) { return fminf(a, b); }\n"
      "__device__ __forceinline__ float th_max(float a, float b) { return fmaxf(a, b); }\n"
      "__device__ __forceinline__ float4 th_bc4(float a) { return make_float4(a, a, a, a); }\n"
      "__device__ __forceinline__ float4 operator+(float4 a, float4 b) { return make_float4(a.x + b.x, "
      "a.y + b.y, a.z + b.z, a.w + b.w); }\n"
      "__device__ __forceinline__ float4 operator-(float4 a, float4 b) { return make_float4(a.x - b.x, "
      "a.y - b.y, a.z - b.z, a.w - b.w); }\n"
      "__device__ __forceinline__ float4 operator*(float4 a, float4 b) { return make_float4(a.x * b.x, "
      "a.y * b.y, a.z * b.z, a.w * b.w); }\n"
      "__device__ __forceinline__ float4 operator/(float4 a, float4 b) { return make_float4(a.x / b.x, "
      "a.y / b.y, a.z / b.z, a.w / b.w); }\n"
      "__device__ __forceinline__ float4 th_min(float4 a, float4 b) { return make_float4(fminf(a.x, b.x), "
      "fminf(a.y, b.y), fminf(a.z, b.z), fminf(a.w, b.w)); }\n"
      "__device__ __forceinline__ float4 th_max(float4 a, float4 b) { return make_float4(fmaxf(a.x, b.x), "
      "fmaxf(a.y, b.y), fmaxf(a.z, b.z), fmaxf(a.w, b.w)); }\n"
      "__device__ __forceinline__ float4 th_fma4(float4 a, float4 b, float4 c) { return make_float4("
      "fmaf(a.x, b.x, c.x), fmaf(a.y, b.y, c.y), fmaf(a.z, b.z, c.z), fmaf(a.w, b.w, c.w)); }\n"
      "__device__ __forceinline__ float4 th_ld4u(const float *p, int i) { return make_float4(p[i], "
      "p[i + 1], p[i + 2], p[i + 3]); }\n"
      "__device__ __forceinline__ void th_st4u(float *p, int i, float4 v) { p[i] = v.x; p[i + 1] = v.y; "
      "p[i + 2] = v.z; p[i + 3] = v.w; }\n"
      /* a kernel staging through dynamic shared memory carves its buffers from this (the CPU
       * emulation of the tests defines its own) */
      "#ifndef TH_DYN_SHARED\n"
      "#define TH_DYN_SHARED(name) extern __shared__ __align__(16) float name[]\n"
      "#endif\n");
  /* the tensor-core and cp.async helpers (TC_STMT_INTRIN), for sm_80 and newer only: ptxas for an
   * older arch never sees them, and the CPU emulation of the tests defines its own */
  static const char tc[] =
      "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800\n"
      "__device__ __forceinline__ unsigned th_tf32(float x) { unsigned r; "
      "asm(\"cvt.rna.tf32.f32 %0, %1;\" : \"=r\"(r) : \"f\"(x)); return r; }\n"
      "__device__ __forceinline__ void th_mma_tf32(float *d, const float *a, const float *b) {\n"
      "  asm volatile(\"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, "
      "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\\n\"\n"
      "    : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3])\n"
      "    : \"r\"(th_tf32(a[0])), \"r\"(th_tf32(a[1])), \"r\"(th_tf32(a[2])), \"r\"(th_tf32(a[3])), "
      "\"r\"(th_tf32(b[0])), \"r\"(th_tf32(b[1])));\n}\n"
      "__device__ __forceinline__ void th_cp_async4(float *dst, const float *src, bool ok) {\n"
      "  asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\\n\" :: "
      "\"r\"((unsigned)__cvta_generic_to_shared(dst)), \"l\"(src), \"r\"(ok ? 16 : 0) : \"memory\");\n}\n"
      "__device__ __forceinline__ void th_cp_async1(float *dst, const float *src, bool ok) {\n"
      "  asm volatile(\"cp.async.ca.shared.global [%0], [%1], 4, %2;\\n\" :: "
      "\"r\"((unsigned)__cvta_generic_to_shared(dst)), \"l\"(src), \"r\"(ok ? 4 : 0) : \"memory\");\n}\n"
      "__device__ __forceinline__ void th_cp_commit() { asm volatile(\"cp.async.commit_group;\\n\" ::: "
      "\"memory\"); }\n"
      "#define th_cp_wait(n) asm volatile(\"cp.async.wait_group %0;\\n\" :: \"n\"(n) : \"memory\")\n"
      "#endif\n\n";
  if (rc == TH_OK) rc = th_buf_append(src, tc, sizeof tc - 1);
  return rc;
}

th_status tc_cuda_codegen(const tc_cuda_lowered *k, const char *fn, int nargs, th_buf *src,
                          tc_cuda_launch *launch, char *err, size_t errlen) {
  if (!k || !k->body || !fn || !src || !launch || nargs < 1 || nargs > 8) return TH_ERR_INVALID;
  cg c;
  memset(&c, 0, sizeof c);
  c.k = k;
  c.l = launch;
  c.err = err;
  c.errlen = errlen;
  th_buf body;
  th_buf_init(&body, (size_t)64 << 20);
  c.b = &body;
  c.depth = 1;
  cg_stmt(&c, k->body);
  th_status rc = c.rc;
  if (rc == TH_OK && body.len == 0 && !body.data) rc = TH_ERR_NOMEM;
  if (rc == TH_OK) {
    memset(launch, 0, sizeof *launch);
    for (int a = 0; a < 3; a++) {
      launch->grid[a] = c.bound[a] ? c.bound[a] : 1;
      launch->block[a] = c.bound[3 + a] ? c.bound[3 + a] : 1;
    }
    if (k->dyn_shared) launch->dyn_shared = (int)c.shared_bytes;
    else launch->shared_bytes = (int)c.shared_bytes;
    launch->local_floats = (int)c.local_floats;
    int threads = launch->block[0] * launch->block[1] * launch->block[2];
    th_buf_appendf(src, "extern \"C\" __global__ void __launch_bounds__(%d) %s(", threads, fn);
    for (int a = 0; a < nargs; a++)
      th_buf_appendf(src, "%s%s *a%d", a ? ", " : "", c.int_param[a] ? "long long" : "float", a);
    th_buf_appendf(src, ") {\n");
    if (k->dyn_shared) th_buf_appendf(src, "  TH_DYN_SHARED(th_dyn_smem);\n");
    rc = th_buf_append(src, body.data, body.len);
    if (rc == TH_OK) rc = th_buf_appendf(src, "}\n\n");
  }
  th_buf_free(&body);
  return rc;
}
