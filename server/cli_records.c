/* `tunehub records export` and `tunehub records import`: tuning records carried from one store to
 * another as JSON Lines, so that a machine without a GPU (or without the CPU a store was tuned on)
 * builds with the configs that a machine with one measured. Line 1 is a header
 * ({"tunehub_records":1, ..., "count":N}), then one record a line; an import checks every line
 * before it stores anything, and storing the same file twice adds nothing (store_record_import).
 * The format, the filters and the checks are records.c's, which GET/POST /records share. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "records.h"
#include "store.h"
#include "th_buf.h"
#include "th_util.h"

static const char cli__export_usage[] =
    "usage: tunehub records export [--data DIR] [--db URL] [--framework llvm|cuda] [--target NAME] "
    "[--network NET --batch B] [--best] [-o FILE]";
static const char cli__import_usage[] =
    "usage: tunehub records import FILE [--data DIR] [--db URL]";

/* ---- export ---- */

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
  records_filter flt = {framework, target_name, network, batch, best};
  char err[TH_MSG_MAX] = "";
  if (records_filter_check(&flt, err, sizeof err) != TH_OK) {
    fprintf(stderr, "tunehub records export: %s\n", err);
    return 2;
  }
  if (cli_store_needed("records export", db, data) < 0) return 1;
  store_t *st = cli_store_open("records export", db, data);
  if (!st) return 1;
  th_buf text;
  th_buf_init(&text, SIZE_MAX);
  size_t count = 0;
  th_status rc = records_export(st, &flt, &text, &count, err, sizeof err);
  store_close(st);
  int code = 0;
  if (rc != TH_OK) {
    fprintf(stderr, "tunehub records export: %s\n", err);
    code = rc == TH_ERR_NOT_FOUND || rc == TH_ERR_INVALID ? 2 : 1;
  }
  FILE *f = code == 0 ? (out ? fopen(out, "w") : stdout) : NULL;
  if (code == 0 && !f) {
    fprintf(stderr, "tunehub records export: cannot write %s: %s\n", out, strerror(errno));
    code = 1;
  }
  if (code == 0) {
    int bad = text.len && fwrite(text.data, 1, text.len, f) != text.len;
    if (fflush(f) != 0) bad = 1;
    if (f != stdout && fclose(f) != 0) bad = 1;
    if (bad) {
      fprintf(stderr, "tunehub records export: cannot write %s\n", out ? out : "the records");
      if (out) remove(out);
      code = 1;
    } else if (out) {
      fprintf(stderr, "exported %zu records to %s\n", count, out);
    }
  }
  th_buf_free(&text);
  return code;
}

/* ---- import ---- */

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
  records_parsed p;
  char err[TH_MSG_MAX] = "";
  th_status prc = records_parse(f, &p, err, sizeof err);
  if (f != stdin) fclose(f);
  int code = 0;
  if (prc == TH_ERR_IO) {
    fprintf(stderr, "tunehub records import: cannot read %s: %s\n", path, err);
    code = 1;
  } else if (prc != TH_OK && p.line == 0) {
    fprintf(stderr, "tunehub records import: %s is empty; nothing was imported\n", path);
    code = 2;
  } else if (prc != TH_OK) {
    fprintf(stderr, "tunehub records import: %s line %lld: %s; nothing was imported\n", path,
            (long long)p.line, err);
    code = prc == TH_ERR_INVALID ? 2 : 1;
  }
  store_t *st = code == 0 ? cli_store_open("records import", db, data) : NULL;
  if (code == 0 && !st) code = 1;
  int64_t added = 0;
  if (code == 0 && store_record_import(st, p.recs, p.n, &added) != TH_OK) {
    fprintf(stderr, "tunehub records import: %s; nothing was imported\n", store_errmsg(st));
    code = 1;
  }
  if (code == 0)
    printf("imported %lld records (%lld already present) for %d target%s\n", (long long)added,
           (long long)((int64_t)p.n - added), p.ntargets, p.ntargets == 1 ? "" : "s");
  store_close(st);
  records_parsed_free(&p);
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
