/* The backend registry and the public tc_backend_* entry points, which forward to the vtable of
 * backend_int.h; plus what the neutral pipeline shares with both backends: the graph passes and lowering of
 * a network on a target (tc__lowered, also the tuner's tc_network_tasks) and small text helpers. The
 * framework name is compared here and nowhere else. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>

#include "backend_int.h"

static const tc_backend *const tc__backends[] = {&tc__backend_llvm, &tc__backend_cuda};
#define TC__NBACKENDS ((int)(sizeof tc__backends / sizeof tc__backends[0]))

_Static_assert(sizeof(tc__backends) / sizeof(tc__backends[0]) == 2, "update tc_backend_names()");

const char *tc_backend_names(void) {
  return "llvm, cuda";
}

const tc_backend *tc_backend_find(const char *framework, char *err, size_t errlen) {
  for (int i = 0; framework && i < TC__NBACKENDS; i++)
    if (strcmp(framework, tc__backends[i]->name) == 0) return tc__backends[i];
  tc__seterr(err, errlen, "unknown framework '%s'; valid frameworks: %s", framework ? framework : "(none)",
             tc_backend_names());
  return NULL;
}

const tc_backend *tc_backend_default(void) {
  return &tc__backend_llvm;
}

const tc_backend *tc_backend_at(int i) {
  return i >= 0 && i < TC__NBACKENDS ? tc__backends[i] : NULL;
}

const char *tc_backend_name(const tc_backend *b) {
  return b ? b->name : "";
}

_Static_assert(TC__NBACKENDS == TC_BACKEND_COUNT, "TC_BACKEND_COUNT counts tc__backends");

int tc_backend_index(const tc_backend *b) {
  for (int i = 0; b && i < TC__NBACKENDS; i++)
    if (tc__backends[i] == b) return i;
  return -1;
}

/* ---- target names --------------------------------------------------------------------------- */

const char *tc_backend_target_name_at(const tc_backend *b, int i) {
  return b && i >= 0 ? b->target_name_at(i) : NULL;
}

const char *tc_backend_target_hint(const tc_backend *b) {
  return b ? b->target_hint : "";
}

/* The backend whose name opens s as a word ("cuda -arch=sm_80", "cuda"), or NULL. */
static const tc_backend *tc__backend_of_str(const char *s) {
  for (int i = 0; i < TC__NBACKENDS; i++) {
    size_t n = strlen(tc__backends[i]->name);
    if (strncmp(s, tc__backends[i]->name, n) == 0 && (s[n] == '\0' || s[n] == ' '))
      return tc__backends[i];
  }
  return NULL;
}

const char *tc_backend_target_arch(const char *target_str, char *buf, size_t n) {
  if (!buf || !n) return NULL;
  buf[0] = '\0';
  const tc_backend *b = target_str ? tc__backend_of_str(target_str) : NULL;
  const char *a = b ? strstr(target_str, b->arch_flag) : NULL;
  if (a) {
    a += strlen(b->arch_flag);
    snprintf(buf, n, "%.*s", (int)strcspn(a, " "), a);
  }
  return buf[0] ? buf : NULL;
}

const tc_backend *tc_backend_of_target_name(const char *name, char *arch, size_t n) {
  if (arch && n) arch[0] = '\0';
  if (!name) return NULL;
  const tc_backend *b = tc__backend_of_str(name);
  if (b) {
    tc_backend_target_arch(name, arch, n);
    return b;
  }
  for (int i = 0; !b && i < TC__NBACKENDS; i++)
    if (tc__backends[i]->claims_arch && tc__backends[i]->claims_arch(name)) b = tc__backends[i];
  if (arch && n) snprintf(arch, n, "%s", name);
  return b ? b : tc_backend_default();
}

/* ---- precisions ----------------------------------------------------------------------------- */

int tc_backend_has_precision(const tc_backend *b, tc_precision p) {
  if (!b || (int)p < 0 || p >= TC_PRECISION_COUNT) return 0;
  return p == TC_PRECISION_FP32 || (b->takes_precision && b->takes_precision(NULL, p, NULL, 0));
}

th_status tc_backend_precision_check(const tc_backend *b, const char *target_str, tc_precision p,
                                     char *err, size_t errlen) {
  if (!b || (int)p < 0 || p >= TC_PRECISION_COUNT) return TH_ERR_INVALID;
  if (p == TC_PRECISION_FP32) return TH_OK;
  /* "precision tf32 needs the cuda framework; llvm takes fp32" */
  if (!tc_backend_has_precision(b, p)) {
    char who[128] = "", has[128] = "";
    size_t wl = 0, hl = 0;
    for (int i = 0; i < TC__NBACKENDS && wl < sizeof who; i++)
      if (tc_backend_has_precision(tc__backends[i], p))
        wl += (size_t)snprintf(who + wl, sizeof who - wl, "%s%s", wl ? " or " : "",
                               tc__backends[i]->name);
    for (int q = 0; q < TC_PRECISION_COUNT && hl < sizeof has; q++)
      if (tc_backend_has_precision(b, (tc_precision)q))
        hl += (size_t)snprintf(has + hl, sizeof has - hl, "%s%s", hl ? ", " : "",
                               tc_precision_name(q));
    tc__seterr(err, errlen, "precision %s needs the %s framework; %s takes %s",
               tc_precision_name(p), who, b->name, has);
    return TH_ERR_INVALID;
  }
  if (target_str && !b->takes_precision(target_str, p, err, errlen)) return TH_ERR_INVALID;
  return TH_OK;
}

th_status tc_backend_target_init(const tc_backend *b, const char *arch, tc_backend_target *t, char *err,
                                 size_t errlen) {
  if (!b || !t) return TH_ERR_INVALID;
  tc_backend_target nt;
  memset(&nt, 0, sizeof nt);
  nt.backend = b;
  th_status rc = b->target_init(arch, &nt, err, errlen);
  if (rc == TH_OK) *t = nt;
  return rc;
}

th_status tc_backend_target_parse(const char *target_str, tc_backend_target *t) {
  if (!target_str || !t) return TH_ERR_INVALID;
  for (int i = 0; i < TC__NBACKENDS; i++) {
    const tc_backend *b = tc__backends[i];
    size_t n = strlen(b->name); /* target strings start with the framework: "cuda -arch=sm_80" */
    if (strncmp(target_str, b->name, n) != 0 || (target_str[n] != '\0' && target_str[n] != ' ')) continue;
    tc_backend_target nt;
    memset(&nt, 0, sizeof nt);
    nt.backend = b;
    th_status rc = b->target_parse(target_str, &nt);
    if (rc == TH_OK) *t = nt;
    return rc;
  }
  return TH_ERR_INVALID;
}

int tc_backend_has_device(const tc_backend *b, char *why, size_t whylen) {
  if (why && whylen) why[0] = '\0';
  return b && b->has_device(why, whylen);
}

int tc_backend_target_runs_here(const tc_backend_target *t, char *why, size_t whylen) {
  if (why && whylen) why[0] = '\0';
  return t && t->backend && (!t->backend->runs_here || t->backend->runs_here(t, why, whylen));
}

th_status tc_backend_target_auto(const tc_backend *b, const tc_client_machine *m, char *name,
                                 size_t n, char *reason, size_t rn, char *err, size_t errlen) {
  if (err && errlen) err[0] = '\0';
  if (n) name[0] = '\0';
  if (rn) reason[0] = '\0';
  if (!b || !m || !b->target_auto) {
    tc__seterr(err, errlen, "framework %s cannot pick a target for a client",
               b ? b->name : "(none)");
    return TH_ERR_UNSUPPORTED;
  }
  return b->target_auto(m, name, n, reason, rn, err, errlen);
}

int tc_backend_can_build(const tc_backend *b, char *why, size_t whylen) {
  if (why && whylen) why[0] = '\0';
  return b && b->can_build(why, whylen);
}

th_status tc_backend_device(const tc_backend *b, tc_device *out, char *err, size_t errlen) {
  if (!b || !out) return TH_ERR_INVALID;
  return b->device(out, err, errlen);
}

int tc_backend_supports_op(const tc_backend_target *t, tc_kernel k) {
  return t && t->backend && k >= 0 && k < TC_KERNEL_COUNT && t->backend->supports_op(k);
}

th_status tc_backend_space(const tc_backend_target *t, const tc_workload *wl, tc_space *out) {
  if (!t || !t->backend || !wl || !out) return TH_ERR_INVALID;
  if (!t->backend->supports_op(wl->kernel)) return TH_ERR_UNSUPPORTED;
  return t->backend->space(t, wl, out);
}

th_status tc_backend_fallback(const tc_backend_target *t, const tc_workload *wl, const tc_space *s,
                              tc_config *out) {
  if (!t || !t->backend || !wl || !s || !out) return TH_ERR_INVALID;
  return t->backend->fallback(t, wl, s, out);
}

th_status tc_backend_valid(const tc_backend_target *t, const tc_workload *wl, const tc_space *s,
                           const tc_config *cfg, char *why, size_t whylen) {
  if (!t || !t->backend || !wl || !s || !cfg) return TH_ERR_INVALID;
  return t->backend->valid(t, wl, s, cfg, why, whylen);
}

th_status tc_backend_lower(const tc_backend_target *t, const tc_workload *wl, const tc_config *cfg,
                           th_arena *arena, const tc_stmt **body) {
  if (!t || !t->backend || !wl || !cfg || !arena || !body) return TH_ERR_INVALID;
  return t->backend->lower(t, wl, cfg, arena, body);
}

th_status tc_backend_pack(const tc_backend_target *t, const tc_workload *wl, const tc_config *cfg,
                          int p[TC_PACK_NPARAMS], int64_t *packed_floats) {
  if (!t || !t->backend || !wl || !cfg || !p || !packed_floats) return TH_ERR_INVALID;
  memset(p, 0, sizeof(int) * TC_PACK_NPARAMS);
  *packed_floats = 0;
  if (!t->backend->pack) return TH_OK; /* weights stay in torch's layout */
  tc__kernel k;
  memset(&k, 0, sizeof k);
  k.wl = *wl;
  k.cfg = *cfg;
  th_status rc = t->backend->pack(t, &k, p);
  if (rc == TH_OK) rc = t->backend->weight_floats(t, &k, NULL, packed_floats);
  return rc;
}

tc_measure_kind tc_backend_measure_kind(const tc_backend *b) {
  return b ? b->measure_kind : TC_MEASURE_LIBRARY;
}

th_status tc_backend_prepare(const tc_backend *b, char *err, size_t errlen) {
  if (!b) return TH_ERR_INVALID;
  return b->prepare ? b->prepare(err, errlen) : TH_OK;
}

th_status tc_backend_compile(const tc_backend_target *t, int n, const tc_workload *wls, const tc_config *cfgs,
                             const char *const *fn_names, const char *path, char *err, size_t errlen) {
  if (err && errlen) err[0] = '\0';
  if (!t || !t->backend || !path || n < 0 || (n > 0 && (!wls || !cfgs || !fn_names))) return TH_ERR_INVALID;
  return t->backend->compile(t, n, wls, cfgs, fn_names, path, err, errlen);
}

void tc_measure_opts_default(tc_measure_opts *o) {
  *o = (tc_measure_opts){.number = 1, .repeat = 10, .timeout_s = 10, .rtol = 1e-4, .atol = 1e-5, .seed = 1,
                         .check = 1, .cache_flush = 1};
}

th_status tc_backend_measure(const tc_backend_target *t, const tc_workload *wl, const tc_config *cfg,
                             const tc_measure_opts *o, tc_measure_result *r) {
  if (!t || !t->backend || !wl || (!cfg && !(o && o->reference_only)) || !o || !r)
    return TH_ERR_INVALID;
  if (!t->backend->measure) {
    memset(r, 0, sizeof *r);
    snprintf(r->msg, sizeof r->msg, "%s candidates are timed from their library", t->backend->name);
    return TH_ERR_UNSUPPORTED;
  }
  return t->backend->measure(t, wl, cfg, o, r);
}

/* ---- the graph on a target --------------------------------------------------------------------------- */

th_status tc__lowered(const tc_backend_target *t, const tc_netsrc *net, int batch, int h, int w,
                      int weights, int fuse_off, tc_graph **gout, tc_call **calls, int *ncalls,
                      int64_t *ws, char *err, size_t errlen) {
  tc_graph *g = NULL;
  th_status rc = tc_network_build(net, batch, h, w, weights, &g, err, errlen);
  if (rc != TH_OK) return rc;
  rc = tc_pass_fold_bn(g);
  if (rc == TH_OK) rc = tc_pass_fuse_groups(g, TC_FUSE_ALL & ~fuse_off);
  if (rc == TH_OK && t->backend->graph_pass) rc = t->backend->graph_pass(t, g);
  if (rc == TH_OK) rc = tc_pass_plan_memory(g, ws);
  if (rc == TH_OK) rc = tc_lower(g, calls, ncalls);
  if (rc != TH_OK) {
    tc__seterr(err, errlen, "%s: %s", net->name, g->err[0] ? g->err : th_status_str(rc));
    tc_graph_free(g);
    return rc;
  }
  *gout = g;
  return TH_OK;
}

/* The compiler's own allowance in a build (LLVM's modules and the emitted code): measured at 150-300 MiB for the
 * zoo's CNNs; 512 MiB leaves room for the transformers. */
#define TC__BUILD_ALLOWANCE ((int64_t)512 << 20)

th_status tc_network_footprint(const tc_backend_target *t, const tc_netsrc *net, int batch, tc_footprint *out,
                               char *err, size_t errlen) {
  if (!t || !t->backend || !net || !net->name || !out) return TH_ERR_INVALID;
  tc_graph *g = NULL;
  tc_call *calls = NULL;
  int ncalls = 0;
  int64_t ws = 0;
  th_status rc = tc__lowered(t, net, batch, 0, 0, 0, 0, &g, &calls, &ncalls, &ws, err, errlen);
  if (rc != TH_OK) return rc;
  int64_t params = 0, joined = 0; /* composite parameters (joined layers) are not in params.bin */
  for (int i = 0; i < g->nparams; i++)
    *(g->params[i].nparts ? &joined : &params) += g->params[i].numel * 4;
  out->params_bytes = params;
  out->workspace_bytes = ws * 4;
  /* builder: params.bin in memory and the graph's weights (with the composites' copies); timing:
   * params.bin read, weights packed, workspace */
  out->peak_bytes = 4 * params + joined + ws * 4 + TC__BUILD_ALLOWANCE;
  free(calls);
  tc_graph_free(g);
  return TH_OK;
}

th_status tc_network_tasks(const tc_backend_target *t, const tc_netsrc *net, int batch, tc_task **tasks,
                           int *n) {
  return tc_network_tasks_err(t, net, batch, tasks, n, NULL, 0);
}

th_status tc_network_tasks_err(const tc_backend_target *t, const tc_netsrc *net, int batch, tc_task **tasks,
                               int *n, char *err, size_t errlen) {
  if (!t || !t->backend || !net || !net->name || !tasks || !n) return TH_ERR_INVALID;
  tc_graph *g = NULL;
  tc_call *calls = NULL;
  int ncalls = 0;
  int64_t ws = 0;
  th_status rc = tc__lowered(t, net, batch, 0, 0, 0, 0, &g, &calls, &ncalls, &ws, err, errlen);
  if (rc != TH_OK) return rc;
  tc_task *ts = calloc((size_t)(ncalls ? ncalls : 1), sizeof *ts);
  int nt = 0;
  if (!ts) rc = TH_ERR_NOMEM;
  for (int i = 0; rc == TH_OK && i < ncalls; i++) {
    char key[192];
    rc = tc_workload_key(&calls[i].wl, key, sizeof key);
    if (rc != TH_OK) break;
    int found = -1;
    for (int k = 0; k < nt && found < 0; k++)
      if (strcmp(ts[k].key, key) == 0) found = k;
    if (found >= 0) {
      ts[found].count++;
      continue;
    }
    ts[nt].wl = calls[i].wl;
    memcpy(ts[nt].key, key, sizeof key);
    ts[nt].flops = tc_workload_flops(&calls[i].wl);
    ts[nt].count = 1;
    nt++;
  }
  free(calls);
  tc_graph_free(g);
  if (rc != TH_OK) {
    free(ts);
    return rc;
  }
  *tasks = ts;
  *n = nt;
  return TH_OK;
}

th_status tc_tasks_take_precision(tc_task *tasks, int n, tc_precision p) {
  th_status rc = TH_OK;
  for (int i = 0; rc == TH_OK && i < n; i++)
    if (tc_workload_take_precision(&tasks[i].wl, p)) rc = tc_workload_key(&tasks[i].wl, tasks[i].key, sizeof tasks[i].key);
  return rc;
}

/* ---- helpers ------------------------------------------------------------------------------------------ */

void tc__seterr(char *err, size_t errlen, const char *fmt, ...) {
  if (!err || !errlen) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

void tc__cstr(th_buf *b, const char *s) {
  if (!s) {
    th_buf_appendf(b, "NULL");
    return;
  }
  th_buf_appendf(b, "\"");
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') th_buf_appendf(b, "\\%c", *s);
    else if ((unsigned char)*s < 32) th_buf_appendf(b, "\\%03o", (unsigned char)*s);
    else th_buf_appendf(b, "%c", *s);
  }
  th_buf_appendf(b, "\"");
}

th_status tc__write(const char *dir, const char *name, const void *data, size_t n, char *path, size_t pathlen,
                    char *err, size_t errlen) {
  int k = snprintf(path, pathlen, "%s/%s", dir, name);
  if (k < 0 || (size_t)k >= pathlen) {
    tc__seterr(err, errlen, "the path of %s in %s is too long", name, dir);
    return TH_ERR_TOO_LARGE;
  }
  FILE *f = fopen(path, "wbe");
  if (!f) {
    tc__seterr(err, errlen, "cannot create %s: %s", path, strerror(errno));
    return TH_ERR_IO;
  }
  size_t w = fwrite(data, 1, n, f);
  int werr = w == n ? 0 : errno;
  int rc = fclose(f); /* a full disk often shows only here, when the buffer is flushed */
  if (w != n || rc != 0) {
    tc__seterr(err, errlen, "cannot write %s: %s", path, strerror(werr ? werr : errno));
    return TH_ERR_IO;
  }
  return TH_OK;
}
