/* Loop IR -> LLVM IR through the LLVM 16 C API. Each kernel becomes `void name(void *const *args)`;
 * argument buffers are loaded from args at entry. Unrolled loops are replicated here (so that local
 * accumulator arrays are indexed by constants and SROA turns them into registers), serial loops
 * become phi loops, and each parallel loop body is outlined into `name_parN(ctx, begin, end)` and
 * handed to the runtime's th_rt_parallel_for with its captured values in a stack struct. Local
 * buffers become entry-block allocas. Errors (never aborts) are kept on the module with LLVM's
 * message; the module itself, its O3 pipeline and its emission are module.c. */
#include <llvm-c/Core.h>
#include <llvm-c/DebugInfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen_int.h"
#include "ops.h"
#include "tc_llvm.h"

typedef struct cg_fn {
  tc_llvm_module_t *m;
  LLVMBuilderRef b;
  LLVMValueRef fn;
  LLVMBasicBlockRef entry; /* allocas only; branches to the body at the end */
  LLVMValueRef *vals;      /* var id -> value (buffers: pointers) */
  int nvals;
  const char *name;
  th_status rc;
} cg_fn;

/* The fused multiply-add: exact llvm.fma where the target has FMA hardware; llvm.fmuladd elsewhere (a target
 * without it, x86-64-v2 say, would otherwise call the fmaf library function per element). */
static const char *cg__fma(const cg_fn *f) {
  const char *p = strstr(f->m->t.features, "+fma");
  return p && (p[4] == ',' || p[4] == '\0') ? "llvm.fma" : "llvm.fmuladd";
}

static th_status fail(cg_fn *f, th_status rc, const char *msg) {
  if (f->rc == TH_OK) {
    f->rc = rc;
    tc_llvm__set_errf(f->m, f->name, msg);
  }
  return rc;
}

/* ---- types ---- */

static LLVMTypeRef ty_of(tc_llvm_module_t *m, tc_type t) {
  LLVMTypeRef s;
  switch (t.code) {
    case TC_TYPE_INT: s = LLVMInt64TypeInContext(m->ctx); break;
    case TC_TYPE_FLOAT: s = LLVMFloatTypeInContext(m->ctx); break;
    case TC_TYPE_BOOL: s = LLVMInt1TypeInContext(m->ctx); break;
    default: return LLVMPointerTypeInContext(m->ctx, 0);
  }
  return t.lanes > 1 ? LLVMVectorType(s, t.lanes) : s;
}

static LLVMValueRef i64c(cg_fn *f, int64_t v) {
  return LLVMConstInt(LLVMInt64TypeInContext(f->m->ctx), (unsigned long long)v, 1);
}

static LLVMValueRef intrinsic(cg_fn *f, const char *name, LLVMTypeRef t) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  if (!id) return NULL;
  return LLVMGetIntrinsicDeclaration(f->m->mod, id, &t, 1);
}

static LLVMValueRef splat(cg_fn *f, LLVMValueRef v, int lanes) {
  LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(v), (unsigned)lanes);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(f->m->ctx);
  LLVMValueRef ins = LLVMBuildInsertElement(f->b, LLVMGetPoison(vt), v, LLVMConstInt(i32, 0, 0), "");
  return LLVMBuildShuffleVector(f->b, ins, LLVMGetPoison(vt),
                                LLVMConstNull(LLVMVectorType(i32, (unsigned)lanes)), "bc");
}

/* ---- expressions ---- */

static LLVMValueRef gen_expr(cg_fn *f, const tc_expr *e);

/* The scalar constant c shaped like t (itself, or a splat vector of t's lanes). */
static LLVMValueRef shaped(LLVMTypeRef t, LLVMValueRef c) {
  if (LLVMGetTypeKind(t) != LLVMVectorTypeKind) return c;
  LLVMValueRef lanes[64];
  unsigned n = LLVMGetVectorSize(t);
  for (unsigned i = 0; i < n && i < 64; i++) lanes[i] = c;
  return LLVMConstVector(lanes, n < 64 ? n : 64);
}

static LLVMValueRef fconst(cg_fn *f, LLVMTypeRef t, double v) {
  return shaped(t, LLVMConstReal(LLVMFloatTypeInContext(f->m->ctx), v));
}

/* A call of the intrinsic `name` overloaded on the type of args[0]. */
static LLVMValueRef call1(cg_fn *f, const char *name, LLVMValueRef *args, unsigned nargs) {
  LLVMValueRef fn = intrinsic(f, name, LLVMTypeOf(args[0]));
  if (!fn) {
    fail(f, TH_ERR_COMPILE, name);
    return NULL;
  }
  return LLVMBuildCall2(f->b, LLVMGlobalGetValueType(fn), fn, args, nargs, "");
}

/* libm's float function `name` (sinf, ...) of x, called once per lane of a vector, so that a lane
 * gets the value a scalar tail would. */
static LLVMValueRef call_libm(cg_fn *f, const char *name, LLVMValueRef x) {
  LLVMTypeRef t = LLVMTypeOf(x);
  LLVMTypeRef ft = LLVMFloatTypeInContext(f->m->ctx);
  LLVMTypeRef fnty = LLVMFunctionType(ft, &ft, 1, 0);
  LLVMValueRef fn = LLVMGetNamedFunction(f->m->mod, name);
  if (!fn) fn = LLVMAddFunction(f->m->mod, name, fnty);
  if (LLVMGetTypeKind(t) != LLVMVectorTypeKind) return LLVMBuildCall2(f->b, fnty, fn, &x, 1, "");
  LLVMTypeRef i32 = LLVMInt32TypeInContext(f->m->ctx);
  LLVMValueRef r = LLVMGetPoison(t);
  for (unsigned i = 0; i < LLVMGetVectorSize(t); i++) {
    LLVMValueRef idx = LLVMConstInt(i32, i, 0);
    LLVMValueRef lane = LLVMBuildExtractElement(f->b, x, idx, "");
    r = LLVMBuildInsertElement(f->b, r, LLVMBuildCall2(f->b, fnty, fn, &lane, 1, ""), idx, "");
  }
  return r;
}

/* e^x inline, for vectors and scalars alike (so a value does not depend on whether it falls in a
 * vector body or a scalar tail): LLVM lowers llvm.exp on a vector to one libm call per lane. Cephes'
 * expf: x = n ln2 + r with n = rint(x log2 e) and ln2 split in two, e^r by a degree-5 polynomial on
 * |r| <= ln2/2 (about 1 ulp), times 2^(n/2) and 2^(n - n/2), two normal powers of two, so results
 * from FLT_MAX down through the subnormals come out right. x is clamped to [-104, 88.8] (0 and inf
 * beyond it); NaN stays NaN. */
static LLVMValueRef gen_exp(cg_fn *f, LLVMValueRef x) {
  LLVMTypeRef t = LLVMTypeOf(x);
  int vec = LLVMGetTypeKind(t) == LLVMVectorTypeKind;
  LLVMTypeRef i32 = LLVMInt32TypeInContext(f->m->ctx);
  LLVMTypeRef it = vec ? LLVMVectorType(i32, LLVMGetVectorSize(t)) : i32;
  LLVMBuilderRef b = f->b;
  LLVMValueRef lo = fconst(f, t, -104.0), hi = fconst(f, t, 88.8);
  LLVMValueRef c = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, x, lo, ""), lo, x, "");
  c = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOGT, c, hi, ""), hi, c, "");
  LLVMValueRef scaled = LLVMBuildFMul(b, c, fconst(f, t, 1.44269504088896341), "");
  LLVMValueRef n = call1(f, "llvm.rint", &scaled, 1);
  if (!n) return NULL;
  LLVMValueRef r1[3] = {n, fconst(f, t, -0.693359375), c};
  LLVMValueRef r = call1(f, cg__fma(f), r1, 3);
  LLVMValueRef r2[3] = {n, fconst(f, t, 2.12194440e-4), r};
  r = r ? call1(f, cg__fma(f), r2, 3) : NULL;
  static const double poly[6] = {1.9875691500E-4, 1.3981999507E-3, 8.3334519073E-3,
                                 4.1665795894E-2, 1.6666665459E-1, 5.0000001201E-1};
  LLVMValueRef p = fconst(f, t, poly[0]);
  for (int i = 1; i < 6 && r; i++) {
    LLVMValueRef args[3] = {p, r, fconst(f, t, poly[i])};
    p = call1(f, cg__fma(f), args, 3);
  }
  if (!r || !p) return NULL;
  LLVMValueRef y1[3] = {p, LLVMBuildFMul(b, r, r, ""), LLVMBuildFAdd(b, r, fconst(f, t, 1.0), "")};
  LLVMValueRef y = call1(f, cg__fma(f), y1, 3);
  if (!y) return NULL;
  /* 2^k as the float with exponent bits k + 127, for k = n >> 1 and n - k */
  LLVMValueRef ni = LLVMBuildFPToSI(b, n, it, ""), bias = shaped(it, LLVMConstInt(i32, 127, 0));
  LLVMValueRef sh = shaped(it, LLVMConstInt(i32, 23, 0));
  LLVMValueRef k1 = LLVMBuildAShr(b, ni, shaped(it, LLVMConstInt(i32, 1, 0)), "");
  LLVMValueRef k2 = LLVMBuildSub(b, ni, k1, "");
  LLVMValueRef p1 = LLVMBuildBitCast(b, LLVMBuildShl(b, LLVMBuildAdd(b, k1, bias, ""), sh, ""), t, "");
  LLVMValueRef p2 = LLVMBuildBitCast(b, LLVMBuildShl(b, LLVMBuildAdd(b, k2, bias, ""), sh, ""), t, "");
  LLVMValueRef e = LLVMBuildFMul(b, LLVMBuildFMul(b, y, p1, ""), p2, "");
  return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, x, x, ""), x, e, "exp");
}

static LLVMValueRef buf_ptr(cg_fn *f, const tc_var *buf) {
  if (buf->id < 0 || buf->id >= f->nvals || !f->vals[buf->id]) {
    fail(f, TH_ERR_INTERNAL, "buffer used outside its scope");
    return NULL;
  }
  return f->vals[buf->id];
}

/* Address of element `idx` (scalar i64) of buf. */
static LLVMValueRef elem_addr(cg_fn *f, const tc_var *buf, LLVMValueRef idx) {
  LLVMValueRef base = buf_ptr(f, buf);
  if (!base) return NULL;
  LLVMTypeRef et = ty_of(f->m, buf->elem);
  return LLVMBuildInBoundsGEP2(f->b, et, base, &idx, 1, "");
}

static LLVMValueRef gen_load(cg_fn *f, const tc_expr *e) {
  LLVMValueRef idx = gen_expr(f, e->a);
  if (!idx) return NULL;
  LLVMTypeRef rt = ty_of(f->m, e->type);
  if (e->a->type.lanes == 1) {
    LLVMValueRef p = elem_addr(f, e->var, idx);
    if (!p) return NULL;
    LLVMValueRef v = LLVMBuildLoad2(f->b, rt, p, "");
    LLVMSetAlignment(v, (unsigned)e->align);
    return v;
  }
  /* Gather: one scalar load per lane. */
  LLVMTypeRef i32 = LLVMInt32TypeInContext(f->m->ctx);
  LLVMTypeRef st = ty_of(f->m, e->var->elem);
  LLVMValueRef acc = LLVMGetPoison(rt);
  for (int i = 0; i < e->type.lanes; i++) {
    LLVMValueRef li = LLVMConstInt(i32, (unsigned long long)i, 0);
    LLVMValueRef ix = LLVMBuildExtractElement(f->b, idx, li, "");
    LLVMValueRef p = elem_addr(f, e->var, ix);
    if (!p) return NULL;
    LLVMValueRef v = LLVMBuildLoad2(f->b, st, p, "");
    LLVMSetAlignment(v, 4);
    acc = LLVMBuildInsertElement(f->b, acc, v, li, "");
  }
  return acc;
}

static LLVMValueRef gen_expr(cg_fn *f, const tc_expr *e) {
  if (f->rc != TH_OK) return NULL;
  if (!e) {
    fail(f, TH_ERR_INTERNAL, "null expression");
    return NULL;
  }
  int fl = e->a ? e->a->type.code == TC_TYPE_FLOAT : 0;
  LLVMValueRef a = NULL, b = NULL, c = NULL;
  if (e->kind != TC_EXPR_LOAD) {
    if (e->a && !(a = gen_expr(f, e->a))) return NULL;
    if (e->b && !(b = gen_expr(f, e->b))) return NULL;
    if (e->c && !(c = gen_expr(f, e->c))) return NULL;
  }
  switch (e->kind) {
    case TC_EXPR_INT: return i64c(f, e->ival);
    case TC_EXPR_FLOAT: return LLVMConstReal(LLVMFloatTypeInContext(f->m->ctx), e->fval);
    case TC_EXPR_VAR:
      if (e->var->id >= f->nvals || !f->vals[e->var->id]) {
        fail(f, TH_ERR_INTERNAL, "variable used outside its scope");
        return NULL;
      }
      return f->vals[e->var->id];
    case TC_EXPR_ADD: return fl ? LLVMBuildFAdd(f->b, a, b, "") : LLVMBuildAdd(f->b, a, b, "");
    case TC_EXPR_SUB: return fl ? LLVMBuildFSub(f->b, a, b, "") : LLVMBuildSub(f->b, a, b, "");
    case TC_EXPR_MUL: return fl ? LLVMBuildFMul(f->b, a, b, "") : LLVMBuildMul(f->b, a, b, "");
    case TC_EXPR_DIV: return fl ? LLVMBuildFDiv(f->b, a, b, "") : LLVMBuildSDiv(f->b, a, b, "");
    case TC_EXPR_MOD: return fl ? LLVMBuildFRem(f->b, a, b, "") : LLVMBuildSRem(f->b, a, b, "");
    case TC_EXPR_MIN:
    case TC_EXPR_MAX: {
      int mn = e->kind == TC_EXPR_MIN;
      LLVMValueRef cmp = fl ? LLVMBuildFCmp(f->b, mn ? LLVMRealOLT : LLVMRealOGT, a, b, "")
                            : LLVMBuildICmp(f->b, mn ? LLVMIntSLT : LLVMIntSGT, a, b, "");
      return LLVMBuildSelect(f->b, cmp, a, b, "");
    }
    case TC_EXPR_LT:
    case TC_EXPR_LE:
    case TC_EXPR_GT:
    case TC_EXPR_GE:
    case TC_EXPR_EQ:
    case TC_EXPR_NE: {
      static const LLVMIntPredicate ip[] = {LLVMIntSLT, LLVMIntSLE, LLVMIntSGT,
                                            LLVMIntSGE, LLVMIntEQ,  LLVMIntNE};
      static const LLVMRealPredicate rp[] = {LLVMRealOLT, LLVMRealOLE, LLVMRealOGT,
                                             LLVMRealOGE, LLVMRealOEQ, LLVMRealUNE};
      int k = (int)e->kind - (int)TC_EXPR_LT;
      return fl ? LLVMBuildFCmp(f->b, rp[k], a, b, "") : LLVMBuildICmp(f->b, ip[k], a, b, "");
    }
    case TC_EXPR_AND: return LLVMBuildAnd(f->b, a, b, "");
    case TC_EXPR_OR: return LLVMBuildOr(f->b, a, b, "");
    case TC_EXPR_NOT: return LLVMBuildNot(f->b, a, "");
    case TC_EXPR_SELECT: return LLVMBuildSelect(f->b, a, b, c, "");
    case TC_EXPR_BROADCAST: return splat(f, a, e->type.lanes);
    case TC_EXPR_RAMP: {
      int n = e->type.lanes;
      LLVMValueRef steps[64];
      if (n > 64) {
        fail(f, TH_ERR_UNSUPPORTED, "ramp wider than 64 lanes");
        return NULL;
      }
      for (int i = 0; i < n; i++) steps[i] = i64c(f, i);
      LLVMValueRef iota = LLVMConstVector(steps, (unsigned)n);
      LLVMValueRef off = LLVMBuildMul(f->b, iota, splat(f, b, n), "");
      return LLVMBuildAdd(f->b, splat(f, a, n), off, "ramp");
    }
    case TC_EXPR_LOAD: return gen_load(f, e);
    case TC_EXPR_FMA: {
      LLVMValueRef args[3] = {a, b, c};
      return call1(f, cg__fma(f), args, 3);
    }
    case TC_EXPR_CAST:
      if (e->type.code == TC_TYPE_FLOAT)
        return LLVMBuildSIToFP(f->b, a, ty_of(f->m, e->type), "");
      return LLVMBuildFPToSI(f->b, a, ty_of(f->m, e->type), "");
    case TC_EXPR_EXP: return gen_exp(f, a);
    case TC_EXPR_SQRT: return call1(f, "llvm.sqrt", &a, 1);
    case TC_EXPR_LOG: return call1(f, "llvm.log", &a, 1);
    case TC_EXPR_FLOOR: return call1(f, "llvm.floor", &a, 1);
    case TC_EXPR_CEIL: return call1(f, "llvm.ceil", &a, 1);
    case TC_EXPR_ROUND: return call1(f, "llvm.rint", &a, 1); /* default rounding: halves to even */
    case TC_EXPR_SIN: return call_libm(f, "sinf", a);
    case TC_EXPR_COS: return call_libm(f, "cosf", a);
    case TC_EXPR_TAN: return call_libm(f, "tanf", a);
    case TC_EXPR_ASIN: return call_libm(f, "asinf", a);
    case TC_EXPR_ACOS: return call_libm(f, "acosf", a);
    case TC_EXPR_ATAN: return call_libm(f, "atanf", a);
    default: fail(f, TH_ERR_INTERNAL, "unknown expression kind"); return NULL;
  }
}

/* ---- statements ---- */

static th_status gen_stmt(cg_fn *f, const tc_stmt *s);

static void bind(cg_fn *f, const tc_var *v, LLVMValueRef val) {
  if (v->id >= 0 && v->id < f->nvals) f->vals[v->id] = val;
}

/* Emits `for (v = lo; v < lo + extent; v++) body` as a phi loop. */
/* Marks a loop's back edge with !llvm.loop !{self, !{"llvm.loop.unroll.disable"}}. */
static void mark_no_unroll(cg_fn *f, LLVMValueRef br) {
  LLVMContextRef ctx = f->m->ctx;
  LLVMMetadataRef dis = LLVMMDStringInContext2(ctx, "llvm.loop.unroll.disable", 24);
  LLVMMetadataRef opt = LLVMMDNodeInContext2(ctx, &dis, 1);
  LLVMMetadataRef tmp = LLVMTemporaryMDNode(ctx, NULL, 0);
  LLVMMetadataRef ops[2] = {tmp, opt};
  LLVMMetadataRef loop = LLVMMDNodeInContext2(ctx, ops, 2);
  LLVMMetadataReplaceAllUsesWith(tmp, loop); /* the self reference; disposes tmp */
  unsigned kind = LLVMGetMDKindIDInContext(ctx, "llvm.loop", 9);
  LLVMSetMetadata(br, kind, LLVMMetadataAsValue(ctx, loop));
}

static th_status gen_serial_loop(cg_fn *f, const tc_var *v, LLVMValueRef lo, LLVMValueRef ext,
                                 const tc_stmt *body, int rolled) {
  LLVMContextRef ctx = f->m->ctx;
  LLVMValueRef hi = LLVMBuildAdd(f->b, lo, ext, "hi");
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(f->b);
  LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(ctx, f->fn, "for.head");
  LLVMBasicBlockRef bodyb = LLVMAppendBasicBlockInContext(ctx, f->fn, "for.body");
  LLVMBasicBlockRef exit = LLVMAppendBasicBlockInContext(ctx, f->fn, "for.end");
  LLVMBuildBr(f->b, head);
  LLVMPositionBuilderAtEnd(f->b, head);
  LLVMValueRef phi = LLVMBuildPhi(f->b, LLVMInt64TypeInContext(ctx), v->name);
  LLVMValueRef cond = LLVMBuildICmp(f->b, LLVMIntSLT, phi, hi, "");
  LLVMBuildCondBr(f->b, cond, bodyb, exit);
  LLVMPositionBuilderAtEnd(f->b, bodyb);
  bind(f, v, phi);
  if (gen_stmt(f, body) != TH_OK) return f->rc;
  LLVMValueRef next = LLVMBuildAdd(f->b, phi, i64c(f, 1), "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(f->b);
  LLVMValueRef back = LLVMBuildBr(f->b, head);
  if (rolled) mark_no_unroll(f, back);
  LLVMValueRef in_vals[2] = {lo, next};
  LLVMBasicBlockRef in_blocks[2] = {pre, latch};
  LLVMAddIncoming(phi, in_vals, in_blocks, 2);
  LLVMPositionBuilderAtEnd(f->b, exit);
  bind(f, v, NULL);
  return TH_OK;
}

static void collect_vars_expr(const tc_expr *e, unsigned char *used, int n) {
  if (!e) return;
  if ((e->kind == TC_EXPR_VAR || e->kind == TC_EXPR_LOAD) && e->var->id < n) used[e->var->id] = 1;
  collect_vars_expr(e->a, used, n);
  collect_vars_expr(e->b, used, n);
  collect_vars_expr(e->c, used, n);
}

static void collect_vars(const tc_stmt *s, unsigned char *used, int n) {
  if (!s) return;
  if (s->var && s->var->id < n) used[s->var->id] = 1;
  collect_vars_expr(s->min, used, n);
  collect_vars_expr(s->extent, used, n);
  collect_vars_expr(s->value, used, n);
  collect_vars_expr(s->index, used, n);
  collect_vars(s->body, used, n);
  collect_vars(s->else_body, used, n);
  for (int i = 0; i < s->n; i++) collect_vars(s->items[i], used, n);
}

static th_status fn_begin(cg_fn *f, tc_llvm_module_t *m, LLVMValueRef fn, const char *name, int nvals) {
  memset(f, 0, sizeof *f);
  f->m = m;
  f->fn = fn;
  f->name = name;
  f->nvals = nvals;
  f->vals = calloc((size_t)(nvals > 0 ? nvals : 1), sizeof *f->vals);
  if (!f->vals) return TH_ERR_NOMEM;
  f->b = LLVMCreateBuilderInContext(m->ctx);
  f->entry = LLVMAppendBasicBlockInContext(m->ctx, fn, "entry");
  LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(m->ctx, fn, "body");
  LLVMPositionBuilderAtEnd(f->b, body);
  LLVMAttributeRef cpu = LLVMCreateStringAttribute(m->ctx, "target-cpu", 10, m->t.cpu,
                                                   (unsigned)strlen(m->t.cpu));
  LLVMAttributeRef feat = LLVMCreateStringAttribute(m->ctx, "target-features", 15, m->t.features,
                                                    (unsigned)strlen(m->t.features));
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, cpu);
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, feat);
  unsigned nounwind = LLVMGetEnumAttributeKindForName("nounwind", 8);
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                          LLVMCreateEnumAttribute(m->ctx, nounwind, 0));
  return TH_OK;
}

static void fn_end(cg_fn *f) {
  if (f->rc == TH_OK) {
    LLVMBuildRetVoid(f->b);
    LLVMBasicBlockRef body = LLVMGetNextBasicBlock(f->entry);
    LLVMPositionBuilderAtEnd(f->b, f->entry);
    LLVMBuildBr(f->b, body);
  }
  LLVMDisposeBuilder(f->b);
  free(f->vals);
  f->vals = NULL;
}

/* Builds an alloca in the entry block so SROA/mem2reg can promote it. */
static LLVMValueRef entry_alloca(cg_fn *f, LLVMTypeRef t, const char *name) {
  LLVMBuilderRef eb = LLVMCreateBuilderInContext(f->m->ctx);
  LLVMValueRef first = LLVMGetFirstInstruction(f->entry);
  if (first)
    LLVMPositionBuilderBefore(eb, first);
  else
    LLVMPositionBuilderAtEnd(eb, f->entry);
  LLVMValueRef a = LLVMBuildAlloca(eb, t, name);
  LLVMSetAlignment(a, 64);
  LLVMDisposeBuilder(eb);
  return a;
}

static LLVMValueRef rt_parallel_for(tc_llvm_module_t *m) {
  LLVMValueRef fn = LLVMGetNamedFunction(m->mod, "th_rt_parallel_for");
  if (fn) return fn;
  LLVMTypeRef ptr = LLVMPointerTypeInContext(m->ctx, 0);
  LLVMTypeRef params[3] = {ptr, ptr, LLVMInt64TypeInContext(m->ctx)};
  LLVMTypeRef ft = LLVMFunctionType(LLVMVoidTypeInContext(m->ctx), params, 3, 0);
  return LLVMAddFunction(m->mod, "th_rt_parallel_for", ft);
}

static th_status gen_parallel(cg_fn *f, const tc_stmt *s) {
  tc_llvm_module_t *m = f->m;
  LLVMValueRef lo = gen_expr(f, s->min);
  LLVMValueRef ext = gen_expr(f, s->extent);
  if (!lo || !ext) return f->rc;
  unsigned char *used = calloc((size_t)f->nvals, 1);
  if (!used) return fail(f, TH_ERR_NOMEM, "out of memory");
  collect_vars(s->body, used, f->nvals);
  /* Captured: every variable bound here and used in the body, plus the loop minimum. */
  int ncap = 0;
  int *cap = calloc((size_t)f->nvals + 1, sizeof *cap);
  LLVMTypeRef *types = calloc((size_t)f->nvals + 1, sizeof *types);
  if (!cap || !types) {
    free(used);
    free(cap);
    free(types);
    return fail(f, TH_ERR_NOMEM, "out of memory");
  }
  for (int i = 0; i < f->nvals; i++)
    if (used[i] && f->vals[i]) {
      cap[ncap] = i;
      types[ncap++] = LLVMTypeOf(f->vals[i]);
    }
  types[ncap] = LLVMInt64TypeInContext(m->ctx);
  LLVMTypeRef st = LLVMStructTypeInContext(m->ctx, types, (unsigned)ncap + 1, 0);
  LLVMValueRef ctxv = entry_alloca(f, st, "par.ctx");
  for (int i = 0; i <= ncap; i++) {
    LLVMValueRef p = LLVMBuildStructGEP2(f->b, st, ctxv, (unsigned)i, "");
    LLVMBuildStore(f->b, i < ncap ? f->vals[cap[i]] : lo, p);
  }
  /* The outlined body. */
  char name[256];
  snprintf(name, sizeof name, "%s_par%d", f->name, m->nouts++);
  LLVMTypeRef ptr = LLVMPointerTypeInContext(m->ctx, 0);
  LLVMTypeRef i64 = LLVMInt64TypeInContext(m->ctx);
  LLVMTypeRef params[3] = {ptr, i64, i64};
  LLVMTypeRef ft = LLVMFunctionType(LLVMVoidTypeInContext(m->ctx), params, 3, 0);
  LLVMValueRef ofn = LLVMAddFunction(m->mod, name, ft);
  LLVMSetLinkage(ofn, LLVMInternalLinkage);
  cg_fn g;
  th_status rc = fn_begin(&g, m, ofn, f->name, f->nvals);
  if (rc == TH_OK) {
    LLVMValueRef cp = LLVMGetParam(ofn, 0);
    for (int i = 0; i < ncap; i++) {
      LLVMValueRef p = LLVMBuildStructGEP2(g.b, st, cp, (unsigned)i, "");
      g.vals[cap[i]] = LLVMBuildLoad2(g.b, types[i], p, "");
    }
    LLVMValueRef glo = LLVMBuildLoad2(g.b, i64, LLVMBuildStructGEP2(g.b, st, cp, (unsigned)ncap, ""), "");
    LLVMValueRef begin = LLVMGetParam(ofn, 1), end = LLVMGetParam(ofn, 2);
    /* for (i = begin; i < end; i++) v = lo + i: use a temporary var id-less loop. */
    tc_var iv = *s->var;
    LLVMValueRef cnt = LLVMBuildSub(g.b, end, begin, "");
    LLVMContextRef ctx = m->ctx;
    LLVMValueRef hi = LLVMBuildAdd(g.b, begin, cnt, "");
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(g.b);
    LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(ctx, ofn, "par.head");
    LLVMBasicBlockRef bodyb = LLVMAppendBasicBlockInContext(ctx, ofn, "par.body");
    LLVMBasicBlockRef exit = LLVMAppendBasicBlockInContext(ctx, ofn, "par.end");
    LLVMBuildBr(g.b, head);
    LLVMPositionBuilderAtEnd(g.b, head);
    LLVMValueRef phi = LLVMBuildPhi(g.b, i64, "pi");
    LLVMBuildCondBr(g.b, LLVMBuildICmp(g.b, LLVMIntSLT, phi, hi, ""), bodyb, exit);
    LLVMPositionBuilderAtEnd(g.b, bodyb);
    bind(&g, &iv, LLVMBuildAdd(g.b, glo, phi, iv.name));
    if (gen_stmt(&g, s->body) == TH_OK) {
      LLVMValueRef next = LLVMBuildAdd(g.b, phi, i64c(&g, 1), "");
      LLVMBasicBlockRef latch = LLVMGetInsertBlock(g.b);
      LLVMBuildBr(g.b, head);
      LLVMValueRef in_vals[2] = {begin, next};
      LLVMBasicBlockRef in_blocks[2] = {pre, latch};
      LLVMAddIncoming(phi, in_vals, in_blocks, 2);
      LLVMPositionBuilderAtEnd(g.b, exit);
    }
    rc = g.rc;
    fn_end(&g);
  }
  free(used);
  free(cap);
  free(types);
  if (rc != TH_OK) {
    f->rc = rc;
    return rc;
  }
  LLVMValueRef pf = rt_parallel_for(m);
  LLVMValueRef args[3] = {ofn, ctxv, ext};
  LLVMBuildCall2(f->b, LLVMGlobalGetValueType(pf), pf, args, 3, "");
  return TH_OK;
}

static th_status gen_stmt(cg_fn *f, const tc_stmt *s) {
  if (f->rc != TH_OK) return f->rc;
  if (!s) return fail(f, TH_ERR_INTERNAL, "null statement");
  switch (s->kind) {
    case TC_STMT_FOR:
      switch (s->for_kind) {
        case TC_FOR_SERIAL:
        case TC_FOR_ROLLED:
        case TC_FOR_VECTORIZED: {
          LLVMValueRef lo = gen_expr(f, s->min);
          LLVMValueRef ext = gen_expr(f, s->extent);
          if (!lo || !ext) return f->rc;
          return gen_serial_loop(f, s->var, lo, ext, s->body, s->for_kind == TC_FOR_ROLLED);
        }
        case TC_FOR_UNROLLED: {
          LLVMValueRef lo = gen_expr(f, s->min);
          if (!lo) return f->rc;
          for (int64_t i = 0; i < s->extent->ival && f->rc == TH_OK; i++) {
            bind(f, s->var, s->min->kind == TC_EXPR_INT ? i64c(f, s->min->ival + i)
                                                         : LLVMBuildAdd(f->b, lo, i64c(f, i), ""));
            gen_stmt(f, s->body);
          }
          bind(f, s->var, NULL);
          return f->rc;
        }
        case TC_FOR_PARALLEL: return gen_parallel(f, s);
        default: return fail(f, TH_ERR_UNSUPPORTED, "GPU loop bindings need the CUDA backend");
      }
    case TC_STMT_LET: {
      LLVMValueRef v = gen_expr(f, s->value);
      if (!v) return f->rc;
      bind(f, s->var, v);
      gen_stmt(f, s->body);
      bind(f, s->var, NULL);
      return f->rc;
    }
    case TC_STMT_ALLOCATE: {
      double bytes = (double)s->count * 4.0 * s->var->elem.lanes;
      if (bytes > 256.0 * 1024) return fail(f, TH_ERR_UNSUPPORTED, "allocation too large for stack");
      LLVMTypeRef at = LLVMArrayType(ty_of(f->m, s->var->elem), (unsigned)s->count);
      bind(f, s->var, entry_alloca(f, at, s->var->name));
      gen_stmt(f, s->body);
      bind(f, s->var, NULL);
      return f->rc;
    }
    case TC_STMT_STORE: {
      LLVMValueRef v = gen_expr(f, s->value);
      LLVMValueRef idx = gen_expr(f, s->index);
      if (!v || !idx) return f->rc;
      if (s->index->type.lanes == 1) {
        LLVMValueRef p = elem_addr(f, s->var, idx);
        if (!p) return f->rc;
        LLVMValueRef st = LLVMBuildStore(f->b, v, p);
        LLVMSetAlignment(st, (unsigned)s->align);
        return TH_OK;
      }
      LLVMTypeRef i32 = LLVMInt32TypeInContext(f->m->ctx);
      for (int i = 0; i < s->index->type.lanes; i++) { /* scatter */
        LLVMValueRef li = LLVMConstInt(i32, (unsigned long long)i, 0);
        LLVMValueRef p = elem_addr(f, s->var, LLVMBuildExtractElement(f->b, idx, li, ""));
        if (!p) return f->rc;
        LLVMValueRef st = LLVMBuildStore(f->b, LLVMBuildExtractElement(f->b, v, li, ""), p);
        LLVMSetAlignment(st, 4);
      }
      return TH_OK;
    }
    case TC_STMT_IF: {
      LLVMValueRef c = gen_expr(f, s->value);
      if (!c) return f->rc;
      LLVMContextRef ctx = f->m->ctx;
      LLVMBasicBlockRef tb = LLVMAppendBasicBlockInContext(ctx, f->fn, "if.then");
      LLVMBasicBlockRef eb = s->else_body ? LLVMAppendBasicBlockInContext(ctx, f->fn, "if.else") : NULL;
      LLVMBasicBlockRef mb = LLVMAppendBasicBlockInContext(ctx, f->fn, "if.end");
      LLVMBuildCondBr(f->b, c, tb, eb ? eb : mb);
      LLVMPositionBuilderAtEnd(f->b, tb);
      if (gen_stmt(f, s->body) != TH_OK) return f->rc;
      LLVMBuildBr(f->b, mb);
      if (eb) {
        LLVMPositionBuilderAtEnd(f->b, eb);
        if (gen_stmt(f, s->else_body) != TH_OK) return f->rc;
        LLVMBuildBr(f->b, mb);
      }
      LLVMPositionBuilderAtEnd(f->b, mb);
      return TH_OK;
    }
    case TC_STMT_SEQ:
      for (int i = 0; i < s->n && f->rc == TH_OK; i++) gen_stmt(f, s->items[i]);
      return f->rc;
    case TC_STMT_EVAL: gen_expr(f, s->value); return f->rc;
    case TC_STMT_SYNC: return TH_OK;
    case TC_STMT_INTRIN:
      return fail(f, TH_ERR_UNSUPPORTED, "GPU intrinsics (tensor cores, cp.async) have no CPU lowering");
    default: return fail(f, TH_ERR_INTERNAL, "unknown statement kind");
  }
}

static int max_id_expr(const tc_expr *e) {
  if (!e) return -1;
  int m = (e->kind == TC_EXPR_VAR || e->kind == TC_EXPR_LOAD) ? e->var->id : -1;
  int x = max_id_expr(e->a);
  if (x > m) m = x;
  x = max_id_expr(e->b);
  if (x > m) m = x;
  x = max_id_expr(e->c);
  return x > m ? x : m;
}

static int max_id(const tc_stmt *s) {
  if (!s) return -1;
  int m = s->var ? s->var->id : -1;
  const tc_expr *es[4] = {s->min, s->extent, s->value, s->index};
  for (int i = 0; i < 4; i++) {
    int x = max_id_expr(es[i]);
    if (x > m) m = x;
  }
  int x = max_id(s->body);
  if (x > m) m = x;
  x = max_id(s->else_body);
  if (x > m) m = x;
  for (int i = 0; i < s->n; i++) {
    x = max_id(s->items[i]);
    if (x > m) m = x;
  }
  return m;
}

/* Finds the argument buffers (param >= 0) used anywhere in s. */
static void find_params_expr(const tc_expr *e, const tc_var **params, int nmax) {
  if (!e) return;
  if (e->kind == TC_EXPR_LOAD && e->var->param >= 0 && e->var->param < nmax)
    params[e->var->param] = e->var;
  find_params_expr(e->a, params, nmax);
  find_params_expr(e->b, params, nmax);
  find_params_expr(e->c, params, nmax);
}

static void find_params(const tc_stmt *s, const tc_var **params, int nmax) {
  if (!s) return;
  if (s->kind == TC_STMT_STORE && s->var->param >= 0 && s->var->param < nmax)
    params[s->var->param] = s->var;
  find_params_expr(s->min, params, nmax);
  find_params_expr(s->extent, params, nmax);
  find_params_expr(s->value, params, nmax);
  find_params_expr(s->index, params, nmax);
  find_params(s->body, params, nmax);
  find_params(s->else_body, params, nmax);
  for (int i = 0; i < s->n; i++) find_params(s->items[i], params, nmax);
}

#define TC_MAX_PARAMS 16

th_status tc_llvm_add_stmt(tc_llvm_module_t *m, const char *fn_name, const tc_stmt *body) {
  if (!m || !fn_name || !body) return TH_ERR_INVALID;
  if (m->emitted) return TH_ERR_INVALID;
  if (LLVMGetNamedFunction(m->mod, fn_name)) {
    tc_llvm__set_errf(m, fn_name, "duplicate kernel name");
    return TH_ERR_INVALID;
  }
  LLVMTypeRef ptr = LLVMPointerTypeInContext(m->ctx, 0);
  LLVMTypeRef ft = LLVMFunctionType(LLVMVoidTypeInContext(m->ctx), &ptr, 1, 0);
  LLVMValueRef fn = LLVMAddFunction(m->mod, fn_name, ft);
  cg_fn f;
  th_status rc = fn_begin(&f, m, fn, fn_name, max_id(body) + 1);
  if (rc != TH_OK) return rc;
  const tc_var *params[TC_MAX_PARAMS] = {0};
  find_params(body, params, TC_MAX_PARAMS);
  LLVMValueRef args = LLVMGetParam(fn, 0);
  for (int i = 0; i < TC_MAX_PARAMS; i++) {
    if (!params[i]) continue;
    LLVMValueRef idx = i64c(&f, i);
    LLVMValueRef slot = LLVMBuildInBoundsGEP2(f.b, ptr, args, &idx, 1, "");
    LLVMValueRef p = LLVMBuildLoad2(f.b, ptr, slot, params[i]->name);
    bind(&f, params[i], p);
  }
  gen_stmt(&f, body);
  rc = f.rc;
  fn_end(&f);
  if (rc != TH_OK) {
    LLVMDeleteFunction(fn);
    return rc;
  }
  return TH_OK;
}

th_status tc_llvm_add_kernel(tc_llvm_module_t *m, const char *fn_name, const tc_workload *wl,
                             const tc_config *cfg) {
  if (!m || !fn_name || !wl || !cfg) return TH_ERR_INVALID;
  th_arena *a = th_arena_new(1 << 16);
  if (!a) return TH_ERR_NOMEM;
  const tc_stmt *body = NULL;
  th_status rc = tc_op_lower(wl, cfg, &m->t, a, &body);
  if (rc != TH_OK) tc_llvm__set_errf(m, fn_name, "the template rejected the workload or config");
  if (rc == TH_OK) rc = tc_llvm_add_stmt(m, fn_name, body);
  th_arena_free(a);
  return rc;
}
