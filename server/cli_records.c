/* `tunehub records export` and `tunehub records import`: tuning records carried from one store to
 * another as JSON Lines, so that a machine without a GPU (or without the CPU a store was tuned on)
 * builds with the configs that a machine with one measured. Line 1 is a header
 * ({"tunehub_records":1, ..., "count":N}), then one record a line; an import checks every line
 * before it stores anything, and storing the same file twice adds nothing (store_record_import). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tc/backend.h"
#include "cli.h"
#include "srv.h"
#include "store.h"
#include "th_alloc.h"
#include "th_util.h"
#include "tune_net.h"
#include "tune_space.h"
#include "tc/zoo.h"

/* The format version this tunehub writes and the newest it reads. */
#define CLI_RECORDS_FORMAT 1
/* The longest record line an import reads (a record's config is at most 1 KiB). */
#define CLI_RECORDS_LINE_MAX 65536

static const char cli__export_usage[] =
    "usage: tunehub records export [--data DIR] [--db URL] [--framework llvm|cuda] [--target NAME] "
    "[--network NET --batch B] [--best] [-o FILE]";
static const char cli__import_usage[] =
    "usage: tunehub records import FILE [--data DIR] [--db URL]";

/* Room for one more element in *arr (*cap elements of size elem, all used): 0, or -1 when out of
 * memory (*arr is then unchanged and still the caller's). */
static int cli__grow(void **arr, size_t *cap, size_t elem) {
  size_t n = *cap ? 2 * *cap : 256;
  void *grown = th_realloc(*arr, n * elem);
  if (!grown) return -1;
  *arr = grown;
  *cap = n;
  return 0;
}

/* ---- export ---- */

/* A target's workload keys of one network (the records a --network export keeps). */
typedef struct cli__net_keys {
  char target[TH_TARGET_MAX];
  char (*keys)[TH_KEY_MAX];
  int n;
} cli__net_keys;

typedef struct cli__export {
  const tc_netsrc *net; /* NULL: every workload */
  int batch;
  cli__net_keys *targets; /* per target string met, its keys of net */
  int ntargets;
  store_record *recs;
  size_t n, cap;
  th_status rc;
  char err[TH_MSG_MAX];
} cli__export;

/* The keys of x->net's tasks on the target a records' target string names, as the tuner lists them
 * (tc_network_tasks), at fp32 and, where the backend builds it, tf32 (whose GEMM keys differ). A
 * target string no backend owns has none. */
static th_status cli__keys_for(cli__export *x, const char *target_str, cli__net_keys **out) {
  for (int i = 0; i < x->ntargets; i++)
    if (!strcmp(x->targets[i].target, target_str)) {
      *out = &x->targets[i];
      return TH_OK;
    }
  cli__net_keys *grown = th_realloc(x->targets, sizeof *grown * (size_t)(x->ntargets + 1));
  if (!grown) return TH_ERR_NOMEM;
  x->targets = grown;
  cli__net_keys *k = &x->targets[x->ntargets++];
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

static int cli__export_cb(void *ctx, const store_record *r) {
  cli__export *x = ctx;
  if (x->net) {
    cli__net_keys *k = NULL;
    x->rc = cli__keys_for(x, r->target, &k);
    if (x->rc != TH_OK) return 1;
    int found = 0;
    for (int i = 0; i < k->n && !found; i++) found = !strcmp(k->keys[i], r->workload_key);
    if (!found) return 0;
  }
  if (x->n == x->cap && cli__grow((void **)&x->recs, &x->cap, sizeof *x->recs)) {
    x->rc = TH_ERR_NOMEM;
    return 1;
  }
  x->recs[x->n++] = *r;
  return 0;
}

/* One record as its line's object; NULL when out of memory or when its stored config is not JSON.
 */
static json_t *cli__record_json(const store_record *r) {
  json_t *cfg = json_loads(r->config, JSON_DECODE_ANY, NULL);
  if (!cfg) return NULL;
  return json_pack("{s:s, s:s, s:s, s:o, s:I, s:f, s:f, s:i, s:f, s:s, s:f}", "workload",
                   r->workload_key, "template", r->template_name, "target", r->target, "config",
                   cfg, "config_index", (json_int_t)r->config_index, "cost_mean_s", r->cost_mean_s,
                   "cost_std_s", r->cost_std_s, "error_class", r->error_class, "gflops", r->gflops,
                   "tuner", r->tuner, "created_at", r->created_at);
}

/* Writes one object as a line of f; -1 when it cannot. */
static int cli__put_line(FILE *f, json_t *o) {
  char *s = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
  int rc = s && fprintf(f, "%s\n", s) >= 0 ? 0 : -1;
  free(s);
  json_decref(o);
  return rc;
}

static int cli__records_export(int argc, char **argv) {
  if (cli_help(argc, argv, cli__export_usage)) return 0;
  const char *data = "./data", *db_flag = NULL, *db = NULL, *framework = NULL, *target_name = NULL,
             *network = NULL, *batch_s = NULL, *out = NULL;
  int best = 0;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    int more = i + 1 < argc;
    if (!strcmp(a, "--data") && more)
      data = argv[++i];
    else if (!strcmp(a, "--db") && more)
      db_flag = argv[++i];
    else if (!strcmp(a, "--framework") && more)
      framework = argv[++i];
    else if (!strcmp(a, "--target") && more)
      target_name = argv[++i];
    else if (!strcmp(a, "--network") && more)
      network = argv[++i];
    else if (!strcmp(a, "--batch") && more)
      batch_s = argv[++i];
    else if (!strcmp(a, "-o") && more)
      out = argv[++i];
    else if (!strcmp(a, "--best"))
      best = 1;
    else {
      fprintf(
          stderr,
          "tunehub records export: unknown argument '%s'; valid: --data DIR --db URL --framework "
          "llvm|cuda --target NAME --network NET --batch B --best -o FILE\n",
          a);
      return 2;
    }
  }
  if (cli_db("records export", db_flag, &db) != 0) return 2;
  if (!network != !batch_s) {
    fprintf(
        stderr,
        "tunehub records export: --network and --batch go together (the tasks of a network at a "
        "batch)\n");
    return 2;
  }
  int64_t batch = 0;
  if (batch_s && (th_parse_i64(batch_s, &batch) != TH_OK || batch < 1 || batch > 4096)) {
    fprintf(
        stderr,
        "tunehub records export: invalid batch '%s'; the batch is a whole number from 1 to 4096\n",
        batch_s);
    return 2;
  }
  /* the framework and target as build names them, checked before a store is read */
  const tc_backend *b = NULL;
  char terr[TH_MSG_MAX] = "", prefix[32] = "";
  if (framework && !(b = tc_backend_find(framework, terr, sizeof terr))) {
    fprintf(stderr, "tunehub records export: %s\n", terr);
    return 2;
  }
  tc_backend_target bt;
  if (target_name) {
    char arch[64];
    if (!b) b = tc_backend_of_target_name(target_name, arch, sizeof arch);
    if (tc_backend_target_init(b, target_name, &bt, terr, sizeof terr) != TH_OK) {
      fprintf(stderr, "tunehub records export: %s\n", terr);
      return 2;
    }
  } else if (b) {
    /* the framework's targets: "cuda -arch=sm_90" */
    snprintf(prefix, sizeof prefix, "%s ", tc_backend_name(b));
  }
  if (cli_store_needed("records export", db, data) < 0) return 1;
  store_t *st = cli_store_open("records export", db, data);
  if (!st) return 1;
  cli__export x;
  memset(&x, 0, sizeof x);
  tune_net net;
  int have_net = 0;
  int code = 0;
  if (network) {
    th_status nrc = tune_net_resolve(st, network, NULL, &net, x.err, sizeof x.err);
    if (nrc != TH_OK) {
      fprintf(stderr, "tunehub records export: %s\n", x.err);
      code = nrc == TH_ERR_NOT_FOUND ? 2 : 1;
    }
    have_net = nrc == TH_OK;
    x.net = have_net ? &net.src : NULL;
    x.batch = (int)batch;
  }
  store_record_query q = {target_name ? bt.str : NULL, prefix, best};
  if (code == 0) {
    th_status rc = store_record_select(st, &q, cli__export_cb, &x);
    if (rc == TH_OK) rc = x.rc;
    if (rc != TH_OK) {
      fprintf(stderr, "tunehub records export: %s\n",
              x.err[0]     ? x.err
              : rc == x.rc ? th_status_str(rc)
                           : store_errmsg(st));
      code = 1;
    }
  }
  FILE *f = code == 0 ? (out ? fopen(out, "w") : stdout) : NULL;
  if (code == 0 && !f) {
    fprintf(stderr, "tunehub records export: cannot write %s: %s\n", out, strerror(errno));
    code = 1;
  }
  if (code == 0) {
    char when[32];
    th_time_iso(th_now_wall(), when, sizeof when);
    json_t *h = json_pack("{s:i, s:s, s:s, s:I, s:b}", "tunehub_records", CLI_RECORDS_FORMAT,
                          "compiler_version", TH_VERSION, "exported_at", when, "count",
                          (json_int_t)x.n, "best", best);
    if (h && framework) json_object_set_new(h, "framework", json_string(tc_backend_name(b)));
    if (h && target_name) json_object_set_new(h, "target", json_string(bt.str));
    if (h && network) json_object_set_new(h, "network", json_string(network));
    if (h && network) json_object_set_new(h, "batch", json_integer(batch));
    int bad = cli__put_line(f, h);
    for (size_t i = 0; !bad && i < x.n; i++) {
      json_t *o = cli__record_json(&x.recs[i]);
      if (!o)
        fprintf(stderr,
                "tunehub records export: record %lld: its stored config is not JSON: %.200s\n",
                (long long)x.recs[i].id, x.recs[i].config);
      bad = o ? cli__put_line(f, o) : -1;
    }
    if (fflush(f) != 0) bad = 1;
    if (f != stdout && fclose(f) != 0) bad = 1;
    if (bad) {
      fprintf(stderr, "tunehub records export: cannot write %s\n", out ? out : "the records");
      if (out) remove(out);
      code = 1;
    } else if (out) {
      fprintf(stderr, "exported %zu records to %s\n", x.n, out);
    }
  }
  for (int i = 0; i < x.ntargets; i++) free(x.targets[i].keys);
  free(x.targets);
  free(x.recs);
  if (have_net) tune_net_free(&net);
  store_close(st);
  return code;
}

/* ---- import ---- */

/* Whether name is a template (kernel family) this tunehub has. */
static int cli__template_known(const char *name) {
  for (int k = 0; k < TC_KERNEL_COUNT; k++)
    if (!strcmp(tc_kernel_name((tc_kernel)k), name)) return 1;
  return 0;
}

/* The string field `name` of o copied into out (n bytes): 0, or -1 with why in err. */
static int cli__field_str(const json_t *o, const char *name, char *out, size_t n, char *err,
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
static int cli__field_num(const json_t *o, const char *name, double lo, double hi, double *v,
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
static int cli__field_int(const json_t *o, const char *name, int64_t lo, int64_t hi, int64_t *v,
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
static int cli__record_parse(const json_t *o, store_record *r, char *err, size_t n) {
  memset(r, 0, sizeof *r);
  if (!json_is_object(o)) {
    snprintf(err, n, "a record must be a JSON object");
    return -1;
  }
  if (cli__field_str(o, "workload", r->workload_key, sizeof r->workload_key, err, n) ||
      cli__field_str(o, "template", r->template_name, sizeof r->template_name, err, n) ||
      cli__field_str(o, "target", r->target, sizeof r->target, err, n) ||
      cli__field_str(o, "tuner", r->tuner, sizeof r->tuner, err, n))
    return -1;
  if (!cli__template_known(r->template_name)) {
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
  if (cli__field_int(o, "config_index", 0, INT64_MAX, &idx, err, n) ||
      cli__field_num(o, "cost_mean_s", 0, 1e18, &r->cost_mean_s, err, n) ||
      cli__field_num(o, "cost_std_s", 0, 1e18, &r->cost_std_s, err, n) ||
      cli__field_int(o, "error_class", 0, 8, &ec, err, n) ||
      cli__field_num(o, "gflops", 0, 1e18, &gflops, err, n) ||
      cli__field_num(o, "created_at", 1, 1e12, &r->created_at, err, n))
    return -1;
  r->config_index = idx;
  r->error_class = (int)ec;
  r->gflops = gflops;
  return 0;
}

/* Line 1: the header. 0 with the record count it announces in *count, or -1 with why in err. */
static int cli__header_parse(const json_t *h, int64_t *count, char *err, size_t n) {
  const json_t *v = json_object_get(h, "tunehub_records");
  if (!json_is_object(h) || !json_is_integer(v)) {
    snprintf(err, n,
             "not a tunehub records file: the first line must be the header "
             "{\"tunehub_records\":%d, ...}",
             CLI_RECORDS_FORMAT);
    return -1;
  }
  if (json_integer_value(v) != CLI_RECORDS_FORMAT) {
    snprintf(err, n,
             "field 'tunehub_records': format version %lld is %s than this tunehub (%s) reads "
             "(version %d)%s",
             (long long)json_integer_value(v),
             json_integer_value(v) > CLI_RECORDS_FORMAT ? "newer" : "other", TH_VERSION,
             CLI_RECORDS_FORMAT,
             json_integer_value(v) > CLI_RECORDS_FORMAT ? "; import it with a newer tunehub" : "");
    return -1;
  }
  return cli__field_int(h, "count", 0, INT64_MAX, count, err, n);
}

static int cli__records_import(int argc, char **argv) {
  if (cli_help(argc, argv, cli__import_usage)) return 0;
  const char *data = "./data", *db_flag = NULL, *db = NULL, *path = NULL;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--data") && i + 1 < argc)
      data = argv[++i];
    else if (!strcmp(argv[i], "--db") && i + 1 < argc)
      db_flag = argv[++i];
    else if ((argv[i][0] != '-' || !argv[i][1]) && !path)
      path = argv[i];
    else {
      fprintf(stderr, "%s\n", cli__import_usage);
      return 2;
    }
  }
  if (!path) {
    fprintf(stderr, "%s\n", cli__import_usage);
    return 2;
  }
  if (cli_db("records import", db_flag, &db) != 0) return 2;
  FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
  if (!f) {
    fprintf(stderr, "tunehub records import: cannot read %s: %s\n", path, strerror(errno));
    return 1;
  }
  /* every line is checked before the store is opened: a bad file stores nothing and creates no
   * store */
  store_record *recs = NULL;
  size_t nrec = 0, cap = 0;
  int64_t count = -1, lineno = 0;
  char err[TH_MSG_MAX] = "";
  const char **targets =
      NULL; /* the distinct targets, pointing into recs' (kept until recs is freed) */
  int ntargets = 0, code = 0;
  char *line = NULL;
  size_t linecap = 0;
  ssize_t len;
  while (code == 0 && (len = getline(&line, &linecap, f)) >= 0) {
    lineno++;
    if (len > CLI_RECORDS_LINE_MAX) {
      snprintf(err, sizeof err, "the line is longer than %d bytes", CLI_RECORDS_LINE_MAX);
      code = 2;
      break;
    }
    if (len > 0 && line[len - 1] == '\n') line[--len] = 0;
    if (len == 0 && lineno > 1) continue; /* a blank line (a trailing one) */
    json_error_t je;
    json_t *o = json_loadb(line, (size_t)len, 0, &je);
    if (!o) {
      snprintf(err, sizeof err, "not JSON (%s at column %d)%s", je.text, je.column,
               line[len > 0 ? len - 1 : 0] != '}' ? "; the line is cut short" : "");
      code = 2;
    } else if (lineno == 1) {
      if (cli__header_parse(o, &count, err, sizeof err)) code = 2;
    } else if (nrec == cap && cli__grow((void **)&recs, &cap, sizeof *recs)) {
      snprintf(err, sizeof err, "out of memory");
      code = 1;
    } else if (cli__record_parse(o, &recs[nrec], err, sizeof err)) {
      code = 2;
    } else {
      nrec++;
    }
    json_decref(o);
  }
  if (code == 0 && ferror(f)) {
    fprintf(stderr, "tunehub records import: cannot read %s: %s\n", path, strerror(errno));
    code = 1;
  } else if (code != 0) {
    fprintf(stderr, "tunehub records import: %s line %lld: %s; nothing was imported\n", path,
            (long long)lineno, err);
  } else if (lineno == 0) {
    fprintf(stderr, "tunehub records import: %s is empty; nothing was imported\n", path);
    code = 2;
  } else if ((int64_t)nrec != count) {
    fprintf(
        stderr,
        "tunehub records import: %s line %lld: the header says %lld records, the file has %zu (cut "
        "short?); nothing was imported\n",
        path, (long long)lineno, (long long)count, nrec);
    code = 2;
  }
  free(line);
  if (f != stdin) fclose(f);
  /* the distinct targets, for the summary (recs does not move any more) */
  size_t tcap = 0;
  for (size_t i = 0; code == 0 && i < nrec; i++) {
    int seen = 0;
    for (int j = 0; j < ntargets && !seen; j++) seen = !strcmp(targets[j], recs[i].target);
    if (seen) continue;
    if ((size_t)ntargets == tcap && cli__grow((void **)&targets, &tcap, sizeof *targets)) {
      fprintf(stderr, "tunehub records import: out of memory\n");
      code = 1;
    } else {
      targets[ntargets++] = recs[i].target;
    }
  }
  store_t *st = code == 0 ? cli_store_open("records import", db, data) : NULL;
  if (code == 0 && !st) code = 1;
  int64_t added = 0;
  if (code == 0 && store_record_import(st, recs, nrec, &added) != TH_OK) {
    fprintf(stderr, "tunehub records import: %s; nothing was imported\n", store_errmsg(st));
    code = 1;
  }
  if (code == 0)
    printf("imported %lld records (%lld already present) for %d target%s\n", (long long)added,
           (long long)((int64_t)nrec - added), ntargets, ntargets == 1 ? "" : "s");
  store_close(st);
  free(targets);
  free(recs);
  return code;
}

int cli_records(int argc, char **argv) {
  if (argc >= 1 && !strcmp(argv[0], "export")) return cli__records_export(argc - 1, argv + 1);
  if (argc >= 1 && !strcmp(argv[0], "import")) return cli__records_import(argc - 1, argv + 1);
  if (cli_wants_help(argc, argv)) {
    printf("%s\n%s\n", cli__export_usage, cli__import_usage);
    return 0;
  }
  fprintf(stderr, "tunehub records: %s'%s'; valid: export, import\n%s\n%s\n",
          argc ? "unknown subcommand " : "a subcommand is needed, not ", argc ? argv[0] : "",
          cli__export_usage, cli__import_usage);
  return 2;
}
