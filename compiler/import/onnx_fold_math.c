/* The ONNX importer's element-wise folds: Identity and Dropout (a copy, and Dropout's all-true
 * mask), arithmetic, comparisons and logic on two or more constant inputs with numpy broadcasting
 * (Add ... Xor, variadic Min/Max), Where, and the unary float math (Neg ... Log), computed at
 * import in each input's element type. The table that dispatches to them is in onnx_fold.c. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "onnx_fold_int.h"

/* ---- element-wise
 * ---------------------------------------------------------------------------------------- */

static int tc__ox_cmp_op(const char *op) {
  return strcmp(op, "Equal") == 0 || strcmp(op, "Less") == 0 || strcmp(op, "Greater") == 0 ||
         strcmp(op, "LessOrEqual") == 0 || strcmp(op, "GreaterOrEqual") == 0 ||
         strcmp(op, "And") == 0 || strcmp(op, "Or") == 0 || strcmp(op, "Xor") == 0;
}

static double tc__ox_fop(const char *op, double a, double b) {
  switch (op[0]) {
    case 'A':
      return op[1] == 'd' ? a + b : (a != 0 && b != 0);
    case 'S':
      return a - b;
    case 'M':
      return op[1] == 'u'   ? a * b
             : op[1] == 'a' ? (a > b ? a : b)
             : op[1] == 'i' ? (a < b ? a : b)
                            : fmod(a, b);
    case 'D':
      return a / b;
    case 'P':
      return pow(a, b);
    case 'E':
      return a == b;
    case 'O':
      return a != 0 || b != 0;
    case 'X':
      return (a != 0) != (b != 0);
    case 'L':
      return op[4] == 'O' ? a <= b : a < b;
    case 'G':
      return op[7] == 'O' ? a >= b : a > b;
    default:
      return 0;
  }
}

/* Integer arithmetic in two's complement (wrapping, never undefined). 0 for a division by zero. */
static int tc__ox_iop(const char *op, int64_t a, int64_t b, int64_t *r) {
  uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
  switch (op[0]) {
    case 'A':
      *r = op[1] == 'd' ? (int64_t)(ua + ub) : (a != 0 && b != 0);
      return 1;
    case 'S':
      *r = (int64_t)(ua - ub);
      return 1;
    case 'M':
      if (op[1] == 'u')
        *r = (int64_t)(ua * ub);
      else if (op[1] == 'a')
        *r = a > b ? a : b;
      else if (op[1] == 'i')
        *r = a < b ? a : b;
      else {
        if (b == 0) return 0;
        *r = b == -1 ? 0 : a % b; /* Mod (fmod=0: the sign of the divisor) */
        if (*r != 0 && ((*r < 0) != (b < 0))) *r += b;
      }
      return 1;
    case 'D':
      if (b == 0) return 0;
      *r = (a == INT64_MIN && b == -1) ? INT64_MIN : a / b;
      return 1;
    case 'P': {
      uint64_t acc = 1;
      if (b < 0) {
        *r = a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
        return 1;
      }
      for (int64_t k = 0; k < b && k < 64; k++) acc *= ua;
      *r = (int64_t)acc;
      return 1;
    }
    default:
      *r = (int64_t)tc__ox_fop(op, (double)a, (double)b);
      return 1;
  }
}

th_status tc__ox_f_identity(tc__ox *x, const Onnx__NodeProto *n, tc__oxc **in, int nin,
                            int *big) {
  (void)nin;
  tc__ox_set(x, n, 0, in[0]);
  if (tc__ox_out(x, n, 1)) { /* Dropout's mask: all true at inference */
    tc__oxc m;
    th_status rc = tc__ox_new(x, n, &m, T_BOOL, in[0]->ndim, in[0]->dims, big);
    if (rc != TH_OK || *big) return rc;
    for (int64_t k = 0; k < m.n; k++) ((int64_t *)m.i)[k] = 1;
    tc__ox_set(x, n, 1, &m);
  }
  return TH_OK;
}

th_status tc__ox_f_binary(tc__ox *x, const Onnx__NodeProto *n, tc__oxc **in, int nin,
                          int *big) {
  const char *op = n->op_type;
  if (nin < 2) return tc__ox_f_identity(x, n, in, nin, big); /* Min/Max of one input */
  tc__oxc acc = *in[0];
  for (int i = 1; i < nin; i++) { /* Min/Max/Sum are variadic: fold left */
    const tc__oxc *a = &acc, *b = in[i];
    if (!b) return tc__ox_nfail(x, n, TH_ERR_INVALID, "input %d is missing", i);
    int64_t od[TC__OX_RANK], sa[TC__OX_RANK], sb[TC__OX_RANK];
    int r;
    tc__oxc legacy = *b; /* b seen through opset 6's broadcast/axis (the same below opset 7) */
    th_status lrc = tc__ox_legacy_bcast(x, n, a->dims, a->ndim, b->dims, b->ndim, od, &r);
    if (lrc != TH_OK) return lrc;
    memcpy(legacy.dims, od, sizeof od);
    legacy.ndim = r;
    b = &legacy;
    if (!tc__ox_bcast(a->dims, a->ndim, b->dims, b->ndim, od, &r))
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "the inputs' shapes do not broadcast");
    int cmp = tc__ox_cmp_op(op), fl = a->fl || b->fl;
    int type = cmp ? T_BOOL : fl ? (a->fl ? a->type : b->type) : a->type;
    tc__oxc o;
    th_status rc = tc__ox_new(x, n, &o, type, r, od, big);
    if (rc != TH_OK || *big) return rc;
    tc__ox_bstrides(a, r, sa);
    tc__ox_bstrides(b, r, sb);
    for (int64_t k = 0; k < o.n; k++) {
      int64_t ja = tc__ox_off(od, r, sa, k), jb = tc__ox_off(od, r, sb, k);
      if (fl) {
        double v = tc__ox_fop(op, tc__ox_getf(a, ja), tc__ox_getf(b, jb));
        if (o.fl)
          ((float *)o.f)[k] = tc__ox_f32(v);
        else
          ((int64_t *)o.i)[k] = (int64_t)v;
      } else {
        int64_t v;
        if (!tc__ox_iop(op, a->i[ja], b->i[jb], &v))
          return tc__ox_nfail(x, n, TH_ERR_INVALID, "integer division by zero");
        ((int64_t *)o.i)[k] = cmp ? (v != 0) : tc__ox_wrap(type, v);
      }
    }
    acc = o;
  }
  tc__ox_set(x, n, 0, &acc);
  return TH_OK;
}

th_status tc__ox_f_where(tc__ox *x, const Onnx__NodeProto *n, tc__oxc **in, int nin,
                         int *big) {
  if (nin < 3 || !in[1] || !in[2])
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "needs condition, X and Y");
  const tc__oxc *c = in[0], *a = in[1], *b = in[2];
  if (a->fl != b->fl) return tc__ox_nfail(x, n, TH_ERR_INVALID, "X and Y have different types");
  int64_t t[TC__OX_RANK], od[TC__OX_RANK], sc[TC__OX_RANK], sa[TC__OX_RANK], sb[TC__OX_RANK];
  int r1, r;
  if (!tc__ox_bcast(c->dims, c->ndim, a->dims, a->ndim, t, &r1) ||
      !tc__ox_bcast(t, r1, b->dims, b->ndim, od, &r))
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "the inputs' shapes do not broadcast");
  tc__oxc o;
  th_status rc = tc__ox_new(x, n, &o, a->type, r, od, big);
  if (rc != TH_OK || *big) return rc;
  tc__ox_bstrides(c, r, sc);
  tc__ox_bstrides(a, r, sa);
  tc__ox_bstrides(b, r, sb);
  for (int64_t k = 0; k < o.n; k++) {
    int take = tc__ox_getf(c, tc__ox_off(od, r, sc, k)) != 0;
    if (take)
      tc__ox_copy_el(&o, k, a, tc__ox_off(od, r, sa, k));
    else
      tc__ox_copy_el(&o, k, b, tc__ox_off(od, r, sb, k));
  }
  tc__ox_set(x, n, 0, &o);
  return TH_OK;
}

th_status tc__ox_f_unary(tc__ox *x, const Onnx__NodeProto *n, tc__oxc **in, int nin,
                         int *big) {
  (void)nin;
  const char *op = n->op_type;
  const tc__oxc *a = in[0];
  int is_not = strcmp(op, "Not") == 0;
  int keep_int = !a->fl && (is_not || strcmp(op, "Neg") == 0 || strcmp(op, "Abs") == 0 ||
                            strcmp(op, "Relu") == 0);
  tc__oxc o;
  th_status rc =
      tc__ox_new(x, n, &o, keep_int ? a->type : (a->fl ? a->type : T_FLOAT), a->ndim, a->dims, big);
  if (rc != TH_OK || *big) return rc;
  for (int64_t k = 0; k < o.n; k++) {
    if (keep_int) {
      int64_t v = a->i[k];
      uint64_t u = (uint64_t)v;
      ((int64_t *)o.i)[k] = is_not         ? !v
                            : op[0] == 'N' ? (int64_t)(0 - u)
                            : op[0] == 'A' ? (v < 0 ? (int64_t)(0 - u) : v)
                                           : (v > 0 ? v : 0);
      continue;
    }
    double v = tc__ox_getf(a, k), r;
    if (strcmp(op, "Neg") == 0)
      r = -v;
    else if (strcmp(op, "Abs") == 0)
      r = fabs(v);
    else if (strcmp(op, "Floor") == 0)
      r = floor(v);
    else if (strcmp(op, "Ceil") == 0)
      r = ceil(v);
    else if (strcmp(op, "Sqrt") == 0)
      r = sqrt(v);
    else if (strcmp(op, "Erf") == 0)
      r = erf(v);
    else if (strcmp(op, "Relu") == 0)
      r = v > 0 ? v : 0;
    else if (strcmp(op, "Tanh") == 0)
      r = tanh(v);
    else if (strcmp(op, "Sigmoid") == 0)
      r = 1.0 / (1.0 + exp(-v));
    else if (strcmp(op, "Reciprocal") == 0)
      r = 1.0 / v;
    else if (strcmp(op, "Exp") == 0)
      r = exp(v);
    else if (strcmp(op, "Log") == 0)
      r = log(v);
    else
      r = v != 0 ? 0 : 1; /* Not of floats */
    ((float *)o.f)[k] = tc__ox_f32(r);
  }
  tc__ox_set(x, n, 0, &o);
  return TH_OK;
}
