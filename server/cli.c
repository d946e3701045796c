/* `tunehub build`, `run`, `tune`, `networks` and `import`. build shares the daemon's store (--data) so it applies the
 * same tuning records; run loads and times a bundle exactly as a user's program would (th_model_* through
 * dlopen). Errors name the valid values. */
#include "cli.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builder.h"
#include "measure.h"
#include "present.h"
#include "scheduler.h"
#include "srv.h"
#include "store.h"
#include "tc/objcache.h"
#include "tc/passes.h"
#include "tc/space.h"
#include "tc/tc.h"
#include "tc/zoo.h"
#include "th_util.h"
#include "tune_cli.h"
#include "tune_job.h"
#include "tune_net.h"
#include "upload.h"

const tune_builder *cli_default_builder(const char *data_dir) {
  (void)data_dir;
  return tune_builder_compiler();
}

int cli_wants_help(int argc, char **argv) {
  for (int i = 0; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return 1;
  return 0;
}

int cli_help(int argc, char **argv, const char *usage) {
  if (!cli_wants_help(argc, argv)) return 0;
  printf("%s\n", usage);
  return 1;
}

int cli_db(const char *cmd, const char *flag, const char **db) {
  char err[TH_WHY_MAX];
  if (store_db_resolve(flag, db, err, sizeof err) == TH_OK) return 0;
  fprintf(stderr, "tunehub %s: %s\n", cmd, err);
  return 2;
}

int cli_store_exists(const char *cmd, const char *db, const char *data) {
  int exists = 0;
  if (store_exists_db(db, data, &exists) == TH_OK) return exists;
  fprintf(stderr, "tunehub %s: %s\n", cmd, store_errmsg(NULL));
  return -1;
}

int cli_store_needed(const char *cmd, const char *db, const char *data) {
  int exists = cli_store_exists(cmd, db, data);
  if (exists != 0) return exists;
  char where[TH_DIR_MAX];
  store_describe(db, data, where, sizeof where);
  fprintf(stderr, "tunehub %s: %s holds no store (%s)\n", cmd, where,
          db ? "no tunehub schema in that database" : "no readable tunehub.db");
  return -1;
}

store_t *cli_store_open(const char *cmd, const char *db, const char *data) {
  store_t *st = NULL;
  if (store_open_db(db, data, &st) == TH_OK) return st;
  char where[TH_DIR_MAX];
  store_describe(db, data, where, sizeof where);
  fprintf(stderr, "tunehub %s: cannot open the store %s: %s\n", cmd, where, store_errmsg(NULL));
  return NULL;
}

static int cli__progress(void *ctx, const char *stage, int done, int total) {
  (void)ctx;
  if (isatty(2)) {
    fprintf(stderr, "\r  %-8s %d/%d   ", stage, done, total);
    if (done == total) fputc('\n', stderr);
  } else if (done == total) {
    fprintf(stderr, "  %-8s %d/%d\n", stage, done, total);
  }
  return 0;
}

static const char cli__build_usage[] =
    "usage: tunehub build FRAMEWORK NETWORK BATCH -o OUT.tar [--so OUT.so] [--data DIR] [--db URL] "
    "[--target NAME] [--precision fp32|tf32] [--no-fuse GROUP[,GROUP]] [--memory-budget BYTES]";

int cli_build(int argc, char **argv) {
  if (cli_help(argc, argv, cli__build_usage)) return 0;
  const char *pos[3] = {NULL, NULL, NULL};
  int npos = 0;
  const char *out = NULL, *so = NULL, *data = "./data", *target_name = NULL, *db_flag = NULL,
             *db = NULL, *precision = NULL;
  int fuse_off = 0;
  int64_t mem_budget = 0; /* 0: the scheduler's default, three quarters of the machine */
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "-o") && i + 1 < argc)
      out = argv[++i];
    else if (!strcmp(argv[i], "--memory-budget") && i + 1 < argc) {
      char berr[256];
      if (srv_bytes_flag("--memory-budget", argv[++i], (int64_t)64 << 20, (int64_t)1 << 50,
                         &mem_budget, berr, sizeof berr) != TH_OK) {
        fprintf(stderr, "tunehub build: %s\n", berr);
        return 2;
      }
    } else if (!strcmp(argv[i], "--no-fuse") && i + 1 < argc) {
      /* for timing what a fusion buys: a build written to files only, never into a store */
      char ferr[256];
      int groups = 0;
      if (tc_fuse_groups_parse(argv[++i], &groups, ferr, sizeof ferr) != TH_OK) {
        fprintf(stderr, "tunehub build: --no-fuse: %s\n", ferr);
        return 2;
      }
      fuse_off |= groups;
    } else if (!strcmp(argv[i], "--db") && i + 1 < argc)
      db_flag = argv[++i];
    else if (!strcmp(argv[i], "--target") && i + 1 < argc)
      target_name = argv[++i];
    else if (!strcmp(argv[i], "--precision") && i + 1 < argc)
      precision = argv[++i];
    else if (!strcmp(argv[i], "--so") && i + 1 < argc)
      so = argv[++i];
    else if (!strcmp(argv[i], "--data") && i + 1 < argc)
      data = argv[++i];
    else if (argv[i][0] == '-' && argv[i][1]) {
      fprintf(stderr,
              "tunehub build: unknown flag '%s'; valid: -o OUT.tar --so OUT.so --data DIR --db URL "
              "--target NAME --precision fp32|tf32 --no-fuse GROUP[,GROUP] --memory-budget BYTES\n",
              argv[i]);
      return 2;
    } else if (npos < 3)
      pos[npos++] = argv[i];
    else {
      fprintf(stderr, "tunehub build: too many arguments\n");
      return 2;
    }
  }
  if (npos != 3 || (!out && !so)) {
    fprintf(stderr, "%s\n", cli__build_usage);
    return 2;
  }
  if (cli_db("build", db_flag, &db) != 0) return 2;
  char ferr[128];
  if (!tc_backend_find(pos[0], ferr, sizeof ferr)) {
    fprintf(stderr, "tunehub build: %s\n", ferr);
    return 2;
  }
  int64_t batch = 0;
  if (th_parse_i64(pos[2], &batch) != TH_OK || batch < 1 || batch > 4096) {
    fprintf(stderr, "tunehub build: invalid batch '%s'; the batch is a whole number from 1 to 4096\n",
            pos[2]);
    return 2;
  }
  /* the target: the host's by default; --target NAME cross-compiles (a CPU name, x86-64-vN, sm_XX); with the
   * precision it takes, checked before any store is opened, so that a refusal writes nothing */
  tc_backend_target bt;
  char terr[TH_MSG_MAX] = "";
  if (tc_backend_target_init(tc_backend_find(pos[0], NULL, 0), target_name, &bt, terr, sizeof terr) != TH_OK) {
    fprintf(stderr, "tunehub build: %s\n", terr);
    return 2;
  }
  if (tc_precision_check(pos[0], bt.str, precision, NULL, terr, sizeof terr) != TH_OK) {
    fprintf(stderr, "tunehub build: --precision: %s\n", terr);
    return 2;
  }
  /* an uploaded network is named in the store it was imported into; a zoo network needs none to be named */
  char err[TH_MSG_MAX] = "";
  tune_net net;
  if (!tc_zoo_find(pos[1])) {
    int have = cli_store_exists("build", db, data);
    if (have < 0) return 1;
    if (!have) {
      char where[TH_DIR_MAX];
      store_describe(db, data, where, sizeof where);
      tune_net_names(NULL, err, sizeof err);
      fprintf(stderr, "tunehub build: unknown network '%s' (%s has no store); valid networks: %s\n",
              pos[1], where, err);
      return 2;
    }
  }
  store_t *st = cli_store_open("build", db, data);
  if (!st) return 1;
  th_status rc = tune_net_resolve(st, pos[1], NULL, &net, err, sizeof err);
  if (rc != TH_OK) {
    fprintf(stderr, "tunehub build: %s\n", err);
    store_close(st);
    return rc == TH_ERR_NOT_FOUND ? 2 : 1;
  }
  char target[TH_TARGET_MAX];
  snprintf(target, sizeof target, "%s", bt.str);
  /* a build the machine cannot hold is refused before it starts, as the daemon refuses it
   * (server/guard.c) */
  if (mem_budget <= 0) {
    tune_sched_opts defaults;
    tune_sched_opts_default(&defaults);
    mem_budget = defaults.mem_budget;
  }
  store_key fk;
  memset(&fk, 0, sizeof fk);
  snprintf(fk.framework, sizeof fk.framework, "%s", pos[0]);
  fk.batch = (int)batch;
  tc_footprint fp;
  if (mem_budget > 0 && tune_key_footprint(st, &fk, target, &net.src, &fp, NULL, 0) == TH_OK &&
      fp.peak_bytes > mem_budget) {
    fprintf(stderr,
            "tunehub build: a build of %s/%s/%lld needs about %lld bytes (%.2f GiB, as planned), "
            "more than the "
            "memory budget of %lld bytes (%.2f GiB; --memory-budget, default three quarters of the "
            "machine's "
            "memory); nothing was built\n",
            pos[0], pos[1], (long long)batch, (long long)fp.peak_bytes,
            fp.peak_bytes / 1073741824.0, (long long)mem_budget, mem_budget / 1073741824.0);
    tune_net_free(&net);
    store_close(st);
    return 2;
  }
  tune_build_lookup_ctx lctx = {st, target};
  tc_build_opts o;
  memset(&o, 0, sizeof o);
  o.framework = pos[0];
  o.network = net.src.name;
  o.onnx_path = net.src.onnx_path;
  o.onnx_shapes = net.src.shapes;
  o.batch = (int)batch;
  o.arch = target_name;
  o.precision = precision;
  o.lookup = tune_build_lookup;
  o.lookup_ctx = &lctx;
  o.progress = cli__progress;
  o.measure = 1;
  o.fuse_off = fuse_off;
  char *manifest = NULL;
  double t0 = th_now_mono();
  char off[128] = "";
  for (int k = 1; k <= TC_FUSE_ALL; k <<= 1)
    if (fuse_off & k)
      snprintf(off + strlen(off), sizeof off - strlen(off), "%s%s",
               off[0] ? "," : ", fusion groups off: ", tc_fuse_group_name(k));
  fprintf(stderr, "building %s/%s/%lld for %s (%s)%s\n", pos[0], pos[1], (long long)batch, target,
          precision ? precision : "fp32", off);
  rc = tc_build_bundle(&o, out, so, &manifest, err, sizeof err);
  tune_net_free(&net);
  store_close(st);
  if (rc != TH_OK) {
    fprintf(stderr, "tunehub build: %s (%s)\n", err[0] ? err : th_status_str(rc), th_status_name(rc));
    return 1;
  }
  fprintf(stderr, "built in %.2f s:%s%s%s%s\n", th_now_mono() - t0, out ? " " : "", out ? out : "",
          so ? " " : "", so ? so : "");
  unsigned reused = 0, looked = 0;
  char cache_dir[4200];
  tc_objcache_counts(&reused, &looked);
  if (looked && tc_objcache_dir(cache_dir, sizeof cache_dir))
    fprintf(stderr, "object cache: %u of %u objects reused from %s\n", reused, looked, cache_dir);
  /* a target this machine cannot run (no CUDA device, another CPU's features) is built untimed */
  json_t *m = manifest ? json_loads(manifest, 0, NULL) : NULL;
  const char *why = json_string_value(json_object_get(m, "unmeasured"));
  if (why)
    fprintf(stderr,
            "tunehub build: the bundle is untimed (its manifest's latency_ms is null): %s\n", why);
  json_decref(m);
  free(manifest);
  return 0;
}

/* The per-layer table of `tunehub run --profile`: each call's median next to the manifest's layer. */
static void cli__print_profile(const tc_run_stats *s) {
  json_error_t je;
  json_t *m = json_loads(s->manifest, 0, &je);
  json_t *layers = json_object_get(m, "layers");
  double sum = 0;
  for (int i = 0; i < s->ncalls; i++) sum += s->call_ms[i];
  printf("%-5s %-24s %-16s %-11s %10s %6s %8s  %s\n", "layer", "name", "op", "source", "median ms", "share",
         "GFLOPS", "workload");
  for (int i = 0; i < s->ncalls; i++) {
    json_t *l = json_array_get(layers, (size_t)i);
    const char *name = json_string_value(json_object_get(l, "name"));
    const char *op = json_string_value(json_object_get(l, "op"));
    const char *src = json_string_value(json_object_get(l, "source"));
    const char *wl = json_string_value(json_object_get(l, "workload"));
    double fl = json_number_value(json_object_get(l, "flops"));
    double ms = s->call_ms[i];
    printf("%-5d %-24s %-16s %-11s %10.3f %5.1f%% %8.1f  %s\n", i, name ? name : "-", op ? op : "?",
           src ? src : "-", ms, sum > 0 ? 100 * ms / sum : 0, ms > 0 ? fl / (ms * 1e6) : 0, wl ? wl : "");
  }
  printf("sum of layer medians %.3f ms; run median %.3f ms (%d runs)\n", sum, s->median_ms, s->n);
  json_decref(m);
}

static void cli__shape(const json_t *shape, char *out, size_t n);

/* The outputs `tunehub run --output-dir` wrote, from the manifest's "outputs". */
static void cli__print_outputs(const tc_run_stats *s, const char *dir) {
  json_t *m = json_loads(s->manifest, 0, NULL);
  size_t i;
  json_t *io;
  json_array_foreach(json_object_get(m, "outputs"), i, io) {
    const char *name = json_string_value(json_object_get(io, "name"));
    char shape[128], path[4200];
    cli__shape(json_object_get(io, "shape"), shape, sizeof shape);
    if (!name || tc_run_output_path(dir, name, path, sizeof path) != TH_OK) continue;
    printf("output %s %s %s -> %s\n", name, json_string_value(json_object_get(io, "dtype")), shape, path);
  }
  json_decref(m);
}

#define CLI_MAX_INPUTS 8

static const char cli__run_usage[] =
    "usage: tunehub run BUNDLE.tar [--repeat N] [--profile] [--input NAME=FILE]... "
    "[--output-dir DIR]";

int cli_run(int argc, char **argv) {
  if (cli_help(argc, argv, cli__run_usage)) return 0;
  const char *path = NULL, *outdir = NULL;
  int64_t repeat = 20;
  int profile = 0, repeat_given = 0;
  tc_run_input inputs[CLI_MAX_INPUTS];
  int ninputs = 0;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--repeat") && i + 1 < argc) {
      if (th_parse_i64(argv[++i], &repeat) != TH_OK || repeat < 1 || repeat > 100000) {
        fprintf(stderr, "tunehub run: --repeat takes a whole number from 1 to 100000\n");
        return 2;
      }
      repeat_given = 1;
    } else if (!strcmp(argv[i], "--profile")) {
      profile = 1;
    } else if (!strcmp(argv[i], "--input") && i + 1 < argc) {
      char *eq = strchr(argv[++i], '=');
      if (!eq || eq == argv[i] || !eq[1]) {
        fprintf(stderr, "tunehub run: --input takes NAME=FILE, not '%s'\n", argv[i]);
        return 2;
      }
      if (ninputs == CLI_MAX_INPUTS) {
        fprintf(stderr, "tunehub run: at most %d --input\n", CLI_MAX_INPUTS);
        return 2;
      }
      *eq = '\0';
      inputs[ninputs].name = argv[i];
      inputs[ninputs++].path = eq + 1;
    } else if (!strcmp(argv[i], "--output-dir") && i + 1 < argc) {
      outdir = argv[++i];
    } else if (argv[i][0] == '-') {
      fprintf(stderr,
              "tunehub run: unknown flag '%s'; valid: --repeat N, --profile, --input NAME=FILE, "
              "--output-dir DIR\n",
              argv[i]);
      return 2;
    } else if (!path) {
      path = argv[i];
    } else {
      fprintf(stderr, "tunehub run: one bundle at a time\n");
      return 2;
    }
  }
  if (!path) {
    fprintf(stderr, "%s\n", cli__run_usage);
    return 2;
  }
  /* Running on given data (--input, --output-dir) runs once unless --repeat asks for timing. */
  int io = ninputs > 0 || outdir;
  tc_run_opts o;
  memset(&o, 0, sizeof o);
  o.repeat = io && !repeat_given ? 1 : (int)repeat;
  o.warmup = io && !repeat_given ? 0 : 3;
  o.profile = profile;
  o.inputs = inputs;
  o.ninputs = ninputs;
  o.output_dir = outdir;
  tc_run_stats s;
  char err[TH_MSG_MAX] = "";
  th_status rc = tc_bundle_infer(path, &o, &s, err, sizeof err);
  if (rc != TH_OK) {
    fprintf(stderr, "tunehub run: %s: %s\n", path, err[0] ? err : th_status_str(rc));
    return 1;
  }
  if (profile) cli__print_profile(&s);
  printf("%s: %d runs: mean %.3f ms, median %.3f ms, std %.3f ms, min %.3f ms\n", path, s.n,
         s.mean_ms, s.median_ms, s.std_ms, s.min_ms);
  if (outdir) cli__print_outputs(&s, outdir);
  tc_run_stats_free(&s);
  return 0;
}

int cli_tune(int argc, char **argv) {
  return tune_cli_main(argc, argv);
}

/* "[batch, 3, 224, 224]" from a GET /networks shape. */
static void cli__shape(const json_t *shape, char *out, size_t n) {
  size_t used = 0, i;
  json_t *v;
  out[0] = '\0';
  json_array_foreach(shape, i, v) {
    int w = json_is_string(v)
                ? snprintf(out + used, n - used, "%s%s", i ? ", " : "[", json_string_value(v))
                : snprintf(out + used, n - used, "%s%lld", i ? ", " : "[",
                           (long long)json_integer_value(v));
    if (w < 0 || (size_t)w >= n - used) return;
    used += (size_t)w;
  }
  snprintf(out + used, n - used, "%s]", used ? "" : "[");
}

/* One network of `tunehub networks`: its line and a line per input and output (o: a GET /networks entry). */
static void cli__network_lines(const json_t *o) {
  const char *name = json_string_value(json_object_get(o, "name"));
  const char *desc = json_string_value(json_object_get(o, "description"));
  char uploaded[160] = "";
  if (!desc) { /* an uploaded network says where it came from instead */
    const char *digest = json_string_value(json_object_get(o, "digest"));
    snprintf(uploaded, sizeof uploaded, "uploaded ONNX, version %lld, %.19s...",
             (long long)json_integer_value(json_object_get(o, "version")), digest ? digest : "?");
    desc = uploaded;
  }
  printf("%-16s %10.2f %12lld  %s\n", name ? name : "?", json_number_value(json_object_get(o, "flops")) / 1e9,
         (long long)json_integer_value(json_object_get(o, "params")), desc);
  const char *keys[2] = {"inputs", "outputs"};
  for (int k = 0; k < 2; k++) {
    size_t j;
    json_t *io;
    json_array_foreach(json_object_get(o, keys[k]), j, io) {
      char shape[128];
      cli__shape(json_object_get(io, "shape"), shape, sizeof shape);
      printf("  %-6s %-20s %-8s %s\n", k ? "output" : "input", json_string_value(json_object_get(io, "name")),
             json_string_value(json_object_get(io, "dtype")), shape);
    }
  }
}

int cli_networks(int argc, char **argv) {
  static const char usage[] =
      "usage: tunehub networks [--data DIR] [--db URL]   (the zoo, and the networks imported "
      "into the store)";
  if (cli_help(argc, argv, usage)) return 0;
  const char *data = "./data", *db_flag = NULL, *db = NULL;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--data") && i + 1 < argc) {
      data = argv[++i];
    } else if (!strcmp(argv[i], "--db") && i + 1 < argc) {
      db_flag = argv[++i];
    } else {
      fprintf(stderr, "%s\n", usage);
      return 2;
    }
  }
  if (cli_db("networks", db_flag, &db) != 0) return 2;
  /* the uploaded networks of an existing store (none is created to list nothing) */
  int have = cli_store_exists("networks", db, data);
  if (have < 0) return 1;
  printf("%-16s %10s %12s  %s\n", "network", "GFLOPs", "params", "description");
  for (size_t i = 0; i < tc_zoo_count(); i++) {
    const tc_zoo_entry *e = tc_zoo_at(i);
    json_t *o = NULL;
    if (srv_present_network(e->name, &o) != TH_OK) {
      fprintf(stderr, "tunehub networks: cannot describe %s\n", e->name);
      return 1;
    }
    cli__network_lines(o);
    json_decref(o);
  }
  if (!have) return 0;
  store_t *st = cli_store_open("networks", db, data);
  store_network *nets = NULL;
  size_t n = 0;
  if (!st) return 1;
  if (store_network_list(st, "onnx", &nets, &n) != TH_OK) {
    fprintf(stderr, "tunehub networks: cannot read the networks in %s: %s\n", store_db_display(st),
            store_errmsg(st));
    store_close(st);
    return 1;
  }
  for (size_t i = 0; i < n; i++) {
    json_t *o = srv_present_uploaded(&nets[i]);
    if (o) cli__network_lines(o);
    json_decref(o);
  }
  store_network_list_free(nets, n);
  store_close(st);
  return 0;
}

/* `tunehub import model.onnx --name NAME [--data DIR] [--shapes S]`: what PUT /networks/{name} does, into a
 * store on this machine (the daemon serving it sees the network at its next request). */
int cli_import(int argc, char **argv) {
  static const char usage_line[] =
      "usage: tunehub import MODEL.onnx --name NAME [--data DIR] [--db URL] [--shapes S]";
  if (cli_help(argc, argv, usage_line)) return 0;
  const char *path = NULL, *name = NULL, *data = "./data", *shapes = NULL, *db_flag = NULL,
             *db = NULL;
  for (int i = 0; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(argv[i], "--name") && v) {
      name = argv[++i];
    } else if (!strcmp(argv[i], "--data") && v) {
      data = argv[++i];
    } else if (!strcmp(argv[i], "--db") && v) {
      db_flag = argv[++i];
    } else if (!strcmp(argv[i], "--shapes") && v) {
      shapes = argv[++i];
    } else if (argv[i][0] == '-' && argv[i][1]) {
      fprintf(stderr,
              "tunehub import: unknown or incomplete flag '%s'; valid: --name NAME --data DIR --db "
              "URL --shapes S\n",
              argv[i]);
      return 2;
    } else if (!path) {
      path = argv[i];
    } else {
      fprintf(stderr, "tunehub import: one file at a time\n%s\n", usage_line);
      return 2;
    }
  }
  if (!path || !name) {
    fprintf(stderr, "%s\n", usage_line);
    return 2;
  }
  if (cli_db("import", db_flag, &db) != 0) return 2;
  if (!srv_network_name_ok(name)) {
    fprintf(stderr, "tunehub import: invalid network name '%s'; a name is %s\n", name, SRV_NETWORK_NAME_RULE);
    return 2;
  }
  if (access(path, R_OK) != 0) {
    fprintf(stderr, "tunehub import: cannot read %s\n", path);
    return 1;
  }
  store_t *st = cli_store_open("import", db, data);
  if (!st) return 1;
  char err[TH_MSG_MAX] = "";
  json_t *doc = NULL;
  store_network_change ch;
  srv_upload_in in = {name, path, 0, NULL, shapes};
  th_status rc = srv_upload_network(st, &in, &doc, &ch, err, sizeof err);
  store_close(st);
  if (rc != TH_OK) {
    fprintf(stderr, "tunehub import: %s: %s\n", path, err);
    return rc == TH_ERR_CONFLICT ? 2 : 1;
  }
  printf("%s: %s, version %lld, %s\n", name,
         ch.changed == 0 ? "unchanged (the same file)" : ch.changed == 1 ? "imported" : "imported as a new version",
         (long long)json_integer_value(json_object_get(doc, "version")),
         json_string_value(json_object_get(doc, "digest")));
  if (ch.njobs) printf("  %zu job(s) of the previous version cancelled\n", ch.njobs);
  free(ch.jobs);
  printf("%-16s %10s %12s  %s\n", "network", "GFLOPs", "params", "description");
  cli__network_lines(doc);
  size_t i;
  json_t *op;
  printf("  ops   ");
  json_array_foreach(json_object_get(doc, "ops"), i, op)
      printf("%s%s x%lld", i ? ", " : "", json_string_value(json_object_get(op, "op_type")),
             (long long)json_integer_value(json_object_get(op, "count")));
  printf("\n");
  json_decref(doc);
  return 0;
}

int cli_measure_worker(void) {
  return tune_measure_worker_main(0, 1);
}
