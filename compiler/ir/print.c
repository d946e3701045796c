/* A TVM-like text listing of loop IR, for inspection (tc_op_print) and for tests that check the shape of
 * a lowered kernel. The output is meant for people, not for parsing back. */
#include <inttypes.h>

#include "ir.h"

static const char *const for_names[TC_FOR_KIND_COUNT] = {
    "serial", "parallel", "vectorized", "unrolled", "blockIdx.x",
    "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z", "rolled"};

const char *tc_for_kind_name(tc_for_kind k) {
  return (k >= 0 && k < TC_FOR_KIND_COUNT) ? for_names[k] : "?";
}

static const char *bin_op(tc_expr_kind k) {
  switch (k) {
    case TC_EXPR_ADD: return "+";
    case TC_EXPR_SUB: return "-";
    case TC_EXPR_MUL: return "*";
    case TC_EXPR_DIV: return "/";
    case TC_EXPR_MOD: return "%";
    case TC_EXPR_LT: return "<";
    case TC_EXPR_LE: return "<=";
    case TC_EXPR_GT: return ">";
    case TC_EXPR_GE: return ">=";
    case TC_EXPR_EQ: return "==";
    case TC_EXPR_NE: return "!=";
    case TC_EXPR_AND: return "&&";
    case TC_EXPR_OR: return "||";
    default: return NULL;
  }
}

static const char *const tc__fn_names[] = {"exp", "sqrt", "log", "floor", "ceil", "round",
                                           "sin", "cos",  "tan", "asin",  "acos", "atan"};
_Static_assert(TC_EXPR_ATAN - TC_EXPR_EXP == 11, "the float functions are consecutive");

th_status tc_ir_print_expr(const tc_expr *e, th_buf *b) {
  th_status rc = TH_OK;
  if (!e) return th_buf_appendf(b, "<null>");
  const char *op = bin_op(e->kind);
  if (op) {
    rc = th_buf_appendf(b, "(");
    if (rc == TH_OK) rc = tc_ir_print_expr(e->a, b);
    if (rc == TH_OK) rc = th_buf_appendf(b, " %s ", op);
    if (rc == TH_OK) rc = tc_ir_print_expr(e->b, b);
    if (rc == TH_OK) rc = th_buf_appendf(b, ")");
    return rc;
  }
  switch (e->kind) {
    case TC_EXPR_INT: return th_buf_appendf(b, "%" PRId64, e->ival);
    case TC_EXPR_FLOAT: return th_buf_appendf(b, "%gf", e->fval);
    case TC_EXPR_VAR: return th_buf_appendf(b, "%s", e->var->name);
    case TC_EXPR_MIN:
    case TC_EXPR_MAX:
      rc = th_buf_appendf(b, "%s(", e->kind == TC_EXPR_MIN ? "min" : "max");
      if (rc == TH_OK) rc = tc_ir_print_expr(e->a, b);
      if (rc == TH_OK) rc = th_buf_appendf(b, ", ");
      if (rc == TH_OK) rc = tc_ir_print_expr(e->b, b);
      if (rc == TH_OK) rc = th_buf_appendf(b, ")");
      return rc;
    case TC_EXPR_NOT:
      rc = th_buf_appendf(b, "!");
      if (rc == TH_OK) rc = tc_ir_print_expr(e->a, b);
      return rc;
    case TC_EXPR_SELECT:
    case TC_EXPR_FMA:
      rc = th_buf_appendf(b, "%s(", e->kind == TC_EXPR_FMA ? "fma" : "select");
      if (rc == TH_OK) rc = tc_ir_print_expr(e->a, b);
      if (rc == TH_OK) rc = th_buf_appendf(b, ", ");
      if (rc == TH_OK) rc = tc_ir_print_expr(e->b, b);
      if (rc == TH_OK) rc = th_buf_appendf(b, ", ");
      if (rc == TH_OK) rc = tc_ir_print_expr(e->c, b);
      if (rc == TH_OK) rc = th_buf_appendf(b, ")");
      return rc;
    case TC_EXPR_BROADCAST:
      rc = th_buf_appendf(b, "x%d(", (int)e->type.lanes);
      if (rc == TH_OK) rc = tc_ir_print_expr(e->a, b);
      if (rc == TH_OK) rc = th_buf_appendf(b, ")");
      return rc;
    case TC_EXPR_RAMP:
      rc = th_buf_appendf(b, "ramp(");
      if (rc == TH_OK) rc = tc_ir_print_expr(e->a, b);
      if (rc == TH_OK) rc = th_buf_appendf(b, ", ");
      if (rc == TH_OK) rc = tc_ir_print_expr(e->b, b);
      if (rc == TH_OK) rc = th_buf_appendf(b, ", %d)", (int)e->type.lanes);
      return rc;
    case TC_EXPR_LOAD:
      rc = th_buf_appendf(b, "%s[", e->var->name);
      if (rc == TH_OK) rc = tc_ir_print_expr(e->a, b);
      if (rc == TH_OK && e->type.lanes > 1 && e->a->type.lanes == 1)
        rc = th_buf_appendf(b, " : +%d", (int)e->type.lanes);
      if (rc == TH_OK) rc = th_buf_appendf(b, "]");
      return rc;
    case TC_EXPR_CAST:
      rc = th_buf_appendf(b, "%s(", e->type.code == TC_TYPE_FLOAT ? "float" : "int");
      if (rc == TH_OK) rc = tc_ir_print_expr(e->a, b);
      if (rc == TH_OK) rc = th_buf_appendf(b, ")");
      return rc;
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
    case TC_EXPR_ATAN:
      rc = th_buf_appendf(b, "%s(", tc__fn_names[e->kind - TC_EXPR_EXP]);
      if (rc == TH_OK) rc = tc_ir_print_expr(e->a, b);
      if (rc == TH_OK) rc = th_buf_appendf(b, ")");
      return rc;
    default: return th_buf_appendf(b, "<?>");
  }
}

static th_status indent(th_buf *b, int depth) {
  th_status rc = TH_OK;
  for (int i = 0; i < depth && rc == TH_OK; i++) rc = th_buf_append(b, "  ", 2);
  return rc;
}

static th_status print_stmt(const tc_stmt *s, th_buf *b, int depth) {
  th_status rc = TH_OK;
  if (s->kind != TC_STMT_SEQ) rc = indent(b, depth);
  if (rc != TH_OK) return rc;
  switch (s->kind) {
    case TC_STMT_FOR:
      rc = th_buf_appendf(b, "for (%s, ", s->var->name);
      if (rc == TH_OK) rc = tc_ir_print_expr(s->min, b);
      if (rc == TH_OK) rc = th_buf_appendf(b, ", ");
      if (rc == TH_OK) rc = tc_ir_print_expr(s->extent, b);
      if (rc == TH_OK) rc = th_buf_appendf(b, ") %s {\n", tc_for_kind_name(s->for_kind));
      if (rc == TH_OK) rc = print_stmt(s->body, b, depth + 1);
      if (rc == TH_OK) rc = indent(b, depth);
      if (rc == TH_OK) rc = th_buf_appendf(b, "}\n");
      return rc;
    case TC_STMT_LET:
      rc = th_buf_appendf(b, "let %s = ", s->var->name);
      if (rc == TH_OK) rc = tc_ir_print_expr(s->value, b);
      if (rc == TH_OK) rc = th_buf_appendf(b, "\n");
      if (rc == TH_OK) rc = print_stmt(s->body, b, depth);
      return rc;
    case TC_STMT_ALLOCATE: {
      static const char *const scopes[] = {"local", "shared", "global"};
      rc = th_buf_appendf(b, "allocate %s[%" PRId64 "] float32x%d %s\n", s->var->name, s->count,
                          (int)s->var->elem.lanes, scopes[s->scope]);
      if (rc == TH_OK) rc = print_stmt(s->body, b, depth);
      return rc;
    }
    case TC_STMT_STORE:
      rc = th_buf_appendf(b, "%s[", s->var->name);
      if (rc == TH_OK) rc = tc_ir_print_expr(s->index, b);
      if (rc == TH_OK && s->value->type.lanes > 1 && s->index->type.lanes == 1 &&
          s->var->elem.lanes == 1)
        rc = th_buf_appendf(b, " : +%d", (int)s->value->type.lanes);
      if (rc == TH_OK) rc = th_buf_appendf(b, "] = ");
      if (rc == TH_OK) rc = tc_ir_print_expr(s->value, b);
      if (rc == TH_OK) rc = th_buf_appendf(b, "\n");
      return rc;
    case TC_STMT_IF:
      rc = th_buf_appendf(b, "if (");
      if (rc == TH_OK) rc = tc_ir_print_expr(s->value, b);
      if (rc == TH_OK) rc = th_buf_appendf(b, ") {\n");
      if (rc == TH_OK) rc = print_stmt(s->body, b, depth + 1);
      if (rc == TH_OK && s->else_body) {
        rc = indent(b, depth);
        if (rc == TH_OK) rc = th_buf_appendf(b, "} else {\n");
        if (rc == TH_OK) rc = print_stmt(s->else_body, b, depth + 1);
      }
      if (rc == TH_OK) rc = indent(b, depth);
      if (rc == TH_OK) rc = th_buf_appendf(b, "}\n");
      return rc;
    case TC_STMT_SEQ:
      for (int i = 0; i < s->n && rc == TH_OK; i++) rc = print_stmt(s->items[i], b, depth);
      return rc;
    case TC_STMT_EVAL:
      rc = tc_ir_print_expr(s->value, b);
      if (rc == TH_OK) rc = th_buf_appendf(b, "\n");
      return rc;
    case TC_STMT_SYNC: return th_buf_appendf(b, "sync\n");
    case TC_STMT_INTRIN:
      rc = th_buf_appendf(b, "%s(", tc_intrin_name(s->intrin));
      for (int i = 0; i < 3 && s->bufs[i] && rc == TH_OK; i++) {
        rc = th_buf_appendf(b, "%s%s[", i ? ", " : "", s->bufs[i]->name);
        if (rc == TH_OK) rc = tc_ir_print_expr(s->idx[i], b);
        if (rc == TH_OK) rc = th_buf_appendf(b, "]");
      }
      if (rc == TH_OK && s->value) rc = th_buf_appendf(b, ", if ");
      if (rc == TH_OK && s->value) rc = tc_ir_print_expr(s->value, b);
      if (rc == TH_OK) rc = th_buf_appendf(b, ", %" PRId64 ")\n", s->imm);
      return rc;
    default: return th_buf_appendf(b, "<?>\n");
  }
}

th_status tc_ir_print(const tc_stmt *s, th_buf *b) {
  if (!s || !b) return TH_ERR_INVALID;
  return print_stmt(s, b, 0);
}
