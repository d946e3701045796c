/* The one tunehub binary: `serve` runs the registry daemon; `build`, `tune` and `run` are the
 * command-line face of the same compiler and tuner, sharing the daemon's store through --data. The
 * subcommands are one table (commands[]), from which main, `tunehub help` and the "unknown command"
 * list are made. Each command validates its arguments and names the valid values when wrong. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "cli.h"
#include "provenance.h"
#include "remeasure.h"
#include "srv.h"
#include "tc/backend.h"
#include "tc/zoo.h"
#include "th_log.h"
#include "th_util.h"
#include "tune_net.h"
#include "tune_task.h"

/* The subcommands, in the order `tunehub help` lists them: main dispatches through this table, and
 * the help text and the "unknown command" list are made from it. Adding a command is a row here and
 * its handler, int f(int argc, char **argv) of the arguments after the command's name, in a file of
 * its own (declared here, beside the other handlers, or in its file's header). */
typedef struct th_command {
  const char *name;
  const char *alias[2]; /* other spellings: --version, --help, -h */
  int (*run)(int argc, char **argv);
  const char *usage; /* its lines in `tunehub help`, as they print; NULL: not listed there */
  int internal;      /* run by tunehub itself (a worker process): in neither list */
} th_command;

static int cmd_serve(int argc, char **argv);
static int cmd_remeasure(int argc, char **argv);
static int cmd_tune(int argc, char **argv);
static int cmd_version(int argc, char **argv);
static int cmd_help(int argc, char **argv);
static int cmd_measure_worker(int argc, char **argv);
static int cmd_build_worker(int argc, char **argv);

/* the usage lines are laid out as they print */
/* clang-format off */
static const th_command commands[] = {
    {"serve", {NULL}, cmd_serve,
     "  tunehub serve [--listen 127.0.0.1:8080] [--data ./data] [--token-file F] [--workers N]\n"
     "                [--signing-key KEY.pem]   sign every publish's provenance (Ed25519, PEM PKCS#8)\n"
     "                [--private]   every read needs a token with the scope read (or tune, admin)\n"
     "                [--db postgresql://...] [--lease 30]   a store shared with other daemons and workers;\n"
     "                                                    --workers 0 with --db: a replica that runs no jobs\n"
     "                [--max-queued 256] [--max-batch 256] [--web DIR] [--log-level info]\n"
     "                [--build-slots N] [--max-streams 64] [--max-streams-per-ip 8] [--max-upload 2G]\n"
     "                [--memory-budget 12G]   builds and measurements held within it (default: 3/4 of RAM);\n"
     "                                        a build planned larger is refused (413 over_budget)\n"
     "                [--min-free 1G]   free bytes on the data directory below which new work is refused\n"
     "                                  (507; default: 1 GiB or 5% of the disk, the smaller; 0: off)\n"
     "                [--keep-versions N]   retention: N newest versions per key, plus the aliased\n"
     "                [--gc-interval 3600] [--gc-grace 3600]   blob garbage collection every S seconds\n"
     "                                                    (0: off) of blobs unreferenced for the grace\n", 0},
    {"build", {NULL}, cli_build,
     "  tunehub build FRAMEWORK NETWORK BATCH -o OUT.tar [--so OUT.so] [--data ./data] [--db URL]\n"
     "                [--target NAME]   cross-compile for the CPU or GPU the model will run on\n"
     "                [--precision fp32|tf32]   cuda: tf32 runs the GEMMs on tensor cores (sm_80+)\n"
     "                [--no-fuse GROUP[,GROUP]]   leave fusion groups out, to time them (files only):\n"
     "                                  activation, residual, softmax, qkv\n"
     "                [--memory-budget BYTES]   refuse a build planned larger (default: 3/4 of RAM)\n", 0},
    {"tune", {NULL}, cmd_tune,
     "  tunehub tune  FRAMEWORK NETWORK BATCH [--data ./data] [--db URL] [--trials N]\n"
     "                [--tuner xgb|ga|random|grid] [--early-stopping N] [--target NAME]\n"
     "                [--precision fp32|tf32]\n", 0},
    {"run", {NULL}, cli_run,
     "  tunehub run   BUNDLE.tar [--repeat N] [--profile]   --profile: each layer's median ms\n"
     "                [--input NAME=FILE]... [--output-dir DIR]  run once on raw input files,\n"
     "                                                    write DIR/<output>.bin\n", 0},
    {"remeasure", {NULL}, cmd_remeasure,
     "  tunehub remeasure llvm|cuda NETWORK BATCH [--data ./data] [--db URL] [--against DIR|URL]\n"
     "                [--rounds N] [--target NAME]        time each task's best stored config alone\n", 0},
    {"networks", {NULL}, cli_networks,
     "  tunehub networks [--data ./data] [--db URL]   list the model zoo and the networks imported\n", 0},
    {"import", {NULL}, cli_import,
     "  tunehub import MODEL.onnx --name NAME [--data ./data] [--db URL] [--shapes S]\n"
     "                                                    store a network of your own (ONNX)\n", 0},
    {"records", {NULL}, cli_records,
     "  tunehub records export [--data ./data] [--db URL] [--framework llvm|cuda] [--target NAME]\n"
     "                [--network NET --batch B] [--best] [-o FILE]   tuning records as JSON Lines\n"
     "                                                    (--best: the one a build applies per workload)\n"
     "  tunehub records import FILE [--data ./data] [--db URL]\n"
     "                                                    add them to a store (checked first; again: no-op)\n", 0},
    {"worker", {NULL}, cli_worker,
     "  tunehub worker --db postgresql://... [--target NAME]... [--slots 2] [--data ./data]\n"
     "                [--lease 30] [--name NAME]   claim and run jobs for the targets this machine measures\n"
     "                                            (default: its CPU, and its CUDA device's arch)\n"
     "                [--signing-key KEY.pem]   sign what it publishes, as serve --signing-key does\n", 0},
    {"migrate", {NULL}, cli_migrate,
     "  tunehub migrate --from DIR --to postgresql://...\n"
     "                                                    copy an embedded store into a new PostgreSQL\n"
     "                                                    database and verify every row and blob\n", 0},
    {"gc", {NULL}, cli_gc,
     "  tunehub gc [--data ./data] [--db URL] [--grace 3600] [--dry-run] [--json]\n"
     "                                                    remove blobs no published version, alias or\n"
     "                                                    network references, unreferenced for the grace\n"
     "                                                    period (seconds; an hour: longer than a publish)\n", 0},
    {"verify", {NULL}, cli_verify,
     "  tunehub verify BUNDLE.tar --statement ENVELOPE.json --key PUB.pem\n"
     "                                                    check a bundle against its signed provenance\n"
     "                                                    (GET .../provenance) and print what it says\n", 0},
    {"hash-token", {NULL}, cli_hash_token,
     "  tunehub hash-token < TOKEN                       print sha256:HEX, a token-file line that\n"
     "                                                    does not hold the token itself\n", 0},
    {"version", {"--version"}, cmd_version,
     "  tunehub version\n", 0},
    {"help", {"--help", "-h"}, cmd_help, NULL, 0},
    {"measure-worker", {NULL}, cmd_measure_worker, NULL, 1},
    {"build-worker", {NULL}, cmd_build_worker, NULL, 1},
};

static const char usage_footer[] =
    "\n"
    "frameworks: llvm (CPU), cuda (NVIDIA GPU)\n"
    "targets (--target): native (this machine's, the default); llvm: an x86-64 CPU name\n"
    "  LLVM knows, x86-64-v2, x86-64-v3, x86-64-v4; cuda: sm_70..sm_90. A bad name is\n"
    "  answered with the valid list. tune measures here, so it takes only this machine's\n"
    "  own target; remeasure any that this machine runs (every CPU feature its code uses)\n\n"
    "the store: every command that opens it takes --data DIR (default ./data) and --db URL.\n"
    "  Without --db, and without the environment variable TUNEHUB_DB (which --db overrides), the store\n"
    "  is the SQLite file DIR/tunehub.db with the artifact files under DIR/artifacts.\n"
    "  --db postgresql://USER[:PASSWORD]@HOST[:PORT]/DBNAME (or ...?host=SOCKETDIR for a Unix socket)\n"
    "  puts the store in that PostgreSQL database, which any number of daemons and commands share;\n"
    "  DIR is then this process's local artifact cache and scratch space (one daemon per DIR).\n";
/* clang-format on */

static void usage(FILE *f) {
  fprintf(f, "tunehub %s: a registry of auto-tuned, compiled neural networks\n\nusage:\n",
          TH_VERSION);
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (commands[i].usage) fputs(commands[i].usage, f);
  fputs(usage_footer, f);
}

static int cmd_serve(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) { /* serve's flags are the top of usage() */
    usage(stdout);
    return 0;
  }
  srv_config cfg;
  srv_config_defaults(&cfg);
  char err[TH_ERR_MAX] = "";
  if (srv_config_parse(&cfg, argc, argv, err, sizeof err) != TH_OK) {
    fprintf(stderr, "tunehub serve: %s\n", err);
    return 2;
  }
  /* a key that cannot sign is refused before anything starts: a daemon told to sign never publishes
   * unsigned */
  tune_signer *signer = NULL;
  if (cfg.signing_key[0] && tune_signer_load(cfg.signing_key, &signer, err, sizeof err) != TH_OK) {
    fprintf(stderr, "tunehub serve: --signing-key: %s\n", err);
    return 2;
  }
  cfg.signer = signer;
  /* Block the stop signals in every thread; the main thread waits for them with sigwait. */
  sigset_t set;
  cli_stop_signals(&set);

  const tune_builder *builder = cli_default_builder(cfg.data_dir);
  srv_t *s = NULL;
  if (srv_start(&cfg, builder, &s, err, sizeof err) != TH_OK) {
    fprintf(stderr, "tunehub serve: %s\n", err);
    tune_signer_free(signer);
    return 1;
  }
  if (signer)
    TH_LOG(TH_LOG_INFO, "signing the provenance of every publish with %s (keyid %.16s…)",
           cfg.signing_key, tune_signer_keyid(signer));
  TH_LOG(TH_LOG_INFO, "tunehub %s serving http://%s:%d/ with data in %s (%d worker(s)%s)", TH_VERSION,
         cfg.listen_host, cfg.port, cfg.data_dir, cfg.workers,
         cfg.token_file[0] ? ", token required for changes" : ", read-only API: no --token-file");
  int sig = 0;
  sigwait(&set, &sig);
  TH_LOG(TH_LOG_INFO, "signal %d: shutting down", sig);
  srv_stop(s);
  tune_signer_free(signer);
  TH_LOG(TH_LOG_INFO, "stopped");
  return 0;
}

/* `remeasure FRAMEWORK NETWORK BATCH [--data DIR] [--against DIR] [--rounds N] [--target NAME]`:
 * CSV (tune_remeasure), for the scheduler bench; --target: that target's records, if it runs here.
 */
static int cmd_remeasure(int argc, char **argv) {
  static const char usage_line[] =
      "usage: tunehub remeasure llvm|cuda NETWORK BATCH [--data DIR] [--db URL] "
      "[--against DIR|URL] [--rounds 1..100] [--target NAME]";
  if (cli_help(argc, argv, usage_line)) return 0;
  const char *data = "./data", *against = NULL, *target_name = NULL, *db_flag = NULL, *db = NULL;
  const char *pos[3] = {NULL, NULL, NULL};
  int npos = 0;
  int64_t batch = 0, rounds = 1;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--data") && i + 1 < argc) {
      data = argv[++i];
    } else if (!strcmp(argv[i], "--db") && i + 1 < argc) {
      db_flag = argv[++i];
    } else if (!strcmp(argv[i], "--against") && i + 1 < argc) {
      against = argv[++i];
    } else if (!strcmp(argv[i], "--target") && i + 1 < argc) {
      target_name = argv[++i];
    } else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
      if (th_parse_i64(argv[++i], &rounds) != TH_OK || rounds < 1 || rounds > 100) {
        fprintf(stderr, "tunehub remeasure: --rounds takes a whole number from 1 to 100\n");
        return 2;
      }
    } else if (argv[i][0] != '-' && npos < 3) {
      pos[npos++] = argv[i];
    } else {
      fprintf(stderr, "%s\n", usage_line);
      return 2;
    }
  }
  if (npos != 3) {
    fprintf(stderr, "%s\n", usage_line);
    return 2;
  }
  if (cli_db("remeasure", db_flag, &db) != 0) return 2;
  /* the store to compare with: another data directory's SQLite store, or a PostgreSQL database
   * (whose local cache is this command's data directory) */
  const char *against_db = against && store_is_db_url(against) ? against : NULL;
  const char *against_dir = against_db ? data : against;
  char ferr[128];
  const tc_backend *be = tc_backend_find(pos[0], ferr, sizeof ferr);
  if (!be) {
    fprintf(stderr, "tunehub remeasure: %s\n", ferr);
    return 2;
  }
  /* the target's name, checked before a store is read (whether it runs here: tune_remeasure) */
  tc_backend_target bt;
  char terr[TH_MSG_MAX] = "";
  if (tc_backend_target_init(be, target_name, &bt, terr, sizeof terr) != TH_OK) {
    fprintf(stderr, "tunehub remeasure: %s\n", terr);
    return 2;
  }
  /* an uploaded network is known only to a store; without one, the zoo's names are the valid ones */
  int have = cli_store_exists("remeasure", db, data);
  if (have < 0) return 1;
  if (!tc_zoo_find(pos[1]) && !have) {
    char names[TH_LIST_MAX];
    tune_net_names(NULL, names, sizeof names);
    fprintf(stderr, "tunehub remeasure: unknown network '%s'; valid networks: %s\n", pos[1], names);
    return 2;
  }
  if (th_parse_i64(pos[2], &batch) != TH_OK || batch < 1 || batch > 4096) {
    fprintf(stderr, "tunehub remeasure: invalid batch '%s'; the batch is a whole number from 1 to 4096\n",
            pos[2]);
    return 2;
  }
  /* a store to read, never one created here: a mistyped directory or database is an error, not an
   * empty result */
  const char *dbs[2] = {db, against_db}, *dirs[2] = {data, against_dir};
  for (int i = 0; i < 2; i++) {
    if (!dirs[i]) continue;
    int exists = i == 0 ? have : cli_store_exists("remeasure", dbs[i], dirs[i]);
    if (exists < 0) return 1;
    if (!exists) {
      char where[TH_DIR_MAX];
      store_describe(dbs[i], dirs[i], where, sizeof where);
      fprintf(stderr, "tunehub remeasure: %s holds no store (%s)\n", where,
              dbs[i] ? "no tunehub schema in that database" : "no readable tunehub.db");
      return 1;
    }
  }
  store_t *st = cli_store_open("remeasure", db, data), *st2 = NULL;
  if (!st || (against && !(st2 = cli_store_open("remeasure", against_db, against_dir)))) {
    store_close(st);
    return 1;
  }
  char err[TH_MSG_MAX] = "";
  tune_net net;
  th_status rc = tune_net_resolve(st, pos[1], NULL, &net, err, sizeof err);
  if (rc != TH_OK) {
    fprintf(stderr, "tunehub remeasure: %s\n", err);
    store_close(st2);
    store_close(st);
    return rc == TH_ERR_NOT_FOUND ? 2 : 1;
  }
  tune_net_free(&net);
  tune_remeasure_opts o = {.st = st,
                           .against = st2,
                           .framework = pos[0],
                           .target = target_name,
                           .network = pos[1],
                           .batch = (int)batch,
                           .rounds = (int)rounds};
  int rows = 0;
  rc = tune_remeasure(&o, stdout, &rows, err, sizeof err);
  store_close(st2);
  store_close(st);
  if (rc != TH_OK) {
    fprintf(stderr, "tunehub remeasure: %s\n", err);
    return rc == TH_ERR_UNSUPPORTED ? 2 : 1;
  }
  if (rows == 0) {
    /* another target's records come from a store tuned on a machine of that target */
    tc_backend_target here;
    int own = tc_backend_target_init(be, NULL, &here, terr, sizeof terr) == TH_OK &&
              !strcmp(here.str, bt.str);
    char where[TH_DIR_MAX], where2[TH_DIR_MAX];
    store_describe(db, data, where, sizeof where);
    store_describe(against_db, against_dir ? against_dir : "", where2, sizeof where2);
    fprintf(stderr,
            "tunehub remeasure: no task of %s at batch %lld has a stored record for %s in %s%s%s ",
            pos[1], (long long)batch, bt.str, where, against ? " and " : "", against ? where2 : "");
    if (own)
      fprintf(stderr, "(tune it first: tunehub tune %s %s %lld --data DIR)\n", pos[0], pos[1],
              (long long)batch);
    else
      fprintf(stderr,
              "(this machine tunes only its own target, %s: records for %s come from a store tuned "
              "on a machine with that target)\n",
              here.str, bt.str);
    return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const char *cmd = argv[1];
  /* candidate libraries are built by exec'd workers, never in a fork of this threaded process */
  static char *const build_worker_argv[] = {"/proc/self/exe", "build-worker", NULL};
  tune_build_worker_argv = build_worker_argv;
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
    const th_command *c = &commands[i];
    if (!strcmp(cmd, c->name) || (c->alias[0] && !strcmp(cmd, c->alias[0])) ||
        (c->alias[1] && !strcmp(cmd, c->alias[1])))
      return c->run(argc - 2, argv + 2);
  }
  fprintf(stderr, "tunehub: unknown command '%s'; valid commands: ", cmd);
  for (size_t i = 0, n = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (!commands[i].internal) fprintf(stderr, "%s%s", n++ ? ", " : "", commands[i].name);
  fputc('\n', stderr);
  return 2;
}

static int cmd_tune(int argc, char **argv) {
  return cli_tune(argc + 1, argv - 1); /* cli_tune reads its arguments from the name "tune" on */
}

static int cmd_version(int argc, char **argv) {
  if (cli_help(argc, argv, "usage: tunehub version   print the version")) return 0;
  printf("tunehub %s\n", TH_VERSION);
  return 0;
}

static int cmd_help(int argc, char **argv) {
  (void)argc;
  (void)argv;
  usage(stdout);
  return 0;
}

static int cmd_measure_worker(int argc, char **argv) {
  (void)argc;
  (void)argv;
  return cli_measure_worker();
}

static int cmd_build_worker(int argc, char **argv) {
  (void)argc;
  (void)argv;
  return tune_build_worker_main(0);
}
