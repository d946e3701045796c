/* Node arguments of the ONNX importer: typed attribute access, and the decoding that folding
 * (onnx_fold.c) and conversion (onnx_ops.c) share, so that a constant and a runtime tensor go
 * through the same rules: lists that moved from attributes to inputs at some opset (axes, splits,
 * slice ranges), reshape targets with 0 and -1, permutations, slice clamping, window padding with
 * auto_pad. Every value a file gives is range-checked here before it is used as a size or an index.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "onnx_int.h"

const Onnx__AttributeProto *tc__ox_attr(const Onnx__NodeProto *n, const char *name) {
  for (size_t i = 0; i < n->n_attribute; i++)
    if (n->attribute[i] && n->attribute[i]->name && strcmp(n->attribute[i]->name, name) == 0)
      return n->attribute[i];
  return NULL;
}

th_status tc__ox_attr_i(tc__ox *x, const Onnx__NodeProto *n, const char *name, int64_t def,
                        int64_t *out) {
  const Onnx__AttributeProto *a = tc__ox_attr(n, name);
  *out = def;
  if (!a) return TH_OK;
  if (a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT && !(a->type == 0 && a->has_i))
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "attribute '%s' must be an integer", name);
  *out = a->i;
  return TH_OK;
}

th_status tc__ox_attr_f(tc__ox *x, const Onnx__NodeProto *n, const char *name, float def,
                        float *out) {
  const Onnx__AttributeProto *a = tc__ox_attr(n, name);
  *out = def;
  if (!a) return TH_OK;
  if (a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT || (a->type == 0 && a->has_f)) {
    *out = a->f;
  } else if (a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT) {
    *out = (float)a->i;
  } else {
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "attribute '%s' must be a float", name);
  }
  if (!isfinite(*out)) /* a NaN epsilon would pass the import and fail every build after it */
    return tc__ox_nfail(x, n, TH_ERR_INVALID,
                        "attribute '%s' is %s; a float attribute must be finite", name,
                        isnan(*out) ? "NaN"
                        : *out > 0  ? "+Inf"
                                    : "-Inf");
  return TH_OK;
}

th_status tc__ox_attr_s(tc__ox *x, const Onnx__NodeProto *n, const char *name, const char *def,
                        char *out, size_t len) {
  const Onnx__AttributeProto *a = tc__ox_attr(n, name);
  snprintf(out, len, "%s", def);
  if (!a) return TH_OK;
  if (a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING && !(a->type == 0 && a->has_s))
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "attribute '%s' must be a string", name);
  size_t k = a->s.len < len - 1 ? a->s.len : len - 1;
  if (k) memcpy(out, a->s.data, k);
  out[k] = '\0';
  if (memchr(out, '\0', k))
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "attribute '%s' holds a NUL byte", name);
  return TH_OK;
}

th_status tc__ox_attr_ints(tc__ox *x, const Onnx__NodeProto *n, const char *name, int64_t *out,
                           int max, int *count) {
  const Onnx__AttributeProto *a = tc__ox_attr(n, name);
  *count = -1;
  if (!a) return TH_OK;
  if (a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS && !(a->type == 0 && a->n_ints > 0))
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "attribute '%s' must be a list of integers", name);
  if (a->n_ints > (size_t)max)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "attribute '%s' has %zu values (at most %d)", name,
                        a->n_ints, max);
  for (size_t i = 0; i < a->n_ints; i++) out[i] = a->ints[i];
  *count = (int)a->n_ints;
  return TH_OK;
}

th_status tc__ox_const_ints(tc__ox *x, const Onnx__NodeProto *n, int k, int64_t *out, int max,
                            int *count) {
  tc__oxv *v = tc__ox_in(x, n, k);
  *count = -1;
  if (!v) return TH_OK;
  if (v->kind != TC__OX_CONST) {
    *count = -2;
    return tc__ox_unsupported(
        x, n, "input %d ('%.60s') must be a constant, it is computed at run time", k, v->name);
  }
  if (v->c.fl || v->c.ndim > 1)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "input %d ('%.60s') must be a 1-D integer tensor", k,
                        v->name);
  if (v->c.n > max)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "input %d ('%.60s') has %lld values (at most %d)", k,
                        v->name, (long long)v->c.n, max);
  for (int64_t i = 0; i < v->c.n; i++) out[i] = v->c.i[i];
  *count = (int)v->c.n;
  return TH_OK;
}

th_status tc__ox_list(tc__ox *x, const Onnx__NodeProto *n, const char *attr, int k, int64_t since,
                      int64_t *out, int max, int *count) {
  if (x->opset < since) return tc__ox_attr_ints(x, n, attr, out, max, count);
  th_status rc = tc__ox_const_ints(x, n, k, out, max, count);
  if (rc == TH_OK && *count == -1) rc = tc__ox_attr_ints(x, n, attr, out, max, count); /* lenient */
  return rc;
}

th_status tc__ox_axis(tc__ox *x, const Onnx__NodeProto *n, int64_t axis, int rank, int *out) {
  *out = 0;
  if (axis < -rank || axis >= rank)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "axis %lld is out of range for %d dimensions",
                        (long long)axis, rank);
  *out = (int)(axis < 0 ? axis + rank : axis);
  return TH_OK;
}

th_status tc__ox_legacy_bcast(tc__ox *x, const Onnx__NodeProto *n, const int64_t *adims, int ra,
                              const int64_t *bdims, int rb, int64_t *out, int *rout) {
  for (int d = 0; d < rb; d++) out[d] = bdims[d];
  *rout = rb;
  if (x->opset >= 7) return TH_OK;
  int64_t bc, axis;
  th_status rc = tc__ox_attr_i(x, n, "broadcast", 0, &bc);
  if (rc == TH_OK) rc = tc__ox_attr_i(x, n, "axis", ra - rb, &axis);
  if (rc != TH_OK) return rc;
  if (!bc) {
    /* equal shapes; or ones that differ where the import put its batch in place of the file's first
     * dimension (a file fixed at batch 1 or 2 holds parameters of the same shape), which numpy's
     * rule (the only broadcast left then) takes as opset 7 would */
    int64_t o[TC__OX_RANK];
    int r;
    if (ra != rb || (memcmp(adims, bdims, (size_t)ra * sizeof *adims) != 0 &&
                     !tc__ox_bcast(adims, ra, bdims, rb, o, &r)))
      return tc__ox_nfail(x, n, TH_ERR_INVALID,
                          "opset %lld without broadcast = 1 needs inputs of one shape",
                          (long long)x->opset);
    return TH_OK;
  }
  if (axis < 0) axis += ra; /* opset 6 allows no negative axis; older exporters wrote them anyway */
  if (rb > ra || axis < 0 || axis + rb > ra)
    return tc__ox_nfail(x, n, TH_ERR_INVALID,
                        "broadcast axis %lld does not place %d dimensions inside %d",
                        (long long)axis, rb, ra);
  for (int d = 0; d < rb; d++)
    if (bdims[d] != 1 && bdims[d] != adims[axis + d])
      return tc__ox_nfail(x, n, TH_ERR_INVALID,
                          "B's dimension %d (%lld) does not match A's dimension %lld (%lld)", d,
                          (long long)bdims[d], (long long)(axis + d), (long long)adims[axis + d]);
  if (rb == 0) return TH_OK; /* a scalar broadcasts anywhere */
  for (int d = 0; d < ra; d++) out[d] = d < axis || d >= axis + rb ? 1 : bdims[d - axis];
  *rout = ra;
  return TH_OK;
}

int tc__ox_bcast(const int64_t *a, int ra, const int64_t *b, int rb, int64_t *out, int *rank) {
  int r = ra > rb ? ra : rb;
  for (int d = 0; d < r; d++) {
    int ia = d - (r - ra), ib = d - (r - rb);
    int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    if (da != db && da != 1 && db != 1) return 0;
    out[d] = da == 1 ? db : da;
  }
  *rank = r;
  return 1;
}

static int64_t tc__ox_prod(const int64_t *d, int lo, int hi) {
  int64_t p = 1;
  for (int i = lo; i < hi; i++)
    p *= d[i]; /* every dim is at most 2^24 and every tensor 2^31 elements */
  return p;
}

static void tc__ox_dims_str(const int64_t *d, int r, char *buf, size_t len) {
  size_t k = (size_t)snprintf(buf, len, "[");
  for (int i = 0; i < r && k < len; i++)
    k += (size_t)snprintf(buf + k, len - k, "%s%lld", i ? ", " : "", (long long)d[i]);
  if (k < len) snprintf(buf + k, len - k, "]");
}

static th_status tc__ox_reshape_to(tc__ox *x, const Onnx__NodeProto *n, const int64_t *in, int rin,
                                   int64_t *out, int *rout) {
  int64_t shape[TC__OX_RANK], allowzero = 0;
  int cnt;
  th_status rc = tc__ox_const_ints(x, n, 1, shape, TC__OX_RANK, &cnt);
  if (rc == TH_OK && x->opset >= 14) rc = tc__ox_attr_i(x, n, "allowzero", 0, &allowzero);
  if (rc != TH_OK || cnt == -2) return rc;
  if (cnt < 0) return tc__ox_nfail(x, n, TH_ERR_INVALID, "the shape input is missing");
  int infer = -1;
  int64_t known = 1, total = tc__ox_prod(in, 0, rin);
  for (int d = 0; d < cnt; d++) {
    int64_t v = shape[d];
    if (v == 0 && !allowzero) {
      if (d >= rin)
        return tc__ox_nfail(x, n, TH_ERR_INVALID,
                            "shape entry %d is 0 (copy) past the input's rank %d", d, rin);
      v = in[d];
    }
    if (v == -1) {
      if (infer >= 0) return tc__ox_nfail(x, n, TH_ERR_INVALID, "the shape has two -1 entries");
      infer = d;
      out[d] = 1;
      continue;
    }
    if (v < 0 || v > TC_ONNX_MAX_DIM)
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "shape entry %d is %lld", d, (long long)shape[d]);
    out[d] = v;
    known *= v;
    if (known > TC_ONNX_MAX_ELEMENTS)
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "the shape is too large");
  }
  if (infer >= 0) {
    if (known == 0 || total % known != 0) goto mismatch;
    out[infer] = total / known;
    known = total;
  }
  if (known != total) goto mismatch;
  *rout = cnt;
  return TH_OK;
mismatch : {
  char si[128], so[128];
  tc__ox_dims_str(in, rin, si, sizeof si);
  tc__ox_dims_str(shape, cnt, so, sizeof so);
  int b = x->opts->batch;
  /* a constant that fixes the file's batch: the rest of the shape fits the input once the batch is
   * ours */
  if (rin > 0 && cnt > 0 && in[0] == b && shape[0] > 0 && shape[0] != b && infer != 0 &&
      known / shape[0] * b == total)
    return tc__ox_nfail(x, n, TH_ERR_INVALID,
                        "cannot reshape %s to %s: the model fixes its batch to %lld; export it "
                        "with a dynamic batch "
                        "axis (torch.onnx.export(..., dynamic_axes={'input': {0: 'batch'}}))",
                        si, so, (long long)shape[0]);
  return tc__ox_nfail(x, n, TH_ERR_INVALID, "cannot reshape %s (%lld elements) to %s", si,
                      (long long)total, so);
}
}

th_status tc__ox_reshape_dims(tc__ox *x, const Onnx__NodeProto *n, const int64_t *in, int rin,
                              int64_t *out, int *rout) {
  const char *op = n->op_type;
  int64_t axes[TC__OX_RANK];
  int cnt = 0;
  th_status rc = TH_OK;
  if (strcmp(op, "Reshape") == 0) return tc__ox_reshape_to(x, n, in, rin, out, rout);
  if (strcmp(op, "Flatten") == 0) {
    int64_t axis;
    rc = tc__ox_attr_i(x, n, "axis", 1, &axis);
    if (rc != TH_OK) return rc;
    if (axis < -rin || axis > rin)
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "axis %lld is out of range for %d dimensions",
                          (long long)axis, rin);
    if (axis < 0) axis += rin;
    out[0] = tc__ox_prod(in, 0, (int)axis);
    out[1] = tc__ox_prod(in, (int)axis, rin);
    *rout = 2;
    return TH_OK;
  }
  rc = tc__ox_list(x, n, "axes", 1, 13, axes, TC__OX_RANK, &cnt);
  if (rc != TH_OK || cnt == -2) return rc;
  int mark[TC__OX_RANK] = {0};
  if (strcmp(op, "Squeeze") == 0) {
    for (int i = 0; i < cnt; i++) {
      int a;
      rc = tc__ox_axis(x, n, axes[i], rin, &a);
      if (rc != TH_OK) return rc;
      if (in[a] != 1)
        return tc__ox_nfail(x, n, TH_ERR_INVALID, "cannot squeeze axis %d of length %lld", a,
                            (long long)in[a]);
      mark[a] = 1;
    }
    int r = 0;
    for (int d = 0; d < rin; d++)
      if (!(cnt < 0 ? in[d] == 1 : mark[d])) out[r++] = in[d];
    *rout = r;
    return TH_OK;
  }
  /* Unsqueeze */
  if (cnt < 0) return tc__ox_nfail(x, n, TH_ERR_INVALID, "axes are missing");
  int r = rin + cnt;
  if (r > TC__OX_RANK)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "the result would have %d dimensions", r);
  for (int i = 0; i < cnt; i++) {
    int a;
    rc = tc__ox_axis(x, n, axes[i], r, &a);
    if (rc != TH_OK) return rc;
    if (mark[a]) return tc__ox_nfail(x, n, TH_ERR_INVALID, "axis %d is given twice", a);
    mark[a] = 1;
  }
  for (int d = 0, k = 0; d < r; d++) out[d] = mark[d] ? 1 : in[k++];
  *rout = r;
  return TH_OK;
}

th_status tc__ox_perm(tc__ox *x, const Onnx__NodeProto *n, int rank, int *perm) {
  int64_t p[TC__OX_RANK];
  int cnt;
  th_status rc = tc__ox_attr_ints(x, n, "perm", p, TC__OX_RANK, &cnt);
  if (rc != TH_OK) return rc;
  if (cnt < 0) {
    for (int d = 0; d < rank; d++) perm[d] = rank - 1 - d;
    return TH_OK;
  }
  int seen[TC__OX_RANK] = {0};
  if (cnt != rank)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "perm has %d entries for %d dimensions", cnt, rank);
  for (int d = 0; d < rank; d++) {
    if (p[d] < 0 || p[d] >= rank || seen[p[d]]++)
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "perm is not a permutation of 0..%d", rank - 1);
    perm[d] = (int)p[d];
  }
  return TH_OK;
}

static int64_t tc__ox_clamp(int64_t v, int64_t lo, int64_t hi) {
  return v < lo ? lo : v > hi ? hi : v;
}

th_status tc__ox_slice_args(tc__ox *x, const Onnx__NodeProto *n, const int64_t *dims, int rank,
                            tc__ox_range *r) {
  int64_t st[TC__OX_RANK], en[TC__OX_RANK], ax[TC__OX_RANK], sp[TC__OX_RANK];
  int ns, ne, na = -1, nsp = -1;
  th_status rc;
  if (x->opset < 10) {
    rc = tc__ox_attr_ints(x, n, "starts", st, TC__OX_RANK, &ns);
    if (rc == TH_OK) rc = tc__ox_attr_ints(x, n, "ends", en, TC__OX_RANK, &ne);
    if (rc == TH_OK) rc = tc__ox_attr_ints(x, n, "axes", ax, TC__OX_RANK, &na);
  } else {
    rc = tc__ox_const_ints(x, n, 1, st, TC__OX_RANK, &ns);
    if (rc == TH_OK && ns != -2) rc = tc__ox_const_ints(x, n, 2, en, TC__OX_RANK, &ne);
    if (rc == TH_OK && ns != -2 && ne != -2) rc = tc__ox_const_ints(x, n, 3, ax, TC__OX_RANK, &na);
    if (rc == TH_OK && ns != -2 && ne != -2 && na != -2)
      rc = tc__ox_const_ints(x, n, 4, sp, TC__OX_RANK, &nsp);
  }
  if (rc != TH_OK) return rc;
  if (ns == -2 || ne == -2 || na == -2 || nsp == -2)
    return TH_OK; /* reported: the caller sees x->nunsup grow */
  if (ns < 0 || ne != ns || (na >= 0 && na != ns) || (nsp >= 0 && nsp != ns))
    return tc__ox_nfail(x, n, TH_ERR_INVALID,
                        "starts, ends, axes and steps must have the same length");
  for (int d = 0; d < rank; d++) {
    r[d].begin = 0;
    r[d].end = dims[d];
    r[d].step = 1;
  }
  int seen[TC__OX_RANK] = {0};
  for (int i = 0; i < ns; i++) {
    int a;
    rc = tc__ox_axis(x, n, na >= 0 ? ax[i] : i, rank, &a);
    if (rc != TH_OK) return rc;
    if (seen[a]++) return tc__ox_nfail(x, n, TH_ERR_INVALID, "axis %d is sliced twice", a);
    int64_t step = nsp >= 0 ? sp[i] : 1, len = dims[a], b = st[i], e = en[i];
    if (step == 0 || step == INT64_MIN)
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "step %lld", (long long)step);
    if (b < 0) b = b < -len ? -1 - len : b + len; /* keeps INT64_MIN away from the addition */
    if (e < 0) e = e < -len ? -1 - len : e + len;
    if (step > 0 || len == 0) { /* (an empty axis stays empty whatever the step) */
      b = tc__ox_clamp(b, 0, len);
      e = tc__ox_clamp(e, 0, len);
      if (step < 0) e = b;
    } else {
      b = tc__ox_clamp(b, 0, len - 1);
      e = tc__ox_clamp(e, -1, len - 1);
    }
    r[a].begin = b;
    r[a].end = e;
    r[a].step = step;
  }
  return TH_OK;
}

int64_t tc__ox_range_len(const tc__ox_range *r) {
  if (r->step > 0) return r->end > r->begin ? (r->end - r->begin - 1) / r->step + 1 : 0;
  return r->begin > r->end ? (r->begin - r->end - 1) / -r->step + 1 : 0;
}

th_status tc__ox_split_args(tc__ox *x, const Onnx__NodeProto *n, const int64_t *dims, int rank,
                            int *axis, int64_t *sizes, int nout) {
  int64_t a, sp[TC__OX_RANK * 8];
  int cnt;
  th_status rc = tc__ox_attr_i(x, n, "axis", 0, &a);
  if (rc == TH_OK) rc = tc__ox_axis(x, n, a, rank, axis);
  if (rc == TH_OK) rc = tc__ox_list(x, n, "split", 1, 13, sp, TC__OX_RANK * 8, &cnt);
  if (rc != TH_OK) return rc;
  if (cnt == -2) return TH_OK;
  if (nout < 1 || nout > TC__OX_RANK * 8)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "%d outputs", nout);
  int64_t len = dims[*axis], sum = 0;
  if (cnt < 0 && x->opset >= 18) {
    /* opset 18: num_outputs chunks of ceil(len / num_outputs), the last one smaller */
    int64_t num;
    rc = tc__ox_attr_i(x, n, "num_outputs", nout, &num);
    if (rc != TH_OK) return rc;
    if (num != nout)
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "num_outputs is %lld for %d outputs",
                          (long long)num, nout);
    int64_t chunk = (len + nout - 1) / nout;
    for (int i = 0; i < nout; i++) {
      int64_t left = len - chunk * i;
      sizes[i] = left < 0 ? 0 : left < chunk ? left : chunk;
    }
    return TH_OK;
  }
  if (cnt < 0) {
    if (len % nout)
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "length %lld does not split in %d", (long long)len,
                          nout);
    for (int i = 0; i < nout; i++) sizes[i] = len / nout;
    return TH_OK;
  }
  if (cnt != nout)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "split has %d sizes for %d outputs", cnt, nout);
  for (int i = 0; i < nout; i++) {
    if (sp[i] < 0 || sp[i] > len)
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "split size %lld", (long long)sp[i]);
    sizes[i] = sp[i];
    sum += sp[i];
  }
  if (sum != len)
    return tc__ox_nfail(x, n, TH_ERR_INVALID, "split sizes add up to %lld, the axis has %lld",
                        (long long)sum, (long long)len);
  return TH_OK;
}

th_status tc__ox_window_pads_n(tc__ox *x, const Onnx__NodeProto *n, const int64_t *in,
                               const int64_t *k, const int64_t *s, int r, int64_t *pads) {
  char ap[32];
  int64_t p[8];
  int cnt;
  th_status rc = tc__ox_attr_s(x, n, "auto_pad", "NOTSET", ap, sizeof ap);
  if (rc == TH_OK) rc = tc__ox_attr_ints(x, n, "pads", p, 8, &cnt);
  if (rc != TH_OK) return rc;
  if (strcmp(ap, "NOTSET") == 0) {
    if (cnt >= 0 && cnt != 2 * r)
      return tc__ox_nfail(x, n, TH_ERR_INVALID, "pads has %d values (%d for %d-D)", cnt, 2 * r, r);
    for (int i = 0; i < 2 * r; i++) {
      pads[i] = cnt < 0 ? 0 : p[i];
      if (pads[i] < 0 || pads[i] > TC_ONNX_MAX_DIM)
        return tc__ox_nfail(x, n, TH_ERR_INVALID, "pads value %lld", (long long)pads[i]);
    }
    /* ONNX: [x1_begin, x2_begin, x1_end, x2_end] = top, left, bottom, right */
    return TH_OK;
  }
  if (strcmp(ap, "VALID") == 0) {
    memset(pads, 0, 2 * (size_t)r * sizeof *pads);
    return TH_OK;
  }
  if (strcmp(ap, "SAME_UPPER") != 0 && strcmp(ap, "SAME_LOWER") != 0)
    return tc__ox_nfail(x, n, TH_ERR_INVALID,
                        "auto_pad '%s' is not NOTSET, VALID, SAME_UPPER or SAME_LOWER", ap);
  for (int d = 0; d < r; d++) {
    int64_t out = (in[d] + s[d] - 1) / s[d];
    int64_t total = (out - 1) * s[d] + k[d] - in[d];
    if (total < 0) total = 0;
    int64_t small = total / 2, big = total - small;
    int upper = strcmp(ap, "SAME_UPPER") == 0;
    pads[d] = upper ? small : big;
    pads[d + r] = upper ? big : small;
  }
  return TH_OK;
}

th_status tc__ox_window_pads(tc__ox *x, const Onnx__NodeProto *n, const int64_t *in_hw,
                             const int64_t *k, const int64_t *s, int64_t *pads) {
  return tc__ox_window_pads_n(x, n, in_hw, k, s, 2, pads);
}
