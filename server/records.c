/* Tuning records as JSON Lines (records.h): the export's filters, selection and lines, and the
 * import's line-by-line checks, for `tunehub records` (cli_records.c) and GET/POST /records
 * (records_http.c). */
#include "records.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "srv.h"
#include "tc/backend.h"
#include "tc/zoo.h"
#include "th_alloc.h"
#include "th_util.h"
#include "tune_net.h"
#include "tune_space.h"

/* Room for one more element in *arr (*cap elements of size elem, all used): 0, or -1 when out of
 * memory (*arr is then unchanged and still the caller's). */
static int records__grow(void **arr, size_t *cap, size_t elem) {
  size_t n = *cap ? 2 * *cap : 256;
  void *grown = th_realloc(*arr, n * elem);
  if (!grown) return -1;
  *arr = grown;
  *cap = n;
  return 0;
}

/* ---- export ---- */

/* A target's workload keys of one network (the records a --network export keeps). */
typedef struct records__net_keys {
  char target[TH_TARGET_MAX];
  char (*keys)[TH_KEY_MAX];
  int n;
} records__net_keys;

typedef struct records__export {
  const tc_netsrc *net; /* NULL: every workload */
  int batch;
  records__net_keys *targets; /* per target string met, its keys of net */
  int ntargets;
  store_record *recs;
  size_t n, cap;
  th_status rc;
  char err[TH_MSG_MAX];
} records__export;

/* The keys of x->net's tasks on the target a records' target string names, as the tuner lists them
 * (tc_network_tasks), at fp32 and, where the backend builds it, tf32 (whose GEMM keys differ). A
 * target string no backend owns has none. */
static th_status records__keys_for(records__export *x, const char *target_str,
                                   records__net_keys **out) {
  for (int i = 0; i < x->ntargets; i++)
    if (!strcmp(x->targets[i].target, target_str)) {
      *out = &x->targets[i];
      return TH_OK;
    }
  records__net_keys *grown = th_realloc(x->targets, sizeof *grown * (size_t)(x->ntargets + 1));
  if (!grown) return TH_ERR_NOMEM;
  x->targets = grown;
  records__net_keys *k = &x->targets[x->ntargets++];
  memset(k, 0, sizeof *k);
  snprintf(k->target, sizeof k->target, "%s", target_str);
  *out = k;
  tc_backend_target t;
  if (tc_backend_target_parse(target_str, &t) != TH_OK) return TH_OK;
  tc_task *tasks = NULL;
  int nt = 0;
  th_status rc = tc_network_tasks_err(&t, x->net, x->batch, &tasks, &nt, x->err, sizeof x->err);
  int tf32 = rc == TH_OK && tc_backend_has_precision(t.backend, TC_PRECISION_TF32);
  k->keys = rc == TH_OK ? th_malloc(sizeof *k->keys * (size_t)(2 * nt + 1)) : NULL;
  if (rc == TH_OK && !k->keys) rc = TH_ERR_NOMEM;
  for (int i = 0; rc == TH_OK && i < nt; i++)
    snprintf(k->keys[k->n++], TH_KEY_MAX, "%s", tasks[i].key);
  if (rc == TH_OK && tf32) rc = tc_tasks_take_precision(tasks, nt, TC_PRECISION_TF32);
  for (int i = 0; rc == TH_OK && tf32 && i < nt; i++)
    snprintf(k->keys[k->n++], TH_KEY_MAX, "%s", tasks[i].key);
  if (rc != TH_OK && !x->err[0])
    snprintf(x->err, sizeof x->err, "cannot list the tasks of %s at batch %d for %s: %s",
             x->net->name, x->batch, target_str, th_status_str(rc));
  free(tasks);
  return rc;
}

static int records__export_cb(void *ctx, const store_record *r) {
  records__export *x = ctx;
  if (x->net) {
    records__net_keys *k = NULL;
    x->rc = records__keys_for(x, r->target, &k);
    if (x->rc != TH_OK) return 1;
    int found = 0;
    for (int i = 0; i < k->n && !found; i++) found = !strcmp(k->keys[i], r->workload_key);
    if (!found) return 0;
  }
  if (x->n == x->cap && records__grow((void **)&x->recs, &x->cap, sizeof *x->recs)) {
    x->rc = TH_ERR_NOMEM;
    return 1;
  }
  x->recs[x->n++] = *r;
  return 0;
}

/* One record as its line's object; NULL when out of memory or when its stored config is not JSON.
 */
static json_t *records__record_json(const store_record *r) {
  json_t *cfg = json_loads(r->config, JSON_DECODE_ANY, NULL);
  if (!cfg) return NULL;
  return json_pack("{s:s, s:s, s:s, s:o, s:I, s:f, s:f, s:i, s:f, s:s, s:f}", "workload",
                   r->workload_key, "template", r->template_name, "target", r->target, "config",
                   cfg, "config_index", (json_int_t)r->config_index, "cost_mean_s", r->cost_mean_s,
                   "cost_std_s", r->cost_std_s, "error_class", r->error_class, "gflops", r->gflops,
                   "tuner", r->tuner, "created_at", r->created_at);
}

/* Appends one object (consumed; NULL: out of memory) to out as a line. */
static th_status records__put_line(th_buf *out, json_t *o) {
  char *s = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
  th_status rc = s ? th_buf_append(out, s, strlen(s)) : TH_ERR_NOMEM;
  if (rc == TH_OK) rc = th_buf_append(out, "\n", 1);
  free(s);
  json_decref(o);
  return rc;
}

/* f's framework and target checked; *b and *bt (when f->target) as build names them, prefix the
 * framework's targets' start ("cuda ") when there is a framework and no target. */
static th_status records__filter(const records_filter *f, const tc_backend **b,
                                 tc_backend_target *bt, char *prefix, size_t prefix_n, char *err,
                                 size_t n) {
  *b = NULL;
  prefix[0] = 0;
  if (!f->network != !f->batch) {
    snprintf(err, n, "network and batch go together (the tasks of a network at a batch)");
    return TH_ERR_INVALID;
  }
  if (f->network && (f->batch < 1 || f->batch > 4096)) {
    snprintf(err, n, "invalid batch %lld; the batch is a whole number from 1 to 4096",
             (long long)f->batch);
    return TH_ERR_INVALID;
  }
  if (f->framework && !(*b = tc_backend_find(f->framework, err, n))) return TH_ERR_INVALID;
  if (f->target) {
    char arch[64];
    if (!*b) *b = tc_backend_of_target_name(f->target, arch, sizeof arch);
    if (tc_backend_target_init(*b, f->target, bt, err, n) != TH_OK) return TH_ERR_INVALID;
  } else if (*b) {
    /* the framework's targets: "cuda -arch=sm_90" */
    snprintf(prefix, prefix_n, "%s ", tc_backend_name(*b));
  }
  return TH_OK;
}

th_status records_filter_check(const records_filter *f, char *err, size_t n) {
  const tc_backend *b;
  tc_backend_target bt;
  char prefix[32];
  return records__filter(f, &b, &bt, prefix, sizeof prefix, err, n);
}

th_status records_export(store_t *st, const records_filter *f, th_buf *out, size_t *count,
                         char *err, size_t n) {
  const tc_backend *b = NULL;
  tc_backend_target bt;
  char prefix[32];
  err[0] = 0;
  th_status rc = records__filter(f, &b, &bt, prefix, sizeof prefix, err, n);
  if (rc != TH_OK) return rc;
  records__export x;
  memset(&x, 0, sizeof x);
  tune_net net;
  int have_net = 0;
  if (f->network) {
    rc = tune_net_resolve(st, f->network, NULL, &net, x.err, sizeof x.err);
    have_net = rc == TH_OK;
    x.net = have_net ? &net.src : NULL;
    x.batch = (int)f->batch;
  }
  store_record_query q = {f->target ? bt.str : NULL, prefix, f->best};
  if (rc == TH_OK) {
    rc = store_record_select(st, &q, records__export_cb, &x);
    if (rc == TH_OK) rc = x.rc;
    if (rc != TH_OK && !x.err[0])
      snprintf(x.err, sizeof x.err, "%s", rc == x.rc ? th_status_str(rc) : store_errmsg(st));
  }
  json_t *h = NULL;
  if (rc == TH_OK) {
    char when[32];
    th_time_iso(th_now_wall(), when, sizeof when);
    h = json_pack("{s:i, s:s, s:s, s:I, s:b}", "tunehub_records", RECORDS_FORMAT,
                  "compiler_version", TH_VERSION, "exported_at", when, "count", (json_int_t)x.n,
                  "best", f->best);
    if (h && f->framework) json_object_set_new(h, "framework", json_string(tc_backend_name(b)));
    if (h && f->target) json_object_set_new(h, "target", json_string(bt.str));
    if (h && f->network) json_object_set_new(h, "network", json_string(f->network));
    if (h && f->network) json_object_set_new(h, "batch", json_integer(f->batch));
    rc = records__put_line(out, h);
  }
  for (size_t i = 0; rc == TH_OK && i < x.n; i++) {
    json_t *o = records__record_json(&x.recs[i]);
    if (!o) {
      snprintf(x.err, sizeof x.err, "record %lld: its stored config is not JSON: %.200s",
               (long long)x.recs[i].id, x.recs[i].config);
      rc = TH_ERR_CORRUPT;
    } else {
      rc = records__put_line(out, o);
    }
  }
  if (rc == TH_ERR_TOO_LARGE && !x.err[0])
    snprintf(x.err, sizeof x.err,
             "the export is larger than %zu bytes; narrow it with the framework, target, network "
             "and batch, or best",
             out->max);
  if (rc != TH_OK && !err[0]) snprintf(err, n, "%s", x.err[0] ? x.err : th_status_str(rc));
  if (count) *count = x.n;
  for (int i = 0; i < x.ntargets; i++) free(x.targets[i].keys);
  free(x.targets);
  free(x.recs);
  if (have_net) tune_net_free(&net);
  return rc;
}

/* ---- import ---- */

/* Whether name is a template (kernel family) this tunehub has. */
static int records__template_known(const char *name) {
  for (int k = 0; k < TC_KERNEL_COUNT; k++)
    if (!strcmp(tc_kernel_name((tc_kernel)k), name)) return 1;
  return 0;
}

/* The string field `name` of o copied into out (n bytes): 0, or -1 with why in err. */
static int records__field_str(const json_t *o, const char *name, char *out, size_t n, char *err,
                              size_t errn) {
  const char *s = json_string_value(json_object_get(o, name));
  if (!s || !s[0]) {
    snprintf(err, errn, "field '%s' must be a non-empty string", name);
    return -1;
  }
  if (strlen(s) >= n) {
    snprintf(err, errn, "field '%s' is longer than %zu bytes", name, n - 1);
    return -1;
  }
  snprintf(out, n, "%s", s);
  return 0;
}

/* The number field `name` of o into *v, within [lo, hi]: 0, or -1 with why in err. */
static int records__field_num(const json_t *o, const char *name, double lo, double hi, double *v,
                              char *err, size_t errn) {
  const json_t *j = json_object_get(o, name);
  if (!json_is_number(j) || !(json_number_value(j) >= lo && json_number_value(j) <= hi)) {
    snprintf(err, errn, "field '%s' must be a number from %g to %g", name, lo, hi);
    return -1;
  }
  *v = json_number_value(j);
  return 0;
}

/* The whole-number field `name` of o into *v, within [lo, hi]: 0, or -1 with why in err. */
static int records__field_int(const json_t *o, const char *name, int64_t lo, int64_t hi, int64_t *v,
                              char *err, size_t errn) {
  const json_t *j = json_object_get(o, name);
  if (!json_is_integer(j) || json_integer_value(j) < lo || json_integer_value(j) > hi) {
    snprintf(err, errn, "field '%s' must be a whole number from %lld to %lld", name, (long long)lo,
             (long long)hi);
    return -1;
  }
  *v = json_integer_value(j);
  return 0;
}

/* One record line's object into *r: 0, or -1 with the field at fault in err. */
static int records__record_parse(const json_t *o, store_record *r, char *err, size_t n) {
  memset(r, 0, sizeof *r);
  if (!json_is_object(o)) {
    snprintf(err, n, "a record must be a JSON object");
    return -1;
  }
  if (records__field_str(o, "workload", r->workload_key, sizeof r->workload_key, err, n) ||
      records__field_str(o, "template", r->template_name, sizeof r->template_name, err, n) ||
      records__field_str(o, "target", r->target, sizeof r->target, err, n) ||
      records__field_str(o, "tuner", r->tuner, sizeof r->tuner, err, n))
    return -1;
  if (!records__template_known(r->template_name)) {
    snprintf(err, n, "field 'template': unknown template '%s'", r->template_name);
    return -1;
  }
  size_t tl = strlen(r->template_name);
  if (strncmp(r->workload_key, r->template_name, tl) != 0 || r->workload_key[tl] != ' ') {
    snprintf(err, n, "field 'workload': '%.80s' is not a workload of template '%s'",
             r->workload_key, r->template_name);
    return -1;
  }
  /* a target no backend owns, or an arch this build does not know: no build here could apply the
   * record */
  tc_backend_target t;
  th_status trc = tc_backend_target_parse(r->target, &t);
  if (trc == TH_ERR_INVALID) {
    snprintf(err, n, "field 'target': '%s' is no target of a framework (%s)", r->target,
             tc_backend_names());
    return -1;
  } else if (trc != TH_OK) {
    snprintf(err, n, "field 'target': '%s' names an arch this tunehub does not know", r->target);
    return -1;
  }
  const json_t *cfg = json_object_get(o, "config");
  char *text = json_is_array(cfg) ? json_dumps(cfg, JSON_COMPACT) : NULL;
  enum { MAXK = 64 };
  char names[MAXK][24];
  int values[MAXK][TC_KNOB_WIDTH], widths[MAXK];
  int ok = text && strlen(text) < sizeof r->config &&
           tune_config_parse(text, names, values, widths, MAXK) > 0;
  if (ok) snprintf(r->config, sizeof r->config, "%s", text);
  free(text);
  if (!ok) {
    snprintf(err, n,
             "field 'config' must be an array of knobs [[\"name\",\"kind\",[values]], ...] (%s)",
             json_is_array(cfg) ? "this one does not parse" : "it is not an array");
    return -1;
  }
  int64_t idx = 0, ec = 0;
  double gflops = 0;
  if (records__field_int(o, "config_index", 0, INT64_MAX, &idx, err, n) ||
      records__field_num(o, "cost_mean_s", 0, 1e18, &r->cost_mean_s, err, n) ||
      records__field_num(o, "cost_std_s", 0, 1e18, &r->cost_std_s, err, n) ||
      records__field_int(o, "error_class", 0, 8, &ec, err, n) ||
      records__field_num(o, "gflops", 0, 1e18, &gflops, err, n) ||
      records__field_num(o, "created_at", 1, 1e12, &r->created_at, err, n))
    return -1;
  r->config_index = idx;
  r->error_class = (int)ec;
  r->gflops = gflops;
  return 0;
}

/* Line 1: the header. 0 with the record count it announces in *count, or -1 with why in err. */
static int records__header_parse(const json_t *h, int64_t *count, char *err, size_t n) {
  const json_t *v = json_object_get(h, "tunehub_records");
  if (!json_is_object(h) || !json_is_integer(v)) {
    snprintf(err, n,
             "not a tunehub records file: the first line must be the header "
             "{\"tunehub_records\":%d, ...}",
             RECORDS_FORMAT);
    return -1;
  }
  if (json_integer_value(v) != RECORDS_FORMAT) {
    snprintf(err, n,
             "field 'tunehub_records': format version %lld is %s than this tunehub (%s) reads "
             "(version %d)%s",
             (long long)json_integer_value(v),
             json_integer_value(v) > RECORDS_FORMAT ? "newer" : "other", TH_VERSION, RECORDS_FORMAT,
             json_integer_value(v) > RECORDS_FORMAT ? "; import it with a newer tunehub" : "");
    return -1;
  }
  return records__field_int(h, "count", 0, INT64_MAX, count, err, n);
}

th_status records_parse(FILE *f, records_parsed *p, char *err, size_t n) {
  memset(p, 0, sizeof *p);
  size_t cap = 0;
  int64_t count = -1, lineno = 0;
  th_status rc = TH_OK;
  char *line = NULL;
  size_t linecap = 0;
  ssize_t len;
  err[0] = 0;
  while (rc == TH_OK && (len = getline(&line, &linecap, f)) >= 0) {
    lineno++;
    if (len > RECORDS_LINE_MAX) {
      snprintf(err, n, "the line is longer than %d bytes", RECORDS_LINE_MAX);
      rc = TH_ERR_INVALID;
      break;
    }
    if (len > 0 && line[len - 1] == '\n') line[--len] = 0;
    if (len == 0 && lineno > 1) continue; /* a blank line (a trailing one) */
    json_error_t je;
    json_t *o = json_loadb(line, (size_t)len, 0, &je);
    if (!o) {
      snprintf(err, n, "not JSON (%s at column %d)%s", je.text, je.column,
               line[len > 0 ? len - 1 : 0] != '}' ? "; the line is cut short" : "");
      rc = TH_ERR_INVALID;
    } else if (lineno == 1) {
      if (records__header_parse(o, &count, err, n)) rc = TH_ERR_INVALID;
    } else if (p->n == cap && records__grow((void **)&p->recs, &cap, sizeof *p->recs)) {
      snprintf(err, n, "out of memory");
      rc = TH_ERR_NOMEM;
    } else if (records__record_parse(o, &p->recs[p->n], err, n)) {
      rc = TH_ERR_INVALID;
    } else {
      p->n++;
    }
    json_decref(o);
  }
  free(line);
  p->line = lineno;
  if (rc == TH_OK && ferror(f)) {
    snprintf(err, n, "%s", strerror(errno));
    rc = TH_ERR_IO;
  } else if (rc == TH_OK && lineno == 0) {
    snprintf(err, n, "empty: the first line must be the header {\"tunehub_records\":%d, ...}",
             RECORDS_FORMAT);
    rc = TH_ERR_INVALID;
  } else if (rc == TH_OK && (int64_t)p->n != count) {
    snprintf(err, n, "the header says %lld records, the file has %zu (cut short?)",
             (long long)count, p->n);
    rc = TH_ERR_INVALID;
  }
  /* the distinct targets, for the summary (recs does not move any more) */
  size_t tcap = 0;
  for (size_t i = 0; rc == TH_OK && i < p->n; i++) {
    int seen = 0;
    for (int j = 0; j < p->ntargets && !seen; j++) seen = !strcmp(p->targets[j], p->recs[i].target);
    if (seen) continue;
    if ((size_t)p->ntargets == tcap &&
        records__grow((void **)&p->targets, &tcap, sizeof *p->targets)) {
      snprintf(err, n, "out of memory");
      rc = TH_ERR_NOMEM;
    } else {
      p->targets[p->ntargets++] = p->recs[i].target;
    }
  }
  if (rc != TH_OK) {
    int64_t at = p->line;
    records_parsed_free(p);
    p->line = at;
  }
  return rc;
}

void records_parsed_free(records_parsed *p) {
  free(p->targets);
  free(p->recs);
  memset(p, 0, sizeof *p);
}
