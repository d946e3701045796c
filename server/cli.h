/* The command-line face of tunehub (build, run, tune, networks, import) and the hidden measure-worker entry. Each
 * returns a process exit code: 0 success, 1 failure, 2 bad usage. */
#ifndef SRV_CLI_H
#define SRV_CLI_H

#include <signal.h>

#include "store.h"
#include "worker.h"

int cli_build(int argc, char **argv);
int cli_run(int argc, char **argv);
int cli_tune(int argc, char **argv);
int cli_networks(int argc, char **argv);
int cli_import(int argc, char **argv);
int cli_measure_worker(void);
/* 1 when one of the argc arguments asks for help (--help or -h). */
int cli_wants_help(int argc, char **argv);
/* cli_wants_help, after printing usage (and a newline) on stdout: the command then exits 0. */
int cli_help(int argc, char **argv, const char *usage);
/* The store a command names: flag (its --db value, may be NULL), else the environment variable
 * TUNEHUB_DB, into *db (NULL: the SQLite store in the data directory). A value that is not a
 * PostgreSQL URL is printed as "tunehub CMD: ..." and answers 2 (bad usage); 0 otherwise. */
int cli_db(const char *cmd, const char *flag, const char **db);
/* Whether the store (db, data) exists, for a command that only reads one and must not create one: 1
 * or 0, or -1 after printing "tunehub CMD: ..." when the database cannot be asked. */
int cli_store_exists(const char *cmd, const char *db, const char *data);
/* cli_store_exists for a command that reads a store and must not create one, where a mistyped directory or
 * database is an error, not an empty store: 1 when it exists, else -1 after printing "tunehub CMD: WHERE holds
 * no store (why)" or why it cannot be asked. */
int cli_store_needed(const char *cmd, const char *db, const char *data);
/* Opens the store (db, data) for a command, or prints "tunehub CMD: cannot open the store ...: why"
 * and answers NULL. The caller closes it. */
store_t *cli_store_open(const char *cmd, const char *db, const char *data);
/* tunehub migrate --from DIR --to postgresql://... (migrate.c) */
int cli_migrate(int argc, char **argv);
/* `tunehub gc [--data DIR] [--db URL] [--grace S] [--dry-run] [--json]` (gc.c): one blob garbage collection. */
int cli_gc(int argc, char **argv);
/* `tunehub records export|import ...` (cli_records.c): tuning records out of a store as JSON Lines, and into one. */
int cli_records(int argc, char **argv);
/* `tunehub worker --db URL ...` (cli_worker.c): runs jobs from a shared store until SIGTERM or SIGINT. */
int cli_worker(int argc, char **argv);
/* `tunehub verify BUNDLE --statement FILE --key PUB.pem` (cli_verify.c): 0 verified, 1 a check
 * failed (stderr names it), 2 bad usage or an unreadable file. */
int cli_verify(int argc, char **argv);
/* For a long-running command: blocks SIGINT and SIGTERM in this thread and every thread it starts afterwards
 * (the caller waits for them with sigwait on *set) and ignores SIGPIPE. */
void cli_stop_signals(sigset_t *set);
/* The builder registry jobs use. */
const tune_builder *cli_default_builder(const char *data_dir);

#endif
