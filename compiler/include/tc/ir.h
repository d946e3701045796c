/* The loop IR: a small tensor-program IR in the spirit of TVM's TIR. Operator templates build it, the
 * LLVM backend (and later CUDA) lowers it, the printer shows it and tc_ir_features() turns it into the
 * tuner's loop features. Every node lives in a th_arena owned by the caller: nodes are immutable once
 * built and are freed all at once with the arena.
 *
 * Builders take a tc_ir context. They propagate NULL: a builder given a NULL child returns NULL, and a
 * failed allocation or a type error returns NULL and records the first error in ctx->err, so a template
 * builds a whole kernel and checks once at the end. Integer expressions are 64-bit; DIV/MOD truncate like
 * C (templates only divide non-negative values). */
#ifndef TC_IR_H
#define TC_IR_H

#include <stddef.h>
#include <stdint.h>

#include "th_buf.h"
#include "th_status.h"

typedef enum tc_type_code {
  TC_TYPE_INT = 0, /* 64-bit signed */
  TC_TYPE_FLOAT,   /* 32-bit IEEE */
  TC_TYPE_BOOL,
  TC_TYPE_PTR /* a buffer; tc_var.elem gives the element type */
} tc_type_code;

typedef struct tc_type {
  uint8_t code;   /* tc_type_code */
  uint16_t lanes; /* 1 = scalar */
} tc_type;

typedef enum tc_scope { TC_SCOPE_LOCAL = 0, TC_SCOPE_SHARED, TC_SCOPE_GLOBAL } tc_scope;

/* A variable: a loop index, a let binding, or a buffer. Buffers that are kernel arguments carry the index
 * of their slot in the kernel's `void *const *args` (param >= 0). */
typedef struct tc_var {
  const char *name;
  tc_type type; /* for buffers: TC_TYPE_PTR */
  tc_type elem; /* buffers: the element type (float x lanes for vector locals) */
  int id;       /* dense, unique within one tc_ir context */
  int param;    /* kernel argument slot, or -1 */
} tc_var;

typedef enum tc_expr_kind {
  TC_EXPR_INT = 0,
  TC_EXPR_FLOAT,
  TC_EXPR_VAR,
  TC_EXPR_ADD,
  TC_EXPR_SUB,
  TC_EXPR_MUL,
  TC_EXPR_DIV,
  TC_EXPR_MOD,
  TC_EXPR_MIN,
  TC_EXPR_MAX,
  TC_EXPR_LT,
  TC_EXPR_LE,
  TC_EXPR_GT,
  TC_EXPR_GE,
  TC_EXPR_EQ,
  TC_EXPR_NE,
  TC_EXPR_AND,
  TC_EXPR_OR,
  TC_EXPR_NOT,
  TC_EXPR_SELECT,    /* a ? b : c (lane-wise when a is a vector) */
  TC_EXPR_BROADCAST, /* scalar a -> lanes */
  TC_EXPR_RAMP,      /* a + i*b for i in [0, lanes) (ints) */
  TC_EXPR_LOAD,      /* buf[index]: scalar index + lanes > 1 = contiguous vector; vector index = gather */
  TC_EXPR_FMA,       /* a*b + c, fused */
  TC_EXPR_CAST,      /* int -> float or float -> int (truncating), lanes kept */
  TC_EXPR_EXP,       /* e^a (float) */
  TC_EXPR_SQRT,      /* the square root of a (float), correctly rounded; NaN below zero */
  TC_EXPR_LOG,       /* the natural logarithm of a (float): -inf at 0, NaN below zero */
  TC_EXPR_FLOOR,     /* a rounded down to an integral float */
  TC_EXPR_CEIL,      /* a rounded up to an integral float */
  TC_EXPR_ROUND,     /* a rounded to the nearest integral float, halves to even */
  TC_EXPR_SIN,       /* the circular functions of a (float), as libm's sinf ... atanf */
  TC_EXPR_COS,
  TC_EXPR_TAN,
  TC_EXPR_ASIN,      /* NaN outside [-1, 1] */
  TC_EXPR_ACOS,      /* NaN outside [-1, 1] */
  TC_EXPR_ATAN,
  TC_EXPR_KIND_COUNT
} tc_expr_kind;

typedef struct tc_expr tc_expr;
struct tc_expr {
  tc_expr_kind kind;
  tc_type type;
  const tc_expr *a, *b, *c;
  int64_t ival;       /* INT */
  double fval;        /* FLOAT */
  const tc_var *var;  /* VAR; LOAD: the buffer */
  int align;          /* LOAD: alignment hint in bytes */
};

typedef enum tc_for_kind {
  TC_FOR_SERIAL = 0,
  TC_FOR_PARALLEL,   /* iterations run on the runtime thread pool (outlined body) */
  TC_FOR_VECTORIZED, /* a hint: the body is scalar and the backend may vectorise */
  TC_FOR_UNROLLED,   /* fully unrolled by the backend; the extent must be a constant */
  TC_FOR_GPU_BLOCK_X,
  TC_FOR_GPU_BLOCK_Y,
  TC_FOR_GPU_BLOCK_Z,
  TC_FOR_GPU_THREAD_X,
  TC_FOR_GPU_THREAD_Y,
  TC_FOR_GPU_THREAD_Z,
  TC_FOR_ROLLED, /* serial, and the backend must not unroll it (register-tiled bodies whose unrolling
                    would let CSE stretch live ranges past the register file) */
  TC_FOR_KIND_COUNT
} tc_for_kind;

typedef enum tc_stmt_kind {
  TC_STMT_FOR = 0,
  TC_STMT_LET,      /* var = value within body */
  TC_STMT_ALLOCATE, /* var = a buffer of `count` elements of var->elem, in `scope`, within body */
  TC_STMT_STORE,    /* buf[index] = value (vector rules as for LOAD) */
  TC_STMT_IF,
  TC_STMT_SEQ,
  TC_STMT_EVAL,
  TC_STMT_SYNC, /* a barrier among GPU threads of a block; a no-op on CPU */
  TC_STMT_INTRIN, /* a target intrinsic (tc_intrin_kind): printed by the CUDA codegen only; the LLVM
                     backend rejects it */
  TC_STMT_KIND_COUNT
} tc_stmt_kind;

/* The intrinsics of TC_STMT_INTRIN. Operands are up to three buffers bufs[i], each at element offset
 * idx[i], an immediate imm and an optional condition (value). */
typedef enum tc_intrin_kind {
  /* Warp-collective tensor-core product on TF32 inputs with fp32 accumulation (PTX mma.sync
   * m16n8k8 .row.col .f32.tf32.tf32.f32): each lane holds its fragments in local float buffers,
   * bufs = {acc (4 floats), a (4), b (2)}; a and b are rounded to TF32 (round to nearest, ties
   * away) first. The lane layout is PTX's: with g = lane / 4 and t = lane % 4, a = A(g, t),
   * A(g + 8, t), A(g, t + 4), A(g + 8, t + 4); b = B(t, g), B(t + 4, g); acc = C(g, 2t),
   * C(g, 2t + 1), C(g + 8, 2t), C(g + 8, 2t + 1). Every lane of the warp must execute it. */
  TC_INTRIN_MMA_TF32 = 0,
  /* Asynchronous copy of imm (1 or 4) floats bufs[1][idx[1]..] (global) -> bufs[0][idx[0]..]
   * (shared), zero-filled when the condition is false (then nothing is read); 4 floats need 16-byte
   * aligned addresses on both sides. Visible after TC_INTRIN_CP_WAIT and a barrier. */
  TC_INTRIN_CP_ASYNC,
  TC_INTRIN_CP_COMMIT, /* closes this thread's group of copies issued since the last commit */
  TC_INTRIN_CP_WAIT,   /* waits until at most imm of this thread's committed groups are pending */
  TC_INTRIN_KIND_COUNT
} tc_intrin_kind;

typedef struct tc_stmt tc_stmt;
struct tc_stmt {
  tc_stmt_kind kind;
  const tc_var *var;       /* FOR, LET, ALLOCATE, STORE (buffer) */
  const tc_expr *min;      /* FOR */
  const tc_expr *extent;   /* FOR */
  const tc_expr *value;    /* LET, STORE, EVAL; IF: the condition */
  const tc_expr *index;    /* STORE */
  tc_for_kind for_kind;    /* FOR */
  tc_scope scope;          /* ALLOCATE */
  int64_t count;           /* ALLOCATE: elements */
  int align;               /* STORE */
  const tc_stmt *body;     /* FOR, LET, ALLOCATE; IF: then */
  const tc_stmt *else_body; /* IF, may be NULL */
  int n;                   /* SEQ */
  const tc_stmt *const *items; /* SEQ */
  tc_intrin_kind intrin;       /* INTRIN */
  const tc_var *bufs[3];       /* INTRIN */
  const tc_expr *idx[3];       /* INTRIN */
  int64_t imm;                 /* INTRIN */
};

/* The builder context. The arena is borrowed and must outlive every node built with it. */
typedef struct tc_ir {
  th_arena *arena;
  int next_id;
  th_status err; /* first error, TH_OK while all is well */
} tc_ir;

void tc_ir_init(tc_ir *ir, th_arena *arena);

tc_type tc_type_int(void);
tc_type tc_type_f32(int lanes);
tc_type tc_type_bool(int lanes);

/* Variables. tc_var_buffer: a pointer to elements of `elem`; param is the kernel argument slot or -1. */
tc_var *tc_var_new(tc_ir *ir, const char *name, tc_type type);
tc_var *tc_var_buffer(tc_ir *ir, const char *name, tc_type elem, int param);

/* Expressions. Integer arithmetic on constants is folded. */
const tc_expr *tc_e_int(tc_ir *ir, int64_t v);
const tc_expr *tc_e_float(tc_ir *ir, double v);
const tc_expr *tc_e_var(tc_ir *ir, const tc_var *v);
const tc_expr *tc_e_bin(tc_ir *ir, tc_expr_kind k, const tc_expr *a, const tc_expr *b);
const tc_expr *tc_e_add(tc_ir *ir, const tc_expr *a, const tc_expr *b);
const tc_expr *tc_e_sub(tc_ir *ir, const tc_expr *a, const tc_expr *b);
const tc_expr *tc_e_mul(tc_ir *ir, const tc_expr *a, const tc_expr *b);
const tc_expr *tc_e_div(tc_ir *ir, const tc_expr *a, const tc_expr *b);
const tc_expr *tc_e_mod(tc_ir *ir, const tc_expr *a, const tc_expr *b);
const tc_expr *tc_e_min(tc_ir *ir, const tc_expr *a, const tc_expr *b);
const tc_expr *tc_e_max(tc_ir *ir, const tc_expr *a, const tc_expr *b);
const tc_expr *tc_e_not(tc_ir *ir, const tc_expr *a);
const tc_expr *tc_e_select(tc_ir *ir, const tc_expr *cond, const tc_expr *t, const tc_expr *f);
const tc_expr *tc_e_broadcast(tc_ir *ir, const tc_expr *a, int lanes);
const tc_expr *tc_e_ramp(tc_ir *ir, const tc_expr *base, const tc_expr *stride, int lanes);
const tc_expr *tc_e_load(tc_ir *ir, const tc_var *buf, const tc_expr *index, int lanes, int align);
const tc_expr *tc_e_fma(tc_ir *ir, const tc_expr *a, const tc_expr *b, const tc_expr *c);
const tc_expr *tc_e_cast(tc_ir *ir, tc_type to, const tc_expr *a);
const tc_expr *tc_e_exp(tc_ir *ir, const tc_expr *a);
const tc_expr *tc_e_sqrt(tc_ir *ir, const tc_expr *a);
/* One of TC_EXPR_LOG, FLOOR, CEIL, ROUND, SIN ... ATAN (or EXP, SQRT) of a float a. */
const tc_expr *tc_e_float_fn(tc_ir *ir, tc_expr_kind k, const tc_expr *a);
/* Composite float expressions built from the primitives above, so that every backend computes them the
 * same way and vectorises them: erf (Abramowitz and Stegun 7.1.26, |error| < 1.5e-7), tanh (through exp,
 * exact limits +-1 for large |x|), and gelu x * 0.5 * (1 + erf(x / sqrt 2)), torch's default. */
const tc_expr *tc_e_erf(tc_ir *ir, const tc_expr *a);
const tc_expr *tc_e_tanh(tc_ir *ir, const tc_expr *a);
const tc_expr *tc_e_gelu(tc_ir *ir, const tc_expr *a);
/* The activations of imported CNNs, likewise: sigmoid 1 / (1 + e^-x), hard sigmoid max(0, min(1,
 * alpha * x + beta)), hard swish x * hard_sigmoid(x) with alpha 1/6 and beta 1/2, and silu x / (1 +
 * e^-x) (x * sigmoid(x) with one operation fewer). */
const tc_expr *tc_e_sigmoid(tc_ir *ir, const tc_expr *a);
const tc_expr *tc_e_hard_sigmoid(tc_ir *ir, const tc_expr *a, double alpha, double beta);
const tc_expr *tc_e_hard_swish(tc_ir *ir, const tc_expr *a);
const tc_expr *tc_e_silu(tc_ir *ir, const tc_expr *a);

/* Statements. */
const tc_stmt *tc_s_for(tc_ir *ir, const tc_var *v, const tc_expr *min, const tc_expr *extent,
                        tc_for_kind kind, const tc_stmt *body);
const tc_stmt *tc_s_let(tc_ir *ir, const tc_var *v, const tc_expr *value, const tc_stmt *body);
const tc_stmt *tc_s_allocate(tc_ir *ir, const tc_var *buf, int64_t count, tc_scope scope,
                             const tc_stmt *body);
const tc_stmt *tc_s_store(tc_ir *ir, const tc_var *buf, const tc_expr *index, const tc_expr *value,
                          int align);
const tc_stmt *tc_s_if(tc_ir *ir, const tc_expr *cond, const tc_stmt *then_s, const tc_stmt *else_s);
/* items is copied; NULL items are an error (they mean a failed builder). n == 0 gives an empty seq. */
const tc_stmt *tc_s_seq(tc_ir *ir, int n, const tc_stmt *const *items);
const tc_stmt *tc_s_eval(tc_ir *ir, const tc_expr *e);
const tc_stmt *tc_s_sync(tc_ir *ir);
/* A target intrinsic with nbufs (0..3) buffers at offsets idx, cond (a bool, or NULL) and imm. */
const tc_stmt *tc_s_intrin(tc_ir *ir, tc_intrin_kind k, int nbufs, const tc_var *const *bufs,
                           const tc_expr *const *idx, const tc_expr *cond, int64_t imm);
const char *tc_intrin_name(tc_intrin_kind k);

/* A statement list that grows in the arena, for templates that emit a variable number of pieces. */
typedef struct tc_stmt_list {
  const tc_stmt **items;
  int n, cap;
} tc_stmt_list;
void tc_list_push(tc_ir *ir, tc_stmt_list *l, const tc_stmt *s); /* NULL s sets ir->err */
const tc_stmt *tc_list_seq(tc_ir *ir, const tc_stmt_list *l);

/* Printing (print.c): appends a readable, TVM-like listing to b. */
th_status tc_ir_print(const tc_stmt *s, th_buf *b);
th_status tc_ir_print_expr(const tc_expr *e, th_buf *b);
const char *tc_for_kind_name(tc_for_kind k);

/* Loop features for the tuner (features.c), AutoTVM "itervar" style. The vector has exactly
 * TC_IR_FEATURE_LEN entries: for each of the first TC_IR_FEATURE_LOOPS loops in pre-order (outermost
 * first; missing loops are zeros) TC_IR_FEATURE_PER_LOOP values [log2(extent+1), depth, log2(product of
 * extents above+1), log2(product of extents below+1), one-hot kind x 6 (serial, parallel, vectorized,
 * unrolled, gpu block, gpu thread)], then TC_IR_FEATURE_GLOBAL totals [log2(1+fma), log2(1+add/sub),
 * log2(1+mul), log2(1+div), log2(1+loads), log2(1+stores), log2(1+bytes loaded), log2(1+bytes stored),
 * log2(1+local bytes allocated), max vector lanes, number of loops, max depth], counted over the
 * dynamic iteration space (constant extents; non-constant extents count as 1). max must be at least
 * TC_IR_FEATURE_LEN; *n is set to TC_IR_FEATURE_LEN. TH_ERR_INVALID on NULL or a short buffer. */
#define TC_IR_FEATURE_LOOPS 10
#define TC_IR_FEATURE_PER_LOOP 10
#define TC_IR_FEATURE_GLOBAL 12
#define TC_IR_FEATURE_LEN (TC_IR_FEATURE_LOOPS * TC_IR_FEATURE_PER_LOOP + TC_IR_FEATURE_GLOBAL)
th_status tc_ir_features(const tc_stmt *s, float *feat, int max, int *n);

#endif
