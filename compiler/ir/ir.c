/* Builders for the loop IR. Nodes are bump-allocated in the caller's arena; builders propagate NULL and
 * record the first error in the context, so templates check once. Integer constant arithmetic is folded
 * here so that the printed IR and the generated code stay small. */
#include "ir.h"

#include <string.h>

void tc_ir_init(tc_ir *ir, th_arena *arena) {
  ir->arena = arena;
  ir->next_id = 0;
  ir->err = TH_OK;
}

tc_type tc_type_int(void) {
  tc_type t = {TC_TYPE_INT, 1};
  return t;
}

tc_type tc_type_f32(int lanes) {
  tc_type t = {TC_TYPE_FLOAT, (uint16_t)lanes};
  return t;
}

tc_type tc_type_bool(int lanes) {
  tc_type t = {TC_TYPE_BOOL, (uint16_t)lanes};
  return t;
}

static void set_err(tc_ir *ir, th_status s) {
  if (ir->err == TH_OK) ir->err = s;
}

static void *alloc(tc_ir *ir, size_t n) {
  void *p = th_arena_alloc(ir->arena, n);
  if (!p) set_err(ir, TH_ERR_NOMEM);
  return p;
}

static int type_eq(tc_type a, tc_type b) {
  return a.code == b.code && a.lanes == b.lanes;
}

tc_var *tc_var_new(tc_ir *ir, const char *name, tc_type type) {
  tc_var *v = alloc(ir, sizeof *v);
  if (!v) return NULL;
  v->name = th_arena_strdup(ir->arena, name ? name : "v");
  if (!v->name) {
    set_err(ir, TH_ERR_NOMEM);
    return NULL;
  }
  v->type = type;
  v->elem = type;
  v->id = ir->next_id++;
  v->param = -1;
  return v;
}

tc_var *tc_var_buffer(tc_ir *ir, const char *name, tc_type elem, int param) {
  tc_type p = {TC_TYPE_PTR, 1};
  tc_var *v = tc_var_new(ir, name, p);
  if (!v) return NULL;
  v->elem = elem;
  v->param = param;
  return v;
}

static tc_expr *new_expr(tc_ir *ir, tc_expr_kind k, tc_type t) {
  tc_expr *e = alloc(ir, sizeof *e);
  if (!e) return NULL;
  e->kind = k;
  e->type = t;
  return e;
}

const tc_expr *tc_e_int(tc_ir *ir, int64_t v) {
  tc_expr *e = new_expr(ir, TC_EXPR_INT, tc_type_int());
  if (e) e->ival = v;
  return e;
}

const tc_expr *tc_e_float(tc_ir *ir, double v) {
  tc_expr *e = new_expr(ir, TC_EXPR_FLOAT, tc_type_f32(1));
  if (e) e->fval = v;
  return e;
}

const tc_expr *tc_e_var(tc_ir *ir, const tc_var *v) {
  if (!v) return NULL;
  if (v->type.code == TC_TYPE_PTR) {
    set_err(ir, TH_ERR_INTERNAL);
    return NULL;
  }
  tc_expr *e = new_expr(ir, TC_EXPR_VAR, v->type);
  if (e) e->var = v;
  return e;
}

static int is_cmp(tc_expr_kind k) {
  return k >= TC_EXPR_LT && k <= TC_EXPR_NE;
}

static int is_int_const(const tc_expr *e, int64_t v) {
  return e->kind == TC_EXPR_INT && e->ival == v;
}

const tc_expr *tc_e_bin(tc_ir *ir, tc_expr_kind k, const tc_expr *a, const tc_expr *b) {
  if (!a || !b) return NULL;
  if (k < TC_EXPR_ADD || k > TC_EXPR_OR || !type_eq(a->type, b->type)) {
    set_err(ir, TH_ERR_INTERNAL);
    return NULL;
  }
  if ((k == TC_EXPR_AND || k == TC_EXPR_OR) && a->type.code != TC_TYPE_BOOL) {
    set_err(ir, TH_ERR_INTERNAL);
    return NULL;
  }
  if (a->type.code == TC_TYPE_INT && a->kind == TC_EXPR_INT && b->kind == TC_EXPR_INT) {
    int64_t x = a->ival, y = b->ival, r = 0;
    int folded = 1;
    switch (k) {
      case TC_EXPR_ADD: r = x + y; break;
      case TC_EXPR_SUB: r = x - y; break;
      case TC_EXPR_MUL: r = x * y; break;
      case TC_EXPR_DIV: if (y) r = x / y; else folded = 0; break;
      case TC_EXPR_MOD: if (y) r = x % y; else folded = 0; break;
      case TC_EXPR_MIN: r = x < y ? x : y; break;
      case TC_EXPR_MAX: r = x > y ? x : y; break;
      default: folded = 0; break;
    }
    if (folded) return tc_e_int(ir, r);
  }
  if (a->type.code == TC_TYPE_INT) {
    if ((k == TC_EXPR_ADD || k == TC_EXPR_SUB) && is_int_const(b, 0)) return a;
    if (k == TC_EXPR_ADD && is_int_const(a, 0)) return b;
    if ((k == TC_EXPR_MUL || k == TC_EXPR_DIV) && is_int_const(b, 1)) return a;
    if (k == TC_EXPR_MUL && is_int_const(a, 1)) return b;
    if (k == TC_EXPR_MUL && (is_int_const(a, 0) || is_int_const(b, 0))) return tc_e_int(ir, 0);
    if (k == TC_EXPR_MOD && is_int_const(b, 1)) return tc_e_int(ir, 0);
  }
  tc_type t = a->type;
  if (is_cmp(k)) t = tc_type_bool(a->type.lanes);
  tc_expr *e = new_expr(ir, k, t);
  if (!e) return NULL;
  e->a = a;
  e->b = b;
  return e;
}

const tc_expr *tc_e_add(tc_ir *ir, const tc_expr *a, const tc_expr *b) {
  return tc_e_bin(ir, TC_EXPR_ADD, a, b);
}
const tc_expr *tc_e_sub(tc_ir *ir, const tc_expr *a, const tc_expr *b) {
  return tc_e_bin(ir, TC_EXPR_SUB, a, b);
}
const tc_expr *tc_e_mul(tc_ir *ir, const tc_expr *a, const tc_expr *b) {
  return tc_e_bin(ir, TC_EXPR_MUL, a, b);
}
const tc_expr *tc_e_div(tc_ir *ir, const tc_expr *a, const tc_expr *b) {
  return tc_e_bin(ir, TC_EXPR_DIV, a, b);
}
const tc_expr *tc_e_mod(tc_ir *ir, const tc_expr *a, const tc_expr *b) {
  return tc_e_bin(ir, TC_EXPR_MOD, a, b);
}
const tc_expr *tc_e_min(tc_ir *ir, const tc_expr *a, const tc_expr *b) {
  return tc_e_bin(ir, TC_EXPR_MIN, a, b);
}
const tc_expr *tc_e_max(tc_ir *ir, const tc_expr *a, const tc_expr *b) {
  return tc_e_bin(ir, TC_EXPR_MAX, a, b);
}

const tc_expr *tc_e_not(tc_ir *ir, const tc_expr *a) {
  if (!a) return NULL;
  if (a->type.code != TC_TYPE_BOOL) {
    set_err(ir, TH_ERR_INTERNAL);
    return NULL;
  }
  tc_expr *e = new_expr(ir, TC_EXPR_NOT, a->type);
  if (e) e->a = a;
  return e;
}

const tc_expr *tc_e_select(tc_ir *ir, const tc_expr *cond, const tc_expr *t, const tc_expr *f) {
  if (!cond || !t || !f) return NULL;
  if (cond->type.code != TC_TYPE_BOOL || !type_eq(t->type, f->type) ||
      (cond->type.lanes != 1 && cond->type.lanes != t->type.lanes)) {
    set_err(ir, TH_ERR_INTERNAL);
    return NULL;
  }
  tc_expr *e = new_expr(ir, TC_EXPR_SELECT, t->type);
  if (!e) return NULL;
  e->a = cond;
  e->b = t;
  e->c = f;
  return e;
}

const tc_expr *tc_e_broadcast(tc_ir *ir, const tc_expr *a, int lanes) {
  if (!a) return NULL;
  if (a->type.lanes != 1 || lanes < 1) {
    set_err(ir, TH_ERR_INTERNAL);
    return NULL;
  }
  if (lanes == 1) return a;
  tc_type t = a->type;
  t.lanes = (uint16_t)lanes;
  tc_expr *e = new_expr(ir, TC_EXPR_BROADCAST, t);
  if (e) e->a = a;
  return e;
}

const tc_expr *tc_e_ramp(tc_ir *ir, const tc_expr *base, const tc_expr *stride, int lanes) {
  if (!base || !stride) return NULL;
  if (base->type.code != TC_TYPE_INT || base->type.lanes != 1 || !type_eq(base->type, stride->type) ||
      lanes < 1) {
    set_err(ir, TH_ERR_INTERNAL);
    return NULL;
  }
  if (lanes == 1) return base;
  tc_type t = tc_type_int();
  t.lanes = (uint16_t)lanes;
  tc_expr *e = new_expr(ir, TC_EXPR_RAMP, t);
  if (!e) return NULL;
  e->a = base;
  e->b = stride;
  return e;
}

const tc_expr *tc_e_load(tc_ir *ir, const tc_var *buf, const tc_expr *index, int lanes, int align) {
  if (!buf || !index) return NULL;
  if (buf->type.code != TC_TYPE_PTR || index->type.code != TC_TYPE_INT || lanes < 1 ||
      (index->type.lanes != 1 && index->type.lanes != lanes)) {
    set_err(ir, TH_ERR_INTERNAL);
    return NULL;
  }
  tc_type t = buf->elem;
  if (buf->elem.lanes == 1) {
    t.lanes = (uint16_t)lanes;
  } else if (lanes != 1 || index->type.lanes != 1) {
    /* Buffers of vectors are accessed one element (vector) at a time. */
    set_err(ir, TH_ERR_INTERNAL);
    return NULL;
  }
  tc_expr *e = new_expr(ir, TC_EXPR_LOAD, t);
  if (!e) return NULL;
  e->var = buf;
  e->a = index;
  e->align = align > 0 ? align : 4;
  return e;
}

const tc_expr *tc_e_fma(tc_ir *ir, const tc_expr *a, const tc_expr *b, const tc_expr *c) {
  if (!a || !b || !c) return NULL;
  if (a->type.code != TC_TYPE_FLOAT || !type_eq(a->type, b->type) || !type_eq(a->type, c->type)) {
    set_err(ir, TH_ERR_INTERNAL);
    return NULL;
  }
  tc_expr *e = new_expr(ir, TC_EXPR_FMA, a->type);
  if (!e) return NULL;
  e->a = a;
  e->b = b;
  e->c = c;
  return e;
}

const tc_expr *tc_e_cast(tc_ir *ir, tc_type to, const tc_expr *a) {
  if (!a) return NULL;
  if (to.lanes != a->type.lanes || to.code == TC_TYPE_PTR || to.code == TC_TYPE_BOOL) {
    set_err(ir, TH_ERR_INTERNAL);
    return NULL;
  }
  if (type_eq(to, a->type)) return a;
  if (a->kind == TC_EXPR_INT && to.code == TC_TYPE_FLOAT && to.lanes == 1)
    return tc_e_float(ir, (double)a->ival);
  tc_expr *e = new_expr(ir, TC_EXPR_CAST, to);
  if (e) e->a = a;
  return e;
}

/* A float -> float primitive of one operand (exp, sqrt). */
static const tc_expr *float_fn(tc_ir *ir, tc_expr_kind k, const tc_expr *a) {
  if (!a) return NULL;
  if (a->type.code != TC_TYPE_FLOAT) {
    set_err(ir, TH_ERR_INTERNAL);
    return NULL;
  }
  tc_expr *e = new_expr(ir, k, a->type);
  if (e) e->a = a;
  return e;
}

const tc_expr *tc_e_exp(tc_ir *ir, const tc_expr *a) {
  return float_fn(ir, TC_EXPR_EXP, a);
}

const tc_expr *tc_e_sqrt(tc_ir *ir, const tc_expr *a) {
  return float_fn(ir, TC_EXPR_SQRT, a);
}

const tc_expr *tc_e_float_fn(tc_ir *ir, tc_expr_kind k, const tc_expr *a) {
  if (k != TC_EXPR_EXP && (k < TC_EXPR_SQRT || k > TC_EXPR_ATAN)) {
    set_err(ir, TH_ERR_INTERNAL);
    return NULL;
  }
  return float_fn(ir, k, a);
}

/* A float constant of a's type (broadcast for vectors). */
static const tc_expr *fconst(tc_ir *ir, const tc_expr *a, double v) {
  const tc_expr *c = tc_e_float(ir, v);
  return a->type.lanes > 1 ? tc_e_broadcast(ir, c, a->type.lanes) : c;
}

const tc_expr *tc_e_erf(tc_ir *ir, const tc_expr *a) {
  if (!a) return NULL;
  if (a->type.code != TC_TYPE_FLOAT) {
    set_err(ir, TH_ERR_INTERNAL);
    return NULL;
  }
  /* erf(|x|) = 1 - (a1 t + a2 t^2 + a3 t^3 + a4 t^4 + a5 t^5) e^(-x^2), t = 1 / (1 + p |x|) */
  const tc_expr *ax = tc_e_max(ir, a, tc_e_sub(ir, fconst(ir, a, 0.0), a));
  const tc_expr *t = tc_e_div(ir, fconst(ir, a, 1.0), tc_e_fma(ir, fconst(ir, a, 0.3275911), ax, fconst(ir, a, 1.0)));
  const tc_expr *poly = fconst(ir, a, 1.061405429);
  poly = tc_e_fma(ir, poly, t, fconst(ir, a, -1.453152027));
  poly = tc_e_fma(ir, poly, t, fconst(ir, a, 1.421413741));
  poly = tc_e_fma(ir, poly, t, fconst(ir, a, -0.284496736));
  poly = tc_e_fma(ir, poly, t, fconst(ir, a, 0.254829592));
  poly = tc_e_mul(ir, poly, t);
  const tc_expr *e = tc_e_exp(ir, tc_e_sub(ir, fconst(ir, a, 0.0), tc_e_mul(ir, ax, ax)));
  const tc_expr *r = tc_e_sub(ir, fconst(ir, a, 1.0), tc_e_mul(ir, poly, e));
  const tc_expr *neg = tc_e_bin(ir, TC_EXPR_LT, a, fconst(ir, a, 0.0));
  return tc_e_select(ir, neg, tc_e_sub(ir, fconst(ir, a, 0.0), r), r);
}

const tc_expr *tc_e_tanh(tc_ir *ir, const tc_expr *a) {
  if (!a) return NULL;
  if (a->type.code != TC_TYPE_FLOAT) {
    set_err(ir, TH_ERR_INTERNAL);
    return NULL;
  }
  /* tanh(|x|) = 1 - 2 / (e^(2|x|) + 1): e^(2|x|) overflows to inf for large |x| and gives exactly 1 */
  const tc_expr *ax = tc_e_max(ir, a, tc_e_sub(ir, fconst(ir, a, 0.0), a));
  const tc_expr *e = tc_e_exp(ir, tc_e_add(ir, ax, ax));
  const tc_expr *r =
      tc_e_sub(ir, fconst(ir, a, 1.0), tc_e_div(ir, fconst(ir, a, 2.0), tc_e_add(ir, e, fconst(ir, a, 1.0))));
  const tc_expr *neg = tc_e_bin(ir, TC_EXPR_LT, a, fconst(ir, a, 0.0));
  return tc_e_select(ir, neg, tc_e_sub(ir, fconst(ir, a, 0.0), r), r);
}

const tc_expr *tc_e_gelu(tc_ir *ir, const tc_expr *a) {
  if (!a) return NULL;
  const tc_expr *half = tc_e_mul(ir, a, fconst(ir, a, 0.5));
  const tc_expr *erf = tc_e_erf(ir, tc_e_mul(ir, a, fconst(ir, a, 0.70710678118654752440)));
  return tc_e_fma(ir, half, erf, half);
}

/* 1 + e^-a, the denominator of sigmoid and silu. */
static const tc_expr *one_plus_exp_neg(tc_ir *ir, const tc_expr *a) {
  if (!a) return NULL;
  if (a->type.code != TC_TYPE_FLOAT) {
    set_err(ir, TH_ERR_INTERNAL);
    return NULL;
  }
  return tc_e_add(ir, fconst(ir, a, 1.0), tc_e_exp(ir, tc_e_sub(ir, fconst(ir, a, 0.0), a)));
}

const tc_expr *tc_e_sigmoid(tc_ir *ir, const tc_expr *a) {
  const tc_expr *d = one_plus_exp_neg(ir, a);
  return d ? tc_e_div(ir, fconst(ir, a, 1.0), d) : NULL;
}

const tc_expr *tc_e_silu(tc_ir *ir, const tc_expr *a) {
  const tc_expr *d = one_plus_exp_neg(ir, a);
  return d ? tc_e_div(ir, a, d) : NULL;
}

const tc_expr *tc_e_hard_sigmoid(tc_ir *ir, const tc_expr *a, double alpha, double beta) {
  if (!a) return NULL;
  if (a->type.code != TC_TYPE_FLOAT) {
    set_err(ir, TH_ERR_INTERNAL);
    return NULL;
  }
  const tc_expr *y = tc_e_fma(ir, a, fconst(ir, a, alpha), fconst(ir, a, beta));
  return tc_e_min(ir, tc_e_max(ir, y, fconst(ir, a, 0.0)), fconst(ir, a, 1.0));
}

const tc_expr *tc_e_hard_swish(tc_ir *ir, const tc_expr *a) {
  const tc_expr *h = tc_e_hard_sigmoid(ir, a, 1.0 / 6.0, 0.5);
  return h ? tc_e_mul(ir, a, h) : NULL;
}

static tc_stmt *new_stmt(tc_ir *ir, tc_stmt_kind k) {
  tc_stmt *s = alloc(ir, sizeof *s);
  if (s) s->kind = k;
  return s;
}

const tc_stmt *tc_s_for(tc_ir *ir, const tc_var *v, const tc_expr *min, const tc_expr *extent,
                        tc_for_kind kind, const tc_stmt *body) {
  if (!v || !min || !extent || !body) return NULL;
  if (v->type.code != TC_TYPE_INT || min->type.code != TC_TYPE_INT ||
      extent->type.code != TC_TYPE_INT || min->type.lanes != 1 || extent->type.lanes != 1 ||
      kind < 0 || kind >= TC_FOR_KIND_COUNT ||
      (kind == TC_FOR_UNROLLED && extent->kind != TC_EXPR_INT)) {
    set_err(ir, TH_ERR_INTERNAL);
    return NULL;
  }
  tc_stmt *s = new_stmt(ir, TC_STMT_FOR);
  if (!s) return NULL;
  s->var = v;
  s->min = min;
  s->extent = extent;
  s->for_kind = kind;
  s->body = body;
  return s;
}

const tc_stmt *tc_s_let(tc_ir *ir, const tc_var *v, const tc_expr *value, const tc_stmt *body) {
  if (!v || !value || !body) return NULL;
  if (!type_eq(v->type, value->type)) {
    set_err(ir, TH_ERR_INTERNAL);
    return NULL;
  }
  tc_stmt *s = new_stmt(ir, TC_STMT_LET);
  if (!s) return NULL;
  s->var = v;
  s->value = value;
  s->body = body;
  return s;
}

const tc_stmt *tc_s_allocate(tc_ir *ir, const tc_var *buf, int64_t count, tc_scope scope,
                             const tc_stmt *body) {
  if (!buf || !body) return NULL;
  if (buf->type.code != TC_TYPE_PTR || count < 1) {
    set_err(ir, TH_ERR_INTERNAL);
    return NULL;
  }
  tc_stmt *s = new_stmt(ir, TC_STMT_ALLOCATE);
  if (!s) return NULL;
  s->var = buf;
  s->count = count;
  s->scope = scope;
  s->body = body;
  return s;
}

const tc_stmt *tc_s_store(tc_ir *ir, const tc_var *buf, const tc_expr *index, const tc_expr *value,
                          int align) {
  if (!buf || !index || !value) return NULL;
  int ok = buf->type.code == TC_TYPE_PTR && index->type.code == TC_TYPE_INT &&
           value->type.code == buf->elem.code;
  if (ok && buf->elem.lanes == 1)
    ok = index->type.lanes == 1 || index->type.lanes == value->type.lanes;
  else if (ok)
    ok = index->type.lanes == 1 && value->type.lanes == buf->elem.lanes;
  if (!ok) {
    set_err(ir, TH_ERR_INTERNAL);
    return NULL;
  }
  tc_stmt *s = new_stmt(ir, TC_STMT_STORE);
  if (!s) return NULL;
  s->var = buf;
  s->index = index;
  s->value = value;
  s->align = align > 0 ? align : 4;
  return s;
}

const tc_stmt *tc_s_if(tc_ir *ir, const tc_expr *cond, const tc_stmt *then_s, const tc_stmt *else_s) {
  if (!cond || !then_s) return NULL;
  if (cond->type.code != TC_TYPE_BOOL || cond->type.lanes != 1) {
    set_err(ir, TH_ERR_INTERNAL);
    return NULL;
  }
  tc_stmt *s = new_stmt(ir, TC_STMT_IF);
  if (!s) return NULL;
  s->value = cond;
  s->body = then_s;
  s->else_body = else_s;
  return s;
}

const tc_stmt *tc_s_seq(tc_ir *ir, int n, const tc_stmt *const *items) {
  if (n < 0) return NULL;
  for (int i = 0; i < n; i++)
    if (!items[i]) {
      set_err(ir, TH_ERR_INTERNAL);
      return NULL;
    }
  if (n == 1) return items[0];
  tc_stmt *s = new_stmt(ir, TC_STMT_SEQ);
  if (!s) return NULL;
  const tc_stmt **copy = NULL;
  if (n > 0) {
    copy = alloc(ir, sizeof *copy * (size_t)n);
    if (!copy) return NULL;
    memcpy(copy, items, sizeof *copy * (size_t)n);
  }
  s->n = n;
  s->items = copy;
  return s;
}

const tc_stmt *tc_s_eval(tc_ir *ir, const tc_expr *e) {
  if (!e) return NULL;
  tc_stmt *s = new_stmt(ir, TC_STMT_EVAL);
  if (s) s->value = e;
  return s;
}

const tc_stmt *tc_s_sync(tc_ir *ir) {
  return new_stmt(ir, TC_STMT_SYNC);
}

const tc_stmt *tc_s_intrin(tc_ir *ir, tc_intrin_kind k, int nbufs, const tc_var *const *bufs,
                           const tc_expr *const *idx, const tc_expr *cond, int64_t imm) {
  int ok = k >= 0 && k < TC_INTRIN_KIND_COUNT && nbufs >= 0 && nbufs <= 3;
  for (int i = 0; ok && i < nbufs; i++) {
    if (!bufs[i] || !idx[i]) return NULL;
    ok = bufs[i]->type.code == TC_TYPE_PTR && idx[i]->type.code == TC_TYPE_INT &&
         idx[i]->type.lanes == 1;
  }
  if (ok && cond) ok = cond->type.code == TC_TYPE_BOOL && cond->type.lanes == 1;
  if (!ok) {
    set_err(ir, TH_ERR_INTERNAL);
    return NULL;
  }
  tc_stmt *s = new_stmt(ir, TC_STMT_INTRIN);
  if (!s) return NULL;
  s->intrin = k;
  for (int i = 0; i < nbufs; i++) {
    s->bufs[i] = bufs[i];
    s->idx[i] = idx[i];
  }
  s->value = cond;
  s->imm = imm;
  return s;
}

const char *tc_intrin_name(tc_intrin_kind k) {
  static const char *const names[TC_INTRIN_KIND_COUNT] = {"mma_tf32_m16n8k8", "cp_async",
                                                          "cp_commit", "cp_wait"};
  return k >= 0 && k < TC_INTRIN_KIND_COUNT ? names[k] : "?";
}

void tc_list_push(tc_ir *ir, tc_stmt_list *l, const tc_stmt *s) {
  if (!s) {
    set_err(ir, ir->err == TH_OK ? TH_ERR_INTERNAL : ir->err);
    return;
  }
  if (l->n == l->cap) {
    int cap = l->cap ? l->cap * 2 : 8;
    const tc_stmt **items = alloc(ir, sizeof *items * (size_t)cap);
    if (!items) return;
    if (l->n) memcpy(items, l->items, sizeof *items * (size_t)l->n);
    l->items = items;
    l->cap = cap;
  }
  l->items[l->n++] = s;
}

const tc_stmt *tc_list_seq(tc_ir *ir, const tc_stmt_list *l) {
  if (ir->err != TH_OK) return NULL;
  return tc_s_seq(ir, l->n, l->items);
}
